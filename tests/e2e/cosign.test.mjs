// A decision signed in the CLI is opened in the page (its evidence from the verified statement),
// co-signed there by a second reviewer, and applied by the CLI with a threshold of two; a
// tampered envelope shows the failed check and no evidence.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import fs from "node:fs";
import path from "node:path";
import { spawnSync } from "node:child_process";
import { start, openPage, cliReport, fixturePolicy, FIXTURES, ARTIFACTS, CLI } from "./harness.mjs";

let env;
before(async () => (env = await start()));
after(async () => env && (await env.close()));

function cli(args) {
  const run = spawnSync(CLI, args, { maxBuffer: 1 << 30 });
  return { status: run.status, stdout: run.stdout.toString("utf8"), stderr: run.stderr.toString("utf8") };
}

/** A scratch folder with a model, a serving config, a report of the fixture by the CLI, key A
 * (`deploy-gate keygen`) and the report signed with A (`deploy-gate sign`). */
function signedByA(name, fixture = "approved") {
  const dir = path.join(ARTIFACTS, `${name}-${process.pid}`);
  fs.rmSync(dir, { recursive: true, force: true });
  fs.mkdirSync(path.join(dir, "model"), { recursive: true });
  fs.writeFileSync(path.join(dir, "model", "weights.bin"), "new weights");
  const config = path.join(dir, "config.yaml");
  const original = "backend: transformers\ndefault_model: /models/old\n";
  fs.writeFileSync(config, original);
  const reportText = cliReport(path.join(FIXTURES, fixture), fixturePolicy(fixture));
  const report = path.join(dir, "report.json");
  fs.writeFileSync(report, reportText);
  const keygen = cli(["keygen", "--out", path.join(dir, "A")]);
  assert.equal(keygen.status, 0, keygen.stderr);
  const keyidA = keygen.stdout.trim();
  assert.match(keyidA, /^[0-9a-f]{64}$/);
  // `sign --model-path` names a model folder by its OpenSSF Model Signing digest.
  const digest = cli(["digest", "--oms", path.join(dir, "model")]).stdout.trim();
  assert.match(digest, /^sha256:[0-9a-f]{64}$/);
  const envelope = path.join(dir, "decision.dsse.json");
  const sign = cli(["sign", report, "--key", path.join(dir, "A.key.pem"), "--model", "agent-7b-v2", "--model-path", path.join(dir, "model"), "--target", config, "--out", envelope]);
  assert.equal(sign.status, 0, sign.stderr);
  return { dir, config, original, report, reportText, keyidA, digest, envelope, pubA: path.join(dir, "A.pub.pem") };
}

/** Clicks, and saves the `count` downloads it triggers (sorted by name). */
async function downloads(page, dir, count, action) {
  const files = [];
  const done = new Promise((resolve) => {
    page.on("download", async (dl) => {
      const file = path.join(dir, `page-${dl.suggestedFilename()}`);
      await dl.saveAs(file);
      files.push(file);
      if (files.length === count) resolve();
    });
  });
  await action();
  await done;
  page.removeAllListeners("download");
  return files.sort();
}

test("signed in the CLI, opened and co-signed in the page, applied by the CLI with --threshold 2", async () => {
  const s = signedByA("cosign");
  const report = JSON.parse(s.reportText);
  const page = await openPage(env);

  // The envelope and A's public key dropped on the viewer's file drop (no evaluation inputs).
  await page.setInputFiles('[data-testid="file-input"]', [s.envelope, s.pubA]);
  const view = page.locator('[data-testid="signed-decision"][data-valid="true"]');
  await view.waitFor({ timeout: 30000 });
  assert.equal(await page.locator('[data-testid="file-entry"]').count(), 0, "the envelope and the key are not evaluation inputs");

  // Marked as a signed decision: signer, time, model, digest, target.
  const text = async (id) => (await view.locator(`[data-testid="${id}"]`).innerText()).trim();
  assert.match(await text("signed-signers"), new RegExp(`key id ${s.keyidA} \\(trusted key file A\\.pub\\.pem\\)`));
  assert.match(await text("signed-time"), /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$/);
  assert.equal(await text("signed-model"), "agent-7b-v2");
  assert.equal(await text("signed-digest"), s.digest);
  assert.equal(await text("signed-target"), s.config);
  assert.match(await text("report-source"), /signed decision/);

  // The CLI's decision and its evidence, in the live evaluation's views.
  const banner = view.locator('[data-testid="decision"]');
  assert.equal(await banner.getAttribute("data-approved"), String(report.decision.approved));
  assert.equal(await banner.getAttribute("data-reason"), report.decision.reason);
  assert.equal(await banner.getAttribute("data-source"), "signed");
  assert.equal(Number(await view.locator('[data-testid="num-cases"]').innerText()), report.decision.num_cases);
  assert.ok(report.cases.length > 0);
  assert.equal(await view.locator('[data-testid="case-row"]').count(), Math.min(report.cases.length, 200));
  // The table lists regressed cases first, then improved ones, then the rest, each in report order.
  const rank = (c) => (c.status === "regressed" ? 0 : c.status === "improved" ? 1 : 2);
  const first = report.cases.map((c, i) => [rank(c), i, c]).sort((a, b) => a[0] - b[0] || a[1] - b[1])[0][2];
  const firstId = typeof first.pipeline_id === "string" ? first.pipeline_id : JSON.stringify(first.pipeline_id);
  assert.equal((await view.locator('[data-testid="case-row"] td').first().innerText()).trim(), firstId);
  assert.equal(await view.locator('[data-testid="template-row"]').count(), report.templates.length);
  assert.equal(await view.locator('[data-testid="two-by-two"]').count(), 1);
  assert.equal(await view.locator('[data-testid="export-testset"]').count(), 0, "the test set is not in a report");
  assert.equal(await page.locator('[data-testid="decision"][data-source="live"]').count(), 0);
  // The report JSON it offers is the CLI's report, byte for byte.
  const [reportCopy] = await downloads(page, s.dir, 1, () => view.locator('[data-testid="export-report"]').click());
  assert.equal(fs.readFileSync(reportCopy, "utf8"), s.reportText);

  // A second reviewer generates key B in the page (both halves downloaded) and co-signs.
  const [privB, pubB] = await downloads(page, s.dir, 2, () => view.locator('[data-testid="cosign-generate-key"]').click());
  assert.ok(privB.endsWith("co-signer.key.pem") && pubB.endsWith("co-signer.pub.pem"));
  assert.ok(fs.readFileSync(privB, "utf8").startsWith("-----BEGIN PRIVATE KEY-----"));
  assert.ok(fs.readFileSync(pubB, "utf8").startsWith("-----BEGIN PUBLIC KEY-----"));
  const [cosigned] = await downloads(page, s.dir, 1, () => view.locator('[data-testid="cosign"]').click());
  assert.ok(cosigned.endsWith("decision.dsse.json"));
  assert.match(await view.locator('[data-testid="cosign-status"]').innerText(), /Co-signed.*2 signatures/);

  // The statement's bytes are kept; A's signature too; B's is added.
  const before = JSON.parse(fs.readFileSync(s.envelope, "utf8"));
  const after = JSON.parse(fs.readFileSync(cosigned, "utf8"));
  assert.equal(after.payload, before.payload);
  assert.equal(after.payloadType, before.payloadType);
  assert.deepEqual(after.signatures[0], before.signatures[0]);
  assert.equal(after.signatures.length, 2);
  // Exactly what `deploy-gate sign --envelope` writes for the same envelope and key.
  const cliCosign = cli(["sign", s.report, "--envelope", s.envelope, "--key", privB, "--model", "agent-7b-v2", "--model-digest", s.digest, "--digest-scheme", "oms-v1.0-files", "--target", s.config]);
  assert.equal(cliCosign.status, 0, cliCosign.stderr);
  assert.equal(fs.readFileSync(cosigned, "utf8"), cliCosign.stdout);

  // Two signatures required: A's alone is refused, A's and B's are applied.
  const apply = (envelope) => cli(["apply", envelope, "--threshold", "2", "--trusted-key", s.pubA, "--trusted-key", pubB, "--model-path", path.join(s.dir, "model"), "--config", s.config, "--ledger", path.join(s.dir, "ledger.jsonl")]);
  const refused = apply(s.envelope);
  assert.equal(refused.status, 2, refused.stderr);
  assert.match(refused.stdout + refused.stderr, /signature/);
  assert.equal(fs.readFileSync(s.config, "utf8"), s.original, "a refused decision leaves the config alone");
  const applied = apply(cosigned);
  assert.equal(applied.status, 0, applied.stderr);
  assert.equal(fs.readFileSync(s.config, "utf8"), `backend: "transformers"\ndefault_model: ${JSON.stringify(path.join(s.dir, "model"))}\n`);

  // The page verifies the co-signed envelope with both keys at a threshold of 2.
  await page.fill('[name="verify_threshold"]', "2");
  await page.setInputFiles('[data-testid="verify-input"]', [cosigned, pubB]);
  await page.locator('[data-testid="signed-decision"][data-valid="true"] [data-testid="signed-count"]').filter({ hasText: "2 trusted of 2" }).waitFor();
  assert.deepEqual(page.errors, []);
  await page.context().close();
});

test("a tampered envelope shows the failed check and none of its report; one that does not verify is not co-signed", async () => {
  const s = signedByA("tampered");
  const env2 = JSON.parse(fs.readFileSync(s.envelope, "utf8"));
  const statement = JSON.parse(Buffer.from(env2.payload, "base64").toString("utf8"));
  const report = statement.predicate["https://deploy-gate.dev/report/v1"];
  report.decision.reason = "approved: TAMPERED-REASON";
  report.cases[0].status = "improved";
  env2.payload = Buffer.from(JSON.stringify(statement)).toString("base64");
  const tampered = path.join(s.dir, "tampered.dsse.json");
  fs.writeFileSync(tampered, JSON.stringify(env2));

  const page = await openPage(env);
  await page.setInputFiles('[data-testid="file-input"]', [tampered, s.pubA]);
  const view = page.locator('[data-testid="signed-decision"][data-valid="false"]');
  await view.waitFor({ timeout: 30000 });
  assert.equal((await view.locator('[data-testid="signed-check"]').innerText()).trim(), "signature");
  assert.match(await view.innerText(), /INVALID/);
  // No evidence: no banner, no case, no co-sign form, and nothing of the tampered report.
  for (const id of ["decision", "case-row", "template-row", "cosign-panel", "export-report"]) {
    assert.equal(await page.locator(`[data-testid="${id}"]`).count(), 0, id);
  }
  assert.doesNotMatch(await page.locator("body").innerText(), /TAMPERED-REASON/);
  assert.equal(await page.locator('[data-testid="verify-result"] [data-valid="false"]').count(), 1);

  // The untouched envelope with A's key opens; a threshold A alone cannot meet closes it again
  // (invalid, no co-sign form), so nothing that does not verify can be co-signed in the page.
  await page.setInputFiles('[data-testid="verify-input"]', [s.envelope]);
  await page.locator('[data-testid="signed-decision"][data-valid="true"] [data-testid="cosign"]').waitFor();
  await page.fill('[name="verify_threshold"]', "2");
  await page.locator('[name="verify_threshold"]').dispatchEvent("change");
  await page.locator('[data-testid="signed-decision"][data-valid="false"]').waitFor();
  assert.equal((await page.locator('[data-testid="signed-check"]').innerText()).trim(), "threshold");
  assert.equal(await page.locator('[data-testid="cosign"]').count(), 0);
  assert.equal(await page.locator('[data-testid="decision"]').count(), 0);
  // A threshold that is not a whole number ≥ 1 is an error, not a silent 1: nothing is shown.
  await page.fill('[name="verify_threshold"]', "1");
  await page.locator('[name="verify_threshold"]').dispatchEvent("change");
  await page.locator('[data-testid="signed-decision"][data-valid="true"]').waitFor();
  for (const bad of ["two", "1.5", "0"]) {
    await page.fill('[name="verify_threshold"]', bad);
    await page.locator('[name="verify_threshold"]').dispatchEvent("change");
    await page.locator('[data-testid="verify-panel"] .dg-error', { hasText: "whole number" }).waitFor();
    assert.equal(await page.locator('[data-testid="signed-decision"]:not([hidden])').count(), 0, bad);
    assert.equal(await page.locator('[data-testid="cosign"]').count(), 0, bad);
  }

  // Pasted keys: one that is not the signer's fails the signature check; A's then opens it.
  const page2 = await openPage(env);
  assert.equal(cli(["keygen", "--out", path.join(s.dir, "B")]).status, 0);
  await page2.click('[data-testid="verify-panel"] summary');
  await page2.setInputFiles('[data-testid="verify-input"]', [s.envelope]);
  await page2.click('[data-testid="verify-panel"] details summary');
  const paste = async (file) => {
    await page2.fill('[data-testid="verify-paste-key"]', fs.readFileSync(file, "utf8"));
    await page2.click('[data-testid="verify-add-key"]');
  };
  await paste(path.join(s.dir, "B.pub.pem"));
  await page2.locator('[data-testid="signed-decision"][data-valid="false"]').waitFor();
  assert.equal((await page2.locator('[data-testid="signed-check"]').innerText()).trim(), "signature");
  assert.equal(await page2.locator('[data-testid="cosign"]').count(), 0);
  await paste(s.pubA);
  await page2.locator('[data-testid="signed-decision"][data-valid="true"]').waitFor();
  assert.match(await page2.locator('[data-testid="signed-signers"]').innerText(), new RegExp(`key id ${s.keyidA} \\(trusted key file pasted key 2\\)`));
  assert.deepEqual(page2.errors, []);
  await page2.context().close();
  assert.deepEqual(page.errors, []);
  await page.context().close();
});

test("a decision signed with a review shows what the review pins, and a co-signer in the page signs it as it is", async () => {
  const s = signedByA("reviewed", "both-regressed");
  const report = JSON.parse(s.reportText);
  const regressed = report.cases.filter((c) => c.status === "regressed");
  assert.ok(regressed.length >= 2);
  const review = path.join(s.dir, "review.jsonl");
  fs.writeFileSync(review, `${JSON.stringify({ pipeline_id: regressed[0].pipeline_id, mark: "accepted", note: "<script>window.__pwned=1</script>" })}\n`);
  const envelope = path.join(s.dir, "reviewed.dsse.json");
  const signed = cli(["sign", s.report, "--key", path.join(s.dir, "A.key.pem"), "--model", "agent-7b-v2", "--model-path", path.join(s.dir, "model"), "--target", s.config, "--review", review, "--out", envelope]);
  assert.equal(signed.status, 0, signed.stderr);
  const page = await openPage(env);
  await page.setInputFiles('[data-testid="file-input"]', [envelope, s.pubA]);
  const view = page.locator('[data-testid="signed-decision"][data-valid="true"]');
  await view.waitFor({ timeout: 30000 });
  const sha = (await import("node:crypto")).createHash("sha256").update(fs.readFileSync(review)).digest("hex");
  const shown = (await view.locator('[data-testid="signed-review"]').innerText()).trim();
  assert.equal(shown, `Signed with a review: 1 accepted, 0 label wrong, 0 needs fix; 1 of ${regressed.length} regressed case(s) marked (review file sha256:${sha}, ${fs.statSync(review).size} bytes).`);
  // The Verify panel's result says it too.
  await page.locator('[data-testid="verify-review"]').waitFor({ state: "attached" });
  assert.equal((await page.locator('[data-testid="verify-review"]').textContent()).trim(), shown);
  // Co-signed in the page: the statement (and its review pin) as it is; the CLI verifies both
  // signatures and the review file.
  const [, pubB] = await downloads(page, s.dir, 2, () => view.locator('[data-testid="cosign-generate-key"]').click());
  const [cosigned] = await downloads(page, s.dir, 1, () => view.locator('[data-testid="cosign"]').click());
  const verified = cli(["verify", cosigned, "--threshold", "2", "--trusted-key", s.pubA, "--trusted-key", pubB, "--model-path", path.join(s.dir, "model"), "--target", s.config, "--review", review]);
  assert.equal(verified.status, 0, verified.stderr);
  assert.equal(JSON.parse(verified.stdout).review.sha256, sha);
  // Compared with the same decision signed without a review: the Compare view shows the pin.
  const texts = [s.envelope, envelope, s.pubA].map((f) => fs.readFileSync(f, "utf8"));
  await page.evaluate(([a, b, key]) => document.querySelector("deploy-gate-viewer").compare(a, b, { trustedKeys: [key] }), texts);
  assert.equal((await page.locator('[data-testid="compare-after"] [data-testid="compare-review"]').textContent()).trim(), shown);
  assert.equal(await page.locator('[data-testid="compare-before"] [data-testid="compare-review"]').count(), 0);
  assert.equal(await page.evaluate(() => window.__pwned), undefined);
  assert.deepEqual(page.errors, []);
  await page.context().close();
});
