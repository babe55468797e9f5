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
    data/series/<sid>.json       a series' head (change points, segments, its chunk list), loaded when a view needs the series
    data/series/<sid>/<YYYY>.json  its points of one calendar year, columnar (series_data.py)
    data/series/<sid>/<YYYY>.latency.json  that year's less-viewed latency metrics, loaded only when shown
    data/build-manifest.json     what each file was built from: the next build is incremental

Only ``index.html``, ``.nojekyll``, ``assets/`` and ``data/`` are replaced (built beside them and
swapped in on success), so the site can be built into the gh-pages root next to ``history/``.
A sparse build (``sparse=True``: the output folder holds only :func:`site_inputs` of the
previous site, e.g. a sparse checkout) writes the changed files in place instead and says which
files it wrote and removed.
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
from .compact import Dictionary, compact_value, dumps, dumps_bytes, epoch, loads
from ..history.store import HistoryStore
from .history_reader import History, open_history, point_order
from . import insights
from .reference import load_references, reference_data
from .series_data import (METRICS as SERIES_METRICS, Columns, SeriesState, assemble_head, chunk_files, env_label, last_point,
                          series_detect, with_commit_links)

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
    sparse: bool = False
    #: Paths (relative to out_dir, "/"-separated) this build wrote, and the previous site's files it
    #: removed (no longer part of the site). A sparse build leaves every other file as it was,
    #: present or absent: the site is the previous one with these written and removed.
    written: list[str] = field(default_factory=list)
    removed: list[str] = field(default_factory=list)
    #: No manifest of this format said what the previous site held: ``written`` is the whole
    #: site, and any other file the build owns (OWNED) is stale (a sparse caller drops them).
    complete: bool = False

    def summary(self) -> str:
        sizes = ", ".join(f"{kind} {size / 1024:.1f} KiB" for kind, size in self.bytes.items())
        return (f"site written to {self.out_dir} ({self.mode}{' sparse' if self.sparse else ''} build: {self.rebuilt} series rebuilt, "
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


def _copy_vendor(out: "_Output") -> None:
    """uPlot (and its license) into the site, each file checked against the manifest."""
    for name, out_name in UPLOT_FILES.items():
        out.put(f"assets/vendor/{out_name}", _vendored("uplot", name))


def _copy_flamegraph(out: "_Output") -> None:
    def part(path: str) -> bytes:
        package, _, rest = path.partition("/")
        return _vendored(package, rest.rsplit("/", 1)[-1])

    bundle = "\n;\n".join(f"/* {p} */\n" + part(p).decode("utf-8") for p in FLAMEGRAPH_PARTS)
    out.put(f"assets/vendor/{FLAMEGRAPH_BUNDLE}", bundle.encode("utf-8"))
    out.put("assets/vendor/d3-flamegraph.css", part(FLAMEGRAPH_CSS))


def _copy_app(out: "_Output", build_id: str) -> None:
    static = resources.files("vkbench") / "site" / "static"
    for entry in sorted(static.iterdir(), key=lambda e: e.name):
        if entry.name == "index.html":
            html = entry.read_text(encoding="utf-8").replace("{{BUILD}}", build_id)
            out.put("index.html", html.encode("utf-8"))
        elif entry.is_file() and entry.name.endswith((".js", ".css")):
            out.put(f"assets/app/{entry.name}", entry.read_bytes())
    out.put(".nojekyll", b"")  # serve assets/ as is on GitHub Pages


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
               full: bool = False, store: HistoryStore | None = None, sparse: bool = False) -> BuildReport:
    """Build the trend site from ``history_dir`` into ``out_dir``.

    ``reference_dir``: published figures (results/reference) for the overlay; None draws none.
    ``repo``: ``owner/name`` whose commits the points' ``commit`` fields name; None links each
    engine's own repository (valkey-io/valkey, redis/redis).
    ``store``: the :class:`HistoryStore` of ``history_dir`` a caller already read through (publish:
    shards parsed by the ingest and detection are not parsed again).
    ``full``: rebuild every series. Otherwise series files the previous build wrote (per its
    ``data/build-manifest.json``) are kept when their inputs are unchanged and extended when
    points were only appended (a series' head and its newest year's chunk rewritten, closed
    years' chunks neither read nor rewritten); a missing or incompatible manifest means a full build.

    The site is built in a temporary directory inside ``out_dir``; a failing build leaves the
    previous site as it was. By default the new site is then swapped in whole (unchanged files
    hard-linked from the previous one). ``sparse``: ``out_dir`` may hold only some of the previous
    site's files (at least :func:`site_inputs`, e.g. a sparse checkout of the site branch): the
    files that changed are moved in place one by one (each atomically, the manifest last), files
    that no longer belong are deleted, and every other file is left as it is, present or absent;
    the report's ``written`` and ``removed`` say which (``complete`` when there was no manifest
    to tell the previous site's files).
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
            manifest = _load_manifest(out_dir)   # of this format: it lists the previous site's files
            previous = manifest if manifest is not None and not full and manifest.get("builder") == builder_id() else None
            old_files = _manifest_files(manifest) if manifest is not None else None
            references = load_references(Path(reference_dir)) if reference_dir is not None else []
            out = _Output(stage, out_dir, sparse, old_files or {})
            report, new_manifest = _build_into(out, out_dir if previous else None, previous, history, hashes, detect,
                                               refs, references, repo)
            report.out_dir, report.sparse = out_dir, sparse
            report.removed = sorted(set(old_files) - set(out.files)) if old_files is not None else []
            report.complete = old_files is None
            manifest_body = dumps_bytes(new_manifest)
            (stage / "data").mkdir(parents=True, exist_ok=True)
            (stage / "data" / MANIFEST).write_bytes(manifest_body)
            report.written = sorted(out.written) + [f"data/{MANIFEST}"]
            if sparse:
                report.removed = _move_in(stage, out_dir, out.written, report.removed, report.complete)
            else:
                _swap_in(stage, out_dir)
        finally:
            shutil.rmtree(stage, ignore_errors=True)
    return report


def site_inputs(out_dir: Path) -> list[str]:
    """Every file of the site in ``out_dir`` that the next incremental build reads, as paths
    relative to ``out_dir`` ("/"-separated), known from the build manifest alone: the manifest,
    each series' head and its newest year's chunk (with its latency chunk). A sparse build
    (``build_site(..., sparse=True)``) into a folder holding only these files writes the same
    site as a build into the whole previous site. Without a manifest the next build is a full
    one: nothing but the manifest (when there is one) is read."""
    out_dir = Path(out_dir)
    manifest_path = f"data/{MANIFEST}"
    manifest = _load_manifest(out_dir)
    if manifest is None or manifest.get("builder") != builder_id():
        return [manifest_path] if (out_dir / manifest_path).is_file() else []
    paths = [manifest_path]
    for sid, record in sorted(manifest["series"].items()):
        paths.append(_head_path(sid))
        if record["chunks"]:
            newest = record["chunks"][-1]
            paths.append(_chunk_path(sid, newest["y"]))
            if newest["lat"]:
                paths.append(_chunk_path(sid, newest["y"], latency=True))
    return paths


_STAGE_PREFIX = ".vkbench-build-"
_TRASH_PREFIX = ".vkbench-old-"
#: What the site build owns in its output directory (the rest, e.g. history/, is left alone).
OWNED = ("data", "assets", "index.html", "digest.html", ".nojekyll")
MANIFEST = "build-manifest.json"
#: 3: series in yearly chunks (a head per series), every file's digest, shard state as the
#: sealed months' digest + the newest month
MANIFEST_FORMAT = 3
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
    """The previous build's manifest when it is of this format (from any builder: it still
    says which files the site holds); None otherwise."""
    path = out_dir / "data" / MANIFEST
    try:
        manifest = loads(path.read_bytes())
    except (OSError, ValueError):
        return None
    if not isinstance(manifest, dict) or manifest.get("format") != MANIFEST_FORMAT:
        return None
    if not isinstance(manifest.get("series"), dict) or not isinstance(manifest.get("files"), dict):
        return None
    return manifest


def _head_path(sid: str) -> str:
    return f"data/series/{sid}.json"


def _chunk_path(sid: str, year: int, latency: bool = False) -> str:
    return f"data/series/{sid}/{year}{'.latency' if latency else ''}.json"


def _series_files(sid: str, record: dict) -> dict[str, str]:
    """The files of a series as its manifest record lists them: path -> digest."""
    files = {_head_path(sid): record["head"][1]}
    for c in record["chunks"]:
        files[_chunk_path(sid, c["y"])] = c["h"]
        if c["lat"]:
            files[_chunk_path(sid, c["y"], latency=True)] = c["lh"]
    return files


def _manifest_files(manifest: dict) -> dict[str, str]:
    """Every file of the site a manifest describes (but the manifest): path -> digest."""
    files = dict(manifest["files"])
    for sid, record in manifest["series"].items():
        files.update(_series_files(sid, record))
    return files


def _digest(value) -> str:
    return hashlib.sha256(dumps(value).encode()).hexdigest()[:24]


def _file_digest(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()[:24]


class _Output:
    """The files of the new site, written into the stage. ``put`` writes one (a sparse build
    skips a file whose digest the previous manifest records: unchanged, whether present or
    not); ``keep`` takes one unchanged from the previous site (hard-linked into the stage of a
    whole-site build: nothing is rewritten). ``files`` is every file of the new site with its
    digest; ``written`` what was written."""

    def __init__(self, stage: Path, old_out: Path, sparse: bool, old_files: dict[str, str]):
        self.stage, self.old_out, self.sparse, self.old_files = stage, old_out, sparse, old_files
        self.files: dict[str, str] = {}
        self.written: list[str] = []

    def put(self, rel: str, data: bytes, digest: str | None = None) -> tuple[int, str]:
        """``digest``: what the manifest records instead of the bytes' (index.json: its content
        without the build time, so equal builds have equal manifests); the file is then always
        written."""
        forced = digest is not None
        digest = self.files[rel] = digest or _file_digest(data)
        if forced or not (self.sparse and self.old_files.get(rel) == digest):
            path = self.stage / rel
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(data)
            self.written.append(rel)
        return len(data), digest

    def put_json(self, rel: str, value) -> tuple[int, str]:
        return self.put(rel, dumps_bytes(value))

    def keep(self, rel: str, digest: str) -> None:
        self.files[rel] = digest
        if not self.sparse:
            dest = self.stage / rel
            dest.parent.mkdir(parents=True, exist_ok=True)
            _link_or_copy(self.old_out / rel, dest)


def _read_site_file(out_dir: Path, rel: str, expected: tuple[int, str]) -> dict | None:
    """A file of the previous site, parsed, when it is as the manifest recorded it (size, digest);
    None when it is absent or differs (e.g. an interrupted sparse build moved a newer one in):
    the series is then rebuilt from its shards."""
    try:
        data = (out_dir / rel).read_bytes()
    except OSError:
        return None
    if len(data) != expected[0] or _file_digest(data) != expected[1]:
        return None
    return loads(data)


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


def _move_in(stage: Path, out_dir: Path, written: list[str], removed: list[str], complete: bool) -> list[str]:
    """A sparse build's files into ``out_dir``, each by an atomic rename, then the stale files
    deleted, then the manifest. An interruption leaves the previous manifest, which the files
    moved in so far no longer match: the next build rebuilds those series. Returns what was
    removed (``complete``: also every owned file on disk that is not part of the new site)."""
    for rel in written:
        dest = out_dir / rel
        dest.parent.mkdir(parents=True, exist_ok=True)
        os.replace(stage / rel, dest)
    removed = list(removed)
    if complete:
        new = set(written)
        for name in OWNED:
            top = out_dir / name
            found = [top] if top.is_file() else sorted(p for p in top.rglob("*") if p.is_file()) if top.is_dir() else []
            removed += [rel for p in found if (rel := p.relative_to(out_dir).as_posix()) not in new and rel != f"data/{MANIFEST}"]
    for rel in removed:
        (out_dir / rel).unlink(missing_ok=True)
        parent = (out_dir / rel).parent
        while parent != out_dir and parent.is_dir() and not any(parent.iterdir()):
            parent.rmdir()
            parent = parent.parent
    os.replace(stage / "data" / MANIFEST, out_dir / "data" / MANIFEST)
    return sorted(removed)


def _shard_state(months: list[str], sizes: dict[str, int], hashes: dict[str, str]) -> dict:
    """What the append check needs of a series' shards, without growing with its history: the
    digest of every month but the newest (sealed: ingest appends only to the newest), and the
    newest month's size and sha256."""
    return {"sealed": _digest([[m, sizes[m], hashes[m]] for m in months[:-1]]),
            "newest": [months[-1], sizes[months[-1]], hashes[months[-1]]] if months else None}


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
        self.shard_state = _shard_state(self.shards, self.sizes, self.hashes)
        self.dims_key = _digest([entry.get("dims"), entry.get("arch")])
        self.detect_key = _digest([sdetect.get("cps") or [], [[i.get("id"), i.get("annotation"), i.get("bad")] for i in sdetect.get("incidents") or []]])
        #: how many points detection saw in this series (its indexes are into exactly those)
        self.detected_points = ((detect.get("series_state") or {}).get(sid) or {}).get("points")

    def indexes_resolve(self, n: int) -> bool:
        """Detection's change points index this series' ``n`` points as the site orders them
        (both by timestamp, then run id: detection ran on exactly these points), and every
        incident's first bad run is one of its change points: the head can place them by index
        without the run ids of every point."""
        cps = self.sdetect.get("cps") or []
        if self.detected_points != n or not all(isinstance(cp.get("index"), int) and 0 <= cp["index"] < n for cp in cps):
            return False
        runs = {cp.get("run_id") for cp in cps}
        return all((incident.get("bad") or {}).get("run_id") in runs for incident in self.sdetect.get("incidents") or [])

    def output_key(self, fps: list[str]) -> str:
        """Everything the series files depend on besides the points themselves."""
        labels = [env_label(f, self.env_of(f) if f else None) for f in fps]
        return _digest([self.dims_key, self.detect_key, self.noise, [s.get("start_index") for s in self.seg], labels])

    def files_present(self, old_out: Path, chunks: list[dict], head: bool = True) -> bool:
        """The previous site holds these files of the series at their recorded sizes (a whole-site
        build links them; a damaged site gets the series rebuilt)."""
        p = self.prev
        if head and _size(old_out / _head_path(self.sid)) != p["head"][0]:
            return False
        return all(_size(old_out / _chunk_path(self.sid, c["y"])) == c["b"]
                   and (not c["lat"] or _size(old_out / _chunk_path(self.sid, c["y"], latency=True)) == c["lb"])
                   for c in chunks)

    def unchanged(self, old_out: Path, sparse: bool) -> bool:
        p = self.prev
        if p["shards"] != self.shard_state or p["key"] != self.output_key(p["fps"]):
            return False
        return sparse or self.files_present(old_out, p["chunks"])

    def appended(self) -> list[dict] | None:
        """The points added since the previous build when that is all that changed: the months
        before the previous newest one unchanged (their digest), the newest one only grew at its
        end (its old bytes unchanged), new shards are newer months, and every new point sorts
        after the previous newest point. None otherwise."""
        p = self.prev
        old = p["shards"]
        if p["dims_key"] != self.dims_key or not old["newest"] or not p["last_key"][0]:
            return None     # (a newest point without a timestamp: its year is its predecessors')
        newest, old_size, old_sha = old["newest"]
        before = [m for m in self.shards if m < newest]
        if _digest([[m, self.sizes[m], self.hashes[m]] for m in before]) != old["sealed"]:
            return None
        grown = self.sizes.get(newest)
        if grown is None or grown < old_size:
            return None
        if grown == old_size and self.hashes[newest] != old_sha:
            return None     # rewritten in place (a version-1 history has no digests to refuse it by)
        fresh: list[dict] = []
        if grown > old_size:
            got = self.history.read_appended(self.sid, newest, old_size, old_sha)
            if got is None:
                return None
            fresh.extend(got[0])
        for month in self.shards:
            if month > newest:
                fresh.extend(self.history.read_shard(self.sid, month))
        fresh.sort(key=point_order)
        if fresh and point_order(fresh[0]) <= tuple(p["last_key"]):
            return None
        return fresh


def _size(path: Path) -> int | None:
    try:
        return path.stat().st_size
    except FileNotFoundError:
        return None


def _build_into(out: _Output, old_out: Path | None, previous: dict | None, history: History,
                hashes: dict[str, dict[str, dict]], detect: dict, refs: dict, references: list[dict],
                repo: str | None) -> tuple[BuildReport, dict]:
    _copy_vendor(out)  # fail early, before the long part
    _copy_flamegraph(out)
    report = BuildReport(out_dir=out.stage, mode="incremental" if previous else "full")
    env_of = lru_cache(maxsize=None)(history.fingerprint)
    by_series = series_detect(detect)
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
        record = _kept(plan, out, old_out) if prev and old_out else None
        if record is not None:
            report.kept += 1
        else:
            record = _written(plan, out, old_out)
            if record is None:
                continue  # a series without points has no file
        manifest_series[sid] = record
        main_bytes = record["head"][0] + sum(c["b"] for c in record["chunks"])
        series_bytes += main_bytes
        latency_bytes += sum(c["lb"] for c in record["chunks"])
        report.largest_series_bytes = max(report.largest_series_bytes, main_bytes)
        report.series += 1
        report.points += record["n"]
        metrics_seen.update(record["metrics"])
        _collect_last(latest, str(dims.get("machine_class")), record["last_raw"])
        series_rows.append({
            "id": sid,
            "d": [dictionaries[k].code(compact_value(dims.get(k))) for k in dim_keys],
            "n": record["n"],
            "t0": record["t0"],
            "y": [c["y"] for c in record["chunks"]],   # its chunks: the browser fetches them with the head
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
        out.put_json(f"data/profiles/{_safe_id(incident_id)}.json", doc)

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
    report.bytes["index"] = out.put("data/index.json", dumps_bytes(index), digest=_file_digest(body.encode()))[0]
    report.bytes["detect"] = out.put_json("data/detect.json", _slim_detect(detect))[0]
    report.bytes["reference"] = out.put_json("data/reference.json", refs)[0]
    report.bytes["advice"] = out.put_json("data/advice.json", advice)[0]
    report.bytes["series"] = series_bytes
    report.bytes["series_latency"] = latency_bytes
    report.references = len(refs["references"])
    _copy_app(out, build_id)
    _write_digest(out, history)
    series_paths = {rel for sid, record in manifest_series.items() for rel in _series_files(sid, record)}
    files = {rel: digest for rel, digest in sorted(out.files.items()) if rel not in series_paths}
    manifest = {"format": MANIFEST_FORMAT, "builder": builder_id(), "series": manifest_series, "files": files}
    return report, manifest


def _write_digest(out: _Output, history: History) -> None:
    """``digest.html`` and ``data/digest.json``: the week before the history's last update (the
    weekly issue's digest, vkbench.digest), so the page does not age between builds."""
    from ..digest import build_digest, render_html

    updated = history.index.get("updated")
    try:
        now = datetime.fromisoformat(str(updated).replace("Z", "+00:00")) if updated else None
    except ValueError:
        now = None
    digest = build_digest(history.root, now=now, store=history.store)
    out.put("data/digest.json", (json.dumps(digest, indent=1) + "\n").encode("utf-8"))
    out.put("digest.html", render_html(digest).encode("utf-8"))


def _link_or_copy(src: Path, dest: Path) -> None:
    try:
        os.link(src, dest)
    except OSError:
        shutil.copyfile(src, dest)


def _kept(plan: _SeriesPlan, out: _Output, old_out: Path) -> dict | None:
    """Reuse the previous build's files of an unchanged series (nothing is read or rewritten)."""
    if not plan.unchanged(old_out, out.sparse):
        return None
    for rel, digest in _series_files(plan.sid, plan.prev).items():
        out.keep(rel, digest)
    return dict(plan.prev)


def _extension(plan: _SeriesPlan, out: _Output, old_out: Path
               ) -> tuple[list[dict], dict, SeriesState, dict[int, Columns], bool] | None:
    """When the series only grew: (the new points, the previous head, the series' state, the
    columns of the chunks that get points: the newest previous year's read back, new years'
    empty, whether change points are placed by detection's indexes). Reads the previous head
    and, only when the night's points fall in its year, the newest chunk; never a closed
    year's. None when the series must be rebuilt instead."""
    sid, prev = plan.sid, plan.prev
    fresh = plan.appended()
    # Change points and notes keep their indexes when only points were appended and each
    # resolved by run id; when detection changed since, they are placed by its indexes if those
    # are into exactly these points; otherwise they are resolved against every point (rebuild).
    if fresh is None or not prev["refs_ok"]:
        return None
    by_index = prev["detect_key"] != plan.detect_key
    if by_index and not plan.indexes_resolve(prev["n"] + len(fresh)):
        return None
    head = _read_site_file(old_out, _head_path(sid), prev["head"])
    if head is None:
        return None
    state = SeriesState.from_record(prev)
    newest = prev["chunks"][-1] if prev["chunks"] else None
    groups = state.add(fresh)
    grown = {year for year, _ in groups}
    closed = [c for c in prev["chunks"] if c["y"] not in grown]
    if not out.sparse and not plan.files_present(old_out, closed, head=False):
        return None     # a whole-site build links them: they must be there
    touched: dict[int, Columns] = {}
    for year, points in groups:
        cols = Columns()
        if newest is not None and year == newest["y"]:
            main = _read_site_file(old_out, _chunk_path(sid, year), (newest["b"], newest["h"]))
            latency = _read_site_file(old_out, _chunk_path(sid, year, latency=True), (newest["lb"], newest["lh"])) if newest["lat"] else None
            if main is None or (newest["lat"] and latency is None):
                return None
            cols = Columns.from_chunk(main, latency)
        cols.append(points)
        touched[year] = cols
    return fresh, head, state, touched, by_index


def _written(plan: _SeriesPlan, out: _Output, old_out: Path | None) -> dict | None:
    """Write a series' files: the head and the chunks of the years that got points when points
    were only appended, else every file from all its shards."""
    sid, prev = plan.sid, plan.prev
    extension = _extension(plan, out, old_out) if prev and old_out else None
    by_index = False
    if extension is not None:
        fresh, old_head, state, touched, by_index = extension
        reuse = None if by_index else (old_head["cp"], old_head["notes"])
        last_raw = fresh[-1] if fresh else prev["last_raw"]
        last = last_point(fresh) if fresh else prev["last"]
        t0 = prev["t0"]
    else:
        points = plan.history.read_points(sid)
        if not points:
            return None
        state = SeriesState()
        touched = {}
        for year, pts in state.add(points):
            touched[year] = cols = Columns()
            cols.append(pts)
        reuse = None
        last_raw, last, t0 = points[-1], last_point(points), epoch(points[0].get("timestamp"))
    for c in state.chunks:
        year = c["y"]
        if year not in touched:     # a closed year: unchanged
            out.keep(_chunk_path(sid, year), c["h"])
            if c["lat"]:
                out.keep(_chunk_path(sid, year, latency=True), c["lh"])
            continue
        main, latency = chunk_files(sid, year, touched[year])
        c["b"], c["h"] = out.put_json(_chunk_path(sid, year), main)
        c["lat"] = 1 if latency["m"] else 0
        c["lb"], c["lh"] = out.put_json(_chunk_path(sid, year, latency=True), latency) if c["lat"] else (0, None)
    head, refs_ok = assemble_head(sid, state, plan.sdetect, plan.noise, plan.seg, plan.env_of, reuse, by_index=by_index)
    if reuse is not None:
        refs_ok = prev["refs_ok"]
    return {
        "_how": "appended" if extension is not None else "rebuilt",
        "key": plan.output_key(state.fps.values),
        "dims_key": plan.dims_key,
        "detect_key": plan.detect_key,
        "refs_ok": refs_ok,
        "shards": plan.shard_state,
        "t0": t0,
        "last": last,
        "last_key": list(point_order(last_raw)),
        "last_raw": {k: last_raw.get(k) for k in _LAST_FIELDS},
        **state.record(),
        "head": list(out.put_json(_head_path(sid), head)),
    }


def _safe_id(text: str) -> str:
    """An incident id as a file name: letters, digits, '-', '_' and '.' only."""
    return "".join(c if c.isalnum() or c in "-_." else "_" for c in str(text)).lstrip(".") or "_"


__all__ = ["BuildReport", "build_site", "site_inputs"]
