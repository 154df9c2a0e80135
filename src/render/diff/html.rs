//! The diff as one standalone HTML file, with the HTML report's discipline: no script file, no
//! network, a Content-Security-Policy of `default-src 'none'` that allows only its one inline
//! script (the flips' filter and search) by hash, every value from a report HTML-escaped, and
//! the diff JSON embedded (each `<` written `\u003c`) so the file carries the whole diff.

use super::{guardrail_change, guardrail_side, headline, model_name, policy_text, short, source_text};
use crate::diff::{id_label, GateDiff, Interval, SideSummary};
use crate::render::html::{cell, esc, filter_script, shorten, STYLE};
use std::fmt::Write as _;

/// The id of the `<script type="application/json">` element holding the diff.
pub const EMBEDDED_ID: &str = "deploy-gate-diff";

/// At most this many rows per list (flips, templates, ids on one side only); every item is in
/// the embedded JSON.
pub const MAX_ROWS: usize = 5000;

const DIFF_STYLE: &str = r#"
.changed{border-color:#9a6700;background:#fff8c5}.changed h1{color:#9a6700}
@media (prefers-color-scheme:dark){.changed{border-color:#d29922;background:#272115}.changed h1{color:#d29922}}
tr.pass_to_fail td.flip{color:var(--bad);font-weight:600}tr.fail_to_pass td.flip{color:var(--ok);font-weight:600}
ul.ids{columns:16rem;margin:.4rem 0}ul.ids li{overflow-wrap:anywhere}th.state,td.state{white-space:nowrap}
"#;

/// The embedded diff JSON back as it was written (the `\u003c` escapes undone, nothing else).
pub fn embedded_json(html: &str) -> Option<String> {
    let open = format!("<script type=\"application/json\" id=\"{EMBEDDED_ID}\">");
    let start = html.find(&open)? + open.len();
    let end = start + html[start..].find("</script>")?;
    Some(crate::render::html::unescape_embedded(&html[start..end]))
}

fn signed(x: Option<f64>, digits: usize) -> String {
    match x {
        Some(v) if v.is_finite() => {
            let sign = if v > 0.0 {
                "+"
            } else if v < 0.0 {
                "−"
            } else {
                "±"
            };
            format!("{sign}{:.*}", digits, v.abs())
        }
        _ => "—".into(),
    }
}

fn interval(i: &Interval) -> String {
    match (i.low, i.high) {
        (Some(l), Some(h)) => format!(
            "{} <span class=\"muted\">({} to {}{}{})</span>",
            signed(i.task_delta, 4),
            signed(Some(l), 3),
            signed(Some(h), 3),
            i.confidence.map_or_else(String::new, |c| format!(
                ", {}%",
                crate::json::number::js_string(crate::json::number::js_round(c * 1000.0) / 10.0)
            )),
            super::clustered_note(i)
        ),
        _ => format!("{} <span class=\"muted\">(no interval)</span>", signed(i.task_delta, 4)),
    }
}

fn side_card(o: &mut String, title: &str, s: &SideSummary, i: &Interval) {
    let _ = write!(
        o,
        "<section class=\"card\" id=\"{}\"><h2>{title}</h2><dl class=\"kv\">",
        title.to_lowercase()
    );
    let outcome = s.decision.outcome.clone().unwrap_or_else(|| {
        if s.decision.approved {
            "approved".into()
        } else {
            "blocked".into()
        }
    });
    let mut rows: Vec<(&str, String)> = vec![
        ("decision", format!("<strong>{}</strong>", esc(&outcome))),
        ("reason", format!("<code>{}</code>", cell(&s.decision.reason))),
        ("source", esc(&source_text(s))),
        ("test cases", s.num_cases.to_string()),
        ("evidence", esc(&super::evidence_text(s))),
        ("task Δ (new − old)", interval(i)),
        ("policy sha256", format!("<code>{}</code>", esc(&s.policy_digest))),
        ("tool", format!("{} {}", esc(&s.tool.name), esc(&s.tool.version))),
    ];
    if s.review.is_some() {
        rows.insert(3, ("review", esc(&super::review_text(s).unwrap_or_default())));
    }
    for (k, v) in rows {
        let _ = write!(o, "<dt>{}</dt><dd>{v}</dd>", esc(k));
    }
    o.push_str("</dl><h3>Inputs</h3><table><tbody>");
    for f in &s.inputs {
        let _ = write!(
            o,
            "<tr><td>{}</td><td>{}</td><td><code>{}</code></td></tr>",
            esc(&f.role.replace('_', " ")),
            cell(&f.name),
            f.sha256
                .as_deref()
                .map_or_else(|| "—".to_owned(), |h| esc(&short(h, 16)))
        );
    }
    o.push_str("</tbody></table></section>\n");
}

fn verdict_cell(pass: bool, verdict: &Option<String>) -> String {
    format!(
        "<td class=\"{}\">{} {}</td>",
        if pass { "pass" } else { "fail" },
        verdict.as_deref().map_or_else(|| "<em>none</em>".to_owned(), cell),
        if pass { "✓" } else { "✗" }
    )
}

/// The diff as one standalone HTML file.
pub fn diff_html(d: &GateDiff) -> String {
    let (script, script_hash) = filter_script("flip");
    let json = d.to_json();
    let mut o = String::with_capacity(64 * 1024 + json.len() * 2);
    let cls = if d.decision.changed { "changed" } else { "approved" };
    let _ = write!(
        o,
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\"/>\n<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\"/>\n<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; style-src 'unsafe-inline'; script-src '{}'; img-src data:; base-uri 'none'; form-action 'none'\"/>\n<meta name=\"generator\" content=\"{} {}\"/>\n<link rel=\"icon\" href=\"data:,\"/>\n<title>deploy-gate diff — {}</title>\n<style>{STYLE}{DIFF_STYLE}</style>\n</head>\n<body>\n",
        script_hash,
        esc(&d.tool.name),
        esc(&d.tool.version),
        esc(&headline(d)),
    );
    let _ = writeln!(
        o,
        "<header class=\"top\"><strong>deploy-gate diff</strong><span class=\"muted\">{} {} · {}</span></header>",
        esc(&d.tool.name),
        esc(&d.tool.version),
        esc(&d.schema)
    );
    let title = headline(d);
    let mut first = title.chars();
    let title: String = first
        .next()
        .map(|c| c.to_uppercase().chain(first).collect())
        .unwrap_or_default();
    let _ = writeln!(
        o,
        "<section class=\"banner {cls}\" data-testid=\"diff-decision\" data-changed=\"{}\" data-before=\"{}\" data-after=\"{}\" role=\"status\"><h1>{}</h1><p>{} case(s) in common · {} only before · {} only after · {} flip(s)</p></section>",
        d.decision.changed,
        esc(&d.decision.before),
        esc(&d.decision.after),
        esc(&title),
        d.cases.common,
        d.cases.only_before.len(),
        d.cases.only_after.len(),
        d.cases.flips.len()
    );
    o.push_str("<div class=\"cards\">\n");
    side_card(&mut o, "Before", &d.before, &d.stats.before);
    side_card(&mut o, "After", &d.after, &d.stats.after);
    o.push_str("</div>\n");
    if let Some(overlap) = d.stats.overlap {
        let _ = writeln!(
            o,
            "<p class=\"muted\">The two intervals for the task difference {}.</p>",
            if overlap { "overlap" } else { "do not overlap" }
        );
    }

    // Policy and inputs.
    o.push_str("<section class=\"panel\" id=\"policy\"><h2>Policy</h2>");
    if d.policy.is_empty() {
        o.push_str("<p class=\"muted\">The same resolved policy.</p>");
    } else {
        o.push_str("<table><thead><tr><th scope=\"col\">field</th><th scope=\"col\">before</th><th scope=\"col\">after</th></tr></thead><tbody>");
        for p in &d.policy {
            let _ = write!(
                o,
                "<tr><th scope=\"row\" class=\"mono\">{}</th><td>{}</td><td>{}</td></tr>",
                esc(&p.field),
                cell(&policy_text(&p.before)),
                cell(&policy_text(&p.after))
            );
        }
        o.push_str("</tbody></table>");
    }
    o.push_str("<h2>Inputs</h2><table><thead><tr><th scope=\"col\">role</th><th scope=\"col\" class=\"state\">same</th><th scope=\"col\">before sha256</th><th scope=\"col\">after sha256</th></tr></thead><tbody>");
    for i in &d.inputs {
        let sha = |x: &Option<String>| {
            x.as_deref()
                .map_or_else(|| "—".to_owned(), |h| format!("<code>{}</code>", esc(h)))
        };
        let _ = write!(
            o,
            "<tr><td>{}</td><td class=\"state {}\">{}</td><td>{}</td><td>{}</td></tr>",
            esc(&i.role.replace('_', " ")),
            if i.same { "pass" } else { "fail" },
            if i.same { "same" } else { "differs" },
            sha(&i.before_sha256),
            sha(&i.after_sha256)
        );
    }
    o.push_str("</tbody></table></section>\n");

    // Counts.
    let c = &d.cases;
    let _ = write!(
        o,
        "<section class=\"panel\" id=\"counts\"><h2>Cases</h2><p>{} in common, {} only before, {} only after.</p><table class=\"two\"><thead><tr><td></td><th scope=\"col\" class=\"num\">fail → pass</th><th scope=\"col\" class=\"num\">pass → fail</th><th scope=\"col\" class=\"num\">verdict text changed</th></tr></thead><tbody>",
        c.common,
        c.only_before.len(),
        c.only_after.len()
    );
    for (m, k) in [("old model", &c.counts.old), ("new model", &c.counts.new)] {
        let _ = write!(
            o,
            "<tr><th scope=\"row\">{m}</th><td class=\"num better\">{}</td><td class=\"num worse\">{}</td><td class=\"num\">{}</td></tr>",
            k.fail_to_pass, k.pass_to_fail, k.verdict_changed
        );
    }
    o.push_str("</tbody></table></section>\n");

    render_flips(&mut o, d);
    render_templates(&mut o, d);
    render_only(&mut o, d);
    render_guardrails(&mut o, d);
    render_review_changes(&mut o, d);

    if !d.warnings.is_empty() {
        let _ = write!(
            o,
            "<section class=\"panel\" id=\"warnings\"><h2>Warnings ({})</h2><ul>",
            d.warnings.len()
        );
        for w in &d.warnings {
            let _ = write!(o, "<li>{}</li>", cell(w));
        }
        o.push_str("</ul></section>\n");
    }
    let _ = writeln!(
        o,
        "<footer>Written by {} {} (schema {}); the whole diff, every flip included, is embedded in this file as JSON (<code>script#{EMBEDDED_ID}</code>).</footer>",
        esc(&d.tool.name),
        esc(&d.tool.version),
        esc(&d.schema)
    );
    let _ = write!(o, "<script type=\"application/json\" id=\"{EMBEDDED_ID}\">");
    for (i, part) in json.split('<').enumerate() {
        if i > 0 {
            o.push_str("\\u003c");
        }
        o.push_str(part);
    }
    let _ = write!(o, "</script>\n<script>{script}</script>\n</body>\n</html>\n");
    o
}

fn render_flips(o: &mut String, d: &GateDiff) {
    let flips = &d.cases.flips;
    let listed = &flips[..flips.len().min(MAX_ROWS)];
    let count = |f: &dyn Fn(&crate::diff::Flip) -> bool| listed.iter().filter(|x| f(x)).count();
    let filters: [(&str, String, usize); 5] = [
        ("all", "All listed".into(), listed.len()),
        ("pass_to_fail", "Pass → fail".into(), count(&|f| f.is_pass_to_fail())),
        ("fail_to_pass", "Fail → pass".into(), count(&|f| !f.is_pass_to_fail())),
        (
            "old",
            "Old model".into(),
            count(&|f| f.model == crate::diff::Model::Old),
        ),
        (
            "new",
            "New model".into(),
            count(&|f| f.model == crate::diff::Model::New),
        ),
    ];
    o.push_str("<section class=\"panel\" id=\"flips-panel\"><h2>Flips</h2>");
    let mut note = format!(
        "{} of {} flip(s) listed: a common case whose pass/fail for one model differs between the two evaluations, pass → fail first.",
        listed.len(),
        flips.len()
    );
    if flips.len() > listed.len() {
        let _ = write!(
            note,
            " Only the first {MAX_ROWS} are listed; every flip is in the embedded diff JSON."
        );
    }
    let _ = write!(o, "<p class=\"muted\" data-testid=\"flips-note\">{}</p>", esc(&note));
    o.push_str("<div class=\"tools\" role=\"group\" aria-label=\"Filter flips\">");
    for (i, (name, label, n)) in filters.iter().enumerate() {
        let _ = write!(
            o,
            "<button type=\"button\" data-filter=\"{name}\" aria-pressed=\"{}\">{label} ({n})</button>",
            i == 0
        );
    }
    o.push_str("<input type=\"search\" id=\"flip-search\" placeholder=\"Search id, template, verdict…\" aria-label=\"Search flips\"/><span class=\"muted\" id=\"flips-shown\" aria-live=\"polite\"></span></div>");
    o.push_str("<table id=\"flips\"><thead><tr><th scope=\"col\">pipeline</th><th scope=\"col\">template</th><th scope=\"col\">model</th><th scope=\"col\">before</th><th scope=\"col\">after</th><th scope=\"col\">flip</th></tr></thead><tbody>");
    for f in listed {
        let kind = if f.is_pass_to_fail() {
            "pass_to_fail"
        } else {
            "fail_to_pass"
        };
        let _ = writeln!(
            o,
            "<tr class=\"{kind}\" data-tags=\"{kind} {m}\"><td class=\"mono\">{}</td><td>{}</td><td>{m}</td>{}{}<td class=\"flip\">{}</td></tr>",
            cell(&id_label(&f.pipeline_id)),
            f.template_id.text().map_or_else(|| "—".to_owned(), |t| cell(&t)),
            verdict_cell(f.before_pass, &f.before_verdict),
            verdict_cell(f.after_pass, &f.after_verdict),
            if f.is_pass_to_fail() { "pass → fail" } else { "fail → pass" },
            m = model_name(f.model),
        );
    }
    o.push_str("</tbody></table></section>\n");
}

/// The cases whose review mark or note changed (`diff --review-before/--review-after`); every
/// id and note escaped.
fn render_review_changes(o: &mut String, d: &GateDiff) {
    let Some(changes) = &d.review_changes else {
        return;
    };
    let _ = write!(
        o,
        "<section class=\"panel\" id=\"review-changes\"><h2>Review marks that changed ({})</h2>",
        changes.len()
    );
    if !changes.is_empty() {
        o.push_str("<table><thead><tr><th scope=\"col\">pipeline</th><th scope=\"col\">before</th><th scope=\"col\">after</th></tr></thead><tbody>");
        let side = |m| {
            let (mark, note) = super::mark_side(m);
            match note {
                Some(n) if !n.is_empty() => format!("{}: {}", esc(&mark), esc(&shorten(n))),
                _ => esc(&mark),
            }
        };
        for c in changes.iter().take(super::MAX_MARK_ROWS) {
            let _ = write!(
                o,
                "<tr><td class=\"mono\">{}</td><td>{}</td><td>{}</td></tr>",
                esc(&shorten(&c.pipeline_id.text)),
                side(c.before.as_ref()),
                side(c.after.as_ref())
            );
        }
        o.push_str("</tbody></table>");
        if changes.len() > super::MAX_MARK_ROWS {
            let _ = write!(
                o,
                "<p class=\"muted\">The first {} of {}; every change is in the embedded JSON.</p>",
                super::MAX_MARK_ROWS,
                changes.len()
            );
        }
    }
    o.push_str("</section>\n");
}

/// The guardrails added, removed or with another outcome (nothing when neither report has
/// guardrails); every name and template id escaped.
fn render_guardrails(o: &mut String, d: &GateDiff) {
    let Some(g) = &d.guardrails else {
        return;
    };
    o.push_str("<section class=\"panel\" id=\"guardrails\"><h2>Guardrails</h2>");
    if g.changed.is_empty() {
        let _ = writeln!(
            o,
            "<p>The same outcome on both sides for each of the {}.</p></section>",
            g.unchanged
        );
        return;
    }
    let _ = write!(
        o,
        "<p class=\"muted\">{} added, removed or with another outcome; {} the same.</p><table><thead><tr><th scope=\"col\">guardrail</th><th scope=\"col\" class=\"state\">change</th><th scope=\"col\">before</th><th scope=\"col\">after</th></tr></thead><tbody>",
        g.changed.len(),
        g.unchanged
    );
    for c in &g.changed {
        let _ = write!(
            o,
            "<tr><th scope=\"row\">{}</th><td class=\"state\">{}</td><td>{}</td><td>{}</td></tr>",
            cell(&c.criterion),
            guardrail_change(c.change),
            esc(&guardrail_side(c.before.as_ref(), shorten)),
            esc(&guardrail_side(c.after.as_ref(), shorten))
        );
    }
    o.push_str("</tbody></table></section>\n");
}

fn render_templates(o: &mut String, d: &GateDiff) {
    o.push_str("<section class=\"panel\" id=\"templates\"><h2>Templates</h2><p class=\"muted\">Per template, the report's change in pass rate (new − old) on each side, and how it moved: the worst first.</p>");
    o.push_str("<table><thead><tr><th scope=\"col\">template</th><th scope=\"col\" class=\"num\">cases before</th><th scope=\"col\" class=\"num\">cases after</th><th scope=\"col\" class=\"num\">Δ before</th><th scope=\"col\" class=\"num\">Δ after</th><th scope=\"col\" class=\"num\">change</th></tr></thead><tbody>");
    for t in d.templates.iter().take(MAX_ROWS) {
        let cls = match t.delta_change {
            Some(x) if x < 0.0 => " worse",
            Some(x) if x > 0.0 => " better",
            _ => "",
        };
        let _ = write!(
            o,
            "<tr><td>{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td><td class=\"num{cls}\">{}</td></tr>",
            t.template_id.text().map_or_else(|| "—".to_owned(), |x| cell(&x)),
            t.n_before,
            t.n_after,
            signed(t.delta_before, 4),
            signed(t.delta_after, 4),
            signed(t.delta_change, 4)
        );
    }
    o.push_str("</tbody></table>");
    if d.templates.len() > MAX_ROWS {
        let _ = write!(
            o,
            "<p class=\"muted\">The first {MAX_ROWS} of {} templates.</p>",
            d.templates.len()
        );
    }
    o.push_str("</section>\n");
}

fn render_only(o: &mut String, d: &GateDiff) {
    let c = &d.cases;
    if c.only_before.is_empty() && c.only_after.is_empty() {
        return;
    }
    o.push_str("<section class=\"panel\" id=\"only\"><h2>Cases on one side only</h2>");
    for (label, ids) in [("Only before", &c.only_before), ("Only after", &c.only_after)] {
        if ids.is_empty() {
            continue;
        }
        let _ = write!(
            o,
            "<details><summary>{label}: {}</summary><ul class=\"ids mono\">",
            ids.len()
        );
        for id in ids.iter().take(MAX_ROWS) {
            let _ = write!(o, "<li>{}</li>", cell(&id_label(id)));
        }
        o.push_str("</ul>");
        if ids.len() > MAX_ROWS {
            let _ = write!(o, "<p class=\"muted\">The first {MAX_ROWS} of {}.</p>", ids.len());
        }
        o.push_str("</details>");
    }
    o.push_str("</section>\n");
}
