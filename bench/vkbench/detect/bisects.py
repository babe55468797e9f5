"""Automatic bisect of regression incidents, and its result in the history.

1. :func:`bisect_requests` (``vkbench bisect-requests``, run after ``vkbench alert``): for each
   regression issue alert opened (its ``--actions-out``) whose incident lies between two commits
   of the trusted repository (the last good and first bad runs are source builds of it), one
   request for bisect.yml: the repository, both commits, the incident's machine class, its issue
   and id, and the cell of its most affected series. :func:`dispatch_body` is the REST
   ``workflow_dispatch`` body of one request.
2. bisect.yml runs ``vkbench bisect`` on that runner class.
3. :func:`record` (``vkbench bisect-record``): its report (bisect.json) becomes the incident's
   entry in ``bisects.json`` in the history: culprit, effect and interval, every step's A/B.
4. :func:`attach` (``vkbench detect``): the incident in detect.json carries the culprit
   (``bisect``), so the issue body, the job summary and the site show it.

``bisects.json``::

    {"format": 1, "bisects": {"<incident id>": {"incident_id", "recorded", "repository", "good",
     "bad", "range_size", "measure", "reproduced", "resolved", "culprit", "culprit_subject", "effect",
     "ci_low", "ci_high", "steps": [{"commit", "subject", "change", "ci_low", "ci_high", "mde",
     "rounds", "judged", "wall_s"}], "wall_s", "workflow_run_url"}}}

``resolved`` is false when the bisect's step limit stopped it before one commit remained (no
culprit then); entries recorded before it existed read as resolved.
"""

from __future__ import annotations

import json
import math
import re
from pathlib import Path
from typing import Any

from ..errors import ResultFileError, UsageError
from ..files import utc_now, write_json
from ..history.schemas import check, shown, shown_key
from ..history.store import HistoryStore
from ..matrix.server_settings import CELL_INPUT, CELL_INPUT_MAX
from .confirmations import series_cell

BISECTS = "bisects.json"
FORMAT = 1
FULL_SHA = re.compile(r"^[0-9a-f]{40}$")
#: An incident id as detection makes them (12 hex, ``inc-<12 hex>``) or an annotation names one.
INCIDENT_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,99}$")
#: A midpoint whose A/B missed the target MDE is still judged (the search goes on) and says so.
JUDGED = ("bad", "good", "reproduced", "not reproduced", "inconclusive",
          "bad (MDE above target)", "good (MDE above target)")

_RESTORE = ("restore it from the gh-pages branch history (git log -- history/bisects.json); "
            "bisect.yml's record job writes it")


# -- choosing what to bisect -----------------------------------------------------------------------

def read_actions(path: Path) -> list[dict]:
    """What ``vkbench alert --actions-out`` wrote: a list of {kind, incident_id, issue, ...}."""
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise UsageError(f"{path}: no such file", hint="pass the file of `vkbench alert --actions-out`") from None
    except (UnicodeDecodeError, ValueError, RecursionError) as exc:
        raise ResultFileError(f"{path}: not JSON ({exc})", hint="pass the file of `vkbench alert --actions-out`") from None
    return check(data, "alert-actions-v1", path, "pass the file of `vkbench alert --actions-out`")


def bisect_requests(detection: dict, actions: list[dict], *, trusted_repository: str, runner_classes: set[str],
                    series_index: dict, confirmations: dict | None = None,
                    recorded: dict | None = None) -> tuple[list[dict], list[str]]:
    """(one request per incident to bisect, one line per incident skipped and why).

    An incident is bisected when alert opened its issue in this run (action ``create`` with an
    issue number), it is an open regression, and its last good and first bad runs are source
    builds of ``trusted_repository`` at two different full commits, on a runner class of
    ``runner_classes``, with no bisect recorded for it yet."""
    incidents = {i.get("id"): i for i in detection.get("incidents") or []}
    by_incident: dict[str, list[dict]] = {}
    for cp in detection.get("change_points") or []:
        by_incident.setdefault(cp.get("incident_id"), []).append(cp)
    requests: list[dict] = []
    skipped: list[str] = []
    seen: set[str] = set()
    for action in actions:
        iid, issue = action["incident_id"], action.get("issue")
        if action["kind"] != "create" or not issue or iid in seen:
            continue
        seen.add(iid)
        incident = incidents.get(iid)
        reason = _not_bisectable(incident, trusted_repository, runner_classes, recorded or {})
        if reason:
            skipped.append(f"{iid}: {reason}")
            continue
        sid = worst_series(incident, by_incident.get(iid, []), confirmations or {})
        dims = (series_index.get(sid) or {}).get("dims") if sid else None
        if not isinstance(dims, dict):
            skipped.append(f"{iid}: its series are not in the history index")
            continue
        cell = series_cell(dims)
        cell_json = json.dumps(cell, separators=(",", ":"))
        if len(cell_json) > CELL_INPUT_MAX or not CELL_INPUT.fullmatch(cell_json):
            skipped.append(f"{iid}: the cell of series {sid} is not a valid bisect.yml input")
            continue
        requests.append({"incident_id": iid, "issue": int(issue), "repository": trusted_repository,
                         "good": incident["good"]["commit"], "bad": incident["bad"]["commit"],
                         "runner_class": incident["machine_class"], "series_id": sid, "cell": cell})
    return requests, skipped


def _not_bisectable(incident: dict | None, trusted: str, runner_classes: set[str], recorded: dict) -> str | None:
    if incident is None:
        return "not in detect.json"
    if incident.get("direction") != "regression" or incident.get("status") != "open" or incident.get("silenced"):
        return "not an open regression"
    good, bad = incident.get("good") or {}, incident.get("bad") or {}
    if not (good.get("repository") == bad.get("repository") == trusted):
        return f"its builds are not source builds of {trusted}"
    if not (isinstance(good.get("commit"), str) and FULL_SHA.match(good["commit"])
            and isinstance(bad.get("commit"), str) and FULL_SHA.match(bad["commit"])):
        return "no full commit on both ends"
    if good["commit"] == bad["commit"]:
        return "the same commit on both ends (the change is not the code's)"
    if incident.get("machine_class") not in runner_classes:
        return f"machine class {incident.get('machine_class')!r} is not a runner class"
    if incident["id"] in recorded:
        return "already bisected"
    return None


def worst_series(incident: dict, change_points: list[dict], confirmations: dict) -> str | None:
    """The series that moved most in the incident's main metric: from its change points, or (an
    incident a confirmation A/B opened has none yet) from the confirmed request's series."""
    metric = incident.get("metric") or "rps"
    moved = [(abs(cp["magnitude"]), cp["series_id"]) for cp in change_points
             if cp.get("metric") == metric and _number(cp.get("magnitude")) and isinstance(cp.get("series_id"), str)]
    if not moved:
        iid = str(incident.get("id"))
        entry = confirmations.get("confirm-" + iid[4:]) if iid.startswith("inc-") else None
        series = ((entry or {}).get("request") or {}).get("series") or []
        moved = [(abs(s["magnitude"]), s["series_id"]) for s in series
                 if isinstance(s, dict) and s.get("metric") == metric and _number(s.get("magnitude"))
                 and isinstance(s.get("series_id"), str)]
    if moved:
        return max(moved, key=lambda m: (m[0], m[1]))[1]
    ids = sorted(s for s in incident.get("series_ids") or [] if isinstance(s, str))
    return ids[0] if ids else None


def requests_from_history(history: Path, actions_file: Path, *, trusted_repository: str,
                          runner_classes: set[str]) -> tuple[list[dict], list[str]]:
    """:func:`bisect_requests` for a history directory and what ``vkbench alert --actions-out``
    wrote: the requests, and one line per action that is not bisected (why)."""
    from .confirmations import load as load_confirmations

    actions = read_actions(actions_file)
    store = HistoryStore(history)
    detection = store.read_detect(for_alerts=True)
    if detection is None:
        raise ResultFileError(f"{store.detect_path}: not found", hint="run `vkbench detect --history DIR` first")
    return bisect_requests(detection, actions, trusted_repository=trusted_repository, runner_classes=runner_classes,
                           series_index=store.index()["series"], confirmations=load_confirmations(store)["confirmations"],
                           recorded=load(store)["bisects"])


def describe(request: dict) -> str:
    """One Markdown list line for a chosen request (job summaries)."""
    return (f"- bisect {request['incident_id']} (#{request['issue']}): {request['good'][:10]}..{request['bad'][:10]} "
            f"on {request['runner_class']}, cell {json.dumps(request['cell'], separators=(',', ':'))}")


def dispatch_body(request: dict, ref: str) -> dict:
    """The REST body of ``POST /repos/{repo}/actions/workflows/bisect.yml/dispatches``."""
    return {"ref": ref, "inputs": {
        "repository": request["repository"], "good": request["good"], "bad": request["bad"],
        "runner_class": request["runner_class"], "incident_issue": str(request["issue"]),
        "incident": request["incident_id"], "cell": json.dumps(request["cell"], separators=(",", ":")),
    }}


# -- the bisect's report, and bisects.json ----------------------------------------------------------

def read_report(path: Path) -> dict:
    """A ``vkbench bisect`` report (bisect.json), every field :func:`record` keeps checked."""
    hint = "pass the bisect.json of `vkbench bisect --out DIR`"
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise UsageError(f"{path}: no such file", hint=hint) from None
    except (UnicodeDecodeError, ValueError, RecursionError) as exc:
        raise ResultFileError(f"{path}: not JSON ({exc})", hint=hint) from None
    if not isinstance(data, dict):
        raise ResultFileError(f"{path}: not a bisect report (top level is not an object)", hint=hint)
    ci = data.get("effect_ci")
    if not (isinstance(ci, list) and len(ci) == 2):
        raise ResultFileError(f"{path}: effect_ci: not a [low, high] pair", hint=hint)
    entry = {"repository": data.get("url"), "good": data.get("good"), "bad": data.get("bad"),
             "range_size": data.get("range_size"), "measure": data.get("measure"), "reproduced": data.get("reproduced"),
             "resolved": data.get("resolved", True), "culprit": data.get("culprit"), "culprit_subject": data.get("culprit_subject"), "effect": data.get("effect"),
             "ci_low": ci[0], "ci_high": ci[1], "steps": data.get("steps"), "wall_s": data.get("wall_s"),
             "inconclusive": data.get("inconclusive")}
    what = "a report of `vkbench bisect`"
    check(entry, "bisects-v1", path, hint, definition="entry", what=what)
    problem = _entry_problem(entry)
    if problem:
        raise ResultFileError(f"{path}: {problem}; not {what}", hint=hint)
    return entry


def load(store: HistoryStore) -> dict:
    """bisects.json of the history (an empty mapping when none was recorded yet), checked: a
    corrupt file, a newer format or a malformed entry is a ResultFileError naming the file."""
    path = store.path / BISECTS
    if not path.exists():
        return {"format": FORMAT, "bisects": {}}
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError) as exc:
        raise ResultFileError(f"{path}: corrupt JSON ({exc})", hint=_RESTORE) from None
    except IsADirectoryError:
        raise ResultFileError(f"{path}: a directory where a JSON file belongs", hint=_RESTORE) from None
    version = data.get("format") if isinstance(data, dict) else None
    if isinstance(version, int) and not isinstance(version, bool) and version > FORMAT:   # before its schema
        raise ResultFileError(f"{path}: format {version} is newer than this vkbench reads ({FORMAT})",
                              hint="upgrade vkbench (pip install -U vkbench) before reading this history")
    check(data, "bisects-v1", path, _RESTORE)
    for iid, entry in data["bisects"].items():
        problem = _entry_problem(entry)
        if not problem and entry.get("incident_id") != iid:
            problem = "incident_id differs from its key"
        if problem:
            raise ResultFileError(f"{path}: bisects/{shown_key(iid)}: {problem}", hint=_RESTORE)
    return data


def record(store: HistoryStore, incident: dict, report: dict, *, run_url: str | None = None) -> dict:
    """Write the bisect ``report`` (:func:`read_report`) of ``incident`` into bisects.json; return
    the entry. The report must be of the incident's repository and commit range."""
    iid = str(incident.get("id"))
    if not INCIDENT_ID.match(iid):
        raise UsageError(f"incident id {shown(iid)} is not an id", hint="take the id from detect.json")
    good, bad = incident.get("good") or {}, incident.get("bad") or {}
    if (report["good"], report["bad"]) != (good.get("commit"), bad.get("commit")):
        raise UsageError(f"the bisect covers {report['good'][:12]}..{report['bad'][:12]}, incident {iid} lies between "
                         f"{str(good.get('commit'))[:12]} and {str(bad.get('commit'))[:12]}",
                         hint="bisect the incident's last good and first bad commits (tools/ci/bisect.sh dispatch does)")
    if report["repository"] != bad.get("repository"):
        raise UsageError(f"the bisect ran in {report['repository']}, incident {iid} was built from {bad.get('repository')}",
                         hint="bisect the repository the incident's builds came from")
    if run_url is not None and not re.fullmatch(r"https://[^\s\"'<>]{1,300}", run_url):
        raise UsageError(f"--run-url {shown(run_url)}: not an https URL", hint="the workflow run's URL")
    entry = {"incident_id": iid, "recorded": utc_now(), **report, "workflow_run_url": run_url}
    data = load(store)
    data["bisects"][iid] = entry
    write_json(store.path / BISECTS, data, indent=1)
    return entry


def attach(incidents: list[dict], bisects: dict) -> None:
    """Give each incident with a recorded bisect its result (``bisect``): the culprit, the
    effect and interval, what was measured, how many steps (the steps stay in bisects.json)."""
    for incident in incidents:
        entry = bisects.get(incident.get("id"))
        if entry is None:
            continue
        incident["bisect"] = {
            "culprit": entry["culprit"], "culprit_subject": entry["culprit_subject"], "effect": entry["effect"],
            "ci_low": entry["ci_low"], "ci_high": entry["ci_high"], "measure": entry["measure"],
            "reproduced": entry["reproduced"], "resolved": entry.get("resolved", True),
            "steps": len(entry["steps"]), "range_size": entry["range_size"],
            "repository": entry["repository"], "workflow_run_url": entry.get("workflow_run_url"),
        }
        if entry.get("inconclusive"):
            incident["bisect"]["inconclusive"] = entry["inconclusive"]


# -- checks -----------------------------------------------------------------------------------------

def _number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def _entry_problem(entry: dict) -> str | None:
    """What the schema cannot say of an entry (valid against bisects-v1 ``$defs/entry``): a
    culprit is named exactly when the search reproduced the regression and finished."""
    resolved = entry.get("resolved", True)
    if entry["reproduced"] and resolved and entry.get("culprit") is None:
        return "culprit: a reproduced regression names one"
    if not resolved and entry.get("culprit") is not None:
        return "culprit: an unresolved bisect names none"
    return None
