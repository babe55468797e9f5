"""Issue 18, a server that opens itself up: a cell's ``extra_server_args`` may tune the server but
never weaken its auth, binding, modules, paths or config file. Each hostile setting is refused,
with the setting named, by the Cell model (so by ``--cell``, matrix files, presets and catalogs)
and by the A/B and bisect workflows' input check (tools/ci/lib.sh ci_check_cell runs the same
Python rule); no traceback, nothing written or routed."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from cli_outcome import vk

from vkbench.matrix.model import Cell
from vkbench.matrix.server_settings import ALLOWED_NAMES, ServerSettingError, check_server_args

REPO = Path(__file__).resolve().parents[2]

#: case -> (extra_server_args, the setting the message must name)
HOSTILE = {
    "no-password": (["--requirepass", '""'], "requirepass"),
    "empty-password": (["--requirepass", ""], "requirepass"),
    "password-uppercase-name": (["--REQUIREPASS", "x"], "requirepass"),
    "masterauth": (["--masterauth", "x"], "masterauth"),
    "acl-user": (["--user", "default", "on", "nopass", "~*", "+@all"], "user"),
    "aclfile": (["--aclfile", "/tmp/acl"], "aclfile"),
    "bind-all": (["--bind", "0.0.0.0"], "bind"),
    "protected-mode-off": (["--protected-mode", "no"], "protected-mode"),
    "port": (["--port", "6379"], "port"),
    "tls-port": (["--tls-port", "6380"], "tls-port"),
    "unixsocket": (["--unixsocket", "/tmp/s"], "unixsocket"),
    "loadmodule": (["--loadmodule", "/tmp/evil.so"], "loadmodule"),
    "enable-debug-command": (["--enable-debug-command", "yes"], "enable-debug-command"),
    "dir-root": (["--dir", "/"], "dir"),
    "dbfilename": (["--dbfilename", "authorized_keys"], "dbfilename"),
    "logfile": (["--logfile", "/etc/x"], "logfile"),
    "pidfile": (["--pidfile", "/tmp/p"], "pidfile"),
    "include": (["--include", "/etc/valkey.conf"], "include"),
    "rename-command": (["--rename-command", "CONFIG", '""'], "rename-command"),
    "replicaof": (["--replicaof", "203.0.113.1", "6379"], "replicaof"),
    "slaveof": (["--slaveof", "203.0.113.1", "6379"], "slaveof"),
    "unknown-setting": (["--no-such-setting", "1"], "no-such-setting"),
    "io-threads-not-the-field": (["--io-threads", "8"], "io-threads"),
    "hidden-in-a-value": (["--save", "--requirepass", ""], "requirepass"),
    "newline-in-value": (["--maxmemory", "1gb\nrequirepass x"], "control characters"),
    "escape-in-value": (["--maxmemory", "1gb\x1b[2J"], "control characters"),
    "c1-in-value": (["--maxmemory", "1gb\x85"], "control characters"),
    "long-value": (["--maxmemory", "1" * 300], "longer than 256"),
    "value-first": (["1gb"], "does not follow a --setting"),
}
ALLOWED = [
    ["--maxmemory", "1gb", "--maxmemory-policy", "allkeys-lru"],
    ["--save", '""'],
    ["--appendonly", "yes", "--appendfsync", "everysec"],
    ["--hash-max-listpack-entries", "512", "--list-max-listpack-size", "-2"],
    ["--hz", "100", "--activedefrag", "yes"],
]


def _cell(args: list[str]) -> dict:
    return {"server": "valkey:8.0.1", "extra_server_args": args}


@pytest.mark.parametrize("case", list(HOSTILE))
def test_the_cell_model_refuses(case):
    args, needle = HOSTILE[case]
    with pytest.raises(ServerSettingError, match=needle.replace("[", r"\[")):
        check_server_args(args)
    with pytest.raises(ValueError, match="extra_server_args"):
        Cell.model_validate(_cell(args))


@pytest.mark.parametrize("case", list(HOSTILE))
def test_run_cell_refuses_with_the_setting_named(case):
    args, needle = HOSTILE[case]
    code, text = vk("run", "--cell", json.dumps(_cell(args)), "--dry-run")
    assert code == 2, text
    assert needle in text


@pytest.mark.parametrize("args", ALLOWED, ids=lambda a: a[0])
def test_tuning_settings_pass(args):
    assert Cell.model_validate(_cell(args)).extra_server_args == args
    code, text = vk("run", "--cell", json.dumps(_cell(args)), "--dry-run")
    assert code == 0, text


def test_a_matrix_file_is_checked_before_expansion_writes_anything(tmp_path):
    folder = tmp_path / "m"
    folder.mkdir()
    (folder / "matrix.yaml").write_text("name: hostile\ngroups:\n  - server: valkey:8.0.1\n    extra_server_args: ['--bind', '0.0.0.0', '--protected-mode', 'no']\n")
    before = sorted(p.name for p in folder.iterdir())
    code, text = vk("matrix", folder / "matrix.yaml", "--format", "json")
    assert code == 2, text
    assert "bind" in text
    assert sorted(p.name for p in folder.iterdir()) == before


def test_every_allowed_name_is_a_plain_lowercase_setting():
    for name in ALLOWED_NAMES:
        assert name == name.lower() and " " not in name
        check_server_args([f"--{name}", "1"])


# -- the workflows' input check (ab.sh check, bisect.sh check) runs the same rule ------------------

WORKFLOW_CASES = ["empty-password", "bind-all", "protected-mode-off", "loadmodule", "dir-root",
                  "include", "replicaof", "unknown-setting"]
SCRIPTS = {
    "ab.sh": ({"VKBENCH_AB_REPOSITORY": "https://github.com/valkey-io/valkey", "VKBENCH_AB_BASE": "unstable",
               "VKBENCH_AB_CANDIDATE": "feature-x", "VKBENCH_AB_PRESET": "ab", "VKBENCH_AB_MAX_ROUNDS": "20",
               "VKBENCH_MACHINE_CLASS": "cloud-x86"}, "VKBENCH_AB_CELL"),
    "bisect.sh": ({"VKBENCH_BISECT_REPOSITORY": "https://github.com/valkey-io/valkey", "VKBENCH_BISECT_GOOD": "c419524",
                   "VKBENCH_BISECT_BAD": "unstable", "VKBENCH_BISECT_PRESET": "ab", "VKBENCH_MACHINE_CLASS": "cloud-x86"},
                  "VKBENCH_BISECT_CELL"),
}


def run_check(script: str, tmp_path: Path, cell: str) -> subprocess.CompletedProcess:
    valid, variable = SCRIPTS[script]
    env = {k: v for k, v in os.environ.items() if not k.startswith(("GITHUB_", "RUNNER_", "VKBENCH_"))}
    env.update(valid, GITHUB_ACTIONS="true", GITHUB_OUTPUT=str(tmp_path / "github_output"),
               GITHUB_STEP_SUMMARY=str(tmp_path / "summary.md"))
    env[variable] = cell
    return subprocess.run(["bash", str(REPO / "tools" / "ci" / script), "check"], env=env, capture_output=True, text=True,
                          timeout=60, cwd=tmp_path)


@pytest.mark.parametrize("script", list(SCRIPTS))
@pytest.mark.parametrize("case", WORKFLOW_CASES)
def test_the_workflow_check_refuses(tmp_path, script, case):
    args, needle = HOSTILE[case]
    proc = run_check(script, tmp_path, json.dumps(_cell(args), separators=(",", ":")))
    text = proc.stdout + proc.stderr
    assert proc.returncode == 2, text[-2000:]
    assert "::error" in proc.stdout and needle in proc.stdout
    assert "Traceback" not in text
    for written in ("github_output", "summary.md"):     # nothing routed, nothing offered for approval
        assert not (tmp_path / written).exists() or (tmp_path / written).read_text() == "", written


@pytest.mark.parametrize("script", list(SCRIPTS))
def test_the_workflow_check_passes_a_tuning_cell(tmp_path, script):
    proc = run_check(script, tmp_path, json.dumps(_cell(["--maxmemory", "1gb", "--save", ""]), separators=(",", ":")))
    assert proc.returncode == 0, proc.stdout + proc.stderr
