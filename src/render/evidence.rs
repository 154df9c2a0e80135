//! What a decision rests on, as every rendering says it: the cases answered by both models (the
//! report's `evidence.rests_on`, or for a report made before it existed, the cases of `cases`
//! that both models answered), whether the figures are over the cases the sequential rule used,
//! the cases not run, and the decisions taken on missing evidence.

use serde_json::Value;

/// The first words of the reason of a decision blocked because too few cases were answered by
/// both models.
pub const INSUFFICIENT_PREFIX: &str = "blocked: insufficient evidence (";
/// The first words of the reason of a decision left inconclusive by too many missing verdicts.
pub const MISSING_PREFIX: &str = "inconclusive: missing verdicts (";

/// The report's `evidence`, or what can be told of it from a report made before it existed.
#[derive(Debug, Clone, PartialEq)]
pub struct EvidenceView {
    /// Cases in the test set.
    pub test_cases: u64,
    /// Cases the decision rests on.
    pub rests_on: u64,
    /// True when the report's figures are over the cases the sequential rule used.
    pub used: bool,
    /// Cases neither model answered (a sequential report only).
    pub not_run: Option<u64>,
    /// Cases lacking each model's verdict (`evidence.missing`), when the report says.
    pub missing: Option<(u64, u64)>,
    /// The policy's `max_missing`, when the report says.
    pub max_missing: Option<f64>,
}

/// 1234567 as `1,234,567`.
pub fn grouped(n: u64) -> String {
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

impl EvidenceView {
    /// From the report's `evidence` (`None` when absent), its test set's size and, for each of
    /// its cases, whether the old and the new model lack a verdict.
    pub fn new(evidence: Option<&Value>, num_cases: u64, cases: impl Iterator<Item = (bool, bool)>) -> Self {
        let count = |v: &Value, key: &str| v.get(key).and_then(Value::as_u64);
        if let Some(e) = evidence.filter(|e| e.is_object()) {
            let missing = e.get("missing");
            return EvidenceView {
                test_cases: count(e, "test_cases").unwrap_or(num_cases),
                rests_on: count(e, "rests_on").unwrap_or(0),
                used: e.get("over").and_then(Value::as_str) == Some("used"),
                not_run: count(e, "not_run"),
                missing: missing.and_then(|m| Some((count(m, "old")?, count(m, "new")?))),
                max_missing: e.get("max_missing").and_then(Value::as_f64),
            };
        }
        EvidenceView {
            test_cases: num_cases,
            rests_on: cases.filter(|(old, new)| !old && !new).count() as u64,
            used: false,
            not_run: None,
            missing: None,
            max_missing: None,
        }
    }

    /// From a whole report JSON value.
    pub fn of_report(report: &Value) -> Self {
        let num_cases = report
            .pointer("/test_set/num_cases")
            .and_then(Value::as_u64)
            .unwrap_or(0);
        let flag = |c: &Value, key: &str| c.get(key).and_then(Value::as_bool).unwrap_or(false);
        let cases = report
            .get("cases")
            .and_then(Value::as_array)
            .map_or(&[][..], Vec::as_slice);
        EvidenceView::new(
            report.get("evidence"),
            num_cases,
            cases.iter().map(|c| (flag(c, "old_missing"), flag(c, "new_missing"))),
        )
    }

    /// `rests on 94 of 3,000 test cases`: what every headline says.
    pub fn rests_on_text(&self) -> String {
        format!(
            "rests on {} of {} test case{}",
            grouped(self.rests_on),
            grouped(self.test_cases),
            if self.test_cases == 1 { "" } else { "s" }
        )
    }

    /// `over the 94 cases used` in a sequential report whose figures are the used cases', else
    /// `None` (the figures are over the test set).
    pub fn over(&self) -> Option<String> {
        self.used.then(|| {
            format!(
                "over the {} case{} used",
                grouped(self.rests_on),
                if self.rests_on == 1 { "" } else { "s" }
            )
        })
    }

    /// `2,891 test cases not run (the sequential rule stopped before they were asked; they count
    /// for neither model)`, when the report has cases not run.
    pub fn not_run_text(&self) -> Option<String> {
        let n = self.not_run.filter(|n| *n > 0)?;
        Some(format!(
            "{} test case{} not run (the sequential rule stopped before {} asked; they count for neither model)",
            grouped(n),
            if n == 1 { "" } else { "s" },
            if n == 1 { "it was" } else { "they were" }
        ))
    }

    /// `max_missing 5%`, when the report says.
    pub fn max_missing_text(&self) -> Option<String> {
        let m = self.max_missing?;
        let pct = (m * 1000.0).round() / 10.0;
        Some(format!("max_missing {pct}%"))
    }
}

/// The label of the fixed-sample figures (interval, McNemar) in a sequential report whose figures
/// are the used cases'.
pub const DESCRIPTIVE: &str = "descriptive, not the decision's evidence (after an early stop the fixed-sample interval and McNemar's test are not valid; the decision's evidence is the confidence sequence)";

/// What a decision taken on missing evidence asks of the reader, or `None` for any other
/// decision: e.g. `Too few cases were answered by both models: …`.
pub fn missing_evidence_advice(reason: &str) -> Option<&'static str> {
    if reason.starts_with(INSUFFICIENT_PREFIX) {
        Some("Too few test cases were answered by both models to decide: check that the verdict files belong to this test set (the same pipeline ids) and that the runs finished, then evaluate again.")
    } else if reason.starts_with(MISSING_PREFIX) {
        Some("Too many verdicts are missing to decide: answer the missing cases (or find why they are missing: another test set, a run that stopped, a join on the wrong id) and evaluate again.")
    } else {
        None
    }
}

/// The fewest units at which the sequential rule could decide, e.g. `no decision is possible
/// before 31 of the 40 templates`, when the `sequential` record has `min_units`.
pub fn min_units_text(q: &Value) -> Option<String> {
    let unit = match q.get("unit").and_then(Value::as_str) {
        Some("template") => "templates",
        _ => "cases",
    };
    let available = q.get("available").and_then(Value::as_u64);
    let of = available.map_or_else(String::new, |a| format!(" (of {} available)", grouped(a)));
    match q.get("min_units")? {
        Value::Null => Some(format!(
            "no decision is possible within 1,000,000 {unit}, whatever the verdicts"
        )),
        m => Some(format!(
            "no decision is possible before {} {unit}{of}, whatever the verdicts",
            grouped(m.as_u64()?)
        )),
    }
}

/// The report's warnings about the sequential rule's units (those that begin `sequential: `).
pub fn sequential_warnings(warnings: &[impl AsRef<str>]) -> Vec<&str> {
    warnings
        .iter()
        .map(AsRef::as_ref)
        .filter(|w| w.starts_with("sequential: "))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn rests_on_from_the_evidence_or_from_the_cases() {
        let e = json!({"test_cases": 3000, "answered": 109, "missing": {"old": 0, "new": 0},
            "not_run": 2891, "rests_on": 94, "over": "used", "max_missing": 0.05});
        let v = EvidenceView::new(Some(&e), 3000, std::iter::empty());
        assert_eq!(v.rests_on_text(), "rests on 94 of 3,000 test cases");
        assert_eq!(v.over().as_deref(), Some("over the 94 cases used"));
        assert_eq!(
            v.not_run_text().as_deref(),
            Some("2,891 test cases not run (the sequential rule stopped before they were asked; they count for neither model)")
        );
        assert_eq!(v.max_missing_text().as_deref(), Some("max_missing 5%"));
        // Without `evidence`: the cases both answered.
        let cases = [(false, false), (true, false), (false, true), (false, false)];
        let v = EvidenceView::new(None, 4, cases.into_iter());
        assert_eq!(v.rests_on_text(), "rests on 2 of 4 test cases");
        assert_eq!((v.over(), v.not_run_text(), v.max_missing_text()), (None, None, None));
    }

    #[test]
    fn min_units_and_advice() {
        let q = json!({"unit": "template", "available": 40, "min_units": 31});
        assert_eq!(
            min_units_text(&q).as_deref(),
            Some("no decision is possible before 31 templates (of 40 available), whatever the verdicts")
        );
        assert_eq!(min_units_text(&json!({"unit": "case"})), None);
        assert!(missing_evidence_advice("blocked: insufficient evidence (4 of 200 test cases answered by both models < min_samples 20; old 196 missing, new 196 missing)").is_some());
        assert!(missing_evidence_advice("inconclusive: missing verdicts (old 20 missing, new 12 missing of 200 test cases: 24 cases (12.0%) lack a verdict, more than max_missing 5%)").is_some());
        assert_eq!(missing_evidence_advice("blocked: task regressed"), None);
    }
}
