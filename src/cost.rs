//! What the calls behind verdict records cost: the optional fields `deploy-gate run` writes on a
//! record (`latency_ms`, `usage`, `attempts`, `target`) and the named numbers a record may carry
//! (`metrics`, `{"cost_usd": 0.012, "steps": 7}`), read beside the verdict, and the report's
//! per-model summary of them ([`summarize`], over the records
//! [`Verdicts::cost_summary`](crate::verdicts::Verdicts::cost_summary) counts).
//!
//! The fields are optional and independent. The reader ([`crate::verdicts`]) keeps them only
//! for the records that carry them, in a side table, so a file without them reads as it did and
//! costs no memory more. The summary counts the records the scoring counts for each case: under
//! `repeats: last` the case's last record, under `repeats: mean` every run of the case; a record
//! that failed (`error`) counts too (its call cost as much). Latency quantiles are nearest-rank:
//! the p-th percentile of n latencies, sorted ascending, is the one at 1-based rank
//! `ceil(p/100 · n)` (so always a latency that was measured).

use crate::json::{Scalar, ValueError, ValueSink};
use serde::Serialize;
use std::borrow::Cow;
use std::sync::Arc;

/// Token counts a record reports (`usage`); other keys of the object are ignored.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Usage {
    /// `usage.prompt_tokens`.
    pub prompt_tokens: Option<u64>,
    /// `usage.completion_tokens`.
    pub completion_tokens: Option<u64>,
}

/// A record's `metrics`: each name and its finite value, in the record's order.
pub type Metrics = Box<[(Box<str>, f64)]>;

/// The cost fields of one record, as kept (only for records that carry one at least).
#[derive(Debug, Clone, PartialEq, Default)]
pub struct RecordCost {
    /// Milliseconds from the request's start to its last byte (finite, non-negative).
    pub latency_ms: Option<f64>,
    /// The tokens the call used, when the record says.
    pub usage: Option<Usage>,
    /// Attempts made (1 when the first one answered).
    pub attempts: Option<u64>,
    /// The digest of the target file that produced the record (shared between records).
    pub target: Option<Arc<str>>,
    /// `metrics`: named finite numbers, in the record's order (names distinct).
    pub metrics: Option<Metrics>,
}

impl RecordCost {
    /// The value of metric `name` (`metrics.NAME`), when the record carries it.
    pub fn metric(&self, name: &str) -> Option<f64> {
        self.metrics
            .as_deref()?
            .iter()
            .find(|(k, _)| &**k == name)
            .map(|(_, v)| *v)
    }
}

/// A record field with a cost, for messages.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum CostField {
    LatencyMs,
    Usage,
    PromptTokens,
    CompletionTokens,
    Attempts,
    Target,
    Metrics,
}

impl CostField {
    /// The key as written (`usage.prompt_tokens` for those inside `usage`).
    pub(crate) fn name(self) -> &'static str {
        match self {
            CostField::LatencyMs => "latency_ms",
            CostField::Usage => "usage",
            CostField::PromptTokens => "usage.prompt_tokens",
            CostField::CompletionTokens => "usage.completion_tokens",
            CostField::Attempts => "attempts",
            CostField::Target => "target",
            CostField::Metrics => "metrics",
        }
    }

    /// The key inside its object (the record's, or `usage`'s).
    pub(crate) fn key(self) -> &'static str {
        match self {
            CostField::PromptTokens => "prompt_tokens",
            CostField::CompletionTokens => "completion_tokens",
            other => other.name(),
        }
    }

    fn bit(self) -> u8 {
        1 << (self as u8)
    }
}

/// A cost field with an unusable value: which field, which of its occurrences (the second for
/// one given twice) and what is wrong.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct CostProblem {
    pub(crate) field: CostField,
    /// 0 for the first occurrence of the key, 1 for the second.
    pub(crate) occurrence: usize,
    pub(crate) why: String,
}

impl std::fmt::Display for CostProblem {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} {}", self.field.name(), self.why)
    }
}

/// The cost fields of a record while it is read (borrowed from the line where they can be).
#[derive(Debug, Default)]
pub(crate) struct CostFields<'a> {
    latency_ms: Option<f64>,
    usage: Option<Usage>,
    attempts: Option<u64>,
    target: Option<Cow<'a, str>>,
    metrics: Option<Vec<(Box<str>, f64)>>,
    /// The keys seen, one bit per [`CostField`].
    seen: u8,
    /// The first unusable value.
    pub(crate) problem: Option<CostProblem>,
}

/// A record's cost fields once read: `None` when it has none.
pub(crate) type CostRef<'a> = Option<Box<CostFields<'a>>>;

impl<'a> CostFields<'a> {
    /// True when the record carries a cost field at least.
    pub(crate) fn any(&self) -> bool {
        self.seen != 0
    }

    /// Notes a key seen; false (and the problem noted) when it was seen before.
    fn first_time(&mut self, field: CostField) -> bool {
        if self.seen & field.bit() != 0 {
            self.fail(field, 1, "is given twice".into());
            return false;
        }
        self.seen |= field.bit();
        true
    }

    fn fail(&mut self, field: CostField, occurrence: usize, why: String) {
        self.problem.get_or_insert(CostProblem { field, occurrence, why });
    }

    /// Reads `key`'s value when it is a cost field (true), else leaves it (false). An unusable
    /// value is noted as the record's problem, not returned: the line is still read whole.
    pub(crate) fn read(&mut self, key: &str, v: &mut dyn ValueSink<'a>) -> Result<bool, ValueError> {
        let field = match key {
            "latency_ms" => CostField::LatencyMs,
            "usage" => CostField::Usage,
            "attempts" => CostField::Attempts,
            "target" => CostField::Target,
            "metrics" => CostField::Metrics,
            _ => return Ok(false),
        };
        if !self.first_time(field) {
            v.skip()?;
            return Ok(true);
        }
        match field {
            CostField::LatencyMs => {
                let value = v.scalar()?;
                match latency(&value) {
                    Ok(ms) => self.latency_ms = Some(ms),
                    Err(why) => self.fail(field, 0, why),
                }
            }
            CostField::Attempts => match count(&v.scalar()?) {
                Ok(0) => self.fail(field, 0, "is 0, expected a positive integer".into()),
                Ok(n) => self.attempts = Some(n),
                Err(kind) => self.fail(field, 0, format!("is {kind}, expected a positive integer")),
            },
            CostField::Target => match v.scalar()? {
                Scalar::Str(s) => self.target = Some(s),
                other => self.fail(field, 0, format!("is {}, expected a string", other.kind())),
            },
            CostField::Metrics => {
                let mut metrics: Vec<(Box<str>, f64)> = Vec::new();
                let mut problem = None;
                let is_object = v.object(&mut |k, inner| {
                    if metrics.iter().any(|(name, _)| &**name == k) {
                        problem.get_or_insert(format!("has `{k}` twice"));
                        return inner.skip();
                    }
                    if k.is_empty() {
                        // No policy could name it (`metrics.` is no metric).
                        problem.get_or_insert("has a metric with an empty name".to_owned());
                        return inner.skip();
                    }
                    let value = inner.scalar()?;
                    match value.as_f64() {
                        Some(x) if x.is_finite() => metrics.push((k.into(), x + 0.0)),
                        Some(_) => {
                            problem.get_or_insert(format!("`{k}` is not finite, expected a finite number"));
                        }
                        None => {
                            problem.get_or_insert(format!("`{k}` is {}, expected a finite number", value.kind()));
                        }
                    }
                    Ok(())
                })?;
                match (is_object, problem) {
                    (false, _) => self.fail(field, 0, "is not a JSON object of named numbers".into()),
                    (true, Some(why)) => self.fail(field, 0, why),
                    (true, None) => self.metrics = Some(metrics),
                }
            }
            _ => {
                let mut usage = Usage::default();
                let mut seen = 0u8;
                let mut problem = None;
                let is_object = v.object(&mut |k, inner| {
                    let field = match k {
                        "prompt_tokens" => CostField::PromptTokens,
                        "completion_tokens" => CostField::CompletionTokens,
                        _ => return inner.skip(),
                    };
                    if seen & field.bit() != 0 {
                        problem.get_or_insert((field, 1, "is given twice".to_owned()));
                        return inner.skip();
                    }
                    seen |= field.bit();
                    match count(&inner.scalar()?) {
                        Ok(n) if field == CostField::PromptTokens => usage.prompt_tokens = Some(n),
                        Ok(n) => usage.completion_tokens = Some(n),
                        Err(kind) => {
                            problem.get_or_insert((field, 0, format!("is {kind}, expected a non-negative integer")));
                        }
                    }
                    Ok(())
                })?;
                if !is_object {
                    self.fail(field, 0, "is not a JSON object".into());
                } else if let Some((field, occurrence, why)) = problem {
                    self.fail(field, occurrence, why);
                } else {
                    self.usage = Some(usage);
                }
            }
        }
        Ok(true)
    }

    /// The fields as kept, the target shared through `targets` (the distinct targets of a file,
    /// usually one).
    pub(crate) fn keep(&self, targets: &mut Vec<Arc<str>>) -> RecordCost {
        let target = self
            .target
            .as_deref()
            .map(|t| match targets.iter().find(|k| &***k == t) {
                Some(k) => Arc::clone(k),
                None => {
                    let k: Arc<str> = Arc::from(t);
                    targets.push(Arc::clone(&k));
                    k
                }
            });
        RecordCost {
            latency_ms: self.latency_ms,
            usage: self.usage,
            attempts: self.attempts,
            target,
            metrics: self.metrics.clone().map(Vec::into_boxed_slice),
        }
    }
}

/// A latency: a finite non-negative number (`-0` is 0), or why not.
fn latency(value: &Scalar<'_>) -> Result<f64, String> {
    let expected = "expected a finite non-negative number of milliseconds";
    match value.as_f64() {
        None => Err(format!("is {}, {expected}", value.kind())),
        Some(ms) if !ms.is_finite() => Err(format!("is not finite, {expected}")),
        Some(ms) if ms < 0.0 => Err(format!("is negative, {expected}")),
        Some(ms) => Ok(ms + 0.0),
    }
}

/// A non-negative integer that fits 64 bits, or what the value is instead.
fn count(value: &Scalar<'_>) -> Result<u64, &'static str> {
    match value {
        Scalar::Int(n) => u64::try_from(*n).map_err(|_| "negative"),
        Scalar::BigInt(digits) if digits.starts_with('-') => Err("negative"),
        Scalar::BigInt(_) => Err("too large (2^64 or more)"),
        Scalar::Float(_) => Err("a number with a fraction or an exponent"),
        other => Err(other.kind()),
    }
}

/// A latency distribution, in milliseconds.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct LatencySummary {
    /// The median (nearest-rank).
    pub p50: f64,
    /// The 95th percentile (nearest-rank).
    pub p95: f64,
    /// The mean.
    pub mean: f64,
    /// The largest.
    pub max: f64,
}

/// One token count over the records that report it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct TokenSummary {
    /// Records that report it.
    pub records: usize,
    /// Their sum.
    pub total: u64,
    /// `total / records` (`null` when no record reports it).
    pub mean: Option<f64>,
}

/// What one model's counted records cost (the report's `cost.old` / `cost.new`).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CostSummary {
    /// Records counted (one a case with a record under `repeats: last`, every run under `mean`).
    pub records: usize,
    /// Of them, records with `latency_ms`.
    pub with_latency: usize,
    /// Their latency, `null` when none has one.
    pub latency_ms: Option<LatencySummary>,
    /// Records with `usage`.
    pub with_usage: usize,
    /// `usage.prompt_tokens` over the records that report it.
    pub prompt_tokens: TokenSummary,
    /// `usage.completion_tokens` over the records that report it.
    pub completion_tokens: TokenSummary,
    /// Records with `attempts`.
    pub with_attempts: usize,
    /// Their attempts, summed.
    pub attempts: u64,
    /// Records that took more than one attempt.
    pub retried: usize,
    /// The target digest when every record with `target` names the same one, else `null`.
    pub target: Option<String>,
    /// Every distinct target digest, sorted.
    pub targets: Vec<String>,
}

/// One case's latency and tokens for one model: the mean over the records the case counts that
/// carry each (the page shows them beside the case and sorts and filters by their change).
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct CaseCost {
    /// Mean milliseconds, over the records with a latency.
    pub latency_ms: Option<f64>,
    /// Mean tokens (prompt and completion), over the records that say how many they used.
    pub tokens: Option<f64>,
}

impl CaseCost {
    /// The case's figures from the cost fields of the records it counts.
    pub fn of<'c>(costs: impl IntoIterator<Item = &'c RecordCost>) -> CaseCost {
        let (mut latency, mut with_latency, mut tokens, mut with_tokens) = (0.0, 0u32, 0.0, 0u32);
        for c in costs {
            if let Some(ms) = c.latency_ms {
                latency += ms;
                with_latency += 1;
            }
            if let Some(u) = c.usage {
                if u.prompt_tokens.is_some() || u.completion_tokens.is_some() {
                    tokens += (u.prompt_tokens.unwrap_or(0) as f64) + (u.completion_tokens.unwrap_or(0) as f64);
                    with_tokens += 1;
                }
            }
        }
        CaseCost {
            latency_ms: (with_latency > 0).then(|| latency / f64::from(with_latency)),
            tokens: (with_tokens > 0).then(|| tokens / f64::from(with_tokens)),
        }
    }
}

/// The nearest-rank `p`-th percentile (0 < p ≤ 100) of ascending `sorted` (not empty).
pub fn nearest_rank(sorted: &[f64], p: u32) -> f64 {
    let rank = (u64::from(p) * sorted.len() as u64).div_ceil(100).max(1);
    sorted[rank as usize - 1]
}

/// Summarizes `records` records counted for the cases, of which `costs` carry cost fields.
pub fn summarize<'c>(records: usize, costs: impl IntoIterator<Item = &'c RecordCost>) -> CostSummary {
    let mut latencies = Vec::new();
    let mut with_usage = 0;
    let mut tokens = [(0usize, 0u64); 2];
    let (mut with_attempts, mut attempts, mut retried) = (0, 0u64, 0);
    let mut targets: Vec<&str> = Vec::new();
    for c in costs {
        latencies.extend(c.latency_ms);
        if let Some(u) = c.usage {
            with_usage += 1;
            for (slot, n) in tokens.iter_mut().zip([u.prompt_tokens, u.completion_tokens]) {
                if let Some(n) = n {
                    slot.0 += 1;
                    slot.1 = slot.1.saturating_add(n);
                }
            }
        }
        if let Some(n) = c.attempts {
            with_attempts += 1;
            attempts = attempts.saturating_add(n);
            retried += usize::from(n > 1);
        }
        targets.extend(c.target.as_deref());
    }
    latencies.sort_by(f64::total_cmp);
    targets.sort_unstable();
    targets.dedup();
    let token = |(records, total): (usize, u64)| TokenSummary {
        records,
        total,
        mean: (records > 0).then(|| total as f64 / records as f64),
    };
    CostSummary {
        records,
        with_latency: latencies.len(),
        latency_ms: (!latencies.is_empty()).then(|| LatencySummary {
            p50: nearest_rank(&latencies, 50),
            p95: nearest_rank(&latencies, 95),
            mean: latencies.iter().sum::<f64>() / latencies.len() as f64,
            max: latencies[latencies.len() - 1],
        }),
        with_usage,
        prompt_tokens: token(tokens[0]),
        completion_tokens: token(tokens[1]),
        with_attempts,
        attempts,
        retried,
        target: (targets.len() == 1).then(|| targets[0].to_owned()),
        targets: targets.into_iter().map(str::to_owned).collect(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nearest_rank_takes_a_measured_value() {
        let v = [10.0, 20.0, 30.0, 40.0];
        assert_eq!((nearest_rank(&v, 50), nearest_rank(&v, 95)), (20.0, 40.0));
        let v: Vec<f64> = (1..=20).map(f64::from).collect();
        assert_eq!((nearest_rank(&v, 50), nearest_rank(&v, 95)), (10.0, 19.0));
        assert_eq!((nearest_rank(&[7.0], 50), nearest_rank(&[7.0], 95)), (7.0, 7.0));
    }

    #[test]
    fn summarizes_what_the_records_carry() {
        let t: Arc<str> = "sha256:aa".into();
        let costs = [
            RecordCost {
                latency_ms: Some(30.0),
                usage: Some(Usage {
                    prompt_tokens: Some(100),
                    completion_tokens: None,
                }),
                attempts: Some(1),
                target: Some(t.clone()),
                metrics: None,
            },
            RecordCost {
                latency_ms: Some(10.0),
                attempts: Some(3),
                target: Some(t),
                ..RecordCost::default()
            },
        ];
        let s = summarize(3, &costs);
        assert_eq!((s.records, s.with_latency, s.with_usage), (3, 2, 1));
        let l = s.latency_ms.unwrap();
        assert_eq!((l.p50, l.p95, l.mean, l.max), (10.0, 30.0, 20.0, 30.0));
        assert_eq!((s.prompt_tokens.total, s.prompt_tokens.mean), (100, Some(100.0)));
        assert_eq!((s.completion_tokens.records, s.completion_tokens.mean), (0, None));
        assert_eq!((s.with_attempts, s.attempts, s.retried), (2, 4, 1));
        assert_eq!((s.target.as_deref(), s.targets.len()), (Some("sha256:aa"), 1));
    }
}
