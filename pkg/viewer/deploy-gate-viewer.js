// <deploy-gate-viewer>: the whole gate viewer as one custom element. Import this module and put
// the element on a page; it loads its styles, starts the worker and runs everything locally.
// Attribute scan-workers="N": how many workers scan a large log (default: cores − 1).
// Attribute webcrypto-hash-max="BYTES": the largest audit file hashed with WebCrypto, whole in
// memory (default 0, WEBCRYPTO_HASH_MAX_BYTES in worker.js: always the streaming wasm hash).
// Attribute hash-start="drop|scanned|ranges|decision": on 2 cores, when the hash starts (default ranges).
// Attribute trainer-identities='[{"identity": …, "issuer": …}]': the keyless (Sigstore) signers a
// trainer's model.sig may name (exact; any one pair is enough), beside those entered in the page.
// Attribute sigstore-root="URL": the Sigstore trusted root (trusted_root.json or ClientTrustConfig)
// for keyless signatures, fetched once (default: the public-good root bundled with the core).
// Both are read when the element is connected.
// Attribute timings: records a timeline of each audit run (the workers' steps, the decision on
// screen, the sha256 in) as JSON [[what, epoch ms], …] in the element's data-timings.
// A signed decision (decision.dsse.json and the trusted public keys), dropped on the file drop or
// on the Verify panel, is verified and its evidence shown above the live evaluation, where a
// second reviewer can co-sign it; the panel emits `dg-signed-decision` each time it verifies.
// A trainer's model.sig (OpenSSF Model Signing) dropped with the trainer's keys is shown below it
// (`dg-model-signature`): valid or the failed check, the signed files, the same model or not, and
// a model folder checked in the browser.
// Two reports (or two signed decisions with their keys) dropped open the Compare view above the
// evaluation (`deploy-gate diff` in the page); `compare()` does the same from code, `diffJson()`
// gives the diff on screen as the CLI writes it, and `dg-diff` ({diff}) fires after each one.
// The reviewer marks cases in the cases' table (kept in the browser per report, exported and
// imported as a review file, signed with the decision: docs/review.md); the keys j/k, Enter,
// 1/2/3, n, / and ? work while the focus is in the element. `reviewFile()` gives the marks as
// the review file; `dg-review` ({marks}) fires when they change.
// Attribute owns-page: the element is the page (the deploy-gate page sets it): the keys also
// work with the focus on the page's body, and the cases' view (filter, search, sort, page, open
// case) lives in the URL fragment with the report's digest, so a reload or a copied link
// reopens it once the same files are dropped. Without it the element leaves the URL alone.
import { register } from "./components/index.js";
import { GateClient } from "./client.js";
import { h, download } from "./dom.js";
import { styleUrl } from "./assets.js";
import { ReviewMarks } from "./review-marks.js";
import { readLink, writeLink } from "./view-link.js";

register();

const SINGLE_ROLES = ["old_verdicts", "new_verdicts", "old_trajectories", "new_trajectories"];
/** Cases per message from the worker (about 20 ms of copying each). */
const CASE_SLICE = 5000;
/** Where the example comes from: null until a page imports example.js (the example is opt-in, so
 * a portal's build carries its data only when it asks for it). */
let exampleLoader = null;

/** Links the viewer's stylesheet unless the page has it already (linked, bundled or inline: the
 * element then has the viewer's colour variables). */
function ensureStyles(element) {
  if (getComputedStyle(element).getPropertyValue("--dg-bg").trim()) return;
  const href = styleUrl();
  if (!href || [...document.querySelectorAll('link[rel="stylesheet"]')].some((l) => l.href === href)) return;
  document.head.append(h("link", { rel: "stylesheet", href }));
}

export class DeployGateViewer extends HTMLElement {
  /** Gives every viewer, on the page now or later, a "Load example" button that loads the files
   * `loader()` resolves to ([{file, role}]). Called by example.js. */
  static provideExample(loader) {
    exampleLoader = loader;
    for (const viewer of document.querySelectorAll("deploy-gate-viewer")) if (viewer.drop) viewer.drop.exampleAvailable = true;
  }

  connectedCallback() {
    if (this.client) return;
    ensureStyles(this);
    this.client = new GateClient();
    this.client.onNotice = (msg) => {
      if (msg.type !== "digests") return;
      if (msg.error) this.fail(new Error(`Cannot compute the audit log's sha256: ${msg.error}`));
      else this.chain = this.chain.then(() => this.refreshDigests()).catch((e) => this.fail(e));
    };
    this.loaded = { audit: [], old_verdicts: null, new_verdicts: null, old_trajectories: null, new_trajectories: null };
    this.files = [];
    this.generation = 0;
    this.chain = Promise.resolve();

    this.drop = document.createElement("dg-file-drop");
    this.drop.sniffer = (file) => this.client.call("sniff", { file });
    this.drop.exampleAvailable = Boolean(exampleLoader);
    this.policyForm = document.createElement("dg-policy-form");
    this.progress = document.createElement("dg-progress");
    this.results = document.createElement("dg-results");
    this.signPanel = document.createElement("dg-sign-panel");
    this.signPanel.client = this.client;
    this.signPanel.className = "dg-panel";
    this.signPanel.hidden = true;
    this.review = new ReviewMarks();
    // The marks are listed only when a listener reads them (a note fires this per keystroke).
    const review = this.review;
    this.review.addEventListener("change", () =>
      this.dispatchEvent(
        new CustomEvent("dg-review", {
          bubbles: true,
          detail: {
            get marks() {
              return review.list();
            },
          },
        }),
      ),
    );
    window.addEventListener("pagehide", () => this.review.flush());
    this.linkNote = h("p", { class: "dg-muted", "data-testid": "link-note", role: "status", hidden: true });
    /** A link's view (the URL fragment's), applied once the report it names is on screen. */
    this.link = this.hasAttribute("owns-page") ? readLink(location.hash) : null;
    this.verifyPanel = document.createElement("dg-verify-panel");
    this.verifyPanel.client = this.client;
    try {
      this.keylessTrust();
    } catch (e) {
      queueMicrotask(() => this.fail(e));
    }
    this.signedView = document.createElement("dg-signed-decision");
    this.signedView.client = this.client;
    this.modelView = document.createElement("dg-model-signature");
    this.modelView.client = this.client;
    this.compareView = document.createElement("dg-compare");
    this.compareView.client = this.client;
    this.verifyDetails = h("details", { class: "dg-panel", "data-testid": "verify-panel" }, h("summary", {}, "Verify a signed decision"), this.verifyPanel);
    this.errorBox = h("div", { class: "dg-error", role: "alert", "data-testid": "error", hidden: true });
    this.status = h("p", { class: "dg-muted", "data-testid": "status", "aria-live": "polite" }, "Add files to start.");
    // The policy file dropped with the other files, when one is in force; or why it is refused.
    this.policyNote = h("p", { class: "dg-muted", "data-testid": "policy-in-force", hidden: true });
    this.policyBlock = null;
    this.append(
      h(
        "div",
        { class: "dg-layout" },
        h(
          "aside",
          { class: "dg-side" },
          this.drop,
          h("details", { open: true, class: "dg-panel" }, h("summary", {}, "Policy"), this.policyForm),
          this.verifyDetails,
        ),
        h("div", { class: "dg-main" }, this.compareView, this.signedView, this.modelView, this.progress, this.errorBox, this.policyNote, this.status, this.linkNote, this.results, this.signPanel),
      ),
    );
    this.addEventListener("dg-files", (e) => {
      this.mark("files", true);
      this.files = e.detail.files;
      this.schedule(() => this.sync());
    });
    this.addEventListener("dg-policy", (e) => this.schedule(() => this.applyPolicy(e.detail)));
    // A policy file among the dropped files is the policy (scheduled before the files' own work).
    this.addEventListener("dg-policy-file", (e) => this.schedule(() => this.usePolicyFile(e.detail.file)));
    this.addEventListener("dg-cancel", () => this.client.cancel());
    this.addEventListener("dg-example", () => this.loadExample());
    this.addEventListener("dg-export", (e) => this.export(e.detail.kind, e.target).catch((err) => this.fail(err)));
    this.addEventListener("dg-report-file", (e) => this.schedule(() => this.openReport(e.detail.file)));
    this.addEventListener("dg-review-export", () => this.exportReview().catch((err) => this.results.reviewSaid(`Cannot export the review: ${err.message}`, true)));
    this.addEventListener("dg-review-import", (e) => this.importReview(e.detail.file).catch((err) => this.results.reviewSaid(`Cannot import ${e.detail.file.name}: ${err.message}`, true)));
    this.addEventListener("dg-case-view", (e) => this.viewChanged(e.detail));
    // The reviewer's keys: in the element, and with owns-page anywhere on the page but a field.
    this.onKey = (e) => {
      if (e.defaultPrevented || e.target.closest?.("input, textarea, select, [contenteditable]")) return;
      if (e.target !== document.body && !this.contains(e.target)) return;
      if ((e.key === "Enter" || e.key === " ") && e.target.closest?.("button, a, summary, [role=button]")) return;
      const table = this.results.caseTable;
      const near = e.target === document.body || this.results.contains(e.target);
      if (table && table.isConnected && table.handleKey(e, near)) e.preventDefault();
    };
    (this.hasAttribute("owns-page") ? document : this).addEventListener("keydown", this.onKey);
    if (this.hasAttribute("owns-page")) {
      window.addEventListener("hashchange", () => {
        if (location.hash === this.wroteHash) return;
        this.link = readLink(location.hash);
        this.applyLink();
      });
    }
    // Keys and envelopes dropped with the evaluation's files go to the Verify panel.
    this.addEventListener("dg-signed-files", (e) => {
      this.verifyDetails.open = true;
      this.verifyPanel.add(e.detail.files).catch((err) => this.fail(err));
    });
    this.addEventListener("dg-signed-decision", (e) => this.signedView.show(e.detail));
    this.addEventListener("dg-model-signature", (e) => this.modelView.show(e.detail));
    // Evaluations to compare: with the keys dropped beside them and the Verify panel's.
    this.addEventListener("dg-compare-files", (e) => {
      this.compareFiles(e.detail.files, e.detail.keys).catch((err) => this.compareView.failed(err));
    });
    this.schedule(async () => {
      // The form's defaults come from the core, which loads while the page renders.
      await this.policyForm.ready;
      let initial;
      try {
        initial = this.policyForm.read();
      } catch {
        initial = undefined;
      }
      this.policyForm.last = JSON.stringify({ policy: initial });
      await this.client.call("init", { policy: initial });
    });
  }

  /** Gives the Verify panel the keyless trust of the attributes `trainer-identities` (JSON, an
   * array of {identity, issuer}) and `sigstore-root` (a URL, relative to the page). */
  keylessTrust() {
    const raw = this.getAttribute("trainer-identities");
    if (raw !== null && raw.trim()) {
      let pairs;
      try {
        pairs = JSON.parse(raw);
      } catch (e) {
        throw new Error(`trainer-identities: not JSON (${e.message})`);
      }
      const bad = !Array.isArray(pairs) || pairs.some((p) => !p || typeof p.identity !== "string" || typeof p.issuer !== "string" || !p.identity || !p.issuer);
      if (bad) throw new Error('trainer-identities must be a JSON array of {"identity": "…", "issuer": "…"}');
      this.verifyPanel.configureKeyless({ identities: pairs });
    }
    const url = this.getAttribute("sigstore-root");
    if (url !== null && url.trim()) {
      this.verifyPanel.trustReady = fetch(new URL(url.trim(), document.baseURI))
        .then((r) => {
          if (!r.ok) throw new Error(`HTTP ${r.status}`);
          return r.text();
        })
        .then(
          (text) => this.verifyPanel.configureKeyless({ sigstoreRoot: { name: url.trim(), text } }),
          (e) => {
            throw new Error(`sigstore-root ${url.trim()}: cannot load it (${e.message})`);
          },
        );
      // Shown when a verification needs it; not an unhandled rejection meanwhile.
      this.verifyPanel.trustReady.catch(() => {});
    }
  }

  /** Runs tasks one after another; each change invalidates the decision on screen. After each,
   * the worker may start hashing the audit log (it waits for the decision on 2 cores). */
  schedule(task) {
    this.generation++;
    this.report = null;
    this.reportDigest = null;
    this.review.unbind();
    this.linkNote.hidden = true;
    this.openedJson = null;
    this.results.clear();
    this.signPanel.hidden = true;
    this.chain = this.chain
      .then(task)
      .catch((e) => this.fail(e))
      .then(() => this.client.call("digests"))
      .catch(() => {});
    return this.chain;
  }

  fail(e) {
    this.progress.done();
    if (e && e.cancelled) {
      this.status.textContent = "Cancelled. Add or re-select files to start again.";
      return;
    }
    this.errorBox.textContent = e && e.message ? e.message : String(e);
    this.errorBox.hidden = false;
  }

  async sync() {
    this.errorBox.hidden = true;
    const want = (role) => this.files.filter((f) => f.role === role).map((f) => f.file);
    const audit = want("audit");
    const same = audit.length === this.loaded.audit.length && audit.every((f, i) => f === this.loaded.audit[i]);
    // The verdict and trajectory files still to read go with a new audit log: the worker reads
    // them while its scan workers read the log.
    const pending = SINGLE_ROLES.map((role) => ({ role, file: want(role)[0] || null })).filter(({ role, file }) => file && file !== this.loaded[role]);
    if (!same) {
      this.loaded.audit = [];
      if (audit.length) {
        this.progress.start(`Reading ${audit.length === 1 ? audit[0].name : `${audit.length} audit files`}`);
        const workers = Number(this.getAttribute("scan-workers")) || 0;
        const timings = this.hasAttribute("timings");
        const max = this.getAttribute("webcrypto-hash-max");
        const webcryptoHashMax = max !== null && max.trim() !== "" && Number.isFinite(Number(max)) ? Number(max) : undefined;
        const hashStart = this.getAttribute("hash-start") || undefined;
        for (const { role } of pending) this.loaded[role] = null;
        const result = await this.client.call("audit", { files: audit, workers, timings, webcryptoHashMax, hashStart, alongside: pending }, (p) => this.progress.update(p));
        this.progress.done();
        this.loaded.audit = audit;
        let failed = null;
        for (const { role, file } of pending) {
          if (result.alongside[role] === null) this.loaded[role] = file;
          else failed = failed || result.alongside[role];
        }
        if (failed !== null) throw new Error(failed);
      } else {
        await this.client.call("remove", { role: "audit" });
        this.loaded.audit = audit;
      }
    }
    for (const role of SINGLE_ROLES) {
      const file = want(role)[0] || null;
      if (file === this.loaded[role]) continue;
      this.loaded[role] = null;
      if (file) await this.client.call(role.endsWith("verdicts") ? "verdicts" : "trajectories", { role, file });
      else await this.client.call("remove", { role });
      this.loaded[role] = file;
    }
    await this.evaluate();
  }

  /** Uses a dropped policy file (null: it was removed). A file the core refuses blocks every
   * evaluation, with the core's reason naming the field, until it is fixed or removed: the page
   * never decides silently under the defaults when a file was meant as the policy. */
  async usePolicyFile(file) {
    await this.policyForm.ready;
    if (!file) {
      this.policyBlock = null;
      this.showPolicyNote();
      await this.applyPolicy({ policy: this.policyForm.clearFile() });
      return;
    }
    const checked = await this.policyForm.useFile(file);
    if (!checked.ok) {
      this.policyBlock = `${checked.message}. No decision is taken under the default policy while it is among the files: fix it and drop it again, or remove it.`;
      this.showPolicyNote();
      return;
    }
    this.policyBlock = null;
    this.showPolicyNote();
    await this.applyPolicy({ policy: checked.policy });
  }

  /** The policy in force when a dropped file gives it, or why the dropped file is refused. */
  showPolicyNote() {
    const f = this.policyForm.inForce;
    if (this.policyBlock) {
      this.policyNote.className = "dg-error";
      this.policyNote.setAttribute("role", "alert");
      this.policyNote.dataset.state = "refused";
      this.policyNote.textContent = this.policyBlock;
    } else if (f) {
      this.policyNote.className = "dg-muted";
      this.policyNote.removeAttribute("role");
      this.policyNote.dataset.state = f.edited ? "edited" : "in-force";
      this.policyNote.replaceChildren(
        ...(f.edited
          ? ["Policy: the form's, edited from the file ", h("code", {}, f.name), "."]
          : ["Policy in force: ", h("code", { "data-testid": "policy-in-force-name" }, f.name), ", sha256 ", h("code", { "data-testid": "policy-in-force-digest" }, f.digest), "."]),
      );
    }
    this.policyNote.hidden = !this.policyBlock && !f;
  }

  async applyPolicy(detail) {
    this.showPolicyNote();
    if (detail.error) {
      this.status.textContent = "Fix the policy to see a decision.";
      return;
    }
    this.errorBox.hidden = true;
    const change = await this.client.call("policy", { policy: detail.policy });
    if (this.loaded.audit.length && change !== "ready") {
      this.progress.start(change === "rescan" ? "Reading the audit log again (pass verdicts changed)" : "Rebuilding the test set");
      await this.client.call(change, {}, (p) => this.progress.update(p));
      this.progress.done();
    }
    await this.evaluate();
  }

  async evaluate() {
    const generation = this.generation;
    if (this.policyBlock) {
      this.status.textContent = "No decision: the dropped policy file is refused (see above).";
      return;
    }
    const missing = [];
    if (!this.loaded.audit.length) missing.push("an audit log");
    if (!this.loaded.old_verdicts) missing.push("the old model's verdicts");
    if (!this.loaded.new_verdicts) missing.push("the new model's verdicts");
    if (missing.length) {
      this.status.textContent = `Still needed: ${missing.join(", ")}.`;
      return;
    }
    const result = await this.client.call("evaluate");
    if (!result || generation !== this.generation) return;
    // The cases come a slice per message: copying 200,000 at once blocks the page for a second.
    const { report } = result;
    const testCases = [];
    for (let from = 0; from < result.numCases; from += CASE_SLICE) {
      const slice = await this.client.call("caseSlice", { evaluation: result.evaluation, from, to: from + CASE_SLICE });
      if (generation !== this.generation) return;
      for (const c of slice.outcomes) report.cases.push(c);
      for (const c of slice.testCases) testCases.push(c);
    }
    this.openedJson = null;
    this.report = report;
    this.status.textContent = "";
    // A case's answers are read from the verdict files when its row opens (the worker keeps
    // their offsets, never the answers).
    const answers = (index) => this.client.call("answers", { evaluation: result.evaluation, index });
    const trajectory = (index) => this.client.call("trajectory", { evaluation: result.evaluation, index });
    this.results.show(report, testCases, { answers, trajectory, review: this.review, costs: result.costs });
    this.signPanel.setReview(this.review);
    this.signPanel.hidden = false;
    this.showDigestState();
    this.dispatchEvent(new CustomEvent("dg-decision", { bubbles: true, detail: { report: result.report } }));
    await this.mark("decision");
  }

  /** With the `timings` attribute: notes a step on this thread (`reset` starts a new timeline)
   * and writes the whole timeline, the worker's steps included, to data-timings. */
  async mark(what, reset = false) {
    if (!this.hasAttribute("timings")) return;
    if (reset || !this.timeline) this.timeline = [];
    this.timeline.push([what, performance.timeOrigin + performance.now()]);
    if (reset) return;
    const worker = (await this.client.call("timings")) || [];
    this.dataset.timings = JSON.stringify([...worker, ...this.timeline].sort((a, b) => a[1] - b[1]));
  }

  /** Exports and signing wait while an audit file's sha256 is still being computed. */
  showDigestState() {
    const pending = this.report.inputs.some((f) => !f.sha256);
    this.results.setDigestPending(pending);
    this.signPanel.setDigestPending(pending);
    if (!pending) this.chain = this.chain.then(() => this.bindReview()).catch((e) => this.fail(e));
  }

  /** Every input's sha256 is in: the marks kept for this report come back, and a link's view
   * opens. */
  async bindReview() {
    if (!this.report || this.openedJson) return;
    const generation = this.generation;
    const digest = await this.client.call("reportDigest");
    if (generation !== this.generation || !digest) return;
    this.reportDigest = digest;
    this.review.bind(digest);
    this.applyLink();
    this.viewChanged(this.results.caseTable ? this.results.caseTable.view() : null);
  }

  /** Opens the view a link names when its report is the one on screen; says so when it is not. */
  applyLink() {
    const link = this.link;
    const table = this.results.caseTable;
    if (!link || !this.reportDigest || !table || !table.isConnected) return;
    if (link.report !== this.reportDigest) {
      // The link stays (in the address bar too) until the files it names are dropped.
      const other = link.inputs.filter(([role, sha]) => !this.report.inputs.some((f) => f.role === role && (f.sha256 || "").startsWith(sha))).map(([role, sha]) => `${role} sha256:${sha}…`);
      this.linkNote.textContent = `This link was made for other files${other.length ? ` (${other.join(", ")})` : " (or another policy)"}: its view is not opened. Drop the files it names to see it.`;
      this.linkNote.hidden = false;
      return;
    }
    this.link = null;
    this.linkNote.hidden = true;
    table.restore(link.view);
  }

  /** The cases' view changed: with owns-page, the URL fragment follows (never sent anywhere). */
  viewChanged(view) {
    if (!this.hasAttribute("owns-page") || !view || !this.reportDigest || this.link) return;
    this.wroteHash = writeLink({ report: this.reportDigest, inputs: this.report.inputs.map((f) => [f.role, f.sha256]), view });
  }

  /** The marks as the review file (`deploy-gate/review/v1`), or null when there are none. */
  async reviewFile() {
    return this.review.size ? this.client.call("reviewFile", { marks: this.review.list() }) : null;
  }

  async exportReview() {
    const text = await this.reviewFile();
    if (text === null) return;
    download("review.jsonl", text, "application/x-ndjson");
    this.results.reviewSaid(`review.jsonl downloaded (${this.review.size} mark(s)).`);
  }

  /** Replaces the marks with a review file's (its marks of cases this report does not hold are
   * named, not kept). */
  async importReview(file) {
    const digest = this.review.digest;
    const read = await this.client.call("readReview", { file });
    if (!digest || this.review.digest !== digest) throw new Error("the report changed while the file was read: import it again");
    this.review.replace(read.marks);
    const elsewhere = read.elsewhere.length ? ` ${read.elsewhere.length} mark(s) name cases this report does not hold (first: ${read.elsewhere.slice(0, 3).map((m) => `line ${m.line}, ${m.pipeline_id}`).join("; ")}); they are not kept.` : "";
    this.results.reviewSaid(`${file.name}: ${read.marks.length} mark(s) imported.${elsewhere}`, Boolean(elsewhere));
  }

  /** The digests are in: take the report again (same decision, now with every sha256). */
  async refreshDigests() {
    if (!this.report || !this.report.inputs.some((f) => !f.sha256)) return;
    const generation = this.generation;
    const result = await this.client.call("evaluate", { withCases: false });
    if (!result || generation !== this.generation) return;
    // Only the inputs' digests changed: the cases are those on screen.
    result.report.cases = this.report.cases;
    this.report = result.report;
    this.showDigestState();
    await this.mark("digests shown");
  }

  async loadExample() {
    try {
      if (!exampleLoader) throw new Error("no example on this page: a page offers one by importing deploy-gate/viewer/example");
      this.drop.set(await exampleLoader());
    } catch (e) {
      this.fail(e);
    }
  }

  /** The report on screen as JSON text, byte for byte the CLI's (null before a decision). The
   * worker holds a live evaluation's (a 200,000-case report is about 90 MB); a reopened HTML
   * report's is kept here. */
  async reportJson() {
    if (!this.report) return null;
    return this.openedJson ?? this.client.call("reportJson");
  }

  /** Opens the Compare view on `files` (reports or signed decisions; two fill both sides, in
   * order), with trusted public key files `keyFiles` and the Verify panel's keys. */
  async compareFiles(files, keyFiles = []) {
    const keys = [];
    for (const file of keyFiles) keys.push({ name: file.name, pem: await file.text() });
    await this.compareView.add(files, [...keys, ...(this.verifyPanel.keys || [])]);
    this.compareView.scrollIntoView({ block: "start" });
  }

  /** Compares two evaluations: `before` and `after` are reports or signed decisions (Blob, File
   * or JSON text); `trustedKeys` the public keys (PEM) a signed one must verify against.
   * Resolves with the diff (the `dg-diff` event's), or rejects with the reason. */
  async compare(before, after, { trustedKeys = [], reviews = null } = {}) {
    const file = (x, name) => (x instanceof Blob ? x : new File([x], name, { type: "application/json" }));
    // A review file is named in what the core says of it: a Blob without a name gets one.
    const named = (x, name) => (x instanceof File ? x : new File([x], name, { type: "application/jsonl" }));
    const reviewFiles = reviews ? [named(reviews[0], "before-review.jsonl"), named(reviews[1], "after-review.jsonl")] : null;
    const done = new Promise((resolve, reject) => {
      const ok = (e) => {
        this.removeEventListener("dg-diff", ok);
        resolve(e.detail.diff);
      };
      this.addEventListener("dg-diff", ok);
      this.compareView.onFailure = (e) => {
        this.removeEventListener("dg-diff", ok);
        reject(e);
      };
    });
    await this.compareView.add([file(before, "before.json"), file(after, "after.json")], trustedKeys.map((pem, i) => ({ name: `key ${i + 1}`, pem })), reviewFiles);
    try {
      return await done;
    } finally {
      this.compareView.onFailure = null;
    }
  }

  /** The diff on screen as `deploy-gate diff --out` writes it (null when there is none). */
  async diffJson() {
    const d = this.compareView.diff;
    return d ? this.client.call("diffExport", { diff: d.id, kind: "json" }) : null;
  }

  /** Shows the report embedded in a standalone HTML report (`deploy-gate evaluate --html`). */
  async openReport(file) {
    this.errorBox.hidden = true;
    const json = embeddedReport(await file.text());
    if (json === null) throw new Error(`${file.name} is not a deploy-gate HTML report: it has no embedded report`);
    let report;
    try {
      report = JSON.parse(json);
    } catch (e) {
      throw new Error(`${file.name}: the embedded report is not JSON (${e.message})`);
    }
    this.results.show(report, [], {
      kind: "file",
      source: `From the HTML report ${file.name}: a file, not verified (to trust a decision, verify its signed envelope)`,
      exports: ["report", "html", "markdown"],
    });
    this.report = report;
    this.openedJson = json;
    this.results.setDigestPending(false);
    this.status.textContent = `The report saved in ${file.name} (the test cases' inputs are not in it).`;
  }

  /** An export of the report on screen, or of the signed decision's when `from` is in its view. */
  async export(kind, from) {
    const signed = from && this.signedView.contains(from) ? this.signedView.source() : null;
    if (signed) return this.exportReport(kind, signed);
    if (!this.report) return;
    if (kind === "testset") download("test_set.jsonl", await this.client.call("testSet"), "application/x-ndjson");
    else await this.exportReport(kind, { report: this.report, json: null, results: this.results });
  }

  /** `json` is the report's JSON text, or null for the report on screen (see `reportJson`). */
  async exportReport(kind, { json, results }) {
    // The report's JSON text when it is here (a signed or reopened report); the live report's
    // stays in the worker, which renders it without sending it over.
    const given = json ?? this.openedJson ?? null;
    if (kind === "report") {
      const text = given ?? (await this.reportJson());
      if (text !== null) download("report.json", text, "application/json");
    } else if (kind === "html") download("report.html", await this.client.call("reportHtml", { json: given, marks: given ? undefined : this.review.list() }), "text/html");
    else if (kind === "markdown") {
      const md = await this.client.call("markdown", { json: given, marks: given ? undefined : this.review.list() });
      let copied = false;
      try {
        await navigator.clipboard.writeText(md);
        copied = true;
      } catch {
        copied = false;
      }
      const box = h("textarea", { readonly: true, rows: 12, class: "dg-markdown", "data-testid": "markdown", "aria-label": "Markdown summary" });
      box.value = md;
      const old = results.querySelector(".dg-markdown-panel");
      if (old) old.remove();
      results.querySelector(".dg-exports").after(h("div", { class: "dg-panel dg-markdown-panel" }, h("p", { class: "dg-muted" }, copied ? "Copied to the clipboard." : "Select and copy:"), box));
      if (!copied) box.select();
    }
  }
}

/** The report JSON embedded in a standalone HTML report, as the CLI wrote it (the `\u003c`
 * escapes that keep it inside its script element undone, escaped backslashes left alone);
 * null when there is none. The text is cut out, not parsed as HTML: the element holds no `<`,
 * so it ends at the first `</script>`. */
export function embeddedReport(html) {
  const open = '<script type="application/json" id="deploy-gate-report">';
  const start = html.indexOf(open);
  const end = start < 0 ? -1 : html.indexOf("</script>", start + open.length);
  if (end < 0) return null;
  return html.slice(start + open.length, end).replace(/\\\\|\\u003c/g, (m) => (m === "\\u003c" ? "<" : m));
}

if (!customElements.get("deploy-gate-viewer")) customElements.define("deploy-gate-viewer", DeployGateViewer);
