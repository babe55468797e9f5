"""Plain-text rendering of a detection result (the terminal view of ``vkbench detect``)."""

from __future__ import annotations

from ..bidi import safe_text


def counts(doc: dict) -> dict:
    incidents = doc.get("incidents", [])
    open_regressions = [i for i in incidents if i["status"] == "open" and i["direction"] == "regression" and not i["silenced"]]
    return {
        "series": doc.get("series", 0),
        "runs": doc.get("runs", 0),
        "incidents": len(incidents),
        "open_regressions": len(open_regressions),
        "change_points": len(doc.get("change_points", [])),
    }


def render_text(doc: dict, *, limit: int = 20) -> str:
    c = counts(doc)
    if not doc.get("incidents"):
        return f"All quiet: {c['series']} series, {c['runs']} runs, no significant change."
    lines = [
        f"{c['incidents']} incidents ({c['open_regressions']} open unsilenced regressions), "
        f"{c['change_points']} change points in {c['series']} series, {c['runs']} runs"
    ]
    by_incident: dict[str, list[dict]] = {}
    for cp in doc.get("change_points", []):
        by_incident.setdefault(cp.get("incident_id"), []).append(cp)
    for incident in doc["incidents"][:limit]:
        state = incident["status"].upper()
        if incident.get("same_build"):
            state += " (same build: not a code change)"
        elif incident["silenced"]:
            state += " (silenced)"
        if incident.get("resolution"):
            state += f" ({incident['resolution']})"
        lines.append("")
        lines.append(f"{state:<10} {incident['direction']:<11} {incident['id']}  {safe_text(incident['title'])}")
        for cp in by_incident.get(incident["id"], [])[:12]:
            good, bad = cp["good"], cp["bad"]
            lines.append(
                f"    {safe_text(cp.get('series_name', cp['series_id']))}  {cp['metric']} {cp['magnitude']:+.1%} p={cp['p_value']:.2g}"
                f"  last good {good['run_id']} ({_short(good)})  first bad {bad['run_id']} ({_short(bad)})"
            )
    if len(doc["incidents"]) > limit:
        lines.append(f"... and {len(doc['incidents']) - limit} more incidents (see detect.json)")
    return "\n".join(lines)


def _short(ref: dict) -> str:
    bits = [b for b in (ref.get("version"), (ref.get("commit") or "")[:7], ref.get("timestamp", "")[:10]) if b]
    return ", ".join(bits)
