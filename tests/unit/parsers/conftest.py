"""Shared helpers for the parser tests: where the fixtures live and how to read one."""

from __future__ import annotations

from pathlib import Path

import pytest

FIXTURES_DIR = Path(__file__).resolve().parents[2] / "fixtures"


@pytest.fixture
def fixture_text():
    """``fixture_text("valkey-benchmark/x.txt")`` -> the file decoded as parse_file does."""

    def read(relative: str) -> str:
        return (FIXTURES_DIR / relative).read_bytes().decode("utf-8", errors="replace")

    return read
