"""Parsers: turn any real output of valkey-benchmark, redis-benchmark or memtier_benchmark
into normalized :class:`~vkbench.parsers.record.Record` objects.

Public entry point: :func:`vkbench.parsers.parse_output` (see ``dispatch.py``).
"""

from vkbench.parsers.dispatch import parse_file, parse_output

__all__ = ["parse_file", "parse_output"]
