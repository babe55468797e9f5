"""The io-threads advice panel next to the scaling chart and the incident's CPU profile view
(d3-flame-graph: before, after, difference) in Debian chromium."""

from __future__ import annotations

import pytest

import insights_factory
from artifacts import screenshot
from vkbench.site.build import build_site
from vkbench.site.serve import serve_in_thread

pytestmark = pytest.mark.browser


@pytest.fixture(scope="module")
def insights_site(tmp_path_factory):
    history = tmp_path_factory.mktemp("ins-history")
    facts = insights_factory.write_history(history, tmp_path_factory.mktemp("ins-results"))
    out = tmp_path_factory.mktemp("ins-site")
    build_site(history, out, reference_dir=insights_factory.REPO / "results" / "reference")
    server, url = serve_in_thread(out)
    yield url, facts
    server.shutdown()
    server.server_close()


def open_view(page, url, route, ready):
    page.goto(url + route)
    page.wait_for_selector(ready, timeout=60_000)   # generous: a loaded machine renders slowly
    page.wait_for_function("document.getElementById('view').getAttribute('aria-busy') === 'false'")


def test_advice_panel_next_to_the_scaling_chart(insights_site, new_page):
    url, _ = insights_site
    page, problems = new_page()
    open_view(page, url, f"#/compare?tab=scaling&machine_class={insights_factory.CLASS}&command=SET", ".advice-panel")
    card = page.locator(f".advice-panel article.advice[data-class='{insights_factory.CLASS}'][data-command='SET']")
    assert card.count() == 1
    sentence = card.locator(".advice-sentence").inner_text()
    assert f"use io-threads 1 on {insights_factory.CLASS}: 2 is 40% slower" in sentence
    assert "the client shares the machine's 2 cores (1 client thread) and io-threads 2 oversubscribes them" in sentence
    assert card.locator("tr.recommended").get_attribute("data-io") == "1"
    assert card.locator("tr[data-io='2'] .badge.warn", has_text="oversubscribed").count() == 1
    assert card.locator(".advice-warnings li[data-code='oversubscribed']").count() == 1
    assert page.locator(".chart-row canvas").count() >= 2, "the scaling charts are drawn beside the advice"
    # Published sweeps for context: the Pi CM4 blog's figures give io-threads 2.
    context = page.locator(".advice-context li[data-class='pi-cm4']").first.inner_text()
    assert "use io-threads 2 on pi-cm4" in context and "oversubscribes" in context
    screenshot(page, "advice-panel")
    problems.assert_none()


def test_incident_profile_flame_graphs(insights_site, new_page):
    url, facts = insights_site
    page, problems = new_page()
    open_view(page, url, "#/overview", f"article.incident[data-incident='{facts['incident']}']")
    link = page.locator(f"article.incident[data-incident='{facts['incident']}'] a.profile-link")
    assert link.count() == 1
    link.click()
    page.wait_for_selector(".flamegraph[data-mode='diff'] svg", timeout=60_000)
    # The function that grew leads the table of changes and is drawn (red) in the difference graph.
    first = page.locator("table.profile-changes tbody tr").first
    assert first.get_attribute("data-function") == "slowHelper"
    assert "▲" in first.inner_text()
    assert page.locator(".flamegraph svg g.frame[name='slowHelper']").count() >= 1
    fill = page.evaluate("""() => { const g = document.querySelector(".flamegraph svg g.frame[name='slowHelper']");
                                    return g && getComputedStyle(g.querySelector('rect')).fill; }""")
    r, g, b = (int(x) for x in fill[fill.index("(") + 1:-1].split(","))
    assert r > b and r > g, f"slowHelper grew, so it is drawn red: {fill}"
    page.wait_for_function("document.querySelector(\".flamegraph g.frame[name='slowHelper'] .d3-flame-graph-label\")?.textContent === 'slowHelper'")
    screenshot(page, "profile-diff")
    # Before: the function is not in the last good build's graph; the tab is in the URL.
    page.locator("a.tab[data-mode='before']").click()
    page.wait_for_selector(".flamegraph[data-mode='before'] svg", timeout=60_000)
    page.wait_for_function("location.hash.includes('mode=before')", timeout=30_000)   # not page.url: updated late
    assert page.locator(".flamegraph svg g.frame[name='slowHelper']").count() == 0
    assert page.locator(".flamegraph svg g.frame[name='processCommand']").count() >= 1
    # Hovering a frame names it and its share in the details line (d3-flame-graph).
    page.locator(".flamegraph svg g.frame[name='readQueryFromClient']").first.hover()
    page.wait_for_function("document.querySelector('.flamegraph-details').textContent.includes('readQueryFromClient')")
    problems.assert_none()


def test_profile_view_without_a_profile_says_how_to_get_one(insights_site, new_page):
    url, _ = insights_site
    page, problems = new_page()
    open_view(page, url, "#/profile?incident=nope", ".view-profile")
    assert "vkbench run --profile" in page.locator("#view").inner_text()
    problems.assert_none()
