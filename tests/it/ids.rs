//! Pipeline ids of two types: the integer `5` and the string `"5"` are two pipelines (as in the
//! reference, where `5 != "5"`), integers of any size keep their digits, the sample key is the
//! id's text for both types, and verdict files name a case with its id's type (or, in the
//! formats that have no types, by its text alone).

use crate::common::{parity_dir, run, s, stderr, tempdir, text, write};
use deploy_gate::{evaluate_in_memory, GatePolicy, MemoryInputs, PipelineId};
use serde_json::Value;
use sha2::{Digest, Sha256};

fn policy(min: usize, max: Option<usize>, seed: u64) -> GatePolicy {
    let mut p = GatePolicy::default();
    p.test_set.min_samples = min;
    p.test_set.max_samples = max;
    p.test_set.seed = seed;
    p
}

/// One pipeline's lines: a stage with an input, and a successful completion.
fn pipeline(id: &str, verdict: &str) -> String {
    format!(
        "{{\"pipeline_id\": {id}, \"stage_id\": \"s\", \"stage_type\": \"llm\", \"input\": \"in\", \"output\": \"o\"}}\n\
         {{\"pipeline_id\": {id}, \"template_id\": \"t\", \"verdict\": \"{verdict}\", \"is_complete\": true, \"error\": null}}\n"
    )
}

/// Evaluates in memory; the report as JSON text and as a value.
fn evaluate(audit: &str, old: &str, new: &str, policy: &GatePolicy) -> Result<(String, Value), String> {
    let inputs = MemoryInputs {
        audit: vec![("audit.jsonl", audit.as_bytes())],
        old_verdicts: ("old.v", old.as_bytes()),
        new_verdicts: ("new.v", new.as_bytes()),
        old_trajectories: None,
        new_trajectories: None,
    };
    let (_, report) = evaluate_in_memory(&inputs, policy).map_err(|e| e.to_string())?;
    let json = report.to_json();
    let value = serde_json::from_str(&json).unwrap();
    Ok((json, value))
}

/// `(id as JSON, old verdict, new verdict, missing on the new side)` of each case.
fn outcomes(report: &Value) -> Vec<(String, Value, Value, bool)> {
    report["cases"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| {
            (
                c["pipeline_id"].to_string(),
                c["old_verdict"].clone(),
                c["new_verdict"].clone(),
                c["new_missing"].as_bool().unwrap(),
            )
        })
        .collect()
}

/// The issue's log: `5` and `"5"` stopped `test-set` and `evaluate` with "audit file … changed
/// while it was read" (exit 1). They are two cases, in the CLI's test set and report.
#[test]
fn the_integer_5_and_the_string_5_are_two_cases_in_the_cli() {
    let dir = tempdir();
    let audit = write(
        dir.path(),
        "audit.jsonl",
        &(pipeline("5", "PASS") + &pipeline("\"5\"", "APPROVE")),
    );
    let old = write(
        dir.path(),
        "old.jsonl",
        "{\"pipeline_id\": 5, \"verdict\": \"PASS\"}\n{\"pipeline_id\": \"5\", \"verdict\": \"APPROVE\"}\n",
    );
    let new = write(
        dir.path(),
        "new.jsonl",
        "{\"pipeline_id\": \"5\", \"verdict\": \"DENY\"}\n{\"pipeline_id\": 5, \"verdict\": \"FAIL\"}\n",
    );
    let out = run(&["test-set", "--audit", &audit, "--min-samples", "1"]);
    assert!(out.status.success(), "{}", text(&out));
    let ids: Vec<String> = String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .map(|l| l.split(",\"template_id\"").next().unwrap().to_owned())
        .collect();
    assert_eq!(ids, ["{\"pipeline_id\":5", "{\"pipeline_id\":\"5\""]);

    let out = run(&[
        "evaluate",
        "--audit",
        &audit,
        "--old-verdicts",
        &old,
        "--new-verdicts",
        &new,
        "--min-samples",
        "1",
    ]);
    assert_eq!(out.status.code(), Some(3), "blocked, not refused: {}", text(&out));
    let report: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(
        outcomes(&report),
        [
            ("5".into(), "PASS".into(), "FAIL".into(), false),
            ("\"5\"".into(), "APPROVE".into(), "DENY".into(), false)
        ]
    );
    assert_eq!(report["verdicts"]["new"]["extra"], 0);
    assert_eq!(report["verdicts"]["new"]["duplicates"], 0);
}

/// Integers past 64 bits (and past 128) are kept with their digits and written back as the
/// same JSON integers, in the test set and the report; the reference keeps them too.
#[test]
fn integer_ids_of_any_size_keep_their_digits() {
    let dir = parity_dir().join("typed-ids");
    let audit = s(&dir.join("audit.jsonl"));
    let out = run(&["test-set", "--audit", &audit, "--min-samples", "1"]);
    assert!(out.status.success(), "{}", text(&out));
    let jsonl = String::from_utf8(out.stdout).unwrap();
    for id in [
        "123456789012345678901234567890",
        "\"123456789012345678901234567890\"",
        "18446744073709551616",
        "-9223372036854775809",
        "1234567890123456789012345678901234567890123",
        "-1234567890123456789012345678901234567890123",
    ] {
        assert!(
            jsonl.contains(&format!("{{\"pipeline_id\":{id},")),
            "{id} not written back as it was:\n{jsonl}"
        );
    }
    let out = run(&crate::common::evaluate_args(&dir));
    assert_eq!(out.status.code(), Some(3), "{}", text(&out));
    let report = String::from_utf8(out.stdout).unwrap();
    assert!(report.contains("\"pipeline_id\": 1234567890123456789012345678901234567890123,"));
    assert!(report.contains("\"pipeline_id\": -1234567890123456789012345678901234567890123,"));
    assert!(report.contains("\"pipeline_id\": \"123456789012345678901234567890\","));
}

/// The HTML report's table shows a wide integer id's digits (read from the report's JSON as
/// raw text, not as a float).
#[test]
fn the_html_report_shows_a_wide_ids_digits() {
    let dir = tempdir();
    let id = "-1234567890123456789012345678901234567890123";
    let audit = write(dir.path(), "audit.jsonl", &pipeline(id, "PASS"));
    let old = write(
        dir.path(),
        "old.jsonl",
        &format!("{{\"pipeline_id\": {id}, \"verdict\": \"PASS\"}}\n"),
    );
    let new = write(
        dir.path(),
        "new.jsonl",
        &format!("{{\"pipeline_id\": {id}, \"verdict\": \"FAIL\"}}\n"),
    );
    let html = dir.path().join("report.html");
    let out = run(&[
        "evaluate",
        "--audit",
        &audit,
        "--old-verdicts",
        &old,
        "--new-verdicts",
        &new,
        "--min-samples",
        "1",
        "--html",
        &s(&html),
    ]);
    assert_eq!(out.status.code(), Some(3), "{}", text(&out));
    let html = std::fs::read_to_string(html).unwrap();
    assert!(
        html.contains(&format!("<td class=\"mono\">{id}<")),
        "the table shows the digits"
    );
}

/// As the reference's `if not pid: continue`: falsy ids have none; negative integers are ids.
/// Floats and `true` (which Python would keep as dict keys, `True == 1` and `5.0 == 5`) are
/// skipped as `bad_pipeline_id` here, a deliberate difference.
#[test]
fn falsy_ids_are_skipped_negative_ones_kept_floats_refused() {
    let mut audit = String::new();
    for id in ["-3", "7", "\"x\""] {
        audit += &pipeline(id, "PASS");
    }
    for id in [
        "0", "-0", "\"\"", "false", "null", "2.5", "5.0", "1e3", "true", "[5]", "{}",
    ] {
        audit += &pipeline(id, "PASS");
    }
    let verdicts = "{\"pipeline_id\": -3, \"verdict\": \"PASS\"}\n{\"pipeline_id\": 7, \"verdict\": \"PASS\"}\n{\"pipeline_id\": \"x\", \"verdict\": \"PASS\"}\n";
    let (_, report) = evaluate(&audit, verdicts, verdicts, &policy(1, None, 0)).unwrap();
    let ids: Vec<String> = outcomes(&report).into_iter().map(|o| o.0).collect();
    assert_eq!(ids, ["-3", "7", "\"x\""]);
    let skipped = &report["audit"]["skipped"];
    // Two lines (a stage and a completion) per id.
    assert_eq!(skipped["no_pipeline_id"]["count"], 10, "{skipped}");
    assert_eq!(skipped["bad_pipeline_id"]["count"], 12, "{skipped}");
}

/// The sample key is `sha256("<seed>:<text>")` for an integer id and a string id alike (so a
/// log of one type samples as it always did); two ids with one text have one key, and the
/// order of first success breaks the tie, as it does for any two equal keys.
#[test]
fn the_sample_key_is_the_ids_text_for_both_types() {
    let seed = 11;
    let key = |text: &str| -> [u8; 32] { Sha256::digest(format!("{seed}:{text}").as_bytes()).into() };
    let texts: Vec<String> = (1..=40).map(|n| (n * 7919).to_string()).collect();
    let mut want: Vec<&String> = texts.iter().collect();
    want.sort_by_key(|t| key(t));
    want.truncate(9);
    let chosen = |quoted: bool| -> Vec<String> {
        let audit: String = texts
            .iter()
            .map(|t| pipeline(&if quoted { format!("\"{t}\"") } else { t.clone() }, "PASS"))
            .collect();
        let (_, report) = evaluate(&audit, "", "", &policy(1, Some(9), seed)).unwrap();
        let mut ids: Vec<String> = outcomes(&report)
            .into_iter()
            .map(|o| o.0.trim_matches('"').to_owned())
            .collect();
        ids.sort_by_key(|t| key(t));
        ids
    };
    assert_eq!(chosen(false), want.iter().map(|t| t.to_string()).collect::<Vec<_>>());
    assert_eq!(chosen(true), chosen(false));

    // One text, two types: the one whose first success comes first is kept.
    let pair = |first: &str, second: &str| {
        let audit = pipeline(first, "PASS") + &pipeline(second, "PASS");
        let (_, report) = evaluate(&audit, "", "", &policy(1, Some(1), seed)).unwrap();
        outcomes(&report).into_iter().map(|o| o.0).collect::<Vec<_>>()
    };
    assert_eq!(pair("5", "\"5\""), ["5"]);
    assert_eq!(pair("\"5\"", "5"), ["\"5\""]);
}

/// A verdict file written before ids had types keys an integer id by its string (JSONL
/// `"pipeline_id": "5"`, a JSON object's key, a CSV cell): it still matches, as it did, while
/// the log holds no string id with the same text.
#[test]
fn a_verdict_keyed_by_the_other_type_still_matches_when_the_log_has_no_twin() {
    let audit = pipeline("5", "PASS") + &pipeline("\"a\"", "PASS");
    let p = policy(1, None, 0);
    for old in [
        "{\"pipeline_id\": \"5\", \"verdict\": \"PASS\"}\n{\"pipeline_id\": \"a\", \"verdict\": \"PASS\"}\n",
        "[{\"pipeline_id\": \"5\", \"verdict\": \"PASS\"}, {\"pipeline_id\": \"a\", \"verdict\": \"PASS\"}]",
        "{\"5\": \"PASS\", \"a\": \"PASS\"}",
        "pipeline_id,verdict\n5,PASS\na,PASS\n",
    ] {
        let (_, report) = evaluate(&audit, old, old, &p).unwrap();
        let got = outcomes(&report);
        assert_eq!(got[0], ("5".into(), "PASS".into(), "PASS".into(), false), "{old}");
        assert_eq!(report["verdicts"]["old"]["extra"], 0, "{old}");
    }
}

/// When the log holds both `5` and `"5"`, a typed record names one of them only: the string
/// pipeline's record is not the integer case's, even when the string pipeline is no case.
#[test]
fn a_typed_record_names_only_its_own_pipeline_when_the_log_has_both() {
    // "5" has a stage line but no completion: it is a pipeline of the log, not a case.
    let audit = pipeline("5", "PASS")
        + "{\"pipeline_id\": \"5\", \"stage_id\": \"s\", \"stage_type\": \"llm\", \"input\": \"in\"}\n"
        + &pipeline("\"b\"", "PASS");
    let old = "{\"pipeline_id\": 5, \"verdict\": \"PASS\"}\n{\"pipeline_id\": \"b\", \"verdict\": \"PASS\"}\n";
    let new = "{\"pipeline_id\": \"5\", \"verdict\": \"PASS\"}\n{\"pipeline_id\": \"b\", \"verdict\": \"PASS\"}\n";
    let (_, report) = evaluate(&audit, old, new, &policy(1, None, 0)).unwrap();
    assert_eq!(
        outcomes(&report)[0],
        ("5".into(), "PASS".into(), Value::Null, true),
        "the new file has no record for the integer 5"
    );
    assert_eq!(report["verdicts"]["new"]["extra"], 1);
    assert_eq!(report["verdicts"]["new"]["missing"], 1);
}

/// A JSON object's keys and CSV cells have no type: when the log holds both `5` and `"5"` and
/// one of them is a case, a record keyed `5` cannot say whose it is, and the file is refused,
/// naming its line, in every shell (this is the core's session) and in the CLI.
#[test]
fn an_untyped_record_for_an_id_held_with_both_types_is_refused() {
    let audit = pipeline("5", "PASS") + &pipeline("\"5\"", "PASS");
    let typed = "{\"pipeline_id\": 5, \"verdict\": \"PASS\"}\n{\"pipeline_id\": \"5\", \"verdict\": \"PASS\"}\n";
    let message =
        "pipeline id \"5\" is ambiguous: the audit log holds the integer 5 and the string \"5\" as two pipelines";
    for (untyped, line, why) in [
        ("{\n \"5\": \"PASS\"\n}\n", 2, "a JSON object's keys are text"),
        (
            "pipeline_id,verdict\r\nx,PASS\r\n5,PASS\r\n",
            3,
            "a CSV or TSV cell is text",
        ),
    ] {
        let e = evaluate(&audit, typed, untyped, &policy(1, None, 0)).unwrap_err();
        let want = format!(
            "new.v (new_verdicts) line {line}: {message}, and {why}; write this file as JSONL or a JSON array, each pipeline_id as the log writes it"
        );
        assert_eq!(e, want);
    }
    let dir = tempdir();
    let audit_path = write(dir.path(), "audit.jsonl", &audit);
    let typed_path = write(dir.path(), "old.jsonl", typed);
    let map_path = write(dir.path(), "new.json", "{\"5\": \"PASS\"}");
    let out = run(&[
        "evaluate",
        "--audit",
        &audit_path,
        "--old-verdicts",
        &typed_path,
        "--new-verdicts",
        &map_path,
        "--min-samples",
        "1",
    ]);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    assert!(
        stderr(&out).contains(&format!("{map_path} (new_verdicts) line 1: {message}")),
        "{}",
        text(&out)
    );
}

/// Ids as messages and the API write them: with their type.
#[test]
fn ids_say_their_type() {
    let five = PipelineId {
        text: "5".into(),
        numeric: true,
    };
    let quoted = PipelineId {
        text: "5".into(),
        numeric: false,
    };
    assert_ne!(five, quoted);
    assert_eq!((five.to_json(), quoted.to_json()), ("5".to_owned(), "\"5\"".to_owned()));
    assert_eq!((five.type_name(), quoted.type_name()), ("integer", "string"));
    let wide = PipelineId {
        text: "-1234567890123456789012345678901234567890123".into(),
        numeric: true,
    };
    assert_eq!(
        serde_json::to_string(&[&wide, &five, &quoted]).unwrap(),
        "[-1234567890123456789012345678901234567890123,5,\"5\"]"
    );
}

/// A decision over ids past 64 bits is signed with every digit: the statement carries the
/// report's own text (not its numbers read as doubles), so the signed decision reproduces from
/// the input files, and a diff of it against its report finds the same cases.
#[test]
fn a_signed_decision_keeps_the_digits_of_wide_ids_and_reproduces() {
    use base64::Engine as _;
    let dir = tempdir();
    let d = dir.path();
    let fixture = parity_dir().join("typed-ids");
    let f = |name: &str| s(&fixture.join(name));
    let report = d.join("report.json");
    let inputs = [
        "--audit".to_owned(),
        f("audit.jsonl"),
        "--old-verdicts".to_owned(),
        f("old_verdicts.jsonl"),
        "--new-verdicts".to_owned(),
        f("new_verdicts.jsonl"),
    ];
    let policy = write(d, "policy.json", "{\"min_samples\": 1}");
    let mut args = vec!["evaluate".to_owned(), "--policy".to_owned(), policy.clone()];
    args.extend(inputs.iter().cloned());
    args.extend(["--out".to_owned(), s(&report)]);
    let out = run(&args);
    assert_eq!(out.status.code(), Some(3), "{}", stderr(&out));
    let report_text = std::fs::read_to_string(&report).unwrap();
    let wide = "1234567890123456789012345678901234567890123";
    assert!(
        report_text.contains(&format!("\"pipeline_id\": {wide}")),
        "the fixture has a wide id"
    );

    let model = write(d, "model.bin", "weights");
    assert!(run(&["keygen", "--out", &s(&d.join("r"))]).status.success());
    let envelope = s(&d.join("decision.json"));
    let key = s(&d.join("r.key.pem"));
    let public = s(&d.join("r.pub.pem"));
    let out = run(&[
        "sign",
        &s(&report),
        "--key",
        &key,
        "--model",
        "m",
        "--model-path",
        &model,
        "--target",
        "prod",
        "--out",
        &envelope,
    ]);
    assert!(out.status.success(), "{}", stderr(&out));

    // The payload holds the report's text, whitespace aside, byte for byte.
    let env: Value = serde_json::from_str(&std::fs::read_to_string(&envelope).unwrap()).unwrap();
    let payload = base64::engine::general_purpose::STANDARD
        .decode(env["payload"].as_str().unwrap())
        .unwrap();
    let payload = String::from_utf8(payload).unwrap();
    let compact = deploy_gate::json::layout::compact(&report_text);
    assert!(
        payload.contains(&compact),
        "the statement carries the report as written"
    );
    assert!(payload.contains(&format!("\"pipeline_id\":{wide}")));
    assert!(payload.contains(&format!("\"pipeline_id\":-{wide}")));

    let mut verify = vec![
        "verify".to_owned(),
        envelope.clone(),
        "--trusted-key".to_owned(),
        public.clone(),
        "--model-path".to_owned(),
        model,
        "--target".to_owned(),
        "prod".to_owned(),
        "--reproduce".to_owned(),
        "--policy".to_owned(),
        policy,
    ];
    verify.extend(inputs.iter().cloned());
    let out = run(&verify);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("reproduced from the input files"),
        "{}",
        stderr(&out)
    );

    // The diff of the report against its own signed decision: every case in common.
    let out = run(&["diff", &s(&report), &envelope, "--trusted-key", &public]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let diff: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(diff["cases"]["common"], 13, "{diff}");
    assert_eq!(diff["cases"]["only_before"], serde_json::json!([]));
    assert_eq!(diff["cases"]["only_after"], serde_json::json!([]));
}
