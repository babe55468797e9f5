"""Folded stacks: ``perf script`` output -> ``root;caller;leaf count`` lines, bounded in size.

The folded format (Brendan Gregg's stackcollapse) is what flame graph tools read. The first
frame of every stack is the thread's name (``valkey-server``, ``io_thd_1``), so a profile shows
how the work splits between the main thread and the I/O threads.
"""

from __future__ import annotations

import os
import re
import struct
from pathlib import Path

#: A stored profile never grows beyond this: the rarest stacks are merged into one line.
MAX_PROFILE_BYTES = 256 * 1024
#: Deeper stacks are cut at the root side (frame pointers rarely give more).
MAX_DEPTH = 96
OTHER_STACKS = "[other stacks]"

_FRAME = re.compile(r"^\s*(?P<ip>[0-9a-fA-F]+)\s+(?P<sym>.*?)\s+\((?P<dso>[^()]*)\)\s*$")


def collapse(perf_script: str) -> dict[str, int]:
    """Fold ``perf script`` text (default fields: a header line per sample, then one indented
    line per frame, leaf first, a blank line after) into ``{stack: samples}``."""
    stacks: dict[str, int] = {}
    comm: str | None = None
    frames: list[str] = []

    def flush() -> None:
        if comm is None:
            return
        path = [comm] + list(reversed(frames))[-MAX_DEPTH:]
        key = ";".join(path)
        stacks[key] = stacks.get(key, 0) + 1

    for line in perf_script.splitlines():
        if not line.strip():
            flush()
            comm, frames = None, []
            continue
        if not line[0].isspace():
            flush()
            comm = _comm_of(line)
            frames = []
            continue
        m = _FRAME.match(line)
        if m and comm is not None:
            frames.append(_frame_name(m.group("sym"), m.group("dso")))
    flush()
    return stacks


def _comm_of(header: str) -> str:
    """The thread name: everything before the pid/tid field (names may contain spaces)."""
    m = re.match(r"^(?P<comm>.+?)\s+\d+(/\d+)?\s", header)
    name = (m.group("comm") if m else header.split()[0]).strip()
    return name.replace(";", ":") or "?"


def _frame_name(sym: str, dso: str) -> str:
    sym = re.sub(r"\+0x[0-9a-fA-F]+$", "", sym.strip())
    if not sym or sym == "[unknown]":
        base = os.path.basename(dso.strip()).strip("[]") or "unknown"
        return f"[{base}]"
    if dso.strip() == "[kernel.kallsyms]":
        sym += "_[k]"
    return sym.replace(";", ":")


def render(stacks: dict[str, int], max_bytes: int = MAX_PROFILE_BYTES) -> tuple[str, int]:
    """Folded text, most frequent stacks first, at most ``max_bytes``: the rarest stacks that do
    not fit are summed into one ``[other stacks]`` line. Returns (text, samples merged)."""
    lines: list[str] = []
    size = 0
    merged = 0
    budget = max_bytes - 64   # room for the [other stacks] line
    for stack, count in sorted(stacks.items(), key=lambda kv: (-kv[1], kv[0])):
        line = f"{stack} {count}\n"
        if size + len(line.encode()) > budget:
            merged += count
            continue
        lines.append(line)
        size += len(line.encode())
    if merged:
        lines.append(f"{OTHER_STACKS} {merged}\n")
    return "".join(lines), merged


def parse(text: str, *, source: str = "<folded>") -> dict[str, int]:
    from ..errors import ResultFileError

    stacks: dict[str, int] = {}
    for n, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        stack, _, count = line.rpartition(" ")
        if not stack or not count.isdigit():
            raise ResultFileError(f"{source}:{n}: not a folded stack line ('frame;frame count')",
                                  hint="pass a .folded file written by `vkbench run --profile`")
        stacks[stack] = stacks.get(stack, 0) + int(count)
    return stacks


def read(path: str | os.PathLike) -> dict[str, int]:
    from ..errors import ResultFileError

    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ResultFileError(f"{path}: no such profile", hint="check the path") from None
    except UnicodeDecodeError:
        raise ResultFileError(f"{path}: not a text file of folded stacks", hint="pass a .folded file") from None
    return parse(text, source=str(path))


def elf_symbols(path: str | os.PathLike) -> dict[str, bool | None]:
    """Whether an ELF file has a symbol table (.symtab: not stripped) and DWARF (.debug_info).
    ``None`` for both when the file cannot be read as ELF."""
    try:
        with open(path, "rb") as fh:
            ident = fh.read(16)
            if ident[:4] != b"\x7fELF":
                return {"symtab": None, "debug_info": None}
            is64, endian = ident[4] == 2, "<" if ident[5] == 1 else ">"
            if is64:
                fh.seek(0x28)
                (shoff,) = struct.unpack(endian + "Q", fh.read(8))
                fh.seek(0x3A)
            else:
                fh.seek(0x20)
                (shoff,) = struct.unpack(endian + "I", fh.read(4))
                fh.seek(0x2E)
            shentsize, shnum, shstrndx = struct.unpack(endian + "HHH", fh.read(6))
            headers = []
            for i in range(shnum):
                fh.seek(shoff + i * shentsize)
                raw = fh.read(shentsize)
                if is64:
                    name, _type, _flags, _addr, offset, size = struct.unpack(endian + "IIQQQQ", raw[:40])
                else:
                    name, _type, _flags, _addr, offset, size = struct.unpack(endian + "IIIIII", raw[:24])
                headers.append((name, offset, size))
            _, str_off, str_size = headers[shstrndx]
            fh.seek(str_off)
            strtab = fh.read(str_size)
            names = {strtab[n:strtab.index(b"\0", n)].decode(errors="replace") for n, _, _ in headers}
    except (OSError, struct.error, IndexError, ValueError):
        return {"symtab": None, "debug_info": None}
    return {"symtab": ".symtab" in names, "debug_info": ".debug_info" in names}


__all__ = ["collapse", "render", "parse", "read", "elf_symbols", "MAX_PROFILE_BYTES", "OTHER_STACKS"]
