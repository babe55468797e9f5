"""The code count (issue 19): the total of a window without libc's alignment-sensitive string
routines, per window, per command in the result, and the method parameter that marks it."""

from __future__ import annotations

import gzip
import hashlib
from dataclasses import asdict
from pathlib import Path

import pytest

from vkbench.instruments import callgrind
from vkbench.instruments.method import InstructionsMethod
from vkbench.errors import UsageError
from vkbench.instruments.split import alignment_sensitive, strings_cost, strings_inside
from vkbench.instruments.valgrind import Measurement, Window, cv_pct, summarize, window_from

FIXTURES = Path(__file__).resolve().parent / "data"
NO_CRON = {"serverCron": 0, "activeExpireCycle": 0}


@pytest.mark.parametrize("name", ["__strcasecmp_sse2", "__strcmp_sse2", "__memchr_avx2", "__memcpy_ssse3",
                                  "__strlen_evex", "__stpcpy_sse2_unaligned", "__memmove_avx_unaligned_erms",
                                  "__strcasecmp_sse2'2", "__wcslen_sse4_1"])
def test_libc_vector_string_routines_are_alignment_sensitive(name):
    assert alignment_sensitive(name)


@pytest.mark.parametrize("name", ["strcasecmp", "processCommand", "__libc_malloc", "dictFind", "__strcasecmp",
                                  "_int_malloc", "siphash", "__memchr"])
def test_the_servers_code_and_plain_libc_are_not(name):
    assert not alignment_sensitive(name)


def test_strings_cost_sums_the_routines_self_cost_only():
    assert strings_cost({"__strcasecmp_sse2": 30, "__strcmp_sse2'2": 5, "processCommand": 100, "strcasecmp": 7}) == 35
    assert strings_cost({}) == 0


def test_a_window_records_the_string_routines_and_its_code_count():
    p = callgrind.parse(gzip.decompress((FIXTURES / "valkey-9.1.2-get-2000.out.gz").read_bytes()).decode())
    window = window_from(p, "get", 0, 2000)
    every_call = sum(c.get("Ir", 0) for fn, c in p.self_cost.items() if alignment_sensitive(fn))
    # The cron run in this window called strchr 22 times and strrchr once (697 instructions):
    # in serverCron's inclusive cost (5271), so left out of strings, not subtracted twice.
    expected = every_call - 697
    assert window.strings == expected > 0                      # GET compares its name: __strcasecmp_sse2
    assert window.code_per_op == pytest.approx((p.total() - 5271 - 95629 - expected) / 2000)
    assert window.code_per_op < window.per_op
    data = window.to_dict()
    assert data["strings"] == expected and data["code_per_op"] == round(window.code_per_op, 3)
    assert data["per_op"] == round(window.per_op, 3)          # the total as before


def test_the_previous_scope_counts_every_call_of_the_string_routines():
    p = callgrind.parse(gzip.decompress((FIXTURES / "valkey-9.1.2-get-2000.out.gz").read_bytes()).decode())
    every_call = sum(c.get("Ir", 0) for fn, c in p.self_cost.items() if alignment_sensitive(fn))
    assert window_from(p, "get", 0, 2000, strings_scope="all").strings == every_call
    assert strings_inside(p, ("serverCron", "activeExpireCycle")) == (697, 0)
    with pytest.raises(UsageError):
        window_from(p, "get", 0, 2000, strings_scope="some")


#: serverCron calls cronHelper, which calls strchr through its PLT stub; a command calls the
#: same stub; beforeSleep calls activeExpireCycle, which calls memcmp directly; printf is
#: reached from both the cron and a command, and calls strlen.
GRAPH = """# callgrind format
version: 1
creator: hand-made
events: Ir
fn=processTimeEvents
0 10
cfn=serverCron
calls=1 0
0 1000
fn=serverCron
0 100
cfn=cronHelper
calls=1 0
0 400
cfn=printf
calls=1 0
0 150
fn=cronHelper
0 50
cfn=0x00000000001889f0
calls=10 0
0 350
fn=0x00000000001889f0
0 30
cfn=__strchr_sse2
calls=15 0
0 480
fn=__strchr_sse2
0 480
fn=processCommand
0 500
cfn=0x00000000001889f0
calls=5 0
0 160
cfn=printf
calls=1 0
0 150
fn=printf
0 200
cfn=__strlen_sse2
calls=2 0
0 100
fn=__strlen_sse2
0 100
fn=beforeSleep
0 60
cfn=activeExpireCycle
calls=1 0
0 90
fn=activeExpireCycle
0 70
cfn=__memcmp_sse2
calls=2 0
0 20
fn=__memcmp_sse2
0 20
totals: 2560
"""


def test_strings_inside_the_timers_are_attributed_through_plt_stubs_and_the_rest_is_ambiguous():
    p = callgrind.parse(GRAPH)
    exact, ambiguous = strings_inside(p, ("serverCron", "activeExpireCycle"))
    # cronHelper's 10 calls through the stub: 350 minus the stub's 2 instructions a call (30
    # for 15 calls) = 330; activeExpireCycle's memcmp 20. printf's strlen (100) is reached from
    # the cron and from processCommand: the graph cannot split it.
    assert (exact, ambiguous) == (330 + 20, 100)


def test_a_window_without_the_split_has_no_code_count():
    window = Window("set", 0, 100, 100_000, NO_CRON, 1000.0)
    assert window.code_per_op is None
    assert "strings" not in window.to_dict() and "code_per_op" not in window.to_dict()


def _measurement(seed: int, totals: list[float], strings_per_op: list[float]) -> Measurement:
    m = Measurement(seed=seed)
    m.windows = [Window("get", i, 100, int(t * 100), NO_CRON, t, int(s * 100))
                 for i, (t, s) in enumerate(zip(totals, strings_per_op))]
    return m


def test_summary_adds_the_code_count_beside_the_unchanged_total():
    """Totals that move with the string routines (as between fresh servers), a code count that does not."""
    method = InstructionsMethod(windows=2, window_requests=100, servers=3)
    ms = [_measurement(1, [1000.0, 1001.0], [200.0, 201.0]),
          _measurement(2, [1020.0, 1021.0], [220.0, 221.0]),
          _measurement(3, [990.0, 991.0], [190.0, 191.0])]
    block = summarize(ms, method)["commands"]["get"]
    assert block["per_server"] == [1000.5, 1020.5, 990.5] and block["per_op"] == 1000.5
    assert block["code_per_server"] == [800.0, 800.0, 800.0] and block["code_per_op"] == 800.0
    assert block["code_cv_servers_pct"] == 0.0 and block["code_cv_pct"] == 0.0
    assert block["cv_servers_pct"] == round(cv_pct([1000.5, 1020.5, 990.5]), 5) > 1.0


def test_summary_of_windows_without_the_split_has_only_the_total():
    m = Measurement(seed=1)
    m.windows = [Window("set", 0, 100, 100_000, NO_CRON, 1000.0)]
    block = summarize([m], InstructionsMethod(windows=1, servers=1))["commands"]["set"]
    assert block["per_op"] == 1000.0
    assert not {"code_per_op", "code_cv_pct", "code_cv_servers_pct", "code_per_server"} & set(block)


def _id_without_counted(method: InstructionsMethod) -> str:
    """The id the same parameters had before ``counted`` existed (method_id's digest without it)."""
    data = asdict(method)
    data.pop("counted")
    data["subtract"] = list(method.subtract)
    return "callgrind-" + hashlib.sha256(repr(sorted(data.items())).encode()).hexdigest()[:10]


def test_the_method_says_it_counts_code_and_its_id_changed_with_it():
    method = InstructionsMethod()
    assert method.counted == "code" and method.to_dict()["counted"] == "code"
    assert method.method_id() != _id_without_counted(method)    # older results: another segment
    assert method.method_id() != InstructionsMethod(counted="total").method_id()
