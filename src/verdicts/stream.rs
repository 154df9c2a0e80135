//! A verdict file read a piece at a time, so that the file is never held whole: the page reads a
//! verdict file of a gigabyte, answers and all, through a window of a few MiB, in any of the four
//! formats.
//!
//! JSONL is read line by line, and an unusable line is the error the whole-file reader gives.
//! A JSON array or object is cut into its elements (entries), each read by the whole-file
//! reader's own code; CSV and TSV into complete rows (csv-core finds where a row ends, quoted
//! line breaks and all), read by the csv crate as the whole-file reader reads them. Where such a
//! file holds anything the pieces do not vouch for (a syntax error, an unusable record, bytes
//! that are not UTF-8), the stream does not guess at the whole-file reader's
//! message: it asks for the file whole ([`VerdictStream::finish`] gives `None`), and the whole-file
//! reader gives its result or its error, as it always did.

use super::{
    array_record, csv_record_start, delimited_reader, detect_format, jsonl_piece, map_record, placed, Columns, Parsed,
    VerdictFormat, Verdicts,
};
use crate::input::{InputError, InputFile, Role};
use crate::lines::{LineSplitter, Positions};
use sha2::{Digest, Sha256};

/// A verdict file read a piece at a time. Every record is kept (as [`super::parse_verdicts`]
/// keeps them: no second pass is needed), and the result is [`super::parse_verdicts`]'s for the
/// same bytes, however they are cut: feed every piece in order ([`VerdictStream::feed`]), then
/// [`VerdictStream::finish`].
pub struct VerdictStream {
    sha: Sha256,
    size: u64,
    out: Verdicts,
    reader: Reader,
}

/// How the pieces are read.
enum Reader {
    /// JSONL, line by line; the first unusable line is the error.
    Lines {
        splitter: LineSplitter,
        failure: Option<InputError>,
        role: Role,
        name: String,
    },
    /// A JSON array or object, element by element.
    Json(JsonElements),
    /// CSV or TSV, complete rows at a time.
    Rows(Box<Rows>),
    /// The pieces do not vouch for the file: it is to be read whole.
    Whole,
}

impl VerdictStream {
    /// A stream for a verdict file whose first bytes are `head` (at least its first non-blank
    /// line whole, or the whole file; `head` is not fed: feed the file from its start).
    pub fn start(role: Role, name: &str, head: &[u8]) -> VerdictStream {
        let format = detect_format(head);
        let reader = match format {
            VerdictFormat::Jsonl => Reader::Lines {
                splitter: LineSplitter::new(usize::MAX),
                failure: None,
                role,
                name: name.to_owned(),
            },
            VerdictFormat::JsonArray | VerdictFormat::JsonMap => {
                Reader::Json(JsonElements::new(format == VerdictFormat::JsonMap))
            }
            VerdictFormat::Csv | VerdictFormat::Tsv => Reader::Rows(Box::new(Rows::new(format == VerdictFormat::Tsv))),
        };
        // (The size and the sha256 are the file's once it is read.)
        let file = InputFile {
            role,
            name: name.into(),
            bytes: 0,
            sha256: String::new(),
        };
        VerdictStream {
            sha: Sha256::new(),
            size: 0,
            out: Verdicts::empty(file, format, None),
            reader,
        }
    }

    /// The next piece of the file. In JSONL an unusable record is an error naming its line (and
    /// the stream is done with); in the other formats anything the pieces do not vouch for makes
    /// the stream ask for the file whole ([`VerdictStream::wants_whole`]).
    pub fn feed(&mut self, piece: &[u8]) -> Result<(), InputError> {
        // (An empty piece says nothing: the file's end is `finish`.)
        if piece.is_empty() {
            return Ok(());
        }
        let out = &mut self.out;
        let vouched = match &mut self.reader {
            Reader::Whole => return Ok(()),
            Reader::Lines {
                splitter,
                failure,
                role,
                name,
            } => {
                splitter.push(piece, |p| {
                    jsonl_piece(p, *role, name, failure, &mut |parsed| out.take(parsed))
                });
                if let Some(e) = failure {
                    return Err(e.clone());
                }
                true
            }
            Reader::Json(elements) => elements.push(piece, false, &mut |parsed| out.take(parsed)).is_ok(),
            Reader::Rows(rows) => rows.push(piece, &mut |parsed| out.take(parsed)).is_ok(),
        };
        if vouched {
            self.sha.update(piece);
            self.size += piece.len() as u64;
        } else {
            self.reader = Reader::Whole;
        }
        Ok(())
    }

    /// The file is to be read whole: the pieces after this one need not be fed.
    pub fn wants_whole(&self) -> bool {
        matches!(self.reader, Reader::Whole)
    }

    /// The file read: its verdicts, or `None` when it is to be read whole
    /// ([`super::parse_verdicts`], which gives the file's result or its error).
    pub fn finish(mut self) -> Result<Option<Verdicts>, InputError> {
        let out = &mut self.out;
        let vouched = match &mut self.reader {
            Reader::Whole => false,
            Reader::Lines {
                splitter,
                failure,
                role,
                name,
            } => {
                splitter.finish(|p| jsonl_piece(p, *role, name, failure, &mut |parsed| out.take(parsed)));
                if let Some(e) = failure.take() {
                    return Err(e);
                }
                true
            }
            Reader::Json(elements) => elements.finish(&mut |parsed| out.take(parsed)).is_ok(),
            Reader::Rows(rows) => rows.finish(&mut |parsed| out.take(parsed)).is_ok(),
        };
        if !vouched {
            return Ok(None);
        }
        // Every record is kept: nothing is left to compare in a second pass.
        debug_assert!(self.out.others.is_empty());
        self.out.file.bytes = self.size;
        self.out.file.sha256 = hex::encode(self.sha.finalize());
        Ok(Some(self.out))
    }
}

/// The pieces do not vouch for the file (the whole-file reader says what is wrong with it).
struct ReadWhole;

/// JSON's whitespace.
fn is_ws(b: u8) -> bool {
    matches!(b, b' ' | b'\t' | b'\n' | b'\r')
}

/// What a [`Window`] holds: bytes (CSV, which the csv crate checks), or text (JSON, checked
/// once as it comes in: serde_json then reads it as text, without checking it again).
trait Held: Default {
    fn bytes(&self) -> &[u8];
    /// Takes a piece; bytes of a character cut by the piece's end wait in `tail`.
    fn take(&mut self, piece: &[u8], tail: &mut Vec<u8>, at_end: bool) -> Result<(), ReadWhole>;
    fn drop_front(&mut self, n: usize);
    /// Drops a byte-order mark at the start; says whether there was one.
    fn strip_bom(&mut self) -> bool;
}

impl Held for Vec<u8> {
    fn bytes(&self) -> &[u8] {
        self
    }
    fn take(&mut self, piece: &[u8], _: &mut Vec<u8>, _: bool) -> Result<(), ReadWhole> {
        self.extend_from_slice(piece);
        Ok(())
    }
    fn drop_front(&mut self, n: usize) {
        self.drain(..n);
    }
    fn strip_bom(&mut self) -> bool {
        let bom = self.starts_with(b"\xEF\xBB\xBF");
        if bom {
            self.drain(..3);
        }
        bom
    }
}

impl Held for String {
    fn bytes(&self) -> &[u8] {
        self.as_bytes()
    }
    fn take(&mut self, piece: &[u8], tail: &mut Vec<u8>, at_end: bool) -> Result<(), ReadWhole> {
        let joined;
        let piece = if tail.is_empty() {
            piece
        } else {
            joined = [&tail[..], piece].concat();
            tail.clear();
            &joined
        };
        match simdutf8::compat::from_utf8(piece) {
            Ok(text) => self.push_str(text),
            Err(e) => {
                let (good, rest) = piece.split_at(e.valid_up_to());
                self.push_str(std::str::from_utf8(good).expect("valid up to here"));
                // Only a character cut by the piece's end is waited for.
                if e.error_len().is_some() || at_end {
                    return Err(ReadWhole);
                }
                tail.extend_from_slice(rest);
            }
        }
        Ok(())
    }
    fn drop_front(&mut self, n: usize) {
        self.drain(..n);
    }
    fn strip_bom(&mut self) -> bool {
        let bom = self.starts_with('\u{feff}');
        if bom {
            self.drain(..3);
        }
        bom
    }
}

/// What is held since the last element handed out, with where it is in the file.
struct Window<H> {
    held: H,
    /// The bytes of a character cut by the last piece's end.
    tail: Vec<u8>,
    /// The file offset of the first byte held.
    offset: u64,
    /// The line the first byte held is on.
    line: u64,
    /// How far into what is held the lines are counted, and the line there.
    counted: usize,
    counted_line: u64,
    /// A byte-order mark is looked for at the start of the file.
    started: bool,
}

impl<H: Held> Window<H> {
    fn new() -> Window<H> {
        Window {
            held: H::default(),
            tail: Vec::new(),
            offset: 0,
            line: 1,
            counted: 0,
            counted_line: 1,
            started: false,
        }
    }

    /// Takes a piece; says whether the file's body can be read (its first three bytes are in,
    /// or the file is at its end: `at_end`). A byte-order mark at the file's start is counted
    /// in the offsets but not held: the whole-file readers read the body, after it.
    fn push(&mut self, piece: &[u8], at_end: bool) -> Result<bool, ReadWhole> {
        self.held.take(piece, &mut self.tail, at_end)?;
        if !self.started && (self.held.bytes().len() >= 3 || at_end) {
            self.started = true;
            if self.held.strip_bom() {
                self.offset = 3;
            }
        }
        Ok(self.started)
    }

    /// The line of byte `at` (at or after the last asked for).
    fn line_of(&mut self, at: usize) -> u64 {
        debug_assert!(at >= self.counted);
        self.counted_line += memchr::memchr_iter(b'\n', &self.held.bytes()[self.counted..at]).count() as u64;
        self.counted = at;
        self.counted_line
    }

    /// Lets go of what is held before `at`.
    fn drop_before(&mut self, at: usize) {
        if at > self.counted {
            self.line_of(at);
        }
        let after = memchr::memchr_iter(b'\n', &self.held.bytes()[at..self.counted]).count() as u64;
        self.line = self.counted_line - after;
        self.held.drop_front(at);
        self.offset += at as u64;
        self.counted -= at;
    }
}

/// Where [`JsonElements`] is in the file.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Place {
    /// Before the array (object) opens.
    Before,
    /// Just after it opens: an element or the close.
    Opened,
    /// After an element: a comma or the close.
    Element,
    /// After a comma: an element.
    Comma,
    /// After it closes.
    After,
}

/// A JSON array of records, or an object of verdicts, cut into its elements (entries): each is
/// parsed by serde_json where it starts (an element cut by the piece's end waits for the next
/// piece), then read by the whole-file reader's code.
struct JsonElements {
    map: bool,
    window: Window<String>,
    place: Place,
    /// Where the next thing starts in the window.
    at: usize,
    /// An element that did not end in the window is tried again once the window is this long
    /// (twice what it was): an element of any size is parsed a bounded number of times.
    retry_at: usize,
    /// Elements handed out.
    count: usize,
}

/// What parsing at a place of the window gave.
enum Parse<T> {
    /// The value, and where it ends.
    Done(T, usize),
    /// The window ends first.
    More,
}

/// Parses one `T` at `at` of `text` (the file's end is `at_end`).
fn parse_at<'a, T: serde::Deserialize<'a>>(text: &'a str, at: usize, at_end: bool) -> Result<Parse<T>, ReadWhole> {
    let bytes = text.as_bytes();
    let mut values = serde_json::Deserializer::from_str(&text[at..]).into_iter::<T>();
    match values.next() {
        // A value that ends with the window may go on in the next piece (a number's digits).
        Some(Ok(_)) if at + values.byte_offset() == bytes.len() && !at_end => Ok(Parse::More),
        Some(Ok(value)) => Ok(Parse::Done(value, at + values.byte_offset())),
        Some(Err(e)) if e.is_eof() && !at_end => Ok(Parse::More),
        None if !at_end => Ok(Parse::More),
        _ => Err(ReadWhole),
    }
}

impl JsonElements {
    fn new(map: bool) -> JsonElements {
        JsonElements {
            map,
            window: Window::new(),
            place: Place::Before,
            at: 0,
            retry_at: 0,
            count: 0,
        }
    }

    fn push(&mut self, piece: &[u8], at_end: bool, on: &mut dyn FnMut(Parsed<'_>)) -> Result<(), ReadWhole> {
        if !self.window.push(piece, at_end)? {
            return Ok(());
        }
        if at_end || self.window.held.len() >= self.retry_at {
            self.scan(at_end, on)?;
        }
        let done = self.at;
        self.window.drop_before(done);
        self.at = 0;
        self.retry_at = self.retry_at.saturating_sub(done);
        Ok(())
    }

    fn finish(&mut self, on: &mut dyn FnMut(Parsed<'_>)) -> Result<(), ReadWhole> {
        self.push(&[], true, on)?;
        match self.place {
            Place::After => Ok(()),
            _ => Err(ReadWhole),
        }
    }

    fn scan(&mut self, at_end: bool, on: &mut dyn FnMut(Parsed<'_>)) -> Result<(), ReadWhole> {
        let (open, close) = if self.map { (b'{', b'}') } else { (b'[', b']') };
        loop {
            let bytes = self.window.held.as_bytes();
            while self.at < bytes.len() && is_ws(bytes[self.at]) {
                self.at += 1;
            }
            let Some(&b) = bytes.get(self.at) else { return Ok(()) };
            match (self.place, b) {
                (Place::Before, _) if b == open => self.place = Place::Opened,
                (Place::Opened | Place::Element, _) if b == close => self.place = Place::After,
                (Place::Element, b',') => self.place = Place::Comma,
                (Place::Opened | Place::Comma, _) => {
                    let start = self.at;
                    match self.element(start, at_end, on)? {
                        Parse::Done((), end) => {
                            self.at = end;
                            self.place = Place::Element;
                            self.count += 1;
                            continue;
                        }
                        Parse::More => {
                            self.retry_at = start + 2 * (self.window.held.len() - start);
                            return Ok(());
                        }
                    }
                }
                _ => return Err(ReadWhole),
            }
            self.at += 1;
        }
    }

    /// The element (entry) that starts at `start`: read and handed to `on`, or `More` when the
    /// window ends within it.
    fn element(&mut self, start: usize, at_end: bool, on: &mut dyn FnMut(Parsed<'_>)) -> Result<Parse<()>, ReadWhole> {
        let text = self.window.held.as_str();
        let bytes = text.as_bytes();
        let (key, value_at) = if self.map {
            let Parse::Done(key, mut at) = parse_at::<String>(text, start, at_end)? else {
                return Ok(Parse::More);
            };
            // A JSONL file whose first line is longer than the head the format was told from
            // looks like an object whose keys are a record's: the whole-file reader, which sees
            // the line whole, reads it as JSONL.
            if key == "pipeline_id" {
                return Err(ReadWhole);
            }
            while at < bytes.len() && is_ws(bytes[at]) {
                at += 1;
            }
            match bytes.get(at) {
                None if !at_end => return Ok(Parse::More),
                Some(b':') => {}
                _ => return Err(ReadWhole),
            }
            at += 1;
            while at < bytes.len() && is_ws(bytes[at]) {
                at += 1;
            }
            if at == bytes.len() && !at_end {
                return Ok(Parse::More);
            }
            (Some(key), at)
        } else {
            (None, start)
        };
        let Parse::Done(raw, end) = parse_at::<&serde_json::value::RawValue>(text, value_at, at_end)? else {
            return Ok(Parse::More);
        };
        let text = raw.get();
        // (serde_json's stream stops at the value's end; the value's text is all of it.)
        debug_assert_eq!(text.len(), end - value_at);
        let offset = self.window.offset + value_at as u64;
        let line = self.window.line_of(value_at);
        let text = &self.window.held[value_at..end];
        let parsed = match &key {
            Some(key) => map_record(key, text, line).map(Parsed::Record).map_err(|_| ReadWhole)?,
            None => array_record(text, line).map_err(|_| ReadWhole)?,
        };
        on(placed(parsed, text, offset));
        Ok(Parse::Done((), end))
    }
}

/// A CSV or TSV file cut into complete rows: csv-core, configured as the csv crate reads, finds
/// where each row ends; the complete rows held are then read by the csv crate.
struct Rows {
    tab: bool,
    window: Window<Vec<u8>>,
    core: csv_core::Reader,
    /// How far csv-core has read the window.
    scanned: usize,
    /// Where the last complete row (or the header) ends in the window.
    complete: usize,
    /// The header's columns, once it is read.
    columns: Option<Columns>,
    /// Room for csv-core's fields, which are not needed (only where rows end).
    fields: Vec<u8>,
    ends: Vec<usize>,
}

impl Rows {
    fn new(tab: bool) -> Rows {
        Rows {
            tab,
            window: Window::new(),
            core: csv_core::ReaderBuilder::new()
                .delimiter(if tab { b'\t' } else { b',' })
                .build(),
            scanned: 0,
            complete: 0,
            columns: None,
            fields: vec![0; 1 << 16],
            ends: vec![0; 1 << 10],
        }
    }

    fn push(&mut self, piece: &[u8], on: &mut dyn FnMut(Parsed<'_>)) -> Result<(), ReadWhole> {
        if !self.window.push(piece, false)? {
            return Ok(());
        }
        self.find_ends(false);
        self.read_complete(on)
    }

    fn finish(&mut self, on: &mut dyn FnMut(Parsed<'_>)) -> Result<(), ReadWhole> {
        self.window.push(&[], true)?;
        self.find_ends(false);
        self.find_ends(true);
        self.read_complete(on)?;
        // A file of no header at all (blank lines only) is the whole-file reader's to refuse.
        self.columns.as_ref().map(|_| ()).ok_or(ReadWhole)
    }

    /// Moves `complete` to the end of the last row that ends in the window (at the file's end,
    /// `last`, the row it ends in).
    fn find_ends(&mut self, last: bool) {
        loop {
            let input = if last {
                &[][..]
            } else {
                &self.window.held[self.scanned..]
            };
            let (result, read, _, _) = self.core.read_record(input, &mut self.fields, &mut self.ends);
            self.scanned += read;
            match result {
                csv_core::ReadRecordResult::InputEmpty | csv_core::ReadRecordResult::End => break,
                // The fields are not kept: their room is used again.
                csv_core::ReadRecordResult::OutputFull | csv_core::ReadRecordResult::OutputEndsFull => {}
                csv_core::ReadRecordResult::Record => self.complete = self.scanned,
            }
        }
    }

    /// Reads the complete rows held, then lets go of them.
    fn read_complete(&mut self, on: &mut dyn FnMut(Parsed<'_>)) -> Result<(), ReadWhole> {
        let rows = &self.window.held[..self.complete];
        if rows.is_empty() {
            return Ok(());
        }
        // csv-core drops a byte-order mark at the start of what a reader is given: after the
        // header, a row that starts with one is the whole-file reader's to read.
        if self.columns.is_some() && rows.starts_with(b"\xEF\xBB\xBF") {
            return Err(ReadWhole);
        }
        let mut reader = delimited_reader(self.tab, self.columns.is_none(), rows);
        if self.columns.is_none() {
            let headers = reader.headers().map_err(|_| ReadWhole)?;
            self.columns = Some(Columns::of(headers, self.tab).map_err(|_| ReadWhole)?);
        }
        let columns = self.columns.as_ref().expect("read above");
        let mut row = csv::StringRecord::new();
        let mut positions = Positions::new(rows);
        while reader.read_record(&mut row).map_err(|_| ReadWhole)? {
            if row.len() != columns.width {
                return Err(ReadWhole);
            }
            let start = row.position().map_or(0, |p| csv_record_start(rows, p));
            let line = self.window.line + positions.of(start).0 - 1;
            let end = (reader.position().byte() as usize).min(rows.len());
            // The answer's place in the file: the rows' place is added.
            let at = self.window.offset;
            let record = columns
                .record(&row, at + start as u64, at + end as u64, line)
                .map_err(|_| ReadWhole)?;
            on(Parsed::Record(record));
        }
        let complete = self.complete;
        self.window.drop_before(complete);
        self.scanned -= complete;
        self.complete = 0;
        Ok(())
    }
}
