//! The worker protocol and resuming: reading the test set into cases, reading a worker's
//! answer line, the record written for each case, and reading an output file an earlier run
//! left, to resume it.
//!
//! The protocol: a worker reads one test case per line on stdin (the test set's line, byte for
//! byte) and writes one line per case on stdout, in order: `{"verdict": V}` (any JSON value,
//! kept as written) or `{"error": "text"}`, optionally with `"pipeline_id"` echoing the case's
//! id (then checked), `"metrics"`, an object of named finite numbers
//! (`{"cost_usd": 0.012, "steps": 7}`) that the record carries for the policy's guardrails, and
//! `"output"`, what the model answered (any JSON value: a text, a response object, a
//! transcript), which the record keeps for the reviewer, bounded ([`Output`]).
//! Anything else is not an answer ([`BadAnswer`]): the case is errored, never passed. The
//! output is JSONL of `{"pipeline_id": ID, "verdict": V}` or `{"pipeline_id": ID, "error":
//! "text"}` (then `"output"` and `"metrics"` when the worker gave them), the id written as the
//! test set wrote it (an integer stays an integer), which [`crate::verdicts`] reads as any
//! verdict file.

use super::records::{write_record_kept, Cost, Output, Record};
use crate::audit::PipelineId;
use serde::de::{self, Deserializer, MapAccess, Visitor};
use serde::Deserialize;
use serde_json::value::RawValue;
use std::collections::HashMap;
use std::fmt;
use std::ops::Range;

/// A file `run` reads is unusable: the message names the file and, where known, the line.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{file}{}: {message}", line.map(|l| format!(" line {l}")).unwrap_or_default())]
pub struct RunFileError {
    /// The file as the user named it.
    pub file: String,
    /// 1-based line number, when the problem is on one line.
    pub line: Option<u64>,
    /// What is wrong, lowercase.
    pub message: String,
}

impl RunFileError {
    fn at(file: &str, line: u64, message: impl Into<String>) -> Self {
        RunFileError {
            file: file.to_owned(),
            line: Some(line),
            message: message.into(),
        }
    }
}

/// One test case: its id and where its line is in the test-set bytes (without the newline).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Case {
    /// The case's pipeline id, with its JSON type.
    pub id: PipelineId,
    /// The line's bytes in the test set, sent to the worker as they are.
    pub line: Range<usize>,
}

/// The test set's cases, in file order, and the case of each id.
#[derive(Debug, Clone, Default)]
pub struct Cases {
    /// The cases, in the order of the file.
    pub cases: Vec<Case>,
    index: HashMap<PipelineId, usize>,
}

impl Cases {
    /// The position of the case with this id (string and integer ids are different ids).
    pub fn position(&self, id: &PipelineId) -> Option<usize> {
        self.index.get(id).copied()
    }

    /// The number of cases.
    pub fn len(&self) -> usize {
        self.cases.len()
    }

    /// True when there is no case.
    pub fn is_empty(&self) -> bool {
        self.cases.is_empty()
    }
}

/// A `pipeline_id` value read with its JSON type: a non-empty string or an integer.
struct IdValue(Result<PipelineId, &'static str>);

impl<'de> Deserialize<'de> for IdValue {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = IdValue;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a pipeline id")
            }
            fn visit_str<E: de::Error>(self, s: &str) -> Result<IdValue, E> {
                Ok(IdValue(if s.is_empty() {
                    Err("an empty string")
                } else {
                    Ok(PipelineId {
                        text: s.into(),
                        numeric: false,
                    })
                }))
            }
            fn visit_i64<E: de::Error>(self, n: i64) -> Result<IdValue, E> {
                Ok(IdValue(Ok(PipelineId {
                    text: n.to_string().into(),
                    numeric: true,
                })))
            }
            fn visit_u64<E: de::Error>(self, n: u64) -> Result<IdValue, E> {
                Ok(IdValue(Ok(PipelineId {
                    text: n.to_string().into(),
                    numeric: true,
                })))
            }
            fn visit_f64<E: de::Error>(self, _: f64) -> Result<IdValue, E> {
                Ok(IdValue(Err("a number that is not an integer")))
            }
            fn visit_bool<E: de::Error>(self, _: bool) -> Result<IdValue, E> {
                Ok(IdValue(Err("a boolean")))
            }
            fn visit_unit<E: de::Error>(self) -> Result<IdValue, E> {
                Ok(IdValue(Err("null")))
            }
            fn visit_seq<A: de::SeqAccess<'de>>(self, mut a: A) -> Result<IdValue, A::Error> {
                while a.next_element::<de::IgnoredAny>()?.is_some() {}
                Ok(IdValue(Err("an array")))
            }
            fn visit_map<A: MapAccess<'de>>(self, mut a: A) -> Result<IdValue, A::Error> {
                while a.next_entry::<de::IgnoredAny, de::IgnoredAny>()?.is_some() {}
                Ok(IdValue(Err("an object")))
            }
        }
        d.deserialize_any(V)
    }
}

/// The id of a case or record, as the message names it: `7 (an integer)` or `"a-7"`.
pub fn describe_id(id: &PipelineId) -> String {
    if id.numeric {
        format!("{} (an integer)", id.text)
    } else {
        serde_json::to_string(&*id.text).unwrap_or_default()
    }
}

/// The lines of a file with their 1-based numbers and ranges (without `\n` or a final `\r`),
/// skipping blank lines; the last item says whether the line ended with a newline.
fn lines(bytes: &[u8]) -> impl Iterator<Item = (u64, Range<usize>, bool)> + '_ {
    let mut start = 0;
    let mut number = 0u64;
    std::iter::from_fn(move || loop {
        if start >= bytes.len() {
            return None;
        }
        number += 1;
        let (end, next, ended) = match memchr::memchr(b'\n', &bytes[start..]) {
            Some(i) => (start + i, start + i + 1, true),
            None => (bytes.len(), bytes.len(), false),
        };
        let mut line = start..end;
        if ended && line.end > line.start && bytes[line.end - 1] == b'\r' {
            line.end -= 1;
        }
        start = next;
        if bytes[line.clone()].iter().all(u8::is_ascii_whitespace) && ended {
            continue;
        }
        return Some((number, line, ended));
    })
}

/// The `pipeline_id` of a test-set line (the rest of the line is checked to be JSON and kept).
#[derive(Deserialize)]
struct CaseHead {
    pipeline_id: Option<IdValue>,
}

/// Reads a test set (JSONL as `deploy-gate test-set` writes it): each line a JSON object with a
/// `pipeline_id` (a non-empty string or an integer), no id twice. Blank lines are skipped.
pub fn read_cases(file: &str, bytes: &[u8]) -> Result<Cases, RunFileError> {
    let mut cases = Cases::default();
    let mut first_line = HashMap::new();
    for (number, range, _) in lines(bytes) {
        let line = &bytes[range.clone()];
        let bad = |m: String| RunFileError::at(file, number, m);
        if line.first() != Some(&b'{') {
            return Err(bad("not a JSON object (a test case is one JSON object per line)".into()));
        }
        let head: CaseHead = serde_json::from_slice(line).map_err(|e| bad(format!("not a valid test case: {e}")))?;
        let id = match head.pipeline_id {
            None => return Err(bad("no pipeline_id".into())),
            Some(IdValue(Err(kind))) => {
                return Err(bad(format!(
                    "pipeline_id is {kind}, expected a non-empty string or integer"
                )))
            }
            Some(IdValue(Ok(id))) => id,
        };
        if let Some(first) = first_line.insert(id.clone(), number) {
            return Err(bad(format!(
                "pipeline_id {} appears again (first at line {first}); each case needs its own id",
                describe_id(&id)
            )));
        }
        cases.index.insert(id.clone(), cases.cases.len());
        cases.cases.push(Case { id, line: range });
    }
    Ok(cases)
}

/// What a worker answered for a case.
#[derive(Debug)]
pub enum Answer {
    /// A verdict, exactly as the worker wrote it (any JSON value).
    Verdict(Box<RawValue>),
    /// The worker could not answer; its message.
    Error(String),
}

/// A worker's answer to a case: its verdict or error, the `metrics` it gave, and what the
/// model answered (`output`).
#[derive(Debug)]
pub struct Reply {
    /// The verdict or the error.
    pub answer: Answer,
    /// `metrics` as the JSON text the record carries: an object of named finite numbers, each
    /// name once, the numbers as JSON writes them (`7`, `0.012`), in the worker's order.
    pub metrics: Option<String>,
    /// `output` exactly as the worker wrote it (any JSON value), before it is bounded.
    pub output: Option<Box<RawValue>>,
}

/// A worker's line is not an answer: the case is errored with this message.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum BadAnswer {
    /// Not UTF-8.
    #[error("the answer is not UTF-8")]
    NotUtf8,
    /// Not JSON, or JSON but not an object, or a key given twice.
    #[error("the answer is not a JSON object: {0}")]
    NotObject(String),
    /// Neither `verdict` nor `error`.
    #[error("the answer has neither \"verdict\" nor \"error\"")]
    Neither,
    /// Both `verdict` and `error`.
    #[error("the answer has both \"verdict\" and \"error\"")]
    Both,
    /// A key other than `verdict`, `error`, `pipeline_id`, `metrics` and `output`.
    #[error("the answer has the key {0:?}; only \"verdict\" or \"error\" (and \"pipeline_id\", \"metrics\", \"output\") are read")]
    UnknownKey(String),
    /// `metrics` is not an object of named finite numbers, each name once.
    #[error("the answer's \"metrics\" {0}")]
    Metrics(String),
    /// `error` is not a string.
    #[error("the answer's \"error\" is not a string")]
    ErrorNotText,
    /// The echoed `pipeline_id` is not the case's.
    #[error("the answer is for pipeline_id {answered}, but the case sent was {sent}")]
    OtherCase {
        /// The id in the answer, described.
        answered: String,
        /// The case's id, described.
        sent: String,
    },
    /// The worker wrote a second line before it was sent the next case.
    #[error("the worker wrote more than one line for this case")]
    ExtraLine,
    /// The line is longer than the shell reads.
    #[error("the answer is longer than {0} bytes")]
    TooLong(usize),
}

/// The keys of an answer or of a record, each at most once.
#[derive(Default)]
struct Fields {
    id: Option<IdValue>,
    verdict: Option<Box<RawValue>>,
    error: Option<Box<RawValue>>,
    unknown: Option<String>,
    /// The first of `latency_ms`, `usage`, `attempts`, `target`, `output_truncated`: what a
    /// record of a run carries besides its verdict, which a worker's answer may not.
    cost_key: Option<String>,
    /// `output`: what the model answered, as written.
    output: Option<Box<RawValue>>,
    /// The `target` of a record (its target's digest), when a string.
    target: Option<String>,
    /// `metrics`: its JSON text as written on a record, or what is wrong with it.
    metrics: Option<Result<String, String>>,
}

/// A `metrics` value: an object of named finite numbers, each name once, as the JSON text a
/// record carries (what [`crate::cost`] reads back as the same numbers), or what is wrong.
/// JSON has no NaN or infinity, and a number too large for a double is not JSON that parses:
/// both are refused before this, as the line's syntax.
struct MetricsValue(Result<String, String>);

impl<'de> Deserialize<'de> for MetricsValue {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        fn not_object<T>() -> Result<MetricsValue, T> {
            Ok(MetricsValue(Err("is not a JSON object of named numbers".into())))
        }
        impl<'de> Visitor<'de> for V {
            type Value = MetricsValue;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("an object of named numbers")
            }
            fn visit_bool<E: de::Error>(self, _: bool) -> Result<MetricsValue, E> {
                not_object()
            }
            fn visit_i64<E: de::Error>(self, _: i64) -> Result<MetricsValue, E> {
                not_object()
            }
            fn visit_u64<E: de::Error>(self, _: u64) -> Result<MetricsValue, E> {
                not_object()
            }
            fn visit_f64<E: de::Error>(self, _: f64) -> Result<MetricsValue, E> {
                not_object()
            }
            fn visit_str<E: de::Error>(self, _: &str) -> Result<MetricsValue, E> {
                not_object()
            }
            fn visit_unit<E: de::Error>(self) -> Result<MetricsValue, E> {
                not_object()
            }
            fn visit_seq<A: de::SeqAccess<'de>>(self, mut a: A) -> Result<MetricsValue, A::Error> {
                while a.next_element::<de::IgnoredAny>()?.is_some() {}
                not_object()
            }
            fn visit_map<A: MapAccess<'de>>(self, mut a: A) -> Result<MetricsValue, A::Error> {
                let mut names: std::collections::HashSet<String> = std::collections::HashSet::new();
                let mut text = String::from("{");
                let mut problem = None;
                while let Some(name) = a.next_key::<String>()? {
                    let value: serde_json::Value = a.next_value()?;
                    if problem.is_some() {
                        continue;
                    }
                    if names.contains(&name) {
                        problem = Some(format!("has `{name}` twice"));
                        continue;
                    }
                    let number = match value {
                        serde_json::Value::Number(n) if n.as_f64().is_some_and(f64::is_finite) => n,
                        other => {
                            let kind = match other {
                                serde_json::Value::Null => "null",
                                serde_json::Value::Bool(_) => "a boolean",
                                serde_json::Value::String(_) => "a string",
                                serde_json::Value::Array(_) => "an array",
                                serde_json::Value::Object(_) => "an object",
                                serde_json::Value::Number(_) => "not finite",
                            };
                            problem = Some(format!("`{name}` is {kind}, expected a finite number"));
                            continue;
                        }
                    };
                    if !names.is_empty() {
                        text.push(',');
                    }
                    text.push_str(&serde_json::to_string(&name).expect("a string serializes"));
                    text.push(':');
                    text.push_str(&number.to_string());
                    names.insert(name);
                }
                text.push('}');
                Ok(MetricsValue(problem.map_or(Ok(text), Err)))
            }
        }
        d.deserialize_any(V)
    }
}

impl<'de> Deserialize<'de> for Fields {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Fields;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a JSON object")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut a: A) -> Result<Fields, A::Error> {
                let mut f = Fields::default();
                let mut seen = 0u8;
                while let Some(key) = a.next_key::<std::borrow::Cow<'de, str>>()? {
                    let twice = || de::Error::custom(format_args!("the key {key:?} appears twice"));
                    match &*key {
                        "pipeline_id" if f.id.is_some() => return Err(twice()),
                        "pipeline_id" => f.id = Some(a.next_value()?),
                        "verdict" if f.verdict.is_some() => return Err(twice()),
                        "verdict" => f.verdict = Some(a.next_value()?),
                        "error" if f.error.is_some() => return Err(twice()),
                        "error" => f.error = Some(a.next_value()?),
                        "metrics" if f.metrics.is_some() => return Err(twice()),
                        "metrics" => f.metrics = Some(a.next_value::<MetricsValue>()?.0),
                        "output" if f.output.is_some() => return Err(twice()),
                        "output" => f.output = Some(a.next_value()?),
                        "latency_ms" | "usage" | "attempts" | "target" | "output_truncated" => {
                            let bit = match &*key {
                                "latency_ms" => 1u8,
                                "usage" => 2,
                                "attempts" => 4,
                                "output_truncated" => 16,
                                _ => 8,
                            };
                            if seen & bit != 0 {
                                return Err(twice());
                            }
                            seen |= bit;
                            if bit == 8 {
                                f.target = Some(match a.next_value::<serde_json::Value>()? {
                                    serde_json::Value::String(t) => t,
                                    other => other.to_string(),
                                });
                            } else {
                                a.next_value::<de::IgnoredAny>()?;
                            }
                            f.cost_key.get_or_insert_with(|| key.into_owned());
                        }
                        _ => {
                            a.next_value::<de::IgnoredAny>()?;
                            f.unknown.get_or_insert_with(|| key.into_owned());
                        }
                    }
                }
                Ok(f)
            }
        }
        d.deserialize_map(V)
    }
}

/// Reads the fields of one answer or record line.
fn read_fields(line: &[u8]) -> Result<Fields, BadAnswer> {
    let text = std::str::from_utf8(line).map_err(|_| BadAnswer::NotUtf8)?;
    serde_json::from_str::<Fields>(text).map_err(|e| {
        // Python's json.dumps writes a NaN or an infinity as these words, which are not JSON.
        let hint = ["NaN", "Infinity"].iter().any(|w| text.contains(w));
        BadAnswer::NotObject(if hint {
            format!("{e} (JSON has no NaN or Infinity: a metric must be a finite number)")
        } else {
            e.to_string()
        })
    })
}

/// The verdict or error of checked fields, and their metrics.
fn outcome(f: Fields) -> Result<(Option<IdValue>, Reply), BadAnswer> {
    if let Some(key) = f.unknown {
        return Err(BadAnswer::UnknownKey(key));
    }
    let metrics = f.metrics.transpose().map_err(BadAnswer::Metrics)?;
    let answer = match (f.verdict, f.error) {
        (Some(_), Some(_)) => return Err(BadAnswer::Both),
        (None, None) => return Err(BadAnswer::Neither),
        (Some(v), None) => Answer::Verdict(v),
        (None, Some(e)) => match serde_json::from_str::<String>(e.get()) {
            Ok(text) => Answer::Error(text),
            Err(_) => return Err(BadAnswer::ErrorNotText),
        },
    };
    Ok((
        f.id,
        Reply {
            answer,
            metrics,
            output: f.output,
        },
    ))
}

/// Reads a worker's answer line (without its newline) to the case `id`.
pub fn parse_answer(line: &[u8], id: &PipelineId) -> Result<Reply, BadAnswer> {
    let mut fields = read_fields(line)?;
    if let Some(key) = fields.cost_key.take() {
        fields.unknown.get_or_insert(key);
    }
    let (echoed, reply) = outcome(fields)?;
    match echoed {
        None => Ok(reply),
        Some(IdValue(Ok(echoed))) if echoed == *id => Ok(reply),
        Some(IdValue(Ok(echoed))) => Err(BadAnswer::OtherCase {
            answered: describe_id(&echoed),
            sent: describe_id(id),
        }),
        Some(IdValue(Err(kind))) => Err(BadAnswer::OtherCase {
            answered: kind.to_owned(),
            sent: describe_id(id),
        }),
    }
}

/// The output record of a case, one line ending in `\n`: the id as the test set wrote it, then
/// the verdict as the worker wrote it, or the error, then what the model answered (`output`,
/// bounded to `max_output` bytes; `None`: not kept), then the metrics it gave.
pub fn record_line(id: &PipelineId, reply: &Reply, max_output: Option<usize>) -> String {
    let mut out = Vec::new();
    let record = match &reply.answer {
        Answer::Verdict(verdict) => Record::Verdict(verdict.get()),
        Answer::Error(error) => Record::Error(error),
    };
    let cost = Cost {
        metrics: reply.metrics.as_deref(),
        ..Cost::default()
    };
    let output = match (&reply.output, max_output) {
        (Some(o), Some(max)) => Some(Output::raw(o, max)),
        _ => None,
    };
    write_record_kept(&mut out, id, record, output.as_ref(), &cost);
    String::from_utf8(out).expect("a record is UTF-8")
}

/// What an output file already holds.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Resumed {
    /// The cases with a record (their positions in [`Cases`]) and each record's line (without
    /// the newline), in file order.
    pub done: Vec<(usize, Range<usize>)>,
    /// How many of them are errors.
    pub errored: usize,
    /// The length of the file up to its last whole line: bytes after it are a torn line.
    pub whole_len: usize,
    /// The line number of a torn last line (no newline: a write the run did not finish),
    /// which is dropped and its case run again.
    pub torn_line: Option<u64>,
}

/// Reads the output file of an earlier run of the same test set: every whole line must be a
/// record of a case of `cases` (same id, same JSON type), at most one per case. A last line
/// without its newline is torn (see [`Resumed::torn_line`]). Each record's `target` must be
/// `target` (the digest of the endpoint file this run asks; `None`: a worker program's run,
/// whose records carry none): an output is resumed only by the endpoint file that began it.
pub fn read_resume(file: &str, bytes: &[u8], cases: &Cases, target: Option<&str>) -> Result<Resumed, RunFileError> {
    let mut resumed = Resumed::default();
    let mut seen: HashMap<usize, u64> = HashMap::new();
    for (number, range, ended) in lines(bytes) {
        if !ended {
            resumed.torn_line = Some(number);
            break;
        }
        let bad = |m: String| RunFileError::at(file, number, m);
        let fields =
            read_fields(&bytes[range.clone()]).map_err(|e| bad(format!("not a record of `deploy-gate run`: {e}")))?;
        if fields.target.as_deref() != target {
            return Err(bad(match (&fields.target, target) {
                (Some(theirs), Some(ours)) => format!(
                    "this record was made by another target ({theirs}; this run's is {ours}): give another output file, or run the target that began it"
                ),
                (Some(theirs), None) => format!(
                    "this record was made by a target file ({theirs}), not by a worker program: give another --out"
                ),
                _ => format!(
                    "this record was made without a target file (by a worker program); this run's target is {}: give another output file",
                    target.unwrap_or_default()
                ),
            }));
        }
        if let Some(Err(why)) = &fields.metrics {
            return Err(bad(format!("not a record of `deploy-gate run`: metrics {why}")));
        }
        let (id, reply) = outcome(fields).map_err(|e| bad(format!("not a record of `deploy-gate run`: {e}")))?;
        let id = match id {
            Some(IdValue(Ok(id))) => id,
            Some(IdValue(Err(kind))) => return Err(bad(format!("pipeline_id is {kind}"))),
            None => return Err(bad("not a record of `deploy-gate run`: no pipeline_id".into())),
        };
        let Some(position) = cases.position(&id) else {
            return Err(bad(format!(
                "pipeline_id {} is not a case of the test set: this file is the output of another test set; give another --out",
                describe_id(&id)
            )));
        };
        if let Some(first) = seen.insert(position, number) {
            return Err(bad(format!(
                "a second record for pipeline_id {} (first at line {first})",
                describe_id(&id)
            )));
        }
        if matches!(reply.answer, Answer::Error(_)) {
            resumed.errored += 1;
        }
        resumed.done.push((position, range));
    }
    // Everything up to the last newline is whole lines (a torn line is the rest).
    resumed.whole_len = memchr::memrchr(b'\n', bytes).map_or(0, |i| i + 1);
    Ok(resumed)
}

/// The test set `run` read, as scoring takes it: each case's fields as the line wrote them
/// (what `deploy-gate test-set` wrote is what it read back), so that the records a run writes can
/// be scored as `evaluate` scores them (a sequential run deciding while it runs).
pub fn test_set_of(file: &str, bytes: &[u8], cases: &Cases) -> Result<crate::testset::TestSet, RunFileError> {
    use crate::testset::{StageOutputs, TestCase, TestSet};
    let null = || RawValue::from_string("null".to_owned()).expect("null is JSON");
    let mut out = Vec::with_capacity(cases.len());
    let mut texts: HashMap<&str, (bool, bool)> = HashMap::new();
    for (number, case) in cases.cases.iter().enumerate() {
        let line = &bytes[case.line.clone()];
        let bad = |m: String| RunFileError::at(file, number as u64 + 1, m);
        let mut fields: HashMap<String, Box<RawValue>> =
            serde_json::from_slice(line).map_err(|e| bad(format!("not a valid test case: {e}")))?;
        let stages = match fields.remove("expected_stage_outputs") {
            None => StageOutputs::default(),
            Some(raw) => match serde_json::from_str::<serde_json::Map<String, serde_json::Value>>(raw.get()) {
                Ok(map) => StageOutputs(
                    map.into_iter()
                        .map(|(k, v)| (k, RawValue::from_string(v.to_string()).expect("JSON")))
                        .collect(),
                ),
                Err(_) => StageOutputs::default(),
            },
        };
        let entry = texts.entry(case.id.text.as_ref()).or_default();
        if case.id.numeric {
            entry.0 = true;
        } else {
            entry.1 = true;
        }
        out.push(TestCase {
            pipeline_id: case.id.clone(),
            template_id: fields.remove("template_id").unwrap_or_else(null),
            input_text: fields.remove("input_text").unwrap_or_else(null),
            expected_verdict: fields.remove("expected_verdict").unwrap_or_else(null),
            expected_stage_outputs: stages,
            episode_reward: fields.remove("episode_reward").unwrap_or_else(null),
            input_hash: fields.remove("input_hash"),
        });
    }
    let twins = cases
        .cases
        .iter()
        .enumerate()
        .filter(|(_, c)| texts.get(c.id.text.as_ref()) == Some(&(true, true)))
        .map(|(i, _)| i)
        .collect();
    Ok(TestSet {
        candidates: out.len(),
        cases: out,
        sampled: false,
        insufficient: false,
        policy: Default::default(),
        warnings: Vec::new(),
        twins,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn id(text: &str, numeric: bool) -> PipelineId {
        PipelineId {
            text: text.into(),
            numeric,
        }
    }

    const SET: &[u8] = b"{\"pipeline_id\": 7, \"input_text\": \"a\"}\n\n{\"pipeline_id\": \"7\", \"input_text\": \"b\"}\r\n{\"pipeline_id\":\"p\\u0031\"}";

    #[test]
    fn reads_cases_with_their_id_type() {
        let cases = read_cases("t.jsonl", SET).unwrap();
        assert_eq!(cases.len(), 3);
        assert_eq!(cases.cases[0].id, id("7", true));
        assert_eq!(cases.cases[1].id, id("7", false));
        assert_eq!(cases.cases[2].id, id("p1", false));
        assert_eq!(
            &SET[cases.cases[1].line.clone()],
            b"{\"pipeline_id\": \"7\", \"input_text\": \"b\"}"
        );
        assert_eq!(cases.position(&id("7", false)), Some(1));
        assert_eq!(cases.position(&id("p1", true)), None);
    }

    #[test]
    fn test_set_errors_name_the_line() {
        let err = |b: &[u8]| read_cases("t.jsonl", b).unwrap_err().to_string();
        assert_eq!(
            err(b"{\"pipeline_id\": 1}\nnot json\n"),
            "t.jsonl line 2: not a JSON object (a test case is one JSON object per line)"
        );
        assert!(err(b"{\"pipeline_id\": 1\n").starts_with("t.jsonl line 1: not a valid test case: EOF"));
        assert_eq!(err(b"{\"input_text\": 1}\n"), "t.jsonl line 1: no pipeline_id");
        assert_eq!(
            err(b"{\"pipeline_id\": 1.5}\n"),
            "t.jsonl line 1: pipeline_id is a number that is not an integer, expected a non-empty string or integer"
        );
        assert_eq!(
            err(b"{\"pipeline_id\": \"\"}\n"),
            "t.jsonl line 1: pipeline_id is an empty string, expected a non-empty string or integer"
        );
        assert_eq!(
            err(b"{\"pipeline_id\": 3}\n{\"pipeline_id\": 3}\n"),
            "t.jsonl line 2: pipeline_id 3 (an integer) appears again (first at line 1); each case needs its own id"
        );
        assert!(err(b"{\"pipeline_id\": 3, \"pipeline_id\": 4}\n").contains("duplicate field"));
    }

    #[test]
    fn answers_keep_the_verdict_as_written() {
        let p = id("9", true);
        let record = |line: &[u8]| record_line(&p, &parse_answer(line, &p).unwrap(), Some(64));
        assert_eq!(
            record(b"{\"verdict\": \"PASS\"}"),
            "{\"pipeline_id\":9,\"verdict\":\"PASS\"}\n"
        );
        assert_eq!(record(b"{\"verdict\":1e16}"), "{\"pipeline_id\":9,\"verdict\":1e16}\n");
        assert_eq!(record(b"{\"verdict\": null}"), "{\"pipeline_id\":9,\"verdict\":null}\n");
        assert_eq!(
            record(b" {\"verdict\": {\"a\": [1, 2]}} "),
            "{\"pipeline_id\":9,\"verdict\":{\"a\": [1, 2]}}\n"
        );
        assert_eq!(
            record(b"{\"error\": \"no \\\"model\\\"\"}"),
            "{\"pipeline_id\":9,\"error\":\"no \\\"model\\\"\"}\n"
        );
        assert_eq!(
            record(b"{\"pipeline_id\": 9, \"verdict\": true}"),
            "{\"pipeline_id\":9,\"verdict\":true}\n"
        );
        let s = id("a\"b", false);
        assert_eq!(
            record_line(
                &s,
                &Reply {
                    answer: Answer::Error("timeout after 60s".into()),
                    metrics: None,
                    output: None,
                },
                Some(64)
            ),
            "{\"pipeline_id\":\"a\\\"b\",\"error\":\"timeout after 60s\"}\n"
        );
    }

    #[test]
    fn garbage_is_not_an_answer() {
        let p = id("9", true);
        let bad = |line: &[u8]| parse_answer(line, &p).unwrap_err();
        assert_eq!(
            bad(b"PASS"),
            BadAnswer::NotObject("expected value at line 1 column 1".into())
        );
        assert!(matches!(bad(b"[\"PASS\"]"), BadAnswer::NotObject(_)));
        assert!(matches!(bad(b"\"PASS\""), BadAnswer::NotObject(_)));
        assert!(matches!(bad(b"{\"verdict\": \"PASS\""), BadAnswer::NotObject(_)));
        assert!(matches!(
            bad(b"{\"verdict\": 1} {\"verdict\": 2}"),
            BadAnswer::NotObject(_)
        ));
        assert_eq!(bad(b"\xff"), BadAnswer::NotUtf8);
        assert_eq!(bad(b"{}"), BadAnswer::Neither);
        assert_eq!(bad(b"{\"verdict\": 1, \"error\": \"x\"}"), BadAnswer::Both);
        assert_eq!(bad(b"{\"verdit\": 1}"), BadAnswer::UnknownKey("verdit".into()));
        assert_eq!(bad(b"{\"error\": 1}"), BadAnswer::ErrorNotText);
        assert_eq!(
            bad(b"{\"verdict\": 1, \"verdict\": 2}"),
            BadAnswer::NotObject("the key \"verdict\" appears twice at line 1 column 24".into())
        );
        assert_eq!(
            bad(b"{\"pipeline_id\": \"9\", \"verdict\": 1}"),
            BadAnswer::OtherCase {
                answered: "\"9\"".into(),
                sent: "9 (an integer)".into()
            }
        );
        assert_eq!(
            bad(b"{\"pipeline_id\": 8, \"verdict\": 1}").to_string(),
            "the answer is for pipeline_id 8 (an integer), but the case sent was 9 (an integer)"
        );
    }

    #[test]
    fn answers_may_carry_metrics_which_the_record_keeps() {
        let p = id("9", true);
        let record = |line: &[u8]| record_line(&p, &parse_answer(line, &p).unwrap(), Some(64));
        assert_eq!(
            record(b"{\"verdict\": \"PASS\", \"metrics\": {\"cost_usd\": 0.0120, \"steps\": 7, \"t\": -0, \"big\": 1e300}}"),
            "{\"pipeline_id\":9,\"verdict\":\"PASS\",\"metrics\":{\"cost_usd\":0.012,\"steps\":7,\"t\":-0.0,\"big\":1e+300}}\n"
        );
        // Before the verdict, on an error, empty, with an escaped name.
        assert_eq!(
            record(b"{\"metrics\": {\"a\\u0062\": 1.5}, \"error\": \"boom\"}"),
            "{\"pipeline_id\":9,\"error\":\"boom\",\"metrics\":{\"ab\":1.5}}\n"
        );
        assert_eq!(
            record(b"{\"verdict\": 1, \"metrics\": {}}"),
            "{\"pipeline_id\":9,\"verdict\":1,\"metrics\":{}}\n"
        );
        // What the record carries is what the verdict reader reads as the record's metrics.
        let line = record(b"{\"verdict\": \"PASS\", \"metrics\": {\"cost_usd\": 0.012, \"steps\": 7}}");
        let v = crate::verdicts::parse_verdicts(crate::input::Role::OldVerdicts, "v.jsonl", line.as_bytes()).unwrap();
        let (counted, costs) = v.costs_for(&p, false, false);
        assert_eq!((counted, costs.len()), (1, 1));
        let cost = costs[0];
        assert_eq!(cost.metric("cost_usd"), Some(0.012));
        assert_eq!(cost.metric("steps"), Some(7.0));
        assert_eq!(cost.latency_ms, None);
    }

    #[test]
    fn bad_metrics_are_no_answer() {
        let p = id("9", true);
        let bad = |line: &[u8]| parse_answer(line, &p).unwrap_err().to_string();
        assert_eq!(
            bad(b"{\"verdict\": 1, \"metrics\": {\"steps\": 1, \"steps\": 2}}"),
            "the answer's \"metrics\" has `steps` twice"
        );
        assert_eq!(
            bad(b"{\"verdict\": 1, \"metrics\": {\"steps\": \"7\"}}"),
            "the answer's \"metrics\" `steps` is a string, expected a finite number"
        );
        assert_eq!(
            bad(b"{\"verdict\": 1, \"metrics\": {\"s\": null}}"),
            "the answer's \"metrics\" `s` is null, expected a finite number"
        );
        assert_eq!(
            bad(b"{\"verdict\": 1, \"metrics\": {\"s\": [1]}}"),
            "the answer's \"metrics\" `s` is an array, expected a finite number"
        );
        assert_eq!(
            bad(b"{\"verdict\": 1, \"metrics\": [1, 2]}"),
            "the answer's \"metrics\" is not a JSON object of named numbers"
        );
        assert_eq!(
            bad(b"{\"verdict\": 1, \"metrics\": 3}"),
            "the answer's \"metrics\" is not a JSON object of named numbers"
        );
        assert!(
            bad(b"{\"verdict\": 1, \"metrics\": {}, \"metrics\": {}}").contains("the key \"metrics\" appears twice")
        );
        // NaN and infinities (as Python's json.dumps writes them) and overflowing numbers are no JSON.
        let nan = bad(b"{\"verdict\": 1, \"metrics\": {\"s\": NaN}}");
        assert!(nan.starts_with("the answer is not a JSON object: "), "{nan}");
        assert!(
            nan.ends_with("(JSON has no NaN or Infinity: a metric must be a finite number)"),
            "{nan}"
        );
        let inf = bad(b"{\"verdict\": 1, \"metrics\": {\"s\": -Infinity}}");
        assert!(inf.contains("JSON has no NaN or Infinity"), "{inf}");
        let huge = bad(b"{\"verdict\": 1, \"metrics\": {\"s\": 1e400}}");
        assert!(
            huge.starts_with("the answer is not a JSON object: number out of range"),
            "{huge}"
        );
        // What a record of an endpoint carries a worker's answer still may not.
        for key in ["latency_ms", "usage", "attempts", "target"] {
            let line = format!("{{\"verdict\": 1, \"metrics\": {{}}, \"{key}\": 1}}");
            assert_eq!(
                parse_answer(line.as_bytes(), &p).unwrap_err(),
                BadAnswer::UnknownKey(key.into())
            );
        }
    }

    #[test]
    fn answers_may_carry_the_models_output_which_the_record_keeps_bounded() {
        let p = id("9", true);
        let record = |line: &[u8], max: Option<usize>| record_line(&p, &parse_answer(line, &p).unwrap(), max);
        // Any JSON value, as the worker wrote it, after the verdict or error, before metrics.
        assert_eq!(
            record(
                b"{\"output\": {\"role\": \"assistant\", \"tool_calls\": [1]}, \"verdict\": \"PASS\", \"metrics\": {\"s\": 1}}",
                Some(64)
            ),
            "{\"pipeline_id\":9,\"verdict\":\"PASS\",\"output\":{\"role\": \"assistant\", \"tool_calls\": [1]},\"metrics\":{\"s\":1}}\n"
        );
        assert_eq!(
            record(
                b"{\"error\": \"no verdict\", \"output\": \"I think it is fine\"}",
                Some(64)
            ),
            "{\"pipeline_id\":9,\"error\":\"no verdict\",\"output\":\"I think it is fine\"}\n"
        );
        // Longer than the bound: a text cut on a character boundary (é is two bytes), marked.
        assert_eq!(
            record("{\"verdict\": 1, \"output\": \"abcé\"}".as_bytes(), Some(4)),
            "{\"pipeline_id\":9,\"verdict\":1,\"output\":\"abc\",\"output_truncated\":true}\n"
        );
        // An object longer than the bound is kept as the text of its first bytes.
        assert_eq!(
            record(b"{\"verdict\": 1, \"output\": {\"a\": \"xyz\"}}", Some(6)),
            "{\"pipeline_id\":9,\"verdict\":1,\"output\":\"{\\\"a\\\": \",\"output_truncated\":true}\n"
        );
        // Not kept (--no-outputs): the record a worker without output gets.
        assert_eq!(
            record(b"{\"verdict\": 1, \"output\": \"x\"}", None),
            "{\"pipeline_id\":9,\"verdict\":1}\n"
        );
        // Twice, or the mark a record carries, is not an answer.
        let bad = |line: &[u8]| parse_answer(line, &p).unwrap_err();
        assert!(matches!(
            bad(b"{\"verdict\": 1, \"output\": 1, \"output\": 2}"),
            BadAnswer::NotObject(_)
        ));
        assert_eq!(
            bad(b"{\"verdict\": 1, \"output\": \"x\", \"output_truncated\": true}"),
            BadAnswer::UnknownKey("output_truncated".into())
        );
    }

    #[test]
    fn resumes_records_with_outputs() {
        let cases = read_cases("t.jsonl", SET).unwrap();
        let out = b"{\"pipeline_id\":7,\"verdict\":\"PASS\",\"output\":{\"a\":[1]}}\n{\"pipeline_id\":\"7\",\"error\":\"x\",\"output\":\"abc\",\"output_truncated\":true}\n";
        let r = read_resume("v.jsonl", out, &cases, None).unwrap();
        assert_eq!(r.done.iter().map(|d| d.0).collect::<Vec<_>>(), vec![0, 1]);
        assert_eq!(r.errored, 1);
        let endpoint = b"{\"pipeline_id\":\"p1\",\"verdict\":\"PASS\",\"output\":\"PASS, because\",\"latency_ms\":3.5,\"attempts\":1,\"target\":\"sha256:ab\"}\n";
        assert_eq!(
            read_resume("v.jsonl", endpoint, &cases, Some("sha256:ab"))
                .unwrap()
                .done
                .len(),
            1
        );
    }

    #[test]
    fn resumes_records_with_metrics() {
        let cases = read_cases("t.jsonl", SET).unwrap();
        let out = b"{\"pipeline_id\":7,\"verdict\":\"PASS\",\"metrics\":{\"steps\":7}}\n{\"pipeline_id\":\"7\",\"error\":\"x\",\"metrics\":{\"cost_usd\":0.5}}\n";
        let r = read_resume("v.jsonl", out, &cases, None).unwrap();
        assert_eq!(r.done.iter().map(|d| d.0).collect::<Vec<_>>(), vec![0, 1]);
        assert_eq!(r.errored, 1);
        // An endpoint's record with metrics, resumed by its target.
        let endpoint = b"{\"pipeline_id\":\"p1\",\"verdict\":\"PASS\",\"latency_ms\":3.5,\"usage\":{\"prompt_tokens\":9},\"attempts\":1,\"metrics\":{\"s\":1},\"target\":\"sha256:ab\"}\n";
        let r = read_resume("v.jsonl", endpoint, &cases, Some("sha256:ab")).unwrap();
        assert_eq!(r.done.len(), 1);
        assert_eq!(
            read_resume(
                "v.jsonl",
                b"{\"pipeline_id\":7,\"verdict\":1,\"metrics\":{\"s\":true}}\n",
                &cases,
                None
            )
            .unwrap_err()
            .to_string(),
            "v.jsonl line 1: not a record of `deploy-gate run`: metrics `s` is a boolean, expected a finite number"
        );
    }

    #[test]
    fn resumes_from_whole_lines() {
        let cases = read_cases("t.jsonl", SET).unwrap();
        let out = b"{\"pipeline_id\":\"7\",\"verdict\":\"PASS\"}\n{\"pipeline_id\":7,\"error\":\"boom\"}\n{\"pipeline_id\":\"p1\",\"ver";
        let r = read_resume("v.jsonl", out, &cases, None).unwrap();
        assert_eq!(r.done.iter().map(|d| d.0).collect::<Vec<_>>(), vec![1, 0]);
        assert_eq!(&out[r.done[1].1.clone()], b"{\"pipeline_id\":7,\"error\":\"boom\"}");
        assert_eq!(r.errored, 1);
        assert_eq!(r.torn_line, Some(3));
        assert_eq!(r.whole_len, out.len() - b"{\"pipeline_id\":\"p1\",\"ver".len());
        assert!(out[..r.whole_len].ends_with(b"}\n"));

        let whole = &out[..r.whole_len];
        let r = read_resume("v.jsonl", whole, &cases, None).unwrap();
        assert_eq!((r.done.len(), r.torn_line, r.whole_len), (2, None, whole.len()));
        let empty = read_resume("v.jsonl", b"", &cases, None).unwrap();
        assert_eq!(empty, Resumed::default());
        let torn_only = read_resume("v.jsonl", b"{\"pipel", &cases, None).unwrap();
        assert_eq!(
            (torn_only.done.len(), torn_only.torn_line, torn_only.whole_len),
            (0, Some(1), 0)
        );
    }

    #[test]
    fn resume_refuses_another_files_records() {
        let cases = read_cases("t.jsonl", SET).unwrap();
        let err = |b: &[u8]| read_resume("v.jsonl", b, &cases, None).unwrap_err().to_string();
        assert_eq!(
            err(b"{\"pipeline_id\":\"8\",\"verdict\":\"PASS\"}\n"),
            "v.jsonl line 1: pipeline_id \"8\" is not a case of the test set: this file is the output of another test set; give another --out"
        );
        assert_eq!(
            err(b"{\"pipeline_id\":\"p1\",\"verdict\":1}\n{\"pipeline_id\":\"p1\",\"verdict\":2}\n"),
            "v.jsonl line 2: a second record for pipeline_id \"p1\" (first at line 1)"
        );
        assert_eq!(
            err(b"{\"verdict\":1}\n"),
            "v.jsonl line 1: not a record of `deploy-gate run`: no pipeline_id"
        );
        assert!(err(b"garbage\n{\"pipeline_id\":7,\"verdict\":1}\n").starts_with("v.jsonl line 1: not a record"));
    }
}
