// Version vs version: every configuration measured with both versions, the newest values and
// the change in each metric with its confidence (do the intervals overlap?). Below it, the
// published EC2 vs ElastiCache table in the same layout.
import { dimSelect, lastValue } from "./compare-common.js";
import { loadReference } from "./data.js";
import { compareValues, FILTER_DIMS, labelFor, valuesOf, varyingDims } from "./dims.js";
import { fmtPct, fmtValue, isBetter, METRIC_INFO } from "./format.js";
import { describeRef } from "./refs.js";
import { navigate } from "./state.js";
import { h, select } from "./ui.js";

const METRICS = ["rps", "avg", "min", "p50", "p95", "p99", "max"];

function keyOf(s) {
  const d = { ...s.dims };
  delete d.server; delete d.engine; delete d.version;
  return JSON.stringify(d);
}

/** The change from a to b and how sure we are: significant when the intervals do not overlap. */
export function change(a, b, metric) {
  if (!a || !b || !a.v) return null;
  const delta = b.v / a.v - 1;
  const overlap = a.lo == null || b.lo == null || !(b.lo > a.hi || b.hi < a.lo);
  return { delta, significant: !overlap, better: isBetter(metric, delta) };
}

function changeCell(c, metric, a, b) {
  if (!c) return h("td.muted", {}, "–");
  const cls = !c.significant ? "same" : c.better ? "better" : "worse";
  const mark = !c.significant ? "≈" : c.better ? "▲" : "▼";
  const words = !c.significant ? "within noise" : c.better ? "better" : "worse";
  return h(`td.change.${cls}`, { title: `${fmtValue(a.v, metric)} → ${fmtValue(b.v, metric)} ${METRIC_INFO[metric].unit}` },
    h("span.delta", {}, `${mark} ${fmtPct(c.delta)}`), h("span.sr-only", {}, ` ${words}`),
    h("span.pair", {}, `${fmtValue(a.v, metric)} → ${fmtValue(b.v, metric)}`));
}

function referenceTables(references) {
  // Published tables that compare engines or versions on one machine (EC2 vs ElastiCache, Valkey 8 launch).
  const groups = new Map();
  for (const r of references) {
    const g = r.group || r.source;
    if (!groups.has(g)) groups.set(g, []);
    groups.get(g).push(r);
  }
  const out = [];
  for (const [name, refs] of groups) {
    if (new Set(refs.map((r) => `${r.engine} ${r.version}`)).size < 2 || new Set(refs.map((r) => r.machine_class)).size > 1) continue;
    const commands = [...new Set(refs.flatMap((r) => Object.keys(r.values)))];
    for (const command of commands) {
      const rows = refs.filter((r) => r.values[command]);
      const metrics = METRICS.filter((m) => rows.some((r) => r.values[command][m] != null));
      const base = rows[0];
      out.push(h("div.table-wrap", {}, h("table.data.versions", {},
        h("caption", {}, `Published: ${name} — ${command} (change vs the first row; single best runs, no intervals)`),
        h("thead", {}, h("tr", {}, h("th", { scope: "col" }, "Scenario"), metrics.map((m) => h("th", { scope: "col" }, m)))),
        h("tbody", {}, rows.map((r, i) => h("tr", {}, h("th", { scope: "row" }, r.label, h("span.muted.block", {}, describeRef(r))),
          metrics.map((m) => {
            const v = r.values[command][m], b = base.values[command][m];
            if (v == null) return h("td.muted", {}, "–");
            if (i === 0 || b == null) return h("td", {}, fmtValue(v, m));
            const d = v / b - 1;
            return h(`td.change.${d === 0 ? "same" : isBetter(m, d) ? "better" : "worse"}`, {}, h("span.delta", {}, fmtPct(d)), h("span.pair", {}, fmtValue(v, m)));
          })))))));
    }
  }
  return out;
}

export async function renderVersions(root, p, ctx) {
  const { index } = ctx;
  const servers = valuesOf(index.series, "server");
  const releases = servers.filter((s) => !/unstable/.test(s));
  const aValue = p.get("a") ?? String(releases[0] ?? servers[0]);
  const bCurrent = p.get("b") ?? String(servers.find((v) => /unstable/.test(v)) ?? servers[servers.length - 1]);
  const setParam = (key) => (v) => { const r = new URLSearchParams(p); r.set("tab", "versions"); r.set(key, v); navigate("compare", r); };
  const options = servers.map((v) => ({ value: String(v), text: String(v) }));
  const a = { value: aValue, el: select("c-a", "Version A", options, aValue, setParam("a")) };
  const b = { el: select("c-b", "compared with B", options, bCurrent, setParam("b")) };
  const cls = dimSelect("versions", p, index, "machine_class", index.series, { allowAll: true });
  const cmd = dimSelect("versions", p, index, "command", index.series, { allowAll: true });
  root.append(h("div.controls", {}, a.el, b.el, cls.el, cmd.el));

  const pick = (server) => index.series.filter((s) => String(s.dims.server) === server
    && (!cls.value || String(s.dims.machine_class) === cls.value) && (!cmd.value || String(s.dims.command) === cmd.value));
  const byKey = new Map(pick(a.value).map((s) => [keyOf(s), s]));
  const pairs = pick(bCurrent).filter((s) => byKey.has(keyOf(s))).map((s) => [byKey.get(keyOf(s)), s]);
  pairs.sort(([x], [y]) => FILTER_DIMS.reduce((r, d) => r || compareValues(x.dims[d], y.dims[d]), 0));

  if (!pairs.length || a.value === bCurrent) {
    root.append(h("p.empty", {}, a.value === bCurrent ? "Pick two different versions." : "No configuration was measured with both versions."));
  } else {
    const varying = varyingDims(pairs.map(([x]) => x), FILTER_DIMS);
    const metrics = METRICS.filter((m) => index.metrics.includes(m));
    root.append(h("div.table-wrap", {}, h("table.data.versions", {},
      h("caption", {}, `${a.value} → ${bCurrent}: newest values; ▲ better / ▼ worse when the confidence intervals do not overlap, ≈ within noise`),
      h("thead", {}, h("tr", {}, h("th", { scope: "col" }, "Configuration"), metrics.map((m) => h("th", { scope: "col", title: METRIC_INFO[m].label }, m)))),
      h("tbody", {}, pairs.map(([x, y]) => h("tr", {},
        h("th", { scope: "row" }, labelFor(x, varying)),
        metrics.map((m) => { const va = lastValue(x, m), vb = lastValue(y, m); return changeCell(change(va, vb, m), m, va, vb); })))))));
  }
  const refData = await loadReference();
  if (!ctx.isCurrent()) return;
  const tables = referenceTables(refData.references);
  if (tables.length) root.append(h("h2.small-title", {}, "Published comparisons"), ...tables);
}
