//! The GateReport: the decision and all the evidence behind it, as one JSON document.
//!
//! The same inputs and policy give the same bytes: nothing here reads a clock, and every list
//! has a defined order.

use crate::audit::{AuditIndex, AuditSummary};
use crate::cost::CostSummary;
use crate::decision::{compare, decide, ABComparison, Evidence, GateDecision, Outcome, Rules, SequentialTask};
use crate::guardrail::GuardrailsReport;
use crate::input::{InputFile, Side};
use crate::policy::{Cluster, GatePolicy, OnInsufficient, Repeats};
use crate::scoring::{score_with, template_index, CaseOutcome, CaseStatus, ModelCounts, TemplateRow};
use crate::sequential::SequentialReport;
use crate::stats::{gate_stats, paired_delta, Clusters, GateStats, Paired, TaskInput};
use crate::testset::TestSet;
use crate::trajectory::Trajectories;
use crate::verdicts::Verdicts;
use serde::Serialize;

/// The report's schema name (it begins with [`crate::policy::REPORT_SCHEMA_PREFIX`], by which a
/// report given as a policy file is told from one).
pub const SCHEMA: &str = "deploy-gate/report/v1";

/// The tool that wrote a report.
#[derive(Debug, Clone, Serialize)]
pub struct Tool {
    /// `deploy-gate`.
    pub name: String,
    /// The crate version.
    pub version: String,
}

impl Default for Tool {
    fn default() -> Self {
        Tool {
            name: env!("CARGO_PKG_NAME").into(),
            version: env!("CARGO_PKG_VERSION").into(),
        }
    }
}

/// How the test set was made.
#[derive(Debug, Clone, Serialize)]
pub struct TestSetInfo {
    /// Cases in the test set.
    pub num_cases: usize,
    /// Candidates (successful pipelines with stages and an input) before sizing.
    pub candidates: usize,
    /// True when sampled down to `max_samples`.
    pub sampled: bool,
    /// True when there were fewer candidates than `min_samples`.
    pub insufficient: bool,
}

/// A pair of values, one per model.
#[derive(Debug, Clone, Serialize)]
pub struct PerModel<T> {
    /// The old (deployed) model.
    pub old: T,
    /// The new (retrained) model.
    pub new: T,
}

/// What a trajectory file contributed.
#[derive(Debug, Clone, Serialize)]
pub struct TrajectoryInfo {
    /// Results scored.
    pub results: usize,
    /// Objects without `overall_judge_score`, skipped.
    pub skipped_without_judge: usize,
    /// Mean composite, rounded to 4.
    pub mean: Option<f64>,
    /// Every result's composite, in file order (for distributions).
    pub composites: Vec<f64>,
}

impl From<&Trajectories> for TrajectoryInfo {
    fn from(t: &Trajectories) -> Self {
        TrajectoryInfo {
            results: t.results.len(),
            skipped_without_judge: t.skipped_without_judge,
            mean: t.mean(),
            composites: t.results.iter().map(|r| r.composite).collect(),
        }
    }
}

/// The whole report.
#[derive(Debug, Clone, Serialize)]
pub struct GateReport {
    /// [`SCHEMA`].
    pub schema: String,
    /// Name and version of the tool.
    pub tool: Tool,
    /// The policy evaluated.
    pub policy: GatePolicy,
    /// Every input file: role, name, bytes, sha256.
    pub inputs: Vec<InputFile>,
    /// What the audit log held.
    pub audit: AuditSummary,
    /// How the test set was made.
    pub test_set: TestSetInfo,
    /// Each model's verdict counts.
    pub verdicts: PerModel<ModelCounts>,
    /// What each model's calls cost (latency, tokens, attempts, targets), present only when a
    /// record of either verdict file carries such a field; a model whose file carries none is
    /// `null` (see [`crate::cost`]).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cost: Option<PerModel<Option<CostSummary>>>,
    /// Each model's trajectory results, when given.
    pub trajectories: PerModel<Option<TrajectoryInfo>>,
    /// The gate decision (the reference's `GateDecision`).
    pub decision: GateDecision,
    /// What the decision rests on: the cases answered, missing and (sequential) not run,
    /// present when a case lacks a verdict on some side or the decision is sequential (under
    /// [`Rules::Current`]; see [`EvidenceSummary`]).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub evidence: Option<EvidenceSummary>,
    /// The sequential rule's decision of the task criterion, present only under `sequential:
    /// true` (see [`crate::sequential`]).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sequential: Option<SequentialReport>,
    /// The guardrails as judged, present only when the policy has some (see
    /// [`crate::guardrail`]); the decision is taken over them and the task rule.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub guardrails: Option<GuardrailsReport>,
    /// The A/B comparison (the reference's `ABComparison`).
    pub comparison: ABComparison,
    /// Intervals, tests and sample-size guidance (unrounded).
    pub stats: GateStats,
    /// Per-case outcomes, in test-set order.
    pub cases: Vec<CaseOutcome>,
    /// Per-template pass rates.
    pub templates: Vec<TemplateRow>,
    /// Things a reviewer should know (skipped lines, missing verdicts, …).
    pub warnings: Vec<String>,
}

/// The report's `evidence` object: what the decision rests on.
#[derive(Debug, Clone, Serialize)]
pub struct EvidenceSummary {
    /// Cases in the test set.
    pub test_cases: usize,
    /// Cases answered by both models (a verdict or an error on each side).
    pub answered: usize,
    /// Each model's missing cases: the other model answered them, this one did not (in a fixed
    /// report, every case without this model's verdict).
    pub missing: PerModel<usize>,
    /// A sequential report's cases neither model answered (the rule stopped first); they count
    /// for neither model. Absent in a fixed report.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub not_run: Option<usize>,
    /// The cases the decision rests on: answered by both (fixed), or the cases of the units the
    /// sequential rule used.
    pub rests_on: usize,
    /// What the report's figures are over: `used` (a sequential report: the used units' cases)
    /// or `test_set` (a fixed one: every test case, a missing verdict a failure).
    pub over: &'static str,
    /// The policy's `max_missing` (its default when it gives none).
    pub max_missing: f64,
}

impl GateReport {
    /// The cases the decision rests on: the `evidence` object's `rests_on`, or, without one,
    /// the cases answered by both models (every case when every case is answered).
    pub fn rests_on(&self) -> usize {
        match &self.evidence {
            Some(e) => e.rests_on,
            None => self.cases.iter().filter(|c| !c.old_missing && !c.new_missing).count(),
        }
    }

    /// The report as pretty JSON with a final newline (the CLI's output, byte for byte).
    pub fn to_json(&self) -> String {
        to_json_text(self)
    }
}

/// The one JSON writer of deploy-gate's documents (the report, the diff): pretty, two-space
/// indents, numbers as serde_json writes them (the shortest text that reads back as the same
/// double), a final newline. The same value gives the same bytes on every platform.
pub fn to_json_text<T: Serialize + ?Sized>(value: &T) -> String {
    let mut s = serde_json::to_string_pretty(value).expect("deploy-gate's documents serialize");
    s.push('\n');
    s
}

/// Everything the gate reads, already parsed.
pub struct GateInputs<'a> {
    /// Pass 1 over the audit log.
    pub audit: &'a AuditIndex,
    /// The test set built from it.
    pub test_set: &'a TestSet,
    /// The old model's verdicts.
    pub old_verdicts: &'a Verdicts,
    /// The new model's verdicts.
    pub new_verdicts: &'a Verdicts,
    /// The old model's trajectory results.
    pub old_trajectories: Option<&'a Trajectories>,
    /// The new model's trajectory results.
    pub new_trajectories: Option<&'a Trajectories>,
}

/// Scores both models, decides, and assembles the report, under the current rules.
pub fn evaluate(inputs: &GateInputs<'_>, policy: &GatePolicy) -> GateReport {
    evaluate_under(inputs, policy, Rules::Current)
}

/// Counts of the cases by what was answered, over the whole test set.
struct Answered {
    /// Answered by both models.
    both: usize,
    /// Not answered by the old model (answered by the new one, in a sequential report).
    old_missing: usize,
    /// Not answered by the new model (answered by the old one, in a sequential report).
    new_missing: usize,
    /// Lacking a verdict on at least one side (not counting the not run).
    lacking: usize,
    /// Answered by neither (a sequential report; `None` in a fixed one).
    not_run: Option<usize>,
}

fn answered(cases: &[CaseOutcome], sequential: bool) -> Answered {
    let neither = cases.iter().filter(|c| c.old_missing && c.new_missing).count();
    let not_run = sequential.then_some(neither);
    let skip = |c: &&CaseOutcome| !(sequential && c.old_missing && c.new_missing);
    Answered {
        both: cases.iter().filter(|c| !c.old_missing && !c.new_missing).count(),
        old_missing: cases.iter().filter(skip).filter(|c| c.old_missing).count(),
        new_missing: cases.iter().filter(skip).filter(|c| c.new_missing).count(),
        lacking: cases
            .iter()
            .filter(skip)
            .filter(|c| c.old_missing || c.new_missing)
            .count(),
        not_run,
    }
}

/// [`evaluate`] under `rules`: [`Rules::Before`] gives exactly the previous build's report.
pub fn evaluate_under(inputs: &GateInputs<'_>, policy: &GatePolicy, rules: Rules) -> GateReport {
    let ts = inputs.test_set;
    let mut scoring = score_with(ts, inputs.old_verdicts, inputs.new_verdicts, policy.repeats());
    let current = rules == Rules::Current;
    let sequential = (!ts.cases.is_empty() && policy.mode == crate::policy::Mode::NonInferiority)
        .then(|| crate::sequential::decide_under(&scoring.cases, policy, rules))
        .flatten();
    let used = sequential
        .as_ref()
        .map(|q| crate::sequential::used_cases(&scoring.cases, policy, q.used));
    let counts = answered(&scoring.cases, sequential.is_some());
    // Under the current rules a sequential report's figures are the used units' cases'.
    let used_set = match (&used, current) {
        (Some(used), true) => Some(ts.subset(used)),
        _ => None,
    };
    let all_cases = match &used_set {
        Some(subset) => {
            let mut over_used = score_with(subset, inputs.old_verdicts, inputs.new_verdicts, policy.repeats());
            for (whole, part) in [
                (&mut scoring.old, &mut over_used.old),
                (&mut scoring.new, &mut over_used.new),
            ] {
                // The verdict file's own figures stay the whole file's.
                part.records = whole.records;
                part.extra = whole.extra;
                part.duplicates = whole.duplicates;
                part.conflicting = whole.conflicting;
                part.conflicting_ids = std::mem::take(&mut whole.conflicting_ids);
                part.ignored_stage_entries = whole.ignored_stage_entries;
            }
            Some(std::mem::replace(&mut scoring, over_used).cases)
        }
        None => None,
    };
    let figures_set = used_set.as_ref().unwrap_or(ts);
    let traj_old = inputs.old_trajectories.and_then(Trajectories::mean);
    let traj_new = inputs.new_trajectories.and_then(Trajectories::mean);
    let stats = evidence_stats(inputs, &scoring.cases, policy);
    if policy.case_model.is_some() {
        template_intervals(&mut scoring.templates, &scoring.cases, policy);
    }
    let rule_delta = stats.task.rule_delta();
    let evidence = Evidence {
        task_old: scoring.old.pass_rate,
        task_new: scoring.new.pass_rate,
        trajectory_old: traj_old,
        trajectory_new: traj_new,
        num_cases: ts.cases.len(),
        candidates: ts.candidates,
        task_delta_low: Some(rule_delta.low),
        trajectory_delta_low: stats.trajectory.as_ref().map(|t| t.delta.low),
        task_delta_high: Some(rule_delta.high),
        trajectory_delta_high: stats.trajectory.as_ref().map(|t| t.delta.high),
        cases_needed: stats.task.sample_size.cases_needed,
        sequential: sequential.as_ref().map(|q| SequentialTask {
            outcome: q.outcome(),
            used: q.used,
            budget: q.budget,
            bounds: q.lower.zip(q.upper),
            unit: q.unit,
        }),
    };
    let mut decision = decide(&evidence, policy);
    // The evidence rules apply to a policy with outcomes (one written before them decides as it
    // did then).
    if current && policy.case_model.is_some() {
        fail_closed(&mut decision, &counts, ts, policy);
    }
    let guardrails = crate::guardrail::evaluate(
        policy,
        ts,
        inputs.old_verdicts,
        inputs.new_verdicts,
        all_cases.as_deref().unwrap_or(&scoring.cases),
        used.as_deref(),
    );
    if let Some(g) = &guardrails {
        let (outcome, reason) = crate::guardrail::combine(decision.outcome(), &decision.reason, g);
        decision.outcome = Some(outcome);
        decision.approved = outcome == crate::decision::Outcome::Approved;
        decision.reason = reason;
    }
    let comparison = compare(scoring.old.pass_rate, scoring.new.pass_rate, figures_set.cases.len());
    let evidence_summary = (current
        && (sequential.is_some() || counts.lacking > 0 || counts.old_missing + counts.new_missing > 0))
        .then(|| EvidenceSummary {
            test_cases: ts.cases.len(),
            answered: counts.both,
            missing: PerModel {
                old: counts.old_missing,
                new: counts.new_missing,
            },
            not_run: counts.not_run,
            rests_on: match &used {
                Some(used) => used.len(),
                None => counts.both,
            },
            over: if sequential.is_some() { "used" } else { "test_set" },
            max_missing: policy.max_missing(),
        });

    let mut inputs_list: Vec<InputFile> = inputs.audit.files().to_vec();
    inputs_list.push(inputs.old_verdicts.file.clone());
    inputs_list.push(inputs.new_verdicts.file.clone());
    inputs_list.extend(inputs.old_trajectories.map(|t| t.file.clone()));
    inputs_list.extend(inputs.new_trajectories.map(|t| t.file.clone()));

    let mut warnings = warnings(
        inputs,
        policy,
        &scoring.old,
        &scoring.new,
        &stats,
        current.then_some(&counts),
    );
    if let (true, Some(q)) = (current, &sequential) {
        warnings.extend(crate::sequential::min_units_warning(q, policy));
    }
    GateReport {
        schema: SCHEMA.into(),
        tool: Tool::default(),
        policy: policy.clone(),
        inputs: inputs_list,
        audit: inputs.audit.summary().clone(),
        test_set: TestSetInfo {
            num_cases: ts.cases.len(),
            candidates: ts.candidates,
            sampled: ts.sampled,
            insufficient: ts.insufficient,
        },
        verdicts: PerModel {
            old: scoring.old,
            new: scoring.new,
        },
        cost: cost_of(inputs, figures_set, policy),
        trajectories: PerModel {
            old: inputs.old_trajectories.map(TrajectoryInfo::from),
            new: inputs.new_trajectories.map(TrajectoryInfo::from),
        },
        decision,
        evidence: evidence_summary,
        sequential,
        guardrails,
        comparison,
        stats,
        cases: scoring.cases,
        templates: scoring.templates,
        warnings,
    }
}

/// Each model's cost summary, when either verdict file carries cost fields: over the records
/// the scoring counts (every run under `repeats: mean`, else each case's last record).
fn cost_of(inputs: &GateInputs<'_>, test_set: &TestSet, policy: &GatePolicy) -> Option<PerModel<Option<CostSummary>>> {
    let (old, new) = (inputs.old_verdicts, inputs.new_verdicts);
    if !old.carries_cost() && !new.carries_cost() {
        return None;
    }
    let all_runs = policy.repeats() == Repeats::Mean;
    let side = |v: &Verdicts| v.carries_cost().then(|| v.cost_summary(test_set, all_runs));
    Some(PerModel {
        old: side(old),
        new: side(new),
    })
}

/// Each case's cluster: its template, told apart by its JSON text as in the log; a case without
/// one (`null`) is a cluster of its own.
fn clusters_of(cases: &[CaseOutcome]) -> Clusters {
    Clusters::by_key(cases.iter().map(|c| {
        let text = c.template_id.get();
        (text != "null").then_some(text)
    }))
}

/// Each template row's unclustered interval of `new − old`.
fn template_intervals(rows: &mut [TemplateRow], cases: &[CaseOutcome], policy: &GatePolicy) {
    let mut scores: Vec<(Vec<f64>, Vec<f64>)> = vec![(Vec::new(), Vec::new()); rows.len()];
    for (c, row) in cases.iter().zip(template_index(cases)) {
        scores[row].0.push(c.score(Side::Old));
        scores[row].1.push(c.score(Side::New));
    }
    for (row, (old, new)) in rows.iter_mut().zip(scores) {
        row.interval = Some(paired_delta(&old, &new, policy.repeats(), policy.confidence));
    }
}

fn evidence_stats(inputs: &GateInputs<'_>, cases: &[CaseOutcome], policy: &GatePolicy) -> GateStats {
    let mut table = Paired {
        both_pass: 0,
        old_only: 0,
        new_only: 0,
        both_fail: 0,
    };
    for c in cases {
        match c.status {
            CaseStatus::BothPass => table.both_pass += 1,
            CaseStatus::Regressed => table.old_only += 1,
            CaseStatus::Improved => table.new_only += 1,
            CaseStatus::BothFail => table.both_fail += 1,
        }
    }
    let composites = |t: &Trajectories| t.results.iter().map(|r| r.composite).collect::<Vec<f64>>();
    let traj = inputs
        .old_trajectories
        .zip(inputs.new_trajectories)
        .map(|(o, n)| (composites(o), composites(n)));
    let traj_refs = traj.as_ref().map(|(o, n)| (o.as_slice(), n.as_slice()));
    let old: Vec<f64> = cases.iter().map(|c| c.score(Side::Old)).collect();
    let new: Vec<f64> = cases.iter().map(|c| c.score(Side::New)).collect();
    let clusters = clusters_of(cases);
    let task = TaskInput {
        table,
        old: &old,
        new: &new,
        clusters: &clusters,
    };
    gate_stats(
        &task,
        traj_refs,
        policy.task_regression_tol,
        policy.confidence,
        policy.test_set.seed,
        policy.case_model,
    )
}

/// The evidence rules of [`Rules::Current`]: too few cases answered by both blocks under
/// `on_insufficient: block`; else more cases lacking a verdict than `max_missing` allows is
/// inconclusive.
fn fail_closed(decision: &mut GateDecision, counts: &Answered, ts: &TestSet, policy: &GatePolicy) {
    if ts.cases.is_empty() || ts.insufficient {
        return;
    }
    let set = |decision: &mut GateDecision, outcome: Outcome, reason: String| {
        decision.outcome = Some(outcome);
        decision.approved = outcome == Outcome::Approved;
        decision.reason = reason;
    };
    if counts.both < policy.test_set.min_samples {
        if policy.on_insufficient == OnInsufficient::Block {
            let reason = crate::decision::insufficient_evidence_reason(
                counts.both,
                ts.cases.len(),
                policy.test_set.min_samples,
                (counts.old_missing, counts.new_missing),
                counts.not_run,
            );
            set(decision, Outcome::Blocked, reason);
        }
        return;
    }
    let run = ts.cases.len() - counts.not_run.unwrap_or(0);
    if counts.lacking as f64 > policy.max_missing() * run as f64 {
        let reason = crate::decision::missing_reason(
            (counts.old_missing, counts.new_missing),
            run,
            counts.lacking,
            policy.max_missing(),
            counts.not_run,
        );
        set(decision, Outcome::Inconclusive, reason);
    }
}

fn warnings(
    inputs: &GateInputs<'_>,
    policy: &GatePolicy,
    old: &ModelCounts,
    new: &ModelCounts,
    stats: &GateStats,
    counts: Option<&Answered>,
) -> Vec<String> {
    let mut w = Vec::new();
    let audit = inputs.audit.summary();
    for (reason, stat) in &audit.skipped {
        let at: Vec<String> = stat
            .first_lines
            .iter()
            .map(|l| format!("{}:{}", l.file, l.line))
            .collect();
        w.push(format!(
            "audit log: {} line(s) skipped ({reason}), first at {}",
            stat.count,
            at.join(", ")
        ));
    }
    let ts = inputs.test_set;
    if ts.insufficient {
        let action = match policy.on_insufficient {
            OnInsufficient::Block => "the gate blocks",
            OnInsufficient::Approve => "on_insufficient = approve: the gate compares 0.0 with 0.0",
        };
        w.push(format!(
            "test set: {} candidate case(s), fewer than min_samples {}; the test set is empty and {action}",
            ts.candidates, policy.test_set.min_samples
        ));
    }
    if ts.sampled {
        w.push(format!(
            "test set: {} candidates sampled down to {} (seed {})",
            ts.candidates,
            ts.cases.len(),
            policy.test_set.seed
        ));
    }
    w.extend(ts.warnings.iter().map(|m| format!("test set: {m}")));
    if let Some(n) = counts.and_then(|c| c.not_run).filter(|&n| n > 0) {
        w.push(format!(
            "not run: {n} test case(s) neither model answered (the sequential rule stopped first); they count for \
             neither model"
        ));
    }
    for (role, c) in [("old", old), ("new", new)] {
        // Under the current rules, the missing are counted over the cases run.
        let missing = match (counts, role) {
            (Some(a), "old") => a.old_missing,
            (Some(a), _) => a.new_missing,
            (None, _) => c.missing,
        };
        if missing > 0 {
            w.push(format!(
                "{role} verdicts: {missing} test case(s) without a verdict, counted as failed"
            ));
        }
        if c.errored > 0 {
            w.push(format!(
                "{role} verdicts: {} test case(s) where the runner failed, counted as failed",
                c.errored
            ));
        }
        // Under `repeats: mean` repeated verdicts are runs, every one counted.
        if c.conflicting > 0 && policy.repeats() == Repeats::Last {
            w.push(format!(
                "{role} verdicts: {} pipeline(s) with conflicting duplicate verdicts (the last one counts): {}",
                c.conflicting,
                c.conflicting_ids.join(", ")
            ));
        }
    }
    if policy.cluster() == Cluster::Template && !ts.cases.is_empty() && matches!(stats.task.clustered, Some(None)) {
        w.push(
            "task: every test case has the same template (one cluster): no clustered interval, which needs 2 \
             clusters or more; the non-inferiority rule uses the unclustered one"
                .to_owned(),
        );
    }
    match (inputs.old_trajectories, inputs.new_trajectories) {
        (Some(_), None) | (None, Some(_)) => {
            w.push("trajectories: only one model's results given, trajectory not checked".into())
        }
        _ => {}
    }
    for t in [inputs.old_trajectories, inputs.new_trajectories].into_iter().flatten() {
        if t.skipped_without_judge > 0 {
            w.push(format!(
                "{}: {} result(s) without overall_judge_score skipped",
                t.file.name, t.skipped_without_judge
            ));
        }
        if t.results.is_empty() {
            w.push(format!("{}: no scorable result, trajectory not checked", t.file.name));
        }
    }
    w
}
