//! The diff's rules on small reports written here: ids, outcomes, flips, templates, policy,
//! inputs, signed decisions, and the bytes.

use super::*;
use crate::attest::{self, keys, Claim, Limits};
use serde_json::{json, Value};

/// A case: id and template as JSON text, pass/fail and verdicts per model.
struct C(
    &'static str,
    &'static str,
    bool,
    bool,
    Option<&'static str>,
    Option<&'static str>,
);

/// A report with only what a diff reads (a report has more; unknown fields are ignored).
fn report(cases: &[C], approved: bool, policy: Value) -> Value {
    let cases: Vec<Value> = cases
        .iter()
        .map(|c| {
            let mut v: Value = serde_json::from_str(&format!(
                r#"{{"pipeline_id": {}, "template_id": {}, "expected": "PASS", "status": "both_pass"}}"#,
                c.0, c.1
            ))
            .unwrap();
            v["old_pass"] = json!(c.2);
            v["new_pass"] = json!(c.3);
            v["old_verdict"] = json!(c.4);
            v["new_verdict"] = json!(c.5);
            v
        })
        .collect();
    let mut p = crate::policy::GatePolicy::default().to_value();
    for (k, v) in policy.as_object().unwrap() {
        p[k] = v.clone();
    }
    json!({
        "schema": "deploy-gate/report/v1",
        "tool": {"name": "deploy-gate", "version": "0.1.0"},
        "policy": p,
        "inputs": [{"role": "audit", "name": "audit.jsonl", "bytes": 1, "sha256": "a".repeat(64)},
                   {"role": "old_verdicts", "name": "o.jsonl", "bytes": 1, "sha256": "b".repeat(64)},
                   {"role": "new_verdicts", "name": "n.jsonl", "bytes": 1, "sha256": "c".repeat(64)}],
        "decision": {"approved": approved, "reason": if approved { "approved: x" } else { "blocked: y" },
                     "task_delta": 0.0, "num_cases": cases.len()},
        "stats": {"confidence": 0.95, "task": {"delta": {"estimate": 0.0, "low": -0.1, "high": 0.1, "method": "newcombe"}}},
        "cases": cases,
        "templates": [{"template_id": "t", "n": 1, "old_pass_rate": 1.0, "new_pass_rate": 1.0, "delta": 0.0}],
    })
}

/// The report's JSON text with raw ids kept (`Value` would make a wide integer a float).
fn text(v: &Value) -> String {
    serde_json::to_string_pretty(v).unwrap()
}

fn read(name: &str, v: &Value) -> Evaluation {
    read_report(name, text(v).as_bytes()).unwrap()
}

fn problem(v: &str) -> Problem {
    read_report("r.json", v.as_bytes()).unwrap_err().problem
}

#[test]
fn a_numeric_id_and_its_string_are_two_cases_and_wide_integers_keep_their_digits() {
    let wide = "123456789012345678901234567890";
    let before = text(&report(
        &[
            C("5", r#""t""#, true, true, Some("PASS"), Some("PASS")),
            C(r#""5""#, r#""t""#, true, true, Some("PASS"), Some("PASS")),
        ],
        true,
        json!({}),
    ))
    .replace("\"pipeline_id\": 5,", &format!("\"pipeline_id\": {wide},"));
    let after = text(&report(
        &[C("5", r#""t""#, true, false, Some("PASS"), Some("FAIL"))],
        true,
        json!({}),
    ))
    .replace("\"pipeline_id\": 5,", &format!("\"pipeline_id\": {wide},"));
    let (b, a) = (
        read_report("b", before.as_bytes()).unwrap(),
        read_report("a", after.as_bytes()).unwrap(),
    );
    assert!(b.cases[0].id.numeric && &*b.cases[0].id.text == wide);
    let d = diff(&b, &a).unwrap();
    assert_eq!(d.cases.common, 1);
    assert_eq!(d.cases.only_before.len(), 1);
    assert_eq!(d.cases.only_before[0].to_json(), r#""5""#);
    let json = d.to_json();
    assert!(json.contains(&format!("\"pipeline_id\": {wide},")), "{json}");
    assert_eq!(id_label(&d.cases.flips[0].pipeline_id), wide);
    assert_eq!(
        id_label(&d.cases.only_before[0]),
        r#""5""#,
        "a string that reads as an integer is quoted"
    );
    // A string id that is not integer text is shown as it is.
    let id = PipelineId {
        text: "abc".into(),
        numeric: false,
    };
    assert_eq!(id_label(&id), "abc");
}

#[test]
fn ids_that_no_report_writes_are_refused_with_their_place() {
    for bad in ["5.0", "true", "[1]", "{}", "null", "-0", "1e3"] {
        let r = text(&report(&[C(bad, r#""t""#, true, true, None, None)], true, json!({})));
        match problem(&r) {
            Problem::Value { place, message } => {
                assert_eq!(place, "cases[0].pipeline_id");
                assert!(message.contains("is not a pipeline id"), "{message}");
            }
            other => panic!("{bad}: {other:?}"),
        }
    }
}

#[test]
fn outcomes_come_from_the_report_or_from_approved() {
    let mut r = report(&[], false, json!({}));
    assert_eq!(read("r", &r).decision.outcome(), "blocked");
    r["decision"]["approved"] = json!(true);
    assert_eq!(read("r", &r).decision.outcome(), "approved");
    r["decision"]["approved"] = json!(false);
    r["decision"]["outcome"] = json!("inconclusive");
    let e = read("r", &r);
    assert_eq!(e.decision.outcome(), "inconclusive");
    let d = diff(&read("b", &report(&[], false, json!({}))), &e).unwrap();
    assert!(d.changed());
    assert_eq!(
        (d.decision.before.as_str(), d.decision.after.as_str()),
        ("blocked", "inconclusive")
    );
    // The side keeps the report's own outcome; one without it writes none.
    assert!(d.to_json().contains("\"outcome\": \"inconclusive\""));
    assert_eq!(d.to_json().matches("\"outcome\"").count(), 1);
    // A contradiction, or an outcome no build writes, is refused.
    r["decision"]["outcome"] = json!("approved");
    assert!(matches!(problem(&text(&r)), Problem::Value { place, .. } if place == "decision.outcome"));
    r["decision"]["outcome"] = json!("maybe");
    assert!(matches!(problem(&text(&r)), Problem::Value { place, .. } if place == "decision.outcome"));
}

#[test]
fn flips_are_counted_per_model_and_sorted_pass_to_fail_first_then_by_id() {
    let before = report(
        &[
            C(r#""b""#, r#""t1""#, true, true, Some("PASS"), Some("PASS")),
            C(r#""a""#, r#""t1""#, true, false, Some("PASS"), Some("FAIL")),
            C(r#""c""#, r#""t2""#, false, true, Some("no"), Some("PASS")),
            C(r#""d""#, r#""t2""#, true, true, Some("PASS"), Some("pass")),
        ],
        true,
        json!({}),
    );
    let after = report(
        &[
            C(r#""d""#, r#""t2""#, true, true, Some("PASS"), Some("PASS")),
            C(r#""c""#, r#""t2""#, true, false, Some("PASS"), Some("FAIL")),
            C(r#""a""#, r#""t1""#, true, true, Some("PASS"), Some("PASS")),
            C(r#""b""#, r#""t1""#, true, false, Some("PASS"), None),
        ],
        false,
        json!({}),
    );
    let d = diff(&read("b", &before), &read("a", &after)).unwrap();
    let flips: Vec<(String, Model, bool, bool)> = d
        .cases
        .flips
        .iter()
        .map(|f| (f.pipeline_id.text.to_string(), f.model, f.before_pass, f.after_pass))
        .collect();
    assert_eq!(
        flips,
        vec![
            ("b".into(), Model::New, true, false),
            ("c".into(), Model::New, true, false),
            ("a".into(), Model::New, false, true),
            ("c".into(), Model::Old, false, true),
        ]
    );
    assert_eq!(
        d.cases.counts.old,
        FlipCounts {
            fail_to_pass: 1,
            pass_to_fail: 0,
            verdict_changed: 1
        }
    );
    // d's new verdict went from "pass" to "PASS": a text change, no flip.
    assert_eq!(
        d.cases.counts.new,
        FlipCounts {
            fail_to_pass: 1,
            pass_to_fail: 2,
            verdict_changed: 4
        }
    );
    assert_eq!(d.cases.flips[0].before_verdict.as_deref(), Some("PASS"));
    assert_eq!(d.cases.flips[0].after_verdict, None);
    assert!(d.changed() && d.decision.before == "approved" && d.decision.after == "blocked");
}

#[test]
fn different_test_sets_and_no_common_case_are_said() {
    let b = read(
        "b",
        &report(&[C(r#""x""#, "null", true, true, None, None)], true, json!({})),
    );
    let a = read(
        "a",
        &report(&[C(r#""y""#, "null", true, true, None, None)], true, json!({})),
    );
    let d = diff(&b, &a).unwrap();
    assert_eq!(d.cases.common, 0);
    assert_eq!(d.cases.only_before.len(), 1);
    assert_eq!(d.cases.only_after.len(), 1);
    assert!(d.warnings[0].starts_with("no case in common"), "{:?}", d.warnings);
    let empty = read("e", &report(&[], true, json!({})));
    assert!(diff(&empty, &empty).unwrap().warnings.is_empty());
}

#[test]
fn a_policy_change_lists_each_resolved_field_that_differs() {
    let b = read("b", &report(&[], true, json!({})));
    let a = read(
        "a",
        &report(
            &[],
            false,
            json!({"task_regression_tol": 0.05, "mode": "non_inferiority"}),
        ),
    );
    let d = diff(&b, &a).unwrap();
    let fields: Vec<(&str, String, String)> = d
        .policy
        .iter()
        .map(|p| (p.field.as_str(), p.before.to_string(), p.after.to_string()))
        .collect();
    assert_eq!(
        fields,
        vec![
            ("task_regression_tol", "0.0".into(), "0.05".into()),
            ("mode", "\"point\"".into(), "\"non_inferiority\"".into())
        ]
    );
    assert_ne!(d.before.policy_digest, d.after.policy_digest);
    // A policy of a report that predates `mode` and `confidence` resolves to their defaults: no change.
    let mut old = report(&[], true, json!({}));
    old["policy"].as_object_mut().unwrap().remove("mode");
    old["policy"].as_object_mut().unwrap().remove("confidence");
    let d = diff(&read("old", &old), &b).unwrap();
    assert!(d.policy.is_empty());
    // Its digest is the one its signature would pin: over the policy as it was written.
    assert_ne!(d.before.policy_digest, d.after.policy_digest);
    assert_eq!(
        d.after.policy_digest,
        crate::policy::GatePolicy::default().digest().unwrap()
    );
}

#[test]
fn inputs_are_compared_role_by_role_each_audit_file_in_turn() {
    let mut b = report(&[], true, json!({}));
    let mut a = report(&[], true, json!({}));
    b["inputs"] = json!([{"role": "audit", "name": "1", "sha256": "1"}, {"role": "audit", "name": "2", "sha256": "2"},
                        {"role": "old_verdicts", "name": "o", "sha256": "o"}, {"role": "new_trajectories", "name": "t"}]);
    a["inputs"] = json!([{"role": "old_verdicts", "name": "o", "sha256": "o"}, {"role": "audit", "name": "1", "sha256": "1"},
                        {"role": "new_verdicts", "name": "n", "sha256": "n"}]);
    let d = diff(&read("b", &b), &read("a", &a)).unwrap();
    let rows: Vec<(&str, bool, Option<&str>, Option<&str>)> = d
        .inputs
        .iter()
        .map(|i| {
            (
                i.role.as_str(),
                i.same,
                i.before_sha256.as_deref(),
                i.after_sha256.as_deref(),
            )
        })
        .collect();
    assert_eq!(
        rows,
        vec![
            ("audit", true, Some("1"), Some("1")),
            ("audit", false, Some("2"), None),
            ("old_verdicts", true, Some("o"), Some("o")),
            ("new_trajectories", false, None, None),
            ("new_verdicts", false, None, Some("n")),
        ]
    );
}

#[test]
fn templates_are_matched_by_value_and_sorted_by_the_change_worst_first() {
    let mut b = report(&[], true, json!({}));
    let mut a = report(&[], true, json!({}));
    let row = |t: Value, n: u64, d: f64| json!({"template_id": t, "n": n, "delta": d});
    b["templates"] = json!([
        row(json!("up"), 3, 0.0),
        row(json!("down"), 4, 0.1),
        row(json!({"k": [1, 2]}), 1, 0.0),
        row(json!("gone"), 2, 0.5)
    ]);
    a["templates"] = json!([
        row(json!("new"), 1, 0.0),
        row(json!("down"), 4, -0.2),
        row(json!("up"), 3, 0.25),
        row(json!({"k": [1, 2]}), 2, 0.0)
    ]);
    // The same template spelt with other white space or escapes is the same template.
    let a_text = text(&a)
        .replace("\"k\": [\n", "\"k\"  :[\n")
        .replace("\"up\"", "\"\\u0075p\"");
    let d = diff(&read("b", &b), &read_report("a", a_text.as_bytes()).unwrap()).unwrap();
    let rows: Vec<(String, u64, u64, Option<f64>)> = d
        .templates
        .iter()
        .map(|t| (t.template_id.json().to_owned(), t.n_before, t.n_after, t.delta_change))
        .collect();
    assert_eq!(
        rows,
        vec![
            ("\"down\"".into(), 4, 4, Some(-0.3)),
            (r#"{"k":[1,2]}"#.into(), 1, 2, Some(0.0)),
            ("\"up\"".into(), 3, 3, Some(0.25)),
            ("\"gone\"".into(), 2, 0, None),
            ("\"new\"".into(), 0, 1, None),
        ]
    );
    assert!(d.to_json().contains("\"template_id\": {\"k\":[1,2]}"));
}

#[test]
fn intervals_and_their_overlap() {
    let b = report(&[], true, json!({}));
    let mut a = report(&[], true, json!({}));
    a["stats"]["task"]["delta"] = json!({"low": 0.2, "high": 0.3});
    let d = diff(&read("b", &b), &read("a", &a)).unwrap();
    assert_eq!(d.stats.overlap, Some(false));
    assert_eq!(d.stats.after.low, Some(0.2));
    // A report written before the statistics existed: no interval, no overlap, a warning.
    a.as_object_mut().unwrap().remove("stats");
    let d = diff(&read("b", &b), &read("a", &a)).unwrap();
    assert_eq!(d.stats.overlap, None);
    assert_eq!(d.stats.after.task_delta, Some(0.0));
    assert!(d
        .warnings
        .iter()
        .any(|w| w.starts_with("after: the report has no interval")));
}

#[test]
fn the_interval_shown_is_the_one_that_decided_and_says_which() {
    let mut b = report(&[], true, json!({}));
    b["stats"]["task"]["clustered"] = json!({"clusters": 4, "design_effect": 2.5,
        "delta": {"estimate": 0.0, "low": -0.3, "high": 0.25, "method": "cluster_robust_t"}});
    let a = report(&[], true, json!({}));
    let d = diff(&read("b", &b), &read("a", &a)).unwrap();
    // The clustered interval, which the rules use (`rule_delta`), not the unclustered one.
    assert_eq!((d.stats.before.low, d.stats.before.high), (Some(-0.3), Some(0.25)));
    assert!(d.stats.before.clustered);
    assert_eq!(d.stats.before.method.as_deref(), Some("cluster_robust_t"));
    // A report without clustering: its interval as before, named.
    assert_eq!((d.stats.after.low, d.stats.after.high), (Some(-0.1), Some(0.1)));
    assert!(!d.stats.after.clustered);
    assert_eq!(d.stats.after.method.as_deref(), Some("newcombe"));
    assert_eq!(d.stats.overlap, Some(true));
    let json: Value = serde_json::from_str(&d.to_json()).unwrap();
    assert_eq!(json["stats"]["before"]["clustered"], true);
    assert_eq!(json["stats"]["before"]["method"], "cluster_robust_t");
    assert_eq!(json["stats"]["after"]["clustered"], false);
    // `clustered: null` (cluster: none, or fewer than two clusters) is no clustered interval.
    b["stats"]["task"]["clustered"] = Value::Null;
    let d = diff(&read("b", &b), &read("a", &a)).unwrap();
    assert_eq!((d.stats.before.low, d.stats.before.clustered), (Some(-0.1), false));
    // A report without statistics names no method.
    b.as_object_mut().unwrap().remove("stats");
    let d = diff(&read("b", &b), &read("a", &a)).unwrap();
    assert_eq!(
        (d.stats.before.method.as_deref(), d.stats.before.clustered),
        (None, false)
    );
}

#[test]
fn a_report_with_a_pipeline_twice_cannot_be_matched() {
    let b = read(
        "b",
        &report(
            &[
                C("7", "null", true, true, None, None),
                C("7", "null", true, true, None, None),
            ],
            true,
            json!({}),
        ),
    );
    let e = diff(&b, &b).unwrap_err();
    assert_eq!(e.side, "before");
    assert_eq!(
        e.to_string(),
        "before: the pipeline 7 is listed twice (cases[0] and cases[1])"
    );
}

#[test]
fn what_is_not_a_report_is_named() {
    assert!(matches!(problem("[1,"), Problem::Report(m) if m.contains("line 1")));
    assert!(
        matches!(problem(r#"{"schema": "deploy-gate/diff/v1"}"#), Problem::Schema(s) if s == "deploy-gate/diff/v1")
    );
    assert!(
        matches!(problem(r#"{"schema": "deploy-gate/report/v1"}"#), Problem::Report(m) if m.contains("missing field"))
    );
    let e = read_document("x.json", br#"{"a": 1}"#, None).unwrap_err();
    assert_eq!(e.problem, Problem::Unknown);
    assert!(e.to_string().starts_with("x.json: neither a deploy-gate report"));
    let mut r = report(&[], true, json!({}));
    r["policy"]["min_samples"] = json!(-1);
    assert!(matches!(problem(&text(&r)), Problem::Value { place, .. } if place == "policy"));
}

#[test]
fn the_report_key_the_reader_names_is_the_statements() {
    // `PredicateDoc`'s serde rename is a literal; it must be the key `sign` writes.
    let src = include_str!("read.rs");
    assert!(src.contains(&format!("rename = \"{}\"", attest::REPORT_KEY)));
}

fn signed(report: &Value, seed: u8) -> (Vec<u8>, ed25519_dalek::VerifyingKey) {
    let key = keys::signing_key_from_seed([seed; 32]);
    let claim = Claim {
        report: &attest::ReportToSign::of_value(report),
        model_name: "m",
        model_sha256: &"d".repeat(64),
        target: "prod",
        time_verified: 1_000,
        review: None,
    };
    (
        attest::sign(&claim, &key).unwrap().to_json().into_bytes(),
        key.verifying_key(),
    )
}

#[test]
fn a_signed_decision_is_read_only_once_it_verifies() {
    let r = report(
        &[C("1", r#""t""#, true, true, Some("PASS"), Some("PASS"))],
        true,
        json!({}),
    );
    let (envelope, key) = signed(&r, 1);
    let (_, other) = signed(&r, 2);
    let trust = |keys: &'static [ed25519_dalek::VerifyingKey]| Trust {
        keys,
        threshold: 1,
        limits: Limits::default(),
    };
    let keys: &'static [_] = Box::leak(Box::new([key]));
    let others: &'static [_] = Box::leak(Box::new([other]));
    // Asked for a report, it is named for what it is.
    assert_eq!(
        read_report("e", &envelope).unwrap_err().problem,
        Problem::SignedNotReport
    );
    // Without keys, with the wrong key, tampered: refused, the check named.
    assert_eq!(
        read_document("e", &envelope, None).unwrap_err().problem,
        Problem::NoTrustedKeys
    );
    let e = read_document("e", &envelope, Some(&trust(others))).unwrap_err();
    assert_eq!(e.check(), Some("signature"));
    assert!(e
        .to_string()
        .starts_with("e: the signed decision does not verify (signature): 0 of the required 1"));
    let mut env: Value = serde_json::from_slice(&envelope).unwrap();
    let payload = attest::dsse::decode(env["payload"].as_str().unwrap()).unwrap();
    let tampered = String::from_utf8(payload)
        .unwrap()
        .replace("\"old_pass\":true", "\"old_pass\":false");
    env["payload"] = json!(attest::dsse::encode(tampered.as_bytes()));
    let e = read_document("e", env.to_string().as_bytes(), Some(&trust(keys))).unwrap_err();
    assert_eq!(e.check(), Some("signature"));
    // Verified: its signers, the policy digest it pins, the same cases as the report's.
    let e = read_document("e", &envelope, Some(&trust(keys))).unwrap();
    assert_eq!(e.source, Source::Signed);
    assert_eq!(e.signers, vec![keys::keyid(&key)]);
    let plain = read("r", &r);
    assert_eq!(e.cases, plain.cases);
    assert_eq!(e.policy_digest, plain.policy_digest);
    let d = diff(&plain, &e).unwrap();
    assert!(d.to_json().contains("\"source\": \"signed\""));
    assert!(!d.changed());
    // Its age and target are not checked: an old decision for any target reads the same.
    assert_eq!(
        read_signed("e", &envelope, Some(&trust(keys))).unwrap().decision.reason,
        "approved: x"
    );
}

#[test]
fn a_review_a_decision_was_signed_with_is_shown_beside_one_signed_without() {
    let r = report(
        &[C("1", r#""t""#, true, false, Some("PASS"), Some("FAIL"))],
        true,
        json!({}),
    );
    let key = keys::signing_key_from_seed([3; 32]);
    let report = attest::ReportToSign::of_value(&r);
    let review = crate::review::Review::parse("r.jsonl", b"{\"pipeline_id\": 1, \"mark\": \"accepted\"}\n").unwrap();
    let pin = crate::review::ReviewPin::of(&review, report.text()).unwrap();
    let envelope = |review| {
        let claim = Claim {
            report: &report,
            model_name: "m",
            model_sha256: &"d".repeat(64),
            target: "prod",
            time_verified: 1_000,
            review,
        };
        attest::sign(&claim, &key).unwrap().to_json().into_bytes()
    };
    let keys: &'static [_] = Box::leak(Box::new([key.verifying_key()]));
    let trust = Trust {
        keys,
        threshold: 1,
        limits: Limits::default(),
    };
    let without = read_document("a", &envelope(None), Some(&trust)).unwrap();
    let with = read_document("b", &envelope(Some(&pin)), Some(&trust)).unwrap();
    assert_eq!((without.review.as_ref(), with.review.as_ref()), (None, Some(&pin)));
    let d = diff(&without, &with).unwrap();
    let doc: Value = serde_json::from_str(&d.to_json()).unwrap();
    assert!(doc["before"].get("review").is_none());
    assert_eq!(doc["after"]["review"]["marks"]["accepted"], 1);
    let md = crate::render::diff::markdown::diff_markdown(&d);
    assert!(
        md.contains(&format!(
            "| review | signed without a review | 1 accepted, 0 label wrong, 0 needs fix; 0 of 0 regressed marked (review sha256 {}…) |",
            &pin.sha256[..12]
        )),
        "{md}"
    );
    assert!(crate::render::diff::html::diff_html(&d).contains("<dt>review</dt>"));
    // Two reports: no review row, as before reviews existed.
    let plain = read("r", &r);
    assert!(!crate::render::diff::markdown::diff_markdown(&diff(&plain, &plain).unwrap()).contains("| review |"));
}

#[test]
fn the_same_inputs_give_the_same_bytes() {
    let b = text(&report(
        &[
            C(r#""z""#, r#""t""#, true, false, Some("A"), Some("B")),
            C("3", r#""t""#, false, true, None, Some("PASS")),
        ],
        true,
        json!({}),
    ));
    let a = text(&report(
        &[
            C("3", r#""t""#, true, true, Some("PASS"), Some("PASS")),
            C(r#""z""#, r#""t""#, false, false, Some("B"), Some("A")),
        ],
        false,
        json!({"seed": 3}),
    ));
    let once = || {
        diff(
            &read_report("b", b.as_bytes()).unwrap(),
            &read_report("a", a.as_bytes()).unwrap(),
        )
        .unwrap()
        .to_json()
    };
    let first = once();
    assert_eq!(first, once());
    assert!(first.ends_with("}\n") && first.starts_with("{\n  \"schema\": \"deploy-gate/diff/v1\","));
    // The file names are not part of the diff.
    assert_eq!(
        diff(
            &read_report("x", b.as_bytes()).unwrap(),
            &read_report("y", a.as_bytes()).unwrap()
        )
        .unwrap()
        .to_json(),
        first
    );
}
