"""Function-level difference of two counted results (vkbench.instruments.diff): from the callgrind
dumps kept beside them (same seeds only), else from their top functions; attached to an incident of
instruction counts and shown in its issue body."""

from __future__ import annotations

import copy
import gzip
import json
import subprocess
import sys
from pathlib import Path

import numpy as np

from vkbench.alerts.summary import render_incident
from vkbench.detect import run_detection
from vkbench.history import HistoryStore
from vkbench.history.ingest import ingest
from vkbench.instruments.diff import diff_dumps, diff_results, diff_top_functions, dumps_of, to_markdown
from vkbench.results.io import validate_result
from vkbench.site.series_data import load_series

from factory import make_result

ROOT = Path(__file__).resolve().parents[3]
WINDOW = 1000


def dump(lookup: int, parse: int, *, cron: int = 40) -> str:
    """A callgrind dump of one window: ``lookup``/``parse`` are the self costs of two functions."""
    total = 10 * WINDOW + lookup + parse + cron
    return f"""# callgrind format
version: 1
creator: callgrind-3.19.0
cmd:  valkey-server
events: Ir
fl=(1) server.c
fn=(1) processCommand
10 {10 * WINDOW}
fn=(2) lookupCommand
20 {lookup}
fn=(3) processMultibulkBuffer
30 {parse}
fn=(4) serverCron
40 {cron}
totals: {total}
"""


def counted(night: int, *, per_op: float, seeds=(1, 2), dumps: dict[int, str] | None = None,
            top: dict[str, float] | None = None) -> dict:
    result = make_result(run_id=f"run-{night:04d}", timestamp=f"2026-10-{night + 1:02d}T02:00:00Z",
                         commit=f"{night:06x}" + "ab" * 17, rps={"SET": 400_000.0})
    out = copy.deepcopy(result)
    out["summary"], out["repetitions"] = {}, []
    out["dimensions"]["instrument"] = "instructions"
    top = top or {"processCommand": 10.0, "lookupCommand": 2.0}
    out["instructions"] = {
        "method": {"tool": "callgrind", "windows": 4, "window_requests": WINDOW, "servers": len(seeds), "id": "m-1"},
        "commands": {"set": {"per_op": per_op, "values": [per_op] * len(seeds), "cv_pct": 0.01,
                             "per_server": [per_op * (1 + 0.0005 * i) for i in range(len(seeds))],
                             "top_functions": [{"function": f, "self_per_op": v} for f, v in top.items()]}},
        "servers": [{"seed": s, "dumps": [f"callgrind-seed{s}-set.out.gz"] if dumps and s in dumps else []}
                    for s in seeds],
    }
    return validate_result(out, source="test")


def write(directory: Path, result: dict, dumps: dict[int, str] | None = None) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / f"{result['run']['run_id']}__{result['run']['cell_id']}.json"
    path.write_text(json.dumps(result, indent=1))
    raw = directory / f"{result['run']['cell_id']}.raw" / "callgrind"
    for seed, text in (dumps or {}).items():
        raw.mkdir(parents=True, exist_ok=True)
        with gzip.open(raw / f"callgrind-seed{seed}-set.out.gz", "wt") as fh:
            fh.write(text)
    return path


def test_diff_of_dumps_pairs_seeds_and_names_the_function(tmp_path):
    before_dumps = {1: dump(2000, 5000), 2: dump(2400, 5000)}
    after_dumps = {1: dump(2000, 5300), 2: dump(2400, 5300), 3: dump(9999, 0)}      # seed 3: no partner
    b = write(tmp_path / "b", counted(0, per_op=17.0, dumps=before_dumps), before_dumps)
    a = write(tmp_path / "a", counted(1, per_op=17.3, seeds=(1, 2, 3), dumps=after_dumps), after_dumps)
    found = diff_results(b, a, "SET")
    assert found.source == "callgrind dumps" and found.seeds == [1, 2]
    assert found.rows[0] == {"function": "processMultibulkBuffer", "before": 5.0, "after": 5.3, "delta": 0.3}
    assert [r["function"] for r in found.rows] == ["processMultibulkBuffer"]   # lookupCommand: same per seed
    assert round(found.total_after - found.total_before, 6) == 0.3
    table = to_markdown(found, before_label="good", after_label="bad")
    assert "`processMultibulkBuffer`" in table and "+0.30" in table


def test_dumps_of_reads_only_names_vkbench_writes(tmp_path):
    result = counted(0, per_op=17.0, dumps={1: "x"})
    result["instructions"]["servers"][0]["dumps"].append("../../etc/passwd")
    path = write(tmp_path, result, {1: dump(1, 1)})
    assert list(dumps_of(path, result, "SET")) == [1]
    assert dumps_of(path, result, "GET") == {}


def test_without_dumps_the_top_functions_speak(tmp_path):
    b = write(tmp_path / "b", counted(0, per_op=12.0))
    a = write(tmp_path / "a", counted(1, per_op=12.5, top={"processCommand": 10.0, "lookupCommand": 2.5}))
    found = diff_results(b, a, "set")
    assert found.source == "top functions"
    assert found.rows == [{"function": "lookupCommand", "before": 2.0, "after": 2.5, "delta": 0.5}]
    assert diff_top_functions(counted(0, per_op=1.0), make_result(), "SET") is None


def test_diff_dumps_without_common_seed_is_none(tmp_path):
    assert diff_dumps({1: Path("x")}, {2: Path("y")}, before_ops=1, after_ops=1, command="set") is None


def test_tool_prints_the_difference(tmp_path):
    b, a = tmp_path / "b.out", tmp_path / "a.out"
    b.write_text(dump(2000, 5000))
    a.write_text(dump(2600, 5000))
    out = subprocess.run([sys.executable, str(ROOT / "tools" / "instruction_diff.py"), str(b), str(a), "--ops", str(WINDOW)],
                         capture_output=True, text=True, timeout=120, check=True).stdout
    assert "lookupCommand" in out and "+0.60" in out


def test_incident_of_counts_carries_the_function_diff_into_the_issue_body(tmp_path):
    rng = np.random.default_rng(3)
    store = HistoryStore(tmp_path / "history")
    for night in range(12):
        bad = night >= 11
        parse = 5300 if bad else 5000
        dumps = {1: dump(2000, parse), 2: dump(2400, parse)}
        per_op = (17.3 if bad else 17.0) * (1 + rng.normal(0, 0.0002))
        directory = tmp_path / "res" / f"n{night}"
        write(directory, counted(night, per_op=per_op, dumps=dumps), dumps)
        ingest(store, [directory])
    doc = run_detection(store.path, write=False)
    (incident,) = doc["incidents"]
    assert incident["metric"] == "instructions_per_op" and incident["direction"] == "regression"
    assert "instructions_per_op +2%" in incident["title"]
    diff = incident["instruction_diff"]
    assert diff["source"] == "callgrind dumps" and diff["rows"][0]["function"] == "processMultibulkBuffer"
    body = render_incident(incident, doc["change_points"])
    assert "instructions\\_per\\_op" in body          # the metric is named (escaped Markdown)
    assert "Functions whose instructions per operation changed most" in body
    assert "`processMultibulkBuffer`" in body


def test_sub_percent_changes_keep_their_digits():
    from vkbench.detect.incidents import title
    from vkbench.markdown import change

    assert change(0.0032) == "+0.32%" and change(-0.08) == "-8.0%" and change(0.0004) == "+0.040%"
    rep = {"good": {"commit": "a" * 40, "timestamp": "t"}, "bad": {"commit": "b" * 40, "timestamp": "t"}}
    assert title([{"series_id": "s"}], {"s": {"command": "GET"}}, "cloud-x86", "instructions_per_op", 0.005, rep) \
        .endswith("cloud-x86: instructions_per_op +0.5% between aaaaaaa and bbbbbbb")


def test_site_charts_counts_and_shows_the_incident_function_diff(tmp_path):
    """The site: instructions per op is a metric of its own (index, series file), and the incident
    carries its function-level difference to the overview (data/detect.json)."""
    from vkbench.site.build import build_site

    rng = np.random.default_rng(4)
    store = HistoryStore(tmp_path / "history")
    for night in range(8):
        parse = 5300 if night >= 7 else 5000
        dumps = {1: dump(2000, parse)}
        directory = tmp_path / "res" / f"n{night}"
        write(directory, counted(night, per_op=(17.3 if night >= 7 else 17.0) * (1 + rng.normal(0, 0.0002)),
                                 seeds=(1,), dumps=dumps), dumps)
        ingest(store, [directory])
    run_detection(store.path)
    build_site(store.path, tmp_path / "site", reference_dir=None)
    data = tmp_path / "site" / "data"
    index = json.loads((data / "index.json").read_text())
    assert "instructions_per_op" in index["metrics"] and "rps" not in index["metrics"]
    (series,) = index["series"]
    main, _ = load_series(data / "series", series["id"])
    assert len(main["m"]["instructions_per_op"]["med"]) == 8
    (incident,) = json.loads((data / "detect.json").read_text())["incidents"]
    assert incident["instruction_diff"]["rows"][0]["function"] == "processMultibulkBuffer"
    overview = (ROOT / "bench" / "vkbench" / "site" / "static" / "view-overview.js").read_text()
    assert "instruction_diff" in overview
    assert '"instructions/op"' in (ROOT / "bench" / "vkbench" / "site" / "static" / "format.js").read_text()
