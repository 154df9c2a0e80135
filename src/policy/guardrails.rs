//! The guardrails' policy fields: their types, the parser (every error names the field, as
//! `guardrails[1].max_increase`), and the canonical form written into the report's `policy`.

use super::error::PolicyError;
use serde::ser::{SerializeMap, Serializer};
use serde::Serialize;
use serde_json::{Map, Value};

/// What a guardrail measures, per case and model.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Metric {
    /// `latency_ms`.
    LatencyMs,
    /// `usage.prompt_tokens`.
    PromptTokens,
    /// `usage.completion_tokens`.
    CompletionTokens,
    /// Prompt plus completion tokens (a record needs both).
    TotalTokens,
    /// The tokens at the policy's `prices` (a record needs both counts).
    Cost,
    /// `metrics.NAME`: a named number of the record.
    Named(String),
}

impl Metric {
    /// The metric as the policy spells it.
    pub fn name(&self) -> String {
        match self {
            Metric::LatencyMs => "latency_ms".into(),
            Metric::PromptTokens => "prompt_tokens".into(),
            Metric::CompletionTokens => "completion_tokens".into(),
            Metric::TotalTokens => "total_tokens".into(),
            Metric::Cost => "cost".into(),
            Metric::Named(n) => format!("metrics.{n}"),
        }
    }

    fn parse(field: &str, text: &str) -> Result<Metric, PolicyError> {
        Ok(match text {
            "latency_ms" => Metric::LatencyMs,
            "prompt_tokens" => Metric::PromptTokens,
            "completion_tokens" => Metric::CompletionTokens,
            "total_tokens" => Metric::TotalTokens,
            "cost" => Metric::Cost,
            t => match t.strip_prefix("metrics.") {
                Some(name) if !name.is_empty() => Metric::Named(name.to_owned()),
                _ => {
                    return Err(PolicyError::new(
                        field,
                        format!(
                            "{field} must be latency_ms, prompt_tokens, completion_tokens, total_tokens, cost \
                             or metrics.NAME, not `{text}`"
                        ),
                    ))
                }
            },
        })
    }
}

/// The statistic of the metric's distribution a guardrail compares.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Statistic {
    /// The mean.
    Mean,
    /// A nearest-rank percentile: 50, 90, 95 or 99.
    Percentile(u8),
}

impl Statistic {
    /// `mean`, `p50`, `p90`, `p95`, `p99`.
    pub fn name(self) -> String {
        match self {
            Statistic::Mean => "mean".into(),
            Statistic::Percentile(p) => format!("p{p}"),
        }
    }

    fn parse(field: &str, text: &str) -> Result<Statistic, PolicyError> {
        Ok(match text {
            "mean" => Statistic::Mean,
            "p50" => Statistic::Percentile(50),
            "p90" => Statistic::Percentile(90),
            "p95" => Statistic::Percentile(95),
            "p99" => Statistic::Percentile(99),
            _ => {
                return Err(PolicyError::new(
                    field,
                    format!("{field} must be mean, p50, p90, p95 or p99, not `{text}`"),
                ))
            }
        })
    }

    /// The fewest cases a guardrail on it is judged with unless the guardrail says: 10 for the
    /// mean, and for a percentile enough cases that 10 lie above it (`⌈10/(1 − p)⌉`: 20, 100,
    /// 200, 1,000), so that its bootstrap has a tail to resample.
    pub fn default_min_cases(self) -> usize {
        match self {
            Statistic::Mean => 10,
            Statistic::Percentile(p) => (1000 / (100 - usize::from(p))).max(10),
        }
    }
}

/// A guardrail's limit on the change from the old model to the new.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Limit {
    /// `max_increase`: `new/old − 1` at most this (a fraction: `10%` is 0.1).
    Increase(f64),
    /// `max_difference`: `new − old` at most this, in the metric's unit.
    Difference(f64),
}

impl Limit {
    /// The limit's value.
    pub fn value(self) -> f64 {
        match self {
            Limit::Increase(x) | Limit::Difference(x) => x,
        }
    }

    /// Whether the change is relative.
    pub fn is_relative(self) -> bool {
        matches!(self, Limit::Increase(_))
    }

    /// `max_increase` or `max_difference`.
    pub fn key(self) -> &'static str {
        match self {
            Limit::Increase(_) => "max_increase",
            Limit::Difference(_) => "max_difference",
        }
    }
}

/// Whether a criterion decides.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Action {
    /// Counts in the decision.
    Block,
    /// Reported, never decides.
    Advise,
}

impl Action {
    fn parse(field: &str, text: &str) -> Result<Action, PolicyError> {
        match text {
            "block" => Ok(Action::Block),
            "advise" => Ok(Action::Advise),
            _ => Err(PolicyError::new(
                field,
                format!("{field} must be block or advise, not `{text}`"),
            )),
        }
    }
}

/// One guardrail of the policy.
#[derive(Debug, Clone, PartialEq)]
pub struct Guardrail {
    /// What is measured.
    pub metric: Metric,
    /// Which statistic of it (`mean` when not given).
    pub statistic: Statistic,
    /// The limit.
    pub limit: Limit,
    /// `block` (when not given) or `advise`.
    pub action: Action,
    /// The fewest cases it is judged with, when the policy gives it (else
    /// [`Statistic::default_min_cases`]).
    pub min_cases: Option<usize>,
}

impl Guardrail {
    /// The fewest cases it is judged with.
    pub fn min_cases(&self) -> usize {
        self.min_cases.unwrap_or(self.statistic.default_min_cases())
    }

    /// `p95 latency_ms`, as reasons name it.
    pub fn label(&self) -> String {
        format!("{} {}", self.statistic.name(), self.metric.name())
    }
}

impl Serialize for Guardrail {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut m = s.serialize_map(None)?;
        m.serialize_entry("metric", &self.metric.name())?;
        m.serialize_entry("statistic", &self.statistic.name())?;
        m.serialize_entry(self.limit.key(), &self.limit.value())?;
        m.serialize_entry("action", &self.action)?;
        if let Some(n) = self.min_cases {
            m.serialize_entry("min_cases", &n)?;
        }
        m.end()
    }
}

/// One model's prices, per million tokens (in any currency, the same for both models).
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Price {
    /// A million prompt tokens.
    pub prompt_per_million: f64,
    /// A million completion tokens.
    pub completion_per_million: f64,
}

impl Price {
    /// The cost of a call's tokens.
    pub fn of(&self, prompt: u64, completion: u64) -> f64 {
        (prompt as f64 * self.prompt_per_million + completion as f64 * self.completion_per_million) / 1e6
    }
}

/// `prices`: each model's.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Prices {
    /// The old model's.
    pub old: Price,
    /// The new model's.
    pub new: Price,
}

/// `template_regression`.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct TemplateRegression {
    /// The largest drop of a template's pass rate allowed (a fraction; 0 when not given).
    pub max_drop: f64,
    /// Templates with fewer cases are not tested (10 when not given).
    pub min_cases: usize,
    /// `block` (when not given) or `advise`.
    pub action: Action,
}

/// The guardrail fields of a policy; all absent in a policy that gives none.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Guardrails {
    /// `guardrails` (absent or empty: none).
    pub list: Vec<Guardrail>,
    /// `prices`.
    pub prices: Option<Prices>,
    /// `template_regression`.
    pub template_regression: Option<TemplateRegression>,
}

impl Guardrails {
    /// True when the policy gives no criterion besides the task rule.
    pub fn is_empty(&self) -> bool {
        self.list.is_empty() && self.template_regression.is_none()
    }

    /// The criteria that decide: blocking guardrails, and `template_regression` when it blocks.
    pub fn blocking(&self) -> usize {
        self.list.iter().filter(|g| g.action == Action::Block).count()
            + usize::from(self.template_regression.is_some_and(|t| t.action == Action::Block))
    }

    /// Checks what needs another field (`cost` needs `prices`).
    pub fn check(&self) -> Result<(), PolicyError> {
        for (i, g) in self.list.iter().enumerate() {
            if g.metric == Metric::Cost && self.prices.is_none() {
                return Err(PolicyError::new(
                    &format!("guardrails[{i}].metric"),
                    format!(
                        "guardrails[{i}].metric is cost, which needs the policy's prices \
                         ({{\"old\": {{\"prompt_per_million\": …, \"completion_per_million\": …}}, \"new\": {{…}}}})"
                    ),
                ));
            }
        }
        Ok(())
    }

    /// `guardrails` from its JSON value: a list (`[]` or `null`: none).
    pub fn parse_list(key: &str, v: &Value) -> Result<Vec<Guardrail>, PolicyError> {
        let items = match v {
            Value::Null => return Ok(Vec::new()),
            Value::Array(items) => items,
            _ => return Err(PolicyError::new(key, format!("{key} must be a list of guardrails"))),
        };
        items
            .iter()
            .enumerate()
            .map(|(i, item)| guardrail(&format!("{key}[{i}]"), item))
            .collect()
    }

    /// `prices` from its JSON value: `{"old": PRICE, "new": PRICE}`, or one PRICE for both.
    pub fn parse_prices(key: &str, v: &Value) -> Result<Prices, PolicyError> {
        let map = object(key, v)?;
        if map.contains_key("old") || map.contains_key("new") {
            only(key, map, &["old", "new"])?;
            let side = |name: &str| {
                let field = format!("{key}.{name}");
                price(&field, map.get(name).ok_or_else(|| missing(&field))?)
            };
            Ok(Prices {
                old: side("old")?,
                new: side("new")?,
            })
        } else {
            let p = price(key, v)?;
            Ok(Prices { old: p, new: p })
        }
    }

    /// `template_regression` from its JSON value.
    pub fn parse_template_regression(key: &str, v: &Value) -> Result<TemplateRegression, PolicyError> {
        let map = object(key, v)?;
        only(key, map, &["max_drop", "min_cases", "action"])?;
        let max_drop = match map.get("max_drop") {
            None => 0.0,
            Some(x) => fraction(&format!("{key}.max_drop"), x)?,
        };
        if !(0.0..=1.0).contains(&max_drop) {
            return Err(PolicyError::new(
                &format!("{key}.max_drop"),
                format!("{key}.max_drop must be between 0 and 1 (a pass rate's drop)"),
            ));
        }
        let min_cases = match map.get("min_cases") {
            None => 10,
            Some(x) => cases(&format!("{key}.min_cases"), x)?,
        };
        let action = match map.get("action") {
            None => Action::Block,
            Some(x) => Action::parse(&format!("{key}.action"), text(&format!("{key}.action"), x)?)?,
        };
        Ok(TemplateRegression {
            max_drop,
            min_cases,
            action,
        })
    }
}

fn missing(field: &str) -> PolicyError {
    PolicyError::new(field, format!("{field} is missing"))
}

fn object<'v>(key: &str, v: &'v Value) -> Result<&'v Map<String, Value>, PolicyError> {
    v.as_object()
        .ok_or_else(|| PolicyError::new(key, format!("{key} must be a JSON object")))
}

fn only(key: &str, map: &Map<String, Value>, fields: &[&str]) -> Result<(), PolicyError> {
    match map.keys().find(|k| !fields.contains(&k.as_str())) {
        Some(k) => Err(PolicyError::new(
            &format!("{key}.{k}"),
            format!("unknown field `{k}` in {key} (the fields are {})", fields.join(", ")),
        )),
        None => Ok(()),
    }
}

fn text<'v>(field: &str, v: &'v Value) -> Result<&'v str, PolicyError> {
    v.as_str()
        .ok_or_else(|| PolicyError::new(field, format!("{field} must be a string, not `{v}`")))
}

/// A finite number; as text, a number or a percentage (`10%` is 0.1) when `percent`.
fn number(field: &str, v: &Value, percent: bool) -> Result<f64, PolicyError> {
    let bad = || {
        let what = if percent {
            "a finite number or a percentage (`10%` or 0.10)"
        } else {
            "a finite number"
        };
        PolicyError::new(field, format!("{field} must be {what}, not `{v}`"))
    };
    let x = match v {
        Value::Number(n) => n.as_f64().ok_or_else(bad)?,
        Value::String(s) => {
            let t = s.trim();
            match t.strip_suffix('%') {
                Some(p) if percent => p.trim().parse::<f64>().map_err(|_| bad())? / 100.0,
                // `"10"` could mean 10% or ten times: a fraction as text says which with `%`.
                None if percent => {
                    return Err(PolicyError::new(
                        field,
                        format!("{field} is the text `{t}` without `%`: write `{t}%` for a percentage, or the number {t} for a fraction"),
                    ))
                }
                _ => t.parse::<f64>().map_err(|_| bad())?,
            }
        }
        _ => return Err(bad()),
    };
    if x.is_finite() {
        Ok(x)
    } else {
        Err(bad())
    }
}

fn fraction(field: &str, v: &Value) -> Result<f64, PolicyError> {
    number(field, v, true)
}

fn cases(field: &str, v: &Value) -> Result<usize, PolicyError> {
    let n = match v {
        Value::String(s) => s.trim().parse::<u64>().ok(),
        _ => v.as_u64(),
    };
    match n.and_then(|n| usize::try_from(n).ok()) {
        Some(n) if n >= 2 => Ok(n),
        _ => Err(PolicyError::new(
            field,
            format!("{field} must be a whole number ≥ 2, not `{v}`"),
        )),
    }
}

fn price(key: &str, v: &Value) -> Result<Price, PolicyError> {
    let map = object(key, v)?;
    only(key, map, &["prompt_per_million", "completion_per_million"])?;
    let get = |name: &str| {
        let field = format!("{key}.{name}");
        let x = number(&field, map.get(name).ok_or_else(|| missing(&field))?, false)?;
        if x < 0.0 {
            return Err(PolicyError::new(&field, format!("{field} must not be negative")));
        }
        Ok(x + 0.0)
    };
    Ok(Price {
        prompt_per_million: get("prompt_per_million")?,
        completion_per_million: get("completion_per_million")?,
    })
}

fn guardrail(key: &str, v: &Value) -> Result<Guardrail, PolicyError> {
    let map = object(key, v)?;
    only(
        key,
        map,
        &[
            "metric",
            "statistic",
            "max_increase",
            "max_difference",
            "action",
            "min_cases",
        ],
    )?;
    let field = |name: &str| format!("{key}.{name}");
    let metric = Metric::parse(
        &field("metric"),
        text(
            &field("metric"),
            map.get("metric").ok_or_else(|| missing(&field("metric")))?,
        )?,
    )?;
    let statistic = match map.get("statistic") {
        None => Statistic::Mean,
        Some(x) => Statistic::parse(&field("statistic"), text(&field("statistic"), x)?)?,
    };
    let limit = match (map.get("max_increase"), map.get("max_difference")) {
        (Some(x), None) => {
            let r = fraction(&field("max_increase"), x)?;
            if r <= -1.0 {
                return Err(PolicyError::new(
                    &field("max_increase"),
                    format!("{} must be above -100%", field("max_increase")),
                ));
            }
            Limit::Increase(r + 0.0)
        }
        (None, Some(x)) => Limit::Difference(number(&field("max_difference"), x, false)? + 0.0),
        (Some(_), Some(_)) => {
            return Err(PolicyError::new(
                key,
                format!("{key} gives both max_increase and max_difference: give one"),
            ))
        }
        (None, None) => {
            return Err(PolicyError::new(
                key,
                format!("{key} needs a limit: max_increase (relative, `10%`) or max_difference (absolute)"),
            ))
        }
    };
    let action = match map.get("action") {
        None => Action::Block,
        Some(x) => Action::parse(&field("action"), text(&field("action"), x)?)?,
    };
    let min_cases = map
        .get("min_cases")
        .map(|x| cases(&field("min_cases"), x))
        .transpose()?;
    Ok(Guardrail {
        metric,
        statistic,
        limit,
        action,
        min_cases,
    })
}
