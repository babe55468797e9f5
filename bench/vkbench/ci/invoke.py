"""One vkbench command run inside this process, for the ``vkbench ci`` steps that wrap one (the
step decides the arguments; the command keeps its own messages, hints and exit codes: its
:class:`~vkbench.errors.VkbenchError` propagates to :func:`vkbench.cli.main`, which annotates it)."""

from __future__ import annotations

import contextlib
import io
import sys


def vkbench(argv: list[str], *, capture: bool = False, quiet: bool = False) -> str:
    """Run ``vkbench ARGV``; returns its stdout when ``capture`` (else it goes to this stdout;
    ``quiet``: dropped). A command that ends with a click exit code other than 0 exits this process
    with it, as the command would have on its own."""
    from ..cli import cli

    out = io.StringIO()
    redirect = contextlib.redirect_stdout(out) if capture or quiet else contextlib.nullcontext()
    with redirect:
        rv = cli.main(args=argv, prog_name="vkbench", standalone_mode=False)
    if isinstance(rv, int) and rv != 0:
        if capture:
            sys.stdout.write(out.getvalue())
        sys.exit(rv)
    return out.getvalue() if capture else ""
