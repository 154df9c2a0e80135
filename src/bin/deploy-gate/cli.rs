//! The command line: flags, files, exit codes and messages around the sans-IO core.

use anyhow::{anyhow, Context, Result};
use clap::{Args, Parser, Subcommand};
use deploy_gate::audit::AuditIndex;
use deploy_gate::compat::PassSet;
use deploy_gate::decision::{check_confidence, GatePolicy, Mode, OnInsufficient};
use deploy_gate::error::InputError;
use deploy_gate::report::{evaluate, GateInputs, GateReport};
use deploy_gate::testset::{TestSet, TestSetPolicy};
use deploy_gate::trajectory::{parse_trajectories, Trajectories};
use deploy_gate::verdicts::{parse_verdicts_keeping, KeepSet, Verdicts};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

/// Exit code: the gate approved the deploy (or the command succeeded).
pub const EXIT_OK: u8 = 0;
/// Exit code: unusable input, I/O error or usage error.
pub const EXIT_INPUT: u8 = 1;
/// Exit code: the gate blocked the deploy (keep the old model).
pub const EXIT_BLOCKED: u8 = 3;

#[derive(Parser)]
#[command(
    name = "deploy-gate",
    version,
    about = "Gate the deployment of a retrained agent model"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Build the ground-truth test set from audit logs; prints JSONL, one case per line.
    TestSet {
        #[command(flatten)]
        audit: AuditArgs,
        /// Write to FILE instead of stdout.
        #[arg(long, value_name = "FILE")]
        out: Option<PathBuf>,
    },
    /// Score the old and the new model and decide; prints the GateReport JSON.
    ///
    /// Exit code 0: approved. 3: blocked (keep the old model). 1: unusable input or usage.
    Evaluate(EvaluateArgs),
    /// Make an Ed25519 key pair: NAME.key.pem (mode 0600) and NAME.pub.pem; prints the key id.
    Keygen {
        /// The files' name, without extension.
        #[arg(long, value_name = "NAME")]
        out: PathBuf,
    },
    /// Print the model digest of a file or directory: sha256:<hex>.
    Digest {
        /// A model file or directory.
        path: PathBuf,
    },
    /// Sign a report's decision for a model and a target: a DSSE envelope (in-toto VSA).
    Sign(crate::sign::SignArgs),
    /// Verify a signed decision. Exit 0: valid (whatever the decision). 2: invalid, with the
    /// failing check named. 1: usage or I/O.
    Verify(crate::sign::VerifyArgs),
    /// Verify, then deploy (PASSED) or keep the old model (FAILED), once per decision. Exit 0:
    /// deployed. 3: kept the old model. 2: verification failed (or applied already). 4:
    /// deployed, but the ledger could not record it. 1: usage or I/O (nothing deployed).
    Apply(crate::apply::ApplyArgs),
    /// Restore the config saved by the last `apply` (upstream's backup name, else NAME.backup).
    Rollback {
        /// The serving config.
        #[arg(long, value_name = "CONFIG.yaml")]
        config: PathBuf,
        /// The ledger `apply` used (default: NAME.deploy-gate-ledger.jsonl beside the config);
        /// the decision rolled back is recorded there.
        #[arg(long, value_name = "FILE")]
        ledger: Option<PathBuf>,
    },
}

#[derive(Args)]
struct AuditArgs {
    /// An audit log (JSONL); repeat for several files, read as one stream in the order given.
    #[arg(long, value_name = "FILE", required = true)]
    audit: Vec<PathBuf>,
    /// Fewer candidate cases than this give an empty test set.
    #[arg(long, value_name = "N", default_value_t = 20)]
    min_samples: usize,
    /// Sample the test set down to N cases (`none`: keep all).
    #[arg(long, value_name = "N", default_value = "200", value_parser = parse_max)]
    max_samples: MaxSamples,
    /// Seed of the reproducible sample.
    #[arg(long, value_name = "N", default_value_t = 0)]
    seed: u64,
    /// Verdicts of a successful run, comma-separated (case-insensitive).
    #[arg(
        long,
        value_name = "A,B,…",
        default_value = "PASS,APPROVE,COMPLETE",
        value_delimiter = ','
    )]
    pass_verdicts: Vec<String>,
    /// Threads scanning the audit log (0: one per core; one more thread reads and hashes it).
    #[arg(long, value_name = "N", default_value_t = 0)]
    threads: usize,
}

#[derive(Clone, Copy)]
struct MaxSamples(Option<usize>);

fn parse_max(s: &str) -> Result<MaxSamples, String> {
    match s {
        "none" | "all" => Ok(MaxSamples(None)),
        n => n
            .parse()
            .map(|n| MaxSamples(Some(n)))
            .map_err(|_| format!("`{n}` is not a number or `none`")),
    }
}

fn parse_confidence(s: &str) -> Result<f64, String> {
    s.parse::<f64>()
        .map_err(|_| format!("`{s}` is not a number"))
        .and_then(check_confidence)
}

fn parse_tol(s: &str) -> Result<f64, String> {
    match s.parse::<f64>() {
        Ok(x) if x.is_finite() => Ok(x),
        _ => Err(format!("`{s}` is not a finite number")),
    }
}

#[derive(Args)]
struct EvaluateArgs {
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
    /// Task regression tolerance: blocked when new < old − X.
    #[arg(long, value_name = "X", default_value = "0.0", value_parser = parse_tol)]
    task_tol: f64,
    /// Trajectory regression tolerance.
    #[arg(long, value_name = "X", default_value = "0.05", value_parser = parse_tol)]
    traj_tol: f64,
    /// Empty or too small test set: `block` (fail closed) or `approve` (the reference's way).
    #[arg(long, value_name = "block|approve", default_value = "block")]
    on_insufficient: OnInsufficient,
    /// The rule: `point` (the reference: new < old − tolerance blocks) or `non_inferiority`
    /// (approve only if the interval's lower bound for new − old is ≥ −tolerance).
    #[arg(long, value_name = "point|non_inferiority", default_value = "point")]
    mode: Mode,
    /// Confidence level of the intervals.
    #[arg(long, value_name = "X", default_value = "0.95", value_parser = parse_confidence)]
    confidence: f64,
    /// Write the report to FILE instead of stdout.
    #[arg(long, value_name = "FILE")]
    out: Option<PathBuf>,
}

impl AuditArgs {
    fn policy(&self) -> GatePolicy {
        GatePolicy {
            test_set: TestSetPolicy {
                min_samples: self.min_samples,
                max_samples: self.max_samples.0,
                seed: self.seed,
            },
            pass_verdicts: PassSet::new(&self.pass_verdicts),
            ..GatePolicy::default()
        }
    }
}

pub fn main() -> ExitCode {
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) => {
            let code = if e.use_stderr() { EXIT_INPUT } else { EXIT_OK };
            let _ = e.print();
            return ExitCode::from(code);
        }
    };
    match run(cli) {
        Ok(code) => ExitCode::from(code),
        Err(e) => {
            eprintln!("deploy-gate: error: {e:#}");
            ExitCode::from(EXIT_INPUT)
        }
    }
}

fn run(cli: Cli) -> Result<u8> {
    match cli.command {
        Command::TestSet { audit, out } => {
            let policy = audit.policy();
            let (_, ts) = build_test_set(&audit.audit, &policy, audit.threads)?;
            write_output(out.as_deref(), ts.to_jsonl().as_bytes())?;
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
        Command::Evaluate(args) => {
            let mut policy = args.audit.policy();
            policy.task_regression_tol = args.task_tol;
            policy.trajectory_regression_tol = args.traj_tol;
            policy.on_insufficient = args.on_insufficient;
            policy.mode = args.mode;
            policy.confidence = args.confidence;
            let report = evaluate_files(&args, &policy)?;
            write_output(args.out.as_deref(), report.to_json().as_bytes())?;
            print_summary(&report);
            Ok(if report.decision.approved {
                EXIT_OK
            } else {
                EXIT_BLOCKED
            })
        }
        Command::Keygen { out } => crate::sign::keygen(&out),
        Command::Digest { path } => crate::sign::digest(&path),
        Command::Sign(args) => crate::sign::sign_cmd(&args),
        Command::Verify(args) => crate::sign::verify_cmd(&args),
        Command::Apply(args) => crate::apply::apply_cmd(&args),
        Command::Rollback { config, ledger } => crate::apply::rollback_cmd(&config, ledger.as_deref()),
    }
}

use crate::read::file_name;

/// An input error with the path as the user typed it.
fn input_error(path: &Path, e: InputError) -> anyhow::Error {
    let line = e.line.map(|l| format!(" line {l}")).unwrap_or_default();
    anyhow!("{} ({}){line}: {}", path.display(), e.role, e.message)
}

/// Pass 1 over the audit files (all cores), then pass 2 over just the chosen pipelines' ranges.
fn build_test_set(paths: &[PathBuf], policy: &GatePolicy, threads: usize) -> Result<(AuditIndex, TestSet)> {
    crate::read::build_test_set(
        paths,
        &policy.pass_verdicts,
        &policy.test_set,
        crate::read::ReadOptions::new(threads),
    )
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

fn evaluate_files(args: &EvaluateArgs, policy: &GatePolicy) -> Result<GateReport> {
    let inputs = InputPaths {
        audit: &args.audit.audit,
        old_verdicts: &args.old_verdicts,
        new_verdicts: &args.new_verdicts,
        old_trajectories: args.old_trajectories.as_deref(),
        new_trajectories: args.new_trajectories.as_deref(),
        threads: args.audit.threads,
    };
    evaluate_inputs(&inputs, policy)
}

/// Reads every input and evaluates the gate.
pub fn evaluate_inputs(inputs: &InputPaths<'_>, policy: &GatePolicy) -> Result<GateReport> {
    let crate::read::Chosen {
        mut index,
        selection,
        gzipped,
    } = crate::read::choose(
        inputs.audit,
        &policy.pass_verdicts,
        &policy.test_set,
        crate::read::ReadOptions::new(inputs.threads),
    )?;
    // The pipeline table is not needed any more: free it before the verdict files are read.
    index.release_pipelines();
    // Keep whole records only for the test cases: the rest are counted, not stored.
    let keep: KeepSet = selection.shared_ids().cloned().collect();
    let verdicts = |role: deploy_gate::Role, path: &Path, keep| -> Result<Verdicts> {
        let bytes = crate::read::read_whole(path, "verdict file")?;
        parse_verdicts_keeping(role, &file_name(path), &bytes, keep).map_err(|e| input_error(path, e))
    };
    let trajectories = |role: deploy_gate::Role, path: Option<&Path>| -> Result<Option<Trajectories>> {
        let Some(path) = path else { return Ok(None) };
        let bytes = crate::read::read_whole(path, "trajectory file")?;
        parse_trajectories(role, &file_name(path), &bytes)
            .map(Some)
            .map_err(|e| input_error(path, e))
    };
    // The two verdict files are read side by side, while pass 2 reads the test cases.
    let (ts, old, new) = std::thread::scope(|scope| {
        // (One copy of the ids for each file, the second being the set itself.)
        let old_keep = keep.clone();
        let old = scope.spawn(|| verdicts(deploy_gate::Role::OldVerdicts, inputs.old_verdicts, old_keep));
        let new = scope.spawn(|| verdicts(deploy_gate::Role::NewVerdicts, inputs.new_verdicts, keep));
        let ts = crate::read::read_chosen(inputs.audit, &index, selection, &gzipped);
        let joined = |h: std::thread::ScopedJoinHandle<'_, _>| h.join().expect("a verdict thread panicked");
        (ts, joined(old), joined(new))
    });
    let (ts, old, new) = (ts?, old?, new?);
    let old_t = trajectories(deploy_gate::Role::OldTrajectories, inputs.old_trajectories)?;
    let new_t = trajectories(deploy_gate::Role::NewTrajectories, inputs.new_trajectories)?;
    Ok(evaluate(
        &GateInputs {
            audit: &index,
            test_set: &ts,
            old_verdicts: &old,
            new_verdicts: &new,
            old_trajectories: old_t.as_ref(),
            new_trajectories: new_t.as_ref(),
        },
        policy,
    ))
}

pub fn write_output(out: Option<&Path>, bytes: &[u8]) -> Result<()> {
    match out {
        Some(path) => std::fs::write(path, bytes).with_context(|| format!("cannot write {}", path.display())),
        None => {
            let mut stdout = std::io::stdout().lock();
            match stdout.write_all(bytes).and_then(|_| stdout.flush()) {
                Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => Ok(()),
                other => other.context("cannot write to stdout"),
            }
        }
    }
}

fn print_summary(r: &GateReport) {
    let d = &r.decision;
    let verdict = if d.approved {
        "APPROVED — deploy the new model"
    } else {
        "BLOCKED — keep the old model"
    };
    let skipped: u64 = r.audit.skipped.values().map(|s| s.count).sum();
    eprintln!("deploy-gate: {verdict}");
    eprintln!("  reason:     {}", d.reason);
    eprintln!(
        "  test set:   {} case(s) of {} candidate(s); audit: {} line(s), {} skipped",
        r.test_set.num_cases, r.test_set.candidates, r.audit.lines, skipped
    );
    eprintln!(
        "  task:       {:.4} → {:.4} (Δ {:+.4}, tolerance {})",
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
    eprintln!(
        "  evidence:   new − old {:+.4}, {}% interval [{:+.4}, {:+.4}] (Newcombe); McNemar b={} c={} p={:.3}",
        st.delta.estimate,
        r.stats.confidence * 100.0,
        st.delta.low,
        st.delta.high,
        st.mcnemar.b,
        st.mcnemar.c,
        st.mcnemar.p_exact
    );
    let (o, n) = (&r.verdicts.old, &r.verdicts.new);
    eprintln!(
        "  verdicts:   old {} missing, {} errored; new {} missing, {} errored",
        o.missing, o.errored, n.missing, n.errored
    );
    if !r.warnings.is_empty() {
        eprintln!("  warnings:   {} (listed in the report)", r.warnings.len());
    }
}
