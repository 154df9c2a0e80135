// The trainer's model signature in the page: a model.sig signed by the reference implementation
// (model-signing 1.1.1, tests/fixtures/oms-page) dropped beside a decision signed by the CLI
// shows the trainer's key id, the signed files and whether both name the same model; the model
// folder chosen with the directory picker is checked in the browser (a tampered file is named);
// an untrusted trainer key and a decision about another model are refused.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import crypto from "node:crypto";
import fs from "node:fs";
import path from "node:path";
import { spawnSync } from "node:child_process";
import { start, openPage, cliReport, fixturePolicy, FIXTURES, ARTIFACTS, CLI, ROOT } from "./harness.mjs";

const OMS = path.join(ROOT, "tests/fixtures/oms-page");
const TRAINER = path.join(OMS, "trainer.pub.pem");
const OTHER = path.join(OMS, "other.pub.pem");

let env;
let s;
before(async () => {
  env = await start();
  s = setup();
});
after(async () => env && (await env.close()));

function cli(args) {
  const run = spawnSync(CLI, args, { maxBuffer: 1 << 30 });
  return { status: run.status, stdout: run.stdout.toString("utf8"), stderr: run.stderr.toString("utf8") };
}

/** The fixture model copied (with its model.sig), a reviewer key, and three decisions signed by
 * the CLI: for this model (by its OMS digest), for another model, and for this model by the
 * original directory digest. */
function setup() {
  const dir = path.join(ARTIFACTS, `model-signature-${process.pid}`);
  fs.rmSync(dir, { recursive: true, force: true });
  fs.mkdirSync(dir, { recursive: true });
  const model = path.join(dir, "model");
  fs.cpSync(path.join(OMS, "model"), model, { recursive: true });
  const other = path.join(dir, "other-model");
  fs.mkdirSync(other);
  fs.writeFileSync(path.join(other, "weights.bin"), "other weights");
  const report = path.join(dir, "report.json");
  fs.writeFileSync(report, cliReport(path.join(FIXTURES, "approved"), fixturePolicy("approved")));
  const keygen = cli(["keygen", "--out", path.join(dir, "A")]);
  assert.equal(keygen.status, 0, keygen.stderr);
  const sign = (out, ...what) => {
    const r = cli(["sign", report, "--key", path.join(dir, "A.key.pem"), "--model", "agent-7b-v2", ...what, "--target", "serving.yaml", "--out", path.join(dir, out)]);
    assert.equal(r.status, 0, r.stderr);
    return path.join(dir, out);
  };
  const original = cli(["digest", model]).stdout.trim();
  return {
    dir,
    model,
    pubA: path.join(dir, "A.pub.pem"),
    same: sign("same.dsse.json", "--model-path", model),
    other: sign("other.dsse.json", "--model-path", other),
    byOriginal: sign("original.dsse.json", "--model-digest", original),
    omsDigest: cli(["digest", "--oms", model]).stdout.trim(),
  };
}

/** deploy-gate's key id of a public key: hex sha256 of its SPKI DER. */
function keyId(pemFile) {
  const der = crypto.createPublicKey(fs.readFileSync(pemFile)).export({ type: "spki", format: "der" });
  return crypto.createHash("sha256").update(der).digest("hex");
}

const sha256 = (file) => crypto.createHash("sha256").update(fs.readFileSync(file)).digest("hex");

/** A page with these files dropped on the viewer's drop zone; resolves once the model signature
 * is shown. */
async function dropped(files) {
  const page = await openPage(env);
  await page.setInputFiles('[data-testid="file-input"]', files);
  const view = page.locator('[data-testid="model-signature"][data-valid]');
  await view.waitFor({ timeout: 30000 });
  return { page, view };
}

const text = async (scope, id) => (await scope.locator(`[data-testid="${id}"]`).first().innerText()).trim();

/** Chooses a folder with the directory picker; resolves with the files check's result element. */
async function chooseFolder(page, folder) {
  await page.setInputFiles('[data-testid="model-folder-input"]', folder);
  const result = page.locator('[data-testid="model-files-result"][data-valid]');
  await result.waitFor({ timeout: 60000 });
  return result;
}

test("a reference model.sig beside a decision: valid, the trainer's key id, the files, the same model; the folder checked in the browser", async () => {
  assert.match(s.omsDigest, /^sha256:[0-9a-f]{64}$/);
  const { page, view } = await dropped([s.same, s.pubA, path.join(s.model, "model.sig"), TRAINER]);
  await page.locator('[data-testid="signed-decision"][data-valid="true"]').waitFor({ timeout: 30000 });
  assert.equal(await view.getAttribute("data-valid"), "true");
  assert.equal(await page.locator('[data-testid="file-entry"]').count(), 0, "no file became an evaluation input");
  assert.match(await text(view, "model-key"), new RegExp(`^key id ${keyId(TRAINER)} \\(trusted trainer key file trainer\\.pub\\.pem\\)$`));
  assert.equal(await text(view, "model-curve"), "P-256");
  assert.equal(await text(view, "model-name"), "model");
  assert.equal(await text(view, "model-digest"), s.omsDigest, "the subject digest is deploy-gate digest --oms");
  assert.equal(await text(view, "model-method"), "files");
  // Every signed file with its sha256 (names with spaces and non-ASCII letters as they are).
  const rows = view.locator('[data-testid="model-resource"]');
  assert.equal(await rows.count(), 6);
  const row = view.locator('[data-testid="model-resource"][data-path="résumé notes.txt"]');
  assert.equal((await row.locator("td").nth(1).innerText()).trim(), sha256(path.join(s.model, "résumé notes.txt")));
  // The same model as the decision, by the OMS digest.
  const same = view.locator('[data-testid="model-same"]');
  assert.equal(await same.getAttribute("data-same"), "true");
  assert.equal(await same.getAttribute("data-by"), "digest");
  // The folder checked in the browser: every file matches, progress reported.
  const result = await chooseFolder(page, s.model);
  assert.equal(await result.getAttribute("data-valid"), "true", await result.innerText());
  assert.match(await text(result, "model-files-summary"), /^All 6 files match the signature/);
  assert.ok(Number(await view.locator("dg-progress").getAttribute("data-loaded")) >= fs.statSync(path.join(s.model, "weights/part-00001.bin")).size, "progress was reported");
  assert.deepEqual(page.errors, []);
  await page.context().close();
});

test("a tampered file in the chosen folder is refused by name", async () => {
  const tampered = path.join(s.dir, "tampered");
  fs.cpSync(s.model, tampered, { recursive: true });
  const weights = path.join(tampered, "weights/part-00002.bin");
  const bytes = fs.readFileSync(weights);
  bytes[100] ^= 1;
  fs.writeFileSync(weights, bytes);
  const { page, view } = await dropped([s.same, s.pubA, path.join(s.model, "model.sig"), TRAINER]);
  assert.equal(await view.getAttribute("data-valid"), "true", "the signature itself verifies");
  const result = await chooseFolder(page, tampered);
  assert.equal(await result.getAttribute("data-valid"), "false");
  assert.equal(await text(result, "model-check"), "file_digest");
  assert.equal(await text(result, "model-file"), "weights/part-00002.bin");
  assert.match(await text(result, "model-detail"), /weights\/part-00002\.bin/);
  // A file added to the folder is refused by name too.
  const added = path.join(s.dir, "added");
  fs.cpSync(s.model, added, { recursive: true });
  fs.writeFileSync(path.join(added, "weights", "extra.bin"), "planted");
  const again = await chooseFolder(page, added);
  await page.waitForFunction(() => document.querySelector('[data-testid="model-files-result"] [data-testid="model-check"]')?.textContent === "file_extra");
  assert.equal(await text(again, "model-file"), "weights/extra.bin");
  assert.deepEqual(page.errors, []);
  await page.context().close();
});

test("an untrusted trainer key is refused, and no file list is shown", async () => {
  const { page, view } = await dropped([s.same, s.pubA, path.join(s.model, "model.sig"), OTHER]);
  assert.equal(await view.getAttribute("data-valid"), "false");
  assert.equal(await text(view, "model-check"), "untrusted_key");
  assert.equal(await view.locator('[data-testid="model-resource"]').count(), 0);
  assert.equal(await view.locator('[data-testid="model-folder-input"]').count(), 0);
  assert.equal(await view.locator('[data-testid="model-same"]').getAttribute("data-same"), "unknown");
  assert.deepEqual(page.errors, []);
  await page.context().close();
});

test("a decision about another model: not the same model; a decision by the original digest: the same, told by the folder's files", async () => {
  const { page, view } = await dropped([s.other, s.pubA, path.join(s.model, "model.sig"), TRAINER]);
  await page.locator('[data-testid="signed-decision"][data-valid="true"]').waitFor({ timeout: 30000 });
  assert.equal(await view.getAttribute("data-valid"), "true");
  assert.equal(await view.locator('[data-testid="model-same"]').getAttribute("data-same"), "false");
  await page.context().close();

  const second = await dropped([s.byOriginal, s.pubA, path.join(s.model, "model.sig"), TRAINER]);
  await second.page.locator('[data-testid="signed-decision"][data-valid="true"]').waitFor({ timeout: 30000 });
  assert.equal(await second.view.locator('[data-testid="model-same"]').getAttribute("data-same"), "unknown", "the original digest counts files the signature leaves out");
  const result = await chooseFolder(second.page, s.model);
  assert.equal(await result.getAttribute("data-valid"), "true");
  const same = result.locator('[data-testid="model-same"]');
  assert.equal(await same.getAttribute("data-same"), "true");
  assert.equal(await same.getAttribute("data-by"), "files");
  assert.deepEqual(second.page.errors, []);
  await second.page.context().close();
});
