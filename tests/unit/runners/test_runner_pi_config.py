"""The Pi overclock in config.txt, applied for real (bench_tuning's tasks/pi_config.yml on
scratch files): off by default means off, whoever wrote the overclock; opting in writes the
role's block; both are idempotent; opting in without a config.txt fails naming the path."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from .conftest import REPO, ROLES, venv_tool

HERE = Path(__file__).resolve().parent
MARK = "vkbench bench_tuning overclock (docs/runners.md)"
STOCK = "# Raspberry Pi OS\ndtparam=audio=on\ncamera_auto_detect=1\n[pi4]\narm_boost=1\n[cm4]\notg_mode=1\n"
# Overclocked by hand (the valkey.io post's values), and by an earlier run of the role with
# bench_tuning_pi_overclock: true.
BY_HAND = STOCK + "[all]\nover_voltage=8\narm_freq=2200\n  force_turbo=1\narm_freq_min=600\n"
BY_THE_ROLE = STOCK + f"# BEGIN {MARK}\n[all]\nover_voltage=8\narm_freq=2200\n# END {MARK}\n"


def apply(cases: list[dict], local_tmp: Path) -> subprocess.CompletedProcess:
    return subprocess.run(
        [venv_tool("ansible-playbook"), "-i", "localhost,", str(HERE / "apply-pi-config.yml"),
         "-e", json.dumps({"cases": cases, "ansible_python_interpreter": sys.executable})],
        cwd=REPO, capture_output=True, text=True, timeout=300,
        env={**os.environ, "ANSIBLE_ROLES_PATH": str(ROLES), "ANSIBLE_NOCOLOR": "1",
             "ANSIBLE_LOCAL_TEMP": str(local_tmp / "ansible-local")},
    )


def changed(output: str) -> int:
    return int(re.search(r"^localhost\s*:.*\bchanged=(\d+)", output, re.M).group(1))


def active(text: str) -> list[str]:
    """The clock and voltage settings the firmware would read (uncommented lines)."""
    return [line.strip() for line in text.splitlines()
            if re.match(r"\s*(arm_freq|over_voltage|over_voltage_delta|force_turbo)\s*=", line)]


@pytest.fixture(scope="module")
def applied(tmp_path_factory):
    """Every case applied twice: {case: (text after the first run, after the second)}."""
    tmp = tmp_path_factory.mktemp("config-txt")
    start = {"by-hand-off": (BY_HAND, False), "by-the-role-off": (BY_THE_ROLE, False),
             "stock-off": (STOCK, False), "stock-on": (STOCK, True), "by-hand-on": (BY_HAND, True)}
    for name, (text, _) in start.items():
        (tmp / name).mkdir()
        (tmp / name / "config.txt").write_text(text)
    cases = [{"path": str(tmp / name / "config.txt"), "overclock": on} for name, (_, on) in start.items()]
    first = apply(cases, tmp)
    assert first.returncode == 0, first.stdout + first.stderr
    after_first = {name: (tmp / name / "config.txt").read_text() for name in start}
    second = apply(cases, tmp)
    assert second.returncode == 0, second.stdout + second.stderr
    after_second = {name: (tmp / name / "config.txt").read_text() for name in start}
    return {"first": first.stdout, "second": second.stdout, "after_first": after_first, "after_second": after_second}


def test_overclock_off_leaves_no_overclock_whoever_wrote_it(applied):
    by_hand, by_role = applied["after_first"]["by-hand-off"], applied["after_first"]["by-the-role-off"]
    assert active(by_hand) == [] and active(by_role) == []
    assert MARK not in by_role and by_role == STOCK
    assert "# over_voltage=8  # overclock off: vkbench bench_tuning (bench_tuning_pi_overclock)" in by_hand
    assert "#   force_turbo=1  # overclock off" in by_hand
    # Everything else stays: the distribution's own settings, the minimum clock, arm_boost.
    assert "arm_freq_min=600\n" in by_hand and "arm_boost=1\n" in by_hand and "dtparam=audio=on\n" in by_hand
    assert applied["after_first"]["stock-off"] == STOCK


def test_overclock_on_writes_the_role_block_last(applied):
    stock_on = applied["after_first"]["stock-on"]
    assert stock_on == STOCK + f"# BEGIN {MARK}\n[all]\nover_voltage=8\narm_freq=2200\n# END {MARK}\n"
    assert active(stock_on) == ["over_voltage=8", "arm_freq=2200"]
    by_hand_on = applied["after_first"]["by-hand-on"]
    assert by_hand_on.endswith(f"# BEGIN {MARK}\n[all]\nover_voltage=8\narm_freq=2200\n# END {MARK}\n")


def test_a_second_run_changes_nothing(applied):
    assert changed(applied["first"]) >= 4
    assert changed(applied["second"]) == 0
    assert applied["after_second"] == applied["after_first"]


def test_opting_in_without_a_config_txt_fails_naming_it(tmp_path):
    missing = tmp_path / "firmware" / "config.txt"
    run = apply([{"path": str(missing), "overclock": True}], tmp_path)
    assert run.returncode != 0 and str(missing) in run.stdout
    assert not missing.parent.exists()
    kept_off = apply([{"path": str(missing), "overclock": False}], tmp_path)
    assert kept_off.returncode == 0 and changed(kept_off.stdout) == 0 and not missing.parent.exists()
