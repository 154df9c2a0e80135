//! `deploy-gate run` against a real OpenAI-compatible server that is not this project's code:
//! llama.cpp's server (llama-cpp-python, built by `tests/servers/llama_venv.sh`) serving a tiny
//! model with random weights that `tests/servers/tiny_model.py` writes. The answers' quality is
//! not the point: the transport, the records (verdicts, the server's token counts, latency),
//! both models in one run, determinism at temperature 0 with a seed, and the cache are.

use crate::common::*;
use serde_json::Value;
use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

/// The launcher (`tests/servers/llama_server.py`): it stops the server when its stdin closes.
struct Llama {
    child: Child,
    base_url: String,
    model: String,
}

impl Drop for Llama {
    fn drop(&mut self) {
        drop(self.child.stdin.take());
        for _ in 0..100 {
            if let Ok(Some(_)) = self.child.try_wait() {
                return;
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn start() -> Option<Llama> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let venv = std::env::var("LLAMA_VENV").unwrap_or_else(|_| ".venv-llama".into());
    let venv = if Path::new(&venv).is_absolute() {
        venv.into()
    } else {
        root.join(venv)
    };
    if !venv.join("bin/python").exists() {
        assert!(
            std::env::var_os("CI").is_none(),
            "the llama.cpp server's venv is missing: scripts/test.sh makes it (tests/servers/llama_venv.sh)"
        );
        eprintln!("skipped: no llama.cpp server venv (bash tests/servers/llama_venv.sh makes it)");
        return None;
    }
    let mut child = Command::new("python3")
        .arg(root.join("tests/servers/llama_server.py"))
        .args(["--timeout", "120"])
        .env("LLAMA_VENV", &venv)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .expect("python3 starts the launcher");
    let mut line = String::new();
    BufReader::new(child.stdout.take().expect("piped"))
        .read_line(&mut line)
        .expect("the launcher prints its line");
    let ready: Value = serde_json::from_str(&line).unwrap_or_else(|e| panic!("{e}: {line:?}"));
    Some(Llama {
        child,
        base_url: ready["base_url"].as_str().expect("base_url").to_owned(),
        model: ready["model"].as_str().expect("model").to_owned(),
    })
}

fn records(path: &str) -> Vec<Value> {
    jsonl(Path::new(path))
}

#[test]
fn both_models_on_llama_cpp_give_full_deterministic_records() {
    let Some(server) = start() else { return };
    let dir = tempdir();
    let d = dir.path();
    let cases: String = (1..=16)
        .map(|i| {
            format!(
                "{{\"pipeline_id\":{i},\"template_id\":\"t{}\",\"input_text\":\"Deploy build {i} to staging?\",\"expected_verdict\":\"PASS\",\"expected_stage_outputs\":{{\"lint\":\"ok\"}},\"episode_reward\":1.0}}\n",
                i % 3
            )
        })
        .collect();
    let test_set = write(d, "cases.jsonl", &cases);
    let target = |system: &str| {
        format!(
            "kind: openai-chat\nbase_url: {}/v1\nmodel: {}\nmessages:\n  - {{role: system, content: \"{system}\"}}\n  - {{role: user, content: \"{{{{input_text}}}} Stages: {{{{expected_stage_outputs}}}}\"}}\nparams: {{temperature: 0, seed: 7, max_tokens: 6}}\nconcurrency: {{initial: 2, min: 1, max: 4}}\ntimeout: 120s\n",
            server.base_url, server.model
        )
    };
    let old = write(d, "old.yaml", &target("Answer PASS or FAIL."));
    let new = write(
        d,
        "new.yaml",
        &target("You are a careful reviewer. Answer PASS or FAIL."),
    );
    let go = |tag: &str, extra: &[&str]| {
        let (o, n) = (
            s(&d.join(format!("old-{tag}.jsonl"))),
            s(&d.join(format!("new-{tag}.jsonl"))),
        );
        let mut args = vec![
            "run",
            "--test-set",
            &test_set,
            "--old",
            &old,
            "--new",
            &new,
            "--out-old",
            &o,
            "--out-new",
            &n,
        ];
        args.extend_from_slice(extra);
        let out = run(&args);
        assert!(out.status.success(), "{}", stderr(&out));
        (o, n, stderr(&out))
    };
    let (o1, n1, log1) = go("1", &["--no-cache"]);
    assert!(log1.contains("old: this run: 16 asked, 0 from the cache"), "{log1}");
    for (file, other) in [(&o1, &n1), (&n1, &o1)] {
        let r = records(file);
        assert_eq!(r.len(), 16);
        for (i, rec) in r.iter().enumerate() {
            assert_eq!(rec["pipeline_id"], i as u64 + 1, "test-set order");
            assert!(rec["verdict"].is_string(), "a real answer, as text: {rec}");
            assert!(rec["usage"]["prompt_tokens"].as_u64().unwrap() > 5, "{rec}");
            assert!(rec["usage"]["completion_tokens"].as_u64().unwrap() <= 6, "{rec}");
            assert!(rec["latency_ms"].as_f64().unwrap() > 0.0);
            assert_eq!(rec["attempts"], 1);
        }
        // The two system prompts differ, so the two models' prompts do.
        assert_ne!(
            records(other)[0]["usage"]["prompt_tokens"],
            r[0]["usage"]["prompt_tokens"]
        );
    }
    // Temperature 0 with a seed: asked again, the same answers and token counts.
    let (o2, n2, _) = go("2", &["--no-cache", "--order-seed", "9"]);
    let strip = |file: &str| -> Vec<(Value, Value)> {
        records(file)
            .into_iter()
            .map(|r| (r["verdict"].clone(), r["usage"].clone()))
            .collect()
    };
    assert_eq!(strip(&o1), strip(&o2));
    assert_eq!(strip(&n1), strip(&n2));
    // With the cache: a first run fills it, a second asks the server nothing.
    let cache = s(&d.join("cache"));
    go("3", &["--cache", &cache]);
    let (o4, _, log4) = go("4", &["--cache", &cache]);
    assert!(log4.contains("old: this run: 0 asked, 16 from the cache"), "{log4}");
    assert!(log4.contains("new: this run: 0 asked, 16 from the cache"), "{log4}");
    assert_eq!(strip(&o1), strip(&o4));

    // A sequential policy stops the models as soon as the decision is plain: both models fail
    // every case here (random words are no verdict), so new − old is 0 throughout and a
    // tolerance of 0.2 is shown well before the 80 cases.
    let many: String = (1..=80)
        .map(|i| format!("{{\"pipeline_id\":{i},\"template_id\":\"t\",\"input_text\":\"Case {i}?\",\"expected_verdict\":\"PASS\"}}\n"))
        .collect();
    let many = write(d, "many.jsonl", &many);
    let policy = write(
        d,
        "policy.json",
        r#"{"mode": "non_inferiority", "sequential": true, "task_regression_tol": 0.2, "cluster": "none"}"#,
    );
    let (o, n) = (s(&d.join("seq-old.jsonl")), s(&d.join("seq-new.jsonl")));
    let out = run(&[
        "run",
        "--test-set",
        &many,
        "--old",
        &old,
        "--new",
        &new,
        "--out-old",
        &o,
        "--out-new",
        &n,
        "--policy",
        &policy,
        "--no-cache",
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    let err = stderr(&out);
    assert!(err.contains("the sequential decision was reached after"), "{err}");
    assert!(err.contains(": approved;"), "{err}");
    let asked = records(&o).len();
    assert_eq!(asked, records(&n).len());
    assert!(asked < 80, "stopped early: {asked} of 80 asked");
}

/// The mean of a field of the records (`f` gives each record's value).
fn mean(records: &[Value], f: impl Fn(&Value) -> f64) -> f64 {
    records.iter().map(f).sum::<f64>() / records.len() as f64
}

/// The criterion's outcome follows from its own figures: within when the interval is within
/// the limit, exceeded when the lower bound at the adjusted confidence is beyond it.
fn outcome_of(c: &Value) -> &'static str {
    let (high, exceeded_low, limit) = (
        c["high"].as_f64().unwrap(),
        c["exceeded_low"].as_f64().unwrap(),
        c["limit"].as_f64().unwrap(),
    );
    if high <= limit {
        "within"
    } else if exceeded_low > limit {
        "exceeded"
    } else {
        "not_shown"
    }
}

#[test]
fn two_models_on_llama_cpp_are_gated_on_latency_and_tokens() {
    let Some(server) = start() else { return };
    let dir = tempdir();
    let d = dir.path();
    // An audit log of 24 pipelines over 3 templates, and its whole test set.
    const N: usize = 24;
    let audit: String = (0..N)
        .map(|i| {
            format!(
                "{{\"pipeline_id\":\"p{i}\",\"stage_id\":\"s\",\"stage_type\":\"llm\",\"input\":\"Deploy build {i} to staging?\"}}\n{{\"pipeline_id\":\"p{i}\",\"template_id\":\"t{}\",\"verdict\":\"PASS\",\"is_complete\":true,\"error\":null}}\n",
                i % 3
            )
        })
        .collect();
    let audit = write(d, "audit.jsonl", &audit);
    let cases = s(&d.join("cases.jsonl"));
    let out = run(&[
        "test-set",
        "--audit",
        &audit,
        "--max-samples",
        "none",
        "--min-samples",
        "1",
        "--out",
        &cases,
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    // The same prompt; the new model may write 16 tokens where the old one writes 2.
    let target = |max_tokens: u32| {
        format!(
            "kind: openai-chat\nbase_url: {}/v1\nmodel: {}\nmessages:\n  - {{role: system, content: \"Answer PASS or FAIL.\"}}\n  - {{role: user, content: \"{{{{input_text}}}}\"}}\nparams: {{temperature: 0, seed: 7, max_tokens: {max_tokens}}}\nconcurrency: {{initial: 2, min: 1, max: 2}}\ntimeout: 120s\n",
            server.base_url, server.model
        )
    };
    let (old, new) = (write(d, "old.yaml", &target(2)), write(d, "new.yaml", &target(16)));
    let (o, n) = (s(&d.join("old.jsonl")), s(&d.join("new.jsonl")));
    let out = run(&[
        "run",
        "--test-set",
        &cases,
        "--old",
        &old,
        "--new",
        &new,
        "--out-old",
        &o,
        "--out-new",
        &n,
        "--no-cache",
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    let (old_records, new_records) = (records(&o), records(&n));
    assert_eq!((old_records.len(), new_records.len()), (N, N));
    let tokens = |r: &Value, key: &str| r["usage"][key].as_u64().unwrap_or_else(|| panic!("{key}: {r}")) as f64;
    for (a, b) in old_records.iter().zip(&new_records) {
        assert_eq!(a["pipeline_id"], b["pipeline_id"]);
        assert_eq!(
            tokens(a, "prompt_tokens"),
            tokens(b, "prompt_tokens"),
            "the same prompt"
        );
        assert!(tokens(a, "completion_tokens") <= 2.0 && tokens(b, "completion_tokens") <= 16.0);
        assert!(
            tokens(b, "completion_tokens") >= tokens(a, "completion_tokens"),
            "{a} {b}"
        );
    }
    let completion = |r: &[Value]| mean(r, |r| tokens(r, "completion_tokens"));
    let total = |r: &[Value]| mean(r, |r| tokens(r, "prompt_tokens") + tokens(r, "completion_tokens"));
    let latency = |r: &[Value]| mean(r, |r| r["latency_ms"].as_f64().unwrap());
    // A random-weights model rarely ends early: the new model writes many more tokens. (Token
    // counts at temperature 0 are deterministic, so this holds run after run.)
    assert!(
        completion(&new_records) - completion(&old_records) >= 6.0,
        "old {} new {}",
        completion(&old_records),
        completion(&new_records)
    );

    eprintln!(
        "llama.cpp, {N} cases: mean completion tokens {:.2} → {:.2}, total {:.2} → {:.2}, latency {:.1} → {:.1} ms",
        completion(&old_records),
        completion(&new_records),
        total(&old_records),
        total(&new_records),
        latency(&old_records),
        latency(&new_records)
    );
    let evaluate = |policy: &str, code: i32| -> Value {
        let policy = write(d, "policy.json", policy);
        let report = d.join("report.json");
        let out = run(&[
            "evaluate",
            "--audit",
            &audit,
            "--old-verdicts",
            &o,
            "--new-verdicts",
            &n,
            "--policy",
            &policy,
            "--out",
            &s(&report),
        ]);
        assert_eq!(out.status.code(), Some(code), "{}", text(&out));
        serde_json::from_slice(&std::fs::read(&report).unwrap()).unwrap()
    };
    // Blocking guardrails on latency and tokens. Both models fail every case alike (random
    // words are no verdict), so the task rule approves: the tokens block.
    let report = evaluate(
        r#"{"min_samples": 1, "max_samples": null, "cluster": "none", "guardrails": [
            {"metric": "latency_ms", "max_increase": "1000%"},
            {"metric": "completion_tokens", "max_difference": 2},
            {"metric": "total_tokens", "max_increase": "1%"}]}"#,
        3,
    );
    assert_eq!(report["decision"]["task_delta"], 0.0, "{}", report["decision"]);
    let reason = report["decision"]["reason"].as_str().unwrap();
    assert!(
        reason.starts_with(
            "blocked: mean completion_tokens exceeded its limit, mean total_tokens exceeded its limit; task rule: "
        ),
        "{reason}"
    );
    let g = &report["guardrails"];
    assert_eq!((g["blocking"].as_u64(), g["cases"].as_u64()), (Some(3), Some(N as u64)));
    let criteria = g["criteria"].as_array().unwrap();
    let close = |a: &Value, b: f64| (a.as_f64().unwrap() - b).abs() <= 1e-9 * b.abs().max(1.0);
    for (c, metric, old_mean, new_mean, relative) in [
        (
            &criteria[0],
            "latency_ms",
            latency(&old_records),
            latency(&new_records),
            true,
        ),
        (
            &criteria[1],
            "completion_tokens",
            completion(&old_records),
            completion(&new_records),
            false,
        ),
        (
            &criteria[2],
            "total_tokens",
            total(&old_records),
            total(&new_records),
            true,
        ),
    ] {
        assert_eq!(c["metric"], metric);
        assert_eq!(
            (c["n"].as_u64(), c["excluded"].as_u64()),
            (Some(N as u64), Some(0)),
            "{c}"
        );
        assert!(
            close(&c["old"], old_mean) && close(&c["new"], new_mean),
            "{c}: {old_mean} {new_mean}"
        );
        let change = if relative {
            new_mean / old_mean - 1.0
        } else {
            new_mean - old_mean
        };
        assert!(close(&c["change"], change), "{c}: {change}");
        let (low, high) = (c["low"].as_f64().unwrap(), c["high"].as_f64().unwrap());
        assert!(low <= change + 1e-12 && change <= high + 1e-12, "{c}");
        assert!(c["exceeded_low"].as_f64().unwrap() <= low + 1e-12, "{c}");
        assert_eq!(c["outcome"], outcome_of(c), "{c}");
    }
    assert_eq!(
        (&criteria[1]["outcome"], &criteria[2]["outcome"]),
        (&"exceeded".into(), &"exceeded".into())
    );

    // The latency guardrail alone, with a limit no tiny model's 16 tokens reach (eleven times
    // slower), is within: the run is approved through it.
    let report = evaluate(
        r#"{"min_samples": 1, "max_samples": null, "cluster": "none", "guardrails": [
            {"metric": "latency_ms", "max_increase": "1000%"},
            {"metric": "completion_tokens", "max_difference": 16}]}"#,
        0,
    );
    let criteria = report["guardrails"]["criteria"].as_array().unwrap();
    assert_eq!(criteria[0]["outcome"], "within", "{}", criteria[0]);
    assert_eq!(criteria[1]["outcome"], "within", "{}", criteria[1]);
    assert!(report["decision"]["reason"].as_str().unwrap().starts_with("approved"));
}

#[test]
fn a_sequential_run_stopped_early_on_llama_cpp_is_evaluated_over_the_cases_used() {
    let Some(server) = start() else { return };
    let dir = tempdir();
    let d = dir.path();
    // An audit log of 120 pipelines over 4 templates, and its whole test set.
    const N: usize = 120;
    let audit: String = (0..N)
        .map(|i| {
            format!(
                "{{\"pipeline_id\":\"p{i:03}\",\"stage_id\":\"s\",\"stage_type\":\"llm\",\"input\":\"Deploy build {i} to staging?\"}}\n{{\"pipeline_id\":\"p{i:03}\",\"template_id\":\"t{}\",\"verdict\":\"PASS\",\"is_complete\":true,\"error\":null}}\n",
                i % 4
            )
        })
        .collect();
    let audit = write(d, "audit.jsonl", &audit);
    let cases = s(&d.join("cases.jsonl"));
    let out = run(&["test-set", "--audit", &audit, "--max-samples", "none", "--out", &cases]);
    assert!(out.status.success(), "{}", stderr(&out));
    let target = |system: &str| {
        format!(
            "kind: openai-chat\nbase_url: {}/v1\nmodel: {}\nmessages:\n  - {{role: system, content: \"{system}\"}}\n  - {{role: user, content: \"{{{{input_text}}}}\"}}\nparams: {{temperature: 0, seed: 7, max_tokens: 2}}\nconcurrency: {{initial: 2, min: 1, max: 4}}\ntimeout: 120s\n",
            server.base_url, server.model
        )
    };
    let old = write(d, "old.yaml", &target("Answer PASS or FAIL."));
    let new = write(
        d,
        "new.yaml",
        &target("You are a careful reviewer. Answer PASS or FAIL."),
    );
    // A sequential policy with a budget of 60 cases: both models fail alike (random words are
    // no verdict), so non-inferiority at 0.2 is shown well before the budget. Its guardrails on
    // the server's token counts and the latency are judged over the cases used too.
    let policy = write(
        d,
        "policy.json",
        r#"{"mode": "non_inferiority", "sequential": true, "task_regression_tol": 0.2, "cluster": "none", "budget": 60,
            "guardrails": [{"metric": "total_tokens", "max_difference": 50}, {"metric": "latency_ms", "max_increase": "100000%", "action": "advise"}]}"#,
    );
    let (o, n) = (d.join("old.jsonl"), d.join("new.jsonl"));
    let out = run(&[
        "run",
        "--test-set",
        &cases,
        "--old",
        &old,
        "--new",
        &new,
        "--out-old",
        &s(&o),
        "--out-new",
        &s(&n),
        "--policy",
        &policy,
        "--no-cache",
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    let err = stderr(&out);
    let line = err
        .lines()
        .find(|l| l.contains("the sequential decision was reached after"))
        .unwrap_or_else(|| panic!("{err}"));
    assert!(line.contains(": approved;"), "{line}");
    // The cases asked, from the run's outputs.
    let ids = |path: &Path| -> std::collections::BTreeSet<String> {
        records(&s(path))
            .iter()
            .map(|r| r["pipeline_id"].as_str().unwrap().to_owned())
            .collect()
    };
    let asked = ids(&o);
    assert_eq!(asked, ids(&n), "pairs are asked together");
    assert!(asked.len() < 60, "stopped early: {} asked", asked.len());
    let never_asked = (N - asked.len()) as u64;

    // evaluate with the same policy: every rendering over the cases used.
    let evaluate = strings(&[
        "evaluate",
        "--audit",
        &audit,
        "--old-verdicts",
        &s(&o),
        "--new-verdicts",
        &s(&n),
        "--policy",
        &policy,
        "--max-samples",
        "none",
    ]);
    let test_set: Vec<crate::evidence::TestCase> = jsonl(Path::new(&cases))
        .iter()
        .map(|c| crate::evidence::TestCase {
            id: c["pipeline_id"].as_str().unwrap().to_owned(),
            template: c["template_id"].as_str().unwrap().to_owned(),
        })
        .collect();
    let renderings = d.join("renderings");
    std::fs::create_dir(&renderings).unwrap();
    let found = crate::evidence::the_renderings_speak_of_the_cases_used(&renderings, &evaluate, &test_set, &o, &n);
    assert_eq!(found.not_run, never_asked);
    assert_eq!(found.report["sequential"]["stopped"], "approved");
    assert!(
        line.contains(&format!("after {} of 60 cases", found.used)),
        "{line} / {}",
        found.used
    );
    // The server's token counts of the cases used are the report's.
    assert_eq!(found.report["cost"]["old"]["records"].as_u64(), Some(found.used as u64));
    assert_eq!(found.report["guardrails"]["criteria"][0]["outcome"], "within");
}
