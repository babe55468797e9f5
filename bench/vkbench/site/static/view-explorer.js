// Explorer: pick a metric, filter by every dimension, see the series on one chart.
import { chartToolbar, createTrendChart } from "./chart.js";
import { loadReference, loadSeries } from "./data.js";
import { compareValues, constantDims, FILTER_DIMS, labelFor, matches, mostCommon, valuesOf, varyingDims } from "./dims.js";
import { DIM_LABELS, dimValueText, fmtDate, fmtWithUnit, METRIC_INFO } from "./format.js";
import { styleFor } from "./palette.js";
import { describeRef, refsForLines } from "./refs.js";
import { listParam, navigate, replaceState } from "./state.js";
import { h, select } from "./ui.js";

/** More lines than this turn a chart into noise; the reader narrows the filters instead. */
export const MAX_LINES = 12;
let filtersOpen = null; // remembered across re-renders (the details element is rebuilt)

/**
 * Defaults for a fresh explorer: one machine class, one command, standalone; then, while more
 * than MAX_LINES series would match, the moving version (unstable) and the most common load
 * settings. The defaults are written into the URL, so the link shows what the reader sees.
 */
function defaults(index, params) {
  if (FILTER_DIMS.some((d) => params.has(d))) return false;
  const all = index.series;
  const pick = (dim, value) => { if (value != null) params.set(dim, String(value)); };
  const current = () => all.filter((s) => matches(s, Object.fromEntries(FILTER_DIMS.map((d) => [d, listParam(params, d)]))));
  const commands = valuesOf(all, "command");
  pick("machine_class", valuesOf(all, "machine_class")[0]);
  pick("command", commands.includes("SET") ? "SET" : commands[0]);
  if (valuesOf(all, "topology").includes("standalone")) pick("topology", "standalone");
  const unstable = valuesOf(current(), "server").filter((v) => /unstable/.test(String(v)));
  if (current().length > MAX_LINES && unstable.length) params.set("server", unstable.join(","));
  for (const dim of ["pipeline", "clients", "data_size", "tool"]) {
    if (current().length <= MAX_LINES) break;
    if (valuesOf(current(), dim).length > 1) pick(dim, mostCommon(current(), dim));
  }
  return true;
}

export async function renderExplorer(root, params, ctx) {
  const { index } = ctx;
  const p = new URLSearchParams(params);
  if (defaults(index, p)) replaceState("explorer", p);
  const metric = index.metrics.includes(p.get("metric")) ? p.get("metric") : "rps";
  const xMode = p.get("x") === "commit" ? "commit" : "date";
  const refMode = ["off", "any"].includes(p.get("ref")) ? p.get("ref") : "match";
  const band = p.get("band") !== "0";
  const filters = Object.fromEntries(FILTER_DIMS.map((d) => [d, listParam(p, d)]));
  const hidden = new Set(listParam(p, "hide") || []);
  const set = (key, value) => { const q = new URLSearchParams(p); if (value == null || value === "") q.delete(key); else q.set(key, value); navigate("explorer", q); };

  const matching = index.series.filter((s) => matches(s, filters));
  const order = (a, b) => FILTER_DIMS.reduce((r, d) => r || compareValues(a.dims[d], b.dims[d]), 0);
  matching.sort(order);
  const shown = matching.slice(0, MAX_LINES);

  // --- filters -----------------------------------------------------------------------------
  const activeCount = FILTER_DIMS.filter((d) => filters[d]).length;
  const details = h("details.filters", { open: filtersOpen ?? window.innerWidth > 760 },
    h("summary", {}, `Filters (${activeCount} active)`));
  details.addEventListener("toggle", () => { filtersOpen = details.open; });
  const single = [];
  for (const dim of FILTER_DIMS) {
    const values = valuesOf(index.series, dim);
    if (values.length < 2) { single.push(`${DIM_LABELS[dim]}: ${dimValueText(dim, values[0])}`); continue; }
    const allowed = filters[dim];
    const fs = h("fieldset.filter", {}, h("legend", {}, DIM_LABELS[dim] || dim));
    values.forEach((v, i) => {
      const id = `f-${dim}-${i}`;
      const checked = !allowed || allowed.includes(String(v));
      const count = index.series.filter((s) => String(s.dims[dim]) === String(v) && matches(s, { ...filters, [dim]: null })).length;
      const box = h("input", { type: "checkbox", id, checked, "data-dim": dim, value: String(v) });
      box.addEventListener("change", () => {
        const now = values.map(String).filter((x) => (x === String(v) ? box.checked : !allowed || allowed.includes(x)));
        if (!now.length) { box.checked = true; return; } // keep at least one value
        set(dim, now.length === values.length ? null : now.join(","));
      });
      fs.append(h("div.check", {}, box, h("label", { for: id }, dimValueText(dim, v), h("span.count", { "aria-label": `${count} series` }, ` ${count}`))));
    });
    if (allowed) fs.append(h("button.linklike", { type: "button", id: `f-${dim}-all`, onclick: () => set(dim, null) }, "all"));
    details.append(fs);
  }
  if (single.length) details.append(h("p.same", {}, "Same for every series: ", single.join(" · ")));

  // --- controls ------------------------------------------------------------------------------
  const controls = h("div.controls",
    {},
    select("metric", "Metric", index.metrics.map((m) => ({ value: m, text: `${m} — ${METRIC_INFO[m].label}` })), metric, (v) => set("metric", v)),
    select("xmode", "X axis", [{ value: "date", text: "Date" }, { value: "commit", text: "Commit order" }], xMode, (v) => set("x", v === "date" ? null : v)),
    select("refmode", "Published figures", [{ value: "match", text: "Same machine class" }, { value: "any", text: "Any hardware" }, { value: "off", text: "Hide" }], refMode, (v) => set("ref", v === "match" ? null : v)),
    h("label.control.check-control", { for: "band" },
      h("input", { type: "checkbox", id: "band", checked: band, onchange: (e) => set("band", e.target.checked ? null : "0") }),
      h("span", {}, "Noise band (median ± CV)")));

  const status = h("p.status", { role: "status" },
    matching.length === 0 ? "No series match these filters."
      : matching.length > shown.length ? `Showing ${shown.length} of ${matching.length} matching series — narrow the filters to see the rest.`
        : `${matching.length} series.`);
  const chartBox = h("div.chart-box");
  const legend = h("ul.legend", { "aria-label": "Series on the chart" });
  const refList = h("div.ref-list");
  const constants = constantDims(shown, FILTER_DIMS.concat(["keyspace", "requests", "client_threads"]).filter((d) => index.dims.includes(d)))
    .filter((c) => c.value !== "–");
  const main = h("div.explorer-main", {}, h("h1.view-title", {}, `${METRIC_INFO[metric].label} over ${xMode === "commit" ? "commits" : "time"}`),
    controls, status, chartBox, legend, refList,
    constants.length ? h("p.same", {}, "All lines: ", constants.map((c) => c.text).join(" · ")) : null);
  root.append(h("div.explorer", {}, details, main));
  if (!shown.length) return;

  // --- chart ---------------------------------------------------------------------------------
  chartBox.append(h("p.loading", {}, "Loading series…"));
  const [seriesData, refData] = await Promise.all([Promise.all(shown.map((s) => loadSeries(s.id, metric))), loadReference()]);
  if (!ctx.isCurrent()) return;
  chartBox.replaceChildren();
  const varying = varyingDims(shown, FILTER_DIMS);
  const lines = shown.map((s, k) => ({ ...styleFor(k), sid: s.id, dims: s.dims, label: labelFor(s, varying), series: seriesData[k] }));
  const refs = refsForLines(refData.references, lines, metric, refMode);
  const from = Number(p.get("from")) || null, to = Number(p.get("to")) || null;
  let chart = null;
  chartBox.append(chartToolbar(() => chart));
  chart = createTrendChart(chartBox, {
    metric, xMode, lines, refs, band,
    title: `${METRIC_INFO[metric].label} of ${lines.length} series`,
    range: from && to ? { from, to } : null,
    commitRepoFor: (l) => index.commit_repos[l.dims.engine],
    onRange: (a, b) => {
      const q = new URLSearchParams(p);
      if (a == null) { q.delete("from"); q.delete("to"); } else { q.set("from", a); q.set("to", b); }
      replaceState("explorer", q);
      for (const [k, v] of [["from", a], ["to", b]]) if (v == null) p.delete(k); else p.set(k, v);
    },
  });
  ctx.onCleanup(() => chart.destroy());

  lines.forEach((l, k) => {
    const short = l.sid.slice(0, 8);
    const col = l.series.m[metric];
    let last = null;
    for (let i = l.series.n - 1; i >= 0 && col; i--) if (l.series.ok[i] === 1 && col.med[i] != null) { last = i; break; }
    const id = `lg-${short}`;
    const box = h("input", { type: "checkbox", id, checked: !hidden.has(short) });
    if (hidden.has(short)) chart.setShown(k, false);
    box.addEventListener("change", () => {
      chart.setShown(k, box.checked);
      if (box.checked) hidden.delete(short); else hidden.add(short);
      p.set("hide", [...hidden].join(","));
      if (!hidden.size) p.delete("hide");
      replaceState("explorer", p);
    });
    const cps = l.series.cp.filter((c) => c.metric === metric).length;
    legend.append(h("li.legend-item", { "data-sid": l.sid },
      box,
      h("label", { for: id },
        h("span.swatch-line", { style: { borderTopColor: l.color, borderTopStyle: l.dash.length ? "dashed" : "solid" }, "aria-hidden": "true" }),
        h("span.legend-label", {}, l.label)),
      h("span.legend-value", {}, last != null ? `${fmtWithUnit(col.med[last], metric)} on ${fmtDate(l.series.t[last])}` : "no valid point"),
      cps ? h("span.badge", {}, `${cps} change point${cps > 1 ? "s" : ""}`) : null));
  });

  if (refs.length) {
    refList.append(h("h2.small-title", {}, "Published figures on this chart (dashed lines)"),
      h("ul", {}, refs.map((r) => h("li", {}, h("strong", {}, `${r.label}: ${fmtWithUnit(r.value, metric)}`), ` — ${describeRef(r.ref)}; ${r.ref.source}${r.ref.published ? `, ${r.ref.published}` : ""}`))));
  }
}
