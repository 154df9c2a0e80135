//! The pipeline table of pass 1: one fixed-size record per pipeline (its stage lines as a span,
//! its winning successful completion), the ids in one arena, a hash table of indices.

use super::entry::PipelineId;
use hashbrown::{DefaultHashBuilder, HashTable};
use std::hash::BuildHasher;

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

/// A place in the audit stream: a file (in the order given) and a byte offset in it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Default)]
pub struct Pos {
    /// Index of the file among the audit files.
    pub file: u32,
    /// Byte offset in that file.
    pub offset: u64,
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
    pub(super) id_start: u64,
    pub(super) id_len: u32,
    /// Stage lines seen, in the low 62 bits; the top two are [`NUMERIC`] and [`HAS_INPUT`].
    pub(super) stages_and_flags: u64,
    pub(super) first_file: u32,
    pub(super) end_file: u32,
    pub(super) first_offset: u64,
    pub(super) end_offset: u64,
    /// Rank of the first successful completion among all pipelines (there are fewer than
    /// 2^32 pipelines).
    pub(super) first_rank: u32,
    pub(super) success_file: u32,
    pub(super) success_len: u32,
    /// Offset of the winning (last) successful completion, or [`NO_SUCCESS`].
    pub(super) success_offset: u64,
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
    pub(super) fn new(id_start: u64, id_len: u32, numeric: bool) -> Self {
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
    pub(super) fn add_stage(&mut self, at: LineRef) {
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
    pub(super) fn add_stages(&mut self, first: Pos, end: Pos, count: u64) {
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

    pub(super) fn set_stage_count(&mut self, count: u64) {
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

    pub(super) fn add_input(&mut self, has_input: bool) {
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

    pub(super) fn set_success_line(&mut self, line: LineRef) {
        self.success_file = line.file;
        self.success_offset = line.offset;
        self.success_len = line.len;
    }

    /// Records a successful completion; `rank` is taken (and true returned) when it is the first.
    pub(super) fn add_success(&mut self, rank: u64, line: LineRef) -> bool {
        let first = self.success_offset == NO_SUCCESS;
        if first {
            self.first_rank = u32::try_from(rank).expect("fewer than 4 billion pipelines");
        }
        self.set_success_line(line);
        first
    }
}

/// The id text of record `i`.
fn text_of<'a>(list: &[Pipeline], ids: &'a [u8], i: u32) -> &'a [u8] {
    let p = &list[i as usize];
    &ids[p.id_start as usize..p.id_start as usize + p.id_len as usize]
}

/// An id's hash: its text's, and its type's (the integer `5` and the string `"5"` are two
/// pipelines, as in the reference).
fn id_hash(hasher: &DefaultHashBuilder, text: &[u8], numeric: bool) -> u64 {
    let h = hasher.hash_one(text);
    if numeric {
        h ^ 0x9E37_79B9_7F4A_7C15
    } else {
        h
    }
}

/// The hash of record `i`'s id, from the arena (when the table grows).
fn hash_of(hasher: &DefaultHashBuilder, list: &[Pipeline], ids: &[u8], i: u32) -> u64 {
    id_hash(hasher, text_of(list, ids, i), list[i as usize].numeric())
}

/// Whether record `i` is the pipeline with this id (its text and its type).
fn is_id(list: &[Pipeline], ids: &[u8], i: u32, text: &str, numeric: bool) -> bool {
    list[i as usize].numeric() == numeric && text_of(list, ids, i) == text.as_bytes()
}

/// Pipelines by id: fixed-size records, their ids in one arena, a hash table of indices.
#[derive(Default)]
pub(crate) struct Pipelines {
    pub(super) hasher: DefaultHashBuilder,
    /// The index of each record (4 bytes a slot, and the table's control byte): when the table
    /// grows, the ids are hashed again from the arena. (A copy of each id's hash beside its
    /// index saved that, at 4 bytes more a slot: 16 MiB of the peak for the 2.4 million
    /// pipelines of a 10 GiB log, whose table grows once or twice in all.)
    pub(super) table: HashTable<u32>,
    pub(super) list: Vec<Pipeline>,
    pub(super) ids: Vec<u8>,
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

    pub(super) fn len(&self) -> usize {
        self.list.len()
    }

    /// Room for `more` pipelines whose ids take about `id_bytes` bytes in all.
    pub(super) fn reserve(&mut self, more: usize, id_bytes: usize) {
        self.list.reserve(more);
        self.ids.reserve(id_bytes);
        let Pipelines {
            hasher,
            table,
            list,
            ids,
        } = self;
        table.reserve(more, |&i| hash_of(hasher, list, ids, i));
    }

    /// The index of the pipeline with this id (its text and its type), if there is one.
    pub(crate) fn find(&self, text: &str, numeric: bool) -> Option<usize> {
        let (list, ids) = (&self.list, &self.ids);
        self.table
            .find(id_hash(&self.hasher, text.as_bytes(), numeric), |&i| {
                is_id(list, ids, i, text, numeric)
            })
            .map(|&i| i as usize)
    }

    /// The index of the pipeline with this id (its text and its type), inserted if new.
    pub(super) fn entry(&mut self, text: &str, numeric: bool) -> usize {
        let hash = id_hash(&self.hasher, text.as_bytes(), numeric);
        let Pipelines {
            hasher,
            table,
            list,
            ids,
        } = self;
        if let Some(&i) = table.find(hash, |&i| is_id(list, ids, i, text, numeric)) {
            return i as usize;
        }
        let i = list.len();
        let index = u32::try_from(i).expect("fewer than 4 billion pipelines");
        list.push(Pipeline::new(ids.len() as u64, text.len() as u32, numeric));
        ids.extend_from_slice(text.as_bytes());
        table.insert_unique(hash, index, |&i| hash_of(hasher, list, ids, i));
        i
    }
}
