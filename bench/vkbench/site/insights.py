"""What the site says about the numbers: io-threads advice per machine class (data/advice.json)
and CPU profile diffs of incidents (data/profiles/<incident id>.json).

Advice comes from :mod:`vkbench.advise` on the newest point of every series, and from the
published references (Pi CM4 blog, devhands) as context. A profile diff is written for an
incident when both its last good and its first bad run recorded a profile (``--profile``) for
one of its series: the flame graph trees before and after, the differential tree, and the
functions whose share of samples changed most.
"""

from __future__ import annotations

from pathlib import Path

from ..advise import Advice, advise, history_results
from ..profile.diff import diff_tree, profile_diff, tree
from ..profile.incidents import incident_profiles
from .compact import num
from .history_reader import History

#: Rows of the "what changed" table per incident.
DIFF_ROWS = 20


def _stat(stat: dict | None) -> list | None:
    if not stat:
        return None
    return [num(stat.get("median")), num(stat.get("ci_low")), num(stat.get("ci_high"))]


def site_advice(a: Advice) -> dict:
    return {
        "machine_class": a.machine_class, "command": a.command, "label": a.label, "sentence": a.sentence,
        "recommended": a.recommended, "best": a.best, "server_cores": a.server_cores,
        "client_on_box": a.client_on_box, "client_threads": a.client_threads,
        "dims": {k: a.workload.get(k) for k in ("engine", "version", "topology", "pipeline", "clients", "data_size", "tool")},
        "warnings": a.warnings,
        "settings": [{
            "io": s.io_threads, "rps": _stat(s.rps), "lat_metric": s.latency_metric, "lat": _stat(s.latency),
            "change": num(s.change_vs_best), "noise": s.within_noise, "over": s.oversubscribed,
            "bound": s.client_bound, "flags": s.flags,
        } for s in a.settings],
    }


def advice_data(history_dir: Path, references: list[dict], store=None) -> dict:
    """``store``: the history's store the build reads through (its parsed shards are reused)."""
    measured = advise(history_results(history_dir, store=store))
    published = advise(references)
    return {"advice": [site_advice(a) for a in measured], "references": [site_advice(a) for a in published]}


def incident_profile_docs(history: History, detect: dict, points_of) -> dict[str, dict]:
    """``{incident id: profile diff document}`` for incidents with profiles on both sides."""
    out: dict[str, dict] = {}
    for incident in detect.get("incidents") or []:
        found = incident_profiles(history.root, incident, points_of, history.series)
        if not found:
            continue
        (before, before_meta), (after, after_meta) = found["before"], found["after"]
        good, bad = incident.get("good") or {}, incident.get("bad") or {}
        out[incident["id"]] = {
            "incident": incident["id"], "title": incident.get("title"), "series_id": found["series_id"],
            "before": {"run_id": good.get("run_id"), "commit": good.get("commit"), "version": good.get("version"),
                       "samples": before_meta.get("samples"), "symbols": before_meta.get("symbols")},
            "after": {"run_id": bad.get("run_id"), "commit": bad.get("commit"), "version": bad.get("version"),
                      "samples": after_meta.get("samples"), "symbols": after_meta.get("symbols")},
            "rows": [r.to_dict() for r in profile_diff(before, after, limit=DIFF_ROWS)],
            "trees": {"before": tree(before), "after": tree(after), "diff": diff_tree(before, after)},
        }
    return out


__all__ = ["advice_data", "incident_profile_docs", "site_advice"]
