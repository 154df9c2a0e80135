// The reviewer's path, driven by the keyboard: open the example, walk the regressed cases with
// j, mark each (1/2/3, a note with n), reload (marks and view come back), export the review,
// sign with it, verify with the CLI (the counts), co-sign; a policy that requires a review
// refuses to sign while a regressed case is unmarked, naming it. Deep links reopen the view
// with the same files and say so with others. The Markdown summary and the HTML report list
// the marked cases with their notes.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import fs from "node:fs";
import path from "node:path";
import crypto from "node:crypto";
import { spawnSync } from "node:child_process";
import { start, openPage, viewerReady, decision, fixtureFiles, ARTIFACTS, CLI, ROOT } from "./harness.mjs";

let env;
before(async () => (env = await start()));
after(async () => env && (await env.close()));

const EXAMPLE = path.join(ROOT, "www/examples");
const exampleFiles = () => ["audit", "old_verdicts", "new_verdicts", "old_trajectories", "new_trajectories"].map((f) => path.join(EXAMPLE, `${f}.jsonl`));
const cli = (args) => spawnSync(CLI, args, { encoding: "utf8" });
const sha256 = (file) => crypto.createHash("sha256").update(fs.readFileSync(file)).digest("hex");

/** Presses Tab until `selector` has the focus (at most `max` times), then `key`. */
async function tabTo(page, selector, key = "Enter", max = 80) {
  for (let i = 0; i < max; i++) {
    if (await page.evaluate((sel) => document.activeElement && document.activeElement.matches(sel), selector)) {
      if (key) await page.keyboard.press(key);
      return;
    }
    await page.keyboard.press("Tab");
  }
  throw new Error(`Tab never reached ${selector}`);
}

/** Waits until the marks are bound to the report (every sha256 in). */
async function marksReady(page) {
  await page.waitForFunction(() => {
    const s = document.querySelector('[data-testid="review-status"]');
    return s && s.textContent.includes("kept in this browser");
  });
}

/** The files downloaded while `action` runs, `n` of them, saved into `dir`. */
async function downloads(page, dir, n, action) {
  const files = [];
  const done = new Promise((resolve) => {
    page.on("download", async (dl) => {
      const file = path.join(dir, dl.suggestedFilename());
      await dl.saveAs(file);
      files.push(file);
      if (files.length === n) resolve();
    });
  });
  await action();
  await done;
  page.removeAllListeners("download");
  return files;
}

const openCase = (page) => page.evaluate(() => {
  const open = document.querySelector('tr[data-testid="case-row"][aria-expanded="true"]');
  return open ? { id: open.dataset.id, index: Number(open.dataset.case) } : null;
});
const chip = async (page, name) => (await page.locator(`[data-filter="${name}"]`).textContent()).trim();

test("the reviewer's path by the keyboard: walk, mark, reload, export, sign with the review, verify, co-sign", async () => {
  const dir = path.join(ARTIFACTS, `review-${process.pid}`);
  fs.rmSync(dir, { recursive: true, force: true });
  fs.mkdirSync(path.join(dir, "model"), { recursive: true });
  fs.writeFileSync(path.join(dir, "model", "weights.bin"), "new weights");
  const page = await openPage(env);
  await tabTo(page, '[data-testid="load-example"]');
  await decision(page);
  await marksReady(page);
  const regressed = Number((await chip(page, "regressed")).match(/\((\d+)\)/)[1]);
  assert.ok(regressed >= 2, `the example has ${regressed} regressed cases`);
  // Focus back on the page's body: the keys work anywhere but in a field.
  await page.evaluate(() => document.activeElement && document.activeElement.blur());
  await page.keyboard.press("?");
  assert.equal(await page.locator('[data-testid="keys-help"]').isVisible(), true);
  await page.keyboard.press("Escape");
  assert.equal(await page.locator('[data-testid="keys-help"]').isVisible(), false);

  // j walks the regressed cases (they come first), each opened; 1/2/3 mark; n writes a note.
  const walked = [];
  for (let k = 0; k < regressed; k++) {
    await page.keyboard.press("j");
    const open = await openCase(page);
    assert.ok(open, `case ${k + 1} is open`);
    assert.equal(await page.locator(`tr[data-case="${open.index}"]`).first().getAttribute("class"), "dg-status-regressed");
    walked.push(open);
    await page.keyboard.press(String((k % 3) + 1));
    if (k === 0) {
      await page.keyboard.press("n");
      await page.keyboard.type("<b>a regression we accept</b> ‮");
      await page.keyboard.press("Escape");
    }
  }
  assert.equal(new Set(walked.map((w) => w.id)).size, regressed);
  // Only one drill-down open: the last case's.
  assert.equal(await page.locator('[data-testid="case-detail"]').count(), 1);
  assert.equal(await chip(page, "marked"), `Marked (${regressed})`);
  assert.equal(await chip(page, "unmarked-regressed"), "Unmarked regressed (0)");
  assert.equal((await page.locator(`tr[data-case="${walked[0].index}"] [data-testid="case-mark"]`).textContent()).trim(), "Accepted ✎");
  // k goes back; the keys never type into the page.
  await page.keyboard.press("k");
  assert.equal((await openCase(page)).index, walked[regressed - 2].index);
  const hash = new URL(page.url()).hash;
  assert.match(hash, /^#report=[0-9a-f]{64}&in=audit:[0-9a-f]{16},/);
  assert.match(hash, new RegExp(`&case=${walked[regressed - 2].index}$`));

  // Reload: the example again; the marks and the view come back.
  await page.reload();
  await viewerReady(page);
  await tabTo(page, '[data-testid="load-example"]');
  await decision(page);
  await marksReady(page);
  await page.waitForFunction((i) => document.querySelector(`tr[data-case="${i}"][aria-expanded="true"]`), walked[regressed - 2].index);
  assert.equal(await chip(page, "marked"), `Marked (${regressed})`);
  assert.equal(await page.locator(`tr.dg-detail[data-case="${walked[0].index}"]`).count(), 0);
  await page.evaluate(() => document.activeElement && document.activeElement.blur());
  await page.keyboard.press("k");
  await page.keyboard.press("k");
  assert.equal((await openCase(page)).index, walked[Math.max(0, regressed - 4)].index);

  // Export the review: one line per mark, each id as the report writes it.
  await page.focus('[data-testid="review-export"]');
  fs.mkdirSync(path.join(dir, "exported"));
  const [reviewFile] = await downloads(page, path.join(dir, "exported"), 1, () => page.keyboard.press("Enter"));
  const lines = fs.readFileSync(reviewFile, "utf8").trim().split("\n").map((l) => JSON.parse(l));
  assert.equal(lines.length, regressed);
  const given = new Map(walked.map((w, k) => [w.id, ["accepted", "label_wrong", "needs_fix"][k % 3]]));
  for (const l of lines) assert.equal(l.mark, given.get(JSON.stringify(l.pipeline_id)));
  assert.equal(lines.find((l) => JSON.stringify(l.pipeline_id) === walked[0].id).note, "<b>a regression we accept</b> ‮");
  assert.ok(lines.every((l) => /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$/.test(l.time)));

  // The Markdown summary lists the marked cases with their notes, escaped.
  await page.focus('[data-testid="export-markdown"]');
  await page.keyboard.press("Enter");
  const md = await page.locator('[data-testid="markdown"]').inputValue();
  assert.match(md, new RegExp(`\\*\\*Review marks\\.\\*\\* ${regressed} case\\(s\\) marked`));
  assert.ok(md.includes("`<b>a regression we accept</b> \u202e`"), md);

  // Sign with the review: a new key pair, the decision and the review file downloaded.
  await page.focus('[data-testid="generate-key"]');
  const keys = await downloads(page, dir, 2, () => page.keyboard.press("Enter"));
  const pubA = keys.find((f) => f.endsWith(".pub.pem"));
  const digest = cli(["digest", path.join(dir, "model")]).stdout.trim();
  await page.focus('[name="model_name"]');
  await page.keyboard.type("agent-7b-v2");
  await page.focus('[name="model_digest"]');
  await page.keyboard.type(digest);
  await page.focus('[name="target"]');
  await page.keyboard.type("serving.yaml");
  assert.equal(await page.locator('[data-testid="sign-with-review"]').isChecked(), true);
  await page.focus('[data-testid="sign"]');
  const signed = await downloads(page, dir, 2, () => page.keyboard.press("Enter"));
  const envelope = signed.find((f) => f.endsWith("decision.dsse.json"));
  const review = signed.find((f) => f.endsWith(".jsonl"));
  // The file signed is the one exported (the same marks).
  assert.equal(fs.readFileSync(review, "utf8"), fs.readFileSync(reviewFile, "utf8"));
  // The CLI verifies it with the review file and shows the counts.
  const verified = cli(["verify", envelope, "--trusted-key", pubA, "--model-path", path.join(dir, "model"), "--target", "serving.yaml", "--review", review]);
  assert.equal(verified.status, 0, verified.stderr);
  const summary = JSON.parse(verified.stdout);
  assert.equal(summary.review.sha256, sha256(review));
  const thirds = [0, 1, 2].map((m) => walked.filter((_, k) => k % 3 === m).length);
  assert.deepEqual(summary.review.marks, { accepted: thirds[0], label_wrong: thirds[1], needs_fix: thirds[2] });
  assert.deepEqual(summary.review.regressed, { cases: regressed, marked: regressed });
  // Another review file is refused.
  const other = path.join(dir, "other.jsonl");
  fs.writeFileSync(other, fs.readFileSync(review, "utf8").split("\n").slice(1).join("\n"));
  assert.notEqual(cli(["verify", envelope, "--trusted-key", pubA, "--model-path", path.join(dir, "model"), "--target", "serving.yaml", "--review", other]).status, 0);

  // Co-signed in another page: the statement and its review pin as they are.
  const page2 = await openPage(env);
  await page2.setInputFiles('[data-testid="file-input"]', [envelope, pubA]);
  const view = page2.locator('[data-testid="signed-decision"][data-valid="true"]');
  await view.waitFor({ timeout: 30000 });
  assert.match(await view.locator('[data-testid="signed-review"]').innerText(), new RegExp(`${regressed} of ${regressed} regressed case\\(s\\) marked`));
  const keysB = await downloads(page2, dir, 2, () => view.locator('[data-testid="cosign-generate-key"]').click());
  const pubB = keysB.find((f) => f.endsWith(".pub.pem"));
  const [cosigned] = await downloads(page2, dir, 1, () => view.locator('[data-testid="cosign"]').click());
  const both = cli(["verify", cosigned, "--threshold", "2", "--trusted-key", pubA, "--trusted-key", pubB, "--model-path", path.join(dir, "model"), "--target", "serving.yaml", "--review", review]);
  assert.equal(both.status, 0, both.stderr);
  assert.equal(JSON.parse(both.stdout).review.sha256, sha256(review));
  assert.deepEqual(page2.errors, []);
  await page2.context().close();
  // (The reload may abort the first load's favicon request: not an error of the page.)
  assert.deepEqual(page.errors.filter((e) => !/^request failed: .*\/favicon\.svg$/.test(e)), []);
  await page.context().close();
});

test("a policy requiring a review refuses to sign while one regressed case is unmarked, naming it", async () => {
  const dir = path.join(ARTIFACTS, `review-policy-${process.pid}`);
  fs.rmSync(dir, { recursive: true, force: true });
  fs.mkdirSync(dir, { recursive: true });
  const policy = path.join(dir, "policy.json");
  fs.writeFileSync(policy, JSON.stringify({ review: { require: "regressed" } }));
  const page = await openPage(env);
  await page.setInputFiles('[data-testid="file-input"]', [...exampleFiles(), policy]);
  await decision(page);
  await marksReady(page);
  await page.evaluate(() => document.activeElement && document.activeElement.blur());
  const regressed = Number((await chip(page, "regressed")).match(/\((\d+)\)/)[1]);
  const walked = [];
  for (let k = 0; k < regressed; k++) {
    await page.keyboard.press("j");
    walked.push(await openCase(page));
    if (k < regressed - 1) await page.keyboard.press("1");
  }
  assert.equal(await chip(page, "unmarked-regressed"), "Unmarked regressed (1)");
  await page.locator('[data-testid="generate-key"]').click();
  await page.fill('[name="model_name"]', "agent-7b-v2");
  await page.fill('[name="model_digest"]', `sha256:${"ab".repeat(32)}`);
  await page.fill('[name="target"]', "serving.yaml");
  await page.locator('[data-testid="sign"]').click();
  const status = page.locator('[data-testid="sign-status"]');
  await page.waitForFunction(() => document.querySelector('[data-testid="sign-status"]').textContent.startsWith("Cannot sign"));
  const said = await status.textContent();
  assert.match(said, /requires a review mark on every regressed case/);
  assert.ok(said.includes(`1 of ${regressed} unmarked: ${walked[regressed - 1].id}`), said);
  // The filter shows the one left; marked, it signs.
  await page.click('[data-filter="unmarked-regressed"]');
  assert.equal(await page.locator('[data-testid="case-row"]').count(), 1);
  assert.equal(await page.locator('[data-testid="case-row"]').getAttribute("data-id"), walked[regressed - 1].id);
  await page.evaluate(() => document.activeElement && document.activeElement.blur());
  await page.keyboard.press("3");
  const [envelope] = await downloads(page, dir, 2, () => page.locator('[data-testid="sign"]').click());
  assert.ok(fs.existsSync(envelope));
  assert.match(await status.textContent(), /^Signed with the review/);
  assert.deepEqual(page.errors, []);
  await page.context().close();
});

test("a deep link reopens the case with the same files and says so with others; the HTML report lists the marks", async () => {
  const page = await openPage(env);
  await page.setInputFiles('[data-testid="file-input"]', exampleFiles());
  await decision(page);
  await marksReady(page);
  await page.click('[data-filter="improved"]');
  await page.locator('[data-testid="sort-pipeline"]').click();
  await page.locator('[data-testid="sort-pipeline"]').click();
  const row = page.locator('[data-testid="case-row"]').nth(2);
  const id = await row.getAttribute("data-id");
  await row.click();
  await page.locator('[data-testid="mark-needs_fix"]').click();
  await page.locator('[data-testid="mark-note"]').fill("the </td> answer is cut <script>window.__pwned=1</script>");
  const link = page.url();
  assert.match(link, /filter=improved/);
  assert.match(link, /sort=pipeline%3Adesc|sort=pipeline:desc/);
  // The HTML report: the marked case with its note, as text, and a link to its row.
  const [dl] = await Promise.all([page.waitForEvent("download"), page.click('[data-testid="export-html"]')]);
  const html = fs.readFileSync(await dl.path(), "utf8");
  const section = html.slice(html.indexOf('<section class="panel" id="review"'));
  assert.ok(section.includes("the &lt;/td&gt; answer is cut &lt;script&gt;window.__pwned=1&lt;/script&gt;"), section.slice(0, 2000));
  const index = await page.evaluate(() => Number(document.querySelector('tr[data-testid="case-row"][aria-expanded="true"]').dataset.case));
  assert.ok(section.includes(`<a href="#case-${index}">`));
  assert.ok(html.includes(`<tr id="case-${index}" `));

  // The same files in a fresh page: the same filter, sort and case.
  const fresh = await env.browser.newContext({ acceptDownloads: true });
  const page2 = await fresh.newPage();
  await page2.goto(link);
  await viewerReady(page2);
  await page2.setInputFiles('[data-testid="file-input"]', exampleFiles());
  await decision(page2);
  await page2.waitForFunction((i) => document.querySelector(`tr[data-id='${i}'][aria-expanded="true"]`), id);
  assert.equal(await page2.locator('[data-filter="improved"]').getAttribute("aria-pressed"), "true");
  assert.equal(await page2.locator('th[aria-sort="descending"] [data-testid="sort-pipeline"]').count(), 1);
  // Another browser: no marks here (they stay in the browser that made them).
  assert.equal(await chip(page2, "marked"), "Marked (0)");
  await fresh.close();

  // Other files: the link says so and opens nothing.
  const other = await env.browser.newContext();
  const page3 = await other.newPage();
  await page3.goto(link);
  await viewerReady(page3);
  await page3.setInputFiles('[data-testid="file-input"]', fixtureFiles("approved"));
  await decision(page3);
  const note = page3.locator('[data-testid="link-note"]');
  await note.waitFor();
  assert.match(await note.textContent(), /^This link was made for other files \(audit sha256:[0-9a-f]{16}…/);
  assert.equal(await page3.locator('[data-testid="case-detail"]').count(), 0);
  await other.close();
  assert.equal(await page.evaluate(() => window.__pwned), undefined);
  assert.deepEqual(page.errors, []);
  await page.context().close();
});

test("the Compare view lists the review marks that changed, as `diff --review-before --review-after` does", async () => {
  const dir = path.join(ARTIFACTS, "compare-reviews");
  fs.mkdirSync(dir, { recursive: true });
  const scenarios = path.join(ROOT, "tests/fixtures/compat-afae7eb/scenarios");
  const beforeReport = path.join(scenarios, "fixed-answers/report.json");
  const afterReport = path.join(scenarios, "review-required/report.json");
  const beforeReview = path.join(scenarios, "fixed-answers/review.jsonl");
  // The later review: one mark changed, one note changed (to hostile text), one mark gone, one
  // case marked that was not.
  const lines = fs.readFileSync(beforeReview, "utf8").trim().split("\n").map((l) => JSON.parse(l));
  const report = JSON.parse(fs.readFileSync(afterReport, "utf8"));
  const marked = new Set(lines.map((l) => l.pipeline_id));
  const fresh = report.cases.find((c) => !marked.has(c.pipeline_id));
  assert.ok(fresh && lines.length >= 4);
  const later = lines.slice(1).map((l, i) => (i === 0 ? { ...l, mark: l.mark === "needs_fix" ? "accepted" : "needs_fix" } : i === 1 ? { ...l, note: '<img src=x onerror="window.__pwned=1"> \u202e`|' } : l));
  later.push({ pipeline_id: fresh.pipeline_id, mark: "label_wrong" });
  const afterReview = path.join(dir, "after-review.jsonl");
  fs.writeFileSync(afterReview, later.map((l) => JSON.stringify(l)).join("\n") + "\n");
  const out = path.join(dir, "diff.json");
  const made = cli(["diff", beforeReport, afterReport, "--review-before", beforeReview, "--review-after", afterReview, "--out", out, "--markdown", path.join(dir, "diff.md")]);
  assert.ok(made.status === 0 || made.status === 5, made.stderr);
  const expected = JSON.parse(fs.readFileSync(out, "utf8"));
  assert.equal(expected.review_changes.length, 4);

  const page = await openPage(env);
  await viewerReady(page);
  const texts = [beforeReport, afterReport, beforeReview, afterReview].map((f) => fs.readFileSync(f, "utf8"));
  const diff = await page.evaluate(([a, b, ra, rb]) => document.querySelector("deploy-gate-viewer").compare(a, b, { reviews: [ra, rb] }), texts);
  assert.deepEqual(diff.review_changes, expected.review_changes);
  // The diff on screen is the CLI's, byte for byte, review changes and all.
  assert.equal(await page.evaluate(() => document.querySelector("deploy-gate-viewer").diffJson()), fs.readFileSync(out, "utf8"));
  const panel = page.locator('[data-testid="compare-review-changes"]');
  const rows = panel.locator('[data-testid="review-change-row"]');
  assert.equal(await rows.count(), 4);
  const shown = await rows.evaluateAll((trs) => trs.map((tr) => [...tr.children].map((c) => c.textContent)));
  const label = { accepted: "Accepted", label_wrong: "Label wrong", needs_fix: "Needs fix" };
  const side = (m) => (m === null ? "not marked" : `${label[m.mark]}${m.note ? ` — ${m.note}` : ""}`);
  assert.deepEqual(
    shown,
    expected.review_changes.map((c) => [c.pipeline_id, side(c.before), side(c.after), c.before === null ? "marked" : c.after === null ? "unmarked" : c.before.mark !== c.after.mark ? "mark changed" : "note changed"]),
  );
  assert.equal(await panel.locator("img").count(), 0);
  // The Markdown export lists them as the CLI's does.
  await page.locator('[data-testid="compare-export-markdown"]').click();
  const box = page.locator('[data-testid="compare-markdown"]');
  await box.waitFor();
  assert.equal(await box.inputValue(), fs.readFileSync(path.join(dir, "diff.md"), "utf8"));
  assert.match(await box.inputValue(), /\*\*Review marks that changed\*\* \(4\)/);

  // The reviews by hand, one at a time: the page waits for the other; a signed side given a
  // file other than the one it pins says so, naming the file, and the diff still shows.
  const signed = path.join(scenarios, "fixed-answers/decision.dsse.json");
  const key = fs.readFileSync(path.join(ROOT, "tests/fixtures/compat-afae7eb/reviewer.pub.pem"), "utf8");
  await page.evaluate(([a, b, k]) => document.querySelector("deploy-gate-viewer").compare(a, b, { trustedKeys: [k] }), [fs.readFileSync(signed, "utf8"), texts[1], key]);
  assert.equal(await page.locator('[data-testid="compare-review-changes"]').count(), 0);
  await page.setInputFiles('[data-testid="compare-review-input-before"]', afterReview);
  await page.locator('[data-testid="compare-review-waiting"]').waitFor();
  assert.match(await page.locator('[data-testid="compare-review-waiting"]').textContent(), /after evaluation's review file/);
  await page.setInputFiles('[data-testid="compare-review-input-after"]', beforeReview);
  const error = page.locator('[data-testid="compare-review-error"]');
  await error.waitFor();
  assert.match(await error.textContent(), /after-review\.jsonl: not the review file the earlier decision was signed with/);
  assert.equal(await page.locator('[data-testid="compare-decision"]').count(), 1);
  // Swapped in the right places, the signed side's own file: the changes are listed.
  await page.setInputFiles('[data-testid="compare-review-input-before"]', beforeReview);
  await page.setInputFiles('[data-testid="compare-review-input-after"]', afterReview);
  await page.locator('[data-testid="review-change-row"]').first().waitFor();
  assert.equal(await page.locator('[data-testid="review-change-row"]').count(), 4);
  assert.equal(await page.evaluate(() => window.__pwned), undefined);
  assert.deepEqual(page.errors, []);
  await page.context().close();
});

test("in a portal the element's keys work with the focus in it, never elsewhere on the page, and leave the URL alone", async () => {
  const page = await openPage(env, "/www/embed.html");
  await page.evaluate(() => {
    window.__reviews = [];
    document.querySelector("deploy-gate-viewer").addEventListener("dg-review", (e) => window.__reviews.push(e.detail.marks.length));
  });
  await tabTo(page, '[data-testid="load-example"]');
  await decision(page);
  await marksReady(page);
  const regressed = Number((await chip(page, "regressed")).match(/\((\d+)\)/)[1]);
  assert.ok(regressed >= 2);
  // The focus on the portal's own page: the keys are the portal's.
  await page.evaluate(() => document.activeElement && document.activeElement.blur());
  for (const key of ["j", "1", "?", "/"]) await page.keyboard.press(key);
  assert.equal(await openCase(page), null);
  assert.equal(await page.locator('[data-testid="keys-help"]').isVisible(), false);
  assert.equal(await chip(page, "marked"), "Marked (0)");
  // Into the element by Tab (a case row): j opens the first regressed case, 1 marks it, n writes
  // a note; j the next, 3 marks it; k back; ? lists the keys.
  await tabTo(page, '[data-testid="case-row"]', null);
  await page.keyboard.press("j");
  const first = await openCase(page);
  assert.ok(first);
  assert.equal(await page.locator(`tr[data-case="${first.index}"]`).first().getAttribute("class"), "dg-status-regressed");
  await page.keyboard.press("1");
  await page.keyboard.press("n");
  await page.keyboard.type("seen in the portal <i>x</i>");
  await page.keyboard.press("Escape");
  await page.keyboard.press("j");
  const second = await openCase(page);
  assert.notEqual(second.index, first.index);
  await page.keyboard.press("3");
  await page.keyboard.press("k");
  assert.equal((await openCase(page)).index, first.index);
  await page.keyboard.press("?");
  assert.equal(await page.locator('[data-testid="keys-help"]').isVisible(), true);
  await page.keyboard.press("Escape");
  assert.equal(await chip(page, "marked"), "Marked (2)");
  // The marks as the review file; the element said so; the URL is the portal's, untouched.
  const review = await page.evaluate(() => document.querySelector("deploy-gate-viewer").reviewFile());
  const lines = review.trim().split("\n").map((l) => JSON.parse(l));
  assert.deepEqual(lines.map((l) => [l.pipeline_id, l.mark]).sort(), [[first.id, "accepted"], [second.id, "needs_fix"]].map(([id, m]) => [JSON.parse(id), m]).sort());
  assert.equal(lines.find((l) => l.mark === "accepted").note, "seen in the portal <i>x</i>");
  assert.ok((await page.evaluate(() => window.__reviews)).includes(2));
  assert.equal(new URL(page.url()).hash, "");
  assert.deepEqual(page.errors, []);
  await page.context().close();
});
