"""Results history: an append-only, month-sharded directory kept on gh-pages.

Public entry points: :class:`HistoryStore`, :func:`ingest`, :func:`series_key`,
:func:`vkbench.history.publish.publish`. Layout: docs/history-format.md.
"""

from .ingest import IngestReport, ingest
from .series import segments, series_key
from .store import HISTORY_VERSION, HistoryStore

__all__ = ["HISTORY_VERSION", "HistoryStore", "IngestReport", "ingest", "segments", "series_key"]
