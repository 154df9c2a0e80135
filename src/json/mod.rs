//! Reading JSON lines: one dispatcher ([`read_object_text`]) in front of two parsers that call
//! back the same way, entry by entry, through a [`ValueSink`]:
//!
//! - [`skim`], the fast path, for lines in the shape a writer produces (the hot loop of pass 1);
//! - the serde path (serde_json), for every other line, and the only one for whole files
//!   (`visit_object`, `visit_array`).
//!
//! Both read values as [`Scalar`] or [`PyText`]; neither ever fails on a value's type.

pub mod skim;
mod value;
mod visit;

pub use value::{nested_field, NotObject, PyText, Scalar, ValueError, ValueSink};
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
