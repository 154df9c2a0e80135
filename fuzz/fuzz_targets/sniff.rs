//! Format sniffing (the page's drop zone guesses a file's role from its name and first bytes).
//! The first input line is the file name, the rest the head. Oracles: the role is exactly what
//! the kind and side say; and for line-oriented content (a first non-blank byte `{`, JSONL)
//! the guess is a vote of the first 50 lines, so cutting the head after them changes nothing.
#![no_main]

use deploy_gate::sniff::{sniff, Kind};
use deploy_gate::Side;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let (name, head) = match data.iter().position(|&b| b == b'\n') {
        Some(i) => (String::from_utf8_lossy(&data[..i]).into_owned(), &data[i + 1..]),
        None => ("drop.jsonl".to_owned(), data),
    };
    let guess = sniff(&name, head);
    let role = match (guess.kind, guess.side) {
        (Kind::Audit, _) => Some("audit"),
        (Kind::Verdicts, Some(Side::Old)) => Some("old_verdicts"),
        (Kind::Verdicts, Some(Side::New)) => Some("new_verdicts"),
        (Kind::Trajectories, Some(Side::Old)) => Some("old_trajectories"),
        (Kind::Trajectories, Some(Side::New)) => Some("new_trajectories"),
        _ => None,
    };
    assert_eq!(guess.role.map(deploy_gate::Role::as_str), role);
    let body = head.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(head);
    if let Some(first) = body.iter().position(|b| !b.is_ascii_whitespace()) {
        if body[first] == b'{' && !name.to_lowercase().ends_with(".gz") {
            let end = body[first..]
                .iter()
                .enumerate()
                .filter(|&(_, &b)| b == b'\n')
                .nth(49)
                .map(|(i, _)| first + i + 1);
            if let Some(end) = end {
                assert_eq!(
                    sniff(&name, &body[..end]),
                    guess,
                    "the bytes after the first 50 lines changed the guess"
                );
            }
        }
    }
});
