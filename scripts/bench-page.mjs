// Seconds the page needs for a generated audit log in headless Chromium: from choosing the
// files to the decision on screen, and to the exports being ready (the log's sha256 is in);
// and the tab's peak memory (the renderer process's resident set, sampled every 20 ms from
// /proc while it runs; and all of Chromium's processes together).
// Usage: node scripts/bench-page.mjs [DIR] [--runs N] [--timings] [--attr NAME=VALUE]…
//   DIR     the generated files (default bench-data, made by
//           `cargo run --release --example gen_audit -- --size 1G --out bench-data`)
//   --runs  N runs, each in a fresh browser, and their medians (default 1)
//   --timings  print the viewer's timeline of each run (the `timings` attribute: the workers'
//           steps in ms from the drop)
//   --attr  sets an attribute on the viewer before the drop (e.g. --attr scan-workers=1)
//   --settle MS  waits MS ms after the page is ready before the drop (default 0: the start-up
//           counts; a reviewer takes a few seconds to pick the files)
//   --cpu   prints the CPU time of each of Chromium's threads (from /proc) from the drop to the
//           decision and from the decision to the sha256, the busiest first
//   --policy NAME=VALUE  fills the policy form's field before the drop (e.g. max_samples=none)
//   --verdicts EXT  reads DIR/old_verdicts.EXT and DIR/new_verdicts.EXT (default jsonl; json: a
//           JSON array of records, one a line, as scripts/jsonl-to-array.mjs writes it)
//   --open-last  then opens the case of the new verdict file's last record (found by a search)
//           and times its row's click to both answers shown (read from the files by byte range),
//           and prints the tab's memory then
// PAGE_ROOT=DIR serves another checkout's www/ and pkg/ (an older build, for A/B runs).
import { chromium } from "../tests/e2e/node_modules/playwright-core/index.mjs";
import { serve } from "./serve.mjs";
import { CHROMIUM_ARGS, ROOT } from "../tests/e2e/harness.mjs";
import { descendants, residents } from "./chromium-memory.mjs";
import fs from "node:fs";
import path from "node:path";

const args = process.argv.slice(2);
let dirArg = null;
let runs = 1;
let showTimings = false;
let settle = 0;
let showCpu = false;
let openLast = false;
let verdictExt = "jsonl";
const attrs = [];
const policy = [];
for (let i = 0; i < args.length; i++) {
  if (args[i] === "--runs") runs = Number(args[++i]);
  else if (args[i] === "--timings") showTimings = true;
  else if (args[i] === "--settle") settle = Number(args[++i]);
  else if (args[i] === "--cpu") showCpu = true;
  else if (args[i] === "--open-last") openLast = true;
  else if (args[i] === "--verdicts") verdictExt = args[++i];
  else if (args[i] === "--policy") policy.push(args[++i].split(/=(.*)/s).slice(0, 2));
  else if (args[i] === "--attr") attrs.push(args[++i].split(/=(.*)/s).slice(0, 2));
  else dirArg = args[i];
}
const dir = path.resolve(dirArg || path.join(ROOT, "bench-data"));
const root = path.resolve(process.env.PAGE_ROOT || ROOT);
const files = ["audit.jsonl", `old_verdicts.${verdictExt}`, `new_verdicts.${verdictExt}`].map((f) => path.join(dir, f));
const size = fs.statSync(files[0]).size;

/** CPU seconds (user + system) of every thread of the processes listed, by "pid/tid name". */
function threadCpu(procs) {
  const out = new Map();
  const tick = 100; // USER_HZ
  for (const { pid, renderer } of procs) {
    let tids = [];
    try {
      tids = fs.readdirSync(`/proc/${pid}/task`);
    } catch {
      continue;
    }
    for (const tid of tids) {
      try {
        const stat = fs.readFileSync(`/proc/${pid}/task/${tid}/stat`, "utf8");
        const name = stat.slice(stat.indexOf("(") + 1, stat.lastIndexOf(")"));
        const f = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
        out.set(`${renderer ? "renderer" : "browser"} ${pid}/${tid} ${name}`, (Number(f[11]) + Number(f[12])) / tick);
      } catch {
        // gone
      }
    }
  }
  return out;
}

/** The threads' CPU between two readings, the busiest first, as printable lines. */
function cpuLines(before, after) {
  const rows = [];
  for (const [key, t] of after) {
    const d = t - (before.get(key) || 0);
    if (d >= 0.02) rows.push([d, key]);
  }
  rows.sort((a, b) => b[0] - a[0]);
  const total = rows.reduce((n, [d]) => n + d, 0);
  return [`    ${total.toFixed(2)} s of CPU in all`, ...rows.map(([d, key]) => `    ${d.toFixed(2)} s  ${key}`)];
}

async function run() {
  const server = await serve(0, root);
  const browser = await chromium.launch({ executablePath: "/usr/bin/chromium", args: CHROMIUM_ARGS });
  const page = await browser.newPage();
  await page.goto(`http://127.0.0.1:${server.address().port}/www/index.html`);
  await page.waitForFunction(() => customElements.get("deploy-gate-viewer"));
  await page.evaluate((list) => {
    const viewer = document.querySelector("deploy-gate-viewer");
    viewer.setAttribute("timings", "");
    for (const [name, value] of list) viewer.setAttribute(name, value ?? "");
  }, attrs);
  for (const [name, value] of policy) {
    const field = page.locator(`[name="${name}"]`);
    if ((await field.evaluate((el) => el.tagName)) === "SELECT") await field.selectOption(value);
    else {
      await field.fill(value);
      await field.dispatchEvent("change");
    }
  }
  if (settle) await page.waitForTimeout(settle);
  const pid = process.pid; // Chromium runs below this process
  const peak = { renderer: 0, all: 0 };
  // The process list is read again each second (reading all of /proc every 20 ms would cost
  // this process a tenth of a core).
  let procs = descendants(pid);
  let listed = Date.now();
  const sampler = setInterval(() => {
    if (Date.now() - listed > 1000) {
      procs = descendants(pid);
      listed = Date.now();
    }
    const now = residents(procs);
    if (showCpu) sampleCpu();
    peak.renderer = Math.max(peak.renderer, now.renderer);
    peak.all = Math.max(peak.all, now.all);
  }, 20);
  // A thread's CPU is read every 20 ms and its last reading kept: workers end (and leave /proc)
  // before the decision.
  const seen = new Map();
  const sampleCpu = () => {
    for (const [key, t] of threadCpu(procs)) seen.set(key, t);
    return new Map(seen);
  };
  const cpu0 = showCpu ? sampleCpu() : null;
  const t0 = Date.now();
  const origin = await page.evaluate(() => performance.timeOrigin + performance.now());
  await page.setInputFiles('[data-testid="file-input"]', files);
  await page.locator('[data-testid="decision"]').waitFor({ timeout: 900000 });
  const decided = (Date.now() - t0) / 1000;
  const cpu1 = showCpu ? sampleCpu() : null;
  const reason = await page.locator('[data-testid="decision"]').getAttribute("data-reason");
  // The audit log's sha256 (for the exports and signing) may still be computing.
  await page.locator('[data-testid="export-report"]:not([disabled])').waitFor({ timeout: 900000 });
  const digested = (Date.now() - t0) / 1000;
  const cpu2 = showCpu ? sampleCpu() : null;
  clearInterval(sampler);
  // The timeline (an older build has none).
  let timeline = null;
  try {
    await page.waitForFunction(() => (document.querySelector("deploy-gate-viewer").dataset.timings || "").includes('"digests"'), null, { timeout: 5000 });
    timeline = JSON.parse(await page.evaluate(() => document.querySelector("deploy-gate-viewer").dataset.timings)).map(([what, at]) => [what, at - origin]);
  } catch {
    timeline = null;
  }
  let opened = null;
  if (openLast) {
    // After the decision the page keys the reviewer's marks by the report's sha256 (the report's
    // JSON made and hashed once): the click is timed after that, not against it.
    await page.waitForFunction(() => /kept in this browser|not kept/.test(document.querySelector('[data-testid="review-status"]')?.textContent || ""), null, { timeout: 120000 });
    const id = lastPipelineId(files[2]);
    await page.fill('[data-testid="case-search"]', String(id));
    const row = page.locator(`[data-testid="case-row"][data-id='${JSON.stringify(id)}']`);
    await row.waitFor({ timeout: 60000 });
    const t = Date.now();
    await row.click();
    await page.waitForFunction(() => {
      const box = document.querySelector('[data-testid="case-answers"]');
      return box && !box.hasAttribute("aria-busy");
    }, null, { timeout: 60000 });
    const ms = Date.now() - t;
    const shown = await page.locator('[data-testid="case-answers"] pre').count();
    opened = { ms, shown, resident: residents(descendants(pid)) };
  }
  await browser.close();
  server.close();
  const cpu = showCpu ? { toDecision: cpuLines(cpu0, cpu1), toDigest: cpuLines(cpu1, cpu2) } : null;
  return { decided, digested, reason, peak, timeline, cpu, opened };
}

/** The pipeline id of the last record of a JSONL file, or of a JSON array of one record a line
 * (read from its last 1 MiB). */
function lastPipelineId(file) {
  const fd = fs.openSync(file, "r");
  const size = fs.fstatSync(fd).size;
  const length = Math.min(size, 1 << 20);
  const buf = Buffer.alloc(length);
  fs.readSync(fd, buf, 0, length, size - length);
  fs.closeSync(fd);
  const lines = buf.toString("utf8").split("\n").filter((l) => l.trim() && l.trim() !== "]");
  return JSON.parse(lines[lines.length - 1].replace(/^,/, "")).pipeline_id;
}

const mb = (b) => `${(b / 2 ** 20).toFixed(0)} MiB`;
const results = [];
for (let i = 0; i < runs; i++) {
  const r = await run();
  results.push(r);
  console.log(
    `page: ${(size / 1e6).toFixed(0)} MB audit log decided in ${r.decided.toFixed(2)} s (${(size / 1e6 / r.decided).toFixed(0)} MB/s), ` +
      `sha256 in and the exports ready at ${r.digested.toFixed(2)} s; peak memory: tab ${mb(r.peak.renderer)}, all of Chromium ${mb(r.peak.all)} — ${r.reason}`,
  );
  if (r.opened) {
    const verdictBytes = fs.statSync(files[1]).size + fs.statSync(files[2]).size;
    console.log(
      `  verdict files ${(verdictBytes / 2 ** 20).toFixed(0)} MiB together; the case at the new file's end opened in ${r.opened.ms} ms ` +
        `(${r.opened.shown} answer(s) shown); then the tab held ${mb(r.opened.resident.renderer)}, all of Chromium ${mb(r.opened.resident.all)}`,
    );
  }
  if (showTimings && r.timeline) for (const [what, at] of r.timeline) console.log(`  ${at.toFixed(0).padStart(7)} ms  ${what}`);
  if (r.cpu) {
    console.log("  CPU from the drop to the decision:");
    for (const line of r.cpu.toDecision) console.log(line);
    console.log("  CPU from the decision to the sha256:");
    for (const line of r.cpu.toDigest) console.log(line);
  }
}
if (runs > 1) {
  const median = (xs) => [...xs].sort((a, b) => a - b)[xs.length >> 1];
  console.log(
    `median of ${runs}: decided ${median(results.map((r) => r.decided)).toFixed(2)} s, sha256 ${median(results.map((r) => r.digested)).toFixed(2)} s, ` +
      `peak tab ${mb(median(results.map((r) => r.peak.renderer)))}, all ${mb(median(results.map((r) => r.peak.all)))}`,
  );
}
