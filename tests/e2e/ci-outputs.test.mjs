// The page's Markdown summary ("Copy Markdown summary") is the text `deploy-gate evaluate
// --markdown FILE` writes, byte for byte: both come from the core's renderer.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import fs from "node:fs";
import path from "node:path";
import { start, openPage, fixtureFiles, fixturePolicy, setPolicy, decision, FIXTURES, ROOT, ARTIFACTS, CLI } from "./harness.mjs";

let env;
before(async () => (env = await start()));
after(async () => env && (await env.close()));

/** `deploy-gate evaluate --markdown` on the files with the page's policy fields: the summary. */
function cliMarkdown(files, policy) {
  const role = (n) => files.find((f) => path.basename(f) === n);
  const out = path.join(ARTIFACTS, `ci-${process.pid}-${Date.now()}.md`);
  fs.mkdirSync(ARTIFACTS, { recursive: true });
  const args = ["evaluate", "--audit", files.find((f) => path.basename(f).includes("audit")), "--old-verdicts", role("old_verdicts.jsonl"), "--new-verdicts", role("new_verdicts.jsonl")];
  if (role("old_trajectories.jsonl")) args.push("--old-trajectories", role("old_trajectories.jsonl"), "--new-trajectories", role("new_trajectories.jsonl"));
  const flag = { min_samples: "--min-samples", max_samples: "--max-samples", task_tol: "--task-tol", traj_tol: "--traj-tol", pass_verdicts: "--pass-verdicts", on_insufficient: "--on-insufficient", max_missing: "--max-missing" };
  for (const [k, v] of Object.entries(policy)) args.push(flag[k], v);
  args.push("--markdown", out);
  const run = spawnSync(CLI, args, { stdio: ["ignore", "ignore", "pipe"] });
  if (![0, 3, 4].includes(run.status)) throw new Error(`deploy-gate failed: ${run.stderr}`);
  const text = fs.readFileSync(out, "utf8");
  fs.rmSync(out);
  return text;
}

async function pageMarkdown(page) {
  await page.click('[data-testid="export-markdown"]');
  const box = page.locator('[data-testid="markdown"]');
  await box.waitFor();
  return box.inputValue();
}

for (const name of ["approved", "both-regressed", "no-trajectories"]) {
  test(`the page's Markdown summary is the CLI's --markdown file: ${name}`, async () => {
    const page = await openPage(env);
    const policy = fixturePolicy(name);
    await setPolicy(page, policy);
    const files = fixtureFiles(name);
    await page.setInputFiles('[data-testid="file-input"]', files);
    await decision(page);
    const md = await pageMarkdown(page);
    assert.equal(md, cliMarkdown(files, policy));
    // And what the page's former renderer wrote for this report.
    assert.equal(md, fs.readFileSync(path.join(ROOT, `tests/fixtures/ci/markdown/${name}.md`), "utf8"));
    assert.deepEqual(page.errors, []);
    await page.context().close();
  });
}

test("hostile template ids, errors and file names: the page's summary is the CLI's", async () => {
  const page = await openPage(env);
  const policy = { min_samples: "1" };
  await setPolicy(page, policy);
  const dir = path.join(ROOT, "tests/fixtures/ci/hostile");
  const hostileName = path.join(ARTIFACTS, "ci-hostile", "a&b~`x`<i>audit.jsonl");
  fs.mkdirSync(path.dirname(hostileName), { recursive: true });
  fs.copyFileSync(path.join(dir, "audit.jsonl"), hostileName);
  const files = [hostileName, path.join(dir, "old_verdicts.jsonl"), path.join(dir, "new_verdicts.jsonl")];
  await page.setInputFiles('[data-testid="file-input"]', files);
  assert.equal((await decision(page)).approved, false);
  const md = await pageMarkdown(page);
  assert.equal(md, cliMarkdown(files, policy));
  assert.ok(md.includes("| a\\|b |"), "the pipe stays in its cell");
  assert.ok(md.includes("\\<img src=x onerror=alert(1)\\>"));
  assert.deepEqual(page.errors, []);
  await page.context().close();
});
