"""Moved to :mod:`vkbench.markdown` (kept while other branches still import this path)."""

from ..markdown import MAX, code, commit, link, one_line, table, text  # noqa: F401
