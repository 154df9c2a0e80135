//! The diff as a pull-request comment: the decision's change first, the counts, the top flips
//! and template changes as tables. Every value from a report (ids, templates, verdicts, reasons,
//! file names) is escaped as the report's Markdown escapes it: it can neither end a table cell
//! or a line nor open a link, an emphasis or an HTML tag.

use super::{guardrail_change, guardrail_side, headline, model_name, policy_text, short, source_text};
use crate::diff::{id_label, GateDiff, Interval};
use crate::render::markdown::{cell_text, code_cell, code_span, code_text, fixed_text, signed};
use std::fmt::Write;

/// The flips listed (the rest are counted, and all are in the diff JSON).
pub const TOP_FLIPS: usize = 25;
/// The templates listed.
pub const TOP_TEMPLATES: usize = 15;

fn interval_text(i: &Interval) -> String {
    match (i.low, i.high) {
        (Some(low), Some(high)) => format!(
            "{} ({}% interval {} to {}{})",
            signed(i.task_delta),
            crate::json::number::js_string(crate::json::number::js_round(i.confidence.unwrap_or(0.95) * 100.0)),
            signed(Some(low)),
            signed(Some(high)),
            super::clustered_note(i)
        ),
        _ => format!("{} (no interval)", signed(i.task_delta)),
    }
}

fn pass_text(pass: bool, verdict: &Option<String>) -> String {
    let v = verdict.as_deref().map_or_else(|| "_none_".to_owned(), cell_text);
    format!("{} {v}", if pass { "✓" } else { "✗" })
}

/// The Markdown of a diff.
pub fn diff_markdown(d: &GateDiff) -> String {
    let mut s = String::new();
    let (b, a) = (&d.before, &d.after);
    let icon = if d.decision.changed { "⚠️" } else { "✅" };
    let _ = writeln!(s, "## deploy-gate diff: {icon} {}\n", headline(d));
    s.push_str("| | before | after |\n|---|---|---|\n");
    let _ = writeln!(
        s,
        "| decision | {} | {} |",
        fixed_text(&d.decision.before),
        fixed_text(&d.decision.after)
    );
    let _ = writeln!(
        s,
        "| reason | {} | {} |",
        cell_text(&b.decision.reason),
        cell_text(&a.decision.reason)
    );
    let _ = writeln!(
        s,
        "| source | {} | {} |",
        fixed_text(&source_text(b)),
        fixed_text(&source_text(a))
    );
    // The review row only when a side was signed with one (a diff without reviews is as it was).
    if b.review.is_some() || a.review.is_some() {
        let text = |side| super::review_text(side).unwrap_or_else(|| "—".into());
        let _ = writeln!(s, "| review | {} | {} |", cell_text(&text(b)), cell_text(&text(a)));
    }
    let _ = writeln!(s, "| test cases | {} | {} |", b.num_cases, a.num_cases);
    let _ = writeln!(
        s,
        "| evidence | {} | {} |",
        cell_text(&super::evidence_text(b)),
        cell_text(&super::evidence_text(a))
    );
    let _ = writeln!(
        s,
        "| task Δ (new − old) | {} | {} |",
        interval_text(&d.stats.before),
        interval_text(&d.stats.after)
    );
    let _ = writeln!(
        s,
        "| policy sha256 | {} | {} |",
        code_span(&short(&b.policy_digest, 12)),
        code_span(&short(&a.policy_digest, 12))
    );
    let _ = writeln!(
        s,
        "| tool | {} {} | {} {} |",
        fixed_text(&b.tool.name),
        fixed_text(&b.tool.version),
        fixed_text(&a.tool.name),
        fixed_text(&a.tool.version)
    );
    if let Some(o) = d.stats.overlap {
        let _ = writeln!(
            s,
            "\nThe two intervals for the task difference {}.",
            if o { "overlap" } else { "do not overlap" }
        );
    }

    s.push('\n');
    if d.policy.is_empty() {
        s.push_str("**Policy:** the same resolved policy.\n");
    } else {
        s.push_str("**Policy changes:**\n\n| field | before | after |\n|---|---|---|\n");
        for p in &d.policy {
            let _ = writeln!(
                s,
                "| {} | {} | {} |",
                fixed_text(&p.field),
                cell_text(&policy_text(&p.before)),
                cell_text(&policy_text(&p.after))
            );
        }
    }
    let changed: Vec<_> = d.inputs.iter().filter(|i| !i.same).collect();
    if changed.is_empty() {
        s.push_str("\n**Inputs:** the same files (by sha256).\n");
    } else {
        s.push_str("\n**Inputs that differ:**\n\n| role | before sha256 | after sha256 |\n|---|---|---|\n");
        for i in changed {
            let sha = |x: &Option<String>| {
                x.as_deref()
                    .map_or_else(|| "—".to_owned(), |h| code_span(&short(h, 12)))
            };
            let _ = writeln!(
                s,
                "| {} | {} | {} |",
                fixed_text(&i.role),
                sha(&i.before_sha256),
                sha(&i.after_sha256)
            );
        }
    }

    let c = &d.cases;
    let _ = writeln!(
        s,
        "\n**Cases:** {} in common, {} only before, {} only after.\n",
        c.common,
        c.only_before.len(),
        c.only_after.len()
    );
    s.push_str("| model | fail → pass | pass → fail | verdict text changed |\n|---|---|---|---|\n");
    for (m, k) in [("old", &c.counts.old), ("new", &c.counts.new)] {
        let _ = writeln!(
            s,
            "| {m} | {} | {} | {} |",
            k.fail_to_pass, k.pass_to_fail, k.verdict_changed
        );
    }
    if !c.flips.is_empty() {
        let shown = c.flips.len().min(TOP_FLIPS);
        let _ = writeln!(
            s,
            "\n**Flips** (pass → fail first; {shown} of {}):\n\n| pipeline | template | model | before | after |\n|---|---|---|---|---|",
            c.flips.len()
        );
        for f in &c.flips[..shown] {
            let _ = writeln!(
                s,
                "| {} | {} | {} | {} | {} |",
                cell_text(&id_label(&f.pipeline_id)),
                f.template_id.text().map_or_else(|| "—".to_owned(), |t| cell_text(&t)),
                model_name(f.model),
                pass_text(f.before_pass, &f.before_verdict),
                pass_text(f.after_pass, &f.after_verdict)
            );
        }
        if c.flips.len() > shown {
            let _ = writeln!(s, "\n…and {} more flips in the diff JSON.", c.flips.len() - shown);
        }
    }

    let moved: Vec<_> = d.templates.iter().filter(|t| t.delta_change != Some(0.0)).collect();
    if !moved.is_empty() {
        let shown = moved.len().min(TOP_TEMPLATES);
        let _ = writeln!(
            s,
            "\n**Templates** (change in new − old, worst first; {shown} of {} that changed):\n\n| template | cases before | cases after | Δ before | Δ after | change |\n|---|---|---|---|---|---|",
            moved.len()
        );
        for t in &moved[..shown] {
            let _ = writeln!(
                s,
                "| {} | {} | {} | {} | {} | {} |",
                t.template_id.text().map_or_else(|| "—".to_owned(), |t| cell_text(&t)),
                t.n_before,
                t.n_after,
                signed(t.delta_before),
                signed(t.delta_after),
                signed(t.delta_change)
            );
        }
    }
    if let Some(g) = &d.guardrails {
        if g.changed.is_empty() {
            let _ = writeln!(
                s,
                "\n**Guardrails:** the same outcome on both sides for each of the {}.",
                g.unchanged
            );
        } else {
            let _ = writeln!(
                s,
                "\n**Guardrails** ({} added, removed or with another outcome; {} the same):\n\n| guardrail | change | before | after |\n|---|---|---|---|",
                g.changed.len(),
                g.unchanged
            );
            for c in &g.changed {
                let _ = writeln!(
                    s,
                    "| {} | {} | {} | {} |",
                    cell_text(&c.criterion),
                    guardrail_change(c.change),
                    cell_text(&guardrail_side(c.before.as_ref(), str::to_owned)),
                    cell_text(&guardrail_side(c.after.as_ref(), str::to_owned))
                );
            }
        }
    }
    if let Some(changes) = &d.review_changes {
        let _ = writeln!(
            s,
            "\n**Review marks that changed** ({}{}):\n",
            changes.len(),
            if changes.len() > super::MAX_MARK_ROWS {
                format!("; the first {}", super::MAX_MARK_ROWS)
            } else {
                String::new()
            }
        );
        if !changes.is_empty() {
            s.push_str("| pipeline | before | after |\n|---|---|---|\n");
            // Ids and notes as code spans: nothing in them is markup or a link.
            let code = code_cell;
            let side = |m| {
                let (mark, note) = super::mark_side(m);
                match note {
                    Some(n) if !n.is_empty() => format!("{mark}: {}", code(&crate::render::html::shorten(n))),
                    _ => mark,
                }
            };
            for c in changes.iter().take(super::MAX_MARK_ROWS) {
                let _ = writeln!(
                    s,
                    "| {} | {} | {} |",
                    code(&c.pipeline_id.text),
                    side(c.before.as_ref()),
                    side(c.after.as_ref())
                );
            }
        }
    }
    if !d.warnings.is_empty() {
        s.push_str("\n<details><summary>Warnings</summary>\n\n");
        for w in &d.warnings {
            let _ = writeln!(s, "- {}", cell_text(w));
        }
        s.push_str("\n</details>\n");
    }
    s.push_str("\nInputs:\n");
    for (side, summary) in [("before", b), ("after", a)] {
        for f in &summary.inputs {
            let _ = writeln!(
                s,
                "- {side} {}: {} (sha256 {})",
                fixed_text(&f.role),
                code_span(&code_text(&f.name)),
                f.sha256.as_deref().map_or_else(|| "none".to_owned(), code_span)
            );
        }
    }
    let _ = writeln!(
        s,
        "\n<sub>{} {} · {}</sub>",
        fixed_text(&d.tool.name),
        fixed_text(&d.tool.version),
        fixed_text(&d.schema)
    );
    s
}
