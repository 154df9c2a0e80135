//! Pass 2 reads the spans of the chosen pipelines and picks their lines out again. These tests
//! build random logs whose pipelines interleave (with other pipelines' stages, completions and
//! broken lines inside every span, and pipelines running across files) and check the test set
//! against a plain oracle written from the rules, with the ranges fed in random order and chunks.

use deploy_gate::audit::{AuditScanner, DEFAULT_MAX_LINE};
use deploy_gate::policy::{PassSet, TestSetPolicy};
use deploy_gate::testset::{sample_key, TestSetBuilder, TO_END};
use proptest::prelude::*;
use serde_json::{json, Map, Value};

/// One event of a generated log: which pipeline, what kind of line, and a variant.
type Event = (u8, u8, u8);

fn pipeline_id(p: u8) -> Value {
    // A few pipelines have integer ids, as the reference accepts them.
    if p % 7 == 3 {
        json!(1000 + p as i64)
    } else {
        json!(format!("p-{p}"))
    }
}

fn line(&(p, kind, v): &Event) -> String {
    let id = pipeline_id(p);
    let mut o = Map::new();
    o.insert("pipeline_id".into(), id);
    match kind % 8 {
        0..=4 => {
            o.insert("timestamp".into(), json!("2026-01-01T00:00:00"));
            // A few stage ids are not strings (the case keys them by their JSON text).
            let sid = if v % 11 == 5 {
                json!(v % 3)
            } else {
                json!(format!("s{}", v % 4))
            };
            o.insert("stage_id".into(), sid);
            o.insert("stage_type".into(), json!("llm"));
            match v % 5 {
                0 => {}
                1 => {
                    o.insert("input".into(), Value::Null);
                }
                _ => {
                    o.insert("input".into(), json!(format!("tmpl {p}/{v}")));
                }
            }
            if v % 3 == 0 {
                let text = if v % 2 == 0 {
                    json!(format!("user {p}/{v} \"q\" é"))
                } else {
                    Value::Null
                };
                o.insert(
                    "state_snapshot".into(),
                    json!({"input_text": text, "stage_outputs": {}}),
                );
            }
            if v % 4 == 1 {
                o.insert("input_hash".into(), json!(format!("h{v}")));
            }
            o.insert("output".into(), json!(format!("out {v}")));
        }
        5 | 6 => {
            let verdicts = [
                json!("PASS"),
                json!("pass"),
                json!("FAIL"),
                Value::Null,
                json!("Approve"),
            ];
            if v % 6 == 0 {
                o.insert("stage_name".into(), json!("__pipeline_complete__"));
                o.insert("stage_type".into(), json!("output"));
            }
            o.insert("template_id".into(), json!(format!("t{}", v % 3)));
            o.insert("verdict".into(), verdicts[(v % 5) as usize].clone());
            o.insert("is_complete".into(), json!(v % 9 != 4));
            if v % 13 == 7 {
                o.insert("error".into(), json!("max steps"));
            } else if v % 2 == 0 {
                o.insert("error".into(), Value::Null);
            }
            o.insert("episode_reward".into(), json!(v as f64 / 4.0));
        }
        _ => {
            return match v % 4 {
                0 => "not json at all".into(),
                1 => format!("{{\"pipeline_id\": \"p-{p}\", \"stage_id\": "),
                2 => "   ".into(),
                _ => format!("{{\"pipeline_id\": \"p-{p}\", \"note\": 1}}"),
            }
        }
    }
    Value::Object(o).to_string()
}

/// The test set the rules give, computed directly from every line in order.
fn oracle(lines: &[String], policy: &TestSetPolicy) -> Vec<Value> {
    #[derive(Default, Clone)]
    struct P {
        id: Value,
        first_success: Option<usize>,
        completion: Option<Value>,
        stages: Vec<Value>,
    }
    let pass = ["PASS", "APPROVE", "COMPLETE"];
    let mut by_id: Vec<(String, P)> = Vec::new();
    let mut successes = 0;
    for l in lines {
        let Ok(Value::Object(o)) = serde_json::from_str::<Value>(l) else {
            continue;
        };
        let id = o.get("pipeline_id").cloned().unwrap_or(Value::Null);
        let key = match &id {
            Value::String(s) if !s.is_empty() => s.clone(),
            Value::Number(n) if n.as_i64().is_some_and(|n| n != 0) => n.to_string(),
            _ => continue,
        };
        let set = |k: &str| o.get(k).is_some_and(|v| !v.is_null());
        let completion = o.contains_key("is_complete")
            || o.get("stage_name") == Some(&json!("__pipeline_complete__"))
            || (!o.contains_key("stage_id") && !o.contains_key("stage_type") && o.contains_key("verdict"));
        let stage = !completion && (o.contains_key("stage_id") || o.contains_key("stage_type"));
        let successful = completion
            && o.get("is_complete") == Some(&json!(true))
            && !set("error")
            && o.get("verdict")
                .and_then(Value::as_str)
                .is_some_and(|v| pass.contains(&v.to_uppercase().as_str()));
        if !successful && !stage {
            continue;
        }
        let at = match by_id.iter().position(|(k, _)| *k == key) {
            Some(i) => i,
            None => {
                by_id.push((key, P { id, ..P::default() }));
                by_id.len() - 1
            }
        };
        let p = &mut by_id[at].1;
        if successful {
            if p.first_success.is_none() {
                p.first_success = Some(successes);
                successes += 1;
            }
            p.completion = Some(Value::Object(o));
        } else {
            p.stages.push(Value::Object(o));
        }
    }
    let input_of = |s: &Value| {
        let snap = s
            .get("state_snapshot")
            .and_then(|x| x.get("input_text"))
            .filter(|x| !x.is_null());
        snap.or(s.get("input").filter(|x| !x.is_null())).cloned()
    };
    let mut cands: Vec<P> = by_id
        .into_iter()
        .map(|(_, p)| p)
        .filter(|p| p.first_success.is_some() && p.stages.iter().any(|s| input_of(s).is_some()))
        .collect();
    cands.sort_by_key(|p| p.first_success);
    if cands.len() < policy.min_samples {
        return Vec::new();
    }
    if let Some(max) = policy.max_samples.filter(|&m| cands.len() > m) {
        let key = |p: &P| {
            let text = match &p.id {
                Value::String(s) => s.clone(),
                other => other.to_string(),
            };
            sample_key(
                policy.seed,
                &deploy_gate::audit::PipelineId {
                    text: text.into(),
                    numeric: false,
                },
            )
        };
        let mut keyed: Vec<(usize, &P)> = cands.iter().enumerate().collect();
        keyed.sort_by_key(|(_, p)| key(p));
        keyed.truncate(max);
        keyed.sort_by_key(|(i, _)| *i);
        cands = keyed.into_iter().map(|(_, p)| p.clone()).collect();
    }
    cands
        .iter()
        .map(|p| {
            let c = p.completion.as_ref().unwrap();
            let field = |k: &str| c.get(k).cloned().unwrap_or(Value::Null);
            let giver = p.stages.iter().find(|s| input_of(s).is_some()).unwrap();
            let mut outputs = Map::new();
            for s in &p.stages {
                match s.get("stage_id") {
                    Some(Value::String(k)) => outputs.insert(k.clone(), s["output"].clone()),
                    Some(Value::Null) | None => None,
                    Some(other) => outputs.insert(other.to_string(), s["output"].clone()),
                };
            }
            let mut case = json!({
                "pipeline_id": p.id,
                "template_id": field("template_id"),
                "input_text": input_of(giver).unwrap(),
                "expected_verdict": field("verdict"),
                "expected_stage_outputs": outputs,
                "episode_reward": field("episode_reward"),
            });
            if let Some(h) = giver.get("input_hash").filter(|h| !h.is_null()) {
                case["input_hash"] = h.clone();
            }
            case
        })
        .collect()
}

/// The test set deploy-gate builds: the lines cut into files, pass 1 streamed, pass 2's ranges
/// fed in the order given by `order` (indices, wrapped) in chunks of `chunk` bytes.
fn built(lines: &[String], cuts: &[usize], policy: &TestSetPolicy, order: &[usize], chunk: usize) -> Vec<Value> {
    let mut files: Vec<Vec<u8>> = vec![Vec::new()];
    for (i, l) in lines.iter().enumerate() {
        if cuts.contains(&i) {
            files.push(Vec::new());
        }
        let f = files.last_mut().unwrap();
        f.extend_from_slice(l.as_bytes());
        f.extend_from_slice(if i % 5 == 0 { b"\r\n" } else { b"\n" });
    }
    let mut scanner = AuditScanner::new(PassSet::default(), DEFAULT_MAX_LINE);
    for (n, f) in files.iter().enumerate() {
        scanner.begin_file(&format!("audit-{n}.jsonl"));
        scanner.push(f);
    }
    let index = scanner.finish();
    let mut builder = TestSetBuilder::new(&index, index.select(policy));
    let ranges = builder.ranges().to_vec();
    let mut todo: Vec<usize> = (0..ranges.len()).collect();
    let mut k = 0;
    while !todo.is_empty() {
        let i = todo.remove(order.get(k).copied().unwrap_or(0) % todo.len());
        k += 1;
        let r = ranges[i];
        let file = &files[r.file as usize];
        let end = if r.end == TO_END { file.len() } else { r.end as usize };
        for piece in file[r.start as usize..end].chunks(chunk.max(1)) {
            builder.push(i, piece).unwrap();
        }
        builder.end_range(i).unwrap();
    }
    let ts = builder.finish().unwrap();
    ts.to_jsonl()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

fn events() -> impl Strategy<Value = Vec<Event>> {
    prop::collection::vec((0u8..12, 0u8..8, 0u8..=255), 1..250)
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 200, ..ProptestConfig::default() })]
    #[test]
    fn spans_give_the_test_set_of_the_rules(
        events in events(),
        cuts in prop::collection::vec(0usize..250, 0..3),
        max in prop::option::of(1usize..6),
        seed in 0u64..4,
        order in prop::collection::vec(0usize..64, 0..64),
        chunk in 1usize..400,
    ) {
        let lines: Vec<String> = events.iter().map(line).collect();
        let policy = TestSetPolicy { min_samples: 1, max_samples: max, seed };
        let want = oracle(&lines, &policy);
        prop_assert_eq!(built(&lines, &cuts, &policy, &order, chunk), want);
    }
}

#[test]
fn a_pipeline_whose_stages_surround_the_whole_log_is_read_through_its_span() {
    let mut lines = vec![line(&(1, 0, 2))];
    for v in 0..200u8 {
        lines.push(line(&(2 + v % 9, v % 7, v)));
    }
    lines.push(line(&(1, 1, 4)));
    lines.push(line(&(1, 5, 10)));
    let policy = TestSetPolicy {
        min_samples: 1,
        max_samples: None,
        seed: 0,
    };
    let want = oracle(&lines, &policy);
    assert!(want.iter().any(|c| c["pipeline_id"] == "p-1"));
    assert_eq!(built(&lines, &[50, 120], &policy, &[3, 1, 4, 1, 5], 64), want);
}

#[test]
fn a_range_read_short_or_twice_is_an_error_naming_the_file() {
    let lines: Vec<String> = [(1, 0, 2), (2, 0, 2), (1, 1, 2), (1, 5, 10)].iter().map(line).collect();
    let text = lines.join("\n");
    let mut scanner = AuditScanner::new(PassSet::default(), DEFAULT_MAX_LINE);
    scanner.begin_file("log.jsonl");
    scanner.push(text.as_bytes());
    let index = scanner.finish();
    let policy = TestSetPolicy {
        min_samples: 1,
        max_samples: None,
        seed: 0,
    };
    let mut builder = TestSetBuilder::new(&index, index.select(&policy));
    let r = builder.ranges()[0];
    builder
        .push(0, &text.as_bytes()[r.start as usize..r.end as usize - 1])
        .unwrap();
    let err = builder.end_range(0).unwrap_err().to_string();
    assert!(err.contains("log.jsonl"), "{err}");
    // A line that is not what pass 1 saw there.
    let mut builder = TestSetBuilder::new(&index, index.select(&policy));
    let r = builder.ranges()[0];
    let mut changed = text.as_bytes()[r.start as usize..r.end as usize].to_vec();
    let last = changed.len() - 3;
    changed[last] = b'X';
    let result = builder.push(0, &changed).and_then(|()| builder.end_range(0));
    let err = match result {
        Err(e) => e,
        Ok(()) => builder.finish().unwrap_err(),
    };
    assert!(err.to_string().contains("changed while it was read"), "{err}");
}
