"""A week at a glance: what moved in a history over the last N days (``vkbench digest``).

rust-lang writes its weekly performance triage by hand; this writes the same from the history:

- **regressions** and **improvements**: incidents whose first bad run falls in the window, or
  that are still open, each with its confirmation A/B and its bisect when there is one;
- **confirmations** and **bisects** recorded in the window (``confirmations.json``,
  ``bisects.json``), inconclusive ones included;
- **annotations**: the human decisions that apply in the window (``after`` in it, or attached to
  one of the window's incidents);
- **flagged** series (a run in the window carried validity flags) and **noisy** ones (their
  measured noise, ``detect.json``'s robust CV, above :data:`NOISY_CV`);
- **coverage**: which runs and cells ran, per machine class, and which series that ran in the
  window before did not run in this one (a failed cell leaves no point: its series goes missing).

:func:`build_digest` returns a JSON document (``kind: vkbench.digest``); :func:`render_markdown`
makes the issue or discussion body, :func:`render_html` the site's ``digest.html``.
Every value from the history goes through :mod:`vkbench.markdown` or :func:`html.escape`.
"""

from __future__ import annotations

import html
import re
from collections import Counter, defaultdict
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

from . import markdown as md
from .errors import ResultFileError, UsageError
from .history.series import describe
from .history.store import HistoryStore
from .results.aggregate import command_series

#: A series whose measured noise (robust CV of its rps) is above this is listed as noisy.
NOISY_CV = 0.05
#: At most this many rows per list (the rest is counted): an issue body stays readable.
MAX_ROWS = 50
DIGEST_MARKER = "<!-- vkbench-digest -->"
_SINCE = re.compile(r"^(\d{1,3})([dhw])$")


def parse_since(text: str) -> timedelta:
    """``7d``, ``36h``, ``2w`` -> a timedelta (1 hour .. 52 weeks)."""
    match = _SINCE.match(text.strip())
    if not match:
        raise UsageError(f"--since {text!r}: not a duration", hint="e.g. 7d, 36h or 2w")
    value, unit = int(match.group(1)), match.group(2)
    delta = {"h": timedelta(hours=value), "d": timedelta(days=value), "w": timedelta(weeks=value)}[unit]
    if not timedelta(hours=1) <= delta <= timedelta(weeks=52):
        raise UsageError(f"--since {text}: out of range", hint="between 1h and 52w")
    return delta


def _parse_time(value: Any) -> datetime | None:
    if not isinstance(value, str) or not value:
        return None
    text = value.strip().replace(" ", "T")
    if re.fullmatch(r"\d{4}-\d{2}-\d{2}", text):
        text += "T00:00:00"
    try:
        moment = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        return None
    return moment if moment.tzinfo else moment.replace(tzinfo=timezone.utc)


def _iso(moment: datetime) -> str:
    return moment.astimezone(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def _months_from(start: datetime, shards: list[str]) -> list[str]:
    first = start.strftime("%Y-%m")
    return [m for m in sorted(shards) if m >= first]


def build_digest(history_dir: str | Path, *, since: timedelta = timedelta(days=7), now: datetime | None = None,
                 annotations: list[dict] | None = None, store: HistoryStore | None = None) -> dict:
    """The digest of ``history_dir`` for ``[now - since, now]``. ``annotations``: the validated
    entries of results/annotations.yaml (None: only those attached to incidents)."""
    from .detect import bisects as bisect_store
    from .detect import confirmations as confirmation_store

    until = (now or datetime.now(timezone.utc)).astimezone(timezone.utc)
    start = until - since
    before = start - since                      # the window before: what should have run again
    store = HistoryStore(history_dir) if store is None else store     # (the site build's: shards it parsed are reused)
    if not store.path.is_dir():
        raise ResultFileError(f"{store.path}: no such history directory", hint="run `vkbench ingest RESULTS --history DIR` first")
    index = store.index()
    series = command_series(index.get("series") or {})
    detect = store.read_detect() or {}
    names = {sid: describe(entry.get("dims") or {}) for sid, entry in series.items()}

    def in_window(value: Any, low: datetime = start) -> bool:
        moment = _parse_time(value)
        return moment is not None and low <= moment <= until

    # -- coverage, flags: the points of the window (and of the window before, for what went missing)
    runs: set[str] = set()
    cells: set[str] = set()
    by_class: dict[str, dict] = defaultdict(lambda: {"runs": set(), "cells": set(), "series": 0, "invalid_points": 0})
    flagged: list[dict] = []
    missing: list[dict] = []
    ran_now = 0
    for sid, entry in sorted(series.items()):
        last = _parse_time(entry.get("last"))
        if last is None or last < before:
            continue                             # nothing recent: its shards need not be read
        points = []
        for month in _months_from(before, entry.get("shards") or []):
            points.extend(store.read_checked_shard(sid, month, entry))
        recent = [p for p in points if in_window(p.get("timestamp"))]
        earlier = [p for p in points if in_window(p.get("timestamp"), before) and not in_window(p.get("timestamp"))]
        machine = str((entry.get("dims") or {}).get("machine_class") or "?")
        if not recent:
            if earlier:
                latest = max(earlier, key=lambda p: str(p.get("timestamp")))
                missing.append({"series_id": sid, "name": names[sid], "machine_class": machine,
                                "last_run": latest.get("run_id"), "last_timestamp": latest.get("timestamp")})
            continue
        ran_now += 1
        row = by_class[machine]
        row["series"] += 1
        for point in recent:
            runs.add(str(point.get("run_id")))
            cells.add(f"{point.get('run_id')}/{point.get('cell_id')}")
            row["runs"].add(str(point.get("run_id")))
            row["cells"].add(str(point.get("cell_id")))
        flags = Counter(code for p in recent for code in (p.get("flags") or []))
        invalid = sum(1 for p in recent if not p.get("valid", True))
        row["invalid_points"] += invalid
        if flags or invalid:
            flagged.append({"series_id": sid, "name": names[sid], "machine_class": machine, "points": len(recent),
                            "invalid": invalid, "flags": dict(sorted(flags.items()))})

    noisy = []
    for sid, metrics in sorted((detect.get("noise") or {}).items()):
        cv = ((metrics or {}).get("rps") or {}).get("cv") if isinstance(metrics, dict) else None
        if sid in series and isinstance(cv, (int, float)) and cv > NOISY_CV:
            noisy.append({"series_id": sid, "name": names[sid], "cv": round(float(cv), 4)})
    noisy.sort(key=lambda r: -r["cv"])

    # -- incidents, confirmations, bisects, annotations
    confirmations = confirmation_store.load(store)["confirmations"]
    bisects = bisect_store.load(store)["bisects"]
    moved = {"regression": [], "improvement": []}
    for incident in detect.get("incidents") or []:
        bad = incident.get("bad") or {}
        if not (in_window(bad.get("timestamp")) or incident.get("status") == "open"):
            continue
        row = {
            "id": incident.get("id"), "title": incident.get("title"), "status": incident.get("status"),
            "resolution": incident.get("resolution"), "silenced": bool(incident.get("silenced")),
            "magnitude": incident.get("magnitude"), "metric": incident.get("metric"),
            "machine_class": incident.get("machine_class"), "series": len(incident.get("series_ids") or []),
            "new": in_window(bad.get("timestamp")),
            "good": _ref(incident.get("good")), "bad": _ref(bad),
            "confirmation": incident.get("confirmation"), "bisect": incident.get("bisect"),
            "annotation": _annotation_row(incident.get("annotation")),
        }
        moved.setdefault(str(incident.get("direction")), []).append(row)
    for rows in moved.values():
        rows.sort(key=lambda r: (not r["new"], -abs(r["magnitude"] or 0)))

    confirmed = []
    for rid, entry in sorted(confirmations.items()):
        if in_window(entry.get("recorded")):
            ab = entry.get("ab") or {}
            confirmed.append({"id": rid, "status": entry.get("status"), "recorded": entry.get("recorded"),
                              "change": ab.get("change"), "ci_low": ab.get("ci_low"), "ci_high": ab.get("ci_high"),
                              "mde": ab.get("mde"), "rounds": ab.get("rounds"), "verdict": ab.get("verdict"),
                              "command": ab.get("command"), "cell": ab.get("cell")})
    bisected = []
    for iid, entry in sorted(bisects.items()):
        if in_window(entry.get("recorded")):
            bisected.append({"incident_id": iid, "recorded": entry.get("recorded"), "culprit": entry.get("culprit"),
                             "culprit_subject": entry.get("culprit_subject"), "effect": entry.get("effect"),
                             "reproduced": entry.get("reproduced"), "resolved": entry.get("resolved", True),
                             "inconclusive": entry.get("inconclusive"), "steps": len(entry.get("steps") or []),
                             "repository": entry.get("repository"), "workflow_run_url": entry.get("workflow_run_url")})

    window_ids = {r["id"] for rows in moved.values() for r in rows}
    noted = []
    for entry in annotations or []:
        if in_window(entry.get("after")) or entry.get("incident") in window_ids:
            noted.append(_annotation_row(entry))
    for rows in moved.values():
        for r in rows:
            if r["annotation"] and r["annotation"] not in noted:
                noted.append(r["annotation"])

    classes = {
        cls: {"runs": len(row["runs"]), "cells": len(row["cells"]), "series": row["series"],
              "invalid_points": row["invalid_points"]}
        for cls, row in sorted(by_class.items())
    }
    return {
        "kind": "vkbench.digest",
        "format": 1,
        "since": _iso(start),
        "until": _iso(until),
        "days": round(since.total_seconds() / 86400, 2),
        "history_updated": index.get("updated"),
        "detect_generated": detect.get("generated"),
        "regressions": moved.get("regression", []),
        "improvements": moved.get("improvement", []),
        "confirmations": confirmed,
        "bisects": bisected,
        "annotations": noted,
        "flagged": sorted(flagged, key=lambda r: (r["machine_class"], r["name"])),
        "noisy": noisy,
        "coverage": {
            "runs": len(runs), "cells": len(cells), "series_ran": ran_now, "series_total": len(series),
            "machine_classes": classes,
            "missing": sorted(missing, key=lambda r: (r["machine_class"], r["name"])),
        },
    }


def _ref(ref: Any) -> dict:
    ref = ref if isinstance(ref, dict) else {}
    return {k: ref.get(k) for k in ("run_id", "version", "commit", "timestamp", "repository", "workflow_run_url")
            if ref.get(k) is not None}


def _annotation_row(entry: Any) -> dict | None:
    if not isinstance(entry, dict):
        return None
    row = {k: entry.get(k) for k in ("action", "reason", "after", "incident", "by", "automatic") if entry.get(k) is not None}
    if isinstance(entry.get("series"), dict):
        row["series"] = dict(entry["series"])
    return row


# -- Markdown ------------------------------------------------------------------------------------

def _pct(value: Any) -> str:
    return f"{value:+.1%}" if isinstance(value, (int, float)) else "?"


def _short_commit(ref: dict) -> str:
    sha = md.commit(ref.get("commit"))
    return md.code(sha[:10]) if sha else md.text(ref.get("version") or ref.get("run_id") or "?")


def _incident_line(row: dict) -> str:
    state = "new" if row["new"] else "still open"
    if row["status"] == "closed":
        state = f"closed ({row.get('resolution') or 'resolved'})"
    if row["silenced"]:
        state += ", silenced"
    line = (f"- **{_pct(row['magnitude'])}** {md.text(row['title'])} ({md.text(row['machine_class'])}, "
            f"{row['series']} series, {state}; {_short_commit(row['good'])} → {_short_commit(row['bad'])})")
    confirmation = row.get("confirmation")
    if isinstance(confirmation, dict):
        line += (f"\n  - confirmed by A/B: {_pct(confirmation.get('change'))} "
                 f"[{_pct(confirmation.get('ci_low'))} .. {_pct(confirmation.get('ci_high'))}], MDE "
                 f"{_pct(confirmation.get('mde')).lstrip('+')}, {md.text(confirmation.get('rounds'))} rounds")
    if isinstance(row.get("bisect"), dict):
        from .alerts.summary import bisect_line

        line += f"\n  - {bisect_line(row['bisect'])}"
    if row.get("annotation"):
        line += f"\n  - annotation: {_annotation_text(row['annotation'])}"
    return line


def _annotation_text(row: dict) -> str:
    what = row.get("incident") or ", ".join(f"{k}={v}" for k, v in (row.get("series") or {}).items()) or "?"
    after = f" after {row['after']}" if row.get("after") else ""
    return f"{md.text(row.get('action'))} {md.code(what)}{md.text(after)}: {md.text(row.get('reason'))}"


def _capped(rows: list, limit: int = MAX_ROWS) -> tuple[list, str]:
    if len(rows) <= limit:
        return rows, ""
    return rows[:limit], f"\n\n…and {len(rows) - limit} more (the JSON digest lists all)."


def render_markdown(digest: dict, *, site_url: str | None = None) -> str:
    """The digest as Markdown for an issue or a discussion."""
    cov = digest["coverage"]
    lines = [DIGEST_MARKER,
             f"# Benchmark digest: {digest['since'][:10]} .. {digest['until'][:10]}", "",
             f"{cov['runs']} runs, {cov['cells']} cells, {cov['series_ran']} of {cov['series_total']} series measured; "
             f"{len(digest['regressions'])} regressions, {len(digest['improvements'])} improvements, "
             f"{len(digest['confirmations'])} confirmation A/Bs, {len(digest['bisects'])} bisects."]
    if site_url:
        lines += ["", md.link(md.text("The trend site"), site_url)]
    for key, heading in (("regressions", "Regressions"), ("improvements", "Improvements")):
        rows, more = _capped(digest[key])
        lines += ["", f"## {heading}", ""]
        lines += [_incident_line(r) for r in rows] or ["none"]
        if more:
            lines.append(more)
    lines += ["", "## Confirmations", ""]
    rows, more = _capped(digest["confirmations"])
    lines += [f"- {md.code(r['id'])}: **{md.text(r['status'])}** {md.text(r.get('command') or '')} "
              f"{_pct(r.get('change'))} [{_pct(r.get('ci_low'))} .. {_pct(r.get('ci_high'))}], "
              f"MDE {_pct(r.get('mde')).lstrip('+')}, {md.text(r.get('rounds'))} rounds"
              + (f" ({md.text(r['verdict'])})" if r.get("verdict") else "") for r in rows] or ["none"]
    lines += [more] if more else []
    lines += ["", "## Bisects", ""]
    rows, more = _capped(digest["bisects"])
    for r in rows:
        if r.get("culprit") and r.get("reproduced") and r.get("resolved", True):
            what = f"culprit {md.code(str(r['culprit'])[:10])} {md.text(r.get('culprit_subject') or '')} ({_pct(r.get('effect'))})"
        elif r.get("inconclusive"):
            what = f"inconclusive: {md.text(r['inconclusive'])}"
        else:
            what = "no culprit named"
        lines.append(f"- {md.link(md.code(r['incident_id']), r.get('workflow_run_url'))}: {what}, {r['steps']} steps")
    lines += [] if rows else ["none"]
    lines += [more] if more else []
    lines += ["", "## Annotations", ""]
    lines += [f"- {_annotation_text(a)}" for a in digest["annotations"]] or ["none"]
    lines += ["", "## Flagged and noisy series", ""]
    rows, more = _capped(digest["flagged"])
    if rows:
        lines += md.table(["series", "points", "invalid", "flags"], "lrrl",
                          [[md.text(r["name"]), str(r["points"]), str(r["invalid"]),
                            md.text(", ".join(f"{k} ×{v}" for k, v in r["flags"].items()) or "-")] for r in rows])
        lines += [more] if more else []
    else:
        lines.append("no run of the window was flagged")
    rows, more = _capped(digest["noisy"])
    if rows:
        lines += ["", f"Noisy (robust CV of rps above {NOISY_CV:.0%}):", ""]
        lines += md.table(["series", "noise (CV)"], "lr", [[md.text(r["name"]), f"{r['cv']:.1%}"] for r in rows])
        lines += [more] if more else []
    lines += ["", "## Coverage", ""]
    if cov["machine_classes"]:
        lines += md.table(["machine class", "runs", "cells", "series", "invalid points"], "lrrrr",
                          [[md.text(cls), str(r["runs"]), str(r["cells"]), str(r["series"]), str(r["invalid_points"])]
                           for cls, r in cov["machine_classes"].items()])
    else:
        lines.append("nothing ran in the window")
    rows, more = _capped(cov["missing"])
    if rows:
        lines += ["", "Ran in the week before but not in this one (failed or not scheduled):", ""]
        lines += [f"- {md.text(r['name'])} (last {md.code(r.get('last_run'))}, {md.text(str(r.get('last_timestamp'))[:10])})"
                  for r in rows]
        lines += [more] if more else []
    return "\n".join(lines) + "\n"


# -- HTML (the site's digest.html) ----------------------------------------------------------------

def _h(value: Any) -> str:
    return html.escape("" if value is None else str(value), quote=True)


def _h_incident(row: dict) -> str:
    state = "new" if row["new"] else "still open"
    if row["status"] == "closed":
        state = f"closed ({row.get('resolution') or 'resolved'})"
    extra = []
    conf = row.get("confirmation")
    if isinstance(conf, dict):
        extra.append(f"confirmed by A/B: {_pct(conf.get('change'))} [{_pct(conf.get('ci_low'))} .. "
                     f"{_pct(conf.get('ci_high'))}], MDE {_pct(conf.get('mde')).lstrip('+')}")
    bis = row.get("bisect")
    if isinstance(bis, dict):
        extra.append(f"bisect: culprit {str(bis.get('culprit') or '-')[:10]} {bis.get('culprit_subject') or ''}"
                     if bis.get("reproduced") and bis.get("culprit") else "bisect: no culprit named")
    if row.get("annotation"):
        extra.append(f"annotation: {row['annotation'].get('action')}: {row['annotation'].get('reason')}")
    good, bad = row["good"], row["bad"]
    return (f"<li><b>{_h(_pct(row['magnitude']))}</b> {_h(row['title'])} <span class=\"muted\">({_h(row['machine_class'])}, "
            f"{_h(state)}; {_h(str(good.get('commit') or good.get('version') or '?')[:10])} → "
            f"{_h(str(bad.get('commit') or bad.get('version') or '?')[:10])})</span>"
            + "".join(f"<div class=\"muted\">{_h(e)}</div>" for e in extra) + "</li>")


def render_html(digest: dict) -> str:
    """A standalone page (the site's app.css) of the digest."""
    cov = digest["coverage"]
    parts = [f"<h1>What moved: {_h(digest['since'][:10])} .. {_h(digest['until'][:10])}</h1>",
             f"<p>{cov['runs']} runs, {cov['cells']} cells, {cov['series_ran']} of {cov['series_total']} series measured. "
             "The same digest as <code>vkbench digest</code> writes for the weekly issue "
             "(<a href=\"data/digest.json\">JSON</a>).</p>"]
    for key, heading in (("regressions", "Regressions"), ("improvements", "Improvements")):
        rows = digest[key][:MAX_ROWS]
        parts.append(f"<h2>{heading}</h2>")
        parts.append("<ul>" + "".join(_h_incident(r) for r in rows) + "</ul>" if rows else "<p>none</p>")
    parts.append("<h2>Confirmations and bisects</h2>")
    items = [f"<li>{_h(r['id'])}: <b>{_h(r['status'])}</b> {_h(_pct(r.get('change')))}, MDE "
             f"{_h(_pct(r.get('mde')).lstrip('+'))}, {_h(r.get('rounds'))} rounds</li>" for r in digest["confirmations"][:MAX_ROWS]]
    items += [f"<li>bisect of {_h(r['incident_id'])}: "
              + (_h(f"culprit {str(r['culprit'])[:10]} {r.get('culprit_subject') or ''}") if r.get("culprit") and r.get("reproduced")
                 else _h(r.get("inconclusive") or "no culprit named")) + "</li>" for r in digest["bisects"][:MAX_ROWS]]
    parts.append("<ul>" + "".join(items) + "</ul>" if items else "<p>none</p>")
    parts.append("<h2>Annotations</h2>")
    notes = [f"<li>{_h(a.get('action'))} {_h(a.get('incident') or a.get('series') or '')}: {_h(a.get('reason'))}</li>"
             for a in digest["annotations"][:MAX_ROWS]]
    parts.append("<ul>" + "".join(notes) + "</ul>" if notes else "<p>none</p>")
    parts.append("<h2>Flagged and noisy series</h2>")
    if digest["flagged"]:
        parts.append("<table><tr><th>series</th><th>points</th><th>invalid</th><th>flags</th></tr>" + "".join(
            f"<tr><td>{_h(r['name'])}</td><td>{r['points']}</td><td>{r['invalid']}</td>"
            f"<td>{_h(', '.join(f'{k} ×{v}' for k, v in r['flags'].items()) or '-')}</td></tr>"
            for r in digest["flagged"][:MAX_ROWS]) + "</table>")
    else:
        parts.append("<p>no run of the window was flagged</p>")
    if digest["noisy"]:
        parts.append(f"<p>Noisy (robust CV of rps above {NOISY_CV:.0%}): " + ", ".join(
            f"{_h(r['name'])} ({r['cv']:.1%})" for r in digest["noisy"][:MAX_ROWS]) + "</p>")
    parts.append("<h2>Coverage</h2>")
    if cov["machine_classes"]:
        parts.append("<table><tr><th>machine class</th><th>runs</th><th>cells</th><th>series</th><th>invalid points</th></tr>"
                     + "".join(f"<tr><td>{_h(c)}</td><td>{r['runs']}</td><td>{r['cells']}</td><td>{r['series']}</td>"
                               f"<td>{r['invalid_points']}</td></tr>" for c, r in cov["machine_classes"].items()) + "</table>")
    else:
        parts.append("<p>nothing ran in the window</p>")
    if cov["missing"]:
        parts.append("<p>Ran in the window before but not in this one (failed or not scheduled):</p><ul>" + "".join(
            f"<li>{_h(r['name'])}</li>" for r in cov["missing"][:MAX_ROWS]) + "</ul>")
    body = "\n".join(parts)
    return ("<!doctype html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
            "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">"
            "<title>vkbench: what moved</title><link rel=\"stylesheet\" href=\"assets/app/app.css\"></head>"
            f"<body><main class=\"digest\"><p><a href=\"index.html\">← the trend site</a></p>\n{body}\n</main></body></html>\n")


# -- the weekly issue ------------------------------------------------------------------------------

DIGEST_LABEL = "vkbench-digest"


def issue_title(digest: dict) -> str:
    return f"Benchmark digest: {digest['since'][:10]} .. {digest['until'][:10]}"


def sync_issue(digest: dict, client, *, site_url: str | None = None, label: str = DIGEST_LABEL,
               dry_run: bool = False) -> dict:
    """Open the window's digest issue, or update its body when it exists (a re-run of the same
    week's job, by title). Returns ``{"action": "opened"|"updated"|"unchanged", "issue", "title"}``."""
    title = issue_title(digest)
    body = render_markdown(digest, site_url=site_url)
    existing = next((i for i in client.list_issues(label)
                     if i.get("title") == title and DIGEST_MARKER in (i.get("body") or "")), None)
    if existing is not None:
        if existing.get("body") == body and existing.get("state") == "open":
            return {"action": "unchanged", "issue": existing.get("number"), "title": title}
        if not dry_run:
            client.update_issue(existing["number"], body=body, state="open")
        return {"action": "updated", "issue": existing.get("number"), "title": title}
    number = None
    if not dry_run:
        number = client.create_issue(title, body, [label]).get("number")
    return {"action": "opened", "issue": number, "title": title}
