/* tslint:disable */
/* eslint-disable */

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



/** The name of a failed model-signature check (`src/oms/mod.rs`), in the order they run. */
export type ModelSignatureCheckName = "bundle_shape" | "keyless" | "keyless_identity" | "certificate_chain" | "sct" | "tlog_inclusion" | "tlog_checkpoint" | "tlog_promise" | "tlog_body" | "timestamp" | "signature_count" | "certificate" | "untrusted_key" | "signature" | "statement_type" | "predicate_type" | "predicate" | "subject_digest" | "symlink" | "file_missing" | "file_extra" | "file_digest" | "model_identity";
/** How a signed decision names its model: its subject digest (`sha256:<hex>` or hex) and the
 * subject's `digest_scheme` annotation (null or absent: the original directory digest). */
export interface DecisionModel { model_digest: string; digest_scheme?: string | null; }
/** Options of `verifyModelSignature` and `new ModelCheck`. */
export interface ModelSignatureOptions {
    /** Trusted root certificates (PEM; several in one text are fine) for the certificate method. */
    trusted_roots?: string[];
    /** The signed decision to compare the model with. */
    decision?: DecisionModel;
    /** Trusted signers for the keyless Sigstore method, matched exactly (any one pair is enough). */
    trainer_identities?: { identity: string; issuer: string }[];
    /** The Sigstore trusted root (`trusted_root.json` or a ClientTrustConfig, as text) for the
     * keyless method; default: the public-good instance's root bundled with this build. */
    sigstore_root?: string;
}
/** A file held in memory: its path relative to the model root, `/`-separated (`"."` for a
 * single-file model), and its bytes. */
export interface ModelFileInput { path: string; bytes: Uint8Array; }
export interface ModelSignatureFailure { check: ModelSignatureCheckName; detail: string; file: string | null; message: string; }
/** A signed resource: a file, or (method `shards`) the byte range `start`..`end` of one. */
export interface ModelResource { name: string; path: string; start: number | null; end: number | null; digest: string; }
/** What a verified `model.sig` says. */
export interface TrainerSignature {
    /** hex sha256 of the trainer's public key (SPKI DER), as deploy-gate names keys. */
    key_id: string;
    /** model-signing's `publicKey.hint` for the same key. */
    key_hint: string;
    curve: "P-256" | "P-384";
    signed_by: { method: "key" } | { method: "certificate"; subject: string; root: string } | { method: "keyless"; identity: string; issuer: string; log_index: number | null; integrated_time: number | null };
    model_name: string;
    /** The OMS subject digest, `sha256:<hex>`. */
    subject_digest: string;
    method: "files" | "shards";
    shard_size: number | null;
    /** The paths left out of the folder: OMS's defaults and the signed ones (and `model.sig` at the root when it is this bundle). */
    ignore_paths: string[];
    /** One resource named "." : a single-file model. */
    single_file: boolean;
    resources: ModelResource[];
    payload_sha256: string;
}
/** The files compared: how many were given, how many compared (the others are ignored paths). */
export interface ModelFilesChecked { given: number; checked: number; ignored: number; all_match: boolean; }
/** Whether the trainer's signature names the decision's model: `same` null when it cannot be
 * told; `by` how it was told (the OMS digest, the files given, or the signed resources). */
export interface SameModel { same: boolean | null; by: "digest" | "files" | "resources" | null; detail: string; }
export interface ModelSignatureResult {
    /** The bundle verified and, when files were given, every file matched. */
    valid: boolean;
    /** The first failed check (null when valid). */
    failure: ModelSignatureFailure | null;
    /** The verified bundle (null when the bundle itself failed). */
    signature: TrainerSignature | null;
    /** null when no files were given (or the bundle failed). */
    files: ModelFilesChecked | null;
    /** null when no decision was given. */
    same_model: SameModel | null;
}
/** A file hashed by a `ModelFileHasher`. */
export interface ModelFileDigests { size: number; sha256: string; shards: string[]; }
/** A trusted trainer key or root certificates, as `trainerKeyInfo` reads them. */
export type TrainerKeyInfo = { kind: "key"; key_id: string; key_hint: string; curve: "P-256" | "P-384" } | { kind: "roots"; certificates: number; subjects: string[] };



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



/**
 * A diff of two evaluations, as `deploy-gate diff` makes it: its JSON (byte for byte the CLI's
 * `--out`), its renderings, and its long lists in slices (a page takes them a few thousand
 * at a time, so that no message blocks its main thread).
 */
export class GateDiff {
    private constructor();
    free(): void;
    [Symbol.dispose](): void;
    /**
     * Flips `from..to`, each with its id and template as shown.
     */
    flips(from: number, to: number): DiffFlipRow[];
    /**
     * The standalone HTML file, the bytes `deploy-gate diff --html` writes.
     */
    html(): string;
    /**
     * The diff JSON, byte for byte `deploy-gate diff --out` for the same two inputs.
     */
    json(): string;
    /**
     * JUnit XML, the bytes `deploy-gate diff --junit` writes.
     */
    junit(): string;
    /**
     * The Markdown comment, the text `deploy-gate diff --markdown` writes.
     */
    markdown(): string;
    /**
     * The pipelines only `"before"` or only `"after"`, `from..to`.
     */
    onlyIds(side: "before" | "after", from: number, to: number): DiffIdRow[];
    /**
     * The review marks that changed (`setReviews`), `from..to`, each with its id as shown.
     */
    reviewChanges(from: number, to: number): DiffMarkChangeRow[];
    /**
     * Compares the two sides' review files (`deploy-gate diff --review-before FILE
     * --review-after FILE`): each named and its bytes; a side signed with a review must be
     * given the file its statement pins. The marks that changed are then in the diff JSON
     * (`review_changes`), its Markdown and HTML, and in `reviewChanges`; says how many.
     */
    setReviews(before_name: string, before: Uint8Array | number[], after_name: string, after: Uint8Array | number[]): number;
    /**
     * The diff without the items of its long lists (`cases.flips`, `cases.only_before`,
     * `cases.only_after`, `templates` are empty; their lengths are `flipCount`, …): take them
     * with `flips`, `onlyIds` and `templates`.
     */
    summary(): DiffDocument;
    /**
     * Templates `from..to` (worst change first).
     */
    templates(from: number, to: number): DiffTemplateRow[];
    /**
     * The whole diff as a plain object (`JSON.parse` of `json()`).
     */
    toObject(): DiffDocument;
    /**
     * The decision changed (the CLI exits 5).
     */
    readonly changed: boolean;
    /**
     * How many flips.
     */
    readonly flipCount: number;
    /**
     * How many pipelines only after.
     */
    readonly onlyAfterCount: number;
    /**
     * How many pipelines only before.
     */
    readonly onlyBeforeCount: number;
    /**
     * What the two decisions rest on, as every rendering's headline says it: `rests on 94 of
     * 3,000 test cases`, or `rests on 9 of 9 → 8 of 9 test cases` when the sides differ (from
     * each report's `evidence`, or the cases both models answered in a report without one).
     */
    readonly restsOn: string;
    /**
     * How many templates.
     */
    readonly templateCount: number;
}

/**
 * One gate evaluation: policy, audit log (streamed), test set, verdicts, trajectories, report.
 * A mapping over the core's `session::Session`: JS values in, its results and errors out.
 */
export class GateSession {
    free(): void;
    [Symbol.dispose](): void;
    /**
     * Declares the next audit file of a segmented audit log; returns its number.
     */
    addAuditFile(name: string): number;
    /**
     * Reads a trajectory file for `role` (`old`/`new` or `old_trajectories`/`new_trajectories`).
     */
    addTrajectories(role: "old" | "new" | "old_trajectories" | "new_trajectories", bytes: Uint8Array | number[], file_name: string): void;
    /**
     * Reads a verdict file for `role` (`old`/`new` or `old_verdicts`/`new_verdicts`).
     */
    addVerdicts(role: "old" | "new" | "old_verdicts" | "new_verdicts", bytes: Uint8Array | number[], file_name: string): void;
    /**
     * Starts an audit file (the first call also starts a new audit log).
     */
    beginAudit(name: string): void;
    /**
     * Starts an audit log read as segments scanned elsewhere (`SegmentScanner`, in several
     * workers): declare each file with `addAuditFile`, merge the segments in file order with
     * `mergeSegment`, give each file's size and sha256, then `finishSegmentedAudit`.
     */
    beginSegmentedAudit(): void;
    /**
     * Builds the test set from the whole audit files (in the order begun), for callers that
     * hold them in memory.
     */
    buildTestSet(files: Uint8Array[]): TestSetInfo;
    /**
     * True when some record of `role`'s (`old`/`new`) verdict file that a test case may take
     * carries an answer (`output`).
     */
    carriesOutputs(role: string): boolean;
    /**
     * Each test case's latency and tokens for `role` (`old`/`new`), in the test set's order:
     * `{latency_ms, tokens}`, two arrays with NaN where the case's records say nothing (the
     * mean over the records the case counts); undefined when the verdict file carries no cost
     * field.
     */
    caseCosts(role: string): CaseCosts | undefined;
    /**
     * Test case `index`'s trajectory results, old beside new: each the result its verdict
     * record names (`trajectory_id`), or else the last result of its trajectory file that names
     * the case's `pipeline_id`, with its composite and metrics; undefined when neither file has
     * one.
     */
    caseTrajectory(index: number): CaseTrajectory | undefined;
    /**
     * Ends range `i` once all its bytes were fed.
     */
    endRange(i: number): void;
    /**
     * Ends audit file `file`'s stream (its ranges still open end here).
     */
    endStream(file: number): void;
    /**
     * The GateReport as JSON text, byte for byte what the CLI writes for the same inputs.
     */
    evaluateJson(): string;
    /**
     * The GateReport as a plain object.
     */
    evaluate(): GateReport;
    /**
     * Feeds the next bytes of range `i` of `neededRanges`.
     */
    feedRange(i: number, bytes: Uint8Array | number[]): void;
    /**
     * Feeds the next bytes of audit file `file`'s whole stream (a gzip file's decompressed
     * bytes), in order from its start: the session keeps what the ranges need, skips the rest.
     * Returns whether more of the stream is needed (false after its last range: stop reading).
     */
    feedStream(file: number, bytes: Uint8Array | number[]): boolean;
    /**
     * The next piece of the verdict file `startVerdicts` started: true to go on, false when the
     * file is to be given whole to `addVerdicts` (it holds something only the whole-file reader
     * names: a JSON syntax error, say); `finishVerdicts` then says so too. In JSONL an unusable
     * record is an error naming its line (the reading is then over).
     */
    feedVerdicts(piece: Uint8Array | number[]): boolean;
    /**
     * Ends the audit log (all its files) and returns what pass 1 saw.
     */
    finishAudit(): AuditSummary;
    /**
     * Ends a segmented audit log and returns what pass 1 saw.
     */
    finishSegmentedAudit(): AuditSummary;
    /**
     * Finishes pass 2 after every range was read and ended.
     */
    finishTestSet(): TestSetInfo;
    /**
     * The verdict file `startVerdicts` started is read: true when its verdicts are now the
     * side's; false when the file is to be given whole to `addVerdicts`, which reads it or
     * names what is wrong with it.
     */
    finishVerdicts(): boolean;
    /**
     * True when the test set and both verdict files are in: `evaluate` can run.
     */
    isReady(): boolean;
    /**
     * Merges the next segment (from `SegmentScanner.finish`), in file then offset order.
     */
    mergeSegment(bytes: Uint8Array | number[]): void;
    /**
     * The byte ranges pass 2 reads, as a flat array `[file, start, end, …]` (file = index of
     * the audit file in the order begun; end = -1: to the end of the file). Read each range
     * and feed its bytes in order with `feedRange` (ranges may be read concurrently), then
     * `endRange`; or feed each audit file's whole (decompressed) stream with `feedStream`
     * and `endStream`.
     */
    neededRanges(): Float64Array;
    /**
     * A session with the given policy (defaults for absent fields).
     */
    constructor(policy: PolicyInput | undefined);
    /**
     * Where test case `index`'s answer is in `role`'s verdict file (`old`/`new`), or undefined
     * when its record carries none: read those bytes (`File.slice`) and give them to `readOutput`.
     */
    outputAt(role: string, index: number): OutputAt | undefined;
    /**
     * The policy's pass verdicts (upper-cased), for `SegmentScanner`s in other workers.
     */
    passVerdicts(): string[];
    /**
     * The current policy, defaults filled in (as the report lists it).
     */
    policy(): GateReport["policy"];
    /**
     * Feeds the next chunk of the current audit file.
     */
    pushAudit(chunk: Uint8Array | number[]): void;
    /**
     * Forgets a verdict or trajectory file (`old_verdicts`, `new_trajectories`, …).
     */
    removeInput(role: Role): void;
    /**
     * Gives an audit file's sha256 (hex) after the audit log was scanned (`finishAudit` or
     * `finishSegmentedAudit`): the decision can be shown before the digest is in, but a
     * report is only signed once every input has one.
     */
    setAuditDigest(file: number, sha256: string): void;
    /**
     * Gives a segmented audit file's size and sha256 (hex; `""` when it is given later with
     * `setAuditDigest`).
     */
    setAuditFileDigest(file: number, size: number, sha256: string): void;
    /**
     * Gives the sha256 (hex) of audit file `file` (0-based, in the order begun).
     */
    setAuditSha256(file: number, sha256: string): void;
    /**
     * Whether audit files are hashed as they stream (default true). A caller that hashes in
     * another worker turns it off and gives each digest with `setAuditSha256` before
     * `finishAudit`.
     */
    setHashing(on: boolean): void;
    /**
     * Replaces the policy and says what must be redone: `"rescan"` (pass verdicts changed: push
     * the audit log again), `"rebuild"` (test-set size or seed changed: call `neededRanges`
     * again) or `"ready"` (call `evaluate`).
     */
    setPolicy(policy: PolicyInput): PolicyChange;
    /**
     * Guesses a file's role from its name and first bytes (a few KiB).
     */
    static sniffRole(file_name: string, head: Uint8Array | number[]): RoleGuess;
    /**
     * Starts reading `role`'s verdict file a piece at a time, so that it is never held whole in
     * this module's memory (which never shrinks): `head` is the file's first bytes (at least its
     * first non-blank line; it is not read as a piece). Then `feedVerdicts` every piece in order
     * while it says to go on, and `finishVerdicts`. Always true (false was: give the file whole
     * to `addVerdicts`, which every format now reads in pieces).
     */
    startVerdicts(role: "old" | "new" | "old_verdicts" | "new_verdicts", file_name: string, head: Uint8Array | number[]): boolean;
    /**
     * The test cases as plain objects.
     */
    testCases(): TestCase[];
    /**
     * The test set as JSONL (one case per line, the reference's field names).
     */
    testSetJsonl(): string;
}

/**
 * The trainer's signature over a model, checked file by file.
 *
 * Made from the bundle (verified at once: `result()`), it takes the model's files — every file
 * of the folder, the ignored paths too, each exactly once — streamed (`addFile`, `update`,
 * `finishFile`) or as digests computed elsewhere (`addFileDigests`), then `finish` compares
 * them with the signed resources.
 */
export class ModelCheck {
    free(): void;
    [Symbol.dispose](): void;
    /**
     * A file hashed elsewhere (`ModelFileHasher.finish()`, or for the `files` method any sha256
     * such as `Sha256Stream`'s): its size, sha256 (hex) and, for `shards`, its shards' sha256
     * in order.
     */
    addFileDigests(path: string, size: number, sha256: string, shards?: string[] | null): void;
    /**
     * Begins a file streamed through this check (its bytes with `update`, then `finishFile`).
     */
    addFile(path: string): void;
    /**
     * Ends the current file.
     */
    finishFile(): void;
    /**
     * Compares the files given with the signed resources: the result, `files` filled in (the
     * check can take no more files).
     */
    finish(): ModelSignatureResult;
    /**
     * Whether the signature leaves this path out (OMS's defaults and the signed
     * `ignore_paths`, each at the model root with everything below it). An ignored file is
     * still given (the original directory digest counts it) but not compared; nor is a
     * `model.sig` at the model root whose bytes are the bundle's (the signature itself, left
     * out as `deploy-gate verify` leaves out the signature file).
     */
    ignored(path: string): boolean;
    /**
     * Verifies `bundle` (`model.sig`: bytes or JSON text) against the trusted trainer keys
     * (SPKI PEM, P-256 or P-384) and `options.trusted_roots`. A bundle that fails is a result
     * (`result().failure`), not an exception; an unreadable key or option throws.
     */
    constructor(bundle: Uint8Array | string, trusted_keys: string[], options?: ModelSignatureOptions);
    /**
     * The result so far: the bundle's verification (and the decision's model, compared by the
     * digest or the signed resources); after `finish`, with the files.
     */
    result(): ModelSignatureResult;
    /**
     * The current file's next bytes.
     */
    update(bytes: Uint8Array | number[]): void;
    /**
     * Whether the bundle verified (its files may still differ).
     */
    readonly bundleValid: boolean;
    /**
     * The shard size the files are hashed with (0: the `files` method, or no valid bundle).
     */
    readonly shardSize: number;
}

/**
 * Hashes one file of a model as a `shards` (or, with shard size 0, `files`) signature needs it,
 * in one pass: for a worker that hashes files while another holds the `ModelCheck`.
 */
export class ModelFileHasher {
    free(): void;
    [Symbol.dispose](): void;
    /**
     * The file's size, sha256 and shard digests (hex); the hasher can be used no further.
     */
    finish(): ModelFileDigests;
    /**
     * A hasher; `shard_size`: the signature's (`TrainerSignature.shard_size`), 0 or null for
     * the `files` method.
     */
    constructor(shard_size?: number | null);
    /**
     * Adds the file's next bytes.
     */
    update(bytes: Uint8Array | number[]): void;
}

/**
 * Pass 1 over one part of an audit file, in any worker: the bytes from `offset` (0 or just
 * after a newline) to the end of the part. `finish` gives the segment for `mergeSegment`.
 */
export class SegmentScanner {
    free(): void;
    [Symbol.dispose](): void;
    /**
     * Ends the part: the segment as bytes (the scanner can be used no further).
     */
    finish(): Uint8Array;
    /**
     * A scanner for file number `file`, starting at byte `offset`, with the session's pass
     * verdicts (`GateSession.passVerdicts()`).
     */
    constructor(pass_verdicts: string[], file: number, offset: number);
    /**
     * Feeds the next bytes.
     */
    push(chunk: Uint8Array | number[]): void;
}

/**
 * A streaming SHA-256, for hashing a file in another worker while it is scanned (sha2 0.11's
 * WebAssembly SIMD backend).
 */
export class Sha256Stream {
    free(): void;
    [Symbol.dispose](): void;
    /**
     * The digest as lowercase hex (the hash can be used no further).
     */
    finish(): string;
    /**
     * A new hash.
     */
    constructor();
    /**
     * Adds bytes.
     */
    update(bytes: Uint8Array | number[]): void;
}

/**
 * Checks a policy (a whole form, or one field) with the core's parser: `{ok: true, policy}`
 * with the resolved policy, or `{ok: false, field, message}` naming the field at fault.
 */
export function checkPolicy(input: PolicyInput | undefined): PolicyCheck;

/**
 * Checks a policy file's bytes as `deploy-gate evaluate --policy` reads them (a JSON object in
 * the shape of a report's `policy`, or a whole report, read strictly): `{ok: true, policy}` with
 * the resolved policy and its digest, or `{ok: false, field, message}` (`field` null when the
 * file is not a JSON object).
 */
export function checkPolicyFile(bytes: Uint8Array | number[]): PolicyFileCheck;

/**
 * Co-signs a signed decision with another reviewer's private key (PEM): the envelope as JSON
 * text, the one `deploy-gate sign --envelope EXISTING.json --key KEY.pem` writes for the same
 * envelope and key. The envelope must verify against the trusted keys with the options
 * given (else an error naming the failed check); its statement's bytes are kept.
 */
export function cosignDecision(envelope: Uint8Array | number[], private_pem: string, trusted_pems: string[], options: VerifyOptions): string;

/**
 * The default policy, as the report lists it (the page's form shows these values).
 */
export function defaultPolicy(): GatePolicy;

/**
 * Compares two documents, each a report or a signed decision (`deploy-gate diff BEFORE AFTER`):
 * a signed one is read only once it verifies against `options.trusted_keys`.
 */
export function diffDocuments(before: Uint8Array | number[], after: Uint8Array | number[], options: DiffOptions | undefined): GateDiff;

/**
 * Compares two signed decisions (`decision.dsse.json`), each read only once its signatures
 * verify against the trusted public keys (PEM); their age and target are not checked.
 */
export function diffEnvelopes(before: Uint8Array | number[], after: Uint8Array | number[], trusted_keys: string[], options: DiffOptions | undefined): GateDiff;

/**
 * Compares two reports (`deploy-gate/report/v1` JSON, as `evaluateJson()` or `deploy-gate
 * evaluate --out` wrote them, by any build): `before` the earlier evaluation.
 */
export function diffReports(before_json: string, after_json: string, options: DiffOptions | undefined): GateDiff;

/**
 * A new Ed25519 key pair from 32 random bytes (draw them with `crypto.getRandomValues`).
 */
export function generateKeyPair(seed: Uint8Array | number[]): KeyPair;

/**
 * The cases (places in the report's `cases`) whose answers the HTML report shows: read these
 * (`outputAt`, `readOutput`) and give them to `reportHtml`.
 */
export function htmlAnswerCases(report_json: string): Uint32Array;

/**
 * What a PEM holds: a private or a public key, and its key id.
 */
export function keyInfo(pem: string): KeyInfo;

/**
 * Opens a signed decision: verifies it as `verifyEnvelope` does and, when it is valid, adds the
 * GateReport read from the verified statement (`report`, and `report_json`: its text as
 * `deploy-gate evaluate` writes it). A rejected envelope's report is never read.
 */
export function openSignedDecision(envelope: Uint8Array | number[], trusted_pems: string[], options: VerifyOptions): SignedDecision;

/**
 * The answer held by `bytes`, the bytes `at.start..at.end` of its verdict file (`outputAt`), as
 * JSON text; undefined when they do not hold one (the file changed since it was read).
 */
export function readOutput(bytes: Uint8Array | number[], at: OutputAt): string | undefined;

/**
 * A review file read against a report's JSON text: its marks by case, the marks of cases the
 * report does not hold, and what signing with it pins. A bad line is an error naming it.
 */
export function readReview(report_json: string, bytes: Uint8Array | number[], name: string): ReviewRead;

/**
 * A report's JSON text (`evaluateJson()`) as the standalone HTML report, byte for byte what
 * `deploy-gate evaluate --html` writes for the same report.
 * With `review` (a review file's bytes), the HTML report lists its marked cases with their
 * notes: what `evaluate --html --review` writes. With `answers` (the answers of the cases
 * `htmlAnswerCases` names, each as `readOutput` gives it), it shows them: what
 * `evaluate --html` writes for verdict files that carry answers.
 */
export function reportHtml(report_json: string, review: Uint8Array | number[] | null | undefined, answers: HtmlCaseAnswers[] | undefined): string;

/**
 * The report's Markdown summary from its JSON (`GateSession.evaluateJson()`, a signed
 * decision's embedded report): the text `deploy-gate evaluate --markdown` writes.
 * With `review` (a review file's bytes), it lists the marked cases with their notes.
 */
export function reportMarkdown(report_json: string, review?: Uint8Array | number[] | null): string;

/**
 * The review file (`deploy-gate/review/v1` JSONL) of marks made on a report's cases, each id
 * written as the report writes it: the bytes `sign --review` and `signDecision` take.
 */
export function reviewFile(report_json: string, marks: CaseReviewMark[]): string;

/**
 * A case's two answers (each the JSON text `readOutput` gives and whether it was cut, or
 * undefined), side by side with what changed, word by word or line by line.
 */
export function sideBySide(old: string | null | undefined, old_truncated: boolean, _new: string | null | undefined, new_truncated: boolean): SideBySide;

/**
 * Signs a report's decision: the DSSE envelope as JSON text. `now` is Unix seconds. With
 * `review` (a review file's bytes, `reviewFile`'s), the statement pins it as `sign --review` does.
 */
export function signDecision(report_json: string, private_pem: string, model_name: string, model_digest: string, target: string, now: number, review?: Uint8Array | number[] | null): string;

export function start(): void;

/**
 * What a trusted trainer key's PEM holds: an ECDSA public key (its key id, model-signing's
 * hint and its curve) or root certificates (how many, and their subjects).
 */
export function trainerKeyInfo(pem: string): TrainerKeyInfo;

/**
 * Verifies an envelope against trusted public keys (PEM). Invalid envelopes are a result with
 * `valid: false` and the failed `check`, not an exception.
 */
export function verifyEnvelope(envelope: Uint8Array | number[], trusted_pems: string[], options: VerifyOptions): VerifyResult;

/**
 * Verifies a trainer's `model.sig` (OpenSSF Model Signing v1.0) against trusted trainer keys
 * (SPKI PEM, ECDSA P-256/P-384) and, with `options.trusted_roots`, the certificate method; with
 * `files`, the model's files held in memory are compared with the signed ones (a large folder:
 * `ModelCheck`). A failed check is a result (`valid: false`, `failure`), not an exception.
 */
export function verifyModelSignature(bundle: Uint8Array | string, trusted_keys: string[], files?: ModelFileInput[] | null, options?: ModelSignatureOptions): ModelSignatureResult;

export type InitInput = RequestInfo | URL | Response | BufferSource | WebAssembly.Module;

export interface InitOutput {
    readonly memory: WebAssembly.Memory;
    readonly __wbg_gatediff_free: (a: number, b: number) => void;
    readonly __wbg_gatesession_free: (a: number, b: number) => void;
    readonly __wbg_modelcheck_free: (a: number, b: number) => void;
    readonly __wbg_modelfilehasher_free: (a: number, b: number) => void;
    readonly __wbg_segmentscanner_free: (a: number, b: number) => void;
    readonly __wbg_sha256stream_free: (a: number, b: number) => void;
    readonly checkPolicy: (a: any) => [number, number, number];
    readonly checkPolicyFile: (a: number, b: number) => [number, number, number];
    readonly cosignDecision: (a: number, b: number, c: number, d: number, e: number, f: number, g: any) => [number, number, number, number];
    readonly defaultPolicy: () => [number, number, number];
    readonly diffDocuments: (a: number, b: number, c: number, d: number, e: any) => [number, number, number];
    readonly diffEnvelopes: (a: number, b: number, c: number, d: number, e: number, f: number, g: any) => [number, number, number];
    readonly diffReports: (a: number, b: number, c: number, d: number, e: any) => [number, number, number];
    readonly gatediff_changed: (a: number) => number;
    readonly gatediff_flipCount: (a: number) => number;
    readonly gatediff_flips: (a: number, b: number, c: number) => [number, number, number];
    readonly gatediff_html: (a: number) => [number, number];
    readonly gatediff_json: (a: number) => [number, number];
    readonly gatediff_junit: (a: number) => [number, number];
    readonly gatediff_markdown: (a: number) => [number, number];
    readonly gatediff_onlyAfterCount: (a: number) => number;
    readonly gatediff_onlyBeforeCount: (a: number) => number;
    readonly gatediff_onlyIds: (a: number, b: number, c: number, d: number, e: number) => [number, number, number];
    readonly gatediff_restsOn: (a: number) => [number, number];
    readonly gatediff_reviewChanges: (a: number, b: number, c: number) => [number, number, number];
    readonly gatediff_setReviews: (a: number, b: number, c: number, d: number, e: number, f: number, g: number, h: number, i: number) => [number, number, number];
    readonly gatediff_summary: (a: number) => [number, number, number];
    readonly gatediff_templateCount: (a: number) => number;
    readonly gatediff_templates: (a: number, b: number, c: number) => [number, number, number];
    readonly gatediff_toObject: (a: number) => [number, number, number];
    readonly gatesession_addAuditFile: (a: number, b: number, c: number) => [number, number, number];
    readonly gatesession_addTrajectories: (a: number, b: number, c: number, d: number, e: number, f: number, g: number) => [number, number];
    readonly gatesession_addVerdicts: (a: number, b: number, c: number, d: number, e: number, f: number, g: number) => [number, number];
    readonly gatesession_beginAudit: (a: number, b: number, c: number) => void;
    readonly gatesession_beginSegmentedAudit: (a: number) => void;
    readonly gatesession_buildTestSet: (a: number, b: number, c: number) => [number, number, number];
    readonly gatesession_carriesOutputs: (a: number, b: number, c: number) => [number, number, number];
    readonly gatesession_caseCosts: (a: number, b: number, c: number) => [number, number, number];
    readonly gatesession_caseTrajectory: (a: number, b: number) => [number, number, number];
    readonly gatesession_endRange: (a: number, b: number) => [number, number];
    readonly gatesession_endStream: (a: number, b: number) => [number, number];
    readonly gatesession_evaluate: (a: number) => [number, number, number];
    readonly gatesession_evaluateJson: (a: number) => [number, number, number, number];
    readonly gatesession_feedRange: (a: number, b: number, c: number, d: number) => [number, number];
    readonly gatesession_feedStream: (a: number, b: number, c: number, d: number) => [number, number, number];
    readonly gatesession_feedVerdicts: (a: number, b: number, c: number) => [number, number, number];
    readonly gatesession_finishAudit: (a: number) => [number, number, number];
    readonly gatesession_finishSegmentedAudit: (a: number) => [number, number, number];
    readonly gatesession_finishTestSet: (a: number) => [number, number, number];
    readonly gatesession_finishVerdicts: (a: number) => [number, number, number];
    readonly gatesession_isReady: (a: number) => number;
    readonly gatesession_mergeSegment: (a: number, b: number, c: number) => [number, number];
    readonly gatesession_neededRanges: (a: number) => [number, number, number, number];
    readonly gatesession_new: (a: any) => [number, number, number];
    readonly gatesession_outputAt: (a: number, b: number, c: number, d: number) => [number, number, number];
    readonly gatesession_passVerdicts: (a: number) => [number, number];
    readonly gatesession_policy: (a: number) => [number, number, number];
    readonly gatesession_pushAudit: (a: number, b: number, c: number) => [number, number];
    readonly gatesession_removeInput: (a: number, b: number, c: number) => [number, number];
    readonly gatesession_setAuditDigest: (a: number, b: number, c: number, d: number) => [number, number];
    readonly gatesession_setAuditFileDigest: (a: number, b: number, c: number, d: number, e: number) => [number, number];
    readonly gatesession_setAuditSha256: (a: number, b: number, c: number, d: number) => [number, number];
    readonly gatesession_setHashing: (a: number, b: number) => void;
    readonly gatesession_setPolicy: (a: number, b: any) => [number, number, number, number];
    readonly gatesession_sniffRole: (a: number, b: number, c: number, d: number) => [number, number, number];
    readonly gatesession_startVerdicts: (a: number, b: number, c: number, d: number, e: number, f: number, g: number) => [number, number, number];
    readonly gatesession_testCases: (a: number) => [number, number, number];
    readonly gatesession_testSetJsonl: (a: number) => [number, number, number, number];
    readonly generateKeyPair: (a: number, b: number) => [number, number, number];
    readonly htmlAnswerCases: (a: number, b: number) => [number, number, number, number];
    readonly keyInfo: (a: number, b: number) => [number, number, number];
    readonly modelcheck_addFile: (a: number, b: number, c: number) => [number, number];
    readonly modelcheck_addFileDigests: (a: number, b: number, c: number, d: number, e: number, f: number, g: number, h: number) => [number, number];
    readonly modelcheck_bundleValid: (a: number) => number;
    readonly modelcheck_finish: (a: number) => [number, number, number];
    readonly modelcheck_finishFile: (a: number) => [number, number];
    readonly modelcheck_ignored: (a: number, b: number, c: number) => number;
    readonly modelcheck_new: (a: any, b: number, c: number, d: number) => [number, number, number];
    readonly modelcheck_result: (a: number) => [number, number, number];
    readonly modelcheck_shardSize: (a: number) => number;
    readonly modelcheck_update: (a: number, b: number, c: number) => [number, number];
    readonly modelfilehasher_finish: (a: number) => [number, number, number];
    readonly modelfilehasher_new: (a: number, b: number) => [number, number, number];
    readonly modelfilehasher_update: (a: number, b: number, c: number) => void;
    readonly openSignedDecision: (a: number, b: number, c: number, d: number, e: any) => [number, number, number];
    readonly readOutput: (a: number, b: number, c: any) => [number, number, number, number];
    readonly readReview: (a: number, b: number, c: number, d: number, e: number, f: number) => [number, number, number];
    readonly reportHtml: (a: number, b: number, c: number, d: number, e: any) => [number, number, number, number];
    readonly reportMarkdown: (a: number, b: number, c: number, d: number) => [number, number, number, number];
    readonly reviewFile: (a: number, b: number, c: any) => [number, number, number, number];
    readonly segmentscanner_finish: (a: number) => [number, number];
    readonly segmentscanner_new: (a: number, b: number, c: number, d: number) => number;
    readonly segmentscanner_push: (a: number, b: number, c: number) => void;
    readonly sha256stream_finish: (a: number) => [number, number];
    readonly sha256stream_new: () => number;
    readonly sha256stream_update: (a: number, b: number, c: number) => void;
    readonly sideBySide: (a: number, b: number, c: number, d: number, e: number, f: number) => [number, number, number];
    readonly signDecision: (a: number, b: number, c: number, d: number, e: number, f: number, g: number, h: number, i: number, j: number, k: number, l: number, m: number) => [number, number, number, number];
    readonly start: () => void;
    readonly trainerKeyInfo: (a: number, b: number) => [number, number, number];
    readonly verifyEnvelope: (a: number, b: number, c: number, d: number, e: any) => [number, number, number];
    readonly verifyModelSignature: (a: any, b: number, c: number, d: number, e: number) => [number, number, number];
    readonly __wbindgen_malloc: (a: number, b: number) => number;
    readonly __wbindgen_realloc: (a: number, b: number, c: number, d: number) => number;
    readonly __wbindgen_free: (a: number, b: number, c: number) => void;
    readonly __wbindgen_exn_store: (a: number) => void;
    readonly __externref_table_alloc: () => number;
    readonly __wbindgen_externrefs: WebAssembly.Table;
    readonly __externref_table_dealloc: (a: number) => void;
    readonly __externref_drop_slice: (a: number, b: number) => void;
    readonly __wbindgen_start: () => void;
}

export type SyncInitInput = BufferSource | WebAssembly.Module;

/**
 * Instantiates the given `module`, which can either be bytes or
 * a precompiled `WebAssembly.Module`.
 *
 * @param {{ module: SyncInitInput }} module - Passing `SyncInitInput` directly is deprecated.
 *
 * @returns {InitOutput}
 */
export function initSync(module: { module: SyncInitInput } | SyncInitInput): InitOutput;

/**
 * If `module_or_path` is {RequestInfo} or {URL}, makes a request and
 * for everything else, calls `WebAssembly.instantiate` directly.
 *
 * @param {{ module_or_path: InitInput | Promise<InitInput> }} module_or_path - Passing `InitInput` directly is deprecated.
 *
 * @returns {Promise<InitOutput>}
 */
export default function __wbg_init (module_or_path?: { module_or_path: InitInput | Promise<InitInput> } | InitInput | Promise<InitInput>): Promise<InitOutput>;
