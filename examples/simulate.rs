//! Prints the tables of docs/statistics.md (and the README): `cargo run --release --example
//! simulate [TRIALS]` (default 2000 trials per cell; every cell seeded, so the same numbers come
//! out every run).
//!
//! 1. Independent cases: how often each rule approves two equally good models and blocks a true
//!    drop of 0.10 (and of 0.06, just past the tolerance), at a true pass rate of 0.8 with
//!    independent errors, tolerance 0.05, 95% confidence (the two outcomes of the time before
//!    `outcome`: non-inferiority approves when the lower bound is ≥ −0.05).
//! 2. Clustered cases: 20 templates of equal size, intra-cluster correlation 0, 0.3 and 0.7,
//!    n = 200 and 2,000; equal models (0.8 and 0.8) and a true regression of twice the tolerance
//!    (0.8 and 0.7); the non-inferiority rule (tolerance 0.05, 95%) on the unclustered (Newcombe)
//!    and the clustered (cluster-robust t) interval of the same trials: how often the interval
//!    holds the true difference, and the approved / inconclusive / blocked shares.

use deploy_gate::stats::{simulate, simulate_clustered, ClusterScenario};

fn main() {
    let trials: u32 = std::env::args()
        .nth(1)
        .map_or(2000, |t| t.parse().expect("TRIALS is a number"));
    let pct = |x: f64| format!("{:.1}%", 100.0 * x);
    println!("| n | rule | approves equal models | blocks a drop of 0.10 | blocks a drop of 0.06 |");
    println!("|---|---|---|---|---|");
    for n in [200u64, 2000] {
        let equal = simulate(n, 0.8, 0.8, 0.05, 0.95, trials, 11);
        let drop = simulate(n, 0.8, 0.7, 0.05, 0.95, trials, 12);
        let near = simulate(n, 0.8, 0.74, 0.05, 0.95, trials, 13);
        println!(
            "| {n} | `point`, tolerance 0 (the reference) | {} | {} | {} |",
            pct(equal.point_strict),
            pct(1.0 - drop.point_strict),
            pct(1.0 - near.point_strict)
        );
        println!(
            "| {n} | `point`, tolerance 0.05 | {} | {} | {} |",
            pct(equal.point),
            pct(1.0 - drop.point),
            pct(1.0 - near.point)
        );
        println!(
            "| {n} | `non_inferiority`, tolerance 0.05 | {} | {} | {} |",
            pct(equal.non_inferiority),
            pct(1.0 - drop.non_inferiority),
            pct(1.0 - near.non_inferiority)
        );
    }
    println!("\n{trials} trials per cell, seeded (ChaCha20, seeds 11, 12 and 13).\n");

    println!("| n | ICC | models | interval | covers | approved | inconclusive | blocked |");
    println!("|---|---|---|---|---|---|---|---|");
    let mut seed = 100;
    for cases in [200usize, 2000] {
        for icc in [0.0, 0.3, 0.7] {
            for (models, p_new) in [("equal", 0.8), ("new − old = −0.10", 0.7)] {
                seed += 1;
                let r = simulate_clustered(&ClusterScenario {
                    cases,
                    templates: 20,
                    icc,
                    p_old: 0.8,
                    p_new,
                    tolerance: 0.05,
                    confidence: 0.95,
                    trials,
                    seed,
                });
                for (interval, x) in [("unclustered", r.unclustered), ("clustered", r.clustered)] {
                    println!(
                        "| {cases} | {icc} | {models} | {interval} | {} | {} | {} | {} |",
                        pct(x.coverage),
                        pct(x.approved),
                        pct(x.inconclusive),
                        pct(x.blocked)
                    );
                }
            }
        }
    }
    println!(
        "\n{trials} trials per cell, seeded (ChaCha20, seeds 101 to 112); 20 templates of equal size, \
         non-inferiority at tolerance 0.05, 95% intervals."
    );
}
