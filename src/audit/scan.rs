//! Segments and the scanner: pass 1 over a part of a file (a [`Segment`]), the merge of
//! segments in file order into the index ([`IndexBuilder`]), and the streaming scanner over
//! whole files ([`AuditScanner`]).

use super::entry::{classify_line, Kind, SkipReason};
use super::pipelines::{LineRef, Pipelines};
use super::{AuditSummary, LineLocation, SkipStat, DEFAULT_MAX_LINE, FIRST_LINES_KEPT};
use crate::input::{InputFile, Role};
use crate::json::PyText;
use crate::lines::{LineSplitter, Piece};
use crate::policy::PassSet;
use sha2::{Digest, Sha256};
use std::collections::BTreeMap;

/// Line counts by kind.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct Counts {
    pub(super) lines: u64,
    pub(super) blank_lines: u64,
    pub(super) stage_entries: u64,
    pub(super) completion_entries: u64,
    pub(super) successful_completions: u64,
}

/// Pass 1 over one part of one audit file: the whole file, or a byte range of it that starts at
/// a line start. Parts of a file can be scanned independently (in parallel) and merged in file
/// order by an [`IndexBuilder`]; the result is the same as scanning the file in one piece.
pub struct Segment {
    pub(super) file: u32,
    pub(super) max_line: usize,
    pub(super) pass: PassSet,
    pub(super) splitter: LineSplitter,
    pub(super) counts: Counts,
    /// Skip counts and the first local line numbers, by reason.
    pub(super) skips: BTreeMap<SkipReason, (u64, Vec<u64>)>,
    pub(super) pipelines: Pipelines,
    pub(super) next_rank: u64,
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

    pub(super) fn piece(&mut self, piece: Piece<'_>) {
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

    pub(super) fn skip(&mut self, reason: SkipReason, line: u64) {
        let (count, first) = self.skips.entry(reason).or_default();
        *count += 1;
        if first.len() < FIRST_LINES_KEPT {
            first.push(line);
        }
    }

    pub(super) fn classify(&mut self, text: Option<&str>, at: LineRef) -> Result<(), SkipReason> {
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
            role: Role::Audit,
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
