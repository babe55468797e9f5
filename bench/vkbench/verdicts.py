"""The words of a verdict, and the one direction every verdict has (docs/names.md).

Each comparison names its verdict after what it measured, so a reader sees the unit in the word:

============================  =====================================  ======================
comparison                    worse for the candidate                better for it
============================  =====================================  ======================
A/B throughput (ab.py)        ``slower``                             ``faster``
A/B instruction counts        ``more instructions``                  ``fewer instructions``
A/B memory per key            ``more memory``                        ``less memory``
compare, any metric (stats)   ``worse``                              ``better``
detection over the history    ``regression``                         ``improvement``
============================  =====================================  ======================

``no significant change`` (a change below the MDE or the minimum effect, never "none") and
``inconclusive: ...`` (the MDE reached is above the target) are shared by all. The words are
stored (ab.json, bisects.json, compare's JSON output), so they stay as they are; what is one
here is their meaning: :func:`direction` maps each to detection's ``regression`` /
``improvement``, the one vocabulary of "which way".
"""

from __future__ import annotations

NO_SIGNIFICANT_CHANGE = "no significant change"
NO_CHANGE = "no change"                      # memory per key: the same figure on both sides

FASTER, SLOWER = "faster", "slower"
BETTER, WORSE = "better", "worse"
FEWER_INSTRUCTIONS, MORE_INSTRUCTIONS = "fewer instructions", "more instructions"
LESS_MEMORY, MORE_MEMORY = "less memory", "more memory"

REGRESSION, IMPROVEMENT = "regression", "improvement"

_DIRECTION = {
    SLOWER: REGRESSION, WORSE: REGRESSION, MORE_INSTRUCTIONS: REGRESSION, MORE_MEMORY: REGRESSION,
    FASTER: IMPROVEMENT, BETTER: IMPROVEMENT, FEWER_INSTRUCTIONS: IMPROVEMENT, LESS_MEMORY: IMPROVEMENT,
    REGRESSION: REGRESSION, IMPROVEMENT: IMPROVEMENT,
}


def direction(verdict: str) -> str | None:
    """``regression`` or ``improvement`` for a verdict that moved, None for one that did not
    (no significant change, no change, inconclusive)."""
    return _DIRECTION.get(verdict)


def regressed(verdict: str) -> bool:
    return direction(verdict) == REGRESSION


__all__ = ["NO_SIGNIFICANT_CHANGE", "NO_CHANGE", "FASTER", "SLOWER", "BETTER", "WORSE", "FEWER_INSTRUCTIONS",
           "MORE_INSTRUCTIONS", "LESS_MEMORY", "MORE_MEMORY", "REGRESSION", "IMPROVEMENT", "direction", "regressed"]
