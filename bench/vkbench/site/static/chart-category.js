// A small uPlot chart over categories (io-threads 1, 2, 4, 8 ...): one line per group, with
// uPlot's own legend (live values). Reference groups are drawn dashed and grey-toned.
import { fmtAxis, METRIC_INFO } from "./format.js";
import { h } from "./ui.js";

/* global uPlot */

/** lines: [{label, color, dash, values: [v | null per category], reference}] */
export function createCategoryChart(container, { categories, categoryLabel, lines, metric, title, height = 280 }) {
  const wrap = h("div.chart.category-chart", { role: "img", "aria-label": `${title}. The table below lists the values.` });
  container.append(wrap);
  const xs = categories.map((_, i) => i);
  const info = METRIC_INFO[metric];
  const u = new uPlot({
    width: Math.max(200, container.clientWidth || 500),
    height,
    title,
    scales: { x: { time: false, range: [-0.3, categories.length - 0.7] }, y: { range: (u, min, max) => [0, (max ?? 1) * 1.1] } },
    axes: [
      { values: (u, splits) => splits.map((x) => (Number.isInteger(x) && categories[x] != null ? String(categories[x]) : "")), splits: () => xs, label: categoryLabel, labelSize: 20 },
      { values: (u, splits) => splits.map((v) => fmtAxis(v, metric)), size: 56, label: `${info.label} (${info.unit})`, labelSize: 20 },
    ],
    series: [
      { label: categoryLabel, value: (u, x) => (x == null ? "–" : String(categories[x])) },
      ...lines.map((l) => ({
        label: l.label, stroke: l.color, dash: l.dash, width: l.reference ? 1.25 : 2, spanGaps: true,
        points: { size: l.reference ? 6 : 7, fill: l.reference ? "#fff" : l.color },
        value: (u, v) => (v == null ? "–" : fmtAxis(v, metric)),
      })),
    ],
    legend: { live: false }, // a key, not a readout: the table below has the numbers
    cursor: { drag: { x: false, y: false } },
  }, [xs, ...lines.map((l) => l.values)], wrap);
  const ro = new ResizeObserver(() => {
    const w = Math.max(200, container.clientWidth);
    if (Math.abs(w - u.width) > 1) u.setSize({ width: w, height });
  });
  ro.observe(container);
  return { u, destroy() { ro.disconnect(); u.destroy(); } };
}
