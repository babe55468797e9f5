"""The parameters of an instruction-count measurement: recorded in every result, so a change of
method is visible (a segment boundary), never mistaken for a change of the server."""

from __future__ import annotations

import hashlib
from dataclasses import asdict, dataclass, field

#: What a cell can be measured by. ``wallclock`` is the default and stays out of cell ids.
INSTRUMENTS = ("wallclock", "instructions", "both")

#: libc's string routines in their baseline x86-64 (SSE2) variants: the AVX2/SSE4 variants cost a
#: number of instructions that depends on where malloc placed the argument, the baseline ones
#: much less. glibc 2.33+ names (2.36 here); "-AVX2_Usable" was the name before 2.33 and is
#: ignored by newer glibc. Only x86-64 reads it; other architectures ignore the variable.
GLIBC_TUNABLES_X86 = ("glibc.cpu.hwcaps=-AVX2,-AVX,-SSE4_1,-SSE4_2,-SSSE3,-AVX512F,-AVX512VL,-AVX512BW,-EVEX,"
                      "-ERMS,-FSRM,-AVX_Fast_Unaligned_Load,-Fast_Unaligned_Load,-Fast_Unaligned_Copy,-BMI2,"
                      "-MOVBE,-LZCNT")

#: Timer-driven work: it scales with valgrind's slowdown (wall time), not with the requests, so
#: its inclusive cost is subtracted from every window. activeExpireCycle also runs from
#: beforeSleep (its fast mode) once per event-loop iteration, which depends on how requests
#: batch; its calls from inside serverCron are already in serverCron's inclusive cost.
TIMER_FUNCTIONS = ("serverCron", "activeExpireCycle")
CRON_INTERNAL_CALLERS = ("serverCron", "databasesCron")


@dataclass(frozen=True)
class InstructionsMethod:
    """How instructions were counted. ``to_dict`` goes into the result as ``instructions.method``."""

    windows: int = 4                      # measured windows per command per server
    window_requests: int = 20000          # requests of one window
    servers: int = 3                      # fresh servers (measurements), one seed each
    seed_base: int = 1                    # server i gets seed seed_base + i (same every night)
    hz: int = 1
    preload_keys: int | None = None       # None: the cell's keyspace
    rehash_poll_rounds: int = 200         # bounded wait for the preload's incremental rehash
    scalar_string_routines: bool = True
    tool: str = "callgrind"
    subtract: tuple[str, ...] = field(default=TIMER_FUNCTIONS)
    #: What the series' ``instructions_per_op`` is: "code", the total without libc's
    #: alignment-sensitive string routines (instruments.split; their counts move by tens of
    #: instructions per GET between fresh servers of one build). Results from before it record
    #: only the total and have no such parameter: their method id differs, so the switch is a
    #: segment boundary of every counted series, never a step.
    counted: str = "code"
    #: Which string routines the code count leaves out: "outside-timers", those called outside
    #: the timer functions' subtrees (the ones inside are in the timer functions' inclusive cost,
    #: subtracted already: counting them again took 697 instructions per cron run twice, a term
    #: that followed the number of cron runs in a window, i.e. wall time); "all" is the
    #: computation before (every call). Methods from before it have no such parameter.
    strings_scope: str = "outside-timers"
    #: The server's slow log. Off in the method: under valgrind a command takes 20-50 times its
    #: native wall time, so on a loaded machine some exceed slowlog-log-slower-than (10 ms) and
    #: the server copies their arguments and its peer id into a log entry (snprintf, inet_ntop,
    #: about 3,000 instructions an entry): work that follows the machine's load, not the code.
    #: Measured (docs/instructions.md, "Run-to-run drift"): windows of a loaded run logged 1-5
    #: entries more. Methods from before it have no such parameter: a new id, a segment boundary.
    slowlog: bool = False
    #: perf only (None under callgrind, and then left out of the id, so the ids of callgrind
    #: methods stay what they were): the perf events counted, the first one being the count.
    events: tuple[str, ...] | None = None

    def to_dict(self) -> dict:
        data = self._parameters()
        data["glibc_tunables"] = GLIBC_TUNABLES_X86 if self.scalar_string_routines else None
        data["seed_pinning"] = "bind mount over /dev/urandom in a private mount namespace (unshare -m)"
        data["server_args"] = ["--hz", str(self.hz), "--dynamic-hz", "no", *self.server_config_args()]
        if self.tool == "perf":
            # What perf cannot take out (no per-function costs): said in the result itself.
            data["not_subtracted"] = PERF_NOT_SUBTRACTED
        data["id"] = self.method_id()
        return data

    def server_config(self) -> list[tuple[str, str]]:
        """Directives of the counted server's config file that follow from the method (beyond hz)."""
        return [] if self.slowlog else [("slowlog-log-slower-than", "-1")]

    def server_config_args(self) -> list[str]:
        return [arg for key, value in self.server_config() for arg in (f"--{key}", value)]

    def _parameters(self) -> dict:
        data = asdict(self)
        data["subtract"] = list(self.subtract)
        if self.events is None:
            del data["events"]
        else:
            data["events"] = list(self.events)
        return data

    def method_id(self) -> str:
        """A short digest of every parameter, prefixed with the tool: two series with different
        ids are not comparable, and a switch between callgrind and perf is a segment boundary."""
        digest = hashlib.sha256(repr(sorted(self._parameters().items())).encode()).hexdigest()[:10]
        return f"{self.tool}-{digest}"


#: The user-space instructions of every thread of the server, what a CPU's instructions counter
#: gives (docs/instructions.md, "Hardware counters").
PERF_EVENTS = ("instructions:u",)
PERF_NOT_SUBTRACTED = ("the timer-driven work: perf counts the process, not functions, so serverCron (about 5,300 "
                       "instructions a run, once a second at hz 1) and "
                       "activeExpireCycle's fast cycles from beforeSleep (once per event-loop iteration, so they "
                       "follow how requests batch) stay in every window")


def perf_method(**parameters) -> InstructionsMethod:
    """The perf method: the server runs natively, nothing is subtracted, the total is counted
    (no split of libc's string routines without per-function costs)."""
    return InstructionsMethod(**{"tool": "perf", "subtract": (), "counted": "total", "events": PERF_EVENTS,
                                 **parameters})


def seed_bytes(seed: int, size: int = 64 * 1024) -> bytes:
    """What /dev/urandom yields to a server started with ``seed``: SHA-256 in counter mode, the
    same bytes for the same seed on every machine (the dict hash seed, the run id)."""
    out = bytearray()
    counter = 0
    while len(out) < size:
        out += hashlib.sha256(f"vkbench-seed:{seed}:{counter}".encode()).digest()
        counter += 1
    return bytes(out[:size])


#: The values of InstructionsMethod.strings_scope.
STRINGS_SCOPES = ("outside-timers", "all")

__all__ = ["STRINGS_SCOPES", "INSTRUMENTS", "InstructionsMethod", "perf_method", "PERF_EVENTS", "PERF_NOT_SUBTRACTED", "GLIBC_TUNABLES_X86", "TIMER_FUNCTIONS", "CRON_INTERNAL_CALLERS",
           "seed_bytes"]
