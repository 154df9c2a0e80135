//! The standalone HTML report: one self-contained file that shows a GateReport without any wasm,
//! script file or network — the decision, the evidence (cards with intervals, inline SVG charts,
//! the per-template table, the cases with a filter and a search), data quality and warnings, the
//! policy and the input digests — with the report JSON embedded so the viewer can reopen it.
//!
//! One renderer for the CLI (`evaluate --html`) and the page (`reportHtml` in wasm): both pass
//! the report's JSON text ([`GateReport::to_json`]) through [`report_html_json`], so the same
//! report gives the same bytes. Sans-IO and deterministic: no clock, no randomness, every list
//! in the report's order.
//!
//! Safety: every value from the input files is HTML-escaped; the embedded JSON has each `<`
//! written as `\u003c`, so no value can close its `<script>` element or open a comment; and the
//! file's Content-Security-Policy allows no script but the one inline script (by its hash).

use crate::report::{GateReport, SCHEMA};
use base64::Engine as _;
use serde::Deserialize;
use serde_json::{Map, Value};
use sha2::{Digest, Sha256};
use std::collections::{BTreeMap, HashMap};
use std::fmt::Write as _;

/// The id of the `<script type="application/json">` element holding the report.
pub const EMBEDDED_ID: &str = "deploy-gate-report";

/// How many characters of a value a cell shows before "… (N more characters)".
pub const SHOWN_CHARACTERS: usize = 200;

/// At most this many cases are listed as rows (the whole list is in the embedded JSON).
pub const MAX_CASE_ROWS: usize = 5000;

/// Why a JSON text could not be rendered.
#[derive(Debug, thiserror::Error)]
pub enum HtmlError {
    /// Not JSON, or not shaped like a report.
    #[error("not a deploy-gate report: {0}")]
    Shape(#[from] serde_json::Error),
    /// A report of another schema.
    #[error("the report's schema is `{found}`, not `{SCHEMA}`")]
    Schema {
        /// The schema the report names.
        found: String,
    },
}

/// The report as one standalone HTML file.
pub fn report_html(report: &GateReport) -> String {
    report_html_json(&report.to_json()).expect("a GateReport's own JSON has the report's shape")
}

/// The HTML report of a report's JSON text (as the CLI writes it); the text is embedded as given.
pub fn report_html_json(json: &str) -> Result<String, HtmlError> {
    report_html_with(json, &Extras::default())
}

/// What the HTML report shows beside the report: the reviewer's marks, and the models' answers.
#[derive(Default)]
pub struct Extras<'a> {
    /// The review's marked cases, each with its note (a section after the cases).
    pub review: Option<&'a crate::review::Listing>,
    /// The answers of listed cases, by their place in the report's `cases` (an `answers` column;
    /// only the first [`MAX_ANSWER_ROWS`] listed cases' are shown, see [`answer_cases`]).
    pub answers: Option<&'a HashMap<usize, CaseAnswers>>,
}

/// One case's two answers as their records hold them: each the JSON text of `output` and
/// `output_truncated` (absent: no answer).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CaseAnswers {
    /// The old model's.
    pub old: Option<(String, bool)>,
    /// The new model's.
    pub new: Option<(String, bool)>,
}

/// The listed cases whose answers the HTML report shows, at most (regressed first).
pub const MAX_ANSWER_ROWS: usize = 200;

/// The characters of an answer the HTML report shows (the rest counted).
pub const ANSWER_CHARACTERS: usize = 4000;

/// The HTML report of a report's JSON text, with `extras`.
pub fn report_html_with(json: &str, extras: &Extras<'_>) -> Result<String, HtmlError> {
    let view: View = serde_json::from_str(json)?;
    if view.schema != SCHEMA {
        return Err(HtmlError::Schema { found: view.schema });
    }
    Ok(render(&view, json, extras))
}

/// The cases (their places in the report's `cases`) whose answers the HTML report of `json`
/// shows when given them: the first [`MAX_ANSWER_ROWS`] it lists. A caller reads only these.
pub fn answer_cases(json: &str) -> Result<Vec<usize>, HtmlError> {
    let view: View = serde_json::from_str(json)?;
    let mut listed = listed_cases(&view);
    listed.truncate(MAX_ANSWER_ROWS);
    Ok(listed.into_iter().map(|(i, _)| i).collect())
}

/// The embedded JSON text back as it was given (undoes the `\u003c` escapes, nothing else).
pub fn embedded_json(html: &str) -> Option<String> {
    let open = format!("<script type=\"application/json\" id=\"{EMBEDDED_ID}\">");
    let start = html.find(&open)? + open.len();
    let end = start + html[start..].find("</script>")?;
    Some(unescape_embedded(&html[start..end]))
}

/// `\u003c` → `<` where it is an escape (not the text after an escaped backslash).
pub(super) fn unescape_embedded(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(i) = rest.find('\\') {
        out.push_str(&rest[..i]);
        let tail = &rest[i..];
        if let Some(after) = tail.strip_prefix("\\u003c") {
            out.push('<');
            rest = after;
        } else {
            // Any other escape is two characters (`\\`, `\"`, `\n`, `\uXXXX`'s first two).
            let next = tail[1..].chars().next().map_or(0, char::len_utf8);
            out.push_str(&tail[..1 + next]);
            rest = &tail[1 + next..];
        }
    }
    out.push_str(rest);
    out
}

// ---- The parts of the report the page shows (unknown fields are ignored) ----

/// A number that may be `null` (serde writes a non-finite float as `null`).
#[derive(Deserialize, Clone, Copy)]
#[serde(from = "Option<f64>")]
struct N(f64);

impl From<Option<f64>> for N {
    fn from(v: Option<f64>) -> Self {
        N(v.unwrap_or(f64::NAN))
    }
}

#[derive(Deserialize)]
struct View {
    schema: String,
    tool: ToolV,
    policy: Map<String, Value>,
    inputs: Vec<InputV>,
    audit: AuditV,
    test_set: TestSetV,
    verdicts: Pair<CountsV>,
    /// Present only when a verdict file carries cost fields.
    #[serde(default)]
    cost: Option<super::cost::CostPair>,
    trajectories: Pair<Option<TrajV>>,
    decision: DecisionV,
    /// Present when a case lacks a verdict or the decision is sequential (see
    /// [`super::evidence`]).
    #[serde(default)]
    evidence: Option<Value>,
    /// Present only under `sequential: true`.
    #[serde(default)]
    sequential: Option<Value>,
    /// Present only when the policy has guardrails.
    #[serde(default)]
    guardrails: Option<super::guardrails::GuardrailsView>,
    stats: StatsV,
    cases: Vec<CaseV>,
    templates: Vec<TemplateV>,
    warnings: Vec<String>,
}

#[derive(Deserialize)]
struct ToolV {
    name: String,
    version: String,
}

#[derive(Deserialize)]
struct InputV {
    role: String,
    name: String,
    bytes: u64,
    #[serde(default)]
    sha256: Option<String>,
}

#[derive(Deserialize)]
struct AuditV {
    files: u64,
    bytes: u64,
    lines: u64,
    blank_lines: u64,
    stage_entries: u64,
    completion_entries: u64,
    successful_completions: u64,
    skipped: BTreeMap<String, SkipV>,
    pipelines: u64,
    successful_pipelines: u64,
    successful_without_stages: u64,
    successful_without_input: u64,
    candidates: u64,
}

#[derive(Deserialize)]
struct SkipV {
    count: u64,
    first_lines: Vec<LineV>,
}

#[derive(Deserialize)]
struct LineV {
    file: String,
    line: u64,
}

#[derive(Deserialize)]
struct TestSetV {
    num_cases: u64,
    candidates: u64,
    sampled: bool,
    insufficient: bool,
}

#[derive(Deserialize)]
struct Pair<T> {
    old: T,
    new: T,
}

#[derive(Deserialize)]
struct CountsV {
    format: String,
    cases: u64,
    passed: u64,
    wrong: u64,
    missing: u64,
    errored: u64,
    composite: u64,
    pass_rate: N,
    records: u64,
    extra: u64,
    duplicates: u64,
    conflicting: u64,
    conflicting_ids: Vec<String>,
    ignored_stage_entries: u64,
    /// `repeats: mean` only.
    #[serde(default)]
    runs: Option<u64>,
    #[serde(default)]
    passes: Option<u64>,
}

#[derive(Deserialize)]
struct TrajV {
    results: u64,
    skipped_without_judge: u64,
    mean: N,
    composites: Vec<N>,
}

#[derive(Deserialize)]
struct DecisionV {
    approved: bool,
    /// Absent in a report made before outcomes existed.
    #[serde(default)]
    outcome: Option<String>,
    reason: String,
    task_delta: N,
    trajectory_delta: N,
    task_old: N,
    task_new: N,
    trajectory_old: N,
    trajectory_new: N,
    num_cases: u64,
    details: DetailsV,
}

#[derive(Deserialize)]
struct DetailsV {
    task_regression_tol: N,
    trajectory_regression_tol: N,
    trajectory_checked: bool,
}

#[derive(Deserialize)]
struct StatsV {
    confidence: N,
    task: TaskV,
    trajectory: Option<TrajStatsV>,
}

#[derive(Deserialize)]
struct RateV {
    low: N,
    high: N,
}

#[derive(Deserialize)]
struct DeltaV {
    low: N,
    high: N,
    method: String,
}

#[derive(Deserialize)]
struct TaskV {
    old: RateV,
    new: RateV,
    delta: DeltaV,
    /// `null` under `repeats: mean`.
    mcnemar: Option<McNemarV>,
    table: TableV,
    sample_size: SampleSizeV,
    /// `null` or absent when there is no clustered interval.
    #[serde(default)]
    clustered: Option<ClusteredV>,
}

#[derive(Deserialize)]
struct ClusteredV {
    clusters: u64,
    design_effect: N,
    delta: DeltaV,
    old: RateV,
    new: RateV,
}

#[derive(Deserialize)]
struct McNemarV {
    b: u64,
    c: u64,
    p_exact: N,
    p_mid: N,
}

#[derive(Deserialize)]
struct TableV {
    both_pass: u64,
    old_only: u64,
    new_only: u64,
    both_fail: u64,
}

#[derive(Deserialize)]
struct SampleSizeV {
    power: N,
    tolerance: N,
    discordance: N,
    cases_needed: Option<u64>,
    num_cases: u64,
}

#[derive(Deserialize)]
struct MeanNV {
    mean: N,
    n: u64,
}

#[derive(Deserialize)]
struct TrajStatsV {
    old: MeanNV,
    new: MeanNV,
    delta: DeltaV,
}

#[derive(Deserialize)]
struct CaseV {
    /// Raw: an integer id past 64 bits keeps its digits (a `Value` would make it a float).
    pipeline_id: Box<serde_json::value::RawValue>,
    template_id: Value,
    expected: Value,
    old_verdict: Option<String>,
    new_verdict: Option<String>,
    old_pass: bool,
    new_pass: bool,
    status: String,
    old_missing: bool,
    new_missing: bool,
    old_errored: bool,
    new_errored: bool,
    #[serde(default)]
    old_error: Option<String>,
    #[serde(default)]
    new_error: Option<String>,
    /// `repeats: mean` only.
    #[serde(default)]
    old_runs: Option<u64>,
    #[serde(default)]
    old_passes: Option<u64>,
    #[serde(default)]
    new_runs: Option<u64>,
    #[serde(default)]
    new_passes: Option<u64>,
}

impl CaseV {
    /// The page's "different verdicts" filter: the verdicts differ (case-insensitively), or one
    /// runner failed and the other did not.
    fn different(&self) -> bool {
        let up = |v: &Option<String>| v.as_deref().unwrap_or("").to_uppercase();
        up(&self.old_verdict) != up(&self.new_verdict) || self.old_errored != self.new_errored
    }

    fn missing_or_errored(&self) -> bool {
        self.old_missing || self.new_missing || self.old_errored || self.new_errored
    }
}

#[derive(Deserialize)]
struct TemplateV {
    template_id: Value,
    n: u64,
    old_pass_rate: N,
    new_pass_rate: N,
    delta: N,
    /// Absent in a report made before it existed.
    #[serde(default)]
    interval: Option<DeltaV>,
}

// ---- Text helpers ----

/// `s` HTML-escaped (for text and for quoted attribute values).
pub(super) fn esc(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 8);
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

/// A value from a file as text: strings as they are, `null` as "—", anything else as JSON.
fn text(v: &Value) -> String {
    match v {
        Value::Null => "—".into(),
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

/// A pipeline id as shown: a string id's text, an integer id's digits.
fn id_text(raw: &serde_json::value::RawValue) -> String {
    serde_json::from_str::<String>(raw.get()).unwrap_or_else(|_| raw.get().to_owned())
}

/// `s` cut to [`SHOWN_CHARACTERS`] characters with a note of the rest.
pub(super) fn shorten(s: &str) -> String {
    match s.char_indices().nth(SHOWN_CHARACTERS) {
        None => s.to_string(),
        Some((at, _)) => {
            let rest = s[at..].chars().count();
            format!("{}… ({rest} more characters)", &s[..at])
        }
    }
}

/// A value for a cell: shortened, then escaped.
pub(super) fn cell(s: &str) -> String {
    esc(&shorten(s))
}

fn pct(x: N) -> String {
    if x.0.is_finite() {
        format!("{:.1}%", x.0 * 100.0)
    } else {
        "—".into()
    }
}

fn signed(x: N, digits: usize) -> String {
    let v = x.0;
    if !v.is_finite() {
        return "—".into();
    }
    let sign = if v > 0.0 {
        "+"
    } else if v < 0.0 {
        "−"
    } else {
        "±"
    };
    format!("{sign}{:.*}", digits, v.abs())
}

/// A number as plain text (`0`, `0.05`).
fn plain(x: N) -> String {
    if x.0.is_finite() {
        format!("{}", x.0)
    } else {
        "—".into()
    }
}

/// Three significant digits (p-values).
fn sig3(x: N) -> String {
    let v = x.0;
    if !v.is_finite() {
        return "—".into();
    }
    if v == 0.0 {
        return "0.00".into();
    }
    let e = v.abs().log10().floor() as i32;
    if e < -6 {
        format!("{v:.2e}")
    } else {
        format!("{:.*}", (2 - e).max(0) as usize, v)
    }
}

/// A chart coordinate: at most two decimals, no trailing zeros (as the page's charts).
fn co(x: f64) -> String {
    let s = format!("{x:.2}");
    let s = s.trim_end_matches('0').trim_end_matches('.');
    if s == "-0" {
        "0".into()
    } else {
        s.to_string()
    }
}

fn policy_value(v: &Value) -> String {
    match v {
        Value::Null => "none".into(),
        Value::String(s) => s.clone(),
        Value::Array(items) => items.iter().map(text).collect::<Vec<_>>().join(", "),
        other => other.to_string(),
    }
}

// ---- Charts (the page's www/charts.js, as SVG text) ----

const W: f64 = 420.0;

/// The chart's frame, shared with the page's `sequenceChart` (www/charts.js): the plot's left,
/// right, top and bottom edges in a 420 × 170 view box.
const X0: f64 = 40.0;
const X1: f64 = 360.0;
const Y0: f64 = 10.0;
const Y1: f64 = 140.0;

/// The confidence sequence as an inline SVG (the page's `sequenceChart`): the lower and upper
/// bounds over the units used, lines at −tolerance and 0, and a marker where it stopped; styled
/// by the report's classes and `style` attributes only (the report's stylesheet is unchanged).
/// `None` without a sequential record or before any look.
fn sequential_chart(q: &Value) -> Option<String> {
    let nums =
        |k: &str| -> Option<Vec<f64>> { q.get("looks")?.get(k)?.as_array()?.iter().map(Value::as_f64).collect() };
    let (n, lower, upper) = (nums("n")?, nums("lower")?, nums("upper")?);
    if n.is_empty() || n.len() != lower.len() || n.len() != upper.len() {
        return None;
    }
    let used = q.get("used")?.as_u64()? as f64;
    let budget = q.get("budget")?.as_u64()? as f64;
    let tol = q.get("tolerance")?.as_f64()?;
    let stopped = q.get("stopped")?.as_str()?;
    let units = match q.get("unit")?.as_str()? {
        "template" => "templates",
        _ => "cases",
    };
    let (lf, uf) = (q["lower"].as_f64().unwrap_or(-1.0), q["upper"].as_f64().unwrap_or(1.0));
    let xmax = used.max(budget.min(5.0 * used)).max(1.0);
    let span = (uf - lf).max(3.0 * tol).max(0.1);
    let ylo = (lf.min(-tol) - span / 2.0).max(-1.0);
    let yhi = (uf.max(0.0) + span / 2.0).min(1.0).max(ylo + 0.01);
    let x = |v: f64| co(X0 + v / xmax * (X1 - X0));
    let y = |v: f64| co(Y1 - (v.clamp(ylo, yhi) - ylo) / (yhi - ylo) * (Y1 - Y0));
    let line = |vals: &[f64]| {
        n.iter()
            .zip(vals)
            .map(|(&a, &b)| format!("{},{}", x(a), y(b)))
            .collect::<Vec<_>>()
            .join(" ")
    };
    let (lo_pts, hi_pts) = (line(&lower), line(&upper));
    let band: Vec<String> = n
        .iter()
        .zip(&upper)
        .map(|(&a, &b)| format!("{},{}", x(a), y(b)))
        .chain(n.iter().zip(&lower).rev().map(|(&a, &b)| format!("{},{}", x(a), y(b))))
        .collect();
    let sentence = super::sequential::sentence(q)?;
    let stop_at = match stopped {
        "blocked" => uf,
        _ => lf,
    };
    let mut s = String::new();
    let _ = write!(
        s,
        "<svg xmlns=\"http://www.w3.org/2000/svg\" viewBox=\"0 0 420 170\" role=\"img\" class=\"chart\" data-testid=\"sequential-chart\">\
         <title>Confidence sequence for the change in pass rate (new − old) against the {units} used</title><desc>{}</desc>\
         <polygon points=\"{}\" style=\"fill:var(--new);fill-opacity:.15\"/>\
         <line x1=\"{X0}\" x2=\"{X1}\" y1=\"{z}\" y2=\"{z}\" class=\"axis\"/>\
         <line x1=\"{X0}\" x2=\"{X1}\" y1=\"{t}\" y2=\"{t}\" style=\"stroke:var(--bad);stroke-width:1;stroke-dasharray:4 3\"/>\
         <polyline points=\"{lo_pts}\" data-bound=\"lower\" style=\"fill:none;stroke:var(--new);stroke-width:1.5\"/>\
         <polyline points=\"{hi_pts}\" data-bound=\"upper\" style=\"fill:none;stroke:var(--new);stroke-width:1.5\"/>\
         <g data-testid=\"sequential-stop\" data-n=\"{}\"><title>{}</title>\
         <line x1=\"{sx}\" x2=\"{sx}\" y1=\"{Y0}\" y2=\"{Y1}\" style=\"stroke:var(--fg);stroke-width:1;stroke-dasharray:2 2\"/>\
         <circle cx=\"{sx}\" cy=\"{}\" r=\"4\" style=\"fill:var(--fg)\"/></g>\
         <text x=\"{}\" y=\"{}\" class=\"value\" text-anchor=\"end\">0</text>\
         <text x=\"{}\" y=\"{}\" class=\"value\">{}</text>\
         <line x1=\"{X0}\" x2=\"{X0}\" y1=\"{Y0}\" y2=\"{Y1}\" class=\"axis\"/>\
         <text x=\"{X0}\" y=\"158\" class=\"value\">0</text>\
         <text x=\"{X1}\" y=\"158\" class=\"value\" text-anchor=\"end\">{}</text>\
         <text x=\"{}\" y=\"158\" class=\"value\" text-anchor=\"middle\">{units}</text></svg>",
        esc(&sentence),
        band.join(" "),
        used,
        esc(&sentence),
        y(stop_at),
        co(X0 - 4.0),
        co(Y1 - (0f64.clamp(ylo, yhi) - ylo) / (yhi - ylo) * (Y1 - Y0) + 4.0),
        co(X1 + 4.0),
        co(Y1 - ((-tol).clamp(ylo, yhi) - ylo) / (yhi - ylo) * (Y1 - Y0) + 4.0),
        super::sequential::minus(tol),
        grouped(xmax as u64),
        co((X0 + X1) / 2.0),
        z = y(0.0),
        t = y(-tol),
        sx = x(used),
    );
    Some(s)
}

fn pass_rate_chart(d: &DecisionV, st: &TaskV) -> String {
    let scale = |x: f64| 90.0 + if x.is_finite() { x.clamp(0.0, 1.0) } else { 0.0 } * (W - 170.0);
    let mut s = format!(
        "<svg xmlns=\"http://www.w3.org/2000/svg\" viewBox=\"0 0 420 70\" role=\"img\" class=\"chart\" aria-label=\"Pass rate: old {}, new {}\">",
        pct(d.task_old),
        pct(d.task_new)
    );
    for (i, (label, rate, cls, iv)) in [
        ("old model", d.task_old, "bar-old", &st.old),
        ("new model", d.task_new, "bar-new", &st.new),
    ]
    .into_iter()
    .enumerate()
    {
        let y = 8.0 + i as f64 * 30.0;
        let _ = write!(
            s,
            "<text x=\"0\" y=\"{}\" class=\"label\">{label}</text><rect x=\"90\" y=\"{}\" width=\"{}\" height=\"20\" class=\"track\"/><rect x=\"90\" y=\"{}\" width=\"{}\" height=\"20\" class=\"{cls}\"/><text x=\"{}\" y=\"{}\" class=\"value\">{}</text>",
            co(y + 15.0),
            co(y),
            co(W - 170.0),
            co(y),
            co(scale(rate.0) - 90.0),
            co(W - 72.0),
            co(y + 15.0),
            pct(rate)
        );
        let (lo, hi) = (co(scale(iv.low.0)), co(scale(iv.high.0)));
        let _ = write!(
            s,
            "<g class=\"errorbar\"><title>{label}: {} to {}</title><line x1=\"{lo}\" x2=\"{hi}\" y1=\"{m}\" y2=\"{m}\"/><line x1=\"{lo}\" x2=\"{lo}\" y1=\"{a}\" y2=\"{b}\"/><line x1=\"{hi}\" x2=\"{hi}\" y1=\"{a}\" y2=\"{b}\"/></g>",
            pct(iv.low),
            pct(iv.high),
            m = co(y + 10.0),
            a = co(y + 4.0),
            b = co(y + 16.0),
        );
    }
    s.push_str("</svg>");
    s
}

fn template_chart(templates: &[TemplateV]) -> String {
    let rows = &templates[..templates.len().min(20)];
    let height = 14.0 + rows.len() as f64 * 22.0;
    let mid = 260.0;
    let half = W - mid - 60.0;
    let max = rows
        .iter()
        .map(|r| r.delta.0.abs())
        .filter(|d| d.is_finite())
        .fold(0.05, f64::max);
    let mut s = format!(
        "<svg xmlns=\"http://www.w3.org/2000/svg\" viewBox=\"0 0 420 {}\" role=\"img\" class=\"chart\" aria-label=\"Pass-rate change per template\"><line x1=\"260\" x2=\"260\" y1=\"0\" y2=\"{}\" class=\"axis\"/>",
        co(height),
        co(height)
    );
    for (i, r) in rows.iter().enumerate() {
        let y = 6.0 + i as f64 * 22.0;
        let d = if r.delta.0.is_finite() { r.delta.0 } else { 0.0 };
        let w = d.abs() / max * half.min(mid - 170.0);
        let label = text(&r.template_id);
        let shown: String = if label.chars().count() > 26 {
            format!("{}…", label.chars().take(25).collect::<String>())
        } else {
            label.clone()
        };
        let _ = write!(
            s,
            "<text x=\"0\" y=\"{}\" class=\"label\"><title>{}</title>{}</text><rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"16\" class=\"{}\"/><text x=\"{}\" y=\"{}\" class=\"value\">{}</text>",
            co(y + 13.0),
            cell(&label),
            esc(&shown),
            co(if d < 0.0 { mid - w } else { mid }),
            co(y),
            co(w),
            if d < 0.0 { "bar-worse" } else { "bar-better" },
            co(W - 56.0),
            co(y + 13.0),
            signed(r.delta, 3)
        );
    }
    s.push_str("</svg>");
    s
}

fn trajectory_chart(old: &[N], new: &[N]) -> String {
    const BINS: usize = 10;
    let shares = |values: &[N]| {
        let mut c = [0usize; BINS];
        for v in values {
            let x = if v.0.is_finite() { v.0 } else { 0.0 };
            c[((x * BINS as f64).floor().max(0.0) as usize).min(BINS - 1)] += 1;
        }
        let n = values.len();
        c.map(|k| (k, if n > 0 { k as f64 / n as f64 } else { 0.0 }))
    };
    let series = [("old", shares(old), "bar-old"), ("new", shares(new), "bar-new")];
    let max = series
        .iter()
        .flat_map(|(_, bars, _)| bars.iter().map(|b| b.1))
        .fold(0.01, f64::max);
    let mut s = String::from(
        "<svg xmlns=\"http://www.w3.org/2000/svg\" viewBox=\"0 0 420 150\" role=\"img\" class=\"chart\" aria-label=\"Distribution of trajectory composite scores, old and new\">",
    );
    let bw = (W - 40.0) / BINS as f64;
    for (k, (label, bars, cls)) in series.iter().enumerate() {
        let base = 62.0 + k as f64 * 68.0;
        let _ = write!(
            s,
            "<text x=\"0\" y=\"{}\" class=\"label\">{label}</text>",
            co(base - 20.0)
        );
        for (i, (n, share)) in bars.iter().enumerate() {
            let hgt = share / max * 48.0;
            let _ = write!(
                s,
                "<rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" class=\"{cls}\"><title>{label} {:.1}–{:.1}: {n}</title></rect>",
                co(40.0 + i as f64 * bw),
                co(base - hgt),
                co(bw - 2.0),
                co(hgt),
                i as f64 / BINS as f64,
                (i + 1) as f64 / BINS as f64,
            );
        }
        let _ = write!(
            s,
            "<line x1=\"40\" x2=\"420\" y1=\"{b}\" y2=\"{b}\" class=\"axis\"/>",
            b = co(base)
        );
    }
    s.push_str(
        "<text x=\"40\" y=\"148\" class=\"value\">0</text><text x=\"410\" y=\"148\" class=\"value\">1</text></svg>",
    );
    s
}

// ---- The page ----

pub(super) const STYLE: &str = r#"
:root{color-scheme:light dark;--bg:#fff;--fg:#1b1f24;--muted:#57606a;--line:#d0d7de;--panel:#f6f8fa;--ok:#1a7f37;--ok-bg:#dafbe1;--bad:#cf222e;--bad-bg:#ffebe9;--warn:#9a6700;--warn-bg:#fff8c5;--old:#8c959f;--new:#0969da;--track:#eaeef2}
@media (prefers-color-scheme:dark){:root{--bg:#0d1117;--fg:#e6edf3;--muted:#9198a1;--line:#3d444d;--panel:#151b23;--ok:#3fb950;--ok-bg:#12261e;--bad:#f85149;--bad-bg:#2d1214;--warn:#d29922;--warn-bg:#272115;--old:#6e7681;--new:#4493f8;--track:#262c36}}
*{box-sizing:border-box}
body{margin:0 auto;max-width:72rem;padding:1.5rem;background:var(--bg);color:var(--fg);font:15px/1.45 system-ui,-apple-system,"Segoe UI",sans-serif}
h1{font-size:1.6rem;margin:.2rem 0}h2{font-size:1.2rem;margin:0 0 .6rem}h3{font-size:1rem;margin:.8rem 0 .4rem}
code,.mono{font-family:ui-monospace,SFMono-Regular,Menlo,Consolas,monospace;font-size:.9em;overflow-wrap:anywhere}
.muted{color:var(--muted)}
.answers{display:grid;grid-template-columns:repeat(auto-fit,minmax(16rem,1fr));gap:.6rem}.answers pre{white-space:pre-wrap;overflow-wrap:anywhere;max-height:24rem;overflow:auto;unicode-bidi:plaintext;margin:.2rem 0}.answers del{background:var(--bad-bg);color:inherit}.answers ins{background:var(--ok-bg);color:inherit}
header.top{display:flex;justify-content:space-between;gap:1rem;align-items:baseline;border-bottom:1px solid var(--line);margin-bottom:1rem}
.banner{border:2px solid;border-radius:8px;padding:1rem 1.2rem;margin-bottom:1rem}
.approved{border-color:var(--ok);background:var(--ok-bg)}.blocked{border-color:var(--bad);background:var(--bad-bg)}.inconclusive{border-color:var(--warn);background:var(--warn-bg)}
.approved h1{color:var(--ok)}.blocked h1{color:var(--bad)}.inconclusive h1{color:var(--warn)}
section.panel,.card{border:1px solid var(--line);border-radius:8px;padding:.8rem 1rem;margin-bottom:1rem;background:var(--panel)}
.cards{display:grid;grid-template-columns:repeat(auto-fit,minmax(22rem,1fr));gap:1rem;margin-bottom:1rem}.cards .card{margin:0}
dl.kv{display:grid;grid-template-columns:max-content 1fr;gap:.15rem .8rem;margin:0}dl.kv dt{color:var(--muted)}dl.kv dd{margin:0}
dl.grid{display:grid;grid-template-columns:repeat(auto-fill,minmax(14rem,1fr));gap:.2rem 1rem;margin:0}dl.grid div{display:flex;justify-content:space-between;border-bottom:1px dotted var(--line)}dl.grid dd{margin:0;font-variant-numeric:tabular-nums}
table{border-collapse:collapse;width:100%;margin:.4rem 0}th,td{border-bottom:1px solid var(--line);padding:.25rem .45rem;text-align:left;vertical-align:top;overflow-wrap:anywhere}
th{font-weight:600}td.num,th.num{text-align:right;font-variant-numeric:tabular-nums;white-space:nowrap}
table.two{width:auto;min-width:16rem}
.worse{color:var(--bad)}.better{color:var(--ok)}.pass{color:var(--ok)}.fail{color:var(--bad)}
.chart{width:100%;max-width:420px;height:auto;display:block;margin:.4rem 0}
.chart text{fill:var(--fg);font-size:12px}.chart .value{fill:var(--muted)}
.track{fill:var(--track)}.bar-old{fill:var(--old)}.bar-new{fill:var(--new)}.bar-worse{fill:var(--bad)}.bar-better{fill:var(--ok)}
.axis{stroke:var(--muted);stroke-width:1}.errorbar line{stroke:var(--fg);stroke-width:1.5}
.tools{display:none;flex-wrap:wrap;gap:.4rem;align-items:center;margin:.4rem 0}.js .tools{display:flex}
.tools button{font:inherit;border:1px solid var(--line);border-radius:999px;padding:.15rem .7rem;background:var(--bg);color:var(--fg);cursor:pointer}
.tools button[aria-pressed=true]{background:var(--new);border-color:var(--new);color:#fff}
.tools input{font:inherit;flex:1;min-width:14rem;padding:.25rem .5rem;border:1px solid var(--line);border-radius:6px;background:var(--bg);color:var(--fg)}
tr.regressed td:last-child{color:var(--bad);font-weight:600}tr.improved td:last-child{color:var(--ok);font-weight:600}
.print-only{display:none}
footer{color:var(--muted);font-size:.85rem;border-top:1px solid var(--line);padding-top:.6rem}
@media print{
:root{color-scheme:light;--bg:#fff;--fg:#000;--muted:#444;--line:#bbb;--panel:#fff;--ok:#116329;--ok-bg:#fff;--bad:#a40e26;--bad-bg:#fff;--warn:#7d4e00;--warn-bg:#fff;--old:#888;--new:#0550ae;--track:#eee}
body{max-width:none;padding:0;font-size:11pt}
.tools,.js .tools,.screen-only{display:none!important}.print-only{display:block}
#cases tbody tr[hidden]{display:table-row!important}
section.panel,.card,.banner,tr,svg{break-inside:avoid}
*{-webkit-print-color-adjust:exact;print-color-adjust:exact}
}
"#;

/// The one inline script of a rendered page: the filter chips and the search over the rows of
/// the table `{row}s` (its search box `{row}-search`, its count `{row}s-shown`); without it every
/// listed row shows, the tools hidden. With the sha256 its CSP names.
pub(crate) fn filter_script(row: &str) -> (String, String) {
    let text = FILTER_SCRIPT.replace("{row}", row);
    let digest = Sha256::digest(text.as_bytes());
    let hash = format!("sha256-{}", base64::engine::general_purpose::STANDARD.encode(digest));
    (text, hash)
}

const FILTER_SCRIPT: &str = r#"(function () {
  var table = document.getElementById("{row}s");
  if (!table) return;
  var rows = Array.prototype.slice.call(table.tBodies[0].rows);
  var hay = rows.map(function (r) { return r.textContent.toLowerCase(); });
  var chips = Array.prototype.slice.call(document.querySelectorAll("[data-filter]"));
  var search = document.getElementById("{row}-search");
  var shown = document.getElementById("{row}s-shown");
  var filter = "all";
  function apply() {
    var q = search.value.trim().toLowerCase();
    var n = 0;
    rows.forEach(function (r, i) {
      var tags = " " + r.getAttribute("data-tags") + " ";
      var show = (filter === "all" || tags.indexOf(" " + filter + " ") !== -1) && (q === "" || hay[i].indexOf(q) !== -1);
      r.hidden = !show;
      if (show) n++;
    });
    shown.textContent = n + " of " + rows.length + " listed {row}(s) shown";
  }
  chips.forEach(function (chip) {
    chip.addEventListener("click", function () {
      filter = chip.getAttribute("data-filter");
      chips.forEach(function (c) { c.setAttribute("aria-pressed", String(c === chip)); });
      apply();
    });
  });
  search.addEventListener("input", apply);
  document.documentElement.className = "js";
  apply();
})();
"#;

use super::evidence::{grouped, missing_evidence_advice, EvidenceView};

fn conf(v: &View) -> String {
    let c = (v.stats.confidence.0 * 1000.0).round() / 10.0;
    format!("{c}%")
}

fn rule_sentence(v: &View, ev: &EvidenceView) -> String {
    let sentence = rule_sentence_fixed(v);
    if ev.used {
        format!(
            "{} The interval and McNemar's test here are {}.",
            sentence,
            super::evidence::DESCRIPTIVE
        )
    } else {
        sentence
    }
}

fn rule_sentence_fixed(v: &View) -> String {
    let t = &v.stats.task;
    let mode = v.policy.get("mode").and_then(Value::as_str).unwrap_or("point");
    let tol = plain(v.decision.details.task_regression_tol);
    let interval = format!(
        "The {} interval for the change in pass rate is {} to {}",
        conf(v),
        signed(t.delta.low, 3),
        signed(t.delta.high, 3)
    );
    let interval = match &t.clustered {
        Some(c) if mode == "non_inferiority" => format!(
            "{interval}; clustered by template, {} to {} (the rule uses this one)",
            signed(c.delta.low, 3),
            signed(c.delta.high, 3)
        ),
        Some(c) => format!(
            "{interval}; clustered by template, {} to {}",
            signed(c.delta.low, 3),
            signed(c.delta.high, 3)
        ),
        None => interval,
    };
    let traj = |with: &str| {
        if v.decision.details.trajectory_checked {
            format!(
                "; likewise for trajectory quality with {}",
                plain(v.decision.details.trajectory_regression_tol)
            )
        } else {
            with.to_owned()
        }
    };
    match (mode, &v.decision.outcome) {
        ("non_inferiority", None) => format!(
            "Non-inferiority rule: the new model is approved only if, with {c} confidence, it is at most {tol} worse than the old one (the interval's lower bound must be ≥ −{tol}{}). {interval}.",
            traj(""),
            c = conf(v)
        ),
        ("non_inferiority", Some(_)) => format!(
            "Non-inferiority rule: approved when, with {c} confidence, the new model is at most {tol} worse than the old one (the interval's lower bound > −{tol}{}); blocked when the interval lies below 0 (a regression is shown); otherwise inconclusive (neither is shown), which keeps the old model. {interval}.",
            traj(""),
            c = conf(v)
        ),
        _ => format!(
            "Point rule (the reference): blocked when the new pass rate is below the old one minus {tol}. {interval}{}.",
            t.mcnemar
                .as_ref()
                .map_or_else(String::new, |m| format!("; McNemar p = {}", sig3(m.p_exact)))
        ),
    }
}

fn kv(out: &mut String, rows: &[(&str, String)]) {
    out.push_str("<dl class=\"kv\">");
    for (k, v) in rows {
        let _ = write!(out, "<dt>{}</dt><dd>{v}</dd>", esc(k));
    }
    out.push_str("</dl>");
}

fn render(v: &View, json: &str, extras: &Extras<'_>) -> String {
    let (script, script_hash) = filter_script("case");
    let d = &v.decision;
    let mut o = String::with_capacity(64 * 1024 + json.len() * 2);
    // A report made before outcomes existed is approved or blocked.
    let outcome = match (d.approved, d.outcome.as_deref()) {
        (true, _) => "approved",
        (false, Some("inconclusive")) => "inconclusive",
        (false, _) => "blocked",
    };
    let ev = EvidenceView::new(
        v.evidence.as_ref(),
        v.test_set.num_cases,
        v.cases.iter().map(|c| (c.old_missing, c.new_missing)),
    );
    // A decision taken on missing evidence is settled by answering the cases, not by more.
    let advice = missing_evidence_advice(&d.reason);
    // A sequential decision that stopped at its budget is continued, not settled by a count.
    let continuation = v.sequential.as_ref().and_then(super::sequential::continuation);
    let title = match outcome {
        "approved" => "Approved — deploy the new model".to_owned(),
        "inconclusive" if advice.is_some() => {
            "Inconclusive — keep the old model; too many test cases lack a verdict".to_owned()
        }
        "inconclusive" if continuation.is_some() => {
            format!("Inconclusive — keep the old model; {}", super::sequential::TITLE_TAIL)
        }
        "inconclusive" => "Inconclusive — keep the old model; more cases would settle it".to_owned(),
        _ => "Blocked — keep the old model".to_owned(),
    };
    let _ = write!(
        o,
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\"/>\n<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\"/>\n<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; style-src 'unsafe-inline'; script-src '{}'; img-src data:; base-uri 'none'; form-action 'none'\"/>\n<meta name=\"generator\" content=\"{} {}\"/>\n<link rel=\"icon\" href=\"data:,\"/>\n<title>deploy-gate report — {}</title>\n<style>{STYLE}</style>\n</head>\n<body>\n",
        script_hash,
        esc(&v.tool.name),
        esc(&v.tool.version),
        outcome,
    );
    let _ = writeln!(
        o,
        "<header class=\"top\"><strong>deploy-gate report</strong><span class=\"muted\">{} {} · {}</span></header>",
        esc(&v.tool.name),
        esc(&v.tool.version),
        esc(&v.schema)
    );

    // The banner.
    let _ = writeln!(
        o,
        "<section class=\"banner {outcome}\" data-testid=\"decision\" data-approved=\"{}\" data-outcome=\"{outcome}\" data-reason=\"{r}\" data-rests-on=\"{}\" role=\"status\"><h1>{title} <span class=\"rests\" data-testid=\"rests-on\">({})</span></h1><p>Reason: <code>{r}</code> · test cases: <strong data-testid=\"num-cases\">{}</strong> of {} candidate(s)</p>{}{}{}<p class=\"muted\">{}</p></section>",
        d.approved,
        ev.rests_on,
        esc(&ev.rests_on_text()),
        d.num_cases,
        v.test_set.candidates,
        match ev.over() {
            Some(over) => format!(
                "<p data-testid=\"over\">Every figure below is <strong>{over}</strong> by the sequential rule (the units it used when it stopped){}.</p>",
                ev.not_run_text().map_or_else(String::new, |n| format!("; <span data-testid=\"not-run\">{}</span>", esc(&n)))
            ),
            None => String::new(),
        },
        match v.sequential.as_ref().and_then(super::sequential::sentence) {
            Some(q) => {
                let mut p = format!("<p data-testid=\"sequential\">{}.", esc(&q));
                if let Some(m) = v.sequential.as_ref().and_then(super::evidence::min_units_text) {
                    let _ = write!(p, " <span data-testid=\"min-units\">Fewest units: {}.</span>", esc(&m));
                }
                p.push_str("</p>");
                for w in super::evidence::sequential_warnings(&v.warnings) {
                    let _ = write!(p, "<p class=\"warn\" data-testid=\"sequential-warning\">{}</p>", esc(w));
                }
                p
            }
            None => String::new(),
        },
        match (outcome, &continuation) {
            (_, _) if advice.is_some() => format!(
                "<p data-testid=\"missing-evidence\"><strong>{}</strong></p>",
                esc(advice.unwrap_or_default())
            ),
            ("inconclusive", Some(c)) => format!("<p data-testid=\"sequential-continue\"><strong>{}</strong></p>", esc(c)),
            ("inconclusive", None) => format!(
                "<p data-testid=\"cases-needed\"><strong>{}</strong></p>",
                esc(&settle(&v.stats.task.sample_size))
            ),
            _ => String::new(),
        },
        esc(&rule_sentence(v, &ev)),
        r = esc(&d.reason),
    );

    // The cards.
    let st = &v.stats.task;
    let (old, new) = (&v.verdicts.old, &v.verdicts.new);
    let over_note = |o: &mut String| {
        if let Some(over) = ev.over() {
            let _ = write!(o, "<p class=\"muted over\">{over}</p>");
        }
    };
    o.push_str("<div class=\"cards\">\n<section class=\"card\" id=\"task\"><h2>Task accuracy</h2>");
    over_note(&mut o);
    let rate_method = if st.delta.method == "paired_t" { "t" } else { "Wilson" };
    let mut rows = vec![
        ("old → new", format!("{} → {}", pct(d.task_old), pct(d.task_new))),
        (
            "old interval",
            format!("{} – {} ({rate_method} {})", pct(st.old.low), pct(st.old.high), conf(v)),
        ),
        ("new interval", format!("{} – {}", pct(st.new.low), pct(st.new.high))),
        (
            "delta",
            format!(
                "{} ({} to {}, {})",
                signed(d.task_delta, 4),
                signed(st.delta.low, 3),
                signed(st.delta.high, 3),
                esc(&st.delta.method)
            ),
        ),
    ];
    let ni = v.policy.get("mode").and_then(Value::as_str) == Some("non_inferiority");
    match (&st.clustered, v.policy.get("cluster").and_then(Value::as_str)) {
        (Some(c), _) => rows.extend([
            (
                "clustered delta",
                format!(
                    "{} to {} (cluster-robust t, {} clusters{})",
                    signed(c.delta.low, 3),
                    signed(c.delta.high, 3),
                    c.clusters,
                    if ni { "; the rule uses it" } else { "" }
                ),
            ),
            ("design effect", sig3(c.design_effect)),
            (
                "clustered rates",
                format!(
                    "old {} – {} · new {} – {}",
                    pct(c.old.low),
                    pct(c.old.high),
                    pct(c.new.low),
                    pct(c.new.high)
                ),
            ),
        ]),
        (None, Some("template")) if v.test_set.num_cases > 0 => rows.push((
            "clustered delta",
            "none: every case has the same template (one cluster)".to_owned(),
        )),
        _ => {}
    }
    rows.push((
        "McNemar",
        match &st.mcnemar {
            Some(m) => format!(
                "b = {}, c = {}: p = {} (mid-p {})",
                m.b,
                m.c,
                sig3(m.p_exact),
                sig3(m.p_mid)
            ),
            None => "none (several verdicts a case)".to_owned(),
        } + if ev.used { " (descriptive)" } else { "" },
    ));
    rows.extend([
        ("tolerance", plain(d.details.task_regression_tol)),
        (
            "passed",
            format!("old {} · new {} of {}", old.passed, new.passed, old.cases),
        ),
        ("wrong verdict", format!("old {} · new {}", old.wrong, new.wrong)),
        ("missing verdict", format!("old {} · new {}", old.missing, new.missing)),
        ("runner errors", format!("old {} · new {}", old.errored, new.errored)),
    ]);
    if let Some(n) = ev.not_run.filter(|n| *n > 0) {
        rows.push((
            "not run",
            format!(
                "{} (neither model was asked: the sequential rule stopped first)",
                super::evidence::grouped(n)
            ),
        ));
    }
    if let (Some(ro), Some(rn)) = (old.runs, new.runs) {
        rows.push((
            "runs (every verdict counts)",
            format!(
                "old {} of {ro} pass · new {} of {rn}",
                old.passes.unwrap_or(0),
                new.passes.unwrap_or(0)
            ),
        ));
    }
    kv(&mut o, &rows);
    o.push_str(&pass_rate_chart(d, st));
    if let Some(chart) = v.sequential.as_ref().and_then(sequential_chart) {
        o.push_str(&chart);
    }
    let tb = &st.table;
    let _ = write!(
        o,
        "<table class=\"two\"><caption>Old × new on the same cases</caption><thead><tr><td></td><th scope=\"col\">new passes</th><th scope=\"col\">new fails</th></tr></thead><tbody><tr><th scope=\"row\">old passes</th><td class=\"num\">{}</td><td class=\"num worse\">{}</td></tr><tr><th scope=\"row\">old fails</th><td class=\"num better\">{}</td><td class=\"num\">{}</td></tr></tbody></table>",
        tb.both_pass, tb.old_only, tb.new_only, tb.both_fail
    );
    let ss = &st.sample_size;
    let guidance = match ss.cases_needed {
        None => "Non-inferiority needs a tolerance above 0.".to_string(),
        Some(n) => format!(
            "Non-inferiority at tolerance {} would need about {n} cases ({:.0}% power, equal models, {:.1}% discordant); this test set has {}.",
            plain(ss.tolerance),
            ss.power.0 * 100.0,
            ss.discordance.0 * 100.0,
            ss.num_cases
        ),
    };
    let _ = writeln!(o, "<p class=\"muted\">{}</p></section>", esc(&guidance));

    o.push_str("<section class=\"card\" id=\"trajectory\"><h2>Trajectory quality</h2>");
    match (d.details.trajectory_checked, &v.trajectories.old, &v.trajectories.new) {
        (true, Some(to), Some(tn)) => {
            let delta = match &v.stats.trajectory {
                Some(ts) => format!(
                    "{} ({} to {}, {})",
                    signed(d.trajectory_delta, 4),
                    signed(ts.delta.low, 3),
                    signed(ts.delta.high, 3),
                    esc(&ts.delta.method)
                ),
                None => signed(d.trajectory_delta, 4),
            };
            let mut rows = vec![
                (
                    "old → new",
                    format!("{} → {}", plain(d.trajectory_old), plain(d.trajectory_new)),
                ),
                ("delta", delta),
                ("tolerance", plain(d.details.trajectory_regression_tol)),
                ("results", format!("old {} · new {}", to.results, tn.results)),
                (
                    "without judge score",
                    format!("old {} · new {}", to.skipped_without_judge, tn.skipped_without_judge),
                ),
            ];
            if let Some(ts) = &v.stats.trajectory {
                rows.push((
                    "means (unrounded)",
                    format!(
                        "old {} (n {}) · new {} (n {})",
                        plain(ts.old.mean),
                        ts.old.n,
                        plain(ts.new.mean),
                        ts.new.n
                    ),
                ));
            }
            kv(&mut o, &rows);
            o.push_str(&trajectory_chart(&to.composites, &tn.composites));
        }
        _ => kv(
            &mut o,
            &[("status", "not checked (needs both trajectory files)".to_string())],
        ),
    }
    o.push_str("</section>\n</div>\n");
    if let Some(g) = &v.guardrails {
        render_guardrails(&mut o, g);
    }

    // Per template.
    o.push_str("<section class=\"panel\" id=\"templates\"><h2>Per template</h2>");
    over_note(&mut o);
    if !v.templates.is_empty() {
        o.push_str(&template_chart(&v.templates));
        if v.templates.len() > 20 {
            let _ = write!(
                o,
                "<p class=\"muted\">The chart shows the first 20 of {} templates; the table lists all.</p>",
                v.templates.len()
            );
        }
    }
    let intervals = v.templates.iter().any(|t| t.interval.is_some());
    let _ = write!(
        o,
        "<table><thead><tr><th scope=\"col\">template</th><th scope=\"col\" class=\"num\">cases</th><th scope=\"col\" class=\"num\">old</th><th scope=\"col\" class=\"num\">new</th><th scope=\"col\" class=\"num\">Δ</th>{}</tr></thead><tbody>",
        if intervals {
            format!("<th scope=\"col\" class=\"num\">{} interval</th>", conf(v))
        } else {
            String::new()
        }
    );
    for t in &v.templates {
        let cls = if t.delta.0 < 0.0 {
            " worse"
        } else if t.delta.0 > 0.0 {
            " better"
        } else {
            ""
        };
        let interval = match (&t.interval, intervals) {
            (Some(i), _) => format!("<td class=\"num\">{} to {}</td>", signed(i.low, 3), signed(i.high, 3)),
            (None, true) => "<td class=\"num\">—</td>".to_owned(),
            (None, false) => String::new(),
        };
        let _ = write!(
            o,
            "<tr><td>{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td><td class=\"num{cls}\">{}</td>{interval}</tr>",
            cell(&text(&t.template_id)),
            t.n,
            pct(t.old_pass_rate),
            pct(t.new_pass_rate),
            signed(t.delta, 4)
        );
    }
    o.push_str("</tbody></table></section>\n");

    let listed = render_cases(&mut o, v, extras.answers);
    if let Some(review) = extras.review {
        render_review(&mut o, review, &listed);
    }
    render_quality(&mut o, v);
    render_policy(&mut o, v);

    let _ = writeln!(
        o,
        "<footer>Written by {} {} from the report below (schema {}); the whole report, every case included, is embedded in this file as JSON (<code>script#{EMBEDDED_ID}</code>): drop this file on the deploy-gate page to open it there.</footer>",
        esc(&v.tool.name),
        esc(&v.tool.version),
        esc(&v.schema)
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

/// The guardrails beside the task decision: the rule, then a table per group (blocking,
/// advisory), the failing ones first; every name and template id escaped (and shortened).
fn render_guardrails(o: &mut String, g: &super::guardrails::GuardrailsView) {
    let _ = write!(
        o,
        "<section class=\"panel\" id=\"guardrails\" data-testid=\"guardrails\"><h2>Guardrails</h2><p class=\"muted\">{}</p>",
        esc(&g.rule())
    );
    for (group, rows) in g.groups() {
        let blocking = group == "Blocking";
        let _ = write!(
            o,
            "<table data-group=\"{}\"><caption>{group}</caption><thead><tr><th scope=\"col\">guardrail</th><th scope=\"col\" class=\"num\">old</th><th scope=\"col\" class=\"num\">new</th><th scope=\"col\" class=\"num\">change ({} interval)</th>{}<th scope=\"col\">limit</th><th scope=\"col\" class=\"num\">n</th><th scope=\"col\">outcome</th></tr></thead><tbody>",
            group.to_lowercase(),
            esc(&g.level()),
            if blocking {
                format!("<th scope=\"col\" class=\"num\">{} lower bound</th>", esc(&g.adjusted_level()))
            } else {
                String::new()
            }
        );
        for r in rows {
            let mut change = esc(&r.change);
            if !r.regressed.is_empty() {
                change.push_str("<ul class=\"regressed\">");
                for t in &r.regressed {
                    let _ = write!(change, "<li>{}</li>", t.text(&format!("<code>{}</code>", cell(&t.id))));
                }
                change.push_str("</ul>");
            }
            let cls = match (r.outcome.as_str(), blocking) {
                ("within", _) => " class=\"better\"",
                ("exceeded", true) => " class=\"worse\"",
                _ => "",
            };
            let _ = write!(
                o,
                "<tr data-outcome=\"{}\"><th scope=\"row\">{}</th><td class=\"num\">{}</td><td class=\"num\">{}</td><td class=\"num\">{change}</td>{}<td>{}</td><td class=\"num\">{}</td><td{cls}>{}</td></tr>",
                esc(&r.outcome),
                cell(&r.name),
                esc(&r.old),
                esc(&r.new),
                if blocking {
                    format!("<td class=\"num\">{}</td>", esc(r.exceeded_low.as_deref().unwrap_or("—")))
                } else {
                    String::new()
                },
                esc(&r.limit),
                esc(&r.n),
                esc(&r.outcome_text())
            );
        }
        o.push_str("</tbody></table>");
    }
    o.push_str("</section>\n");
}

/// How many cases would settle an inconclusive decision, as the banner says it.
fn settle(ss: &SampleSizeV) -> String {
    match ss.cases_needed {
        Some(n) => format!(
            "About {n} cases would settle it (at the observed discordance; this test set has {}).",
            ss.num_cases
        ),
        None => "With a tolerance of 0 no number of cases shows non-inferiority.".to_owned(),
    }
}

/// A case's runs for one model (`repeats: mean`): ` · 2/3 runs pass`.
fn runs_note(runs: Option<u64>, passes: Option<u64>) -> String {
    match (runs, passes) {
        (Some(r), Some(p)) => format!(" <span class=\"muted\">{p}/{r} runs pass</span>"),
        _ => String::new(),
    }
}

/// A verdict cell; `note` (already HTML) follows the mark.
fn verdict_cell(
    verdict: &Option<String>,
    pass: bool,
    missing: bool,
    errored: bool,
    error: &Option<String>,
    note: &str,
) -> String {
    let shown = if missing {
        "<em>missing</em>".to_string()
    } else if errored {
        format!("<em>error</em> {}", cell(error.as_deref().unwrap_or("")))
    } else {
        cell(verdict.as_deref().unwrap_or("—"))
    };
    format!(
        "<td class=\"{}\">{shown} {}{note}</td>",
        if pass { "pass" } else { "fail" },
        if pass { "✓" } else { "✗" }
    )
}

/// The cases' table (each row's `id` is `case-N`, N its place in the report's `cases`): the
/// places of the cases listed.
/// The cases the table lists, in its order: the regressed, the improved, then those whose
/// verdicts differ or are missing or errored (all of them; the table shows the first
/// [`MAX_CASE_ROWS`]).
fn listed_cases(v: &View) -> Vec<(usize, &CaseV)> {
    let interesting = |c: &CaseV| c.different() || c.missing_or_errored();
    let all = || v.cases.iter().enumerate();
    let mut listed: Vec<(usize, &CaseV)> = Vec::new();
    listed.extend(all().filter(|(_, c)| c.status == "regressed"));
    listed.extend(all().filter(|(_, c)| c.status == "improved"));
    listed.extend(all().filter(|(_, c)| c.status != "regressed" && c.status != "improved" && interesting(c)));
    listed
}

/// A case's two answers as a cell: a `<details>` with each answer as text, what changed in
/// `<del>`/`<ins>` (the page's comparison), each cut at [`ANSWER_CHARACTERS`].
fn answers_cell(answers: Option<&CaseAnswers>) -> String {
    let Some(a) = answers.filter(|a| a.old.is_some() || a.new.is_some()) else {
        return "<td class=\"muted\">—</td>".to_owned();
    };
    let both = super::answers::side_by_side(
        a.old.as_ref().map(|(j, t)| (j.as_str(), *t)),
        a.new.as_ref().map(|(j, t)| (j.as_str(), *t)),
    );
    let side =
        |label: &str, shown: &Option<super::answers::Shown>, runs: &[super::answers::Run], tag: &str| -> String {
            let Some(shown) = shown else {
                return format!("<div><strong>{label}</strong><p class=\"muted\">No answer in the record.</p></div>");
            };
            let whole = [super::answers::Run {
                text: shown.text.clone(),
                changed: false,
            }];
            let runs = if runs.is_empty() { &whole[..] } else { runs };
            let mut out = String::new();
            let mut left = ANSWER_CHARACTERS;
            let mut rest = 0usize;
            for run in runs {
                if left == 0 {
                    rest += run.text.chars().count();
                    continue;
                }
                let cut = run.text.char_indices().nth(left).map_or(run.text.len(), |(at, _)| at);
                let piece = &run.text[..cut];
                left -= piece.chars().count();
                rest += run.text[cut..].chars().count();
                if run.changed {
                    let _ = write!(out, "<{tag}>{}</{tag}>", esc(piece));
                } else {
                    out.push_str(&esc(piece));
                }
            }
            let more = if rest > 0 {
                format!("<p class=\"muted\">… ({rest} more characters)</p>")
            } else {
                String::new()
            };
            let cut = if shown.truncated {
                " <span class=\"muted\">(cut to its bound when recorded)</span>"
            } else {
                ""
            };
            format!("<div><strong>{label}</strong>{cut}<pre>{out}</pre>{more}</div>")
        };
    let note = both
        .note
        .as_deref()
        .map_or(String::new(), |n| format!("<p class=\"muted\">{}</p>", esc(n)));
    format!(
        "<td><details><summary>old · new</summary>{note}<div class=\"answers\">{}{}</div></details></td>",
        side("old", &both.old, &both.old_runs, "del"),
        side("new", &both.new, &both.new_runs, "ins")
    )
}

fn render_cases(
    o: &mut String,
    v: &View,
    answers: Option<&HashMap<usize, CaseAnswers>>,
) -> std::collections::HashSet<usize> {
    let mut listed = listed_cases(v);
    let eligible = listed.len();
    listed.truncate(MAX_CASE_ROWS);
    let count = |f: &dyn Fn(&CaseV) -> bool| listed.iter().filter(|(_, c)| f(c)).count();
    let filters: [(&str, &str, usize); 5] = [
        ("all", "All listed", listed.len()),
        ("regressed", "Regressed", count(&|c| c.status == "regressed")),
        ("improved", "Improved", count(&|c| c.status == "improved")),
        ("different", "Different verdicts", count(&|c| c.different())),
        ("missing", "Missing / errored", count(&|c| c.missing_or_errored())),
    ];
    o.push_str("<section class=\"panel\" id=\"cases-panel\"><h2>Cases</h2>");
    if let Some(over) = EvidenceView::new(v.evidence.as_ref(), v.test_set.num_cases, std::iter::empty()).over() {
        let _ = write!(
            o,
            "<p class=\"muted over\">Listed {over}; the cases not run are not listed.</p>"
        );
    }
    let same = v.cases.len() - eligible;
    let mut note = format!(
        "{} of {} test case(s) listed: the regressed first, then the improved, then those whose verdicts differ, are missing or errored.",
        listed.len(),
        v.cases.len()
    );
    if same > 0 {
        let _ = write!(
            note,
            " {same} case(s) where both models gave the same verdict are not listed."
        );
    }
    if eligible > listed.len() {
        let _ = write!(
            note,
            " Only the first {MAX_CASE_ROWS} of the {eligible} such cases are listed."
        );
    }
    note.push_str(" Every case is in the embedded report JSON.");
    let _ = write!(o, "<p class=\"muted\" data-testid=\"cases-note\">{}</p>", esc(&note));
    o.push_str("<p class=\"print-only\">Printed: every listed case, without a filter.</p>");
    o.push_str("<div class=\"tools\" role=\"group\" aria-label=\"Filter cases\">");
    for (i, (name, label, n)) in filters.iter().enumerate() {
        let _ = write!(
            o,
            "<button type=\"button\" data-filter=\"{name}\" aria-pressed=\"{}\">{label} ({n})</button>",
            i == 0
        );
    }
    o.push_str("<input type=\"search\" id=\"case-search\" placeholder=\"Search id, template, verdict…\" aria-label=\"Search cases\"/><span class=\"muted\" id=\"cases-shown\" aria-live=\"polite\"></span></div>");
    let _ = write!(
        o,
        "<table id=\"cases\"><thead><tr><th scope=\"col\">pipeline</th><th scope=\"col\">template</th><th scope=\"col\">expected</th><th scope=\"col\">old</th><th scope=\"col\">new</th><th scope=\"col\">status</th>{}</tr></thead><tbody>",
        if answers.is_some() { "<th scope=\"col\">answers</th>" } else { "" }
    );
    for (k, &(index, c)) in listed.iter().enumerate() {
        let mut tags = vec![c.status.as_str()];
        if c.different() {
            tags.push("different");
        }
        if c.missing_or_errored() {
            tags.push("missing");
        }
        let _ = writeln!(
            o,
            "<tr id=\"case-{index}\" class=\"{s}\" data-tags=\"{}\"><td class=\"mono\">{}</td><td>{}</td><td>{}</td>{}{}<td>{}</td>{}</tr>",
            esc(&tags.join(" ")),
            cell(&id_text(&c.pipeline_id)),
            cell(&text(&c.template_id)),
            cell(&text(&c.expected)),
            verdict_cell(
                &c.old_verdict,
                c.old_pass,
                c.old_missing,
                c.old_errored,
                &c.old_error,
                &runs_note(c.old_runs, c.old_passes)
            ),
            verdict_cell(
                &c.new_verdict,
                c.new_pass,
                c.new_missing,
                c.new_errored,
                &c.new_error,
                &runs_note(c.new_runs, c.new_passes)
            ),
            esc(&c.status.replace('_', " ")),
            match answers {
                Some(answers) if k < MAX_ANSWER_ROWS => answers_cell(answers.get(&index)),
                Some(_) => "<td class=\"muted\">—</td>".to_owned(),
                None => String::new(),
            },
            s = esc(&c.status),
        );
    }
    o.push_str("</tbody></table></section>\n");
    listed.into_iter().map(|(i, _)| i).collect()
}

/// The review's marked cases, each with its note and, when the cases' table lists it, a link
/// to its row.
fn render_review(o: &mut String, review: &crate::review::Listing, listed: &std::collections::HashSet<usize>) {
    let _ = write!(
        o,
        "<section class=\"panel\" id=\"review\" data-testid=\"review\"><h2>Review marks</h2><p>{}</p>",
        esc(&review.sentence())
    );
    if !review.cases.is_empty() {
        o.push_str("<table><thead><tr><th scope=\"col\">pipeline</th><th scope=\"col\">status</th><th scope=\"col\">mark</th><th scope=\"col\">note</th></tr></thead><tbody>");
        for c in review.cases.iter().take(MAX_CASE_ROWS) {
            let id = cell(&c.mark.pipeline_id.text);
            let id = if listed.contains(&c.index) {
                format!("<a href=\"#case-{}\">{id}</a>", c.index)
            } else {
                id
            };
            let _ = writeln!(
                o,
                "<tr><td class=\"mono\">{id}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
                esc(&c.status.replace('_', " ")),
                c.mark.mark.label(),
                esc(c.mark.note.as_deref().unwrap_or(""))
            );
        }
        o.push_str("</tbody></table>");
        if review.cases.len() > MAX_CASE_ROWS {
            let _ = write!(
                o,
                "<p class=\"muted\">Only the first {MAX_CASE_ROWS} of the {} marked cases are listed; every mark is in the review file.</p>",
                review.cases.len()
            );
        }
    }
    o.push_str("</section>\n");
}

fn render_quality(o: &mut String, v: &View) {
    let a = &v.audit;
    o.push_str(
        "<section class=\"panel\" id=\"data-quality\"><h2>Data quality</h2><h3>Audit log</h3><dl class=\"grid\">",
    );
    for (k, n) in [
        ("files", a.files),
        ("bytes", a.bytes),
        ("lines read", a.lines),
        ("blank lines", a.blank_lines),
        ("stage entries", a.stage_entries),
        ("completion entries", a.completion_entries),
        ("successful completions", a.successful_completions),
        ("pipelines", a.pipelines),
        ("successful pipelines", a.successful_pipelines),
        ("…without stage entries", a.successful_without_stages),
        ("…without an input", a.successful_without_input),
        ("candidate cases", a.candidates),
        ("test cases", v.test_set.num_cases),
    ] {
        let _ = write!(o, "<div><dt>{k}</dt><dd>{n}</dd></div>");
    }
    o.push_str("</dl>");
    let sizing = if v.test_set.insufficient {
        "fewer candidates than min_samples: the test set is empty"
    } else if v.test_set.sampled {
        "sampled down to max_samples"
    } else {
        "every candidate is a test case"
    };
    let _ = write!(o, "<p class=\"muted\">Test set: {sizing}.</p>");
    if a.skipped.is_empty() {
        o.push_str("<p class=\"muted\">No line was skipped.</p>");
    } else {
        o.push_str("<h3>Skipped lines</h3><ul>");
        for (reason, stat) in &a.skipped {
            let at: Vec<String> = stat
                .first_lines
                .iter()
                .map(|l| format!("{}:{}", l.file, l.line))
                .collect();
            let _ = write!(
                o,
                "<li><strong>{} × {}</strong> — first at {}</li>",
                stat.count,
                esc(reason),
                cell(&at.join(", "))
            );
        }
        o.push_str("</ul>");
    }
    let (vo, vn) = (&v.verdicts.old, &v.verdicts.new);
    let _ = write!(
        o,
        "<h3>Verdict files</h3><table class=\"two\"><thead><tr><td></td><th scope=\"col\" class=\"num\">old</th><th scope=\"col\" class=\"num\">new</th></tr></thead><tbody><tr><th scope=\"row\">format</th><td class=\"num\">{}</td><td class=\"num\">{}</td></tr>",
        esc(&vo.format),
        esc(&vn.format)
    );
    type Count = fn(&CountsV) -> u64;
    let rows: [(&str, Count); 11] = [
        ("records", |m| m.records),
        ("test cases", |m| m.cases),
        ("passed", |m| m.passed),
        ("wrong verdict", |m| m.wrong),
        ("missing verdict", |m| m.missing),
        ("runner errors", |m| m.errored),
        ("composite verdicts", |m| m.composite),
        ("not test cases (extra)", |m| m.extra),
        ("duplicate records", |m| m.duplicates),
        ("conflicting duplicates", |m| m.conflicting),
        ("stage entries ignored", |m| m.ignored_stage_entries),
    ];
    for (label, get) in rows {
        let _ = write!(
            o,
            "<tr><th scope=\"row\">{label}</th><td class=\"num\">{}</td><td class=\"num\">{}</td></tr>",
            get(vo),
            get(vn)
        );
    }
    let _ = write!(
        o,
        "<tr><th scope=\"row\">pass rate</th><td class=\"num\">{}</td><td class=\"num\">{}</td></tr></tbody></table>",
        pct(vo.pass_rate),
        pct(vn.pass_rate)
    );
    for (side, m) in [("old", &v.verdicts.old), ("new", &v.verdicts.new)] {
        if !m.conflicting_ids.is_empty() {
            let _ = write!(
                o,
                "<p>{side}: conflicting duplicate verdicts for {}</p>",
                cell(&m.conflicting_ids.join(", "))
            );
        }
    }
    if let (Some(to), Some(tn)) = (&v.trajectories.old, &v.trajectories.new) {
        let _ = write!(
            o,
            "<h3>Trajectory files</h3><p>old: {} result(s), {} without a judge score, mean {} · new: {} result(s), {} without a judge score, mean {}</p>",
            to.results,
            to.skipped_without_judge,
            plain(to.mean),
            tn.results,
            tn.skipped_without_judge,
            plain(tn.mean)
        );
    }
    if let Some(cost) = &v.cost {
        let _ = write!(
            o,
            "<h3>{}</h3><table class=\"two\" id=\"cost\"><thead><tr><td></td><th scope=\"col\" class=\"num\">old</th><th scope=\"col\" class=\"num\">new</th></tr></thead><tbody>",
            super::cost::CAPTION
        );
        for (label, old, new) in super::cost::rows(cost) {
            let _ = write!(
                o,
                "<tr><th scope=\"row\">{label}</th><td class=\"num\">{}</td><td class=\"num\">{}</td></tr>",
                cell(&old),
                cell(&new)
            );
        }
        o.push_str("</tbody></table>");
    }
    if v.warnings.is_empty() {
        o.push_str("<h3>Warnings</h3><p class=\"muted\">None.</p>");
    } else {
        let _ = write!(o, "<h3>Warnings ({})</h3><ul id=\"warnings\">", v.warnings.len());
        for w in &v.warnings {
            let _ = write!(o, "<li>{}</li>", cell(w));
        }
        o.push_str("</ul>");
    }
    o.push_str("</section>\n");
}

fn render_policy(o: &mut String, v: &View) {
    o.push_str("<section class=\"panel\" id=\"policy\"><h2>Policy</h2><table><tbody>");
    for (k, val) in &v.policy {
        let _ = write!(
            o,
            "<tr><th scope=\"row\" class=\"mono\">{}</th><td>{}</td></tr>",
            esc(k),
            cell(&policy_value(val))
        );
    }
    o.push_str("</tbody></table><h2>Inputs</h2><table><thead><tr><th scope=\"col\">role</th><th scope=\"col\">file</th><th scope=\"col\" class=\"num\">bytes</th><th scope=\"col\">sha256</th></tr></thead><tbody>");
    for f in &v.inputs {
        let digest = match f.sha256.as_deref() {
            Some(s) if !s.is_empty() => format!("<code>{}</code>", esc(s)),
            _ => "<em>not computed</em>".into(),
        };
        let _ = write!(
            o,
            "<tr><td>{}</td><td>{}</td><td class=\"num\">{}</td><td>{digest}</td></tr>",
            esc(&f.role.replace('_', " ")),
            cell(&f.name),
            f.bytes
        );
    }
    o.push_str("</tbody></table></section>\n");
}

#[cfg(test)]
mod tests;
