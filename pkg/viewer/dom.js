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

/** How many characters of a long value are shown before "… (N more characters)". */
export const SHOWN_CHARACTERS = 200;

/** The first `n` characters of `str` (never half of a surrogate pair) and how many are left. */
function cut(str, n) {
  let end = Math.min(n, str.length);
  const c = str.charCodeAt(end - 1);
  if (end < str.length && c >= 0xd800 && c <= 0xdbff) end--;
  let rest = 0;
  for (let i = end; i < str.length; i++, rest++) {
    const d = str.charCodeAt(i);
    if (d >= 0xd800 && d <= 0xdbff && i + 1 < str.length) {
      const next = str.charCodeAt(i + 1);
      if (next >= 0xdc00 && next <= 0xdfff) i++;
    }
  }
  return [str.slice(0, end), rest];
}

/** `str` cut to its first `n` characters with a note of the rest, or `str` when short. */
export function shorten(str, n = SHOWN_CHARACTERS) {
  if (str.length <= n) return str;
  const [head, rest] = cut(str, n);
  return rest ? `${head}… (${rest} more characters)` : str;
}

/**
 * A value from a file for display: a text node when short; otherwise its first characters and
 * "… (N more characters)", with a button that shows the whole value (and shortens it again)
 * and one that copies it. A huge text in the layout (a table column of 300 KB words) freezes the
 * page, so the whole value is laid out only on demand, wrapping anywhere.
 */
export function longText(value, n = SHOWN_CHARACTERS) {
  const full = typeof value === "string" ? value : text(value);
  const short = shorten(full, n);
  if (short === full) return document.createTextNode(full);
  const shown = h("span", { class: "dg-long-text", "data-testid": "long-value-text" }, short);
  const stop = (e) => e.stopPropagation();
  const expand = h("button", { type: "button", class: "dg-link", "aria-expanded": "false", "data-testid": "long-value-expand" }, "show all");
  expand.addEventListener("click", (e) => {
    stop(e);
    const open = expand.getAttribute("aria-expanded") !== "true";
    shown.textContent = open ? full : short;
    shown.classList.toggle("dg-long-full", open);
    expand.setAttribute("aria-expanded", String(open));
    expand.textContent = open ? "show less" : "show all";
  });
  const copy = h("button", { type: "button", class: "dg-link", "data-testid": "long-value-copy", "aria-label": "Copy the whole value" }, "copy");
  copy.addEventListener("click", async (e) => {
    stop(e);
    try {
      await navigator.clipboard.writeText(full);
      copy.textContent = "copied";
    } catch {
      copy.textContent = "copy failed";
    }
  });
  for (const b of [expand, copy]) b.addEventListener("keydown", stop);
  return h("span", { class: "dg-long", "data-testid": "long-value" }, shown, " ", expand, copy);
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
