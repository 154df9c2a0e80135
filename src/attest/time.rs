//! RFC 3339 timestamps ↔ Unix seconds (UTC), without a clock: the time is always an argument.
//!
//! Parsing is strict: the whole text must be an RFC 3339 §5.6 `date-time` that names a real
//! instant (a day the month has, an hour below 24, an offset of at most 23:59). It works on
//! bytes and never slices text, so no input can make it panic.

/// Why a text is not an RFC 3339 date-time.
#[derive(Debug, Clone, thiserror::Error, PartialEq, Eq)]
pub enum TimeError {
    /// The text does not have the shape `YYYY-MM-DDTHH:MM:SS[.fraction](Z|±HH:MM)`.
    #[error("`{text}` is not an RFC 3339 date-time (YYYY-MM-DDTHH:MM:SS[.frac](Z|±HH:MM)): {problem}")]
    Syntax {
        /// The text, shortened when long.
        text: String,
        /// What is wrong.
        problem: &'static str,
    },
    /// The text has the shape but names no real time (month 13, 31 February, hour 24, …).
    #[error("`{text}` is not a real time: {problem}")]
    Range {
        /// The text, shortened when long.
        text: String,
        /// What is out of range.
        problem: String,
    },
}

/// Days since 1970-01-01 of a proleptic Gregorian date (Howard Hinnant's algorithm).
fn days_from_civil(y: i64, m: i64, d: i64) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let doy = (153 * (m + if m > 2 { -3 } else { 9 }) + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146097 + doe - 719468
}

fn civil_from_days(z: i64) -> (i64, i64, i64) {
    let z = z + 719468;
    let era = z.div_euclid(146097);
    let doe = z - era * 146097;
    let yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
    let y = yoe + era * 400;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    (if m <= 2 { y + 1 } else { y }, m, d)
}

fn is_leap(y: i64) -> bool {
    y % 4 == 0 && (y % 100 != 0 || y % 400 == 0)
}

/// The number of days of a month (1–12) of a year.
fn days_in_month(y: i64, m: i64) -> i64 {
    match m {
        2 if is_leap(y) => 29,
        2 => 28,
        4 | 6 | 9 | 11 => 30,
        _ => 31,
    }
}

/// Formats Unix seconds as `YYYY-MM-DDTHH:MM:SSZ`.
pub fn format_rfc3339(unix: i64) -> String {
    let (days, secs) = (unix.div_euclid(86400), unix.rem_euclid(86400));
    let (y, m, d) = civil_from_days(days);
    format!(
        "{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}Z",
        secs / 3600,
        secs % 3600 / 60,
        secs % 60
    )
}

/// At most this many characters of a bad text are quoted in an error.
const QUOTED: usize = 64;

fn quoted(text: &str) -> String {
    match text.char_indices().nth(QUOTED) {
        Some((end, _)) => format!("{}…", &text[..end]),
        None => text.to_owned(),
    }
}

/// Parses an RFC 3339 (§5.6) `date-time` to Unix seconds.
///
/// `T` and `Z` may be lowercase (RFC 3339 §5.6 note); a fraction of a second has at least one
/// digit and is truncated; the offset is `Z` or `±HH:MM` with HH ≤ 23 and MM ≤ 59 (`-00:00`
/// is UTC). The day must exist in its month and year; the hour is 00–23 and the minute 00–59.
/// A second of 60 (a leap second) is accepted only where one can be inserted — 23:59:60 UTC on
/// 30 June or 31 December — and counts as 23:59:59, as Unix time has no leap seconds.
pub fn parse_rfc3339(text: &str) -> Result<i64, TimeError> {
    let syntax = |problem| TimeError::Syntax {
        text: quoted(text),
        problem,
    };
    let range = |problem: String| TimeError::Range {
        text: quoted(text),
        problem,
    };
    let b = text.as_bytes();
    // Fixed-width digits at a position; `None` unless all are ASCII digits.
    let digits = |at: usize, n: usize| -> Option<i64> {
        let field = b.get(at..at + n)?;
        field.iter().try_fold(0i64, |acc, &c| {
            c.is_ascii_digit().then(|| acc * 10 + i64::from(c - b'0'))
        })
    };
    let byte = |at: usize| b.get(at).copied();
    let (Some(y), Some(b'-'), Some(mo), Some(b'-'), Some(d)) =
        (digits(0, 4), byte(4), digits(5, 2), byte(7), digits(8, 2))
    else {
        return Err(syntax("the date is not YYYY-MM-DD"));
    };
    if !matches!(byte(10), Some(b'T' | b't')) {
        return Err(syntax("no `T` between the date and the time"));
    }
    let (Some(h), Some(b':'), Some(mi), Some(b':'), Some(s)) =
        (digits(11, 2), byte(13), digits(14, 2), byte(16), digits(17, 2))
    else {
        return Err(syntax("the time is not HH:MM:SS"));
    };
    let mut at = 19;
    if byte(at) == Some(b'.') {
        let n = b[at + 1..].iter().take_while(|c| c.is_ascii_digit()).count();
        if n == 0 {
            return Err(syntax("a `.` without fraction digits"));
        }
        at += 1 + n;
    }
    let offset = match &b[at..] {
        [b'Z' | b'z'] => 0,
        [sign @ (b'+' | b'-'), ..] => {
            let (Some(oh), Some(b':'), Some(om), true) =
                (digits(at + 1, 2), byte(at + 3), digits(at + 4, 2), b.len() == at + 6)
            else {
                return Err(syntax("the offset is not Z or ±HH:MM"));
            };
            if oh > 23 || om > 59 {
                return Err(range(format!("offset {oh:02}:{om:02} (at most 23:59)")));
            }
            let v = oh * 3600 + om * 60;
            if *sign == b'-' {
                -v
            } else {
                v
            }
        }
        [] => return Err(syntax("no offset (Z or ±HH:MM)")),
        _ => return Err(syntax("the offset is not Z or ±HH:MM")),
    };
    if !(1..=12).contains(&mo) {
        return Err(range(format!("month {mo:02}")));
    }
    if d < 1 || d > days_in_month(y, mo) {
        return Err(range(format!("day {d:02} of {y:04}-{mo:02}")));
    }
    if h > 23 {
        return Err(range(format!("hour {h:02}")));
    }
    if mi > 59 {
        return Err(range(format!("minute {mi:02}")));
    }
    let local = days_from_civil(y, mo, d) * 86400 + h * 3600 + mi * 60;
    let instant = match s {
        0..=59 => Ok(local + s - offset),
        60 => {
            // A leap second is the last second of a UTC day at the end of June or December.
            let utc = local + 59 - offset;
            let (_, um, ud) = civil_from_days(utc.div_euclid(86400));
            if utc.rem_euclid(86400) == 86399 && matches!((um, ud), (6, 30) | (12, 31)) {
                Ok(utc)
            } else {
                Err(range(
                    "second 60 outside a leap second (23:59:60 UTC on 30 June or 31 December)".into(),
                ))
            }
        }
        _ => Err(range(format!("second {s:02}"))),
    }?;
    // In UTC, too, the year has four digits (what an offset moves past 0000 or 9999 cannot be
    // written back as RFC 3339).
    if !(FIRST_INSTANT..=LAST_INSTANT).contains(&instant) {
        return Err(range("in UTC it falls outside the years 0000-9999".into()));
    }
    Ok(instant)
}

/// 0000-01-01T00:00:00Z and 9999-12-31T23:59:59Z, Unix seconds.
const FIRST_INSTANT: i64 = -62_167_219_200;
const LAST_INSTANT: i64 = 253_402_300_799;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_offset_that_moves_the_instant_past_the_four_digit_years_is_refused() {
        // Found by the timestamp fuzz target: year 0000 at +02:00 is year -1 in UTC.
        assert_eq!(parse_rfc3339("0000-01-01T00:00:00Z"), Ok(FIRST_INSTANT));
        assert_eq!(parse_rfc3339("9999-12-31T23:59:59Z"), Ok(LAST_INSTANT));
        for text in ["0000-01-01T00:00:03+02:00", "9999-12-31T23:00:00-02:00"] {
            assert!(matches!(parse_rfc3339(text), Err(TimeError::Range { .. })), "{text}");
        }
        assert_eq!(format_rfc3339(FIRST_INSTANT), "0000-01-01T00:00:00Z");
        assert_eq!(format_rfc3339(LAST_INSTANT), "9999-12-31T23:59:59Z");
    }

    #[test]
    fn round_trips_and_known_values() {
        assert_eq!(parse_rfc3339("1970-01-01T00:00:00Z"), Ok(0));
        assert_eq!(parse_rfc3339("2026-11-29T20:33:17Z"), Ok(1_795_984_397));
        assert_eq!(format_rfc3339(1_795_984_397), "2026-11-29T20:33:17Z");
        assert_eq!(parse_rfc3339("2000-02-29T12:00:00.123+02:00"), Ok(951_818_400));
        assert_eq!(parse_rfc3339("2000-02-29t12:00:00.123456789z"), Ok(951_825_600));
        assert_eq!(parse_rfc3339("2000-02-29T12:00:00-00:00"), Ok(951_825_600));
        assert_eq!(parse_rfc3339("2000-02-29T23:59:00+23:59"), Ok(951_782_400));
        assert_eq!(format_rfc3339(951_825_600), "2000-02-29T12:00:00Z");
        for t in [
            0i64,
            1,
            86399,
            951_782_400,
            4_102_444_800,
            -1,
            -62_167_219_200,
            253_402_300_799,
        ] {
            assert_eq!(parse_rfc3339(&format_rfc3339(t)), Ok(t));
        }
    }

    #[test]
    fn leap_seconds_only_where_they_can_be() {
        // 2016-12-31T23:59:60Z was a real one; it counts as 23:59:59.
        assert_eq!(
            parse_rfc3339("2016-12-31T23:59:60Z"),
            parse_rfc3339("2016-12-31T23:59:59Z")
        );
        assert_eq!(
            parse_rfc3339("2015-06-30T23:59:60Z"),
            parse_rfc3339("2015-06-30T23:59:59Z")
        );
        // The same instant in another offset.
        assert_eq!(
            parse_rfc3339("2017-01-01T00:59:60+01:00"),
            parse_rfc3339("2016-12-31T23:59:59Z")
        );
        for bad in [
            "2016-12-31T23:58:60Z",
            "2016-11-30T23:59:60Z",
            "2016-12-31T23:59:60+01:00",
        ] {
            assert!(matches!(parse_rfc3339(bad), Err(TimeError::Range { .. })), "{bad}");
        }
    }

    #[test]
    fn malformed_and_calendar_invalid_times_are_errors_never_panics() {
        for bad in [
            "",
            "2026-11-29",
            "2026-11-29T20:33:17",
            "2026-11-29T20:33:17.Z",
            "2026-11-29 20:33:17Z",
            "2026-11-29T20:33:17ZZ",
            "2026-11-29T20:33:17+01",
            "2026-11-29T20:33:17+0100",
            "2026-11-29T20:33:17+01:00:00",
            "2026-11-29T20:33:17 Z",
            " 2026-11-29T20:33:17Z",
            "+2026-11-29T20:33:17Z",
            "2026-1-29T20:33:17Z",
            "２０２６-11-29T20:33:17Z",
            "2026-11-30T07:23:55+0é:0",
            "2026-11-30T07:23:55+é:00",
            "2026-11-30T07:23:5é+00:00",
            "2026-11-30T07:23:55.é",
            "2026-11-30T07:23:55+00:0é",
            "2026-11-30T07:23:55\u{0}",
        ] {
            assert!(
                matches!(parse_rfc3339(bad), Err(TimeError::Syntax { .. })),
                "{bad}: {:?}",
                parse_rfc3339(bad)
            );
        }
        for bad in [
            "2026-13-01T00:00:00Z",
            "2026-00-01T00:00:00Z",
            "2026-02-31T00:00:00Z",
            "2026-02-29T00:00:00Z",
            "1900-02-29T00:00:00Z",
            "2026-04-31T00:00:00Z",
            "2026-01-00T00:00:00Z",
            "2026-01-32T00:00:00Z",
            "2026-11-29T24:00:00Z",
            "2026-11-29T23:60:00Z",
            "2026-11-29T23:59:61Z",
            "2026-11-29T23:59:99Z",
            "2026-11-29T20:33:17+99:99",
            "2026-11-29T20:33:17+24:00",
            "2026-11-29T20:33:17-00:60",
        ] {
            assert!(
                matches!(parse_rfc3339(bad), Err(TimeError::Range { .. })),
                "{bad}: {:?}",
                parse_rfc3339(bad)
            );
        }
        assert!(parse_rfc3339("2000-02-29T00:00:00Z").is_ok(), "2000 is a leap year");
        let long = format!("2026-11-30T07:23:55+00:00{}", "é".repeat(1000));
        let message = parse_rfc3339(&long).unwrap_err().to_string();
        assert!(
            message.len() < 300,
            "a long text is shortened in the message: {message}"
        );
    }
}

#[cfg(all(test, not(target_arch = "wasm32")))]
mod properties {
    use super::*;
    use proptest::prelude::*;

    /// The exact instant of valid parts, computed another way: whole days counted from a table
    /// of month lengths (no shared date arithmetic with the parser).
    fn reference(y: i64, mo: i64, d: i64, h: i64, mi: i64, s: i64, offset_minutes: i64) -> i64 {
        let mut days = 0i64;
        if y >= 1970 {
            for year in 1970..y {
                days += if is_leap(year) { 366 } else { 365 };
            }
        } else {
            for year in y..1970 {
                days -= if is_leap(year) { 366 } else { 365 };
            }
        }
        for month in 1..mo {
            days += days_in_month(y, month);
        }
        days += d - 1;
        days * 86400 + h * 3600 + mi * 60 + s - offset_minutes * 60
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(4000))]

        /// No input panics: any string at all.
        #[test]
        fn any_string_is_an_answer_not_a_panic(text in any::<String>()) {
            let _ = parse_rfc3339(&text);
        }

        /// Strings shaped like a date-time, with any characters (multi-byte ones too) in
        /// random places, never panic; whatever is accepted formats back to the same instant.
        #[test]
        fn near_misses_never_panic(
            base in (0i64..4_102_444_800).prop_map(format_rfc3339),
            edits in proptest::collection::vec((0usize..32, any::<char>(), 0u8..3), 0..4),
            offset in prop_oneof![Just(String::new()), "[+-][0-9é]{1,2}:[0-9é]{1,2}", "\\.[0-9]{0,3}[Zz+é-]?"],
        ) {
            let mut chars: Vec<char> = base.trim_end_matches('Z').chars().collect();
            let tail: Vec<char> = if offset.is_empty() { vec!['Z'] } else { offset.chars().collect() };
            chars.extend(tail);
            for (at, c, how) in edits {
                let at = at.min(chars.len());
                match how {
                    0 => chars.insert(at, c),
                    1 if at < chars.len() => { chars[at] = c; }
                    _ if at < chars.len() => { chars.remove(at); }
                    _ => {}
                }
            }
            let text: String = chars.into_iter().collect();
            if let Ok(t) = parse_rfc3339(&text) {
                prop_assert_eq!(parse_rfc3339(&format_rfc3339(t)), Ok(t));
            }
        }

        /// Every combination of two-digit fields (valid or not) is accepted exactly when it
        /// is a real time, and then gives the reference instant.
        #[test]
        fn fields_accepted_exactly_when_real(
            y in 0i64..=9999, mo in 0i64..=99, d in 0i64..=99, h in 0i64..=99, mi in 0i64..=99,
            s in 0i64..=59, oh in 0i64..=99, om in 0i64..=99, negative in any::<bool>(), frac in "(\\.[0-9]{1,12})?",
        ) {
            let sign = if negative { '-' } else { '+' };
            let text = format!("{y:04}-{mo:02}-{d:02}T{h:02}:{mi:02}:{s:02}{frac}{sign}{oh:02}:{om:02}");
            let real = (1..=12).contains(&mo) && d >= 1 && d <= days_in_month(y, mo.clamp(1, 12)) && h < 24 && mi < 60 && oh < 24 && om < 60;
            let got = parse_rfc3339(&text);
            prop_assert_eq!(got.is_ok(), real, "{} → {:?}", text, got);
            if real {
                let minutes = (oh * 60 + om) * if negative { -1 } else { 1 };
                prop_assert_eq!(got.unwrap(), reference(y, mo, d, h, mi, s, minutes));
            }
        }

        /// What we write, we read back.
        #[test]
        fn format_then_parse(t in -62_167_219_200i64..=253_402_300_799) {
            prop_assert_eq!(parse_rfc3339(&format_rfc3339(t)), Ok(t));
        }
    }
}
