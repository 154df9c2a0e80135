// The page as a reviewer uses it: drop, roles, policy changes, exports, example, embedding,
// cancel, and a 200 MB log while the page stays responsive.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import fs from "node:fs";
import path from "node:path";
import { start, openPage, fixtureFiles, fixturePolicy, cliReport, setPolicy, decision, generated, FIXTURES, ROOT, ARTIFACTS, cliTestSet, downloadText, watchMainThread, mainThreadReport } from "./harness.mjs";

let env;
before(async () => (env = await start()));
after(async () => env && (await env.close()));

async function dropFiles(page, files) {
  const payload = files.map((f) => ({ name: path.basename(f), text: fs.readFileSync(f, "utf8") }));
  await page.evaluate((items) => {
    const dt = new DataTransfer();
    for (const { name, text } of items) dt.items.add(new File([text], name, { type: "application/x-ndjson" }));
    const zone = document.querySelector('[data-testid="drop-zone"]');
    zone.dispatchEvent(new DragEvent("dragover", { bubbles: true, cancelable: true, dataTransfer: dt }));
    zone.dispatchEvent(new DragEvent("drop", { bubbles: true, cancelable: true, dataTransfer: dt }));
  }, payload);
}

test("files dropped on the drop zone are recognised and evaluated", async () => {
  const page = await openPage(env);
  await setPolicy(page, fixturePolicy("approved"));
  await dropFiles(page, fixtureFiles("approved"));
  const shown = await decision(page);
  const cli = JSON.parse(cliReport(path.join(FIXTURES, "approved"), fixturePolicy("approved")));
  assert.deepEqual(shown, { approved: cli.decision.approved, reason: cli.decision.reason, numCases: cli.decision.num_cases });
  const roles = await page.locator('[data-testid="file-entry"]').evaluateAll((els) => els.map((e) => e.dataset.role).sort());
  assert.deepEqual(roles, ["audit", "new_trajectories", "new_verdicts", "old_trajectories", "old_verdicts"]);
  assert.deepEqual(page.errors, []);
  await page.context().close();
});

test("changing a policy field re-evaluates, and a role can be corrected by hand", async () => {
  const page = await openPage(env);
  const policy = { ...fixturePolicy("task-tolerance"), task_tol: "0.0" };
  await setPolicy(page, policy);
  await page.setInputFiles('[data-testid="file-input"]', fixtureFiles("task-tolerance"));
  const first = await decision(page);
  const dir = path.join(FIXTURES, "task-tolerance");
  assert.equal(first.reason, JSON.parse(cliReport(dir, policy)).decision.reason);
  assert.equal(first.approved, false);

  await setPolicy(page, { task_tol: "0.07" });
  await page.waitForFunction(() => document.querySelector('[data-testid="decision"]')?.dataset.approved === "true");
  const second = await decision(page);
  assert.equal(second.reason, JSON.parse(cliReport(dir, { ...policy, task_tol: "0.07" })).decision.reason);

  // The same file for both models: swapping roles makes old == new.
  const selects = page.locator('[data-testid="file-entry"]');
  const count = await selects.count();
  for (let i = 0; i < count; i++) {
    const entry = selects.nth(i);
    if ((await entry.getAttribute("data-role")) === "new_verdicts") await entry.locator("select").selectOption("ignore");
  }
  await page.locator('[data-testid="status"]').filter({ hasText: "new model's verdicts" }).waitFor();
  assert.equal(await page.locator('[data-testid="decision"]').count(), 0, "no decision is shown while an input is missing");

  await setPolicy(page, { max_samples: "lots" });
  assert.match(await page.locator("dg-policy-form .dg-error").textContent(), /max_samples/);
  assert.deepEqual(page.errors, []);
  await page.context().close();
});

test("the non-inferiority rule: the page decides as the CLI, with intervals, the 2×2 table and McNemar", async () => {
  const page = await openPage(env);
  const policy = { ...fixturePolicy("approved"), task_tol: "0.05", mode: "non_inferiority" };
  await setPolicy(page, { ...policy, mode: undefined });
  await page.locator('[name="mode"]').selectOption("non_inferiority");
  await page.setInputFiles('[data-testid="file-input"]', fixtureFiles("approved"));
  const shown = await decision(page);
  const cli = JSON.parse(cliReport(path.join(FIXTURES, "approved"), policy));
  assert.equal(shown.reason, cli.decision.reason);
  assert.match(shown.reason, /^approved: non-inferiority shown/);
  assert.match(await page.locator('[data-testid="rule"]').textContent(), /^Non-inferiority rule/);
  assert.equal(await page.locator('[data-testid="error-bar"]').count(), 2);
  const cells = await page.locator('[data-testid="two-by-two"] td.dg-num').allTextContents();
  const t = cli.stats.task.table;
  assert.deepEqual(cells.map(Number), [t.both_pass, t.old_only, t.new_only, t.both_fail]);
  assert.match(await page.locator('[data-testid="sample-size"]').textContent(), /would need about \d+ cases/);

  await setPolicy(page, { traj_tol: "0.01" });
  await page.waitForFunction(() => document.querySelector('[data-testid="decision"]')?.dataset.approved === "false");
  assert.equal((await decision(page)).reason, JSON.parse(cliReport(path.join(FIXTURES, "approved"), { ...policy, traj_tol: "0.01" })).decision.reason);
  assert.deepEqual(page.errors, []);
  await page.context().close();
});

test("the bundled example, the markdown summary and keyboard drill-down", async () => {
  const page = await openPage(env);
  await page.click('[data-testid="load-example"]');
  const shown = await decision(page);
  const cli = JSON.parse(cliReport(path.join(ROOT, "www/examples"), {}));
  assert.equal(shown.reason, cli.decision.reason);
  assert.equal(shown.numCases, cli.decision.num_cases);
  await page.click('[data-testid="export-markdown"]');
  const md = await page.locator('[data-testid="markdown"]').inputValue();
  assert.match(md, /^## deploy-gate: /);
  assert.ok(md.includes(cli.decision.reason));
  const row = page.locator('[data-testid="case-row"]').first();
  await row.focus();
  await page.keyboard.press("Enter");
  assert.equal(await row.getAttribute("aria-expanded"), "true");
  await page.locator('[data-testid="case-detail"]').first().waitFor();
  await page.click('button[data-filter="regressed"]');
  const statuses = await page.locator('[data-testid="case-row"] td.dg-status').allTextContents();
  assert.ok(statuses.every((s) => s === "regressed"));
  assert.equal(statuses.length, cli.cases.filter((c) => c.status === "regressed").length);
  assert.deepEqual(page.errors, []);
  await page.context().close();
});

test("an unusable file is reported with its name and line, and no decision is shown", async () => {
  const page = await openPage(env);
  const dir = path.join(ARTIFACTS, "broken");
  fs.mkdirSync(dir, { recursive: true });
  const broken = path.join(dir, "new_verdicts.jsonl");
  fs.writeFileSync(broken, '{"pipeline_id": "a", "verdict": "PASS"}\n{"pipeline_id": "b", "verdict": \n');
  const files = fixtureFiles("approved").filter((f) => !f.endsWith("new_verdicts.jsonl"));
  await page.setInputFiles('[data-testid="file-input"]', [...files, broken]);
  const error = page.locator('[data-testid="error"]');
  await error.waitFor();
  assert.equal(await error.textContent(), "new_verdicts.jsonl (new_verdicts) line 2, column 32: not valid JSON: EOF while parsing a value");
  assert.equal(await page.locator('[data-testid="decision"]').count(), 0);
  await page.context().close();
});

test("a JSON array of verdicts with a byte that is not UTF-8 is refused at its line and column", async () => {
  const page = await openPage(env);
  const dir = path.join(ARTIFACTS, "broken-array");
  fs.mkdirSync(dir, { recursive: true });
  const broken = path.join(dir, "new_verdicts.json");
  fs.writeFileSync(broken, Buffer.concat([Buffer.from('[\n{"pipeline_id": "a", "verdict": "PASS"},\n{"pipeline_id": "b", "verdict": "PA'), Buffer.from([0xff]), Buffer.from('SS"}]\n')]));
  const files = fixtureFiles("approved").filter((f) => !f.endsWith("new_verdicts.jsonl"));
  await page.setInputFiles('[data-testid="file-input"]', [...files, broken]);
  const error = page.locator('[data-testid="error"]');
  await error.waitFor();
  assert.equal(await error.textContent(), "new_verdicts.json (new_verdicts) line 3, column 36: invalid UTF-8 (byte 0xff)");
  assert.equal(await page.locator('[data-testid="decision"]').count(), 0);
  await page.context().close();
});

test("the integer 5 and the string \"5\" are two cases in the page; a JSON object of verdicts that cannot tell them apart is refused", async () => {
  const page = await openPage(env);
  await setPolicy(page, fixturePolicy("typed-ids"));
  await page.setInputFiles('[data-testid="file-input"]', fixtureFiles("typed-ids"));
  const shown = await decision(page);
  assert.equal(shown.numCases, 13);
  const ids = await page.locator('[data-testid="case-row"]').evaluateAll((rows) => rows.map((r) => r.getAttribute("data-id")));
  assert.ok(ids.includes("5") && ids.includes('"5"'), ids.join(" "));
  await page.context().close();

  const dir = path.join(ARTIFACTS, "untyped-twins");
  fs.mkdirSync(dir, { recursive: true });
  const map = path.join(dir, "new_verdicts.json");
  fs.writeFileSync(map, '{\n "5": "PASS",\n "p-1": "PASS"\n}\n');
  const page2 = await openPage(env);
  await setPolicy(page2, fixturePolicy("typed-ids"));
  const files = fixtureFiles("typed-ids").filter((f) => !f.endsWith("new_verdicts.jsonl"));
  await page2.setInputFiles('[data-testid="file-input"]', [...files, map]);
  const error = page2.locator('[data-testid="error"]');
  await error.waitFor();
  assert.match(await error.textContent(), /^new_verdicts\.json \(new_verdicts\) line 2: pipeline id "5" is ambiguous: the audit log holds the integer 5 and the string "5" as two pipelines/);
  assert.equal(await page2.locator('[data-testid="decision"]').count(), 0);
  await page2.context().close();
});

test("a gzip-compressed audit log is streamed through DecompressionStream and decided as the plain one", async () => {
  const zlib = await import("node:zlib");
  const dir = path.join(ARTIFACTS, "gzip");
  fs.mkdirSync(dir, { recursive: true });
  const gz = path.join(dir, "prod-2026-11.jsonl.gz");
  fs.writeFileSync(gz, zlib.gzipSync(fs.readFileSync(path.join(FIXTURES, "approved", "audit.jsonl"))));
  const page = await openPage(env);
  const policy = fixturePolicy("approved");
  await setPolicy(page, policy);
  const files = fixtureFiles("approved").filter((f) => !f.endsWith("audit.jsonl"));
  await page.setInputFiles('[data-testid="file-input"]', [gz, ...files]);
  const shown = await decision(page);
  const cli = JSON.parse(cliReport(path.join(FIXTURES, "approved"), policy));
  assert.deepEqual(shown, { approved: cli.decision.approved, reason: cli.decision.reason, numCases: cli.decision.num_cases });
  const testSet = await downloadText(page, '[data-testid="export-testset"]');
  assert.equal(testSet, cliTestSet(path.join(FIXTURES, "approved"), policy), "pass 2 reads the right lines from the gzip stream");
  assert.deepEqual(page.errors, []);
  await page.context().close();
});

test("the embedding example page shows the same viewer", async () => {
  const page = await openPage(env, "/www/embed.html");
  await page.click('[data-testid="load-example"]');
  const shown = await decision(page);
  assert.ok(shown.numCases > 0);
  assert.deepEqual(page.errors, []);
  await page.context().close();
});

test("a 200 MB log streams through three scan workers with one progress bar while the page stays responsive; cancel stops them all", async () => {
  const dir = generated("200M");
  const files = ["audit.jsonl", "old_verdicts.jsonl", "new_verdicts.jsonl"].map((f) => path.join(dir, f));
  const page = await openPage(env);
  // Three scan workers (and the hash worker), whatever the number of cores here.
  await page.evaluate(() => document.querySelector("deploy-gate-viewer").setAttribute("scan-workers", "3"));

  // Cancel: the first progress text with a rate clicks Cancel at once (the run is then surely
  // in progress, however fast this machine reads).
  await page.evaluate(() => {
    const el = document.querySelector('[data-testid="progress-text"]');
    const observer = new MutationObserver(() => {
      if (!el.textContent.includes("MB/s")) return;
      observer.disconnect();
      document.querySelector('[data-testid="cancel"]').click();
    });
    observer.observe(el, { childList: true, characterData: true, subtree: true });
  });
  await page.setInputFiles('[data-testid="file-input"]', files);
  await page.locator('[data-testid="status"]').filter({ hasText: "Cancelled" }).waitFor();
  assert.equal(await page.locator('[data-testid="decision"]').count(), 0);

  // Then a full run: record every progress text, and what the page's main thread does (it only
  // renders; the workers do the reading).
  await page.evaluate(() => {
    window.__progress = new Set();
    const el = document.querySelector('[data-testid="progress-text"]');
    new MutationObserver(() => window.__progress.add(el.textContent)).observe(el, { childList: true, characterData: true, subtree: true });
  });
  await watchMainThread(page);
  await page.click('[data-testid="file-entry"] >> nth=0 >> button');
  await page.setInputFiles('[data-testid="file-input"]', files[0]);
  const shown = await decision(page, 180000);
  const cli = JSON.parse(cliReport(dir, {}));
  assert.deepEqual(shown, { approved: cli.decision.approved, reason: cli.decision.reason, numCases: cli.decision.num_cases });
  // The decision does not wait for the log's sha256; the exported report does, and then it
  // lists the log as the CLI does (sha256 included).
  const exported = JSON.parse(await downloadText(page, '[data-testid="export-report"]'));
  assert.deepEqual(exported.inputs[0], cli.inputs[0]);
  assert.match(exported.inputs[0].sha256, /^[0-9a-f]{64}$/);
  assert.deepEqual(exported.audit, cli.audit);
  assert.equal(await page.locator('[data-testid="digest-status"]').textContent(), "");
  assert.equal(await page.locator('[data-testid="sign"]').isDisabled(), false);
  const updates = await page.evaluate(() => [...window.__progress].filter((t) => t.includes("MB/s")).length);
  assert.ok(updates >= 1, `progress updated ${updates} time(s)`);
  // The main thread read no more of the three files than the heads it sniffs (the 200 MB log is
  // read by the workers), and took nothing from the worker as one long list.
  const watched = await mainThreadReport(page);
  console.log(`200 MB log: the main thread read ${watched.bytesRead} bytes of the files; longest main-thread gap ${watched.gap.toFixed(0)} ms (10 ms timer)`);
  assert.ok(watched.bytesRead <= 3 * 64 * 1024, `the main thread read ${watched.bytesRead} bytes of the files`);
  assert.ok(watched.longestArray <= 5000, `a message from the worker held a list of ${watched.longestArray}`);
  assert.deepEqual(page.errors, []);
  await page.context().close();
});

test("the log's sha256 is the file's: streamed through the wasm hash by default, by WebCrypto under a budget set on the element", async () => {
  const crypto = await import("node:crypto");
  const sha256 = (file) => crypto.createHash("sha256").update(fs.readFileSync(file)).digest("hex");
  // A small log and a 200 MB one (three scan workers), each with the default (0: every file
  // streams), an empty attribute (the default too), and a budget set on the element: above the
  // file (WebCrypto) or below it (1 MB: streamed).
  const big = generated("200M");
  const runs = [
    { dir: path.join(FIXTURES, "approved"), budget: null, method: "stream" },
    { dir: path.join(FIXTURES, "approved"), budget: "1000000", method: "webcrypto" },
    { dir: big, budget: "", method: "stream" },
    { dir: big, budget: "1000000", method: "stream" },
    { dir: big, budget: String(1 << 30), method: "webcrypto" },
  ];
  for (const { dir, budget, method } of runs) {
    const page = await openPage(env);
    await page.evaluate((budget) => {
      const viewer = document.querySelector("deploy-gate-viewer");
      viewer.setAttribute("timings", "");
      viewer.setAttribute("scan-workers", "3");
      if (budget !== null) viewer.setAttribute("webcrypto-hash-max", budget);
    }, budget);
    const files = ["audit.jsonl", "old_verdicts.jsonl", "new_verdicts.jsonl"].map((f) => path.join(dir, f));
    await page.setInputFiles('[data-testid="file-input"]', files);
    await decision(page, 180000);
    const report = JSON.parse(await downloadText(page, '[data-testid="export-report"]'));
    const audit = report.inputs.find((f) => f.role === "audit");
    assert.equal(audit.sha256, sha256(files[0]), `${dir}, budget ${budget}`);
    // The timeline says which hash ran (written with the decision, or when the digest comes in
    // after it).
    await page.waitForFunction(() => (document.querySelector("deploy-gate-viewer").dataset.timings || "").includes('"digests"'));
    const marks = JSON.parse(await page.evaluate(() => document.querySelector("deploy-gate-viewer").dataset.timings)).map(([what]) => what);
    assert.ok(marks.includes(`hash (${method}) done`), `${dir}, budget ${budget}: ${marks.join(", ")}`);
    for (const step of ["files", "audit", "pass 1", "pass 2", "old_verdicts read", "new_verdicts read", "decision", "digests"]) assert.ok(marks.includes(step), `no ${step} in ${marks.join(", ")}`);
    assert.deepEqual(page.errors, []);
    await page.context().close();
  }
});

test("an audit log replaced while its sha256 is being computed: the report and signing use the new log's digest", async () => {
  const big = generated("200M");
  const page = await openPage(env);
  await page.setInputFiles('[data-testid="file-input"]', ["audit.jsonl", "old_verdicts.jsonl", "new_verdicts.jsonl"].map((f) => path.join(big, f)));
  await decision(page, 180000);
  // Replace the log at once (its digest is most likely still being computed) with a small one.
  const small = path.join(FIXTURES, "approved", "audit.jsonl");
  await page.click('[data-testid="file-entry"] >> nth=0 >> button');
  await page.setInputFiles('[data-testid="file-input"]', small);
  await page.locator('[data-testid="decision"]').waitFor();
  const report = JSON.parse(await downloadText(page, '[data-testid="export-report"]'));
  const audit = report.inputs.find((f) => f.role === "audit");
  const want = (await import("node:crypto")).createHash("sha256").update(fs.readFileSync(small)).digest("hex");
  assert.equal(audit.name, "audit.jsonl");
  assert.equal(audit.bytes, fs.statSync(small).size);
  assert.equal(audit.sha256, want);
  assert.equal(await page.locator('[data-testid="sign"]').isDisabled(), false);
  assert.deepEqual(page.errors, []);
  await page.context().close();
});
