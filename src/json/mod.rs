//! Reading JSON lines: one dispatcher ([`read_object_text`]) in front of two parsers that call
//! back the same way, entry by entry, through a [`ValueSink`]:
//!
//! - [`skim`], the fast path, for lines in the shape a writer produces (the hot loop of pass 1);
//! - the serde path (serde_json), for every other line, and the only one for whole files
//!   (`visit_object`, `visit_array`).
//!
//! Both read values as [`Scalar`] or [`PyText`]; neither ever fails on a value's type.

pub mod layout;
pub mod number;
pub mod skim;
mod value;
mod visit;

pub use value::{is_integer_id_text, nested_field, NotObject, PyText, Scalar, ValueError, ValueSink};
pub(crate) use visit::{visit_array, visit_object};

/// Parses one line as a JSON object, calling back for each top-level entry.
pub fn parse_object_line<'de>(
    line: &'de [u8],
    on_entry: impl FnMut(&str, &mut dyn ValueSink<'de>) -> Result<(), ValueError>,
) -> Result<(), NotObject> {
    let text = simdutf8::basic::from_utf8(line).map_err(|_| NotObject::InvalidUtf8)?;
    visit::parse_object_text(text, on_entry)
}

/// Reads one line as a JSON object into a state built by `on_entry` for each top-level entry:
/// the same result as [`parse_object_line`], through the fast path of [`skim`] when the
/// line allows it (`on_entry` then starts again from a fresh state if serde must read it).
pub fn read_object_line<'de, S: Default>(
    line: &'de [u8],
    on_entry: impl FnMut(&mut S, &str, &mut dyn ValueSink<'de>) -> Result<(), ValueError>,
) -> Result<S, NotObject> {
    let text = simdutf8::basic::from_utf8(line).map_err(|_| NotObject::InvalidUtf8)?;
    read_object_text(text, on_entry)
}

/// [`read_object_line`] for a line already known to be text.
pub fn read_object_text<'de, S: Default>(
    text: &'de str,
    mut on_entry: impl FnMut(&mut S, &str, &mut dyn ValueSink<'de>) -> Result<(), ValueError>,
) -> Result<S, NotObject> {
    let mut state = S::default();
    if skim::parse_object(text, &mut |k, v| on_entry(&mut state, k, v)).is_ok() {
        return Ok(state);
    }
    let mut state = S::default();
    visit::parse_object_text(text, |k, v| on_entry(&mut state, k, v))?;
    Ok(state)
}

/// Why a JSON text is not JSON, as serde_json says it: its message without the position, and
/// the position (1-based line; 1-based column counted in bytes).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Syntax {
    /// serde_json's message (`expected `,` or `}``, `EOF while parsing a list`, …).
    pub message: String,
    /// The line where it stopped.
    pub line: u64,
    /// The column where it stopped (at least 1: the start of a line, past its newline).
    pub column: u64,
}

impl Syntax {
    /// A serde_json error as a [`Syntax`].
    pub fn of(e: &serde_json::Error) -> Syntax {
        let full = e.to_string();
        let suffix = format!(" at line {} column {}", e.line(), e.column());
        Syntax {
            message: full.strip_suffix(&suffix).unwrap_or(&full).to_owned(),
            line: e.line() as u64,
            column: (e.column() as u64).max(1),
        }
    }
}

/// Why `text`, which a reader found not to be JSON, is not: serde_json reads it whole again
/// (only on that error path). `None` if it reads it after all.
pub fn why_not_json(text: &str) -> Option<Syntax> {
    serde_json::from_str::<serde_json::Value>(text)
        .err()
        .map(|e| Syntax::of(&e))
}

/// The byte offsets in `text` (a JSON object) of the values of its top-level key `key`, with
/// their JSON text, in order (a key may repeat). Empty when `text` is not an object.
pub fn value_offsets<'t>(text: &'t str, key: &str) -> Vec<(usize, &'t str)> {
    let mut found = Vec::new();
    let _ = visit::parse_object_text(text, |k, v| {
        if k == key {
            let raw = v.raw()?.get();
            found.push((raw.as_ptr() as usize - text.as_ptr() as usize, raw));
            Ok(())
        } else {
            v.skip()
        }
    });
    found
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn classifies_lines() {
        let ok = |l: &[u8]| parse_object_line(l, |_, s| s.skip());
        assert_eq!(ok(b"{\"a\": [1, {\"b\": 2}]}"), Ok(()));
        assert_eq!(ok(b"[1,2]"), Err(NotObject::NotObject));
        assert_eq!(ok(b"\"s\""), Err(NotObject::NotObject));
        assert_eq!(ok(b"{\"a\": 1"), Err(NotObject::NotJson));
        assert_eq!(ok(b"{\"a\": 1} x"), Err(NotObject::NotJson));
        assert_eq!(ok(b"{\"a\": \"\xff\"}"), Err(NotObject::InvalidUtf8));
        assert_eq!(ok(b"audit writer restarted"), Err(NotObject::NotJson));
    }

    #[test]
    fn syntax_errors_and_values_are_placed() {
        let e = why_not_json("{\"a\": 1,\n \"b\" 2}").unwrap();
        assert_eq!(
            e,
            Syntax {
                message: "expected `:`".into(),
                line: 2,
                column: 6
            }
        );
        let e = why_not_json("[1,\n").unwrap();
        assert_eq!(
            (e.message.as_str(), e.line, e.column),
            ("EOF while parsing a value", 2, 1)
        );
        assert_eq!(why_not_json("{\"a\": 1e400}").unwrap().message, "number out of range");
        assert_eq!(why_not_json("{}"), None);
        let text = "{\"k\": 1, \"x\":  [2], \"k\":\"v\"}";
        assert_eq!(value_offsets(text, "k"), [(6, "1"), (24, "\"v\"")]);
        assert_eq!(value_offsets(text, "x"), [(15, "[2]")]);
        assert!(value_offsets("[1]", "k").is_empty());
    }

    #[test]
    fn duplicate_keys_last_wins_and_escaped_keys_match() {
        let mut seen = Vec::new();
        parse_object_line(b"{\"k\": 1, \"\\u006b\": \"two\"}", |k, s| {
            seen.push((k.to_owned(), s.scalar()?));
            Ok(())
        })
        .unwrap();
        assert_eq!(seen[1], ("k".to_owned(), Scalar::Str("two".into())));
    }

    #[test]
    fn nested_objects_are_visited() {
        let mut inner = None;
        parse_object_line(b"{\"s\": {\"input_text\": \"hi\", \"x\": [1]}, \"t\": 3}", |k, s| {
            if k == "s" {
                s.object(&mut |k2, s2| {
                    if k2 == "input_text" {
                        inner = Some(s2.raw()?.get().to_owned());
                        Ok(())
                    } else {
                        s2.skip()
                    }
                })?;
                Ok(())
            } else {
                s.skip()
            }
        })
        .unwrap();
        assert_eq!(inner.as_deref(), Some("\"hi\""));
    }
}
