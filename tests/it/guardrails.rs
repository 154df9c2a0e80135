//! Guardrails from the command line: a policy file with `guardrails`, `prices` and
//! `template_regression`; verdict files whose `metrics` are refused by file and line; the
//! decision's exit code; a signed decision with guardrails verified and reproduced.

use crate::common::*;
use serde_json::{json, Value};

/// Inputs of `n` cases in 10 templates; both models pass every case; the new model's latency is
/// `slower` times the old one's, its completion tokens `extra` more.
struct Inputs {
    dir: tempfile::TempDir,
}

impl Inputs {
    fn new(n: usize, slower: f64, extra: u64) -> Inputs {
        let dir = tempdir();
        let (mut audit, mut old, mut new) = (String::new(), String::new(), String::new());
        for i in 0..n {
            let id = format!("case-{i:04}");
            let t = format!("tpl-{}", i % 10);
            audit.push_str(&format!(
                "{{\"pipeline_id\": \"{id}\", \"stage_id\": \"s\", \"stage_type\": \"llm\", \"input\": \"in\", \"output\": {{}}, \"template_id\": \"{t}\"}}\n\
                 {{\"pipeline_id\": \"{id}\", \"verdict\": \"PASS\", \"is_complete\": true, \"template_id\": \"{t}\"}}\n"
            ));
            let latency = 200.0 + ((i * 53) % 300) as f64;
            let tokens = 40 + (i * 7) as u64 % 60;
            old.push_str(&format!(
                "{{\"pipeline_id\": \"{id}\", \"verdict\": \"PASS\", \"latency_ms\": {latency}, \"usage\": {{\"prompt_tokens\": 300, \"completion_tokens\": {tokens}}}, \"metrics\": {{\"tool_calls\": {}}}}}\n",
                i % 4
            ));
            new.push_str(&format!(
                "{{\"pipeline_id\": \"{id}\", \"verdict\": \"PASS\", \"latency_ms\": {}, \"usage\": {{\"prompt_tokens\": 300, \"completion_tokens\": {}}}, \"metrics\": {{\"tool_calls\": {}}}}}\n",
                latency * slower,
                tokens + extra,
                i % 4
            ));
        }
        write(dir.path(), "audit.jsonl", &audit);
        write(dir.path(), "old.jsonl", &old);
        write(dir.path(), "new.jsonl", &new);
        Inputs { dir }
    }

    fn path(&self, name: &str) -> String {
        s(&self.dir.path().join(name))
    }

    fn files(&self) -> Vec<String> {
        strings(&[
            "--audit",
            &self.path("audit.jsonl"),
            "--old-verdicts",
            &self.path("old.jsonl"),
            "--new-verdicts",
            &self.path("new.jsonl"),
        ])
    }

    /// `evaluate` under `policy` (written to a file): (exit code, report, stderr).
    fn evaluate(&self, policy: &Value) -> (Option<i32>, Value, String) {
        let file = write(self.dir.path(), "policy.json", &policy.to_string());
        let report = self.path("report.json");
        let mut a = strings(&["evaluate", "--policy", &file, "--out", &report]);
        a.extend(self.files());
        let out = run(&a);
        let r = std::fs::read(&report)
            .ok()
            .and_then(|b| serde_json::from_slice(&b).ok())
            .unwrap_or(Value::Null);
        (out.status.code(), r, stderr(&out))
    }
}

fn policy(rails: Value) -> Value {
    let mut p = json!({"mode": "non_inferiority", "task_regression_tol": 0.05, "min_samples": 1, "max_samples": null});
    for (k, v) in rails.as_object().unwrap() {
        p[k] = v.clone();
    }
    p
}

#[test]
fn latency_and_tokens_decide_with_the_task_rule() {
    let rails = json!({
        "prices": {"old": {"prompt_per_million": 1.0, "completion_per_million": 4.0},
                   "new": {"prompt_per_million": 0.5, "completion_per_million": 2.0}},
        "guardrails": [
            {"metric": "latency_ms", "statistic": "p95", "max_increase": "15%"},
            {"metric": "completion_tokens", "max_difference": 10},
            {"metric": "cost", "max_increase": "0%", "action": "advise"}
        ]
    });
    // Slower by 40%: blocked, exit 3, the reason naming it.
    let slow = Inputs::new(400, 1.4, 0);
    let (code, r, err) = slow.evaluate(&policy(rails.clone()));
    assert_eq!(code, Some(3), "{err}");
    let reason = r["decision"]["reason"].as_str().unwrap();
    assert!(
        reason.starts_with("blocked: p95 latency_ms exceeded its limit; task rule: "),
        "{reason}"
    );
    let g = &r["guardrails"];
    assert_eq!(g["criteria"][0]["outcome"], "exceeded");
    assert_eq!(g["criteria"][1]["outcome"], "within");
    // Half the price per token: the cost is down by half, within a limit of no increase.
    assert_eq!(g["criteria"][2]["outcome"], "within");
    assert!((g["criteria"][2]["change"].as_f64().unwrap() + 0.5).abs() < 1e-12);
    assert_eq!(r["policy"]["guardrails"][0]["max_increase"], 0.15);
    assert!(err.contains("p95 latency_ms"), "the summary names it: {err}");
    // As fast, as many tokens: approved.
    let same = Inputs::new(400, 1.0, 0);
    let (code, r, err) = same.evaluate(&policy(rails.clone()));
    assert_eq!(code, Some(0), "{err}: {}", r["decision"]["reason"]);
    // 25 tokens more a case: blocked by the tokens alone.
    let verbose = Inputs::new(400, 1.0, 25);
    let (code, r, _) = verbose.evaluate(&policy(rails));
    assert_eq!(code, Some(3));
    assert!(r["decision"]["reason"]
        .as_str()
        .unwrap()
        .starts_with("blocked: mean completion_tokens exceeded its limit"));
}

#[test]
fn a_guardrail_that_cannot_be_judged_is_inconclusive() {
    // p99 needs 1,000 cases.
    let inputs = Inputs::new(300, 1.0, 0);
    let (code, r, _) = inputs.evaluate(&policy(
        json!({"guardrails": [{"metric": "latency_ms", "statistic": "p99", "max_increase": "10%"}]}),
    ));
    assert_eq!(code, Some(4));
    let reason = r["decision"]["reason"].as_str().unwrap();
    assert!(
        reason.starts_with("inconclusive: not shown: p99 latency_ms; task rule: "),
        "{reason}"
    );
    assert_eq!(r["decision"]["outcome"], "inconclusive");
}

#[test]
fn bad_metrics_and_bad_guardrails_are_refused_by_file_line_and_field() {
    let inputs = Inputs::new(30, 1.0, 0);
    let bad = [
        (
            r#"{"pipeline_id": "case-0000", "verdict": "PASS", "metrics": {"steps": "7"}}"#,
            "`steps` is a string",
        ),
        (
            r#"{"pipeline_id": "case-0000", "verdict": "PASS", "metrics": {"steps": 1, "steps": 2}}"#,
            "`steps` twice",
        ),
        // Beyond the doubles: the JSON reader refuses it before the field is read.
        (
            r#"{"pipeline_id": "case-0000", "verdict": "PASS", "metrics": {"steps": 1e999}}"#,
            "out of range",
        ),
        (
            r#"{"pipeline_id": "case-0000", "verdict": "PASS", "metrics": [1]}"#,
            "not a JSON object",
        ),
        (
            r#"{"pipeline_id": "case-0000", "verdict": "PASS", "metrics": {"": 3}}"#,
            "a metric with an empty name",
        ),
    ];
    for (line, says) in bad {
        let text = std::fs::read_to_string(inputs.path("new.jsonl")).unwrap();
        let mut lines: Vec<&str> = text.lines().collect();
        lines[2] = line;
        write(inputs.dir.path(), "bad.jsonl", &(lines.join("\n") + "\n"));
        let mut args = strings(&["evaluate", "--min-samples", "1"]);
        args.extend(inputs.files());
        args[8] = inputs.path("bad.jsonl");
        let out = run(&args);
        let err = stderr(&out);
        assert_eq!(out.status.code(), Some(1), "{line}: {err}");
        assert!(
            err.contains("bad.jsonl") && err.contains("line 3") && err.contains(says),
            "{line}: {err}"
        );
    }
    // A fraction as text without its `%`: 10% or ten times? Refused, naming the field.
    let (code, _, err) = inputs.evaluate(&policy(
        json!({"guardrails": [{"metric": "latency_ms", "max_increase": "10"}]}),
    ));
    assert_eq!(code, Some(1));
    assert!(
        err.contains("policy.json") && err.contains("guardrails[0].max_increase") && err.contains("without `%`"),
        "{err}"
    );
    let (code, _, err) = inputs.evaluate(&policy(
        json!({"guardrails": [{"metric": "cost", "max_increase": "10%"}]}),
    ));
    assert_eq!(code, Some(1));
    assert!(
        err.contains("policy.json") && err.contains("guardrails[0].metric") && err.contains("prices"),
        "{err}"
    );
}

#[test]
fn a_decision_with_guardrails_signs_verifies_and_reproduces() {
    let inputs = Inputs::new(300, 1.02, 0);
    let dir = inputs.dir.path();
    let (code, r, _) = inputs.evaluate(&policy(json!({
        "guardrails": [{"metric": "latency_ms", "statistic": "p90", "max_increase": "10%"},
                       {"metric": "metrics.tool_calls", "max_difference": 0.5}],
        "template_regression": {"max_drop": 0.2}
    })));
    assert_eq!(code, Some(0), "{}", r["decision"]["reason"]);
    assert_eq!(r["guardrails"]["template_regression"]["tested"], 10);
    let digest = format!("sha256:{}", "cd".repeat(32));
    assert!(run(&["keygen", "--out", &s(&dir.join("reviewer"))]).status.success());
    let envelope = s(&dir.join("decision.dsse.json"));
    let out = run(&[
        "sign",
        &inputs.path("report.json"),
        "--key",
        &s(&dir.join("reviewer.key.pem")),
        "--model",
        "agent-v2",
        "--model-digest",
        &digest,
        "--target",
        "config.yaml",
        "--out",
        &envelope,
    ]);
    assert!(out.status.success(), "{}", text(&out));
    let verify = |files: Vec<String>| {
        let mut a = strings(&[
            "verify",
            &envelope,
            "--trusted-key",
            &s(&dir.join("reviewer.pub.pem")),
            "--model-digest",
            &digest,
            "--target",
            "config.yaml",
            "--reproduce",
        ]);
        a.extend(files);
        run(&a)
    };
    let out = verify(inputs.files());
    assert_eq!(json_stdout(&out)["verification_result"], "PASSED", "{}", text(&out));
    // The same verdicts, slower: the guardrails differ, not reproduced.
    let stripped: String = std::fs::read_to_string(inputs.path("new.jsonl"))
        .unwrap()
        .lines()
        .map(|l| {
            let mut v: Value = serde_json::from_str(l).unwrap();
            v["latency_ms"] = json!(v["latency_ms"].as_f64().unwrap() * 1.5);
            format!("{v}\n")
        })
        .collect();
    write(dir, "new-other.jsonl", &stripped);
    let mut other = inputs.files();
    other[5] = inputs.path("new-other.jsonl");
    assert_eq!(inputs.files()[4], "--new-verdicts");
    let out = verify(other);
    assert_eq!(json_stdout(&out)["check"], "reproduce", "{}", text(&out));
}
