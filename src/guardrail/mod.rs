//! Guardrails: limits on what the new model costs against the old one (latency, tokens, a price
//! per token, any metric the verdict records carry) and on per-template regressions, judged
//! paired case by case beside the task rule and decided with it (docs/statistics.md,
//! "Guardrails").
//!
//! The policy's three fields ([`Guardrails`](crate::policy::Guardrails), read in
//! [`crate::policy`]) are absent from every policy that does not give
//! them, so a policy, report or signed decision made before they existed keeps its canonical
//! form, digest and decision.
//!
//! - `guardrails`: a list of [`Guardrail`](crate::policy::Guardrail)s, each a metric, a statistic, a limit on the new
//!   model against the old (`max_increase`, relative; `max_difference`, absolute) and an action
//!   (`block` counts in the decision, `advise` is only reported).
//! - `prices`: per model, the price of a million prompt and completion tokens (the `cost`
//!   metric).
//! - `template_regression`: a template whose new pass rate is shown below the old one by more
//!   than `max_drop` (one-sided, Holm across the templates with `min_cases` cases) breaks it.

mod evaluate;
#[cfg(test)]
mod tests;

pub use evaluate::{
    combine, evaluate, task_rule_open, CriterionResult, Distribution, GuardrailOutcome, GuardrailsReport,
    TemplateResult, TemplateRow, DISTRIBUTION_BINS, GUARDRAIL_METHODS,
};
