//! The A/B comparison and the gate decision: the reference's semantics, the non-inferiority rule
//! and the decision's outcome.
//!
//! A decision has an outcome: approved, blocked or inconclusive. Only the non-inferiority rule
//! can be inconclusive (the interval of new − old neither shows non-inferiority nor a
//! regression), and an inconclusive decision never deploys. `approved` remains for the
//! reference's callers. A policy written before `cluster` and `repeats` existed
//! ([`GatePolicy::case_model`] `None`) decides as it did then: approved or blocked, its reasons
//! as they were, no `outcome` field.

use crate::compat::round4;
use crate::policy::{GatePolicy, Mode, OnInsufficient};
use serde::{Serialize, Serializer};
use serde_json::Value;

/// The rules a report is made under: the current ones, or those of the build before the
/// evidence rules (`verify --reproduce` accepts a decision signed under either).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Rules {
    /// Fail closed on missing evidence (`min_samples` over the cases answered by both,
    /// `max_missing`), the `evidence` object, a sequential report's figures over the used
    /// units, `not_run`, `sequential.min_units` and the stopping look.
    #[default]
    Current,
    /// Exactly the previous build's report: a missing verdict counts as a failure whatever the
    /// count, a sequential report's figures are over the whole test set.
    Before,
}

/// What a decision says: deploy the new model, keep the old one, or not known yet.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    /// Deploy the new model.
    Approved,
    /// Keep the old model: a regression is shown (or the point rule's check failed).
    Blocked,
    /// Keep the old model: the evidence shows neither non-inferiority nor a regression.
    Inconclusive,
}

impl Outcome {
    /// `approved`, `blocked` or `inconclusive`.
    pub fn as_str(self) -> &'static str {
        match self {
            Outcome::Approved => "approved",
            Outcome::Blocked => "blocked",
            Outcome::Inconclusive => "inconclusive",
        }
    }

    /// An outcome's name, as [`Outcome::as_str`] writes it.
    pub fn parse(name: &str) -> Option<Outcome> {
        match name {
            "approved" => Some(Outcome::Approved),
            "blocked" => Some(Outcome::Blocked),
            "inconclusive" => Some(Outcome::Inconclusive),
            _ => None,
        }
    }

    /// The outcome of a report's `decision` object: its `outcome`, or, for a report made before
    /// outcomes existed, `approved` or `blocked` from its `approved`. `None` when the object has
    /// neither (or an outcome this build does not know).
    pub fn of_decision(decision: &Value) -> Option<Outcome> {
        match decision.get("outcome") {
            Some(v) => v.as_str().and_then(Outcome::parse),
            None => decision
                .get("approved")
                .and_then(Value::as_bool)
                .map(Outcome::of_approved),
        }
    }

    /// `approved` or `blocked`.
    pub fn of_approved(approved: bool) -> Outcome {
        if approved {
            Outcome::Approved
        } else {
            Outcome::Blocked
        }
    }
}

impl Serialize for Outcome {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.as_str())
    }
}

/// The reference's `ABComparison`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ABComparison {
    /// Old pass rate (0.0 for an empty test set).
    pub old_score: f64,
    /// New pass rate.
    pub new_score: f64,
    /// `round(new − old, 4)`.
    pub delta: f64,
    /// Test cases.
    pub num_cases: usize,
    /// `delta >= 0.0 and new > old`.
    pub new_is_better: bool,
    /// `deploy` or `keep_old` (advisory).
    pub recommendation: String,
}

/// A/B comparison of two pass rates, as the reference's `compare_models` (min_delta 0.0).
pub fn compare(old: Option<f64>, new: Option<f64>, num_cases: usize) -> ABComparison {
    compare_with(old, new, num_cases, 0.0)
}

/// [`compare`] with the reference's `min_delta`: the new model is better when
/// `delta >= min_delta and new > old`.
pub fn compare_with(old: Option<f64>, new: Option<f64>, num_cases: usize, min_delta: f64) -> ABComparison {
    let old_score = old.unwrap_or(0.0);
    let new_score = new.unwrap_or(0.0);
    let delta = round4(new_score - old_score);
    let new_is_better = delta >= min_delta && new_score > old_score;
    ABComparison {
        old_score,
        new_score,
        delta,
        num_cases,
        new_is_better,
        recommendation: if new_is_better { "deploy" } else { "keep_old" }.into(),
    }
}

/// The reference's `GateDecision.details`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct DecisionDetails {
    /// `task_new < task_old − task_regression_tol`.
    pub task_regressed: bool,
    /// Both trajectory means present and `new < old − trajectory_regression_tol`.
    pub trajectory_regressed: bool,
    /// The task tolerance used.
    pub task_regression_tol: f64,
    /// The trajectory tolerance used.
    pub trajectory_regression_tol: f64,
    /// Both trajectory means were present.
    pub trajectory_checked: bool,
}

/// The reference's `GateDecision`, and its outcome.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct GateDecision {
    /// True: deploy the new model. False: keep the old one.
    pub approved: bool,
    /// Approved, blocked or inconclusive (`approved` is true exactly when it is approved);
    /// absent under a policy written before outcomes existed.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub outcome: Option<Outcome>,
    /// Why, in the reference's words.
    pub reason: String,
    /// `round(task_new − task_old, 4)`.
    pub task_delta: f64,
    /// `round(traj_new − traj_old, 4)` when both exist, else 0.0.
    pub trajectory_delta: f64,
    /// Old pass rate.
    pub task_old: f64,
    /// New pass rate.
    pub task_new: f64,
    /// Old mean trajectory composite.
    pub trajectory_old: Option<f64>,
    /// New mean trajectory composite.
    pub trajectory_new: Option<f64>,
    /// Test cases.
    pub num_cases: usize,
    /// The regression checks.
    pub details: DecisionDetails,
}

impl GateDecision {
    /// The outcome: the decision's, or approved or blocked for a policy without outcomes.
    pub fn outcome(&self) -> Outcome {
        self.outcome.unwrap_or(Outcome::of_approved(self.approved))
    }
}

/// What the decision is made from.
#[derive(Debug, Clone, PartialEq)]
pub struct Evidence {
    /// Old pass rate (`None`: empty test set).
    pub task_old: Option<f64>,
    /// New pass rate.
    pub task_new: Option<f64>,
    /// Old mean trajectory composite (`None`: not given or no results).
    pub trajectory_old: Option<f64>,
    /// New mean trajectory composite.
    pub trajectory_new: Option<f64>,
    /// Test cases.
    pub num_cases: usize,
    /// Candidate cases before `min_samples` / `max_samples`.
    pub candidates: usize,
    /// Lower bound of the interval for the task delta (non-inferiority mode).
    pub task_delta_low: Option<f64>,
    /// Lower bound of the interval for the trajectory delta, when checked.
    pub trajectory_delta_low: Option<f64>,
    /// Upper bound of the interval for the task delta (non-inferiority mode: a regression is
    /// shown when it is below 0).
    pub task_delta_high: Option<f64>,
    /// Upper bound of the interval for the trajectory delta, when checked.
    pub trajectory_delta_high: Option<f64>,
    /// About how many cases would settle an inconclusive task comparison (the report's
    /// `stats.task.sample_size.cases_needed`).
    pub cases_needed: Option<u64>,
    /// The sequential rule's verdict on the task criterion (`sequential: true`), which then
    /// replaces the fixed interval's.
    pub sequential: Option<SequentialTask>,
}

/// The task criterion as the sequential rule decided it (the report's `sequential`).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SequentialTask {
    /// Approved, blocked, or inconclusive (the budget spent).
    pub outcome: Outcome,
    /// The units used.
    pub used: usize,
    /// The budget.
    pub budget: usize,
    /// The bounds of the mean difference at the last look used (`None` before any).
    pub bounds: Option<(f64, f64)>,
    /// `case` or `template`.
    pub unit: &'static str,
}

/// The reason given when `on_insufficient = block` stops an empty or too small test set.
pub fn insufficient_reason(candidates: usize, min_samples: usize) -> String {
    if candidates < min_samples {
        format!("blocked: insufficient test cases ({candidates} < min_samples {min_samples})")
    } else {
        "blocked: insufficient test cases (empty test set)".to_owned()
    }
}

/// The reason given when `on_insufficient = block` stops a decision whose cases answered by both
/// models are fewer than `min_samples`: `blocked: insufficient evidence (4 of 200 test cases
/// answered by both models < min_samples 20; old 196 missing, new 196 missing)`, and, in a
/// sequential report, `; N not run` before the closing parenthesis.
pub fn insufficient_evidence_reason(
    answered: usize,
    test_cases: usize,
    min_samples: usize,
    (old_missing, new_missing): (usize, usize),
    not_run: Option<usize>,
) -> String {
    let not_run = not_run.map_or(String::new(), |n| format!("; {n} not run"));
    format!(
        "blocked: insufficient evidence ({answered} of {test_cases} test cases answered by both models < \
         min_samples {min_samples}; old {old_missing} missing, new {new_missing} missing{not_run})"
    )
}

/// A fraction as a percentage, as the reasons write it: `0.05` is `5%`, `0.025` is `2.5%`.
pub fn percent(fraction: f64) -> String {
    let p = (fraction * 100.0 * 1e6).round() / 1e6;
    format!("{p}%")
}

/// The reason given when more cases lack a verdict on a side than `max_missing` allows:
/// `inconclusive: missing verdicts (old 20 missing, new 12 missing of 200 test cases: 24 cases
/// (12.0%) lack a verdict, more than max_missing 5%)`. In a sequential report the cases counted
/// are those run (`of 109 test cases run`), and `; N not run` ends it.
pub fn missing_reason(
    (old_missing, new_missing): (usize, usize),
    run: usize,
    lacking: usize,
    max_missing: f64,
    not_run: Option<usize>,
) -> String {
    let share = if run == 0 {
        0.0
    } else {
        lacking as f64 * 100.0 / run as f64
    };
    let (of_run, tail) = match not_run {
        Some(n) => (" run", format!("; {n} not run")),
        None => ("", String::new()),
    };
    format!(
        "inconclusive: missing verdicts (old {old_missing} missing, new {new_missing} missing of {run} test \
         cases{of_run}: {lacking} cases ({share:.1}%) lack a verdict, more than max_missing {}{tail})",
        percent(max_missing)
    )
}

/// The reason given when `on_insufficient = block` stops an empty or too small test set, naming
/// every cause: [`insufficient_reason`], then, when the trajectory comparison (which needs no
/// test case) regressed, [`TRAJECTORY_CAUSE`] with its figures.
fn insufficient_reason_with_causes(
    e: &Evidence,
    policy: &GatePolicy,
    trajectory: Option<(f64, f64)>,
    trajectory_regressed: bool,
) -> String {
    let reason = insufficient_reason(e.candidates, policy.test_set.min_samples);
    match trajectory.filter(|_| trajectory_regressed) {
        Some((old, new)) => format!(
            "{reason}{TRAJECTORY_CAUSE}(new mean {new:.3} < old mean {old:.3} - {})",
            policy.trajectory_regression_tol
        ),
        None => reason,
    }
}

/// What [`insufficient_reason_with_causes`] adds for a trajectory regression, before its figures.
const TRAJECTORY_CAUSE: &str = "; trajectory quality regressed ";

/// `-tolerance` as the reasons write it.
fn negated(tol: f64) -> String {
    if tol == 0.0 {
        "0".into()
    } else {
        format!("{}", -tol)
    }
}

/// The non-inferiority verdicts of a policy written before outcomes existed: (task not shown,
/// trajectory not shown, reason), with the reasons of that time.
fn non_inferiority_before(e: &Evidence, policy: &GatePolicy, trajectory_checked: bool) -> (bool, bool, String) {
    let task_low = e.task_delta_low.unwrap_or(-1.0);
    let task_tol = negated(policy.task_regression_tol);
    let task_fail = task_low < -policy.task_regression_tol;
    let traj_low = e.trajectory_delta_low.filter(|_| trajectory_checked);
    let traj_tol = negated(policy.trajectory_regression_tol);
    let traj_fail = traj_low.is_some_and(|l| l < -policy.trajectory_regression_tol);
    let traj = traj_low.unwrap_or(-1.0);
    let reason = match (task_fail, traj_fail) {
        (true, true) => format!(
            "blocked: task AND trajectory non-inferiority not shown \
             (task lower bound {task_low:.3} < {task_tol}; trajectory lower bound {traj:.3} < {traj_tol})"
        ),
        (true, false) => format!("blocked: task non-inferiority not shown (lower bound {task_low:.3} < {task_tol})"),
        (false, true) => format!("blocked: trajectory non-inferiority not shown (lower bound {traj:.3} < {traj_tol})"),
        (false, false) if traj_low.is_some() => format!(
            "approved: non-inferiority shown \
             (task lower bound {task_low:.3} >= {task_tol}; trajectory lower bound {traj:.3} >= {traj_tol})"
        ),
        (false, false) => format!("approved: non-inferiority shown (task lower bound {task_low:.3} >= {task_tol})"),
    };
    (task_fail, traj_fail, reason)
}

/// The end of the fixed rule's inconclusive reason for the task: the cases a fresh evaluation
/// needs, and why this one is not to be continued.
fn settle_reason(n: u64) -> String {
    format!("{SETTLE_BEGIN}{n}{SETTLE_END}")
}

const SETTLE_BEGIN: &str = "; a fresh fixed-size evaluation would need about ";
const SETTLE_END: &str = " cases for the task comparison; adding cases to this one and deciding again \
     raises the error rate, sequential: true adds cases safely";

/// The reason as earlier builds wrote it, for a reason whose words have changed since; `None`
/// for any other. A decision signed by such a build reproduces ([`crate::attest::reproduce`])
/// when the files give the same decision in the current words. Two changes:
///
/// - a fixed-size inconclusive decision's ending (`…; a fresh fixed-size evaluation would need
///   about N cases …`) was `…; about N cases would settle the task comparison`;
/// - a test set too small to decide on, with a trajectory regression, named only the test set
///   (`blocked: insufficient test cases (…)`), not the trajectory cause after it.
pub fn reason_as_before(reason: &str) -> Option<String> {
    settle_reason_as_before(reason).or_else(|| insufficient_reason_as_before(reason))
}

/// [`reason_as_before`] for the blocked reason of a too small test set that names the
/// trajectory cause: its first cause alone.
fn insufficient_reason_as_before(reason: &str) -> Option<String> {
    if !reason.starts_with("blocked: insufficient test cases (") || !reason.ends_with(')') {
        return None;
    }
    let at = reason.find(TRAJECTORY_CAUSE)?;
    reason[at + TRAJECTORY_CAUSE.len()..]
        .starts_with("(new mean ")
        .then(|| reason[..at].to_owned())
}

/// [`reason_as_before`] for the fixed rule's inconclusive ending.
fn settle_reason_as_before(reason: &str) -> Option<String> {
    let head = reason.strip_suffix(SETTLE_END)?;
    let at = head.rfind(SETTLE_BEGIN)?;
    let n: u64 = head[at + SETTLE_BEGIN.len()..].parse().ok()?;
    Some(format!(
        "{}; about {n} cases would settle the task comparison",
        &head[..at]
    ))
}

/// One interval of `new − old` against its tolerance `t`: approved when `low > −t`; blocked when
/// `low ≤ −t` and `high < 0` (a regression is shown, non-inferiority is not); inconclusive when
/// `low ≤ −t` and `high ≥ 0` (neither is shown).
pub fn judge_interval(low: f64, high: f64, tolerance: f64) -> Outcome {
    if low > -tolerance {
        Outcome::Approved
    } else if high < 0.0 {
        Outcome::Blocked
    } else {
        Outcome::Inconclusive
    }
}

/// One criterion of the non-inferiority rule as judged.
struct Judged {
    name: &'static str,
    low: f64,
    high: f64,
    tolerance: f64,
    outcome: Outcome,
    /// `, sequential: after N of B cases` for the sequential rule's task criterion.
    note: String,
}

/// The non-inferiority rule with three outcomes: (task not shown, trajectory not shown,
/// outcome, reason). The outcome is blocked when a criterion is, else inconclusive when one is,
/// else approved.
fn non_inferiority(e: &Evidence, policy: &GatePolicy, trajectory_checked: bool) -> (bool, bool, Outcome, String) {
    let judged = |name, low: Option<f64>, high: Option<f64>, tolerance: f64| {
        let (low, high) = (low.unwrap_or(-1.0), high.unwrap_or(1.0));
        Judged {
            name,
            low,
            high,
            tolerance,
            outcome: judge_interval(low, high, tolerance),
            note: String::new(),
        }
    };
    let task = match &e.sequential {
        None => judged("task", e.task_delta_low, e.task_delta_high, policy.task_regression_tol),
        Some(q) => {
            let (low, high) = q.bounds.unwrap_or((-1.0, 1.0));
            Judged {
                name: "task",
                low,
                high,
                tolerance: policy.task_regression_tol,
                outcome: q.outcome,
                note: format!(", sequential: after {} of {} {}s", q.used, q.budget, q.unit),
            }
        }
    };
    let mut criteria = vec![task];
    if trajectory_checked && e.trajectory_delta_low.is_some() {
        criteria.push(judged(
            "trajectory",
            e.trajectory_delta_low,
            e.trajectory_delta_high,
            policy.trajectory_regression_tol,
        ));
    }
    let any = |o: Outcome| criteria.iter().any(|c| c.outcome == o);
    let outcome = if any(Outcome::Blocked) {
        Outcome::Blocked
    } else if any(Outcome::Inconclusive) {
        Outcome::Inconclusive
    } else {
        Outcome::Approved
    };
    let of = |o: Outcome| criteria.iter().filter(|c| c.outcome == o).collect::<Vec<_>>();
    let names = |cs: &[&Judged]| cs.iter().map(|c| c.name).collect::<Vec<_>>().join(" AND ");
    let prefixed = |cs: &[&Judged], each: &dyn Fn(&Judged) -> String| {
        if cs.len() == 1 {
            each(cs[0])
        } else {
            cs.iter()
                .map(|c| format!("{} {}", c.name, each(c)))
                .collect::<Vec<_>>()
                .join("; ")
        }
    };
    let reason = match outcome {
        Outcome::Approved => {
            let cs = of(Outcome::Approved);
            let bounds = cs
                .iter()
                .map(|c| {
                    format!(
                        "{} lower bound {:.3} > {}{}",
                        c.name,
                        c.low,
                        negated(c.tolerance),
                        c.note
                    )
                })
                .collect::<Vec<_>>()
                .join("; ");
            format!("approved: non-inferiority shown ({bounds})")
        }
        Outcome::Blocked => {
            let cs = of(Outcome::Blocked);
            let bounds = prefixed(&cs, &|c| {
                format!(
                    "upper bound {:.3} < 0, lower bound {:.3} <= {}{}",
                    c.high,
                    c.low,
                    negated(c.tolerance),
                    c.note
                )
            });
            format!("blocked: {} regression shown ({bounds})", names(&cs))
        }
        Outcome::Inconclusive => {
            let cs = of(Outcome::Inconclusive);
            let bounds = prefixed(&cs, &|c| {
                format!(
                    "interval {:.3} to {:.3}, tolerance {}: lower bound <= {}, upper bound >= 0{}",
                    c.low,
                    c.high,
                    c.tolerance,
                    negated(c.tolerance),
                    c.note
                )
            });
            let task_open = cs.iter().any(|c| c.name == "task");
            let settle = match e.cases_needed {
                _ if task_open && e.sequential.is_some() => "; the budget is spent: evaluate again with a larger \
                     budget (the same seed's order, more cases answered if need be) to continue the sequence, \
                     its error rate held"
                    .to_owned(),
                Some(n) if task_open => settle_reason(n),
                _ => String::new(),
            };
            format!(
                "inconclusive: {} non-inferiority not shown, nor a regression ({bounds}){settle}",
                names(&cs)
            )
        }
    };
    let failed = |name: &str| {
        criteria
            .iter()
            .any(|c| c.name == name && c.outcome != Outcome::Approved)
    };
    (failed("task"), failed("trajectory"), outcome, reason)
}

/// Evaluates the gate: the reference's rule (or non-inferiority), plus `on_insufficient` for an
/// empty test set (`approve` falls back to the reference's rule whatever the mode; `block`
/// blocks, the reason naming every cause: the test set, and a trajectory regression when the
/// trajectory means, which need no test case, show one). In
/// non-inferiority mode `details.task_regressed` / `trajectory_regressed` mean "non-inferiority
/// not shown". Under a policy written before outcomes existed the decision is the one that
/// policy made then (no `outcome`, never inconclusive).
pub fn decide(e: &Evidence, policy: &GatePolicy) -> GateDecision {
    if policy.case_model.is_none() {
        return decide_before(e, policy);
    }
    let task_old = e.task_old.unwrap_or(0.0);
    let task_new = e.task_new.unwrap_or(0.0);
    let task_delta = round4(task_new - task_old);
    let both = e.trajectory_old.zip(e.trajectory_new);
    let trajectory_delta = both.map_or(0.0, |(old, new)| round4(new - old));
    let mut task_regressed = task_new < task_old - policy.task_regression_tol;
    let mut trajectory_regressed = both.is_some_and(|(old, new)| new < old - policy.trajectory_regression_tol);
    let ni =
        (policy.mode == Mode::NonInferiority && e.num_cases > 0).then(|| non_inferiority(e, policy, both.is_some()));
    if let Some((task_fail, traj_fail, _, _)) = &ni {
        task_regressed = *task_fail;
        trajectory_regressed = *traj_fail;
    }
    let (outcome, reason) = if e.num_cases == 0 && policy.on_insufficient == OnInsufficient::Block {
        (
            Outcome::Blocked,
            insufficient_reason_with_causes(e, policy, both, trajectory_regressed),
        )
    } else if let Some((_, _, outcome, reason)) = ni {
        (outcome, reason)
    } else {
        let (approved, reason) = point_rule(task_regressed, trajectory_regressed);
        (Outcome::of_approved(approved), reason)
    };
    GateDecision {
        approved: outcome == Outcome::Approved,
        outcome: Some(outcome),
        reason,
        task_delta,
        trajectory_delta,
        task_old,
        task_new,
        trajectory_old: e.trajectory_old,
        trajectory_new: e.trajectory_new,
        num_cases: e.num_cases,
        details: DecisionDetails {
            task_regressed,
            trajectory_regressed,
            task_regression_tol: policy.task_regression_tol,
            trajectory_regression_tol: policy.trajectory_regression_tol,
            trajectory_checked: both.is_some(),
        },
    }
}

/// The reference's point rule and its four reasons.
fn point_rule(task_regressed: bool, trajectory_regressed: bool) -> (bool, String) {
    let (approved, reason) = if task_regressed && trajectory_regressed {
        (false, "blocked: task AND trajectory regressed")
    } else if task_regressed {
        (false, "blocked: task accuracy regressed")
    } else if trajectory_regressed {
        (false, "blocked: trajectory quality regressed")
    } else {
        (true, "approved: no regression on task or trajectory")
    };
    (approved, reason.to_owned())
}

/// [`decide`] under a policy written before outcomes existed: exactly that build's decision.
fn decide_before(e: &Evidence, policy: &GatePolicy) -> GateDecision {
    let task_old = e.task_old.unwrap_or(0.0);
    let task_new = e.task_new.unwrap_or(0.0);
    let task_delta = round4(task_new - task_old);
    let both = e.trajectory_old.zip(e.trajectory_new);
    let trajectory_delta = both.map_or(0.0, |(old, new)| round4(new - old));
    let mut task_regressed = task_new < task_old - policy.task_regression_tol;
    let mut trajectory_regressed = both.is_some_and(|(old, new)| new < old - policy.trajectory_regression_tol);
    let ni = (policy.mode == Mode::NonInferiority && e.num_cases > 0)
        .then(|| non_inferiority_before(e, policy, both.is_some()));
    if let Some((task_fail, traj_fail, _)) = &ni {
        task_regressed = *task_fail;
        trajectory_regressed = *traj_fail;
    }
    let (approved, reason) = if e.num_cases == 0 && policy.on_insufficient == OnInsufficient::Block {
        (false, insufficient_reason(e.candidates, policy.test_set.min_samples))
    } else if let Some((task_fail, traj_fail, reason)) = ni {
        (!task_fail && !traj_fail, reason)
    } else {
        point_rule(task_regressed, trajectory_regressed)
    };
    GateDecision {
        approved,
        outcome: None,
        reason,
        task_delta,
        trajectory_delta,
        task_old,
        task_new,
        trajectory_old: e.trajectory_old,
        trajectory_new: e.trajectory_new,
        num_cases: e.num_cases,
        details: DecisionDetails {
            task_regressed,
            trajectory_regressed,
            task_regression_tol: policy.task_regression_tol,
            trajectory_regression_tol: policy.trajectory_regression_tol,
            trajectory_checked: both.is_some(),
        },
    }
}

#[cfg(test)]
mod tests;
