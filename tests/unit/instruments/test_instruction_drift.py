"""tools/instruction_drift.py on kept window dumps (the real valkey 9.1.2 GET window of the fixtures):
the code count per run under either strings scope, and the per-window counts of what follows wall
time."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]
FIXTURE = Path(__file__).resolve().parent / "data" / "valkey-9.1.2-get-2000.out.gz"


def _run(tmp_path: Path, *extra: str) -> str:
    run = tmp_path / "run"
    for window in (1, 2):
        (run / "server-1").mkdir(parents=True, exist_ok=True)
        shutil.copy(FIXTURE, run / "server-1" / f"callgrind-seed1-get-w{window}.out.gz")
    return subprocess.run([sys.executable, str(ROOT / "tools" / "instruction_drift.py"), str(run), "--requests", "2000",
                           *extra], capture_output=True, text=True, timeout=120, check=True).stdout


def test_the_drift_tool_prints_the_code_count_and_the_clock_terms(tmp_path):
    out = _run(tmp_path)
    line = next(row for row in out.splitlines() if " get " in row)
    assert "slowlog 0.00" in line and "crons 1.00" in line and "gettimeofday" in line
    now = float(line.split("code median ")[1].split()[0])
    before = float(next(r for r in _run(tmp_path, "--strings-scope", "all").splitlines()
                        if " get " in r).split("code median ")[1].split()[0])
    # The cron run's 697 instructions of strchr/strrchr, no longer subtracted twice.
    assert now - before == pytest.approx(697 / 2000, abs=0.002)


def test_the_drift_tool_refuses_a_directory_without_kept_windows(tmp_path):
    proc = subprocess.run([sys.executable, str(ROOT / "tools" / "instruction_drift.py"), str(tmp_path), "--requests", "10"],
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 2 and "no kept window dumps" in proc.stderr
