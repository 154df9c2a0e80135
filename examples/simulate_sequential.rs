//! Prints the sequential rule's table of docs/statistics.md: `cargo run --release --example
//! simulate_sequential [TRIALS]` (default 10,000 trials per cell; every cell seeded, so the same
//! numbers come out every run).
//!
//! Paired pass/fail cases, old model at 0.8, 12% discordant pairs, tolerance 0.05, confidence
//! 0.95, budget 2,000 cases; true differences new − old of −0.05 (exactly at the tolerance: an
//! approval is false), 0 (equal models: a block is false), +0.03 and −0.10. The fixed rule at
//! 2,000, the fixed rule with peeking (200/400/800/1,600/2,000) and continued ten times (every
//! 200), the sequential rule once and continued ten times; then 20 templates of 100 cases and
//! 200 of 10 at ICC 0.7, the clustered fixed rule against the sequential rule over template means.

use deploy_gate::stats::{
    simulate_sequential, simulate_sequential_clustered, ClusteredSequentialScenario, RuleOutcomes, SequentialScenario,
};

const DELTAS: [f64; 4] = [-0.05, 0.0, 0.03, -0.10];

fn row(name: &str, r: [RuleOutcomes; 4]) {
    let pct = |x: f64| format!("{:.1}%", 100.0 * x);
    println!(
        "| {name} | {} | {} | {} | {:.0} | {:.0} | {:.0} |",
        pct(r[0].approved),
        pct(r[1].blocked),
        pct(r[1].approved),
        r[1].mean_used,
        r[2].mean_used,
        r[3].mean_used
    );
}

fn main() {
    let trials: u32 = std::env::args()
        .nth(1)
        .map_or(10_000, |t| t.parse().expect("TRIALS is a number"));
    println!(
        "| rule | false approval (new − old = −0.05) | false block (equal) | approves equal | mean cases: equal | +3 pp | −10 pp |"
    );
    println!("|---|---|---|---|---|---|---|");
    let cells = DELTAS.map(|delta| {
        simulate_sequential(&SequentialScenario {
            p_old: 0.8,
            discordant: 0.12,
            delta,
            tolerance: 0.05,
            confidence: 0.95,
            budget: 2000,
            trials,
            seed: (200 + (delta * 100.0).round() as i64) as u64,
        })
    });
    row("fixed, at 2,000", cells.map(|c| c.fixed));
    row("fixed, peeking at 200/400/800/1,600/2,000", cells.map(|c| c.peeking));
    row(
        "fixed, continued ten times (every 200)",
        cells.map(|c| c.fixed_continued),
    );
    row("sequential, budget 2,000", cells.map(|c| c.sequential));
    row(
        "sequential, continued ten times (200 → 2,000)",
        cells.map(|c| c.sequential_continued),
    );
    for (templates, seed) in [(20usize, 300i64), (200, 400)] {
        let clustered = DELTAS.map(|delta| {
            simulate_sequential_clustered(&ClusteredSequentialScenario {
                cases: 2000,
                templates,
                icc: 0.7,
                p_old: 0.8,
                delta,
                tolerance: 0.05,
                confidence: 0.95,
                trials,
                seed: (seed + (delta * 100.0).round() as i64) as u64,
            })
        });
        row(
            &format!("ICC 0.7, {templates} templates: fixed, clustered"),
            clustered.map(|c| c.fixed),
        );
        row(
            &format!("ICC 0.7, {templates} templates: sequential, template units"),
            clustered.map(|c| c.sequential),
        );
    }
    println!(
        "\n{trials} trials per cell, seeded (ChaCha20, seed 200 + 100·δ for independent cases, 300 + 100·δ \
         and 400 + 100·δ clustered); old model 0.8, 12% discordant pairs, tolerance 0.05, 95%, budget 2,000 cases."
    );
}
