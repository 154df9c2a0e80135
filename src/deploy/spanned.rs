//! A small YAML (or JSON) file read into a tree of values that remember their line: for the
//! files a user writes by hand and whose every refusal must name the line (a `run` target).
//! The same parser and the same scalar rules as the config edit (YAML 1.1 as PyYAML reads it:
//! `yes` is true, `0x10` is 16), duplicate keys refused; anchors and aliases are expanded.

use super::doc::{Doc, Kind};
use super::resolve::{parse_float, parse_int, resolve_plain, CORE};
use super::ConfigError;

/// A value and the 1-based line where it starts.
#[derive(Debug, Clone, PartialEq)]
pub struct Spanned {
    /// The line of the value's first character.
    pub line: usize,
    /// The value.
    pub value: Value,
}

/// A YAML value, typed as the loader types it.
#[derive(Debug, Clone, PartialEq)]
pub enum Value {
    /// `null`, `~` or nothing.
    Null,
    /// `true`, `yes`, `on`…
    Bool(bool),
    /// An integer.
    Int(i128),
    /// A number with a fraction or an exponent (finite or not, as written).
    Float(f64),
    /// A string.
    Str(String),
    /// A sequence.
    Seq(Vec<Spanned>),
    /// A mapping whose keys are strings (with the key's line), in file order.
    Map(Vec<(String, usize, Spanned)>),
}

impl Value {
    /// What the value is, for messages.
    pub fn describe(&self) -> &'static str {
        match self {
            Value::Null => "null",
            Value::Bool(_) => "a boolean",
            Value::Int(_) | Value::Float(_) => "a number",
            Value::Str(_) => "a string",
            Value::Seq(_) => "a list",
            Value::Map(_) => "a mapping",
        }
    }
}

/// Reads one YAML document (JSON is YAML too). `None` for a file with no document.
pub fn read_yaml(text: &str) -> Result<Option<Spanned>, ConfigError> {
    let doc = super::tree::parse(text)?;
    let Some(root) = doc.root else { return Ok(None) };
    let mut budget = MAX_VALUES;
    convert(&doc, root, 0, &mut budget).map(Some)
}

/// The most values a document may expand to (aliases expanded): a few hundred bytes of nested
/// aliases could otherwise expand to billions.
pub const MAX_VALUES: usize = 100_000;

fn convert(doc: &Doc, id: usize, depth: usize, budget: &mut usize) -> Result<Spanned, ConfigError> {
    let id = doc.resolve(id);
    let node = &doc.nodes[id];
    let line = node.line;
    let column = node.column;
    if *budget == 0 {
        return Err(ConfigError::Syntax {
            line,
            column,
            message: format!("more than {MAX_VALUES} values once its aliases are expanded"),
        });
    }
    *budget -= 1;
    if depth > super::tree::MAX_DEPTH {
        return Err(ConfigError::Syntax {
            line,
            column,
            message: "nested too deep".into(),
        });
    }
    let value = match &node.kind {
        Kind::Scalar { value, plain } => {
            scalar(value, *plain, node.tag.as_deref()).ok_or_else(|| ConfigError::Syntax {
                line,
                column,
                message: format!("`{value}` is not a value of its tag"),
            })?
        }
        Kind::Seq(items) => Value::Seq(
            items
                .iter()
                .map(|&item| convert(doc, item, depth + 1, budget))
                .collect::<Result<_, _>>()?,
        ),
        Kind::Map(entries) => {
            let mut out = Vec::with_capacity(entries.len());
            for &(k, v) in entries {
                let key_node = &doc.nodes[doc.resolve(k)];
                let key = match &key_node.kind {
                    Kind::Scalar { value, .. } => value.clone(),
                    _ => {
                        return Err(ConfigError::Syntax {
                            line: key_node.line,
                            column: key_node.column,
                            message: "a key must be a string".into(),
                        })
                    }
                };
                out.push((key, key_node.line, convert(doc, v, depth + 1, budget)?));
            }
            Value::Map(out)
        }
        Kind::Alias(_) => unreachable!("resolved"),
    };
    Ok(Spanned { line, value })
}

fn scalar(value: &str, plain: bool, tag: Option<&str>) -> Option<Value> {
    let kind = match tag {
        None if plain => resolve_plain(value),
        None | Some("!") => "str",
        Some(t) => t.strip_prefix(CORE).unwrap_or(t),
    };
    Some(match kind {
        "null" => Value::Null,
        "bool" => match value.to_ascii_lowercase().as_str() {
            "yes" | "true" | "on" => Value::Bool(true),
            "no" | "false" | "off" => Value::Bool(false),
            _ => return None,
        },
        "int" => Value::Int(parse_int(value)?),
        "float" => Value::Float(parse_float(value)?),
        _ => Value::Str(value.to_owned()),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_keep_their_lines_and_types() {
        let text = "kind: http\nretries: 3\nt: 0.5\nflag: yes\nlist:\n  - a\n  - \"7\"\nnone:\n";
        let root = read_yaml(text).unwrap().unwrap();
        let Value::Map(entries) = root.value else { panic!() };
        let find = |k: &str| entries.iter().find(|e| e.0 == k).unwrap();
        assert_eq!(find("retries").2.value, Value::Int(3));
        assert_eq!(find("retries").1, 2);
        assert_eq!(find("t").2.value, Value::Float(0.5));
        assert_eq!(find("flag").2.value, Value::Bool(true));
        assert_eq!(find("none").2.value, Value::Null);
        let Value::Seq(items) = &find("list").2.value else {
            panic!()
        };
        assert_eq!(items[1].value, Value::Str("7".into()));
        assert_eq!(items[1].line, 7);
        // JSON reads the same way.
        let json = read_yaml("{\"a\": [1, 2.5, \"x\", true, null]}").unwrap().unwrap();
        assert!(matches!(json.value, Value::Map(_)));
        // Duplicate keys are refused.
        assert!(read_yaml("a: 1\na: 2\n").is_err());
        assert_eq!(read_yaml("# nothing\n").unwrap(), None);
    }

    #[test]
    fn an_alias_bomb_is_refused_before_it_expands() {
        let mut text = String::from("a0: &a0 [x, x, x, x, x, x, x, x, x, x]\n");
        for i in 1..9 {
            let p = i - 1;
            text += &format!("a{i}: &a{i} [*a{p}, *a{p}, *a{p}, *a{p}, *a{p}, *a{p}, *a{p}, *a{p}, *a{p}, *a{p}]\n");
        }
        let e = read_yaml(&text).unwrap_err().to_string();
        assert!(e.contains("more than 100000 values"), "{e}");
    }
}
