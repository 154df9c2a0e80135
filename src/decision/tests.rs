//! The decision's tests: the reference's rule and reasons, non-inferiority before and after
//! outcomes, the three outcomes, and a report's outcome.

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
        task_delta_high: None,
        trajectory_delta_high: None,
        cases_needed: None,
        sequential: None,
    }
}

/// The policy of a build before outcomes existed.
fn before(policy: GatePolicy) -> GatePolicy {
    GatePolicy {
        case_model: None,
        ..policy
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
        task_delta_high: None,
        trajectory_delta_high: None,
        cases_needed: None,
        sequential: None,
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

/// Upstream's closed loop gates a retrained model with an empty test set and trajectory results
/// (its test of the trajectory signal: old 0.9, new 0.4, tolerance 0.05) and expects a block
/// whose reason names the trajectory: the reason names every cause.
#[test]
fn an_empty_test_set_with_a_trajectory_regression_names_both_causes() {
    let e = |t_old: f64, t_new: f64, candidates: usize| Evidence {
        task_old: None,
        task_new: None,
        trajectory_old: Some(t_old),
        trajectory_new: Some(t_new),
        num_cases: 0,
        candidates,
        ..evidence(0.0, 0.0)
    };
    let drop_in = GatePolicy {
        test_set: TestSetPolicy {
            min_samples: 0,
            ..TestSetPolicy::default()
        },
        ..GatePolicy::default()
    };
    let d = decide(&e(0.9, 0.4, 0), &drop_in);
    assert_eq!(d.outcome(), Outcome::Blocked);
    assert!(d.details.trajectory_checked && d.details.trajectory_regressed && !d.details.task_regressed);
    assert_eq!(
        d.reason,
        "blocked: insufficient test cases (empty test set); trajectory quality regressed \
         (new mean 0.400 < old mean 0.900 - 0.05)"
    );
    // Too few candidates, under either rule.
    let mut ni = GatePolicy {
        mode: Mode::NonInferiority,
        trajectory_regression_tol: 0.0,
        ..GatePolicy::default()
    };
    assert_eq!(
        decide(&e(0.7672, 0.7609, 3), &ni).reason,
        "blocked: insufficient test cases (3 < min_samples 20); trajectory quality regressed \
         (new mean 0.761 < old mean 0.767 - 0)"
    );
    // The earlier words are kept reproducible.
    assert_eq!(
        reason_as_before(&decide(&e(0.7672, 0.7609, 3), &ni).reason).as_deref(),
        Some("blocked: insufficient test cases (3 < min_samples 20)")
    );
    // A trajectory within its tolerance, or none, is no cause.
    ni.trajectory_regression_tol = 0.05;
    assert_eq!(
        decide(&e(0.7672, 0.7609, 3), &ni).reason,
        "blocked: insufficient test cases (3 < min_samples 20)"
    );
    let none = Evidence {
        trajectory_new: None,
        ..e(0.9, 0.4, 0)
    };
    assert_eq!(
        decide(&none, &drop_in).reason,
        "blocked: insufficient test cases (empty test set)"
    );
    // The reference's approval on request is unchanged (its point rule names the trajectory).
    let approve = GatePolicy {
        on_insufficient: OnInsufficient::Approve,
        ..drop_in.clone()
    };
    assert_eq!(
        decide(&e(0.9, 0.4, 0), &approve).reason,
        "blocked: trajectory quality regressed"
    );
    // A policy written before outcomes existed decides in that build's words.
    assert_eq!(
        decide(&e(0.9, 0.4, 3), &before(GatePolicy::default())).reason,
        "blocked: insufficient test cases (3 < min_samples 20)"
    );
}

#[test]
fn non_inferiority_reasons_before_outcomes() {
    let ni = before(GatePolicy {
        mode: Mode::NonInferiority,
        task_regression_tol: 0.05,
        ..GatePolicy::default()
    });
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
    // No outcome in the decision, and the bound equal to the tolerance approves, as then.
    assert_eq!(decide(&e(-0.05), &ni).outcome, None);
    assert!(decide(&e(-0.05), &ni).approved);
    assert_eq!(decide(&e(-0.05), &ni).outcome(), Outcome::Approved);
    assert_eq!(
        serde_json::to_value(decide(&e(-0.081), &ni)).unwrap().get("outcome"),
        None
    );
}

#[test]
fn three_outcomes_under_non_inferiority() {
    let ni = GatePolicy {
        mode: Mode::NonInferiority,
        task_regression_tol: 0.05,
        ..GatePolicy::default()
    };
    let e = |low: f64, high: f64| Evidence {
        task_delta_low: Some(low),
        task_delta_high: Some(high),
        cases_needed: Some(942),
        ..evidence(0.8, 0.79)
    };
    let d = decide(&e(-0.021, 0.03), &ni);
    assert_eq!((d.approved, d.outcome), (true, Some(Outcome::Approved)));
    assert_eq!(
        d.reason,
        "approved: non-inferiority shown (task lower bound -0.021 > -0.05)"
    );
    // The bound at the tolerance does not show non-inferiority (approved needs low > −t).
    let d = decide(&e(-0.05, 0.02), &ni);
    assert_eq!((d.approved, d.outcome), (false, Some(Outcome::Inconclusive)));
    assert!(d.details.task_regressed);
    assert_eq!(
        d.reason,
        "inconclusive: task non-inferiority not shown, nor a regression (interval -0.050 to 0.020, tolerance 0.05: \
         lower bound <= -0.05, upper bound >= 0); a fresh fixed-size evaluation would need about 942 cases for the \
         task comparison; adding cases to this one and deciding again raises the error rate, sequential: true adds \
         cases safely"
    );
    // A regression shown: the whole interval below 0.
    let d = decide(&e(-0.2, -0.01), &ni);
    assert_eq!((d.approved, d.outcome), (false, Some(Outcome::Blocked)));
    assert_eq!(
        d.reason,
        "blocked: task regression shown (upper bound -0.010 < 0, lower bound -0.200 <= -0.05)"
    );
    // high = 0 is not below 0: inconclusive.
    assert_eq!(decide(&e(-0.2, 0.0), &ni).outcome, Some(Outcome::Inconclusive));
    // An interval inside (−t, 0) is approved (non-inferior, though lower).
    assert_eq!(decide(&e(-0.04, -0.001), &ni).outcome, Some(Outcome::Approved));
    // Task and trajectory: a blocked criterion blocks, else an inconclusive one makes it so.
    let with_traj = |traj: (f64, f64)| Evidence {
        trajectory_old: Some(0.6),
        trajectory_new: Some(0.55),
        trajectory_delta_low: Some(traj.0),
        trajectory_delta_high: Some(traj.1),
        ..e(-0.02, 0.03)
    };
    let ni_traj = GatePolicy {
        trajectory_regression_tol: 0.05,
        ..ni.clone()
    };
    let d = decide(&with_traj((-0.2, 0.1)), &ni_traj);
    assert_eq!(d.outcome, Some(Outcome::Inconclusive));
    assert!(!d.details.task_regressed && d.details.trajectory_regressed);
    assert_eq!(
        d.reason,
        "inconclusive: trajectory non-inferiority not shown, nor a regression (interval -0.200 to 0.100, tolerance 0.05: \
         lower bound <= -0.05, upper bound >= 0)"
    );
    let d = decide(&with_traj((-0.2, -0.1)), &ni_traj);
    assert_eq!(d.outcome, Some(Outcome::Blocked));
    assert_eq!(
        d.reason,
        "blocked: trajectory regression shown (upper bound -0.100 < 0, lower bound -0.200 <= -0.05)"
    );
    let both = Evidence {
        task_delta_low: Some(-0.3),
        task_delta_high: Some(-0.1),
        ..with_traj((-0.2, -0.1))
    };
    assert_eq!(
        decide(&both, &ni_traj).reason,
        "blocked: task AND trajectory regression shown (task upper bound -0.100 < 0, lower bound -0.300 <= -0.05; \
         trajectory upper bound -0.100 < 0, lower bound -0.200 <= -0.05)"
    );
    let d = decide(&with_traj((0.01, 0.1)), &ni_traj);
    assert_eq!(
        d.reason,
        "approved: non-inferiority shown (task lower bound -0.020 > -0.05; trajectory lower bound 0.010 > -0.05)"
    );
    // The point rule is never inconclusive, and an empty test set blocks.
    let point = GatePolicy::default();
    assert_eq!(decide(&e(-0.9, 0.9), &point).outcome, Some(Outcome::Blocked));
    assert_eq!(decide(&evidence(0.8, 0.85), &point).outcome, Some(Outcome::Approved));
    let empty = Evidence {
        num_cases: 0,
        ..e(-1.0, 1.0)
    };
    assert_eq!(decide(&empty, &ni).outcome, Some(Outcome::Blocked));
}

#[test]
fn the_outcome_of_a_reports_decision() {
    use serde_json::json;
    assert_eq!(
        Outcome::of_decision(&json!({"approved": false, "outcome": "inconclusive"})),
        Some(Outcome::Inconclusive)
    );
    assert_eq!(
        Outcome::of_decision(&json!({"approved": true})),
        Some(Outcome::Approved)
    );
    assert_eq!(
        Outcome::of_decision(&json!({"approved": false})),
        Some(Outcome::Blocked)
    );
    assert_eq!(Outcome::of_decision(&json!({"outcome": "maybe"})), None);
    assert_eq!(Outcome::of_decision(&json!({})), None);
    assert_eq!(judge_interval(-0.1, 0.2, 0.05), Outcome::Inconclusive);
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
