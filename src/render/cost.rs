//! The "Latency and tokens" table of the Markdown and HTML reports: the report's `cost` object
//! (see [`crate::cost`]) as rows of plain text, one column per model, which each renderer
//! escapes its own way. A report without `cost` has no table.

use crate::json::number::to_fixed;
use serde::Deserialize;

/// The report's `cost` object, as the renderers read it.
#[derive(Deserialize)]
pub(crate) struct CostPair {
    old: Option<CostV>,
    new: Option<CostV>,
}

#[derive(Deserialize)]
struct CostV {
    records: u64,
    with_latency: u64,
    latency_ms: Option<LatencyV>,
    prompt_tokens: TokensV,
    completion_tokens: TokensV,
    with_attempts: u64,
    attempts: u64,
    retried: u64,
    target: Option<String>,
    targets: Vec<String>,
}

#[derive(Deserialize)]
struct LatencyV {
    p50: f64,
    p95: f64,
    mean: f64,
    max: f64,
}

#[derive(Deserialize)]
struct TokensV {
    records: u64,
    total: u64,
    mean: Option<f64>,
}

/// The table's caption.
pub(crate) const CAPTION: &str = "Latency and tokens";

/// A dash for a value a model's file does not give.
const NONE: &str = "—";

/// A latency of the summary, in milliseconds to a tenth.
fn latency(c: &CostV, pick: fn(&LatencyV) -> f64) -> String {
    c.latency_ms.as_ref().map_or(NONE.into(), |l| to_fixed(pick(l), 1))
}

/// A token count: its mean a record, its total and the records that give it.
fn tokens(t: &TokensV) -> String {
    match t.mean {
        Some(mean) => format!("{} ({} in all, {} records)", to_fixed(mean, 1), t.total, t.records),
        None => NONE.into(),
    }
}

/// The table's rows: a label, the old model's text, the new model's text (plain text).
pub(crate) fn rows(cost: &CostPair) -> Vec<(&'static str, String, String)> {
    type Cell = fn(&CostV) -> String;
    let rows: [(&str, Cell); 10] = [
        ("records counted", |c| c.records.to_string()),
        ("with a latency", |c| c.with_latency.to_string()),
        ("latency p50 (ms)", |c| latency(c, |l| l.p50)),
        ("latency p95 (ms)", |c| latency(c, |l| l.p95)),
        ("latency mean (ms)", |c| latency(c, |l| l.mean)),
        ("latency max (ms)", |c| latency(c, |l| l.max)),
        ("prompt tokens a record", |c| tokens(&c.prompt_tokens)),
        ("completion tokens a record", |c| tokens(&c.completion_tokens)),
        ("attempts", |c| match c.with_attempts {
            0 => NONE.into(),
            n => format!("{} over {n} records, {} retried", c.attempts, c.retried),
        }),
        ("target", |c| match (&c.target, c.targets.len()) {
            (Some(t), _) => t.clone(),
            (None, 0) => NONE.into(),
            (None, n) => format!("{n} targets: {}", c.targets.join(", ")),
        }),
    ];
    let side = |c: &Option<CostV>, get: Cell| c.as_ref().map_or(NONE.into(), get);
    rows.into_iter()
        .map(|(label, get)| (label, side(&cost.old, get), side(&cost.new, get)))
        .collect()
}
