//! Simulations of the decision rules on models of known quality, seeded (ChaCha20) so that the
//! same numbers come out every run: `simulate` (independent cases, the point rule against
//! non-inferiority) and `simulate_clustered` (cases correlated within templates, the unclustered
//! and the clustered interval). `examples/simulate.rs` prints their tables
//! (docs/statistics.md).

use super::cluster::{Clusters, RobustMean};
use super::intervals::newcombe_paired;
use super::quantile::normal_quantile;
use super::Paired;
use crate::decision::{judge_interval, Outcome};
use rand_chacha::ChaCha20Rng;
use rand_core::{RngCore, SeedableRng};

/// A uniform draw in [0, 1) (53 bits).
pub(super) fn unit(rng: &mut ChaCha20Rng) -> f64 {
    (rng.next_u64() >> 11) as f64 / (1u64 << 53) as f64
}

/// How often each rule approved in [`simulate`].
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SimulationResult {
    /// The reference's point rule with tolerance 0 (`new < old` blocks).
    pub point_strict: f64,
    /// The point rule with the given tolerance.
    pub point: f64,
    /// Non-inferiority (Newcombe lower bound ≥ −tolerance).
    pub non_inferiority: f64,
}

/// The README's simulation: `trials` test sets of `n` cases where the old model passes each case
/// with probability `p_old` and the new one independently with `p_new`; the share of trials each
/// rule approves. Seeded ChaCha20: the same numbers every run.
pub fn simulate(
    n: u64,
    p_old: f64,
    p_new: f64,
    tolerance: f64,
    confidence: f64,
    trials: u32,
    seed: u64,
) -> SimulationResult {
    let mut rng = ChaCha20Rng::seed_from_u64(seed);
    let (mut strict, mut point, mut ni) = (0u32, 0u32, 0u32);
    for _ in 0..trials {
        let mut t = Paired {
            both_pass: 0,
            old_only: 0,
            new_only: 0,
            both_fail: 0,
        };
        for _ in 0..n {
            match (unit(&mut rng) < p_old, unit(&mut rng) < p_new) {
                (true, true) => t.both_pass += 1,
                (true, false) => t.old_only += 1,
                (false, true) => t.new_only += 1,
                (false, false) => t.both_fail += 1,
            }
        }
        let old = crate::compat::round4((t.both_pass + t.old_only) as f64 / n as f64);
        let new = crate::compat::round4((t.both_pass + t.new_only) as f64 / n as f64);
        strict += u32::from(new >= old);
        point += u32::from(new >= old - tolerance);
        ni += u32::from(newcombe_paired(&t, confidence).low >= -tolerance);
    }
    let share = |k: u32| k as f64 / trials as f64;
    SimulationResult {
        point_strict: share(strict),
        point: share(point),
        non_inferiority: share(ni),
    }
}

/// A uniform draw in (0, 1): never 0 or 1.
fn open_unit(rng: &mut ChaCha20Rng) -> f64 {
    ((rng.next_u64() >> 11) as f64 + 0.5) / (1u64 << 53) as f64
}

/// `ln X` for X ~ Gamma(shape, 1): Marsaglia and Tsang (2000); for a shape below 1,
/// `Gamma(shape + 1) · U^(1/shape)`, kept in logarithms (small shapes underflow otherwise).
fn ln_gamma_draw(rng: &mut ChaCha20Rng, shape: f64) -> f64 {
    if shape < 1.0 {
        let boost = libm::log(open_unit(rng)) / shape;
        return ln_gamma_draw(rng, shape + 1.0) + boost;
    }
    let d = shape - 1.0 / 3.0;
    let c = 1.0 / (9.0 * d).sqrt();
    loop {
        let x = normal_quantile(open_unit(rng));
        let v = 1.0 + c * x;
        if v <= 0.0 {
            continue;
        }
        let v = v * v * v;
        let u = open_unit(rng);
        if libm::log(u) < 0.5 * x * x + d * (1.0 - v + libm::log(v)) {
            return libm::log(d) + libm::log(v);
        }
    }
}

/// A draw from the beta distribution with mean `mean` whose binomial outcomes have
/// intra-cluster correlation `icc` (`a + b = 1/icc − 1`); `mean` itself when `icc` is 0.
pub(super) fn beta_draw(rng: &mut ChaCha20Rng, mean: f64, icc: f64) -> f64 {
    if icc <= 0.0 {
        return mean;
    }
    let total = 1.0 / icc - 1.0;
    let (ln_a, ln_b) = (
        ln_gamma_draw(rng, mean * total),
        ln_gamma_draw(rng, (1.0 - mean) * total),
    );
    1.0 / (1.0 + libm::exp(ln_b - ln_a))
}

/// One cell of [`simulate_clustered`]: `cases` cases in `templates` templates of equal size
/// (the remainder spread over the first ones). Each template draws each model's pass
/// probability from a beta distribution with the model's mean and intra-cluster correlation
/// `icc`, the two models independently (so the difference of their outcomes has that
/// correlation too); each case then passes or fails for each model independently.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ClusterScenario {
    /// Test cases.
    pub cases: usize,
    /// Templates (clusters).
    pub templates: usize,
    /// Intra-cluster correlation of the outcomes.
    pub icc: f64,
    /// The old model's mean pass rate.
    pub p_old: f64,
    /// The new model's mean pass rate.
    pub p_new: f64,
    /// The task tolerance of the non-inferiority rule.
    pub tolerance: f64,
    /// The level of the intervals.
    pub confidence: f64,
    /// Trials.
    pub trials: u32,
    /// The generator's seed.
    pub seed: u64,
}

/// How one interval did over the trials of a scenario.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct IntervalResult {
    /// Share of trials whose interval of `new − old` holds the true difference `p_new − p_old`.
    pub coverage: f64,
    /// Share of trials the non-inferiority rule approved.
    pub approved: f64,
    /// Share found inconclusive.
    pub inconclusive: f64,
    /// Share blocked.
    pub blocked: f64,
}

/// [`simulate_clustered`]'s result: the rule on the unclustered (Newcombe) and on the clustered
/// (cluster-robust t) interval of the same trials.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ClusterSimulation {
    /// `cluster: none`.
    pub unclustered: IntervalResult,
    /// `cluster: template`.
    pub clustered: IntervalResult,
}

/// Counts of one interval's results.
#[derive(Default)]
struct Tally {
    covered: u32,
    approved: u32,
    inconclusive: u32,
    blocked: u32,
}

impl Tally {
    fn add(&mut self, (low, high): (f64, f64), truth: f64, tolerance: f64) {
        self.covered += u32::from(low <= truth && truth <= high);
        match judge_interval(low, high, tolerance) {
            Outcome::Approved => self.approved += 1,
            Outcome::Inconclusive => self.inconclusive += 1,
            Outcome::Blocked => self.blocked += 1,
        }
    }

    fn shares(&self, trials: u32) -> IntervalResult {
        let share = |k: u32| k as f64 / trials as f64;
        IntervalResult {
            coverage: share(self.covered),
            approved: share(self.approved),
            inconclusive: share(self.inconclusive),
            blocked: share(self.blocked),
        }
    }
}

/// The simulation of clustered test sets (docs/statistics.md): the non-inferiority rule's
/// outcomes and the coverage of its interval, unclustered and clustered by template, over
/// `trials` seeded trials of `scenario`.
pub fn simulate_clustered(s: &ClusterScenario) -> ClusterSimulation {
    let mut rng = ChaCha20Rng::seed_from_u64(s.seed);
    let template_of: Vec<usize> = (0..s.cases).map(|i| i % s.templates).collect();
    let clusters = Clusters {
        of: template_of.clone(),
        count: s.templates.min(s.cases),
    };
    let truth = s.p_new - s.p_old;
    let (mut plain, mut robust) = (Tally::default(), Tally::default());
    let mut d = vec![0.0; s.cases];
    for _ in 0..s.trials {
        let p: Vec<(f64, f64)> = (0..s.templates)
            .map(|_| (beta_draw(&mut rng, s.p_old, s.icc), beta_draw(&mut rng, s.p_new, s.icc)))
            .collect();
        let mut t = Paired {
            both_pass: 0,
            old_only: 0,
            new_only: 0,
            both_fail: 0,
        };
        for (i, &g) in template_of.iter().enumerate() {
            let (old, new) = (unit(&mut rng) < p[g].0, unit(&mut rng) < p[g].1);
            match (old, new) {
                (true, true) => t.both_pass += 1,
                (true, false) => t.old_only += 1,
                (false, true) => t.new_only += 1,
                (false, false) => t.both_fail += 1,
            }
            d[i] = f64::from(u8::from(new)) - f64::from(u8::from(old));
        }
        let n = newcombe_paired(&t, s.confidence);
        plain.add((n.low, n.high), truth, s.tolerance);
        let (low, high) = RobustMean::of(&d, &clusters).map_or((-1.0, 1.0), |m| m.interval(s.confidence));
        robust.add((low.max(-1.0), high.min(1.0)), truth, s.tolerance);
    }
    ClusterSimulation {
        unclustered: plain.shares(s.trials),
        clustered: robust.shares(s.trials),
    }
}
