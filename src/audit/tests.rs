use super::entry::Entry;
use super::wire::WIRE_MAGIC;
use super::*;
use crate::input::{InputFile, Role};
use crate::policy::PassSet;

fn scan(text: &str) -> AuditIndex {
    scan_all(&[("a.jsonl", text.as_bytes())], PassSet::default())
}

#[test]
fn real_writer_completion_is_a_completion_not_a_stage() {
    let idx = scan(concat!(
        r#"{"pipeline_id":"p","stage_id":"s0","stage_type":"llm","input":"tmpl","state_snapshot":{"input_text":"hi"}}"#,
        "\n",
        r#"{"pipeline_id":"p","stage_name":"__pipeline_complete__","stage_type":"output","verdict":"pass","is_complete":true,"error":null}"#,
    ));
    let s = idx.summary();
    assert_eq!((s.stage_entries, s.completion_entries, s.candidates), (1, 1, 1));
}

#[test]
fn stage_name_alone_marks_a_completion() {
    let idx =
        scan(r#"{"pipeline_id":"p","stage_name":"__pipeline_complete__","stage_type":"output","verdict":"PASS"}"#);
    assert_eq!(idx.summary().completion_entries, 1);
    assert_eq!(
        idx.summary().successful_completions,
        0,
        "is_complete missing is not success"
    );
}

#[test]
fn success_needs_true_no_error_and_a_pass_verdict() {
    let lines = [
        r#"{"pipeline_id":"a","is_complete":true,"error":null,"verdict":"Approve"}"#,
        r#"{"pipeline_id":"b","is_complete":1,"verdict":"PASS"}"#,
        r#"{"pipeline_id":"c","is_complete":true,"error":"max steps","verdict":"PASS"}"#,
        r#"{"pipeline_id":"d","is_complete":true,"verdict":"passed"}"#,
        r#"{"pipeline_id":"e","is_complete":true,"verdict":null}"#,
        r#"{"pipeline_id":"f","is_complete":true,"verdict":"complete"}"#,
    ];
    let idx = scan(&lines.join("\n"));
    assert_eq!(idx.summary().successful_completions, 2);
}

#[test]
fn skipped_lines_are_counted_by_reason_with_line_numbers() {
    let text = b"\n  \r\nnot json\n[1]\n{\"a\":1}\n{\"pipeline_id\":null}\n{\"pipeline_id\":[1]}\n{\"pipeline_id\":\"x\",\"foo\":1}\n{\"pipeline_id\":\"\xff\"}\n{\"pipeline_id\":\"p\",\"stage_id\":";
    let idx = scan_all(&[("a.jsonl", text)], PassSet::default());
    let s = idx.summary();
    assert_eq!(s.lines, 10);
    assert_eq!(s.blank_lines, 2);
    let count = |r: &str| s.skipped.get(r).map_or(0, |x| x.count);
    assert_eq!(count("not_json"), 2);
    assert_eq!(count("not_object"), 1);
    assert_eq!(count("no_pipeline_id"), 2);
    assert_eq!(count("bad_pipeline_id"), 1);
    assert_eq!(count("unrecognized"), 1);
    assert_eq!(count("invalid_utf8"), 1);
    assert_eq!(
        s.skipped["not_json"].first_lines[0],
        LineLocation {
            file: "a.jsonl".into(),
            line: 3
        }
    );
    assert_eq!(s.skipped["not_json"].first_lines[1].line, 10);
}

/// The integer `5` and the string `"5"` are two pipelines, as in the reference (`5 != "5"`),
/// each with its own stages and completion.
#[test]
fn ids_of_two_types_are_two_pipelines() {
    let idx = scan(concat!(
        "{\"pipeline_id\":5,\"stage_id\":\"s\",\"input\":\"x\"}\n",
        "{\"pipeline_id\":\"5\",\"stage_id\":\"s\",\"input\":\"y\"}\n",
        "{\"pipeline_id\":\"5\",\"stage_id\":\"t\"}\n",
        "{\"pipeline_id\":\"5\",\"verdict\":\"PASS\",\"is_complete\":true}\n",
        "{\"pipeline_id\":5,\"verdict\":\"PASS\",\"is_complete\":true}\n",
    ));
    let got: Vec<(String, u64, Option<u64>)> = idx
        .pipelines
        .list()
        .iter()
        .map(|p| (idx.pipelines.id(p).to_json(), p.stage_count(), p.success().map(|s| s.0)))
        .collect();
    assert_eq!(got, [("5".into(), 1, Some(1)), ("\"5\"".into(), 2, Some(0))]);
    assert_eq!(idx.summary().candidates, 2);
}

#[test]
fn integer_pipeline_ids_are_kept_as_integers() {
    let idx = scan(r#"{"pipeline_id":531386,"stage_id":"s","input":"x"}"#);
    assert_eq!(
        idx.pipelines.id(&idx.pipelines.list()[0]),
        PipelineId {
            text: "531386".into(),
            numeric: true
        }
    );
    assert_eq!(
        serde_json::to_string(&idx.pipelines.id(&idx.pipelines.list()[0])).unwrap(),
        "531386"
    );
    let idx = scan(r#"{"pipeline_id":0,"stage_id":"s"}"#);
    assert_eq!(idx.summary().skipped["no_pipeline_id"].count, 1);
}

#[test]
fn segments_survive_the_wire() {
    let text = concat!(
        "{\"pipeline_id\":\"a\",\"stage_id\":\"s\",\"input\":\"x\"}\nnot json\n{\"pipeline_id\":7,\"verdict\":\"PASS\",\"is_complete\":true}\n{\"pipeline_id\":\"a\",\"verdict\":\"PASS\",\"is_complete\":true}\n",
        "{\"pipeline_id\":\"7\",\"verdict\":\"PASS\",\"is_complete\":true}\n{\"pipeline_id\":-123456789012345678901234567890,\"stage_id\":\"s\"}\n",
    );
    let scan = |wire: bool| {
        let mut builder = IndexBuilder::new();
        let no = builder.add_file(InputFile {
            role: Role::Audit,
            name: "f".into(),
            bytes: 0,
            sha256: String::new(),
        });
        let mut seg = Segment::new(PassSet::default(), DEFAULT_MAX_LINE, no, 0);
        seg.push(text.as_bytes());
        seg.finish();
        let seg = if wire {
            Segment::from_bytes(&seg.to_bytes()).unwrap()
        } else {
            seg
        };
        builder.merge(seg);
        let idx = builder.finish();
        (
            idx.summary().clone(),
            idx.pipelines
                .list()
                .iter()
                .map(|p| {
                    (
                        idx.pipelines.id(p),
                        p.stage_count(),
                        p.first_stage(),
                        p.stages_end(),
                        p.has_input(),
                        p.success(),
                    )
                })
                .collect::<Vec<_>>(),
        )
    };
    assert_eq!(scan(true), scan(false));
    let ids: Vec<String> = scan(true).1.iter().map(|p| p.0.to_json()).collect();
    assert_eq!(ids, ["\"a\"", "7", "\"7\"", "-123456789012345678901234567890"]);
    assert!(Segment::from_bytes(b"DGS1\0").is_err());
    assert!(Segment::from_bytes(b"nope").is_err());
    // The header (magic, file, line limit, five counts, next rank), then a skip-reason count
    // of 2^32 - 1 with nothing after it.
    let mut huge = WIRE_MAGIC.to_vec();
    huge.extend_from_slice(&[0u8; 60]);
    huge.extend_from_slice(&u32::MAX.to_le_bytes());
    assert_eq!(
        Segment::from_bytes(&huge).err(),
        Some(WireError::CountTooLarge {
            count: u32::MAX,
            left: 0
        }),
        "a huge count is refused before allocating"
    );
    // The same count with a pipeline count behind it: the count is what is refused.
    let mut huge_pipelines = WIRE_MAGIC.to_vec();
    huge_pipelines.extend_from_slice(&[0u8; 60]);
    huge_pipelines.extend_from_slice(&0u32.to_le_bytes());
    huge_pipelines.extend_from_slice(&u32::MAX.to_le_bytes());
    assert_eq!(
        Segment::from_bytes(&huge_pipelines).err(),
        Some(WireError::CountTooLarge {
            count: u32::MAX,
            left: 0
        })
    );
    assert_eq!(Segment::from_bytes(b"DGS1\0").err(), Some(WireError::NotASegment));
}

/// Whether a line is a completion, a stage or neither: what pass 1, the verdict reader and
/// the role sniffer each answer today (one rule decides for all three).
#[test]
fn each_reader_gets_its_answer_from_the_one_rule() {
    use crate::sniff::{sniff, Kind as Sniffed};
    let cases: [(&str, Option<bool>, &str, Sniffed); 10] = [
        (
            r#"{"pipeline_id":"p","stage_id":"s"}"#,
            Some(false),
            "ignored",
            Sniffed::Audit,
        ),
        (
            r#"{"pipeline_id":"p","verdict":"PASS"}"#,
            Some(true),
            "record",
            Sniffed::Verdicts,
        ),
        (
            r#"{"pipeline_id":"p","stage_type":"output","verdict":"PASS"}"#,
            Some(false),
            "ignored",
            Sniffed::Audit,
        ),
        (
            r#"{"pipeline_id":"p","stage_type":"output","is_complete":false,"verdict":"PASS"}"#,
            Some(true),
            "record",
            Sniffed::Audit,
        ),
        // The sniffer reads keys, never values: `stage_name` alone does not make an audit line.
        (
            r#"{"pipeline_id":"p","stage_name":"__pipeline_complete__","verdict":"PASS"}"#,
            Some(true),
            "record",
            Sniffed::Verdicts,
        ),
        (
            r#"{"pipeline_id":"p","stage_name":"__pipeline_complete__","stage_id":"s","verdict":"PASS"}"#,
            Some(true),
            "record",
            Sniffed::Audit,
        ),
        (
            r#"{"pipeline_id":"p","is_complete":true}"#,
            Some(true),
            "refused",
            Sniffed::Audit,
        ),
        (
            r#"{"pipeline_id":"p","error":"boom"}"#,
            None,
            "record",
            Sniffed::Verdicts,
        ),
        // A repeated `stage_name`: pass 1 takes the last (as `json.loads` does), the
        // verdict reader any that names a completion.
        (
            r#"{"pipeline_id":"p","stage_name":"__pipeline_complete__","stage_name":"x","stage_id":"s","verdict":"PASS"}"#,
            Some(false),
            "record",
            Sniffed::Audit,
        ),
        (
            r#"{"pipeline_id":"p","stage_name":"x","stage_type":"llm","verdict":"PASS"}"#,
            Some(false),
            "ignored",
            Sniffed::Audit,
        ),
    ];
    for (line, completion, as_verdict, sniffed) in cases {
        let audit = match classify_line(Some(line)) {
            Ok(Entry {
                kind: Kind::Completion { .. },
                ..
            }) => Some(true),
            Ok(Entry {
                kind: Kind::Stage { .. },
                ..
            }) => Some(false),
            Err(SkipReason::Unrecognized) => None,
            Err(other) => panic!("{line}: {other:?}"),
        };
        assert_eq!(audit, completion, "pass 1: {line}");
        let verdicts = match crate::verdicts::parse_verdicts(Role::OldVerdicts, "v", line.as_bytes()) {
            Ok(v) if v.ignored_stage_entries == 1 && v.records == 0 => "ignored",
            Ok(v) if v.records == 1 => "record",
            Err(e) if e.message.contains("neither") => "refused",
            other => panic!("{line}: {:?}", other.map(|v| v.records)),
        };
        assert_eq!(verdicts, as_verdict, "verdicts: {line}");
        assert_eq!(sniff("log.jsonl", line.as_bytes()).kind, sniffed, "sniff: {line}");
    }
}

#[test]
fn files_are_hashed_and_sized() {
    let idx = scan_all(&[("x", b"abc"), ("y", b"")], PassSet::default());
    assert_eq!(
        idx.files()[0].sha256,
        "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
    );
    assert_eq!(idx.files()[1].bytes, 0);
    assert_eq!(idx.summary().files, 2);
}

/// The rule itself, every combination of marks: a completion mark wins, then a verdict without
/// stage keys, then stage keys.
#[test]
fn the_completion_rule_on_every_combination() {
    use super::entry::{EntryKind, Marks};
    for bits in 0u8..16 {
        let marks = Marks {
            is_complete_key: bits & 1 != 0,
            completion_name: bits & 2 != 0,
            stage_key: bits & 4 != 0,
        };
        let has_verdict = bits & 8 != 0;
        let want = if marks.is_complete_key || marks.completion_name {
            EntryKind::Completion
        } else if marks.stage_key {
            EntryKind::Stage
        } else if has_verdict {
            EntryKind::Completion
        } else {
            EntryKind::Unrecognized
        };
        assert_eq!(marks.kind(has_verdict), want, "{marks:?}, verdict {has_verdict}");
        assert_eq!(
            marks.audit_only(),
            marks.is_complete_key || marks.completion_name || marks.stage_key
        );
    }
}
