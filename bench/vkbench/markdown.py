"""Markdown from untrusted values (command names, versions, run ids, annotation reasons, URLs
come from result files and YAML that anyone with a branch can write).

* :func:`text` escapes every character Markdown or GitHub's HTML subset gives a meaning, and
  folds newlines, so a value cannot open a link, an image, a heading, a table cell or a tag;
* :func:`code` makes a code span that the value cannot close;
* :func:`link` emits a link only for an ``https:`` URL (``javascript:`` or ``data:`` become
  plain text);
* :func:`commit` accepts only a hex commit id;
* :func:`table` lays out a table from cells that are already Markdown (escaped by the above).

Every Markdown the project writes (issues, job summaries, A/B and bisect reports, PR comments,
profile and advice tables) goes through here: one list of special characters, one place to fix.
"""

from __future__ import annotations

import re
from typing import Any, Iterable, Sequence

from .bidi import isolate_composed
from .results.checks import safe_link

#: What can start a link, image, emphasis, code span, tag, autolink or table cell. (Line-start
#: syntax - headings, lists, quotes - cannot occur: values are never at the start of a line.)
_SPECIAL = re.compile(r"([\\`*_{}\[\]<>|~])")
_HEX = re.compile(r"^[0-9a-f]{7,64}$")
MAX = 300


def one_line(value: Any) -> str:
    """Newlines and other C0 controls folded to spaces, cut at MAX characters; C1 and
    bidirectional formatting characters shown escaped and right-to-left text isolated
    (:func:`vkbench.bidi.isolate`), so a name cannot reorder the text around it."""
    s = "" if value is None else str(value)
    s = re.sub(r"[\x00-\x1f\x7f\u2028\u2029]+", " ", s)
    s = s if len(s) <= MAX else s[: MAX - 1] + "…"
    return isolate_composed(s)


def change(value: float) -> str:
    """A relative change as a signed percentage with the precision its size needs: ``-8.0%`` for
    wall-clock steps, ``+0.32%`` for the sub-percent steps instruction counts resolve."""
    digits = 1 if abs(value) >= 0.01 else (2 if abs(value) >= 0.001 else 3)
    return f"{value * 100:+.{digits}f}%"


def text(value: Any) -> str:
    return _SPECIAL.sub(r"\\\1", one_line(value))


def code(value: Any) -> str:
    """A code span: backticks and pipes inside are replaced (a table would split on `|` even
    inside a span), so the span always closes where we close it."""
    s = one_line(value).replace("`", "'").replace("|", "¦")
    return f"`{s}`" if s.strip() else "` `"


def link(label_markdown: str, url: Any) -> str:
    """``[label](url)`` for an https: URL, else the label alone. ``label_markdown`` must
    already be escaped (text() or code())."""
    safe = safe_link(url)
    if not safe:
        return label_markdown
    return f"[{label_markdown}]({safe.replace('(', '%28').replace(')', '%29')})"


def commit(value: Any) -> str | None:
    return value if isinstance(value, str) and _HEX.match(value) else None


def table(header: Sequence[str], align: str, rows: Iterable[Sequence[str]]) -> list[str]:
    """The lines of a Markdown table. ``header`` and the cells are Markdown already (values
    escaped with :func:`text` or :func:`code`); ``align`` has one letter per column, ``l``
    (left) or ``r`` (right: numbers)."""
    if len(align) != len(header):
        raise ValueError(f"{len(header)} columns but {len(align)} alignments")
    rule = {"l": "---", "r": "---:"}
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join(rule[a] for a in align) + "|"]
    lines += ["| " + " | ".join(row) + " |" for row in rows]
    return lines
