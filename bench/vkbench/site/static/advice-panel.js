// io-threads advice next to the scaling chart: per machine class, what `vkbench advise` says
// about the newest sweep (the sentence, the evidence with 95% intervals, the warnings), and
// the same advisor on the published references (Pi CM4 blog, devhands) for context.
import { getAdvice } from "./data.js";
import { fmtValue } from "./format.js";
import { h } from "./ui.js";

function interval(stat, metric) {
  if (!stat) return "–";
  const [v, lo, hi] = stat;
  const main = fmtValue(v, metric);
  return lo != null && hi != null ? `${main} [${fmtValue(lo, metric)}, ${fmtValue(hi, metric)}]` : main;
}

function evidence(a) {
  return h("table.data.advice-table", {},
    h("caption", {}, `Evidence: ${a.label}`),
    h("thead", {}, h("tr", {}, ["io-threads", "rps [95% CI]", "latency (ms) [95% CI]", "vs best", "notes"].map((t) => h("th", { scope: "col" }, t)))),
    h("tbody", {}, a.settings.map((s) => h(`tr${s.io === a.recommended ? ".recommended" : ""}`, { "data-io": s.io },
      h("th", { scope: "row" }, String(s.io)),
      h("td", {}, interval(s.rps, "rps")),
      h("td", {}, s.lat ? `${s.lat_metric} ${interval(s.lat, s.lat_metric)}` : "–"),
      h("td", {}, s.io === a.best ? "best" : `${Math.round(s.change * 100)}%${s.noise ? " (noise)" : ""}`),
      h("td", {},
        s.io === a.recommended ? h("span.badge.ok", {}, "recommended") : null,
        s.over ? h("span.badge.warn", { title: "io-threads plus client threads exceed the server's cores" }, "oversubscribed") : null,
        s.bound ? h("span.badge.warn", { title: "the client, not the server, limited throughput" }, "client-bound") : null)))));
}

function adviceCard(a) {
  return h("article.card.advice", { "data-class": a.machine_class, "data-command": a.command },
    h("h3", {}, `${a.machine_class} · ${a.label}`),
    h("p.advice-sentence", {}, h("strong", {}, `io-threads ${a.recommended}`), ` — ${a.sentence}.`),
    a.warnings.length ? h("ul.advice-warnings", {}, a.warnings.map((w) => h("li", { "data-code": w.code }, w.message))) : null,
    h("div.table-wrap", {}, evidence(a)));
}

/** The panel: advice for `cls` (all classes when empty) and `command`, then published context. */
export async function renderAdvicePanel(root, { cls, command }) {
  const data = await getAdvice();
  const mine = data.advice.filter((a) => (!cls || a.machine_class === cls) && a.command === command);
  const refs = data.references.filter((a) => a.command === command);
  const panel = h("section.panel.advice-panel", { "aria-labelledby": "advice-title" },
    h("h2", { id: "advice-title" }, "Which io-threads? Advice from the newest sweep"));
  if (!mine.length) {
    panel.append(h("p.empty", {}, `No ${command} workload of ${cls || "any machine class"} was measured at two or more io-threads settings: run the io-threads-sweep preset.`));
  }
  const byClass = new Map();
  for (const a of mine) { if (!byClass.has(a.machine_class)) byClass.set(a.machine_class, []); byClass.get(a.machine_class).push(a); }
  for (const [name, list] of byClass) {
    panel.append(h("div.advice-class", { "data-class": name }, list.map(adviceCard)));
  }
  if (refs.length) {
    panel.append(h("h3.advice-context-title", {}, "Published sweeps, for context"),
      h("ul.advice-context", {}, refs.map((a) => h("li", { "data-class": a.machine_class },
        h("strong", {}, a.machine_class), `: ${a.sentence} (${a.settings.map((s) => `io ${s.io}: ${fmtValue(s.rps?.[0], "rps")} rps`).join(", ")}).`))));
  }
  panel.append(h("p.muted", {}, "The smallest io-threads whose throughput is within noise of the best is recommended (Welch's t-test on the repetitions; single published figures: 5%). Same advice on the command line: ",
    h("code", {}, "vkbench advise --history history"), "."));
  root.append(panel);
}
