//! Small serde helpers shared by the readers: field visitors that never fail on a value's type.

use serde::de::{self, DeserializeSeed, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};
use std::borrow::Cow;
use std::fmt;

/// A JSON value reduced to what the readers need to know about it.
#[derive(Debug, Clone, PartialEq, Default)]
pub enum Scalar<'a> {
    /// The key was not present.
    #[default]
    Absent,
    /// `null`.
    Null,
    /// A string.
    Str(Cow<'a, str>),
    /// An integer that fits in 64 bits (sign kept).
    Int(i128),
    /// Any other number.
    Float(f64),
    /// `true` or `false`.
    Bool(bool),
    /// An array or an object.
    Composite,
}

impl Scalar<'_> {
    /// True unless absent or null.
    pub fn is_set(&self) -> bool {
        !matches!(self, Scalar::Absent | Scalar::Null)
    }

    /// The JSON type name, for messages.
    pub fn kind(&self) -> &'static str {
        match self {
            Scalar::Absent => "absent",
            Scalar::Null => "null",
            Scalar::Str(_) => "a string",
            Scalar::Int(_) | Scalar::Float(_) => "a number",
            Scalar::Bool(_) => "a boolean",
            Scalar::Composite => "an array or object",
        }
    }

    /// The value as a number, if it is one.
    pub fn as_f64(&self) -> Option<f64> {
        match *self {
            Scalar::Int(i) => Some(i as f64),
            Scalar::Float(f) => Some(f),
            _ => None,
        }
    }
}

/// A value made text as the reference makes a verdict text, `str(v or "")`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PyText<'a> {
    /// `null` (Python's `None`).
    Null,
    /// A string as it is, an integer in decimal, a float as Python's `repr`, `true` as
    /// `True`; a falsy value (`0`, `0.0`, `false`, `""`) as `""` (see [`crate::compat`]).
    Text(Cow<'a, str>),
    /// An object or an array.
    Composite,
}

impl<'a> PyText<'a> {
    /// The reference's text of one JSON value (`raw` is its JSON text).
    pub fn of_raw(raw: &'a str) -> Result<PyText<'a>, String> {
        let raw = raw.trim_matches([' ', '\t', '\n', '\r']);
        Ok(match raw.as_bytes().first() {
            Some(b'"') => PyText::Text(serde_json::from_str::<Key<'a>>(raw).map_err(|e| e.to_string())?.0),
            Some(b'n') => PyText::Null,
            Some(b't') => PyText::Text(Cow::Borrowed("True")),
            Some(b'f') => PyText::Text(Cow::Borrowed("")),
            Some(b'{' | b'[') => PyText::Composite,
            Some(_) => PyText::Text(crate::compat::py_number_text(raw)),
            None => return Err("no value".into()),
        })
    }

    /// The text, unless null or composite.
    pub fn as_text(&self) -> Option<&str> {
        match self {
            PyText::Text(t) => Some(t),
            PyText::Null | PyText::Composite => None,
        }
    }
}

impl<'de> de::Deserialize<'de> for Scalar<'de> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(ScalarVisitor)
    }
}

struct ScalarVisitor;

impl<'de> Visitor<'de> for ScalarVisitor {
    type Value = Scalar<'de>;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("any JSON value")
    }
    fn visit_borrowed_str<E>(self, v: &'de str) -> Result<Self::Value, E> {
        Ok(Scalar::Str(Cow::Borrowed(v)))
    }
    fn visit_str<E>(self, v: &str) -> Result<Self::Value, E> {
        Ok(Scalar::Str(Cow::Owned(v.to_owned())))
    }
    fn visit_string<E>(self, v: String) -> Result<Self::Value, E> {
        Ok(Scalar::Str(Cow::Owned(v)))
    }
    fn visit_u64<E>(self, v: u64) -> Result<Self::Value, E> {
        Ok(Scalar::Int(v as i128))
    }
    fn visit_i64<E>(self, v: i64) -> Result<Self::Value, E> {
        Ok(Scalar::Int(v as i128))
    }
    fn visit_f64<E>(self, v: f64) -> Result<Self::Value, E> {
        Ok(Scalar::Float(v))
    }
    fn visit_bool<E>(self, v: bool) -> Result<Self::Value, E> {
        Ok(Scalar::Bool(v))
    }
    fn visit_unit<E>(self) -> Result<Self::Value, E> {
        Ok(Scalar::Null)
    }
    fn visit_none<E>(self) -> Result<Self::Value, E> {
        Ok(Scalar::Null)
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
        while seq.next_element::<IgnoredAny>()?.is_some() {}
        Ok(Scalar::Composite)
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        while map.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
        Ok(Scalar::Composite)
    }
}

/// Whether a value is present and not null, without keeping it.
#[derive(Debug, Clone, Copy, Default)]
pub struct SetFlag(pub bool);

impl<'de> de::Deserialize<'de> for SetFlag {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        Option::<IgnoredAny>::deserialize(d).map(|v| SetFlag(v.is_some()))
    }
}

/// Visits an object's entries with `on_entry(key, map)`; a non-object value is skipped and
/// reported as `Ok(false)`. The callback must consume the value of the key it is given.
pub fn visit_object<'de, D, F>(d: D, on_entry: F) -> Result<bool, D::Error>
where
    D: Deserializer<'de>,
    F: FnMut(&str, &mut dyn ValueSink<'de>) -> Result<(), String>,
{
    d.deserialize_any(ObjectVisitor { on_entry })
}

/// Visits an array's elements with `on_element(index, raw element)`, one at a time (nothing
/// of the array is kept); a callback error stops it. A non-array is an error.
pub fn visit_array<'de, D, F>(d: D, on_element: F) -> Result<(), D::Error>
where
    D: Deserializer<'de>,
    F: FnMut(usize, &'de serde_json::value::RawValue) -> Result<(), String>,
{
    struct Elements<F>(F);
    impl<'de, F> Visitor<'de> for Elements<F>
    where
        F: FnMut(usize, &'de serde_json::value::RawValue) -> Result<(), String>,
    {
        type Value = ();
        fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
            f.write_str("a JSON array")
        }
        fn visit_seq<A: SeqAccess<'de>>(mut self, mut seq: A) -> Result<(), A::Error> {
            let mut n = 0;
            while let Some(item) = seq.next_element::<&'de serde_json::value::RawValue>()? {
                (self.0)(n, item).map_err(de::Error::custom)?;
                n += 1;
            }
            Ok(())
        }
    }
    d.deserialize_seq(Elements(on_element))
}

/// Reads the value of the current map entry as a `T`.
pub trait ValueSink<'de> {
    /// Reads the current value as a [`Scalar`].
    fn scalar(&mut self) -> Result<Scalar<'de>, String>;
    /// Reads the current value as the reference makes it text (see [`PyText`]).
    fn text(&mut self) -> Result<PyText<'de>, String>;
    /// Reads the current value as raw JSON text.
    fn raw(&mut self) -> Result<&'de serde_json::value::RawValue, String>;
    /// Reads whether the current value is set (not null), discarding it.
    fn flag(&mut self) -> Result<bool, String>;
    /// Skips the current value.
    fn skip(&mut self) -> Result<(), String>;
    /// Reads the current value as an object, calling back for the inner entries; `false` if
    /// it is not an object.
    fn object(
        &mut self,
        on_entry: &mut dyn FnMut(&str, &mut dyn ValueSink<'de>) -> Result<(), String>,
    ) -> Result<bool, String>;
}

struct MapSink<'a, A> {
    map: &'a mut A,
}

impl<'de, A: MapAccess<'de>> ValueSink<'de> for MapSink<'_, A> {
    fn scalar(&mut self) -> Result<Scalar<'de>, String> {
        self.map.next_value::<Scalar<'de>>().map_err(|e| e.to_string())
    }
    fn text(&mut self) -> Result<PyText<'de>, String> {
        let raw = self
            .map
            .next_value::<&'de serde_json::value::RawValue>()
            .map_err(|e| e.to_string())?;
        PyText::of_raw(raw.get())
    }
    fn raw(&mut self) -> Result<&'de serde_json::value::RawValue, String> {
        self.map
            .next_value::<&'de serde_json::value::RawValue>()
            .map_err(|e| e.to_string())
    }
    fn flag(&mut self) -> Result<bool, String> {
        self.map.next_value::<SetFlag>().map(|f| f.0).map_err(|e| e.to_string())
    }
    fn skip(&mut self) -> Result<(), String> {
        self.map
            .next_value::<IgnoredAny>()
            .map(|_| ())
            .map_err(|e| e.to_string())
    }
    fn object(
        &mut self,
        on_entry: &mut dyn FnMut(&str, &mut dyn ValueSink<'de>) -> Result<(), String>,
    ) -> Result<bool, String> {
        self.map
            .next_value_seed(NestedObject { on_entry })
            .map_err(|e| e.to_string())
    }
}

struct NestedObject<'f, 'de> {
    on_entry: &'f mut dyn FnMut(&str, &mut dyn ValueSink<'de>) -> Result<(), String>,
}

impl<'de> DeserializeSeed<'de> for NestedObject<'_, 'de> {
    type Value = bool;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<bool, D::Error> {
        let on_entry = self.on_entry;
        d.deserialize_any(ObjectVisitor {
            on_entry: move |k: &str, s: &mut dyn ValueSink<'de>| on_entry(k, s),
        })
    }
}

struct ObjectVisitor<F> {
    on_entry: F,
}

impl<'de, F> Visitor<'de> for ObjectVisitor<F>
where
    F: FnMut(&str, &mut dyn ValueSink<'de>) -> Result<(), String>,
{
    type Value = bool;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a JSON object")
    }
    fn visit_map<A: MapAccess<'de>>(mut self, mut map: A) -> Result<bool, A::Error> {
        while let Some(Key(key)) = map.next_key::<Key<'de>>()? {
            let mut sink = MapSink { map: &mut map };
            (self.on_entry)(&key, &mut sink).map_err(de::Error::custom)?;
        }
        Ok(true)
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<bool, A::Error> {
        while seq.next_element::<IgnoredAny>()?.is_some() {}
        Ok(false)
    }
    fn visit_bool<E>(self, _: bool) -> Result<bool, E> {
        Ok(false)
    }
    fn visit_i64<E>(self, _: i64) -> Result<bool, E> {
        Ok(false)
    }
    fn visit_u64<E>(self, _: u64) -> Result<bool, E> {
        Ok(false)
    }
    fn visit_f64<E>(self, _: f64) -> Result<bool, E> {
        Ok(false)
    }
    fn visit_str<E>(self, _: &str) -> Result<bool, E> {
        Ok(false)
    }
    fn visit_unit<E>(self) -> Result<bool, E> {
        Ok(false)
    }
}

/// An object key, borrowed from the input unless it had escapes.
struct Key<'de>(Cow<'de, str>);

impl<'de> de::Deserialize<'de> for Key<'de> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct KeyVisitor;
        impl<'de> Visitor<'de> for KeyVisitor {
            type Value = Key<'de>;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("an object key")
            }
            fn visit_borrowed_str<E>(self, v: &'de str) -> Result<Key<'de>, E> {
                Ok(Key(Cow::Borrowed(v)))
            }
            fn visit_str<E>(self, v: &str) -> Result<Key<'de>, E> {
                Ok(Key(Cow::Owned(v.to_owned())))
            }
        }
        d.deserialize_str(KeyVisitor)
    }
}

/// Reads field `key` of the object value in `v` with `read` (the last one, if repeated),
/// skipping the object's other fields; `None` when it has no such field or is not an object.
pub fn nested_field<'de, T>(
    v: &mut dyn ValueSink<'de>,
    key: &str,
    mut read: impl FnMut(&mut dyn ValueSink<'de>) -> Result<T, String>,
) -> Result<Option<T>, String> {
    let mut found = None;
    v.object(&mut |k, inner| {
        if k == key {
            found = Some(read(inner)?);
            Ok(())
        } else {
            inner.skip()
        }
    })?;
    Ok(found)
}

/// How a line failed to be a JSON object.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NotObject {
    /// Not UTF-8.
    InvalidUtf8,
    /// Not JSON (truncated, garbage, trailing characters, too deep).
    NotJson,
    /// Valid JSON, but not an object.
    NotObject,
}

/// Parses one line as a JSON object, calling back for each top-level entry.
pub fn parse_object_line<'de>(
    line: &'de [u8],
    on_entry: impl FnMut(&str, &mut dyn ValueSink<'de>) -> Result<(), String>,
) -> Result<(), NotObject> {
    let text = simdutf8::basic::from_utf8(line).map_err(|_| NotObject::InvalidUtf8)?;
    parse_object_text(text, on_entry)
}

/// Reads one line as a JSON object into a state built by `on_entry` for each top-level entry:
/// the same result as [`parse_object_line`], through the fast path of [`crate::skim`] when the
/// line allows it (`on_entry` then starts again from a fresh state if serde must read it).
pub fn read_object_line<'de, S: Default>(
    line: &'de [u8],
    on_entry: impl FnMut(&mut S, &str, &mut dyn ValueSink<'de>) -> Result<(), String>,
) -> Result<S, NotObject> {
    let text = simdutf8::basic::from_utf8(line).map_err(|_| NotObject::InvalidUtf8)?;
    read_object_text(text, on_entry)
}

/// [`read_object_line`] for a line already known to be text.
pub fn read_object_text<'de, S: Default>(
    text: &'de str,
    mut on_entry: impl FnMut(&mut S, &str, &mut dyn ValueSink<'de>) -> Result<(), String>,
) -> Result<S, NotObject> {
    let mut state = S::default();
    if crate::skim::parse_object(text, &mut |k, v| on_entry(&mut state, k, v)).is_ok() {
        return Ok(state);
    }
    let mut state = S::default();
    parse_object_text(text, |k, v| on_entry(&mut state, k, v))?;
    Ok(state)
}

fn parse_object_text<'de>(
    text: &'de str,
    on_entry: impl FnMut(&str, &mut dyn ValueSink<'de>) -> Result<(), String>,
) -> Result<(), NotObject> {
    let mut de = serde_json::Deserializer::from_str(text);
    match visit_object(&mut de, on_entry).and_then(|is_obj| de.end().map(|_| is_obj)) {
        Ok(true) => Ok(()),
        Ok(false) => Err(NotObject::NotObject),
        Err(_) => Err(NotObject::NotJson),
    }
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
