// <dg-compare>: two evaluations side by side — two reports, two signed decisions (read only once
// they verify against the trusted keys), or one of each. Shows the decision's change, the policy
// and input changes, the counts, the flips (paged, filtered, searched as the case table is), the
// template changes, the pipelines on one side only and, given each side's review file, the
// review marks that changed, and exports the diff as the CLI writes
// it (`deploy-gate diff`: the JSON byte for byte, Markdown, HTML, JUnit). The diff is the core's
// (the worker holds it); its lists come a slice per message. Emits `dg-diff` ({diff}) each time
// it shows one. Ids are shown as the core gives them (an integer id of any size keeps its digits).
import { h, download, longText, signed, bytes } from "../dom.js";
import { PagedTable } from "./paged-table.js";
import { reviewText } from "./verify-panel.js";
import { MARK_LABEL } from "../review-marks.js";

/** Items per message from the worker. */
const SLICE = 5000;
const SIDES = ["before", "after"];

/** A file's kind from its first bytes: a report JSON (its writer puts `schema` first) or a
 * signed decision (DSSE envelope). Null for anything else. */
export async function documentKind(file) {
  let head;
  try {
    head = await file.slice(0, 4096).text();
  } catch {
    return null;
  }
  if (/^\s*\{\s*"schema"\s*:\s*"deploy-gate\/report\/v1"/.test(head)) return "report";
  // A trainer's model.sig (a Sigstore bundle) holds a DSSE envelope too, but is no decision.
  if (/"mediaType"\s*:\s*"application\/vnd\.dev\.sigstore\.bundle/.test(head)) return null;
  if (/^\s*\{/.test(head) && /"payloadType"\s*:/.test(head)) return "signed";
  return null;
}

function outcomeOf(side) {
  return side.decision.outcome || (side.decision.approved ? "approved" : "blocked");
}

function intervalText(i) {
  if (i.low === null || i.high === null) return `${signed(i.task_delta)} (no interval in this report)`;
  const clustered = i.clustered ? ", clustered by template" : "";
  return `${signed(i.task_delta)} (${signed(i.low, 3)} to ${signed(i.high, 3)}, ${Math.round((i.confidence ?? 0.95) * 1000) / 10}%${clustered})`;
}

function policyText(v) {
  if (v === null) return "none";
  if (Array.isArray(v)) return v.join(", ");
  return typeof v === "string" ? v : JSON.stringify(v);
}

/** The exact JSON text of an id, as the diff writes it (an integer's digits, a quoted string). */
const idJson = (row) => (row.id_kind === "integer" ? row.id_label : JSON.stringify(row.pipeline_id));

export class CompareView extends HTMLElement {
  connectedCallback() {
    if (this.initialised) return;
    this.initialised = true;
    this.setAttribute("data-testid", "compare");
    this.hidden = true;
    /** Set by the viewer: the worker client. */
    this.client = this.client || null;
    this.sides = [null, null];
    this.keys = [];
    this.runs = 0;
    this.diff = null;
    this.slotRows = SIDES.map((side, i) => {
      const input = h("input", { type: "file", accept: ".json", class: "dg-file-input", id: `dg-compare-${side}`, "data-testid": `compare-input-${side}`, "aria-label": `The ${side} evaluation: a report or a signed decision` });
      input.addEventListener("change", () => {
        const file = input.files[0];
        input.value = "";
        if (file) this.setSide(i, file).catch((e) => this.failed(e));
      });
      const name = h("span", { "data-testid": `compare-${side}-name` });
      return { input, name, row: h("li", {}, h("strong", {}, side === "before" ? "Before: " : "After: "), name, " ", input, h("label", { class: "dg-link", for: `dg-compare-${side}` }, "choose…")) };
    });
    // Each side's review file (review.jsonl, what "Sign with the review" downloads): with both,
    // the marks that changed are listed.
    this.reviews = [null, null];
    this.reviewRows = SIDES.map((side, i) => {
      const input = h("input", { type: "file", accept: ".jsonl,.json,.txt", class: "dg-file-input", id: `dg-compare-review-${side}`, "data-testid": `compare-review-input-${side}`, "aria-label": `The ${side} evaluation's review file` });
      input.addEventListener("change", () => {
        const file = input.files[0];
        input.value = "";
        if (file) this.setReview(i, file).catch((e) => this.failed(e));
      });
      const name = h("span", { "data-testid": `compare-review-${side}-name` }, "—");
      return { input, name, row: h("li", {}, h("strong", {}, side === "before" ? "Before review: " : "After review: "), name, " ", input, h("label", { class: "dg-link", for: `dg-compare-review-${side}` }, "choose…")) };
    });
    this.status = h("p", { class: "dg-muted", "data-testid": "compare-status", "aria-live": "polite" });
    this.results = h("div", { "data-testid": "compare-results" });
    this.append(
      h(
        "section",
        { class: "dg-panel dg-compare-head" },
        h("h2", {}, "Compare two evaluations"),
        h("p", { class: "dg-muted" }, "Two reports (deploy-gate evaluate --out, or the page's download), or two signed decisions with their trusted public keys: what changed, case by case. Nothing leaves this machine."),
        h("ul", { class: "dg-compare-slots" }, this.slotRows.map((s) => s.row)),
        h(
          "details",
          { "data-testid": "compare-reviews" },
          h("summary", {}, "Review files (optional): the marks that changed"),
          h("p", { class: "dg-muted" }, "Each side's review file (review.jsonl, downloaded beside a decision signed with the review): the cases whose mark or note changed are listed. A side signed with a review must be given the file it pins."),
          h("ul", { class: "dg-compare-slots" }, this.reviewRows.map((s) => s.row)),
        ),
        h(
          "p",
          {},
          h("button", { type: "button", class: "dg-button dg-secondary", "data-testid": "compare-swap", onclick: () => this.swap() }, "Swap before and after"),
          h("button", { type: "button", class: "dg-button dg-secondary", "data-testid": "compare-close", onclick: () => this.close() }, "Close"),
        ),
        this.status,
      ),
      this.results,
    );
  }

  /** Adds documents ([File]) and trusted keys ([{name, pem}]): the first empty sides are filled
   * (two documents fill both, in the order given, and forget the review files unless `reviews`
   * ([File, File]) gives theirs); with both sides, the diff is made. */
  async add(files, keys = [], reviews = null) {
    this.hidden = false;
    this.mergeKeys(keys);
    const list = files.slice(0, 2);
    if (list.length === 2) {
      this.sides = [null, null];
      this.reviews = reviews || [null, null];
    }
    for (const file of list) {
      const free = this.sides[0] === null ? 0 : this.sides[1] === null ? 1 : 1;
      this.sides[free] = { file, kind: await documentKind(file) };
      // Another evaluation on that side: its review file is not the one given for the last.
      if (list.length === 1) this.reviews[free] = null;
    }
    this.renderSlots();
    await this.run();
  }

  /** Trusted keys for signed decisions (the Verify panel's and any dropped with them). */
  mergeKeys(keys) {
    for (const k of keys) if (!this.keys.some((x) => x.pem === k.pem)) this.keys.push(k);
  }

  async setSide(i, file) {
    this.hidden = false;
    this.sides[i] = { file, kind: await documentKind(file) };
    this.reviews[i] = null;
    this.renderSlots();
    await this.run();
  }

  async setReview(i, file) {
    this.hidden = false;
    this.reviews[i] = file;
    this.renderSlots();
    await this.run();
  }

  swap() {
    this.sides.reverse();
    this.reviews.reverse();
    this.renderSlots();
    this.run().catch((e) => this.failed(e));
  }

  close() {
    this.runs++;
    this.sides = [null, null];
    this.reviews = [null, null];
    this.renderSlots();
    this.diff = null;
    this.results.replaceChildren();
    this.status.textContent = "";
    this.hidden = true;
  }

  renderSlots() {
    this.slotRows.forEach(({ name }, i) => {
      const s = this.sides[i];
      name.textContent = s ? `${s.file.name} (${s.kind === "signed" ? "signed decision" : s.kind === "report" ? "report" : "unknown"}, ${bytes(s.file.size)})` : "—";
    });
    this.reviewRows.forEach(({ name }, i) => {
      const r = this.reviews[i];
      name.textContent = r ? `${r.name} (${bytes(r.size)})` : "—";
    });
  }

  failed(e) {
    if (this.onFailure) this.onFailure(e);
    this.results.replaceChildren(h("p", { class: "dg-error", role: "alert", "data-testid": "compare-error" }, e && e.message ? e.message : String(e)));
    this.status.textContent = "";
  }

  async run() {
    const run = ++this.runs;
    this.diff = null;
    this.results.replaceChildren();
    if (!this.sides[0] || !this.sides[1]) {
      this.status.textContent = `Add the ${this.sides[0] ? "after" : "before"} evaluation to compare (a report or a signed decision).`;
      return;
    }
    const needKeys = this.sides.some((s) => s.kind === "signed");
    if (needKeys && !this.keys.length) {
      this.status.textContent = "";
      this.failed(new Error("A signed decision is read only once it verifies: add the trusted public keys (.pem), with the decisions or in “Verify a signed decision”."));
      return;
    }
    this.status.textContent = "Comparing…";
    try {
      const [before, after] = this.sides;
      const reviews = this.reviews[0] && this.reviews[1] ? this.reviews : null;
      const meta = await this.client.call("compare", { before: before.file, after: after.file, names: [before.file.name, after.file.name], trustedPems: needKeys ? this.keys.map((k) => k.pem) : [], reviews });
      if (run !== this.runs) return;
      const take = async (kind, count) => {
        const all = [];
        for (let from = 0; from < count; from += SLICE) {
          const slice = await this.client.call("diffSlice", { diff: meta.diff, kind, from, to: from + SLICE });
          if (run !== this.runs) return null;
          for (const item of slice) all.push(item);
        }
        return all;
      };
      const flips = await take("flips", meta.flipCount);
      const templates = flips && (await take("templates", meta.templateCount));
      const onlyBefore = templates && (await take("only_before", meta.onlyBeforeCount));
      const onlyAfter = onlyBefore && (await take("only_after", meta.onlyAfterCount));
      if (!onlyAfter || run !== this.runs) return;
      const review = { changes: meta.reviewChanges, error: meta.reviewError, waiting: !reviews && (this.reviews[0] || this.reviews[1]) ? (this.reviews[0] ? "after" : "before") : null };
      this.diff = { id: meta.diff, summary: meta.summary, restsOn: meta.restsOn, flips, templates, onlyBefore, onlyAfter, review };
      this.status.textContent = "";
      this.show(this.diff);
      const whole = structuredClone(meta.summary);
      whole.cases.flips = flips;
      whole.cases.only_before = onlyBefore.map((r) => r.pipeline_id);
      whole.cases.only_after = onlyAfter.map((r) => r.pipeline_id);
      whole.templates = templates;
      if (meta.reviewChanges) whole.review_changes = meta.reviewChanges.map(({ pipeline_id, before, after }) => ({ pipeline_id, before, after }));
      this.dispatchEvent(new CustomEvent("dg-diff", { bubbles: true, detail: { diff: whole } }));
    } catch (e) {
      if (run !== this.runs) return;
      this.failed(e);
    }
  }

  /** An export of the diff on screen, as the CLI writes it. */
  async export(kind) {
    if (!this.diff) return;
    const text = await this.client.call("diffExport", { diff: this.diff.id, kind });
    if (kind === "json") download("diff.json", text, "application/json");
    else if (kind === "html") download("diff.html", text, "text/html");
    else if (kind === "junit") download("diff-junit.xml", text, "application/xml");
    else {
      let copied = false;
      try {
        await navigator.clipboard.writeText(text);
        copied = true;
      } catch {
        copied = false;
      }
      const box = h("textarea", { readonly: true, rows: 12, class: "dg-markdown", "data-testid": "compare-markdown", "aria-label": "Markdown of the comparison" });
      box.value = text;
      const old = this.results.querySelector(".dg-markdown-panel");
      if (old) old.remove();
      this.results.querySelector(".dg-exports").after(h("div", { class: "dg-panel dg-markdown-panel" }, h("p", { class: "dg-muted" }, copied ? "Copied to the clipboard." : "Select and copy:"), box));
      if (!copied) box.select();
    }
  }

  /** The review marks that changed, when both review files are in (or why they could not be
   * compared, or which one is still to come). */
  reviewPanel(review) {
    if (!review.changes && !review.error && !review.waiting) return null;
    const panel = h("section", { class: "dg-panel", "data-testid": "compare-review-changes" }, h("h3", {}, "Review marks that changed"));
    if (review.error) {
      panel.append(h("p", { class: "dg-error", role: "alert", "data-testid": "compare-review-error" }, longText(review.error)));
      return panel;
    }
    if (review.waiting) {
      panel.append(h("p", { class: "dg-muted", "data-testid": "compare-review-waiting" }, `Add the ${review.waiting} evaluation's review file to list the marks that changed.`));
      return panel;
    }
    const changes = review.changes;
    if (!changes.length) {
      panel.append(h("p", { class: "dg-muted", "data-testid": "compare-review-none" }, "No mark and no note changed between the two review files."));
      return panel;
    }
    const label = (m) => MARK_LABEL[m.mark] || m.mark;
    const cell = (m) => h("td", {}, m === null ? h("em", {}, "not marked") : [h("strong", {}, label(m)), m.note ? [" — ", longText(m.note)] : null]);
    const change = (c) => (c.before === null ? "marked" : c.after === null ? "unmarked" : c.before.mark !== c.after.mark ? "mark changed" : "note changed");
    const table = new PagedTable();
    table.show(changes, {
      label: "review changes",
      testid: "review-change",
      unit: "case(s)",
      columns: ["pipeline", "before", "after", "change"],
      placeholder: "Search id, note…",
      filters: [
        ["all", "All", () => true],
        ["mark", "Mark changed", (c) => c.before !== null && c.after !== null && c.before.mark !== c.after.mark],
        ["marked", "Marked", (c) => c.before === null],
        ["unmarked", "Unmarked", (c) => c.after === null],
        ["note", "Note changed", (c) => change(c) === "note changed"],
      ],
      hay: (c) => [c.id_label, c.before?.note || "", c.after?.note || ""].join("\u0000"),
      row: (c) => h("tr", { "data-testid": "review-change-row", "data-id": idJson(c) }, h("td", { class: "dg-mono", title: `${c.id_kind} id` }, longText(c.id_label)), cell(c.before), cell(c.after), h("td", {}, change(c))),
    });
    panel.append(h("p", { class: "dg-muted" }, `${changes.length} case(s) whose mark or note changed (the time of a mark is not compared).`), table);
    return panel;
  }

  show({ summary: d, restsOn, flips, templates, onlyBefore, onlyAfter, review }) {
    const c = d.decision;
    // What the decisions rest on, as the CLI's headline says it (the core's text).
    const rests = h("span", { class: "dg-rests", "data-testid": "compare-rests-on" }, `(${restsOn})`);
    const banner = h(
      "section",
      { class: `dg-banner ${c.changed ? "dg-changed" : "dg-approved"}`, "data-testid": "compare-decision", "data-changed": String(c.changed), "data-before": c.before, "data-after": c.after, role: "status" },
      h("h2", {}, c.changed ? `The decision changed: ${c.before} → ${c.after}` : `The decision is unchanged: ${c.after}`, " ", rests),
      h("p", { "data-testid": "compare-summary" }, `${d.cases.common} case(s) in common · ${onlyBefore.length} only before · ${onlyAfter.length} only after · ${flips.length} flip(s)`),
    );
    const exportButton = (kind, label) => h("button", { type: "button", class: "dg-button dg-secondary", "data-testid": `compare-export-${kind}`, onclick: () => this.export(kind).catch((e) => this.failed(e)) }, label);
    const exports = h("div", { class: "dg-exports" }, exportButton("json", "Download diff JSON"), exportButton("html", "Download HTML"), exportButton("markdown", "Copy Markdown"), exportButton("junit", "Download JUnit XML"));

    const sideCard = (title, side, interval) =>
      h(
        "section",
        { class: "dg-card", "data-testid": `compare-${title.toLowerCase()}` },
        h("h3", {}, title),
        h(
          "dl",
          {},
          [
            ["decision", h("strong", {}, outcomeOf(side))],
            ["reason", h("code", {}, longText(side.decision.reason))],
            ["source", side.source === "signed" ? `signed decision, verified: ${side.signers.map((k) => `key id ${k}`).join(", ")}` : "report (not signed)"],
            ...(side.review ? [["review", h("span", { "data-testid": "compare-review" }, reviewText(side.review))]] : []),
            ["test cases", String(side.num_cases)],
            ["task Δ (new − old)", intervalText(interval)],
            ["policy sha256", h("code", {}, side.policy_digest)],
            ["tool", `${side.tool.name} ${side.tool.version}`],
          ].map(([k, v]) => [h("dt", {}, k), h("dd", {}, v)]),
        ),
        h("ul", { class: "dg-skipped" }, side.inputs.map((f) => h("li", {}, `${f.role.replace(/_/g, " ")}: `, longText(f.name), f.sha256 ? h("span", { class: "dg-muted" }, ` sha256 ${f.sha256.slice(0, 16)}…`) : null))),
      );
    const overlap = d.stats.overlap === null ? null : h("p", { class: "dg-muted" }, `The two intervals for the task difference ${d.stats.overlap ? "overlap" : "do not overlap"}.`);

    const policy = h(
      "section",
      { class: "dg-panel", "data-testid": "compare-policy" },
      h("h3", {}, "Policy"),
      d.policy.length
        ? h("table", { class: "dg-table" }, h("thead", {}, h("tr", {}, ["field", "before", "after"].map((x) => h("th", { scope: "col" }, x)))), h("tbody", {}, d.policy.map((p) => h("tr", { "data-testid": "compare-policy-row" }, h("td", { class: "dg-mono" }, p.field), h("td", {}, longText(policyText(p.before))), h("td", {}, longText(policyText(p.after)))))))
        : h("p", { class: "dg-muted" }, "The same resolved policy."),
      h("h3", {}, "Inputs"),
      h(
        "table",
        { class: "dg-table" },
        h("thead", {}, h("tr", {}, ["role", "", "before sha256", "after sha256"].map((x) => h("th", { scope: "col" }, x)))),
        h("tbody", {}, d.inputs.map((i) => h("tr", { "data-testid": "compare-input-row" }, h("td", {}, i.role.replace(/_/g, " ")), h("td", { class: `dg-nowrap ${i.same ? "dg-pass" : "dg-fail"}` }, i.same ? "same" : "differs"), h("td", { class: "dg-mono" }, i.before_sha256 || "—"), h("td", { class: "dg-mono" }, i.after_sha256 || "—")))),
      ),
    );

    const k = d.cases.counts;
    const counts = h(
      "table",
      { class: "dg-table dg-2x2", "data-testid": "compare-counts" },
      h("thead", {}, h("tr", {}, h("td"), ["fail → pass", "pass → fail", "verdict text changed"].map((x) => h("th", { scope: "col", class: "dg-num" }, x)))),
      h("tbody", {}, [["old model", k.old], ["new model", k.new]].map(([m, n]) => h("tr", {}, h("th", { scope: "row" }, m), h("td", { class: "dg-num dg-better" }, String(n.fail_to_pass)), h("td", { class: "dg-num dg-worse" }, String(n.pass_to_fail)), h("td", { class: "dg-num" }, String(n.verdict_changed))))),
    );

    const verdictCell = (pass, verdict) => h("td", { class: pass ? "dg-pass" : "dg-fail" }, verdict === null ? h("em", {}, "none") : longText(verdict), pass ? " ✓" : " ✗");
    const flipTable = new PagedTable();
    const passToFail = (f) => f.before_pass && !f.after_pass;
    const flipsPanel = h("section", { class: "dg-panel" }, h("h3", {}, "Flips"), h("p", { class: "dg-muted" }, "A common case whose pass/fail for one model differs between the two evaluations; pass → fail first."), flipTable);
    flipTable.show(flips, {
      label: "flips",
      testid: "flip",
      unit: "flip(s)",
      columns: ["pipeline", "template", "model", "before", "after", "flip"],
      placeholder: "Search id, template, verdict…",
      filters: [
        ["all", "All", () => true],
        ["pass_to_fail", "Pass → fail", passToFail],
        ["fail_to_pass", "Fail → pass", (f) => !passToFail(f)],
        ["old", "Old model", (f) => f.model === "old"],
        ["new", "New model", (f) => f.model === "new"],
      ],
      hay: (f) => [f.id_label, f.template_text || "", f.before_verdict || "", f.after_verdict || ""].join("\u0000"),
      row: (f) =>
        h(
          "tr",
          { "data-testid": "flip-row", "data-id": idJson(f), "data-model": f.model, class: passToFail(f) ? "dg-status-regressed" : "dg-status-improved" },
          h("td", { class: "dg-mono", title: `${f.id_kind} id` }, longText(f.id_label)),
          h("td", {}, f.template_text === null ? "—" : longText(f.template_text)),
          h("td", {}, f.model),
          verdictCell(f.before_pass, f.before_verdict),
          verdictCell(f.after_pass, f.after_verdict),
          h("td", {}, passToFail(f) ? "pass → fail" : "fail → pass"),
        ),
    });

    const templateTable = new PagedTable();
    const cls = (x) => (x === null ? "" : x < 0 ? "dg-worse" : x > 0 ? "dg-better" : "");
    templateTable.show(templates, {
      label: "templates",
      testid: "template",
      unit: "template(s)",
      columns: ["template", "cases before", "cases after", "Δ before", "Δ after", "change"],
      placeholder: "Search template…",
      hay: (t) => t.template_text || "",
      row: (t) =>
        h(
          "tr",
          { "data-testid": "template-change-row" },
          h("td", {}, t.template_text === null ? "—" : longText(t.template_text)),
          h("td", { class: "dg-num" }, String(t.n_before)),
          h("td", { class: "dg-num" }, String(t.n_after)),
          h("td", { class: "dg-num" }, signed(t.delta_before)),
          h("td", { class: "dg-num" }, signed(t.delta_after)),
          h("td", { class: `dg-num ${cls(t.delta_change)}` }, signed(t.delta_change)),
        ),
    });
    const templatesPanel = h("section", { class: "dg-panel" }, h("h3", {}, "Templates"), h("p", { class: "dg-muted" }, "Each report's change in pass rate (new − old) per template, and how it moved: the worst first."), templateTable);

    const oneSide = (label, testid, rows) => {
      if (!rows.length) return null;
      const table = new PagedTable();
      table.show(rows, {
        label,
        testid,
        unit: "pipeline(s)",
        columns: ["pipeline"],
        placeholder: "Search id…",
        hay: (r) => r.id_label,
        row: (r) => h("tr", { "data-testid": `${testid}-row`, "data-id": idJson(r) }, h("td", { class: "dg-mono", title: `${r.id_kind} id` }, longText(r.id_label))),
      });
      return h("details", { "data-testid": testid }, h("summary", {}, `${label}: ${rows.length}`), table);
    };
    const only = onlyBefore.length || onlyAfter.length ? h("section", { class: "dg-panel" }, h("h3", {}, "Cases on one side only"), oneSide("Only before", "only-before", onlyBefore), oneSide("Only after", "only-after", onlyAfter)) : null;
    const warnings = d.warnings.length ? h("section", { class: "dg-panel dg-warnings", "data-testid": "compare-warnings" }, h("h3", {}, "Warnings"), h("ul", {}, d.warnings.map((w) => h("li", {}, longText(w))))) : null;

    this.results.replaceChildren(
      banner,
      exports,
      h("div", { class: "dg-cards" }, sideCard("Before", d.before, d.stats.before), sideCard("After", d.after, d.stats.after)),
      overlap,
      policy,
      h("section", { class: "dg-panel" }, h("h3", {}, "Cases"), h("p", {}, `${d.cases.common} in common, ${onlyBefore.length} only before, ${onlyAfter.length} only after.`), counts),
      flipsPanel,
      templatesPanel,
      only,
      this.reviewPanel(review),
      warnings,
    );
  }
}
