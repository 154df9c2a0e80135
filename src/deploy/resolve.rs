//! How the upstream bridge's loader (PyYAML's `safe_load`, YAML 1.1) reads scalars: which
//! keys are the same key, which values are empty or false, which tags it builds.

/// The YAML core schema's tag prefix (`!!`).
pub(crate) const CORE: &str = "tag:yaml.org,2002:";

/// The canonical identity of a scalar as PyYAML's `safe_load` constructs it: `null`, `n:<int>`
/// (ints, bools and integral floats, which Python's dict equality merges), `f:<float>`,
/// `s:<string>`, `merge` (`<<`), or `t:<tag>:<text>` for timestamps, binary and the rest.
pub(crate) fn scalar_key(value: &str, plain: bool, tag: Option<&str>) -> String {
    let kind = match tag {
        None if plain => resolve_plain(value),
        None | Some("!") => "str",
        Some(t) => t.strip_prefix(CORE).unwrap_or(t),
    };
    match kind {
        "str" => format!("s:{value}"),
        "null" => "null".to_owned(),
        "merge" => "merge".to_owned(),
        "bool" => match value.to_ascii_lowercase().as_str() {
            "yes" | "true" | "on" => "n:1".to_owned(),
            "no" | "false" | "off" => "n:0".to_owned(),
            _ => format!("t:bool:{value}"),
        },
        "int" => match parse_int(value) {
            Some(n) => format!("n:{n}"),
            None => format!("t:int:{value}"),
        },
        "float" => match parse_float(value) {
            Some(f) if f.is_finite() && f.fract() == 0.0 && f.abs() < 1e30 => format!("n:{}", f as i128),
            // NaN is never equal to itself: every NaN key is its own.
            Some(f) if f.is_nan() => format!("t:nan:{value}:{:p}", value as *const str),
            Some(f) => format!("f:{f:e}"),
            None => format!("t:float:{value}"),
        },
        other => format!("t:{other}:{value}"),
    }
}

/// The tag PyYAML's resolver (YAML 1.1) gives a plain scalar.
pub(crate) fn resolve_plain(v: &str) -> &'static str {
    if matches!(
        v,
        "yes"
            | "Yes"
            | "YES"
            | "no"
            | "No"
            | "NO"
            | "true"
            | "True"
            | "TRUE"
            | "false"
            | "False"
            | "FALSE"
            | "on"
            | "On"
            | "ON"
            | "off"
            | "Off"
            | "OFF"
    ) {
        return "bool";
    }
    if is_float_1_1(v) {
        return "float";
    }
    if is_int_1_1(v) {
        return "int";
    }
    match v {
        "<<" => "merge",
        "" | "~" | "null" | "Null" | "NULL" => "null",
        "=" => "value",
        _ if is_timestamp_1_1(v) => "timestamp",
        _ => "str",
    }
}

fn strip_sign(v: &str) -> (bool, &str) {
    match v.as_bytes().first() {
        Some(b'-') => (true, &v[1..]),
        Some(b'+') => (false, &v[1..]),
        _ => (false, v),
    }
}

fn all(s: &str, f: impl Fn(u8) -> bool) -> bool {
    s.bytes().all(f)
}

/// `:[0-5]?[0-9]` repeated at least once.
fn is_sexagesimal_tail(s: &str) -> bool {
    !s.is_empty()
        && s.split(':').skip(1).all(|p| {
            let b = p.as_bytes();
            match b.len() {
                1 => b[0].is_ascii_digit(),
                2 => (b'0'..=b'5').contains(&b[0]) && b[1].is_ascii_digit(),
                _ => false,
            }
        })
        && s.starts_with(':')
}

fn is_int_1_1(v: &str) -> bool {
    let (_, u) = strip_sign(v);
    let b = u.as_bytes();
    if let Some(r) = u.strip_prefix("0b") {
        return !r.is_empty() && all(r, |c| matches!(c, b'0' | b'1' | b'_'));
    }
    if let Some(r) = u.strip_prefix("0x") {
        return !r.is_empty() && all(r, |c| c.is_ascii_hexdigit() || c == b'_');
    }
    if u == "0" {
        return true;
    }
    if b.len() > 1 && b[0] == b'0' {
        return all(&u[1..], |c| matches!(c, b'0'..=b'7' | b'_'));
    }
    if b.first().is_some_and(|c| (b'1'..=b'9').contains(c)) {
        let head_len = u.find(':').unwrap_or(u.len());
        let (head, tail) = u.split_at(head_len);
        return all(head, |c| c.is_ascii_digit() || c == b'_') && (tail.is_empty() || is_sexagesimal_tail(tail));
    }
    false
}

fn is_float_1_1(v: &str) -> bool {
    let (_, u) = strip_sign(v);
    if matches!(u, ".inf" | ".Inf" | ".INF") {
        return true;
    }
    if matches!(v, ".nan" | ".NaN" | ".NAN") {
        return true;
    }
    // `[0-9][0-9_]*(:[0-5]?[0-9])+\.[0-9_]*`
    if let Some(dot) = u.find('.') {
        let (int, rest) = u.split_at(dot);
        let frac_exp = &rest[1..];
        if let Some(colon) = int.find(':') {
            let (head, tail) = int.split_at(colon);
            return head.as_bytes().first().is_some_and(u8::is_ascii_digit)
                && all(head, |c| c.is_ascii_digit() || c == b'_')
                && is_sexagesimal_tail(tail)
                && all(frac_exp, |c| c.is_ascii_digit() || c == b'_');
        }
        let (frac, exp) = match frac_exp.find(['e', 'E']) {
            Some(e) => (&frac_exp[..e], Some(&frac_exp[e + 1..])),
            None => (frac_exp, None),
        };
        let exp_ok = exp.is_none_or(|e| {
            let b = e.as_bytes();
            b.len() >= 2 && matches!(b[0], b'-' | b'+') && all(&e[1..], |c| c.is_ascii_digit())
        });
        if int.is_empty() {
            // `\.[0-9][0-9_]*…`, unsigned only
            return u.len() == v.len()
                && frac.as_bytes().first().is_some_and(u8::is_ascii_digit)
                && all(frac, |c| c.is_ascii_digit() || c == b'_')
                && exp_ok;
        }
        return int.as_bytes()[0].is_ascii_digit()
            && all(int, |c| c.is_ascii_digit() || c == b'_')
            && all(frac, |c| c.is_ascii_digit() || c == b'_')
            && exp_ok;
    }
    false
}

fn is_timestamp_1_1(v: &str) -> bool {
    let b = v.as_bytes();
    let digits = |s: &[u8]| s.iter().all(u8::is_ascii_digit);
    if b.len() == 10 && digits(&b[..4]) && b[4] == b'-' && digits(&b[5..7]) && b[7] == b'-' && digits(&b[8..]) {
        return true;
    }
    // The long form: YYYY-M-D(T| )H:MM:SS(.f)?( ?(Z|±H(:MM)?))?
    if b.len() < 14 || !digits(&b[..4]) || b[4] != b'-' {
        return false;
    }
    let rest = &v[5..];
    let take_digits = |s: &str, min: usize, max: usize| -> Option<usize> {
        let n = s.bytes().take_while(u8::is_ascii_digit).count();
        (n >= min && n <= max).then_some(n)
    };
    let mut s = rest;
    let Some(n) = take_digits(s, 1, 2) else { return false };
    s = &s[n..];
    let Some(s2) = s.strip_prefix('-') else { return false };
    s = s2;
    let Some(n) = take_digits(s, 1, 2) else { return false };
    s = &s[n..];
    if let Some(s2) = s.strip_prefix(['T', 't']) {
        s = s2;
    } else {
        let n = s.bytes().take_while(|c| matches!(c, b' ' | b'\t')).count();
        if n == 0 {
            return false;
        }
        s = &s[n..];
    }
    let Some(n) = take_digits(s, 1, 2) else { return false };
    s = &s[n..];
    for _ in 0..2 {
        let Some(s2) = s.strip_prefix(':') else { return false };
        if take_digits(s2, 2, 2).is_none() {
            return false;
        }
        s = &s2[2..];
    }
    if let Some(s2) = s.strip_prefix('.') {
        s = &s2[s2.bytes().take_while(u8::is_ascii_digit).count()..];
    }
    let s = s.trim_start_matches([' ', '\t']);
    if s.is_empty() || s == "Z" {
        return true;
    }
    let Some(s) = s.strip_prefix(['+', '-']) else {
        return false;
    };
    let Some(n) = take_digits(s, 1, 2) else { return false };
    let s = &s[n..];
    s.is_empty()
        || s.strip_prefix(':')
            .is_some_and(|m| m.len() == 2 && digits(m.as_bytes()))
}

/// PyYAML's `construct_yaml_int`.
pub(crate) fn parse_int(v: &str) -> Option<i128> {
    let v = v.replace('_', "");
    let (neg, u) = strip_sign(&v);
    let n = if u == "0" {
        0
    } else if let Some(r) = u.strip_prefix("0b") {
        i128::from_str_radix(r, 2).ok()?
    } else if let Some(r) = u.strip_prefix("0x") {
        i128::from_str_radix(r, 16).ok()?
    } else if u.starts_with('0') {
        i128::from_str_radix(u, 8).ok()?
    } else if u.contains(':') {
        u.split(':').try_fold(0i128, |acc, p| {
            acc.checked_mul(60)?.checked_add(p.parse::<i128>().ok()?)
        })?
    } else {
        u.parse().ok()?
    };
    Some(if neg { -n } else { n })
}

/// PyYAML's `construct_yaml_float`.
pub(crate) fn parse_float(v: &str) -> Option<f64> {
    let v = v.replace('_', "").to_ascii_lowercase();
    let (neg, u) = strip_sign(&v);
    let f = if u == ".inf" {
        f64::INFINITY
    } else if u == ".nan" {
        f64::NAN
    } else if u.contains(':') {
        u.split(':')
            .try_fold(0f64, |acc, p| Some(acc * 60.0 + p.parse::<f64>().ok()?))?
    } else {
        u.parse().ok()?
    };
    Some(if neg { -f } else { f })
}

/// The tags PyYAML's `SafeConstructor` builds; any other makes `safe_load` fail.
pub(crate) fn tag_supported(tag: &str) -> bool {
    tag == "!"
        || tag.strip_prefix(CORE).is_some_and(|s| {
            matches!(
                s,
                "null"
                    | "bool"
                    | "int"
                    | "float"
                    | "binary"
                    | "timestamp"
                    | "omap"
                    | "pairs"
                    | "set"
                    | "str"
                    | "seq"
                    | "map"
            )
        })
}
