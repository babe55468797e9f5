"""``build_site``: a history directory -> a static, self-contained site for gh-pages.

Output layout (docs/site.md)::

    index.html  .nojekyll
    assets/app/*.js *.css        the app: plain JS modules, no framework, no bundler
    assets/vendor/uPlot.*        copied from site-src/node_modules (npm ci, pinned by the lock file)
    data/index.json              small: series list with dims, last values, machine classes, incidents
    data/detect.json             change points and incidents (without per-series noise/segments)
    data/reference.json          published figures for the overlay
    data/series/<sid>.json       one compact columnar file per series, loaded only when a view needs it
    data/series/<sid>.latency.json  its less-viewed latency metrics, loaded only when shown

Only ``assets/`` and ``data/`` are replaced, so the site can be built into the gh-pages root next
to ``history/``.
"""

from __future__ import annotations

import hashlib
import shutil
from dataclasses import dataclass, field
from datetime import datetime, timezone
from functools import lru_cache
from importlib import resources
from pathlib import Path

from ..errors import MissingBinaryError
from .compact import Dictionary, compact_value, dumps, epoch, write
from .history_reader import History, open_history
from .reference import reference_data
from .series_data import build_series, last_point

#: Explorer filters first (in the order the UI shows them), then every other dimension.
DIM_ORDER = ("server", "topology", "io_threads", "command", "pipeline", "clients", "data_size", "tool",
             "machine_class", "arch", "engine", "version")

#: Where a commit of each engine lives, for commit links (``repo=`` overrides it for all).
ENGINE_REPOS = {"valkey": "valkey-io/valkey", "redis": "redis/redis"}

UPLOT_FILES = ("uPlot.iife.min.js", "uPlot.min.css")


@dataclass
class BuildReport:
    out_dir: Path
    series: int = 0
    points: int = 0
    references: int = 0
    bytes: dict[str, int] = field(default_factory=dict)  # data file kind -> total bytes
    largest_series_bytes: int = 0

    def summary(self) -> str:
        sizes = ", ".join(f"{kind} {size / 1024:.1f} KiB" for kind, size in self.bytes.items())
        return (f"site written to {self.out_dir}: {self.series} series, {self.points} points, "
                f"{self.references} reference figures; data: {sizes}")


def uplot_dist_dir() -> Path:
    """site-src/node_modules/uplot/dist of the source tree this package runs from."""
    repo_root = Path(__file__).resolve().parents[3]
    return repo_root / "site-src" / "node_modules" / "uplot" / "dist"


def _copy_vendor(dest: Path) -> None:
    src = uplot_dist_dir()
    missing = [name for name in UPLOT_FILES if not (src / name).is_file()]
    if missing:
        raise MissingBinaryError(
            f"uPlot is not installed: {', '.join(missing)} missing in {src}",
            hint="run tools/setup/site.sh (npm ci in site-src/)",
        )
    dest.mkdir(parents=True, exist_ok=True)
    for name in UPLOT_FILES:
        shutil.copyfile(src / name, dest / name)


def _copy_app(out_dir: Path, build_id: str) -> None:
    static = resources.files("vkbench") / "site" / "static"
    app = out_dir / "assets" / "app"
    app.mkdir(parents=True, exist_ok=True)
    for entry in static.iterdir():
        if entry.name == "index.html":
            html = entry.read_text(encoding="utf-8").replace("{{BUILD}}", build_id)
            (out_dir / "index.html").write_text(html, encoding="utf-8")
        elif entry.is_file() and entry.name.endswith((".js", ".css")):
            (app / entry.name).write_bytes(entry.read_bytes())
    (out_dir / ".nojekyll").write_text("")  # serve assets/ as is on GitHub Pages


def _dims_of(entry: dict) -> dict:
    dims = dict(entry.get("dims") or {})
    dims["server"] = f"{dims.get('engine', '?')}:{dims.get('version', '?')}"
    dims["arch"] = entry.get("arch") or dims.get("arch")
    return dims


def _collect_last(by_class: dict, cls: str, last: dict) -> None:
    """Remember each series' newest point under its run: the newest run of a class is the one
    whose points are newest, and the series it covered are those whose last point is in it."""
    by_class.setdefault(cls, {}).setdefault(last.get("run_id") or "", []).append(last)


def _latest_run(runs: dict[str, list[dict]]) -> dict:
    run_id, pts = max(runs.items(), key=lambda kv: (max(p.get("timestamp") or "" for p in kv[1]), kv[0]))
    return {"run_id": run_id, "points": pts}


def _summarize_latest(cur: dict) -> dict:
    pts = cur["points"]
    urls = [p.get("workflow_run_url") for p in pts if p.get("workflow_run_url")]
    versions = sorted({f"{p.get('version')}" + (f" ({p['server_version']})" if p.get("server_version") and p.get("server_version") != p.get("version") else "") for p in pts})
    flags: dict[str, int] = {}
    for p in pts:
        for f in p.get("flags") or []:
            flags[f] = flags.get(f, 0) + 1
    commits = sorted({p["commit"] for p in pts if p.get("commit") and p.get("version") == "unstable"})
    return {
        "run_id": cur["run_id"],
        "t": max((epoch(p.get("timestamp")) or 0) for p in pts) if pts else None,
        "url": urls[0] if urls else None,
        "series": len(pts),
        "invalid": sum(1 for p in pts if not p.get("valid", True)),
        "flags": flags,
        "versions": versions,
        "commits": commits,
    }


def _slim_detect(detect: dict) -> dict:
    """What the overview needs; per-series noise and segments go into the series files."""
    keep_cp = ("series_id", "metric", "index", "run_id", "timestamp", "direction", "magnitude", "p_value", "good", "bad", "incident_id")
    return {
        "generated": detect.get("generated"),
        "change_points": [{k: cp.get(k) for k in keep_cp if k in cp} for cp in detect.get("change_points") or []],
        "incidents": detect.get("incidents") or [],
    }


def build_site(history_dir: Path, out_dir: Path, *, reference_dir: Path | None = None, repo: str | None = None) -> BuildReport:
    """Build the trend site from ``history_dir`` into ``out_dir``.

    ``reference_dir``: published figures (results/reference) for the overlay; None draws none.
    ``repo``: ``owner/name`` whose commits the points' ``commit`` fields name; None links each
    engine's own repository (valkey-io/valkey, redis/redis).
    Raises :class:`ResultFileError` for a missing or corrupt history, :class:`MissingBinaryError`
    when uPlot is not installed (run tools/setup/site.sh).
    """
    history: History = open_history(Path(history_dir))
    out_dir = Path(out_dir)
    detect = history.detect()
    refs = reference_data(Path(reference_dir) if reference_dir is not None else None)

    for owned in ("data", "assets"):
        shutil.rmtree(out_dir / owned, ignore_errors=True)
    out_dir.mkdir(parents=True, exist_ok=True)
    _copy_vendor(out_dir / "assets" / "vendor")  # fail early, before the long part
    report = BuildReport(out_dir=out_dir)
    env_of = lru_cache(maxsize=None)(history.fingerprint)

    all_dims = [(sid, _dims_of(entry)) for sid, entry in sorted(history.series.items())]
    dim_keys = list(DIM_ORDER) + sorted({k for _, d in all_dims for k in d} - set(DIM_ORDER))
    dictionaries = {k: Dictionary() for k in dim_keys}
    metrics_seen: set[str] = set()
    latest: dict[str, dict] = {}
    series_rows = []
    series_bytes = latency_bytes = 0
    for sid, dims in all_dims:
        points = history.read_points(sid)
        if not points:
            continue
        data, latency = build_series(sid, points, detect, env_of)
        size = write(out_dir / "data" / "series" / f"{sid}.json", data)
        series_bytes += size
        if latency["m"]:
            latency_bytes += write(out_dir / "data" / "series" / f"{sid}.latency.json", latency)
        report.largest_series_bytes = max(report.largest_series_bytes, size)
        report.series += 1
        report.points += len(points)
        metrics_seen.update(data["m"])
        metrics_seen.update(data["more"])
        _collect_last(latest, str(dims.get("machine_class")), points[-1])
        series_rows.append({
            "id": sid,
            "d": [dictionaries[k].code(compact_value(dims.get(k))) for k in dim_keys],
            "n": len(points),
            "t0": epoch(points[0].get("timestamp")),
            "last": last_point(points),
        })

    incidents = detect.get("incidents") or []
    classes = {}
    for cls, runs in sorted(latest.items()):
        cur = _latest_run(runs)
        mine = [i for i in incidents if i.get("machine_class") == cls]
        classes[cls] = {
            "latest": _summarize_latest(cur),
            "series": sum(1 for _, d in all_dims if str(d.get("machine_class")) == cls),
            "open_regressions": sum(1 for i in mine if i.get("status") == "open" and i.get("direction") == "regression"),
            "improvements": sum(1 for i in mine if i.get("direction") == "improvement"),
        }

    index = {
        "format": 1,
        "updated": history.index.get("updated"),
        "runs": history.index.get("runs"),
        "detect_generated": detect.get("generated"),
        "commit_repos": {e: repo for e in ENGINE_REPOS} if repo else dict(ENGINE_REPOS),
        "metrics": [m for m in ("rps", "avg", "min", "p50", "p95", "p99", "p999", "max") if m in metrics_seen],
        "dims": dim_keys,
        "values": [dictionaries[k].values for k in dim_keys],
        "series": series_rows,
        "classes": classes,
        "incidents": {
            "open": sum(1 for i in incidents if i.get("status") == "open"),
            "open_regressions": sum(1 for i in incidents if i.get("status") == "open" and i.get("direction") == "regression"),
            "improvements": sum(1 for i in incidents if i.get("direction") == "improvement"),
        },
    }
    # The build id busts browser caches of data files when the data changed.
    body = dumps(index)
    build_id = hashlib.sha256(body.encode()).hexdigest()[:12]
    index["build"] = build_id
    index["built"] = datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
    report.bytes["index"] = write(out_dir / "data" / "index.json", index)
    report.bytes["detect"] = write(out_dir / "data" / "detect.json", _slim_detect(detect))
    report.bytes["reference"] = write(out_dir / "data" / "reference.json", refs)
    report.bytes["series"] = series_bytes
    report.bytes["series_latency"] = latency_bytes
    report.references = len(refs["references"])
    _copy_app(out_dir, build_id)
    return report


__all__ = ["BuildReport", "build_site"]
