//! Prints the table in docs/statistics.md: how often each rule approves two equally good models and blocks a
//! true drop of 0.10 (and of 0.06, just past the tolerance), at a true pass rate of 0.8 with independent errors, tolerance 0.05,
//! 95% confidence. `cargo run --release --example simulate [TRIALS]` (default 2000).

use deploy_gate::stats::simulate;

fn main() {
    let trials: u32 = std::env::args()
        .nth(1)
        .map_or(2000, |t| t.parse().expect("TRIALS is a number"));
    println!("| n | rule | approves equal models | blocks a drop of 0.10 | blocks a drop of 0.06 |");
    println!("|---|---|---|---|---|");
    for n in [200u64, 2000] {
        let equal = simulate(n, 0.8, 0.8, 0.05, 0.95, trials, 11);
        let drop = simulate(n, 0.8, 0.7, 0.05, 0.95, trials, 12);
        let near = simulate(n, 0.8, 0.74, 0.05, 0.95, trials, 13);
        let pct = |x: f64| format!("{:.1}%", 100.0 * x);
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
    println!("\n{trials} trials per cell, seeded (ChaCha20, seeds 11, 12 and 13).");
}
