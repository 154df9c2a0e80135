// <dg-policy-form>: the gate policy. Emits `dg-policy` ({policy} or {error}) on every change.
import { h } from "../dom.js";

const FIELDS = [
  ["min_samples", "Min samples", "20", "Fewer candidate cases than this give an empty test set."],
  ["max_samples", "Max samples", "200", "Sample the test set down to this many cases (“none”: keep all)."],
  ["seed", "Seed", "0", "Seed of the reproducible sample."],
  ["task_tol", "Task tolerance", "0.0", "Blocked when new pass rate < old − tolerance."],
  ["traj_tol", "Trajectory tolerance", "0.05", "Blocked when new trajectory score < old − tolerance."],
  ["pass_verdicts", "Pass verdicts", "PASS,APPROVE,COMPLETE", "Verdicts of a successful run, comma-separated."],
  ["confidence", "Confidence", "0.95", "Confidence level of the intervals."],
];

export class PolicyForm extends HTMLElement {
  connectedCallback() {
    if (this.form) return;
    this.error = h("p", { class: "dg-error", role: "alert", hidden: true });
    this.form = h(
      "form",
      { class: "dg-policy", "aria-label": "Gate policy" },
      FIELDS.map(([name, label, value, help]) =>
        h("label", { class: "dg-field" }, h("span", {}, label), h("input", { name, value, type: "text", inputmode: name === "pass_verdicts" ? undefined : "decimal", autocomplete: "off", spellcheck: "false", title: help })),
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
        h("select", { name: "mode", title: "point: blocked when new < old − tolerance (the reference). non-inferiority: approved only when the interval shows new ≥ old − tolerance." }, h("option", { value: "point" }, "point (reference)"), h("option", { value: "non_inferiority" }, "non-inferiority")),
      ),
      this.error,
    );
    this.form.addEventListener("submit", (e) => e.preventDefault());
    this.form.addEventListener("change", () => this.emit());
    this.form.addEventListener("input", () => {
      clearTimeout(this.timer);
      this.timer = setTimeout(() => this.emit(), 400);
    });
    this.append(this.form);
  }

  /** The policy, or throws with the field that is wrong. */
  read() {
    const v = (name) => this.form.elements[name].value.trim();
    const int = (name) => {
      const x = v(name);
      if (!/^\d+$/.test(x)) throw new Error(`${name} must be a whole number ≥ 0`);
      return Number(x);
    };
    const num = (name) => {
      const x = Number(v(name));
      if (v(name) === "" || !Number.isFinite(x)) throw new Error(`${name} must be a number`);
      return x;
    };
    const max = v("max_samples").toLowerCase();
    const passVerdicts = v("pass_verdicts").split(",").map((p) => p.trim()).filter(Boolean);
    if (!passVerdicts.length) throw new Error("pass_verdicts must name at least one verdict");
    const confidence = num("confidence");
    if (!(confidence > 0 && confidence < 1)) throw new Error("confidence must be between 0 and 1 (e.g. 0.95)");
    return {
      mode: v("mode"),
      confidence,
      min_samples: int("min_samples"),
      max_samples: max === "" || max === "none" ? null : int("max_samples"),
      seed: int("seed"),
      task_tol: num("task_tol"),
      traj_tol: num("traj_tol"),
      pass_verdicts: passVerdicts,
      on_insufficient: v("on_insufficient"),
    };
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
