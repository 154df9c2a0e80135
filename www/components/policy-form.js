// <dg-policy-form>: the gate policy. Emits `dg-policy` ({policy} or {error}) on every change.
// The default values and the error messages are the core's (`defaultPolicy()`, `checkPolicy()`
// in src/wasm.rs over src/policy/mod.rs): the form only lays the fields out. A policy file (as
// `deploy-gate evaluate --policy` reads it, through the core's `checkPolicyFile()`) fills the
// fields; its `prices`, `guardrails`, `template_regression` and `review`, which the form has no fields
// for, are shown read-only and passed to the core unchanged with the fields. A policy file
// dropped with the other files is used the same way (`useFile()`): it is the policy in force
// (its name and digest shown) until it is removed or a field is edited; one the core refuses is
// shown with the core's reason, naming the field.
import { h, longText } from "../dom.js";
import init, { checkPolicy, checkPolicyFile, defaultPolicy } from "../wasm.js";

/** The policy fields the form shows but does not edit. */
const READ_ONLY = ["prices", "guardrails", "template_regression", "review"];

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
  ["max_missing", "Max missing", "The largest share of the test set that may lack a verdict on either side (e.g. 5%); more is inconclusive. Empty: 5%."],
];

/** Fields whose empty text means "not given" (the core's default, not written into the policy). */
const OPTIONAL = ["budget", "max_missing"];

/** The form's text of each field of a resolved policy (the report's spelling); the fields it
 * lacks (`cluster` and `repeats` in a report's policy from before they existed) are the core's
 * defaults. */
function textsOf(policy) {
  const p = { ...defaultPolicy(), ...policy };
  const text = (v) => (v === null ? "none" : Array.isArray(v) ? v.join(",") : String(v));
  // `sequential` and `budget` are written only into a sequential policy: off, and no budget.
  const values = { sequential: false, budget: "", max_missing: "", ...p, task_tol: p.task_regression_tol, traj_tol: p.trajectory_regression_tol };
  return Object.fromEntries(Object.entries(values).filter(([k]) => !READ_ONLY.includes(k)).map(([k, v]) => [k, text(v)]));
}

/** A limit as the policy gives it: a relative one in percent. */
const limitText = (g) => (g.max_increase !== undefined ? `max increase ${Math.round(g.max_increase * 1e6) / 1e4}%` : `max difference ${g.max_difference}`);
const priceText = (p) => `prompt ${p.prompt_per_million}, completion ${p.completion_per_million}`;

/** The read-only part of a policy, one line each. */
function readOnlyLines(extra) {
  const lines = [];
  if (extra.prices) lines.push(`prices per million tokens: old ${priceText(extra.prices.old)}; new ${priceText(extra.prices.new)}`);
  for (const g of extra.guardrails || []) {
    lines.push(`${g.action === "block" ? "blocking" : "advisory"}: ${g.statistic} ${g.metric}, ${limitText(g)}${g.min_cases !== undefined ? `, at least ${g.min_cases} cases` : ""}`);
  }
  const t = extra.template_regression;
  if (t) lines.push(`${t.action === "block" ? "blocking" : "advisory"}: template_regression, max drop ${t.max_drop}, templates of at least ${t.min_cases} cases`);
  if (extra.review) lines.push(`review: a signed decision needs a review mark on every ${extra.review.require} case (sign --review)`);
  return lines;
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
    /** The loaded file's read-only fields (none until a file gives some). */
    this.extra = {};
    this.fileInput = h("input", { type: "file", accept: ".json,application/json", class: "dg-file-input", "data-testid": "policy-file" });
    this.fileView = h("div", { class: "dg-policy-file", "data-testid": "policy-file-view", hidden: true });
    this.form.prepend(h("div", {}, h("label", { class: "dg-button dg-secondary" }, "Load a policy file", this.fileInput), this.fileView));
    this.fields = h("fieldset", { class: "dg-fields", disabled: true }, [...this.form.childNodes]);
    this.form.append(this.fields);
    core.then(
      () => {
        const defaults = textsOf({});
        for (const el of this.form.elements) if (el.name) el.value = defaults[el.name];
        this.fields.disabled = false;
        this.loaded = true;
        this.settle.resolve();
      },
      (e) => this.settle.reject(e),
    );
    this.fileInput.addEventListener("change", (e) => {
      // Not a field: the file's policy is emitted once it is read.
      e.stopPropagation();
      const file = this.fileInput.files[0];
      this.fileInput.value = "";
      if (file) this.loadFile(file).catch((err) => this.showError(`${file.name}: ${err.message}`));
    });
    this.form.addEventListener("submit", (e) => e.preventDefault());
    this.form.addEventListener("change", () => {
      this.edited();
      this.emit();
    });
    this.form.addEventListener("input", () => {
      this.edited();
      clearTimeout(this.timer);
      this.timer = setTimeout(() => this.emit(), 400);
    });
    this.append(this.form);
  }

  /** Reads a policy file (`deploy-gate evaluate --policy`'s: a policy object or a whole report)
   * with the core: its fields fill the form, its guardrails are kept read-only, and the policy is
   * emitted. A file the core refuses changes nothing; the form shows why, naming the file. */
  async loadFile(file) {
    await this.ready;
    const checked = checkPolicyFile(new Uint8Array(await file.arrayBuffer()));
    if (!checked.ok) throw new Error(checked.field ? `${checked.field}: ${checked.message}` : checked.message);
    const texts = textsOf(checked.policy);
    for (const el of this.form.elements) if (el.name) el.value = texts[el.name];
    this.extra = Object.fromEntries(READ_ONLY.filter((k) => checked.policy[k] !== undefined).map((k) => [k, checked.policy[k]]));
    this.inForce = { name: file.name, digest: checked.digest, edited: false };
    this.showFile(file.name);
    this.emit();
  }

  /** Uses a policy file dropped with the other files: `{ok: true, policy, digest}` with its
   * fields in the form (no `dg-policy` event: the caller applies it), or `{ok: false, message}`
   * naming the file and the field the core refuses (the form shows it too). */
  async useFile(file) {
    await this.ready;
    const checked = checkPolicyFile(new Uint8Array(await file.arrayBuffer()));
    if (!checked.ok) {
      const message = `${file.name} is not a valid policy: ${checked.field ? `${checked.field}: ` : ""}${checked.message}`;
      this.inForce = null;
      this.fileView.replaceChildren(h("p", { class: "dg-error", "data-testid": "policy-file-error" }, message));
      this.fileView.hidden = false;
      return { ok: false, message };
    }
    const texts = textsOf(checked.policy);
    for (const el of this.form.elements) if (el.name) el.value = texts[el.name];
    this.extra = Object.fromEntries(READ_ONLY.filter((k) => checked.policy[k] !== undefined).map((k) => [k, checked.policy[k]]));
    this.error.hidden = true;
    this.inForce = { name: file.name, digest: checked.digest, edited: false };
    this.showFile(file.name);
    const policy = this.read();
    this.last = JSON.stringify({ policy });
    return { ok: true, policy, digest: checked.digest };
  }

  /** Forgets a dropped policy file: the fields go back to the core's defaults (no event). */
  clearFile() {
    const defaults = textsOf({});
    for (const el of this.form.elements) if (el.name) el.value = defaults[el.name];
    this.extra = {};
    this.inForce = null;
    this.fileView.replaceChildren();
    this.fileView.hidden = true;
    this.error.hidden = true;
    const policy = this.read();
    this.last = JSON.stringify({ policy });
    return policy;
  }

  /** A field was edited: a dropped policy file is no longer the policy as it is. */
  edited() {
    if (this.inForce && !this.inForce.edited) {
      this.inForce.edited = true;
      this.showFile(this.inForce.name);
    }
  }

  /** The loaded file's name and its read-only fields, with a button that drops them. */
  showFile(name) {
    const lines = readOnlyLines(this.extra);
    const drop = h("button", { type: "button", class: "dg-link", "data-testid": "policy-file-drop" }, "remove them");
    drop.addEventListener("click", () => {
      this.extra = {};
      this.showFile(name);
      this.emit();
    });
    const f = this.inForce;
    const state = f
      ? f.edited
        ? [" (edited in the form since: the policy in force is the form's)"]
        : [" — in force, policy sha256 ", h("code", { "data-testid": "policy-file-digest" }, f.digest)]
      : [];
    this.fileView.replaceChildren(
      h("p", { class: "dg-muted", "data-testid": "policy-file-state" }, "Loaded ", h("code", {}, longText(name)), ...state, lines.length ? "; the form cannot edit these (read-only, used as given):" : "; it has no guardrails."),
      ...(lines.length ? [h("ul", { "aria-label": "Guardrails of the policy file" }, lines.map((l) => h("li", { "data-testid": "policy-guardrail" }, l))), drop] : []),
    );
    this.fileView.hidden = false;
  }

  showError(message) {
    this.error.textContent = message;
    this.error.hidden = false;
  }

  /** The policy as the core resolves the fields' texts and the loaded file's read-only fields
   * (the report's policy object), or throws with the core's message naming the field that is
   * wrong. */
  read() {
    if (!this.loaded) throw new Error("the policy form is still loading");
    const input = { ...this.extra };
    // An empty budget is none (the sequential rule then uses every case).
    for (const el of this.form.elements) if (el.name && !(OPTIONAL.includes(el.name) && el.value.trim() === "")) input[el.name] = el.value;
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
      this.showError(e.message);
      detail = { error: e.message };
    }
    const key = JSON.stringify(detail);
    if (key === this.last) return;
    this.last = key;
    this.dispatchEvent(new CustomEvent("dg-policy", { bubbles: true, detail }));
  }
}
