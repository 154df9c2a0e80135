//! The one sentence the Markdown and HTML reports say about a sequential decision (the report's
//! `sequential` object); nothing when the report has none.

use serde_json::Value;

/// `1234567` as `1,234,567`.
fn grouped(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// A bound to 3 decimals with a true minus sign.
fn bound(x: f64) -> String {
    let text = format!("{x:.3}");
    match text.strip_prefix('-') {
        Some(rest) if rest.chars().any(|c| c != '0' && c != '.') => format!("−{rest}"),
        Some(rest) => rest.to_owned(),
        None => text,
    }
}

/// The tolerance negated, as the reasons write it.
fn minus(tol: f64) -> String {
    if tol == 0.0 {
        "0".to_owned()
    } else {
        format!("−{tol}")
    }
}

/// E.g. `Sequential (betting confidence sequence): approved after 412 of 2,000 cases; lower
/// bound −0.031 > −0.05`; `None` when `q` is no sequential record.
pub fn sentence(q: &Value) -> Option<String> {
    let used = q.get("used")?.as_u64()?;
    let budget = q.get("budget")?.as_u64()?;
    let unit = match q.get("unit")?.as_str()? {
        "template" => "templates",
        _ => "cases",
    };
    let tol = q.get("tolerance")?.as_f64()?;
    let (low, high) = (q["lower"].as_f64(), q["upper"].as_f64());
    let of = format!("{} of {} {unit}", grouped(used), grouped(budget));
    let rest = match (q.get("stopped")?.as_str()?, low, high) {
        ("approved", Some(l), _) => format!("approved after {of}; lower bound {} > {}", bound(l), minus(tol)),
        ("blocked", _, Some(h)) => format!("blocked after {of}; upper bound {} < 0", bound(h)),
        (_, Some(l), Some(h)) => format!(
            "inconclusive after {of} (the budget); interval {} to {}, tolerance {tol}",
            bound(l),
            bound(h)
        ),
        _ => format!("inconclusive after {of} (the budget)"),
    };
    Some(format!("Sequential (betting confidence sequence): {rest}"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn one_sentence_per_stop() {
        let q = |stopped: &str, unit: &str| {
            json!({"unit": unit, "budget": 2000, "used": 412, "stopped": stopped, "tolerance": 0.05,
                   "lower": -0.0314, "upper": 0.02})
        };
        assert_eq!(
            sentence(&q("approved", "case")).unwrap(),
            "Sequential (betting confidence sequence): approved after 412 of 2,000 cases; lower bound −0.031 > −0.05"
        );
        assert_eq!(
            sentence(
                &json!({"unit": "case", "budget": 2000, "used": 144, "stopped": "blocked",
                "tolerance": 0.05, "lower": -0.2, "upper": -0.0121})
            )
            .unwrap(),
            "Sequential (betting confidence sequence): blocked after 144 of 2,000 cases; upper bound −0.012 < 0"
        );
        assert_eq!(
            sentence(&q("budget", "template")).unwrap(),
            "Sequential (betting confidence sequence): inconclusive after 412 of 2,000 templates (the budget); \
             interval −0.031 to 0.020, tolerance 0.05"
        );
        assert_eq!(sentence(&Value::Null), None);
        assert_eq!(grouped(1_234_567), "1,234,567");
        assert_eq!(grouped(999), "999");
    }
}
