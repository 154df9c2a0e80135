//! Helpers shared by the integration tests: running the CLI and reading fixtures.
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// The parity fixtures folder.
pub fn parity_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/parity")
}

/// Every parity fixture folder, sorted.
pub fn parity_cases() -> Vec<PathBuf> {
    let mut dirs: Vec<PathBuf> = std::fs::read_dir(parity_dir())
        .expect("tests/fixtures/parity exists")
        .map(|e| e.unwrap().path())
        .filter(|p| p.is_dir())
        .collect();
    dirs.sort();
    dirs
}

/// Runs `deploy-gate` with the arguments.
pub fn run(args: &[String]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_deploy-gate"))
        .args(args)
        .output()
        .expect("deploy-gate runs")
}

/// A fixture's policy (`args.json`) as CLI flags.
pub fn policy_flags(dir: &Path) -> (Vec<String>, Vec<String>) {
    let args: serde_json::Value = serde_json::from_slice(&std::fs::read(dir.join("args.json")).unwrap()).unwrap();
    let p = &args["policy"];
    let max = match &p["max_samples"] {
        serde_json::Value::Null => "none".to_owned(),
        v => v.to_string(),
    };
    let pass: Vec<String> = p["pass_verdicts"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_str().unwrap().to_owned())
        .collect();
    let test_set = vec![
        "--min-samples".into(),
        p["min_samples"].to_string(),
        "--max-samples".into(),
        max,
        "--pass-verdicts".into(),
        pass.join(","),
    ];
    let gate = vec![
        "--task-tol".into(),
        p["task_regression_tol"].to_string(),
        "--traj-tol".into(),
        p["trajectory_regression_tol"].to_string(),
        "--on-insufficient".into(),
        p["on_insufficient"].as_str().unwrap().to_owned(),
    ];
    (test_set, gate)
}

/// The `evaluate` arguments for a fixture folder.
pub fn evaluate_args(dir: &Path) -> Vec<String> {
    let (ts, gate) = policy_flags(dir);
    let f = |name: &str| dir.join(name).display().to_string();
    let mut args = vec!["evaluate".into(), "--audit".into(), f("audit.jsonl")];
    args.extend([
        "--old-verdicts".into(),
        f("old_verdicts.jsonl"),
        "--new-verdicts".into(),
        f("new_verdicts.jsonl"),
    ]);
    if dir.join("old_trajectories.jsonl").exists() {
        args.extend([
            "--old-trajectories".into(),
            f("old_trajectories.jsonl"),
            "--new-trajectories".into(),
            f("new_trajectories.jsonl"),
        ]);
    }
    args.extend(ts);
    args.extend(gate);
    args
}

/// A readable first difference between two JSON values.
pub fn first_difference(path: &str, got: &serde_json::Value, want: &serde_json::Value) -> Option<String> {
    use serde_json::Value;
    match (got, want) {
        (Value::Object(a), Value::Object(b)) => {
            let ka: Vec<&String> = a.keys().collect();
            let kb: Vec<&String> = b.keys().collect();
            if ka != kb {
                return Some(format!("{path}: keys {ka:?} != {kb:?}"));
            }
            a.iter()
                .find_map(|(k, v)| first_difference(&format!("{path}.{k}"), v, &b[k]))
        }
        (Value::Array(a), Value::Array(b)) => {
            if a.len() != b.len() {
                return Some(format!("{path}: length {} != {}", a.len(), b.len()));
            }
            a.iter()
                .zip(b)
                .enumerate()
                .find_map(|(i, (x, y))| first_difference(&format!("{path}[{i}]"), x, y))
        }
        _ if got == want => None,
        _ => Some(format!("{path}: {got} != {want}")),
    }
}

/// A reviewer for the signing tests: an approved report (the `approved` parity fixture's) and a
/// key pair made by `deploy-gate keygen`, all in `dir`.
pub struct Reviewer {
    /// The report (`evaluate --out`).
    pub report: PathBuf,
    /// The private key (`reviewer.key.pem`).
    pub key: PathBuf,
    /// The public key (`reviewer.pub.pem`).
    pub public: PathBuf,
}

/// Evaluates the `approved` fixture into `dir/report.json` and makes `dir/reviewer.{key,pub}.pem`.
pub fn reviewer(dir: &Path) -> Reviewer {
    let report = dir.join("report.json");
    let mut args = evaluate_args(&parity_dir().join("approved"));
    args.extend(["--out".into(), report.display().to_string()]);
    assert_eq!(run(&args).status.code(), Some(0));
    let name = dir.join("reviewer");
    assert!(run(&["keygen".into(), "--out".into(), name.display().to_string()])
        .status
        .success());
    Reviewer {
        report,
        key: dir.join("reviewer.key.pem"),
        public: dir.join("reviewer.pub.pem"),
    }
}
