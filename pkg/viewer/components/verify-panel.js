// <dg-verify-panel>: drop a signed decision and the trusted public keys; shows whether it is
// valid, which trusted keys signed it, and the decision. Nothing is sent anywhere.
import { h } from "../dom.js";

export class VerifyPanel extends HTMLElement {
  connectedCallback() {
    if (this.input) return;
    this.client = this.client || null;
    this.envelope = null;
    this.keys = [];
    this.input = h("input", { type: "file", multiple: true, accept: ".json,.pem", "data-testid": "verify-input", "aria-label": "Envelope and trusted public keys" });
    this.input.addEventListener("change", () => {
      this.add([...this.input.files]);
      this.input.value = "";
    });
    this.list = h("ul", { class: "dg-skipped" });
    this.result = h("div", { "data-testid": "verify-result", "aria-live": "polite" });
    const field = (name, label, placeholder) => h("label", { class: "dg-field" }, h("span", {}, label), h("input", { name, type: "text", placeholder, autocomplete: "off" }));
    this.fields = h("div", { class: "dg-policy" }, field("verify_model_digest", "Model digest", "optional: sha256:…"), field("verify_target", "Target", "optional"), field("verify_threshold", "Signatures needed", "1"));
    this.fields.addEventListener("change", () => this.verify());
    const zone = h("div", { class: "dg-drop", "data-testid": "verify-drop" }, h("p", {}, "Drop decision.dsse.json and the trusted public keys (.pem)"), this.input);
    zone.addEventListener("dragover", (e) => e.preventDefault());
    zone.addEventListener("drop", (e) => {
      e.preventDefault();
      this.add([...(e.dataTransfer ? e.dataTransfer.files : [])]);
    });
    this.append(zone, this.list, this.fields, this.result);
  }

  async add(files) {
    for (const file of files) {
      if (/\.pem$|\.pub$|\.key$/i.test(file.name)) {
        const pem = await file.text();
        try {
          const info = await this.client.call("keyInfo", { pem });
          if (info.kind !== "public") throw new Error("a private key — only public keys are needed here");
          this.keys = this.keys.filter((k) => k.keyid !== info.keyid).concat([{ name: file.name, pem, keyid: info.keyid }]);
        } catch (e) {
          this.result.replaceChildren(h("p", { class: "dg-error" }, `${file.name}: ${e.message}`));
          return;
        }
      } else {
        this.envelope = file;
      }
    }
    this.list.replaceChildren(
      this.envelope ? h("li", {}, "decision: ", this.envelope.name) : null,
      ...this.keys.map((k) => h("li", {}, "trusted key: ", k.name, h("span", { class: "dg-muted" }, ` (${k.keyid.slice(0, 16)}…)`))),
    );
    await this.verify();
  }

  async verify() {
    if (!this.envelope || !this.keys.length) {
      this.result.replaceChildren(h("p", { class: "dg-muted" }, "Needs a decision file and at least one trusted public key."));
      return;
    }
    const v = (name) => this.fields.querySelector(`[name="${name}"]`).value.trim();
    const threshold = Number(v("verify_threshold") || "1");
    const r = await this.client.call("verify", { envelope: this.envelope, trustedPems: this.keys.map((k) => k.pem), options: { model_digest: v("verify_model_digest"), target: v("verify_target"), threshold: Number.isInteger(threshold) && threshold > 0 ? threshold : 1 } });
    const names = (ids) => ids.map((id) => (this.keys.find((k) => k.keyid === id) || { name: id.slice(0, 16) + "…" }).name);
    const box = h("div", { class: `dg-banner ${r.valid ? (r.approved ? "dg-approved" : "dg-blocked") : "dg-blocked"}`, "data-valid": String(r.valid) });
    if (r.valid) {
      box.append(
        h("h3", {}, `Valid — ${r.approved ? "PASSED: deploy" : "FAILED: keep the old model"}`),
        h("p", {}, "Reason: ", h("code", {}, r.reason)),
        h("p", {}, `Signed by: ${names(r.signers).join(", ")}`),
        h("p", {}, `Model ${r.model} (${r.model_digest}) → ${r.target}, decided ${r.time_verified}`),
        !r.subject_checked || !r.target_checked ? h("p", { class: "dg-muted" }, "Enter the model digest and the target to check them too.") : null,
      );
    } else {
      box.append(h("h3", {}, `Invalid — ${r.check}`), h("p", {}, r.message));
    }
    this.result.replaceChildren(box);
  }
}
