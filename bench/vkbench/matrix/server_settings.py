"""Which server settings a cell's ``extra_server_args`` may change (docs/security.md).

A cell reaches a self-hosted runner (the A/B and bisect workflows take one from a dispatch
form), and its ``extra_server_args`` end up as directives in the server's config file. So a cell
may tune how the server performs (threads, memory, encodings, persistence behaviour) but never
what protects it or where it reads and writes: auth (requirepass, users and ACLs), binding and
protected mode, ports and TLS, modules, any path (dir, dbfilename, logfile, ...), includes,
renamed commands, replication targets. Everything not on the allow-list below is refused with
the setting named; values are short single lines.

The workflows' input check (``vkbench ci inputs``, :mod:`vkbench.ci.inputs`) applies the same
rule to a dispatched cell, with :data:`CELL_INPUT`, the one-line JSON alphabet a dispatch input
may use (``vkbench bisect-requests`` writes only cells that pass it). The module uses the
standard library only; ``python3 server_settings.py CELL_JSON`` still checks one cell.
"""

from __future__ import annotations

import json
import re
import sys

#: A cell as a dispatch input: one line of JSON in a plain alphabet (no shell or workflow-command
#: character: $, backquote, quote, ;, |, &, <, >, backslash, newline), bounded.
CELL_INPUT = re.compile(r'[{][]A-Za-z0-9"{}:,._+=/@ [-]*[}]', re.ASCII)   # fullmatch
CELL_INPUT_MAX = 2000

#: Settings a cell may change, by purpose. Names are Valkey/Redis config names (lowercase).
ALLOWED: dict[str, frozenset[str]] = {
    "threads and event loop": frozenset({
        "io-threads-do-reads", "events-per-io-thread", "prefetch-batch-max-size", "hz", "dynamic-hz",
        "active-expire-effort", "activerehashing", "jemalloc-bg-thread", "tcp-backlog", "tcp-keepalive",
        "timeout", "maxclients", "busy-reply-threshold", "lua-time-limit",
    }),
    "memory and eviction": frozenset({
        "maxmemory", "maxmemory-policy", "maxmemory-samples", "maxmemory-eviction-tenacity",
        "maxmemory-clients", "lfu-log-factor", "lfu-decay-time", "activedefrag", "active-defrag-ignore-bytes",
        "active-defrag-threshold-lower", "active-defrag-threshold-upper", "active-defrag-cycle-min",
        "active-defrag-cycle-max", "active-defrag-max-scan-fields", "lazyfree-lazy-eviction",
        "lazyfree-lazy-expire", "lazyfree-lazy-server-del", "lazyfree-lazy-user-del",
        "lazyfree-lazy-user-flush", "replica-lazy-flush", "client-output-buffer-limit",
        "client-query-buffer-limit", "proto-max-bulk-len", "databases",
    }),
    "encodings": frozenset({
        "hash-max-listpack-entries", "hash-max-listpack-value", "hash-max-ziplist-entries",
        "hash-max-ziplist-value", "list-max-listpack-size", "list-max-ziplist-size", "list-compress-depth",
        "set-max-intset-entries", "set-max-listpack-entries", "set-max-listpack-value",
        "zset-max-listpack-entries", "zset-max-listpack-value", "zset-max-ziplist-entries",
        "zset-max-ziplist-value", "hll-sparse-max-bytes", "stream-node-max-bytes", "stream-node-max-entries",
    }),
    "persistence behaviour (never its paths)": frozenset({
        "save", "appendonly", "appendfsync", "no-appendfsync-on-rewrite", "auto-aof-rewrite-percentage",
        "auto-aof-rewrite-min-size", "aof-use-rdb-preamble", "aof-rewrite-incremental-fsync",
        "rdb-save-incremental-fsync", "rdbcompression", "rdbchecksum", "aof-timestamp-enabled",
        "stop-writes-on-bgsave-error", "rdb-del-sync-files",
    }),
    "replication and cluster timing": frozenset({
        "repl-backlog-size", "repl-backlog-ttl", "repl-diskless-sync", "repl-diskless-sync-delay",
        "repl-diskless-sync-max-replicas", "repl-diskless-load", "repl-timeout", "repl-ping-replica-period",
        "repl-disable-tcp-nodelay", "cluster-node-timeout",
    }),
    "diagnostics": frozenset({
        "latency-tracking", "latency-monitor-threshold", "slowlog-log-slower-than", "slowlog-max-len", "loglevel",
    }),
}
ALLOWED_NAMES: frozenset[str] = frozenset().union(*ALLOWED.values())

#: Refused with a reason (everything else not allowed is refused as "not on the allow-list").
_REFUSED: list[tuple[re.Pattern, str]] = [
    (re.compile(r"^(requirepass|masterauth|masteruser|primaryauth|primaryuser|user|aclfile|acl-pubsub-default|acllog-max-len)$"),
     "it changes authentication or ACLs"),
    (re.compile(r"^(bind|bind-source-addr|protected-mode|unixsocket|unixsocketperm)$"), "it changes what the server listens on"),
    (re.compile(r"^(port|tls-.*|cluster-port|cluster-announce-.*|replica-announce-.*)$"), "it changes ports, TLS or announced addresses"),
    (re.compile(r"^(loadmodule|enable-module-command|enable-debug-command|enable-protected-configs)$"), "it loads code or opens admin commands"),
    (re.compile(r"^(include|rename-command)$"), "it changes the config file or the command table"),
    (re.compile(r"^(replicaof|slaveof|cluster-enabled|cluster-config-file)$"), "it changes the topology the benchmark set up"),
    (re.compile(r"^(dir|dbfilename|appendfilename|appenddirname|logfile|pidfile|daemonize|supervised|syslog-.*)$|(file|dir|path)$"),
     "it names a path or changes how the process runs"),
    (re.compile(r"^io-threads$"), "io_threads is a field of the cell (a dimension of its series)"),
]

#: Longest value, and what a value may not hold (C0, DEL and C1 controls: a newline would start
#: another directive in the config file).
MAX_VALUE = 256
_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f]")
_NAME = re.compile(r"^[a-z][a-z0-9-]{0,63}$")


class ServerSettingError(ValueError):
    """One refused setting; the message names it."""


def refusal_reason(name: str) -> str | None:
    for pattern, reason in _REFUSED:
        if pattern.search(name):
            return reason
    return None


def check_server_args(args: list[str]) -> list[str]:
    """``args`` (``["--maxmemory", "1gb", "--save", '""']``) if every setting may be changed by a
    cell; else :class:`ServerSettingError` naming the first setting refused and why."""
    if not isinstance(args, list) or not all(isinstance(a, str) for a in args):
        raise ServerSettingError("extra_server_args must be a list of strings")
    if len(args) > 64:
        raise ServerSettingError(f"extra_server_args has {len(args)} items; at most 64")
    current = None
    for arg in args:
        if _CONTROL.search(arg):
            raise ServerSettingError(f"extra_server_args {arg[:60]!r}: control characters (a newline, an escape) are not allowed")
        if len(arg) > MAX_VALUE:
            raise ServerSettingError(f"extra_server_args {arg[:40]!r}...: longer than {MAX_VALUE} characters")
        if arg.startswith("--"):
            # config names are case-insensitive in the server: check the lowercase form
            name = arg[2:].lower()
            if not _NAME.match(name):
                raise ServerSettingError(f"extra_server_args {arg!r} is not a setting name (--name, letters, digits and -)")
            reason = refusal_reason(name)
            if reason is not None:
                raise ServerSettingError(f"server setting {name!r} may not be changed by a cell: {reason}")
            if name not in ALLOWED_NAMES:
                raise ServerSettingError(f"server setting {name!r} is not on the allow-list of settings a cell may change "
                                         "(tuning, memory, encodings, persistence behaviour; docs/security.md)")
            current = name
        elif current is None:
            raise ServerSettingError(f"extra_server_args {arg!r} does not follow a --setting (write e.g. --maxmemory 1gb)")
    return args


def check_cell_json(text: str) -> None:
    """The ``extra_server_args`` of one cell given as JSON (what the workflows pass)."""
    try:
        cell = json.loads(text)
    except ValueError as exc:
        raise ServerSettingError(f"the cell is not JSON: {exc}") from None
    if not isinstance(cell, dict):
        raise ServerSettingError("the cell must be a JSON object")
    check_server_args(cell.get("extra_server_args", []))


def main(argv: list[str]) -> int:
    """``python3 server_settings.py CELL_JSON``: exit 0, or 2 with the reason on stdout."""
    if len(argv) != 1:
        print("usage: server_settings.py CELL_JSON")
        return 2
    if not argv[0]:
        return 0
    try:
        check_cell_json(argv[0])
    except ServerSettingError as exc:
        print(exc)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
