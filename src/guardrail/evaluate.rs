//! Judging the guardrails on a scored test set, and the one decision over the task rule and them.
//!
//! Every criterion is judged at the policy's confidence `c` with `α = 1 − c`, mirroring the task
//! rule: **within** when the interval of the paired change lies within the limit (`high ≤
//! limit`: an intersection–union test, no adjustment needed for "all within"); **exceeded** when
//! it lies beyond (`low > limit`), where `low` is taken at `1 − α/k` for the `k` blocking
//! criteria (Bonferroni), so that false blocks of all of them together stay below `α/2`, as the
//! task rule's own; **not shown** otherwise, or with fewer cases than the guardrail needs.
//! `template_regression` is a test for a regression only: exceeded when a template is shown to
//! drop (Holm across the templates at one-sided `α/(2k)`), else within.

use crate::cost::RecordCost;
use crate::decision::Outcome;
use crate::input::Side;
use crate::policy::{Action, Cluster, GatePolicy, Guardrail, Metric, Price, Repeats, Statistic, TemplateRegression};
use crate::scoring::CaseOutcome;
use crate::stats::{drop_p_value, holm, mean_change, quantile_change, Change, Clusters, GUARDRAIL_RESAMPLES};
use crate::testset::TestSet;
use crate::verdicts::Verdicts;
use serde::{Serialize, Serializer};
use serde_json::value::RawValue;

/// The methods a criterion's interval comes from, as the report names them.
pub const GUARDRAIL_METHODS: [&str; 3] = ["paired_t", "fieller", "bootstrap"];

/// A criterion's outcome.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum GuardrailOutcome {
    /// The change is shown within the limit.
    Within,
    /// The change is shown beyond the limit.
    Exceeded,
    /// Neither.
    NotShown,
}

impl GuardrailOutcome {
    /// `within`, `exceeded`, `not_shown`.
    pub fn as_str(self) -> &'static str {
        match self {
            GuardrailOutcome::Within => "within",
            GuardrailOutcome::Exceeded => "exceeded",
            GuardrailOutcome::NotShown => "not_shown",
        }
    }
}

impl Serialize for GuardrailOutcome {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.as_str())
    }
}

/// One guardrail as judged (the report's `guardrails.criteria[i]`).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CriterionResult {
    /// `latency_ms`, `total_tokens`, `metrics.NAME`, …
    pub metric: String,
    /// `mean`, `p50`, …
    pub statistic: String,
    /// `block` or `advise`.
    pub action: Action,
    /// `max_increase` or `max_difference`.
    pub limit_kind: &'static str,
    /// The limit (a fraction for `max_increase`).
    pub limit: f64,
    /// The old model's statistic over the cases judged (`null` without one).
    pub old: Option<f64>,
    /// The new model's.
    pub new: Option<f64>,
    /// The change: `new/old − 1` for `max_increase`, `new − old` for `max_difference`.
    pub change: Option<f64>,
    /// The interval of the change at the policy's confidence (`null`: unbounded or no case).
    pub low: Option<f64>,
    /// Its upper bound.
    pub high: Option<f64>,
    /// The lower bound the exceeded test used: at `adjusted_confidence` for a blocking
    /// criterion, at the policy's confidence for an advisory one.
    pub exceeded_low: Option<f64>,
    /// `paired_t`, `fieller` or `bootstrap`.
    pub method: &'static str,
    /// Cases judged: both models' records carry the metric.
    pub n: usize,
    /// Cases left out because one model's records (or both) lack the metric.
    pub excluded: usize,
    /// The fewest cases it is judged with.
    pub min_cases: usize,
    /// Within, exceeded, or not shown.
    pub outcome: GuardrailOutcome,
    /// The per-case paired changes (as `change` is taken: relative or absolute), binned for a
    /// plot; `null` without a case.
    pub distribution: Option<Distribution>,
}

/// Bins of the per-case paired changes: [`DISTRIBUTION_BINS`] equal bins from `low` (the 1st
/// percentile, nearest-rank) to `high` (the 99th); a change outside falls in the edge bin.
/// Cases whose old value is 0 have no relative change and are left out of a relative one.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Distribution {
    /// The first bin's lower edge.
    pub low: f64,
    /// The last bin's upper edge.
    pub high: f64,
    /// Cases per bin.
    pub counts: Vec<usize>,
}

/// Bins of a criterion's [`Distribution`].
pub const DISTRIBUTION_BINS: usize = 20;

fn distribution(old: &[f64], new: &[f64], relative: bool) -> Option<Distribution> {
    let mut changes: Vec<f64> = old
        .iter()
        .zip(new)
        .filter(|(o, _)| !relative || **o != 0.0)
        .map(|(o, n)| if relative { n / o - 1.0 } else { n - o })
        .collect();
    if changes.is_empty() {
        return None;
    }
    changes.sort_by(f64::total_cmp);
    let at = |p: f64| changes[((p * changes.len() as f64).ceil() as usize).clamp(1, changes.len()) - 1];
    let (low, high) = (at(0.01), at(0.99));
    let mut counts = vec![0; DISTRIBUTION_BINS];
    let width = (high - low) / DISTRIBUTION_BINS as f64;
    for c in &changes {
        let bin = if width > 0.0 {
            (((c - low) / width).floor().max(0.0) as usize).min(DISTRIBUTION_BINS - 1)
        } else {
            DISTRIBUTION_BINS / 2
        };
        counts[bin] += 1;
    }
    Some(Distribution { low, high, counts })
}

/// One template tested by `template_regression`.
#[derive(Debug, Clone, Serialize)]
pub struct TemplateRow {
    /// The template, as in the log.
    pub template_id: Box<RawValue>,
    /// Its cases.
    pub n: usize,
    /// The old model's pass rate on them.
    pub old: f64,
    /// The new model's.
    pub new: f64,
    /// The one-sided p-value of a drop of more than `max_drop`.
    pub p_value: f64,
    /// Holm's adjusted p-value across the tested templates.
    pub adjusted_p: f64,
    /// Shown to drop by more than `max_drop`.
    pub regressed: bool,
}

impl PartialEq for TemplateRow {
    fn eq(&self, other: &Self) -> bool {
        self.template_id.get() == other.template_id.get()
            && (
                self.n,
                self.old,
                self.new,
                self.p_value,
                self.adjusted_p,
                self.regressed,
            ) == (
                other.n,
                other.old,
                other.new,
                other.p_value,
                other.adjusted_p,
                other.regressed,
            )
    }
}

/// `template_regression` as judged.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct TemplateResult {
    /// The drop allowed.
    pub max_drop: f64,
    /// The fewest cases a template is tested with.
    pub min_cases: usize,
    /// `block` or `advise`.
    pub action: Action,
    /// The one-sided level each adjusted p-value is held to.
    pub alpha: f64,
    /// Templates tested.
    pub tested: usize,
    /// Templates with fewer cases, not tested.
    pub untested: usize,
    /// Exceeded when a template regressed, else within.
    pub outcome: GuardrailOutcome,
    /// The tested templates, those that regressed first, then by adjusted p-value.
    pub templates: Vec<TemplateRow>,
}

/// The report's `guardrails`: every criterion besides the task rule, as judged.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct GuardrailsReport {
    /// The policy's confidence (the intervals' level).
    pub confidence: f64,
    /// The blocking criteria (`k`).
    pub blocking: usize,
    /// `1 − α/k`: the level of a blocking criterion's exceeded test.
    pub adjusted_confidence: f64,
    /// The cases the criteria are judged on (under `sequential: true`, those the task rule
    /// used).
    pub cases: usize,
    /// The bootstrap's seed (the policy's `seed`) and resamples, for quantiles.
    pub seed: u64,
    /// Resamples of each quantile's bootstrap.
    pub resamples: usize,
    /// The guardrails, in the policy's order.
    pub criteria: Vec<CriterionResult>,
    /// `template_regression`, when the policy has it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub template_regression: Option<TemplateResult>,
}

/// The value of `metric` in one record, when it carries it.
fn value_of(metric: &Metric, r: &RecordCost, price: Option<&Price>) -> Option<f64> {
    let tokens = || r.usage.and_then(|u| u.prompt_tokens.zip(u.completion_tokens));
    match metric {
        Metric::LatencyMs => r.latency_ms,
        Metric::PromptTokens => r.usage?.prompt_tokens.map(|n| n as f64),
        Metric::CompletionTokens => r.usage?.completion_tokens.map(|n| n as f64),
        Metric::TotalTokens => tokens().map(|(p, c)| p as f64 + c as f64),
        Metric::Cost => tokens().zip(price).map(|((p, c), price)| price.of(p, c)),
        Metric::Named(name) => r.metric(name),
    }
}

/// A case's value: the mean over the records counted for it that carry the metric.
fn case_value(metric: &Metric, records: &[&RecordCost], price: Option<&Price>) -> Option<f64> {
    let (mut sum, mut n) = (0.0, 0usize);
    for r in records {
        if let Some(v) = value_of(metric, r, price) {
            sum += v;
            n += 1;
        }
    }
    (n > 0).then(|| sum / n as f64)
}

/// The cluster of each case: its template (a case without one is its own), or one a case.
fn clusters_for(cases: &[&CaseOutcome], cluster: Cluster) -> Clusters {
    match cluster {
        Cluster::None => Clusters::singletons(cases.len()),
        Cluster::Template => Clusters::by_key(cases.iter().map(|c| {
            let text = c.template_id.get();
            (text != "null").then_some(text)
        })),
    }
}

/// Judges the policy's guardrails on the cases `used` (indices into `cases`, the scored test
/// set in test-set order; `None`: every case). `None` when the policy has none.
pub fn evaluate(
    policy: &GatePolicy,
    test_set: &TestSet,
    old: &Verdicts,
    new: &Verdicts,
    cases: &[CaseOutcome],
    used: Option<&[usize]>,
) -> Option<GuardrailsReport> {
    let g = &policy.guardrails;
    if g.is_empty() {
        return None;
    }
    let all: Vec<usize>;
    let used = match used {
        Some(u) => u,
        None => {
            all = (0..cases.len()).collect();
            &all
        }
    };
    let confidence = policy.confidence;
    let alpha = 1.0 - confidence;
    let k = g.blocking().max(1);
    let adjusted = 1.0 - alpha / k as f64;
    let all_runs = policy.repeats() == Repeats::Mean;
    let records: Vec<_> = used
        .iter()
        .map(|&i| {
            let (id, twin) = (&test_set.cases[i].pipeline_id, test_set.has_twin(i));
            (old.costs_for(id, twin, all_runs).1, new.costs_for(id, twin, all_runs).1)
        })
        .collect();
    let criteria = g
        .list
        .iter()
        .map(|rail| {
            let mut values = (Vec::new(), Vec::new());
            let mut judged = Vec::new();
            for (&i, (o, n)) in used.iter().zip(&records) {
                let prices = g.prices.as_ref();
                let pair = case_value(&rail.metric, o, prices.map(|p| &p.old)).zip(case_value(
                    &rail.metric,
                    n,
                    prices.map(|p| &p.new),
                ));
                if let Some((o, n)) = pair {
                    values.0.push(o);
                    values.1.push(n);
                    judged.push(&cases[i]);
                }
            }
            let clusters = clusters_for(&judged, policy.cluster());
            judge(
                rail,
                &values.0,
                &values.1,
                &clusters,
                [confidence, adjusted],
                used.len(),
                policy.test_set.seed,
            )
        })
        .collect();
    let template_regression = g.template_regression.map(|t| {
        let level = if t.action == Action::Block {
            alpha / 2.0 / k as f64
        } else {
            alpha / 2.0
        };
        templates(t, level, cases, used)
    });
    Some(GuardrailsReport {
        confidence,
        blocking: g.blocking(),
        adjusted_confidence: adjusted,
        cases: used.len(),
        seed: policy.test_set.seed,
        resamples: GUARDRAIL_RESAMPLES,
        criteria,
        template_regression,
    })
}

/// One guardrail over its paired values.
fn judge(
    rail: &Guardrail,
    old: &[f64],
    new: &[f64],
    clusters: &Clusters,
    confidences: [f64; 2],
    considered: usize,
    seed: u64,
) -> CriterionResult {
    let relative = rail.limit.is_relative();
    let n = old.len();
    let stat = |xs: &[f64]| -> Option<f64> {
        if xs.is_empty() {
            return None;
        }
        Some(match rail.statistic {
            Statistic::Mean => xs.iter().sum::<f64>() / xs.len() as f64,
            Statistic::Percentile(p) => crate::stats::nearest_rank_of(&mut xs.to_vec(), f64::from(p) / 100.0),
        })
    };
    let (old_stat, new_stat) = (stat(old), stat(new));
    // Whether the change can be measured at all: a statistic that overflowed cannot, nor a
    // relative change from an old statistic at or below 0 (its ratio has no meaning), unless
    // every case is the same on both sides (no change, whatever the limit's kind).
    let unchanged = n > 0 && old.iter().zip(new).all(|(a, b)| a == b);
    let finite = old_stat.is_some_and(f64::is_finite) && new_stat.is_some_and(f64::is_finite);
    let measurable = n > 0 && finite && (!relative || unchanged || old_stat.is_some_and(|o| o > 0.0));
    let (method, change): (&'static str, Option<Change>) = match rail.statistic {
        Statistic::Mean => (
            if relative { "fieller" } else { "paired_t" },
            mean_change(old, new, clusters, relative, confidences),
        ),
        Statistic::Percentile(p) => (
            "bootstrap",
            (n >= rail.min_cases())
                .then(|| quantile_change(old, new, clusters, f64::from(p) / 100.0, relative, confidences, seed))
                .flatten(),
        ),
    };
    let change = if !measurable {
        None
    } else if unchanged && n >= rail.min_cases() {
        Some(Change {
            estimate: 0.0,
            bounds: [Some((0.0, 0.0)); 2],
        })
    } else {
        change
    };
    let blocking = rail.action == Action::Block;
    let shown = change.map(|c| c.bounds[0]).unwrap_or(None);
    let exceeded_low = change
        .and_then(|c| if blocking { c.bounds[1] } else { c.bounds[0] })
        .map(|b| b.0);
    let limit = rail.limit.value();
    let outcome = if n < rail.min_cases() {
        GuardrailOutcome::NotShown
    } else if shown.is_some_and(|(_, high)| high <= limit) {
        GuardrailOutcome::Within
    } else if exceeded_low.is_some_and(|low| low > limit) {
        GuardrailOutcome::Exceeded
    } else {
        GuardrailOutcome::NotShown
    };
    CriterionResult {
        metric: rail.metric.name(),
        statistic: rail.statistic.name(),
        action: rail.action,
        limit_kind: rail.limit.key(),
        limit,
        old: old_stat.filter(|x| x.is_finite()),
        new: new_stat.filter(|x| x.is_finite()),
        change: change.map(|c| c.estimate).filter(|x| x.is_finite()),
        low: shown.map(|b| b.0),
        high: shown.map(|b| b.1),
        exceeded_low,
        method,
        n,
        excluded: considered - n,
        min_cases: rail.min_cases(),
        outcome,
        distribution: distribution(old, new, relative),
    }
}

/// `template_regression` over the cases `used`: each template with `min_cases` cases tested,
/// Holm across them at the one-sided `level`.
fn templates(t: TemplateRegression, level: f64, cases: &[CaseOutcome], used: &[usize]) -> TemplateResult {
    let mut groups: Vec<(&RawValue, Vec<f64>, Vec<f64>)> = Vec::new();
    let mut index: std::collections::HashMap<&str, usize> = std::collections::HashMap::new();
    for &i in used {
        let c = &cases[i];
        if c.old_missing && c.new_missing {
            continue;
        }
        let text = c.template_id.get();
        if text == "null" {
            continue;
        }
        let k = *index.entry(text).or_insert_with(|| {
            groups.push((&c.template_id, Vec::new(), Vec::new()));
            groups.len() - 1
        });
        groups[k].1.push(c.score(Side::Old));
        groups[k].2.push(c.score(Side::New));
    }
    let (tested, untested): (Vec<_>, Vec<_>) = groups.into_iter().partition(|g| g.1.len() >= t.min_cases);
    let p: Vec<f64> = tested
        .iter()
        .map(|(_, o, n)| drop_p_value(o, n, t.max_drop).unwrap_or(1.0))
        .collect();
    let adjusted = holm(&p);
    let mean = |xs: &[f64]| xs.iter().sum::<f64>() / xs.len() as f64;
    let mut rows: Vec<TemplateRow> = tested
        .iter()
        .zip(p.iter().zip(&adjusted))
        .map(|((id, o, n), (&p, &a))| TemplateRow {
            template_id: (*id).to_owned(),
            n: o.len(),
            old: mean(o),
            new: mean(n),
            p_value: p,
            adjusted_p: a,
            regressed: a <= level,
        })
        .collect();
    rows.sort_by(|a, b| {
        b.regressed
            .cmp(&a.regressed)
            .then(a.adjusted_p.total_cmp(&b.adjusted_p))
    });
    let regressed = rows.iter().any(|r| r.regressed);
    TemplateResult {
        max_drop: t.max_drop,
        min_cases: t.min_cases,
        action: t.action,
        alpha: level,
        tested: rows.len(),
        untested: untested.len(),
        // No template with min_cases cases: nothing is shown either way.
        outcome: if regressed {
            GuardrailOutcome::Exceeded
        } else if rows.is_empty() {
            GuardrailOutcome::NotShown
        } else {
            GuardrailOutcome::Within
        },
        templates: rows,
    }
}

/// A change as reasons write it: `+12.3%` for a relative one, else the number.
fn change_text(x: f64, relative: bool) -> String {
    if relative {
        format!("{:+.1}%", x * 100.0)
    } else if x == 0.0 {
        "+0".to_owned()
    } else if x.abs() >= 100.0 {
        format!("{x:+.1}")
    } else if x.abs() >= 0.01 {
        format!("{x:+.4}")
    } else {
        format!("{x:+.3e}")
    }
}

/// One criterion in a reason: `p95 latency_ms +31.2% [+25.0%, +37.9%] (limit +10.0%, n 1000): exceeded`.
fn criterion_text(c: &CriterionResult) -> String {
    let relative = c.limit_kind == "max_increase";
    let figures = match (c.change, c.low.zip(c.high)) {
        (Some(x), Some((l, h))) => format!(
            "{} [{}, {}]",
            change_text(x, relative),
            change_text(l, relative),
            change_text(h, relative)
        ),
        (Some(x), None) => format!("{} [unbounded]", change_text(x, relative)),
        (None, _) if c.n == 0 => "no case carries it on both sides".to_owned(),
        (None, _) if c.old.is_none() || c.new.is_none() => format!("the {} is not a finite number", c.statistic),
        (None, _) if relative && c.old.is_some_and(|o| o <= 0.0) => format!(
            "no relative change from an old {} of {} (a relative limit needs an old value above 0; use max_difference)",
            c.statistic,
            c.old.map_or(String::new(), |o| format!("{o}"))
        ),
        (None, _) => "no change measured".to_owned(),
    };
    let short = if c.n < c.min_cases {
        format!(", {} of the {} cases it needs", c.n, c.min_cases)
    } else {
        String::new()
    };
    format!(
        "{} {} {figures} (limit {}, n {}{short}): {}",
        c.statistic,
        c.metric,
        change_text(c.limit, relative),
        c.n,
        c.outcome.as_str().replace('_', " ")
    )
}

fn template_text(t: &TemplateResult) -> String {
    let regressed: Vec<String> = t
        .templates
        .iter()
        .filter(|r| r.regressed)
        .map(|r| format!("{} {:.3} → {:.3}", r.template_id.get(), r.old, r.new))
        .collect();
    let head = format!(
        "template_regression (max drop {}, {} of {} templates tested)",
        t.max_drop,
        t.tested,
        t.tested + t.untested
    );
    if t.outcome == GuardrailOutcome::NotShown {
        format!(
            "{head}: not shown (no template has the {} cases min_cases asks)",
            t.min_cases
        )
    } else if regressed.is_empty() {
        format!("{head}: within (no template shown to regress)")
    } else {
        format!("{head}: exceeded ({})", regressed.join(", "))
    }
}

/// The one decision over the task rule (`task`, its reason) and the guardrails: blocked when the
/// task rule blocks or a blocking criterion is exceeded; approved when the task rule approves
/// and every blocking criterion is within; else inconclusive. The reason names the causes, then
/// the task rule's reason and every criterion, blocking and advisory apart. With no case to
/// judge (an empty test set) the task rule's decision stands.
/// Whether an inconclusive decision leaves the task rule itself open, not only guardrails:
/// false only when [`combine`]'s head lists what was not shown without "the task rule".
pub fn task_rule_open(reason: &str) -> bool {
    reason
        .strip_prefix("inconclusive: not shown: ")
        .is_none_or(|rest| rest.starts_with("the task rule"))
}

/// The decision of the task rule and the guardrails together, with its reason.
pub fn combine(task: Outcome, task_reason: &str, g: &GuardrailsReport) -> (Outcome, String) {
    let task_detail = task_reason.split_once(": ").map_or(task_reason, |(_, rest)| rest);
    let mut listing = String::new();
    for (name, action) in [("blocking", Action::Block), ("advisory", Action::Advise)] {
        let mut items: Vec<String> = g
            .criteria
            .iter()
            .filter(|c| c.action == action)
            .map(criterion_text)
            .collect();
        items.extend(
            g.template_regression
                .iter()
                .filter(|t| t.action == action)
                .map(template_text),
        );
        if !items.is_empty() {
            listing.push_str(&format!("; {name} guardrails: {}", items.join("; ")));
        }
    }
    if g.cases == 0 {
        return (task, format!("{task_reason}; guardrails not judged (no case){listing}"));
    }
    let blocking = |o: GuardrailOutcome| {
        let mut names: Vec<String> = g
            .criteria
            .iter()
            .filter(|c| c.action == Action::Block && c.outcome == o)
            .map(|c| format!("{} {}", c.statistic, c.metric))
            .collect();
        if let Some(t) = g.template_regression.as_ref().filter(|t| t.action == Action::Block) {
            if t.outcome == o {
                let regressed: Vec<&str> = t
                    .templates
                    .iter()
                    .filter(|r| r.regressed)
                    .map(|r| r.template_id.get())
                    .collect();
                names.push(if regressed.is_empty() {
                    "template_regression".into()
                } else {
                    format!("template_regression ({})", regressed.join(", "))
                });
            }
        }
        names
    };
    let exceeded = blocking(GuardrailOutcome::Exceeded);
    let not_shown = blocking(GuardrailOutcome::NotShown);
    let (outcome, head) = if task == Outcome::Blocked || !exceeded.is_empty() {
        let mut causes = Vec::new();
        if task == Outcome::Blocked {
            causes.push("the task rule blocked".to_owned());
        }
        causes.extend(exceeded.iter().map(|n| format!("{n} exceeded its limit")));
        (Outcome::Blocked, causes.join(", "))
    } else if task == Outcome::Approved && not_shown.is_empty() {
        (
            Outcome::Approved,
            "the task rule and every blocking guardrail passed".to_owned(),
        )
    } else {
        let mut open = Vec::new();
        if task != Outcome::Approved {
            open.push("the task rule".to_owned());
        }
        open.extend(not_shown);
        (Outcome::Inconclusive, format!("not shown: {}", open.join(", ")))
    };
    (
        outcome,
        format!("{}: {head}; task rule: {task_detail}{listing}", outcome.as_str()),
    )
}
