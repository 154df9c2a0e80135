// The case table on a large test set in headless Chromium: time to the decision and the table,
// the longest the page's main thread went without running a 10 ms timer (from the drop until the
// log's sha256 is in), and the time of a filter change and of two searches (from the change until
// the rows show it, then the next frame). Selectors only the table has had all along, so it runs
// on older versions of www/ too.
// Usage: node scripts/bench-table.mjs [DIR]   (default tests/e2e/.artifacts/gen-106M-11-compact,
// made by `target/release/examples/gen_audit --size 106M --seed 11 --compact --out DIR`:
// 200,389 cases with max_samples none).
import path from "node:path";
import { start, openPage, setPolicy, decision, ARTIFACTS } from "../tests/e2e/harness.mjs";

const dir = path.resolve(process.argv[2] || path.join(ARTIFACTS, "gen-106M-11-compact"));
const env = await start();
const page = await openPage(env);
await setPolicy(page, { max_samples: "none" });
await page.evaluate(() => {
  window.__gap = 0;
  let last = performance.now();
  window.__beat = setInterval(() => {
    const now = performance.now();
    window.__gap = Math.max(window.__gap, now - last);
    last = now;
  }, 10);
});
const t0 = Date.now();
await page.setInputFiles('[data-testid="file-input"]', ["audit.jsonl", "old_verdicts.jsonl", "new_verdicts.jsonl"].map((f) => path.join(dir, f)));
const { numCases } = await decision(page, 600_000);
await page.locator('[data-testid="case-row"]').first().waitFor();
const shown = Date.now() - t0;
await page.locator('[data-testid="export-report"]:not([disabled])').waitFor({ timeout: 600_000 });
const gap = await page.evaluate(() => (clearInterval(window.__beat), window.__gap));
const time = (change, ready) =>
  page.evaluate(
    ([change, ready]) =>
      new Promise((resolve) => {
        const table = document.querySelector("dg-case-table");
        const ok = new Function("table", `return ${ready}`);
        const t = performance.now();
        new Function("table", change)(table);
        const poll = () => (ok(table) ? requestAnimationFrame(() => setTimeout(() => resolve(performance.now() - t), 0)) : setTimeout(poll, 1));
        poll();
      }),
    [change, ready],
  );
const rows = `[...table.querySelectorAll('[data-testid="case-row"]')]`;
const type = (q) => `const b = table.querySelector('[data-testid="case-search"]'); b.value = ${JSON.stringify(q)}; b.dispatchEvent(new Event("input"));`;
const filter = await time(`table.querySelector('button[data-filter="improved"]').click()`, `${rows}.every((r) => r.lastElementChild.textContent === "improved")`);
const search = await time(type("fraud/screen"), `${rows}.every((r) => r.children[1].textContent === "fraud/screen")`);
const again = await time(type("fraud/scree"), "true");
const domRows = await page.locator('[data-testid="case-row"]').count();
console.log(
  `table: ${numCases} cases; decision and rows shown after ${shown} ms, longest main-thread gap ${gap.toFixed(0)} ms; ` +
    `filter ${filter.toFixed(0)} ms, first search ${search.toFixed(0)} ms, second search ${again.toFixed(0)} ms; ${domRows} rows in the DOM`,
);
await env.close();
