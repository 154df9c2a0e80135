// A keyless (Sigstore) model.sig in the page: the reference's own bundle (model_signing sign,
// public-good Fulcio and Rekor; tests/fixtures/oms-keyless) verifies offline with its signer's
// identity and issuer, entered in the Verify panel or given in the element's attributes, and
// shows the identity, the issuer, the Rekor log index and the integrated time; its folder checks
// in the browser. An identity one character off is refused as keyless_identity, a trusted root
// that does not hold the Fulcio CA (dropped, or named by the attribute) as certificate_chain; a
// dropped root replaces the attribute's. Prints the time from the drop to the result on screen.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import fs from "node:fs";
import path from "node:path";
import { start, openPage, viewerReady, ROOT, ARTIFACTS } from "./harness.mjs";

const KEYLESS = path.join(ROOT, "tests/fixtures/oms-keyless");
const MODEL = path.join(KEYLESS, "v1.1.0-sigstore");
const SIG = path.join(MODEL, "model.sig");
const IDENTITY = "stefanb@us.ibm.com";
const ISSUER = "https://sigstore.verify.ibm.com/oauth2";
const BUNDLE = JSON.parse(fs.readFileSync(SIG, "utf8"));
const ENTRY = BUNDLE.verificationMaterial.tlogEntries[0];
/** The public-good root (the one bundled with the core) with another instance's Fulcio CA (a
 * conformance case's, sigstage) in place of its own: the Rekor and CT log keys are the right
 * ones, the CA of the bundle's certificate is missing. */
const ROOT_WITHOUT_CA = JSON.stringify({
  ...JSON.parse(fs.readFileSync(path.join(KEYLESS, "trusted_root.json"), "utf8")),
  certificateAuthorities: JSON.parse(fs.readFileSync(path.join(ROOT, "tests/fixtures/sigstore-conformance/bundle-verify/rekor2-dsse-happy-path/trusted_root.json"), "utf8")).certificateAuthorities,
});

const DIR = path.join(ARTIFACTS, `keyless-${process.pid}`);
const WITHOUT_CA = path.join(DIR, "root-without-ca.json");

let env;
before(async () => {
  fs.mkdirSync(DIR, { recursive: true });
  fs.writeFileSync(WITHOUT_CA, ROOT_WITHOUT_CA);
  env = await start();
});
after(async () => {
  if (env) await env.close();
  fs.rmSync(DIR, { recursive: true, force: true });
});

const text = async (scope, id) => (await scope.locator(`[data-testid="${id}"]`).first().innerText()).trim();

/** Enters a keyless signer in the Verify panel. */
async function addSigner(page, identity, issuer) {
  await page.locator('[data-testid="verify-panel"] > summary').click();
  await page.locator('[data-testid="verify-keyless"] > summary').click();
  await page.fill('[name="trainer_identity"]', identity);
  await page.fill('[name="trainer_issuer"]', issuer);
  await page.click('[data-testid="verify-add-identity"]');
}

/** Drops the bundle on the viewer; resolves with the panel once verified and the milliseconds
 * from the drop to the result on screen. */
async function drop(page, files = [SIG]) {
  const t0 = Date.now();
  await page.setInputFiles('[data-testid="file-input"]', files);
  const view = page.locator('[data-testid="model-signature"][data-valid]');
  await view.waitFor({ timeout: 60000 });
  return { view, ms: Date.now() - t0 };
}

/** A portal page holding `<deploy-gate-viewer>` with these attributes (served at the page's
 * origin, as a portal would); `files`: more paths served there, {pathname: body}. */
async function portal(attributes, files = {}) {
  const context = await env.browser.newContext({ viewport: { width: 1300, height: 900 } });
  const page = await context.newPage();
  page.errors = [];
  page.on("pageerror", (e) => page.errors.push(`pageerror: ${e.message}`));
  page.on("console", (m) => m.type() === "error" && page.errors.push(`console: ${m.text()}`));
  const attrs = Object.entries(attributes)
    .map(([k, v]) => ` ${k}="${v.replace(/&/g, "&amp;").replace(/"/g, "&quot;")}"`)
    .join("");
  await context.route("**/www/keyless-portal.html", (route) =>
    route.fulfill({ contentType: "text/html", body: `<!doctype html><meta charset="utf-8"><script type="module" src="deploy-gate-viewer.js"></script><deploy-gate-viewer${attrs}></deploy-gate-viewer>` }),
  );
  for (const [pathname, body] of Object.entries(files)) {
    await context.route(`${env.base}${pathname}`, (route) => route.fulfill({ contentType: "application/json", body }));
  }
  await page.goto(`${env.base}/www/keyless-portal.html`);
  await viewerReady(page);
  return page;
}

test("a keyless model.sig verifies with its signer's identity entered in the page: identity, issuer, log index, integrated time; its folder checks", async () => {
  const page = await openPage(env);
  await addSigner(page, IDENTITY, ISSUER);
  assert.equal(await text(page, "verify-trainer-identity"), `keyless signer: ${IDENTITY} (issuer ${ISSUER})`);
  assert.equal(await page.locator('[name="trainer_identity"]').inputValue(), "", "the fields are cleared once the signer is added");
  const { view, ms } = await drop(page);
  assert.equal(await view.getAttribute("data-valid"), "true", await view.innerText());
  assert.equal(await text(view, "model-identity"), IDENTITY);
  assert.equal(await text(view, "model-issuer"), ISSUER);
  assert.equal(await text(view, "model-log-index"), String(ENTRY.logIndex));
  const iso = new Date(Number(ENTRY.integratedTime) * 1000).toISOString().replace(".000Z", "Z");
  assert.equal(await text(view, "model-integrated-time"), `${iso} (${ENTRY.integratedTime})`);
  assert.match(await text(view, "model-signed-by"), /bundled public-good trusted root/);
  assert.equal(await view.locator('[data-testid="model-key"]').count(), 0, "no key id for a keyless signature");
  assert.equal(await view.locator('[data-testid="model-resource"]').count(), 2);
  // The folder as model-transparency keeps it (ignore-me is an ignored path of the signature).
  await page.setInputFiles('[data-testid="model-folder-input"]', MODEL);
  const result = page.locator('[data-testid="model-files-result"][data-valid]');
  await result.waitFor({ timeout: 60000 });
  assert.equal(await result.getAttribute("data-valid"), "true", await result.innerText());
  assert.match(await text(result, "model-files-summary"), /^All 2 files match the signature/);

  // The time to verify: from the drop to the result on screen, and the core's call alone in the
  // page (the wasm module's verifyModelSignature, the bundled root parsed each call).
  const core = await page.evaluate(
    async ({ sig, identity, issuer }) => {
      const m = await import("/pkg/deploy_gate.js");
      await m.default();
      const bytes = new TextEncoder().encode(sig);
      const options = { trainer_identities: [{ identity, issuer }] };
      const times = [];
      for (let i = 0; i < 5; i++) {
        const t0 = performance.now();
        const r = m.verifyModelSignature(bytes, [], undefined, options);
        times.push(performance.now() - t0);
        if (!r.valid) throw new Error(JSON.stringify(r.failure));
      }
      return times;
    },
    { sig: fs.readFileSync(SIG, "utf8"), identity: IDENTITY, issuer: ISSUER },
  );
  console.log(`keyless verify in headless Chromium: ${ms} ms from the drop to the result on screen; verifyModelSignature alone: ${core.map((t) => t.toFixed(1)).join(", ")} ms`);
  // The Verify panel lists what was given, and nothing else (no "null" for what was not).
  assert.deepEqual(await page.locator('[data-testid="verify-files"] > li').allInnerTexts(), [`trainer's model signature: model.sig`, `keyless signer: ${IDENTITY} (issuer ${ISSUER})`]);
  assert.doesNotMatch(await text(page, "verify-files"), /null/);
  assert.deepEqual(page.errors, []);
  await page.context().close();
});

test("an identity one character off is refused as keyless_identity, and no file list is shown", async () => {
  const page = await openPage(env);
  await addSigner(page, IDENTITY.slice(0, -1), ISSUER);
  const { view } = await drop(page);
  assert.equal(await view.getAttribute("data-valid"), "false");
  assert.equal(await text(view, "model-check"), "keyless_identity");
  assert.match(await text(view, "model-detail"), new RegExp(IDENTITY.replace(/[.]/g, "\\.")));
  assert.equal(await view.locator('[data-testid="model-resource"]').count(), 0);
  assert.equal(await view.locator('[data-testid="model-folder-input"]').count(), 0);
  assert.deepEqual(page.errors, []);
  await page.context().close();
});

test("a trusted root dropped in the page is used: the bundled one's copy verifies, one without the Fulcio CA is refused as certificate_chain", async () => {
  const page = await openPage(env);
  await addSigner(page, IDENTITY, ISSUER);
  const { view } = await drop(page, [SIG, path.join(KEYLESS, "trusted_root.json")]);
  assert.equal(await text(page, "verify-sigstore-root"), "Sigstore trusted root: trusted_root.json");
  assert.equal(await view.getAttribute("data-valid"), "true", await view.innerText());
  assert.equal(await text(view, "model-identity"), IDENTITY);
  assert.match(await text(view, "model-signed-by"), /verified against the trusted root trusted_root\.json$/);
  assert.deepEqual(page.errors, []);
  await page.context().close();

  const other = await openPage(env);
  await addSigner(other, IDENTITY, ISSUER);
  const refused = await drop(other, [SIG, WITHOUT_CA]);
  assert.equal(await text(other, "verify-sigstore-root"), "Sigstore trusted root: root-without-ca.json");
  assert.equal(await refused.view.getAttribute("data-valid"), "false");
  assert.equal(await text(refused.view, "model-check"), "certificate_chain");
  assert.equal(await refused.view.locator('[data-testid="model-identity"]').count(), 0, "no signer shown for a refused signature");
  assert.deepEqual(other.errors, []);
  await other.context().close();
});

test("a portal's attributes give the identities and the trusted root; a root without the Fulcio CA is refused as certificate_chain", async () => {
  const identities = (identity) => JSON.stringify([{ identity: "someone@example.com", issuer: ISSUER }, { identity, issuer: ISSUER }]);
  const page = await portal({ "trainer-identities": identities(IDENTITY), "sigstore-root": "/tests/fixtures/oms-keyless/trusted_root.json" });
  // The Verify panel, opened, lists the attributes' signers and root.
  await page.locator('[data-testid="verify-panel"] > summary').click();
  assert.deepEqual(await page.locator('[data-testid="verify-trainer-identity"]').allInnerTexts(), [`keyless signer: someone@example.com (issuer ${ISSUER})`, `keyless signer: ${IDENTITY} (issuer ${ISSUER})`]);
  await page.locator('[data-testid="verify-sigstore-root"]').waitFor();
  assert.equal(await text(page, "verify-sigstore-root"), "Sigstore trusted root: /tests/fixtures/oms-keyless/trusted_root.json");
  const { view } = await drop(page);
  assert.equal(await view.getAttribute("data-valid"), "true", await view.innerText());
  assert.equal(await text(view, "model-identity"), IDENTITY);
  assert.match(await text(view, "model-signed-by"), /the trusted root \/tests\/fixtures\/oms-keyless\/trusted_root\.json/);
  assert.deepEqual(page.errors, []);
  await page.context().close();

  const off = await portal({ "trainer-identities": identities(IDENTITY.replace("stefanb", "stefanc")) });
  const refused = await drop(off);
  assert.equal(await refused.view.getAttribute("data-valid"), "false");
  assert.equal(await text(refused.view, "model-check"), "keyless_identity");
  await off.context().close();

  // The attribute names a root without the bundle's Fulcio CA: the chain fails.
  const other = await portal({ "trainer-identities": identities(IDENTITY), "sigstore-root": "/www/root-without-ca.json" }, { "/www/root-without-ca.json": ROOT_WITHOUT_CA });
  await other.locator('[data-testid="verify-panel"] > summary').click();
  await other.locator('[data-testid="verify-sigstore-root"]').waitFor();
  assert.equal(await text(other, "verify-sigstore-root"), "Sigstore trusted root: /www/root-without-ca.json");
  const chain = await drop(other);
  assert.equal(await chain.view.getAttribute("data-valid"), "false");
  assert.equal(await text(chain.view, "model-check"), "certificate_chain");
  await other.context().close();

  // A root dropped on the page replaces the attribute's (here the attribute's would verify).
  const dropped = await portal({ "trainer-identities": identities(IDENTITY), "sigstore-root": "/tests/fixtures/oms-keyless/trusted_root.json" });
  await dropped.locator('[data-testid="verify-panel"] > summary').click();
  await dropped.locator('[data-testid="verify-sigstore-root"]').waitFor();
  const replaced = await drop(dropped, [SIG, WITHOUT_CA]);
  assert.equal(await text(dropped, "verify-sigstore-root"), "Sigstore trusted root: root-without-ca.json");
  assert.equal(await text(replaced.view, "model-check"), "certificate_chain");
  await dropped.context().close();
});

test("bad attributes are shown, never verified against another root", async () => {
  const page = await portal({ "trainer-identities": '[{"identity": "a"}]' });
  await page.locator('[data-testid="error"]:not([hidden])').waitFor({ timeout: 30000 });
  assert.match(await text(page, "error"), /trainer-identities must be a JSON array/);
  await page.context().close();

  const missing = await portal({ "trainer-identities": JSON.stringify([{ identity: IDENTITY, issuer: ISSUER }]), "sigstore-root": "/tests/fixtures/oms-keyless/no-such-root.json" });
  await missing.setInputFiles('[data-testid="file-input"]', [SIG]);
  await missing.locator('[data-testid="verify-trust-error"]').waitFor({ timeout: 30000 });
  assert.match(await text(missing, "verify-trust-error"), /sigstore-root \/tests\/fixtures\/oms-keyless\/no-such-root\.json: cannot load it \(HTTP 404\)/);
  assert.equal(await missing.locator('[data-testid="model-signature"][data-valid]').count(), 0);
  await missing.context().close();
});
