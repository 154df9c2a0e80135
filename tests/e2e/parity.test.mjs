// Every parity fixture through the page: the banner and the exported report equal the CLI's.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import path from "node:path";
import { start, openPage, fixtures, fixtureFiles, fixturePolicy, cliReport, cliTestSet, setPolicy, decision, downloadText, FIXTURES } from "./harness.mjs";

let env;
before(async () => (env = await start()));
after(async () => env && (await env.close()));

for (const name of fixtures()) {
  test(`fixture ${name}: the page decides as the CLI does, and exports the same report`, async () => {
    const page = await openPage(env);
    const policy = fixturePolicy(name);
    await setPolicy(page, policy);
    await page.setInputFiles('[data-testid="file-input"]', fixtureFiles(name));
    const shown = await decision(page);
    const cli = JSON.parse(cliReport(path.join(FIXTURES, name), policy));
    assert.equal(shown.approved, cli.decision.approved);
    assert.equal(shown.reason, cli.decision.reason);
    assert.equal(shown.numCases, cli.decision.num_cases);
    assert.equal(await page.locator('[data-testid="case-row"]').count(), Math.min(200, cli.cases.length));

    const report = await downloadText(page, '[data-testid="export-report"]');
    assert.equal(report, cliReport(path.join(FIXTURES, name), policy), "the exported report is the CLI's, byte for byte");
    const testSet = await downloadText(page, '[data-testid="export-testset"]');
    assert.equal(testSet, cliTestSet(path.join(FIXTURES, name), policy));
    for (const line of testSet.split("\n").filter(Boolean)) JSON.parse(line);
    assert.deepEqual(page.errors, []);
    await page.context().close();
  });
}
