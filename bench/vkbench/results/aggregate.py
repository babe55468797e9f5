"""A tool's all-commands row (memtier's ``Totals``) is the run's aggregate, not a command.

Stored beside the commands, it became a third series next to SET and GET, with its own
detection and its own github-action-benchmark line. A result keeps it as ``aggregate`` (the
summary of the ``Totals`` row over repetitions) and each repetition as ``aggregate`` (its
record); ``summary`` and ``records`` hold commands only. Results written before hold TOTALS as
a command: :func:`split_aggregate` moves it when a result is read (``validate_result``), so
ingest, rebuild, export, compare, detection and the site never see it as one, and
:func:`command_series` leaves out the TOTALS series an older ingest added to a history.
"""

from __future__ import annotations

#: Commands that are rows over all commands, as the parsers name them (memtier's ``Totals``).
AGGREGATE_COMMANDS = frozenset({"TOTALS"})


def split_aggregate(result: dict) -> dict:
    """In place, and returned: the aggregate rows out of ``summary`` and every repetition's
    ``records`` into ``aggregate``. A result without them is left as it is."""
    for repetition in result.get("repetitions") or []:
        records = repetition.get("records") or []
        rows = [r for r in records if isinstance(r, dict) and r.get("command") in AGGREGATE_COMMANDS]
        if rows:
            repetition["records"] = [r for r in records if not (isinstance(r, dict) and r.get("command") in AGGREGATE_COMMANDS)]
            repetition.setdefault("aggregate", rows[0])
    summary = result.get("summary")
    if isinstance(summary, dict):
        moved = [summary.pop(command) for command in sorted(AGGREGATE_COMMANDS) if command in summary]
        if moved:
            result.setdefault("aggregate", moved[0])
    return result


def is_aggregate_series(entry: dict) -> bool:
    """A history series (index entry) of an aggregate row, ingested before it was one."""
    dims = entry.get("dims") if isinstance(entry, dict) else None
    return isinstance(dims, dict) and dims.get("command") in AGGREGATE_COMMANDS


def command_series(series: dict) -> dict:
    """The index's series without those of aggregate rows: what detection, advice and the site read."""
    return {sid: entry for sid, entry in series.items() if not is_aggregate_series(entry)}
