//! Every folder of `tests/fixtures/parity` run through the CLI must give the reference's
//! test set, comparison and decision (`expected.json`).

use crate::common::*;
use serde_json::Value;

fn assert_same(what: &str, dir: &std::path::Path, got: &Value, want: &Value) {
    if let Some(diff) = first_difference(what, got, want) {
        panic!("{}: {diff}\n{}", dir.display(), json_diff(want, got));
    }
}

#[test]
fn every_fixture_matches_the_reference() {
    let cases = parity_cases();
    assert!(cases.len() >= 8, "fixtures missing: {cases:?}");
    for dir in cases {
        let expected: Value = serde_json::from_slice(&std::fs::read(dir.join("expected.json")).unwrap()).unwrap();

        let out = run(&evaluate_args(&dir));
        let stderr = String::from_utf8_lossy(&out.stderr);
        let report: Value =
            serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("{}: {e}\n{stderr}", dir.display()));
        let approved = expected["decision"]["approved"].as_bool().unwrap();
        assert_eq!(
            out.status.code(),
            Some(if approved { 0 } else { 3 }),
            "{}: {stderr}",
            dir.display()
        );
        assert_same(
            "decision",
            &dir,
            &reference_decision(&report["decision"]),
            &expected["decision"],
        );
        assert_same("comparison", &dir, &report["comparison"], &expected["comparison"]);
        for (role, key) in [("old", "task_old"), ("new", "task_new")] {
            assert_eq!(
                report["verdicts"][role]["pass_rate"],
                expected[key],
                "{}: {key}",
                dir.display()
            );
        }

        let (ts_flags, _) = policy_flags(&dir);
        let mut args = vec![
            "test-set".to_owned(),
            "--audit".into(),
            dir.join("audit.jsonl").display().to_string(),
        ];
        args.extend(ts_flags);
        let out = run(&args);
        assert!(
            out.status.success(),
            "{}: {}",
            dir.display(),
            String::from_utf8_lossy(&out.stderr)
        );
        let mut cases: Vec<Value> = String::from_utf8(out.stdout)
            .unwrap()
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
        // `input_hash` is this project's addition (carried when the log has it); the rest must
        // be the reference's fields, in its order.
        for case in &mut cases {
            if let Some(hash) = case.as_object_mut().unwrap().remove("input_hash") {
                let hex = hash.as_str().unwrap();
                assert!(hex.len() == 64 && hex.bytes().all(|b| b.is_ascii_hexdigit()), "{hex}");
            }
        }
        assert_same("test_set", &dir, &Value::Array(cases), &expected["test_set"]);
        assert_eq!(report["test_set"]["num_cases"], expected["decision"]["num_cases"]);
    }
}

#[test]
fn real_writer_shape_gives_what_approved_gives() {
    let dir = parity_dir();
    let a: Value = serde_json::from_slice(&run(&evaluate_args(&dir.join("approved"))).stdout).unwrap();
    let b: Value = serde_json::from_slice(&run(&evaluate_args(&dir.join("real-writer-shape"))).stdout).unwrap();
    assert_eq!(a["decision"], b["decision"]);
    assert_eq!(a["cases"], b["cases"]);
    assert!(a["test_set"]["num_cases"].as_u64().unwrap() > 100);
}
