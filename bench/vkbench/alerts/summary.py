"""Markdown for the GitHub job summary ($GITHUB_STEP_SUMMARY) and for issue bodies.

What changed, where, by how much, with links to the runs (``workflow_run_url``) and, when the
repository is known, to the commit range (``/compare/good...bad``).
"""

from __future__ import annotations

from .. import repolinks
from ..detect.report import counts
from .. import markdown as md

_ICON = {("regression", "open"): "🔴", ("improvement", "open"): "🟢"}

#: Where the commits of a series live when no repository is given: the benchmarked server's.
ENGINE_REPOS = {"valkey": "valkey-io/valkey", "redis": "redis/redis"}


def commits_repo(incident: dict, repo: str | None) -> str | None:
    return repo or ENGINE_REPOS.get(incident.get("engine") or "")


def compare_url(repo: str | None, good: dict, bad: dict, server_url: str = "https://github.com") -> str | None:
    """The commit range on the forge of the repository the commits came from (the points'
    ``repository``, a GitHub or GitLab URL), else on ``server_url``/``repo``; None for another host."""
    good_commit, bad_commit = md.commit(good.get("commit")), md.commit(bad.get("commit"))
    if not good_commit or not bad_commit or good_commit == bad_commit:
        return None
    source = bad.get("repository") or good.get("repository")
    if source:
        return repolinks.compare_url(str(source), good_commit, bad_commit)
    if not repo:
        return None
    return f"{server_url.rstrip('/')}/{repo}/compare/{good_commit}...{bad_commit}"


def build_warning(good: dict, bad: dict) -> str | None:
    """Two sides built differently (allocator, compiler, flags): the change may not be the code's."""
    a, b = good.get("build_config"), bad.get("build_config")
    if a and b and a != b:
        return (f"build configuration differs between the last good ({a}) and first bad ({b}) runs: "
                "the change may come from the build, not the code")
    return None


def bisect_line(bisect: dict) -> str:
    """The incident's bisect (detect/bisects.py): the culprit commit, linked to the repository it
    was built from, its subject, effect and interval; or why there is none."""
    steps = f"{bisect.get('steps')} A/B step{'s' if bisect.get('steps') != 1 else ''}"
    run = bisect.get("workflow_run_url")
    done = md.link(md.text("bisect"), run) + f" ({steps})"
    culprit = md.commit(bisect.get("culprit"))
    if bisect.get("reproduced") and bisect.get("resolved") is False:
        return f"{done}: the step limit stopped the search before one commit remained; no culprit named"
    if not bisect.get("reproduced") and isinstance(bisect.get("inconclusive"), str):
        return f"{done}: the A/B of the two ends was {md.text(bisect['inconclusive'])}; no culprit named"
    if not bisect.get("reproduced") or not culprit:
        return f"{done}: the regression did not reproduce in an A/B of the two ends; no culprit named"
    link = md.link(md.code(culprit[:10]), repolinks.commit_url(bisect.get("repository"), culprit))
    text = f"**culprit** ({done}): {link}"
    if bisect.get("culprit_subject"):
        text += f" {md.text(bisect['culprit_subject'])}"
    if isinstance(bisect.get("effect"), (int, float)):
        text += f": {bisect['effect']:+.1%} on {md.text(bisect.get('measure') or '?')}"
        low, high = bisect.get("ci_low"), bisect.get("ci_high")
        if isinstance(low, (int, float)) and isinstance(high, (int, float)):
            text += f" (95% interval {low:+.1%} .. {high:+.1%})"
    return text


def run_link(ref: dict) -> str:
    text = md.link(md.code(ref.get("run_id", "?")), ref.get("workflow_run_url"))
    bits = [md.text(b) for b in (ref.get("version"), (md.commit(ref.get("commit")) or "")[:7] or None,
                                 str(ref.get("timestamp") or "")[:10]) if b]
    return f"{text} ({', '.join(bits)})" if bits else text



def _metric_note(metric: str) -> str:
    """What a counted metric's name does not say: instructions_per_op is callgrind's code count,
    or perf's total where hardware counters count it (the two never share a segment)."""
    return (" (callgrind: the code, without libc string routines; perf: the total)"
            if metric == "instructions_per_op" else "")

def render_incident(incident: dict, change_points: list[dict], *, repo: str | None = None,
                    server_url: str = "https://github.com", heading: str = "###", limit: int = 15) -> str:
    """``repo``: OWNER/NAME holding the benchmarked commits (default: the engine's own
    repository, valkey-io/valkey or redis/redis)."""
    icon = _ICON.get((incident["direction"], incident["status"]), "⚪")
    state = incident["status"]
    if incident.get("resolution"):
        state += f", {incident['resolution']}"
    if incident.get("same_build"):
        state += ", same build before and after: not a code change"
    elif incident.get("silenced"):
        state += ", silenced"
    lines = [f"{heading} {icon} {md.text(incident['title'])}", ""]
    lines.append(
        f"**{md.text(incident['direction'])}** ({md.text(state)}) on {md.code(incident['machine_class'])}, "
        f"{md.text(incident['metric'])}{_metric_note(incident['metric'])} {md.change(incident['magnitude'])} "
        f"(median over the series), "
        f"{len(incident['series_ids'])} series, incident {md.code(incident['id'])}."
    )
    lines.append("")
    lines.append(f"- last good: {run_link(incident['good'])}")
    lines.append(f"- first bad: {run_link(incident['bad'])}")
    url = compare_url(commits_repo(incident, repo), incident["good"], incident["bad"], server_url)
    if url:
        lines.append(f"- commits: {md.link(md.text(incident['good']['commit'][:7] + '...' + incident['bad']['commit'][:7]), url)}")
    elif incident["good"].get("repository") and md.commit(incident["good"].get("commit")) and md.commit(incident["bad"].get("commit")):
        lines.append(f"- commits: {md.code(incident['good']['commit'][:10] + '..' + incident['bad']['commit'][:10])} "
                     f"in {md.text(incident['good']['repository'])}")
    warning = build_warning(incident["good"], incident["bad"])
    if warning:
        lines.append(f"- ⚠️ {md.text(warning)}")
    if incident.get("bisect"):
        lines.append(f"- {bisect_line(incident['bisect'])}")
    if incident.get("annotation"):
        lines.append(f"- annotation: {md.text(incident['annotation'].get('action'))}: {md.text(incident['annotation'].get('reason'))}")
    lines.append("")
    lines += md.table(
        ["series", "metric", "change", "p-value", "before → after", "runs (before / after)"], "llrrlr",
        ([md.text(cp.get("series_name", cp["series_id"])), md.text(cp["metric"]), md.change(cp["magnitude"]), f"{cp['p_value']:.2g}",
          f"{_fmt(cp['level_before'])} → {_fmt(cp['level_after'])}", f"{len(cp['runs']['before'])} / {len(cp['runs']['after'])}"]
         for cp in change_points[:limit]))
    if len(change_points) > limit:
        lines.append(f"| … and {len(change_points) - limit} more | | | | | |")
    if incident.get("instruction_diff"):
        from ..instruments.diff import describe_source, to_markdown as instruction_table

        diff = incident["instruction_diff"]
        lines += ["", f"Functions whose instructions per operation changed most, last good → first bad "
                      f"({md.text(describe_source(diff))}):", "",
                  instruction_table(diff, before_label="good", after_label="bad").rstrip()]
    if incident.get("profile_diff"):
        from ..profile.diff import DiffRow, to_markdown

        rows = [DiffRow(**r) for r in incident["profile_diff"]["rows"]]
        lines += ["", "CPU profile of the server, last good → first bad (`vkbench run --profile`):", "",
                  to_markdown(rows, before_label="good", after_label="bad").rstrip()]
    return "\n".join(lines)


def render_summary(detection: dict, *, repo: str | None = None, server_url: str = "https://github.com",
                   site_url: str | None = None, limit: int = 10) -> str:
    """The job summary: a short "All quiet" when nothing changed, else one section per
    incident, open regressions first. ``repo`` is where the benchmarked commits live (for
    compare links); by default the engine's own repository."""
    c = counts(detection)
    incidents = detection.get("incidents", [])
    title = "## vkbench regression detection"
    footer = f"\n\nTrend site: {md.link(md.text(site_url), site_url)}" if site_url else ""
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
