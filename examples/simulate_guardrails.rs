//! Prints the guardrails' table of docs/statistics.md: `cargo run --release --example
//! simulate_guardrails [TRIALS]` (default 1,000 trials for the scenarios with a bootstrap,
//! ten times as many for `template_regression`; every scenario seeded, so the same numbers come
//! out every run). Each trial is evaluated by the same code as `deploy-gate evaluate`
//! (`deploy_gate::stats::simulate_metrics`, `simulate_templates`); confidence 0.95, α = 0.05.
//!
//! 1. Equal models, five blocking guardrails (p95 latency, mean total tokens, mean cost and
//!    p50 retrieval time with `max_increase: 10%`, mean steps with `max_difference: 0.5`),
//!    500 cases: a block is false.
//! 2. The worst case for false blocks: every guardrail's true change exactly at its limit
//!    (+10%, +0.5 steps).
//! 3. A true 30% increase of latency (every quantile) at 1,000 cases, `max_increase: 10%` on
//!    p95: with that guardrail alone, and among the five (k = 5, the other four unchanged).
//! 4. `template_regression` (min_cases 10), 20 templates of 50 cases. "No template may
//!    regress" (max_drop 0): equal models (its worst case for a false block); one template
//!    dropping by 0.4. With max_drop 0.1: equal models; every template's true drop exactly at
//!    max_drop; one template dropping by 0.4 (0.3 beyond the limit).

use deploy_gate::stats::{
    simulate_metrics, simulate_templates, MetricsScenario, MetricsSimulation, TemplateScenario, FIVE_GUARDRAILS,
    LATENCY_GUARDRAIL,
};
use std::time::Instant;

/// A share with its Monte-Carlo standard error.
fn pct(p: f64, trials: u32) -> String {
    let se = (p * (1.0 - p) / f64::from(trials)).sqrt();
    format!("{:.1}% (± {:.1})", 100.0 * p, 100.0 * se)
}

fn metrics_row(name: &str, s: &MetricsScenario, target: &str, pick: fn(&MetricsSimulation) -> f64) {
    let start = Instant::now();
    let r = simulate_metrics(s);
    let per: Vec<String> = r
        .criteria
        .iter()
        .map(|(n, o)| format!("{n} {:.1}%", 100.0 * o.exceeded))
        .collect();
    println!(
        "| {name} | {} | {} | {target} | {} | {} | {:.0} s |",
        s.cases,
        s.trials,
        pct(pick(&r), s.trials),
        per.join(", "),
        start.elapsed().as_secs_f64()
    );
}

fn template_row(name: &str, s: &TemplateScenario, target: &str, caught: bool) {
    let start = Instant::now();
    let r = simulate_templates(s);
    let (value, detail) = if caught {
        (
            r.first_caught,
            format!("another template named {:.2}%", 100.0 * r.others_named),
        )
    } else {
        (r.blocked, String::new())
    };
    println!(
        "| {name} | {} × {} | {} | {target} | {} | {detail} | {:.0} s |",
        s.templates,
        s.cases_per_template,
        s.trials,
        pct(value, s.trials),
        start.elapsed().as_secs_f64()
    );
}

fn main() {
    let trials: u32 = std::env::args()
        .nth(1)
        .map_or(1_000, |t| t.parse().expect("TRIALS is a number"));
    let base = MetricsScenario {
        cases: 500,
        trials,
        seed: 500,
        confidence: 0.95,
        guardrails: FIVE_GUARDRAILS,
        latency_ratio: 1.0,
        others_ratio: 1.0,
        steps_shift: 0.0,
    };
    println!("| scenario | cases | trials | target | measured (± Monte-Carlo SE) | exceeded, per guardrail | time |");
    println!("|---|---|---|---|---|---|---|");
    metrics_row(
        "equal models, five blocking guardrails: false blocks",
        &base,
        "≤ 5%",
        |r| r.blocked,
    );
    metrics_row(
        "every true change exactly at its limit (+10%, +0.5 steps): false blocks",
        &MetricsScenario {
            seed: 510,
            latency_ratio: 1.1,
            others_ratio: 1.1,
            steps_shift: 0.5,
            ..base.clone()
        },
        "≤ 5%",
        |r| r.blocked,
    );
    let power = MetricsScenario {
        cases: 1000,
        seed: 530,
        latency_ratio: 1.3,
        guardrails: LATENCY_GUARDRAIL,
        ..base.clone()
    };
    metrics_row(
        "latency +30%, p95 `max_increase: 10%` alone: exceeded",
        &power,
        "≥ 90%",
        |r| r.criteria[0].1.exceeded,
    );
    metrics_row(
        "latency +30% among the five (k = 5): p95 latency exceeded",
        &MetricsScenario {
            seed: 531,
            guardrails: FIVE_GUARDRAILS,
            ..power
        },
        "≥ 90%",
        |r| r.criteria[0].1.exceeded,
    );
    // "No template may regress" (max_drop 0): equal models are then the worst case for a false
    // block, and a drop of 0.4 is all excess.
    let strict = TemplateScenario {
        templates: 20,
        cases_per_template: 50,
        drop_first: 0.0,
        drop_others: 0.0,
        max_drop: 0.0,
        confidence: 0.95,
        trials: 10 * trials,
        seed: 700,
    };
    template_row(
        "template_regression `max_drop: 0`, equal models: false blocks",
        &strict,
        "≤ 5%",
        false,
    );
    template_row(
        "template_regression `max_drop: 0`, one template dropping by 0.4: caught",
        &TemplateScenario {
            drop_first: 0.4,
            seed: 740,
            ..strict
        },
        "≥ 90%",
        true,
    );
    let templates = TemplateScenario {
        max_drop: 0.1,
        seed: 600,
        ..strict
    };
    template_row(
        "template_regression `max_drop: 0.1`, equal models: false blocks",
        &templates,
        "≤ 5%",
        false,
    );
    template_row(
        "template_regression `max_drop: 0.1`, every template's true drop exactly 0.1: false blocks",
        &TemplateScenario {
            drop_first: 0.1,
            drop_others: 0.1,
            seed: 610,
            ..templates
        },
        "≤ 5%",
        false,
    );
    template_row(
        "template_regression `max_drop: 0.1`, one template dropping by 0.4 (0.3 beyond the limit): caught",
        &TemplateScenario {
            drop_first: 0.4,
            seed: 640,
            ..templates
        },
        "≥ 90%",
        true,
    );
    println!(
        "\nSeeded (ChaCha20); α = 0.05 (confidence 0.95). A block: a blocking guardrail exceeded. \
         `cargo run --release --example simulate_guardrails {trials}`"
    );
}
