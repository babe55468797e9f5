"""GitHub Actions' side of a step: workflow-command annotations, step outputs, the job summary.

Outside Actions (``GITHUB_ACTIONS`` is not ``true``) nothing here prints a workflow command;
outputs and the summary go to stdout when GitHub's files are not named (the local chain test
runs the scripts on one machine).
"""

from __future__ import annotations

import os
import secrets
import sys
from typing import Mapping, TextIO

from ..errors import UsageError


class InvalidInput(UsageError):
    """A dispatch input (or repository variable) outside its allow-list (exit 2). The message
    names what is allowed; the value itself is never shown."""

    def __init__(self, name: str, message: str, *, title: str | None = None):
        super().__init__(message, hint="fix the input and dispatch the workflow again")
        self.title = title or f"Invalid input {name}"


def in_actions(env: Mapping[str, str] | None = None) -> bool:
    return (os.environ if env is None else env).get("GITHUB_ACTIONS") == "true"


def _escape_data(text: str) -> str:
    # Workflow commands take %, CR and LF escaped: unescaped, a multi-line message is cut at its
    # first line and the rest could be read as further commands.
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def _escape_property(text: str) -> str:
    return _escape_data(text).replace(":", "%3A").replace(",", "%2C")


def annotation(level: str, title: str, message: str) -> str:
    """One ``::error title=...::message`` (or warning) line, whatever the title and message hold."""
    if level not in ("error", "warning", "notice"):
        raise ValueError(f"unknown annotation level {level!r}")
    return f"::{level} title={_escape_property(title)}::{_escape_data(message)}"


def annotate(level: str, title: str, message: str, *, out: TextIO | None = None) -> None:
    """Print an annotation under Actions (stdout, where the runner reads workflow commands)."""
    if in_actions():
        print(annotation(level, title, message), file=out or sys.stdout, flush=True)


def set_output(name: str, value: str) -> None:
    """A step output (one line): appended to $GITHUB_OUTPUT, else printed as NAME=VALUE."""
    if "\n" in value or "\r" in value:
        raise UsageError(f"step output {name} must be one line", hint="this is a bug in vkbench ci")
    line = f"{name}={value}\n"
    path = os.environ.get("GITHUB_OUTPUT")
    if path:
        with open(path, "a", encoding="utf-8") as fh:
            fh.write(line)
    else:
        sys.stdout.write(line)


def append_summary(markdown: str) -> None:
    """Append to the job summary ($GITHUB_STEP_SUMMARY), else print it."""
    path = os.environ.get("GITHUB_STEP_SUMMARY")
    if path:
        with open(path, "a", encoding="utf-8") as fh:
            fh.write(markdown)
    else:
        sys.stdout.write(markdown)


def untrusted_log(text: str) -> None:
    """Print text that may echo user input (dispatch inputs, PR data) with workflow commands
    switched off under Actions, so a line like ``::add-mask::`` in it is inert."""
    if in_actions():
        token = f"vkbench-{secrets.token_hex(8)}"
        sys.stdout.write(f"::stop-commands::{token}\n{text}\n::{token}::\n")
    else:
        sys.stdout.write(text + "\n")
    sys.stdout.flush()
