//! Artefacts made by the build before `cluster`, `repeats` and a decision's `outcome` existed
//! (`tests/fixtures/compat/`, made by its `make.sh` with the build of commit a46aed2): reports,
//! their Markdown and JUnit summaries, and signed decisions, under the point and the
//! non-inferiority rules, with and without a policy file, from verdict files in every format
//! holding repeated verdicts. This build verifies every signed decision (with the team's policy
//! file where there was one), reproduces it from the input files, and evaluating again under
//! each report's own policy (`evaluate --policy report.json`) gives the report, its Markdown and
//! its JUnit byte for byte; the renderers read the old reports as they are.

use crate::common::*;
use deploy_gate::render::{html, markdown};
use serde_json::Value;
use std::path::{Path, PathBuf};

fn compat_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/compat")
}

/// A scenario: its folder, and the arguments it was evaluated with (the new model's verdict
/// file, then flags), paths made absolute.
struct Scenario {
    name: String,
    dir: PathBuf,
    new_verdicts: String,
    flags: Vec<String>,
}

fn scenarios() -> Vec<Scenario> {
    let root = compat_dir();
    let mut out: Vec<Scenario> = std::fs::read_dir(root.join("scenarios"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .map(|dir| {
            let args = std::fs::read_to_string(dir.join("args")).unwrap();
            let mut lines = args.lines();
            let new_verdicts = s(&root.join("inputs").join(lines.next().unwrap()));
            let flags = lines
                .map(|a| {
                    if a.starts_with("inputs/") {
                        s(&root.join(a))
                    } else {
                        a.to_owned()
                    }
                })
                .collect();
            Scenario {
                name: dir.file_name().unwrap().to_string_lossy().into_owned(),
                dir,
                new_verdicts,
                flags,
            }
        })
        .collect();
    out.sort_by(|a, b| a.name.cmp(&b.name));
    assert_eq!(out.len(), 9, "the compatibility scenarios");
    out
}

impl Scenario {
    /// The input files: the audit log, both verdict files, and the trajectory files if given.
    fn inputs(&self) -> Vec<String> {
        let root = compat_dir().join("inputs");
        let mut args = strings(&[
            "--audit",
            &s(&root.join("audit.jsonl")),
            "--old-verdicts",
            &s(&root.join("old_verdicts.jsonl")),
            "--new-verdicts",
            &self.new_verdicts,
        ]);
        if let Some(i) = self.flags.iter().position(|f| f == "--old-trajectories") {
            args.extend(self.flags[i..i + 4].iter().cloned());
        }
        args
    }

    /// The policy file the scenario was evaluated with, if any.
    fn policy_file(&self) -> Option<String> {
        let i = self.flags.iter().position(|f| f == "--policy")?;
        Some(self.flags[i + 1].clone())
    }

    fn file(&self, name: &str) -> PathBuf {
        self.dir.join(name)
    }

    fn old_exit(&self) -> i32 {
        std::fs::read_to_string(self.file("exit"))
            .unwrap()
            .trim()
            .parse()
            .unwrap()
    }

    fn report(&self) -> Value {
        serde_json::from_slice(&std::fs::read(self.file("report.json")).unwrap()).unwrap()
    }
}

/// `verify` of a scenario's signed decision, the extra arguments added (its age is years, not
/// hours, by the time this runs).
fn verify(sc: &Scenario, extra: &[String]) -> std::process::Output {
    let root = compat_dir();
    let digest = std::fs::read_to_string(root.join("model-digest")).unwrap();
    let mut args = strings(&[
        "verify",
        &s(&sc.file("decision.dsse.json")),
        "--trusted-key",
        &s(&root.join("reviewer.pub.pem")),
        "--model-digest",
        digest.trim(),
        "--target",
        "config.yaml",
        "--max-age",
        "100years",
    ]);
    args.extend(extra.iter().cloned());
    run(&args)
}

#[test]
fn the_fixtures_predate_the_new_fields() {
    for sc in scenarios() {
        let r = sc.report();
        assert!(
            r["policy"].get("cluster").is_none() && r["policy"].get("repeats").is_none(),
            "{}",
            sc.name
        );
        assert!(r["decision"].get("outcome").is_none(), "{}", sc.name);
        assert!(r["stats"]["task"].get("clustered").is_none(), "{}", sc.name);
    }
}

#[test]
fn every_old_signed_decision_verifies_and_reproduces() {
    for sc in scenarios() {
        let r = sc.report();
        let outcome = if r["decision"]["approved"] == true {
            "approved"
        } else {
            "blocked"
        };
        let out = verify(&sc, &[]);
        assert_eq!(out.status.code(), Some(0), "{}: {}", sc.name, text(&out));
        let summary: Value = serde_json::from_slice(&out.stdout).unwrap();
        assert_eq!(summary["outcome"], outcome, "{}", sc.name);
        assert_eq!(summary["reason"], r["decision"]["reason"], "{}", sc.name);

        let mut again = strings(&["--reproduce"]);
        again.extend(sc.inputs());
        let out = verify(&sc, &again);
        assert_eq!(out.status.code(), Some(0), "{}: {}", sc.name, text(&out));
        assert!(stderr(&out).contains("reproduced from the input files"), "{}", sc.name);

        // The deploy step's policy file, as the team kept it, still resolves to the pinned digest.
        if let Some(policy) = sc.policy_file() {
            let pinned = strings(&["--policy", &policy]);
            let out = verify(&sc, &pinned);
            assert_eq!(out.status.code(), Some(0), "{}: {}", sc.name, text(&out));
            let mut both = pinned.clone();
            both.extend(again.iter().cloned());
            let out = verify(&sc, &both);
            assert_eq!(out.status.code(), Some(0), "{}: {}", sc.name, text(&out));
        }
    }
}

#[test]
fn a_team_policy_file_that_predates_the_new_fields_still_means_what_it_meant_then() {
    let sc = scenarios().into_iter().find(|s| s.name == "ni-policy-file").unwrap();
    let team = sc.policy_file().unwrap();
    // For a new evaluation the file takes this revision's defaults: another digest, which the
    // old statement does not pin — the check passes only through the file's old meaning.
    let out = run(&strings(&["policy", "--policy", &team]));
    let policy: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(
        (policy["cluster"].as_str(), policy["repeats"].as_str()),
        (Some("template"), Some("last"))
    );
    // A file naming one of the new fields is a policy of this revision and does not match.
    let dir = tempdir();
    let mut named: Value = serde_json::from_slice(&std::fs::read(&team).unwrap()).unwrap();
    named["cluster"] = "none".into();
    let named = write(dir.path(), "named.json", &named.to_string());
    let out = verify(&sc, &strings(&["--policy", &named]));
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    assert_eq!(serde_json::from_slice::<Value>(&out.stdout).unwrap()["check"], "policy");
}

/// The report's text with this build's version in `tool.version` (the crate's version may move
/// on; nothing else may change).
fn with_this_version(report: &str) -> String {
    let v: Value = serde_json::from_str(report).unwrap();
    let old = format!("\"version\": {}", v["tool"]["version"]);
    report.replacen(&old, &format!("\"version\": \"{}\"", env!("CARGO_PKG_VERSION")), 1)
}

#[test]
fn evaluating_under_an_old_reports_policy_gives_its_report_markdown_and_junit_byte_for_byte() {
    let tmp = tempdir();
    for sc in scenarios() {
        let (json, md, xml) = (
            tmp.path().join("r.json"),
            tmp.path().join("r.md"),
            tmp.path().join("r.xml"),
        );
        let mut args = strings(&["evaluate", "--policy", &s(&sc.file("report.json"))]);
        args.extend(sc.inputs());
        args.extend(strings(&[
            "--out",
            &s(&json),
            "--markdown",
            &s(&md),
            "--junit",
            &s(&xml),
        ]));
        let out = run(&args);
        assert_eq!(out.status.code(), Some(sc.old_exit()), "{}: {}", sc.name, text(&out));
        let old = std::fs::read_to_string(sc.file("report.json")).unwrap();
        let new = std::fs::read_to_string(&json).unwrap();
        assert!(
            with_this_version(&old) == new,
            "{}: the report\n{}",
            sc.name,
            json_diff_text(&old, &new)
        );
        for (name, path) in [("summary.md", &md), ("junit.xml", &xml)] {
            let old = with_this_version_text(&std::fs::read_to_string(sc.file(name)).unwrap(), &sc.report());
            let new = std::fs::read_to_string(path).unwrap();
            assert!(old == new, "{}: {name}\n{}", sc.name, json_diff_text(&old, &new));
        }
    }
}

/// A summary's text with the tool version it names replaced by this build's.
fn with_this_version_text(text: &str, report: &Value) -> String {
    let old = report["tool"]["version"].as_str().unwrap();
    text.replace(
        &format!("deploy-gate {old}"),
        &format!("deploy-gate {}", env!("CARGO_PKG_VERSION")),
    )
}

/// A line diff of two texts, for a failure's message.
fn json_diff_text(old: &str, new: &str) -> String {
    similar::TextDiff::from_lines(old, new)
        .unified_diff()
        .context_radius(2)
        .header("the old build", "this build")
        .to_string()
}

#[test]
fn the_renderers_read_old_reports_as_they_are() {
    for sc in scenarios() {
        let json = std::fs::read_to_string(sc.file("report.json")).unwrap();
        // The page renders a reopened signed decision's report with the core's Markdown: the same
        // text the old build wrote.
        assert_eq!(
            markdown::markdown_from_json(&json).unwrap(),
            std::fs::read_to_string(sc.file("summary.md")).unwrap(),
            "{}",
            sc.name
        );
        let page = html::report_html_json(&json).unwrap();
        let outcome = if sc.report()["decision"]["approved"] == true {
            "approved"
        } else {
            "blocked"
        };
        assert!(page.contains(&format!("data-outcome=\"{outcome}\"")), "{}", sc.name);
        assert!(!page.contains("clustered delta"), "{}", sc.name);
    }
}
