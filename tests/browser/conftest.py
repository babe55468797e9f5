"""Browser-test fixtures: a site built from a small history (history_factory.py), served on
127.0.0.1 from a thread, and Debian's chromium driven by Playwright's sync API.

Playwright never downloads a browser here: it launches /usr/bin/chromium. When chromium is
missing the tests FAIL (a skipped browser suite would hide a broken site) and say how to fix it.
"""

from __future__ import annotations

from pathlib import Path

import pytest

import history_factory
from vkbench.site.build import build_site
from vkbench.site.serve import serve_in_thread

REPO = Path(__file__).resolve().parents[2]
CHROMIUM = Path("/usr/bin/chromium")
#: Without the background-networking flags chromium keeps calling home on a closed network.
CHROMIUM_ARGS = [
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync",
]


@pytest.fixture(scope="session")
def chromium_path() -> str:
    if not CHROMIUM.exists():
        pytest.fail(f"{CHROMIUM} is missing: run tools/setup/browser.sh (installs Debian chromium)", pytrace=False)
    return str(CHROMIUM)


@pytest.fixture(scope="session")
def site(tmp_path_factory):
    history = tmp_path_factory.mktemp("history")
    facts = history_factory.write_history(history)
    out = tmp_path_factory.mktemp("site")
    build_site(history, out, reference_dir=REPO / "results" / "reference")
    server, url = serve_in_thread(out)
    yield url, facts
    server.shutdown()
    server.server_close()


@pytest.fixture(scope="session")
def browser(chromium_path):
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=chromium_path, args=CHROMIUM_ARGS)
        yield b
        b.close()


class Problems:
    """Console errors, uncaught exceptions and failed requests seen by one page."""

    def __init__(self, page):
        self.items: list[str] = []
        page.on("console", lambda m: self.items.append(f"console.{m.type}: {m.text}") if m.type == "error" else None)
        page.on("pageerror", lambda e: self.items.append(f"uncaught: {e}"))
        page.on("requestfailed", lambda r: self.items.append(f"request failed: {r.url} ({r.failure})"))
        page.on("response", lambda r: self.items.append(f"HTTP {r.status}: {r.url}") if r.status >= 400 else None)

    def assert_none(self):
        assert not self.items, "\n".join(self.items)


@pytest.fixture
def new_page(browser):
    """new_page(width=1280) -> (page, problems) in a fresh context (no shared state)."""
    contexts = []

    def make(width: int = 1280, height: int = 900):
        ctx = browser.new_context(viewport={"width": width, "height": height}, device_scale_factor=1)
        contexts.append(ctx)
        page = ctx.new_page()
        return page, Problems(page)

    yield make
    for ctx in contexts:
        ctx.close()
