//! The cluster-robust interval of a mean: what statsmodels computes for an OLS of the values on
//! a constant with `cov_type="cluster"` and its default small-sample correction, `use_t=True`.
//!
//! With `N` values `yᵢ` in `G` clusters, the estimate is the mean `ȳ`, the residuals
//! `eᵢ = yᵢ − ȳ`, and the variance of the estimate
//! `V = G/(G−1) · (N−1)/(N−K) · Σ_g (Σ_{i∈g} eᵢ)² / N²` with `K = 1` (so the middle factor is 1);
//! the interval is `ȳ ± t_{G−1, 1−α/2} · √V`. With every value its own cluster this is the
//! paired t interval (`V = s²/N`, `N − 1` degrees of freedom). The design effect is `V` over
//! OLS's ordinary variance `s²/N`, `s² = Σ eᵢ² / (N − 1)`.

use super::quantile::t_quantile;

/// Clusters numbered `0..count` in order of first appearance.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Clusters {
    /// Each value's cluster.
    pub of: Vec<usize>,
    /// How many clusters there are.
    pub count: usize,
}

impl Clusters {
    /// Clusters from a key per value: equal keys share a cluster, and a value without a key
    /// (`None`) is a cluster of its own.
    pub fn by_key<K: std::hash::Hash + Eq>(keys: impl IntoIterator<Item = Option<K>>) -> Clusters {
        let mut ids = std::collections::HashMap::new();
        let mut of = Vec::new();
        let mut count = 0;
        for key in keys {
            let id = match key {
                Some(k) => *ids.entry(k).or_insert_with(|| {
                    count += 1;
                    count - 1
                }),
                None => {
                    count += 1;
                    count - 1
                }
            };
            of.push(id);
        }
        Clusters { of, count }
    }

    /// Every one of `n` values its own cluster.
    pub fn singletons(n: usize) -> Clusters {
        Clusters {
            of: (0..n).collect(),
            count: n,
        }
    }
}

/// A mean and its cluster-robust variance.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RobustMean {
    /// The mean.
    pub estimate: f64,
    /// Its cluster-robust variance `V`.
    pub variance: f64,
    /// Its ordinary OLS variance `s²/N` (`None` for one value).
    pub ordinary_variance: Option<f64>,
    /// The clusters `G` (the t quantile has `G − 1` degrees of freedom).
    pub clusters: usize,
}

impl RobustMean {
    /// The mean of `values`, clustered by `clusters` (as many as there are values): `None`
    /// without a value or with fewer than two clusters (the variance needs `G − 1 > 0`).
    pub fn of(values: &[f64], clusters: &Clusters) -> Option<RobustMean> {
        let n = values.len();
        let g = clusters.count;
        assert_eq!(clusters.of.len(), n, "one cluster per value");
        if n == 0 || g < 2 {
            return None;
        }
        let nf = n as f64;
        let mean = values.iter().fold(0.0, |a, v| a + v) / nf;
        let mut sums = vec![0.0; g];
        let mut squares = 0.0;
        for (v, &c) in values.iter().zip(&clusters.of) {
            let e = v - mean;
            sums[c] += e;
            squares += e * e;
        }
        let between = sums.iter().fold(0.0, |a, s| a + s * s);
        let gf = g as f64;
        Some(RobustMean {
            estimate: mean,
            variance: gf / (gf - 1.0) * between / (nf * nf),
            ordinary_variance: (n > 1).then(|| squares / (nf - 1.0) / nf),
            clusters: g,
        })
    }

    /// The interval `estimate ± t_{G−1, 1−α/2} · √V` at `confidence`, unclipped.
    pub fn interval(&self, confidence: f64) -> (f64, f64) {
        let t = t_quantile(1.0 - (1.0 - confidence) / 2.0, (self.clusters - 1) as f64);
        let half = t * self.variance.sqrt();
        (self.estimate - half, self.estimate + half)
    }

    /// `V` over the ordinary variance; `None` when that is 0 or undefined (every value equal,
    /// or one value).
    pub fn design_effect(&self) -> Option<f64> {
        self.ordinary_variance.filter(|&v| v > 0.0).map(|v| self.variance / v)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn clusters_by_key_number_in_order_and_keep_keyless_values_apart() {
        let c = Clusters::by_key([Some("b"), None, Some("a"), Some("b"), None]);
        assert_eq!(c.of, [0, 1, 2, 0, 3]);
        assert_eq!(c.count, 4);
        assert_eq!(Clusters::singletons(3).of, [0, 1, 2]);
    }

    #[test]
    fn singletons_give_the_paired_t_variance() {
        let v = [1.0, 0.0, 1.0, 1.0, -1.0, 0.0];
        let m = RobustMean::of(&v, &Clusters::singletons(6)).unwrap();
        let mean = 2.0 / 6.0;
        let s2 = v.iter().map(|x| (x - mean) * (x - mean)).sum::<f64>() / 5.0;
        assert!((m.variance - s2 / 6.0).abs() < 1e-16);
        assert!((m.design_effect().unwrap() - 1.0).abs() < 1e-15);
    }

    #[test]
    fn fewer_than_two_clusters_or_no_value_have_no_interval() {
        assert_eq!(RobustMean::of(&[1.0, 0.0], &Clusters::by_key([Some(1), Some(1)])), None);
        assert_eq!(RobustMean::of(&[], &Clusters::singletons(0)), None);
        let flat = RobustMean::of(&[1.0, 1.0, 1.0], &Clusters::by_key([Some(1), Some(2), Some(2)])).unwrap();
        assert_eq!((flat.variance, flat.design_effect()), (0.0, None));
        assert_eq!(flat.interval(0.95), (1.0, 1.0));
    }
}
