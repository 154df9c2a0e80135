//! Verdict files: what each model answered on the test cases, in any of four formats.
//!
//! JSONL of `{pipeline_id, verdict}` (an audit log's completion entries qualify; its stage
//! entries are ignored), a JSON array of such objects, a JSON object `{pipeline_id: verdict}`,
//! or CSV/TSV with `pipeline_id` and `verdict` columns. `{pipeline_id, error}` records a
//! runner failure. The format is detected from the content.
//!
//! A JSON verdict is made text as the reference makes it (`str(v or "")`, see
//! [`PyText`]): `9` is `"9"`, `1e16` is `"1e+16"`, `true` is `"True"`, `0` and `false` are
//! `""`; an object or an array is kept as such and fails its case. Each file is read in one
//! pass that keeps only the records of the ids asked for (see [`parse_verdicts_keeping`]).

use crate::audit::entry::{is_completion_name, EntryKind, Marks};
use crate::audit::{into_id_text, PipelineId};
use crate::compat::py_float_repr;
use crate::cost::{summarize, CostField, CostFields, CostProblem, CostRef, CostSummary, RecordCost};
use crate::input::Role;
use crate::input::{InputError, InputFile};
use crate::json::{
    parse_object_line, read_object_text, value_offsets, visit_array, why_not_json, NotObject, PyText, Scalar, Syntax,
    ValueError, ValueSink,
};
use crate::lines::{invalid_utf8, position, split_all, Piece, Positions};
use crate::testset::TestSet;

mod stream;
use hashbrown::{DefaultHashBuilder, HashMap};
use std::sync::Arc;
pub use stream::VerdictStream;

/// The ids whose records are kept whole: the test set's, shared with it (an id is not copied
/// again for each verdict file, which matters when ids are long).
pub type KeepSet = std::collections::HashSet<Arc<str>>;
use serde::Serialize;
use sha2::{Digest, Sha256};
use std::borrow::Cow;

/// How many conflicting ids are listed in the report.
const CONFLICTS_LISTED: usize = 10;

/// A verdict file's detected format.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum VerdictFormat {
    /// One JSON object per line.
    Jsonl,
    /// A JSON array of objects.
    JsonArray,
    /// A JSON object mapping pipeline ids to verdicts.
    JsonMap,
    /// Comma-separated with a header row.
    Csv,
    /// Tab-separated with a header row.
    Tsv,
}

/// Where a record's `output` (what the model answered, as it gave it) is in its verdict file. The
/// answer is read on demand from the file's bytes ([`read_output`]): the report never embeds it
/// (the file is pinned by its sha256), and a reader keeps these offsets, not the texts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct OutputAt {
    /// The first byte, in the file as given (a byte-order mark counts).
    pub start: u64,
    /// The byte after the last.
    pub end: u64,
    /// How those bytes hold the answer.
    pub form: OutputForm,
    /// The record says the answer was cut to its bound (`output_truncated: true`).
    pub truncated: bool,
}

/// How a verdict file's bytes hold an answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OutputForm {
    /// A JSON value (a string, or any JSON value), as written.
    Json,
    /// The field `column` (0-based) of one CSV (or, with `tab`, TSV) row: the bytes are the row.
    Delimited {
        /// The field's column.
        column: u32,
        /// Tab-separated.
        tab: bool,
    },
}

/// The answer at `at` in the verdict file `bytes` (the file it was read from: [`Verdicts::file`]
/// pins its sha256) as JSON text: the record's JSON value as written, a CSV or TSV field as a JSON
/// string. `None` when `at` is not in `bytes`, or does not hold an answer there (another file).
pub fn read_output(bytes: &[u8], at: &OutputAt) -> Option<String> {
    let start = usize::try_from(at.start).ok()?;
    let end = usize::try_from(at.end).ok()?;
    let slice = bytes.get(start..end)?;
    match at.form {
        OutputForm::Json => {
            let text = std::str::from_utf8(slice).ok()?;
            serde_json::from_str::<&serde_json::value::RawValue>(text).ok()?;
            Some(text.to_owned())
        }
        OutputForm::Delimited { column, tab } => {
            let mut reader = csv::ReaderBuilder::new()
                .has_headers(false)
                .delimiter(if tab { b'\t' } else { b',' })
                .from_reader(slice);
            let mut row = csv::StringRecord::new();
            reader.read_record(&mut row).ok()?.then_some(())?;
            let field = row.get(column as usize)?;
            Some(serde_json::to_string(field).expect("a string serializes"))
        }
    }
}

/// What a model answered for one pipeline.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct VerdictRecord {
    /// The verdict as the reference makes it text (`None`: null, absent, or an object or array).
    pub verdict: Option<String>,
    /// The runner's error, when it failed.
    pub error: Option<String>,
    /// The verdict is an object or an array: the case fails, counted apart.
    pub composite: bool,
}

/// How a record names its pipeline: with the id's JSON type (JSONL, a JSON array), or as bare
/// text (a JSON object's key, a CSV cell), which has none.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum IdKind {
    /// A JSON string.
    Str = 0,
    /// A JSON integer.
    Int = 1,
    /// Text without a type.
    Untyped = 2,
}

impl IdKind {
    /// The kind of a test case's id.
    fn of(id: &PipelineId) -> IdKind {
        if id.numeric {
            IdKind::Int
        } else {
            IdKind::Str
        }
    }
}

/// A kept record and the line it starts on (for the message that refuses an untyped id), and the
/// records of the same id before it, in file order (a case run several times; `repeats: mean`
/// counts them all, `last` the last one).
#[derive(Debug, Clone)]
struct Kept {
    record: VerdictRecord,
    line: u64,
    earlier: Vec<VerdictRecord>,
    /// Where the kept (last) record's answer is, when it carries one.
    output: Option<OutputAt>,
    /// The kept record's `trajectory_id`: its case's trajectory result.
    trajectory: Option<Box<str>>,
}

/// The kept records of one id text, by [`IdKind`].
type Slots = [Option<Kept>; 3];

/// A parsed verdict file.
#[derive(Debug, Clone)]
pub struct Verdicts {
    /// The file (role, name, size, sha256).
    pub file: InputFile,
    /// The detected format.
    pub format: VerdictFormat,
    /// Records read (before duplicates were merged).
    pub records: usize,
    /// Records whose id had been seen before (the last one wins).
    pub duplicates: usize,
    /// Ids whose duplicate records disagree, in order of first conflict (all of them).
    pub conflicting: Vec<String>,
    /// Audit-log stage entries found in a JSONL verdict file and ignored.
    pub ignored_stage_entries: usize,
    /// Kept records by id text (and in it by the id's type); a kept id shares the caller's
    /// copy (see [`parse_verdicts_keeping`]).
    by_id: HashMap<Arc<str>, Slots, DefaultHashBuilder>,
    /// The records of ids not kept (see [`parse_verdicts_keeping`]) while the file is read: a
    /// 64-bit hash of the id and one of the record, 16 bytes a record (to count them and spot
    /// conflicting duplicates without storing them); sorted and counted once it is read.
    others: Vec<(u64, u64)>,
    /// Distinct ids among the others.
    others_distinct: usize,
    keep: Option<KeepSet>,
    /// The [`stable_hash`]es of the ids in `keep`: most ids are ruled out by their hash alone.
    keep_hashes: hashbrown::HashSet<u64, DefaultHashBuilder>,
    /// Some record (kept or not) carries a cost field (see [`crate::cost`]).
    carries_cost: bool,
    /// Some kept record carries an answer (`output`).
    carries_outputs: bool,
    /// The cost fields of the kept records that carry some, by id text, [`IdKind`] and run
    /// (the record's place among [`Verdicts::records_for`]'s): a side table, empty for a file
    /// without them.
    costs: HashMap<(Arc<str>, u8, u32), RecordCost, DefaultHashBuilder>,
    /// The distinct targets of the kept costs (shared by them).
    targets: Vec<Arc<str>>,
}

/// The hash that tells ids apart: the text's, and for an integer another one (`5` and `"5"`
/// are two ids; an untyped id hashes as a string, and a file holds one kind or the other).
fn id_hash(text_hash: u64, kind: IdKind) -> u64 {
    match kind {
        IdKind::Int => text_hash ^ 0x5bd1_e995_9e37_79b9,
        IdKind::Str | IdKind::Untyped => text_hash,
    }
}

impl Verdicts {
    /// The record for a pipeline, if the file has one: see [`Verdicts::record_for`] (this is it
    /// for a log that holds no other pipeline with the same id text).
    pub fn get(&self, id: &PipelineId) -> Option<&VerdictRecord> {
        self.record_for(id, false)
    }

    /// The record for a test case's pipeline, if the file has one. A record that names the id
    /// with its type (`5`, `"5"`) is the case's own; without one, an untyped record (a JSON
    /// object's key, a CSV cell) with the id's text; without that, a record naming the same text
    /// with the other type (a file written before ids had types: `"5"` for the integer `5`),
    /// unless `twin`: the log also holds a pipeline with that text and the other type, whose
    /// record that is.
    pub fn record_for(&self, id: &PipelineId, twin: bool) -> Option<&VerdictRecord> {
        let kind = self.resolve(id, twin)?;
        self.by_id.get(&*id.text)?[kind as usize].as_ref().map(|k| &k.record)
    }

    /// Every record of the one [`Verdicts::record_for`] takes (the same id, written the same
    /// way), in file order: the runs of a case. Empty when the file has none.
    pub fn records_for(&self, id: &PipelineId, twin: bool) -> Vec<&VerdictRecord> {
        let kept = self
            .resolve(id, twin)
            .and_then(|kind| self.by_id.get(&*id.text)?[kind as usize].as_ref());
        match kept {
            None => Vec::new(),
            Some(k) => k.earlier.iter().chain([&k.record]).collect(),
        }
    }

    /// Where the answer of the record [`Verdicts::record_for`] takes is in the file (read it with
    /// [`read_output`]), when that record carries one.
    pub fn output_for(&self, id: &PipelineId, twin: bool) -> Option<OutputAt> {
        let kind = self.resolve(id, twin)?;
        self.by_id.get(&*id.text)?[kind as usize].as_ref()?.output
    }

    /// The `trajectory_id` of the record [`Verdicts::record_for`] takes, when it names one: the
    /// trajectory result that is its case's.
    pub fn trajectory_for(&self, id: &PipelineId, twin: bool) -> Option<&str> {
        let kind = self.resolve(id, twin)?;
        self.by_id.get(&*id.text)?[kind as usize]
            .as_ref()?
            .trajectory
            .as_deref()
    }

    /// True when some kept record carries an answer (`output`): without one, there is nothing to
    /// read again from the file.
    pub fn carries_outputs(&self) -> bool {
        self.carries_outputs
    }

    /// True when some record of the file carries a cost field (`latency_ms`, `usage`,
    /// `attempts`, `target`; see [`crate::cost`]), kept or not.
    pub fn carries_cost(&self) -> bool {
        self.carries_cost
    }

    /// One model's cost summary over the test set: the records the scoring counts for each
    /// case (every run under `all_runs`, i.e. `repeats: mean`, else the case's last record).
    pub fn cost_summary(&self, test_set: &TestSet, all_runs: bool) -> CostSummary {
        let mut records = 0;
        let mut costs = Vec::new();
        for (i, case) in test_set.cases.iter().enumerate() {
            let (n, c) = self.costs_for(&case.pipeline_id, test_set.has_twin(i), all_runs);
            records += n;
            costs.extend(c);
        }
        summarize(records, costs)
    }

    /// The cost fields of the records a case counts, and how many records it counts: under
    /// `all_runs` every record of [`Verdicts::records_for`], else the one of
    /// [`Verdicts::record_for`]. Records without cost fields count but give no cost.
    pub fn costs_for(&self, id: &PipelineId, twin: bool, all_runs: bool) -> (usize, Vec<&RecordCost>) {
        let Some((shared, slots)) = self.by_id.get_key_value(&*id.text) else {
            return (0, Vec::new());
        };
        let Some(kind) = self.resolve(id, twin) else {
            return (0, Vec::new());
        };
        let Some(kept) = slots[kind as usize].as_ref() else {
            return (0, Vec::new());
        };
        let last = kept.earlier.len() as u32;
        let runs = if all_runs { 0..=last } else { last..=last };
        let counted = runs.clone().count();
        if self.costs.is_empty() {
            return (counted, Vec::new());
        }
        let costs = runs
            .filter_map(|run| self.costs.get(&(Arc::clone(shared), kind as u8, run)))
            .collect();
        (counted, costs)
    }

    /// Which of the id text's records a case takes (see [`Verdicts::record_for`]).
    fn resolve(&self, id: &PipelineId, twin: bool) -> Option<IdKind> {
        let slots = self.by_id.get(&*id.text)?;
        let own = IdKind::of(id);
        let other = match own {
            IdKind::Int => IdKind::Str,
            _ => IdKind::Int,
        };
        [(own, true), (IdKind::Untyped, true), (other, !twin)]
            .into_iter()
            .find(|&(kind, allowed)| allowed && slots[kind as usize].is_some())
            .map(|(kind, _)| kind)
    }

    /// Distinct pipeline ids with a record (kept or not).
    pub fn len(&self) -> usize {
        self.by_id.values().map(|s| s.iter().flatten().count()).sum::<usize>() + self.others_distinct
    }

    /// True when the file has no record.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Distinct ids with a record that no case of `test_set` takes.
    pub(crate) fn count_outside(&self, test_set: &TestSet) -> usize {
        let mut taken: hashbrown::HashSet<(&str, u8)> = hashbrown::HashSet::new();
        for (i, case) in test_set.cases.iter().enumerate() {
            if let Some(kind) = self.resolve(&case.pipeline_id, test_set.has_twin(i)) {
                taken.insert((&case.pipeline_id.text, kind as u8));
            }
        }
        let kept: usize = self
            .by_id
            .iter()
            .map(|(text, slots)| {
                (0..3u8)
                    .filter(|&k| slots[k as usize].is_some() && !taken.contains(&(&**text, k)))
                    .count()
            })
            .sum();
        kept + self.others_distinct
    }

    /// Refuses a file whose untyped record (a JSON object's key, a CSV cell) names an id text
    /// the log holds with both types (`5` and `"5"`) when one of them is a test case: the
    /// record cannot say whose verdict it is.
    pub fn check_against(&self, test_set: &TestSet) -> Result<(), InputError> {
        for (i, case) in test_set.cases.iter().enumerate() {
            if !test_set.has_twin(i) {
                continue;
            }
            let id = &case.pipeline_id;
            let Some(Some(kept)) = self.by_id.get(&*id.text).map(|s| &s[IdKind::Untyped as usize]) else {
                continue;
            };
            let (untyped, rewrite) = match self.format {
                VerdictFormat::JsonMap => ("a JSON object's keys are text", "JSONL or a JSON array"),
                _ => ("a CSV or TSV cell is text", "JSONL or a JSON array"),
            };
            let text = serde_json::to_string(&*id.text).expect("a string serializes");
            return Err(InputError::at(
                self.file.role,
                &self.file.name,
                Some(kept.line),
                format!(
                    "pipeline id {text} is ambiguous: the audit log holds the integer {} and the string {text} as two pipelines, and {untyped}; write this file as {rewrite}, each pipeline_id as the log writes it",
                    id.text
                ),
            ));
        }
        Ok(())
    }

    /// The conflicting ids as listed in the report (the first few).
    pub(crate) fn conflicting_listed(&self) -> &[String] {
        &self.conflicting[..self.conflicting.len().min(CONFLICTS_LISTED)]
    }

    fn conflict(&mut self, id: &str) {
        if !self.conflicting.iter().any(|c| c == id) {
            self.conflicting.push(id.to_owned());
        }
    }

    /// Whether records of this id text are kept whole (of either type: a case of one type may
    /// take the other's record, see [`Verdicts::record_for`]).
    fn is_kept(&self, id: &str, text_hash: u64) -> bool {
        self.keep
            .as_ref()
            .is_none_or(|keep| self.keep_hashes.contains(&text_hash) && keep.contains(id))
    }

    /// Counts a record, and keeps it when its id is kept (only then is it copied), with where its
    /// answer is in `bytes` (the file the record was read from).
    /// No record yet, of `file` in `format`, keeping whole records for the ids of `keep` (all: `None`).
    fn empty(file: InputFile, format: VerdictFormat, keep: Option<KeepSet>) -> Verdicts {
        Verdicts {
            file,
            format,
            records: 0,
            duplicates: 0,
            conflicting: Vec::new(),
            ignored_stage_entries: 0,
            by_id: HashMap::default(),
            others: Vec::new(),
            others_distinct: 0,
            keep_hashes: keep.iter().flatten().map(|id| stable_hash(id.as_bytes(), 0)).collect(),
            keep,
            carries_cost: false,
            carries_outputs: false,
            costs: HashMap::default(),
            targets: Vec::new(),
        }
    }

    /// A JSONL line read ([`VerdictStream`]): a record is kept (its answer placed already), a
    /// stage entry counted.
    fn take(&mut self, parsed: Parsed<'_>) {
        match parsed {
            Parsed::Record(record) => self.insert(record, &[]),
            Parsed::StageEntry => self.ignored_stage_entries += 1,
        }
    }

    fn insert(&mut self, record: RecordRef<'_>, bytes: &[u8]) {
        self.records += 1;
        self.carries_cost |= record.cost.is_some();
        let text_hash = stable_hash(record.id.as_bytes(), 0);
        if !self.is_kept(&record.id, text_hash) {
            self.others.push((id_hash(text_hash, record.kind), record.hash()));
            return;
        }
        let output = record.output_at(bytes);
        self.carries_outputs |= output.is_some();
        let RecordRef {
            id,
            kind,
            line,
            verdict,
            error,
            cost,
            trajectory,
            ..
        } = record;
        let trajectory = trajectory.map(|t| Box::from(&*t));
        let (verdict, composite) = match verdict {
            Some(PyText::Text(t)) => (Some(t), false),
            Some(PyText::Composite) => (None, true),
            Some(PyText::Null) | None => (None, false),
        };
        let record = VerdictRecord {
            verdict: verdict.map(Cow::into_owned),
            error: error.map(Cow::into_owned),
            composite,
        };
        let slots = match self.by_id.get_mut(&*id) {
            Some(slots) => slots,
            None => {
                let shared = match self.keep.as_ref().and_then(|keep| keep.get(&*id)) {
                    Some(kept) => Arc::clone(kept),
                    None => Arc::from(&*id),
                };
                self.by_id.entry(shared).or_default()
            }
        };
        let run = match &mut slots[kind as usize] {
            Some(existing) => {
                self.duplicates += 1;
                let differs = existing.record != record;
                let before = std::mem::replace(&mut existing.record, record);
                existing.earlier.push(before);
                existing.output = output;
                existing.trajectory = trajectory;
                let run = existing.earlier.len() as u32;
                if differs {
                    existing.line = line;
                    self.conflict(&id);
                }
                run
            }
            slot @ None => {
                *slot = Some(Kept {
                    record,
                    line,
                    earlier: Vec::new(),
                    output,
                    trajectory,
                });
                0
            }
        };
        if let Some(cost) = cost {
            let (shared, _) = self.by_id.get_key_value(&*id).expect("inserted above");
            let key = (Arc::clone(shared), kind as u8, run);
            let kept = cost.keep(&mut self.targets);
            self.costs.insert(key, kept);
        }
    }
    /// Counts the others once the file is read (distinct ids, duplicates) and frees their
    /// hashes; the id hashes of those whose duplicates disagree.
    fn finish_others(&mut self) -> hashbrown::HashSet<u64, DefaultHashBuilder> {
        let mut others = std::mem::take(&mut self.others);
        others.sort_unstable();
        let mut conflicting = hashbrown::HashSet::default();
        for group in others.chunk_by(|a, b| a.0 == b.0) {
            self.others_distinct += 1;
            self.duplicates += group.len() - 1;
            if group.iter().any(|r| r.1 != group[0].1) {
                conflicting.insert(group[0].0);
            }
        }
        conflicting
    }
}

/// Lists conflicting ids in file order when some of them were not kept: the file is read a
/// second time, following only the kept ids and those of `others`.
struct Replay<'v> {
    verdicts: &'v mut Verdicts,
    others: hashbrown::HashSet<u64, DefaultHashBuilder>,
    last: HashMap<u64, u64, DefaultHashBuilder>,
}

impl Replay<'_> {
    fn record(&mut self, record: &RecordRef<'_>) {
        let text_hash = stable_hash(record.id.as_bytes(), 0);
        let id_hash = id_hash(text_hash, record.kind);
        if !self.others.contains(&id_hash) && !self.verdicts.is_kept(&record.id, text_hash) {
            return;
        }
        let rec_hash = record.hash();
        if self.last.insert(id_hash, rec_hash).is_some_and(|old| old != rec_hash) {
            self.verdicts.conflict(&record.id);
        }
    }
}

/// A record as read: the id's text and the record, borrowed from the file where they can be
/// (a record is copied only when it is kept).
struct RecordRef<'a> {
    id: Cow<'a, str>,
    /// How the id is written (with its type or without).
    kind: IdKind,
    /// The line the record starts on.
    line: u64,
    /// `None` when the record has no verdict.
    verdict: Option<PyText<'a>>,
    error: Option<Cow<'a, str>>,
    /// The record's cost fields, when it has some (see [`crate::cost`]).
    cost: CostRef<'a>,
    /// What the model answered, when the record carries it.
    output: Option<OutputRef<'a>>,
    /// `trajectory_id`, when the record names its trajectory result.
    trajectory: Option<Cow<'a, str>>,
}

/// A record's `output` as read: a JSON value's text (a slice of the file, or of a JSONL line until
/// [`placed`] gives it its place in the file), a JSON value's place in the file, or a CSV/TSV
/// row's place (from the start of the file's body) and the field's column.
#[derive(Debug, Clone, Copy)]
enum OutputRef<'a> {
    Json {
        text: &'a str,
        truncated: bool,
    },
    Placed {
        start: u64,
        end: u64,
        truncated: bool,
    },
    Row {
        start: u64,
        end: u64,
        column: u32,
        tab: bool,
        truncated: bool,
    },
}

/// A JSONL record's answer placed in the file: its line (`text`) starts at `offset`. The line
/// may be a copy (one that crosses a piece the file is read in), so the answer's place is taken
/// from the line's, never from where the copy is.
fn placed<'a>(parsed: Parsed<'a>, text: &str, offset: u64) -> Parsed<'a> {
    match parsed {
        Parsed::Record(mut record) => {
            if let Some(OutputRef::Json { text: value, truncated }) = record.output {
                let within = value.as_ptr() as usize - text.as_ptr() as usize;
                let start = offset + within as u64;
                record.output = Some(OutputRef::Placed {
                    start,
                    end: start + value.len() as u64,
                    truncated,
                });
            }
            Parsed::Record(record)
        }
        other => other,
    }
}

impl RecordRef<'_> {
    /// Where the record's answer is in `bytes`, the file it was read from (a CSV row's offsets are
    /// from the file's body, after a byte-order mark).
    fn output_at(&self, bytes: &[u8]) -> Option<OutputAt> {
        match self.output? {
            OutputRef::Json { text, truncated } => {
                let start = (text.as_ptr() as usize).checked_sub(bytes.as_ptr() as usize)?;
                (start + text.len() <= bytes.len()).then_some(OutputAt {
                    start: start as u64,
                    end: (start + text.len()) as u64,
                    form: OutputForm::Json,
                    truncated,
                })
            }
            OutputRef::Placed { start, end, truncated } => Some(OutputAt {
                start,
                end,
                form: OutputForm::Json,
                truncated,
            }),
            OutputRef::Row {
                start,
                end,
                column,
                tab,
                truncated,
            } => {
                let bom = (bytes.len() - strip_bom(bytes).len()) as u64;
                Some(OutputAt {
                    start: bom + start,
                    end: bom + end,
                    form: OutputForm::Delimited { column, tab },
                    truncated,
                })
            }
        }
    }
}

impl RecordRef<'_> {
    /// A hash of the verdict and the error (equal records, equal hashes).
    fn hash(&self) -> u64 {
        let verdict = match &self.verdict {
            Some(PyText::Text(t)) => t,
            Some(PyText::Composite) => "\u{0}composite",
            Some(PyText::Null) | None => "\u{0}null",
        };
        stable_hash(verdict.as_bytes(), 1) ^ stable_hash(self.error.as_deref().unwrap_or("\u{0}none").as_bytes(), 2)
    }
}

/// A 64-bit hash that is the same in every run and on every platform: eight bytes at a time
/// (little-endian), multiplied and rotated, then the length and a final mix (MurmurHash3's).
fn stable_hash(bytes: &[u8], seed: u64) -> u64 {
    const K: u64 = 0x9E37_79B9_7F4A_7C15;
    let step = |h: u64, word: u64| (h ^ word).wrapping_mul(K).rotate_left(31);
    let mut h = 0xcbf2_9ce4_8422_2325u64 ^ seed.wrapping_mul(K);
    let mut words = bytes.chunks_exact(8);
    for word in &mut words {
        h = step(h, u64::from_le_bytes(word.try_into().expect("8 bytes")));
    }
    let mut tail = [0u8; 8];
    tail[..words.remainder().len()].copy_from_slice(words.remainder());
    h = step(h, u64::from_le_bytes(tail)) ^ bytes.len() as u64;
    h ^= h >> 33;
    h = h.wrapping_mul(0xff51_afd7_ed55_8ccd);
    h ^= h >> 33;
    h = h.wrapping_mul(0xc4ce_b9fe_1a85_ec53);
    h ^ (h >> 33)
}

/// Describes a file for the report: role, base name, size and sha256.
pub(crate) fn describe(role: Role, name: &str, bytes: &[u8]) -> InputFile {
    InputFile {
        role,
        name: name.into(),
        bytes: bytes.len() as u64,
        sha256: hex::encode(Sha256::digest(bytes)),
    }
}

/// [`describe`], telling `progress` how far the hash has read, a MiB at a time.
fn describe_reporting(role: Role, name: &str, bytes: &[u8], progress: &mut dyn FnMut(usize)) -> InputFile {
    let mut sha = Sha256::new();
    let mut at = 0;
    for chunk in bytes.chunks(1 << 20) {
        sha.update(chunk);
        at += chunk.len();
        progress(at);
    }
    InputFile {
        role,
        name: name.into(),
        bytes: bytes.len() as u64,
        sha256: hex::encode(sha.finalize()),
    }
}

fn error_text(value: Scalar<'_>) -> Option<Cow<'_, str>> {
    match value {
        Scalar::Absent | Scalar::Null => None,
        Scalar::Str(s) => Some(s),
        Scalar::Int(i) => Some(i.to_string().into()),
        Scalar::BigInt(digits) => Some(digits),
        Scalar::Float(f) => Some(py_float_repr(f).into()),
        Scalar::Bool(b) => Some(b.to_string().into()),
        Scalar::Composite => Some("(structured error)".into()),
    }
}

/// One JSON record's fields.
#[derive(Default)]
struct RecordFields<'a> {
    id: Scalar<'a>,
    verdict: Option<PyText<'a>>,
    error: Scalar<'a>,
    marks: Marks,
    cost: CostFields<'a>,
    /// `output`, as written.
    output: Option<&'a str>,
    output_truncated: bool,
    trajectory: Option<Cow<'a, str>>,
}

fn record_entry<'a>(f: &mut RecordFields<'a>, key: &str, v: &mut dyn ValueSink<'a>) -> Result<(), ValueError> {
    match key {
        "pipeline_id" => f.id = v.scalar()?,
        "verdict" => f.verdict = Some(v.text()?),
        "error" => f.error = v.scalar()?,
        "is_complete" => {
            f.marks.is_complete_key = true;
            v.skip()?
        }
        // Any `stage_name` naming a completion counts (see [`Marks`]).
        "stage_name" => {
            if is_completion_name(&v.scalar()?) {
                f.marks.completion_name = true;
            }
        }
        "stage_id" | "stage_type" => {
            f.marks.stage_key = true;
            v.skip()?
        }
        "latency_ms" | "usage" | "attempts" | "target" | "metrics" => {
            f.cost.read(key, v)?;
        }
        "output" => f.output = Some(v.span()?),
        TRAJECTORY_ID => f.trajectory = trajectory_named(v.span()?),
        // Read as it was skipped before (any JSON value is accepted): `true` alone marks a cut.
        "output_truncated" => f.output_truncated = v.span()? == "true",
        _ => v.skip()?,
    }
    Ok(())
}

/// The field of a verdict record that names its case's trajectory result, and of the trajectory
/// result that bears the name ([`crate::trajectory::ID_FIELD`] is this one).
pub(crate) const TRAJECTORY_ID: &str = "trajectory_id";

/// A record's `trajectory_id`, from its JSON text, as a trajectory result's id is read: a
/// string, or an integer's digits. Any other value names no result, and is read as it was
/// before the field named one (skipped, whatever it holds).
fn trajectory_named(json: &str) -> Option<Cow<'_, str>> {
    if json.starts_with('"') {
        return serde_json::from_str::<String>(json).ok().map(Cow::Owned);
    }
    let digits = json.strip_prefix('-').unwrap_or(json);
    let integer = !digits.is_empty() && digits.bytes().all(|b| b.is_ascii_digit()) && json != "-0";
    integer.then_some(Cow::Borrowed(json))
}

/// What a record turned out to be.
enum Parsed<'a> {
    Record(RecordRef<'a>),
    StageEntry,
}

/// Why a record of a JSON verdict file is unusable; the message goes into the [`InputError`].
/// (As small as a `String`, the error type it replaces: see the size check below.)
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
enum RecordError {
    /// A JSONL line is not UTF-8.
    #[error("invalid UTF-8")]
    InvalidUtf8,
    /// A JSONL line is not JSON.
    #[error("not valid JSON")]
    NotJson,
    /// A JSONL line is JSON but not an object.
    #[error("not a JSON object")]
    NotObject,
    /// An element of a JSON array is not an object.
    #[error("array element is not a JSON object")]
    ElementNotObject,
    /// No `pipeline_id`.
    #[error("no pipeline_id")]
    NoId,
    /// A `pipeline_id` that is not a non-empty string or an integer other than 0 (what it is
    /// named).
    #[error("pipeline_id is {0}, expected a non-empty string or an integer other than 0")]
    BadId(&'static str),
    /// Neither a verdict nor an error.
    #[error("record has neither a verdict nor an error")]
    Neither,
    /// A JSON map with an empty key.
    #[error("an empty pipeline id")]
    EmptyKey,
    /// A JSON map's value for a pipeline is unusable (boxed: the error stays as small as
    /// a `String`, so the result of every record read does not grow).
    #[error("pipeline {}: {}", .0.id, .0.why)]
    MapValue(Box<MapValue>),
    /// A cost field (`latency_ms`, `usage`, `attempts`, `target`) with an unusable value
    /// (boxed, as [`RecordError::MapValue`]).
    #[error("{0}")]
    Cost(Box<CostProblem>),
}

const _: () = assert!(std::mem::size_of::<RecordError>() <= std::mem::size_of::<String>());

impl From<NotObject> for RecordError {
    fn from(e: NotObject) -> Self {
        match e {
            NotObject::InvalidUtf8 => RecordError::InvalidUtf8,
            NotObject::NotJson => RecordError::NotJson,
            NotObject::NotObject => RecordError::NotObject,
        }
    }
}

/// A JSON map's unusable value: the pipeline (the map's key) and what is wrong.
#[derive(Debug, Clone, PartialEq, Eq)]
struct MapValue {
    id: String,
    why: MapValueError,
}

/// What is wrong with a JSON map's value.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
enum MapValueError {
    /// The value cannot be made text.
    #[error("{0}")]
    Value(ValueError),
    /// An object value that does not parse.
    #[error("not a JSON object")]
    NotObject,
    /// An object value with neither a verdict nor an error.
    #[error("the object has neither a verdict nor an error")]
    Neither,
}

/// What an unusable `pipeline_id` is, for its message.
fn id_problem(id: &Scalar<'_>) -> &'static str {
    match id {
        Scalar::Null => "null",
        Scalar::Str(_) => "an empty string",
        Scalar::Int(_) => "0",
        Scalar::Bool(true) => "true",
        Scalar::Bool(false) => "false",
        Scalar::Float(f) if *f == 0.0 => "0",
        Scalar::Float(_) => "a number with a fraction or an exponent",
        other => other.kind(),
    }
}

fn finish_record(f: RecordFields<'_>, line: u64) -> Result<Parsed<'_>, RecordError> {
    // A JSONL verdict file may be an audit log: its stage entries are ignored, and every
    // other line is a record (a completion by the audit rule, or a runner's error).
    if f.marks.kind(f.verdict.is_some()) == EntryKind::Stage {
        return Ok(Parsed::StageEntry);
    }
    let kind = match f.id {
        Scalar::Absent => return Err(RecordError::NoId),
        Scalar::Int(_) | Scalar::BigInt(_) => IdKind::Int,
        _ => IdKind::Str,
    };
    let problem = id_problem(&f.id);
    let id = into_id_text(f.id).map_err(|_| RecordError::BadId(problem))?;
    let mut cost = f.cost;
    if let Some(problem) = cost.problem.take() {
        return Err(RecordError::Cost(Box::new(problem)));
    }
    let error = error_text(f.error);
    if f.verdict.is_none() && error.is_none() {
        return Err(RecordError::Neither);
    }
    Ok(Parsed::Record(RecordRef {
        id,
        kind,
        line,
        verdict: f.verdict,
        error,
        cost: cost.any().then(|| Box::new(cost)),
        output: f.output.map(|text| OutputRef::Json {
            text,
            truncated: f.output_truncated,
        }),
        trajectory: f.trajectory,
    }))
}

/// A record's error as its message, and where in the record's text it is when a place helps
/// (where the JSON stops being JSON, the value of a bad `pipeline_id`).
fn explain(e: &RecordError, text: &str) -> (String, Option<usize>) {
    match e {
        RecordError::NotJson => match why_not_json(text) {
            Some(syntax) => (
                format!("not valid JSON: {}", syntax.message),
                Some(offset_of(text, syntax.line, syntax.column)),
            ),
            None => (e.to_string(), None),
        },
        RecordError::BadId(_) => (e.to_string(), value_offsets(text, "pipeline_id").last().map(|v| v.0)),
        RecordError::Cost(p) => (e.to_string(), cost_offset(p, text)),
        _ => (e.to_string(), None),
    }
}

/// Where in a record's text the unusable cost value is: the value of the field's key (its
/// second occurrence for one given twice), inside `usage` for its token counts.
fn cost_offset(p: &CostProblem, text: &str) -> Option<usize> {
    match p.field {
        CostField::PromptTokens | CostField::CompletionTokens => {
            let (at, usage) = *value_offsets(text, "usage").first()?;
            Some(at + value_offsets(usage, p.field.key()).get(p.occurrence)?.0)
        }
        field => Some(value_offsets(text, field.key()).get(p.occurrence)?.0),
    }
}

/// The byte offset in `text` of a 1-based line and column.
pub(crate) fn offset_of(text: &str, line: u64, column: u64) -> usize {
    let start = if line <= 1 {
        0
    } else {
        memchr::memchr_iter(b'\n', text.as_bytes())
            .nth(line as usize - 2)
            .map_or(text.len(), |nl| nl + 1)
    };
    (start + column.saturating_sub(1) as usize).min(text.len())
}

/// The message for a byte that is not UTF-8.
pub(crate) fn invalid_utf8_message(byte: u8) -> String {
    format!("invalid UTF-8 (byte 0x{byte:02x})")
}

/// Refuses a whole-file format (a JSON array or object) that is not UTF-8, at the first byte
/// that is not; `body` is the file without its BOM (columns do not count the BOM).
pub(crate) fn whole_text<'b>(body: &'b [u8], role: Role, name: &str) -> Result<&'b str, InputError> {
    simdutf8::basic::from_utf8(body).map_err(|_| {
        let (at, byte) = invalid_utf8(body).expect("not UTF-8");
        let (line, column) = position(body, at);
        InputError::at_column(role, name, line, Some(column), invalid_utf8_message(byte))
    })
}

/// Reads the JSON array of a whole-file format one element at a time (nothing of the file is
/// held): `each(n, element, line)` takes element `n`, which starts on `line`, or refuses it with
/// a message and where in the element the fault is. A refused element is an error at its line
/// and column (`element N: …`), a file that is not such an array one at the syntax error's
/// (`not a JSON array of WHAT: …`). `body` is the file without its BOM.
pub(crate) fn each_array_element(
    role: Role,
    name: &str,
    body: &[u8],
    what: &str,
    mut each: impl FnMut(usize, &str, u64) -> Result<(), (String, Option<usize>)>,
) -> Result<(), InputError> {
    let at = |line: u64, column: Option<u64>, msg: String| InputError::at_column(role, name, line, column, msg);
    let text = whole_text(body, role, name)?;
    let mut positions = Positions::new(body);
    let mut failure = None;
    let mut de = serde_json::Deserializer::from_str(text);
    let read = visit_array(&mut de, |n, item| {
        let item = item.get();
        let start = item.as_ptr() as usize - text.as_ptr() as usize;
        let (line, _) = positions.of(start);
        each(n, item, line).map_err(|(msg, inner)| {
            let (line, column) = positions.of(start + inner.unwrap_or(0));
            failure = Some(at(line, Some(column), format!("element {n}: {msg}")));
            ValueError::Invalid(String::new())
        })
    })
    .and_then(|()| de.end());
    if let Some(e) = failure {
        return Err(e);
    }
    read.map_err(|e| {
        let syntax = Syntax::of(&e);
        at(
            syntax.line,
            Some(syntax.column),
            format!("not a JSON array of {what}: {}", syntax.message),
        )
    })
}

fn strip_bom(bytes: &[u8]) -> &[u8] {
    bytes.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(bytes)
}

/// Reads a verdict file, detecting its format. `role` and `name` go into errors and the report.
pub fn parse_verdicts(role: Role, name: &str, bytes: &[u8]) -> Result<Verdicts, InputError> {
    parse(role, name, bytes, None, &mut |_| {})
}

/// Reads a verdict file keeping whole records only for the ids in `keep` (the test set's);
/// the others are counted (records, duplicates, conflicts, extras) from hashes, so memory stays
/// small when a verdict file covers every pipeline of a large log.
pub fn parse_verdicts_keeping(role: Role, name: &str, bytes: &[u8], keep: KeepSet) -> Result<Verdicts, InputError> {
    parse(role, name, bytes, Some(keep), &mut |_| {})
}

/// [`parse_verdicts_keeping`], telling `progress` where in `bytes` the reading is, so that a
/// caller holding the file mapped can give back the pages behind it (nothing before an offset
/// given is read again in the same pass): how far the file's sha256 has read, a MiB at a time,
/// then the offset of each record's id where the id is read in place (JSONL, a JSON array or
/// object; not CSV, whose reader copies). The offsets grow within a pass and start again near
/// the beginning at the next: the records are read after the hash, and read a second time to
/// list the repeated ids whose records disagree. The result is [`parse_verdicts_keeping`]'s.
pub fn parse_verdicts_keeping_with_progress(
    role: Role,
    name: &str,
    bytes: &[u8],
    keep: KeepSet,
    progress: &mut dyn FnMut(usize),
) -> Result<Verdicts, InputError> {
    parse(role, name, bytes, Some(keep), progress)
}

/// The offset in `bytes` where a record's id starts, when it is read in place.
fn offset_in(bytes: &[u8], id: &RecordRef<'_>) -> Option<usize> {
    let Cow::Borrowed(id) = &id.id else { return None };
    let at = (id.as_ptr() as usize).checked_sub(bytes.as_ptr() as usize)?;
    (at < bytes.len()).then_some(at)
}

fn parse(
    role: Role,
    name: &str,
    bytes: &[u8],
    keep: Option<KeepSet>,
    progress: &mut dyn FnMut(usize),
) -> Result<Verdicts, InputError> {
    let format = detect_format(bytes);
    let mut out = Verdicts::empty(describe_reporting(role, name, bytes, progress), format, keep);
    read_records(format, bytes, role, name, &mut |parsed| match parsed {
        Parsed::Record(record) => {
            if let Some(at) = offset_in(bytes, &record) {
                progress(at);
            }
            out.insert(record, bytes)
        }
        Parsed::StageEntry => out.ignored_stage_entries += 1,
    })?;
    let others = out.finish_others();
    if !others.is_empty() {
        out.conflicting.clear();
        let mut replay = Replay {
            verdicts: &mut out,
            others,
            last: HashMap::default(),
        };
        read_records(format, bytes, role, name, &mut |parsed| {
            if let Parsed::Record(record) = parsed {
                if let Some(at) = offset_in(bytes, &record) {
                    progress(at);
                }
                replay.record(&record);
            }
        })?;
    }
    Ok(out)
}

/// One piece of a JSONL verdict file: a record or a stage entry to `on`, or the first failure
/// into `failure` (the pieces after it are skipped).
fn jsonl_piece(
    piece: Piece<'_>,
    role: Role,
    name: &str,
    failure: &mut Option<InputError>,
    on: &mut dyn FnMut(Parsed<'_>),
) {
    let Piece::Line(line) = piece else { return };
    if failure.is_some() || line.bytes.iter().all(u8::is_ascii_whitespace) {
        return;
    }
    let at = |line: u64, column: Option<u64>, msg: String| InputError::at_column(role, name, line, column, msg);
    let Some(text) = line.text() else {
        let (offset, byte) = invalid_utf8(line.bytes).expect("not UTF-8");
        *failure = Some(at(line.number, Some(offset as u64 + 1), invalid_utf8_message(byte)));
        return;
    };
    let parsed = read_object_text(text, record_entry)
        .map_err(RecordError::from)
        .and_then(|f| finish_record(f, line.number))
        .map(|parsed| placed(parsed, text, line.offset));
    match parsed {
        Ok(parsed) => on(parsed),
        Err(e) => {
            let (msg, offset) = explain(&e, text);
            *failure = Some(at(line.number, offset.map(|o| o as u64 + 1), msg));
        }
    }
}

/// The format of a verdict file from its first bytes (`head`: the file's start, holding its
/// first non-blank line whole, or the whole file).
fn detect_format(head: &[u8]) -> VerdictFormat {
    let body = strip_bom(head);
    let first = body.iter().find(|b| !b.is_ascii_whitespace()).copied();
    match first {
        Some(b'[') => VerdictFormat::JsonArray,
        Some(b'{') => {
            let first_line = body
                .split(|&b| b == b'\n')
                .find(|l| !l.iter().all(u8::is_ascii_whitespace))
                .unwrap_or(b"");
            let mut has_id = false;
            let line_is_object = parse_object_line(first_line.strip_suffix(b"\r").unwrap_or(first_line), |k, v| {
                has_id |= k == "pipeline_id";
                v.skip()
            });
            if line_is_object.is_ok() && has_id {
                VerdictFormat::Jsonl
            } else {
                VerdictFormat::JsonMap
            }
        }
        None => VerdictFormat::Jsonl,
        Some(_) => {
            let header = body.split(|&b| b == b'\n').next().unwrap_or(b"");
            if header.contains(&b'\t') {
                VerdictFormat::Tsv
            } else {
                VerdictFormat::Csv
            }
        }
    }
}

/// Reads the records of a file in `format`, handing each to `on` as it is read. An unusable
/// record stops it with an error naming its line and, where it helps, the column.
fn read_records(
    format: VerdictFormat,
    bytes: &[u8],
    role: Role,
    name: &str,
    on: &mut dyn FnMut(Parsed<'_>),
) -> Result<(), InputError> {
    let at = |line: u64, column: Option<u64>, msg: String| InputError::at_column(role, name, line, column, msg);
    let body = strip_bom(bytes);
    match format {
        VerdictFormat::Jsonl => {
            let mut failure = None;
            split_all(bytes, usize::MAX, |piece| {
                jsonl_piece(piece, role, name, &mut failure, on)
            });
            if let Some(e) = failure {
                return Err(e);
            }
        }
        VerdictFormat::JsonArray => {
            // One element at a time: nothing of the file is held but the records kept.
            each_array_element(role, name, body, "verdict records", |_, item, line| {
                array_record(item, line).map(&mut *on)
            })?;
        }
        VerdictFormat::JsonMap => {
            // One entry at a time, as in the array.
            let text = whole_text(body, role, name)?;
            let mut positions = Positions::new(body);
            let mut failure = None;
            let mut de = serde_json::Deserializer::from_str(text);
            let read = crate::json::visit_object(&mut de, |key, v| {
                let raw = v.raw()?.get();
                let (line, column) = positions.of(raw.as_ptr() as usize - text.as_ptr() as usize);
                match map_record(key, raw, line) {
                    Ok(record) => {
                        on(Parsed::Record(record));
                        Ok(())
                    }
                    Err(e) => {
                        failure = Some(at(line, Some(column), e.to_string()));
                        Err(ValueError::Invalid(String::new()))
                    }
                }
            })
            .and_then(|_| de.end());
            if let Some(e) = failure {
                return Err(e);
            }
            if let Err(e) = read {
                let syntax = Syntax::of(&e);
                let msg = format!("not JSONL, nor a JSON object of verdicts: {}", syntax.message);
                return Err(at(syntax.line, Some(syntax.column), msg));
            }
        }
        VerdictFormat::Csv | VerdictFormat::Tsv => read_delimited(format, body, role, name, on)?,
    }
    Ok(())
}

/// An element of a JSON array of records (which starts on `line`), or why it is refused and where
/// in it.
fn array_record(item: &str, line: u64) -> Result<Parsed<'_>, (String, Option<usize>)> {
    let mut f = RecordFields::default();
    parse_object_line(item.as_bytes(), |k, v| record_entry(&mut f, k, v))
        .map_err(|e| match e {
            NotObject::NotObject => RecordError::ElementNotObject,
            other => RecordError::from(other),
        })
        .and_then(|()| finish_record(f, line))
        .map_err(|why| explain(&why, item))
}

/// A map entry: its value is a verdict (any JSON value), or an object `{verdict, error}`.
fn map_record<'a>(key: &'a str, raw: &'a str, line: u64) -> Result<RecordRef<'a>, RecordError> {
    if key.is_empty() {
        return Err(RecordError::EmptyKey);
    }
    let in_pipeline = |why: MapValueError| {
        RecordError::MapValue(Box::new(MapValue {
            id: key.to_owned(),
            why,
        }))
    };
    let record = |verdict, error, output, trajectory| RecordRef {
        id: Cow::Borrowed(key),
        kind: IdKind::Untyped,
        line,
        verdict,
        error,
        cost: None,
        output,
        trajectory,
    };
    if !raw.trim_start().starts_with('{') {
        let verdict = PyText::of_raw(raw).map_err(|e| in_pipeline(MapValueError::Value(e)))?;
        return Ok(record(Some(verdict), None, None, None));
    }
    let (mut verdict, mut error, mut output, mut truncated) = (None, Scalar::Absent, None, false);
    let mut trajectory = None;
    parse_object_line(raw.as_bytes(), |k, v| {
        match k {
            "verdict" => verdict = Some(v.text()?),
            "error" => error = v.scalar()?,
            "output" => output = Some(v.span()?),
            "output_truncated" => truncated = v.span()? == "true",
            TRAJECTORY_ID => trajectory = trajectory_named(v.span()?),
            _ => v.skip()?,
        }
        Ok(())
    })
    .map_err(|_| in_pipeline(MapValueError::NotObject))?;
    let error = error_text(error);
    if verdict.is_none() && error.is_none() {
        return Err(in_pipeline(MapValueError::Neither));
    }
    Ok(record(
        verdict,
        error,
        output.map(|text| OutputRef::Json { text, truncated }),
        trajectory,
    ))
}

/// The byte where a CSV record starts: the csv crate's position, past the `\n` of a CRLF it
/// leaves to the next record (its line numbers lag by one after each CRLF, so lines are counted
/// here from the bytes).
fn csv_record_start(body: &[u8], pos: &csv::Position) -> usize {
    let at = (pos.byte() as usize).min(body.len());
    at + usize::from(body.get(at) == Some(&b'\n'))
}

/// A CSV error as the message of an [`InputError`], placed: a byte that is not UTF-8 at its
/// line and column, a row of the wrong width at its line.
fn csv_error(e: &csv::Error, body: &[u8], role: Role, name: &str) -> InputError {
    let line_of = |pos: &csv::Position| position(body, csv_record_start(body, pos)).0;
    match e.kind() {
        csv::ErrorKind::Utf8 { pos: Some(pos), .. } => {
            let from = csv_record_start(body, pos);
            if let Some((offset, byte)) = invalid_utf8(&body[from..]) {
                let (line, column) = position(body, from + offset);
                return InputError::at_column(role, name, line, Some(column), invalid_utf8_message(byte));
            }
            InputError::at(role, name, Some(line_of(pos)), "invalid UTF-8")
        }
        csv::ErrorKind::UnequalLengths {
            pos: Some(pos),
            expected_len,
            len,
        } => InputError::at(
            role,
            name,
            Some(line_of(pos)),
            format!("a row of {len} fields, where the header has {expected_len}"),
        ),
        _ => InputError::at(role, name, e.position().map(line_of), e.to_string()),
    }
}

/// The columns of a CSV/TSV verdict file, from its header.
struct Columns {
    id: usize,
    verdict: Option<usize>,
    error: Option<usize>,
    output: Option<usize>,
    truncated: Option<usize>,
    trajectory: Option<usize>,
    /// How many fields the header has (every row has as many).
    width: usize,
    tab: bool,
}

impl Columns {
    /// The columns the header names, or why it is not a verdict file's header (line 1).
    fn of(headers: &csv::StringRecord, tab: bool) -> Result<Columns, String> {
        let column = |want: &str| headers.iter().position(|h| h.trim().eq_ignore_ascii_case(want));
        let id = column("pipeline_id")
            .ok_or("not a verdict file: no JSON, and no `pipeline_id` column in a CSV/TSV header")?;
        let (verdict, error) = (column("verdict"), column("error"));
        if verdict.is_none() && error.is_none() {
            return Err("the header has no `verdict` (or `error`) column".into());
        }
        Ok(Columns {
            id,
            verdict,
            error,
            output: column("output"),
            truncated: column("output_truncated"),
            trajectory: column(TRAJECTORY_ID),
            width: headers.len(),
            tab,
        })
    }

    /// The record of `row`, which is the bytes `start..end` of the file's body and starts on
    /// `line`, or why it is refused.
    fn record<'r>(&self, row: &'r csv::StringRecord, start: u64, end: u64, line: u64) -> Result<RecordRef<'r>, String> {
        let cell = |c: Option<usize>| c.and_then(|c| row.get(c)).map(str::trim).filter(|s| !s.is_empty());
        let id = cell(Some(self.id)).ok_or("empty pipeline_id")?;
        // The answer is the field as written (not trimmed), read again from the row's bytes.
        let output = match self.output {
            Some(c) if row.get(c).is_some_and(|o| !o.is_empty()) => Some(OutputRef::Row {
                start,
                end,
                column: c as u32,
                tab: self.tab,
                truncated: cell(self.truncated).is_some_and(|t| t.eq_ignore_ascii_case("true")),
            }),
            _ => None,
        };
        Ok(RecordRef {
            id: Cow::Borrowed(id),
            kind: IdKind::Untyped,
            line,
            verdict: cell(self.verdict).map(|v| PyText::Text(Cow::Borrowed(v))),
            error: cell(self.error).map(Cow::Borrowed),
            cost: None,
            output,
            trajectory: cell(self.trajectory).map(Cow::Borrowed),
        })
    }
}

/// A CSV (or, with `tab`, TSV) reader configured as every verdict file is read.
fn delimited_reader(tab: bool, has_headers: bool, bytes: &[u8]) -> csv::Reader<&[u8]> {
    csv::ReaderBuilder::new()
        .delimiter(if tab { b'\t' } else { b',' })
        .has_headers(has_headers)
        .from_reader(bytes)
}

fn read_delimited(
    format: VerdictFormat,
    body: &[u8],
    role: Role,
    name: &str,
    on: &mut dyn FnMut(Parsed<'_>),
) -> Result<(), InputError> {
    let err = |line: Option<u64>, msg: String| InputError::at(role, name, line, msg);
    let tab = format == VerdictFormat::Tsv;
    let mut reader = delimited_reader(tab, true, body);
    let headers = reader.headers().map_err(|e| csv_error(&e, body, role, name))?;
    let columns = Columns::of(headers, tab).map_err(|msg| err(Some(1), msg))?;
    // One row buffer for the whole file.
    let mut row = csv::StringRecord::new();
    let mut positions = Positions::new(body);
    while reader
        .read_record(&mut row)
        .map_err(|e| csv_error(&e, body, role, name))?
    {
        let start = row.position().map_or(0, |p| csv_record_start(body, p));
        let line = row.position().map_or(0, |_| positions.of(start).0);
        let end = (reader.position().byte() as usize).min(body.len());
        let record = columns.record(&row, start as u64, end as u64, line);
        on(Parsed::Record(record.map_err(|msg| err(Some(line), msg))?));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> Verdicts {
        parse_verdicts(Role::OldVerdicts, "v", text.as_bytes()).unwrap()
    }

    /// A test set of cases with these ids (text, integer?), those at `twins` with a twin in
    /// the log.
    pub(crate) fn test_set_of(ids: &[(&str, bool)], twins: &[usize]) -> TestSet {
        let raw = |s: &str| serde_json::value::RawValue::from_string(s.to_owned()).unwrap();
        TestSet {
            cases: ids
                .iter()
                .map(|&(text, numeric)| crate::testset::TestCase {
                    pipeline_id: PipelineId {
                        text: text.into(),
                        numeric,
                    },
                    template_id: raw("null"),
                    input_text: raw("\"in\""),
                    expected_verdict: raw("\"PASS\""),
                    expected_stage_outputs: crate::testset::StageOutputs::default(),
                    episode_reward: raw("null"),
                    input_hash: None,
                })
                .collect(),
            candidates: ids.len(),
            sampled: false,
            insufficient: false,
            policy: crate::policy::TestSetPolicy::default(),
            warnings: Vec::new(),
            twins: twins.to_vec(),
        }
    }

    fn get<'a>(v: &'a Verdicts, id: &str) -> Option<&'a VerdictRecord> {
        v.get(&PipelineId {
            text: id.into(),
            numeric: false,
        })
    }

    #[test]
    fn detects_the_four_formats() {
        let jsonl = parse("{\"pipeline_id\": \"a\", \"verdict\": \"PASS\"}\n{\"pipeline_id\": 7, \"verdict\": null}\n");
        assert_eq!(jsonl.format, VerdictFormat::Jsonl);
        assert_eq!(get(&jsonl, "7").unwrap().verdict, None);
        let array = parse("[{\"pipeline_id\": \"a\", \"verdict\": \"PASS\"}]");
        assert_eq!(array.format, VerdictFormat::JsonArray);
        let map = parse("{\n \"a\": \"PASS\",\n \"b\": null\n}");
        assert_eq!(map.format, VerdictFormat::JsonMap);
        assert_eq!(map.len(), 2);
        let csv = parse("pipeline_id,verdict\na,\"PASS\"\nb,\n");
        assert_eq!(csv.format, VerdictFormat::Csv);
        assert_eq!(get(&csv, "b").unwrap().verdict, None);
        let tsv = parse("\u{feff}verdict\tpipeline_id\r\nDENY\ta\r\n");
        assert_eq!(tsv.format, VerdictFormat::Tsv);
        assert_eq!(get(&tsv, "a").unwrap().verdict.as_deref(), Some("DENY"));
    }

    #[test]
    fn map_values_may_be_verdict_objects() {
        let map = parse("{\"a\": {\"verdict\": \"PASS\", \"latency\": 3}, \"b\": {\"error\": \"oom\"}, \"c\": 7}");
        assert_eq!(get(&map, "a").unwrap().verdict.as_deref(), Some("PASS"));
        assert_eq!(get(&map, "b").unwrap().error.as_deref(), Some("oom"));
        assert_eq!(get(&map, "c").unwrap().verdict.as_deref(), Some("7"));
        let e = parse_verdicts(Role::OldVerdicts, "m.json", b"{\"a\": {\"score\": 1}}").unwrap_err();
        assert!(e.to_string().contains("pipeline a: the object has neither"), "{e}");
        let e = parse_verdicts(Role::OldVerdicts, "m.json", b"{\"a\": 1, \"\": 2}").unwrap_err();
        assert_eq!(
            e.to_string(),
            "m.json (old_verdicts) line 1, column 14: an empty pipeline id"
        );
    }

    /// Each format reads a verdict as the reference's `str(v or "")` (checked with CPython's
    /// `json.loads`), and an object or an array is a verdict of its own kind, never an error.
    #[test]
    fn verdicts_are_the_references_text_in_every_format() {
        let values = [
            ("9", Some("9")),
            ("12345678901234567890123", Some("12345678901234567890123")),
            ("-7", Some("-7")),
            ("0", Some("")),
            ("-0", Some("")),
            ("0.0", Some("")),
            ("-0.0", Some("")),
            ("1.0", Some("1.0")),
            ("1e16", Some("1e+16")),
            ("1E-5", Some("1e-05")),
            ("0.1", Some("0.1")),
            ("1e400", Some("inf")),
            ("true", Some("True")),
            ("false", Some("")),
            ("\"\"", Some("")),
            ("\"Pass\"", Some("Pass")),
            ("null", None),
        ];
        for (json, want) in values {
            let jsonl = parse(&format!("{{\"pipeline_id\": \"a\", \"verdict\": {json}}}\n"));
            let array = parse(&format!("[{{\"pipeline_id\": \"a\", \"verdict\": {json}}}]"));
            let map = parse(&format!("{{\"a\": {json}}}"));
            let map_object = parse(&format!("{{\"a\": {{\"verdict\": {json}}}}}"));
            for v in [&jsonl, &array, &map, &map_object] {
                let record = get(v, "a").unwrap();
                assert_eq!(
                    (record.verdict.as_deref(), record.composite),
                    (want, false),
                    "{json} ({:?})",
                    v.format
                );
            }
        }
        for json in ["[]", "[\"PASS\"]", "{}", "{\"verdict\": \"PASS\"}"] {
            let jsonl = parse(&format!("{{\"pipeline_id\": \"a\", \"verdict\": {json}}}\n"));
            let array = parse(&format!("[{{\"pipeline_id\": \"a\", \"verdict\": {json}}}]"));
            let map_object = parse(&format!("{{\"a\": {{\"verdict\": {json}}}}}"));
            for v in [&jsonl, &array, &map_object] {
                let record = get(v, "a").unwrap();
                assert_eq!(
                    (record.verdict.as_deref(), record.composite),
                    (None, true),
                    "{json} ({:?})",
                    v.format
                );
            }
        }
        // A bare array as a map value is a composite verdict too.
        assert!(get(&parse("{\"a\": [1], \"b\": \"PASS\"}"), "a").unwrap().composite);
        // CSV cells are text already.
        let csv = parse("pipeline_id,verdict\na,9\nb,True\nc,0\n");
        assert_eq!(get(&csv, "a").unwrap().verdict.as_deref(), Some("9"));
        assert_eq!(get(&csv, "c").unwrap().verdict.as_deref(), Some("0"));
    }

    #[test]
    fn single_line_map_is_a_map() {
        let map = parse("{\"a\": \"PASS\", \"b\": \"FAIL\"}");
        assert_eq!(map.format, VerdictFormat::JsonMap);
    }

    #[test]
    fn a_trajectory_id_of_any_value_reads_as_before() {
        // `trajectory_id` was skipped before it named a result: any value still reads, and only
        // a string or an integer names one.
        let v = parse(concat!(
            "{\"pipeline_id\":\"a\",\"verdict\":\"PASS\",\"trajectory_id\":1e999}\n",
            "{\"pipeline_id\":\"b\",\"verdict\":\"PASS\",\"trajectory_id\":{\"x\":[1]}}\n",
            "{\"pipeline_id\":\"c\",\"verdict\":\"PASS\",\"trajectory_id\":123456789012345678901234567890}\n",
            "{\"pipeline_id\":\"d\",\"verdict\":\"PASS\",\"trajectory_id\":\"t\\u00e9\"}\n",
            "{\"pipeline_id\":\"e\",\"verdict\":\"PASS\",\"trajectory_id\":null}\n",
        ));
        let named = |id: &str| {
            v.trajectory_for(
                &PipelineId {
                    text: id.into(),
                    numeric: false,
                },
                false,
            )
            .map(str::to_owned)
        };
        assert_eq!(v.records, 5);
        assert_eq!(named("a"), None);
        assert_eq!(named("b"), None);
        assert_eq!(named("c").as_deref(), Some("123456789012345678901234567890"));
        assert_eq!(named("d").as_deref(), Some("t\u{e9}"));
        assert_eq!(named("e"), None);
    }

    #[test]
    fn errors_duplicates_and_conflicts() {
        let v = parse(concat!(
            "{\"pipeline_id\":\"a\",\"verdict\":\"PASS\"}\n",
            "{\"pipeline_id\":\"a\",\"verdict\":\"PASS\"}\n",
            "{\"pipeline_id\":\"b\",\"verdict\":\"PASS\"}\n",
            "{\"pipeline_id\":\"b\",\"error\":\"timeout\"}\n",
        ));
        assert_eq!((v.records, v.duplicates), (4, 2));
        assert_eq!(v.conflicting, vec!["b".to_owned()]);
        assert_eq!(get(&v, "b").unwrap().error.as_deref(), Some("timeout"));
    }

    /// A verdict file read through [`VerdictStream`], cut at `cuts` (positions, any order):
    /// `None` when the stream asks for the file whole.
    fn streamed(text: &[u8], cuts: &[usize]) -> Result<Option<Verdicts>, InputError> {
        let mut at: Vec<usize> = cuts.iter().map(|&c| c % (text.len() + 1)).collect();
        at.push(0);
        at.push(text.len());
        at.sort_unstable();
        at.dedup();
        let mut stream = VerdictStream::start(Role::NewVerdicts, "v", text);
        for w in at.windows(2) {
            stream.feed(&text[w[0]..w[1]])?;
        }
        stream.finish()
    }

    impl Verdicts {
        /// Every kept record's id, how it is written, and the line it was read from.
        fn lines(&self) -> Vec<(String, usize, u64)> {
            let mut lines: Vec<_> = self
                .by_id
                .iter()
                .flat_map(|(id, slots)| {
                    slots
                        .iter()
                        .enumerate()
                        .filter_map(|(k, slot)| slot.as_ref().map(|kept| (id.to_string(), k, kept.line)))
                })
                .collect();
            lines.sort();
            lines
        }
    }

    /// The stream reads what the whole-file reader reads: the file's digest, the counts, every
    /// record, its line, answer place and cost; the same error in JSONL. Otherwise it asks for
    /// the file whole where the whole-file reader refuses it (never reads what that refuses),
    /// and reads it (never asks) where `vouches`.
    fn agrees(
        whole: Result<Verdicts, InputError>,
        pieces: Result<Option<Verdicts>, InputError>,
        ids: &[(String, bool)],
        vouches: bool,
    ) -> Result<(), proptest::test_runner::TestCaseError> {
        match (whole, pieces) {
            (Ok(a), Ok(Some(b))) => {
                proptest::prop_assert_eq!(&a.file, &b.file);
                proptest::prop_assert_eq!(a.format, b.format);
                proptest::prop_assert_eq!(
                    (
                        a.records,
                        a.duplicates,
                        a.ignored_stage_entries,
                        a.len(),
                        a.carries_outputs(),
                        a.carries_cost()
                    ),
                    (
                        b.records,
                        b.duplicates,
                        b.ignored_stage_entries,
                        b.len(),
                        b.carries_outputs(),
                        b.carries_cost()
                    )
                );
                proptest::prop_assert_eq!(&a.conflicting, &b.conflicting);
                proptest::prop_assert_eq!(a.lines(), b.lines());
                for (text, numeric) in ids {
                    let pid = PipelineId {
                        numeric: *numeric,
                        text: Arc::from(text.as_str()),
                    };
                    proptest::prop_assert_eq!(a.records_for(&pid, false), b.records_for(&pid, false));
                    proptest::prop_assert_eq!(a.output_for(&pid, false), b.output_for(&pid, false));
                    proptest::prop_assert_eq!(a.costs_for(&pid, false, true), b.costs_for(&pid, false, true));
                }
            }
            (Ok(_), Ok(None)) => proptest::prop_assert!(!vouches, "asked for a readable file whole"),
            (Err(_), Ok(None)) => {}
            (Err(a), Err(b)) => proptest::prop_assert_eq!(a.to_string(), b.to_string()),
            (a, b) => proptest::prop_assert!(false, "{:?} vs {:?}", a.map(|_| ()), b.map(|v| v.is_some())),
        }
        Ok(())
    }

    /// A stream told the format from `head` only, fed `pieces` (empty ones included).
    fn streamed_with_head(head: &[u8], pieces: &[&[u8]]) -> Result<Option<Verdicts>, InputError> {
        let mut stream = VerdictStream::start(Role::NewVerdicts, "v", head);
        for piece in pieces {
            stream.feed(piece)?;
        }
        stream.finish()
    }

    #[test]
    fn the_streams_edges_read_as_whole() {
        let ids = [
            ("a".to_owned(), false),
            ("p1".to_owned(), false),
            ("p2".to_owned(), false),
        ];
        let whole = |text: &[u8]| parse_verdicts(Role::NewVerdicts, "v", text);
        // A JSONL file whose first line is longer than the head the format is told from: the
        // head looks like a JSON object, whose keys would be the record's.
        let jsonl = format!(
            "{{\"pipeline_id\":\"a\",\"verdict\":\"PASS\",\"output\":\"{}\"}}\n",
            "x".repeat(5000)
        );
        let text = jsonl.as_bytes();
        assert_eq!(whole(text).unwrap().format, VerdictFormat::Jsonl);
        agrees(whole(text), streamed_with_head(&text[..100], &[text]), &ids, false).unwrap();
        // A CSV row that starts with a byte-order mark after the header, the piece cut there:
        // csv-core drops a mark at the start of what it is given; the whole-file reader keeps
        // it in the id, or refuses the row.
        for rest in ["\u{feff}p2,PASS\n", "\u{feff}\"a,b\",PASS\n"] {
            let head = "pipeline_id,verdict\np1,PASS\n";
            let text = format!("{head}{rest}");
            agrees(
                whole(text.as_bytes()),
                streamed_with_head(text.as_bytes(), &[head.as_bytes(), rest.as_bytes()]),
                &ids,
                false,
            )
            .unwrap();
        }
        // An empty piece in the middle of a row, a JSON element or a line says nothing.
        for (text, at) in [
            ("pipeline_id,verdict\np1,PASS,x\n", 23),
            ("pipeline_id,verdict\np1,PASS\n", 23),
            ("[{\"pipeline_id\":\"p1\",\"verdict\":12}]", 33),
            ("{\"p1\":12,\n\"p2\":\"PASS\"}", 6),
            ("{\"pipeline_id\":\"p1\",\"verdict\":\"PASS\"}\n", 20),
        ] {
            let bytes = text.as_bytes();
            let pieces = [&bytes[..at], &[][..], &bytes[at..]];
            agrees(
                whole(bytes),
                streamed_with_head(bytes, &pieces),
                &ids,
                !text.contains(",x"),
            )
            .unwrap();
        }
    }

    #[test]
    fn deep_answers_and_elements_cut_anywhere_read_as_whole() {
        // An element is parsed as serde_json parses it in the whole file (a raw value, which
        // takes any nesting), then read by the same code: deep answers stream, cut anywhere.
        for levels in [1usize, 127, 128, 129, 1000] {
            let value = format!("{}{}", "[".repeat(levels), "]".repeat(levels));
            for text in [
                format!("[{{\"pipeline_id\":\"a\",\"verdict\":\"PASS\",\"output\":{value}}}, {{\"pipeline_id\":7,\"verdict\":12}}]"),
                format!("{{\"a\":{{\"verdict\":\"PASS\",\"output\":{value}}},\n \"7\" : 12 }}"),
            ] {
                for piece in [1, 7, text.len()] {
                    let cuts: Vec<usize> = (0..text.len()).step_by(piece).collect();
                    agrees(
                        parse_verdicts(Role::NewVerdicts, "v", text.as_bytes()),
                        streamed(text.as_bytes(), &cuts),
                        &[("a".into(), false), ("7".into(), true), ("7".into(), false)],
                        true,
                    )
                    .unwrap_or_else(|e| panic!("{levels} levels, pieces of {piece}: {e}"));
                }
            }
        }
    }

    #[cfg(not(target_arch = "wasm32"))]
    proptest::proptest! {
        /// However a JSONL file is cut into pieces, the stream reads what the whole-file reader
        /// reads, or gives the same first error.
        #[test]
        fn a_jsonl_file_read_in_pieces_is_read_as_whole(
            records in proptest::collection::vec((0u8..6, 0u8..5, 0u8..6, 0u8..4), 0..30),
            bom in proptest::bool::ANY,
            crlf in proptest::bool::ANY,
            cuts in proptest::collection::vec(0usize..4000, 0..12),
        ) {
            let id = |n: u8| if n == 5 { "17".to_owned() } else { format!("\"p{n}\"") };
            let verdicts = ["", ",\"verdict\":\"PASS\"", ",\"verdict\":null", ",\"verdict\":3", ",\"verdict\":\"FAIL\""];
            let outputs = [
                "",
                ",\"output\":\"a long answer: \\u00e9\\u00e8 🚀 \\n next line\"",
                ",\"output\":{\"role\":\"assistant\",\"tool_calls\":[{\"id\":123456789012345678901234567890}]}",
                ",\"output\":\"cut\",\"output_truncated\":true",
                ",\"latency_ms\":12.5,\"usage\":{\"prompt_tokens\":3}",
                ",\"verdict\":",
            ];
            let extra = ["", "\n", "{\"pipeline_id\":\"p1\",\"stage_id\":\"s\",\"stage_type\":\"llm\"}\n", "  \n"];
            let nl = if crlf { "\r\n" } else { "\n" };
            let mut text = String::from(if bom { "\u{feff}" } else { "" });
            for &(i, v, o, e) in &records {
                text.push_str(extra[e as usize]);
                text.push_str(&format!("{{\"pipeline_id\":{}{}{}}}{nl}", id(i), verdicts[v as usize], outputs[o as usize]));
            }
            let ids: Vec<_> = (0..6).map(|n| (id(n).trim_matches('"').to_owned(), n == 5)).collect();
            let whole = parse_verdicts(Role::NewVerdicts, "v", text.as_bytes());
            // Told the format from the whole file, a JSONL file is always read in pieces.
            agrees(whole, streamed(text.as_bytes(), &cuts), &ids, true)?;
        }

        /// However a JSON array, a JSON object, a CSV or a TSV file is cut into pieces, the
        /// stream reads what the whole-file reader reads (and asks for the file whole only
        /// where the whole-file reader refuses it, or the file is one it does not vouch for).
        #[test]
        fn any_format_read_in_pieces_is_read_as_whole(
            format in 0u8..4,
            records in proptest::collection::vec((0u8..6, 0u8..5, 0u8..6, 0u8..5), 0..25),
            bom in proptest::bool::ANY,
            crlf in proptest::bool::ANY,
            fault in 0u8..12,
            cuts in proptest::collection::vec(0usize..4000, 0..12),
        ) {
            let nl = if crlf { "\r\n" } else { "\n" };
            // Whitespace and line breaks between the parts of the JSON.
            let space = ["", " ", nl, "\t", " \n  "];
            let verdicts = ["\"PASS\"", "null", "3", "\"FAIL, \\\"really\\\"\"", "{\"a\":[1,{\"b\":\"]}\"}]}"];
            let outputs = [
                None,
                Some("\"a long answer: \\u00e9\\u00e8 🚀 \\n next, line [ ] { }\""),
                Some("{\"role\":\"assistant\",\"tool_calls\":[{\"id\":123456789012345678901234567890}]}"),
                Some("\"\""),
                Some("[\"x\\\\\", \"\\\"\"]"),
                Some("\"plain\""),
            ];
            let ids: Vec<_> = (0..6u8).map(|n| (if n == 5 { "17".to_owned() } else { format!("p{n}") }, n == 5)).collect();
            let mut text = String::from(if bom { "\u{feff}" } else { "" });
            match format {
                0 | 1 => {
                    let (open, close) = if format == 0 { ('[', ']') } else { ('{', '}') };
                    text.push(open);
                    for (n, &(i, v, o, w)) in records.iter().enumerate() {
                        let ws = space[w as usize];
                        if n > 0 {
                            text.push_str(&format!("{ws},{ws}"));
                        }
                        let id = if i == 5 { "17".to_owned() } else { format!("\"p{i}\"") };
                        let output = outputs[o as usize].map_or(String::new(), |o| format!(",{ws}\"output\":{ws}{o}"));
                        if format == 0 {
                            text.push_str(&format!("{ws}{{\"pipeline_id\":{ws}{id},\"verdict\":{}{output}}}", verdicts[v as usize]));
                        } else {
                            let key = format!("\"{}\"", ids[i as usize].0);
                            text.push_str(&format!("{ws}{key}{ws}:{ws}{{\"verdict\":{ws}{}{output}}}", verdicts[v as usize]));
                        }
                    }
                    text.push(close);
                    text.push_str(nl);
                }
                _ => {
                    let sep = if format == 2 { "," } else { "\t" };
                    text.push_str(&format!("pipeline_id{sep}verdict{sep}output{nl}"));
                    for &(i, v, o, w) in &records {
                        let verdict = ["PASS", "", "FAIL", "\"quoted, with\nbreak\"", "\"a \"\"b\"\"\""][v as usize];
                        let output = ["", "plain", "\"two\nlines, and a comma\"", "\"\"", "\"tab\there\"", "x"][o as usize];
                        text.push_str(&format!("{}{sep}{verdict}{sep}{output}{nl}", ids[i as usize].0));
                        if w == 4 {
                            text.push_str(nl);
                        }
                    }
                }
            }
            // A fault at a place of the file: the whole-file reader's verdict decides.
            // The char boundary at or before `at`.
            let near = |t: &String, at: usize| (0..=at.min(t.len())).rev().find(|&i| t.is_char_boundary(i)).unwrap_or(0);
            let faults: [&dyn Fn(&mut String); 12] = [
                &|_| {},
                &|_| {},
                &|_| {},
                &|_| {},
                &|t| t.push('x'),
                &|t| { let at = near(t, t.len() / 2); t.insert(at, ','); },
                &|t| { let at = near(t, t.len() / 3); t.insert(at, '\n'); },
                &|t| { let at = near(t, t.len() / 2); t.insert(at, '"'); },
                &|t| { t.pop(); },
                &|t| { let at = t.rfind(['}', ']']).unwrap_or(0); t.insert(at, ','); },
                &|t| { let at = near(t, t.len() / 2); t.insert(at, '\u{0}'); },
                &|t| { let at = near(t, t.len() * 2 / 3); t.insert(at, '['); },
            ];
            faults[fault as usize](&mut text);
            let mut bytes = text.into_bytes();
            if fault == 10 && bytes.len() > 4 {
                let at = bytes.len() / 4;
                bytes[at] = 0xff;
            }
            let whole = parse_verdicts(Role::NewVerdicts, "v", &bytes);
            let pieces = streamed(&bytes, &cuts);
            proptest::prop_assert!(pieces.is_ok(), "only JSONL is refused in pieces");
            agrees(whole, pieces, &ids, fault < 4)?;
        }

        #[test]
        fn keeping_some_ids_agrees_with_keeping_all(
            records in proptest::collection::vec((0u8..6, 0u8..5, 0u8..4), 0..40),
            kept in proptest::collection::vec(0u8..6, 0..3),
        ) {
            let id = |n: u8| if n == 5 { "17".to_owned() } else { format!("\"p{n}\"") };
            let verdicts = ["", ",\"verdict\":\"PASS\"", ",\"verdict\":null", ",\"verdict\":3", ",\"verdict\":\"FAIL\""];
            let errors = ["", ",\"error\":null", ",\"error\":\"boom\"", ",\"error\":\"\""];
            let text: String = records
                .iter()
                .map(|&(i, v, e)| format!("{{\"pipeline_id\":{}{}{}}}\n", id(i), verdicts[v as usize], errors[e as usize]))
                .collect();
            let keep: KeepSet =
                kept.iter().map(|&n| Arc::from(id(n).trim_matches('"'))).collect();
            let all = parse_verdicts(Role::OldVerdicts, "v", text.as_bytes());
            let some = parse_verdicts_keeping(Role::OldVerdicts, "v", text.as_bytes(), keep.clone());
            match (all, some) {
                (Ok(all), Ok(some)) => {
                    proptest::prop_assert_eq!(
                        (some.records, some.duplicates, some.len()),
                        (all.records, all.duplicates, all.len())
                    );
                    // The same conflicts, in the same order (of first conflict in the file).
                    proptest::prop_assert_eq!(&all.conflicting, &some.conflicting);
                    for k in &keep {
                        proptest::prop_assert_eq!(get(&some, k), get(&all, k));
                    }
                }
                (Err(a), Err(b)) => proptest::prop_assert_eq!(a.to_string(), b.to_string()),
                (a, b) => proptest::prop_assert!(false, "{:?} vs {:?}", a.is_ok(), b.is_ok()),
            }
        }
    }

    #[test]
    fn keeping_only_some_ids_counts_everything_the_same() {
        let text = concat!(
            "{\"pipeline_id\":\"a\",\"verdict\":\"PASS\"}\n",
            "{\"pipeline_id\":\"x\",\"verdict\":\"PASS\"}\n",
            "{\"pipeline_id\":\"x\",\"verdict\":\"PASS\"}\n",
            "{\"pipeline_id\":\"y\",\"verdict\":\"PASS\"}\n",
            "{\"pipeline_id\":\"y\",\"error\":\"boom\"}\n",
            "{\"pipeline_id\":\"a\",\"verdict\":\"FAIL\"}\n",
        );
        let all = parse(text);
        let keep: KeepSet = [Arc::from("a")].into();
        let some = parse_verdicts_keeping(Role::OldVerdicts, "v", text.as_bytes(), keep).unwrap();
        assert_eq!(
            (some.records, some.duplicates, some.len()),
            (all.records, all.duplicates, all.len())
        );
        assert_eq!((some.len(), some.duplicates), (3, 3));
        assert_eq!(all.conflicting, some.conflicting);
        assert_eq!(some.conflicting, ["y", "a"]);
        assert_eq!(get(&some, "a"), get(&all, "a"));
        assert_eq!(get(&some, "x"), None, "not kept");
        let test_set = test_set_of(&[("a", false)], &[]);
        assert_eq!(some.count_outside(&test_set), all.count_outside(&test_set));
        assert_eq!(some.count_outside(&test_set), 2);
    }

    #[test]
    fn audit_logs_qualify_and_their_stages_are_ignored() {
        let v = parse(concat!(
            "{\"pipeline_id\":\"a\",\"stage_id\":\"s\",\"stage_type\":\"llm\"}\n",
            "{\"pipeline_id\":\"a\",\"stage_name\":\"__pipeline_complete__\",\"stage_type\":\"output\",\"verdict\":\"APPROVE\",\"is_complete\":true,\"error\":null}\n",
        ));
        assert_eq!(v.ignored_stage_entries, 1);
        assert_eq!(get(&v, "a").unwrap().verdict.as_deref(), Some("APPROVE"));
    }

    #[test]
    fn bad_lines_name_the_file_and_line() {
        let e = parse_verdicts(
            Role::NewVerdicts,
            "new.jsonl",
            b"{\"pipeline_id\":\"a\",\"verdict\":\"P\"}\n\n{\"pipeline_id\":\"b\",\"verdict\":",
        )
        .unwrap_err();
        assert_eq!(
            e.to_string(),
            "new.jsonl (new_verdicts) line 3, column 29: not valid JSON: EOF while parsing a value"
        );
        let e = parse_verdicts(Role::NewVerdicts, "n", b"{\"pipeline_id\":[1],\"verdict\":true}").unwrap_err();
        assert_eq!(e.line, Some(1));
        assert!(e.message.contains("pipeline_id is an array or object"), "{e}");
        let e = parse_verdicts(Role::NewVerdicts, "n", b"{\"pipeline_id\":\"a\"}").unwrap_err();
        assert!(e.message.contains("neither"), "{e}");
        let e = parse_verdicts(Role::NewVerdicts, "n", b"id,verdict\na,PASS\n").unwrap_err();
        assert!(e.message.contains("pipeline_id"), "{e}");
        let e = parse_verdicts(
            Role::NewVerdicts,
            "n",
            b"[{\"pipeline_id\":\"a\",\"verdict\":\"P\"},\n 3]",
        )
        .unwrap_err();
        assert_eq!(
            e.to_string(),
            "n (new_verdicts) line 2, column 2: element 1: array element is not a JSON object"
        );
        let e = parse_verdicts(Role::NewVerdicts, "n", b"{\"a\": \"P\",\n \"b\": {\"latency\": 3}}").unwrap_err();
        assert_eq!(
            e.to_string(),
            "n (new_verdicts) line 2, column 7: pipeline b: the object has neither a verdict nor an error"
        );
    }
    fn id(text: &str, numeric: bool) -> PipelineId {
        PipelineId {
            text: text.into(),
            numeric,
        }
    }

    #[test]
    fn cost_fields_are_kept_for_each_run() {
        let v = parse(concat!(
            "{\"pipeline_id\":7,\"verdict\":\"PASS\",\"latency_ms\":812.4,\"usage\":{\"prompt_tokens\":120,\"completion_tokens\":9,\"total_tokens\":129},\"attempts\":1,\"target\":\"sha256:ab\"}\n",
            "{\"pipeline_id\":\"p2\",\"error\":\"HTTP 503: overloaded (4 attempts)\",\"latency_ms\":60000,\"attempts\":4,\"target\":\"sha256:ab\"}\n",
            "{\"pipeline_id\":\"p2\",\"verdict\":\"FAIL\"}\n",
            "{\"pipeline_id\":\"p3\",\"verdict\":\"FAIL\",\"usage\":{}}\n",
        ));
        assert!(v.carries_cost());
        let (n, costs) = v.costs_for(&id("7", true), false, false);
        assert_eq!(n, 1);
        assert_eq!(
            costs,
            [&RecordCost {
                latency_ms: Some(812.4),
                usage: Some(crate::cost::Usage {
                    prompt_tokens: Some(120),
                    completion_tokens: Some(9)
                }),
                attempts: Some(1),
                target: Some("sha256:ab".into()),
                metrics: None,
            }]
        );
        // The last record of p2 has none; both runs count under `mean`, the first with a cost.
        assert_eq!(v.costs_for(&id("p2", false), false, false), (1, vec![]));
        let (n, costs) = v.costs_for(&id("p2", false), false, true);
        assert_eq!(
            (n, costs.len(), costs[0].latency_ms, costs[0].attempts),
            (2, 1, Some(60000.0), Some(4))
        );
        // The records differing in cost fields only are not conflicting; an empty usage is kept.
        assert_eq!(v.conflicting, ["p2"]);
        let (_, costs) = v.costs_for(&id("p3", false), false, false);
        assert_eq!(costs[0].usage, Some(crate::cost::Usage::default()));
        // One target shared by both records.
        assert_eq!(v.targets.len(), 1);
        let same = parse(concat!(
            "{\"pipeline_id\":\"a\",\"verdict\":\"PASS\",\"latency_ms\":1}\n",
            "{\"pipeline_id\":\"a\",\"verdict\":\"PASS\",\"latency_ms\":2}\n",
        ));
        assert!(same.conflicting.is_empty());
    }

    #[test]
    fn a_file_without_cost_fields_keeps_none() {
        let v = parse(
            "{\"pipeline_id\":\"a\",\"verdict\":\"PASS\",\"latency\":3}\n[1]\n"
                .split('[')
                .next()
                .unwrap(),
        );
        assert!(!v.carries_cost());
        assert!(v.costs.is_empty());
        assert_eq!(v.costs_for(&id("a", false), false, true), (1, vec![]));
        // Records not kept still tell that the file carries costs.
        let text = "{\"pipeline_id\":\"x\",\"verdict\":\"PASS\",\"attempts\":2}\n";
        let some = parse_verdicts_keeping(Role::OldVerdicts, "v", text.as_bytes(), KeepSet::new()).unwrap();
        assert!(some.carries_cost() && some.costs.is_empty());
    }

    /// Each unusable cost value is an error at its line and at the column where the value is.
    #[test]
    fn bad_cost_values_name_the_line_and_column() {
        let cases = [
            (
                "\"latency_ms\":\"812\"",
                "latency_ms is a string, expected a finite non-negative number of milliseconds",
            ),
            (
                "\"latency_ms\":-1.5",
                "latency_ms is negative, expected a finite non-negative number of milliseconds",
            ),
            (
                "\"latency_ms\":null",
                "latency_ms is null, expected a finite non-negative number of milliseconds",
            ),
            (
                "\"latency_ms\":[1]",
                "latency_ms is an array or object, expected a finite non-negative number of milliseconds",
            ),
            ("\"usage\":7", "usage is not a JSON object"),
            ("\"usage\":null", "usage is not a JSON object"),
            (
                "\"usage\":{\"prompt_tokens\":-3}",
                "usage.prompt_tokens is negative, expected a non-negative integer",
            ),
            (
                "\"usage\":{\"completion_tokens\":1.5}",
                "usage.completion_tokens is a number with a fraction or an exponent, expected a non-negative integer",
            ),
            (
                "\"usage\":{\"completion_tokens\":\"9\"}",
                "usage.completion_tokens is a string, expected a non-negative integer",
            ),
            (
                "\"usage\":{\"prompt_tokens\":99999999999999999999}",
                "usage.prompt_tokens is too large (2^64 or more), expected a non-negative integer",
            ),
            (
                "\"usage\":{\"prompt_tokens\":1,\"prompt_tokens\":2}",
                "usage.prompt_tokens is given twice",
            ),
            ("\"attempts\":0", "attempts is 0, expected a positive integer"),
            (
                "\"attempts\":2.0",
                "attempts is a number with a fraction or an exponent, expected a positive integer",
            ),
            (
                "\"attempts\":true",
                "attempts is a boolean, expected a positive integer",
            ),
            ("\"target\":5", "target is a number, expected a string"),
            ("\"latency_ms\":1,\"latency_ms\":2", "latency_ms is given twice"),
            ("\"target\":\"a\",\"target\":\"a\"", "target is given twice"),
        ];
        // An integer too wide for a double (`1e400` is not JSON the reader takes at all).
        let wide = format!("\"latency_ms\":1{}", "0".repeat(400));
        let cases = cases.iter().map(|&(f, w)| (f.to_owned(), w)).chain([(
            wide,
            "latency_ms is not finite, expected a finite non-negative number of milliseconds",
        )]);
        let head = "{\"pipeline_id\":\"a\",\"verdict\":\"P\",";
        for (fields, want) in cases {
            // The value at fault: the last of the key's values, or the inner one in `usage`.
            let bad = fields.rfind(':').unwrap() + 1;
            let column = head.len() + bad + 1;
            let text = format!("{head}\"latency_ms\":5}}\n{head}{fields}}}\n");
            let e = parse_verdicts(Role::NewVerdicts, "new.jsonl", text.as_bytes()).unwrap_err();
            assert_eq!(
                e.to_string(),
                format!("new.jsonl (new_verdicts) line 2, column {column}: {want}")
            );
            let array = format!("[{head}\"latency_ms\":5}},\n {head}{fields}}}]");
            let e = parse_verdicts(Role::NewVerdicts, "new.json", array.as_bytes()).unwrap_err();
            assert_eq!(
                e.to_string(),
                format!(
                    "new.json (new_verdicts) line 2, column {}: element 1: {want}",
                    column + 1
                )
            );
        }
        // The column of a token count inside `usage`, counted by hand.
        let e = parse_verdicts(
            Role::OldVerdicts,
            "o",
            b"{\"pipeline_id\":1,\"verdict\":\"P\",\"usage\":{\"total_tokens\":3,\"prompt_tokens\":\"x\"}}",
        )
        .unwrap_err();
        assert_eq!(
            e.to_string(),
            "o (old_verdicts) line 1, column 74: usage.prompt_tokens is a string, expected a non-negative integer"
        );
    }

    #[cfg(not(target_arch = "wasm32"))]
    proptest::proptest! {
        /// Valid cost fields change nothing but the costs: the same records, duplicates and
        /// conflicts as the file without them, and each kept record's cost as written.
        #[test]
        fn cost_fields_change_nothing_else(
            records in proptest::collection::vec((0u8..4, 0u8..3, proptest::option::of(0u32..100_000), proptest::option::of(1u64..5)), 0..30),
        ) {
            let mut with = String::new();
            let mut without = String::new();
            for &(i, v, ms, attempts) in &records {
                let base = format!("{{\"pipeline_id\":\"p{i}\",\"verdict\":{}", ["\"PASS\"", "\"FAIL\"", "null"][v as usize]);
                without.push_str(&base);
                without.push_str("}\n");
                with.push_str(&base);
                if let Some(ms) = ms {
                    with.push_str(&format!(",\"latency_ms\":{}", f64::from(ms) / 10.0));
                }
                if let Some(n) = attempts {
                    with.push_str(&format!(",\"attempts\":{n},\"usage\":{{\"prompt_tokens\":{n}}}"));
                }
                with.push_str("}\n");
            }
            let a = parse(&with);
            let b = parse(&without);
            proptest::prop_assert_eq!((a.records, a.duplicates, a.len(), &a.conflicting), (b.records, b.duplicates, b.len(), &b.conflicting));
            proptest::prop_assert_eq!(a.carries_cost(), records.iter().any(|r| r.2.is_some() || r.3.is_some()));
            for i in 0..4u8 {
                let pid = id(&format!("p{i}"), false);
                proptest::prop_assert_eq!(a.get(&pid), b.get(&pid));
                let runs: Vec<_> = records.iter().filter(|r| r.0 == i).collect();
                let (n, costs) = a.costs_for(&pid, false, true);
                proptest::prop_assert_eq!(n, runs.len());
                let latencies: Vec<f64> = costs.iter().filter_map(|c| c.latency_ms).collect();
                let want: Vec<f64> = runs.iter().filter_map(|r| r.2.map(|ms| f64::from(ms) / 10.0)).collect();
                proptest::prop_assert_eq!(latencies, want);
            }
        }
    }

    /// The progress a mapped file's reader is given: the hash a MiB at a time up to the end,
    /// then, in each pass over the records, the growing offsets of ids read in place (none for
    /// CSV); the verdicts are the same as without it.
    #[test]
    fn progress_tells_how_far_the_reading_is_and_changes_nothing() {
        let ids: Vec<String> = (0..60_000).map(|i| format!("p-{i}")).collect();
        let mut jsonl = String::new();
        for (i, id) in ids.iter().enumerate() {
            jsonl.push_str(&format!(
                "{{\"pipeline_id\": \"{id}\", \"verdict\": \"{}\"}}\n",
                ["PASS", "FAIL"][i % 3 / 2]
            ));
        }
        // An id outside the kept ones repeated with another verdict: the records are read twice.
        jsonl.push_str("{\"pipeline_id\": \"p-7\", \"verdict\": \"FAIL\"}\n");
        let array = format!(
            "[{}]",
            ids.iter()
                .map(|id| format!("{{\"pipeline_id\": \"{id}\", \"verdict\": \"PASS\"}}"))
                .collect::<Vec<_>>()
                .join(", ")
        );
        let map = format!(
            "{{{}}}",
            ids.iter()
                .map(|id| format!("\"{id}\": \"PASS\""))
                .collect::<Vec<_>>()
                .join(", ")
        );
        let csv = format!(
            "pipeline_id,verdict\n{}",
            ids.iter().map(|id| format!("{id},PASS\n")).collect::<String>()
        );
        let keep: KeepSet = ["p-1", "p-500", "p-59999"].into_iter().map(Into::into).collect();
        for (text, in_place, passes) in [(&jsonl, true, 2), (&array, true, 1), (&map, true, 1), (&csv, false, 1)] {
            let bytes = text.as_bytes();
            let mut seen = Vec::new();
            let with = parse_verdicts_keeping_with_progress(Role::OldVerdicts, "v", bytes, keep.clone(), &mut |at| {
                seen.push(at)
            })
            .unwrap();
            let without = parse_verdicts_keeping(Role::OldVerdicts, "v", bytes, keep.clone()).unwrap();
            // (Their hash sets list in no set order: the fields compared one by one.)
            let fields = |v: &Verdicts| {
                let mut kept: Vec<String> = v.by_id.iter().map(|r| format!("{r:?}")).collect();
                kept.sort();
                format!(
                    "{:?} {:?} {} {} {:?} {} {} {} {kept:?}",
                    v.file,
                    v.format,
                    v.records,
                    v.duplicates,
                    v.conflicting,
                    v.ignored_stage_entries,
                    v.others_distinct,
                    v.others.len()
                )
            };
            assert_eq!(fields(&with), fields(&without));
            let hashed = bytes.len().div_ceil(1 << 20);
            let expected_hash: Vec<usize> = (1..=hashed).map(|k| (k << 20).min(bytes.len())).collect();
            assert_eq!(seen[..hashed], expected_hash[..]);
            let records = &seen[hashed..];
            if !in_place {
                assert!(records.is_empty());
                continue;
            }
            // Each pass's offsets grow, each the start of an id in the file.
            let restarts = records.windows(2).filter(|w| w[1] < w[0]).count();
            assert_eq!(restarts + 1, passes, "{}", &text[..20]);
            // (Every record gives its offset, but in JSONL a line across a cut of the file into
            // MiB pieces, which is read from a copy.)
            let cut = if text.starts_with('{') && text.contains('\n') {
                bytes.len() >> 20
            } else {
                0
            };
            let all = passes * with.records as usize;
            assert!(
                records.len() <= all && records.len() + passes * cut >= all,
                "{} of {all}",
                records.len()
            );
            for &at in records {
                assert!(text[at..].starts_with("p-"), "{at}");
            }
        }
    }

    /// The answer of `id`'s kept record, read back from the file's bytes.
    fn answer(bytes: &[u8], id: &str, numeric: bool) -> Option<(String, bool)> {
        let v = parse_verdicts(Role::NewVerdicts, "v", bytes).unwrap();
        let at = v.output_for(
            &PipelineId {
                text: id.into(),
                numeric,
            },
            false,
        )?;
        Some((read_output(bytes, &at)?, at.truncated))
    }

    #[test]
    fn answers_are_found_in_every_format_and_read_back_as_written() {
        let s = |t: &str| Some((t.to_owned(), false));
        // JSONL: a string, any JSON value as written (whitespace inside kept), none, cut.
        let jsonl = concat!(
            "{\"pipeline_id\": \"a\", \"verdict\": \"PASS\", \"output\": \"the \\\"answer\\\"\\n\"}\n",
            "{\"pipeline_id\": 7, \"verdict\": \"FAIL\", \"output\": {\"content\": null, \"tool_calls\": [ 1, 2 ]}}\n",
            "{\"pipeline_id\": \"c\", \"verdict\": \"PASS\"}\n",
            "{\"pipeline_id\": \"d\", \"error\": \"no verdict\", \"output\": \"garbage\", \"output_truncated\": true}\n",
        );
        let b = jsonl.as_bytes();
        assert_eq!(answer(b, "a", false), s("\"the \\\"answer\\\"\\n\""));
        assert_eq!(answer(b, "7", true), s("{\"content\": null, \"tool_calls\": [ 1, 2 ]}"));
        assert_eq!(answer(b, "c", false), None);
        assert_eq!(answer(b, "d", false), Some(("\"garbage\"".into(), true)));
        // The same with a byte-order mark and CRLF line ends.
        let with_bom = [b"\xef\xbb\xbf".as_slice(), jsonl.replace('\n', "\r\n").as_bytes()].concat();
        assert_eq!(answer(&with_bom, "a", false), s("\"the \\\"answer\\\"\\n\""));
        // A JSON array, and a JSON object of `{verdict, output}` (a bare verdict has none).
        let array = br#"[{"pipeline_id": "a", "verdict": "PASS", "output": ["x", {"y": 1}]}]"#;
        assert_eq!(answer(array, "a", false), s(r#"["x", {"y": 1}]"#));
        let map = br#"{"a": {"verdict": "PASS", "output": "hi", "output_truncated": true}, "b": "FAIL"}"#;
        assert_eq!(answer(map, "a", false), Some(("\"hi\"".into(), true)));
        assert_eq!(answer(map, "b", false), None);
        // CSV: the field as written (quoted, with a comma, a doubled quote and a line break; not
        // trimmed), as a JSON string; TSV; an empty field is no answer.
        let csv = "pipeline_id,verdict,output\na,PASS,\" two, \"\"lines\"\"\nhere \"\nb,FAIL,\nc,PASS,plain\n";
        assert_eq!(answer(csv.as_bytes(), "a", false), s("\" two, \\\"lines\\\"\\nhere \""));
        assert_eq!(answer(csv.as_bytes(), "b", false), None);
        assert_eq!(answer(csv.as_bytes(), "c", false), s("\"plain\""));
        let crlf = [b"\xef\xbb\xbf".as_slice(), csv.replace('\n', "\r\n").as_bytes()].concat();
        assert_eq!(answer(&crlf, "c", false), s("\"plain\""));
        let tsv = "pipeline_id\tverdict\toutput\toutput_truncated\na\tPASS\tsome\ttext\ttrue\n";
        assert!(
            parse_verdicts(Role::NewVerdicts, "v", tsv.as_bytes()).is_err(),
            "5 fields where the header has 4"
        );
        let tsv = "pipeline_id\tverdict\toutput\toutput_truncated\na\tPASS\tsome text\tTRUE\n";
        assert_eq!(answer(tsv.as_bytes(), "a", false), Some(("\"some text\"".into(), true)));
    }

    /// A JSONL file is read in pieces (of 1 MiB); a line that crosses from one to the next is read
    /// from a copy, and its answer's place must still be the file's.
    #[test]
    fn answers_on_lines_across_the_pieces_of_a_large_file_are_found() {
        let answer = |i: usize| format!("answer {i} {}", "x".repeat(700 + i % 97));
        let text: String = (0..4000)
            .map(|i| {
                format!(
                    "{{\"pipeline_id\": \"p{i}\", \"verdict\": \"PASS\", \"output\": \"{}\"}}\n",
                    answer(i)
                )
            })
            .collect();
        assert!(text.len() > 3 << 20);
        let bytes = text.as_bytes();
        let v = parse_verdicts(Role::NewVerdicts, "v", bytes).unwrap();
        for i in 0..4000 {
            let id = PipelineId {
                text: format!("p{i}").into(),
                numeric: false,
            };
            let at = v
                .output_for(&id, false)
                .unwrap_or_else(|| panic!("p{i} lost its answer"));
            let read = read_output(bytes, &at).unwrap_or_else(|| panic!("p{i}: nothing at {at:?}"));
            assert_eq!(read, format!("\"{}\"", answer(i)), "p{i}");
        }
    }

    /// `output_truncated` is read as it was skipped before: any JSON value is accepted, and only
    /// `true` marks a cut.
    #[test]
    fn any_output_truncated_value_is_accepted_and_only_true_marks_a_cut() {
        for (value, cut) in [
            ("true", true),
            ("false", false),
            ("1e400", false),
            ("\"\\ud800\"", false),
            ("[true]", false),
        ] {
            let line = format!(
                "{{\"pipeline_id\": \"a\", \"verdict\": \"PASS\", \"output\": \"o\", \"output_truncated\": {value}}}\n"
            );
            assert_eq!(
                answer(line.as_bytes(), "a", false),
                Some(("\"o\"".into(), cut)),
                "{value}"
            );
            let map = format!("{{\"a\": {{\"verdict\": \"PASS\", \"output\": \"o\", \"output_truncated\": {value}}}}}");
            assert_eq!(
                answer(map.as_bytes(), "a", false),
                Some(("\"o\"".into(), cut)),
                "{value}"
            );
        }
    }

    #[test]
    fn a_later_record_of_a_case_brings_its_own_answer_or_none() {
        let b = concat!(
            "{\"pipeline_id\": \"a\", \"verdict\": \"FAIL\", \"output\": \"first\"}\n",
            "{\"pipeline_id\": \"a\", \"verdict\": \"PASS\", \"output\": \"second\"}\n",
            "{\"pipeline_id\": \"b\", \"verdict\": \"FAIL\", \"output\": \"first\"}\n",
            "{\"pipeline_id\": \"b\", \"verdict\": \"FAIL\"}\n",
        )
        .as_bytes();
        assert_eq!(answer(b, "a", false), Some(("\"second\"".into(), false)));
        assert_eq!(answer(b, "b", false), None);
    }

    #[test]
    fn answers_never_change_what_is_read_and_are_not_read_from_other_bytes() {
        let with = concat!(
            "{\"pipeline_id\": \"a\", \"verdict\": \"PASS\", \"output\": {\"v\": \"FAIL\"}}\n",
            "{\"pipeline_id\": \"a\", \"verdict\": \"PASS\", \"output\": \"other\"}\n",
        );
        let without =
            "{\"pipeline_id\": \"a\", \"verdict\": \"PASS\"}\n{\"pipeline_id\": \"a\", \"verdict\": \"PASS\"}\n";
        let (a, b) = (parse(with), parse(without));
        assert_eq!(get(&a, "a"), get(&b, "a"));
        assert_eq!((a.duplicates, a.conflicting.len()), (b.duplicates, b.conflicting.len()));
        // Offsets into another file give nothing rather than another file's text.
        let id = PipelineId {
            text: "a".into(),
            numeric: false,
        };
        let at = a.output_for(&id, false).unwrap();
        assert_eq!(read_output(with.as_bytes(), &at).as_deref(), Some("\"other\""));
        assert_eq!(read_output(b"{}", &at), None);
        assert_eq!(read_output(&with.as_bytes()[..at.end as usize - 1], &at), None);
        let shifted = OutputAt {
            start: at.start + 1,
            ..at
        };
        assert_eq!(read_output(with.as_bytes(), &shifted), None, "not a JSON value there");
    }
}
