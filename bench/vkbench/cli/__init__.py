"""The ``vkbench`` command: a thin click layer; each command lives in its own module.

Commands are imported lazily so ``vkbench --help`` stays fast and one broken optional
dependency does not take every command down. Errors from the library are
:class:`vkbench.errors.VkbenchError`; :func:`main` prints them and exits with their code.
"""

from __future__ import annotations

import importlib
import sys

import click

from .. import __version__
from ..errors import VkbenchError

# command name -> (module, attribute, one-line help)
COMMANDS: dict[str, tuple[str, str, str]] = {
    "run": ("run", "run_cmd", "Run a matrix (preset, file or one --cell) on real servers."),
    "matrix": ("matrix", "matrix_cmd", "Expand a matrix file or preset into cells (table or GitHub matrix JSON)."),
    "parse": ("parse", "parse_cmd", "Normalize valkey-/redis-benchmark or memtier output into records."),
    "servers": ("servers", "servers_group", "List and fetch server and tool binaries."),
    "env": ("env", "env_cmd", "Print this machine's fingerprint."),
    "compare": ("compare", "compare_cmd", "Compare two result directories cell by cell."),
    "ingest": ("ingest", "ingest_cmd", "Add result files to a history directory."),
    "detect": ("detect", "detect_cmd", "Find change points (regressions, improvements) in a history or one series."),
    "alert": ("alert", "alert_cmd", "Open, update or close GitHub issues for regression incidents."),
    "publish": ("publish", "publish_cmd", "Ingest into a git branch (gh-pages) and push, retrying on races."),
    "history": ("history", "history_group", "Retention (raw outputs, result copies) and the split of history/ off the Pages branch."),
    "export": ("export", "export_group", "Export results for other tools (github-action-benchmark)."),
    "advise": ("advise", "advise_cmd", "Recommend io-threads per machine class from io-threads sweep results."),
    "profile": ("profile", "profile_group", "Compare CPU profiles recorded with `vkbench run --profile`."),
    "site": ("site", "site_group", "Build or serve the static trend site."),
    "ab": ("ab", "ab_cmd", "A/B two commits of a Valkey repository: build both, run interleaved, compare."),
    "confirm": ("confirm", "confirm_cmd", "Record a confirmation A/B's verdict on a detection candidate."),
    "bisect": ("bisect", "bisect_cmd", "Find the commit of a regression between a good and a bad commit."),
    "bisect-requests": ("bisect_requests", "bisect_requests_cmd", "Choose the new incidents to bisect; write their dispatch bodies."),
    "bisect-record": ("bisect_record", "bisect_record_cmd", "Record a bisect's culprit under its incident in the history."),
    "digest": ("digest", "digest_cmd", "What moved in the last days (regressions, confirmations, bisects, coverage) as Markdown or JSON."),
    "demo": ("demo", "demo_cmd", "The README's main job: setup check, smoke matrix, history, detection, site."),
    "ci": ("ci", "ci_group", "Steps of the GitHub workflows (plan, ...), with ::error:: annotations under Actions."),
}


class LazyGroup(click.Group):
    def list_commands(self, ctx: click.Context) -> list[str]:
        return list(COMMANDS)

    def get_command(self, ctx: click.Context, name: str) -> click.Command | None:
        if name not in COMMANDS:
            return None
        module_name, attr, _ = COMMANDS[name]
        module = importlib.import_module(f"vkbench.cli.{module_name}")
        return getattr(module, attr)

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        # Help text from the table, without importing every module.
        rows = [(name, help_text) for name, (_, _, help_text) in COMMANDS.items()]
        with formatter.section("Commands"):
            formatter.write_dl(rows)


@click.group(cls=LazyGroup, context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100})
@click.version_option(__version__, prog_name="vkbench")
def cli() -> None:
    """vkbench: continuous benchmarking for Valkey.

    Runs benchmark matrices on real servers (native processes or docker compose), normalizes
    every tool's output into versioned result files, keeps a history, detects regressions and
    builds a static trend site.

    \b
    Quick start:
      vkbench run --preset smoke            # real servers on 127.0.0.1
      vkbench matrix nightly --format github
      vkbench compare base/ candidate/
    """


def _annotate(exc: VkbenchError, argv: list[str]) -> None:
    """Under GitHub Actions, the error as an ::error:: annotation too (the workflow's scripts need
    not turn exit codes into messages: the message and hint are here). The title names the
    command only when it is a known one: arguments may be untrusted input."""
    from ..ci.actions import annotate

    words = ["vkbench"]
    if argv and argv[0] in COMMANDS:
        words.append(argv[0])
        if argv[0] == "ci" and len(argv) > 1:
            from .ci import CI_COMMANDS

            if argv[1] in CI_COMMANDS:
                words.append(argv[1])
    title = getattr(exc, "title", None) or f"{' '.join(words)} failed (exit {exc.exit_code})"
    annotate("error", title, f"{exc.message}\nhint: {exc.hint}" if exc.hint else exc.message)


def _fail(exc: VkbenchError, argv: list[str] | None) -> None:
    click.echo(f"error: {exc.message}", err=True)
    if exc.hint:
        click.echo(f"  hint: {exc.hint}", err=True)
    _annotate(exc, sys.argv[1:] if argv is None else argv)
    sys.exit(exc.exit_code)


def _ignore_file_size_signal() -> None:
    """A write past ``ulimit -f`` must fail with EFBIG (a sentence, exit 16), not kill the
    process with SIGXFSZ halfway. CPython ignores SIGXFSZ already; this keeps it so whoever
    embeds the CLI. Child processes get the default back (subprocess restore_signals)."""
    import signal

    if hasattr(signal, "SIGXFSZ"):
        try:
            signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        except ValueError:      # not the main thread (an embedding caller's worker)
            pass


def main(argv: list[str] | None = None) -> None:
    _ignore_file_size_signal()
    try:
        cli.main(args=argv, prog_name="vkbench", standalone_mode=False)
    except VkbenchError as exc:
        _fail(exc, argv)
    except OSError as exc:
        from ..errors import from_os_error

        mapped = from_os_error(exc)
        if mapped is None:
            raise
        _fail(mapped, argv)
    except click.exceptions.Abort:
        click.echo("interrupted", err=True)
        sys.exit(130)
    except KeyboardInterrupt:
        click.echo("interrupted", err=True)
        sys.exit(130)
    except click.ClickException as exc:
        exc.show()
        sys.exit(exc.exit_code)
    except click.exceptions.Exit as exc:
        sys.exit(exc.exit_code)
