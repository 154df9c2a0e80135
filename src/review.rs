//! Review marks (`deploy-gate/review/v1`): what a reviewer concluded about single cases, kept
//! apart from the decision. A review file is JSONL, one mark a line:
//!
//! ```json
//! {"pipeline_id": "p-17", "mark": "accepted", "note": "a regression we accept", "time": "2026-12-07T10:00:00Z"}
//! {"pipeline_id": 123456789012345678901234567890, "mark": "label_wrong"}
//! ```
//!
//! `pipeline_id` is written as the report writes it (a string, or an integer of any size, every
//! digit kept); `mark` is `accepted` (a regression the reviewer accepts), `label_wrong` (the
//! expected verdict is wrong) or `needs_fix`; `note` (text) and `time` (RFC 3339) are optional.
//! A later line for the same case replaces an earlier one; blank lines are skipped; anything else
//! is an error naming the line. Marks never change the decision or its numbers.

use crate::attest::strict;
use crate::audit::PipelineId;
use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;
use sha2::{Digest, Sha256};
use std::collections::HashMap;

/// The format's name (docs/formats.md defines it, with a JSON Schema).
pub const REVIEW_SCHEMA: &str = "deploy-gate/review/v1";

/// The most bytes a review file may hold (64 MiB: about a million marks).
pub const MAX_FILE_BYTES: u64 = 64 << 20;

/// The most bytes a note may hold.
pub const MAX_NOTE_BYTES: usize = 16 * 1024;

/// What a reviewer concluded about a case.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Mark {
    /// A regression the reviewer accepts.
    Accepted,
    /// The expected verdict is wrong.
    LabelWrong,
    /// The new model needs a fix for this case.
    NeedsFix,
}

impl Mark {
    /// Every mark, in the order they are counted and shown.
    pub const ALL: [Mark; 3] = [Mark::Accepted, Mark::LabelWrong, Mark::NeedsFix];

    /// The mark as the file writes it.
    pub fn as_str(self) -> &'static str {
        match self {
            Mark::Accepted => "accepted",
            Mark::LabelWrong => "label_wrong",
            Mark::NeedsFix => "needs_fix",
        }
    }

    /// The mark in words, as the renderings show it: `accepted`, `label wrong`, `needs fix`.
    pub fn label(self) -> &'static str {
        match self {
            Mark::Accepted => "accepted",
            Mark::LabelWrong => "label wrong",
            Mark::NeedsFix => "needs fix",
        }
    }

    /// The mark a file names (`accepted`, `label_wrong`, `needs_fix`).
    pub fn parse(text: &str) -> Option<Mark> {
        Mark::ALL.into_iter().find(|m| m.as_str() == text)
    }
}

/// One case's mark.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CaseMark {
    /// The case.
    pub pipeline_id: PipelineId,
    /// The mark.
    pub mark: Mark,
    /// The reviewer's note.
    pub note: Option<String>,
    /// When it was made (RFC 3339, as written).
    pub time: Option<String>,
    /// The line it was read from (1-based).
    pub line: u64,
}

/// A review file read: each case's last mark, in the order the cases were first marked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Review {
    marks: Vec<CaseMark>,
    /// Each marked case's place in `marks`, by its id (its type and text).
    index: HashMap<(bool, std::sync::Arc<str>), usize>,
    /// The file's sha256 (hex) and size: what a signed decision pins.
    pub sha256: String,
    /// The file's size in bytes.
    pub bytes: u64,
}

/// A review file that cannot be read: the line and why.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{file}:{line}: {message}")]
pub struct ReviewError {
    /// The file's name.
    pub file: String,
    /// The line (1-based; 0: the file as a whole).
    pub line: u64,
    /// Why.
    pub message: String,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Line<'a> {
    #[serde(borrow)]
    pipeline_id: &'a RawValue,
    mark: String,
    #[serde(default)]
    note: Option<String>,
    #[serde(default)]
    time: Option<String>,
}

impl Review {
    /// Reads a review file's bytes (`file` names it in errors).
    pub fn parse(file: &str, bytes: &[u8]) -> Result<Review, ReviewError> {
        let fail = |line: u64, message: String| ReviewError {
            file: file.to_owned(),
            line,
            message,
        };
        let text = std::str::from_utf8(bytes).map_err(|e| {
            let line = bytes[..e.valid_up_to()].iter().filter(|&&b| b == b'\n').count() as u64 + 1;
            fail(line, "not UTF-8".into())
        })?;
        let text = text.strip_prefix('\u{feff}').unwrap_or(text);
        let mut marks: Vec<CaseMark> = Vec::new();
        let mut at: HashMap<(bool, std::sync::Arc<str>), usize> = HashMap::new();
        for (n, raw) in text.split('\n').enumerate() {
            let line = n as u64 + 1;
            let raw = raw.strip_suffix('\r').unwrap_or(raw);
            if raw.trim().is_empty() {
                continue;
            }
            // A key twice is refused, as in every file a signature pins.
            let value = strict::from_slice(raw.as_bytes())
                .map_err(|e| fail(line, format!("not JSON: {}", without_position(e.to_string()))))?;
            if !value.is_object() {
                return Err(fail(line, "not a JSON object".into()));
            }
            let parsed: Line<'_> =
                serde_json::from_str(raw).map_err(|e| fail(line, without_position(e.to_string())))?;
            let pipeline_id = id_of(parsed.pipeline_id.get()).map_err(|m| fail(line, m))?;
            let Some(mark) = Mark::parse(&parsed.mark) else {
                return Err(fail(
                    line,
                    format!(
                        "`mark` must be accepted, label_wrong or needs_fix, not {:?}",
                        parsed.mark
                    ),
                ));
            };
            if let Some(note) = &parsed.note {
                if note.len() > MAX_NOTE_BYTES {
                    return Err(fail(
                        line,
                        format!(
                            "`note` is {} bytes, more than the {MAX_NOTE_BYTES} a note may hold",
                            note.len()
                        ),
                    ));
                }
            }
            if let Some(time) = &parsed.time {
                crate::attest::time::parse_rfc3339(time)
                    .map_err(|e| fail(line, format!("`time` is not an RFC 3339 time ({e}): {time:?}")))?;
            }
            let mark = CaseMark {
                pipeline_id,
                mark,
                note: parsed.note,
                time: parsed.time,
                line,
            };
            let key = (mark.pipeline_id.numeric, mark.pipeline_id.text.clone());
            match at.get(&key) {
                Some(&i) => marks[i] = mark,
                None => {
                    at.insert(key, marks.len());
                    marks.push(mark);
                }
            }
        }
        Ok(Review {
            marks,
            index: at,
            sha256: hex::encode(Sha256::digest(bytes)),
            bytes: bytes.len() as u64,
        })
    }

    /// Each marked case's last mark, in the order the cases were first marked.
    pub fn marks(&self) -> &[CaseMark] {
        &self.marks
    }

    /// The mark of case `id`, if it has one.
    pub fn mark_of(&self, id: &PipelineId) -> Option<&CaseMark> {
        self.index.get(&(id.numeric, id.text.clone())).map(|&i| &self.marks[i])
    }

    /// How many cases carry each mark, in [`Mark::ALL`]'s order.
    pub fn counts(&self) -> [(Mark, usize); 3] {
        Mark::ALL.map(|mark| (mark, self.marks.iter().filter(|m| m.mark == mark).count()))
    }
}

/// How many cases carry each mark.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MarkCounts {
    /// `accepted`.
    pub accepted: u64,
    /// `label_wrong`.
    pub label_wrong: u64,
    /// `needs_fix`.
    pub needs_fix: u64,
}

/// The report's regressed cases and how many of them carry a mark.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RegressedMarked {
    /// The report's regressed cases.
    pub cases: u64,
    /// Those that carry a mark.
    pub marked: u64,
}

/// What a signed decision pins of the review it was signed with (the statement's
/// `predicate["https://deploy-gate.dev/review/v1"]`): the file by its sha256 and size, its counts
/// per mark, and how many of the report's regressed cases it marks. The marks themselves stay
/// in the file, which `verify --review` checks against this.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ReviewPin {
    /// The review file's sha256, hex.
    pub sha256: String,
    /// Its size in bytes.
    pub bytes: u64,
    /// Its cases per mark.
    pub marks: MarkCounts,
    /// The report's regressed cases, and how many the review marks.
    pub regressed: RegressedMarked,
}

impl ReviewPin {
    /// The pin of `review` for the report whose JSON text is `report` (its `cases`, read with
    /// every id as written).
    pub fn of(review: &Review, report: &str) -> Result<ReviewPin, String> {
        Ok(ReviewPin::of_regressed(review, &regressed_ids(report)?))
    }

    /// The pin of `review` for a report whose regressed cases are `regressed`.
    fn of_regressed(review: &Review, regressed: &[PipelineId]) -> ReviewPin {
        let marked = regressed.iter().filter(|id| review.mark_of(id).is_some()).count() as u64;
        let [accepted, label_wrong, needs_fix] = review.counts().map(|(_, n)| n as u64);
        ReviewPin {
            sha256: review.sha256.clone(),
            bytes: review.bytes,
            marks: MarkCounts {
                accepted,
                label_wrong,
                needs_fix,
            },
            regressed: RegressedMarked {
                cases: regressed.len() as u64,
                marked,
            },
        }
    }

    /// Whether `bytes` are the review file this pins.
    pub fn pins(&self, bytes: &[u8]) -> bool {
        bytes.len() as u64 == self.bytes && hex::encode(Sha256::digest(bytes)) == self.sha256
    }

    /// Checks a pin read from a signed statement: a sha256 of 64 lowercase hex digits, and no
    /// more regressed cases marked than there are.
    pub fn check(&self) -> Result<(), String> {
        if self.sha256.len() != 64
            || !self
                .sha256
                .bytes()
                .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
        {
            return Err(format!(
                "the review's sha256 is not 64 lowercase hex digits: {:?}",
                self.sha256
            ));
        }
        if self.regressed.marked > self.regressed.cases {
            return Err(format!(
                "the review marks {} regressed cases of {}",
                self.regressed.marked, self.regressed.cases
            ));
        }
        Ok(())
    }
}

/// The report's regressed cases without a mark in `review`, in the report's order.
pub fn unmarked_regressed(review: Option<&Review>, report: &str) -> Result<Vec<PipelineId>, String> {
    Ok(regressed_ids(report)?
        .into_iter()
        .filter(|id| review.is_none_or(|r| r.mark_of(id).is_none()))
        .collect())
}

/// When the report's policy (`policy`, its JSON) requires a review (`review: {"require":
/// "regressed"}`): `Err` naming the regressed cases `review` does not mark (the first 20), which
/// signing refuses. `Ok` when it requires none, or every regressed case is marked.
pub fn check_required(report: &str, policy: &serde_json::Value, review: Option<&Review>) -> Result<(), String> {
    if crate::policy::ReviewPolicy::of_report_policy(policy)?.is_none() {
        return Ok(());
    }
    let regressed = regressed_ids(report)?;
    let unmarked: Vec<&PipelineId> = regressed
        .iter()
        .filter(|id| review.is_none_or(|r| r.mark_of(id).is_none()))
        .collect();
    if unmarked.is_empty() {
        return Ok(());
    }
    const NAMED: usize = 20;
    let named: Vec<String> = unmarked.iter().take(NAMED).map(|id| id.to_json()).collect();
    let more = unmarked.len().saturating_sub(NAMED);
    Err(format!(
        "the policy requires a review mark on every regressed case (review: {{\"require\": \"regressed\"}}): {} of {} {}: {}{}",
        unmarked.len(),
        regressed.len(),
        if review.is_some() { "unmarked" } else { "unmarked, no review given (--review FILE)" },
        named.join(", "),
        if more > 0 { format!(" and {more} more") } else { String::new() }
    ))
}

/// The ids of a report's regressed cases (its JSON text), as written.
fn regressed_ids(report: &str) -> Result<Vec<PipelineId>, String> {
    Ok(report_cases(report)?
        .into_iter()
        .filter(|(_, status)| status.as_deref() == Some("regressed"))
        .map(|(id, _)| id)
        .collect())
}

/// A report's cases (its JSON text): each id as written, and its status.
fn report_cases(report: &str) -> Result<Vec<(PipelineId, Option<String>)>, String> {
    #[derive(Deserialize)]
    struct Report<'a> {
        #[serde(borrow, default)]
        cases: Vec<Case<'a>>,
    }
    #[derive(Deserialize)]
    struct Case<'a> {
        #[serde(borrow)]
        pipeline_id: &'a RawValue,
        #[serde(default)]
        status: Option<String>,
    }
    let report: Report<'_> = serde_json::from_str(report).map_err(|e| format!("the report's cases: {e}"))?;
    report
        .cases
        .into_iter()
        .map(|c| {
            id_of(c.pipeline_id.get())
                .map(|id| (id, c.status))
                .map_err(|e| format!("the report's cases: {e}"))
        })
        .collect()
}

/// A marked case of a report, as the Markdown summary and the HTML report list it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MarkedCase {
    /// The case's place in the report's `cases`.
    pub index: usize,
    /// Its status in the report (`regressed`, `improved`, …).
    pub status: String,
    /// Its mark, with the note.
    pub mark: CaseMark,
}

/// A review read against a report: what the renderings list.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Listing {
    /// What a signature would pin of it (its sha256, counts, regressed cases marked).
    pub pin: ReviewPin,
    /// The marked cases that are in the report: regressed first, then the others, each in the
    /// report's order.
    pub cases: Vec<MarkedCase>,
    /// Marks of cases the report does not hold (a review made for other files).
    pub elsewhere: Vec<CaseMark>,
}

impl Listing {
    /// `review` against the report whose JSON text is `report`.
    pub fn of(review: &Review, report: &str) -> Result<Listing, String> {
        // The report read once: its regressed cases for the pin, every case for the listing.
        let cases = report_cases(report)?;
        let regressed: Vec<PipelineId> = cases
            .iter()
            .filter(|(_, status)| status.as_deref() == Some("regressed"))
            .map(|(id, _)| id.clone())
            .collect();
        let pin = ReviewPin::of_regressed(review, &regressed);
        let mut seen = vec![false; review.marks.len()];
        let mut listed = Vec::new();
        for (index, (id, status)) in cases.into_iter().enumerate() {
            let Some(&at) = review.index.get(&(id.numeric, id.text.clone())) else {
                continue;
            };
            seen[at] = true;
            listed.push(MarkedCase {
                index,
                status: status.unwrap_or_default(),
                mark: review.marks[at].clone(),
            });
        }
        listed.sort_by_key(|c| c.status != "regressed");
        let elsewhere = review
            .marks
            .iter()
            .zip(seen)
            .filter(|(_, seen)| !seen)
            .map(|(m, _)| m.clone())
            .collect();
        Ok(Listing {
            pin,
            cases: listed,
            elsewhere,
        })
    }

    /// The counts in one sentence (the Markdown summary and the HTML report say it alike).
    pub fn sentence(&self) -> String {
        let m = &self.pin.marks;
        let mut s = format!(
            "{} case(s) marked: {} accepted, {} label wrong, {} needs fix; {} of {} regressed case(s) marked.",
            self.cases.len() + self.elsewhere.len(),
            m.accepted,
            m.label_wrong,
            m.needs_fix,
            self.pin.regressed.marked,
            self.pin.regressed.cases
        );
        if !self.elsewhere.is_empty() {
            s.push_str(&format!(
                " {} mark(s) name cases this report does not hold.",
                self.elsewhere.len()
            ));
        }
        s.push_str(&format!(
            " Review file sha256:{} ({} bytes). Marks never change the decision.",
            self.pin.sha256, self.pin.bytes
        ));
        s
    }
}

/// Marks as a review file: one line each ([`line_of`]), each ending in a newline.
pub fn file_of(marks: &[CaseMark]) -> String {
    let mut out = String::new();
    for m in marks {
        out.push_str(&line_of(m));
        out.push('\n');
    }
    out
}

/// A case's mark and note as one review file gives them (what `diff` compares).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct MarkSeen {
    /// The mark.
    pub mark: Mark,
    /// The note, when there is one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}

/// A case whose mark or note differs between two review files: absent on a side that does not
/// mark it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct MarkChange {
    /// The case, as the report writes it.
    pub pipeline_id: PipelineId,
    /// Its mark in the earlier review.
    pub before: Option<MarkSeen>,
    /// Its mark in the later one.
    pub after: Option<MarkSeen>,
}

/// The cases whose mark or note differs between `before` and `after` (a case marked on one side
/// only included), in `before`'s order, then `after`'s for the cases only it marks. The time of
/// a mark is not compared.
pub fn mark_changes(before: &Review, after: &Review) -> Vec<MarkChange> {
    let seen = |m: &CaseMark| MarkSeen {
        mark: m.mark,
        note: m.note.clone(),
    };
    let mut changes = Vec::new();
    for m in before.marks() {
        let other = after.mark_of(&m.pipeline_id).map(seen);
        if other.as_ref() != Some(&seen(m)) {
            changes.push(MarkChange {
                pipeline_id: m.pipeline_id.clone(),
                before: Some(seen(m)),
                after: other,
            });
        }
    }
    for m in after.marks() {
        if before.mark_of(&m.pipeline_id).is_none() {
            changes.push(MarkChange {
                pipeline_id: m.pipeline_id.clone(),
                before: None,
                after: Some(seen(m)),
            });
        }
    }
    changes
}

/// A mark the page made: the case's place in the report's `cases`, the mark, the note, the time.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PageMark {
    /// The case's place in the report's `cases`.
    pub case: usize,
    /// The mark, as the file writes it.
    pub mark: String,
    /// The reviewer's note.
    #[serde(default)]
    pub note: Option<String>,
    /// When it was made (RFC 3339).
    #[serde(default)]
    pub time: Option<String>,
}

/// The review file of marks made on a report's cases (its JSON text): each id written as the
/// report writes it, read back through [`Review::parse`] so that the page never writes a file
/// the CLI would refuse.
pub fn file_for(report: &str, marks: &[PageMark]) -> Result<String, String> {
    let cases = report_cases(report)?;
    let mut made = Vec::with_capacity(marks.len());
    for m in marks {
        let (id, _) = cases
            .get(m.case)
            .ok_or_else(|| format!("the report has no case {}", m.case))?;
        let mark = Mark::parse(&m.mark)
            .ok_or_else(|| format!("`mark` must be accepted, label_wrong or needs_fix, not {:?}", m.mark))?;
        made.push(CaseMark {
            pipeline_id: id.clone(),
            mark,
            note: m.note.clone().filter(|n| !n.is_empty()),
            time: m.time.clone(),
            line: 0,
        });
    }
    let text = file_of(&made);
    Review::parse("review.jsonl", text.as_bytes()).map_err(|e| e.to_string())?;
    Ok(text)
}

/// A mark as a review file's line (no newline): what the page exports.
pub fn line_of(mark: &CaseMark) -> String {
    let mut out = format!(
        "{{\"pipeline_id\": {}, \"mark\": \"{}\"",
        mark.pipeline_id.to_json(),
        mark.mark.as_str()
    );
    if let Some(note) = &mark.note {
        out.push_str(&format!(
            ", \"note\": {}",
            serde_json::to_string(note).expect("a string serializes")
        ));
    }
    if let Some(time) = &mark.time {
        out.push_str(&format!(
            ", \"time\": {}",
            serde_json::to_string(time).expect("a string serializes")
        ));
    }
    out.push('}');
    out
}

/// A case's id as the report writes it: a non-empty string, or an integer (every digit kept).
fn id_of(json: &str) -> Result<PipelineId, String> {
    let json = json.trim();
    if json.starts_with('"') {
        let text: String = serde_json::from_str(json).map_err(|e| format!("`pipeline_id`: {e}"))?;
        if text.is_empty() {
            return Err("`pipeline_id` is empty".into());
        }
        return Ok(PipelineId {
            text: text.into(),
            numeric: false,
        });
    }
    if crate::json::is_integer_id_text(json) {
        return Ok(PipelineId {
            text: json.into(),
            numeric: true,
        });
    }
    let shown: String = json.chars().take(80).collect();
    let more = if shown.len() < json.len() { "…" } else { "" };
    Err(format!(
        "`pipeline_id` must be a string or an integer, as the report writes it, not {shown}{more}"
    ))
}

/// A JSON reader's message about one line, without its position (the line is named already).
fn without_position(message: String) -> String {
    match message.rfind(" at line ") {
        Some(at) => message[..at].to_owned(),
        None => message,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn id(text: &str, numeric: bool) -> PipelineId {
        PipelineId {
            text: text.into(),
            numeric,
        }
    }

    #[test]
    fn marks_are_read_a_later_line_replacing_an_earlier_one() {
        let file = "\u{feff}{\"pipeline_id\": \"p-1\", \"mark\": \"accepted\", \"note\": \"fine <b>\", \"time\": \"2026-12-07T10:00:00Z\"}\r\n\n\
            {\"pipeline_id\": 123456789012345678901234567890, \"mark\": \"label_wrong\"}\n\
            {\"pipeline_id\": \"123456789012345678901234567890\", \"mark\": \"needs_fix\"}\n\
            {\"pipeline_id\": \"p-1\", \"mark\": \"needs_fix\"}\n";
        let r = Review::parse("review.jsonl", file.as_bytes()).unwrap();
        assert_eq!(r.marks().len(), 3, "{r:?}");
        let p1 = r.mark_of(&id("p-1", false)).unwrap();
        assert_eq!((p1.mark, p1.note.as_deref(), p1.line), (Mark::NeedsFix, None, 5));
        // An integer id and the string of its digits are two cases, as in the report.
        assert_eq!(
            r.mark_of(&id("123456789012345678901234567890", true)).unwrap().mark,
            Mark::LabelWrong
        );
        assert_eq!(
            r.mark_of(&id("123456789012345678901234567890", false)).unwrap().mark,
            Mark::NeedsFix
        );
        assert_eq!(
            r.counts(),
            [(Mark::Accepted, 0), (Mark::LabelWrong, 1), (Mark::NeedsFix, 2)]
        );
        assert_eq!(r.sha256, hex::encode(Sha256::digest(file.as_bytes())));
        assert_eq!(r.bytes, file.len() as u64);
        // A line of the export reads back as the same mark.
        for m in r.marks() {
            let again = Review::parse("x", line_of(m).as_bytes()).unwrap();
            assert_eq!(again.marks()[0].pipeline_id, m.pipeline_id);
            assert_eq!((again.marks()[0].mark, &again.marks()[0].note), (m.mark, &m.note));
        }
    }

    #[test]
    fn a_bad_line_is_an_error_naming_it() {
        for (line, why) in [
            (
                "{\"pipeline_id\": \"p\", \"mark\": \"ok\"}",
                "`mark` must be accepted, label_wrong or needs_fix",
            ),
            ("{\"pipeline_id\": \"p\"}", "missing field `mark`"),
            (
                "{\"pipeline_id\": 1.5, \"mark\": \"accepted\"}",
                "must be a string or an integer",
            ),
            ("{\"pipeline_id\": \"\", \"mark\": \"accepted\"}", "is empty"),
            (
                "{\"pipeline_id\": \"p\", \"mark\": \"accepted\", \"mark\": \"needs_fix\"}",
                "the key `mark` appears more than once",
            ),
            (
                "{\"pipeline_id\": \"p\", \"mark\": \"accepted\", \"by\": \"me\"}",
                "unknown field `by`",
            ),
            (
                "{\"pipeline_id\": \"p\", \"mark\": \"accepted\", \"time\": \"yesterday\"}",
                "not an RFC 3339 time",
            ),
            ("[1]", "not a JSON object"),
            ("not json", "not JSON"),
        ] {
            let file = format!("{{\"pipeline_id\": \"a\", \"mark\": \"accepted\"}}\n{line}\n");
            let e = Review::parse("r.jsonl", file.as_bytes()).unwrap_err();
            assert_eq!((e.file.as_str(), e.line), ("r.jsonl", 2), "{line}: {e}");
            assert!(e.message.contains(why), "{line}: {e}");
            assert!(e.to_string().starts_with("r.jsonl:2: "), "{e}");
            assert!(!e.message.contains(" at line "), "the line is named once: {e}");
        }
        let long = format!(
            "{{\"pipeline_id\": \"p\", \"mark\": \"accepted\", \"note\": \"{}\"}}",
            "x".repeat(MAX_NOTE_BYTES + 1)
        );
        assert!(Review::parse("r", long.as_bytes())
            .unwrap_err()
            .message
            .contains("more than"));
        let e = Review::parse("r", b"{\"pipeline_id\": \"p\", \"mark\": \"accepted\"}\n\xff\n").unwrap_err();
        assert_eq!((e.line, e.message.as_str()), (2, "not UTF-8"));
        // An empty file is an empty review.
        assert!(Review::parse("r", b"").unwrap().marks().is_empty());
    }

    /// A report's cases, ids as written (a 30-digit integer among them).
    const REPORT: &str = r#"{"schema":"deploy-gate/report/v1","cases":[
        {"pipeline_id":"p-1","status":"regressed"},
        {"pipeline_id":123456789012345678901234567890,"status":"regressed"},
        {"pipeline_id":"p-3","status":"improved"},
        {"pipeline_id":7,"status":"regressed"},
        {"pipeline_id":"p-5","status":"same_pass"}]}"#;

    #[test]
    fn a_pin_counts_the_marks_and_the_regressed_cases_marked() {
        let file = concat!(
            "{\"pipeline_id\": 123456789012345678901234567890, \"mark\": \"accepted\"}\n",
            "{\"pipeline_id\": \"p-3\", \"mark\": \"label_wrong\"}\n",
            "{\"pipeline_id\": \"7\", \"mark\": \"needs_fix\"}\n",
        );
        let review = Review::parse("r", file.as_bytes()).unwrap();
        let pin = ReviewPin::of(&review, REPORT).unwrap();
        assert_eq!(
            pin.marks,
            MarkCounts {
                accepted: 1,
                label_wrong: 1,
                needs_fix: 1
            }
        );
        // The string "7" is not the integer 7: two of three regressed cases are unmarked.
        assert_eq!(pin.regressed, RegressedMarked { cases: 3, marked: 1 });
        assert!(pin.pins(file.as_bytes()) && !pin.pins(b"{}"));
        assert_eq!(pin.check(), Ok(()));
        let unmarked: Vec<String> = unmarked_regressed(Some(&review), REPORT)
            .unwrap()
            .iter()
            .map(PipelineId::to_json)
            .collect();
        assert_eq!(unmarked, ["\"p-1\"", "7"]);
        assert_eq!(unmarked_regressed(None, REPORT).unwrap().len(), 3);
        // As signed and read back.
        let back: ReviewPin = serde_json::from_value(serde_json::to_value(&pin).unwrap()).unwrap();
        assert_eq!(back, pin);
        for bad in [
            ReviewPin {
                sha256: "AB".repeat(32),
                ..pin.clone()
            },
            ReviewPin {
                regressed: RegressedMarked { cases: 1, marked: 2 },
                ..pin.clone()
            },
        ] {
            assert!(bad.check().is_err(), "{bad:?}");
        }
        assert!(ReviewPin::of(&review, "[1]").is_err());
    }

    #[test]
    fn a_listing_puts_the_regressed_first_and_names_marks_of_other_cases() {
        let file = concat!(
            "{\"pipeline_id\": \"p-3\", \"mark\": \"label_wrong\", \"note\": \"expected FAIL is wrong\"}\n",
            "{\"pipeline_id\": 123456789012345678901234567890, \"mark\": \"accepted\"}\n",
            "{\"pipeline_id\": \"gone\", \"mark\": \"needs_fix\"}\n",
        );
        let review = Review::parse("r", file.as_bytes()).unwrap();
        let listing = Listing::of(&review, REPORT).unwrap();
        let listed: Vec<(usize, &str, &str)> = listing
            .cases
            .iter()
            .map(|c| (c.index, c.status.as_str(), c.mark.mark.as_str()))
            .collect();
        assert_eq!(listed, [(1, "regressed", "accepted"), (2, "improved", "label_wrong")]);
        assert_eq!(listing.elsewhere.len(), 1);
        assert_eq!(listing.elsewhere[0].pipeline_id.to_json(), "\"gone\"");
        let sentence = listing.sentence();
        assert!(sentence.starts_with("3 case(s) marked: 1 accepted, 1 label wrong, 1 needs fix; 1 of 3 regressed case(s) marked. 1 mark(s) name cases this report does not hold."), "{sentence}");
        assert!(sentence.contains(&review.sha256));
    }

    #[test]
    fn the_page_s_marks_become_a_file_the_cli_reads_with_every_digit() {
        let marks: Vec<PageMark> = serde_json::from_str(
            r#"[{"case": 1, "mark": "accepted", "note": "ok \u202e <b>", "time": "2026-12-07T10:00:00Z"},
                {"case": 3, "mark": "needs_fix", "note": ""}]"#,
        )
        .unwrap();
        let text = file_for(REPORT, &marks).unwrap();
        assert_eq!(
            text,
            concat!(
                "{\"pipeline_id\": 123456789012345678901234567890, \"mark\": \"accepted\", \"note\": \"ok \u{202e} <b>\", \"time\": \"2026-12-07T10:00:00Z\"}\n",
                "{\"pipeline_id\": 7, \"mark\": \"needs_fix\"}\n",
            )
        );
        let review = Review::parse("r", text.as_bytes()).unwrap();
        assert_eq!(ReviewPin::of(&review, REPORT).unwrap().regressed.marked, 2);
        for (bad, says) in [
            (r#"[{"case": 9, "mark": "accepted"}]"#, "no case 9"),
            (r#"[{"case": 0, "mark": "fine"}]"#, "must be accepted"),
            (r#"[{"case": 0, "mark": "accepted", "time": "yesterday"}]"#, "RFC 3339"),
        ] {
            let marks: Vec<PageMark> = serde_json::from_str(bad).unwrap();
            let e = file_for(REPORT, &marks).unwrap_err();
            assert!(e.contains(says), "{bad}: {e}");
        }
        assert!(file_for(REPORT, &[]).unwrap().is_empty());
    }
}
