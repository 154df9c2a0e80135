//! Results must not depend on how the bytes are cut into chunks: random splits, 1-byte chunks,
//! cuts inside multi-byte characters and inside `\r\n` all give the same report.

use deploy_gate::audit::{AuditScanner, DEFAULT_MAX_LINE};
use deploy_gate::policy::{GatePolicy, TestSetPolicy};
use deploy_gate::report::{evaluate, GateInputs};
use deploy_gate::testset::build_from_memory;
use deploy_gate::verdicts::parse_verdicts;
use proptest::prelude::*;

fn fixture(name: &str) -> Vec<u8> {
    std::fs::read(crate::common::parity_dir().join(name)).unwrap()
}

/// A log with a BOM, CRLF endings, multi-byte text, an invalid UTF-8 line and a line cut short,
/// followed by a real fixture log and no final newline.
fn tricky_log() -> Vec<u8> {
    let mut log = b"\xEF\xBB\xBF".to_vec();
    log.extend_from_slice("{\"pipeline_id\":\"é-1\",\"stage_id\":\"s0\",\"stage_type\":\"llm\",\"input\":\"naïve 🚀 東京\",\"output\":\"ß\"}\r\n".as_bytes());
    log.extend_from_slice(b"{\"pipeline_id\":\"bad\",\"stage_id\":\"s0\",\"input\":\"\xC3\x28\"}\r\n");
    log.extend_from_slice(b"\r\n   \n{\"pipeline_id\":\"cut\",\"stage_id\"\n");
    log.extend_from_slice(
        "{\"pipeline_id\":\"é-1\",\"verdict\":\"pass\",\"is_complete\":true,\"error\":null}\r\n".as_bytes(),
    );
    log.extend_from_slice(&fixture("real-writer-shape/audit.jsonl"));
    log.extend_from_slice(&fixture("approved/audit.jsonl"));
    // Ids of both types with one text (`5`, `"5"`) and integers past 64 bits.
    log.extend_from_slice(&fixture("typed-ids/audit.jsonl"));
    log.extend_from_slice("{\"pipeline_id\":\"tail\",\"stage_id\":\"s\",\"input\":\"∑\"}".as_bytes());
    log
}

/// The whole report, with the audit pushed in the given chunk sizes (cycled).
fn report_with_chunks(log: &[u8], sizes: &[usize]) -> String {
    let policy = GatePolicy {
        test_set: TestSetPolicy {
            min_samples: 1,
            max_samples: Some(100),
            seed: 5,
        },
        ..GatePolicy::default()
    };
    let mut scanner = AuditScanner::new(policy.pass_verdicts.clone(), DEFAULT_MAX_LINE);
    scanner.begin_file("audit.jsonl");
    let mut at = 0;
    let mut i = 0;
    while at < log.len() {
        let n = sizes[i % sizes.len()].max(1).min(log.len() - at);
        scanner.push(&log[at..at + n]);
        at += n;
        i += 1;
    }
    report_of(&scanner.finish(), log, &policy)
}

/// The report and test set of an index of `log`, with the approved fixture's verdicts.
fn report_of(index: &deploy_gate::audit::AuditIndex, log: &[u8], policy: &GatePolicy) -> String {
    let ts = build_from_memory(index, &[log], &policy.test_set).unwrap();
    let old = parse_verdicts(
        deploy_gate::Role::OldVerdicts,
        "old.jsonl",
        &fixture("approved/old_verdicts.jsonl"),
    )
    .unwrap();
    let new = parse_verdicts(
        deploy_gate::Role::NewVerdicts,
        "new.jsonl",
        &fixture("approved/new_verdicts.jsonl"),
    )
    .unwrap();
    let inputs = GateInputs {
        audit: index,
        test_set: &ts,
        old_verdicts: &old,
        new_verdicts: &new,
        old_trajectories: None,
        new_trajectories: None,
    };
    evaluate(&inputs, policy).to_json() + &ts.to_jsonl()
}

#[test]
fn one_byte_chunks_give_the_same_report() {
    let log = tricky_log();
    let whole = report_with_chunks(&log, &[log.len()]);
    assert!(
        whole.contains("\"invalid_utf8\"") && whole.contains("\"not_json\""),
        "the tricky lines are seen"
    );
    assert!(whole.contains("naïve 🚀 東京"), "the BOM line's case is built");
    assert_eq!(report_with_chunks(&log, &[1]), whole);
}

#[test]
fn cuts_inside_crlf_and_multibyte_characters() {
    let log = tricky_log();
    let whole = report_with_chunks(&log, &[log.len()]);
    let crlf = log.windows(2).position(|w| w == b"\r\n").unwrap();
    let multibyte = log.iter().position(|&b| b >= 0xF0).unwrap();
    for cut in [crlf + 1, multibyte + 1, multibyte + 2, multibyte + 3, 1, 2, 3] {
        assert_eq!(report_with_chunks(&log, &[cut, log.len()]), whole, "cut at {cut}");
    }
}

#[test]
fn a_line_of_tens_of_megabytes_is_read() {
    let big = "x".repeat(24 << 20);
    let mut log =
        format!("{{\"pipeline_id\":\"big\",\"stage_id\":\"s\",\"input\":\"hi\",\"output\":\"{big}\"}}\n").into_bytes();
    log.extend_from_slice(b"{\"pipeline_id\":\"big\",\"verdict\":\"PASS\",\"is_complete\":true}\n");
    let whole = report_with_chunks(&log, &[log.len()]);
    assert_eq!(report_with_chunks(&log, &[65536, 7]), whole);
    assert!(whole.contains(&big));
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 24, ..ProptestConfig::default() })]
    #[test]
    fn random_splits_give_the_same_report(sizes in prop::collection::vec(1usize..5000, 1..40)) {
        let log = tricky_log();
        let whole = report_with_chunks(&log, &[log.len()]);
        prop_assert_eq!(report_with_chunks(&log, &sizes), whole);
    }
}

/// The report when the log is cut into segments at the given newline positions, each scanned
/// on its own and merged in file order (what the CLI does on several cores).
fn report_with_segments(log: &[u8], cuts: &[usize]) -> String {
    use deploy_gate::audit::{IndexBuilder, Segment};
    use deploy_gate::input::InputFile;
    let policy = GatePolicy {
        test_set: TestSetPolicy {
            min_samples: 1,
            max_samples: Some(100),
            seed: 5,
        },
        ..GatePolicy::default()
    };
    let mut builder = IndexBuilder::new();
    let no = builder.add_file(InputFile {
        role: deploy_gate::Role::Audit,
        name: "audit.jsonl".into(),
        bytes: 0,
        sha256: String::new(),
    });
    let mut starts: Vec<usize> = vec![0];
    for &c in cuts {
        // Move each cut to just after the next newline, as the CLI does.
        if let Some(p) = log[c.min(log.len())..].iter().position(|&b| b == b'\n') {
            let s = c + p + 1;
            if s < log.len() && s > *starts.last().unwrap() {
                starts.push(s);
            }
        }
    }
    let ends: Vec<usize> = starts.iter().skip(1).copied().chain([log.len()]).collect();
    let mut segments = Vec::new();
    for (&s, &e) in starts.iter().zip(&ends) {
        let mut seg = Segment::new(policy.pass_verdicts.clone(), DEFAULT_MAX_LINE, no, s as u64);
        for chunk in log[s..e].chunks(777) {
            seg.push(chunk);
        }
        seg.finish();
        segments.push(seg);
    }
    for seg in segments {
        builder.merge(seg);
    }
    let sha = {
        use sha2::Digest;
        hex::encode(sha2::Sha256::digest(log))
    };
    builder.set_file_digest(no, log.len() as u64, sha);
    report_of(&builder.finish(), log, &policy)
}

#[test]
fn segments_merged_in_order_give_the_sequential_report() {
    let log = tricky_log();
    let whole = report_with_chunks(&log, &[log.len()]);
    assert_eq!(report_with_segments(&log, &[]), whole);
    let n = log.len();
    assert_eq!(report_with_segments(&log, &[n / 2]), whole);
    assert_eq!(
        report_with_segments(&log, &[1, n / 7, n / 3, n / 2, 2 * n / 3, n - 10]),
        whole
    );
    let every_line: Vec<usize> = (0..n).step_by(97).collect();
    assert_eq!(report_with_segments(&log, &every_line), whole);
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 24, ..ProptestConfig::default() })]
    #[test]
    fn random_segment_splits_give_the_same_report(mut cuts in prop::collection::vec(0usize..1_600_000, 0..12)) {
        let log = tricky_log();
        cuts.sort_unstable();
        let whole = report_with_chunks(&log, &[log.len()]);
        prop_assert_eq!(report_with_segments(&log, &cuts), whole);
    }
}

/// The test set of `logs` (one stream of several files) with pass 2 fed each file's whole
/// stream in the given chunk sizes (cycled), or, with no sizes, just the ranges.
fn test_set_streamed(logs: &[&[u8]], sizes: &[usize], seed: u64) -> (String, Vec<String>) {
    use deploy_gate::testset::{TestSetBuilder, TO_END};
    let policy = TestSetPolicy {
        min_samples: 1,
        max_samples: Some(30),
        seed,
    };
    let files: Vec<(&str, &[u8])> = logs.iter().map(|l| ("audit.jsonl", *l)).collect();
    let index = deploy_gate::audit::scan_all(&files, GatePolicy::default().pass_verdicts);
    let mut builder = TestSetBuilder::new(&index, index.select(&policy));
    if sizes.is_empty() {
        for i in 0..builder.ranges().len() {
            let r = builder.ranges()[i];
            let log = logs[r.file as usize];
            let end = if r.end == TO_END { log.len() } else { r.end as usize };
            builder.push(i, &log[r.start as usize..end]).unwrap();
            builder.end_range(i).unwrap();
        }
    } else {
        let mut i = 0;
        for (no, log) in logs.iter().enumerate() {
            let mut at = 0;
            while at < log.len() {
                let n = sizes[i % sizes.len()].max(1).min(log.len() - at);
                builder.push_stream(no as u32, &log[at..at + n]).unwrap();
                at += n;
                i += 1;
            }
            builder.end_stream(no as u32).unwrap();
        }
    }
    let ts = builder.finish().unwrap();
    (ts.to_jsonl(), ts.warnings)
}

#[test]
fn the_whole_stream_in_one_chunk_gives_the_ranges_test_set() {
    let (a, b) = (tricky_log(), fixture("approved/audit.jsonl"));
    let ranges = test_set_streamed(&[&a, &b], &[], 1);
    assert!(!ranges.0.is_empty());
    assert_eq!(test_set_streamed(&[&a, &b], &[usize::MAX], 1), ranges);
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(24))]
    #[test]
    fn the_whole_stream_in_random_chunks_gives_the_ranges_test_set(
        sizes in prop::collection::vec(1usize..70_000, 1..30),
        seed in 0u64..4,
    ) {
        let (a, b) = (tricky_log(), fixture("real-writer-shape/audit.jsonl"));
        // A file split in two, so that pipelines span files (ranges to the end of a file).
        let cut = a.len() / 2;
        let logs: [&[u8]; 3] = [&a[..cut], &a[cut..], &b];
        prop_assert_eq!(test_set_streamed(&logs, &sizes, seed), test_set_streamed(&logs, &[], seed));
    }
}
