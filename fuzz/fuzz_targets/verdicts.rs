//! Verdict files in any of their formats (JSONL, JSON array, JSON object, CSV/TSV; the format
//! is detected from the content). Oracles: reading while keeping only some ids (what the CLI
//! does for a large file) gives the same counts (records, repeated ids, conflicts) as keeping all, and
//! the same record for every kept id; and reading it a piece at a time (`VerdictStream`, what
//! the page does), cut every few bytes by the input's first byte, gives the whole-file reader's
//! result (or its JSONL error), or asks for the file whole — never a result the whole-file
//! reader does not give.
#![no_main]

use deploy_gate::audit::PipelineId;
use deploy_gate::json::Scalar;
use deploy_gate::verdicts::{parse_verdicts, parse_verdicts_keeping, VerdictStream, Verdicts};
use libfuzzer_sys::fuzz_target;
use std::borrow::Cow;
use std::collections::HashSet;

/// The file read a piece at a time: the head (its first non-blank line whole, as the page gives
/// it, and `extra` bytes more), then pieces of `step` bytes.
fn streamed(bytes: &[u8], step: usize, extra: usize) -> Result<Option<Verdicts>, deploy_gate::InputError> {
    let first = bytes.iter().position(|b| !b.is_ascii_whitespace()).unwrap_or(bytes.len());
    let line_end = bytes[first..].iter().position(|&b| b == b'\n').map_or(bytes.len(), |n| first + n + 1);
    let head = &bytes[..(line_end + extra).min(bytes.len())];
    let mut stream = VerdictStream::start(deploy_gate::Role::OldVerdicts, "fuzz.jsonl", head);
    for piece in bytes.chunks(step) {
        stream.feed(piece)?;
    }
    stream.finish()
}

fuzz_target!(|bytes: &[u8]| {
    let all = parse_verdicts(deploy_gate::Role::OldVerdicts, "fuzz.jsonl", bytes);
    let step = 1 + usize::from(bytes.first().copied().unwrap_or(0) % 29);
    match (&all, streamed(bytes, step, step * 3)) {
        (_, Ok(None)) => {}
        (Ok(a), Ok(Some(b))) => {
            assert_eq!(a.file, b.file, "the file read in pieces");
            assert_eq!(a.format, b.format);
            assert_eq!(
                (a.records, a.duplicates, a.len(), a.ignored_stage_entries, a.carries_outputs()),
                (b.records, b.duplicates, b.len(), b.ignored_stage_entries, b.carries_outputs()),
                "counts read in pieces"
            );
            assert_eq!(a.conflicting, b.conflicting, "conflicts read in pieces");
            for id in String::from_utf8_lossy(bytes).split(|c: char| "\"{}[],:\t\r\n ".contains(c)) {
                let Ok(pid) = PipelineId::from_scalar(&Scalar::Str(Cow::Borrowed(id))) else {
                    continue;
                };
                assert_eq!(a.get(&pid), b.get(&pid), "the record of {id:?} read in pieces");
                assert_eq!(a.output_for(&pid, false), b.output_for(&pid, false), "the answer of {id:?}");
            }
        }
        (Err(a), Err(b)) => assert_eq!(a.to_string(), b.to_string(), "the error read in pieces"),
        (a, b) => panic!("read in pieces: {:?} vs {:?}", a.as_ref().map(|_| ()), b.map(|v| v.is_some())),
    }
    // The ids to keep: every other id that could be in the file, by a cheap rule over the
    // candidate strings (split on JSON/CSV punctuation).
    let text = String::from_utf8_lossy(bytes);
    let candidates: HashSet<String> = text
        .split(|c: char| "\"{}[],:\t\r\n ".contains(c))
        .filter(|s| !s.is_empty())
        .map(str::to_owned)
        .collect();
    let keep: HashSet<String> = candidates.iter().filter(|s| s.len() % 2 == 0).cloned().collect();
    let some = parse_verdicts_keeping(
        deploy_gate::Role::OldVerdicts,
        "fuzz.jsonl",
        bytes,
        keep.iter().map(|s| std::sync::Arc::from(s.as_str())).collect(),
    );
    match (&all, &some) {
        (Ok(a), Ok(s)) => {
            assert_eq!(a.format, s.format);
            assert_eq!(a.records, s.records, "records");
            assert_eq!(a.duplicates, s.duplicates, "repeated ids");
            assert_eq!(a.len(), s.len(), "distinct ids");
            assert_eq!(a.ignored_stage_entries, s.ignored_stage_entries);
            let (mut ca, mut cs) = (a.conflicting.clone(), s.conflicting.clone());
            ca.sort();
            cs.sort();
            assert_eq!(ca, cs, "conflicting ids");
            for id in &candidates {
                let Ok(pid) = PipelineId::from_scalar(&Scalar::Str(Cow::Borrowed(id))) else {
                    continue;
                };
                if keep.contains(id) {
                    assert_eq!(a.get(&pid), s.get(&pid), "the record of kept id {id:?}");
                } else {
                    assert_eq!(s.get(&pid), None, "id {id:?} was not to be kept");
                }
            }
        }
        (Err(a), Err(s)) => assert_eq!(a.to_string(), s.to_string()),
        _ => panic!(
            "keeping some ids changed the outcome: {:?} vs {:?}",
            all.map(|_| ()),
            some.map(|_| ())
        ),
    }
});
