//! The diff of two evaluations for people and CI systems, beside the report's renderings: a
//! Markdown comment for a pull request, a standalone HTML page, and JUnit XML with one failing
//! test case per pass→fail flip of the new model. Each reads the one [`GateDiff`] (the CLI's
//! and the page's are built by the same core call), so both give the same bytes.
//!
//! [`GateDiff`]: crate::diff::GateDiff

pub mod html;
pub mod junit;
pub mod markdown;
#[cfg(test)]
mod tests;

use crate::diff::{GateDiff, GuardrailChangeKind, GuardrailSide, Interval, Model, SideSummary, Source};

/// How a side is described: a report, or a signed decision and its signers' key ids.
fn source_text(side: &SideSummary) -> String {
    match side.source {
        Source::Report => "report (not signed)".into(),
        Source::Signed => {
            let ids: Vec<String> = side.signers.iter().map(|k| short(k, 16)).collect();
            format!("signed decision, verified: key id {}", ids.join(", "))
        }
    }
}

/// The review a side was signed with, in words (`None`: neither a review nor a signed side
/// without one is worth a line: a report).
fn review_text(side: &SideSummary) -> Option<String> {
    match (&side.review, side.source) {
        (Some(pin), _) => Some(format!(
            "{} accepted, {} label wrong, {} needs fix; {} of {} regressed marked (review sha256 {})",
            pin.marks.accepted,
            pin.marks.label_wrong,
            pin.marks.needs_fix,
            pin.regressed.marked,
            pin.regressed.cases,
            short(&pin.sha256, 12)
        )),
        (None, Source::Signed) => Some("signed without a review".into()),
        (None, Source::Report) => None,
    }
}

/// What an interval's text adds when it is the one clustered by template (the one that decided,
/// where the report has it); nothing for an unclustered one, whose text is as it was.
fn clustered_note(i: &Interval) -> &'static str {
    if i.clustered {
        ", clustered by template"
    } else {
        ""
    }
}

/// The first `n` characters of a hex digest or key id, with `…` when cut.
fn short(hex: &str, n: usize) -> String {
    if hex.chars().count() <= n {
        hex.to_owned()
    } else {
        format!("{}…", hex.chars().take(n).collect::<String>())
    }
}

fn model_name(m: Model) -> &'static str {
    match m {
        Model::Old => "old",
        Model::New => "new",
    }
}

/// What the two decisions rest on: `rests on 94 of 3,000 test cases`, or `rests on 9 of 9 → 8
/// of 9 test cases` when the sides differ.
pub fn rests_on_text(d: &GateDiff) -> String {
    let (b, a) = (&d.before, &d.after);
    let test_cases = |s: &crate::diff::SideSummary| s.evidence.as_ref().map_or(s.num_cases, |e| e.test_cases);
    let g = crate::render::evidence::grouped;
    if b.rests_on == a.rests_on && test_cases(b) == test_cases(a) {
        format!("rests on {} of {} test cases", g(a.rests_on), g(test_cases(a)))
    } else {
        format!(
            "rests on {} of {} → {} of {} test cases",
            g(b.rests_on),
            g(test_cases(b)),
            g(a.rests_on),
            g(test_cases(a))
        )
    }
}

/// The headline: the decision's change, or that it stands.
fn headline(d: &GateDiff) -> String {
    let c = &d.decision;
    let rests = rests_on_text(d);
    if c.changed {
        format!("the decision changed: {} → {} ({rests})", c.before, c.after)
    } else {
        format!("the decision is unchanged: {} ({rests})", c.after)
    }
}

/// A side's evidence in one cell: `rests on 94 of 3,000; missing old 0, new 0; not run 2,906
/// (figures over the cases used)`, or what can be said without `evidence`.
pub fn evidence_text(s: &crate::diff::SideSummary) -> String {
    let g = crate::render::evidence::grouped;
    match &s.evidence {
        None => format!("rests on {} of {}", g(s.rests_on), g(s.num_cases)),
        Some(e) => {
            let mut t = format!(
                "rests on {} of {}; missing old {}, new {}",
                g(e.rests_on),
                g(e.test_cases),
                g(e.missing.old),
                g(e.missing.new)
            );
            if let Some(n) = e.not_run {
                t += &format!("; not run {}", g(n));
            }
            if e.over == "used" {
                t += " (figures over the cases used)";
            }
            t
        }
    }
}

/// A policy value as text (`none` for null, lists joined).
fn policy_text(v: &serde_json::Value) -> String {
    match v {
        serde_json::Value::Null => "none".into(),
        serde_json::Value::String(s) => s.clone(),
        serde_json::Value::Array(items) => items
            .iter()
            .map(|i| i.as_str().map_or_else(|| i.to_string(), str::to_owned))
            .collect::<Vec<_>>()
            .join(", "),
        other => other.to_string(),
    }
}

/// A guardrail's side in a diff, e.g. `block, exceeded: +41.9% (+30.5% to +52.2%); limit
/// increase ≤ +10.0%; n 600`, or for template_regression `block, exceeded: regressed t3; limit
/// drop ≤ 0.1; 12 templates tested`; `—` when the side lacks it. `id` escapes a template id's
/// text (raw from the log).
pub fn guardrail_side(side: Option<&GuardrailSide>, id: impl Fn(&str) -> String) -> String {
    use crate::render::guardrails::change_text;
    let Some(s) = side else {
        return "—".to_owned();
    };
    let head = format!("{}, {}", s.action, s.outcome.replace('_', " "));
    if let Some(regressed) = &s.regressed {
        let list = if regressed.is_empty() {
            "no template shown to regress".to_owned()
        } else {
            let names: Vec<String> = regressed
                .iter()
                .map(|t| id(&t.text().unwrap_or_else(|| "null".into())))
                .collect();
            format!("regressed {}", names.join(", "))
        };
        return format!("{head}: {list}; limit drop ≤ {}; {} templates tested", s.limit, s.n);
    }
    let relative = s.limit_kind == "max_increase";
    let change = match (s.change, s.low, s.high) {
        (Some(x), Some(l), Some(h)) => format!(
            "{} ({} to {})",
            change_text(x, relative),
            change_text(l, relative),
            change_text(h, relative)
        ),
        (Some(x), _, _) => format!("{} (no bounded interval)", change_text(x, relative)),
        (None, _, _) => "no change measured".to_owned(),
    };
    let limit = if relative {
        format!("increase ≤ {}", change_text(s.limit, true))
    } else {
        format!("difference ≤ {}", change_text(s.limit, false))
    };
    format!("{head}: {change}; limit {limit}; n {}", s.n)
}

/// `added`, `removed`, `changed`.
fn guardrail_change(kind: GuardrailChangeKind) -> &'static str {
    match kind {
        GuardrailChangeKind::Added => "added",
        GuardrailChangeKind::Removed => "removed",
        GuardrailChangeKind::Changed => "changed",
    }
}

/// A side of a changed review mark in words: `accepted`, `label wrong`, `needs fix`, or `—`
/// where that side does not mark the case; and its note.
pub(super) fn mark_side(m: Option<&crate::review::MarkSeen>) -> (String, Option<&str>) {
    match m {
        Some(m) => (m.mark.label().to_owned(), m.note.as_deref()),
        None => ("—".to_owned(), None),
    }
}

/// How many changed review marks the Markdown and HTML list (the JSON has them all).
pub(super) const MAX_MARK_ROWS: usize = 200;
