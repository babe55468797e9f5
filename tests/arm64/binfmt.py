"""qemu-user's aarch64 handler in binfmt_misc, for the arm64 tests only (tests/arm64/conftest.py).

binfmt_misc is machine-global state, so this module changes as little of it as it can and undoes
only its own changes:

- it mounts ``/proc/sys/fs/binfmt_misc`` only when it is not mounted (and unmounts it after, if
  nothing else was registered meanwhile);
- an enabled handler that already matches an aarch64 ELF header (binfmt-support's, systemd's,
  another session's) is used as it is and never removed;
- otherwise it registers its own entry, named after this process, from Debian's
  ``/usr/lib/binfmt.d/qemu-aarch64.conf`` (flag ``F``: the kernel opens the interpreter at
  registration, so it works inside containers), and removes exactly that entry after.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from vkbench.servers import runs_here

BINFMT_DIR = Path("/proc/sys/fs/binfmt_misc")
DEBIAN_CONF = Path("/usr/lib/binfmt.d/qemu-aarch64.conf")
#: The first 20 bytes of an aarch64 executable: ELF64, little-endian, ET_EXEC, EM_AARCH64 (0xb7).
AARCH64_HEADER = bytes.fromhex("7f454c460201010000000000000000000200b700")
#: binfmt_misc's own (the magic and mask qemu documents for aarch64), used when Debian's file is absent.
_MAGIC = r"\x7f\x45\x4c\x46\x02\x01\x01\x00\x00\x00\x00\x00\x00\x00\x00\x00\x02\x00\xb7\x00"
_MASK = r"\xff\xff\xff\xff\xff\xff\xff\x00\xff\xff\xff\xff\xff\xff\xff\xff\xfe\xff\xff\xff"


@dataclass(frozen=True)
class Handler:
    interpreter: str
    fix_binary: bool        # flag F: works in a container without the interpreter inside
    ours: bool              # registered by this process (removed after)


def qemu_interpreter() -> str | None:
    return shutil.which("qemu-aarch64-static")


def registration_line(name: str) -> str:
    """The register line: Debian's (renamed, flag F ensured), else qemu-aarch64-static's with F."""
    if DEBIAN_CONF.is_file():
        line = DEBIAN_CONF.read_text().strip()
        fields = line.split(":")
        if len(fields) == 8 and Path(fields[6]).exists():
            fields[1] = name
            if "F" not in fields[7]:
                fields[7] += "F"
            return ":".join(fields)
    interpreter = qemu_interpreter()
    if interpreter is None:
        raise FileNotFoundError("qemu-aarch64-static is not installed (tools/setup/arm64.sh installs it)")
    return f":{name}:M::{_MAGIC}:{_MASK}:{interpreter}:F"


def _flags(directory: Path, interpreter: str) -> str:
    for entry in directory.iterdir():
        if entry.name in ("register", "status"):
            continue
        with contextlib.suppress(OSError):
            text = entry.read_text()
            if f"interpreter {interpreter}" in text:
                return next((line.split(":", 1)[1].strip() for line in text.splitlines() if line.startswith("flags:")), "")
    return ""


@contextlib.contextmanager
def aarch64_handler(directory: Path = BINFMT_DIR) -> Iterator[Handler]:
    mounted_here = False
    if not (directory / "register").exists():
        subprocess.run(["mount", "-t", "binfmt_misc", "binfmt_misc", str(directory)], check=True, timeout=30,
                       capture_output=True)
        mounted_here = True
    ours: Path | None = None
    try:
        existing = runs_here.binfmt_handler(AARCH64_HEADER, directory)
        if existing is not None:
            handler = Handler(existing, "F" in _flags(directory, existing), ours=False)
        else:
            name = f"vkbench-test-aarch64-{os.getpid()}"
            line = registration_line(name)
            (directory / "register").write_text(line)
            ours = directory / name
            handler = Handler(line.split(":")[6], True, ours=True)
        yield handler
    finally:
        if ours is not None and ours.exists():
            ours.write_text("-1")
        if mounted_here:
            left = [p for p in directory.iterdir() if p.name not in ("register", "status")]
            if not left:
                subprocess.run(["umount", str(directory)], check=False, timeout=30, capture_output=True)
