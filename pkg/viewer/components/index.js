// Registers every custom element of the viewer, in one place.
import { FileDrop } from "./file-drop.js";
import { PolicyForm } from "./policy-form.js";
import { ProgressBar } from "./progress-bar.js";
import { ResultsView } from "./results-view.js";
import { CaseTable } from "./case-table.js";
import { SignPanel } from "./sign-panel.js";
import { VerifyPanel } from "./verify-panel.js";
import { SignedDecision } from "./signed-decision.js";
import { PagedTable } from "./paged-table.js";
import { CompareView } from "./compare-view.js";
import { ModelSignature } from "./model-signature.js";

export function register() {
  const define = (name, cls) => customElements.get(name) || customElements.define(name, cls);
  define("dg-file-drop", FileDrop);
  define("dg-policy-form", PolicyForm);
  define("dg-progress", ProgressBar);
  define("dg-results", ResultsView);
  define("dg-case-table", CaseTable);
  define("dg-sign-panel", SignPanel);
  define("dg-verify-panel", VerifyPanel);
  define("dg-signed-decision", SignedDecision);
  define("dg-paged-table", PagedTable);
  define("dg-compare", CompareView);
  define("dg-model-signature", ModelSignature);
}
