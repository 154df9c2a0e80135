//! Anytime-valid sequential decisions: the betting confidence sequence of Waudby-Smith and
//! Ramdas (2024) for a mean in [0, 1], and the rule that stops as soon as it shows
//! non-inferiority or a regression (docs/statistics.md, "Sequential decisions").
//!
//! Sans-IO: observations are pushed in one at a time, bounds and outcomes are values; no clock,
//! no threads, and `libm` for every logarithm, so it is the same numbers in WebAssembly.
//!
//! The construction is confseq's `betting_cs` with its defaults (confseq 0.0.11,
//! `confseq/betting.py`), the hedged capital process with predictable plug-in bets:
//!
//! ```text
//! μ̂ᵢ  = min((½ + Σ_{j≤i} xⱼ) / (i + 1), 1)              μ̂₀ = ½
//! σ̂²ᵢ = (¼ + Σ_{j≤i} (xⱼ − μ̂ⱼ)²) / (i + 1)             σ̂²₀ = ¼
//! λᵢ  = √(2 ln(2/α) / (i · ln(1 + i) · σ̂²ᵢ₋₁))           (the bet of look i, from looks < i)
//! K⁺ₜ(m) = Πᵢ (1 + min(λᵢ, ½/m) · (xᵢ − m))
//! K⁻ₜ(m) = Πᵢ (1 − min(λᵢ, ½/(1 − m)) · (xᵢ − m))
//! Cₜ = { m ∈ [0, 1] : max(½K⁺ₜ(m), ½K⁻ₜ(m)) < 1/α }
//! ```
//!
//! Each factor of `K⁺` is non-increasing in `m` and at least ½, and each factor of `K⁻`
//! non-decreasing, so `Cₜ = [lₜ, uₜ]` with `lₜ` the root of `ln K⁺ₜ(m) = ln(2/α)` and `uₜ` that
//! of `ln K⁻ₜ(m) = ln(2/α)`, found by bisection to 1e-12. By Ville's inequality
//! `P(∃t: μ ∉ Cₜ) ≤ α` for observations whose conditional mean is `μ`, so the bounds hold at
//! every look and under any stopping rule.

use super::cluster::Clusters;
use crate::decision::Outcome;

/// Half the capital goes on each side (confseq's `theta`).
const THETA: f64 = 0.5;
/// The bets are truncated at `TRUNCATION / m` and `TRUNCATION / (1 − m)` (confseq's `trunc_scale`).
const TRUNCATION: f64 = 0.5;
/// The prior mean and variance of the plug-in estimates, each worth one observation.
const PRIOR_MEAN: f64 = 0.5;
const PRIOR_VARIANCE: f64 = 0.25;
/// Bisection stops when the bracket is this narrow.
const BISECTION_WIDTH: f64 = 1e-12;
/// Every look up to this one records its bounds; later looks are spaced by [`RECORD_RATIO`].
pub const RECORD_EVERY_UP_TO: usize = 1000;
/// Beyond [`RECORD_EVERY_UP_TO`], a look is recorded when it is at least this many times the
/// last recorded one: about 1,050 looks for 100,000 observations.
pub const RECORD_RATIO: f64 = 1.1;

/// The betting confidence sequence for the mean of observations in [0, 1], one observation at
/// a time. It keeps every observation and its bet (16 bytes a look), so the exact bounds at the
/// current look cost O(t) per evaluation of the capital.
#[derive(Debug, Clone, PartialEq)]
pub struct BettingCs {
    /// `ln(1/(θα))`: a side's capital at or above `1/(θα)` rules `m` out.
    threshold: f64,
    /// `2 ln(1/(θα))`, the numerator of the bets.
    bet_scale: f64,
    xs: Vec<f64>,
    bets: Vec<f64>,
    sum: f64,
    squares: f64,
}

impl BettingCs {
    /// An empty sequence at level `alpha` (0 < α < 1).
    pub fn new(alpha: f64) -> Self {
        assert!(alpha > 0.0 && alpha < 1.0, "alpha is in (0, 1)");
        let threshold = libm::log(1.0 / (THETA * alpha));
        BettingCs {
            threshold,
            bet_scale: 2.0 * threshold,
            xs: Vec::new(),
            bets: Vec::new(),
            sum: 0.0,
            squares: 0.0,
        }
    }

    /// The number of observations so far.
    pub fn len(&self) -> usize {
        self.xs.len()
    }

    /// True before the first observation.
    pub fn is_empty(&self) -> bool {
        self.xs.is_empty()
    }

    /// `ln(1/(θα))`, the log-capital at which a side rules `m` out.
    pub fn threshold(&self) -> f64 {
        self.threshold
    }

    /// The bet of the next look, from the looks so far: `λₜ` with `t = len() + 1`.
    pub fn next_bet(&self) -> f64 {
        let t = (self.xs.len() + 1) as f64;
        let variance = (PRIOR_VARIANCE + self.squares) / t;
        let bet = libm::sqrt(self.bet_scale / (t * libm::log1p(t) * variance));
        if bet.is_nan() {
            0.0
        } else {
            bet
        }
    }

    /// Adds an observation in [0, 1] (clamped) and returns the bet it was placed with.
    pub fn push(&mut self, x: f64) -> f64 {
        let x = x.clamp(0.0, 1.0);
        let bet = self.next_bet();
        self.sum += x;
        let t = (self.xs.len() + 1) as f64;
        let mean = ((PRIOR_MEAN + self.sum) / (t + 1.0)).min(1.0);
        self.squares += (x - mean) * (x - mean);
        self.xs.push(x);
        self.bets.push(bet);
        bet
    }

    /// `ln K⁺ₜ(m)`: the capital of betting that the mean is above `m`.
    pub fn ln_capital_above(&self, m: f64) -> f64 {
        let cap = TRUNCATION / m;
        self.xs
            .iter()
            .zip(&self.bets)
            .map(|(&x, &bet)| libm::log1p(bet.min(cap) * (x - m)))
            .sum()
    }

    /// `ln K⁻ₜ(m)`: the capital of betting that the mean is below `m`.
    pub fn ln_capital_below(&self, m: f64) -> f64 {
        let cap = TRUNCATION / (1.0 - m);
        self.xs
            .iter()
            .zip(&self.bets)
            .map(|(&x, &bet)| libm::log1p(-bet.min(cap) * (x - m)))
            .sum()
    }

    /// The lower bound `lₜ`: the smallest `m` that `K⁺` does not rule out (0 when none is ruled
    /// out), to 1e-12.
    pub fn lower(&self) -> f64 {
        if self.ln_capital_above(0.0) < self.threshold {
            return 0.0;
        }
        // K⁺(0) ≥ 2/α and K⁺(1) ≤ 1: the root is in (0, 1].
        let (mut out, mut inside) = (0.0, 1.0);
        while inside - out > BISECTION_WIDTH {
            let mid = 0.5 * (out + inside);
            if self.ln_capital_above(mid) < self.threshold {
                inside = mid;
            } else {
                out = mid;
            }
        }
        inside
    }

    /// The upper bound `uₜ`: the largest `m` that `K⁻` does not rule out, to 1e-12.
    pub fn upper(&self) -> f64 {
        if self.ln_capital_below(1.0) < self.threshold {
            return 1.0;
        }
        let (mut inside, mut out) = (0.0, 1.0);
        while out - inside > BISECTION_WIDTH {
            let mid = 0.5 * (inside + out);
            if self.ln_capital_below(mid) < self.threshold {
                inside = mid;
            } else {
                out = mid;
            }
        }
        inside
    }

    /// `[lₜ, uₜ]` at the current look; `[0, 1]` before the first.
    pub fn bounds(&self) -> (f64, f64) {
        (self.lower(), self.upper())
    }
}

/// The bounds of the mean difference new − old at one look.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Look {
    /// The number of units (cases or templates) seen.
    pub n: usize,
    /// The lower bound of the mean difference.
    pub low: f64,
    /// The upper bound of the mean difference.
    pub high: f64,
}

/// What [`SequentialState::run`] and [`sequential_decision`] return.
#[derive(Debug, Clone, PartialEq)]
pub struct SequentialDecision {
    /// Approved, blocked, or inconclusive (the budget is spent with neither).
    pub outcome: Outcome,
    /// The number of units used: the look where it stopped, or the budget.
    pub used: usize,
    /// The recorded looks: every look up to [`RECORD_EVERY_UP_TO`], then looks spaced by
    /// [`RECORD_RATIO`], and the look where it stopped; empty when bounds are not recorded.
    pub looks: Vec<Look>,
    /// The bounds at the last look used (`None` before any, or when bounds are not recorded).
    pub last: Option<Look>,
}

/// The sequential rule as it goes: paired differences in [−1, 1], one unit at a time, in the
/// order the decision fixes. Approved at the first look whose lower bound of the mean
/// difference is above `−tolerance`; blocked at the first look whose upper bound is below 0
/// (approved first when both happen at one look, as in the fixed rule). Each difference `d`
/// goes into the confidence sequence as `x = (d + 1)/2`, so the two questions are whether
/// `K⁺ₜ(m₀) ≥ 2/α` at `m₀ = (1 − tolerance)/2` and whether `K⁻ₜ(m₁) ≥ 2/α` at `m₁ = ½`: both
/// capitals are kept as running sums, O(1) a look. Exact bounds are computed only at the
/// recorded looks.
///
/// Continuing: [`run`](Self::run) again on the same order with a larger budget picks up where it
/// stopped and gives exactly what one run at the larger budget gives.
#[derive(Debug, Clone, PartialEq)]
pub struct SequentialState {
    cs: BettingCs,
    tolerance: f64,
    /// `m₀ = (1 − tolerance)/2` and `m₁ = ½` on the [0, 1] scale.
    m0: f64,
    m1: f64,
    ln_above_m0: f64,
    ln_below_m1: f64,
    outcome: Option<Outcome>,
    record: bool,
    looks: Vec<Look>,
    last_recorded: usize,
}

impl SequentialState {
    /// A new decision at `tolerance` (clamped to [0, 1]) and `confidence` (α = 1 − confidence,
    /// in (0, 1)), recording bounds.
    pub fn new(tolerance: f64, confidence: f64) -> Self {
        let tolerance = tolerance.clamp(0.0, 1.0);
        SequentialState {
            cs: BettingCs::new(1.0 - confidence),
            tolerance,
            m0: (1.0 - tolerance) / 2.0,
            m1: 0.5,
            ln_above_m0: 0.0,
            ln_below_m1: 0.0,
            outcome: None,
            record: true,
            looks: Vec::new(),
            last_recorded: 0,
        }
    }

    /// The same rule without recording bounds (for simulations: the outcome and the look it
    /// stopped at are the same).
    pub fn without_bounds(mut self) -> Self {
        self.record = false;
        self
    }

    /// Units used so far.
    pub fn used(&self) -> usize {
        self.cs.len()
    }

    /// The outcome once reached.
    pub fn outcome(&self) -> Option<Outcome> {
        self.outcome
    }

    /// The confidence sequence (on the [0, 1] scale).
    pub fn sequence(&self) -> &BettingCs {
        &self.cs
    }

    /// The bounds of the mean difference at the current look.
    pub fn look(&self) -> Look {
        let (l, u) = self.cs.bounds();
        Look {
            n: self.cs.len(),
            low: 2.0 * l - 1.0,
            high: 2.0 * u - 1.0,
        }
    }

    /// Takes one paired difference in [−1, 1]; returns the outcome when this look reaches it.
    /// Once reached, further differences are ignored.
    pub fn push(&mut self, d: f64) -> Option<Outcome> {
        if self.outcome.is_some() {
            return self.outcome;
        }
        let x = ((d.clamp(-1.0, 1.0)) + 1.0) / 2.0;
        let bet = self.cs.push(x);
        self.ln_above_m0 += libm::log1p(bet.min(TRUNCATION / self.m0) * (x - self.m0));
        self.ln_below_m1 += libm::log1p(-bet.min(TRUNCATION / (1.0 - self.m1)) * (x - self.m1));
        let threshold = self.cs.threshold();
        if self.ln_above_m0 >= threshold {
            self.outcome = Some(Outcome::Approved);
        } else if self.ln_below_m1 >= threshold {
            self.outcome = Some(Outcome::Blocked);
        }
        let n = self.cs.len();
        if self.record && (self.outcome.is_some() || self.due(n)) {
            self.looks.push(self.look());
            self.last_recorded = n;
        }
        self.outcome
    }

    /// Whether look `n` is on the recording schedule.
    fn due(&self, n: usize) -> bool {
        n <= RECORD_EVERY_UP_TO || n as f64 >= RECORD_RATIO * self.last_recorded as f64
    }

    /// Runs over `units` (the whole order, from its start) up to `budget` units, continuing from
    /// the units already used; stops at the first look that reaches an outcome.
    pub fn run(&mut self, units: &[f64], budget: usize) -> SequentialDecision {
        let end = budget.min(units.len());
        for &d in units.iter().take(end).skip(self.used()) {
            if self.push(d).is_some() {
                break;
            }
        }
        let last = match self.looks.last() {
            _ if !self.record || self.cs.is_empty() => None,
            Some(look) if look.n == self.cs.len() => Some(*look),
            _ => Some(self.look()),
        };
        SequentialDecision {
            outcome: self.outcome.unwrap_or(Outcome::Inconclusive),
            used: self.used(),
            looks: self.looks.clone(),
            last,
        }
    }
}

/// The sequential rule over `units` (paired differences in [−1, 1], in the decision's order:
/// cases, or templates' mean differences under `cluster: template`), at most `budget` of them.
pub fn sequential_decision(units: &[f64], tolerance: f64, confidence: f64, budget: usize) -> SequentialDecision {
    SequentialState::new(tolerance, confidence).run(units, budget)
}

/// The units of `cluster: template`: each cluster's mean paired difference (in [−1, 1]), by
/// cluster index. The sequence over them estimates the template-weighted mean difference, the
/// mean over templates of each template's mean, not the case-weighted mean of all cases; the
/// two differ when templates of different sizes differ in their effect.
pub fn template_means(diffs: &[f64], clusters: &Clusters) -> Vec<f64> {
    assert_eq!(clusters.of.len(), diffs.len(), "one cluster per difference");
    let mut sums = vec![(0.0, 0usize); clusters.count];
    for (&d, &c) in diffs.iter().zip(&clusters.of) {
        sums[c].0 += d;
        sums[c].1 += 1;
    }
    sums.iter()
        .map(|&(s, k)| if k == 0 { 0.0 } else { s / k as f64 })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn template_units_are_template_means() {
        let clusters = Clusters {
            of: vec![0, 1, 0, 0, 1],
            count: 2,
        };
        let means = template_means(&[1.0, -1.0, 0.0, -1.0, 0.0], &clusters);
        assert_eq!(means, vec![0.0, -0.5]);
    }

    #[test]
    fn first_bet_is_the_prior() {
        // λ₁ = √(2 ln(2/α) / (1 · ln 2 · ¼)).
        let cs = BettingCs::new(0.05);
        let expect = (2.0 * (2.0f64 / 0.05).ln() / (2.0f64.ln() * 0.25)).sqrt();
        assert!((cs.next_bet() - expect).abs() < 1e-15);
    }

    #[test]
    fn bounds_bracket_the_mean_and_narrow() {
        let mut cs = BettingCs::new(0.05);
        assert_eq!(cs.bounds(), (0.0, 1.0));
        let mut widths = Vec::new();
        for i in 0..400 {
            cs.push(if i % 4 == 0 { 0.0 } else { 1.0 });
            if (i + 1) % 100 == 0 {
                let (l, u) = cs.bounds();
                assert!(l < 0.75 && 0.75 < u, "{l} {u}");
                widths.push(u - l);
            }
        }
        assert!(widths.windows(2).all(|w| w[1] < w[0]), "{widths:?}");
    }

    #[test]
    fn bounds_are_roots_of_the_capital() {
        let mut cs = BettingCs::new(0.1);
        for i in 0..50 {
            cs.push((i as f64 * 0.37).fract());
        }
        let (l, u) = cs.bounds();
        assert!(cs.ln_capital_above(l) < cs.threshold());
        assert!(cs.ln_capital_above(l - 1e-11) >= cs.threshold());
        assert!(cs.ln_capital_below(u) < cs.threshold());
        assert!(cs.ln_capital_below(u + 1e-11) >= cs.threshold());
    }

    #[test]
    fn the_running_capitals_agree_with_the_bounds() {
        // At the stopping look the bound has crossed; one look earlier it had not.
        let units: Vec<f64> = (0..2000)
            .map(|i| {
                if i % 10 == 0 {
                    -1.0
                } else if i % 10 == 1 {
                    1.0
                } else {
                    0.0
                }
            })
            .collect();
        let d = sequential_decision(&units, 0.05, 0.95, 2000);
        assert_eq!(d.outcome, Outcome::Approved);
        let stop = d.looks.last().unwrap();
        assert_eq!(stop.n, d.used);
        assert!(stop.low > -0.05);
        let before = d.looks.iter().rev().nth(1).unwrap();
        assert!(before.low <= -0.05);
        assert_eq!(d.last, Some(*stop));

        let bad: Vec<f64> = (0..2000).map(|i| if i % 5 == 0 { -1.0 } else { 0.0 }).collect();
        let d = sequential_decision(&bad, 0.05, 0.95, 2000);
        assert_eq!(d.outcome, Outcome::Blocked);
        let stop = d.looks.last().unwrap();
        assert!(stop.high < 0.0 && d.looks.iter().rev().nth(1).unwrap().high >= 0.0);
    }

    #[test]
    fn every_recorded_look_agrees_with_the_running_capitals() {
        // Seeded paired differences at several true differences: before the stop no recorded
        // look has crossed either bound; at the stop the outcome's bound has.
        let mut state = 0x9e3779b97f4a7c15u64;
        for (k, delta) in [0.0, -0.05, 0.03, -0.10, 0.08, -0.2].into_iter().enumerate() {
            let units: Vec<f64> = (0..1500)
                .map(|_| {
                    state ^= state << 13;
                    state ^= state >> 7;
                    state ^= state << 17;
                    let u = (state >> 11) as f64 / (1u64 << 53) as f64;
                    let old_only = (0.12 - delta) / 2.0;
                    if u < old_only {
                        -1.0
                    } else if u < 0.12 {
                        1.0
                    } else {
                        0.0
                    }
                })
                .collect();
            let d = sequential_decision(&units, 0.05, 0.95, 1500);
            let (stop, before) = d.looks.split_last().unwrap();
            assert!(before.iter().all(|l| l.low <= -0.05 && l.high >= 0.0), "case {k}");
            match d.outcome {
                Outcome::Approved => assert!(stop.low > -0.05, "case {k}"),
                Outcome::Blocked => assert!(stop.high < 0.0 && stop.low <= -0.05, "case {k}"),
                Outcome::Inconclusive => assert!(stop.low <= -0.05 && stop.high >= 0.0 && d.used == 1500),
            }
            assert!(stop.low <= delta && delta <= stop.high, "case {k}: {stop:?}");
        }
    }

    #[test]
    fn the_budget_ends_inconclusive() {
        let units = [1.0, -1.0].repeat(50);
        let d = sequential_decision(&units, 0.05, 0.95, 60);
        assert_eq!(d.outcome, Outcome::Inconclusive);
        assert_eq!(d.used, 60);
        assert_eq!(d.looks.len(), 60);
        assert_eq!(d.last.unwrap().n, 60);
    }

    #[test]
    fn continuing_is_one_run_at_the_larger_budget() {
        // Equal models with 12% discordant pairs: inconclusive for a while.
        let units: Vec<f64> = (0..3000u64)
            .map(|i| match (i * 2654435761) % 100 {
                0..=5 => -1.0,
                6..=11 => 1.0,
                _ => 0.0,
            })
            .collect();
        let once = sequential_decision(&units, 0.05, 0.95, 3000);
        let mut state = SequentialState::new(0.05, 0.95);
        let mut steps = Vec::new();
        for budget in (1..=10).map(|k| 300 * k) {
            steps.push(state.run(&units, budget));
        }
        assert_eq!(steps.last().unwrap(), &once);
        let first = steps.iter().find(|s| s.outcome != Outcome::Inconclusive).unwrap();
        assert_eq!(first, &once);
        assert!(steps[0].outcome == Outcome::Inconclusive && steps[0].used == 300);
    }

    #[test]
    fn looks_are_thinned_beyond_a_thousand() {
        let units = [1.0, -1.0].repeat(6_000);
        let d = sequential_decision(&units, 0.0, 0.95, 12_000);
        assert_eq!(d.outcome, Outcome::Inconclusive);
        let n: Vec<usize> = d.looks.iter().map(|l| l.n).collect();
        assert_eq!(&n[..3], &[1, 2, 3]);
        assert!(n.len() < RECORD_EVERY_UP_TO + 40, "{}", n.len());
        assert!(n.windows(2).all(|w| w[0] < w[1]));
    }
}
