// Tiny DOM helpers: no framework, just enough to keep the views readable.
import { safeText } from "./format.js";

/** h("a.cls", {href}, child, ...) -> element. Strings become text nodes (never HTML). */
export function h(tag, attrs = {}, ...children) {
  const [name, ...classes] = tag.split(".");
  const el = document.createElement(name || "div");
  if (classes.length) el.className = classes.join(" ");
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v == null || v === false) continue;
    if (k.startsWith("on") && typeof v === "function") el.addEventListener(k.slice(2), v);
    else if (k === "style" && typeof v === "object") Object.assign(el.style, v);
    else if (k === "dataset") Object.assign(el.dataset, v);
    else el.setAttribute(k, v === true ? "" : v);
  }
  append(el, children);
  return el;
}

function append(el, children) {
  for (const c of children.flat(Infinity)) {
    if (c == null || c === false) continue;
    // Controls and bidi overrides never reach the page as themselves (format.js safeText); the
    // views isolate each name inside a string already (format.js isolate).
    el.append(c instanceof Node ? c : document.createTextNode(safeText(c)));
  }
}

/** `href` when it is an https: URL, else null: a `javascript:` or `data:` link that slipped
 * into the history never becomes a link (the history's reader refuses them too). */
export function safeHref(href) {
  return typeof href === "string" && /^https:\/\/[^\s]+$/i.test(href) ? href : null;
}

/** An external link that opens in a new tab (GitHub commits and workflow runs only). */
export function extLink(href, text, label) {
  href = safeHref(href);
  if (!href) return h("span", {}, text);
  return h("a", { href, target: "_blank", rel: "noopener", "aria-label": label || null }, text);
}

/** <label>text <select> with options [{value, text}] */
export function select(id, labelText, options, value, onchange) {
  const sel = h("select", { id, name: id, onchange: (e) => onchange(e.target.value) },
    options.map((o) => h("option", { value: o.value, selected: String(o.value) === String(value) }, o.text)));
  return h("label.control", { for: id }, h("span.control-label", {}, labelText), sel);
}

export function section(title, ...children) {
  const id = "sec-" + title.toLowerCase().replace(/[^a-z0-9]+/g, "-");
  return h("section.panel", { "aria-labelledby": id }, h("h2", { id }, title), ...children);
}

export function empty(text) {
  return h("p.empty", {}, text);
}

