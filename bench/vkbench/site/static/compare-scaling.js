// io-threads scaling: throughput and p50 against io-threads, one line per version and machine
// class (newest point of each series), with published sweeps (devhands, Raspberry Pi blog).
import { renderAdvicePanel } from "./advice-panel.js";
import { createCategoryChart } from "./chart-category.js";
import { dimSelect, lastValue, loadDims } from "./compare-common.js";
import { loadReference } from "./data.js";
import { compareValues, valuesOf } from "./dims.js";
import { fmtValue, isolate, METRIC_INFO } from "./format.js";
import { REFERENCE_COLOR, styleFor } from "./palette.js";
import { h } from "./ui.js";

const METRICS = ["rps", "p50"];

/** Published sweeps: figures of one source, engine, version and hardware at several io-threads. */
function referenceLines(references, command) {
  const groups = new Map();
  for (const r of references) {
    if (r.dims.topology !== "standalone" || !r.values[command]) continue;
    const key = `${r.source}|${r.engine} ${r.version}|${r.machine_class}|${r.cpu}`;
    if (!groups.has(key)) groups.set(key, { label: `Published: ${r.group || r.source} — ${r.engine} ${r.version}`, byIo: new Map() });
    const g = groups.get(key);
    if (!g.byIo.has(r.dims.io_threads)) g.byIo.set(r.dims.io_threads, r.values[command]); // first figure per io-threads (file order)
  }
  return [...groups.values()].filter((g) => g.byIo.size > 1);
}

export async function renderScaling(root, p, ctx) {
  const { index } = ctx;
  const standalone = index.series.filter((s) => s.dims.topology === "standalone");
  const cls = dimSelect("scaling", p, index, "machine_class", standalone, { allowAll: true });
  const commands = valuesOf(standalone, "command");
  const cmd = dimSelect("scaling", p, index, "command", standalone, { fallback: commands.includes("GET") ? "GET" : commands[0] });
  const load = loadDims("scaling", p, index, standalone);
  const showRefs = p.get("ref") !== "off";
  const series = standalone.filter((s) => (!cls.value || String(s.dims.machine_class) === cls.value)
    && String(s.dims.command) === cmd.value
    && Object.entries(load.values).every(([d, v]) => String(s.dims[d]) === v));

  const refData = await loadReference();
  if (!ctx.isCurrent()) return;
  const refLines = showRefs ? referenceLines(refData.references, cmd.value) : [];
  const ios = new Set(series.map((s) => s.dims.io_threads));
  for (const g of refLines) for (const io of g.byIo.keys()) ios.add(io);
  const categories = [...ios].sort(compareValues);

  const groups = new Map(); // one line per engine+version and machine class
  for (const s of series) {
    const key = `${isolate(s.dims.server)} · ${isolate(s.dims.machine_class)}`;
    if (!groups.has(key)) groups.set(key, new Map());
    groups.get(key).set(s.dims.io_threads, s);
  }
  const keys = [...groups.keys()].sort(compareValues);

  const refToggle = h("label.control.check-control", { for: "c-ref" },
    h("input", { type: "checkbox", id: "c-ref", checked: showRefs, onchange: (e) => {
      const q = new URLSearchParams(p); q.set("tab", "scaling"); if (e.target.checked) q.delete("ref"); else q.set("ref", "off");
      location.hash = `#/compare?${q}`;
    } }), h("span", {}, "Published sweeps"));
  root.append(h("div.controls", {}, cls.el, cmd.el, ...load.els, refToggle));
  if (!keys.length) { root.append(h("p.empty", {}, "No standalone series match.")); return; }

  const chartsRow = h("div.chart-row");
  root.append(chartsRow);
  for (const metric of METRICS) {
    const box = h("div.chart-cell");
    chartsRow.append(box);
    const lines = keys.map((key, k) => ({
      ...styleFor(k), label: key,
      values: categories.map((io) => { const s = groups.get(key).get(io); return s ? lastValue(s, metric)?.v ?? null : null; }),
    }));
    refLines.forEach((g, j) => {
      const values = categories.map((io) => g.byIo.get(io)?.[metric] ?? null);
      if (values.some((v) => v != null)) lines.push({ label: g.label, color: REFERENCE_COLOR, dash: [[6, 4], [2, 3], [10, 4]][j % 3], values, reference: true });
    });
    const chart = createCategoryChart(box, {
      categories, categoryLabel: "io-threads", lines, metric,
      title: `${cmd.value} ${METRIC_INFO[metric].label} vs io-threads`,
    });
    ctx.onCleanup(() => chart.destroy());
  }

  await renderAdvicePanel(root, { cls: cls.value, command: cmd.value });
  if (!ctx.isCurrent()) return;

  // The same numbers as a table (for screen readers, and to copy).
  const table = h("table.data", {},
    h("caption", {}, `${cmd.value}: newest value per io-threads (throughput / p50 latency)`),
    h("thead", {}, h("tr", {}, h("th", { scope: "col" }, "Engine + version · class"), categories.map((io) => h("th", { scope: "col" }, `io ${io}`)))),
    h("tbody", {}, keys.map((key) => h("tr", {}, h("th", { scope: "row" }, key), categories.map((io) => {
      const s = groups.get(key).get(io);
      if (!s) return h("td.muted", {}, "–");
      const r = lastValue(s, "rps"), l = lastValue(s, "p50");
      return h("td", {}, `${fmtValue(r?.v, "rps")} / ${fmtValue(l?.v, "p50")} ms`, r && !r.ok ? h("span.badge.warn", {}, "invalid") : null);
    })))));
  root.append(h("div.table-wrap", {}, table));
  if (refLines.length) root.append(h("p.muted", {}, "Dashed grey lines are published figures on other hardware (see References); compare shapes, not absolute values."));
}
