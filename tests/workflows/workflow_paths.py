"""Paths shared by the workflow tests (a plain module: a second conftest.py named module would clash)."""

from __future__ import annotations

from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
WORKFLOWS = REPO / ".github" / "workflows"
FIXTURES = Path(__file__).resolve().parent / "fixtures"

