//! Pass 1 over the audit log: classifies every line and indexes each pipeline's lines.
//!
//! The scanner keeps, per pipeline, its winning successful completion and the byte ranges of
//! its stage lines, never their contents: the test set is built in pass 2 from just the lines
//! of the chosen pipelines (see [`crate::testset`]).
//!
//! - `entry.rs`: a line's pipeline id and kind (stage, completion, or why it is skipped), and
//!   the one rule that says whether a line is a completion (`Marks::kind`), which the verdict
//!   reader and the role sniffer use too;
//! - `pipelines.rs`: the pipeline table (fixed-size records, ids in an arena);
//! - `scan.rs`: segments of a file ([`Segment`]), their merge into the index
//!   ([`IndexBuilder`]), the streaming scanner ([`AuditScanner`]);
//! - `wire.rs`: a finished segment as bytes between workers, with its own error
//!   ([`WireError`]).

pub(crate) mod entry;
pub(crate) mod pipelines;
pub(crate) mod scan;
pub(crate) mod wire;

#[cfg(test)]
mod tests;

use serde::Serialize;
use std::collections::BTreeMap;

pub(crate) use entry::{classify_line, into_id_text, Kind};
pub use entry::{PipelineId, SkipReason};
pub use pipelines::{LineRef, Pos};
pub use scan::{scan_all, AuditIndex, AuditScanner, IndexBuilder, Segment};
pub use wire::WireError;

/// Lines longer than this are skipped (reason `line_too_long`) without being buffered.
pub const DEFAULT_MAX_LINE: usize = 256 << 20;

/// How many line numbers are kept per skip reason.
const FIRST_LINES_KEPT: usize = 5;

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
