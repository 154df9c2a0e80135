//! Simulations of the sequential rule beside the fixed rule, seeded (ChaCha20) so the same
//! numbers come out every run: `simulate_sequential` (paired pass/fail cases with a given share
//! of discordant pairs) and `simulate_sequential_clustered` (cases correlated within templates,
//! the template as the unit). `examples/simulate.rs` prints the table of docs/statistics.md.

use super::cluster::{Clusters, RobustMean};
use super::intervals::newcombe_paired;
use super::sequential::{template_means, SequentialState};
use super::simulate::{beta_draw, unit};
use super::Paired;
use crate::decision::{judge_interval, Outcome};
use rand_chacha::ChaCha20Rng;
use rand_core::SeedableRng;

/// How one rule did over the trials of a scenario.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RuleOutcomes {
    /// Share of trials approved.
    pub approved: f64,
    /// Share blocked.
    pub blocked: f64,
    /// Share inconclusive.
    pub inconclusive: f64,
    /// Mean units (cases, or for [`simulate_sequential_clustered`] cases of the templates used)
    /// used before the rule stopped.
    pub mean_used: f64,
}

/// Counts of one rule's results.
#[derive(Default)]
struct Tally {
    approved: u32,
    blocked: u32,
    inconclusive: u32,
    used: u64,
}

impl Tally {
    fn add(&mut self, outcome: Outcome, used: usize) {
        match outcome {
            Outcome::Approved => self.approved += 1,
            Outcome::Blocked => self.blocked += 1,
            Outcome::Inconclusive => self.inconclusive += 1,
        }
        self.used += used as u64;
    }

    fn outcomes(&self, trials: u32) -> RuleOutcomes {
        let share = |k: u32| k as f64 / trials as f64;
        RuleOutcomes {
            approved: share(self.approved),
            blocked: share(self.blocked),
            inconclusive: share(self.inconclusive),
            mean_used: self.used as f64 / trials as f64,
        }
    }
}

/// Paired pass/fail cases: the old model passes with probability `p_old`, a pair is discordant
/// with probability `discordant`, split so the mean difference new − old is `delta`
/// (`P(old only) = (discordant − delta)/2`, `P(new only) = (discordant + delta)/2`).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SequentialScenario {
    /// The old model's pass rate.
    pub p_old: f64,
    /// The share of discordant pairs.
    pub discordant: f64,
    /// The true mean difference new − old.
    pub delta: f64,
    /// The task tolerance.
    pub tolerance: f64,
    /// The level of the intervals and of the confidence sequence.
    pub confidence: f64,
    /// The most cases to use.
    pub budget: usize,
    /// Trials.
    pub trials: u32,
    /// The generator's seed.
    pub seed: u64,
}

/// [`simulate_sequential`]'s result: five rules on the same trials.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SequentialSimulation {
    /// The fixed rule (Newcombe's interval, non-inferiority) once, at the budget.
    pub fixed: RuleOutcomes,
    /// The fixed rule looked at after 200, 400, 800, 1,600 and 2,000 cases (scaled to the
    /// budget), stopping at the first look that is not inconclusive.
    pub peeking: RuleOutcomes,
    /// The fixed rule continued ten times: looks at every tenth of the budget.
    pub fixed_continued: RuleOutcomes,
    /// The sequential rule, one run at the budget.
    pub sequential: RuleOutcomes,
    /// The sequential rule continued ten times ([`SequentialState::run`] at every tenth of the
    /// budget): the same numbers as one run, by construction.
    pub sequential_continued: RuleOutcomes,
}

/// The fixed rule looked at after each of `looks` cases: the first outcome that is not
/// inconclusive, or the last look's.
fn peek(cases: &[u8], looks: &[usize], tolerance: f64, confidence: f64) -> (Outcome, usize) {
    let mut t = Paired {
        both_pass: 0,
        old_only: 0,
        new_only: 0,
        both_fail: 0,
    };
    let mut seen = 0;
    let mut last = (Outcome::Inconclusive, 0);
    for &look in looks {
        for &c in &cases[seen..look] {
            match c {
                0 => t.both_pass += 1,
                1 => t.old_only += 1,
                2 => t.new_only += 1,
                _ => t.both_fail += 1,
            }
        }
        seen = look;
        let i = newcombe_paired(&t, confidence);
        last = (judge_interval(i.low, i.high, tolerance), look);
        if last.0 != Outcome::Inconclusive {
            break;
        }
    }
    last
}

/// The sequential rule against the fixed rule, with and without peeking, over `trials`
/// seeded trials of `s` (docs/statistics.md, "Sequential decisions").
pub fn simulate_sequential(s: &SequentialScenario) -> SequentialSimulation {
    let mut rng = ChaCha20Rng::seed_from_u64(s.seed);
    let p_old_only = (s.discordant - s.delta) / 2.0;
    let p_new_only = (s.discordant + s.delta) / 2.0;
    let p_both = s.p_old - p_old_only;
    let n = s.budget;
    let peeks: Vec<usize> = [200, 400, 800, 1600, 2000].iter().map(|k| k * n / 2000).collect();
    let tenths: Vec<usize> = (1..=10).map(|k| k * n / 10).collect();
    let mut tallies: [Tally; 5] = Default::default();
    let mut cases = vec![0u8; n];
    let mut diffs = vec![0.0; n];
    for _ in 0..s.trials {
        for (c, d) in cases.iter_mut().zip(diffs.iter_mut()) {
            let u = unit(&mut rng);
            (*c, *d) = if u < p_both {
                (0, 0.0)
            } else if u < p_both + p_old_only {
                (1, -1.0)
            } else if u < p_both + p_old_only + p_new_only {
                (2, 1.0)
            } else {
                (3, 0.0)
            };
        }
        let (o, used) = peek(&cases, &[n], s.tolerance, s.confidence);
        tallies[0].add(o, used);
        let (o, used) = peek(&cases, &peeks, s.tolerance, s.confidence);
        tallies[1].add(o, used);
        let (o, used) = peek(&cases, &tenths, s.tolerance, s.confidence);
        tallies[2].add(o, used);
        let once = SequentialState::new(s.tolerance, s.confidence)
            .without_bounds()
            .run(&diffs, n);
        tallies[3].add(once.outcome, once.used);
        let mut state = SequentialState::new(s.tolerance, s.confidence).without_bounds();
        let mut step = None;
        for &budget in &tenths {
            let d = state.run(&diffs, budget);
            let done = d.outcome != Outcome::Inconclusive;
            step = Some(d);
            if done {
                break;
            }
        }
        let step = step.expect("ten steps");
        tallies[4].add(step.outcome, step.used);
    }
    let [fixed, peeking, fixed_continued, sequential, sequential_continued] = tallies.map(|t| t.outcomes(s.trials));
    SequentialSimulation {
        fixed,
        peeking,
        fixed_continued,
        sequential,
        sequential_continued,
    }
}

/// Cases correlated within templates, as in [`super::ClusterScenario`]: `cases` cases in
/// `templates` templates of equal size, each template drawing each model's pass probability
/// from a beta distribution with the model's mean (`p_old`, `p_old + delta`) and intra-cluster
/// correlation `icc`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ClusteredSequentialScenario {
    /// Test cases.
    pub cases: usize,
    /// Templates.
    pub templates: usize,
    /// Intra-cluster correlation of the outcomes.
    pub icc: f64,
    /// The old model's mean pass rate.
    pub p_old: f64,
    /// The true mean difference new − old.
    pub delta: f64,
    /// The task tolerance.
    pub tolerance: f64,
    /// The level.
    pub confidence: f64,
    /// Trials.
    pub trials: u32,
    /// The generator's seed.
    pub seed: u64,
}

/// [`simulate_sequential_clustered`]'s result.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ClusteredSequentialSimulation {
    /// The fixed rule on the cluster-robust interval of all the cases.
    pub fixed: RuleOutcomes,
    /// The sequential rule over the templates' mean differences (budget: every template);
    /// `mean_used` counts the cases of the templates used.
    pub sequential: RuleOutcomes,
}

/// The sequential rule with the template as the unit against the clustered fixed rule.
pub fn simulate_sequential_clustered(s: &ClusteredSequentialScenario) -> ClusteredSequentialSimulation {
    let mut rng = ChaCha20Rng::seed_from_u64(s.seed);
    let template_of: Vec<usize> = (0..s.cases).map(|i| i % s.templates).collect();
    let size: Vec<usize> = (0..s.templates)
        .map(|g| template_of.iter().filter(|&&t| t == g).count())
        .collect();
    let clusters = Clusters {
        of: template_of.clone(),
        count: s.templates,
    };
    let (mut fixed, mut sequential) = (Tally::default(), Tally::default());
    let mut d = vec![0.0; s.cases];
    for _ in 0..s.trials {
        let p: Vec<(f64, f64)> = (0..s.templates)
            .map(|_| {
                (
                    beta_draw(&mut rng, s.p_old, s.icc),
                    beta_draw(&mut rng, s.p_old + s.delta, s.icc),
                )
            })
            .collect();
        for (i, &g) in template_of.iter().enumerate() {
            let (old, new) = (unit(&mut rng) < p[g].0, unit(&mut rng) < p[g].1);
            d[i] = f64::from(u8::from(new)) - f64::from(u8::from(old));
        }
        let (low, high) = RobustMean::of(&d, &clusters).map_or((-1.0, 1.0), |m| m.interval(s.confidence));
        fixed.add(judge_interval(low.max(-1.0), high.min(1.0), s.tolerance), s.cases);
        let units = template_means(&d, &clusters);
        let r = SequentialState::new(s.tolerance, s.confidence)
            .without_bounds()
            .run(&units, s.templates);
        sequential.add(r.outcome, size[..r.used].iter().sum());
    }
    ClusteredSequentialSimulation {
        fixed: fixed.outcomes(s.trials),
        sequential: sequential.outcomes(s.trials),
    }
}

/// [`simulate_cluster_choice`]'s result: the same trials decided with each choice of units.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ClusterChoiceSimulation {
    /// `cluster: none`: the cases as units, in a random order (`mean_used` counts cases).
    pub none: RuleOutcomes,
    /// `cluster: template`: the templates' mean differences as units, in a random order
    /// (`mean_used` counts the cases of the templates used).
    pub template: RuleOutcomes,
}

/// The sequential rule with the case and with the template as the unit, on the same trials of
/// `s` (cases correlated within templates at `s.icc`; 0 makes them independent), budget every
/// unit: what choosing `cluster: none` or `cluster: template` costs when the other was right
/// (docs/statistics.md, "Which unit").
pub fn simulate_cluster_choice(s: &ClusteredSequentialScenario) -> ClusterChoiceSimulation {
    let mut rng = ChaCha20Rng::seed_from_u64(s.seed);
    let template_of: Vec<usize> = (0..s.cases).map(|i| i % s.templates).collect();
    let size: Vec<usize> = (0..s.templates)
        .map(|g| template_of.iter().filter(|&&t| t == g).count())
        .collect();
    let clusters = Clusters {
        of: template_of.clone(),
        count: s.templates,
    };
    let (mut none, mut template) = (Tally::default(), Tally::default());
    let mut d = vec![0.0; s.cases];
    let mut order: Vec<usize> = (0..s.cases).collect();
    let mut shuffled = vec![0.0; s.cases];
    for _ in 0..s.trials {
        let p: Vec<(f64, f64)> = (0..s.templates)
            .map(|_| {
                (
                    beta_draw(&mut rng, s.p_old, s.icc),
                    beta_draw(&mut rng, s.p_old + s.delta, s.icc),
                )
            })
            .collect();
        for (i, &g) in template_of.iter().enumerate() {
            let (old, new) = (unit(&mut rng) < p[g].0, unit(&mut rng) < p[g].1);
            d[i] = f64::from(u8::from(new)) - f64::from(u8::from(old));
        }
        // The cases in a random order (Fisher–Yates), as the seed's order takes them.
        for i in (1..s.cases).rev() {
            let j = (unit(&mut rng) * (i + 1) as f64) as usize;
            order.swap(i, j.min(i));
        }
        for (slot, &i) in shuffled.iter_mut().zip(&order) {
            *slot = d[i];
        }
        let r = SequentialState::new(s.tolerance, s.confidence)
            .without_bounds()
            .run(&shuffled, s.cases);
        none.add(r.outcome, r.used);
        // The templates are exchangeable: their index order is a random one.
        let units = template_means(&d, &clusters);
        let r = SequentialState::new(s.tolerance, s.confidence)
            .without_bounds()
            .run(&units, s.templates);
        template.add(r.outcome, size[..r.used].iter().sum());
    }
    ClusterChoiceSimulation {
        none: none.outcomes(s.trials),
        template: template.outcomes(s.trials),
    }
}
