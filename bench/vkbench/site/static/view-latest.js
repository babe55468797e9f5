// The first runs: until the series have enough points for a trend, the overview shows the latest
// run's numbers as bar charts, one per machine class, command and metric (throughput, latency):
// each measured configuration (topology, io-threads, ...) with its versions side by side.
import { lastValue } from "./compare-common.js";
import { compareValues, FILTER_DIMS, labelFor, valuesOf, varyingDims } from "./dims.js";
import { fmtValue, METRIC_INFO } from "./format.js";
import { styleFor } from "./palette.js";
import { h, section } from "./ui.js";

/** Fewer points than this in every series: no trend to draw yet, show the numbers. */
export const TREND_MIN_POINTS = 3;

const CONFIG_DIMS = FILTER_DIMS.filter((d) => !["server", "command", "machine_class", "arch"].includes(d));

export function isFirstRuns(index) {
  return index.series.length > 0 && index.series.every((s) => (s.n ?? 0) < TREND_MIN_POINTS);
}

function configKey(s) {
  return JSON.stringify(CONFIG_DIMS.map((d) => s.dims[d]));
}

function barChart(series, metric, versions, title) {
  const info = METRIC_INFO[metric];
  const varying = varyingDims(series, CONFIG_DIMS);
  const groups = new Map();
  for (const s of series) {
    const key = configKey(s);
    if (!groups.has(key)) groups.set(key, { label: varying.length ? labelFor(s, varying) : String(s.dims.topology), rep: s, byVersion: new Map() });
    groups.get(key).byVersion.set(String(s.dims.server), s);
  }
  const ordered = [...groups.values()].sort((a, b) => CONFIG_DIMS.reduce((r, d) => r || compareValues(a.rep.dims[d], b.rep.dims[d]), 0));
  const values = ordered.flatMap((g) => [...g.byVersion.values()].map((s) => lastValue(s, metric)?.v).filter((v) => v != null));
  const max = Math.max(...values, 0) || 1;
  return h("figure.bar-chart", { "data-metric": metric },
    h("figcaption", {}, title, h("span.muted", {}, ` (${info.unit}; ${info.better === "lower" ? "lower" : "higher"} is better)`)),
    ordered.map((g) => h("div.bar-group", { role: "group", "aria-label": g.label },
      h("div.bar-group-label", {}, g.label),
      versions.map((version, k) => {
        const s = g.byVersion.get(version);
        const last = s ? lastValue(s, metric) : null;
        if (!last) return null;
        const pct = Math.max(0.5, (100 * last.v) / max);
        return h("div.bar-row", { title: `${version}: ${fmtValue(last.v, metric)} ${info.unit}${last.ok ? "" : " (flagged invalid)"}` },
          h("span.bar-version", { title: version }, version),
          h("span.bar-track", {}, h(`span.bar${last.ok ? "" : ".invalid"}`, { style: { width: `${pct.toFixed(1)}%`, background: styleFor(k).color } })),
          h("span.bar-value", {}, fmtValue(last.v, metric), last.ok ? "" : " ⚠"));
      }))));
}

/** The section: per machine class, per command, throughput and a latency metric. */
export function latestRunSection(index) {
  const latency = ["p50", "avg", "p99"].find((m) => index.metrics.includes(m));
  const metrics = ["rps", latency].filter((m) => m && index.metrics.includes(m));
  const runs = index.runs ?? 1;
  const sec = section("Latest run",
    h("p.muted", {}, `${runs} run${runs === 1 ? "" : "s"} so far: a trend needs ${TREND_MIN_POINTS} points per series, so here are the newest numbers. `,
      "Each configuration shows its versions side by side; ⚠ marks a result flagged invalid."));
  for (const cls of Object.keys(index.classes)) {
    const ofClass = index.series.filter((s) => String(s.dims.machine_class) === cls);
    const versions = valuesOf(ofClass, "server").map(String);
    const legend = h("p.bar-legend", {}, versions.map((v, k) => h("span.legend-item", { title: v },
      h("span.swatch", { style: { background: styleFor(k).color } }), h("span.legend-text", {}, v))));
    const charts = [];
    for (const command of valuesOf(ofClass, "command")) {
      const ofCommand = ofClass.filter((s) => s.dims.command === command);
      for (const metric of metrics) {
        charts.push(barChart(ofCommand, metric, versions, `${command} · ${METRIC_INFO[metric].label}`));
      }
    }
    sec.append(h("div.latest-class", { "data-class": cls }, h("h3", {}, cls), legend, h("div.bar-grid", {}, charts)));
  }
  return sec;
}
