"""nightly.yml on its schedule, run by act on this host: through workflow_call into benchmark.yml,
with ``valkey:unstable`` built from source and benchmarked on the compose backend.

The nightly preset on every runner class is hours of work; two narrowings keep it to minutes,
both outside the workflow files:

- the versions, through the repository variable the workflow reads (VKBENCH_NIGHTLY_VERSIONS),
  set here in NIGHTLY_VERSIONS: the one place to change which builds the nightly test measures;
- the cells act runs, with act's own `--matrix id:<cell id>` filter (the plan job still plans
  the whole nightly for those versions, and the test checks that count).

Valkey's repository "tonight" is a local copy whose ``unstable`` is tests/source_builds.py's
BASE_COMMIT, reached by the jobs through VKBENCH_VALKEY_GIT_URL (a runner's environment; GitHub
itself by default): the bench job builds it from source (or reuses the build the source-build
tests made of the same commit and configuration, as a runner reuses last night's cache) and the
compose backend runs that build as a local image.

Then publish (history, site, github-action-benchmark) into a local bare repository standing in
for gh-pages, and alert against a fake GitHub REST API. Stand-ins: act_harness.py.
"""

from __future__ import annotations

import json
import subprocess
import sys

import act_harness as ah
import pytest
from source_builds import BASE_COMMIT, BUILD_ENV

#: Which builds the nightly measures here (repository variable VKBENCH_NIGHTLY_VERSIONS).
NIGHTLY_VERSIONS = "valkey:unstable"
#: The self-hosted runner classes nightly.yml passes to benchmark.yml (it passes github-hosted too,
#: whose instruction-count cells are the `count` job's hosted matrix, not in the plan's cell count).
NIGHTLY_RUNNERS = "pi-cm4,cloud-x86,cloud-arm64"


@pytest.fixture
def valkey_tonight(tmp_path) -> tuple[str, str]:
    """(URL, full SHA of unstable) of Valkey's repository as the nightly finds it."""
    url, commits = ah.valkey_repository(tmp_path / "valkey.git", {"unstable": BASE_COMMIT})
    return url, commits["unstable"]


def run_here(cell: dict) -> bool:
    """The cells act runs: one standalone cell per version, on one class."""
    spec = json.loads(cell["cell"])
    return (cell["runner"] == "cloud-x86" and spec.get("topology", "standalone") == "standalone"
            and spec.get("io_threads", 1) == 1 and spec.get("pipeline", 1) == 16)


def planned_cells() -> list[dict]:
    out = subprocess.run([sys.executable, "-m", "vkbench", "matrix", "nightly", "--format", "github",
                          "--versions", NIGHTLY_VERSIONS, "--runners", NIGHTLY_RUNNERS],
                         check=True, capture_output=True, text=True, timeout=120).stdout
    return json.loads(out)["include"]


def test_scheduled_nightly_through_workflow_call(act_runner, pages, valkey_tonight, tmp_path):
    planned = planned_cells()
    chosen = [c for c in planned if run_here(c)]
    assert 1 <= len(chosen) < len(planned)
    valkey_url, unstable = valkey_tonight
    act_runner.env.update(BUILD_ENV, VKBENCH_VALKEY_GIT_URL=valkey_url)
    act_runner.env["HOME"] = str(ah.job_home(tmp_path, pages))
    act_runner.secrets["GITHUB_TOKEN"] = ah.FAKE_TOKEN
    act_runner.variables["VKBENCH_NIGHTLY_VERSIONS"] = NIGHTLY_VERSIONS
    act_runner.matrix = [f"id:{c['id']}" for c in chosen]
    event = {"schedule": "17 2 * * *", "repository": ah.repository_payload(), "workflow": ".github/workflows/nightly.yml",
             "sender": {"login": "github-actions[bot]"}}
    with ah.FakeGitHub(act_runner.head_sha) as api:
        act_runner.env["GITHUB_API_URL"] = api.url
        # Only the `nightly` job: nightly.yml's second job (`datatypes`, the same benchmark.yml with
        # preset nightly-datatypes) is held by test_workflow_rules.py; its catalog specs under act
        # would add minutes and test no other path through the workflows.
        result = act_runner.run("schedule", "nightly.yml", event, timeout=1500, extra=["-j", "nightly"])
    print(f"nightly.yml under act: {result.seconds:.0f}s")

    assert result.returncode == 0, result.describe()
    assert result.names() == {name: "success" for name in ("plan", "publish", "alert", "confirm candidates", "bisect new incidents",
                                                           *(c["name"] for c in chosen))}, result.describe()

    # The plan job planned the whole nightly for these versions on every class.
    summaries = "\n".join(result.summaries())
    assert f"Benchmark plan: {len(planned)} cells" in summaries
    for runner in NIGHTLY_RUNNERS.split(","):
        assert f"| `{runner}` |" in summaries

    branch = ah.pages_checkout(pages, tmp_path / "pages-check")
    index = json.loads((branch / "history" / "index.json").read_text())
    assert sum(s["points"] for s in index["series"].values()) == len(chosen) * 2, index
    runs = [json.loads(p.read_text()) for p in (branch / "history" / "runs").rglob("*.json")]
    assert runs and all(r["run"]["trigger"] == "schedule" for r in runs), [r["run"] for r in runs]
    # What ran is tonight's unstable, built from source, in a local image of that build: never a
    # release image under the name "unstable".
    for r in runs:
        subject = r["subject"]
        assert r["run"]["backend"] == "compose" and subject["version"] == "unstable", r["run"]
        assert subject["code"] == {**subject["code"], "url": valkey_url, "commit": unstable, "ref": "unstable"}, subject
        assert subject["commit"] == unstable and subject["server_version"], subject
        assert subject["build"]["source"] == "image" and f"vkbench-valkey:src-{unstable[:12]}" in subject["build"]["detail"]
        assert subject["build"]["config"]["malloc"] == "libc", subject["build"]
        # A build from source is profiled (run-cell.sh's default), so an incident found in it has
        # a profile on each side to diff; the folded stacks travel into the history with the result.
        assert r["profile"]["status"] == "recorded" and r["profile"]["symbols"]["symtab"], r.get("profile")
        assert list((branch / "history" / "runs").rglob(r["profile"]["file"])), r["profile"]["file"]
    assert (branch / "site" / "index.html").is_file()
    assert any(c["path"].startswith(f"/repos/{ah.OWNER_REPO}/issues") for c in api.calls), api.calls
    assert ah.secret_leaks(result, [ah.FAKE_TOKEN]) == []
