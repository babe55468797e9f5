"""Instructions per operation of a valkey-server under callgrind.

One *measurement* is one fresh server: started under ``valgrind --tool=callgrind
--instr-atstart=no`` in its own mount namespace with a seed file bind-mounted over
/dev/urandom (the dict hash seed and the run id are then the seed's, for any server version,
without patching or LD_PRELOAD), libc's string routines in their baseline variants
(GLIBC_TUNABLES), ``--hz 1 --dynamic-hz no``, the slow log off; a fixed ``key:%012d`` preload with the incremental
rehash driven to its end; then per command ``windows`` windows of exactly ``window_requests``
requests, collection switched on and off around each with ``callgrind_control`` and dumped.
A window's instructions minus the inclusive cost of the timer-driven functions
(method.TIMER_FUNCTIONS), over its requests, is one value of instructions per operation; the same
without libc's alignment-sensitive string routines (instruments.split) is the window's code count,
what the series record (their counts move with where malloc put the arguments, not with the code).

Where the CPU has instruction counters (instruments.perf_stat), ``method.tool == "perf"`` runs the
same pinned server natively and counts each window with ``perf stat`` attached to it: the same
seed, string routines, hz, preload and rehash; nothing subtracted and no split (perf counts the
process, not functions), so such a method counts the total (``counted: "total"``).
"""

from __future__ import annotations

import gzip
import os
import shutil
import signal
import statistics
import subprocess
import time
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path

import valkey

from ..errors import BenchmarkFailedError, MissingBinaryError, ServerStartError, UsageError
from ..topology.backend import Endpoint
from ..topology.procs import allocate_ports
from . import callgrind
from .method import (CRON_INTERNAL_CALLERS, GLIBC_TUNABLES_X86, STRINGS_SCOPES, TIMER_FUNCTIONS, InstructionsMethod,
                     seed_bytes)
from .split import strings_cost, strings_inside

#: From exec to answering PING under valgrind: 1-3 s here, more on a loaded machine.
START_TIMEOUT_S = 120.0
#: callgrind_control answers when the server next runs guest code (--hz 1: within a second).
CONTROL_TIMEOUT_S = 60.0
#: Functions listed per command (self instructions per operation, summed over the windows).
TOP_FUNCTIONS = 15
#: Keys read per round while driving the preload's rehash to its end.
REHASH_BATCH = 1000


@dataclass
class Window:
    command: str
    index: int
    requests: int
    instructions: int           # the dump's total
    subtracted: dict[str, int]  # timer-driven inclusive cost taken out
    per_op: float               # (instructions - subtracted) / requests: the total per operation
    #: Self instructions of libc's alignment-sensitive string routines (instruments.split), None
    #: for a window read back from a result that predates the split.
    strings: int | None = None
    #: perf only: every event perf stat read in the window (instruments.perf_stat.Reading), and
    #: how many threads the server had when perf attached.
    readings: list[dict] | None = None
    threads: int | None = None

    @property
    def code_per_op(self) -> float | None:
        """(instructions - subtracted - strings) / requests: the code count per operation."""
        if self.strings is None or not self.requests:
            return None
        return (self.instructions - sum(self.subtracted.values()) - self.strings) / self.requests

    def to_dict(self) -> dict:
        out = {"command": self.command, "index": self.index, "requests": self.requests,
               "instructions": self.instructions, "subtracted": self.subtracted, "per_op": round(self.per_op, 3)}
        if self.strings is not None:
            out["strings"] = self.strings
            out["code_per_op"] = round(self.code_per_op, 3)
        if self.readings is not None:
            out["readings"] = self.readings
            out["threads"] = self.threads
        return out


@dataclass
class Measurement:
    seed: int
    windows: list[Window] = field(default_factory=list)
    memory: dict | None = None
    rehash: dict | None = None
    tool_seed: bool = False
    duration_s: float = 0.0
    top: dict[str, dict[str, int]] = field(default_factory=dict)   # command -> fn -> self Ir (all windows)
    dumps: list[str] = field(default_factory=list)


def check_prerequisites(tool: str = "callgrind") -> None:
    """The counting tool (valgrind and callgrind_control, or perf) and unshare present, and the
    right to make a mount namespace."""
    if tool == "perf":
        from ..profile.record import perf_binary

        if perf_binary() is None:
            raise MissingBinaryError("perf is needed to count instructions with hardware counters",
                                     hint="tools/setup/perf.sh installs Debian's linux-perf, or use --counter valgrind")
    needed = ("unshare",) if tool == "perf" else ("valgrind", "callgrind_control", "unshare")
    for name in needed:
        if shutil.which(name) is None:
            raise MissingBinaryError(f"{name} is needed to count instructions",
                                     hint="apt-get install util-linux" if name == "unshare" else
                                     "tools/setup/build.sh installs valgrind (apt-get install valgrind)")
    if os.geteuid() != 0:
        raise UsageError("counting instructions pins the server's hash seed with a bind mount in a private mount "
                         "namespace (unshare -m), which needs root",
                         hint="run as root (CI runners are), or use --instrument wallclock")


def subtracted_cost(profile: callgrind.CallgrindProfile) -> dict[str, int]:
    """The timer-driven cost of a window: serverCron's inclusive cost, and activeExpireCycle's
    calls from outside the cron (beforeSleep's fast cycles)."""
    out = {"serverCron": profile.inclusive("serverCron")}
    out["activeExpireCycle"] = sum(profile.edge(caller, "activeExpireCycle")
                                   for caller in profile.callers("activeExpireCycle")
                                   if caller not in CRON_INTERNAL_CALLERS)
    return out


def window_from(profile: callgrind.CallgrindProfile, command: str, index: int, requests: int, *,
                strings_scope: str = "outside-timers") -> Window:
    total = profile.total("Ir")
    sub = subtracted_cost(profile)
    if total <= 0:
        raise BenchmarkFailedError(f"callgrind counted no instructions in the {command} window {index + 1}",
                                   hint="collection was not switched on: see the server's valgrind log")
    strings = strings_cost({fn: cost.get("Ir", 0) for fn, cost in profile.self_cost.items()})
    if strings_scope == "outside-timers":
        # The calls inside the timer functions' subtrees are in their inclusive cost, subtracted
        # already (sub): taken out of strings so they are not subtracted twice. What the call
        # graph cannot attribute (a caller reached from both sides: the cron's rare snprintf,
        # about 70 instructions) stays in strings.
        inside, _ambiguous = strings_inside(profile, TIMER_FUNCTIONS)
        strings -= inside
    elif strings_scope != "all":
        raise UsageError(f"unknown strings_scope {strings_scope!r}", hint=f"one of {', '.join(STRINGS_SCOPES)}")
    return Window(command, index, requests, total, sub, (total - sum(sub.values())) / requests, strings)


@lru_cache(maxsize=None)
def tool_has_seed(tool_path: str, library_path: str = "") -> bool:
    """valkey-benchmark has --seed since 8.0 (keys drawn by -r repeat exactly); older tools do not."""
    env = dict(os.environ, LD_LIBRARY_PATH=library_path) if library_path else None
    try:
        proc = subprocess.run([tool_path, "--help"], capture_output=True, text=True, timeout=10, env=env,
                              stdin=subprocess.DEVNULL)
    except (OSError, subprocess.SubprocessError):
        return False
    return "--seed" in proc.stdout + proc.stderr


class PinnedServer:
    """One valkey-server with everything that makes its count repeatable: its own mount namespace
    with the seed over /dev/urandom, the scalar string routines, hz 1, io-threads 1 (a context
    manager: stopped and reaped on every exit). It runs natively; CallgrindServer runs it under
    callgrind. ``pid`` is the server's own: unshare and sh exec into it (and valgrind runs the
    guest in its own process)."""

    #: What runs the server (prepended to its argv), and the name of its log.
    label = "natively"
    log_name = "server-stdout.log"

    def __init__(self, server_path: Path, work_dir: Path, *, seed: int, method: InstructionsMethod, password: str,
                 env: dict[str, str] | None = None, extra_args: tuple[str, ...] = ()):
        self.server_path, self.work_dir, self.seed, self.method = Path(server_path), Path(work_dir), seed, method
        self.password, self.env, self.extra_args = password, dict(env or {}), tuple(extra_args)
        self.proc: subprocess.Popen | None = None
        self.port = 0

    def wrapper(self) -> list[str]:
        return []

    # -- lifecycle ----------------------------------------------------------------------------
    def __enter__(self) -> PinnedServer:
        self.work_dir.mkdir(parents=True, exist_ok=True)
        seed_file = self.work_dir / "urandom"
        seed_file.write_bytes(seed_bytes(self.seed))
        conf = self.work_dir / "valkey.conf"
        self.port = allocate_ports(1, cluster=False)[0]
        lines = [f"port {self.port}", "bind 127.0.0.1", "protected-mode yes", f"requirepass {self.password}",
                 'save ""', "appendonly no", "io-threads 1", f"hz {self.method.hz}", "dynamic-hz no",
                 f"dir {self.work_dir}", f"logfile {self.work_dir / 'server.log'}", "daemonize no"]
        lines += [f"{key} {value}" for key, value in self.method.server_config()]
        fd = os.open(conf, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)   # holds the password
        with os.fdopen(fd, "w") as fh:
            fh.write("\n".join(lines) + "\n")
        # $1 is the seed file; the rest is the command. The namespace (and the mount) end with
        # the server: nothing to unmount.
        script = 'mount --bind "$1" /dev/urandom && shift && exec "$@"'
        argv = ["unshare", "--mount", "--propagation", "private", "--", "sh", "-c", script, "sh", str(seed_file),
                *self.wrapper(), str(self.server_path), str(conf), *self.extra_args]
        env = {**os.environ, **self.env}
        if self.method.scalar_string_routines:
            env["GLIBC_TUNABLES"] = GLIBC_TUNABLES_X86
        self.log = open(self.work_dir / self.log_name, "wb")
        self.proc = subprocess.Popen(argv, stdout=self.log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                     env=env, start_new_session=True)
        try:
            self._wait_ready()
        except BaseException:
            self.__exit__(None, None, None)
            raise
        return self

    def _wait_ready(self) -> None:
        deadline = time.monotonic() + START_TIMEOUT_S
        last = ""
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise ServerStartError(f"valkey-server {self.label} exited with {self.proc.returncode} at start: "
                                       f"{self._log_tail()}", hint=f"see {self.work_dir / self.log_name}")
            try:
                with self.client(timeout=2) as conn:
                    conn.ping()
                    return
            except valkey.exceptions.ValkeyError as exc:
                last = str(exc)
            time.sleep(0.2)
        raise ServerStartError(f"valkey-server {self.label} did not answer within {START_TIMEOUT_S:.0f} s ({last})",
                               hint=f"see {self.work_dir / self.log_name}")

    def _log_tail(self) -> str:
        try:
            return (self.work_dir / self.log_name).read_text(errors="replace")[-600:].strip()
        except OSError:
            return ""

    def __exit__(self, *exc) -> None:
        proc = self.proc
        if proc is None:
            return
        if proc.poll() is None:
            try:
                with self.client(timeout=5) as conn:
                    conn.execute_command("SHUTDOWN", "NOSAVE")
            except valkey.exceptions.ValkeyError:
                pass
            try:
                proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                for sig in (signal.SIGTERM, signal.SIGKILL):
                    try:
                        os.killpg(proc.pid, sig)
                    except ProcessLookupError:
                        break
                    try:
                        proc.wait(timeout=10)
                        break
                    except subprocess.TimeoutExpired:
                        continue
        self.log.close()
        self.proc = None

    def client(self, *, timeout: float = 60.0) -> valkey.Valkey:
        return valkey.Valkey(host="127.0.0.1", port=self.port, password=self.password, socket_timeout=timeout)

    @property
    def endpoint(self) -> Endpoint:
        return Endpoint(name="counted", host="127.0.0.1", port=self.port, role="primary", shard=0,
                        pid=self.proc.pid if self.proc else None)

    # -- preload ------------------------------------------------------------------------------
    def memory_used(self) -> int:
        with self.client() as conn:
            return int(conn.info("memory")["used_memory"])

    def preload(self, keys: int, data_size: int) -> dict:
        """SET ``key:%012d`` for every key; the ``memory`` block: keys, used_memory around it, bytes per key."""
        before = self.memory_used()
        value = b"x" * data_size
        with self.client() as conn:
            for start in range(0, keys, 2000):
                pipe = conn.pipeline(transaction=False)
                for i in range(start, min(keys, start + 2000)):
                    pipe.set(f"key:{i:012d}", value)
                pipe.execute()
        after = self.memory_used()
        return memory_block(keys, before, after, data_size)

    def finish_rehash(self, keys: int) -> dict:
        """Drive the keyspace's incremental rehash to its end (every lookup moves it a step):
        a rehash left over from the preload would add work to the first window only."""
        rounds = 0
        with self.client() as conn:
            while True:
                stats = _flat(conn.execute_command("MEMORY", "STATS"))
                pending = stats.get("db.dict.rehashing.count")
                if pending is None:
                    return {"status": "not reported by this server version", "rounds": rounds}
                if int(pending) == 0:
                    return {"status": "finished", "rounds": rounds}
                if rounds >= self.method.rehash_poll_rounds:
                    return {"status": f"still rehashing after {rounds} rounds", "rounds": rounds}
                pipe = conn.pipeline(transaction=False)
                for i in range(REHASH_BATCH):
                    pipe.exists(f"key:{(rounds * REHASH_BATCH + i) % max(keys, 1):012d}")
                pipe.execute()
                rounds += 1


class CallgrindServer(PinnedServer):
    """The pinned server under ``valgrind --tool=callgrind --instr-atstart=no``: collection is
    switched on and off with callgrind_control, each window dumped."""

    label = "under callgrind"
    log_name = "valgrind.log"

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.out_prefix = self.work_dir / "callgrind.out"
        self._dumps = 0

    def wrapper(self) -> list[str]:
        return ["valgrind", "--tool=callgrind", "--instr-atstart=no", f"--callgrind-out-file={self.out_prefix}"]

    # -- control ------------------------------------------------------------------------------
    def control(self, *args: str) -> None:
        try:
            proc = subprocess.run(["callgrind_control", *args, str(self.proc.pid)], capture_output=True, text=True,
                                  timeout=CONTROL_TIMEOUT_S, stdin=subprocess.DEVNULL)
        except subprocess.TimeoutExpired:
            raise BenchmarkFailedError(f"callgrind_control {' '.join(args)} got no answer within {CONTROL_TIMEOUT_S:.0f} s",
                                       hint="the server is stuck or not under callgrind") from None
        if proc.returncode != 0 or "Error" in proc.stdout + proc.stderr:
            raise BenchmarkFailedError(f"callgrind_control {' '.join(args)} failed: {(proc.stdout + proc.stderr).strip()[:300]}",
                                       hint="is valgrind's callgrind_control of the same version as valgrind?")

    def dump(self, trigger: str) -> Path:
        """Dump the counters since the last zeroing; the dump's path (complete: totals written)."""
        self.control("-d", trigger)
        self._dumps += 1
        path = Path(f"{self.out_prefix}.{self._dumps}")
        deadline = time.monotonic() + CONTROL_TIMEOUT_S
        while time.monotonic() < deadline:
            if path.is_file() and b"\ntotals:" in path.read_bytes()[-4096:]:
                return path
            time.sleep(0.05)
        raise BenchmarkFailedError(f"callgrind wrote no complete dump {path.name}", hint=f"see {self.work_dir}")


def memory_block(keys: int, before: int, after: int, data_size: int | None = None) -> dict:
    block = {"keys": keys, "used_memory_before": before, "used_memory_after": after,
             "bytes_per_key": round((after - before) / keys, 2) if keys else None}
    if data_size is not None:
        block["value_bytes"] = data_size
    return block


def _flat(reply) -> dict:
    """MEMORY STATS' nested reply as one flat dict of its scalar fields."""
    out: dict = {}
    if isinstance(reply, dict):
        items = list(reply.items())
    else:
        items = list(zip(reply[::2], reply[1::2]))
    for key, value in items:
        key = key.decode() if isinstance(key, bytes) else str(key)
        if isinstance(value, (list, dict)):
            out.update(_flat(value))
        else:
            out[key] = value.decode() if isinstance(value, bytes) else value
    return out


def measure(*, server_path: Path, tool_path: Path, tool_env: dict[str, str], commands: list[str], clients: int,
            pipeline: int, data_size: int, keyspace: int, seed: int, method: InstructionsMethod, work_dir: Path,
            password: str, server_env: dict[str, str] | None = None, keep_dumps: Path | None = None,
            keep_all_windows: bool = False, timeout: float = 600.0, progress=None) -> Measurement:
    """One fresh server, one preload, ``method.windows`` windows per command, counted by
    ``method.tool``: callgrind (the server under valgrind) or perf (the server native, perf stat
    attached per window, instruments.perf_stat). ``keep_dumps``: where the first window's dump
    of each command is kept, gzipped (every window's with ``keep_all_windows``: for studying
    what moves between windows and runs)."""
    from ..matrix.model import Cell
    from ..runner.process import run_tools
    from ..runner.tools import build_command

    perf = method.tool == "perf"
    check_prerequisites(method.tool)
    began = time.monotonic()
    result = Measurement(seed=seed)
    keys = method.preload_keys or keyspace
    has_seed = tool_has_seed(str(tool_path), tool_env.get("LD_LIBRARY_PATH", ""))
    result.tool_seed = has_seed
    server_class = PinnedServer if perf else CallgrindServer
    with server_class(server_path, work_dir, seed=seed, method=method, password=password, env=server_env) as server:
        result.memory = server.preload(keys, data_size)
        result.rehash = server.finish_rehash(keys)
        for command in commands:
            cell = Cell(server="valkey:measured", tests=[command], clients=clients, pipeline=pipeline,
                        data_size=data_size, keyspace=keyspace, requests=method.window_requests)
            top: dict[str, int] = {}
            for index in range(method.windows):
                cmd = build_command(cell, server.endpoint, password, str(tool_path), tool_env=tool_env)
                cmd.env.update(tool_env)
                if has_seed:
                    cmd.argv += ["--seed", str(seed)]   # the same keys in every window
                if progress:
                    progress(command, index)

                def load():
                    runs = run_tools([cmd], cpus=None, timeout=timeout)
                    run = runs[0]
                    if run.timed_out or run.exit_code != 0:
                        raise BenchmarkFailedError(f"{tool_path.name} failed in the {command} window {index + 1} "
                                                   f"(exit {run.exit_code}{', timed out' if run.timed_out else ''}): "
                                                   f"{run.output.replace(password, '***')[-300:]}",
                                                   hint=f"see {work_dir / server.log_name}")

                if perf:
                    result.windows.append(perf_window(server, method, command, index, load))
                    continue
                server.control("-z")
                server.control("-i", "on")
                try:
                    load()
                finally:
                    server.control("-i", "off")
                dump = server.dump(f"vkbench {command} {index + 1}")
                profile = callgrind.read(dump)
                result.windows.append(window_from(profile, command, index, method.window_requests,
                                                  strings_scope=method.strings_scope))
                for fn, cost in profile.self_cost.items():
                    top[fn] = top.get(fn, 0) + cost.get("Ir", 0)
                if keep_dumps is not None and (index == 0 or keep_all_windows):
                    keep_dumps.mkdir(parents=True, exist_ok=True)
                    name = (f"callgrind-seed{seed}-{command}-w{index + 1}.out.gz" if keep_all_windows
                            else f"callgrind-seed{seed}-{command}.out.gz")
                    with open(dump, "rb") as src, gzip.open(keep_dumps / name, "wb") as dst:
                        shutil.copyfileobj(src, dst)
                    result.dumps.append(name)
                dump.unlink(missing_ok=True)
            result.top[command] = top
    result.duration_s = round(time.monotonic() - began, 3)
    return result


def perf_window(server: PinnedServer, method: InstructionsMethod, command: str, index: int, load) -> Window:
    """One window counted by perf stat attached to every thread of the native server: counters
    on (acknowledged) before the load's first request, off (acknowledged) after its last reply.
    Nothing is subtracted (perf has no per-function costs): the window's count is its total."""
    from .perf_stat import WindowCounter, count_of

    events = tuple(method.events or ())
    where = f"the {command} window {index + 1}"
    with WindowCounter(server.proc.pid, events, server.work_dir) as counter:
        counter.enable()
        try:
            load()
        finally:
            counter.disable()
        readings = counter.stop()
    counted = count_of(readings, events[0], where=where)
    total = int(round(counted.value))
    if total <= 0:
        raise BenchmarkFailedError(f"perf stat counted no {events[0]} in {where}",
                                   hint=f"the counters were not switched on: see {server.work_dir}")
    requests = method.window_requests
    return Window(command, index, requests, total, {}, total / requests,
                  readings=[r.to_dict() for r in readings], threads=counter.threads)


def summarize(measurements: list[Measurement], method: InstructionsMethod, *, top: int = TOP_FUNCTIONS) -> dict:
    """The result's ``instructions`` block: per command every value, median, CV, top functions."""
    commands: dict[str, dict] = {}
    order = list(dict.fromkeys(w.command for m in measurements for w in m.windows))
    for command in order:
        values = [w.per_op for m in measurements for w in m.windows if w.command == command]
        per_server = [statistics.fmean([w.per_op for w in m.windows if w.command == command]) for m in measurements]
        requests = sum(w.requests for m in measurements for w in m.windows if w.command == command)
        fns: dict[str, int] = {}
        for m in measurements:
            for fn, cost in m.top.get(command, {}).items():
                fns[fn] = fns.get(fn, 0) + cost
        rows = sorted(fns.items(), key=lambda kv: (-kv[1], kv[0]))[:top]
        commands[command] = {
            "per_op": round(statistics.median(per_server), 3),
            "mean": round(statistics.fmean(values), 3),
            "cv_pct": round(cv_pct(values), 5),
            "cv_servers_pct": round(cv_pct(per_server), 5),
            "per_server": [round(v, 3) for v in per_server],
            "values": [round(v, 3) for v in values],
            "top_functions": [{"function": fn, "self_per_op": round(cost / requests, 3)} for fn, cost in rows],
        }
        commands[command].update(_code_fields(measurements, command))
    return {
        "method": method.to_dict(),
        "commands": commands,
        "servers": [{"seed": m.seed, "duration_s": m.duration_s, "rehash": m.rehash, "tool_seed": m.tool_seed,
                     "windows": [w.to_dict() for w in m.windows], "dumps": m.dumps} for m in measurements],
    }


def _code_fields(measurements: list[Measurement], command: str) -> dict:
    """The code count of ``command`` (the total without libc's alignment-sensitive string
    routines, instruments.split): median over servers, CVs, per server. Empty when a window has
    no split (never for a window this module measured)."""
    windows = [[w for w in m.windows if w.command == command] for m in measurements]
    if any(w.code_per_op is None for ws in windows for w in ws):
        return {}
    values = [w.code_per_op for ws in windows for w in ws]
    per_server = [statistics.fmean([w.code_per_op for w in ws]) for ws in windows if ws]
    return {
        "code_per_op": round(statistics.median(per_server), 3),
        "code_cv_pct": round(cv_pct(values), 5),
        "code_cv_servers_pct": round(cv_pct(per_server), 5),
        "code_per_server": [round(v, 3) for v in per_server],
    }


def cv_pct(values: list[float]) -> float:
    if len(values) < 2:
        return 0.0
    mean = statistics.fmean(values)
    return 100 * statistics.stdev(values) / mean if mean else 0.0


__all__ = ["PinnedServer", "CallgrindServer", "perf_window", "Measurement", "Window", "measure", "summarize", "subtracted_cost", "window_from",
           "memory_block", "check_prerequisites", "cv_pct"]
