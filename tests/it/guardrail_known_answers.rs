//! Known answers for the guardrails, from numpy, scipy and statsmodels themselves:
//! `tests/fixtures/stats/guardrail-known-answers.json`, written by
//! `scripts/guardrail-known-answers.py` (which `scripts/test.sh` runs again in its venv to check
//! the file). Each case set's verdict records are written out as an audit log and two verdict
//! files, `deploy-gate evaluate` judges them with the set's policy, and its report's
//! `guardrails` must match: the counts, the old and new statistics and the change exactly (to
//! 1e-12), the paired t and Fieller intervals (scipy's `ttest_rel`, the cluster-robust
//! covariance from cluster sums, the roots of Fieller's quadratic) to 1e-9, the bootstrap's
//! bounds within the Monte-Carlo band scipy's own bootstrap gives (the script's docstring
//! justifies its width), the template p-values and Holm's adjusted ones (scipy's `ttest_1samp`,
//! statsmodels' `multipletests`) to 1e-9, and every outcome.

use crate::common::{s, tempdir, write};
use serde_json::{json, Value};
use std::path::Path;

fn fixture() -> Value {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/stats/guardrail-known-answers.json");
    serde_json::from_slice(&std::fs::read(path).unwrap()).unwrap()
}

/// Within `tol` (relative above 1); both null, or both numbers.
fn close(got: &Value, want: &Value, tol: f64, what: &str) {
    match (got.as_f64(), want.as_f64()) {
        (Some(g), Some(w)) => assert!(
            (g - w).abs() <= tol * w.abs().max(1.0),
            "{what}: deploy-gate {g:?}, Python {w:?} (off by {:e})",
            (g - w).abs()
        ),
        _ => assert!(
            got.is_null() && want.is_null(),
            "{what}: deploy-gate {got}, Python {want}"
        ),
    }
}

/// The report of a case set, as `deploy-gate evaluate` writes it from files.
fn report_of(set: &Value) -> Value {
    let (mut audit, mut old, mut new) = (String::new(), String::new(), String::new());
    for (i, c) in set["cases"].as_array().unwrap().iter().enumerate() {
        let id = format!("case-{i:04}");
        let mut stage = json!({"pipeline_id": id, "stage_id": "s", "stage_type": "llm", "input": format!("input {i}")});
        let mut done = json!({"pipeline_id": id, "verdict": "PASS", "is_complete": true, "error": null});
        if !c["template"].is_null() {
            stage["template_id"] = c["template"].clone();
            done["template_id"] = c["template"].clone();
        }
        audit += &format!("{stage}\n{done}\n");
        for (side, out) in [("old", &mut old), ("new", &mut new)] {
            for r in c[side].as_array().unwrap() {
                let mut r = r.clone();
                r["pipeline_id"] = json!(id);
                *out += &format!("{r}\n");
            }
        }
    }
    let dir = tempdir();
    let d = dir.path();
    let args = [
        "evaluate".to_owned(),
        "--audit".to_owned(),
        write(d, "audit.jsonl", &audit),
        "--old-verdicts".to_owned(),
        write(d, "old.jsonl", &old),
        "--new-verdicts".to_owned(),
        write(d, "new.jsonl", &new),
        "--policy".to_owned(),
        write(d, "policy.json", &set["policy"].to_string()),
        "--out".to_owned(),
        s(&d.join("report.json")),
    ];
    let o = crate::common::run(&args);
    assert!(
        matches!(o.status.code(), Some(0 | 3 | 4)),
        "{}: {}",
        set["name"],
        crate::common::text(&o)
    );
    serde_json::from_slice(&std::fs::read(d.join("report.json")).unwrap()).unwrap()
}

fn check_criterion(got: &Value, want: &Value, what: &str) {
    for key in [
        "metric",
        "statistic",
        "action",
        "limit_kind",
        "method",
        "n",
        "excluded",
        "min_cases",
    ] {
        assert_eq!(got[key], want[key], "{what}: {key}");
    }
    for key in ["limit", "old", "new", "change"] {
        close(&got[key], &want[key], 1e-12, &format!("{what}: {key}"));
    }
    match want["bands"].as_object() {
        // Means: the interval by formula.
        None => {
            for key in ["low", "high", "exceeded_low"] {
                close(&got[key], &want[key], 1e-9, &format!("{what}: {key}"));
            }
        }
        // Quantiles: each bootstrap bound within scipy's Monte-Carlo band.
        Some(bands) => {
            for key in ["low", "high", "exceeded_low"] {
                let g = got[key]
                    .as_f64()
                    .unwrap_or_else(|| panic!("{what}: {key} is {}", got[key]));
                let band = &bands[key];
                let (lo, hi) = (band[0].as_f64().unwrap(), band[1].as_f64().unwrap());
                assert!(
                    lo - 1e-12 * lo.abs().max(1.0) <= g && g <= hi + 1e-12 * hi.abs().max(1.0),
                    "{what}: {key} {g:?} outside scipy's band [{lo:?}, {hi:?}] (scipy's own bound {})",
                    want[key]
                );
            }
        }
    }
    assert_eq!(got["outcome"], want["outcome"], "{what}: outcome ({got})");
}

fn check_templates(got: &Value, want: &Value, what: &str) {
    for key in ["min_cases", "action", "tested", "untested", "outcome"] {
        assert_eq!(got[key], want[key], "{what}: template_regression {key}");
    }
    for key in ["max_drop", "alpha"] {
        close(
            &got[key],
            &want[key],
            1e-12,
            &format!("{what}: template_regression {key}"),
        );
    }
    let rows = got["templates"].as_array().unwrap();
    let wanted = want["templates"].as_array().unwrap();
    assert_eq!(rows.len(), wanted.len(), "{what}: templates tested");
    for w in wanted {
        let id = &w["template_id"];
        let g = rows
            .iter()
            .find(|r| &r["template_id"] == id)
            .unwrap_or_else(|| panic!("{what}: template {id} not in the report"));
        let what = format!("{what}: template {id}");
        assert_eq!(g["n"], w["n"], "{what}: n");
        assert_eq!(g["regressed"], w["regressed"], "{what}: regressed ({g})");
        for key in ["old", "new"] {
            close(&g[key], &w[key], 1e-12, &format!("{what}: {key}"));
        }
        for key in ["p_value", "adjusted_p"] {
            close(&g[key], &w[key], 1e-9, &format!("{what}: {key}"));
        }
    }
    // The report lists those that regressed first, then by adjusted p-value.
    let order: Vec<(bool, f64)> = rows
        .iter()
        .map(|r| (r["regressed"].as_bool().unwrap(), r["adjusted_p"].as_f64().unwrap()))
        .collect();
    assert!(
        order
            .windows(2)
            .all(|w| (w[0].0 && !w[1].0) || (w[0].0 == w[1].0 && w[0].1 <= w[1].1)),
        "{what}: {order:?}"
    );
}

#[test]
fn guardrails_match_numpy_scipy_and_statsmodels() {
    let doc = fixture();
    let sets = doc["sets"].as_array().unwrap();
    assert!(sets.len() >= 7);
    let (mut bootstrapped, mut methods, mut outcomes) =
        (0, std::collections::BTreeSet::new(), std::collections::BTreeSet::new());
    for set in sets {
        let name = set["name"].as_str().unwrap();
        let report = report_of(set);
        let got = &report["guardrails"];
        let want = &set["expected"];
        for key in ["blocking", "cases", "seed", "resamples"] {
            assert_eq!(got[key], want[key], "{name}: {key}");
        }
        for key in ["confidence", "adjusted_confidence"] {
            close(&got[key], &want[key], 1e-12, &format!("{name}: {key}"));
        }
        let criteria = got["criteria"].as_array().unwrap();
        let wanted = want["criteria"].as_array().unwrap();
        assert_eq!(criteria.len(), wanted.len(), "{name}: criteria");
        for (i, (g, w)) in criteria.iter().zip(wanted).enumerate() {
            check_criterion(
                g,
                w,
                &format!("{name}: criterion {i} ({} {})", w["statistic"], w["metric"]),
            );
            bootstrapped += usize::from(w["bands"].is_object());
            methods.insert(w["method"].as_str().unwrap().to_owned());
            outcomes.insert(w["outcome"].as_str().unwrap().to_owned());
        }
        match (got.get("template_regression"), want.get("template_regression")) {
            (Some(g), Some(w)) => check_templates(g, w, name),
            (None, None) => {}
            (g, w) => panic!("{name}: template_regression {g:?}, Python {w:?}"),
        }
        // The decision follows: a blocking criterion exceeded blocks.
        let blocked = wanted
            .iter()
            .any(|w| w["action"] == "block" && w["outcome"] == "exceeded")
            || want["template_regression"]["action"] == "block" && want["template_regression"]["outcome"] == "exceeded";
        if blocked {
            assert_eq!(
                report["decision"]["outcome"], "blocked",
                "{name}: {}",
                report["decision"]
            );
        }
    }
    // Every method and outcome is among the known answers.
    assert!(bootstrapped >= 8, "{bootstrapped} bootstrapped criteria");
    assert_eq!(
        methods.into_iter().collect::<Vec<_>>(),
        ["bootstrap", "fieller", "paired_t"]
    );
    assert_eq!(
        outcomes.into_iter().collect::<Vec<_>>(),
        ["exceeded", "not_shown", "within"]
    );
}
