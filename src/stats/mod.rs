//! Statistical evidence for a decision: Wilson intervals, McNemar's test, Newcombe's paired
//! interval for the difference of two pass rates, cluster-robust intervals for cases correlated
//! within a template, the paired t interval of case scores, a seeded bootstrap for the
//! trajectory delta, the sample size non-inferiority would need, and the betting confidence
//! sequence of the sequential rule. The estimators, their
//! formulas and sources: docs/statistics.md.
//!
//! Logarithms and exponentials come from the `libm` crate, not the platform's C library, so the
//! report is the same bytes natively and in WebAssembly.

mod cluster;
mod intervals;
mod paired;
mod quantile;
mod sequential;
mod simulate;
mod simulate_guardrails;
mod simulate_sequential;
mod task;

pub use cluster::{Clusters, RobustMean};
pub use intervals::{
    bootstrap_delta, cases_needed, mcnemar, newcombe_paired, wilson, DeltaInterval, McNemar, Paired, RateInterval,
    RESAMPLES,
};
pub use paired::{drop_p_value, holm, mean_change, nearest_rank_of, quantile_change, Change, GUARDRAIL_RESAMPLES};
pub use quantile::{normal_quantile, t_density, t_quantile, t_upper_tail};
pub use sequential::{
    sequential_decision, template_means, BettingCs, Look, SequentialDecision, SequentialState, RECORD_EVERY_UP_TO,
    RECORD_RATIO,
};
pub use simulate::{
    simulate, simulate_clustered, ClusterScenario, ClusterSimulation, IntervalResult, SimulationResult,
};
pub use simulate_guardrails::{
    simulate_metrics, simulate_templates, MetricsScenario, MetricsSimulation, OutcomeShares, TemplateScenario,
    TemplateSimulation, FIVE_GUARDRAILS, LATENCY_GUARDRAIL,
};
pub use simulate_sequential::{
    simulate_cluster_choice, simulate_sequential, simulate_sequential_clustered, ClusterChoiceSimulation,
    ClusteredSequentialScenario, ClusteredSequentialSimulation, RuleOutcomes, SequentialScenario, SequentialSimulation,
};
pub use task::{
    clustered, gate_stats, paired_delta, ClusteredTask, GateStats, MeanN, SampleSize, TaskInput, TaskStats,
    TrajectoryStats,
};

/// Power the sample-size guidance is computed for.
pub const POWER: f64 = 0.8;
