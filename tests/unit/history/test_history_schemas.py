"""The JSON Schemas of the files the history keeps (vkbench/schema/*-v1.schema.json, checked by
vkbench.history.schemas): each is a valid Draft 2020-12 schema, the files the code writes pass
them, and a damaged file is a ResultFileError naming the file and the field's JSON path."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from factory import make_result, write_result
from jsonschema import Draft202012Validator

from vkbench.ab import ABReport, Row, Side
from vkbench.bisect import BisectReport, Step
from vkbench.detect import bisects, confirmations, run_detection
from vkbench.errors import ResultFileError
from vkbench.history import HistoryStore
from vkbench.history import schemas
from vkbench.history.ingest import ingest

TRUSTED = "https://github.com/valkey-io/valkey"
SCHEMA_DIR = Path(schemas.__file__).resolve().parents[1] / "schema"


def commit_of(night: int) -> str:
    return f"{night:06x}" + "ab" * 17


def _history(root: Path, nights: int, drop_from: int) -> Path:
    """Source builds of the trusted repository, -10 % from night ``drop_from``."""
    rng = np.random.default_rng(5)
    out = root / "res"
    for night in range(nights):
        level = 0.9 if night >= drop_from else 1.0
        result = make_result(run_id=f"night-{night:03d}", cell_id="io1", rps={"SET": 400_000 * level * (1 + rng.normal(0, 0.005))},
                             io_threads=1, spread=0.003, timestamp=f"2026-10-{night + 1:02d}T02:00:00Z",
                             commit=commit_of(night))
        result["subject"]["code"] = {"url": TRUSTED, "commit": commit_of(night), "ref": "unstable"}
        result["subject"]["build"] = {"source": "source-build", "id": "sha256:x", "config": {"id": "cfg1", "malloc": "libc"}}
        write_result(out / f"{night:03d}", result)
    ingest(HistoryStore(root / "h"), [out])
    return root / "h"


@pytest.fixture(scope="module")
def written(tmp_path_factory) -> dict[str, Path]:
    """detect.json (with a recorded bisect), bisects.json, confirmations.json and ab.json, each
    written by the code that writes them in production."""
    root = tmp_path_factory.mktemp("schemas")
    # An incident, bisected: bisects.json, and detect.json carrying the culprit.
    history = _history(root / "regression", nights=14, drop_from=8)
    (incident,) = [i for i in run_detection(history)["incidents"] if i["direction"] == "regression"]
    good, bad = incident["good"]["commit"], incident["bad"]["commit"]
    step = Step(bad, "the bad end", -0.1, -0.12, -0.08, 0.02, 6, "reproduced", 40.0)
    report = BisectReport(TRUSTED, good, bad, "standalone io1 / SET", 1, bad, "server: a loop", -0.1, (-0.12, -0.08),
                          [step], 41.0, True)
    (root / "bisect.json").write_text(json.dumps(report.to_json()))
    bisects.record(HistoryStore(history), incident, bisects.read_report(root / "bisect.json"),
                   run_url="https://github.com/o/vkbench/actions/runs/9")
    run_detection(history)
    # A candidate on the newest night, confirmed by an A/B: ab.json and confirmations.json.
    candidates = _history(root / "candidate", nights=25, drop_from=24)
    (request,) = run_detection(candidates, write=False)["confirmation"]["waiting"]
    sides = (Side("base", "unstable", request["good"]["commit"], "base"),
             Side("candidate", "pr", request["bad"]["commit"], "candidate"))
    row = Row("standalone io1", "SET", 400_000.0, 360_000.0, -0.1, -0.12, -0.08, 0.015, 8, "slower", 4)
    ab = ABReport(TRUSTED, *sides, [row], 8, 0.02, 120.0, str(root / "ab"))
    (root / "ab.json").write_text(json.dumps(ab.to_json()))
    confirmations.record(HistoryStore(candidates), request, confirmations.read_ab_report(root / "ab.json"))
    return {"detect": history / "detect.json", "bisects": history / "bisects.json",
            "confirmations": candidates / "confirmations.json", "ab": root / "ab.json"}


def test_every_schema_is_a_valid_draft_2020_12_schema():
    ids = set()
    for name in schemas.NAMES:
        doc = schemas.schema(name)
        Draft202012Validator.check_schema(doc)
        assert doc["$schema"] == "https://json-schema.org/draft/2020-12/schema" and doc["title"] and doc["description"]
        ids.add(doc["$id"])
    assert len(ids) == len(schemas.NAMES)
    on_disk = {p.name.removesuffix(".schema.json") for p in SCHEMA_DIR.glob("*.schema.json")}
    assert on_disk == {*schemas.NAMES, "result-v1"}


def test_the_schemas_say_what_the_code_says():
    """Constants the code keeps beside the schemas (writers and other checks use them)."""
    defs = schemas.schema("bisects-v1")["$defs"]
    assert tuple(defs["step"]["properties"]["judged"]["enum"]) == bisects.JUDGED
    assert defs["incident_id"]["pattern"] == bisects.INCIDENT_ID.pattern
    assert defs["sha"]["pattern"] == bisects.FULL_SHA.pattern
    status = schemas.schema("confirmations-v1")["$defs"]["entry"]["properties"]["status"]["enum"]
    assert tuple(status) == confirmations.STATUSES


def test_what_the_code_writes_passes_its_schema(written):
    detect = json.loads(written["detect"].read_text())
    assert detect["incidents"] and detect["change_points"] and detect["incidents"][0]["bisect"]["culprit"]
    for name in ("detect-v1", "detect-alerts-v1"):
        assert schemas.check(detect, name, written["detect"], "h") is detect
    assert HistoryStore(written["detect"].parent).read_detect(for_alerts=True) == detect
    for name, path in (("bisects-v1", written["bisects"]), ("confirmations-v1", written["confirmations"]),
                       ("ab-v1", written["ab"])):
        doc = json.loads(path.read_text())
        assert schemas.check(doc, name, path, "h") is doc
    assert bisects.load(HistoryStore(written["bisects"].parent))["bisects"]
    assert confirmations.load(HistoryStore(written["confirmations"].parent))["confirmations"]
    actions = [{"kind": "create", "incident_id": "inc-0123456789ab", "issue": 3, "title": "t", "reason": ""},
               {"kind": "update", "incident_id": "inc-0123456789ab", "issue": None}]
    assert schemas.check(actions, "alert-actions-v1", "actions.json", "h") is actions


def _first(doc: dict, key: str) -> tuple[str, dict]:
    (entry_id, entry), *_ = doc[key].items()
    return entry_id, entry


def _set(path: list, value):
    def change(doc):
        target = doc
        for key in path[:-1]:
            target = target[key] if not callable(key) else key(target)
        if value is DROP:
            del target[path[-1]]
        else:
            target[path[-1]] = value
    return change


DROP = object()
NAN, INF = float("nan"), float("inf")


def _entry(key: str):
    return lambda doc: _first(doc, key)[1]


#: (file, change, the field path the error names; {id} is the entry's key). Read by its reader.
DAMAGED = {
    "detect-magnitude-a-string": ("detect", _set(["incidents", 0, "magnitude"], "-8%"), "incidents/0/magnitude"),
    "detect-series-ids-a-string": ("detect", _set(["incidents", 0, "series_ids"], "abc"), "incidents/0/series_ids"),
    "detect-without-status": ("detect", _set(["incidents", 0, "status"], DROP), "incidents/0/status"),
    "detect-without-series-id": ("detect", _set(["change_points", 0, "series_id"], DROP), "change_points/0/series_id"),
    "detect-level-nan": ("detect", _set(["change_points", 0, "level_before"], NAN), "change_points/0/level_before"),
    "detect-p-value-infinite": ("detect", _set(["change_points", 0, "p_value"], INF), "change_points/0/p_value"),
    "detect-direction-unknown": ("detect", _set(["incidents", 0, "direction"], "sideways"), "incidents/0/direction"),
    "detect-culprit-not-a-commit": ("detect", _set(["incidents", 0, "bisect", "culprit"], "javascript:alert(1)"),
                                    "incidents/0/bisect/culprit"),
    "detect-culprit-a-trailing-newline": ("detect", _set(["incidents", 0, "bisect", "culprit"], commit_of(8) + "\n"),
                                          "incidents/0/bisect/culprit"),
    "detect-steps-a-float": ("detect", _set(["incidents", 0, "bisect", "steps"], 1.0), "incidents/0/bisect/steps"),
    "detect-segment-start-negative": ("detect", lambda d: d.__setitem__("segments", {"s": [{"start_index": -1}]}),
                                      "segments/s/0/start_index"),
    "bisects-step-commit-short": ("bisects", _set([_entry("bisects"), "steps", 0, "commit"], "abc123"),
                                  "bisects/{id}/steps/0/commit"),
    "bisects-judged-unknown": ("bisects", _set([_entry("bisects"), "steps", 0, "judged"], "maybe"),
                               "bisects/{id}/steps/0/judged"),
    "bisects-effect-infinite": ("bisects", _set([_entry("bisects"), "effect"], INF), "bisects/{id}/effect"),
    "bisects-without-good": ("bisects", _set([_entry("bisects"), "good"], DROP), "bisects/{id}/good"),
    "bisects-reproduced-a-string": ("bisects", _set([_entry("bisects"), "reproduced"], "yes"), "bisects/{id}/reproduced"),
    "bisects-no-steps": ("bisects", _set([_entry("bisects"), "steps"], []), "bisects/{id}/steps"),
    "bisects-format-a-string": ("bisects", _set(["format"], "1"), "format"),
    "confirmations-status-unknown": ("confirmations", _set([_entry("confirmations"), "status"], "maybe"),
                                     "confirmations/{id}/status"),
    "confirmations-magnitude-nan": ("confirmations", _set([_entry("confirmations"), "request", "magnitude"], NAN),
                                    "confirmations/{id}/request/magnitude"),
    "confirmations-without-request": ("confirmations", _set([_entry("confirmations"), "request"], DROP),
                                      "confirmations/{id}/request"),
    "confirmations-rounds-negative": ("confirmations", _set([_entry("confirmations"), "ab", "rounds"], -1),
                                      "confirmations/{id}/ab/rounds"),
    "ab-change-nan": ("ab", _set(["rows", 0, "change"], NAN), "rows/0/change"),
    "ab-without-base": ("ab", _set(["base"], DROP), "base"),
    "ab-candidate-commit-a-number": ("ab", _set(["candidate", "commit"], 7), "candidate/commit"),
    "ab-counts-an-object": ("ab", _set(["counts"], {}), "counts"),
    "ab-rounds-a-bool": ("ab", _set(["rows", 0, "rounds"], True), "rows/0/rounds"),
}


def _read(kind: str, path: Path):
    if kind == "detect":
        return HistoryStore(path.parent).read_detect(for_alerts=True)
    if kind == "bisects":
        return bisects.load(HistoryStore(path.parent))
    if kind == "confirmations":
        return confirmations.load(HistoryStore(path.parent))
    return confirmations.read_ab_report(path)


@pytest.mark.parametrize("case", list(DAMAGED))
def test_a_damaged_file_is_refused_naming_the_file_and_the_field(written, case):
    kind, change, where = DAMAGED[case]
    path = written[kind]
    original = path.read_text()
    doc = json.loads(original)
    key = kind if kind in ("bisects", "confirmations") else None
    where = where.format(id=_first(doc, key)[0] if key else "")
    change(doc)
    try:
        path.write_text(json.dumps(doc))          # NaN and Infinity as Python's json writes them
        with pytest.raises(ResultFileError) as err:
            _read(kind, path)
    finally:
        path.write_text(original)
    message = str(err.value)
    assert message.startswith(f"{path}: {where}"), message
    assert err.value.hint and err.value.exit_code == 7
    _read(kind, path)                              # the undamaged file reads again


def test_the_site_reads_a_plain_note_that_alert_refuses(written):
    doc = json.loads(written["detect"].read_text())
    doc["incidents"][0]["annotation"] = "a plain note"
    assert schemas.check(doc, "detect-v1", written["detect"], "h") is doc
    with pytest.raises(ResultFileError, match="incidents/0/annotation: not an object or null"):
        schemas.check(doc, "detect-alerts-v1", written["detect"], "h")


def test_an_odd_key_is_quoted_and_cut_in_the_message(written):
    doc = json.loads(written["bisects"].read_text())
    doc["bisects"]["x/../" + "y" * 200] = {}
    with pytest.raises(ResultFileError) as err:
        schemas.check(doc, "bisects-v1", written["bisects"], "h")
    assert "bisects/'x/../yyy" in str(err.value) and "is not an incident id" in str(err.value)
    assert len(str(err.value)) < 400


def test_an_unknown_schema_is_a_programming_error():
    with pytest.raises(ValueError, match="no history schema"):
        schemas.check({}, "nothing-v1", "x.json", "h")
