//! The sequential decision of a report (`sequential: true`; docs/statistics.md, "Sequential
//! decisions"): the units taken from the scored cases, their order drawn from the policy's
//! `seed`, the core's rule over them ([`crate::stats::sequential_decision`]) and the report's
//! `sequential` object.
//!
//! **Units.** A case counts when at least one model has a verdict for it; a side without one
//! fails, as in the fixed rule (the report warns, "counted as failed"). A case that neither
//! verdict file answers was not run (a run stopped early) and is no unit. A case's paired
//! difference is `new − old` of its scores: pass/fail gives −1, 0 or +1; under `repeats: mean`
//! the scores are the shares of passing verdicts, in [0, 1]. Under `cluster: template` the
//! unit is the template: the mean difference of its counted cases (a case without a template is
//! a template of its own), and the budget counts templates.
//!
//! **Order.** Each unit has a key: a case's `pipeline_id` as the report writes it (its text);
//! a template's `template_id` as JSON text (`"tpl-1"`, quotes included), or, for a case without
//! one, `pipeline:` and the case's `pipeline_id`. A unit's rank is the SHA-256 of the UTF-8
//! text `deploy-gate/sequential-order/v1:{seed}:{key}` (`seed` in decimal); units are taken in
//! increasing order of the digest's bytes, ties (a key twice) in test-set order. The order of
//! a unit depends only on the seed and its key, not on the budget nor on which other cases are
//! answered, so a continuation with a larger budget, or on verdict files with more cases
//! answered, takes the same units first.

use crate::decision::{Outcome, Rules};
use crate::input::Side;
use crate::policy::{Cluster, GatePolicy};
use crate::scoring::CaseOutcome;
use crate::stats::{sequential_decision, Clusters, Look, SequentialState};
use crate::testset::TestSet;
use serde::Serialize;
use sha2::{Digest, Sha256};

/// The report's `sequential.method`: the construction of the confidence sequence.
pub const METHOD: &str = "betting_hedged_predictable_plugin";

/// The prefix of the text whose SHA-256 ranks a unit.
pub const ORDER_PREFIX: &str = "deploy-gate/sequential-order/v1";

/// The recorded looks' bounds of the mean difference new − old, as three arrays of one length.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Looks {
    /// The number of units seen at each recorded look.
    pub n: Vec<usize>,
    /// The lower bound at each.
    pub lower: Vec<f64>,
    /// The upper bound at each.
    pub upper: Vec<f64>,
}

/// The report's `sequential` object.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SequentialReport {
    /// [`METHOD`].
    pub method: &'static str,
    /// `case` or `template`.
    pub unit: &'static str,
    /// The seed the order is drawn from (the policy's `seed`).
    pub order_seed: u64,
    /// The budget: the policy's, or every unit's count when it gives none.
    pub budget: usize,
    /// The units there are (cases answered by either model, or their templates).
    pub available: usize,
    /// The fewest units at which the rule could decide at all ([`min_units`]; `null` when
    /// neither side crosses within [`MIN_UNITS_LIMIT`]); absent in a report made under the
    /// earlier rules.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub min_units: Option<Option<usize>>,
    /// The units used: the look where it stopped, or all it could use.
    pub used: usize,
    /// `approved`, `blocked`, or `budget` (spent, or no more units, with neither).
    pub stopped: &'static str,
    /// The task tolerance.
    pub tolerance: f64,
    /// The confidence level.
    pub confidence: f64,
    /// The bounds at the last look used (`null` before any).
    pub lower: Option<f64>,
    /// The upper bound at the last look used.
    pub upper: Option<f64>,
    /// The recorded looks (every look to 1,000, then spaced by 1.1, and the last).
    pub looks: Looks,
}

impl SequentialReport {
    /// The task criterion's outcome.
    pub fn outcome(&self) -> Outcome {
        match self.stopped {
            "approved" => Outcome::Approved,
            "blocked" => Outcome::Blocked,
            _ => Outcome::Inconclusive,
        }
    }
}

/// The rank of a key under a seed: the SHA-256 of `ORDER_PREFIX:{seed}:{key}`.
pub fn rank(seed: u64, key: &str) -> [u8; 32] {
    Sha256::digest(format!("{ORDER_PREFIX}:{seed}:{key}").as_bytes()).into()
}

/// Indices `0..keys.len()` in the seed's order.
pub fn order(seed: u64, keys: &[String]) -> Vec<usize> {
    let ranks: Vec<[u8; 32]> = keys.iter().map(|k| rank(seed, k)).collect();
    let mut idx: Vec<usize> = (0..keys.len()).collect();
    idx.sort_by(|&a, &b| ranks[a].cmp(&ranks[b]).then(a.cmp(&b)));
    idx
}

/// The units (paired differences, in the seed's order) and their kind, from the scored cases.
pub fn units(cases: &[CaseOutcome], policy: &GatePolicy) -> (Vec<f64>, &'static str) {
    let counted: Vec<&CaseOutcome> = cases.iter().filter(|c| !(c.old_missing && c.new_missing)).collect();
    let diffs: Vec<f64> = counted
        .iter()
        .map(|c| c.score(Side::New) - c.score(Side::Old))
        .collect();
    let seed = policy.test_set.seed;
    match policy.cluster() {
        Cluster::None => {
            let keys: Vec<String> = counted.iter().map(|c| c.pipeline_id.text.to_string()).collect();
            (order(seed, &keys).into_iter().map(|i| diffs[i]).collect(), "case")
        }
        Cluster::Template => {
            let clusters = Clusters::by_key(counted.iter().map(|c| {
                let text = c.template_id.get();
                (text != "null").then_some(text)
            }));
            let means = crate::stats::template_means(&diffs, &clusters);
            let mut keys = vec![String::new(); clusters.count];
            for (c, &k) in counted.iter().zip(&clusters.of).rev() {
                let text = c.template_id.get();
                keys[k] = if text == "null" {
                    format!("pipeline:{}", c.pipeline_id.text)
                } else {
                    text.to_owned()
                };
            }
            (order(seed, &keys).into_iter().map(|i| means[i]).collect(), "template")
        }
    }
}

/// The cases (indices into `cases`) of the first `used` units in the seed's order, as [`units`]
/// takes them: the cases the sequential rule decided on, which the guardrails are judged on.
pub fn used_cases(cases: &[CaseOutcome], policy: &GatePolicy, used: usize) -> Vec<usize> {
    let counted: Vec<usize> = (0..cases.len())
        .filter(|&i| !(cases[i].old_missing && cases[i].new_missing))
        .collect();
    let seed = policy.test_set.seed;
    let mut out: Vec<usize> = match policy.cluster() {
        Cluster::None => {
            let keys: Vec<String> = counted.iter().map(|&i| cases[i].pipeline_id.text.to_string()).collect();
            order(seed, &keys).into_iter().take(used).map(|k| counted[k]).collect()
        }
        Cluster::Template => {
            let clusters = Clusters::by_key(counted.iter().map(|&i| {
                let text = cases[i].template_id.get();
                (text != "null").then_some(text)
            }));
            let mut keys = vec![String::new(); clusters.count];
            for (&i, &k) in counted.iter().zip(&clusters.of).rev() {
                let text = cases[i].template_id.get();
                keys[k] = if text == "null" {
                    format!("pipeline:{}", cases[i].pipeline_id.text)
                } else {
                    text.to_owned()
                };
            }
            let chosen: Vec<bool> = {
                let mut c = vec![false; clusters.count];
                for k in order(seed, &keys).into_iter().take(used) {
                    c[k] = true;
                }
                c
            };
            counted
                .iter()
                .zip(&clusters.of)
                .filter(|(_, &k)| chosen[k])
                .map(|(&i, _)| i)
                .collect()
        }
    };
    out.sort_unstable();
    out
}

/// How far [`min_units`] looks for a crossing.
pub const MIN_UNITS_LIMIT: usize = 1_000_000;

/// The fewest units at which the rule could decide at all: the confidence sequence fed every
/// unit at its most favourable value (+1 for approval, −1 for blocking), the smaller of the two
/// first crossings; `None` when neither crosses within [`MIN_UNITS_LIMIT`] units.
pub fn min_units(tolerance: f64, confidence: f64) -> Option<usize> {
    let first = |d: f64, wanted: Outcome| {
        let mut state = SequentialState::new(tolerance, confidence).without_bounds();
        (1..=MIN_UNITS_LIMIT).find(|_| state.push(d) == Some(wanted))
    };
    match (first(1.0, Outcome::Approved), first(-1.0, Outcome::Blocked)) {
        (Some(a), Some(b)) => Some(a.min(b)),
        (a, b) => a.or(b),
    }
}

/// What `available` templates cost against `min_units` ([`min_units`]): `40 templates: no
/// decision is possible before 31; the run will likely ask most cases` when more than half of
/// them are needed before any decision, `… the run cannot decide and will ask every case` when
/// they cannot reach it; `None` when they leave room.
pub fn min_units_note(available: usize, min_units: Option<usize>) -> Option<String> {
    match min_units {
        Some(m) if available < m => Some(format!(
            "{available} templates: no decision is possible before {m}; the run cannot decide and will ask every case"
        )),
        Some(m) if m as f64 > available as f64 / 2.0 => Some(format!(
            "{available} templates: no decision is possible before {m}; the run will likely ask most cases"
        )),
        None => Some(format!(
            "{available} templates: no decision is possible at this tolerance and confidence; the run cannot \
             decide and will ask every case"
        )),
        _ => None,
    }
}

/// The report's warning under `cluster: template` when the templates cannot reach
/// [`min_units`] or leave little room past it ([`min_units_note`]); `None` otherwise.
pub fn min_units_warning(q: &SequentialReport, policy: &GatePolicy) -> Option<String> {
    if policy.cluster() != Cluster::Template {
        return None;
    }
    let need = q.min_units?;
    min_units_note(q.available, need)
        .map(|note| format!("sequential: {note} (cluster: none decides on cases: docs/statistics.md)"))
}

/// The sequential decision of the task criterion, for a sequential policy (`None` otherwise),
/// under the current rules.
pub fn decide(cases: &[CaseOutcome], policy: &GatePolicy) -> Option<SequentialReport> {
    decide_under(cases, policy, Rules::Current)
}

/// [`decide`] under `rules`: the current ones add `min_units` and always record the stopping
/// look; the earlier ones give the previous build's record.
pub fn decide_under(cases: &[CaseOutcome], policy: &GatePolicy, rules: Rules) -> Option<SequentialReport> {
    let settings = policy.sequential?;
    let current = rules == Rules::Current;
    let (units, unit) = units(cases, policy);
    let budget = settings.budget.unwrap_or(units.len());
    let d = sequential_decision(&units, policy.task_regression_tol, policy.confidence, budget);
    let last: Option<Look> = d.last;
    let mut recorded = d.looks.clone();
    if let (true, Some(l)) = (current, last) {
        if recorded.last().map(|r| r.n) != Some(l.n) {
            recorded.push(l);
        }
    }
    let looks = Looks {
        n: recorded.iter().map(|l| l.n).collect(),
        lower: recorded.iter().map(|l| l.low).collect(),
        upper: recorded.iter().map(|l| l.high).collect(),
    };
    Some(SequentialReport {
        method: METHOD,
        unit,
        order_seed: policy.test_set.seed,
        budget,
        available: units.len(),
        min_units: current.then(|| min_units(policy.task_regression_tol, policy.confidence)),
        used: d.used,
        stopped: match d.outcome {
            Outcome::Approved => "approved",
            Outcome::Blocked => "blocked",
            Outcome::Inconclusive => "budget",
        },
        tolerance: policy.task_regression_tol,
        confidence: policy.confidence,
        lower: last.map(|l| l.low),
        upper: last.map(|l| l.high),
        looks,
    })
}

/// The order a sequential run asks the cases in: the units in the seed's order (as [`units`]
/// takes them), each unit its cases' positions in `test_set` (a template's cases together, in
/// test-set order).
pub fn run_units(test_set: &TestSet, policy: &GatePolicy) -> Vec<Vec<usize>> {
    let seed = policy.test_set.seed;
    match policy.cluster() {
        Cluster::None => {
            let keys: Vec<String> = test_set.cases.iter().map(|c| c.pipeline_id.text.to_string()).collect();
            order(seed, &keys).into_iter().map(|i| vec![i]).collect()
        }
        Cluster::Template => {
            let mut keys: Vec<String> = Vec::new();
            let mut members: Vec<Vec<usize>> = Vec::new();
            let mut index: std::collections::HashMap<String, usize> = std::collections::HashMap::new();
            for (i, c) in test_set.cases.iter().enumerate() {
                let text = c.template_id.get();
                let key = if text == "null" {
                    format!("pipeline:{}", c.pipeline_id.text)
                } else {
                    text.to_owned()
                };
                let k = *index.entry(key.clone()).or_insert_with(|| {
                    keys.push(key);
                    members.push(Vec::new());
                    keys.len() - 1
                });
                members[k].push(i);
            }
            order(seed, &keys)
                .into_iter()
                .map(|k| std::mem::take(&mut members[k]))
                .collect()
        }
    }
}

/// The sequential decision over some of a test set's cases (`positions`, each answered by both
/// models in `old` and `new`, verdict files' bytes), scored as `evaluate` scores them: what a
/// run that asks the cases in [`run_units`] order can decide while it runs. `stopped` is
/// `budget` while neither bound is crossed.
pub fn decide_on(
    test_set: &TestSet,
    positions: &[usize],
    old: &[u8],
    new: &[u8],
    policy: &GatePolicy,
) -> Result<Option<SequentialReport>, crate::input::InputError> {
    use crate::input::Role;
    let mut sorted = positions.to_vec();
    sorted.sort_unstable();
    let subset = test_set.subset(&sorted);
    let old = crate::verdicts::parse_verdicts(Role::OldVerdicts, "old", old)?;
    let new = crate::verdicts::parse_verdicts(Role::NewVerdicts, "new", new)?;
    let scoring = crate::scoring::score_with(&subset, &old, &new, policy.repeats());
    let mut policy = policy.clone();
    if let Some(s) = policy.sequential.as_mut() {
        s.budget = None;
    }
    Ok(decide(&scoring.cases, &policy))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_order_is_the_sha256_of_the_seed_and_the_key() {
        let keys: Vec<String> = ["a", "b", "c", "d"].iter().map(|s| s.to_string()).collect();
        let o = order(7, &keys);
        let mut by_hand: Vec<(String, usize)> = keys
            .iter()
            .enumerate()
            .map(|(i, k)| {
                (
                    hex::encode(Sha256::digest(format!("deploy-gate/sequential-order/v1:7:{k}"))),
                    i,
                )
            })
            .collect();
        by_hand.sort();
        assert_eq!(o, by_hand.into_iter().map(|(_, i)| i).collect::<Vec<_>>());
        // Another seed, another order; a subset keeps its relative order.
        assert_ne!(order(8, &keys), o);
        let sub: Vec<String> = o.iter().filter(|&&i| i != 1).map(|&i| keys[i].clone()).collect();
        let o2 = order(7, &sub);
        assert_eq!(o2, (0..sub.len()).collect::<Vec<_>>());
        // Ties in input order.
        let twins = vec!["x".to_owned(), "x".to_owned()];
        assert_eq!(order(0, &twins), vec![0, 1]);
    }
}
