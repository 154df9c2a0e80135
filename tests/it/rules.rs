//! One test per rule of DESIGN "Inputs" and "Decision", and per documented difference from
//! the reference, through the library's in-memory API.

use deploy_gate::gate::{evaluate_in_memory, test_set_in_memory, MemoryInputs};
use deploy_gate::policy::TestSetPolicy;
use deploy_gate::policy::{GatePolicy, OnInsufficient, PassSet};
use deploy_gate::testset::{sample_key, TestSet};
use serde_json::{json, Value};

fn jsonl(lines: &[Value]) -> String {
    lines.iter().map(|l| l.to_string() + "\n").collect()
}

fn stage(pid: &str, stage_id: &str, input: Value, output: Value) -> Value {
    json!({"pipeline_id": pid, "stage_id": stage_id, "stage_type": "llm", "input": input, "output": output})
}

fn done(pid: &str, verdict: &str) -> Value {
    json!({"pipeline_id": pid, "template_id": "t", "verdict": verdict, "is_complete": true, "error": null, "episode_reward": 1.5})
}

fn policy(min: usize, max: Option<usize>) -> GatePolicy {
    GatePolicy {
        test_set: TestSetPolicy {
            min_samples: min,
            max_samples: max,
            seed: 0,
        },
        ..GatePolicy::default()
    }
}

/// At most `max` cases, sampled with `seed`.
fn sampling(max: usize, seed: u64) -> GatePolicy {
    let mut p = policy(1, Some(max));
    p.test_set.seed = seed;
    p
}

fn build(text: &str, policy: &GatePolicy) -> TestSet {
    test_set_in_memory(&[("audit.jsonl", text.as_bytes())], policy)
        .unwrap()
        .1
}

fn cases(ts: &TestSet) -> Vec<Value> {
    ts.cases.iter().map(|c| serde_json::to_value(c).unwrap()).collect()
}

fn ids(ts: &TestSet) -> Vec<String> {
    ts.cases.iter().map(|c| c.pipeline_id.text.to_string()).collect()
}

#[test]
fn cases_follow_the_first_successful_completion_and_stages_may_come_after_it() {
    let text = jsonl(&[
        stage("b", "s0", json!("in b"), json!(1)),
        done("a", "PASS"),
        stage("a", "s0", json!("in a"), json!(2)),
        done("b", "PASS"),
        done("a", "PASS"),
    ]);
    assert_eq!(ids(&build(&text, &policy(1, None))), ["a", "b"]);
}

#[test]
fn last_successful_completion_wins_and_failures_never_remove_a_success() {
    let mut later = done("a", "approve");
    later["template_id"] = json!("t2");
    later["episode_reward"] = json!(null);
    let text = jsonl(&[
        stage("a", "s0", json!("x"), json!(null)),
        done("a", "PASS"),
        later,
        json!({"pipeline_id": "a", "verdict": "FAIL", "is_complete": true, "error": null}),
        json!({"pipeline_id": "a", "verdict": "PASS", "is_complete": false}),
    ]);
    let c = &cases(&build(&text, &policy(1, None)))[0];
    assert_eq!(
        (&c["template_id"], &c["expected_verdict"], &c["episode_reward"]),
        (&json!("t2"), &json!("approve"), &json!(null))
    );
}

#[test]
fn input_comes_from_the_first_stage_that_has_one_snapshot_first() {
    let text = jsonl(&[
        json!({"pipeline_id": "a", "stage_id": "s0", "stage_type": "llm", "input": null, "output": 0}),
        json!({"pipeline_id": "a", "stage_id": "s1", "stage_type": "llm", "input": "template {x}",
               "state_snapshot": {"input_text": "user text"}, "input_hash": "ab", "output": 1}),
        json!({"pipeline_id": "a", "stage_id": "s2", "stage_type": "llm", "input": "later"}),
        done("a", "PASS"),
        json!({"pipeline_id": "b", "stage_id": "s0", "stage_type": "llm", "input": "fallback", "state_snapshot": {"input_text": null}}),
        json!({"pipeline_id": "b", "stage_id": "s1", "stage_type": "llm", "input": "second", "state_snapshot": "not an object"}),
        done("b", "PASS"),
        json!({"pipeline_id": "c", "stage_id": "s0", "stage_type": "llm", "input": ""}),
        done("c", "PASS"),
    ]);
    let c = cases(&build(&text, &policy(1, None)));
    assert_eq!(
        (&c[0]["input_text"], &c[0]["input_hash"]),
        (&json!("user text"), &json!("ab"))
    );
    assert_eq!(c[1]["input_text"], json!("fallback"));
    assert!(c[1].get("input_hash").is_none());
    assert_eq!(
        c[2]["input_text"],
        json!(""),
        "an empty string counts as an input, as in the reference"
    );
}

#[test]
fn pipelines_without_stages_or_input_are_not_cases() {
    let text = jsonl(&[
        done("nostages", "PASS"),
        json!({"pipeline_id": "noinput", "stage_id": "s0", "stage_type": "llm", "output": 1}),
        done("noinput", "PASS"),
    ]);
    let (index, ts) = test_set_in_memory(&[("a", text.as_bytes())], &policy(0, None)).unwrap();
    assert!(ts.cases.is_empty());
    let s = index.summary();
    assert_eq!(
        (s.successful_without_stages, s.successful_without_input, s.candidates),
        (1, 1, 0)
    );
}

#[test]
fn stage_outputs_keep_first_order_latest_value_and_drop_null_ids() {
    let text = jsonl(&[
        stage("a", "s1", json!("in"), json!("first")),
        stage("a", "s0", json!(null), json!({"k": [1, 2.50]})),
        json!({"pipeline_id": "a", "stage_id": null, "stage_type": "llm", "output": "dropped"}),
        json!({"pipeline_id": "a", "stage_type": "llm", "output": "no id"}),
        stage("a", "s1", json!(null), json!("retry")),
        done("a", "PASS"),
    ]);
    let ts = build(&text, &policy(1, None));
    let line = ts.to_jsonl();
    assert!(
        line.contains(r#""expected_stage_outputs":{"s1":"retry","s0":{"k":[1,2.5]}}"#),
        "{line}"
    );
}

#[test]
fn values_are_kept_exactly_as_written() {
    let text = "{\"pipeline_id\":\"a\",\"stage_id\":\"s\",\"stage_type\":\"x\",\"input\":\"caf\\u00e9 \u{1F680}\",\"output\":1.000000000000000000001}\n{\"pipeline_id\":\"a\",\"verdict\":\"PASS\",\"is_complete\":true,\"episode_reward\":12345678901234567890}\n";
    let line = build(text, &policy(1, None)).to_jsonl();
    assert!(line.contains(r#""input_text":"caf\u00e9 🚀""#), "{line}");
    assert!(
        line.contains("1.000000000000000000001") && line.contains("12345678901234567890"),
        "{line}"
    );
}

#[test]
fn min_samples_empties_the_test_set() {
    let text = jsonl(&[stage("a", "s", json!("x"), json!(1)), done("a", "PASS")]);
    let ts = build(&text, &policy(2, None));
    assert!(ts.cases.is_empty() && ts.insufficient && ts.candidates == 1);
}

fn many(n: usize) -> String {
    let mut lines = Vec::new();
    for i in 0..n {
        let pid = format!("p{i:03}");
        lines.push(stage(&pid, "s", json!(format!("in {i}")), json!(i)));
        lines.push(done(&pid, "PASS"));
    }
    jsonl(&lines)
}

#[test]
fn the_sample_is_the_smallest_sha256_keys_listed_in_audit_order() {
    let text = many(50);
    let p = sampling(10, 7);
    let ts = build(&text, &p);
    assert!(ts.sampled);
    let mut all: Vec<String> = (0..50).map(|i| format!("p{i:03}")).collect();
    all.sort_by_key(|id| {
        sample_key(
            7,
            &deploy_gate::audit::PipelineId {
                text: id.as_str().into(),
                numeric: false,
            },
        )
    });
    let mut want: Vec<String> = all[..10].to_vec();
    want.sort();
    assert_eq!(ids(&ts), want);
    // sha256("7:p000") computed independently (Python hashlib): the key is "<seed>:<id>".
    let key = sample_key(
        7,
        &deploy_gate::audit::PipelineId {
            text: "p000".into(),
            numeric: false,
        },
    );
    assert_eq!(
        hex::encode(key),
        "efe9acf6fa061e25407cf82184f2f775648c090fa51d23179af2f56fd90fc20b"
    );
}

/// Enough candidates that the sample keys are computed on all cores, each run keeping its own
/// smallest keys: the same rule holds, for samples smaller and larger than a run.
#[test]
fn a_large_sample_is_the_smallest_sha256_keys_listed_in_audit_order() {
    let n = 6000;
    let text = many(n);
    let key = |i: &usize| {
        sample_key(
            11,
            &deploy_gate::audit::PipelineId {
                text: format!("p{i:03}").into(),
                numeric: false,
            },
        )
    };
    let mut order: Vec<usize> = (0..n).collect();
    order.sort_by_key(key);
    for max in [1, 150, 4000, n - 1] {
        let ts = build(&text, &sampling(max, 11));
        assert!(ts.sampled);
        let mut want: Vec<usize> = order[..max].to_vec();
        // Listed in audit order, which here is the order of the numbers.
        want.sort();
        let want: Vec<String> = want.iter().map(|i| format!("p{i:03}")).collect();
        assert_eq!(ids(&ts), want, "max_samples {max}");
    }
}

#[test]
fn the_sample_does_not_depend_on_file_order_and_stays_stable_as_the_log_grows() {
    let p = sampling(10, 3);
    let forward = build(&many(60), &p);
    let text = many(60);
    let lines: Vec<&str> = text.lines().collect();
    let mut pairs: Vec<String> = lines.chunks(2).map(|c| c.join("\n") + "\n").collect();
    pairs.reverse();
    let backward = build(&pairs.concat(), &p);
    let mut a = ids(&forward);
    let mut b = ids(&backward);
    a.sort();
    b.sort();
    assert_eq!(a, b);
    let grown = build(&many(70), &p);
    let kept = ids(&grown).iter().filter(|id| a.contains(id)).count();
    assert!(kept >= 8, "sample moved too much as the log grew: {kept} of 10 kept");
}

#[test]
fn several_files_are_one_stream() {
    let one = jsonl(&[stage("a", "s", json!("x"), json!(1))]);
    let two = jsonl(&[done("a", "PASS")]);
    let (index, ts) = test_set_in_memory(
        &[("1.jsonl", one.as_bytes()), ("2.jsonl", two.as_bytes())],
        &policy(1, None),
    )
    .unwrap();
    assert_eq!(ts.cases.len(), 1);
    assert_eq!(index.files().len(), 2);
    // A last line without newline ends with its file: it does not run into the next file.
    let no_nl = one.trim_end().to_owned();
    let (_, ts) = test_set_in_memory(&[("1", no_nl.as_bytes()), ("2", two.as_bytes())], &policy(1, None)).unwrap();
    assert_eq!(ts.cases.len(), 1);
}

#[test]
fn configurable_pass_verdicts_with_full_unicode_upper_casing() {
    let text = jsonl(&[
        stage("a", "s", json!("x"), json!(1)),
        done("a", "straße"),
        stage("b", "s", json!("x"), json!(1)),
        done("b", "PASS"),
    ]);
    let p = GatePolicy {
        pass_verdicts: PassSet::new(["STRASSE"]),
        ..policy(1, None)
    };
    assert_eq!(ids(&build(&text, &p)), ["a"]);
}

fn gate(text: &str, old: &str, new: &str, p: &GatePolicy) -> Value {
    let inputs = MemoryInputs {
        audit: vec![("audit.jsonl", text.as_bytes())],
        old_verdicts: ("old.jsonl", old.as_bytes()),
        new_verdicts: ("new.csv", new.as_bytes()),
        old_trajectories: None,
        new_trajectories: None,
    };
    serde_json::to_value(&evaluate_in_memory(&inputs, p).unwrap().1).unwrap()
}

#[test]
fn missing_null_and_errored_verdicts_fail_and_are_counted_apart() {
    let text = jsonl(&[
        stage("a", "s", json!("x"), json!(1)),
        done("a", "PASS"),
        stage("b", "s", json!("x"), json!(1)),
        done("b", "Approve"),
        stage("c", "s", json!("x"), json!(1)),
        done("c", "PASS"),
        stage("d", "s", json!("x"), json!(1)),
        done("d", "PASS"),
    ]);
    let old = jsonl(&[
        json!({"pipeline_id": "a", "verdict": "pass"}),
        json!({"pipeline_id": "b", "verdict": null}),
        json!({"pipeline_id": "c", "error": "timeout"}),
        json!({"pipeline_id": "zzz", "verdict": "PASS"}),
    ]);
    let new = "pipeline_id,verdict\na,PASS\nb,APPROVE\nc,PASS\nd,FAIL\n";
    let r = gate(&text, &old, new, &policy(1, None));
    let o = &r["verdicts"]["old"];
    assert_eq!(
        (&o["passed"], &o["missing"], &o["errored"], &o["wrong"], &o["extra"]),
        (&json!(1), &json!(2), &json!(1), &json!(0), &json!(1))
    );
    assert_eq!(r["decision"]["task_old"], json!(0.25));
    assert_eq!(r["decision"]["task_new"], json!(0.75));
    let statuses: Vec<&Value> = r["cases"].as_array().unwrap().iter().map(|c| &c["status"]).collect();
    assert_eq!(
        statuses,
        [
            &json!("both_pass"),
            &json!("improved"),
            &json!("improved"),
            &json!("both_fail")
        ]
    );
    assert_eq!(r["cases"][2]["old_error"], json!("timeout"));
    assert_eq!(r["templates"][0]["n"], json!(4));
}

#[test]
fn an_empty_test_set_blocks_by_default_unlike_the_reference() {
    let text = jsonl(&[stage("a", "s", json!("x"), json!(1)), done("a", "PASS")]);
    let r = gate(&text, "", "", &policy(20, Some(200)));
    assert_eq!(r["decision"]["approved"], json!(false));
    assert_eq!(
        r["decision"]["reason"],
        json!("blocked: insufficient test cases (1 < min_samples 20)")
    );
    let approve = GatePolicy {
        on_insufficient: OnInsufficient::Approve,
        ..policy(20, Some(200))
    };
    let r = gate(&text, "", "", &approve);
    assert_eq!(
        r["decision"]["reason"],
        json!("approved: no regression on task or trajectory")
    );
}

#[test]
fn the_report_is_byte_identical_for_the_same_inputs() {
    let text = many(30);
    let old = "{\"a\": \"PASS\"}";
    let one = evaluate_in_memory(
        &MemoryInputs {
            audit: vec![("a", text.as_bytes())],
            old_verdicts: ("o", old.as_bytes()),
            new_verdicts: ("n", old.as_bytes()),
            old_trajectories: None,
            new_trajectories: None,
        },
        &policy(1, Some(5)),
    )
    .unwrap()
    .1
    .to_json();
    let two = evaluate_in_memory(
        &MemoryInputs {
            audit: vec![("a", text.as_bytes())],
            old_verdicts: ("o", old.as_bytes()),
            new_verdicts: ("n", old.as_bytes()),
            old_trajectories: None,
            new_trajectories: None,
        },
        &policy(1, Some(5)),
    )
    .unwrap()
    .1
    .to_json();
    assert_eq!(one, two);
}
