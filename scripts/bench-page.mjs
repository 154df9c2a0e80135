// Seconds the page needs for a generated audit log in headless Chromium: from choosing the
// files to the decision on screen, and to the exports being ready (the log's sha256 is in).
// Usage: node scripts/bench-page.mjs [DIR]   (default bench-data, made by
// `cargo run --release --example gen_audit -- --size 1G --out bench-data`).
import { chromium } from "../tests/e2e/node_modules/playwright-core/index.mjs";
import { serve } from "./serve.mjs";
import { CHROMIUM_ARGS, ROOT } from "../tests/e2e/harness.mjs";
import fs from "node:fs";
import path from "node:path";

const dir = path.resolve(process.argv[2] || path.join(ROOT, "bench-data"));
const files = ["audit.jsonl", "old_verdicts.jsonl", "new_verdicts.jsonl"].map((f) => path.join(dir, f));
const size = fs.statSync(files[0]).size;
const server = await serve(0);
const browser = await chromium.launch({ executablePath: "/usr/bin/chromium", args: CHROMIUM_ARGS });
const page = await browser.newPage();
await page.goto(`http://127.0.0.1:${server.address().port}/www/index.html`);
await page.waitForFunction(() => customElements.get("deploy-gate-viewer"));
const t0 = Date.now();
await page.setInputFiles('[data-testid="file-input"]', files);
await page.locator('[data-testid="decision"]').waitFor({ timeout: 600000 });
const seconds = (Date.now() - t0) / 1000;
const reason = await page.locator('[data-testid="decision"]').getAttribute("data-reason");
// The audit log's sha256 (for the exports and signing) may still be computing.
await page.locator('[data-testid="export-report"]:not([disabled])').waitFor({ timeout: 600000 });
const digested = (Date.now() - t0) / 1000;
console.log(
  `page: ${(size / 1e6).toFixed(0)} MB audit log decided in ${seconds.toFixed(2)} s (${(size / 1e6 / seconds).toFixed(0)} MB/s), ` +
    `sha256 in and the exports ready at ${digested.toFixed(2)} s — ${reason}`,
);
await browser.close();
server.close();
