"""One series of the history -> one compact, columnar file the browser loads on demand.

``data/series/<sid>.json`` (what every chart needs, plus the headline metrics rps and p50)::

    {"id": sid, "n": 3, "t0": epoch seconds of the first point, "dt": [seconds since the previous point],
     "ok": [1|0], "fl": [flag-set code], "flags": [["client-bound"], ...],
     "c": [commit code], "commits": ["a1b2c3d4e5f6" (12 hex)], "v": [server version code], "versions": [...],
     "fp": [fingerprint code], "fps": [{"id", "label", "detail"}],
     "runs": [url suffix], "run_prefix": "https://github.com/o/r/actions/runs/",
     "m": {"rps": {"med": [...], "lo": [...], "hi": [...]}, "p50": {...}},
     "more": ["avg", "p99", ...]  (metrics kept in the latency file),
     "noise": {"rps": 0.03}, "cp": [{"metric", "i", "dir", "mag", "incident"}],
     "notes": [{"i", "text"}], "seg": [0, 30]}

``data/series/<sid>.latency.json``: ``{"m": {...}}`` with the other latency metrics (avg, min,
p95, p99, p999, max), loaded only when the explorer shows one of them: most views need rps
and p50 only, and the metric columns are most of a series' bytes.

Columns are parallel arrays in (timestamp, run_id) order; uPlot draws straight from them.
Commits are cut to 12 hex digits (unique in any real repository; GitHub resolves them in
commit links) because a full sha per point would be a quarter of the file.
"""

from __future__ import annotations

import statistics
from typing import Any

from .compact import BOUND_DIGITS, Dictionary, common_prefix, epoch, num

METRICS = ("rps", "avg", "min", "p50", "p95", "p99", "p999", "max")
HEADLINE_METRICS = ("rps", "p50")
COMMIT_DIGITS = 12
_ENV_LABEL_FIELDS = ("cpu_model", "cores", "arch", "os", "kernel", "virtualization", "container_runtime")
_ENV_DETAIL_FIELDS = (
    "cpu_model", "cores", "memory_bytes", "arch", "board_model", "os", "kernel", "cpufreq_governor",
    "thp", "throttled", "virtualization", "container_runtime", "image",
)


def env_label(fingerprint_id: str, env: dict | None) -> dict:
    """A short tooltip label and a longer detail text for one environment fingerprint."""
    if not env:
        return {"id": fingerprint_id, "label": f"environment {fingerprint_id[:8]}", "detail": ""}
    env = env.get("environment", env)  # a fingerprint file may wrap the environment object
    parts = []
    if env.get("cpu_model"):
        parts.append(str(env["cpu_model"]))
    if env.get("cores"):
        parts.append(f"{env['cores']} cores")
    for key in ("arch", "os", "kernel", "virtualization", "container_runtime"):
        if env.get(key):
            parts.append(str(env[key]))
    detail = "\n".join(f"{k}: {env[k]}" for k in _ENV_DETAIL_FIELDS if env.get(k) not in (None, ""))
    return {"id": fingerprint_id, "label": " · ".join(parts) or f"environment {fingerprint_id[:8]}", "detail": detail}


def _annotation_text(annotation: Any) -> str | None:
    if not annotation:
        return None
    if isinstance(annotation, str):
        return annotation
    if isinstance(annotation, dict):
        for key in ("text", "note", "title", "message"):
            if isinstance(annotation.get(key), str):
                return annotation[key]
    return str(annotation)


def _point_index(points_by_run: dict[str, int], ref: dict | None, fallback: Any, n: int) -> int | None:
    """Where a detection entry points in this series: by run_id first (robust to re-sorting),
    else the index detect recorded."""
    if ref and ref.get("run_id") in points_by_run:
        return points_by_run[ref["run_id"]]
    if isinstance(fallback, int) and 0 <= fallback < n:
        return fallback
    return None


def build_series(sid: str, points: list[dict], detect: dict, env_of) -> tuple[dict, dict]:
    """The compact files of one series: (main file, latency file).
    ``env_of(fingerprint_id)`` returns the environment dict of a fingerprint."""
    n = len(points)
    flagsets, commits, versions, fps = Dictionary(), Dictionary(), Dictionary(), Dictionary()
    t, ok, fl, c, v, fp, urls = [], [], [], [], [], [], []
    metrics_present = [m for m in METRICS if any(m in (p.get("metrics") or {}) for p in points)]
    cols: dict[str, dict[str, list]] = {m: {"med": [], "lo": [], "hi": []} for m in metrics_present}
    cvs: dict[str, list[float]] = {m: [] for m in metrics_present}
    points_by_run: dict[str, int] = {}
    for i, point in enumerate(points):
        points_by_run.setdefault(point.get("run_id") or "", i)
        t.append(epoch(point.get("timestamp")))
        ok.append(1 if point.get("valid", True) else 0)
        fl.append(flagsets.code(sorted(point.get("flags") or [])))
        c.append(commits.code((point.get("commit") or "")[:COMMIT_DIGITS]))
        v.append(versions.code(point.get("server_version") or point.get("version") or ""))
        fp.append(fps.code(point.get("fingerprint_id") or ""))
        urls.append(point.get("workflow_run_url") or "")
        stats = point.get("metrics") or {}
        for m in metrics_present:
            s = stats.get(m) or {}
            cols[m]["med"].append(num(s.get("median")))
            cols[m]["lo"].append(num(s.get("ci_low"), BOUND_DIGITS))
            cols[m]["hi"].append(num(s.get("ci_high"), BOUND_DIGITS))
            if isinstance(s.get("cv"), (int, float)):
                cvs[m].append(float(s["cv"]))

    # Noise band: detection's per-series CV when it ran, else the median CV of the points.
    detect_noise = (detect.get("noise") or {}).get(sid) or {}
    noise = {}
    for m in metrics_present:
        cv = (detect_noise.get(m) or {}).get("cv")
        if not isinstance(cv, (int, float)) and cvs[m]:
            cv = statistics.median(cvs[m])
        if isinstance(cv, (int, float)):
            noise[m] = num(cv)

    change_points = []
    for cp in detect.get("change_points") or []:
        if cp.get("series_id") != sid:
            continue
        i = _point_index(points_by_run, cp, cp.get("index"), n)
        if i is not None:
            change_points.append({
                "metric": cp.get("metric"), "i": i, "dir": cp.get("direction"),
                "mag": num(cp.get("magnitude")), "incident": cp.get("incident_id"),
            })

    notes = []
    for incident in detect.get("incidents") or []:
        text = _annotation_text(incident.get("annotation"))
        if text and sid in (incident.get("series_ids") or []):
            i = _point_index(points_by_run, incident.get("bad"), None, n)
            if i is not None:
                notes.append({"i": i, "text": text, "incident": incident.get("id")})

    seg_starts = [s.get("start_index") for s in (detect.get("segments") or {}).get(sid) or []]
    if not seg_starts:  # derive fingerprint segments when detect has not run
        seg_starts = [i for i in range(n) if i == 0 or fp[i] != fp[i - 1]]

    prefix = common_prefix(urls)
    prefix = prefix[: prefix.rfind("/") + 1]  # whole path segments: ".../runs/" not ".../runs/90"
    t0 = next((x for x in t if x is not None), 0)
    dt, prev = [], t0
    for x in t:  # missing timestamps repeat the previous one rather than break the axis
        x = prev if x is None else x
        dt.append(x - prev)
        prev = x
    main = {
        "id": sid,
        "n": n,
        "t0": t0,
        "dt": dt,
        "ok": ok,
        "fl": fl,
        "flags": flagsets.values,
        "c": c,
        "commits": commits.values,
        "v": v,
        "versions": versions.values,
        "fp": fp,
        "fps": [env_label(f, env_of(f) if f else None) for f in fps.values],
        "run_prefix": prefix,
        "runs": [u[len(prefix):] for u in urls],
        "m": {m: cols[m] for m in metrics_present if m in HEADLINE_METRICS},
        "more": [m for m in metrics_present if m not in HEADLINE_METRICS],
        "noise": noise,
        "cp": change_points,
        "notes": notes,
        "seg": [s for s in seg_starts if isinstance(s, int)],
    }
    latency = {"id": sid, "m": {m: cols[m] for m in main["more"]}}
    return main, latency


def last_point(points: list[dict]) -> dict | None:
    """The newest point, as the index keeps it: time, validity and every metric's median/CI."""
    if not points:
        return None
    p = points[-1]
    stats = p.get("metrics") or {}
    return {
        "t": epoch(p.get("timestamp")),
        "ok": 1 if p.get("valid", True) else 0,
        "sv": p.get("server_version") or p.get("version"),
        "m": {m: [num(s.get("median")), num(s.get("ci_low")), num(s.get("ci_high"))]
              for m in METRICS if isinstance((s := stats.get(m)), dict)},
    }
