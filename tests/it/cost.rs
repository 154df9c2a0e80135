//! Verdict records with cost fields (`latency_ms`, `usage`, `attempts`, `target`): the report's
//! `cost` object with hand-computed numbers, the rule of which records count, the Markdown and
//! HTML tables, and files without the fields giving the report they gave before.

use crate::common::*;
use serde_json::{json, Value};
use std::path::Path;

/// An audit log of five successful pipelines `p0` … `p4`.
fn audit(dir: &Path) -> String {
    let mut text = String::new();
    for i in 0..5 {
        text += &format!("{{\"pipeline_id\":\"p{i}\",\"stage_id\":\"s\",\"stage_type\":\"llm\",\"input\":\"in\"}}\n");
        text += &format!("{{\"pipeline_id\":\"p{i}\",\"template_id\":\"t\",\"verdict\":\"PASS\",\"is_complete\":true,\"error\":null}}\n");
    }
    write(dir, "audit.jsonl", &text)
}

/// The old model's records: `p0` run twice, `p2` failed after 4 attempts, `p4` without a cost,
/// and `zz` (not a test case) whose cost never counts.
const OLD: &str = concat!(
    "{\"pipeline_id\":\"p0\",\"verdict\":\"FAIL\",\"latency_ms\":999,\"attempts\":1,\"target\":\"sha256:aaa\"}\n",
    "{\"pipeline_id\":\"p0\",\"verdict\":\"PASS\",\"latency_ms\":120.5,\"usage\":{\"prompt_tokens\":100,\"completion_tokens\":10,\"total_tokens\":110},\"attempts\":1,\"target\":\"sha256:bbb\"}\n",
    "{\"pipeline_id\":\"p1\",\"verdict\":\"PASS\",\"latency_ms\":80,\"usage\":{\"prompt_tokens\":90,\"completion_tokens\":7},\"attempts\":2,\"target\":\"sha256:bbb\"}\n",
    "{\"pipeline_id\":\"p2\",\"error\":\"HTTP 503: overloaded (4 attempts)\",\"latency_ms\":60000.1,\"attempts\":4,\"target\":\"sha256:bbb\"}\n",
    "{\"pipeline_id\":\"p3\",\"verdict\":\"PASS\",\"latency_ms\":300,\"usage\":{\"prompt_tokens\":110}}\n",
    "{\"pipeline_id\":\"p4\",\"verdict\":\"PASS\"}\n",
    "{\"pipeline_id\":\"zz\",\"verdict\":\"PASS\",\"latency_ms\":5,\"target\":\"sha256:ccc\"}\n",
);

/// The same verdicts without any cost field.
const OLD_BARE: &str = concat!(
    "{\"pipeline_id\":\"p0\",\"verdict\":\"FAIL\"}\n",
    "{\"pipeline_id\":\"p0\",\"verdict\":\"PASS\"}\n",
    "{\"pipeline_id\":\"p1\",\"verdict\":\"PASS\"}\n",
    "{\"pipeline_id\":\"p2\",\"error\":\"HTTP 503: overloaded (4 attempts)\"}\n",
    "{\"pipeline_id\":\"p3\",\"verdict\":\"PASS\"}\n",
    "{\"pipeline_id\":\"p4\",\"verdict\":\"PASS\"}\n",
    "{\"pipeline_id\":\"zz\",\"verdict\":\"PASS\"}\n",
);

const NEW: &str = "pipeline_id,verdict\np0,PASS\np1,PASS\np2,PASS\np3,PASS\np4,PASS\n";

fn evaluate(dir: &Path, old: &str, extra: &[&str]) -> (Value, String) {
    let old = write(dir, "old.jsonl", old);
    let new = write(dir, "new.csv", NEW);
    let mut args = strings(&[
        "evaluate",
        "--audit",
        &audit(dir),
        "--old-verdicts",
        &old,
        "--new-verdicts",
        &new,
    ]);
    args.extend(strings(&["--min-samples", "1"]));
    args.extend(strings(extra));
    let out = run(&args);
    assert!(matches!(out.status.code(), Some(0 | 3)), "{}", stderr(&out));
    (json_stdout(&out), text(&out))
}

/// Under `repeats: last` each case's last record counts: latencies 80, 120.5, 300, 60000.1
/// (p4 has none); nearest rank: p50 is the 2nd of 4, p95 the ceil(3.8) = 4th; the mean
/// (80 + 120.5 + 300 + 60000.1) / 4 = 15125.15.
#[test]
fn the_report_summarizes_the_counted_records_exactly() {
    let dir = tempdir();
    let (report, _) = evaluate(dir.path(), OLD, &[]);
    assert_eq!(
        report["cost"],
        json!({
            "old": {
                "records": 5,
                "with_latency": 4,
                "latency_ms": {"p50": 120.5, "p95": 60000.1, "mean": 15125.15, "max": 60000.1},
                "with_usage": 3,
                "prompt_tokens": {"records": 3, "total": 300, "mean": 100.0},
                "completion_tokens": {"records": 2, "total": 17, "mean": 8.5},
                "with_attempts": 3,
                "attempts": 7,
                "retried": 2,
                "target": "sha256:bbb",
                "targets": ["sha256:bbb"],
            },
            "new": null,
        })
    );
}

/// Under `repeats: mean` every run counts: p0's first run adds 999 ms, an attempt and its
/// target; five latencies, p50 the ceil(2.5) = 3rd, p95 the ceil(4.75) = 5th.
#[test]
fn every_run_counts_under_repeats_mean() {
    let dir = tempdir();
    let (report, _) = evaluate(dir.path(), OLD, &["--repeats", "mean"]);
    let old = &report["cost"]["old"];
    assert_eq!(old["records"], 6);
    assert_eq!(old["with_latency"], 5);
    assert_eq!(
        old["latency_ms"],
        json!({"p50": 300.0, "p95": 60000.1, "mean": 12299.92, "max": 60000.1})
    );
    assert_eq!((old["attempts"].as_u64(), old["retried"].as_u64()), (Some(8), Some(2)));
    assert_eq!(old["target"], Value::Null);
    assert_eq!(old["targets"], json!(["sha256:aaa", "sha256:bbb"]));
}

/// The cost fields change nothing else in the report (but the inputs' digests and sizes), and a
/// file without them gives a report without `cost`.
#[test]
fn cost_fields_change_nothing_else_and_their_absence_adds_nothing() {
    let dir = tempdir();
    let (with, _) = evaluate(dir.path(), OLD, &[]);
    let (bare, bare_text) = evaluate(dir.path(), OLD_BARE, &[]);
    assert!(bare.get("cost").is_none(), "{bare_text}");
    assert!(!bare_text.contains("\"cost\""));
    let strip = |mut r: Value| {
        let o = r.as_object_mut().unwrap();
        o.shift_remove("cost");
        o.shift_remove("inputs");
        r
    };
    let (with, bare) = (strip(with), strip(bare));
    if let Some(d) = first_difference("report", &with, &bare) {
        panic!("{d}\n{}", json_diff(&bare, &with));
    }
}

#[test]
fn markdown_and_html_show_the_table_only_when_present() {
    let dir = tempdir();
    let report = |old: &str| {
        let (report, _) = evaluate(dir.path(), old, &[]);
        let json = report.to_string();
        (
            deploy_gate::render::markdown::markdown_from_json(&json).unwrap(),
            deploy_gate::render::html::report_html_json(&json).unwrap(),
        )
    };
    let (md, html) = report(OLD);
    assert!(
        md.contains(concat!(
            "| Latency and tokens | old | new |\n|---|---|---|\n| records counted | 5 | — |\n",
            "| with a latency | 4 | — |\n| latency p50 (ms) | 120.5 | — |\n| latency p95 (ms) | 60000.1 | — |\n",
        )),
        "{md}"
    );
    assert!(
        md.contains("| prompt tokens a record | 100.0 (300 in all, 3 records) | — |\n"),
        "{md}"
    );
    assert!(
        md.contains("| attempts | 7 over 3 records, 2 retried | — |\n| target | sha256:bbb | — |\n"),
        "{md}"
    );
    assert!(html.contains("<h3>Latency and tokens</h3><table class=\"two\" id=\"cost\">"));
    assert!(
        html.contains(
            "<tr><th scope=\"row\">latency mean (ms)</th><td class=\"num\">15125.1</td><td class=\"num\">—</td></tr>"
        ),
        "{html}"
    );
    let (md, html) = report(OLD_BARE);
    assert!(!md.contains("Latency and tokens") && !html.contains("Latency and tokens"));
}

#[test]
fn a_bad_cost_value_is_refused_naming_the_file_and_line() {
    let dir = tempdir();
    let old = write(
        dir.path(),
        "old.jsonl",
        "{\"pipeline_id\":\"p0\",\"verdict\":\"PASS\"}\n{\"pipeline_id\":\"p1\",\"verdict\":\"PASS\",\"attempts\":0}\n",
    );
    let new = write(dir.path(), "new.csv", NEW);
    let out = run(&strings(&[
        "evaluate",
        "--audit",
        &audit(dir.path()),
        "--old-verdicts",
        &old,
        "--new-verdicts",
        &new,
    ]));
    assert_eq!(out.status.code(), Some(1));
    assert!(
        stderr(&out).contains("old.jsonl (old_verdicts) line 2, column 49: attempts is 0, expected a positive integer"),
        "{}",
        stderr(&out)
    );
}
