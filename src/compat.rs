//! The reference implementation's numeric and string rules, reproduced exactly.

use std::borrow::Cow;

/// Python's `round(x, 4)`: the exact binary value rounded to 4 decimals, ties to even.
///
/// Rust's `{:.4}` formats the exact value with round-half-even, and parsing the result back
/// gives the nearest double, which is what CPython's `round` returns.
pub fn round4(x: f64) -> f64 {
    if !x.is_finite() {
        return x;
    }
    format!("{x:.4}").parse().unwrap_or(x)
}

/// Python's `str.upper()`: full Unicode upper-casing (`ß` → `SS`).
pub fn upper(s: &str) -> Cow<'_, str> {
    if s.bytes().all(|b| !b.is_ascii_lowercase() && b.is_ascii()) {
        Cow::Borrowed(s)
    } else if s.is_ascii() {
        Cow::Owned(s.to_ascii_uppercase())
    } else {
        Cow::Owned(s.to_uppercase())
    }
}

/// Python's `repr(x)` of a float: the shortest digits that read back as `x`, in fixed
/// notation when the decimal exponent is in `-4..16` (`0.0001`, `1e+16`, `1e-05`, `100.0`),
/// else scientific with a signed exponent of at least two digits; `inf`, `-inf`, `nan`.
pub fn py_float_repr(x: f64) -> String {
    if x.is_nan() {
        return "nan".into();
    }
    if x.is_infinite() {
        return if x > 0.0 { "inf" } else { "-inf" }.into();
    }
    // `{:e}` gives as few digits as read back as `x`; when several decimals of that length
    // do, Python's (David Gay's) takes the nearest to `x`, ties to even, which is `x`
    // correctly rounded to that length (`{:.N$e}` formats the exact value, ties to even)
    // unless that one reads back as another double.
    let shortest = format!("{:e}", x.abs());
    let len = shortest
        .split_once('e')
        .map_or(0, |(m, _)| m.len() - usize::from(m.len() > 1));
    let nearest = format!("{:.*e}", len.saturating_sub(1), x.abs());
    let sci = if nearest.parse::<f64>() == Ok(x.abs()) {
        nearest
    } else {
        shortest
    };
    let (mantissa, exp) = sci.split_once('e').expect("`{:e}` writes an exponent");
    let exp: i32 = exp.parse().expect("`{:e}` writes a decimal exponent");
    let digits: String = mantissa.chars().filter(|&c| c != '.').collect();
    let mut out = String::with_capacity(digits.len() + 8);
    if x.is_sign_negative() {
        out.push('-');
    }
    if (-4..16).contains(&exp) {
        if exp < 0 {
            out.push_str("0.");
            out.extend(std::iter::repeat_n('0', (-exp - 1) as usize));
            out.push_str(&digits);
        } else {
            let int_len = exp as usize + 1;
            if digits.len() <= int_len {
                out.push_str(&digits);
                out.extend(std::iter::repeat_n('0', int_len - digits.len()));
                out.push_str(".0");
            } else {
                out.push_str(&digits[..int_len]);
                out.push('.');
                out.push_str(&digits[int_len..]);
            }
        }
    } else {
        out.push_str(&digits[..1]);
        if digits.len() > 1 {
            out.push('.');
            out.push_str(&digits[1..]);
        }
        out.push_str(if exp < 0 { "e-" } else { "e+" });
        out.push_str(&format!("{:02}", exp.unsigned_abs()));
    }
    out
}

/// The reference's text of a JSON number, `str(v or "")` after Python's `json` read it from
/// `literal` (JSON number grammar): an integer in decimal at any size, a float as
/// [`py_float_repr`] of its correctly rounded value (`1e400` is `inf`), zero (`0`, `-0`,
/// `0.0`, `-0.0`, `1e-400`) as `""`, being falsy.
pub fn py_number_text(literal: &str) -> Cow<'_, str> {
    let digits = literal.strip_prefix('-').unwrap_or(literal);
    if digits.bytes().all(|b| b.is_ascii_digit()) {
        return if digits.bytes().all(|b| b == b'0') {
            Cow::Borrowed("")
        } else {
            Cow::Borrowed(literal)
        };
    }
    match literal.parse::<f64>() {
        // `0.0` and `-0.0` (and what underflows to them) are falsy.
        Ok(x) => {
            if x == 0.0 {
                Cow::Borrowed("")
            } else {
                Cow::Owned(py_float_repr(x))
            }
        }
        // Not a number literal: the caller checked the grammar, so this is not reached.
        Err(_) => Cow::Borrowed(literal),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round4_is_pythons_round() {
        // Values checked against CPython 3.11 `round(x, 4)`.
        assert_eq!(round4(1.0 / 32.0), 0.0312);
        assert_eq!(round4(3.0 / 32.0), 0.0938);
        assert_eq!(round4(5.0 / 32.0), 0.1562);
        assert_eq!(round4(-1.0 / 32.0), -0.0312);
        assert_eq!(round4(2.0 / 3.0), 0.6667);
        assert_eq!(round4(0.8182 - 0.75), 0.0682);
        assert_eq!(round4(99.0 / 121.0), 0.8182);
        assert_eq!(round4(0.0), 0.0);
        assert!(round4(-0.00001).is_sign_negative());
    }

    #[test]
    fn float_repr_is_pythons() {
        // Values checked against CPython 3.11 `repr(float)`.
        for (x, want) in [
            (1.0, "1.0"),
            (0.1, "0.1"),
            (1e16, "1e+16"),
            (9999999999999998.0, "9999999999999998.0"),
            (1e-4, "0.0001"),
            (1e-5, "1e-05"),
            (-2.5e-5, "-2.5e-05"),
            (1.5e300, "1.5e+300"),
            (5e-324, "5e-324"),
            (-0.0, "-0.0"),
            (f64::INFINITY, "inf"),
            // Exactly halfway between the two shortest decimals: the even one.
            (-810560520728366.0 - 0.25, "-810560520728366.2"),
        ] {
            assert_eq!(py_float_repr(x), want);
        }
        assert_eq!(py_number_text("-0"), "");
        assert_eq!(py_number_text("0e7"), "");
        assert_eq!(py_number_text("1e-400"), "");
        assert_eq!(py_number_text("1E2"), "100.0");
        assert_eq!(py_number_text("-12345678901234567890123"), "-12345678901234567890123");
    }

    #[test]
    fn upper_is_full_unicode() {
        assert_eq!(upper("straße"), "STRASSE");
        assert_eq!(upper("Approve"), "APPROVE");
        assert_eq!(upper("PASS"), "PASS");
        assert_eq!(upper("ǅ"), "Ǆ");
    }
}
