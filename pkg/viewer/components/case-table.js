// <dg-case-table>: the per-case table with filters, search, pages of rows and a drill-down per
// row. Regressed cases come first, then improved ones, then the others (each in the report's
// order). However many cases there are, the DOM holds one page of rows (docs/case-table.md):
// filters and search run over plain arrays, and the table tells assistive technology the whole
// size (aria-rowcount, aria-rowindex).
import { h, text, pretty, longText, shorten } from "../dom.js";

const differs = (c) => (c.old_verdict || "").toUpperCase() !== (c.new_verdict || "").toUpperCase() || c.old_errored !== c.new_errored;
const FILTERS = [
  ["all", "All", () => true],
  ["regressed", "Regressed", (c) => c.status === "regressed"],
  ["improved", "Improved", (c) => c.status === "improved"],
  ["different", "Different verdicts", differs],
  ["missing", "Missing / errored", (c) => c.old_missing || c.new_missing || c.old_errored || c.new_errored],
];
/** Rows per page. */
export const PAGE = 200;
/** Cases whose searched text is prepared per slice of the background work (about 5 ms). */
const SLICE = 4000;
const SEP = "\u0000";

const key = (id) => JSON.stringify(id);
const rank = (c) => (c.status === "regressed" ? 0 : c.status === "improved" ? 1 : 2);
const idle = (fn) => (typeof requestIdleCallback === "function" ? requestIdleCallback(fn, { timeout: 200 }) : setTimeout(fn, 0));

export class CaseTable extends HTMLElement {
  show(outcomes, cases) {
    const tcs = cases || [];
    // Regressed, then improved, then the rest: three buckets, each in the report's order.
    const buckets = [[], [], []];
    const counts = new Array(FILTERS.length).fill(0);
    for (let i = 0; i < outcomes.length; i++) {
      const c = outcomes[i];
      buckets[rank(c)].push(i);
      for (let f = 0; f < FILTERS.length; f++) if (FILTERS[f][2](c)) counts[f]++;
    }
    this.outcomes = outcomes;
    this.order = buckets.flat();
    // The test cases are normally in the report's order: case i is outcome i. Otherwise (or for
    // any that do not line up) they are looked up by pipeline id, built once when first needed.
    this.cases = tcs;
    this.byId = null;
    this.hay = new Array(outcomes.length);
    this.prepared = 0;
    this.generation = (this.generation || 0) + 1;
    this.filter = "all";
    this.query = "";
    this.rows = this.order;
    this.shown = { filter: "all", query: "" };
    this.page = 0;
    const filterButtons = FILTERS.map(([name, label], f) =>
      h("button", { type: "button", class: "dg-chip", "data-filter": name, "aria-pressed": String(name === "all"), onclick: () => this.setFilter(name) }, `${label} (${counts[f]})`),
    );
    this.filterBar = h("div", { class: "dg-filters", role: "group", "aria-label": "Filter cases" }, filterButtons);
    this.search = h("input", { type: "search", placeholder: "Search id, template, verdict, input…", "aria-label": "Search cases", "data-testid": "case-search" });
    this.search.addEventListener("input", () => {
      this.query = this.search.value.trim().toLowerCase();
      this.refilter();
    });
    this.body = h("tbody");
    this.table = h(
      "table",
      { class: "dg-table dg-cases", "aria-label": "Cases" },
      h("thead", {}, h("tr", { "aria-rowindex": "1" }, ["pipeline", "template", "expected", "old", "new", "status"].map((c) => h("th", { scope: "col" }, c)))),
      this.body,
    );
    this.count = h("span", { class: "dg-muted", "data-testid": "case-count", "aria-live": "polite" });
    const nav = (name, label, title) => h("button", { type: "button", class: "dg-button dg-secondary", "data-page": name, "aria-label": title, onclick: () => this.go(name) }, label);
    this.pageField = h("input", { type: "number", min: "1", step: "1", class: "dg-page-field", "aria-label": "Page", "data-testid": "case-page" });
    this.pageField.addEventListener("change", () => this.goTo(Number(this.pageField.value) - 1));
    this.pageField.addEventListener("keydown", (e) => {
      if (e.key === "Enter") this.goTo(Number(this.pageField.value) - 1);
    });
    this.pages = h("span", { class: "dg-muted" });
    this.range = h("span", { class: "dg-muted", "data-testid": "case-range" });
    this.pager = h(
      "nav",
      { class: "dg-pager", "aria-label": "Case pages", "data-testid": "case-pager" },
      nav("first", "«", "First page"),
      nav("prev", "‹", "Previous page"),
      h("label", {}, "Page ", this.pageField, " ", this.pages),
      nav("next", "›", "Next page"),
      nav("last", "»", "Last page"),
      this.range,
    );
    this.replaceChildren(h("div", { class: "dg-table-tools" }, this.filterBar, this.search), this.table, h("div", { class: "dg-table-foot" }, this.count, this.pager));
    this.render();
    this.prepareInBackground();
  }

  /** The test case of outcome `i` (for search and the drill-down). */
  testCase(i) {
    const c = this.outcomes[i];
    const tc = this.cases[i];
    if (tc && tc.pipeline_id === c.pipeline_id) return tc;
    if (!this.byId) this.byId = new Map(this.cases.map((t) => [key(t.pipeline_id), t]));
    return this.byId.get(key(c.pipeline_id));
  }

  /** The searched text of outcome `i`, lowercased once (values can be hundreds of KB). */
  haystack(i) {
    let hay = this.hay[i];
    if (hay === undefined) {
      const c = this.outcomes[i];
      const tc = this.testCase(i);
      const values = [text(c.pipeline_id), text(c.template_id), text(c.expected), c.old_verdict, c.new_verdict, c.old_error, c.new_error, tc ? text(tc.input_text) : ""];
      hay = values.filter((v) => v).map((v) => String(v).toLowerCase()).join(SEP);
      this.hay[i] = hay;
    }
    return hay;
  }

  /** Lowercases the cases' searched text in idle slices, so the first search is fast too. */
  prepareInBackground() {
    const generation = this.generation;
    const step = () => {
      if (generation !== this.generation) return;
      const end = Math.min(this.outcomes.length, this.prepared + SLICE);
      for (let i = this.prepared; i < end; i++) this.haystack(i);
      this.prepared = end;
      if (end < this.outcomes.length) idle(step);
    };
    idle(step);
  }

  setFilter(name) {
    this.filter = name;
    for (const b of this.filterBar.children) b.setAttribute("aria-pressed", String(b.dataset.filter === name));
    this.refilter();
  }

  /** Recomputes the shown cases (a pass over the ordered indices) and shows the first page. */
  refilter() {
    const pred = FILTERS.find(([n]) => n === this.filter)[2];
    const q = this.query;
    const outcomes = this.outcomes;
    // Typing on narrows the search: a case matching the longer text matched the shorter one.
    const narrowing = this.shown && this.shown.filter === this.filter && q.includes(this.shown.query);
    const from = narrowing ? this.rows : this.order;
    if (this.filter === "all" && !q) this.rows = this.order;
    else {
      const rows = [];
      for (const i of from) {
        if (!pred(outcomes[i])) continue;
        if (q && !this.haystack(i).includes(q)) continue;
        rows.push(i);
      }
      this.rows = rows;
    }
    this.shown = { filter: this.filter, query: q };
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
    for (let k = from; k < to; k++) shown.push(this.row(this.rows[k], k));
    this.body.replaceChildren(...shown);
    this.table.setAttribute("aria-rowcount", String(total + 1));
    this.count.textContent = `${total} case(s)`;
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

  /** The row of outcome `i`, shown at position `k` of the filtered cases. */
  row(i, k) {
    const c = this.outcomes[i];
    // Under `repeats: mean` the cell also counts the case's runs: its last verdict, and how many pass.
    const runs = (n, passes) => (n === undefined ? null : h("span", { class: "dg-muted dg-runs", "data-testid": "case-runs" }, ` ${passes}/${n} runs pass`));
    const verdict = (v, pass, missing, errored, error, n, passes) =>
      h("td", { class: pass ? "dg-pass" : "dg-fail" }, missing ? h("em", {}, "missing") : errored ? h("em", { title: shorten(error || "") }, "error") : longText(v), pass ? " ✓" : " ✗", runs(n, passes));
    const tr = h(
      "tr",
      { "data-testid": "case-row", "data-id": key(c.pipeline_id), "aria-rowindex": String(k + 2), tabindex: "0", "aria-expanded": "false", class: `dg-status-${c.status}` },
      h("td", { class: "dg-mono" }, longText(c.pipeline_id)),
      h("td", {}, longText(c.template_id)),
      h("td", {}, longText(c.expected)),
      verdict(c.old_verdict, c.old_pass, c.old_missing, c.old_errored, c.old_error, c.old_runs, c.old_passes),
      verdict(c.new_verdict, c.new_pass, c.new_missing, c.new_errored, c.new_error, c.new_runs, c.new_passes),
      h("td", {}, c.status.replace("_", " ")),
    );
    const toggle = () => {
      const open = tr.getAttribute("aria-expanded") === "true";
      if (open) {
        tr.nextSibling && tr.nextSibling.remove();
        tr.setAttribute("aria-expanded", "false");
      } else {
        tr.after(this.detail(c, this.testCase(i)));
        tr.setAttribute("aria-expanded", "true");
      }
    };
    tr.addEventListener("click", toggle);
    tr.addEventListener("keydown", (e) => {
      if (e.key === "Enter" || e.key === " ") {
        e.preventDefault();
        toggle();
      }
    });
    return tr;
  }

  detail(c, tc) {
    const verdictLine = (label, v, missing, error) => h("p", {}, h("strong", {}, `${label}: `), missing ? "missing" : longText(v), error ? [" (runner error: ", longText(error), ")"] : "");
    const outputs = tc ? Object.entries(tc.expected_stage_outputs) : [];
    return h(
      "tr",
      { class: "dg-detail", "data-testid": "case-detail" },
      h(
        "td",
        { colspan: "6" },
        verdictLine("Expected verdict", c.expected, false, null),
        verdictLine("Old model", c.old_verdict, c.old_missing, c.old_error),
        verdictLine("New model", c.new_verdict, c.new_missing, c.new_error),
        c.old_runs !== undefined ? h("p", {}, h("strong", {}, "Runs: "), `old ${c.old_passes} of ${c.old_runs} pass · new ${c.new_passes} of ${c.new_runs} pass (the verdicts above are each model's last)`) : null,
        tc ? h("p", {}, h("strong", {}, "Episode reward: "), text(tc.episode_reward), tc.input_hash !== undefined ? [" · ", h("strong", {}, "input hash: "), h("code", {}, longText(tc.input_hash))] : null) : null,
        h("h4", {}, "Input"),
        h("pre", { class: "dg-pre", "data-testid": "case-input" }, tc ? longText(pretty(tc.input_text)) : "(not available)"),
        h("h4", {}, `Expected stage outputs (${outputs.length})`),
        h("dl", { class: "dg-outputs" }, outputs.map(([stage, out]) => [h("dt", { class: "dg-mono" }, longText(stage)), h("dd", {}, h("pre", { class: "dg-pre" }, longText(pretty(out))))])),
      ),
    );
  }
}
