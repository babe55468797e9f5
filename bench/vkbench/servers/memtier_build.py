"""Recipe: build memtier_benchmark from its source release into the cache.

    download <url>/archive/refs/tags/2.3.0.tar.gz (or take $VKBENCH_MEMTIER_SOURCE: a path or URL)
    check its sha256 against MEMTIER_SHA256 (a different archive is refused, never built)
    unpack; apply patches/memtier-2.3.0-*.patch; autoreconf -ivf; ./configure; make -j<cpus>
    copy memtier_benchmark -> <cache>/memtier/2.3.0/bin/

Needs autoconf, automake, a C++ compiler, make, pkg-config and the development headers of
libevent, openssl, zlib and pcre (tools/setup/memtier.sh installs them on Debian).
"""

from __future__ import annotations

import hashlib
import os
import shutil
import tarfile
import urllib.request
from collections.abc import Callable
from importlib import resources
from pathlib import Path

from ..errors import MissingBinaryError
from . import cache, runs_here
from .binary import probe_version
from .source_build import run_in_group, sigterm_raises

Progress = Callable[[str], None]

MEMTIER_VERSION = "2.3.0"
#: sha256 of the release archive (``git archive`` of tag 2.3.0, as GitHub serves it).
MEMTIER_SHA256 = "c093d85573e9d143e92a2d107f516caf2f09cf716eeb178047a03165fdde05b8"
DEFAULT_URL = f"https://github.com/RedisLabs/memtier_benchmark/archive/refs/tags/{MEMTIER_VERSION}.tar.gz"
SOURCE_VARIABLE = "VKBENCH_MEMTIER_SOURCE"
BUILD_TOOLS = ("autoreconf", "make", "g++", "pkg-config")
DOWNLOAD_TIMEOUT_S = 120
BUILD_TIMEOUT_S = 1800
DEPS_HINT = ("apt-get install autoconf automake libpcre3-dev libevent-dev pkg-config zlib1g-dev libssl-dev g++ make "
             "(tools/setup/memtier.sh does it)")


def source() -> str:
    """Where the release archive comes from: ``$VKBENCH_MEMTIER_SOURCE`` (path or URL) or GitHub."""
    return os.environ.get(SOURCE_VARIABLE) or DEFAULT_URL


def patches() -> list[tuple[str, bytes]]:
    folder = resources.files("vkbench.servers") / "patches"
    return sorted((p.name, p.read_bytes()) for p in folder.iterdir()
                  if p.name.startswith(f"memtier-{MEMTIER_VERSION}-") and p.name.endswith(".patch"))


def missing_build_tools() -> list[str]:
    return [t for t in BUILD_TOOLS if shutil.which(t) is None]


def _download(origin: str, dest: Path) -> None:
    if "://" not in origin:
        path = Path(origin).expanduser()
        if not path.is_file():
            raise MissingBinaryError(f"{SOURCE_VARIABLE}={origin} is not a file",
                                     hint="point it at memtier_benchmark-2.3.0.tar.gz or unset it to download from GitHub")
        shutil.copyfile(path, dest)
        return
    try:
        with urllib.request.urlopen(origin, timeout=DOWNLOAD_TIMEOUT_S) as response, open(dest, "wb") as out:
            shutil.copyfileobj(response, out)
    except OSError as exc:
        raise MissingBinaryError(
            f"cannot download memtier_benchmark {MEMTIER_VERSION} from {origin}: {exc}",
            hint=f"set {SOURCE_VARIABLE} to a local copy of the release archive (or a reachable URL)",
        ) from None


def verify(archive: Path, origin: str) -> None:
    digest = hashlib.sha256(archive.read_bytes()).hexdigest()
    if digest != MEMTIER_SHA256:
        raise MissingBinaryError(
            f"the memtier_benchmark archive from {origin} has sha256 {digest}, expected {MEMTIER_SHA256}",
            hint=f"it is not the {MEMTIER_VERSION} release archive: fetch the right file (or fix {SOURCE_VARIABLE})",
        )


def _unpack(archive: Path, dest: Path) -> Path:
    with tarfile.open(archive) as tar:
        # The "data" filter refuses links and paths out of dest (Python >= 3.11.4 / 3.10.12).
        tar.extractall(dest, **({"filter": "data"} if hasattr(tarfile, "data_filter") else {}))
    tops = [p for p in dest.iterdir() if p.is_dir()]
    if len(tops) != 1:
        raise MissingBinaryError("the memtier archive does not hold one top-level folder", hint="check the archive")
    return tops[0]


def _run(argv: list[str], cwd: Path, log: Path, what: str) -> None:
    """``argv`` in a process group of its own (source_build.run_in_group): a timeout, a Ctrl-C or
    vkbench dying takes the whole group down - make's sub-makes and compilers included."""
    with open(log, "ab") as handle:
        handle.write(f"\n$ {' '.join(argv)}\n".encode())
    try:
        code = run_in_group(argv, cwd, dict(os.environ), log, BUILD_TIMEOUT_S)
    except MissingBinaryError as exc:
        raise MissingBinaryError(f"memtier build: {what}: {exc.message}", hint=exc.hint) from None
    if code != 0:
        tail = "\n".join(log.read_text(errors="replace").splitlines()[-12:])
        raise MissingBinaryError(f"memtier build: {what} failed:\n{tail}", hint=DEPS_HINT)


def fetch(root: Path | None = None, progress: Progress | None = None) -> Path:
    """Build memtier_benchmark and install it as the cache entry ``memtier/<version>``."""
    missing = missing_build_tools()
    if missing:
        raise MissingBinaryError(f"building memtier_benchmark needs {', '.join(missing)}", hint=DEPS_HINT)
    origin = source()
    with sigterm_raises(), cache.staging(root) as staged:   # SIGTERM too removes the staging folder
        archive = staged / f"memtier_benchmark-{MEMTIER_VERSION}.tar.gz"
        if progress:
            progress(f"memtier_benchmark {MEMTIER_VERSION} from {origin}")
        _download(origin, archive)
        verify(archive, origin)
        tree = _unpack(archive, staged / "src")
        log = staged / "build.log"
        applied = []
        for name, body in patches():
            patch_file = staged / name         # outside the tree, so the build never sees it
            patch_file.write_bytes(body)
            _run(["patch", "-p1", "--forward", "--batch", "-i", str(patch_file)], tree, log, f"patch {name}")
            applied.append(name)
        if progress:
            progress("autoreconf, configure, make (about a minute)")
        _run(["autoreconf", "-ivf"], tree, log, "autoreconf")
        _run(["./configure", "--quiet"], tree, log, "configure")
        _run(["make", f"-j{os.cpu_count() or 2}"], tree, log, "make")
        (staged / "entry" / "bin").mkdir(parents=True)
        binary = staged / "entry" / "bin" / "memtier_benchmark"
        shutil.copy2(tree / "memtier_benchmark", binary)
        version, output = probe_version(binary)
        if version is None:
            raise MissingBinaryError(f"the built memtier_benchmark does not run: {output[-300:]}", hint=f"see {log}")
        meta = {
            "engine": "memtier", "version": MEMTIER_VERSION, "source": "source-build", "sha256": MEMTIER_SHA256,
            "patches": applied, "probed_on": runs_here.machine_identity(),
            "detail": f"memtier_benchmark {MEMTIER_VERSION} built from {origin} (sha256 {MEMTIER_SHA256[:12]}..., "
                      f"patches: {', '.join(applied) or 'none'}; reports {version})",
        }
        return cache.install_entry(staged / "entry", "memtier", MEMTIER_VERSION, meta, root)
