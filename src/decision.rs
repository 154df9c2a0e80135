//! The gate policy, the A/B comparison and the gate decision, with the reference's semantics.

use crate::compat::round4;
use crate::policy::{GatePolicy, Mode, OnInsufficient};
use serde::Serialize;

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

/// The reference's `GateDecision`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct GateDecision {
    /// True: deploy the new model. False: keep the old one.
    pub approved: bool,
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
}

/// The reason given when `on_insufficient = block` stops an empty or too small test set.
pub fn insufficient_reason(candidates: usize, min_samples: usize) -> String {
    if candidates < min_samples {
        format!("blocked: insufficient test cases ({candidates} < min_samples {min_samples})")
    } else {
        "blocked: insufficient test cases (empty test set)".to_owned()
    }
}

/// `-tolerance` as the reasons write it.
fn negated(tol: f64) -> String {
    if tol == 0.0 {
        "0".into()
    } else {
        format!("{}", -tol)
    }
}

/// The non-inferiority verdicts: (task not shown, trajectory not shown, reason).
fn non_inferiority(e: &Evidence, policy: &GatePolicy, trajectory_checked: bool) -> (bool, bool, String) {
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

/// Evaluates the gate: the reference's rule (or non-inferiority), plus `on_insufficient` for an
/// empty test set (`approve` falls back to the reference's rule whatever the mode). In
/// non-inferiority mode `details.task_regressed` / `trajectory_regressed` mean "non-inferiority
/// not shown".
pub fn decide(e: &Evidence, policy: &GatePolicy) -> GateDecision {
    let task_old = e.task_old.unwrap_or(0.0);
    let task_new = e.task_new.unwrap_or(0.0);
    let task_delta = round4(task_new - task_old);
    let both = e.trajectory_old.zip(e.trajectory_new);
    let trajectory_delta = both.map_or(0.0, |(old, new)| round4(new - old));
    let mut task_regressed = task_new < task_old - policy.task_regression_tol;
    let mut trajectory_regressed = both.is_some_and(|(old, new)| new < old - policy.trajectory_regression_tol);
    let ni =
        (policy.mode == Mode::NonInferiority && e.num_cases > 0).then(|| non_inferiority(e, policy, both.is_some()));
    if let Some((task_fail, traj_fail, _)) = &ni {
        task_regressed = *task_fail;
        trajectory_regressed = *traj_fail;
    }
    let (approved, reason) = if e.num_cases == 0 && policy.on_insufficient == OnInsufficient::Block {
        (false, insufficient_reason(e.candidates, policy.test_set.min_samples))
    } else if let Some((task_fail, traj_fail, reason)) = ni {
        (!task_fail && !traj_fail, reason)
    } else if task_regressed && trajectory_regressed {
        (false, "blocked: task AND trajectory regressed".to_owned())
    } else if task_regressed {
        (false, "blocked: task accuracy regressed".to_owned())
    } else if trajectory_regressed {
        (false, "blocked: trajectory quality regressed".to_owned())
    } else {
        (true, "approved: no regression on task or trajectory".to_owned())
    };
    GateDecision {
        approved,
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
mod tests {
    use super::*;
    use crate::policy::TestSetPolicy;

    fn evidence(old: f64, new: f64) -> Evidence {
        Evidence {
            task_old: Some(old),
            task_new: Some(new),
            trajectory_old: None,
            trajectory_new: None,
            num_cases: 10,
            candidates: 10,
            task_delta_low: None,
            trajectory_delta_low: None,
        }
    }

    #[test]
    fn min_delta_is_the_references() {
        // The new model must beat the old by at least min_delta, and be strictly better.
        assert!(compare_with(Some(0.5), Some(0.6), 10, 0.1).new_is_better);
        assert!(!compare_with(Some(0.5), Some(0.55), 10, 0.1).new_is_better);
        assert!(!compare_with(Some(0.5), Some(0.5), 10, -0.1).new_is_better);
        let c = compare_with(None, Some(0.25), 4, 0.0);
        assert_eq!((c.old_score, c.delta, c.recommendation.as_str()), (0.0, 0.25, "deploy"));
    }

    #[test]
    fn comparisons_are_plain_f64_without_epsilon() {
        // 0.8 − 0.1 = 0.7000000000000001 in f64, so 0.7 regresses with tolerance 0.1.
        let policy = GatePolicy {
            task_regression_tol: 0.1,
            ..GatePolicy::default()
        };
        let d = decide(&evidence(0.8, 0.7), &policy);
        assert!(!d.approved && d.details.task_regressed);
        assert_eq!(d.reason, "blocked: task accuracy regressed");
        assert_eq!(d.task_delta, -0.1);
    }

    #[test]
    fn the_four_reasons() {
        let p = GatePolicy::default();
        let with_traj = |old: f64, new: f64, t_old: f64, t_new: f64| Evidence {
            trajectory_old: Some(t_old),
            trajectory_new: Some(t_new),
            ..evidence(old, new)
        };
        assert_eq!(
            decide(&with_traj(0.5, 0.4, 0.5, 0.4), &p).reason,
            "blocked: task AND trajectory regressed"
        );
        assert_eq!(
            decide(&with_traj(0.5, 0.5, 0.5, 0.4), &p).reason,
            "blocked: trajectory quality regressed"
        );
        assert_eq!(
            decide(&with_traj(0.5, 0.5, 0.5, 0.46), &p).reason,
            "approved: no regression on task or trajectory"
        );
        let d = decide(
            &Evidence {
                trajectory_old: Some(0.9),
                ..evidence(0.5, 0.5)
            },
            &p,
        );
        assert!(d.approved && !d.details.trajectory_checked && d.trajectory_delta == 0.0);
    }

    #[test]
    fn empty_test_set_blocks_by_default_and_approves_like_the_reference_on_request() {
        let e = Evidence {
            task_old: None,
            task_new: None,
            trajectory_old: None,
            trajectory_new: None,
            num_cases: 0,
            candidates: 7,
            task_delta_low: None,
            trajectory_delta_low: None,
        };
        let d = decide(&e, &GatePolicy::default());
        assert!(!d.approved);
        assert_eq!(d.reason, "blocked: insufficient test cases (7 < min_samples 20)");
        let approve = GatePolicy {
            on_insufficient: OnInsufficient::Approve,
            ..GatePolicy::default()
        };
        let d = decide(&e, &approve);
        assert!(d.approved && d.task_old == 0.0 && d.task_new == 0.0);
        let zero_min = GatePolicy {
            test_set: TestSetPolicy {
                min_samples: 0,
                ..TestSetPolicy::default()
            },
            ..GatePolicy::default()
        };
        let d = decide(&Evidence { candidates: 0, ..e }, &zero_min);
        assert_eq!(d.reason, "blocked: insufficient test cases (empty test set)");
    }

    #[test]
    fn non_inferiority_reasons() {
        let ni = GatePolicy {
            mode: Mode::NonInferiority,
            task_regression_tol: 0.05,
            ..GatePolicy::default()
        };
        let e = |low: f64| Evidence {
            task_delta_low: Some(low),
            ..evidence(0.8, 0.79)
        };
        let d = decide(&e(-0.081), &ni);
        assert!(!d.approved && d.details.task_regressed);
        assert_eq!(
            d.reason,
            "blocked: task non-inferiority not shown (lower bound -0.081 < -0.05)"
        );
        let d = decide(&e(-0.021), &ni);
        assert!(d.approved);
        assert_eq!(
            d.reason,
            "approved: non-inferiority shown (task lower bound -0.021 >= -0.05)"
        );
        let with_traj = Evidence {
            trajectory_old: Some(0.6),
            trajectory_new: Some(0.55),
            trajectory_delta_low: Some(-0.0625),
            ..e(-0.1)
        };
        assert_eq!(
            decide(&with_traj, &ni).reason,
            "blocked: task AND trajectory non-inferiority not shown (task lower bound -0.100 < -0.05; trajectory lower bound -0.062 < -0.05)"
        );
        let zero = GatePolicy {
            task_regression_tol: 0.0,
            ..ni.clone()
        };
        assert_eq!(
            decide(&e(-0.01), &zero).reason,
            "blocked: task non-inferiority not shown (lower bound -0.010 < 0)"
        );
        let empty = Evidence {
            num_cases: 0,
            ..e(-1.0)
        };
        assert!(decide(&empty, &ni).reason.starts_with("blocked: insufficient"));
    }

    #[test]
    fn comparison_matches_the_reference() {
        let c = compare(Some(0.75), Some(0.8182), 132);
        assert_eq!(
            (c.delta, c.new_is_better, c.recommendation.as_str()),
            (0.0682, true, "deploy")
        );
        let c = compare(None, None, 0);
        assert_eq!(
            (c.old_score, c.new_is_better, c.recommendation.as_str()),
            (0.0, false, "keep_old")
        );
    }
}
