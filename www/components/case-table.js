// <dg-case-table>: the per-case table with filters, search, sorting, pages of rows and a
// drill-down per row, where the reviewer marks the case (docs/review.md). Regressed cases come
// first, then improved ones, then the others (each in the report's order), until a column is
// sorted. However many cases there are, the DOM holds one page of rows (docs/case-table.md):
// filters, search and sorting run over plain arrays, and the table tells assistive technology
// the whole size (aria-rowcount, aria-rowindex). Keys (docs/review.md): j/k or ↓/↑ the next and
// previous case with its drill-down open, Enter open or close, 1/2/3 mark, n note, / search,
// ? the list of keys. Emits `dg-case-view` whenever the view (filter, search, sort, page, open
// case) changes.
import { h, text, pretty, longText, shorten } from "../dom.js";
import { MARKS, MARK_LABEL, MAX_NOTE_BYTES } from "../review-marks.js";

const differs = (c) => (c.old_verdict || "").toUpperCase() !== (c.new_verdict || "").toUpperCase() || c.old_errored !== c.new_errored;
const FILTERS = [
  ["all", "All", () => true],
  ["regressed", "Regressed", (c) => c.status === "regressed"],
  ["improved", "Improved", (c) => c.status === "improved"],
  ["different", "Different verdicts", differs],
  ["missing", "Missing / errored", (c) => c.old_missing || c.new_missing || c.old_errored || c.new_errored],
];
/** Filters over the marks (shown when the table has marks): `(c, i)` with `this` the table. */
const MARK_FILTERS = [
  ["marked", "Marked", function (c, i) {
    return Boolean(this.review.of(i));
  }],
  ["unmarked-regressed", "Unmarked regressed", function (c, i) {
    return c.status === "regressed" && !this.review.of(i);
  }],
];
/** Filters over the change in latency and tokens (shown when the records carry them). */
const COST_FILTERS = [
  ["slower", "Slower", "latency_ms", 1],
  ["faster", "Faster", "latency_ms", -1],
  ["more-tokens", "More tokens", "tokens", 1],
  ["fewer-tokens", "Fewer tokens", "tokens", -1],
].map(([name, label, key, sign]) => [
  name,
  label,
  function (c, i) {
    const d = this.costChange(i, key);
    return d !== null && Math.sign(d) === sign;
  },
  key,
]);
/** Rows per page. */
export const PAGE = 200;
/** Cases whose searched text is prepared per slice of the background work (about 5 ms). */
const SLICE = 4000;
const SEP = "\u0000";

const key = (id) => JSON.stringify(id);
const rank = (c) => (c.status === "regressed" ? 0 : c.status === "improved" ? 1 : 2);
const idle = (fn) => (typeof requestIdleCallback === "function" ? requestIdleCallback(fn, { timeout: 200 }) : setTimeout(fn, 0));
const verdictKey = (v, missing, errored) => (missing ? "\uffff2" : errored ? "\uffff1" : String(v ?? ""));
/** The columns: name, and the sort key of outcome `c` (the `review` column's needs the table). */
const COLUMNS = [
  ["pipeline", (c) => c.pipeline_id],
  ["template", (c) => text(c.template_id)],
  ["expected", (c) => text(c.expected)],
  ["old", (c) => verdictKey(c.old_verdict, c.old_missing, c.old_errored)],
  ["new", (c) => verdictKey(c.new_verdict, c.new_missing, c.new_errored)],
  ["status", (c) => `${rank(c)}${c.status}`],
];
const signedNumber = (x, digits) => `${x > 0 ? "+" : x < 0 ? "−" : "±"}${Math.abs(x).toFixed(digits)}`;
/** Ids sort as numbers when both are, numbers first; the rest as text. */
const compare = (a, b) => {
  const na = typeof a === "number";
  const nb = typeof b === "number";
  if (na !== nb) return na ? -1 : 1;
  if (na) return a - b;
  const x = String(a);
  const y = String(b);
  return x < y ? -1 : x > y ? 1 : 0;
};

/** The keys, as the `?` list shows them. */
export const KEYS = [
  ["j / ↓", "next case, its drill-down open"],
  ["k / ↑", "previous case, its drill-down open"],
  ["Enter", "open or close the case"],
  ["1 / 2 / 3", "mark the open case accepted / label wrong / needs fix (again: clear it)"],
  ["n", "write a note on the open case"],
  ["/", "search"],
  ["?", "this list"],
  ["Esc", "leave the note or the search, close this list"],
];

/** Characters of an answer shown before "show all". */
const ANSWER_SHOWN = 4000;
/** Lines of an answer shown before "show all". */
const ANSWER_LINES = 40;
/** Characters a click on "show more" adds to a huge answer. */
const ANSWER_STEP = 200000;

export class CaseTable extends HTMLElement {
  /**
   * Shows `outcomes` (the report's cases) with their test cases `cases`. `answers(index)`, when
   * given, resolves test case `index`'s two answers side by side (the worker's `answers`), or
   * null when neither record carries one. `review` (a ReviewMarks), when given, holds the
   * reviewer's marks on these outcomes (by their place in the report).
   */
  show(outcomes, cases, { answers, trajectory, review, costs } = {}) {
    this.answers = answers || null;
    this.trajectory = trajectory || null;
    /** The answers read lately, by test index: a re-render of an open case reads nothing again. */
    this.answerCache = new Map();
    this.costs = costs || null;
    if (this.listening) this.listening.abort();
    this.review = review || null;
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
    this.ranked = buckets.flat();
    this.order = this.ranked;
    // The test cases are normally in the report's order: case i is outcome i. Otherwise (or for
    // any that do not line up) they are looked up by pipeline id, built once when first needed.
    this.cases = tcs;
    this.byId = null;
    this.hay = new Array(outcomes.length);
    this.prepared = 0;
    this.generation = (this.generation || 0) + 1;
    this.filter = "all";
    this.template = null;
    this.query = "";
    this.sort = null;
    this.rows = this.order;
    this.shown = null;
    this.page = 0;
    /** The open case: its outcome index (the one j/k move from and 1/2/3 mark), or null. */
    this.current = null;
    const chip = (name, label, n) =>
      h("button", { type: "button", class: "dg-chip", "data-filter": name, "aria-pressed": String(name === "all"), onclick: () => this.setFilter(name) }, n === null ? label : `${label} (${n})`);
    const filterButtons = FILTERS.map(([name, label], f) => chip(name, label, counts[f]));
    this.markChips = this.review ? MARK_FILTERS.map(([name, label]) => chip(name, label, null)) : [];
    // Latency and tokens, when some record of either model carries them.
    const has = (key) => ["old", "new"].some((side) => this.costs && this.costs[side] && this.costs[side][key].some((x) => !Number.isNaN(x)));
    this.costKeys = ["latency_ms", "tokens"].filter(has);
    this.costFilters = COST_FILTERS.filter(([, , , key]) => this.costKeys.includes(key));
    const costChips = this.costFilters.map(([name, label, pred]) => {
      let n = 0;
      for (let i = 0; i < outcomes.length; i++) if (pred.call(this, outcomes[i], i)) n++;
      return chip(name, label, n);
    });
    this.templateChip = h("button", { type: "button", class: "dg-chip", "data-testid": "template-filter", "aria-pressed": "true", hidden: true, title: "Show every template's cases", onclick: () => this.setTemplate(null) });
    this.filterBar = h("div", { class: "dg-filters", role: "group", "aria-label": "Filter cases" }, filterButtons, this.markChips, costChips, this.templateChip);
    this.search = h("input", { type: "search", placeholder: "Search id, template, verdict, input… ( / )", "aria-label": "Search cases", "data-testid": "case-search" });
    this.search.addEventListener("input", () => {
      this.query = this.search.value.trim().toLowerCase();
      this.refilter();
    });
    this.search.addEventListener("keydown", (e) => {
      if (e.key === "Escape" || e.key === "Enter") {
        e.preventDefault();
        e.stopPropagation();
        this.search.blur();
        this.focusCurrent();
      }
    });
    this.body = h("tbody");
    const columns = [...COLUMNS];
    if (this.costKeys.includes("latency_ms")) columns.push(["latency", (c, i) => this.costChange(i, "latency_ms"), "Δ latency (ms)"]);
    if (this.costKeys.includes("tokens")) columns.push(["tokens", (c, i) => this.costChange(i, "tokens"), "Δ tokens"]);
    if (this.review) columns.push(["review", (c, i) => (this.review.of(i) ? this.review.of(i).mark : null)]);
    this.columns = columns;
    this.heads = columns.map(([name, , label], col) =>
      h("th", { scope: "col", "aria-sort": "none" }, h("button", { type: "button", class: "dg-sort", "data-testid": `sort-${name}`, title: `Sort by ${label || name}`, onclick: () => this.sortBy(col) }, label || name)),
    );
    this.table = h("table", { class: "dg-table dg-cases", "aria-label": "Cases" }, h("thead", {}, h("tr", { "aria-rowindex": "1" }, this.heads)), this.body);
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
    this.keysHelp = h(
      "div",
      { class: "dg-keys", role: "dialog", "aria-label": "Keys", "data-testid": "keys-help", hidden: true },
      h("h4", {}, "Keys"),
      h("dl", {}, KEYS.map(([k, what]) => [h("dt", {}, h("kbd", {}, k)), h("dd", {}, what)])),
      h("button", { type: "button", class: "dg-button dg-secondary", onclick: () => this.toggleKeys(false) }, "Close"),
    );
    const hint = h("p", { class: "dg-muted dg-keys-hint" }, "Keys: j/k next and previous case, Enter open, ", this.review ? "1/2/3 mark, n note, " : "", "/ search, ? all keys.");
    this.replaceChildren(h("div", { class: "dg-table-tools" }, this.filterBar, this.search), hint, this.keysHelp, this.table, h("div", { class: "dg-table-foot" }, this.count, this.pager));
    if (this.review) {
      // Until the table leaves the page (or shows other cases): a table no longer shown keeps
      // no listener, and so is not kept alive by the marks.
      this.listening = new AbortController();
      this.review.addEventListener("change", (e) => this.marksChanged(e.detail.index, e.detail.noteOnly), { signal: this.listening.signal });
      this.countMarks();
    }
    this.render();
    this.prepareInBackground();
  }

  disconnectedCallback() {
    if (this.listening) this.listening.abort();
  }

  /** The test-set index of outcome `i`'s test case (-1: none). */
  testIndex(i) {
    const c = this.outcomes[i];
    const tc = this.cases[i];
    if (tc && tc.pipeline_id === c.pipeline_id) return i;
    if (!this.byId) this.byId = new Map(this.cases.map((t, k) => [key(t.pipeline_id), k]));
    const k = this.byId.get(key(c.pipeline_id));
    return k === undefined ? -1 : k;
  }

  /** The test case of outcome `i` (for search and the drill-down). */
  testCase(i) {
    const k = this.testIndex(i);
    return k < 0 ? undefined : this.cases[k];
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

  /** Every filter this table offers. */
  filters() {
    return [...FILTERS, ...(this.review ? MARK_FILTERS : []), ...this.costFilters];
  }

  /** Outcome `i`'s `key` (`latency_ms`, `tokens`) for `side`, or null when its records say nothing. */
  cost(i, side, key) {
    const column = this.costs && this.costs[side] ? this.costs[side][key] : null;
    const k = column ? this.testIndex(i) : -1;
    return k < 0 || Number.isNaN(column[k]) ? null : column[k];
  }

  /** New minus old for outcome `i`'s `key`, or null unless both models' records say. */
  costChange(i, key) {
    const old = this.cost(i, "old", key);
    const neu = this.cost(i, "new", key);
    return old === null || neu === null ? null : neu - old;
  }

  setFilter(name) {
    if (!this.filters().some(([n]) => n === name)) return;
    this.filter = name;
    for (const b of this.filterBar.querySelectorAll("[data-filter]")) b.setAttribute("aria-pressed", String(b.dataset.filter === name));
    this.refilter();
  }

  /** Shows only the cases of template `id` (a template's row in the per-template table), or
   * every template's (null). */
  setTemplate(id) {
    this.template = id === null || id === undefined ? null : key(id);
    this.templateChip.hidden = this.template === null;
    this.templateChip.textContent = this.template === null ? "" : `Template: ${shorten(text(id), 60)} ×`;
    this.refilter();
  }

  /** Sorts by column `col` (again: the other way; a third time: the table's own order). */
  sortBy(col, dir) {
    if (dir === undefined) dir = !this.sort || this.sort.col !== col ? "ascending" : this.sort.dir === "ascending" ? "descending" : null;
    this.sort = dir && this.columns[col] ? { col, dir } : null;
    this.heads.forEach((th, k) => th.setAttribute("aria-sort", this.sort && this.sort.col === k ? this.sort.dir : "none"));
    this.resort();
  }

  resort() {
    if (!this.sort) this.order = this.ranked;
    else {
      const get = this.columns[this.sort.col][1];
      const keys = this.outcomes.map((c, i) => get(c, i));
      const sign = this.sort.dir === "descending" ? -1 : 1;
      // Stable: equal keys keep the table's own order; a case without a key comes last either way.
      const place = new Int32Array(this.outcomes.length);
      this.ranked.forEach((i, k) => (place[i] = k));
      const missing = (x) => x === null || x === undefined || Number.isNaN(x);
      this.order = [...this.ranked].sort((a, b) => {
        const [x, y] = [keys[a], keys[b]];
        if (missing(x) || missing(y)) return missing(x) === missing(y) ? place[a] - place[b] : missing(x) ? 1 : -1;
        return sign * compare(x, y) || place[a] - place[b];
      });
    }
    this.shown = null;
    this.refilter();
  }

  /** Recomputes the shown cases (a pass over the ordered indices) and shows the first page. */
  refilter({ keepPage = false } = {}) {
    const named = this.filters().find(([n]) => n === this.filter) || FILTERS[0];
    const pred = named[2];
    const q = this.query;
    const outcomes = this.outcomes;
    const template = this.template;
    // Typing on narrows the search: a case matching the longer text matched the shorter one.
    const narrowing = this.shown && this.shown.filter === this.filter && this.shown.template === template && q.includes(this.shown.query) && !MARK_FILTERS.some(([n]) => n === this.filter);
    const from = narrowing ? this.rows : this.order;
    if (this.filter === "all" && !q && template === null) this.rows = this.order;
    else {
      const rows = [];
      for (const i of from) {
        if (!pred.call(this, outcomes[i], i)) continue;
        if (template !== null && key(outcomes[i].template_id) !== template) continue;
        if (q && !this.haystack(i).includes(q)) continue;
        rows.push(i);
      }
      this.rows = rows;
    }
    this.shown = { filter: this.filter, query: q, template };
    if (!keepPage) this.page = 0;
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
    if (this.page > this.pageCount() - 1) this.page = this.pageCount() - 1;
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
    // The open case stays open while it is on the page shown; one no longer shown (searched,
    // filtered or paged away) is no longer the open case, so the keys act on what is seen.
    if (this.current !== null) {
      const tr = this.rowOf(this.current);
      if (tr) this.open(tr, this.current);
      else this.current = null;
    }
    this.viewChanged();
  }

  /** The row of outcome `i` on the page shown, or null. */
  rowOf(i) {
    return this.body.querySelector(`tr[data-case="${i}"]`);
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
      { "data-testid": "case-row", "data-id": key(c.pipeline_id), "data-case": String(i), "aria-rowindex": String(k + 2), tabindex: "0", "aria-expanded": "false", class: `dg-status-${c.status}` },
      h("td", { class: "dg-mono" }, longText(c.pipeline_id)),
      h("td", {}, longText(c.template_id)),
      h("td", {}, longText(c.expected)),
      verdict(c.old_verdict, c.old_pass, c.old_missing, c.old_errored, c.old_error, c.old_runs, c.old_passes),
      verdict(c.new_verdict, c.new_pass, c.new_missing, c.new_errored, c.new_error, c.new_runs, c.new_passes),
      h("td", { class: "dg-status" }, c.status.replace("_", " ")),
      this.costKeys.includes("latency_ms") ? this.changeCell(i, "latency_ms", 1) : null,
      this.costKeys.includes("tokens") ? this.changeCell(i, "tokens", 0) : null,
      this.review ? h("td", { "data-testid": "case-mark" }, this.markCell(i)) : null,
    );
    tr.addEventListener("click", (e) => {
      if (e.target.closest("button, a, textarea, input")) return;
      this.toggle(tr, i);
    });
    tr.addEventListener("keydown", (e) => {
      if (e.target !== tr) return;
      if (e.key === "Enter" || e.key === " ") {
        e.preventDefault();
        e.stopPropagation();
        this.toggle(tr, i);
      }
    });
    tr.addEventListener("focus", () => {
      if (this.current !== i && tr.getAttribute("aria-expanded") === "true") {
        this.current = i;
        this.viewChanged();
      }
    });
    return tr;
  }

  /** The change in `key` for outcome `i` (new − old), worse in the bad colour. */
  changeCell(i, key, digits) {
    const d = this.costChange(i, key);
    return h("td", { class: `dg-num ${d > 0 ? "dg-worse" : d < 0 ? "dg-better" : ""}`, "data-testid": `case-${key}` }, d === null ? "—" : signedNumber(d, digits));
  }

  /** Outcome `i`'s latency and tokens, old beside new, for the drill-down (null: none). */
  costLine(i) {
    if (!this.costKeys.length) return null;
    const part = (key, label, unit, digits) => {
      if (!this.costKeys.includes(key)) return null;
      const [o, n] = [this.cost(i, "old", key), this.cost(i, "new", key)];
      const shown = (x) => (x === null ? "—" : `${x.toFixed(digits)}${unit}`);
      const d = this.costChange(i, key);
      return [h("strong", {}, `${label}: `), `old ${shown(o)} · new ${shown(n)}`, d === null ? "" : ` (${signedNumber(d, digits)}${unit})`];
    };
    const parts = [part("latency_ms", "Latency", " ms", 1), part("tokens", "Tokens", "", 0)].filter(Boolean);
    return h("p", { "data-testid": "case-costs" }, parts.flatMap((p, k) => (k ? [" · ", ...p] : p)));
  }

  markCell(i) {
    const m = this.review && this.review.of(i);
    return m ? h("span", { class: `dg-badge dg-mark-${m.mark}`, title: m.note ? shorten(m.note) : MARK_LABEL[m.mark] }, MARK_LABEL[m.mark], m.note ? " ✎" : "") : "";
  }

  toggle(tr, i) {
    if (tr.getAttribute("aria-expanded") === "true") this.close(tr, i);
    else {
      this.open(tr, i);
      this.current = i;
    }
    this.viewChanged();
  }

  open(tr, i) {
    if (tr.getAttribute("aria-expanded") === "true") return;
    tr.after(this.detail(this.outcomes[i], this.testCase(i), this.testIndex(i), i));
    tr.setAttribute("aria-expanded", "true");
  }

  close(tr, i) {
    if (tr.getAttribute("aria-expanded") !== "true") return;
    tr.nextSibling && tr.nextSibling.remove();
    tr.setAttribute("aria-expanded", "false");
    if (this.current === i) this.current = null;
  }

  /** Opens outcome `i` (on its page, in the rows shown; false when it is not among them). */
  openCase(i, { focus = true } = {}) {
    const k = this.rows.indexOf(i);
    if (k < 0) return false;
    for (const tr of this.body.querySelectorAll('tr[aria-expanded="true"]')) this.close(tr, Number(tr.dataset.case));
    this.current = i;
    const page = Math.floor(k / PAGE);
    if (page !== this.page) {
      this.page = page;
      this.render();
    } else {
      this.open(this.rowOf(i), i);
      this.viewChanged();
    }
    if (focus) this.focusCurrent();
    return true;
  }

  focusCurrent() {
    const tr = this.current === null ? null : this.rowOf(this.current);
    if (tr) {
      tr.focus({ preventScroll: true });
      tr.scrollIntoView({ block: "nearest" });
    } else if (this.body.firstChild) this.body.firstChild.focus();
  }

  /** The next (`step` 1) or previous (-1) case, its drill-down open. */
  move(step) {
    if (!this.rows.length) return;
    const k = this.current === null ? -1 : this.rows.indexOf(this.current);
    const next = k < 0 ? (step > 0 ? this.page * PAGE : Math.min(this.rows.length, (this.page + 1) * PAGE) - 1) : Math.max(0, Math.min(this.rows.length - 1, k + step));
    if (k >= 0 && next === k) return;
    this.openCase(this.rows[next]);
  }

  /** Handles a key pressed in the viewer but not in a field (true: it was the table's). `near`:
   * the focus is on the page's body or in the results, where Enter and 1/2/3/n act on the open
   * case (not on a button of another panel); the arrows act only with the focus in the table,
   * so that they still scroll the page. */
  handleKey(e, near) {
    if (!this.outcomes || e.ctrlKey || e.metaKey || e.altKey) return false;
    const k = e.key;
    if (k === "?") return this.toggleKeys(), true;
    if (k === "Escape" && !this.keysHelp.hidden) return this.toggleKeys(false), true;
    const arrow = (k === "ArrowDown" || k === "ArrowUp") && this.contains(e.target);
    if (k === "j" || (arrow && k === "ArrowDown")) return this.move(1), true;
    if (k === "k" || (arrow && k === "ArrowUp")) return this.move(-1), true;
    if (k === "/") return this.search.focus(), this.search.select(), true;
    if (!near) return false;
    if (k === "Enter" && this.current !== null) {
      const tr = this.rowOf(this.current);
      if (tr) this.toggle(tr, this.current);
      return true;
    }
    if (this.review && this.current !== null && ["1", "2", "3"].includes(k)) {
      const mark = MARKS[Number(k) - 1][0];
      const was = this.review.of(this.current);
      this.review.set(this.current, was && was.mark === mark ? null : mark);
      return true;
    }
    if (this.review && this.current !== null && k === "n") {
      const note = this.querySelector(`tr.dg-detail[data-case="${this.current}"] textarea`);
      if (note && !note.disabled) note.focus();
      return Boolean(note);
    }
    return false;
  }

  toggleKeys(show = this.keysHelp.hidden) {
    this.keysHelp.hidden = !show;
  }

  /** Marks changed (on case `index`, or null: any): the counts, the cells, an open case's buttons. */
  marksChanged(index, noteOnly = false) {
    if (!noteOnly) this.countMarks();
    const cases = index === null ? [...this.body.querySelectorAll("tr[data-case]")].map((tr) => Number(tr.dataset.case)) : [index];
    for (const i of cases) {
      const tr = this.rowOf(i);
      if (!tr) continue;
      const cell = tr.querySelector('[data-testid="case-mark"]');
      if (cell) cell.replaceChildren(this.markCell(i));
      // The box whose note is being typed stays (it has the focus and the text as typed).
      const box = this.typing === i ? null : this.querySelector(`tr.dg-detail[data-case="${i}"] .dg-review`);
      if (box) box.replaceWith(this.reviewBox(i));
    }
  }

  countMarks() {
    if (!this.review) return;
    let marked = 0;
    let unmarked = 0;
    for (let i = 0; i < this.outcomes.length; i++) {
      const m = this.review.of(i);
      if (m) marked++;
      else if (this.outcomes[i].status === "regressed") unmarked++;
    }
    const [markedChip, unmarkedChip] = this.markChips;
    markedChip.textContent = `Marked (${marked})`;
    unmarkedChip.textContent = `Unmarked regressed (${unmarked})`;
  }

  /** The view as the URL fragment keeps it. */
  view() {
    return {
      filter: this.filter,
      q: this.search ? this.search.value : "",
      template: this.template,
      sort: this.sort ? `${this.columns[this.sort.col][0]}:${this.sort.dir === "descending" ? "desc" : "asc"}` : null,
      page: this.page,
      open: this.current,
    };
  }

  /** Restores a view (`view()`'s); what does not apply to these cases is left as it is. */
  restore(v) {
    if (v.filter) this.setFilter(v.filter);
    if (v.template !== undefined && v.template !== null) {
      try {
        this.setTemplate(JSON.parse(v.template));
      } catch {
        /* not a template id */
      }
    }
    if (v.q) {
      this.search.value = v.q;
      this.query = v.q.trim().toLowerCase();
      this.refilter();
    }
    if (v.sort) {
      const [name, dir] = v.sort.split(":");
      const col = this.columns.findIndex(([n]) => n === name);
      if (col >= 0) this.sortBy(col, dir === "desc" ? "descending" : "ascending");
    }
    if (Number.isInteger(v.open) && v.open >= 0 && v.open < this.outcomes.length && this.openCase(v.open, { focus: false })) return;
    if (Number.isInteger(v.page)) this.goTo(v.page);
  }

  viewChanged() {
    this.dispatchEvent(new CustomEvent("dg-case-view", { bubbles: true, detail: this.view() }));
  }

  detail(c, tc, index, i) {
    const verdictLine = (label, v, missing, error) => h("p", {}, h("strong", {}, `${label}: `), missing ? "missing" : longText(v), error ? [" (runner error: ", longText(error), ")"] : "");
    const outputs = tc ? Object.entries(tc.expected_stage_outputs) : [];
    return h(
      "tr",
      { class: "dg-detail", "data-testid": "case-detail", "data-case": String(i) },
      h(
        "td",
        { colspan: String(this.columns.length) },
        this.review ? this.reviewBox(i) : null,
        verdictLine("Expected verdict", c.expected, false, null),
        verdictLine("Old model", c.old_verdict, c.old_missing, c.old_error),
        verdictLine("New model", c.new_verdict, c.new_missing, c.new_error),
        this.costLine(i),
        c.old_runs !== undefined ? h("p", {}, h("strong", {}, "Runs: "), `old ${c.old_passes} of ${c.old_runs} pass · new ${c.new_passes} of ${c.new_runs} pass (the verdicts above are each model's last)`) : null,
        tc ? h("p", {}, h("strong", {}, "Episode reward: "), text(tc.episode_reward), tc.input_hash !== undefined ? [" · ", h("strong", {}, "input hash: "), h("code", {}, longText(tc.input_hash))] : null) : null,
        this.answersSection(c, index),
        this.trajectorySection(index),
        h("h4", {}, "Input"),
        h("pre", { class: "dg-pre", "data-testid": "case-input" }, tc ? longText(pretty(tc.input_text)) : "(not available)"),
        h("h4", {}, `Expected stage outputs (${outputs.length})`),
        h("dl", { class: "dg-outputs" }, outputs.map(([stage, out]) => [h("dt", { class: "dg-mono" }, longText(stage)), h("dd", {}, h("pre", { class: "dg-pre" }, longText(pretty(out))))])),
      ),
    );
  }

  /** The review controls of outcome `i`: a button per mark (pressed: its mark) and the note. */
  reviewBox(i) {
    const m = this.review.of(i);
    const ready = this.review.ready;
    const buttons = MARKS.map(([mark, label, what], n) =>
      h(
        "button",
        { type: "button", class: "dg-chip", "data-mark": mark, "data-testid": `mark-${mark}`, "aria-pressed": String(Boolean(m && m.mark === mark)), disabled: !ready, title: `${what} (key ${n + 1})` },
        `${n + 1} ${label}`,
      ),
    );
    for (const b of buttons)
      b.addEventListener("click", (e) => {
        e.stopPropagation();
        this.current = i;
        this.review.set(i, m && m.mark === b.dataset.mark ? null : b.dataset.mark);
      });
    const note = h("textarea", { rows: 2, class: "dg-note", "data-testid": "mark-note", "aria-label": "Note on this case", placeholder: m ? "A note on this case (n)" : "Mark the case to add a note", disabled: !ready || !m, maxlength: String(MAX_NOTE_BYTES / 4) });
    note.value = m ? m.note : "";
    note.addEventListener("input", () => {
      if (new TextEncoder().encode(note.value).length > MAX_NOTE_BYTES) note.value = note.value.slice(0, MAX_NOTE_BYTES / 4);
      // Kept as typed; the box is not rebuilt while it has the focus.
      this.typing = i;
      this.review.setNote(i, note.value);
      this.typing = null;
    });
    note.addEventListener("keydown", (e) => {
      e.stopPropagation();
      if (e.key === "Escape") {
        e.preventDefault();
        note.blur();
        this.focusCurrent();
      }
    });
    const why = !ready ? h("span", { class: "dg-muted" }, " Marks wait for the files' sha256 (they are kept per report).") : this.review.saveError ? h("span", { class: "dg-error", role: "alert" }, ` ${this.review.saveError}`) : null;
    return h("div", { class: "dg-review", "data-testid": "case-review", role: "group", "aria-label": "Review mark" }, h("strong", {}, "Review: "), buttons, why, note);
  }

  /** The case's trajectory results (those that name its pipeline_id), old beside new: the
   * composite and each metric it is made from. Nothing when neither file has one. */
  trajectorySection(index) {
    if (!this.trajectory || index < 0) return null;
    const box = h("div", { "data-testid": "case-trajectory" });
    this.trajectory(index).then(
      (t) => {
        if (!t) return box.remove();
        const metrics = ["overall_judge_score", "tac_score", "scsr_score", "iasa_score", "egs_score", "arr_score", "lcf_score"];
        const cell = (r, get) => h("td", { class: "dg-num" }, r ? String(get(r)) : "—");
        const d = t.old && t.new ? t.new.composite - t.old.composite : null;
        box.replaceChildren(
          h("h4", {}, "Trajectory"),
          h(
            "table",
            { class: "dg-table dg-trajectory" },
            h("thead", {}, h("tr", {}, h("td", {}), h("th", { scope: "col", class: "dg-num" }, "old"), h("th", { scope: "col", class: "dg-num" }, "new"))),
            h(
              "tbody",
              {},
              h("tr", {}, h("th", { scope: "row" }, "trajectory"), cell(t.old, (r) => r.trajectory_id ?? "—"), cell(t.new, (r) => r.trajectory_id ?? "—")),
              h("tr", { "data-testid": "trajectory-composite" }, h("th", { scope: "row" }, "composite", d === null ? "" : ` (${signedNumber(d, 4)})`), cell(t.old, (r) => r.composite), cell(t.new, (r) => r.composite)),
              metrics.map((m) => h("tr", {}, h("th", { scope: "row", class: "dg-mono" }, m), cell(t.old, (r) => r.metrics[m]), cell(t.new, (r) => r.metrics[m]))),
            ),
          ),
        );
      },
      (e) => box.replaceChildren(h("p", { class: "dg-error", role: "alert" }, `The trajectories could not be read: ${e && e.message ? e.message : e}`)),
    );
    return box;
  }

  /** What both models answered (read from the verdict files when the row opens), side by side. */
  answersSection(c, index) {
    if (!this.answers || index < 0) return null;
    const box = h("div", { class: "dg-answers", "data-testid": "case-answers", "aria-busy": "true" }, h("p", { class: "dg-muted" }, "Reading the answers from the verdict files…"));
    let read = this.answerCache.get(index);
    if (!read) {
      read = this.answers(index);
      this.answerCache.set(index, read);
      // A few cases' answers (each can be megabytes); a failed read is tried again next time.
      if (this.answerCache.size > 8) this.answerCache.delete(this.answerCache.keys().next().value);
      read.catch(() => this.answerCache.delete(index));
    }
    read.then(
      (both) => {
        box.removeAttribute("aria-busy");
        box.replaceChildren(...(both ? sideBySide(c, both) : [h("p", { class: "dg-muted", "data-testid": "no-answers" }, "The verdict files carry no answer for this case (records without `output`).")]));
      },
      (e) => {
        box.removeAttribute("aria-busy");
        box.replaceChildren(h("p", { class: "dg-error", role: "alert", "data-testid": "answers-error" }, `The answers could not be read: ${e && e.message ? e.message : e}`));
      },
    );
    return [h("h4", {}, "Answers"), box];
  }
}

const KIND = { text: "", json: "JSON, laid out", raw: "shown as written" };

/** The two answers of `both` (the core's SideBySide) for outcome `c`: a column each, the changed
 * runs marked, each folded after a screen with "show all". Every piece is a text node. */
function sideBySide(c, both) {
  const column = (label, side, shown, runs, missing, error) => {
    const testid = `answer-${side}`;
    const head = h(
      "div",
      { class: "dg-answer-head" },
      h("strong", {}, label),
      shown && KIND[shown.kind] ? h("span", { class: "dg-muted" }, ` · ${KIND[shown.kind]}`) : null,
      shown && shown.truncated ? h("span", { class: "dg-badge", "data-testid": `${testid}-truncated` }, "cut to its bound") : null,
    );
    const read = h("p", { class: "dg-muted", "data-testid": `${testid}-verdict` }, "Verdict read: ", missing ? "no record" : error ? ["error (", longText(error), ")"] : longText(c[`${side}_verdict`] ?? "none"));
    if (!shown) return h("div", { class: "dg-answer", "data-testid": testid }, head, h("p", { class: "dg-muted" }, "No answer in the record."), read);
    const pre = h("pre", { class: "dg-pre dg-answer-text", "data-testid": `${testid}-text` });
    const pieces = runs.length ? runs : [{ text: shown.text, changed: false }];
    // A screen's worth first; then all of it, or for a huge answer (megabytes lay out for
    // seconds) ANSWER_STEP more characters a click.
    const foot = h("div", { class: "dg-answer-foot" });
    const fill = (limit, lineLimit) => {
      const { nodes, rest, restPoints } = folded(pieces, side, limit, lineLimit);
      pre.replaceChildren(...nodes);
      foot.replaceChildren();
      if (!rest) return;
      const all = rest <= ANSWER_STEP;
      const label = all ? `show all (${restPoints} more characters)` : `show more (${restPoints} more characters)`;
      const more = h("button", { type: "button", class: "dg-link", "data-testid": `${testid}-${all ? "show-all" : "show-more"}` }, label);
      more.addEventListener("click", (e) => {
        e.stopPropagation();
        fill(all ? Infinity : shownLength(pieces, limit, lineLimit) + ANSWER_STEP, Infinity);
      });
      foot.append(more);
    };
    fill(ANSWER_SHOWN, ANSWER_LINES);
    return h("div", { class: "dg-answer", "data-testid": testid }, head, pre, foot, read);
  };
  return [
    both.note ? h("p", { class: "dg-muted", "data-testid": "answers-note" }, both.note) : both.by !== "none" ? h("p", { class: "dg-muted" }, `Compared ${both.by === "words" ? "word by word" : "line by line"}: what differs is struck through in the old answer and underlined in the new.`) : null,
    h(
      "div",
      { class: "dg-answers-pair" },
      column("Old model", "old", both.old, both.old_runs, c.old_missing, c.old_error),
      column("New model", "new", both.new, both.new_runs, c.new_missing, c.new_error),
    ),
  ];
}

/** How many characters of `runs` `folded` shows under these limits. */
function shownLength(runs, limit, lineLimit) {
  const total = runs.reduce((n, r) => n + r.text.length, 0);
  return total - folded(runs, "old", limit, lineLimit, true).rest;
}

/** The runs as nodes (changed ones in <del> on the old side, <ins> on the new), up to `limit`
 * UTF-16 units and `lineLimit` lines: `rest` is how many units were left out, `restPoints` how
 * many characters (code points) that is (with `countOnly`, no nodes are made). */
function folded(runs, side, limit, lineLimit, countOnly = false) {
  const nodes = [];
  let chars = 0;
  let lines = 0;
  let rest = 0;
  let restPoints = 0;
  // Code points from unit `from` of `text`: its units less the second halves of pairs.
  const points = (text, from) => {
    let n = 0;
    for (let k = from; k < text.length; k++) if ((text.charCodeAt(k) & 0xfc00) !== 0xdc00) n++;
    return n;
  };
  for (const run of runs) {
    let piece = run.text;
    if (rest > 0) {
      rest += piece.length;
      if (!countOnly) restPoints += points(piece, 0);
      continue;
    }
    let end = Math.min(piece.length, limit - chars);
    if (lineLimit !== Infinity) {
      for (let k = 0; k < end; k++) {
        if (piece.charCodeAt(k) === 10 && ++lines >= lineLimit) {
          end = k + 1;
          break;
        }
      }
    }
    // Never half of a surrogate pair.
    if (end > 0 && end < piece.length && (piece.charCodeAt(end - 1) & 0xfc00) === 0xd800) end--;
    if (end < piece.length) {
      rest = piece.length - end;
      if (!countOnly) restPoints = points(piece, end);
      piece = piece.slice(0, end);
    }
    chars += piece.length;
    if (!piece || countOnly) continue;
    nodes.push(run.changed ? h(side === "old" ? "del" : "ins", {}, piece) : document.createTextNode(piece));
  }
  return { nodes, rest, restPoints };
}
