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
layout effects aside.
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


__all__ = ["alignment_sensitive", "strings_cost"]
