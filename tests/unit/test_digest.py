"""``vkbench digest`` on a synthetic history: what moved in the window, with its confirmations,
bisects and annotations, flagged and noisy series, coverage (what ran, what went missing), as
JSON, Markdown, the site's page and the weekly issue."""

from __future__ import annotations

import json
from datetime import datetime, timedelta, timezone

import numpy as np
import pytest
from click.testing import CliRunner
from factory import make_result, write_result

from vkbench import digest as digest_mod
from vkbench.cli.digest import digest_cmd
from vkbench.detect import bisects, confirmations, run_detection
from vkbench.digest import build_digest, parse_since, render_html, render_markdown, sync_issue
from vkbench.errors import UsageError
from vkbench.history import HistoryStore
from vkbench.history.ingest import ingest

#: Night n runs on 2026-10-(n+1); a -10 % step on SET and GET from night 12 (2026-10-13).
NOW = datetime(2026, 10, 16, 12, tzinfo=timezone.utc)
WEEK = timedelta(days=7)


def _commit(night: int) -> str:
    return f"{night:06x}" + "cd" * 17


@pytest.fixture(scope="module")
def history(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("digest")
    rng = np.random.default_rng(3)
    out = tmp / "res"
    for night in range(16):
        level = 0.9 if night >= 12 else 1.0
        cells = [2, 4] + ([8] if night <= 7 else [])          # io-threads 8 stops running after 2026-10-08
        for io in cells:
            rps = {cmd: 400_000 * (1 + 0.1 * k) * level * (1 + rng.normal(0, 0.005)) for k, cmd in enumerate(("SET", "GET"))}
            flagged = io == 4 and night == 14
            result = make_result(run_id=f"night-{night:03d}", cell_id=f"io{io}", rps=rps, io_threads=io, spread=0.003,
                                 timestamp=f"2026-10-{night + 1:02d}T02:00:00Z", commit=_commit(night),
                                 flags=["too-short"] if flagged else None,
                                 workflow_run_url=f"https://github.com/o/r/actions/runs/{night}")
            write_result(out / f"{night:03d}", result)
    ingest(HistoryStore(tmp / "h"), [out])
    run_detection(tmp / "h")
    return tmp / "h"


def test_parse_since():
    assert parse_since("7d") == WEEK and parse_since("36h") == timedelta(hours=36) and parse_since("2w") == 2 * WEEK
    for bad in ("7", "seven days", "0h", "99w", "-1d"):
        with pytest.raises(UsageError):
            parse_since(bad)


def test_the_week_lists_the_regression_coverage_flags_and_what_went_missing(history):
    doc = build_digest(history, since=WEEK, now=NOW)
    assert doc["kind"] == "vkbench.digest" and doc["since"] == "2026-10-09T12:00:00Z" and doc["until"] == "2026-10-16T12:00:00Z"
    (regression,) = doc["regressions"]
    assert regression["new"] and regression["magnitude"] < -0.05 and regression["series"] >= 2
    assert regression["bad"]["commit"] == _commit(12)
    assert doc["improvements"] == []
    cov = doc["coverage"]
    assert cov["runs"] == 7 and cov["cells"] == 14                   # nights 9..15, io2 and io4
    assert cov["machine_classes"]["cloud-x86"]["series"] == 4
    assert cov["series_total"] == 6 and cov["series_ran"] == 4
    assert sorted(r["name"].split()[0] for r in cov["missing"]) == ["GET", "SET"]
    assert all("io8" in r["name"] for r in cov["missing"])
    flagged = {r["name"].split()[0]: r for r in doc["flagged"]}
    assert set(flagged) == {"SET", "GET"} and all(r["flags"] == {"too-short": 1} for r in flagged.values())
    assert all("io4" in r["name"] for r in flagged.values())


def test_a_quiet_window_says_so(history):
    doc = build_digest(history, since=timedelta(days=2), now=NOW + timedelta(days=30))
    assert doc["coverage"]["runs"] == 0 and doc["regressions"][0]["new"] is False   # still open, not new
    text = render_markdown(doc)
    assert "nothing ran in the window" in text and "still open" in text


def test_confirmations_bisects_and_annotations_of_the_window(history, monkeypatch):
    doc0 = build_digest(history, since=WEEK, now=NOW)
    iid = doc0["regressions"][0]["id"]
    monkeypatch.setattr(confirmations, "load", lambda store: {"confirmations": {
        "confirm-abc": {"id": "confirm-abc", "status": "inconclusive", "recorded": "2026-10-14T03:00:00Z",
                        "ab": {"change": -0.2, "ci_low": -0.6, "ci_high": 0.1, "mde": 0.8, "rounds": 4, "command": "SET",
                               "verdict": "inconclusive: MDE 80% > target 2%"}},
        "confirm-old": {"id": "confirm-old", "status": "confirmed", "recorded": "2026-09-01T03:00:00Z", "ab": {}}}})
    monkeypatch.setattr(bisects, "load", lambda store: {"format": 1, "bisects": {
        iid: {"incident_id": iid, "recorded": "2026-10-15T05:00:00Z", "culprit": _commit(12), "culprit_subject": "Make SET slower",
              "effect": -0.1, "reproduced": True, "resolved": True, "steps": [{}, {}, {}], "repository": "https://github.com/o/r",
              "workflow_run_url": "https://github.com/o/r/actions/runs/99"}}})
    notes = [{"series": {"io_threads": 4}, "after": "2026-10-14", "action": "reset-baseline", "reason": "a <b>new</b> runner"},
             {"series": {"io_threads": 2}, "after": "2026-08-01", "action": "reset-baseline", "reason": "long ago"}]
    doc = build_digest(history, since=WEEK, now=NOW, annotations=notes)
    assert [c["id"] for c in doc["confirmations"]] == ["confirm-abc"] and doc["confirmations"][0]["mde"] == 0.8
    assert [b["incident_id"] for b in doc["bisects"]] == [iid] and doc["bisects"][0]["steps"] == 3
    assert [a["reason"] for a in doc["annotations"]] == ["a <b>new</b> runner"]
    text = render_markdown(doc, site_url="https://o.github.io/r/")
    assert text.startswith(digest_mod.DIGEST_MARKER)
    for heading in ("## Regressions", "## Improvements", "## Confirmations", "## Bisects", "## Annotations",
                    "## Flagged and noisy series", "## Coverage"):
        assert heading in text
    assert "**inconclusive**" in text and "MDE 80.0%" in text and "culprit `" + _commit(12)[:10] + "`" in text
    assert "a \\<b\\>new\\</b\\> runner" in text                       # escaped, never markup
    page = render_html(doc)
    assert "a &lt;b&gt;new&lt;/b&gt; runner" in page and "<b>new</b>" not in page
    assert "Make SET slower" in page and "assets/app/app.css" in page


class FakeClient:
    can_write = True

    def __init__(self):
        self.issues, self.calls = [], []

    def list_issues(self, label):
        self.calls.append(("list", label))
        return [dict(i) for i in self.issues]

    def create_issue(self, title, body, labels):
        self.calls.append(("create", title))
        self.issues.append({"number": 7, "title": title, "body": body, "labels": labels, "state": "open"})
        return self.issues[-1]

    def update_issue(self, number, **fields):
        self.calls.append(("update", number))
        self.issues[0].update(fields)
        return self.issues[0]


def test_the_weekly_issue_is_opened_once_then_updated(history):
    client = FakeClient()
    doc = build_digest(history, since=WEEK, now=NOW)
    assert sync_issue(doc, client) == {"action": "opened", "issue": 7, "title": "Benchmark digest: 2026-10-09 .. 2026-10-16"}
    assert sync_issue(doc, client)["action"] == "unchanged"
    doc["coverage"]["runs"] += 1
    assert sync_issue(doc, client)["action"] == "updated"
    assert [c[0] for c in client.calls] == ["list", "create", "list", "list", "update"]
    assert sync_issue(doc, FakeClient(), dry_run=True)["action"] == "opened"


def test_cli_json_and_markdown(history, tmp_path):
    out = tmp_path / "digest.json"
    done = CliRunner().invoke(digest_cmd, ["--history", str(history), "--since", "400d", "--format", "json", "--out", str(out)])
    assert done.exit_code != 0                                           # 400 days: out of range
    done = CliRunner().invoke(digest_cmd, ["--history", str(history), "--since", "52w", "--format", "json", "--out", str(out)])
    assert done.exit_code == 0, done.output
    doc = json.loads(out.read_text())
    assert doc["kind"] == "vkbench.digest" and doc["coverage"]["runs"] >= 0
    done = CliRunner().invoke(digest_cmd, ["--history", str(history)])
    assert done.exit_code == 0 and "# Benchmark digest" in done.output


def test_the_site_has_the_digest_page(history, tmp_path):
    from vkbench.site.build import build_site

    build_site(history, tmp_path / "site")
    page = (tmp_path / "site" / "digest.html").read_text()
    doc = json.loads((tmp_path / "site" / "data" / "digest.json").read_text())
    assert "What moved" in page and doc["kind"] == "vkbench.digest"
    assert doc["until"] <= HistoryStore(history).index()["updated"]      # the week before the last update
    assert 'href="digest.html"' in (tmp_path / "site" / "index.html").read_text()
