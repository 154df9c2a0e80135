//! Numbers are read as Python's `json` reads them (correctly rounded), and a verdict is the
//! reference's text of its value (`str(v or "")`), through every reader: the fast path and
//! serde for audit lines, verdict files in each format, trajectory files, and the CLI.
//!
//! `fixtures/numbers/python-text.tsv` was written by CPython 3.11: each JSON number literal
//! with `str(json.loads(literal) or "")`.

use crate::common::*;
use deploy_gate::compat::{py_float_repr, py_number_text};
use deploy_gate::json::{parse_object_line, read_object_text, Scalar};
use deploy_gate::trajectory::parse_trajectories;
use deploy_gate::verdicts::parse_verdicts;
use serde_json::Value;
use std::path::{Path, PathBuf};

fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/numbers")
}

/// `(literal, Python's text)` for every line of the oracle file.
fn python_texts() -> Vec<(String, String)> {
    let text = std::fs::read_to_string(fixtures().join("python-text.tsv")).unwrap();
    let pairs: Vec<(String, String)> = text
        .lines()
        .filter(|l| !l.starts_with('#'))
        .map(|l| {
            let (lit, want) = l.split_once('\t').unwrap();
            (lit.to_owned(), want.to_owned())
        })
        .collect();
    assert!(pairs.len() > 4000, "oracle file cut short");
    pairs
}

fn is_float_literal(lit: &str) -> bool {
    lit.contains(['.', 'e', 'E'])
}

/// Values where serde_json's default float parsing is one ulp off the correctly rounded one
/// (found by comparing it with `str::parse::<f64>` on generated decimals).
const ONE_ULP_OFF: &[&str] = &[
    "0.10957860598549463",
    "0.9899951327998887",
    "0.9830571047624649",
    "0.47795269883162916",
    "0.9129195995402835",
    "0.09816095606464881",
    "0.9714445443578703",
    "0.9008742316802407",
    "0.9634788589720643",
    "0.9104214761045075",
    "0.24763214492327235",
    "0.9493471120809343",
    "0.49850629066769925",
    "0.9007499999999999",
];

#[test]
fn number_text_is_pythons() {
    let mut floats = 0;
    for (lit, want) in python_texts() {
        assert_eq!(py_number_text(&lit), want, "literal {lit}");
        if is_float_literal(&lit) && !want.is_empty() {
            assert_eq!(py_float_repr(lit.parse().unwrap()), want, "repr of {lit}");
            floats += 1;
        }
    }
    assert!(floats > 3000);
}

#[test]
fn every_json_reader_rounds_numbers_correctly() {
    let mut read = 0;
    let literals: Vec<String> = python_texts()
        .into_iter()
        .map(|(l, _)| l)
        .chain(ONE_ULP_OFF.iter().map(|l| l.to_string()))
        .collect();
    for lit in &literals {
        let lit = lit.as_str();
        let want: f64 = lit.parse().unwrap();
        if !is_float_literal(lit) || !want.is_finite() {
            continue;
        }
        // A writer-shaped line takes the fast path; the escape in `note` sends the same line
        // through serde_json when it is read.
        for line in [
            format!("{{\"pipeline_id\": \"p\", \"episode_reward\": {lit}}}"),
            format!("{{\"note\": \"a\\u0041\", \"episode_reward\": {lit}}}"),
        ] {
            let mut got = None;
            let fast: Result<(), _> = read_object_text(&line, |_: &mut (), k, v| {
                if k == "episode_reward" {
                    got = Some(v.scalar()?);
                } else if k == "note" {
                    v.scalar()?;
                } else {
                    v.skip()?;
                }
                Ok(())
            });
            fast.unwrap();
            let got = got.unwrap().as_f64().unwrap();
            assert_eq!(got.to_bits(), want.to_bits(), "{lit} in {line}");
        }
        let mut slow = Scalar::Absent;
        let line = format!("{{\"r\": {lit}}}");
        parse_object_line(line.as_bytes(), |_, v| {
            slow = v.scalar()?;
            Ok(())
        })
        .unwrap();
        assert_eq!(slow.as_f64().unwrap().to_bits(), want.to_bits(), "{lit}");
        read += 1;
    }
    assert!(read > 3000);
}

#[test]
fn trajectory_files_round_numbers_correctly() {
    for lit in ONE_ULP_OFF {
        let want = lit.parse::<f64>().unwrap() / 5.0;
        let jsonl = format!("{{\"overall_judge_score\": {lit}}}\n");
        let array = format!("[{{\"overall_judge_score\": {lit}, \"tac_score\": 0}}]");
        for text in [jsonl, array] {
            let t = parse_trajectories(deploy_gate::Role::OldTrajectories, "t", text.as_bytes()).unwrap();
            assert_eq!(t.results[0].composite.to_bits(), want.to_bits(), "{text}");
        }
    }
}

#[test]
fn verdict_files_read_numbers_as_python_does() {
    let pairs = python_texts();
    let jsonl: String = pairs
        .iter()
        .enumerate()
        .map(|(i, (lit, _))| format!("{{\"pipeline_id\": \"n{i}\", \"verdict\": {lit}}}\n"))
        .collect();
    let map = format!(
        "{{{}}}",
        pairs
            .iter()
            .enumerate()
            .map(|(i, (lit, _))| format!("\"n{i}\": {lit}"))
            .collect::<Vec<_>>()
            .join(",\n")
    );
    let array = format!("[{}]", jsonl.lines().collect::<Vec<_>>().join(",\n"));
    for text in [jsonl, map, array] {
        let v = parse_verdicts(deploy_gate::Role::NewVerdicts, "v", text.as_bytes()).unwrap();
        for (i, (lit, want)) in pairs.iter().enumerate() {
            let id = deploy_gate::audit::PipelineId {
                text: format!("n{i}").into(),
                numeric: false,
            };
            assert_eq!(
                v.get(&id).unwrap().verdict.as_deref(),
                Some(want.as_str()),
                "{lit} ({:?})",
                v.format
            );
        }
    }
}

#[test]
fn audit_completions_read_numeric_verdicts_as_python_does() {
    // Every third literal whose text is not falsy: a pipeline whose completion has it as its
    // verdict, with that text in the pass set, must be a test case; the falsy ones never are.
    let pairs: Vec<(String, String)> = python_texts().into_iter().step_by(3).collect();
    let dir = tempdir();
    let mut log = String::new();
    for (i, (lit, _)) in pairs.iter().enumerate() {
        log.push_str(&format!(
            "{{\"pipeline_id\": \"n{i}\", \"stage_id\": \"s\", \"stage_type\": \"llm\", \"input\": \"q\"}}\n\
             {{\"pipeline_id\": \"n{i}\", \"verdict\": {lit}, \"is_complete\": true, \"error\": null}}\n"
        ));
    }
    let path = dir.path().join("audit.jsonl");
    std::fs::write(&path, log).unwrap();
    let mut pass: Vec<&str> = pairs
        .iter()
        .map(|(_, w)| w.as_str())
        .filter(|w| !w.is_empty())
        .collect();
    pass.sort();
    pass.dedup();
    let out = run(&[
        "test-set".into(),
        "--audit".into(),
        path.display().to_string(),
        "--min-samples".into(),
        "1".into(),
        "--max-samples".into(),
        "none".into(),
        format!("--pass-verdicts={}", pass.join(",")),
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    // Only the ids: `1e400` is a verdict Python reads (as `inf`) and a `Value` does not.
    #[derive(serde::Deserialize)]
    struct Case {
        pipeline_id: String,
    }
    let ids: std::collections::HashSet<String> = String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str::<Case>(l).unwrap().pipeline_id)
        .collect();
    for (i, (lit, want)) in pairs.iter().enumerate() {
        assert_eq!(
            ids.contains(&format!("n{i}")),
            !want.is_empty(),
            "verdict {lit} (Python: {want:?})"
        );
    }
}

fn report_of(args: &[String]) -> (Option<i32>, Value) {
    let out = run(args);
    let report = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("{e}: {}", stderr(&out)));
    (out.status.code(), report)
}

#[test]
fn rounding_tie_is_decided_as_the_reference() {
    // Old judge 0.9007499999999999 → composite 0.18015 (as the exact double) → 0.1801; new
    // 0.65026 → 0.1301; delta −0.05 is within the tolerance: approved. One ulp off in the old
    // judge gives 0.1802 and blocks.
    let dir = parity_dir().join("rounding-tie");
    let (code, report) = report_of(&evaluate_args(&dir));
    let d = &report["decision"];
    assert_eq!(code, Some(0), "{d}");
    assert_eq!(d["approved"], true);
    assert_eq!(d["trajectory_old"], 0.1801);
    assert_eq!(d["trajectory_new"], 0.1301);
    assert_eq!(d["trajectory_delta"], -0.05);
}

#[test]
fn numeric_verdicts_in_every_format_give_the_references_decision() {
    let dir = parity_dir().join("numeric-verdicts");
    let expected: Value = serde_json::from_slice(&std::fs::read(dir.join("expected.json")).unwrap()).unwrap();
    let jsonl = dir.join("new_verdicts.jsonl");
    let others = ["new_verdicts.array.json", "new_verdicts.map.json", "new_verdicts.csv"].map(|f| fixtures().join(f));
    let mut composite = Vec::new();
    for new in std::iter::once(jsonl).chain(others) {
        let mut args = evaluate_args(&dir);
        let at = args.iter().position(|a| a == "--new-verdicts").unwrap() + 1;
        args[at] = new.display().to_string();
        let (code, report) = report_of(&args);
        let what = new.file_name().unwrap().to_string_lossy().into_owned();
        assert_eq!(code, Some(0), "{what}: {}", report["decision"]);
        if let Some(diff) = first_difference(&what, &reference_decision(&report["decision"]), &expected["decision"]) {
            panic!("{diff}");
        }
        assert_eq!(report["verdicts"]["new"]["pass_rate"], expected["task_new"], "{what}");
        assert_eq!(report["verdicts"]["old"]["pass_rate"], expected["task_old"], "{what}");
        composite.push(report["verdicts"]["new"]["composite"].as_u64().unwrap());
    }
    // The object and array verdicts are counted apart (CSV cells are text, never composite).
    assert!(
        composite[0] > 0 && composite[..3].iter().all(|&c| c == composite[0]),
        "{composite:?}"
    );
    assert_eq!(composite[3], 0);
}
