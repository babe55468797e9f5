"""Whether a comparison's evidence can carry a verdict: the MDE it reached against the target.

An interval that excludes zero is not enough: with 4 rounds on a loaded machine an A/B once
called SET "+57.5 % faster" at an MDE of 80 %. A verdict (faster/slower, better/worse, a
confirmed regression, a reproduced one) is given only when the minimum detectable effect
reached is at or below the target; otherwise the answer is "inconclusive", with the MDE and
what would reach the target. ``ab``, ``compare``, confirmations and bisect all word it here.
"""

from __future__ import annotations

INCONCLUSIVE = "inconclusive"
#: The MDE an A/B, a comparison or a confirmation must reach for a verdict, unless told otherwise.
TARGET_MDE = 0.02


def adequate(mde: float | None, target: float | None) -> bool:
    """True when there is no target, or the MDE reached is known and at most the target."""
    if target is None:
        return True
    return mde is not None and mde <= target


def inconclusive(mde: float | None, target: float, *, more: int | None = None, unit: str = "rounds") -> str:
    """``inconclusive: MDE 80.0% > target 2.0%; about 120 more rounds, a quieter runner, or instruction counts``."""
    reached = "MDE unknown (fewer than 2 paired samples)" if mde is None else f"MDE {mde * 100:.1f}% > target {target * 100:.1f}%"
    rounds = f"about {more} more {unit}" if more is not None and more > 0 else f"more {unit}"
    return f"{INCONCLUSIVE}: {reached}; {rounds}, a quieter runner, or instruction counts"


def is_inconclusive(verdict: str | None) -> bool:
    return bool(verdict) and verdict.startswith(INCONCLUSIVE)
