//! Verdict files in any of their formats (JSONL, JSON array, JSON object, CSV/TSV; the format
//! is detected from the content). Oracle: reading while keeping only some ids (what the CLI
//! does for a large file) gives the same counts (records, repeated ids, conflicts) as keeping all, and
//! the same record for every kept id.
#![no_main]

use deploy_gate::audit::PipelineId;
use deploy_gate::json::Scalar;
use deploy_gate::verdicts::{parse_verdicts, parse_verdicts_keeping};
use libfuzzer_sys::fuzz_target;
use std::borrow::Cow;
use std::collections::HashSet;

fuzz_target!(|bytes: &[u8]| {
    let all = parse_verdicts(deploy_gate::Role::OldVerdicts, "fuzz.jsonl", bytes);
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
