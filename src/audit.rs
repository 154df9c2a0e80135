//! Pass 1 over the audit log: classifies every line and indexes each pipeline's lines.
//!
//! The scanner keeps, per pipeline, its winning successful completion and the byte ranges of
//! its stage lines, never their contents: the test set is built in pass 2 from just the lines
//! of the chosen pipelines (see [`crate::testset`]).

use crate::compat::PassSet;
use crate::json::{nested_field, read_object_text, NotObject, PyText, Scalar};
use crate::lines::{LineSplitter, Piece};
use hashbrown::{DefaultHashBuilder, HashTable};
use serde::{Serialize, Serializer};
use sha2::{Digest, Sha256};
use std::collections::BTreeMap;
use std::hash::BuildHasher;

/// Lines longer than this are skipped (reason `line_too_long`) without being buffered.
pub const DEFAULT_MAX_LINE: usize = 256 << 20;

/// How many line numbers are kept per skip reason.
const FIRST_LINES_KEPT: usize = 5;

/// The name the real writer gives its completion entries.
const COMPLETE_STAGE_NAME: &str = "__pipeline_complete__";

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
    pub fn from_scalar(value: &Scalar<'_>) -> Result<PipelineId, SkipReason> {
        match value {
            Scalar::Str(s) if !s.is_empty() => Ok(PipelineId {
                text: s.as_ref().into(),
                numeric: false,
            }),
            Scalar::Int(i) if *i != 0 => Ok(PipelineId {
                text: i.to_string().into(),
                numeric: true,
            }),
            Scalar::Absent | Scalar::Null | Scalar::Str(_) | Scalar::Int(_) | Scalar::Bool(false) => {
                Err(SkipReason::NoPipelineId)
            }
            _ => Err(SkipReason::BadPipelineId),
        }
    }
}

/// The id text of a `pipeline_id` value without allocating for strings (as
/// [`PipelineId::from_scalar`] decides).
fn id_text<'a>(value: &'a Scalar<'_>) -> Result<(std::borrow::Cow<'a, str>, bool), SkipReason> {
    match value {
        Scalar::Str(s) if !s.is_empty() => Ok((std::borrow::Cow::Borrowed(s.as_ref()), false)),
        Scalar::Int(i) if *i != 0 => Ok((std::borrow::Cow::Owned(i.to_string()), true)),
        other => PipelineId::from_scalar(other).map(|_| unreachable!("every accepted id is handled above")),
    }
}

/// [`id_text`] of a value given up: a string is moved, not copied.
pub(crate) fn into_id_text(value: Scalar<'_>) -> Result<std::borrow::Cow<'_, str>, SkipReason> {
    match value {
        Scalar::Str(s) if !s.is_empty() => Ok(s),
        other => id_text(&other).map(|(text, _)| std::borrow::Cow::Owned(text.into_owned())),
    }
}

impl std::fmt::Display for PipelineId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.text)
    }
}

impl Serialize for PipelineId {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self.text.parse::<i128>() {
            Ok(n) if self.numeric => s.serialize_i128(n),
            _ => s.serialize_str(&self.text),
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
    /// `pipeline_id` is absent, null, `""` or `0`.
    NoPipelineId,
    /// `pipeline_id` is neither a string nor an integer.
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

/// Where a line is: file index (in the order given), byte offset and length of its content.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct LineRef {
    /// Index of the file among the audit files.
    pub file: u32,
    /// Byte offset of the content in that file.
    pub offset: u64,
    /// Length of the content (no line ending).
    pub len: u32,
}

/// A file read as input, as listed in the report.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct InputFile {
    /// What the file is: `audit`, `old_verdicts`, `new_verdicts`, `old_trajectories`, `new_trajectories`.
    pub role: String,
    /// The file name (no directory).
    pub name: String,
    /// Its size in bytes.
    pub bytes: u64,
    /// Lowercase hex sha256 of its bytes.
    pub sha256: String,
}

/// A line, named for the report.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct LineLocation {
    /// File name.
    pub file: String,
    /// 1-based line number.
    pub line: u64,
}

/// Count and first locations of one kind of skipped line.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Default)]
pub struct SkipStat {
    /// Lines skipped for this reason.
    pub count: u64,
    /// The first few of them.
    pub first_lines: Vec<LineLocation>,
}

/// What pass 1 saw: line counts by kind, skipped lines by reason, pipeline counts.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Default)]
pub struct AuditSummary {
    /// Number of audit files read.
    pub files: usize,
    /// Bytes read, all files.
    pub bytes: u64,
    /// Lines read, including blank and skipped ones.
    pub lines: u64,
    /// Blank (whitespace-only) lines.
    pub blank_lines: u64,
    /// Stage entries.
    pub stage_entries: u64,
    /// Completion entries (successful or not).
    pub completion_entries: u64,
    /// Completion entries that were successful.
    pub successful_completions: u64,
    /// Skipped lines by reason.
    pub skipped: BTreeMap<String, SkipStat>,
    /// Distinct pipelines seen.
    pub pipelines: u64,
    /// Pipelines with a successful completion.
    pub successful_pipelines: u64,
    /// Successful pipelines without any stage entry (no test case).
    pub successful_without_stages: u64,
    /// Successful pipelines whose stage entries carry no input (no test case).
    pub successful_without_input: u64,
    /// Successful pipelines with stages and an input: the test-case candidates.
    pub candidates: u64,
}

/// A place in the audit stream: a file (in the order given) and a byte offset in it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Default)]
pub struct Pos {
    /// Index of the file among the audit files.
    pub file: u32,
    /// Byte offset in that file.
    pub offset: u64,
}

/// The fields of a line that pass 1 needs.
#[derive(Default)]
struct Fields<'a> {
    pipeline_id: Scalar<'a>,
    has_is_complete: bool,
    is_complete: bool,
    completion_name: bool,
    has_stage_key: bool,
    verdict: Option<PyText<'a>>,
    error_set: bool,
    input_set: bool,
    snapshot_input_set: bool,
}

/// Offset stored for "no successful completion".
const NO_SUCCESS: u64 = u64::MAX;

/// One pipeline in the index, in a fixed-size record (its id is in the table's arena).
///
/// Its stage lines are kept as a span, not a list: where the first starts, where the last ends
/// and how many there are. Pass 2 reads the spans of the chosen pipelines and picks their
/// stage lines out again (see [`crate::testset`]), so the index costs the same per pipeline
/// however many stages each has.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Pipeline {
    id_start: u64,
    id_len: u32,
    /// Stage lines seen, in the low 62 bits; the top two are [`NUMERIC`] and [`HAS_INPUT`].
    stages_and_flags: u64,
    first_file: u32,
    end_file: u32,
    first_offset: u64,
    end_offset: u64,
    /// Rank of the first successful completion among all pipelines (there are fewer than
    /// 2^32 pipelines).
    first_rank: u32,
    success_file: u32,
    success_len: u32,
    /// Offset of the winning (last) successful completion, or [`NO_SUCCESS`].
    success_offset: u64,
}

/// [`Pipeline::stages_and_flags`]: the id was written as an integer.
const NUMERIC: u64 = 1 << 63;
/// [`Pipeline::stages_and_flags`]: a stage line carries an input.
const HAS_INPUT: u64 = 1 << 62;
/// [`Pipeline::stages_and_flags`]: the stage count.
const STAGES: u64 = HAS_INPUT - 1;

// The record's size is what the index costs per pipeline, besides its id and its hash slot.
const _: () = assert!(std::mem::size_of::<Pipeline>() == 64);

impl Pipeline {
    fn new(id_start: u64, id_len: u32, numeric: bool) -> Self {
        Pipeline {
            id_start,
            id_len,
            stages_and_flags: if numeric { NUMERIC } else { 0 },
            first_file: 0,
            end_file: 0,
            first_offset: 0,
            end_offset: 0,
            first_rank: 0,
            success_file: 0,
            success_len: 0,
            success_offset: NO_SUCCESS,
        }
    }

    /// Counts a stage line (they come in stream order).
    fn add_stage(&mut self, at: LineRef) {
        let start = Pos {
            file: at.file,
            offset: at.offset,
        };
        let end = Pos {
            file: at.file,
            offset: at.offset + at.len as u64,
        };
        self.add_stages(start, end, 1);
    }

    /// Counts `count` stage lines from `first` to `end`, which come after those already counted.
    fn add_stages(&mut self, first: Pos, end: Pos, count: u64) {
        if count == 0 {
            return;
        }
        if self.stage_count() == 0 {
            (self.first_file, self.first_offset) = (first.file, first.offset);
        }
        self.set_stage_count(self.stage_count() + count);
        (self.end_file, self.end_offset) = (end.file, end.offset);
    }

    /// Stage lines seen.
    pub fn stage_count(&self) -> u64 {
        self.stages_and_flags & STAGES
    }

    fn set_stage_count(&mut self, count: u64) {
        // (2^62 stage lines are more than any file holds.)
        self.stages_and_flags = (self.stages_and_flags & !STAGES) | count.min(STAGES);
    }

    /// The id was written as an integer.
    pub fn numeric(&self) -> bool {
        self.stages_and_flags & NUMERIC != 0
    }

    /// A stage line carries an input.
    pub fn has_input(&self) -> bool {
        self.stages_and_flags & HAS_INPUT != 0
    }

    fn add_input(&mut self, has_input: bool) {
        if has_input {
            self.stages_and_flags |= HAS_INPUT;
        }
    }

    /// Where the first stage line starts (meaningful when `stage_count > 0`).
    pub fn first_stage(&self) -> Pos {
        Pos {
            file: self.first_file,
            offset: self.first_offset,
        }
    }

    /// Where the last stage line ends, before its line ending.
    pub fn stages_end(&self) -> Pos {
        Pos {
            file: self.end_file,
            offset: self.end_offset,
        }
    }

    /// The rank of its first successful completion and the line of its last one.
    pub fn success(&self) -> Option<(u64, LineRef)> {
        (self.success_offset != NO_SUCCESS).then_some((
            u64::from(self.first_rank),
            LineRef {
                file: self.success_file,
                offset: self.success_offset,
                len: self.success_len,
            },
        ))
    }

    fn set_success_line(&mut self, line: LineRef) {
        self.success_file = line.file;
        self.success_offset = line.offset;
        self.success_len = line.len;
    }

    /// Records a successful completion; `rank` is taken (and true returned) when it is the first.
    fn add_success(&mut self, rank: u64, line: LineRef) -> bool {
        let first = self.success_offset == NO_SUCCESS;
        if first {
            self.first_rank = u32::try_from(rank).expect("fewer than 4 billion pipelines");
        }
        self.set_success_line(line);
        first
    }
}

/// The table's hash of a pipeline, made from the 32 bits of its id's hash it keeps: its top
/// bits and its low bits are used.
fn spread(h: u32) -> u64 {
    (u64::from(h) << 32) | u64::from(h)
}

/// Pipelines by id: fixed-size records, their ids in one arena, a hash table of indices.
#[derive(Default)]
pub(crate) struct Pipelines {
    hasher: DefaultHashBuilder,
    /// `(index, 32-bit hash of the id)`: the table grows without reading the records.
    table: HashTable<(u32, u32)>,
    list: Vec<Pipeline>,
    ids: Vec<u8>,
}

impl Pipelines {
    /// The id text of pipeline `p`.
    pub fn text(&self, p: &Pipeline) -> &str {
        let bytes = &self.ids[p.id_start as usize..p.id_start as usize + p.id_len as usize];
        std::str::from_utf8(bytes).expect("ids are stored from str")
    }

    /// The id of pipeline `p`.
    pub fn id(&self, p: &Pipeline) -> PipelineId {
        PipelineId {
            text: self.text(p).into(),
            numeric: p.numeric(),
        }
    }

    /// The records, in order of first appearance.
    pub fn list(&self) -> &[Pipeline] {
        &self.list
    }

    fn len(&self) -> usize {
        self.list.len()
    }

    /// Room for `more` pipelines whose ids take about `id_bytes` bytes in all.
    fn reserve(&mut self, more: usize, id_bytes: usize) {
        self.list.reserve(more);
        self.ids.reserve(id_bytes);
        self.table.reserve(more, |&(_, h)| spread(h));
    }

    /// The index of the pipeline with this id text, inserted if new.
    fn entry(&mut self, text: &str, numeric: bool) -> usize {
        let short = (self.hasher.hash_one(text.as_bytes()) >> 32) as u32;
        let (list, ids) = (&self.list, &self.ids);
        let text_of = |i: u32| {
            let p = &list[i as usize];
            &ids[p.id_start as usize..p.id_start as usize + p.id_len as usize]
        };
        if let Some(&(i, _)) = self
            .table
            .find(spread(short), |&(i, h)| h == short && text_of(i) == text.as_bytes())
        {
            return i as usize;
        }
        let i = self.list.len();
        let index = u32::try_from(i).expect("fewer than 4 billion pipelines");
        self.list
            .push(Pipeline::new(self.ids.len() as u64, text.len() as u32, numeric));
        self.ids.extend_from_slice(text.as_bytes());
        self.table
            .insert_unique(spread(short), (index, short), |&(_, h)| spread(h));
        i
    }
}

/// Line counts by kind.
#[derive(Debug, Clone, Copy, Default)]
struct Counts {
    lines: u64,
    blank_lines: u64,
    stage_entries: u64,
    completion_entries: u64,
    successful_completions: u64,
}

/// Pass 1 over one part of one audit file: the whole file, or a byte range of it that starts at
/// a line start. Parts of a file can be scanned independently (in parallel) and merged in file
/// order by an [`IndexBuilder`]; the result is the same as scanning the file in one piece.
pub struct Segment {
    file: u32,
    max_line: usize,
    pass: PassSet,
    splitter: LineSplitter,
    counts: Counts,
    /// Skip counts and the first local line numbers, by reason.
    skips: BTreeMap<SkipReason, (u64, Vec<u64>)>,
    pipelines: Pipelines,
    next_rank: u64,
}

impl Segment {
    /// A segment of file number `file` (in the order the files are merged) that starts at byte
    /// `offset` of it, which must be 0 or just after a newline.
    pub fn new(pass: PassSet, max_line: usize, file: u32, offset: u64) -> Segment {
        Segment {
            file,
            max_line,
            pass,
            splitter: LineSplitter::starting_at(offset, max_line),
            counts: Counts::default(),
            skips: BTreeMap::new(),
            pipelines: Pipelines::default(),
            next_rank: 0,
        }
    }

    /// Feeds the segment's next bytes.
    pub fn push(&mut self, chunk: &[u8]) {
        let mut splitter = std::mem::replace(&mut self.splitter, LineSplitter::new(0));
        splitter.push(chunk, |piece| self.piece(piece));
        self.splitter = splitter;
    }

    /// Ends the segment: a last line without a newline is read too.
    pub fn finish(&mut self) {
        let mut splitter = std::mem::replace(&mut self.splitter, LineSplitter::new(0));
        splitter.finish(|piece| self.piece(piece));
        self.splitter = splitter;
    }

    /// The file number it belongs to.
    pub fn file(&self) -> u32 {
        self.file
    }

    /// Lines seen so far.
    pub fn lines(&self) -> u64 {
        self.counts.lines
    }

    fn piece(&mut self, piece: Piece<'_>) {
        self.counts.lines += 1;
        match piece {
            Piece::TooLong { number, .. } => self.skip(SkipReason::LineTooLong, number),
            Piece::Line(line) => {
                if line.bytes.iter().all(u8::is_ascii_whitespace) {
                    self.counts.blank_lines += 1;
                    return;
                }
                let at = LineRef {
                    file: self.file,
                    offset: line.offset,
                    len: line.bytes.len() as u32,
                };
                if let Err(reason) = self.classify(line.text(), at) {
                    self.skip(reason, line.number);
                }
            }
        }
    }

    fn skip(&mut self, reason: SkipReason, line: u64) {
        let (count, first) = self.skips.entry(reason).or_default();
        *count += 1;
        if first.len() < FIRST_LINES_KEPT {
            first.push(line);
        }
    }

    fn classify(&mut self, text: Option<&str>, at: LineRef) -> Result<(), SkipReason> {
        let entry = classify_line(text)?;
        let (text, numeric) = entry.id_text();
        match &entry.kind {
            Kind::Completion { done, verdict } => {
                self.counts.completion_entries += 1;
                let passed = matches!(verdict, Some(PyText::Text(v)) if self.pass.contains(v));
                if *done && passed {
                    self.counts.successful_completions += 1;
                    let i = self.pipelines.entry(&text, numeric);
                    if self.pipelines.list[i].add_success(self.next_rank, at) {
                        self.next_rank += 1;
                    }
                }
            }
            Kind::Stage { has_input } => {
                self.counts.stage_entries += 1;
                let i = self.pipelines.entry(&text, numeric);
                let p = &mut self.pipelines.list[i];
                p.add_stage(at);
                p.add_input(*has_input);
            }
        }
        Ok(())
    }
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
                f.has_is_complete = true;
                f.is_complete = v.scalar()? == Scalar::Bool(true);
            }
            "stage_name" => f.completion_name = matches!(v.scalar()?, Scalar::Str(s) if s == COMPLETE_STAGE_NAME),
            "stage_id" | "stage_type" => {
                f.has_stage_key = true;
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
    let is_completion = f.has_is_complete || f.completion_name;
    let kind = if is_completion || (!f.has_stage_key && f.verdict.is_some()) {
        Kind::Completion {
            done: f.is_complete && !f.error_set,
            verdict: f.verdict,
        }
    } else if f.has_stage_key {
        Kind::Stage {
            has_input: f.snapshot_input_set || f.input_set,
        }
    } else {
        return Err(SkipReason::Unrecognized);
    };
    Ok(Entry {
        id: f.pipeline_id,
        kind,
    })
}

/// The order of [`SkipReason`]s on the wire.
const SKIP_REASONS: [SkipReason; 7] = [
    SkipReason::InvalidUtf8,
    SkipReason::NotJson,
    SkipReason::NotObject,
    SkipReason::NoPipelineId,
    SkipReason::BadPipelineId,
    SkipReason::LineTooLong,
    SkipReason::Unrecognized,
];
const WIRE_MAGIC: &[u8; 4] = b"DGS2";

struct Wire<'a> {
    bytes: &'a [u8],
    at: usize,
}

impl Wire<'_> {
    fn take(&mut self, n: usize) -> Result<&[u8], String> {
        let end = self
            .at
            .checked_add(n)
            .filter(|&e| e <= self.bytes.len())
            .ok_or("a truncated segment")?;
        let out = &self.bytes[self.at..end];
        self.at = end;
        Ok(out)
    }
    fn u8(&mut self) -> Result<u8, String> {
        Ok(self.take(1)?[0])
    }
    fn u32(&mut self) -> Result<u32, String> {
        Ok(u32::from_le_bytes(self.take(4)?.try_into().expect("4 bytes")))
    }
    fn u64(&mut self) -> Result<u64, String> {
        Ok(u64::from_le_bytes(self.take(8)?.try_into().expect("8 bytes")))
    }
    /// Checks that `n` items of at least `size` bytes can follow, before allocating for them.
    fn count(&mut self, size: usize) -> Result<usize, String> {
        let n = self.u32()? as usize;
        if n.saturating_mul(size) > self.bytes.len() - self.at {
            return Err("a truncated segment".into());
        }
        Ok(n)
    }
}

impl Segment {
    /// The finished segment as bytes, to send it from the worker that scanned it to the one
    /// that merges (the page's scan workers).
    pub fn to_bytes(&self) -> Vec<u8> {
        let mut out = WIRE_MAGIC.to_vec();
        let c = &self.counts;
        out.extend_from_slice(&self.file.to_le_bytes());
        for v in [
            self.max_line as u64,
            c.lines,
            c.blank_lines,
            c.stage_entries,
            c.completion_entries,
            c.successful_completions,
            self.next_rank,
        ] {
            out.extend_from_slice(&v.to_le_bytes());
        }
        out.extend_from_slice(&(self.skips.len() as u32).to_le_bytes());
        for (reason, (count, lines)) in &self.skips {
            out.push(
                SKIP_REASONS
                    .iter()
                    .position(|r| r == reason)
                    .expect("every reason is listed") as u8,
            );
            out.extend_from_slice(&count.to_le_bytes());
            out.extend_from_slice(&(lines.len() as u32).to_le_bytes());
            for l in lines {
                out.extend_from_slice(&l.to_le_bytes());
            }
        }
        out.extend_from_slice(&(self.pipelines.len() as u32).to_le_bytes());
        for p in self.pipelines.list() {
            let text = self.pipelines.text(p);
            out.extend_from_slice(&(text.len() as u32).to_le_bytes());
            out.extend_from_slice(text.as_bytes());
            out.push(p.numeric() as u8);
            out.push(p.has_input() as u8);
            for v in [p.first_file, p.end_file, p.success_file, p.success_len] {
                out.extend_from_slice(&v.to_le_bytes());
            }
            for v in [
                p.stage_count(),
                p.first_offset,
                p.end_offset,
                u64::from(p.first_rank),
                p.success_offset,
            ] {
                out.extend_from_slice(&v.to_le_bytes());
            }
        }
        out
    }

    /// A segment from [`Segment::to_bytes`]; ready to merge (it can take no more bytes).
    pub fn from_bytes(bytes: &[u8]) -> Result<Segment, String> {
        let mut w = Wire { bytes, at: 0 };
        if w.take(4)? != WIRE_MAGIC {
            return Err("not a deploy-gate segment".into());
        }
        let file = w.u32()?;
        let max_line = usize::try_from(w.u64()?).map_err(|_| "a line limit too large")?;
        let counts = Counts {
            lines: w.u64()?,
            blank_lines: w.u64()?,
            stage_entries: w.u64()?,
            completion_entries: w.u64()?,
            successful_completions: w.u64()?,
        };
        let next_rank = w.u64()?;
        let mut skips = BTreeMap::new();
        for _ in 0..w.count(13)? {
            let reason = *SKIP_REASONS.get(w.u8()? as usize).ok_or("an unknown skip reason")?;
            let count = w.u64()?;
            let n = w.count(8)?;
            let lines = (0..n).map(|_| w.u64()).collect::<Result<Vec<_>, _>>()?;
            skips.insert(reason, (count, lines));
        }
        let mut pipelines = Pipelines::default();
        for _ in 0..w.count(62)? {
            let len = w.u32()? as usize;
            let start = w.at;
            w.take(len)?;
            let text = std::str::from_utf8(&bytes[start..start + len]).map_err(|_| "an id that is not UTF-8")?;
            if text.is_empty() {
                return Err("an empty pipeline id".into());
            }
            let numeric = w.u8()? == 1;
            let i = pipelines.entry(text, numeric);
            if i + 1 != pipelines.len() {
                return Err("a pipeline listed twice".into());
            }
            let p = &mut pipelines.list[i];
            p.add_input(w.u8()? == 1);
            p.first_file = w.u32()?;
            p.end_file = w.u32()?;
            p.success_file = w.u32()?;
            p.success_len = w.u32()?;
            p.set_stage_count(w.u64()?);
            p.first_offset = w.u64()?;
            p.end_offset = w.u64()?;
            p.first_rank = u32::try_from(w.u64()?).map_err(|_| "a rank too large")?;
            p.success_offset = w.u64()?;
        }
        if w.at != bytes.len() {
            return Err("trailing bytes after a segment".into());
        }
        Ok(Segment {
            file,
            max_line,
            pass: PassSet::default(),
            splitter: LineSplitter::new(0),
            counts,
            skips,
            pipelines,
            next_rank,
        })
    }
}

/// Merges segments, in file order and within a file in offset order, into the index.
#[derive(Default)]
pub struct IndexBuilder {
    files: Vec<InputFile>,
    /// The line limit of the segments merged.
    max_line: Option<usize>,
    lines_before: Vec<u64>,
    counts: Counts,
    skips: BTreeMap<SkipReason, SkipStat>,
    pipelines: Pipelines,
    next_rank: u64,
}

impl IndexBuilder {
    /// An empty index.
    pub fn new() -> Self {
        Self::default()
    }

    /// Declares the next audit file (its number is its position).
    pub fn add_file(&mut self, file: InputFile) -> u32 {
        self.files.push(file);
        self.lines_before.push(0);
        (self.files.len() - 1) as u32
    }

    /// Sets a file's size and sha256 once known.
    pub fn set_file_digest(&mut self, file: u32, bytes: u64, sha256: String) {
        let f = &mut self.files[file as usize];
        f.bytes = bytes;
        f.sha256 = sha256;
    }

    /// Files declared so far.
    pub fn file_count(&self) -> usize {
        self.files.len()
    }

    /// Pipelines merged so far, and the bytes of their ids.
    pub fn pipeline_count(&self) -> (usize, usize) {
        (self.pipelines.len(), self.pipelines.ids.len())
    }

    /// Once the first `done` of a file's `len` bytes are merged (`before`: what
    /// [`IndexBuilder::pipeline_count`] gave before the file): makes room for as many pipelines
    /// again in the rest as those bytes held per byte, and a tenth more (at most one per 64
    /// bytes), so that the table is not grown and copied again and again while merging.
    pub fn reserve_for_rest(&mut self, before: (usize, usize), done: u64, len: u64) {
        let (pipelines, id_bytes) = self.pipeline_count();
        let scale = |n: usize| {
            let rest = (n as f64 * len.saturating_sub(done) as f64 / done.max(1) as f64 * 1.1) as u64;
            rest.min(len / 64) as usize
        };
        self.pipelines
            .reserve(scale(pipelines - before.0), scale(id_bytes - before.1));
    }

    /// Merges the next segment (the segments of a file in order, the files in order).
    pub fn merge(&mut self, segment: Segment) {
        let max_line = *self.max_line.get_or_insert(segment.max_line);
        assert_eq!(max_line, segment.max_line, "segments of one index share a line limit");
        let base = self.lines_before[segment.file as usize];
        self.lines_before[segment.file as usize] += segment.counts.lines;
        let c = &mut self.counts;
        c.lines += segment.counts.lines;
        c.blank_lines += segment.counts.blank_lines;
        c.stage_entries += segment.counts.stage_entries;
        c.completion_entries += segment.counts.completion_entries;
        c.successful_completions += segment.counts.successful_completions;
        let name = &self.files[segment.file as usize].name;
        for (reason, (count, first)) in segment.skips {
            let stat = self.skips.entry(reason).or_default();
            stat.count += count;
            for line in first {
                if stat.first_lines.len() < FIRST_LINES_KEPT {
                    stat.first_lines.push(LineLocation {
                        file: name.clone(),
                        line: base + line,
                    });
                }
            }
        }
        if self.pipelines.len() == 0 && self.next_rank == 0 {
            // The first segment with pipelines: its table and records become the index's (a
            // file read as one segment is not copied into a second table), the ranks numbered
            // again in their order as a merge does (so a segment from the wire with ranks that
            // repeat or skip gives the same index either way).
            let mut pipelines = segment.pipelines;
            let mut order: Vec<(u64, u32)> = (0..pipelines.len() as u32)
                .filter_map(|i| pipelines.list[i as usize].success().map(|(rank, _)| (rank, i)))
                .collect();
            order.sort_unstable();
            for (rank, &(_, i)) in order.iter().enumerate() {
                pipelines.list[i as usize].first_rank = rank as u32;
            }
            self.next_rank = order.len() as u64;
            self.pipelines = pipelines;
            return;
        }
        // Successes in the segment's order of first success, so global ranks follow the file.
        let from = segment.pipelines;
        let mut order: Vec<u32> = (0..from.len() as u32).collect();
        order.sort_by_key(|&i| from.list[i as usize].success().map_or(u64::MAX, |(rank, _)| rank));
        for i in order {
            let p = &from.list[i as usize];
            let t = self.pipelines.entry(from.text(p), p.numeric());
            let target = &mut self.pipelines.list[t];
            target.add_stages(p.first_stage(), p.stages_end(), p.stage_count());
            target.add_input(p.has_input());
            if let Some((_, line)) = p.success() {
                if target.add_success(self.next_rank, line) {
                    self.next_rank += 1;
                }
            }
        }
    }

    /// The index of everything merged.
    pub fn finish(self) -> AuditIndex {
        let mut summary = AuditSummary {
            files: self.files.len(),
            bytes: self.files.iter().map(|f| f.bytes).sum(),
            lines: self.counts.lines,
            blank_lines: self.counts.blank_lines,
            stage_entries: self.counts.stage_entries,
            completion_entries: self.counts.completion_entries,
            successful_completions: self.counts.successful_completions,
            skipped: self.skips.into_iter().map(|(r, s)| (r.name().to_owned(), s)).collect(),
            pipelines: self.pipelines.len() as u64,
            ..AuditSummary::default()
        };
        for p in self.pipelines.list() {
            if p.success().is_some() {
                summary.successful_pipelines += 1;
                if p.stage_count() == 0 {
                    summary.successful_without_stages += 1;
                } else if !p.has_input() {
                    summary.successful_without_input += 1;
                } else {
                    summary.candidates += 1;
                }
            }
        }
        AuditIndex {
            max_line: self.max_line.unwrap_or(DEFAULT_MAX_LINE),
            files: self.files,
            pipelines: self.pipelines,
            summary,
        }
    }
}

/// Streams audit files (pass 1), each file as one segment. Push every file's bytes, then
/// [`AuditScanner::finish`].
pub struct AuditScanner {
    pass: PassSet,
    max_line: usize,
    builder: IndexBuilder,
    open: Option<(Segment, Option<Sha256>, u64)>,
    hash: bool,
}

impl AuditScanner {
    /// A scanner with the given pass verdicts and line limit.
    pub fn new(pass: PassSet, max_line: usize) -> Self {
        AuditScanner {
            pass,
            max_line,
            builder: IndexBuilder::new(),
            open: None,
            hash: true,
        }
    }

    /// Whether files are hashed as they stream (default). A caller that hashes elsewhere (in
    /// parallel) turns it off and gives the digests with [`AuditScanner::set_file_sha256`].
    pub fn hash_files(&mut self, on: bool) {
        self.hash = on;
    }

    /// Sets file `file`'s sha256 (hex), when hashing is done by the caller.
    pub fn set_file_sha256(&mut self, file: u32, sha256: String) {
        let bytes = self.builder.files[file as usize].bytes;
        self.builder.set_file_digest(file, bytes, sha256);
    }

    /// Starts the next file (ending the current one, if any).
    pub fn begin_file(&mut self, name: &str) {
        self.end_file();
        let file = self.builder.add_file(InputFile {
            role: "audit".into(),
            name: name.into(),
            bytes: 0,
            sha256: String::new(),
        });
        let sha = self.hash.then(Sha256::new);
        self.open = Some((Segment::new(self.pass.clone(), self.max_line, file, 0), sha, 0));
    }

    /// Feeds the next chunk of the current file (a file named `audit.jsonl` is begun if none is).
    pub fn push(&mut self, chunk: &[u8]) {
        if self.open.is_none() {
            self.begin_file("audit.jsonl");
        }
        let (segment, sha, len) = self.open.as_mut().expect("a file is open");
        if let Some(sha) = sha {
            sha.update(chunk);
        }
        segment.push(chunk);
        *len += chunk.len() as u64;
    }

    /// Ends the current file: its last line is read even without a newline.
    pub fn end_file(&mut self) {
        if let Some((mut segment, sha, len)) = self.open.take() {
            segment.finish();
            let file = segment.file;
            let digest = match sha {
                Some(s) => hex::encode(s.finalize()),
                None => std::mem::take(&mut self.builder.files[file as usize].sha256),
            };
            self.builder.set_file_digest(file, len, digest);
            self.builder.merge(segment);
        }
    }

    /// Ends the last file and returns the index of everything seen.
    pub fn finish(mut self) -> AuditIndex {
        self.end_file();
        self.builder.finish()
    }
}

/// The result of pass 1: the audit files, each pipeline's status and line ranges, the summary.
pub struct AuditIndex {
    pub(crate) files: Vec<InputFile>,
    /// The line limit pass 1 used (pass 2 splits lines the same way).
    pub(crate) max_line: usize,
    pub(crate) pipelines: Pipelines,
    pub(crate) summary: AuditSummary,
}

impl AuditIndex {
    /// Counts and skipped lines.
    pub fn summary(&self) -> &AuditSummary {
        &self.summary
    }

    /// The audit files read, with sizes and digests.
    pub fn files(&self) -> &[InputFile] {
        &self.files
    }

    /// Sets audit file `file`'s sha256 (hex) when it was computed after pass 1 (the page hashes
    /// in another worker and shows the decision before the digest is in).
    pub fn set_file_sha256(&mut self, file: usize, sha256: String) {
        self.files[file].sha256 = sha256;
    }

    /// Frees the pipeline table once the test set is built; the summary and the files stay
    /// (they are all the report needs). A later [`AuditIndex::select`] then finds no candidate.
    pub fn release_pipelines(&mut self) {
        self.pipelines = Pipelines::default();
    }
}

/// Scans whole in-memory audit files (a convenience over [`AuditScanner`]).
pub fn scan_all(files: &[(&str, &[u8])], pass: PassSet) -> AuditIndex {
    let mut scanner = AuditScanner::new(pass, DEFAULT_MAX_LINE);
    for (name, bytes) in files {
        scanner.begin_file(name);
        scanner.push(bytes);
    }
    scanner.finish()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scan(text: &str) -> AuditIndex {
        scan_all(&[("a.jsonl", text.as_bytes())], PassSet::default())
    }

    #[test]
    fn real_writer_completion_is_a_completion_not_a_stage() {
        let idx = scan(concat!(
            r#"{"pipeline_id":"p","stage_id":"s0","stage_type":"llm","input":"tmpl","state_snapshot":{"input_text":"hi"}}"#,
            "\n",
            r#"{"pipeline_id":"p","stage_name":"__pipeline_complete__","stage_type":"output","verdict":"pass","is_complete":true,"error":null}"#,
        ));
        let s = idx.summary();
        assert_eq!((s.stage_entries, s.completion_entries, s.candidates), (1, 1, 1));
    }

    #[test]
    fn stage_name_alone_marks_a_completion() {
        let idx =
            scan(r#"{"pipeline_id":"p","stage_name":"__pipeline_complete__","stage_type":"output","verdict":"PASS"}"#);
        assert_eq!(idx.summary().completion_entries, 1);
        assert_eq!(
            idx.summary().successful_completions,
            0,
            "is_complete missing is not success"
        );
    }

    #[test]
    fn success_needs_true_no_error_and_a_pass_verdict() {
        let lines = [
            r#"{"pipeline_id":"a","is_complete":true,"error":null,"verdict":"Approve"}"#,
            r#"{"pipeline_id":"b","is_complete":1,"verdict":"PASS"}"#,
            r#"{"pipeline_id":"c","is_complete":true,"error":"max steps","verdict":"PASS"}"#,
            r#"{"pipeline_id":"d","is_complete":true,"verdict":"passed"}"#,
            r#"{"pipeline_id":"e","is_complete":true,"verdict":null}"#,
            r#"{"pipeline_id":"f","is_complete":true,"verdict":"complete"}"#,
        ];
        let idx = scan(&lines.join("\n"));
        assert_eq!(idx.summary().successful_completions, 2);
    }

    #[test]
    fn skipped_lines_are_counted_by_reason_with_line_numbers() {
        let text = b"\n  \r\nnot json\n[1]\n{\"a\":1}\n{\"pipeline_id\":null}\n{\"pipeline_id\":[1]}\n{\"pipeline_id\":\"x\",\"foo\":1}\n{\"pipeline_id\":\"\xff\"}\n{\"pipeline_id\":\"p\",\"stage_id\":";
        let idx = scan_all(&[("a.jsonl", text)], PassSet::default());
        let s = idx.summary();
        assert_eq!(s.lines, 10);
        assert_eq!(s.blank_lines, 2);
        let count = |r: &str| s.skipped.get(r).map_or(0, |x| x.count);
        assert_eq!(count("not_json"), 2);
        assert_eq!(count("not_object"), 1);
        assert_eq!(count("no_pipeline_id"), 2);
        assert_eq!(count("bad_pipeline_id"), 1);
        assert_eq!(count("unrecognized"), 1);
        assert_eq!(count("invalid_utf8"), 1);
        assert_eq!(
            s.skipped["not_json"].first_lines[0],
            LineLocation {
                file: "a.jsonl".into(),
                line: 3
            }
        );
        assert_eq!(s.skipped["not_json"].first_lines[1].line, 10);
    }

    #[test]
    fn integer_pipeline_ids_are_kept_as_integers() {
        let idx = scan(r#"{"pipeline_id":531386,"stage_id":"s","input":"x"}"#);
        assert_eq!(
            idx.pipelines.id(&idx.pipelines.list()[0]),
            PipelineId {
                text: "531386".into(),
                numeric: true
            }
        );
        assert_eq!(
            serde_json::to_string(&idx.pipelines.id(&idx.pipelines.list()[0])).unwrap(),
            "531386"
        );
        let idx = scan(r#"{"pipeline_id":0,"stage_id":"s"}"#);
        assert_eq!(idx.summary().skipped["no_pipeline_id"].count, 1);
    }

    #[test]
    fn segments_survive_the_wire() {
        let text = "{\"pipeline_id\":\"a\",\"stage_id\":\"s\",\"input\":\"x\"}\nnot json\n{\"pipeline_id\":7,\"verdict\":\"PASS\",\"is_complete\":true}\n{\"pipeline_id\":\"a\",\"verdict\":\"PASS\",\"is_complete\":true}\n";
        let scan = |wire: bool| {
            let mut builder = IndexBuilder::new();
            let no = builder.add_file(InputFile {
                role: "audit".into(),
                name: "f".into(),
                bytes: 0,
                sha256: String::new(),
            });
            let mut seg = Segment::new(PassSet::default(), DEFAULT_MAX_LINE, no, 0);
            seg.push(text.as_bytes());
            seg.finish();
            let seg = if wire {
                Segment::from_bytes(&seg.to_bytes()).unwrap()
            } else {
                seg
            };
            builder.merge(seg);
            let idx = builder.finish();
            (
                idx.summary().clone(),
                idx.pipelines
                    .list()
                    .iter()
                    .map(|p| {
                        (
                            idx.pipelines.id(p),
                            p.stage_count(),
                            p.first_stage(),
                            p.stages_end(),
                            p.has_input(),
                            p.success(),
                        )
                    })
                    .collect::<Vec<_>>(),
            )
        };
        assert_eq!(scan(true), scan(false));
        assert!(Segment::from_bytes(b"DGS1\0").is_err());
        assert!(Segment::from_bytes(b"nope").is_err());
        let mut huge = b"DGS1".to_vec();
        huge.extend_from_slice(&[0u8; 60]);
        huge.extend_from_slice(&u32::MAX.to_le_bytes());
        assert!(
            Segment::from_bytes(&huge).is_err(),
            "a huge count is refused before allocating"
        );
    }

    /// Whether a line is a completion, a stage or neither: what pass 1, the verdict reader and
    /// the role sniffer each answer today (one rule decides for all three).
    #[test]
    fn each_reader_gets_its_answer_from_the_one_rule() {
        use crate::sniff::{sniff, Kind as Sniffed};
        let cases: [(&str, Option<bool>, &str, Sniffed); 10] = [
            (r#"{"pipeline_id":"p","stage_id":"s"}"#, Some(false), "ignored", Sniffed::Audit),
            (r#"{"pipeline_id":"p","verdict":"PASS"}"#, Some(true), "record", Sniffed::Verdicts),
            (r#"{"pipeline_id":"p","stage_type":"output","verdict":"PASS"}"#, Some(false), "ignored", Sniffed::Audit),
            (
                r#"{"pipeline_id":"p","stage_type":"output","is_complete":false,"verdict":"PASS"}"#,
                Some(true),
                "record",
                Sniffed::Audit,
            ),
            // The sniffer reads keys, never values: `stage_name` alone does not make an audit line.
            (
                r#"{"pipeline_id":"p","stage_name":"__pipeline_complete__","verdict":"PASS"}"#,
                Some(true),
                "record",
                Sniffed::Verdicts,
            ),
            (
                r#"{"pipeline_id":"p","stage_name":"__pipeline_complete__","stage_id":"s","verdict":"PASS"}"#,
                Some(true),
                "record",
                Sniffed::Audit,
            ),
            (r#"{"pipeline_id":"p","is_complete":true}"#, Some(true), "refused", Sniffed::Audit),
            (r#"{"pipeline_id":"p","error":"boom"}"#, None, "record", Sniffed::Verdicts),
            // A repeated `stage_name`: pass 1 takes the last (as `json.loads` does), the
            // verdict reader any that names a completion.
            (
                r#"{"pipeline_id":"p","stage_name":"__pipeline_complete__","stage_name":"x","stage_id":"s","verdict":"PASS"}"#,
                Some(false),
                "record",
                Sniffed::Audit,
            ),
            (r#"{"pipeline_id":"p","stage_name":"x","stage_type":"llm","verdict":"PASS"}"#, Some(false), "ignored", Sniffed::Audit),
        ];
        for (line, completion, as_verdict, sniffed) in cases {
            let audit = match classify_line(Some(line)) {
                Ok(Entry { kind: Kind::Completion { .. }, .. }) => Some(true),
                Ok(Entry { kind: Kind::Stage { .. }, .. }) => Some(false),
                Err(SkipReason::Unrecognized) => None,
                Err(other) => panic!("{line}: {other:?}"),
            };
            assert_eq!(audit, completion, "pass 1: {line}");
            let verdicts = match crate::verdicts::parse_verdicts("old_verdicts", "v", line.as_bytes()) {
                Ok(v) if v.ignored_stage_entries == 1 && v.records == 0 => "ignored",
                Ok(v) if v.records == 1 => "record",
                Err(e) if e.message.contains("neither") => "refused",
                other => panic!("{line}: {:?}", other.map(|v| v.records)),
            };
            assert_eq!(verdicts, as_verdict, "verdicts: {line}");
            assert_eq!(sniff("log.jsonl", line.as_bytes()).kind, sniffed, "sniff: {line}");
        }
    }

    #[test]
    fn files_are_hashed_and_sized() {
        let idx = scan_all(&[("x", b"abc"), ("y", b"")], PassSet::default());
        assert_eq!(
            idx.files()[0].sha256,
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
        );
        assert_eq!(idx.files()[1].bytes, 0);
        assert_eq!(idx.summary().files, 2);
    }
}
