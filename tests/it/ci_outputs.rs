//! `deploy-gate evaluate --markdown FILE --junit FILE`, run as a CI job runs it (a real process),
//! the files read by real consumers: the Markdown by a CommonMark parser with GFM tables
//! (markdown-it), the JUnit XML by junitparser (`tests/ci_check.py`; `scripts/setup.sh` installs
//! both). The Markdown is compared byte for byte with `tests/fixtures/ci/markdown/`: what the
//! page's own renderer (`www/summary.js`, before it moved into the core) wrote for the same
//! reports, with the lines the clustered intervals and the templates' intervals added since
//! (`DEPLOY_GATE_BLESS=1` rewrites them; the diff is the review).

use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::Command;

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// The parity fixtures and the page's bundled example, by name.
fn fixtures() -> Vec<(String, PathBuf)> {
    let parity = root().join("tests/fixtures/parity");
    let mut dirs: Vec<(String, PathBuf)> = std::fs::read_dir(&parity)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.is_dir())
        .map(|p| (p.file_name().unwrap().to_string_lossy().into_owned(), p))
        .collect();
    dirs.sort();
    dirs.push(("examples".into(), root().join("www/examples")));
    assert!(dirs.len() > 5);
    dirs
}

/// The fixture's policy (`args.json`) as flags.
fn policy_flags(dir: &Path) -> Vec<String> {
    let Ok(text) = std::fs::read_to_string(dir.join("args.json")) else {
        return vec![];
    };
    let p = &serde_json::from_str::<Value>(&text).unwrap()["policy"];
    let mut flags: Vec<String> = vec![
        "--min-samples".into(),
        p["min_samples"].to_string(),
        "--max-samples".into(),
        if p["max_samples"].is_null() {
            "none".into()
        } else {
            p["max_samples"].to_string()
        },
        "--task-tol".into(),
        p["task_regression_tol"].to_string(),
        "--traj-tol".into(),
        p["trajectory_regression_tol"].to_string(),
        "--on-insufficient".into(),
        p["on_insufficient"].as_str().unwrap().into(),
        // The reference's rule: a missing verdict is a failure, whatever their number.
        "--max-missing".into(),
        "1".into(),
        "--pass-verdicts".into(),
        p["pass_verdicts"]
            .as_array()
            .unwrap()
            .iter()
            .map(|v| v.as_str().unwrap())
            .collect::<Vec<_>>()
            .join(","),
    ];
    if !p["seed"].is_null() {
        flags.extend(["--seed".into(), p["seed"].to_string()]);
    }
    flags
}

/// `evaluate` on a fixture folder's files (`audit` replaces its audit log): exit code and stdout.
fn evaluate(dir: &Path, audit: Option<&Path>, extra: &[&str]) -> (i32, Vec<u8>, String) {
    let mut cmd = crate::common::dg();
    let audit = audit.map_or_else(|| dir.join("audit.jsonl"), Path::to_path_buf);
    cmd.arg("evaluate").arg("--audit").arg(audit);
    cmd.arg("--old-verdicts").arg(dir.join("old_verdicts.jsonl"));
    cmd.arg("--new-verdicts").arg(dir.join("new_verdicts.jsonl"));
    if dir.join("old_trajectories.jsonl").exists() {
        cmd.arg("--old-trajectories").arg(dir.join("old_trajectories.jsonl"));
        cmd.arg("--new-trajectories").arg(dir.join("new_trajectories.jsonl"));
    }
    cmd.args(policy_flags(dir)).args(extra);
    let out = cmd.output().expect("deploy-gate runs");
    (
        out.status.code().unwrap_or(-1),
        out.stdout,
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// What `tests/ci_check.py` reads in a file.
fn check(kind: &str, file: &Path) -> Value {
    let out = Command::new("python3")
        .arg(root().join("tests/ci_check.py"))
        .arg(kind)
        .arg(file)
        .output()
        .expect("python3 runs (scripts/setup.sh installs junitparser and markdown-it-py)");
    assert!(
        out.status.success(),
        "ci_check.py {kind} {} failed (scripts/setup.sh installs junitparser and markdown-it-py): {}",
        file.display(),
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap()
}

/// The pipeline ids of a report's cases as its JSON writes them (an integer past 64 bits keeps
/// its digits, which a `Value` would make a float's).
fn case_ids(json: &[u8]) -> Vec<String> {
    #[derive(serde::Deserialize)]
    struct Case<'a> {
        #[serde(borrow)]
        pipeline_id: &'a serde_json::value::RawValue,
    }
    #[derive(serde::Deserialize)]
    struct Report<'a> {
        #[serde(borrow)]
        cases: Vec<Case<'a>>,
    }
    let report: Report<'_> = serde_json::from_slice(json).unwrap();
    report
        .cases
        .iter()
        .map(|c| serde_json::from_str::<String>(c.pipeline_id.get()).unwrap_or_else(|_| c.pipeline_id.get().to_owned()))
        .collect()
}

/// The JUnit results a report's cases must give: (class name, name, result kinds).
fn expected_cases(report: &Value, json: &[u8]) -> Vec<(String, String, Vec<&'static str>)> {
    let ids = case_ids(json);
    report["cases"]
        .as_array()
        .unwrap()
        .iter()
        .zip(ids)
        .map(|(c, name)| {
            // XML 1.0 cannot carry most control characters: they are written as `\u{…}`.
            let classname = match &c["template_id"] {
                Value::String(s) => s
                    .chars()
                    .map(|c| match c {
                        '\t' | '\n' | '\r' => c.to_string(),
                        c if c < ' ' || c == '\u{fffe}' || c == '\u{ffff}' => format!("\\u{{{:x}}}", c as u32),
                        c => c.to_string(),
                    })
                    .collect(),
                other => other.to_string(),
            };
            let flag = |k: &str| c[k].as_bool().unwrap();
            let kind = if flag("old_missing") || flag("new_missing") || flag("old_errored") || flag("new_errored") {
                vec!["error"]
            } else if c["status"] == "regressed" {
                vec!["failure"]
            } else {
                vec![]
            };
            (classname, name, kind)
        })
        .collect()
}

/// The JUnit file of `report` as junitparser reads it agrees with the report.
fn assert_junit_matches(file: &Path, json: &[u8]) {
    let report: &Value = &serde_json::from_slice(json).unwrap();
    let j = check("junit", file);
    let expected = expected_cases(report, json);
    let count = |k: &str| expected.iter().filter(|c| c.2 == [k]).count() as u64;
    assert_eq!(j["suites"], 1);
    assert_eq!(j["name"], "deploy-gate");
    assert_eq!(j["tests"].as_u64().unwrap(), expected.len() as u64);
    assert_eq!(j["failures"].as_u64().unwrap(), count("failure"));
    assert_eq!(j["errors"].as_u64().unwrap(), count("error"));
    assert_eq!(j["skipped"], 0);
    assert_eq!(j["total"]["tests"], j["tests"]);
    assert_eq!(j["total"]["failures"], j["failures"]);
    assert_eq!(j["total"]["errors"], j["errors"]);
    let cases: Vec<(String, String, Vec<String>)> = j["cases"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| {
            let results = c["results"]
                .as_array()
                .unwrap()
                .iter()
                .map(|r| r.as_str().unwrap().to_owned())
                .collect();
            (
                c["classname"].as_str().unwrap().to_owned(),
                c["name"].as_str().unwrap().to_owned(),
                results,
            )
        })
        .collect();
    let expected: Vec<(String, String, Vec<String>)> = expected
        .into_iter()
        .map(|(c, n, k)| (c, n, k.into_iter().map(String::from).collect()))
        .collect();
    assert_eq!(cases, expected);
    let props = &j["properties"];
    let d = &report["decision"];
    let approved = d["approved"].as_bool().unwrap();
    assert_eq!(props["decision"], if approved { "approved" } else { "blocked" });
    assert_eq!(props["approved"], approved.to_string());
    assert_eq!(props["reason"], d["reason"]);
    assert_eq!(props["task_delta"], d["task_delta"].to_string());
    assert_eq!(props["policy.seed"], report["policy"]["seed"].to_string());
    for (i, f) in report["inputs"].as_array().unwrap().iter().enumerate() {
        assert_eq!(props[format!("input.{i}.sha256")], f["sha256"]);
        assert_eq!(props[format!("input.{i}.name")], f["name"]);
    }
    assert_eq!(props["policy.sha256"].as_str().unwrap().len(), 64);
}

#[test]
fn markdown_is_the_pages_summary_and_the_report_and_exit_code_do_not_change() {
    let tmp = tempfile::tempdir().unwrap();
    for (name, dir) in fixtures() {
        let (code, json, _) = evaluate(&dir, None, &[]);
        let md = tmp.path().join(format!("{name}.md"));
        let xml = tmp.path().join(format!("{name}.xml"));
        let (code2, json2, stderr) = evaluate(
            &dir,
            None,
            &["--markdown", md.to_str().unwrap(), "--junit", xml.to_str().unwrap()],
        );
        assert!(code == 0 || code == 3, "{name}: {stderr}");
        assert_eq!(code2, code, "{name}: the exit code is the decision");
        assert_eq!(json2, json, "{name}: the JSON report is the same with the CI outputs");
        let golden_path = root().join(format!("tests/fixtures/ci/markdown/{name}.md"));
        // `DEPLOY_GATE_BLESS=1` writes the summaries as this build makes them, for review in the diff.
        if std::env::var_os("DEPLOY_GATE_BLESS").is_some() {
            std::fs::copy(&md, &golden_path).unwrap();
        }
        let golden = std::fs::read_to_string(&golden_path).unwrap();
        assert_eq!(
            std::fs::read_to_string(&md).unwrap(),
            golden,
            "{name}: the page's summary"
        );
        let report: Value = serde_json::from_slice(&json).unwrap();
        assert_eq!(code == 0, report["decision"]["approved"].as_bool().unwrap());
        assert_junit_matches(&xml, &json);
        // The summary as a CommonMark renderer reads it: one row per template, no markup.
        let m = check("markdown", &md);
        assert_eq!(
            m["template_rows"].as_array().unwrap().len(),
            report["templates"].as_array().unwrap().len()
        );
        for tag in m["html"].as_array().unwrap() {
            assert!(
                [
                    "<details><summary>Warnings</summary>\n",
                    "</details>\n",
                    "html_inline:<sub>",
                    "html_inline:</sub>"
                ]
                .contains(&tag.as_str().unwrap()),
                "{name}: {tag}"
            );
        }
    }
}

#[test]
fn with_out_the_three_files_are_written_and_stdout_stays_empty() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = root().join("tests/fixtures/parity/both-regressed");
    let (code, stdout_report, _) = evaluate(&dir, None, &[]);
    let [out, md, xml] = ["r.json", "s.md", "j.xml"].map(|n| tmp.path().join(n));
    let (code2, stdout, stderr) = evaluate(
        &dir,
        None,
        &[
            "--out",
            out.to_str().unwrap(),
            "--markdown",
            md.to_str().unwrap(),
            "--junit",
            xml.to_str().unwrap(),
        ],
    );
    assert_eq!((code, code2), (3, 3), "{stderr}");
    assert!(stdout.is_empty());
    assert_eq!(std::fs::read(&out).unwrap(), stdout_report);
    assert!(std::fs::read_to_string(&md)
        .unwrap()
        .starts_with("## deploy-gate: ⛔ blocked"));
    assert_junit_matches(&xml, &stdout_report);
    assert!(check("junit", &xml)["failures"].as_u64().unwrap() > 0);
}

#[test]
fn hostile_values_from_the_files_neither_break_the_table_nor_the_xml() {
    let dir = root().join("tests/fixtures/ci/hostile");
    let tmp = tempfile::tempdir().unwrap();
    // A file name with Markdown and XML in it (the summary lists the inputs by name).
    let audit = tmp.path().join("a&b~`x`<i>.jsonl");
    std::fs::copy(dir.join("audit.jsonl"), &audit).unwrap();
    let [md, xml] = ["s.md", "j.xml"].map(|n| tmp.path().join(n));
    let (code, json, stderr) = evaluate(
        &dir,
        Some(&audit),
        &[
            "--min-samples",
            "1",
            // Its missing verdicts rendered as failures (the reference's rule), not inconclusive.
            "--max-missing",
            "1",
            "--markdown",
            md.to_str().unwrap(),
            "--junit",
            xml.to_str().unwrap(),
        ],
    );
    assert_eq!(code, 3, "{stderr}");
    let report: Value = serde_json::from_slice(&json).unwrap();

    // JUnit: well-formed although the values hold `]]>`, `<`, `&` and control characters.
    assert_junit_matches(&xml, &json);
    let j = check("junit", &xml);
    assert!(
        j["failures"].as_u64().unwrap() > 0 && j["errors"].as_u64().unwrap() > 0,
        "{j}"
    );
    let text = std::fs::read_to_string(&xml).unwrap();
    assert!(!text.contains("]]>") && !text.contains('\u{1b}') && !text.contains('\u{0}'));
    let messages: Vec<&str> = j["cases"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|c| c["messages"].as_array().unwrap())
        .filter_map(|m| m.as_str())
        .collect();
    assert!(
        messages
            .iter()
            .any(|m| m.contains("runner crashed: <oops> & \\u{7} ]]>")),
        "{messages:?}"
    );

    // Markdown: each template id is one cell and reads as the value (runs of whitespace as one
    // space, control characters as `\u{…}`); the only tags are the summary's own.
    let m = check("markdown", &md);
    let rows = m["template_rows"].as_array().unwrap();
    let templates = report["templates"].as_array().unwrap();
    assert_eq!(rows.len(), templates.len());
    for (row, t) in rows.iter().zip(templates) {
        assert_eq!(row.as_array().unwrap().len(), 6, "{row}");
        let Value::String(id) = &t["template_id"] else { continue };
        let mut shown = String::new();
        for c in id.chars() {
            if c.is_whitespace() || c == '\u{feff}' {
                if !shown.ends_with(' ') {
                    shown.push(' ');
                }
            } else if c.is_control() {
                shown.push_str(&format!("\\u{{{:x}}}", c as u32));
            } else {
                shown.push(c);
            }
        }
        assert_eq!(row[0], shown.trim(), "a cell is read without its outer spaces");
    }
    assert_eq!(
        m["html"],
        serde_json::json!([
            "<details><summary>Warnings</summary>\n",
            "</details>\n",
            "html_inline:<sub>",
            "html_inline:</sub>"
        ])
    );
    let summary = std::fs::read_to_string(&md).unwrap();
    assert!(
        summary.contains("- audit: `` a&b~\\`x\\`\\<i\\>.jsonl `` ("),
        "{summary}"
    );
}

#[test]
fn a_file_that_cannot_be_written_is_an_error_and_no_report_is_printed() {
    let dir = root().join("tests/fixtures/parity/approved");
    let tmp = tempfile::tempdir().unwrap();
    let missing = tmp.path().join("no/such/dir/junit.xml");
    let (code, stdout, stderr) = evaluate(&dir, None, &["--junit", missing.to_str().unwrap()]);
    assert_ne!(code, 0);
    assert_ne!(code, 3);
    assert!(stdout.is_empty());
    assert!(stderr.contains(&missing.display().to_string()), "{stderr}");
    let same = tmp.path().join("x");
    let (code, _, stderr) = evaluate(
        &dir,
        None,
        &["--out", same.to_str().unwrap(), "--markdown", same.to_str().unwrap()],
    );
    assert_ne!(code, 0);
    assert!(stderr.contains("--markdown and --out both name"), "{stderr}");
    assert!(!same.exists());
}

#[test]
fn a_review_lists_its_marked_cases_in_the_summary_and_the_html_report_and_leaves_the_report_alone() {
    let dir = root().join("www/examples");
    let tmp = tempfile::tempdir().unwrap();
    let (code, plain, stderr) = evaluate(&dir, None, &[]);
    assert!(code == 0 || code == 3 || code == 4, "{stderr}");
    let report: Value = serde_json::from_slice(&plain).unwrap();
    let cases = report["cases"].as_array().unwrap();
    let regressed = cases.iter().position(|c| c["status"] == "regressed").unwrap();
    let improved = cases.iter().position(|c| c["status"] == "improved").unwrap();
    // Notes with markup, a table cell's end and a bidi override; a mark of a case not in it.
    let review = tmp.path().join("review.jsonl");
    let line = |i: usize, mark: &str, note: &str| {
        format!(
            "{{\"pipeline_id\": {}, \"mark\": \"{mark}\", \"note\": {}}}\n",
            cases[i]["pipeline_id"],
            serde_json::to_string(note).unwrap()
        )
    };
    let text = [
        line(
            improved,
            "label_wrong",
            "the expected | verdict </td> is <b>wrong</b> https://evil.example www.x.com a@b.co @org/team",
        ),
        line(regressed, "accepted", "<script>alert(1)</script> \u{202e}ok"),
        "{\"pipeline_id\": \"not-in-this-report\", \"mark\": \"needs_fix\"}\n".to_owned(),
    ]
    .concat();
    std::fs::write(&review, &text).unwrap();
    let [md, html, plain_md] = ["s.md", "r.html", "plain.md"].map(|n| tmp.path().join(n));
    let (code2, json, stderr) = evaluate(
        &dir,
        None,
        &[
            "--markdown",
            md.to_str().unwrap(),
            "--html",
            html.to_str().unwrap(),
            "--review",
            review.to_str().unwrap(),
        ],
    );
    assert_eq!(code2, code, "{stderr}");
    assert_eq!(json, plain, "the JSON report does not carry the marks");
    evaluate(&dir, None, &["--markdown", plain_md.to_str().unwrap()]);

    let summary = std::fs::read_to_string(&md).unwrap();
    let sha = {
        use sha2::Digest;
        hex::encode(sha2::Sha256::digest(text.as_bytes()))
    };
    assert!(
        summary.contains("**Review marks.** 3 case(s) marked: 1 accepted, 1 label wrong, 1 needs fix; 1 of "),
        "{summary}"
    );
    assert!(summary.contains(" 1 mark(s) name cases this report does not hold."));
    assert!(summary.contains(&sha));
    // The regressed case first; each id and note a code span, one cell each (a `|` escaped).
    let rows: Vec<&str> = summary.lines().filter(|l| l.starts_with("| `")).collect();
    assert_eq!(rows.len(), 2, "{summary}");
    assert!(
        rows[0].ends_with("| regressed | accepted | `<script>alert(1)</script> \u{202e}ok` |"),
        "{}",
        rows[0]
    );
    assert!(
        rows[1].ends_with("| improved | label wrong | `the expected \\| verdict </td> is <b>wrong</b> https://evil.example www.x.com a@b.co @org/team` |"),
        "{}",
        rows[1]
    );
    // Read by a CommonMark parser with tables: no tag, link or image but the summary's own, the
    // ids and notes read back as written (code, never markup), each row four cells.
    let read = check("markdown", &md);
    let mut own = check("markdown", &plain_md)["html"].as_array().unwrap().clone();
    for (i, note) in [
        (regressed, "<script>alert(1)</script> \u{202e}ok"),
        (
            improved,
            "the expected | verdict </td> is <b>wrong</b> https://evil.example www.x.com a@b.co @org/team",
        ),
    ] {
        own.push(format!("code_inline:{}", cases[i]["pipeline_id"].as_str().unwrap()).into());
        own.push(format!("code_inline:{note}").into());
    }
    assert_eq!(read["html"], Value::Array(own));
    assert_eq!(
        read["tables"]["pipeline"],
        serde_json::json!([["", "regressed", "accepted", ""], ["", "improved", "label wrong", ""]])
    );
    // A URL, a `www.` name, an e-mail address and an @mention in a note stay code: no link.
    assert!(!summary.contains("](") && !summary.contains("<a "));

    let page = std::fs::read_to_string(&html).unwrap();
    let section = &page[page
        .find("<section class=\"panel\" id=\"review\"")
        .expect("a review section")..];
    let section = &section[..section.find("</section>").unwrap()];
    assert!(section.contains("&lt;script&gt;alert(1)&lt;/script&gt;"), "{section}");
    assert!(!section.contains("<script") && !section.contains("<b>"));
    for i in [regressed, improved] {
        assert!(section.contains(&format!("<a href=\"#case-{i}\">")), "{section}");
        assert!(page.contains(&format!("<tr id=\"case-{i}\" ")));
    }

    // A bad line is an error naming the file and the line; nothing is written.
    std::fs::write(
        &review,
        format!(
            "{}{{\"pipeline_id\": \"x\", \"mark\": \"ok\"}}\n",
            line(regressed, "accepted", "")
        ),
    )
    .unwrap();
    let out_md = tmp.path().join("bad.md");
    let (code3, json3, stderr3) = evaluate(
        &dir,
        None,
        &[
            "--markdown",
            out_md.to_str().unwrap(),
            "--review",
            review.to_str().unwrap(),
        ],
    );
    assert_ne!(code3, code);
    assert!(json3.is_empty());
    assert!(
        stderr3.contains(&format!("{}:2: `mark` must be", review.display())),
        "{stderr3}"
    );
    assert!(!out_md.exists());
    // Without a summary or an HTML report to list them in, --review is refused.
    let (code4, json4, stderr4) = evaluate(&dir, None, &["--review", review.to_str().unwrap()]);
    assert_ne!(code4, code);
    assert!(json4.is_empty());
    assert!(stderr4.contains("--review lists the marked cases"), "{stderr4}");
}
