//! Numbers written the way JavaScript writes them (`String(x)`, `x.toFixed(f)`,
//! `x.toPrecision(p)`, `Math.round(x)`), so that a summary rendered here reads exactly as the
//! page always showed it, and so that a canonical JSON number (RFC 8785, ECMAScript's
//! `Number::toString`; [`crate::attest::jcs`]) is the one JavaScript writes. Rust's own
//! `{:.N}` rounds an exact tie to even (`0.03125` → `0.0312`) where JavaScript rounds it up
//! (`0.0313`), and `{}` never switches to exponent notation.

/// How many decimal digits the exact expansion of a finite `x` has after the point.
fn fraction_digits(x: f64) -> usize {
    let bits = x.to_bits();
    let biased = ((bits >> 52) & 0x7ff) as i32;
    let mut mantissa = bits & ((1u64 << 52) - 1);
    let mut exp = if biased == 0 {
        -1074
    } else {
        mantissa |= 1u64 << 52;
        biased - 1075
    };
    if mantissa == 0 {
        return 0;
    }
    exp += mantissa.trailing_zeros() as i32;
    (-exp).max(0) as usize
}

/// The exact decimal expansion of a finite, non-negative `x`: integer digits and fraction digits.
fn exact(x: f64) -> (String, String) {
    let text = format!("{:.*}", fraction_digits(x), x);
    match text.split_once('.') {
        Some((int, frac)) => (int.to_owned(), frac.to_owned()),
        None => (text, String::new()),
    }
}

/// Adds one to a string of decimal digits; `true` when it carried out of the first digit.
fn increment(digits: &mut [u8]) -> bool {
    for d in digits.iter_mut().rev() {
        if *d == b'9' {
            *d = b'0';
        } else {
            *d += 1;
            return false;
        }
    }
    true
}

/// When `x` lies exactly halfway between two shortest digit strings that both read back as `x`,
/// JavaScript takes the even one (`0.50925445556640625` → `0.5092544555664062`) where Rust
/// may take the other: `digits` (significant digits, first at 10^(n−1)) is switched to the even one.
fn even_midpoint(x: f64, digits: &mut String, n: i64) {
    let (int, frac) = exact(x);
    let all = format!("{int}{frac}");
    let lead = all.bytes().take_while(|b| *b == b'0').count();
    let exact_digits = all[lead..].trim_end_matches('0');
    let k = digits.len();
    if exact_digits.len() != k + 1 || !exact_digits.ends_with('5') {
        return;
    }
    let mut lower = exact_digits.as_bytes()[..k].to_vec();
    let mut upper = lower.clone();
    if increment(&mut upper) {
        return;
    }
    let other = if digits.as_bytes() == lower.as_slice() {
        std::mem::take(&mut upper)
    } else {
        std::mem::take(&mut lower)
    };
    if other.last().is_some_and(|d| (d - b'0').is_multiple_of(2)) {
        let text = String::from_utf8(other).expect("digits");
        if format!("0.{text}e{n}").parse::<f64>() == Ok(x) {
            *digits = text;
        }
    }
}

/// `String(x)` for a JavaScript number.
pub fn js_string(x: f64) -> String {
    if x.is_nan() {
        return "NaN".into();
    }
    if x == 0.0 {
        return "0".into();
    }
    if x.is_infinite() {
        return if x > 0.0 { "Infinity" } else { "-Infinity" }.into();
    }
    if x < 0.0 {
        return format!("-{}", js_string(-x));
    }
    // The shortest digits that read back as x, as Rust finds them, then JavaScript's layout.
    let sci = format!("{x:e}");
    let (mantissa, exponent) = sci.split_once('e').expect("`{:e}` writes an exponent");
    let mut digits: String = mantissa.chars().filter(|c| *c != '.').collect();
    let n = exponent.parse::<i64>().expect("an integer exponent") + 1;
    even_midpoint(x, &mut digits, n);
    let k = digits.len() as i64;
    if k <= n && n <= 21 {
        format!("{digits}{}", "0".repeat((n - k) as usize))
    } else if 0 < n && n <= 21 {
        format!("{}.{}", &digits[..n as usize], &digits[n as usize..])
    } else if -6 < n && n <= 0 {
        format!("0.{}{digits}", "0".repeat((-n) as usize))
    } else {
        let e = n - 1;
        let sign = if e < 0 { '-' } else { '+' };
        let (first, rest) = digits.split_at(1);
        let rest = if rest.is_empty() {
            String::new()
        } else {
            format!(".{rest}")
        };
        format!("{first}{rest}e{sign}{}", e.abs())
    }
}

/// `x.toFixed(digits)`: exact ties round up (away from zero), `-0` is written `0`.
pub fn to_fixed(x: f64, digits: usize) -> String {
    if !x.is_finite() || x.abs() >= 1e21 {
        return js_string(x);
    }
    let (sign, x) = if x < 0.0 { ("-", -x) } else { ("", x.abs()) };
    let (int, frac) = exact(x);
    let mut all: Vec<u8> = int.bytes().collect();
    let mut frac: Vec<u8> = frac.into_bytes();
    let round_up = frac.len() > digits && frac[digits] >= b'5';
    frac.resize(digits, b'0');
    all.extend_from_slice(&frac);
    if round_up && increment(&mut all) {
        all.insert(0, b'1');
    }
    let int_len = all.len() - digits;
    let text = String::from_utf8(all).expect("digits");
    if digits == 0 {
        format!("{sign}{text}")
    } else {
        format!("{sign}{}.{}", &text[..int_len], &text[int_len..])
    }
}

/// `x.toPrecision(precision)` (1 ≤ precision ≤ 100): exact ties round up.
pub fn to_precision(x: f64, precision: usize) -> String {
    if !x.is_finite() {
        return js_string(x);
    }
    let p = precision.max(1);
    if x == 0.0 {
        return if p == 1 {
            "0".into()
        } else {
            format!("0.{}", "0".repeat(p - 1))
        };
    }
    let (sign, x) = if x < 0.0 { ("-", -x) } else { ("", x) };
    let (int, frac) = exact(x);
    // The significant digits and the decimal exponent of the first one.
    let all = format!("{int}{frac}");
    let lead = all.bytes().take_while(|b| *b == b'0').count();
    let mut e = int.len() as i64 - 1 - lead as i64;
    let significant = &all.as_bytes()[lead..];
    let mut n: Vec<u8> = significant.iter().take(p).copied().collect();
    n.resize(p, b'0');
    if significant.len() > p && significant[p] >= b'5' && increment(&mut n) {
        n.insert(0, b'1');
        n.truncate(p);
        e += 1;
    }
    let n = String::from_utf8(n).expect("digits");
    let text = if e < -6 || e >= p as i64 {
        let (first, rest) = n.split_at(1);
        let rest = if rest.is_empty() {
            String::new()
        } else {
            format!(".{rest}")
        };
        format!("{first}{rest}e{}{}", if e < 0 { '-' } else { '+' }, e.abs())
    } else if e == p as i64 - 1 {
        n
    } else if e >= 0 {
        format!("{}.{}", &n[..e as usize + 1], &n[e as usize + 1..])
    } else {
        format!("0.{}{n}", "0".repeat((-(e + 1)) as usize))
    };
    format!("{sign}{text}")
}

/// `Math.round(x)`: the nearest integer, ties toward +∞.
pub fn js_round(x: f64) -> f64 {
    let floor = x.floor();
    if x - floor >= 0.5 {
        floor + 1.0
    } else {
        floor
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn string_like_javascript() {
        // Each expectation is what `String(x)` prints in node.
        for (x, js) in [
            (0.0, "0"),
            (-0.0, "0"),
            (1.0, "1"),
            (0.05, "0.05"),
            (0.5239, "0.5239"),
            (0.7333333333333334, "0.7333333333333334"),
            (1e21, "1e+21"),
            (123456789012345680000.0, "123456789012345680000"),
            (0.000001, "0.000001"),
            (1e-7, "1e-7"),
            (1.5e-7, "1.5e-7"),
            (-2.5e-10, "-2.5e-10"),
            (12345678901234567890.0, "12345678901234567000"),
            (f64::NAN, "NaN"),
            (f64::INFINITY, "Infinity"),
            (5e-324, "5e-324"),
            // Halfway between two 16-digit strings: the even one.
            (66749.0 / 131072.0, "0.5092544555664062"),
            (9441.0 / 524288.0, "0.018007278442382812"),
        ] {
            assert_eq!(js_string(x), js, "{x:e}");
        }
    }

    #[test]
    fn fixed_rounds_exact_ties_up() {
        // What `x.toFixed(d)` prints in node.
        for (x, d, js) in [
            (0.03125, 4, "0.0313"),
            (0.03125 * 3.0, 4, "0.0938"),
            (12.25, 1, "12.3"),
            (0.5, 0, "1"),
            (2.5, 0, "3"),
            (1.005, 2, "1.00"),
            (78.95, 1, "79.0"),
            (99.95, 1, "100.0"),
            (9.9999, 2, "10.00"),
            (-0.0, 1, "0.0"),
            (-0.001, 1, "-0.0"),
            (-0.03125, 4, "-0.0313"),
            (0.0, 4, "0.0000"),
            (100.0, 1, "100.0"),
            (1e-300, 4, "0.0000"),
        ] {
            assert_eq!(to_fixed(x, d), js, "{x:e} to {d}");
        }
    }

    #[test]
    fn precision_like_javascript() {
        // What `x.toPrecision(3)` prints in node.
        for (x, js) in [
            (0.049, "0.0490"),
            (1.0, "1.00"),
            (0.0, "0.00"),
            (0.0009765625, "0.000977"),
            (0.00048828125, "0.000488"),
            (0.0001220703125, "0.000122"),
            (0.001225, "0.00122"),
            (0.125, "0.125"),
            (0.0625, "0.0625"),
            (0.99951171875, "1.00"),
            (1.2345e-7, "1.23e-7"),
            (9.995e-7, "9.99e-7"),
            (1234.5, "1.23e+3"),
            (123.5, "124"),
            (12.35, "12.3"),
            (2.0f64.powi(-30), "9.31e-10"),
        ] {
            assert_eq!(to_precision(x, 3), js, "{x:e}");
        }
    }

    #[test]
    fn six_thousand_numbers_as_node_prints_them() {
        // Written by node (tests/fixtures/ci/js-numbers.mjs).
        let table: Vec<(f64, String, String, String, String, f64)> =
            serde_json::from_str(include_str!("../../tests/fixtures/ci/js-numbers.json")).unwrap();
        assert_eq!(table.len(), 6000);
        for (x, fixed1, fixed4, precision3, string, round) in &table {
            assert_eq!(&to_fixed(*x, 1), fixed1, "{x:e}");
            assert_eq!(&to_fixed(*x, 4), fixed4, "{x:e}");
            assert_eq!(&to_precision(*x, 3), precision3, "{x:e}");
            assert_eq!(&js_string(*x), string, "{x:e}");
            assert_eq!(js_round(x * 100.0), *round, "{x:e}");
        }
    }

    #[test]
    fn round_like_math_round() {
        assert_eq!(js_round(94.5), 95.0);
        assert_eq!(js_round(-0.5), 0.0);
        assert_eq!(js_round(95.00000000000001), 95.0);
        assert_eq!(js_round(94.49999999999999), 94.0);
    }
}
