// The portal's code: one import registers <deploy-gate-viewer>; the stylesheet comes through the
// bundler. The dg-decision listener is typed by the package's declarations (HTMLElementEventMap,
// HTMLElementTagNameMap), checked with tsc --strict by the test.
import "deploy-gate/viewer";
import "deploy-gate/viewer.css";
import type { DeployGateViewer, GateReport } from "deploy-gate/viewer";
import { defaultPolicy, type GatePolicy } from "deploy-gate";

const viewer: DeployGateViewer | null = document.querySelector("deploy-gate-viewer");
const out = document.getElementById("last-decision") as HTMLOutputElement;

function describe(report: GateReport): string {
  const { approved, reason, num_cases } = report.decision;
  return `${approved ? "deploy" : "keep the old model"} (${num_cases} cases): ${reason}`;
}

viewer?.addEventListener("dg-decision", (event) => {
  const report: GateReport = event.detail.report;
  out.textContent = describe(report);
  out.dataset.approved = String(report.decision.approved);
  out.dataset.reason = report.decision.reason;
});

// The JS API of the same package is at hand too (the element initialises the core).
export const defaults: () => GatePolicy = defaultPolicy;
