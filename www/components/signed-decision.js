// <dg-signed-decision>: a signed decision opened in the page. For a valid envelope: who signed
// it, when, for which model and target, then the whole evidence of the report inside the
// verified statement in the same views as a live evaluation, and a co-sign form (a second
// reviewer's key, loaded or generated here, adds a signature; the statement is kept). For an
// invalid envelope: the failed check and nothing from its report — the report of an envelope
// that does not verify is never read, so nothing on screen can pass for trusted evidence.
import { h, download } from "../dom.js";
import { ResultsView } from "./results-view.js";
import { reviewText } from "./verify-panel.js";

export class SignedDecision extends HTMLElement {
  connectedCallback() {
    if (this.initialised) return;
    this.initialised = true;
    this.setAttribute("data-testid", "signed-decision");
    this.hidden = true;
    /** Set by the viewer: the worker client. */
    this.client = this.client || null;
    this.opened = null;
  }

  /** Shows what the Verify panel verified: {result, envelope, keys, options}, or null (nothing). */
  show(opened) {
    this.opened = opened;
    this.cosignPem = null;
    if (!opened) {
      this.replaceChildren();
      this.hidden = true;
      return;
    }
    const { result: r, envelope, keys } = opened;
    this.hidden = false;
    this.setAttribute("data-valid", String(r.valid));
    const name = (id) => {
      const k = keys.find((key) => key.keyid === id);
      return k ? `key id ${id} (trusted key file ${k.name})` : `key id ${id}`;
    };
    const close = h("button", { type: "button", class: "dg-link", "data-testid": "signed-close", onclick: () => this.show(null) }, "close");
    if (!r.valid) {
      this.replaceChildren(
        h(
          "section",
          { class: "dg-banner dg-blocked dg-signed-head", "data-testid": "signed-summary", role: "alert" },
          h("h2", {}, "Signed decision — INVALID: not trusted"),
          h("p", {}, `${envelope.name} failed the check `, h("code", { "data-testid": "signed-check" }, r.check), ": ", h("span", { "data-testid": "signed-message" }, r.message)),
          r.hinted_keyids.length ? h("p", { class: "dg-muted" }, `The envelope says it was signed by: ${r.hinted_keyids.map((id) => `key id ${id}`).join(", ")} (a claim of the envelope, not verified).`) : null,
          h("p", {}, "Its report is not shown: nothing in an envelope that does not verify can be trusted."),
          h("p", {}, close),
        ),
      );
      return;
    }
    const row = (k, v, testid) => [h("dt", {}, k), h("dd", { "data-testid": testid }, v)];
    const unchecked = [!r.subject_checked && "the model digest", !r.target_checked && "the target"].filter(Boolean);
    const head = h(
      "section",
      { class: "dg-panel dg-signed-head", "data-testid": "signed-summary" },
      h("h2", {}, `Signed decision — signature verified: ${r.verification_result}`),
      h("p", { class: "dg-muted" }, `${envelope.name}: the evidence below is the report inside the signed statement, exactly as signed (not a new evaluation).`),
      h(
        "dl",
        { class: "dg-grid" },
        row("signed by", r.signers.map(name).join(", "), "signed-signers"),
        row("time verified", r.time_verified, "signed-time"),
        row("model", r.model, "signed-model"),
        row("model digest", r.model_digest, "signed-digest"),
        row("target", r.target, "signed-target"),
        row("signatures", `${r.signers.length} trusted of ${r.hinted_keyids.length} in the envelope (${opened.options.threshold} needed)`, "signed-count"),
        row("statement sha256", r.payload_sha256, "signed-payload"),
        r.review ? row("review", reviewText(r.review), "signed-review") : null,
      ),
      unchecked.length ? h("p", { class: "dg-muted" }, `Not checked: ${unchecked.join(" and ")} (enter them in the Verify panel to check them too).`) : null,
      h("p", {}, close),
    );
    this.results = new ResultsView();
    this.results.className = "dg-signed-results";
    const cosign = this.cosignForm();
    this.replaceChildren(head, this.results, cosign);
    // The test cases (inputs) are not in a report: the case table shows the outcomes only.
    this.results.show(r.report, null, { source: `From a signed decision, signed by ${r.signers.length} trusted key(s) on ${r.time_verified}`, exports: ["report", "html", "markdown"] });
  }

  /** The report and its text, for the viewer's exports. */
  source() {
    const r = this.opened && this.opened.result;
    return r && r.valid ? { report: r.report, json: r.report_json, results: this.results } : null;
  }

  cosignForm() {
    const keyInput = h("input", { type: "file", accept: ".pem,.key,application/x-pem-file", "data-testid": "cosign-key-input", "aria-label": "Co-signer's private key (PEM)" });
    keyInput.addEventListener("change", () => this.loadKey(keyInput.files[0]));
    this.keyStatus = h("p", { class: "dg-muted", "data-testid": "cosign-key-status" }, "No key loaded. The key stays in this page.");
    this.cosignStatus = h("p", { "data-testid": "cosign-status", "aria-live": "polite" });
    return h(
      "section",
      { class: "dg-panel", "data-testid": "cosign-panel" },
      h("h3", {}, "Co-sign this decision"),
      h("p", { class: "dg-muted" }, "A second reviewer adds their signature to the same statement (two-person approval: deploy-gate apply --threshold 2 with both public keys)."),
      h("div", {}, h("label", {}, "Your private key (PEM): ", keyInput), " ", h("button", { type: "button", class: "dg-button dg-secondary", "data-testid": "cosign-generate-key", onclick: () => this.generate() }, "Generate a key pair")),
      this.keyStatus,
      h("div", {}, h("button", { type: "button", class: "dg-button", "data-testid": "cosign", onclick: () => this.cosign() }, "Co-sign and download decision.dsse.json")),
      this.cosignStatus,
    );
  }

  async loadKey(file) {
    if (!file) return;
    try {
      const pem = await file.text();
      const info = await this.client.call("keyInfo", { pem });
      if (info.kind !== "private") throw new Error(`${file.name} is a public key; co-signing needs the private key`);
      this.cosignPem = pem;
      this.keyStatus.textContent = `Private key loaded from ${file.name} (key id ${info.keyid.slice(0, 16)}…).`;
    } catch (e) {
      this.cosignPem = null;
      this.keyStatus.textContent = `Cannot use ${file.name}: ${e.message}`;
    }
  }

  async generate() {
    const pair = await this.client.call("keygen");
    this.cosignPem = pair.private_pem;
    download("co-signer.key.pem", pair.private_pem, "application/x-pem-file");
    download("co-signer.pub.pem", pair.public_pem, "application/x-pem-file");
    this.keyStatus.textContent = `New key pair (key id ${pair.keyid.slice(0, 16)}…): both halves downloaded. Keep the private key secret; give the public key to the deploy step.`;
  }

  async cosign() {
    if (!this.cosignPem) {
      this.cosignStatus.textContent = "Load or generate a private key first.";
      return;
    }
    const { bytes, keys, options } = this.opened;
    try {
      const text = await this.client.call("cosign", { envelope: bytes, privatePem: this.cosignPem, trustedPems: keys.map((k) => k.pem), options });
      const count = JSON.parse(text).signatures.length;
      download("decision.dsse.json", text, "application/json");
      this.cosignStatus.textContent = `Co-signed: decision.dsse.json downloaded (${count} signatures).`;
    } catch (e) {
      this.cosignStatus.textContent = `Cannot co-sign: ${e.message.replace(/^cannot co-sign: /, "")}`;
    }
  }
}
