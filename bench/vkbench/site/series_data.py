"""One series of the history -> one compact, columnar file the browser loads on demand.

``data/series/<sid>.json`` (what every chart needs, plus the headline metrics rps and p50)::

    {"id": sid, "n": 3, "t0": epoch seconds of the first point, "dt": [seconds since the previous point],
     "ok": [1|0], "fl": [flag-set code], "flags": [["client-bound"], ...],
     "c": [commit code], "commits": ["a1b2c3d4e5f6" (12 hex)], "v": [server version code], "versions": [...],
     "fp": [fingerprint code], "fps": [{"id", "label", "detail"}],
     "runs": [url suffix], "run_prefix": "https://github.com/o/r/actions/runs/",
     "r": [repository code], "repos": ["https://github.com/o/valkey/commit/" | "" | null],
     "m": {"rps": {"med": [...], "lo": [...], "hi": [...]}, "p50": {...}},   (+ instructions_per_op, bytes_per_key)
     "more": ["avg", "p99", ...]  (metrics kept in the latency file),
     "noise": {"rps": 0.03}, "cp": [{"metric", "i", "dir", "mag", "incident"}],
     "notes": [{"i", "text"}], "seg": [0, 30],
     "bounds": [{"i": 30, "cut": 1, "kind": "method", "text": "method changed: callgrind-abc → callgrind-def"}],
     "im": [method code], "methods": ["callgrind-abc", ...]   (only when some point has a count)}

``data/series/<sid>.latency.json``: ``{"m": {...}}`` with the other latency metrics (avg, min,
p95, p99, p999, max), loaded only when the explorer shows one of them: most views need rps
and p50 only, and the metric columns are most of a series' bytes.

``r``/``repos`` (only when some point names its repository, i.e. a source build): where each
point's commit links to, as the commit-URL prefix of the repository it was built from (GitHub or
GitLab), ``""`` for a repository without commit pages (a file:// mirror: plain text), ``null`` for
a point that names none (a release: the engine's own repository, ``commit_repos`` in index.json).

``seg``: where each segment starts (detection's segments: a new environment fingerprint, a new
instruction-count method, a reset-baseline annotation); the noise band's regimes split there.
``bounds``: every boundary after the first point, with what changed (:func:`segment_bounds`).
``cut`` says the points on either side were measured differently (another environment or
method) and are not comparable: the chart breaks its line there. A reset-baseline boundary
(same environment and method) keeps the line and only carries its marker.

Columns are parallel arrays in (timestamp, run_id) order; uPlot draws straight from them.
Commits are cut to 12 hex digits (unique in any real repository; GitHub resolves them in
commit links) because a full sha per point would be a quarter of the file.
"""

from __future__ import annotations

import statistics
from typing import Any

from ..repolinks import commit_prefix
from .compact import BOUND_DIGITS, Dictionary, common_prefix, epoch, num

#: The counted metrics (instructions per operation, bytes per key: docs/instructions.md) have their
#: own charts; they are in the main file (a counted series has little else). instructions_per_op
#: is the code count (without libc's alignment-sensitive string routines) where the result has
#: it; instructions_per_op_total, the total, is charted among the further metrics.
COUNT_METRICS = ("instructions_per_op", "instructions_per_op_total", "bytes_per_key")
METRICS = ("rps", "avg", "min", "p50", "p95", "p99", "p999", "max") + COUNT_METRICS
HEADLINE_METRICS = ("rps", "p50", "instructions_per_op", "bytes_per_key")
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


def repository_link_prefix(repository: str | None) -> str | None:
    """Where a commit of ``repository`` links to: its commit-URL prefix on GitHub or GitLab,
    ``""`` (plain text) for any other URL, None when the point names no repository."""
    if not repository:
        return None
    return commit_prefix(repository) or ""


def with_commit_links(incidents: list[dict]) -> list[dict]:
    """The incidents with ``commit_url`` on each end (good, bad) that names its repository: the
    commit's page there, or ``""`` (plain text) when that repository has no commit pages. Ends
    without a repository (releases) keep linking to the engine's repository. A bisect's culprit
    (``bisect.culprit``) gets its ``culprit_url`` the same way, in the repository bisected."""
    out = []
    for incident in incidents:
        incident = dict(incident)
        for end in ("good", "bad"):
            ref = incident.get(end)
            if isinstance(ref, dict) and ref.get("repository") and ref.get("commit"):
                prefix = repository_link_prefix(ref["repository"])
                incident[end] = {**ref, "commit_url": prefix + ref["commit"] if prefix else ""}
        bisect = incident.get("bisect")
        if isinstance(bisect, dict) and bisect.get("culprit"):
            prefix = repository_link_prefix(bisect.get("repository"))
            incident["bisect"] = {**bisect, "culprit_url": prefix + bisect["culprit"] if prefix else ""}
        out.append(incident)
    return out


def _annotation_text(annotation: Any) -> str | None:
    if not annotation:
        return None
    if isinstance(annotation, str):
        return annotation
    if isinstance(annotation, dict):
        # results/annotations.yaml's entries ({action, reason}); detection's own same-build note
        # ({automatic, reason}) says everything in its reason.
        if isinstance(annotation.get("reason"), str):
            if annotation.get("automatic") or not isinstance(annotation.get("action"), str):
                return annotation["reason"]
            return f"{annotation['action']}: {annotation['reason']}"
        for key in ("text", "note", "title", "message"):
            if isinstance(annotation.get(key), str):
                return annotation[key]
    return str(annotation)


#: The noise band's fallback (when detection has no CV for a metric): the median CV of the
#: series' newest points. Newest, because the band is drawn for the current regime too, and a
#: bounded tail lets an incremental build carry it forward without re-reading the history.
NOISE_TAIL = 30


def series_detect(detect: dict) -> dict[str, dict]:
    """detect.json grouped by series: what :func:`assemble_series` needs of it, read once."""
    out: dict[str, dict] = {}

    def of(sid: str) -> dict:
        return out.setdefault(sid, {"cps": [], "incidents": []})

    for cp in detect.get("change_points") or []:
        of(cp.get("series_id")).get("cps").append(cp)
    for incident in detect.get("incidents") or []:
        if _annotation_text(incident.get("annotation")):
            for sid in incident.get("series_ids") or []:
                of(sid)["incidents"].append(incident)
    return out


class Columns:
    """A series as per-point columns in (timestamp, run_id) order, before assembly.
    :meth:`append` adds points; :meth:`from_files` recovers the columns of a built series file
    (its values are already rounded, and rounding is idempotent, so re-assembling them gives
    the same bytes)."""

    def __init__(self) -> None:
        self.n = 0
        self.t: list[int | None] = []
        self.ok: list[int] = []
        self.fl: list[int] = []
        self.c: list[int] = []
        self.v: list[int] = []
        self.fp: list[int] = []
        self.r: list[int] = []
        self.im: list[int] = []  # instruction-count method (code; "" = no count)
        self.urls: list[str] = []
        self.flagsets, self.commits, self.versions, self.fps = Dictionary(), Dictionary(), Dictionary(), Dictionary()
        self.repos = Dictionary()  # commit-link prefixes (see repository_link_prefix)
        self.methods = Dictionary()
        self.cols: dict[str, dict[str, list]] = {}
        self.cv_tail: dict[str, list] = {}
        self.run_ids: dict[str, int] | None = {}  # run_id -> first index; None when unknown (from files)

    def _ensure_metric(self, m: str) -> None:
        if m not in self.cols:
            self.cols[m] = {k: [None] * self.n for k in ("med", "lo", "hi")}
            self.cv_tail.setdefault(m, [])

    def append(self, points: list[dict]) -> None:
        for m in METRICS:
            if any(m in (p.get("metrics") or {}) for p in points):
                self._ensure_metric(m)
        present = [m for m in METRICS if m in self.cols]
        for point in points:
            if self.run_ids is not None:
                self.run_ids.setdefault(point.get("run_id") or "", self.n)
            self.n += 1
            self.t.append(epoch(point.get("timestamp")))
            self.ok.append(1 if point.get("valid", True) else 0)
            self.fl.append(self.flagsets.code(sorted(point.get("flags") or [])))
            self.c.append(self.commits.code((point.get("commit") or "")[:COMMIT_DIGITS]))
            self.v.append(self.versions.code(point.get("server_version") or point.get("version") or ""))
            self.fp.append(self.fps.code(point.get("fingerprint_id") or ""))
            self.r.append(self.repos.code(repository_link_prefix(point.get("repository"))))
            self.im.append(self.methods.code(point.get("instructions_method") or ""))
            self.urls.append(point.get("workflow_run_url") or "")
            stats = point.get("metrics") or {}
            for m in present:
                s = stats.get(m) or {}
                col = self.cols[m]
                col["med"].append(num(s.get("median")))
                col["lo"].append(num(s.get("ci_low"), BOUND_DIGITS))
                col["hi"].append(num(s.get("ci_high"), BOUND_DIGITS))
                if isinstance(s.get("cv"), (int, float)) and not isinstance(s.get("cv"), bool):
                    self.cv_tail[m].append(num(s["cv"]))
        for m in present:
            del self.cv_tail[m][:-NOISE_TAIL]

    @classmethod
    def from_files(cls, main: dict, latency: dict | None, cv_tail: dict[str, list]) -> "Columns":
        self = cls()
        self.run_ids = None
        self.n = main["n"]
        t, acc = [], main["t0"]
        for d in main["dt"]:
            acc += d
            t.append(acc)
        self.t = t
        self.ok, self.fl, self.c, self.v, self.fp = main["ok"], main["fl"], main["c"], main["v"], main["fp"]
        # A file without repositories is one whose points all name none (code 0 -> null).
        self.r = main.get("r") or [0] * self.n
        self.im = main.get("im") or [0] * self.n   # a file without methods: no point has a count
        for dictionary, values in ((self.flagsets, main["flags"]), (self.commits, main["commits"]),
                                   (self.versions, main["versions"]), (self.fps, [f["id"] for f in main["fps"]]),
                                   (self.repos, main.get("repos") or [None]),
                                   (self.methods, main.get("methods") or [""])):
            for value in values:
                dictionary.code(value)
        prefix = main["run_prefix"]
        self.urls = [prefix + u if u else "" for u in main["runs"]]
        metrics = dict(main["m"])
        metrics.update((latency or {}).get("m") or {})
        self.cols = {m: metrics[m] for m in METRICS if m in metrics}
        self.cv_tail = {m: list(cv_tail.get(m) or []) for m in self.cols}
        return self


def _env_change(old_id: str, new_id: str, env_of) -> str:
    """What changed between two environment fingerprints, field by field where both are known
    (``kernel 6.6.31 → 6.6.51``), else the fingerprint ids."""
    old = env_of(old_id) if old_id else None
    new = env_of(new_id) if new_id else None
    if old and new:
        old, new = old.get("environment", old), new.get("environment", new)
        changed = [f"{k} {old.get(k) if old.get(k) not in (None, '') else '?'} → {new.get(k) if new.get(k) not in (None, '') else '?'}"
                   for k in _ENV_DETAIL_FIELDS if old.get(k) != new.get(k)]
        if changed:
            return "environment changed: " + ", ".join(changed)
    return f"environment changed: {old_id[:12] or 'unknown'} → {new_id[:12] or 'unknown'}"


def segment_bounds(cols: Columns, seg_starts: list[int], env_of) -> list[dict]:
    """Every segment boundary after the first point, with what changed from the point before.

    ``{"i", "cut", "kind", "text"}``: ``kind`` ``env`` (another fingerprint), ``method`` (another
    instruction-count method; both together are ``env``, the larger change) or ``reset`` (a
    reset-baseline annotation, nothing measured differently). ``cut`` 1 when the points on
    either side are not comparable, so the chart must not join them; 0 for a reset."""
    out = []
    fps, methods = cols.fps.values, cols.methods.values
    for i in seg_starts:
        if not 0 < i < cols.n:
            continue
        old_fp, new_fp = fps[cols.fp[i - 1]], fps[cols.fp[i]]
        old_m, new_m = methods[cols.im[i - 1]], methods[cols.im[i]]
        what = []
        if old_fp != new_fp:
            what.append(_env_change(old_fp, new_fp, env_of))
        if old_m != new_m:
            what.append(f"method changed: {old_m or 'none'} → {new_m or 'none'}")
        if what:
            kind = "env" if old_fp != new_fp else "method"
            out.append({"i": i, "cut": 1, "kind": kind, "text": "; ".join(what)})
        else:
            out.append({"i": i, "cut": 0, "kind": "reset", "text": "baseline reset (annotation): same environment and method"})
    return out


def assemble_series(sid: str, cols: Columns, sdetect: dict, noise_of: dict, seg_of: list, env_of,
                    reuse: tuple[list, list] | None = None) -> tuple[dict, dict, bool]:
    """The compact files of one series from its columns: (main file, latency file, refs_ok).

    ``sdetect``: this series' part of :func:`series_detect`; ``noise_of``/``seg_of``: detect.json's
    noise and segments of the series; ``env_of(fingerprint_id)``: the environment of a
    fingerprint. ``reuse``: the change points and notes of the previous build, when only points
    were appended and every detection reference resolved by run id (their indexes stay put).
    ``refs_ok`` says whether every detection reference resolved by run id."""
    n = cols.n
    present = [m for m in METRICS if m in cols.cols]
    noise = {}
    for m in present:
        cv = (noise_of.get(m) or {}).get("cv")
        if not isinstance(cv, (int, float)) and cols.cv_tail.get(m):
            cv = statistics.median(cols.cv_tail[m])
        if isinstance(cv, (int, float)):
            noise[m] = num(cv)

    refs_ok = True
    if reuse is not None:
        change_points, notes = reuse
    else:
        runs = cols.run_ids or {}

        def index_of(ref, fallback):
            nonlocal refs_ok
            if ref and ref.get("run_id") in runs:
                return runs[ref["run_id"]]
            refs_ok = False
            return fallback if isinstance(fallback, int) and 0 <= fallback < n else None

        change_points = []
        for cp in sdetect.get("cps") or []:
            i = index_of(cp, cp.get("index"))
            if i is not None:
                change_points.append({
                    "metric": cp.get("metric"), "i": i, "dir": cp.get("direction"),
                    "mag": num(cp.get("magnitude")), "incident": cp.get("incident_id"),
                })
        notes = []
        for incident in sdetect.get("incidents") or []:
            i = index_of(incident.get("bad"), None)
            if i is not None:
                notes.append({"i": i, "text": _annotation_text(incident.get("annotation")), "incident": incident.get("id")})

    seg_starts = [s.get("start_index") for s in seg_of or []]
    seg_starts = sorted({s for s in seg_starts if isinstance(s, int) and 0 <= s < n})
    if not seg_starts:  # derive the segments as detection would (segment_key) when it has not run
        fp, im = cols.fp, cols.im
        seg_starts = [i for i in range(n) if i == 0 or fp[i] != fp[i - 1] or im[i] != im[i - 1]]

    urls = cols.urls
    prefix = common_prefix(urls)
    prefix = prefix[: prefix.rfind("/") + 1]  # whole path segments: ".../runs/" not ".../runs/90"
    t0 = next((x for x in cols.t if x is not None), 0)
    dt, prev = [], t0
    for x in cols.t:  # missing timestamps repeat the previous one rather than break the axis
        x = prev if x is None else x
        dt.append(x - prev)
        prev = x
    cut = len(prefix)
    main = {
        "id": sid,
        "n": n,
        "t0": t0,
        "dt": dt,
        "ok": cols.ok,
        "fl": cols.fl,
        "flags": cols.flagsets.values,
        "c": cols.c,
        "commits": cols.commits.values,
        "v": cols.v,
        "versions": cols.versions.values,
        "fp": cols.fp,
        "fps": [env_label(f, env_of(f) if f else None) for f in cols.fps.values],
        "run_prefix": prefix,
        "runs": [u[cut:] for u in urls],
        **({"r": cols.r, "repos": cols.repos.values} if any(v is not None for v in cols.repos.values) else {}),
        "m": {m: cols.cols[m] for m in present if m in HEADLINE_METRICS},
        "more": [m for m in present if m not in HEADLINE_METRICS],
        "noise": noise,
        "cp": change_points,
        "notes": notes,
        "seg": seg_starts,
        "bounds": segment_bounds(cols, seg_starts, env_of),
        **({"im": cols.im, "methods": cols.methods.values} if any(cols.methods.values) else {}),
    }
    latency = {"id": sid, "m": {m: cols.cols[m] for m in main["more"]}}
    return main, latency, refs_ok


def build_series(sid: str, points: list[dict], detect: dict, env_of) -> tuple[dict, dict]:
    """The compact files of one series from all its points: (main file, latency file)."""
    cols = Columns()
    cols.append(points)
    sdetect = series_detect(detect).get(sid) or {}
    main, latency, _ = assemble_series(sid, cols, sdetect, (detect.get("noise") or {}).get(sid) or {},
                                       (detect.get("segments") or {}).get(sid) or [], env_of)
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
