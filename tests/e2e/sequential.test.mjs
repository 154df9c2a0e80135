// A sequential decision on the page: the bundled example evaluated by the CLI with
// `--mode non_inferiority --sequential` and on the page with the same policy (the policy form's
// rule, "Decide" and budget fields) give the same decision and `sequential` object; the task
// card draws the confidence sequence with a point per recorded look and the stop at `used`,
// captioned by the reports' sentence; stopped at the budget, the banner says how to continue
// (not the fixed rule's count). A report without `sequential` draws no such chart.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { execFileSync, spawnSync } from "node:child_process";
import fs from "node:fs";
import path from "node:path";
import { start, openPage, downloadText, ROOT, CLI } from "./harness.mjs";

const EXAMPLES = path.join(ROOT, "www/examples");
const FILES = ["audit", "old_verdicts", "new_verdicts", "old_trajectories", "new_trajectories"];

let env;
before(async () => {
  if (!fs.existsSync(CLI)) execFileSync("cargo", ["build", "--release", "--bin", "deploy-gate"], { cwd: ROOT, stdio: "inherit" });
  env = await start();
});
after(async () => {
  if (env) await env.close();
});

/** `deploy-gate evaluate` on the example with `flags`: (report, stderr). */
function cli(flags) {
  const args = ["evaluate"];
  for (const f of FILES) args.push(`--${f.replace("_", "-")}`, path.join(EXAMPLES, `${f}.jsonl`));
  const run = spawnSync(CLI, [...args, ...flags], { maxBuffer: 1 << 28 });
  assert.ok([0, 3, 4].includes(run.status), String(run.stderr));
  return { report: JSON.parse(run.stdout.toString("utf8")), stderr: run.stderr.toString("utf8") };
}

/** The sentence, from the report's numbers, written independently of the page's code. */
function sentence(q) {
  const b = (x) => x.toFixed(3).replace(/^-/, "−");
  const of = `${q.used} of ${q.budget} ${q.unit === "template" ? "templates" : "cases"}`;
  const rest = {
    approved: () => `approved after ${of}; lower bound ${b(q.lower)} > −${q.tolerance}`,
    blocked: () => `blocked after ${of}; upper bound ${b(q.upper)} < 0`,
    budget: () => `inconclusive after ${of} (the budget); interval ${b(q.lower)} to ${b(q.upper)}, tolerance ${q.tolerance}`,
  }[q.stopped]();
  return `Sequential (betting confidence sequence): ${rest}.`;
}

/** Sets the page's policy form: selects chosen, text fields filled, a change event each. */
async function setPolicy(page, fields) {
  for (const [name, value] of Object.entries(fields)) {
    const field = page.locator(`[name="${name}"]`);
    if ((await field.evaluate((el) => el.tagName)) === "SELECT") await field.selectOption(value);
    else {
      await field.fill(value);
      await field.dispatchEvent("change");
    }
  }
}

/** Waits for the banner to show `reason`. */
async function shown(page, reason) {
  await page.waitForFunction((r) => document.querySelector('[data-testid="decision"]')?.dataset.reason === r, reason, { timeout: 60000 });
}

/** The chart on the page: its points per bound, the stop marker, the caption, title and desc. */
async function chartOf(page) {
  return page.locator('[data-testid="sequential-chart"]').evaluate((svg) => {
    const pts = (bound) => svg.querySelector(`[data-bound="${bound}"]`).getAttribute("points").trim().split(/\s+/).map((p) => p.split(",").map(Number));
    const stop = svg.querySelector('[data-testid="sequential-stop"]');
    return {
      lower: pts("lower"),
      upper: pts("upper"),
      stopN: Number(stop.dataset.n),
      stopX: Number(stop.querySelector("line").getAttribute("x1")),
      role: svg.getAttribute("role"),
      title: svg.querySelector(":scope > title").textContent,
      desc: svg.querySelector(":scope > desc").textContent,
      caption: svg.closest("figure").querySelector("figcaption").textContent,
    };
  });
}

async function openExample() {
  const page = await openPage(env);
  await page.setInputFiles('[data-testid="file-input"]', FILES.map((f) => path.join(EXAMPLES, `${f}.jsonl`)));
  await page.locator('[data-testid="decision"]').waitFor({ timeout: 60000 });
  return page;
}

test("approved early: the page's chart has a point per look and the stop at `used`", async () => {
  const { report, stderr } = cli(["--mode", "non_inferiority", "--sequential", "--task-tol", "0.05", "--cluster", "none"]);
  const q = report.sequential;
  assert.equal(q.stopped, "approved");
  assert.ok(q.used < q.budget, `stopped early: ${q.used} of ${q.budget}`);
  assert.ok(stderr.includes(`  sequential: ${sentence(q).slice("Sequential (betting confidence sequence): ".length, -1)} (betting confidence sequence)\n`), stderr);

  const page = await openExample();
  await setPolicy(page, { task_tol: "0.05", cluster: "none", mode: "non_inferiority", sequential: "true" });
  await shown(page, report.decision.reason);
  const own = JSON.parse(await downloadText(page, '[data-testid="export-report"]'));
  assert.deepEqual(own.sequential, q);
  assert.equal(own.policy.sequential, true);

  const chart = await chartOf(page);
  const looks = q.looks.n.length;
  assert.equal(chart.lower.length, looks);
  assert.equal(chart.upper.length, looks);
  assert.equal(chart.stopN, q.used);
  // The marker stands at the last look's x (the look where it stopped), every point left of it.
  assert.equal(q.looks.n.at(-1), q.used);
  assert.equal(chart.stopX, chart.lower.at(-1)[0]);
  assert.ok(chart.lower.every(([x], i) => i === 0 || x > chart.lower[i - 1][0]), "x grows with n");
  assert.ok(chart.lower.every(([, y], i) => y >= chart.upper[i][1]), "the lower bound is drawn below the upper one");
  assert.equal(chart.caption, sentence(q));
  assert.equal(chart.desc, sentence(q).slice(0, -1));
  assert.equal(chart.role, "img");
  assert.match(chart.title, /^Confidence sequence for the change in pass rate/);
  assert.equal(await page.locator('[data-testid="sequential-continue"]').count(), 0);

  // The HTML report draws the same sequence: a point per look, the stop at `used`.
  const html = await downloadText(page, '[data-testid="export-html"]');
  const svg = html.match(/<svg[^>]*data-testid="sequential-chart"[\s\S]*?<\/svg>/)[0];
  for (const bound of ["lower", "upper"]) assert.equal(svg.match(new RegExp(`points="([^"]*)" data-bound="${bound}"`))[1].split(" ").length, looks, bound);
  assert.ok(svg.includes(`data-testid="sequential-stop" data-n="${q.used}"`));
  assert.deepEqual(page.errors, []);
  await page.context().close();
});

test("inconclusive at the budget: the banner says to continue, not how many cases would settle it", async () => {
  const flags = ["--mode", "non_inferiority", "--sequential", "--budget", "30", "--task-tol", "0.05", "--cluster", "none"];
  const { report, stderr } = cli(flags);
  const q = report.sequential;
  assert.deepEqual([q.stopped, q.used, q.budget, report.decision.outcome], ["budget", 30, 30, "inconclusive"]);
  const cont = "The budget is spent (30 of 30 cases): to continue, evaluate again with a larger budget (the same seed's order, the sequence picking up where it stopped, its error rate held).";
  assert.ok(stderr.includes(`  settle:     ${cont[0].toLowerCase()}${cont.slice(1, -1)}\n`), stderr);
  assert.doesNotMatch(stderr, /would settle it/);

  const page = await openExample();
  await setPolicy(page, { task_tol: "0.05", cluster: "none", mode: "non_inferiority", sequential: "true", budget: "30" });
  await shown(page, report.decision.reason);
  assert.equal(await page.locator('[data-testid="sequential-continue"]').innerText(), cont);
  assert.equal(await page.locator('[data-testid="cases-needed"]').count(), 0);
  assert.doesNotMatch(await page.locator('[data-testid="decision"]').innerText(), /would settle it/);
  const chart = await chartOf(page);
  assert.equal(chart.lower.length, q.looks.n.length);
  assert.equal(chart.stopN, 30);
  assert.equal(chart.caption, sentence(q));

  const html = await downloadText(page, '[data-testid="export-html"]');
  assert.match(html, /<h1>Inconclusive — keep the old model; the sequence can be continued <span class="rests" data-testid="rests-on">\(rests on 30 of 72 test cases\)<\/span><\/h1>/);
  assert.ok(html.includes(`<p data-testid="sequential-continue"><strong>${cont.replaceAll("'", "&#39;")}</strong></p>`), "the HTML report's continuation");
  assert.doesNotMatch(html, /would settle it/);
  await page.click('[data-testid="export-markdown"]');
  const md = await page.locator('[data-testid="markdown"]').inputValue();
  assert.ok(md.startsWith("## deploy-gate: ⚠️ inconclusive — keep the old model; the sequence can be continued (rests on 30 of 72 test cases)\n"), md);
  assert.ok(md.includes(`\n**${cont}**\n`), md);
  assert.ok(md.includes(`\n${sentence(q)}\n`), md);
  assert.doesNotMatch(md, /would settle it/);
  assert.deepEqual(page.errors, []);
  await page.context().close();
});

test("without sequential: no chart, and the fixed rule's count; sequential under the point rule is refused", async () => {
  const { report } = cli(["--mode", "non_inferiority", "--task-tol", "0.05"]);
  assert.equal("sequential" in report, false);
  const page = await openExample();
  await setPolicy(page, { task_tol: "0.05", mode: "non_inferiority" });
  await shown(page, report.decision.reason);
  assert.equal(await page.locator('[data-testid="sequential-chart"]').count(), 0);
  assert.equal(await page.locator("figure.dg-sequential").count(), 0);
  if (report.decision.outcome === "inconclusive") assert.match(await page.locator('[data-testid="cases-needed"]').innerText(), /cases would settle it/);
  const html = await downloadText(page, '[data-testid="export-html"]');
  assert.doesNotMatch(html, /sequential-chart/);

  await setPolicy(page, { mode: "point", sequential: "true" });
  await page.locator(".dg-policy .dg-error:not([hidden])").waitFor({ timeout: 30000 });
  assert.match(await page.locator(".dg-policy .dg-error").innerText(), /sequential/);
  assert.deepEqual(page.errors, []);
  await page.context().close();
});
