// <dg-verify-panel>: drop a signed decision and the trusted public keys (or paste a key); shows
// whether it is valid, which trusted keys signed it, and the decision. Each time it verifies, it
// emits `dg-signed-decision` ({result, envelope, keys, options}; `null` when there is nothing to
// verify): the viewer then shows the evidence of a valid decision. A trainer's `model.sig`
// (OpenSSF Model Signing) dropped here with the trainer's public keys (ECDSA P-256/P-384, told
// apart from the reviewers' Ed25519 keys by their type; root certificates for the certificate
// method) is passed on with `dg-model-signature` ({file, keys, roots, identities, sigstoreRoot,
// decision}; `null`: none), `decision` being the verified decision's model, so that both can be
// compared. A keyless (Sigstore) signature is checked against the signer identities entered here
// ({identity, issuer} pairs, or the viewer's `trainer-identities` attribute) and a trusted root
// (a dropped `trusted_root.json` or ClientTrustConfig, the viewer's `sigstore-root`, else the
// public-good root bundled with the core). Nothing is sent anywhere.
import { h } from "../dom.js";
import { isModelSignature } from "./model-signature.js";

/** A Sigstore trusted root (`trusted_root.json`) or a ClientTrustConfig, told by its media type. */
const SIGSTORE_ROOT = /"mediaType"\s*:\s*"application\/vnd\.dev\.sigstore\.(trustedroot|clienttrustconfig)/;

/** Whether a file is a Sigstore trusted root or ClientTrustConfig (by its first bytes). */
export async function isSigstoreRoot(file) {
  try {
    return /^\s*\{/.test(await file.slice(0, 64).text()) && SIGSTORE_ROOT.test(await file.slice(0, 4096).text());
  } catch {
    return false;
  }
}

/** Files that belong to a signed decision rather than to an evaluation: keys, certificates,
 * envelopes, a trainer's model signature and a Sigstore trusted root. */
export async function isSignedDecisionFile(file) {
  if (/\.(pem|pub|key|crt|sig)$/i.test(file.name) || /\.(dsse|intoto)(\.json)?$/i.test(file.name)) return true;
  let head;
  try {
    head = await file.slice(0, 2048).text();
  } catch {
    return false;
  }
  if (/^\s*-----BEGIN [A-Z ]*(KEY|CERTIFICATE)-----/.test(head)) return true;
  if (/^\s*\{/.test(head) && /"mediaType"\s*:\s*"application\/vnd\.dev\.sigstore\.bundle/.test(head)) return true;
  if (await isSigstoreRoot(file)) return true;
  return /^\s*\{/.test(head) && /"payloadType"\s*:/.test(head) && /"signatures"\s*:|"payload"\s*:/.test(head);
}

/** The largest envelope read (the CLI's default `--max-envelope-size`; a decision is far smaller). */
const MAX_ENVELOPE_BYTES = 64 << 20;

export class VerifyPanel extends HTMLElement {
  connectedCallback() {
    if (this.input) return;
    this.client = this.client || null;
    this.envelope = null;
    this.keys = [];
    this.modelSignature = null;
    this.trainerKeys = [];
    this.trainerRoots = [];
    /** Keyless signers: [{identity, issuer}], exact. */
    this.identities = this.identities || [];
    /** The Sigstore trusted root: {name, text}, or null for the bundled public-good root. */
    this.sigstoreRoot = this.sigstoreRoot || null;
    /** Settles once the trust the viewer's attributes give is loaded (the trusted root's file). */
    this.trustReady = this.trustReady || Promise.resolve();
    this.lastDecision = null;
    this.runs = 0;
    this.input = h("input", { type: "file", multiple: true, accept: ".json,.pem", "data-testid": "verify-input", "aria-label": "Envelope, model signature and trusted public keys" });
    this.input.addEventListener("change", () => {
      this.add([...this.input.files]);
      this.input.value = "";
    });
    this.list = h("ul", { class: "dg-skipped", "data-testid": "verify-files" });
    this.result = h("div", { "data-testid": "verify-result", "aria-live": "polite" });
    const field = (name, label, placeholder) => h("label", { class: "dg-field" }, h("span", {}, label), h("input", { name, type: "text", placeholder, autocomplete: "off" }));
    this.fields = h("div", { class: "dg-policy" }, field("verify_model_digest", "Model digest", "optional: sha256:…"), field("verify_target", "Target", "optional"), field("verify_threshold", "Signatures needed", "1"));
    this.fields.addEventListener("change", () => this.verify());
    this.paste = h("textarea", { rows: 3, class: "dg-pem", placeholder: "-----BEGIN PUBLIC KEY-----", spellcheck: "false", "data-testid": "verify-paste-key", "aria-label": "A trusted public key (PEM)" });
    const pasted = h(
      "details",
      {},
      h("summary", {}, "Paste a trusted public key"),
      this.paste,
      h("button", { type: "button", class: "dg-button dg-secondary", "data-testid": "verify-add-key", onclick: () => this.addPasted() }, "Add the key"),
    );
    const zone = h("div", { class: "dg-drop", "data-testid": "verify-drop" }, h("p", {}, "Drop decision.dsse.json, the trainer's model.sig and the trusted public keys (.pem)"), this.input);
    zone.addEventListener("dragover", (e) => e.preventDefault());
    zone.addEventListener("drop", (e) => {
      e.preventDefault();
      this.add([...(e.dataTransfer ? e.dataTransfer.files : [])]);
    });
    const signer = (name, label, placeholder) => h("label", { class: "dg-field" }, h("span", {}, label), h("input", { name, type: "text", placeholder, autocomplete: "off", spellcheck: "false" }));
    this.signerFields = h("div", { class: "dg-policy" }, signer("trainer_identity", "Identity", "an email or a URI"), signer("trainer_issuer", "OIDC issuer", "its exact URL"));
    const keyless = h(
      "details",
      { "data-testid": "verify-keyless" },
      h("summary", {}, "Trainer's keyless signer (Sigstore)"),
      h("p", { class: "dg-muted" }, "The certificate's identity and issuer, matched exactly; any one pair added is enough. Drop a trusted_root.json to use another Sigstore instance than the public-good one bundled."),
      this.signerFields,
      h("button", { type: "button", class: "dg-button dg-secondary", "data-testid": "verify-add-identity", onclick: () => this.addSignerFromFields() }, "Add the signer"),
    );
    this.append(zone, pasted, keyless, this.list, this.fields, this.result);
    // Signers and a trusted root given before the panel was connected (the viewer's attributes).
    this.render();
  }

  /** Trusts keyless signers ([{identity, issuer}], as the viewer's `trainer-identities`
   * attribute gives them) and a Sigstore trusted root ({name, text} or null: the bundled one). */
  configureKeyless({ identities = [], sigstoreRoot = null } = {}) {
    for (const pair of identities) this.addIdentity(pair.identity, pair.issuer);
    // A root dropped meanwhile stays: the attribute's may load after the drop.
    if (sigstoreRoot && !this.rootDropped) this.sigstoreRoot = sigstoreRoot;
    if (this.list) this.render();
  }

  /** Adds a keyless signer (exact identity and issuer); the same pair twice is kept once. */
  addIdentity(identity, issuer) {
    if (typeof identity !== "string" || typeof issuer !== "string" || !identity || !issuer) throw new Error("a keyless signer needs an identity and an issuer");
    // Also before the panel is connected: the viewer gives its attributes' signers first.
    const identities = this.identities || [];
    if (!identities.some((p) => p.identity === identity && p.issuer === issuer)) this.identities = identities.concat([{ identity, issuer }]);
  }

  async addSignerFromFields() {
    const field = (name) => this.signerFields.querySelector(`[name="${name}"]`);
    const identity = field("trainer_identity").value.trim();
    const issuer = field("trainer_issuer").value.trim();
    if (!identity || !issuer) {
      this.result.replaceChildren(h("p", { class: "dg-error" }, "A keyless signer needs both the identity and the OIDC issuer."));
      return;
    }
    this.addIdentity(identity, issuer);
    field("trainer_identity").value = "";
    field("trainer_issuer").value = "";
    this.render();
    await this.verify();
  }

  /** Adds one public key — a reviewer's (Ed25519), or a trainer's (ECDSA P-256/P-384) or root
   * certificates — false (with the reason shown) when it is none. */
  async addKey(name, pem) {
    try {
      let info;
      try {
        info = await this.client.call("keyInfo", { pem });
      } catch (reviewer) {
        let trainer;
        try {
          trainer = await this.client.call("trainerKeyInfo", { pem });
        } catch (e) {
          throw new Error(`${reviewer.message}; nor a trainer's key: ${e.message}`);
        }
        if (trainer.kind === "key") {
          this.trainerKeys = this.trainerKeys.filter((k) => k.keyid !== trainer.key_id).concat([{ name, pem, keyid: trainer.key_id, curve: trainer.curve }]);
        } else {
          this.trainerRoots = this.trainerRoots.concat([{ name, pem, certificates: trainer.certificates }]);
        }
        return true;
      }
      if (info.kind !== "public") throw new Error("a private key — only public keys are needed here (a co-signer loads theirs below the signed decision)");
      this.keys = this.keys.filter((k) => k.keyid !== info.keyid).concat([{ name, pem, keyid: info.keyid }]);
      return true;
    } catch (e) {
      this.result.replaceChildren(h("p", { class: "dg-error" }, `${name}: ${e.message}`));
      return false;
    }
  }

  async addPasted() {
    const pem = this.paste.value.trim();
    if (!pem) return;
    if (!(await this.addKey(`pasted key ${this.keys.filter((k) => k.name.startsWith("pasted key")).length + 1}`, `${pem}\n`))) return;
    this.paste.value = "";
    this.render();
    await this.verify();
  }

  async add(files) {
    for (const file of files) {
      if (/\.pem$|\.pub$|\.key$|\.crt$/i.test(file.name) || /^\s*-----BEGIN /.test(await file.slice(0, 64).text())) {
        if (!(await this.addKey(file.name, await file.text()))) return;
      } else if (await isModelSignature(file)) {
        this.modelSignature = file;
      } else if (await isSigstoreRoot(file)) {
        this.sigstoreRoot = { name: file.name, text: await file.text() };
        this.rootDropped = true;
      } else {
        this.envelope = file;
      }
    }
    this.render();
    await this.verify();
  }

  render() {
    const items = [
      this.envelope ? h("li", {}, "decision: ", this.envelope.name) : null,
      ...this.keys.map((k) => h("li", {}, "trusted key: ", k.name, h("span", { class: "dg-muted" }, ` (key id ${k.keyid})`))),
      this.modelSignature ? h("li", { "data-testid": "verify-model-signature" }, "trainer's model signature: ", this.modelSignature.name) : null,
      ...this.trainerKeys.map((k) => h("li", { "data-testid": "verify-trainer-key" }, "trusted trainer key: ", k.name, h("span", { class: "dg-muted" }, ` (key id ${k.keyid}, ${k.curve})`))),
      ...this.trainerRoots.map((k) => h("li", {}, "trusted trainer root: ", k.name, h("span", { class: "dg-muted" }, ` (${k.certificates} certificate${k.certificates === 1 ? "" : "s"})`))),
      ...this.identities.map((p) => h("li", { "data-testid": "verify-trainer-identity" }, "keyless signer: ", p.identity, h("span", { class: "dg-muted" }, ` (issuer ${p.issuer})`))),
      this.sigstoreRoot ? h("li", { "data-testid": "verify-sigstore-root" }, "Sigstore trusted root: ", this.sigstoreRoot.name) : null,
    ];
    // replaceChildren would show a null as the text "null".
    this.list.replaceChildren(...items.filter(Boolean));
  }

  /** Passes the model signature on, with the verified decision's model (or none). */
  emitModel(result) {
    const decision = result && result.valid ? { model_digest: result.model_digest, digest_scheme: result.digest_scheme ?? null, model: result.model } : null;
    const detail = this.modelSignature ? { file: this.modelSignature, keys: this.trainerKeys.slice(), roots: this.trainerRoots.slice(), identities: this.identities.slice(), sigstoreRoot: this.sigstoreRoot, decision } : null;
    this.dispatchEvent(new CustomEvent("dg-model-signature", { bubbles: true, detail }));
  }

  /** The verification options from the fields. */
  options() {
    const v = (name) => this.fields.querySelector(`[name="${name}"]`).value.trim();
    const text = v("verify_threshold") || "1";
    const threshold = Number(text);
    if (!/^[0-9]+$/.test(text) || !Number.isSafeInteger(threshold) || threshold < 1) {
      throw new Error(`Signatures needed must be a whole number of at least 1, not “${text}”`);
    }
    return { model_digest: v("verify_model_digest"), target: v("verify_target"), threshold };
  }

  /** The key file's name for a key id (or the key id's start). */
  keyName(id) {
    return (this.keys.find((k) => k.keyid === id) || { name: id.slice(0, 16) + "…" }).name;
  }

  async verify() {
    const run = ++this.runs;
    try {
      await this.trustReady;
    } catch (e) {
      if (run !== this.runs) return;
      // Never verified against another root than the one the page names.
      this.result.replaceChildren(h("p", { class: "dg-error", "data-testid": "verify-trust-error" }, e.message));
      this.emit(null);
      this.dispatchEvent(new CustomEvent("dg-model-signature", { bubbles: true, detail: null }));
      return;
    }
    if (run !== this.runs) return;
    if (!this.envelope || !this.keys.length) {
      this.result.replaceChildren(h("p", { class: "dg-muted" }, "Needs a decision file and at least one trusted public key."));
      this.emit(null);
      this.emitModel(null);
      return;
    }
    // Whatever was verified before is not shown while this verification runs.
    this.emit(null);
    const envelope = this.envelope;
    const keys = this.keys.slice();
    let options;
    let bytes;
    let r;
    try {
      options = this.options();
      // The bytes verified are the bytes co-signed later (the file is not read again).
      if (envelope.size > MAX_ENVELOPE_BYTES) {
        throw new Error(`it is larger than the ${MAX_ENVELOPE_BYTES >> 20} MiB a signed decision may be`);
      }
      bytes = new Uint8Array(await envelope.arrayBuffer());
      if (run !== this.runs) return;
      r = await this.client.call("open", { envelope: bytes, trustedPems: keys.map((k) => k.pem), options });
    } catch (e) {
      if (run !== this.runs) return;
      this.result.replaceChildren(h("p", { class: "dg-error" }, `Cannot verify ${envelope.name}: ${e.message}`));
      this.emit(null);
      this.emitModel(null);
      return;
    }
    if (run !== this.runs) return;
    const box = h("div", { class: `dg-banner ${r.valid ? `dg-${r.outcome}` : "dg-blocked"}`, "data-valid": String(r.valid), "data-outcome": r.valid ? r.outcome : null });
    if (r.valid) {
      box.append(
        h("h3", {}, `Valid — ${r.approved ? "PASSED: deploy" : r.outcome === "inconclusive" ? "FAILED (inconclusive): keep the old model" : "FAILED: keep the old model"}`),
        h("p", {}, "Reason: ", h("code", {}, r.reason)),
        h("p", {}, `Signed by: ${r.signers.map((id) => `key id ${id} (${this.keyName(id)})`).join(", ")}`),
        h("p", {}, `Model ${r.model} (${r.model_digest}) → `, targetText(r.target), `, decided ${r.time_verified}`),
        r.review ? h("p", { "data-testid": "verify-review" }, reviewText(r.review)) : null,
        !r.subject_checked || !r.target_checked ? h("p", { class: "dg-muted" }, "Enter the model digest and the target to check them too.") : null,
      );
    } else {
      box.append(h("h3", {}, `Invalid — ${r.check}`), h("p", {}, r.message));
    }
    this.result.replaceChildren(box);
    this.emit({ result: r, envelope, bytes, keys, options });
    this.emitModel(r);
  }

  emit(detail) {
    this.dispatchEvent(new CustomEvent("dg-signed-decision", { bubbles: true, detail }));
  }
}

/** What a decision signed with a review pins of it (`sign --review`), in one sentence. */
export function reviewText(pin) {
  const m = pin.marks;
  return `Signed with a review: ${m.accepted} accepted, ${m.label_wrong} label wrong, ${m.needs_fix} needs fix; ${pin.regressed.marked} of ${pin.regressed.cases} regressed case(s) marked (review file sha256:${pin.sha256}, ${pin.bytes} bytes).`;
}

/** A target as the deploy step reads it: `models:/NAME@ALIAS` is an MLflow registry alias. */
export function targetText(target) {
  const m = /^models:\/(.+)@([^@]+)$/.exec(target || "");
  if (!m) return h("span", { "data-testid": "verify-target", "data-kind": "config" }, target);
  return h("span", { "data-testid": "verify-target", "data-kind": "registry" }, `the MLflow registry alias ${m[2]} of ${m[1]} (${target}: apply --mlflow moves it, verify --mlflow re-checks it)`);
}
