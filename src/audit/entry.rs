//! Entries of the audit log and their classification: whose a line is (its pipeline id), what
//! it is (a stage, a completion, or a line skipped for a reason), and the one rule that says
//! whether a line is a completion, which the verdict reader and the role sniffer use too.

use crate::json::{nested_field, read_object_text, NotObject, PyText, Scalar};
use serde::{Serialize, Serializer};

/// The name the real writer gives its completion entries.
pub(crate) const COMPLETE_STAGE_NAME: &str = "__pipeline_complete__";

/// What a line's keys say about its kind, gathered by each reader as it visits the keys and
/// decided by [`Marks::kind`]: the one rule for "is this line a completion?". Pass 1
/// ([`classify_line`]), the verdict reader ([`crate::verdicts`], which ignores stage entries in
/// a JSONL verdict file) and the role sniffer ([`crate::sniff`]) all ask it.
///
/// How they fill it in differs, and is kept as it was: pass 1 takes the last `stage_name` of a
/// line (as the reference's `json.loads` does) and the verdict reader any `stage_name` that
/// names a completion, which only differ on a line that repeats the key; the sniffer reads
/// keys, never values, so it leaves [`Marks::completion_name`] unset (the real writer's
/// completion lines carry `stage_type` and `is_complete` as well).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct Marks {
    /// `is_complete` is present, whatever its value.
    pub is_complete_key: bool,
    /// `stage_name` is `"__pipeline_complete__"`.
    pub completion_name: bool,
    /// `stage_id` or `stage_type` is present.
    pub stage_key: bool,
}

/// What [`Marks::kind`] makes of a line.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum EntryKind {
    /// A completion entry: marked as one (`is_complete`, or the completion `stage_name`), or
    /// a bare `{pipeline_id, verdict}` without stage keys.
    Completion,
    /// A stage entry: stage keys and no completion mark.
    Stage,
    /// Neither (pass 1 skips it as `unrecognized`).
    Unrecognized,
}

impl Marks {
    /// The one rule: a line is a completion when it is marked as one, or has a verdict and no
    /// stage key; otherwise a stage when it has a stage key.
    #[inline]
    pub fn kind(self, has_verdict: bool) -> EntryKind {
        if self.is_complete_key || self.completion_name || (!self.stage_key && has_verdict) {
            EntryKind::Completion
        } else if self.stage_key {
            EntryKind::Stage
        } else {
            EntryKind::Unrecognized
        }
    }

    /// The line has a key only an audit log writes: a stage key or a completion mark (the
    /// sniffer's sign of an audit log; a bare `{pipeline_id, verdict}` is a completion too, but
    /// verdict files hold those).
    pub fn audit_only(self) -> bool {
        self.stage_key || self.is_complete_key || self.completion_name
    }
}

/// Whether a `stage_name` value names a completion.
#[inline]
pub(crate) fn is_completion_name(value: &Scalar<'_>) -> bool {
    matches!(value, Scalar::Str(s) if s == COMPLETE_STAGE_NAME)
}

/// A pipeline id: a non-empty string, or an integer as the reference accepts it.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct PipelineId {
    /// The id as text (an integer in decimal). Shared: the test case, its outcome and the
    /// report's rows hold one copy of a (possibly long) id between them.
    pub text: std::sync::Arc<str>,
    /// True when the log wrote it as a JSON integer (it is written back as one).
    pub numeric: bool,
}

impl PipelineId {
    /// Reads an id from a field value; `Err` names the reason it is unusable.
    ///
    /// As the reference (`if not pid: continue`, then the value is a dict key): a non-empty
    /// string, or an integer other than zero of any size (kept exactly, negative ones too). A
    /// falsy value (`null`, `""`, `0`, `false`) has no id. Floats, `true`, arrays and objects
    /// are refused as `bad_pipeline_id` (see `docs/numbers-and-verdicts.md`, "Id types").
    pub fn from_scalar(value: &Scalar<'_>) -> Result<PipelineId, SkipReason> {
        id_text(value).map(|(text, numeric)| PipelineId {
            text: text.as_ref().into(),
            numeric,
        })
    }

    /// The id's type as a word for messages: `integer` or `string`.
    pub fn type_name(&self) -> &'static str {
        if self.numeric {
            "integer"
        } else {
            "string"
        }
    }

    /// The id as JSON (an integer id as the integer, a string id as the quoted string), for
    /// messages where `5` and `"5"` must be told apart.
    pub fn to_json(&self) -> String {
        if self.numeric && crate::json::is_integer_id_text(&self.text) {
            self.text.to_string()
        } else {
            serde_json::to_string(&*self.text).expect("a string serializes")
        }
    }
}

/// The id text of a `pipeline_id` value without allocating for strings, and whether it is an
/// integer (see [`PipelineId::from_scalar`]).
fn id_text<'a>(value: &'a Scalar<'_>) -> Result<(std::borrow::Cow<'a, str>, bool), SkipReason> {
    match value {
        Scalar::Str(s) if !s.is_empty() => Ok((std::borrow::Cow::Borrowed(s.as_ref()), false)),
        Scalar::Int(i) if *i != 0 => Ok((std::borrow::Cow::Owned(i.to_string()), true)),
        Scalar::BigInt(digits) => Ok((std::borrow::Cow::Borrowed(digits.as_ref()), true)),
        // Python's falsy values, `0.0` and `-0.0` among them (JSON's `-0` is one).
        Scalar::Absent | Scalar::Null | Scalar::Str(_) | Scalar::Int(_) | Scalar::Bool(false) => {
            Err(SkipReason::NoPipelineId)
        }
        Scalar::Float(f) if *f == 0.0 => Err(SkipReason::NoPipelineId),
        Scalar::Float(_) | Scalar::Bool(true) | Scalar::Composite => Err(SkipReason::BadPipelineId),
    }
}

/// [`id_text`] of a value given up: a string is moved, not copied.
pub(crate) fn into_id_text(value: Scalar<'_>) -> Result<std::borrow::Cow<'_, str>, SkipReason> {
    match value {
        Scalar::Str(s) if !s.is_empty() => Ok(s),
        Scalar::BigInt(digits) => Ok(digits),
        other => id_text(&other).map(|(text, _)| std::borrow::Cow::Owned(text.into_owned())),
    }
}

impl std::fmt::Display for PipelineId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.text)
    }
}

impl Serialize for PipelineId {
    /// An integer id as the JSON integer it was (its exact digits, however many), a string id
    /// as the string.
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        if !self.numeric {
            return s.serialize_str(&self.text);
        }
        match self.text.parse::<i128>() {
            Ok(n) => s.serialize_i128(n),
            // Wider than 128 bits: the digits as a raw JSON number (serde_json writes it as it
            // is; every report and test set is written by serde_json).
            Err(_) if crate::json::is_integer_id_text(&self.text) => {
                serde_json::value::RawValue::from_string(self.text.to_string())
                    .map_err(serde::ser::Error::custom)?
                    .serialize(s)
            }
            Err(_) => s.serialize_str(&self.text),
        }
    }
}

/// Why a line of the audit log was skipped.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum SkipReason {
    /// The line is not valid UTF-8.
    InvalidUtf8,
    /// The line is not JSON (garbage, truncated, trailing characters, nested too deep).
    NotJson,
    /// The line is JSON but not an object.
    NotObject,
    /// `pipeline_id` is absent or falsy as in Python: null, `""`, `0`, `0.0`, `false`.
    NoPipelineId,
    /// `pipeline_id` is a float other than zero, `true`, an array or an object.
    BadPipelineId,
    /// The line is longer than the configured maximum.
    LineTooLong,
    /// An object with a pipeline id but neither stage nor completion fields.
    Unrecognized,
}

impl SkipReason {
    /// The reason's name in the report.
    pub fn name(self) -> &'static str {
        match self {
            SkipReason::InvalidUtf8 => "invalid_utf8",
            SkipReason::NotJson => "not_json",
            SkipReason::NotObject => "not_object",
            SkipReason::NoPipelineId => "no_pipeline_id",
            SkipReason::BadPipelineId => "bad_pipeline_id",
            SkipReason::LineTooLong => "line_too_long",
            SkipReason::Unrecognized => "unrecognized",
        }
    }
}

/// The fields of a line that pass 1 needs.
#[derive(Default)]
struct Fields<'a> {
    pipeline_id: Scalar<'a>,
    marks: Marks,
    is_complete: bool,
    verdict: Option<PyText<'a>>,
    error_set: bool,
    input_set: bool,
    snapshot_input_set: bool,
}

/// What pass 1 makes of a line: whose it is and what it is.
pub(crate) struct Entry<'a> {
    id: Scalar<'a>,
    /// Stage or completion.
    pub kind: Kind<'a>,
}

/// The kind of an audit entry.
pub(crate) enum Kind<'a> {
    /// A stage entry; `has_input` when it carries `input` or `state_snapshot.input_text`.
    Stage { has_input: bool },
    /// A completion entry; `done` when `is_complete` is `true` and `error` is unset; its
    /// verdict as the reference makes it text.
    Completion { done: bool, verdict: Option<PyText<'a>> },
}

impl Entry<'_> {
    /// The pipeline id's text (an integer id in decimal) and whether it was an integer.
    pub fn id_text(&self) -> (std::borrow::Cow<'_, str>, bool) {
        id_text(&self.id).expect("classify_line accepts only usable ids")
    }
}

/// Classifies one audit line (pass 1, and pass 2 again inside the spans it reads).
/// `text` is the line, `None` when it is not valid UTF-8.
pub(crate) fn classify_line(text: Option<&str>) -> Result<Entry<'_>, SkipReason> {
    let text = text.ok_or(SkipReason::InvalidUtf8)?;
    let f = read_object_text(text, |f: &mut Fields<'_>, key, v| {
        match key {
            "pipeline_id" => f.pipeline_id = v.scalar()?,
            "is_complete" => {
                f.marks.is_complete_key = true;
                f.is_complete = v.scalar()? == Scalar::Bool(true);
            }
            // The last `stage_name` counts, as in `json.loads`.
            "stage_name" => f.marks.completion_name = is_completion_name(&v.scalar()?),
            "stage_id" | "stage_type" => {
                f.marks.stage_key = true;
                v.skip()?;
            }
            "verdict" => f.verdict = Some(v.text()?),
            "error" => f.error_set = v.flag()?,
            "input" => f.input_set = v.flag()?,
            "state_snapshot" => f.snapshot_input_set = nested_field(v, "input_text", |s| s.flag())? == Some(true),
            _ => v.skip()?,
        }
        Ok(())
    })
    .map_err(|e| match e {
        NotObject::InvalidUtf8 => SkipReason::InvalidUtf8,
        NotObject::NotJson => SkipReason::NotJson,
        NotObject::NotObject => SkipReason::NotObject,
    })?;
    id_text(&f.pipeline_id)?;
    let kind = match f.marks.kind(f.verdict.is_some()) {
        EntryKind::Completion => Kind::Completion {
            done: f.is_complete && !f.error_set,
            verdict: f.verdict,
        },
        EntryKind::Stage => Kind::Stage {
            has_input: f.snapshot_input_set || f.input_set,
        },
        EntryKind::Unrecognized => return Err(SkipReason::Unrecognized),
    };
    Ok(Entry {
        id: f.pipeline_id,
        kind,
    })
}
