"""Issue 19: a chart never joins two points that are not comparable. A counted series whose
instruction-count method changed (history_factory.write_counted_history) is drawn as two line
pieces, on every metric's chart, with a marker that says which methods; the kernel update of
the shared history breaks its lines the same way."""

from __future__ import annotations

import pytest

import history_factory
from artifacts import screenshot
from vkbench.site.build import build_site
from vkbench.site.serve import serve_in_thread

pytestmark = pytest.mark.browser

#: The drawn line (Okabe-Ito colours) against white, the light grid and the pale noise band.
SATURATED = 60

#: The chart's first line: its gaps as uPlot clipped them, the canvas x of every drawn point,
#: and how saturated the canvas is around the middle of the segment after each point (the line
#: passes through it unless the segment is cut).
READ_CHART = """() => {
  const u = document.querySelector('#view .chart')._uplot;
  const ys = u.data[1], xs = u.data[0], ctx = u.ctx;
  const drawn = [];
  for (let p = 0; p < ys.length; p++) if (ys[p] != null) drawn.push(p);
  const saturation = (x, y) => {
    const d = ctx.getImageData(Math.round(x) - 2, Math.round(y) - 2, 5, 5).data;
    let best = 0;
    for (let k = 0; k < d.length; k += 4) best = Math.max(best, Math.max(d[k], d[k + 1], d[k + 2]) - Math.min(d[k], d[k + 1], d[k + 2]));
    return best;
  };
  const mids = [];
  for (let j = 0; j + 1 < drawn.length; j++) {
    const a = drawn[j], b = drawn[j + 1];
    const x = (u.valToPos(xs[a], 'x', true) + u.valToPos(xs[b], 'x', true)) / 2;
    const y = (u.valToPos(ys[a], 'y', true) + u.valToPos(ys[b], 'y', true)) / 2;
    mids.push(saturation(x, y));
  }
  return {gaps: u.series[1]._paths.gaps, px: drawn.map((p) => Math.round(u.valToPos(xs[p], 'x', true))), mids};
}"""


@pytest.fixture(scope="module")
def counted_site(tmp_path_factory):
    history = tmp_path_factory.mktemp("counted-history")
    facts = history_factory.write_counted_history(history)
    out = tmp_path_factory.mktemp("counted-site")
    build_site(history, out, reference_dir=None)
    server, url = serve_in_thread(out)
    yield url, facts
    server.shutdown()
    server.server_close()


def open_explorer(page, url, metric):
    page.goto(url + f"#/explorer?metric={metric}")
    page.wait_for_selector("#view .chart canvas", timeout=60_000)
    page.wait_for_function("document.getElementById('view').getAttribute('aria-busy') === 'false'")
    page.wait_for_function("document.querySelector('#view .chart')._uplot.series[1]._paths != null")


@pytest.mark.parametrize("metric", ["instructions_per_op", "bytes_per_key", "rps"])
def test_a_method_change_draws_two_line_pieces_and_says_what_changed(counted_site, new_page, metric):
    url, facts = counted_site
    page, problems = new_page()
    open_explorer(page, url, metric)
    chart = page.evaluate(READ_CHART)
    at = history_factory.METHOD_SWITCH_AT
    assert len(chart["px"]) == len(facts["points"]), "every point is drawn"
    # One gap, exactly between the last point of the old method and the first of the new one.
    assert chart["gaps"] == [[chart["px"][at - 1], chart["px"][at]]]
    # On the canvas: the line runs between neighbours everywhere but across the boundary.
    cut = [j for j, s in enumerate(chart["mids"]) if s < SATURATED]
    assert cut == [at - 1], f"saturation at each segment's middle: {chart['mids']}"
    marker = page.locator("#view .marker-env")
    assert marker.count() == 1
    assert marker.inner_text() == "method"
    label = marker.get_attribute("aria-label")
    assert f"Method changed: {history_factory.OLD_METHOD} → {history_factory.NEW_METHOD}" in label
    assert marker.get_attribute("title") == label, "the marker's tooltip says it too"
    assert page.locator("#view .marker-regression, #view .marker-improvement").count() == 0, "no change point"
    if metric == "instructions_per_op":
        screenshot(page, "explorer-method-break")
    problems.assert_none()


def test_an_environment_change_breaks_the_line_too(site, new_page):
    url, facts = site
    page, problems = new_page()
    page.goto(url + f"#/explorer?command=SET&io_threads=1&machine_class=pi-cm4&server=valkey:8.0.1&topology=standalone")
    page.wait_for_selector("#view .chart canvas", timeout=60_000)
    page.wait_for_function("document.querySelector('#view .chart')._uplot.series[1]._paths != null")
    chart = page.evaluate(READ_CHART)
    at = history_factory.KERNEL_UPDATE_AT
    assert chart["gaps"] == [[chart["px"][at - 1], chart["px"][at]]]
    assert [j for j, s in enumerate(chart["mids"]) if s < SATURATED] == [at - 1]
    label = page.locator("#view .marker-env").get_attribute("aria-label")
    assert "Environment changed: kernel 6.6.31 → 6.6.51" in label
    problems.assert_none()
