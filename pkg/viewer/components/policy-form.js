// <dg-policy-form>: the gate policy. Emits `dg-policy` ({policy} or {error}) on every change.
// The default values and the error messages are the core's (`defaultPolicy()`, `checkPolicy()`
// in src/wasm.rs over src/policy.rs): the form only lays the fields out.
import { h } from "../dom.js";
import init, { checkPolicy, defaultPolicy } from "../wasm.js";

// The core loads while the page renders; the form fills its fields once it is in.
const core = init();

const FIELDS = [
  ["min_samples", "Min samples", "Fewer candidate cases than this give an empty test set."],
  ["max_samples", "Max samples", "Sample the test set down to this many cases (“none”: keep all)."],
  ["seed", "Seed", "Seed of the reproducible sample."],
  ["task_tol", "Task tolerance", "Blocked when new pass rate < old − tolerance."],
  ["traj_tol", "Trajectory tolerance", "Blocked when new trajectory score < old − tolerance."],
  ["pass_verdicts", "Pass verdicts", "Verdicts of a successful run, comma-separated."],
  ["confidence", "Confidence", "Confidence level of the intervals."],
  ["budget", "Budget", "Sequential rule only: the most cases (templates when clustered by template) to use; empty: every one."],
];

/** The form's text of each field, from the core's default policy (the report's spelling). */
function defaultTexts() {
  const p = defaultPolicy();
  const text = (v) => (v === null ? "none" : Array.isArray(v) ? v.join(",") : String(v));
  // `sequential` and `budget` are written only into a sequential policy: off, and no budget.
  const values = { sequential: false, budget: "", ...p, task_tol: p.task_regression_tol, traj_tol: p.trajectory_regression_tol };
  return Object.fromEntries(Object.entries(values).map(([k, v]) => [k, text(v)]));
}

export class PolicyForm extends HTMLElement {
  constructor() {
    super();
    /** Resolves once the fields hold the core's defaults (`read()` works from then on). */
    this.ready = new Promise((resolve, reject) => {
      this.settle = { resolve, reject };
    });
  }

  connectedCallback() {
    if (this.form) return;
    this.error = h("p", { class: "dg-error", role: "alert", hidden: true });
    this.form = h(
      "form",
      { class: "dg-policy", "aria-label": "Gate policy" },
      FIELDS.map(([name, label, help]) =>
        h("label", { class: "dg-field" }, h("span", {}, label), h("input", { name, type: "text", inputmode: name === "pass_verdicts" ? undefined : "decimal", autocomplete: "off", spellcheck: "false", title: help })),
      ),
      h(
        "label",
        { class: "dg-field" },
        h("span", {}, "Too few cases"),
        h("select", { name: "on_insufficient", title: "What to do when the test set is empty or smaller than min samples." }, h("option", { value: "block" }, "block (fail closed)"), h("option", { value: "approve" }, "approve (reference behaviour)")),
      ),
      h(
        "label",
        { class: "dg-field" },
        h("span", {}, "Rule"),
        h("select", { name: "mode", title: "point: blocked when new < old − tolerance (the reference). non-inferiority: approved when the interval shows new > old − tolerance, blocked when it shows a regression, else inconclusive." }, h("option", { value: "point" }, "point (reference)"), h("option", { value: "non_inferiority" }, "non-inferiority")),
      ),
      h(
        "label",
        { class: "dg-field" },
        h("span", {}, "Clustering"),
        h("select", { name: "cluster", title: "template: cases of one template are correlated, the intervals are cluster-robust. none: every case independent." }, h("option", { value: "template" }, "by template"), h("option", { value: "none" }, "none (independent cases)")),
      ),
      h(
        "label",
        { class: "dg-field" },
        h("span", {}, "Repeated verdicts"),
        h("select", { name: "repeats", title: "last: the last verdict of a case counts (the reference). mean: every verdict counts; a case scores the share that pass." }, h("option", { value: "last" }, "last (reference)"), h("option", { value: "mean" }, "mean of every run")),
      ),
      h(
        "label",
        { class: "dg-field" },
        h("span", {}, "Decide"),
        h("select", { name: "sequential", title: "at once: the fixed-size rule on every case. sequentially: a confidence sequence over the cases in the seed's order, stopping as soon as the decision is reached (needs the non-inferiority rule)." }, h("option", { value: "false" }, "at once (fixed size)"), h("option", { value: "true" }, "sequentially (confidence sequence)")),
      ),
      this.error,
    );
    this.fields = h("fieldset", { class: "dg-fields", disabled: true }, [...this.form.childNodes]);
    this.form.append(this.fields);
    core.then(
      () => {
        const defaults = defaultTexts();
        for (const el of this.form.elements) if (el.name) el.value = defaults[el.name];
        this.fields.disabled = false;
        this.loaded = true;
        this.settle.resolve();
      },
      (e) => this.settle.reject(e),
    );
    this.form.addEventListener("submit", (e) => e.preventDefault());
    this.form.addEventListener("change", () => this.emit());
    this.form.addEventListener("input", () => {
      clearTimeout(this.timer);
      this.timer = setTimeout(() => this.emit(), 400);
    });
    this.append(this.form);
  }

  /** The policy as the core resolves the fields' texts (the report's policy object), or throws
   * with the core's message naming the field that is wrong. */
  read() {
    if (!this.loaded) throw new Error("the policy form is still loading");
    const input = {};
    // An empty budget is none (the sequential rule then uses every case).
    for (const el of this.form.elements) if (el.name && !(el.name === "budget" && el.value.trim() === "")) input[el.name] = el.value;
    const checked = checkPolicy(input);
    if (!checked.ok) throw new Error(checked.message);
    return checked.policy;
  }

  emit() {
    clearTimeout(this.timer);
    let detail;
    try {
      detail = { policy: this.read() };
      this.error.hidden = true;
    } catch (e) {
      this.error.textContent = e.message;
      this.error.hidden = false;
      detail = { error: e.message };
    }
    const key = JSON.stringify(detail);
    if (key === this.last) return;
    this.last = key;
    this.dispatchEvent(new CustomEvent("dg-policy", { bubbles: true, detail }));
  }
}
