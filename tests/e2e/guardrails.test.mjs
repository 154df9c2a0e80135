// The guardrails card: the bundled example's verdicts with a latency and token usage on every
// record (the new model about 40% slower case by case, its tokens about the same) and a policy
// file with a blocking mean-latency guardrail of at most +10%, besides a blocking token
// guardrail, advisory ones and template_regression. Loaded in the page (the policy through the
// form's file input, which passes the guardrails through unchanged and lists them read-only),
// the decision is blocked as the CLI's on the same files, and the card lists every criterion
// with the CLI's figures (the same text as the CLI's reason), blocking and advisory apart, the
// failing ones first, each latency and token criterion with a plot of its 20 bins. A report
// without guardrails shows no card, and removing the file's guardrails takes the card away. The
// banner's plain words name the guardrails that decided.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { execFileSync, spawnSync } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { start, openPage, decision, downloadText, ROOT, CLI } from "./harness.mjs";

const EXAMPLES = path.join(ROOT, "www/examples");
const FILES = ["audit.jsonl", "old_verdicts.jsonl", "new_verdicts.jsonl", "old_trajectories.jsonl", "new_trajectories.jsonl"];

/** The policy file: two blocking guardrails given in the order within, exceeded (the card puts
 * the exceeded one first), two advisory ones (one with too few cases for a p95: not shown) and
 * an advisory template_regression. */
const POLICY = {
  guardrails: [
    { metric: "completion_tokens", max_difference: 5 },
    { metric: "latency_ms", statistic: "mean", max_increase: "10%", action: "block" },
    { metric: "total_tokens", max_increase: 0.1, action: "advise" },
    { metric: "latency_ms", statistic: "p95", max_increase: "15%", action: "advise" },
  ],
  template_regression: { max_drop: 0.2, min_cases: 5, action: "advise" },
};

let env;
let dir;
before(async () => {
  if (!fs.existsSync(CLI)) execFileSync("cargo", ["build", "--release", "--bin", "deploy-gate"], { cwd: ROOT, stdio: "inherit" });
  dir = fs.mkdtempSync(path.join(os.tmpdir(), "deploy-gate-guardrails-"));
  env = await start();
});
after(async () => {
  if (env) await env.close();
  if (dir) fs.rmSync(dir, { recursive: true, force: true });
});

const readJsonl = (file) =>
  fs
    .readFileSync(file, "utf8")
    .split("\n")
    .filter((l) => l.trim())
    .map((l) => JSON.parse(l));

/** A small deterministic hash of a pipeline id: both models' records of a case get values from
 * it, so the pairs are the same whatever the files' order. */
const hash = (id) => [...String(id)].reduce((a, c) => (a * 31 + c.charCodeAt(0)) % 1000003, 7);

/** The example's files with `latency_ms` and `usage` on every verdict record: old latency
 * 200–490 ms by case, the new one 1.35–1.45 times it; prompt tokens equal, completion tokens
 * within one of the old's. The new model fails every case of the template `fraud/screen` and
 * passes every other case it answers, so its pass rate is the old one's (the point rule with
 * tolerance 0 approves) while that template regresses. And the policy file. */
function guardrailFiles() {
  const cases = new Map(cli(EXAMPLES).report.cases.map((c) => [c.pipeline_id, c]));
  assert.equal([...cases.values()].filter((c) => c.template_id === "fraud/screen").length, 14);
  const old = readJsonl(path.join(EXAMPLES, "old_verdicts.jsonl")).map((r) => {
    const k = hash(r.pipeline_id);
    return { ...r, latency_ms: 200 + (k % 30) * 10, usage: { prompt_tokens: 300 + (k % 50), completion_tokens: 50 + (k % 20) } };
  });
  const nw = readJsonl(path.join(EXAMPLES, "new_verdicts.jsonl")).map((r) => {
    const k = hash(r.pipeline_id);
    const factor = 1.4 + (((k >> 3) % 11) - 5) / 100;
    // A case passes when its verdict is the expected one.
    const c = cases.get(r.pipeline_id);
    const verdict = c.template_id === "fraud/screen" ? "WRONG" : c.expected;
    return { ...r, verdict, latency_ms: Math.round((200 + (k % 30) * 10) * factor * 10) / 10, usage: { prompt_tokens: 300 + (k % 50), completion_tokens: 50 + (k % 20) + ((k % 3) - 1) } };
  });
  const out = path.join(dir, "guardrails");
  fs.mkdirSync(out, { recursive: true });
  const write = (name, lines) => fs.writeFileSync(path.join(out, name), lines.map((l) => JSON.stringify(l)).join("\n") + "\n");
  write("old_verdicts.jsonl", old);
  write("new_verdicts.jsonl", nw);
  for (const f of ["audit.jsonl", "old_trajectories.jsonl", "new_trajectories.jsonl"]) fs.copyFileSync(path.join(EXAMPLES, f), path.join(out, f));
  fs.writeFileSync(path.join(out, "policy.json"), JSON.stringify(POLICY, null, 2));
  return out;
}

/** `deploy-gate evaluate` on a folder of files named as the example's, with its policy file. */
function cli(folder, policy) {
  const f = (n) => path.join(folder, n);
  const args = ["evaluate", "--audit", f("audit.jsonl"), "--old-verdicts", f("old_verdicts.jsonl"), "--new-verdicts", f("new_verdicts.jsonl"), "--old-trajectories", f("old_trajectories.jsonl"), "--new-trajectories", f("new_trajectories.jsonl")];
  if (policy) args.push("--policy", policy);
  const run = spawnSync(CLI, args, { maxBuffer: 1 << 28 });
  assert.ok([0, 3, 4].includes(run.status), String(run.stderr));
  return { report: JSON.parse(run.stdout.toString("utf8")), status: run.status };
}

/** A change as the CLI's reasons write it (src/guardrail/evaluate.rs), written here again. */
function figure(x, relative) {
  if (relative) return `${x * 100 >= 0 ? "+" : ""}${(x * 100).toFixed(1)}%`;
  if (x === 0) return "+0";
  const a = Math.abs(x);
  const t = a >= 100 ? x.toFixed(1) : a >= 0.01 ? x.toFixed(4) : x.toExponential(3);
  return x > 0 ? `+${t}` : t;
}

/** What the card shows, item by item. */
async function shownCard(page) {
  const card = page.locator('[data-testid="guardrails"]');
  await card.waitFor({ timeout: 30000 });
  const group = (action) =>
    card.locator(`[data-testid="guardrails-${action}"] > [data-testid="guardrail"]`).evaluateAll((items) =>
      items.map((li) => {
        const dd = (id) => li.querySelector(`[data-testid="guardrail-${id}"]`)?.textContent ?? null;
        const plot = li.querySelector('[data-testid="guardrail-plot"]');
        return {
          name: li.dataset.name,
          action: li.dataset.action,
          outcome: li.dataset.outcome,
          shownOutcome: li.querySelector('[data-testid="guardrail-outcome"]').textContent,
          values: dd("values"),
          change: dd("change"),
          limit: dd("limit"),
          n: dd("n"),
          plot: plot ? { label: plot.getAttribute("aria-label"), bars: [...plot.querySelectorAll('[data-testid="guardrail-bar"]')].map((b) => Number(b.dataset.count)) } : null,
          templates: [...li.querySelectorAll('[data-testid="regressed-template"]')].map((t) => t.textContent),
        };
      }),
    );
  return { block: await group("block"), advise: await group("advise"), summary: await card.locator('[data-testid="guardrails-summary"]').textContent() };
}

const ORDER = { exceeded: 0, not_shown: 1, within: 2 };

test("a blocking latency guardrail exceeded: blocked as by the CLI, the card with the CLI's figures, the failing first, a plot per criterion", async () => {
  const folder = guardrailFiles();
  const { report, status } = cli(folder, path.join(folder, "policy.json"));
  const g = report.guardrails;
  // The CLI's decision: blocked by the latency guardrail (about +40% against a limit of +10%).
  assert.equal(status, 3);
  assert.equal(report.decision.outcome, "blocked");
  assert.match(report.decision.reason, /^blocked: [^;]*mean latency_ms exceeded its limit/);
  const byName = (statistic, metric) => g.criteria.find((c) => c.statistic === statistic && c.metric === metric);
  const latency = byName("mean", "latency_ms");
  assert.equal(latency.outcome, "exceeded");
  assert.ok(latency.change > 0.35 && latency.change < 0.45, `latency change ${latency.change}`);
  assert.equal(byName("mean", "completion_tokens").outcome, "within");
  assert.equal(byName("p95", "latency_ms").outcome, "not_shown", "72 cases are too few for a p95");
  assert.match(report.decision.reason, /; task rule: no regression/, "the task rule approves");
  assert.deepEqual(g.template_regression.templates.filter((t) => t.regressed).map((t) => t.template_id), ["fraud/screen"]);
  assert.equal(latency.n + latency.excluded, g.cases);

  const page = await openPage(env);
  await page.setInputFiles('[data-testid="policy-file"]', path.join(folder, "policy.json"));
  // The form lists the file's guardrails read-only.
  await page.locator('[data-testid="policy-guardrail"]').first().waitFor({ timeout: 30000 });
  const listed = await page.locator('[data-testid="policy-guardrail"]').allTextContents();
  assert.deepEqual(listed, [
    "blocking: mean completion_tokens, max difference 5",
    "blocking: mean latency_ms, max increase 10%",
    "advisory: mean total_tokens, max increase 10%",
    "advisory: p95 latency_ms, max increase 15%",
    "advisory: template_regression, max drop 0.2, templates of at least 5 cases",
  ]);
  await page.setInputFiles('[data-testid="file-input"]', FILES.map((n) => path.join(folder, n)));
  const shown = await decision(page);
  assert.deepEqual(shown, { approved: false, reason: report.decision.reason, numCases: report.decision.num_cases });
  assert.equal(await page.locator('[data-testid="decision"]').getAttribute("data-outcome"), "blocked");
  assert.match(await page.locator('[data-testid="decision"] h2 + p').textContent(), /^A blocking guardrail is exceeded \(shown beyond its limit\): mean latency_ms\./);

  // The page's own report: the CLI's policy (passed through unchanged) and guardrails.
  const own = JSON.parse(await downloadText(page, '[data-testid="export-report"]'));
  assert.deepEqual(own.policy, report.policy);
  assert.deepEqual(own.guardrails, g);

  const card = await shownCard(page);
  assert.equal(card.summary, `${g.cases} cases; intervals at 95%; ${g.blocking} blocking, each judged exceeded at ${Math.round(g.adjusted_confidence * 10000) / 100}% (the error rate shared among them); quantiles by a seeded bootstrap (seed ${g.seed}, ${g.resamples} resamples).`);
  for (const action of ["block", "advise"]) {
    const expected = g.criteria.filter((c) => c.action === action).map((c) => ({ name: `${c.statistic} ${c.metric}`, outcome: c.outcome }));
    if (g.template_regression.action === action) expected.push({ name: "template_regression", outcome: g.template_regression.outcome });
    // The failing first (a stable order: the policy's within an outcome).
    expected.sort((a, b) => ORDER[a.outcome] - ORDER[b.outcome]);
    assert.deepEqual(card[action].map(({ name, outcome, action: a }) => ({ name, outcome, a })), expected.map((e) => ({ ...e, a: action })));
  }
  assert.deepEqual(card.block.map((c) => c.name), ["mean latency_ms", "mean completion_tokens"]);
  assert.deepEqual(card.advise.map((c) => c.name), ["template_regression", "p95 latency_ms", "mean total_tokens"]);

  for (const item of [...card.block, ...card.advise]) {
    assert.equal(item.shownOutcome, item.outcome.replace("_", " "));
    if (item.name === "template_regression") {
      const t = g.template_regression;
      assert.equal(item.n, `${t.tested} of ${t.tested + t.untested} templates (those with at least ${t.min_cases} cases)`);
      // The regressed templates by name, as text (template ids are the log's JSON values).
      const regressed = t.templates.filter((r) => r.regressed);
      assert.equal(item.templates.length, regressed.length);
      assert.deepEqual(item.templates.map((t) => t.split(" ")[0]), ["fraud/screen"]);
      regressed.forEach((r, i) => assert.ok(item.templates[i].startsWith(`${typeof r.template_id === "string" ? r.template_id : JSON.stringify(r.template_id)} ${r.old.toFixed(3)} → ${r.new.toFixed(3)}`), item.templates[i]));
      continue;
    }
    const c = g.criteria.find((x) => `${x.statistic} ${x.metric}` === item.name);
    const relative = c.limit_kind === "max_increase";
    const fig = (x) => figure(x, relative);
    // The same figures as the CLI's reason lists for this criterion.
    if (c.change === null) {
      assert.equal(item.change, `not measured: ${c.n} of the ${c.min_cases} cases it needs`);
      assert.ok(report.decision.reason.includes(`${item.name} no change measured (limit ${fig(c.limit)}, n ${c.n}, ${c.n} of the ${c.min_cases} cases it needs): not shown`));
    } else {
      const figures = `${fig(c.change)} [${fig(c.low)}, ${fig(c.high)}]`;
      assert.ok(item.change.startsWith(`${figures} (`), `${item.change} against ${figures}`);
      assert.ok(report.decision.reason.includes(`${item.name} ${figures} (limit ${fig(c.limit)}, n ${c.n}`), `the reason lists ${item.name} ${figures}`);
    }
    assert.equal(item.limit, `${relative ? "max increase" : "max difference"} ${fig(c.limit)}`);
    assert.ok(item.n.startsWith(`${c.n} (${c.excluded})`), item.n);
    const value = (x) => figure(x, false).replace(/^\+/, "");
    assert.equal(item.values, `${value(c.old)} → ${value(c.new)}`);
    // Latency and token criteria have their plot: one bar per bin, the report's counts.
    assert.ok(c.distribution, `${item.name} has a distribution`);
    assert.equal(c.distribution.counts.length, 20);
    assert.ok(item.plot, `${item.name} has a plot`);
    assert.deepEqual(item.plot.bars, c.distribution.counts);
    assert.ok(item.plot.label.startsWith(`Paired changes of ${item.name}, case by case: ${c.distribution.counts.reduce((a, b) => a + b, 0)} cases in 20 bins from ${fig(c.distribution.low)} to ${fig(c.distribution.high)}`), item.plot.label);
  }
  // The exceeded latency's plot lies right of the limit: every case slowed by 35–45%.
  const latencyPlot = card.block[0].plot;
  assert.equal(latencyPlot.bars.reduce((a, b) => a + b, 0), latency.n);
  assert.ok(latency.distribution.low > 0.3 && latency.distribution.high < 0.5, JSON.stringify(latency.distribution));

  // Removing the file's guardrails: the task rule's decision, and no card.
  await page.click('[data-testid="policy-file-drop"]');
  await page.locator('[data-testid="guardrails"]').waitFor({ state: "detached", timeout: 30000 });
  const plain = cli(folder).report;
  const again = await decision(page);
  assert.equal(again.reason, plain.decision.reason);
  assert.equal(await page.locator('[data-testid="guardrails"]').count(), 0);
  assert.equal(await page.locator('[data-testid="policy-guardrail"]').count(), 0);
  assert.deepEqual(page.errors, []);
  await page.context().close();
});

test("no guardrails: no card; a policy file the core refuses is named and changes nothing", async () => {
  const { report } = cli(EXAMPLES);
  assert.equal("guardrails" in report, false);
  const page = await openPage(env);
  await page.click('[data-testid="load-example"]');
  const shown = await decision(page);
  assert.equal(shown.reason, report.decision.reason);
  assert.equal(await page.locator('[data-testid="guardrails"]').count(), 0);
  assert.doesNotMatch(await page.locator("dg-results").innerText(), /Guardrails|guardrail/);

  // A policy file with a misspelt guardrail field: the form says which file and field.
  const bad = path.join(dir, "bad-policy.json");
  fs.writeFileSync(bad, JSON.stringify({ guardrails: [{ metric: "latency_ms", max_increse: "10%" }] }));
  await page.setInputFiles('[data-testid="policy-file"]', bad);
  const error = page.locator("dg-policy-form .dg-error");
  await error.waitFor({ state: "visible", timeout: 30000 });
  assert.match(await error.textContent(), /^bad-policy\.json: .*max_increse/);
  assert.equal(await page.locator('[data-testid="decision"]').getAttribute("data-reason"), report.decision.reason);
  assert.equal(await page.locator('[data-testid="guardrails"]').count(), 0);
  assert.deepEqual(page.errors, []);
  await page.context().close();
});

test("the banner's plain words for each way the guardrails take part in the decision", async () => {
  const page = await openPage(env);
  const words = await page.evaluate(async () => {
    const { explain } = await import("/www/components/results-view.js");
    const criterion = (statistic, metric, outcome) => ({ metric, statistic, action: "block", outcome });
    const report = (outcome, reason, criteria, regressed = false, templates = []) => ({
      decision: {
        approved: outcome === "approved", outcome, reason, task_old: 0.8, task_new: outcome === "blocked" && regressed ? 0.6 : 0.8, trajectory_old: null, trajectory_new: null, num_cases: 100,
        details: { task_regressed: regressed, trajectory_regressed: false, task_regression_tol: 0.05, trajectory_regression_tol: 0.05, trajectory_checked: false },
      },
      guardrails: { cases: 100, criteria, ...(templates.length ? { template_regression: { action: "block", outcome: "exceeded", templates } } : {}) },
      test_set: { candidates: 100 },
      policy: { min_samples: 1 },
    });
    return [
      explain(report("inconclusive", "inconclusive: not shown: p95 latency_ms; task rule: no regression on task or trajectory", [criterion("p95", "latency_ms", "not_shown"), criterion("mean", "total_tokens", "within")])),
      explain(report("approved", "approved: the task rule and every blocking guardrail passed; task rule: no regression on task or trajectory", [criterion("mean", "latency_ms", "within")])),
      explain(report("blocked", 'blocked: the task rule blocked, template_regression ("<b>t1</b>") exceeded its limit; task rule: task accuracy regressed', [criterion("mean", "latency_ms", "within")], true, [{ template_id: "<b>t1</b>", regressed: true }])),
    ];
  });
  assert.deepEqual(words, [
    "The task rule approves, but for the blocking guardrail p95 latency_ms the data show neither that the change is within the limit nor that it is beyond it. Keep the old model, and gather more cases to settle it.",
    "The new model is not worse: task accuracy went from 80.0% to 80.0% (trajectory quality was not checked). Every blocking guardrail is within its limit. It may be deployed.",
    "A blocking guardrail is exceeded (shown beyond its limit): template_regression (<b>t1</b>). Task accuracy fell from 80.0% to 60.0%, more than the tolerance of 0.05 allows. Keep the old model.",
  ]);
  assert.deepEqual(page.errors, []);
  await page.context().close();
});
