// The Compare view: two reports (or two signed decisions with their keys) dropped on the page are
// compared by the core as `deploy-gate diff` compares them. Its exports are the CLI's files byte
// for byte; the flips are in the CLI's order with ids as the core gives them (an integer wider
// than 64 bits keeps its digits, 5 and "5" are two rows); hostile values run nothing; a tampered
// or untrusted envelope is refused; and a 200,000-case pair is compared without blocking the page
// (the figures are printed; the main thread's longest gap is measured with a 10 ms timer).
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { execFileSync, spawnSync } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { start, openPage, watchMainThread, mainThreadReport, FIXTURES, ARTIFACTS, ROOT, CLI, GEN_AUDIT } from "./harness.mjs";

let env;
let tmp;
before(async () => {
  env = await start();
  tmp = fs.mkdtempSync(path.join(os.tmpdir(), "dg-compare-"));
});
after(async () => {
  if (env) await env.close();
  if (tmp) fs.rmSync(tmp, { recursive: true, force: true });
});

/** `deploy-gate evaluate` into `out` (every case kept); the report's path. */
function evaluate(dir, out, { swap = false, old, neu, flags = [] } = {}) {
  const f = (n) => path.join(dir, n);
  let [o, n] = [old || f("old_verdicts.jsonl"), neu || f("new_verdicts.jsonl")];
  if (swap) [o, n] = [n, o];
  const run = spawnSync(CLI, ["evaluate", "--audit", f("audit.jsonl"), "--old-verdicts", o, "--new-verdicts", n, "--min-samples", "1", "--max-samples", "none", "--on-insufficient", "approve", "--max-missing", "1", ...flags, "--out", out]);
  if (run.status !== 0 && run.status !== 3) throw new Error(`evaluate failed: ${run.stderr}`);
  return out;
}

/** `deploy-gate diff` with every rendering: {status, json, markdown, html, junit} (bytes). */
function cliDiff(before, after, extra = []) {
  const dir = fs.mkdtempSync(path.join(tmp, "cli-"));
  const p = (n) => path.join(dir, n);
  const run = spawnSync(CLI, ["diff", before, after, ...extra, "--out", p("d.json"), "--markdown", p("d.md"), "--html", p("d.html"), "--junit", p("d.xml")], { maxBuffer: 1 << 30 });
  if (run.status !== 0 && run.status !== 5) throw new Error(`diff failed: ${run.stderr}`);
  const read = (n) => fs.readFileSync(p(n));
  return { status: run.status, json: read("d.json"), markdown: read("d.md"), html: read("d.html"), junit: read("d.xml") };
}

async function downloadBytes(page, selector) {
  const [dl] = await Promise.all([page.waitForEvent("download"), page.click(selector)]);
  return fs.readFileSync(await dl.path());
}

/** The flips of a diff JSON with their ids as written (raw JSON text: an integer keeps its digits). */
function rawFlipIds(json) {
  const text = json.toString("utf8");
  const start = text.indexOf('"flips": [');
  const end = text.indexOf('"templates": [');
  return [...text.slice(start, end).matchAll(/"pipeline_id": ((?:"(?:[^"\\]|\\.)*")|-?\d+),\n\s*"template_id": [^\n]*\n\s*"model": "(old|new)"/g)].map((m) => [m[1], m[2]]);
}

async function comparedView(page) {
  await page.locator('[data-testid="compare-decision"]').waitFor({ timeout: 120_000 });
  return page.locator('[data-testid="compare-decision"]');
}

const shownIds = (page) => page.locator('[data-testid="flip-row"]').evaluateAll((rows) => rows.map((r) => [r.dataset.id, r.dataset.model]));

test("two reports dropped: the Compare view shows the CLI's diff and exports its bytes", async () => {
  const dir = path.join(FIXTURES, "approved");
  const before = evaluate(dir, path.join(tmp, "approved-before.json"));
  const after = evaluate(dir, path.join(tmp, "approved-after.json"), { swap: true });
  const cli = cliDiff(before, after);
  assert.equal(cli.status, 5);
  const want = JSON.parse(cli.json);

  const page = await openPage(env);
  const events = page.evaluate(() => new Promise((resolve) => document.querySelector("deploy-gate-viewer").addEventListener("dg-diff", (e) => resolve(e.detail.diff), { once: true })));
  await page.setInputFiles('[data-testid="file-input"]', [before, after]);
  const banner = await comparedView(page);
  assert.equal(await banner.getAttribute("data-changed"), "true");
  assert.equal(await banner.getAttribute("data-before"), want.decision.before);
  assert.equal(await banner.getAttribute("data-after"), want.decision.after);
  // The headline says what the decisions rest on, as the CLI's Markdown headline does.
  const rests = cli.markdown.toString("utf8").split("\n")[0].match(/ (\(rests on \d[\d,]* of \d[\d,]*(?: → \d[\d,]* of \d[\d,]*)? test cases?\))$/)[1];
  assert.equal(await page.locator('[data-testid="compare-rests-on"]').textContent(), rests);
  assert.equal(await banner.locator("h2").textContent(), `The decision changed: ${want.decision.before} → ${want.decision.after} ${rests}`);
  // The reports are not taken for evaluation inputs.
  assert.equal(await page.locator('[data-testid="file-entry"]').count(), 0);

  // The flips, in the CLI's order (pass → fail first), one page of at most 200.
  const ids = rawFlipIds(cli.json);
  assert.equal(ids.length, want.cases.flips.length);
  assert.deepEqual(await shownIds(page), ids.slice(0, 200));
  assert.equal(await page.locator('[data-testid="flip-count"]').textContent(), `${ids.length} flip(s)`);
  const chips = await page.locator('[data-testid="flip-table"]').locator("xpath=..").locator("button[data-filter]").allTextContents();
  const n = (pred) => want.cases.flips.filter(pred).length;
  assert.deepEqual(chips, [
    `All (${ids.length})`,
    `Pass → fail (${n((f) => f.before_pass && !f.after_pass)})`,
    `Fail → pass (${n((f) => !f.before_pass && f.after_pass)})`,
    `Old model (${n((f) => f.model === "old")})`,
    `New model (${n((f) => f.model === "new")})`,
  ]);
  // Filter and search.
  await page.click('button[data-filter="new"]');
  assert.deepEqual(await shownIds(page), ids.filter(([, m]) => m === "new").slice(0, 200));
  const one = want.cases.flips.find((f) => f.model === "new");
  await page.fill('[data-testid="flip-search"]', String(one.pipeline_id));
  assert.deepEqual(await shownIds(page), [[JSON.stringify(one.pipeline_id), "new"]]);
  await page.fill('[data-testid="flip-search"]', "");
  await page.click('button[data-filter="all"]');
  // Counts, policy and inputs as the CLI's.
  const counts = await page.locator('[data-testid="compare-counts"] tbody tr').evaluateAll((rows) => rows.map((r) => [...r.querySelectorAll("td")].map((td) => Number(td.textContent))));
  const c = want.cases.counts;
  assert.deepEqual(counts, [
    [c.old.fail_to_pass, c.old.pass_to_fail, c.old.verdict_changed],
    [c.new.fail_to_pass, c.new.pass_to_fail, c.new.verdict_changed],
  ]);
  assert.equal(await page.locator('[data-testid="compare-input-row"]').count(), want.inputs.length);
  assert.equal(await page.locator('[data-testid="template-change-row"]').count(), want.templates.length);

  // The exports: the CLI's bytes.
  assert.deepEqual(await downloadBytes(page, '[data-testid="compare-export-json"]'), cli.json);
  assert.deepEqual(await downloadBytes(page, '[data-testid="compare-export-html"]'), cli.html);
  assert.deepEqual(await downloadBytes(page, '[data-testid="compare-export-junit"]'), cli.junit);
  await page.click('[data-testid="compare-export-markdown"]');
  assert.equal(await page.locator('[data-testid="compare-markdown"]').inputValue(), cli.markdown.toString("utf8"));
  // The element: its diff JSON, and the dg-diff event's diff (the CLI's, with ids as shown).
  assert.equal(await page.evaluate(() => document.querySelector("deploy-gate-viewer").diffJson()), cli.json.toString("utf8"));
  const event = await events;
  assert.deepEqual(event.decision, want.decision);
  assert.deepEqual(event.cases.flips.map((f) => f.pipeline_id), want.cases.flips.map((f) => f.pipeline_id));
  assert.deepEqual(Object.keys(event.cases.flips[0]).sort(), [...Object.keys(want.cases.flips[0]), "id_label", "id_kind", "template_text"].sort());

  // Swapped: the other way round, as the CLI says.
  await page.click('[data-testid="compare-swap"]');
  await page.locator('[data-testid="compare-decision"][data-before="blocked"]').waitFor();
  assert.deepEqual(await downloadBytes(page, '[data-testid="compare-export-json"]'), cliDiff(after, before).json);
  // The same from code: compare(before, after) resolves with the diff.
  const fromCode = await page.evaluate(([b, a]) => document.querySelector("deploy-gate-viewer").compare(b, a).then((d) => d.decision), [fs.readFileSync(before, "utf8"), fs.readFileSync(after, "utf8")]);
  assert.deepEqual(fromCode, want.decision);
  assert.deepEqual(page.errors, []);
  await page.context().close();
});

test("an early stop beside the fixed rule: the headline says what each decision rests on, as the CLI's", async () => {
  const examples = path.join(ROOT, "www/examples");
  const files = ["audit", "old_verdicts", "new_verdicts", "old_trajectories", "new_trajectories"];
  const report = (name, flags) => {
    const out = path.join(tmp, name);
    const args = ["evaluate", ...files.flatMap((f) => [`--${f.replace("_", "-")}`, path.join(examples, `${f}.jsonl`)])];
    const run = spawnSync(CLI, [...args, "--mode", "non_inferiority", "--task-tol", "0.05", "--cluster", "none", ...flags, "--out", out]);
    assert.ok([0, 3, 4].includes(run.status), String(run.stderr));
    return out;
  };
  const before = report("early-stop.json", ["--sequential"]);
  const after = report("fixed.json", []);
  const [early, fixed] = [before, after].map((f) => JSON.parse(fs.readFileSync(f, "utf8")));
  assert.ok(early.sequential.used < early.test_set.num_cases, "stopped early");
  assert.equal(early.evidence.rests_on, early.sequential.used);
  const g = (n) => n.toLocaleString("en-US");
  const n = early.test_set.num_cases;
  const rests = `(rests on ${g(early.evidence.rests_on)} of ${g(n)} → ${g(fixed.evidence ? fixed.evidence.rests_on : n)} of ${g(n)} test cases)`;
  const cli = cliDiff(before, after);
  assert.ok(cli.markdown.toString("utf8").split("\n")[0].endsWith(` ${rests}`), cli.markdown.toString("utf8"));

  const page = await openPage(env);
  await page.setInputFiles('[data-testid="file-input"]', [before, after]);
  await comparedView(page);
  assert.equal(await page.locator('[data-testid="compare-rests-on"]').textContent(), rests);
  assert.deepEqual(page.errors, []);
  await page.context().close();
});

test("typed ids: wide integers keep their digits and 5 and \"5\" are two rows", async () => {
  const dir = path.join(FIXTURES, "typed-ids");
  const empty = path.join(tmp, "none.jsonl");
  fs.writeFileSync(empty, "");
  const before = path.join(ROOT, "tests/fixtures/diff/previous/typed-ids.report.json");
  const after = evaluate(dir, path.join(tmp, "typed-after.json"), { old: empty, neu: empty });
  const cli = cliDiff(before, after);
  const ids = rawFlipIds(cli.json);
  assert.ok(ids.some(([id]) => id === "1234567890123456789012345678901234567890123"), JSON.stringify(ids));
  const page = await openPage(env);
  await page.setInputFiles('[data-testid="file-input"]', [before, after]);
  await comparedView(page);
  assert.deepEqual(await shownIds(page), ids);
  const text = await page.locator('[data-testid="flip-table"]').innerText();
  assert.ok(text.includes("1234567890123456789012345678901234567890123"), "every digit shown");
  assert.ok(text.includes("-9223372036854775809"));
  // The string "-7" is shown quoted, the integer -7 as it is: two rows.
  const labels = await page.locator('[data-testid="flip-row"] td:first-child').allTextContents();
  assert.ok(labels.includes('"-7"') && labels.includes("-7"), JSON.stringify(labels));
  assert.deepEqual(await downloadBytes(page, '[data-testid="compare-export-json"]'), cli.json);
  assert.deepEqual(page.errors, []);
  await page.context().close();
});

test("two signed decisions with their key: verified, then compared; tampered or untrusted: refused", async () => {
  const dir = path.join(FIXTURES, "approved");
  const before = evaluate(dir, path.join(tmp, "s-before.json"));
  const after = evaluate(dir, path.join(tmp, "s-after.json"), { swap: true });
  const key = path.join(tmp, "reviewer");
  execFileSync(CLI, ["keygen", "--out", key], { stdio: "ignore" });
  const sign = (report, out) => execFileSync(CLI, ["sign", report, "--key", `${key}.key.pem`, "--model", "m", "--model-digest", `sha256:${"a".repeat(64)}`, "--target", "prod", "--out", out], { stdio: "ignore" });
  const [eb, ea] = [path.join(tmp, "before.dsse.json"), path.join(tmp, "after.dsse.json")];
  sign(before, eb);
  sign(after, ea);
  const cli = cliDiff(eb, ea, ["--trusted-key", `${key}.pub.pem`]);
  const page = await openPage(env);
  await page.setInputFiles('[data-testid="file-input"]', [eb, ea, `${key}.pub.pem`]);
  await comparedView(page);
  assert.match(await page.locator('[data-testid="compare-before"]').innerText(), /signed decision, verified: key id [0-9a-f]{64}/);
  assert.deepEqual(await downloadBytes(page, '[data-testid="compare-export-json"]'), cli.json);
  assert.equal(JSON.parse(cli.json).after.source, "signed");

  // Tampered: the signature check fails, and nothing of it is shown.
  const env0 = JSON.parse(fs.readFileSync(ea, "utf8"));
  const payload = Buffer.from(env0.payload, "base64").toString("utf8").replace('"new_pass":true', '"new_pass":false');
  env0.payload = Buffer.from(payload).toString("base64");
  const tampered = path.join(tmp, "tampered.dsse.json");
  fs.writeFileSync(tampered, JSON.stringify(env0));
  await page.setInputFiles('[data-testid="file-input"]', [eb, tampered, `${key}.pub.pem`]);
  await page.locator('[data-testid="compare-error"]').waitFor();
  assert.match(await page.locator('[data-testid="compare-error"]').textContent(), /tampered\.dsse\.json: the signed decision does not verify \(signature\)/);
  assert.equal(await page.locator('[data-testid="compare-decision"]').count(), 0);
  await page.context().close();

  // Without a key: said, nothing compared.
  const page2 = await openPage(env);
  await page2.setInputFiles('[data-testid="file-input"]', [eb, ea]);
  await page2.locator('[data-testid="compare-error"]').waitFor();
  assert.match(await page2.locator('[data-testid="compare-error"]').textContent(), /add the trusted public keys/);
  assert.deepEqual(page2.errors, []);
  await page2.context().close();
});

test("hostile ids, templates and verdicts are shown as text in the Compare view", async () => {
  const dir = path.join(ROOT, "tests/fixtures/ci/hostile");
  const payload = `<img src=x onerror="window.__xss=1"><script>window.__xss=2</script>`;
  // A report whose ids, templates and verdicts carry markup: the CI fixture's, with one more case.
  const hostileDir = fs.mkdtempSync(path.join(tmp, "hostile-"));
  for (const f of ["audit.jsonl", "old_verdicts.jsonl", "new_verdicts.jsonl"]) fs.copyFileSync(path.join(dir, f), path.join(hostileDir, f));
  fs.appendFileSync(path.join(hostileDir, "audit.jsonl"), JSON.stringify({ pipeline_id: payload, template_id: payload, stage_id: "s", stage_type: "llm", input: "q", output: "a" }) + "\n" + JSON.stringify({ pipeline_id: payload, template_id: payload, verdict: "PASS", is_complete: true, error: null }) + "\n");
  fs.appendFileSync(path.join(hostileDir, "old_verdicts.jsonl"), JSON.stringify({ pipeline_id: payload, verdict: "PASS" }) + "\n");
  fs.appendFileSync(path.join(hostileDir, "new_verdicts.jsonl"), JSON.stringify({ pipeline_id: payload, verdict: payload }) + "\n");
  const before = evaluate(hostileDir, path.join(tmp, "h-before.json"));
  const after = evaluate(hostileDir, path.join(tmp, "h-after.json"), { swap: true });
  const cli = cliDiff(before, after);
  const page = await openPage(env);
  await page.setInputFiles('[data-testid="file-input"]', [before, after]);
  await comparedView(page);
  for (const kind of ["markdown"]) await page.click(`[data-testid="compare-export-${kind}"]`);
  assert.equal(await page.evaluate(() => window.__xss), undefined, "no payload ran");
  const injected = await page.evaluate(() => ({ img: document.querySelectorAll("dg-compare img").length, script: document.querySelectorAll("dg-compare script").length }));
  assert.deepEqual(injected, { img: 0, script: 0 });
  assert.ok((await page.locator('[data-testid="flip-table"]').innerText()).includes(payload), "shown literally");
  assert.deepEqual(await downloadBytes(page, '[data-testid="compare-export-html"]'), cli.html);
  assert.equal(await page.locator('[data-testid="compare-markdown"]').inputValue(), cli.markdown.toString("utf8"));
  assert.deepEqual(page.errors, []);
  await page.context().close();
});

/** The 200,000-case log (the case table's test makes the same one, in .artifacts). */
function generatedCompact() {
  const dir = path.join(ARTIFACTS, "gen-106M-11-compact");
  if (!fs.existsSync(path.join(dir, "new_trajectories.jsonl"))) {
    execFileSync(GEN_AUDIT, ["--size", "106M", "--out", dir, "--seed", "11", "--compact"], { stdio: "ignore" });
  }
  return dir;
}

test("a 200,000-case pair: compared, paged and exported without blocking the page", async () => {
  const dir = generatedCompact();
  const before = path.join(ARTIFACTS, "compare-200k-before.json");
  const after = path.join(ARTIFACTS, "compare-200k-after.json");
  if (!fs.existsSync(after)) {
    evaluate(dir, before);
    evaluate(dir, after, { swap: true });
  }
  const t = Date.now();
  const cli = cliDiff(before, after);
  const cliMs = Date.now() - t;
  const ids = rawFlipIds(cli.json);
  assert.ok(ids.length > 100_000, `${ids.length} flips`);

  const page = await openPage(env);
  await watchMainThread(page);
  const started = Date.now();
  await page.setInputFiles('[data-testid="file-input"]', [before, after]);
  await comparedView(page);
  await page.locator('[data-testid="flip-row"]').first().waitFor();
  const shown = Date.now() - started;
  const { gap } = await mainThreadReport(page);
  // One page of rows in the DOM, in the CLI's order; the last page ends with the last flip.
  const rows = await page.locator('[data-testid="flip-row"]').count();
  assert.ok(rows <= 200, `${rows} rows in the DOM`);
  assert.deepEqual(await shownIds(page), ids.slice(0, rows));
  await page.locator('[data-testid="flip-pager"] button[data-page="last"]').click();
  const last = await shownIds(page);
  assert.deepEqual(last[last.length - 1], ids[ids.length - 1]);
  const searchStart = Date.now();
  await page.fill('[data-testid="flip-search"]', ids[ids.length - 1][0].replace(/"/g, ""));
  await page.locator('[data-testid="flip-count"]').filter({ hasText: /^[1-9]\d* flip\(s\)$/ }).waitFor();
  const searched = Date.now() - searchStart;
  assert.deepEqual(await downloadBytes(page, '[data-testid="compare-export-json"]'), cli.json);
  console.log(
    `compare, 200,000-case pair (${ids.length} flips): the CLI ${cliMs} ms (with every rendering); the page: the diff and its first rows ${shown} ms after the drop, ` +
      `longest main-thread gap ${gap.toFixed(0)} ms (10 ms timer), rows in the DOM ${rows}, a search ${searched} ms`,
  );
  assert.deepEqual(page.errors, []);
  await page.context().close();
});
