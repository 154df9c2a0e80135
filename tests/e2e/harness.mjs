// Shared by the end-to-end tests: the static server, Chromium, the CLI, fixtures, and a
// console-error collector.
import { chromium } from "playwright-core";
import { execFileSync, spawnSync } from "node:child_process";
import fs from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { serve } from "../../scripts/serve.mjs";

export const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../..");
export const FIXTURES = path.join(ROOT, "tests/fixtures/parity");
export const ARTIFACTS = path.join(ROOT, "tests/e2e/.artifacts");
export const CLI = process.env.DEPLOY_GATE_BIN || path.join(ROOT, "target/release/deploy-gate");
// The audit log generator (examples/gen_audit.rs, the standard library only): the test command
// names the copy its cargo-test step built; by hand, the release build's.
export const GEN_AUDIT = process.env.DEPLOY_GATE_GEN_AUDIT || path.join(ROOT, "target/release/examples/gen_audit");
export const CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking", "--disable-component-update", "--disable-sync"];

export async function start() {
  const server = await serve(0, ROOT);
  const base = `http://127.0.0.1:${server.address().port}`;
  const browser = await chromium.launch({ executablePath: process.env.CHROMIUM || "/usr/bin/chromium", args: CHROMIUM_ARGS });
  return {
    base,
    browser,
    async close() {
      await browser.close();
      server.close();
    },
  };
}

/** A new page that records console errors, page errors and failed requests. */
export async function openPage(env, pathname = "/www/index.html") {
  const context = await env.browser.newContext({ acceptDownloads: true, viewport: { width: 1300, height: 900 } });
  const page = await context.newPage();
  page.errors = [];
  page.on("console", (m) => {
    if (m.type() === "error") page.errors.push(`console: ${m.text()}`);
  });
  page.on("pageerror", (e) => page.errors.push(`pageerror: ${e.message}`));
  page.on("requestfailed", (r) => page.errors.push(`request failed: ${r.url()}`));
  page.on("response", (r) => {
    if (r.status() >= 400) page.errors.push(`HTTP ${r.status()}: ${r.url()}`);
  });
  await page.goto(env.base + pathname);
  await viewerReady(page);
  return page;
}

/** Waits until a page's <deploy-gate-viewer> is defined and built: the load event can come
 * first, since the viewer's module graph awaits the wasm core (top-level await). */
export async function viewerReady(page) {
  await page.waitForFunction(() => !document.querySelector("deploy-gate-viewer") || (customElements.get("deploy-gate-viewer") && document.querySelector('[data-testid="progress-text"]')));
}

/** Watches what the page's main thread does while a log is read, by what it does, not by how long
 * it takes (a loaded machine makes any time bound flaky): the bytes it reads from files itself
 * (Blob/File stream, arrayBuffer, text, FileReader: the workers' reads are not the main thread's),
 * and the longest array in one message from the viewer's worker (the cases come a slice at a
 * time). It also keeps the longest gap between two runs of a 10 ms timer, which is printed, not
 * asserted. `mainThreadReport(page)` returns the three and puts everything back. A read counts
 * the whole blob (a stream read in part counts whole: a bound, not an exact figure). */
export async function watchMainThread(page) {
  await page.evaluate(() => {
    const watch = (window.__watch = { bytesRead: 0, longestArray: 0, gap: 0, restore: [] });
    const counted = (size) => { watch.bytesRead += size; };
    const patch = (proto, name, counting) => {
      const original = proto[name];
      if (typeof original !== "function") return;
      proto[name] = counting(original);
      watch.restore.push(() => { proto[name] = original; });
    };
    for (const name of ["stream", "arrayBuffer", "text", "bytes"]) {
      patch(Blob.prototype, name, (original) => function (...args) { counted(this.size); return original.apply(this, args); });
    }
    for (const name of ["readAsArrayBuffer", "readAsText", "readAsBinaryString", "readAsDataURL"]) {
      patch(FileReader.prototype, name, (original) => function (blob, ...args) { counted(blob.size); return original.call(this, blob, ...args); });
    }
    const longest = (value, depth) => {
      if (depth > 4 || value === null || typeof value !== "object") return 0;
      if (ArrayBuffer.isView(value) || value instanceof ArrayBuffer || value instanceof Blob) return 0;
      if (Array.isArray(value)) return value.length;
      let most = 0;
      for (const key of Object.keys(value)) most = Math.max(most, longest(value[key], depth + 1));
      return most;
    };
    const worker = document.querySelector("deploy-gate-viewer").client.worker;
    const receive = worker.onmessage;
    worker.onmessage = (event) => {
      watch.longestArray = Math.max(watch.longestArray, longest(event.data, 0));
      return receive(event);
    };
    watch.restore.push(() => { worker.onmessage = receive; });
    let last = performance.now();
    watch.beat = setInterval(() => {
      const now = performance.now();
      watch.gap = Math.max(watch.gap, now - last);
      last = now;
    }, 10);
  });
}

export async function mainThreadReport(page) {
  return page.evaluate(() => {
    const { bytesRead, longestArray, gap, beat, restore } = window.__watch;
    clearInterval(beat);
    for (const undo of restore) undo();
    return { bytesRead, longestArray, gap };
  });
}

/** Fixture folders, sorted. */
export function fixtures() {
  return fs.readdirSync(FIXTURES).filter((d) => fs.statSync(path.join(FIXTURES, d)).isDirectory()).sort();
}

export function fixtureFiles(name) {
  const dir = path.join(FIXTURES, name);
  return fs.readdirSync(dir).filter((f) => f.endsWith(".jsonl")).map((f) => path.join(dir, f));
}

/** A fixture's policy as page field values. */
export function fixturePolicy(name) {
  const p = JSON.parse(fs.readFileSync(path.join(FIXTURES, name, "args.json"), "utf8")).policy;
  return {
    min_samples: String(p.min_samples),
    max_samples: p.max_samples === null ? "none" : String(p.max_samples),
    task_tol: String(p.task_regression_tol),
    traj_tol: String(p.trajectory_regression_tol),
    pass_verdicts: p.pass_verdicts.join(","),
    on_insufficient: p.on_insufficient,
    // The reference counts every missing verdict as a failure: its rule is max_missing 1.
    max_missing: "1",
  };
}

/** Runs `deploy-gate evaluate` on files named like the fixtures; returns the report bytes. */
export function cliReport(dir, policy) {
  const f = (n) => path.join(dir, n);
  const args = ["evaluate", "--audit", f("audit.jsonl"), "--old-verdicts", f("old_verdicts.jsonl"), "--new-verdicts", f("new_verdicts.jsonl")];
  if (fs.existsSync(f("old_trajectories.jsonl"))) args.push("--old-trajectories", f("old_trajectories.jsonl"), "--new-trajectories", f("new_trajectories.jsonl"));
  args.push(...policyFlags(policy));
  const run = spawnSync(CLI, args, { maxBuffer: 1 << 30 });
  if (![0, 3, 4].includes(run.status)) throw new Error(`deploy-gate failed: ${run.stderr}`);
  return run.stdout.toString("utf8");
}

export function cliTestSet(dir, policy) {
  const { min_samples, max_samples, seed, pass_verdicts } = policy || {};
  const flags = policyFlags({ min_samples, max_samples, seed, pass_verdicts });
  return execFileSync(CLI, ["test-set", "--audit", path.join(dir, "audit.jsonl"), ...flags], { maxBuffer: 1 << 30, stdio: ["ignore", "pipe", "ignore"] }).toString("utf8");
}

function policyFlags(p = {}) {
  const flags = [];
  const add = (flag, v) => v !== undefined && flags.push(flag, v);
  add("--min-samples", p.min_samples);
  add("--max-samples", p.max_samples);
  add("--seed", p.seed);
  add("--pass-verdicts", p.pass_verdicts);
  add("--task-tol", p.task_tol);
  add("--traj-tol", p.traj_tol);
  add("--on-insufficient", p.on_insufficient);
  add("--max-missing", p.max_missing);
  add("--mode", p.mode);
  add("--confidence", p.confidence);
  add("--cluster", p.cluster);
  add("--repeats", p.repeats);
  return flags;
}

/** Fills the policy form (a change event per field, as a user leaving the field). */
export async function setPolicy(page, policy) {
  for (const [name, value] of Object.entries(policy)) {
    if (value === undefined) continue;
    const field = page.locator(`[name="${name}"]`);
    if (["on_insufficient", "mode", "cluster", "repeats"].includes(name)) await field.selectOption(value);
    else {
      await field.fill(value);
      await field.dispatchEvent("change");
    }
  }
}

/** Waits for the decision banner and returns what it shows. */
export async function decision(page, timeout = 30000) {
  const banner = page.locator('[data-testid="decision"]');
  await banner.waitFor({ timeout });
  return {
    approved: (await banner.getAttribute("data-approved")) === "true",
    reason: await banner.getAttribute("data-reason"),
    numCases: Number(await page.locator('[data-testid="num-cases"]').textContent()),
  };
}

/** Saves a download triggered by clicking `selector`; returns its text. */
export async function downloadText(page, selector) {
  const [dl] = await Promise.all([page.waitForEvent("download"), page.click(selector)]);
  const file = await dl.path();
  return fs.readFileSync(file, "utf8");
}

/** Generates an audit log with the repository's generator (cached in .artifacts). */
export function generated(size, seed = 11) {
  const dir = path.join(ARTIFACTS, `gen-${size}-${seed}`);
  if (!fs.existsSync(path.join(dir, "new_trajectories.jsonl"))) {
    execFileSync(GEN_AUDIT, ["--size", size, "--out", dir, "--seed", String(seed)], { stdio: "ignore" });
  }
  return dir;
}
