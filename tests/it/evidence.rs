//! What a decision rests on: failing closed on missing evidence (too few cases answered by both
//! models; more cases lacking a verdict than `max_missing`), the report's `evidence` object, a
//! sequential report's figures over the cases the rule used (checked against figures computed
//! here from the verdict files alone), `not_run`, `sequential.min_units` against a direct
//! computation, and the earlier rules (`--rules before`).

use crate::common::*;
use deploy_gate::stats::BettingCs;
use serde_json::Value;
use sha2::{Digest, Sha256};
use std::collections::{BTreeMap, HashMap};

/// A test set of `n` cases in `templates` templates (case `i` in template `i % templates`), every
/// expected verdict `PASS`, and two verdict files answering the cases `answers` says, with the
/// verdict `pass` says.
struct Files {
    dir: tempfile::TempDir,
    n: usize,
}

fn id(i: usize) -> String {
    format!("c{i:05}")
}

impl Files {
    fn new(
        n: usize,
        templates: usize,
        answers: impl Fn(usize) -> (bool, bool),
        pass: impl Fn(usize) -> (bool, bool),
    ) -> Files {
        let dir = tempdir();
        let (mut audit, mut old, mut new) = (String::new(), String::new(), String::new());
        for i in 0..n {
            let id = id(i);
            let tpl = format!("t{:03}", i % templates);
            audit.push_str(&format!(
                "{{\"pipeline_id\": \"{id}\", \"stage_id\": \"s\", \"stage_type\": \"llm\", \"input\": \"in {id}\", \"output\": {{}}, \"template_id\": \"{tpl}\"}}\n\
                 {{\"pipeline_id\": \"{id}\", \"verdict\": \"PASS\", \"is_complete\": true, \"template_id\": \"{tpl}\"}}\n"
            ));
            let (a_old, a_new) = answers(i);
            let (p_old, p_new) = pass(i);
            let v = |p: bool| if p { "PASS" } else { "FAIL" };
            if a_old {
                old.push_str(&format!(
                    "{{\"pipeline_id\": \"{id}\", \"verdict\": \"{}\"}}\n",
                    v(p_old)
                ));
            }
            if a_new {
                new.push_str(&format!(
                    "{{\"pipeline_id\": \"{id}\", \"verdict\": \"{}\"}}\n",
                    v(p_new)
                ));
            }
        }
        std::fs::write(dir.path().join("audit.jsonl"), audit).unwrap();
        std::fs::write(dir.path().join("old.jsonl"), old).unwrap();
        std::fs::write(dir.path().join("new.jsonl"), new).unwrap();
        Files { dir, n }
    }

    fn path(&self, name: &str) -> String {
        s(&self.dir.path().join(name))
    }

    /// `evaluate` with `flags` (and `--max-samples none`): (exit code, report, stderr).
    fn evaluate(&self, flags: &[&str]) -> (Option<i32>, Value, String) {
        let mut a = strings(&[
            "evaluate",
            "--audit",
            &self.path("audit.jsonl"),
            "--old-verdicts",
            &self.path("old.jsonl"),
            "--new-verdicts",
            &self.path("new.jsonl"),
            "--max-samples",
            "none",
        ]);
        a.extend(strings(flags));
        let out = run(&a);
        let json = match flags.iter().position(|f| *f == "--out") {
            Some(i) => std::fs::read(flags[i + 1]).unwrap(),
            None => out.stdout.clone(),
        };
        let report = serde_json::from_slice(&json).unwrap_or_else(|e| panic!("{e}: {}", text(&out)));
        (out.status.code(), report, stderr(&out))
    }

    /// A verdict file as a map from id to whether it passes.
    fn verdicts(&self, name: &str) -> HashMap<String, bool> {
        jsonl(&self.dir.path().join(name))
            .into_iter()
            .map(|r| (r["pipeline_id"].as_str().unwrap().to_owned(), r["verdict"] == "PASS"))
            .collect()
    }
}

/// A pseudo-random draw in [0, 1) from a case's index and a salt.
fn draw(i: usize, salt: u64) -> f64 {
    let mut x = (i as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ salt.wrapping_mul(0xD1B5_4A32_D192_ED03);
    x ^= x >> 31;
    x = x.wrapping_mul(0xBF58_476D_1CE4_E5B9);
    x ^= x >> 29;
    (x >> 11) as f64 / (1u64 << 53) as f64
}

/// Both models about as good (80%).
fn about_equal(i: usize) -> (bool, bool) {
    (draw(i, 1) < 0.8, draw(i, 2) < 0.8)
}

#[test]
fn four_of_two_hundred_answered_is_insufficient_and_blocks_by_default() {
    let f = Files::new(200, 20, |i| (i < 4, i < 4), |_| (true, true));
    let (code, r, err) = f.evaluate(&[]);
    assert_eq!(code, Some(3), "{err}");
    assert_eq!(
        r["decision"]["reason"],
        "blocked: insufficient evidence (4 of 200 test cases answered by both models < min_samples 20; old 196 \
         missing, new 196 missing)"
    );
    assert_eq!(r["decision"]["outcome"], "blocked");
    assert_eq!(r["decision"]["approved"], false);
    let e = &r["evidence"];
    assert_eq!(
        (
            e["test_cases"].as_u64(),
            e["answered"].as_u64(),
            e["missing"]["old"].as_u64(),
            e["missing"]["new"].as_u64(),
            e["rests_on"].as_u64(),
            e["over"].as_str(),
            e["max_missing"].as_f64()
        ),
        (
            Some(200),
            Some(4),
            Some(196),
            Some(196),
            Some(4),
            Some("test_set"),
            Some(0.05)
        )
    );
    assert!(e.get("not_run").is_none(), "{e}");
    assert!(
        err.starts_with("deploy-gate: BLOCKED — keep the old model (rests on 4 of 200 test cases)\n"),
        "{err}"
    );
    // Under `on_insufficient: approve` the rule decides as the reference does (equal failures:
    // no regression).
    let (code, r, _) = f.evaluate(&["--on-insufficient", "approve"]);
    assert_eq!(code, Some(0));
    assert_eq!(r["decision"]["reason"], "approved: no regression on task or trajectory");
    // The earlier rules approve, as the previous build did.
    let (code, r, _) = f.evaluate(&["--rules", "before"]);
    assert_eq!((code, r["decision"]["outcome"].as_str()), (Some(0), Some("approved")));
    assert!(r.get("evidence").is_none());
}

#[test]
fn ten_percent_missing_is_inconclusive_naming_the_counts() {
    let f = Files::new(200, 20, |i| (i >= 10, !(10..20).contains(&i)), about_equal);
    let (code, r, err) = f.evaluate(&["--task-tol", "0.2"]);
    assert_eq!(code, Some(4), "{err}");
    assert_eq!(
        r["decision"]["reason"],
        "inconclusive: missing verdicts (old 10 missing, new 10 missing of 200 test cases: 20 cases (10.0%) lack a \
         verdict, more than max_missing 5%)"
    );
    assert!(
        err.starts_with(
            "deploy-gate: INCONCLUSIVE — keep the old model; too many test cases lack a verdict (rests on 180 of 200 \
             test cases)\n"
        ),
        "{err}"
    );
    assert!(
        err.contains("  verdicts:   old 10 missing, 0 errored; new 10 missing, 0 errored\n"),
        "{err}"
    );
    // A larger max_missing (a percentage or a fraction, flag or policy file) lets the rule decide.
    let (code, r, _) = f.evaluate(&["--task-tol", "0.2", "--max-missing", "15%"]);
    assert_eq!(code, Some(0), "{}", r["decision"]);
    assert_eq!(r["policy"]["max_missing"], 0.15);
    assert_eq!(r["evidence"]["max_missing"], 0.15);
    let policy = write(f.dir.path(), "policy.json", r#"{"max_missing": 0.1}"#);
    let (code, _, _) = f.evaluate(&["--task-tol", "0.2", "--policy", &policy]);
    assert_eq!(code, Some(0), "10% is not more than 10%");
    // A bad value names the field.
    let out = run(&["policy", "--max-missing", "120%"]);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    assert!(
        stderr(&out).contains("max_missing must be a fraction between 0 and 1"),
        "{}",
        text(&out)
    );
    let bad = write(f.dir.path(), "bad.json", r#"{"max_missing": "lots"}"#);
    let out = run(&["policy", "--policy", &bad]);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    assert!(
        stderr(&out).contains("bad.json") && stderr(&out).contains("max_missing"),
        "{}",
        text(&out)
    );
}

#[test]
fn two_percent_missing_decides_as_before() {
    let f = Files::new(200, 20, |i| (i != 3 && i != 7, i != 11 && i != 19), about_equal);
    for flags in [
        &["--task-tol", "0.2"][..],
        &["--mode", "non_inferiority", "--task-tol", "0.2"],
    ] {
        let (code, now, err) = f.evaluate(flags);
        let mut before_flags = flags.to_vec();
        before_flags.extend(["--rules", "before"]);
        let (code_before, before, _) = f.evaluate(&before_flags);
        assert_eq!(code, code_before);
        assert_eq!(now["decision"], before["decision"], "{err}");
        assert_eq!(
            (
                now["evidence"]["missing"]["old"].as_u64(),
                now["evidence"]["missing"]["new"].as_u64()
            ),
            (Some(2), Some(2))
        );
        assert!(err.contains("(rests on 196 of 200 test cases)"), "{err}");
    }
}

#[test]
fn a_fully_answered_fixed_report_is_the_same_under_both_rules_and_has_no_evidence_object() {
    let f = Files::new(300, 30, |_| (true, true), about_equal);
    for flags in [
        &[][..],
        &["--mode", "non_inferiority", "--task-tol", "0.1"],
        &["--cluster", "none", "--task-tol", "0.05"],
    ] {
        let dir = tempdir();
        let (a, b) = (dir.path().join("a.json"), dir.path().join("b.json"));
        let mut args = strings(flags);
        args.extend(strings(&["--out", &s(&a)]));
        let refs: Vec<&str> = args.iter().map(String::as_str).collect();
        let (_, _, err) = f.evaluate(&refs);
        let mut args_before = args.clone();
        args_before[args.len() - 1] = s(&b);
        args_before.extend(strings(&["--rules", "before"]));
        let refs: Vec<&str> = args_before.iter().map(String::as_str).collect();
        f.evaluate(&refs);
        let (a, b) = (std::fs::read(&a).unwrap(), std::fs::read(&b).unwrap());
        assert!(a == b, "{}", diff(&b, &a));
        let r: Value = serde_json::from_slice(&a).unwrap();
        assert!(r.get("evidence").is_none() && r["policy"].get("max_missing").is_none());
        assert!(err.contains("(rests on 300 of 300 test cases)"), "{err}");
    }
}

/// The rank of a case in the seed's order, computed here from its definition
/// (docs/statistics.md: the SHA-256 of `deploy-gate/sequential-order/v1:{seed}:{key}`).
fn seed_order(n: usize, seed: u64) -> Vec<usize> {
    let mut idx: Vec<usize> = (0..n).collect();
    idx.sort_by_key(|&i| Sha256::digest(format!("deploy-gate/sequential-order/v1:{seed}:{}", id(i))).to_vec());
    idx
}

#[test]
fn a_sequential_decision_that_stopped_early_speaks_of_the_cases_used() {
    // 3,000 cases in 60 templates; a run asked the first 400 in the seed's order, both models
    // answering them; the old model passes 80%, the new one 92%.
    let n = 3000;
    let order = seed_order(n, 0);
    let mut asked = vec![false; n];
    for &i in &order[..400] {
        asked[i] = true;
    }
    let f = Files::new(
        n,
        60,
        |i| (asked[i], asked[i]),
        |i| (draw(i, 3) < 0.8, draw(i, 4) < 0.92),
    );
    let (code, r, err) = f.evaluate(&[
        "--mode",
        "non_inferiority",
        "--task-tol",
        "0.05",
        "--cluster",
        "none",
        "--sequential",
    ]);
    assert_eq!(code, Some(0), "{err}");
    let q = &r["sequential"];
    let used = q["used"].as_u64().unwrap() as usize;
    assert_eq!(q["stopped"], "approved");
    assert!(used < 400 && q["available"] == 400, "{q}");
    // The stopping look is recorded.
    let looks: Vec<u64> = q["looks"]["n"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_u64().unwrap())
        .collect();
    assert!(looks.contains(&(used as u64)), "{looks:?}");

    // The used cases: the report's case list, which must be the first `used` asked in the order.
    let listed: Vec<String> = r["cases"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["pipeline_id"].as_str().unwrap().to_owned())
        .collect();
    let mut want: Vec<usize> = order[..used].to_vec();
    want.sort_unstable();
    assert_eq!(listed, want.iter().map(|&i| id(i)).collect::<Vec<_>>());

    // Figures computed here from the verdict files over those cases.
    let (old, new) = (f.verdicts("old.jsonl"), f.verdicts("new.jsonl"));
    let (mut old_pass, mut new_pass, mut regressed, mut improved) = (0usize, 0usize, 0u64, 0u64);
    let mut by_template: BTreeMap<String, (usize, usize, usize)> = BTreeMap::new();
    for pid in &listed {
        let (o, nw) = (old[pid], new[pid]);
        old_pass += usize::from(o);
        new_pass += usize::from(nw);
        regressed += u64::from(o && !nw);
        improved += u64::from(!o && nw);
        let i: usize = pid[1..].parse().unwrap();
        let row = by_template.entry(format!("t{:03}", i % 60)).or_default();
        row.0 += 1;
        row.1 += usize::from(o);
        row.2 += usize::from(nw);
    }
    let (po, pn) = (old_pass as f64 / used as f64, new_pass as f64 / used as f64);
    let d = &r["decision"];
    near(d["task_old"].as_f64().unwrap(), po);
    near(d["task_new"].as_f64().unwrap(), pn);
    near(d["task_delta"].as_f64().unwrap(), pn - po);
    assert_eq!(d["num_cases"], 3000, "the test set's size, the reference's field");
    near(r["comparison"]["old_score"].as_f64().unwrap(), po);
    near(r["comparison"]["new_score"].as_f64().unwrap(), pn);
    assert_eq!(r["comparison"]["num_cases"].as_u64(), Some(used as u64));
    let m = &r["stats"]["task"]["mcnemar"];
    assert_eq!((m["b"].as_u64(), m["c"].as_u64()), (Some(regressed), Some(improved)));
    assert_eq!(r["verdicts"]["old"]["passed"].as_u64(), Some(old_pass as u64));
    assert_eq!(r["verdicts"]["new"]["passed"].as_u64(), Some(new_pass as u64));
    assert_eq!(r["verdicts"]["old"]["missing"], 0);
    let rows = r["templates"].as_array().unwrap();
    assert_eq!(rows.len(), by_template.len());
    for row in rows {
        let (cases, o, nw) = by_template[row["template_id"].as_str().unwrap()];
        assert_eq!(row["n"].as_u64(), Some(cases as u64), "{row}");
        near(row["old_pass_rate"].as_f64().unwrap(), o as f64 / cases as f64);
        near(row["new_pass_rate"].as_f64().unwrap(), nw as f64 / cases as f64);
    }

    // The evidence: not run are the cases never asked; nobody is missing.
    let e = &r["evidence"];
    let never_asked = asked.iter().filter(|a| !**a).count() as u64;
    assert_eq!(e["not_run"].as_u64(), Some(never_asked));
    assert_eq!(
        (e["missing"]["old"].as_u64(), e["missing"]["new"].as_u64()),
        (Some(0), Some(0))
    );
    assert_eq!(
        (e["answered"].as_u64(), e["rests_on"].as_u64()),
        (Some(400), Some(used as u64))
    );
    assert_eq!(e["over"], "used");
    let warnings = r["warnings"].as_array().unwrap();
    assert!(warnings.iter().any(|w| w
        == &Value::String(format!(
            "not run: {never_asked} test case(s) neither model answered (the sequential rule stopped first); they \
             count for neither model"
        ))));
    assert!(
        !warnings
            .iter()
            .any(|w| w.as_str().unwrap().contains("counted as failed")),
        "{warnings:?}"
    );

    // The summary: what it rests on, figures over the cases used, no "missing" for the not run.
    assert!(
        err.starts_with(&format!(
            "deploy-gate: APPROVED — deploy the new model (rests on {used} of 3,000 test cases)\n"
        )),
        "{err}"
    );
    assert!(
        err.contains(&format!(
            "(Δ {:+.4}, tolerance 0.05) over the {used} cases used",
            d["task_delta"].as_f64().unwrap()
        )),
        "{err}"
    );
    assert!(err.contains("  descriptive: new − old"), "{err}");
    assert!(err.contains("descriptive, not the decision's evidence"), "{err}");
    assert!(
        err.contains("  verdicts:   old 0 missing, 0 errored; new 0 missing, 0 errored"),
        "{err}"
    );
    assert!(
        err.contains(&format!("  not run:    {} test case(s)", grouped(never_asked))),
        "{err}"
    );
    assert!(!err.contains(&format!("{never_asked} missing")), "{err}");
}

/// A report's figure rounded to 4 decimals against one computed here, unrounded.
fn near(reported: f64, computed: f64) {
    assert!(
        (reported - computed).abs() <= 0.5e-4 + 1e-12,
        "reported {reported}, computed {computed}"
    );
}

fn grouped(n: u64) -> String {
    let d = n.to_string();
    let mut out = String::new();
    for (i, c) in d.chars().enumerate() {
        if i > 0 && (d.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// The first look at which the betting confidence sequence fed `x` (on its [0, 1] scale) every
/// time has its lower bound of the mean difference above `−tolerance` (`x` = 1) or its upper
/// bound below 0 (`x` = 0): found here from the bounds themselves.
fn first_crossing(x: f64, tolerance: f64, confidence: f64) -> usize {
    let mut cs = BettingCs::new(1.0 - confidence);
    for n in 1..=100_000 {
        cs.push(x);
        let (l, u) = cs.bounds();
        let crossed = if x > 0.5 {
            2.0 * l - 1.0 > -tolerance
        } else {
            2.0 * u - 1.0 < 0.0
        };
        if crossed {
            return n;
        }
    }
    panic!("no crossing");
}

/// `evaluate` of `templates` templates of 2 cases under template units at `confidence`:
/// (min_units, warnings, stderr).
fn template_run(templates: usize, confidence: &str, cluster: &str) -> (Value, Vec<String>, String) {
    let f = Files::new(templates * 2, templates, |_| (true, true), about_equal);
    let (_, r, err) = f.evaluate(&[
        "--mode",
        "non_inferiority",
        "--task-tol",
        "0.05",
        "--sequential",
        "--confidence",
        confidence,
        "--cluster",
        cluster,
        "--min-samples",
        "1",
    ]);
    let warnings = r["warnings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|w| w.as_str().unwrap().to_owned())
        .collect();
    (r["sequential"]["min_units"].clone(), warnings, err)
}

#[test]
fn min_units_under_template_units_matches_a_direct_computation_and_warns_only_where_it_should() {
    let tail = "(cluster: none decides on cases: docs/statistics.md)";
    for (confidence, c) in [("0.95", 0.95), ("0.9999", 0.9999)] {
        let direct = first_crossing(1.0, 0.05, c).min(first_crossing(0.0, 0.05, c));
        for templates in [40, 400, direct + direct / 2, direct - 1] {
            let (min_units, warnings, err) = template_run(templates, confidence, "template");
            assert_eq!(
                min_units.as_u64(),
                Some(direct as u64),
                "{templates} templates at {confidence}"
            );
            let little = format!(
                "sequential: {templates} templates: no decision is possible before {direct}; the run will likely ask \
                 most cases {tail}"
            );
            let cannot = format!(
                "sequential: {templates} templates: no decision is possible before {direct}; the run cannot decide \
                 and will ask every case {tail}"
            );
            let want: Vec<&String> = if templates < direct {
                vec![&cannot]
            } else if 2 * direct > templates {
                vec![&little]
            } else {
                vec![]
            };
            let got: Vec<&String> = warnings.iter().filter(|w| w.starts_with("sequential:")).collect();
            assert_eq!(got, want, "{templates} templates at {confidence}");
            assert!(
                err.contains(&format!(
                    "  min units:  {direct} of {templates} templates before any decision is possible"
                )),
                "{err}"
            );
        }
        // Under `cluster: none` the units are cases: no warning, whatever their number.
        let (_, warnings, _) = template_run(direct - 1, confidence, "none");
        assert!(!warnings.iter().any(|w| w.starts_with("sequential:")), "{warnings:?}");
    }
    // At the default confidence 40 templates leave room; at 0.9999 they do not.
    let (m, w, _) = template_run(40, "0.95", "template");
    assert!(m.as_u64().unwrap() * 2 <= 40 && !w.iter().any(|w| w.starts_with("sequential:")));
    let (m, w, _) = template_run(40, "0.9999", "template");
    assert!(m.as_u64().unwrap() * 2 > 40 && w.iter().any(|w| w.starts_with("sequential: 40 templates")));
}

#[test]
fn the_stopping_look_is_recorded_when_the_budget_runs_out_past_the_thinning() {
    // 2,000 cases, new and old equal: the budget is spent with neither bound crossed.
    let f = Files::new(2000, 2000, |_| (true, true), |i| (draw(i, 5) < 0.8, draw(i, 6) < 0.8));
    let (code, r, _) = f.evaluate(&[
        "--mode",
        "non_inferiority",
        "--task-tol",
        "0.01",
        "--cluster",
        "none",
        "--sequential",
    ]);
    assert_eq!(code, Some(4));
    let q = &r["sequential"];
    assert_eq!(
        (q["stopped"].as_str(), q["used"].as_u64()),
        (Some("budget"), Some(2000))
    );
    let looks = &q["looks"];
    assert_eq!(looks["n"].as_array().unwrap().last(), Some(&Value::from(2000)));
    assert_eq!(looks["lower"].as_array().unwrap().last(), Some(&q["lower"]));
    assert_eq!(looks["upper"].as_array().unwrap().last(), Some(&q["upper"]));
    // The earlier rules recorded the thinned looks only.
    let (_, before, _) = f.evaluate(&[
        "--mode",
        "non_inferiority",
        "--task-tol",
        "0.01",
        "--cluster",
        "none",
        "--sequential",
        "--rules",
        "before",
    ]);
    let n = before["sequential"]["looks"]["n"].as_array().unwrap();
    assert_ne!(n.last(), Some(&Value::from(2000)), "the case this guards against");
    assert!(before["sequential"].get("min_units").is_none());
    let _ = f.n;
}
