"""What every history reader checks before using a file from gh-pages (issue 12, audit):

- series ids and months in index.json become paths (series/<sid[:2]>/<sid>/<month>.jsonl, the
  site's data/series/<sid>.json): anything but a safe path component is refused (exit 7 naming
  index.json), before a single path is built from it;
- `vkbench advise` reads the newest shard of each series through the store's checked reader
  (against the index: lines, bytes, sha256);
- detect.json is checked where it is read (`vkbench alert`, the site): a damaged structure is
  exit 7 naming the file and the field, never a KeyError or TypeError traceback.

Commands run through the CLI edge (``vkbench.cli.main``), as a user would see them."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
from pathlib import Path

import pytest
from factory import make_result, write_result

from vkbench.history.ingest import ingest
from vkbench.history.store import HistoryStore
from cli_outcome import vk  # tests/cli_outcome.py


def tree_hash(root: Path) -> str:
    digest = hashlib.sha256()
    for path in sorted(root.rglob("*")):
        digest.update(str(path.relative_to(root)).encode())
        if path.is_file():
            digest.update(path.read_bytes())
    return digest.hexdigest()


@pytest.fixture(scope="module")
def pristine(tmp_path_factory) -> Path:
    base = tmp_path_factory.mktemp("pristine")
    for i in range(6):
        write_result(base / "res", make_result(run_id=f"night-{i}", timestamp=f"2026-{10 + i // 3}-{1 + i:02d}T02:00:00Z",
                                               rps={"SET": 4e5 + i, "GET": 4.5e5 - i}))
    ingest(HistoryStore(base / "history"), [base / "res"])
    code, text = vk("detect", "--history", base / "history")
    assert code == 0, text
    return base / "history"


@pytest.fixture
def history(pristine, tmp_path) -> Path:
    shutil.copytree(pristine, tmp_path / "history")
    return tmp_path / "history"


def edit_index(history: Path, change) -> None:
    index = json.loads((history / "index.json").read_text())
    change(index)
    (history / "index.json").write_text(json.dumps(index))


def rename_series(new_sid: str):
    def change(index: dict) -> None:
        sid = sorted(index["series"])[0]
        index["series"][new_sid] = index["series"].pop(sid)
    return change


def rename_month(new_month: str):
    def change(index: dict) -> None:
        entry = index["series"][sorted(index["series"])[0]]
        entry["shards"][0] = new_month
    return change


def rename_digest_month(new_month: str):
    def change(index: dict) -> None:
        entry = index["series"][sorted(index["series"])[0]]
        month = sorted(entry["shard_digests"])[0]
        entry["shard_digests"][new_month] = entry["shard_digests"].pop(month)
    return change


UNSAFE_INDEX = {
    "sid-parent-dirs": rename_series("../../../../tmp/vkbench-escape"),
    "sid-absolute": rename_series("/etc"),
    "sid-dotdot": rename_series(".."),
    "sid-hidden": rename_series(".git"),
    "sid-slash": rename_series("ab/cd"),
    "sid-newline": rename_series("abcd\nef"),
    "month-parent-dirs": rename_month("../../../../tmp/x"),
    "month-not-a-month": rename_month("2026-13"),
    "month-with-suffix": rename_month("2026-10.jsonl"),
    "digest-month-parent-dirs": rename_digest_month("../x"),
}

READERS = {
    "ingest": lambda h: ("ingest", "--history", h, h.parent / "new"),
    "detect": lambda h: ("detect", "--history", h, "--no-write"),
    "site-build": lambda h: ("site", "build", "--history", h, "--out", h.parent / "site", "--no-reference"),
    "alert": lambda h: ("alert", "--repo", "o/r", "--history", h, "--dry-run"),
    "advise": lambda h: ("advise", "--history", h),
}


@pytest.mark.parametrize("case", list(UNSAFE_INDEX))
def test_ids_and_months_from_the_index_must_be_safe_path_components(history, case):
    edit_index(history, UNSAFE_INDEX[case])
    write_result(history.parent / "new", make_result(run_id="night-9", timestamp="2026-11-20T02:00:00Z"))
    before = tree_hash(history.parent)
    for name, args in READERS.items():
        code, text = vk(*args(history))
        assert code == 7, (name, text[-1500:])
        assert "index.json" in text and ("safe path component" in text or "YYYY-MM" in text), (name, text[-1500:])
    assert tree_hash(history.parent) == before
    assert not Path("/tmp/vkbench-escape").exists()


def same_size_edit(path: Path) -> None:
    """Change the first digit of the first line's rps median: the shard stays valid JSON, with
    the same size and line count; only its checksum can tell."""
    data = path.read_bytes()
    at = data.index(b'"median":') + len(b'"median":')
    while not data[at:at + 1].isdigit():
        at += 1
    digit = b"2" if data[at:at + 1] == b"1" else b"1"
    path.write_bytes(data[:at] + digit + data[at + 1:])
    assert len(path.read_bytes()) == len(data)


def newest_shard(history: Path) -> Path:
    store = HistoryStore(history)
    sid = store.series_ids()[0]
    return store.shard_path(sid, sorted(store.index()["series"][sid]["shards"])[-1])


def test_advise_reads_the_newest_shard_through_the_checked_reader(history):
    code, text = vk("advise", "--history", history)
    assert code == 0, text
    shard = newest_shard(history)
    same_size_edit(shard)
    code, text = vk("advise", "--history", history)
    assert code == 7 and str(shard) in text and "does not match index.json" in text, text[-1500:]


def test_advise_refuses_a_missing_newest_shard_and_an_unlisted_one(history):
    shard = newest_shard(history)
    moved = shard.with_name("2027-01.jsonl")            # an unlisted newer month on disk
    os.rename(shard, moved)
    code, text = vk("advise", "--history", history)
    assert code == 7 and str(shard) in text and "missing" in text, text[-1500:]
    os.rename(moved, shard)
    shutil.copyfile(shard, moved)
    code, text = vk("advise", "--history", history)
    assert code == 7 and "2027-01.jsonl" in text and "does not list" in text, text[-1500:]


# -- detect.json ---------------------------------------------------------------------------------

def edit_detect(history: Path, change) -> None:
    doc = json.loads((history / "detect.json").read_text())
    change(doc)
    (history / "detect.json").write_text(json.dumps(doc))


def with_incident(**fields):
    """One regression incident (with a change point) in detect.json, some fields replaced."""
    ref = {"run_id": "night-4", "version": "unstable", "commit": "a1b2c3d4e5f6a7b8c9d0", "timestamp": "2026-11-05T02:00:00Z"}

    def change(doc: dict) -> None:
        incident = {"id": "inc-1", "title": "SET: -8%", "status": "open", "direction": "regression", "metric": "rps",
                    "magnitude": -0.08, "p_value": 0.001, "series_ids": sorted(doc["noise"])[:1], "machine_class": "cloud-x86",
                    "silenced": False, "good": ref, "bad": dict(ref, run_id="night-5"), "annotation": None}
        cp = {"series_id": incident["series_ids"][0], "metric": "rps", "direction": "regression", "magnitude": -0.08,
              "p_value": 0.001, "level_before": 4e5, "level_after": 3.7e5, "runs": {"before": ["night-4"], "after": ["night-5"]},
              "good": ref, "bad": dict(ref, run_id="night-5"), "incident_id": "inc-1", "index": 5}
        for key, value in fields.items():
            target, _, name = key.partition("__")
            (incident if target == "incident" else cp)[name] = value
            if value is DROP:
                del (incident if target == "incident" else cp)[name]
        doc["incidents"], doc["change_points"] = [incident], [cp]
    return change


DROP = object()

BAD_DETECT = {
    # what reached a KeyError/TypeError/AttributeError deep in a renderer before
    "incident-without-status": (with_incident(incident__status=DROP), "incidents/0/status"),
    "incident-without-id": (with_incident(incident__id=DROP), "incidents/0/id"),
    "incident-status-list": (with_incident(incident__status=["open"]), "incidents/0/status"),
    "incident-magnitude-string": (with_incident(incident__magnitude="-8%"), "incidents/0/magnitude"),
    "incident-series-ids-string": (with_incident(incident__series_ids="abc"), "incidents/0/series_ids"),
    "incident-good-string": (with_incident(incident__good="night-4"), "incidents/0/good"),
    "incident-good-commit-number": (with_incident(incident__good={"run_id": "night-4", "commit": 42}), "incidents/0/good/commit"),
    "incident-annotation-list": (with_incident(incident__annotation=["silence"]), "incidents/0/annotation"),
    "incident-profile-rows-wrong": (with_incident(incident__profile_diff={"rows": [{"function": "f"}]}), "incidents/0/profile_diff"),
    "cp-series-id-list": (with_incident(cp__series_id=["x"]), "change_points/0/series_id"),
    "cp-runs-missing-after": (with_incident(cp__runs={"before": []}), "change_points/0/runs"),
    "cp-without-runs": (with_incident(cp__runs=DROP), "change_points/0/runs"),
    "cp-level-nan": (with_incident(cp__level_before=float("nan")), "change_points/0/level_before"),
    "incidents-an-object": (lambda d: d.__setitem__("incidents", {"inc-1": {}}), "incidents: not a list"),
    "change-points-a-string": (lambda d: d.__setitem__("change_points", "none"), "change_points: not a list"),
    "noise-a-list": (lambda d: d.__setitem__("noise", {sorted(d["noise"])[0]: [0.01]}), "noise/"),
    "segments-start-string": (lambda d: d.__setitem__("segments", {"s": [{"start_index": "0"}]}), "segments/s/0"),
}

#: Fields only the issue bodies and summaries format: the site does without them (a confirmed
#: incident has no p-value, the site's own tests write minimal ones), alert needs them.
ALERT_ONLY = {"incident-without-status", "cp-without-runs"}


@pytest.mark.parametrize("case", list(BAD_DETECT))
def test_damaged_detect_json_is_refused_where_it_is_read(history, case):
    change, where = BAD_DETECT[case]
    edit_detect(history, change)
    before = tree_hash(history)
    code, text = vk("alert", "--repo", "o/r", "--history", history, "--dry-run")
    assert code == 7 and "detect.json" in text and where in text, text[-1500:]
    code, text = vk("site", "build", "--history", history, "--out", history.parent / "site", "--no-reference")
    if case in ALERT_ONLY:
        assert code == 0, text[-1500:]
    else:
        assert code == 7 and "detect.json" in text and where in text, text[-1500:]
        assert not (history.parent / "site" / "data").exists()
    assert tree_hash(history) == before


def test_a_whole_detect_json_is_accepted_by_alert_and_site(history):
    edit_detect(history, with_incident())
    code, text = vk("alert", "--repo", "o/r", "--history", history, "--dry-run")
    assert code == 0 and "inc-1" in text, text[-1500:]
    code, text = vk("site", "build", "--history", history, "--out", history.parent / "site", "--no-reference")
    assert code == 0, text[-1500:]
