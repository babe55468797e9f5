"""Turn io-threads sweeps into advice: which io-threads to set on a machine class, and why.

Input: result files (a results directory, or the newest point of every series in a history).
Results are grouped into *workloads*: everything that defines the measurement except
io-threads (machine class, environment fingerprint, engine, version, build, topology, tool,
command, pipeline, clients, client threads, data size, CPU placement, ...). A workload measured
at two or more io-threads settings gets an :class:`Advice`:

- evidence per setting: throughput and tail latency (median with the 95% interval), flags;
- the recommendation: the **smallest** setting whose throughput is within noise of the best
  (Welch's t-test on the repetitions plus a minimum effect; single published figures use a
  fixed noise band), so more threads are never recommended for no measurable gain;
- warnings: oversubscription (io-threads plus the client's threads when the client shares
  the machine, above the cores the server may use) and client-bound cells;
- results flagged invalid (client-bound, throttled, ...) never win: the best and the
  recommendation come from the valid settings, and the evidence says which were left out;
- one sentence a person can act on.

Where the server ran: on the client's machine (native, compose on the local engine), or on
another one (``server_environment`` in the result: ``--server-host``, the two-host setup), whose
cores are the server's and whose client threads do not compete for them.
"""

from __future__ import annotations

import os
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Iterable

from . import markdown as md
from .errors import UsageError
from .history.series import EXTENT_DIMENSIONS, identity_dimensions
from .results.aggregate import command_series
from .results.io import load_result, result_files
from .stats import compare_samples

#: Relative throughput difference below which two settings are the same, when the repetitions
#: cannot tell (a single published figure, or identical samples).
DEFAULT_NOISE = 0.05
#: A difference smaller than this is never "measurable", however tight the repetitions.
MIN_EFFECT = 0.02
#: Tail latency shown as evidence, in order of preference (valkey-benchmark --csv gives p99;
#: published figures often only p50).
LATENCY_PREFERENCE = ("p99", "p50")
#: What a workload spans besides the series' own non-identity (history/series.py): the
#: io-threads setting it compares, and the extent of each measurement.
_ACROSS = ("io_threads",) + EXTENT_DIMENSIONS


@dataclass
class Setting:
    io_threads: int
    rps: dict                       # summary stat: median, ci_low, ci_high, cv, n, samples
    latency_metric: str | None
    latency: dict | None            # summary stat of latency_metric (ms)
    flags: list[str]
    client_bound: bool
    oversubscribed: bool
    valid: bool                     # not flagged invalid: may be the best or the recommendation
    threads: int                    # io-threads plus the client's threads sharing the server's cores
    run_id: str
    cell_id: str
    change_vs_best: float = 0.0     # relative throughput difference to the best setting (<= 0)
    within_noise: bool = True       # not measurably slower than the best


@dataclass
class Advice:
    machine_class: str
    command: str
    workload: dict                  # the defining dimensions (without io_threads)
    label: str                      # short readable workload name
    server_cores: int | None        # cores the server may use (its CPU set, else the machine's)
    client_on_box: bool             # the client shares those cores
    client_threads: int
    settings: list[Setting]
    recommended: int
    best: int
    sentence: str
    warnings: list[dict] = field(default_factory=list)   # {code, io_threads, message}

    def to_dict(self) -> dict:
        return asdict(self)


# -- loading -----------------------------------------------------------------------------------


def load_inputs(paths: Iterable[str | os.PathLike]) -> list[dict]:
    """Result files from files, results directories or history directories (their newest point
    of every series, read back from the verbatim result files under ``runs/``)."""
    results: list[dict] = []
    plain: list[Path] = []
    for item in paths:
        p = Path(item)
        if p.is_dir() and (p / "format.json").is_file():
            results.extend(history_results(p))
        else:
            plain.append(p)
    results.extend(load_result(f) for f in result_files(plain))
    return results


def history_results(history_dir: Path, machine_class: str | None = None, *, store=None) -> list[dict]:
    """The result of the newest point of every series of a history (one per cell and run).
    ``store``: the history's :class:`~vkbench.history.store.HistoryStore` a caller reads through
    already (the site build: its parsed shards are reused)."""
    from .history.series import month_of, sort_key
    from .history.store import HistoryStore

    store = HistoryStore(history_dir) if store is None else store
    wanted: dict[tuple[str, str, str], None] = {}
    # The store's checked reader: index.json (version, safe ids and months), the series' shards
    # on disk exactly those it lists, and the newest one against its line count, size and
    # sha256, line by line (exit 7 naming the file).
    for sid, entry in sorted(command_series(store.index()["series"]).items()):
        dims = entry.get("dims") or {}
        if machine_class and dims.get("machine_class") != machine_class:
            continue
        store.check_shard_names(sid, entry)
        months = sorted(entry.get("shards") or [])
        points = sorted(store.read_checked_shard(sid, months[-1], entry), key=sort_key) if months else []   # the newest month only
        if points:
            last = points[-1]
            wanted[(month_of(last["timestamp"]), last["run_id"], last["cell_id"])] = None
    out = []
    for month, run_id, cell_id in wanted:
        path = store.run_dir(month, run_id) / f"{cell_id}.json"
        if path.is_file():
            out.append(load_result(path))
    return out


# -- grouping ----------------------------------------------------------------------------------


def _client_threads(dims: dict) -> int:
    if dims.get("client_threads"):
        return int(dims["client_threads"])
    topology = str(dims.get("topology", ""))
    if topology.startswith("cluster") and dims.get("tool") != "memtier_benchmark":
        parts = topology.split(":")
        return int(parts[1]) if len(parts) > 1 and parts[1].isdigit() else 1
    return 1


def _placement(result: dict) -> tuple[int | None, bool]:
    """(cores the server may use, whether the client shares them)."""
    dims = result["dimensions"]
    cpu = dims.get("cpu") or None
    # A remote server (a compose engine on another machine: --server-host, two hosts) records
    # that machine as server_environment: its cores are the server's, the client is elsewhere.
    remote = result.get("server_environment") or None
    if cpu and cpu.get("server"):
        server = len(set(_cpus(cpu["server"])))
        client = cpu.get("client")
        shared = not remote and bool(client) and bool(set(_cpus(client)) & set(_cpus(cpu["server"])))
        return server, shared
    if remote:
        return (int(remote["cores"]) if remote.get("cores") else None), False
    cores = (result.get("environment") or {}).get("cores")
    # Measured by vkbench on one machine: native servers and local compose stacks run next to
    # the client; published figures name a separate client machine or none.
    on_box = result["run"].get("backend") in ("native", "compose")
    return (int(cores) if cores else None), on_box


def _cpus(cpuset: str) -> list[int]:
    out: list[int] = []
    for part in str(cpuset).split(","):
        if "-" in part:
            a, b = part.split("-")
            out.extend(range(int(a), int(b) + 1))
        elif part.strip():
            out.append(int(part))
    return out


def workload_key(result: dict, command: str) -> tuple:
    dims = identity_dimensions(result, ignoring=_ACROSS)
    build = (result.get("subject") or {}).get("build") or {}
    return (
        result["run"].get("machine_class") or "unknown",
        (result.get("environment") or {}).get("fingerprint_id"),
        build.get("id") or build.get("detail"),
        command,
        tuple(sorted((k, repr(v)) for k, v in dims.items())),
        (result.get("server_environment") or {}).get("fingerprint_id"),   # the server's machine, when remote
    )


def _label(dims: dict, command: str) -> str:
    parts = [command, str(dims.get("topology"))]
    for key, fmt in (("pipeline", "P{}"), ("clients", "c{}"), ("client_threads", "t{}"), ("data_size", "d{}")):
        if dims.get(key) not in (None, ""):
            parts.append(fmt.format(dims[key]))
    if dims.get("tool") not in (None, "valkey-benchmark"):
        parts.append(str(dims["tool"]))
    parts.append(f"{dims.get('engine')}:{dims.get('version')}")
    return " ".join(parts)


# -- advice ------------------------------------------------------------------------------------


def _within_noise(best: dict, other: dict) -> bool:
    b, o = best.get("samples") or [best["median"]], other.get("samples") or [other["median"]]
    change = (other["median"] - best["median"]) / best["median"] if best["median"] else 0.0
    if abs(change) < MIN_EFFECT:
        return True
    if len(b) >= 2 and len(o) >= 2 and (max(b) != min(b) or max(o) != min(o)):
        return compare_samples(b, o, bigger_is_better=True, min_effect=MIN_EFFECT).verdict == "no significant change"
    return abs(change) <= DEFAULT_NOISE


def _pct(x: float) -> str:
    return f"{abs(x) * 100:.0f}%"


def _why_oversubscribed(s: Setting, cores: int | None, on_box: bool, client_threads: int) -> str:
    if on_box:
        return (f"the client shares the machine's {cores} cores ({client_threads} client thread"
                f"{'s' if client_threads != 1 else ''}) and io-threads {s.io_threads} oversubscribes them")
    return f"the server has {cores} cores and io-threads {s.io_threads} oversubscribes them"


def _sentence(cls: str, settings: list[Setting], rec: Setting, best: Setting, cores: int | None,
              on_box: bool, client_threads: int, left_out: list[Setting] = ()) -> str:
    """``settings``: what the sentence argues from; ``left_out``: invalid settings that measured at
    least as fast as the recommendation and were not considered."""
    head = f"use io-threads {rec.io_threads} on {cls}"
    larger_slower = [s for s in settings if s.io_threads > rec.io_threads and not s.within_noise]
    smaller = [s for s in settings if s.io_threads < rec.io_threads]
    if larger_slower:
        worst = min(larger_slower, key=lambda s: s.rps["median"])
        slower = 1 - worst.rps["median"] / rec.rps["median"] if rec.rps["median"] else 0.0
        text = f"{head}: {worst.io_threads} is {_pct(slower)} slower"
        if worst.oversubscribed:
            text += ", " + _why_oversubscribed(worst, cores, on_box, client_threads)
        else:
            text += ", more io-threads only add overhead here"
    elif best.io_threads != rec.io_threads:
        gain = best.rps["median"] / rec.rps["median"] - 1 if rec.rps["median"] else 0.0
        text = (f"{head}: io-threads {best.io_threads} is only {_pct(gain)} faster, within the noise of the "
                "measurements, so more threads bring no measurable gain")
        if best.oversubscribed:
            text += ", and " + _why_oversubscribed(best, cores, on_box, client_threads)
    elif any(s.io_threads > rec.io_threads for s in settings):
        worst = min((s for s in settings if s.io_threads > rec.io_threads), key=lambda s: s.rps["median"])
        slower = 1 - worst.rps["median"] / rec.rps["median"] if rec.rps["median"] else 0.0
        text = f"{head}: {worst.io_threads} is no faster ({_pct(slower)} slower, not significant over these repetitions)"
        if worst.oversubscribed:
            text += ", and " + _why_oversubscribed(worst, cores, on_box, client_threads)
    elif smaller:
        nearest = max(smaller, key=lambda s: s.io_threads)
        text = f"{head}: {nearest.io_threads} is {_pct(nearest.change_vs_best)} slower"
        if rec.io_threads == max(s.io_threads for s in [*settings, *left_out]):
            text += f"; {rec.io_threads} is the largest setting measured, so try more"
    else:
        text = head
    bound = [s.io_threads for s in settings if s.client_bound]
    if bound:
        text += (f"; the client was the bottleneck at io-threads {', '.join(map(str, bound))}, so the server "
                 "may do more there than measured")
    if left_out:
        why = "; ".join(f"io-threads {s.io_threads}: {', '.join(_invalid_codes(s)) or 'invalid'}" for s in left_out)
        text += (f"; io-threads {', '.join(str(s.io_threads) for s in left_out)} measured as fast or faster but "
                 f"{'were' if len(left_out) > 1 else 'was'} left out, flagged invalid ({why})")
    if not any(s.valid for s in settings):
        text += "; every setting was flagged invalid, so this rests on numbers that cannot be trusted"
    return text


def _invalid_codes(s: Setting) -> list[str]:
    return [f for f in s.flags if f != "io-threads-oversubscribed"]


def advise_workload(results: list[dict], command: str) -> Advice | None:
    """Advice for one workload's results (one per io-threads setting: the newest wins)."""
    newest: dict[int, dict] = {}
    when = lambda r: (r["run"].get("timestamp") or "", r["run"].get("run_id") or "")  # noqa: E731
    for r in results:   # newest wins; on a tie the first given (file order) stays
        io = int(r["dimensions"]["io_threads"])
        if "rps" in r["summary"].get(command, {}) and (io not in newest or when(r) > when(newest[io])):
            newest[io] = r
    if len(newest) < 2:
        return None
    first = next(iter(newest.values()))
    cores, on_box = _placement(first)
    client_threads = _client_threads(first["dimensions"])
    settings: list[Setting] = []
    for io, r in sorted(newest.items()):
        stats = r["summary"][command]
        metric = next((m for m in LATENCY_PREFERENCE if m in stats), None)
        flags = [f["code"] for f in r["validity"].get("flags", [])]
        threads = io + (client_threads if on_box else 0)
        settings.append(Setting(
            io_threads=io, rps=dict(stats["rps"]), latency_metric=metric,
            latency=dict(stats[metric]) if metric else None, flags=flags,
            client_bound="client-bound" in flags,
            oversubscribed=cores is not None and threads > cores,
            valid=bool(r["validity"].get("valid", True)),
            threads=threads, run_id=r["run"]["run_id"], cell_id=r["run"]["cell_id"],
        ))
    # Invalid results (the client was the bottleneck, the board throttled, ...) never win; when
    # every one is invalid there is nothing better, and the sentence and a warning say so.
    candidates = [s for s in settings if s.valid] or settings
    left_out = [s for s in settings if s not in candidates]
    best = max(candidates, key=lambda s: s.rps["median"])
    for s in settings:
        s.change_vs_best = (s.rps["median"] - best.rps["median"]) / best.rps["median"] if best.rps["median"] else 0.0
        s.within_noise = s is best or _within_noise(best.rps, s.rps)
    rec = min((s for s in candidates if s.within_noise), key=lambda s: s.io_threads)
    cls = first["run"].get("machine_class") or "unknown"
    # What the sentence argues from: the candidates, and the invalid settings that were slower
    # anyway (their caveats, e.g. client-bound, are named); faster invalid ones are named as left out.
    slower_left_out = [s for s in left_out if s.rps["median"] < rec.rps["median"]]
    argued = sorted([*candidates, *slower_left_out], key=lambda s: s.io_threads)
    warnings = []
    for s in left_out:
        if s not in slower_left_out:    # it would have won: say why it did not
            warnings.append({"code": "invalid", "io_threads": s.io_threads,
                             "message": f"io-threads {s.io_threads} measured {s.change_vs_best:+.0%} against the best valid "
                                        f"setting but is left out of the recommendation: its result is flagged invalid "
                                        f"({', '.join(_invalid_codes(s)) or 'see the run'})"})
    if not any(s.valid for s in settings):
        warnings.append({"code": "no-valid-setting", "io_threads": None,
                         "message": "every setting's result is flagged invalid: fix the flags (see each result) "
                                    "and run the sweep again before acting on this advice"})
    for s in settings:
        if s.oversubscribed:
            warnings.append({"code": "oversubscribed", "io_threads": s.io_threads,
                             "message": _why_oversubscribed(s, cores, on_box, client_threads)
                             + f" ({s.threads} threads on {cores} cores)"})
        if s.client_bound:
            warnings.append({"code": "client-bound", "io_threads": s.io_threads,
                             "message": f"at io-threads {s.io_threads} the client, not the server, limited throughput: "
                                        "raise client threads or run the client on another machine"})
    dims = identity_dimensions(first, ignoring=_ACROSS)
    return Advice(
        machine_class=cls, command=command, workload=dims, label=_label(dims, command),
        server_cores=cores, client_on_box=on_box, client_threads=client_threads, settings=settings,
        recommended=rec.io_threads, best=best.io_threads,
        sentence=_sentence(cls, argued, rec, best, cores, on_box, client_threads,
                           [s for s in left_out if s not in slower_left_out]), warnings=warnings,
    )


def advise(results: list[dict], *, machine_class: str | None = None) -> list[Advice]:
    """Advice for every workload measured at two or more io-threads settings."""
    groups: dict[tuple, list[dict]] = {}
    for r in results:
        if machine_class and r["run"].get("machine_class") != machine_class:
            continue
        for command in r["summary"]:
            groups.setdefault(workload_key(r, command), []).append(r)
    out = []
    for key, members in groups.items():
        advice = advise_workload(members, key[3])
        if advice:
            out.append(advice)
    return sorted(out, key=lambda a: (a.machine_class, a.label))


def advise_paths(paths: Iterable[str | os.PathLike], *, machine_class: str | None = None) -> list[Advice]:
    paths = list(paths)
    if not paths:
        raise UsageError("nothing to advise on", hint="pass a results directory, result files or --history DIR")
    return advise(load_inputs(paths), machine_class=machine_class)


# -- rendering ---------------------------------------------------------------------------------


def _fmt_stat(stat: dict | None, metric: str) -> str:
    if not stat:
        return "–"
    fmt = (lambda v: f"{v:,.0f}") if metric == "rps" else (lambda v: f"{v:.3f}")
    text = fmt(stat["median"])
    if stat.get("ci_low") is not None and stat.get("ci_high") is not None:
        text += f" [{fmt(stat['ci_low'])}, {fmt(stat['ci_high'])}]"
    return text


def evidence_rows(advice: Advice) -> list[list[str]]:
    """io-threads | rps [95% CI] | latency [95% CI] | vs best | notes, one row per setting."""
    rows = []
    for s in advice.settings:
        notes = []
        if s.io_threads == advice.recommended:
            notes.append("recommended")
        if s.io_threads == advice.best and advice.best != advice.recommended:
            notes.append("best, within noise")
        if s.oversubscribed:
            notes.append(f"oversubscribed ({s.threads} threads on {advice.server_cores} cores)")
        if s.client_bound:
            notes.append("client-bound")
        notes.extend(f for f in s.flags if f not in ("client-bound", "io-threads-oversubscribed"))
        if not s.valid and any(o.valid for o in advice.settings):
            notes.append("invalid: not considered")
        vs = "best" if s.io_threads == advice.best else f"{s.change_vs_best:+.0%}" + (" (noise)" if s.within_noise else "")
        latency = f"{s.latency_metric} " + _fmt_stat(s.latency, s.latency_metric) + " ms" if s.latency else "–"
        rows.append([str(s.io_threads), _fmt_stat(s.rps, "rps"), latency, vs, "; ".join(notes)])
    return rows


def to_markdown(advice: list[Advice]) -> str:
    if not advice:
        return ""
    lines = ["## io-threads advice", ""]
    for a in advice:
        lines.append(f"**{md.text(a.machine_class)} · {md.text(a.label)}**: {md.text(a.sentence)}.")
        lines.append("")
        lines += md.table(["io-threads", "rps [95% CI]", "latency [95% CI]", "vs best", "notes"], "rrrrl",
                          ([*row[:4], md.text(row[4])] for row in evidence_rows(a)))
        lines.append("")
    lines.append("The smallest io-threads whose throughput is within noise of the best is recommended "
                 "(Welch's t-test on the repetitions, p < 0.05 and at least 2%; single published figures: 5%).")
    return "\n".join(lines) + "\n"


def to_json(advice: list[Advice]) -> dict:
    return {"advice": [a.to_dict() for a in advice]}


__all__ = ["Advice", "Setting", "advise", "advise_paths", "advise_workload", "history_results", "load_inputs",
           "to_markdown", "to_json", "evidence_rows"]
