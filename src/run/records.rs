//! Verdicts produced by running a model in memory (a Python runner, a worker program): the
//! answers become the records a verdict file would hold (`{pipeline_id, verdict}`,
//! `{pipeline_id, verdict: null}` for no answer, `{pipeline_id, error}` for a failed run) and
//! are read by the verdict reader, so they enter scoring exactly as a file's records do.
//!
//! The reference's `score_model` scores a list of cases it was handed, which need not have
//! distinct (or any) pipeline ids; [`score_answers`] scores such a list by position.

use crate::audit::PipelineId;
use crate::input::{InputError, Role};
use crate::testset::{StageOutputs, TestCase, TestSet};
use crate::verdicts::{parse_verdicts, Verdicts};
use serde_json::value::RawValue;
use std::sync::Arc;

/// What a model run gave for one test case.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Answer {
    /// A verdict, already made text as the reference makes it (`str(v or "")`).
    Verdict(String),
    /// No verdict (the runner gave `None`): the case fails and is counted as missing.
    Missing,
    /// The run failed with this message: the case fails and is counted as errored.
    Error(String),
}

/// What a verdict record holds besides its id.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Record<'a> {
    /// `"verdict"`: the verdict as JSON text (a string's quotes included, `null` for none).
    Verdict(&'a str),
    /// `"error"`: the error's message.
    Error(&'a str),
}

/// Appends one verdict record line, `{"pipeline_id":…,"verdict":…}` or
/// `{"pipeline_id":…,"error":"…"}` and a newline: the one writer of verdict records, for the
/// answers of a run in memory ([`records_jsonl`]) and for `deploy-gate run`'s output
/// (`run::record_line`). The id is written with its type (an integer id as the JSON integer
/// it was, its digits as they are), so the record matches its case exactly even when the log
/// holds the same text with both types.
pub fn write_record(out: &mut Vec<u8>, id: &PipelineId, record: Record<'_>) {
    write_record_with(out, id, record, &Cost::default());
}

/// What one call of a model cost, written after the verdict or error of a record when known:
/// `latency_ms` (the request's start to its last byte), `usage` (the tokens the server
/// reported), `attempts` (tries made), `metrics` (the named numbers a worker answered with) and
/// `target` (the digest of the endpoint file that answered: the field keeps the name records
/// were first written with, so that earlier records read as they are).
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Cost<'a> {
    /// Milliseconds, written with one decimal.
    pub latency_ms: Option<f64>,
    /// Prompt tokens as the server reported them.
    pub prompt_tokens: Option<u64>,
    /// Completion tokens as the server reported them.
    pub completion_tokens: Option<u64>,
    /// Tries made (1: no retry).
    pub attempts: Option<u32>,
    /// `metrics` as the JSON text of an object of named finite numbers
    /// ([`super::Reply::metrics`]), written as it is.
    pub metrics: Option<&'a str>,
    /// The endpoint file's digest (`sha256:…`), written as `target`.
    pub target: Option<&'a str>,
}

/// The bound on a kept answer when the endpoint file sets none (`max_output_bytes`): 64 KiB.
pub const DEFAULT_MAX_OUTPUT_BYTES: usize = 64 * 1024;

/// What the model answered, as a record keeps it: `"output"` (any JSON value) and, when the
/// answer was longer than the bound and cut, `"output_truncated": true`. It never takes part in
/// scoring: a verdict file is read the same with or without it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Output {
    /// The answer as one line of JSON text (a string's quotes included).
    pub json: String,
    /// Whether the answer was cut to the bound.
    pub truncated: bool,
}

/// JSON text made safe to hold in one line of a JSONL file for every reader: the line
/// separators JSON allows raw inside strings (U+2028, U+2029, and U+0085, which Python's
/// `str.splitlines` also breaks at) escaped, and a raw carriage return (whitespace between
/// tokens: inside a string JSON has it escaped) made a space. The value is the same.
fn one_line(json: String) -> String {
    if !json.contains(['\u{2028}', '\u{2029}', '\u{85}', '\r']) {
        return json;
    }
    json.replace('\u{2028}', "\\u2028")
        .replace('\u{2029}', "\\u2029")
        .replace('\u{85}', "\\u0085")
        .replace('\r', " ")
}

/// The longest prefix of `s` of at most `max` bytes that ends on a character boundary.
fn prefix(s: &str, max: usize) -> &str {
    let mut end = max.min(s.len());
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    &s[..end]
}

impl Output {
    /// A text answer: its first `max` bytes of UTF-8, cut on a character boundary (the bound is
    /// the text's: its JSON, with escapes, may be longer).
    pub fn text(s: &str, max: usize) -> Output {
        let kept = prefix(s, max);
        Output {
            json: one_line(serde_json::to_string(kept).expect("a string serializes")),
            truncated: kept.len() < s.len(),
        }
    }

    /// An answer that is a JSON value. A string is bounded as [`Output::text`]; any other value
    /// is kept whole when its JSON text (one line) is at most `max` bytes, and otherwise becomes
    /// the text of its first `max` bytes (a cut object is no longer JSON, so it is kept as text).
    pub fn value(value: &serde_json::Value, max: usize) -> Output {
        if let serde_json::Value::String(s) = value {
            return Output::text(s, max);
        }
        let json = one_line(serde_json::to_string(value).expect("JSON serializes"));
        if json.len() <= max {
            Output { json, truncated: false }
        } else {
            Output::text(&json, max)
        }
    }

    /// An answer given as JSON text (a worker's `output`, exactly as it wrote it: one line).
    pub fn raw(json: &RawValue, max: usize) -> Output {
        let text = json.get();
        if text.starts_with('"') {
            if let Ok(s) = serde_json::from_str::<String>(text) {
                return Output::text(&s, max);
            }
        }
        if text.len() <= max {
            Output {
                json: one_line(text.to_owned()),
                truncated: false,
            }
        } else {
            Output::text(text, max)
        }
    }
}

/// What the model answered, before it is bounded to the run's `max_output_bytes`.
#[derive(Debug, Clone)]
pub enum Answered {
    /// JSON text exactly as a worker wrote it.
    Raw(Box<RawValue>),
    /// A JSON value read from a response body.
    Value(serde_json::Value),
    /// A body that is not JSON, as text (invalid UTF-8 replaced).
    Text(String),
}

impl Answered {
    /// The answer as a record keeps it, at most `max` bytes ([`Output`]).
    pub fn bounded(&self, max: usize) -> Output {
        match self {
            Answered::Raw(raw) => Output::raw(raw, max),
            Answered::Value(value) => Output::value(value, max),
            Answered::Text(text) => Output::text(text, max),
        }
    }
}

/// [`write_record`] with what the call cost ([`Cost`]); with none, the same bytes.
pub fn write_record_with(out: &mut Vec<u8>, id: &PipelineId, record: Record<'_>, cost: &Cost<'_>) {
    write_record_kept(out, id, record, None, cost);
}

/// [`write_record_with`] keeping what the model answered (`output`, and `output_truncated` when
/// it was cut), written after the verdict or error; with no output, the same bytes.
pub fn write_record_kept(
    out: &mut Vec<u8>,
    id: &PipelineId,
    record: Record<'_>,
    output: Option<&Output>,
    cost: &Cost<'_>,
) {
    let text = |s: &str| serde_json::to_string(s).expect("a string serializes");
    out.extend_from_slice(b"{\"pipeline_id\":");
    if id.numeric {
        out.extend_from_slice(id.text.as_bytes());
    } else {
        out.extend_from_slice(text(&id.text).as_bytes());
    }
    match record {
        Record::Verdict(json) => {
            out.extend_from_slice(b",\"verdict\":");
            out.extend_from_slice(json.as_bytes());
        }
        Record::Error(e) => {
            out.extend_from_slice(b",\"error\":");
            out.extend_from_slice(text(e).as_bytes());
        }
    }
    if let Some(output) = output {
        out.extend_from_slice(b",\"output\":");
        out.extend_from_slice(output.json.as_bytes());
        if output.truncated {
            out.extend_from_slice(b",\"output_truncated\":true");
        }
    }
    if let Some(ms) = cost.latency_ms.filter(|ms| ms.is_finite() && *ms >= 0.0) {
        out.extend_from_slice(format!(",\"latency_ms\":{:.1}", ms).as_bytes());
    }
    if cost.prompt_tokens.is_some() || cost.completion_tokens.is_some() {
        out.extend_from_slice(b",\"usage\":{");
        let mut first = true;
        for (name, n) in [
            ("prompt_tokens", cost.prompt_tokens),
            ("completion_tokens", cost.completion_tokens),
        ] {
            if let Some(n) = n {
                if !first {
                    out.push(b',');
                }
                first = false;
                out.extend_from_slice(format!("\"{name}\":{n}").as_bytes());
            }
        }
        out.push(b'}');
    }
    if let Some(a) = cost.attempts {
        out.extend_from_slice(format!(",\"attempts\":{a}").as_bytes());
    }
    if let Some(m) = cost.metrics {
        out.extend_from_slice(b",\"metrics\":");
        out.extend_from_slice(m.as_bytes());
    }
    if let Some(t) = cost.target {
        out.extend_from_slice(b",\"target\":");
        out.extend_from_slice(text(t).as_bytes());
    }
    out.extend_from_slice(b"}\n");
}

/// The answers as a JSONL verdict file: one record per answer ([`write_record`]), in the order
/// given.
pub fn records_jsonl<'a>(answers: impl IntoIterator<Item = (&'a PipelineId, &'a Answer)>) -> Vec<u8> {
    records_jsonl_kept(answers.into_iter().map(|(id, answer)| (id, answer, None)))
}

/// [`records_jsonl`] with what the model answered beside each answer (`output`, already
/// bounded: [`Output`]); with none, the same bytes.
pub fn records_jsonl_kept<'a>(
    answers: impl IntoIterator<Item = (&'a PipelineId, &'a Answer, Option<&'a Output>)>,
) -> Vec<u8> {
    let mut out = Vec::new();
    let none = Cost::default();
    for (id, answer, output) in answers {
        match answer {
            Answer::Verdict(v) => {
                let json = serde_json::to_string(v).expect("a string serializes");
                write_record_kept(&mut out, id, Record::Verdict(&json), output, &none);
            }
            Answer::Missing => write_record_kept(&mut out, id, Record::Verdict("null"), output, &none),
            Answer::Error(e) => write_record_kept(&mut out, id, Record::Error(e), output, &none),
        }
    }
    out
}

/// The answers read as the verdict file [`records_jsonl`] writes (`name` is the file name the
/// report lists); the file's bytes are returned too, so a caller can save it and give it to
/// `deploy-gate evaluate` for the same report.
pub fn verdicts_of<'a>(
    role: Role,
    name: &str,
    answers: impl IntoIterator<Item = (&'a PipelineId, &'a Answer)>,
) -> Result<(Verdicts, Vec<u8>), InputError> {
    verdicts_of_kept(role, name, answers.into_iter().map(|(id, answer)| (id, answer, None)))
}

/// [`verdicts_of`] with what the model answered beside each answer ([`records_jsonl_kept`]).
pub fn verdicts_of_kept<'a>(
    role: Role,
    name: &str,
    answers: impl IntoIterator<Item = (&'a PipelineId, &'a Answer, Option<&'a Output>)>,
) -> Result<(Verdicts, Vec<u8>), InputError> {
    let bytes = records_jsonl_kept(answers);
    let verdicts = parse_verdicts(role, name, &bytes)?;
    Ok((verdicts, bytes))
}

/// The string id `"i"` of case `i` in a test set made by position.
fn position_id(i: usize) -> PipelineId {
    PipelineId {
        text: Arc::from(i.to_string()),
        numeric: false,
    }
}

/// A test set of the given expected verdicts (as text), case `i` having the pipeline id `"i"`.
pub fn expected_test_set(expected: &[String]) -> TestSet {
    let null = || RawValue::from_string("null".to_owned()).expect("null is JSON");
    let cases = expected
        .iter()
        .enumerate()
        .map(|(i, text)| TestCase {
            pipeline_id: position_id(i),
            template_id: null(),
            input_text: null(),
            expected_verdict: RawValue::from_string(serde_json::to_string(text).expect("a string serializes"))
                .expect("a JSON string"),
            expected_stage_outputs: StageOutputs::default(),
            episode_reward: null(),
            input_hash: None,
        })
        .collect::<Vec<_>>();
    TestSet {
        candidates: cases.len(),
        cases,
        sampled: false,
        insufficient: false,
        policy: Default::default(),
        warnings: Vec::new(),
        twins: Vec::new(),
    }
}

/// The reference's `score_model` over cases given by position: `expected[i]` is case `i`'s
/// expected verdict as text and `answers[i]` what the model gave for it. The pass rate
/// rounded as the reference rounds it (`None` for no cases), and the number of cases passed.
pub fn score_answers(expected: &[String], answers: &[Answer]) -> Result<(Option<f64>, usize), InputError> {
    assert_eq!(expected.len(), answers.len(), "one answer per case");
    let ids: Vec<PipelineId> = (0..answers.len()).map(position_id).collect();
    let (verdicts, _) = verdicts_of(Role::NewVerdicts, "answers", ids.iter().zip(answers.iter()))?;
    let test_set = expected_test_set(expected);
    let counts = crate::scoring::score(&test_set, &verdicts, &verdicts).new;
    Ok((counts.pass_rate, counts.passed))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn texts(v: &[&str]) -> Vec<String> {
        v.iter().map(|s| (*s).to_owned()).collect()
    }

    #[test]
    fn answers_are_written_as_a_verdict_file_writes_them() {
        let a = [
            Answer::Verdict("APPROVE".into()),
            Answer::Missing,
            Answer::Error("model \"crashed\"".into()),
        ];
        let id = |text: &str, numeric| PipelineId {
            text: Arc::from(text),
            numeric,
        };
        let ids = [id("p1", false), id("5", true), id("5", false)];
        let bytes = records_jsonl(ids.iter().zip(a.iter()));
        assert_eq!(
            String::from_utf8(bytes).unwrap(),
            "{\"pipeline_id\":\"p1\",\"verdict\":\"APPROVE\"}\n\
             {\"pipeline_id\":5,\"verdict\":null}\n\
             {\"pipeline_id\":\"5\",\"error\":\"model \\\"crashed\\\"\"}\n"
        );
    }

    #[test]
    fn the_reference_runner_rules_score_by_position() {
        // Case-insensitive (full Unicode upper-casing), an error and a miss fail, and ids that
        // a hand-made test set leaves out or repeats do not matter.
        let expected = texts(&["APPROVE", "PASS", "STRASSE", "COMPLETE", "PASS"]);
        let answers = [
            Answer::Verdict("approve".into()),
            Answer::Error("boom".into()),
            Answer::Verdict("straße".into()),
            Answer::Missing,
            Answer::Verdict("".into()),
        ];
        // 2 of 5.
        assert_eq!(score_answers(&expected, &answers).unwrap(), (Some(0.4), 2));
        // 1/3 is rounded as Python's round(x, 4).
        let expected = texts(&["PASS", "PASS", "PASS"]);
        let answers = [Answer::Verdict("PASS".into()), Answer::Missing, Answer::Missing];
        assert_eq!(score_answers(&expected, &answers).unwrap(), (Some(0.3333), 1));
        assert_eq!(score_answers(&[], &[]).unwrap(), (None, 0));
    }

    #[test]
    fn answers_count_as_missing_and_errored_apart() {
        let ts = expected_test_set(&texts(&["PASS", "PASS", "PASS"]));
        let answers = [
            Answer::Verdict("pass".into()),
            Answer::Missing,
            Answer::Error("e".into()),
        ];
        let ids: Vec<PipelineId> = (0..3).map(position_id).collect();
        let (v, _) = verdicts_of(Role::OldVerdicts, "old", ids.iter().zip(answers.iter())).unwrap();
        let s = crate::scoring::score(&ts, &v, &v);
        assert_eq!((s.old.passed, s.old.missing, s.old.errored, s.old.wrong), (1, 1, 1, 0));
    }
}

#[cfg(test)]
mod output_tests {
    use super::*;

    #[test]
    fn a_kept_output_is_one_line_for_every_reader_and_reads_back_the_same() {
        let tricky = "a\u{2028}b\u{2029}c\u{85}d\r\ne\"f\\";
        for o in [
            Output::text(tricky, 1000),
            Output::value(&serde_json::json!({"t": tricky, "n": [1, 2]}), 1000),
            Output::raw(
                &serde_json::from_str::<Box<RawValue>>("{\"t\":\r \"a\\u2028b\"}").unwrap(),
                1000,
            ),
            Output::raw(
                &serde_json::from_str::<Box<RawValue>>("{\"t\":\"a\u{2028}b\"}").unwrap(),
                1000,
            ),
        ] {
            assert!(
                !o.json.contains(['\n', '\r', '\u{2028}', '\u{2029}', '\u{85}']),
                "{}",
                o.json
            );
            let back: serde_json::Value = serde_json::from_str(&o.json).unwrap();
            assert!(
                back == serde_json::json!(tricky)
                    || back["t"] == serde_json::json!(tricky)
                    || back["t"] == "a\u{2028}b",
                "{back}"
            );
        }
    }

    #[test]
    fn records_without_an_output_keep_their_bytes() {
        let id = PipelineId {
            text: Arc::from("p1"),
            numeric: false,
        };
        let mut with = Vec::new();
        write_record_kept(&mut with, &id, Record::Verdict("\"PASS\""), None, &Cost::default());
        let mut before = Vec::new();
        write_record(&mut before, &id, Record::Verdict("\"PASS\""));
        assert_eq!(with, before);
        assert_eq!(before, b"{\"pipeline_id\":\"p1\",\"verdict\":\"PASS\"}\n");
    }
}
