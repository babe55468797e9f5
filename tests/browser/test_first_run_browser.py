"""The first page of a site built from ONE run (what a newcomer sees after tools/demo.sh): the
run's numbers as bar charts (throughput and latency per configuration, versions side by side),
`unstable` named by its commit, and a 40-hex version that fits its card."""

from __future__ import annotations

import pytest
from factory import make_result, write_result

from artifacts import screenshot
from vkbench.history import HistoryStore
from vkbench.history.ingest import ingest
from vkbench.site.build import build_site
from vkbench.site.serve import serve_in_thread

pytestmark = pytest.mark.browser

UNSTABLE_COMMIT = "c419524c05d7544636d5bc0cc0cb333052b0a517"
SHA_VERSION = "9f8e7d6c5b4a39281706f5e4d3c2b1a098765432"       # a source build named by its full SHA
VERSIONS = {"9.0.0": 1.0, "9.1.2": 1.04, "unstable": 1.07, SHA_VERSION: 1.05}
CONFIGS = [("standalone", 1), ("standalone", 2), ("cluster:3", 1)]


@pytest.fixture(scope="module")
def first_run_site(tmp_path_factory):
    results = tmp_path_factory.mktemp("one-run")
    for version, factor in VERSIONS.items():
        for topology, io in CONFIGS:
            scale = factor * (1.6 if topology.startswith("cluster") else 1.0) * (1.1 if io == 2 else 1.0)
            release = version[0].isdigit() and "." in version
            commit = UNSTABLE_COMMIT if version == "unstable" else (SHA_VERSION if not release else None)
            result = make_result(run_id="demo-1", cell_id=f"{version[:12]}-{topology.replace(':', '')}-io{io}",
                                 rps={"SET": 520_000 * scale, "GET": 560_000 * scale}, version=version, commit=commit,
                                 topology=topology, io_threads=io, machine_class="local",
                                 timestamp="2026-11-28T15:00:00Z")
            result["subject"]["server_version"] = version if release else "255.255.255"
            write_result(results, result)
    history = tmp_path_factory.mktemp("history")
    ingest(HistoryStore(history), [results])
    out = tmp_path_factory.mktemp("site")
    build_site(history, out)
    server, url = serve_in_thread(out)
    yield url
    server.shutdown()
    server.server_close()


def open_overview(page, url):
    page.goto(url + "#/overview")
    page.wait_for_selector("figure.bar-chart", timeout=60_000)   # generous: a loaded machine renders slowly
    page.wait_for_function("document.getElementById('view').getAttribute('aria-busy') === 'false'")


def test_one_run_shows_its_numbers_as_charts_on_the_first_page(first_run_site, new_page):
    page, problems = new_page(width=1280, height=900)
    open_overview(page, first_run_site)
    charts = page.locator("figure.bar-chart")
    # SET and GET, throughput and p50 latency, for the one machine class.
    assert charts.count() == 4
    captions = charts.locator("figcaption").all_inner_texts()
    assert any(c.startswith("SET · Throughput") for c in captions) and any("p50 latency" in c for c in captions)
    first = charts.first
    assert first.locator(".bar-group").count() == len(CONFIGS)
    for group in first.locator(".bar-group").all():
        assert group.locator(".bar-row").count() == len(VERSIONS)            # versions side by side
    widths = [b.bounding_box()["width"] for b in first.locator(".bar").all()]
    assert all(w > 0 for w in widths) and len(set(round(w) for w in widths)) > 1
    # The charts come before the machine-class cards.
    headings = page.locator("main h2").all_inner_texts()
    assert headings.index("Latest run") < headings.index("Machine classes")
    screenshot(page, "site-first-run")
    problems.assert_none()


def test_unstable_shows_its_commit_and_a_long_version_fits_its_card(first_run_site, new_page):
    page, problems = new_page(width=1280, height=900)
    open_overview(page, first_run_site)
    card = page.locator("article.class-card").first
    text = card.inner_text()
    assert f"unstable ({UNSTABLE_COMMIT[:10]})" in text and "255.255.255" not in text
    card_box = card.bounding_box()
    for version in card.locator(".version").all():
        box = version.bounding_box()
        assert box["x"] + box["width"] <= card_box["x"] + card_box["width"] + 0.5, version.inner_text()
    long_one = card.locator(".version", has_text=SHA_VERSION[:12])
    assert long_one.get_attribute("title") == SHA_VERSION                 # the whole version on hover
    overflow = page.evaluate("document.documentElement.scrollWidth - document.documentElement.clientWidth")
    assert overflow <= 0
    problems.assert_none()


def test_a_phone_shows_the_first_run_without_horizontal_overflow(first_run_site, new_page):
    page, problems = new_page(width=375, height=800)
    open_overview(page, first_run_site)
    overflow = page.evaluate("document.documentElement.scrollWidth - document.documentElement.clientWidth")
    assert overflow <= 0, f"{overflow}px wider than the phone"
    problems.assert_none()
