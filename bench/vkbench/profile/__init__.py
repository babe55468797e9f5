"""CPU profiles of the server: recorded with ``perf record -g`` during one extra repetition
(``vkbench run --profile``), stored as folded stacks, compared with :func:`profile_diff`."""

from .diff import DiffRow, profile_diff

__all__ = ["DiffRow", "profile_diff"]
