// A decision signed in the page is verified and applied by the CLI; the page verifies envelopes.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import fs from "node:fs";
import path from "node:path";
import { spawnSync } from "node:child_process";
import { start, openPage, fixtureFiles, fixturePolicy, setPolicy, decision, ARTIFACTS, CLI } from "./harness.mjs";

let env;
before(async () => (env = await start()));
after(async () => env && (await env.close()));

async function saveDownload(page, action, dir) {
  const [dl] = await Promise.all([page.waitForEvent("download"), action()]);
  const file = path.join(dir, dl.suggestedFilename());
  await dl.saveAs(file);
  return file;
}

test("a decision signed in the page is applied by deploy-gate apply, and the page verifies it", async () => {
  const dir = path.join(ARTIFACTS, `sign-${process.pid}`);
  fs.rmSync(dir, { recursive: true, force: true });
  fs.mkdirSync(path.join(dir, "model"), { recursive: true });
  fs.writeFileSync(path.join(dir, "model", "weights.bin"), "new weights");
  const config = path.join(dir, "config.yaml");
  const original = "backend: transformers\ndefault_model: /models/old\n";
  fs.writeFileSync(config, original);
  const digest = spawnSync(CLI, ["digest", path.join(dir, "model")]).stdout.toString().trim();
  assert.match(digest, /^sha256:[0-9a-f]{64}$/);

  const page = await openPage(env);
  await setPolicy(page, fixturePolicy("approved"));
  await page.setInputFiles('[data-testid="file-input"]', fixtureFiles("approved"));
  assert.equal((await decision(page)).approved, true);

  // Generate a key pair in the page: both halves are downloaded.
  const [first, second] = await Promise.all([
    new Promise((resolve) => {
      const files = [];
      page.on("download", async (dl) => {
        const file = path.join(dir, dl.suggestedFilename());
        await dl.saveAs(file);
        files.push(file);
        if (files.length === 2) resolve(files);
      });
    }).then((f) => f.sort()),
    page.click('[data-testid="generate-key"]'),
  ]);
  page.removeAllListeners("download");
  const [privateKey, publicKey] = first[0].endsWith(".key.pem") ? first : first.slice().reverse();
  assert.ok(fs.readFileSync(privateKey, "utf8").startsWith("-----BEGIN PRIVATE KEY-----"));
  assert.ok(fs.readFileSync(publicKey, "utf8").startsWith("-----BEGIN PUBLIC KEY-----"));
  void second;

  await page.fill('[name="model_name"]', "agent-7b-v2");
  await page.fill('[name="model_digest"]', digest);
  await page.fill('[name="target"]', config);
  const envelope = await saveDownload(page, () => page.click('[data-testid="sign"]'), dir);
  assert.equal(path.basename(envelope), "decision.dsse.json");

  const ledger = path.join(dir, "ledger.jsonl");
  const apply = () => spawnSync(CLI, ["apply", envelope, "--trusted-key", publicKey, "--model-path", path.join(dir, "model"), "--config", config, "--ledger", ledger]);
  const run = apply();
  assert.equal(run.status, 0, run.stderr.toString());
  assert.equal(fs.readFileSync(config, "utf8"), `backend: "transformers"\ndefault_model: ${JSON.stringify(path.join(dir, "model"))}\n`);
  assert.equal(fs.readFileSync(`${config}.backup`, "utf8"), original);
  assert.equal(apply().status, 2, "the same envelope is not applied twice");

  // The page verifies it too, and names the trusted key that signed.
  await page.click('[data-testid="verify-panel"] summary');
  await page.setInputFiles('[data-testid="verify-input"]', [envelope, publicKey]);
  const result = page.locator('[data-testid="verify-result"] [data-valid]');
  await result.waitFor();
  assert.equal(await result.getAttribute("data-valid"), "true");
  assert.match(await result.innerText(), /PASSED/);
  assert.match(await result.innerText(), /deploy-gate\.pub\.pem/);

  // A key loaded from a file signs as well; a tampered envelope is reported invalid.
  await page.setInputFiles('[data-testid="sign-key-input"]', privateKey);
  await page.locator('[data-testid="sign-key-status"]').filter({ hasText: "Private key loaded" }).waitFor();
  const tampered = path.join(dir, "tampered.dsse.json");
  const env2 = JSON.parse(fs.readFileSync(envelope, "utf8"));
  const payload = JSON.parse(Buffer.from(env2.payload, "base64").toString("utf8"));
  payload.predicate.resourceUri = "/etc/other.yaml";
  env2.payload = Buffer.from(JSON.stringify(payload)).toString("base64");
  fs.writeFileSync(tampered, JSON.stringify(env2));
  await page.setInputFiles('[data-testid="verify-input"]', [tampered]);
  await page.locator('[data-testid="verify-result"] [data-valid="false"]').waitFor();
  assert.match(await page.locator('[data-testid="verify-result"]').innerText(), /signature/);
  assert.deepEqual(page.errors, []);
  await page.context().close();
});

test("the Sign panel signs for an MLflow registry alias, and the Verify panel shows it as one", async () => {
  const dir = path.join(ARTIFACTS, `sign-registry-${process.pid}`);
  fs.rmSync(dir, { recursive: true, force: true });
  fs.mkdirSync(path.join(dir, "model"), { recursive: true });
  fs.writeFileSync(path.join(dir, "model", "weights.bin"), "registry weights");
  const digest = spawnSync(CLI, ["digest", path.join(dir, "model")]).stdout.toString().trim();

  const page = await openPage(env);
  await setPolicy(page, fixturePolicy("approved"));
  await page.setInputFiles('[data-testid="file-input"]', fixtureFiles("approved"));
  assert.equal((await decision(page)).approved, true);
  const keys = [];
  await Promise.all([
    new Promise((resolve) => {
      page.on("download", async (dl) => {
        const file = path.join(dir, dl.suggestedFilename());
        await dl.saveAs(file);
        keys.push(file);
        if (keys.length === 2) resolve();
      });
    }),
    page.click('[data-testid="generate-key"]'),
  ]);
  page.removeAllListeners("download");
  const publicKey = keys.find((k) => k.endsWith(".pub.pem"));

  // The config target by default; the registry's fields once chosen.
  assert.equal(await page.isVisible('[name="target"]'), true);
  assert.equal(await page.isVisible('[name="alias"]'), false);
  await page.selectOption('[data-testid="sign-target-kind"]', "registry");
  assert.equal(await page.isVisible('[name="target"]'), false);
  await page.fill('[name="model_name"]', "agent");
  await page.fill('[name="model_digest"]', digest);
  await page.fill('[name="registered_model"]', "agent");
  await page.click('[data-testid="sign"]');
  await page.locator('[data-testid="sign-status"]').filter({ hasText: "needs the registered model and the alias" }).waitFor();
  await page.fill('[name="alias"]', "champion");
  const envelope = await saveDownload(page, () => page.click('[data-testid="sign"]'), dir);

  const checked = spawnSync(CLI, ["verify", envelope, "--trusted-key", publicKey, "--model-digest", digest, "--target", "models:/agent@champion"]);
  assert.equal(checked.status, 0, checked.stderr.toString());

  await page.click('[data-testid="verify-panel"] summary');
  await page.setInputFiles('[data-testid="verify-input"]', [envelope, publicKey]);
  const target = page.locator('[data-testid="verify-result"] [data-testid="verify-target"]');
  await target.waitFor();
  assert.equal(await target.getAttribute("data-kind"), "registry");
  assert.match(await target.innerText(), /MLflow registry alias champion of agent/);
  assert.deepEqual(page.errors, []);
  await page.context().close();
});
