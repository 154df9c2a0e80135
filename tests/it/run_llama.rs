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
