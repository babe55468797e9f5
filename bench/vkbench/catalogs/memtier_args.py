"""A spec's memtier_benchmark arguments, mapped into vkbench's cell model.

What the model has a field for goes there (clients and threads, pipeline, data size, key range,
commands with ratios and key patterns, test time or requests), so catalog cells have the same
dimensions as every other cell; memtier flags that only shape the generated data (random data,
distinct client seeds) travel as ``tool_args``; flags vkbench itself sets (server, port,
password, output, histogram, percentiles) are dropped; anything else refuses the spec, by name.
"""

from __future__ import annotations

from . import shellwords
from dataclasses import dataclass, field

#: Flags vkbench sets itself; a spec's value would point the tool elsewhere or change the output.
OWNED = {"-s", "--server", "-p", "--port", "-a", "--authenticate", "-S", "--unix-socket", "--json-out-file",
         "-o", "--out-file", "--cluster-mode", "--hide-histogram", "--print-percentiles", "--print-all-runs",
         "--client-stats", "-x", "--protocol", "--tls", "--cert", "--key", "--cacert", "--tls-skip-verify",
         "--sni", "--quiet", "--debug"}
#: Owned flags that take a value.
OWNED_WITH_VALUE = {"-s", "--server", "-p", "--port", "-a", "--authenticate", "-S", "--unix-socket",
                    "--json-out-file", "-o", "--out-file", "--print-percentiles", "-x", "--protocol", "--cert",
                    "--key", "--cacert", "--sni", "--client-stats"}
#: Flags with no model field that change only the generated data: passed through verbatim.
PASSTHROUGH_FLAGS = {"--distinct-client-seed", "--random-data", "-R", "--randomize", "--scan-incremental-iteration"}
PASSTHROUGH_WITH_VALUE = {"--reconnect-interval", "--data-offset", "--expiry-range", "--wait-ratio",
                          "--num-slaves", "--wait-timeout"}
WITH_VALUE = {"--test-time", "-n", "--requests", "-c", "--clients", "-t", "--threads", "--pipeline", "--data-size",
              "-d", "--command", "--command-ratio", "--command-key-pattern", "--key-minimum", "--key-maximum",
              "--key-prefix", "--ratio", "--key-pattern", "--data-size-range", "--data-size-pattern",
              "--data-size-list", "--run-count", "--rate-limiting", "--multi-key-get", "-P"}

MEMTIER_DEFAULT_CLIENTS = 50
MEMTIER_DEFAULT_THREADS = 4
MEMTIER_DEFAULT_DATA_SIZE = 32
MEMTIER_DEFAULT_KEY_MAX = 10_000_000


class Unmappable(ValueError):
    """An argument vkbench cannot honour: the spec is refused with this message."""


@dataclass
class MemtierArgs:
    clients: int = MEMTIER_DEFAULT_CLIENTS          # per thread, as memtier counts them
    threads: int = MEMTIER_DEFAULT_THREADS
    pipeline: int = 1
    data_size: int = MEMTIER_DEFAULT_DATA_SIZE
    test_time: int | None = None
    requests: int | None = None                    # memtier -n: per connection
    all_keys: bool = False                         # memtier -n allkeys
    key_minimum: int | None = None
    key_maximum: int | None = None
    key_prefix: str | None = None
    ratio: str | None = None
    key_pattern: str | None = None
    data_size_range: str | None = None
    data_size_pattern: str | None = None
    data_size_list: str | None = None
    run_count: int | None = None
    rate_limit: int | None = None
    multi_key_get: int | None = None
    commands: list[dict] = field(default_factory=list)
    passthrough: list[str] = field(default_factory=list)


def split_arguments(text: str) -> list[str]:
    try:
        return shellwords.split(text)
    except ValueError as exc:
        raise Unmappable(f"its memtier arguments do not parse: {exc}") from None


def _pairs(argv: list[str]):
    """(flag, value or None) in order; ``--flag=value`` and ``--flag value`` alike."""
    i = 0
    while i < len(argv):
        arg = argv[i]
        if not arg.startswith("-") or arg == "-":
            raise Unmappable(f"stray memtier argument {arg[:60]!r}")
        name, eq, inline = arg.partition("=")
        needs_value = name in WITH_VALUE or name in OWNED_WITH_VALUE or name in PASSTHROUGH_WITH_VALUE
        if eq:
            yield name, inline
        elif needs_value:
            if i + 1 >= len(argv):
                raise Unmappable(f"memtier argument {name} has no value")
            i += 1
            yield name, argv[i]
        else:
            yield name, None
        i += 1


def _int(name: str, value: str | None) -> int:
    try:
        number = int(value or "")
    except ValueError:
        raise Unmappable(f"memtier argument {name} {value!r} is not a whole number") from None
    if number < 0:
        raise Unmappable(f"memtier argument {name} {value!r} is negative")
    return number


def parse_memtier(argv: list[str]) -> MemtierArgs:
    out = MemtierArgs()
    for name, value in _pairs(argv):
        if name in OWNED:
            continue
        if name in PASSTHROUGH_FLAGS:
            out.passthrough.append(name)
        elif name in PASSTHROUGH_WITH_VALUE:
            out.passthrough.append(f"{name}={value}")
        elif name == "--test-time":
            out.test_time = _int(name, value)
        elif name in ("-n", "--requests"):
            if value == "allkeys":
                out.all_keys = True      # one request per key of the range, spread over the connections
            else:
                out.requests = _int(name, value)
        elif name in ("-c", "--clients"):
            out.clients = _int(name, value)
        elif name in ("-t", "--threads"):
            out.threads = _int(name, value)
        elif name in ("--pipeline", "-P"):
            out.pipeline = _int(name, value)
        elif name in ("--data-size", "-d"):
            out.data_size = _int(name, value)
        elif name == "--command":
            out.commands.append({"command": value})
        elif name in ("--command-ratio", "--command-key-pattern"):
            if not out.commands:
                raise Unmappable(f"memtier argument {name} comes before any --command")
            key = "ratio" if name == "--command-ratio" else "key_pattern"
            out.commands[-1][key] = _int(name, value) if key == "ratio" else value
        elif name == "--key-minimum":
            out.key_minimum = _int(name, value)
        elif name == "--key-maximum":
            out.key_maximum = _int(name, value)
        elif name == "--key-prefix":
            out.key_prefix = value
        elif name == "--ratio":
            out.ratio = value
        elif name == "--key-pattern":
            out.key_pattern = value
        elif name == "--data-size-range":
            out.data_size_range = value
        elif name == "--data-size-pattern":
            out.data_size_pattern = value
        elif name == "--data-size-list":
            out.data_size_list = value
        elif name == "--run-count":
            out.run_count = _int(name, value)
        elif name == "--rate-limiting":
            out.rate_limit = _int(name, value)
        elif name == "--multi-key-get":
            out.multi_key_get = _int(name, value)
        else:
            raise Unmappable(f"memtier argument {name} is not mapped into vkbench's cell model")
    if out.clients < 1 or out.threads < 1:
        raise Unmappable("memtier -c and -t must be at least 1")
    return out


def preload_arguments(argv: list[str]) -> list[str]:
    """A preload's arguments minus the flags vkbench sets; anything else is kept verbatim (the
    preload is run as the spec wrote it, vkbench only points it at the servers)."""
    kept: list[str] = []
    for name, value in _pairs(argv):
        if name in OWNED:
            continue
        if not (name in WITH_VALUE or name in PASSTHROUGH_FLAGS or name in PASSTHROUGH_WITH_VALUE):
            raise Unmappable(f"the preload's memtier argument {name} is not known to vkbench")
        if value is None:
            kept.append(name)
        else:   # a short option's value is the next word: memtier reads "-n=5" as "=5"
            kept += [name, value] if not name.startswith("--") else [f"{name}={value}"]
    return kept
