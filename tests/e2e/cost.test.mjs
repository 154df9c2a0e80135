// The "Latency and tokens" table: verdict records carrying `latency_ms`, `usage`, `attempts`
// and `target` (as `deploy-gate run` writes them) give the report a `cost` object, which the
// page shows per model with the CLI's numbers (nearest-rank quantiles, means, totals, retries,
// targets); the page's own report and Markdown carry the same. Files without those fields give
// no table, and a page that showed one drops it when such files are loaded.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { execFileSync, spawnSync } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { start, openPage, decision, downloadText, ROOT, CLI } from "./harness.mjs";

const EXAMPLES = path.join(ROOT, "www/examples");
const TARGET_OLD = `sha256:${"a".repeat(64)}`;
const TARGET_NEW = [`sha256:${"b".repeat(64)}`, `sha256:${"c".repeat(64)}`];

let env;
let dir;
before(async () => {
  if (!fs.existsSync(CLI)) execFileSync("cargo", ["build", "--release", "--bin", "deploy-gate"], { cwd: ROOT, stdio: "inherit" });
  dir = fs.mkdtempSync(path.join(os.tmpdir(), "deploy-gate-cost-"));
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

/** The bundled example with cost fields of known values on every verdict record (the example's
 * 72 cases all make the test set: the old model has a record for each, the new one for 71).
 *
 * Old, record i of 72: a latency for the first 70, (11·i mod 70 + 1)·10 ms (10 … 700, out of
 * order); usage on all, prompt_tokens 100 + i and completion_tokens 40 on the even ones only;
 * attempts 3 when i is a multiple of 12, else 1; one target.
 * New, record j of 71: a latency on all, (13·j mod 71 + 1)·4.5 ms (4.5 … 319.5); usage
 * {prompt_tokens 200, completion_tokens 10 + j} for j < 60, {prompt_tokens 200} for 60 ≤ j < 65,
 * none after; attempts for j < 50, 2 at j = 5, 4 at j = 6, else 1; two targets (j < 40, the rest). */
function costFiles() {
  const old = readJsonl(path.join(EXAMPLES, "old_verdicts.jsonl")).map((r, i) => ({
    ...r,
    ...(i < 70 ? { latency_ms: (((11 * i) % 70) + 1) * 10 } : {}),
    usage: i % 2 === 0 ? { prompt_tokens: 100 + i, completion_tokens: 40 } : { prompt_tokens: 100 + i },
    attempts: i % 12 === 0 ? 3 : 1,
    target: TARGET_OLD,
  }));
  const nw = readJsonl(path.join(EXAMPLES, "new_verdicts.jsonl")).map((r, j) => ({
    ...r,
    latency_ms: (((13 * j) % 71) + 1) * 4.5,
    ...(j < 60 ? { usage: { prompt_tokens: 200, completion_tokens: 10 + j } } : j < 65 ? { usage: { prompt_tokens: 200 } } : {}),
    ...(j < 50 ? { attempts: j === 5 ? 2 : j === 6 ? 4 : 1 } : {}),
    target: TARGET_NEW[j < 40 ? 0 : 1],
  }));
  assert.equal(old.length, 72);
  assert.equal(nw.length, 71);
  const out = path.join(dir, "cost");
  fs.mkdirSync(out, { recursive: true });
  const write = (name, lines) => fs.writeFileSync(path.join(out, name), lines.map((l) => JSON.stringify(l)).join("\n") + "\n");
  write("old_verdicts.jsonl", old);
  write("new_verdicts.jsonl", nw);
  for (const f of ["audit.jsonl", "old_trajectories.jsonl", "new_trajectories.jsonl"]) fs.copyFileSync(path.join(EXAMPLES, f), path.join(out, f));
  return out;
}

/** The report's `cost`, worked out by hand from the values above. */
const EXPECTED_COST = {
  old: {
    records: 72,
    with_latency: 70,
    // 70 latencies: p50 is rank ⌈35⌉ = 35, p95 rank ⌈66.5⌉ = 67; mean 10·71/2.
    latency_ms: { p50: 350, p95: 670, mean: 355, max: 700 },
    with_usage: 72,
    prompt_tokens: { records: 72, total: 72 * 100 + (71 * 72) / 2, mean: 135.5 },
    completion_tokens: { records: 36, total: 36 * 40, mean: 40 },
    with_attempts: 72,
    attempts: 66 + 6 * 3,
    retried: 6,
    target: TARGET_OLD,
    targets: [TARGET_OLD],
  },
  new: {
    records: 71,
    with_latency: 71,
    // 71 latencies: p50 is rank ⌈35.5⌉ = 36, p95 rank ⌈67.45⌉ = 68; mean 4.5·72/2.
    latency_ms: { p50: 36 * 4.5, p95: 68 * 4.5, mean: 162, max: 319.5 },
    with_usage: 65,
    prompt_tokens: { records: 65, total: 65 * 200, mean: 200 },
    completion_tokens: { records: 60, total: 60 * 10 + (59 * 60) / 2, mean: 39.5 },
    with_attempts: 50,
    attempts: 48 + 2 + 4,
    retried: 2,
    target: null,
    targets: TARGET_NEW,
  },
};

/** The table as the page must show it for EXPECTED_COST: [label, old, new]. */
const EXPECTED_ROWS = [
  ["records counted", "72", "71"],
  ["with a latency", "70", "71"],
  ["latency p50 (ms)", "350.0", "162.0"],
  ["latency p95 (ms)", "670.0", "306.0"],
  ["latency mean (ms)", "355.0", "162.0"],
  ["latency max (ms)", "700.0", "319.5"],
  ["prompt tokens a record", "135.5 (9756 in all, 72 records)", "200.0 (13000 in all, 65 records)"],
  ["completion tokens a record", "40.0 (1440 in all, 36 records)", "39.5 (2370 in all, 60 records)"],
  ["attempts", "84 over 72 records, 6 retried", "54 over 50 records, 2 retried"],
  ["target", TARGET_OLD, `2 targets: ${TARGET_NEW.join(", ")}`],
];

/** The rows from a report's `cost` (numbers to a tenth), independently of the page's code. */
function rowsOf(cost) {
  const fx = (x) => x.toFixed(1);
  const side = (c) => [
    String(c.records),
    String(c.with_latency),
    ...["p50", "p95", "mean", "max"].map((k) => (c.latency_ms ? fx(c.latency_ms[k]) : "—")),
    ...[c.prompt_tokens, c.completion_tokens].map((t) => (t.mean === null ? "—" : `${fx(t.mean)} (${t.total} in all, ${t.records} records)`)),
    c.with_attempts ? `${c.attempts} over ${c.with_attempts} records, ${c.retried} retried` : "—",
    c.target ?? (c.targets.length ? `${c.targets.length} targets: ${c.targets.join(", ")}` : "—"),
  ];
  const [o, n] = [side(cost.old), side(cost.new)];
  return EXPECTED_ROWS.map(([label], i) => [label, o[i], n[i]]);
}

/** `deploy-gate evaluate` on a folder of files named as the example's. */
function cli(folder) {
  const f = (n) => path.join(folder, n);
  const run = spawnSync(CLI, ["evaluate", "--audit", f("audit.jsonl"), "--old-verdicts", f("old_verdicts.jsonl"), "--new-verdicts", f("new_verdicts.jsonl"), "--old-trajectories", f("old_trajectories.jsonl"), "--new-trajectories", f("new_trajectories.jsonl")], { maxBuffer: 1 << 28 });
  assert.ok([0, 3, 4].includes(run.status), String(run.stderr));
  return JSON.parse(run.stdout.toString("utf8"));
}

const folderFiles = (folder) => ["audit.jsonl", "old_verdicts.jsonl", "new_verdicts.jsonl", "old_trajectories.jsonl", "new_trajectories.jsonl"].map((n) => path.join(folder, n));

/** The cost table on the page: its caption, its header and its rows as [label, old, new]. */
async function shownTable(page) {
  const table = page.locator('[data-testid="cost"]');
  await table.waitFor({ timeout: 30000 });
  return {
    count: await table.count(),
    caption: await table.locator("caption").innerText(),
    header: (await table.locator("thead th").allInnerTexts()).map((s) => s.trim()),
    rows: await table.locator("tbody tr").evaluateAll((trs) => trs.map((tr) => [...tr.children].map((c) => c.textContent.trim()))),
  };
}

test("records with latency, usage, attempts and target: the page's table has the CLI's numbers", async () => {
  const folder = costFiles();
  const report = cli(folder);
  // The CLI's summary is the one worked out by hand (nearest-rank quantiles, exact means).
  assert.deepEqual(report.cost, EXPECTED_COST);
  assert.deepEqual(rowsOf(report.cost), EXPECTED_ROWS);

  const page = await openPage(env);
  await page.setInputFiles('[data-testid="file-input"]', folderFiles(folder));
  const shown = await decision(page);
  const roles = await page.locator('[data-testid="file-entry"]').evaluateAll((els) => els.map((e) => e.dataset.role).sort());
  assert.deepEqual(roles, ["audit", "new_trajectories", "new_verdicts", "old_trajectories", "old_verdicts"]);
  assert.deepEqual(shown, { approved: report.decision.approved, reason: report.decision.reason, numCases: report.decision.num_cases });

  const table = await shownTable(page);
  assert.equal(table.count, 1);
  assert.equal(table.caption, "Latency and tokens");
  assert.deepEqual(table.header, ["old", "new"]);
  assert.deepEqual(table.rows, rowsOf(report.cost));
  assert.deepEqual(table.rows, EXPECTED_ROWS);

  // The page's own report carries the CLI's `cost`, and its Markdown the same table.
  const own = JSON.parse(await downloadText(page, '[data-testid="export-report"]'));
  assert.deepEqual(own.cost, report.cost);
  await page.click('[data-testid="export-markdown"]');
  const md = await page.locator('[data-testid="markdown"]').inputValue();
  assert.ok(md.includes("| Latency and tokens | old | new |"), md);
  for (const [label, o, n] of EXPECTED_ROWS) assert.ok(md.includes(`| ${label} | ${o} | ${n} |`), `Markdown row ${label}`);

  assert.deepEqual(page.errors, []);
  await page.context().close();
});

test("files without those fields: no table, and a table shown before goes away", async () => {
  const report = cli(EXAMPLES);
  assert.equal("cost" in report, false, "the plain example's report has no cost");

  // The bundled example on a fresh page.
  const page = await openPage(env);
  await page.click('[data-testid="load-example"]');
  const shown = await decision(page);
  assert.equal(shown.reason, report.decision.reason);
  assert.equal(shown.numCases, report.decision.num_cases);
  assert.equal(await page.locator('[data-testid="cost"]').count(), 0);
  assert.doesNotMatch(await page.locator("dg-results").innerText(), /Latency and tokens/);
  await page.click('[data-testid="export-markdown"]');
  assert.doesNotMatch(await page.locator('[data-testid="markdown"]').inputValue(), /Latency and tokens/);
  const own = JSON.parse(await downloadText(page, '[data-testid="export-report"]'));
  assert.equal("cost" in own, false);
  assert.deepEqual(page.errors, []);
  await page.context().close();

  // Files with cost fields, then the plain ones: the table goes with them.
  const other = await openPage(env);
  await other.setInputFiles('[data-testid="file-input"]', folderFiles(costFiles()));
  await decision(other);
  assert.deepEqual((await shownTable(other)).rows, EXPECTED_ROWS);
  await other.setInputFiles('[data-testid="file-input"]', [path.join(EXAMPLES, "old_verdicts.jsonl"), path.join(EXAMPLES, "new_verdicts.jsonl")]);
  await other.locator('[data-testid="cost"]').waitFor({ state: "detached", timeout: 30000 });
  const again = await decision(other);
  const entries = await other.locator('[data-testid="file-entry"]').evaluateAll((els) => els.map((e) => [e.dataset.role, e.querySelector(".dg-file-name").textContent]).sort());
  assert.deepEqual(entries.filter(([role]) => role.endsWith("verdicts")), [["new_verdicts", "new_verdicts.jsonl"], ["old_verdicts", "old_verdicts.jsonl"]]);
  assert.equal(again.reason, report.decision.reason);
  assert.equal(await other.locator('[data-testid="cost"]').count(), 0);
  assert.deepEqual(other.errors, []);
  await other.context().close();
});

test("each case's latency and tokens, old beside new: a column per change that sorts, filters by it, and the drill-down", async () => {
  const folder = costFiles();
  const byId = (file) => new Map(readJsonl(path.join(folder, file)).map((r) => [JSON.stringify(r.pipeline_id), r]));
  const [old, nw] = [byId("old_verdicts.jsonl"), byId("new_verdicts.jsonl")];
  const tokens = (r) => (r && r.usage ? r.usage.prompt_tokens + (r.usage.completion_tokens ?? 0) : null);
  const latency = (r) => (r && r.latency_ms !== undefined ? r.latency_ms : null);
  const change = (get, id) => (get(old.get(id)) === null || get(nw.get(id)) === null ? null : get(nw.get(id)) - get(old.get(id)));
  const page = await openPage(env);
  await page.setInputFiles('[data-testid="file-input"]', folderFiles(folder));
  await decision(page);
  const heads = await page.locator(".dg-cases thead th").allInnerTexts();
  assert.deepEqual(heads.slice(6, 8), ["Δ latency (ms)", "Δ tokens"]);
  const ids = [...old.keys()];
  const count = (get, sign) => ids.filter((id) => change(get, id) !== null && Math.sign(change(get, id)) === sign).length;
  const chipText = async (name) => (await page.locator(`[data-filter="${name}"]`).textContent()).trim();
  assert.equal(await chipText("slower"), `Slower (${count(latency, 1)})`);
  assert.equal(await chipText("faster"), `Faster (${count(latency, -1)})`);
  assert.equal(await chipText("more-tokens"), `More tokens (${count(tokens, 1)})`);
  assert.equal(await chipText("fewer-tokens"), `Fewer tokens (${count(tokens, -1)})`);
  // Every row's cells: new minus old.
  const shown = (d, digits) => (d === null ? "—" : `${d > 0 ? "+" : d < 0 ? "−" : "±"}${Math.abs(d).toFixed(digits)}`);
  const rows = await page.locator('[data-testid="case-row"]').evaluateAll((trs) => trs.map((tr) => [tr.dataset.id, tr.querySelector('[data-testid="case-latency_ms"]').textContent, tr.querySelector('[data-testid="case-tokens"]').textContent]));
  assert.equal(rows.length, ids.length);
  for (const [id, l, t] of rows) {
    assert.equal(l, shown(change(latency, id), 1), `latency of ${id}`);
    assert.equal(t, shown(change(tokens, id), 0), `tokens of ${id}`);
  }
  // Sorted by the change in latency, the slowest first; the cases without one last.
  await page.click('[data-testid="sort-latency"]');
  await page.click('[data-testid="sort-latency"]');
  const order = await page.locator('[data-testid="case-row"]').evaluateAll((trs) => trs.map((tr) => tr.dataset.id));
  const expected = ids.filter((id) => change(latency, id) !== null).sort((a, b) => change(latency, b) - change(latency, a));
  assert.deepEqual(order.slice(0, expected.length).map((id) => change(latency, id)), expected.map((id) => change(latency, id)));
  assert.ok(order.slice(expected.length).every((id) => change(latency, id) === null));
  // The slower cases only; the drill-down says both figures.
  await page.click('[data-filter="slower"]');
  assert.equal(await page.locator('[data-testid="case-row"]').count(), count(latency, 1));
  const first = page.locator('[data-testid="case-row"]').first();
  const id = await first.getAttribute("data-id");
  await first.click();
  const line = (await page.locator('[data-testid="case-costs"]').textContent()).trim();
  const [lo, ln] = [latency(old.get(id)), latency(nw.get(id))];
  const [to, tn] = [tokens(old.get(id)), tokens(nw.get(id))];
  const fmt = (x, digits, unit) => (x === null ? "—" : `${x.toFixed(digits)}${unit}`);
  const d = (a, b, digits, unit) => (a === null || b === null ? "" : ` (${shown(b - a, digits)}${unit})`);
  assert.equal(line, `Latency: old ${fmt(lo, 1, " ms")} · new ${fmt(ln, 1, " ms")}${d(lo, ln, 1, " ms")} · Tokens: old ${fmt(to, 0, "")} · new ${fmt(tn, 0, "")}${d(to, tn, 0, "")}`);
  assert.deepEqual(page.errors, []);
  await page.context().close();
});
