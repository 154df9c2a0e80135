//! `test-set`, `evaluate` and `policy`: the audit and verdict files read into the core's
//! evaluation session (pass 1 on every core, pass 2 while the verdict files are read), and the
//! policy resolved from defaults, file and flags. `verify --reproduce` evaluates through
//! [`evaluate_inputs`].

use crate::cli::exit::{input_error, write_output, EXIT_BLOCKED, EXIT_INCONCLUSIVE, EXIT_OK};
use crate::cli::files::resolve_policy;
use crate::decision::Outcome;
use crate::decision::Rules;
use crate::input::{Role, Side};
use crate::native::{self, file_name, ReadOptions, DEFAULT_SEGMENT};
use crate::policy::{self, Cluster, GatePolicy, Mode, OnInsufficient, PolicyInput, Repeats};
use crate::render::guardrails::GuardrailsView;
use crate::render::sequential;
use crate::report::GateReport;
use crate::session::{Session, SessionError};
use crate::trajectory::parse_trajectories;
use crate::verdicts::{parse_verdicts_keeping_with_progress, KeepSet, Verdicts};
use anyhow::{anyhow, Result};
use clap::Args;
use std::path::{Path, PathBuf};

/// A mapped verdict file's pages are given back this many bytes at a time, behind the reading.
const VERDICT_RELEASE: usize = 4 << 20;

#[derive(Args)]
pub(crate) struct AuditArgs {
    /// An audit log (JSONL); repeat for several files, read as one stream in the order given.
    #[arg(long, value_name = "FILE", required = true)]
    audit: Vec<PathBuf>,
    /// A policy file (JSON, the shape of a report's `policy`; every field optional). Flags
    /// override it; absent fields are the defaults (`deploy-gate policy` prints them).
    #[arg(long, value_name = "FILE")]
    policy: Option<PathBuf>,
    #[command(flatten)]
    sample: SampleFlags,
    /// Threads scanning the audit log (0: one per core; for `evaluate` one more thread hashes it).
    #[arg(long, value_name = "N", default_value_t = 0)]
    threads: usize,
    /// Segment size in bytes for pass 1 (the tests set it low to split small files).
    #[arg(long, value_name = "BYTES", default_value_t = DEFAULT_SEGMENT, hide = true)]
    segment_size: u64,
    /// Copy plain files into memory instead of mapping them (the tests check both ways).
    #[arg(long, hide = true)]
    no_mmap: bool,
}

/// The test-set part of the policy, as flags: each absent unless given (the defaults and the
/// policy file are layered under them by `crate::policy`).
#[derive(Args)]
pub(crate) struct SampleFlags {
    /// Fewer candidate cases than this give an empty test set.
    #[arg(long, value_name = "N", value_parser = policy::parse_min_samples)]
    min_samples: Option<usize>,
    /// Sample the test set down to N cases (`none`: keep all).
    #[arg(long, value_name = "N", value_parser = |s: &str| policy::parse_max_samples(s).map(MaxSamples))]
    max_samples: Option<MaxSamples>,
    /// Seed of the reproducible sample.
    #[arg(long, value_name = "N", value_parser = policy::parse_seed)]
    seed: Option<u64>,
    /// Verdicts of a successful run, comma-separated (case-insensitive).
    #[arg(long, value_name = "A,B,…", value_delimiter = ',')]
    pass_verdicts: Option<Vec<String>>,
}

/// `max_samples` as a flag (`Option<Option<_>>` means something else to clap).
#[derive(Clone, Copy)]
struct MaxSamples(Option<usize>);

impl SampleFlags {
    fn input(&self) -> PolicyInput {
        PolicyInput {
            min_samples: self.min_samples,
            max_samples: self.max_samples.map(|m| m.0),
            seed: self.seed,
            pass_verdicts: self.pass_verdicts.clone(),
            ..PolicyInput::default()
        }
    }
}

/// The decision part of the policy, as flags.
#[derive(Args)]
pub(crate) struct DecisionFlags {
    /// Task regression tolerance: blocked when new < old − X.
    #[arg(long, value_name = "X", value_parser = policy::parse_task_tol)]
    task_tol: Option<f64>,
    /// Trajectory regression tolerance.
    #[arg(long, value_name = "X", value_parser = policy::parse_traj_tol)]
    traj_tol: Option<f64>,
    /// Empty or too small test set: `block` (fail closed) or `approve` (the reference's way).
    #[arg(long, value_name = "block|approve")]
    on_insufficient: Option<OnInsufficient>,
    /// The rule: `point` (the reference: new < old − tolerance blocks) or `non_inferiority`
    /// (approve only if the interval's lower bound for new − old is ≥ −tolerance).
    #[arg(long, value_name = "point|non_inferiority")]
    mode: Option<Mode>,
    /// Confidence level of the intervals.
    #[arg(long, value_name = "X", value_parser = policy::parse_confidence)]
    confidence: Option<f64>,
    /// How cases are grouped for the intervals: `template` (cluster-robust intervals, cases of
    /// one template correlated) or `none` (every case independent).
    #[arg(long, value_name = "template|none")]
    cluster: Option<Cluster>,
    /// Which verdicts of a case count when a verdict file holds several: `last` (the reference's
    /// rule) or `mean` (a case scores the share of its verdicts that pass).
    #[arg(long, value_name = "last|mean")]
    repeats: Option<Repeats>,
    /// Decide the task criterion by the sequential rule (an anytime-valid confidence sequence
    /// over the cases, or templates, in the seed's order; needs `--mode non_inferiority`).
    #[arg(long)]
    sequential: bool,
    /// The sequential rule's budget: the most cases (templates under `cluster: template`) to
    /// use [default: the test set's size].
    #[arg(long, value_name = "N", value_parser = policy::parse_budget)]
    budget: Option<usize>,
    /// The most test cases that may lack a verdict on a side before the decision is
    /// inconclusive: a fraction (`0.05`) or a percentage (`5%`) of the cases run [default: 5%].
    #[arg(long, value_name = "X", value_parser = policy::parse_max_missing)]
    max_missing: Option<f64>,
}

impl DecisionFlags {
    fn input(&self) -> PolicyInput {
        PolicyInput {
            task_tol: self.task_tol,
            traj_tol: self.traj_tol,
            on_insufficient: self.on_insufficient,
            mode: self.mode,
            confidence: self.confidence,
            cluster: self.cluster,
            repeats: self.repeats,
            sequential: self.sequential.then_some(true),
            budget: self.budget,
            max_missing: self.max_missing,
            ..PolicyInput::default()
        }
    }
}

#[derive(Args)]
pub(crate) struct EvaluateArgs {
    #[command(flatten)]
    audit: AuditArgs,
    /// The old (deployed) model's verdicts: JSONL, JSON array, JSON object or CSV/TSV.
    #[arg(long, value_name = "FILE")]
    old_verdicts: PathBuf,
    /// The new (retrained) model's verdicts.
    #[arg(long, value_name = "FILE")]
    new_verdicts: PathBuf,
    /// The old model's trajectory-evaluation results (JSONL or JSON array).
    #[arg(long, value_name = "FILE", requires = "new_trajectories")]
    old_trajectories: Option<PathBuf>,
    /// The new model's trajectory-evaluation results.
    #[arg(long, value_name = "FILE", requires = "old_trajectories")]
    new_trajectories: Option<PathBuf>,
    #[command(flatten)]
    decision: DecisionFlags,
    /// Write the report to FILE instead of stdout.
    #[arg(long, value_name = "FILE")]
    out: Option<PathBuf>,
    /// Also write the report as one standalone HTML file (no script file, no network).
    #[arg(long, value_name = "FILE")]
    html: Option<PathBuf>,
    #[command(flatten)]
    ci: crate::cli::ci::CiOutputs,
    /// The rules the report is made under: `current`, or `before` (the previous build's report,
    /// byte for byte: no evidence rules, a sequential report's figures over the whole test set).
    #[arg(long, value_name = "current|before", default_value = "current", value_parser = parse_rules)]
    rules: Rules,
}

fn parse_rules(text: &str) -> Result<Rules, String> {
    match text {
        "current" => Ok(Rules::Current),
        "before" => Ok(Rules::Before),
        other => Err(format!("--rules must be `current` or `before`, not `{other}`")),
    }
}

impl AuditArgs {
    /// How the files are read.
    fn read_options(&self) -> ReadOptions {
        ReadOptions::new(self.threads)
            .with_segment(self.segment_size)
            .with_map(!self.no_mmap)
    }
}

/// `test-set`: the test set as JSONL, and a line about it on stderr. Neither carries the audit
/// files' sha256, so they are not hashed: the scan has every core.
pub fn test_set_cmd(audit: &AuditArgs, out: Option<&Path>) -> Result<u8> {
    let policy = resolve_policy(audit.policy.as_deref(), audit.sample.input())?;
    let session = build_test_set(&audit.audit, &policy, audit.read_options().with_hash(false))?;
    let ts = session.test_set().expect("pass 2 ended");
    write_output(out, ts.to_jsonl().as_bytes())?;
    eprintln!(
        "deploy-gate: {} test case(s) from {} candidate(s){}",
        ts.cases.len(),
        ts.candidates,
        if ts.insufficient {
            format!(
                " — fewer than min_samples {}, so the test set is empty",
                policy.test_set.min_samples
            )
        } else if ts.sampled {
            format!(" (sampled, seed {})", policy.test_set.seed)
        } else {
            String::new()
        }
    );
    Ok(EXIT_OK)
}

/// `evaluate`: the report, a summary on stderr, and the decision as the exit code.
pub fn evaluate_cmd(args: &EvaluateArgs) -> Result<u8> {
    if args.ci.review_given() && args.html.is_none() && !args.ci.markdown_asked() {
        return Err(anyhow!(
            "--review lists the marked cases in the Markdown summary and the HTML report: give --markdown FILE or --html FILE (the JSON report never carries marks)"
        ));
    }
    let flags = args.decision.input().or(args.audit.sample.input());
    let policy = resolve_policy(args.audit.policy.as_deref(), flags)?;
    let (report, session) = evaluate_files(args, &policy)?;
    let json = report.to_json();
    let listing = args.ci.review_listing(&json)?;
    args.ci.write(&report, &json, args.out.as_deref(), listing.as_ref())?;
    if let Some(path) = &args.html {
        let answers = html_answers(&session, &json, args)?;
        let extras = crate::render::html::Extras {
            review: listing.as_ref(),
            answers: answers.as_ref(),
        };
        let html = crate::render::html::report_html_with(&json, &extras).map_err(|e| anyhow!("{e}"))?;
        write_output(Some(path), html.as_bytes())?;
    }
    write_output(args.out.as_deref(), json.as_bytes())?;
    print_summary(&report);
    Ok(match report.decision.outcome() {
        Outcome::Approved => EXIT_OK,
        Outcome::Blocked => EXIT_BLOCKED,
        Outcome::Inconclusive => EXIT_INCONCLUSIVE,
    })
}

/// `policy`: the resolved policy, and its digest on stderr.
pub fn policy_cmd(file: Option<&Path>, sample: &SampleFlags, decision: &DecisionFlags) -> Result<u8> {
    let policy = resolve_policy(file, decision.input().or(sample.input()))?;
    let digest = policy.digest().map_err(|e| anyhow!("{e}"))?;
    let mut text = serde_json::to_string_pretty(&policy)?;
    text.push('\n');
    write_output(None, text.as_bytes())?;
    eprintln!("deploy-gate: policy sha256:{digest}");
    Ok(EXIT_OK)
}

/// Pass 1 over the audit files (all cores), then pass 2 over just the chosen pipelines' ranges.
fn build_test_set(paths: &[PathBuf], policy: &GatePolicy, opts: ReadOptions) -> Result<Session> {
    let mut session = Session::new(policy.clone());
    native::build_test_set(&mut session, paths, opts)?;
    Ok(session)
}

/// The input files of one evaluation.
pub struct InputPaths<'a> {
    pub audit: &'a [PathBuf],
    pub old_verdicts: &'a Path,
    pub new_verdicts: &'a Path,
    pub old_trajectories: Option<&'a Path>,
    pub new_trajectories: Option<&'a Path>,
    pub threads: usize,
}

fn evaluate_files(args: &EvaluateArgs, policy: &GatePolicy) -> Result<(GateReport, Session)> {
    let inputs = InputPaths {
        audit: &args.audit.audit,
        old_verdicts: &args.old_verdicts,
        new_verdicts: &args.new_verdicts,
        old_trajectories: args.old_trajectories.as_deref(),
        new_trajectories: args.new_trajectories.as_deref(),
        threads: args.audit.threads,
    };
    evaluate_reading(&inputs, policy, args.audit.read_options(), &[args.rules])
        .map(|(mut reports, session)| (reports.remove(0), session))
}

/// Reads every input once and makes the report under each of `rules`, in order (files read
/// the default way, on `inputs.threads`).
pub fn evaluate_inputs(inputs: &InputPaths<'_>, policy: &GatePolicy, rules: &[Rules]) -> Result<Vec<GateReport>> {
    evaluate_reading(inputs, policy, ReadOptions::new(inputs.threads), rules).map(|(reports, _)| reports)
}

/// Reads every input as `opts` says and evaluates the gate: pass 1 on all threads into the
/// session, then pass 2 while two more threads read the verdict files, then the report.
fn evaluate_reading(
    inputs: &InputPaths<'_>,
    policy: &GatePolicy,
    opts: ReadOptions,
    rules: &[Rules],
) -> Result<(Vec<GateReport>, Session)> {
    let mut session = Session::new(policy.clone());
    let (map, watch) = (opts.map, opts.watch.clone());
    let gzipped = native::scan_into(&mut session, inputs.audit, opts)?;
    session.needed_ranges()?;
    // The pipeline table is not needed any more: free it before the verdict files are read.
    session.release_pipelines();
    let builder = session.test_set_builder()?;
    // Keep whole records only for the test cases: the rest are counted, not stored.
    let keep: KeepSet = builder.selection().shared_ids().cloned().collect();
    let verdicts = |role: Role, path: &Path, keep| -> Result<Verdicts> {
        let bytes = native::read_whole(path, "verdict file", map)?;
        // What the reading has passed is given back a few MiB at a time, so a mapped verdict file
        // adds a window to the peak memory, not its size.
        let mut from = 0;
        let mut progress = |at: usize| {
            if at < from {
                from = at;
            } else if at >= from + VERDICT_RELEASE {
                from = bytes.release(from, at);
            }
        };
        parse_verdicts_keeping_with_progress(role, &file_name(path), &bytes, keep, &mut progress)
            .map_err(|e| input_error(path, e))
    };
    // The two verdict files are read side by side, while pass 2 reads the test cases.
    let (pass2, old, new) = std::thread::scope(|scope| {
        // (One copy of the ids for each file, the second being the set itself.)
        let old_keep = keep.clone();
        let old = scope.spawn(|| verdicts(Role::OldVerdicts, inputs.old_verdicts, old_keep));
        let new = scope.spawn(|| verdicts(Role::NewVerdicts, inputs.new_verdicts, keep));
        let pass2 = native::read_chosen(inputs.audit, builder, &gzipped, &watch);
        let joined = |h: std::thread::ScopedJoinHandle<'_, _>| h.join().expect("a verdict thread panicked");
        (pass2, joined(old), joined(new))
    });
    pass2?;
    session.finish_test_set()?;
    session.set_verdicts(Side::Old, old?);
    session.set_verdicts(Side::New, new?);
    for (side, role, path) in [
        (Side::Old, Role::OldTrajectories, inputs.old_trajectories),
        (Side::New, Role::NewTrajectories, inputs.new_trajectories),
    ] {
        let Some(path) = path else { continue };
        let bytes = native::read_whole(path, "trajectory file", map)?;
        let parsed = parse_trajectories(role, &file_name(path), &bytes).map_err(|e| input_error(path, e))?;
        session.set_trajectories(side, parsed);
    }
    // A verdict file the report refuses (an untyped id the log holds with both types) is named
    // by its path, as when it was read.
    let reports = rules
        .iter()
        .map(|&r| {
            session.report_under(r).map_err(|e| match e {
                SessionError::Input(e) if e.role == Role::OldVerdicts => input_error(inputs.old_verdicts, e),
                SessionError::Input(e) if e.role == Role::NewVerdicts => input_error(inputs.new_verdicts, e),
                other => other.into(),
            })
        })
        .collect::<Result<Vec<_>>>()?;
    Ok((reports, session))
}

/// The answers the HTML report of `json` shows ([`crate::render::html::answer_cases`]), read
/// from the verdict files by byte range; `None` when neither file carries answers.
fn html_answers(
    session: &Session,
    json: &str,
    args: &EvaluateArgs,
) -> Result<Option<std::collections::HashMap<usize, crate::render::html::CaseAnswers>>> {
    if !session.carries_outputs(Side::Old) && !session.carries_outputs(Side::New) {
        return Ok(None);
    }
    let cases = crate::render::html::answer_cases(json).map_err(|e| anyhow!("{e}"))?;
    let mut answers = std::collections::HashMap::new();
    for (side, path) in [(Side::Old, &args.old_verdicts), (Side::New, &args.new_verdicts)] {
        if !session.carries_outputs(side) {
            continue;
        }
        let read = crate::native::answers::read_case_answers(session, side, path, &cases).map_err(|e| anyhow!(e))?;
        for (index, answer) in read {
            let entry: &mut crate::render::html::CaseAnswers = answers.entry(index).or_default();
            *match side {
                Side::Old => &mut entry.old,
                Side::New => &mut entry.new,
            } = Some(answer);
        }
    }
    Ok(Some(answers))
}

/// `3000` as `3,000`.
fn grouped(n: usize) -> String {
    let digits = n.to_string();
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

fn print_summary(r: &GateReport) {
    let d = &r.decision;
    // Whether the task rule is what is open (with guardrails, it may be only they).
    let task_open = r.guardrails.is_none() || crate::guardrail::task_rule_open(&d.reason);
    let missing_open = d.reason.contains("missing verdicts (");
    let verdict = match d.outcome() {
        Outcome::Approved => "APPROVED — deploy the new model",
        Outcome::Blocked => "BLOCKED — keep the old model",
        Outcome::Inconclusive if missing_open => {
            "INCONCLUSIVE — keep the old model; too many test cases lack a verdict"
        }
        Outcome::Inconclusive if task_open => {
            "INCONCLUSIVE — keep the old model; the evidence shows neither non-inferiority nor a regression"
        }
        Outcome::Inconclusive => {
            "INCONCLUSIVE — keep the old model; the task rule is settled, but a blocking guardrail is shown neither within nor beyond its limit"
        }
    };
    let skipped: u64 = r.audit.skipped.values().map(|s| s.count).sum();
    eprintln!(
        "deploy-gate: {verdict} (rests on {} of {} test cases)",
        grouped(r.rests_on()),
        grouped(r.test_set.num_cases)
    );
    // A sequential report's figures are over the used units' cases.
    let over_used = r.evidence.as_ref().filter(|e| e.over == "used");
    let over = over_used.map_or(String::new(), |e| {
        format!(" over the {} cases used", grouped(e.rests_on))
    });
    eprintln!("  reason:     {}", d.reason);
    eprintln!(
        "  test set:   {} case(s) of {} candidate(s); audit: {} line(s), {} skipped",
        r.test_set.num_cases, r.test_set.candidates, r.audit.lines, skipped
    );
    eprintln!(
        "  task:       {:.4} → {:.4} (Δ {:+.4}, tolerance {}){over}",
        d.task_old, d.task_new, d.task_delta, d.details.task_regression_tol
    );
    match (d.trajectory_old, d.trajectory_new) {
        (Some(o), Some(n)) => eprintln!(
            "  trajectory: {o:.4} → {n:.4} (Δ {:+.4}, tolerance {})",
            d.trajectory_delta, d.details.trajectory_regression_tol
        ),
        _ => eprintln!("  trajectory: not checked"),
    }
    let st = &r.stats.task;
    let method = match st.delta.method {
        "paired_t" => "paired t",
        _ => "Newcombe",
    };
    let mcnemar = match &st.mcnemar {
        Some(m) => format!("McNemar b={} c={} p={:.3}", m.b, m.c, m.p_exact),
        None => "McNemar: none (several verdicts a case)".to_owned(),
    };
    // After a sequential stop the fixed-sample interval and test are descriptive: the decision's
    // evidence is the confidence sequence.
    let (label, descriptive) = if over_used.is_some() {
        (
            "descriptive:",
            format!("{over}, descriptive, not the decision's evidence"),
        )
    } else {
        ("evidence:  ", String::new())
    };
    eprintln!(
        "  {label} new − old {:+.4}, {}% interval [{:+.4}, {:+.4}] ({method}); {mcnemar}{descriptive}",
        st.delta.estimate,
        r.stats.confidence * 100.0,
        st.delta.low,
        st.delta.high,
    );
    let uses = if over_used.is_some() {
        " descriptive"
    } else if r.policy.mode == Mode::NonInferiority {
        "; the rule uses it"
    } else {
        ""
    };
    match &st.clustered {
        Some(Some(c)) => eprintln!(
            "  clustered:  {} clusters (templates), design effect {}: [{:+.4}, {:+.4}] (cluster-robust t{uses}){over}",
            c.clusters,
            c.design_effect.map_or("—".to_owned(), |d| format!("{d:.2}")),
            c.delta.low,
            c.delta.high
        ),
        Some(None) if r.policy.cluster() == Cluster::Template && r.test_set.num_cases > 0 => {
            eprintln!(
                "  clustered:  none (every case has the same template){uses}",
                uses = if uses.is_empty() {
                    ""
                } else if over_used.is_some() {
                    "; descriptive"
                } else {
                    "; the rule uses the interval above"
                }
            )
        }
        _ => {}
    }
    if let (Some(o), Some(n)) = (r.verdicts.old.runs, r.verdicts.new.runs) {
        eprintln!(
            "  runs:       old {o} verdict(s), {} pass; new {n}, {} pass (every verdict of a case counts)",
            r.verdicts.old.passes.unwrap_or(0),
            r.verdicts.new.passes.unwrap_or(0)
        );
    }
    // A sequential decision: how it stopped, after how many of the budget; stopped at the
    // budget, it is continued (not settled by a fresh count).
    let sequential = r.sequential.as_ref().and_then(|q| serde_json::to_value(q).ok());
    let continuation = sequential.as_ref().and_then(sequential::continuation);
    if let Some(stop) = sequential.as_ref().and_then(sequential::stop) {
        eprintln!("  sequential: {stop} (betting confidence sequence)");
    }
    if let Some(q) = r
        .sequential
        .as_ref()
        .filter(|_| r.policy.cluster() == Cluster::Template)
    {
        if let Some(need) = q.min_units {
            let note = crate::sequential::min_units_note(q.available, need).map_or(String::new(), |n| format!(": {n}"));
            eprintln!(
                "  min units:  {} of {} templates before any decision is possible{note}",
                need.map_or("—".to_owned(), grouped),
                grouped(q.available)
            );
        }
    }
    // The guardrails, one line each: blocking then advisory, the failing ones first.
    if let Some(g) = r.guardrails.as_ref().and_then(GuardrailsView::of) {
        for row in g.rows(true).into_iter().chain(g.rows(false)) {
            eprintln!("  guardrails: {}", row.line(|id| format!("{id:?}")));
        }
    }
    if !task_open {
        // More cases for the task rule would settle nothing: a guardrail is what is open.
    } else if let (Outcome::Inconclusive, Some(c)) = (d.outcome(), &continuation) {
        let mut c = c.trim_end_matches('.').to_owned();
        if let Some(first) = c.get(..1) {
            c.replace_range(..1, &first.to_lowercase());
        }
        eprintln!("  settle:     {c}");
    } else if d.outcome() == Outcome::Inconclusive {
        match st.sample_size.cases_needed {
            Some(n) => eprintln!(
                "  settle:     about {n} case(s) would settle it (at the observed discordance; this test set has {})",
                st.sample_size.num_cases
            ),
            None => eprintln!("  settle:     with a tolerance of 0, no number of cases shows non-inferiority"),
        }
    }
    let (o, n) = (&r.verdicts.old, &r.verdicts.new);
    // Missing: counted over the cases run (the `evidence` object's), never the not run.
    let (old_missing, new_missing) = r
        .evidence
        .as_ref()
        .map_or((o.missing, n.missing), |e| (e.missing.old, e.missing.new));
    eprintln!(
        "  verdicts:   old {old_missing} missing, {} errored; new {new_missing} missing, {} errored{}",
        o.errored,
        n.errored,
        if over.is_empty() {
            String::new()
        } else {
            format!(
                " (missing: of the cases run; errored: over the {} cases used)",
                grouped(r.rests_on())
            )
        }
    );
    if let Some(not_run) = r.evidence.as_ref().and_then(|e| e.not_run).filter(|&n| n > 0) {
        eprintln!(
            "  not run:    {} test case(s) neither model answered (the sequential rule stopped first)",
            grouped(not_run)
        );
    }
    if !r.warnings.is_empty() {
        eprintln!("  warnings:   {} (listed in the report)", r.warnings.len());
    }
}
