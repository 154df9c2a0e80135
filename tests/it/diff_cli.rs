//! `deploy-gate diff`, run as a user runs it (real processes, real files): the two stories (a
//! grader change, a new candidate), a policy change, different test sets, signed decisions
//! (verified, refused, tampered), hostile ids in every rendering (read by real consumers:
//! markdown-it and junitparser through `tests/ci_check.py`), determinism, the inputs never
//! written, and reports and signed decisions made by earlier builds (`tests/fixtures/diff/`).

use crate::common::{dg, out, run, s, stderr, tempdir, text};
use serde_json::{json, Value};
use std::path::{Path, PathBuf};
use std::process::Output;

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn fixtures() -> PathBuf {
    root().join("tests/fixtures/diff")
}

/// Writes JSON lines to `dir/name`.
fn lines(dir: &Path, name: &str, rows: &[Value]) -> PathBuf {
    let p = dir.join(name);
    let text: String = rows.iter().map(|r| r.to_string() + "\n").collect();
    std::fs::write(&p, text).unwrap();
    p
}

/// `evaluate` into `dir/out` with every candidate kept; the exit code.
fn evaluate(audit: &Path, old: &Path, new: &Path, out_file: &Path, extra: &[&str]) -> i32 {
    let o = out(dg()
        // Missing verdicts count as failures whatever their number (the reference's rule): the
        // stories below drop verdicts on purpose.
        .args([
            "evaluate",
            "--min-samples",
            "1",
            "--max-samples",
            "none",
            "--max-missing",
            "1",
            "--audit",
        ])
        .arg(audit)
        .arg("--old-verdicts")
        .arg(old)
        .arg("--new-verdicts")
        .arg(new)
        .arg("--out")
        .arg(out_file)
        .args(extra));
    let code = o.status.code().unwrap();
    assert!(code == 0 || code == 3, "{}", text(&o));
    code
}

/// `diff` with the arguments; the diff JSON (stdout) is read as a `Value`.
fn diff(args: &[&str]) -> (Output, Value) {
    let o = run(&[&["diff"], args].concat());
    let v = serde_json::from_slice(&o.stdout).unwrap_or(Value::Null);
    (o, v)
}

fn code(o: &Output) -> i32 {
    o.status.code().unwrap()
}

/// A flip as (pipeline id, model, before_pass, after_pass, before verdict, after verdict).
type FlipRow = (String, String, bool, bool, Value, Value);

fn flips(d: &Value) -> Vec<FlipRow> {
    d["cases"]["flips"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| {
            (
                f["pipeline_id"]
                    .as_str()
                    .map_or_else(|| f["pipeline_id"].to_string(), str::to_owned),
                f["model"].as_str().unwrap().to_owned(),
                f["before_pass"].as_bool().unwrap(),
                f["after_pass"].as_bool().unwrap(),
                f["before_verdict"].clone(),
                f["after_verdict"].clone(),
            )
        })
        .collect()
}

/// The flips a diff must list, from each side's (expected, old verdict, new verdict) per
/// pipeline: pass→fail first, then by id, then old before new.
fn expected_flips(
    before: &[(String, String, Option<String>, Option<String>)],
    after: &[(String, String, Option<String>, Option<String>)],
) -> (Vec<FlipRow>, [[u64; 3]; 2]) {
    let pass = |expected: &str, v: &Option<String>| {
        v.as_deref()
            .is_some_and(|v| v.to_uppercase() == expected.to_uppercase())
    };
    let mut rows = Vec::new();
    let mut counts = [[0u64; 3]; 2];
    for a in after {
        let Some(b) = before.iter().find(|b| b.0 == a.0) else {
            continue;
        };
        for (m, name, bv, av) in [(0, "old", &b.2, &a.2), (1, "new", &b.3, &a.3)] {
            let (bp, ap) = (pass(&b.1, bv), pass(&a.1, av));
            if bv != av {
                counts[m][2] += 1;
            }
            if bp != ap {
                counts[m][if bp { 1 } else { 0 }] += 1;
                rows.push((a.0.clone(), name.to_owned(), bp, ap, json!(bv), json!(av)));
            }
        }
    }
    // Pass→fail first (its key `false`), then by id, then old before new.
    let key = |r: &FlipRow| (!r.2 || r.3, r.0.clone(), r.1 == "new");
    rows.sort_by_key(key);
    (rows, counts)
}

fn counts_of(d: &Value) -> [[u64; 3]; 2] {
    let c = &d["cases"]["counts"];
    let one = |m: &str| {
        [
            c[m]["fail_to_pass"].as_u64().unwrap(),
            c[m]["pass_to_fail"].as_u64().unwrap(),
            c[m]["verdict_changed"].as_u64().unwrap(),
        ]
    };
    [one("old"), one("new")]
}

/// A deterministic choice from a seed.
fn pick<'a>(i: usize, salt: usize, from: &[&'a str]) -> &'a str {
    from[(i.wrapping_mul(2654435761) ^ salt.wrapping_mul(40503)) % 97 % from.len()]
}

#[test]
fn the_grader_change_story_lists_and_counts_every_flip() {
    // One audit log; some runs were judged again later (a second completion, CHALLENGE) and
    // some only ever got CHALLENGE. Under the default pass set a re-judged run keeps its PASS
    // as the expected verdict; when CHALLENGE counts as a pass, the later completion wins.
    let dir = tempdir();
    let (mut audit, mut old_v, mut new_v) = (Vec::new(), Vec::new(), Vec::new());
    let mut before = Vec::new();
    let mut after = Vec::new();
    for i in 0..80 {
        let id = format!("run-{i:03}");
        let t = format!("t{}", i % 4);
        audit.push(json!({"pipeline_id": id, "template_id": t, "stage_id": "s", "stage_type": "llm", "input": "q", "output": "a", "state_snapshot": {"input_text": format!("in {i}")}}));
        let rejudged = i % 5 == 0;
        let only_challenge = i % 17 == 3;
        if !only_challenge {
            audit.push(
                json!({"pipeline_id": id, "template_id": t, "verdict": "PASS", "is_complete": true, "error": null}),
            );
        }
        if rejudged || only_challenge {
            audit.push(json!({"pipeline_id": id, "template_id": t, "verdict": "CHALLENGE", "is_complete": true, "error": null}));
        }
        let ov = pick(i, 1, &["PASS", "CHALLENGE", "FAIL", "pass", "-"]);
        let nv = pick(i, 2, &["PASS", "CHALLENGE", "challenge", "FAIL", "-"]);
        let v = |x: &str| (x != "-").then(|| x.to_owned());
        if let Some(x) = v(ov) {
            old_v.push(json!({"pipeline_id": id, "verdict": x}));
        }
        if let Some(x) = v(nv) {
            new_v.push(json!({"pipeline_id": id, "verdict": x}));
        }
        if !only_challenge {
            before.push((id.clone(), "PASS".to_owned(), v(ov), v(nv)));
        }
        let expected = if rejudged || only_challenge {
            "CHALLENGE"
        } else {
            "PASS"
        };
        after.push((id, expected.to_owned(), v(ov), v(nv)));
    }
    let audit = lines(dir.path(), "audit.jsonl", &audit);
    let old = lines(dir.path(), "old.jsonl", &old_v);
    let new = lines(dir.path(), "new.jsonl", &new_v);
    let (b, a) = (dir.path().join("before.json"), dir.path().join("after.json"));
    evaluate(&audit, &old, &new, &b, &[]);
    evaluate(
        &audit,
        &old,
        &new,
        &a,
        &["--pass-verdicts", "PASS,APPROVE,COMPLETE,CHALLENGE"],
    );
    let (o, d) = diff(&[&s(&b), &s(&a)]);
    assert!([0, 5].contains(&code(&o)), "{}", text(&o));
    let (want, counts) = expected_flips(&before, &after);
    assert!(want.len() > 10, "the story has flips: {}", want.len());
    assert_eq!(flips(&d), want, "{}", stderr(&o));
    assert_eq!(counts_of(&d), counts);
    // The same verdict files: no verdict text changed, and every input is the same file.
    assert_eq!(counts[0][2] + counts[1][2], 0);
    assert!(d["inputs"].as_array().unwrap().iter().all(|i| i["same"] == json!(true)));
    assert_eq!(
        d["policy"],
        json!([{"field": "pass_verdicts", "before": ["PASS", "APPROVE", "COMPLETE"], "after": ["PASS", "APPROVE", "COMPLETE", "CHALLENGE"]}])
    );
    let only: Vec<&str> = d["cases"]["only_after"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_str().unwrap())
        .collect();
    let want_only: Vec<String> = (0..80).filter(|i| i % 17 == 3).map(|i| format!("run-{i:03}")).collect();
    assert_eq!(only, want_only);
    assert_eq!(d["cases"]["common"], json!(before.len()));
    assert_eq!(code(&o), if d["decision"]["changed"] == json!(true) { 5 } else { 0 });
}

#[test]
fn the_new_candidate_story_shows_what_regressed_since_the_deployed_candidate() {
    // Last week: v1 (serving) against v2, approved and deployed. This week: v1 against v3.
    // The diff's new-model flips are the cases where v3 and v2 differ in pass/fail.
    let dir = tempdir();
    let (mut audit, mut v1, mut v2, mut v3) = (Vec::new(), Vec::new(), Vec::new(), Vec::new());
    let (mut last, mut this) = (Vec::new(), Vec::new());
    for i in 0..60 {
        let id = format!("p{i}");
        audit.push(json!({"pipeline_id": id, "template_id": format!("t{}", i % 3), "stage_id": "s", "stage_type": "llm", "input": "q", "output": "a"}));
        audit.push(json!({"pipeline_id": id, "template_id": format!("t{}", i % 3), "verdict": "APPROVE", "is_complete": true, "error": null}));
        let (a, b, c) = (
            pick(i, 3, &["APPROVE", "DENY", "approve"]),
            pick(i, 4, &["APPROVE", "APPROVE", "DENY"]),
            pick(i, 5, &["APPROVE", "DENY", "Approve", "APPROVE"]),
        );
        v1.push(json!({"pipeline_id": id, "verdict": a}));
        v2.push(json!({"pipeline_id": id, "verdict": b}));
        v3.push(json!({"pipeline_id": id, "verdict": c}));
        last.push((id.clone(), "APPROVE".to_owned(), Some(a.to_owned()), Some(b.to_owned())));
        this.push((id, "APPROVE".to_owned(), Some(a.to_owned()), Some(c.to_owned())));
    }
    let audit = lines(dir.path(), "audit.jsonl", &audit);
    let v1 = lines(dir.path(), "v1.jsonl", &v1);
    let v2 = lines(dir.path(), "v2.jsonl", &v2);
    let v3 = lines(dir.path(), "v3.jsonl", &v3);
    let (b, a) = (dir.path().join("last-week.json"), dir.path().join("this-week.json"));
    evaluate(&audit, &v1, &v2, &b, &[]);
    evaluate(&audit, &v1, &v3, &a, &[]);
    let (o, d) = diff(&[&s(&b), &s(&a)]);
    let (want, counts) = expected_flips(&last, &this);
    assert_eq!(flips(&d), want, "{}", text(&o));
    assert_eq!(counts_of(&d), counts);
    assert!(
        want.iter().all(|f| f.1 == "new"),
        "the deployed model's verdicts did not change"
    );
    assert!(counts[1][1] > 0 && counts[1][0] > 0, "{counts:?}");
    let roles: Vec<(&str, bool)> = d["inputs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| (i["role"].as_str().unwrap(), i["same"].as_bool().unwrap()))
        .collect();
    assert_eq!(
        roles,
        [("audit", true), ("old_verdicts", true), ("new_verdicts", false)]
    );
    assert_eq!(d["cases"]["common"], json!(60));
}

/// A log of `ids` (each one stage and a successful completion, template by id) in `dir/name`.
fn simple_log(dir: &Path, name: &str, ids: &[String]) -> PathBuf {
    let mut rows = Vec::new();
    for (i, id) in ids.iter().enumerate() {
        rows.push(json!({"pipeline_id": id, "template_id": format!("t{}", i % 2), "stage_id": "s", "stage_type": "llm", "input": "q", "output": "a"}));
        rows.push(json!({"pipeline_id": id, "template_id": format!("t{}", i % 2), "verdict": "PASS", "is_complete": true, "error": null}));
    }
    lines(dir, name, &rows)
}

#[test]
fn a_policy_change_flips_the_decision_and_is_listed() {
    let dir = tempdir();
    let ids: Vec<String> = (0..40).map(|i| format!("c{i}")).collect();
    let audit = simple_log(dir.path(), "audit.jsonl", &ids);
    let old = lines(
        dir.path(),
        "old.jsonl",
        &ids.iter()
            .map(|id| json!({"pipeline_id": id, "verdict": "PASS"}))
            .collect::<Vec<_>>(),
    );
    // The new model misses two cases of forty: 0.95 against 1.0.
    let new = lines(
        dir.path(),
        "new.jsonl",
        &ids.iter()
            .enumerate()
            .map(|(i, id)| json!({"pipeline_id": id, "verdict": if i < 2 { "FAIL" } else { "PASS" }}))
            .collect::<Vec<_>>(),
    );
    let (b, a) = (dir.path().join("strict.json"), dir.path().join("tolerant.json"));
    assert_eq!(evaluate(&audit, &old, &new, &b, &[]), 3);
    assert_eq!(evaluate(&audit, &old, &new, &a, &["--task-tol", "0.1"]), 0);
    let (o, d) = diff(&[&s(&b), &s(&a)]);
    assert_eq!(code(&o), 5, "{}", text(&o));
    assert_eq!(
        d["decision"],
        json!({"changed": true, "before": "blocked", "after": "approved"})
    );
    assert_eq!(
        d["policy"],
        json!([{"field": "task_regression_tol", "before": 0.0, "after": 0.1}])
    );
    assert_eq!(d["cases"]["flips"], json!([]));
    assert!(d["inputs"].as_array().unwrap().iter().all(|i| i["same"] == json!(true)));
    assert_ne!(d["before"]["policy_digest"], d["after"]["policy_digest"]);
    assert!(
        stderr(&o).contains("the decision CHANGED: blocked → approved"),
        "{}",
        stderr(&o)
    );
    // Back the other way, and each against itself.
    assert_eq!(code(&diff(&[&s(&a), &s(&b)]).0), 5);
    let (o, d) = diff(&[&s(&a), &s(&a)]);
    assert_eq!(code(&o), 0);
    assert_eq!(d["policy"], json!([]));
}

#[test]
fn different_test_sets_are_compared_on_their_common_cases() {
    let dir = tempdir();
    let first: Vec<String> = (0..30).map(|i| format!("id{i}")).collect();
    let second: Vec<String> = (10..40).map(|i| format!("id{i}")).collect();
    let all: Vec<Value> = (0..40)
        .map(|i| json!({"pipeline_id": format!("id{i}"), "verdict": "PASS"}))
        .collect();
    let verdicts = lines(dir.path(), "v.jsonl", &all);
    let (b, a) = (dir.path().join("b.json"), dir.path().join("a.json"));
    evaluate(
        &simple_log(dir.path(), "a1.jsonl", &first),
        &verdicts,
        &verdicts,
        &b,
        &[],
    );
    evaluate(
        &simple_log(dir.path(), "a2.jsonl", &second),
        &verdicts,
        &verdicts,
        &a,
        &[],
    );
    let (o, d) = diff(&[&s(&b), &s(&a)]);
    assert_eq!(code(&o), 0, "{}", text(&o));
    assert_eq!(d["cases"]["common"], json!(20));
    assert_eq!(d["cases"]["only_before"], json!(first[..10]));
    assert_eq!(d["cases"]["only_after"], json!(second[20..]));
    assert_eq!(d["inputs"][0]["same"], json!(false));
    assert!(d["warnings"][0]
        .as_str()
        .unwrap()
        .starts_with("different test sets: 10 case(s) only before, 10 only after"));
    // No case in common is allowed, and said.
    let none: Vec<String> = (100..120).map(|i| format!("id{i}")).collect();
    let n = dir.path().join("n.json");
    let v2 = lines(
        dir.path(),
        "v2.jsonl",
        &none
            .iter()
            .map(|id| json!({"pipeline_id": id, "verdict": "PASS"}))
            .collect::<Vec<_>>(),
    );
    evaluate(&simple_log(dir.path(), "a3.jsonl", &none), &v2, &v2, &n, &[]);
    let (o, d) = diff(&[&s(&b), &s(&n)]);
    assert_eq!(code(&o), 0, "{}", text(&o));
    assert_eq!(d["cases"]["common"], json!(0));
    assert!(d["warnings"][0].as_str().unwrap().starts_with("no case in common"));
}

/// A key pair made by `keygen` in `dir`: (private, public) paths and the key id.
fn keygen(dir: &Path, name: &str) -> (PathBuf, PathBuf, String) {
    let base = dir.join(name);
    let o = run(&["keygen", "--out", &s(&base)]);
    assert_eq!(code(&o), 0, "{}", text(&o));
    let id = String::from_utf8(o.stdout).unwrap().trim().to_owned();
    (
        dir.join(format!("{name}.key.pem")),
        dir.join(format!("{name}.pub.pem")),
        id,
    )
}

fn sign(report: &Path, key: &Path, out_file: &Path) {
    let o = run(&[
        "sign",
        &s(report),
        "--key",
        &s(key),
        "--model",
        "m",
        "--model-digest",
        &format!("sha256:{}", "a".repeat(64)),
        "--target",
        "prod",
        "--out",
        &s(out_file),
    ]);
    assert_eq!(code(&o), 0, "{}", text(&o));
}

#[test]
fn signed_decisions_are_read_only_once_they_verify() {
    let dir = tempdir();
    let parity = root().join("tests/fixtures/parity/approved");
    let report = dir.path().join("r.json");
    evaluate(
        &parity.join("audit.jsonl"),
        &parity.join("old_verdicts.jsonl"),
        &parity.join("new_verdicts.jsonl"),
        &report,
        &[],
    );
    let (key, public, keyid) = keygen(dir.path(), "reviewer");
    let (_, other, _) = keygen(dir.path(), "other");
    let envelope = dir.path().join("decision.dsse.json");
    sign(&report, &key, &envelope);

    // Verified: the side says it was signed, and by which key.
    let (o, d) = diff(&[&s(&report), &s(&envelope), "--trusted-key", &s(&public)]);
    assert_eq!(code(&o), 0, "{}", text(&o));
    assert_eq!(d["before"]["source"], json!("report"));
    assert_eq!(d["after"]["source"], json!("signed"));
    assert_eq!(d["after"]["signers"], json!([keyid]));
    assert_eq!(d["before"]["signers"], json!([]));
    assert_eq!(d["cases"]["flips"], json!([]));
    assert_eq!(d["before"]["policy_digest"], d["after"]["policy_digest"]);
    // The same report signed and not: the same cases, the same counts.
    assert_eq!(d["cases"]["common"], d["before"]["num_cases"]);

    // Refused: without a trusted key, with another key, tampered, below the threshold.
    let (o, _) = diff(&[&s(&report), &s(&envelope)]);
    assert_eq!(code(&o), 1);
    assert!(stderr(&o).contains("decision.dsse.json: a signed decision is read only once it verifies: give the keys it must verify against (--trusted-key PUB.pem)"), "{}", stderr(&o));
    let (o, _) = diff(&[&s(&envelope), &s(&report), "--trusted-key", &s(&other)]);
    assert_eq!(code(&o), 1);
    assert!(
        stderr(&o).contains(
            "the signed decision does not verify (signature): 0 of the required 1 trusted signature(s) verified"
        ),
        "{}",
        stderr(&o)
    );
    let mut env: Value = serde_json::from_slice(&std::fs::read(&envelope).unwrap()).unwrap();
    let payload = deploy_gate::attest::dsse::decode(env["payload"].as_str().unwrap()).unwrap();
    let tampered = String::from_utf8(payload)
        .unwrap()
        .replacen("\"new_pass\":true", "\"new_pass\":false", 1);
    env["payload"] = json!(deploy_gate::attest::dsse::encode(tampered.as_bytes()));
    let bad = dir.path().join("tampered.dsse.json");
    std::fs::write(&bad, env.to_string()).unwrap();
    let (o, _) = diff(&[&s(&report), &s(&bad), "--trusted-key", &s(&public)]);
    assert_eq!(code(&o), 1);
    assert!(
        stderr(&o).contains("tampered.dsse.json: the signed decision does not verify (signature)"),
        "{}",
        stderr(&o)
    );
    let (o, _) = diff(&[
        &s(&report),
        &s(&envelope),
        "--trusted-key",
        &s(&public),
        "--trusted-key",
        &s(&other),
        "--threshold",
        "2",
    ]);
    assert_eq!(code(&o), 1);
    assert!(
        stderr(&o).contains("(signature): 1 of the required 2"),
        "{}",
        stderr(&o)
    );
    assert_eq!(o.stdout, b"", "nothing written on a refusal");

    // A decision signed long ago, for any target: its age and target are not checked here.
    let key_pem = std::fs::read_to_string(&key).unwrap();
    let signing = deploy_gate::attest::keys::read_private_pem(&key_pem).unwrap();
    let report_value: Value = serde_json::from_slice(&std::fs::read(&report).unwrap()).unwrap();
    let claim = deploy_gate::attest::Claim {
        report: &deploy_gate::attest::ReportToSign::of_value(&report_value),
        model_name: "m",
        model_sha256: &"b".repeat(64),
        target: "somewhere else",
        time_verified: 86_400,
        review: None,
    };
    let old = dir.path().join("1970.dsse.json");
    std::fs::write(&old, deploy_gate::attest::sign(&claim, &signing).unwrap().to_json()).unwrap();
    let (o, d) = diff(&[&s(&old), &s(&envelope), "--trusted-key", &s(&public)]);
    assert_eq!(code(&o), 0, "{}", text(&o));
    assert_eq!(d["before"]["source"], json!("signed"));
}

/// Runs `diff` with every rendering into `dir`: (exit, json, markdown, html, junit).
fn render_all(dir: &Path, before: &Path, after: &Path) -> (i32, String, String, String, String) {
    let p = |n: &str| dir.join(n);
    let o = run(&[
        "diff",
        &s(before),
        &s(after),
        "--out",
        &s(&p("d.json")),
        "--markdown",
        &s(&p("d.md")),
        "--html",
        &s(&p("d.html")),
        "--junit",
        &s(&p("d.xml")),
    ]);
    assert!([0, 5].contains(&code(&o)), "{}", text(&o));
    let read = |n: &str| std::fs::read_to_string(p(n)).unwrap();
    (code(&o), read("d.json"), read("d.md"), read("d.html"), read("d.xml"))
}

/// What `tests/ci_check.py` reads in a file.
fn check(kind: &str, file: &Path) -> Value {
    let o = std::process::Command::new("python3")
        .arg(root().join("tests/ci_check.py"))
        .arg(kind)
        .arg(file)
        .output()
        .expect("python3 runs");
    assert!(
        o.status.success(),
        "ci_check.py: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    serde_json::from_slice(&o.stdout).unwrap()
}

#[test]
fn hostile_ids_stay_values_in_every_rendering() {
    // The CI fixture's ids and templates end table cells, open HTML, emphasis and links, and
    // hold controls; its ids mix integers and strings. The models swapped make flips both ways.
    let dir = tempdir();
    let h = root().join("tests/fixtures/ci/hostile");
    let (b, a) = (dir.path().join("b.json"), dir.path().join("a.json"));
    evaluate(
        &h.join("audit.jsonl"),
        &h.join("old_verdicts.jsonl"),
        &h.join("new_verdicts.jsonl"),
        &b,
        &[],
    );
    evaluate(
        &h.join("audit.jsonl"),
        &h.join("new_verdicts.jsonl"),
        &h.join("old_verdicts.jsonl"),
        &a,
        &[],
    );
    let (_, json, md, html, _) = render_all(dir.path(), &b, &a);
    let d: Value = serde_json::from_str(&json).unwrap();
    let n_flips = d["cases"]["flips"].as_array().unwrap().len();
    assert!(n_flips > 4, "{n_flips}");

    // Markdown, as markdown-it reads it: no HTML but the comment's own, no link, every flip a
    // row of five cells whose first is the id's text.
    let m = check("markdown", &dir.path().join("d.md"));
    let tags: Vec<&str> = m["html"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t.as_str().unwrap())
        .collect();
    let own = [
        "<details><summary>Warnings</summary>",
        "</details>",
        "html_inline:<sub>",
        "html_inline:</sub>",
    ];
    for t in &tags {
        // Markup in table cells is listed too: the digests' code spans and the `_none_` of a
        // missing verdict are the comment's own; anything else would come from a value.
        let ours = own.contains(&t.trim()) || t.starts_with("code_inline:") || *t == "em_open:" || *t == "em_close:";
        assert!(ours, "{t}: {tags:?}\n{md}");
    }
    assert_eq!(
        tags.iter().filter(|t| **t == "em_open:").count(),
        md.matches("_none_").count(),
        "{md}"
    );
    let rows = m["tables"]["pipeline"].as_array().unwrap();
    assert_eq!(rows.len(), n_flips.min(25));
    for (row, flip) in rows.iter().zip(d["cases"]["flips"].as_array().unwrap()) {
        assert_eq!(row.as_array().unwrap().len(), 5, "{row}");
        let id = match &flip["pipeline_id"] {
            Value::String(s) if s.parse::<i64>().is_ok() => flip["pipeline_id"].to_string(),
            Value::String(s) => s.split_whitespace().collect::<Vec<_>>().join(" "),
            other => other.to_string(),
        };
        assert_eq!(row[0].as_str().unwrap(), id, "{md}");
    }

    // HTML: its own two scripts only, every value escaped, the diff embedded byte for byte.
    assert_eq!(html.matches("<script").count(), 2);
    assert!(!html.contains("<img") && !html.contains("<b>"));
    assert_eq!(
        deploy_gate::render::diff::html::embedded_json(&html).as_deref(),
        Some(json.as_str())
    );

    // JUnit, as junitparser reads it: one failure per pass→fail flip of the new model.
    let j = check("junit", &dir.path().join("d.xml"));
    let want: Vec<&Value> = d["cases"]["flips"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|f| f["model"] == json!("new") && f["before_pass"] == json!(true) && f["after_pass"] == json!(false))
        .collect();
    assert_eq!(j["cases"].as_array().unwrap().len(), want.len());
    assert_eq!(j["failures"], json!(want.len()));
    assert_eq!(
        j["properties"]["decision_changed"],
        json!(d["decision"]["changed"].to_string())
    );
}

#[test]
fn the_same_inputs_give_the_same_bytes_and_the_inputs_are_never_written() {
    let dir = tempdir();
    let parity = root().join("tests/fixtures/parity");
    let (b, a) = (dir.path().join("b.json"), dir.path().join("a.json"));
    let f = |fx: &str, n: &str| parity.join(fx).join(n);
    evaluate(
        &f("approved", "audit.jsonl"),
        &f("approved", "old_verdicts.jsonl"),
        &f("approved", "new_verdicts.jsonl"),
        &b,
        &[],
    );
    evaluate(
        &f("approved", "audit.jsonl"),
        &f("approved", "new_verdicts.jsonl"),
        &f("approved", "old_verdicts.jsonl"),
        &a,
        &[],
    );
    let stamp = |p: &Path| {
        (
            std::fs::read(p).unwrap(),
            std::fs::metadata(p).unwrap().modified().unwrap(),
        )
    };
    let (sb, sa) = (stamp(&b), stamp(&a));
    let one = tempdir();
    let two = tempdir();
    let first = render_all(one.path(), &b, &a);
    let second = render_all(two.path(), &b, &a);
    assert_eq!(
        first, second,
        "the same two reports give the same bytes in every rendering"
    );
    assert_eq!(first.0, 5);
    // Stdout is the --out file's bytes.
    assert_eq!(run(&["diff", &s(&b), &s(&a)]).stdout, first.1.as_bytes());
    // An output that names an input (or a link to it) is refused before anything is written.
    let link = dir.path().join("link.json");
    std::os::unix::fs::symlink(&a, &link).unwrap();
    for flag in ["--out", "--markdown", "--html", "--junit"] {
        for target in [&b, &a, &link] {
            let o = run(&["diff", &s(&b), &s(&a), flag, &s(target)]);
            assert_eq!(code(&o), 1, "{flag} {}", text(&o));
            assert!(stderr(&o).contains("diff never writes to its inputs"), "{}", stderr(&o));
        }
    }
    let o = run(&[
        "diff",
        &s(&b),
        &s(&a),
        "--out",
        &s(&dir.path().join("x")),
        "--markdown",
        &s(&dir.path().join("x")),
    ]);
    assert_eq!(code(&o), 1);
    assert!(stderr(&o).contains("--out and --markdown both name"));
    assert_eq!((stamp(&b), stamp(&a)), (sb, sa), "the inputs are untouched");
}

#[test]
fn unusable_inputs_exit_1_naming_the_file() {
    let dir = tempdir();
    let good = fixtures().join("previous/approved.report.json");
    let garbage = dir.path().join("garbage.json");
    std::fs::write(&garbage, "{\"schema\": \"deploy-gate/report/v1\", \"tool\": [").unwrap();
    let a_diff = dir.path().join("diff.json");
    std::fs::write(&a_diff, run(&["diff", &s(&good), &s(&good)]).stdout).unwrap();
    let verdicts = root().join("tests/fixtures/parity/approved/old_verdicts.jsonl");
    for (path, message) in [
        (dir.path().join("missing.json"), "cannot read"),
        (garbage.clone(), "garbage.json: not a deploy-gate report: "),
        (
            a_diff.clone(),
            "diff.json: its schema is `deploy-gate/diff/v1`, not deploy-gate/report/v1",
        ),
        (
            verdicts.clone(),
            "old_verdicts.jsonl: not a deploy-gate report: trailing characters at line 2",
        ),
    ] {
        let o = run(&["diff", &s(&good), &s(&path)]);
        assert_eq!(code(&o), 1, "{}", text(&o));
        assert!(stderr(&o).contains(message), "{message}: {}", stderr(&o));
        assert_eq!(o.stdout, b"");
    }
}

#[test]
fn reports_and_signed_decisions_of_earlier_builds_are_read() {
    let fx = fixtures();
    let first = fx.join("first-build/approved.report.json");
    let prev = fx.join("previous/approved.report.json");
    let signed = fx.join("previous/approved.dsse.json");
    let key = fx.join("previous/reviewer.pub.pem");

    // The first build that wrote reports (no statistics, no `mode`, no `confidence`) against
    // the previous commit's report of the same inputs: the same cases, nothing flipped.
    let (o, d) = diff(&[&s(&first), &s(&prev)]);
    assert_eq!(code(&o), 0, "{}", text(&o));
    assert_eq!(d["cases"]["common"], json!(132));
    assert_eq!(d["cases"]["flips"], json!([]));
    assert_eq!(counts_of(&d), [[0, 0, 0], [0, 0, 0]]);
    assert_eq!(
        d["policy"],
        json!([]),
        "mode and confidence resolve to what their absence meant"
    );
    assert!(d["inputs"].as_array().unwrap().iter().all(|i| i["same"] == json!(true)));
    assert_eq!(d["stats"]["before"]["low"], Value::Null);
    assert_eq!(d["stats"]["overlap"], Value::Null);
    assert!(d["warnings"][0]
        .as_str()
        .unwrap()
        .starts_with("before: the report has no interval"));
    // … and against this build's report of the same inputs.
    let dir = tempdir();
    let now = dir.path().join("now.json");
    let p = root().join("tests/fixtures/parity/approved");
    evaluate(
        &p.join("audit.jsonl"),
        &p.join("old_verdicts.jsonl"),
        &p.join("new_verdicts.jsonl"),
        &now,
        &["--on-insufficient", "approve"],
    );
    let (o, d) = diff(&[&s(&now), &s(&prev)]);
    assert_eq!(code(&o), 0, "{}", text(&o));
    assert_eq!(d["cases"]["flips"], json!([]));
    assert_eq!(d["warnings"], json!([]));

    // A decision the previous commit signed, verified with its key.
    let (o, d) = diff(&[&s(&prev), &s(&signed), "--trusted-key", &s(&key)]);
    assert_eq!(code(&o), 0, "{}", text(&o));
    assert_eq!(d["after"]["source"], json!("signed"));
    assert_eq!(
        d["after"]["signers"],
        json!(["df1756d890bc6d8baf6447de52c841633eb30bb1f3ff0ad4511e46aa871bc76f"])
    );
    assert_eq!(d["before"]["policy_digest"], d["after"]["policy_digest"]);

    // Typed ids from the previous commit: `5` and `"5"` two cases, wide integers all their digits.
    let typed = fx.join("previous/typed-ids.report.json");
    let t = root().join("tests/fixtures/parity/typed-ids");
    let mine = dir.path().join("typed.json");
    // This time no model has a verdict: every case that passed for a model flips to a failure.
    let empty = lines(dir.path(), "none.jsonl", &[]);
    evaluate(
        &t.join("audit.jsonl"),
        &empty,
        &empty,
        &mine,
        &["--on-insufficient", "approve"],
    );
    let o = run(&["diff", &s(&typed), &s(&mine)]);
    assert!([0, 5].contains(&code(&o)), "{}", text(&o));
    let raw_ids = |json: &[u8], pick: &dyn Fn(&RawCase) -> Vec<&'static str>| -> Vec<(String, &'static str)> {
        let doc: RawDoc = serde_json::from_slice(json).unwrap();
        doc.cases
            .iter()
            .flat_map(|c| pick(c).into_iter().map(|m| (c.pipeline_id.get().to_owned(), m)))
            .collect()
    };
    let mut want = raw_ids(&std::fs::read(&typed).unwrap(), &|c| {
        [("old", c.old_pass), ("new", c.new_pass)]
            .into_iter()
            .filter(|x| x.1 == Some(true))
            .map(|x| x.0)
            .collect()
    });
    // By the id's text, a string before the integer of the same text, then old before new.
    want.sort_by(|a, b| {
        (text_of(&a.0), !a.0.starts_with('"'), a.1 == "new").cmp(&(text_of(&b.0), !b.0.starts_with('"'), b.1 == "new"))
    });
    let flipped: RawDiff = serde_json::from_slice(&o.stdout).unwrap();
    let got: Vec<(String, &str)> = flipped
        .cases
        .flips
        .iter()
        .map(|f| (f.pipeline_id.get().to_owned(), f.model.as_str()))
        .collect();
    assert_eq!(
        got.iter().map(|g| (g.0.clone(), g.1)).collect::<Vec<_>>(),
        want.iter().map(|w| (w.0.clone(), w.1)).collect::<Vec<_>>()
    );
    assert!(
        got.iter().any(|g| g.0 == "1234567890123456789012345678901234567890123"),
        "{got:?}"
    );
    assert!(got.iter().any(|g| g.0 == "\"5\"") || got.iter().any(|g| g.0 == "5"));

    // The previous commit's signer wrote a wide integer id as a float: its digits are gone, and
    // the diff says so rather than match it with anything.
    let o = run(&[
        "diff",
        &s(&typed),
        &s(&fx.join("previous/typed-ids.dsse.json")),
        "--trusted-key",
        &s(&key),
    ]);
    assert_eq!(code(&o), 1);
    assert!(
        stderr(&o).contains("which the build that signed it wrote as a float, so its digits are lost"),
        "{}",
        stderr(&o)
    );
}

/// The raw text of a JSON string's value or of a number, for ordering ids as the diff does.
fn text_of(raw: &str) -> String {
    serde_json::from_str::<String>(raw).unwrap_or_else(|_| raw.to_owned())
}

#[derive(serde::Deserialize)]
struct RawCase {
    pipeline_id: Box<serde_json::value::RawValue>,
    old_pass: Option<bool>,
    new_pass: Option<bool>,
}

#[derive(serde::Deserialize)]
struct RawDoc {
    cases: Vec<RawCase>,
}

#[derive(serde::Deserialize)]
struct RawFlip {
    pipeline_id: Box<serde_json::value::RawValue>,
    model: String,
}

#[derive(serde::Deserialize)]
struct RawFlips {
    flips: Vec<RawFlip>,
}

#[derive(serde::Deserialize)]
struct RawDiff {
    cases: RawFlips,
}

#[test]
fn review_files_given_the_diff_lists_the_marks_that_changed_and_a_pinned_review_must_be_the_file() {
    let set = root().join("tests/fixtures/compat-afae7eb");
    let sc = |name: &str| set.join("scenarios").join(name);
    let key = set.join("reviewer.pub.pem");
    let tmp = tempdir();
    let report = s(&sc("fixed-answers").join("report.json"));
    let review_of = |name: &str, lines: &[Value]| -> String {
        let text: String = lines.iter().map(|l| format!("{l}\n")).collect();
        let p = tmp.path().join(name);
        std::fs::write(&p, text).unwrap();
        s(&p)
    };
    let before = review_of(
        "before.jsonl",
        &[
            json!({"pipeline_id": "a", "mark": "accepted", "note": "x"}),
            json!({"pipeline_id": "b", "mark": "label_wrong"}),
            json!({"pipeline_id": "d", "mark": "needs_fix", "time": "2026-12-06T10:00:00Z"}),
        ],
    );
    let after = review_of(
        "after.jsonl",
        &[
            json!({"pipeline_id": "d", "mark": "needs_fix", "time": "2026-12-07T10:00:00Z"}),
            json!({"pipeline_id": "a", "mark": "accepted", "note": "<script>y</script> | https://evil.example @team"}),
            json!({"pipeline_id": "c", "mark": "needs_fix"}),
        ],
    );
    let md = tmp.path().join("d.md");
    let html = tmp.path().join("d.html");
    let (o, d) = diff(&[
        &report,
        &report,
        "--review-before",
        &before,
        "--review-after",
        &after,
        "--markdown",
        &s(&md),
        "--html",
        &s(&html),
    ]);
    assert_eq!(code(&o), 0, "{}", text(&o));
    // A changed note, a mark removed, a mark added; the same mark at another time is no change.
    assert_eq!(
        d["review_changes"],
        json!([
            {"pipeline_id": "a", "before": {"mark": "accepted", "note": "x"}, "after": {"mark": "accepted", "note": "<script>y</script> | https://evil.example @team"}},
            {"pipeline_id": "b", "before": {"mark": "label_wrong"}, "after": null},
            {"pipeline_id": "c", "before": null, "after": {"mark": "needs_fix"}}
        ])
    );
    let md = std::fs::read_to_string(&md).unwrap();
    assert!(md.contains("**Review marks that changed** (3):"), "{md}");
    assert!(
        md.contains("| `a` | accepted: `x` | accepted: `<script>y</script> \\| https://evil.example @team` |"),
        "{md}"
    );
    assert!(
        md.contains("| `b` | label wrong | — |") && md.contains("| `c` | — | needs fix |"),
        "{md}"
    );
    let html = std::fs::read_to_string(&html).unwrap();
    let section = &html[html.find("id=\"review-changes\"").unwrap()..];
    assert!(
        section.contains("accepted: &lt;script&gt;y&lt;/script&gt; | https://evil.example @team"),
        "{section}"
    );
    assert!(!section[..section.find("</section>").unwrap()].contains("<script"));
    // Without review files the diff is the one it was: no `review_changes`.
    let (_, plain) = diff(&[&report, &report]);
    assert!(plain.get("review_changes").is_none());

    // Signed decisions that pin their reviews: the pinned files are compared; another file is
    // refused, naming the side.
    let (a, b) = (sc("fixed-answers"), sc("review-required"));
    let signed = |d: &Path| s(&d.join("decision.dsse.json"));
    let (o, d) = diff(&[
        &signed(&a),
        &signed(&b),
        "--trusted-key",
        &s(&key),
        "--review-before",
        &s(&a.join("review.jsonl")),
        "--review-after",
        &s(&b.join("review.jsonl")),
    ]);
    assert!(code(&o) == 0 || code(&o) == 5, "{}", text(&o));
    // The same regressed cases marked the same way in both: no change.
    assert_eq!(d["review_changes"], json!([]));
    let (o, _) = diff(&[
        &signed(&a),
        &signed(&b),
        "--trusted-key",
        &s(&key),
        "--review-before",
        &before,
        "--review-after",
        &s(&b.join("review.jsonl")),
    ]);
    assert_eq!(code(&o), 1, "{}", text(&o));
    assert!(
        stderr(&o).contains("not the review file the earlier decision was signed with"),
        "{}",
        text(&o)
    );
    // One without the other is a usage error.
    let (o, _) = diff(&[&report, &report, "--review-before", &before]);
    assert_ne!(code(&o), 0);
}
