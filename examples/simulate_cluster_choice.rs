//! Prints the table of docs/statistics.md, "Which unit: `cluster: none` or `cluster: template`":
//! `cargo run --release --example simulate_cluster_choice [TRIALS]` (default 4,000 trials per
//! cell; every cell seeded, so the same numbers come out every run).
//!
//! 3,000 cases in 40 templates of 75 (as in a test set with few templates), old model at 0.8,
//! tolerance 0.05, confidence 0.95, budget every unit; the cases independent (ICC 0: the fixed
//! report's design effect near 1) or correlated within their template (ICC 0.05 and 0.3). The
//! same trials are decided by the sequential rule with the case as the unit (`cluster: none`)
//! and with the template (`cluster: template`); true differences new − old of −0.05 (exactly at
//! the tolerance: an approval is false), 0 and +0.05. First, `min_units` (the fewest units at
//! which the rule could decide at all) for a few tolerances and confidence levels.

use deploy_gate::stats::{simulate_cluster_choice, ClusteredSequentialScenario, RuleOutcomes};

const DELTAS: [f64; 3] = [-0.05, 0.0, 0.05];

fn main() {
    let trials: u32 = std::env::args()
        .nth(1)
        .map_or(4_000, |t| t.parse().expect("TRIALS is a number"));
    println!("| tolerance | confidence | min_units |");
    println!("|---|---|---|");
    for confidence in [0.9, 0.95, 0.99] {
        for tolerance in [0.0, 0.05, 0.1, 0.2] {
            let m = deploy_gate::sequential::min_units(tolerance, confidence);
            println!(
                "| {tolerance} | {confidence} | {} |",
                m.map_or("none".to_owned(), |m| m.to_string())
            );
        }
    }
    println!();
    println!(
        "| ICC | unit | false approval (new − old = −0.05) | approves equal | mean cases: equal | approves +5 pp | mean cases: +5 pp |"
    );
    println!("|---|---|---|---|---|---|---|");
    for (icc, seed) in [(0.0, 500i64), (0.05, 600), (0.3, 700)] {
        let cells = DELTAS.map(|delta| {
            simulate_cluster_choice(&ClusteredSequentialScenario {
                cases: 3000,
                templates: 40,
                icc,
                p_old: 0.8,
                delta,
                tolerance: 0.05,
                confidence: 0.95,
                trials,
                seed: (seed + (delta * 100.0).round() as i64) as u64,
            })
        });
        let pct = |x: f64| format!("{:.1}%", 100.0 * x);
        let row = |name: &str, r: [RuleOutcomes; 3]| {
            println!(
                "| {icc} | {name} | {} | {} | {:.0} | {} | {:.0} |",
                pct(r[0].approved),
                pct(r[1].approved),
                r[1].mean_used,
                pct(r[2].approved),
                r[2].mean_used
            )
        };
        row("case (`cluster: none`)", cells.map(|c| c.none));
        row("template (`cluster: template`)", cells.map(|c| c.template));
    }
}
