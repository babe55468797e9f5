"""Validity checks: is this a number people can trust?

Each flag has a severity. ``invalid`` flags make ``validity.valid`` false: history keeps the
run, but detection never raises a regression from it. ``warning`` flags are shown next to the
numbers. Every flag says which setting fixes it (``fix``).
"""

from __future__ import annotations

import os
import statistics

from ..matrix.model import Cell

#: Client CPU at or above this share of the cores it can use means the client, not the
#: server, was the bottleneck.
CLIENT_BOUND_SHARE = 0.95
#: A repetition shorter than this measures start-up and scheduling noise.
MIN_REPETITION_SECONDS = 1.0
#: Multi-threaded valkey-benchmark (--threads, and --cluster which is threaded by itself)
#: finishes on 0.25 s steps: 5 s keeps that quantization under 5 %.
MIN_THREADED_REPETITION_SECONDS = 5.0
#: Run-to-run coefficient of variation of rps above which a cell is flagged.
MAX_CV = 0.10
#: GETs that must find their key when the tool counts hits (memtier): below, reads measured misses.
MIN_HIT_RATIO = 0.99
#: GET over fewer keys than this mostly measures one hot cache line.
MIN_READ_KEYSPACE = 1000


def _flag(code: str, severity: str, message: str, fix: str | None) -> dict:
    return {"code": code, "severity": severity, "message": message, "fix": fix}


def client_thread_count(cell: Cell, shards: int) -> int:
    if cell.client_threads:
        return cell.client_threads
    # valkey-benchmark --cluster runs one thread per primary by itself.
    if cell.topology.startswith("cluster") and cell.tool != "memtier_benchmark":
        return shards
    return 1


def check(
    cell: Cell,
    *,
    repetitions: list[dict],
    keys_before_reads: int | None,
    shards: int,
    server_cpus: int | None,
    throttled: str | None,
    failed_repetitions: int = 0,
    emulation: dict | None = None,
) -> dict:
    flags: list[dict] = []
    if failed_repetitions:
        flags.append(_flag("tool-error", "invalid",
                           f"{failed_repetitions} of {cell.repetitions} repetitions failed (see the raw output)",
                           "look at the raw output next to the result; fix the server or tool error first"))

    usable_cores = os.cpu_count() or 1
    if cell.cpu:
        usable_cores = _cpuset_size(cell.cpu.client)
    threads = client_thread_count(cell, shards)
    capacity = min(threads, usable_cores)
    client_cores = [r["cpu"]["client_cores"] for r in repetitions if r.get("cpu") and r["cpu"].get("client_cores") is not None]
    if client_cores and statistics.median(client_cores) >= CLIENT_BOUND_SHARE * capacity:
        flags.append(_flag("client-bound", "invalid",
                           f"the client used {statistics.median(client_cores):.2f} of the {capacity} core(s) it can use: "
                           "the client, not the server, limited throughput",
                           "raise client_threads (--threads), give the client its own CPUs (cpu: {client: ...}), or run it on another machine"))

    elapsed = [r["elapsed_s"] for r in repetitions if r.get("elapsed_s")]
    threaded = cell.tool != "memtier_benchmark" and client_thread_count(cell, shards) > 1
    minimum = MIN_THREADED_REPETITION_SECONDS if threaded else MIN_REPETITION_SECONDS
    if elapsed and statistics.median(elapsed) < minimum:
        why = ("multi-threaded valkey-benchmark (--threads or --cluster) measures time in 0.25 s steps, "
               "so short runs report quantized rps" if threaded else "start-up and scheduling noise dominate")
        flags.append(_flag("too-short", "warning",
                           f"a repetition took {statistics.median(elapsed):.2f} s (< {minimum:.0f} s): {why}",
                           f"raise requests (-n) so each repetition runs for at least {minimum:.0f} s"))

    rps_by_command: dict[str, list[float]] = {}
    for rep in repetitions:
        for rec in rep["records"]:
            rps_by_command.setdefault(rec["command"], []).append(rec["rps"])
    noisy = {c: statistics.stdev(v) / statistics.mean(v) for c, v in rps_by_command.items()
             if len(v) >= 2 and statistics.mean(v) > 0}
    noisy = {c: cv for c, cv in noisy.items() if cv > MAX_CV}
    if noisy:
        worst = max(noisy, key=noisy.get)
        flags.append(_flag("high-variance", "warning",
                           f"rps varies by {noisy[worst]:.0%} across repetitions ({worst}); the median is shaky",
                           "raise repetitions and requests, pin CPUs (cpu placement), and keep the machine quiet"))

    reads = any(t.startswith(("get", "mget", "lrange")) for t in cell.tests)
    if reads:
        if not cell.keyspace:
            flags.append(_flag("empty-keyspace", "invalid",
                               "reads without a keyspace (-r) hit one key written by the same run",
                               "set keyspace (-r) and keep preload on"))
        elif keys_before_reads is not None and keys_before_reads < 0.9 * cell.keyspace:
            flags.append(_flag("empty-keyspace", "invalid",
                               f"only {keys_before_reads} of {cell.keyspace} keys existed when reads started: GET measured misses",
                               "keep preload: true (the default) or write the keyspace before reading"))
        elif cell.keyspace < MIN_READ_KEYSPACE:
            flags.append(_flag("empty-keyspace", "warning",
                               f"a keyspace of {cell.keyspace} keys is tiny: reads stay in the CPU cache",
                               f"set keyspace to {MIN_READ_KEYSPACE} or more"))

    hit_ratio = _get_hit_ratio(repetitions)
    if hit_ratio is not None and hit_ratio < MIN_HIT_RATIO and not any(f["code"] == "empty-keyspace" for f in flags):
        flags.append(_flag("empty-keyspace", "invalid",
                           f"only {hit_ratio:.1%} of GETs found their key (the tool's own hits/misses): GET measured misses",
                           "read the keys the preload wrote (keep preload on; a custom key_prefix/key range must match)"))

    if server_cpus is not None and cell.io_threads > server_cpus:
        flags.append(_flag("io-threads-oversubscribed", "warning",
                           f"io-threads {cell.io_threads} on {server_cpus} server CPU(s): threads compete for cores "
                           "(the Pi CM4 was slower at io-threads 5 than at 2 on 4 cores)",
                           f"run with --io-threads {server_cpus} or less (io_threads in the matrix), or give the server "
                           "more CPUs (cpu: {server: ...} in the matrix) or the client fewer threads (client_threads)"))

    if throttled and throttled not in ("0x0", "0"):
        flags.append(_flag("throttled", "invalid",
                           f"the board reports throttling or under-voltage (get_throttled = {throttled}, before or after "
                           "the cell): the CPU clock was reduced",
                           "improve cooling or power supply; reboot to clear the flag"))

    if emulation:
        flags.append(emulated_flag(emulation))

    return {"valid": not any(f["severity"] == "invalid" for f in flags), "flags": flags}


def emulated_flag(emulation: dict) -> dict:
    """Numbers measured under emulation (qemu-user, full-system qemu) say nothing about the
    emulated machine: invalid, so they stay out of every series, the advisor and detection."""
    evidence = "; ".join(emulation.get("evidence") or []) or "no detail"
    return _flag("emulated", "invalid",
                 f"measured under {emulation.get('kind', 'emulation')} emulation ({evidence}): the numbers measure the "
                 "emulator, not the machine",
                 "run on the real machine (a Raspberry Pi, an arm64 VM); emulated runs only check that the path works")


def emulated_validity(validity: dict, emulation: dict) -> dict:
    return {"valid": False, "flags": [*validity.get("flags", []), emulated_flag(emulation)]}


def _get_hit_ratio(repetitions: list[dict]) -> float | None:
    """Hits / (hits + misses) of GET over all repetitions, where the tool counts them (memtier)."""
    hits = misses = 0.0
    for rep in repetitions:
        for rec in rep.get("records", []):
            if rec.get("command") == "GET" and rec.get("hits_per_s") is not None and rec.get("misses_per_s") is not None:
                hits += rec["hits_per_s"]
                misses += rec["misses_per_s"]
    return hits / (hits + misses) if hits + misses > 0 else None


def _cpuset_size(cpuset: str) -> int:
    count = 0
    for part in cpuset.split(","):
        if "-" in part:
            a, b = part.split("-")
            count += int(b) - int(a) + 1
        else:
            count += 1
    return count
