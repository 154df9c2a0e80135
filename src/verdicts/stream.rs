//! A verdict file read a piece at a time, so that the file is never held whole: the page reads a
//! verdict file of a gigabyte, answers and all, through a window of a few MiB, in any of the four
//! formats.
//!
//! JSONL is read line by line, and an unusable line is the error the whole-file reader gives.
//! A JSON array or object is cut into its elements (entries), each read by the whole-file
//! reader's own code; CSV and TSV into complete rows (csv-core finds where a row ends, quoted
//! line breaks and all), read by the csv crate as the whole-file reader reads them. Where such a
//! file holds anything the pieces do not vouch for (a syntax error, an unusable record, bytes
//! that are not UTF-8, deep nesting), the stream does not guess at the whole-file reader's
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

/// Nesting deeper than this inside an element is left to the whole-file reader (serde_json's
/// limit is 128 levels, the array or object holding the elements included).
const MAX_DEPTH: u32 = 100;

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

/// The bytes held since the last element handed out, with where they are in the file.
struct Window {
    bytes: Vec<u8>,
    /// The file offset of `bytes[0]`.
    offset: u64,
    /// The line `bytes[0]` is on.
    line: u64,
    /// How far into `bytes` the lines are counted, and the line there.
    counted: usize,
    counted_line: u64,
    /// A byte-order mark is looked for at the start of the file.
    started: bool,
}

impl Window {
    fn new() -> Window {
        Window {
            bytes: Vec::new(),
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
    fn push(&mut self, piece: &[u8], at_end: bool) -> bool {
        self.bytes.extend_from_slice(piece);
        if !self.started && (self.bytes.len() >= 3 || at_end) {
            self.started = true;
            if self.bytes.starts_with(b"\xEF\xBB\xBF") {
                self.bytes.drain(..3);
                self.offset = 3;
            }
        }
        self.started
    }

    /// The line of byte `at` (at or after the last asked for).
    fn line_of(&mut self, at: usize) -> u64 {
        debug_assert!(at >= self.counted);
        self.counted_line += memchr::memchr_iter(b'\n', &self.bytes[self.counted..at]).count() as u64;
        self.counted = at;
        self.counted_line
    }

    /// Lets go of the bytes before `at`.
    fn drop_before(&mut self, at: usize) {
        if at > self.counted {
            self.line_of(at);
        }
        let after = memchr::memchr_iter(b'\n', &self.bytes[at..self.counted]).count() as u64;
        self.line = self.counted_line - after;
        self.bytes.drain(..at);
        self.offset += at as u64;
        self.counted -= at;
    }
}

/// Where [`JsonElements`] is in the file.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Place {
    /// Before the array (object) opens.
    Before,
    /// Within it.
    Within,
    /// After it closes.
    After,
}

/// A JSON array of records, or an object of verdicts, cut into its elements (entries).
struct JsonElements {
    map: bool,
    window: Window,
    place: Place,
    /// How far the window is scanned, and the state there.
    at: usize,
    depth: u32,
    in_string: bool,
    escaped: bool,
    /// Where the element being scanned starts in the window.
    element: usize,
    /// Elements handed out.
    count: usize,
}

impl JsonElements {
    fn new(map: bool) -> JsonElements {
        JsonElements {
            map,
            window: Window::new(),
            place: Place::Before,
            at: 0,
            depth: 0,
            in_string: false,
            escaped: false,
            element: 0,
            count: 0,
        }
    }

    fn push(&mut self, piece: &[u8], at_end: bool, on: &mut dyn FnMut(Parsed<'_>)) -> Result<(), ReadWhole> {
        if !self.window.push(piece, at_end) {
            return Ok(());
        }
        self.scan(on)?;
        let keep_from = if self.place == Place::Within {
            self.element
        } else {
            self.at
        };
        self.window.drop_before(keep_from);
        self.at -= keep_from;
        self.element -= keep_from.min(self.element);
        Ok(())
    }

    fn finish(&mut self, on: &mut dyn FnMut(Parsed<'_>)) -> Result<(), ReadWhole> {
        self.push(&[], true, on)?;
        match self.place {
            Place::After => Ok(()),
            _ => Err(ReadWhole),
        }
    }

    fn scan(&mut self, on: &mut dyn FnMut(Parsed<'_>)) -> Result<(), ReadWhole> {
        let (open, close) = if self.map { (b'{', b'}') } else { (b'[', b']') };
        while self.at < self.window.bytes.len() {
            let b = self.window.bytes[self.at];
            match self.place {
                Place::Before if is_ws(b) => self.at += 1,
                Place::Before if b == open => {
                    self.place = Place::Within;
                    self.at += 1;
                    self.element = self.at;
                }
                Place::After if is_ws(b) => self.at += 1,
                Place::Before | Place::After => return Err(ReadWhole),
                Place::Within if self.escaped => {
                    self.escaped = false;
                    self.at += 1;
                }
                Place::Within if self.in_string => match memchr::memchr2(b'"', b'\\', &self.window.bytes[self.at..]) {
                    None => self.at = self.window.bytes.len(),
                    Some(i) => {
                        let found = self.at + i;
                        if self.window.bytes[found] == b'"' {
                            self.in_string = false;
                        } else {
                            self.escaped = true;
                        }
                        self.at = found + 1;
                    }
                },
                Place::Within => {
                    match b {
                        b'"' => self.in_string = true,
                        b'[' | b'{' => {
                            self.depth += 1;
                            if self.depth > MAX_DEPTH {
                                return Err(ReadWhole);
                            }
                        }
                        b']' | b'}' if self.depth > 0 => self.depth -= 1,
                        b']' | b'}' => {
                            if b != close {
                                return Err(ReadWhole);
                            }
                            self.element_ends(true, on)?;
                            self.place = Place::After;
                        }
                        b',' if self.depth == 0 => {
                            self.element_ends(false, on)?;
                            self.element = self.at + 1;
                        }
                        _ => {}
                    }
                    self.at += 1;
                }
            }
        }
        Ok(())
    }

    /// The element from `self.element` to `self.at` ends (at a comma, or at the close).
    fn element_ends(&mut self, closing: bool, on: &mut dyn FnMut(Parsed<'_>)) -> Result<(), ReadWhole> {
        let raw = &self.window.bytes[self.element..self.at];
        let Some(lead) = raw.iter().position(|&b| !is_ws(b)) else {
            // Nothing between the brackets is an empty array (object); an empty element is not.
            return if closing && self.count == 0 {
                Ok(())
            } else {
                Err(ReadWhole)
            };
        };
        let trail = raw
            .iter()
            .rposition(|&b| !is_ws(b))
            .expect("a byte that is not whitespace")
            + 1;
        let (start, end) = (self.element + lead, self.element + trail);
        let line = self.window.line_of(start);
        let offset = self.window.offset + start as u64;
        let text = std::str::from_utf8(&self.window.bytes[start..end]).map_err(|_| ReadWhole)?;
        if self.map {
            let (key, value_at) = map_key(text)?;
            let value = &text[value_at..];
            serde_json::from_str::<&serde_json::value::RawValue>(value).map_err(|_| ReadWhole)?;
            let value_line = line + memchr::memchr_iter(b'\n', &text.as_bytes()[..value_at]).count() as u64;
            let record = map_record(&key, value, value_line).map_err(|_| ReadWhole)?;
            on(placed(Parsed::Record(record), value, offset + value_at as u64));
        } else {
            serde_json::from_str::<&serde_json::value::RawValue>(text).map_err(|_| ReadWhole)?;
            let parsed = array_record(text, line).map_err(|_| ReadWhole)?;
            on(placed(parsed, text, offset));
        }
        self.count += 1;
        Ok(())
    }
}

/// An object's entry `"key": value` (trimmed): the key, and where its value starts.
fn map_key(entry: &str) -> Result<(String, usize), ReadWhole> {
    let mut keys = serde_json::Deserializer::from_str(entry).into_iter::<String>();
    let key = keys.next().and_then(Result::ok).ok_or(ReadWhole)?;
    let after_key = keys.byte_offset();
    let rest = entry[after_key..].trim_start_matches([' ', '\t', '\n', '\r']);
    let rest = rest.strip_prefix(':').ok_or(ReadWhole)?;
    let value = rest.trim_start_matches([' ', '\t', '\n', '\r']);
    Ok((key, entry.len() - value.len()))
}

/// A CSV or TSV file cut into complete rows: csv-core, configured as the csv crate reads, finds
/// where each row ends; the complete rows held are then read by the csv crate.
struct Rows {
    tab: bool,
    window: Window,
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
        if !self.window.push(piece, false) {
            return Ok(());
        }
        self.find_ends(false);
        self.read_complete(on)
    }

    fn finish(&mut self, on: &mut dyn FnMut(Parsed<'_>)) -> Result<(), ReadWhole> {
        self.window.push(&[], true);
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
                &self.window.bytes[self.scanned..]
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
        let rows = &self.window.bytes[..self.complete];
        if rows.is_empty() {
            return Ok(());
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
