"""Every fault and hostile input of issue 12, reproduced: each ends in a clear error with the
documented exit code (7: a result or history file is corrupt or newer; 2: usage), names the
file (and the field), prints no traceback, and changes nothing on disk (a hash of every file,
mode and symlink under the history and the inputs is equal before and after).

Commands run in-process through ``vkbench.cli.main`` (the real CLI edge: an exception that
escaped it would be a traceback for the user, and fails the test here)."""

from __future__ import annotations

import contextlib
import hashlib
import io
import json
import os
import re
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

import pytest


from factory import make_result, nightly_series, write_result  # noqa: E402

from vkbench.alerts.issues import issue_body  # noqa: E402
from vkbench.alerts.summary import render_summary  # noqa: E402
from vkbench.history.ingest import ingest  # noqa: E402
from vkbench.history.store import HistoryStore, shard_digest  # noqa: E402

REPO = Path(__file__).resolve().parents[2]


# -- helpers -----------------------------------------------------------------------------------

@dataclass
class Outcome:
    code: int
    out: str
    err: str
    escaped: BaseException | None = None

    @property
    def text(self) -> str:
        return self.out + self.err


def vk(*args: str) -> Outcome:
    from vkbench.cli import main

    out, err = io.StringIO(), io.StringIO()
    code, escaped = 0, None
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            main([str(a) for a in args])
        except SystemExit as exc:
            code = exc.code if isinstance(exc.code, int) else 1
        except BaseException as exc:          # would have been a traceback
            escaped, code = exc, -1
    return Outcome(code, out.getvalue(), err.getvalue(), escaped)


def tree_hash(*roots: Path) -> str:
    digest = hashlib.sha256()
    for root in roots:
        if not root.exists():
            digest.update(f"{root}: absent\n".encode())
            continue
        for path in sorted(root.rglob("*")):
            rel = path.relative_to(root).as_posix()
            if path.is_symlink():
                digest.update(f"L {rel} -> {os.readlink(path)}\n".encode())
            elif path.is_dir():
                digest.update(f"D {rel} {path.stat().st_mode & 0o777:o}\n".encode())
            else:
                digest.update(f"F {rel} {path.stat().st_mode & 0o777:o} ".encode() + hashlib.sha256(path.read_bytes()).digest())
    return digest.hexdigest()


#: The areas of the hostile cases (the hardening note's figures, test_hostile_case_counts).
AREA_RESULTS = "result files (ingest, publish)"
AREA_HISTORY = "history damage (ingest, detect, site build, incremental site build, alert)"
AREA_PUBLISH = "history damage on the branch (publish)"
AREA_DETECT = "detect.json damage (alert, site build)"
AREA_MARKDOWN = "markdown and links (detect, alert, site)"


def assert_refused(outcome: Outcome, code: int, *needles: str) -> None:
    assert outcome.escaped is None, f"an exception escaped the CLI (a traceback): {outcome.escaped!r}"
    assert "Traceback" not in outcome.text
    assert outcome.code == code, outcome.text[-1500:]
    for needle in needles:
        assert needle in outcome.text, f"{needle!r} not in: {outcome.text[-1500:]}"


def git(*args: str, cwd: Path | None = None) -> str:
    return subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True, text=True).stdout


# -- a pristine history: 4 series (SET, GET x two machine classes), two months -----------------

@pytest.fixture(scope="module")
def pristine(tmp_path_factory) -> Path:
    base = tmp_path_factory.mktemp("pristine")
    for machine in ("cloud-x86", "pi-cm4"):
        for i in range(6):
            write_result(base / "res", make_result(run_id=f"{machine}-{i}", machine_class=machine,
                                                   timestamp=f"2026-{10 + i // 3}-{1 + i:02d}T02:00:00Z",
                                                   rps={"SET": 4e5 + i, "GET": 4.5e5 - i}))
    ingest(HistoryStore(base / "history"), [base / "res"])
    assert len(HistoryStore(base / "history").series_ids()) == 4
    assert vk("detect", "--history", base / "history").code == 0
    return base


def make_work(pristine: Path, dest: Path) -> Path:
    """A copy of the pristine history and one new result to ingest, under ``dest``."""
    shutil.copytree(pristine / "history", dest / "history")
    write_result(dest / "new", make_result(run_id="new-run", timestamp="2026-11-20T02:00:00Z"))
    return dest


@pytest.fixture
def work(pristine, tmp_path) -> Path:
    return make_work(pristine, tmp_path)


def one_shard(history: Path, month: str = "2026-10") -> tuple[str, Path]:
    store = HistoryStore(history)
    sid = store.series_ids()[0]
    return sid, store.shard_path(sid, month)


def reindex_shard(history: Path, sid: str, month: str) -> None:
    """A hand edit that also fixed index.json's digest: only the line check can catch it."""
    index_path = history / "index.json"
    index = json.loads(index_path.read_text())
    index["series"][sid]["shard_digests"][month] = shard_digest(HistoryStore(history).shard_path(sid, month).read_bytes())
    index_path.write_text(json.dumps(index))


# -- hostile result files: ingest and publish refuse them, nothing written ----------------------

def _set(path: str, value):
    def mutate(result: dict) -> dict:
        node = result
        *parents, last = path.split("/")
        for key in parents:
            node = node[key]
        node[last] = value
        return result
    return mutate


RESULT_CASES = {
    "cell_id-absolute": (_set("run/cell_id", "/tmp/vkbench-escape"), "run/cell_id"),
    "cell_id-dotdot": (_set("run/cell_id", "../../secretstuff"), "run/cell_id"),
    "cell_id-inner-dotdot": (_set("run/cell_id", "a/../../b"), "run/cell_id"),
    "cell_id-hidden": (_set("run/cell_id", ".hidden"), "run/cell_id"),
    "cell_id-huge": (_set("run/cell_id", "c" * 10_000), "run/cell_id"),
    "run_id-dotdot": (_set("run/run_id", "../../../x"), "run/run_id"),
    "run_id-newline": (_set("run/run_id", "a\nb"), "run/run_id"),
    "fingerprint-dotdot": (_set("environment/fingerprint_id", "../../etc/x"), "environment/fingerprint_id"),
    "timestamp-dotdot": (_set("run/timestamp", "../../../x"), "run/timestamp"),
    "timestamp-not-a-date": (_set("run/timestamp", "not-a-date"), "run/timestamp"),
    "timestamp-impossible": (_set("run/timestamp", "2026-13-45T99:00:00Z"), "run/timestamp"),
    "workflow-url-javascript": (_set("run/workflow_run_url", "javascript:alert(1)"), "run/workflow_run_url"),
    "workflow-url-markdown": (_set("run/workflow_run_url", "https://x/)[y](javascript:alert(1)"), "run/workflow_run_url"),
    "rps-negative": (_set("summary/SET/rps/median", -5.0), "summary/SET/rps/median"),
    "rps-string": (_set("summary/SET/rps/median", "fast"), "summary/SET/rps/median"),
    "rps-nan": (_set("summary/SET/rps/median", float("nan")), "summary/SET/rps/median"),
    "rps-infinity": (_set("summary/GET/rps/samples", [float("inf")]), "summary/GET/rps/samples/0"),
    "record-rps-nan": (lambda r: (r["repetitions"][0]["records"][0].__setitem__("rps", float("nan")), r)[1], "repetitions/0/records/0/rps"),
    "schema-version-0": (_set("schema_version", 0), "schema_version 0"),
    "schema-version-newer": (_set("schema_version", 99), "schema_version 99 is newer"),
}

RAW_CASES = {
    "binary": (os.urandom(512) + b"\xff\xfe", "corrupt JSON"),
    "truncated": (b'{"schema_version": 1, "kind": "vkbench.result", "run": {', "corrupt JSON"),
    "deeply-nested": (b"[" * 100_000 + b"]" * 100_000, "result"),
    "top-level-list": (b"[]", "not a vkbench result"),
}


def _hostile_results(work: Path, case: str) -> tuple[Path, str]:
    bad_dir = work / "bad"
    bad_dir.mkdir()
    if case in RESULT_CASES:
        mutate, needle = RESULT_CASES[case]
        data = json.dumps(mutate(make_result(run_id="hostile", timestamp="2026-11-21T02:00:00Z")))
        (bad_dir / "hostile.json").write_text(data)     # json.dumps writes NaN/Infinity literals
    else:
        raw, needle = RAW_CASES[case]
        (bad_dir / "hostile.json").write_bytes(raw)
    return bad_dir, needle


def run_result_case(work: Path, case: str) -> None:
    bad_dir, needle = _hostile_results(work, case)
    remote = work / "remote.git"
    git("init", "-q", "--bare", str(remote))
    before = tree_hash(work / "history", work / "new", bad_dir, remote)

    ingest = vk("ingest", work / "new", bad_dir, "--history", work / "history")
    publish = vk("publish", work / "new", bad_dir, "--repo-dir", remote, "--no-detect")
    assert_refused(ingest, 7, "hostile.json", needle)
    assert_refused(publish, 7, "hostile.json", needle)

    assert tree_hash(work / "history", work / "new", bad_dir, remote) == before
    assert not Path("/tmp/vkbench-escape.json").exists()


@pytest.mark.parametrize("case", [*RESULT_CASES, *RAW_CASES])
def test_hostile_result_is_refused_by_ingest_and_publish(work, case):
    run_result_case(work, case)


def run_secretstuff_case(work: Path) -> None:
    secret = work / "bad" / "secretstuff.raw"
    secret.mkdir(parents=True)
    (secret / "id_rsa").write_text("-----BEGIN OPENSSH PRIVATE KEY----- fake")
    result = _set("run/cell_id", "../../secretstuff")(make_result(run_id="r", timestamp="2026-11-21T02:00:00Z"))
    (work / "bad" / "deep" / "x").mkdir(parents=True)
    (work / "bad" / "deep" / "x" / "r.json").write_text(json.dumps(result))
    before = tree_hash(work / "history", work / "bad")
    outcome = vk("ingest", work / "bad" / "deep", "--history", work / "history")
    assert_refused(outcome, 7, "run/cell_id")
    assert tree_hash(work / "history", work / "bad") == before
    assert not any("id_rsa" in p.name for p in (work / "history").rglob("*"))


def run_symlink_case(work: Path) -> None:
    secret = work / "secret.txt"
    secret.write_text("not for the public branch")
    result = make_result(run_id="raw-link", timestamp="2026-11-21T02:00:00Z")
    path = write_result(work / "res2", result)
    raw = path.parent / f"{result['run']['cell_id']}.raw"
    raw.mkdir()
    (raw / "rep-1.txt").symlink_to(secret)
    before = tree_hash(work / "history")
    outcome = vk("ingest", work / "res2", "--history", work / "history")
    assert_refused(outcome, 7, "rep-1.txt", "symlink")
    assert tree_hash(work / "history") == before


RESULT_FOLDER_CASES = {
    # the issue's case: cell_id ../../secretstuff made ingest copy secretstuff.raw/ (a key)
    "cell_id-copies-a-neighbouring-folder": run_secretstuff_case,
    "raw-folder-symlink": run_symlink_case,
}


@pytest.mark.parametrize("case", list(RESULT_FOLDER_CASES))
def test_a_result_cannot_bring_files_from_outside_its_folder(work, case):
    RESULT_FOLDER_CASES[case](work)


# -- a damaged history: every reader stops with exit 7 naming the file, nothing written ---------

def _delete_index(h: Path):
    (h / "index.json").unlink()
    return "--rebuild-index"


def _truncate_mid_line(h: Path):
    sid, shard = one_shard(h)
    data = shard.read_bytes()
    shard.write_bytes(data[: len(data) - 40])
    return shard.name


def _empty_shard(h: Path):
    sid, shard = one_shard(h)
    shard.write_bytes(b"")
    return shard.name


def _invalid_json_line(h: Path):
    sid, shard = one_shard(h)
    shard.write_bytes(shard.read_bytes() + b'{"run_id": "x", "timest\n')
    return shard.name


def _binary_shard(h: Path):
    sid, shard = one_shard(h)
    size = shard.stat().st_size
    shard.write_bytes(os.urandom(size))          # same size: only the checksum can tell
    return shard.name


def _binary_shard_reindexed(h: Path):
    sid, shard = one_shard(h)
    shard.write_bytes(b"\x00\xff" * 64 + b"\n")
    reindex_shard(h, sid, "2026-10")
    return shard.name


def _string_metric_reindexed(h: Path):
    sid, shard = one_shard(h)
    lines = shard.read_text().splitlines()
    point = json.loads(lines[0])
    point["metrics"]["rps"]["median"] = "fast"
    shard.write_text("\n".join([json.dumps(point), *lines[1:]]) + "\n")
    reindex_shard(h, sid, "2026-10")
    return f"{shard.name}:1"


def _nan_metric_reindexed(h: Path):
    sid, shard = one_shard(h)
    lines = shard.read_text().splitlines()
    point = json.loads(lines[0])
    point["metrics"]["rps"]["samples"] = [float("nan")]
    shard.write_text("\n".join([json.dumps(point), *lines[1:]]) + "\n")
    reindex_shard(h, sid, "2026-10")
    return f"{shard.name}:1"


def _javascript_url_reindexed(h: Path):
    sid, shard = one_shard(h)
    lines = shard.read_text().splitlines()
    point = json.loads(lines[0])
    point["workflow_run_url"] = "javascript:alert(document.cookie)"
    shard.write_text("\n".join([json.dumps(point), *lines[1:]]) + "\n")
    reindex_shard(h, sid, "2026-10")
    return "workflow_run_url"


def _newer_index_version(h: Path):
    index = json.loads((h / "index.json").read_text())
    index["history_version"] = 99
    (h / "index.json").write_text(json.dumps(index))
    return "history_version 99 is newer"


def _newer_format_version(h: Path):
    (h / "format.json").write_text('{"history_version": 99}')
    return "history_version 99 is newer"


def _unlisted_shard(h: Path):
    sid, shard = one_shard(h)
    extra = shard.with_name("2025-01.jsonl")
    extra.write_bytes(shard.read_bytes())
    return "2025-01.jsonl"


def _interrupted_ingest(h: Path):
    sid, shard = one_shard(h)
    shutil.copyfile(h / "index.json", h / "index.pending.json")
    shard.write_bytes(shard.read_bytes() + shard.read_bytes().splitlines(keepends=True)[0].replace(b'"run_id":"', b'"run_id":"z'))
    return "index.pending.json"


def _escaping_series_id(h: Path):
    index = json.loads((h / "index.json").read_text())
    sid = sorted(index["series"])[0]
    index["series"]["../../../../tmp/vkbench-escape"] = index["series"].pop(sid)
    (h / "index.json").write_text(json.dumps(index))
    return "is not a safe path component"


def _escaping_month(h: Path):
    index = json.loads((h / "index.json").read_text())
    entry = index["series"][sorted(index["series"])[0]]
    entry["shards"][0] = "../../../../tmp/vkbench-escape"
    (h / "index.json").write_text(json.dumps(index))
    return "is not YYYY-MM"


HISTORY_CASES = {
    "index-deleted": _delete_index,
    "index-series-id-escapes": _escaping_series_id,
    "index-month-escapes": _escaping_month,
    "shard-truncated-mid-line": _truncate_mid_line,
    "shard-zero-bytes": _empty_shard,
    "shard-invalid-json-line": _invalid_json_line,
    "shard-binary-same-size": _binary_shard,
    "shard-binary-reindexed": _binary_shard_reindexed,
    "metric-string-reindexed": _string_metric_reindexed,
    "metric-nan-reindexed": _nan_metric_reindexed,
    "url-javascript-reindexed": _javascript_url_reindexed,
    "index-newer-version": _newer_index_version,
    "format-newer-version": _newer_format_version,
    "shard-unlisted": _unlisted_shard,
    "ingest-interrupted-mismatch": _interrupted_ingest,
}

READERS = {
    "ingest": lambda w: ("ingest", w / "new", "--history", w / "history"),
    "detect": lambda w: ("detect", "--history", w / "history", "--format", "markdown"),
    "site-build": lambda w: ("site", "build", "--history", w / "history", "--out", w / "site"),
    # over the site built from the history before the damage: kept series are checked too
    "site-build-incremental": lambda w: ("site", "build", "--history", w / "history", "--out", w / "site-prev"),
    "alert": lambda w: ("alert", "--repo", "o/r", "--history", w / "history", "--dry-run"),
}


def run_history_case(work: Path, case: str) -> None:
    assert vk("site", "build", "--history", work / "history", "--out", work / "site-prev").code == 0
    needle = HISTORY_CASES[case](work / "history")
    roots = (work / "history", work / "new", work / "site-prev")   # (a new site dir may be created empty)
    before = tree_hash(*roots)
    for name, args in READERS.items():
        outcome = vk(*args(work))
        assert_refused(outcome, 7, needle)
        assert tree_hash(*roots) == before, f"{name} changed the history or a site"
    assert not Path("/tmp/vkbench-escape").exists()


@pytest.mark.parametrize("case", list(HISTORY_CASES))
def test_damaged_history_stops_every_reader(work, case):
    run_history_case(work, case)


PUBLISH_CASES = ["index-deleted", "shard-truncated-mid-line", "shard-binary-same-size", "index-newer-version",
                 "index-series-id-escapes"]


def run_publish_case(work: Path, case: str) -> None:
    remote = work / "remote.git"
    git("init", "-q", "--bare", str(remote))
    seed = work / "seed"
    git("init", "-q", "-b", "gh-pages", str(seed))
    shutil.copytree(work / "history", seed / "history")
    needle = HISTORY_CASES[case](seed / "history")
    git("add", "-A", cwd=seed)
    git("-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "-m", "seed", cwd=seed)
    git("push", "-q", str(remote), "gh-pages", cwd=seed)
    tip = git("rev-parse", "gh-pages", cwd=remote)
    outcome = vk("publish", work / "new", "--repo-dir", remote)
    assert_refused(outcome, 7, needle)
    assert git("rev-parse", "gh-pages", cwd=remote) == tip


@pytest.mark.parametrize("case", PUBLISH_CASES)
def test_damaged_history_on_the_branch_stops_publish(work, case):
    run_publish_case(work, case)


def test_deleted_index_is_rebuilt_whole(work, pristine):
    """The issue: a deleted index made ingest keep 2 of 4 series. Now: refused, then rebuilt."""
    (work / "history" / "index.json").unlink()
    assert_refused(vk("ingest", work / "new", "--history", work / "history"), 7, "--rebuild-index")
    assert vk("ingest", "--history", work / "history", "--rebuild-index").code == 0
    rebuilt = HistoryStore(work / "history").index()
    original = HistoryStore(pristine / "history").index()
    assert rebuilt["series"] == original["series"] and len(rebuilt["series"]) == 4
    assert vk("ingest", work / "new", "--history", work / "history").code == 0


def test_interrupted_ingest_is_completed_by_the_next(work, monkeypatch):
    """A crash between the shard renames and the index: readers stop (exit 7), the next ingest
    completes it, nothing is lost or doubled."""
    def crash(self, index):
        raise KeyboardInterrupt("power cut")

    monkeypatch.setattr(HistoryStore, "write_index", crash)
    with pytest.raises(KeyboardInterrupt):
        ingest(HistoryStore(work / "history"), [work / "new"])
    monkeypatch.undo()
    assert_refused(vk("detect", "--history", work / "history"), 7, "index.pending.json")
    outcome = vk("ingest", work / "new", "--history", work / "history")
    assert outcome.code == 0 and "completed an interrupted ingest" in outcome.text
    store = HistoryStore(work / "history")
    store.verify(deep=True)
    assert sum(e["points"] for e in store.index()["series"].values()) == 4 * 6 + 2


def _as_version_1(h):
    """The history as version 1 wrote it: no shard digests, shard files named <YYYY-MM>.jsonl."""
    index = json.loads((h / "index.json").read_text())
    index["history_version"] = 1
    for entry in index["series"].values():
        entry.pop("shard_digests")
    (h / "index.json").write_text(json.dumps(index))
    (h / "format.json").write_text('{"history_version": 1}')
    for shard in (h / "series").glob("*/*/*.jsonl"):
        shard.rename(shard.with_name(shard.name.split(".")[0] + ".jsonl"))


def test_version_1_history_is_still_read_and_checked(work):
    h = work / "history"
    _as_version_1(h)
    assert vk("detect", "--history", h, "--no-write").code == 0                  # readable
    _truncate_mid_line(h)
    assert_refused(vk("detect", "--history", h, "--no-write"), 7)                 # still checked


def test_version_1_history_migrates_on_ingest(pristine, tmp_path):
    h = tmp_path / "history"
    shutil.copytree(pristine / "history", h)
    _as_version_1(h)
    write_result(tmp_path / "new", make_result(run_id="after-migration", timestamp="2026-11-22T02:00:00Z"))
    outcome = vk("ingest", tmp_path / "new", "--history", h)
    # (format 3 since issue 23: the migration also names each shard after its series)
    assert outcome.code == 0 and "migrated 1 -> 3" in outcome.text
    assert json.loads((h / "format.json").read_text()) == {"history_version": 3}
    HistoryStore(h).verify(deep=True)


# -- a damaged detect.json: alert and the site stop with exit 7 naming the file and field ---------

def _one_incident(doc: dict) -> dict:
    sid = sorted(doc["noise"])[0]
    ref = {"run_id": "cloud-x86-4", "version": "unstable", "commit": "a1b2c3d4e5f6a7b8c9d0", "timestamp": "2026-11-05T02:00:00Z"}
    return {"id": "inc-1", "title": "SET: -8%", "status": "open", "direction": "regression", "metric": "rps",
            "magnitude": -0.08, "series_ids": [sid], "machine_class": "cloud-x86", "silenced": False,
            "good": ref, "bad": dict(ref, run_id="cloud-x86-5"), "annotation": None}


def _incident_without(key: str):
    def change(doc: dict) -> None:
        incident = _one_incident(doc)
        del incident[key]
        doc["incidents"] = [incident]
    return change


ALERT, SITE, SITE_INCREMENTAL = "alert", "site-build", "site-build-incremental"
DETECT_CASES = {
    "incident-without-status": (_incident_without("status"), "incidents/0/status", (ALERT,)),
    "incident-without-id": (_incident_without("id"), "incidents/0/id", (ALERT, SITE, SITE_INCREMENTAL)),
    "incidents-an-object": (lambda d: d.__setitem__("incidents", {"inc-1": {}}), "incidents", (ALERT, SITE, SITE_INCREMENTAL)),
    "change-point-series-id-a-list": (lambda d: d.__setitem__("change_points", [{"series_id": ["s"], "metric": "rps"}]),
                                      "change_points/0/", (ALERT, SITE, SITE_INCREMENTAL)),
    "noise-a-list": (lambda d: d.__setitem__("noise", {"s": [0.01]}), "noise/s", (ALERT, SITE, SITE_INCREMENTAL)),
    "segment-start-a-string": (lambda d: d.__setitem__("segments", {"s": [{"start_index": "0"}]}), "segments/s/0",
                               (ALERT, SITE, SITE_INCREMENTAL)),
}


def run_detect_case(work: Path, case: str) -> None:
    assert vk("site", "build", "--history", work / "history", "--out", work / "site-prev").code == 0
    change, needle, readers = DETECT_CASES[case]
    doc = json.loads((work / "history" / "detect.json").read_text())
    change(doc)
    (work / "history" / "detect.json").write_text(json.dumps(doc))
    roots = (work / "history", work / "site-prev")
    before = tree_hash(*roots)
    for name in readers:
        outcome = vk(*READERS[name](work))
        assert_refused(outcome, 7, "detect.json", needle)
        assert tree_hash(*roots) == before, f"{name} changed the history or a site"


@pytest.mark.parametrize("case", list(DETECT_CASES))
def test_damaged_detect_json_stops_alert_and_the_site(work, case):
    run_detect_case(work, case)


# -- Markdown injection -------------------------------------------------------------------------

EVIL = "[x](javascript:alert(1)) <img src=x onerror=alert(1)> `code` | pipe\n# heading"


def _evil_detection() -> dict:
    ref = {"run_id": "r`1", "version": EVIL, "commit": "not-hex)](javascript:alert(1)", "timestamp": "2026-11-01",
           "workflow_run_url": "javascript:alert(1)"}
    incident = {"id": "abc-->\n<script>", "title": EVIL, "status": "open", "direction": "regression", "metric": "rps",
                "magnitude": -0.1, "series_ids": ["s1"], "machine_class": EVIL, "good": ref, "bad": dict(ref),
                "annotation": {"action": "silence", "reason": EVIL}, "engine": "valkey", "silenced": False}
    cp = {"series_id": "s1", "series_name": EVIL, "metric": "rps", "magnitude": -0.1, "p_value": 0.001,
          "level_before": 1.0, "level_after": 0.9, "runs": {"before": [1], "after": [2]}, "incident_id": incident["id"]}
    return {"series": 1, "runs": 2, "change_points": [cp], "incidents": [incident]}


def _assert_inert(markdown: str) -> None:
    # what Markdown would interpret: escaped characters and code spans are literal text
    live = re.sub(r"`[^`]*`", "CODE", re.sub(r"\\.", "_", markdown))
    assert "](javascript:" not in live and "](data:" not in live
    assert "<img" not in live and "<script" not in live
    assert not any(line.startswith("# heading") for line in markdown.splitlines())
    for line in markdown.splitlines():
        if line.startswith("| ") and "javascript" in line:       # table rows keep their column count
            assert line.replace("\\|", "").count("|") == 7


def call(fn, *args, **kwargs) -> tuple[Outcome, object]:
    """A library call as an Outcome (an exception is what would have been a traceback)."""
    try:
        return Outcome(0, "", ""), fn(*args, **kwargs)
    except Exception as exc:       # noqa: BLE001 - kept in the Outcome, then the test fails on it
        return Outcome(-1, "", "", exc), None


def run_markdown_summary_and_issue_body() -> None:
    detection = _evil_detection()
    summary, text = call(render_summary, detection, site_url="javascript:alert(1)")
    assert summary.escaped is None, summary.escaped
    _assert_inert(text)
    outcome, body = call(issue_body, detection["incidents"][0], detection["change_points"], repo="o/r")
    assert outcome.escaped is None, outcome.escaped
    _assert_inert(body)
    first = body.splitlines()[0]
    assert first.startswith("<!-- vkbench-incident: abc") and first.endswith(" -->") and first.count("-->") == 1


def test_markdown_summary_and_issue_body_are_inert():
    run_markdown_summary_and_issue_body()


def run_detect_markdown(tmp_path: Path) -> None:
    paths = nightly_series(tmp_path / "res", [4e5] * 8 + [2.5e5] * 8, command="[x](javascript:alert(1))")
    assert vk("ingest", *paths, "--history", tmp_path / "h").code == 0
    outcome = vk("detect", "--history", tmp_path / "h", "--format", "markdown")
    assert outcome.code == 0 and outcome.escaped is None
    _assert_inert(outcome.out)


def test_detect_markdown_from_a_history_with_hostile_names(tmp_path):
    run_detect_markdown(tmp_path)


SITE_LINKS = ['javascript:alert(1)', 'JAVASCRIPT:x', 'data:text/html,x', 'http://x', ' https://x']


def run_site_links() -> None:
    """Every hostile link of SITE_LINKS is dropped (null) by the site's safeHref; an https link and
    values that are no string show it does not drop everything."""
    cases = [*SITE_LINKS, "https://github.com/o/r/actions/runs/1", None, 42]
    script = (
        "const { safeHref } = await import(process.argv[1]);"
        "const cases = JSON.parse(process.argv[2]);"
        "console.log(JSON.stringify(cases.map((c) => safeHref(c))));"
    )
    ui = REPO / "bench" / "vkbench" / "site" / "static" / "ui.js"
    proc = subprocess.run(["node", "--input-type=module", "-e", script, ui.as_uri(), json.dumps(cases)],
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout) == [None] * len(SITE_LINKS) + ["https://github.com/o/r/actions/runs/1", None, None]


def test_site_links_accept_only_https():
    run_site_links()


#: The Markdown outputs checked with hostile names: test_markdown_summary_and_issue_body_are_inert
#: (the first two) and test_detect_markdown_from_a_history_with_hostile_names.
MARKDOWN_OUTPUTS = ("job summary", "issue body", "detect --format markdown")

#: The least number of cases each area must hold (the figures of the hardening note): fewer means
#: a case was dropped from its list.
MINIMUM = {AREA_RESULTS: 26, AREA_HISTORY: 75, AREA_PUBLISH: 5, AREA_DETECT: 16, AREA_MARKDOWN: 8}


def hostile_case_counts() -> dict[str, int]:
    """Cases by area, counted from the tables the tests above are parametrized with (each case
    is one run of a command or a library call, asserted by its own test: the documented exit
    code, the file and field named, no traceback, nothing changed on disk)."""
    return {
        AREA_RESULTS: len(RESULT_CASES) + len(RAW_CASES) + len(RESULT_FOLDER_CASES),
        AREA_HISTORY: len(HISTORY_CASES) * len(READERS),
        AREA_PUBLISH: len(PUBLISH_CASES),
        AREA_DETECT: sum(len(readers) for _, _, readers in DETECT_CASES.values()),
        AREA_MARKDOWN: len(MARKDOWN_OUTPUTS) + len(SITE_LINKS),
    }


def test_hostile_case_counts(capsys):
    """The hardening note's figures: hostile cases by area. Counted from the case tables, not from
    what other tests happened to run, so the figure is the same whichever tests ran (or failed)."""
    counts = hostile_case_counts()
    with capsys.disabled():
        print()
        for area, n in counts.items():
            print(f"hostile cases, {area}: {n}")
    for area, minimum in MINIMUM.items():
        assert counts[area] >= minimum, f"{area}: {counts[area]} cases, at least {minimum} expected"
