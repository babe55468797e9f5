"""Paths shared by the workflow tests (a plain module: a second conftest.py named module would clash)."""

from __future__ import annotations

import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
WORKFLOWS = REPO / ".github" / "workflows"
FIXTURES = Path(__file__).resolve().parent / "fixtures"

# workflow_rules.py sits next to the tests; make it importable however pytest is started.
sys.path.insert(0, str(Path(__file__).resolve().parent))
