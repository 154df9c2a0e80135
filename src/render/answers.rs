//! Two models' answers to one case, side by side: each answer as a reviewer reads it, and what
//! changed between them, word by word (line by line when either answer is structured). The case
//! drill-down of the page, the element and the single file shows this; the answers themselves are
//! read from the verdict files by byte range ([`crate::verdicts::read_output`]), never kept.
//!
//! An answer is hostile text: this module only makes text and marks runs of it as changed; the
//! shells put it in text nodes (never markup, a link or a style).

use crate::json::layout;
use serde::Serialize;
use similar::algorithms::{myers, Capture};
use similar::DiffTag;

/// Answers longer than this (in bytes, both together) are shown apart, not compared: a diff of
/// megabytes would take seconds and show little.
pub const COMPARED_BYTES: usize = 512 * 1024;

/// Above this many words (both answers together) the answers are compared line by line.
pub const COMPARED_WORDS: usize = 40_000;

/// Above this many lines (both answers together) they are shown apart.
pub const COMPARED_LINES: usize = 40_000;

/// A structured answer nested deeper than this is shown as written (laid out, it would grow with
/// the square of its depth).
pub const LAID_OUT_DEPTH: usize = 64;

/// A structured answer whose layout would be longer than this is shown as written: each value on
/// its own line, indented two spaces a level, can make a large answer many times its size.
pub const LAID_OUT_BYTES: usize = 4 * 1024 * 1024;

/// One model's answer, ready to show.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Shown {
    /// The text to show: a string answer as its characters; any other JSON value laid out with
    /// two-space indents, every token as written (a number keeps all its digits).
    pub text: String,
    /// What the answer was: `text` (a JSON string), `json` (any other JSON value, laid out) or
    /// `raw` (JSON shown as written: a string that does not decode, such as a lone surrogate, or
    /// a value nested too deep to lay out).
    pub kind: &'static str,
    /// The record says the answer was cut to its bound (`output_truncated: true`).
    pub truncated: bool,
}

impl Shown {
    /// The answer in `json` (the JSON text [`crate::verdicts::read_output`] gives), as shown.
    pub fn of(json: &str, truncated: bool) -> Shown {
        let trimmed = json.trim();
        let (text, kind) = if trimmed.starts_with('"') {
            match serde_json::from_str::<String>(trimmed) {
                Ok(text) => (text, "text"),
                Err(_) => (trimmed.to_owned(), "raw"),
            }
        } else if !lays_out(trimmed) {
            (trimmed.to_owned(), "raw")
        } else {
            (layout::pretty(trimmed), "json")
        };
        Shown { text, kind, truncated }
    }
}

/// A piece of one answer's text, and whether it differs from the other answer.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Run {
    /// The text, a part of [`Shown::text`]; a side's runs make up its whole text, in order.
    pub text: String,
    /// Not in the other answer at this place.
    pub changed: bool,
}

/// Both answers of one case and what changed between them.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct SideBySide {
    /// The old model's answer (`None`: its record carries none).
    pub old: Option<Shown>,
    /// The new model's answer.
    pub new: Option<Shown>,
    /// How they were compared: `words`, `lines`, or `none` (see [`SideBySide::note`]).
    pub by: &'static str,
    /// The old answer's text in runs (empty when not compared).
    pub old_runs: Vec<Run>,
    /// The new answer's text in runs (empty when not compared).
    pub new_runs: Vec<Run>,
    /// Why the answers were not compared, or compared line by line.
    pub note: Option<String>,
}

/// The answers `old` and `new` (each the JSON text of a record's `output` and its
/// `output_truncated`), side by side.
pub fn side_by_side(old: Option<(&str, bool)>, new: Option<(&str, bool)>) -> SideBySide {
    let old = old.map(|(json, cut)| Shown::of(json, cut));
    let new = new.map(|(json, cut)| Shown::of(json, cut));
    let (by, old_runs, new_runs, note) = match (&old, &new) {
        (Some(a), Some(b)) => compare(a, b),
        (None, None) => (
            "none",
            vec![],
            vec![],
            Some("Neither record carries an answer.".to_owned()),
        ),
        _ => (
            "none",
            vec![],
            vec![],
            Some("Only one record carries an answer.".to_owned()),
        ),
    };
    SideBySide {
        old,
        new,
        by,
        old_runs,
        new_runs,
        note,
    }
}

type Compared = (&'static str, Vec<Run>, Vec<Run>, Option<String>);

/// Not compared, and why.
fn apart(too_many: String) -> Compared {
    (
        "none",
        vec![],
        vec![],
        Some(format!("The answers are {too_many} compared: shown apart.")),
    )
}

fn compare(old: &Shown, new: &Shown) -> Compared {
    let bytes = old.text.len() + new.text.len();
    if bytes > COMPARED_BYTES {
        return apart(format!("{bytes} bytes together, more than the {COMPARED_BYTES}"));
    }
    let words = words(&old.text) + words(&new.text);
    if old.kind == "text" && new.kind == "text" && words <= COMPARED_WORDS {
        let (a, b) = runs(&split_words(&old.text), &split_words(&new.text));
        return ("words", a, b, None);
    }
    let lines = old.text.lines().count() + new.text.lines().count();
    if lines > COMPARED_LINES {
        return apart(format!("{lines} lines together, more than the {COMPARED_LINES}"));
    }
    let old_lines: Vec<&str> = old.text.split_inclusive('\n').collect();
    let new_lines: Vec<&str> = new.text.split_inclusive('\n').collect();
    let (a, b) = runs(&old_lines, &new_lines);
    let note = (old.kind == "text" && new.kind == "text").then(|| {
        format!("The answers are {words} words together, more than the {COMPARED_WORDS} compared word by word: compared line by line.")
    });
    ("lines", a, b, note)
}

/// `text` as the word diff compares it: runs of whitespace and runs of anything else, in order.
fn split_words(text: &str) -> Vec<&str> {
    let mut pieces = Vec::new();
    let mut start = 0;
    let mut space = None;
    for (i, c) in text.char_indices() {
        let is_space = c.is_whitespace();
        if space.is_some_and(|s| s != is_space) {
            pieces.push(&text[start..i]);
            start = i;
        }
        space = Some(is_space);
    }
    if start < text.len() {
        pieces.push(&text[start..]);
    }
    pieces
}

/// Each side's pieces as runs, by Myers' diff (similar's: the one algorithm compiled in, so the
/// page's module stays small), adjacent pieces of the same kind joined.
fn runs(old: &[&str], new: &[&str]) -> (Vec<Run>, Vec<Run>) {
    let mut capture = Capture::new();
    myers::diff(&mut capture, old, 0..old.len(), new, 0..new.len()).expect("capturing cannot fail");
    let (mut a, mut b) = (Vec::new(), Vec::new());
    let push = |runs: &mut Vec<Run>, pieces: &[&str], changed: bool| {
        for text in pieces {
            match runs.last_mut() {
                Some(last) if last.changed == changed => last.text.push_str(text),
                _ => runs.push(Run {
                    text: (*text).to_owned(),
                    changed,
                }),
            }
        }
    };
    for op in capture.into_ops() {
        let (tag, old_range, new_range) = op.as_tag_tuple();
        let same = tag == DiffTag::Equal;
        push(&mut a, &old[old_range], !same);
        push(&mut b, &new[new_range], !same);
    }
    (a, b)
}

/// The number of words of `text` (runs of non-whitespace), as the word diff splits it.
fn words(text: &str) -> usize {
    text.split_whitespace().count()
}

/// Whether `json` is laid out: it is JSON (a caller may pass anything), nested at most
/// [`LAID_OUT_DEPTH`] deep, and its layout stays within [`LAID_OUT_BYTES`] (a bound: each
/// value and key on its own line, indented by its depth).
fn lays_out(json: &str) -> bool {
    if serde_json::from_str::<&serde_json::value::RawValue>(json).is_err() {
        return false;
    }
    let (mut depth, mut deepest, mut breaks) = (0usize, 0usize, 0usize);
    for b in layout::outside_strings(json.as_bytes()) {
        match b {
            b'[' | b'{' => {
                depth += 1;
                deepest = deepest.max(depth);
                breaks += 1;
            }
            b']' | b'}' => {
                depth = depth.saturating_sub(1);
                breaks += 1;
            }
            b',' => breaks += 1,
            _ => {}
        }
    }
    deepest <= LAID_OUT_DEPTH && json.len().saturating_add(breaks.saturating_mul(1 + 2 * deepest)) <= LAID_OUT_BYTES
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn joined(runs: &[Run]) -> String {
        runs.iter().map(|r| r.text.as_str()).collect()
    }

    fn changed(runs: &[Run]) -> Vec<&str> {
        runs.iter().filter(|r| r.changed).map(|r| r.text.as_str()).collect()
    }

    #[test]
    fn two_strings_are_compared_word_by_word() {
        let s = side_by_side(
            Some((r#""The answer is PASS because the tool returned 200.""#, false)),
            Some((r#""The answer is FAIL because the tool returned 500.""#, true)),
        );
        assert_eq!(s.by, "words");
        let (old, new) = (s.old.unwrap(), s.new.unwrap());
        assert_eq!(old.text, "The answer is PASS because the tool returned 200.");
        assert_eq!((old.kind, old.truncated, new.truncated), ("text", false, true));
        assert_eq!(joined(&s.old_runs), old.text);
        assert_eq!(joined(&s.new_runs), new.text);
        assert_eq!(changed(&s.old_runs), ["PASS", "200."]);
        assert_eq!(changed(&s.new_runs), ["FAIL", "500."]);
        assert_eq!(s.note, None);
    }

    #[test]
    fn a_structured_answer_is_laid_out_with_its_tokens_as_written_and_compared_by_line() {
        let old = r#"{"role":"assistant","content":null,"tool_calls":[{"name":"search","id":123456789012345678901234567890}]}"#;
        let new = r#"{"role":"assistant","content":"PASS"}"#;
        let s = side_by_side(Some((old, false)), Some((new, false)));
        assert_eq!(s.by, "lines");
        let shown = s.old.as_ref().unwrap();
        assert_eq!(shown.kind, "json");
        assert!(
            shown.text.contains("\"id\": 123456789012345678901234567890"),
            "{}",
            shown.text
        );
        assert!(
            shown.text.starts_with("{\n  \"role\": \"assistant\",\n"),
            "{}",
            shown.text
        );
        assert_eq!(joined(&s.old_runs), shown.text);
        assert_eq!(joined(&s.new_runs), s.new.as_ref().unwrap().text);
        assert!(changed(&s.new_runs).concat().contains("\"content\": \"PASS\""));
        assert!(!changed(&s.old_runs).concat().contains("\"role\""));
    }

    #[test]
    fn hostile_answers_stay_the_text_they_are() {
        for (json, text, kind) in [
            (
                r#""<script>alert(1)</script><img src=x onerror=alert(2)>""#,
                "<script>alert(1)</script><img src=x onerror=alert(2)>",
                "text",
            ),
            (r#""javascript:alert(1)""#, "javascript:alert(1)", "text"),
            (
                "\"\u{202e}evil\u{202c} \\u0000 NUL\"",
                "\u{202e}evil\u{202c} \u{0} NUL",
                "text",
            ),
            // A lone surrogate is valid JSON but no text: shown as written.
            (r#""\udc80 broken""#, r#""\udc80 broken""#, "raw"),
        ] {
            let s = side_by_side(Some((json, false)), Some((r#""other""#, false)));
            let shown = s.old.unwrap();
            assert_eq!((shown.text.as_str(), shown.kind), (text, kind), "{json}");
            assert_eq!(joined(&s.old_runs), text);
        }
    }

    #[test]
    fn an_answer_whose_layout_would_be_huge_or_that_is_not_json_is_shown_as_written() {
        // 200,000 values 60 levels deep: laid out, about 24 MB.
        let wide = format!("{}{}{}", "[".repeat(60), vec!["0"; 200_000].join(","), "]".repeat(60));
        let shown = Shown::of(&wide, false);
        assert_eq!((shown.kind, shown.text.len()), ("raw", wide.len()));
        // The same values at the top level lay out (under 2 MB).
        let flat = format!("[{}]", vec!["0"; 200_000].join(","));
        assert_eq!(Shown::of(&flat, false).kind, "json");
        for not_json in ["]", "[1,", "{\"a\" 1}", "]]]]"] {
            let shown = Shown::of(not_json, false);
            assert_eq!((shown.kind, shown.text.as_str()), ("raw", not_json));
        }
    }

    #[test]
    fn a_deeply_nested_answer_is_shown_as_written() {
        let deep = format!("{}1{}", "[".repeat(10_000), "]".repeat(10_000));
        let s = side_by_side(Some((&deep, false)), Some(("[1]", false)));
        let shown = s.old.unwrap();
        assert_eq!((shown.kind, shown.text.len()), ("raw", deep.len()));
        assert_eq!(s.by, "lines");
        let shallow = format!("{}1{}", "[".repeat(LAID_OUT_DEPTH), "]".repeat(LAID_OUT_DEPTH));
        assert_eq!(Shown::of(&shallow, false).kind, "json");
    }

    #[test]
    fn long_answers_are_compared_by_line_then_shown_apart() {
        let many = format!("\"{}\"", "word ".repeat(COMPARED_WORDS / 2 + 1));
        let s = side_by_side(Some((&many, false)), Some((&many, false)));
        assert_eq!(s.by, "lines");
        assert!(s.note.unwrap().contains("compared line by line"));
        let huge = format!("\"{}\"", "x".repeat(COMPARED_BYTES));
        let s = side_by_side(Some((&huge, false)), Some((r#""x""#, false)));
        assert_eq!((s.by, s.old_runs.len(), s.new_runs.len()), ("none", 0, 0));
        assert_eq!(s.old.unwrap().text.len(), COMPARED_BYTES);
        assert!(s.note.unwrap().contains("shown apart"));
    }

    #[test]
    fn one_or_no_answer() {
        let s = side_by_side(None, Some((r#""PASS""#, false)));
        assert_eq!((s.by, s.old.is_none()), ("none", true));
        assert_eq!(s.new.unwrap().text, "PASS");
        assert!(s.note.unwrap().contains("Only one"));
        assert!(side_by_side(None, None).note.unwrap().contains("Neither"));
    }

    proptest! {
        #[test]
        fn each_sides_runs_are_its_whole_text(a in "[a-c \n]{0,60}", b in "[a-c \n]{0,60}") {
            let (ja, jb) = (serde_json::to_string(&a).unwrap(), serde_json::to_string(&b).unwrap());
            let s = side_by_side(Some((&ja, false)), Some((&jb, false)));
            prop_assert_eq!(joined(&s.old_runs), a.clone());
            prop_assert_eq!(joined(&s.new_runs), b.clone());
            // The unchanged runs of both sides are the same text.
            let same = |runs: &[Run]| runs.iter().filter(|r| !r.changed).map(|r| r.text.clone()).collect::<String>();
            prop_assert_eq!(same(&s.old_runs), same(&s.new_runs));
            if a == b {
                prop_assert!(s.old_runs.iter().all(|r| !r.changed));
            }
        }
    }
}
