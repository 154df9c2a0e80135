//! The segment wire format: a finished [`Segment`] as bytes, to send it from the worker that
//! scanned it to the one that merges (the page's scan workers), and back, with its own error.

use super::entry::SkipReason;
use super::pipelines::Pipelines;
use super::scan::{Counts, Segment};
use crate::lines::LineSplitter;
use crate::policy::PassSet;
use std::collections::BTreeMap;

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
/// The first bytes of a segment on the wire.
pub const WIRE_MAGIC: &[u8; 4] = b"DGS2";

/// Why bytes are not a segment. The messages are those the page shows.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum WireError {
    /// The bytes do not start with [`WIRE_MAGIC`].
    #[error("not a deploy-gate segment")]
    NotASegment,
    /// The bytes end inside a field.
    #[error("a truncated segment")]
    Truncated,
    /// A count of items that cannot all follow in the bytes left (refused before allocating
    /// for them).
    #[error("a truncated segment")]
    CountTooLarge {
        /// The count read.
        count: u32,
        /// The bytes left after it.
        left: usize,
    },
    /// The line limit does not fit this platform's `usize`.
    #[error("a line limit too large")]
    LineLimitTooLarge,
    /// A skip reason number that is not listed.
    #[error("an unknown skip reason")]
    UnknownSkipReason,
    /// A pipeline id that is not UTF-8.
    #[error("an id that is not UTF-8")]
    IdNotUtf8,
    /// An empty pipeline id.
    #[error("an empty pipeline id")]
    EmptyId,
    /// An id marked as an integer whose text is not one.
    #[error("an integer id that is not an integer")]
    NotAnInteger,
    /// The same pipeline twice.
    #[error("a pipeline listed twice")]
    DuplicatePipeline,
    /// A rank that does not fit 32 bits.
    #[error("a rank too large")]
    RankTooLarge,
    /// Bytes after the last pipeline.
    #[error("trailing bytes after a segment")]
    TrailingBytes,
}

struct Wire<'a> {
    bytes: &'a [u8],
    at: usize,
}

impl Wire<'_> {
    fn take(&mut self, n: usize) -> Result<&[u8], WireError> {
        let end = self
            .at
            .checked_add(n)
            .filter(|&e| e <= self.bytes.len())
            .ok_or(WireError::Truncated)?;
        let out = &self.bytes[self.at..end];
        self.at = end;
        Ok(out)
    }
    fn u8(&mut self) -> Result<u8, WireError> {
        Ok(self.take(1)?[0])
    }
    fn u32(&mut self) -> Result<u32, WireError> {
        Ok(u32::from_le_bytes(self.take(4)?.try_into().expect("4 bytes")))
    }
    fn u64(&mut self) -> Result<u64, WireError> {
        Ok(u64::from_le_bytes(self.take(8)?.try_into().expect("8 bytes")))
    }
    /// Checks that `n` items of at least `size` bytes can follow, before allocating for them.
    fn count(&mut self, size: usize) -> Result<usize, WireError> {
        let count = self.u32()?;
        let left = self.bytes.len() - self.at;
        if (count as usize).saturating_mul(size) > left {
            return Err(WireError::CountTooLarge { count, left });
        }
        Ok(count as usize)
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
    pub fn from_bytes(bytes: &[u8]) -> Result<Segment, WireError> {
        let mut w = Wire { bytes, at: 0 };
        if w.take(4)? != WIRE_MAGIC {
            return Err(WireError::NotASegment);
        }
        let file = w.u32()?;
        let max_line = usize::try_from(w.u64()?).map_err(|_| WireError::LineLimitTooLarge)?;
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
            let reason = *SKIP_REASONS.get(w.u8()? as usize).ok_or(WireError::UnknownSkipReason)?;
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
            let text = std::str::from_utf8(&bytes[start..start + len]).map_err(|_| WireError::IdNotUtf8)?;
            if text.is_empty() {
                return Err(WireError::EmptyId);
            }
            let numeric = w.u8()? == 1;
            if numeric && !crate::json::is_integer_id_text(text) {
                return Err(WireError::NotAnInteger);
            }
            let i = pipelines.entry(text, numeric);
            if i + 1 != pipelines.len() {
                return Err(WireError::DuplicatePipeline);
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
            p.first_rank = u32::try_from(w.u64()?).map_err(|_| WireError::RankTooLarge)?;
            p.success_offset = w.u64()?;
        }
        if w.at != bytes.len() {
            return Err(WireError::TrailingBytes);
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
