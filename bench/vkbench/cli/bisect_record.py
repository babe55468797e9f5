"""``vkbench bisect-record``: record a bisect's culprit under its incident in the history."""

from __future__ import annotations

from pathlib import Path

import click

from .. import markdown as md
from ..detect import bisects
from ..detect.runner import run_detection
from ..errors import UsageError
from ..history.store import HistoryStore


@click.command("bisect-record")
@click.option("--history", "history", type=click.Path(file_okay=False, path_type=Path), required=True)
@click.option("--incident", "incident_id", required=True, help="The incident's id in detect.json.")
@click.option("--bisect", "report_file", type=click.Path(dir_okay=False, path_type=Path), required=True,
              help="The bisect's bisect.json (vkbench bisect --out DIR writes DIR/bisect.json).")
@click.option("--run-url", default=None, help="The workflow run of the bisect (linked from the issue).")
@click.option("--annotations", type=click.Path(exists=True, dir_okay=False, path_type=Path), default=None,
              help="Annotations YAML detection applies (as publish does).")
def bisect_record_cmd(history: Path, incident_id: str, report_file: Path, run_url: str | None,
                      annotations: Path | None) -> None:
    """Record the bisect of incident ID in HISTORY/bisects.json and re-run detection, so the
    incident in detect.json (and so its issue, the job summary and the site) names the culprit."""
    report = bisects.read_report(report_file)
    doc = run_detection(history, annotations, write=False)
    incident = next((i for i in doc["incidents"] if i.get("id") == incident_id), None)
    if incident is None:
        known = ", ".join(sorted(str(i.get("id")) for i in doc["incidents"])) or "none"
        raise UsageError(f"{incident_id} is not an incident of {history}", hint=f"incidents: {known}")
    entry = bisects.record(HistoryStore(history), incident, report, run_url=run_url)
    run_detection(history, annotations, write=True)
    if not entry["reproduced"]:
        click.echo(f"{incident_id}: the regression did not reproduce in the bisect's A/B of the two ends; no culprit")
        return
    if not entry.get("resolved", True):
        click.echo(f"{incident_id}: the bisect's step limit stopped it before one commit remained; no culprit, "
                   f"after {len(entry['steps'])} A/B steps")
        return
    low, high = entry["ci_low"], entry["ci_high"]
    interval = f" (95% interval {low * 100:+.1f}% .. {high * 100:+.1f}%)" if low is not None and high is not None else ""
    effect = f": {entry['effect'] * 100:+.1f}% on {md.text(entry['measure'])}{interval}" if entry["effect"] is not None else ""
    # Markdown (the job summary shows it): the subject is the commit author's text.
    click.echo(f"{incident_id}: culprit `{entry['culprit'][:12]}` {md.text(entry['culprit_subject'] or '')}{effect}, "
               f"after {len(entry['steps'])} A/B steps")
