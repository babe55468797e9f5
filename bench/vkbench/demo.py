"""The README's main job as one library call: run a preset on loopback, ingest the results into
a local history, detect regressions, build the trend site."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from .runner.session import RunOptions, RunReport, run_session

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
    demo = DemoReport(run=report, paths=paths)
    written = [o.path for o in report.outcomes if o.path]
    if written:
        demo.ingested = ingest(HistoryStore(paths.history), written).to_dict()
    demo.detection = run_detection(paths.history, annotations_file())
    demo.summary_markdown = render_summary(demo.detection)
    site = build_site(paths.history, paths.site, reference_dir=packaged_reference_dir())
    demo.site_summary = site.summary()
    return demo
