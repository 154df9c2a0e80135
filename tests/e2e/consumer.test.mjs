// The npm package in a real consumer: `npm pack` of pkg/, installed into a small portal project
// (tests/e2e/consumer/), bundled with esbuild, its TypeScript checked with tsc --strict against
// the package's declarations, then served and driven in Chromium to a decision equal to the
// CLI's.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { execFileSync, spawnSync } from "node:child_process";
import fs from "node:fs";
import path from "node:path";
import { chromium } from "playwright-core";
import { serve } from "../../scripts/serve.mjs";
import { ROOT, ARTIFACTS, CHROMIUM_ARGS, fixtureFiles, fixturePolicy, cliReport, setPolicy, decision, viewerReady, FIXTURES } from "./harness.mjs";

const WORK = path.join(ARTIFACTS, "consumer");
const TSC = path.join(ROOT, "tests/e2e/node_modules/typescript/bin/tsc");
let tarball;
let server;
let browser;

before(async () => {
  fs.rmSync(WORK, { recursive: true, force: true });
  fs.mkdirSync(WORK, { recursive: true });
  const packed = JSON.parse(execFileSync("npm", ["pack", "--json", "--pack-destination", WORK, path.join(ROOT, "pkg")], { encoding: "utf8", stdio: ["ignore", "pipe", "ignore"] }));
  tarball = { ...packed[0], path: path.join(WORK, packed[0].filename) };
  const project = path.join(WORK, "project");
  fs.cpSync(path.join(ROOT, "tests/e2e/consumer"), project, { recursive: true });
  // The tarball has no dependencies: nothing is fetched.
  execFileSync("npm", ["install", "--no-save", "--offline", "--no-audit", "--no-fund", tarball.path], { cwd: project, stdio: "ignore" });
  execFileSync(process.execPath, ["build.mjs"], { cwd: project, stdio: "inherit" });
  server = await serve(0, project);
  browser = await chromium.launch({ executablePath: process.env.CHROMIUM || "/usr/bin/chromium", args: CHROMIUM_ARGS });
});

after(async () => {
  if (browser) await browser.close();
  if (server) server.close();
});

test("the packed package holds the core, the viewer with its workers, styles and types, and the single-file viewer", () => {
  const files = new Set(tarball.files.map((f) => f.path));
  for (const f of ["package.json", "README.md", "deploy_gate.js", "deploy_gate_bg.wasm", "deploy_gate.d.ts", "deploy-gate-viewer.html", "viewer/deploy-gate-viewer.js", "viewer/deploy-gate-viewer.d.ts", "viewer/worker.js", "viewer/scan-worker.js", "viewer/hash-worker.js", "viewer/wasm.js", "viewer/assets.js", "viewer/style.css", "viewer/components/index.js", "viewer/example.js", "viewer/example-files.js", "viewer/example.d.ts", "viewer/examples/audit.jsonl"]) {
    assert.ok(files.has(f), `${f} is in the tarball`);
  }
  const installed = JSON.parse(fs.readFileSync(path.join(WORK, "project/node_modules/deploy-gate/package.json"), "utf8"));
  for (const key of [".", "./viewer", "./viewer/example", "./viewer.css", "./viewer.html"]) assert.ok(installed.exports[key], `exports ${key}`);
  assert.equal(installed.license, "MIT OR Apache-2.0");
  assert.equal(installed.types, "./deploy_gate.d.ts");
  // Every module of the installed viewer resolves its imports inside the package.
  const viewer = path.join(WORK, "project/node_modules/deploy-gate/viewer");
  for (const f of fs.readdirSync(viewer, { recursive: true }).filter((f) => f.endsWith(".js"))) {
    const text = fs.readFileSync(path.join(viewer, f), "utf8");
    for (const [, spec] of text.matchAll(/\b(?:from|import)\s+"([^"]+)"/g)) {
      assert.ok(fs.existsSync(path.resolve(path.dirname(path.join(viewer, f)), spec)), `viewer/${f} imports ${spec}`);
    }
  }
  console.log(`# npm pack: ${tarball.filename} ${tarball.size} bytes packed, ${tarball.unpackedSize} bytes unpacked, ${tarball.entryCount} files`);
});

test("the consumer's TypeScript type-checks against the package (the element, dg-decision and its report)", () => {
  const project = path.join(WORK, "project");
  const ok = spawnSync(process.execPath, [TSC, "-p", "."], { cwd: project, encoding: "utf8" });
  assert.equal(ok.status, 0, ok.stdout + ok.stderr);
  // Control: a wrong use of the event's detail is an error, so the check sees the types.
  const bad = path.join(project, "src/bad.ts");
  fs.writeFileSync(bad, 'import "deploy-gate/viewer";\ndocument.querySelector("deploy-gate-viewer")!.addEventListener("dg-decision", (e) => { const n: number = e.detail.report.decision.reason; console.log(n); });\n');
  const wrong = spawnSync(process.execPath, [TSC, "-p", "."], { cwd: project, encoding: "utf8" });
  fs.rmSync(bad);
  assert.notEqual(wrong.status, 0);
  assert.match(wrong.stdout + wrong.stderr, /bad\.ts.*Type 'string' is not assignable to type 'number'/s);
});

test("the bundled consumer page reaches the CLI's decision, and the portal gets it from dg-decision", async () => {
  const context = await browser.newContext({ viewport: { width: 1300, height: 900 } });
  const page = await context.newPage();
  const errors = [];
  page.on("console", (m) => m.type() === "error" && errors.push(`console: ${m.text()}`));
  page.on("pageerror", (e) => errors.push(`pageerror: ${e.message}`));
  page.on("requestfailed", (r) => errors.push(`request failed: ${r.url()}`));
  page.on("response", (r) => r.status() >= 400 && errors.push(`HTTP ${r.status()}: ${r.url()}`));
  await page.goto(`http://127.0.0.1:${server.address().port}/index.html`);
  await viewerReady(page);
  for (const name of ["approved", "both-regressed"]) {
    const policy = fixturePolicy(name);
    await setPolicy(page, policy);
    if (await page.locator('[data-testid="file-entry"]').count()) {
      while (await page.locator('[data-testid="file-entry"]').count()) await page.click('[data-testid="file-entry"] >> nth=0 >> button');
    }
    await page.setInputFiles('[data-testid="file-input"]', fixtureFiles(name));
    const shown = await decision(page);
    const cli = JSON.parse(cliReport(path.join(FIXTURES, name), policy));
    assert.deepEqual(shown, { approved: cli.decision.approved, reason: cli.decision.reason, numCases: cli.decision.num_cases });
    const out = page.locator('[data-testid="last-decision"]');
    await page.waitForFunction((reason) => document.querySelector('[data-testid="last-decision"]').dataset.reason === reason, cli.decision.reason);
    assert.equal(await out.getAttribute("data-approved"), String(cli.decision.approved));
  }
  // The viewer's styles came through the bundle (dist/app.css), so it linked no stylesheet.
  assert.equal(await page.locator('link[rel="stylesheet"]').count(), 1);
  assert.notEqual(await page.evaluate(() => getComputedStyle(document.querySelector("deploy-gate-viewer")).getPropertyValue("--dg-bg").trim()), "");
  assert.deepEqual(errors, []);
  await context.close();
});
