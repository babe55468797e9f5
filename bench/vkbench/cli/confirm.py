"""``vkbench confirm``: record a confirmation A/B's verdict on a detection candidate."""

from __future__ import annotations

from pathlib import Path

import click

from ..detect import confirmations
from ..detect.runner import run_detection
from ..errors import UsageError
from ..history.store import HistoryStore


@click.command("confirm")
@click.option("--history", "history", type=click.Path(file_okay=False, path_type=Path), required=True)
@click.option("--id", "request_id", required=True, help="The candidate's request id (confirm-...), from detect.json.")
@click.option("--ab", "ab_file", type=click.Path(exists=True, dir_okay=False, path_type=Path), required=True,
              help="The A/B's ab.json (vkbench ab --out DIR writes DIR/ab.json).")
@click.option("--annotations", type=click.Path(exists=True, dir_okay=False, path_type=Path), default=None)
def confirm_cmd(history: Path, request_id: str, ab_file: Path, annotations: Path | None) -> None:
    """Record whether the A/B confirms candidate ID of HISTORY; re-run detection so a confirmed
    candidate is an incident now (a rejected or inconclusive one is recorded and never alerts)."""
    doc = run_detection(history, annotations, write=False)
    waiting = {r["id"]: r for r in (doc.get("confirmation") or {}).get("waiting", [])}
    if request_id not in waiting:
        known = ", ".join(sorted(waiting)) or "none"
        raise UsageError(f"{request_id} is not a candidate waiting for confirmation in {history}",
                         hint=f"waiting: {known} (already recorded ones are in {confirmations.CONFIRMATIONS})")
    report = confirmations.read_ab_report(ab_file)
    request = waiting[request_id]
    base, cand = (report.get("base") or {}).get("commit"), (report.get("candidate") or {}).get("commit")
    if (base, cand) != (request["good"].get("commit"), request["bad"].get("commit")):
        raise UsageError(f"{ab_file} compares {base} with {cand}, the candidate needs "
                         f"{request['good'].get('commit')} with {request['bad'].get('commit')}",
                         hint="run the A/B the request names (tools/ci/confirm.sh dispatches it)")
    entry = confirmations.record(HistoryStore(history), request, report)
    run_detection(history, annotations, write=True)
    ab = entry["ab"]
    click.echo(f"{request_id}: {entry['status']} (A/B {_pct(ab['change'])}, 95% interval "
               f"{_pct(ab['ci_low'])} .. {_pct(ab['ci_high'])}, MDE {_pct(ab['mde'])})")


def _pct(value) -> str:
    return "n/a" if value is None else f"{value * 100:+.1f}%"
