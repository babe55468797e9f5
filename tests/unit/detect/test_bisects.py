"""Automatic bisect: which incidents alert's new issues get a bisect.yml run (and its dispatch
body), and the bisect's result recorded in history/bisects.json, attached to the incident in
detect.json and shown in its issue body and the job summary."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from factory import make_result, write_result

from vkbench.alerts.issues import issue_body
from vkbench.alerts.summary import render_summary
from vkbench.bisect import BisectReport, Step
from vkbench.detect import bisects, run_detection
from vkbench.errors import ResultFileError
from vkbench.history.ingest import ingest
from vkbench.history import HistoryStore
from vkbench.history.detect_file import check_detection
from cli_outcome import vk  # tests/cli_outcome.py

TRUSTED = "https://github.com/valkey-io/valkey"
FORK = "https://github.com/someone/valkey"
CLASSES = {"cloud-x86", "cloud-arm64", "pi-cm4"}


def commit_of(night: int) -> str:
    return f"{night:06x}" + "ab" * 17


# -- choosing ---------------------------------------------------------------------------------------

def _ref(n: int, repository: str | None = TRUSTED, commit: str | None = None) -> dict:
    ref = {"run_id": f"night-{n}", "timestamp": f"2026-10-{n + 1:02d}T02:00:00Z", "version": "unstable",
           "commit": commit if commit is not None else commit_of(n)}
    if repository:
        ref["repository"] = repository
    return ref


def _incident(iid: str, **changes) -> dict:
    incident = {"id": iid, "title": f"SET, cloud-x86: -10% ({iid})", "status": "open", "direction": "regression",
                "metric": "rps", "magnitude": -0.1, "series_ids": ["s-io1", "s-io4"], "machine_class": "cloud-x86",
                "silenced": False, "good": _ref(8), "bad": _ref(9)}
    incident.update(changes)
    return incident


def _cp(iid: str, sid: str, magnitude: float, metric: str = "rps") -> dict:
    return {"series_id": sid, "metric": metric, "magnitude": magnitude, "incident_id": iid}


def _dims(io_threads: int, **more) -> dict:
    return {"engine": "valkey", "version": "unstable", "topology": "standalone", "io_threads": io_threads,
            "tool": "valkey-benchmark", "tests": ["set", "get"], "pipeline": 16, "clients": 50, "data_size": 3,
            "keyspace": 100000, "requests": 100000, "command": "SET", "machine_class": "cloud-x86", **more}


SERIES = {"s-io1": {"dims": _dims(1)}, "s-io4": {"dims": _dims(4)},
          "s-odd": {"dims": _dims(2, extra_server_args=["--save", "x;id"])}}


def _choose(incidents, change_points, actions, **kwargs):
    return bisects.bisect_requests({"incidents": incidents, "change_points": change_points}, actions,
                                   trusted_repository=TRUSTED, runner_classes=CLASSES, series_index=SERIES, **kwargs)


def test_a_new_issue_between_two_trusted_commits_is_bisected_on_its_worst_series():
    incident = _incident("0123456789ab")
    # io4 moved most (-14 %): its cell is the one every step measures; a p50 change does not count.
    cps = [_cp("0123456789ab", "s-io1", -0.08), _cp("0123456789ab", "s-io4", -0.14), _cp("0123456789ab", "s-io1", 0.5, "p50")]
    (request,), skipped = _choose([incident], cps, [{"kind": "create", "incident_id": "0123456789ab", "issue": 17}])
    assert skipped == []
    assert request["series_id"] == "s-io4" and request["cell"]["io_threads"] == 4
    body = bisects.dispatch_body(request, "main")
    assert body == {"ref": "main", "inputs": {
        "repository": TRUSTED, "good": commit_of(8), "bad": commit_of(9), "runner_class": "cloud-x86",
        "incident_issue": "17", "incident": "0123456789ab",
        "cell": json.dumps(request["cell"], separators=(",", ":"))}}
    cell = json.loads(body["inputs"]["cell"])
    assert cell["server"] == "valkey:unstable" and cell["repetitions"] == 1 and cell["tests"] == ["set", "get"]


@pytest.mark.parametrize("change,action,reason", [
    ({}, {"kind": "update"}, None),                                          # the issue existed already
    ({}, {"issue": None}, None),                                             # dry run: no issue opened
    ({"good": _ref(8, FORK), "bad": _ref(9, FORK)}, {}, "not source builds of"),
    ({"good": _ref(8, None), "bad": _ref(9, None)}, {}, "not source builds of"),    # releases
    ({"good": _ref(8), "bad": _ref(9, FORK)}, {}, "not source builds of"),
    ({"bad": _ref(9, commit=commit_of(8))}, {}, "same commit"),
    ({"bad": _ref(9, commit=commit_of(9)[:12])}, {}, "no full commit"),
    ({"good": _ref(8, commit="$(id)" + "a" * 35)}, {}, "no full commit"),
    ({"direction": "improvement"}, {}, "not an open regression"),
    ({"status": "closed"}, {}, "not an open regression"),
    ({"silenced": True}, {}, "not an open regression"),
    ({"machine_class": "local"}, {}, "not a runner class"),
    ({"series_ids": ["s-odd"]}, {}, "not a valid bisect.yml input"),
    ({"series_ids": ["s-gone"]}, {}, "not in the history index"),
])
def test_what_is_not_bisected(change, action, reason):
    incident = _incident("0123456789ab", **change)
    requests, skipped = _choose([incident], [], [{"kind": "create", "incident_id": "0123456789ab", "issue": 5, **action}])
    assert requests == []
    if reason is None:
        assert skipped == []
    else:
        (line,) = skipped
        assert line.startswith("0123456789ab: ") and reason in line


def test_already_bisected_and_unknown_incidents_are_skipped_once():
    incident = _incident("0123456789ab")
    actions = [{"kind": "create", "incident_id": "0123456789ab", "issue": 5},
               {"kind": "create", "incident_id": "0123456789ab", "issue": 5},
               {"kind": "create", "incident_id": "ffffffffffff", "issue": 6}]
    requests, skipped = _choose([incident], [], actions, recorded={"0123456789ab": {}})
    assert requests == [] and skipped == ["0123456789ab: already bisected", "ffffffffffff: not in detect.json"]


def test_a_confirmed_incident_takes_the_worst_series_of_its_request():
    """An incident a confirmation A/B opened has no change points yet: its request names the series."""
    incident = _incident("inc-0123456789ab")
    confirmations = {"confirm-0123456789ab": {"request": {"series": [
        {"series_id": "s-io1", "metric": "rps", "magnitude": -0.12}, {"series_id": "s-io4", "metric": "rps", "magnitude": -0.05}]}}}
    (request,), _ = _choose([incident], [], [{"kind": "create", "incident_id": "inc-0123456789ab", "issue": 3}],
                            confirmations=confirmations)
    assert request["series_id"] == "s-io1" and bisects.dispatch_body(request, "main")["inputs"]["incident"] == "inc-0123456789ab"


def test_alert_actions_are_checked(tmp_path):
    good = tmp_path / "actions.json"
    good.write_text(json.dumps([{"kind": "create", "incident_id": "x", "issue": 3, "title": "t", "reason": ""}]))
    assert bisects.read_actions(good)[0]["issue"] == 3
    for text in ("{not json", '{"kind": "create"}', '[{"kind": "create", "incident_id": "x", "issue": "3"}]'):
        good.write_text(text)
        with pytest.raises(ResultFileError, match="actions.json"):
            bisects.read_actions(good)


# -- recording --------------------------------------------------------------------------------------

@pytest.fixture
def regression_history(tmp_path):
    """14 nights of a source build of the trusted repository, -10 % from night 8: an open incident."""
    rng = np.random.default_rng(5)
    out = tmp_path / "res"
    for night in range(14):
        level = 0.9 if night >= 8 else 1.0
        result = make_result(run_id=f"night-{night:03d}", cell_id="io1", rps={"SET": 400_000 * level * (1 + rng.normal(0, 0.005))},
                             io_threads=1, spread=0.003, timestamp=f"2026-10-{night + 1:02d}T02:00:00Z",
                             commit=commit_of(night))
        result["subject"]["code"] = {"url": TRUSTED, "commit": commit_of(night), "ref": "unstable"}
        write_result(out / f"{night:03d}", result)
    history = tmp_path / "h"
    ingest(HistoryStore(history), [out])
    doc = run_detection(history)
    (incident,) = [i for i in doc["incidents"] if i["direction"] == "regression"]
    assert (incident["good"]["commit"], incident["bad"]["commit"]) == (commit_of(7), commit_of(8))
    return history, incident


def _report(tmp_path: Path, incident: dict, *, culprit: str | None = None, url: str = TRUSTED, reproduced: bool = True,
            name: str = "bisect.json") -> Path:
    good, bad = incident["good"]["commit"], incident["bad"]["commit"]
    culprit = culprit or bad
    steps = [Step(bad, "the bad end", -0.1, -0.12, -0.08, 0.02, 6, "reproduced" if reproduced else "not reproduced", 40.0)]
    report = BisectReport(url, good, bad, "standalone io1 P16 c50 d3 / SET", 1, culprit if reproduced else None,
                          "server: an extra loop in call()" if reproduced else None, -0.1 if reproduced else None,
                          (-0.12, -0.08) if reproduced else (None, None), steps, 41.0, reproduced)
    path = tmp_path / name
    path.write_text(json.dumps(report.to_json()))
    return path


def test_a_recorded_bisect_names_the_culprit_in_detection_the_issue_and_the_summary(regression_history, tmp_path):
    history, incident = regression_history
    culprit = incident["bad"]["commit"]
    code, out = vk("bisect-record", "--history", history, "--incident", incident["id"], "--bisect", _report(tmp_path, incident),
                   "--run-url", "https://github.com/o/vkbench/actions/runs/9")
    assert code == 0, out
    assert f"culprit `{culprit[:12]}` server: an extra loop in call(): -10.0%" in out
    entry = json.loads((history / "bisects.json").read_text())["bisects"][incident["id"]]
    assert entry["culprit"] == culprit and entry["ci_low"] == -0.12 and entry["steps"][0]["judged"] == "reproduced"
    assert not list(history.glob(".bisects.json.*")), "written beside, then renamed"

    # detect.json (written by bisect-record, and again by any later detection) carries it.
    doc = json.loads((history / "detect.json").read_text())
    check_detection(doc, history / "detect.json", for_alerts=True)
    (found,) = [i for i in doc["incidents"] if i["id"] == incident["id"]]
    assert found["bisect"] == {"culprit": culprit, "culprit_subject": "server: an extra loop in call()", "effect": -0.1,
                               "ci_low": -0.12, "ci_high": -0.08, "measure": "standalone io1 P16 c50 d3 / SET",
                               "reproduced": True, "resolved": True, "steps": 1, "range_size": 1, "repository": TRUSTED,
                               "workflow_run_url": "https://github.com/o/vkbench/actions/runs/9"}
    assert run_detection(history, write=False)["incidents"][0]["bisect"]["culprit"] == culprit

    body = issue_body(found, [], repo=None)
    assert f"[`{culprit[:10]}`](https://github.com/valkey-io/valkey/commit/{culprit})" in body
    assert "server: an extra loop in call()" in body and "-10.0% on standalone io1 P16 c50 d3 / SET" in body
    assert "(95% interval -12.0% .. -8.0%)" in body and "[bisect](https://github.com/o/vkbench/actions/runs/9) (1 A/B step)" in body
    assert f"/commit/{culprit}" in render_summary(doc)


def test_a_bisect_that_did_not_reproduce_says_so(regression_history, tmp_path):
    history, incident = regression_history
    code, out = vk("bisect-record", "--history", history, "--incident", incident["id"],
                   "--bisect", _report(tmp_path, incident, reproduced=False))
    assert code == 0 and "did not reproduce" in out
    (found,) = [i for i in run_detection(history, write=False)["incidents"] if i["id"] == incident["id"]]
    assert found["bisect"]["culprit"] is None and "no culprit named" in issue_body(found, [], repo=None)


def test_a_bisect_stopped_by_its_step_limit_names_no_culprit(regression_history, tmp_path):
    """A reproduced regression whose search the step limit ended: recorded without a culprit,
    and the issue says why (not "did not reproduce")."""
    history, incident = regression_history
    path = _report(tmp_path, incident)
    data = json.loads(path.read_text())
    bad = incident["bad"]["commit"]
    unresolved = {**data, "culprit": None, "culprit_subject": None, "effect": None, "effect_ci": [None, None],
                  "resolved": False, "suspects": {"first": bad, "last": bad, "count": 2}}
    path.write_text(json.dumps({**unresolved, "culprit": bad}))      # an unresolved bisect names no culprit
    code, out = vk("bisect-record", "--history", history, "--incident", incident["id"], "--bisect", path)
    assert code == 7 and "unresolved" in out, out
    path.write_text(json.dumps(unresolved))
    code, out = vk("bisect-record", "--history", history, "--incident", incident["id"], "--bisect", path)
    assert code == 0 and "step limit" in out, out
    (found,) = [i for i in run_detection(history, write=False)["incidents"] if i["id"] == incident["id"]]
    assert found["bisect"]["culprit"] is None and found["bisect"]["resolved"] is False
    body = issue_body(found, [], repo=None)
    assert "step limit stopped the search" in body and "did not reproduce" not in body


def test_a_bisect_of_another_range_or_repository_or_incident_is_refused(regression_history, tmp_path):
    history, incident = regression_history
    other = dict(incident, good={**incident["good"], "commit": commit_of(3)})
    for args in (("--incident", incident["id"], "--bisect", _report(tmp_path, other, name="range.json")),
                 ("--incident", incident["id"], "--bisect", _report(tmp_path, incident, url=FORK, name="fork.json")),
                 ("--incident", "ffffffffffff", "--bisect", _report(tmp_path, incident))):
        code, out = vk("bisect-record", "--history", history, *args)
        assert code == 2, out
    assert not (history / "bisects.json").exists()


@pytest.mark.parametrize("content,problem", [
    ("{not json", "corrupt JSON"),
    (json.dumps({"format": 2, "bisects": {}}), "newer"),
    (json.dumps({"bisects": {}}), "not a bisects file"),
    (json.dumps({"format": 1, "bisects": {"../x": {}}}), "not an incident id"),
    (json.dumps({"format": 1, "bisects": {"0123456789ab": {"incident_id": "0123456789ab", "culprit": "zz"}}}), "bisects/"),
])
def test_a_corrupt_bisects_file_is_exit_7_naming_it(regression_history, tmp_path, content, problem):
    history, incident = regression_history
    (history / "bisects.json").write_text(content)
    with pytest.raises(ResultFileError, match=problem) as err:
        bisects.load(HistoryStore(history))
    assert "bisects.json" in str(err.value)
    for args in (("detect", "--history", history),
                 ("bisect-record", "--history", history, "--incident", incident["id"], "--bisect", _report(tmp_path, incident))):
        code, out = vk(*args)
        assert code == 7 and f"{history / 'bisects.json'}" in out, out
    assert (history / "bisects.json").read_text() == content           # never overwritten


def test_a_corrupt_bisect_report_is_exit_7_naming_it(regression_history, tmp_path):
    history, incident = regression_history
    path = _report(tmp_path, incident)
    data = json.loads(path.read_text())
    for broken in ("[1, 2", json.dumps({**data, "culprit": "not-a-sha"}), json.dumps({**data, "steps": []}),
                   json.dumps({**data, "effect_ci": [None]}), json.dumps({**data, "effect": float("nan")})):
        path.write_text(broken)
        code, out = vk("bisect-record", "--history", history, "--incident", incident["id"], "--bisect", path)
        assert code == 7 and str(path) in out, out


def test_detect_json_with_a_malformed_bisect_is_refused(regression_history):
    history, incident = regression_history
    doc = json.loads((history / "detect.json").read_text())
    doc["incidents"][0]["bisect"] = {"culprit": "javascript:alert(1)", "reproduced": True, "steps": 1}
    with pytest.raises(ResultFileError, match="incidents/0/bisect"):
        check_detection(doc, history / "detect.json")


def test_bisect_requests_cli_writes_the_dispatch_bodies(regression_history, tmp_path):
    history, incident = regression_history
    actions = tmp_path / "actions.json"
    actions.write_text(json.dumps([{"kind": "create", "incident_id": incident["id"], "issue": 12, "title": "t", "reason": ""}]))
    out_dir = tmp_path / "dispatch"
    code, out = vk("bisect-requests", "--history", history, "--actions", actions, "--repository", TRUSTED,
                   "--runner-class", "cloud-x86", "--ref", "main", "--out", out_dir)
    assert code == 0, out
    (body,) = [json.loads(p.read_text()) for p in sorted(out_dir.glob("*.json"))]
    assert body["ref"] == "main" and body["inputs"]["incident"] == incident["id"] and body["inputs"]["incident_issue"] == "12"
    assert (body["inputs"]["good"], body["inputs"]["bad"]) == (commit_of(7), commit_of(8))
    assert json.loads(body["inputs"]["cell"])["io_threads"] == 1
    # Another trusted repository, or no runner of that class: nothing to dispatch.
    for args in (("--repository", FORK, "--runner-class", "cloud-x86"), ("--repository", TRUSTED, "--runner-class", "pi-cm4")):
        other = tmp_path / f"d-{len(list(tmp_path.iterdir()))}"
        code, out = vk("bisect-requests", "--history", history, "--actions", actions, *args, "--out", other)
        assert code == 0 and "not bisected" in out and not list(other.glob("*.json")), out
