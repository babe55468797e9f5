#!/usr/bin/env python3
"""A/A nights: what the nightly pipeline does when nothing changed.

Runs the `nightly` preset narrowed to what one machine fits (one build, standalone and
cluster:3, SET and GET, the preset's repetitions) once per simulated night, each night with its
own date and run id, and after each night ingests and detects exactly as the nightly workflow
does (`vkbench ingest`, `vkbench detect`). The goal is 0 incidents. Then it reports, per series:

- the CV of the nightly median (night-to-night noise, what detection sees) and the robust CV
  detection itself estimates;
- the within-night CV of the repetitions;
- the minimum detectable effect (MDE): the smallest step that detection flags at the step's
  night in at least 90 % of placements, found by applying synthetic steps to the measured
  nights (every placement with enough nights on both sides);
- repetitions per night for a 3 % MDE, from the split of the nightly median's variance into
  a part that more repetitions shrink (within-night noise / r) and a part they cannot
  (night-to-night drift).

    tools/aa_nights.py --nights 30 --out aa-work          # about 20-40 minutes on 2 cores
    tools/aa_nights.py --nights 5 --requests 20000 --json # the suite's short version

Method and figures: docs/detection.md, "A/A nights". Minutes long: a tool, not a test
(tests/integration/test_aa_nights.py runs a 5-night version).
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import math
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "bench"))

from vkbench.detect.params import DetectionParams  # noqa: E402
from vkbench.detect.runner import run_detection  # noqa: E402
from vkbench.detect.segmented import detect_segmented  # noqa: E402
from vkbench.history.ingest import ingest  # noqa: E402
from vkbench.history.store import HistoryStore  # noqa: E402
from vkbench.matrix import load_matrix  # noqa: E402

#: The nightly preset narrowed: one build (no source build per night), the two topology kinds.
NARROWED_TOPOLOGIES = ("standalone", "cluster:3")
DEFAULT_VERSION = "valkey:9.1.2"
MDE_TARGET = 0.03
MDE_DETECTION_RATE = 0.9
#: Efficiency of the median against the mean for normal noise: var(median) ~ (pi/2) var / r.
MEDIAN_VARIANCE_FACTOR = math.pi / 2
STEP_GRID = [0.01, 0.015, 0.02, 0.025, 0.03, 0.04, 0.05, 0.06, 0.08, 0.10, 0.12, 0.15, 0.20, 0.25, 0.30, 0.40, 0.50]


def preset_repetitions() -> int:
    return int(load_matrix("nightly").defaults["repetitions"])


def night_date(start: dt.date, night: int) -> dt.datetime:
    """Nightly schedule time of a simulated night (02:17 UTC, as nightly.yml's cron)."""
    return dt.datetime.combine(start + dt.timedelta(days=night), dt.time(2, 17), tzinfo=dt.timezone.utc)


def client_threads_here(preset_threads: int, cores: int | None = None) -> int:
    """The preset's client threads, narrowed to what this machine fits beside the servers.

    The nightly preset is sized for a runner class whose client has its own cores (4 threads on a
    Pi CM4 client). On one machine the client shares the cores with the servers: more threads than
    half the cores and the client, not the server, limits throughput, every night is flagged
    client-bound (invalid), detection ignores it and "0 incidents" would prove nothing."""
    cores = cores or os.cpu_count() or 1
    return max(1, min(preset_threads, cores // 2))


def narrowed_matrix(path: Path, *, version: str, requests: int | None, repetitions: int | None,
                    keyspace: int | None) -> Path:
    """The nightly preset as a matrix file, narrowed: its defaults (clients, tests, repetitions)
    kept, client threads fitted to this machine (client_threads_here), one build, standalone and
    cluster:3, io-threads 1, pipeline 16."""
    preset = load_matrix("nightly")
    defaults = dict(preset.defaults)
    for key, value in (("requests", requests), ("repetitions", repetitions), ("keyspace", keyspace)):
        if value:
            defaults[key] = value
    defaults["warmup"] = min(int(defaults.get("warmup", 0)), int(defaults["requests"]) // 10)
    defaults["client_threads"] = client_threads_here(int(defaults.get("client_threads") or 1))
    matrix = {"name": "nightly-aa", "description": "the nightly preset, narrowed for A/A nights (tools/aa_nights.py)",
              "defaults": defaults,
              "groups": [{"server": version, "topology": list(NARROWED_TOPOLOGIES), "io_threads": 1, "pipeline": 16}]}
    path.write_text(json.dumps(matrix, indent=1))   # JSON is YAML
    return path


def run_night(out: Path, when: dt.datetime, *, matrix: Path, timeout: float = 1800) -> list[Path]:
    """One night: `vkbench run MATRIX` into ``out``; its results dated ``when``."""
    run_id = f"aa-{when:%Y%m%dT%H%M}"
    argv = [sys.executable, "-m", "vkbench", "run", str(matrix), "--out", str(out), "--run-id", run_id,
            "--trigger", "schedule", "--json"]
    done = subprocess.run(argv, capture_output=True, text=True, timeout=timeout,
                          env={**os.environ, "PYTHONPATH": str(REPO / "bench")})
    if done.returncode != 0:
        raise RuntimeError(f"night {when:%Y-%m-%d}: vkbench run failed ({done.returncode}):\n{done.stderr[-3000:]}")
    paths = sorted(out.glob("*.json"))
    for path in paths:
        redate(path, when, run_id)
    return paths


def redate(path: Path, when: dt.datetime, run_id: str) -> None:
    """Give a result the simulated night's start time (atomically: write beside, rename)."""
    result = json.loads(path.read_text())
    result["run"]["timestamp"] = when.isoformat().replace("+00:00", "Z")
    result["run"]["run_id"] = run_id
    tmp = path.with_suffix(".json.tmp")
    tmp.write_text(json.dumps(result, indent=1))
    tmp.replace(path)


def ingest_and_detect(history: Path, results: Path) -> dict:
    """What the nightly's publish job does: ingest the night, detect over the whole history."""
    ingest(HistoryStore(history), [results])
    return run_detection(history, annotations=None, write=True)


def run_nights(work: Path, nights: int, *, start: dt.date, version: str, requests: int | None,
               repetitions: int | None, keyspace: int | None = None, progress=print) -> dict:
    history = work / "history"
    matrix = narrowed_matrix(work / "nightly-aa.yaml", version=version, requests=requests,
                             repetitions=repetitions, keyspace=keyspace)
    incidents_seen: dict[str, dict] = {}
    per_night = []
    for night in range(nights):
        when = night_date(start, night)
        out = work / "nights" / f"{when:%Y-%m-%d}"
        run_night(out, when, matrix=matrix)
        doc = ingest_and_detect(history, out)
        for incident in doc["incidents"]:
            incidents_seen.setdefault(incident["id"], incident)
        per_night.append({"date": f"{when:%Y-%m-%d}", "incidents_open": len(doc["incidents"]),
                          "change_points": len(doc["change_points"])})
        progress(f"night {night + 1}/{nights} {when:%Y-%m-%d}: {len(doc['change_points'])} change points, "
                 f"{len(doc['incidents'])} incidents")
    return {"history": str(history), "nights": per_night, "incidents": list(incidents_seen.values())}


def alerts(incident: dict) -> bool:
    """What `vkbench alert` files an issue for and `--fail-on regression` fails on."""
    return (incident["direction"] == "regression" and incident["status"] == "open" and not incident["silenced"]
            and not incident.get("same_build"))


# -- analysis ---------------------------------------------------------------------------------


def series_points(history: Path, metric: str = "rps") -> dict[str, dict]:
    """series id -> {name, values (nightly medians), samples (repetitions), valid}."""
    store = HistoryStore(history)
    out = {}
    for sid, entry in store.index()["series"].items():
        points = store.read_series(sid)
        stats = [p.get("metrics", {}).get(metric) or {} for p in points]
        out[sid] = {
            "dims": entry["dims"],
            "values": [s.get("median") for s in stats],
            "samples": [s.get("samples") for s in stats],
            "valid": [bool(p.get("valid", True)) for p in points],
        }
    return out


def cv(values: list[float]) -> float | None:
    values = [v for v in values if v]
    if len(values) < 2:
        return None
    return statistics.stdev(values) / statistics.fmean(values)


def within_night_cv(samples: list[list[float] | None]) -> float | None:
    """Root mean square of each night's repetition CV."""
    cvs = [cv(s) for s in samples if s and len(s) >= 2]
    cvs = [c for c in cvs if c is not None]
    return math.sqrt(statistics.fmean(c * c for c in cvs)) if cvs else None


def detection_rate(values, samples, valid, step: float, params: DetectionParams) -> float | None:
    """Share of step placements detection flags as a regression at the step's night (+-1).

    The step multiplies every later night (its median and repetitions) by 1 - step."""
    n = len(values)
    placements = range(params.min_before, n - params.min_after + 1)
    if not placements:
        return None
    hits = 0
    for k in placements:
        scale = [1.0] * k + [1.0 - step] * (n - k)
        v = [x * s if x else x for x, s in zip(values, scale)]
        smp = [[y * s for y in reps] if reps else reps for reps, s in zip(samples, scale)]
        found = detect_segmented(v, samples=smp, valid=valid, bigger_is_better=True, params=params)
        if any(c.direction == "regression" and abs(c.index - k) <= 1 for c in found.changes):
            hits += 1
    return hits / len(placements)


def mde(values, samples, valid, params: DetectionParams) -> float | None:
    """Smallest step of STEP_GRID detected in >= MDE_DETECTION_RATE of placements."""
    for step in STEP_GRID:
        rate = detection_rate(values, samples, valid, step, params)
        if rate is None:
            return None
        if rate >= MDE_DETECTION_RATE:
            return step
    return None


def repetitions_for(target: float, *, mde_now: float, cv_night: float, cv_within: float, reps_now: int,
                    max_reps: int = 50) -> int | None:
    """Repetitions per night at which the MDE would reach ``target``.

    MDE scales with the nightly median's noise: MDE(r) = mde_now * sd(r) / sd(reps_now), with
    sd(r)^2 = between + c * within^2 / r (c: the median's variance factor) and ``between`` the
    part of the measured night-to-night variance repetitions do not explain. None: no number
    of repetitions gets there (night-to-night drift alone is too large)."""
    within_now = MEDIAN_VARIANCE_FACTOR * cv_within ** 2 / reps_now
    between = max(0.0, cv_night ** 2 - within_now)
    sd_now = math.sqrt(between + within_now)
    if sd_now == 0:
        return 1
    for r in range(1, max_reps + 1):
        sd_r = math.sqrt(between + MEDIAN_VARIANCE_FACTOR * cv_within ** 2 / r)
        if mde_now * sd_r / sd_now <= target:
            return r
    return None


def balance_repetitions(cv_night: float, cv_within: float, reps_now: int) -> int | None:
    """Repetitions at which within-night noise stops dominating the nightly median's variance
    ((pi/2) within^2 / r <= between): more than that buys little. None: no between part seen."""
    between = cv_night ** 2 - MEDIAN_VARIANCE_FACTOR * cv_within ** 2 / reps_now
    if between <= 0:
        return None
    return max(1, math.ceil(MEDIAN_VARIANCE_FACTOR * cv_within ** 2 / between))


def recommended_repetitions(rows: list[dict], low: int = 3, high: int = 10) -> int | None:
    """What the nightly preset should use: the repetitions for a 3 % MDE on every series when
    that is reachable, else the median balance point (more repetitions cannot fix
    night-to-night noise), within [low, high]."""
    need = [r["repetitions_for_3pct"] for r in rows]
    if need and all(n is not None for n in need):
        return min(high, max(low, max(need)))
    balance = [r["repetitions_balance"] for r in rows if r["repetitions_balance"] is not None]
    if not balance:
        return None
    return min(high, max(low, math.ceil(statistics.median(balance))))


def analyse(history: Path, params: DetectionParams | None = None, reps_now: int | None = None) -> list[dict]:
    params = params or DetectionParams()
    reps_now = reps_now or preset_repetitions()
    rows = []
    for sid, s in sorted(series_points(history).items()):
        values = [v if ok else None for v, ok in zip(s["values"], s["valid"])]
        cv_night = cv(values)
        cv_within = within_night_cv(s["samples"])
        found = detect_segmented(values, samples=s["samples"], valid=s["valid"], params=params)
        mde_now = mde(s["values"], s["samples"], s["valid"], params)
        need = None
        if mde_now and cv_night and cv_within:
            need = repetitions_for(MDE_TARGET, mde_now=mde_now, cv_night=cv_night, cv_within=cv_within,
                                   reps_now=reps_now)
        dims = s["dims"]
        rows.append({
            "series": f"{dims.get('topology')} {dims.get('command')}",
            "series_id": sid,
            "nights": len(values),
            "valid_nights": sum(s["valid"]),
            "median_rps": statistics.median([v for v in values if v]) if any(values) else None,
            "cv_nightly_median": None if cv_night is None else round(cv_night, 4),
            "robust_cv": round(float(found.cv), 4),
            "cv_within_night": None if cv_within is None else round(cv_within, 4),
            "mde": mde_now,
            "repetitions_for_3pct": need,
            "repetitions_balance": balance_repetitions(cv_night, cv_within, reps_now) if cv_night and cv_within else None,
        })
    return rows


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="A/A nights: the nightly pipeline on unchanged code.")
    parser.add_argument("--nights", type=int, default=30)
    parser.add_argument("--start", type=dt.date.fromisoformat, default=dt.date(2026, 1, 1), help="first night's date")
    parser.add_argument("--version", default=DEFAULT_VERSION, help="the one build every night runs")
    parser.add_argument("--requests", type=int, help="requests per repetition (default: the preset's)")
    parser.add_argument("--repetitions", type=int, help="repetitions per cell (default: the preset's)")
    parser.add_argument("--keyspace", type=int, help="keys preloaded and used (default: the preset's)")
    parser.add_argument("--out", type=Path, help="work directory (default: a new temporary one)")
    parser.add_argument("--json", action="store_true", help="print the report as JSON")
    parser.add_argument("--analyse-only", action="store_true", help="only re-analyse the nights already in --out")
    args = parser.parse_args(argv)
    work = args.out or Path(tempfile.mkdtemp(prefix="vkbench-aa-"))
    work.mkdir(parents=True, exist_ok=True)
    log = (lambda msg: print(msg, file=sys.stderr)) if args.json else print
    if args.analyse_only:
        doc = run_detection(work / "history", annotations=None, write=False)
        nights = {"history": str(work / "history"), "incidents": doc["incidents"]}
        args.nights = len(list((work / "nights").iterdir()))
    else:
        nights = run_nights(work, args.nights, start=args.start, version=args.version, requests=args.requests,
                            repetitions=args.repetitions, keyspace=args.keyspace, progress=log)
    rows = analyse(Path(nights["history"]), reps_now=args.repetitions or preset_repetitions())
    report = {"work": str(work), "nights": args.nights, "version": args.version,
              "repetitions": args.repetitions or preset_repetitions(), "requests": args.requests,
              "keyspace": args.keyspace,
              "incidents": len(nights["incidents"]), "incident_titles": [i.get("title") for i in nights["incidents"]],
              # Every night runs one build, so every incident has the same build on both sides and
              # alerts nobody; "incidents" is the noise floor a changing build meets (docs/detection.md).
              "alerting_incidents": sum(1 for i in nights["incidents"] if alerts(i)),
              "series": rows, "recommended_repetitions": recommended_repetitions(rows)}
    (work / "aa-report.json").write_text(json.dumps(report, indent=1))
    if args.json:
        print(json.dumps(report, indent=1))
    else:
        print(f"\n{args.nights} nights of {args.version}, {report['repetitions']} repetitions: "
              f"{report['incidents']} incidents, {report['alerting_incidents']} alerting")
        for name in report["incident_titles"]:
            print(f"  {name}")
        print(f"{'series':<22} {'rps':>10} {'CV night':>9} {'robust':>7} {'CV reps':>8} {'MDE':>6} {'reps@3%':>8} "
              f"{'balance':>8}")
        for r in rows:
            fmt = lambda x, p="{:.1%}": "-" if x is None else p.format(x)  # noqa: E731
            print(f"{r['series']:<22} {fmt(r['median_rps'], '{:,.0f}'):>10} {fmt(r['cv_nightly_median']):>9} "
                  f"{fmt(r['robust_cv']):>7} {fmt(r['cv_within_night']):>8} {fmt(r['mde'], '{:.1%}'):>6} "
                  f"{fmt(r['repetitions_for_3pct'], '{}'):>8} {fmt(r['repetitions_balance'], '{}'):>8}")
        print(f"recommended nightly repetitions: {report['recommended_repetitions']}")
        invalid = [r for r in rows if r["valid_nights"] < r["nights"]]
        for r in invalid:
            print(f"warning: {r['series']}: only {r['valid_nights']} of {r['nights']} nights are valid; detection "
                  "ignores the others, so their 0 incidents prove nothing (see the results' validity flags)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
