"""Run a stack file's shell scripts on the host with stub valkey binaries that record their argv.

The scripts are the ones the containers run (after compose interpolation), so this proves what a
server is started with without any container engine.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import yaml

from .interpolate import interpolate

# Records argv (NUL-separated) and stdin, then answers like the real tool would for the checks.
_STUB = """#!/bin/sh
out="$STUB_DIR/$(basename "$0").$$"
printf '%s\\0' "$@" >"$out.argv"
case " $* " in
  *" - "*|*" -") cat >"$out.stdin" ;;
esac
case " $* " in
  *" --cluster create "*) touch "$STUB_DIR/created" ;;
  *" ping "*|*" ping") echo "${STUB_PING-PONG}" ;;
  *" cluster info"*) if [ -e "$STUB_DIR/created" ] || [ -n "$STUB_FORMED" ]; then echo "cluster_state:ok"; else echo "cluster_state:fail"; fi ;;
  *" info replication"*) echo "${STUB_REPLICATION-master_link_status:up}" ;;
esac
exit 0
"""


def stub_bin(tmp_path: Path) -> Path:
    bin_dir = tmp_path / "stub-bin"
    bin_dir.mkdir(parents=True, exist_ok=True)
    for name in ("valkey-server", "valkey-cli", "valkey-benchmark", "memtier_benchmark", "redis-server", "redis-cli"):
        path = bin_dir / name
        path.write_text(_STUB)
        path.chmod(0o755)
    (tmp_path / "stub-out").mkdir(exist_ok=True)
    return bin_dir


def load_stack(text: str) -> dict:
    return yaml.safe_load(text)


def run_script(script: str, env: dict[str, str], tmp_path: Path, extra_env: dict[str, str] | None = None,
               timeout: float = 20) -> subprocess.CompletedProcess:
    """Interpolate ``script`` with ``env`` like compose does and run it with sh and the stubs."""
    bin_dir = stub_bin(tmp_path)
    shell_env = {"PATH": f"{bin_dir}:{os.environ['PATH']}", "STUB_DIR": str(tmp_path / "stub-out"), **env,
                 **(extra_env or {})}
    return subprocess.run(["/bin/sh", "-c", interpolate(script, env)], env=shell_env, capture_output=True,
                          text=True, timeout=timeout)


def recorded(tmp_path: Path, name: str) -> list[tuple[list[str], str]]:
    """(argv, stdin) of every run of stub ``name``."""
    out = []
    for argv_file in sorted((tmp_path / "stub-out").glob(f"{name}.*.argv")):
        argv = argv_file.read_bytes().split(b"\0")[:-1]
        stdin_file = argv_file.with_suffix(".stdin")
        out.append(([a.decode() for a in argv], stdin_file.read_text() if stdin_file.exists() else ""))
    return out


def directives_from_argv(argv: list[str]) -> list[tuple[str, ...]]:
    """``--port 7000 --save ''`` back into directives, as valkey-server parses its options."""
    out: list[list[str]] = []
    for arg in argv:
        if arg.startswith("--"):
            out.append([arg[2:]])
        elif out:
            out[-1].append('""' if arg == "" else arg)
        elif arg != "-":
            raise AssertionError(f"argument {arg!r} before the first option")
    return [tuple(d) for d in out]


def directives_from_config(text: str) -> list[tuple[str, ...]]:
    return [tuple(line.split()) for line in text.splitlines() if line.strip() and not line.startswith("#")]
