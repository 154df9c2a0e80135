//! Helpers shared by the integration tests: a temporary directory, running the `deploy-gate`
//! binary (arguments, environment), its output as readable text, a readable diff of expected
//! and actual text, and reading the fixtures.
#![allow(dead_code)]

use std::ffi::OsStr;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

/// A fresh temporary directory, removed when dropped.
pub fn tempdir() -> tempfile::TempDir {
    tempfile::Builder::new()
        .prefix("deploy-gate-it-")
        .tempdir()
        .expect("a temporary directory")
}

/// A path as a string argument.
pub fn s(p: &Path) -> String {
    p.display().to_string()
}

/// Owned arguments from string slices.
pub fn strings(list: &[&str]) -> Vec<String> {
    list.iter().map(|a| a.to_string()).collect()
}

/// Writes `text` to `dir/name` and gives the path as a string.
pub fn write(dir: &Path, name: &str, text: &str) -> String {
    let p = dir.join(name);
    std::fs::write(&p, text).unwrap();
    s(&p)
}

/// The `deploy-gate` command the tests run: this build's binary, or the one
/// `DEPLOY_GATE_TEST_CLI` names (the test command sets it to the console script the Python
/// package installs, to run the CLI's tests against that one too).
pub fn cli_path() -> std::ffi::OsString {
    std::env::var_os("DEPLOY_GATE_TEST_CLI")
        .filter(|p| !p.is_empty())
        .unwrap_or_else(|| env!("CARGO_BIN_EXE_deploy-gate").into())
}

/// A `deploy-gate` command to add arguments, environment and a directory to.
pub fn dg() -> Command {
    Command::new(cli_path())
}

/// Runs a command with no standard input, capturing its output.
pub fn out(cmd: &mut Command) -> Output {
    cmd.stdin(Stdio::null()).output().expect("deploy-gate runs")
}

/// Runs `deploy-gate` with the arguments.
pub fn run<S: AsRef<OsStr>>(args: &[S]) -> Output {
    out(dg().args(args))
}

/// Runs `deploy-gate` with the arguments and these variables added to its environment (the
/// variables of this process are never changed: the tests share it).
pub fn run_env<S: AsRef<OsStr>>(args: &[S], env: &[(&str, &str)]) -> Output {
    out(dg().args(args).envs(env.iter().copied()))
}

/// The exit code, standard output and standard error of a run, for an assertion's message.
pub fn text(o: &Output) -> String {
    format!(
        "exit {:?}\nstdout: {}\nstderr: {}",
        o.status.code(),
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

/// The standard error of a run.
pub fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// The standard output of a run as JSON (a panic showing both outputs if it is not).
pub fn json_stdout(o: &Output) -> serde_json::Value {
    serde_json::from_slice(&o.stdout)
        .unwrap_or_else(|e| panic!("{e}: {} / {}", String::from_utf8_lossy(&o.stdout), stderr(o)))
}

/// A line diff of `want` and `got` (unified, three lines of context, the first 200 lines of
/// it), for an assertion's message.
pub fn diff(want: impl AsRef<[u8]>, got: impl AsRef<[u8]>) -> String {
    let (want, got) = (
        String::from_utf8_lossy(want.as_ref()),
        String::from_utf8_lossy(got.as_ref()),
    );
    let lines = similar::TextDiff::configure()
        .timeout(std::time::Duration::from_secs(2))
        .diff_lines(&*want, &*got)
        .unified_diff()
        .context_radius(3)
        .header("want", "got")
        .to_string();
    let mut shown: Vec<&str> = lines.lines().take(200).collect();
    if lines.lines().count() > shown.len() {
        shown.push("[… the rest of the diff is left out]");
    }
    shown.join("\n")
}

/// A line diff of two JSON values, pretty-printed (see [`diff`]).
pub fn json_diff(want: &serde_json::Value, got: &serde_json::Value) -> String {
    let pretty = |v: &serde_json::Value| serde_json::to_string_pretty(v).unwrap();
    diff(pretty(want), pretty(got))
}

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
        // The reference counts a missing verdict as a failure whatever their number: its rule
        // is `max_missing: 1`.
        "--max-missing".into(),
        "1".into(),
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

/// A report's `decision` as the reference's `GateDecision`: without deploy-gate's `outcome`,
/// which must say what `approved` says (the point rule is approved or blocked).
pub fn reference_decision(decision: &serde_json::Value) -> serde_json::Value {
    let mut d = decision.clone();
    let outcome = d.as_object_mut().unwrap().shift_remove("outcome");
    let approved = d["approved"].as_bool().unwrap();
    assert_eq!(
        outcome.as_ref().and_then(|o| o.as_str()),
        Some(if approved { "approved" } else { "blocked" }),
        "{decision}"
    );
    d
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

/// A JSONL file's lines as JSON (a panic naming the line if one is not; a missing file has
/// none), each line whole.
pub fn jsonl(path: &Path) -> Vec<serde_json::Value> {
    let bytes = std::fs::read(path).unwrap_or_default();
    assert!(
        bytes.is_empty() || bytes.ends_with(b"\n"),
        "{} ends with a whole line",
        path.display()
    );
    String::from_utf8(bytes)
        .unwrap()
        .lines()
        .enumerate()
        .map(|(i, l)| serde_json::from_str(l).unwrap_or_else(|e| panic!("{} line {}: {e}: {l}", path.display(), i + 1)))
        .collect()
}

/// The program's path: on PATH, else Debian's /usr/sbin (root's PATH may lack it).
pub fn find_program(program: &str) -> Option<String> {
    [
        program.to_owned(),
        format!("/usr/sbin/{program}"),
        format!("/usr/bin/{program}"),
    ]
    .into_iter()
    .find(|p| {
        std::process::Command::new(p)
            .arg("-h")
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .status()
            .is_ok()
    })
}

/// Runs `openssl ARGS` in `dir`, which must succeed.
pub fn openssl(dir: &std::path::Path, args: &[&str]) {
    let status = std::process::Command::new("openssl")
        .args(args)
        .current_dir(dir)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .status()
        .expect("openssl runs");
    assert!(status.success(), "openssl {args:?}");
}

/// A port free on 127.0.0.1 now.
pub fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}
