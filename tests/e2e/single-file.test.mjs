// The single-file viewer (pkg/deploy-gate-viewer.html, built by scripts/build-single.mjs) opened
// from disk with a file:// URL, no server: the bundled example, every parity fixture (decision
// and exported report equal the CLI's), a 300 MB log streamed through the workers with progress,
// and its Content-Security-Policy refusing any script but its own. No test sees a console error
// or a request other than the file itself and the page's own blob:/data: URLs.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import crypto from "node:crypto";
import fs from "node:fs";
import path from "node:path";
import { pathToFileURL } from "node:url";
import { chromium } from "playwright-core";
import { ROOT, CHROMIUM_ARGS, fixtures, fixtureFiles, fixturePolicy, cliReport, cliTestSet, setPolicy, decision, downloadText, generated, viewerReady, FIXTURES } from "./harness.mjs";

const FILE = path.join(ROOT, "pkg/deploy-gate-viewer.html");
const URL_ = pathToFileURL(FILE).href;
let browser;

before(async () => {
  browser = await chromium.launch({ executablePath: process.env.CHROMIUM || "/usr/bin/chromium", args: CHROMIUM_ARGS });
});
after(async () => browser && (await browser.close()));

/** Opens the single file; records console errors, page errors and every request that is not the
 * file itself or one of its blob:/data: URLs. */
async function open() {
  const context = await browser.newContext({ acceptDownloads: true, viewport: { width: 1300, height: 900 } });
  const page = await context.newPage();
  page.errors = [];
  page.network = [];
  page.on("console", (m) => m.type() === "error" && page.errors.push(`console: ${m.text()}`));
  page.on("pageerror", (e) => page.errors.push(`pageerror: ${e.message}`));
  page.on("requestfailed", (r) => page.errors.push(`request failed: ${r.url()}`));
  page.on("request", (r) => {
    const url = r.url();
    if (url !== URL_ && !url.startsWith("blob:") && !url.startsWith("data:")) page.network.push(url);
  });
  const started = Date.now();
  await page.goto(URL_);
  await viewerReady(page);
  page.started = started;
  return page;
}

async function clean(page) {
  assert.deepEqual(page.errors, []);
  assert.deepEqual(page.network, [], "no request leaves the file");
  await page.context().close();
}

test("the file is one self-contained page: no external script, style or module, a CSP with hashes and no unsafe-inline", () => {
  const html = fs.readFileSync(FILE, "utf8");
  assert.doesNotMatch(html, /<script[^>]*\ssrc=|<link[^>]*rel="stylesheet"|@import|https?:\/\/(?!www\.w3\.org)/i);
  const csp = html.match(/<meta http-equiv="Content-Security-Policy" content="([^"]*)">/)[1];
  const directives = Object.fromEntries(csp.split(";").map((d) => d.trim().split(/\s+/)).map(([k, ...v]) => [k, v]));
  assert.deepEqual(directives["default-src"], ["'none'"]);
  assert.deepEqual(directives["worker-src"], ["blob:"]);
  assert.ok(directives["script-src"].includes("'wasm-unsafe-eval'"));
  assert.ok(!csp.includes("unsafe-inline") && !csp.includes("'unsafe-eval'"));
  // Every inline script that runs is hashed in script-src; the wasm data block is not a script.
  const scripts = [...html.matchAll(/<script([^>]*)>([\s\S]*?)<\/script>/g)];
  const runs = scripts.filter(([, attrs]) => !/type="application\/octet-stream"/.test(attrs));
  assert.ok(runs.length >= 1);
  for (const [, , body] of runs) assert.ok(directives["script-src"].includes(`'sha256-${crypto.createHash("sha256").update(body).digest("base64")}'`));
  const styles = [...html.matchAll(/<style>([\s\S]*?)<\/style>/g)];
  for (const [, body] of styles) assert.ok(directives["style-src"].includes(`'sha256-${crypto.createHash("sha256").update(body).digest("base64")}'`));
});

test("from file://: Load example gives the CLI's decision, with no server and no network", async () => {
  const page = await open();
  await page.click('[data-testid="load-example"]');
  const shown = await decision(page);
  const ms = Date.now() - page.started;
  const cli = JSON.parse(cliReport(path.join(ROOT, "www/examples"), {}));
  assert.deepEqual(shown, { approved: cli.decision.approved, reason: cli.decision.reason, numCases: cli.decision.num_cases });
  console.log(`# opening the single file to the example's decision: ${ms} ms`);
  // The example's answers, read from its inlined files when a regressed case opens.
  await page.click('[data-filter="regressed"]');
  await page.locator('[data-testid="case-row"]').first().click();
  await page.waitForFunction(() => {
    const box = document.querySelector('[data-testid="case-answers"]');
    return box && !box.hasAttribute("aria-busy");
  });
  for (const side of ["old", "new"]) assert.ok((await page.locator(`[data-testid="answer-${side}-text"]`).textContent()).includes("Verdict: "), side);
  assert.ok((await page.locator('[data-testid="case-answers"] ins').count()) > 0);
  await clean(page);
});

for (const name of fixtures()) {
  test(`from file://: fixture ${name} decides as the CLI does and exports the CLI's report and test set`, async () => {
    const page = await open();
    const policy = fixturePolicy(name);
    await setPolicy(page, policy);
    await page.setInputFiles('[data-testid="file-input"]', fixtureFiles(name));
    const shown = await decision(page);
    const dir = path.join(FIXTURES, name);
    const cli = cliReport(dir, policy);
    const report = JSON.parse(cli);
    assert.deepEqual(shown, { approved: report.decision.approved, reason: report.decision.reason, numCases: report.decision.num_cases });
    assert.equal(await downloadText(page, '[data-testid="export-report"]'), cli, "the exported report is the CLI's, byte for byte");
    assert.equal(await downloadText(page, '[data-testid="export-testset"]'), cliTestSet(dir, policy));
    await clean(page);
  });
}

test("from file://: a 300 MB log streams through the blob workers with progress, and the report lists its sha256 as the CLI does", async () => {
  const dir = generated(process.env.SINGLE_FILE_LOG_SIZE || "300M");
  const files = ["audit.jsonl", "old_verdicts.jsonl", "new_verdicts.jsonl"].map((f) => path.join(dir, f));
  const page = await open();
  await page.evaluate(() => {
    document.querySelector("deploy-gate-viewer").setAttribute("scan-workers", "2");
    document.querySelector("deploy-gate-viewer").setAttribute("timings", "");
    window.__progress = new Set();
    const el = document.querySelector('[data-testid="progress-text"]');
    new MutationObserver(() => window.__progress.add(el.textContent)).observe(el, { childList: true, characterData: true, subtree: true });
  });
  const started = Date.now();
  await page.setInputFiles('[data-testid="file-input"]', files);
  const shown = await decision(page, 300000);
  const ms = Date.now() - started;
  const cli = JSON.parse(cliReport(dir, {}));
  assert.deepEqual(shown, { approved: cli.decision.approved, reason: cli.decision.reason, numCases: cli.decision.num_cases });
  const updates = await page.evaluate(() => [...window.__progress].filter((t) => t.includes("MB/s")).length);
  assert.ok(updates >= 2, `progress updated ${updates} time(s)`);
  const exported = JSON.parse(await downloadText(page, '[data-testid="export-report"]'));
  assert.deepEqual(exported.inputs[0], cli.inputs[0]);
  assert.match(exported.inputs[0].sha256, /^[0-9a-f]{64}$/);
  // The log was hashed by the streaming wasm hash (the default), whose digest is the file's.
  await page.waitForFunction(() => (document.querySelector("deploy-gate-viewer").dataset.timings || "").includes('"digests"'));
  const marks = JSON.parse(await page.evaluate(() => document.querySelector("deploy-gate-viewer").dataset.timings)).map(([what]) => what);
  assert.ok(marks.includes("hash (stream) done"), marks.join(", "));
  console.log(`# ${fs.statSync(files[0]).size} byte log: decision after ${ms} ms (${updates} progress updates)`);
  await clean(page);
});

test("from file://: the CSP refuses a script the page did not ship (an injected inline script does not run)", async () => {
  const page = await open();
  const violated = page.evaluate(() => new Promise((resolve) => document.addEventListener("securitypolicyviolation", (e) => resolve(e.violatedDirective), { once: true })));
  await page.evaluate(() => {
    const s = document.createElement("script");
    s.textContent = "window.__injected = true;";
    document.body.append(s);
  });
  assert.match(await violated, /^script-src/);
  assert.equal(await page.evaluate(() => window.__injected === true), false);
  await page.context().close();
});
