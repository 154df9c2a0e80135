//! Trajectory-evaluation files (JSONL or a JSON array of results). Oracles: every composite is
//! in [0, 1] and the mean too; and a JSONL file that reads gives the same results as the JSON
//! array of its lines.
#![no_main]

use deploy_gate::trajectory::parse_trajectories;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|bytes: &[u8]| {
    let Ok(t) = parse_trajectories(deploy_gate::Role::OldTrajectories, "fuzz.jsonl", bytes) else {
        return;
    };
    for r in &t.results {
        assert!((0.0..=1.0).contains(&r.composite), "composite {}", r.composite);
    }
    if let Some(m) = t.mean() {
        assert!((0.0..=1.0).contains(&m), "mean {m}");
    }
    let body = bytes.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(bytes);
    if body.iter().find(|b| !b.is_ascii_whitespace()) != Some(&b'{') {
        return;
    }
    // The JSONL file's lines as one JSON array.
    let lines: Vec<&[u8]> = body
        .split(|&b| b == b'\n')
        .map(|l| l.strip_suffix(b"\r").unwrap_or(l))
        .filter(|l| !l.iter().all(u8::is_ascii_whitespace))
        .collect();
    let mut array = b"[".to_vec();
    for (i, l) in lines.iter().enumerate() {
        if i > 0 {
            array.push(b',');
        }
        array.extend_from_slice(l);
    }
    array.extend_from_slice(b"]\n");
    let a =
        parse_trajectories(deploy_gate::Role::OldTrajectories, "fuzz.json", &array).expect("the array of a JSONL file's lines reads");
    assert_eq!(a.results, t.results, "JSONL and array read differently");
    assert_eq!(a.skipped_without_judge, t.skipped_without_judge);
});
