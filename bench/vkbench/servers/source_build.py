"""Recipe: build valkey from any git ref of any repository URL, once per commit and build configuration.

    <cache>/git/<repo>-<hash of URL>/            bare mirror of the URL (gitmirror)
    <cache>/.build/work/                         the one work tree builds run in (a stable path, so
                                                 ccache hits and debug info do not depend on a temp dir)
    <cache>/valkey/src-<sha12>-<config id>/      the build: bin/ (unstripped), meta.json
    <cache>/valkey/<ref>/                        what a ref resolved to: meta.json + bin -> the build
    <cache>/valkey/<ref>+tls/                    the same for the BUILD_TLS=yes build a TLS cell uses
    <cache>/ccache/                              ccache's cache, when ccache is installed

The version of a cell picks the recipe: ``unstable``, a branch, a tag or a (short) SHA builds
from source; ``8.0.1@source`` or ``8.0@source`` builds a release tag or branch from source even
though ``8.0.1`` alone means the packaged release. The repository is ``$VKBENCH_VALKEY_GIT_URL``
(default https://github.com/valkey-io/valkey) unless a caller passes another URL.

The build configuration is pinned and recorded: allocator (``MALLOC=libc`` by default, as the
PyPI wheels of 9.x; ``VKBENCH_BUILD_MALLOC=jemalloc`` for Valkey's Linux default), compiler and
its version, ``make`` variables, ``OPTIMIZATION`` (Valkey's default -O3 with LTO, or
``VKBENCH_BUILD_OPTIMIZATION``; ``VKBENCH_BUILD_LTO=no`` gives -O3 without LTO, whose link
step ccache cannot cache), extra ``SERVER_CFLAGS`` (``VKBENCH_BUILD_CFLAGS``), and
``SOURCE_DATE_EPOCH`` = the commit's time, so a rebuild of one commit gives the same binary.
``BUILD_TLS=yes`` (OpenSSL, libssl-dev) for a TLS cell's server (``BuildConfig.from_env(tls=True)``)
or for every build with ``VKBENCH_BUILD_TLS=yes``; it is in the configuration's id, so a TLS
and a plain build of one commit are two cache entries.
``VKBENCH_BUILD_TARGET=aarch64`` cross-builds with Debian's ``aarch64-linux-gnu-`` toolchain
(``gcc-aarch64-linux-gnu``; also the native compiler's name on an arm64 Debian): the build records
the target's architecture, is not probed on a host that cannot run it (the machine that runs it
probes it first), and a machine without that compiler (a Pi given the cross-built cache) uses the
cached build of the same configuration whatever the compiler's version.
Binaries keep their symbols (profilers need them). ``make`` runs niced in its own process group,
which is killed when vkbench exits, is interrupted, or dies (PR_SET_PDEATHSIG on the group's
leader), and the staging directory goes with it.
"""

from __future__ import annotations

import contextlib
import ctypes
import functools
import hashlib
import json
import os
import platform
import shutil
import signal
import subprocess
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

from ..errors import MissingBinaryError
from . import cache, runs_here
from .binary import probe_version
from .gitmirror import Mirror, git, redact

Progress = Callable[[str], None]

DEFAULT_URL = "https://github.com/valkey-io/valkey"
BINARIES = ("valkey-server", "valkey-cli", "valkey-benchmark")
BUILD_TIMEOUT_S = 3600
SOURCE_SUFFIX = "@source"
PREFIX_MAP_TARGET = "/usr/src/valkey"
_PR_SET_PDEATHSIG = 1
NO_LTO = "-O3 -fno-omit-frame-pointer"
#: VKBENCH_BUILD_TARGET -> the Debian toolchain prefix that builds for it.
CROSS_TARGETS = {"aarch64": "aarch64-linux-gnu"}


def repo_url() -> str:
    return os.environ.get("VKBENCH_VALKEY_GIT_URL") or DEFAULT_URL


def split_source(version: str) -> tuple[str, bool]:
    """``8.0.1@source`` -> (``8.0.1``, True); anything else -> (version, False)."""
    if version.endswith(SOURCE_SUFFIX):
        return version[: -len(SOURCE_SUFFIX)], True
    return version, False


def _require_tools() -> None:
    missing = [t for t in ("git", "make", "cc") if shutil.which(t) is None]
    if missing:
        raise MissingBinaryError(
            f"building valkey from source needs {', '.join(missing)}",
            hint="run tools/setup/build.sh (git build-essential pkg-config ccache), or use a released version "
            "(vkbench servers list)",
        )


# -- build configuration -----------------------------------------------------------------------

@functools.lru_cache(maxsize=8)
def _compiler(cc: str) -> tuple[str, str]:
    """(resolved path, first line of ``cc --version``)."""
    path = shutil.which(cc) or cc
    try:
        out = subprocess.run([path, "--version"], capture_output=True, text=True, timeout=20).stdout
    except (OSError, subprocess.TimeoutExpired):
        out = ""
    return str(Path(path).resolve()) if Path(path).exists() else path, (out.splitlines() or ["unknown"])[0].strip()


def ccache_enabled() -> bool:
    return shutil.which("ccache") is not None and os.environ.get("VKBENCH_CCACHE", "1") != "0"


@dataclass(frozen=True)
class BuildConfig:
    """Everything that changes the binary besides the commit. Its ``config_id`` keys the cache."""

    malloc: str = "libc"
    cc: str = "cc"
    server_cflags: str = ""
    optimization: str = ""        # "" = Valkey's default (-O3 with LTO and frame pointers)
    make_vars: tuple[tuple[str, str], ...] = (("BUILD_TLS", "no"), ("USE_SYSTEMD", "no"))
    target: str = ""              # "" = this machine's architecture; else a CROSS_TARGETS key
    extra: dict = field(default_factory=dict, compare=False, hash=False)

    @classmethod
    def from_env(cls, tls: bool = False) -> BuildConfig:
        """The configuration the environment asks for; ``tls`` (a TLS cell's server) builds with
        ``BUILD_TLS=yes`` whatever ``VKBENCH_BUILD_TLS`` says, since a binary without TLS would be
        refused by that cell anyway. ``VKBENCH_BUILD_TLS=yes`` builds every source build with TLS."""
        malloc = os.environ.get("VKBENCH_BUILD_MALLOC", "libc")
        if malloc not in ("libc", "jemalloc"):
            raise MissingBinaryError(f"VKBENCH_BUILD_MALLOC={malloc!r}", hint="use libc or jemalloc")
        optimization = os.environ.get("VKBENCH_BUILD_OPTIMIZATION", "")
        if not optimization and os.environ.get("VKBENCH_BUILD_LTO", "yes") == "no":
            # LTO's link step is not cached by ccache and takes minutes on 2 cores.
            optimization = NO_LTO
        build_tls = os.environ.get("VKBENCH_BUILD_TLS", "no")
        if build_tls not in ("yes", "no"):
            raise MissingBinaryError(f"VKBENCH_BUILD_TLS={build_tls!r}", hint="use yes (OpenSSL, for TLS cells: libssl-dev) or no")
        if tls:
            build_tls = "yes"
        target = os.environ.get("VKBENCH_BUILD_TARGET", "")
        cc, make_vars = "cc", (("BUILD_TLS", build_tls), ("USE_SYSTEMD", "no"))
        if target:
            if target not in CROSS_TARGETS:
                raise MissingBinaryError(f"VKBENCH_BUILD_TARGET={target!r}",
                                         hint=f"use one of: {', '.join(CROSS_TARGETS)} (or unset it for this machine)")
            prefix = CROSS_TARGETS[target]
            # Valkey's Makefile reads uname_M for architecture-specific flags; its deps build with AR/RANLIB.
            cc = f"{prefix}-gcc"
            make_vars = (*make_vars, ("AR", f"{prefix}-ar"), ("RANLIB", f"{prefix}-ranlib"), ("uname_M", target))
        return cls(malloc=malloc, cc=os.environ.get("VKBENCH_BUILD_CC", cc), make_vars=make_vars,
                   server_cflags=os.environ.get("VKBENCH_BUILD_CFLAGS", ""), optimization=optimization,
                   target=target)

    @property
    def arch(self) -> str:
        """The architecture the binary is built for (recorded in the build and the result)."""
        return self.target or platform.machine()

    @property
    def tls(self) -> bool:
        """Whether the build links OpenSSL (``BUILD_TLS=yes``): part of ``config_id`` and of the alias."""
        return dict(self.make_vars).get("BUILD_TLS", "no") != "no"

    @property
    def cross(self) -> bool:
        return bool(self.target) and self.target != runs_here.host_machine()

    def identity(self) -> dict:
        """The recorded configuration (what two builds must share to be compared)."""
        _, cc_version = _compiler(self.cc)
        return {
            "malloc": self.malloc,
            "cc": self.cc,
            "cc_version": cc_version,
            "server_cflags": self.server_cflags,
            "optimization": self.optimization or "valkey default (-O3, LTO, frame pointers)",
            "make_vars": {k: v for k, v in self.make_vars},
            "arch": self.arch,
            "symbols": "kept (not stripped)",
        }

    @property
    def config_id(self) -> str:
        return hashlib.sha256(json.dumps(self.identity(), sort_keys=True).encode()).hexdigest()[:10]

    def make_args(self, workdir: Path) -> list[str]:
        # The prefix map keeps the work tree's path out of debug info, so the binary is the same
        # wherever the cache lives.
        cflags = " ".join(x for x in (f"-ffile-prefix-map={workdir}={PREFIX_MAP_TARGET}", self.server_cflags) if x)
        optimization = [f"OPTIMIZATION={self.optimization}"] if self.optimization else []
        return [f"MALLOC={self.malloc}", f"CC={self.cc}", *(f"{k}={v}" for k, v in self.make_vars), *optimization,
                f"SERVER_CFLAGS={cflags}"]


#: Recorded with the configuration but not part of it: they differ between any two commits
#: (SOURCE_DATE_EPOCH is the commit's time) or do not change the binary (ccache).
PER_BUILD_FIELDS = {"id", "source_date_epoch", "ccache"}


def config_differences(a: dict | None, b: dict | None) -> list[str]:
    """Human-readable differences between two recorded build configurations (empty: same)."""
    if not a or not b:
        return []
    keys = sorted((set(a) | set(b)) - PER_BUILD_FIELDS)
    return [f"{k}: {a.get(k)!r} vs {b.get(k)!r}" for k in keys if a.get(k) != b.get(k)]


# -- process group that dies with vkbench -------------------------------------------------------

def _guard_child(parent: int, niceness: int) -> Callable[[], None]:
    def run() -> None:   # runs in the child between fork and exec
        os.setpgrp()
        try:
            libc = ctypes.CDLL(None, use_errno=True)
            libc.prctl(_PR_SET_PDEATHSIG, signal.SIGTERM, 0, 0, 0)
        except (OSError, AttributeError):
            pass
        if os.getppid() != parent:       # vkbench died before prctl took effect
            os._exit(143)
        if niceness:
            with contextlib.suppress(OSError):
                os.nice(niceness)
    return run


# The group's leader: on SIGTERM (sent by vkbench, or by the kernel when vkbench dies) it takes
# the whole group down, sub-makes and compilers included.
_GROUP_LEADER = 'trap "trap - TERM INT; kill -TERM 0 2>/dev/null; exit 143" TERM INT; "$@" & wait $!'


def _kill_group(proc: subprocess.Popen) -> None:
    for sig, grace in ((signal.SIGTERM, 10.0), (signal.SIGKILL, 5.0)):
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(proc.pid, sig)
        try:
            proc.wait(timeout=grace)
            return
        except subprocess.TimeoutExpired:
            continue


@contextlib.contextmanager
def sigterm_raises() -> Iterator[None]:
    """In the main thread, turn SIGTERM into SystemExit so ``finally`` blocks clean up."""
    if threading.current_thread() is not threading.main_thread() or signal.getsignal(signal.SIGTERM) is not signal.SIG_DFL:
        yield
        return

    def raise_exit(signum, frame):  # noqa: ARG001
        raise SystemExit(128 + signum)

    previous = signal.signal(signal.SIGTERM, raise_exit)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


def run_in_group(cmd: list[str], cwd: Path, env: dict[str, str], log: Path, timeout: float) -> int:
    niceness = int(os.environ.get("VKBENCH_BUILD_NICE", "10"))
    with open(log, "ab") as handle:
        proc = subprocess.Popen(["bash", "-c", _GROUP_LEADER, "vkbench-build", *cmd], cwd=cwd, env=env,
                                stdout=handle, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                preexec_fn=_guard_child(os.getpid(), niceness))
        try:
            return proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            _kill_group(proc)
            raise MissingBinaryError(f"{cmd[0]} timed out after {timeout:.0f} s", hint=f"see {log}") from None
        except BaseException:
            _kill_group(proc)
            raise


# -- the build --------------------------------------------------------------------------------

def build_name(commit: str, config: BuildConfig) -> str:
    return f"src-{commit[:12]}-{config.config_id}"


def _checkout(mirror: Mirror, commit: str, work: Path) -> None:
    if not (work / ".git").is_dir():
        work.mkdir(parents=True, exist_ok=True)
        git(["init", "-q"], work, "git init", url=mirror.url)
    alternates = work / ".git" / "objects" / "info" / "alternates"
    alternates.parent.mkdir(parents=True, exist_ok=True)
    alternates.write_text(str(mirror.path / "objects") + "\n")
    git(["checkout", "-q", "-f", "--detach", commit], work, f"git checkout {commit}", url=mirror.url)
    git(["clean", "-q", "-ffdx"], work, "git clean", url=mirror.url)


def build_env(config: BuildConfig, commit_time: int, root: Path) -> dict[str, str]:
    env = {**os.environ, "SOURCE_DATE_EPOCH": str(commit_time), "LC_ALL": "C", "TZ": "UTC"}
    for name in ("CFLAGS", "LDFLAGS", "SERVER_CFLAGS", "SERVER_LDFLAGS", "OPTIMIZATION", "MAKEFLAGS", "MFLAGS"):
        env.pop(name, None)       # only what the configuration says reaches make
    if ccache_enabled():
        masquerade = Path("/usr/lib/ccache")
        if (masquerade / config.cc).exists():
            env["PATH"] = f"{masquerade}{os.pathsep}{env.get('PATH', '')}"
        env.setdefault("CCACHE_DIR", str(root / "ccache"))
        env.setdefault("CCACHE_MAXSIZE", "3G")
        env["CCACHE_NOHASHDIR"] = "1"
    return env


def has_symbols(path: Path) -> bool:
    """Whether an ELF binary still has a symbol table (``.symtab``): unstripped."""
    data = path.read_bytes()
    return b".symtab" in data and b".strtab" in data


def _make(work: Path, config: BuildConfig, env: dict[str, str], log: Path, progress: Progress | None) -> None:
    jobs = os.environ.get("VKBENCH_BUILD_JOBS") or str(os.cpu_count() or 2)
    args = ["make", f"-j{jobs}", *config.make_args(work)]
    log.write_text(f"$ {' '.join(args)}\n")
    if progress:
        progress(f"make -j{jobs} MALLOC={config.malloc}" + (" (ccache)" if ccache_enabled() else " (a few minutes)"))
    code = run_in_group(args, work, env, log, BUILD_TIMEOUT_S)
    if code != 0:
        tail = "\n".join(log.read_text(errors="replace").splitlines()[-12:])
        raise MissingBinaryError(f"make failed (exit {code}):\n{tail}",
                                 hint=f"full log: {log}; tools/setup/build.sh installs the toolchain")


def build_commit(mirror: Mirror, commit: str, ref: str, config: BuildConfig, *, root: Path | None = None,
                 progress: Progress | None = None, refresh: bool = False) -> Path:
    """The cache entry of ``commit`` built with ``config`` (built now unless cached)."""
    _require_tools()
    base = root or cache.cache_dir()
    name = build_name(commit, config)
    with cache.entry_lock(f"valkey-{name}", base):
        entry = cache.entry_dir("valkey", name, base)
        if not refresh and cache.read_meta(entry) is not None and (entry / "bin" / "valkey-server").is_file():
            return entry
        commit_time = mirror.commit_time(commit)
        with cache.entry_lock("build-workdir", base), sigterm_raises(), cache.staging(base) as staged:
            work = base / ".build" / "work"
            if progress:
                progress(f"checking out {commit[:12]} ({ref}) of {redact(mirror.url)}")
            _checkout(mirror, commit, work)
            if not (work / "src" / "Makefile").is_file() and not (work / "Makefile").is_file():
                raise MissingBinaryError(f"{redact(mirror.url)} @ {commit[:12]} has no Makefile",
                                         hint="is this a Valkey repository? set VKBENCH_VALKEY_GIT_URL or --repo")
            log = staged / "build.log"
            began = time.monotonic()
            _make(work, config, build_env(config, commit_time, base), log, progress)
            build_s = round(time.monotonic() - began, 1)
            server = work / "src" / "valkey-server"
            if not server.is_file():
                raise MissingBinaryError(
                    f"make succeeded but left no src/valkey-server in {redact(mirror.url)} @ {commit[:12]}",
                    hint="is this a Valkey repository (not Redis or another project)? set VKBENCH_VALKEY_GIT_URL "
                    "or --repo to one",
                )
            (staged / "entry" / "bin").mkdir(parents=True)
            for binary in BINARIES:
                if (work / "src" / binary).is_file():
                    shutil.copy2(work / "src" / binary, staged / "entry" / "bin" / binary)
            shutil.copy2(log, staged / "entry" / "build.log")
            installed = staged / "entry" / "bin" / "valkey-server"
            version, output = probe_version(installed)
            if version is None and config.cross:
                # Built for another machine: the machine that runs it probes it (resolve.reprobe).
                output = ""
            elif version is None:
                raise MissingBinaryError(f"the built valkey-server does not run: {output[-300:]}",
                                         hint=f"see {entry / 'build.log'}")
            meta = {
                "engine": "valkey", "version": name, "source": "source-build", "commit": commit,
                "reports": version,
                "code": {"url": redact(mirror.url), "commit": commit, "ref": ref, "commit_time": commit_time},
                "build_config": {"id": config.config_id, **config.identity(), "source_date_epoch": commit_time,
                                 "ccache": ccache_enabled()},
                "symbols": has_symbols(installed),
                "build_s": build_s,
                "probed_on": runs_here.machine_identity() if version is not None else None,
                "detail": f"git {redact(mirror.url)} {ref} @ {commit} (reports {version}, MALLOC={config.malloc}"
                          + (", BUILD_TLS=yes" if config.tls else "")
                          + (f", cross-built for {config.target})" if config.cross else ")"),
            }
            return cache.install_entry(staged / "entry", "valkey", name, meta, base)


#: Appended to a TLS build's alias (``valkey/unstable+tls``). ``+`` is never in a ref vkbench
#: accepts (catalog.GIT_REF), so a TLS alias cannot be another ref's alias.
TLS_ALIAS_SUFFIX = "+tls"


def alias_name(version: str, config: BuildConfig | None = None) -> str:
    """The cache entry that records what ``version`` resolved to. A TLS and a plain build of one ref
    keep an alias each, so that TLS and plain cells of one run do not re-point one alias in turn."""
    return f"{version}{TLS_ALIAS_SUFFIX}" if config is not None and config.tls else version


def write_alias(version: str, build: Path, ref: str, url: str, root: Path | None = None,
                alias: str | None = None) -> Path:
    """``<cache>/valkey/<alias>`` (default ``<version>``): meta.json naming the build, ``bin``
    linking to its binaries. The meta's version stays ``version``, the version as asked."""
    base = root or cache.cache_dir()
    meta = dict(cache.read_meta(build) or {})
    meta["version"] = version
    meta["alias_of"] = build.name
    # The URL asked for: the build may have come from another mirror of the same commit.
    meta["code"] = {**meta.get("code", {}), "ref": ref, "url": redact(url)}
    built = meta.get("build_config") or {}
    meta["detail"] = (f"git {meta['code'].get('url')} {ref} @ {meta['code'].get('commit')} "
                      f"(reports {meta.get('reports')}, MALLOC={built.get('malloc')}"
                      + (", BUILD_TLS=yes)" if (built.get("make_vars") or {}).get("BUILD_TLS", "no") != "no" else ")"))
    with cache.staging(base) as staged:
        (staged / "entry").mkdir()
        (staged / "entry" / "bin").symlink_to(Path("..") / build.name / "bin")
        return cache.install_entry(staged / "entry", "valkey", alias or version, meta, base)


def alias_matches(meta: dict | None, url: str, config: BuildConfig) -> bool:
    """Whether a cached alias was built from ``url`` with ``config`` (else it must be re-resolved)."""
    if not meta or meta.get("source") != "source-build":
        return False
    code, built = meta.get("code") or {}, meta.get("build_config") or {}
    if code.get("url") != redact(url):
        return False
    if built.get("id") == config.config_id:
        return True
    # A machine without the configured compiler cannot build (an arm64 Pi given a cross-built
    # cache): the build of the same configuration counts, whatever the compiler's version was.
    if shutil.which(config.cc) is None:
        mine = config.identity()
        return all(built.get(key) == value for key, value in mine.items() if key != "cc_version")
    return False


def fetch(version: str, root: Path | None = None, progress: Progress | None = None, url: str | None = None,
          config: BuildConfig | None = None) -> Path:
    """Build ``version`` (a ref, or ``<ref>@source``) and record it as ``valkey/<alias_name>``; return that entry.

    The alias is written under its entry lock (the one resolve.fetch_release holds too): two
    processes resolving the same ref never replace each other's entry half-way."""
    _require_tools()
    ref, _ = split_source(version)
    url = url or repo_url()
    config = config or BuildConfig.from_env()
    alias = alias_name(version, config)
    mirror = Mirror.for_url(url, root)
    with cache.entry_lock(f"valkey-{alias}", root):
        if progress:
            progress(f"git fetch {ref} from {redact(url)}" + (" (TLS build)" if config.tls else ""))
        commit = mirror.resolve(ref)
        build = build_commit(mirror, commit, ref, config, root=root, progress=progress)
        return write_alias(version, build, ref, url, root, alias=alias)


def checkout(ref: str, dest: Path, url: str | None = None) -> str:
    """Resolve ``ref`` in the mirror of ``url`` and check it out into ``dest``; return the commit."""
    url = url or repo_url()
    mirror = Mirror.for_url(url)
    commit = mirror.resolve(ref)
    _checkout(mirror, commit, dest)
    return commit
