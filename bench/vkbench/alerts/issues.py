"""One GitHub issue per regression incident, kept in step with detect.json.

Identity: a hidden marker ``<!-- vkbench-incident: ID -->`` in the body plus the label
``vkbench-regression`` (listing by label is one cheap call; the marker survives title edits).

- open, unsilenced regression, no issue            -> create
- ... issue open                                   -> edit the body when it changed (no comment
                                                      spam: the nightly re-runs this)
- ... issue closed by a person                     -> left alone (re-opening would fight them;
                                                      silence it in annotations instead)
- incident closed (recovered / baseline reset),
  silenced, or no longer detected; issue open      -> comment why, then close
"""

from __future__ import annotations

import re
from dataclasses import asdict, dataclass

from .github import GitHubClient
from .summary import render_incident
from .. import markdown as md

LABEL = "vkbench-regression"
_MARKER = re.compile(r"<!--\s*vkbench-incident:\s*([0-9a-zA-Z_-]+)\s*-->")


def marker(incident_id: str) -> str:
    return f"<!-- vkbench-incident: {_plain_id(incident_id)} -->"


def _plain_id(incident_id: str) -> str:
    """Incident ids are ours (hex); anything else is reduced so it cannot close the HTML
    comment of the marker or the YAML code block."""
    return "".join(c if c.isalnum() or c in "._-" else "_" for c in str(incident_id))[:100]


def incident_of(issue: dict) -> str | None:
    match = _MARKER.search(issue.get("body") or "")
    return match.group(1) if match else None


@dataclass
class Action:
    kind: str               # create | update | unchanged | close | left-closed
    incident_id: str
    issue: int | None
    title: str
    reason: str = ""

    def to_dict(self) -> dict:
        return asdict(self)


def issue_body(incident: dict, change_points: list[dict], *, repo: str | None, server_url: str = "https://github.com") -> str:
    text = render_incident(incident, change_points, repo=repo, server_url=server_url, heading="##")
    return (
        f"{marker(incident['id'])}\n{text}\n\n"
        "---\n"
        "Opened and kept up to date by `vkbench alert` after each nightly detection; it is closed "
        "automatically when the series recover. If the change is expected, add to "
        "`results/annotations.yaml`:\n\n"
        f"```yaml\n- incident: {_plain_id(incident['id'])}\n  action: silence   # or reset-baseline: accept the new level\n"
        "  reason: why this is expected\n```\n"
    )


def _close_reason(incident: dict | None) -> str:
    if incident is None:
        return "The latest detection no longer reports this change (more runs showed it was noise, or the history was reset)."
    if incident.get("silenced"):
        ann = incident.get("annotation") or {}
        if incident.get("same_build"):
            return f"Not a code change: {md.text(ann.get('reason', 'the same build ran before and after'))}."
        return f"Silenced by an annotation: {md.text(ann.get('reason', 'no reason given'))}"
    if incident.get("resolution") == "baseline-reset":
        return "The baseline was reset by an annotation: the new level is accepted."
    return "Recovered: the latest runs are back within noise of the last good level."


def sync_issues(detection: dict, client: GitHubClient, *, dry_run: bool = False, label: str = LABEL,
                server_url: str = "https://github.com", commits_repo: str | None = None) -> list[Action]:
    """Issues go to ``client.repo``; compare links to ``commits_repo`` (default: the engine's
    repository - the commits are the server's, not the benchmark repository's)."""
    incidents = [i for i in detection.get("incidents", []) if i["direction"] == "regression"]
    by_incident: dict[str, list[dict]] = {}
    for cp in detection.get("change_points", []):
        by_incident.setdefault(cp.get("incident_id"), []).append(cp)
    existing: dict[str, dict] = {}
    if client.can_write or not dry_run:
        for issue in client.list_issues(label):
            iid = incident_of(issue)
            if iid and (iid not in existing or issue["state"] == "open"):
                existing[iid] = issue

    actions: list[Action] = []
    seen: set[str] = set()
    for incident in incidents:
        iid = incident["id"]
        seen.add(iid)
        issue = existing.get(iid)
        wanted_open = incident["status"] == "open" and not incident.get("silenced")
        title = f"Performance regression: {md.one_line(incident['title'])}"
        if wanted_open:
            body = issue_body(incident, by_incident.get(iid, []), repo=commits_repo, server_url=server_url)
            if issue is None:
                number = None
                if not dry_run:
                    number = client.create_issue(title, body, [label]).get("number")
                actions.append(Action("create", iid, number, title))
            elif issue["state"] != "open":
                actions.append(Action("left-closed", iid, issue["number"], title, "closed by a person; not re-opened"))
            elif (issue.get("body") or "").strip() != body.strip() or issue.get("title") != title:
                if not dry_run:
                    client.update_issue(issue["number"], title=title, body=body)
                actions.append(Action("update", iid, issue["number"], title))
            else:
                actions.append(Action("unchanged", iid, issue["number"], title))
        elif issue is not None and issue["state"] == "open":
            actions.append(_close(client, issue, incident, title, dry_run))
    for iid, issue in sorted(existing.items()):
        if iid not in seen and issue["state"] == "open":
            actions.append(_close(client, issue, None, issue.get("title", ""), dry_run))
    return actions


def _close(client: GitHubClient, issue: dict, incident: dict | None, title: str, dry_run: bool) -> Action:
    reason = _close_reason(incident)
    if not dry_run:
        client.comment(issue["number"], reason)
        state_reason = "completed" if incident is not None and not incident.get("silenced") else "not_planned"
        client.update_issue(issue["number"], state="closed", state_reason=state_reason)
    return Action("close", incident["id"] if incident else incident_of(issue) or "?", issue["number"], title, reason)
