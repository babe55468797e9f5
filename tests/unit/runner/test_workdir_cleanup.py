"""The private folders a cell writes secrets into (the servers' config files with requirepass,
memtier's JSON with its command line) are removed whatever fails once they exist: here failures
right after they are made, before any server or tool runs."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import pytest

from vkbench.matrix.model import Cell
from vkbench.runner import execute
from vkbench.runner.execute import CellState, RunContext

CELL = Cell.model_validate({"server": "valkey:9.1.2", "requests": 1000, "tool": "memtier_benchmark", "tests": ["set"]})


def _ctx(tmp_path: Path, out_dir: Path) -> RunContext:
    work = tmp_path / "work"
    work.mkdir()
    return RunContext(backend=None, out_dir=out_dir, run_id="r", tool_paths={CELL.tool: object()}, work_dir=work)


def test_the_deployment_folder_goes_when_the_cell_fails_before_deploying(tmp_path):
    out = tmp_path / "out"
    out.write_text("a file where the output folder belongs")      # the raw folder cannot be made
    ctx = _ctx(tmp_path, out)
    with pytest.raises(OSError):
        execute.run_repetitions(CellState(CELL), ctx, 1)
    assert list(ctx.work_dir.iterdir()) == []


@pytest.mark.parametrize("failure", [KeyboardInterrupt, OSError])
def test_the_memtier_json_folder_goes_when_a_repetition_fails_before_its_tool_runs(tmp_path, monkeypatch, failure):
    def build_command(*args, **kwargs):
        raise failure("Ctrl-C while the command line is built")

    monkeypatch.setattr(execute, "targets", lambda cell, deployment: [object()])
    monkeypatch.setattr(execute, "build_command", build_command)
    ctx = _ctx(tmp_path, tmp_path / "out")
    with pytest.raises(failure):
        execute._one_repetition(CellState(CELL), deployment=None, tool=SimpleNamespace(path="/usr/bin/memtier_benchmark"),
                                ctx=ctx, raw_dir=tmp_path / "raw",
                                index=0, password="pw")
    assert list(ctx.work_dir.iterdir()) == []
