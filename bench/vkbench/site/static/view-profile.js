// CPU profile of an incident: flame graphs of the last good and the first bad build, and the
// differential graph (red grew, blue shrank), drawn with d3-flame-graph (loaded on demand),
// plus the table of functions whose share of samples changed most.
import { getProfile, loadDetect } from "./data.js";
import { buildHash } from "./state.js";
import { h } from "./ui.js";

const MODES = [
  { id: "diff", text: "Difference" },
  { id: "before", text: "Before (last good)" },
  { id: "after", text: "After (first bad)" },
];

let flamegraphLoaded = null;
/** d3 + d3-flame-graph (one vendored file) and its CSS, once. */
function loadFlamegraph() {
  if (!flamegraphLoaded) {
    flamegraphLoaded = new Promise((resolve, reject) => {
      const version = document.querySelector("script[src*='assets/app/main.js']")?.src.split("?v=")[1] || "";
      const css = document.createElement("link");
      css.rel = "stylesheet"; css.href = `assets/vendor/d3-flamegraph.css?v=${version}`;
      document.head.append(css);
      const script = document.createElement("script");
      script.src = `assets/vendor/d3-flamegraph.bundle.min.js?v=${version}`;
      script.onload = () => resolve(window.flamegraph);
      script.onerror = () => { flamegraphLoaded = null; reject(new Error("the flame graph library could not be loaded")); };
      document.head.append(script);
    });
  }
  return flamegraphLoaded;
}

const pct = (x) => `${(x * 100).toFixed(1)}%`;
const pts = (x) => `${x > 0 ? "▲ +" : x < 0 ? "▼ −" : ""}${Math.abs(x * 100).toFixed(1)} pt`;

function changesTable(doc) {
  return h("table.data.profile-changes", {},
    h("caption", {}, "Functions whose share of CPU samples changed most (self: own code; total: with what it calls)"),
    h("thead", {}, h("tr", {}, ["function", "self before", "self after", "change", "total before", "total after"].map((t) => h("th", { scope: "col" }, t)))),
    h("tbody", {}, doc.rows.map((r) => h("tr", { "data-function": r.function },
      h("th", { scope: "row" }, h("code", {}, r.function)), h("td", {}, pct(r.before_self)), h("td", {}, pct(r.after_self)),
      h(`td.${r.self_delta > 0 ? "bad-text" : "good-text"}`, {}, pts(r.self_delta)),
      h("td", {}, pct(r.before_total)), h("td", {}, pct(r.after_total))))));
}

function side(label, s) {
  const sym = s.symbols || {};
  return h("li", {}, h("strong", {}, label), ` ${s.version || ""} ${s.commit ? s.commit.slice(0, 12) : ""} · run ${s.run_id} · ${s.samples ?? "?"} samples · `,
    sym.symtab === false ? h("span.badge.warn", {}, "stripped binary: few names") : h("span", {}, `symbols ${sym.symtab ? "present" : "unknown"}`));
}

export async function renderProfile(root, params, ctx) {
  const id = params.get("incident");
  const file = id && ctx.index.profiles?.[id];
  root.append(h("h1.view-title", {}, "CPU profile of an incident"));
  if (!file) {
    root.append(h("p.empty", {}, "No profile for this incident: both its last good and first bad run must be recorded with ",
      h("code", {}, "vkbench run --profile"), "."), h("p", {}, h("a", { href: "#/overview" }, "Back to the overview")));
    return;
  }
  const mode = MODES.find((m) => m.id === params.get("mode")) || MODES[0];
  const [doc, lib] = await Promise.all([getProfile(file), loadFlamegraph(), loadDetect()]);
  if (!ctx.isCurrent()) return;
  root.append(h("p.lead", {}, doc.title || doc.incident),
    h("ul.profile-sides", {}, side("Before:", doc.before), side("After:", doc.after)),
    h("nav.tabs", { "aria-label": "Profile" }, MODES.map((m) =>
      h("a.tab", { href: buildHash("profile", new URLSearchParams({ incident: id, mode: m.id })), "aria-current": m === mode ? "page" : null, "data-mode": m.id }, m.text))));
  const body = h("div.tab-body");
  const graph = h("div.flamegraph", { "data-mode": mode.id, role: "img", "aria-label": `${mode.text} flame graph` });
  const details = h("p.flamegraph-details.muted", { "aria-live": "polite" }, "Click a frame to zoom; hover for its share.");
  body.append(graph, details);
  root.append(body, h("div.table-wrap", {}, changesTable(doc)));
  const width = Math.max(320, graph.getBoundingClientRect().width || body.clientWidth || 800);
  const chart = lib.default().width(width).cellHeight(18).minFrameSize(2).transitionDuration(0)
    .title("").setDetailsElement(details)
    .setLabelHandler((d) => `${d.data.name} — ${pct(d.value / (d.parent ? rootValue(d) : d.value))}${d.data.delta != null && mode.id === "diff" ? `, ${d.data.delta > 0 ? "+" : ""}${Math.round(d.data.delta)} samples` : ""}`);
  if (mode.id === "diff") chart.setColorMapper(lib.colorMapper.differentialColorMapper);
  window.d3.select(graph).datum(doc.trees[mode.id]).call(chart);
  ctx.onCleanup(() => chart.destroy && chart.destroy());
}

function rootValue(d) { let n = d; while (n.parent) n = n.parent; return n.value; }
