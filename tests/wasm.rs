//! The JS surface (`GateSession`) under wasm-bindgen-test, in node and in headless Chromium
//! (`WASM_BINDGEN_USE_BROWSER=1`). Run as scripts/test.sh does: `cargo test --target wasm32-unknown-unknown --test wasm` with
//! `CARGO_TARGET_WASM32_UNKNOWN_UNKNOWN_RUNNER=wasm-bindgen-test-runner`.
#![cfg(target_arch = "wasm32")]

use deploy_gate::wasm::GateSession;
use js_sys::{Reflect, JSON};
use serde_json::Value;
use wasm_bindgen::JsValue;
use wasm_bindgen_test::*;

const AUDIT: &[u8] = include_bytes!("fixtures/parity/real-writer-shape/audit.jsonl");
const OLD: &[u8] = include_bytes!("fixtures/parity/real-writer-shape/old_verdicts.jsonl");
const NEW: &[u8] = include_bytes!("fixtures/parity/real-writer-shape/new_verdicts.jsonl");
const OLD_T: &[u8] = include_bytes!("fixtures/parity/real-writer-shape/old_trajectories.jsonl");
const NEW_T: &[u8] = include_bytes!("fixtures/parity/real-writer-shape/new_trajectories.jsonl");
const EXPECTED: &str = include_str!("fixtures/parity/real-writer-shape/expected.json");

fn js(json: &str) -> JsValue {
    JSON::parse(json).unwrap()
}

fn reference_policy() -> JsValue {
    // The reference counts a missing verdict as a failure whatever their number: `max_missing: 1`.
    js(
        r#"{"min_samples": 20, "max_samples": null, "task_tol": 0.0, "traj_tol": 0.05, "on_insufficient": "approve", "max_missing": 1}"#,
    )
}

/// Streams the fixture in small chunks, then reads pass 2's ranges in
/// chunks, as the page does.
/// Both models' verdicts and trajectories, under the short role names.
fn add_results(s: &mut GateSession) {
    s.add_verdicts("old", OLD, "old_verdicts.jsonl").unwrap();
    s.add_verdicts("new", NEW, "new_verdicts.jsonl").unwrap();
    s.add_trajectories("old", OLD_T, "old_trajectories.jsonl").unwrap();
    s.add_trajectories("new", NEW_T, "new_trajectories.jsonl").unwrap();
}

fn loaded_session() -> GateSession {
    let mut s = GateSession::new(reference_policy()).unwrap();
    s.begin_audit("audit.jsonl");
    for chunk in AUDIT.chunks(4093) {
        s.push_audit(chunk).unwrap();
    }
    s.finish_audit().unwrap();
    let flat = s.needed_ranges().unwrap();
    // Read the ranges last to first, each in small chunks: the order does not matter.
    for (i, range) in flat.chunks(3).enumerate().rev() {
        let start = range[1] as usize;
        let end = if range[2] < 0.0 { AUDIT.len() } else { range[2] as usize };
        for chunk in AUDIT[start..end].chunks(97) {
            s.feed_range(i, chunk).unwrap();
        }
        s.end_range(i).unwrap();
    }
    s.finish_test_set().unwrap();
    s.add_verdicts("old", OLD, "old_verdicts.jsonl").unwrap();
    s.add_verdicts("new_verdicts", NEW, "new_verdicts.jsonl").unwrap();
    s.add_trajectories("old", OLD_T, "old_trajectories.jsonl").unwrap();
    s.add_trajectories("new", NEW_T, "new_trajectories.jsonl").unwrap();
    s
}

#[wasm_bindgen_test]
fn the_report_matches_the_reference_decision() {
    let s = loaded_session();
    assert!(s.is_ready());
    let report: Value = serde_json::from_str(&s.evaluate_json().unwrap()).unwrap();
    let expected: Value = serde_json::from_str(EXPECTED).unwrap();
    // The reference's decision, and deploy-gate's outcome beside it.
    let mut decision = report["decision"].clone();
    let outcome = decision.as_object_mut().unwrap().shift_remove("outcome");
    assert_eq!(outcome, Some(Value::from("approved")));
    assert_eq!(decision, expected["decision"]);
    assert_eq!(report["comparison"], expected["comparison"]);
    // The plain object has the same decision as the JSON text.
    let object = s.evaluate().unwrap();
    let decision = Reflect::get(&object, &"decision".into()).unwrap();
    let reason = Reflect::get(&decision, &"reason".into()).unwrap();
    assert_eq!(
        reason.as_string().unwrap(),
        expected["decision"]["reason"].as_str().unwrap()
    );
}

#[wasm_bindgen_test]
fn the_test_set_matches_the_reference_and_build_test_set_agrees() {
    let s = loaded_session();
    let expected: Value = serde_json::from_str(EXPECTED).unwrap();
    let cases: Vec<Value> = s
        .test_set_jsonl()
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(cases.len(), expected["test_set"].as_array().unwrap().len());
    for (got, want) in cases.iter().zip(expected["test_set"].as_array().unwrap()) {
        for key in [
            "pipeline_id",
            "template_id",
            "input_text",
            "expected_verdict",
            "expected_stage_outputs",
            "episode_reward",
        ] {
            assert_eq!(got[key], want[key], "{key}");
        }
    }
    let mut other = GateSession::new(reference_policy()).unwrap();
    other.begin_audit("audit.jsonl");
    other.push_audit(AUDIT).unwrap();
    other.finish_audit().unwrap();
    other.build_test_set(vec![js_sys::Uint8Array::from(AUDIT)]).unwrap();
    assert_eq!(other.test_set_jsonl().unwrap(), s.test_set_jsonl().unwrap());
}

#[wasm_bindgen_test]
fn policy_changes_say_what_to_redo() {
    let mut s = loaded_session();
    assert_eq!(
        s.set_policy(js(
            r#"{"min_samples": 20, "max_samples": null, "task_tol": 0.5, "on_insufficient": "approve"}"#
        ))
        .unwrap(),
        "ready"
    );
    assert_eq!(
        s.set_policy(js(
            r#"{"min_samples": 20, "max_samples": 10, "task_tol": 0.5, "on_insufficient": "approve"}"#
        ))
        .unwrap(),
        "rebuild"
    );
    assert!(s.evaluate_json().is_err(), "the old test set is dropped until rebuilt");
    assert_eq!(s.set_policy(js(r#"{"pass_verdicts": "PASS"}"#)).unwrap(), "rescan");
}

#[wasm_bindgen_test]
fn bad_policy_and_bad_files_are_errors_not_panics() {
    assert!(GateSession::new(js(r#"{"max_samples": "lots"}"#)).is_err());
    assert!(GateSession::new(js(r#"{"unknown": 1}"#)).is_err());
    let mut s = GateSession::new(JsValue::UNDEFINED).unwrap();
    assert!(s
        .add_verdicts("old", b"{\"pipeline_id\": \"a\", \"verdict\": ", "v.jsonl")
        .is_err());
    assert!(s.add_verdicts("sideways", b"", "v.jsonl").is_err());
    assert!(s.evaluate_json().is_err());
    assert!(s.push_audit(b"x").is_err());
}

#[wasm_bindgen_test]
fn sniff_role_recognises_files() {
    let guess = GateSession::sniff_role("anything.jsonl", &AUDIT[..4096]).unwrap();
    assert_eq!(
        Reflect::get(&guess, &"role".into()).unwrap().as_string().as_deref(),
        Some("audit")
    );
    let guess = GateSession::sniff_role("old_verdicts.jsonl", OLD).unwrap();
    assert_eq!(
        Reflect::get(&guess, &"role".into()).unwrap().as_string().as_deref(),
        Some("old_verdicts")
    );
}

#[wasm_bindgen_test]
fn hashing_in_another_worker_gives_the_same_report() {
    use deploy_gate::wasm::Sha256Stream;
    let reference = loaded_session().evaluate_json().unwrap();
    let mut s = GateSession::new(reference_policy()).unwrap();
    s.set_hashing(false);
    s.begin_audit("audit.jsonl");
    let mut hash = Sha256Stream::new();
    for chunk in AUDIT.chunks(65536) {
        s.push_audit(chunk).unwrap();
        hash.update(chunk);
    }
    s.set_audit_sha256(0, &hash.finish()).unwrap();
    assert!(s.set_audit_sha256(0, "not hex").is_err());
    s.finish_audit().unwrap();
    s.build_test_set(vec![js_sys::Uint8Array::from(AUDIT)]).unwrap();
    add_results(&mut s);
    assert_eq!(s.evaluate_json().unwrap(), reference);
}

#[wasm_bindgen_test]
fn segments_scanned_apart_and_merged_give_the_same_report() {
    use deploy_gate::wasm::{SegmentScanner, Sha256Stream};
    let reference = loaded_session().evaluate_json().unwrap();
    let mut s = GateSession::new(reference_policy()).unwrap();
    s.begin_segmented_audit();
    let file = s.add_audit_file("audit.jsonl").unwrap();
    let pass = s.pass_verdicts();
    // Cut at the newlines nearest a third and two thirds of the file.
    let cut = |at: usize| at + AUDIT[at..].iter().position(|&b| b == b'\n').unwrap() + 1;
    let starts = [0, cut(AUDIT.len() / 3), cut(2 * AUDIT.len() / 3)];
    let ends = [starts[1], starts[2], AUDIT.len()];
    let segments: Vec<Vec<u8>> = starts
        .iter()
        .zip(ends)
        .map(|(&a, b)| {
            let mut scanner = SegmentScanner::new(pass.clone(), file, a as f64);
            for chunk in AUDIT[a..b].chunks(10_000) {
                scanner.push(chunk);
            }
            scanner.finish()
        })
        .collect();
    for segment in &segments {
        s.merge_segment(segment).unwrap();
    }
    assert!(s.merge_segment(b"garbage").is_err());
    let mut hash = Sha256Stream::new();
    hash.update(AUDIT);
    s.set_audit_file_digest(file, AUDIT.len() as f64, &hash.finish())
        .unwrap();
    s.finish_segmented_audit().unwrap();
    s.build_test_set(vec![js_sys::Uint8Array::from(AUDIT)]).unwrap();
    add_results(&mut s);
    assert_eq!(s.evaluate_json().unwrap(), reference);
}

/// `verifyEnvelope` gives the page every field it reads, for a valid and for a rejected
/// envelope, with the fields the CLI's summary has (one type serves both).
#[wasm_bindgen_test]
fn verify_envelope_gives_the_summary_and_what_was_checked() {
    use deploy_gate::wasm::{generate_key_pair, sign_decision, verify_envelope};
    let plain =
        |v: JsValue| -> Value { serde_json::from_str(&JSON::stringify(&v).unwrap().as_string().unwrap()).unwrap() };
    let pair = plain(generate_key_pair(&[7u8; 32]).unwrap());
    let keyid = pair["keyid"].as_str().unwrap().to_owned();
    let report = serde_json::json!({
        "schema": "deploy-gate/report/v1",
        "policy": {"min_samples": 20},
        "inputs": [{"name": "audit.jsonl", "role": "audit", "sha256": "00".repeat(32), "bytes": 1}],
        "decision": {"approved": true, "reason": "approved: no regression on task or trajectory"},
    });
    let digest = format!("sha256:{}", "ab".repeat(32));
    let now = 1_764_547_200.0;
    let envelope = sign_decision(
        &report.to_string(),
        pair["private_pem"].as_str().unwrap(),
        "agent-7b",
        &digest,
        "serving.yaml",
        now,
        None,
    )
    .unwrap();
    let trusted = vec![pair["public_pem"].as_str().unwrap().to_owned()];
    let verify = |options: &str| plain(verify_envelope(envelope.as_bytes(), trusted.clone(), js(options)).unwrap());
    // The page signs without a review: a policy that requires one is refused, naming the cases.
    let mut strict = report.clone();
    strict["policy"]["review"] = serde_json::json!({"require": "regressed"});
    strict["cases"] = serde_json::json!([{"pipeline_id": "p-9", "status": "regressed"}]);
    let sign_strict = |review: Option<Vec<u8>>| {
        sign_decision(
            &strict.to_string(),
            pair["private_pem"].as_str().unwrap(),
            "agent-7b",
            &digest,
            "serving.yaml",
            now,
            review,
        )
    };
    let message = format!("{:?}", JsValue::from(sign_strict(None).err().unwrap()));
    assert!(message.contains("1 of 1 unmarked, no review given"), "{message}");
    // With the page's review file marking the case, it signs and the statement pins the review.
    let marks = JSON::parse(r#"[{"case": 0, "mark": "accepted", "note": "an answer we accept"}]"#).unwrap();
    let file = deploy_gate::wasm::review_file(&strict.to_string(), marks).unwrap();
    assert_eq!(
        file,
        "{\"pipeline_id\": \"p-9\", \"mark\": \"accepted\", \"note\": \"an answer we accept\"}\n"
    );
    let signed = sign_strict(Some(file.clone().into_bytes())).unwrap();
    let strict_ok = plain(
        verify_envelope(
            signed.as_bytes(),
            vec![pair["public_pem"].as_str().unwrap().to_owned()],
            js(&format!(r#"{{"now": {}}}"#, now + 60.0)),
        )
        .unwrap(),
    );
    assert_eq!(strict_ok["review"]["marks"]["accepted"], 1, "{strict_ok}");
    assert_eq!(strict_ok["review"]["regressed"]["marked"], 1);
    // Read back against the report: the mark by its case, nothing elsewhere.
    let read = plain(deploy_gate::wasm::read_review(&strict.to_string(), file.as_bytes(), "review.jsonl").unwrap());
    assert_eq!(
        read["marks"],
        serde_json::json!([{"case": 0, "mark": "accepted", "note": "an answer we accept"}])
    );
    assert_eq!(read["elsewhere"], serde_json::json!([]));
    let bad = deploy_gate::wasm::read_review(&strict.to_string(), b"{\"pipeline_id\": \"p-9\"}\n", "mine.jsonl")
        .err()
        .unwrap();
    let bad = format!("{:?}", JsValue::from(bad));
    assert!(bad.contains("mine.jsonl:1"), "{bad}");

    let ok = verify(&format!(
        r#"{{"now": {}, "model_digest": "{digest}", "target": "serving.yaml"}}"#,
        now + 60.0
    ));
    assert_eq!(ok["valid"], true);
    assert_eq!(ok["approved"], true);
    assert_eq!(ok["verification_result"], "PASSED");
    assert_eq!(ok["reason"], "approved: no regression on task or trajectory");
    assert_eq!(ok["model"], "agent-7b");
    assert_eq!(ok["model_digest"], digest.as_str());
    assert_eq!(ok["subject_index"], 0);
    assert_eq!(ok["target"], "serving.yaml");
    assert_eq!(ok["time_verified"], "2025-12-01T00:00:00Z");
    assert_eq!(ok["signers"], serde_json::json!([keyid]));
    assert_eq!(ok["hinted_keyids"], serde_json::json!([keyid]));
    assert_eq!(ok["payload_sha256"].as_str().map(str::len), Some(64));
    assert_eq!(
        (&ok["subject_checked"], &ok["target_checked"]),
        (&Value::Bool(true), &Value::Bool(true))
    );
    assert!(ok.get("check").is_none() && ok.get("message").is_none());

    let unchecked = verify(&format!(r#"{{"now": {}}}"#, now + 60.0));
    assert_eq!(unchecked["valid"], true);
    assert_eq!(
        (&unchecked["subject_checked"], &unchecked["target_checked"]),
        (&Value::Bool(false), &Value::Bool(false))
    );

    let bad = verify(&format!(r#"{{"now": {}, "target": "other.yaml"}}"#, now + 60.0));
    assert_eq!(bad["valid"], false);
    assert_eq!(bad["check"], "target");
    assert_eq!(
        bad["message"],
        "the statement is for target `serving.yaml`, not `other.yaml`"
    );
    assert_eq!(bad["signers"], serde_json::json!([]));
    assert_eq!(bad["hinted_keyids"], serde_json::json!([keyid]));
    assert_eq!(
        (&bad["subject_checked"], &bad["target_checked"]),
        (&Value::Bool(false), &Value::Bool(true))
    );
}

#[wasm_bindgen_test]
fn default_policy_and_check_policy_come_from_the_core() {
    use deploy_gate::policy::GatePolicy;
    use deploy_gate::wasm::{check_policy, default_policy};
    let text = |v: &JsValue| JSON::stringify(v).unwrap().as_string().unwrap();
    // What the page gets reads back as the core's defaults, every field listed (as values:
    // JSON.stringify writes the tolerance 0.0 as `0`, serde as `0.0`).
    let defaults: Value = serde_json::from_str(&text(&default_policy().unwrap())).unwrap();
    assert_eq!(GatePolicy::from_report(&defaults).unwrap(), GatePolicy::default());
    let keys = |v: &Value| v.as_object().unwrap().keys().cloned().collect::<Vec<_>>();
    assert_eq!(
        keys(&defaults),
        keys(&serde_json::to_value(GatePolicy::default()).unwrap())
    );
    // The form's fields, as text: the defaults.
    let ok = check_policy(js(
        r#"{"min_samples": "20", "max_samples": "200", "seed": "0", "task_tol": "0.0", "traj_tol": "0.05",
            "pass_verdicts": "PASS,APPROVE,COMPLETE", "confidence": "0.95", "on_insufficient": "block", "mode": "point"}"#,
    ))
    .unwrap();
    let ok: Value = serde_json::from_str(&text(&ok)).unwrap();
    assert_eq!(ok["ok"], true);
    assert_eq!(GatePolicy::from_report(&ok["policy"]).unwrap(), GatePolicy::default());
    let bad: Value = serde_json::from_str(&text(&check_policy(js(r#"{"max_samples": "lots"}"#)).unwrap())).unwrap();
    assert_eq!(
        (bad["ok"].as_bool(), bad["field"].as_str(), bad["message"].as_str()),
        (
            Some(false),
            Some("max_samples"),
            Some("max_samples must be a number or `none`, not `lots`")
        )
    );
    let mode: Value =
        serde_json::from_str(&text(&check_policy(js(r#"{"mode": "non-inferiority"}"#)).unwrap())).unwrap();
    assert_eq!(mode["policy"]["mode"], "non_inferiority");
}

/// A policy file with guardrails survives the page's handling: `checkPolicyFile` resolves it as
/// `evaluate --policy` does, and the resolved policy given back through `checkPolicy` with the
/// form's fields (as the page does) is the same policy; a file the core refuses names the field,
/// or none when it is not a JSON object.
#[wasm_bindgen_test]
fn a_policy_file_with_guardrails_passes_through_the_form_unchanged() {
    use deploy_gate::policy::{GatePolicy, PolicyInput};
    use deploy_gate::wasm::{check_policy, check_policy_file};
    let plain =
        |v: &JsValue| -> Value { serde_json::from_str(&JSON::stringify(v).unwrap().as_string().unwrap()).unwrap() };
    let file = br#"{"mode": "non_inferiority", "task_tol": 0.05, "min_samples": 1,
        "prices": {"prompt_per_million": 0.15, "completion_per_million": 0.6},
        "guardrails": [{"metric": "latency_ms", "statistic": "p95", "max_increase": "10%"},
                       {"metric": "metrics.steps", "max_difference": "1", "action": "advise", "min_cases": 30}],
        "template_regression": {"max_drop": "5%"}}"#;
    let native = PolicyInput::from_file(file).unwrap().into_policy().unwrap();
    let checked = plain(&check_policy_file(file).unwrap());
    assert_eq!(checked["ok"], true);
    // (As values: JSON.stringify writes the difference 1.0 as `1`, serde as `1.0`.)
    assert_eq!(GatePolicy::from_report(&checked["policy"]).unwrap(), native);
    // The form: its fields as text, and the file's guardrail fields as the core resolved them.
    let p = &checked["policy"];
    let mut input = serde_json::json!({
        "min_samples": "1", "max_samples": "200", "seed": "0", "task_tol": "0.05", "traj_tol": "0.05",
        "pass_verdicts": "PASS,APPROVE,COMPLETE", "confidence": "0.95", "on_insufficient": "block",
        "mode": "non_inferiority", "cluster": "template", "repeats": "last", "sequential": "false",
    });
    for k in ["prices", "guardrails", "template_regression"] {
        input[k] = p[k].clone();
    }
    let again = plain(&check_policy(js(&input.to_string())).unwrap());
    assert_eq!(again["ok"], true);
    assert_eq!(&again["policy"], p);
    assert_eq!(p["guardrails"][0]["max_increase"], 0.1);
    assert_eq!(p["prices"]["new"]["completion_per_million"], 0.6);
    let bad = plain(&check_policy_file(br#"{"guardrails": [{"metric": "latency_ms", "max_increse": 0.1}]}"#).unwrap());
    assert_eq!(bad["ok"], false);
    assert!(bad["field"].as_str().unwrap().starts_with("guardrails"), "{bad}");
    let not_object = plain(&check_policy_file(b"[1]").unwrap());
    assert_eq!(
        (&not_object["ok"], &not_object["field"]),
        (&Value::Bool(false), &Value::Null)
    );
}

/// `openSignedDecision` gives the report from the verified statement (byte for byte the one
/// signed) and nothing from a rejected envelope; `cosignDecision` adds a second signature to
/// an envelope that verifies, keeps its statement, and refuses one that does not verify.
#[wasm_bindgen_test]
fn a_signed_decision_is_opened_and_cosigned_only_when_it_verifies() {
    use deploy_gate::wasm::{cosign_decision, generate_key_pair, open_signed_decision, sign_decision, verify_envelope};
    let plain =
        |v: &JsValue| -> Value { serde_json::from_str(&JSON::stringify(v).unwrap().as_string().unwrap()).unwrap() };
    let message = |e: wasm_bindgen::JsError| -> String {
        Reflect::get(&JsValue::from(e), &"message".into())
            .unwrap()
            .as_string()
            .unwrap()
    };
    let (a, b) = (
        plain(&generate_key_pair(&[7u8; 32]).unwrap()),
        plain(&generate_key_pair(&[8u8; 32]).unwrap()),
    );
    let pem = |k: &Value, half: &str| k[half].as_str().unwrap().to_owned();
    let report_json = loaded_session().evaluate_json().unwrap();
    let digest = format!("sha256:{}", "cd".repeat(32));
    let now = 1_764_547_200.0;
    let sign = |report: &str| {
        sign_decision(
            report,
            &pem(&a, "private_pem"),
            "agent-7b",
            &digest,
            "serving.yaml",
            now,
            None,
        )
    };
    let envelope = sign(&report_json).unwrap();
    let options = || js(&format!(r#"{{"now": {}}}"#, now + 60.0));

    let opened = open_signed_decision(envelope.as_bytes(), vec![pem(&a, "public_pem")], options()).unwrap();
    let text = Reflect::get(&opened, &"report_json".into())
        .unwrap()
        .as_string()
        .unwrap();
    assert_eq!(text, report_json, "the report as the CLI writes it");
    // A number past 64 bits (a wide pipeline id) keeps every digit through signing and opening.
    let wide_report = report_json.replacen("{\n", "{\n  \"wide_id\": -123456789012345678901234567890,\n", 1);
    let wide = sign(&wide_report).unwrap();
    let opened_wide = open_signed_decision(wide.as_bytes(), vec![pem(&a, "public_pem")], options()).unwrap();
    let wide_text = Reflect::get(&opened_wide, &"report_json".into())
        .unwrap()
        .as_string()
        .unwrap();
    assert_eq!(wide_text, wide_report);
    let opened = plain(&opened);
    // (Both through JS numbers: `0.0` is `0` there.)
    assert_eq!(opened["report"], plain(&js(&report_json)));
    // The rest is `verifyEnvelope`'s result.
    let mut summary = opened.clone();
    summary.as_object_mut().unwrap().remove("report");
    summary.as_object_mut().unwrap().remove("report_json");
    // And the subject's digest scheme: none, a digest given as the original directory digest.
    assert_eq!(
        summary.as_object_mut().unwrap().remove("digest_scheme"),
        Some(Value::Null)
    );
    assert_eq!(
        summary,
        plain(&verify_envelope(envelope.as_bytes(), vec![pem(&a, "public_pem")], options()).unwrap())
    );
    assert_eq!(opened["signers"], serde_json::json!([a["keyid"]]));

    // Another key: rejected, and no report.
    let refused = plain(&open_signed_decision(envelope.as_bytes(), vec![pem(&b, "public_pem")], options()).unwrap());
    assert_eq!(
        (&refused["valid"], &refused["check"]),
        (&Value::Bool(false), &Value::from("signature"))
    );
    assert!(refused.get("report").is_none() && refused.get("report_json").is_none());

    // Co-signed by B: A's envelope and one more signature; two of A and B verify it.
    let cosigned = cosign_decision(
        envelope.as_bytes(),
        &pem(&b, "private_pem"),
        vec![pem(&a, "public_pem")],
        options(),
    )
    .unwrap();
    let (before, after): (Value, Value) = (
        serde_json::from_str(&envelope).unwrap(),
        serde_json::from_str(&cosigned).unwrap(),
    );
    assert_eq!(after["payload"], before["payload"]);
    assert_eq!(after["signatures"][0], before["signatures"][0]);
    assert_eq!(after["signatures"][1]["keyid"], b["keyid"]);
    assert_eq!(after["signatures"].as_array().unwrap().len(), 2);
    assert!(cosigned.ends_with("}\n"));
    let both = || vec![pem(&a, "public_pem"), pem(&b, "public_pem")];
    let two = js(&format!(r#"{{"now": {}, "threshold": 2}}"#, now + 60.0));
    assert_eq!(
        plain(&verify_envelope(cosigned.as_bytes(), both(), two.clone()).unwrap())["valid"],
        true
    );
    assert_eq!(
        plain(&verify_envelope(envelope.as_bytes(), both(), two).unwrap())["check"],
        "signature"
    );

    // Refused: an envelope that does not verify against the keys given, a tampered one, a key
    // that signed already, a public key given as the signer's.
    let err = message(
        cosign_decision(
            envelope.as_bytes(),
            &pem(&b, "private_pem"),
            vec![pem(&b, "public_pem")],
            options(),
        )
        .unwrap_err(),
    );
    assert!(err.contains("does not verify") && err.contains("signature"), "{err}");
    let mut tampered = before.clone();
    tampered["payload"] = Value::from(format!("{}AAAA", before["payload"].as_str().unwrap()));
    let err = message(
        cosign_decision(
            tampered.to_string().as_bytes(),
            &pem(&b, "private_pem"),
            vec![pem(&a, "public_pem")],
            options(),
        )
        .unwrap_err(),
    );
    assert!(err.contains("does not verify"), "{err}");
    let err = message(cosign_decision(cosigned.as_bytes(), &pem(&b, "private_pem"), both(), options()).unwrap_err());
    assert!(err.contains("signed it already"), "{err}");
    assert!(cosign_decision(
        envelope.as_bytes(),
        &pem(&b, "public_pem"),
        vec![pem(&a, "public_pem")],
        options()
    )
    .is_err());
}

#[wasm_bindgen_test]
fn report_markdown_is_the_clis_summary() {
    use deploy_gate::wasm::report_markdown;
    // `deploy-gate evaluate --markdown` on the same fixture (and what the page's former JS
    // renderer wrote for it).
    const SUMMARY: &str = include_str!("fixtures/ci/markdown/real-writer-shape.md");
    let json = loaded_session().evaluate_json().unwrap();
    assert_eq!(report_markdown(&json, None).unwrap(), SUMMARY);
    assert!(report_markdown(r#"{"schema": "deploy-gate/report/v1"}"#, None).is_err());
}

#[wasm_bindgen_test]
fn two_reports_and_two_signed_decisions_are_diffed_as_the_cli_diffs_them() {
    use deploy_gate::wasm::{diff_documents, diff_envelopes, diff_reports, generate_key_pair, sign_decision};
    let plain =
        |v: &JsValue| -> Value { serde_json::from_str(&JSON::stringify(v).unwrap().as_string().unwrap()).unwrap() };
    let message = |e: wasm_bindgen::JsError| -> String {
        Reflect::get(&JsValue::from(e), &"message".into())
            .unwrap()
            .as_string()
            .unwrap()
    };
    let before = loaded_session().evaluate_json().unwrap();
    // The same inputs with the models swapped: every discordant case flips, both ways.
    let mut s = loaded_session();
    s.add_verdicts("old", NEW, "new_verdicts.jsonl").unwrap();
    s.add_verdicts("new", OLD, "old_verdicts.jsonl").unwrap();
    let after = s.evaluate_json().unwrap();
    let d = diff_reports(&before, &after, JsValue::UNDEFINED).unwrap();
    // The core's diff, byte for byte: what `deploy-gate diff` writes for the same two files.
    let native = deploy_gate::diff::diff(
        &deploy_gate::diff::read_report("before", before.as_bytes()).unwrap(),
        &deploy_gate::diff::read_report("after", after.as_bytes()).unwrap(),
    )
    .unwrap();
    assert_eq!(d.json(), native.to_json());
    assert_eq!(
        d.markdown(),
        deploy_gate::render::diff::markdown::diff_markdown(&native)
    );
    assert_eq!(d.html(), deploy_gate::render::diff::html::diff_html(&native));
    assert_eq!(d.junit(), deploy_gate::render::diff::junit::diff_junit(&native));
    assert_eq!(d.changed(), native.changed());
    let whole = plain(&d.to_object().unwrap());
    assert_eq!(whole, plain(&js(&d.json())));
    let flips = whole["cases"]["flips"].as_array().unwrap().clone();
    assert!(flips.len() > 4 && d.flip_count() == flips.len());

    // The summary has every list empty; the slices give them back, ids as shown.
    let summary = plain(&d.summary().unwrap());
    assert_eq!(summary["cases"]["flips"], serde_json::json!([]));
    assert_eq!(summary["templates"], serde_json::json!([]));
    assert_eq!(summary["decision"], whole["decision"]);
    let mut taken = Vec::new();
    for from in (0..d.flip_count()).step_by(3) {
        taken.extend(plain(&d.flips(from, from + 3).unwrap()).as_array().unwrap().clone());
    }
    assert_eq!(taken.len(), flips.len());
    for (row, flip) in taken.iter().zip(&flips) {
        for key in [
            "pipeline_id",
            "template_id",
            "model",
            "before_pass",
            "after_pass",
            "before_verdict",
            "after_verdict",
        ] {
            assert_eq!(row[key], flip[key], "{key}");
        }
        assert_eq!(row["id_label"], flip["pipeline_id"]);
        assert_eq!(row["id_kind"], "string");
        assert_eq!(row["template_text"], flip["template_id"]);
    }
    assert_eq!(plain(&d.flips(10_000, 20_000).unwrap()), serde_json::json!([]));
    assert_eq!(
        plain(&d.templates(0, 100).unwrap()).as_array().unwrap().len(),
        d.template_count()
    );
    assert_eq!(plain(&d.only_ids("before", 0, 10).unwrap()), serde_json::json!([]));
    assert!(d.only_ids("sideways", 0, 10).is_err());

    // Signed: verified against the trusted keys, refused otherwise; a report and an envelope
    // side by side through `diffDocuments`.
    let key = plain(&generate_key_pair(&[9u8; 32]).unwrap());
    let other = plain(&generate_key_pair(&[10u8; 32]).unwrap());
    let pem = |k: &Value, half: &str| k[half].as_str().unwrap().to_owned();
    let sign = |r: &str| {
        sign_decision(
            r,
            &pem(&key, "private_pem"),
            "m",
            &"ab".repeat(32),
            "prod",
            1_000.0,
            None,
        )
        .unwrap()
    };
    let (eb, ea) = (sign(&before), sign(&after));
    let signed = diff_envelopes(
        eb.as_bytes(),
        ea.as_bytes(),
        vec![pem(&key, "public_pem")],
        JsValue::UNDEFINED,
    )
    .unwrap();
    let sd = plain(&signed.summary().unwrap());
    assert_eq!(sd["before"]["source"], "signed");
    assert_eq!(sd["after"]["signers"], serde_json::json!([key["keyid"]]));
    assert_eq!(sd["cases"], summary["cases"]);
    let err = message(
        diff_envelopes(
            eb.as_bytes(),
            ea.as_bytes(),
            vec![pem(&other, "public_pem")],
            js(r#"{"before_name": "last week"}"#),
        )
        .err()
        .unwrap(),
    );
    assert!(
        err.starts_with("last week: the signed decision does not verify (signature)"),
        "{err}"
    );
    let err = message(diff_reports(&eb, &after, JsValue::UNDEFINED).err().unwrap());
    assert!(
        err.starts_with("before: it is a signed decision, not a report"),
        "{err}"
    );
    let mixed = diff_documents(
        before.as_bytes(),
        ea.as_bytes(),
        js(&format!(
            r#"{{"trusted_keys": [{}]}}"#,
            serde_json::to_string(&pem(&key, "public_pem")).unwrap()
        )),
    )
    .unwrap();
    assert_eq!(
        mixed.json(),
        signed
            .json()
            .replacen("\"source\": \"signed\"", "\"source\": \"report\"", 1)
            .replacen(
                &format!("\"signers\": [\n      \"{}\"\n    ]", key["keyid"].as_str().unwrap()),
                "\"signers\": []",
                1
            )
    );
    let err = message(
        diff_documents(before.as_bytes(), ea.as_bytes(), JsValue::UNDEFINED)
            .err()
            .unwrap(),
    );
    assert!(
        err.contains("after: it is a signed decision: it is read only once it verifies, and no trusted key was given"),
        "{err}"
    );
}

// ---------------------------------------------------------------- the trainer's model signature
//
// The bundles in tests/fixtures/oms-page were signed by model-signing 1.1.1 (the reference
// implementation of OpenSSF Model Signing; the commands are in that folder's README.md).

mod model_signature {
    use super::*;
    use deploy_gate::wasm::{trainer_key_info, verify_model_signature, ModelCheck, ModelFileHasher};

    const SIG: &[u8] = include_bytes!("fixtures/oms-page/model/model.sig");
    const SHARDS_SIG: &[u8] = include_bytes!("fixtures/oms-page/shards.sig");
    const SINGLE_SIG: &[u8] = include_bytes!("fixtures/oms-page/single.sig");
    const TRAINER: &str = include_str!("fixtures/oms-page/trainer.pub.pem");
    const OTHER: &str = include_str!("fixtures/oms-page/other.pub.pem");
    /// Every file of the model folder, the ignored ones and the signature too.
    const FILES: [(&str, &[u8]); 8] = [
        ("config.json", include_bytes!("fixtures/oms-page/model/config.json")),
        ("empty.txt", include_bytes!("fixtures/oms-page/model/empty.txt")),
        (
            "r\u{e9}sum\u{e9} notes.txt",
            include_bytes!("fixtures/oms-page/model/résumé notes.txt"),
        ),
        (
            "tokenizer vocab.txt",
            include_bytes!("fixtures/oms-page/model/tokenizer vocab.txt"),
        ),
        (
            "weights/part-00001.bin",
            include_bytes!("fixtures/oms-page/model/weights/part-00001.bin"),
        ),
        (
            "weights/part-00002.bin",
            include_bytes!("fixtures/oms-page/model/weights/part-00002.bin"),
        ),
        (
            ".github/notes.txt",
            include_bytes!("fixtures/oms-page/model/.github/notes.txt"),
        ),
        ("model.sig", SIG),
    ];
    /// `deploy-gate digest --oms tests/fixtures/oms-page/model` (= the subject digest of model.sig).
    const OMS_DIGEST: &str = "sha256:5ead6fba1f924fe03dcfd50f04ec4ebf1789f1bf8d6a8c6883d70c2834ee2441";
    /// `deploy-gate digest tests/fixtures/oms-page/model`: the original directory digest.
    const ORIGINAL_DIGEST: &str = "sha256:e8bbb00b7721bd59a840506cead52a9537b531c2f53d01fae893725cafc92b99";

    fn value(v: &JsValue) -> Value {
        serde_json::from_str(&JSON::stringify(v).unwrap().as_string().unwrap()).unwrap()
    }

    fn files(list: &[(&str, &[u8])]) -> JsValue {
        let out = js_sys::Array::new();
        for (path, bytes) in list {
            let o = js_sys::Object::new();
            Reflect::set(&o, &"path".into(), &(*path).into()).unwrap();
            Reflect::set(&o, &"bytes".into(), &js_sys::Uint8Array::from(*bytes)).unwrap();
            out.push(&o);
        }
        out.into()
    }

    fn verify(bundle: &[u8], keys: &[&str], list: Option<&[(&str, &[u8])]>, options: &str) -> Value {
        let r = verify_model_signature(
            js_sys::Uint8Array::from(bundle).into(),
            keys.iter().map(|k| k.to_string()).collect(),
            list.map(files),
            Some(js(options)),
        )
        .unwrap();
        value(&r)
    }

    /// A keyless bundle by `model_signing sign` (tests/fixtures/oms-keyless/README.md).
    const KEYLESS: &[u8] = include_bytes!("fixtures/oms-keyless/v1.1.0-sigstore/model.sig");
    const KEYLESS_FILES: [(&str, &[u8]); 3] = [
        (
            "signme-1",
            include_bytes!("fixtures/oms-keyless/v1.1.0-sigstore/signme-1"),
        ),
        (
            "signme-2",
            include_bytes!("fixtures/oms-keyless/v1.1.0-sigstore/signme-2"),
        ),
        ("model.sig", KEYLESS),
    ];

    #[wasm_bindgen_test]
    fn a_keyless_bundle_verifies_offline_with_its_signers_identity_only() {
        let pair = |identity: &str| {
            format!(
                r#"{{"trainer_identities": [{{"identity": "{identity}", "issuer": "https://sigstore.verify.ibm.com/oauth2"}}]}}"#
            )
        };
        let r = verify(KEYLESS, &[], Some(&KEYLESS_FILES), &pair("stefanb@us.ibm.com"));
        assert_eq!(r["valid"], true, "{r}");
        let by = &r["signature"]["signed_by"];
        assert_eq!(
            (by["method"].as_str(), by["identity"].as_str()),
            (Some("keyless"), Some("stefanb@us.ibm.com"))
        );
        assert!(by["log_index"].is_u64() && by["integrated_time"].is_i64(), "{by}");
        assert_eq!(r["files"]["checked"], 2);
        let r = verify(KEYLESS, &[], Some(&KEYLESS_FILES), &pair("stefanb@us.ibm.co"));
        assert_eq!(r["failure"]["check"], "keyless_identity", "{r}");
        let r = verify(KEYLESS, &[TRAINER], None, "{}");
        assert_eq!(r["failure"]["check"], "keyless", "{r}");
        let bad_root = r#"{"trainer_identities": [{"identity": "a", "issuer": "b"}], "sigstore_root": "{}"}"#;
        assert!(verify_model_signature(
            js_sys::Uint8Array::from(KEYLESS).into(),
            vec![],
            None,
            Some(js(bad_root))
        )
        .is_err());
    }

    #[wasm_bindgen_test]
    fn a_reference_bundle_verifies_with_its_files_and_names_the_decisions_model() {
        let r = verify(
            SIG,
            &[TRAINER],
            Some(&FILES),
            &format!(r#"{{"decision": {{"model_digest": "{OMS_DIGEST}", "digest_scheme": "oms-v1.0-files"}}}}"#),
        );
        assert_eq!(r["valid"], true, "{r}");
        assert_eq!(r["failure"], Value::Null);
        let s = &r["signature"];
        let info = value(&trainer_key_info(TRAINER).unwrap());
        assert_eq!(info["kind"], "key");
        assert_eq!(info["curve"], "P-256");
        assert_eq!(s["key_id"], info["key_id"]);
        assert_eq!(s["model_name"], "model");
        assert_eq!(s["subject_digest"], OMS_DIGEST);
        assert_eq!(s["method"], "files");
        assert_eq!(s["signed_by"]["method"], "key");
        let names: Vec<&str> = s["resources"]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| r["path"].as_str().unwrap())
            .collect();
        assert_eq!(names.len(), 6);
        assert!(names.contains(&"r\u{e9}sum\u{e9} notes.txt"));
        assert_eq!(
            r["files"],
            serde_json::json!({"given": 8, "checked": 6, "ignored": 2, "all_match": true})
        );
        assert_eq!(r["same_model"]["same"], true);
        assert_eq!(r["same_model"]["by"], "digest");
        // Without files: the bundle alone, files not checked.
        let alone = verify(SIG, &[TRAINER], None, "null");
        assert_eq!(
            (
                alone["valid"].clone(),
                alone["files"].clone(),
                alone["same_model"].clone()
            ),
            (Value::Bool(true), Value::Null, Value::Null)
        );
        // The JSON text works as well as the bytes.
        let text = value(
            &verify_model_signature(
                std::str::from_utf8(SIG).unwrap().into(),
                vec![TRAINER.into()],
                None,
                None,
            )
            .unwrap(),
        );
        assert_eq!(text["valid"], true);
    }

    #[wasm_bindgen_test]
    fn another_model_a_tampered_file_and_an_untrusted_key_are_refused_by_name() {
        let other = "sha256:".to_owned() + &"ab".repeat(32);
        let r = verify(
            SIG,
            &[TRAINER],
            None,
            &format!(r#"{{"decision": {{"model_digest": "{other}", "digest_scheme": "oms-v1.0-files"}}}}"#),
        );
        assert_eq!(r["valid"], true);
        assert_eq!(r["same_model"]["same"], false);
        let mut tampered = FILES;
        tampered[0].1 = b"{\"architectures\": [\"Tiny\"], \"hidden_size\": 9}\n";
        let r = verify(SIG, &[TRAINER], Some(&tampered), "{}");
        assert_eq!(r["valid"], false);
        assert_eq!(r["failure"]["check"], "file_digest");
        assert_eq!(r["failure"]["file"], "config.json");
        assert_eq!(r["files"]["all_match"], false);
        assert_eq!(r["signature"]["model_name"], "model", "the bundle itself verified");
        let r = verify(SIG, &[TRAINER], Some(&FILES[1..]), "{}");
        assert_eq!(
            (r["failure"]["check"].as_str(), r["failure"]["file"].as_str()),
            (Some("file_missing"), Some("config.json"))
        );
        let mut extra = FILES.to_vec();
        extra.push(("notes/new.txt", b"x"));
        let r = verify(SIG, &[TRAINER], Some(&extra), "{}");
        assert_eq!(
            (r["failure"]["check"].as_str(), r["failure"]["file"].as_str()),
            (Some("file_extra"), Some("notes/new.txt"))
        );
        let r = verify(SIG, &[OTHER], Some(&FILES), "{}");
        assert_eq!(r["valid"], false);
        assert_eq!(r["failure"]["check"], "untrusted_key");
        assert_eq!(r["signature"], Value::Null);
        assert_eq!(value(&trainer_key_info(OTHER).unwrap())["curve"], "P-384");
        // Not a key, a bad path, a path given twice: errors, not results.
        assert!(trainer_key_info("hello").is_err());
        assert!(
            verify_model_signature(js_sys::Uint8Array::from(SIG).into(), vec!["hello".into()], None, None).is_err()
        );
        let mut check = ModelCheck::new(js_sys::Uint8Array::from(SIG).into(), vec![TRAINER.into()], None).unwrap();
        assert!(check.add_file("../x").is_err());
        assert!(check.add_file("/x").is_err());
        check.add_file("a").unwrap();
        check.finish_file().unwrap();
        assert!(check.add_file("a").is_err());
        // A bundle that is not one.
        let r = verify(b"{}", &[TRAINER], None, "{}");
        assert_eq!(r["failure"]["check"], "bundle_shape");
    }

    #[wasm_bindgen_test]
    fn shards_stream_through_the_check_or_are_hashed_apart() {
        // Streamed in odd chunks through the check.
        let mut check =
            ModelCheck::new(js_sys::Uint8Array::from(SHARDS_SIG).into(), vec![TRAINER.into()], None).unwrap();
        assert_eq!(check.shard_size(), 4096.0);
        assert!(check.ignored(".github/notes.txt"));
        assert!(
            !check.ignored("model.sig"),
            "this bundle signed the folder's model.sig as a file"
        );
        for (path, bytes) in FILES {
            check.add_file(path).unwrap();
            for c in bytes.chunks(1000) {
                check.update(c).unwrap();
            }
            check.finish_file().unwrap();
        }
        let r = value(&check.finish().unwrap());
        assert_eq!(r["valid"], true, "{r}");
        assert_eq!(r["signature"]["method"], "shards");
        assert_eq!(r["signature"]["shard_size"], 4096);
        assert_eq!(r["files"]["checked"], 7);
        // Hashed elsewhere (a worker per file), the digests given.
        let mut check =
            ModelCheck::new(js_sys::Uint8Array::from(SHARDS_SIG).into(), vec![TRAINER.into()], None).unwrap();
        for (path, bytes) in FILES {
            let mut h = ModelFileHasher::new(Some(4096.0)).unwrap();
            for c in bytes.chunks(777) {
                h.update(c);
            }
            let d = value(&h.finish().unwrap());
            let shards: Vec<String> = d["shards"]
                .as_array()
                .unwrap()
                .iter()
                .map(|s| s.as_str().unwrap().to_owned())
                .collect();
            check
                .add_file_digests(
                    path,
                    d["size"].as_f64().unwrap(),
                    d["sha256"].as_str().unwrap(),
                    Some(shards),
                )
                .unwrap();
        }
        assert_eq!(value(&check.finish().unwrap())["valid"], true);
        assert!(check.add_file("late").is_err(), "finished");
        // A shard digest short is an error.
        let mut check =
            ModelCheck::new(js_sys::Uint8Array::from(SHARDS_SIG).into(), vec![TRAINER.into()], None).unwrap();
        assert!(check
            .add_file_digests("weights/part-00001.bin", 64000.0, &"0".repeat(64), Some(vec![]))
            .is_err());
    }

    #[wasm_bindgen_test]
    fn a_decision_by_the_original_digest_is_compared_by_the_files() {
        let decision = format!(r#"{{"decision": {{"model_digest": "{ORIGINAL_DIGEST}"}}}}"#);
        // Without the files it cannot be told (the folder holds more than the signed files).
        let r = verify(SIG, &[TRAINER], None, &decision);
        assert_eq!(r["same_model"]["same"], Value::Null);
        let r = verify(SIG, &[TRAINER], Some(&FILES), &decision);
        assert_eq!(r["same_model"]["same"], true, "{r}");
        assert_eq!(r["same_model"]["by"], "files");
        let mut tampered = FILES;
        tampered[6].1 = b"changed";
        let r = verify(SIG, &[TRAINER], Some(&tampered), &decision);
        assert_eq!(
            r["valid"], true,
            "an ignored file changed: the trainer's signature holds"
        );
        assert_eq!(
            r["same_model"]["same"], false,
            "but the decision named the folder with the old file"
        );
    }

    #[wasm_bindgen_test]
    fn the_certificate_method_verifies_to_a_trusted_root_only() {
        // tests/fixtures/oms: signed by `model_signing sign certificate` (a code-signing
        // certificate under an intermediate under the root).
        let sig: &[u8] = include_bytes!("fixtures/oms/sigs/tree-cert.sig");
        let root = include_str!("fixtures/oms/keys/root.pem");
        let other_root = include_str!("fixtures/oms/keys/other-root.pem");
        let roots = |pem: &str| format!(r#"{{"trusted_roots": [{}]}}"#, serde_json::to_string(pem).unwrap());
        let r = verify(sig, &[], None, &roots(root));
        assert_eq!(r["valid"], true, "{r}");
        assert_eq!(r["signature"]["signed_by"]["method"], "certificate");
        assert_eq!(
            r["signature"]["signed_by"]["subject"]
                .as_str()
                .map(|s| s.contains("training-pipeline")),
            Some(true)
        );
        let r = verify(sig, &[], None, &roots(other_root));
        assert_eq!(r["failure"]["check"], "untrusted_key");
        let info = value(&trainer_key_info(root).unwrap());
        assert_eq!(
            (info["kind"].as_str(), info["certificates"].as_u64()),
            (Some("roots"), Some(1))
        );
    }

    #[wasm_bindgen_test]
    fn a_single_file_model_is_the_file_named_dot() {
        let bytes: &[u8] = include_bytes!("fixtures/oms-page/single/weights.bin");
        // The original digest of a single file is its sha256, which the signed resource is.
        let mut h = ModelFileHasher::new(None).unwrap();
        h.update(bytes);
        let hashed = value(&h.finish().unwrap());
        let digest = format!("sha256:{}", hashed["sha256"].as_str().unwrap());
        let r = verify(
            SINGLE_SIG,
            &[TRAINER],
            Some(&[(".", bytes)]),
            &format!(r#"{{"decision": {{"model_digest": "{digest}"}}}}"#),
        );
        assert_eq!(r["valid"], true, "{r}");
        assert_eq!(r["signature"]["single_file"], true);
        assert_eq!(r["signature"]["model_name"], "weights.bin");
        let r = verify(
            SINGLE_SIG,
            &[TRAINER],
            None,
            &format!(r#"{{"decision": {{"model_digest": "{digest}"}}}}"#),
        );
        assert_eq!(r["same_model"]["by"], "resources");
        assert_eq!(r["same_model"]["same"], true);
    }
}

#[wasm_bindgen_test]
fn a_cases_answer_is_read_from_its_byte_range_and_shown_side_by_side() {
    use deploy_gate::wasm::{read_output, side_by_side};
    let mut s = loaded_session();
    // The new model's records gain answers (markup in them: text, as any answer).
    let with: String = std::str::from_utf8(NEW)
        .unwrap()
        .lines()
        .enumerate()
        .map(|(n, line)| match line.trim_start().strip_prefix('{') {
            Some(rest) => format!("{{\"output\": \"answer {n}: <b>PASS</b>\", {rest}\n"),
            None => format!("{line}\n"),
        })
        .collect();
    s.add_verdicts("new", with.as_bytes(), "new_verdicts.jsonl").unwrap();
    let get = |v: &JsValue, k: &str| Reflect::get(v, &k.into()).unwrap();
    let mut seen = 0;
    for index in 0..1000 {
        let at = s.output_at("new", index).unwrap();
        if at.is_undefined() {
            continue;
        }
        // The old model's records carry none.
        assert!(s.output_at("old", index).unwrap().is_undefined());
        let (start, end) = (
            get(&at, "start").as_f64().unwrap() as usize,
            get(&at, "end").as_f64().unwrap() as usize,
        );
        let json = read_output(&with.as_bytes()[start..end], at.clone()).unwrap().unwrap();
        assert!(
            json.starts_with("\"answer ") && json.ends_with(": <b>PASS</b>\""),
            "{json}"
        );
        // Bytes that hold no answer (the file changed) give none.
        assert_eq!(read_output(b"{not json", at).unwrap(), None);
        let both = side_by_side(None, false, Some(json.clone()), false).unwrap();
        let shown: Value = serde_json::from_str(&JSON::stringify(&both).unwrap().as_string().unwrap()).unwrap();
        assert_eq!(shown["new"]["text"], serde_json::from_str::<String>(&json).unwrap());
        assert_eq!(shown["by"], "none");
        assert!(shown["old"].is_null());
        seen += 1;
    }
    assert!(seen > 10, "{seen} answers");
    // Past the last case: nothing.
    assert!(s.output_at("new", 1 << 30).unwrap().is_undefined());
}
