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
   * null when neither record carries one.
   */
  show(outcomes, cases, { answers } = {}) {
    this.answers = answers || null;
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
        tr.after(this.detail(c, this.testCase(i), this.testIndex(i)));
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

  detail(c, tc, index) {
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
        this.answersSection(c, index),
        h("h4", {}, "Input"),
        h("pre", { class: "dg-pre", "data-testid": "case-input" }, tc ? longText(pretty(tc.input_text)) : "(not available)"),
        h("h4", {}, `Expected stage outputs (${outputs.length})`),
        h("dl", { class: "dg-outputs" }, outputs.map(([stage, out]) => [h("dt", { class: "dg-mono" }, longText(stage)), h("dd", {}, h("pre", { class: "dg-pre" }, longText(pretty(out))))])),
      ),
    );
  }

  /** What both models answered (read from the verdict files when the row opens), side by side. */
  answersSection(c, index) {
    if (!this.answers || index < 0) return null;
    const box = h("div", { class: "dg-answers", "data-testid": "case-answers", "aria-busy": "true" }, h("p", { class: "dg-muted" }, "Reading the answers from the verdict files…"));
    this.answers(index).then(
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
