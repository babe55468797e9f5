"""Same-night confirmation of candidates (see :mod:`vkbench.detect.candidates`).

1. :func:`confirmation_requests` (run by ``vkbench detect``): the unconfirmed regression
   candidates of a history, grouped per machine class and commit range, each a request with a
   stable id: which two builds (good and bad commit, repository) an A/B must compare on which
   runner class, and one cell of the affected series to run.
2. The publish job dispatches ab.yml for each request it has not dispatched yet
   (``tools/ci/confirm.sh``).
3. :func:`record` (``vkbench confirm``): the A/B's report becomes ``confirmations.json`` in the
   history: confirmed (the A/B's interval lies below zero and the change is at least the
   minimum effect) or rejected. A request whose series are counted metrics (instructions per
   operation, memory per key) asks for an instruction A/B (``instrument``: seed pairs under
   callgrind, minutes on any runner, no quiet machine needed), and its verdict is read from the
   A/B's ``counts``: more instructions with an interval above zero, at least the counted metrics'
   minimum effect.
4. :func:`apply` (``vkbench detect``): a confirmed request becomes an incident that night, with the
   A/B's effect and interval; a rejected one stays recorded and never alerts.
5. Nights later the persistence rule reports the same change as a regular change point. The
   incident it forms keeps the confirmed incident's id (:func:`apply` matches it by the first bad
   run or commit), so it stays one incident, with one GitHub issue and one set of annotations.
"""

from __future__ import annotations

import hashlib
import json
import math
import re
from pathlib import Path
from typing import Any

from ..errors import ResultFileError, UsageError
from ..evidence import TARGET_MDE, adequate, inconclusive
from ..history.series import COUNT_METRICS, bigger_is_better, segment_key
from ..files import utc_now, write_json
from ..paths import CONFIRM_ID
from ..history.schemas import check, shown, shown_key
from ..history.store import HistoryStore
from ..results.aggregate import command_series
from .candidates import Candidate, find_candidate, runs_read, tail_decides
from .params import DetectionParams

CONFIRMATIONS = "confirmations.json"
#: "inconclusive": the A/B's MDE did not reach its target, so its change is no verdict either way.
STATUSES = ("confirmed", "rejected", "inconclusive")
_RESTORE = "restore it from the gh-pages history (git log -- history/confirmations.json); `vkbench confirm` writes it"
_AB_HINT = "pass the ab.json of `vkbench ab --out DIR`"


def _request_id(machine: str, good: dict, bad: dict) -> str:
    key = f"{machine}|{good.get('commit') or good.get('run_id')}|{bad.get('commit') or bad.get('run_id')}"
    return "confirm-" + hashlib.sha256(key.encode()).hexdigest()[:12]


def _ref(point: dict) -> dict:
    return {k: point.get(k) for k in ("run_id", "timestamp", "version", "commit", "repository", "build_config",
                                      "workflow_run_url") if point.get(k) is not None}


def confirmation_requests(store: HistoryStore, change_points: list[dict], params: DetectionParams) -> list[dict]:
    """One request per (machine class, good commit, bad commit) with a regression candidate.

    Only source builds qualify (a commit and its repository on both sides): a release cannot be
    rebuilt at another commit, and a change without a code change is the environment's."""
    accepted: dict[tuple[str, str], list[int]] = {}
    for cp in change_points:
        accepted.setdefault((cp["series_id"], cp["metric"]), []).append(int(cp.get("index", -1)))
    requests: dict[str, dict] = {}
    from ..servers.resolve import is_source_version

    index = command_series(store.index()["series"])
    for sid in sorted(index):
        dims = index[sid]["dims"]
        if not is_source_version(str(dims.get("engine")), str(dims.get("version"))):
            continue          # a release: nothing to rebuild at another commit
        found = _tail_candidates(store, sid, index[sid], params, accepted)
        for metric, cand, points in found:
            bad = points[cand.index]
            good = next((points[i] for i in range(cand.index - 1, -1, -1) if points[i].get("valid", True)), None)
            if good is None or not good.get("commit") or not bad.get("commit") or good["commit"] == bad["commit"]:
                continue
            if not (good.get("repository") and bad.get("repository")):
                continue
            machine = dims.get("machine_class", "?")
            rid = _request_id(machine, good, bad)
            entry = requests.setdefault(rid, {
                "id": rid, "machine_class": machine, "repository": bad["repository"],
                "good": _ref(good), "bad": _ref(bad), "series": [], "magnitude": 0.0, "cell": series_cell(dims),
            })
            entry["series"].append({"series_id": sid, "metric": metric, "magnitude": round(cand.magnitude, 5),
                                    "after": cand.after})
            if metric == "rps" and cand.magnitude < entry["magnitude"]:
                entry["magnitude"], entry["cell"] = round(cand.magnitude, 5), series_cell(dims)
            elif metric == "instructions_per_op" and not _has_rps(entry) and cand.magnitude > entry["magnitude"]:
                entry["magnitude"], entry["cell"] = round(cand.magnitude, 5), series_cell(dims)
    for entry in requests.values():
        entry["instrument"] = instrument_for(entry)
    return sorted(requests.values(), key=lambda r: r["id"])


#: Points read from the end of each series: every rule's window several times over (a nightly
#: series is read ~4 months back, not ten years: issue 23, 13-17 s of a publish at ten years).
CANDIDATE_TAIL = 120


def _tail_candidates(store: HistoryStore, sid: str, entry: dict, params: DetectionParams,
                     accepted: dict[tuple[str, str], list[int]]) -> list[tuple[str, Candidate, list[dict]]]:
    """``(metric, candidate, points)`` of each metric of the series with a candidate, decided on
    the series' newest points; the whole series is read when they do not decide
    (:func:`tail_decides`: invalid runs, a short last segment), so the answer is the one the
    whole series gives (tests/unit/detect/test_confirmation_tail.py)."""
    offset, points = store.read_series_tail(sid, entry, max(CANDIDATE_TAIL, 4 * runs_read(params)))
    while True:
        if len(points) < params.min_before + 1:
            return []
        valid = [bool(p.get("valid", True)) for p in points]
        fps = [segment_key(p) for p in points]
        found: list[tuple[str, Candidate, list[dict]]] = []
        for metric in params.metrics:
            values = [(p.get("metrics", {}).get(metric) or {}).get("median") for p in points]
            if not any(values):
                continue
            mparams = params.for_metric(metric)
            # change point indices are the whole series'; the tail's start is ``offset``
            marks = [i - offset for i in accepted.get((sid, metric), []) if i >= offset]
            if offset and not tail_decides(values, valid=valid, fingerprints=fps, accepted=marks, params=mparams):
                break
            cand = find_candidate(values, valid=valid, fingerprints=fps, bigger_is_better=bigger_is_better(metric),
                                  params=mparams, accepted=marks)
            if cand is not None:
                if offset and not any(valid[:cand.index]):
                    break       # its last good run is further back than the tail
                found.append((metric, cand, points))
        else:
            return found
        offset, points = 0, store.read_series(sid, entry)


def _has_rps(entry: dict) -> bool:
    return any(s["metric"] not in COUNT_METRICS for s in entry["series"])


def instrument_for(request: dict) -> str:
    """What the confirmation A/B measures: ``instructions`` when every moved series is a counted
    metric (seed pairs under callgrind decide a 0.3 % step in minutes, on any runner),
    ``wallclock`` when none is, ``both`` when the range moved both (and the cell can be counted)."""
    from ..matrix.model import Cell, instructions_refusal

    counted = any(s["metric"] in COUNT_METRICS for s in request.get("series") or [])
    timed = _has_rps(request)
    if counted and timed:
        try:
            countable = instructions_refusal(Cell.model_validate(request["cell"])) is None
        except ValueError:
            countable = False
        return "both" if countable else "wallclock"
    return "instructions" if counted else "wallclock"


#: Series dimensions that are not a cell's to copy: the server (each side's build), the runner
#: (the A/B's own machine) and what the history adds beside the cell's dimensions.
_NOT_CELL_FIELDS = ("engine", "version", "runner", "server", "repetitions", "command", "machine_class", "instrument")


def series_cell(dims: dict) -> dict:
    """The cell of a series, as ``vkbench ab --cell`` takes it (one repetition per round): every
    dimension of the series (workload, CPU placement, tool arguments, ... included), so the A/B
    and the bisect measure the very cell that moved, only the server replaced."""
    cell: dict[str, Any] = {k: v for k, v in dims.items() if k not in _NOT_CELL_FIELDS and v is not None}
    if "command" in dims and "tests" not in cell:
        cell["tests"] = [str(dims["command"]).lower()]
    cell["server"] = f"{dims.get('engine', 'valkey')}:unstable"
    cell["repetitions"] = 1
    return cell


# -- recording an A/B's verdict ------------------------------------------------------------------

_FULL_SHA = re.compile(r"[0-9a-f]{40}", re.ASCII)


def dispatch_bodies(detection: dict, ref: str) -> tuple[list[dict], list[str]]:
    """One ``POST .../actions/workflows/ab.yml/dispatches`` body per candidate waiting in
    ``detection`` (detect.json), its inputs taken from the candidate, and the malformed requests
    skipped (an id or a commit not in the form ab.yml accepts; ab.yml checks every input again)."""
    bodies, skipped = [], []
    waiting = (detection.get("confirmation") or {}).get("waiting") or [] if isinstance(detection, dict) else []
    for request in waiting if isinstance(waiting, list) else []:
        rid = request.get("id") if isinstance(request, dict) else None
        good = ((request or {}).get("good") or {}).get("commit") or "" if isinstance(request, dict) else ""
        bad = ((request or {}).get("bad") or {}).get("commit") or "" if isinstance(request, dict) else ""
        if not (isinstance(rid, str) and CONFIRM_ID.fullmatch(rid) and isinstance(good, str) and _FULL_SHA.fullmatch(good)
                and isinstance(bad, str) and _FULL_SHA.fullmatch(bad)):
            skipped.append(f"skipping malformed confirmation request {str(rid)[:40]!r}")
            continue
        inputs = {"repository": request.get("repository"), "base": good, "candidate": bad,
                  "runner_class": request.get("machine_class"),
                  "cell": json.dumps(request.get("cell") or {}, separators=(",", ":")), "confirm": rid, "comment": "false",
                  "instrument": request.get("instrument") or "wallclock"}
        bodies.append({"ref": ref, "inputs": inputs})
    return bodies, skipped


def load(store: HistoryStore) -> dict:
    """confirmations.json of the history (an empty mapping when none was recorded yet), checked:
    a corrupt file or a malformed entry is a ResultFileError naming the file and the field."""
    path = store.path / CONFIRMATIONS
    if not path.exists():
        return {"confirmations": {}}
    data = check(_read_json(path, _RESTORE), "confirmations-v1", path, _RESTORE)
    for rid, entry in data["confirmations"].items():
        # What the schema cannot say: an entry is filed under its own (and its request's) id.
        for where, found in (("id", entry["id"]), ("request/id", entry["request"]["id"])):
            if found != rid:
                raise ResultFileError(f"{path}: confirmations/{shown_key(rid)}/{where}: {shown(found)} differs from its key; "
                                      "not a confirmations file", hint=_RESTORE)
    return data


def read_ab_report(path: Path) -> dict:
    """A ``vkbench ab`` report (ab.json), with every field :func:`record` and ``vkbench confirm``
    use checked: anything else is a ResultFileError naming the file and the field."""
    return check(_read_json(path, _AB_HINT, missing_is_usage=True), "ab-v1", path, _AB_HINT)


def _read_json(path: Path, hint: str, *, missing_is_usage: bool = False) -> Any:
    try:
        return json.loads(Path(path).read_text(encoding="utf-8"))
    except FileNotFoundError:
        if missing_is_usage:
            raise UsageError(f"{path}: no such file", hint=hint) from None
        raise ResultFileError(f"{path}: no such file", hint=hint) from None
    except IsADirectoryError:
        raise ResultFileError(f"{path}: a directory where a JSON file belongs", hint=hint) from None
    except (UnicodeDecodeError, ValueError, RecursionError) as exc:
        raise ResultFileError(f"{path}: not JSON ({exc})", hint=hint) from None


def _number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def verdict_of(ab_report: dict, min_effect: float, *, counted: bool = False,
               count_min_effect: float | None = None) -> tuple[str, dict]:
    """("confirmed" | "rejected" | "inconclusive", the row that decided) from a ``vkbench ab``
    report (ab.json). The worst row decides, and only when its MDE reached the report's target
    (else "inconclusive": recorded, never alerting, never called noise either). ``counted``: the
    instruction rows (``counts``) decide, where more is worse."""
    if counted:
        return _count_verdict(ab_report, count_min_effect if count_min_effect is not None else min_effect)
    rows = ab_report.get("rows") or []
    if not rows:
        return "rejected", {}
    worst = min(rows, key=lambda r: r["change"])
    target = ab_report.get("target_mde")
    target = target if _number(target) and target > 0 else TARGET_MDE
    if not adequate(worst.get("mde"), target):
        return "inconclusive", {**worst, "verdict": inconclusive(worst.get("mde"), target, more=_more_rounds(worst))}
    confirmed = worst.get("ci_high") is not None and worst["ci_high"] < 0 and abs(worst["change"]) >= min_effect
    return ("confirmed" if confirmed else "rejected"), worst


def _count_verdict(ab_report: dict, min_effect: float) -> tuple[str, dict]:
    from ..ab_counts import INSTRUCTIONS_TARGET_MDE

    rows = ab_report.get("counts") or []
    if not rows:
        return "rejected", {}
    worst = max(rows, key=lambda r: r["change"])
    target = ab_report.get("counts_target_mde")
    target = target if _number(target) and target > 0 else INSTRUCTIONS_TARGET_MDE
    if not adequate(worst.get("mde"), target):
        return "inconclusive", {**worst, "verdict": inconclusive(worst.get("mde"), target, more=_more_rounds(worst),
                                                                 unit="seed pairs")}
    confirmed = worst.get("ci_low") is not None and worst["ci_low"] > 0 and worst["change"] >= min_effect
    return ("confirmed" if confirmed else "rejected"), worst


def _more_rounds(row: dict) -> int | None:
    needed, done = row.get("rounds_for_target"), row.get("rounds")
    if isinstance(needed, int) and isinstance(done, int) and not isinstance(needed, bool):
        return needed - done
    return None


def record(store: HistoryStore, request: dict, ab_report: dict, params: DetectionParams | None = None) -> dict:
    """Write the A/B's verdict on ``request`` into ``confirmations.json``; return the entry."""
    params = params or DetectionParams()
    counted = request.get("instrument") == "instructions" or (
        request.get("instrument") == "both" and not (ab_report.get("rows") or []))
    status, row = verdict_of(ab_report, params.min_magnitude, counted=counted,
                             count_min_effect=params.count_min_magnitude)
    entry = {
        "id": request["id"], "status": status, "recorded": utc_now(), "request": request,
        "ab": {"change": row.get("change"), "ci_low": row.get("ci_low"), "ci_high": row.get("ci_high"),
               "mde": row.get("mde"), "rounds": row.get("rounds"), "cell": row.get("cell"),
               "command": row.get("command"), "verdict": row.get("verdict"), "metric": row.get("metric", "rps"),
               "base": (ab_report.get("base") or {}).get("commit"),
               "candidate": (ab_report.get("candidate") or {}).get("commit")},
    }
    data = load(store)
    data["confirmations"][request["id"]] = entry
    write_json(store.path / CONFIRMATIONS, data, indent=1)
    return entry


def incident_id_of(request_id: str) -> str:
    """The id of the incident a confirmed request becomes (and keeps, see :func:`apply`)."""
    return request_id.replace("confirm-", "inc-", 1)


def apply(incidents: list[dict], requests: list[dict], confirmations: dict, *,
          change_points: list[dict] = (), annotations: list[dict] = ()) -> tuple[list[dict], list[dict]]:
    """(incidents with the confirmed requests added, requests still waiting for an A/B).

    Rejected requests are dropped from both: recorded in confirmations.json, never alerting.
    A regular incident (from ``change_points``) of a change that an A/B confirmed earlier takes
    over the confirmed incident's id (its change points' ``incident_id`` follow) and its A/B
    figures, instead of appearing beside it under another id: the change stays one incident, and
    ``vkbench alert`` keeps updating its issue instead of closing it as noise and opening another.
    Annotations about a confirmed incident's id apply to it, before and after."""
    adopted = _adopt_confirmed_ids(incidents, change_points, confirmations, annotations)
    waiting = []
    for req in requests:
        entry = confirmations.get(req["id"])
        if entry is None:
            waiting.append(req)
        elif entry["status"] == "confirmed" and req["id"] not in adopted:
            incidents.append(_annotated(_confirmed_incident(req, entry), annotations))
    return incidents, waiting


def _adopt_confirmed_ids(incidents: list[dict], change_points: list[dict], confirmations: dict,
                         annotations: list[dict]) -> set[str]:
    """Give each regular regression incident that matches a confirmed request that request's
    incident id; return the ids of the requests adopted this way (each at most once)."""
    members: dict[str, list[dict]] = {}
    for cp in change_points:
        members.setdefault(cp.get("incident_id"), []).append(cp)
    confirmed = sorted((e for e in confirmations.values() if e.get("status") == "confirmed" and e.get("request")),
                       key=lambda e: (e["request"]["bad"].get("timestamp") or "", e["id"]))
    adopted: set[str] = set()
    taken: set[int] = set()
    for entry in confirmed:
        req = entry["request"]
        scored = [(_match_score(req, members.get(inc["id"], [])), k) for k, inc in enumerate(incidents)
                  if k not in taken and inc.get("direction") == "regression"
                  and inc.get("machine_class") == req["machine_class"]]
        scored = [(score, k) for score, k in scored if score > 0]
        if not scored:
            continue
        _, k = max(scored, key=lambda sk: (sk[0], -sk[1]))
        incident, new_id = incidents[k], incident_id_of(entry["id"])
        for cp in members.get(incident["id"], []):
            cp["incident_id"] = new_id
        ab = entry["ab"]
        incident["id"] = new_id
        incident["confirmation"] = {"by": "ab", "change": ab.get("change"), "ci_low": ab.get("ci_low"),
                                    "ci_high": ab.get("ci_high"), "mde": ab.get("mde"), "rounds": ab.get("rounds")}
        if not incident.get("annotation"):
            _annotated(incident, annotations)
        taken.add(k)
        adopted.add(entry["id"])
    return adopted


def _match_score(req: dict, cps: list[dict]) -> int:
    """How well an incident's change points fit a confirmed request: 0 when none moved at the
    request's first bad build (its run, or the same commit, or a run or two off: persistence
    locates a change to +-1-2 runs); more for each exact match and each series in common."""
    bad_run, bad_commit = req["bad"].get("run_id"), req["bad"].get("commit")
    series = {s["series_id"] for s in req.get("series") or []}
    score = 0
    for cp in cps:
        runs = cp.get("runs") or {}
        near = set(runs.get("before", [])[-2:]) | set(runs.get("after", [])[:3])
        exact = cp["bad"].get("run_id") == bad_run or (bad_commit and cp["bad"].get("commit") == bad_commit)
        if exact or bad_run in near:
            score += 2 + bool(exact) + (cp.get("series_id") in series)
    return score


def _annotated(incident: dict, annotations: list[dict]) -> dict:
    """An annotation about this incident's id (``incident: inc-...``), as detection applies them."""
    annotation = next((a for a in annotations if a.get("incident") == incident["id"]), None)
    if annotation is not None:
        incident["annotation"] = annotation
        if annotation["action"] == "silence":
            incident["silenced"] = True
        elif annotation["action"] == "reset-baseline":
            incident["status"], incident["resolution"] = "closed", "baseline-reset"
    return incident


def _confirmed_incident(req: dict, entry: dict) -> dict:
    ab = entry["ab"]
    magnitude = ab.get("change") if ab.get("change") is not None else req["magnitude"]
    metric = ab.get("metric") or "rps"
    shown = f"{magnitude:+.2%} instructions per operation" if metric == "instructions_per_op" else f"{magnitude:+.0%}"
    return {
        "id": incident_id_of(req["id"]),
        "title": (f"{ab.get('command') or 'rps'} {ab.get('cell') or ''}, {req['machine_class']}: {shown} "
                  f"between {req['good'].get('commit', '')[:10]} and {req['bad'].get('commit', '')[:10]} "
                  "(confirmed by A/B)").replace("+-", "-"),
        "status": "open", "resolution": None, "silenced": False, "direction": "regression", "metric": metric,
        "metrics": sorted({s["metric"] for s in req["series"]}), "magnitude": round(magnitude, 5),
        "p_value": None, "series_ids": sorted({s["series_id"] for s in req["series"]}),
        "change_points": 0, "machine_class": req["machine_class"], "engine": "valkey",
        "good": req["good"], "bad": req["bad"], "annotation": None,
        "confirmation": {"by": "ab", "change": ab.get("change"), "ci_low": ab.get("ci_low"),
                         "ci_high": ab.get("ci_high"), "mde": ab.get("mde"), "rounds": ab.get("rounds")},
    }


def requests_path(out: Path) -> Path:
    return out / "confirm-requests.json"


def write_requests(path: Path, requests: list[dict]) -> None:
    write_json(path, {"requests": requests}, indent=1)
