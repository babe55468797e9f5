// Published references: every figure of the overlay with its configuration and provenance.
// Sources are named as text, not links: the site makes no request and holds no link outside.
import { loadReference } from "./data.js";
import { fmtValue } from "./format.js";
import { describeRef } from "./refs.js";
import { h, section } from "./ui.js";

const METRICS = ["rps", "avg", "min", "p50", "p95", "p99", "max"];

export async function renderReferences(root, params, ctx) {
  const { references } = await loadReference();
  if (!ctx.isCurrent()) return;
  root.append(h("h1.view-title", {}, "Published references"),
    h("p.lead", {}, "Figures others published, stored as result files (results/reference/) and drawn as dashed reference marks where a view's configuration matches approximately. Other hardware, other harness: compare shapes and ratios, not absolute values."));
  if (!references.length) { root.append(h("p.empty", {}, "This site was built without reference figures.")); return; }
  const groups = new Map();
  for (const r of references) {
    const g = r.group || r.source;
    if (!groups.has(g)) groups.set(g, []);
    groups.get(g).push(r);
  }
  for (const [name, refs] of groups) {
    const first = refs[0];
    const metrics = METRICS.filter((m) => refs.some((r) => Object.values(r.values).some((v) => v[m] != null)));
    const rows = refs.flatMap((r) => Object.entries(r.values).map(([command, v]) => ({ r, command, v })));
    root.append(section(name,
      h("p", {}, h("strong", {}, first.source), first.published ? ` · published ${first.published}` : "",
        first.where ? h("span.muted", {}, " · source: ", h("code.where", {}, first.where)) : null),
      h("div.table-wrap", {}, h("table.data", {},
        h("thead", {}, h("tr", {}, h("th", { scope: "col" }, "Figure"), h("th", { scope: "col" }, "Command"), metrics.map((m) => h("th", { scope: "col" }, m)))),
        h("tbody", {}, rows.map(({ r, command, v }) => h("tr", {},
          h("th", { scope: "row" }, r.label, h("span.muted.block", {}, describeRef(r)), r.flags.length ? h("span.badge.warn", {}, r.flags.join(", ")) : null),
          h("td", {}, command), metrics.map((m) => h("td", {}, v[m] != null ? fmtValue(v[m], m) : "–"))))))),
      [...new Set(refs.map((r) => r.notes).filter(Boolean))].map((n) => h("p.muted", {}, n))));
  }
}
