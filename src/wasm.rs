//! The WebAssembly API for the page and for JS embedders: one class, `GateSession`.
//!
//! Bytes and plain objects in, plain objects out. The audit log is streamed in chunks (pass 1),
//! then the session lists the byte ranges pass 2 needs (`neededRanges`: the spans of the chosen
//! pipelines), which the caller reads with `File.slice` and feeds back (`feedRange`,
//! `endRange`); embedders holding the whole file in memory
//! call `buildTestSet([bytes])` instead. Nothing here touches the DOM, the network or a clock.

use crate::attest::keys;
use crate::audit::{Segment, DEFAULT_MAX_LINE};
use crate::input::{Role, Side};
use crate::policy::{GatePolicy, PolicyError, PolicyInput};
use crate::session::{test_set_info, Session, SessionError};
use crate::sniff::sniff;
use crate::testset::{TestSet, TO_END};
use crate::verdicts::{OutputAt, OutputForm};
use serde::Serialize;
use wasm_bindgen::prelude::*;

mod model_signature;
pub use model_signature::{trainer_key_info, verify_model_signature, ModelCheck, ModelFileHasher};

#[wasm_bindgen(typescript_custom_section)]
const TYPES: &'static str = r#"
/**
 * The gate policy as the caller gives it; every field is optional (`defaultPolicy()` lists the
 * defaults). A string is read as the CLI flag reads its text (`"20"`, `"none"`, `"PASS,OK"`).
 * The tolerances may be spelt as the flags (`task_tol`, `traj_tol`) or as the report
 * (`task_regression_tol`, `trajectory_regression_tol`), not both. Unknown fields are refused.
 */
export interface PolicyInput {
  min_samples?: number | string;
  /** A number, or null / "none" / "all" / "" for no limit. */
  max_samples?: number | string | null;
  seed?: number | string;
  task_tol?: number | string;
  task_regression_tol?: number | string;
  traj_tol?: number | string;
  trajectory_regression_tol?: number | string;
  /** A list, or one comma-separated string. */
  pass_verdicts?: string[] | string;
  on_insufficient?: "block" | "approve";
  mode?: "point" | "non_inferiority" | "non-inferiority";
  /** Strictly between 0 and 1. */
  confidence?: number | string;
  /** `template`: intervals clustered by template (the default); `none`: every case independent. */
  cluster?: "template" | "none";
  /** Which verdicts of a case count: `last` (the default, the reference's rule) or `mean` (every one). */
  repeats?: "last" | "mean";
  /** `true` decides the task criterion by the sequential rule (needs `mode: "non_inferiority"`); absent or `false`: the fixed rule. */
  sequential?: boolean | "true" | "false";
  /** The largest share of the test set (minus the cases not run) that may lack a verdict on either side before the decision is inconclusive: a fraction in [0, 1] or its text with `%` ("5%"); absent: 5%, not written. */
  max_missing?: number | string;
  /** The sequential rule's budget: the most cases (templates under `cluster: "template"`) to use, a whole number ≥ 1; only with `sequential: true`. */
  budget?: number | string;
  /** Per-million-token prices for the `cost` metric: one price for both models, or each model's. */
  prices?: PriceInput | { old: PriceInput; new: PriceInput };
  /** The guardrails (absent or empty: none). */
  guardrails?: GuardrailInput[];
  template_regression?: TemplateRegressionInput;
  /** `{require: "regressed"}`: a signed decision needs a review marking every regressed case (`sign --review`); absent: none. */
  review?: { require: "regressed" };
}
/** A model's prices, per million tokens (as the resolved policy lists them). */
export interface Price { prompt_per_million: number; completion_per_million: number; }
/** A model's prices as the caller gives them: numbers, or their text. */
export interface PriceInput { prompt_per_million: number | string; completion_per_million: number | string; }
export interface Prices { old: Price; new: Price; }
/** `latency_ms`, the token counts, `cost` (needs `prices`) or a number the verdicts carry under `metrics`. */
export type GuardrailMetric = "latency_ms" | "prompt_tokens" | "completion_tokens" | "total_tokens" | "cost" | `metrics.${string}`;
export type GuardrailStatistic = "mean" | "p50" | "p90" | "p95" | "p99";
/** `block`: counts in the decision; `advise`: reported, never decides. */
export type GuardrailAction = "block" | "advise";
/**
 * A guardrail as the caller gives it: exactly one of `max_increase` (relative: `"10%"` or `0.1`)
 * and `max_difference` (absolute, in the metric's unit). `statistic` defaults to `mean`, `action`
 * to `block`; `min_cases`: the fewest cases it is judged with.
 */
export interface GuardrailInput {
  metric: GuardrailMetric; statistic?: GuardrailStatistic; max_increase?: number | string; max_difference?: number | string;
  action?: GuardrailAction; min_cases?: number | string;
}
/** A guardrail as the resolved policy lists it: one of `max_increase` (a fraction) and `max_difference`. */
export type Guardrail = { metric: GuardrailMetric; statistic: GuardrailStatistic; action: GuardrailAction; min_cases?: number }
  & ({ max_increase: number; max_difference?: never } | { max_difference: number; max_increase?: never });
/** No template's pass rate may drop by more than `max_drop` (defaults: 0, 10 cases, `block`). */
export interface TemplateRegressionInput { max_drop?: number | string; min_cases?: number | string; action?: GuardrailAction; }
export interface TemplateRegression { max_drop: number; min_cases: number; action: GuardrailAction; }
/**
 * The resolved policy, as the report lists it (and as its digest is computed). `cluster` and
 * `repeats` are in every policy of this version; a report made before they existed has neither,
 * and its policy means what it meant then (no clustering, the last verdict, no `outcome`).
 */
export interface GatePolicy {
  min_samples: number; max_samples: number | null; seed: number; pass_verdicts: string[];
  task_regression_tol: number; trajectory_regression_tol: number; on_insufficient: "block" | "approve";
  mode: "point" | "non_inferiority"; confidence: number; cluster?: "template" | "none"; repeats?: "last" | "mean";
  /** Only in a sequential policy (always `true` there); absent: the fixed rule. */
  sequential?: true;
  /** Only in a sequential policy that gives a budget; absent: every unit of the test set. */
  budget?: number;
  /** Each of these only in a policy that gives it (a policy without them keeps its digest). */
  prices?: Prices; guardrails?: Guardrail[]; template_regression?: TemplateRegression;
  /** Only in a policy that gives it (a fraction); absent: 5%. */
  max_missing?: number;
  /** Only in a policy that gives it: a signed decision needs a review marking every regressed case. */
  review?: { require: "regressed" };
}
/** `checkPolicy`'s answer: the resolved policy, or the field at fault and the core's message. */
export type PolicyCheck = { ok: true; policy: GatePolicy } | { ok: false; field: string; message: string };
/** `checkPolicyFile`'s answer: the resolved policy and its digest (the SHA-256 of its canonical JSON, as a signed decision
 * records it), or the core's message (and the field at fault, null when the file is not a JSON object). */
export type PolicyFileCheck = { ok: true; policy: GatePolicy; digest: string } | { ok: false; field: string | null; message: string };
/** What `setPolicy` asks the caller to redo: scan the audit log again, rebuild the test set, or nothing. */
export type PolicyChange = "rescan" | "rebuild" | "ready";
export type Role = "audit" | "old_verdicts" | "new_verdicts" | "old_trajectories" | "new_trajectories";
export interface RoleGuess { kind: "audit" | "verdicts" | "trajectories" | "policy" | "unknown"; side: "old" | "new" | null; role: Role | null; }
export interface SkipStat { count: number; first_lines: { file: string; line: number }[]; }
export interface AuditSummary {
  files: number; bytes: number; lines: number; blank_lines: number; stage_entries: number;
  completion_entries: number; successful_completions: number; skipped: Record<string, SkipStat>;
  pipelines: number; successful_pipelines: number; successful_without_stages: number;
  successful_without_input: number; candidates: number;
}
export interface TestSetInfo { num_cases: number; candidates: number; sampled: boolean; insufficient: boolean; }
export interface TestCase {
  pipeline_id: string | number; template_id: unknown; input_text: unknown; expected_verdict: unknown;
  expected_stage_outputs: Record<string, unknown>; episode_reward: unknown; input_hash?: unknown;
}
export interface InputFile { role: Role; name: string; bytes: number; sha256: string; }
export interface ModelCounts {
  format: "jsonl" | "json_array" | "json_map" | "csv" | "tsv"; cases: number; passed: number; wrong: number;
  missing: number; errored: number; composite: number; pass_rate: number | null; records: number; extra: number;
  duplicates: number; conflicting: number; conflicting_ids: string[]; ignored_stage_entries: number;
  /** `repeats: mean` only: the verdicts of test cases, and how many pass. */
  runs?: number; passes?: number;
}
/** Nearest-rank quantiles of the counted records' latencies (ms). */
export interface LatencySummary { p50: number; p95: number; mean: number; max: number; }
/** A token count over the counted records that report it (`mean` null when none does). */
export interface TokenSummary { records: number; total: number; mean: number | null; }
/** What a model's counted records cost (`repeats: last`: each case's last record; `mean`: every run). */
export interface CostSummary {
  records: number; with_latency: number; latency_ms: LatencySummary | null; with_usage: number;
  prompt_tokens: TokenSummary; completion_tokens: TokenSummary; with_attempts: number; attempts: number;
  retried: number;
  /** The target digest when every record with `target` agrees, else null; `targets`: all of them, sorted. */
  target: string | null; targets: string[];
}
export interface TrajectoryInfo { results: number; skipped_without_judge: number; mean: number | null; composites: number[]; }
/** A decision's outcome: only the non-inferiority rule can be inconclusive, which never deploys. */
export type Outcome = "approved" | "blocked" | "inconclusive";
export interface GateDecision {
  /** Deploy the new model: exactly when `outcome` is `approved`. */
  approved: boolean;
  /** Absent in a report made before outcomes existed (`approved` then says approved or blocked). */
  outcome?: Outcome;
  reason: string; task_delta: number; trajectory_delta: number; task_old: number;
  task_new: number; trajectory_old: number | null; trajectory_new: number | null; num_cases: number;
  details: { task_regressed: boolean; trajectory_regressed: boolean; task_regression_tol: number;
             trajectory_regression_tol: number; trajectory_checked: boolean; };
}
/** A rate with its interval (Wilson's; the t interval of case scores under `repeats: mean`; cluster-robust when clustered). */
export interface RateInterval { rate: number; low: number; high: number; }
/** An interval for `new − old`: Newcombe's, the paired t or the cluster-robust t (task), or a seeded percentile bootstrap (trajectory). */
export interface DeltaInterval { estimate: number; low: number; high: number; method: "newcombe" | "paired_t" | "cluster_robust_t" | "bootstrap"; resamples?: number; seed?: number; }
/** The task's intervals clustered by template (t on `clusters − 1` degrees of freedom). */
export interface ClusteredTask { clusters: number; design_effect: number | null; delta: DeltaInterval; old: RateInterval; new: RateInterval; }
/** McNemar's test on the discordant pairs (b: old passes, new fails; c: the reverse). */
export interface McNemar { b: number; c: number; p_exact: number; p_mid: number; }
/** The paired 2×2 table of old and new pass/fail. */
export interface PairedTable { both_pass: number; old_only: number; new_only: number; both_fail: number; }
/** How many cases non-inferiority would need (`cases_needed` null for a tolerance of 0). */
export interface SampleSize { power: number; tolerance: number; discordance: number; cases_needed: number | null; num_cases: number; }
/**
 * The task evidence. `mcnemar` is null under `repeats: mean`; `clustered` is null under
 * `cluster: none` or with fewer than 2 clusters, and absent in a report made before it existed.
 */
export interface TaskStats { old: RateInterval; new: RateInterval; delta: DeltaInterval; mcnemar: McNemar | null; table: PairedTable; sample_size: SampleSize; clustered?: ClusteredTask | null; }
export interface MeanN { mean: number; n: number; }
export interface TrajectoryStats { old: MeanN; new: MeanN; delta: DeltaInterval; }
/** The report's statistics; every interval at `confidence`. */
export interface GateStats { confidence: number; task: TaskStats; trajectory: TrajectoryStats | null; }
export interface ABComparison { old_score: number; new_score: number; delta: number; num_cases: number; new_is_better: boolean; recommendation: "deploy" | "keep_old"; }
export interface CaseOutcome {
  pipeline_id: string | number; template_id: unknown; expected: unknown; old_verdict: string | null;
  new_verdict: string | null; old_pass: boolean; new_pass: boolean;
  status: "regressed" | "improved" | "both_pass" | "both_fail"; old_missing: boolean; new_missing: boolean;
  old_composite: boolean; new_composite: boolean; old_errored: boolean; new_errored: boolean; old_error?: string; new_error?: string;
  /** `repeats: mean` only: each model's verdicts for the case, and how many pass. */
  old_runs?: number; old_passes?: number; new_runs?: number; new_passes?: number;
}
/** A template's rates; `interval`: the unclustered interval of `new − old` on its cases (absent in older reports). */
export interface TemplateRow { template_id: unknown; n: number; old_pass_rate: number; new_pass_rate: number; delta: number; interval?: DeltaInterval; }
/** The recorded looks of a confidence sequence: three arrays of one length (every look to 1,000, then each at least 1.1 times the last recorded, and the last). */
export interface SequentialLooks { n: number[]; lower: number[]; upper: number[]; }
/**
 * A sequential decision of the task criterion (`policy.sequential: true`): the bounds of the mean
 * difference new − old over the units taken in the seed's order. `stopped`: `approved` (lower
 * bound > −tolerance), `blocked` (upper bound < 0) or `budget` (spent, or no more units: inconclusive).
 */
export interface SequentialReport {
  method: "betting_hedged_predictable_plugin"; unit: "case" | "template"; order_seed: number; budget: number;
  available: number; used: number; stopped: "approved" | "blocked" | "budget"; tolerance: number; confidence: number;
  /** The bounds at the last look used; null before any. */
  lower: number | null; upper: number | null;
  looks: SequentialLooks;
  /** The fewest units at which the rule could decide at all (every unit at its most favourable value); null: not within 1,000,000. Absent in a report made before it existed. */
  min_units?: number | null;
}
/**
 * What the decision rests on: present when a case lacks a verdict on some side or the decision is sequential.
 * `over`: `"used"` in a sequential report (the report's figures are over the cases of the units the rule used),
 * `"test_set"` in a fixed one. `not_run` (sequential only): the cases neither model answered.
 */
export interface Evidence {
  test_cases: number; answered: number; missing: { old: number; new: number }; not_run?: number; rests_on: number;
  over: "used" | "test_set"; max_missing: number;
}
/** Within: the interval lies within the limit; exceeded: beyond it; not shown: neither (or too few cases). */
export type GuardrailOutcome = "within" | "exceeded" | "not_shown";
/** The per-case paired changes (relative for `max_increase`, absolute for `max_difference`) in 20 equal bins from `low` (1st percentile) to `high` (99th); a change outside falls in the edge bin. */
export interface ChangeDistribution { low: number; high: number; counts: number[]; }
/**
 * One guardrail as judged. `change` is `new/old − 1` (`max_increase`) or `new − old`
 * (`max_difference`), `low`–`high` its interval at the policy's confidence, `exceeded_low` the
 * lower bound the exceeded test used (at `adjusted_confidence` for a blocking criterion). The
 * figures are null without a case (or an unbounded interval).
 */
export interface GuardrailCriterion {
  metric: string; statistic: GuardrailStatistic; action: GuardrailAction; limit_kind: "max_increase" | "max_difference"; limit: number;
  old: number | null; new: number | null; change: number | null; low: number | null; high: number | null; exceeded_low: number | null;
  method: "paired_t" | "fieller" | "bootstrap"; n: number; excluded: number; min_cases: number; outcome: GuardrailOutcome;
  distribution: ChangeDistribution | null;
}
/** A template tested by `template_regression` (`template_id` as the audit log has it). */
export interface TemplateRegressionRow { template_id: unknown; n: number; old: number; new: number; p_value: number; adjusted_p: number; regressed: boolean; }
export interface TemplateRegressionResult {
  max_drop: number; min_cases: number; action: GuardrailAction; alpha: number; tested: number; untested: number;
  outcome: "within" | "exceeded"; templates: TemplateRegressionRow[];
}
/** The guardrails as judged: `blocking` criteria share the error rate (`adjusted_confidence` = 1 − α/blocking). */
export interface GuardrailsReport {
  confidence: number; blocking: number; adjusted_confidence: number; cases: number; seed: number; resamples: number;
  criteria: GuardrailCriterion[];
  /** Only when the policy gives `template_regression`. */
  template_regression?: TemplateRegressionResult;
}
export interface GateReport {
  schema: "deploy-gate/report/v1"; tool: { name: string; version: string };
  policy: GatePolicy;
  inputs: InputFile[]; audit: AuditSummary; test_set: TestSetInfo;
  verdicts: { old: ModelCounts; new: ModelCounts };
  /** Only when a verdict file carries cost fields (`latency_ms`, `usage`, `attempts`, `target`); null for a model whose file has none. */
  cost?: { old: CostSummary | null; new: CostSummary | null };
  trajectories: { old: TrajectoryInfo | null; new: TrajectoryInfo | null };
  decision: GateDecision;
  /** Only when a case lacks a verdict on some side or the decision is sequential (absent in a report made before it existed). */
  evidence?: Evidence;
  /** Only under `policy.sequential: true`, after `decision`. */
  sequential?: SequentialReport;
  /** Only when the policy gives `guardrails` or `template_regression`. */
  guardrails?: GuardrailsReport;
  comparison: ABComparison; stats: GateStats; cases: CaseOutcome[]; templates: TemplateRow[];
  warnings: string[];
}
"#;

#[wasm_bindgen(typescript_custom_section)]
const SIGN_TYPES: &'static str = r#"
export interface KeyPair { private_pem: string; public_pem: string; keyid: string; }
export interface KeyInfo { kind: "private" | "public"; keyid: string; }
export interface VerifyOptions { threshold?: number; model_digest?: string; target?: string; now: number; max_age_seconds?: number; }
/** The name of a failed verification check (`src/attest/check.rs`). */
export type CheckName = "threshold" | "envelope_size" | "envelope" | "signature_count" | "statement_size" | "signature" | "payload_type" | "duplicate_key" | "statement_type" | "predicate" | "subject_digest" | "ambiguous_subject" | "target" | "time" | "too_old" | "from_the_future" | "replayed" | "reproduce" | "policy" | "review";
/** What the caller asked to be checked: the model digest and the target are optional here. */
export interface VerifyScope { hinted_keyids: string[]; subject_checked: boolean; target_checked: boolean; }
/** What a decision signed with a review pins of it (`sign --review`): the review file by its sha256 and size, its
 * cases per mark, and how many of the report's regressed cases it marks. */
export interface ReviewPin {
  sha256: string; bytes: number; marks: { accepted: number; label_wrong: number; needs_fix: number };
  regressed: { cases: number; marked: number };
}
/** Each test case's latency and tokens for one model (`GateSession.caseCosts`), in the test set's order: the mean
 * over the records the case counts, NaN where they say nothing. */
export interface CaseCosts { latency_ms: Float64Array; tokens: Float64Array; }
/** A listed case's answers for the HTML report (`reportHtml`): each the JSON text `readOutput` gives, and whether the
 * record says it was cut to its bound. */
export interface HtmlCaseAnswers { case: number; old?: string; old_truncated?: boolean; new?: string; new_truncated?: boolean; }
/** A test case's trajectory result for one model (`GateSession.caseTrajectory`): its composite and the metrics it
 * was made from (absent ones 0, as the composite reads them). */
export interface CaseTrajectoryResult {
  trajectory_id: string | null; composite: number;
  metrics: { overall_judge_score: number; tac_score: number; scsr_score: number; iasa_score: number; egs_score: number; arr_score: number; lcf_score: number };
}
/** A test case's trajectory results, old beside new (null: that file has none for the case). */
export interface CaseTrajectory { old: CaseTrajectoryResult | null; new: CaseTrajectoryResult | null; }
/** A review mark (`deploy-gate/review/v1`). */
export type ReviewMarkName = "accepted" | "label_wrong" | "needs_fix";
/** A mark on a case of a report, the case named by its place in the report's `cases` (so that an integer id keeps
 * every digit): what `reviewFile` writes and `readReview` reads. */
export interface CaseReviewMark { case: number; mark: ReviewMarkName; note?: string; time?: string; }
/** A review file read against a report (`readReview`): the marks of its cases, the marks of cases it does not hold
 * (the id as the file writes it, and the line), and what signing with it would pin. */
export interface ReviewRead {
  marks: CaseReviewMark[]; elsewhere: { pipeline_id: string; line: number }[]; pin: ReviewPin;
}
/** A verified decision: the summary `deploy-gate verify` prints, and the scope. */
export interface VerifiedDecision extends VerifyScope {
  valid: true; verification_result: "PASSED" | "FAILED"; approved: boolean; outcome: Outcome; reason: string; model: string;
  model_digest: string; subject_index: number; target: string; time_verified: string; signers: string[];
  payload_sha256: string;
  /** Only for a decision signed with a review. */
  review?: ReviewPin;
}
/** A rejected envelope: the failed check and why. */
export interface RejectedDecision extends VerifyScope { valid: false; check: CheckName; message: string; signers: string[]; }
export type VerifyResult = VerifiedDecision | RejectedDecision;
/** A verified decision opened with `openSignedDecision`: the report read from the verified statement, and its text;
 * `digest_scheme`: the subject's annotation naming how `model_digest` was computed (null: the original directory
 * digest; `"oms-v1.0-files"`: the OpenSSF Model Signing digest, as `deploy-gate sign --model-path` names a model). */
export interface OpenedDecision extends VerifiedDecision { report: GateReport; report_json: string; digest_scheme: string | null; }
/** `openSignedDecision`'s answer: the opened decision, or the rejection (no report: it is not trusted). */
export type SignedDecision = OpenedDecision | RejectedDecision;
"#;

#[wasm_bindgen(typescript_custom_section)]
const ANSWER_TYPES: &'static str = r#"
/** Where a case's answer (its record's `output`) is in a verdict file: bytes `start`..`end` of the file as
 * given; `column` (0-based) and `tab` when the bytes are a CSV (TSV) row holding it as that field. */
export interface OutputAt { start: number; end: number; truncated: boolean; column?: number; tab?: boolean; }
/** One model's answer as shown: `text` (a string answer), `json` (any other value, laid out with its tokens as
 * written) or `raw` (JSON shown as written). */
export interface ShownAnswer { text: string; kind: "text" | "json" | "raw"; truncated: boolean; }
/** A piece of one answer's text; a side's runs make up its whole text. */
export interface AnswerRun { text: string; changed: boolean; }
/** Both answers of a case and what changed: `by` is `words`, `lines` or `none` (then `note` says why). */
export interface SideBySide { old: ShownAnswer | null; new: ShownAnswer | null; by: "words" | "lines" | "none"; old_runs: AnswerRun[]; new_runs: AnswerRun[]; note: string | null; }
"#;

#[wasm_bindgen(start)]
fn start() {
    console_error_panic_hook::set_once();
}

/// A sha256 as lowercase hex: 64 hex digits (or `sha256:` and them).
fn sha256_hex(text: &str) -> Result<String, JsError> {
    crate::attest::parse_digest(text).map_err(|_| into_error(format!("`{text}` is not a sha256 (64 hex digits)")))
}

fn into_error(msg: impl std::fmt::Display) -> JsError {
    JsError::new(&msg.to_string())
}

fn to_js<T: Serialize>(value: &T) -> Result<JsValue, JsError> {
    value
        .serialize(&serde_wasm_bindgen::Serializer::json_compatible())
        .map_err(into_error)
}

/// Parses JSON text produced by this crate into a plain JS value.
fn json_to_js(text: &str) -> Result<JsValue, JsError> {
    js_sys::JSON::parse(text).map_err(|_| into_error("internal error: invalid JSON"))
}

fn side(role: &str, kind: &str) -> Result<Side, JsError> {
    match role {
        "old" => Ok(Side::Old),
        "new" => Ok(Side::New),
        r if r == format!("old_{kind}") => Ok(Side::Old),
        r if r == format!("new_{kind}") => Ok(Side::New),
        other => Err(into_error(format!("role must be `old` or `new`, not `{other}`"))),
    }
}

/// One gate evaluation: policy, audit log (streamed), test set, verdicts, trajectories, report.
/// A mapping over the core's `session::Session`: JS values in, its results and errors out.
#[wasm_bindgen]
pub struct GateSession {
    inner: Session,
    /// A verdict file being read a piece at a time (`startVerdicts`).
    stream: Option<(Side, crate::verdicts::VerdictStream)>,
}

#[wasm_bindgen]
impl GateSession {
    /// A session with the given policy (defaults for absent fields).
    #[wasm_bindgen(constructor)]
    pub fn new(
        #[wasm_bindgen(unchecked_param_type = "PolicyInput | undefined")] policy: JsValue,
    ) -> Result<GateSession, JsError> {
        Ok(GateSession {
            inner: Session::new(parse_policy(policy)?),
            stream: None,
        })
    }

    /// Replaces the policy and says what must be redone: `"rescan"` (pass verdicts changed: push
    /// the audit log again), `"rebuild"` (test-set size or seed changed: call `neededRanges`
    /// again) or `"ready"` (call `evaluate`).
    #[wasm_bindgen(js_name = setPolicy, unchecked_return_type = "PolicyChange")]
    pub fn set_policy(
        &mut self,
        #[wasm_bindgen(unchecked_param_type = "PolicyInput")] policy: JsValue,
    ) -> Result<String, JsError> {
        Ok(self.inner.set_policy(parse_policy(policy)?).as_str().into())
    }

    /// The current policy, defaults filled in (as the report lists it).
    #[wasm_bindgen(unchecked_return_type = "GateReport[\"policy\"]")]
    pub fn policy(&self) -> Result<JsValue, JsError> {
        to_js(self.inner.policy())
    }

    /// Whether audit files are hashed as they stream (default true). A caller that hashes in
    /// another worker turns it off and gives each digest with `setAuditSha256` before
    /// `finishAudit`.
    #[wasm_bindgen(js_name = setHashing)]
    pub fn set_hashing(&mut self, on: bool) {
        self.inner.set_hashing(on);
    }

    /// Gives the sha256 (hex) of audit file `file` (0-based, in the order begun).
    #[wasm_bindgen(js_name = setAuditSha256)]
    pub fn set_audit_sha256(&mut self, file: u32, sha256: &str) -> Result<(), JsError> {
        if !self.inner.is_scanning() {
            return Err(into_error(SessionError::NoAuditBegun));
        }
        self.inner
            .set_audit_sha256(file, sha256_hex(sha256)?)
            .map_err(into_error)
    }

    /// The policy's pass verdicts (upper-cased), for `SegmentScanner`s in other workers.
    #[wasm_bindgen(js_name = passVerdicts)]
    pub fn pass_verdicts(&self) -> Vec<String> {
        self.inner.policy().pass_verdicts.verdicts().to_vec()
    }

    /// Starts an audit log read as segments scanned elsewhere (`SegmentScanner`, in several
    /// workers): declare each file with `addAuditFile`, merge the segments in file order with
    /// `mergeSegment`, give each file's size and sha256, then `finishSegmentedAudit`.
    #[wasm_bindgen(js_name = beginSegmentedAudit)]
    pub fn begin_segmented_audit(&mut self) {
        self.inner.begin_segmented_audit();
    }

    /// Declares the next audit file of a segmented audit log; returns its number.
    #[wasm_bindgen(js_name = addAuditFile)]
    pub fn add_audit_file(&mut self, name: &str) -> Result<u32, JsError> {
        self.inner.add_audit_file(name).map_err(into_error)
    }

    /// Merges the next segment (from `SegmentScanner.finish`), in file then offset order.
    #[wasm_bindgen(js_name = mergeSegment)]
    pub fn merge_segment(&mut self, bytes: &[u8]) -> Result<(), JsError> {
        self.inner.merge_segment(bytes).map_err(into_error)
    }

    /// Gives an audit file's sha256 (hex) after the audit log was scanned (`finishAudit` or
    /// `finishSegmentedAudit`): the decision can be shown before the digest is in, but a
    /// report is only signed once every input has one.
    #[wasm_bindgen(js_name = setAuditDigest)]
    pub fn set_audit_digest(&mut self, file: u32, sha256: &str) -> Result<(), JsError> {
        let index = self
            .inner
            .audit_index()
            .ok_or_else(|| into_error(SessionError::AuditNotLoaded))?;
        if file as usize >= index.files().len() {
            return Err(into_error(SessionError::NoSuchAuditFile(file)));
        }
        self.inner
            .set_audit_digest(file, sha256_hex(sha256)?)
            .map_err(into_error)
    }

    /// Gives a segmented audit file's size and sha256 (hex; `""` when it is given later with
    /// `setAuditDigest`).
    #[wasm_bindgen(js_name = setAuditFileDigest)]
    pub fn set_audit_file_digest(&mut self, file: u32, size: f64, sha256: &str) -> Result<(), JsError> {
        // (The session's checks first, so that their message wins over a bad digest's.)
        if file as usize >= self.inner.segmented_file_count().map_err(into_error)? {
            return Err(into_error(SessionError::NoSuchAuditFile(file)));
        }
        let sha256 = if sha256.is_empty() {
            String::new()
        } else {
            sha256_hex(sha256)?
        };
        self.inner
            .set_audit_file_digest(file, size as u64, sha256)
            .map_err(into_error)
    }

    /// Ends a segmented audit log and returns what pass 1 saw.
    #[wasm_bindgen(js_name = finishSegmentedAudit, unchecked_return_type = "AuditSummary")]
    pub fn finish_segmented_audit(&mut self) -> Result<JsValue, JsError> {
        to_js(self.inner.finish_segmented_audit().map_err(into_error)?.summary())
    }

    /// Starts an audit file (the first call also starts a new audit log).
    #[wasm_bindgen(js_name = beginAudit)]
    pub fn begin_audit(&mut self, name: &str) {
        self.inner.begin_audit(name);
    }

    /// Feeds the next chunk of the current audit file.
    #[wasm_bindgen(js_name = pushAudit)]
    pub fn push_audit(&mut self, chunk: &[u8]) -> Result<(), JsError> {
        self.inner.push_audit(chunk).map_err(into_error)
    }

    /// Ends the audit log (all its files) and returns what pass 1 saw.
    #[wasm_bindgen(js_name = finishAudit, unchecked_return_type = "AuditSummary")]
    pub fn finish_audit(&mut self) -> Result<JsValue, JsError> {
        to_js(self.inner.finish_audit().map_err(into_error)?.summary())
    }

    /// The byte ranges pass 2 reads, as a flat array `[file, start, end, …]` (file = index of
    /// the audit file in the order begun; end = -1: to the end of the file). Read each range
    /// and feed its bytes in order with `feedRange` (ranges may be read concurrently), then
    /// `endRange`; or feed each audit file's whole (decompressed) stream with `feedStream`
    /// and `endStream`.
    #[wasm_bindgen(js_name = neededRanges)]
    pub fn needed_ranges(&mut self) -> Result<Vec<f64>, JsError> {
        let ranges = self.inner.needed_ranges().map_err(into_error)?;
        Ok(ranges
            .iter()
            .flat_map(|r| {
                let end = if r.end == TO_END { -1.0 } else { r.end as f64 };
                [r.file as f64, r.start as f64, end]
            })
            .collect())
    }

    /// Feeds the next bytes of range `i` of `neededRanges`.
    #[wasm_bindgen(js_name = feedRange)]
    pub fn feed_range(&mut self, i: usize, bytes: &[u8]) -> Result<(), JsError> {
        self.inner.feed_range(i, bytes).map_err(into_error)
    }

    /// Ends range `i` once all its bytes were fed.
    #[wasm_bindgen(js_name = endRange)]
    pub fn end_range(&mut self, i: usize) -> Result<(), JsError> {
        self.inner.end_range(i).map_err(into_error)
    }

    /// Feeds the next bytes of audit file `file`'s whole stream (a gzip file's decompressed
    /// bytes), in order from its start: the session keeps what the ranges need, skips the rest.
    /// Returns whether more of the stream is needed (false after its last range: stop reading).
    #[wasm_bindgen(js_name = feedStream)]
    pub fn feed_stream(&mut self, file: u32, bytes: &[u8]) -> Result<bool, JsError> {
        self.check_file(file)?;
        self.inner.feed_stream(file, bytes).map_err(into_error)
    }

    /// Ends audit file `file`'s stream (its ranges still open end here).
    #[wasm_bindgen(js_name = endStream)]
    pub fn end_stream(&mut self, file: u32) -> Result<(), JsError> {
        self.check_file(file)?;
        self.inner.end_stream(file).map_err(into_error)
    }

    fn check_file(&self, file: u32) -> Result<(), JsError> {
        match self.inner.audit_index() {
            Some(index) if file as usize >= index.files().len() => Err(into_error(SessionError::NoSuchAuditFile(file))),
            _ => Ok(()),
        }
    }

    /// Finishes pass 2 after every range was read and ended.
    #[wasm_bindgen(js_name = finishTestSet, unchecked_return_type = "TestSetInfo")]
    pub fn finish_test_set(&mut self) -> Result<JsValue, JsError> {
        to_js(&test_set_info(self.inner.finish_test_set().map_err(into_error)?))
    }

    /// Builds the test set from the whole audit files (in the order begun), for callers that
    /// hold them in memory.
    #[wasm_bindgen(js_name = buildTestSet, unchecked_return_type = "TestSetInfo")]
    pub fn build_test_set(&mut self, files: Vec<js_sys::Uint8Array>) -> Result<JsValue, JsError> {
        let bytes: Vec<Vec<u8>> = files.iter().map(|f| f.to_vec()).collect();
        let refs: Vec<&[u8]> = bytes.iter().map(Vec::as_slice).collect();
        to_js(&test_set_info(self.inner.build_test_set(&refs).map_err(into_error)?))
    }

    /// Reads a verdict file for `role` (`old`/`new` or `old_verdicts`/`new_verdicts`).
    #[wasm_bindgen(js_name = addVerdicts)]
    pub fn add_verdicts(
        &mut self,
        #[wasm_bindgen(unchecked_param_type = "\"old\" | \"new\" | \"old_verdicts\" | \"new_verdicts\"")] role: &str,
        bytes: &[u8],
        file_name: &str,
    ) -> Result<(), JsError> {
        let side = side(role, "verdicts")?;
        self.inner.add_verdicts(side, file_name, bytes).map_err(into_error)
    }

    /// Starts reading `role`'s verdict file a piece at a time, so that it is never held whole in
    /// this module's memory (which never shrinks): `head` is the file's first bytes (at least its
    /// first non-blank line; it is not read as a piece). Then `feedVerdicts` every piece in order
    /// while it says to go on, and `finishVerdicts`. Always true (false was: give the file whole
    /// to `addVerdicts`, which every format now reads in pieces).
    #[wasm_bindgen(js_name = startVerdicts)]
    pub fn start_verdicts(
        &mut self,
        #[wasm_bindgen(unchecked_param_type = "\"old\" | \"new\" | \"old_verdicts\" | \"new_verdicts\"")] role: &str,
        file_name: &str,
        head: &[u8],
    ) -> Result<bool, JsError> {
        let side = side(role, "verdicts")?;
        self.stream = Some((
            side,
            crate::verdicts::VerdictStream::start(Role::verdicts(side), file_name, head),
        ));
        Ok(true)
    }

    /// The next piece of the verdict file `startVerdicts` started: true to go on, false when the
    /// file is to be given whole to `addVerdicts` (it holds something only the whole-file reader
    /// names: a JSON syntax error, say); `finishVerdicts` then says so too. In JSONL an unusable
    /// record is an error naming its line (the reading is then over).
    #[wasm_bindgen(js_name = feedVerdicts)]
    pub fn feed_verdicts(&mut self, piece: &[u8]) -> Result<bool, JsError> {
        let (_, stream) = self
            .stream
            .as_mut()
            .ok_or_else(|| into_error("no verdict file is being read (startVerdicts)"))?;
        match stream.feed(piece) {
            Ok(()) => Ok(!stream.wants_whole()),
            Err(e) => {
                self.stream = None;
                Err(into_error(e))
            }
        }
    }

    /// The verdict file `startVerdicts` started is read: true when its verdicts are now the
    /// side's; false when the file is to be given whole to `addVerdicts`, which reads it or
    /// names what is wrong with it.
    #[wasm_bindgen(js_name = finishVerdicts)]
    pub fn finish_verdicts(&mut self) -> Result<bool, JsError> {
        let (side, stream) = self
            .stream
            .take()
            .ok_or_else(|| into_error("no verdict file is being read (startVerdicts)"))?;
        let Some(verdicts) = stream.finish().map_err(into_error)? else {
            return Ok(false);
        };
        self.inner.set_verdicts(side, verdicts);
        Ok(true)
    }

    /// Reads a trajectory file for `role` (`old`/`new` or `old_trajectories`/`new_trajectories`).
    #[wasm_bindgen(js_name = addTrajectories)]
    pub fn add_trajectories(
        &mut self,
        #[wasm_bindgen(unchecked_param_type = "\"old\" | \"new\" | \"old_trajectories\" | \"new_trajectories\"")]
        role: &str,
        bytes: &[u8],
        file_name: &str,
    ) -> Result<(), JsError> {
        let side = side(role, "trajectories")?;
        self.inner.add_trajectories(side, file_name, bytes).map_err(into_error)
    }

    /// Forgets a verdict or trajectory file (`old_verdicts`, `new_trajectories`, …).
    #[wasm_bindgen(js_name = removeInput)]
    pub fn remove_input(&mut self, #[wasm_bindgen(unchecked_param_type = "Role")] role: &str) -> Result<(), JsError> {
        let role: Role = role.parse().map_err(into_error)?;
        self.inner.remove_input(role);
        Ok(())
    }

    /// True when the test set and both verdict files are in: `evaluate` can run.
    #[wasm_bindgen(js_name = isReady)]
    pub fn is_ready(&self) -> bool {
        self.inner.is_ready()
    }

    /// The GateReport as JSON text, byte for byte what the CLI writes for the same inputs.
    #[wasm_bindgen(js_name = evaluateJson)]
    pub fn evaluate_json(&self) -> Result<String, JsError> {
        Ok(self.inner.report().map_err(into_error)?.to_json())
    }

    /// The GateReport as a plain object.
    #[wasm_bindgen(unchecked_return_type = "GateReport")]
    pub fn evaluate(&self) -> Result<JsValue, JsError> {
        json_to_js(&self.inner.report().map_err(into_error)?.to_json())
    }

    /// The test set as JSONL (one case per line, the reference's field names).
    #[wasm_bindgen(js_name = testSetJsonl)]
    pub fn test_set_jsonl(&self) -> Result<String, JsError> {
        Ok(self.built()?.to_jsonl())
    }

    /// The test cases as plain objects.
    #[wasm_bindgen(js_name = testCases, unchecked_return_type = "TestCase[]")]
    pub fn test_cases(&self) -> Result<JsValue, JsError> {
        json_to_js(&serde_json::to_string(&self.built()?.cases).map_err(into_error)?)
    }

    fn built(&self) -> Result<&TestSet, JsError> {
        self.inner
            .test_set()
            .ok_or_else(|| into_error(SessionError::TestSetNotBuilt))
    }

    /// Where test case `index`'s answer is in `role`'s verdict file (`old`/`new`), or undefined
    /// when its record carries none: read those bytes (`File.slice`) and give them to `readOutput`.
    #[wasm_bindgen(js_name = outputAt, unchecked_return_type = "OutputAt | undefined")]
    pub fn output_at(&self, role: &str, index: usize) -> Result<JsValue, JsError> {
        let Some(at) = self.inner.output_at(side(role, "verdicts")?, index) else {
            return Ok(JsValue::UNDEFINED);
        };
        let mut value = serde_json::json!({"start": at.start, "end": at.end, "truncated": at.truncated});
        if let OutputForm::Delimited { column, tab } = at.form {
            value["column"] = column.into();
            value["tab"] = tab.into();
        }
        to_js(&value)
    }

    /// Test case `index`'s trajectory results, old beside new: each the result its verdict
    /// record names (`trajectory_id`), or else the last result of its trajectory file that names
    /// the case's `pipeline_id`, with its composite and metrics; undefined when neither file has
    /// one.
    #[wasm_bindgen(js_name = caseTrajectory, unchecked_return_type = "CaseTrajectory | undefined")]
    pub fn case_trajectory(&self, index: usize) -> Result<JsValue, JsError> {
        let one = |side| {
            self.inner.case_trajectory(side, index).map(|r| {
                let m = &r.metrics;
                serde_json::json!({
                    "trajectory_id": r.trajectory_id, "composite": r.composite,
                    "metrics": {"overall_judge_score": m.judge, "tac_score": m.tac, "scsr_score": m.scsr,
                        "iasa_score": m.iasa, "egs_score": m.egs, "arr_score": m.arr, "lcf_score": m.lcf},
                })
            })
        };
        match (one(Side::Old), one(Side::New)) {
            (None, None) => Ok(JsValue::UNDEFINED),
            (old, new) => to_js(&serde_json::json!({"old": old, "new": new})),
        }
    }

    /// True when some record of `role`'s (`old`/`new`) verdict file that a test case may take
    /// carries an answer (`output`).
    #[wasm_bindgen(js_name = carriesOutputs)]
    pub fn carries_outputs(&self, role: &str) -> Result<bool, JsError> {
        Ok(self.inner.carries_outputs(side(role, "verdicts")?))
    }

    /// Each test case's latency and tokens for `role` (`old`/`new`), in the test set's order:
    /// `{latency_ms, tokens}`, two arrays with NaN where the case's records say nothing (the
    /// mean over the records the case counts); undefined when the verdict file carries no cost
    /// field.
    #[wasm_bindgen(js_name = caseCosts, unchecked_return_type = "CaseCosts | undefined")]
    pub fn case_costs(&self, role: &str) -> Result<JsValue, JsError> {
        let Some(costs) = self.inner.case_costs(side(role, "verdicts")?) else {
            return Ok(JsValue::UNDEFINED);
        };
        let latency: Vec<f64> = costs.iter().map(|c| c.latency_ms.unwrap_or(f64::NAN)).collect();
        let tokens: Vec<f64> = costs.iter().map(|c| c.tokens.unwrap_or(f64::NAN)).collect();
        let out = js_sys::Object::new();
        for (key, values) in [("latency_ms", latency), ("tokens", tokens)] {
            js_sys::Reflect::set(&out, &key.into(), &js_sys::Float64Array::from(&values[..]))
                .map_err(|_| into_error("internal error: cannot set the case costs"))?;
        }
        Ok(out.into())
    }

    /// Guesses a file's role from its name and first bytes (a few KiB).
    #[wasm_bindgen(js_name = sniffRole, unchecked_return_type = "RoleGuess")]
    pub fn sniff_role(file_name: &str, head: &[u8]) -> Result<JsValue, JsError> {
        to_js(&sniff(file_name, head))
    }
}

/// The answer held by `bytes`, the bytes `at.start..at.end` of its verdict file (`outputAt`), as
/// JSON text; undefined when they do not hold one (the file changed since it was read).
#[wasm_bindgen(js_name = readOutput)]
pub fn read_output(
    bytes: &[u8],
    #[wasm_bindgen(unchecked_param_type = "OutputAt")] at: JsValue,
) -> Result<Option<String>, JsError> {
    #[derive(serde::Deserialize)]
    struct At {
        #[serde(default)]
        column: Option<u32>,
        #[serde(default)]
        tab: bool,
        #[serde(default)]
        truncated: bool,
    }
    let at: At = serde_wasm_bindgen::from_value(at).map_err(into_error)?;
    let at = OutputAt {
        start: 0,
        end: bytes.len() as u64,
        form: at
            .column
            .map_or(OutputForm::Json, |column| OutputForm::Delimited { column, tab: at.tab }),
        truncated: at.truncated,
    };
    Ok(crate::verdicts::read_output(bytes, &at))
}

/// A case's two answers (each the JSON text `readOutput` gives and whether it was cut, or
/// undefined), side by side with what changed, word by word or line by line.
#[wasm_bindgen(js_name = sideBySide, unchecked_return_type = "SideBySide")]
pub fn side_by_side(
    old: Option<String>,
    old_truncated: bool,
    new: Option<String>,
    new_truncated: bool,
) -> Result<JsValue, JsError> {
    to_js(&crate::render::answers::side_by_side(
        old.as_deref().map(|o| (o, old_truncated)),
        new.as_deref().map(|n| (n, new_truncated)),
    ))
}

/// A new Ed25519 key pair from 32 random bytes (draw them with `crypto.getRandomValues`).
#[wasm_bindgen(js_name = generateKeyPair, unchecked_return_type = "KeyPair")]
pub fn generate_key_pair(seed: &[u8]) -> Result<JsValue, JsError> {
    let seed: [u8; 32] = seed
        .try_into()
        .map_err(|_| into_error("a key needs exactly 32 random bytes"))?;
    let key = keys::signing_key_from_seed(seed);
    to_js(&serde_json::json!({
        "private_pem": keys::private_pem(&key),
        "public_pem": keys::public_pem(&key.verifying_key()),
        "keyid": keys::keyid(&key.verifying_key()),
    }))
}

/// What a PEM holds: a private or a public key, and its key id.
#[wasm_bindgen(js_name = keyInfo, unchecked_return_type = "KeyInfo")]
pub fn key_info(pem: &str) -> Result<JsValue, JsError> {
    if let Ok(key) = keys::read_private_pem(pem) {
        return to_js(&serde_json::json!({"kind": "private", "keyid": keys::keyid(&key.verifying_key())}));
    }
    let key = keys::read_public_pem(pem)
        .map_err(|_| into_error("not an Ed25519 key in PEM (PKCS#8 private or SPKI public)"))?;
    to_js(&serde_json::json!({"kind": "public", "keyid": keys::keyid(&key)}))
}

/// A report's JSON text (`evaluateJson()`) as the standalone HTML report, byte for byte what
/// `deploy-gate evaluate --html` writes for the same report.
/// With `review` (a review file's bytes), the HTML report lists its marked cases with their
/// notes: what `evaluate --html --review` writes. With `answers` (the answers of the cases
/// `htmlAnswerCases` names, each as `readOutput` gives it), it shows them: what
/// `evaluate --html` writes for verdict files that carry answers.
#[wasm_bindgen(js_name = reportHtml)]
pub fn report_html(
    report_json: &str,
    review: Option<Vec<u8>>,
    #[wasm_bindgen(unchecked_param_type = "HtmlCaseAnswers[] | undefined")] answers: JsValue,
) -> Result<String, JsError> {
    let listing = review_listing(report_json, review.as_deref())?;
    let answers = if answers.is_undefined() || answers.is_null() {
        None
    } else {
        #[derive(serde::Deserialize)]
        struct Given {
            case: usize,
            old: Option<String>,
            #[serde(default)]
            old_truncated: bool,
            new: Option<String>,
            #[serde(default)]
            new_truncated: bool,
        }
        let given: Vec<Given> =
            serde_wasm_bindgen::from_value(answers).map_err(|e| into_error(format!("answers: {e}")))?;
        Some(
            given
                .into_iter()
                .map(|g| {
                    let answers = crate::render::html::CaseAnswers {
                        old: g.old.map(|j| (j, g.old_truncated)),
                        new: g.new.map(|j| (j, g.new_truncated)),
                    };
                    (g.case, answers)
                })
                .collect::<std::collections::HashMap<_, _>>(),
        )
    };
    let extras = crate::render::html::Extras {
        review: listing.as_ref(),
        answers: answers.as_ref(),
    };
    crate::render::html::report_html_with(report_json, &extras).map_err(into_error)
}

/// The cases (places in the report's `cases`) whose answers the HTML report shows: read these
/// (`outputAt`, `readOutput`) and give them to `reportHtml`.
#[wasm_bindgen(js_name = htmlAnswerCases)]
pub fn html_answer_cases(report_json: &str) -> Result<Vec<u32>, JsError> {
    Ok(crate::render::html::answer_cases(report_json)
        .map_err(into_error)?
        .into_iter()
        .map(|i| i as u32)
        .collect())
}

/// A review file's bytes (when given) read against a report's JSON text.
fn review_listing(report_json: &str, review: Option<&[u8]>) -> Result<Option<crate::review::Listing>, JsError> {
    let Some(bytes) = review else { return Ok(None) };
    let review = crate::review::Review::parse("review.jsonl", bytes).map_err(into_error)?;
    crate::review::Listing::of(&review, report_json)
        .map(Some)
        .map_err(into_error)
}

/// The review file (`deploy-gate/review/v1` JSONL) of marks made on a report's cases, each id
/// written as the report writes it: the bytes `sign --review` and `signDecision` take.
#[wasm_bindgen(js_name = reviewFile)]
pub fn review_file(
    report_json: &str,
    #[wasm_bindgen(unchecked_param_type = "CaseReviewMark[]")] marks: JsValue,
) -> Result<String, JsError> {
    let marks: Vec<crate::review::PageMark> =
        serde_wasm_bindgen::from_value(marks).map_err(|e| into_error(format!("marks: {e}")))?;
    crate::review::file_for(report_json, &marks).map_err(into_error)
}

/// A review file read against a report's JSON text: its marks by case, the marks of cases the
/// report does not hold, and what signing with it pins. A bad line is an error naming it.
#[wasm_bindgen(js_name = readReview, unchecked_return_type = "ReviewRead")]
pub fn read_review(report_json: &str, bytes: &[u8], name: &str) -> Result<JsValue, JsError> {
    if bytes.len() as u64 > crate::review::MAX_FILE_BYTES {
        return Err(into_error(format!(
            "{name}: {} bytes, more than the {} a review file may hold",
            bytes.len(),
            crate::review::MAX_FILE_BYTES
        )));
    }
    let review = crate::review::Review::parse(name, bytes).map_err(into_error)?;
    let listing = crate::review::Listing::of(&review, report_json).map_err(into_error)?;
    let mut marks: Vec<serde_json::Value> = listing
        .cases
        .iter()
        .map(|c| {
            let mut m = serde_json::json!({"case": c.index, "mark": c.mark.mark.as_str()});
            if let Some(note) = &c.mark.note {
                m["note"] = note.as_str().into();
            }
            if let Some(time) = &c.mark.time {
                m["time"] = time.as_str().into();
            }
            m
        })
        .collect();
    marks.sort_by_key(|m| m["case"].as_u64());
    let elsewhere: Vec<serde_json::Value> = listing
        .elsewhere
        .iter()
        .map(|m| serde_json::json!({"pipeline_id": m.pipeline_id.to_json(), "line": m.line}))
        .collect();
    to_js(&serde_json::json!({"marks": marks, "elsewhere": elsewhere, "pin": listing.pin}))
}

/// Signs a report's decision: the DSSE envelope as JSON text. `now` is Unix seconds. With
/// `review` (a review file's bytes, `reviewFile`'s), the statement pins it as `sign --review` does.
#[wasm_bindgen(js_name = signDecision)]
pub fn sign_decision(
    report_json: &str,
    private_pem: &str,
    model_name: &str,
    model_digest: &str,
    target: &str,
    now: f64,
    review: Option<Vec<u8>>,
) -> Result<String, JsError> {
    let report = crate::attest::ReportToSign::parse(report_json).map_err(into_error)?;
    let key = keys::read_private_pem(private_pem).map_err(into_error)?;
    if model_name.trim().is_empty() || target.trim().is_empty() {
        return Err(into_error("the model name and the target are required"));
    }
    let digest = crate::attest::parse_digest(model_digest).map_err(into_error)?;
    // A policy that requires a review refuses a review that leaves a regressed case unmarked,
    // naming the cases.
    let marks = review
        .as_deref()
        .map(|bytes| crate::review::Review::parse("review.jsonl", bytes))
        .transpose()
        .map_err(into_error)?;
    crate::review::check_required(report.text(), &report.value()["policy"], marks.as_ref()).map_err(into_error)?;
    let pin = marks
        .as_ref()
        .map(|m| crate::review::ReviewPin::of(m, report.text()))
        .transpose()
        .map_err(into_error)?;
    let claim = crate::attest::Claim {
        report: &report,
        model_name: model_name.trim(),
        model_sha256: &digest,
        target: target.trim(),
        time_verified: now as i64,
        review: pin.as_ref(),
    };
    Ok(crate::attest::sign(&claim, &key).map_err(into_error)?.to_json())
}

#[derive(serde::Deserialize)]
struct VerifyOptions {
    #[serde(default)]
    threshold: Option<usize>,
    #[serde(default)]
    model_digest: Option<String>,
    #[serde(default)]
    target: Option<String>,
    now: f64,
    #[serde(default)]
    max_age_seconds: Option<f64>,
}

/// Verifies an envelope with the page's options: the result, and what was asked to be checked.
fn verify_with(
    envelope: &[u8],
    trusted_pems: &[String],
    options: &JsValue,
) -> Result<
    (
        Result<crate::attest::Verified, crate::attest::VerifyError>,
        crate::attest::Scope,
    ),
    JsError,
> {
    let text = js_sys::JSON::stringify(options)
        .ok()
        .and_then(|s| s.as_string())
        .ok_or_else(|| into_error("options: not an object"))?;
    let opts: VerifyOptions = serde_json::from_str(&text).map_err(|e| into_error(format!("options: {e}")))?;
    let trusted = trusted_pems
        .iter()
        .map(|p| keys::read_public_pem(p))
        .collect::<Result<Vec<_>, _>>()
        .map_err(into_error)?;
    let digest = opts
        .model_digest
        .as_deref()
        .filter(|d| !d.trim().is_empty())
        .map(crate::attest::parse_digest)
        .transpose()
        .map_err(into_error)?;
    let target = opts.target.as_deref().map(str::trim).filter(|t| !t.is_empty());
    let hinted: Vec<String> = serde_json::from_slice::<crate::attest::dsse::Envelope>(envelope)
        .map(|e| e.signatures.into_iter().map(|s| s.keyid).collect())
        .unwrap_or_default();
    let never = |_: &str| false;
    let req = crate::attest::Requirements {
        trusted: &trusted,
        threshold: opts.threshold.unwrap_or(1),
        subject_sha256: digest.as_deref(),
        target,
        now: opts.now as i64,
        max_age: opts.max_age_seconds.map_or(24 * 3600, |s| s as i64),
        already_applied: &never,
        limits: crate::attest::Limits::default(),
    };
    let scope = crate::attest::Scope {
        hinted_keyids: hinted,
        subject_checked: digest.is_some(),
        target_checked: target.is_some(),
    };
    Ok((crate::attest::verify(envelope, &req), scope))
}

/// Verifies an envelope against trusted public keys (PEM). Invalid envelopes are a result with
/// `valid: false` and the failed `check`, not an exception.
#[wasm_bindgen(js_name = verifyEnvelope, unchecked_return_type = "VerifyResult")]
pub fn verify_envelope(
    envelope: &[u8],
    trusted_pems: Vec<String>,
    #[wasm_bindgen(unchecked_param_type = "VerifyOptions")] options: JsValue,
) -> Result<JsValue, JsError> {
    let (verified, scope) = verify_with(envelope, &trusted_pems, &options)?;
    let result = match verified {
        Ok(v) => crate::attest::VerifyResult::Valid(crate::attest::Summary::of(&v).with_scope(scope)),
        Err(e) => crate::attest::VerifyResult::Invalid(crate::attest::Failure::from(&e).with_scope(scope)),
    };
    to_js(&result)
}

/// Opens a signed decision: verifies it as `verifyEnvelope` does and, when it is valid, adds the
/// GateReport read from the verified statement (`report`, and `report_json`: its text as
/// `deploy-gate evaluate` writes it). A rejected envelope's report is never read.
#[wasm_bindgen(js_name = openSignedDecision, unchecked_return_type = "SignedDecision")]
pub fn open_signed_decision(
    envelope: &[u8],
    trusted_pems: Vec<String>,
    #[wasm_bindgen(unchecked_param_type = "VerifyOptions")] options: JsValue,
) -> Result<JsValue, JsError> {
    let (verified, scope) = verify_with(envelope, &trusted_pems, &options)?;
    let v = match verified {
        Ok(v) => v,
        Err(e) => {
            return to_js(&crate::attest::VerifyResult::Invalid(
                crate::attest::Failure::from(&e).with_scope(scope),
            ))
        }
    };
    let result = to_js(&crate::attest::VerifyResult::Valid(
        crate::attest::Summary::of(&v).with_scope(scope),
    ))?;
    // The report's own text (every digit of a wide pipeline id), laid out as the CLI writes it.
    let mut report_json = crate::json::layout::pretty(&v.report_text);
    report_json.push('\n');
    js_sys::Reflect::set(&result, &"report".into(), &json_to_js(&report_json)?)
        .map_err(|_| into_error("internal error: cannot set the report"))?;
    js_sys::Reflect::set(&result, &"report_json".into(), &JsValue::from_str(&report_json))
        .map_err(|_| into_error("internal error: cannot set the report"))?;
    let scheme = v.statement["subject"][v.subject_index]["annotations"][crate::attest::DIGEST_SCHEME]
        .as_str()
        .map_or(JsValue::NULL, JsValue::from_str);
    js_sys::Reflect::set(&result, &"digest_scheme".into(), &scheme)
        .map_err(|_| into_error("internal error: cannot set the digest scheme"))?;
    Ok(result)
}

/// Co-signs a signed decision with another reviewer's private key (PEM): the envelope as JSON
/// text, the one `deploy-gate sign --envelope EXISTING.json --key KEY.pem` writes for the same
/// envelope and key. The envelope must verify against the trusted keys with the options
/// given (else an error naming the failed check); its statement's bytes are kept.
#[wasm_bindgen(js_name = cosignDecision)]
pub fn cosign_decision(
    envelope: &[u8],
    private_pem: &str,
    trusted_pems: Vec<String>,
    #[wasm_bindgen(unchecked_param_type = "VerifyOptions")] options: JsValue,
) -> Result<String, JsError> {
    let key = keys::read_private_pem(private_pem).map_err(into_error)?;
    let (verified, _) = verify_with(envelope, &trusted_pems, &options)?;
    let v = verified.map_err(|e| {
        into_error(format!(
            "cannot co-sign: the envelope does not verify against the trusted keys given ({}: {e})",
            crate::attest::Failure::from(&e).check
        ))
    })?;
    let cosigned = crate::attest::cosign_verified(envelope, &v, &key).map_err(into_error)?;
    Ok(cosigned.to_json())
}

/// A JS policy through the core's one parser (as JSON text, so that unknown (misspelt) fields
/// are refused exactly as natively); `undefined` / `null` are the defaults.
fn read_policy(value: &JsValue) -> Result<GatePolicy, PolicyError> {
    if value.is_undefined() || value.is_null() {
        return Ok(GatePolicy::default());
    }
    let text = js_sys::JSON::stringify(value)
        .ok()
        .and_then(|s| s.as_string())
        .ok_or_else(|| PolicyError {
            field: "policy".into(),
            message: "the policy is not a JSON object".into(),
        })?;
    PolicyInput::from_json(&text)?.into_policy()
}

fn parse_policy(value: JsValue) -> Result<GatePolicy, JsError> {
    read_policy(&value).map_err(|e| into_error(format!("policy: {e}")))
}

/// The default policy, as the report lists it (the page's form shows these values).
#[wasm_bindgen(js_name = defaultPolicy, unchecked_return_type = "GatePolicy")]
pub fn default_policy() -> Result<JsValue, JsError> {
    to_js(&GatePolicy::default())
}

/// Checks a policy (a whole form, or one field) with the core's parser: `{ok: true, policy}`
/// with the resolved policy, or `{ok: false, field, message}` naming the field at fault.
#[wasm_bindgen(js_name = checkPolicy, unchecked_return_type = "PolicyCheck")]
pub fn check_policy(
    #[wasm_bindgen(unchecked_param_type = "PolicyInput | undefined")] input: JsValue,
) -> Result<JsValue, JsError> {
    match read_policy(&input) {
        Ok(policy) => to_js(&serde_json::json!({"ok": true, "policy": policy})),
        Err(e) => to_js(&serde_json::json!({"ok": false, "field": e.field, "message": e.message})),
    }
}

/// Checks a policy file's bytes as `deploy-gate evaluate --policy` reads them (a JSON object in
/// the shape of a report's `policy`, or a whole report, read strictly): `{ok: true, policy}` with
/// the resolved policy and its digest, or `{ok: false, field, message}` (`field` null when the
/// file is not a JSON object).
#[wasm_bindgen(js_name = checkPolicyFile, unchecked_return_type = "PolicyFileCheck")]
pub fn check_policy_file(bytes: &[u8]) -> Result<JsValue, JsError> {
    match PolicyInput::from_file(bytes).and_then(|input| Ok(input.into_policy()?)) {
        Ok(policy) => {
            let digest = policy.digest().map_err(|e| JsError::new(&e.to_string()))?;
            to_js(&serde_json::json!({"ok": true, "policy": policy, "digest": digest}))
        }
        Err(e) => to_js(&serde_json::json!({"ok": false, "field": e.field(), "message": e.to_string()})),
    }
}

/// A streaming SHA-256, for hashing a file in another worker while it is scanned (sha2 0.11's
/// WebAssembly SIMD backend).
#[wasm_bindgen]
pub struct Sha256Stream {
    inner: sha2_simd::Sha256,
}

#[wasm_bindgen]
impl Sha256Stream {
    /// A new hash.
    #[wasm_bindgen(constructor)]
    pub fn new() -> Sha256Stream {
        Sha256Stream {
            inner: sha2_simd::Digest::new(),
        }
    }

    /// Adds bytes.
    pub fn update(&mut self, bytes: &[u8]) {
        sha2_simd::Digest::update(&mut self.inner, bytes);
    }

    /// The digest as lowercase hex (the hash can be used no further).
    pub fn finish(self) -> String {
        hex::encode(sha2_simd::Digest::finalize(self.inner))
    }
}

impl Default for Sha256Stream {
    fn default() -> Self {
        Self::new()
    }
}

/// The report's Markdown summary from its JSON (`GateSession.evaluateJson()`, a signed
/// decision's embedded report): the text `deploy-gate evaluate --markdown` writes.
#[wasm_bindgen(js_name = reportMarkdown)]
/// With `review` (a review file's bytes), it lists the marked cases with their notes.
pub fn report_markdown(report_json: &str, review: Option<Vec<u8>>) -> Result<String, JsError> {
    let listing = review_listing(report_json, review.as_deref())?;
    crate::render::markdown::markdown_reviewed(report_json, listing.as_ref()).map_err(into_error)
}

/// Pass 1 over one part of an audit file, in any worker: the bytes from `offset` (0 or just
/// after a newline) to the end of the part. `finish` gives the segment for `mergeSegment`.
#[wasm_bindgen]
pub struct SegmentScanner {
    segment: Segment,
}

#[wasm_bindgen]
impl SegmentScanner {
    /// A scanner for file number `file`, starting at byte `offset`, with the session's pass
    /// verdicts (`GateSession.passVerdicts()`).
    #[wasm_bindgen(constructor)]
    pub fn new(pass_verdicts: Vec<String>, file: u32, offset: f64) -> SegmentScanner {
        let pass = crate::policy::PassSet::new(pass_verdicts);
        SegmentScanner {
            segment: Segment::new(pass, DEFAULT_MAX_LINE, file, offset as u64),
        }
    }

    /// Feeds the next bytes.
    pub fn push(&mut self, chunk: &[u8]) {
        self.segment.push(chunk);
    }

    /// Ends the part: the segment as bytes (the scanner can be used no further).
    pub fn finish(mut self) -> Vec<u8> {
        self.segment.finish();
        self.segment.to_bytes()
    }
}

#[wasm_bindgen(typescript_custom_section)]
const DIFF_TYPES: &'static str = r#"
/** Options of `diffReports`, `diffEnvelopes` and `diffDocuments`. */
export interface DiffOptions {
  /** The names errors give the two inputs (default "before" and "after"). */
  before_name?: string; after_name?: string;
  /** `diffDocuments`: the trusted public keys (SPKI PEM) a signed decision must verify against. */
  trusted_keys?: string[];
  /** How many distinct trusted keys must have signed each signed decision (default 1). */
  threshold?: number;
}
/** A side of a diff: where it came from and what its report says. */
export interface DiffSide {
  source: "report" | "signed"; signers: string[]; tool: { name: string; version: string };
  decision: { approved: boolean; reason: string; outcome?: "approved" | "blocked" | "inconclusive" };
  policy_digest: string; num_cases: number; inputs: { role: string; name: string; sha256: string | null }[];
  /** What its decision rests on, when its report says (absent in a report whose cases every
   * model answered, or made before reports had it). */
  evidence?: {
    test_cases: number; rests_on: number; missing: { old: number; new: number }; not_run?: number;
    over: "used" | "test_set";
  };
}
export type DiffOutcome = "approved" | "blocked" | "inconclusive";
export interface DiffFlip {
  pipeline_id: string | number; template_id: unknown; model: "old" | "new"; before_pass: boolean; after_pass: boolean;
  before_verdict: string | null; after_verdict: string | null;
}
export interface DiffFlipCounts { fail_to_pass: number; pass_to_fail: number; verdict_changed: number; }
export interface DiffTemplate {
  template_id: unknown; n_before: number; n_after: number; delta_before: number | null; delta_after: number | null;
  delta_change: number | null;
}
/** A side's task difference with the interval that decided: the one clustered by template when
 * the report has it (`clustered: true`), else the unclustered one; `method` as the report names it
 * (`newcombe`, `paired_t`, `cluster_robust_t`; null without statistics). */
export interface DiffInterval {
  task_delta: number | null; low: number | null; high: number | null; confidence: number | null;
  method: string | null; clustered: boolean;
}
/** A diff of two evaluations (`deploy-gate diff --out`), as `JSON.parse` reads it: an integer id
 * beyond 2^53 is a rounded number here; `GateDiff.json()` has its digits, and the rows of
 * `GateDiff.flips` and `GateDiff.onlyIds` their exact text. */
export interface DiffDocument {
  schema: "deploy-gate/diff/v1"; tool: { name: string; version: string };
  before: DiffSide; after: DiffSide;
  decision: { changed: boolean; before: DiffOutcome; after: DiffOutcome };
  policy: { field: string; before: unknown; after: unknown }[];
  inputs: { role: string; same: boolean; before_sha256: string | null; after_sha256: string | null }[];
  cases: {
    common: number; only_before: (string | number)[]; only_after: (string | number)[];
    counts: { old: DiffFlipCounts; new: DiffFlipCounts }; flips: DiffFlip[];
  };
  templates: DiffTemplate[];
  stats: { before: DiffInterval; after: DiffInterval; overlap: boolean | null };
  warnings: string[];
  /** Present only when either report has guardrails. */
  guardrails?: { unchanged: number; changed: DiffGuardrailChange[] };
  /** Present only when the two review files were given (`diff --review-before/--review-after`): every case whose mark
   * or note differs (null on the side that does not mark it). */
  review_changes?: { pipeline_id: string | number; before: DiffMarkSide | null; after: DiffMarkSide | null }[];
}
/** A review mark that changed between the two sides (`DiffHandle.reviewChanges`), with its id as shown. */
export interface DiffMarkChangeRow extends DiffIdRow { before: DiffMarkSide | null; after: DiffMarkSide | null; }
/** A case's review mark on one side of a diff. */
export interface DiffMarkSide { mark: ReviewMarkName; note?: string; }
/** A guardrail added, removed or whose outcome changed (`before`/`after` null on the side without it). */
export interface DiffGuardrailChange {
  criterion: string; change: "added" | "removed" | "changed";
  before: DiffGuardrailSide | null; after: DiffGuardrailSide | null;
}
export interface DiffGuardrailSide {
  action: "block" | "advise"; outcome: "within" | "exceeded" | "not_shown";
  limit_kind: "max_increase" | "max_difference" | "max_drop"; limit: number;
  change: number | null; low: number | null; high: number | null; n: number;
  /** template_regression only: the template ids shown to regress. */
  regressed?: unknown[];
}
/** An id as shown: `id_label` is an integer id's digits (all of them) or a string id's text
 * (quoted when it reads as an integer, so that `5` and `"5"` differ). */
export interface DiffIdRow { pipeline_id: string | number; id_label: string; id_kind: "integer" | "string"; }
/** A flip with its id and template as shown (`template_text` null for a null template). */
export interface DiffFlipRow extends DiffFlip, DiffIdRow { template_text: string | null; }
export interface DiffTemplateRow extends DiffTemplate { template_text: string | null; }
"#;

/// A diff of two evaluations, as `deploy-gate diff` makes it: its JSON (byte for byte the CLI's
/// `--out`), its renderings, and its long lists in slices (a page takes them a few thousand
/// at a time, so that no message blocks its main thread).
#[wasm_bindgen(js_name = GateDiff)]
pub struct DiffHandle {
    inner: crate::diff::GateDiff,
}

#[derive(Serialize)]
struct IdRow<'a> {
    pipeline_id: &'a crate::audit::PipelineId,
    id_label: std::borrow::Cow<'a, str>,
    id_kind: &'static str,
}

impl<'a> IdRow<'a> {
    fn of(id: &'a crate::audit::PipelineId) -> IdRow<'a> {
        IdRow {
            pipeline_id: id,
            id_label: crate::diff::id_label(id),
            id_kind: id.type_name(),
        }
    }
}

#[derive(Serialize)]
struct MarkChangeRow<'a> {
    #[serde(flatten)]
    change: &'a crate::review::MarkChange,
    #[serde(flatten)]
    id: IdRow<'a>,
}

#[derive(Serialize)]
struct FlipRow<'a> {
    #[serde(flatten)]
    flip: &'a crate::diff::Flip,
    #[serde(flatten)]
    id: IdRow<'a>,
    template_text: Option<String>,
}

#[derive(Serialize)]
struct TemplateRow<'a> {
    #[serde(flatten)]
    template: &'a crate::diff::TemplateChange,
    template_text: Option<String>,
}

/// Rows `from..to` of a list (clamped), as JSON text parsed into JS objects.
fn rows<'a, T, R: Serialize>(
    list: &'a [T],
    from: usize,
    to: usize,
    row: impl Fn(&'a T) -> R,
) -> Result<JsValue, JsError> {
    let end = to.min(list.len());
    let start = from.min(end);
    let rows: Vec<R> = list[start..end].iter().map(row).collect();
    json_to_js(&serde_json::to_string(&rows).map_err(into_error)?)
}

#[wasm_bindgen(js_class = GateDiff)]
impl DiffHandle {
    /// The decision changed (the CLI exits 5).
    #[wasm_bindgen(getter)]
    pub fn changed(&self) -> bool {
        self.inner.changed()
    }

    /// The diff JSON, byte for byte `deploy-gate diff --out` for the same two inputs.
    pub fn json(&self) -> String {
        self.inner.to_json()
    }

    /// The whole diff as a plain object (`JSON.parse` of `json()`).
    #[wasm_bindgen(js_name = toObject, unchecked_return_type = "DiffDocument")]
    pub fn to_object(&self) -> Result<JsValue, JsError> {
        json_to_js(&self.inner.to_json())
    }

    /// The diff without the items of its long lists (`cases.flips`, `cases.only_before`,
    /// `cases.only_after`, `templates` are empty; their lengths are `flipCount`, …): take them
    /// with `flips`, `onlyIds` and `templates`.
    #[wasm_bindgen(unchecked_return_type = "DiffDocument")]
    pub fn summary(&self) -> Result<JsValue, JsError> {
        let d = &self.inner;
        let light = crate::diff::GateDiff {
            schema: d.schema.clone(),
            tool: d.tool.clone(),
            before: d.before.clone(),
            after: d.after.clone(),
            decision: d.decision.clone(),
            policy: d.policy.clone(),
            inputs: d.inputs.clone(),
            cases: crate::diff::CaseChanges {
                common: d.cases.common,
                only_before: Vec::new(),
                only_after: Vec::new(),
                counts: d.cases.counts,
                flips: Vec::new(),
            },
            templates: Vec::new(),
            stats: d.stats.clone(),
            warnings: d.warnings.clone(),
            guardrails: d.guardrails.clone(),
            review_changes: d.review_changes.clone(),
        };
        json_to_js(&light.to_json())
    }

    /// What the two decisions rest on, as every rendering's headline says it: `rests on 94 of
    /// 3,000 test cases`, or `rests on 9 of 9 → 8 of 9 test cases` when the sides differ (from
    /// each report's `evidence`, or the cases both models answered in a report without one).
    #[wasm_bindgen(getter, js_name = restsOn)]
    pub fn rests_on(&self) -> String {
        crate::render::diff::rests_on_text(&self.inner)
    }

    /// How many flips.
    #[wasm_bindgen(getter, js_name = flipCount)]
    pub fn flip_count(&self) -> usize {
        self.inner.cases.flips.len()
    }

    /// How many pipelines only before.
    #[wasm_bindgen(getter, js_name = onlyBeforeCount)]
    pub fn only_before_count(&self) -> usize {
        self.inner.cases.only_before.len()
    }

    /// How many pipelines only after.
    #[wasm_bindgen(getter, js_name = onlyAfterCount)]
    pub fn only_after_count(&self) -> usize {
        self.inner.cases.only_after.len()
    }

    /// How many templates.
    #[wasm_bindgen(getter, js_name = templateCount)]
    pub fn template_count(&self) -> usize {
        self.inner.templates.len()
    }

    /// Flips `from..to`, each with its id and template as shown.
    #[wasm_bindgen(unchecked_return_type = "DiffFlipRow[]")]
    pub fn flips(&self, from: usize, to: usize) -> Result<JsValue, JsError> {
        rows(&self.inner.cases.flips, from, to, |f| FlipRow {
            flip: f,
            id: IdRow::of(&f.pipeline_id),
            template_text: f.template_id.text(),
        })
    }

    /// The pipelines only `"before"` or only `"after"`, `from..to`.
    #[wasm_bindgen(js_name = onlyIds, unchecked_return_type = "DiffIdRow[]")]
    pub fn only_ids(
        &self,
        #[wasm_bindgen(unchecked_param_type = "\"before\" | \"after\"")] side: &str,
        from: usize,
        to: usize,
    ) -> Result<JsValue, JsError> {
        let list = match side {
            "before" => &self.inner.cases.only_before,
            "after" => &self.inner.cases.only_after,
            other => return Err(into_error(format!("side must be `before` or `after`, not `{other}`"))),
        };
        rows(list, from, to, IdRow::of)
    }

    /// Templates `from..to` (worst change first).
    #[wasm_bindgen(unchecked_return_type = "DiffTemplateRow[]")]
    pub fn templates(&self, from: usize, to: usize) -> Result<JsValue, JsError> {
        rows(&self.inner.templates, from, to, |t| TemplateRow {
            template: t,
            template_text: t.template_id.text(),
        })
    }

    /// Compares the two sides' review files (`deploy-gate diff --review-before FILE
    /// --review-after FILE`): each named and its bytes; a side signed with a review must be
    /// given the file its statement pins. The marks that changed are then in the diff JSON
    /// (`review_changes`), its Markdown and HTML, and in `reviewChanges`; says how many.
    #[wasm_bindgen(js_name = setReviews)]
    pub fn set_reviews(
        &mut self,
        before_name: &str,
        before: &[u8],
        after_name: &str,
        after: &[u8],
    ) -> Result<usize, JsError> {
        let changes =
            crate::diff::review_changes(&self.inner, (before_name, before), (after_name, after)).map_err(into_error)?;
        let n = changes.len();
        self.inner.review_changes = Some(changes);
        Ok(n)
    }

    /// The review marks that changed (`setReviews`), `from..to`, each with its id as shown.
    #[wasm_bindgen(js_name = reviewChanges, unchecked_return_type = "DiffMarkChangeRow[]")]
    pub fn review_changes(&self, from: usize, to: usize) -> Result<JsValue, JsError> {
        let changes = self.inner.review_changes.as_deref().unwrap_or_default();
        rows(changes, from, to, |c| MarkChangeRow {
            change: c,
            id: IdRow::of(&c.pipeline_id),
        })
    }

    /// The Markdown comment, the text `deploy-gate diff --markdown` writes.
    pub fn markdown(&self) -> String {
        crate::render::diff::markdown::diff_markdown(&self.inner)
    }

    /// The standalone HTML file, the bytes `deploy-gate diff --html` writes.
    pub fn html(&self) -> String {
        crate::render::diff::html::diff_html(&self.inner)
    }

    /// JUnit XML, the bytes `deploy-gate diff --junit` writes.
    pub fn junit(&self) -> String {
        crate::render::diff::junit::diff_junit(&self.inner)
    }
}

#[derive(serde::Deserialize, Default)]
struct DiffOptions {
    #[serde(default)]
    before_name: Option<String>,
    #[serde(default)]
    after_name: Option<String>,
    #[serde(default)]
    trusted_keys: Option<Vec<String>>,
    #[serde(default)]
    threshold: Option<usize>,
}

fn diff_options(options: &JsValue) -> Result<DiffOptions, JsError> {
    if options.is_undefined() || options.is_null() {
        return Ok(DiffOptions::default());
    }
    let text = js_sys::JSON::stringify(options)
        .ok()
        .and_then(|s| s.as_string())
        .ok_or_else(|| into_error("options: not an object"))?;
    serde_json::from_str(&text).map_err(|e| into_error(format!("options: {e}")))
}

/// Reads both sides with `read` and compares them.
fn diff_with(
    options: &DiffOptions,
    trusted_pems: &[String],
    read: impl Fn(&str, Option<&crate::diff::Trust<'_>>, bool) -> Result<crate::diff::Evaluation, crate::diff::ReadError>,
) -> Result<DiffHandle, JsError> {
    let keys = trusted_pems
        .iter()
        .map(|p| keys::read_public_pem(p))
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| into_error(format!("a trusted key: {e}")))?;
    let trust = crate::diff::Trust {
        keys: &keys,
        threshold: options.threshold.unwrap_or(1),
        limits: crate::attest::Limits::default(),
    };
    let before_name = options.before_name.as_deref().unwrap_or("before");
    let after_name = options.after_name.as_deref().unwrap_or("after");
    let before = read(before_name, Some(&trust), true).map_err(into_error)?;
    let after = read(after_name, Some(&trust), false).map_err(into_error)?;
    let inner = crate::diff::diff(&before, &after).map_err(|e| {
        let name = if e.side == "before" { before_name } else { after_name };
        into_error(format!("{name}: {}", e.error))
    })?;
    Ok(DiffHandle { inner })
}

/// Compares two reports (`deploy-gate/report/v1` JSON, as `evaluateJson()` or `deploy-gate
/// evaluate --out` wrote them, by any build): `before` the earlier evaluation.
#[wasm_bindgen(js_name = diffReports)]
pub fn diff_reports(
    before_json: &str,
    after_json: &str,
    #[wasm_bindgen(unchecked_param_type = "DiffOptions | undefined")] options: JsValue,
) -> Result<DiffHandle, JsError> {
    let options = diff_options(&options)?;
    diff_with(&options, &[], |name, _, first| {
        crate::diff::read_report(name, if first { before_json } else { after_json }.as_bytes())
    })
}

/// Compares two signed decisions (`decision.dsse.json`), each read only once its signatures
/// verify against the trusted public keys (PEM); their age and target are not checked.
#[wasm_bindgen(js_name = diffEnvelopes)]
pub fn diff_envelopes(
    before: &[u8],
    after: &[u8],
    trusted_keys: Vec<String>,
    #[wasm_bindgen(unchecked_param_type = "DiffOptions | undefined")] options: JsValue,
) -> Result<DiffHandle, JsError> {
    let options = diff_options(&options)?;
    diff_with(&options, &trusted_keys, |name, trust, first| {
        crate::diff::read_signed(name, if first { before } else { after }, trust)
    })
}

/// Compares two documents, each a report or a signed decision (`deploy-gate diff BEFORE AFTER`):
/// a signed one is read only once it verifies against `options.trusted_keys`.
#[wasm_bindgen(js_name = diffDocuments)]
pub fn diff_documents(
    before: &[u8],
    after: &[u8],
    #[wasm_bindgen(unchecked_param_type = "DiffOptions | undefined")] options: JsValue,
) -> Result<DiffHandle, JsError> {
    let options = diff_options(&options)?;
    let pems = options.trusted_keys.clone().unwrap_or_default();
    diff_with(&options, &pems, |name, trust, first| {
        crate::diff::read_document(name, if first { before } else { after }, trust)
    })
}
