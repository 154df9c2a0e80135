//! Known answers for the clustered intervals and the t quantile, from statsmodels and scipy
//! themselves: `tests/fixtures/stats/known-answers.json`, written by
//! `scripts/known-answers.py` (which `scripts/test.sh` runs again against statsmodels to check
//! the file). Each case set is evaluated end to end — an audit log, both verdict files with
//! every run of a case, the report — and its `stats.task.clustered` must match statsmodels'
//! OLS on a constant (`cov_type="cluster"`, `use_t=True`) to 1e-12.

use deploy_gate::gate::{evaluate_in_memory, MemoryInputs};
use deploy_gate::policy::{GatePolicy, PolicyInput};
use deploy_gate::stats::t_quantile;
use serde_json::{json, Value};
use std::path::Path;

fn fixture() -> Value {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/stats/known-answers.json");
    serde_json::from_slice(&std::fs::read(path).unwrap()).unwrap()
}

/// Within 1e-12 (relative above 1).
fn close(got: f64, want: f64, what: &str) {
    assert!(
        (got - want).abs() <= 1e-12 * want.abs().max(1.0),
        "{what}: {got:?}, statsmodels {want:?} (off by {:e})",
        (got - want).abs()
    );
}

/// Student's t quantile against scipy's `t.ppf` and against the quantile mpmath finds at 40
/// digits: within 1e-12 of mpmath everywhere, and of scipy wherever scipy is (scipy is off by
/// 1e-10 at df = 4, p = 0.5000001, the one row where it is not: only just above the median).
#[test]
fn t_quantiles_match_scipy_and_mpmath() {
    let doc = fixture();
    let rows = doc["t_quantiles"].as_array().unwrap();
    assert!(rows.len() > 900);
    let mut worst = 0.0f64;
    let mut scipy_off = Vec::new();
    let mut failures = Vec::new();
    for row in rows {
        let f = |i: usize| row[i].as_f64().unwrap();
        let (df, p, scipy, exact) = (f(0), f(1), f(2), f(3));
        let got = t_quantile(p, df);
        let error = (got - exact).abs() / exact.abs().max(1.0);
        if error > 1e-12 {
            failures.push(format!(
                "t_quantile({p}, {df}) = {got:?}, mpmath {exact:?} (off by {error:e})"
            ));
        }
        worst = worst.max(error);
        if (scipy - exact).abs() <= 1e-12 * exact.abs().max(1.0) {
            if (got - scipy).abs() > 1e-12 * scipy.abs().max(1.0) {
                failures.push(format!("t_quantile({p}, {df}) = {got:?}, scipy {scipy:?}"));
            }
        } else {
            scipy_off.push((df, p));
        }
    }
    assert!(
        failures.is_empty(),
        "{} of {}:\n{}",
        failures.len(),
        rows.len(),
        failures.join("\n")
    );
    assert!(
        scipy_off.len() <= 2 && scipy_off.iter().all(|&(_, p)| (p - 0.5).abs() < 1e-6),
        "{scipy_off:?}"
    );
    eprintln!(
        "t quantile: {} known answers, worst error {worst:e}; scipy off at {scipy_off:?}",
        rows.len()
    );
}

/// The report of a case set: one pipeline per case, its template (or none), and every run of
/// each model as a verdict record.
fn report_of(cases: &[Value], policy: &GatePolicy) -> Value {
    let mut audit = String::new();
    let (mut old, mut new) = (String::new(), String::new());
    for (i, c) in cases.iter().enumerate() {
        let id = format!("case-{i:03}");
        let mut stage = json!({"pipeline_id": id, "stage_id": "s", "stage_type": "llm", "input": format!("input {i}")});
        let mut done = json!({"pipeline_id": id, "verdict": "PASS", "is_complete": true, "error": null});
        if !c["template"].is_null() {
            stage["template_id"] = c["template"].clone();
            done["template_id"] = c["template"].clone();
        }
        audit += &format!("{stage}\n{done}\n");
        for (runs, out) in [(&c["old"], &mut old), (&c["new"], &mut new)] {
            for r in runs.as_array().unwrap() {
                let verdict = if r == 1 { "PASS" } else { "FAIL" };
                *out += &format!("{}\n", json!({"pipeline_id": id, "verdict": verdict}));
            }
        }
    }
    let inputs = MemoryInputs {
        audit: vec![("audit.jsonl", audit.as_bytes())],
        old_verdicts: ("old.jsonl", old.as_bytes()),
        new_verdicts: ("new.jsonl", new.as_bytes()),
        old_trajectories: None,
        new_trajectories: None,
    };
    serde_json::to_value(evaluate_in_memory(&inputs, policy).unwrap().1).unwrap()
}

fn policy(confidence: f64, repeats: &str) -> GatePolicy {
    PolicyInput::from_value(&json!({"min_samples": 0, "max_samples": null, "confidence": confidence,
        "cluster": "template", "repeats": repeats, "mode": "non_inferiority", "task_tol": 0.05}))
    .unwrap()
    .into_policy()
    .unwrap()
}

fn check_interval(got: &Value, want: &Value, estimate: &str, (lo, hi): (f64, f64), what: &str) {
    close(
        got[estimate].as_f64().unwrap(),
        want["estimate"].as_f64().unwrap(),
        &format!("{what} estimate"),
    );
    // statsmodels does not clip: the report clips rates to [0, 1] and the difference to [-1, 1].
    let low = want["low"].as_f64().unwrap().max(lo);
    let high = want["high"].as_f64().unwrap().min(hi);
    close(got["low"].as_f64().unwrap(), low, &format!("{what} low"));
    close(got["high"].as_f64().unwrap(), high, &format!("{what} high"));
}

#[test]
fn clustered_intervals_match_statsmodels() {
    let doc = fixture();
    let sets = doc["cluster"].as_array().unwrap();
    assert!(sets.len() >= 10);
    for set in sets {
        let name = set["name"].as_str().unwrap();
        let cases = set["cases"].as_array().unwrap();
        assert!(cases.len() >= 10, "{name}: at least 10 cases");
        let one_run = cases
            .iter()
            .all(|c| c["old"].as_array().unwrap().len() == 1 && c["new"].as_array().unwrap().len() == 1);
        // The same estimator whichever verdicts count (with one verdict a case they are the same).
        let rules: &[&str] = if one_run { &["mean", "last"] } else { &["mean"] };
        for repeats in rules {
            let what = format!("{name} (repeats {repeats})");
            let report = report_of(cases, &policy(set["confidence"].as_f64().unwrap(), repeats));
            let got = &report["stats"]["task"]["clustered"];
            let want = &set["expected"];
            if want.is_null() {
                assert!(got.is_null(), "{what}: {got}");
                assert!(
                    report["warnings"]
                        .as_array()
                        .unwrap()
                        .iter()
                        .any(|w| w.as_str().unwrap().contains("one cluster")),
                    "{what}: {}",
                    report["warnings"]
                );
                // The rules use the unclustered interval.
                assert!(report["decision"]["reason"].as_str().unwrap().contains(&format!(
                    "{:.3}",
                    report["stats"]["task"]["delta"]["low"].as_f64().unwrap()
                )));
                continue;
            }
            assert_eq!(got["clusters"], want["clusters"], "{what}");
            match (got["design_effect"].as_f64(), want["design_effect"].as_f64()) {
                (Some(g), Some(w)) => close(g, w, &format!("{what} design effect")),
                (g, w) => assert_eq!(g, w, "{what} design effect"),
            }
            assert_eq!(got["delta"]["method"], "cluster_robust_t", "{what}");
            check_interval(
                &got["delta"],
                &want["delta"],
                "estimate",
                (-1.0, 1.0),
                &format!("{what} delta"),
            );
            check_interval(&got["old"], &want["old"], "rate", (0.0, 1.0), &format!("{what} old"));
            check_interval(&got["new"], &want["new"], "rate", (0.0, 1.0), &format!("{what} new"));
            // The non-inferiority rule uses it.
            let low = got["delta"]["low"].as_f64().unwrap();
            assert!(
                report["decision"]["reason"]
                    .as_str()
                    .unwrap()
                    .contains(&format!("{low:.3}")),
                "{what}: {}",
                report["decision"]["reason"]
            );
        }
    }
}
