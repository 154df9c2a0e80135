//! A two-model run under a sequential policy (`run --policy FILE` with `sequential: true`): the
//! cases go in the policy's order (`crate::sequential::run_units`: the seed's order, a
//! template's cases together), only the budget's units are asked, and as soon as the decision
//! is reached on the leading units that both models have answered (and they hold at least
//! `min_samples` cases, below which `evaluate` would find the evidence insufficient), nothing
//! more is sent. The pairs in flight then are recorded, not counted: the decision is taken at
//! the first look in the seed's order where it is reached, which `evaluate` replays from the
//! files to the same stop.

use super::lane::Lane;
use super::progress::live;
use crate::policy::GatePolicy;
use crate::sequential::{decide_on, min_units, min_units_note, run_units, SequentialReport};
use crate::testset::TestSet;
use anyhow::{anyhow, Result};
use std::time::{Duration, Instant};

/// How long, at most, a new unit waits for the decision to be computed again (it reads every
/// counted record).
const EVERY: Duration = Duration::from_millis(100);
/// How often the live interval is printed.
const SHOW_EVERY: Duration = Duration::from_secs(10);

/// The sequential decision of a run, taken as the records come in.
pub struct Stopper {
    test_set: TestSet,
    policy: GatePolicy,
    /// The budget's units, in order, each its cases' positions.
    units: Vec<Vec<usize>>,
    /// Leading units both models have answered.
    complete: usize,
    /// `complete` at the last decision computed.
    checked: usize,
    last_check: Option<Instant>,
    last_shown: Instant,
    /// The decision once reached (approved or blocked).
    pub decided: Option<SequentialReport>,
    /// The last decision computed.
    pub last: Option<SequentialReport>,
    /// The units the test set has (before the budget).
    available: usize,
}

impl Stopper {
    /// The stopper of a sequential policy over the run's test set.
    pub fn new(test_set: TestSet, policy: GatePolicy) -> Result<Stopper> {
        let settings = policy
            .sequential
            .ok_or_else(|| anyhow!("run --policy takes a sequential policy (sequential: true): a fixed-size decision needs every case, so run them all without --policy"))?;
        let mut units = run_units(&test_set, &policy);
        let available = units.len();
        if let Some(budget) = settings.budget {
            units.truncate(budget);
        }
        Ok(Stopper {
            test_set,
            policy,
            units,
            complete: 0,
            checked: 0,
            last_check: None,
            last_shown: Instant::now(),
            decided: None,
            last: None,
            available,
        })
    }

    /// The cases to ask, in order: the budget's units.
    pub fn order(&self) -> Vec<usize> {
        self.units.iter().flatten().copied().collect()
    }

    /// The budget, in units, and what a unit is.
    pub fn describe(&self) -> String {
        let unit = match self.policy.cluster() {
            crate::policy::Cluster::Template => "templates",
            crate::policy::Cluster::None => "cases",
        };
        format!("{} {unit}", self.units.len())
    }

    /// Under `cluster: template`: the templates available and the fewest at which the rule
    /// could decide (`crate::sequential::min_units`), with the warning when they leave
    /// little room or cannot reach it: `40 templates available; no decision is possible before
    /// 31 (40 templates: …; the run will likely ask most cases)`. `None` under `cluster: none`.
    pub fn template_note(&self) -> Option<String> {
        if self.policy.cluster() != crate::policy::Cluster::Template {
            return None;
        }
        let need = min_units(self.policy.task_regression_tol, self.policy.confidence);
        Some(match min_units_note(self.available, need) {
            Some(note) => format!("{note} (cluster: none decides on cases: docs/statistics.md)"),
            None => format!(
                "{} templates: no decision is possible before {}",
                self.available,
                need.map_or("—".to_owned(), |m| m.to_string())
            ),
        })
    }

    /// Takes the decision again if the leading units both models answered grew (at most every
    /// [`EVERY`], or at once when `force`). True when it is reached now.
    pub fn check(&mut self, lanes: &[Lane], force: bool, show: &dyn Fn(&str)) -> Result<bool> {
        if self.decided.is_some() {
            return Ok(false);
        }
        while self.complete < self.units.len()
            && self.units[self.complete]
                .iter()
                .all(|&p| lanes.iter().all(|l| !l.need[p]))
        {
            self.complete += 1;
        }
        // Each new unit while they are few; then every 5% more, or every [`EVERY`]: the cost of
        // a look grows with the units, and this keeps the whole run's near n·log n.
        let due = force
            || self.complete < 200
            || self.complete >= self.checked + self.checked / 20
            || self.last_check.is_none_or(|t| t.elapsed() >= EVERY)
            || self.complete == self.units.len();
        if self.complete == self.checked || !due {
            return Ok(false);
        }
        self.checked = self.complete;
        self.last_check = Some(Instant::now());
        let positions: Vec<usize> = self.units[..self.complete].iter().flatten().copied().collect();
        let bytes = |lane: &Lane| {
            let mut out = Vec::new();
            for &p in &positions {
                if let Some(line) = lane.output.record(p) {
                    out.extend_from_slice(line.as_bytes());
                }
            }
            out
        };
        let report = decide_on(
            &self.test_set,
            &positions,
            &bytes(&lanes[0]),
            &bytes(&lanes[1]),
            &self.policy,
        )
        .map_err(|e| anyhow!("the records so far cannot be scored: {e}"))?
        .expect("a sequential policy decides");
        // `evaluate` fails closed when fewer cases than `min_samples` are answered by both models:
        // a stop on fewer units' cases waits until that many are answered (the stop itself is
        // unchanged: the rule replays its first crossing), so that `evaluate` replays the decision
        // whatever was in flight when it was reached. The budget spent, it stands as it is.
        let enough = positions.len() >= self.policy.test_set.min_samples || self.complete == self.units.len();
        let reached = report.stopped != "budget" && enough;
        if reached || self.last_shown.elapsed() >= SHOW_EVERY {
            self.last_shown = Instant::now();
            let line = if report.stopped != "budget" && !reached {
                format!(
                    "deploy-gate run: sequential: {} of {} {}s, new − old in [{:+.4}, {:+.4}]: {} after {}; asking on until min_samples {} cases are answered by both",
                    self.complete,
                    self.units.len(),
                    report.unit,
                    report.lower.unwrap_or(f64::NAN),
                    report.upper.unwrap_or(f64::NAN),
                    report.stopped,
                    report.used,
                    self.policy.test_set.min_samples
                )
            } else {
                let mut line = format!("deploy-gate run: sequential: {}", live(&report, self.units.len()));
                let used_cases: usize = self.units[..report.used.min(self.units.len())]
                    .iter()
                    .map(Vec::len)
                    .sum();
                if reached && used_cases < self.policy.test_set.min_samples {
                    line += &format!(
                        " (asked on until min_samples {} cases were answered by both)",
                        self.policy.test_set.min_samples
                    );
                }
                line
            };
            show(&line);
        }
        self.last = Some(report.clone());
        if reached {
            self.decided = Some(report);
        }
        Ok(reached)
    }
}
