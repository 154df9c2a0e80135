//! Splits pushed byte chunks into lines, independent of where the chunks were cut.

use memchr::{memchr, memchr_iter, memrchr};

/// The UTF-8 byte order mark, stripped from the start of a file.
const BOM: &[u8] = b"\xEF\xBB\xBF";

/// One line of a file: its content without the line ending, where it starts, and its number.
#[derive(Debug, Clone, Copy)]
pub struct Line<'a> {
    /// The content without `\n`, without a trailing `\r` and (line 1 only) without a BOM.
    pub bytes: &'a [u8],
    /// The same content as text when the splitter already knows it is valid UTF-8 (it checks
    /// the complete lines of each chunk at once, which is much cheaper than line by line).
    checked: Option<&'a str>,
    /// 1-based line number in its file.
    pub number: u64,
    /// Byte offset of `bytes` in the file.
    pub offset: u64,
}

impl<'a> Line<'a> {
    /// The line as text, or `None` when it is not valid UTF-8.
    pub fn text(&self) -> Option<&'a str> {
        self.checked.or_else(|| simdutf8::basic::from_utf8(self.bytes).ok())
    }
}

/// What the splitter hands out for each line: a line, or the notice that one was too long.
#[derive(Debug, Clone, Copy)]
pub enum Piece<'a> {
    /// A complete line.
    Line(Line<'a>),
    /// A line longer than the limit; its bytes were dropped.
    TooLong {
        /// 1-based line number in its file.
        number: u64,
        /// Its length in bytes.
        len: u64,
    },
}

/// Cuts one file into lines. Push chunks in order, then call [`LineSplitter::finish`].
///
/// A line split across chunks is carried over; lines longer than `max_line` are dropped
/// (reported as [`Piece::TooLong`]) without buffering them, so memory stays bounded.
#[derive(Debug)]
pub struct LineSplitter {
    carry: Vec<u8>,
    /// File offset of the first byte of the line being carried (or of the next line).
    line_start: u64,
    /// Line number of the line being carried (or of the next line).
    number: u64,
    /// Length of the current over-long line while its bytes are being skipped.
    skipping: Option<u64>,
    max_line: usize,
}

impl LineSplitter {
    /// A splitter that drops lines longer than `max_line` bytes.
    pub fn new(max_line: usize) -> Self {
        Self::starting_at(0, max_line)
    }

    /// A splitter for the part of a file that starts at byte `offset`, which must be the start
    /// of a line. Line numbers count from 1 within the part; a BOM is only stripped at offset 0.
    pub fn starting_at(offset: u64, max_line: usize) -> Self {
        LineSplitter {
            carry: Vec::new(),
            line_start: offset,
            number: 1,
            skipping: None,
            max_line,
        }
    }

    /// Total bytes consumed so far.
    pub fn position(&self) -> u64 {
        self.line_start + self.skipping.unwrap_or(self.carry.len() as u64)
    }

    /// Feeds the next chunk; `emit` is called for each line completed by it.
    pub fn push(&mut self, chunk: &[u8], mut emit: impl FnMut(Piece<'_>)) {
        // The lines that lie whole in this chunk, checked as UTF-8 in one go: from its start
        // (or from after its first newline when a line is carried in) to its last newline.
        let whole_from = if self.carry.is_empty() && self.skipping.is_none() {
            Some(0)
        } else {
            memchr(b'\n', chunk).map(|nl| nl + 1)
        };
        let whole = match (whole_from, memrchr(b'\n', chunk)) {
            (Some(from), Some(last)) if from <= last => simdutf8::basic::from_utf8(&chunk[from..=last])
                .ok()
                .map(|text| (from, text)),
            _ => None,
        };
        let checked = |from: usize, to: usize| whole.and_then(|(at, text)| text.get(from.checked_sub(at)?..to - at));
        let mut rest_from = 0;
        for nl in memchr_iter(b'\n', chunk) {
            let segment = &chunk[rest_from..nl];
            if let Some(skipped) = self.skipping.take() {
                let len = skipped + segment.len() as u64;
                emit(Piece::TooLong {
                    number: self.number,
                    len,
                });
                self.advance(len);
            } else if self.carry.is_empty() {
                if segment.len() > self.max_line {
                    // Over the limit within one chunk: dropped, as when it spans chunks.
                    emit(Piece::TooLong {
                        number: self.number,
                        len: segment.len() as u64,
                    });
                    self.advance(segment.len() as u64);
                } else {
                    self.emit_line(segment, checked(rest_from, nl), &mut emit);
                }
            } else {
                let mut carry = std::mem::take(&mut self.carry);
                if carry.len() + segment.len() > self.max_line {
                    let len = (carry.len() + segment.len()) as u64;
                    emit(Piece::TooLong {
                        number: self.number,
                        len,
                    });
                    self.advance(len);
                } else {
                    carry.extend_from_slice(segment);
                    self.emit_line(&carry, None, &mut emit);
                }
                carry.clear();
                self.carry = carry;
            }
            rest_from = nl + 1;
        }
        let rest = &chunk[rest_from..];
        if let Some(skipped) = self.skipping.as_mut() {
            *skipped += rest.len() as u64;
        } else if self.carry.len() + rest.len() > self.max_line {
            self.skipping = Some((self.carry.len() + rest.len()) as u64);
            self.carry = Vec::new();
        } else {
            self.carry.extend_from_slice(rest);
        }
    }

    /// Ends the file: a last line without a newline is emitted too.
    pub fn finish(&mut self, mut emit: impl FnMut(Piece<'_>)) {
        if let Some(len) = self.skipping.take() {
            emit(Piece::TooLong {
                number: self.number,
                len,
            });
            self.advance(len);
        } else if !self.carry.is_empty() {
            let carry = std::mem::take(&mut self.carry);
            self.emit_line(&carry, None, &mut emit);
        }
    }

    /// Emits a line; `checked` is `raw` as text when it is known to be valid UTF-8.
    fn emit_line(&mut self, raw: &[u8], checked: Option<&str>, emit: &mut impl FnMut(Piece<'_>)) {
        let mut bytes = raw;
        let mut offset = self.line_start;
        let mut from = 0;
        if self.line_start == 0 && bytes.starts_with(BOM) {
            bytes = &bytes[BOM.len()..];
            offset += BOM.len() as u64;
            from = BOM.len();
        }
        if let [head @ .., b'\r'] = bytes {
            bytes = head;
        }
        emit(Piece::Line(Line {
            bytes,
            // The BOM is a whole character and `\r` one byte, so both cuts fall on boundaries.
            checked: checked.and_then(|text| text.get(from..from + bytes.len())),
            number: self.number,
            offset,
        }));
        self.advance(raw.len() as u64);
    }

    /// Moves past a line of `len` bytes and its newline.
    fn advance(&mut self, len: u64) {
        self.line_start += len + 1;
        self.number += 1;
    }
}

/// Splits a whole in-memory file into lines (a convenience over [`LineSplitter`]). The file is
/// fed a MiB at a time, so its bytes are read in one sweep, front to back (the UTF-8 check of
/// the whole lines of a piece just before their lines are handed out): a caller that holds the
/// file mapped can give back the pages behind the lines it was given. The lines are the same
/// however the file is cut; only a line across a cut is handed out from a copy.
pub fn split_all(bytes: &[u8], max_line: usize, mut emit: impl FnMut(Piece<'_>)) {
    let mut splitter = LineSplitter::new(max_line);
    for piece in bytes.chunks(1 << 20) {
        splitter.push(piece, &mut emit);
    }
    splitter.finish(&mut emit);
}

/// The 1-based line and the 1-based column (in bytes) of byte `offset` of `bytes`.
pub fn position(bytes: &[u8], offset: usize) -> (u64, u64) {
    let mut at = Positions::new(bytes);
    at.of(offset)
}

/// Lines and columns of increasing byte offsets of one text, each newline counted once (the
/// elements of a JSON array of millions of records are placed in one pass over it).
#[derive(Debug, Clone)]
pub struct Positions<'a> {
    bytes: &'a [u8],
    /// How far the newlines were counted.
    counted: usize,
    line: u64,
    line_start: usize,
}

impl<'a> Positions<'a> {
    /// Positions in `bytes`, from its start.
    pub fn new(bytes: &'a [u8]) -> Self {
        Positions {
            bytes,
            counted: 0,
            line: 1,
            line_start: 0,
        }
    }

    /// The line and column of byte `offset` (clamped to the text); an offset before the last
    /// one asked for is counted again from the start.
    pub fn of(&mut self, offset: usize) -> (u64, u64) {
        let offset = offset.min(self.bytes.len());
        if offset < self.counted {
            *self = Positions::new(self.bytes);
        }
        for nl in memchr_iter(b'\n', &self.bytes[self.counted..offset]) {
            self.line += 1;
            self.line_start = self.counted + nl + 1;
        }
        self.counted = offset;
        (self.line, (offset - self.line_start) as u64 + 1)
    }
}

/// Where `bytes` stops being UTF-8: the offset of the first byte that does not belong to a
/// valid character, and that byte.
pub fn invalid_utf8(bytes: &[u8]) -> Option<(usize, u8)> {
    match simdutf8::compat::from_utf8(bytes) {
        Ok(_) => None,
        Err(e) => Some((e.valid_up_to(), bytes[e.valid_up_to()])),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lines(chunks: &[&[u8]], max: usize) -> Vec<(u64, u64, String)> {
        let mut out = Vec::new();
        let mut s = LineSplitter::new(max);
        let mut take = |p: Piece<'_>| match p {
            Piece::Line(l) => out.push((l.number, l.offset, String::from_utf8_lossy(l.bytes).into_owned())),
            Piece::TooLong { number, len } => out.push((number, len, "<too long>".into())),
        };
        for c in chunks {
            s.push(c, &mut take);
        }
        s.finish(&mut take);
        out
    }

    #[test]
    fn positions_count_lines_and_byte_columns() {
        let text = b"ab\n\ncd\xC3\xA9x\n";
        assert_eq!(position(text, 0), (1, 1));
        assert_eq!(position(text, 2), (1, 3));
        assert_eq!(position(text, 3), (2, 1));
        assert_eq!(position(text, 4), (3, 1));
        assert_eq!(position(text, 8), (3, 5));
        assert_eq!(position(text, 99), (4, 1));
        let mut at = Positions::new(text);
        assert_eq!(
            [at.of(1), at.of(4), at.of(8), at.of(2)],
            [(1, 2), (3, 1), (3, 5), (1, 3)]
        );
        assert_eq!(invalid_utf8(b"ok \xC3\xA9 \xE2\x82 x"), Some((6, 0xE2)));
        assert_eq!(invalid_utf8(b"\xC3\xA9"), None);
    }

    #[test]
    fn strips_bom_crlf_and_keeps_offsets() {
        let got = lines(&[b"\xEF\xBB\xBFab\r\n\r\ncd"], 100);
        assert_eq!(got, vec![(1, 3, "ab".into()), (2, 7, "".into()), (3, 9, "cd".into())]);
    }

    #[test]
    fn bom_only_on_the_first_line() {
        let got = lines(&[b"x\n\xEF\xBB\xBFy\n"], 100);
        assert_eq!(got[1].2, "\u{feff}y");
    }

    #[test]
    fn one_byte_chunks_give_the_same_lines() {
        let data: &[u8] = b"\xEF\xBB\xBF{\"a\":1}\r\n\xC3\xA9t\xC3\xA9\n\nlast\r";
        let whole = lines(&[data], 100);
        let bytes: Vec<&[u8]> = data.chunks(1).collect();
        assert_eq!(lines(&bytes, 100), whole);
        assert_eq!(whole.last().unwrap().2, "last");
    }

    /// The text a line carries is its bytes as UTF-8, wherever the chunks were cut: through a
    /// character, through an invalid line, next to a BOM or a `\r`.
    #[test]
    fn line_text_is_checked_wherever_chunks_are_cut() {
        let data: &[u8] =
            b"\xEF\xBB\xBF\xC3\xA9a\r\nbad \xFF\xFE\n\xE6\x9D\xB1\xE4\xBA\xAC\n\nz\xF0\x9F\x9A\x80\r\nend \xC3";
        let texts = |chunks: &[&[u8]]| {
            let mut out = Vec::new();
            let mut s = LineSplitter::new(100);
            let mut take = |p: Piece<'_>| {
                if let Piece::Line(l) = p {
                    assert_eq!(l.text(), std::str::from_utf8(l.bytes).ok(), "line {}", l.number);
                    out.push((l.number, l.text().map(str::to_owned)));
                }
            };
            for c in chunks {
                s.push(c, &mut take);
            }
            s.finish(&mut take);
            out
        };
        let whole = texts(&[data]);
        assert_eq!(whole.len(), 6);
        assert_eq!(whole[0].1.as_deref(), Some("\u{e9}a"));
        assert_eq!(whole[1].1, None);
        assert_eq!(whole[5].1, None);
        for a in 0..=data.len() {
            for b in a..=data.len() {
                assert_eq!(
                    texts(&[&data[..a], &data[a..b], &data[b..]]),
                    whole,
                    "cut at {a} and {b}"
                );
            }
        }
    }

    /// Found by the `audit_log` fuzz target: a line over the limit that lay whole in one chunk
    /// was kept, while the same line cut across chunks was dropped.
    #[test]
    fn a_line_over_the_limit_is_dropped_however_the_chunks_are_cut() {
        let data: &[u8] = b"0123456789\nok\n\xEF\xBB\xBF456789abc\r\nlast-line-too-long";
        let whole = lines(&[data], 8);
        assert_eq!(
            whole,
            vec![
                (1, 10, "<too long>".into()),
                (2, 11, "ok".into()),
                (3, 13, "<too long>".into()),
                (4, 18, "<too long>".into())
            ]
        );
        for size in 1..data.len() {
            let chunks: Vec<&[u8]> = data.chunks(size).collect();
            assert_eq!(lines(&chunks, 8), whole, "chunks of {size}");
        }
    }

    #[test]
    fn too_long_lines_are_dropped_without_buffering() {
        let got = lines(&[b"short\n0123", b"456789", b"\nok"], 8);
        assert_eq!(
            got,
            vec![
                (1, 0, "short".into()),
                (2, 10, "<too long>".into()),
                (3, 17, "ok".into())
            ]
        );
        let got = lines(&[b"0123456789"], 8);
        assert_eq!(got, vec![(1, 10, "<too long>".into())]);
    }
}
