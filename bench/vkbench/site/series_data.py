"""One series of the history -> a small head file and one columnar chunk per calendar year, loaded
by the browser on demand and concatenated into one set of columns.

``data/series/<sid>.json``, the head: what grows with the series' changes, not with its points::

    {"id": sid, "n": 3650 (points in all), "t0": epoch seconds of the first point,
     "chunks": [{"y": 2025, "i": 0, "n": 365, "lat": 1}, {"y": 2026, "i": 365, ...}]
               (oldest first: the year, the series index of its first point, its points, 1 when it has a latency file),
     "fps": [{"id", "label", "detail"}]  (every environment fingerprint of the series, first seen first),
     "metrics": ["rps", "p50"]  (in the chunk files), "more": ["avg", "p99", ...]  (in the latency chunk files),
     "noise": {"rps": 0.03}, "cp": [{"metric", "i", "dir", "mag", "incident"}],
     "notes": [{"i", "text", "incident"}], "seg": [0, 30],
     "bounds": [{"i": 30, "cut": 1, "kind": "method", "text": "method changed: callgrind-abc → callgrind-def"}]}

``data/series/<sid>/<YYYY>.json``, a chunk: the points of one calendar year (UTC), self-contained
(its own dictionaries), so a closed year's chunk is never rewritten::

    {"id": sid, "y": 2026, "n": 365, "t0": epoch seconds of its first point, "dt": [seconds since the previous point],
     "ok": [1|0], "fl": [flag-set code], "flags": [["client-bound"], ...],
     "c": [commit code], "commits": ["a1b2c3d4e5f6" (12 hex)], "v": [server version code], "versions": [...],
     "fp": [fingerprint code], "fps": ["fingerprint id", ...]  (their labels are the head's fps),
     "runs": [url suffix], "run_prefix": "https://github.com/o/r/actions/runs/",
     "r": [repository code], "repos": ["https://github.com/o/valkey/commit/" | "" | null],
     "m": {"rps": {"med": [...], "lo": [...], "hi": [...]}, "p50": {...}},   (+ instructions_per_op, bytes_per_key)
     "im": [method code], "methods": ["callgrind-abc", ...]   (only when some point of the year has a count)}

``data/series/<sid>/<YYYY>.latency.json``: ``{"id", "y", "m": {...}}`` with the year's other latency
metrics (avg, min, p95, p99, p999, max), loaded only when the explorer shows one of them: most
views need rps and p50 only, and the metric columns are most of a series' bytes.

Indexes (the head's cp, notes, seg, bounds and chunks' ``i``) count points over the whole series:
point j of chunk k is point ``chunks[k].i + j``. A chunk has the columns of the metrics its own
points have; a metric of the head that a year lacks is null there. A point's year is its
timestamp's; a point without one (or one whose UTC year is before its predecessor's: offsets sort
as strings) stays in its predecessor's year, so each chunk is a run of consecutive points. The
head is rewritten every night a series grows; only the newest year's chunk grows with it.

Concatenating the chunks (the browser's data.js; :func:`combine` here) gives the series as one
set of parallel columns in (timestamp, run_id) order, with merged dictionaries, that uPlot draws
straight from: the shape :func:`build_series` returns.

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

Commits are cut to 12 hex digits (unique in any real repository; GitHub resolves them in
commit links) because a full sha per point would be a quarter of the file.
"""

from __future__ import annotations

import statistics
import time
from bisect import bisect_right
from pathlib import Path
from typing import Any

from ..repolinks import commit_prefix
from .compact import BOUND_DIGITS, Dictionary, common_prefix, epoch, loads, num

#: The counted metrics (instructions per operation, bytes per key: docs/instructions.md) have their
#: own charts; they are in the main file (a counted series has little else). instructions_per_op
#: is the code count (without libc's alignment-sensitive string routines) where the result has
#: it; instructions_per_op_total, the total, is charted among the further metrics.
COUNT_METRICS = ("instructions_per_op", "instructions_per_op_total", "bytes_per_key")
METRICS = ("rps", "avg", "min", "p50", "p95", "p99", "p999", "max") + COUNT_METRICS
HEADLINE_METRICS = ("rps", "p50", "instructions_per_op", "bytes_per_key")
METRIC_SET = frozenset(METRICS)
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
    """detect.json grouped by series: what :func:`assemble_head` needs of it, read once."""
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


def year_of(t: int | None) -> int | None:
    """The calendar year (UTC) of epoch seconds."""
    return None if t is None else time.gmtime(t).tm_year


class Columns:
    """Points as per-point columns in (timestamp, run_id) order: one chunk (a year) of a series.
    :meth:`append` adds points; :meth:`from_chunk` recovers the columns of a written chunk (its
    values are already rounded, and rounding is idempotent, so re-assembling them gives the same
    bytes)."""

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

    def _ensure_metric(self, m: str) -> None:
        if m not in self.cols:
            self.cols[m] = {k: [None] * self.n for k in ("med", "lo", "hi")}

    def append(self, points: list[dict]) -> None:
        for m in METRICS:
            if any(m in (p.get("metrics") or {}) for p in points):
                self._ensure_metric(m)
        present = [m for m in METRICS if m in self.cols]
        for point in points:
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

    @classmethod
    def from_chunk(cls, main: dict, latency: dict | None) -> "Columns":
        self = cls()
        self.n = main["n"]
        t, acc = [], main["t0"]
        for d in main["dt"]:
            acc += d
            t.append(acc)
        self.t = t
        self.ok, self.fl, self.c, self.v, self.fp = main["ok"], main["fl"], main["c"], main["v"], main["fp"]
        # A chunk without repositories is one whose points all name none (code 0 -> null).
        self.r = main.get("r") or [0] * self.n
        self.im = main.get("im") or [0] * self.n   # a chunk without methods: no point has a count
        for dictionary, values in ((self.flagsets, main["flags"]), (self.commits, main["commits"]),
                                   (self.versions, main["versions"]), (self.fps, main["fps"]),
                                   (self.repos, main.get("repos") or [None]),
                                   (self.methods, main.get("methods") or [""])):
            for value in values:
                dictionary.code(value)
        prefix = main["run_prefix"]
        self.urls = [prefix + u if u else "" for u in main["runs"]]
        metrics = dict(main["m"])
        metrics.update((latency or {}).get("m") or {})
        self.cols = {m: metrics[m] for m in METRICS if m in metrics}
        return self


def _url_columns(urls: list[str]) -> tuple[str, list[str]]:
    """URLs as a shared prefix (whole path segments: ".../runs/" not ".../runs/90") and suffixes."""
    prefix = common_prefix(urls)
    prefix = prefix[: prefix.rfind("/") + 1]
    cut = len(prefix)
    return prefix, [u[cut:] for u in urls]


def _time_columns(t: list[int | None]) -> tuple[int, list[int]]:
    """Times as the first one and the seconds since the previous point; a missing timestamp
    repeats the previous one rather than break the axis."""
    t0 = next((x for x in t if x is not None), 0)
    dt, prev = [], t0
    for x in t:
        x = prev if x is None else x
        dt.append(x - prev)
        prev = x
    return t0, dt


def chunk_files(sid: str, year: int, cols: Columns) -> tuple[dict, dict]:
    """The files of one year of a series: (chunk, latency chunk); the latency chunk's ``m`` is
    empty when the year has none of those metrics (no file then)."""
    present = [m for m in METRICS if m in cols.cols]
    prefix, runs = _url_columns(cols.urls)
    t0, dt = _time_columns(cols.t)
    main = {
        "id": sid,
        "y": year,
        "n": cols.n,
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
        "fps": cols.fps.values,
        "run_prefix": prefix,
        "runs": runs,
        **({"r": cols.r, "repos": cols.repos.values} if any(v is not None for v in cols.repos.values) else {}),
        "m": {m: cols.cols[m] for m in present if m in HEADLINE_METRICS},
        **({"im": cols.im, "methods": cols.methods.values} if any(cols.methods.values) else {}),
    }
    latency = {"id": sid, "y": year, "m": {m: cols.cols[m] for m in present if m not in HEADLINE_METRICS}}
    return main, latency


class SeriesState:
    """What a series' head is assembled from besides detection: series-wide facts that grow with
    the series' changes, not its points (count, first time, fingerprints, where the fingerprint
    or method changes, the CV tails of the noise band, the chunk list). The build manifest keeps
    it (:meth:`record`), so an incremental build extends it with a night's points (:meth:`add`)
    without reading a closed year's chunk."""

    def __init__(self) -> None:
        self.n = 0
        self.t0: int | None = None
        self.fps = Dictionary()                 # fingerprint ids, first seen first (the head's fps)
        self.spans: list[list] = []             # [first index, fingerprint id, method] where either changes
        self.cv_tail: dict[str, list] = {}      # metric -> the CVs of its newest NOISE_TAIL points that have one
        self.metrics: set[str] = set()
        self.chunks: list[dict] = []            # {"y", "i", "n", "lat"} (+ what the build records of the files)
        self.run_ids: dict[str, int] | None = {}  # run_id -> first index; None when unknown (from a record)

    @classmethod
    def from_record(cls, record: dict) -> "SeriesState":
        self = cls()
        self.n, self.t0 = record["n"], record["first"]
        for f in record["fps"]:
            self.fps.code(f)
        self.spans = [list(s) for s in record["spans"]]
        self.cv_tail = {m: list(v) for m, v in record["cv_tail"].items()}
        self.metrics = set(record["metrics"])
        self.chunks = [dict(c) for c in record["chunks"]]
        self.run_ids = None
        return self

    def record(self) -> dict:
        return {"n": self.n, "first": self.t0, "fps": self.fps.values, "spans": self.spans, "cv_tail": self.cv_tail,
                "metrics": [m for m in METRICS if m in self.metrics], "chunks": self.chunks}

    def add(self, points: list[dict]) -> list[tuple[int, list[dict]]]:
        """Account for ``points`` appended at the end (in order); returns them by chunk,
        ``[(year, points)]`` oldest first (the first may be the newest existing chunk's year)."""
        groups: list[tuple[int, list[dict]]] = []
        if self.chunks:
            year = self.chunks[-1]["y"]
        else:  # undated leading points belong to the first dated point's year
            year = next((y for p in points if (y := year_of(epoch(p.get("timestamp")))) is not None), 1970)
        for point in points:
            t = epoch(point.get("timestamp"))
            y = year_of(t)
            year = year if y is None or y < year else y
            if not groups or groups[-1][0] != year:
                groups.append((year, []))
            groups[-1][1].append(point)
            if self.chunks and self.chunks[-1]["y"] == year:
                self.chunks[-1]["n"] += 1
            else:
                self.chunks.append({"y": year, "i": self.n, "n": 1, "lat": 0})
            if self.run_ids is not None:
                self.run_ids.setdefault(point.get("run_id") or "", self.n)
            if self.t0 is None and t is not None:
                self.t0 = t
            fp, method = point.get("fingerprint_id") or "", point.get("instructions_method") or ""
            self.fps.code(fp)
            if not self.spans or self.spans[-1][1:] != [fp, method]:
                self.spans.append([self.n, fp, method])
            self.n += 1
            for m, s in (point.get("metrics") or {}).items():
                if m in METRIC_SET:
                    self.metrics.add(m)
                    tail = self.cv_tail.setdefault(m, [])
                    cv = s.get("cv") if isinstance(s, dict) else None
                    if isinstance(cv, (int, float)) and not isinstance(cv, bool):
                        tail.append(num(cv))
        for tail in self.cv_tail.values():
            del tail[:-NOISE_TAIL]
        return groups

    def chunk(self, year: int) -> dict:
        return next(c for c in self.chunks if c["y"] == year)


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


def segment_bounds(spans: list[list], n: int, seg_starts: list[int], env_of) -> list[dict]:
    """Every segment boundary after the first point, with what changed from the point before.

    ``spans``: ``[first index, fingerprint id, method]`` wherever either changes
    (:attr:`SeriesState.spans`). ``{"i", "cut", "kind", "text"}``: ``kind`` ``env`` (another
    fingerprint), ``method`` (another instruction-count method; both together are ``env``, the
    larger change) or ``reset`` (a reset-baseline annotation, nothing measured differently).
    ``cut`` 1 when the points on either side are not comparable, so the chart must not join
    them; 0 for a reset."""
    starts = [s[0] for s in spans]

    def at(i: int) -> tuple[str, str]:
        span = spans[bisect_right(starts, i) - 1]
        return span[1], span[2]

    out = []
    for i in seg_starts:
        if not 0 < i < n:
            continue
        (old_fp, old_m), (new_fp, new_m) = at(i - 1), at(i)
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


def assemble_head(sid: str, state: SeriesState, sdetect: dict, noise_of: dict, seg_of: list, env_of,
                  reuse: tuple[list, list] | None = None, *, by_index: bool = False) -> tuple[dict, bool]:
    """The head file of one series: (head, refs_ok).

    ``sdetect``: this series' part of :func:`series_detect`; ``noise_of``/``seg_of``: detect.json's
    noise and segments of the series; ``env_of(fingerprint_id)``: the environment of a
    fingerprint. ``reuse``: the change points and notes of the previous build, when only points
    were appended and every detection reference resolved by run id (their indexes stay put).
    ``refs_ok`` says whether every detection reference resolved by run id. ``by_index``: the
    state holds no run ids (a series only extended); change points are placed by detection's
    own indexes, an incident's note at its first bad run's change point (the caller checked
    that detection ran on exactly these points: ``_SeriesPlan.indexes_resolve``)."""
    n = state.n
    present = [m for m in METRICS if m in state.metrics]
    noise = {}
    for m in present:
        cv = (noise_of.get(m) or {}).get("cv")
        if not isinstance(cv, (int, float)) and state.cv_tail.get(m):
            cv = statistics.median(state.cv_tail[m])
        if isinstance(cv, (int, float)):
            noise[m] = num(cv)

    refs_ok = True
    if reuse is not None:
        change_points, notes = reuse
    else:
        runs = state.run_ids or {}
        if by_index:
            runs = {cp.get("run_id"): cp["index"] for cp in sdetect.get("cps") or [] if isinstance(cp.get("index"), int)}

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
        seg_starts = [s[0] for s in state.spans]
    head = {
        "id": sid,
        "n": n,
        "t0": state.t0 if state.t0 is not None else 0,
        "chunks": [{k: c[k] for k in ("y", "i", "n", "lat")} for c in state.chunks],
        "fps": [env_label(f, env_of(f) if f else None) for f in state.fps.values],
        "metrics": [m for m in present if m in HEADLINE_METRICS],
        "more": [m for m in present if m not in HEADLINE_METRICS],
        "noise": noise,
        "cp": change_points,
        "notes": notes,
        "seg": seg_starts,
        "bounds": segment_bounds(state.spans, n, seg_starts, env_of),
    }
    return head, refs_ok


def combine(head: dict, chunks: list[dict], latencies: list[dict | None] | None = None) -> tuple[dict, dict]:
    """The series as one set of columns, as the browser's data.js concatenates it: (main,
    latency). ``chunks``: the head's chunk files in its order; ``latencies``: their latency files
    (None for a chunk without one; None for none loaded). Each chunk's codes are re-coded into
    dictionaries merged in first-seen order; a metric a chunk lacks is null for its points."""
    fp_code = {f["id"]: k for k, f in enumerate(head["fps"])}
    dicts = {k: Dictionary() for k in ("flags", "commits", "versions", "repos", "methods")}
    cols: dict[str, list] = {k: [] for k in ("ok", "fl", "c", "v", "fp", "r", "im")}
    t: list[int] = []
    urls: list[str] = []
    names = head["metrics"] + (head["more"] if latencies is not None else [])
    metrics = {m: {"med": [], "lo": [], "hi": []} for m in names}
    for k, chunk in enumerate(chunks):
        n = chunk["n"]
        acc = chunk["t0"]
        for d in chunk["dt"]:
            acc += d
            t.append(acc)
        cols["ok"] += chunk["ok"]
        for col, key, values in (("fl", "flags", chunk["flags"]), ("c", "commits", chunk["commits"]),
                                 ("v", "versions", chunk["versions"]), ("r", "repos", chunk.get("repos") or [None]),
                                 ("im", "methods", chunk.get("methods") or [""])):
            recode = [dicts[key].code(v) for v in values]
            cols[col] += [recode[c] for c in chunk.get(col) or [0] * n]
        cols["fp"] += [fp_code[chunk["fps"][c]] for c in chunk["fp"]]
        urls += [chunk["run_prefix"] + u if u else "" for u in chunk["runs"]]
        ms = dict(chunk["m"])
        ms.update(((latencies or [None] * len(chunks))[k] or {}).get("m") or {})
        for m in names:
            for part in ("med", "lo", "hi"):
                metrics[m][part] += ms[m][part] if m in ms else [None] * n
    t0, dt = _time_columns(t)
    prefix, runs = _url_columns(urls)
    main = {
        "id": head["id"], "n": head["n"], "t0": t0, "dt": dt,
        "ok": cols["ok"], "fl": cols["fl"], "flags": dicts["flags"].values,
        "c": cols["c"], "commits": dicts["commits"].values, "v": cols["v"], "versions": dicts["versions"].values,
        "fp": cols["fp"], "fps": head["fps"], "run_prefix": prefix, "runs": runs,
        **({"r": cols["r"], "repos": dicts["repos"].values} if any(v is not None for v in dicts["repos"].values) else {}),
        "m": {m: metrics[m] for m in head["metrics"]},
        "more": head["more"], "noise": head["noise"], "cp": head["cp"], "notes": head["notes"],
        "seg": head["seg"], "bounds": head["bounds"],
        **({"im": cols["im"], "methods": dicts["methods"].values} if any(dicts["methods"].values) else {}),
    }
    latency = {"id": head["id"], "m": {m: metrics[m] for m in head["more"] if m in metrics}}
    return main, latency


def series_files(sid: str, points: list[dict], sdetect: dict, noise_of: dict, seg_of: list, env_of,
                 state: SeriesState | None = None) -> tuple[dict, dict[int, tuple[dict, dict]], bool]:
    """The files of a series from all its points: (head, {year: (chunk, latency chunk)}, refs_ok)."""
    state = state if state is not None else SeriesState()
    chunks = {}
    for year, pts in state.add(points):
        cols = Columns()
        cols.append(pts)
        chunks[year] = main, latency = chunk_files(sid, year, cols)
        state.chunk(year)["lat"] = 1 if latency["m"] else 0
    head, refs_ok = assemble_head(sid, state, sdetect, noise_of, seg_of, env_of)
    return head, chunks, refs_ok


def build_series(sid: str, points: list[dict], detect: dict, env_of) -> tuple[dict, dict]:
    """A series from all its points, as the browser sees it once every chunk is loaded
    (:func:`combine`): (main, latency)."""
    head, chunks, _ = series_files(sid, points, series_detect(detect).get(sid) or {},
                                   (detect.get("noise") or {}).get(sid) or {},
                                   (detect.get("segments") or {}).get(sid) or [], env_of)
    years = [c["y"] for c in head["chunks"]]
    return combine(head, [chunks[y][0] for y in years], [chunks[y][1] for y in years])


def load_series(series_dir, sid: str) -> tuple[dict, dict]:
    """A built series read back from ``data/series`` and combined (:func:`combine`): (main, latency)."""
    series_dir = Path(series_dir)
    head = loads((series_dir / f"{sid}.json").read_bytes())
    chunks = [loads((series_dir / sid / f"{c['y']}.json").read_bytes()) for c in head["chunks"]]
    latencies = [loads((series_dir / sid / f"{c['y']}.latency.json").read_bytes()) if c["lat"] else None
                 for c in head["chunks"]]
    return combine(head, chunks, latencies)


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
