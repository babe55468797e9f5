// Comparisons: three tabs, each its own module; the tab is part of the URL like all state.
import { renderScaling } from "./compare-scaling.js";
import { renderTopology } from "./compare-topology.js";
import { renderVersions } from "./compare-versions.js";
import { buildHash } from "./state.js";
import { h } from "./ui.js";

const TABS = [
  { id: "scaling", text: "io-threads scaling", render: renderScaling },
  { id: "versions", text: "Version vs version", render: renderVersions },
  { id: "topology", text: "Topology ladder", render: renderTopology },
];

export async function renderCompare(root, params, ctx) {
  const tab = TABS.find((t) => t.id === params.get("tab")) || TABS[0];
  root.append(h("h1.view-title", {}, "Comparisons"),
    h("nav.tabs", { "aria-label": "Comparison" }, TABS.map((t) =>
      h("a.tab", { href: buildHash("compare", new URLSearchParams({ tab: t.id })), "aria-current": t === tab ? "page" : null }, t.text))));
  const body = h("div.tab-body");
  root.append(body);
  await tab.render(body, params, ctx);
}
