//! The guardrails wherever `evaluate` and `diff` show a decision, from a real process on verdict
//! files generated here: the summary on stderr, `--markdown`, `--html`, `--junit`, and the diff
//! of two evaluations whose latency guardrail changed outcome.

use crate::common::{run, s, stderr, tempdir, text, write};
use serde_json::{json, Value};
use std::path::Path;

/// A template id that is markup, as a hostile log could give it.
const HOSTILE: &str = "<script>alert(1)</script>";

/// Writes an audit log and two verdict files: 120 cases over three templates (`a`, `b` and
/// [`HOSTILE`]); the new model 30% slower on every case (a little noise), the same tokens,
/// failing every case of the hostile template.
fn inputs(dir: &Path) -> [String; 3] {
    let (mut audit, mut old, mut new) = (String::new(), String::new(), String::new());
    let templates = ["a", "b", HOSTILE];
    for i in 0..120u32 {
        let (pid, t) = (format!("p{i}"), templates[i as usize % 3]);
        audit += &format!(
            "{}\n{}\n",
            json!({"pipeline_id": pid, "template_id": t, "stage_id": "s", "stage_type": "llm", "input": "q", "output": "a"}),
            json!({"pipeline_id": pid, "template_id": t, "verdict": "PASS", "is_complete": true})
        );
        let latency = 300.0 + f64::from((i * 37) % 101) * 3.0;
        let usage = json!({"prompt_tokens": 200 + i % 5, "completion_tokens": 50});
        old += &format!(
            "{}\n",
            json!({"pipeline_id": pid, "verdict": "PASS", "latency_ms": latency, "usage": usage})
        );
        let verdict = if t == HOSTILE { "FAIL" } else { "PASS" };
        let slower = latency * (1.3 + f64::from(i % 7) / 100.0);
        new += &format!(
            "{}\n",
            json!({"pipeline_id": pid, "verdict": verdict, "latency_ms": slower, "usage": usage})
        );
    }
    [
        write(dir, "audit.jsonl", &audit),
        write(dir, "old.jsonl", &old),
        write(dir, "new.jsonl", &new),
    ]
}

/// A policy with a blocking mean latency guardrail (`max_increase`), an advisory one on
/// tokens and a blocking template_regression.
fn policy(dir: &Path, name: &str, max_increase: &str) -> String {
    let p = json!({"min_samples": 1, "max_samples": null, "task_tol": 0.5,
        "guardrails": [{"metric": "latency_ms", "max_increase": max_increase},
                       {"metric": "total_tokens", "max_difference": 1, "action": "advise"}],
        "template_regression": {"max_drop": 0.1, "min_cases": 10}});
    write(dir, name, &p.to_string())
}

/// `evaluate` with every output: exit code, stderr.
fn evaluate(dir: &Path, files: &[String; 3], policy: &str, tag: &str) -> (i32, String) {
    let p = |ext: &str| s(&dir.join(format!("{tag}.{ext}")));
    let o = run(&[
        "evaluate",
        "--audit",
        &files[0],
        "--old-verdicts",
        &files[1],
        "--new-verdicts",
        &files[2],
        "--policy",
        policy,
        "--out",
        &p("json"),
        "--markdown",
        &p("md"),
        "--junit",
        &p("xml"),
        "--html",
        &p("html"),
    ]);
    (o.status.code().unwrap_or(-1), stderr(&o))
}

#[test]
fn evaluate_shows_the_guardrails_in_its_summary_markdown_html_and_junit() {
    let dir = tempdir();
    let d = dir.path();
    let files = inputs(d);
    let (code, err) = evaluate(d, &files, &policy(d, "p.json", "10%"), "r");
    assert_eq!(code, 3, "{err}");
    let read = |ext: &str| std::fs::read_to_string(d.join(format!("r.{ext}"))).unwrap();
    let report: Value = serde_json::from_str(&read("json")).unwrap();
    let outcomes: Vec<&str> = report["guardrails"]["criteria"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["outcome"].as_str().unwrap())
        .collect();
    assert_eq!(outcomes, ["exceeded", "within"]);
    // The summary: one line a criterion, blocking first, the failing ones first.
    let lines: Vec<&str> = err.lines().filter(|l| l.starts_with("  guardrails: ")).collect();
    assert_eq!(lines.len(), 3, "{err}");
    assert!(lines[0].starts_with("  guardrails: block mean latency_ms "), "{err}");
    assert!(lines[0].ends_with("limit increase ≤ +10.0%; n 120: exceeded"), "{err}");
    assert!(lines[1].starts_with("  guardrails: block template_regression: 1 template shown to regress; regressed: \"<script>alert(1)</script>\" 100.0% → 0.0%"), "{err}");
    assert!(
        lines[2].starts_with("  guardrails: advise mean total_tokens 252 → 252: ±0"),
        "{err}"
    );
    // Markdown: the two tables, the hostile id escaped.
    let md = read("md");
    assert!(
        md.contains(
            "| blocking guardrail | old | new | change (95% interval) | 97.5% lower bound | limit | n | outcome |"
        ),
        "{md}"
    );
    assert!(md.contains("| advisory guardrail |"), "{md}");
    assert!(md.contains(r"\<script\>alert(1)\</script\> 100.0% → 0.0%"), "{md}");
    // (The reason, in its code span, is the only place the id is as it is.)
    assert!(
        md.lines()
            .filter(|l| l.contains(HOSTILE))
            .all(|l| l.starts_with("**Reason:** `")),
        "{md}"
    );
    // HTML: the section, the hostile id escaped, only the report's own two scripts.
    let html = read("html");
    assert!(html.contains("<section class=\"panel\" id=\"guardrails\""));
    assert!(html.contains("<code>&lt;script&gt;alert(1)&lt;/script&gt;</code> 100.0% → 0.0%"));
    assert_eq!(html.matches("<script").count(), 2);
    // JUnit: 120 cases and the 2 blocking criteria (both failed), the advisory one skipped.
    let xml = read("xml");
    assert!(
        xml.contains("<testsuite name=\"deploy-gate\" tests=\"123\" failures=\"42\" errors=\"0\" skipped=\"1\">"),
        "{xml}"
    );
    assert!(xml.contains("<testcase classname=\"deploy-gate.guardrails\" name=\"mean latency_ms\">\n      <failure type=\"guardrail_exceeded\""));
    assert!(xml.contains("<testcase classname=\"deploy-gate.guardrails.advisory\" name=\"mean total_tokens\">\n      <skipped message=\"advise mean total_tokens"));
    assert!(!xml.contains(HOSTILE));
}

#[test]
fn diff_lists_the_guardrails_that_changed_outcome() {
    let dir = tempdir();
    let d = dir.path();
    let files = inputs(d);
    // Before: a latency limit the 30% slowdown is within; after: one it exceeds.
    let (code, err) = evaluate(d, &files, &policy(d, "loose.json", "60%"), "before");
    assert_eq!(code, 3, "{err}");
    let (code, err) = evaluate(d, &files, &policy(d, "tight.json", "10%"), "after");
    assert_eq!(code, 3, "{err}");
    let o = run(&[
        "diff",
        &s(&d.join("before.json")),
        &s(&d.join("after.json")),
        "--out",
        &s(&d.join("d.json")),
        "--markdown",
        &s(&d.join("d.md")),
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let doc: Value = serde_json::from_str(&std::fs::read_to_string(d.join("d.json")).unwrap()).unwrap();
    let g = &doc["guardrails"];
    assert_eq!(g["unchanged"], 2, "{g}");
    assert_eq!(g["changed"].as_array().unwrap().len(), 1, "{g}");
    let c = &g["changed"][0];
    assert_eq!(
        (c["criterion"].as_str(), c["change"].as_str()),
        (Some("mean latency_ms"), Some("changed"))
    );
    assert_eq!(
        (c["before"]["outcome"].as_str(), c["after"]["outcome"].as_str()),
        (Some("within"), Some("exceeded"))
    );
    assert_eq!(
        c["before"]["low"], c["after"]["low"],
        "the same cases, the same interval"
    );
    let md = std::fs::read_to_string(d.join("d.md")).unwrap();
    assert!(
        md.contains("**Guardrails** (1 added, removed or with another outcome; 2 the same):"),
        "{md}"
    );
    assert!(md.contains("| mean latency\\_ms | changed | block, within: +"), "{md}");
    let err = stderr(&o);
    assert!(
        err.contains("  guardrails: 1 added, removed or with another outcome; 2 the same"),
        "{err}"
    );
    assert!(err.contains("    mean latency_ms: block, within: +"), "{err}");
}
