"""A history written through the real `ingest`: an io-threads sweep on one machine class
(io-threads 1 and 2 with the client on the box) in two runs, each with a CPU profile per cell,
and a detect.json whose incident spans the two runs (so the site draws its profile diff)."""

from __future__ import annotations

import copy
import json
from pathlib import Path

from vkbench.history.series import series_key
from vkbench.history.ingest import ingest
from vkbench.history.store import HistoryStore
from vkbench.profile import folded
from vkbench.results.io import load_result, write_result
from vkbench.stats import summarize

REPO = Path(__file__).resolve().parents[2]
CLASS = "lab-2core"
GOOD = {"run_id": "run-good", "ts": "2026-11-01T02:00:00Z", "commit": "a" * 40}
BAD = {"run_id": "run-bad", "ts": "2026-11-02T02:00:00Z", "commit": "b" * 40}
STACKS_GOOD = {"valkey-server;main;aeMain;processCommand;setCommand": 400, "valkey-server;main;aeMain;readQueryFromClient": 300,
               "valkey-server;main;aeMain;beforeSleep": 200, "io_thd_1;start_thread;ioThreadReadQueryFromClient": 100}
STACKS_BAD = {**STACKS_GOOD, "valkey-server;main;aeMain;processCommand;setCommand;slowHelper": 350}


def _result(run: dict, io: int, rps: float, stacks: dict, out: Path) -> None:
    data = copy.deepcopy(load_result(REPO / "results" / "reference" / "pi-cm4-blog-4-io2.json"))
    data["kind"] = "vkbench.result"
    data.pop("provenance")
    cell_id = f"valkey-unstable_standalone_io{io}"
    data["run"].update(run_id=run["run_id"], cell_id=cell_id, backend="native", machine_class=CLASS, trigger="schedule",
                       timestamp=run["ts"])
    data["subject"].update(version="unstable", server_version="9.1.2", commit=run["commit"],
                           build={"source": "source", "id": f"sha256:{run['commit'][:8]}", "detail": None})
    data["dimensions"].update(io_threads=io, client_threads=1, version="unstable", runner=CLASS, tool="valkey-benchmark",
                              requests=300000, repetitions=3)
    data["environment"].update(fingerprint_id="fp-lab", cores=2, cpu_model="Lab CPU", arch="x86_64")
    samples = [rps * f for f in (0.98, 1.0, 1.02)]
    data["summary"] = {cmd: {"rps": summarize(samples), "p99": summarize([1.0, 1.1, 1.2])} for cmd in ("SET", "GET")}
    data["repetitions"] = [{"index": i, "records": [{"command": c, "rps": v, "latency_ms": {"p99": 1.1}, "tool": "valkey-benchmark"}
                                                    for c in ("SET", "GET")]} for i, v in enumerate(samples)]
    flags = [{"code": "io-threads-oversubscribed", "severity": "warning", "message": "io-threads 2 on 1 server CPU(s)", "fix": None}] if io > 1 else []
    data["validity"] = {"valid": True, "flags": flags}
    raw = out / f"{cell_id}.raw"
    raw.mkdir(parents=True)
    text, _ = folded.render(stacks)
    (raw / "profile.folded").write_text(text)
    data["profile"] = {"status": "recorded", "file": f"{cell_id}.raw/profile.folded", "bytes": len(text), "samples": sum(stacks.values()),
                       "stacks": len(stacks), "truncated_samples": 0, "frequency_hz": 499, "perf_version": "6.1",
                       "symbols": {"binary": "valkey-server", "symtab": True, "debug_info": False, "resolved_share": 0.9}}
    write_result(out / f"{cell_id}.json", data)


def write_history(root: Path, work: Path) -> dict:
    for run, factor, stacks in ((GOOD, 1.0, STACKS_GOOD), (BAD, 0.8, STACKS_BAD)):
        out = work / run["run_id"]
        _result(run, 1, 500e3 * factor, stacks, out)
        _result(run, 2, 300e3 * factor, stacks, out)
        ingest(HistoryStore(root), [out])
    result = load_result(work / BAD["run_id"] / "valkey-unstable_standalone_io1.json")
    sid, _ = series_key(result, "SET")
    ref = lambda run: {"run_id": run["run_id"], "version": "unstable", "commit": run["commit"], "timestamp": run["ts"]}  # noqa: E731
    incident = {"id": "inc-slow-set", "title": f"SET, io-threads 1, {CLASS}: -20% between aaaaaaa and bbbbbbb",
                "status": "open", "direction": "regression", "metric": "rps", "magnitude": -0.2, "series_ids": [sid],
                "machine_class": CLASS, "good": ref(GOOD), "bad": ref(BAD), "annotation": None}
    detect = {"generated": "2026-11-02T03:00:00Z", "parameters": {}, "segments": {}, "noise": {},
              "change_points": [{"series_id": sid, "metric": "rps", "index": 1, "run_id": BAD["run_id"], "timestamp": BAD["ts"],
                                 "direction": "regression", "magnitude": -0.2, "p_value": 0.001, "good": ref(GOOD), "bad": ref(BAD),
                                 "incident_id": incident["id"]}],
              "incidents": [incident]}
    (root / "detect.json").write_text(json.dumps(detect))
    return {"sid": sid, "incident": incident["id"]}
