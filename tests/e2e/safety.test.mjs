// Every value from a file is shown as text: HTML and script payloads in ids, templates,
// inputs, outputs and verdicts never run and are displayed literally.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import fs from "node:fs";
import path from "node:path";
import { start, openPage, decision, ARTIFACTS } from "./harness.mjs";

let env;
before(async () => (env = await start()));
after(async () => env && (await env.close()));

const PAYLOADS = [
  `<img src=x onerror="window.__xss=(window.__xss||0)+1">`,
  `<script>window.__xss=(window.__xss||0)+1</script>`,
  `javascript:window.__xss=(window.__xss||0)+1`,
  `<svg onload="window.__xss=(window.__xss||0)+1"></svg>`,
  `"><iframe src="javascript:parent.__xss=1"></iframe>`,
];

function hostileFiles() {
  const dir = path.join(ARTIFACTS, "hostile");
  fs.mkdirSync(dir, { recursive: true });
  const audit = [];
  const old = [];
  const neu = [];
  PAYLOADS.forEach((p, i) => {
    const id = `${p}#${i}`;
    const verdict = `PASS`;
    audit.push({ pipeline_id: id, template_id: p, stage_id: p, stage_type: "llm", input: p, output: { html: p }, state_snapshot: { input_text: `${p} (user input)` } });
    audit.push({ pipeline_id: id, stage_id: `s-${i}`, stage_type: "llm", output: p, state_snapshot: { input_text: `${p} (user input)` } });
    audit.push({ pipeline_id: id, template_id: p, verdict, is_complete: true, error: null, episode_reward: p });
    old.push({ pipeline_id: id, verdict: i % 2 ? p : verdict });
    neu.push({ pipeline_id: id, error: p });
  });
  const write = (name, rows) => fs.writeFileSync(path.join(dir, name), rows.map((r) => JSON.stringify(r)).join("\n") + "\n");
  write("audit.jsonl", audit);
  write("old_verdicts.jsonl", old);
  write("new_verdicts.jsonl", neu);
  return ["audit.jsonl", "old_verdicts.jsonl", "new_verdicts.jsonl"].map((f) => path.join(dir, f));
}

test("script and HTML payloads from files are rendered as text and never run", async () => {
  const page = await openPage(env);
  const dialogs = [];
  page.on("dialog", (d) => {
    dialogs.push(d.message());
    d.dismiss();
  });
  await page.fill('[name="min_samples"]', "1");
  await page.locator('[name="min_samples"]').dispatchEvent("change");
  await page.setInputFiles('[data-testid="file-input"]', hostileFiles());
  const shown = await decision(page);
  assert.equal(shown.numCases, PAYLOADS.length);
  const rows = page.locator('[data-testid="case-row"]');
  for (let i = 0; i < (await rows.count()); i++) await rows.nth(i).click();
  assert.equal(await page.locator('[data-testid="case-detail"]').count(), PAYLOADS.length);
  await page.click('[data-testid="export-markdown"]');
  await page.waitForTimeout(300);

  assert.equal(await page.evaluate(() => window.__xss), undefined, "no payload ran");
  assert.deepEqual(dialogs, []);
  const injected = await page.evaluate(() => ({
    img: document.querySelectorAll("deploy-gate-viewer img").length,
    script: document.querySelectorAll("deploy-gate-viewer script").length,
    iframe: document.querySelectorAll("iframe").length,
    svgOnload: [...document.querySelectorAll("svg")].filter((s) => s.hasAttribute("onload")).length,
    links: document.querySelectorAll("deploy-gate-viewer a[href^='javascript']").length,
  }));
  assert.deepEqual(injected, { img: 0, script: 0, iframe: 0, svgOnload: 0, links: 0 });
  const text = await page.locator("dg-results").innerText();
  for (const p of PAYLOADS) {
    assert.ok(text.includes(p), `payload shown literally: ${p}`);
    assert.ok(text.includes(`${p} (user input)`), "the input is shown literally");
  }
  assert.deepEqual(page.errors, []);
  await page.context().close();
});
