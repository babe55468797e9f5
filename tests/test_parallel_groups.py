"""tools/test.sh runs the suite with `-n auto --dist loadgroup`, relying on tests/conftest.py to
put every test that loads the machine into one xdist group, so those run one after another on a
single worker as in a serial run. pytest-xdist reports nothing when a group is not honoured
(pytest-dev/pytest-xdist#1386: with pytest 9.2 the tests are silently spread), so this runs a
small suite through the same conftest hook and reads which worker ran what."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

CONFTEST = Path(__file__).resolve().parent / "conftest.py"

SUITE = '''
import pytest

@pytest.mark.integration
@pytest.mark.parametrize("i", range(4))
def test_server(i):
    pass

@pytest.mark.compose
def test_container():
    pass

@pytest.mark.browser
class TestBrowser:
    def test_page(self):
        pass

@pytest.mark.parametrize("i", range(8))
def test_unit(i):
    pass
'''


def test_machine_loading_tests_share_one_worker_and_the_rest_spreads(tmp_path):
    (tmp_path / "conftest.py").write_text(CONFTEST.read_text())
    (tmp_path / "test_a.py").write_text(SUITE)
    (tmp_path / "test_b.py").write_text(SUITE)
    (tmp_path / "pytest.ini").write_text("[pytest]\nmarkers =\n" + "".join(
        f"  {m}: x\n" for m in ("integration", "compose", "browser", "sourcebuild", "act", "arm64")))
    run = subprocess.run([sys.executable, "-m", "pytest", "-n", "2", "--dist", "loadgroup", "-v", "-p", "no:cacheprovider"],
                          cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-2000:]
    ran = re.findall(r"\[(gw\d+)\][^\n]*PASSED (\S+)", run.stdout)
    assert len(ran) == 2 * (4 + 1 + 1 + 8), run.stdout[-3000:]
    machine = {worker for worker, test in ran if re.search(r"test_(server|container|page)", test)}
    assert len(machine) == 1, f"the machine group ran on {sorted(machine)}:\n{run.stdout[-3000:]}"
    assert {worker for worker, _ in ran} == {"gw0", "gw1"}, "the other tests did not spread"


def test_every_act_test_is_marked_before_the_grouping():
    tests = Path(__file__).resolve().parent
    run = subprocess.run([sys.executable, "-m", "pytest", str(tests / "workflows" / "act"), "--collect-only", "-q",
                          "-m", "not act", "-p", "no:cacheprovider"], cwd=tests.parent, capture_output=True, text=True,
                         timeout=120)
    assert re.search(r"\b0/\d+ tests collected|no tests collected", run.stdout), run.stdout[-2000:]
