"""A series spanning two calendar years is two chunk files (data/series/<sid>/<year>.json) that
the browser loads after the series' head and concatenates: the chart draws every point, and the
change point, annotation and environment markers (indexes over the whole series) sit on the
right points, in either year."""

from __future__ import annotations

from datetime import datetime, timezone

import pytest

import history_factory
from vkbench.site.build import build_site
from vkbench.site.serve import serve_in_thread

pytestmark = pytest.mark.browser

#: 12 nights in 2026, 18 in 2027: the improvement (run 12) is the first point of 2027, the
#: regression (run 20) and the kernel update (run 25) are later in 2027.
START = datetime(2026, 12, 20, 2, 0, tzinfo=timezone.utc)


@pytest.fixture(scope="module")
def two_year_site(tmp_path_factory):
    history = tmp_path_factory.mktemp("two-year-history")
    facts = history_factory.write_history(history, start=START)
    out = tmp_path_factory.mktemp("two-year-site")
    build_site(history, out, reference_dir=None)
    server, url = serve_in_thread(out)
    yield url, facts, out
    server.shutdown()
    server.server_close()


#: The chart's first line: how many points it draws, and the canvas x (CSS px) of each drawn
#: point and of every marker by kind.
READ_CHART = """() => {
  const u = document.querySelector('#view .chart')._uplot;
  const xs = u.data[0], ys = u.data[1];
  const drawn = [];
  for (let p = 0; p < ys.length; p++) if (ys[p] != null) drawn.push(u.valToPos(xs[p], 'x'));
  const markers = [...document.querySelectorAll('#view .chart [data-kind]')].map((m) => [m.dataset.kind, parseFloat(m.style.left)]);
  return {drawn, all: xs.map((x) => u.valToPos(x, 'x')), markers};
}"""


def open_series(page, url, dims: dict, metric: str = "rps"):
    q = "&".join(f"{k}={v}" for k, v in dims.items())
    page.goto(url + f"#/explorer?metric={metric}&{q}")
    page.wait_for_selector("#view .chart canvas", timeout=60_000)
    page.wait_for_function("document.getElementById('view').getAttribute('aria-busy') === 'false'")
    page.wait_for_function("document.querySelector('#view .chart')._uplot.series[1]._paths != null")
    return page.evaluate(READ_CHART)


def test_a_series_over_two_years_draws_every_point_and_its_markers(two_year_site, new_page):
    url, facts, out = two_year_site
    sid = facts["regression_sid"]
    assert sorted(p.name for p in (out / "data" / "series" / sid).iterdir()) == [
        "2026.json", "2026.latency.json", "2027.json", "2027.latency.json"]
    page, problems = new_page()
    requested = []
    page.on("request", lambda r: requested.append(r.url.split("/data/series/")[-1].split("?")[0]) if "/data/series/" in r.url else None)
    chart = open_series(page, url, {"command": "SET", "io_threads": 2, "machine_class": "cloud-x86",
                                    "server": "valkey:unstable", "topology": "standalone"})
    assert sorted(requested) == [f"{sid}.json", f"{sid}/2026.json", f"{sid}/2027.json"], "head, then both years"
    assert len(chart["drawn"]) == history_factory.RUNS, "every point of both years is drawn"
    at = history_factory.REGRESSION["at"]
    (regression,) = [x for kind, x in chart["markers"] if kind == "regression"]
    assert regression == pytest.approx(chart["all"][at], abs=0.5), "the change point sits on its point, in 2027"
    # The tooltip of that point names its run and commit (decoded from the 2027 chunk's dictionaries).
    page.evaluate(f"() => {{ const u = document.querySelector('#view .chart')._uplot; u.setCursor({{left: u.valToPos(u.data[0][{at}], 'x'), top: u.valToPos(u.data[1][{at}], 'y')}}); }}")
    tip = page.locator(".tooltip")
    tip.wait_for(state="visible")
    bad = facts["points"][sid][at]
    assert bad["commit"][:7] in tip.inner_text()
    # A latency metric: the latency chunks of both years, concatenated the same way.
    chart = open_series(page, url, {"command": "SET", "io_threads": 2, "machine_class": "cloud-x86",
                                    "server": "valkey:unstable", "topology": "standalone"}, metric="p99")
    assert len(chart["drawn"]) == history_factory.RUNS
    assert {f"{sid}/2026.latency.json", f"{sid}/2027.latency.json"} <= set(requested)
    problems.assert_none()


def test_markers_at_the_turn_of_the_year_and_after(two_year_site, new_page):
    """pi-cm4: the improvement is the first point of 2027, the kernel update later in 2027."""
    url, facts, _ = two_year_site
    page, problems = new_page()
    chart = open_series(page, url, {"command": "GET", "io_threads": 2, "machine_class": "pi-cm4",
                                    "server": "valkey:unstable", "topology": "standalone"})
    assert len(chart["drawn"]) == history_factory.RUNS
    kinds = dict(chart["markers"]) if len({k for k, _ in chart["markers"]}) == len(chart["markers"]) else None
    assert kinds is not None, chart["markers"]
    assert kinds["improvement"] == pytest.approx(chart["all"][history_factory.IMPROVEMENT["at"]], abs=0.5)
    assert kinds["note"] == pytest.approx(chart["all"][history_factory.IMPROVEMENT["at"]], abs=0.5)
    assert kinds["env"] == pytest.approx(chart["all"][history_factory.KERNEL_UPDATE_AT], abs=0.5)
    problems.assert_none()


#: Every point of a series as data.js decodes it (head + chunks + latency chunks), value by value.
DECODE = """async (sid) => {
  const data = await import('./assets/app/data.js');
  const s = await data.loadSeries(sid, 'p99');
  const pts = [];
  for (let i = 0; i < s.n; i++) {
    const info = data.pointInfo(s, i, null);
    pts.push([s.t[i], s.ok[i], s.commits[s.c[i]], s.versions[s.v[i]], s.fps[s.fp[i]].id, s.flags[s.fl[i]],
              info.runUrl, s.repos ? s.repos[s.r[i]] : null, s.m.rps.med[i], s.m.rps.lo[i], s.m.p99.hi[i]]);
  }
  return {n: s.n, pts, cp: s.cp, seg: s.seg, bounds: s.bounds, more: s.more};
}"""


@pytest.mark.parametrize("which", ["regression_sid", "improvement_sid"])
def test_the_browser_decodes_the_chunks_as_the_python_reference_does(two_year_site, new_page, which):
    """data.js concatenating the chunks gives, point for point, what series_data.combine gives."""
    from vkbench.site.series_data import load_series

    url, facts, out = two_year_site
    sid = facts[which]
    page, problems = new_page()
    page.goto(url + "#/references")
    page.wait_for_function("document.getElementById('view').getAttribute('aria-busy') === 'false'")
    got = page.evaluate(DECODE, sid)
    main, latency = load_series(out / "data" / "series", sid)
    t, acc = [], main["t0"]
    for d in main["dt"]:
        acc += d
        t.append(acc)
    expected = [[t[i], main["ok"][i], main["commits"][main["c"][i]], main["versions"][main["v"][i]], main["fps"][main["fp"][i]]["id"],
                 main["flags"][main["fl"][i]], main["run_prefix"] + main["runs"][i] if main["runs"][i] else None,
                 main["repos"][main["r"][i]] if "r" in main else None, main["m"]["rps"]["med"][i], main["m"]["rps"]["lo"][i],
                 latency["m"]["p99"]["hi"][i]] for i in range(main["n"])]
    assert got["n"] == main["n"] == history_factory.RUNS
    assert got["pts"] == expected
    assert [p[6] for p in got["pts"]] == [p["workflow_run_url"] for p in facts["points"][sid]]
    assert (got["cp"], got["seg"], got["bounds"], got["more"]) == (main["cp"], main["seg"], main["bounds"], main["more"])
    problems.assert_none()
