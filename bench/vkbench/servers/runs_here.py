"""Does a binary run on this machine, and if not, why?

The only proof is running it: ``probe`` runs ``--version``. Reading the ELF file cannot decide it
(a binary of another architecture does run where a binfmt_misc handler such as qemu-user is
registered), so the ELF is read only to *explain* a failed probe: another architecture (and
whether a handler for it is registered), the glibc it needs against the one present, the shared
libraries nowhere to be found.

A cache entry records where it was probed (``probed_on``, :func:`machine_identity`); an entry
used on another machine (a cache copied or mounted into a container of another architecture or
distribution) is probed again before it is used.
"""

from __future__ import annotations

import hashlib
import os
import platform
import socket
from dataclasses import dataclass, field
from pathlib import Path

from . import elf
from .binary import probe_version

BINFMT_DIR = Path("/proc/sys/fs/binfmt_misc")
#: Where the dynamic loader looks when LD_LIBRARY_PATH does not say (Debian multiarch layout).
_SYSTEM_LIB_DIRS = ("/lib/{triplet}", "/usr/lib/{triplet}", "/lib64", "/usr/lib64", "/lib", "/usr/lib",
                    "/usr/local/lib")
_TRIPLETS = {"x86_64": "x86_64-linux-gnu", "aarch64": "aarch64-linux-gnu", "arm": "arm-linux-gnueabihf",
             "i686": "i386-linux-gnu", "riscv64": "riscv64-linux-gnu", "ppc64le": "powerpc64le-linux-gnu",
             "s390x": "s390x-linux-gnu"}


@dataclass(frozen=True)
class Probe:
    runs: bool
    version: str | None          # what ``--version`` printed (None when it did not run)
    output: str                  # its output, or the error (bounded)
    reasons: tuple[str, ...] = field(default_factory=tuple)   # why it does not run (empty when it runs)

    def explanation(self) -> str:
        if self.runs:
            return "runs here"
        return "; ".join(self.reasons) or (self.output[-300:] or "it does not run")


def host_machine() -> str:
    return elf.normalize_machine(platform.machine())


def host_glibc() -> str | None:
    """The glibc version of this machine ("2.36"), None on another libc (musl) or none known."""
    try:
        text = os.confstr("CS_GNU_LIBC_VERSION") or ""
    except (ValueError, OSError):
        text = ""
    if text.startswith("glibc "):
        return text.split()[1]
    name, version = platform.libc_ver()
    return version if name == "glibc" and version else None


def machine_identity() -> dict[str, str | None]:
    """What decides whether a probed binary still runs: the host, its architecture and glibc."""
    return {
        "host": hashlib.sha256(socket.gethostname().encode()).hexdigest()[:12],
        "arch": host_machine(),
        "glibc": host_glibc(),
    }


def probed_here(meta: dict) -> bool:
    """Whether a cache entry's meta says it was probed on this very machine."""
    return meta.get("probed_on") == machine_identity()


def probe(path: Path, env: dict[str, str] | None = None) -> Probe:
    """Run ``path --version`` (with ``env``, e.g. the entry's LD_LIBRARY_PATH); explain a failure."""
    version, output = probe_version(path, env)
    if version is not None:
        return Probe(True, version, output[-1000:])
    return Probe(False, None, output[-1000:], tuple(explain(path, env, output)))


def explain(path: Path, env: dict[str, str] | None = None, output: str = "") -> list[str]:
    """Why ``path`` does not run here, as far as its ELF headers and this machine tell."""
    try:
        info = elf.read(path)
    except elf.ElfError as exc:
        return [str(exc)] + ([f"it printed: {output[-300:]}"] if output else [])
    reasons: list[str] = []
    here = host_machine()
    if info.machine != here:
        handler = binfmt_handler(info.header)
        if handler:
            reasons.append(f"built for {info.machine}, this machine is {here}; a binfmt_misc handler for it is "
                           f"registered ({handler}) but the binary still failed")
        else:
            reasons.append(f"built for {info.machine}, this machine is {here}, and no binfmt_misc handler for "
                           f"{info.machine} is registered ({binfmt_state()})")
    present = host_glibc()
    if info.glibc_needed and present and elf.version_key(info.glibc_needed) > elf.version_key(present):
        reasons.append(f"needs glibc {info.glibc_needed}, this machine has {present}")
    elif info.glibc_needed and present is None and not info.static:
        reasons.append(f"needs glibc {info.glibc_needed}, this machine has no glibc")
    if info.interpreter and not _exists_for(info.interpreter, info.machine, here):
        reasons.append(f"its loader {info.interpreter} is not on this machine")
    missing = missing_libraries(info, env)
    if missing:
        reasons.append("missing shared libraries: " + ", ".join(missing))
    if not reasons:
        reasons.append(f"`{path.name} --version` failed: {output[-300:] or 'no output'}")
    return reasons


def _exists_for(interpreter: str, machine: str, here: str) -> bool:
    # A foreign loader may live under a sysroot qemu is pointed at (QEMU_LD_PREFIX).
    prefix = os.environ.get("QEMU_LD_PREFIX") if machine != here else None
    return Path(interpreter).exists() or bool(prefix and Path(prefix, interpreter.lstrip("/")).exists())


def missing_libraries(info: elf.ElfInfo, env: dict[str, str] | None = None) -> list[str]:
    """DT_NEEDED sonames found neither in LD_LIBRARY_PATH nor in the system's library folders
    (for the binary's architecture). Only meaningful for the host's own architecture; for a
    foreign one the folders of its Debian multiarch triplet are searched."""
    environ = os.environ if env is None else env
    dirs = [d for d in (environ.get("LD_LIBRARY_PATH") or "").split(os.pathsep) if d]
    triplet = _TRIPLETS.get(info.machine, "")
    dirs += [d.format(triplet=triplet) for d in _SYSTEM_LIB_DIRS if triplet or "{triplet}" not in d]
    if info.machine != host_machine():
        # Another architecture's libraries are never in /lib64 or /usr/lib of this host.
        dirs = [d for d in dirs if triplet in d] + [d for d in dirs if d in (environ.get("LD_LIBRARY_PATH") or "")]
    return [name for name in info.needed if not any(Path(d, name).exists() for d in dirs)]


def binfmt_state() -> str:
    if not BINFMT_DIR.is_dir() or not (BINFMT_DIR / "status").exists():
        return "binfmt_misc is not mounted"
    status = _read(BINFMT_DIR / "status")
    return f"binfmt_misc is {status or 'mounted'}"


def binfmt_handler(header: bytes, directory: Path | None = None) -> str | None:
    """The interpreter of an enabled binfmt_misc entry whose magic matches ``header``, else None.

    Matches the way the kernel does: ``(header[offset + i] & mask[i]) == (magic[i] & mask[i])``."""
    directory = BINFMT_DIR if directory is None else directory
    try:
        entries = sorted(p for p in directory.iterdir() if p.name not in ("register", "status"))
    except OSError:
        return None
    for entry in entries:
        fields = _entry_fields(_read(entry) or "")
        if fields.get("enabled") != "enabled" or "magic" not in fields:
            continue
        try:
            magic = bytes.fromhex(fields["magic"])
            mask = bytes.fromhex(fields.get("mask", "ff" * len(magic)))
            offset = int(fields.get("offset", "0"))
        except ValueError:
            continue
        window = header[offset: offset + len(magic)]
        if len(window) == len(magic) and all((h & m) == (g & m) for h, g, m in zip(window, magic, mask)):
            return fields.get("interpreter", entry.name)
    return None


def _entry_fields(text: str) -> dict[str, str]:
    fields: dict[str, str] = {}
    for line in text.splitlines():
        line = line.strip()
        if line in ("enabled", "disabled"):
            fields["enabled"] = line
        elif " " in line:
            key, value = line.split(" ", 1)
            fields[key.rstrip(":")] = value.strip()
    return fields


def _read(path: Path) -> str | None:
    try:
        return path.read_text().strip()
    except OSError:
        return None
