//! Simulations of the guardrails' error rates, seeded (ChaCha20) so the same numbers come out
//! every run: each trial writes an audit log and both models' verdict files in memory and
//! evaluates them with [`crate::gate::evaluate_in_memory`] (the same code as `deploy-gate
//! evaluate`), then reads the report's `guardrails`. `examples/simulate_guardrails.rs` prints
//! the table of docs/statistics.md, "Guardrails".
//!
//! - [`simulate_metrics`]: latency (lognormal, the two models' logs correlated 0.6), tokens and
//!   three metrics of realistic spread, with the new model's true change set per scenario, under
//!   five blocking guardrails ([`FIVE_GUARDRAILS`]) or the p95 latency one alone.
//! - [`simulate_templates`]: per-template pass/fail cases, correlated within a case (a case's
//!   difficulty is shared by both models), one template's new pass rate dropped, under
//!   `template_regression`.

use super::simulate::unit;
use crate::gate::{evaluate_in_memory, MemoryInputs};
use crate::guardrail::{GuardrailOutcome, GuardrailsReport};
use crate::policy::PolicyInput;
use rand_chacha::ChaCha20Rng;
use rand_core::SeedableRng;
use serde_json::{json, Value};
use std::fmt::Write;

/// The five blocking guardrails of [`simulate_metrics`]: p95 latency, mean total tokens, mean
/// cost (`metrics.cost_usd`) and p50 retrieval time (`metrics.retrieval_ms`) each with
/// `max_increase: 10%`, and mean steps (`metrics.steps`) with `max_difference: 0.5`.
pub const FIVE_GUARDRAILS: &str = r#"[
  {"metric": "latency_ms", "statistic": "p95", "max_increase": "10%"},
  {"metric": "total_tokens", "statistic": "mean", "max_increase": "10%"},
  {"metric": "metrics.cost_usd", "statistic": "mean", "max_increase": "10%"},
  {"metric": "metrics.steps", "statistic": "mean", "max_difference": 0.5},
  {"metric": "metrics.retrieval_ms", "statistic": "p50", "max_increase": "10%"}
]"#;

/// The p95 latency guardrail alone.
pub const LATENCY_GUARDRAIL: &str = r#"[{"metric": "latency_ms", "statistic": "p95", "max_increase": "10%"}]"#;

/// Independent cases, each with both models' latency, tokens, cost, steps and retrieval time.
///
/// - latency: lognormal, median 800 ms, σ = 0.5 on the log scale, the two models' logs
///   correlated 0.6; the new model's times multiplied by `latency_ratio` (so every quantile and
///   the mean change by exactly that ratio);
/// - tokens: the prompt, the same for both models, lognormal (median 400, σ 0.5); the
///   completion lognormal (median 150, σ 0.6, logs correlated 0.6); the new model's both
///   multiplied by `others_ratio`, rounded;
/// - `metrics.cost_usd`: lognormal (median 0.002, σ 0.8, logs correlated 0.6), times
///   `others_ratio`;
/// - `metrics.retrieval_ms`: lognormal (median 120, σ 1.0, logs correlated 0.6), times
///   `others_ratio`;
/// - `metrics.steps`: Poisson with a case's own mean λ (lognormal, median 6, σ 0.4), the new
///   model's `λ + steps_shift`.
#[derive(Debug, Clone, PartialEq)]
pub struct MetricsScenario {
    /// Cases a trial.
    pub cases: usize,
    /// Trials.
    pub trials: u32,
    /// The generator's seed; trial `i`'s policy seed (the bootstrap's) is `seed + i`.
    pub seed: u64,
    /// The policy's confidence.
    pub confidence: f64,
    /// The guardrails (a JSON list): [`FIVE_GUARDRAILS`] or [`LATENCY_GUARDRAIL`].
    pub guardrails: &'static str,
    /// The new model's latency over the old one's.
    pub latency_ratio: f64,
    /// The new model's tokens, cost and retrieval time over the old one's.
    pub others_ratio: f64,
    /// The new model's mean steps minus the old one's.
    pub steps_shift: f64,
}

/// How often each outcome came out.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct OutcomeShares {
    /// Share of trials within.
    pub within: f64,
    /// Share exceeded.
    pub exceeded: f64,
    /// Share not shown.
    pub not_shown: f64,
}

/// [`simulate_metrics`]'s result.
#[derive(Debug, Clone, PartialEq)]
pub struct MetricsSimulation {
    /// Each guardrail (`p95 latency_ms`, …) and its outcomes, in the policy's order.
    pub criteria: Vec<(String, OutcomeShares)>,
    /// Share of trials in which a blocking guardrail was exceeded (the guardrails blocked).
    pub blocked: f64,
    /// Share in which every blocking guardrail was within.
    pub all_within: f64,
}

/// A standard normal draw (Box–Muller, one of the pair).
fn normal(rng: &mut ChaCha20Rng) -> f64 {
    let u1 = 1.0 - unit(rng);
    let u2 = unit(rng);
    libm::sqrt(-2.0 * libm::log(u1)) * libm::cos(std::f64::consts::TAU * u2)
}

/// Two standard normals correlated `rho`.
fn correlated(rng: &mut ChaCha20Rng, rho: f64) -> (f64, f64) {
    let z1 = normal(rng);
    (z1, rho * z1 + libm::sqrt(1.0 - rho * rho) * normal(rng))
}

/// A Poisson draw with mean `lambda` (Knuth's product of uniforms; small means only).
fn poisson(rng: &mut ChaCha20Rng, lambda: f64) -> u32 {
    let limit = libm::exp(-lambda);
    let (mut k, mut p) = (0, unit(rng));
    while p > limit {
        k += 1;
        p *= unit(rng);
    }
    k
}

/// The guardrails of one trial's report.
fn judge(audit: &str, old: &str, new: &str, policy: &Value) -> GuardrailsReport {
    let policy = PolicyInput::from_value(policy)
        .and_then(|p| p.into_policy())
        .expect("the simulation's policy is valid");
    let inputs = MemoryInputs {
        audit: vec![("audit.jsonl", audit.as_bytes())],
        old_verdicts: ("old.jsonl", old.as_bytes()),
        new_verdicts: ("new.jsonl", new.as_bytes()),
        old_trajectories: None,
        new_trajectories: None,
    };
    let (_, report) = evaluate_in_memory(&inputs, &policy).expect("the simulation's files read");
    report.guardrails.expect("the policy has guardrails")
}

fn audit_line(out: &mut String, id: &str, template: Option<&str>) {
    let t = template.map_or(String::new(), |t| format!(r#", "template_id": "{t}""#));
    let _ = writeln!(
        out,
        r#"{{"pipeline_id": "{id}", "stage_id": "s", "stage_type": "llm", "input": "in {id}"{t}}}"#
    );
    let _ = writeln!(
        out,
        r#"{{"pipeline_id": "{id}", "verdict": "PASS", "is_complete": true{t}}}"#
    );
}

fn policy(confidence: f64, seed: u64, cluster: &str, guardrails: Value, template_regression: Option<Value>) -> Value {
    let mut p = json!({"min_samples": 0, "max_samples": null, "confidence": confidence, "cluster": cluster,
        "repeats": "last", "mode": "non_inferiority", "task_tol": 0.05, "seed": seed, "guardrails": guardrails});
    if let Some(t) = template_regression {
        p["template_regression"] = t;
    }
    p
}

/// The guardrails over `trials` seeded trials of `s` (docs/statistics.md, "Guardrails").
pub fn simulate_metrics(s: &MetricsScenario) -> MetricsSimulation {
    let mut rng = ChaCha20Rng::seed_from_u64(s.seed);
    let rails: Value = serde_json::from_str(s.guardrails).expect("the guardrails are JSON");
    let mut counts: Vec<[u32; 3]> = Vec::new();
    let mut names = Vec::new();
    let (mut blocked, mut all_within) = (0u32, 0u32);
    for trial in 0..s.trials {
        let (mut audit, mut old, mut new) = (String::new(), String::new(), String::new());
        for i in 0..s.cases {
            let id = format!("c{i:05}");
            audit_line(&mut audit, &id, None);
            let (lo, ln) = correlated(&mut rng, 0.6);
            let prompt = 400.0 * libm::exp(0.5 * normal(&mut rng));
            let (co, cn) = correlated(&mut rng, 0.6);
            let (do_, dn) = correlated(&mut rng, 0.6);
            let (ro, rn) = correlated(&mut rng, 0.6);
            let lambda = 6.0 * libm::exp(0.4 * normal(&mut rng));
            let (so, sn) = (poisson(&mut rng, lambda), poisson(&mut rng, lambda + s.steps_shift));
            let verdict = if unit(&mut rng) < 0.8 { "PASS" } else { "FAIL" };
            for (out, (z_lat, z_comp, z_cost, z_ret, steps), ratio, lat_ratio) in [
                (&mut old, (lo, co, do_, ro, so), 1.0, 1.0),
                (&mut new, (ln, cn, dn, rn, sn), s.others_ratio, s.latency_ratio),
            ] {
                let latency = lat_ratio * 800.0 * libm::exp(0.5 * z_lat);
                let completion = ratio * 150.0 * libm::exp(0.6 * z_comp);
                let cost = ratio * 0.002 * libm::exp(0.8 * z_cost);
                let retrieval = ratio * 120.0 * libm::exp(z_ret);
                let _ = writeln!(
                    out,
                    r#"{{"pipeline_id": "{id}", "verdict": "{verdict}", "latency_ms": {latency}, "usage": {{"prompt_tokens": {}, "completion_tokens": {}}}, "metrics": {{"cost_usd": {cost}, "steps": {steps}, "retrieval_ms": {retrieval}}}}}"#,
                    libm::round(ratio * prompt) as u64,
                    libm::round(completion) as u64,
                );
            }
        }
        let g = judge(
            &audit,
            &old,
            &new,
            &policy(s.confidence, s.seed + u64::from(trial), "none", rails.clone(), None),
        );
        if counts.is_empty() {
            counts = vec![[0; 3]; g.criteria.len()];
            names = g
                .criteria
                .iter()
                .map(|c| format!("{} {}", c.statistic, c.metric))
                .collect();
        }
        let mut any_exceeded = false;
        let mut every_within = true;
        for (c, n) in g.criteria.iter().zip(counts.iter_mut()) {
            let k = match c.outcome {
                GuardrailOutcome::Within => 0,
                GuardrailOutcome::Exceeded => 1,
                GuardrailOutcome::NotShown => 2,
            };
            n[k] += 1;
            any_exceeded |= c.outcome == GuardrailOutcome::Exceeded;
            every_within &= c.outcome == GuardrailOutcome::Within;
        }
        blocked += u32::from(any_exceeded);
        all_within += u32::from(every_within);
    }
    let share = |k: u32| f64::from(k) / f64::from(s.trials);
    MetricsSimulation {
        criteria: names
            .into_iter()
            .zip(counts)
            .map(|(name, [w, e, n])| {
                (
                    name,
                    OutcomeShares {
                        within: share(w),
                        exceeded: share(e),
                        not_shown: share(n),
                    },
                )
            })
            .collect(),
        blocked: share(blocked),
        all_within: share(all_within),
    }
}

/// Templates of pass/fail cases under `template_regression` (blocking, the only guardrail):
/// template `t`'s old pass rate is `0.6 + 0.35·t/(templates − 1)`, each case's own rate a
/// Beta draw around it with intra-case correlation 0.3 shared by both models (so the two
/// models' verdicts on a case are correlated); the new model's rate is the old one scaled by
/// `(rate − drop) / rate`, so that template 0's mean falls by exactly `drop_first` and every
/// other template's by `drop_others`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct TemplateScenario {
    /// Templates.
    pub templates: usize,
    /// Cases per template.
    pub cases_per_template: usize,
    /// The true drop of template 0's pass rate.
    pub drop_first: f64,
    /// The true drop of every other template's.
    pub drop_others: f64,
    /// `template_regression`'s `max_drop`.
    pub max_drop: f64,
    /// The policy's confidence.
    pub confidence: f64,
    /// Trials.
    pub trials: u32,
    /// The generator's seed.
    pub seed: u64,
}

/// [`simulate_templates`]'s result.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct TemplateSimulation {
    /// Share of trials in which `template_regression` was exceeded (it blocked).
    pub blocked: f64,
    /// Share in which template 0 was named as regressed.
    pub first_caught: f64,
    /// Share in which another template was named.
    pub others_named: f64,
}

/// `template_regression` over `trials` seeded trials of `s`.
pub fn simulate_templates(s: &TemplateScenario) -> TemplateSimulation {
    let mut rng = ChaCha20Rng::seed_from_u64(s.seed);
    let tr = json!({"max_drop": s.max_drop, "min_cases": 10, "action": "block"});
    let (mut blocked, mut first, mut others) = (0u32, 0u32, 0u32);
    for trial in 0..s.trials {
        let (mut audit, mut old, mut new) = (String::new(), String::new(), String::new());
        for t in 0..s.templates {
            let rate = 0.6 + 0.35 * t as f64 / (s.templates.max(2) - 1) as f64;
            let drop = if t == 0 { s.drop_first } else { s.drop_others };
            let template = format!("t{t:02}");
            for i in 0..s.cases_per_template {
                let id = format!("{template}-{i:04}");
                audit_line(&mut audit, &id, Some(&template));
                // A case's difficulty, shared: its rate for the old model and, scaled so that
                // the template's mean falls by exactly the drop, for the new one (subtracting
                // and clipping at 0 would make the true drop smaller than named).
                let q = super::simulate::beta_draw(&mut rng, rate, 0.3);
                let q_new = q * (rate - drop).max(0.0) / rate;
                for (out, p) in [(&mut old, q), (&mut new, q_new)] {
                    let verdict = if unit(&mut rng) < p { "PASS" } else { "FAIL" };
                    let _ = writeln!(out, r#"{{"pipeline_id": "{id}", "verdict": "{verdict}"}}"#);
                }
            }
        }
        let g = judge(
            &audit,
            &old,
            &new,
            &policy(s.confidence, u64::from(trial), "template", json!([]), Some(tr.clone())),
        );
        let t = g.template_regression.expect("template_regression is in the policy");
        blocked += u32::from(t.outcome == GuardrailOutcome::Exceeded);
        let named: Vec<&str> = t
            .templates
            .iter()
            .filter(|r| r.regressed)
            .map(|r| r.template_id.get())
            .collect();
        first += u32::from(named.contains(&"\"t00\""));
        others += u32::from(named.iter().any(|n| *n != "\"t00\""));
    }
    let share = |k: u32| f64::from(k) / f64::from(s.trials);
    TemplateSimulation {
        blocked: share(blocked),
        first_caught: share(first),
        others_named: share(others),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn metrics_trials_are_seeded_and_a_large_increase_is_exceeded() {
        let rails = r#"[{"metric": "latency_ms", "statistic": "p50", "max_increase": "10%"},
            {"metric": "metrics.steps", "statistic": "mean", "max_difference": 0.5}]"#;
        let s = MetricsScenario {
            cases: 60,
            trials: 3,
            seed: 1,
            confidence: 0.95,
            guardrails: rails,
            latency_ratio: 3.0,
            others_ratio: 1.0,
            steps_shift: 0.0,
        };
        let a = simulate_metrics(&s);
        assert_eq!(a, simulate_metrics(&s));
        assert_eq!(a.criteria.len(), 2);
        assert_eq!(a.criteria[0].0, "p50 latency_ms");
        assert_eq!(a.criteria[0].1.exceeded, 1.0, "{a:?}");
        assert_eq!(a.blocked, 1.0);
        assert_eq!(a.all_within, 0.0);
        for (_, o) in &a.criteria {
            assert!((o.within + o.exceeded + o.not_shown - 1.0).abs() < 1e-12);
        }
    }

    #[test]
    fn a_template_that_fails_everything_is_caught_and_no_other() {
        let s = TemplateScenario {
            templates: 3,
            cases_per_template: 40,
            drop_first: 1.0,
            drop_others: 0.0,
            max_drop: 0.1,
            confidence: 0.95,
            trials: 4,
            seed: 2,
        };
        let r = simulate_templates(&s);
        assert_eq!(r, simulate_templates(&s));
        assert_eq!((r.blocked, r.first_caught, r.others_named), (1.0, 1.0, 0.0), "{r:?}");
    }

    #[test]
    fn the_draws_have_their_moments() {
        let mut rng = ChaCha20Rng::seed_from_u64(3);
        let n = 20_000;
        let (mut sum, mut sq, mut prod) = (0.0, 0.0, 0.0);
        for _ in 0..n {
            let (a, b) = correlated(&mut rng, 0.6);
            sum += a;
            sq += a * a;
            prod += a * b;
        }
        let n = f64::from(n);
        assert!((sum / n).abs() < 0.03 && (sq / n - 1.0).abs() < 0.05 && (prod / n - 0.6).abs() < 0.05);
        let mean = (0..20_000).map(|_| f64::from(poisson(&mut rng, 6.0))).sum::<f64>() / 20_000.0;
        assert!((mean - 6.0).abs() < 0.1, "{mean}");
    }
}
