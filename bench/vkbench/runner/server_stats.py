"""The server's own account of a measured window: INFO commandstats, INFO cpu and, where the
server offers it (Valkey 8+), INFO latencystats.

With these next to the client's numbers a regression can be told apart: server-side (usec per
call or CPU per request grew) or client-side (the server's latency held, the client's grew).

The window starts with ``CONFIG RESETSTAT`` on every primary, because latencystats are
cumulative percentiles that cannot be subtracted; commandstats and CPU are read before and
after and subtracted as well, so they stay right even where the reset is refused. Clusters and
replicated topologies are summed over primaries (the nodes the tool writes to); percentiles,
which cannot be added, keep the worst primary's (as the client merge does for several tools).

Reading stats never fails a repetition: a server that refuses is recorded as ``error``.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

from ..topology.backend import Deployment
from ..topology.readiness import connect, info

#: Commands vkbench itself sends during the window (not part of the workload).
PROBE_COMMANDS = frozenset({"INFO", "CONFIG|RESETSTAT", "AUTH", "HELLO"})
TIMEOUT_S = 5.0


def parse_commandstats(fields: dict[str, str]) -> dict[str, dict[str, float]]:
    """``cmdstat_set:calls=3,usec=9,usec_per_call=3.00,...`` -> ``{"SET": {"calls": 3, "usec": 9, ...}}``."""
    out: dict[str, dict[str, float]] = {}
    for key, value in fields.items():
        if not key.startswith("cmdstat_"):
            continue
        stats: dict[str, float] = {}
        for part in value.split(","):
            name, _, number = part.partition("=")
            try:
                stats[name] = float(number)
            except ValueError:
                continue
        out[key[len("cmdstat_"):].upper()] = stats
    return out


def parse_latencystats(fields: dict[str, str]) -> dict[str, dict[str, float]]:
    """``latency_percentiles_usec_set:p50=1.003,p99=2.007,p99.9=3.007`` -> ``{"SET": {"p50": 1.003, ...}}``."""
    prefix = "latency_percentiles_usec_"
    out: dict[str, dict[str, float]] = {}
    for key, value in fields.items():
        if not key.startswith(prefix):
            continue
        stats = {}
        for part in value.split(","):
            name, _, number = part.partition("=")
            try:
                stats[name] = float(number)
            except ValueError:
                continue
        out[key[len(prefix):].upper()] = stats
    return out


def _cpu_seconds(fields: dict[str, str]) -> dict[str, float]:
    return {k: float(v) for k, v in fields.items() if k.startswith("used_cpu_") and _is_number(v)}


def _is_number(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True


@dataclass
class Window:
    """One measured window: open connections to the primaries and their counters at the start."""

    clients: list = field(default_factory=list)
    cpu_before: list[dict[str, float]] = field(default_factory=list)
    commands_before: list[dict[str, dict[str, float]]] = field(default_factory=list)
    reset: bool = False
    started: float = 0.0
    error: str | None = None


def begin(deployment: Deployment) -> Window:
    window = Window()
    try:
        for endpoint in deployment.primaries:
            client = connect(endpoint.host, endpoint.port, deployment.spec.password, timeout=TIMEOUT_S, tls=deployment.spec.tls)
            window.clients.append(client)
        window.reset = True
        for client in window.clients:
            try:
                client.execute_command("CONFIG", "RESETSTAT")
            except Exception:   # noqa: BLE001 - a server may refuse (renamed command); deltas still work
                window.reset = False
            window.cpu_before.append(_cpu_seconds(info(client, "cpu")))
            window.commands_before.append(parse_commandstats(info(client, "commandstats")))
    except Exception as exc:   # noqa: BLE001 - stats are evidence, never a reason to fail a repetition
        window.error = f"{type(exc).__name__}: {exc}"
    window.started = time.monotonic()
    return window


def end(window: Window, elapsed_s: float | None = None) -> dict:
    """The window's server-side evidence (schema: repetition ``server``)."""
    elapsed = elapsed_s if elapsed_s else time.monotonic() - window.started
    try:
        if window.error:
            return {"error": window.error}
        commands: dict[str, dict[str, float]] = {}
        cpu: dict[str, float] = {}
        latency: dict[str, dict[str, float]] | None = None
        for n, client in enumerate(window.clients):
            fields = info(client, "cpu")
            for key, value in _cpu_seconds(fields).items():
                cpu[key] = cpu.get(key, 0.0) + value - window.cpu_before[n].get(key, 0.0)
            after = parse_commandstats(info(client, "commandstats"))
            for command, stats in after.items():
                if command in PROBE_COMMANDS:
                    continue
                before = window.commands_before[n].get(command, {})
                calls = stats.get("calls", 0) - before.get("calls", 0)
                if calls <= 0:
                    continue
                total = commands.setdefault(command, {"calls": 0, "usec": 0, "failed_calls": 0, "rejected_calls": 0})
                total["calls"] += int(calls)
                total["usec"] += int(stats.get("usec", 0) - before.get("usec", 0))
                for key in ("failed_calls", "rejected_calls"):
                    total[key] += int(stats.get(key, 0) - before.get(key, 0))
            if window.reset:
                node_latency = _latencystats(client)
                if node_latency is not None:
                    latency = latency or {}
                    for command, pcts in node_latency.items():
                        if command in PROBE_COMMANDS or command not in commands:
                            continue
                        worst = latency.setdefault(command, {})
                        for key, value in pcts.items():
                            worst[key] = max(worst.get(key, 0.0), value)
        for stats in commands.values():
            stats["usec_per_call"] = round(stats["usec"] / stats["calls"], 3) if stats["calls"] else None
        busy = cpu.get("used_cpu_sys", 0.0) + cpu.get("used_cpu_user", 0.0)
        return {
            "primaries": len(window.clients),
            "reset": window.reset,
            "commands": commands,
            "cpu": {
                **{key: round(value, 4) for key, value in sorted(cpu.items())},
                "cores": round(busy / elapsed, 3) if elapsed else None,
            },
            "latency_usec": latency,
        }
    except Exception as exc:   # noqa: BLE001
        return {"error": f"{type(exc).__name__}: {exc}"}
    finally:
        for client in window.clients:
            try:
                client.close()
            except Exception:   # noqa: BLE001
                pass


def _latencystats(client) -> dict[str, dict[str, float]] | None:
    """INFO latencystats (Valkey 8+, Redis 7+); None where the server has no such section."""
    try:
        fields = info(client, "latencystats")
    except Exception:   # noqa: BLE001 - older servers answer an unknown section with nothing or an error
        return None
    parsed = parse_latencystats(fields)
    return parsed or None


__all__ = ["begin", "end", "parse_commandstats", "parse_latencystats", "Window"]
