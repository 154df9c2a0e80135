//! RFC 3339 timestamps (`timeVerified`). Oracles: whatever parses formats back to a text that
//! parses to the same second; a text already in the canonical form (`YYYY-MM-DDTHH:MM:SSZ`,
//! no leap second) formats back to itself, so a date that is not in the calendar cannot parse;
//! and any second of the years 0001–9999 formats and parses back.
#![no_main]

use deploy_gate::attest::time::{format_rfc3339, parse_rfc3339};
use libfuzzer_sys::fuzz_target;

/// 0001-01-01T00:00:00Z and 9999-12-31T23:59:59Z.
const FIRST: i64 = -62_135_596_800;
const LAST: i64 = 253_402_300_799;

fuzz_target!(|data: &[u8]| {
    if let Some(head) = data.get(..8) {
        let t = i64::from_le_bytes(head.try_into().unwrap());
        let t = FIRST + t.rem_euclid(LAST - FIRST + 1);
        let text = format_rfc3339(t);
        assert_eq!(parse_rfc3339(&text).ok(), Some(t), "{t} formats as {text}");
    }
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let Ok(t) = parse_rfc3339(text) else {
        return;
    };
    let formatted = format_rfc3339(t);
    assert_eq!(parse_rfc3339(&formatted).ok(), Some(t), "{text:?} → {t} → {formatted}");
    let b = text.as_bytes();
    let canonical = b.len() == 20
        && b[10] == b'T'
        && b[19] == b'Z'
        && &b[17..19] != b"60"
        && b.iter()
            .enumerate()
            .all(|(i, c)| [4, 7, 10, 13, 16, 19].contains(&i) || c.is_ascii_digit());
    if canonical {
        assert_eq!(formatted, text, "{text:?} parsed as {t}, which is {formatted}");
    }
});
