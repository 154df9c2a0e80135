// The page checking a model folder against the trainer's model.sig: how long from choosing the
// folder to the result, and the most memory Chromium's processes held meanwhile (the sum of the
// resident sets of this script's descendants, sampled every 100 ms from /proc). Chromium is
// launched locally, so the directory picker gets the files' paths (connected to a remote browser,
// Playwright would send their bytes over its socket). Needs the built package (scripts/build-wasm.sh),
// Chromium, and tests/e2e's npm packages.
//
//   node scripts/bench-model-signature.mjs MODEL_DIR MODEL_SIG TRAINER_PUB.pem
//
// Compare with `time sha256sum MODEL_DIR/*` on the same machine.
import { chromium } from "../tests/e2e/node_modules/playwright-core/index.mjs";
import fs from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { serve } from "./serve.mjs";
import { CHROMIUM_ARGS } from "../tests/e2e/harness.mjs";

const [model, sig, pub] = process.argv.slice(2);
if (!pub) {
  console.error("usage: node scripts/bench-model-signature.mjs MODEL_DIR MODEL_SIG TRAINER_PUB.pem");
  process.exit(2);
}
const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");

/** The resident set (bytes) of a process's descendants. */
function treeRss(root) {
  const children = new Map();
  for (const pid of fs.readdirSync("/proc").filter((d) => /^\d+$/.test(d))) {
    try {
      const stat = fs.readFileSync(`/proc/${pid}/stat`, "utf8");
      const ppid = Number(stat.slice(stat.lastIndexOf(")") + 2).split(" ")[1]);
      if (!children.has(ppid)) children.set(ppid, []);
      children.get(ppid).push(Number(pid));
    } catch {}
  }
  let total = 0;
  const stack = [...(children.get(root) || [])];
  while (stack.length) {
    const pid = stack.pop();
    try {
      const m = /VmRSS:\s+(\d+) kB/.exec(fs.readFileSync(`/proc/${pid}/status`, "utf8"));
      if (m) total += Number(m[1]) * 1024;
    } catch {}
    stack.push(...(children.get(pid) || []));
  }
  return total;
}

const server = await serve(0, ROOT);
const browser = await chromium.launch({ executablePath: process.env.CHROMIUM || "/usr/bin/chromium", args: CHROMIUM_ARGS });
const pid = process.pid;
try {
  const page = await browser.newPage();
  await page.goto(`http://127.0.0.1:${server.address().port}/www/index.html`);
  await page.waitForFunction(() => customElements.get("deploy-gate-viewer") && document.querySelector('[data-testid="progress-text"]'));
  await page.setInputFiles('[data-testid="file-input"]', [sig, pub]);
  await page.locator('[data-testid="model-signature"][data-valid="true"]').waitFor({ timeout: 60000 });
  const before = treeRss(pid);
  let peak = before;
  const sampler = setInterval(() => (peak = Math.max(peak, treeRss(pid))), 100);
  const bytes = fs.readdirSync(model, { recursive: true }).reduce((n, f) => {
    const st = fs.statSync(path.join(model, f));
    return st.isFile() ? n + st.size : n;
  }, 0);
  const t0 = performance.now();
  await page.setInputFiles('[data-testid="model-folder-input"]', model);
  const result = page.locator('[data-testid="model-files-result"][data-valid]');
  await result.waitFor({ timeout: 3_600_000 });
  const seconds = (performance.now() - t0) / 1000;
  clearInterval(sampler);
  console.log(`${(await result.innerText()).split("\n")[0]}`);
  console.log(`${(bytes / 2 ** 30).toFixed(2)} GiB in ${seconds.toFixed(1)} s (${(bytes / 1e6 / seconds).toFixed(0)} MB/s); Chromium's processes: ${(before / 2 ** 20).toFixed(0)} MiB before, at most ${(peak / 2 ** 20).toFixed(0)} MiB while hashing`);
} finally {
  await browser.close();
  server.close();
}
