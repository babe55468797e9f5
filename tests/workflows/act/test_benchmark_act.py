"""benchmark.yml, dispatched with publish: true, run by act on this host: the whole chain.

plan (builds and uploads the vkbench wheel, expands a narrowed smoke matrix) -> every bench cell on
the compose backend (installs that wheel, runs the cell, uploads its result through act's artifact
server) -> publish (downloads and merges the results, `vkbench publish` into a local bare repository
standing in for gh-pages, then github-action-benchmark's real code on our export, pushing to the
same branch) -> alert against a fake GitHub REST API that records its calls.

Stand-ins (act_harness.py): actions/setup-python only (it downloads Python from GitHub; a venv of
the host's python3 replaces it); the gh-pages remote and the REST API. Every other action runs
from its snapshot at the SHA the workflow pins.
"""

from __future__ import annotations

import json
import subprocess
import sys

import act_harness as ah

#: The dispatch form as a user would fill it: the smoke preset narrowed to two cells. The version
#: is the one the compose backend can run without a registry (tools/setup/containers.sh builds
#: its image from Debian's valkey 8.0.1 packages; VALKEY_IMAGE names it, as a runner's .env would).
INPUTS = {"preset": "smoke", "versions": "valkey:8.0.1", "io_threads": "1,2", "topologies": "standalone",
          "tool": "preset", "runner_classes": "cloud-x86", "repetitions": "2", "publish": "true"}
#: smoke measures SET and GET: one series point per command and cell.
COMMANDS = 2


def planned_cells() -> list[dict]:
    """What the plan job must produce for INPUTS, from the vkbench under test in this process."""
    out = subprocess.run(
        [sys.executable, "-m", "vkbench", "matrix", INPUTS["preset"], "--format", "github",
         "--versions", INPUTS["versions"], "--io-threads", INPUTS["io_threads"], "--topologies", INPUTS["topologies"],
         "--runners", INPUTS["runner_classes"], "--repetitions", INPUTS["repetitions"]],
        check=True, capture_output=True, text=True, timeout=120).stdout
    return json.loads(out)["include"]


def test_dispatch_with_publish_runs_the_whole_chain(act_runner, pages, tmp_path):
    cells = planned_cells()
    assert len(cells) == 2
    act_runner.env["HOME"] = str(ah.job_home(tmp_path, pages))
    act_runner.secrets["GITHUB_TOKEN"] = ah.FAKE_TOKEN
    with ah.FakeGitHub(act_runner.head_sha) as api:
        act_runner.env["GITHUB_API_URL"] = api.url
        result = act_runner.run("workflow_dispatch", "benchmark.yml", ah.dispatch_event(INPUTS, "benchmark.yml"),
                                timeout=1500)
    print(f"benchmark.yml under act: {result.seconds:.0f}s")

    # Every job, every cell: success.
    assert result.returncode == 0, result.describe()
    assert result.names() == {name: "success" for name in ("plan", "publish", "alert", "confirm candidates", "bisect new incidents",
                                                           *(c["name"] for c in cells))}, result.describe()
    # No step of publish failed or was skipped, the github-action-benchmark steps included (smoke
    # counts no instructions, but every preload records memory per key: counts.json, a third chart).
    publish_steps = result.step_results("publish")
    assert [s for s in publish_steps if "Backstop chart" in s] and set(publish_steps.values()) == {"success"}, publish_steps

    # The job summaries: the plan's table, the publish report, the alert report.
    summaries = "\n".join(result.summaries())
    assert f"Benchmark plan: {len(cells)} cells" in summaries
    assert "Benchmark history updated" in summaries and "Regression alerts" in summaries
    # A first history has no candidate to confirm: the confirm job ran and dispatched nothing.
    assert "0 candidate(s) dispatched to ab.yml" in summaries
    # Nor a new incident to bisect: the dispatch-bisect job read what alert did and dispatched nothing.
    assert "0 incident(s) dispatched to bisect.yml" in summaries

    # gh-pages: the history holds one point per cell and command, the site, the backstop charts.
    branch = ah.pages_checkout(pages, tmp_path / "pages-check")
    index = json.loads((branch / "history" / "index.json").read_text())
    assert sum(s["points"] for s in index["series"].values()) == len(cells) * COMMANDS, index
    stored = {p.stem for p in (branch / "history" / "runs").rglob("*.json")}
    assert {c["id"] for c in cells} <= stored, stored
    data_js = (branch / "dev" / "bench" / "data.js").read_text()
    # A preset other than nightly charts under its own name (nightly.yml publishes two presets a night).
    assert "vkbench throughput (rps) [smoke]" in data_js and "vkbench latency (ms) [smoke]" in data_js
    assert "vkbench counts (instructions/op, bytes/key) [smoke]" in data_js and '"unit": "bytes/key"' in data_js
    shown = ah.render_site(branch / "site")
    assert shown["problems"] == [] and shown["legend_items"] >= 1 and shown["canvases"] >= 1, shown

    # The REST API: github-action-benchmark looked up the commit (three times, one per chart), vkbench
    # alert read the regression issues; all with the job's token, nothing outside this repository.
    assert api.calls, "no call reached the fake GitHub API"
    assert all(c["path"].startswith(f"/repos/{ah.OWNER_REPO}/") for c in api.calls), api.calls
    assert all(ah.FAKE_TOKEN in c["auth"] for c in api.calls), [c["auth"][:12] for c in api.calls]
    commit_lookups = [c for c in api.calls if c["path"].startswith(f"/repos/{ah.OWNER_REPO}/commits/")]
    assert len(commit_lookups) == 3, api.calls
    assert any(c["path"].startswith(f"/repos/{ah.OWNER_REPO}/issues") for c in api.calls), api.calls
    assert not [c for c in api.calls if c["path"].endswith("/dispatches")], api.calls

    # No token, no server password in any log or on the pages branch. Each cell masked its
    # stack's password (so the check below looks for them), publish and alert their credential.
    assert len(ah.masked_values(result)) >= len(cells) + 1, ah.masked_values(result)
    assert ah.secret_leaks(result, [ah.FAKE_TOKEN]) == []
    published = "\n".join(p.read_text(errors="replace") for p in branch.rglob("*") if p.is_file() and ".git" not in p.parts)
    assert ah.FAKE_TOKEN not in published and "x-access-token" not in published
