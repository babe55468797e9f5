"""The README's main job as one library call: run a preset on loopback, ingest the results into
a local history, detect regressions, build the trend site."""

from __future__ import annotations

import math
import shutil
from dataclasses import dataclass, field, replace
from pathlib import Path

from .runner.session import RunOptions, RunReport, run_session

#: Each sized repetition is planned to last this many times the validity minimum (too-short):
#: a fresh machine's speed varies between the probe and the run (load, frequency, caches).
SIZING_MARGIN = 1.6
#: Never more requests than this per repetition (a very fast machine, or a probe that misread).
MAX_REQUESTS = 50_000_000

#: Annotations of known changes, when the demo runs in a checkout (or a directory laid out like one).
ANNOTATIONS = Path("results") / "annotations.yaml"


@dataclass
class DemoPaths:
    base: Path

    @property
    def results(self) -> Path:
        return self.base / "results"

    @property
    def history(self) -> Path:
        return self.base / "history"

    @property
    def site(self) -> Path:
        return self.base / "site"


@dataclass
class DemoReport:
    run: RunReport
    paths: DemoPaths
    ingested: dict = field(default_factory=dict)
    detection: dict = field(default_factory=dict)
    summary_markdown: str = ""
    site_summary: str = ""


@dataclass
class Sizing:
    """How the demo sized one topology's repetitions on this machine."""

    topology: str
    probe_requests: int
    probe_seconds: float
    minimum_seconds: float
    requests: int

    def describe(self) -> str:
        planned = self.requests * self.probe_seconds / self.probe_requests
        return (f"{self.topology}: {self.requests:,} requests a repetition (about {planned:.1f} s here; "
                f"too-short below {self.minimum_seconds:.0f} s)")


def nice_ceiling(value: float) -> int:
    """The smallest 1, 2 or 5 times a power of ten at or above ``value``: the same machine gets
    the same request count run after run (requests is a series dimension), a faster one the next step."""
    if value <= 1:
        return 1
    exponent = math.floor(math.log10(value))
    for step in (1, 2, 5, 10):
        candidate = step * 10 ** exponent
        if candidate >= value:
            return int(candidate)
    return int(10 ** (exponent + 1))


def minimum_seconds(cell) -> float:
    """The repetition length below which validity flags ``too-short`` for this cell."""
    from .runner import validity
    from .topology.model import Topology

    threaded = cell.tool != "memtier_benchmark" and validity.client_thread_count(cell, Topology.parse(cell.topology).shards) > 1
    return validity.MIN_THREADED_REPETITION_SECONDS if threaded else validity.MIN_REPETITION_SECONDS


SIZING_FILE = "sizing.json"


def size_cells(cells, paths: DemoPaths, options: RunOptions, progress=None) -> tuple[list, list[Sizing]]:
    """Cells whose repetitions last long enough on this machine: one unrecorded repetition of the
    first cell of each topology measures its time per request, and every cell of that topology
    gets ``minimum x SIZING_MARGIN`` worth of requests (rounded up to 1-2-5, never fewer than the
    preset asks). The sizing is kept in ``<dir>/sizing.json`` and reused by the next demo in that
    directory, so its runs stay in the same series (requests is a series dimension). Cells with
    a duration, or whose probe failed, are left as they are."""
    from .files import write_json

    def sizable(cell) -> bool:
        return bool(cell.requests) and not cell.duration and cell.instrument != "instructions"

    saved_path = paths.base / SIZING_FILE
    saved = _read_sizing(saved_path)
    probes: dict[str, object] = {}
    for cell in cells:
        if sizable(cell) and f"{cell.topology}@{cell.requests}" not in saved:
            probes.setdefault(cell.topology, cell)
    if probes:
        probe_dir = paths.base / "sizing"
        probe_options = replace(options, out_dir=probe_dir, run_id=f"{options.run_id or 'demo'}-sizing", profile=False)
        try:
            report = run_session([c.model_copy(update={"repetitions": 1}) for c in probes.values()], probe_options,
                                 progress=progress)
        finally:
            shutil.rmtree(probe_dir, ignore_errors=True)
        for outcome in report.outcomes:
            repetitions = (outcome.result or {}).get("repetitions") or []
            elapsed = repetitions[0].get("elapsed_s") if repetitions else None
            if not elapsed:
                continue
            cell = outcome.cell
            minimum = minimum_seconds(cell)
            wanted = cell.requests * minimum * SIZING_MARGIN / elapsed
            requests = min(MAX_REQUESTS, max(cell.requests, nice_ceiling(wanted)))
            saved[f"{cell.topology}@{cell.requests}"] = Sizing(cell.topology, cell.requests, float(elapsed), minimum, requests)
        paths.base.mkdir(parents=True, exist_ok=True)
        write_json(saved_path, {key: vars(value) for key, value in sorted(saved.items())}, indent=1)
    used: dict[str, Sizing] = {}
    sized = []
    for cell in cells:
        sizing = saved.get(f"{cell.topology}@{cell.requests}") if sizable(cell) else None
        if sizing is not None:
            used[f"{cell.topology}@{cell.requests}"] = sizing
            cell = cell.model_copy(update={"requests": sizing.requests})
        sized.append(cell)
    return sized, list(used.values())


def forget_short_sizings(paths: DemoPaths, report: RunReport) -> list[str]:
    """Drop from sizing.json the topologies whose results were still flagged too-short (the probe
    ran while the machine was busier than now): the next demo probes them again."""
    from .files import write_json

    saved_path = paths.base / SIZING_FILE
    saved = _read_sizing(saved_path)
    short = {(o.cell.topology, o.cell.requests) for o in report.outcomes if o.result
             and any(f.get("code") == "too-short" for f in o.result["validity"].get("flags") or [])}
    dropped = [key for key, sizing in saved.items() if (sizing.topology, sizing.requests) in short]
    if dropped:
        write_json(saved_path, {key: vars(value) for key, value in sorted(saved.items()) if key not in dropped}, indent=1)
    return dropped


def _read_sizing(path: Path) -> dict[str, Sizing]:
    """An earlier demo's sizing; anything unreadable is ignored (the demo probes again)."""
    import json

    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        return {str(key): Sizing(**value) for key, value in data.items()
                if isinstance(value, dict) and isinstance(value.get("requests"), int) and 1 <= value["requests"] <= MAX_REQUESTS}
    except (OSError, ValueError, TypeError, AttributeError):
        return {}


def annotations_file() -> Path | None:
    path = Path.cwd() / ANNOTATIONS
    return path if path.is_file() else None


def run_demo(cells, paths: DemoPaths, options: RunOptions, progress=None) -> DemoReport:
    from .alerts.summary import render_summary
    from .detect import run_detection
    from .history import HistoryStore, ingest
    from .site.build import build_site
    from .site.reference import packaged_reference_dir

    options.out_dir = paths.results / (options.run_id or "")
    report = run_session(cells, options, progress=progress)
    forget_short_sizings(paths, report)
    demo = DemoReport(run=report, paths=paths)
    written = [o.path for o in report.outcomes if o.path]
    if written:
        demo.ingested = ingest(HistoryStore(paths.history), written).to_dict()
    demo.detection = run_detection(paths.history, annotations_file())
    demo.summary_markdown = render_summary(demo.detection)
    site = build_site(paths.history, paths.site, reference_dir=packaged_reference_dir())
    demo.site_summary = site.summary()
    return demo
