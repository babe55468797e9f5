// Formatting and metric facts shared by every view. Numbers use the reader's locale.

export const METRIC_INFO = {
  rps: { label: "Throughput", unit: "req/s", better: "higher" },
  avg: { label: "Average latency", unit: "ms", better: "lower" },
  min: { label: "Minimum latency", unit: "ms", better: "lower" },
  p50: { label: "p50 latency", unit: "ms", better: "lower" },
  p95: { label: "p95 latency", unit: "ms", better: "lower" },
  p99: { label: "p99 latency", unit: "ms", better: "lower" },
  p999: { label: "p99.9 latency", unit: "ms", better: "lower" },
  max: { label: "Maximum latency", unit: "ms", better: "lower" },
  // Counted, not timed (docs/instructions.md): nearly deterministic, so sub-percent steps show.
  // The code count: the total without libc's alignment-sensitive string routines (their counts
  // move with where malloc put the arguments), wherever the result has it.
  instructions_per_op: { label: "instructions/op (callgrind: code without libc string routines; perf: total)", unit: "instructions/op", better: "lower" },
  instructions_per_op_total: { label: "instructions/op (total)", unit: "instructions/op", better: "lower" },
  bytes_per_key: { label: "Memory per key", unit: "bytes/key", better: "lower" },
};

export const DIM_LABELS = {
  server: "Engine + version", topology: "Topology", io_threads: "io-threads", command: "Command", group: "Data type",
  pipeline: "Pipeline", clients: "Clients", data_size: "Data size (bytes)", tool: "Tool",
  machine_class: "Machine class", arch: "Arch", engine: "Engine", version: "Version",
  client_threads: "Client threads", keyspace: "Keyspace", requests: "Requests", duration: "Duration (s)",
  warmup: "Warm-up", preload: "Preload", read_from: "Read from", extra_server_args: "Server args",
  cpu: "CPU placement", tests: "Tests",
};

const nf = new Intl.NumberFormat(undefined, { maximumSignificantDigits: 4 });
// instructions per op: 0.1 % of ~10,000 is 10 instructions; show the decimal the counts resolve
const nfCount = new Intl.NumberFormat(undefined, { maximumFractionDigits: 1 });
const nfFull = new Intl.NumberFormat(undefined, { maximumFractionDigits: 3 });
const nfCompact = new Intl.NumberFormat(undefined, { notation: "compact", maximumSignificantDigits: 3 });

export function fmtValue(v, metric) {
  if (v == null || Number.isNaN(v)) return "–";
  if (metric === "instructions_per_op" || metric === "instructions_per_op_total") return nfCount.format(v);
  return metric === "rps" ? nfFull.format(Math.round(v)) : nf.format(v);
}

export function fmtAxis(v, metric) {
  if (v == null) return "";
  return metric === "rps" ? nfCompact.format(v) : nf.format(v);
}

export function fmtWithUnit(v, metric) {
  return `${fmtValue(v, metric)} ${METRIC_INFO[metric]?.unit ?? ""}`.trim();
}

export function fmtPct(x, digits = 1) {
  if (x == null || !Number.isFinite(x)) return "–";
  const s = (x * 100).toFixed(digits);
  return (x > 0 ? "+" : x < 0 ? "−" : "±") + s.replace("-", "") + "%";
}

export function fmtDate(t) {
  if (t == null) return "–";
  return new Date(t * 1000).toISOString().slice(0, 10);
}

export function fmtDateTime(t) {
  if (t == null) return "–";
  return new Date(t * 1000).toISOString().slice(0, 16).replace("T", " ") + " UTC";
}

export function fmtAgo(t, now = Date.now() / 1000) {
  if (t == null) return "";
  const d = Math.round((now - t) / 86400);
  if (d <= 0) return "today";
  if (d === 1) return "yesterday";
  if (d < 60) return `${d} days ago`;
  return `${Math.round(d / 30)} months ago`;
}

export function shortSha(sha) {
  return sha ? sha.slice(0, 7) : "";
}

/** Is a change of `delta` (relative) an improvement for this metric? */
export function isBetter(metric, delta) {
  return METRIC_INFO[metric]?.better === "higher" ? delta > 0 : delta < 0;
}

// Bidirectional formatting characters (an override such as U+202E shows a name reversed) and
// other controls: shown escaped. The history's reader refuses them in names already; this is
// the last line for anything else a page shows.
const CONTROLS = /[\u0000-\u001f\u007f-\u009f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069\u2028\u2029]/g;
// Right-to-left letters (Hebrew, Arabic, Syriac, Thaana, NKo, ... and their presentation forms).
const RTL = /[\u0590-\u08ff\ufb1d-\ufdff\ufe70-\ufefc]|[\u{10800}-\u{10fff}\u{1e800}-\u{1efff}]/u;

/** A name as text that shows as itself: controls escaped (\u202e), and right-to-left text
 * wrapped in FIRST STRONG ISOLATE ... POP DIRECTIONAL ISOLATE so it cannot reorder the words
 * around it (as <bdi> would; these also work in chart canvases and attributes). Plain
 * left-to-right text comes back unchanged. (Python: vkbench.bidi.isolate.) */
export function isolate(v) {
  const s = String(v).replace(CONTROLS, (c) => `\\u${c.codePointAt(0).toString(16).padStart(4, "0")}`);
  return RTL.test(s) ? `\u2068${s}\u2069` : s;
}

// What a text node may not carry as itself: the same, except tab and newline, and the
// isolates that isolate() put around a name.
const UNSAFE_IN_TEXT = /[\u0000-\u0008\u000b-\u001f\u007f-\u009f\u061c\u200e\u200f\u202a-\u202e\u2066\u2067]/g;

/** Any string a page shows (ui.js h()): controls and bidi overrides escaped, nothing else. */
export function safeText(v) {
  return String(v).replace(UNSAFE_IN_TEXT, (c) => `\\u${c.codePointAt(0).toString(16).padStart(4, "0")}`);
}

export function dimValueText(dim, v) {
  if (v == null || v === "") return "–";
  if (dim === "io_threads") return `io-threads ${v}`;
  if (dim === "pipeline") return `P${v}`;
  if (dim === "clients") return `${v} clients`;
  if (dim === "data_size") return `${v} B`;
  if (v === true) return "yes";
  if (v === false) return "no";
  return isolate(v);
}
