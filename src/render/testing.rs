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
    let inputs = MemoryInputs {
        audit: vec![("audit.jsonl", audit.as_bytes())],
        old_verdicts: ("old_verdicts.jsonl", old_v.as_bytes()),
        new_verdicts: ("new_verdicts.jsonl", new_v.as_bytes()),
        old_trajectories: None,
        new_trajectories: None,
    };
    evaluate_in_memory(&inputs, &policy).expect("the inputs are valid").1
}
