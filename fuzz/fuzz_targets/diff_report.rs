//! A side of a diff from arbitrary bytes (a report, or an envelope verified with the fixed key).
//! Oracles: whatever reads compares with itself to no change at all (every case in common, no
//! flip, no policy or input change, the same decision), its diff JSON is JSON and the same bytes
//! twice, and a report reads the same through `read_document` and `read_report`.
#![no_main]

#[path = "../common/attest.rs"]
mod attest;

use deploy_gate::attest::Limits;
use deploy_gate::diff::{diff, read_document, read_report, DiffError, Source, Trust};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|bytes: &[u8]| {
    let keys = [attest::key().verifying_key()];
    let trust = Trust {
        keys: &keys,
        threshold: 1,
        limits: Limits::default(),
    };
    let Ok(side) = read_document("f", bytes, Some(&trust)) else {
        return;
    };
    if side.source == Source::Report {
        assert_eq!(read_report("f", bytes).ok().as_ref(), Some(&side), "the two readers agree");
    }
    match diff(&side, &side) {
        Ok(d) => {
            assert!(!d.changed());
            assert_eq!(d.cases.common as usize, side.cases.len());
            assert!(d.cases.flips.is_empty() && d.cases.only_before.is_empty() && d.cases.only_after.is_empty());
            assert_eq!(d.cases.counts, Default::default());
            assert!(d.policy.is_empty());
            assert!(d.inputs.iter().all(|i| i.same == i.before_sha256.is_some()));
            let json = d.to_json();
            assert!(serde_json::from_str::<serde_json::Value>(&json).is_ok());
            assert_eq!(json, diff(&side, &side).unwrap().to_json());
            let _ = deploy_gate::render::diff::markdown::diff_markdown(&d);
            let _ = deploy_gate::render::diff::html::diff_html(&d);
            let _ = deploy_gate::render::diff::junit::diff_junit(&d);
        }
        Err(e) => assert!(matches!(e.error, DiffError::DuplicateCase { .. })),
    }
});
