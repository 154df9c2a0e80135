//! The report's Markdown summary, for a pull request or a CI job summary: what the page's
//! "Copy Markdown summary" shows and `deploy-gate evaluate --markdown FILE` writes, the same text.
//!
//! It reads the report through its JSON form (the page holds the JSON, the CLI writes it), so
//! both give the same bytes; numbers are written as JavaScript writes them ([`crate::json::number`]).
//! Every value that comes from an input file (template ids, file names, warnings) is escaped:
//! it can neither end a table cell or a line nor open a link, an emphasis or an HTML tag.

use super::evidence::{missing_evidence_advice, EvidenceView};
use crate::json::number::{js_round, js_string, to_fixed, to_precision};
use crate::report::GateReport;
use serde::Deserialize;
use serde_json::value::RawValue;
use serde_json::{Number, Value};
use std::borrow::Cow;
use std::fmt::Write;

/// A report JSON the summary cannot be written from.
#[derive(Debug, thiserror::Error)]
#[error("not a deploy-gate report: {0}")]
pub struct ReportJsonError(#[from] serde_json::Error);

#[derive(Deserialize)]
struct Report<'a> {
    #[serde(borrow)]
    tool: Tool<'a>,
    policy: Policy<'a>,
    #[serde(borrow)]
    inputs: Vec<Input<'a>>,
    test_set: TestSet,
    verdicts: Sides,
    /// Present only when a verdict file carries cost fields.
    #[serde(default)]
    cost: Option<super::cost::CostPair>,
    decision: Decision<'a>,
    /// Present when a case lacks a verdict or the decision is sequential (see
    /// [`super::evidence`]).
    #[serde(default)]
    evidence: Option<Value>,
    /// Present only under `sequential: true`.
    #[serde(default)]
    sequential: Option<serde_json::Value>,
    /// Present only when the policy has guardrails.
    #[serde(default)]
    guardrails: Option<super::guardrails::GuardrailsView>,
    stats: Stats,
    cases: Vec<Case<'a>>,
    #[serde(borrow)]
    templates: Vec<Template<'a>>,
    #[serde(borrow)]
    warnings: Vec<Cow<'a, str>>,
}

#[derive(Deserialize)]
struct Tool<'a> {
    #[serde(borrow)]
    name: Cow<'a, str>,
    #[serde(borrow)]
    version: Cow<'a, str>,
}

#[derive(Deserialize)]
struct Policy<'a> {
    min_samples: Number,
    max_samples: Option<Number>,
    seed: Number,
    #[serde(borrow)]
    on_insufficient: Cow<'a, str>,
    #[serde(borrow)]
    mode: Cow<'a, str>,
    /// Absent in a report made before it existed.
    #[serde(borrow, default)]
    cluster: Option<Cow<'a, str>>,
    /// Written only when the policy gives it.
    #[serde(default)]
    max_missing: Option<Value>,
}

#[derive(Deserialize)]
struct Input<'a> {
    #[serde(borrow)]
    role: Cow<'a, str>,
    #[serde(borrow)]
    name: Cow<'a, str>,
    bytes: Number,
    #[serde(borrow)]
    sha256: Cow<'a, str>,
}

#[derive(Deserialize)]
struct TestSet {
    num_cases: Number,
    candidates: Number,
    sampled: bool,
}

#[derive(Deserialize)]
struct Sides {
    old: Counts,
    new: Counts,
}

#[derive(Deserialize)]
struct Counts {
    missing: Number,
    errored: Number,
    /// `repeats: mean` only.
    #[serde(default)]
    runs: Option<Number>,
    #[serde(default)]
    passes: Option<Number>,
}

#[derive(Deserialize)]
struct Decision<'a> {
    approved: bool,
    /// Absent in a report made before outcomes existed.
    #[serde(borrow, default)]
    outcome: Option<Cow<'a, str>>,
    #[serde(borrow)]
    reason: Cow<'a, str>,
    task_old: Option<f64>,
    task_new: Option<f64>,
    task_delta: Option<f64>,
    trajectory_old: Option<f64>,
    trajectory_new: Option<f64>,
    trajectory_delta: Option<f64>,
    details: Details,
}

#[derive(Deserialize)]
struct Details {
    task_regression_tol: f64,
    trajectory_regression_tol: f64,
    trajectory_checked: bool,
}

#[derive(Deserialize)]
struct Stats {
    confidence: f64,
    task: TaskStats,
}

#[derive(Deserialize)]
struct TaskStats {
    delta: Interval,
    /// `null` under `repeats: mean`.
    mcnemar: Option<McNemar>,
    sample_size: SampleSize,
    /// `null` or absent when there is no clustered interval.
    #[serde(default)]
    clustered: Option<Clustered>,
}

#[derive(Deserialize)]
struct SampleSize {
    cases_needed: Option<Number>,
    num_cases: Number,
}

#[derive(Deserialize)]
struct Clustered {
    clusters: Number,
    design_effect: Option<f64>,
    delta: Interval,
}

#[derive(Deserialize)]
struct Interval {
    low: Option<f64>,
    high: Option<f64>,
    #[serde(default)]
    method: Option<String>,
}

#[derive(Deserialize)]
struct McNemar {
    b: Number,
    c: Number,
    p_exact: f64,
}

#[derive(Deserialize)]
struct Case<'a> {
    #[serde(borrow)]
    status: Cow<'a, str>,
    #[serde(default)]
    old_missing: bool,
    #[serde(default)]
    new_missing: bool,
}

#[derive(Deserialize)]
struct Template<'a> {
    #[serde(borrow)]
    template_id: &'a RawValue,
    n: Number,
    old_pass_rate: Option<f64>,
    new_pass_rate: Option<f64>,
    delta: Option<f64>,
    /// Absent in a report made before it existed.
    #[serde(default)]
    interval: Option<Interval>,
}

/// The Markdown summary of `report`.
pub fn report_markdown(report: &GateReport) -> String {
    markdown_from_json(&serde_json::to_string(report).expect("the report serializes"))
        .expect("a report's own JSON has every field the summary reads")
}

/// The Markdown summary of a report given as its JSON text (`deploy-gate evaluate`'s output, a
/// signed decision's embedded report).
pub fn markdown_from_json(json: &str) -> Result<String, ReportJsonError> {
    markdown_reviewed(json, None)
}

/// The Markdown summary of a report's JSON text, with its review's marked cases listed (the
/// marks and notes of `review`, read against the report) when `review` is given.
pub fn markdown_reviewed(json: &str, review: Option<&crate::review::Listing>) -> Result<String, ReportJsonError> {
    let report: Report<'_> = serde_json::from_str(json)?;
    Ok(render(&report, review))
}

/// Marked cases listed in the summary; the rest are counted.
const MAX_MARKED_ROWS: usize = 100;

/// The review's section: its counts, then a row per marked case with its note.
fn review_section(s: &mut String, review: &crate::review::Listing) {
    let _ = writeln!(s, "\n**Review marks.** {}\n", cell_text(&review.sentence()));
    if review.cases.is_empty() {
        return;
    }
    s.push_str("| pipeline | status | mark | note |\n|---|---|---|---|\n");
    // The id and the note as code spans (`code_cell`).
    let code = code_cell;
    for c in review.cases.iter().take(MAX_MARKED_ROWS) {
        let note = c.mark.note.as_deref().unwrap_or("");
        let _ = writeln!(
            s,
            "| {} | {} | {} | {} |",
            code(&c.mark.pipeline_id.text),
            cell_text(&c.status.replace('_', " ")),
            c.mark.mark.label(),
            if note.is_empty() {
                String::new()
            } else {
                code(&super::html::shorten(note))
            }
        );
    }
    if review.cases.len() > MAX_MARKED_ROWS {
        let _ = writeln!(
            s,
            "\n{} more marked case(s) are in the review file.",
            review.cases.len() - MAX_MARKED_ROWS
        );
    }
}

/// A JSON number as JavaScript prints it (integers as they are: counts never reach 2^53).
fn num(n: &Number) -> String {
    if n.is_u64() || n.is_i64() {
        n.to_string()
    } else {
        js_string(n.as_f64().unwrap_or(f64::NAN))
    }
}

/// A rate as a percentage with one decimal (`—` when absent).
pub(super) fn percent(x: Option<f64>) -> String {
    match x {
        None => "—".into(),
        Some(x) => format!("{}%", to_fixed(x * 100.0, 1)),
    }
}

/// A change with its sign: `+0.0682`, `−0.0588` (a minus sign), `±0.0000`.
pub(super) fn signed(x: Option<f64>) -> String {
    match x {
        None => "—".into(),
        Some(x) => {
            let sign = if x > 0.0 {
                "+"
            } else if x < 0.0 {
                "−"
            } else {
                "±"
            };
            format!("{sign}{}", to_fixed(x.abs(), 4))
        }
    }
}

/// An interval's method as the summary names it.
fn method_name(method: Option<&str>) -> &'static str {
    match method {
        Some("paired_t") => "paired t",
        Some("cluster_robust_t") => "cluster-robust t",
        _ => "Newcombe",
    }
}

/// A number from the decision written as it is (`null` when absent, as the page always wrote it).
fn plain(x: Option<f64>) -> String {
    x.map_or_else(|| "null".into(), js_string)
}

/// JavaScript's `\s`: the characters a run of which becomes one space.
fn js_space(c: char) -> bool {
    matches!(
        c,
        '\t' | '\n' | '\u{b}' | '\u{c}' | '\r' | ' ' | '\u{a0}' | '\u{1680}' | '\u{2000}'
            ..='\u{200a}' | '\u{2028}' | '\u{2029}' | '\u{202f}' | '\u{205f}' | '\u{3000}' | '\u{feff}'
    )
}

/// `text` on one line with every character in `special` backslash-escaped.
pub(super) fn escape_with(text: &str, special: &[char]) -> String {
    let mut out = String::with_capacity(text.len() + 8);
    let mut in_space = false;
    for c in text.chars() {
        if js_space(c) {
            if !in_space {
                out.push(' ');
            }
            in_space = true;
            continue;
        }
        in_space = false;
        if c.is_control() {
            // (An escape sequence would reach a terminal that prints the file.)
            let _ = write!(out, "\\u{{{:x}}}", c as u32);
            continue;
        }
        if special.contains(&c) {
            out.push('\\');
        }
        out.push(c);
    }
    out
}

/// The characters escaped in text and table cells: those that end a cell (`|`), start code,
/// emphasis, strikethrough, links, HTML tags and autolinks, or an entity (`&`), and the
/// backslash itself.
pub(super) const TEXT_SPECIAL: &[char] = &['|', '\\', '`', '*', '_', '<', '>', '[', ']', '&', '~'];

/// A value from a file in running text or a table cell.
pub(super) fn cell_text(text: &str) -> String {
    escape_with(text, TEXT_SPECIAL)
}

/// A file name for a code span, escaped as the page has always escaped it ([`code_span`] keeps
/// a backtick in it from ending the span).
pub(super) fn code_text(text: &str) -> String {
    escape_with(text, &['|', '\\', '`', '*', '_', '<', '>', '[', ']'])
}

/// A value the core writes (a role, a digest, the tool's name): the page wrote these as they
/// are, and so does this (none has these characters), but a report JSON from elsewhere cannot
/// use one to open a tag or end a cell. (`_` is left alone: inside a word it is no emphasis.)
pub(super) fn fixed_text(text: &str) -> String {
    escape_with(text, &['|', '\\', '`', '*', '<', '>', '[', ']', '&', '~'])
}

/// A value from a file as a code span in a table cell: nothing in it is markup, and nothing
/// becomes a link (GitHub links bare URLs, `www.` names, e-mail addresses and @mentions in
/// text, not in code); only `|`, which would end the cell, is escaped (GitHub drops that
/// backslash).
pub(super) fn code_cell(text: &str) -> String {
    code_span(&escape_with(text, &['|']))
}

/// `text` as one code span: between single backticks as the page wrote it, or, if it holds a
/// backtick, between a longer run of them so that it cannot end the span early.
pub(super) fn code_span(text: &str) -> String {
    let text = escape_with(text, &[]);
    let mut longest = 0;
    let mut run = 0;
    for c in text.chars() {
        run = if c == '`' { run + 1 } else { 0 };
        longest = longest.max(run);
    }
    if longest == 0 {
        return format!("`{text}`");
    }
    let fence = "`".repeat(longest + 1);
    format!("{fence} {text} {fence}")
}

/// A template id (any JSON value): a string as it is, anything else as compact JSON in the
/// page's key order, `—` for null.
fn template_cell(raw: &RawValue) -> String {
    match serde_json::from_str::<Value>(raw.get()) {
        Ok(Value::Null) => "—".into(),
        Ok(Value::String(s)) => cell_text(&s),
        Ok(v) => {
            let mut out = String::new();
            js_stringify(&v, &mut out);
            cell_text(&out)
        }
        Err(_) => cell_text(raw.get()),
    }
}

/// Whether `key` is an array index, which JavaScript objects list first, in numeric order.
fn array_index(key: &str) -> Option<u32> {
    let canonical = key == "0" || (!key.starts_with('0') && !key.is_empty() && key.bytes().all(|b| b.is_ascii_digit()));
    if !canonical {
        return None;
    }
    key.parse::<u32>().ok().filter(|n| *n != u32::MAX)
}

/// `JSON.stringify(JSON.parse(text))`, as the page computed it: numbers as JavaScript doubles,
/// object keys in JavaScript's order.
fn js_stringify(v: &Value, out: &mut String) {
    match v {
        Value::Null => out.push_str("null"),
        Value::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
        Value::Number(n) => {
            let x = n.as_f64().unwrap_or(f64::NAN);
            out.push_str(&if x.is_finite() { js_string(x) } else { "null".into() });
        }
        Value::String(s) => out.push_str(&serde_json::to_string(s).expect("a string serializes")),
        Value::Array(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                js_stringify(item, out);
            }
            out.push(']');
        }
        Value::Object(map) => {
            let mut keys: Vec<(Option<u32>, usize, &String, &Value)> = map
                .iter()
                .enumerate()
                .map(|(i, (k, v))| (array_index(k), i, k, v))
                .collect();
            keys.sort_by_key(|(index, i, _, _)| match index {
                Some(n) => (0, *n as usize),
                None => (1, *i),
            });
            out.push('{');
            for (j, (_, _, k, v)) in keys.iter().enumerate() {
                if j > 0 {
                    out.push(',');
                }
                out.push_str(&serde_json::to_string(k).expect("a key serializes"));
                out.push(':');
                js_stringify(v, out);
            }
            out.push('}');
        }
    }
}

fn render(r: &Report<'_>, review: Option<&crate::review::Listing>) -> String {
    let d = &r.decision;
    let mut s = String::new();
    // (Writing to a String cannot fail.)
    let line = |s: &mut String, text: &str| {
        s.push_str(text);
        s.push('\n');
    };
    let inconclusive = d.outcome.as_deref() == Some("inconclusive");
    let ev = EvidenceView::new(
        r.evidence.as_ref(),
        r.test_set.num_cases.as_u64().unwrap_or(0),
        r.cases.iter().map(|c| (c.old_missing, c.new_missing)),
    );
    // A decision taken on missing evidence is settled by answering the cases, not by more.
    let advice = missing_evidence_advice(&d.reason);
    // A sequential decision that stopped at its budget is continued, not settled by a count.
    let continuation = r.sequential.as_ref().and_then(super::sequential::continuation);
    let title = if d.approved {
        "## deploy-gate: ✅ approved — deploy the new model".to_owned()
    } else if inconclusive && advice.is_some() {
        "## deploy-gate: ⚠️ inconclusive — keep the old model; too many test cases lack a verdict".to_owned()
    } else if inconclusive && continuation.is_some() {
        format!(
            "## deploy-gate: ⚠️ inconclusive — keep the old model; {}",
            super::sequential::TITLE_TAIL
        )
    } else if inconclusive {
        "## deploy-gate: ⚠️ inconclusive — keep the old model; more cases would settle it".to_owned()
    } else {
        "## deploy-gate: ⛔ blocked — keep the old model".to_owned()
    };
    line(&mut s, &format!("{title} ({})", ev.rests_on_text()));
    line(&mut s, "");
    line(&mut s, &format!("**Reason:** {}", code_span(&d.reason)));
    if let Some(a) = advice {
        line(&mut s, "");
        line(&mut s, &format!("**{a}**"));
    }
    if let Some(over) = ev.over() {
        line(&mut s, "");
        line(
            &mut s,
            &format!("Every figure below is {over} by the sequential rule (the units it used when it stopped)."),
        );
    }
    line(&mut s, "");
    line(&mut s, "| | old | new | Δ | tolerance |");
    line(&mut s, "|---|---|---|---|---|");
    line(
        &mut s,
        &format!(
            "| task pass rate | {} | {} | {} | {} |",
            percent(d.task_old),
            percent(d.task_new),
            signed(d.task_delta),
            js_string(d.details.task_regression_tol)
        ),
    );
    if d.details.trajectory_checked {
        line(
            &mut s,
            &format!(
                "| trajectory score | {} | {} | {} | {} |",
                plain(d.trajectory_old),
                plain(d.trajectory_new),
                signed(d.trajectory_delta),
                js_string(d.details.trajectory_regression_tol)
            ),
        );
    } else {
        line(&mut s, "| trajectory score | — | — | not checked | — |");
    }
    let st = &r.stats.task;
    line(&mut s, "");
    let mcnemar = match &st.mcnemar {
        Some(m) => format!(
            "McNemar b = {}, c = {}, p = {}",
            num(&m.b),
            num(&m.c),
            to_precision(m.p_exact, 3)
        ),
        None => "no McNemar test (several verdicts a case)".to_owned(),
    };
    let descriptive = if ev.used {
        format!(" ({})", super::evidence::DESCRIPTIVE)
    } else {
        String::new()
    };
    line(
        &mut s,
        &format!(
            "Rule: {}. {}% interval for the change in pass rate: {} to {} ({}); {mcnemar}{descriptive}.",
            code_span(&r.policy.mode),
            js_string(js_round(r.stats.confidence * 100.0)),
            signed(st.delta.low),
            signed(st.delta.high),
            method_name(st.delta.method.as_deref()),
        ),
    );
    let uses = if r.policy.mode == "non_inferiority" && !ev.used {
        "; the rule uses this interval"
    } else {
        ""
    };
    let has_cases = r.test_set.num_cases.as_u64() != Some(0);
    match (&st.clustered, r.policy.cluster.as_deref()) {
        (Some(c), _) => {
            line(&mut s, "");
            line(
                &mut s,
                &format!(
                    "Clustered by template ({} clusters, design effect {}): {} to {} (cluster-robust t){uses}.",
                    num(&c.clusters),
                    c.design_effect.map_or_else(|| "—".into(), |x| to_fixed(x, 2)),
                    signed(c.delta.low),
                    signed(c.delta.high)
                ),
            );
        }
        (None, Some("template")) if has_cases => {
            line(&mut s, "");
            line(
                &mut s,
                "Clustered by template: every case has the same template (one cluster), so there is no clustered interval.",
            );
        }
        _ => {}
    }
    if let Some(q) = r.sequential.as_ref().and_then(super::sequential::sentence) {
        line(&mut s, "");
        line(&mut s, &format!("{q}."));
        if let Some(m) = r.sequential.as_ref().and_then(super::evidence::min_units_text) {
            line(&mut s, "");
            line(&mut s, &format!("Fewest units: {m}."));
        }
        for w in super::evidence::sequential_warnings(&r.warnings) {
            line(&mut s, "");
            line(&mut s, &format!("⚠️ {}", cell_text(w)));
        }
    }
    if advice.is_some() {
        // (Said under the reason.)
    } else if let (true, Some(c)) = (inconclusive, &continuation) {
        line(&mut s, "");
        line(&mut s, &format!("**{c}**"));
    } else if inconclusive {
        line(&mut s, "");
        let needed = match &st.sample_size.cases_needed {
            Some(n) => format!(
                "About **{}** cases would settle it (at the observed discordance; this test set has {}).",
                num(n),
                num(&st.sample_size.num_cases)
            ),
            None => "With a tolerance of 0 no number of cases shows non-inferiority.".to_owned(),
        };
        line(&mut s, &needed);
    }
    if let Some(g) = &r.guardrails {
        guardrails(&mut s, g);
    }
    line(&mut s, "");
    let count = |status: &str| r.cases.iter().filter(|c| c.status == status).count();
    let (o, n) = (&r.verdicts.old, &r.verdicts.new);
    let sampled = if r.test_set.sampled {
        format!(", sampled with seed {}", num(&r.policy.seed))
    } else {
        String::new()
    };
    let over = ev.over().map_or_else(String::new, |o| format!(" {o}"));
    line(
        &mut s,
        &format!(
            "Test set: **{}** cases ({} candidates{sampled}). Regressed {}, improved {}{over}. Missing verdicts: old {}, new {}; errored: old {}, new {}.",
            num(&r.test_set.num_cases),
            num(&r.test_set.candidates),
            count("regressed"),
            count("improved"),
            num(&o.missing),
            num(&n.missing),
            num(&o.errored),
            num(&n.errored)
        ),
    );
    if let Some(n) = ev.not_run_text() {
        line(&mut s, &format!("Not run: {n}."));
    }
    if let (Some(o), Some(n)) = (&o.runs, &n.runs) {
        line(
            &mut s,
            &format!(
                "Every verdict of a case counts (`repeats: mean`): old {} verdicts ({} pass), new {} ({} pass).",
                num(o),
                r.verdicts.old.passes.as_ref().map_or_else(|| "—".into(), num),
                num(n),
                r.verdicts.new.passes.as_ref().map_or_else(|| "—".into(), num)
            ),
        );
    }
    if !r.templates.is_empty() {
        // Reports made before the templates' intervals existed keep their table.
        let intervals = r.templates.iter().any(|t| t.interval.is_some());
        line(&mut s, "");
        if let Some(over) = ev.over() {
            line(&mut s, &format!("Per template, {over}:"));
            line(&mut s, "");
        }
        if intervals {
            line(&mut s, "| template | n | old | new | Δ | interval |");
            line(&mut s, "|---|---|---|---|---|---|");
        } else {
            line(&mut s, "| template | n | old | new | Δ |");
            line(&mut s, "|---|---|---|---|---|");
        }
        for t in &r.templates {
            let interval = match (&t.interval, intervals) {
                (Some(i), _) => format!(" {} to {} |", signed(i.low), signed(i.high)),
                (None, true) => " — |".to_owned(),
                (None, false) => String::new(),
            };
            let _ = writeln!(
                s,
                "| {} | {} | {} | {} | {} |{interval}",
                template_cell(t.template_id),
                num(&t.n),
                percent(t.old_pass_rate),
                percent(t.new_pass_rate),
                signed(t.delta)
            );
        }
    }
    if let Some(cost) = &r.cost {
        line(&mut s, "");
        let _ = writeln!(s, "| {} | old | new |", super::cost::CAPTION);
        line(&mut s, "|---|---|---|");
        for (label, old, new) in super::cost::rows(cost) {
            let _ = writeln!(s, "| {label} | {} | {} |", cell_text(&old), cell_text(&new));
        }
    }
    if !r.warnings.is_empty() {
        line(&mut s, "");
        line(&mut s, "<details><summary>Warnings</summary>");
        line(&mut s, "");
        for w in &r.warnings {
            let _ = writeln!(s, "- {}", cell_text(w));
        }
        line(&mut s, "");
        line(&mut s, "</details>");
    }
    if let Some(review) = review {
        review_section(&mut s, review);
    }
    line(&mut s, "");
    line(&mut s, "Inputs:");
    for f in &r.inputs {
        let _ = writeln!(
            s,
            "- {}: {} ({} bytes, sha256 {})",
            fixed_text(&f.role),
            code_span(&code_text(&f.name)),
            num(&f.bytes),
            code_span(&f.sha256)
        );
    }
    line(&mut s, "");
    let max = r.policy.max_samples.as_ref().map_or_else(|| "none".into(), num);
    let max_missing = r.policy.max_missing.as_ref().map_or_else(String::new, |m| match m {
        Value::Number(n) => format!(", max_missing {}", num(n)),
        other => format!(", max_missing {}", cell_text(&other.to_string())),
    });
    let _ = writeln!(
        s,
        "<sub>{} {}, policy: min_samples {}, max_samples {max}, seed {}, on_insufficient {}{max_missing}</sub>",
        fixed_text(&r.tool.name),
        fixed_text(&r.tool.version),
        num(&r.policy.min_samples),
        num(&r.policy.seed),
        fixed_text(&r.policy.on_insufficient)
    );
    s
}

/// The guardrails: the rule, then a table per group (blocking, advisory), the failing ones
/// first; every name and template id escaped.
fn guardrails(s: &mut String, g: &super::guardrails::GuardrailsView) {
    let _ = write!(s, "\n**Guardrails.** {}\n", cell_text(&g.rule()));
    for (group, rows) in g.groups() {
        let blocking = group == "Blocking";
        let bound = if blocking {
            format!(" {} lower bound |", g.adjusted_level())
        } else {
            String::new()
        };
        let _ = write!(
            s,
            "\n| {} guardrail | old | new | change ({} interval) |{bound} limit | n | outcome |\n|---|---|---|---|{}---|---|---|\n",
            group.to_lowercase(),
            g.level(),
            if blocking { "---|" } else { "" }
        );
        for r in rows {
            let mut change = cell_text(&r.change);
            if !r.regressed.is_empty() {
                let list: Vec<String> = r.regressed.iter().map(|t| cell_text(&t.text(&t.id))).collect();
                let _ = write!(change, ": {}", list.join(", "));
            }
            let icon = match (r.outcome.as_str(), blocking) {
                ("within", _) => "✅",
                ("exceeded", true) => "⛔",
                _ => "⚠️",
            };
            let bound = if blocking {
                format!(" {} |", r.exceeded_low.as_deref().map_or("—".into(), cell_text))
            } else {
                String::new()
            };
            let _ = writeln!(
                s,
                "| {} | {} | {} | {change} |{bound} {} | {} | {icon} {} |",
                cell_text(&r.name),
                cell_text(&r.old),
                cell_text(&r.new),
                cell_text(&r.limit),
                cell_text(&r.n),
                cell_text(&r.outcome_text())
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::render::testing::report;
    use serde_json::json;

    /// The template table's data rows.
    fn template_rows(md: &str) -> Vec<&str> {
        let start = md.find("| template | n | old | new | Δ |").expect("a template table");
        md[start..].lines().skip(2).take_while(|l| l.starts_with('|')).collect()
    }

    /// The cells of a table row, split as GFM splits them: at each `|` not after a backslash.
    fn cells(row: &str) -> Vec<String> {
        let row = row.trim_end();
        let mut out = vec![String::new()];
        let mut escaped = false;
        for c in row.chars() {
            if c == '|' && !escaped {
                out.push(String::new());
            } else {
                out.last_mut().unwrap().push(c);
            }
            escaped = c == '\\' && !escaped;
        }
        out[1..out.len() - 1].iter().map(|c| c.trim().to_owned()).collect()
    }

    #[test]
    fn hostile_template_ids_stay_in_their_cell_and_are_shown_escaped() {
        let ids = [
            json!("a|b||c"),
            json!("*bold* _u_ `code` ~~s~~"),
            json!("two\nlines\r\nand\u{2028}more"),
            json!("<img src=x onerror=alert(1)>"),
            json!("</details><script>alert(1)</script>"),
            json!("&lt;b&gt;"),
            json!("[x](javascript:alert(1))"),
            json!("ends with a backslash \\"),
            json!("\u{1b}[31mred\u{7}"),
        ];
        let r = report(&ids, &[Some("PASS"); 9]);
        let md = report_markdown(&r);
        let rows = template_rows(&md);
        assert_eq!(rows.len(), ids.len());
        let shown: Vec<String> = rows.iter().map(|r| cells(r)[0].clone()).collect();
        for row in &rows {
            assert_eq!(cells(row).len(), 6, "{row}");
        }
        let expected = [
            r"a\|b\|\|c",
            r"\*bold\* \_u\_ \`code\` \~\~s\~\~",
            "two lines and more",
            r"\<img src=x onerror=alert(1)\>",
            r"\</details\>\<script\>alert(1)\</script\>",
            r"\&lt;b\&gt;",
            r"\[x\](javascript:alert(1))",
            r"ends with a backslash \\",
            r"\u{1b}\[31mred\u{7}",
        ];
        assert_eq!(shown, expected);
        // No raw tag from a value: every `<` in the output is one the summary itself writes.
        let own = ["<details>", "<summary>", "</summary>", "</details>", "<sub>", "</sub>"];
        let mut rest = md.clone();
        for tag in own {
            rest = rest.replace(tag, "");
        }
        assert!(
            rest.match_indices('<').all(|(i, _)| rest[..i].ends_with('\\')),
            "{rest}"
        );
    }

    #[test]
    fn non_string_template_ids_as_the_page_wrote_them() {
        let ids = [
            json!({"2": 1, "1": [1.0, "x"], "b": null}),
            json!(12345678901234567890u64),
            json!(null),
            json!(1.0),
        ];
        let md = report_markdown(&report(&ids, &[Some("PASS"); 4]));
        let shown: Vec<String> = template_rows(&md).iter().map(|r| cells(r)[0].clone()).collect();
        // What `cell(JSON.parse(id))` gave in the page: keys in JavaScript's order, doubles.
        assert_eq!(
            shown,
            [r#"{"1":\[1,"x"\],"2":1,"b":null}"#, "12345678901234567000", "—", "1"]
        );
    }

    #[test]
    fn a_file_name_with_a_backtick_stays_in_its_code_span() {
        assert_eq!(code_span(&code_text("a`b")), r"`` a\`b ``");
        assert_eq!(code_span(&code_text("old_verdicts.jsonl")), r"`old\_verdicts.jsonl`");
        assert_eq!(code_span("x``y\nz"), "``` x``y z ```");
    }

    #[test]
    fn the_same_text_from_the_report_and_from_its_json() {
        let r = report(&[json!("t1"), json!("t2")], &[Some("FAIL"), None]);
        let md = report_markdown(&r);
        assert_eq!(markdown_from_json(&r.to_json()).unwrap(), md);
        assert_eq!(report_markdown(&r), md);
        assert!(md.starts_with("## deploy-gate: ⛔ blocked — keep the old model (rests on 1 of 2 test cases)\n"));
        assert!(md.contains("Regressed 2, improved 0. Missing verdicts: old 0, new 1; errored: old 0, new 0."));
        assert!(md.ends_with("</sub>\n"));
    }

    #[test]
    fn guardrails_beside_the_decision_failing_first_hostile_ids_escaped() {
        use crate::render::testing::{guarded_report, HOSTILE_TEMPLATE};
        let r = guarded_report();
        let md = report_markdown(&r);
        assert_eq!(markdown_from_json(&r.to_json()).unwrap(), md);
        let at = |text: &str| md.find(text).unwrap_or_else(|| panic!("{text} in {md}"));
        // After the evidence, before the test set.
        assert!(at("Rule: ") < at("**Guardrails.**") && at("**Guardrails.**") < at("Test set: "));
        let table = |head: &str| -> Vec<Vec<String>> {
            md[at(head)..]
                .lines()
                .skip(2)
                .take_while(|l| l.starts_with('|'))
                .map(cells)
                .collect()
        };
        let blocking = table("| blocking guardrail |");
        let names: Vec<&str> = blocking.iter().map(|r| r[0].as_str()).collect();
        assert_eq!(
            names,
            [r"p95 latency\_ms", r"template\_regression", r"mean total\_tokens"]
        );
        for row in &blocking {
            assert_eq!(row.len(), 8, "{row:?}");
        }
        let g = r.guardrails.as_ref().unwrap();
        let latency = &g.criteria[0];
        assert_eq!(blocking[0][1], super::super::guardrails::value(latency.old));
        assert!(
            blocking[0][3].starts_with('+') && blocking[0][3].contains(" to "),
            "{:?}",
            blocking[0]
        );
        assert_eq!(blocking[0][5], "increase ≤ +10.0%");
        assert_eq!(blocking[0][6], "160");
        assert_eq!(blocking[0][7], "⛔ exceeded");
        assert_eq!(blocking[2][7], "✅ within");
        // The regressed template is named, escaped (one line, no tag, no raw control).
        assert_eq!(
            blocking[1][3],
            r#"1 template shown to regress: \</td\>\<script\>alert("t")\</script\>\u{1b} 100.0% → 0.0% (n 40, adjusted p 0)"#
        );
        assert_eq!(blocking[1][6], "4 of 4 templates");
        assert!(!md.contains(HOSTILE_TEMPLATE));
        let advisory = table("| advisory guardrail |");
        assert_eq!(advisory.len(), 1);
        assert_eq!(advisory[0][0], r"mean metrics.steps");
        assert_eq!(advisory[0][5], "150 (10 excluded)");
        assert_eq!(advisory[0][6], "⚠️ exceeded");
        // A report without guardrails has no such section.
        let plain = report_markdown(&report(&[json!("t1")], &[Some("PASS")]));
        assert!(!plain.contains("uardrail"), "{plain}");
    }

    #[test]
    fn a_json_that_is_no_report_is_an_error() {
        let e = markdown_from_json(r#"{"schema": "deploy-gate/report/v1"}"#).unwrap_err();
        assert!(
            e.to_string().starts_with("not a deploy-gate report: missing field"),
            "{e}"
        );
        assert!(markdown_from_json("[1,").is_err());
    }

    #[test]
    fn missing_evidence_decisions_say_what_they_rest_on() {
        use crate::render::testing::missing_evidence_json;
        let md = markdown_from_json(&missing_evidence_json(200, 4, 20).to_string()).unwrap();
        assert!(
            md.starts_with("## deploy-gate: ⛔ blocked — keep the old model (rests on 4 of 200 test cases)\n"),
            "{md}"
        );
        assert!(
            md.contains("**Reason:** `blocked: insufficient evidence (4 of 200 test cases"),
            "{md}"
        );
        assert!(
            md.contains("**Too few test cases were answered by both models to decide"),
            "{md}"
        );
        assert!(!md.contains("✅"));
        let md = markdown_from_json(&missing_evidence_json(200, 176, 20).to_string()).unwrap();
        assert!(
            md.starts_with(
                "## deploy-gate: ⚠️ inconclusive — keep the old model; too many test cases lack a verdict (rests on 176 of 200 test cases)\n"
            ),
            "{md}"
        );
        assert!(
            md.contains("more than max\\_missing 5%") || md.contains("more than max_missing 5%"),
            "{md}"
        );
        assert!(md.contains("**Too many verdicts are missing to decide"), "{md}");
        // Not "more cases would settle it": answering the missing ones would.
        assert!(!md.contains("would settle it"), "{md}");
    }

    #[test]
    fn an_early_stop_speaks_of_the_cases_used_and_not_run() {
        let v = crate::render::testing::early_stop_json(120);
        let used = v["evidence"]["rests_on"].as_u64().unwrap();
        let md = markdown_from_json(&v.to_string()).unwrap();
        assert!(
            md.starts_with(&format!(
                "## deploy-gate: ✅ approved — deploy the new model (rests on {used} of 200 test cases)\n"
            )),
            "{md}"
        );
        let over = format!("over the {used} cases used");
        assert!(
            md.contains(&format!("Every figure below is {over} by the sequential rule")),
            "{md}"
        );
        assert!(
            md.contains(&format!("improved 0 {over}. Missing verdicts: old 0, new 0;")),
            "{md}"
        );
        assert!(md.contains(&format!("Per template, {over}:")), "{md}");
        assert!(md.contains("descriptive, not the decision's evidence"), "{md}");
        assert!(
            md.contains("Not run: 80 test cases not run (the sequential rule stopped"),
            "{md}"
        );
        let min_units = v["sequential"]["min_units"].as_u64().unwrap();
        assert!(
            md.contains(&format!(
                "Fewest units: no decision is possible before {min_units} cases (of 120 available), whatever the verdicts."
            )),
            "{md}"
        );
        // The cases not run are never called missing.
        assert!(!md.contains("old 80") && !md.contains("new 80"), "{md}");
        assert!(!md.to_lowercase().contains("80 missing"), "{md}");
    }
}
