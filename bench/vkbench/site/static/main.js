// Entry point: hash routing. Each view is a function (root, params, ctx) that renders into
// <main>; the URL is the only state, so any view can be reloaded or shared as a link.
import { loadIndex } from "./data.js";
import { fmtDateTime } from "./format.js";
import { parseHash } from "./state.js";
import { h } from "./ui.js";
import { renderOverview } from "./view-overview.js";
import { renderExplorer } from "./view-explorer.js";
import { renderCompare } from "./view-compare.js";
import { renderReferences } from "./view-references.js";
import { renderProfile } from "./view-profile.js";

const VIEWS = { overview: renderOverview, explorer: renderExplorer, compare: renderCompare, references: renderReferences, profile: renderProfile };
const TITLES = { overview: "Overview", explorer: "Explorer", compare: "Comparisons", references: "Published references", profile: "CPU profile" };

const root = document.getElementById("view");
let cleanup = [];
let renderSeq = 0;

async function render() {
  const { route, params } = parseHash();
  const view = VIEWS[route] ? route : "overview";
  const seq = ++renderSeq;
  // Keep keyboard focus across re-renders: controls have stable ids.
  const focusedId = document.activeElement && root.contains(document.activeElement) ? document.activeElement.id : null;
  for (const el of document.querySelectorAll("nav a")) {
    if (el.dataset.route === view) el.setAttribute("aria-current", "page");
    else el.removeAttribute("aria-current");
  }
  document.title = `${TITLES[view]} · Valkey performance trends`;
  root.setAttribute("aria-busy", "true");
  try {
    const index = await loadIndex();
    document.getElementById("build-info").textContent =
      `${index.series.length} series · ${index.runs ?? "?"} runs · data updated ${fmtDateTime(Date.parse(index.updated) / 1000)}`;
    const ctx = { index, isCurrent: () => seq === renderSeq, onCleanup: (fn) => cleanup.push(fn) };
    const fragment = h("div.view-" + view);
    for (const fn of cleanup.splice(0)) fn();
    root.replaceChildren(fragment);
    await VIEWS[view](fragment, params, ctx);
  } catch (err) {
    console.warn(err); // not console.error: a missing data file is a message for the reader
    root.replaceChildren(h("div.panel.error", { role: "alert" },
      h("h2", {}, "This view could not be loaded"),
      h("p", {}, String(err.message || err)),
      h("p", {}, "Rebuild the site with ", h("code", {}, "vkbench site build"), " or go back to the ", h("a", { href: "#/overview" }, "overview"), ".")));
  } finally {
    if (seq === renderSeq) {
      root.setAttribute("aria-busy", "false");
      if (focusedId) document.getElementById(focusedId)?.focus();
    }
  }
}

window.addEventListener("hashchange", render);
render();
