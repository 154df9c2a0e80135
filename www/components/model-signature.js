// <dg-model-signature>: the trainer's OpenSSF Model Signing signature (`model.sig`), dropped in
// the Verify panel with the trusted trainer keys (ECDSA P-256/P-384 public keys, or root
// certificates for the certificate method) or, for a keyless (Sigstore) signature, the signer
// identities it must name and a trusted root (the public-good one bundled unless one is given).
// Shows whether it verifies (or the failed check), the trainer's key id or the keyless signer's
// identity, issuer, Rekor log index and integrated time, the signed files with their digests, and
// whether it names the same model as the signed decision beside it. "Choose model folder" checks the folder's files against it in
// the browser: the gate worker hashes them in helper workers, streamed 1 MiB at a time (a
// multi-GB folder is never held in memory), with progress; nothing leaves the machine.
import { h, bytes } from "../dom.js";

/** The most signed files listed on screen (the rest are counted). */
const SHOWN_RESOURCES = 500;
/** The largest `model.sig` read (the core's own limit). */
const MAX_BUNDLE_BYTES = 256 << 20;
/** The OMS v1.0 predicate type (a name, not an address: written as a pattern, so that the
 * single-file viewer's check for external addresses does not see an address in it). */
const OMS_PREDICATE = /^https:\/\/model_signing\/signature\/v1\.0$/;

/** Whether a file is an OMS `model.sig`: a Sigstore bundle JSON whose DSSE payload is a
 * statement with the OMS predicate type. */
export async function isModelSignature(file) {
  if (file.size > MAX_BUNDLE_BYTES) return false;
  let head;
  try {
    head = await file.slice(0, 4096).text();
  } catch {
    return false;
  }
  if (!/"mediaType"\s*:\s*"application\/vnd\.dev\.sigstore\.bundle/.test(head)) return false;
  try {
    const bundle = JSON.parse(await file.text());
    if (typeof bundle.mediaType !== "string" || !bundle.mediaType.startsWith("application/vnd.dev.sigstore.bundle")) return false;
    const payload = bundle.dsseEnvelope && bundle.dsseEnvelope.payload;
    if (typeof payload !== "string") return false;
    const statement = JSON.parse(new TextDecoder().decode(Uint8Array.from(atob(payload), (c) => c.charCodeAt(0))));
    return Boolean(statement) && typeof statement.predicateType === "string" && OMS_PREDICATE.test(statement.predicateType);
  } catch {
    return false;
  }
}

/** A folder's file path relative to the chosen folder (`webkitRelativePath` without its first
 * component, the folder's own name). */
function relativePath(file) {
  const p = file.webkitRelativePath || file.name;
  const cut = p.indexOf("/");
  return cut >= 0 ? p.slice(cut + 1) : p;
}

export class ModelSignature extends HTMLElement {
  connectedCallback() {
    if (this.initialised) return;
    this.initialised = true;
    this.setAttribute("data-testid", "model-signature");
    this.hidden = true;
    /** Set by the viewer: the worker client. */
    this.client = this.client || null;
    this.shown = null;
    this.runs = 0;
  }

  /** Shows a model signature: {file, keys: [{name, pem, keyid}], roots: [{name, pem}],
   * identities: [{identity, issuer}], sigstoreRoot: {name, text} | null,
   * decision: {model_digest, digest_scheme, model} | null}; null hides it. */
  async show(detail) {
    const run = ++this.runs;
    this.shown = detail;
    if (!detail) {
      this.replaceChildren();
      this.hidden = true;
      return;
    }
    this.hidden = false;
    const { file, keys, roots, identities = [] } = detail;
    this.removeAttribute("data-valid");
    this.replaceChildren(h("p", { class: "dg-muted" }, `Verifying the trainer's signature ${file.name}…`));
    let r;
    try {
      if (!keys.length && !roots.length && !identities.length) throw new Error("add the trusted trainer's public key (a P-256 or P-384 .pem), or for a keyless signature the signer's identity and issuer, to verify it");
      this.bundle = new Uint8Array(await file.arrayBuffer());
      r = await this.client.call("modelSignature", this.request());
    } catch (e) {
      if (run !== this.runs) return;
      this.setAttribute("data-valid", "false");
      this.replaceChildren(h("section", { class: "dg-panel" }, h("h2", {}, "Trainer's model signature"), h("p", { class: "dg-error", "data-testid": "model-error" }, `Cannot verify ${file.name}: ${e.message}`)));
      return;
    }
    if (run !== this.runs) return;
    this.render(r);
  }

  /** What the worker verifies against (the files are added by `checkFiles`). */
  request() {
    const { keys, roots, identities = [], sigstoreRoot = null, decision } = this.shown;
    return {
      bundle: this.bundle,
      trustedPems: keys.map((k) => k.pem),
      rootPems: roots.map((k) => k.pem),
      identities,
      sigstoreRoot: sigstoreRoot && sigstoreRoot.text,
      decision: decision && { model_digest: decision.model_digest, digest_scheme: decision.digest_scheme },
    };
  }

  /** The key file's name for a key id. */
  keyName(id) {
    const k = this.shown.keys.find((key) => key.keyid === id);
    return k ? `key id ${id} (trusted trainer key file ${k.name})` : `key id ${id}`;
  }

  render(r) {
    const { file } = this.shown;
    this.result = r;
    this.setAttribute("data-valid", String(r.valid));
    const s = r.signature;
    const head = h(
      "div",
      { class: `dg-banner ${r.valid ? "dg-approved" : "dg-blocked"}`, "data-testid": "model-banner" },
      h("h2", {}, r.valid ? "Trainer's model signature — valid" : "Trainer's model signature — INVALID"),
      r.failure ? this.failure(r.failure) : h("p", {}, `${file.name} verifies: the trainer signed these files.`),
    );
    const parts = [head];
    if (s) {
      const row = (k, v, testid) => [h("dt", {}, k), h("dd", { "data-testid": testid }, v)];
      const by = s.signed_by;
      const signer =
        by.method === "keyless"
          ? [
              row("signer identity", by.identity, "model-identity"),
              row("issuer", by.issuer, "model-issuer"),
              row("Rekor log index", by.log_index === null ? "—" : String(by.log_index), "model-log-index"),
              row("integrated time", by.integrated_time === null ? "—" : `${new Date(by.integrated_time * 1000).toISOString().replace(".000Z", "Z")} (${by.integrated_time})`, "model-integrated-time"),
              row("signed with", `a keyless Sigstore certificate, verified against ${this.shown.sigstoreRoot ? `the trusted root ${this.shown.sigstoreRoot.name}` : "the bundled public-good trusted root"}`, "model-signed-by"),
            ]
          : [
              row("trainer key", this.keyName(s.key_id), "model-key"),
              row("curve", s.curve, "model-curve"),
              row("signed with", by.method === "certificate" ? `certificate of ${by.subject}, chained to the trusted root ${by.root}` : "a trusted public key", "model-signed-by"),
            ];
      parts.push(
        h(
          "dl",
          { class: "dg-grid" },
          signer,
          row("model", s.model_name, "model-name"),
          row("subject digest", s.subject_digest, "model-digest"),
          row("method", s.method === "shards" ? `shards of ${s.shard_size} bytes` : "files", "model-method"),
          row("files signed", `${s.resources.length} ${s.method === "shards" ? "shards" : "files"}`, "model-count"),
          row("ignored paths", s.ignore_paths.join(", "), "model-ignored"),
          row("statement sha256", s.payload_sha256, "model-payload"),
        ),
      );
    }
    if (r.same_model) parts.push(this.sameModel(r.same_model));
    else if (s) parts.push(h("p", { class: "dg-muted", "data-testid": "model-same", "data-same": "no-decision" }, "Drop the signed decision beside it to check that both name the same model."));
    if (s) {
      parts.push(this.folderPicker(s));
      parts.push(this.resources(s));
    }
    this.replaceChildren(h("section", { class: "dg-panel dg-signed-head" }, ...parts));
  }

  failure(f) {
    return h(
      "p",
      { "data-testid": "model-failure", "data-check": f.check, "data-file": f.file || "" },
      "Failed check ",
      h("code", { "data-testid": "model-check" }, f.check),
      ": ",
      h("span", { "data-testid": "model-detail" }, f.detail),
      f.file ? [" (file ", h("code", { "data-testid": "model-file" }, f.file), ")"] : null,
    );
  }

  sameModel(same) {
    const state = same.same === true ? "true" : same.same === false ? "false" : "unknown";
    const word = same.same === true ? "Yes" : same.same === false ? "No — another model" : "Cannot tell";
    return h(
      "p",
      { class: same.same === false ? "dg-error" : "", "data-testid": "model-same", "data-same": state, "data-by": same.by || "" },
      h("strong", {}, `Same model as the signed decision: ${word}. `),
      same.detail,
    );
  }

  folderPicker(s) {
    const single = s.single_file;
    const input = h("input", single ? { type: "file", class: "dg-file-input", id: "dg-model-file", "data-testid": "model-folder-input", "aria-label": "Choose the model file" } : { type: "file", webkitdirectory: true, multiple: true, class: "dg-file-input", id: "dg-model-folder", "data-testid": "model-folder-input", "aria-label": "Choose the model folder" });
    input.addEventListener("change", () => {
      const files = [...input.files];
      input.value = "";
      this.checkFiles(files, single).catch(() => {});
    });
    this.progress = document.createElement("dg-progress");
    this.progress.addEventListener("dg-cancel", (e) => {
      e.stopPropagation();
      this.client.cancel();
    });
    this.filesResult = h("div", { "data-testid": "model-files-result", "aria-live": "polite" });
    return h(
      "div",
      {},
      input,
      h("label", { class: "dg-button", for: single ? "dg-model-file" : "dg-model-folder" }, single ? "Choose model file…" : "Choose model folder…"),
      h("span", { class: "dg-muted" }, " checks every file against the signature, here in the browser."),
      this.progress,
      this.filesResult,
    );
  }

  async checkFiles(picked, single) {
    // A later show() or another folder chosen meanwhile wins.
    const run = this.runs;
    const pick = (this.picks = (this.picks || 0) + 1);
    const current = () => run === this.runs && pick === this.picks;
    const files = picked.map((file) => ({ path: single ? "." : relativePath(file), file }));
    const total = picked.reduce((n, f) => n + f.size, 0);
    this.filesResult.removeAttribute("data-valid");
    this.filesResult.replaceChildren(h("p", { class: "dg-muted" }, `Hashing ${files.length} files (${bytes(total)})…`));
    this.progress.start("Hashing the model's files");
    let r;
    try {
      r = await this.client.call(
        "modelFiles",
        { ...this.request(), files },
        (p) => this.progress.update(p),
      );
    } catch (e) {
      if (!current()) return;
      this.progress.done();
      this.filesResult.setAttribute("data-valid", "false");
      this.filesResult.replaceChildren(h("p", { class: "dg-error", "data-testid": "model-files-error" }, e.cancelled ? "Cancelled." : `Cannot check the files: ${e.message}`));
      return;
    }
    if (!current()) return;
    this.progress.done();
    this.filesResult.setAttribute("data-valid", String(r.valid));
    const f = r.files;
    const shown = [
      r.valid
        ? h("p", { class: "dg-banner dg-approved", "data-testid": "model-files-summary" }, `All ${f.checked} files match the signature (${f.ignored} ignored).`)
        : h("div", { class: "dg-banner dg-blocked", "data-testid": "model-files-summary" }, h("p", {}, h("strong", {}, "The files do not match the signature.")), this.failure(r.failure)),
      // What the files tell beyond the digests (a decision signed with the original directory digest).
      r.valid && r.same_model && r.same_model.by === "files" ? this.sameModel(r.same_model) : null,
    ];
    this.filesResult.replaceChildren(...shown.filter(Boolean));
  }

  resources(s) {
    const shown = s.resources.slice(0, SHOWN_RESOURCES);
    const rows = shown.map((res) => h("tr", { "data-testid": "model-resource", "data-path": res.path }, h("td", { class: "dg-mono" }, res.name), h("td", { class: "dg-mono" }, res.digest)));
    return h(
      "details",
      { open: s.resources.length <= 50 },
      h("summary", {}, `The signed ${s.method === "shards" ? "shards" : "files"} and their sha256`),
      h("table", { class: "dg-table", "data-testid": "model-resources" }, h("thead", {}, h("tr", {}, h("th", {}, s.method === "shards" ? "file:start:end" : "file"), h("th", {}, "sha256"))), h("tbody", {}, rows)),
      s.resources.length > shown.length ? h("p", { class: "dg-muted" }, `… and ${s.resources.length - shown.length} more.`) : null,
    );
  }
}
