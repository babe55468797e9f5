"""``build_site``: a history directory -> a static, self-contained site for gh-pages.

Output layout (docs/site.md)::

    index.html  .nojekyll
    digest.html                  what moved in the week before the last update (vkbench.digest)
    assets/app/*.js *.css        the app: plain JS modules, no framework, no bundler
    assets/vendor/uPlot.*        uPlot as the package vendors it (site/vendor/, pinned by site-src/package-lock.json)
    data/digest.json             that digest as JSON
    data/index.json              small: series list with dims, last values, machine classes, incidents
    data/detect.json             change points and incidents (without per-series noise/segments)
    data/reference.json          published figures for the overlay
    data/advice.json             io-threads advice per machine class and workload (+ the references')
    data/profiles/<incident>.json   CPU profile diff of an incident (flame graph trees, top changes)
    assets/vendor/d3-flamegraph.*   d3 + d3-flame-graph (vendored like uPlot), loaded only by the profile view
    data/series/<sid>.json       one compact columnar file per series, loaded only when a view needs it
    data/series/<sid>.latency.json  its less-viewed latency metrics, loaded only when shown
    data/build-manifest.json     what each series file was built from: the next build is incremental

Only ``index.html``, ``.nojekyll``, ``assets/`` and ``data/`` are replaced (built beside them and
swapped in on success), so the site can be built into the gh-pages root next to ``history/``.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import tempfile
from dataclasses import dataclass, field
from datetime import datetime, timezone
from functools import lru_cache
from importlib import resources
from pathlib import Path

from ..files import directory_lock
from ..paths import check_apart
from ..catalogs.groups import series_group
from ..errors import MissingBinaryError
from .compact import Dictionary, compact_value, dumps, epoch, loads, write
from ..history.store import HistoryStore
from .history_reader import History, open_history, point_order
from . import insights
from .reference import load_references, reference_data
from .series_data import METRICS as SERIES_METRICS, Columns, assemble_series, env_label, last_point, series_detect, with_commit_links

#: Explorer filters first (in the order the UI shows them), then every other dimension.
DIM_ORDER = ("server", "topology", "io_threads", "command", "group", "pipeline", "clients", "data_size", "tool",
             "machine_class", "arch", "engine", "version")

#: Where a commit of each engine lives, for commit links (``repo=`` overrides it for all).
ENGINE_REPOS = {"valkey": "valkey-io/valkey", "redis": "redis/redis"}

#: vendored file -> its name in assets/vendor/ (the license travels with the code it covers)
UPLOT_FILES = {"uPlot.iife.min.js": "uPlot.iife.min.js", "uPlot.min.css": "uPlot.min.css", "LICENSE": "uPlot.LICENSE.txt"}
#: d3-flame-graph's UMD build reads the d3 modules it needs from the global ``d3``: their UMD
#: builds, in dependency order (vendored as site/vendor/<package>/<file>), concatenated into one
#: file the profile view loads on demand.
FLAMEGRAPH_PARTS = (
    "internmap/dist/internmap.min.js", "d3-array/dist/d3-array.min.js", "d3-color/dist/d3-color.min.js",
    "d3-interpolate/dist/d3-interpolate.min.js", "d3-dispatch/dist/d3-dispatch.min.js", "d3-ease/dist/d3-ease.min.js",
    "d3-format/dist/d3-format.min.js", "d3-selection/dist/d3-selection.min.js", "d3-time/dist/d3-time.min.js",
    "d3-time-format/dist/d3-time-format.min.js", "d3-scale/dist/d3-scale.min.js", "d3-timer/dist/d3-timer.min.js",
    "d3-transition/dist/d3-transition.min.js", "d3-hierarchy/dist/d3-hierarchy.min.js",
    "d3-flame-graph/dist/d3-flamegraph.umd.min.js",
)
FLAMEGRAPH_BUNDLE = "d3-flamegraph.bundle.min.js"
FLAMEGRAPH_CSS = "d3-flame-graph/dist/d3-flamegraph.css"
_VENDOR_HINT = "reinstall vkbench; in a checkout run tools/sync_site_vendor.py (after tools/setup/site.sh)"


@dataclass
class BuildReport:
    out_dir: Path
    series: int = 0
    points: int = 0
    references: int = 0
    bytes: dict[str, int] = field(default_factory=dict)  # data file kind -> total bytes
    largest_series_bytes: int = 0
    mode: str = "full"      # "incremental" when a compatible build manifest was found
    kept: int = 0           # series whose files were reused unchanged
    appended: int = 0       # series extended with new points
    rebuilt: int = 0        # series written from all their shards

    def summary(self) -> str:
        sizes = ", ".join(f"{kind} {size / 1024:.1f} KiB" for kind, size in self.bytes.items())
        return (f"site written to {self.out_dir} ({self.mode} build: {self.rebuilt} series rebuilt, "
                f"{self.appended} extended, {self.kept} unchanged): {self.series} series, {self.points} points, "
                f"{self.references} reference figures; data: {sizes}")


def vendor_dir() -> Path:
    """The package's vendored front-end files (uPlot at the version site-src/package-lock.json
    pins, refreshed by tools/sync_site_vendor.py) and their manifest.json."""
    return Path(str(resources.files("vkbench") / "site" / "vendor"))


def _vendored(package: str, name: str) -> bytes:
    """One vendored file, checked against site/vendor/manifest.json."""
    src = vendor_dir()
    try:
        digest = _vendor_manifest()[package]["files"][name]
    except KeyError:
        raise MissingBinaryError(f"{package}/{name} is not in {src / 'manifest.json'}", hint=_VENDOR_HINT) from None
    path = src / package / name
    data = path.read_bytes() if path.is_file() else b""
    if hashlib.sha256(data).hexdigest() != digest:
        raise MissingBinaryError(f"{path} is missing or differs from {src / 'manifest.json'}: the package's vendored files are damaged", hint=_VENDOR_HINT)
    return data


def _vendor_manifest() -> dict:
    path = vendor_dir() / "manifest.json"
    try:
        return json.loads(path.read_text(encoding="utf-8"))["packages"]
    except (OSError, KeyError, ValueError) as exc:
        raise MissingBinaryError(f"the site's front-end files are not packaged: {path} unreadable ({exc})", hint=_VENDOR_HINT) from None


def _copy_vendor(dest: Path) -> None:
    """uPlot (and its license) into the site, each file checked against the manifest."""
    dest.mkdir(parents=True, exist_ok=True)
    for name, out_name in UPLOT_FILES.items():
        (dest / out_name).write_bytes(_vendored("uplot", name))


def _copy_flamegraph(dest: Path) -> None:
    def part(path: str) -> bytes:
        package, _, rest = path.partition("/")
        return _vendored(package, rest.rsplit("/", 1)[-1])

    dest.mkdir(parents=True, exist_ok=True)
    bundle = "\n;\n".join(f"/* {p} */\n" + part(p).decode("utf-8") for p in FLAMEGRAPH_PARTS)
    (dest / FLAMEGRAPH_BUNDLE).write_text(bundle, encoding="utf-8")
    (dest / "d3-flamegraph.css").write_bytes(part(FLAMEGRAPH_CSS))


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
    # The data type (catalog spec group, or the command's group): the site groups series by it.
    # Display only: the series id comes from the history's dims, which do not have it.
    dims["group"] = series_group(dims)
    return dims


def _collect_last(by_class: dict, cls: str, last: dict) -> None:
    """Remember each series' newest point under its run: the newest run of a class is the one
    whose points are newest, and the series it covered are those whose last point is in it."""
    by_class.setdefault(cls, {}).setdefault(last.get("run_id") or "", []).append(last)


def _latest_run(runs: dict[str, list[dict]]) -> dict:
    run_id, pts = max(runs.items(), key=lambda kv: (max(p.get("timestamp") or "" for p in kv[1]), kv[0]))
    return {"run_id": run_id, "points": pts}


_RELEASE_VERSION = re.compile(r"^\d+\.\d+(\.\d+)?$")
_COMMIT = re.compile(r"^[0-9a-f]{7,64}$")


def version_label(point: dict) -> str:
    """How a card names a point's version: a source build (unstable, a branch, a SHA) by its
    commit, since its server reports a placeholder version (unstable says 255.255.255); a
    release by its version, with the server's own when that differs."""
    version, server, commit = str(point.get("version")), point.get("server_version"), point.get("commit")
    if not _RELEASE_VERSION.match(version) and isinstance(commit, str) and _COMMIT.match(commit):
        short = commit[:10]
        return version if version.startswith(short[:7]) else f"{version} ({short})"
    return version + (f" ({server})" if server and server != version else "")


def _summarize_latest(cur: dict) -> dict:
    pts = cur["points"]
    urls = [p.get("workflow_run_url") for p in pts if p.get("workflow_run_url")]
    versions = sorted({version_label(p) for p in pts})
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
        "incidents": with_commit_links(detect.get("incidents") or []),  # each end links to its repository
    }


def build_site(history_dir: Path, out_dir: Path, *, reference_dir: Path | None = None, repo: str | None = None,
               full: bool = False, store: HistoryStore | None = None) -> BuildReport:
    """Build the trend site from ``history_dir`` into ``out_dir``.

    ``reference_dir``: published figures (results/reference) for the overlay; None draws none.
    ``repo``: ``owner/name`` whose commits the points' ``commit`` fields name; None links each
    engine's own repository (valkey-io/valkey, redis/redis).
    ``store``: the :class:`HistoryStore` of ``history_dir`` a caller already read through (publish:
    shards parsed by the ingest and detection are not parsed again).
    ``full``: rebuild every series. Otherwise series files the previous build wrote (per its
    ``data/build-manifest.json``) are kept when their inputs are unchanged and extended when
    points were only appended; a missing or incompatible manifest means a full build.

    The site is built in a temporary directory inside ``out_dir`` and swapped in only when the
    build succeeded: a failing build leaves the previous site as it was.
    Raises :class:`ResultFileError` for a missing or corrupt history, :class:`MissingBinaryError`
    when the package's vendored uPlot is missing or damaged.
    """
    out_dir = Path(out_dir)
    # the site's folders are replaced on success: a site that is, holds or sits in the history
    # would replace or mix with it
    check_apart(out_dir, Path(history_dir), "--out")
    history: History = open_history(Path(history_dir), store)
    detect = history.detect()
    # Every shard hashed and checked against index.json before anything is built: an edit that
    # kept a shard's size is refused here (exit 7 naming it), and the hashes tell the
    # incremental build which series are unchanged.
    hashes = history.shard_hashes()
    refs = reference_data(Path(reference_dir) if reference_dir is not None else None)
    out_dir.mkdir(parents=True, exist_ok=True)
    with directory_lock(out_dir):
        for leftover in [*out_dir.glob(_STAGE_PREFIX + "*"), *out_dir.glob(_TRASH_PREFIX + "*")]:
            shutil.rmtree(leftover, ignore_errors=True)  # from a build that was killed
        stage = Path(tempfile.mkdtemp(prefix=_STAGE_PREFIX, dir=out_dir))
        try:
            previous = None if full else _load_manifest(out_dir)
            references = load_references(Path(reference_dir)) if reference_dir is not None else []
            report = _build_into(stage, out_dir if previous else None, previous, history, hashes, detect, refs,
                                 references, repo)
            report.out_dir = out_dir
            _swap_in(stage, out_dir)
        finally:
            shutil.rmtree(stage, ignore_errors=True)
    return report


_STAGE_PREFIX = ".vkbench-build-"
_TRASH_PREFIX = ".vkbench-old-"
#: What the site build owns in its output directory (the rest, e.g. history/, is left alone).
OWNED = ("data", "assets", "index.html", "digest.html", ".nojekyll")
MANIFEST = "build-manifest.json"
MANIFEST_FORMAT = 2     # 2: each series records its shards' sha256 (shard_sha)
#: Raw fields of a series' newest point that the overview's "newest run per class" needs.
_LAST_FIELDS = ("run_id", "timestamp", "workflow_run_url", "version", "server_version", "flags", "valid", "commit")


@lru_cache(maxsize=1)
def builder_id() -> str:
    """Changes whenever the code that writes the data files changes: a manifest from another
    builder is incompatible (its series files may differ), so the next build is a full one."""
    digest = hashlib.sha256(f"{MANIFEST_FORMAT}".encode())
    here = Path(__file__).parent
    for name in ("build.py", "series_data.py", "compact.py"):
        digest.update((here / name).read_bytes())
    return digest.hexdigest()[:16]


def _load_manifest(out_dir: Path) -> dict | None:
    path = out_dir / "data" / MANIFEST
    try:
        manifest = loads(path.read_bytes())
    except (OSError, ValueError):
        return None
    if not isinstance(manifest, dict) or manifest.get("format") != MANIFEST_FORMAT or manifest.get("builder") != builder_id():
        return None
    return manifest if isinstance(manifest.get("series"), dict) else None


def _digest(value) -> str:
    return hashlib.sha256(dumps(value).encode()).hexdigest()[:24]


def _swap_in(stage: Path, out_dir: Path) -> None:
    """Move the previous site's entries aside, the new ones in, then drop the old ones. On any
    error the previous entries are put back."""
    trash = Path(tempfile.mkdtemp(prefix=_TRASH_PREFIX, dir=out_dir))
    moved_out: list[str] = []
    moved_in: list[str] = []
    try:
        for name in OWNED:
            if os.path.lexists(out_dir / name):
                os.rename(out_dir / name, trash / name)
                moved_out.append(name)
        for name in OWNED:
            if os.path.lexists(stage / name):
                os.rename(stage / name, out_dir / name)
                moved_in.append(name)
    except BaseException:
        for name in moved_in:
            os.rename(out_dir / name, stage / name)
        for name in moved_out:
            os.rename(trash / name, out_dir / name)
        raise
    finally:
        shutil.rmtree(trash, ignore_errors=True)


class _SeriesPlan:
    """How one series gets its files in this build: kept, extended, or rebuilt from all shards."""

    def __init__(self, sid: str, entry: dict, history: History, digests: dict[str, dict], detect: dict, sdetect: dict,
                 env_of, prev: dict | None):
        self.sid, self.entry, self.history, self.prev, self.env_of = sid, entry, history, prev, env_of
        self.sdetect = sdetect
        self.noise = (detect.get("noise") or {}).get(sid) or {}
        self.seg = (detect.get("segments") or {}).get(sid) or []
        self.shards = sorted(entry.get("shards") or [])
        # as hashed (and checked against index.json, v2) at the start of the build
        self.sizes = {m: digests[m]["bytes"] for m in self.shards}
        self.hashes = {m: digests[m]["sha256"] for m in self.shards}
        self.dims_key = _digest([entry.get("dims"), entry.get("arch")])
        self.detect_key = _digest([sdetect.get("cps") or [], [[i.get("id"), i.get("annotation"), i.get("bad")] for i in sdetect.get("incidents") or []]])

    def output_key(self, fps: list[str]) -> str:
        """Everything the series files depend on besides the points themselves."""
        labels = [env_label(f, self.env_of(f) if f else None) for f in fps]
        return _digest([self.dims_key, self.detect_key, self.noise, [s.get("start_index") for s in self.seg], labels])

    def unchanged(self, old_dir: Path) -> bool:
        p = self.prev
        return (p["shards"] == self.sizes and p.get("shard_sha") == self.hashes and p["key"] == self.output_key(p["fps"])
                and _size(old_dir / f"{self.sid}.json") == p["bytes"]
                and _size(old_dir / f"{self.sid}.latency.json") == (p["latency_bytes"] or None))

    def appended(self) -> list[dict] | None:
        """The points added since the previous build when that is all that changed: old shards
        only grew at the end of the newest one (its old bytes unchanged), new shards are newer
        months, and every new point sorts after the previous newest point. None otherwise."""
        p = self.prev
        if p["dims_key"] != self.dims_key or not p["shards"]:
            return None
        old_months = sorted(p["shards"])
        newest = old_months[-1]
        old_sha = p.get("shard_sha") or {}
        if any(self.sizes.get(m) != p["shards"][m] or self.hashes.get(m) != old_sha.get(m) for m in old_months[:-1]):
            return None
        grown = self.sizes.get(newest)
        if grown is None or grown < p["shards"][newest] or any(m < newest for m in self.sizes if m not in p["shards"]):
            return None
        if grown == p["shards"][newest] and self.hashes.get(newest) != old_sha.get(newest):
            return None     # rewritten in place (a version-1 history has no digests to refuse it by)
        fresh: list[dict] = []
        self.newest_count, self.newest_sha = p["shard_points"], p["tail_sha"]
        if grown > p["shards"][newest]:
            got = self.history.read_appended(self.sid, newest, p["shards"][newest], p["tail_sha"])
            if got is None:
                return None
            fresh.extend(got[0])
            self.newest_count += len(got[0])
            self.newest_sha = self.hashes[newest]
        for month in self.shards:
            if month not in p["shards"]:
                points = self.history.read_shard(self.sid, month)
                fresh.extend(points)
                if month == self.shards[-1]:
                    self.newest_count = len(points)
                    self.newest_sha = self.hashes[month]
        fresh.sort(key=point_order)
        if fresh and point_order(fresh[0]) <= tuple(p["last_key"]):
            return None
        return fresh


def _size(path: Path) -> int | None:
    try:
        return path.stat().st_size
    except FileNotFoundError:
        return None


def _build_into(stage: Path, old_out: Path | None, previous: dict | None, history: History, hashes: dict[str, dict[str, dict]],
                detect: dict, refs: dict, references: list[dict], repo: str | None) -> BuildReport:
    _copy_vendor(stage / "assets" / "vendor")  # fail early, before the long part
    _copy_flamegraph(stage / "assets" / "vendor")
    report = BuildReport(out_dir=stage, mode="incremental" if previous else "full")
    env_of = lru_cache(maxsize=None)(history.fingerprint)
    by_series = series_detect(detect)
    old_dir = old_out / "data" / "series" if old_out else None
    new_dir = stage / "data" / "series"
    new_dir.mkdir(parents=True, exist_ok=True)
    manifest_series: dict[str, dict] = {}

    all_dims = [(sid, _dims_of(entry)) for sid, entry in sorted(history.series.items())]
    dim_keys = list(DIM_ORDER) + sorted({k for _, d in all_dims for k in d} - set(DIM_ORDER))
    dictionaries = {k: Dictionary() for k in dim_keys}
    metrics_seen: set[str] = set()
    latest: dict[str, dict] = {}
    series_rows = []
    series_bytes = latency_bytes = 0
    for sid, dims in all_dims:
        prev = (previous or {}).get("series", {}).get(sid)
        plan = _SeriesPlan(sid, history.series[sid], history, hashes[sid], detect, by_series.get(sid) or {}, env_of, prev)
        record = _kept(plan, old_dir, new_dir) if prev and old_dir else None
        if record is not None:
            report.kept += 1
        else:
            record = _written(plan, old_dir, new_dir)
            if record is None:
                continue  # a series without points has no file
        manifest_series[sid] = record
        series_bytes += record["bytes"]
        latency_bytes += record["latency_bytes"]
        report.largest_series_bytes = max(report.largest_series_bytes, record["bytes"])
        report.series += 1
        report.points += record["n"]
        metrics_seen.update(record["metrics"])
        _collect_last(latest, str(dims.get("machine_class")), record["last_raw"])
        series_rows.append({
            "id": sid,
            "d": [dictionaries[k].code(compact_value(dims.get(k))) for k in dim_keys],
            "n": record["n"],
            "t0": record["t0"],
            "last": record["last"],
        })
    report.appended = sum(1 for r in manifest_series.values() if r.pop("_how", None) == "appended")
    report.rebuilt = report.series - report.kept - report.appended

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

    advice = insights.advice_data(history.root, references, history.store)
    profiles = insights.incident_profile_docs(
        history, detect, lambda sid, runs: history.store.points_of_runs(sid, history.series[sid], runs))
    for incident_id, doc in profiles.items():
        write(stage / "data" / "profiles" / f"{_safe_id(incident_id)}.json", doc)

    index = {
        "format": 1,
        "profiles": {incident_id: _safe_id(incident_id) for incident_id in profiles},
        "updated": history.index.get("updated"),
        "runs": history.index.get("runs"),
        "detect_generated": detect.get("generated"),
        "commit_repos": {e: repo for e in ENGINE_REPOS} if repo else dict(ENGINE_REPOS),
        "metrics": [m for m in SERIES_METRICS if m in metrics_seen],
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
    report.bytes["index"] = write(stage / "data" / "index.json", index)
    report.bytes["detect"] = write(stage / "data" / "detect.json", _slim_detect(detect))
    report.bytes["reference"] = write(stage / "data" / "reference.json", refs)
    report.bytes["advice"] = write(stage / "data" / "advice.json", advice)
    report.bytes["series"] = series_bytes
    report.bytes["series_latency"] = latency_bytes
    report.references = len(refs["references"])
    write(stage / "data" / MANIFEST, {"format": MANIFEST_FORMAT, "builder": builder_id(), "series": manifest_series})
    _copy_app(stage, build_id)
    _write_digest(stage, history)
    return report


def _write_digest(stage: Path, history: History) -> None:
    """``digest.html`` and ``data/digest.json``: the week before the history's last update (the
    weekly issue's digest, vkbench.digest), so the page does not age between builds."""
    from ..digest import build_digest, render_html

    updated = history.index.get("updated")
    try:
        now = datetime.fromisoformat(str(updated).replace("Z", "+00:00")) if updated else None
    except ValueError:
        now = None
    digest = build_digest(history.root, now=now, store=history.store)
    (stage / "data").mkdir(parents=True, exist_ok=True)
    (stage / "data" / "digest.json").write_text(json.dumps(digest, indent=1) + "\n", encoding="utf-8")
    (stage / "digest.html").write_text(render_html(digest), encoding="utf-8")


def _link_or_copy(src: Path, dest: Path) -> None:
    try:
        os.link(src, dest)
    except OSError:
        shutil.copyfile(src, dest)


def _kept(plan: _SeriesPlan, old_dir: Path, new_dir: Path) -> dict | None:
    """Reuse the previous build's files of an unchanged series (hard links: nothing is rewritten)."""
    if not plan.unchanged(old_dir):
        return None
    _link_or_copy(old_dir / f"{plan.sid}.json", new_dir / f"{plan.sid}.json")
    if plan.prev["latency_bytes"]:
        _link_or_copy(old_dir / f"{plan.sid}.latency.json", new_dir / f"{plan.sid}.latency.json")
    return dict(plan.prev)


def _written(plan: _SeriesPlan, old_dir: Path | None, new_dir: Path) -> dict | None:
    """Write a series' files: extended from the previous build's when points were only
    appended, else from all its shards."""
    sid, prev = plan.sid, plan.prev
    fresh = plan.appended() if prev and old_dir and (old_dir / f"{sid}.json").is_file() else None
    if fresh is not None:
        main_old = loads((old_dir / f"{sid}.json").read_bytes())
        lat_old = loads((old_dir / f"{sid}.latency.json").read_bytes()) if prev["latency_bytes"] else None
        cols = Columns.from_files(main_old, lat_old, prev["cv_tail"])
        cols.append(fresh)
        # Change points and notes keep their indexes when only points were appended and each
        # resolved by run id; otherwise they are resolved against every point (full rebuild).
        reuse = (main_old["cp"], main_old["notes"]) if prev["refs_ok"] and prev["detect_key"] == plan.detect_key else None
        if reuse is None:
            fresh = None  # detection points into the series by run id: resolve against every point
    if fresh is None:
        points = plan.history.read_points(sid)
        if not points:
            return None
        cols = Columns()
        cols.append(points)
        reuse = None
        last_raw, last, t0 = points[-1], last_point(points), epoch(points[0].get("timestamp"))
    else:
        last_raw = fresh[-1] if fresh else prev["last_raw"]
        last = last_point(fresh) if fresh else prev["last"]
        t0 = prev["t0"]
    main, latency, refs_ok = assemble_series(sid, cols, plan.sdetect, plan.noise, plan.seg, plan.env_of, reuse)
    if reuse is not None:
        refs_ok = prev["refs_ok"]
    size = write(new_dir / f"{sid}.json", main)
    lat_size = write(new_dir / f"{sid}.latency.json", latency) if latency["m"] else 0
    if fresh is None:  # rebuilt: remember the newest shard as it is now, for the next build
        newest = plan.shards[-1] if plan.shards else None
        plan.newest_sha = plan.hashes[newest] if newest else None
        plan.newest_count = len(plan.history.read_shard(sid, newest)) if newest else 0
    return {
        "_how": "appended" if fresh is not None else "rebuilt",
        "key": plan.output_key(cols.fps.values),
        "dims_key": plan.dims_key,
        "detect_key": plan.detect_key,
        "refs_ok": refs_ok,
        "shards": plan.sizes,
        "shard_sha": plan.hashes,
        "tail_sha": plan.newest_sha,
        "shard_points": plan.newest_count,
        "n": cols.n,
        "t0": t0,
        "last": last,
        "last_key": list(point_order(last_raw)),
        "last_raw": {k: last_raw.get(k) for k in _LAST_FIELDS},
        "cv_tail": cols.cv_tail,
        "fps": cols.fps.values,
        "metrics": sorted(set(main["m"]) | set(main["more"])),
        "bytes": size,
        "latency_bytes": lat_size,
    }


def _safe_id(text: str) -> str:
    """An incident id as a file name: letters, digits, '-', '_' and '.' only."""
    return "".join(c if c.isalnum() or c in "-_." else "_" for c in str(text)).lstrip(".") or "_"


__all__ = ["BuildReport", "build_site"]
