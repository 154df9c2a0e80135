// <dg-case-table>: the per-case table with filters, search and a drill-down per row.
import { h, text, pretty, longText, shorten } from "../dom.js";

const FILTERS = [
  ["all", "All", () => true],
  ["regressed", "Regressed", (c) => c.status === "regressed"],
  ["improved", "Improved", (c) => c.status === "improved"],
  ["different", "Different verdicts", (c) => (c.old_verdict || "").toUpperCase() !== (c.new_verdict || "").toUpperCase() || c.old_errored !== c.new_errored],
  ["missing", "Missing / errored", (c) => c.old_missing || c.new_missing || c.old_errored || c.new_errored],
];
const PAGE = 200;

const key = (id) => JSON.stringify(id);

export class CaseTable extends HTMLElement {
  show(outcomes, cases) {
    this.outcomes = outcomes;
    this.byId = new Map((cases || []).map((c) => [key(c.pipeline_id), c]));
    this.hay = new WeakMap();
    this.filter = "all";
    this.query = "";
    this.limit = PAGE;
    const filterButtons = FILTERS.map(([name, label, pred]) =>
      h("button", { type: "button", class: "dg-chip", "data-filter": name, "aria-pressed": String(name === "all"), onclick: () => this.setFilter(name) }, `${label} (${outcomes.filter(pred).length})`),
    );
    this.filterBar = h("div", { class: "dg-filters", role: "group", "aria-label": "Filter cases" }, filterButtons);
    this.search = h("input", { type: "search", placeholder: "Search id, template, verdict, input…", "aria-label": "Search cases", "data-testid": "case-search" });
    this.search.addEventListener("input", () => {
      this.query = this.search.value.trim().toLowerCase();
      this.limit = PAGE;
      this.render();
    });
    this.body = h("tbody");
    this.more = h("p");
    this.replaceChildren(
      h("div", { class: "dg-table-tools" }, this.filterBar, this.search),
      h("table", { class: "dg-table dg-cases" }, h("thead", {}, h("tr", {}, ["pipeline", "template", "expected", "old", "new", "status"].map((c) => h("th", { scope: "col" }, c)))), this.body),
      this.more,
    );
    this.render();
  }

  setFilter(name) {
    this.filter = name;
    this.limit = PAGE;
    for (const b of this.filterBar.children) b.setAttribute("aria-pressed", String(b.dataset.filter === name));
    this.render();
  }

  matches(c) {
    if (!this.query) return true;
    // The searched text of a case, lowercased once (values can be hundreds of KB).
    let hay = this.hay.get(c);
    if (hay === undefined) {
      const tc = this.byId.get(key(c.pipeline_id));
      const values = [text(c.pipeline_id), text(c.template_id), text(c.expected), c.old_verdict, c.new_verdict, c.old_error, c.new_error, tc ? text(tc.input_text) : ""];
      hay = values.filter((v) => v).map((v) => String(v).toLowerCase());
      this.hay.set(c, hay);
    }
    return hay.some((v) => v.includes(this.query));
  }

  render() {
    const pred = FILTERS.find(([n]) => n === this.filter)[2];
    const rows = this.outcomes.filter((c) => pred(c) && this.matches(c));
    const shown = rows.slice(0, this.limit);
    this.body.replaceChildren(...shown.map((c) => this.row(c)));
    this.more.replaceChildren(
      rows.length > shown.length
        ? h("button", { type: "button", class: "dg-button dg-secondary", onclick: () => { this.limit += PAGE; this.render(); } }, `Show more (${rows.length - shown.length} hidden)`)
        : h("span", { class: "dg-muted" }, `${rows.length} case(s)`),
    );
  }

  row(c) {
    const verdict = (v, pass, missing, errored, error) =>
      h("td", { class: pass ? "dg-pass" : "dg-fail" }, missing ? h("em", {}, "missing") : errored ? h("em", { title: shorten(error || "") }, "error") : longText(v), pass ? " ✓" : " ✗");
    const tr = h(
      "tr",
      { "data-testid": "case-row", tabindex: "0", "aria-expanded": "false", class: `dg-status-${c.status}` },
      h("td", { class: "dg-mono" }, longText(c.pipeline_id)),
      h("td", {}, longText(c.template_id)),
      h("td", {}, longText(c.expected)),
      verdict(c.old_verdict, c.old_pass, c.old_missing, c.old_errored, c.old_error),
      verdict(c.new_verdict, c.new_pass, c.new_missing, c.new_errored, c.new_error),
      h("td", {}, c.status.replace("_", " ")),
    );
    const toggle = () => {
      const open = tr.getAttribute("aria-expanded") === "true";
      if (open) {
        tr.nextSibling && tr.nextSibling.remove();
        tr.setAttribute("aria-expanded", "false");
      } else {
        tr.after(this.detail(c));
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

  detail(c) {
    const tc = this.byId.get(key(c.pipeline_id));
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
        tc ? h("p", {}, h("strong", {}, "Episode reward: "), text(tc.episode_reward), tc.input_hash !== undefined ? [" · ", h("strong", {}, "input hash: "), h("code", {}, longText(tc.input_hash))] : null) : null,
        h("h4", {}, "Input"),
        h("pre", { class: "dg-pre", "data-testid": "case-input" }, tc ? longText(pretty(tc.input_text)) : "(not available)"),
        h("h4", {}, `Expected stage outputs (${outputs.length})`),
        h("dl", { class: "dg-outputs" }, outputs.map(([stage, out]) => [h("dt", { class: "dg-mono" }, longText(stage)), h("dd", {}, h("pre", { class: "dg-pre" }, longText(pretty(out))))])),
      ),
    );
  }
}
