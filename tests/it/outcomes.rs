//! The decision's outcome, repeated runs and clustered intervals through the CLI, on the
//! compatibility fixtures' inputs (132 cases in 10 templates of unequal size and 6 without a
//! template; a fifth of the cases run two or three times): an inconclusive non-inferiority
//! decision (exit 4, the cases that would settle it), signed (FAILED, no level) and applied (the
//! old model kept, "inconclusive"); every verdict of a case counted under `repeats: mean` in
//! every verdict-file format; the clusters and the templates' intervals.

use crate::common::*;
use deploy_gate::stats::normal_quantile;
use serde_json::Value;
use std::fs;
use std::path::{Path, PathBuf};

fn inputs() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/compat/inputs")
}

/// `evaluate` on the inputs with `new` as the new model's verdicts and `flags`: (exit code,
/// report, stderr).
fn evaluate(new: &str, flags: &[&str]) -> (Option<i32>, Value, String) {
    let dir = inputs();
    let mut args = strings(&[
        "evaluate",
        "--audit",
        &s(&dir.join("audit.jsonl")),
        "--old-verdicts",
        &s(&dir.join("old_verdicts.jsonl")),
        "--new-verdicts",
        &s(&dir.join(new)),
    ]);
    args.extend(strings(flags));
    let out = run(&args);
    let json = match flags.iter().position(|f| *f == "--out") {
        Some(i) => fs::read(flags[i + 1]).unwrap(),
        None => out.stdout.clone(),
    };
    let report = serde_json::from_slice(&json).unwrap_or_else(|e| panic!("{e}: {}", text(&out)));
    (out.status.code(), report, stderr(&out))
}

const NI: &[&str] = &["--mode", "non_inferiority", "--task-tol", "0.05"];

#[test]
fn an_inconclusive_decision_exits_4_and_says_how_many_cases_would_settle_it() {
    let (code, r, err) = evaluate("new_equal.jsonl", NI);
    assert_eq!(code, Some(4), "{err}");
    let d = &r["decision"];
    assert_eq!(
        (d["approved"].as_bool(), d["outcome"].as_str()),
        (Some(false), Some("inconclusive"))
    );
    // The clustered interval is the one the rule used: its bounds and the tolerance are named.
    let c = &r["stats"]["task"]["clustered"];
    let (low, high) = (
        c["delta"]["low"].as_f64().unwrap(),
        c["delta"]["high"].as_f64().unwrap(),
    );
    assert!(low <= -0.05 && high >= 0.0, "{c}");
    let needed = r["stats"]["task"]["sample_size"]["cases_needed"].as_u64().unwrap();
    assert!(needed > 138, "{needed}");
    assert_eq!(
        d["reason"],
        format!(
            "inconclusive: task non-inferiority not shown, nor a regression (interval {low:.3} to {high:.3}, tolerance 0.05: \
             lower bound <= -0.05, upper bound >= 0); a fresh fixed-size evaluation would need about {needed} cases \
             for the task comparison; adding cases to this one and deciding again raises the error rate, \
             sequential: true adds cases safely"
        )
    );
    assert!(err.contains("deploy-gate: INCONCLUSIVE — keep the old model"), "{err}");
    assert!(
        err.contains(&format!("  settle:     about {needed} case(s) would settle it")),
        "{err}"
    );
    assert!(err.contains("  clustered:  16 clusters (templates)"), "{err}");

    // The cases needed: the normal approximation at the observed discordance, times the design
    // effect when it is above 1 (here the templates' differences vary less than chance: below 1).
    let ss = &r["stats"]["task"]["sample_size"];
    let deff = c["design_effect"].as_f64().unwrap();
    let z = normal_quantile(0.975) + normal_quantile(0.8);
    let psi = ss["discordance"].as_f64().unwrap();
    assert_eq!(needed, (psi * deff.max(1.0) * z * z / (0.05 * 0.05)).ceil() as u64);
    // Unclustered, on the same cases: Newcombe's interval decides.
    let (code, plain, _) = evaluate("new_equal.jsonl", &[NI, &["--cluster", "none"]].concat());
    assert_eq!(code, Some(4));
    assert_eq!(plain["stats"]["task"]["clustered"], Value::Null);
    let newcombe = &plain["stats"]["task"]["delta"];
    assert!(plain["decision"]["reason"].as_str().unwrap().contains(&format!(
        "interval {:.3} to {:.3}",
        newcombe["low"].as_f64().unwrap(),
        newcombe["high"].as_f64().unwrap()
    )));

    // A true regression shown by the interval is blocked (exit 3), and a generous tolerance
    // approves (exit 0); the point rule is never inconclusive.
    let (code, worse, _) = evaluate("new_worse.jsonl", NI);
    assert_eq!(
        (code, worse["decision"]["outcome"].as_str()),
        (Some(3), Some("blocked"))
    );
    assert!(worse["decision"]["reason"]
        .as_str()
        .unwrap()
        .starts_with("blocked: task regression shown (upper bound -"));
    let (code, loose, _) = evaluate("new_equal.jsonl", &["--mode", "non_inferiority", "--task-tol", "0.3"]);
    assert_eq!(
        (code, loose["decision"]["outcome"].as_str()),
        (Some(0), Some("approved"))
    );
    let (code, point, _) = evaluate("new_equal.jsonl", &[]);
    assert_eq!(
        (code, point["decision"]["outcome"].as_str()),
        (Some(3), Some("blocked"))
    );
}

#[test]
fn the_summaries_show_an_inconclusive_decision() {
    let dir = tempdir();
    let (md, xml) = (dir.path().join("s.md"), dir.path().join("j.xml"));
    let (code, r, _) = evaluate(
        "new_equal.jsonl",
        &[NI, &["--markdown", &s(&md), "--junit", &s(&xml)]].concat(),
    );
    assert_eq!(code, Some(4));
    let md = fs::read_to_string(&md).unwrap();
    let needed = r["stats"]["task"]["sample_size"]["cases_needed"].to_string();
    assert!(
        md.starts_with("## deploy-gate: ⚠️ inconclusive — keep the old model"),
        "{md}"
    );
    assert!(
        md.contains(&format!("About **{needed}** cases would settle it")),
        "{md}"
    );
    assert!(md.contains("Clustered by template (16 clusters, design effect"), "{md}");
    let xml = fs::read_to_string(&xml).unwrap();
    assert!(
        xml.contains(r#"<property name="decision" value="inconclusive"/>"#),
        "{xml}"
    );
    assert!(
        xml.contains(&format!(r#"<property name="cases_needed" value="{needed}"/>"#)),
        "{xml}"
    );
    assert!(
        xml.contains(r#"<property name="clustered.clusters" value="16"/>"#),
        "{xml}"
    );
}

#[test]
fn a_signed_inconclusive_decision_is_failed_and_apply_keeps_the_old_model() {
    let dir = tempdir();
    let report = dir.path().join("report.json");
    let (code, _, _) = evaluate("new_equal.jsonl", &[NI, &["--out", &s(&report)]].concat());
    assert_eq!(code, Some(4));
    assert!(run(&["keygen", "--out", &s(&dir.path().join("reviewer"))])
        .status
        .success());
    let model = dir.path().join("agent-v2");
    fs::create_dir_all(&model).unwrap();
    fs::write(model.join("weights.bin"), "w").unwrap();
    let config = dir.path().join("config.yaml");
    let before = "default_model: models/agent-v1\nbackend: transformers\n";
    fs::write(&config, before).unwrap();
    let envelope = dir.path().join("decision.dsse.json");
    let out = run(&[
        "sign",
        &s(&report),
        "--key",
        &s(&dir.path().join("reviewer.key.pem")),
        "--model",
        "agent-v2",
        "--model-path",
        &s(&model),
        "--target",
        &s(&config),
        "--out",
        &s(&envelope),
    ]);
    assert!(out.status.success(), "{}", text(&out));
    assert!(
        stderr(&out).contains("signed an INCONCLUSIVE decision"),
        "{}",
        stderr(&out)
    );
    let env: Value = serde_json::from_slice(&fs::read(&envelope).unwrap()).unwrap();
    let statement: Value =
        serde_json::from_slice(&deploy_gate::attest::dsse::decode(env["payload"].as_str().unwrap()).unwrap()).unwrap();
    assert_eq!(statement["predicate"]["verificationResult"], "FAILED");
    assert_eq!(statement["predicate"]["verifiedLevels"], serde_json::json!([]));

    let public = s(&dir.path().join("reviewer.pub.pem"));
    let out = run(&[
        "verify",
        &s(&envelope),
        "--trusted-key",
        &public,
        "--model-path",
        &s(&model),
        "--target",
        &s(&config),
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let summary: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(
        (summary["verification_result"].as_str(), summary["outcome"].as_str()),
        (Some("FAILED"), Some("inconclusive"))
    );
    assert!(
        stderr(&out).contains("valid — FAILED, inconclusive"),
        "{}",
        stderr(&out)
    );

    let ledger = dir.path().join("ledger.jsonl");
    let out = run(&[
        "apply",
        &s(&envelope),
        "--trusted-key",
        &public,
        "--model-path",
        &s(&model),
        "--config",
        &s(&config),
        "--ledger",
        &s(&ledger),
    ]);
    assert_eq!(out.status.code(), Some(3), "{}", text(&out));
    assert!(
        stderr(&out).contains("KEPT the old model (decision inconclusive) — inconclusive: task"),
        "{}",
        stderr(&out)
    );
    assert_eq!(fs::read_to_string(&config).unwrap(), before, "the config is untouched");
    let entry: Value = serde_json::from_str(fs::read_to_string(&ledger).unwrap().lines().last().unwrap()).unwrap();
    assert_eq!(entry["result"], "kept_old");
}

/// Each case's (pipeline, old runs, old passes, new runs, new passes).
fn runs(r: &Value) -> Vec<(String, u64, u64, u64, u64)> {
    r["cases"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| {
            let n = |k: &str| c[k].as_u64().unwrap_or_else(|| panic!("{k} in {c}"));
            (
                c["pipeline_id"].to_string(),
                n("old_runs"),
                n("old_passes"),
                n("new_runs"),
                n("new_passes"),
            )
        })
        .collect()
}

#[test]
fn repeats_mean_counts_every_verdict_in_every_format() {
    let mean = ["--repeats", "mean", "--cluster", "none"];
    let (_, jsonl, _) = evaluate("new_equal.jsonl", &mean);
    let want = runs(&jsonl);
    // Every record of the file is one run of a test case.
    let total: u64 = want.iter().map(|r| r.3).sum();
    assert_eq!(total, jsonl["verdicts"]["new"]["records"].as_u64().unwrap());
    assert_eq!(jsonl["verdicts"]["new"]["runs"].as_u64(), Some(total));
    assert!(want.iter().any(|r| r.3 == 3) && want.iter().any(|r| r.3 == 1));
    for file in ["new_equal.array.json", "new_equal.map.json", "new_equal.csv"] {
        let (_, r, _) = evaluate(file, &mean);
        assert_eq!(runs(&r), want, "{file}");
        assert_eq!(r["stats"]["task"], jsonl["stats"]["task"], "{file}");
        assert_eq!(r["decision"], jsonl["decision"], "{file}");
    }
    // The pass rate is the mean of the case scores; McNemar has no place; repeated verdicts
    // are not warned about; the difference's interval is the paired t.
    let score = |runs: u64, passes: u64| if runs == 0 { 0.0 } else { passes as f64 / runs as f64 };
    let n = want.len() as f64;
    let old_mean = want.iter().map(|r| score(r.1, r.2)).sum::<f64>() / n;
    let new_mean = want.iter().map(|r| score(r.3, r.4)).sum::<f64>() / n;
    let task = &jsonl["stats"]["task"];
    assert!((task["old"]["rate"].as_f64().unwrap() - old_mean).abs() < 1e-12);
    assert!((task["new"]["rate"].as_f64().unwrap() - new_mean).abs() < 1e-12);
    assert_eq!(
        jsonl["decision"]["task_new"].as_f64().unwrap(),
        (new_mean * 1e4).round() / 1e4,
        "rounded to 4 (no tie here)"
    );
    assert_eq!(task["mcnemar"], Value::Null);
    assert_eq!(task["delta"]["method"], "paired_t");
    assert!(
        !jsonl["warnings"].to_string().contains("conflicting"),
        "{}",
        jsonl["warnings"]
    );
    // Statuses compare the scores.
    for (c, r) in jsonl["cases"].as_array().unwrap().iter().zip(&want) {
        let (o, w) = (score(r.1, r.2), score(r.3, r.4));
        let status = if w < o {
            "regressed"
        } else if w > o {
            "improved"
        } else if o >= 0.5 {
            "both_pass"
        } else {
            "both_fail"
        };
        assert_eq!(c["status"], status, "{c}");
    }

    // The last verdict counts by default: no runs, McNemar, the conflicting duplicates named.
    let (_, last, _) = evaluate("new_equal.jsonl", &[]);
    assert!(last["cases"][0].get("new_runs").is_none());
    assert!(last["stats"]["task"]["mcnemar"].is_object());
    assert!(last["warnings"].to_string().contains("conflicting duplicate verdicts"));
}

#[test]
fn clusters_are_templates_and_each_case_without_one() {
    let (_, r, _) = evaluate("new_equal.jsonl", &[]);
    let c = &r["stats"]["task"]["clustered"];
    // 10 templates, and 6 cases without a template, each a cluster of its own.
    assert_eq!(c["clusters"], 16);
    assert_eq!(c["delta"]["method"], "cluster_robust_t");
    assert!(c["design_effect"].as_f64().unwrap() > 0.0);
    for side in ["old", "new"] {
        let (low, high) = (c[side]["low"].as_f64().unwrap(), c[side]["high"].as_f64().unwrap());
        assert!(
            (0.0..=1.0).contains(&low) && (0.0..=1.0).contains(&high) && low <= high,
            "{c}"
        );
    }
    // Every template row has its interval of new − old.
    for t in r["templates"].as_array().unwrap() {
        assert_eq!(t["interval"]["method"], "newcombe", "{t}");
        assert!(
            t["interval"]["low"].as_f64().unwrap() <= t["delta"].as_f64().unwrap() + 1e-9,
            "{t}"
        );
    }
    assert_eq!(r["policy"]["cluster"], "template");
}
