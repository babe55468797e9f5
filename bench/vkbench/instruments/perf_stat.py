"""Hardware instruction counters through ``perf stat``: whether this machine has them, which
counter an instruction count uses, and the counts of one measured window of a running server.

``perf stat -x,`` prints one CSV line per event (perf's documented CSV format, tools/perf
Documentation/perf-stat.txt, "CSV FORMAT")::

    value,unit,event,run-time(ns),percentage-enabled[,metric-value,metric-unit]

where ``value`` is ``<not supported>`` (the kernel has no such event: no PMU, a VM, an emulator)
or ``<not counted>`` (the event never ran while enabled), and a percentage under 100 means the
value was scaled from a multiplexed sample: an estimate, never an exact count.
"""

from __future__ import annotations

import errno
import os
import select
import shutil
import subprocess
import tempfile
import time
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from ..errors import BenchmarkFailedError, NoHardwareCountersError, UsageError
from ..profile.record import perf_binary, stop_perf

NOT_SUPPORTED = "<not supported>"
NOT_COUNTED = "<not counted>"
#: The event the probe asks for: user-space instructions, what a measurement counts.
PROBE_EVENT = "instructions:u"
PROBE_TIMEOUT_S = 30.0
#: perf attaching to the server and acknowledging a control command, on a loaded machine.
CONTROL_TIMEOUT_S = 60.0
#: ``--counter``: which tool counts instructions.
COUNTERS = ("auto", "perf", "valgrind")
COUNTER_ENV = "VKBENCH_COUNTER"


@dataclass(frozen=True)
class Reading:
    """One line of ``perf stat -x,``."""

    event: str
    value: float | None          # None: not supported or not counted
    unit: str
    status: str                  # "counted", "not supported" or "not counted"
    run_time_ns: int | None
    enabled_pct: float | None    # under 100: scaled from a multiplexed sample

    @property
    def exact(self) -> bool:
        return self.status == "counted" and (self.enabled_pct is None or self.enabled_pct >= 100.0)

    def to_dict(self) -> dict:
        return {"event": self.event, "value": self.value, "unit": self.unit, "status": self.status,
                "run_time_ns": self.run_time_ns, "enabled_pct": self.enabled_pct}


def parse_csv(text: str) -> list[Reading]:
    """The event lines of ``perf stat -x,`` output; comments, blank lines and perf's own messages
    (``Events enabled``, usage text) are not event lines and are skipped."""
    out: list[Reading] = []
    for line in text.splitlines():
        fields = line.strip().split(",")
        if line.startswith("#") or len(fields) < 5:
            continue
        value_text, unit, event, run_time, pct = (f.strip() for f in fields[:5])
        if not event:
            continue
        if value_text in (NOT_SUPPORTED, NOT_COUNTED):
            value, status = None, value_text.strip("<>")
        else:
            try:
                value, status = float(value_text), "counted"
            except ValueError:
                continue
        out.append(Reading(event=event, value=value, unit=unit, status=status,
                           run_time_ns=_int_or_none(run_time), enabled_pct=_float_or_none(pct)))
    return out


def event_value(readings: list[Reading], event: str) -> Reading | None:
    """The reading of ``event``. On a hybrid CPU perf prints one line per core type
    (``cpu_core/instructions:u/``, ``cpu_atom/instructions:u/``): they are summed."""
    rows = [r for r in readings if r.event == event or (r.event.endswith(f"/{event}/") and "/" in r.event[:-1])]
    if not rows:
        return None
    if len(rows) == 1:
        return rows[0]
    counted = [r for r in rows if r.status == "counted"]
    if not counted:
        return rows[0]
    return Reading(event=event, value=sum(r.value for r in counted), unit=counted[0].unit, status="counted",
                   run_time_ns=max(r.run_time_ns or 0 for r in counted),
                   enabled_pct=min((r.enabled_pct for r in counted if r.enabled_pct is not None), default=None))


def _int_or_none(text: str) -> int | None:
    try:
        return int(text)
    except ValueError:
        return None


def _float_or_none(text: str) -> float | None:
    try:
        return float(text)
    except ValueError:
        return None


# -- detection --------------------------------------------------------------------------------
@dataclass(frozen=True)
class CounterProbe:
    """Whether ``perf stat`` counts user-space instructions here, and why not."""

    available: bool
    reason: str
    perf_version: str | None = None


def judge_probe(returncode: int, output: str) -> CounterProbe:
    """The probe's verdict from what ``perf stat -x, -e instructions:u -- true`` printed."""
    reading = event_value(parse_csv(output), PROBE_EVENT)
    if reading is not None and reading.status == "counted" and reading.value:
        return CounterProbe(True, f"perf stat counts {PROBE_EVENT} ({int(reading.value)} for `true`)")
    if reading is not None and reading.status == "not supported":
        return CounterProbe(False, f"no hardware counters: perf stat reports {PROBE_EVENT} <not supported> "
                                   "(no PMU: a VM, a container without it, or an emulator)")
    if reading is not None and reading.status == "not counted":
        return CounterProbe(False, f"no hardware counters: perf stat reports {PROBE_EVENT} <not counted>")
    lowered = output.lower()
    if "perf_event_paranoid" in lowered or "permission" in lowered or "not permitted" in lowered:
        return CounterProbe(False, "perf may not count here: the kernel refused (perf_event_paranoid, or no "
                                   "perf events in this container)")
    tail = " | ".join(line.strip() for line in output.strip().splitlines()[-3:] if line.strip()) or "no output"
    return CounterProbe(False, f"perf stat counted no {PROBE_EVENT} (exit {returncode}: {tail})")


@lru_cache(maxsize=None)
def probe_counters(perf: str | None = None) -> CounterProbe:
    """Run the real ``perf stat`` once per process (per perf binary): the hardware can change
    between machines and processes, not within one."""
    perf = perf or perf_binary()
    if not perf:
        return CounterProbe(False, "perf is not installed (tools/setup/perf.sh installs Debian's linux-perf)")
    try:
        proc = subprocess.run([perf, "stat", "-x,", "-e", PROBE_EVENT, "--", "true"], capture_output=True,
                              text=True, errors="replace", timeout=PROBE_TIMEOUT_S, stdin=subprocess.DEVNULL)
    except (OSError, subprocess.SubprocessError) as exc:
        return CounterProbe(False, f"perf stat could not run: {exc}")
    probe = judge_probe(proc.returncode, proc.stdout + proc.stderr)
    from ..profile.record import perf_version

    return CounterProbe(probe.available, probe.reason, perf_version(perf))


@dataclass(frozen=True)
class CounterChoice:
    """Which tool counts instructions in this run, and why (recorded in the result)."""

    tool: str            # "perf" or "valgrind"
    requested: str       # "auto", "perf" or "valgrind"
    reason: str

    def to_dict(self) -> dict:
        return {"tool": self.tool, "requested": self.requested, "reason": self.reason}


def requested_counter(option: str | None) -> str:
    """``--counter``, else $VKBENCH_COUNTER, else auto (validated: the environment is input too)."""
    value = (option or os.environ.get(COUNTER_ENV) or "auto").strip().lower()
    if value not in COUNTERS:
        raise UsageError(f"counter {value!r} (from {'--counter' if option else COUNTER_ENV})",
                         hint="--counter auto, perf or valgrind")
    return value


def select_counter(requested: str = "auto", *, probe: CounterProbe | None = None) -> CounterChoice:
    """perf where the hardware counts instructions, valgrind otherwise; ``perf`` forced on a
    machine without counters is refused, ``valgrind`` forced is always granted."""
    if requested not in COUNTERS:
        raise UsageError(f"counter {requested!r}", hint="--counter auto, perf or valgrind")
    if requested == "valgrind":
        return CounterChoice("valgrind", requested, "forced (--counter valgrind)")
    probe = probe or probe_counters()
    if requested == "perf":
        if not probe.available:
            raise NoHardwareCountersError(f"--counter perf: {probe.reason}",
                                          hint="use --counter auto (or valgrind) to count under callgrind here, "
                                               "or run on bare metal with a PMU (Pi CM4, a metal cloud machine)")
        return CounterChoice("perf", requested, f"forced (--counter perf); {probe.reason}")
    if probe.available:
        return CounterChoice("perf", requested, f"hardware counters: {probe.reason}")
    return CounterChoice("valgrind", requested, probe.reason)


# -- one window ----------------------------------------------------------------------------
class WindowCounter:
    """``perf stat`` attached to every thread of a running process for one measured window.

    Why one perf process per window, started with its counters disabled (``-D -1``) and switched
    on and off over its control FIFO: perf acknowledges ``enable`` after the counters run and
    ``disable`` after they stopped, so the count covers exactly the window, and the one total perf
    prints when it stops belongs to that window alone. Interval output (``-I``) instead prints
    deltas at timer ticks unrelated to the window's edges; attributing them needs every tick between
    two windows to land while disabled, which nothing guarantees.
    ``-p`` attaches to every thread the process has when perf starts (/proc/PID/task: main and
    bio threads); a thread started later is not guaranteed to be counted, and none is at
    io-threads 1 (more is refused for counts). ``threads`` records how many there were."""

    def __init__(self, pid: int, events: tuple[str, ...], work_dir: Path, *, perf: str | None = None):
        self.pid, self.events, self.work_dir = pid, tuple(events), Path(work_dir)
        self.perf = perf or perf_binary()
        if not self.perf:
            raise BenchmarkFailedError("perf is not installed", hint="tools/setup/perf.sh installs Debian's linux-perf")
        self.proc: subprocess.Popen | None = None
        self._fds: tuple[int, int] | None = None
        self._dir: Path | None = None
        self.threads = 0

    def __enter__(self) -> WindowCounter:
        self._dir = Path(tempfile.mkdtemp(prefix="perf-window-", dir=self.work_dir))
        ctl, ack = self._dir / "ctl", self._dir / "ack"
        os.mkfifo(ctl)
        os.mkfifo(ack)
        self.output = self._dir / "stat.csv"
        self.log = self._dir / "perf.log"
        self.threads = len(os.listdir(f"/proc/{self.pid}/task"))
        argv = [self.perf, "stat", "-x,", "-e", ",".join(self.events), "-p", str(self.pid), "-D", "-1",
                "--control", f"fifo:{ctl},{ack}", "-o", str(self.output)]
        with open(self.log, "wb") as log:
            self.proc = subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                         start_new_session=True)
        try:
            self._fds = self._open(ctl, ack)
        except BaseException:
            self.__exit__(None, None, None)
            raise
        return self

    def _open(self, ctl: Path, ack: Path) -> tuple[int, int]:
        deadline = time.monotonic() + CONTROL_TIMEOUT_S
        ctl_fd = None
        while ctl_fd is None:
            if self.proc.poll() is not None:
                raise BenchmarkFailedError(f"perf stat exited with {self.proc.returncode} while attaching to "
                                           f"pid {self.pid}: {self._log_tail()}", hint=f"see {self.log}")
            if time.monotonic() > deadline:
                raise BenchmarkFailedError(f"perf stat did not open its control FIFO within {CONTROL_TIMEOUT_S:.0f} s",
                                           hint="the machine is overloaded, or perf does not know --control")
            try:
                ctl_fd = os.open(ctl, os.O_WRONLY | os.O_NONBLOCK)
            except OSError as exc:
                if exc.errno != errno.ENXIO:    # ENXIO: perf has not opened its end yet
                    raise
                time.sleep(0.02)
        try:
            return ctl_fd, os.open(ack, os.O_RDONLY | os.O_NONBLOCK)
        except BaseException:
            os.close(ctl_fd)
            raise

    def command(self, word: str) -> None:
        """Send ``enable`` or ``disable`` and wait for perf's ``ack``: only then has it happened."""
        ctl_fd, ack_fd = self._fds
        os.write(ctl_fd, f"{word}\n".encode())
        deadline = time.monotonic() + CONTROL_TIMEOUT_S
        received = b""
        while b"ack" not in received:
            remaining = deadline - time.monotonic()
            if self.proc.poll() is not None:
                raise BenchmarkFailedError(f"perf stat exited with {self.proc.returncode} before acknowledging "
                                           f"{word!r}: {self._log_tail()}", hint=f"see {self.log}")
            if remaining <= 0:
                raise BenchmarkFailedError(f"perf stat did not acknowledge {word!r} within {CONTROL_TIMEOUT_S:.0f} s",
                                           hint=f"see {self.log}")
            ready, _, _ = select.select([ack_fd], [], [], min(remaining, 0.5))
            if ready:
                received += os.read(ack_fd, 64)

    def enable(self) -> None:
        self.command("enable")

    def disable(self) -> None:
        self.command("disable")

    def stop(self) -> list[Reading]:
        """SIGINT: perf stat prints its totals (to ``-o``) and exits; the readings."""
        self._stop()
        text = self.output.read_text(errors="replace") if self.output.exists() else ""
        readings = parse_csv(text)
        if not readings:
            raise BenchmarkFailedError(f"perf stat printed no counts: {self._log_tail()}", hint=f"see {self.log}")
        self.raw = text
        return readings

    def _stop(self) -> None:
        if self.proc is not None:
            stop_perf(self.proc)

    def _log_tail(self) -> str:
        try:
            text = self.log.read_text(errors="replace")
        except OSError:
            return "no output"
        return " | ".join(line.strip() for line in text.strip().splitlines()[-3:] if line.strip()) or "no output"

    def __exit__(self, *exc) -> None:
        self._stop()
        for fd in self._fds or ():
            os.close(fd)
        self._fds = None
        if self._dir is not None:
            shutil.rmtree(self._dir, ignore_errors=True)
            self._dir = None


def count_of(readings: list[Reading], event: str, *, where: str) -> Reading:
    """The exact count of ``event``; a window whose count is missing or estimated is refused."""
    reading = event_value(readings, event)
    if reading is None:
        raise BenchmarkFailedError(f"perf stat printed no {event} count in {where}",
                                   hint="is the event spelled as `perf list` spells it?")
    if reading.status != "counted":
        raise BenchmarkFailedError(f"perf stat: {event} <{reading.status}> in {where}",
                                   hint="no hardware counters here: use --counter valgrind (or auto)")
    if not reading.exact:
        raise BenchmarkFailedError(f"perf stat scaled {event} from a multiplexed sample ({reading.enabled_pct}% "
                                   f"of the time) in {where}: an estimate, not a count",
                                   hint="count fewer events at once, or stop other perf users on this machine")
    return reading


__all__ = ["Reading", "parse_csv", "event_value", "CounterProbe", "judge_probe", "probe_counters", "CounterChoice",
           "select_counter", "requested_counter", "WindowCounter", "count_of", "NoHardwareCountersError", "COUNTERS",
           "COUNTER_ENV"]
