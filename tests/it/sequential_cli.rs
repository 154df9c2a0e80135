//! Sequential decisions from the command line: the policy's `sequential` and `budget` (flags,
//! files, refusals), `evaluate` deciding the task criterion by the sequential rule, its report's
//! `sequential` object, signing, `verify --reproduce`, continuation and template units.

use crate::common::*;
use serde_json::Value;

/// `deploy-gate policy …`: the printed policy, or the failed output.
fn policy(extra: &[&str]) -> std::process::Output {
    let mut a = strings(&["policy"]);
    a.extend(strings(extra));
    run(&a)
}

#[test]
fn the_flags_and_the_file_give_sequential_and_budget() {
    let out = policy(&["--mode", "non_inferiority", "--sequential", "--budget", "200"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let p: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(
        (p["sequential"].as_bool(), p["budget"].as_u64()),
        (Some(true), Some(200))
    );
    // Without them the policy is written as before.
    let out = policy(&["--mode", "non_inferiority"]);
    let p: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert!(p.get("sequential").is_none() && p.get("budget").is_none(), "{p}");
    // From a file, the flag over it.
    let dir = tempdir();
    let file = write(
        dir.path(),
        "policy.json",
        r#"{"mode": "non_inferiority", "sequential": true, "budget": 50}"#,
    );
    let out = policy(&["--policy", &file, "--budget", "70"]);
    let p: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(
        (p["sequential"].as_bool(), p["budget"].as_u64()),
        (Some(true), Some(70))
    );
}

#[test]
fn sequential_without_non_inferiority_is_refused_naming_the_field() {
    let out = policy(&["--sequential"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        stderr(&out).contains("sequential: true needs mode `non_inferiority`"),
        "{}",
        stderr(&out)
    );
    let out = policy(&["--mode", "non_inferiority", "--budget", "10"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        stderr(&out).contains("budget is the sequential rule's"),
        "{}",
        stderr(&out)
    );
    let out = policy(&["--mode", "non_inferiority", "--sequential", "--budget", "0"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        stderr(&out).contains("budget must be a whole number ≥ 1"),
        "{}",
        stderr(&out)
    );
    let dir = tempdir();
    let file = write(dir.path(), "policy.json", r#"{"sequential": true, "mode": "point"}"#);
    let out = policy(&["--policy", &file]);
    assert_eq!(out.status.code(), Some(1));
    let err = stderr(&out);
    assert!(err.contains("policy.json") && err.contains("sequential"), "{err}");
}

/// Inputs of `n` cases in `templates` templates (0: none), every expected verdict `PASS`; each
/// model passes a case by a seeded draw: the old model with probability 0.8, the new one as the
/// old except on discordant cases (`p_new_only` / `p_old_only` of all cases).
struct Inputs {
    dir: tempfile::TempDir,
}

impl Inputs {
    fn new(n: usize, templates: usize, p_new_only: f64, p_old_only: f64) -> Inputs {
        let dir = tempdir();
        let mut state: u64 = 0x9E37_79B9_7F4A_7C15 ^ (n as u64) ^ ((p_new_only * 1e6) as u64) << 20;
        let mut draw = move || {
            state = state
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            (state >> 11) as f64 / (1u64 << 53) as f64
        };
        let (mut audit, mut old, mut new) = (String::new(), String::new(), String::new());
        for i in 0..n {
            let id = format!("c{i:05}");
            let tpl = if templates == 0 {
                "null".to_owned()
            } else {
                format!("\"t{}\"", i % templates)
            };
            audit.push_str(&format!(
                "{{\"pipeline_id\": \"{id}\", \"stage_id\": \"s\", \"stage_type\": \"llm\", \"input\": \"in {id}\", \"output\": {{}}, \"template_id\": {tpl}}}\n\
                 {{\"pipeline_id\": \"{id}\", \"verdict\": \"PASS\", \"is_complete\": true, \"template_id\": {tpl}}}\n"
            ));
            let o = draw() < 0.8;
            let u = draw();
            let n_pass = if o { u >= p_old_only / 0.8 } else { u < p_new_only / 0.2 };
            let v = |p: bool| if p { "PASS" } else { "FAIL" };
            old.push_str(&format!("{{\"pipeline_id\": \"{id}\", \"verdict\": \"{}\"}}\n", v(o)));
            new.push_str(&format!(
                "{{\"pipeline_id\": \"{id}\", \"verdict\": \"{}\"}}\n",
                v(n_pass)
            ));
        }
        std::fs::write(dir.path().join("audit.jsonl"), audit).unwrap();
        std::fs::write(dir.path().join("old.jsonl"), old).unwrap();
        std::fs::write(dir.path().join("new.jsonl"), new).unwrap();
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

    /// `evaluate` under the sequential policy and `extra` flags: (exit code, report).
    fn evaluate(&self, extra: &[&str]) -> (Option<i32>, Value) {
        let mut a = strings(&[
            "evaluate",
            "--min-samples",
            "1",
            "--max-samples",
            "none",
            "--seed",
            "11",
            "--mode",
            "non_inferiority",
            "--task-tol",
            "0.05",
            "--sequential",
        ]);
        a.extend(self.files());
        a.extend(strings(extra));
        let out = run(&a);
        let json = match extra.iter().position(|f| *f == "--out") {
            Some(i) => std::fs::read(extra[i + 1]).unwrap(),
            None => out.stdout.clone(),
        };
        let report = serde_json::from_slice(&json).unwrap_or_else(|e| panic!("{e}: {}", text(&out)));
        (out.status.code(), report)
    }
}

/// The report's `sequential` object checked for its shape and consistency.
fn checked(r: &Value) -> &Value {
    let q = &r["sequential"];
    let keys: Vec<&str> = q.as_object().unwrap().keys().map(String::as_str).collect();
    assert_eq!(
        keys,
        [
            "method",
            "unit",
            "order_seed",
            "budget",
            "available",
            "min_units",
            "used",
            "stopped",
            "tolerance",
            "confidence",
            "lower",
            "upper",
            "looks"
        ]
    );
    assert_eq!(q["method"], "betting_hedged_predictable_plugin");
    let n = q["looks"]["n"].as_array().unwrap();
    assert_eq!(n.len(), q["looks"]["lower"].as_array().unwrap().len());
    assert_eq!(n.len(), q["looks"]["upper"].as_array().unwrap().len());
    assert_eq!(n.last(), Some(&q["used"]), "the last look recorded is the one used");
    assert_eq!(q["looks"]["lower"].as_array().unwrap().last(), Some(&q["lower"]));
    q
}

#[test]
fn approved_early() {
    let inputs = Inputs::new(2000, 0, 0.06, 0.03);
    let (code, r) = inputs.evaluate(&["--cluster", "none"]);
    let q = checked(&r);
    assert_eq!((code, q["stopped"].as_str()), (Some(0), Some("approved")), "{q}");
    assert_eq!(
        (q["unit"].as_str(), q["budget"].as_u64(), q["available"].as_u64()),
        (Some("case"), Some(2000), Some(2000))
    );
    let used = q["used"].as_u64().unwrap();
    assert!(used < 1000, "{used}");
    let low = q["lower"].as_f64().unwrap();
    assert!(low > -0.05);
    assert_eq!(r["decision"]["outcome"], "approved");
    assert_eq!(
        r["decision"]["reason"],
        format!("approved: non-inferiority shown (task lower bound {low:.3} > -0.05, sequential: after {used} of 2000 cases)")
    );
    assert_eq!(
        (
            q["tolerance"].as_f64(),
            q["confidence"].as_f64(),
            q["order_seed"].as_u64()
        ),
        (Some(0.05), Some(0.95), Some(11))
    );
    // The policy says it.
    assert_eq!(r["policy"]["sequential"], true);
    assert!(r["policy"].get("budget").is_none());
}

#[test]
fn blocked_early() {
    let inputs = Inputs::new(2000, 0, 0.01, 0.11);
    let (code, r) = inputs.evaluate(&["--cluster", "none"]);
    let q = checked(&r);
    assert_eq!((code, q["stopped"].as_str()), (Some(3), Some("blocked")), "{q}");
    assert!(q["used"].as_u64().unwrap() < 1000, "{q}");
    assert!(q["upper"].as_f64().unwrap() < 0.0);
    let reason = r["decision"]["reason"].as_str().unwrap();
    assert!(
        reason.starts_with("blocked: task regression shown (upper bound -"),
        "{reason}"
    );
    assert!(
        reason.ends_with(&format!(", sequential: after {} of 2000 cases)", q["used"])),
        "{reason}"
    );
}

#[test]
fn inconclusive_at_the_budget_and_continued() {
    let inputs = Inputs::new(2000, 0, 0.045, 0.045);
    let (code, small) = inputs.evaluate(&["--cluster", "none", "--budget", "60"]);
    let q = checked(&small);
    assert_eq!((code, q["stopped"].as_str()), (Some(4), Some("budget")), "{q}");
    assert_eq!((q["used"].as_u64(), q["budget"].as_u64()), (Some(60), Some(60)));
    assert_eq!(small["decision"]["outcome"], "inconclusive");
    let reason = small["decision"]["reason"].as_str().unwrap();
    assert!(
        reason
            .contains(", sequential: after 60 of 60 cases); the budget is spent: evaluate again with a larger budget"),
        "{reason}"
    );
    assert_eq!(small["policy"]["budget"], 60);
    // Continued: budget 200, then 2000 on the same files, gives what 2000 gives directly.
    let (_, b200) = inputs.evaluate(&["--cluster", "none", "--budget", "200"]);
    let (code, continued) = inputs.evaluate(&["--cluster", "none", "--budget", "2000"]);
    let (code_direct, direct) = inputs.evaluate(&["--cluster", "none", "--budget", "2000"]);
    assert_eq!(code, code_direct);
    assert_eq!(continued["sequential"], direct["sequential"]);
    assert_eq!(continued["decision"], direct["decision"]);
    // And the shorter run's looks are the start of the longer one's.
    let n = |r: &Value, k: &str| r["sequential"]["looks"][k].as_array().unwrap().clone();
    let used200 = n(&b200, "n").len();
    for k in ["n", "lower", "upper"] {
        assert_eq!(n(&b200, k)[..used200 - 1], n(&direct, k)[..used200 - 1], "{k}");
    }
    let used60 = n(&small, "n").len();
    assert_eq!(n(&small, "lower")[..used60], n(&b200, "lower")[..used60]);
}

#[test]
fn templates_are_the_units_under_cluster_template() {
    let inputs = Inputs::new(1200, 300, 0.08, 0.02);
    let (code, r) = inputs.evaluate(&[]);
    let q = checked(&r);
    assert_eq!(
        (q["unit"].as_str(), q["available"].as_u64(), q["budget"].as_u64()),
        (Some("template"), Some(300), Some(300))
    );
    assert_eq!((code, q["stopped"].as_str()), (Some(0), Some("approved")), "{q}");
    assert!(r["decision"]["reason"].as_str().unwrap().contains(" of 300 templates)"));
    // A budget counts templates.
    let (code, r) = inputs.evaluate(&["--budget", "10"]);
    let q = checked(&r);
    assert_eq!(
        (code, q["used"].as_u64(), q["stopped"].as_str()),
        (Some(4), Some(10), Some("budget"))
    );
}

#[test]
fn cases_neither_model_answered_are_not_units_and_one_missing_side_fails() {
    let inputs = Inputs::new(300, 0, 0.05, 0.05);
    let (_, full) = inputs.evaluate(&["--cluster", "none"]);
    // Drop the last 100 cases from both verdict files: 200 units.
    for f in ["old.jsonl", "new.jsonl"] {
        let text = std::fs::read_to_string(inputs.path(f)).unwrap();
        let kept: String = text.lines().take(200).map(|l| format!("{l}\n")).collect();
        std::fs::write(inputs.path(f), kept).unwrap();
    }
    let (_, part) = inputs.evaluate(&["--cluster", "none"]);
    assert_eq!(part["sequential"]["available"], 200);
    assert_eq!(full["sequential"]["available"], 300);
    // One side's verdict missing: still a unit (that side fails).
    let text = std::fs::read_to_string(inputs.path("new.jsonl")).unwrap();
    let kept: String = text.lines().take(150).map(|l| format!("{l}\n")).collect();
    std::fs::write(inputs.path("new.jsonl"), kept).unwrap();
    let (_, one) = inputs.evaluate(&["--cluster", "none"]);
    assert_eq!(one["sequential"]["available"], 200);
}

#[test]
fn a_sequential_decision_signs_verifies_and_reproduces() {
    let inputs = Inputs::new(1500, 0, 0.06, 0.03);
    let dir = inputs.dir.path();
    let report = dir.join("report.json");
    let (code, r) = inputs.evaluate(&["--cluster", "none", "--budget", "1000", "--out", &s(&report)]);
    assert_eq!((code, r["sequential"]["stopped"].as_str()), (Some(0), Some("approved")));
    let model = dir.join("agent-v2");
    std::fs::create_dir_all(&model).unwrap();
    std::fs::write(model.join("weights.bin"), "w").unwrap();
    let config = dir.join("config.yaml");
    std::fs::write(&config, "default_model: models/agent-v1\nbackend: transformers\n").unwrap();
    assert!(run(&["keygen", "--out", &s(&dir.join("reviewer"))]).status.success());
    let envelope = dir.join("decision.dsse.json");
    let out = run(&[
        "sign",
        &s(&report),
        "--key",
        &s(&dir.join("reviewer.key.pem")),
        "--model",
        "agent-v2",
        "--model-path",
        &s(&model),
        "--target",
        &s(&config),
        "--out",
        &s(&envelope),
    ]);
    assert!(out.status.success(), "{}", text(&out));
    let verify = |files: Vec<String>| {
        let mut a = strings(&[
            "verify",
            &s(&envelope),
            "--trusted-key",
            &s(&dir.join("reviewer.pub.pem")),
            "--model-path",
            &s(&model),
            "--target",
            &s(&config),
            "--reproduce",
        ]);
        a.extend(files);
        run(&a)
    };
    let out = verify(inputs.files());
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    assert_eq!(json_stdout(&out)["verification_result"], "PASSED");
    // Other verdicts: another stop, not reproduced.
    let mut other = inputs.files();
    let i = other.iter().position(|a| a == "--new-verdicts").unwrap();
    other[i + 1] = inputs.path("old.jsonl");
    let out = verify(other);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    assert_eq!(json_stdout(&out)["check"], "reproduce");
}

#[test]
fn the_markdown_and_html_reports_say_it_in_one_line_and_nothing_without_it() {
    let inputs = Inputs::new(2000, 0, 0.06, 0.03);
    let dir = inputs.dir.path();
    let (md, html) = (s(&dir.join("s.md")), s(&dir.join("r.html")));
    let (_, r) = inputs.evaluate(&["--cluster", "none", "--markdown", &md, "--html", &html]);
    let q = &r["sequential"];
    let want = format!(
        "Sequential (betting confidence sequence): approved after {} of 2,000 cases; lower bound {} > −0.05.",
        q["used"],
        format!("{:.3}", q["lower"].as_f64().unwrap()).replace('-', "−")
    );
    let md = std::fs::read_to_string(&md).unwrap();
    assert_eq!(
        md.matches("Sequential (betting confidence sequence)").count(),
        1,
        "{md}"
    );
    assert!(md.contains(&want), "{md}");
    let html = std::fs::read_to_string(&html).unwrap();
    let escaped = want.replace('>', "&gt;");
    assert!(
        html.contains(&format!(
            "<p data-testid=\"sequential\">{escaped} <span data-testid=\"min-units\">Fewest units: "
        )),
        "{escaped}"
    );
    assert_eq!(html.matches("data-testid=\"sequential\"").count(), 1);
    // Without `sequential` the same report has no such line (the renderers' byte-identical
    // output for such reports is held by the compat and parity fixtures).
    let mut plain = r.clone();
    plain.as_object_mut().unwrap().remove("sequential");
    let md = deploy_gate::render::markdown::markdown_from_json(&plain.to_string()).unwrap();
    assert!(!md.contains("Sequential"), "{md}");
}
