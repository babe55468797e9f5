"""The vkbench CLI called in-process, as the unit tests call it: exit code and output together."""

from __future__ import annotations

import contextlib
import io


def vk(*args) -> tuple[int, str]:
    """(exit code, stdout + stderr) of ``vkbench ARGS``; an exception escaping the CLI, or a
    traceback in its output, fails the test."""
    from vkbench.cli import main

    out = io.StringIO()
    code = 0
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(out):
        try:
            main([str(a) for a in args])
        except SystemExit as exc:
            code = exc.code if isinstance(exc.code, int) else 1
    text = out.getvalue()
    assert "Traceback" not in text
    return code, text
