//! The guardrails in a diff: each side's `guardrails` (what a report judged besides the task
//! rule) as the diff reads it, and the criteria whose outcome changed between the two sides.
//!
//! A criterion is matched by its name (`p95 latency_ms`; the second guardrail of the same
//! statistic and metric `p95 latency_ms (2)`; `template_regression`). Two reports without
//! guardrails have no `guardrails` part in their diff, so their diff is what it was before
//! guardrails existed.

use super::TemplateId;
use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;

/// A report's `guardrails`, as the diff reads it (unknown fields ignored).
#[derive(Deserialize)]
pub(super) struct GuardrailsDoc<'a> {
    criteria: Vec<CriterionDoc>,
    #[serde(borrow, default)]
    template_regression: Option<TemplateRegressionDoc<'a>>,
}

#[derive(Deserialize)]
struct CriterionDoc {
    metric: String,
    statistic: String,
    action: String,
    limit_kind: String,
    limit: f64,
    change: Option<f64>,
    low: Option<f64>,
    high: Option<f64>,
    n: u64,
    outcome: String,
}

#[derive(Deserialize)]
struct TemplateRegressionDoc<'a> {
    max_drop: f64,
    action: String,
    tested: u64,
    outcome: String,
    #[serde(borrow)]
    templates: Vec<TemplateRowDoc<'a>>,
}

#[derive(Deserialize)]
struct TemplateRowDoc<'a> {
    #[serde(borrow)]
    template_id: &'a RawValue,
    regressed: bool,
}

/// One criterion of a side, as a diff compares it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct GuardrailSide {
    /// `block` or `advise`.
    pub action: String,
    /// `within`, `exceeded` or `not_shown`.
    pub outcome: String,
    /// `max_increase`, `max_difference`, or `max_drop` for template_regression.
    pub limit_kind: String,
    /// The limit.
    pub limit: f64,
    /// The change (`new/old − 1` or `new − old`; `null` for template_regression or without a
    /// case).
    pub change: Option<f64>,
    /// Its interval's lower bound at the report's confidence.
    pub low: Option<f64>,
    /// Its upper bound.
    pub high: Option<f64>,
    /// Cases judged (templates tested, for template_regression).
    pub n: u64,
    /// The templates shown to regress (template_regression only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub regressed: Option<Vec<TemplateId>>,
}

/// A side's criteria by name, in the report's order.
pub type SideGuardrails = Vec<(String, GuardrailSide)>;

/// The criteria of a report's `guardrails`, named.
pub(super) fn side(doc: GuardrailsDoc<'_>) -> SideGuardrails {
    let mut out: SideGuardrails = Vec::new();
    for c in doc.criteria {
        let base = format!("{} {}", c.statistic, c.metric);
        let k = 1 + out
            .iter()
            .filter(|(name, _)| name == &base || name.starts_with(&format!("{base} (")))
            .count();
        let name = if k == 1 { base } else { format!("{base} ({k})") };
        out.push((
            name,
            GuardrailSide {
                action: c.action,
                outcome: c.outcome,
                limit_kind: c.limit_kind,
                limit: c.limit,
                change: c.change,
                low: c.low,
                high: c.high,
                n: c.n,
                regressed: None,
            },
        ));
    }
    if let Some(t) = doc.template_regression {
        out.push((
            "template_regression".to_owned(),
            GuardrailSide {
                action: t.action,
                outcome: t.outcome,
                limit_kind: "max_drop".to_owned(),
                limit: t.max_drop,
                change: None,
                low: None,
                high: None,
                n: t.tested,
                regressed: Some(
                    t.templates
                        .iter()
                        .filter(|r| r.regressed)
                        .map(|r| TemplateId::from_raw(r.template_id.get()))
                        .collect(),
                ),
            },
        ));
    }
    out
}

/// How a criterion changed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum GuardrailChangeKind {
    /// Only after.
    Added,
    /// Only before.
    Removed,
    /// On both sides, with another outcome (or, for template_regression, other templates
    /// shown to regress).
    Changed,
}

/// A criterion added, removed, or whose outcome changed.
#[derive(Debug, Clone, Serialize)]
pub struct GuardrailChange {
    /// Its name: `p95 latency_ms`, `template_regression`, …
    pub criterion: String,
    /// Added, removed or changed.
    pub change: GuardrailChangeKind,
    /// Before (`null`: added).
    pub before: Option<GuardrailSide>,
    /// After (`null`: removed).
    pub after: Option<GuardrailSide>,
}

/// The guardrails' part of a diff: present when either side has guardrails.
#[derive(Debug, Clone, Serialize)]
pub struct GuardrailsChange {
    /// Criteria on both sides with the same outcome.
    pub unchanged: u64,
    /// The others: the after side's order, then those removed in the before side's.
    pub changed: Vec<GuardrailChange>,
}

/// The criteria that changed between two sides; `None` when neither has guardrails.
pub(super) fn changes(before: Option<&SideGuardrails>, after: Option<&SideGuardrails>) -> Option<GuardrailsChange> {
    if before.is_none() && after.is_none() {
        return None;
    }
    let empty = Vec::new();
    let (b, a) = (before.unwrap_or(&empty), after.unwrap_or(&empty));
    let find = |side: &SideGuardrails, name: &str| side.iter().find(|(n, _)| n == name).map(|(_, s)| s.clone());
    let mut unchanged = 0;
    let mut changed = Vec::new();
    for (name, now) in a {
        match find(b, name) {
            None => changed.push(GuardrailChange {
                criterion: name.clone(),
                change: GuardrailChangeKind::Added,
                before: None,
                after: Some(now.clone()),
            }),
            Some(then) if then.outcome != now.outcome || then.regressed != now.regressed => {
                changed.push(GuardrailChange {
                    criterion: name.clone(),
                    change: GuardrailChangeKind::Changed,
                    before: Some(then),
                    after: Some(now.clone()),
                })
            }
            Some(_) => unchanged += 1,
        }
    }
    for (name, then) in b {
        if find(a, name).is_none() {
            changed.push(GuardrailChange {
                criterion: name.clone(),
                change: GuardrailChangeKind::Removed,
                before: Some(then.clone()),
                after: None,
            });
        }
    }
    Some(GuardrailsChange { unchanged, changed })
}
