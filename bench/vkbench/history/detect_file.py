"""detect.json as its readers use it, checked before use (docs/history-format.md, "detect.json").

`vkbench detect` writes the file; `vkbench alert` and the site read it back from gh-pages, where
anyone with push access (or a damaged checkout) can change it. Checked here, where it is read:
every list and object has the type its readers index into, ids and names are strings, numbers
are finite, and each problem is a :class:`ResultFileError` (exit 7) that names the file and the
field instead of a KeyError or TypeError deep in a renderer.

Two depths: what every reader needs (the site draws an incident without, say, its p-value), and,
with ``for_alerts``, every field the issue bodies and job summaries format
(:mod:`vkbench.alerts.summary`, :mod:`vkbench.detect.report`).
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any, Callable

from ..errors import ResultFileError

HINT = ("detect.json is derived: re-run `vkbench detect --history DIR` to write it again from the history, "
        "or restore it from the gh-pages branch history (git log -- history/detect.json)")

Check = Callable[[Any], bool]


def _str(value: Any) -> bool:
    return isinstance(value, str)


def _opt_str(value: Any) -> bool:
    return value is None or isinstance(value, str)


def _number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def _opt_number(value: Any) -> bool:
    return value is None or _number(value)


def _count(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


def _opt_index(value: Any) -> bool:
    return value is None or _count(value)


def _bool(value: Any) -> bool:
    return isinstance(value, bool)


def _one_of(*allowed: str) -> Check:
    return lambda value: value in allowed


def _list_of(check: Check) -> Check:
    return lambda value: isinstance(value, list) and all(check(v) for v in value)


def _hex_commit(value: Any) -> bool:
    return isinstance(value, str) and 7 <= len(value) <= 64 and all(c in "0123456789abcdef" for c in value)


def _dict(value: Any) -> bool:
    return isinstance(value, dict)


_DIRECTION = _one_of("regression", "improvement")

#: field -> (check, what it must be). A run reference: a change point's or incident's good/bad end.
_REF = {
    "run_id": (_str, "a string"), "commit": (_opt_str, "a string or null"), "timestamp": (_opt_str, "a string or null"),
    "version": (_opt_str, "a string or null"), "server_version": (_opt_str, "a string or null"),
    "workflow_run_url": (_opt_str, "a string or null"), "repository": (_opt_str, "a string or null"),
    "build_config": (_opt_str, "a string or null"), "build_id": (_opt_str, "a string or null"),
}
_REF_REQUIRED = ("run_id",)

_CHANGE_POINT = {
    "series_id": (_str, "a string"), "metric": (_str, "a string"), "direction": (_DIRECTION, "regression or improvement"),
    "magnitude": (_number, "a finite number"), "p_value": (_number, "a finite number"),
    "level_before": (_number, "a finite number"), "level_after": (_number, "a finite number"),
    "index": (_opt_index, "an index (integer >= 0)"), "run_id": (_opt_str, "a string"), "timestamp": (_opt_str, "a string"),
    "incident_id": (_opt_str, "a string or null"), "series_name": (_str, "a string"),
    "runs": (lambda v: isinstance(v, dict) and all(_list_of(_str)(v.get(k)) for k in ("before", "after")),
             "an object with 'before' and 'after' lists of run ids"),
}
_CHANGE_POINT_REQUIRED = ("series_id", "metric")
_CHANGE_POINT_ALERTS = ("direction", "magnitude", "p_value", "level_before", "level_after", "runs", "good", "bad")

_PROFILE_ROW = {"function": _str, "before_self": _number, "after_self": _number, "self_delta": _number,
                "before_total": _number, "after_total": _number, "total_delta": _number}

#: An incident's function-level instruction difference (instruments/diff.py): per op, numbers.
_INSTRUCTION_ROW = ("before", "after", "delta")

#: An incident's bisect (detect/bisects.py attach): what the issue bodies and the site show of it.
_BISECT = {"culprit": _opt_str, "culprit_subject": _opt_str, "effect": _opt_number, "ci_low": _opt_number,
           "ci_high": _opt_number, "measure": _opt_str, "reproduced": _bool, "steps": _count,
           "repository": _opt_str, "workflow_run_url": _opt_str}

_INCIDENT = {
    "id": (lambda v: isinstance(v, str) and v != "", "a non-empty string"), "title": (_str, "a string"),
    "status": (_one_of("open", "closed"), "open or closed"), "direction": (_DIRECTION, "regression or improvement"),
    "metric": (_str, "a string"), "magnitude": (_number, "a finite number"), "p_value": (_opt_number, "a finite number or null"),
    "series_ids": (_list_of(_str), "a list of series ids"), "machine_class": (_str, "a string"),
    "silenced": (_bool, "true or false"), "resolution": (_opt_str, "a string or null"), "engine": (_opt_str, "a string or null"),
    "metrics": (_list_of(_str), "a list of strings"), "confirmation": (_dict, "an object"),
    "same_build": (_bool, "true or false"),
    "profile_diff": (lambda v: isinstance(v, dict) and isinstance(v.get("rows"), list) and all(
        isinstance(r, dict) and set(r) == set(_PROFILE_ROW) and all(c(r[k]) for k, c in _PROFILE_ROW.items())
        for r in v["rows"]), f"an object whose 'rows' each have {', '.join(_PROFILE_ROW)}"),
    "instruction_diff": (lambda v: isinstance(v, dict) and isinstance(v.get("rows"), list) and all(
        isinstance(r, dict) and _str(r.get("function")) and all(_number(r.get(k)) for k in _INSTRUCTION_ROW)
        for r in v["rows"]), "an object whose 'rows' each have function, " + ", ".join(_INSTRUCTION_ROW)),
    "bisect": (lambda v: isinstance(v, dict) and all(c(v.get(k)) for k, c in _BISECT.items())
               and (v.get("culprit") is None or _hex_commit(v["culprit"])),
               f"an object with {', '.join(_BISECT)} (culprit: a commit or null)"),
}
_INCIDENT_REQUIRED = ("id",)
_INCIDENT_ALERTS = ("title", "status", "direction", "metric", "magnitude", "series_ids", "machine_class", "silenced",
                    "good", "bad")


def check_detection(doc: Any, path: Path, *, for_alerts: bool = False) -> dict:
    """``doc`` (detect.json's content) when its structure is what the readers use; else a
    ResultFileError naming ``path`` and the field (``incidents/0/status``)."""
    def fail(where: str, problem: str) -> ResultFileError:
        return ResultFileError(f"{path}: {where}: {problem}; not a detection output vkbench can use", hint=HINT)

    if not isinstance(doc, dict):
        raise fail("top level", "not an object")
    for key in ("series", "runs", "points"):
        if key in doc and not _count(doc[key]):
            raise fail(key, "not a count (integer >= 0)")
    if not _opt_str(doc.get("generated")):
        raise fail("generated", "not a string")
    if "parameters" in doc and not _dict(doc["parameters"]):
        raise fail("parameters", "not an object")
    if "confirmation" in doc and not _dict(doc["confirmation"]):
        raise fail("confirmation", "not an object")

    def fields(obj: Any, where: str, spec: dict, required: tuple[str, ...]) -> None:
        if not isinstance(obj, dict):
            raise fail(where, "not an object")
        for key in required:
            if key not in obj:
                raise fail(f"{where}/{key}", "missing")
        for key, (check, what) in spec.items():
            if key in obj and not check(obj[key]):
                raise fail(f"{where}/{key}", f"{_shown(obj[key])} is not {what}")
        for end in ("good", "bad"):
            if end in obj:
                fields(obj[end], f"{where}/{end}", _REF, _REF_REQUIRED)

    change_points = doc.get("change_points", [])
    if not isinstance(change_points, list):
        raise fail("change_points", "not a list")
    for i, cp in enumerate(change_points):
        fields(cp, f"change_points/{i}", _CHANGE_POINT,
               _CHANGE_POINT_REQUIRED + (_CHANGE_POINT_ALERTS if for_alerts else ()))

    incidents = doc.get("incidents", [])
    if not isinstance(incidents, list):
        raise fail("incidents", "not a list")
    for i, incident in enumerate(incidents):
        where = f"incidents/{i}"
        fields(incident, where, _INCIDENT, _INCIDENT_REQUIRED + (_INCIDENT_ALERTS if for_alerts else ()))
        annotation = incident.get("annotation")
        # The site shows a plain-string note too; issue bodies read an annotation's action and reason.
        if annotation is not None and not (isinstance(annotation, dict) or (isinstance(annotation, str) and not for_alerts)):
            raise fail(f"{where}/annotation", f"{_shown(annotation)} is not an object or null")
        if isinstance(annotation, dict):
            for key in ("action", "reason"):
                if not _opt_str(annotation.get(key)):
                    raise fail(f"{where}/annotation/{key}", "not a string")

    segments = doc.get("segments", {})
    if not isinstance(segments, dict):
        raise fail("segments", "not an object")
    for sid, segs in segments.items():
        if not isinstance(segs, list):
            raise fail(f"segments/{sid}", "not a list")
        for k, seg in enumerate(segs):
            if not isinstance(seg, dict) or not _count(seg.get("start_index")) or not _opt_str(seg.get("fingerprint_id")):
                raise fail(f"segments/{sid}/{k}", "not an object with start_index (integer >= 0) and fingerprint_id")

    noise = doc.get("noise", {})
    if not isinstance(noise, dict):
        raise fail("noise", "not an object")
    for sid, by_metric in noise.items():
        if not isinstance(by_metric, dict):
            raise fail(f"noise/{sid}", "not an object")
        for metric, stat in by_metric.items():
            if not isinstance(stat, dict) or not _opt_number(stat.get("cv")):
                raise fail(f"noise/{sid}/{metric}", "not an object with a finite cv")
    return doc


def _shown(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


__all__ = ["check_detection"]
