//! Known answers for the statistics: Wilson intervals from statsmodels
//! (`proportion_confint(method="wilson")`), McNemar p-values from scipy (`binomtest`, mid-p from
//! `binom.cdf`/`binom.pmf`), Newcombe's paired interval from Altman et al. (2000)'s worked example
//! and an independent Python implementation of the published formula on statsmodels' Wilson
//! intervals; and the seeded simulation that argues for the non-inferiority mode.

#![allow(clippy::excessive_precision)] // known answers as the reference printed them

use deploy_gate::stats::{
    cases_needed, mcnemar, newcombe_paired, simulate, simulate_clustered, simulate_sequential,
    simulate_sequential_clustered, wilson, ClusterScenario, ClusteredSequentialScenario, Paired, SequentialScenario,
};

fn close(a: f64, b: f64, what: &str) {
    assert!((a - b).abs() < 1e-12, "{what}: {a} != {b}");
}

#[test]
fn wilson_matches_statsmodels() {
    let cases: &[(u64, u64, f64, f64, f64)] = &[
        (0, 1, 0.95, 0.0, 0.7934506856227627),
        (1, 1, 0.95, 0.2065493143772374, 1.0),
        (0, 10, 0.95, 0.0, 0.27753279986288926),
        (10, 10, 0.95, 0.7224672001371106, 1.0),
        (3, 10, 0.95, 0.10779126740630104, 0.6032218525388546),
        (81, 263, 0.95, 0.2552885198782742, 0.36620957698280004),
        (15, 148, 0.95, 0.06238639953073628, 0.16048724172330803),
        (0, 200, 0.95, 0.0, 0.01884532637726658),
        (160, 200, 0.95, 0.7391448134346212, 0.8495479907390189),
        (1, 2, 0.95, 0.09453120573423068, 0.9054687942657693),
        (7, 9, 0.9, 0.5036427823767538, 0.9235052624456037),
        (999, 1000, 0.99, 0.9915394337800183, 0.9998825836463816),
        (50, 100, 0.8, 0.43644222446010295, 0.563557775539897),
    ];
    for &(x, n, conf, low, high) in cases {
        let w = wilson(x, n, conf);
        close(w.low, low, &format!("wilson({x}, {n}, {conf}).low"));
        close(w.high, high, &format!("wilson({x}, {n}, {conf}).high"));
        close(w.rate, x as f64 / n as f64, "rate");
    }
    let empty = wilson(0, 0, 0.95);
    assert_eq!((empty.low, empty.high), (0.0, 1.0));
}

#[test]
fn mcnemar_matches_scipy() {
    let cases: &[(u64, u64, f64, f64)] = &[
        (0, 0, 1.0, 1.0),
        (1, 0, 1.0, 0.4999999999999999),
        (0, 1, 1.0, 0.4999999999999999),
        (5, 0, 0.0625, 0.03125000000000003),
        (3, 3, 1.0, 1.0),
        (10, 2, 0.03857421875, 0.022460937499999976),
        (2, 10, 0.03857421875, 0.022460937499999976),
        (20, 35, 0.05806414679240905, 0.04404654610215077),
        (0, 12, 0.00048828125, 0.0002441406249999999),
        (40, 60, 0.05688793364098089, 0.04604406692934291),
        (1, 2, 1.0, 0.6249999999999999),
        (100, 130, 0.05561357778139238, 0.04816305344074456),
        (7, 1, 0.0703125, 0.039062500000000014),
    ];
    for &(b, c, exact, mid) in cases {
        let m = mcnemar(b, c);
        close(m.p_exact, exact, &format!("mcnemar({b}, {c}).p_exact"));
        close(m.p_mid, mid, &format!("mcnemar({b}, {c}).p_mid"));
    }
    // Large discordant counts stay finite and symmetric.
    let big = mcnemar(50_000, 50_400);
    assert!(big.p_exact > 0.2 && big.p_exact < 0.25, "{big:?}");
    assert_eq!(mcnemar(50_400, 50_000), big_swapped(big));
}

fn big_swapped(m: deploy_gate::stats::McNemar) -> deploy_gate::stats::McNemar {
    deploy_gate::stats::McNemar { b: m.c, c: m.b, ..m }
}

#[test]
fn newcombe_matches_the_published_example_and_the_formula() {
    // Altman et al., "Statistics with confidence" (2000): 14 / 5 / 0 / 22 → 0.011 to 0.226.
    let altman = newcombe_paired(
        &Paired {
            both_pass: 14,
            old_only: 0,
            new_only: 5,
            both_fail: 22,
        },
        0.95,
    );
    assert_eq!(
        (format!("{:.3}", altman.low), format!("{:.3}", altman.high)),
        ("0.011".into(), "0.226".into())
    );
    // (both pass, old only, new only, both fail, confidence, estimate, low, high)
    type Case = (u64, u64, u64, u64, f64, f64, f64, f64);
    let cases: &[Case] = &[
        (
            14,
            0,
            5,
            22,
            0.95,
            0.12195121951219512,
            0.01148324138303325,
            0.2264926843512112,
        ),
        (
            14,
            5,
            0,
            22,
            0.95,
            -0.12195121951219512,
            -0.2264926843512112,
            -0.011483241383033277,
        ),
        (0, 0, 0, 10, 0.95, 0.0, -0.2775327998628892, 0.2775327998628892),
        (10, 0, 0, 0, 0.95, 0.0, -0.27753279986288926, 0.27753279986288926),
        (5, 0, 0, 5, 0.95, 0.0, -0.16659315708122263, 0.16659315708122263),
        (
            1,
            1,
            7,
            12,
            0.95,
            0.2857142857142857,
            0.02555912416485978,
            0.506920226686141,
        ),
        (
            30,
            10,
            2,
            8,
            0.95,
            -0.16000000000000003,
            -0.29043935042654784,
            -0.023980393188464205,
        ),
        (
            100,
            20,
            25,
            55,
            0.95,
            0.025000000000000022,
            -0.04107719337196225,
            0.09069053447442295,
        ),
        (
            160,
            12,
            9,
            19,
            0.95,
            -0.015000000000000013,
            -0.06269085618970874,
            0.032073522927845044,
        ),
        (0, 3, 0, 0, 0.95, -1.0, -1.0, -0.20592328245977842),
        (50, 0, 50, 0, 0.95, 0.5, 0.39696168935130643, 0.5961684696340044),
        (
            120,
            30,
            31,
            19,
            0.9,
            0.0050000000000000044,
            -0.05969662050154499,
            0.06965129150336803,
        ),
        (2, 1, 1, 2, 0.99, 0.0, -0.5124083941751071, 0.5124083941751071),
    ];
    for &(a, b, c, d, conf, est, low, high) in cases {
        let t = Paired {
            both_pass: a,
            old_only: b,
            new_only: c,
            both_fail: d,
        };
        let r = newcombe_paired(&t, conf);
        let what = format!("newcombe({a}/{b}/{c}/{d}, {conf})");
        close(r.estimate, est, &what);
        close(r.low, low, &what);
        close(r.high, high, &what);
        assert_eq!(r.method, "newcombe");
    }
}

#[test]
fn sample_size_guidance() {
    // ψ(z₀.₉₇₅ + z₀.₈)² / Δ² with ψ = 0.32, Δ = 0.05: 0.32 · 7.8489 / 0.0025 = 1004.6.
    assert_eq!(cases_needed(0.32, 0.05, 0.95), Some(1005));
    assert_eq!(cases_needed(0.32, 0.0, 0.95), None);
    assert_eq!(cases_needed(0.0, 0.05, 0.95), Some(1));
}

#[test]
fn non_inferiority_is_sure_at_2000_cases_where_the_point_rule_is_a_coin_toss() {
    // Equal models at a true pass rate of 0.8, and a true drop of 0.10, with independent errors.
    let equal = simulate(2000, 0.8, 0.8, 0.05, 0.95, 400, 1);
    let drop = simulate(2000, 0.8, 0.7, 0.05, 0.95, 400, 2);
    assert!(equal.non_inferiority >= 0.90, "{equal:?}");
    assert!(1.0 - drop.non_inferiority >= 0.90, "{drop:?}");
    assert!(
        equal.point_strict > 0.35 && equal.point_strict < 0.65,
        "the reference rule is a coin toss: {equal:?}"
    );
    let again = simulate(2000, 0.8, 0.8, 0.05, 0.95, 400, 1);
    assert_eq!(again, equal, "seeded");
}

/// The targets of the clustered simulation (docs/statistics.md has the full table, 2,000 trials
/// a cell), here with a fixed seed and 500 trials a cell: 20 templates, non-inferiority at
/// tolerance 0.05 and 95%.
#[test]
fn the_clustered_simulation_meets_its_targets() {
    let cell = |cases: usize, icc: f64, p_new: f64, seed: u64| {
        simulate_clustered(&ClusterScenario {
            cases,
            templates: 20,
            icc,
            p_old: 0.8,
            p_new,
            tolerance: 0.05,
            confidence: 0.95,
            trials: 500,
            seed,
        })
    };
    // Clustered intervals cover within ±2.5 points of nominal at ICC 0.7 (the unclustered ones
    // do not come near).
    for (cases, p_new, seed) in [(200, 0.8, 1), (200, 0.7, 2), (2000, 0.8, 3), (2000, 0.7, 4)] {
        let r = cell(cases, 0.7, p_new, seed);
        assert!(
            (r.clustered.coverage - 0.95).abs() <= 0.025,
            "{cases} cases, {p_new}: {r:?}"
        );
        assert!(r.unclustered.coverage < 0.8, "{cases} cases, {p_new}: {r:?}");
    }
    // Equal models at 2,000 cases are approved or found inconclusive, never blocked, in ≥ 95% of
    // trials, whatever the correlation.
    for (icc, seed) in [(0.0, 5), (0.3, 6), (0.7, 7)] {
        let r = cell(2000, icc, 0.8, seed);
        assert!(
            r.clustered.approved + r.clustered.inconclusive >= 0.95,
            "ICC {icc}: {r:?}"
        );
        assert!((r.clustered.approved + r.clustered.inconclusive + r.clustered.blocked - 1.0).abs() < 1e-12);
    }
    // A true regression of twice the tolerance is blocked in ≥ 80% of trials at 2,000 cases and
    // ICC 0; its power falls as the correlation grows (the price of clustering).
    let power: Vec<f64> = [(0.0, 8), (0.3, 9), (0.7, 10)]
        .iter()
        .map(|&(icc, seed)| cell(2000, icc, 0.7, seed).clustered.blocked)
        .collect();
    assert!(power[0] >= 0.8, "{power:?}");
    assert!(power[0] > power[1] && power[1] > power[2], "{power:?}");
    // Seeded: the same numbers again.
    assert_eq!(cell(200, 0.3, 0.8, 11), cell(200, 0.3, 0.8, 11));
}

/// The targets of the sequential rule (docs/statistics.md, "Sequential decisions"), 500 seeded
/// trials a cell: its error rates held at 2.5% once and continued ten times, where the fixed
/// rule with peeking spends them again; equal models, +3 pp and −10 pp decided early.
#[test]
fn the_sequential_simulation_meets_its_targets() {
    let cell = |delta: f64, seed: u64| {
        simulate_sequential(&SequentialScenario {
            p_old: 0.8,
            discordant: 0.12,
            delta,
            tolerance: 0.05,
            confidence: 0.95,
            budget: 2000,
            trials: 500,
            seed,
        })
    };
    let at_tolerance = cell(-0.05, 1);
    let equal = cell(0.0, 2);
    for r in [at_tolerance.sequential, at_tolerance.sequential_continued] {
        assert!(r.approved <= 0.025, "false approval {r:?}");
    }
    for r in [equal.sequential, equal.sequential_continued] {
        assert!(r.blocked <= 0.025, "false block {r:?}");
    }
    assert_eq!(at_tolerance.sequential, at_tolerance.sequential_continued);
    assert_eq!(equal.sequential, equal.sequential_continued);
    assert!(at_tolerance.peeking.approved > at_tolerance.fixed.approved);
    assert!(equal.peeking.blocked > equal.fixed.blocked);
    assert!(equal.sequential.mean_used <= 700.0, "{:?}", equal.sequential);
    assert!(cell(0.03, 3).sequential.mean_used <= 300.0);
    assert!(cell(-0.10, 4).sequential.mean_used <= 300.0);
    let clustered = simulate_sequential_clustered(&ClusteredSequentialScenario {
        cases: 2000,
        templates: 20,
        icc: 0.7,
        p_old: 0.8,
        delta: 0.0,
        tolerance: 0.05,
        confidence: 0.95,
        trials: 500,
        seed: 5,
    });
    assert!(clustered.sequential.blocked <= 0.025, "{clustered:?}");
}
