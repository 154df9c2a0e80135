//! Where a refused verdict or trajectory file is wrong: every format against every kind of
//! error, each message asserted whole (the file, its role, the line and, where it helps, the
//! column); then the same through the CLI, whose standard error names the file's path.

use crate::common::{run, stderr, tempdir, text, write};
use deploy_gate::{parse_trajectories, parse_verdicts, Role};

/// One refused file: what it is, its bytes, and the whole message expected for it.
struct Refused {
    what: &'static str,
    bytes: &'static [u8],
    message: &'static str,
}

const fn refused(what: &'static str, bytes: &'static [u8], message: &'static str) -> Refused {
    Refused { what, bytes, message }
}

/// Verdict files, read as `v` (new_verdicts). Columns count bytes from 1 on the line (a BOM at
/// the start of the file is not counted).
const VERDICTS: &[Refused] = &[
    // JSONL
    refused(
        "jsonl: invalid UTF-8",
        b"{\"pipeline_id\":\"a\",\"verdict\":\"P\"}\n{\"pipeline_id\":\"b\",\"verdict\":\"\xff\"}\n",
        "v (new_verdicts) line 2, column 31: invalid UTF-8 (byte 0xff)",
    ),
    refused(
        "jsonl: a syntax error",
        b"{\"pipeline_id\":\"a\",\"verdict\":\"P\"}\n{\"pipeline_id\":\"b\" \"verdict\":\"P\"}\n",
        "v (new_verdicts) line 2, column 20: not valid JSON: expected `,` or `}`",
    ),
    refused(
        "jsonl: a truncated last line",
        b"{\"pipeline_id\":\"a\",\"verdict\":\"P\"}\n{\"pipeline_id\":\"b\",\"verd",
        "v (new_verdicts) line 2, column 24: not valid JSON: EOF while parsing a string",
    ),
    refused(
        "jsonl: not an object",
        b"{\"pipeline_id\":\"a\",\"verdict\":\"P\"}\n[\"b\", \"P\"]\n",
        "v (new_verdicts) line 2: not a JSON object",
    ),
    refused(
        "jsonl: an id of the wrong type",
        b"{\"pipeline_id\":\"a\",\"verdict\":\"P\"}\n{\"verdict\":\"P\",\"pipeline_id\":true}\n",
        "v (new_verdicts) line 2, column 30: pipeline_id is true, expected a non-empty string or an integer other than 0",
    ),
    refused(
        "jsonl: a float id",
        b"{\"pipeline_id\":5.5,\"verdict\":\"P\"}\n",
        "v (new_verdicts) line 1, column 16: pipeline_id is a number with a fraction or an exponent, expected a non-empty string or an integer other than 0",
    ),
    refused(
        "jsonl: the last of a repeated id is the one read",
        b"{\"pipeline_id\":\"a\",\"verdict\":\"P\",\"pipeline_id\":0}\n",
        "v (new_verdicts) line 1, column 48: pipeline_id is 0, expected a non-empty string or an integer other than 0",
    ),
    refused(
        "jsonl: no id",
        b"{\"pipeline_id\":\"a\",\"verdict\":\"P\"}\n\n{\"verdict\":\"P\"}\n",
        "v (new_verdicts) line 3: no pipeline_id",
    ),
    refused(
        "jsonl: neither a verdict nor an error",
        b"{\"pipeline_id\":\"a\",\"verdict\":\"P\"}\r\n{\"pipeline_id\":\"b\",\"error\":null}\r\n",
        "v (new_verdicts) line 2: record has neither a verdict nor an error",
    ),
    refused(
        "jsonl: a number out of range",
        b"{\"pipeline_id\":\"a\",\"verdict\":\"P\",\"error\":1e400}\n",
        "v (new_verdicts) line 1, column 46: not valid JSON: number out of range",
    ),
    refused(
        "jsonl: after a BOM, columns start after it",
        b"\xEF\xBB\xBF{\"pipeline_id\":\"a\",\"verdict\":\"\xC3\"}\n",
        "v (new_verdicts) line 1, column 31: invalid UTF-8 (byte 0xc3)",
    ),
    refused(
        "jsonl: a BOM inside the file",
        b"{\"pipeline_id\":\"a\",\"verdict\":\"P\"}\n\xEF\xBB\xBF{\"pipeline_id\":\"b\",\"verdict\":\"P\"}\n",
        "v (new_verdicts) line 2, column 1: not valid JSON: expected value",
    ),
    // JSON array
    refused(
        "array: invalid UTF-8",
        b"[\n {\"pipeline_id\": \"a\", \"verdict\": \"P\"},\n {\"pipeline_id\": \"b\", \"verdict\": \"\xff\"}\n]\n",
        "v (new_verdicts) line 3, column 35: invalid UTF-8 (byte 0xff)",
    ),
    refused(
        "array: a syntax error",
        b"[\n {\"pipeline_id\": \"a\", \"verdict\": \"P\"}\n {\"pipeline_id\": \"b\", \"verdict\": \"P\"}\n]\n",
        "v (new_verdicts) line 3, column 2: not a JSON array of verdict records: expected `,` or `]`",
    ),
    refused(
        "array: truncated",
        b"[\n {\"pipeline_id\": \"a\", \"verdict\": \"P\"},\n",
        "v (new_verdicts) line 3, column 1: not a JSON array of verdict records: EOF while parsing a value",
    ),
    refused(
        "array: an element that is not an object",
        b"[{\"pipeline_id\": \"a\", \"verdict\": \"P\"},\n  3]",
        "v (new_verdicts) line 2, column 3: element 1: array element is not a JSON object",
    ),
    refused(
        "array: an element's id of the wrong type",
        b"[{\"pipeline_id\": \"a\", \"verdict\": \"P\"},\n {\"verdict\": \"P\",\n  \"pipeline_id\": [1]}]",
        "v (new_verdicts) line 3, column 18: element 1: pipeline_id is an array or object, expected a non-empty string or an integer other than 0",
    ),
    refused(
        "array: an element without an id",
        b"[{\"pipeline_id\": \"a\", \"verdict\": \"P\"}, {\"verdict\": \"P\"}]",
        "v (new_verdicts) line 1, column 40: element 1: no pipeline_id",
    ),
    refused(
        "array: an element with a number out of range",
        b"[\n{\"pipeline_id\": \"a\", \"verdict\": \"P\", \"error\": -1e999}]",
        "v (new_verdicts) line 2, column 52: element 0: not valid JSON: number out of range",
    ),
    refused(
        "array: characters after it",
        b"[{\"pipeline_id\": \"a\", \"verdict\": \"P\"}]\n]\n",
        "v (new_verdicts) line 2, column 1: not a JSON array of verdict records: trailing characters",
    ),
    refused(
        "array: after a BOM",
        b"\xEF\xBB\xBF[{\"pipeline_id\": \"a\", \"verdict\": \"P\"},]",
        "v (new_verdicts) line 1, column 39: not a JSON array of verdict records: trailing comma",
    ),
    // JSON object
    refused(
        "object: invalid UTF-8",
        b"{\n  \"a\": \"PASS\",\n  \"b\": \"FA\xffL\"\n}\n",
        "v (new_verdicts) line 3, column 11: invalid UTF-8 (byte 0xff)",
    ),
    refused(
        "object: a syntax error",
        b"{\n  \"a\": \"PASS\",\n  \"b\" \"FAIL\"\n}\n",
        "v (new_verdicts) line 3, column 7: not JSONL, nor a JSON object of verdicts: expected `:`",
    ),
    refused(
        "object: truncated",
        b"{\n  \"a\": \"PASS\",\n  \"b\": \"FAIL\"",
        "v (new_verdicts) line 3, column 13: not JSONL, nor a JSON object of verdicts: EOF while parsing an object",
    ),
    refused(
        "object: an empty id",
        b"{\n  \"a\": \"PASS\",\n  \"\": \"FAIL\"\n}\n",
        "v (new_verdicts) line 3, column 7: an empty pipeline id",
    ),
    refused(
        "object: a value object with neither a verdict nor an error",
        b"{\"a\": \"PASS\",\n \"b\": {\"latency\": 3}}",
        "v (new_verdicts) line 2, column 7: pipeline b: the object has neither a verdict nor an error",
    ),
    refused(
        "object: characters after it",
        b"{\"a\": \"PASS\", \"b\": \"FAIL\"} x",
        "v (new_verdicts) line 1, column 28: not JSONL, nor a JSON object of verdicts: trailing characters",
    ),
    // CSV and TSV
    refused(
        "csv: invalid UTF-8",
        b"pipeline_id,verdict\na,PASS\nb,FA\xffL\n",
        "v (new_verdicts) line 3, column 5: invalid UTF-8 (byte 0xff)",
    ),
    refused(
        "csv: invalid UTF-8 in a quoted cell over two lines",
        b"pipeline_id,verdict\na,\"PA\nS\xc3S\"\n",
        "v (new_verdicts) line 3, column 2: invalid UTF-8 (byte 0xc3)",
    ),
    refused(
        "csv: an empty id",
        b"pipeline_id,verdict\r\na,PASS\r\n ,FAIL\r\n",
        "v (new_verdicts) line 3: empty pipeline_id",
    ),
    refused(
        "csv: a row of the wrong width",
        b"pipeline_id,verdict\na,PASS\nb,FAIL,extra\n",
        "v (new_verdicts) line 3: a row of 3 fields, where the header has 2",
    ),
    refused(
        "csv: no pipeline_id column",
        b"id,verdict\na,PASS\n",
        "v (new_verdicts) line 1: not a verdict file: no JSON, and no `pipeline_id` column in a CSV/TSV header",
    ),
    refused(
        "csv: no verdict column",
        b"\xEF\xBB\xBFpipeline_id,score\na,1\n",
        "v (new_verdicts) line 1: the header has no `verdict` (or `error`) column",
    ),
    refused(
        "csv: a UTF-16 file is not UTF-8 at its first byte",
        b"\xff\xfep\x00i\x00\n\x00",
        "v (new_verdicts) line 1, column 1: invalid UTF-8 (byte 0xff)",
    ),
    refused(
        "tsv: invalid UTF-8 in the header",
        b"pipeline_id\tverd\xe9ct\na\tPASS\n",
        "v (new_verdicts) line 1, column 17: invalid UTF-8 (byte 0xe9)",
    ),
    refused(
        "tsv: a row of the wrong width",
        b"pipeline_id\tverdict\na\tPASS\nb\n",
        "v (new_verdicts) line 3: a row of 1 fields, where the header has 2",
    ),
];

/// Trajectory files, read as `t` (old_trajectories).
const TRAJECTORIES: &[Refused] = &[
    refused(
        "jsonl: invalid UTF-8",
        b"{\"overall_judge_score\": 0.5}\n{\"overall_judge_score\": 0.5, \"trajectory_id\": \"\xfe\"}\n",
        "t (old_trajectories) line 2, column 48: invalid UTF-8 (byte 0xfe)",
    ),
    refused(
        "jsonl: a syntax error",
        b"{\"overall_judge_score\": 0.5}\n{\"overall_judge_score\" 0.5}\n",
        "t (old_trajectories) line 2, column 24: not valid JSON: expected `:`",
    ),
    refused(
        "jsonl: truncated",
        b"{\"overall_judge_score\": 0.5}\n{\"overall_judge_score\": 0.",
        "t (old_trajectories) line 2, column 26: not valid JSON: EOF while parsing a value",
    ),
    refused(
        "jsonl: not an object",
        b"{\"overall_judge_score\": 0.5}\n[0.5]\n",
        "t (old_trajectories) line 2: not a JSON object",
    ),
    refused(
        "jsonl: a non-numeric metric",
        b"{\"overall_judge_score\": 0.5}\r\n{\"overall_judge_score\": 0.5, \"tac_score\": \"high\"}\r\n",
        "t (old_trajectories) line 2, column 43: tac_score is a string, expected a number",
    ),
    refused(
        "jsonl: a metric that is an array",
        b"{\"lcf_score\": [1], \"overall_judge_score\": 0.5}\n",
        "t (old_trajectories) line 1, column 15: lcf_score is an array or object, expected a number",
    ),
    refused(
        "jsonl: a boolean metric after a numeric one of the same name",
        b"{\"egs_score\": 1, \"egs_score\": true}\n",
        "t (old_trajectories) line 1, column 31: egs_score is a boolean, expected a number",
    ),
    refused(
        "array: invalid UTF-8",
        b"[\n {\"overall_judge_score\": 0.5},\n {\"trajectory_id\": \"\xff\"}\n]",
        "t (old_trajectories) line 3, column 21: invalid UTF-8 (byte 0xff)",
    ),
    refused(
        "array: a syntax error",
        b"[\n {\"overall_judge_score\": 0.5}\n {\"overall_judge_score\": 0.5}\n]",
        "t (old_trajectories) line 3, column 2: not a JSON array of results: expected `,` or `]`",
    ),
    refused(
        "array: truncated",
        b"[\n {\"overall_judge_score\": 0.5},\n {\"overall_judge_score\": 0.5",
        "t (old_trajectories) line 3, column 28: not a JSON array of results: EOF while parsing an object",
    ),
    refused(
        "array: an element's non-numeric metric",
        b"[\n {\"overall_judge_score\": 0.5},\n {\"overall_judge_score\": 0.5,\n  \"arr_score\": \"0.1\"}\n]",
        "t (old_trajectories) line 4, column 16: element 1: arr_score is a string, expected a number",
    ),
    refused(
        "array: an element that is not an object",
        b"[{\"overall_judge_score\": 0.5}, 0.5]",
        "t (old_trajectories) line 1, column 32: element 1: not a JSON object",
    ),
    refused(
        "array: after a BOM",
        b"\xEF\xBB\xBF[{\"overall_judge_score\": 0.5}] [",
        "t (old_trajectories) line 1, column 32: not a JSON array of results: trailing characters",
    ),
];

#[test]
fn every_refused_verdict_file_names_its_line_and_column() {
    let mut wrong = Vec::new();
    for case in VERDICTS {
        match parse_verdicts(Role::NewVerdicts, "v", case.bytes) {
            Ok(_) => wrong.push(format!("{}: read, expected `{}`", case.what, case.message)),
            Err(e) if e.to_string() != case.message => {
                wrong.push(format!("{}:\n  want `{}`\n  got  `{e}`", case.what, case.message))
            }
            Err(e) => assert!(e.line.is_some(), "{}: no line", case.what),
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}

#[test]
fn every_refused_trajectory_file_names_its_line_and_column() {
    let mut wrong = Vec::new();
    for case in TRAJECTORIES {
        match parse_trajectories(Role::OldTrajectories, "t", case.bytes) {
            Ok(_) => wrong.push(format!("{}: read, expected `{}`", case.what, case.message)),
            Err(e) if e.to_string() != case.message => {
                wrong.push(format!("{}:\n  want `{}`\n  got  `{e}`", case.what, case.message))
            }
            Err(e) => assert!(e.line.is_some(), "{}: no line", case.what),
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}

/// What is not refused: repeated keys (the last wins, as in Python's `json.loads`), a BOM at
/// the start, CRLF line ends, blank lines, a last line without a newline.
#[test]
fn repeated_keys_a_bom_and_crlf_are_read() {
    let files: &[&[u8]] = &[
        b"{\"pipeline_id\":\"a\",\"verdict\":\"FAIL\",\"verdict\":\"PASS\"}\n",
        b"\xEF\xBB\xBF{\"pipeline_id\":\"a\",\"verdict\":\"PASS\"}\r\n\r\n",
        b"[{\"pipeline_id\":\"a\",\"verdict\":\"PASS\",\"pipeline_id\":\"a\"}]",
        b"\xEF\xBB\xBF{\"a\": \"FAIL\", \"a\": \"PASS\"}",
        b"\xEF\xBB\xBFpipeline_id,verdict\r\na,PASS",
    ];
    for bytes in files {
        let v = parse_verdicts(Role::NewVerdicts, "v", bytes).unwrap_or_else(|e| panic!("{e}"));
        let id = deploy_gate::audit::PipelineId {
            text: "a".into(),
            numeric: false,
        };
        assert_eq!(
            v.get(&id).and_then(|r| r.verdict.as_deref()),
            Some("PASS"),
            "{:?}",
            v.format
        );
    }
    let t = parse_trajectories(
        Role::OldTrajectories,
        "t",
        b"\xEF\xBB\xBF{\"overall_judge_score\": 0.1, \"overall_judge_score\": 0.5}\r\n",
    )
    .unwrap();
    assert_eq!(t.mean(), Some(0.1));
}

fn small_audit(dir: &std::path::Path) -> String {
    let mut text = String::new();
    for i in 0..3 {
        text += &format!("{{\"pipeline_id\":\"p{i}\",\"stage_id\":\"s\",\"stage_type\":\"llm\",\"input\":\"in\"}}\n");
        text += &format!("{{\"pipeline_id\":\"p{i}\",\"template_id\":\"t\",\"verdict\":\"PASS\",\"is_complete\":true,\"error\":null}}\n");
    }
    write(dir, "audit.jsonl", &text)
}

/// The CLI's standard error names the file by its path, its role, the line and the column, for
/// a verdict file in each format and a trajectory file in each; the exit code is 1.
#[test]
fn the_cli_names_the_path_line_and_column_of_a_refused_file() {
    let dir = tempdir();
    let audit = small_audit(dir.path());
    let good = write(
        dir.path(),
        "good.csv",
        "pipeline_id,verdict\np0,PASS\np1,PASS\np2,PASS\n",
    );
    let files: [(&str, &[u8], &str, &str); 6] = [
        (
            "new.jsonl",
            b"{\"pipeline_id\":\"p0\",\"verdict\":\"PASS\"}\n{\"pipeline_id\":\"p1\",\"verdict\":\n",
            "--new-verdicts",
            "(new_verdicts) line 2, column 30: not valid JSON: EOF while parsing a value",
        ),
        (
            "new.json",
            b"[\n{\"pipeline_id\": \"p0\", \"verdict\": \"PASS\"},\n{\"pipeline_id\": \"p1\", \"verdict\": \"PA\xffSS\"}]",
            "--new-verdicts",
            "(new_verdicts) line 3, column 37: invalid UTF-8 (byte 0xff)",
        ),
        (
            "new-map.json",
            b"{\"p0\": \"PASS\",\n \"p1\": \"\xc3(\"}",
            "--new-verdicts",
            "(new_verdicts) line 2, column 9: invalid UTF-8 (byte 0xc3)",
        ),
        (
            "new.tsv",
            b"pipeline_id\tverdict\np0\tPASS\np1\tPASS\tPASS\n",
            "--new-verdicts",
            "(new_verdicts) line 3: a row of 3 fields, where the header has 2",
        ),
        (
            "old-traj.jsonl",
            b"{\"overall_judge_score\":0.5}\n{\"overall_judge_score\":0.5,\"tac_score\":\"x\"}\n",
            "--old-trajectories",
            "(old_trajectories) line 2, column 40: tac_score is a string, expected a number",
        ),
        (
            "old-traj.json",
            b"[{\"overall_judge_score\":0.5},\n {\"overall_judge_score\":{}}]",
            "--old-trajectories",
            "(old_trajectories) line 2, column 25: element 1: overall_judge_score is an array or object, expected a number",
        ),
    ];
    for (name, bytes, flag, want) in files {
        let path = dir.path().join(name);
        std::fs::write(&path, bytes).unwrap();
        let path = path.display().to_string();
        let mut args = vec!["evaluate", "--audit", &audit, "--old-verdicts", &good];
        match flag {
            "--new-verdicts" => args.extend(["--new-verdicts", &path]),
            _ => args.extend(["--new-verdicts", &good, flag, &path, "--new-trajectories", &path]),
        }
        let out = run(&args);
        assert_eq!(out.status.code(), Some(1), "{name}: {}", text(&out));
        let err = stderr(&out);
        assert!(err.contains(&format!("{path} {want}")), "{name}: {err}");
    }
}
