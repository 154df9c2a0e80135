// A small consumer of the JS package, compiled with `tsc --strict --noEmit` by
// tests/e2e/types.test.mjs: it uses every exported type and function the way an embedder
// does, so a change to the types that breaks embedders breaks this file.
import init, {
  GateSession,
  SegmentScanner,
  Sha256Stream,
  checkPolicy,
  checkPolicyFile,
  defaultPolicy,
  diffDocuments,
  diffEnvelopes,
  diffReports,
  GateDiff,
  generateKeyPair,
  keyInfo,
  signDecision,
  readReview,
  reportMarkdown,
  reviewFile,
  verifyEnvelope,
  verifyModelSignature,
  trainerKeyInfo,
  ModelCheck,
  ModelFileHasher,
  type ModelFileDigests,
  type ModelFileInput,
  type ModelResource,
  type ModelSignatureCheckName,
  type ModelSignatureOptions,
  type ModelSignatureResult,
  type OpenedDecision,
  type SameModel,
  type TrainerKeyInfo,
  type TrainerSignature,
  type ABComparison,
  type AuditSummary,
  type CaseOutcome,
  type ClusteredTask,
  type Outcome,
  type DeltaInterval,
  type GatePolicy,
  type GateStats,
  type McNemar,
  type MeanN,
  type PairedTable,
  type PolicyCheck,
  type PolicyFileCheck,
  type Guardrail,
  type GuardrailCriterion,
  type GuardrailInput,
  type GuardrailsReport,
  type ChangeDistribution,
  type TemplateRegressionResult,
  type RateInterval,
  type SampleSize,
  type TaskStats,
  type TrajectoryStats,
  type GateDecision,
  type GateReport,
  type Evidence,
  type InputFile,
  type KeyInfo,
  type CaseReviewMark,
  type ReviewMarkName,
  type ReviewRead,
  type KeyPair,
  type ModelCounts,
  type PolicyChange,
  type PolicyInput,
  type Role,
  type RoleGuess,
  type SkipStat,
  type TemplateRow,
  type TestCase,
  type TestSetInfo,
  type TrajectoryInfo,
  type VerifyOptions,
  type VerifyResult,
  type DiffDocument,
  type DiffFlip,
  type DiffFlipRow,
  type DiffIdRow,
  type DiffOptions,
  type DiffOutcome,
  type DiffSide,
  type DiffTemplateRow,
} from "../../../pkg/deploy_gate.js";
import type { DeployGateDiff, DeployGateDiffEvent, DeployGateReviewEvent, DeployGateViewer } from "../../../www/deploy-gate-viewer.js";

export async function gate(audit: File, old: Uint8Array, fresh: Uint8Array): Promise<GateReport> {
  await init();
  const policy: PolicyInput = { min_samples: 20, max_samples: "none", pass_verdicts: "PASS,APPROVE", on_insufficient: "block" };
  const session = new GateSession(policy);
  const change: PolicyChange = session.setPolicy({ seed: 1 });
  if (change === "rescan") session.beginAudit(audit.name);
  session.beginAudit(audit.name);
  session.pushAudit(new Uint8Array(await audit.arrayBuffer()));
  const summary: AuditSummary = session.finishAudit();
  const skipped: SkipStat[] = Object.values(summary.skipped);
  const ranges: Float64Array = session.neededRanges();
  for (let i = 0; i < ranges.length / 3; i++) {
    const end = ranges[3 * i + 2] < 0 ? audit.size : ranges[3 * i + 2];
    session.feedRange(i, new Uint8Array(await audit.slice(ranges[3 * i + 1], end).arrayBuffer()));
    session.endRange(i);
  }
  const info: TestSetInfo = session.finishTestSet();
  const cases: TestCase[] = session.testCases();
  const role: Role = "old_verdicts";
  session.addVerdicts(role, old, "old.jsonl");
  session.addVerdicts("new", fresh, "new.jsonl");
  const report: GateReport = session.evaluate();
  const decision: GateDecision = report.decision;
  const comparison: ABComparison = report.comparison;
  const counts: ModelCounts = report.verdicts.old;
  const traj: TrajectoryInfo | null = report.trajectories.new;
  const rows: TemplateRow[] = report.templates;
  const outcomes: CaseOutcome[] = report.cases.filter((c) => c.status === "regressed");
  const files: InputFile[] = report.inputs;
  const guess: RoleGuess = GateSession.sniffRole("x.jsonl", old.subarray(0, 100));
  console.log(skipped.length, info.num_cases, cases.length, decision.approved, comparison.recommendation,
    counts.pass_rate, traj?.mean, rows.length, outcomes.length, files.length, guess.role, report.stats);
  session.free();
  return report;
}

export function policyForm(fields: Record<string, string>): GatePolicy | string {
  const defaults: GatePolicy = defaultPolicy();
  const checked: PolicyCheck = checkPolicy({ ...fields, on_insufficient: defaults.on_insufficient });
  return checked.ok ? checked.policy : `${checked.field}: ${checked.message}`;
}

/** A policy file's guardrails, and the report's: the failing criteria and their plots' bins. */
export function guardrails(file: Uint8Array, report: GateReport): string[] {
  const checked: PolicyFileCheck = checkPolicyFile(file);
  const given: Guardrail[] = checked.ok ? checked.policy.guardrails ?? [] : [];
  const extra: GuardrailInput = { metric: "metrics.steps", max_difference: 1, action: "advise" };
  const g: GuardrailsReport | undefined = report.guardrails;
  const failing: GuardrailCriterion[] = (g?.criteria ?? []).filter((c) => c.outcome !== "within");
  const bins: ChangeDistribution[] = failing.flatMap((c) => (c.distribution ? [c.distribution] : []));
  const templates: TemplateRegressionResult | undefined = g?.template_regression;
  const limits = given.map((x) => ("max_increase" in x && x.max_increase !== undefined ? `+${x.max_increase * 100}%` : `±${x.max_difference}`));
  return [...limits, extra.metric, ...failing.map((c) => `${c.statistic} ${c.metric}: ${c.outcome}`), String(bins.length), String(templates?.templates.filter((t) => t.regressed).length ?? 0)];
}

export function evidence(report: GateReport): string {
  const stats: GateStats = report.stats;
  const task: TaskStats = stats.task;
  const rates: RateInterval[] = [task.old, task.new];
  const delta: DeltaInterval = task.delta;
  // No McNemar test under `repeats: mean`; no clustered interval under `cluster: none`, with one
  // cluster, or in a report made before it existed.
  const test: McNemar | null = task.mcnemar;
  const clustered: ClusteredTask | null | undefined = task.clustered;
  const table: PairedTable = task.table;
  const size: SampleSize = task.sample_size;
  const traj: TrajectoryStats | null = stats.trajectory;
  const means: MeanN[] = traj ? [traj.old, traj.new] : [];
  const ruled: DeltaInterval = clustered ? clustered.delta : delta;
  return [rates.map((r) => r.rate), delta.method, test?.p_exact, table.both_pass, size.cases_needed, means.length, ruled.low, clustered?.design_effect].join(" ");
}

/** How many cases the decision rests on: the report's `evidence`, or the cases both models answered (a report
 * whose cases every model answered, or made before `evidence` existed, has none); the cases not run apart. */
export function restsOn(report: GateReport): string {
  const e: Evidence | undefined = report.evidence;
  const over: "used" | "test_set" | undefined = e?.over;
  const notRun: number = e?.not_run ?? 0;
  const minUnits: number | null | undefined = report.sequential?.min_units;
  const maxMissing: number | undefined = report.policy.max_missing;
  const restsOn = e ? e.rests_on : report.cases.filter((c) => !c.old_missing && !c.new_missing).length;
  return `${restsOn} ${over ?? "test_set"} ${notRun} ${e?.missing.old ?? 0} ${minUnits ?? "none"} ${maxMissing ?? "default"}`;
}

/** What to do with a decision: deploy only when approved; a report made before outcomes existed has none. */
export function action(report: GateReport): string {
  const outcome: Outcome = report.decision.outcome ?? (report.decision.approved ? "approved" : "blocked");
  switch (outcome) {
    case "approved":
      return "deploy";
    case "inconclusive":
      return `keep the old model; about ${report.stats.task.sample_size.cases_needed} cases would settle it`;
    case "blocked":
      return "keep the old model";
  }
}

/** Pass 2 from a whole (decompressed) stream: the session keeps what the ranges need. */
export async function streamed(session: GateSession, stream: ReadableStream<Uint8Array>): Promise<TestSetInfo> {
  session.neededRanges();
  const reader = stream.getReader();
  for (;;) {
    const { done, value } = await reader.read();
    if (done || !session.feedStream(0, value)) break;
  }
  session.endStream(0);
  return session.finishTestSet();
}

export function segments(chunk: Uint8Array): Uint8Array {
  const scanner = new SegmentScanner(["PASS"], 0, 0);
  scanner.push(chunk);
  const hash = new Sha256Stream();
  hash.update(chunk);
  const hex: string = hash.finish();
  console.log(hex);
  return scanner.finish();
}

export function signAndVerify(report: GateReport, seed: Uint8Array): VerifyResult {
  const pair: KeyPair = generateKeyPair(seed);
  const info: KeyInfo = keyInfo(pair.public_pem);
  const envelope: string = signDecision(JSON.stringify(report), pair.private_pem, "model", "a".repeat(64), "prod", Date.now() / 1000);
  const options: VerifyOptions = { threshold: 1, model_digest: "a".repeat(64), target: "prod", now: Date.now() / 1000 };
  const result: VerifyResult = verifyEnvelope(new TextEncoder().encode(envelope), [pair.public_pem], options);
  if (!result.valid) throw new Error(`${info.keyid}: ${result.check}: ${result.message}`);
  return result;
}

/** A portal's review: marks on the report's cases as the review file, read back, signed with it
 * and listed in the Markdown summary. */
export function signWithReview(reportJson: string, privatePem: string): [string, string] {
  const mark: ReviewMarkName = "label_wrong";
  const marks: CaseReviewMark[] = [{ case: 0, mark, note: "the expected verdict is a retry's" }];
  const file: string = reviewFile(reportJson, marks);
  const bytes = new TextEncoder().encode(file);
  const read: ReviewRead = readReview(reportJson, bytes, "review.jsonl");
  console.log(read.marks.length, read.elsewhere.map((m) => `${m.line}: ${m.pipeline_id}`), read.pin.marks.label_wrong, read.pin.regressed.marked);
  const envelope: string = signDecision(reportJson, privatePem, "model", "a".repeat(64), "prod", Date.now() / 1000, bytes);
  return [envelope, reportMarkdown(reportJson, bytes)];
}

/** Two evaluations compared: what regressed since last week, page by page. */
export function compare(lastWeek: string, thisWeek: string, envelopes: [Uint8Array, Uint8Array], keys: string[]): string[] {
  const options: DiffOptions = { before_name: "last-week.json", after_name: "this-week.json" };
  const diff: GateDiff = diffReports(lastWeek, thisWeek, options);
  const whole: DiffDocument = diff.toObject();
  const sides: DiffSide[] = [whole.before, whole.after];
  const outcome: DiffOutcome = whole.decision.after;
  const regressed: DiffFlip[] = whole.cases.flips.filter((f) => f.model === "new" && f.before_pass && !f.after_pass);
  const shown: string[] = [];
  for (let from = 0; from < diff.flipCount; from += 100) {
    const rows: DiffFlipRow[] = diff.flips(from, from + 100);
    shown.push(...rows.map((r) => `${r.id_label} (${r.id_kind}) ${r.template_text ?? "—"}`));
  }
  const only: DiffIdRow[] = diff.onlyIds("after", 0, diff.onlyAfterCount);
  const templates: DiffTemplateRow[] = diff.templates(0, diff.templateCount);
  const signed: GateDiff = diffEnvelopes(envelopes[0], envelopes[1], keys, { threshold: 1 });
  const either: GateDiff = diffDocuments(envelopes[0], new TextEncoder().encode(thisWeek), { trusted_keys: keys });
  console.log(sides.length, outcome, regressed.length, only.length, templates.length, signed.changed, either.json().length, diff.markdown().length, diff.html().length, diff.junit().length);
  diff.free();
  return shown;
}

/** The element's comparison from a portal. */
export async function viewerCompare(viewer: DeployGateViewer, before: File, after: string, keys: string[]): Promise<number> {
  viewer.addEventListener("dg-diff", (e: DeployGateDiffEvent) => console.log(e.detail.diff.decision.changed));
  const diff: DeployGateDiff = await viewer.compare(before, after, { trustedKeys: keys });
  const json: string | null = await viewer.diffJson();
  viewer.addEventListener("dg-review", (e: DeployGateReviewEvent) => console.log(e.detail.marks.map((m) => `${m.case} ${m.mark} ${m.note ?? ""}`)));
  const review: string | null = await viewer.reviewFile();
  console.log(review?.length);
  return diff.cases.flips.filter((f) => f.id_kind === "integer").length + (json ?? "").length;
}

/** A trainer's model.sig beside a signed decision: the files of a folder hashed one at a time
 * (each could be hashed in a worker of its own), then compared with the signed ones. */
export async function modelSignature(bundle: Uint8Array, trainerPem: string, opened: OpenedDecision, folder: File[]): Promise<string> {
  const key: TrainerKeyInfo = trainerKeyInfo(trainerPem);
  const options: ModelSignatureOptions = { decision: { model_digest: opened.model_digest, digest_scheme: opened.digest_scheme } };
  const alone: ModelSignatureResult = verifyModelSignature(bundle, [trainerPem], null, options);
  const inMemory: ModelFileInput[] = [{ path: "config.json", bytes: new Uint8Array(await folder[0].arrayBuffer()) }];
  const small: ModelSignatureResult = verifyModelSignature(new TextDecoder().decode(bundle), [trainerPem], inMemory);
  const check = new ModelCheck(bundle, [trainerPem], options);
  for (const file of folder) {
    const path = file.webkitRelativePath.slice(file.webkitRelativePath.indexOf("/") + 1);
    if (check.ignored(path)) continue;
    const hasher = new ModelFileHasher(check.shardSize);
    const reader = file.stream().getReader();
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      hasher.update(value);
    }
    const d: ModelFileDigests = hasher.finish();
    check.addFileDigests(path, d.size, d.sha256, d.shards);
  }
  const result: ModelSignatureResult = check.finish();
  check.free();
  const signature: TrainerSignature | null = result.signature;
  const resources: ModelResource[] = signature ? signature.resources : [];
  const failed: ModelSignatureCheckName | undefined = result.failure?.check;
  const same: SameModel | null = result.same_model;
  return [key.kind, alone.valid, small.files?.all_match, resources.length, failed, same?.same, same?.by].join(" ");
}
