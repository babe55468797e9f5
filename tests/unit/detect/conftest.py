"""Make the shared result factory (tests/unit/history/factory.py) importable here."""

import sys
from pathlib import Path

_HISTORY_TESTS = str(Path(__file__).resolve().parent.parent / "history")
if _HISTORY_TESTS not in sys.path:
    sys.path.insert(0, _HISTORY_TESTS)
