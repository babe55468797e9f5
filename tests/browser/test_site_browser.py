"""The trend site in Debian chromium: overview, explorer, comparisons; state in the URL; no
console errors or failed requests; no horizontal overflow at phone width."""

from __future__ import annotations

import re

import pytest

from artifacts import screenshot

pytestmark = pytest.mark.browser

ROUTES = ["#/overview", "#/explorer", "#/compare?tab=scaling", "#/compare?tab=versions", "#/compare?tab=topology", "#/references"]


def open_view(page, url, route, ready):
    page.goto(url + route)
    page.wait_for_selector(ready, timeout=60_000)   # generous: a loaded machine renders slowly
    page.wait_for_function("document.getElementById('view').getAttribute('aria-busy') === 'false'")


def test_overview_lists_the_open_incident(site, new_page):
    url, facts = site
    page, problems = new_page()
    requested = []
    page.on("request", lambda r: requested.append(r.url))
    open_view(page, url, "#/overview", "[data-incident='inc-set-io2-x86'] canvas")
    card = page.locator("article.incident[data-incident='inc-set-io2-x86']")
    assert "cloud-x86: -8%" in card.locator("h3").inner_text()
    assert card.locator(".badge.bad").inner_text().startswith("▼ −8.0%")
    commit_links = card.locator(".range a")
    assert commit_links.count() == 2
    bad_commit = facts["detect"]["incidents"][0]["bad"]["commit"]
    # unstable on cloud-x86 is built from a fork: its commits link there, not to upstream
    assert commit_links.nth(1).get_attribute("href") == f"https://github.com/example-fork/valkey/commit/{bad_commit}"
    assert card.locator(".marker-regression").count() == 1, "the change point is marked on the incident chart"
    assert re.search(r"/actions/runs/\d+$", card.locator("a", has_text="after").get_attribute("href"))
    # Machine classes with their newest run, and the improvement.
    assert page.locator(".class-card").count() == 2
    assert page.locator(".class-card", has_text="cloud-x86").locator(".badge.bad").count() == 1
    improvement = page.locator(".improvements li[data-incident='inc-get-io2-pi']")
    assert improvement.count() == 1
    # pi-cm4 builds from a file:// mirror, which has no commit pages: plain text, no guessed link
    assert improvement.locator(".range a").count() == 0 and improvement.locator(".range code").count() == 2
    # Lazy loading: the overview reads only the incident's series (its head and its one year's
    # chunk), never a latency file.
    series_files = sorted(u.split("/data/series/")[1].split("?")[0] for u in requested if "/data/series/" in u)
    sid = facts["regression_sid"]
    assert series_files == [f"{sid}.json", f"{sid}/2026.json"]
    screenshot(page, "overview-desktop")
    problems.assert_none()


def test_overview_shows_the_bisect_culprit(site, new_page):
    """The open incident was bisected: its culprit commit, linked to the repository bisected (the
    fork cloud-x86 builds from, as the range's commits), its subject, effect and the bisect's run."""
    url, facts = site
    page, problems = new_page()
    open_view(page, url, "#/overview", "[data-incident='inc-set-io2-x86'] .culprit")
    culprit = page.locator("article.incident[data-incident='inc-set-io2-x86'] .culprit")
    link = culprit.locator("a", has_text=facts["culprit"][:7])
    assert link.get_attribute("href") == f"https://github.com/example-fork/valkey/commit/{facts['culprit']}"
    text = culprit.inner_text()
    assert "Culprit (bisect, 4 A/B steps)" in text and "server: batch the reply buffer writes" in text
    assert "−8.1% on standalone io2 P16 c50 d3 / SET" in text and "−9.5% .. −6.7%" in text
    assert culprit.locator("a", has_text="bisect run").get_attribute("href").endswith("/actions/runs/9999")
    # Only the bisected incident names a culprit.
    assert page.locator(".culprit").count() == 1
    problems.assert_none()


def test_a_same_build_shift_is_listed_apart_and_counts_as_no_regression(site, new_page):
    """detect.json marks an incident whose last good and first bad runs ran the same build
    (same_build, silenced by detection itself): it is not an open regression of the overview,
    not an improvement, but a shift listed on its own with why it alerts nobody."""
    import copy
    import json

    url, facts = site
    page, problems = new_page()
    detect = copy.deepcopy(facts["detect"])
    shift = copy.deepcopy(detect["incidents"][0])
    shift.update(id="inc-same-build", title="GET, pipeline 16, io-threads 1, local: -9% between 2026-01-13 and 2026-01-14",
                 same_build=True, silenced=True, magnitude=-0.09,
                 annotation={"action": "silence", "automatic": "same-build",
                             "reason": "the same server build ran before and after the change"})
    shift.pop("bisect", None)
    detect["incidents"].append(shift)
    page.route("**/data/detect.json*", lambda route: route.fulfill(
        status=200, content_type="application/json", body=json.dumps(detect)))
    open_view(page, url, "#/overview", ".same-build li[data-incident='inc-same-build']")
    item = page.locator(".same-build li[data-incident='inc-same-build']")
    assert "local: -9%" in item.inner_text() and "open" in item.inner_text()
    assert "no code change caused them" in page.locator("section", has=item).inner_text()
    # Only the real regression is open; the shift is neither a card nor an improvement.
    assert page.locator("article.incident").count() == 1
    assert page.locator(".improvements li[data-incident='inc-same-build']").count() == 0
    assert "1 open regression." in page.locator(".hero").inner_text()
    problems.assert_none()


def test_filter_change_changes_the_chart(site, new_page):
    url, _ = site
    page, problems = new_page()
    open_view(page, url, "#/explorer", ".legend-item")
    # location.hash, not page.url: Playwright learns of in-page URL changes asynchronously.
    assert "machine_class=" in page.evaluate("location.hash"), "defaults are written into the URL"
    before = page.locator(".legend-item").count()
    assert before == 9  # 3 versions x io-threads 1/2/4, SET, one machine class
    page.locator("fieldset.filter label", has_text="io-threads 4").click()
    page.wait_for_function("document.querySelectorAll('.legend-item').length === 6")
    page.wait_for_function("decodeURIComponent(location.hash).includes('io_threads=1,2')", timeout=30_000)
    labels = page.locator(".legend-label").all_inner_texts()
    assert not any("io-threads 4" in label for label in labels)
    assert page.locator(".chart canvas").count() == 1
    # One more filter: one version only -> fewer lines, the label no longer needs the version.
    page.locator("#f-server-0").uncheck()
    page.wait_for_function("document.querySelectorAll('.legend-item').length === 4")
    screenshot(page, "explorer-filtered")
    problems.assert_none()


def test_change_point_and_annotation_markers(site, new_page):
    url, facts = site
    page, problems = new_page()
    open_view(page, url, "#/explorer?command=SET&io_threads=2&machine_class=cloud-x86&topology=standalone", ".legend-item")
    marker = page.locator(".marker-regression")
    assert marker.count() == 1
    assert "Change point (regression" in marker.get_attribute("aria-label")
    assert marker.is_visible()
    open_view(page, url, "#/explorer?command=GET&io_threads=2&machine_class=pi-cm4&topology=standalone", ".legend-item")
    page.wait_for_selector(".marker-improvement")
    assert page.locator(".marker-note").count() == 1, "the incident's annotation is marked"
    assert page.locator(".marker-env").count() == 1, "the kernel update starts a new environment segment"
    # Reference overlay: the Pi blog's io-threads 2 GET figure matches this configuration.
    assert "Raspberry Pi CM4 blog: io-threads 2" in page.locator(".ref-list").inner_text()
    problems.assert_none()


def test_url_carries_the_state(site, new_page):
    url, _ = site
    state = "#/explorer?band=0&command=GET&io_threads=1,4&machine_class=pi-cm4&metric=p99&server=valkey:9.1.2,valkey:unstable&topology=standalone&x=commit"
    page, problems = new_page()
    open_view(page, url, state, ".legend-item")
    assert page.locator("#metric").input_value() == "p99"
    assert page.locator("#xmode").input_value() == "commit"
    assert not page.locator("#band").is_checked()
    checked = page.eval_on_selector_all("fieldset.filter input:checked", "els => els.map(e => e.dataset.dim + '=' + e.value)")
    assert {"io_threads=1", "io_threads=4", "machine_class=pi-cm4", "server=valkey:9.1.2", "server=valkey:unstable", "command=GET"} <= set(checked)
    assert "io_threads=2" not in checked and "server=valkey:8.0.1" not in checked
    labels = page.locator(".legend-label").all_inner_texts()
    assert len(labels) == 4
    # The same link in a fresh browser context shows the same view.
    other, other_problems = new_page()
    open_view(other, url, state, ".legend-item")
    assert other.locator(".legend-label").all_inner_texts() == labels
    assert other.locator("#metric").input_value() == "p99"
    # Zooming writes the range into the URL.
    box = page.locator(".chart .u-over").bounding_box()
    y = box["y"] + box["height"] / 2
    page.mouse.move(box["x"] + box["width"] * 0.2, y)
    page.mouse.down()
    page.mouse.move(box["x"] + box["width"] * 0.6, y, steps=5)
    page.mouse.up()
    page.wait_for_function("location.hash.includes('from=') && location.hash.includes('to=')")
    problems.assert_none()
    other_problems.assert_none()


def test_tooltip_and_keyboard(site, new_page):
    url, _ = site
    page, problems = new_page()
    open_view(page, url, "#/explorer?command=SET&io_threads=4&machine_class=cloud-x86&server=valkey:unstable&topology=standalone", ".legend-item")
    box = page.locator(".chart .u-over").bounding_box()
    page.mouse.move(box["x"] + box["width"] / 2, box["y"] + box["height"] / 2)
    tip = page.locator(".tooltip")
    tip.wait_for(state="visible")
    text = tip.inner_text()
    assert "req/s [" in text, "value with its interval"
    assert "commit " in text and "version 9.2.0" in text and "AMD EPYC" in text
    assert "valid" in text or "INVALID" in text
    # Keyboard: focus the chart, step through points; the tooltip follows and is announced.
    page.locator(".chart").focus()
    page.keyboard.press("Home")
    page.keyboard.press("ArrowRight")
    page.keyboard.press("ArrowRight")
    assert "UTC" in page.locator(".chart [aria-live]").inner_text()
    # Every control has an accessible name.
    unnamed = page.evaluate("""() => [...document.querySelectorAll('input, select, button')].filter(el => {
        const id = el.id && document.querySelector(`label[for="${el.id}"]`);
        return !(id || el.getAttribute('aria-label') || el.closest('label') || el.textContent.trim());
    }).map(el => el.outerHTML)""")
    assert not unnamed
    problems.assert_none()


def test_comparisons(site, new_page):
    url, _ = site
    page, problems = new_page()
    open_view(page, url, "#/compare?tab=scaling", ".chart-cell canvas")
    assert page.locator(".chart-cell").count() == 2
    assert "devhands" in page.locator(".chart-row").inner_text()
    open_view(page, url, "#/compare?tab=versions", "table.versions tbody tr")
    first = page.locator("table.versions").first
    assert "valkey:8.0.1 → valkey:unstable" in first.locator("caption").inner_text()
    assert first.locator("tbody tr").count() == 12
    assert "EC2 Valkey 8.0.1" in page.locator("main").inner_text()
    open_view(page, url, "#/compare?tab=topology&machine_class=pi-cm4", ".rung")
    ladders = page.locator("figure.ladder")
    assert ladders.count() == 2
    assert "cluster of 3" in ladders.nth(0).inner_text() and "3-node cluster" in ladders.nth(1).inner_text()
    problems.assert_none()


@pytest.mark.parametrize("route", ROUTES)
def test_every_view_loads_cleanly(site, new_page, route):
    url, _ = site
    page, problems = new_page()
    open_view(page, url, route, "main#view > div")
    page.wait_for_timeout(150)  # late requests and errors
    assert page.locator(".error").count() == 0
    problems.assert_none()


@pytest.mark.parametrize("route", ROUTES)
def test_phone_width_has_no_horizontal_overflow(site, new_page, route):
    url, _ = site
    page, problems = new_page(width=375, height=800)
    open_view(page, url, route, "main#view > div")
    page.wait_for_timeout(150)
    overflow = page.evaluate("document.documentElement.scrollWidth - document.documentElement.clientWidth")
    assert overflow <= 0, f"{route}: {overflow}px wider than the phone"
    name = route.strip("#/").replace("?tab=", "-") or "overview"
    screenshot(page, f"phone-{name}")
    problems.assert_none()


def test_explorer_screenshot_for_docs(site, new_page):
    url, _ = site
    page, problems = new_page(width=1280, height=820)
    # pi-cm4 GET io-threads 2: an improvement, its annotation, a kernel update and the Pi blog's figures.
    open_view(page, url, "#/explorer?command=GET&io_threads=2&machine_class=pi-cm4&topology=standalone", ".marker-improvement")
    screenshot(page, "explorer-desktop")
    problems.assert_none()


@pytest.mark.parametrize("server, link", [
    # a source build links to the repository it was built from (here a fork on GitHub) ...
    ("valkey:unstable", r"https://github\.com/example-fork/valkey/commit/[0-9a-f]{12}$"),
    # ... a release names no repository: its commit is upstream's
    ("valkey:9.1.2", r"https://github\.com/valkey-io/valkey/commit/[0-9a-f]{12}$"),
])
def test_click_opens_the_commit(site, new_page, server, link):
    url, _ = site
    page, problems = new_page()
    # GitHub is not reachable from here: answer the popup locally and check where it went.
    page.context.route("https://github.com/**", lambda route: route.fulfill(status=200, body="github"))
    open_view(page, url, f"#/explorer?command=SET&io_threads=1&machine_class=cloud-x86&server={server}&topology=standalone", ".legend-item")
    box = page.locator(".chart .u-over").bounding_box()
    page.mouse.move(box["x"] + box["width"] / 2, box["y"] + box["height"] / 2)
    page.locator(".tooltip").wait_for(state="visible")
    with page.context.expect_page() as popup:
        page.mouse.click(box["x"] + box["width"] / 2, box["y"] + box["height"] / 2)
    assert re.match(link, popup.value.url)
    problems.assert_none()


def test_a_commit_without_commit_pages_is_plain_text(site, new_page):
    """pi-cm4's unstable is built from a file:// mirror: the tooltip names the commit, and a click
    opens the workflow run instead of a guessed commit page."""
    url, _ = site
    page, problems = new_page()
    page.context.route("https://github.com/**", lambda route: route.fulfill(status=200, body="github"))
    open_view(page, url, "#/explorer?command=SET&io_threads=1&machine_class=pi-cm4&server=valkey:unstable&topology=standalone", ".legend-item")
    box = page.locator(".chart .u-over").bounding_box()
    page.mouse.move(box["x"] + box["width"] / 2, box["y"] + box["height"] / 2)
    tip = page.locator(".tooltip")
    tip.wait_for(state="visible")
    assert "commit " in tip.inner_text() and "opens the workflow run" in tip.inner_text()
    with page.context.expect_page() as popup:
        page.mouse.click(box["x"] + box["width"] / 2, box["y"] + box["height"] / 2)
    assert re.match(r"https://github\.com/valkey-io/vkbench/actions/runs/\d+$", popup.value.url)
    problems.assert_none()
