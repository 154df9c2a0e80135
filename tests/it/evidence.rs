//! What a decision rests on: failing closed on missing evidence (too few cases answered by both
//! models; more cases lacking a verdict than `max_missing`), the report's `evidence` object, a
//! sequential report's figures over the cases the rule used (checked against figures computed
//! here from the verdict files alone), `not_run`, `sequential.min_units` against a direct
//! computation, and the earlier rules (`--rules before`).

use crate::common::*;
use deploy_gate::stats::BettingCs;
use serde_json::Value;
use sha2::{Digest, Sha256};
use std::collections::{BTreeMap, HashMap};
use std::path::Path;

/// A test set of `n` cases in `templates` templates (case `i` in template `i % templates`), every
/// expected verdict `PASS`, and two verdict files answering the cases `answers` says, with the
/// verdict `pass` says.
struct Files {
    dir: tempfile::TempDir,
    n: usize,
}

fn id(i: usize) -> String {
    format!("c{i:05}")
}

impl Files {
    fn new(
        n: usize,
        templates: usize,
        answers: impl Fn(usize) -> (bool, bool),
        pass: impl Fn(usize) -> (bool, bool),
    ) -> Files {
        let dir = tempdir();
        let (mut audit, mut old, mut new) = (String::new(), String::new(), String::new());
        for i in 0..n {
            let id = id(i);
            let tpl = format!("t{:03}", i % templates);
            audit.push_str(&format!(
                "{{\"pipeline_id\": \"{id}\", \"stage_id\": \"s\", \"stage_type\": \"llm\", \"input\": \"in {id}\", \"output\": {{}}, \"template_id\": \"{tpl}\"}}\n\
                 {{\"pipeline_id\": \"{id}\", \"verdict\": \"PASS\", \"is_complete\": true, \"template_id\": \"{tpl}\"}}\n"
            ));
            let (a_old, a_new) = answers(i);
            let (p_old, p_new) = pass(i);
            let v = |p: bool| if p { "PASS" } else { "FAIL" };
            if a_old {
                old.push_str(&format!(
                    "{{\"pipeline_id\": \"{id}\", \"verdict\": \"{}\"}}\n",
                    v(p_old)
                ));
            }
            if a_new {
                new.push_str(&format!(
                    "{{\"pipeline_id\": \"{id}\", \"verdict\": \"{}\"}}\n",
                    v(p_new)
                ));
            }
        }
        std::fs::write(dir.path().join("audit.jsonl"), audit).unwrap();
        std::fs::write(dir.path().join("old.jsonl"), old).unwrap();
        std::fs::write(dir.path().join("new.jsonl"), new).unwrap();
        Files { dir, n }
    }

    fn path(&self, name: &str) -> String {
        s(&self.dir.path().join(name))
    }

    /// `evaluate` with `flags` (and `--max-samples none`): (exit code, report, stderr).
    fn evaluate(&self, flags: &[&str]) -> (Option<i32>, Value, String) {
        let mut a = strings(&[
            "evaluate",
            "--audit",
            &self.path("audit.jsonl"),
            "--old-verdicts",
            &self.path("old.jsonl"),
            "--new-verdicts",
            &self.path("new.jsonl"),
            "--max-samples",
            "none",
        ]);
        a.extend(strings(flags));
        let out = run(&a);
        let json = match flags.iter().position(|f| *f == "--out") {
            Some(i) => std::fs::read(flags[i + 1]).unwrap(),
            None => out.stdout.clone(),
        };
        let report = serde_json::from_slice(&json).unwrap_or_else(|e| panic!("{e}: {}", text(&out)));
        (out.status.code(), report, stderr(&out))
    }

    /// A verdict file as a map from id to whether it passes.
    fn verdicts(&self, name: &str) -> HashMap<String, bool> {
        jsonl(&self.dir.path().join(name))
            .into_iter()
            .map(|r| (r["pipeline_id"].as_str().unwrap().to_owned(), r["verdict"] == "PASS"))
            .collect()
    }
}

/// A pseudo-random draw in [0, 1) from a case's index and a salt.
fn draw(i: usize, salt: u64) -> f64 {
    let mut x = (i as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ salt.wrapping_mul(0xD1B5_4A32_D192_ED03);
    x ^= x >> 31;
    x = x.wrapping_mul(0xBF58_476D_1CE4_E5B9);
    x ^= x >> 29;
    (x >> 11) as f64 / (1u64 << 53) as f64
}

/// Both models about as good (80%).
fn about_equal(i: usize) -> (bool, bool) {
    (draw(i, 1) < 0.8, draw(i, 2) < 0.8)
}

#[test]
fn four_of_two_hundred_answered_is_insufficient_and_blocks_by_default() {
    let f = Files::new(200, 20, |i| (i < 4, i < 4), |_| (true, true));
    let (code, r, err) = f.evaluate(&[]);
    assert_eq!(code, Some(3), "{err}");
    assert_eq!(
        r["decision"]["reason"],
        "blocked: insufficient evidence (4 of 200 test cases answered by both models < min_samples 20; old 196 \
         missing, new 196 missing)"
    );
    assert_eq!(r["decision"]["outcome"], "blocked");
    assert_eq!(r["decision"]["approved"], false);
    let e = &r["evidence"];
    assert_eq!(
        (
            e["test_cases"].as_u64(),
            e["answered"].as_u64(),
            e["missing"]["old"].as_u64(),
            e["missing"]["new"].as_u64(),
            e["rests_on"].as_u64(),
            e["over"].as_str(),
            e["max_missing"].as_f64()
        ),
        (
            Some(200),
            Some(4),
            Some(196),
            Some(196),
            Some(4),
            Some("test_set"),
            Some(0.05)
        )
    );
    assert!(e.get("not_run").is_none(), "{e}");
    assert!(
        err.starts_with("deploy-gate: BLOCKED — keep the old model (rests on 4 of 200 test cases)\n"),
        "{err}"
    );
    // Under `on_insufficient: approve` the rule decides as the reference does (equal failures:
    // no regression).
    let (code, r, _) = f.evaluate(&["--on-insufficient", "approve"]);
    assert_eq!(code, Some(0));
    assert_eq!(r["decision"]["reason"], "approved: no regression on task or trajectory");
    // The earlier rules approve, as the previous build did.
    let (code, r, _) = f.evaluate(&["--rules", "before"]);
    assert_eq!((code, r["decision"]["outcome"].as_str()), (Some(0), Some("approved")));
    assert!(r.get("evidence").is_none());
}

#[test]
fn ten_percent_missing_is_inconclusive_naming_the_counts() {
    let f = Files::new(200, 20, |i| (i >= 10, !(10..20).contains(&i)), about_equal);
    let (code, r, err) = f.evaluate(&["--task-tol", "0.2"]);
    assert_eq!(code, Some(4), "{err}");
    assert_eq!(
        r["decision"]["reason"],
        "inconclusive: missing verdicts (old 10 missing, new 10 missing of 200 test cases: 20 cases (10.0%) lack a \
         verdict, more than max_missing 5%)"
    );
    assert!(
        err.starts_with(
            "deploy-gate: INCONCLUSIVE — keep the old model; too many test cases lack a verdict (rests on 180 of 200 \
             test cases)\n"
        ),
        "{err}"
    );
    assert!(
        err.contains("  verdicts:   old 10 missing, 0 errored; new 10 missing, 0 errored\n"),
        "{err}"
    );
    // A larger max_missing (a percentage or a fraction, flag or policy file) lets the rule decide.
    let (code, r, _) = f.evaluate(&["--task-tol", "0.2", "--max-missing", "15%"]);
    assert_eq!(code, Some(0), "{}", r["decision"]);
    assert_eq!(r["policy"]["max_missing"], 0.15);
    assert_eq!(r["evidence"]["max_missing"], 0.15);
    let policy = write(f.dir.path(), "policy.json", r#"{"max_missing": 0.1}"#);
    let (code, _, _) = f.evaluate(&["--task-tol", "0.2", "--policy", &policy]);
    assert_eq!(code, Some(0), "10% is not more than 10%");
    // A bad value names the field.
    let out = run(&["policy", "--max-missing", "120%"]);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    assert!(
        stderr(&out).contains("max_missing must be a fraction between 0 and 1"),
        "{}",
        text(&out)
    );
    let bad = write(f.dir.path(), "bad.json", r#"{"max_missing": "lots"}"#);
    let out = run(&["policy", "--policy", &bad]);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    assert!(
        stderr(&out).contains("bad.json") && stderr(&out).contains("max_missing"),
        "{}",
        text(&out)
    );
}

#[test]
fn two_percent_missing_decides_as_before() {
    let f = Files::new(200, 20, |i| (i != 3 && i != 7, i != 11 && i != 19), about_equal);
    for flags in [
        &["--task-tol", "0.2"][..],
        &["--mode", "non_inferiority", "--task-tol", "0.2"],
    ] {
        let (code, now, err) = f.evaluate(flags);
        let mut before_flags = flags.to_vec();
        before_flags.extend(["--rules", "before"]);
        let (code_before, before, _) = f.evaluate(&before_flags);
        assert_eq!(code, code_before);
        assert_eq!(now["decision"], before["decision"], "{err}");
        assert_eq!(
            (
                now["evidence"]["missing"]["old"].as_u64(),
                now["evidence"]["missing"]["new"].as_u64()
            ),
            (Some(2), Some(2))
        );
        assert!(err.contains("(rests on 196 of 200 test cases)"), "{err}");
    }
}

#[test]
fn a_fully_answered_fixed_report_is_the_same_under_both_rules_and_has_no_evidence_object() {
    let f = Files::new(300, 30, |_| (true, true), about_equal);
    for flags in [
        &[][..],
        &["--mode", "non_inferiority", "--task-tol", "0.1"],
        &["--cluster", "none", "--task-tol", "0.05"],
    ] {
        let dir = tempdir();
        let (a, b) = (dir.path().join("a.json"), dir.path().join("b.json"));
        let mut args = strings(flags);
        args.extend(strings(&["--out", &s(&a)]));
        let refs: Vec<&str> = args.iter().map(String::as_str).collect();
        let (_, _, err) = f.evaluate(&refs);
        let mut args_before = args.clone();
        args_before[args.len() - 1] = s(&b);
        args_before.extend(strings(&["--rules", "before"]));
        let refs: Vec<&str> = args_before.iter().map(String::as_str).collect();
        f.evaluate(&refs);
        let (a, b) = (std::fs::read(&a).unwrap(), std::fs::read(&b).unwrap());
        assert!(a == b, "{}", diff(&b, &a));
        let r: Value = serde_json::from_slice(&a).unwrap();
        assert!(r.get("evidence").is_none() && r["policy"].get("max_missing").is_none());
        assert!(err.contains("(rests on 300 of 300 test cases)"), "{err}");
    }
}

/// The rank of a case in the seed's order, computed here from its definition
/// (docs/statistics.md: the SHA-256 of `deploy-gate/sequential-order/v1:{seed}:{key}`).
fn seed_order(n: usize, seed: u64) -> Vec<usize> {
    let mut idx: Vec<usize> = (0..n).collect();
    idx.sort_by_key(|&i| Sha256::digest(format!("deploy-gate/sequential-order/v1:{seed}:{}", id(i))).to_vec());
    idx
}

#[test]
fn a_sequential_decision_that_stopped_early_speaks_of_the_cases_used() {
    // 3,000 cases in 60 templates; a run asked the first 400 in the seed's order, both models
    // answering them; the old model passes 80%, the new one 92%.
    let n = 3000;
    let order = seed_order(n, 0);
    let mut asked = vec![false; n];
    for &i in &order[..400] {
        asked[i] = true;
    }
    let f = Files::new(
        n,
        60,
        |i| (asked[i], asked[i]),
        |i| (draw(i, 3) < 0.8, draw(i, 4) < 0.92),
    );
    let out = tempdir();
    let test_set: Vec<TestCase> = (0..n)
        .map(|i| TestCase {
            id: id(i),
            template: format!("t{:03}", i % 60),
        })
        .collect();
    let mut args = strings(&[
        "evaluate",
        "--audit",
        &f.path("audit.jsonl"),
        "--old-verdicts",
        &f.path("old.jsonl"),
        "--new-verdicts",
        &f.path("new.jsonl"),
        "--max-samples",
        "none",
    ]);
    args.extend(strings(&[
        "--mode",
        "non_inferiority",
        "--task-tol",
        "0.05",
        "--cluster",
        "none",
        "--sequential",
    ]));
    let found = the_renderings_speak_of_the_cases_used(
        out.path(),
        &args,
        &test_set,
        &f.dir.path().join("old.jsonl"),
        &f.dir.path().join("new.jsonl"),
    );
    let (r, err, used) = (&found.report, &found.summary, found.used);
    let q = &r["sequential"];
    assert_eq!(q["stopped"], "approved");
    assert!(used < 400 && q["available"] == 400, "{q}");
    // The stopping look is recorded.
    let looks: Vec<u64> = q["looks"]["n"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_u64().unwrap())
        .collect();
    assert!(looks.contains(&(used as u64)), "{looks:?}");
    // The used cases are the first `used` asked in the order, computed here independently of
    // the checker's own.
    let mut want: Vec<String> = order[..used].iter().map(|&i| id(i)).collect();
    want.sort_unstable();
    let listed: Vec<&str> = r["cases"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["pipeline_id"].as_str().unwrap())
        .collect();
    assert_eq!(listed, want);
    let (old, _) = (f.verdicts("old.jsonl"), f.verdicts("new.jsonl"));
    assert_eq!(old.len(), 400);

    // Not run are the cases never asked; the warning says they count for neither model.
    let never_asked = asked.iter().filter(|a| !**a).count() as u64;
    assert_eq!(found.not_run, never_asked);
    let warnings = r["warnings"].as_array().unwrap();
    assert!(warnings.iter().any(|w| w
        == &Value::String(format!(
            "not run: {never_asked} test case(s) neither model answered (the sequential rule stopped first); they \
             count for neither model"
        ))));
    assert!(
        !warnings
            .iter()
            .any(|w| w.as_str().unwrap().contains("counted as failed")),
        "{warnings:?}"
    );
    // The summary: the fixed-sample figures labelled descriptive.
    assert!(err.contains("  descriptive: new − old"), "{err}");
    assert!(err.contains("descriptive, not the decision's evidence"), "{err}");
    assert!(!err.contains(&format!("{never_asked} missing")), "{err}");
}

/// A report's figure rounded to 4 decimals against one computed here, unrounded.
fn near(reported: f64, computed: f64) {
    assert!(
        (reported - computed).abs() <= 0.5e-4 + 1e-12,
        "reported {reported}, computed {computed}"
    );
}

fn grouped(n: u64) -> String {
    let d = n.to_string();
    let mut out = String::new();
    for (i, c) in d.chars().enumerate() {
        if i > 0 && (d.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// The first look at which the betting confidence sequence fed `x` (on its [0, 1] scale) every
/// time has its lower bound of the mean difference above `−tolerance` (`x` = 1) or its upper
/// bound below 0 (`x` = 0): found here from the bounds themselves.
fn first_crossing(x: f64, tolerance: f64, confidence: f64) -> usize {
    let mut cs = BettingCs::new(1.0 - confidence);
    for n in 1..=100_000 {
        cs.push(x);
        let (l, u) = cs.bounds();
        let crossed = if x > 0.5 {
            2.0 * l - 1.0 > -tolerance
        } else {
            2.0 * u - 1.0 < 0.0
        };
        if crossed {
            return n;
        }
    }
    panic!("no crossing");
}

/// `evaluate` of `templates` templates of 2 cases under template units at `confidence`:
/// (min_units, warnings, stderr).
fn template_run(templates: usize, confidence: &str, cluster: &str) -> (Value, Vec<String>, String) {
    let f = Files::new(templates * 2, templates, |_| (true, true), about_equal);
    let (_, r, err) = f.evaluate(&[
        "--mode",
        "non_inferiority",
        "--task-tol",
        "0.05",
        "--sequential",
        "--confidence",
        confidence,
        "--cluster",
        cluster,
        "--min-samples",
        "1",
    ]);
    let warnings = r["warnings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|w| w.as_str().unwrap().to_owned())
        .collect();
    (r["sequential"]["min_units"].clone(), warnings, err)
}

#[test]
fn min_units_under_template_units_matches_a_direct_computation_and_warns_only_where_it_should() {
    let tail = "(cluster: none decides on cases: docs/statistics.md)";
    for (confidence, c) in [("0.95", 0.95), ("0.9999", 0.9999)] {
        let direct = first_crossing(1.0, 0.05, c).min(first_crossing(0.0, 0.05, c));
        for templates in [40, 400, direct + direct / 2, direct - 1] {
            let (min_units, warnings, err) = template_run(templates, confidence, "template");
            assert_eq!(
                min_units.as_u64(),
                Some(direct as u64),
                "{templates} templates at {confidence}"
            );
            let little = format!(
                "sequential: {templates} templates: no decision is possible before {direct}; the run will likely ask \
                 most cases {tail}"
            );
            let cannot = format!(
                "sequential: {templates} templates: no decision is possible before {direct}; the run cannot decide \
                 and will ask every case {tail}"
            );
            let want: Vec<&String> = if templates < direct {
                vec![&cannot]
            } else if 2 * direct > templates {
                vec![&little]
            } else {
                vec![]
            };
            let got: Vec<&String> = warnings.iter().filter(|w| w.starts_with("sequential:")).collect();
            assert_eq!(got, want, "{templates} templates at {confidence}");
            assert!(
                err.contains(&format!(
                    "  min units:  {direct} of {templates} templates before any decision is possible"
                )),
                "{err}"
            );
        }
        // Under `cluster: none` the units are cases: no warning, whatever their number.
        let (_, warnings, _) = template_run(direct - 1, confidence, "none");
        assert!(!warnings.iter().any(|w| w.starts_with("sequential:")), "{warnings:?}");
    }
    // At the default confidence 40 templates leave room; at 0.9999 they do not.
    let (m, w, _) = template_run(40, "0.95", "template");
    assert!(m.as_u64().unwrap() * 2 <= 40 && !w.iter().any(|w| w.starts_with("sequential:")));
    let (m, w, _) = template_run(40, "0.9999", "template");
    assert!(m.as_u64().unwrap() * 2 > 40 && w.iter().any(|w| w.starts_with("sequential: 40 templates")));
}

#[test]
fn the_stopping_look_is_recorded_when_the_budget_runs_out_past_the_thinning() {
    // 2,000 cases, new and old equal: the budget is spent with neither bound crossed.
    let f = Files::new(2000, 2000, |_| (true, true), |i| (draw(i, 5) < 0.8, draw(i, 6) < 0.8));
    let (code, r, _) = f.evaluate(&[
        "--mode",
        "non_inferiority",
        "--task-tol",
        "0.01",
        "--cluster",
        "none",
        "--sequential",
    ]);
    assert_eq!(code, Some(4));
    let q = &r["sequential"];
    assert_eq!(
        (q["stopped"].as_str(), q["used"].as_u64()),
        (Some("budget"), Some(2000))
    );
    let looks = &q["looks"];
    assert_eq!(looks["n"].as_array().unwrap().last(), Some(&Value::from(2000)));
    assert_eq!(looks["lower"].as_array().unwrap().last(), Some(&q["lower"]));
    assert_eq!(looks["upper"].as_array().unwrap().last(), Some(&q["upper"]));
    // The earlier rules recorded the thinned looks only.
    let (_, before, _) = f.evaluate(&[
        "--mode",
        "non_inferiority",
        "--task-tol",
        "0.01",
        "--cluster",
        "none",
        "--sequential",
        "--rules",
        "before",
    ]);
    let n = before["sequential"]["looks"]["n"].as_array().unwrap();
    assert_ne!(n.last(), Some(&Value::from(2000)), "the case this guards against");
    assert!(before["sequential"].get("min_units").is_none());
    let _ = f.n;
}

/// Python's `round(x, 4)`, as the reports round their figures.
fn round4(x: f64) -> f64 {
    format!("{x:.4}").parse().unwrap()
}

/// A difference of two rates as the reports give it (the reference's): of the rates rounded.
fn rounded_difference(new: f64, old: f64) -> f64 {
    round4(round4(new) - round4(old))
}

/// A figure written to 4 decimals against one computed here and rounded the same way.
fn exactly(reported: f64, computed: f64) {
    assert!(
        (reported - computed).abs() <= 1e-9,
        "reported {reported}, computed {computed}"
    );
}

/// A test set's case as the checker of [`the_renderings_speak_of_the_cases_used`] reads it: its
/// `pipeline_id` (as text: a string as it is, a number as its JSON) and its `template_id`.
pub struct TestCase {
    /// The case's id.
    pub id: String,
    /// Its template.
    pub template: String,
}

/// What [`the_renderings_speak_of_the_cases_used`] found.
pub struct UsedFigures {
    /// The report (`evaluate --out`).
    pub report: Value,
    /// `evaluate`'s summary (its standard error).
    pub summary: String,
    /// The units the rule used (cases: `cluster: none`).
    pub used: usize,
    /// The test cases neither verdict file answers.
    pub not_run: u64,
}

/// A verdict file's records by id: `Some(verdict)`, or `None` for a runner's error.
fn verdict_records(path: &Path) -> HashMap<String, Option<String>> {
    jsonl(path)
        .into_iter()
        .map(|r| {
            let id = match &r["pipeline_id"] {
                Value::String(s) => s.clone(),
                other => other.to_string(),
            };
            (id, r["verdict"].as_str().map(str::to_owned))
        })
        .collect()
}

/// The order of the sequential rule (docs/statistics.md): by the SHA-256 of
/// `deploy-gate/sequential-order/v1:{seed}:{key}`, the key a case's `pipeline_id`.
fn in_seed_order(ids: &mut [String], seed: u64) {
    ids.sort_by_cached_key(|id| Sha256::digest(format!("deploy-gate/sequential-order/v1:{seed}:{id}")).to_vec());
}

/// The text of an HTML file as a reader sees it: without its scripts and styles, tags as
/// spaces, entities read, runs of white space as one.
fn html_text(html: &str) -> String {
    let mut rest = html;
    let mut out = String::new();
    while let Some(at) = rest.find('<') {
        out.push_str(&rest[..at]);
        out.push(' ');
        let tail = &rest[at..];
        let end = ["<script", "<style"]
            .iter()
            .find(|t| tail.starts_with(**t))
            .map(|t| format!("</{}>", &t[1..]))
            .and_then(|close| tail.find(&close).map(|i| i + close.len()))
            .or_else(|| tail.find('>').map(|i| i + 1))
            .unwrap_or(tail.len());
        rest = &tail[end..];
    }
    out.push_str(rest);
    let out = out
        .replace("&lt;", "<")
        .replace("&gt;", ">")
        .replace("&quot;", "\"")
        .replace("&#39;", "'")
        .replace("&amp;", "&");
    out.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// The rows of the HTML file's tables, each its cells' text.
fn html_rows(html: &str) -> Vec<Vec<String>> {
    html.split("<tr")
        .skip(1)
        .map(|row| {
            let row = row.split("</tr>").next().unwrap();
            row.split("<td")
                .skip(1)
                .map(|cell| {
                    let cell = cell.split("</td>").next().unwrap();
                    html_text(&cell[cell.find('>').map_or(0, |i| i + 1)..])
                })
                .collect()
        })
        .collect()
}

/// The rows of the Markdown text's tables, each its cells' text.
fn markdown_rows(md: &str) -> Vec<Vec<String>> {
    md.lines()
        .filter(|l| l.starts_with('|'))
        .map(|l| {
            l.trim_matches('|')
                .split(" | ")
                .map(|c| c.trim().replace("\\_", "_"))
                .collect()
        })
        .collect()
}

/// A rendered number: `+0.5000`, `−0.273`, `±0.0000`, `66.7%`.
fn rendered(cell: &str) -> f64 {
    let t = cell
        .trim()
        .trim_end_matches('%')
        .replace('−', "-")
        .replace(['±', '+'], "");
    t.parse().unwrap_or_else(|e| panic!("{e}: {cell:?}"))
}

/// The per-template table of a rendering (`rows`, each `template | n | old | new | Δ | …`)
/// against the per-template figures computed here: every used template has its row, with
/// its cases, pass rates (percent, to one decimal) and difference (to four decimals).
fn template_rows(what: &str, rows: &[Vec<String>], want: &BTreeMap<String, (usize, usize, usize)>) {
    for (t, &(n, o, nw)) in want {
        let row = rows
            .iter()
            .find(|r| r.len() >= 5 && r[0] == *t && r[1].parse::<usize>().is_ok())
            .unwrap_or_else(|| panic!("{what}: no row of template {t}"));
        assert_eq!(row[1].parse::<usize>().unwrap(), n, "{what}: {row:?}");
        let (po, pn) = (o as f64 / n as f64, nw as f64 / n as f64);
        assert!((rendered(&row[2]) - 100.0 * po).abs() <= 0.05 + 1e-9, "{what}: {row:?}");
        assert!((rendered(&row[3]) - 100.0 * pn).abs() <= 0.05 + 1e-9, "{what}: {row:?}");
        exactly(rendered(&row[4]), rounded_difference(pn, po));
    }
}

/// The whole numbers written in `text` (digits grouped by commas read as one number), none
/// that is part of a word (`p0486`).
fn numbers(text: &str) -> Vec<u64> {
    let chars: Vec<char> = text.chars().collect();
    let mut out = Vec::new();
    let mut i = 0;
    while i < chars.len() {
        if chars[i].is_ascii_digit() && (i == 0 || !chars[i - 1].is_alphanumeric()) {
            let mut j = i;
            let mut digits = String::new();
            while j < chars.len()
                && (chars[j].is_ascii_digit()
                    || (chars[j] == ',' && j + 1 < chars.len() && chars[j + 1].is_ascii_digit()))
            {
                if chars[j] != ',' {
                    digits.push(chars[j]);
                }
                j += 1;
            }
            if j == chars.len() || !chars[j].is_alphanumeric() {
                out.push(digits.parse().unwrap_or(u64::MAX));
            }
            i = j;
        } else {
            i += 1;
        }
    }
    out
}

/// No rendering says "missing" for the cases not run: near every "missing" of `text` (the 24
/// characters before it and the 64 after it, within its line, clause and up to a "not run"), no
/// number is `not_run`. (`not_run` is larger than any count over the cases answered, so it
/// can be no other figure.)
fn never_missing(what: &str, text: &str, not_run: u64) {
    let lower = text.to_lowercase();
    for (at, _) in lower.match_indices("missing") {
        let mut from = at.saturating_sub(24);
        while !lower.is_char_boundary(from) {
            from += 1;
        }
        let mut before = &lower[from..at];
        for stop in ["\n", "not run"] {
            if let Some(i) = before.rfind(stop) {
                before = &before[i + stop.len()..];
            }
        }
        let mut to = (at + 64).min(lower.len());
        while !lower.is_char_boundary(to) {
            to -= 1;
        }
        let mut after = &lower[at..to];
        for stop in ["\n", ";", "not run", "not_run"] {
            if let Some(i) = after.find(stop) {
                after = &after[..i];
            }
        }
        let near = format!("{before}{after}");
        assert!(
            !numbers(&near).contains(&not_run),
            "{what} calls the {not_run} cases not run missing: …{near}…"
        );
    }
}

#[test]
fn the_checker_finds_the_cases_not_run_called_missing() {
    // A summary of an early stop as the build before the evidence rules wrote it.
    let before = "  verdicts:   old 2891 missing, 0 errored; new 2891 missing, 0 errored";
    assert!(std::panic::catch_unwind(|| never_missing("before", before, 2891)).is_err());
    assert!(std::panic::catch_unwind(|| never_missing("md", "Missing verdicts: old 2,891, new 0", 2891)).is_err());
    never_missing(
        "now",
        "  verdicts:   old 0 missing, 0 errored; new 0 missing, 0 errored\n  not run:    2,891 test case(s)",
        2891,
    );
    never_missing(
        "diff",
        "rests on 94 of 3,000; missing old 0, new 0; not run 2,891",
        2891,
    );
    assert_eq!(numbers("p0486 t6 2,891 of 3,000, 12."), [2891, 3000, 12]);
}

/// A sequential evaluation that stopped before every case was answered, and every rendering of
/// it, against figures computed here from the verdict files alone over the report's list of
/// the cases used (`cluster: none`): `evaluate` with `evaluate` (its arguments, without the
/// outputs, which go to `dir`) writes the report, the HTML report, the Markdown summary and
/// JUnit; `diff` of the report with itself its JSON, Markdown, HTML and JUnit. The cases used
/// must be the first answered ones in the seed's order; the decision's, the comparison's,
/// McNemar's, the verdict counts', the per-template, the case table's and the latency and
/// token figures those of the cases used; `not_run` the cases of `test_set` neither file
/// answers; and no rendering may say "missing" for those.
pub fn the_renderings_speak_of_the_cases_used(
    dir: &Path,
    evaluate: &[String],
    test_set: &[TestCase],
    old_verdicts: &Path,
    new_verdicts: &Path,
) -> UsedFigures {
    let path = |name: &str| dir.join(name);
    let mut args = evaluate.to_vec();
    for (flag, name) in [
        ("--out", "report.json"),
        ("--html", "report.html"),
        ("--markdown", "summary.md"),
        ("--junit", "junit.xml"),
    ] {
        args.extend([flag.to_owned(), s(&path(name))]);
    }
    let out = run(&args);
    let summary = stderr(&out);
    let r: Value = serde_json::from_slice(&std::fs::read(path("report.json")).unwrap_or_default())
        .unwrap_or_else(|e| panic!("{e}: {}", text(&out)));
    let q = &r["sequential"];
    let stopped = q["stopped"].as_str().unwrap_or_else(|| panic!("not sequential: {q}"));
    let want_code = match r["decision"]["outcome"].as_str().unwrap() {
        "approved" => 0,
        "blocked" => 3,
        _ => 4,
    };
    assert_eq!(out.status.code(), Some(want_code), "{}", text(&out));
    assert_eq!(r["policy"]["cluster"], "none", "units are cases here");
    let used = q["used"].as_u64().unwrap() as usize;
    let n = test_set.len();

    // The cases answered, used and not run, from the verdict files alone.
    let (old, new) = (verdict_records(old_verdicts), verdict_records(new_verdicts));
    let template: HashMap<&str, &str> = test_set.iter().map(|c| (c.id.as_str(), c.template.as_str())).collect();
    let mut answered: Vec<String> = test_set
        .iter()
        .filter(|c| old.contains_key(&c.id) || new.contains_key(&c.id))
        .map(|c| c.id.clone())
        .collect();
    let not_run = (n - answered.len()) as u64;
    assert!(
        not_run as usize > answered.len(),
        "the checker needs more cases not run ({not_run}) than answered ({})",
        answered.len()
    );
    assert_eq!(q["available"].as_u64(), Some(answered.len() as u64), "{q}");
    if stopped == "budget" {
        assert_eq!(used as u64, q["budget"].as_u64().unwrap().min(answered.len() as u64));
    } else {
        assert!(
            used <= answered.len() && used as u64 <= q["budget"].as_u64().unwrap(),
            "{q}"
        );
    }
    let seed = r["policy"]["seed"].as_u64().unwrap();
    in_seed_order(&mut answered, seed);
    let mut first: Vec<&String> = answered[..used].iter().collect();
    first.sort_by_key(|id| test_set.iter().position(|c| c.id == **id));
    let listed: Vec<String> = r["cases"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| match &c["pipeline_id"] {
            Value::String(s) => s.clone(),
            other => other.to_string(),
        })
        .collect();
    let mut listed_sorted: Vec<&String> = listed.iter().collect();
    listed_sorted.sort_by_key(|id| test_set.iter().position(|c| c.id == **id));
    assert_eq!(
        listed_sorted, first,
        "the report's cases are the first {used} answered in the seed's order"
    );

    // The figures over the cases used.
    let pass_set: Vec<String> = r["policy"]["pass_verdicts"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_str().unwrap().to_uppercase())
        .collect();
    let passes = |v: Option<&Option<String>>| matches!(v, Some(Some(t)) if pass_set.contains(&t.to_uppercase()));
    let errored = |v: Option<&Option<String>>| matches!(v, Some(None));
    let (mut old_pass, mut new_pass, mut regressed, mut improved) = (0usize, 0usize, 0u64, 0u64);
    let (mut old_errored, mut new_errored, mut either_errored) = (0u64, 0u64, 0u64);
    let mut table = [0u64; 4];
    let mut by_template: BTreeMap<String, (usize, usize, usize)> = BTreeMap::new();
    for id in &listed {
        let (o, nw) = (passes(old.get(id)), passes(new.get(id)));
        assert!(old.contains_key(id) && new.contains_key(id), "{id}: answered by both");
        old_errored += u64::from(errored(old.get(id)));
        new_errored += u64::from(errored(new.get(id)));
        either_errored += u64::from(errored(old.get(id)) || errored(new.get(id)));
        old_pass += usize::from(o);
        new_pass += usize::from(nw);
        regressed += u64::from(o && !nw);
        improved += u64::from(!o && nw);
        table[usize::from(!o) * 2 + usize::from(!nw)] += 1;
        let row = by_template.entry(template[id.as_str()].to_owned()).or_default();
        row.0 += 1;
        row.1 += usize::from(o);
        row.2 += usize::from(nw);
    }
    let (po, pn) = (old_pass as f64 / used as f64, new_pass as f64 / used as f64);
    // The decision's difference as the reference rounds it: of the rounded rates.
    let delta = rounded_difference(pn, po);

    // The report.
    let d = &r["decision"];
    near(d["task_old"].as_f64().unwrap(), po);
    near(d["task_new"].as_f64().unwrap(), pn);
    exactly(d["task_delta"].as_f64().unwrap(), delta);
    assert_eq!(d["num_cases"].as_u64(), Some(n as u64), "the test set's size");
    let c = &r["comparison"];
    near(c["old_score"].as_f64().unwrap(), po);
    near(c["new_score"].as_f64().unwrap(), pn);
    exactly(c["delta"].as_f64().unwrap(), delta);
    assert_eq!(c["num_cases"].as_u64(), Some(used as u64));
    let st = &r["stats"]["task"];
    assert_eq!(
        (st["mcnemar"]["b"].as_u64(), st["mcnemar"]["c"].as_u64()),
        (Some(regressed), Some(improved))
    );
    let t = &st["table"];
    assert_eq!(
        [&t["both_pass"], &t["old_only"], &t["new_only"], &t["both_fail"]].map(|v| v.as_u64().unwrap()),
        table
    );
    for (side, passed, errors) in [("old", old_pass, old_errored), ("new", new_pass, new_errored)] {
        let v = &r["verdicts"][side];
        assert_eq!(
            (
                v["cases"].as_u64(),
                v["passed"].as_u64(),
                v["missing"].as_u64(),
                v["errored"].as_u64()
            ),
            (Some(used as u64), Some(passed as u64), Some(0), Some(errors)),
            "{side}: {v}"
        );
    }
    let rows = r["templates"].as_array().unwrap();
    assert_eq!(rows.len(), by_template.len());
    for row in rows {
        let (cases, o, nw) = by_template[row["template_id"].as_str().unwrap()];
        assert_eq!(row["n"].as_u64(), Some(cases as u64), "{row}");
        near(row["old_pass_rate"].as_f64().unwrap(), o as f64 / cases as f64);
        near(row["new_pass_rate"].as_f64().unwrap(), nw as f64 / cases as f64);
        exactly(
            row["delta"].as_f64().unwrap(),
            rounded_difference(nw as f64 / cases as f64, o as f64 / cases as f64),
        );
    }
    let e = &r["evidence"];
    assert_eq!(
        (
            e["test_cases"].as_u64(),
            e["answered"].as_u64(),
            e["missing"]["old"].as_u64(),
            e["missing"]["new"].as_u64(),
            e["not_run"].as_u64(),
            e["rests_on"].as_u64(),
            e["over"].as_str()
        ),
        (
            Some(n as u64),
            Some(answered.len() as u64),
            Some(0),
            Some(0),
            Some(not_run),
            Some(used as u64),
            Some("used")
        ),
        "{e}"
    );
    // The latency and token figures, when the records carry them (a runner's), are the used
    // cases' too.
    let records: HashMap<String, Value> = jsonl(old_verdicts)
        .into_iter()
        .map(|r| {
            (
                r["pipeline_id"]
                    .as_str()
                    .map_or_else(|| r["pipeline_id"].to_string(), str::to_owned),
                r,
            )
        })
        .collect();
    if let Some(cost) = r["cost"]["old"].as_object() {
        let over: Vec<&Value> = listed.iter().map(|id| &records[id]).collect();
        assert_eq!(cost["records"].as_u64(), Some(used as u64), "{cost:?}");
        let sum = |key: &str| -> u64 { over.iter().map(|r| r["usage"][key].as_u64().unwrap_or(0)).sum() };
        assert_eq!(cost["prompt_tokens"]["total"].as_u64(), Some(sum("prompt_tokens")));
        assert_eq!(
            cost["completion_tokens"]["total"].as_u64(),
            Some(sum("completion_tokens"))
        );
        let attempts: Vec<u64> = over.iter().filter_map(|r| r["attempts"].as_u64()).collect();
        assert_eq!(cost["attempts"].as_u64(), Some(attempts.iter().sum::<u64>()));
        assert_eq!(
            cost["retried"].as_u64(),
            Some(attempts.iter().filter(|a| **a > 1).count() as u64)
        );
    }

    // The guardrails' figures, when the policy has some on a record's latency or tokens: the
    // means over the records of the cases used.
    if let Some(criteria) = r["guardrails"]["criteria"].as_array() {
        let new_records: HashMap<String, Value> = jsonl(new_verdicts)
            .into_iter()
            .map(|r| {
                (
                    r["pipeline_id"]
                        .as_str()
                        .map_or_else(|| r["pipeline_id"].to_string(), str::to_owned),
                    r,
                )
            })
            .collect();
        assert_eq!(r["guardrails"]["cases"].as_u64(), Some(used as u64));
        for c in criteria {
            let metric = c["metric"].as_str().unwrap();
            let value = |rec: &Value| -> f64 {
                let tokens = |k: &str| rec["usage"][k].as_f64().unwrap();
                match metric {
                    "latency_ms" => rec["latency_ms"].as_f64().unwrap(),
                    "total_tokens" => tokens("prompt_tokens") + tokens("completion_tokens"),
                    other => tokens(other),
                }
            };
            let mean = |by_id: &HashMap<String, Value>| -> f64 {
                listed.iter().map(|id| value(&by_id[id])).sum::<f64>() / used as f64
            };
            assert_eq!(
                (c["n"].as_u64(), c["excluded"].as_u64()),
                (Some(used as u64), Some(0)),
                "{c}"
            );
            for (side, want) in [("old", mean(&records)), ("new", mean(&new_records))] {
                let got = c[side].as_f64().unwrap();
                assert!(
                    (got - want).abs() <= 1e-9 * want.abs().max(1.0),
                    "{metric} {side}: {got} {want}"
                );
            }
            if c["action"] == "block" {
                assert!(
                    d["reason"].as_str().unwrap().contains(&format!("n {used})")),
                    "{}",
                    d["reason"]
                );
            }
        }
    }

    // The figures as each rendering writes them.
    let g = |x: u64| grouped(x);
    let rests = format!("(rests on {} of {} test cases)", g(used as u64), g(n as u64));
    let over = format!("over the {} cases used", g(used as u64));
    let fixed = |x: f64| format!("{x:.4}");
    // The CLI's summary.
    assert!(summary.lines().next().unwrap_or("").ends_with(&rests), "{summary}");
    assert!(
        summary.contains(&format!(
            "  task:       {} → {} (Δ {:+.4}, tolerance ",
            fixed(po),
            fixed(pn),
            delta
        )) && summary.contains(&format!(") {over}\n")),
        "{summary}"
    );
    assert!(
        summary.contains(&format!("McNemar b={regressed} c={improved} ")),
        "{summary}"
    );
    assert!(
        summary.contains(&format!(
            "  verdicts:   old 0 missing, {old_errored} errored; new 0 missing, {new_errored} errored"
        )),
        "{summary}"
    );
    assert!(
        summary.contains(&format!("  not run:    {} test case(s)", g(not_run))),
        "{summary}"
    );
    never_missing("the summary", &summary, not_run);
    // Markdown.
    let md = std::fs::read_to_string(path("summary.md")).unwrap();
    assert!(md.lines().next().unwrap().ends_with(&rests), "{md}");
    assert!(
        md.contains(&format!("Every figure below is {over} by the sequential rule")),
        "{md}"
    );
    let md_rows = markdown_rows(&md);
    let task = md_rows
        .iter()
        .find(|r| r[0] == "task pass rate")
        .unwrap_or_else(|| panic!("{md}"));
    assert!((rendered(&task[1]) - 100.0 * po).abs() <= 0.05 + 1e-9, "{task:?}");
    assert!((rendered(&task[2]) - 100.0 * pn).abs() <= 0.05 + 1e-9, "{task:?}");
    exactly(rendered(&task[3]), delta);
    assert!(
        md.contains(&format!("McNemar b = {regressed}, c = {improved}, p = ")),
        "{md}"
    );
    assert!(
        md.contains(&format!(
            "Regressed {regressed}, improved {improved} {over}. Missing verdicts: old 0, new 0; errored: old \
             {old_errored}, new {new_errored}."
        )),
        "{md}"
    );
    assert!(
        md.contains(&format!("Not run: {} test cases not run", g(not_run))),
        "{md}"
    );
    assert!(md.contains(&format!("Per template, {over}:")), "{md}");
    template_rows("Markdown", &md_rows, &by_template);
    if r["cost"]["old"].is_object() {
        let counted = md_rows.iter().find(|r| r[0] == "records counted").unwrap();
        assert_eq!(counted[1..3], [used.to_string(), used.to_string()], "{counted:?}");
    }
    never_missing("the Markdown summary", &md, not_run);
    // HTML.
    let html = std::fs::read_to_string(path("report.html")).unwrap();
    let page = html_text(&html);
    for want in [
        rests.clone(),
        format!("Every figure below is {over} by the sequential rule"),
        format!("Task accuracy {over} old → new"),
        format!("passed old {old_pass} · new {new_pass} of {used}"),
        "missing verdict old 0 · new 0".to_owned(),
        format!("not run {} (neither model was asked", g(not_run)),
        format!("McNemar b = {regressed}, c = {improved}: p = "),
        format!("Per template {over}"),
        format!("Listed {over}; the cases not run are not listed."),
    ] {
        assert!(page.contains(&want), "the HTML report lacks {want:?}: {page}");
    }
    let rates: Vec<&str> = page
        .split(&format!("Task accuracy {over} old → new "))
        .nth(1)
        .unwrap()
        .split_whitespace()
        .collect();
    assert!(
        (rendered(rates[0]) - 100.0 * po).abs() <= 0.05 + 1e-9,
        "{:?}",
        &rates[..3]
    );
    assert!(
        (rendered(rates[2]) - 100.0 * pn).abs() <= 0.05 + 1e-9,
        "{:?}",
        &rates[..3]
    );
    let html_table = html_rows(&html);
    template_rows("HTML", &html_table, &by_template);
    if r["cost"]["old"].is_object() {
        assert!(page.contains(&format!("records counted {used} {used}")), "{page}");
    }
    // The case table lists cases used only: the regressed and the improved among them.
    let case_rows: Vec<&Vec<String>> = html_table
        .iter()
        // (Six cells, and a seventh with the answers when the verdict files carry them.)
        .filter(|row| (row.len() == 6 || row.len() == 7) && template.contains_key(row[0].as_str()))
        .collect();
    for row in &case_rows {
        assert!(listed.contains(&row[0]), "{row:?} is a case used");
        assert_eq!(row[1], template[row[0].as_str()], "{row:?}");
    }
    for (status, count) in [("regressed", regressed), ("improved", improved)] {
        assert_eq!(
            case_rows.iter().filter(|r| r[5] == status).count() as u64,
            count,
            "the HTML case table's {status} cases"
        );
    }
    never_missing("the HTML report", &page, not_run);
    // JUnit: a test case per case used, a regression a failure, nothing missing.
    let xml = std::fs::read_to_string(path("junit.xml")).unwrap();
    let doc = roxmltree::Document::parse(&xml).unwrap();
    let suite = doc.descendants().find(|e| e.has_tag_name("testsuite")).unwrap();
    // Beside the cases, a test case per guardrail (none exceeded here).
    let guardrails = r["guardrails"]["criteria"].as_array().map_or(0, Vec::len);
    assert_eq!(
        (
            suite.attribute("tests"),
            suite.attribute("failures"),
            suite.attribute("errors")
        ),
        (
            Some((used + guardrails).to_string().as_str()),
            Some(regressed.to_string().as_str()),
            Some(either_errored.to_string().as_str())
        ),
        "{xml}"
    );
    let names: Vec<&str> = doc
        .descendants()
        .filter(|e| {
            e.has_tag_name("testcase")
                && !e
                    .attribute("classname")
                    .is_some_and(|c| c.starts_with("deploy-gate.guardrails"))
        })
        .map(|e| e.attribute("name").unwrap())
        .collect();
    let mut names_sorted = names.clone();
    names_sorted.sort_unstable();
    let mut listed_names: Vec<&str> = listed.iter().map(String::as_str).collect();
    listed_names.sort_unstable();
    assert_eq!(names_sorted, listed_names);
    let property = |name: &str| -> String {
        doc.descendants()
            .find(|e| e.has_tag_name("property") && e.attribute("name") == Some(name))
            .and_then(|e| e.attribute("value"))
            .unwrap_or_else(|| panic!("no property {name}: {xml}"))
            .to_owned()
    };
    assert_eq!(property("rests_on"), used.to_string());
    assert_eq!(property("rests_on.text"), rests[1..rests.len() - 1]);
    assert_eq!(property("not_run"), not_run.to_string());
    assert_eq!(property("figures"), over);
    near(property("task_old").parse().unwrap(), po);
    near(property("task_new").parse().unwrap(), pn);
    exactly(property("task_delta").parse().unwrap(), delta);
    never_missing("JUnit", &xml, not_run);

    // `diff` of the report with itself: each side's evidence and figures are the used cases'.
    let report = s(&path("report.json"));
    let out = run(&strings(&[
        "diff",
        &report,
        &report,
        "--out",
        &s(&path("diff.json")),
        "--markdown",
        &s(&path("diff.md")),
        "--html",
        &s(&path("diff.html")),
        "--junit",
        &s(&path("diff.xml")),
    ]));
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let dj: Value = serde_json::from_slice(&std::fs::read(path("diff.json")).unwrap()).unwrap();
    for side in ["before", "after"] {
        let e = &dj[side]["evidence"];
        assert_eq!(
            (
                e["test_cases"].as_u64(),
                e["rests_on"].as_u64(),
                e["missing"]["old"].as_u64(),
                e["missing"]["new"].as_u64(),
                e["not_run"].as_u64(),
                e["over"].as_str()
            ),
            (
                Some(n as u64),
                Some(used as u64),
                Some(0),
                Some(0),
                Some(not_run),
                Some("used")
            ),
            "{side}: {e}"
        );
        exactly(dj["stats"][side]["task_delta"].as_f64().unwrap(), delta);
    }
    assert_eq!(dj["cases"]["common"].as_u64(), Some(used as u64));
    let rows = dj["templates"].as_array().unwrap();
    assert_eq!(rows.len(), by_template.len());
    for row in rows {
        let (cases, o, nw) = by_template[row["template_id"].as_str().unwrap()];
        assert_eq!(row["n_before"].as_u64(), Some(cases as u64), "{row}");
        exactly(
            row["delta_before"].as_f64().unwrap(),
            rounded_difference(nw as f64 / cases as f64, o as f64 / cases as f64),
        );
    }
    let cell = format!(
        "rests on {} of {}; missing old 0, new 0; not run {} (figures over the cases used)",
        g(used as u64),
        g(n as u64),
        g(not_run)
    );
    let diff_summary = stderr(&out);
    let diff_md = std::fs::read_to_string(path("diff.md")).unwrap();
    let diff_page = html_text(&std::fs::read_to_string(path("diff.html")).unwrap());
    let diff_xml = std::fs::read_to_string(path("diff.xml")).unwrap();
    assert!(diff_md.lines().next().unwrap().ends_with(&rests), "{diff_md}");
    assert!(diff_summary.lines().next().unwrap().ends_with(&rests), "{diff_summary}");
    assert!(diff_xml.contains(&rests), "{diff_xml}");
    assert!(diff_xml.contains(&format!("<property name=\"rests_on_before\" value=\"{used}\"/>")));
    for (what, text) in [
        ("the diff's summary", &diff_summary),
        ("the diff's Markdown", &diff_md),
        ("the diff's HTML", &diff_page),
    ] {
        assert!(text.contains(&cell), "{what} lacks {cell:?}: {text}");
    }
    for (what, text) in [
        ("the diff's summary", &diff_summary),
        ("the diff's Markdown", &diff_md),
        ("the diff's HTML", &diff_page),
        ("the diff's JUnit", &diff_xml),
        ("the diff's JSON", &std::fs::read_to_string(path("diff.json")).unwrap()),
    ] {
        never_missing(what, text, not_run);
    }
    UsedFigures {
        report: r,
        summary,
        used,
        not_run,
    }
}
