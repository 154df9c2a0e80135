//! Sequential decisions from the command line: the policy's `sequential` and `budget` (flags,
//! files, refusals), `evaluate` deciding the task criterion by the sequential rule, its report's
//! `sequential` object, signing, `verify --reproduce`, continuation and template units.

use crate::common::*;
use serde_json::Value;

/// `deploy-gate policy …`: the printed policy, or the failed output.
fn policy(extra: &[&str]) -> std::process::Output {
    let mut a = strings(&["policy"]);
    a.extend(strings(extra));
    run(&a)
}

#[test]
fn the_flags_and_the_file_give_sequential_and_budget() {
    let out = policy(&["--mode", "non_inferiority", "--sequential", "--budget", "200"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let p: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!((p["sequential"].as_bool(), p["budget"].as_u64()), (Some(true), Some(200)));
    // Without them the policy is written as before.
    let out = policy(&["--mode", "non_inferiority"]);
    let p: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert!(p.get("sequential").is_none() && p.get("budget").is_none(), "{p}");
    // From a file, the flag over it.
    let dir = tempdir();
    let file = write(
        dir.path(),
        "policy.json",
        r#"{"mode": "non_inferiority", "sequential": true, "budget": 50}"#,
    );
    let out = policy(&["--policy", &file, "--budget", "70"]);
    let p: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!((p["sequential"].as_bool(), p["budget"].as_u64()), (Some(true), Some(70)));
}

#[test]
fn sequential_without_non_inferiority_is_refused_naming_the_field() {
    let out = policy(&["--sequential"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(stderr(&out).contains("sequential: true needs mode `non_inferiority`"), "{}", stderr(&out));
    let out = policy(&["--mode", "non_inferiority", "--budget", "10"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(stderr(&out).contains("budget is the sequential rule's"), "{}", stderr(&out));
    let out = policy(&["--mode", "non_inferiority", "--sequential", "--budget", "0"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(stderr(&out).contains("budget must be a whole number ≥ 1"), "{}", stderr(&out));
    let dir = tempdir();
    let file = write(dir.path(), "policy.json", r#"{"sequential": true, "mode": "point"}"#);
    let out = policy(&["--policy", &file]);
    assert_eq!(out.status.code(), Some(1));
    let err = stderr(&out);
    assert!(err.contains("policy.json") && err.contains("sequential"), "{err}");
}
