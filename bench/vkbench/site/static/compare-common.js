// Shared by the comparison tabs: the newest value of a series, selects over dimension values,
// and the dimension defaults that keep like compared with like.
import { compareValues, mostCommon, valuesOf } from "./dims.js";
import { DIM_LABELS, dimValueText } from "./format.js";
import { buildHash, navigate } from "./state.js";
import { select } from "./ui.js";

/** [median, lo, hi, valid] of the series' newest point for a metric, or null. */
export function lastValue(s, metric) {
  const m = s.last?.m?.[metric];
  return m && m[0] != null ? { v: m[0], lo: m[1], hi: m[2], ok: s.last.ok === 1 } : null;
}

/** A select over the values of a dimension; "" means every value when allowAll. */
export function dimSelect(tab, p, index, dim, series, { allowAll = false, fallback } = {}) {
  const values = valuesOf(series, dim);
  const current = p.get(dim) ?? (allowAll ? "" : String(fallback ?? values[0]));
  const options = (allowAll ? [{ value: "", text: "all" }] : []).concat(values.map((v) => ({ value: String(v), text: dimValueText(dim, v) })));
  return {
    value: current,
    el: select(`c-${dim}`, DIM_LABELS[dim] || dim, options, current, (v) => {
      const q = new URLSearchParams(p);
      q.set("tab", tab);
      if (v === "") q.delete(dim); else q.set(dim, v);
      navigate("compare", q);
    }),
  };
}

/** Load settings (pipeline, clients, data size, tool): the most common, so comparisons are like for like. */
export function loadDims(tab, p, index, series) {
  const out = {};
  const els = [];
  for (const dim of ["pipeline", "clients", "data_size", "tool"]) {
    if (valuesOf(series, dim).length < 2) continue;
    const sel = dimSelect(tab, p, index, dim, series, { fallback: mostCommon(series, dim) });
    out[dim] = sel.value;
    els.push(sel.el);
  }
  return { values: out, els };
}

export function hashFor(tab, p) {
  const q = new URLSearchParams(p);
  q.set("tab", tab);
  return buildHash("compare", q);
}

export { compareValues };
