"""The split of an instruction count into the server's code and libc's alignment-sensitive
string routines: one definition for the nightly count (instruments.valgrind), its series and the
instruction A/B (ab_counts).

libc's vectorized string routines (``__strcasecmp_sse2``, ``__memchr_avx2``, ...) cost a number of
instructions that depends on the alignment of their arguments, so a change that only moves
addresses (code added anywhere shifts the command names in .rodata; malloc placing an argument
elsewhere on a fresh server) moves their count by tens of instructions per command while the
server's own work is the same. Measured on the test commit of tests/sourcebuild:
``__strcasecmp_sse2`` -13 per SET and +38 per GET, for a change of +34 in the server's own code;
and between fresh servers of one build with the same seed by up to 40 per GET (where the heap put
the arguments). The *code count* is the total without them: what a change to the code costs,
layout effects aside. The calls made inside the timer functions' subtrees are left in (their
cost is in the timer functions' inclusive cost, subtracted already): :func:`strings_inside`
finds them in the call graph (docs/instructions.md, "Not subtracted twice").
"""

from __future__ import annotations

import re
from collections.abc import Mapping

_ALIGNMENT_SENSITIVE = re.compile(r"^__(str|mem|stp|wcs|raw)[a-z_]*_(sse2|sse4_[12]|ssse3|avx2?|evex|avx512)[a-z0-9_]*$")


def alignment_sensitive(function: str) -> bool:
    """Is ``function`` (a callgrind name, ``'2`` recursion suffixes allowed) one of libc's
    alignment-sensitive string routines?"""
    return bool(_ALIGNMENT_SENSITIVE.match(function.split("'")[0]))


def strings_cost(self_costs: Mapping[str, int]) -> int:
    """The self cost of the alignment-sensitive string routines among ``self_costs`` (function ->
    instructions)."""
    return sum(cost for fn, cost in self_costs.items() if alignment_sensitive(fn))




def _trampoline(profile, fn: str) -> bool:
    """A PLT stub as callgrind shows it (a release build names it by address): it calls one
    string routine once per call of its own, with a fixed two instructions a call
    (``endbr64; bnd jmp *GOT``)."""
    if alignment_sensitive(fn):
        return False
    out = {callee: n for (caller, callee), n in profile.call_counts.items() if caller == fn and callee != fn}
    calls_in = sum(n for (caller, callee), n in profile.call_counts.items() if callee == fn and caller != fn)
    calls_out = sum(out.values())
    return (len(out) == 1 and alignment_sensitive(next(iter(out))) and calls_out == calls_in
            and profile.self_of(fn) <= 2 * calls_out)


def strings_inside(profile, roots) -> tuple[int, int]:
    """The self cost of the alignment-sensitive string routines called inside the subtrees of
    ``roots`` (the timer functions): (exact, ambiguous). A function is inside when every caller
    is inside or a root; the string routines' calls from inside functions (directly, or through a
    PLT stub: the stub's own instructions per call taken out) are exact. ``ambiguous`` is what
    string routines got from callers reached both from inside and from outside, which the call
    graph cannot split."""
    callers: dict[str, set[str]] = {}
    for caller, callee in profile.calls:
        if caller != callee:
            callers.setdefault(callee, set()).add(caller)
    inside = set(roots)
    changed = True
    while changed:
        changed = False
        for fn, cs in callers.items():
            if fn not in inside and not alignment_sensitive(fn) and cs <= inside:
                inside.add(fn)
                changed = True
    reached = set(roots)          # everything the roots' subtrees may touch
    todo = list(roots)
    while todo:
        fn = todo.pop()
        for caller, callee in profile.calls:
            if caller == fn and callee not in reached:
                reached.add(callee)
                todo.append(callee)
    exact = ambiguous = 0
    for (caller, callee), cost in profile.calls.items():
        if not alignment_sensitive(callee) or caller == callee:
            continue
        ir = cost.get("Ir", 0)
        if caller in inside:
            exact += ir
        elif _trampoline(profile, caller):
            stub_calls = sum(n for (a, b), n in profile.call_counts.items() if a == caller)
            per_call = profile.self_of(caller) / stub_calls if stub_calls else 0
            for (outer, stub), through in profile.calls.items():
                if stub != caller:
                    continue
                n = profile.call_counts.get((outer, stub), 0)
                share = through.get("Ir", 0) - round(per_call * n)
                if outer in inside:
                    exact += share
                elif outer in reached:
                    ambiguous += share
        elif caller in reached:
            ambiguous += ir
    return exact, ambiguous


__all__ = ["alignment_sensitive", "strings_cost", "strings_inside"]
