//! Times the sequential rule's recorded bounds over a long run: `cargo run --release --example
//! bench_sequential [LOOKS]` (default 100,000). The units are equal models' paired differences
//! (6% each way, in a fixed pattern) at tolerance 0, so the rule never stops and every look on
//! the recording schedule gets its exact bounds (docs/statistics.md, "Sequential decisions").

use deploy_gate::stats::sequential_decision;
use std::time::Instant;

fn main() {
    let looks: usize = std::env::args()
        .nth(1)
        .map_or(100_000, |t| t.parse().expect("LOOKS is a number"));
    let units: Vec<f64> = (0..looks)
        .map(|i| match (i * 37) % 100 {
            0..=5 => -1.0,
            6..=11 => 1.0,
            _ => 0.0,
        })
        .collect();
    let start = Instant::now();
    let d = sequential_decision(&units, 0.0, 0.95, looks);
    let took = start.elapsed();
    let last = d.last.expect("a look");
    println!(
        "{} looks, {} recorded, {:?}: last [{:.6}, {:.6}]; {:.2?}",
        d.used,
        d.looks.len(),
        d.outcome,
        last.low,
        last.high,
        took
    );
}
