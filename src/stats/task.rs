//! The statistics of a report: the task's (the intervals of both pass rates and of their
//! difference, unclustered and clustered by template; McNemar's test; the paired table; the
//! sample size) and the trajectory's (a seeded bootstrap).

use super::cluster::{Clusters, RobustMean};
use super::intervals::{bootstrap_delta, cases_needed, mcnemar, mean, newcombe_paired, wilson};
use super::{DeltaInterval, McNemar, Paired, RateInterval, POWER};
use crate::policy::{CaseModel, Cluster, Repeats};
use serde::Serialize;

/// How many cases non-inferiority would need, for the report.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SampleSize {
    /// The power it is computed for (0.8).
    pub power: f64,
    /// The task tolerance (the margin).
    pub tolerance: f64,
    /// Observed share of discordant cases, `(b + c) / n`; under `repeats: mean`, the mean
    /// squared difference of the case scores (the same number for one verdict a case).
    pub discordance: f64,
    /// About how many cases would show non-inferiority of equal models at this power (`null`
    /// for a tolerance of 0); computed with at least one discordant case, and times the design
    /// effect (when above 1) when the rules use the clustered interval.
    pub cases_needed: Option<u64>,
    /// Cases in this test set.
    pub num_cases: u64,
}

/// The task evidence.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct TaskStats {
    /// The old model's pass rate and its interval (Wilson's; under `repeats: mean` the t
    /// interval of the case scores' mean).
    pub old: RateInterval,
    /// The new model's pass rate and its interval.
    pub new: RateInterval,
    /// `new − old` with its unclustered interval: Newcombe's paired interval, or under
    /// `repeats: mean` the paired t interval of the case scores.
    pub delta: DeltaInterval,
    /// McNemar's test on the discordant pairs; `null` under `repeats: mean` (it needs one outcome
    /// per case).
    pub mcnemar: Option<McNemar>,
    /// The 2×2 table (by case status).
    pub table: Paired,
    /// Sample-size guidance for non-inferiority.
    pub sample_size: SampleSize,
    /// The intervals clustered by template: `null` under `cluster: none` or with fewer than two
    /// clusters; absent under a policy written before `cluster` existed.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub clustered: Option<Option<ClusteredTask>>,
}

impl TaskStats {
    /// The interval of `new − old` the rules use: the clustered one when there is one.
    pub fn rule_delta(&self) -> &DeltaInterval {
        match &self.clustered {
            Some(Some(c)) => &c.delta,
            _ => &self.delta,
        }
    }
}

/// The task's intervals clustered by template (cluster-robust, t on `clusters − 1` degrees of
/// freedom; rates clipped to [0, 1], the difference to [−1, 1]).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ClusteredTask {
    /// The clusters: templates, and each case without a template.
    pub clusters: usize,
    /// The clustered variance of the difference over its unclustered (ordinary) variance;
    /// `null` when that is 0.
    pub design_effect: Option<f64>,
    /// `new − old`, method `cluster_robust_t`.
    pub delta: DeltaInterval,
    /// The old model's pass rate.
    pub old: RateInterval,
    /// The new model's pass rate.
    pub new: RateInterval,
}

/// A mean and its sample size.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct MeanN {
    /// Unrounded mean.
    pub mean: f64,
    /// Results.
    pub n: usize,
}

/// The trajectory evidence.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct TrajectoryStats {
    /// The old model's mean composite.
    pub old: MeanN,
    /// The new model's mean composite.
    pub new: MeanN,
    /// `new − old` with a seeded percentile bootstrap interval.
    pub delta: DeltaInterval,
}

/// All the statistics of a report.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct GateStats {
    /// The confidence level of every interval.
    pub confidence: f64,
    /// Task evidence.
    pub task: TaskStats,
    /// Trajectory evidence, when both models' results are given.
    pub trajectory: Option<TrajectoryStats>,
}

/// What the task statistics are computed from.
pub struct TaskInput<'a> {
    /// The paired table, by case status.
    pub table: Paired,
    /// Each case's score for the old model: 1 or 0 (one verdict a case), or the share of its
    /// verdicts that pass (`repeats: mean`).
    pub old: &'a [f64],
    /// Each case's score for the new model.
    pub new: &'a [f64],
    /// Each case's cluster: its template (a case without one is a cluster of its own).
    pub clusters: &'a Clusters,
}

/// A delta interval of a method.
fn delta(estimate: f64, (low, high): (f64, f64), method: &'static str) -> DeltaInterval {
    DeltaInterval {
        estimate,
        low: low.max(-1.0),
        high: high.min(1.0),
        method,
        resamples: None,
        seed: None,
    }
}

/// A rate with an interval, clipped to [0, 1].
fn rate(estimate: f64, (low, high): (f64, f64)) -> RateInterval {
    RateInterval {
        rate: estimate,
        low: low.max(0.0),
        high: high.min(1.0),
    }
}

fn differences(old: &[f64], new: &[f64]) -> Vec<f64> {
    old.iter().zip(new).map(|(o, n)| n - o).collect()
}

/// The paired 2×2 table of scores that are 1 or 0.
fn table_of(old: &[f64], new: &[f64]) -> Paired {
    let mut t = Paired {
        both_pass: 0,
        old_only: 0,
        new_only: 0,
        both_fail: 0,
    };
    for (&o, &n) in old.iter().zip(new) {
        match (o == 1.0, n == 1.0) {
            (true, true) => t.both_pass += 1,
            (true, false) => t.old_only += 1,
            (false, true) => t.new_only += 1,
            (false, false) => t.both_fail += 1,
        }
    }
    t
}

/// The unclustered interval of `new − old` over paired case scores: Newcombe's on the 2×2 table
/// (`repeats: last`, scores 1 or 0), or the paired t interval of the differences (`mean`; from
/// −1 to 1 with fewer than two cases). For the report's task and for each template.
pub fn paired_delta(old: &[f64], new: &[f64], repeats: Repeats, confidence: f64) -> DeltaInterval {
    match repeats {
        Repeats::Last => newcombe_paired(&table_of(old, new), confidence),
        Repeats::Mean => {
            let d = differences(old, new);
            match RobustMean::of(&d, &Clusters::singletons(d.len())) {
                Some(m) => delta(m.estimate, m.interval(confidence), "paired_t"),
                None => delta(if d.is_empty() { 0.0 } else { mean(&d) }, (-1.0, 1.0), "paired_t"),
            }
        }
    }
}

/// A pass rate and its t interval over case scores (from 0 to 1 with fewer than two cases).
fn mean_rate(scores: &[f64], confidence: f64) -> RateInterval {
    match RobustMean::of(scores, &Clusters::singletons(scores.len())) {
        Some(m) => rate(m.estimate, m.interval(confidence)),
        None => rate(if scores.is_empty() { 0.0 } else { mean(scores) }, (0.0, 1.0)),
    }
}

/// The task's intervals clustered by template; `None` with fewer than two clusters.
pub fn clustered(task: &TaskInput<'_>, confidence: f64) -> Option<ClusteredTask> {
    let d = differences(task.old, task.new);
    let diff = RobustMean::of(&d, task.clusters)?;
    let old = RobustMean::of(task.old, task.clusters)?;
    let new = RobustMean::of(task.new, task.clusters)?;
    Some(ClusteredTask {
        clusters: diff.clusters,
        design_effect: diff.design_effect(),
        delta: delta(diff.estimate, diff.interval(confidence), "cluster_robust_t"),
        old: rate(old.estimate, old.interval(confidence)),
        new: rate(new.estimate, new.interval(confidence)),
    })
}

/// Computes the statistics under the policy's case model (`None`: a policy written before
/// `cluster` and `repeats`, whose statistics are computed as they were then): the task's from
/// the case scores, the trajectory's from both composite lists.
pub fn gate_stats(
    task: &TaskInput<'_>,
    trajectories: Option<(&[f64], &[f64])>,
    task_tolerance: f64,
    confidence: f64,
    seed: u64,
    model: Option<CaseModel>,
) -> GateStats {
    let table = task.table;
    let n = table.n();
    let repeats = model.map_or(Repeats::Last, |m| m.repeats);
    let discordance = if n == 0 {
        0.0
    } else if repeats == Repeats::Mean {
        let d = differences(task.old, task.new);
        d.iter().fold(0.0, |a, x| a + x * x) / n as f64
    } else {
        (table.old_only + table.new_only) as f64 / n as f64
    };
    let clustered = model.map(|m| match m.cluster {
        Cluster::Template => clustered(task, confidence),
        Cluster::None => None,
    });
    // With the clustered interval, the cases needed grow with the design effect.
    let inflation = match &clustered {
        Some(Some(c)) => c.design_effect.map_or(1.0, |d| d.max(1.0)),
        _ => 1.0,
    };
    let assumed = if n == 0 { 1.0 } else { discordance.max(1.0 / n as f64) };
    let (old, new, delta, mcnemar_test) = match repeats {
        Repeats::Last => (
            wilson(table.both_pass + table.old_only, n, confidence),
            wilson(table.both_pass + table.new_only, n, confidence),
            newcombe_paired(&table, confidence),
            Some(mcnemar(table.old_only, table.new_only)),
        ),
        Repeats::Mean => (
            mean_rate(task.old, confidence),
            mean_rate(task.new, confidence),
            paired_delta(task.old, task.new, repeats, confidence),
            None,
        ),
    };
    let task = TaskStats {
        old,
        new,
        delta,
        mcnemar: mcnemar_test,
        table,
        sample_size: SampleSize {
            power: POWER,
            tolerance: task_tolerance,
            discordance,
            cases_needed: cases_needed(
                if inflation > 1.0 { assumed * inflation } else { assumed },
                task_tolerance,
                confidence,
            ),
            num_cases: n,
        },
        clustered,
    };
    let trajectory = trajectories.and_then(|(old, new)| {
        let delta = bootstrap_delta(old, new, confidence, seed)?;
        Some(TrajectoryStats {
            old: MeanN {
                mean: mean(old),
                n: old.len(),
            },
            new: MeanN {
                mean: mean(new),
                n: new.len(),
            },
            delta,
        })
    });
    GateStats {
        confidence,
        task,
        trajectory,
    }
}
