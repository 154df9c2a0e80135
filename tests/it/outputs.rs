//! What the models answered (`output`) beside the verdicts, in every verdict format: it never
//! changes what is scored. For every parity fixture and every format (JSONL, a JSON array, the
//! JSON object form, CSV), the report of the verdict files with hostile outputs on every record
//! is the report of the same files without them, byte for byte but for the files' sizes and
//! digests.

use crate::common::*;
use serde_json::{json, Value};
use std::path::Path;

/// Outputs meant to confuse a reader: a nested verdict, pipeline id or error, a text with
/// newlines, quotes, commas and CSV-looking lines, an array, a number, null, markup.
fn hostile(n: usize) -> Value {
    match n % 8 {
        0 => json!({"verdict": "FAIL", "pipeline_id": "someone-else", "error": "no"}),
        1 => json!("PASS\nverdict,pipeline_id\n\"x\",\"y\"\r\n{\"verdict\": \"FAIL\"}"),
        2 => json!([{"role": "assistant", "content": "FAIL", "tool_calls": [{"name": "x", "arguments": "{}"}]}]),
        3 => json!(12345678901234567890u64),
        4 => Value::Null,
        5 => json!("<script>alert(1)</script> \u{202e} é 😀"),
        6 => json!({"output": {"output": "deep"}, "output_truncated": true}),
        _ => json!(""),
    }
}

/// A CSV cell, quoted.
fn cell(text: &str) -> String {
    format!("\"{}\"", text.replace('"', "\"\""))
}

/// A record's line with `output` (and, on every third, `output_truncated`) put first, the rest
/// of its text as it is (numbers such as `1e400` or `1E16` stay as written).
fn with_output(line: &str, n: usize) -> String {
    let trimmed = line.trim_start();
    let Some(rest) = trimmed.strip_prefix('{') else {
        return line.to_owned(); // not a record: the same in both files
    };
    let mut head = format!("{{\"output\": {}", hostile(n));
    if n.is_multiple_of(3) {
        head.push_str(", \"output_truncated\": true");
    }
    if rest.trim_start().starts_with('}') {
        format!("{head}{rest}")
    } else {
        format!("{head}, {rest}")
    }
}

/// A JSONL verdict file's lines written in `format`, each record with an output when
/// `outputs`; `None` when the format cannot hold these records (a line that is not JSON for the
/// object form or CSV, which are built from the parsed records).
fn written(lines: &[String], format: &str, outputs: bool) -> Option<String> {
    let line = |n: usize, l: &String| if outputs { with_output(l, n) } else { l.clone() };
    match format {
        "jsonl" => {
            return Some(
                lines
                    .iter()
                    .enumerate()
                    .map(|(n, l)| format!("{}\n", line(n, l)))
                    .collect(),
            )
        }
        "array" => {
            return Some(format!(
                "[{}]",
                lines
                    .iter()
                    .enumerate()
                    .map(|(n, l)| line(n, l))
                    .collect::<Vec<_>>()
                    .join(",\n")
            ))
        }
        _ => {}
    }
    let records: Vec<Value> = lines
        .iter()
        .map(|l| serde_json::from_str::<Value>(l).ok().filter(Value::is_object))
        .collect::<Option<_>>()?;
    let text = |v: &Value| match v {
        Value::String(s) => s.clone(),
        Value::Null => String::new(),
        other => other.to_string(),
    };
    Some(match format {
        "object" => format!(
            "{{{}}}",
            records
                .iter()
                .enumerate()
                .map(|(n, r)| {
                    let mut value = r.clone();
                    let o = value.as_object_mut().unwrap();
                    let id = o.remove("pipeline_id").unwrap_or(Value::Null);
                    if outputs {
                        o.insert("output".into(), hostile(n));
                    }
                    format!("{}: {}", Value::String(text(&id)), value)
                })
                .collect::<Vec<_>>()
                .join(",\n")
        ),
        "csv" => {
            let mut out = String::from(if outputs {
                "pipeline_id,verdict,error,output\n"
            } else {
                "pipeline_id,verdict,error\n"
            });
            for (n, r) in records.iter().enumerate() {
                out.push_str(&format!(
                    "{},{},{}",
                    cell(&text(&r["pipeline_id"])),
                    cell(&text(&r["verdict"])),
                    cell(&text(&r["error"]))
                ));
                if outputs {
                    out.push_str(&format!(",{}", cell(&text(&hostile(n)))));
                }
                out.push('\n');
            }
            out
        }
        other => panic!("{other}"),
    })
}

/// The report of `evaluate` over the fixture's audit log with these verdict files (written as
/// `old.*` and `new.*` in `folder`), their sizes and digests replaced by placeholders.
fn report(fixture: &Path, folder: &Path, old: &str, new: &str, ext: &str) -> String {
    std::fs::create_dir_all(folder).unwrap();
    let (old_path, new_path) = (folder.join(format!("old.{ext}")), folder.join(format!("new.{ext}")));
    std::fs::write(&old_path, old).unwrap();
    std::fs::write(&new_path, new).unwrap();
    let policy = write(folder, "policy.json", r#"{"min_samples": 1, "max_samples": null}"#);
    let out = folder.join("report.json");
    let o = run(&[
        "evaluate",
        "--audit",
        &s(&fixture.join("audit.jsonl")),
        "--policy",
        &policy,
        "--old-verdicts",
        &s(&old_path),
        "--new-verdicts",
        &s(&new_path),
        "--out",
        &s(&out),
    ]);
    if o.status.code() == Some(1) {
        // A fixture whose verdict files are refused is refused the same with outputs (the
        // message names the file, line and column: the same records, the same place).
        let message = stderr(&o).replace(&s(folder), "FOLDER");
        if ext == "csv" {
            // A quoted CSV cell may hold line breaks (the outputs here do), so the same record
            // starts on a later line of the file: the line is the file's, as it should be.
            let at = message.find(" line ").map(|i| i + 6).unwrap_or(0);
            let end = message[at..].find(':').map(|j| at + j).unwrap_or(at);
            return format!("refused: {}N{}", &message[..at], &message[end..]);
        }
        return format!("refused: {message}");
    }
    assert!(matches!(o.status.code(), Some(0 | 3 | 4)), "{}", text(&o));
    let mut text = std::fs::read_to_string(&out).unwrap();
    use sha2::Digest;
    for bytes in [old.as_bytes(), new.as_bytes()] {
        text = text
            .replace(&hex::encode(sha2::Sha256::digest(bytes)), "DIGEST")
            .replace(&format!("\"bytes\": {},", bytes.len()), "\"bytes\": BYTES,");
    }
    text
}

#[test]
fn outputs_in_every_verdict_format_never_change_the_report() {
    let dir = tempdir();
    let mut compared = 0;
    for entry in std::fs::read_dir(parity_dir()).unwrap() {
        let fixture = entry.unwrap().path();
        let (old, new) = (fixture.join("old_verdicts.jsonl"), fixture.join("new_verdicts.jsonl"));
        if !old.exists() || !new.exists() {
            continue;
        }
        let name = fixture.file_name().unwrap().to_string_lossy().into_owned();
        let lines = |p: &Path| -> Vec<String> {
            std::fs::read_to_string(p)
                .unwrap()
                .lines()
                .filter(|l| !l.trim().is_empty())
                .map(str::to_owned)
                .collect()
        };
        let (old, new) = (lines(&old), lines(&new));
        for format in ["jsonl", "array", "object", "csv"] {
            let files = |outputs| Some((written(&old, format, outputs)?, written(&new, format, outputs)?));
            let (Some(plain), Some(with)) = (files(false), files(true)) else {
                continue;
            };
            let folder = dir.path().join(&name).join(format);
            let plain = report(&fixture, &folder.join("plain"), &plain.0, &plain.1, format);
            let with = report(&fixture, &folder.join("with"), &with.0, &with.1, format);
            assert!(
                plain == with,
                "{name} as {format}: the outputs changed the report:\n{}",
                if plain.starts_with("refused") || with.starts_with("refused") {
                    format!("{plain}\n{with}")
                } else {
                    String::new()
                }
            );
            compared += 1;
        }
    }
    assert!(compared >= 20, "{compared} comparisons");
}
