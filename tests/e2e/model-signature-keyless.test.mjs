// A keyless (Sigstore) model.sig in the page: the reference's own bundle (model_signing sign,
// public-good Fulcio and Rekor; tests/fixtures/oms-keyless) verifies offline with its signer's
// identity and issuer, entered in the Verify panel or given in the element's attributes, and
// shows the identity, the issuer, the Rekor log index and the integrated time; its folder checks
// in the browser. An identity one character off is refused as keyless_identity, a trusted root
// that does not hold the Fulcio CA as certificate_chain. Prints the time to verify.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import fs from "node:fs";
import path from "node:path";
import { start, openPage, viewerReady, ROOT } from "./harness.mjs";

const KEYLESS = path.join(ROOT, "tests/fixtures/oms-keyless");
const MODEL = path.join(KEYLESS, "v1.1.0-sigstore");
const SIG = path.join(MODEL, "model.sig");
const IDENTITY = "stefanb@us.ibm.com";
const ISSUER = "https://sigstore.verify.ibm.com/oauth2";
const BUNDLE = JSON.parse(fs.readFileSync(SIG, "utf8"));
const ENTRY = BUNDLE.verificationMaterial.tlogEntries[0];

let env;
before(async () => {
  env = await start();
});
after(async () => env && (await env.close()));

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
 * origin, as a portal would). */
async function portal(attributes) {
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
  await page.goto(`${env.base}/www/keyless-portal.html`);
  await viewerReady(page);
  return page;
}

test("a keyless model.sig verifies with its signer's identity entered in the page: identity, issuer, log index, integrated time; its folder checks", async () => {
  const page = await openPage(env);
  await addSigner(page, IDENTITY, ISSUER);
  assert.match(await text(page, "verify-trainer-identity"), new RegExp(`${IDENTITY} \\(issuer ${ISSUER.replace(/[./]/g, "\\$&")}\\)`));
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

test("a portal's attributes give the identities and the trusted root; a root without the Fulcio CA is refused as certificate_chain", async () => {
  const identities = (identity) => JSON.stringify([{ identity: "someone@example.com", issuer: ISSUER }, { identity, issuer: ISSUER }]);
  const page = await portal({ "trainer-identities": identities(IDENTITY), "sigstore-root": "/tests/fixtures/oms-keyless/trusted_root.json" });
  assert.equal(await page.locator('[data-testid="verify-trainer-identity"]').count(), 2);
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

  // Another instance's root (a conformance case's), given as the attribute: the chain fails.
  const other = await portal({ "trainer-identities": identities(IDENTITY), "sigstore-root": "/tests/fixtures/sigstore-conformance/bundle-verify/rekor2-dsse-happy-path/trusted_root.json" });
  const chain = await drop(other);
  assert.equal(await chain.view.getAttribute("data-valid"), "false");
  assert.equal(await text(chain.view, "model-check"), "certificate_chain");
  await other.context().close();
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
