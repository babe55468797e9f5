"""Instruments other than the wall clock: instructions per operation counted under valgrind's
callgrind (``callgrind.py`` reads its files, ``valgrind.py`` runs the measurement), with
everything that makes a count repeatable pinned by vkbench. See docs/instructions.md."""

from .method import INSTRUMENTS, InstructionsMethod

__all__ = ["INSTRUMENTS", "InstructionsMethod"]
