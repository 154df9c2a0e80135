// What the models answered, side by side in the case drill-down: read from the dropped verdict
// files by byte range when a row opens (the worker keeps offsets, not answers), compared word by
// word or line by line, and every answer, however hostile, shown as text.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import fs from "node:fs";
import path from "node:path";
import { start, openPage, setPolicy, decision, ARTIFACTS, ROOT } from "./harness.mjs";

let env;
before(async () => (env = await start()));
after(async () => env && (await env.close()));

/** Opens the row of `id` and waits for its answers to be read. */
async function openAnswers(page, id) {
  const row = page.locator(`[data-testid="case-row"][data-id='${JSON.stringify(id)}']`);
  await row.click();
  const box = page.locator('[data-testid="case-answers"]');
  await page.waitForFunction(() => {
    const b = document.querySelector('[data-testid="case-answers"]');
    return b && !b.hasAttribute("aria-busy");
  });
  return box;
}

/** Every element inside `selector`, by tag name, and how many. */
async function tagsIn(page, selector) {
  return page.evaluate((sel) => {
    const tags = {};
    for (const el of document.querySelector(sel).querySelectorAll("*")) tags[el.tagName.toLowerCase()] = (tags[el.tagName.toLowerCase()] || 0) + 1;
    return tags;
  }, selector);
}

test("the example's answers: both side by side, what changed marked word by word, read on demand", async () => {
  const page = await openPage(env);
  await page.click('[data-testid="load-example"]');
  await decision(page);
  await page.click('[data-filter="regressed"]');
  const row = page.locator('[data-testid="case-row"]').first();
  const id = JSON.parse(await row.getAttribute("data-id"));
  const box = await openAnswers(page, id);
  const oldText = await box.locator('[data-testid="answer-old-text"]').textContent();
  const newText = await box.locator('[data-testid="answer-new-text"]').textContent();
  assert.notEqual(oldText, newText);
  // The example's files: the record's answer, as the file holds it.
  const records = (side) => fs.readFileSync(path.join(ROOT, "www/examples", `${side}_verdicts.jsonl`), "utf8").trim().split("\n").map((l) => JSON.parse(l));
  const answerOf = (side) => {
    const output = records(side).filter((r) => r.pipeline_id === id).at(-1).output;
    return typeof output === "string" ? output : null;
  };
  for (const [side, shown] of [["old", oldText], ["new", newText]]) {
    const expected = answerOf(side);
    if (expected !== null) assert.equal(shown, expected, side);
  }
  // A regression: the verdicts differ, so some words are marked on each side.
  assert.ok((await box.locator("del").count()) > 0, "struck words in the old answer");
  assert.ok((await box.locator("ins").count()) > 0, "underlined words in the new answer");
  const verdicts = await box.locator('[data-testid="answer-old-verdict"]').textContent();
  assert.match(verdicts, /^Verdict read: /);
  assert.deepEqual(page.errors, []);
});

/** Hostile answers, one per case. */
const TEN_MB = 10 * 1024 * 1024;
const HOSTILE = {
  "h-script": "<script>window.__pwned = 1</script><img src=x onerror=\"window.__pwned = 2\"><style>body{display:none}</style>",
  "h-url": "javascript:window.__pwned=3",
  "h-link": '<a href="javascript:window.__pwned=4">click</a> [x](javascript:alert(1)) https://example.invalid/',
  "h-bidi": "\u202Eevil\u202C \u2066isolate\u2069 done",
  "h-nul": "before\u0000after",
  "h-big": "word ".repeat(TEN_MB / 5),
  // Two UTF-16 units a character: folded at 4,000 units, counted in characters.
  "h-emoji": "🚀".repeat(5000),
};

function hostileFiles() {
  const dir = path.join(ARTIFACTS, "hostile-answers");
  fs.mkdirSync(dir, { recursive: true });
  const ids = [...Object.keys(HOSTILE), "h-surrogate", "h-deep", "h-object", "h-none"];
  const audit = [];
  for (const id of ids) {
    audit.push(JSON.stringify({ pipeline_id: id, stage_id: "s1", stage_type: "llm", input: `input ${id}`, output: "out" }));
    audit.push(JSON.stringify({ pipeline_id: id, template_id: "t", verdict: "PASS", is_complete: true, error: null }));
  }
  const line = (id, verdict, output) => `{"pipeline_id": ${JSON.stringify(id)}, "verdict": "${verdict}"${output === undefined ? "" : `, "output": ${output}`}}`;
  const oldV = [];
  const newV = [];
  for (const id of ids) {
    let output;
    if (id in HOSTILE) output = JSON.stringify(HOSTILE[id]);
    else if (id === "h-surrogate") output = '"\\udc80 a lone surrogate"';
    // Deeper than the page lays out (64), within what JSON readers take (serde_json's 128).
    else if (id === "h-deep") output = "[".repeat(120) + '"<b>deep</b>"' + "]".repeat(120);
    // Written by hand: a 30-digit integer that JavaScript's numbers cannot hold.
    else if (id === "h-object") output = '{"role": "assistant", "content": "<iframe src=javascript:window.__pwned=5>", "tool_calls": [{"id": 123456789012345678901234567890}]}';
    oldV.push(line(id, "PASS", output));
    newV.push(line(id, "FAIL", JSON.stringify("a plain answer <b>not bold</b>")));
  }
  fs.writeFileSync(path.join(dir, "audit.jsonl"), audit.join("\n") + "\n");
  fs.writeFileSync(path.join(dir, "old_verdicts.jsonl"), oldV.join("\n") + "\n");
  fs.writeFileSync(path.join(dir, "new_verdicts.jsonl"), newV.join("\n") + "\n");
  return ["audit.jsonl", "old_verdicts.jsonl", "new_verdicts.jsonl"].map((n) => path.join(dir, n));
}

for (const [where, pathname] of [
  ["the page", "/www/index.html"],
  ["the element in a portal's page", "/www/embed.html"],
  ["the single-file viewer", "/pkg/deploy-gate-viewer.html"],
]) {
  test(`hostile answers are shown as text and break nothing: ${where}`, () => hostileAnswersIn(pathname));
}

async function hostileAnswersIn(pathname) {
  const files = hostileFiles();
  const page = await openPage(env, pathname);
  await setPolicy(page, { min_samples: "1" });
  await page.setInputFiles('[data-testid="file-input"]', files);
  await decision(page, 60_000);
  for (const id of ["h-script", "h-url", "h-link", "h-bidi", "h-nul", "h-big", "h-emoji", "h-surrogate", "h-deep", "h-object", "h-none"]) {
    const box = await openAnswers(page, id);
    const tags = await tagsIn(page, '[data-testid="case-answers"]');
    for (const tag of Object.keys(tags)) assert.ok(["p", "div", "strong", "span", "pre", "del", "ins", "button", "em", "code"].includes(tag), `${id}: a <${tag}> in the answers`);
    assert.equal(await box.locator("a, img, script, style, iframe").count(), 0, id);
    const shown = id === "h-none" ? null : await box.locator('[data-testid="answer-old-text"]').textContent();
    if (id === "h-big") {
      // Folded: a screen of it, with the rest on demand; not compared (too long), said so.
      assert.equal(shown, HOSTILE[id].slice(0, 4000), "its first 4,000 characters");
      assert.match(await box.locator('[data-testid="answers-note"]').textContent(), /shown apart/);
      // Megabytes laid out at once freeze a page for seconds: 200,000 characters more a click.
      const more = box.locator('[data-testid="answer-old-show-more"]');
      assert.equal(await more.textContent(), `show more (${HOSTILE[id].length - 4000} more characters)`);
      await more.click();
      assert.equal(await box.locator('[data-testid="answer-old-text"]').textContent(), HOSTILE[id].slice(0, 204000));
      assert.equal(await page.evaluate(() => 1 + 1), 2, "the page answers");
    } else if (id === "h-emoji") {
      assert.equal(shown, "🚀".repeat(2000));
      assert.equal(await box.locator('[data-testid="answer-old-show-all"]').textContent(), "show all (3000 more characters)");
    } else if (id === "h-surrogate") {
      assert.equal(shown, '"\\udc80 a lone surrogate"', "shown as written");
    } else if (id === "h-deep") {
      assert.ok(shown.startsWith("[[[[") && shown.includes('"<b>deep</b>"'), "shown as written, not laid out");
    } else if (id === "h-object") {
      assert.match(shown, /"id": 123456789012345678901234567890/, "every digit kept");
      assert.match(shown, /<iframe src=javascript:window.__pwned=5>/);
    } else if (id === "h-none") {
      assert.match(await box.locator('[data-testid="answer-old"]').textContent(), /No answer in the record/);
      assert.equal(await box.locator('[data-testid="answer-new-text"]').textContent(), "a plain answer <b>not bold</b>");
      assert.match(await box.locator('[data-testid="answers-note"]').textContent(), /Only one record/);
    } else {
      assert.equal(shown, HOSTILE[id], id);
    }
    // Close the row again.
    await page.locator(`[data-testid="case-row"][data-id='${JSON.stringify(id)}']`).click();
  }
  assert.equal(await page.evaluate(() => window.__pwned), undefined, "no answer ran");
  assert.equal(await page.locator("body").isVisible(), true);
  assert.deepEqual(page.errors, []);
  await page.context().close();
}

test("a verdict file changed on disk after it was read: the answers say so, the decision stands", async () => {
  const files = hostileFiles();
  const dir = path.join(ARTIFACTS, "changed-answers");
  fs.mkdirSync(dir, { recursive: true });
  const copies = files.map((f) => {
    const to = path.join(dir, path.basename(f));
    fs.copyFileSync(f, to);
    return to;
  });
  const page = await openPage(env);
  await setPolicy(page, { min_samples: "1" });
  await page.setInputFiles('[data-testid="file-input"]', copies);
  await decision(page, 60_000);
  fs.writeFileSync(copies[1], "changed\n");
  const box = await openAnswers(page, "h-script");
  assert.match(await box.locator('[data-testid="answers-error"]').textContent(), /old_verdicts\.jsonl/);
  assert.equal(await page.locator('[data-testid="decision"]').count(), 1);
});

test("answers in a CSV verdict file's output column", async () => {
  const dir = path.join(ARTIFACTS, "csv-answers");
  fs.mkdirSync(dir, { recursive: true });
  const audit = [];
  for (const id of ["c1", "c2"]) {
    audit.push(JSON.stringify({ pipeline_id: id, stage_id: "s1", stage_type: "llm", input: `input ${id}`, output: "out" }));
    audit.push(JSON.stringify({ pipeline_id: id, template_id: "t", verdict: "PASS", is_complete: true, error: null }));
  }
  fs.writeFileSync(path.join(dir, "audit.jsonl"), audit.join("\n") + "\n");
  fs.writeFileSync(path.join(dir, "old_verdicts.csv"), 'pipeline_id,verdict,output\nc1,PASS,"It is fine, ""really"".\nVerdict: PASS"\nc2,PASS,\n');
  fs.writeFileSync(path.join(dir, "new_verdicts.csv"), 'pipeline_id,verdict,output\nc1,FAIL,"It is not fine.\nVerdict: FAIL"\nc2,PASS,ok\n');
  const page = await openPage(env);
  await setPolicy(page, { min_samples: "1" });
  await page.setInputFiles('[data-testid="file-input"]', ["audit.jsonl", "old_verdicts.csv", "new_verdicts.csv"].map((n) => path.join(dir, n)));
  await decision(page, 60_000);
  const box = await openAnswers(page, "c1");
  assert.equal(await box.locator('[data-testid="answer-old-text"]').textContent(), 'It is fine, "really".\nVerdict: PASS');
  assert.equal(await box.locator('[data-testid="answer-new-text"]').textContent(), "It is not fine.\nVerdict: FAIL");
  const marked = async (tag) => (await box.locator(tag).allTextContents()).join("|");
  assert.match(await marked("ins"), /not/);
  assert.match(await marked("ins"), /FAIL/);
  assert.match(await marked("del"), /PASS/);
  assert.doesNotMatch(await marked("del"), /Verdict/);
  assert.deepEqual(page.errors, []);
});

test("trajectory results that name their case's pipeline_id are shown with it, old beside new", async () => {
  const dir = path.join(ARTIFACTS, "case-trajectories");
  fs.mkdirSync(dir, { recursive: true });
  const examples = path.join(ROOT, "www/examples");
  for (const f of ["audit.jsonl", "old_verdicts.jsonl", "new_verdicts.jsonl"]) fs.copyFileSync(path.join(examples, f), path.join(dir, f));
  const ids = fs.readFileSync(path.join(examples, "old_verdicts.jsonl"), "utf8").trim().split("\n").map((l) => JSON.parse(l).pipeline_id);
  // Each result names a case; the first case has two new results (the last one counts); one
  // result names no case and one a case that is not in the test set.
  const result = (k, judge, extra = {}) => ({ trajectory_id: `t${k}`, overall_judge_score: judge, tac_score: 0.5, scsr_score: 0.25, iasa_score: 1, egs_score: 0.75, arr_score: 0.1, lcf_score: 0, ...extra });
  const old = ids.map((id, k) => ({ ...result(k, 0.6), pipeline_id: id }));
  const nw = [{ ...result(900, 0.1), pipeline_id: ids[0] }, ...ids.map((id, k) => ({ ...result(k, 0.9, { lcf_score: 2 }), pipeline_id: id })), result(901, 0.5), { ...result(902, 0.5), pipeline_id: "not-a-case" }];
  fs.writeFileSync(path.join(dir, "old_trajectories.jsonl"), old.map((r) => JSON.stringify(r)).join("\n") + "\n");
  // The new verdict record of the second case names its result by trajectory_id (one that names
  // no case), which wins over the result naming its pipeline_id.
  const newRecords = fs.readFileSync(path.join(examples, "new_verdicts.jsonl"), "utf8").trim().split("\n").map((l) => JSON.parse(l));
  const withIds = newRecords.map((r) => (r.pipeline_id === ids[1] ? { ...r, trajectory_id: "t901" } : r));
  fs.writeFileSync(path.join(dir, "new_verdicts.jsonl"), withIds.map((r) => JSON.stringify(r)).join("\n") + "\n");
  fs.writeFileSync(path.join(dir, "new_trajectories.jsonl"), nw.map((r) => JSON.stringify(r)).join("\n") + "\n");
  const page = await openPage(env);
  await page.setInputFiles('[data-testid="file-input"]', ["audit.jsonl", "old_verdicts.jsonl", "new_verdicts.jsonl", "old_trajectories.jsonl", "new_trajectories.jsonl"].map((f) => path.join(dir, f)));
  await decision(page);
  const row = page.locator(`[data-testid="case-row"][data-id='${JSON.stringify(ids[0])}']`);
  await row.click();
  const box = page.locator('[data-testid="case-trajectory"]');
  await box.locator("table").waitFor();
  const rows = await box.locator("tbody tr").evaluateAll((trs) => trs.map((tr) => [...tr.children].map((c) => c.textContent)));
  // The composite as the reference computes it: (judge + tac + scsr + iasa + egs)/5 − 0.2·arr − 0.1·lcf (lcf > 0).
  const composite = (judge, lcf) => Math.max(0, Math.min(1, (judge + 0.5 + 0.25 + 1 + 0.75) / 5 - 0.2 * 0.1 - (lcf > 0 ? 0.1 * lcf : 0)));
  assert.deepEqual(rows[0], ["trajectory", "t0", "t0"], "the last new result of the case counts");
  assert.equal(rows[1][0].startsWith("composite ("), true);
  assert.ok(Math.abs(Number(rows[1][1]) - composite(0.6, 0)) < 1e-12, rows[1][1]);
  assert.ok(Math.abs(Number(rows[1][2]) - composite(0.9, 2)) < 1e-12, rows[1][2]);
  assert.deepEqual(rows[2], ["overall_judge_score", "0.6", "0.9"]);
  assert.deepEqual(rows.at(-1), ["lcf_score", "0", "2"]);
  // The second case: its new record's trajectory_id names the result.
  await page.locator(`[data-testid="case-row"][data-id='${JSON.stringify(ids[1])}']`).click();
  const named = page.locator('[data-testid="case-trajectory"]').filter({ hasText: "t901" });
  await named.locator("table").waitFor();
  const second = await named.locator("tbody tr").first().evaluate((tr) => [...tr.children].map((c) => c.textContent));
  assert.deepEqual(second, ["trajectory", "t1", "t901"]);
  assert.deepEqual(page.errors, []);
  await page.context().close();
});
