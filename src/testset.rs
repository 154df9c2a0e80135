//! The ground-truth test set: choosing the cases (sampling) and building them in pass 2.
//!
//! [`AuditIndex::select`] picks the pipelines from pass 1's index and lists the lines they
//! need; the shell reads just those lines (positioned reads, `File.slice`) and feeds them to a
//! [`TestSetBuilder`], which assembles the cases.

use crate::audit::{classify_line, AuditIndex, Kind, LineRef, PipelineId, Pos};
use crate::json::{nested_field, parse_object_line, Scalar};
use crate::lines::{LineSplitter, Piece};
use hashbrown::{DefaultHashBuilder, HashTable};
use serde::ser::SerializeMap;
use serde::{Serialize, Serializer};
use serde_json::value::RawValue;
use sha2::{Digest, Sha256};
use std::collections::HashMap;
use std::hash::BuildHasher;

use crate::policy::TestSetPolicy;

/// A byte range of an audit file that pass 2 reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ReadRange {
    /// Index of the audit file.
    pub file: u32,
    /// First byte (always the start of a line).
    pub start: u64,
    /// End of the last line wanted (before its line ending), or [`TO_END`].
    pub end: u64,
}

/// A [`ReadRange::end`] meaning "to the end of the file".
pub const TO_END: u64 = u64::MAX;

/// Ranges closer than this are read as one (fewer reads; the lines between are skipped).
const MERGE_GAP: u64 = 64 << 10;

/// What pass 2 must find for one chosen pipeline.
#[derive(Debug, Clone)]
struct Wanted {
    id: PipelineId,
    completion: LineRef,
    first_stage: Pos,
    stages_end: Pos,
    stage_count: u64,
    /// The log also holds a pipeline whose id has the same text and the other type (`5` and
    /// `"5"`): a verdict must then name this one with its own type.
    twin: bool,
}

/// The chosen pipelines and the byte ranges pass 2 must read for them.
#[derive(Debug, Clone)]
pub struct Selection {
    /// Successful pipelines with stage entries and an input.
    pub candidates: usize,
    /// True when the candidates were sampled down to `max_samples`.
    pub sampled: bool,
    /// True when there were fewer candidates than `min_samples` (the test set is empty).
    pub insufficient: bool,
    /// The policy it was made with.
    pub policy: TestSetPolicy,
    chosen: Vec<Wanted>,
    ranges: Vec<ReadRange>,
}

impl Selection {
    /// The ranges to read, in file then offset order, none overlapping.
    pub fn ranges(&self) -> &[ReadRange] {
        &self.ranges
    }

    /// Number of cases chosen.
    pub fn len(&self) -> usize {
        self.chosen.len()
    }

    /// True when no case was chosen.
    pub fn is_empty(&self) -> bool {
        self.chosen.is_empty()
    }

    /// The chosen pipelines' ids, in case order: the test set's ids once pass 2 has read them.
    pub fn ids(&self) -> impl Iterator<Item = &str> {
        self.chosen.iter().map(|w| &*w.id.text)
    }

    /// The same ids as shared strings (cloning one costs a reference count, not its bytes).
    pub fn shared_ids(&self) -> impl Iterator<Item = &std::sync::Arc<str>> {
        self.chosen.iter().map(|w| &w.id.text)
    }
}

/// The sample key of a pipeline: `sha256("<seed>:<pipeline_id>")`.
pub fn sample_key(seed: u64, id: &PipelineId) -> [u8; 32] {
    sample_key_of(&seed_prefix(seed), &id.text)
}

/// The hash state after `"<seed>:"`, shared by every key of one seed.
fn seed_prefix(seed: u64) -> Sha256 {
    let mut h = Sha256::new();
    h.update(seed.to_string().as_bytes());
    h.update(b":");
    h
}

fn sample_key_of(prefix: &Sha256, id: &str) -> [u8; 32] {
    let mut h = prefix.clone();
    h.update(id.as_bytes());
    h.finalize().into()
}

/// The ranges that cover a span of stage lines from `first` to `end` (files in between whole).
fn span_ranges(first: Pos, end: Pos, out: &mut Vec<ReadRange>) {
    for file in first.file..=end.file {
        out.push(ReadRange {
            file,
            start: if file == first.file { first.offset } else { 0 },
            end: if file == end.file { end.offset } else { TO_END },
        });
    }
}

/// Sorts ranges and merges those that overlap or lie within [`MERGE_GAP`] of each other.
fn merge_ranges(mut ranges: Vec<ReadRange>) -> Vec<ReadRange> {
    ranges.sort_by_key(|r| (r.file, r.start));
    let mut out: Vec<ReadRange> = Vec::with_capacity(ranges.len());
    for r in ranges {
        match out.last_mut() {
            Some(last) if last.file == r.file && r.start <= last.end.saturating_add(MERGE_GAP) => {
                last.end = last.end.max(r.end);
            }
            _ => out.push(r),
        }
    }
    out
}

impl AuditIndex {
    /// Chooses the test cases: candidates in order of first successful completion, emptied when
    /// fewer than `min_samples`, and sampled to the `max_samples` smallest sample keys.
    pub fn select(&self, policy: &TestSetPolicy) -> Selection {
        self.select_from(policy, None)
    }

    /// Chooses the candidates at `positions` (0-based, in candidate order: the order of first
    /// successful completion) instead of the sample `policy` would take — a caller's own
    /// sample (the Python binding's `sampling="python"` reproduces CPython's `random.sample`,
    /// which needs only the number of candidates). `min_samples` still applies; the cases are
    /// listed in audit order. `Err` names a position out of range or given twice.
    pub fn select_positions(&self, policy: &TestSetPolicy, positions: &[usize]) -> Result<Selection, String> {
        let candidates = usize::try_from(self.summary().candidates).unwrap_or(usize::MAX);
        let mut seen = vec![false; candidates];
        for &p in positions {
            match seen.get_mut(p) {
                None => {
                    return Err(format!(
                        "position {p} is out of range: there are {candidates} candidates"
                    ))
                }
                Some(true) => return Err(format!("position {p} is given twice")),
                Some(s) => *s = true,
            }
        }
        Ok(self.select_from(policy, Some(positions)))
    }

    fn select_from(&self, policy: &TestSetPolicy, positions: Option<&[usize]>) -> Selection {
        let table = &self.pipelines;
        let list = table.list();
        let mut chosen: Vec<u32> = (0..list.len() as u32)
            .filter(|&i| {
                let p = &list[i as usize];
                p.success().is_some() && p.stage_count() > 0 && p.has_input()
            })
            .collect();
        let rank = |i: u32| list[i as usize].success().map_or(u64::MAX, |(rank, _)| rank);
        let candidates = chosen.len();
        let insufficient = candidates < policy.min_samples;
        let mut sampled = false;
        if insufficient {
            chosen.clear();
        } else if let Some(positions) = positions {
            chosen.sort_unstable_by_key(|&i| rank(i));
            chosen = positions.iter().map(|&p| chosen[p]).collect();
            sampled = chosen.len() < candidates;
        } else if let Some(max) = policy.max_samples.filter(|&m| candidates > m) {
            let prefix = seed_prefix(policy.seed);
            // The `max` smallest keys (keys are distinct: the rank, distinct too, breaks any tie,
            // as the order of first success does).
            let smallest = |mut keyed: Vec<([u8; 32], u64, u32)>| {
                if keyed.len() > max {
                    if max > 0 {
                        keyed.select_nth_unstable(max - 1);
                    }
                    keyed.truncate(max);
                }
                keyed
            };
            // On all cores from a few thousand candidates (below, a thread costs more than it
            // saves). Each run keeps its own `max` smallest, among which are those of them all,
            // and holds no more than about twice as many keys at once however long it is.
            let runs = crate::parallel::map_runs(&chosen, 4096, |run| {
                let room = run.len().min(max.saturating_mul(2).max(4096));
                let mut keyed = Vec::with_capacity(room);
                for &i in run {
                    if keyed.len() == room {
                        keyed = smallest(keyed);
                    }
                    keyed.push((sample_key_of(&prefix, table.text(&list[i as usize])), rank(i), i));
                }
                smallest(keyed)
            });
            chosen = smallest(runs.concat()).into_iter().map(|(_, _, i)| i).collect();
            sampled = true;
        }
        // In order of first success (ranks are distinct, so an unstable sort gives the one order).
        chosen.sort_unstable_by_key(|&i| rank(i));
        let mut ranges = Vec::new();
        let chosen: Vec<Wanted> = chosen
            .iter()
            .map(|&i| {
                let p = &list[i as usize];
                let (_, completion) = p.success().expect("candidates are successful");
                ranges.push(ReadRange {
                    file: completion.file,
                    start: completion.offset,
                    end: completion.offset + completion.len as u64,
                });
                span_ranges(p.first_stage(), p.stages_end(), &mut ranges);
                Wanted {
                    id: table.id(p),
                    twin: table.find(table.text(p), !p.numeric()).is_some(),
                    completion,
                    first_stage: p.first_stage(),
                    stages_end: p.stages_end(),
                    stage_count: p.stage_count(),
                }
            })
            .collect();
        Selection {
            candidates,
            sampled,
            insufficient,
            policy: policy.clone(),
            chosen,
            ranges: merge_ranges(ranges),
        }
    }
}

/// A stage-output map that keeps the order in which stage ids first appeared.
#[derive(Debug, Clone, Default)]
pub struct StageOutputs(pub Vec<(String, Box<RawValue>)>);

impl Serialize for StageOutputs {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut map = s.serialize_map(Some(self.0.len()))?;
        for (k, v) in &self.0 {
            map.serialize_entry(k, v)?;
        }
        map.end()
    }
}

/// One test case, with the reference's field names (values exactly as in the log).
#[derive(Debug, Clone, Serialize)]
pub struct TestCase {
    /// The pipeline.
    pub pipeline_id: PipelineId,
    /// `template_id` of the winning completion (`null` when absent).
    pub template_id: Box<RawValue>,
    /// The user input: the first stage's `state_snapshot.input_text`, else its `input`.
    pub input_text: Box<RawValue>,
    /// `verdict` of the winning completion.
    pub expected_verdict: Box<RawValue>,
    /// `stage_id → output`, later entries of a stage overwriting earlier ones.
    pub expected_stage_outputs: StageOutputs,
    /// `episode_reward` of the winning completion (`null` when absent).
    pub episode_reward: Box<RawValue>,
    /// `input_hash` of the stage that gave the input, when it has one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub input_hash: Option<Box<RawValue>>,
}

impl TestCase {
    /// The expected verdict as the reference makes it text (`str(v or "")`: a number as
    /// Python prints it, `True`; empty when null, falsy or an object or array).
    pub fn expected_text(&self) -> String {
        crate::json::PyText::of_raw(self.expected_verdict.get())
            .ok()
            .and_then(|t| t.as_text().map(str::to_owned))
            .unwrap_or_default()
    }
}

/// The test set and how it was made.
#[derive(Debug, Clone)]
pub struct TestSet {
    /// The cases, in order of each pipeline's first successful completion.
    pub cases: Vec<TestCase>,
    /// Candidates before `min_samples` / `max_samples` were applied.
    pub candidates: usize,
    /// True when sampled down to `max_samples`.
    pub sampled: bool,
    /// True when there were fewer candidates than `min_samples`.
    pub insufficient: bool,
    /// The policy it was made with.
    pub policy: TestSetPolicy,
    /// Things worth a reader's attention (non-string stage ids, …).
    pub warnings: Vec<String>,
    /// The cases whose id's text the log also holds with the other type (the integer `5` and
    /// the string `"5"`), by their index in `cases`.
    pub(crate) twins: Vec<usize>,
}

impl TestSet {
    /// The cases at `positions` (increasing), as a test set of their own (its twins kept).
    pub fn subset(&self, positions: &[usize]) -> TestSet {
        let twins = positions
            .iter()
            .enumerate()
            .filter(|(_, &p)| self.has_twin(p))
            .map(|(i, _)| i)
            .collect();
        TestSet {
            cases: positions.iter().map(|&p| self.cases[p].clone()).collect(),
            candidates: positions.len(),
            sampled: self.sampled,
            insufficient: false,
            policy: self.policy.clone(),
            warnings: Vec::new(),
            twins,
        }
    }

    /// Whether the log also holds a pipeline whose id has case `i`'s text and the other type.
    pub(crate) fn has_twin(&self, i: usize) -> bool {
        self.twins.binary_search(&i).is_ok()
    }
}

impl TestSet {
    /// The test set as JSONL, one case per line.
    pub fn to_jsonl(&self) -> String {
        let mut out = String::new();
        for case in &self.cases {
            out.push_str(&serde_json::to_string(case).expect("test cases serialize"));
            out.push('\n');
        }
        out
    }
}

/// Pass 2 failed: the audit file is not what pass 1 read.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum TestSetError {
    /// A line pass 1 indexed no longer holds the same entry.
    #[error(
        "audit file {file} changed while it was read: the line at byte {offset} is not the entry indexed in pass 1"
    )]
    Changed {
        /// File name.
        file: String,
        /// Byte offset of the line.
        offset: u64,
    },
    /// A range was not read whole.
    #[error("audit file {file}: the bytes from {offset} were not read in pass 2")]
    NotFed {
        /// File name.
        file: String,
        /// Byte offset where reading stopped.
        offset: u64,
    },
}

/// One stage key of a case being read: where it first appeared and the output of its last
/// line so far (lines may come in any order, so positions decide).
struct Slot {
    key: String,
    /// The first line (file order) with this key: the key's place in the output map.
    first: Pos,
    /// The line whose output is kept: the last so far.
    last: Pos,
    output: Box<RawValue>,
    /// The first line whose `stage_id` is not a string but gave this key (it is warned about).
    not_a_string: Option<Pos>,
}

/// What pass 2 has kept of a case so far: only what the case holds (the winning completion's
/// fields, the first input, one output per stage key), never the stage lines themselves, so its
/// memory does not grow with the lines read.
#[derive(Default)]
struct Partial {
    completion: Option<(Box<RawValue>, Box<RawValue>, Box<RawValue>)>,
    /// Stage lines seen (checked against pass 1's count).
    stage_lines: u64,
    /// The input of the first stage line (file order) that carries one, and its `input_hash`.
    input: Option<(Pos, Box<RawValue>, Option<Box<RawValue>>)>,
    /// The stage keys, in no particular order (sorted by `first` at the end).
    slots: Vec<Slot>,
    /// Indices into `slots`, by key.
    by_key: HashTable<u32>,
}

impl Partial {
    /// Takes one stage line's output for `key` at `at`.
    fn output(&mut self, hasher: &DefaultHashBuilder, key: String, at: Pos, output: Box<RawValue>, string_id: bool) {
        let hash = hasher.hash_one(key.as_bytes());
        let slots = &mut self.slots;
        let found = self.by_key.find(hash, |&i| slots[i as usize].key == key).copied();
        let not_a_string = (!string_id).then_some(at);
        match found {
            Some(i) => {
                let slot = &mut slots[i as usize];
                slot.first = slot.first.min(at);
                if at > slot.last {
                    slot.last = at;
                    slot.output = output;
                }
                slot.not_a_string = match (slot.not_a_string, not_a_string) {
                    (Some(a), Some(b)) => Some(a.min(b)),
                    (a, b) => a.or(b),
                };
            }
            None => {
                let i = u32::try_from(slots.len()).expect("fewer than 4 billion stage keys");
                slots.push(Slot {
                    key,
                    first: at,
                    last: at,
                    output,
                    not_a_string,
                });
                self.by_key
                    .insert_unique(hash, i, |&j| hasher.hash_one(slots[j as usize].key.as_bytes()));
            }
        }
    }
}

/// A range being read: its line splitter and the bytes fed so far.
struct Reading {
    splitter: LineSplitter,
    fed: u64,
    done: bool,
}

/// Builds the cases from the ranges a [`Selection`] lists (pass 2). Each range is fed in order
/// (in chunks cut anywhere); ranges may be fed in any order, even interleaved. Every line in a
/// range is classified as in pass 1: the chosen pipelines' stage lines inside their spans and
/// their winning completions are used, the others skipped. It keeps what it needs of the index,
/// so it does not borrow it.
pub struct TestSetBuilder {
    selection: Selection,
    file_names: Vec<String>,
    hasher: DefaultHashBuilder,
    /// Cases by their pipeline id (the ids stay in the selection: not copied).
    by_id: HashTable<u32>,
    by_completion: HashMap<(u32, u64), u32>,
    cases: Vec<Partial>,
    reading: Vec<Reading>,
    /// Per audit file, for [`TestSetBuilder::push_stream`]: the stream's bytes fed so far and
    /// the first of its ranges not ended yet.
    streams: Vec<(u64, usize)>,
}

fn null() -> Box<RawValue> {
    RawValue::from_string("null".to_owned()).expect("null is JSON")
}

fn owned(raw: Option<&RawValue>) -> Box<RawValue> {
    raw.map_or_else(null, |r| r.to_owned())
}

fn is_set(raw: &Option<&RawValue>) -> bool {
    raw.is_some_and(|r| r.get() != "null")
}

impl TestSetBuilder {
    /// A builder for the selection made from `index`.
    pub fn new(index: &AuditIndex, selection: Selection) -> Self {
        let cases = (0..selection.chosen.len()).map(|_| Partial::default()).collect();
        let hasher = DefaultHashBuilder::default();
        let mut by_id = HashTable::with_capacity(selection.chosen.len());
        for (c, wanted) in selection.chosen.iter().enumerate() {
            let hash = hasher.hash_one(wanted.id.text.as_bytes());
            by_id.insert_unique(hash, c as u32, |&i: &u32| {
                hasher.hash_one(selection.chosen[i as usize].id.text.as_bytes())
            });
        }
        let by_completion = (0..selection.chosen.len() as u32)
            .map(|c| {
                let at = selection.chosen[c as usize].completion;
                ((at.file, at.offset), c)
            })
            .collect();
        let reading = selection
            .ranges
            .iter()
            .map(|r| Reading {
                splitter: LineSplitter::starting_at(r.start, index.max_line),
                fed: 0,
                done: false,
            })
            .collect();
        let streams = (0..index.files.len())
            .map(|f| (0, selection.ranges.partition_point(|r| (r.file as usize) < f)))
            .collect();
        TestSetBuilder {
            file_names: index.files.iter().map(|f| f.name.clone()).collect(),
            streams,
            selection,
            hasher,
            by_id,
            by_completion,
            cases,
            reading,
        }
    }

    /// The selection being built.
    pub fn selection(&self) -> &Selection {
        &self.selection
    }

    /// The ranges to read ([`Selection::ranges`]).
    pub fn ranges(&self) -> &[ReadRange] {
        &self.selection.ranges
    }

    fn changed(&self, file: u32, offset: u64) -> TestSetError {
        TestSetError::Changed {
            file: self.file_names[file as usize].clone(),
            offset,
        }
    }

    /// Feeds the next bytes of range `i` (its bytes in order, from its start).
    ///
    /// # Panics
    /// When `i` is not a range of the selection.
    pub fn push(&mut self, i: usize, chunk: &[u8]) -> Result<(), TestSetError> {
        let range = self.selection.ranges[i];
        let reading = &mut self.reading[i];
        if reading.done {
            return Err(self.changed(range.file, range.start));
        }
        let room = range.end.saturating_sub(range.start).saturating_sub(reading.fed);
        let chunk = &chunk[..chunk.len().min(usize::try_from(room).unwrap_or(usize::MAX))];
        reading.fed += chunk.len() as u64;
        self.split(i, |splitter, emit| splitter.push(chunk, emit))
    }

    /// Ends range `i`: it must have been fed whole (a range to the end of its file, to the end).
    pub fn end_range(&mut self, i: usize) -> Result<(), TestSetError> {
        let range = self.selection.ranges[i];
        let reading = &self.reading[i];
        if reading.done || (range.end != TO_END && reading.fed != range.end - range.start) {
            return Err(TestSetError::NotFed {
                file: self.file_names[range.file as usize].clone(),
                offset: range.start + reading.fed,
            });
        }
        let result = self.split(i, |splitter, emit| splitter.finish(emit));
        self.reading[i].done = true;
        result
    }

    /// Feeds the next bytes of audit file `file`'s whole stream (for a compressed file, its
    /// decompressed bytes), in order from offset 0, in chunks cut anywhere: the bytes of the
    /// file's ranges go to them, the rest is skipped, and each range is ended as its last byte
    /// goes by. For callers that cannot seek (a gzip stream); those that can read just the
    /// ranges with [`TestSetBuilder::push`]. A file is fed one way or the other, not both.
    ///
    /// # Panics
    /// When `file` is not an audit file of the index.
    pub fn push_stream(&mut self, file: u32, chunk: &[u8]) -> Result<(), TestSetError> {
        let (pos, mut k) = self.streams[file as usize];
        let end = pos + chunk.len() as u64;
        while let Some(&r) = self.selection.ranges.get(k) {
            if r.file != file || r.start >= end {
                break;
            }
            let from = r.start.max(pos);
            let to = r.end.min(end);
            if from < to {
                self.push(k, &chunk[(from - pos) as usize..(to - pos) as usize])?;
            }
            if r.end > end {
                break;
            }
            self.end_range(k)?;
            k += 1;
        }
        self.streams[file as usize] = (end, k);
        Ok(())
    }

    /// True once every range of audit file `file` was ended: the rest of its stream is not
    /// needed (a reader stops decompressing there).
    pub fn stream_done(&self, file: u32) -> bool {
        let (_, k) = self.streams[file as usize];
        self.selection.ranges.get(k).is_none_or(|r| r.file != file)
    }

    /// Ends audit file `file`'s stream: its ranges still open end here (one to the end of the
    /// file is whole; one the stream stopped short of is an error, as it is for [`end_range`]).
    ///
    /// [`end_range`]: TestSetBuilder::end_range
    pub fn end_stream(&mut self, file: u32) -> Result<(), TestSetError> {
        let (pos, mut k) = self.streams[file as usize];
        while k < self.selection.ranges.len() && self.selection.ranges[k].file == file {
            self.end_range(k)?;
            k += 1;
        }
        self.streams[file as usize] = (pos, k);
        Ok(())
    }

    /// Runs range `i`'s line splitter (`push` or `finish`), handing each line to `line`; the
    /// first error stops the handing.
    fn split(
        &mut self,
        i: usize,
        run: impl FnOnce(&mut LineSplitter, &mut dyn FnMut(Piece<'_>)),
    ) -> Result<(), TestSetError> {
        let file = self.selection.ranges[i].file;
        let mut splitter = std::mem::replace(&mut self.reading[i].splitter, LineSplitter::new(0));
        let mut result = Ok(());
        run(&mut splitter, &mut |piece| {
            if result.is_ok() {
                result = self.line(file, piece);
            }
        });
        self.reading[i].splitter = splitter;
        result
    }

    /// One line of a range: a chosen pipeline's winning completion, one of its stage lines
    /// (inside its span), or neither.
    fn line(&mut self, file: u32, piece: Piece<'_>) -> Result<(), TestSetError> {
        let Piece::Line(line) = piece else {
            return Ok(());
        };
        let at = Pos {
            file,
            offset: line.offset,
        };
        if let Some(&case) = self.by_completion.get(&(file, line.offset)) {
            return self.completion(case, at, line.bytes);
        }
        let Ok(entry) = classify_line(line.text()) else {
            return Ok(());
        };
        if !matches!(entry.kind, Kind::Stage { .. }) {
            return Ok(());
        }
        let (text, numeric) = entry.id_text();
        let chosen = &self.selection.chosen;
        let found = self.by_id.find(self.hasher.hash_one(text.as_bytes()), |&c| {
            let id = &chosen[c as usize].id;
            *id.text == *text && id.numeric == numeric
        });
        let Some(&case) = found else {
            return Ok(());
        };
        let wanted = &self.selection.chosen[case as usize];
        if at < wanted.first_stage || at > wanted.stages_end {
            return Ok(());
        }
        self.stage(case, at, line.bytes)
    }

    fn completion(&mut self, case: u32, at: Pos, bytes: &[u8]) -> Result<(), TestSetError> {
        let wanted = &self.selection.chosen[case as usize];
        if bytes.len() != wanted.completion.len as usize || self.cases[case as usize].completion.is_some() {
            return Err(self.changed(at.file, at.offset));
        }
        let mut id = Scalar::Absent;
        let (mut template, mut verdict, mut reward) = (None, None, None);
        parse_object_line(bytes, |key, v| {
            match key {
                "pipeline_id" => id = v.scalar()?,
                "template_id" => template = Some(v.raw()?),
                "verdict" => verdict = Some(v.raw()?),
                "episode_reward" => reward = Some(v.raw()?),
                _ => v.skip()?,
            }
            Ok(())
        })
        .map_err(|_| self.changed(at.file, at.offset))?;
        if PipelineId::from_scalar(&id).ok().as_ref() != Some(&wanted.id) {
            return Err(self.changed(at.file, at.offset));
        }
        self.cases[case as usize].completion = Some((owned(template), owned(verdict), owned(reward)));
        Ok(())
    }

    fn stage(&mut self, case: u32, at: Pos, bytes: &[u8]) -> Result<(), TestSetError> {
        let (mut stage_id, mut output) = (None, None);
        let (mut input, mut input_hash, mut snapshot_input) = (None, None, None);
        parse_object_line(bytes, |key, v| {
            match key {
                "stage_id" => stage_id = Some(v.raw()?),
                "output" => output = Some(v.raw()?),
                "input" => input = Some(v.raw()?),
                "input_hash" => input_hash = Some(v.raw()?),
                "state_snapshot" => snapshot_input = nested_field(v, "input_text", |s| s.raw())?,
                _ => v.skip()?,
            }
            Ok(())
        })
        .map_err(|_| self.changed(at.file, at.offset))?;
        let chosen = if is_set(&snapshot_input) {
            snapshot_input
        } else if is_set(&input) {
            input
        } else {
            None
        };
        let partial = &mut self.cases[case as usize];
        partial.stage_lines += 1;
        if let Some(text) = chosen {
            if partial.input.as_ref().is_none_or(|(first, _, _)| at < *first) {
                let hash = input_hash.filter(|h| h.get() != "null").map(|h| h.to_owned());
                partial.input = Some((at, text.to_owned(), hash));
            }
        }
        if let Some(sid) = stage_id.filter(|r| r.get() != "null") {
            let (key, string_id) = match serde_json::from_str::<String>(sid.get()) {
                Ok(s) => (s, true),
                Err(_) => (sid.get().trim().to_owned(), false),
            };
            partial.output(&self.hasher, key, at, owned(output), string_id);
        }
        Ok(())
    }

    /// The finished test set; every range must have been read whole and ended.
    pub fn finish(self) -> Result<TestSet, TestSetError> {
        for (r, range) in self.reading.iter().zip(&self.selection.ranges) {
            if !r.done {
                return Err(TestSetError::NotFed {
                    file: self.file_names[range.file as usize].clone(),
                    offset: range.start + r.fed,
                });
            }
        }
        let mut warnings = Vec::new();
        let mut cases = Vec::with_capacity(self.cases.len());
        let mut twins = Vec::new();
        for (partial, wanted) in self.cases.into_iter().zip(self.selection.chosen) {
            if wanted.twin {
                twins.push(cases.len());
            }
            let changed = |at: Pos| TestSetError::Changed {
                file: self.file_names[at.file as usize].clone(),
                offset: at.offset,
            };
            let completion_at = Pos {
                file: wanted.completion.file,
                offset: wanted.completion.offset,
            };
            let (template_id, expected_verdict, episode_reward) =
                partial.completion.ok_or_else(|| changed(completion_at))?;
            if partial.stage_lines != wanted.stage_count {
                return Err(changed(wanted.first_stage));
            }
            let mut slots = partial.slots;
            slots.sort_unstable_by_key(|slot| slot.first);
            let mut outputs = StageOutputs(Vec::with_capacity(slots.len()));
            for slot in slots {
                if let Some(at) = slot.not_a_string {
                    let text = &slot.key;
                    warnings.push((
                        at,
                        format!(
                            "pipeline {}: stage_id {text} is not a string; its output is keyed \"{text}\"",
                            wanted.id
                        ),
                    ));
                }
                outputs.0.push((slot.key, slot.output));
            }
            let input = partial.input.map(|(_, text, hash)| (text, hash));
            let (input_text, input_hash) = input.ok_or_else(|| changed(wanted.first_stage))?;
            cases.push(TestCase {
                pipeline_id: wanted.id,
                template_id,
                input_text,
                expected_verdict,
                expected_stage_outputs: outputs,
                episode_reward,
                input_hash,
            });
        }
        // Warnings in the order of their lines in the log.
        warnings.sort_by_key(|(at, _)| *at);
        Ok(TestSet {
            cases,
            candidates: self.selection.candidates,
            sampled: self.selection.sampled,
            insufficient: self.selection.insufficient,
            policy: self.selection.policy,
            warnings: warnings.into_iter().map(|(_, w)| w).collect(),
            twins,
        })
    }
}

/// Builds the test set from whole in-memory audit files (pass 2 by slicing them).
pub fn build_from_memory(index: &AuditIndex, files: &[&[u8]], policy: &TestSetPolicy) -> Result<TestSet, TestSetError> {
    let selection = index.select(policy);
    let mut builder = TestSetBuilder::new(index, selection);
    for i in 0..builder.ranges().len() {
        let r = builder.ranges()[i];
        let file = files[r.file as usize];
        let start = (r.start as usize).min(file.len());
        let end = usize::try_from(r.end).unwrap_or(usize::MAX).min(file.len());
        builder.push(i, &file[start..end.max(start)])?;
        builder.end_range(i)?;
    }
    builder.finish()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_stage_id_that_is_not_a_string_keys_by_its_text_with_one_warning_per_key() {
        let log = [
            r#"{"pipeline_id": "p", "stage_id": 5, "input": "in", "output": "a"}"#,
            r#"{"pipeline_id": "p", "stage_id": "s", "output": "b"}"#,
            r#"{"pipeline_id": "p", "stage_id": 5 , "output": "c"}"#,
            r#"{"pipeline_id": "p", "stage_id": "5", "output": "d"}"#,
            r#"{"pipeline_id": "p", "stage_id": null, "output": "e"}"#,
            r#"{"pipeline_id": "p", "is_complete": true, "verdict": "PASS"}"#,
        ]
        .join("\n");
        let index = crate::audit::scan_all(&[("a.jsonl", log.as_bytes())], crate::policy::PassSet::default());
        let policy = TestSetPolicy {
            min_samples: 1,
            ..TestSetPolicy::default()
        };
        let ts = build_from_memory(&index, &[log.as_bytes()], &policy).unwrap();
        let outputs: Vec<(&str, &str)> = ts.cases[0]
            .expected_stage_outputs
            .0
            .iter()
            .map(|(k, v)| (k.as_str(), v.get()))
            .collect();
        assert_eq!(outputs, [("5", r#""d""#), ("s", r#""b""#)]);
        assert_eq!(
            ts.warnings,
            [r#"pipeline p: stage_id 5 is not a string; its output is keyed "5""#]
        );
    }

    #[test]
    fn sample_keys_are_sha256_of_seed_and_id() {
        let prefix = seed_prefix(42);
        let want: [u8; 32] = Sha256::digest(b"42:p-1").into();
        assert_eq!(sample_key_of(&prefix, "p-1"), want);
        // The shared prefix state is not changed by use.
        assert_eq!(sample_key_of(&prefix, "p-1"), want);
    }
}
