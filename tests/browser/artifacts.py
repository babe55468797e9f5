"""Screenshots of the browser tests go to test-artifacts/ (repo-relative, gitignored); the best
overview and explorer shots are copied by hand to docs/img/ for the README."""

from __future__ import annotations

import shutil
from pathlib import Path

ARTIFACTS = Path(__file__).resolve().parents[2] / "test-artifacts"


def screenshot(page, name: str) -> Path:
    ARTIFACTS.mkdir(exist_ok=True)
    path = ARTIFACTS / f"{name}.png"
    page.screenshot(path=str(path), full_page=True)
    return path


def copy_artifact(name: str, dest: Path) -> None:  # used by hand to refresh docs/img
    shutil.copyfile(ARTIFACTS / f"{name}.png", dest)
