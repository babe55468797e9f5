"""What an ELF executable needs to run, read from the file itself (no ldd, no running it).

ldd runs the binary's own loader, which is impossible for a binary of another architecture
and does not say *why* a binary cannot run. This reads the few fields that decide it:

- ``e_machine``: the architecture it was built for;
- ``PT_INTERP``: the dynamic loader it asks for (absent: a static binary);
- ``DT_NEEDED``: the shared libraries it links;
- the version needs (``DT_VERNEED``): the highest ``GLIBC_x.y`` symbol version it needs.

Bounded: only the headers and the dynamic section are read, never more than the file's size.
"""

from __future__ import annotations

import re
import struct
from dataclasses import dataclass, field
from pathlib import Path

MAGIC = b"\x7fELF"

#: ELF e_machine values -> the names ``uname -m`` uses for them.
MACHINES = {3: "i686", 8: "mips", 20: "ppc", 21: "ppc64le", 22: "s390x", 40: "arm", 62: "x86_64",
            183: "aarch64", 243: "riscv64"}
#: ``uname -m`` spellings that name the same architecture.
ALIASES = {"amd64": "x86_64", "arm64": "aarch64", "i386": "i686", "i586": "i686", "armv7l": "arm", "armv6l": "arm"}

PT_LOAD, PT_DYNAMIC, PT_INTERP = 1, 2, 3
DT_NULL, DT_NEEDED, DT_STRTAB, DT_STRSZ = 0, 1, 5, 10
DT_VERNEED, DT_VERNEEDNUM = 0x6FFFFFFE, 0x6FFFFFFF

MAX_HEADERS = 256             # program headers; real binaries have about a dozen
MAX_DYNAMIC = 4096            # dynamic entries
MAX_VERNEED = 256             # version-need records (files and their versions)

_GLIBC = re.compile(r"^GLIBC_(\d+)\.(\d+)(?:\.(\d+))?$")


class ElfError(ValueError):
    """Not an ELF file, or one whose headers point outside the file."""


@dataclass(frozen=True)
class ElfInfo:
    machine: str                          # "x86_64", "aarch64", or "e_machine <n>"
    bits: int                             # 32 | 64
    interpreter: str | None               # "/lib/ld-linux-aarch64.so.1"; None = static
    needed: tuple[str, ...] = ()          # DT_NEEDED sonames, in file order
    glibc_needed: str | None = None       # highest GLIBC_x.y the version needs name
    header: bytes = field(default=b"", repr=False)   # the first 128 bytes (for binfmt_misc matching)

    @property
    def static(self) -> bool:
        return self.interpreter is None


def normalize_machine(name: str) -> str:
    name = name.lower()
    return ALIASES.get(name, name)


def version_key(version: str) -> tuple[int, ...]:
    """``"2.38"`` -> ``(2, 38)``: glibc versions compare as numbers, not strings (2.4 < 2.38)."""
    return tuple(int(p) for p in re.findall(r"\d+", version))


def is_elf(path: Path) -> bool:
    try:
        with open(path, "rb") as handle:
            return handle.read(4) == MAGIC
    except OSError:
        return False


def read(path: Path) -> ElfInfo:
    """Parse ``path``; raises ElfError when it is not a well-formed ELF file."""
    try:
        data = Path(path).read_bytes()
    except OSError as exc:
        raise ElfError(f"cannot read {path}: {exc.strerror}") from None
    return parse(data, str(path))


def parse(data: bytes, name: str = "<bytes>") -> ElfInfo:
    if len(data) < 52 or data[:4] != MAGIC:
        raise ElfError(f"{name} is not an ELF file")
    ei_class, ei_data = data[4], data[5]
    if ei_class not in (1, 2) or ei_data not in (1, 2):
        raise ElfError(f"{name}: unknown ELF class {ei_class} / data encoding {ei_data}")
    bits = 64 if ei_class == 2 else 32
    end = "<" if ei_data == 1 else ">"
    reader = _Reader(data, end, name)

    e_machine = reader.unpack("H", 18)[0]
    if bits == 64:
        e_phoff = reader.unpack("Q", 32)[0]
        e_phentsize, e_phnum = reader.unpack("HH", 54)
    else:
        e_phoff = reader.unpack("I", 28)[0]
        e_phentsize, e_phnum = reader.unpack("HH", 42)
    if e_phnum > MAX_HEADERS:
        raise ElfError(f"{name}: {e_phnum} program headers (more than {MAX_HEADERS})")

    loads: list[tuple[int, int, int]] = []          # (vaddr, offset, filesz)
    interpreter = None
    dynamic: tuple[int, int] | None = None          # (offset, size)
    for index in range(e_phnum):
        at = e_phoff + index * e_phentsize
        if bits == 64:
            p_type, _flags, p_offset, p_vaddr, _paddr, p_filesz = reader.unpack("IIQQQQ", at)
        else:
            p_type, p_offset, p_vaddr, _paddr, p_filesz = reader.unpack("IIIII", at)
        if p_type == PT_LOAD:
            loads.append((p_vaddr, p_offset, p_filesz))
        elif p_type == PT_INTERP:
            interpreter = reader.cstring(p_offset, p_filesz)
        elif p_type == PT_DYNAMIC:
            dynamic = (p_offset, p_filesz)

    needed: list[str] = []
    glibc: str | None = None
    if dynamic is not None:
        entries = _dynamic_entries(reader, bits, *dynamic)
        strtab_addr = next((v for t, v in entries if t == DT_STRTAB), None)
        if strtab_addr is not None:
            strtab = _file_offset(loads, strtab_addr, name)
            needed = [reader.cstring(strtab + v) for t, v in entries if t == DT_NEEDED]
            verneed_addr = next((v for t, v in entries if t == DT_VERNEED), None)
            count = next((v for t, v in entries if t == DT_VERNEEDNUM), 0)
            if verneed_addr is not None:
                names = _version_needs(reader, _file_offset(loads, verneed_addr, name), count, strtab)
                glibc = _highest_glibc(names)
    return ElfInfo(MACHINES.get(e_machine, f"e_machine {e_machine}"), bits, interpreter, tuple(needed), glibc,
                   bytes(data[:128]))


class _Reader:
    def __init__(self, data: bytes, end: str, name: str):
        self.data, self.end, self.name = data, end, name

    def unpack(self, fmt: str, offset: int) -> tuple:
        size = struct.calcsize(self.end + fmt)
        if offset < 0 or offset + size > len(self.data):
            raise ElfError(f"{self.name}: a header points outside the file (offset {offset})")
        return struct.unpack_from(self.end + fmt, self.data, offset)

    def cstring(self, offset: int, limit: int = 4096) -> str:
        if offset < 0 or offset >= len(self.data):
            raise ElfError(f"{self.name}: a string points outside the file (offset {offset})")
        chunk = self.data[offset: offset + max(1, limit)]
        return chunk.split(b"\x00", 1)[0].decode("utf-8", "replace")


def _dynamic_entries(reader: _Reader, bits: int, offset: int, size: int) -> list[tuple[int, int]]:
    fmt, step = ("qQ", 16) if bits == 64 else ("iI", 8)
    out = []
    for index in range(min(size // step, MAX_DYNAMIC)):
        tag, value = reader.unpack(fmt, offset + index * step)
        if tag == DT_NULL:
            break
        out.append((tag, value))
    return out


def _file_offset(loads: list[tuple[int, int, int]], vaddr: int, name: str) -> int:
    """Where the virtual address ``vaddr`` is in the file (through the PT_LOAD segment holding it)."""
    for seg_vaddr, seg_offset, seg_filesz in loads:
        if seg_vaddr <= vaddr < seg_vaddr + seg_filesz:
            return seg_offset + (vaddr - seg_vaddr)
    if not loads:
        return vaddr          # no segments (a relocatable object): addresses are offsets
    raise ElfError(f"{name}: address {vaddr:#x} is in no loaded segment")


def _version_needs(reader: _Reader, offset: int, count: int, strtab: int) -> list[str]:
    """The version names of every Elf_Verneed record (same layout for 32 and 64 bits)."""
    names: list[str] = []
    for _ in range(min(count, MAX_VERNEED)):
        _version, aux_count, _file, aux, next_need = reader.unpack("HHIII", offset)
        aux_at = offset + aux
        for _ in range(min(aux_count, MAX_VERNEED)):
            _hash, _flags, _other, name_at, next_aux = reader.unpack("IHHII", aux_at)
            names.append(reader.cstring(strtab + name_at))
            if not next_aux:
                break
            aux_at += next_aux
        if not next_need:
            break
        offset += next_need
    return names


def _highest_glibc(names: list[str]) -> str | None:
    versions = [n.split("_", 1)[1] for n in names if _GLIBC.match(n)]
    return max(versions, key=version_key) if versions else None
