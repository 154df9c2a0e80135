//! The policy from the command line: `--policy FILE` under the flags, `deploy-gate policy`, the
//! errors that name the file and the field, and `verify --policy` against the statement's pin.

use crate::common::*;
use serde_json::Value;
use sha2::{Digest, Sha256};
use std::path::Path;

/// `deploy-gate policy …`: the printed policy and the digest from stderr.
fn resolved(extra: &[String]) -> (Value, String) {
    let mut a = strings(&["policy"]);
    a.extend_from_slice(extra);
    let out = run(&a);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let policy: Value = serde_json::from_slice(&out.stdout).unwrap();
    let err = stderr(&out);
    let digest = err
        .trim()
        .strip_prefix("deploy-gate: policy sha256:")
        .unwrap_or_else(|| panic!("no digest in {err:?}"))
        .to_owned();
    (policy, digest)
}

/// The files of a parity fixture as `evaluate` arguments, without any policy flag.
fn inputs(fixture: &Path) -> Vec<String> {
    let f = |name: &str| s(&fixture.join(name));
    strings(&[
        "--audit",
        &f("audit.jsonl"),
        "--old-verdicts",
        &f("old_verdicts.jsonl"),
        "--new-verdicts",
        &f("new_verdicts.jsonl"),
        "--old-trajectories",
        &f("old_trajectories.jsonl"),
        "--new-trajectories",
        &f("new_trajectories.jsonl"),
    ])
}

#[test]
fn policy_prints_the_defaults_and_their_canonical_digest() {
    let (policy, digest) = resolved(&[]);
    assert_eq!(
        policy.to_string(),
        r#"{"min_samples":20,"max_samples":200,"seed":0,"pass_verdicts":["PASS","APPROVE","COMPLETE"],"task_regression_tol":0.0,"trajectory_regression_tol":0.05,"on_insufficient":"block","mode":"point","confidence":0.95,"cluster":"template","repeats":"last"}"#
    );
    let canonical = r#"{"cluster":"template","confidence":0.95,"max_samples":200,"min_samples":20,"mode":"point","on_insufficient":"block","pass_verdicts":["PASS","APPROVE","COMPLETE"],"repeats":"last","seed":0,"task_regression_tol":0,"trajectory_regression_tol":0.05}"#;
    assert_eq!(digest, hex::encode(Sha256::digest(canonical.as_bytes())));
    // The flags of the two fields.
    let (policy, _) = resolved(&strings(&["--cluster", "none", "--repeats", "mean"]));
    assert_eq!(
        (policy["cluster"].as_str(), policy["repeats"].as_str()),
        (Some("none"), Some("mean"))
    );
}

#[test]
fn flags_override_the_policy_file_which_overrides_the_defaults() {
    let dir = tempdir();
    let file = write(
        dir.path(),
        "policy.json",
        r#"{"min_samples": 5, "seed": 9, "mode": "non-inferiority", "task_tol": 0.1, "max_samples": "none"}"#,
    );
    let (p, _) = resolved(&strings(&["--policy", &file, "--seed", "3", "--confidence", "0.9"]));
    assert_eq!(p["min_samples"], 5, "from the file");
    assert_eq!(p["seed"], 3, "the flag wins");
    assert_eq!(p["mode"], "non_inferiority", "from the file, written one way");
    assert_eq!(p["task_regression_tol"], 0.1, "from the file");
    assert_eq!(p["max_samples"], Value::Null, "`none` in the file");
    assert_eq!(p["confidence"], 0.9, "from the flag");
    assert_eq!(p["trajectory_regression_tol"], 0.05, "the default");
    // The printed policy is itself a policy file with the same digest.
    let (first, digest) = resolved(&strings(&["--policy", &file]));
    let again = write(dir.path(), "again.json", &first.to_string());
    assert_eq!(resolved(&strings(&["--policy", &again])), (first, digest));
}

#[test]
fn evaluate_and_test_set_with_a_policy_file_are_byte_identical_to_the_flags() {
    let dir = tempdir();
    let fixture = parity_dir().join("approved");
    let args_json: Value = serde_json::from_slice(&std::fs::read(fixture.join("args.json")).unwrap()).unwrap();
    // The reference's policy, with its rule for missing verdicts (`evaluate_args` gives it too).
    let mut reference = args_json["policy"].clone();
    reference["max_missing"] = serde_json::json!(1);
    let file = write(dir.path(), "policy.json", &reference.to_string());

    let with_flags = run(&evaluate_args(&fixture));
    let mut with_file = strings(&["evaluate", "--policy", &file]);
    with_file.extend(inputs(&fixture));
    let with_file = run(&with_file);
    assert_eq!(
        with_file.status.code(),
        with_flags.status.code(),
        "{}",
        stderr(&with_file)
    );
    assert!(!with_file.stdout.is_empty());
    assert_eq!(with_file.stdout, with_flags.stdout, "the same report, byte for byte");

    let (ts_flags, _) = policy_flags(&fixture);
    let mut a = strings(&["test-set", "--audit", &s(&fixture.join("audit.jsonl"))]);
    a.extend(ts_flags);
    let from_flags = run(&a);
    let from_file = run(&strings(&[
        "test-set",
        "--audit",
        &s(&fixture.join("audit.jsonl")),
        "--policy",
        &file,
    ]));
    assert_eq!(from_file.status.code(), Some(0), "{}", stderr(&from_file));
    assert_eq!(from_file.stdout, from_flags.stdout);

    // A flag over the file changes the report's policy.
    let mut over = strings(&["evaluate", "--policy", &file, "--task-tol", "0.25"]);
    over.extend(inputs(&fixture));
    let report: Value = serde_json::from_slice(&run(&over).stdout).unwrap();
    assert_eq!(report["policy"]["task_regression_tol"], 0.25);
    assert_eq!(report["policy"]["on_insufficient"], "approve", "the rest from the file");
}

#[test]
fn a_bad_policy_file_is_refused_naming_the_file_and_the_field() {
    let dir = tempdir();
    let audit = write(dir.path(), "audit.jsonl", "");
    let cases = [
        ("syntax.json", "{\"min_samples\": 5,\n", vec!["line 2"]),
        (
            "unknown.json",
            r#"{"min_sample": 5}"#,
            vec!["unknown field `min_sample`"],
        ),
        (
            "value.json",
            r#"{"max_samples": "lots"}"#,
            vec!["max_samples must be a number or `none`, not `lots`"],
        ),
        (
            "confidence.json",
            r#"{"confidence": 2}"#,
            vec!["confidence must be between 0 and 1"],
        ),
        (
            "twice.json",
            r#"{"seed": 1, "seed": 2}"#,
            vec!["`seed`", "more than once"],
        ),
        ("array.json", "[]", vec!["JSON object"]),
        ("empty-list.json", r#"{"pass_verdicts": []}"#, vec!["pass_verdicts"]),
    ];
    for (name, text, wanted) in cases {
        let file = write(dir.path(), name, text);
        for cmd in [
            strings(&["test-set", "--audit", &audit, "--policy", &file]),
            strings(&["policy", "--policy", &file]),
        ] {
            let out = run(&cmd);
            assert_eq!(out.status.code(), Some(1), "{name}: {}", stderr(&out));
            let err = stderr(&out);
            assert!(err.contains(&format!("{file} (policy file): ")), "{name}: {err}");
            for w in &wanted {
                assert!(err.contains(w), "{name}: {w:?} not in {err}");
            }
            assert!(out.stdout.is_empty(), "{name}: nothing is printed");
        }
    }
    let big = write(
        dir.path(),
        "big.json",
        &format!("{{\"seed\": 1{}}}", " ".repeat(1 << 20)),
    );
    let out = run(&strings(&["policy", "--policy", &big]));
    assert_eq!(out.status.code(), Some(1));
    assert!(
        stderr(&out).contains(&format!("{big} (policy file): more than")),
        "{}",
        stderr(&out)
    );
    let missing = dir.path().join("missing.json");
    let out = run(&strings(&["policy", "--policy", &s(&missing)]));
    assert_eq!(out.status.code(), Some(1));
    assert!(stderr(&out).contains(&s(&missing)), "{}", stderr(&out));
}

#[test]
fn a_bad_flag_is_a_usage_error_naming_the_field() {
    for (flag, value, field) in [
        ("--min-samples", "lots", "min_samples"),
        ("--max-samples", "lots", "max_samples"),
        ("--seed", "-1", "seed"),
        ("--task-tol", "inf", "task_tol"),
        ("--traj-tol", "x", "traj_tol"),
        ("--confidence", "1.5", "confidence"),
        ("--mode", "strict", "mode"),
        ("--on-insufficient", "maybe", "on_insufficient"),
    ] {
        let out = run(&strings(&["policy", &format!("{flag}={value}")]));
        assert_eq!(out.status.code(), Some(1), "{flag}");
        assert!(stderr(&out).contains(field), "{flag}: {}", stderr(&out));
    }
    // `non-inferiority` is accepted by every source; the empty pass set by none.
    assert_eq!(
        resolved(&strings(&["--mode", "non-inferiority"])).0["mode"],
        "non_inferiority"
    );
    let out = run(&strings(&["policy", "--pass-verdicts", ","]));
    assert_eq!(out.status.code(), Some(1));
    assert!(
        stderr(&out).contains("pass_verdicts must name at least one verdict"),
        "{}",
        stderr(&out)
    );
}

#[test]
fn verify_with_a_policy_file_checks_the_pinned_digest_then_reproduces_with_it() {
    let dir = tempdir();
    let r = reviewer(dir.path());
    let fixture = parity_dir().join("approved");
    let model = write(dir.path(), "model.bin", "weights");
    let envelope = dir.path().join("decision.dsse.json");
    let out = run(&strings(&[
        "sign",
        &s(&r.report),
        "--key",
        &s(&r.key),
        "--model",
        "agent",
        "--model-path",
        &model,
        "--target",
        "prod",
        "--out",
        &s(&envelope),
    ]));
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let statement = {
        let env: Value = serde_json::from_slice(&std::fs::read(&envelope).unwrap()).unwrap();
        use base64::Engine;
        let payload = base64::engine::general_purpose::STANDARD
            .decode(env["payload"].as_str().unwrap())
            .unwrap();
        serde_json::from_slice::<Value>(&payload).unwrap()
    };
    let pinned = statement["predicate"]["policy"]["digest"]["sha256"]
        .as_str()
        .unwrap()
        .to_owned();

    // The team's file: the fixture's policy, fields left out are the defaults.
    let args_json: Value = serde_json::from_slice(&std::fs::read(fixture.join("args.json")).unwrap()).unwrap();
    // With the reference's rule for missing verdicts, which the signed report was made under.
    let mut reference = args_json["policy"].clone();
    reference["max_missing"] = serde_json::json!(1);
    let team = write(dir.path(), "team.json", &reference.to_string());
    let (_, digest) = resolved(&strings(&["--policy", &team]));
    assert_eq!(
        digest, pinned,
        "`deploy-gate policy` prints the digest the statement pins"
    );

    let verify = |policy: &str| {
        let mut a = strings(&[
            "verify",
            &s(&envelope),
            "--trusted-key",
            &s(&r.public),
            "--model-path",
            &model,
            "--target",
            "prod",
            "--policy",
            policy,
            "--reproduce",
        ]);
        a.extend(inputs(&fixture));
        run(&a)
    };
    let out = verify(&team);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(stderr(&out).contains("reproduced from the input files"));

    // Another policy: refused with its own check, before anything is reproduced.
    let other = write(
        dir.path(),
        "other.json",
        r#"{"min_samples": 20, "max_samples": null, "task_tol": 0.5}"#,
    );
    let out = verify(&other);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["check"], "policy");
    let message = v["message"].as_str().unwrap();
    assert!(message.contains(&other) && message.contains(&pinned), "{message}");

    // Without --reproduce, the pin alone is checked.
    let pin_only = |policy: &str| {
        run(&strings(&[
            "verify",
            &s(&envelope),
            "--trusted-key",
            &s(&r.public),
            "--model-path",
            &model,
            "--target",
            "prod",
            "--policy",
            policy,
        ]))
    };
    assert_eq!(pin_only(&team).status.code(), Some(0), "{}", stderr(&pin_only(&team)));
    let out = pin_only(&other);
    assert_eq!(out.status.code(), Some(2));
    assert_eq!(serde_json::from_slice::<Value>(&out.stdout).unwrap()["check"], "policy");

    // A bad file is a usage error naming it.
    let bad = write(dir.path(), "bad.json", r#"{"mode": "strict"}"#);
    let out = verify(&bad);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        stderr(&out).contains(&format!("{bad} (policy file): mode must be")),
        "{}",
        stderr(&out)
    );
}

#[test]
fn the_help_shows_the_defaults_of_the_policy_module() {
    let out = run(&strings(&["evaluate", "--help"]));
    let help = String::from_utf8_lossy(&out.stdout);
    for shown in [
        "[default: 20]",
        "[default: 200]",
        "[default: PASS,APPROVE,COMPLETE]",
        "[default: 0.0]",
        "[default: 0.05]",
        "[default: block]",
        "[default: point]",
        "[default: 0.95]",
        "[default: template]",
        "[default: last]",
    ] {
        assert!(help.contains(shown), "{shown} not in {help}");
    }
}
