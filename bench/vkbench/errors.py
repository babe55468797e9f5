"""Error classes, each with its own process exit code.

Library code raises these; the CLI edge (:func:`vkbench.cli.main`) catches them,
prints ``message`` (which always says what to do next) and exits with ``exit_code``.
Exit codes are part of the interface: workflows and scripts branch on them.
"""

from __future__ import annotations


class VkbenchError(Exception):
    """Base class. ``exit_code`` is stable; never reuse a number for another meaning."""

    exit_code = 1

    def __init__(self, message: str, *, hint: str | None = None):
        super().__init__(message)
        self.message = message
        self.hint = hint

    def __str__(self) -> str:
        return f"{self.message}\n  hint: {self.hint}" if self.hint else self.message


class UsageError(VkbenchError):
    """Bad flags, bad matrix file, unknown preset. (click's own usage errors also exit 2.)"""

    exit_code = 2


class ConfigError(UsageError):
    """A matrix/annotation file fails validation; the message names the field."""

    exit_code = 2


class MissingBinaryError(VkbenchError):
    """A server or tool binary could not be resolved or fetched."""

    exit_code = 3


class ServerStartError(VkbenchError):
    """Servers did not start or did not become ready (ping, cluster_state, replica link)."""

    exit_code = 4


class BenchmarkFailedError(VkbenchError):
    """The benchmark tool failed or its output could not be trusted."""

    exit_code = 5


class ParseError(BenchmarkFailedError):
    """Tool output is an error, truncated, or not a known format. Names the file."""

    exit_code = 6


class ResultFileError(VkbenchError):
    """A result or history file is corrupt, invalid, or newer than this code."""

    exit_code = 7


class PublishError(VkbenchError):
    """Pushing the history branch failed after all retries."""

    exit_code = 8


class AlertError(VkbenchError):
    """The GitHub API refused or failed an alert call."""

    exit_code = 9


class RegressionFound(VkbenchError):
    """``--fail-on regression`` and an open regression incident exists (for gates)."""

    exit_code = 10
    title = "Open regression"      # the ::error:: annotation's title under GitHub Actions


class ContainerEngineError(VkbenchError):
    """No reachable container engine, or docker compose failed."""

    exit_code = 11


class ExportError(VkbenchError):
    """An export target (a PostgreSQL database) refused or could not be reached."""

    exit_code = 12


class ConflictingResultError(ResultFileError):
    """``ingest --strict``/``publish --strict``: a run_id/cell_id already in the history (or
    twice in the inputs) with other numbers."""

    exit_code = 13


class ToolTimeoutError(BenchmarkFailedError):
    """A phase of a cell (catalog preload, preload, warm-up, a repetition) overran ``--timeout``:
    the cell was stopped and everything it started torn down."""

    exit_code = 14


class OutputLimitError(BenchmarkFailedError):
    """A benchmark tool printed more than the output cap (``--output-limit``): stopped, torn down."""

    exit_code = 15


class DiskFullError(VkbenchError):
    """No space left on the device (ENOSPC) or the disk quota (EDQUOT) while writing; what was
    written is either complete or not there (atomic writes)."""

    exit_code = 16


class FileSizeLimitError(VkbenchError):
    """A write hit the process's file-size limit (EFBIG, ``ulimit -f``)."""

    exit_code = 17


class NoFreePortError(ServerStartError):
    """No TCP port could be had on 127.0.0.1 (loopback down, or every port in use)."""

    exit_code = 18


class NoHardwareCountersError(VkbenchError):
    """``--counter perf``: instructions counted by perf on a machine where it cannot count them
    (no hardware counters, perf missing, or the kernel refusing)."""

    exit_code = 19


def from_os_error(exc: OSError) -> VkbenchError | None:
    """The operator's sentence for an OSError that is about the machine, not about vkbench:
    disk full and the file-size limit. None for every other OSError (a bug: its traceback helps)."""
    import errno

    where = f" writing {exc.filename}" if exc.filename else ""
    if exc.errno in (errno.ENOSPC, errno.EDQUOT):
        what = "no space left on the device" if exc.errno == errno.ENOSPC else "the disk quota is used up"
        return DiskFullError(
            f"{what}{where}; what was being written is not there (files are written to a temporary name "
            "and renamed only when complete)",
            hint="free space on that file system (`df -h`, `vkbench history retain` for old raw outputs) and run the command again")
    if exc.errno == errno.EFBIG:
        return FileSizeLimitError(
            f"a file grew past this process's file-size limit{where}; what was being written is not there",
            hint="raise the limit (`ulimit -f unlimited`, or the service's LimitFSIZE) and run the command again")
    return None


class Interrupted(VkbenchError):
    """Ctrl-C: everything started was torn down."""

    exit_code = 130
