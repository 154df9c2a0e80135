// What a decision rests on, on the page: verdict files answering 4 of 200 cases are not
// approved (the decision is insufficient and says so); a policy file dropped with the other
// files is the policy (shown in force, with its digest, and used: the decision is the CLI's
// under `--policy` that file); a dropped file meant as a policy that the core refuses blocks the
// evaluation, naming the field, until it is removed.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import fs from "node:fs";
import path from "node:path";
import { spawnSync } from "node:child_process";
import { start, openPage, fixtureFiles, decision, FIXTURES, ARTIFACTS, CLI } from "./harness.mjs";

let env;
before(async () => (env = await start()));
after(async () => env && (await env.close()));

/** Drops files given as {name, text} on the drop zone. */
async function drop(page, items) {
  await page.evaluate((items) => {
    const dt = new DataTransfer();
    for (const { name, text } of items) dt.items.add(new File([text], name, { type: "application/octet-stream" }));
    const zone = document.querySelector('[data-testid="drop-zone"]');
    zone.dispatchEvent(new DragEvent("dragover", { bubbles: true, cancelable: true, dataTransfer: dt }));
    zone.dispatchEvent(new DragEvent("drop", { bubbles: true, cancelable: true, dataTransfer: dt }));
  }, items);
}

const read = (f) => ({ name: path.basename(f), text: fs.readFileSync(f, "utf8") });

/** The CLI's report and JUnit properties for a fixture under `--policy file`. */
function cli(dir, policyFile) {
  const f = (n) => path.join(dir, n);
  fs.mkdirSync(ARTIFACTS, { recursive: true });
  const junit = path.join(ARTIFACTS, `evidence-${process.pid}.xml`);
  const args = ["evaluate", "--audit", f("audit.jsonl"), "--old-verdicts", f("old_verdicts.jsonl"), "--new-verdicts", f("new_verdicts.jsonl")];
  if (fs.existsSync(f("old_trajectories.jsonl"))) args.push("--old-trajectories", f("old_trajectories.jsonl"), "--new-trajectories", f("new_trajectories.jsonl"));
  if (policyFile) args.push("--policy", policyFile);
  args.push("--junit", junit);
  const run = spawnSync(CLI, args, { maxBuffer: 1 << 30 });
  assert.ok([0, 3, 4].includes(run.status), `deploy-gate failed: ${run.stderr}`);
  const xml = fs.readFileSync(junit, "utf8");
  const digest = /<property name="policy.sha256" value="([0-9a-f]{64})"\/>/.exec(xml)[1];
  return { report: JSON.parse(run.stdout.toString("utf8")), digest, status: run.status };
}

test("a dropped policy file is the policy: shown in force with its digest, and used", async () => {
  const page = await openPage(env);
  const dir = path.join(FIXTURES, "approved");
  const policy = { min_samples: 5, task_regression_tol: 0.2, on_insufficient: "approve", mode: "non_inferiority", cluster: "none", seed: 7 };
  fs.mkdirSync(ARTIFACTS, { recursive: true });
  const policyFile = path.join(ARTIFACTS, "gate-policy.json");
  fs.writeFileSync(policyFile, JSON.stringify(policy, null, 2));
  const expected = cli(dir, policyFile);
  const files = [...fixtureFiles("approved").map(read), read(policyFile)];
  await drop(page, files);
  await page.waitForFunction((n) => document.querySelectorAll('[data-testid="file-entry"]').length === n, files.length);
  const roles = await page.locator('[data-testid="file-entry"]').evaluateAll((els) => els.map((e) => e.dataset.role).sort());
  assert.ok(roles.includes("policy"), `the policy file is recognised: ${roles}`);
  const shown = await decision(page);
  assert.equal(shown.reason, expected.report.decision.reason);
  assert.equal(shown.approved, expected.report.decision.approved);
  const note = page.locator('[data-testid="policy-in-force"]');
  assert.equal(await note.getAttribute("data-state"), "in-force");
  assert.equal(await page.locator('[data-testid="policy-in-force-name"]').textContent(), "gate-policy.json");
  assert.equal(await page.locator('[data-testid="policy-in-force-digest"]').textContent(), expected.digest);
  // The form holds the file's fields.
  assert.equal(await page.locator('[name="task_tol"]').inputValue(), "0.2");
  assert.equal(await page.locator('[name="mode"]').inputValue(), "non_inferiority");
  // The headline says what the decision rests on.
  const rests = await page.locator('[data-testid="rests-on"]').textContent();
  assert.match(rests, /^\(rests on \d[\d,]* of \d[\d,]* test cases?\)$/);
  assert.deepEqual(page.errors, []);
  await page.context().close();
});

test("a dropped policy file the core refuses blocks the evaluation until it is removed", async () => {
  const page = await openPage(env);
  await drop(page, [...fixtureFiles("approved").map(read), { name: "policy.json", text: '{"min_samples": "twenty", "mode": "point"}' }]);
  const note = page.locator('[data-testid="policy-in-force"]');
  await page.waitForFunction(() => document.querySelector('[data-testid="policy-in-force"]')?.dataset.state === "refused");
  const message = await note.textContent();
  assert.match(message, /^policy\.json is not a valid policy: min_samples: /, message);
  assert.match(message, /No decision is taken under the default policy/);
  // Once the files are read, the evaluation they would start is refused.
  await page.waitForFunction(() => /^No decision/.test(document.querySelector('[data-testid="status"]').textContent));
  // Long enough for an evaluation of these small files: none is shown.
  await page.waitForTimeout(1500);
  assert.equal(await page.locator('[data-testid="decision"]').count(), 0);
  // Removed: the page decides under the form's policy.
  const entry = page.locator('[data-testid="file-entry"][data-role="policy"]');
  await entry.locator("button").click();
  await decision(page);
  assert.equal(await note.isHidden(), true);
  assert.deepEqual(page.errors, []);
  await page.context().close();
});

test("verdict files answering 4 of 200 cases do not approve", async () => {
  const page = await openPage(env);
  const line = (o) => JSON.stringify(o) + "\n";
  let audit = "";
  let verdicts = "";
  for (let i = 0; i < 200; i++) {
    const id = `p${String(i).padStart(3, "0")}`;
    audit += line({ pipeline_id: id, template_id: `t${i % 10}`, stage_id: "s", stage_type: "llm", input: "q", output: "a" });
    audit += line({ pipeline_id: id, template_id: `t${i % 10}`, verdict: "PASS", is_complete: true });
    if (i < 4) verdicts += line({ pipeline_id: id, verdict: "PASS" });
  }
  await drop(page, [
    { name: "audit.jsonl", text: audit },
    { name: "old_verdicts.jsonl", text: verdicts },
    { name: "new_verdicts.jsonl", text: verdicts },
  ]);
  const shown = await decision(page);
  assert.equal(shown.approved, false);
  assert.match(shown.reason, /^blocked: insufficient evidence \(4 of 200 test cases answered by both models < min_samples 20; old 196 missing, new 196 missing\)$/);
  assert.equal(await page.locator('[data-testid="rests-on"]').textContent(), "(rests on 4 of 200 test cases)");
  assert.match(await page.locator('[data-testid="missing-evidence"]').textContent(), /^Too few test cases were answered by both models/);
  assert.deepEqual(page.errors, []);
  await page.context().close();
});
