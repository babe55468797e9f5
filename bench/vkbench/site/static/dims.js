// Series dimensions: which filters exist, which series match, how to name a series briefly.
import { DIM_LABELS, dimValueText, isolate } from "./format.js";

/** The explorer's filters, in the order shown (the list of dimensions). */
export const FILTER_DIMS = ["server", "topology", "io_threads", "group", "command", "pipeline", "clients", "data_size", "tool", "machine_class", "arch"];

/** Sorted distinct values of a dimension (numbers numerically, versions naturally). */
export function valuesOf(series, dim) {
  const set = new Set(series.map((s) => s.dims[dim]));
  return [...set].sort(compareValues);
}

const collator = new Intl.Collator(undefined, { numeric: true });
export function compareValues(a, b) {
  if (typeof a === "number" && typeof b === "number") return a - b;
  return collator.compare(String(a), String(b));
}

/** filters: {dim: [string values]} (absent dim = all values). */
export function matches(s, filters) {
  for (const [dim, allowed] of Object.entries(filters)) {
    if (allowed && !allowed.includes(String(s.dims[dim]))) return false;
  }
  return true;
}

/** Dimensions whose value differs among these series (what a label must say). */
export function varyingDims(series, dims = null) {
  const keys = dims || Object.keys(series[0]?.dims || {});
  return keys.filter((k) => k !== "engine" && k !== "version" && new Set(series.map((s) => JSON.stringify(s.dims[k]))).size > 1);
}

/** A short name that tells these series apart, e.g. "valkey:9.1.2 · io-threads 2". */
export function labelFor(s, varying) {
  const parts = varying.map((k) => dimValueText(k, s.dims[k]));
  return parts.length ? parts.join(" · ") : `${isolate(s.dims.server)} · ${isolate(s.dims.command)}`;
}

/** "pipeline P16 · 50 clients ..." for dimensions that are the same for all these series. */
export function constantDims(series, dims) {
  return dims
    .filter((k) => series.length && new Set(series.map((s) => JSON.stringify(s.dims[k]))).size === 1)
    .map((k) => {
      const value = dimValueText(k, series[0].dims[k]);
      // io-threads, pipeline, clients and sizes say what they are; others need their name.
      const text = ["io_threads", "pipeline", "clients", "data_size"].includes(k) ? value : `${DIM_LABELS[k] || k} ${value}`;
      return { dim: k, label: DIM_LABELS[k] || k, value, text };
    });
}

/** The most common value of a dimension: sensible defaults for pipeline, clients, data size. */
export function mostCommon(series, dim) {
  const counts = new Map();
  for (const s of series) counts.set(s.dims[dim], (counts.get(s.dims[dim]) || 0) + 1);
  return [...counts.entries()].sort((a, b) => b[1] - a[1] || compareValues(a[0], b[0]))[0]?.[0];
}
