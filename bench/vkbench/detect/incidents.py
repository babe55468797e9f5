"""Group simultaneous change points into incidents, name them, give them stable ids.

One code change usually moves many series at once (SET and GET, several pipelines and
io-threads). Change points of the same machine class and direction whose good..bad windows
overlap (normally: the same two nightly runs) become one incident, so one regression is one
issue, not twenty.

The id hashes what stays true night after night: machine class, direction and the bad range
(``good_commit..bad_commit``, or the first bad run when the commit did not change).
"""

from __future__ import annotations

import hashlib
from collections import Counter
from statistics import median

from ..bidi import isolate


# Dimensions shown in a title, in order, with their label; values common to every series of
# an incident are shown once ("pipeline 16"), differing values are listed ("io-threads 2 and 4").
_TITLE_DIMS = (
    ("version", "{engine}:{value}"),
    ("topology", "{value}"),
    ("pipeline", "pipeline {value}"),
    ("io_threads", "io-threads {value}"),
    ("clients", "{value} clients"),
    ("data_size", "{value} B values"),
)
_ALWAYS_SHOWN = {"pipeline", "io_threads"}
_USUAL = {"version": "unstable", "topology": "standalone", "clients": 50, "data_size": 3}


def build_incidents(change_points: list[dict], series_index: dict, annotations: list[dict]) -> list[dict]:
    dims = {sid: entry["dims"] for sid, entry in series_index.items()}
    groups = _group(change_points, dims)
    incidents = []
    for members in groups:
        incident = _incident(members, dims, annotations)
        for cp in members:
            cp["incident_id"] = incident["id"]
        incidents.append(incident)
    incidents.sort(key=lambda i: (i["status"] != "open", i["direction"] != "regression", i["bad"]["timestamp"]), reverse=False)
    return incidents


def _group(change_points: list[dict], dims: dict) -> list[list[dict]]:
    """Change points of the same machine class and direction belong together when their
    (good, bad] windows overlap or when one's first bad run is within a couple of runs of the
    other's: at 3 % noise a change is located to +-1-2 runs, and one code change must not
    become several incidents because some series noticed it a night late."""
    buckets: dict[tuple, list[dict]] = {}
    for cp in change_points:
        machine = dims.get(cp["series_id"], {}).get("machine_class", "?")
        buckets.setdefault((machine, cp["direction"]), []).append(cp)
    groups: list[list[dict]] = []
    for cps in buckets.values():
        cps = sorted(cps, key=lambda c: (c["bad"]["timestamp"], c["series_id"], c["metric"]))
        parent = list(range(len(cps)))

        def find(i: int) -> int:
            while parent[i] != i:
                parent[i] = parent[parent[i]]
                i = parent[i]
            return i

        near = [_near_runs(cp) for cp in cps]
        for i, a in enumerate(cps):
            for j in range(i + 1, len(cps)):
                b = cps[j]
                overlap = b["good"]["timestamp"] < a["bad"]["timestamp"] and a["good"]["timestamp"] < b["bad"]["timestamp"]
                if overlap or a["bad"]["run_id"] in near[j] or b["bad"]["run_id"] in near[i]:
                    parent[find(j)] = find(i)
        by_root: dict[int, list[dict]] = {}
        for i, cp in enumerate(cps):
            by_root.setdefault(find(i), []).append(cp)
        groups.extend(by_root.values())
    return groups


def _near_runs(cp: dict) -> set[str]:
    runs = cp.get("runs") or {}
    return set(runs.get("before", [])[-2:]) | set(runs.get("after", [])[:3]) | {cp["bad"]["run_id"]}


def bad_range(cp: dict) -> str:
    good, bad = cp["good"].get("commit"), cp["bad"].get("commit")
    if good and bad and good != bad:
        return f"{good}..{bad}"
    return f"run:{cp['bad']['run_id']}"


def incident_id(machine_class: str, direction: str, rng: str) -> str:
    return hashlib.sha256(f"{machine_class}|{direction}|{rng}".encode()).hexdigest()[:12]


def _representative(members: list[dict]) -> dict:
    """The most common bad range wins (ties: the earliest), so the id does not depend on
    which series happened to move a night early."""
    counts = Counter(bad_range(cp) for cp in members)
    best = max(counts.values())
    return min((cp for cp in members if counts[bad_range(cp)] == best), key=lambda c: c["bad"]["timestamp"])


def _incident(members: list[dict], dims: dict, annotations: list[dict]) -> dict:
    rep = _representative(members)
    machine = dims.get(rep["series_id"], {}).get("machine_class", "?")
    iid = incident_id(machine, rep["direction"], bad_range(rep))
    rps = [cp for cp in members if cp["metric"] == "rps"]
    main_metric = "rps" if rps else Counter(cp["metric"] for cp in members).most_common(1)[0][0]
    magnitude = median(cp["magnitude"] for cp in members if cp["metric"] == main_metric)
    series_ids = sorted({cp["series_id"] for cp in members})

    annotation = next((a for a in annotations if a.get("incident") == iid), None)
    silenced = bool(annotation and annotation["action"] == "silence")
    reset = bool(annotation and annotation["action"] == "reset-baseline")
    if not annotation:
        # series-level silences: apply when every change point of the incident is covered
        marks = {cp.get("silenced_by") for cp in members}
        if None not in marks:
            annotation, silenced = annotations[min(marks)], True
    same_build = all(same_build_on_both_sides(cp) for cp in members)
    if not annotation and same_build:
        # The very binary that ran before the change ran after it: no code moved, the machine or
        # the measurement did (an A/A night, a release measured nightly, a night without commits).
        # Kept and shown like a silenced incident; it opens no issue and fails no gate.
        annotation, silenced = {"action": "silence", "reason": SAME_BUILD_REASON, "automatic": "same-build"}, True
    if all(cp["baseline_reset"] for cp in members):
        reset = True
    recovered = all(cp["recovered"] for cp in members)
    status = "closed" if (recovered or reset) else "open"
    resolution = "baseline-reset" if reset else ("recovered" if recovered else None)
    return {
        "id": iid,
        "title": title(members, dims, machine, main_metric, magnitude, rep),
        "status": status,
        "resolution": resolution,
        "silenced": silenced,
        "direction": rep["direction"],
        "metric": main_metric,
        "metrics": sorted({cp["metric"] for cp in members}),
        "magnitude": round(magnitude, 5),
        "p_value": max(cp["p_value"] for cp in members if cp["metric"] == main_metric),
        "series_ids": series_ids,
        "change_points": len(members),
        "machine_class": machine,
        "engine": dims.get(rep["series_id"], {}).get("engine"),
        "good": rep["good"],
        "bad": rep["bad"],
        "annotation": annotation,
        "same_build": same_build,
    }


SAME_BUILD_REASON = ("the same server build ran before and after the change, so no code change caused it "
                     "(the machine or the measurement moved); not alerted")


def same_build_on_both_sides(cp: dict) -> bool:
    """The last good and first bad runs ran the identical server binary (or image)."""
    good, bad = cp["good"].get("build_id"), cp["bad"].get("build_id")
    return bool(good) and good == bad


def title(members: list[dict], dims: dict, machine: str, metric: str, magnitude: float, rep: dict) -> str:
    series = [dims.get(cp["series_id"], {}) for cp in members]
    # names isolated (vkbench.bidi): a right-to-left name cannot reorder the title around it
    commands = _join(sorted({isolate(d.get("command", "?")) for d in series}, key=_command_order))
    parts = [commands]
    for key, fmt in _TITLE_DIMS:
        values = sorted({_hashable(d.get(key)) for d in series}, key=lambda v: (str(type(v)), v))
        if len(values) == 1 and key not in _ALWAYS_SHOWN and values[0] == _USUAL.get(key):
            continue
        engine = series[0].get("engine", "valkey") if series else "valkey"
        if len(values) > 3 and all(isinstance(v, (int, float)) for v in values):
            shown = f"{min(values)}-{max(values)}"          # "pipeline 1-32", not eight numbers
        elif len(values) > 3:
            shown = f"{len(values)} kinds of"
        else:
            shown = _join([isolate(v) for v in values])
        parts.append(fmt.format(value=shown, engine=engine))
    parts.append(isolate(machine))
    what = "" if metric == "rps" else f"{metric} "
    between = _between(rep)
    head = ", ".join(parts)
    if len(head) > 160:                                     # GitHub titles stop at 256
        head = head[:157].rstrip(", ") + "..."
    # sub-percent steps (instruction counts) keep their digits: "+0.5%", not "+0%"
    shown = f"{magnitude:+.0%}" if abs(magnitude) >= 0.01 else f"{magnitude * 100:+.2g}%"
    return f"{head}: {what}{shown} {between}".replace("+-", "-")


def _between(rep: dict) -> str:
    good, bad = rep["good"], rep["bad"]
    if good.get("commit") and bad.get("commit") and good["commit"] != bad["commit"]:
        width = 7                                   # like git: longer only if 7 is ambiguous
        while width < 40 and good["commit"][:width] == bad["commit"][:width]:
            width += 1
        return f"between {good['commit'][:width]} and {bad['commit'][:width]}"
    return f"between {good['timestamp'][:10]} and {bad['timestamp'][:10]}"


def _join(items: list[str]) -> str:
    if len(items) <= 1:
        return "".join(items)
    return ", ".join(items[:-1]) + " and " + items[-1]


def _command_order(cmd: str) -> tuple[int, str]:
    order = ["SET", "GET"]
    return (order.index(cmd) if cmd in order else len(order), cmd)


def _hashable(value):
    return tuple(value) if isinstance(value, list) else value
