// <dg-file-drop>: the drop zone, the file picker and the list of files with their roles.
// Emits `dg-files` ({files: [{file, role}]}) whenever the set or a role changes, and
// `dg-signed-files` ({files}) for the files of a signed decision (envelopes, keys) dropped here.
// `dg-report-file` ({file}) for a dropped HTML report. `dg-compare-files` ({files, keys}) for
// evaluations to compare: report JSONs, or signed decisions when two or more come together or
// with a report (keys: the public key files dropped with them). `dg-policy-file` ({file}, null
// when none) when the policy file among the files changes: a file the core's sniffer calls a
// policy (a JSON object of policy fields, or a file named as a policy) is the evaluation's policy.
import { h, bytes } from "../dom.js";
import { isSignedDecisionFile } from "./verify-panel.js";
import { documentKind } from "./compare-view.js";

export const ROLES = [
  ["audit", "audit log"],
  ["old_verdicts", "old verdicts"],
  ["new_verdicts", "new verdicts"],
  ["old_trajectories", "old trajectories"],
  ["new_trajectories", "new trajectories"],
  ["policy", "policy"],
  ["ignore", "ignore"],
];

export class FileDrop extends HTMLElement {
  constructor() {
    super();
    this.entries = [];
    /** Set by the viewer: async (file) => RoleGuess. */
    this.sniffer = null;
  }

  connectedCallback() {
    if (this.input) return;
    this.input = h("input", { type: "file", multiple: true, id: "dg-file-input", class: "dg-file-input", "data-testid": "file-input", "aria-label": "Choose files" });
    this.input.addEventListener("change", () => {
      this.add([...this.input.files]);
      this.input.value = "";
    });
    this.zone = h(
      "div",
      { class: "dg-drop", "data-testid": "drop-zone" },
      h("p", { class: "dg-drop-title" }, "Drop the audit log and both verdict files here"),
      h("p", { class: "dg-muted" }, "Trajectory results are optional. Two reports (or two signed decisions with their keys) are compared. Files stay on this machine: everything runs in this page."),
      this.input,
      h("label", { class: "dg-button", for: "dg-file-input" }, "Choose files…"),
      (this.exampleButton = h("button", { type: "button", class: "dg-button dg-secondary", "data-testid": "load-example", hidden: !this.exampleAvailable, onclick: () => this.dispatchEvent(new CustomEvent("dg-example", { bubbles: true })) }, "Load example")),
    );
    for (const type of ["dragenter", "dragover"]) {
      this.zone.addEventListener(type, (e) => {
        e.preventDefault();
        this.zone.classList.add("dg-dragging");
      });
    }
    this.zone.addEventListener("dragleave", () => this.zone.classList.remove("dg-dragging"));
    this.zone.addEventListener("drop", (e) => {
      e.preventDefault();
      this.zone.classList.remove("dg-dragging");
      this.add([...(e.dataTransfer ? e.dataTransfer.files : [])]);
    });
    this.list = h("ul", { class: "dg-file-list", "aria-label": "Files and their roles" });
    this.append(this.zone, this.list);
  }

  /** Whether the page offers the bundled example (example.js imported): shows "Load example". */
  get exampleAvailable() {
    return Boolean(this._exampleAvailable);
  }
  set exampleAvailable(on) {
    this._exampleAvailable = Boolean(on);
    if (this.exampleButton) this.exampleButton.hidden = !on;
  }

  /** Adds files, guessing each one's role from its content and name. */
  async add(dropped) {
    if (!dropped.length) return;
    // A standalone HTML report is opened, not evaluated (`dg-report-file`, {file}).
    const reports = dropped.filter((f) => /\.html?$/i.test(f.name));
    for (const file of reports) this.dispatchEvent(new CustomEvent("dg-report-file", { bubbles: true, detail: { file } }));
    dropped = dropped.filter((f) => !reports.includes(f));
    const signed = await Promise.all(dropped.map((f) => isSignedDecisionFile(f)));
    const kinds = await Promise.all(dropped.map((f) => documentKind(f)));
    // Reports, and envelopes two at a time or beside a report, are compared; one envelope with
    // its keys is verified (the Verify panel).
    const reportCount = kinds.filter((k) => k === "report").length;
    const envelopeCount = dropped.filter((_, i) => signed[i] && kinds[i] === "signed").length;
    const comparing = reportCount > 0 || envelopeCount >= 2;
    if (comparing) {
      const documents = dropped.filter((_, i) => kinds[i] === "report" || (signed[i] && kinds[i] === "signed"));
      const keys = dropped.filter((_, i) => signed[i] && kinds[i] !== "signed");
      this.dispatchEvent(new CustomEvent("dg-compare-files", { bubbles: true, detail: { files: documents, keys } }));
    } else {
      const decision = dropped.filter((_, i) => signed[i]);
      if (decision.length) this.dispatchEvent(new CustomEvent("dg-signed-files", { bubbles: true, detail: { files: decision } }));
    }
    const files = dropped.filter((_, i) => !signed[i] && kinds[i] !== "report");
    if (!files.length) return;
    const guesses = await Promise.all(files.map((f) => (this.sniffer ? this.sniffer(f).catch(() => null) : null)));
    files.forEach((file, i) => {
      const guess = guesses[i];
      let role = guess && guess.role;
      if (!role && guess && (guess.kind === "verdicts" || guess.kind === "trajectories")) {
        const kind = guess.kind;
        role = [`old_${kind}`, `new_${kind}`].find((r) => !this.entries.some((e) => e.role === r)) || `new_${kind}`;
      }
      if (!role && guess && guess.kind === "policy") role = "policy";
      if (!role) role = "ignore";
      // A file for a single-file role replaces the previous one.
      if (role !== "audit" && role !== "ignore") this.entries = this.entries.filter((e) => e.role !== role);
      this.entries.push({ file, role, guessed: Boolean(guess && guess.role) });
    });
    this.render();
    this.emit();
  }

  /** Replaces every file (used by "Load example"). */
  set(entries) {
    this.entries = entries.map((e) => ({ ...e, guessed: true }));
    this.render();
    this.emit();
  }

  emit() {
    // The policy first: the evaluation the files start must be under it.
    const policy = this.entries.find((e) => e.role === "policy");
    const file = policy ? policy.file : null;
    if (file !== (this.policyFile || null)) {
      this.policyFile = file;
      this.dispatchEvent(new CustomEvent("dg-policy-file", { bubbles: true, detail: { file } }));
    }
    this.dispatchEvent(new CustomEvent("dg-files", { bubbles: true, detail: { files: this.entries.filter((e) => e.role !== "ignore" && e.role !== "policy") } }));
  }

  render() {
    this.list.replaceChildren(
      ...this.entries.map((entry, i) => {
        const select = h("select", { "aria-label": `Role of ${entry.file.name}`, "data-testid": "role-select" }, ROLES.map(([value, label]) => h("option", { value, selected: value === entry.role }, label)));
        select.addEventListener("change", () => {
          entry.role = select.value;
          if (entry.role !== "audit" && entry.role !== "ignore") {
            this.entries = this.entries.filter((e, j) => j === i || e.role !== entry.role);
          }
          this.render();
          this.emit();
        });
        const remove = h("button", { type: "button", class: "dg-link", "aria-label": `Remove ${entry.file.name}`, onclick: () => {
          this.entries.splice(i, 1);
          this.render();
          this.emit();
        } }, "remove");
        return h("li", { "data-testid": "file-entry", "data-role": entry.role }, h("span", { class: "dg-file-name" }, entry.file.name), h("span", { class: "dg-muted" }, bytes(entry.file.size)), select, remove);
      }),
    );
  }
}
