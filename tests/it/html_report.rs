//! `deploy-gate evaluate --html FILE`: the standalone report written alongside the JSON report,
//! by a real process, on the parity fixtures; the exit codes are unchanged.

use deploy_gate::render::html::{embedded_json, report_html_json};
use std::path::PathBuf;
use std::process::Command;

fn fixture(name: &str) -> PathBuf {
    crate::common::parity_dir().join(name)
}

/// `deploy-gate evaluate` on a fixture's files with its policy as flags.
fn command(name: &str) -> Command {
    let dir = fixture(name);
    let mut cmd = crate::common::dg();
    cmd.arg("evaluate")
        .arg("--audit")
        .arg(dir.join("audit.jsonl"))
        .arg("--old-verdicts")
        .arg(dir.join("old_verdicts.jsonl"))
        .arg("--new-verdicts")
        .arg(dir.join("new_verdicts.jsonl"));
    if dir.join("old_trajectories.jsonl").exists() {
        cmd.arg("--old-trajectories")
            .arg(dir.join("old_trajectories.jsonl"))
            .arg("--new-trajectories")
            .arg(dir.join("new_trajectories.jsonl"));
    }
    cmd.args([
        "--min-samples",
        "20",
        "--max-samples",
        "none",
        "--on-insufficient",
        "approve",
        // The reference's rule: a missing verdict is a failure, whatever their number.
        "--max-missing",
        "1",
    ]);
    cmd
}

/// Runs `evaluate` on a fixture with `--out` and `--html`; returns the exit code, the JSON
/// report and the HTML file's text.
fn evaluate(name: &str) -> (i32, String, String) {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("report.json");
    let html = tmp.path().join("report.html");
    let run = command(name)
        .arg("--out")
        .arg(&out)
        .arg("--html")
        .arg(&html)
        .output()
        .unwrap();
    let code = run.status.code().unwrap();
    let json = std::fs::read_to_string(&out).unwrap();
    let page = std::fs::read_to_string(&html).expect("the HTML report is written");
    (code, json, page)
}

#[test]
fn an_approved_fixture_writes_its_html_report() {
    let (code, json, html) = evaluate("approved");
    assert_eq!(code, 0, "approved: exit 0 as without --html");
    let report: serde_json::Value = serde_json::from_str(&json).unwrap();
    assert_eq!(report["decision"]["approved"], true);
    assert!(html.contains("data-approved=\"true\""));
    assert!(html.contains("Approved — deploy the new model"));
    assert!(html.contains(report["decision"]["reason"].as_str().unwrap()));
    // The embedded report is the --out report, byte for byte; the page renders the same bytes.
    assert_eq!(embedded_json(&html).as_deref(), Some(json.as_str()));
    assert_eq!(report_html_json(&json).unwrap(), html);
}

#[test]
fn a_blocked_fixture_writes_its_html_report_and_still_exits_3() {
    let (code, json, html) = evaluate("both-regressed");
    assert_eq!(code, 3, "blocked: exit 3 as without --html");
    assert!(html.contains("data-approved=\"false\""));
    assert!(html.contains("Blocked — keep the old model"));
    assert_eq!(embedded_json(&html).as_deref(), Some(json.as_str()));
}

#[test]
fn the_json_report_is_unchanged_by_html() {
    let plain = command("task-tolerance").output().unwrap();
    let (code, json, _) = evaluate("task-tolerance");
    assert_eq!(plain.status.code().unwrap(), code);
    assert_eq!(String::from_utf8(plain.stdout).unwrap(), json);
}

#[test]
fn an_unwritable_html_path_is_an_error_naming_it() {
    let tmp = tempfile::tempdir().unwrap();
    let bad = tmp.path().join("no-such-dir").join("report.html");
    let run = command("approved")
        .arg("--out")
        .arg(tmp.path().join("r.json"))
        .arg("--html")
        .arg(&bad)
        .output()
        .unwrap();
    assert_ne!(run.status.code(), Some(0));
    assert_ne!(run.status.code(), Some(3));
    let stderr = String::from_utf8_lossy(&run.stderr);
    assert!(stderr.contains("report.html"), "{stderr}");
}
