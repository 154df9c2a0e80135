//! JSON read one way only: a duplicate object key anywhere is an error, never "the last one
//! wins" (which is how `serde_json::Value` reads it, while other parsers keep the first).
//!
//! Keys are compared after unescaping, so `"a"` and `"\u0061"` are the same key.

use serde::de::{self, DeserializeSeed, MapAccess, SeqAccess, Visitor};
use serde_json::{Map, Number, Value};
use std::cell::RefCell;
use std::fmt;

/// Why bytes are not JSON read strictly.
#[derive(Debug, Clone, thiserror::Error, PartialEq, Eq)]
pub enum StrictJsonError {
    /// An object has the same key twice.
    #[error("the key `{key}` appears more than once in the object at {}", where_(path))]
    DuplicateKey {
        /// The object's JSON pointer (RFC 6901; empty for the top level).
        path: String,
        /// The repeated key.
        key: String,
    },
    /// Not JSON at all (serde_json's message, with line and column).
    #[error("{0}")]
    Syntax(String),
}

fn where_(path: &str) -> String {
    if path.is_empty() {
        "the top level".to_owned()
    } else {
        format!("`{path}`")
    }
}

/// Parses JSON into a [`Value`], rejecting any duplicate object key, at any depth.
pub fn from_slice(bytes: &[u8]) -> Result<Value, StrictJsonError> {
    let found = RefCell::new(None);
    let mut de = serde_json::Deserializer::from_slice(bytes);
    let parsed = Node {
        at: &Segment::Root,
        found: &found,
    }
    .deserialize(&mut de)
    .and_then(|v| de.end().map(|()| v));
    match (parsed, found.into_inner()) {
        (_, Some(duplicate)) => Err(duplicate),
        (Ok(v), None) => Ok(v),
        (Err(e), None) => Err(StrictJsonError::Syntax(e.to_string())),
    }
}

/// Where a value sits, as a chain back to the root (built on the stack, only formatted when a
/// duplicate is found).
enum Segment<'a> {
    Root,
    Key(&'a Segment<'a>, &'a str),
    Index(&'a Segment<'a>, usize),
}

impl Segment<'_> {
    fn pointer(&self) -> String {
        match self {
            Segment::Root => String::new(),
            Segment::Key(parent, key) => format!("{}/{}", parent.pointer(), key.replace('~', "~0").replace('/', "~1")),
            Segment::Index(parent, i) => format!("{}/{i}", parent.pointer()),
        }
    }
}

struct Node<'a> {
    at: &'a Segment<'a>,
    found: &'a RefCell<Option<StrictJsonError>>,
}

impl<'de> DeserializeSeed<'de> for Node<'_> {
    type Value = Value;

    fn deserialize<D: de::Deserializer<'de>>(self, deserializer: D) -> Result<Value, D::Error> {
        deserializer.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Node<'_> {
    type Value = Value;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a JSON value")
    }

    fn visit_bool<E>(self, v: bool) -> Result<Value, E> {
        Ok(Value::Bool(v))
    }

    fn visit_i64<E>(self, v: i64) -> Result<Value, E> {
        Ok(Value::Number(v.into()))
    }

    fn visit_u64<E>(self, v: u64) -> Result<Value, E> {
        Ok(Value::Number(v.into()))
    }

    fn visit_f64<E>(self, v: f64) -> Result<Value, E> {
        Ok(Number::from_f64(v).map_or(Value::Null, Value::Number))
    }

    fn visit_str<E>(self, v: &str) -> Result<Value, E> {
        Ok(Value::String(v.to_owned()))
    }

    fn visit_string<E>(self, v: String) -> Result<Value, E> {
        Ok(Value::String(v))
    }

    fn visit_unit<E>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }

    fn visit_none<E>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Value, A::Error> {
        let mut items = Vec::with_capacity(seq.size_hint().unwrap_or(0).min(4096));
        loop {
            let at = Segment::Index(self.at, items.len());
            let node = Node {
                at: &at,
                found: self.found,
            };
            match seq.next_element_seed(node)? {
                Some(v) => items.push(v),
                None => return Ok(Value::Array(items)),
            }
        }
    }

    fn visit_map<A: MapAccess<'de>>(self, mut access: A) -> Result<Value, A::Error> {
        let mut map = Map::new();
        while let Some(key) = access.next_key::<String>()? {
            if map.contains_key(&key) {
                let path = self.at.pointer();
                let message = format!("duplicate key `{key}` at {}", where_(&path));
                *self.found.borrow_mut() = Some(StrictJsonError::DuplicateKey { path, key });
                return Err(de::Error::custom(message));
            }
            let at = Segment::Key(self.at, &key);
            let value = access.next_value_seed(Node {
                at: &at,
                found: self.found,
            })?;
            map.insert(key, value);
        }
        Ok(Value::Object(map))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn duplicate(text: &str) -> (String, String) {
        match from_slice(text.as_bytes()) {
            Err(StrictJsonError::DuplicateKey { path, key }) => (path, key),
            other => panic!("{text}: {other:?}"),
        }
    }

    #[test]
    fn the_same_value_as_serde_json_without_duplicates() {
        let text = r#"{"a": [1, -2, 3.5, 1e300, true, null, "x\u00e9"], "b": {"c": {}, "d": []}, "é/~": 18446744073709551615}"#;
        let want: Value = serde_json::from_str(text).unwrap();
        assert_eq!(from_slice(text.as_bytes()).unwrap(), want);
        let keys: Vec<&String> = want.as_object().unwrap().keys().collect();
        let got = from_slice(text.as_bytes()).unwrap();
        assert_eq!(got.as_object().unwrap().keys().collect::<Vec<_>>(), keys, "order kept");
    }

    #[test]
    fn a_duplicate_anywhere_is_named_with_its_place() {
        assert_eq!(duplicate(r#"{"a": 1, "a": 2}"#), (String::new(), "a".into()));
        assert_eq!(
            duplicate(r#"{"a": 1, "\u0061": 1}"#),
            (String::new(), "a".into()),
            "same after unescaping"
        );
        assert_eq!(
            duplicate(r#"{"p": {"x/y": [0, {"k~": {"v": "FAILED", "v": "PASSED"}}]}}"#),
            ("/p/x~1y/1/k~0".into(), "v".into())
        );
        assert_eq!(duplicate(r#"[{"a": {}}, {"b": 1, "b": 1}]"#), ("/1".into(), "b".into()));
        // The same key in sibling objects is not a duplicate.
        assert!(from_slice(br#"[{"a": 1}, {"a": 2}, {"b": {"a": 3}}]"#).is_ok());
    }

    #[test]
    fn syntax_errors_and_trailing_bytes() {
        for bad in [&b"{"[..], b"{\"a\": 1} x", b"", b"{\"a\" 1}", b"\xff"] {
            assert!(matches!(from_slice(bad), Err(StrictJsonError::Syntax(_))), "{bad:?}");
        }
        let deep = format!("{}{}", "[".repeat(100_000), "]".repeat(100_000));
        assert!(
            matches!(from_slice(deep.as_bytes()), Err(StrictJsonError::Syntax(_))),
            "the depth limit holds"
        );
    }
}
