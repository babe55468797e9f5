// Topology ladder: standalone, standalone with io-threads, cluster — the steps of the Raspberry
// Pi blog — for one machine class, version and command, next to the published ladder.
import { dimSelect, lastValue, loadDims } from "./compare-common.js";
import { loadReference } from "./data.js";
import { compareValues, valuesOf } from "./dims.js";
import { fmtValue } from "./format.js";
import { h } from "./ui.js";

/** Order: standalone by io-threads, then replication, then clusters by size and io-threads. */
function rungOrder(a, b) {
  const rank = (t) => (t === "standalone" ? 0 : t.startsWith("replication") ? 1 : 2);
  return rank(a.topology) - rank(b.topology) || compareValues(a.topology, b.topology) || a.io - b.io;
}

function ladder(title, rungs, note) {
  const max = Math.max(...rungs.map((r) => r.rps || 0), 1);
  const base = rungs[0]?.rps;
  return h("figure.ladder", {},
    h("figcaption", {}, title),
    h("ol.rungs", {}, rungs.map((r) => h("li.rung", {},
      h("span.rung-label", {}, r.label),
      h("span.bar-track", { "aria-hidden": "true" }, h("span.bar", { style: { width: `${((r.rps || 0) / max) * 100}%` } })),
      h("span.rung-value", {}, `${fmtValue(r.rps, "rps")} req/s`,
        r.p50 != null ? h("span.muted", {}, ` · p50 ${fmtValue(r.p50, "p50")} ms`) : null,
        base && r.rps && r !== rungs[0] ? h("span.factor", {}, ` ×${(r.rps / base).toFixed(2)}`) : null,
        r.invalid ? h("span.badge.warn", {}, r.invalid) : null)))),
    note ? h("p.muted", {}, note) : null);
}

export async function renderTopology(root, p, ctx) {
  const { index } = ctx;
  const all = index.series;
  const withCluster = all.filter((s) => String(s.dims.topology).startsWith("cluster"));
  const cls = dimSelect("topology", p, index, "machine_class", all, { fallback: withCluster[0]?.dims.machine_class });
  const inClass = all.filter((s) => String(s.dims.machine_class) === cls.value);
  const servers = valuesOf(inClass, "server");
  const richest = servers.map((v) => [v, new Set(inClass.filter((s) => s.dims.server === v).map((s) => `${s.dims.topology}/${s.dims.io_threads}`)).size])
    .sort((x, y) => y[1] - x[1])[0]?.[0];
  const server = dimSelect("topology", p, index, "server", inClass, { fallback: richest });
  const commands = valuesOf(inClass, "command");
  const cmd = dimSelect("topology", p, index, "command", inClass, { fallback: commands.includes("SET") ? "SET" : commands[0] });
  const load = loadDims("topology", p, index, inClass);
  root.append(h("div.controls", {}, cls.el, server.el, cmd.el, ...load.els));

  const series = inClass.filter((s) => String(s.dims.server) === server.value && String(s.dims.command) === cmd.value
    && Object.entries(load.values).every(([d, v]) => String(s.dims[d]) === v));
  const rungs = series.map((s) => {
    const r = lastValue(s, "rps"), l = lastValue(s, "p50");
    return {
      topology: String(s.dims.topology), io: Number(s.dims.io_threads),
      label: `${s.dims.topology === "standalone" ? "standalone" : s.dims.topology.replace(":", " of ")} · io-threads ${s.dims.io_threads}`,
      rps: r?.v, p50: l?.v, invalid: r && !r.ok ? "invalid" : null,
    };
  }).sort(rungOrder);
  const row = h("div.ladder-row");
  root.append(row);
  row.append(rungs.length ? ladder(`Measured: ${server.value} ${cmd.value} on ${cls.value} (newest run)`, rungs)
    : h("p.empty", {}, "No series for this choice."));

  const refData = await loadReference();
  if (!ctx.isCurrent()) return;
  // Published ladders: groups that climb through io-threads and topologies (the Pi blog's steps, in its order).
  const groups = new Map();
  for (const r of refData.references) {
    if (!r.values[cmd.value]) continue;
    const g = r.group || r.source;
    if (!groups.has(g)) groups.set(g, []);
    groups.get(g).push(r);
  }
  for (const [name, refs] of groups) {
    if (new Set(refs.map((r) => r.dims.topology)).size < 2) continue;
    row.append(ladder(`Published: ${name} — ${cmd.value}`, refs.map((r) => ({
      label: r.label, rps: r.values[cmd.value].rps, p50: r.values[cmd.value].p50, invalid: r.flags.length ? r.flags.join(", ") : null,
    })), `${refs[0].source}${refs[0].published ? ", " + refs[0].published : ""}. Steps in the order the source took them.`));
  }
}
