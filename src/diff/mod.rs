//! What changed between two evaluations (`deploy-gate/diff/v1`): the decision, the policy, the
//! inputs, and case by case the verdicts that flipped, from two reports or signed decisions.
//!
//! Sans-IO and deterministic: [`read`] turns each side's bytes into an [`Evaluation`] (a signed
//! decision only once its signatures verify), [`diff`] compares two, and [`GateDiff::to_json`]
//! writes the document with the report's own JSON writer, so the same two inputs give the same
//! bytes in the CLI, the page and Python. The renderings (Markdown, HTML, JUnit) are in
//! [`crate::render::diff`].

mod document;
mod guardrails;
pub mod read;
#[cfg(test)]
mod tests;

pub use document::{
    CaseChanges, DecisionChange, EvidenceMissing, Flip, FlipCounts, GateDiff, InputChange, Model, ModelCounts,
    PolicyFieldChange, SideEvidence, SideSummary, StatsChange, TemplateChange,
};
pub use guardrails::{GuardrailChange, GuardrailChangeKind, GuardrailSide, GuardrailsChange, SideGuardrails};
pub use read::{read_document, read_report, read_signed, Problem, ReadError, Trust};

use crate::audit::PipelineId;
use crate::compat::round4;
use crate::policy::GatePolicy;
use serde::{Serialize, Serializer};
use std::collections::HashMap;

/// The diff's schema name.
pub const SCHEMA: &str = "deploy-gate/diff/v1";

/// Where a side came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Source {
    /// A report's JSON, as it is (nothing vouches for it).
    Report,
    /// A signed decision whose signatures verified against the trusted keys.
    Signed,
}

/// The tool that wrote a report (or this diff).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Tool {
    /// Its name.
    pub name: String,
    /// Its version.
    pub version: String,
}

impl Default for Tool {
    fn default() -> Self {
        let t = crate::report::Tool::default();
        Tool {
            name: t.name,
            version: t.version,
        }
    }
}

/// A side's decision as its report states it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct SideDecision {
    /// Deploy the new model.
    pub approved: bool,
    /// The reason, in the report's words.
    pub reason: String,
    /// `approved`, `blocked` or `inconclusive`, when the report names it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub outcome: Option<String>,
}

impl SideDecision {
    /// The outcome: the report's own, else `approved` or `blocked` from `approved` (what a report
    /// written before outcomes existed means).
    pub fn outcome(&self) -> &str {
        match &self.outcome {
            Some(o) => o,
            None if self.approved => "approved",
            None => "blocked",
        }
    }
}

/// An input file as a side's report lists it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct SideInput {
    /// Its role (`audit`, `old_verdicts`, …).
    pub role: String,
    /// Its name.
    pub name: String,
    /// Its sha256 (`null` when the report has none).
    pub sha256: Option<String>,
}

/// A template id as the report writes it: a string compared by its text, any other JSON value
/// by its text without insignificant white space.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct TemplateId {
    /// The id as compact JSON text (a string quoted and escaped as serde_json writes it).
    json: String,
}

impl TemplateId {
    /// From the raw JSON text of a report's `template_id`.
    pub fn from_raw(raw: &str) -> TemplateId {
        let json = match serde_json::from_str::<String>(raw) {
            Ok(s) => serde_json::to_string(&s).expect("a string serializes"),
            Err(_) => crate::json::layout::compact(raw),
        };
        TemplateId { json }
    }

    /// The id as compact JSON.
    pub fn json(&self) -> &str {
        &self.json
    }

    /// The id as text: a string's own text, `null` as `None`, anything else its JSON.
    pub fn text(&self) -> Option<String> {
        match serde_json::from_str::<String>(&self.json) {
            Ok(s) => Some(s),
            Err(_) if self.json == "null" => None,
            Err(_) => Some(self.json.clone()),
        }
    }
}

impl Serialize for TemplateId {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        serde_json::value::RawValue::from_string(self.json.clone())
            .map_err(serde::ser::Error::custom)?
            .serialize(s)
    }
}

/// A pipeline id as the renderings show it: an integer id's digits (all of them), a string id's
/// text, quoted as JSON when that text is an integer's, so that `5` and `"5"` stay two.
pub fn id_label(id: &PipelineId) -> std::borrow::Cow<'_, str> {
    if !id.numeric && crate::json::is_integer_id_text(&id.text) {
        std::borrow::Cow::Owned(id.to_json())
    } else {
        std::borrow::Cow::Borrowed(&id.text)
    }
}

/// One case of a side: what a diff compares.
#[derive(Debug, Clone, PartialEq)]
pub struct CaseRow {
    /// The pipeline, as the report writes it (`5` and `"5"` are two).
    pub id: PipelineId,
    /// Its template.
    pub template: TemplateId,
    /// The old model passed.
    pub old_pass: bool,
    /// The new model passed.
    pub new_pass: bool,
    /// The old model's verdict text (`None`: none).
    pub old_verdict: Option<String>,
    /// The new model's verdict text.
    pub new_verdict: Option<String>,
}

/// A template's row of a side.
#[derive(Debug, Clone, PartialEq)]
pub struct TemplateStat {
    /// The template.
    pub template: TemplateId,
    /// Its cases.
    pub n: u64,
    /// The report's `round(new − old, 4)` for it.
    pub delta: Option<f64>,
}

/// The task difference of a side with the interval that decided: the report's interval
/// clustered by template when it has one (the one the rules use), else its unclustered one.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Interval {
    /// The decision's `task_delta` (new − old pass rate, rounded to 4).
    pub task_delta: Option<f64>,
    /// The interval's lower bound (`null`: a report without statistics).
    pub low: Option<f64>,
    /// Its upper bound.
    pub high: Option<f64>,
    /// Its confidence level.
    pub confidence: Option<f64>,
    /// The report's name for how the interval was computed (`newcombe`, `paired_t`,
    /// `cluster_robust_t`; `null`: a report without statistics).
    pub method: Option<String>,
    /// The interval is the one clustered by template (`stats.task.clustered.delta`); false: the
    /// unclustered `stats.task.delta` (a report without clustering, or made before it existed).
    pub clustered: bool,
}

/// One side of a diff, read by [`read`].
#[derive(Debug, Clone, PartialEq)]
pub struct Evaluation {
    /// A report, or a verified signed decision.
    pub source: Source,
    /// The key ids whose signatures verified (empty for a report).
    pub signers: Vec<String>,
    /// The review a signed decision was signed with (`sign --review`).
    pub review: Option<crate::review::ReviewPin>,
    /// The tool that wrote the report.
    pub tool: Tool,
    /// Its decision.
    pub decision: SideDecision,
    /// The decision's `task_delta`.
    pub task_delta: Option<f64>,
    /// The policy it was made with, resolved (fields a report predates get their defaults).
    pub policy: GatePolicy,
    /// The sha256 of its policy a signature pins (a signed decision's own pin).
    pub policy_digest: String,
    /// Its test cases.
    pub num_cases: u64,
    /// Its input files.
    pub inputs: Vec<SideInput>,
    /// Its cases, in the report's order.
    pub cases: Vec<CaseRow>,
    /// Its per-template rows.
    pub templates: Vec<TemplateStat>,
    /// Its task difference and interval.
    pub interval: Interval,
    /// Its guardrails by name (`None`: the report has none).
    pub guardrails: Option<SideGuardrails>,
    /// Its `evidence`, when the report has one.
    pub evidence: Option<SideEvidence>,
    /// The cases its decision rests on: `evidence.rests_on`, or the cases both models answered.
    pub rests_on: u64,
}

fn summary(e: &Evaluation) -> SideSummary {
    SideSummary {
        source: e.source,
        signers: e.signers.clone(),
        review: e.review.clone(),
        tool: e.tool.clone(),
        decision: e.decision.clone(),
        policy_digest: e.policy_digest.clone(),
        num_cases: e.num_cases,
        inputs: e.inputs.clone(),
        evidence: e.evidence.clone(),
        rests_on: e.rests_on,
    }
}

/// The resolved policy fields whose values differ, in the report's field order.
fn policy_changes(before: &GatePolicy, after: &GatePolicy) -> Vec<PolicyFieldChange> {
    let (b, a) = (before.to_value(), after.to_value());
    let (Some(b), Some(a)) = (b.as_object(), a.as_object()) else {
        return Vec::new();
    };
    b.iter()
        .filter_map(|(field, bv)| {
            let av = a.get(field).cloned().unwrap_or(serde_json::Value::Null);
            (*bv != av).then(|| PolicyFieldChange {
                field: field.clone(),
                before: bv.clone(),
                after: av,
            })
        })
        .collect()
}

/// The inputs role by role: the n-th file of a role before against the n-th after, roles in
/// the order they first appear (before's, then after's).
fn input_changes(before: &[SideInput], after: &[SideInput]) -> Vec<InputChange> {
    let mut roles: Vec<&str> = Vec::new();
    for f in before.iter().chain(after) {
        if !roles.contains(&f.role.as_str()) {
            roles.push(&f.role);
        }
    }
    let mut out = Vec::new();
    for role in roles {
        let of = |side: &[SideInput]| -> Vec<Option<String>> {
            side.iter()
                .filter(|f| f.role == role)
                .map(|f| f.sha256.clone().filter(|s| !s.is_empty()))
                .collect()
        };
        let (b, a) = (of(before), of(after));
        for i in 0..b.len().max(a.len()) {
            let (bs, as_) = (b.get(i).cloned().flatten(), a.get(i).cloned().flatten());
            out.push(InputChange {
                role: role.to_owned(),
                same: bs.is_some() && bs == as_,
                before_sha256: bs,
                after_sha256: as_,
            });
        }
    }
    out
}

/// A side's cases by pipeline id; a report with an id twice cannot be matched case by case.
fn index(side: &Evaluation) -> Result<HashMap<&PipelineId, usize>, DiffError> {
    let mut map = HashMap::with_capacity(side.cases.len());
    for (i, c) in side.cases.iter().enumerate() {
        if let Some(first) = map.insert(&c.id, i) {
            return Err(DiffError::DuplicateCase {
                id: c.id.to_json(),
                first,
                again: i,
            });
        }
    }
    Ok(map)
}

/// Two evaluations that cannot be compared case by case.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DiffError {
    /// A report lists a pipeline twice.
    #[error("the pipeline {id} is listed twice (cases[{first}] and cases[{again}])")]
    DuplicateCase {
        /// The id as JSON.
        id: String,
        /// Its first case.
        first: usize,
        /// The repeat.
        again: usize,
    },
}

/// Which side a [`DiffError`] is about, with the error.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{side}: {error}")]
pub struct SideError {
    /// `before` or `after` (or the file's name, when the caller gives it).
    pub side: String,
    /// What is wrong.
    pub error: DiffError,
}

/// Compares two evaluations: `before` the earlier, `after` the later.
pub fn diff(before: &Evaluation, after: &Evaluation) -> Result<GateDiff, SideError> {
    let side_err = |side: &'static str| {
        move |error| SideError {
            side: side.to_owned(),
            error,
        }
    };
    let before_ix = index(before).map_err(side_err("before"))?;
    let after_ix = index(after).map_err(side_err("after"))?;

    let mut counts = ModelCounts::default();
    let mut flips: Vec<Flip> = Vec::new();
    let mut common = 0u64;
    for a in &after.cases {
        let Some(&bi) = before_ix.get(&a.id) else {
            continue;
        };
        let b = &before.cases[bi];
        common += 1;
        for (model, count, bp, ap, bv, av) in [
            (
                Model::Old,
                &mut counts.old,
                b.old_pass,
                a.old_pass,
                &b.old_verdict,
                &a.old_verdict,
            ),
            (
                Model::New,
                &mut counts.new,
                b.new_pass,
                a.new_pass,
                &b.new_verdict,
                &a.new_verdict,
            ),
        ] {
            if bv != av {
                count.verdict_changed += 1;
            }
            if bp == ap {
                continue;
            }
            if bp {
                count.pass_to_fail += 1;
            } else {
                count.fail_to_pass += 1;
            }
            flips.push(Flip {
                pipeline_id: a.id.clone(),
                template_id: a.template.clone(),
                model,
                before_pass: bp,
                after_pass: ap,
                before_verdict: bv.clone(),
                after_verdict: av.clone(),
            });
        }
    }
    flips.sort_by(|x, y| {
        (!x.is_pass_to_fail(), &x.pipeline_id, x.model).cmp(&(!y.is_pass_to_fail(), &y.pipeline_id, y.model))
    });
    let only_before: Vec<PipelineId> = before
        .cases
        .iter()
        .filter(|c| !after_ix.contains_key(&c.id))
        .map(|c| c.id.clone())
        .collect();
    let only_after: Vec<PipelineId> = after
        .cases
        .iter()
        .filter(|c| !before_ix.contains_key(&c.id))
        .map(|c| c.id.clone())
        .collect();

    let outcome = (
        before.decision.outcome().to_owned(),
        after.decision.outcome().to_owned(),
    );
    let (bi, ai) = (before.interval.clone(), after.interval.clone());
    let overlap = match (bi.low, bi.high, ai.low, ai.high) {
        (Some(bl), Some(bh), Some(al), Some(ah)) => Some(bl <= ah && al <= bh),
        _ => None,
    };
    let warnings = warnings(before, after, common, only_before.len(), only_after.len());
    Ok(GateDiff {
        schema: SCHEMA.into(),
        tool: Tool::default(),
        before: summary(before),
        after: summary(after),
        decision: DecisionChange {
            changed: outcome.0 != outcome.1,
            before: outcome.0,
            after: outcome.1,
        },
        policy: policy_changes(&before.policy, &after.policy),
        inputs: input_changes(&before.inputs, &after.inputs),
        cases: CaseChanges {
            common,
            only_before,
            only_after,
            counts,
            flips,
        },
        templates: template_changes(&before.templates, &after.templates),
        stats: StatsChange {
            before: bi,
            after: ai,
            overlap,
        },
        warnings,
        guardrails: guardrails::changes(before.guardrails.as_ref(), after.guardrails.as_ref()),
        review_changes: None,
    })
}

/// Every template of either side, by the change in its delta (most negative first); templates
/// on one side only come last; ties by id.
fn template_changes(before: &[TemplateStat], after: &[TemplateStat]) -> Vec<TemplateChange> {
    let mut rows: Vec<TemplateChange> = Vec::new();
    let mut at: HashMap<&TemplateId, usize> = HashMap::new();
    for (t, is_before) in before.iter().map(|t| (t, true)).chain(after.iter().map(|t| (t, false))) {
        let i = *at.entry(&t.template).or_insert_with(|| {
            rows.push(TemplateChange {
                template_id: t.template.clone(),
                n_before: 0,
                n_after: 0,
                delta_before: None,
                delta_after: None,
                delta_change: None,
            });
            rows.len() - 1
        });
        let row = &mut rows[i];
        if is_before {
            row.n_before += t.n;
            row.delta_before = t.delta;
        } else {
            row.n_after += t.n;
            row.delta_after = t.delta;
        }
    }
    for row in &mut rows {
        row.delta_change = match (row.delta_before, row.delta_after) {
            (Some(b), Some(a)) => Some(round4(a - b)),
            _ => None,
        };
    }
    rows.sort_by(|x, y| match (x.delta_change, y.delta_change) {
        (Some(a), Some(b)) => a.total_cmp(&b).then_with(|| x.template_id.cmp(&y.template_id)),
        (Some(_), None) => std::cmp::Ordering::Less,
        (None, Some(_)) => std::cmp::Ordering::Greater,
        (None, None) => x.template_id.cmp(&y.template_id),
    });
    rows
}

fn warnings(
    before: &Evaluation,
    after: &Evaluation,
    common: u64,
    only_before: usize,
    only_after: usize,
) -> Vec<String> {
    let mut w = Vec::new();
    if common == 0 && (!before.cases.is_empty() || !after.cases.is_empty()) {
        w.push("no case in common: the two evaluations share no pipeline id, so no verdict is compared".to_owned());
    } else if only_before > 0 || only_after > 0 {
        w.push(format!(
            "different test sets: {only_before} case(s) only before, {only_after} only after; the flips are over the {common} common case(s)"
        ));
    }
    if before.tool.version != after.tool.version || before.tool.name != after.tool.name {
        w.push(format!(
            "made by different builds: {} {} before, {} {} after",
            before.tool.name, before.tool.version, after.tool.name, after.tool.version
        ));
    }
    for (side, e) in [("before", before), ("after", after)] {
        if e.interval.low.is_none() || e.interval.high.is_none() {
            w.push(format!(
                "{side}: the report has no interval for the task difference (written before deploy-gate reported statistics)"
            ));
        }
    }
    w
}

/// The cases whose review mark or note changed between the two sides' review files (`before`
/// and `after`: each file's name and bytes), for [`GateDiff::review_changes`]. A side signed
/// with a review must be given the file its statement pins; a file that is not a review file is
/// an error naming its line.
pub fn review_changes(
    d: &GateDiff,
    before: (&str, &[u8]),
    after: (&str, &[u8]),
) -> Result<Vec<crate::review::MarkChange>, String> {
    let read = |(name, bytes): (&str, &[u8]), side: &SideSummary, which: &str| {
        if let Some(pin) = &side.review {
            if !pin.pins(bytes) {
                return Err(format!(
                    "{name}: not the review file the {which} decision was signed with (it pins sha256:{}, {} bytes)",
                    pin.sha256, pin.bytes
                ));
            }
        }
        crate::review::Review::parse(name, bytes).map_err(|e| e.to_string())
    };
    let b = read(before, &d.before, "earlier")?;
    let a = read(after, &d.after, "later")?;
    Ok(crate::review::mark_changes(&b, &a))
}
