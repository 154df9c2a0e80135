// Builds DOM nodes. Strings become text nodes and attributes are set one by one: nothing from a
// file is ever parsed as HTML.
const SVG_NS = "http://www.w3.org/2000/svg";

function build(el, attrs, children) {
  for (const [key, value] of Object.entries(attrs || {})) {
    if (value === undefined || value === null || value === false) continue;
    if (key.startsWith("on") && typeof value === "function") el.addEventListener(key.slice(2), value);
    else el.setAttribute(key, value === true ? "" : String(value));
  }
  for (const child of children.flat(Infinity)) {
    if (child === undefined || child === null || child === false) continue;
    el.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return el;
}

/** An HTML element: h("td", {class: "x"}, "text", otherNode). */
export function h(tag, attrs, ...children) {
  return build(document.createElement(tag), attrs, children);
}

/** An SVG element. */
export function s(tag, attrs, ...children) {
  return build(document.createElementNS(SVG_NS, tag), attrs, children);
}

/** A value from a file as display text: strings as they are, anything else as JSON. */
export function text(value) {
  if (value === null || value === undefined) return "—";
  return typeof value === "string" ? value : JSON.stringify(value);
}

/** A value as indented JSON text (strings unquoted). */
export function pretty(value) {
  if (typeof value === "string") return value;
  return JSON.stringify(value, null, 2);
}

export function percent(x) {
  return x === null || x === undefined ? "—" : `${(x * 100).toFixed(1)}%`;
}

export function signed(x, digits = 4) {
  if (x === null || x === undefined) return "—";
  return (x > 0 ? "+" : x < 0 ? "−" : "±") + Math.abs(x).toFixed(digits);
}

export function bytes(n) {
  if (n < 1024) return `${n} B`;
  const units = ["KiB", "MiB", "GiB", "TiB"];
  let v = n / 1024;
  let u = 0;
  while (v >= 1024 && u < units.length - 1) {
    v /= 1024;
    u++;
  }
  return `${v.toFixed(v < 10 ? 2 : 1)} ${units[u]}`;
}

/** Offers `content` as a file download. */
export function download(name, content, type) {
  const url = URL.createObjectURL(new Blob([content], { type }));
  const a = h("a", { href: url, download: name, hidden: true });
  document.body.append(a);
  a.click();
  a.remove();
  setTimeout(() => URL.revokeObjectURL(url), 1000);
}
