// <dg-paged-table>: a table of any number of rows shown a page at a time, with optional filter
// chips and a search, the case table's discipline (docs/case-table.md): filters and search run
// over plain arrays of indices, the searched text is lowercased once in idle slices, and the
// DOM holds one page of rows whatever the number of items. The Compare view's flips, templates
// and one-sided pipelines use it.
import { h } from "../dom.js";

/** Rows per page. */
export const PAGE = 200;
/** Items whose searched text is prepared per idle slice. */
const SLICE = 4000;
const idle = (fn) => (typeof requestIdleCallback === "function" ? requestIdleCallback(fn, { timeout: 200 }) : setTimeout(fn, 0));

export class PagedTable extends HTMLElement {
  /**
   * Shows `items` with `config`: {label, testid, columns: [header…], row(item, k) → <tr>,
   * hay(item) → searched text (omit for no search), filters: [[name, label, pred]…] (the
   * first is shown first), placeholder, unit (what a row is, for the count)}.
   */
  show(items, config) {
    this.items = items;
    this.config = config;
    this.generation = (this.generation || 0) + 1;
    const filters = config.filters || [["all", "All", () => true]];
    const counts = new Array(filters.length).fill(0);
    for (const item of items) for (let f = 0; f < filters.length; f++) if (filters[f][2](item)) counts[f]++;
    this.filters = filters;
    this.filter = filters[0][0];
    this.query = "";
    this.order = items.map((_, i) => i);
    this.rows = this.order;
    this.hay = new Array(items.length);
    this.prepared = 0;
    this.page = 0;
    const t = config.testid;
    this.filterBar = h(
      "div",
      { class: "dg-filters", role: "group", "aria-label": `Filter ${config.label}` },
      filters.length > 1 ? filters.map(([name, label], f) => h("button", { type: "button", class: "dg-chip", "data-filter": name, "aria-pressed": String(f === 0), onclick: () => this.setFilter(name) }, `${label} (${counts[f]})`)) : null,
    );
    this.search = config.hay ? h("input", { type: "search", placeholder: config.placeholder || "Search…", "aria-label": `Search ${config.label}`, "data-testid": `${t}-search` }) : null;
    if (this.search) {
      this.search.addEventListener("input", () => {
        this.query = this.search.value.trim().toLowerCase();
        this.refilter();
      });
    }
    this.body = h("tbody");
    this.table = h("table", { class: "dg-table", "aria-label": config.label, "data-testid": `${t}-table` }, h("thead", {}, h("tr", { "aria-rowindex": "1" }, config.columns.map((c) => h("th", { scope: "col" }, c)))), this.body);
    this.count = h("span", { class: "dg-muted", "data-testid": `${t}-count`, "aria-live": "polite" });
    const nav = (name, label, title) => h("button", { type: "button", class: "dg-button dg-secondary", "data-page": name, "aria-label": title, onclick: () => this.go(name) }, label);
    this.pageField = h("input", { type: "number", min: "1", step: "1", class: "dg-page-field", "aria-label": "Page", "data-testid": `${t}-page` });
    this.pageField.addEventListener("change", () => this.goTo(Number(this.pageField.value) - 1));
    this.pageField.addEventListener("keydown", (e) => {
      if (e.key === "Enter") this.goTo(Number(this.pageField.value) - 1);
    });
    this.pages = h("span", { class: "dg-muted" });
    this.range = h("span", { class: "dg-muted", "data-testid": `${t}-range` });
    this.pager = h("nav", { class: "dg-pager", "aria-label": `${config.label} pages`, "data-testid": `${t}-pager` }, nav("first", "«", "First page"), nav("prev", "‹", "Previous page"), h("label", {}, "Page ", this.pageField, " ", this.pages), nav("next", "›", "Next page"), nav("last", "»", "Last page"), this.range);
    this.replaceChildren(h("div", { class: "dg-table-tools" }, this.filterBar, this.search), this.table, h("div", { class: "dg-table-foot" }, this.count, this.pager));
    this.render();
    if (config.hay) this.prepareInBackground();
  }

  haystack(i) {
    let hay = this.hay[i];
    if (hay === undefined) {
      hay = this.config.hay(this.items[i]).toLowerCase();
      this.hay[i] = hay;
    }
    return hay;
  }

  prepareInBackground() {
    const generation = this.generation;
    const step = () => {
      if (generation !== this.generation) return;
      const end = Math.min(this.items.length, this.prepared + SLICE);
      for (let i = this.prepared; i < end; i++) this.haystack(i);
      this.prepared = end;
      if (end < this.items.length) idle(step);
    };
    idle(step);
  }

  setFilter(name) {
    this.filter = name;
    for (const b of this.filterBar.children) b.setAttribute("aria-pressed", String(b.dataset.filter === name));
    this.refilter();
  }

  refilter() {
    const pred = this.filters.find(([n]) => n === this.filter)[2];
    const q = this.query;
    const all = this.filter === this.filters[0][0];
    if (all && !q) this.rows = this.order;
    else {
      const rows = [];
      for (const i of this.order) {
        if (!pred(this.items[i])) continue;
        if (q && !this.haystack(i).includes(q)) continue;
        rows.push(i);
      }
      this.rows = rows;
    }
    this.page = 0;
    this.render();
  }

  pageCount() {
    return Math.max(1, Math.ceil(this.rows.length / PAGE));
  }

  go(name) {
    const last = this.pageCount() - 1;
    this.goTo(name === "first" ? 0 : name === "prev" ? this.page - 1 : name === "next" ? this.page + 1 : last);
  }

  goTo(page) {
    if (!Number.isFinite(page)) return;
    const target = Math.max(0, Math.min(this.pageCount() - 1, Math.floor(page)));
    if (target === this.page) {
      this.pageField.value = String(target + 1);
      return;
    }
    this.page = target;
    this.render();
  }

  render() {
    const total = this.rows.length;
    const from = this.page * PAGE;
    const to = Math.min(total, from + PAGE);
    const shown = [];
    for (let k = from; k < to; k++) {
      const tr = this.config.row(this.items[this.rows[k]], k);
      tr.setAttribute("aria-rowindex", String(k + 2));
      shown.push(tr);
    }
    this.body.replaceChildren(...shown);
    this.table.setAttribute("aria-rowcount", String(total + 1));
    this.count.textContent = `${total} ${this.config.unit || "row(s)"}`;
    const pages = this.pageCount();
    this.pager.hidden = pages === 1;
    this.pageField.max = String(pages);
    this.pageField.value = String(this.page + 1);
    this.pages.textContent = `of ${pages}`;
    this.range.textContent = total ? `rows ${from + 1}–${to}` : "";
    for (const b of this.pager.querySelectorAll("button")) {
      const name = b.dataset.page;
      b.disabled = name === "first" || name === "prev" ? this.page === 0 : this.page === pages - 1;
    }
  }
}
