//! Reports for the renderers' tests, evaluated in memory from JSONL written here.

use crate::gate::{evaluate_in_memory, MemoryInputs};
use crate::policy::GatePolicy;
use crate::report::GateReport;
use serde_json::{json, Value};

/// A report over one pipeline per template id in `templates` (any JSON values), each case
/// passing for the old model; the new model's verdict per case: `Some("PASS")`, another
/// verdict, `None` (missing) or `Some("!…")` (an error with that message).
pub fn report(templates: &[Value], new: &[Option<&str>]) -> GateReport {
    let (mut audit, mut old_v, mut new_v) = (String::new(), String::new(), String::new());
    for (i, t) in templates.iter().enumerate() {
        let pid = format!("p{i}");
        let line = |v: Value| v.to_string() + "\n";
        audit += &line(
            json!({"pipeline_id": pid, "template_id": t, "stage_id": "s", "stage_type": "llm", "input": "q", "output": "a", "state_snapshot": {"input_text": "in"}}),
        );
        audit += &line(
            json!({"pipeline_id": pid, "template_id": t, "verdict": "PASS", "is_complete": true, "error": null, "episode_reward": 1.0}),
        );
        old_v += &line(json!({"pipeline_id": pid, "verdict": "PASS"}));
        match new.get(i).copied().flatten() {
            None => {}
            Some(e) if e.starts_with('!') => new_v += &line(json!({"pipeline_id": pid, "error": &e[1..]})),
            Some(v) => new_v += &line(json!({"pipeline_id": pid, "verdict": v})),
        }
    }
    let mut policy = GatePolicy::default();
    policy.test_set.min_samples = 1;
    policy.test_set.max_samples = None;
    // Missing verdicts counted as failures whatever their number (the reference's rule), so
    // that a missing one is rendered as a regression.
    policy.max_missing = Some(1.0);
    let inputs = MemoryInputs {
        audit: vec![("audit.jsonl", audit.as_bytes())],
        old_verdicts: ("old_verdicts.jsonl", old_v.as_bytes()),
        new_verdicts: ("new_verdicts.jsonl", new_v.as_bytes()),
        old_trajectories: None,
        new_trajectories: None,
    };
    evaluate_in_memory(&inputs, &policy).expect("the inputs are valid").1
}

/// The template id of [`guarded_report`]'s template that regresses: markup, a quote and a
/// control character, as a hostile log could give it.
pub const HOSTILE_TEMPLATE: &str = "</td><script>alert(\"t\")</script>\u{1b}";

/// A report evaluated in memory with guardrails, from verdict files generated here: 160 cases
/// over four templates (`t0`, `t1`, `t2` and [`HOSTILE_TEMPLATE`]), each record with a
/// latency, token usage and a `steps` metric. The new model is about 50% slower (a blocking
/// p95 latency guardrail with `max_increase: 10%` is exceeded), uses the same tokens (a blocking
/// mean total_tokens guardrail is within), takes one more step (an advisory `metrics.steps`
/// guardrail with `max_difference: 0.5` is exceeded, with 10 cases excluded that lack it), and
/// fails every case of the hostile template (a blocking `template_regression` names it).
pub fn guarded_report() -> GateReport {
    let templates = [json!("t0"), json!("t1"), json!("t2"), json!(HOSTILE_TEMPLATE)];
    let (mut audit, mut old_v, mut new_v) = (String::new(), String::new(), String::new());
    let mut state: u64 = 0x2545_f491_4f6c_dd1d;
    let mut uniform = move || {
        // xorshift64*: a fixed stream, no dependency on a random number crate.
        state ^= state >> 12;
        state ^= state << 25;
        state ^= state >> 27;
        (state.wrapping_mul(0x2545_f491_4f6c_dd1d) >> 11) as f64 / (1u64 << 53) as f64
    };
    for i in 0..160 {
        let pid = format!("c{i:03}");
        let t = &templates[i % 4];
        let line = |v: Value| v.to_string() + "\n";
        audit += &line(
            json!({"pipeline_id": pid, "template_id": t, "stage_id": "s", "stage_type": "llm", "input": "q", "output": "a"}),
        );
        audit += &line(json!({"pipeline_id": pid, "template_id": t, "verdict": "PASS", "is_complete": true}));
        let latency = 200.0 + 600.0 * uniform();
        let tokens = 300 + (i % 7) as u64;
        let hostile = i % 4 == 3;
        let record = |verdict: &str, latency: f64, steps: Option<u64>| {
            let mut r = json!({"pipeline_id": pid, "verdict": verdict, "latency_ms": (latency * 10.0).round() / 10.0,
                "usage": {"prompt_tokens": tokens, "completion_tokens": 80}});
            if let Some(s) = steps {
                r["metrics"] = json!({"steps": s});
            }
            line(r)
        };
        let steps = 5 + (i % 3) as u64;
        old_v += &record("PASS", latency, Some(steps));
        let new_verdict = if hostile { "FAIL" } else { "PASS" };
        let new_steps = (i >= 10).then_some(steps + 1);
        new_v += &record(new_verdict, latency * (1.4 + 0.2 * uniform()), new_steps);
    }
    let policy = crate::policy::PolicyInput::from_json(
        r#"{"min_samples": 1, "max_samples": null, "cluster": "none",
            "guardrails": [
              {"metric": "latency_ms", "statistic": "p95", "max_increase": "10%", "min_cases": 50},
              {"metric": "total_tokens", "max_increase": "10%"},
              {"metric": "metrics.steps", "max_difference": 0.5, "action": "advise"}],
            "template_regression": {"max_drop": 0.1, "min_cases": 10}}"#,
    )
    .expect("the policy parses")
    .into_policy()
    .expect("the policy is valid");
    let inputs = MemoryInputs {
        audit: vec![("audit.jsonl", audit.as_bytes())],
        old_verdicts: ("old_verdicts.jsonl", old_v.as_bytes()),
        new_verdicts: ("new_verdicts.jsonl", new_v.as_bytes()),
        old_trajectories: None,
        new_trajectories: None,
    };
    evaluate_in_memory(&inputs, &policy).expect("the inputs are valid").1
}

#[test]
fn the_guarded_report_has_what_its_tests_rely_on() {
    let r = guarded_report();
    let g = r.guardrails.as_ref().expect("guardrails");
    let outcomes: Vec<&str> = g.criteria.iter().map(|c| c.outcome.as_str()).collect();
    assert_eq!(outcomes, ["exceeded", "within", "exceeded"]);
    assert_eq!(g.criteria[2].excluded, 10);
    let t = g.template_regression.as_ref().expect("template_regression");
    assert_eq!(t.outcome.as_str(), "exceeded");
    assert_eq!(
        t.templates[0].template_id.get(),
        serde_json::to_string(HOSTILE_TEMPLATE).unwrap()
    );
    assert!(t.templates[0].regressed && !t.templates[1].regressed);
    assert_eq!(r.decision.outcome().as_str(), "blocked");
}

/// A report's JSON (a policy of this revision: `min_samples`, no sampling) over `n` cases of
/// which the first `answered` have the new model's verdict (`PASS`), the rest none, the old model
/// answering every case: the rules on missing evidence decide it (insufficient below
/// `min_samples`, else inconclusive beyond `max_missing`).
pub fn missing_evidence_json(n: usize, answered: usize, min_samples: u64) -> Value {
    let (mut audit, mut old_v, mut new_v) = (String::new(), String::new(), String::new());
    let line = |v: Value| v.to_string() + "\n";
    for i in 0..n {
        let pid = format!("p{i:03}");
        let t = format!("t{}", i % 4);
        audit += &line(
            json!({"pipeline_id": pid, "template_id": t, "stage_id": "s", "stage_type": "llm", "input": "q", "output": "a"}),
        );
        audit += &line(json!({"pipeline_id": pid, "template_id": t, "verdict": "PASS", "is_complete": true}));
        old_v += &line(json!({"pipeline_id": pid, "verdict": "PASS"}));
        if i < answered {
            new_v += &line(json!({"pipeline_id": pid, "verdict": "PASS"}));
        }
    }
    let policy =
        crate::policy::PolicyInput::from_json(&format!(r#"{{"min_samples": {min_samples}, "max_samples": null}}"#))
            .expect("the policy parses")
            .into_policy()
            .expect("the policy is valid");
    let inputs = MemoryInputs {
        audit: vec![("audit.jsonl", audit.as_bytes())],
        old_verdicts: ("old_verdicts.jsonl", old_v.as_bytes()),
        new_verdicts: ("new_verdicts.jsonl", new_v.as_bytes()),
        old_trajectories: None,
        new_trajectories: None,
    };
    let r = evaluate_in_memory(&inputs, &policy).expect("the inputs are valid").1;
    serde_json::to_value(&r).expect("the report serializes")
}

/// A sequential report's JSON (`cluster: none`, budget 2,000) whose verdict files answer the
/// first `asked` of 200 cases for both models, every one passing for both, so that the rule
/// approves early: the cases not asked are not run.
pub fn early_stop_json(asked: usize) -> Value {
    let n = 200;
    let (mut audit, mut old_v, mut new_v) = (String::new(), String::new(), String::new());
    let line = |v: Value| v.to_string() + "\n";
    for i in 0..n {
        let pid = format!("c{i:03}");
        let t = format!("t{}", i % 40);
        audit += &line(
            json!({"pipeline_id": pid, "template_id": t, "stage_id": "s", "stage_type": "llm", "input": "q", "output": "a"}),
        );
        audit += &line(json!({"pipeline_id": pid, "template_id": t, "verdict": "PASS", "is_complete": true}));
        if i < asked {
            old_v += &line(json!({"pipeline_id": pid, "verdict": "PASS"}));
            new_v += &line(json!({"pipeline_id": pid, "verdict": "PASS"}));
        }
    }
    let policy = crate::policy::PolicyInput::from_json(
        r#"{"min_samples": 1, "max_samples": null, "mode": "non_inferiority", "cluster": "none",
            "sequential": true, "budget": 2000, "on_insufficient": "approve", "task_regression_tol": 0.1}"#,
    )
    .expect("the policy parses")
    .into_policy()
    .expect("the policy is valid");
    let inputs = MemoryInputs {
        audit: vec![("audit.jsonl", audit.as_bytes())],
        old_verdicts: ("old_verdicts.jsonl", old_v.as_bytes()),
        new_verdicts: ("new_verdicts.jsonl", new_v.as_bytes()),
        old_trajectories: None,
        new_trajectories: None,
    };
    let r = evaluate_in_memory(&inputs, &policy).expect("the inputs are valid").1;
    serde_json::to_value(&r).expect("the report serializes")
}

#[test]
fn the_evidence_reports_are_what_their_tests_rely_on() {
    let v = early_stop_json(120);
    assert_eq!(v["sequential"]["stopped"], "approved", "{}", v["sequential"]);
    assert_eq!(v["evidence"]["not_run"], 80);
    let used = v["evidence"]["rests_on"].as_u64().unwrap();
    assert!(used < 120 && v["cases"].as_array().unwrap().len() as u64 == used);
    let v = missing_evidence_json(200, 4, 20);
    assert_eq!(v["decision"]["outcome"], "blocked");
    assert_eq!(v["evidence"]["rests_on"], 4);
    let v = missing_evidence_json(200, 176, 20);
    assert_eq!(v["decision"]["outcome"], "inconclusive");
}
