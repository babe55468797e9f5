// Overview: per machine class the latest run, the open incidents (regressions) with a small
// chart each, and the recent improvements, with commit ranges and links to the runs.
import { createTrendChart } from "./chart.js";
import { loadDetect, loadSeries, pointInfo } from "./data.js";
import { FILTER_DIMS, labelFor, varyingDims } from "./dims.js";
import { fmtAgo, fmtDate, fmtDateTime, fmtPct, isolate, METRIC_INFO, shortSha } from "./format.js";
import { styleFor } from "./palette.js";
import { buildHash } from "./state.js";
import { empty, extLink, h, section } from "./ui.js";
import { isFirstRuns, latestRunSection } from "./view-latest.js";

/** How many incident charts to draw at once; more are drawn on request (bytes for the first view). */
const CHARTS_UP_FRONT = 6;

function explorerLinkFor(index, sids, metric) {
  const series = sids.map((id) => index.byId.get(id)).filter(Boolean);
  const q = new URLSearchParams();
  for (const dim of FILTER_DIMS) {
    if (dim === "server" || dim === "arch") continue; // show every version around the incident
    const values = [...new Set(series.map((s) => String(s.dims[dim])))];
    if (values.length) q.set(dim, values.join(","));
  }
  if (metric && metric !== "rps") q.set("metric", metric);
  return buildHash("explorer", q);
}

function commitLink(index, sid, point, label) {
  if (!point?.commit) return h("span", {}, label || "unknown commit");
  const text = shortSha(point.commit);
  // A source build names its repository: the build links there ("" when that repository has no
  // commit pages: plain text); a release's commit is in the engine's own repository.
  let url = typeof point.commit_url === "string" ? point.commit_url : null;
  if (url === null) {
    const repo = index.commit_repos[index.byId.get(sid)?.dims.engine];
    url = repo ? `https://github.com/${repo}/commit/${point.commit}` : "";
  }
  return url ? extLink(url, text, `commit ${text}`) : h("code", { title: point.repository || null }, text);
}

function commitRange(index, incident) {
  const sid = (incident.series_ids || [])[0];
  const { good, bad } = incident;
  return h("p.range", {},
    "Between ", commitLink(index, sid, good), good?.version ? ` (${good.version}, ${fmtDate(Date.parse(good.timestamp) / 1000)})` : "",
    " and ", commitLink(index, sid, bad), bad?.version ? ` (${bad.version}, ${fmtDate(Date.parse(bad.timestamp) / 1000)})` : "");
}

// The culprit an automatic bisect named (detect.json incident.bisect), linked to the repository
// that was bisected like the range's commits ("" when it has no commit pages: plain text).
function culpritLine(incident) {
  const b = incident.bisect;
  if (!b) return null;
  const steps = `${b.steps} A/B step${b.steps === 1 ? "" : "s"}`;
  const run = b.workflow_run_url ? [" · ", extLink(b.workflow_run_url, "bisect run ↗", "workflow run of the bisect")] : null;
  if (b.reproduced && b.resolved === false) {
    return h("p.culprit.muted", {}, `Bisect (${steps}): the step limit stopped the search before one commit remained, no culprit named.`, run);
  }
  if (!b.reproduced && typeof b.inconclusive === "string") {
    return h("p.culprit.muted", {}, `Bisect (${steps}): the A/B of the two ends was ${b.inconclusive}; no culprit named.`, run);
  }
  if (!b.reproduced || !b.culprit) {
    return h("p.culprit.muted", {}, `Bisect (${steps}): the regression did not reproduce, no culprit named.`, run);
  }
  const text = shortSha(b.culprit);
  const link = b.culprit_url ? extLink(b.culprit_url, text, `culprit commit ${text}`) : h("code", { title: b.repository || null }, text);
  const interval = Number.isFinite(b.ci_low) && Number.isFinite(b.ci_high) ? ` (95% interval ${fmtPct(b.ci_low)} .. ${fmtPct(b.ci_high)})` : "";
  return h("p.culprit", {}, "Culprit (bisect, ", steps, "): ", link,
    b.culprit_subject ? h("span.culprit-subject", {}, ` ${b.culprit_subject}`) : null,
    Number.isFinite(b.effect) ? `: ${fmtPct(b.effect)} on ${b.measure || "?"}${interval}` : null, run);
}

// An incident of instruction counts (detect.json incident.instruction_diff): the functions whose
// self instructions per operation changed most between the last good and the first bad run.
function instructionDiff(incident) {
  const d = incident.instruction_diff;
  if (!d || !Array.isArray(d.rows) || !d.rows.length) return null;
  const num = (v) => (Number.isFinite(v) ? v.toFixed(2) : "–");
  const source = d.source === "callgrind dumps"
    ? `callgrind dumps of seeds ${(d.seeds || []).join(", ")}` : "the results' top functions";
  return h("div.table-wrap", {}, h("table.data.instruction-diff", {},
    h("caption", {}, `Functions whose instructions per ${d.command || "operation"} changed most, last good → first bad (${source})`),
    h("thead", {}, h("tr", {}, ["function", "good (instr/op)", "bad (instr/op)", "change"].map((t) => h("th", { scope: "col" }, t)))),
    h("tbody", {}, d.rows.slice(0, 10).map((r) => h("tr", {},
      h("td", {}, h("code", {}, String(r.function))), h("td", {}, num(r.before)), h("td", {}, num(r.after)),
      h("td", {}, `${r.delta > 0 ? "+" : ""}${num(r.delta)}`))))));
}

function magnitudeBadge(incident) {
  const regression = incident.direction === "regression";
  return h(`span.badge.${regression ? "bad" : "good"}`, {}, `${regression ? "▼" : "▲"} ${fmtPct(incident.magnitude, Math.abs(incident.magnitude) < 0.01 ? 2 : 1)} ${incident.metric}`);
}

function classCard(index, name, cls) {
  const latest = cls.latest || {};
  const q = new URLSearchParams({ machine_class: name });
  const commands = [...new Set(index.series.filter((s) => s.dims.machine_class === name).map((s) => s.dims.command))];
  q.set("command", commands.includes("SET") ? "SET" : commands[0]);
  if (index.series.some((s) => s.dims.machine_class === name && s.dims.topology === "standalone")) q.set("topology", "standalone");
  const flags = Object.entries(latest.flags || {}).map(([k, v]) => `${k} ×${v}`).join(", ");
  const arch = index.series.find((s) => s.dims.machine_class === name)?.dims.arch;
  return h("article.card.class-card", { "aria-labelledby": `cls-${name}` },
    h("h3", { id: `cls-${name}` }, name, arch ? h("span.muted", {}, ` ${arch}`) : null),
    h("p", {}, "Latest run ", h("strong", {}, fmtDateTime(latest.t)), h("span.muted", {}, ` (${fmtAgo(latest.t, Date.parse(index.updated) / 1000)})`)),
    h("p", {}, `${latest.series ?? 0} of ${cls.series} series measured`,
      latest.invalid ? h("span.badge.warn", {}, `${latest.invalid} invalid`) : null),
    flags ? h("p.muted", {}, `Flags: ${flags}`) : null,
    latest.versions?.length ? h("p.muted.versions", {}, "Versions: ", latest.versions.map((v, k) => [k ? ", " : null, h("span.version", { title: v }, v)])) : null,
    h("p", {}, cls.open_regressions
      ? h("span.badge.bad", {}, `▼ ${cls.open_regressions} open regression${cls.open_regressions > 1 ? "s" : ""}`)
      : h("span.badge.ok", {}, "✓ no open regressions"),
      cls.improvements ? h("span.badge.good", {}, `▲ ${cls.improvements} improvement${cls.improvements > 1 ? "s" : ""}`) : null),
    h("p.links", {}, latest.url ? extLink(latest.url, "Workflow run ↗", `workflow run of the latest ${name} run`) : h("span.muted", {}, "no workflow run link"),
      " · ", h("a", { href: buildHash("explorer", q) }, `Explore ${name} →`)));
}

async function incidentChart(box, index, incident, ctx) {
  const sids = (incident.series_ids || []).filter((id) => index.byId.has(id)).slice(0, 4);
  if (!sids.length) return;
  const metric = incident.metric || "rps";
  const data = await Promise.all(sids.map((id) => loadSeries(id, metric)));
  if (!ctx.isCurrent()) return;
  const series = sids.map((id) => index.byId.get(id));
  const varying = varyingDims(series, FILTER_DIMS);
  const lines = series.map((s, k) => ({ ...styleFor(k), sid: s.id, dims: s.dims, label: varying.length ? labelFor(s, varying) : `${isolate(s.dims.server)} ${isolate(s.dims.command)} io-threads ${s.dims.io_threads}`, series: data[k] }));
  box.replaceChildren();
  const chart = createTrendChart(box, {
    metric, lines, compact: true, height: 170, band: true,
    title: `${METRIC_INFO[metric].label} of the series in incident ${incident.title}`,
    commitRepoFor: (l) => index.commit_repos[l.dims.engine],
  });
  ctx.onCleanup(() => chart.destroy());
  // The runs on either side of the change, from the series file.
  const s = data[0];
  const runOf = (ref) => {
    if (!ref?.run_id) return null;
    const i = s.t.findIndex((t) => Math.abs(t - Date.parse(ref.timestamp) / 1000) < 1);
    return i >= 0 ? pointInfo(s, i, null).runUrl : null;
  };
  const good = runOf(incident.good), bad = runOf(incident.bad);
  if (good || bad) {
    box.append(h("p.links", {}, "Workflow runs: ",
      good ? extLink(good, "before ↗", "workflow run before the change") : null, good && bad ? " · " : null,
      bad ? extLink(bad, "after ↗", "workflow run after the change") : null));
  }
}

// An annotation from results/annotations.yaml ({action, reason, ...}), the automatic one of a
// same-build incident, or a plain note.
function annotationText(annotation) {
  if (typeof annotation === "string") return isolate(annotation);
  if (annotation && typeof annotation.reason === "string") {
    return annotation.automatic ? isolate(annotation.reason) : `${isolate(annotation.action || "note")}: ${isolate(annotation.reason)}`;
  }
  return JSON.stringify(annotation);
}

function incidentCard(index, incident, ctx, drawNow) {
  const box = h("div.mini-chart");
  const card = h("article.card.incident", { "data-incident": incident.id, "aria-labelledby": `inc-${incident.id}` },
    h("h3", { id: `inc-${incident.id}` }, incident.title || incident.id),
    h("p", {}, magnitudeBadge(incident), h("span.badge", {}, incident.machine_class || "?"), h("span.badge", {}, incident.status || "")),
    commitRange(index, incident),
    culpritLine(incident),
    incident.annotation ? h("p.note", {}, "✎ ", annotationText(incident.annotation)) : null,
    instructionDiff(incident),
    box,
    h("p.links", {}, h("a", { href: explorerLinkFor(index, incident.series_ids || [], incident.metric) }, "Open in the explorer →"),
      index.profiles?.[incident.id] ? [" · ", h("a.profile-link", { href: `#/profile?incident=${encodeURIComponent(incident.id)}` }, "CPU profile: before, after, difference →")] : null));
  if (drawNow) incidentChart(box, index, incident, ctx);
  else box.append(h("button.tool", { type: "button", onclick: () => incidentChart(box, index, incident, ctx) }, "Draw chart"));
  return card;
}

// Data types (the series' group: a catalog spec's group, else its command's): which moved, i.e.
// have an open regression or a recent improvement, and how many series each has.
function dataTypeSection(index, open, improvements) {
  const groups = new Map();
  for (const s of index.series) {
    const g = s.dims.group || "other";
    if (!groups.has(g)) groups.set(g, { series: 0, regressions: [], improvements: [] });
    groups.get(g).series += 1;
  }
  const groupsOf = (inc) => new Set((inc.series_ids || []).map((id) => index.byId.get(id)?.dims.group).filter(Boolean));
  for (const inc of open) for (const g of groupsOf(inc)) groups.get(g)?.regressions.push(inc);
  for (const inc of improvements) for (const g of groupsOf(inc)) groups.get(g)?.improvements.push(inc);
  const names = [...groups.keys()].sort();
  const moved = names.filter((g) => groups.get(g).regressions.length || groups.get(g).improvements.length);
  const worst = (list, pick) => list.reduce((m, i) => (m === null || pick(i.magnitude, m) ? i.magnitude : m), null);
  const explore = (g) => buildHash("explorer", new URLSearchParams({ group: g }));
  return section("Data types",
    h("p.lead.group-summary", {}, moved.length
      ? `Moved: ${moved.join(", ")}. Unchanged: ${names.filter((g) => !moved.includes(g)).join(", ") || "none"}.`
      : `No data type moved (${names.join(", ")}).`),
    h("ul.data-types", {}, names.map((g) => {
      const info = groups.get(g);
      const down = worst(info.regressions, (a, b) => a < b), up = worst(info.improvements, (a, b) => a > b);
      return h("li", { "data-group": g },
        h("a", { href: explore(g) }, g), h("span.muted", {}, ` ${info.series} series `),
        info.regressions.length ? h("span.badge.bad", {}, `▼ ${info.regressions.length} open regression${info.regressions.length > 1 ? "s" : ""} (${fmtPct(down)})`) : null,
        info.improvements.length ? h("span.badge.good", {}, `▲ ${info.improvements.length} improvement${info.improvements.length > 1 ? "s" : ""} (${fmtPct(up)})`) : null,
        !info.regressions.length && !info.improvements.length ? h("span.badge.ok", {}, "✓ steady") : null);
    })));
}

export async function renderOverview(root, params, ctx) {
  const { index } = ctx;
  const detect = await loadDetect();
  if (!ctx.isCurrent()) return;
  const incidents = detect.incidents || [];
  // The same build before and after: the machine or the measurement moved, not the code.
  const codeChanges = incidents.filter((i) => !i.same_build);
  const newestFirst = (a, b) => String(b.bad?.timestamp).localeCompare(String(a.bad?.timestamp));
  const open = codeChanges.filter((i) => i.status === "open" && i.direction === "regression")
    .sort((a, b) => Math.abs(b.magnitude || 0) - Math.abs(a.magnitude || 0));
  const improvements = codeChanges.filter((i) => i.direction === "improvement").sort(newestFirst).slice(0, 10);
  const shifts = incidents.filter((i) => i.same_build).sort(newestFirst).slice(0, 10);

  root.append(h("div.hero", {},
    h("h1", {}, "Valkey performance trends"),
    h("p.lead", {}, `${index.series.length} benchmark series on ${Object.keys(index.classes).length} machine classes, ${index.runs ?? "?"} runs. `,
      open.length ? h("strong.bad-text", {}, `${open.length} open regression${open.length > 1 ? "s" : ""}.`) : "No open regressions.",
      detect.generated ? h("span.muted", {}, ` Change detection ran ${fmtDateTime(Date.parse(detect.generated) / 1000)}.`) : null)));

  // The first runs: no trend yet, so the numbers themselves, as charts, come first.
  if (isFirstRuns(index)) root.append(latestRunSection(index));

  root.append(section("Machine classes",
    h("div.grid", {}, Object.entries(index.classes).map(([name, cls]) => classCard(index, name, cls)))));
  root.append(dataTypeSection(index, open, improvements));

  const openSection = section(`Open incidents (${open.length})`);
  if (!open.length) openSection.append(empty("No open regressions: every series is within its noise."));
  open.forEach((inc, k) => openSection.append(incidentCard(index, inc, ctx, k < CHARTS_UP_FRONT)));
  root.append(openSection);

  const impSection = section("Recent improvements");
  if (!improvements.length) impSection.append(empty("No improvements detected yet."));
  else {
    impSection.append(h("ul.improvements", {}, improvements.map((inc) => h("li", { "data-incident": inc.id },
      magnitudeBadge(inc), " ", h("span", {}, inc.title || inc.id), commitRange(index, inc),
      inc.annotation ? h("span.note", {}, `✎ ${annotationText(inc.annotation)} `) : null,
      h("a", { href: explorerLinkFor(index, inc.series_ids || [], inc.metric) }, "Open in the explorer →")))));
  }
  root.append(impSection);

  if (shifts.length) {
    root.append(section("Shifts with the same build",
      h("p.muted", {}, "The identical server build ran before and after these changes, so no code change caused them: "
        + "the machine or the measurement moved. They open no issue."),
      h("ul.same-build", {}, shifts.map((inc) => h("li", { "data-incident": inc.id },
        magnitudeBadge(inc), " ", h("span", {}, inc.title || inc.id), " ", h("span.badge", {}, inc.status || ""), " ",
        h("a", { href: explorerLinkFor(index, inc.series_ids || [], inc.metric) }, "Open in the explorer →"))))));
  }
}
