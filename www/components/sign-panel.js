// <dg-sign-panel>: sign the decision on screen with a private key that never leaves the page
// (loaded from a PEM file, or generated here), and download decision.dsse.json.
import { h, download } from "../dom.js";

export class SignPanel extends HTMLElement {
  connectedCallback() {
    if (this.form) return;
    /** Set by the viewer: the worker client. */
    this.client = this.client || null;
    this.privatePem = null;
    this.keyInput = h("input", { type: "file", accept: ".pem,.key,application/x-pem-file", "data-testid": "sign-key-input", "aria-label": "Private key (PEM)" });
    this.keyInput.addEventListener("change", () => this.loadKey(this.keyInput.files[0]));
    this.keyStatus = h("p", { class: "dg-muted", "data-testid": "sign-key-status" }, "No key loaded. The key stays in this page.");
    this.status = h("p", { "data-testid": "sign-status", "aria-live": "polite" });
    const field = (name, label, placeholder) => h("label", { class: "dg-field" }, h("span", {}, label), h("input", { name, type: "text", placeholder, autocomplete: "off", spellcheck: "false" }));
    this.form = h(
      "form",
      { class: "dg-policy" },
      h("div", {}, h("label", {}, "Private key (PEM): ", this.keyInput), " ", h("button", { type: "button", class: "dg-button dg-secondary", "data-testid": "generate-key", onclick: () => this.generate() }, "Generate a key pair")),
      this.keyStatus,
      field("model_name", "Model name", "agent-7b-v2"),
      field("model_digest", "Model digest", "sha256:… (deploy-gate digest PATH)"),
      h(
        "label",
        { class: "dg-field" },
        h("span", {}, "Deploy to"),
        (this.targetKind = h(
          "select",
          { name: "target_kind", "data-testid": "sign-target-kind", onchange: () => this.showTarget() },
          h("option", { value: "config" }, "a serving config (apply --config)"),
          h("option", { value: "registry" }, "an MLflow registry alias (apply --mlflow)"),
        )),
      ),
      (this.configTarget = field("target", "Target", "the config path the deploy step is given")),
      (this.registryTarget = h("div", {}, field("registered_model", "Registered model", "agent"), field("alias", "Alias", "champion"))),
      (this.reviewChoice = h(
        "label",
        { class: "dg-check", hidden: true },
        (this.withReview = h("input", { type: "checkbox", name: "with_review", checked: true, "data-testid": "sign-with-review" })),
        (this.reviewLabel = h("span", {})),
      )),
      h("div", {}, (this.signButton = h("button", { type: "submit", class: "dg-button", "data-testid": "sign" }, "Sign and download decision.dsse.json"))),
      this.status,
    );
    this.showTarget();
    this.form.addEventListener("submit", (e) => {
      e.preventDefault();
      this.sign();
    });
    this.addEventListener("dragover", (e) => e.preventDefault());
    this.addEventListener("drop", (e) => {
      e.preventDefault();
      if (e.dataTransfer && e.dataTransfer.files[0]) this.loadKey(e.dataTransfer.files[0]);
    });
    this.append(h("h3", {}, "Sign the decision"), h("p", { class: "dg-muted" }, "The deploy step (deploy-gate apply) verifies this signature before it deploys or keeps the old model."), this.form);
  }

  /** The reviewer's marks (a ReviewMarks), offered to sign with. */
  setReview(review) {
    if (this.reviewListener) this.reviewListener.abort();
    this.review = review;
    this.reviewListener = new AbortController();
    const update = () => {
      const n = review.size;
      this.reviewChoice.hidden = n === 0;
      this.reviewLabel.textContent = ` Sign with the review (${n} case(s) marked): the statement pins the review file, downloaded beside the decision as review.jsonl`;
    };
    review.addEventListener("change", (e) => e.detail.noteOnly || update(), { signal: this.reviewListener.signal });
    update();
  }

  /** Shows the fields of the chosen kind of target. */
  showTarget() {
    const registry = this.targetKind.value === "registry";
    this.configTarget.style.display = registry ? "none" : "";
    this.registryTarget.style.display = registry ? "" : "none";
  }

  /** The target signed for: the config path, or the registry alias's URI `models:/NAME@ALIAS`. */
  target() {
    const v = (name) => this.form.elements[name].value.trim();
    if (this.targetKind.value !== "registry") return v("target");
    if (!v("registered_model") || !v("alias")) throw new Error("a registry target needs the registered model and the alias");
    return `models:/${v("registered_model")}@${v("alias")}`;
  }

  /** The statement pins every input by its sha256: signing waits until the audit log's is in. */
  setDigestPending(pending) {
    if (!this.signButton) return;
    this.signButton.disabled = pending;
    this.status.textContent = pending ? "Waiting for the audit log's sha256 (the signed statement pins every input by its digest)…" : "";
  }

  async loadKey(file) {
    if (!file) return;
    try {
      const pem = await file.text();
      const info = await this.client.call("keyInfo", { pem });
      if (info.kind !== "private") throw new Error(`${file.name} is a public key; signing needs the private key`);
      this.privatePem = pem;
      this.keyStatus.textContent = `Private key loaded from ${file.name} (key id ${info.keyid.slice(0, 16)}…).`;
    } catch (e) {
      this.privatePem = null;
      this.keyStatus.textContent = `Cannot use ${file.name}: ${e.message}`;
    }
  }

  async generate() {
    const pair = await this.client.call("keygen");
    this.privatePem = pair.private_pem;
    download("deploy-gate.key.pem", pair.private_pem, "application/x-pem-file");
    download("deploy-gate.pub.pem", pair.public_pem, "application/x-pem-file");
    this.keyStatus.textContent = `New key pair (key id ${pair.keyid.slice(0, 16)}…): both halves downloaded. Keep the private key secret; give the public key to the deploy step.`;
  }

  async sign() {
    const v = (name) => this.form.elements[name].value.trim();
    if (!this.privatePem) {
      this.status.textContent = "Load or generate a private key first.";
      return;
    }
    try {
      const marks = this.review && this.review.size && this.withReview.checked ? this.review.list() : undefined;
      const { envelope, review } = await this.client.call("sign", { privatePem: this.privatePem, modelName: v("model_name"), modelDigest: v("model_digest"), target: this.target(), marks });
      download("decision.dsse.json", envelope, "application/json");
      if (review !== null) download("review.jsonl", review, "application/x-ndjson");
      this.status.textContent = review !== null ? `Signed with the review (${marks.length} case(s) marked): decision.dsse.json and review.jsonl downloaded (deploy-gate verify --review review.jsonl checks it).` : "Signed: decision.dsse.json downloaded.";
    } catch (e) {
      this.status.textContent = `Cannot sign: ${e.message}`;
    }
  }
}
