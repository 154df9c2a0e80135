//! The layout of JSON text, changed without reading its values: whitespace taken out
//! ([`compact`]) or put back as the report writer puts it ([`pretty`]). Every token is kept as
//! written, so a number keeps all its digits (a 30-digit pipeline id stays that id, where reading
//! it into a `serde_json::Value` would make it the nearest double).
//!
//! Both take text that is already known to be JSON (parsed once by serde_json); they only move
//! whitespace that lies outside strings.

/// The bytes of JSON text that lie outside its strings (the quotes and what is between them
/// left out), in order: what a count of its structure reads without parsing it.
pub fn outside_strings(json: &[u8]) -> impl Iterator<Item = u8> + '_ {
    let (mut in_string, mut escaped) = (false, false);
    json.iter().copied().filter(move |&b| {
        if in_string {
            if escaped {
                escaped = false;
            } else if b == b'\\' {
                escaped = true;
            } else if b == b'"' {
                in_string = false;
            }
            false
        } else if b == b'"' {
            in_string = true;
            false
        } else {
            true
        }
    })
}

/// The JSON text without whitespace outside its strings.
pub fn compact(json: &str) -> String {
    let mut out = String::with_capacity(json.len());
    let mut in_string = false;
    let mut escaped = false;
    for c in json.chars() {
        if in_string {
            out.push(c);
            if escaped {
                escaped = false;
            } else if c == '\\' {
                escaped = true;
            } else if c == '"' {
                in_string = false;
            }
        } else if !matches!(c, ' ' | '\t' | '\n' | '\r') {
            out.push(c);
            in_string = c == '"';
        }
    }
    out
}

/// The JSON text laid out as `serde_json::to_string_pretty` lays out a value (two-space indents,
/// `"key": value`, `[]` and `{}` for empty containers), with its tokens as written.
pub fn pretty(json: &str) -> String {
    let text = compact(json);
    let bytes = text.as_bytes();
    let mut out = String::with_capacity(text.len() + text.len() / 2);
    let mut depth = 0usize;
    let newline = |out: &mut String, depth: usize| {
        out.push('\n');
        for _ in 0..depth {
            out.push_str("  ");
        }
    };
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'"' => {
                // A string token, escapes and all, copied as one piece.
                let start = i;
                i += 1;
                while bytes[i] != b'"' {
                    i += if bytes[i] == b'\\' { 2 } else { 1 };
                }
                out.push_str(&text[start..=i]);
            }
            open @ (b'{' | b'[') => {
                let close = if open == b'{' { b'}' } else { b']' };
                out.push(open as char);
                if bytes.get(i + 1) == Some(&close) {
                    out.push(close as char);
                    i += 1;
                } else {
                    depth += 1;
                    newline(&mut out, depth);
                }
            }
            close @ (b'}' | b']') => {
                depth -= 1;
                newline(&mut out, depth);
                out.push(close as char);
            }
            b',' => {
                out.push(',');
                newline(&mut out, depth);
            }
            b':' => out.push_str(": "),
            _ => {
                // A number, `true`, `false` or `null`: up to the next structural byte.
                let start = i;
                while i + 1 < bytes.len() && !matches!(bytes[i + 1], b',' | b'}' | b']' | b':') {
                    i += 1;
                }
                out.push_str(&text[start..=i]);
            }
        }
        i += 1;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn outside_strings_leaves_out_strings_and_their_escapes() {
        let text = br#"{"a\"[{": [1, "]\\"], "b": {}}"#;
        assert_eq!(outside_strings(text).collect::<Vec<u8>>(), b"{: [1, ], : {}}");
    }

    #[test]
    fn numbers_keep_every_digit() {
        let text = "{ \"id\" : 123456789012345678901234567890,\n \"x\": [ -1.50e3, {} , [] ], \"s\": \"a \\\" , }\" }";
        assert_eq!(
            compact(text),
            r#"{"id":123456789012345678901234567890,"x":[-1.50e3,{},[]],"s":"a \" , }"}"#
        );
        assert_eq!(
            pretty(text),
            "{\n  \"id\": 123456789012345678901234567890,\n  \"x\": [\n    -1.50e3,\n    {},\n    []\n  ],\n  \"s\": \"a \\\" , }\"\n}"
        );
        assert_eq!(pretty("7"), "7");
        assert_eq!(pretty("\"\\\\\""), "\"\\\\\"");
    }

    #[test]
    fn a_report_round_trips() {
        let v = json!({"a": {"b": [1, 2.5, "x,y"], "c": {}}, "d": []});
        assert_eq!(
            pretty(&compact(&serde_json::to_string_pretty(&v).unwrap())),
            serde_json::to_string_pretty(&v).unwrap()
        );
    }
}

#[cfg(all(test, not(target_arch = "wasm32")))]
mod properties {
    use super::*;
    use proptest::prelude::*;
    use serde_json::Value;

    fn value() -> impl Strategy<Value = Value> {
        let leaf = prop_oneof![
            Just(Value::Null),
            any::<bool>().prop_map(Value::from),
            any::<i64>().prop_map(Value::from),
            any::<f64>()
                .prop_filter("finite", |f| f.is_finite())
                .prop_map(Value::from),
            ".*".prop_map(Value::from),
        ];
        leaf.prop_recursive(4, 48, 6, |inner| {
            prop_oneof![
                prop::collection::vec(inner.clone(), 0..6).prop_map(Value::from),
                prop::collection::vec(("[a-z \":,{}\\[\\]\\\\]{0,4}", inner), 0..6)
                    .prop_map(|kv| Value::Object(kv.into_iter().collect())),
            ]
        })
    }

    proptest! {
        #[test]
        fn the_layouts_are_serde_jsons(v in value()) {
            let compact_text = serde_json::to_string(&v).unwrap();
            let pretty_text = serde_json::to_string_pretty(&v).unwrap();
            prop_assert_eq!(compact(&pretty_text), compact_text.clone());
            prop_assert_eq!(pretty(&compact_text), pretty_text.clone());
            prop_assert_eq!(pretty(&pretty_text), pretty_text);
        }
    }
}
