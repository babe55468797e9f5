"""A regression confirmed the same night by an A/B is one incident from that night on: when the
persistence rule reports the same change nights later, the incident keeps its id, so `vkbench
alert` keeps updating the one issue instead of closing it as noise and opening another."""

from __future__ import annotations

import json

import numpy as np
from factory import make_result, write_result
from github_api_standin import FakeGitHub  # tests/workflows/github_api_standin.py: the one GitHub stand-in

TOKEN = "ghs_FAKE_SECRET_token_0123456789"

from vkbench.alerts.github import GitHubClient
from vkbench.alerts.issues import incident_of, sync_issues
from vkbench.detect import confirmations, run_detection
from vkbench.history.ingest import ingest
from vkbench.history import HistoryStore

REPO = "https://github.com/valkey-io/valkey"
DROP_AT = 24


def commit_of(night: int) -> str:
    return f"{night:06x}" + "cd" * 17


class SourceNights:
    """A source-built ``unstable`` series, one night at a time, 10 % slower from ``DROP_AT`` on."""

    def __init__(self, tmp_path):
        self.tmp, self.store, self.night = tmp_path, HistoryStore(tmp_path / "history"), 0
        self.rng = np.random.default_rng(3)

    def add(self, nights: int) -> None:
        out = self.tmp / f"results-{self.night}"
        for night in range(self.night, self.night + nights):
            level = 0.9 if night >= DROP_AT else 1.0
            for cell, io_threads in (("io1", 1), ("io2", 2)):
                result = make_result(run_id=f"night-{night:03d}", cell_id=cell, io_threads=io_threads, spread=0.005,
                                     rps={"SET": 400_000 * io_threads * level * (1 + self.rng.normal(0, 0.01))},
                                     timestamp=f"2026-10-{night + 1:02d}T02:00:00Z", commit=commit_of(night))
                result["subject"]["code"] = {"url": REPO, "commit": commit_of(night), "ref": "unstable"}
                write_result(out / f"{night:03d}", result)
        self.night += nights
        ingest(self.store, [out])


def _confirm(nights: SourceNights, request: dict) -> None:
    report = {"base": {"commit": request["good"]["commit"]}, "candidate": {"commit": request["bad"]["commit"]},
              "rows": [{"cell": "standalone io1", "command": "SET", "change": -0.1, "ci_low": -0.12, "ci_high": -0.08,
                        "mde": 0.015, "rounds": 8}]}
    confirmations.record(nights.store, request, report)


def test_a_confirmed_incident_keeps_its_id_and_issue_when_persistence_reports_it(tmp_path):
    nights = SourceNights(tmp_path)
    nights.add(DROP_AT + 1)                                      # the first slow night
    (request,) = run_detection(nights.store.path, write=False)["confirmation"]["waiting"]
    _confirm(nights, request)
    doc = run_detection(nights.store.path, write=False)
    (confirmed,) = doc["incidents"]
    assert confirmed["confirmation"]["change"] == -0.1 and not doc["change_points"]

    with FakeGitHub(owner_repo="o/r", token=TOKEN) as fake:
        client = GitHubClient("o/r", TOKEN, api_url=fake.url)
        assert [a.kind for a in sync_issues(doc, client)] == ["create"]
        assert incident_of(fake.issues[1]) == confirmed["id"]

        # More slow nights, until the persistence rule reports the change on its own.
        for _ in range(6):
            nights.add(1)
            doc = run_detection(nights.store.path, write=False)
            if doc["change_points"]:
                break
        assert doc["change_points"], "the persistence rule reports the change within 6 more nights"
        (incident,) = doc["incidents"]
        assert incident["id"] == confirmed["id"], "one change, one incident id"
        assert incident["change_points"] == len(doc["change_points"]) >= 1 and incident["confirmation"]["change"] == -0.1
        assert {cp["incident_id"] for cp in doc["change_points"]} == {confirmed["id"]}
        assert "confirmation" not in doc or doc["confirmation"]["waiting"] == []

        actions = sync_issues(doc, client)
        assert [(a.kind, a.issue) for a in actions] in ([("update", 1)], [("unchanged", 1)])
        assert len(fake.issues) == 1 and fake.issues[1]["state"] == "open"
        assert not [c for c in fake.sent() if c[0] == "POST" and c[1].endswith("/comments")], "never closed as noise"


def test_an_annotation_on_the_confirmed_id_follows_the_incident(tmp_path):
    nights = SourceNights(tmp_path)
    nights.add(DROP_AT + 1)
    (request,) = run_detection(nights.store.path, write=False)["confirmation"]["waiting"]
    _confirm(nights, request)
    iid = confirmations.incident_id_of(request["id"])
    silence = [{"incident": iid, "action": "silence", "reason": "expected: new default"}]
    (incident,) = run_detection(nights.store.path, silence, write=False)["incidents"]
    assert incident["silenced"]
    nights.add(4)
    doc = run_detection(nights.store.path, silence, write=False)
    assert doc["change_points"]
    (incident,) = doc["incidents"]
    assert incident["id"] == iid and incident["silenced"]
    json.dumps(doc)                                              # still a plain JSON document
