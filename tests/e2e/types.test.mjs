// The TypeScript types of the JS package (pkg/deploy_gate.d.ts) against what the package really
// returns. Every exported function and class is called on real inputs (the parity fixtures)
// under node; each result is written as an object literal typed with its exported interface
// into a .ts file, and `tsc --strict --noEmit` compiles it together with consumer.ts (a small
// program using every exported type). A key the package returns that the types lack is an
// excess property (an error for a fresh object literal); a required key the package does not
// return is a missing property; a value of another type is a type error. A control run proves
// that the check sees a wrong key.
import { test } from "node:test";
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import fs from "node:fs";
import path from "node:path";
import { ROOT, FIXTURES, ARTIFACTS } from "./harness.mjs";

const pkg = path.join(ROOT, "pkg");
const wasm = await import(path.join(pkg, "deploy_gate.js"));
wasm.initSync({ module: fs.readFileSync(path.join(pkg, "deploy_gate_bg.wasm")) });
const TSC = path.join(ROOT, "tests/e2e/node_modules/typescript/bin/tsc");

const read = (fixture, file) => fs.readFileSync(path.join(FIXTURES, fixture, file));

/** Every result the package gives, from real calls. */
function samples() {
  const out = {};
  const fixture = "approved";
  const audit = read(fixture, "audit.jsonl");

  // Streamed audit log, pass-2 ranges fed back, both models with trajectories.
  const s = new wasm.GateSession({ min_samples: 20, max_samples: null, on_insufficient: "approve" });
  out.policy = ["GateReport[\"policy\"]", s.policy()];
  out.change = ["PolicyChange", s.setPolicy({ min_samples: 20, max_samples: "none", on_insufficient: "approve" })];
  s.beginAudit("audit.jsonl");
  s.pushAudit(audit);
  out.audit = ["AuditSummary", s.finishAudit()];
  const ranges = s.neededRanges();
  for (let i = 0; i < ranges.length / 3; i++) {
    const end = ranges[3 * i + 2] < 0 ? audit.length : ranges[3 * i + 2];
    s.feedRange(i, audit.subarray(ranges[3 * i + 1], end));
    s.endRange(i);
  }
  out.testSet = ["TestSetInfo", s.finishTestSet()];
  out.cases = ["TestCase[]", s.testCases().slice(0, 5)];
  s.addVerdicts("old", read(fixture, "old_verdicts.jsonl"), "old_verdicts.jsonl");
  s.addVerdicts("new_verdicts", read(fixture, "new_verdicts.jsonl"), "new_verdicts.jsonl");
  s.addTrajectories("old", read(fixture, "old_trajectories.jsonl"), "old_trajectories.jsonl");
  s.addTrajectories("new_trajectories", read(fixture, "new_trajectories.jsonl"), "new_trajectories.jsonl");
  const report = s.evaluate();
  out.report = ["GateReport", report];
  assert.deepEqual(JSON.parse(s.evaluateJson()), report);

  out.defaults = ["GatePolicy", wasm.defaultPolicy()];
  out.checked = ["PolicyCheck[]", [wasm.checkPolicy({ max_samples: "none", mode: "non-inferiority" }), wasm.checkPolicy({ max_samples: "lots" })]];
  assert.equal(out.checked[1][1].ok, false);

  // The whole stream of a file (as a gzip log is read), routed by the session.
  const g = new wasm.GateSession({ min_samples: 20, on_insufficient: "approve" });
  g.beginAudit("audit.jsonl");
  g.pushAudit(audit);
  g.finishAudit();
  g.neededRanges();
  let more = true;
  for (let at = 0; more && at < audit.length; at += 65536) more = g.feedStream(0, audit.subarray(at, at + 65536));
  g.endStream(0);
  out.streamed = ["TestSetInfo", g.finishTestSet()];
  assert.equal(typeof more, "boolean");

  // A report without trajectories (null cards) and a blocked one.
  const t = new wasm.GateSession(undefined);
  const blockedAudit = read("both-regressed", "audit.jsonl");
  t.beginAudit("audit.jsonl");
  t.pushAudit(blockedAudit);
  t.finishAudit();
  out.testSetInMemory = ["TestSetInfo", t.buildTestSet([blockedAudit])];
  t.addVerdicts("old", read("both-regressed", "old_verdicts.jsonl"), "old_verdicts.jsonl");
  t.addVerdicts("new", read("both-regressed", "new_verdicts.jsonl"), "new_verdicts.jsonl");
  out.blocked = ["GateReport", t.evaluate()];

  // Clustered intervals, repeated runs and an inconclusive decision (the compatibility inputs:
  // templates of unequal size, cases without one, several verdicts a case).
  const compat = (f) => fs.readFileSync(path.join(ROOT, "tests/fixtures/compat", f));
  const m = new wasm.GateSession({ mode: "non_inferiority", task_tol: 0.05, repeats: "mean" });
  const compatAudit = compat("inputs/audit.jsonl");
  m.beginAudit("audit.jsonl");
  m.pushAudit(compatAudit);
  m.finishAudit();
  m.buildTestSet([compatAudit]);
  m.addVerdicts("old", compat("inputs/old_verdicts.jsonl"), "old_verdicts.jsonl");
  m.addVerdicts("new", compat("inputs/new_equal.jsonl"), "new_equal.jsonl");
  out.inconclusive = ["GateReport", m.evaluate()];
  assert.equal(out.inconclusive[1].decision.outcome, "inconclusive");
  assert.equal(out.inconclusive[1].stats.task.mcnemar, null);
  assert.equal(typeof out.inconclusive[1].stats.task.clustered.design_effect, "number");
  assert.equal(typeof out.inconclusive[1].cases[0].new_runs, "number");
  m.setPolicy({ cluster: "none" });
  out.unclustered = ["GateReport", m.evaluate()];
  assert.equal(out.unclustered[1].stats.task.clustered, null);
  // A decision signed before outcomes existed, opened: its report has the earlier shape.
  const old = JSON.parse(compat("scenarios/ni-policy-file/report.json"));
  const oldEnvelope = compat("scenarios/ni-policy-file/decision.dsse.json");
  const signedAt = Date.parse(JSON.parse(Buffer.from(JSON.parse(oldEnvelope).payload, "base64")).predicate.timeVerified) / 1000;
  out.openedOld = ["SignedDecision", wasm.openSignedDecision(oldEnvelope, [compat("reviewer.pub.pem").toString()], { now: signedAt + 60 })];
  assert.equal(out.openedOld[1].valid, true);
  assert.equal(out.openedOld[1].outcome, "blocked");
  assert.equal(out.openedOld[1].report.decision.outcome, undefined);
  assert.deepEqual(out.openedOld[1].report, old);

  // Guardrails: the fixture's verdicts with a latency and usage on every record, a policy file
  // with prices, guardrails (one on a metric no record carries: no case, nulls) and
  // template_regression; and policy files the core refuses.
  const withCost = (file, slower) =>
    new TextEncoder().encode(
      read(fixture, file).toString().split("\n").filter((l) => l.trim()).map((l, i) => JSON.stringify({ ...JSON.parse(l), latency_ms: (100 + (i % 13) * 10) * slower, usage: { prompt_tokens: 100 + (i % 7), completion_tokens: 20 + (i % 5) } })).join("\n") + "\n",
    );
  const policyFile = {
    min_samples: 20, on_insufficient: "approve",
    prices: { old: { prompt_per_million: 0.15, completion_per_million: 0.6 }, new: { prompt_per_million: 0.1, completion_per_million: 0.4 } },
    guardrails: [
      { metric: "latency_ms", statistic: "mean", max_increase: "10%" },
      { metric: "latency_ms", statistic: "p50", max_increase: 0.2, action: "advise", min_cases: 5 },
      { metric: "cost", max_difference: 0.001, action: "advise" },
      { metric: "metrics.steps", max_difference: 1 },
    ],
    template_regression: { max_drop: 0.1, min_cases: 5 },
  };
  const encode = (x) => new TextEncoder().encode(typeof x === "string" ? x : JSON.stringify(x));
  out.policyFiles = ["PolicyFileCheck[]", [wasm.checkPolicyFile(encode(policyFile)), wasm.checkPolicyFile(encode("[1]")), wasm.checkPolicyFile(encode({ guardrails: [{ metric: "latency_ms" }] }))]];
  assert.equal(out.policyFiles[1][1].field, null);
  assert.equal(out.policyFiles[1][2].ok, false);
  const guarded = new wasm.GateSession(out.policyFiles[1][0].policy);
  guarded.beginAudit("audit.jsonl");
  guarded.pushAudit(audit);
  guarded.finishAudit();
  guarded.buildTestSet([audit]);
  guarded.addVerdicts("old", withCost("old_verdicts.jsonl", 1), "old_verdicts.jsonl");
  guarded.addVerdicts("new", withCost("new_verdicts.jsonl", 1.5), "new_verdicts.jsonl");
  out.guarded = ["GateReport", guarded.evaluate()];
  out.guardedPolicy = ["GatePolicy", guarded.policy()];
  const criteria = out.guarded[1].guardrails.criteria;
  assert.equal(criteria.length, 4);
  assert.ok(criteria[0].distribution && criteria[0].distribution.counts.length === 20);
  assert.equal(criteria[3].distribution, null);
  assert.ok(out.guarded[1].guardrails.template_regression.templates.length > 0);

  out.guesses = ["RoleGuess[]", [
    wasm.GateSession.sniffRole("audit.jsonl", audit.subarray(0, 4096)),
    wasm.GateSession.sniffRole("x.jsonl", read(fixture, "old_verdicts.jsonl").subarray(0, 4096)),
    wasm.GateSession.sniffRole("notes.txt", new TextEncoder().encode("hello")),
  ]];

  // Keys, a signed decision, a valid and an invalid verification.
  const pair = wasm.generateKeyPair(new Uint8Array(32).fill(7));
  out.pair = ["KeyPair", pair];
  out.keyInfo = ["KeyInfo[]", [wasm.keyInfo(pair.private_pem), wasm.keyInfo(pair.public_pem)]];
  const digest = "a".repeat(64);
  const envelope = wasm.signDecision(JSON.stringify(report), pair.private_pem, "model", digest, "prod", 1_800_000_000);
  const bytes = new TextEncoder().encode(envelope);
  out.verified = ["VerifyResult", wasm.verifyEnvelope(bytes, [pair.public_pem], { threshold: 1, model_digest: digest, target: "prod", now: 1_800_000_100, max_age_seconds: 3600 })];
  const other = wasm.generateKeyPair(new Uint8Array(32).fill(8));
  out.refused = ["VerifyResult", wasm.verifyEnvelope(bytes, [other.public_pem], { now: 1_800_000_100 })];
  assert.equal(out.verified[1].valid, true);
  assert.equal(out.refused[1].valid, false);
  // A signed decision opened (with its report) and refused (without), and a co-signed one.
  out.opened = ["SignedDecision", wasm.openSignedDecision(bytes, [pair.public_pem], { now: 1_800_000_100 })];
  out.openRefused = ["SignedDecision", wasm.openSignedDecision(bytes, [other.public_pem], { now: 1_800_000_100 })];
  assert.equal(JSON.parse(wasm.cosignDecision(bytes, other.private_pem, [pair.public_pem], { now: 1_800_000_100 })).signatures.length, 2);
  assert.equal(out.opened[1].report_json, JSON.stringify(report, null, 2) + "\n");
  assert.equal(out.openRefused[1].report, undefined);

  // Diffs: two reports (one with an outcome and a report that predates statistics), two signed
  // decisions, and the slices of their lists.
  const swapped = new wasm.GateSession({ min_samples: 20, max_samples: null, on_insufficient: "approve" });
  swapped.beginAudit("audit.jsonl");
  swapped.pushAudit(audit);
  swapped.finishAudit();
  swapped.buildTestSet([audit]);
  swapped.addVerdicts("old", read(fixture, "new_verdicts.jsonl"), "new_verdicts.jsonl");
  swapped.addVerdicts("new", read(fixture, "old_verdicts.jsonl"), "old_verdicts.jsonl");
  const otherJson = swapped.evaluateJson();
  const withOutcome = JSON.parse(s.evaluateJson());
  withOutcome.decision.outcome = withOutcome.decision.approved ? "approved" : "blocked";
  const d = wasm.diffReports(JSON.stringify(withOutcome), otherJson, { before_name: "a.json", after_name: "b.json" });
  out.diff = ["DiffDocument", d.toObject()];
  out.diffSummary = ["DiffDocument", d.summary()];
  out.flipRows = ["DiffFlipRow[]", d.flips(0, 3)];
  out.templateRows = ["DiffTemplateRow[]", d.templates(0, 3)];
  assert.ok(d.flipCount > 0 && typeof d.changed === "boolean");
  const firstBuild = fs.readFileSync(path.join(ROOT, "tests/fixtures/diff/first-build/both-regressed.report.json"), "utf8");
  const oneSided = wasm.diffReports(firstBuild, otherJson);
  out.oldDiff = ["DiffDocument", oneSided.toObject()];
  out.idRows = ["DiffIdRow[]", oneSided.onlyIds("before", 0, 2)];
  assert.equal(out.idRows[1].length, 2);
  const signedDiff = wasm.diffEnvelopes(bytes, bytes, [pair.public_pem]);
  out.signedDiff = ["DiffDocument", signedDiff.summary()];
  out.mixedDiff = ["DiffDocument", wasm.diffDocuments(new TextEncoder().encode(otherJson), bytes, { trusted_keys: [pair.public_pem], threshold: 1 }).summary()];
  for (const x of [d, oneSided, signedDiff]) {
    assert.equal(typeof x.json(), "string");
    assert.equal(typeof x.markdown() + typeof x.html() + typeof x.junit(), "stringstringstring");
  }
  // The trainer's model signature (tests/fixtures/oms-page, signed by model-signing): verified
  // with its files (valid, and one tampered), without files, against an untrusted key; a folder
  // hashed file by file; the keys' and roots' info.
  const oms = (f) => fs.readFileSync(path.join(ROOT, "tests/fixtures/oms-page", f));
  const modelDir = path.join(ROOT, "tests/fixtures/oms-page/model");
  const modelFiles = fs.readdirSync(modelDir, { recursive: true }).filter((p) => fs.statSync(path.join(modelDir, p)).isFile()).map((p) => ({ path: p.split(path.sep).join("/"), bytes: fs.readFileSync(path.join(modelDir, p)) }));
  const trainer = oms("trainer.pub.pem").toString();
  const bundle = oms("model/model.sig");
  const omsDecision = { decision: { model_digest: "sha256:5ead6fba1f924fe03dcfd50f04ec4ebf1789f1bf8d6a8c6883d70c2834ee2441", digest_scheme: "oms-v1.0-files" } };
  const tampered = modelFiles.map((f) => (f.path === "config.json" ? { path: f.path, bytes: new Uint8Array([1]) } : f));
  out.modelSignatures = ["ModelSignatureResult[]", [
    wasm.verifyModelSignature(bundle, [trainer], modelFiles, omsDecision),
    wasm.verifyModelSignature(bundle, [trainer], tampered, { decision: { model_digest: "a".repeat(64) } }),
    wasm.verifyModelSignature(bundle.toString(), [trainer]),
    wasm.verifyModelSignature(bundle, [oms("other.pub.pem").toString()], undefined, omsDecision),
    wasm.verifyModelSignature(oms("shards.sig"), [trainer], modelFiles),
  ]];
  assert.equal(out.modelSignatures[1][0].valid, true);
  assert.equal(out.modelSignatures[1][1].failure.check, "file_digest");
  assert.equal(out.modelSignatures[1][3].failure.check, "untrusted_key");
  assert.equal(out.modelSignatures[1][4].valid, true);
  // A keyless bundle (tests/fixtures/oms-keyless): its signer, one character off, a given root.
  const keyless = fs.readFileSync(path.join(ROOT, "tests/fixtures/oms-keyless/v1.1.0-sigstore/model.sig"));
  const signer = { identity: "stefanb@us.ibm.com", issuer: "https://sigstore.verify.ibm.com/oauth2" };
  const sigstoreRoot = fs.readFileSync(path.join(ROOT, "tests/fixtures/oms-keyless/trusted_root.json"), "utf8");
  out.keylessSignatures = ["ModelSignatureResult[]", [
    wasm.verifyModelSignature(keyless, [], undefined, { trainer_identities: [signer] }),
    wasm.verifyModelSignature(keyless, [], undefined, { trainer_identities: [{ ...signer, identity: "stefanb@us.ibm.co" }] }),
    wasm.verifyModelSignature(keyless, [], undefined, { trainer_identities: [signer], sigstore_root: sigstoreRoot }),
  ]];
  assert.equal(out.keylessSignatures[1][0].signature.signed_by.method, "keyless");
  assert.equal(out.keylessSignatures[1][1].failure.check, "keyless_identity");
  assert.equal(out.keylessSignatures[1][2].valid, true);
  const check = new wasm.ModelCheck(oms("shards.sig"), [trainer], undefined);
  const hasher = new wasm.ModelFileHasher(check.shardSize);
  hasher.update(modelFiles[0].bytes);
  out.modelDigests = ["ModelFileDigests", hasher.finish()];
  check.free();
  out.trainerKeys = ["TrainerKeyInfo[]", [wasm.trainerKeyInfo(trainer), wasm.trainerKeyInfo(oms("root.pem").toString())]];
  return out;
}

function literalFile(all, extra = "") {
  const names = [...new Set(Object.values(all).map(([type]) => type.replace(/\[.*$/, "").replace(/\[\]$/, "")))];
  let text = `import type { ${names.join(", ")} } from ${JSON.stringify(path.join(pkg, "deploy_gate.js"))};\n`;
  for (const [name, [type, value]] of Object.entries(all)) {
    text += `export const ${name}: ${type} = ${JSON.stringify(value, null, 1)};\n`;
  }
  return text + extra;
}

function tsc(dir, files) {
  const r = spawnSync(process.execPath, [TSC, "--strict", "--noEmit", "--target", "es2022", "--module", "es2022", "--moduleResolution", "bundler", "--lib", "esnext,dom", ...files], { cwd: dir, encoding: "utf8" });
  return { status: r.status, output: (r.stdout || "") + (r.stderr || "") };
}

test("every result the package returns matches its TypeScript type, key by key", () => {
  const dir = path.join(ARTIFACTS, "types");
  fs.mkdirSync(dir, { recursive: true });
  const all = samples();
  fs.writeFileSync(path.join(dir, "samples.ts"), literalFile(all));
  const r = tsc(dir, ["samples.ts", path.join(ROOT, "tests/e2e/types/consumer.ts")]);
  assert.equal(r.status, 0, r.output);
});

test("the type check sees a key the types do not have and a key the package does not return", () => {
  const dir = path.join(ARTIFACTS, "types-control");
  fs.mkdirSync(dir, { recursive: true });
  const all = samples();
  const report = structuredClone(all.report[1]);
  report.decision.not_a_field = 1;
  const short = structuredClone(all.report[1]);
  delete short.stats;
  fs.writeFileSync(path.join(dir, "extra.ts"), literalFile({ report: ["GateReport", report] }));
  fs.writeFileSync(path.join(dir, "missing.ts"), literalFile({ report: ["GateReport", short] }));
  const extra = tsc(dir, ["extra.ts"]);
  assert.notEqual(extra.status, 0);
  assert.match(extra.output, /not_a_field/);
  const missing = tsc(dir, ["missing.ts"]);
  assert.notEqual(missing.status, 0);
  assert.match(missing.output, /stats/);
});
