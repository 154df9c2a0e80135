// The standalone HTML report: the page's "Download HTML report" is the CLI's `--html` file byte
// for byte; the file opened from file:// shows the decision, filters and searches its cases,
// logs no error and loads nothing; hostile values run nothing; the page reopens a dropped report;
// print and dark mode (screenshots in .artifacts/).
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { spawnSync } from "node:child_process";
import { pathToFileURL } from "node:url";
import { start, openPage, fixtureFiles, fixturePolicy, setPolicy, decision, FIXTURES, ARTIFACTS, CLI, ROOT } from "./harness.mjs";

let env;
let tmp;
before(async () => {
  env = await start();
  tmp = fs.mkdtempSync(path.join(os.tmpdir(), "dg-html-"));
});
after(async () => {
  if (env) await env.close();
  if (tmp) fs.rmSync(tmp, { recursive: true, force: true });
});

async function dropFiles(page, files, type = "application/x-ndjson") {
  const payload = files.map((f) => ({ name: path.basename(f), text: fs.readFileSync(f, "utf8") }));
  await page.evaluate(
    ({ items, type }) => {
      const dt = new DataTransfer();
      for (const { name, text } of items) dt.items.add(new File([text], name, { type }));
      const zone = document.querySelector('[data-testid="drop-zone"]');
      zone.dispatchEvent(new DragEvent("dragover", { bubbles: true, cancelable: true, dataTransfer: dt }));
      zone.dispatchEvent(new DragEvent("drop", { bubbles: true, cancelable: true, dataTransfer: dt }));
    },
    { items: payload, type },
  );
}

/** `deploy-gate evaluate … --out report.json --html report.html` in `out`; returns both. */
function cliHtml(dir, flags, out) {
  fs.mkdirSync(out, { recursive: true });
  const f = (n) => path.join(dir, n);
  const args = ["evaluate", "--audit", f("audit.jsonl"), "--old-verdicts", f("old_verdicts.jsonl"), "--new-verdicts", f("new_verdicts.jsonl")];
  if (fs.existsSync(f("old_trajectories.jsonl"))) args.push("--old-trajectories", f("old_trajectories.jsonl"), "--new-trajectories", f("new_trajectories.jsonl"));
  const htmlPath = path.join(out, "report.html");
  args.push(...flags, "--out", path.join(out, "report.json"), "--html", htmlPath);
  const run = spawnSync(CLI, args);
  if (![0, 3, 4].includes(run.status)) throw new Error(`deploy-gate failed: ${run.stderr}`);
  return { htmlPath, html: fs.readFileSync(htmlPath), json: fs.readFileSync(path.join(out, "report.json"), "utf8"), status: run.status };
}

function policyFlags(p) {
  return ["--min-samples", p.min_samples, "--max-samples", p.max_samples, "--task-tol", p.task_tol, "--traj-tol", p.traj_tol, "--pass-verdicts", p.pass_verdicts, "--on-insufficient", p.on_insufficient, ...(p.max_missing ? ["--max-missing", p.max_missing] : [])];
}

async function downloadBytes(page, selector) {
  const [dl] = await Promise.all([page.waitForEvent("download"), page.click(selector)]);
  return fs.readFileSync(await dl.path());
}

/** Opens a file in a fresh context, recording errors, dialogs and every request. */
async function openFile(file) {
  const context = await env.browser.newContext({ viewport: { width: 1200, height: 900 } });
  const page = await context.newPage();
  page.errors = [];
  page.requests = [];
  page.dialogs = [];
  page.on("console", (m) => m.type() === "error" && page.errors.push(`console: ${m.text()}`));
  page.on("pageerror", (e) => page.errors.push(`pageerror: ${e.message}`));
  page.on("request", (r) => page.requests.push(r.url()));
  page.on("dialog", (d) => {
    page.dialogs.push(d.message());
    d.dismiss();
  });
  const url = pathToFileURL(file).href;
  await page.goto(url);
  page.url0 = url;
  return page;
}

const visibleRows = (page) => page.locator("#cases tbody tr:visible").count();

test("the page's HTML report is the CLI's --html file, byte for byte", async () => {
  for (const name of ["approved", "both-regressed"]) {
    const policy = fixturePolicy(name);
    const page = await openPage(env);
    await setPolicy(page, policy);
    await dropFiles(page, fixtureFiles(name));
    await decision(page);
    const button = '[data-testid="export-html"]';
    await page.locator(`${button}:not([disabled])`).waitFor();
    const fromPage = await downloadBytes(page, button);
    const cli = cliHtml(path.join(FIXTURES, name), policyFlags(policy), path.join(tmp, name));
    assert.equal(fromPage.length, cli.html.length, name);
    assert.ok(fromPage.equals(cli.html), `${name}: the page's download differs from the CLI's --html`);
    assert.deepEqual(page.errors, []);
    await page.context().close();
  }
});

test("the report opened from file:// shows the decision, filters and searches, loads nothing", async () => {
  const cli = cliHtml(path.join(FIXTURES, "approved"), policyFlags(fixturePolicy("approved")), path.join(tmp, "opened"));
  const report = JSON.parse(cli.json);
  const page = await openFile(cli.htmlPath);
  const banner = page.locator('[data-testid="decision"]');
  assert.equal(await banner.getAttribute("data-approved"), String(report.decision.approved));
  assert.equal(await banner.getAttribute("data-reason"), report.decision.reason);
  assert.match(await banner.textContent(), /Approved — deploy the new model/);

  const regressed = report.cases.filter((c) => c.status === "regressed");
  const improved = report.cases.filter((c) => c.status === "improved");
  const listed = await visibleRows(page);
  assert.ok(listed >= regressed.length + improved.length && listed < report.cases.length, `${listed} listed`);
  // The first rows are the regressed cases, in test-set order.
  const firstIds = await page.locator("#cases tbody tr td:first-child").evaluateAll((tds, n) => tds.slice(0, n).map((t) => t.textContent), regressed.length);
  assert.deepEqual(firstIds, regressed.map((c) => c.pipeline_id));

  await page.click('[data-filter="regressed"]');
  assert.equal(await visibleRows(page), regressed.length);
  assert.equal(await page.locator("#cases tbody tr:visible:not(.regressed)").count(), 0);
  await page.click('[data-filter="improved"]');
  assert.equal(await visibleRows(page), improved.length);
  await page.click('[data-filter="all"]');
  await page.fill("#case-search", improved[0].pipeline_id.toUpperCase());
  assert.equal(await visibleRows(page), 1);
  assert.equal(await page.locator("#cases tbody tr:visible td:first-child").textContent(), improved[0].pipeline_id);
  await page.fill("#case-search", "");
  assert.equal(await visibleRows(page), listed);

  // Printed, a filter does not hide cases.
  await page.click('[data-filter="regressed"]');
  await page.emulateMedia({ media: "print" });
  assert.equal(await visibleRows(page), listed);
  assert.equal(await page.locator(".tools").isVisible(), false);
  fs.mkdirSync(ARTIFACTS, { recursive: true });
  await page.screenshot({ path: path.join(ARTIFACTS, "report-print.png"), fullPage: true });
  await page.emulateMedia({ media: "screen", colorScheme: "light" });
  await page.click('[data-filter="all"]');
  await page.screenshot({ path: path.join(ARTIFACTS, "report-light.png") });
  await page.emulateMedia({ media: "screen", colorScheme: "dark" });
  const bg = await page.evaluate(() => getComputedStyle(document.body).backgroundColor);
  assert.equal(bg, "rgb(13, 17, 23)", "dark mode");
  await page.screenshot({ path: path.join(ARTIFACTS, "report-dark.png") });

  assert.deepEqual(page.errors, []);
  assert.deepEqual([...new Set(page.requests)], [page.url0], "nothing but the file itself is requested");
  await page.context().close();
});

test("hostile values in ids, templates and verdicts run nothing and come back intact", async () => {
  const dir = path.join(tmp, "hostile-in");
  fs.mkdirSync(dir, { recursive: true });
  const evil = `</script><script>window.__pwned=1;alert(1)</script><!--<img src=x onerror="window.__pwned=2">&amp;' \\u003c \\`;
  const audit = [];
  const oldV = [];
  const newV = [];
  for (let i = 0; i < 30; i++) {
    const id = `${evil}-${i}`;
    audit.push(JSON.stringify({ pipeline_id: id, stage_id: evil, stage_type: "plan", input: { q: evil }, output: evil }));
    audit.push(JSON.stringify({ pipeline_id: id, template_id: i % 3 ? `${evil}-t${i % 2}` : { [evil]: i }, verdict: "PASS", is_complete: true, error: null }));
    oldV.push(JSON.stringify({ pipeline_id: id, verdict: i % 4 ? "PASS" : evil }));
    if (i % 5) newV.push(JSON.stringify(i % 2 ? { pipeline_id: id, verdict: evil } : { pipeline_id: id, verdict: null, error: evil }));
  }
  fs.writeFileSync(path.join(dir, "audit.jsonl"), audit.join("\n") + "\nnot json </script><!--\n");
  fs.writeFileSync(path.join(dir, "old_verdicts.jsonl"), oldV.join("\n") + "\n");
  fs.writeFileSync(path.join(dir, "new_verdicts.jsonl"), newV.join("\n") + "\n");
  const cli = cliHtml(dir, ["--min-samples", "1"], path.join(tmp, "hostile-out"));
  assert.ok(cli.json.includes("</script>"), "the report carries the hostile values");
  const page = await openFile(cli.htmlPath);
  await page.locator('[data-testid="decision"]').waitFor();
  assert.equal(await page.evaluate(() => window.__pwned), undefined);
  assert.deepEqual(page.dialogs, []);
  assert.equal(await page.locator("script").count(), 2);
  assert.equal(await page.locator("body img").count(), 0);
  const embedded = await page.evaluate(() => JSON.parse(document.getElementById("deploy-gate-report").textContent));
  assert.deepEqual(embedded, JSON.parse(cli.json));
  // The values are shown as text.
  assert.ok((await page.locator("#cases tbody").textContent()).includes(`${evil}-1`));
  assert.deepEqual(page.errors, []);
  assert.deepEqual([...new Set(page.requests)], [page.url0]);
  await page.context().close();

  // Reopened in the page, the report JSON comes back byte for byte (a literal `\u003c` too).
  const viewer = await openPage(env);
  await viewer.locator('[data-testid="drop-zone"]').waitFor();
  await dropFiles(viewer, [cli.htmlPath], "text/html");
  await decision(viewer);
  const [dl] = await Promise.all([viewer.waitForEvent("download"), viewer.click('[data-testid="export-report"]')]);
  assert.equal(fs.readFileSync(await dl.path(), "utf8"), cli.json);
  assert.ok((await downloadBytes(viewer, '[data-testid="export-html"]')).equals(cli.html));
  assert.deepEqual(viewer.errors, []);
  await viewer.context().close();
});

test("a dropped HTML report opens in the page, and downloads again as the same bytes", async () => {
  const cli = cliHtml(path.join(FIXTURES, "both-regressed"), policyFlags(fixturePolicy("both-regressed")), path.join(tmp, "dropped"));
  const report = JSON.parse(cli.json);
  const page = await openPage(env);
  await page.locator('[data-testid="drop-zone"]').waitFor();
  await dropFiles(page, [cli.htmlPath], "text/html");
  const shown = await decision(page);
  assert.deepEqual(shown, { approved: report.decision.approved, reason: report.decision.reason, numCases: report.decision.num_cases });
  assert.equal(await page.locator('[data-testid="file-entry"]').count(), 0, "the report is not taken as an input");
  // Marked as a file, not a live evaluation and not a signed decision; no test set is offered.
  assert.equal(await page.locator('[data-testid="decision"]').getAttribute("data-source"), "file");
  assert.match(await page.locator('[data-testid="report-source"]').innerText(), /not verified/);
  assert.equal(await page.locator('[data-testid="export-testset"]').count(), 0);
  const again = await downloadBytes(page, '[data-testid="export-html"]');
  assert.ok(again.equals(cli.html));
  const [dl] = await Promise.all([page.waitForEvent("download"), page.click('[data-testid="export-report"]')]);
  assert.equal(fs.readFileSync(await dl.path(), "utf8"), cli.json, "the report JSON comes back as the CLI wrote it");
  assert.deepEqual(page.errors, []);
  await page.context().close();
});

test("the HTML report shows both answers of the cases it lists, hostile ones as text, the page's download the CLI's bytes", async () => {
  // The example with hostile new answers on its regressed cases.
  const examples = path.join(ROOT, "www/examples");
  const dir = path.join(tmp, "answers-in");
  fs.mkdirSync(dir, { recursive: true });
  for (const f of ["audit.jsonl", "old_verdicts.jsonl", "old_trajectories.jsonl", "new_trajectories.jsonl"]) fs.copyFileSync(path.join(examples, f), path.join(dir, f));
  const plain = cliHtml(examples, [], path.join(tmp, "answers-plain"));
  const regressed = JSON.parse(plain.json).cases.filter((c) => c.status === "regressed").map((c) => JSON.stringify(c.pipeline_id));
  const hostile = [
    "<script>window.__pwned = 1</script></pre></td></tr><img src=x onerror=\"window.__pwned = 2\">",
    "javascript:window.__pwned=3 <a href=\"javascript:window.__pwned=4\">x</a> <style>body{display:none}</style>",
    "\u202Eevil\u202C before\u0000after " + "word ".repeat(3000),
  ];
  // (The wide id and the long answer first: a regressed case may lack a new record.)
  hostile.unshift({ role: "assistant", content: "<iframe src=javascript:alert(1)>", tool_calls: [{ id: 123456789012345678901234567890 }] }, hostile.pop());
  let k = 0;
  const lines = fs.readFileSync(path.join(examples, "new_verdicts.jsonl"), "utf8").split("\n").filter((l) => l.trim()).map((l) => {
    const r = JSON.parse(l);
    if (regressed.includes(JSON.stringify(r.pipeline_id))) r.output = hostile[k++ % hostile.length];
    return JSON.stringify(r);
  });
  // The 30-digit id as written (JSON.stringify would round it).
  fs.writeFileSync(path.join(dir, "new_verdicts.jsonl"), lines.join("\n").replace("1.2345678901234568e+29", "123456789012345678901234567890") + "\n");
  const cli = cliHtml(dir, [], path.join(tmp, "answers-out"));
  const html = cli.html.toString("utf8");
  assert.ok(html.includes('<th scope="col">answers</th>'));
  // Every listed case's record carries an answer: each of the first 200 rows shows them.
  const rows = (html.match(/<tr id="case-/g) || []).length;
  assert.ok(rows >= regressed.length);
  assert.equal((html.match(/<details><summary>old · new<\/summary>/g) || []).length, Math.min(200, rows));
  assert.ok(!html.includes("<script>window.__pwned") && !html.includes("<iframe") && !html.includes("<img src=x"));
  // (The words that changed are in <ins>/<del>: the text without them.)
  const unmarked = html.replace(/<\/?(ins|del)>/g, "");
  assert.ok(unmarked.includes("&lt;script&gt;window.__pwned = 1&lt;/script&gt;&lt;/pre&gt;"));
  assert.ok(unmarked.includes("123456789012345678901234567890"), "the wide id keeps its digits");
  assert.match(html, /… \(\d+ more characters\)/);

  // The page's download is the same file.
  const page = await openPage(env);
  await dropFiles(page, ["audit.jsonl", "old_verdicts.jsonl", "new_verdicts.jsonl", "old_trajectories.jsonl", "new_trajectories.jsonl"].map((f) => path.join(dir, f)));
  await decision(page);
  const button = '[data-testid="export-html"]';
  await page.locator(`${button}:not([disabled])`).waitFor();
  const fromPage = await downloadBytes(page, button);
  assert.ok(fromPage.equals(cli.html), "the page's download differs from the CLI's --html");
  assert.deepEqual(page.errors, []);
  await page.context().close();

  // Opened under its CSP with every answer open: nothing ran, nothing loaded, the text is there.
  const opened = await openFile(cli.htmlPath);
  await opened.evaluate(() => document.querySelectorAll("#cases details").forEach((d) => (d.open = true)));
  assert.equal(await opened.evaluate(() => window.__pwned), undefined);
  const texts = await opened.locator("#cases details pre").allTextContents();
  assert.ok(texts.some((t) => t.includes("<script>window.__pwned = 1</script></pre></td></tr>")));
  const tags = await opened.evaluate(() => [...new Set([...document.querySelectorAll("#cases details *")].map((e) => e.tagName.toLowerCase()))].sort());
  assert.deepEqual(tags.filter((t) => !["summary", "p", "div", "strong", "pre", "del", "ins", "span"].includes(t)), []);
  assert.equal(await opened.evaluate(() => getComputedStyle(document.body).display), "block");
  assert.deepEqual(opened.errors, []);
  assert.deepEqual(opened.requests.filter((u) => !u.startsWith("file:") && !u.startsWith("data:")), []);
  await opened.context().close();
});
