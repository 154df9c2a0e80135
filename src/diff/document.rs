//! The diff document (`deploy-gate/diff/v1`): its types, serialised in the order of their fields
//! (the order of `docs/diff.md`).

use super::{Interval, SideDecision, SideInput, Source, TemplateId, Tool};
use crate::audit::PipelineId;
use serde::Serialize;

/// A side as the diff describes it.
#[derive(Debug, Clone, Serialize)]
pub struct SideSummary {
    /// `report` or `signed`.
    pub source: Source,
    /// The key ids that signed it (empty for a report).
    pub signers: Vec<String>,
    /// The review it was signed with (`sign --review`): absent for a report and for a decision
    /// signed without one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub review: Option<crate::review::ReviewPin>,
    /// The tool that wrote its report.
    pub tool: Tool,
    /// Its decision.
    pub decision: SideDecision,
    /// The sha256 of its policy (RFC 8785), as a signature pins it.
    pub policy_digest: String,
    /// Its test cases.
    pub num_cases: u64,
    /// Its input files.
    pub inputs: Vec<SideInput>,
    /// What its decision rests on, when its report says (`evidence`; absent in a report whose
    /// cases every model answered, or made before it existed).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub evidence: Option<SideEvidence>,
    /// The cases its decision rests on: `evidence.rests_on`, or the cases both models answered.
    #[serde(skip)]
    pub rests_on: u64,
}

/// A side's `evidence`, as a diff compares it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct SideEvidence {
    /// Cases in the test set.
    pub test_cases: u64,
    /// Cases the decision rests on.
    pub rests_on: u64,
    /// Cases lacking each model's verdict.
    pub missing: EvidenceMissing,
    /// Cases neither model answered (a sequential report only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub not_run: Option<u64>,
    /// `used` (the figures are over the cases the sequential rule used) or `test_set`.
    pub over: String,
}

/// Cases lacking each model's verdict.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct EvidenceMissing {
    /// The old model's.
    pub old: u64,
    /// The new model's.
    pub new: u64,
}

/// The decision before and after.
#[derive(Debug, Clone, Serialize)]
pub struct DecisionChange {
    /// The outcomes differ.
    pub changed: bool,
    /// The outcome before (`approved`, `blocked`, `inconclusive`).
    pub before: String,
    /// The outcome after.
    pub after: String,
}

/// A resolved policy field whose value differs.
#[derive(Debug, Clone, Serialize)]
pub struct PolicyFieldChange {
    /// The field, as the report's `policy` names it.
    pub field: String,
    /// Its value before.
    pub before: serde_json::Value,
    /// Its value after.
    pub after: serde_json::Value,
}

/// An input role's file before and after.
#[derive(Debug, Clone, Serialize)]
pub struct InputChange {
    /// The role (`audit` once per audit file, in order).
    pub role: String,
    /// Both sides have the file, with the same sha256.
    pub same: bool,
    /// The sha256 before (`null`: no such file, or no digest).
    pub before_sha256: Option<String>,
    /// The sha256 after.
    pub after_sha256: Option<String>,
}

/// Which model a flip is about.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Model {
    /// The deployed model.
    Old,
    /// The retrained model.
    New,
}

/// A common case whose pass/fail for one model differs between the two evaluations.
#[derive(Debug, Clone, Serialize)]
pub struct Flip {
    /// The pipeline (an integer id keeps every digit).
    pub pipeline_id: PipelineId,
    /// Its template (the after side's).
    pub template_id: TemplateId,
    /// The model whose pass/fail changed.
    pub model: Model,
    /// It passed before.
    pub before_pass: bool,
    /// It passes after.
    pub after_pass: bool,
    /// The verdict before (`null`: none).
    pub before_verdict: Option<String>,
    /// The verdict after.
    pub after_verdict: Option<String>,
}

impl Flip {
    /// Passed before, fails after.
    pub fn is_pass_to_fail(&self) -> bool {
        self.before_pass && !self.after_pass
    }
}

/// One model's changes over the common cases.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct FlipCounts {
    /// Failed before, passes after.
    pub fail_to_pass: u64,
    /// Passed before, fails after.
    pub pass_to_fail: u64,
    /// The verdict's text differs (whether or not pass/fail changed).
    pub verdict_changed: u64,
}

/// Counts per model.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct ModelCounts {
    /// The deployed model.
    pub old: FlipCounts,
    /// The retrained model.
    pub new: FlipCounts,
}

/// The cases of both sides, matched by pipeline id.
#[derive(Debug, Clone, Serialize)]
pub struct CaseChanges {
    /// Cases on both sides.
    pub common: u64,
    /// Pipelines only before, in its report's order.
    pub only_before: Vec<PipelineId>,
    /// Pipelines only after, in its report's order.
    pub only_after: Vec<PipelineId>,
    /// Per model: flips each way and verdict changes.
    pub counts: ModelCounts,
    /// Every flip: pass→fail first, then fail→pass; each by pipeline id, then model.
    pub flips: Vec<Flip>,
}

/// A template on either side.
#[derive(Debug, Clone, Serialize)]
pub struct TemplateChange {
    /// The template.
    pub template_id: TemplateId,
    /// Its cases before (0: not there).
    pub n_before: u64,
    /// Its cases after.
    pub n_after: u64,
    /// Its new − old before (`null`: not there).
    pub delta_before: Option<f64>,
    /// Its new − old after.
    pub delta_after: Option<f64>,
    /// `round(delta_after − delta_before, 4)` (`null` unless both are there).
    pub delta_change: Option<f64>,
}

/// The task difference on each side with its interval.
#[derive(Debug, Clone, Serialize)]
pub struct StatsChange {
    /// Before.
    pub before: Interval,
    /// After.
    pub after: Interval,
    /// The two intervals overlap (`null` when either is unknown).
    pub overlap: Option<bool>,
}

/// The diff of two evaluations (`deploy-gate/diff/v1`).
#[derive(Debug, Clone, Serialize)]
pub struct GateDiff {
    /// [`SCHEMA`].
    pub schema: String,
    /// The tool that wrote the diff.
    pub tool: Tool,
    /// The earlier evaluation.
    pub before: SideSummary,
    /// The later one.
    pub after: SideSummary,
    /// The decision's change.
    pub decision: DecisionChange,
    /// The resolved policy fields that differ.
    pub policy: Vec<PolicyFieldChange>,
    /// The input files, role by role.
    pub inputs: Vec<InputChange>,
    /// The cases.
    pub cases: CaseChanges,
    /// The templates, by the change in their delta, worst first.
    pub templates: Vec<TemplateChange>,
    /// The task difference with its interval on each side.
    pub stats: StatsChange,
    /// Things a reader should know (no common case, different test sets, …).
    pub warnings: Vec<String>,
    /// The guardrails added, removed or whose outcome changed; absent when neither side has
    /// guardrails.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub guardrails: Option<super::GuardrailsChange>,
    /// The cases whose review mark or note differs between the two sides' review files
    /// (`diff --review-before FILE --review-after FILE`); absent without them.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub review_changes: Option<Vec<crate::review::MarkChange>>,
}

impl GateDiff {
    /// The diff as JSON text, written as the report is ([`crate::report::to_json_text`]).
    pub fn to_json(&self) -> String {
        crate::report::to_json_text(self)
    }

    /// The decision changed (the CLI exits 5).
    pub fn changed(&self) -> bool {
        self.decision.changed
    }
}
