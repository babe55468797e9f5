"""ci.yml on a push, run by act on this host: every job.

- test: the README's test command (tools/test.sh) on the pushed commit, through its setup
  (tools/setup.sh --test: venv, binaries, site assets, Chromium, podman, actionlint, lint tools,
  act) up to pytest, which collects the whole suite (PYTEST_ADDOPTS=--collect-only: running it
  would run this test again, and the suite runs on its own in CI anyway).
- workflows: actionlint, zizmor and the workflow-rule tests, on a fresh install of vkbench.
- compose: `docker compose config` on every stack.

Stand-ins (act_harness.py): actions/setup-python (downloads Python from GitHub); `sudo`, which
GitHub's runner images have and this root-run host may not: a script that drops sudo's options
and keeps the environment (so PYTEST_ADDOPTS reaches pytest; GitHub's sudo would reset it).
"""

from __future__ import annotations

import act_harness as ah

SUDO_STANDIN = """#!/usr/bin/env bash
# act harness: sudo as on GitHub's runner images, for a run that is root already.
while [[ $# -gt 0 && $1 == -* ]]; do shift; done
exec "$@"
"""


def push_event(sha: str) -> dict:
    return {"ref": "refs/heads/main", "before": "0" * 40, "after": sha, "repository": ah.repository_payload(),
            "pusher": {"name": "octo-tester"}, "sender": {"login": "octo-tester"},
            "head_commit": {"id": sha, "message": "the commit under test", "timestamp": "2026-11-01T02:17:00Z",
                            "author": {"name": "Test Author", "email": "author@example.invalid", "username": "author"},
                            "committer": {"name": "Test Author", "email": "author@example.invalid", "username": "author"},
                            "url": f"{ah.REPO_URL}/commit/{sha}"}}


def test_push_runs_every_ci_job(act_runner, tmp_path):
    act_runner.env["HOME"] = str(ah.job_home(tmp_path, None))
    bin_dir = tmp_path / "standin-bin"
    bin_dir.mkdir()
    (bin_dir / "sudo").write_text(SUDO_STANDIN)
    (bin_dir / "sudo").chmod(0o755)
    act_runner.env["PATH"] = f"{bin_dir}:{act_runner.env['PATH']}"
    act_runner.env["PYTEST_ADDOPTS"] = "--collect-only -q"
    act_runner.secrets["GITHUB_TOKEN"] = ah.FAKE_TOKEN
    result = act_runner.run("push", "ci.yml", push_event(act_runner.head_sha), timeout=1200, concurrent_jobs=3)
    print(f"ci.yml under act: {result.seconds:.0f}s")

    assert result.returncode == 0, result.describe()
    assert result.names() == {"tests (tools/test.sh)": "success", "workflow lint (actionlint, zizmor, rules)": "success",
                           "docker compose config": "success"}, result.describe()
    # The test job got as far as its test step, and the step itself succeeded.
    test_steps = result.step_results("tests (tools/test.sh)")
    assert test_steps.get("tools/test.sh") == "success", test_steps
    assert ah.secret_leaks(result, [ah.FAKE_TOKEN]) == []
