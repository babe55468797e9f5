"""Recognise real tool failures anywhere in the output and turn them into ParseError.

A failed valkey-/redis-benchmark run often prints an error and nothing else, or an
error in the middle of progress frames (``...avg_msec=-nan\\rError from server: MOVED``).
These checks run on the whole text, before any format parser, so a failure is never
mistaken for "no results" or, worse, parsed around. Each failure gets its own reason
and a next step. ``WARNING: Could not fetch server CONFIG`` on its own is not a failure
(servers that are not Valkey/Redis refuse CONFIG) and is left to the parsers as a warning.
"""

from __future__ import annotations

import re
from typing import Callable, NamedTuple

from vkbench.parsers.text import fail

PASSWORD_HINT = ("pass the server password (vkbench does this itself; for a manual run use -a or --user/--pass, "
                 "memtier_benchmark -a PASSWORD or -a USER:PASSWORD)")


def _is_memtier(text: str) -> bool:
    return "handle error response" in text or "[RUN #" in text or "memtier" in text


class ToolFailure(NamedTuple):
    pattern: re.Pattern[str]
    reason: Callable[[re.Match[str], str], str]  # (match, whole text) -> problem sentence
    hint: str | Callable[[str], str]


def _is_cluster_run(text: str) -> bool:
    """The benchmark printed its cluster header, i.e. it ran with --cluster."""
    return re.search(r"^Cluster has \d+ (?:master|primary) nodes:", text, re.M) is not None


def _moved_reason(match: re.Match[str], text: str) -> str:
    redirect = f"MOVED {match['slot']} {match['target']}"
    if _is_cluster_run(text):
        return f"a request was redirected although the benchmark ran in cluster mode: {redirect}"
    return f"the server is a cluster node and redirected the request: {redirect} (the benchmark did not run in cluster mode)"


def _moved_hint(text: str) -> str:
    if _is_cluster_run(text):
        return (
            "in --cluster mode a custom command's keys must use the {tag} placeholder "
            "(e.g. SET {tag}:__rand_int__ v) so the benchmark routes them by slot (redis/redis#13482)"
        )
    if _is_memtier(text):
        return "use memtier's --cluster-mode / topology cluster"
    return "use --cluster / topology cluster"


# Order matters: the first match wins, most specific first.
FAILURES: tuple[ToolFailure, ...] = (
    ToolFailure(
        re.compile(r"Invalid cluster: (?P<count>\d+) node\(s\)"),
        lambda m, _: f"the benchmark rejected the cluster: Invalid cluster: {m['count']} node(s)",
        "this redis-benchmark refuses a one-primary cluster in --cluster mode (fixed by valkey PR #266); "
        "use valkey-benchmark 8.0 or newer, or a cluster with more primaries",
    ),
    ToolFailure(
        re.compile(r"NOAUTH Authentication required\.?(?=[\s\S]*failed to fetch CONFIG)"),
        lambda m, _: "the server refused the benchmark's CONFIG fetch: NOAUTH Authentication required",
        PASSWORD_HINT + "; if a password was given, this redis-benchmark (5.0.x, before redis PR #6051) "
        "does not send it for CONFIG GET: use a newer benchmark",
    ),
    ToolFailure(
        re.compile(r"Could not connect to (?:Redis|server|Valkey) at (?P<addr>\S+?): (?P<why>[^\n]+)"
                   r"|Connection error: (?P<why2>[^\n]+)"),
        lambda m, _: f"could not connect to the server at {m['addr'] or '?'}: {(m['why'] or m['why2']).strip()}",
        "check that the server is running and listens on that host/port "
        "(vkbench starts it itself: look at the server log)",
    ),
    ToolFailure(
        re.compile(r"(?P<error>WRONGPASS[^\n\]]*|ERR invalid password[^\n\]]*)"),
        lambda m, _: f"the server rejected the credentials: {m['error'].strip()}",
        "check the password and the ACL user (vkbench passes its configured credentials; "
        "for a manual run use -a or --user/--pass)",
    ),
    ToolFailure(
        re.compile(r"NOAUTH Authentication required"),
        lambda m, _: "the server refused the benchmark: NOAUTH Authentication required",
        PASSWORD_HINT,
    ),
    ToolFailure(
        re.compile(r"error response: -(?P<error>READONLY[^\n]*)"),
        lambda m, _: f"writes went to a read-only replica: {m['error'].strip()}",
        "send writes to the primary: a read_from: replicas cell must only read (tests: [get], or a ratio 0:N)",
    ),
    ToolFailure(
        re.compile(r"(?:Error from server(?: \S+)?: |error response: -)MOVED (?P<slot>\d+) (?P<target>\S+)"),
        _moved_reason,
        _moved_hint,
    ),
    ToolFailure(
        re.compile(r"Error from server(?: \S+)?: (?P<error>[^\n]+)|replied with error:\s*\n(?P<error2>[^\n]+)"
                   r"|handle error response: -(?P<error3>[^\n]+)"),
        lambda m, _: f"the server returned an error: {(m['error'] or m['error2'] or m['error3']).strip()}",
        "check the benchmarked command and its arguments, and the server log",
    ),
)


#: Every FAILURES pattern contains one of these literals: text without any is searched no further
#: (a plain substring test is much faster on megabytes than the patterns' alternations).
FAILURE_WORDS = ("Invalid cluster", "NOAUTH", "Could not connect to ", "Connection error: ", "WRONGPASS",
                 "ERR invalid password", "error response: -", "Error from server", "replied with error:")


def raise_on_tool_error(text: str, source: str) -> None:
    """Raise ParseError if the output shows the tool failed; return quietly otherwise."""
    if not any(word in text for word in FAILURE_WORDS):
        return
    # Progress frames are separated by \r; an error can follow one on the same line.
    flat = text.replace("\r", "\n")
    for failure in FAILURES:
        match = failure.pattern.search(flat)
        if match:
            hint = failure.hint(flat) if callable(failure.hint) else failure.hint
            raise fail(source, failure.reason(match, flat), hint=hint)
