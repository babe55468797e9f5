"""Four publisher processes race to one bare repository: every run lands exactly once and the
branch history stays linear (rejected pushes re-apply the ingest on the new tip)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path


from factory import make_result, write_result  # noqa: E402

from vkbench.history import HistoryStore  # noqa: E402

PUBLISHERS = 4
RUNS_EACH = 3

WORKER = r"""
import json, sys
from pathlib import Path
from vkbench.history.publish import publish

results, remote, out = sys.argv[1], sys.argv[2], sys.argv[3]

def hook(root: Path) -> None:
    # what the workflow does before committing: write derived files into the same checkout
    (root / "history" / f"published-by-{Path(results).name}.txt").write_text("ok")

report = publish([results], remote, "gh-pages", max_retries=30, backoff=0.05, max_backoff=0.5, before_commit=hook)
Path(out).write_text(json.dumps(report.to_dict()))
"""


def git(*args: str, cwd: Path | None = None) -> str:
    return subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True, text=True).stdout


def test_concurrent_publishers_land_every_run_once_with_linear_history(tmp_path):
    remote = tmp_path / "remote.git"
    git("init", "-q", "--bare", str(remote))
    expected = set()
    for p in range(PUBLISHERS):
        for r in range(RUNS_EACH):
            run_id = f"pub{p}-run{r}"
            result = make_result(run_id=run_id, timestamp=f"2026-11-{10 + r:02d}T0{p}:00:00Z", rps={"SET": 1e5 + p, "GET": 2e5})
            write_result(tmp_path / f"results-{p}", result)
            expected.add(run_id)

    procs = [
        subprocess.Popen([sys.executable, "-c", WORKER, str(tmp_path / f"results-{p}"), str(remote), str(tmp_path / f"report-{p}.json")],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        for p in range(PUBLISHERS)
    ]
    for proc in procs:
        _, err = proc.communicate(timeout=120)
        assert proc.returncode == 0, err
    reports = [json.loads((tmp_path / f"report-{p}.json").read_text()) for p in range(PUBLISHERS)]
    assert all(r["pushed"] for r in reports)
    assert max(r["attempts"] for r in reports) > 1 or PUBLISHERS == 1     # they did collide

    checkout = tmp_path / "check"
    git("clone", "-q", "--branch", "gh-pages", str(remote), str(checkout))
    # linear: no merge commits, one commit per publisher
    assert git("rev-list", "--min-parents=2", "HEAD", cwd=checkout).strip() == ""
    assert len(git("rev-list", "HEAD", cwd=checkout).split()) == PUBLISHERS

    store = HistoryStore(checkout / "history")
    index = store.index()
    assert index["runs"] == PUBLISHERS * RUNS_EACH
    for sid in store.series_ids():
        points = store.read_series(sid)
        keys = [(p["run_id"], p["cell_id"]) for p in points]
        assert len(keys) == len(set(keys))                                   # exactly once
        assert index["series"][sid]["points"] == len(points)
    get_sid = next(s for s in store.series_ids() if index["series"][s]["dims"]["command"] == "GET")
    assert {p["run_id"] for p in store.read_series(get_sid)} == expected    # every run present

    # publishing the same results again changes nothing and makes no commit
    again = subprocess.run([sys.executable, "-c", WORKER, str(tmp_path / "results-0"), str(remote), str(tmp_path / "again.json")],
                           capture_output=True, text=True)
    assert again.returncode == 0, again.stderr
    assert json.loads((tmp_path / "again.json").read_text())["pushed"] is False
    assert len(git("rev-list", "gh-pages", cwd=remote).split()) == PUBLISHERS


def test_publish_cli_with_detect(tmp_path):
    from click.testing import CliRunner

    from vkbench.cli.publish import publish_cmd

    remote = tmp_path / "remote.git"
    git("init", "-q", "--bare", str(remote))
    for night in range(3):
        write_result(tmp_path / "res", make_result(run_id=f"n{night}", timestamp=f"2026-11-0{night + 1}T02:00:00Z"))
    runner = CliRunner()
    out = runner.invoke(publish_cmd, [str(tmp_path / "res"), "--repo-dir", str(remote), "--message", "nightly"])
    assert out.exit_code == 0, out.output
    assert out.output.startswith("pushed ") and "(attempt 1): 6 new point(s) from 3 file(s)" in out.output
    files = git("ls-tree", "-r", "--name-only", "gh-pages", cwd=remote).split()
    assert "history/detect.json" in files and "history/index.json" in files and "history/format.json" in files
    assert git("log", "--format=%s", "gh-pages", cwd=remote).strip() == "nightly"
    again = runner.invoke(publish_cmd, [str(tmp_path / "res"), "--repo-dir", str(remote)])
    assert again.output.startswith("nothing new to publish on gh-pages")
