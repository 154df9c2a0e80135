//! The one sentence the Markdown and HTML reports say about a sequential decision (the report's
//! `sequential` object); nothing when the report has none.

use serde_json::Value;
use std::fmt::Write as _;

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

/// A chart coordinate: at most two decimals, no trailing zeros (as the HTML report's charts).
fn co(x: f64) -> String {
    let s = format!("{x:.2}");
    let s = s.trim_end_matches('0').trim_end_matches('.');
    if s == "-0" {
        "0".into()
    } else {
        s.to_string()
    }
}

/// The chart's frame, shared with the page's `sequenceChart` (www/charts.js): the plot's left,
/// right, top and bottom edges in a 420 × 170 view box.
const X0: f64 = 40.0;
const X1: f64 = 360.0;
const Y0: f64 = 10.0;
const Y1: f64 = 140.0;

/// The confidence sequence as an inline SVG (the page's `sequenceChart`): the lower and upper
/// bounds over the units used, lines at −tolerance and 0, and a marker where it stopped; styled
/// by the report's classes and `style` attributes only (the report's stylesheet is unchanged).
/// `None` without a sequential record or before any look.
pub fn chart(q: &Value) -> Option<String> {
    let nums =
        |k: &str| -> Option<Vec<f64>> { q.get("looks")?.get(k)?.as_array()?.iter().map(Value::as_f64).collect() };
    let (n, lower, upper) = (nums("n")?, nums("lower")?, nums("upper")?);
    if n.is_empty() || n.len() != lower.len() || n.len() != upper.len() {
        return None;
    }
    let used = q.get("used")?.as_u64()? as f64;
    let budget = q.get("budget")?.as_u64()? as f64;
    let tol = q.get("tolerance")?.as_f64()?;
    let stopped = q.get("stopped")?.as_str()?;
    let units = match q.get("unit")?.as_str()? {
        "template" => "templates",
        _ => "cases",
    };
    let (lf, uf) = (q["lower"].as_f64().unwrap_or(-1.0), q["upper"].as_f64().unwrap_or(1.0));
    let xmax = used.max(budget.min(5.0 * used)).max(1.0);
    let span = (uf - lf).max(3.0 * tol).max(0.1);
    let ylo = (lf.min(-tol) - span / 2.0).max(-1.0);
    let yhi = (uf.max(0.0) + span / 2.0).min(1.0).max(ylo + 0.01);
    let x = |v: f64| co(X0 + v / xmax * (X1 - X0));
    let y = |v: f64| co(Y1 - (v.clamp(ylo, yhi) - ylo) / (yhi - ylo) * (Y1 - Y0));
    let line = |vals: &[f64]| {
        n.iter()
            .zip(vals)
            .map(|(&a, &b)| format!("{},{}", x(a), y(b)))
            .collect::<Vec<_>>()
            .join(" ")
    };
    let (lo_pts, hi_pts) = (line(&lower), line(&upper));
    let band: Vec<String> = n
        .iter()
        .zip(&upper)
        .map(|(&a, &b)| format!("{},{}", x(a), y(b)))
        .chain(n.iter().zip(&lower).rev().map(|(&a, &b)| format!("{},{}", x(a), y(b))))
        .collect();
    let sentence = sentence(q)?;
    let stop_at = match stopped {
        "blocked" => uf,
        _ => lf,
    };
    let mut s = String::new();
    let _ = write!(
        s,
        "<svg xmlns=\"http://www.w3.org/2000/svg\" viewBox=\"0 0 420 170\" role=\"img\" class=\"chart\" data-testid=\"sequential-chart\">\
         <title>Confidence sequence for the change in pass rate (new − old) against the {units} used</title><desc>{}</desc>\
         <polygon points=\"{}\" style=\"fill:var(--new);fill-opacity:.15\"/>\
         <line x1=\"{X0}\" x2=\"{X1}\" y1=\"{z}\" y2=\"{z}\" class=\"axis\"/>\
         <line x1=\"{X0}\" x2=\"{X1}\" y1=\"{t}\" y2=\"{t}\" style=\"stroke:var(--bad);stroke-width:1;stroke-dasharray:4 3\"/>\
         <polyline points=\"{lo_pts}\" data-bound=\"lower\" style=\"fill:none;stroke:var(--new);stroke-width:1.5\"/>\
         <polyline points=\"{hi_pts}\" data-bound=\"upper\" style=\"fill:none;stroke:var(--new);stroke-width:1.5\"/>\
         <g data-testid=\"sequential-stop\" data-n=\"{}\"><title>{}</title>\
         <line x1=\"{sx}\" x2=\"{sx}\" y1=\"{Y0}\" y2=\"{Y1}\" style=\"stroke:var(--fg);stroke-width:1;stroke-dasharray:2 2\"/>\
         <circle cx=\"{sx}\" cy=\"{}\" r=\"4\" style=\"fill:var(--fg)\"/></g>\
         <text x=\"{}\" y=\"{}\" class=\"value\" text-anchor=\"end\">0</text>\
         <text x=\"{}\" y=\"{}\" class=\"value\">{}</text>\
         <line x1=\"{X0}\" x2=\"{X0}\" y1=\"{Y0}\" y2=\"{Y1}\" class=\"axis\"/>\
         <text x=\"{X0}\" y=\"158\" class=\"value\">0</text>\
         <text x=\"{X1}\" y=\"158\" class=\"value\" text-anchor=\"end\">{}</text>\
         <text x=\"{}\" y=\"158\" class=\"value\" text-anchor=\"middle\">{units}</text></svg>",
        super::html::esc(&sentence),
        band.join(" "),
        used,
        super::html::esc(&sentence),
        y(stop_at),
        co(X0 - 4.0),
        co(Y1 - (0f64.clamp(ylo, yhi) - ylo) / (yhi - ylo) * (Y1 - Y0) + 4.0),
        co(X1 + 4.0),
        co(Y1 - ((-tol).clamp(ylo, yhi) - ylo) / (yhi - ylo) * (Y1 - Y0) + 4.0),
        minus(tol),
        grouped(xmax as u64),
        co((X0 + X1) / 2.0),
        z = y(0.0),
        t = y(-tol),
        sx = x(used),
    );
    Some(s)
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

    // roxmltree is a native dev-dependency (the wasm32 build of the tests has none).
    #[cfg(not(target_arch = "wasm32"))]
    #[test]
    fn the_chart_has_a_point_per_look_and_the_stop() {
        let q = json!({"unit": "case", "budget": 100, "used": 3, "stopped": "approved", "tolerance": 0.05,
            "lower": -0.04, "upper": 0.5,
            "looks": {"n": [1, 2, 3], "lower": [-1.0, -0.5, -0.04], "upper": [1.0, 0.8, 0.5]}});
        let svg = chart(&q).unwrap();
        let doc = roxmltree::Document::parse(&svg).unwrap();
        let root = doc.root_element();
        assert_eq!(root.attribute("role"), Some("img"));
        let first = root.first_element_child().unwrap();
        assert_eq!(first.tag_name().name(), "title");
        assert!(root.children().any(|c| c.tag_name().name() == "desc"
            && c.text() == Some("Sequential (betting confidence sequence): approved after 3 of 100 cases; lower bound −0.040 > −0.05")));
        for bound in ["lower", "upper"] {
            let line = root
                .descendants()
                .find(|c| c.attribute("data-bound") == Some(bound))
                .unwrap();
            assert_eq!(line.attribute("points").unwrap().split(' ').count(), 3, "{bound}");
        }
        let stop = root
            .descendants()
            .find(|c| c.attribute("data-testid") == Some("sequential-stop"))
            .unwrap();
        assert_eq!(stop.attribute("data-n"), Some("3"));
        // The x axis runs to the budget, at most five times the units used: 15 here.
        assert!(svg.contains(">15</text>"), "{svg}");
        let none = json!({"unit": "case", "budget": 100, "used": 0, "stopped": "budget", "tolerance": 0.05,
            "lower": null, "upper": null, "looks": {"n": [], "lower": [], "upper": []}});
        assert_eq!(chart(&none), None);
        assert_eq!(chart(&Value::Null), None);
    }
}
