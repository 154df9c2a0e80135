//! RFC 8785 JSON Canonicalization Scheme (JCS) for `serde_json` values.

use serde_json::Value;

/// A value JCS cannot write.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum JcsError {
    /// A number that is not an IEEE 754 double (an arbitrary-precision number).
    #[error("a number JCS cannot represent")]
    Unrepresentable,
    /// NaN or an infinity.
    #[error("NaN and infinities are not JSON")]
    NotFinite,
}

/// The canonical JSON text of a value: keys sorted by UTF-16 code units, no whitespace,
/// numbers as ECMAScript writes them, strings escaped as `JSON.stringify` does.
pub fn canonical_json(value: &Value) -> Result<String, JcsError> {
    let mut out = String::new();
    write(value, &mut out)?;
    Ok(out)
}

fn write(value: &Value, out: &mut String) -> Result<(), JcsError> {
    match value {
        Value::Null => out.push_str("null"),
        Value::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
        Value::Number(n) => {
            let f = n.as_f64().ok_or(JcsError::Unrepresentable)?;
            out.push_str(&number(f)?);
        }
        Value::String(s) => out.push_str(&serde_json::to_string(s).expect("strings serialize")),
        Value::Array(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write(item, out)?;
            }
            out.push(']');
        }
        Value::Object(map) => {
            let mut entries: Vec<(&String, &Value)> = map.iter().collect();
            entries.sort_by(|a, b| a.0.encode_utf16().cmp(b.0.encode_utf16()));
            out.push('{');
            for (i, (k, v)) in entries.into_iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                out.push_str(&serde_json::to_string(k).expect("strings serialize"));
                out.push(':');
                write(v, out)?;
            }
            out.push('}');
        }
    }
    Ok(())
}

/// ECMAScript `Number.prototype.toString` of a finite double (RFC 8785 §3.2.2.3): JavaScript's
/// own layout and, where two shortest digit strings are equally close, the even one
/// ([`crate::json::number::js_string`], the one implementation of it).
pub fn number(x: f64) -> Result<String, JcsError> {
    if !x.is_finite() {
        return Err(JcsError::NotFinite);
    }
    Ok(crate::json::number::js_string(x))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    #[allow(clippy::excessive_precision)] // RFC 8785 writes the input with all its digits.
    fn numbers_as_ecmascript_writes_them() {
        // RFC 8785 appendix B and §3.2.2.3 examples.
        let cases: &[(f64, &str)] = &[
            (0.0, "0"),
            (-0.0, "0"),
            (1.0, "1"),
            (4.50, "4.5"),
            (2e-3, "0.002"),
            (0.000001, "0.000001"),
            (1e-7, "1e-7"),
            (1e21, "1e+21"),
            (1e20, "100000000000000000000"),
            (333333333.33333329, "333333333.3333333"),
            // Two shortest digit strings equally close to the double: ECMAScript takes the even
            // one, where Rust's `{:e}` writes ...063.
            (0.50925445556640625, "0.5092544555664062"),
            (1e30, "1e+30"),
            (-1.5e-10, "-1.5e-10"),
            (9007199254740992.0, "9007199254740992"),
            (295147905179352830000.0, "295147905179352830000"),
            (5e-324, "5e-324"),
            (1.7976931348623157e308, "1.7976931348623157e+308"),
            (0.05, "0.05"),
            (123.456, "123.456"),
        ];
        for (x, want) in cases {
            assert_eq!(number(*x).unwrap(), *want, "{x:e}");
        }
        assert_eq!(number(f64::NAN), Err(JcsError::NotFinite));
        assert_eq!(number(f64::INFINITY), Err(JcsError::NotFinite));
        assert_eq!(JcsError::NotFinite.to_string(), "NaN and infinities are not JSON");
    }

    #[test]
    fn objects_sort_keys_by_utf16_and_drop_whitespace() {
        // RFC 8785 §3.2.3 sorting example (keys with characters outside the BMP).
        let v = json!({"\u{20ac}": "Euro Sign", "\r": "Carriage Return", "\u{fb33}": "Hebrew Letter Dalet With Dagesh",
                       "1": "One", "\u{1f600}": "Emoji: Grinning Face", "\u{0080}": "Control", "\u{00f6}": "Latin Small Letter O With Diaeresis"});
        let text = canonical_json(&v).unwrap();
        let order: Vec<&str> = ["\\r", "1", "\u{0080}", "\u{00f6}", "\u{20ac}", "\u{1f600}", "\u{fb33}"].to_vec();
        let mut last = 0;
        for key in order {
            let at = text.find(&format!("\"{key}\"")).unwrap();
            assert!(at >= last, "{key} out of order in {text}");
            last = at;
        }
        assert_eq!(
            canonical_json(&json!({"b": [1, 2.5, null, true], "a": "\u{1}x"})).unwrap(),
            r#"{"a":"\u0001x","b":[1,2.5,null,true]}"#
        );
    }
}
