// The trend chart: uPlot (canvas, fast with long series) plus what a reader of benchmark
// trends needs on top: a tooltip with the interval, commit, environment and validity; change
// points, annotations and environment changes as vertical markers; the line broken where the
// measuring environment or method changed (points on either side are not comparable); the noise band; reference
// figures as dashed lines; zoom (drag), pan (shift+drag, buttons, keys) and click-through.
import { pointInfo } from "./data.js";
import { fmtAxis, fmtDate, fmtDateTime, fmtPct, fmtWithUnit, METRIC_INFO, shortSha } from "./format.js";
import { REFERENCE_COLOR } from "./palette.js";
import { h, safeHref } from "./ui.js";

/* global uPlot */

/** Mark the first chart on screen: tools/bench_site.py reads this (time to interactive). */
function markFirstChart() {
  const perf = (window.__vkbench ||= {});
  if (perf.firstChart == null) requestAnimationFrame(() => { perf.firstChart ??= performance.now(); });
}

/**
 * Align several series on one x axis. Points of one workflow run share an x (the run's first
 * timestamp), so a vertical slice of the chart is one run and the tooltip lists every series
 * in it; points without a run URL keep their own time. In commit order, x is the run's rank.
 */
function align(lines, metric, xMode) {
  const keyOf = (s, i) => (s.runs[i] ? s.run_prefix + s.runs[i] : `t${s.t[i]}`);
  const firstT = new Map();
  for (const l of lines) {
    const s = l.series;
    for (let i = 0; i < s.n; i++) {
      const k = keyOf(s, i), t = firstT.get(k);
      if (t === undefined || s.t[i] < t) firstT.set(k, s.t[i]);
    }
  }
  const keys = [...firstT.keys()].sort((a, b) => firstT.get(a) - firstT.get(b) || (a < b ? -1 : 1));
  const posOf = new Map(keys.map((k, i) => [k, i]));
  const ts = keys.map((k) => firstT.get(k));
  for (let i = 1; i < ts.length; i++) if (ts[i] <= ts[i - 1]) ts[i] = ts[i - 1] + 1; // strictly increasing x
  const xs = xMode === "commit" ? ts.map((_, i) => i) : ts;
  const ys = lines.map((l) => {
    const s = l.series, col = s.m[metric];
    const y = new Array(ts.length).fill(null);
    const idx = new Int32Array(ts.length).fill(-1);
    const pos = new Int32Array(s.n);
    for (let i = 0; i < s.n; i++) {
      const p = posOf.get(keyOf(s, i));
      pos[i] = p;
      idx[p] = i;
      // Invalid points stay off the line (they are drawn as ×): one bad run must not look like a trend.
      if (col && s.ok[i] === 1) y[p] = col.med[i];
    }
    l.idx = idx;
    l.pos = pos;
    l.breaks = breaksOf(l, y);
    return y;
  });
  return { ts, xs, ys };
}

/**
 * Where a line must not be drawn: at every segment boundary whose points are not comparable
 * (another environment fingerprint or instruction-count method: the series file's `bounds`
 * with `cut`). Each break is the pair of chart positions it lies between: the last drawn point
 * before the boundary and the first one from it on (invalid and missing points are not drawn,
 * so the line would otherwise join across them).
 */
function breaksOf(line, y) {
  const s = line.series, out = [];
  for (const b of s.bounds || []) {
    if (!b.cut || b.i <= 0 || b.i >= s.n) continue;
    const at = line.pos[b.i];
    let a = at - 1, c = at;
    while (a >= 0 && y[a] == null) a--;
    while (c < y.length && y[c] == null) c++;
    if (a >= 0 && c < y.length) out.push({ i: b.i, a, b: c, text: b.text });
  }
  return out;
}

function median(values) {
  const v = values.filter((x) => x != null).sort((a, b) => a - b);
  if (!v.length) return null;
  const m = v.length >> 1;
  return v.length % 2 ? v[m] : (v[m - 1] + v[m]) / 2;
}

/** Regimes between change points and environment changes, each with its median level. */
function regimes(line, metric) {
  const s = line.series, col = s.m[metric];
  if (!col) return [];
  const cuts = new Set([0, s.n]);
  for (const cp of s.cp) if (cp.metric === metric) cuts.add(cp.i);
  for (const i of s.seg) cuts.add(i);
  const sorted = [...cuts].filter((i) => i >= 0 && i <= s.n).sort((a, b) => a - b);
  const out = [];
  for (let k = 0; k + 1 < sorted.length; k++) {
    const [a, b] = [sorted[k], sorted[k + 1]];
    if (b <= a) continue;
    const level = median(col.med.slice(a, b).filter((_, j) => s.ok[a + j] === 1));
    if (level != null) out.push({ a, b: b - 1, level });
  }
  return out;
}

function nearestLine(u, lines, idx, top) {
  let best = null, bestD = Infinity;
  lines.forEach((l, k) => {
    if (!u.series[k + 1].show) return;
    const i = l.idx[idx];
    if (i < 0) return;
    const v = l.series.m[u._metric]?.med[i];
    if (v == null) return;
    const d = top == null ? 0 : Math.abs(u.valToPos(v, "y") - top);
    if (d < bestD) { bestD = d; best = { line: l, k, i }; }
  });
  return best;
}

function linkOf(hit, commitRepoFor) {
  if (!hit) return null;
  const info = pointInfo(hit.line.series, hit.i, commitRepoFor(hit.line));
  return safeHref(info.commitUrl) || safeHref(info.runUrl);
}

function tooltipContent(u, lines, idx, hit, commitRepoFor) {
  const metric = u._metric;
  const rows = [];
  const t = hit ? hit.line.series.t[hit.i] : null;
  rows.push(h("div.tt-date", {}, fmtDateTime(t)));
  lines.forEach((l, k) => {
    const i = l.idx[idx];
    if (i < 0 || !u.series[k + 1].show) return;
    const col = l.series.m[metric];
    if (!col) return;
    const ok = l.series.ok[i] === 1;
    const interval = col.lo[i] != null && col.hi[i] != null ? ` [${fmtAxis(col.lo[i], metric)} – ${fmtAxis(col.hi[i], metric)}]` : "";
    rows.push(h("div.tt-row" + (hit && hit.k === k ? ".tt-focus" : ""), {},
      h("span.swatch", { style: { background: l.color } }),
      h("span.tt-label", {}, l.label),
      h("span.tt-value", {}, `${fmtWithUnit(col.med[i], metric)}${interval}${ok ? "" : " ✗ invalid"}`)));
  });
  if (hit) {
    const info = pointInfo(hit.line.series, hit.i, commitRepoFor(hit.line));
    const facts = [
      info.commit ? `commit ${shortSha(info.commit)}` : null,
      info.version ? `version ${info.version}` : null,
    ].filter(Boolean).join(" · ");
    rows.push(h("div.tt-meta", {}, facts));
    if (info.env.label) rows.push(h("div.tt-meta", {}, info.env.label));
    rows.push(h("div.tt-meta" + (info.valid ? "" : ".tt-bad"), {},
      info.valid ? (info.flags.length ? `valid; flags: ${info.flags.join(", ")}` : "valid, no flags") : `INVALID: ${info.flags.join(", ") || "see the run"}`));
    const cp = hit.line.series.cp.find((c) => c.i === hit.i && c.metric === metric);
    if (cp) rows.push(h("div.tt-meta.tt-cp", {}, `change point: ${cp.dir} ${fmtPct(cp.mag)}`));
    const where = info.commitUrl ? "the commit" : info.runUrl ? "the workflow run" : null;
    if (where) rows.push(h("div.tt-hint", {}, `click or Enter opens ${where}`));
  }
  return rows;
}

/**
 * Draw a trend chart into `container`.
 * opts: {metric, xMode, lines: [{label, color, dash, series, sid}], refs: [{label, value}],
 *        band, range: {from, to} | null, onRange(from, to), commitRepoFor(line), height, compact, title}
 */
export function createTrendChart(container, opts) {
  const { metric, lines, xMode = "date", refs = [], band = true, compact = false } = opts;
  const commitRepoFor = opts.commitRepoFor || (() => null);
  const { ts, xs, ys } = align(lines, metric, xMode);
  const info = METRIC_INFO[metric];

  const wrap = h("div.chart", {
    tabindex: "0", role: "group",
    "aria-label": `${opts.title || info.label}: ${lines.length} series, ${fmtDate(ts[0])} to ${fmtDate(ts[ts.length - 1])}. ` +
      "Left and right arrows step through points, Enter opens the commit, Shift+arrows pan, plus and minus zoom, 0 resets.",
  });
  const plot = h("div.chart-plot");
  const tip = h("div.tooltip", { role: "presentation", hidden: true });
  const live = h("div.sr-only", { "aria-live": "polite" });
  wrap.append(plot, tip, live);
  container.append(wrap);

  let currentHit = null; // the point the tooltip describes (nearest series at the cursor)
  let keyboardActive = false; // announce tooltips only when the reader steps with keys
  const tToX = (t) => {
    if (xMode !== "commit") return t;
    let lo = 0, hi = ts.length - 1; // binary search: nearest rank of a time
    while (lo < hi) { const mid = (lo + hi) >> 1; if (ts[mid] < t) lo = mid + 1; else hi = mid; }
    return lo;
  };
  const xToT = (x) => (xMode === "commit" ? ts[Math.max(0, Math.min(ts.length - 1, Math.round(x)))] : x);
  const refValues = refs.map((r) => r.value).filter((v) => v != null);

  const drawBands = (u) => {
    if (!band) return;
    const ctx = u.ctx;
    ctx.save();
    ctx.beginPath();
    ctx.rect(u.bbox.left, u.bbox.top, u.bbox.width, u.bbox.height);
    ctx.clip();
    lines.forEach((l, k) => {
      const cv = l.series.noise?.[metric];
      if (!cv || !u.series[k + 1].show) return;
      ctx.fillStyle = l.color + "22";
      for (const r of regimes(l, metric)) {
        const x0 = u.valToPos(xs[l.pos[r.a]], "x", true), x1 = u.valToPos(xs[l.pos[r.b]], "x", true);
        const y0 = u.valToPos(r.level * (1 + cv), "y", true), y1 = u.valToPos(r.level * (1 - cv), "y", true);
        ctx.fillRect(x0, y0, Math.max(x1 - x0, 2), y1 - y0);
      }
    });
    ctx.restore();
  };

  const drawOverlays = (u) => {
    const ctx = u.ctx, px = uPlot.pxRatio;
    ctx.save();
    ctx.beginPath();
    ctx.rect(u.bbox.left, u.bbox.top, u.bbox.width, u.bbox.height);
    ctx.clip();
    // Invalid points: an × in the series colour, off the line.
    ctx.setLineDash([]);
    lines.forEach((l, k) => {
      const col = l.series.m[metric];
      if (!col || !u.series[k + 1].show) return;
      ctx.strokeStyle = l.color;
      ctx.lineWidth = 1.5 * px;
      const r = 3.5 * px;
      for (let i = 0; i < l.series.n; i++) {
        if (l.series.ok[i] === 1 || col.med[i] == null) continue;
        const x = u.valToPos(xs[l.pos[i]], "x", true), y = u.valToPos(col.med[i], "y", true);
        ctx.beginPath();
        ctx.moveTo(x - r, y - r); ctx.lineTo(x + r, y + r);
        ctx.moveTo(x + r, y - r); ctx.lineTo(x - r, y + r);
        ctx.stroke();
      }
    });
    // Published reference figures: dashed horizontal lines with their label.
    ctx.font = `${11 * px}px system-ui, sans-serif`;
    ctx.setLineDash([6 * px, 4 * px]);
    ctx.strokeStyle = REFERENCE_COLOR;
    ctx.fillStyle = REFERENCE_COLOR;
    ctx.lineWidth = 1 * px;
    ctx.textAlign = "left";
    ctx.textBaseline = "alphabetic";
    refs.forEach((r, k) => {
      const y = u.valToPos(r.value, "y", true);
      ctx.beginPath(); ctx.moveTo(u.bbox.left, y); ctx.lineTo(u.bbox.left + u.bbox.width, y); ctx.stroke();
      // Labels alternate right and left so close figures do not print over each other.
      const text = `${r.label}: ${fmtAxis(r.value, metric)}`;
      const right = k % 2 === 0;
      const w = ctx.measureText(text).width;
      const x = right ? u.bbox.left + u.bbox.width - 4 * px - w : u.bbox.left + 4 * px;
      const ty = right ? y - 5 * px : y + 14 * px; // left labels sit under their line, clear of marker labels
      ctx.fillStyle = "rgba(255,255,255,0.85)";
      ctx.fillRect(x - 2 * px, ty - 10 * px, w + 4 * px, 13 * px);
      ctx.fillStyle = REFERENCE_COLOR;
      ctx.fillText(text, x, ty);
    });
    ctx.restore();
    placeMarkers(u);
  };

  // Vertical markers are DOM elements over the canvas: they can be found, focused and read.
  const over = () => uplot.over;
  const markers = [];
  const addMarker = (x, kind, text, title, href) => {
    href = safeHref(href);
    const el = h(href ? "a" : "div", {
      class: `marker marker-${kind}`, title, "aria-label": title, ...(href ? { href, target: "_blank", rel: "noopener" } : {}),
      dataset: { kind },
    }, h("span.marker-label", {}, text));
    markers.push({ el, x });
  };
  const placeMarkers = (u) => {
    const w = u.over.clientWidth;
    for (const m of markers) {
      const left = u.valToPos(m.x, "x");
      m.el.style.left = `${left}px`;
      m.el.hidden = !(left >= 0 && left <= w);
    }
  };

  const initialX = opts.range ? [tToX(opts.range.from), tToX(opts.range.to)] : null;
  let rangeTimer = null;
  const options = {
    width: Math.max(200, container.clientWidth || 600),
    height: opts.height || 360,
    legend: { show: false },
    scales: {
      x: { time: xMode !== "commit" },
      y: {
        range: (u, min, max) => {
          const lo = Math.min(min ?? Infinity, ...refValues), hi = Math.max(max ?? -Infinity, ...refValues);
          if (!Number.isFinite(lo) || !Number.isFinite(hi)) return [0, 1];
          const pad = (hi - lo) * 0.08 || Math.abs(hi) * 0.1 || 1;
          return [Math.max(0, lo - pad), hi + pad];
        },
      },
    },
    axes: [
      {
        space: compact ? 70 : 60,
        ...(xMode === "commit" ? {
          values: (u, splits) => splits.map((x) => {
            const i = Math.round(x);
            const l = lines.find((ln) => ln.idx[i] >= 0);
            return l ? shortSha(l.series.commits[l.series.c[l.idx[i]]]) || fmtDate(ts[i]) : "";
          }),
        } : {}),
      },
      { values: (u, splits) => splits.map((v) => fmtAxis(v, metric)), size: 56, label: compact ? null : `${info.label} (${info.unit})`, labelSize: 20 },
    ],
    // Missing and invalid points are spanned (the line goes on across them); the only gaps are
    // the breaks at incomparable segment boundaries, in canvas pixels as uPlot clips them.
    series: [{}, ...lines.map((l) => ({
      label: l.label, stroke: l.color, dash: l.dash, width: 1.75, spanGaps: false, points: { size: 5 },
      gaps: (u) => l.breaks.map((g) => [Math.round(u.valToPos(xs[g.a], "x", true)), Math.round(u.valToPos(xs[g.b], "x", true))])
        .filter((g) => g[1] > g[0]),
    }))],
    cursor: {
      drag: { x: true, y: false, setScale: true },
      focus: { prox: 24 },
      bind: {
        mousedown: (u, targ, handler) => (e) => {
          if (e.shiftKey || e.button === 1) { startPan(e); return null; }
          return handler(e);
        },
      },
    },
    focus: { alpha: 0.35 },
    hooks: {
      drawAxes: [drawBands],
      draw: [drawOverlays],
      setCursor: [(u) => showTip(u)],
      setScale: [(u, key) => {
        if (key !== "x" || !opts.onRange) return;
        clearTimeout(rangeTimer);
        rangeTimer = setTimeout(() => {
          const { min, max } = u.scales.x;
          const full = min <= xs[0] && max >= xs[xs.length - 1];
          opts.onRange(full ? null : Math.round(xToT(min)), full ? null : Math.round(xToT(max)));
        }, 200);
      }],
    },
  };

  const uplot = new uPlot(options, [xs, ...ys], plot);
  uplot._metric = metric;
  wrap._uplot = uplot; // for the browser tests: the drawn paths and their gaps

  // Markers: change points (this metric), annotations, environment changes.
  lines.forEach((l) => {
    const s = l.series;
    for (const cp of s.cp) {
      if (cp.metric !== metric) continue;
      const info0 = pointInfo(s, cp.i, commitRepoFor(l));
      const sign = cp.dir === "regression" ? "▼" : "▲";
      // Counted metrics move by tenths of a percent: "+0%" would hide the step the marker shows.
      const small = Math.abs(cp.mag) < 0.01;
      addMarker(xs[l.pos[cp.i]], cp.dir === "regression" ? "regression" : "improvement",
        `${sign} ${fmtPct(cp.mag, small ? 2 : 0)}`,
        `Change point (${cp.dir}, ${fmtPct(cp.mag, small ? 2 : 1)}) in ${l.label} at ${fmtDate(s.t[cp.i])}${info0.commit ? `, commit ${shortSha(info0.commit)}` : ""}`,
        info0.commitUrl || info0.runUrl);
    }
    for (const n of s.notes || []) addMarker(xs[l.pos[n.i]], "note", "✎", `Annotation: ${n.text}`, null);
    // Segment boundaries: what changed (environment, method; a baseline reset), in words.
    for (const b of s.bounds || []) {
      if (b.i <= 0 || b.i >= s.n) continue;
      const label = { env: "env", method: "method", reset: "reset" }[b.kind] || "env";
      const kind = b.kind === "reset" ? "reset" : "env";
      const broken = b.cut ? " (the line breaks here: the points before and after are not comparable)" : "";
      addMarker(xs[l.pos[b.i]], kind, label, `${b.text[0].toUpperCase()}${b.text.slice(1)} in ${l.label} at ${fmtDate(s.t[b.i])}${broken}`, null);
    }
  });
  // One marker per kind and position is enough when several series share it.
  const seen = new Set();
  for (const m of markers.slice()) {
    const key = `${m.el.dataset.kind}@${m.x}`;
    if (seen.has(key)) { markers.splice(markers.indexOf(m), 1); continue; }
    seen.add(key);
    over().append(m.el);
  }
  placeMarkers(uplot);

  if (initialX) uplot.setScale("x", { min: initialX[0], max: initialX[1] });

  function showTip(u) {
    const idx = u.cursor.idx;
    if (idx == null || u.cursor.left < 0) { tip.hidden = true; currentHit = null; return; }
    currentHit = nearestLine(u, lines, idx, u.cursor.top);
    tip.replaceChildren(...tooltipContent(u, lines, idx, currentHit, commitRepoFor));
    tip.hidden = false;
    const plotLeft = u.over.offsetLeft, plotTop = u.over.offsetTop;
    const x = plotLeft + u.cursor.left, y = plotTop + (u.cursor.top ?? 0);
    const tw = tip.offsetWidth, cw = wrap.clientWidth;
    tip.style.left = `${Math.max(0, Math.min(cw - tw, x + 14 > cw - tw ? x - tw - 14 : x + 14))}px`;
    tip.style.top = `${Math.max(0, y - 10)}px`;
    if (keyboardActive) live.textContent = tip.innerText.replace(/\n+/g, ". ");
  }

  // Click opens the commit (or the run) of the nearest point; a drag is a zoom, not a click.
  let downAt = null;
  uplot.over.addEventListener("mousedown", (e) => { downAt = [e.clientX, e.clientY]; });
  uplot.over.addEventListener("click", (e) => {
    if (!downAt || Math.hypot(e.clientX - downAt[0], e.clientY - downAt[1]) > 4) return;
    const url = linkOf(currentHit, commitRepoFor);
    if (url) window.open(url, "_blank", "noopener");
  });

  function startPan(e) {
    const x0 = e.clientX, { min, max } = uplot.scales.x, w = uplot.over.clientWidth;
    const move = (ev) => {
      const d = ((ev.clientX - x0) / w) * (max - min);
      uplot.setScale("x", { min: min - d, max: max - d });
    };
    const up = () => { window.removeEventListener("mousemove", move); window.removeEventListener("mouseup", up); };
    window.addEventListener("mousemove", move);
    window.addEventListener("mouseup", up);
  }

  const pan = (frac) => {
    const { min, max } = uplot.scales.x, d = (max - min) * frac;
    uplot.setScale("x", { min: min + d, max: max + d });
  };
  const zoom = (factor) => {
    const { min, max } = uplot.scales.x, c = (min + max) / 2, half = ((max - min) / 2) * factor;
    uplot.setScale("x", { min: c - half, max: c + half });
  };
  const reset = () => uplot.setScale("x", { min: xs[0], max: xs[xs.length - 1] });

  // Keyboard: step through points (announced), pan, zoom, open.
  wrap.addEventListener("keydown", (e) => {
    const u = uplot;
    const step = (dir) => {
      let i = u.cursor.idx ?? (dir > 0 ? -1 : xs.length);
      do { i += dir; } while (i >= 0 && i < xs.length && !lines.some((l, k) => u.series[k + 1].show && l.idx[i] >= 0));
      if (i < 0 || i >= xs.length) return;
      if (xs[i] < u.scales.x.min || xs[i] > u.scales.x.max) pan(((xs[i] - u.scales.x.min) / (u.scales.x.max - u.scales.x.min)) - 0.5);
      const hit = nearestLine(u, lines, i, null);
      const v = hit ? hit.line.series.m[metric]?.med[hit.i] : null;
      u.setCursor({ left: u.valToPos(xs[i], "x"), top: v != null ? u.valToPos(v, "y") : 10 });
    };
    keyboardActive = true;
    const handled = {
      ArrowRight: () => (e.shiftKey ? pan(0.2) : step(1)),
      ArrowLeft: () => (e.shiftKey ? pan(-0.2) : step(-1)),
      "+": () => zoom(0.5), "=": () => zoom(0.5), "-": () => zoom(2), "0": reset, Home: reset,
      Enter: () => { const url = linkOf(currentHit, commitRepoFor); if (url) window.open(url, "_blank", "noopener"); },
      Escape: () => { tip.hidden = true; },
    }[e.key];
    if (handled) { e.preventDefault(); handled(); }
  });
  wrap.addEventListener("mousemove", () => { keyboardActive = false; });

  const ro = new ResizeObserver(() => {
    const w = Math.max(200, container.clientWidth);
    if (Math.abs(w - uplot.width) > 1) uplot.setSize({ width: w, height: options.height });
  });
  ro.observe(container);
  markFirstChart();

  return {
    u: uplot, pan, zoom, reset,
    setShown(k, show) { uplot.setSeries(k + 1, { show }); },
    destroy() { ro.disconnect(); clearTimeout(rangeTimer); uplot.destroy(); wrap.remove(); },
  };
}

/** Zoom and pan buttons: the same actions as drag and keys, for touch screens and keyboards. */
export function chartToolbar(getChart) {
  const btn = (text, label, fn) => h("button.tool", { type: "button", "aria-label": label, title: label, onclick: () => { const c = getChart(); if (c) fn(c); } }, text);
  return h("div.toolbar", { role: "toolbar", "aria-label": "Chart zoom and pan" },
    btn("◀", "Pan left", (c) => c.pan(-0.25)),
    btn("▶", "Pan right", (c) => c.pan(0.25)),
    btn("+", "Zoom in", (c) => c.zoom(0.5)),
    btn("−", "Zoom out", (c) => c.zoom(2)),
    btn("Reset", "Show everything", (c) => c.reset()),
    h("span.toolbar-hint", {}, "Drag to zoom · Shift+drag to pan · click a point for its commit"));
}

