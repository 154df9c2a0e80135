//! The one sentence the Markdown and HTML reports say about a sequential decision (the report's
//! `sequential` object); nothing when the report has none.

use serde_json::Value;

use super::evidence::grouped;

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
pub(super) fn minus(tol: f64) -> String {
    if tol == 0.0 {
        "0".to_owned()
    } else {
        format!("−{tol}")
    }
}

/// E.g. `Sequential (betting confidence sequence): approved after 412 of 2,000 cases; lower
/// bound −0.031 > −0.05`; `None` when `q` is no sequential record.
pub fn sentence(q: &Value) -> Option<String> {
    Some(format!("Sequential (betting confidence sequence): {}", stop(q)?))
}

/// How the sequence stopped, e.g. `approved after 412 of 2,000 cases; lower bound −0.031 >
/// −0.05` (the sentence without its head; the CLI's summary line).
pub fn stop(q: &Value) -> Option<String> {
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
    Some(rest)
}

/// The title's end for an inconclusive sequential decision (instead of the fixed rule's "more
/// cases would settle it").
pub const TITLE_TAIL: &str = "the sequence can be continued";

/// What to do after a sequential decision that stopped at its budget (`None` for any other
/// stop, or no sequential record): continue the same sequence, not a fresh fixed-size count.
/// E.g. `The budget is spent (60 of 60 cases): to continue, evaluate again with a larger budget
/// (the same seed's order, the sequence picking up where it stopped, its error rate held).`
pub fn continuation(q: &Value) -> Option<String> {
    if q.get("stopped")?.as_str()? != "budget" {
        return None;
    }
    let used = q.get("used")?.as_u64()?;
    let budget = q.get("budget")?.as_u64()?;
    let unit = match q.get("unit")?.as_str()? {
        "template" => "template",
        _ => "case",
    };
    Some(if used >= budget {
        format!(
            "The budget is spent ({} of {} {unit}s): to continue, evaluate again with a larger budget \
             (the same seed's order, the sequence picking up where it stopped, its error rate held).",
            grouped(used),
            grouped(budget)
        )
    } else {
        format!(
            "Every {unit} answered was used ({} of a budget of {}): to continue, answer more of the test \
             set's cases and evaluate again (the same seed's order, its error rate held).",
            grouped(used),
            grouped(budget)
        )
    })
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
        assert_eq!(
            stop(&q("approved", "case")).unwrap(),
            "approved after 412 of 2,000 cases; lower bound −0.031 > −0.05"
        );
        assert_eq!(grouped(1_234_567), "1,234,567");
        assert_eq!(grouped(999), "999");
    }

    #[test]
    fn continued_not_settled_at_the_budget() {
        let q = |used: u64, budget: u64, stopped: &str, unit: &str| {
            json!({"unit": unit, "budget": budget, "used": used, "stopped": stopped, "tolerance": 0.05,
                   "lower": -0.2, "upper": 0.3})
        };
        assert_eq!(
            continuation(&q(2000, 2000, "budget", "case")).unwrap(),
            "The budget is spent (2,000 of 2,000 cases): to continue, evaluate again with a larger budget \
             (the same seed's order, the sequence picking up where it stopped, its error rate held)."
        );
        assert_eq!(
            continuation(&q(5, 20, "budget", "template")).unwrap(),
            "Every template answered was used (5 of a budget of 20): to continue, answer more of the test \
             set's cases and evaluate again (the same seed's order, its error rate held)."
        );
        assert_eq!(continuation(&q(412, 2000, "approved", "case")), None);
        assert_eq!(continuation(&q(144, 2000, "blocked", "case")), None);
        assert_eq!(continuation(&Value::Null), None);
    }
}
