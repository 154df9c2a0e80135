//! Quantiles: the standard normal's (Wichura's AS 241) and Student's t's, to about 15 digits,
//! with `libm` so that every platform computes the same bits.
//!
//! Student's t quantile for `df` degrees of freedom: closed forms for 1 and 2; otherwise Newton's
//! method on `ln t` against the upper tail `P(T > t) = I_x(df/2, 1/2) / 2` (beyond the quartiles)
//! or the centre `P(0 < T < t) = I_y(1/2, df/2) / 2` (within them), `x = df / (df + t²)`,
//! `y = 1 − x`, the regularized incomplete beta function evaluated by its continued fraction
//! (modified Lentz), whose prefactor takes `ln B(df/2, 1/2)` from a Stirling difference for large
//! `df` (no cancellation between two large `lgamma`s). Above 50,000 degrees of freedom, the
//! Cornish–Fisher expansion of the normal quantile to `1/df⁴` (Abramowitz & Stegun 26.7.5). The
//! known answers are scipy's `t.ppf` and mpmath's root at 40 digits (`tests/it/known_answers.rs`).

use std::f64::consts::PI;

/// Φ⁻¹(p), the standard normal quantile (Wichura's AS 241, PPND16: about 16 digits).
#[allow(clippy::excessive_precision)] // the coefficients as published
pub fn normal_quantile(p: f64) -> f64 {
    if p <= 0.0 {
        return f64::NEG_INFINITY;
    }
    if p >= 1.0 {
        return f64::INFINITY;
    }
    let q = p - 0.5;
    if q.abs() <= 0.425 {
        let r = 0.180625 - q * q;
        let num = ((((((2509.0809287301226727 * r + 33430.575583588128105) * r + 67265.770927008700853) * r
            + 45921.953931549871457)
            * r
            + 13731.693765509461125)
            * r
            + 1971.5909503065514427)
            * r
            + 133.14166789178437745)
            * r
            + 3.387132872796366608;
        let den = ((((((5226.495278852545925 * r + 28729.085735721942674) * r + 39307.89580009271061) * r
            + 21213.794301586595867)
            * r
            + 5394.1960214247511077)
            * r
            + 687.1870074920579083)
            * r
            + 42.313330701600911252)
            * r
            + 1.0;
        return q * num / den;
    }
    let r = if q < 0.0 { p } else { 1.0 - p };
    let r = (-libm::log(r)).sqrt();
    let x = if r <= 5.0 {
        let r = r - 1.6;
        let num = ((((((7.7454501427834140764e-4 * r + 0.0227238449892691845833) * r + 0.24178072517745061177) * r
            + 1.27045825245236838258)
            * r
            + 3.64784832476320460504)
            * r
            + 5.7694972214606914055)
            * r
            + 4.6303378461565452959)
            * r
            + 1.42343711074968357734;
        let den = ((((((1.05075007164441684324e-9 * r + 5.475938084995344946e-4) * r + 0.0151986665636164571966)
            * r
            + 0.14810397642748007459)
            * r
            + 0.68976733498510000455)
            * r
            + 1.6763848301838038494)
            * r
            + 2.05319162663775882187)
            * r
            + 1.0;
        num / den
    } else {
        let r = r - 5.0;
        let num = ((((((2.01033439929228813265e-7 * r + 2.71155556874348757815e-5) * r + 0.0012426609473880784386)
            * r
            + 0.026532189526576123093)
            * r
            + 0.29656057182850489123)
            * r
            + 1.7848265399172913358)
            * r
            + 5.4637849111641143699)
            * r
            + 6.6579046435011037772;
        let den = ((((((2.04426310338993978564e-15 * r + 1.4215117583164458887e-7) * r + 1.8463183175100546818e-5)
            * r
            + 7.868691311456132591e-4)
            * r
            + 0.0148753612908506148525)
            * r
            + 0.13692988092273580531)
            * r
            + 0.59983220655588793769)
            * r
            + 1.0;
        num / den
    };
    if q < 0.0 {
        -x
    } else {
        x
    }
}

/// Above this many degrees of freedom the quantile is the Cornish–Fisher expansion in `1/df`
/// to the fourth order (its error, of order `z¹¹/df⁵`, is below 1e-20).
const LARGE_DF: f64 = 50_000.0;

/// `ln Γ(1/2) = ln √π`.
const LN_SQRT_PI: f64 = 0.572_364_942_924_700_1;

/// The Stirling series' correction `ln Γ(x) − ((x − ½) ln x − x + ½ ln 2π)` for `x ≥ 8`, to
/// below 1e-17 (Bernoulli terms up to `x⁻¹⁷`).
fn stirling_correction(x: f64) -> f64 {
    let r = 1.0 / x;
    let r2 = r * r;
    // B₂ₖ / (2k (2k − 1)) for k = 1..9, innermost last.
    let c = [
        1.0 / 12.0,
        -1.0 / 360.0,
        1.0 / 1260.0,
        -1.0 / 1680.0,
        1.0 / 1188.0,
        -691.0 / 360_360.0,
        1.0 / 156.0,
        -3617.0 / 122_400.0,
        43_867.0 / 244_188.0,
    ];
    let mut sum = 0.0;
    for k in c.iter().rev() {
        sum = sum * r2 + k;
    }
    sum * r
}

/// `ln B(a, 1/2) = ln Γ(a) + ln Γ(1/2) − ln Γ(a + 1/2)` for `a > 0`. Above 8 the two `ln Γ`
/// are not subtracted (each is large, their difference small): Stirling's formula gives
/// `ln Γ(a) − ln Γ(a + ½) = −½ ln a − a·ln(1 + 1/(2a)) + ½ + c(a) − c(a + ½)`.
fn ln_beta_half(a: f64) -> f64 {
    if a < 8.0 {
        return libm::lgamma(a) + LN_SQRT_PI - libm::lgamma(a + 0.5);
    }
    let diff =
        -0.5 * libm::log(a) - a * libm::log1p(0.5 / a) + 0.5 + stirling_correction(a) - stirling_correction(a + 0.5);
    diff + LN_SQRT_PI
}

/// The continued fraction of the regularized incomplete beta function (modified Lentz):
/// `I_x(a, b) = x^a (1−x)^b / (a B(a, b)) · cf(a, b, x)`, which converges fast for
/// `x < (a + 1) / (a + b + 2)`.
fn beta_fraction(a: f64, b: f64, x: f64) -> f64 {
    const TINY: f64 = 1e-300;
    const MAX_TERMS: u32 = 1_000_000;
    let fix = |v: f64| if v.abs() < TINY { TINY } else { v };
    let (qab, qap, qam) = (a + b, a + 1.0, a - 1.0);
    let mut c = 1.0;
    let mut d = 1.0 / fix(1.0 - qab * x / qap);
    let mut h = d;
    for m in 1..=MAX_TERMS {
        let m = f64::from(m);
        let m2 = 2.0 * m;
        let aa = m * (b - m) * x / ((qam + m2) * (a + m2));
        d = 1.0 / fix(1.0 + aa * d);
        c = fix(1.0 + aa / c);
        h *= d * c;
        let aa = -(a + m) * (qab + m) * x / ((a + m2) * (qap + m2));
        d = 1.0 / fix(1.0 + aa * d);
        c = fix(1.0 + aa / c);
        let step = d * c;
        h *= step;
        if (step - 1.0).abs() <= f64::EPSILON {
            break;
        }
    }
    h
}

/// `x` and `y = 1 − x`, each with its logarithm, all computed without cancellation.
#[derive(Clone, Copy)]
struct Argument {
    x: f64,
    y: f64,
    ln_x: f64,
    ln_y: f64,
}

impl Argument {
    /// `x = df/(df + t²)`, `y = t²/(df + t²)`.
    fn of(t: f64, df: f64) -> Argument {
        let t2 = t * t;
        Argument {
            x: df / (df + t2),
            y: t2 / (df + t2),
            ln_x: -libm::log1p(t2 / df),
            ln_y: libm::log(t2 / (df + t2)),
        }
    }

    /// `y` as the argument and `x` as its complement.
    fn swapped(self) -> Argument {
        Argument {
            x: self.y,
            y: self.x,
            ln_x: self.ln_y,
            ln_y: self.ln_x,
        }
    }
}

/// `I_x(a, b)`, the regularized incomplete beta function, for `a` or `b` equal to ½: the
/// continued fraction where it converges fast, else `1 − I_y(b, a)`.
fn incomplete_beta(a: f64, b: f64, arg: Argument) -> f64 {
    let ln_beta = ln_beta_half(if b == 0.5 { a } else { b });
    let front = libm::exp(a * arg.ln_x + b * arg.ln_y - ln_beta);
    if arg.x < (a + 1.0) / (a + b + 2.0) {
        front / a * beta_fraction(a, b, arg.x)
    } else {
        1.0 - front / b * beta_fraction(b, a, arg.y)
    }
}

/// `P(T > t)` for Student's t with `df` degrees of freedom and `t ≥ 0`: `I_x(df/2, 1/2) / 2`.
pub fn t_upper_tail(t: f64, df: f64) -> f64 {
    if t <= 0.0 {
        return 0.5;
    }
    if t.is_infinite() {
        return 0.0;
    }
    0.5 * incomplete_beta(0.5 * df, 0.5, Argument::of(t, df))
}

/// `P(0 < T < t)` for `t ≥ 0`: `I_y(1/2, df/2) / 2`, accurate when small (near the centre,
/// where `1/2 − P(T > t)` would cancel).
fn t_central(t: f64, df: f64) -> f64 {
    if t <= 0.0 {
        return 0.0;
    }
    0.5 * incomplete_beta(0.5, 0.5 * df, Argument::of(t, df).swapped())
}

/// The density of Student's t with `df` degrees of freedom at `t`.
pub fn t_density(t: f64, df: f64) -> f64 {
    libm::exp(-ln_beta_half(0.5 * df) - 0.5 * libm::log(df) - 0.5 * (df + 1.0) * libm::log1p(t * t / df))
}

/// The `p` quantile of Student's t with `df > 0` degrees of freedom (whole or not). About 15
/// significant digits; scipy's `t.ppf` is the known answer.
pub fn t_quantile(p: f64, df: f64) -> f64 {
    if p.is_nan() || df.is_nan() || df <= 0.0 {
        return f64::NAN;
    }
    if p <= 0.0 {
        return f64::NEG_INFINITY;
    }
    if p >= 1.0 {
        return f64::INFINITY;
    }
    if p == 0.5 {
        return 0.0;
    }
    if p < 0.5 {
        return -positive_quantile(0.5 - p, p, df);
    }
    // Both are exact: p − ½ (Sterbenz) and 1 − p.
    positive_quantile(p - 0.5, 1.0 - p, df)
}

/// The `t > 0` with `P(0 < T < t) = c` and `P(T > t) = q` (`c + q = ½`, each given exactly).
fn positive_quantile(c: f64, q: f64, df: f64) -> f64 {
    if df == 1.0 {
        // Cauchy: P(T > t) = atan(1/t)/π, so t = cot(πq) = tan(πc).
        return if q < 0.25 {
            1.0 / libm::tan(PI * q)
        } else {
            libm::tan(PI * c)
        };
    }
    if df == 2.0 {
        // P(0 < T < t) = t / (2√(2 + t²)).
        return 2.0 * c / (2.0 * q * (1.0 - q)).sqrt();
    }
    // A start from the normal quantile's Cornish–Fisher expansion (Abramowitz & Stegun 26.7.5).
    let z = if q < 0.25 {
        normal_quantile(1.0 - q)
    } else {
        -normal_quantile(q)
    };
    let z2 = z * z;
    let g1 = z * (z2 + 1.0) / 4.0;
    let g2 = z * ((5.0 * z2 + 16.0) * z2 + 3.0) / 96.0;
    let g3 = z * (((3.0 * z2 + 19.0) * z2 + 17.0) * z2 - 15.0) / 384.0;
    let g4 = z * ((((79.0 * z2 + 776.0) * z2 + 1482.0) * z2 - 1920.0) * z2 - 945.0) / 92_160.0;
    let start = z + g1 / df + g2 / (df * df) + g3 / (df * df * df) + g4 / (df * df * df * df);
    if df > LARGE_DF {
        // The expansion's next term is below 1e-20 here, while the continued fraction converges
        // too slowly near its boundary to be trusted to 1e-12.
        return start;
    }
    // Newton's method on u = ln t, against the smaller of the two probabilities (the tail
    // beyond the quartiles, the centre within): its logarithm is close to linear in u.
    let tail = q < 0.25;
    let target = libm::log(if tail { q } else { c });
    let mut u = libm::log(if start > 0.0 && start.is_finite() {
        start
    } else {
        z.max(1e-300)
    });
    for _ in 0..100 {
        let t = libm::exp(u);
        let (value, slope) = if tail {
            let v = t_upper_tail(t, df);
            (v, -t_density(t, df) * t / v)
        } else {
            let v = t_central(t, df);
            (v, t_density(t, df) * t / v)
        };
        let step = (libm::log(value) - target) / slope;
        u -= step;
        if step.abs() <= 2.0 * f64::EPSILON * u.abs().max(1.0) {
            break;
        }
    }
    libm::exp(u)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn normal_quantiles() {
        assert!((normal_quantile(0.975) - 1.959963984540054).abs() < 1e-15);
        assert!((normal_quantile(0.8) - 0.8416212335729143).abs() < 1e-15);
        assert!((normal_quantile(1e-10) + 6.361340902404056).abs() < 1e-12);
        assert_eq!(normal_quantile(0.5), 0.0);
    }

    #[test]
    fn the_stirling_difference_joins_lgamma_at_eight() {
        for a in [8.0, 8.5, 9.0, 12.25, 30.0] {
            let direct = libm::lgamma(a) + LN_SQRT_PI - libm::lgamma(a + 0.5);
            assert!((ln_beta_half(a) - direct).abs() < 1e-14, "{a}");
        }
    }

    #[test]
    fn t_quantiles_by_closed_form_and_symmetry() {
        // df = 1 and 2 in closed form (the others against scipy and mpmath in tests/it).
        assert!((t_quantile(0.975, 1.0) - 12.706204736174698).abs() < 1e-12);
        assert!((t_quantile(0.975, 2.0) - 4.302652729749462).abs() < 1e-13);
        assert_eq!(t_quantile(0.125, 7.0), -t_quantile(0.875, 7.0));
        assert_eq!(t_quantile(0.5, 3.0), 0.0);
        assert!(t_quantile(0.975, 0.0).is_nan());
        // The tail and the quantile are inverses.
        for df in [3.0, 10.0, 57.0, 5000.0] {
            for p in [0.6, 0.9, 0.975, 0.9999] {
                let t = t_quantile(p, df);
                assert!(
                    (t_upper_tail(t, df) - (1.0 - p)).abs() < 1e-15 * (1.0 - p) * 50.0,
                    "{df} {p}"
                );
                assert!((t_central(t, df) - (p - 0.5)).abs() < 1e-15 * 50.0, "{df} {p}");
            }
        }
    }
}
