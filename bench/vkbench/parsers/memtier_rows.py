"""What memtier's text table and its JSON share: row names and which rows make a record.

memtier names its rows after the command in the plural (``Sets``, ``Gets``, ``Msets``,
``Evals``) plus ``Waits`` and ``Totals``; its latency distributions are keyed by the
singular upper-case command (``SET``, ``MSET``). We use that singular form.
"""

from __future__ import annotations

from vkbench.parsers.text import fail

TOOL = "memtier_benchmark"

#: Column / key name -> record latency key (other levels, e.g. p75, have no slot in a Record).
PERCENTILE_KEYS = {50.0: "p50", 90.0: "p90", 95.0: "p95", 99.0: "p99", 99.9: "p999", 99.99: "p9999", 100.0: "max"}


def command_name(row: str) -> str:
    """``Sets`` -> ``SET``, ``Msets`` -> ``MSET``, ``Totals`` -> ``TOTALS`` (the all-commands row)."""
    if row == "Totals":
        return "TOTALS"
    return (row[:-1] if row.endswith("s") else row).upper()


def percentile_key(level: str) -> str | None:
    """``50``/``50.00``/``99.9``/``99.90`` -> ``p50``/``p999``; unsupported levels -> None."""
    try:
        return PERCENTILE_KEYS.get(round(float(level), 3))
    except (ValueError, OverflowError):
        return None


def wanted_row(row: str, rps: float | None, latency: dict[str, float], *, source: str,
               count: int | None = None) -> bool:
    """Whether a table row becomes a record.

    ``Waits`` is memtier's WAIT-command row, all ``---``/0 unless ``--wait-ratio`` is used.
    A row with 0 ops/sec and no latency is a command the run did not exercise (e.g. Sets
    under ``--ratio 0:1``). 0 ops/sec *with* latency is memtier's own bug: it ran requests
    but lost the count, so the throughput is wrong and we refuse the output.
    """
    if row == "Waits" or rps is None:
        return False
    if row == "Totals" and (rps == 0 or count == 0):
        raise fail(source, "memtier completed no request (Totals: 0 ops/sec)",
                   hint="memtier's output says why (connection refused, authentication, error replies); fix that first")
    if count == 0:
        # memtier >= 2.x counts requests: 0 is a command the run did not exercise (the GET row of
        # --ratio 1:0), whatever its empty histogram prints as percentiles.
        return False
    if rps == 0:
        if any(value > 0 for value in latency.values()):
            shown = ", ".join(f"{key} {value:g} ms" for key, value in latency.items())
            raise fail(
                source,
                f"memtier reported 0 ops/sec for {command_name(row)} while its latency is non-zero ({shown}): "
                "a known memtier bug (redis/memtier_benchmark#263, #128), the throughput cannot be trusted",
                hint="re-run without --cluster-mode for this command (or with a memtier release that fixes #263); "
                "do not use these numbers",
            )
        return False
    return True
