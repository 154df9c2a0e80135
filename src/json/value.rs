//! What the readers get from a JSON line: a value reduced to what they need ([`Scalar`],
//! [`PyText`]), the [`ValueSink`] both parsers hand each entry's value to, and the errors.

use serde::de::{self, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};
use std::borrow::Cow;
use std::fmt;

/// Why a value or an entry could not be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ValueError {
    /// The fast path ([`super::skim`]) cannot read this line; serde_json reads it again. It
    /// never reaches a caller of [`super::read_object_text`].
    #[error("the fast path cannot read this line")]
    Bail,
    /// The value is not what the caller reads, or the caller refuses the entry; the message
    /// says why (serde_json's, or the caller's own).
    #[error("{0}")]
    Invalid(String),
}

impl From<String> for ValueError {
    fn from(message: String) -> Self {
        ValueError::Invalid(message)
    }
}

impl From<&str> for ValueError {
    fn from(message: &str) -> Self {
        ValueError::Invalid(message.to_owned())
    }
}

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
    /// An integer too wide for 64 bits, as its exact decimal text (Python keeps such an
    /// integer exactly; serde_json would make it a float).
    BigInt(Cow<'a, str>),
    /// Any other number.
    Float(f64),
    /// `true` or `false`.
    Bool(bool),
    /// An array or an object.
    Composite,
}

impl<'a> Scalar<'a> {
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
            Scalar::Int(_) | Scalar::BigInt(_) | Scalar::Float(_) => "a number",
            Scalar::Bool(_) => "a boolean",
            Scalar::Composite => "an array or object",
        }
    }

    /// The value as a number, if it is one.
    pub fn as_f64(&self) -> Option<f64> {
        match self {
            Scalar::Int(i) => Some(*i as f64),
            // Correctly rounded, as Python's `float(int)` (which raises beyond the doubles).
            Scalar::BigInt(text) => text.parse().ok(),
            Scalar::Float(f) => Some(*f),
            _ => None,
        }
    }

    /// Reads one JSON value from its text (`raw`, as serde_json's `RawValue` gives it): as
    /// serde_json reads it, except that an integer too wide for 64 bits keeps its digits
    /// ([`Scalar::BigInt`]) instead of becoming a float.
    pub(crate) fn of_raw(raw: &'a str) -> Result<Scalar<'a>, ValueError> {
        if let Some(digits) = wide_integer(raw) {
            return Ok(Scalar::BigInt(Cow::Borrowed(digits)));
        }
        serde_json::from_str::<Scalar<'a>>(raw).map_err(|e| ValueError::Invalid(e.to_string()))
    }
}

/// `raw` without surrounding whitespace when it is a JSON integer (`-?(0|[1-9][0-9]*)`) that
/// does not fit in an `i64` or a `u64`.
fn wide_integer(raw: &str) -> Option<&str> {
    let text = raw.trim_matches([' ', '\t', '\n', '\r']);
    let digits = text.strip_prefix('-').unwrap_or(text);
    // Below 19 digits every integer fits; a JSON integer has no leading zero.
    let integer = digits.len() >= 19 && digits.bytes().all(|b| b.is_ascii_digit()) && !digits.starts_with('0');
    (integer && text.parse::<i64>().is_err() && text.parse::<u64>().is_err()).then_some(text)
}

/// Whether `text` is a JSON integer other than zero, as an integer id's text is:
/// `-?[1-9][0-9]*`.
pub fn is_integer_id_text(text: &str) -> bool {
    let digits = text.strip_prefix('-').unwrap_or(text);
    !digits.is_empty() && !digits.starts_with('0') && digits.bytes().all(|b| b.is_ascii_digit())
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
    pub(crate) fn of_raw(raw: &'a str) -> Result<PyText<'a>, ValueError> {
        let raw = raw.trim_matches([' ', '\t', '\n', '\r']);
        Ok(match raw.as_bytes().first() {
            Some(b'"') => PyText::Text(
                serde_json::from_str::<Key<'a>>(raw)
                    .map_err(|e| ValueError::Invalid(e.to_string()))?
                    .0,
            ),
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
pub(crate) struct SetFlag(pub bool);

impl<'de> de::Deserialize<'de> for SetFlag {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        Option::<IgnoredAny>::deserialize(d).map(|v| SetFlag(v.is_some()))
    }
}

/// Reads the value of the current map entry as a `T`.
pub trait ValueSink<'de> {
    /// Reads the current value as a [`Scalar`].
    fn scalar(&mut self) -> Result<Scalar<'de>, ValueError>;
    /// Reads the current value as the reference makes it text (see [`PyText`]).
    fn text(&mut self) -> Result<PyText<'de>, ValueError>;
    /// Reads the current value as raw JSON text.
    fn raw(&mut self) -> Result<&'de serde_json::value::RawValue, ValueError>;
    /// Skips the current value (checking its grammar, as [`ValueSink::skip`]), giving its JSON
    /// text as written: a slice of the input, so its place in the input is known.
    fn span(&mut self) -> Result<&'de str, ValueError>;
    /// Reads whether the current value is set (not null), discarding it.
    fn flag(&mut self) -> Result<bool, ValueError>;
    /// Skips the current value.
    fn skip(&mut self) -> Result<(), ValueError>;
    /// Reads the current value as an object, calling back for the inner entries; `false` if
    /// it is not an object.
    fn object(
        &mut self,
        on_entry: &mut dyn FnMut(&str, &mut dyn ValueSink<'de>) -> Result<(), ValueError>,
    ) -> Result<bool, ValueError>;
}

/// An object key, borrowed from the input unless it had escapes.
pub(crate) struct Key<'de>(pub(crate) Cow<'de, str>);

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
    mut read: impl FnMut(&mut dyn ValueSink<'de>) -> Result<T, ValueError>,
) -> Result<Option<T>, ValueError> {
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
