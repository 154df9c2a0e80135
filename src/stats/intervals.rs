//! The intervals and tests of one comparison: Wilson intervals, McNemar's test, Newcombe's paired
//! interval, the seeded bootstrap, and the sample size non-inferiority would need.

use super::quantile::normal_quantile;
use super::POWER;
use rand_chacha::ChaCha20Rng;
use rand_core::{RngCore, SeedableRng};
use serde::Serialize;

/// Bootstrap resamples.
pub const RESAMPLES: usize = 10_000;

/// `ln P(X = k)` for X ~ Binomial(n, 1/2).
fn ln_binom_half(n: u64, k: u64) -> f64 {
    libm::lgamma(n as f64 + 1.0)
        - libm::lgamma(k as f64 + 1.0)
        - libm::lgamma((n - k) as f64 + 1.0)
        - n as f64 * std::f64::consts::LN_2
}

/// A rate with its interval.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct RateInterval {
    /// successes / n (0 when n = 0).
    pub rate: f64,
    /// Lower bound.
    pub low: f64,
    /// Upper bound.
    pub high: f64,
}

/// The Wilson score interval for `x` successes in `n` trials at the given confidence.
pub fn wilson(x: u64, n: u64, confidence: f64) -> RateInterval {
    if n == 0 {
        return RateInterval {
            rate: 0.0,
            low: 0.0,
            high: 1.0,
        };
    }
    let z = normal_quantile(1.0 - (1.0 - confidence) / 2.0);
    let (nf, p) = (n as f64, x as f64 / n as f64);
    let z2 = z * z;
    let denom = 1.0 + z2 / nf;
    let center = (p + z2 / (2.0 * nf)) / denom;
    let half = z * (p * (1.0 - p) / nf + z2 / (4.0 * nf * nf)).sqrt() / denom;
    RateInterval {
        rate: p,
        low: (center - half).max(0.0),
        high: (center + half).min(1.0),
    }
}

/// McNemar's test on the discordant pairs.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct McNemar {
    /// Old passes, new fails.
    pub b: u64,
    /// Old fails, new passes.
    pub c: u64,
    /// Exact two-sided p-value: `min(1, 2·P(X ≤ min(b, c)))`, X ~ Bin(b + c, 1/2).
    pub p_exact: f64,
    /// Mid-p value: the exact p minus `P(X = min(b, c))`.
    pub p_mid: f64,
}

/// McNemar's exact and mid-p tests (1 and 1 when there is no discordant pair).
pub fn mcnemar(b: u64, c: u64) -> McNemar {
    let n = b + c;
    if n == 0 {
        return McNemar {
            b,
            c,
            p_exact: 1.0,
            p_mid: 1.0,
        };
    }
    let k = b.min(c);
    let logs: Vec<f64> = (0..=k).map(|i| ln_binom_half(n, i)).collect();
    let max = logs.iter().cloned().fold(f64::NEG_INFINITY, f64::max);
    let cdf = libm::exp(max) * logs.iter().map(|l| libm::exp(l - max)).fold(0.0, |a, x| a + x);
    let pk = libm::exp(logs[k as usize]);
    let p_exact = (2.0 * cdf).min(1.0);
    let p_mid = (2.0 * (cdf - 0.5 * pk)).min(1.0);
    McNemar { b, c, p_exact, p_mid }
}

/// An interval for a difference.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct DeltaInterval {
    /// The point estimate.
    pub estimate: f64,
    /// Lower bound.
    pub low: f64,
    /// Upper bound.
    pub high: f64,
    /// `newcombe`, `paired_t` or `cluster_robust_t` (task), `bootstrap` (trajectory).
    pub method: &'static str,
    /// Bootstrap resamples (bootstrap only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub resamples: Option<usize>,
    /// Bootstrap seed (bootstrap only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub seed: Option<u64>,
}

/// The paired 2×2 table of old and new pass/fail.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct Paired {
    /// Both pass.
    pub both_pass: u64,
    /// Old passes, new fails (b).
    pub old_only: u64,
    /// Old fails, new passes (c).
    pub new_only: u64,
    /// Both fail.
    pub both_fail: u64,
}

impl Paired {
    /// Cases.
    pub fn n(&self) -> u64 {
        self.both_pass + self.old_only + self.new_only + self.both_fail
    }
}

/// Newcombe's interval for `p_new − p_old` from paired data (Newcombe 1998, method 10: the
/// Wilson intervals of both rates combined by square-and-add with the correlation φ, whose
/// numerator is `AD − BC − N/2` when that is positive, 0 when `0 ≤ AD − BC ≤ N/2`, and
/// `AD − BC` when negative — the form that gives Altman et al.'s worked example).
pub fn newcombe_paired(t: &Paired, confidence: f64) -> DeltaInterval {
    let n = t.n();
    let method = "newcombe";
    if n == 0 {
        return DeltaInterval {
            estimate: 0.0,
            low: -1.0,
            high: 1.0,
            method,
            resamples: None,
            seed: None,
        };
    }
    let old = wilson(t.both_pass + t.old_only, n, confidence);
    let new = wilson(t.both_pass + t.new_only, n, confidence);
    let (a, b, c, d) = (
        t.both_pass as f64,
        t.old_only as f64,
        t.new_only as f64,
        t.both_fail as f64,
    );
    let denom = (a + b) * (c + d) * (a + c) * (b + d);
    let half_n = n as f64 / 2.0;
    let ad_bc = a * d - b * c;
    let numerator = if ad_bc > half_n {
        ad_bc - half_n
    } else if ad_bc >= 0.0 {
        0.0
    } else {
        ad_bc
    };
    let phi = if denom > 0.0 { numerator / denom.sqrt() } else { 0.0 };
    let (p1, l1, u1) = (new.rate, new.low, new.high);
    let (p2, l2, u2) = (old.rate, old.low, old.high);
    let estimate = p1 - p2;
    let sq = |x: f64| x * x;
    let low_sq = sq(p1 - l1) - 2.0 * phi * (p1 - l1) * (u2 - p2) + sq(u2 - p2);
    let high_sq = sq(u1 - p1) - 2.0 * phi * (u1 - p1) * (p2 - l2) + sq(p2 - l2);
    DeltaInterval {
        estimate,
        low: (estimate - low_sq.max(0.0).sqrt()).max(-1.0),
        high: (estimate + high_sq.max(0.0).sqrt()).min(1.0),
        method,
        resamples: None,
        seed: None,
    }
}

pub(super) fn mean(xs: &[f64]) -> f64 {
    xs.iter().fold(0.0, |a, x| a + x) / xs.len() as f64
}

/// The `q` quantile of sorted values, interpolating linearly between ranks (numpy's default).
pub(super) fn quantile(sorted: &[f64], q: f64) -> f64 {
    let pos = q * (sorted.len() - 1) as f64;
    let (i, frac) = (pos.floor() as usize, pos - pos.floor());
    if i + 1 < sorted.len() {
        sorted[i] + frac * (sorted[i + 1] - sorted[i])
    } else {
        sorted[i]
    }
}

/// A uniform index below `n`, the same on every platform (64-bit draws, multiply-shift).
pub(super) fn index(rng: &mut ChaCha20Rng, n: usize) -> usize {
    ((rng.next_u64() as u128 * n as u128) >> 64) as usize
}

/// The [`RESAMPLES`] deltas of [`bootstrap_delta`] in resample order, computed in `parts`
/// parts side by side. Each resample draws exactly `old.len() + new.len()` 64-bit numbers, so
/// a part starts its own generator at its first resample's place in the one seeded stream:
/// the deltas are the same, bit for bit, for any number of parts.
fn resample_parts(old: &[f64], new: &[f64], seed: u64, parts: usize) -> Vec<f64> {
    let per_part = RESAMPLES.div_ceil(parts.max(1));
    let firsts: Vec<usize> = (0..RESAMPLES).step_by(per_part).collect();
    crate::parallel::map(&firsts, 2, |&first| {
        resample_run(old, new, seed, first..(first + per_part).min(RESAMPLES))
    })
    .concat()
}

/// The deltas of resamples `run` of the stream seeded with `seed`. (Kept out of line: inlined
/// into the parts' closure it made the wasm module 16 KB larger.)
#[inline(never)]
fn resample_run(old: &[f64], new: &[f64], seed: u64, run: std::ops::Range<usize>) -> Vec<f64> {
    let mut rng = ChaCha20Rng::seed_from_u64(seed);
    // Two 32-bit words per draw.
    rng.set_word_pos((run.start * (old.len() + new.len()) * 2) as u128);
    run.map(|_| {
        let mut sum_old = 0.0;
        for _ in 0..old.len() {
            sum_old += old[index(&mut rng, old.len())];
        }
        let mut sum_new = 0.0;
        for _ in 0..new.len() {
            sum_new += new[index(&mut rng, new.len())];
        }
        sum_new / new.len() as f64 - sum_old / old.len() as f64
    })
    .collect()
}

/// Percentile bootstrap interval for `mean(new) − mean(old)` of two independent samples,
/// seeded ChaCha20, [`RESAMPLES`] resamples. `None` when either sample is empty.
pub fn bootstrap_delta(old: &[f64], new: &[f64], confidence: f64, seed: u64) -> Option<DeltaInterval> {
    if old.is_empty() || new.is_empty() {
        return None;
    }
    let mut deltas = resample_parts(old, new, seed, crate::parallel::threads());
    deltas.sort_by(f64::total_cmp);
    let alpha = 1.0 - confidence;
    Some(DeltaInterval {
        estimate: mean(new) - mean(old),
        low: quantile(&deltas, alpha / 2.0),
        high: quantile(&deltas, 1.0 - alpha / 2.0),
        method: "bootstrap",
        resamples: Some(RESAMPLES),
        seed: Some(seed),
    })
}

/// About how many paired cases a non-inferiority test at this confidence needs for 80% power,
/// when the two models are truly equal and disagree on a share `discordance` of cases:
/// `n = ψ·(z₁₋α/₂ + z₀.₈)² / Δ²` (the normal approximation for paired proportions).
/// `None` for a tolerance of 0 (non-inferiority cannot be shown with no margin).
pub fn cases_needed(discordance: f64, tolerance: f64, confidence: f64) -> Option<u64> {
    if tolerance <= 0.0 {
        return None;
    }
    let z = normal_quantile(1.0 - (1.0 - confidence) / 2.0) + normal_quantile(POWER);
    Some((discordance * z * z / (tolerance * tolerance)).ceil().max(1.0) as u64)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Resampling in parts gives the deltas of one sequential pass, bit for bit.
    #[test]
    fn resampling_in_parts_is_the_sequential_stream() {
        let old: Vec<f64> = (0..37).map(|i| (i as f64 * 0.37).sin()).collect();
        let new: Vec<f64> = (0..23).map(|i| (i as f64 * 0.11).cos()).collect();
        let one = resample_parts(&old, &new, 7, 1);
        // The sequential pass written out, as a reference for the one-part result.
        let mut rng = ChaCha20Rng::seed_from_u64(7);
        let first: Vec<f64> = (0..3)
            .map(|_| {
                let o: f64 = (0..old.len()).map(|_| old[index(&mut rng, old.len())]).sum();
                let n: f64 = (0..new.len()).map(|_| new[index(&mut rng, new.len())]).sum();
                n / new.len() as f64 - o / old.len() as f64
            })
            .collect();
        assert_eq!(one.len(), RESAMPLES);
        assert_eq!(one[..3], first[..]);
        for parts in [2, 3, 7, 64] {
            let split = resample_parts(&old, &new, 7, parts);
            assert!(
                one.iter().zip(&split).all(|(a, b)| a.to_bits() == b.to_bits()) && split.len() == one.len(),
                "{parts} parts differ"
            );
        }
    }
}
