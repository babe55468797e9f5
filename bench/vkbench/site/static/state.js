// The URL carries all view state: "#/route?key=value&...". A copied link reproduces the view.

export function parseHash(hash = location.hash) {
  const raw = hash.replace(/^#\/?/, "");
  const q = raw.indexOf("?");
  const route = (q < 0 ? raw : raw.slice(0, q)) || "overview";
  const params = new URLSearchParams(q < 0 ? "" : raw.slice(q + 1));
  return { route, params };
}

export function buildHash(route, params) {
  const entries = [...params.entries()].filter(([, v]) => v !== "" && v != null);
  entries.sort(([a], [b]) => a.localeCompare(b)); // one view, one URL
  const qs = new URLSearchParams(entries).toString().replace(/%3A/gi, ":").replace(/%2C/gi, ",");
  return `#/${route}${qs ? "?" + qs : ""}`;
}

/** Go to a new view state (a history entry, so Back works). */
export function navigate(route, params) {
  const next = buildHash(route, params);
  if (next !== location.hash) location.hash = next;
}

/** Record state that should not add a history entry (zoom while dragging, defaults). */
export function replaceState(route, params) {
  const next = buildHash(route, params);
  if (next !== location.hash) history.replaceState(null, "", next);
}

export function listParam(params, key) {
  const v = params.get(key);
  return v == null || v === "" ? null : v.split(",");
}
