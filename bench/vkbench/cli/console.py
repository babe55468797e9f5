"""Consoles for human output. Piped output (CI logs, `| less`) gets a wide fixed width: rich
would otherwise assume 80 columns and truncate table cells."""

from __future__ import annotations

from rich.console import Console

PIPED_WIDTH = 150


def make_console(*, stderr: bool = False) -> Console:
    console = Console(stderr=stderr)
    if not console.is_terminal:
        console = Console(stderr=stderr, width=PIPED_WIDTH)
    return console
