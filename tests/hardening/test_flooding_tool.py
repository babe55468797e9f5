"""Issue 18, a benchmark tool with no bound: a fake tool (through the VKBENCH_TOOL_* override)
that prints without end, or never ends. `vkbench run` must stream the output to disk up to
--output-limit (exit 15), hold --timeout in every phase (exit 14), and tear everything down
when either fires: no server, no tool process, no pid file, no vkbench-* temp folder, no
config file with the password. Outside the results folder nothing changes (tree hash).

Each run is a child process in a session of its own with a timeout; whatever the outcome, the
fixture kills what is left (run_leftovers.clean_up_runs)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from run_leftovers import clean_up_runs, run_processes
from test_escapes import tree_hash

pytestmark = pytest.mark.integration

REPO = Path(__file__).resolve().parents[2]
RUN_TIMEOUT = 300         # the runs below take 5-20 s; x10 for a loaded 2-core machine

FLOOD = "#!/bin/sh\nexec yes 'SET: 123456.78 requests per second, p50=0.111 msec ................................'\n"
#: Answers the probes (--help, --version, one PING) like a tool, then hangs in every benchmark.
HANG = ("#!/bin/sh\ncase \"$*\" in *--help*|*--version*) echo 'valkey-benchmark 9.1.2'; exit 0;; "
        "*'-n 1 -t ping'*) exit 1;; esac\nexec sleep 3600\n")

CELL = {"server": "valkey:9.1.2", "requests": 1000, "repetitions": 2, "preload": False, "tests": ["set"]}


@pytest.fixture
def runs(tmp_path):
    started: list[subprocess.Popen] = []
    yield started
    clean_up_runs(started, tmp_path / "state", env_for(tmp_path, tmp_path / "tool"))


def env_for(tmp_path: Path, tool: Path) -> dict[str, str]:
    (tmp_path / "tmp").mkdir(exist_ok=True)
    return dict(os.environ, TMPDIR=str(tmp_path / "tmp"), VKBENCH_TOOL_VALKEY_BENCHMARK=str(tool),
                PYTHONPATH=os.pathsep.join(filter(None, [str(REPO / "bench"), os.environ.get("PYTHONPATH")])))


def run_with(tmp_path: Path, runs: list, script: str, cell: dict, *flags: str) -> tuple[int, str, float]:
    tool = tmp_path / "tool"
    tool.write_text(script)
    tool.chmod(0o755)
    (tmp_path / "outside").mkdir()
    (tmp_path / "outside" / "keep.txt").write_text("not the run's\n")
    before = tree_hash(tmp_path / "outside", tool)
    began = time.monotonic()
    child = subprocess.Popen([sys.executable, "-m", "vkbench", "run", "--cell", json.dumps(cell), "--out",
                              str(tmp_path / "out"), "--state-dir", str(tmp_path / "state"), *flags],
                             env=env_for(tmp_path, tool), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                             start_new_session=True)
    runs.append(child)
    out, err = child.communicate(timeout=RUN_TIMEOUT)
    assert tree_hash(tmp_path / "outside", tool) == before
    return child.returncode, out + err, time.monotonic() - began


def assert_torn_down(tmp_path: Path) -> None:
    deadline = time.monotonic() + 60
    while run_processes(tmp_path / "tmp") and time.monotonic() < deadline:
        time.sleep(0.1)
    assert run_processes(tmp_path / "tmp") == []                         # no server, no tool
    assert [p.name for p in (tmp_path / "tmp").iterdir()] == []          # no vkbench-* temp folder
    assert list((tmp_path / "state").glob("*.json")) == []               # no pid file
    assert [p for p in tmp_path.rglob("*.conf")] == []                   # no config with the password


def test_a_flooding_tool_is_capped_in_the_warm_up_and_everything_is_torn_down(tmp_path, runs):
    code, text, _ = run_with(tmp_path, runs, FLOOD, dict(CELL, warmup=1000), "--output-limit", "0.5", "--timeout", "120")
    assert "Traceback" not in text
    assert code == 15, text[-3000:]
    assert "printed more than 524288 bytes (0.5 MiB, --output-limit) in its warm-up" in text
    assert "hint:" in text and "raise --output-limit" in text
    raw = next((tmp_path / "out").glob("*.raw"))
    assert (raw / "warmup.txt").stat().st_size <= 524288                 # streamed, capped, never more
    assert not list((tmp_path / "out").glob("*.json"))                   # no result from a stopped cell
    assert_torn_down(tmp_path)


def test_a_flooding_tool_is_capped_in_a_repetition(tmp_path, runs):
    code, text, _ = run_with(tmp_path, runs, FLOOD, dict(CELL, warmup=0), "--output-limit", "0.5", "--timeout", "120")
    assert "Traceback" not in text
    assert code == 15, text[-3000:]
    assert "in its repetition 1 and was stopped" in text
    raw = next((tmp_path / "out").glob("*.raw"))
    assert (raw / "rep-1.txt").stat().st_size <= 524288
    assert not (raw / "rep-2.txt").exists()                              # the cell stopped at the first
    assert_torn_down(tmp_path)


@pytest.mark.parametrize("phase,cell", [("warm-up", dict(CELL, warmup=1000)), ("repetition 1", dict(CELL, warmup=0))])
def test_timeout_holds_in_every_phase_and_tears_everything_down(tmp_path, runs, phase, cell):
    code, text, took = run_with(tmp_path, runs, HANG, cell, "--timeout", "3")
    assert "Traceback" not in text
    assert code == 14, text[-3000:]
    assert f"did not finish its {phase} within 3 s (--timeout)" in text
    assert "servers, pid files and temporary folders are removed" in text and "hint: raise --timeout" in text
    assert took < RUN_TIMEOUT      # it ended by itself (one phase's 3 s, not one per repetition)
    assert_torn_down(tmp_path)


def test_the_preload_holds_its_deadline(monkeypatch):
    """The preload writes with a Python client: past the deadline between two batches it stops."""
    from vkbench.errors import ToolTimeoutError
    from vkbench.runner import preload

    class Pipe:
        def set(self, *_):
            pass

        def execute(self):
            pass

    class Client:
        def pipeline(self, transaction=False):
            return Pipe()

        def close(self):
            pass

    monkeypatch.setattr(preload, "client_for", lambda deployment: Client())
    with pytest.raises(ToolTimeoutError) as caught:
        preload.preload_keyspace(None, 10_000, 3, deadline=time.monotonic() - 1, timeout_s=3)
    assert "the preload did not finish within 3 s (--timeout): 0 of 10000 keys written" in caught.value.message
    assert caught.value.exit_code == 14
