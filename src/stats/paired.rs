//! The guardrails' statistics: the change from the old model to the new one in a metric's mean or
//! quantile, paired case by case (docs/statistics.md, "Guardrails"), and the per-template test of
//! a pass-rate drop with Holm's step-down across templates.
//!
//! - A mean's change is `mean(new) − mean(old)` (absolute) or `mean(new)/mean(old) − 1`
//!   (relative). The absolute interval is the paired t interval of the differences; the relative
//!   one is Fieller's interval for the ratio of two paired means. Both take the cluster-robust
//!   (co)variance of the means with `G − 1` degrees of freedom, which with one case a cluster is
//!   the ordinary paired interval (`s²/n`, `n − 1`).
//! - A quantile's change is `Q(new) − Q(old)` or `Q(new)/Q(old) − 1`, `Q` the nearest-rank
//!   quantile, and its interval the percentile interval of a seeded paired bootstrap: each
//!   resample draws clusters (cases, when not clustered) with replacement and takes both models'
//!   values of the cases drawn.

use super::cluster::Clusters;
use super::intervals::{index, quantile as interpolated};
use super::quantile::{t_quantile, t_upper_tail};
use rand_chacha::ChaCha20Rng;
use rand_core::SeedableRng;

/// Resamples of a quantile guardrail's bootstrap.
pub const GUARDRAIL_RESAMPLES: usize = 10_000;

/// A change and its interval at some confidence; `None` bounds: the interval is unbounded (a
/// relative change whose old mean is not shown to differ from 0).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Change {
    /// The point estimate.
    pub estimate: f64,
    /// The interval's bounds at each confidence asked, in order.
    pub bounds: [Option<(f64, f64)>; 2],
}

/// The cluster-robust covariance of the means of `a` and `b` (one cluster per value): the sums
/// of the residuals per cluster, `G/(G−1) · Σ_g A_g B_g / N²`.
fn robust_covariance(a: &[f64], b: &[f64], ma: f64, mb: f64, clusters: &Clusters) -> [f64; 3] {
    let g = clusters.count;
    let mut sums = vec![(0.0, 0.0); g];
    for ((x, y), &c) in a.iter().zip(b).zip(&clusters.of) {
        sums[c].0 += x - ma;
        sums[c].1 += y - mb;
    }
    let (mut aa, mut bb, mut ab) = (0.0, 0.0, 0.0);
    for (sa, sb) in &sums {
        aa += sa * sa;
        bb += sb * sb;
        ab += sa * sb;
    }
    let n = a.len() as f64;
    let k = g as f64 / (g as f64 - 1.0) / (n * n);
    [aa * k, bb * k, ab * k]
}

fn mean(xs: &[f64]) -> f64 {
    xs.iter().fold(0.0, |a, x| a + x) / xs.len() as f64
}

/// The change in the mean, paired, at each of `confidences` (two-sided). `None` without two
/// clusters (the variance needs `G − 1 > 0`) or, relative, when the old mean is 0.
pub fn mean_change(
    old: &[f64],
    new: &[f64],
    clusters: &Clusters,
    relative: bool,
    confidences: [f64; 2],
) -> Option<Change> {
    assert_eq!(old.len(), new.len(), "paired values");
    assert_eq!(clusters.of.len(), old.len(), "one cluster per case");
    if old.is_empty() || clusters.count < 2 {
        return None;
    }
    let (mo, mn) = (mean(old), mean(new));
    let [voo, vnn, von] = robust_covariance(old, new, mo, mn, clusters);
    let df = (clusters.count - 1) as f64;
    let bound = |confidence: f64| {
        let t = t_quantile(1.0 - (1.0 - confidence) / 2.0, df);
        let t2 = t * t;
        if !relative {
            let half = t * (vnn + voo - 2.0 * von).max(0.0).sqrt();
            let d = mn - mo;
            return Some((d - half, d + half));
        }
        // Fieller: the ratios ρ with (mn − ρ·mo)² ≤ t²·(vnn − 2ρ·von + ρ²·voo).
        let a = mo * mo - t2 * voo;
        let b = -2.0 * (mn * mo - t2 * von);
        let c = mn * mn - t2 * vnn;
        if a <= 0.0 {
            return None;
        }
        let disc = (b * b - 4.0 * a * c).max(0.0).sqrt();
        let (r1, r2) = ((-b - disc) / (2.0 * a), (-b + disc) / (2.0 * a));
        Some((r1 - 1.0, r2 - 1.0))
    };
    let estimate = if relative {
        if mo == 0.0 {
            return None;
        }
        mn / mo - 1.0
    } else {
        mn - mo
    };
    Some(Change {
        estimate,
        bounds: confidences.map(bound),
    })
}

/// The nearest-rank `p`-quantile (0 < p < 1) of `values` (not empty), reordering them.
pub fn nearest_rank_of(values: &mut [f64], p: f64) -> f64 {
    let n = values.len();
    let rank = ((p * n as f64).ceil() as usize).clamp(1, n);
    *values.select_nth_unstable_by(rank - 1, f64::total_cmp).1
}

/// `new` against `old` as the guardrail compares them.
fn compare(old: f64, new: f64, relative: bool) -> f64 {
    if !relative {
        new - old
    } else if old == 0.0 {
        if new == 0.0 {
            0.0
        } else {
            f64::INFINITY
        }
    } else {
        new / old - 1.0
    }
}

/// The change in the nearest-rank `p`-quantile, paired, with the percentile intervals of a
/// bootstrap seeded with `seed` ([`GUARDRAIL_RESAMPLES`] resamples of the clusters) at each of
/// `confidences`. `None` without a case.
pub fn quantile_change(
    old: &[f64],
    new: &[f64],
    clusters: &Clusters,
    p: f64,
    relative: bool,
    confidences: [f64; 2],
    seed: u64,
) -> Option<Change> {
    assert_eq!(old.len(), new.len(), "paired values");
    if old.is_empty() {
        return None;
    }
    let estimate = compare(
        nearest_rank_of(&mut old.to_vec(), p),
        nearest_rank_of(&mut new.to_vec(), p),
        relative,
    );
    let mut members: Vec<Vec<usize>> = vec![Vec::new(); clusters.count];
    for (i, &c) in clusters.of.iter().enumerate() {
        members[c].push(i);
    }
    let parts = crate::parallel::threads();
    let per_part = GUARDRAIL_RESAMPLES.div_ceil(parts.max(1));
    let firsts: Vec<usize> = (0..GUARDRAIL_RESAMPLES).step_by(per_part).collect();
    let mut changes = crate::parallel::map(&firsts, 1, |&first| {
        let run = first..(first + per_part).min(GUARDRAIL_RESAMPLES);
        resample_quantiles(old, new, &members, p, relative, seed, run)
    })
    .concat();
    changes.sort_by(f64::total_cmp);
    let bound = |confidence: f64| {
        let alpha = 1.0 - confidence;
        let (low, high) = (
            interpolated(&changes, alpha / 2.0),
            interpolated(&changes, 1.0 - alpha / 2.0),
        );
        (low.is_finite() && high.is_finite()).then_some((low, high))
    };
    Some(Change {
        estimate,
        bounds: confidences.map(bound),
    })
}

/// The changes of resamples `run` of the stream seeded with `seed`: each resample draws exactly
/// `G` 64-bit numbers, so a part starts at its first resample's place in the one stream and the
/// changes are the same for any number of parts.
#[inline(never)]
fn resample_quantiles(
    old: &[f64],
    new: &[f64],
    members: &[Vec<usize>],
    p: f64,
    relative: bool,
    seed: u64,
    run: std::ops::Range<usize>,
) -> Vec<f64> {
    let g = members.len();
    let mut rng = ChaCha20Rng::seed_from_u64(seed);
    rng.set_word_pos((run.start * g * 2) as u128);
    let (mut o, mut n) = (Vec::with_capacity(old.len()), Vec::with_capacity(new.len()));
    run.map(|_| {
        o.clear();
        n.clear();
        for _ in 0..g {
            for &i in &members[index(&mut rng, g)] {
                o.push(old[i]);
                n.push(new[i]);
            }
        }
        compare(nearest_rank_of(&mut o, p), nearest_rank_of(&mut n, p), relative)
    })
    .collect()
}

/// The one-sided p-value of "the new pass rate is more than `max_drop` below the old one" from
/// the paired scores of one template: the t test of `mean(new − old) + max_drop < 0` with
/// `n − 1` degrees of freedom. Differences without spread give 0 when their mean is below
/// `−max_drop`, else 1. `None` for fewer than two cases.
pub fn drop_p_value(old: &[f64], new: &[f64], max_drop: f64) -> Option<f64> {
    let n = old.len();
    if n < 2 {
        return None;
    }
    let d: Vec<f64> = old.iter().zip(new).map(|(o, n)| n - o).collect();
    let m = mean(&d);
    let ss = d.iter().fold(0.0, |a, x| a + (x - m) * (x - m));
    let se = (ss / (n as f64 - 1.0) / n as f64).sqrt();
    let shifted = m + max_drop;
    if se == 0.0 {
        return Some(if shifted < 0.0 { 0.0 } else { 1.0 });
    }
    let t = shifted / se;
    let df = n as f64 - 1.0;
    // P(T ≤ t): the upper tail of −t below 0, one minus the upper tail of t above.
    Some(if t <= 0.0 {
        t_upper_tail(-t, df)
    } else {
        1.0 - t_upper_tail(t, df)
    })
}

/// Holm's step-down adjusted p-values, in the input's order: the i-th smallest p times
/// `m − i` (0-based), made monotone, at most 1.
pub fn holm(p: &[f64]) -> Vec<f64> {
    let m = p.len();
    let mut order: Vec<usize> = (0..m).collect();
    order.sort_by(|&a, &b| p[a].total_cmp(&p[b]).then(a.cmp(&b)));
    let mut adjusted = vec![0.0; m];
    let mut running: f64 = 0.0;
    for (rank, &i) in order.iter().enumerate() {
        running = running.max(((m - rank) as f64 * p[i]).min(1.0));
        adjusted[i] = running;
    }
    adjusted
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nearest_rank_is_a_measured_value() {
        let mut v: Vec<f64> = (1..=20).map(f64::from).collect();
        assert_eq!(nearest_rank_of(&mut v, 0.5), 10.0);
        assert_eq!(nearest_rank_of(&mut v, 0.95), 19.0);
        assert_eq!(nearest_rank_of(&mut v, 0.99), 20.0);
        assert_eq!(nearest_rank_of(&mut [3.0], 0.9), 3.0);
    }

    #[test]
    fn the_paired_difference_interval_is_the_t_interval() {
        let old = [10.0, 12.0, 11.0, 13.0, 9.0];
        let new = [11.0, 12.5, 12.0, 14.0, 9.5];
        let c = mean_change(&old, &new, &Clusters::singletons(5), false, [0.95, 0.99]).unwrap();
        // d = 1, .5, 1, 1, .5: mean .8, s = .27386, t(.975, 4) = 2.776445.
        assert!((c.estimate - 0.8).abs() < 1e-12);
        let (low, high) = c.bounds[0].unwrap();
        let half = 2.776_445_105_197_8 * 0.273_861_278_752_583 / 5f64.sqrt();
        assert!((low - (0.8 - half)).abs() < 1e-9 && (high - (0.8 + half)).abs() < 1e-9);
        let (l99, h99) = c.bounds[1].unwrap();
        assert!(l99 < low && h99 > high);
    }

    #[test]
    fn fieller_holds_the_ratio_and_is_unbounded_near_zero() {
        let old: Vec<f64> = (0..50).map(|i| 100.0 + f64::from(i % 7)).collect();
        let new: Vec<f64> = old.iter().map(|x| 1.2 * x).collect();
        let c = mean_change(&old, &new, &Clusters::singletons(50), true, [0.95, 0.95]).unwrap();
        let (low, high) = c.bounds[0].unwrap();
        assert!((c.estimate - 0.2).abs() < 1e-12 && (low - 0.2).abs() < 1e-9 && (high - 0.2).abs() < 1e-9);
        let old = [-1.0, 1.0, -1.0, 1.0, 0.5];
        let new = [1.0, 1.0, 1.0, 1.0, 1.0];
        let c = mean_change(&old, &new, &Clusters::singletons(5), true, [0.95, 0.95]).unwrap();
        assert_eq!(c.bounds[0], None);
    }

    #[test]
    fn the_bootstrap_is_seeded_and_the_same_in_any_number_of_parts() {
        let old: Vec<f64> = (0..300).map(|i| f64::from((i * 37) % 101)).collect();
        let new: Vec<f64> = old.iter().map(|x| x * 1.3 + 1.0).collect();
        let cl = Clusters::singletons(300);
        let a = quantile_change(&old, &new, &cl, 0.95, true, [0.95, 0.99], 7).unwrap();
        let b = quantile_change(&old, &new, &cl, 0.95, true, [0.95, 0.99], 7).unwrap();
        assert_eq!(a, b);
        let members: Vec<Vec<usize>> = (0..300).map(|i| vec![i]).collect();
        let whole = resample_quantiles(&old, &new, &members, 0.95, true, 7, 0..100);
        let mut split = resample_quantiles(&old, &new, &members, 0.95, true, 7, 0..40);
        split.extend(resample_quantiles(&old, &new, &members, 0.95, true, 7, 40..100));
        assert_eq!(whole, split);
        let (low, high) = a.bounds[0].unwrap();
        assert!(low <= a.estimate && a.estimate <= high, "{a:?}");
    }

    #[test]
    fn holm_matches_the_step_down_by_hand() {
        let adj = holm(&[0.01, 0.04, 0.03, 0.005]);
        // Sorted: .005·4 = .02, .01·3 = .03, .03·2 = .06, .04·1 → max(.06, .04) = .06.
        let want = [0.03, 0.06, 0.06, 0.02];
        for (a, w) in adj.iter().zip(want) {
            assert!((a - w).abs() < 1e-12, "{adj:?}");
        }
    }

    #[test]
    fn a_drop_is_tested_one_sided() {
        let old = vec![1.0; 20];
        let mut new = vec![1.0; 20];
        for v in new.iter_mut().take(12) {
            *v = 0.0;
        }
        assert!(drop_p_value(&old, &new, 0.0).unwrap() < 0.001);
        assert!(drop_p_value(&new, &old, 0.0).unwrap() > 0.99);
        assert_eq!(drop_p_value(&old, &old, 0.0), Some(1.0));
        assert_eq!(drop_p_value(&old[..1], &old[..1], 0.0), None);
    }
}
