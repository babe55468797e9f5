"""Alerts against a fake GitHub on 127.0.0.1: create, update, close; the token never shows."""

from __future__ import annotations

import copy
import json

import pytest
from click.testing import CliRunner
from github_api_standin import FakeGitHub  # tests/workflows/github_api_standin.py: the one GitHub stand-in

TOKEN = "ghs_FAKE_SECRET_token_0123456789"

from vkbench.alerts.github import GitHubClient
from vkbench.alerts.issues import LABEL, marker, sync_issues
from vkbench.alerts.summary import render_summary
from vkbench.cli.alert import alert_cmd
from vkbench.errors import AlertError, RegressionFound

GOOD = {"run_id": "night-039", "version": "unstable", "commit": "a1b2c3d4e5f6" + "0" * 28, "timestamp": "2026-11-20T02:00:00Z",
        "workflow_run_url": "https://github.com/o/r/actions/runs/39"}
BAD = {"run_id": "night-040", "version": "unstable", "commit": "d4e5f6a7b8c9" + "0" * 28, "timestamp": "2026-11-21T02:00:00Z",
       "workflow_run_url": "https://github.com/o/r/actions/runs/40"}


def detection(status="open", silenced=False, magnitude=-0.08, iid="0123456789ab") -> dict:
    cp = {"series_id": "s1", "series_name": "SET standalone io2 P16 c50 d3 valkey:unstable [cloud-x86]", "metric": "rps",
          "index": 40, "run_id": "night-040", "timestamp": BAD["timestamp"], "direction": "regression",
          "magnitude": magnitude, "p_value": 0.0001, "level_before": 400000.0, "level_after": 368000.0,
          "good": GOOD, "bad": BAD, "runs": {"before": ["night-039"], "after": ["night-040"]}, "incident_id": iid}
    incident = {"id": iid, "title": f"SET, pipeline 16, io-threads 2, cloud-x86: {magnitude:+.0%} between a1b2c3d and d4e5f6a",
                "status": status, "resolution": "recovered" if status == "closed" else None, "silenced": silenced,
                "direction": "regression", "metric": "rps", "metrics": ["rps"], "magnitude": magnitude, "p_value": 0.0001,
                "series_ids": ["s1"], "change_points": 1, "machine_class": "cloud-x86", "engine": "valkey", "good": GOOD, "bad": BAD,
                "annotation": {"action": "silence", "reason": "expected: new default"} if silenced else None}
    return {"generated": "2026-11-21T03:00:00Z", "series": 12, "runs": 41, "change_points": [cp], "incidents": [incident]}


def client(fake: FakeGitHub, token: str | None = TOKEN) -> GitHubClient:
    return GitHubClient("o/r", token, api_url=fake.url)


LIST = ("GET", "/repos/o/r/issues?labels=vkbench-regression&state=all&per_page=100&page=1", None)


def test_create_then_unchanged_then_update_then_close():
    with FakeGitHub(owner_repo="o/r", token=TOKEN) as fake:
        actions = sync_issues(detection(), client(fake))
        assert [a.kind for a in actions] == ["create"]
        assert fake.sent()[0] == LIST
        method, path, body = fake.sent()[1]
        assert (method, path) == ("POST", "/repos/o/r/issues")
        assert body["labels"] == [LABEL]
        assert body["title"] == "Performance regression: SET, pipeline 16, io-threads 2, cloud-x86: -8% between a1b2c3d and d4e5f6a"
        assert body["body"].startswith(marker("0123456789ab"))
        # compare links go to the server's repository (the commits are Valkey's), issues to o/r
        assert f"https://github.com/valkey-io/valkey/compare/{GOOD['commit']}...{BAD['commit']}" in body["body"]
        assert "https://github.com/o/r/actions/runs/40" in body["body"]
        assert len(fake.calls) == 2

        # the next night, same incident: no duplicate, no write
        fake.calls.clear()
        assert [a.kind for a in sync_issues(detection(), client(fake))] == ["unchanged"]
        assert fake.sent() == [LIST]

        # it got worse: the body is edited in place
        fake.calls.clear()
        assert [a.kind for a in sync_issues(detection(magnitude=-0.12), client(fake))] == ["update"]
        assert [(m, p) for m, p, _ in fake.sent()] == [LIST[:2], ("PATCH", "/repos/o/r/issues/1")]
        assert "-12.0%" in fake.sent()[1][2]["body"] and len(fake.issues) == 1

        # recovered: comment, then close
        fake.calls.clear()
        assert [a.kind for a in sync_issues(detection(status="closed"), client(fake))] == ["close"]
        assert fake.sent()[1][:2] == ("POST", "/repos/o/r/issues/1/comments")
        assert fake.sent()[1][2]["body"].startswith("Recovered")
        assert fake.sent()[2] == ("PATCH", "/repos/o/r/issues/1", {"state": "closed", "state_reason": "completed"})
        assert fake.issues[1]["state"] == "closed"

        # closed stays closed, and nothing new is opened for it
        fake.calls.clear()
        assert sync_issues(detection(status="closed"), client(fake)) == []
        assert fake.sent() == [LIST]


def test_silenced_incident_closes_its_issue_as_not_planned():
    with FakeGitHub(owner_repo="o/r", token=TOKEN) as fake:
        fake.add_issue("Performance regression: x", marker("0123456789ab") + "\nbody")
        actions = sync_issues(detection(silenced=True), client(fake))
        assert [a.kind for a in actions] == ["close"]
        assert "expected: new default" in fake.comments[1][0]
        assert fake.issues[1]["state_reason"] == "not_planned"


def test_a_same_build_incident_opens_no_issue_and_closes_one_with_its_reason():
    from vkbench.detect.incidents import SAME_BUILD_REASON

    doc = detection(silenced=True)
    doc["incidents"][0].update(same_build=True, annotation={"action": "silence", "reason": SAME_BUILD_REASON,
                                                            "automatic": "same-build"})
    with FakeGitHub(owner_repo="o/r", token=TOKEN) as fake:
        assert sync_issues(doc, client(fake)) == [] and fake.sent() == [LIST]
        fake.add_issue("Performance regression: x", marker("0123456789ab") + "\nbody")
        assert [a.kind for a in sync_issues(doc, client(fake))] == ["close"]
        assert fake.comments[1][0].startswith("Not a code change: the same server build ran before and after")
        assert fake.issues[1]["state_reason"] == "not_planned"


def test_an_issue_closed_by_a_person_is_not_reopened_or_duplicated():
    with FakeGitHub(owner_repo="o/r", token=TOKEN) as fake:
        fake.add_issue("Performance regression: x", marker("0123456789ab"), state="closed")
        assert [a.kind for a in sync_issues(detection(), client(fake))] == ["left-closed"]
        assert fake.sent() == [LIST] and len(fake.issues) == 1


def test_incident_no_longer_detected_is_closed():
    with FakeGitHub(owner_repo="o/r", token=TOKEN) as fake:
        fake.add_issue("Performance regression: old", marker("fedcba987654") + "\nold")
        doc = detection()
        sync_issues(doc, client(fake))
        assert fake.issues[1]["state"] == "closed" and "no longer reports" in fake.comments[1][0]
        assert fake.issues[2]["state"] == "open"


def test_token_is_redacted_from_errors():
    with FakeGitHub(owner_repo="o/r", token=TOKEN, leak_auth_in_errors=True) as fake:
        fake.fail_next = 401
        with pytest.raises(AlertError) as exc:
            sync_issues(detection(), client(fake))
        text = str(exc.value)
        assert "HTTP 401" in text and TOKEN not in text and "***" in text
        assert TOKEN not in repr(client(fake))


def test_cli_creates_issue_and_fails_on_regression_without_printing_the_token(tmp_path):
    (tmp_path / "h").mkdir()
    (tmp_path / "h" / "detect.json").write_text(json.dumps(detection()))
    with FakeGitHub(owner_repo="o/r", token=TOKEN) as fake:
        runner = CliRunner()
        result = runner.invoke(alert_cmd, ["--repo", "o/r", "--history", str(tmp_path / "h"), "--api-url", fake.url,
                                           "--token-env", "VKB_TEST_TOKEN", "--fail-on", "regression"],
                               env={"VKB_TEST_TOKEN": TOKEN})
        assert isinstance(result.exception, RegressionFound) and result.exception.exit_code == 10
        assert "create" in result.output and "(new)" not in result.output.split("create")[0]
        assert TOKEN not in result.output and TOKEN not in str(result.exception)
        assert [c[0] for c in fake.sent()] == ["GET", "POST"]

        fake.calls.clear()
        again = runner.invoke(alert_cmd, ["--repo", "o/r", "--history", str(tmp_path / "h"), "--api-url", fake.url,
                                          "--token-env", "VKB_TEST_TOKEN"], env={"VKB_TEST_TOKEN": TOKEN})
        assert again.exit_code == 0 and "unchanged" in again.output
        assert len(fake.issues) == 1


def test_cli_needs_a_token_unless_dry_run(tmp_path):
    (tmp_path / "h").mkdir()
    (tmp_path / "h" / "detect.json").write_text(json.dumps(detection()))
    runner = CliRunner()
    missing = runner.invoke(alert_cmd, ["--repo", "o/r", "--history", str(tmp_path / "h"), "--token-env", "VKB_NO_SUCH_VAR"])
    assert isinstance(missing.exception, AlertError) and "VKB_NO_SUCH_VAR" in str(missing.exception)
    dry = runner.invoke(alert_cmd, ["--repo", "o/r", "--history", str(tmp_path / "h"), "--token-env", "VKB_NO_SUCH_VAR",
                                    "--api-url", "http://127.0.0.1:9", "--dry-run"])
    assert dry.exit_code == 0, dry.output
    assert dry.output.startswith("[dry-run] create")


def test_summary_all_quiet_and_with_links():
    quiet = render_summary({"series": 12, "runs": 40, "change_points": [], "incidents": []})
    assert "All quiet: 12 series, 40 runs, no significant change." in quiet
    text = render_summary(detection(), repo="o/r")
    assert "1 open regression(s) among 1 incident(s); 12 series, 41 runs." in text
    assert "### 🔴 SET, pipeline 16, io-threads 2, cloud-x86: -8% between a1b2c3d and d4e5f6a" in text
    assert f"(https://github.com/o/r/compare/{GOOD['commit']}...{BAD['commit']})" in text
    assert "[`night-040`](https://github.com/o/r/actions/runs/40)" in text
    assert "| SET standalone io2 P16 c50 d3 valkey:unstable \\[cloud-x86\\] | rps | -8.0% | 0.0001 | 400,000 → 368,000 | 1 / 1 |" in text
    default = render_summary(copy.deepcopy(detection()))
    assert f"https://github.com/valkey-io/valkey/compare/{GOOD['commit']}...{BAD['commit']}" in default
    unknown = detection()
    unknown["incidents"][0]["engine"] = "other"
    assert "/compare/" not in render_summary(unknown)
