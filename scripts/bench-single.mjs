// Times the single-file viewer from file://: from opening pkg/deploy-gate-viewer.html to the
// decision on the bundled example, and, given a folder from gen_audit, from opening the file to
// the decision on that log (the files are chosen right after the page loads).
//   node scripts/bench-single.mjs [LOG_DIR]   (needs tests/e2e's npm packages and Chromium)
import path from "node:path";
import { createRequire } from "node:module";
import { fileURLToPath, pathToFileURL } from "node:url";

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
const require = createRequire(path.join(ROOT, "tests/e2e/package.json"));
const { chromium } = require("playwright-core");
const { CHROMIUM_ARGS } = await import(pathToFileURL(path.join(ROOT, "tests/e2e/harness.mjs")).href);
const url = pathToFileURL(path.join(ROOT, "pkg/deploy-gate-viewer.html")).href;
const browser = await chromium.launch({ executablePath: process.env.CHROMIUM || "/usr/bin/chromium", args: CHROMIUM_ARGS });

async function run(label, act) {
  const page = await browser.newPage();
  const t0 = performance.now();
  await page.goto(url);
  await act(page);
  await page.locator('[data-testid="decision"]').waitFor({ timeout: 600000 });
  const ms = performance.now() - t0;
  console.log(`${label}: ${(ms / 1000).toFixed(2)} s to the decision (${await page.locator('[data-testid="decision"]').getAttribute("data-reason")})`);
  await page.close();
}

await run("bundled example", (page) => page.click('[data-testid="load-example"]'));
const dir = process.argv[2];
if (dir) await run(path.basename(dir), (page) => page.setInputFiles('[data-testid="file-input"]', ["audit.jsonl", "old_verdicts.jsonl", "new_verdicts.jsonl"].map((f) => path.join(path.resolve(dir), f))));
await browser.close();
