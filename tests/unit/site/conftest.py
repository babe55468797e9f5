"""Fixtures for the site's unit tests: a small history (tests/browser/history_factory.py) and
a site built from it with the repository's reference figures."""

from __future__ import annotations

from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[3]

import history_factory  # noqa: E402

from vkbench.site.build import build_site  # noqa: E402


@pytest.fixture(scope="session")
def small_history(tmp_path_factory) -> tuple[Path, dict]:
    root = tmp_path_factory.mktemp("history")
    facts = history_factory.write_history(root)
    return root, facts


@pytest.fixture(scope="session")
def built_site(small_history, tmp_path_factory):
    root, facts = small_history
    out = tmp_path_factory.mktemp("site")
    report = build_site(root, out, reference_dir=REPO / "results" / "reference")
    return out, report, facts
