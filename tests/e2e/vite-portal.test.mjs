// The npm package bundled by Vite, as a portal builds it: the packed package installed into a
// small portal (tests/e2e/vite-portal/), built twice — without and with the opt-in example
// ("deploy-gate/viewer/example") — and driven in Chromium. The build that does not ask for the
// example carries none of its files or data and shows no "Load example"; the one that asks shows
// it and reaches the CLI's decision on the example. Both reach the CLI's decision on a fixture.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import fs from "node:fs";
import path from "node:path";
import { chromium } from "playwright-core";
import { serve } from "../../scripts/serve.mjs";
import { ROOT, ARTIFACTS, CHROMIUM_ARGS, FIXTURES, fixtureFiles, cliReport, decision, viewerReady } from "./harness.mjs";

const WORK = path.join(ARTIFACTS, "vite-portal");
const PROJECT = path.join(WORK, "project");
const VITE = path.join(ROOT, "tests/e2e/node_modules/vite/bin/vite.js");
const EXAMPLES = path.join(ROOT, "www/examples");
// A pipeline id from the example's audit log: it is in a build exactly when the example's data is.
const MARKER = JSON.parse(fs.readFileSync(path.join(EXAMPLES, "audit.jsonl"), "utf8").split("\n")[0]).pipeline_id;
let server;
let browser;

/** Every file of a build directory, with its bytes. */
function files(dir) {
  return fs
    .readdirSync(dir, { recursive: true })
    .map((f) => path.join(dir, f))
    .filter((f) => fs.statSync(f).isFile())
    .map((f) => ({ name: path.relative(dir, f), bytes: fs.readFileSync(f) }));
}
const total = (list) => list.reduce((n, f) => n + f.bytes.length, 0);

before(async () => {
  fs.rmSync(WORK, { recursive: true, force: true });
  fs.mkdirSync(WORK, { recursive: true });
  const packed = JSON.parse(execFileSync("npm", ["pack", "--json", "--pack-destination", WORK, path.join(ROOT, "pkg")], { encoding: "utf8", stdio: ["ignore", "pipe", "ignore"] }));
  fs.cpSync(path.join(ROOT, "tests/e2e/vite-portal"), PROJECT, { recursive: true });
  execFileSync("npm", ["install", "--no-save", "--offline", "--no-audit", "--no-fund", path.join(WORK, packed[0].filename)], { cwd: PROJECT, stdio: "ignore" });
  // vite.config.mjs finds Vite in tests/e2e/node_modules (a parent of the project).
  for (const withExample of ["0", "1"]) {
    execFileSync(process.execPath, [VITE, "build"], { cwd: PROJECT, stdio: "inherit", env: { ...process.env, WITH_EXAMPLE: withExample } });
  }
  server = await serve(0, PROJECT);
  browser = await chromium.launch({ executablePath: process.env.CHROMIUM || "/usr/bin/chromium", args: CHROMIUM_ARGS });
});

after(async () => {
  if (browser) await browser.close();
  if (server) server.close();
});

test("a Vite build without the example carries none of its files; with it, all of them", () => {
  const plain = files(path.join(PROJECT, "dist"));
  const example = files(path.join(PROJECT, "dist-example"));
  const holds = (list) => list.filter((f) => f.bytes.includes(MARKER)).map((f) => f.name);
  assert.deepEqual(holds(plain), [], "no file of the plain build holds the example's data");
  assert.deepEqual(plain.filter((f) => /\.jsonl$/.test(f.name)).map((f) => f.name), []);
  // The example's five files are assets of the build that imports it.
  const assets = example.filter((f) => /\.jsonl$/.test(f.name)).map((f) => path.basename(f.name).replace(/-[\w-]+\.jsonl$/, ".jsonl")).sort();
  assert.deepEqual(assets, fs.readdirSync(EXAMPLES).sort());
  assert.ok(holds(example).length >= 1);
  const exampleBytes = fs.readdirSync(EXAMPLES).reduce((n, f) => n + fs.statSync(path.join(EXAMPLES, f)).size, 0);
  assert.ok(total(example) - total(plain) >= exampleBytes, "the example build is larger by at least the example's bytes");
  console.log(`# Vite build: ${total(plain)} bytes without the example, ${total(example)} with it (the example: ${exampleBytes} bytes)`);
});

async function open(dir) {
  const context = await browser.newContext({ viewport: { width: 1300, height: 900 } });
  const page = await context.newPage();
  const errors = [];
  page.on("console", (m) => m.type() === "error" && errors.push(`console: ${m.text()}`));
  page.on("pageerror", (e) => errors.push(`pageerror: ${e.message}`));
  page.on("requestfailed", (r) => errors.push(`request failed: ${r.url()}`));
  page.on("response", (r) => r.status() >= 400 && errors.push(`HTTP ${r.status()}: ${r.url()}`));
  await page.goto(`http://127.0.0.1:${server.address().port}/${dir}/index.html`);
  await viewerReady(page);
  return { context, page, errors };
}

test("the Vite build without the example: no Load example button, and the CLI's decision on a fixture", async () => {
  const { context, page, errors } = await open("dist");
  assert.equal(await page.locator('[data-testid="load-example"]').isHidden(), true);
  await page.setInputFiles('[data-testid="file-input"]', fixtureFiles("approved"));
  const cli = JSON.parse(cliReport(path.join(FIXTURES, "approved"), {}));
  assert.deepEqual(await decision(page), { approved: cli.decision.approved, reason: cli.decision.reason, numCases: cli.decision.num_cases });
  assert.deepEqual(errors, []);
  await context.close();
});

test("the Vite build with the example: Load example gives the CLI's decision on it", async () => {
  const { context, page, errors } = await open("dist-example");
  await page.click('[data-testid="load-example"]');
  const cli = JSON.parse(cliReport(EXAMPLES, {}));
  assert.deepEqual(await decision(page), { approved: cli.decision.approved, reason: cli.decision.reason, numCases: cli.decision.num_cases });
  assert.deepEqual(errors, []);
  await context.close();
});
