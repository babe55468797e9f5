"""The overview groups series by data type and says which groups moved (issue 20); the explorer
filters by it. The synthetic history (history_factory) has SET and GET only: one group, string,
with the injected regression and improvement."""

from __future__ import annotations

import pytest

pytestmark = pytest.mark.browser


def test_overview_says_which_data_types_moved_and_links_to_them(site, new_page):
    url, facts = site
    page, problems = new_page()
    page.goto(url + "#/overview")
    page.wait_for_selector("ul.data-types li[data-group='string']", timeout=60_000)
    page.wait_for_function("document.getElementById('view').getAttribute('aria-busy') === 'false'")
    assert page.locator(".group-summary").inner_text().startswith("Moved: string.")
    string = page.locator("ul.data-types li[data-group='string']")
    assert string.locator(".badge.bad").inner_text().startswith("▼ 1 open regression (−8.0%")
    assert string.locator(".badge.good").inner_text().startswith("▲ 1 improvement")
    assert f"{len(facts['sids'])} series" in string.inner_text()        # every series is SET or GET
    string.locator("a", has_text="string").click()
    page.wait_for_function("location.hash.startsWith('#/explorer') && location.hash.includes('group=string')")
    page.wait_for_selector("#view canvas", timeout=60_000)
    page.wait_for_function("document.getElementById('view').getAttribute('aria-busy') === 'false'")
    # one data type in this history: a constant of the view, not a filter to tick
    assert "Data type: string" in page.locator("#view").inner_text()
    problems.assert_none()
