"""Markdown for the GitHub job summary ($GITHUB_STEP_SUMMARY) and for issue bodies.

What changed, where, by how much, with links to the runs (``workflow_run_url``) and, when the
repository is known, to the commit range (``/compare/good...bad``).
"""

from __future__ import annotations

from ..detect.report import counts

_ICON = {("regression", "open"): "🔴", ("improvement", "open"): "🟢"}

#: Where the commits of a series live when no repository is given: the benchmarked server's.
ENGINE_REPOS = {"valkey": "valkey-io/valkey", "redis": "redis/redis"}


def commits_repo(incident: dict, repo: str | None) -> str | None:
    return repo or ENGINE_REPOS.get(incident.get("engine") or "")


def compare_url(repo: str | None, good: dict, bad: dict, server_url: str = "https://github.com") -> str | None:
    if not repo or not good.get("commit") or not bad.get("commit") or good["commit"] == bad["commit"]:
        return None
    return f"{server_url.rstrip('/')}/{repo}/compare/{good['commit']}...{bad['commit']}"


def run_link(ref: dict) -> str:
    label = ref.get("run_id", "?")
    text = f"`{label}`"
    if ref.get("workflow_run_url"):
        text = f"[`{label}`]({ref['workflow_run_url']})"
    bits = [b for b in (ref.get("version"), (ref.get("commit") or "")[:7] or None, (ref.get("timestamp") or "")[:10]) if b]
    return f"{text} ({', '.join(bits)})" if bits else text


def render_incident(incident: dict, change_points: list[dict], *, repo: str | None = None,
                    server_url: str = "https://github.com", heading: str = "###", limit: int = 15) -> str:
    """``repo``: OWNER/NAME holding the benchmarked commits (default: the engine's own
    repository, valkey-io/valkey or redis/redis)."""
    icon = _ICON.get((incident["direction"], incident["status"]), "⚪")
    state = incident["status"]
    if incident.get("resolution"):
        state += f", {incident['resolution']}"
    if incident.get("silenced"):
        state += ", silenced"
    lines = [f"{heading} {icon} {incident['title']}", ""]
    lines.append(
        f"**{incident['direction']}** ({state}) on `{incident['machine_class']}`, "
        f"{incident['metric']} {incident['magnitude']:+.1%} (median over the series), "
        f"{len(incident['series_ids'])} series, incident `{incident['id']}`."
    )
    lines.append("")
    lines.append(f"- last good: {run_link(incident['good'])}")
    lines.append(f"- first bad: {run_link(incident['bad'])}")
    url = compare_url(commits_repo(incident, repo), incident["good"], incident["bad"], server_url)
    if url:
        lines.append(f"- commits: [{incident['good']['commit'][:7]}...{incident['bad']['commit'][:7]}]({url})")
    if incident.get("annotation"):
        lines.append(f"- annotation: {incident['annotation']['action']}: {incident['annotation']['reason']}")
    lines.append("")
    lines.append("| series | metric | change | p-value | before → after | runs (before / after) |")
    lines.append("|---|---|---:|---:|---|---:|")
    for cp in change_points[:limit]:
        lines.append(
            f"| {cp.get('series_name', cp['series_id'])} | {cp['metric']} | {cp['magnitude']:+.1%} | {cp['p_value']:.2g} "
            f"| {_fmt(cp['level_before'])} → {_fmt(cp['level_after'])} | {len(cp['runs']['before'])} / {len(cp['runs']['after'])} |"
        )
    if len(change_points) > limit:
        lines.append(f"| … and {len(change_points) - limit} more | | | | | |")
    return "\n".join(lines)


def render_summary(detection: dict, *, repo: str | None = None, server_url: str = "https://github.com",
                   site_url: str | None = None, limit: int = 10) -> str:
    """The job summary: a short "All quiet" when nothing changed, else one section per
    incident, open regressions first. ``repo`` is where the benchmarked commits live (for
    compare links); by default the engine's own repository."""
    c = counts(detection)
    incidents = detection.get("incidents", [])
    title = "## vkbench regression detection"
    footer = f"\n\nTrend site: {site_url}" if site_url else ""
    if not incidents:
        return f"{title}\n\nAll quiet: {c['series']} series, {c['runs']} runs, no significant change.{footer}\n"
    by_incident: dict[str, list[dict]] = {}
    for cp in detection.get("change_points", []):
        by_incident.setdefault(cp.get("incident_id"), []).append(cp)
    head = (
        f"{c['open_regressions']} open regression(s) among {len(incidents)} incident(s); "
        f"{c['series']} series, {c['runs']} runs."
    )
    if not c["open_regressions"]:
        head = f"No open regression: {c['series']} series, {c['runs']} runs ({len(incidents)} incident(s), none open)."
    parts = [title, "", head]
    for incident in incidents[:limit]:
        parts += ["", render_incident(incident, by_incident.get(incident["id"], []), repo=repo, server_url=server_url)]
    if len(incidents) > limit:
        parts += ["", f"… and {len(incidents) - limit} more incidents in detect.json."]
    return "\n".join(parts) + footer + "\n"


def _fmt(value: float) -> str:
    if value >= 1000:
        return f"{value:,.0f}"
    return f"{value:.3g}"
