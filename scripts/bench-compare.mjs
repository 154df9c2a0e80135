// The page's Compare view on two evaluations, in headless Chromium: the seconds from dropping them
// to the first flips on screen, the longest gap of the page's main thread (a 10 ms timer) meanwhile,
// and the peak memory (the tab's renderer process and all of Chromium, resident sets sampled every
// 20 ms from /proc).
// Usage: node scripts/bench-compare.mjs BEFORE AFTER [KEY.pub.pem…] [--runs N]
//   BEFORE, AFTER  two reports or signed decisions (with the public keys they verify against), e.g.
//                  the 200,000-case pair of docs/diff.md
// PAGE_ROOT=DIR serves another checkout's www/ and pkg/ (an older build, for A/B runs).
import { chromium } from "../tests/e2e/node_modules/playwright-core/index.mjs";
import { serve } from "./serve.mjs";
import { CHROMIUM_ARGS, ROOT } from "../tests/e2e/harness.mjs";
import { descendants, residents } from "./chromium-memory.mjs";
import path from "node:path";

const args = process.argv.slice(2);
let runs = 1;
const files = [];
for (let i = 0; i < args.length; i++) {
  if (args[i] === "--runs") runs = Number(args[++i]);
  else files.push(path.resolve(args[i]));
}
if (files.length < 2) {
  console.error("usage: node scripts/bench-compare.mjs BEFORE AFTER [KEY.pub.pem…] [--runs N]");
  process.exit(1);
}
const root = path.resolve(process.env.PAGE_ROOT || ROOT);

async function run() {
  const server = await serve(0, root);
  const browser = await chromium.launch({ executablePath: "/usr/bin/chromium", args: CHROMIUM_ARGS });
  const page = await browser.newPage();
  await page.goto(`http://127.0.0.1:${server.address().port}/www/index.html`);
  await page.waitForFunction(() => customElements.get("deploy-gate-viewer") && document.querySelector('[data-testid="file-input"]'));
  const peak = { renderer: 0, all: 0 };
  let procs = descendants(process.pid);
  let listed = Date.now();
  const sampler = setInterval(() => {
    if (Date.now() - listed > 1000) {
      procs = descendants(process.pid);
      listed = Date.now();
    }
    const now = residents(procs);
    peak.renderer = Math.max(peak.renderer, now.renderer);
    peak.all = Math.max(peak.all, now.all);
  }, 20);
  await page.evaluate(() => {
    window.__gap = 0;
    let last = performance.now();
    window.__beat = setInterval(() => {
      const now = performance.now();
      window.__gap = Math.max(window.__gap, now - last);
      last = now;
    }, 10);
  });
  const t0 = Date.now();
  await page.setInputFiles('[data-testid="file-input"]', files);
  await page.locator('[data-testid="compare-decision"], [data-testid="compare-error"]').first().waitFor({ timeout: 900000 });
  const error = await page.locator('[data-testid="compare-error"]').count();
  if (error) throw new Error(await page.locator('[data-testid="compare-error"]').textContent());
  const flips = await page.locator('[data-testid="flip-count"]').textContent();
  if (!flips.startsWith("0 ")) await page.locator('[data-testid="flip-row"]').first().waitFor();
  const shown = (Date.now() - t0) / 1000;
  const gap = await page.evaluate(() => (clearInterval(window.__beat), window.__gap));
  clearInterval(sampler);
  const summary = await page.locator('[data-testid="compare-summary"]').textContent();
  await browser.close();
  server.close();
  return { shown, gap, peak, summary };
}

const mb = (b) => `${(b / 2 ** 20).toFixed(0)} MiB`;
for (let i = 0; i < runs; i++) {
  const r = await run();
  console.log(`compare: first flips on screen ${r.shown.toFixed(2)} s after the drop; longest main-thread gap ${r.gap.toFixed(0)} ms; peak memory: tab ${mb(r.peak.renderer)}, all of Chromium ${mb(r.peak.all)} — ${r.summary}`);
}
