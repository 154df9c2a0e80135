//! A whole audit log (many lines): the index and the test set must not depend on how the bytes
//! are read. Three readings are compared: the file pushed at once; pushed in small chunks; cut
//! at line starts into segments that are scanned separately, sent through the segment wire
//! format (encode → decode → encode gives the same bytes) and merged, as the page's scan
//! workers do. The input's first byte picks the chunk size, the cuts and the line limit.
#![no_main]

use deploy_gate::audit::{AuditIndex, AuditScanner, IndexBuilder, Segment, DEFAULT_MAX_LINE};
use deploy_gate::input::InputFile;
use deploy_gate::policy::{PassSet, TestSetPolicy};
use deploy_gate::testset::build_from_memory;
use libfuzzer_sys::fuzz_target;
use sha2::{Digest, Sha256};

fn scanned(log: &[u8], max_line: usize, chunk: usize) -> AuditIndex {
    let mut scanner = AuditScanner::new(PassSet::default(), max_line);
    scanner.begin_file("audit.jsonl");
    for piece in log.chunks(chunk.max(1)) {
        scanner.push(piece);
    }
    scanner.finish()
}

fn segmented(log: &[u8], max_line: usize, every: usize, chunk: usize) -> AuditIndex {
    // Cut after every `every`-th newline.
    let mut starts = vec![0usize];
    let mut seen = 0;
    for (i, &b) in log.iter().enumerate() {
        if b == b'\n' {
            seen += 1;
            if seen % every == 0 && i + 1 < log.len() {
                starts.push(i + 1);
            }
        }
    }
    let mut builder = IndexBuilder::new();
    let file = builder.add_file(InputFile {
        role: deploy_gate::Role::Audit,
        name: "audit.jsonl".into(),
        bytes: 0,
        sha256: String::new(),
    });
    builder.set_file_digest(file, log.len() as u64, hex::encode(Sha256::digest(log)));
    for (n, &start) in starts.iter().enumerate() {
        let end = starts.get(n + 1).copied().unwrap_or(log.len());
        let mut segment = Segment::new(PassSet::default(), max_line, file, start as u64);
        for piece in log[start..end].chunks(chunk.max(1)) {
            segment.push(piece);
        }
        segment.finish();
        let wire = segment.to_bytes();
        let decoded = Segment::from_bytes(&wire).expect("a segment's own bytes decode");
        assert_eq!(decoded.to_bytes(), wire, "encode → decode → encode changed the bytes");
        builder.merge(decoded);
    }
    builder.finish()
}

/// What must be the same: the summary, the files and the whole test set (or its error).
fn observed(index: &AuditIndex, log: &[u8]) -> String {
    let policy = TestSetPolicy {
        min_samples: 1,
        max_samples: None,
        seed: 5,
    };
    let test_set = build_from_memory(index, &[log], &policy).map(|t| t.to_jsonl());
    format!("{:?}\n{:?}\n{:?}", index.summary(), index.files(), test_set)
}

fuzz_target!(|log: &[u8]| {
    let b = log.first().copied().unwrap_or(0) as usize;
    // A small line limit now and then, so lines over the limit are exercised too.
    let max_line = if b & 1 == 1 { 64 + b } else { DEFAULT_MAX_LINE };
    let whole = observed(&scanned(log, max_line, usize::MAX), log);
    let chunked = observed(&scanned(log, max_line, 1 + (b >> 1) % 13), log);
    assert_eq!(whole, chunked, "chunked scanning differs");
    let parts = observed(&segmented(log, max_line, 1 + (b >> 4) % 4, 1 + (b >> 2) % 7), log);
    assert_eq!(whole, parts, "segmented scanning differs");
});
