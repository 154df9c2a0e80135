// Clustered intervals, repeated runs and the inconclusive outcome in the page: the amber banner
// with the cases that would settle it, the clustered interval, its clusters and design effect on
// the task card, the templates' intervals, the runs in the case table, and the two policy fields
// (their defaults from the core) deciding as the CLI decides; and a report made before outcomes
// existed, opened from a signed decision, shown as it was.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import fs from "node:fs";
import path from "node:path";
import { start, openPage, setPolicy, decision, ROOT, ARTIFACTS, CLI } from "./harness.mjs";

let env;
before(async () => (env = await start()));
after(async () => env && (await env.close()));

const COMPAT = path.join(ROOT, "tests/fixtures/compat");

/** The compatibility inputs under the names the page recognises. */
function inputFiles() {
  const dir = path.join(ARTIFACTS, "outcomes");
  fs.mkdirSync(dir, { recursive: true });
  const copy = (from, to) => {
    fs.copyFileSync(path.join(COMPAT, "inputs", from), path.join(dir, to));
    return path.join(dir, to);
  };
  return [copy("audit.jsonl", "audit.jsonl"), copy("old_verdicts.jsonl", "old_verdicts.jsonl"), copy("new_equal.jsonl", "new_verdicts.jsonl")];
}

/** The CLI's report on the same files under `flags`. */
function cli(files, flags) {
  const [audit, old, nw] = files;
  const run = spawnSync(CLI, ["evaluate", "--audit", audit, "--old-verdicts", old, "--new-verdicts", nw, ...flags], { maxBuffer: 1 << 28 });
  assert.ok([0, 3, 4].includes(run.status), String(run.stderr));
  return { code: run.status, report: JSON.parse(run.stdout.toString("utf8")) };
}

const signed = (x) => (x > 0 ? "+" : x < 0 ? "−" : "±") + Math.abs(x).toFixed(3);

test("an inconclusive decision: the amber banner, the clustered interval and the two policy fields", async () => {
  const page = await openPage(env);
  // The two fields show the core's defaults.
  assert.equal(await page.locator('[name="cluster"]').inputValue(), "template");
  assert.equal(await page.locator('[name="repeats"]').inputValue(), "last");
  await setPolicy(page, { max_samples: "none", task_tol: "0.05", mode: "non_inferiority" });
  const files = inputFiles();
  await page.setInputFiles('[data-testid="file-input"]', files);
  const shown = await decision(page);
  const { code, report } = cli(files, ["--max-samples", "none", "--task-tol", "0.05", "--mode", "non_inferiority"]);
  assert.equal(code, 4);
  assert.equal(shown.reason, report.decision.reason);
  const banner = page.locator('[data-testid="decision"]');
  assert.equal(await banner.getAttribute("data-outcome"), "inconclusive");
  assert.equal(await banner.getAttribute("data-approved"), "false");
  assert.match(await banner.locator("h2").innerText(), /^Inconclusive — keep the old model/);
  // Amber: the banner's border is the warning colour, neither the approved nor the blocked one.
  const colour = await banner.evaluate((el) => getComputedStyle(el).borderTopColor);
  assert.equal(colour, "rgb(154, 103, 0)");
  const needed = report.stats.task.sample_size.cases_needed;
  assert.match(await page.locator('[data-testid="cases-needed"]').innerText(), new RegExp(`About ${needed} cases would settle it`));

  // The task card: the clustered interval the rule used, its clusters and design effect.
  const c = report.stats.task.clustered;
  const interval = await page.locator('[data-testid="clustered-interval"]').innerText();
  assert.ok(interval.startsWith(`${signed(c.delta.low)} to ${signed(c.delta.high)} (cluster-robust t; the rule uses it)`), interval);
  assert.match(await page.locator('[data-testid="clusters"]').innerText(), /^16 /);
  assert.equal(await page.locator('[data-testid="design-effect"]').innerText(), c.design_effect.toFixed(2));
  // Each template row has its interval.
  const cells = await page.locator('[data-testid="template-interval"]').allInnerTexts();
  assert.deepEqual(cells, report.templates.map((t) => `${signed(t.interval.low)} to ${signed(t.interval.high)}`));
  assert.equal(await page.locator('[data-testid="case-runs"]').count(), 0, "no run counts when the last verdict counts");

  // Every verdict counts: the case table shows each case's runs, and the page decides as the CLI.
  await setPolicy(page, { repeats: "mean" });
  await page.locator('[data-testid="case-runs"]').first().waitFor();
  const mean = cli(files, ["--max-samples", "none", "--task-tol", "0.05", "--mode", "non_inferiority", "--repeats", "mean"]).report;
  assert.equal((await decision(page)).reason, mean.decision.reason);
  const first = mean.cases.find((x) => x.status === "regressed");
  const row = page.locator(`[data-testid="case-row"][data-id='${JSON.stringify(first.pipeline_id)}']`);
  const runs = await row.locator('[data-testid="case-runs"]').allInnerTexts();
  assert.deepEqual(runs.map((r) => r.trim()), [`${first.old_passes}/${first.old_runs} runs pass`, `${first.new_passes}/${first.new_runs} runs pass`]);
  assert.match(await page.locator("#dg-results, body").first().innerText(), /McNemar\s+none \(several verdicts a case\)/);

  // No clustering: no clustered interval, Newcombe's decides.
  await setPolicy(page, { repeats: "last", cluster: "none" });
  await page.waitForFunction(() => !document.querySelector('[data-testid="clustered-interval"]'));
  const plain = cli(files, ["--max-samples", "none", "--task-tol", "0.05", "--mode", "non_inferiority", "--cluster", "none"]).report;
  assert.equal((await decision(page)).reason, plain.decision.reason);
  assert.deepEqual(page.errors, []);
  await page.context().close();
});

test("a report made before outcomes existed, opened from a signed decision, shows as it was", async () => {
  // The old build's report (tests/fixtures/compat), signed now so that it is within the page's
  // maximum age (tests/it/compat.rs verifies the old build's own signatures).
  const dir = path.join(ARTIFACTS, "outcomes-old");
  fs.rmSync(dir, { recursive: true, force: true });
  fs.mkdirSync(dir, { recursive: true });
  const key = path.join(dir, "reviewer");
  assert.equal(spawnSync(CLI, ["keygen", "--out", key]).status, 0);
  const reportFile = path.join(COMPAT, "scenarios/ni-policy-file/report.json");
  const envelope = path.join(dir, "decision.dsse.json");
  const sign = spawnSync(CLI, ["sign", reportFile, "--key", `${key}.key.pem`, "--model", "agent-v2", "--model-digest", `sha256:${"ab".repeat(32)}`, "--target", "config.yaml", "--out", envelope]);
  assert.equal(sign.status, 0, String(sign.stderr));
  const report = JSON.parse(fs.readFileSync(reportFile, "utf8"));

  const page = await openPage(env);
  await page.setInputFiles('[data-testid="file-input"]', [envelope, `${key}.pub.pem`]);
  const view = page.locator('[data-testid="signed-decision"][data-valid="true"]');
  await view.waitFor({ timeout: 30000 });
  const banner = view.locator('[data-testid="decision"]');
  assert.equal(await banner.getAttribute("data-outcome"), "blocked");
  assert.equal(await banner.getAttribute("data-reason"), report.decision.reason);
  assert.match(await banner.locator("h2").innerText(), /^Blocked — keep the old model/);
  assert.match(await view.locator('[data-testid="rule"]').innerText(), /lower bound must be ≥ −0\.05/);
  assert.equal(await view.locator('[data-testid="clustered-interval"]').count(), 0);
  assert.equal(await view.locator('[data-testid="template-interval"]').count(), 0);
  assert.equal(await view.locator('[data-testid="cases-needed"]').count(), 0);
  assert.equal(await page.locator('[data-testid="verify-result"] [data-outcome="blocked"]').count(), 1);
  assert.deepEqual(page.errors, []);
  await page.context().close();
});
