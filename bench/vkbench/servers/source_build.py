"""Recipe: build valkey from a git ref (``valkey:unstable``, ``valkey:<commit>``, a tag).

    git init; git fetch --depth 1 <url> <ref>; git checkout FETCH_HEAD   (shallow, any ref)
    make -j<cpus> BUILD_TLS=no
    copy src/valkey-server, valkey-cli, valkey-benchmark -> <cache>/valkey/<ref>/bin/

The commit is recorded in meta.json and in ``Binary.detail``. The repository is
``$VKBENCH_VALKEY_GIT_URL`` (default https://github.com/valkey-io/valkey). A ref that moves
(``unstable``) is rebuilt only with ``vkbench servers fetch valkey unstable --refresh``.
Needs git, make and a C compiler. Fails fast with MissingBinaryError when the clone fails
(e.g. no access to GitHub).
"""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Callable
from pathlib import Path

from ..errors import MissingBinaryError
from . import cache
from .binary import probe_version
from .catalog import GIT_REF

Progress = Callable[[str], None]

DEFAULT_URL = "https://github.com/valkey-io/valkey"
BINARIES = ("valkey-server", "valkey-cli", "valkey-benchmark")
FETCH_TIMEOUT_S = 300
BUILD_TIMEOUT_S = 1800


def repo_url() -> str:
    return os.environ.get("VKBENCH_VALKEY_GIT_URL", DEFAULT_URL)


def _require_tools() -> None:
    missing = [t for t in ("git", "make", "cc") if shutil.which(t) is None]
    if missing:
        raise MissingBinaryError(
            f"building valkey from source needs {', '.join(missing)}",
            hint="apt-get install git build-essential pkg-config, or use a released version (vkbench servers list)",
        )


def _git(args: list[str], cwd: Path, what: str) -> str:
    # No prompts for credentials, and give up on a stalled transfer instead of hanging the run.
    env = {**os.environ, "GIT_TERMINAL_PROMPT": "0", "GIT_ASKPASS": "true"}
    cmd = ["git", "-c", "http.lowSpeedLimit=1000", "-c", "http.lowSpeedTime=30", *args]
    try:
        proc = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True, timeout=FETCH_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        raise MissingBinaryError(f"{what} timed out", hint=f"check access to {repo_url()}") from None
    if proc.returncode != 0:
        tail = "\n".join(proc.stderr.strip().splitlines()[-3:])
        raise MissingBinaryError(
            f"{what} failed: {tail}",
            hint=f"the source build needs access to {repo_url()} (set VKBENCH_VALKEY_GIT_URL to a reachable "
            "mirror), or use a released version from `vkbench servers list`, or pass a path to a valkey-server",
        )
    return proc.stdout.strip()


def checkout(ref: str, dest: Path, url: str | None = None) -> str:
    """Shallow-fetch ``ref`` from ``url`` into ``dest``; return the commit."""
    if not GIT_REF.match(ref):
        raise MissingBinaryError(f"{ref!r} is not a git ref", hint="use a branch, tag or commit, e.g. valkey:unstable")
    url = url or repo_url()
    dest.mkdir(parents=True, exist_ok=True)
    _git(["init", "-q"], dest, "git init")
    _git(["fetch", "-q", "--depth", "1", url, ref], dest, f"git fetch {ref} from {url}")
    _git(["checkout", "-q", "FETCH_HEAD"], dest, f"git checkout {ref}")
    return _git(["rev-parse", "HEAD"], dest, "git rev-parse")


def build(source: Path, progress: Progress | None = None) -> None:
    jobs = str(os.cpu_count() or 2)
    if progress:
        progress(f"make -j{jobs} BUILD_TLS=no (a few minutes)")
    log = source / "vkbench-build.log"
    with open(log, "w") as handle:
        try:
            proc = subprocess.run(["make", f"-j{jobs}", "BUILD_TLS=no"], cwd=source, stdout=handle,
                                  stderr=subprocess.STDOUT, timeout=BUILD_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            raise MissingBinaryError("make timed out", hint=f"see {log}") from None
    if proc.returncode != 0:
        tail = "\n".join(log.read_text(errors="replace").splitlines()[-10:])
        raise MissingBinaryError(f"make failed:\n{tail}", hint="install build-essential and pkg-config; see the log above")


def fetch(ref: str, root: Path | None = None, progress: Progress | None = None, url: str | None = None) -> Path:
    """Build ``ref`` and install it as the cache entry ``valkey/<ref>``; return the entry dir."""
    _require_tools()
    with cache.staging(root) as staged:
        if progress:
            progress(f"git fetch {ref} from {url or repo_url()}")
        commit = checkout(ref, staged / "src", url)
        build(staged / "src", progress)
        (staged / "entry" / "bin").mkdir(parents=True)
        for name in BINARIES:
            shutil.copy2(staged / "src" / "src" / name, staged / "entry" / "bin" / name)
        version, output = probe_version(staged / "entry" / "bin" / "valkey-server")
        if version is None:
            raise MissingBinaryError(f"the built valkey-server does not run: {output[-300:]}", hint="see the build log")
        meta = {
            "engine": "valkey", "version": ref, "source": "source-build", "commit": commit,
            "detail": f"git {url or repo_url()} {ref} @ {commit} (reports {version})",
        }
        return cache.install_entry(staged / "entry", "valkey", ref, meta, root)
