"""detect.json as its readers use it, checked before use (docs/history-format.md, "detect.json").

`vkbench detect` writes the file; `vkbench alert` and the site read it back from gh-pages, where
anyone with push access (or a damaged checkout) can change it. Checked here, where it is read,
against ``schema/detect-v1.schema.json``: every list and object has the type its readers index
into, ids and names are strings, numbers are finite, and each problem is a
:class:`ResultFileError` (exit 7) that names the file and the field instead of a KeyError or
TypeError deep in a renderer.

Two depths: what every reader needs (the site draws an incident without, say, its p-value), and,
with ``for_alerts`` (``schema/detect-alerts-v1.schema.json``), every field the issue bodies and
job summaries format (:mod:`vkbench.alerts.summary`, :mod:`vkbench.detect.report`).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from .schemas import check

HINT = ("detect.json is derived: re-run `vkbench detect --history DIR` to write it again from the history, "
        "or restore it from the gh-pages branch history (git log -- history/detect.json)")


def check_detection(doc: Any, path: Path, *, for_alerts: bool = False) -> dict:
    """``doc`` (detect.json's content) when its structure is what the readers use; else a
    ResultFileError naming ``path`` and the field (``incidents/0/status``)."""
    return check(doc, "detect-alerts-v1" if for_alerts else "detect-v1", path, HINT)


__all__ = ["check_detection"]
