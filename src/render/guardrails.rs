//! The guardrails as the Markdown and HTML reports, JUnit and the CLI's summary show them: the
//! report's `guardrails` object (see [`crate::guardrail`]) as rows of plain text, blocking and
//! advisory apart, the failing ones first (exceeded, then not shown, then within), which each
//! renderer escapes its own way. A report without `guardrails` shows nothing.
//!
//! It reads the object through its JSON form (the Markdown and HTML reports read the report's
//! JSON text), so every rendering says the same figures the same way.

use serde::Deserialize;
use serde_json::value::RawValue;

/// The report's `guardrails` object, as the renderers read it (unknown fields ignored).
#[derive(Debug, Deserialize)]
pub struct GuardrailsView {
    confidence: f64,
    blocking: u64,
    adjusted_confidence: f64,
    cases: u64,
    criteria: Vec<CriterionV>,
    #[serde(default)]
    template_regression: Option<TemplateRegressionV>,
}

#[derive(Debug, Deserialize)]
struct CriterionV {
    metric: String,
    statistic: String,
    action: String,
    limit_kind: String,
    limit: f64,
    old: Option<f64>,
    new: Option<f64>,
    change: Option<f64>,
    low: Option<f64>,
    high: Option<f64>,
    exceeded_low: Option<f64>,
    method: String,
    n: u64,
    excluded: u64,
    min_cases: u64,
    outcome: String,
}

#[derive(Debug, Deserialize)]
struct TemplateRegressionV {
    max_drop: f64,
    min_cases: u64,
    action: String,
    tested: u64,
    untested: u64,
    outcome: String,
    templates: Vec<TemplateRowV>,
}

#[derive(Debug, Deserialize)]
struct TemplateRowV {
    template_id: Box<RawValue>,
    n: u64,
    old: f64,
    new: f64,
    adjusted_p: f64,
    regressed: bool,
}

impl GuardrailsView {
    /// From the report's `guardrails` (any serializable form of it, e.g. a
    /// [`crate::guardrail::GuardrailsReport`]); `None` when it does not have the shape.
    pub fn of<T: serde::Serialize>(g: &T) -> Option<GuardrailsView> {
        let text = serde_json::to_string(g).ok()?;
        serde_json::from_str(&text).ok()
    }

    /// The rows of one group: `blocking` (action `block`) or advisory (`advise`), the failing
    /// ones first (exceeded, not shown, within), else in the policy's order, `template_regression`
    /// after the guardrails of its outcome.
    pub fn rows(&self, blocking: bool) -> Vec<Row> {
        let action = if blocking { "block" } else { "advise" };
        let mut rows: Vec<Row> = self
            .criteria
            .iter()
            .filter(|c| c.action == action)
            .map(|c| criterion_row(c, blocking))
            .collect();
        if let Some(t) = self.template_regression.as_ref().filter(|t| t.action == action) {
            rows.push(template_row(t));
        }
        rows.sort_by_key(|r| outcome_rank(&r.outcome));
        rows
    }

    /// The blocking rows, then the advisory ones, each group named (`Blocking`, `Advisory`);
    /// empty groups left out.
    pub fn groups(&self) -> Vec<(&'static str, Vec<Row>)> {
        [("Blocking", true), ("Advisory", false)]
            .into_iter()
            .map(|(name, blocking)| (name, self.rows(blocking)))
            .filter(|(_, rows)| !rows.is_empty())
            .collect()
    }

    /// The rule in one sentence, e.g. `Each guardrail compares the two models case by case over
    /// 600 cases: within when the change's 95% interval lies within the limit; exceeded when its
    /// lower bound lies beyond it (for a blocking guardrail the bound at 98.75%, Bonferroni over
    /// the 4 blocking ones); otherwise not shown. Blocking guardrails decide with the task rule;
    /// advisory ones are only reported.`
    pub fn rule(&self) -> String {
        format!(
            "Each guardrail compares the two models case by case over {} case(s): within when the change's {} interval \
             lies within the limit; exceeded when its lower bound lies beyond it (for a blocking guardrail the bound at {}, \
             Bonferroni over the {} blocking one(s)); otherwise not shown. Blocking guardrails decide with the task rule; \
             advisory ones are only reported.",
            self.cases,
            percent_level(self.confidence),
            percent_level(self.adjusted_confidence),
            self.blocking
        )
    }

    /// The level of a blocking guardrail's exceeded test, e.g. `98.75%`.
    pub fn adjusted_level(&self) -> String {
        percent_level(self.adjusted_confidence)
    }

    /// The intervals' level, e.g. `95%`.
    pub fn level(&self) -> String {
        percent_level(self.confidence)
    }
}

/// One criterion as text.
#[derive(Debug, Clone, PartialEq)]
pub struct Row {
    /// It decides (`block`) or is only reported (`advise`).
    pub blocking: bool,
    /// `p95 latency_ms`, `mean metrics.steps`, `template_regression`.
    pub name: String,
    /// The old model's statistic (`—` for template_regression, or without a case).
    pub old: String,
    /// The new model's.
    pub new: String,
    /// The change with its interval and method, e.g. `+41.9% (+30.5% to +52.2%, bootstrap)`;
    /// for template_regression, the templates tested.
    pub change: String,
    /// The lower bound the exceeded test used, when it is not the interval's (a blocking
    /// guardrail's, at the adjusted level).
    pub exceeded_low: Option<String>,
    /// The limit, e.g. `increase ≤ +10.0%`, `difference ≤ +1`, `drop ≤ 0.1`.
    pub limit: String,
    /// The cases judged, e.g. `600`, `580 (20 excluded)`, `5 (needs 10)`; for
    /// template_regression, the templates tested.
    pub n: String,
    /// `exceeded`, `not_shown` or `within` (as the report writes it).
    pub outcome: String,
    /// The templates shown to regress (template_regression only).
    pub regressed: Vec<Regressed>,
}

/// A template `template_regression` shows to regress.
#[derive(Debug, Clone, PartialEq)]
pub struct Regressed {
    /// The template id as text: a string's own text, any other JSON value as its JSON. Raw from
    /// the log: each renderer escapes it.
    pub id: String,
    /// Its cases.
    pub n: u64,
    /// The old model's pass rate, e.g. `84.0%`.
    pub old: String,
    /// The new model's.
    pub new: String,
    /// Holm's adjusted p-value, e.g. `2.48e-7`.
    pub adjusted_p: String,
}

impl Regressed {
    /// `ID 84.0% → 28.0% (n 50, adjusted p 2.48e-7)` with `id` the escaped id.
    pub fn text(&self, id: &str) -> String {
        format!(
            "{id} {} → {} (n {}, adjusted p {})",
            self.old, self.new, self.n, self.adjusted_p
        )
    }
}

impl Row {
    /// The outcome as a person reads it: `exceeded`, `not shown`, `within`.
    pub fn outcome_text(&self) -> String {
        self.outcome.replace('_', " ")
    }

    /// The row on one line, e.g. `block p95 latency_ms 881 → 1250: +41.9% (+30.5% to +52.2%,
    /// bootstrap); limit increase ≤ +10.0%; n 600: exceeded` (the CLI's summary, JUnit's
    /// messages), with `id` escaping each regressed template's id.
    pub fn line(&self, id: impl Fn(&str) -> String) -> String {
        let action = if self.blocking { "block" } else { "advise" };
        let bound = self
            .exceeded_low
            .as_ref()
            .map_or_else(String::new, |b| format!("; lower bound for exceeded {b}"));
        let regressed = if self.regressed.is_empty() {
            String::new()
        } else {
            let list: Vec<String> = self.regressed.iter().map(|r| r.text(&id(&r.id))).collect();
            format!("; regressed: {}", list.join(", "))
        };
        let values = if self.old == "—" && self.new == "—" {
            String::new()
        } else {
            format!(" {} → {}", self.old, self.new)
        };
        format!(
            "{action} {}{values}: {}{bound}{regressed}; limit {}; n {}: {}",
            self.name,
            self.change,
            self.limit,
            self.n,
            self.outcome_text()
        )
    }
}

/// Exceeded first, then not shown, then within.
fn outcome_rank(outcome: &str) -> u8 {
    match outcome {
        "exceeded" => 0,
        "not_shown" => 1,
        "within" => 2,
        _ => 3,
    }
}

fn criterion_row(c: &CriterionV, blocking: bool) -> Row {
    let relative = c.limit_kind == "max_increase";
    let change = match (c.change, c.low, c.high) {
        (None, _, _) if c.n == 0 => "no case carries the metric on both sides".to_owned(),
        (None, _, _) => "—".to_owned(),
        (Some(x), Some(l), Some(h)) => {
            let text = |y: f64| change_in(y, relative, decimals(l, h, relative));
            format!("{} ({} to {}, {})", text(x), text(l), text(h), method_name(&c.method))
        }
        (Some(x), _, _) => format!(
            "{} (no bounded interval, {})",
            change_text(x, relative),
            method_name(&c.method)
        ),
    };
    let places = match (c.low, c.high) {
        (Some(l), Some(h)) => decimals(l, h, relative),
        _ => None,
    };
    let exceeded_low = match (blocking, c.exceeded_low) {
        (true, Some(b)) => Some(change_in(b, relative, places)),
        (true, None) if c.change.is_some() => Some("—".to_owned()),
        _ => None,
    };
    let limit = if relative {
        format!("increase ≤ {}", change_text(c.limit, true))
    } else {
        format!("difference ≤ {}", change_text(c.limit, false))
    };
    let n = match (c.n < c.min_cases, c.excluded) {
        (true, 0) => format!("{} (needs {})", c.n, c.min_cases),
        (true, x) => format!("{} (needs {}; {x} excluded)", c.n, c.min_cases),
        (false, 0) => c.n.to_string(),
        (false, x) => format!("{} ({x} excluded)", c.n),
    };
    Row {
        blocking,
        name: format!("{} {}", c.statistic, c.metric),
        old: value(c.old),
        new: value(c.new),
        change,
        exceeded_low,
        limit,
        n,
        outcome: c.outcome.clone(),
        regressed: Vec::new(),
    }
}

fn template_row(t: &TemplateRegressionV) -> Row {
    let regressed: Vec<Regressed> = t
        .templates
        .iter()
        .filter(|r| r.regressed)
        .map(|r| Regressed {
            id: id_text(&r.template_id),
            n: r.n,
            old: rate(r.old),
            new: rate(r.new),
            adjusted_p: p_value(r.adjusted_p),
        })
        .collect();
    let change = match regressed.len() {
        0 => "no template shown to regress".to_owned(),
        1 => "1 template shown to regress".to_owned(),
        k => format!("{k} templates shown to regress"),
    };
    Row {
        blocking: t.action == "block",
        name: "template_regression".to_owned(),
        old: "—".to_owned(),
        new: "—".to_owned(),
        change,
        exceeded_low: None,
        limit: format!("drop ≤ {} (templates with ≥ {} cases)", plain(t.max_drop), t.min_cases),
        n: format!("{} of {} templates", t.tested, t.tested + t.untested),
        outcome: t.outcome.clone(),
        regressed,
    }
}

/// A template id's text: a string's own text, any other JSON value as its JSON.
fn id_text(raw: &RawValue) -> String {
    serde_json::from_str::<String>(raw.get()).unwrap_or_else(|_| raw.get().to_owned())
}

fn method_name(method: &str) -> &str {
    match method {
        "paired_t" => "paired t",
        "fieller" => "Fieller",
        other => other,
    }
}

/// A level as a percentage without trailing zeros: `95%`, `98.75%`.
fn percent_level(x: f64) -> String {
    let s = format!("{:.4}", x * 100.0);
    format!("{}%", s.trim_end_matches('0').trim_end_matches('.'))
}

/// A number as written (`0.1`, `20`).
fn plain(x: f64) -> String {
    format!("{x}")
}

/// `x` with a true minus sign for a negative number.
fn minus(text: String) -> String {
    match text.strip_prefix('-') {
        Some(rest) => format!("−{rest}"),
        None => text,
    }
}

/// A metric's value to 4 significant digits (`881`, `1250`, `0.0001024`, `1.234e7`), `—` when
/// absent.
pub fn value(x: Option<f64>) -> String {
    let Some(x) = x.filter(|x| x.is_finite()) else {
        return "—".to_owned();
    };
    if x == 0.0 {
        return "0".to_owned();
    }
    let a = x.abs();
    if !(1e-4..1e7).contains(&a) {
        let s = format!("{x:.3e}");
        let (mantissa, exp) = s.split_once('e').unwrap_or((&s, "0"));
        let mantissa = if mantissa.contains('.') {
            mantissa.trim_end_matches('0').trim_end_matches('.')
        } else {
            mantissa
        };
        return minus(format!("{mantissa}e{}", minus(exp.to_owned())));
    }
    let digits = (3 - a.log10().floor() as i32).max(0) as usize;
    let s = format!("{x:.digits$}");
    let s = if s.contains('.') {
        s.trim_end_matches('0').trim_end_matches('.').to_owned()
    } else {
        s
    };
    minus(s)
}

/// A change with its sign: `+41.9%`, `−3.2%`, `+0.012%` relative; `+12.5`, `−0.0003`, `±0`
/// absolute.
pub fn change_text(x: f64, relative: bool) -> String {
    if !x.is_finite() {
        return "—".to_owned();
    }
    let sign = if x > 0.0 {
        "+"
    } else if x < 0.0 {
        "−"
    } else {
        "±"
    };
    if relative {
        let p = x.abs() * 100.0;
        let text = if p == 0.0 {
            "0".to_owned()
        } else if p >= 0.1 {
            format!("{p:.1}")
        } else {
            value(Some(p))
        };
        format!("{sign}{text}%")
    } else {
        let text = value(Some(x.abs()));
        format!("{sign}{text}")
    }
}

/// The decimals of a relative change's percentage that tell an interval's two ends apart: 1, or
/// up to 4 for a narrow interval (`None` for an absolute change, written to 4 significant
/// digits).
fn decimals(low: f64, high: f64, relative: bool) -> Option<usize> {
    if !relative {
        return None;
    }
    let digits = (1..=4)
        .find(|&d| format!("{:.d$}", low * 100.0) != format!("{:.d$}", high * 100.0))
        .unwrap_or(1);
    Some(digits)
}

/// [`change_text`] with a relative change's percentage to `decimals` decimals.
fn change_in(x: f64, relative: bool, decimals: Option<usize>) -> String {
    match decimals {
        Some(d) if relative && d > 1 && x.is_finite() => {
            let sign = if x > 0.0 {
                "+"
            } else if x < 0.0 {
                "−"
            } else {
                "±"
            };
            format!("{sign}{:.d$}%", x.abs() * 100.0)
        }
        _ => change_text(x, relative),
    }
}

/// A pass rate as a percentage with one decimal.
fn rate(x: f64) -> String {
    format!("{:.1}%", x * 100.0)
}

/// A p-value to 3 significant digits (`0.0123`, `2.48e-7`).
fn p_value(p: f64) -> String {
    if !p.is_finite() {
        return "—".to_owned();
    }
    if p == 0.0 {
        return "0".to_owned();
    }
    if p < 1e-4 {
        let s = format!("{p:.2e}");
        return s.replace("e-", "e−");
    }
    let digits = (2 - p.log10().floor() as i32).max(0) as usize;
    format!("{p:.digits$}")
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn view(v: serde_json::Value) -> GuardrailsView {
        serde_json::from_value(v).unwrap()
    }

    fn criterion(metric: &str, action: &str, outcome: &str) -> serde_json::Value {
        json!({"metric": metric, "statistic": "p95", "action": action, "limit_kind": "max_increase", "limit": 0.1,
               "old": 881.0, "new": 1250.1, "change": 0.4189, "low": 0.3047, "high": 0.5221, "exceeded_low": 0.2766,
               "method": "bootstrap", "n": 600, "excluded": 0, "min_cases": 200, "outcome": outcome, "distribution": null})
    }

    #[test]
    fn numbers_as_the_rows_write_them() {
        assert_eq!(value(Some(881.0)), "881");
        assert_eq!(value(Some(1250.1)), "1250");
        assert_eq!(value(Some(0.000_102_375)), "0.0001024");
        assert_eq!(value(Some(-3.0e-6)), "−3e−6");
        assert_eq!(value(Some(12_345_678.0)), "1.235e7");
        assert_eq!(value(Some(6.0)), "6");
        assert_eq!(value(None), "—");
        assert_eq!(change_text(0.41895, true), "+41.9%");
        assert_eq!(change_text(-0.032, true), "−3.2%");
        assert_eq!(change_text(0.000_12, true), "+0.012%");
        assert_eq!(change_text(0.0, false), "±0");
        assert_eq!(change_text(-0.5, false), "−0.5");
        assert_eq!(percent_level(0.9875), "98.75%");
        assert_eq!(decimals(0.012049, 0.012104, true), Some(2));
        assert_eq!(change_in(0.012077, true, Some(2)), "+1.21%");
        assert_eq!(decimals(0.012041, 0.012042, true), Some(4));
        assert_eq!(decimals(0.30, 0.52, true), Some(1));
        assert_eq!(percent_level(0.95), "95%");
        assert_eq!(p_value(2.483e-7), "2.48e−7");
        assert_eq!(p_value(0.01234), "0.0123");
    }

    #[test]
    fn failing_ones_first_blocking_and_advisory_apart() {
        let v = view(
            json!({"confidence": 0.95, "blocking": 3, "adjusted_confidence": 0.98333, "cases": 600,
            "seed": 0, "resamples": 10000,
            "criteria": [criterion("a", "block", "within"), criterion("b", "block", "not_shown"),
                         criterion("c", "advise", "within"), criterion("d", "block", "exceeded"),
                         criterion("e", "advise", "exceeded")],
            "template_regression": {"max_drop": 0.1, "min_cases": 20, "action": "block", "alpha": 0.008,
                "tested": 2, "untested": 1, "outcome": "exceeded",
                "templates": [{"template_id": "<script>", "n": 50, "old": 0.84, "new": 0.28, "p_value": 1e-8,
                               "adjusted_p": 2e-8, "regressed": true},
                              {"template_id": {"k": 1}, "n": 40, "old": 0.8, "new": 0.8, "p_value": 1.0,
                               "adjusted_p": 1.0, "regressed": false}]}}),
        );
        let groups = v.groups();
        assert_eq!(groups.len(), 2);
        let names = |rows: &[Row]| rows.iter().map(|r| r.name.clone()).collect::<Vec<_>>();
        assert_eq!(groups[0].0, "Blocking");
        assert_eq!(names(&groups[0].1), ["p95 d", "template_regression", "p95 b", "p95 a"]);
        assert_eq!(groups[1].0, "Advisory");
        assert_eq!(names(&groups[1].1), ["p95 e", "p95 c"]);
        let d = &groups[0].1[0];
        assert_eq!(d.change, "+41.9% (+30.5% to +52.2%, bootstrap)");
        assert_eq!(d.exceeded_low.as_deref(), Some("+27.7%"));
        assert_eq!(d.limit, "increase ≤ +10.0%");
        assert_eq!((d.old.as_str(), d.new.as_str(), d.n.as_str()), ("881", "1250", "600"));
        assert_eq!(groups[1].1[0].exceeded_low, None);
        let t = &groups[0].1[1];
        assert_eq!(t.n, "2 of 3 templates");
        assert_eq!(t.regressed.len(), 1);
        assert_eq!(t.regressed[0].id, "<script>");
        assert_eq!(
            t.line(|s| format!("[{s}]")),
            "block template_regression: 1 template shown to regress; regressed: [<script>] 84.0% → 28.0% \
             (n 50, adjusted p 2.00e−8); limit drop ≤ 0.1 (templates with ≥ 20 cases); n 2 of 3 templates: exceeded"
        );
        assert_eq!(
            d.line(|s| s.to_owned()),
            "block p95 d 881 → 1250: +41.9% (+30.5% to +52.2%, bootstrap); lower bound for exceeded +27.7%; \
             limit increase ≤ +10.0%; n 600: exceeded"
        );
        assert!(
            v.rule()
                .contains("bound at 98.333%, Bonferroni over the 3 blocking one(s)"),
            "{}",
            v.rule()
        );
    }

    #[test]
    fn too_few_cases_and_excluded_ones_are_said() {
        let mut c = criterion("latency_ms", "block", "not_shown");
        c["n"] = json!(5);
        c["excluded"] = json!(3);
        c["min_cases"] = json!(10);
        c["change"] = json!(null);
        c["low"] = json!(null);
        c["high"] = json!(null);
        c["exceeded_low"] = json!(null);
        let mut d = criterion("total_tokens", "advise", "within");
        d["excluded"] = json!(7);
        d["limit_kind"] = json!("max_difference");
        d["limit"] = json!(5);
        let v = view(
            json!({"confidence": 0.9, "blocking": 1, "adjusted_confidence": 0.9, "cases": 8,
            "criteria": [c, d]}),
        );
        let b = &v.rows(true)[0];
        assert_eq!(b.n, "5 (needs 10; 3 excluded)");
        assert_eq!(b.change, "—");
        assert_eq!(b.exceeded_low, None);
        let a = &v.rows(false)[0];
        assert_eq!(a.n, "600 (7 excluded)");
        assert_eq!(a.limit, "difference ≤ +5");
        assert_eq!(a.change, "+0.4189 (+0.3047 to +0.5221, bootstrap)");
    }
}
