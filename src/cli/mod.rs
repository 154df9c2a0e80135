//! The `deploy-gate` command: its flags and the dispatch to one module per command
//! (`evaluate`, `run`, `sign`, `apply`, `diff`), which share `trust`, `files` and `exit`.
//!
//! It lives in the library (feature `cli`, native only) so that every shell that installs a
//! `deploy-gate` command runs this one: the binary (`src/bin/deploy-gate/main.rs`) and the Python
//! package's console script both call [`main`] with the process's arguments.

mod apply;
mod ci;
mod diff;
mod evaluate;
mod exit;
mod files;
mod registry;
mod run;
mod sign;
mod trust;

use crate::policy::GatePolicy;
use clap::{CommandFactory, FromArgMatches, Parser, Subcommand};
use exit::{EXIT_INPUT, EXIT_OK};
use std::ffi::OsString;
use std::io::Write;
use std::path::PathBuf;

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
        audit: evaluate::AuditArgs,
        /// Write to FILE instead of stdout.
        #[arg(long, value_name = "FILE")]
        out: Option<PathBuf>,
    },
    /// Score the old and the new model and decide; prints the GateReport JSON.
    ///
    /// Exit code 0: approved. 3: blocked (keep the old model). 4: inconclusive under the
    /// non-inferiority rule (keep the old model; more cases would settle it). 1: unusable input
    /// or usage.
    Evaluate(evaluate::EvaluateArgs),
    /// Run a model over the test set: starts PROGRAM (after `--`, never through a shell) as
    /// long-lived workers that read one case per line (JSON) on stdin and answer one line
    /// {"verdict": …} or {"error": "…"} each on stdout (optionally with "metrics": {"NAME":
    /// number, …}, kept on the record for the policy's guardrails, and "output": what the model
    /// answered, any JSON value, kept on the record for the reviewer); writes the verdict file
    /// (JSONL).
    ///
    /// Resumes from the records --out already holds. Exit code 0: every case has a record
    /// (errored ones included; a summary on stderr). 1: unusable input, usage or I/O, or a
    /// worker program that cannot start or keeps exiting. 128+N: stopped by signal N (130:
    /// SIGINT, 143: SIGTERM), what was written is kept.
    Run(run::RunArgs),
    /// Print the resolved policy (defaults < --policy FILE < flags) as the report lists it; its
    /// digest (sha256 of its RFC 8785 canonical JSON, the one a signed decision pins) goes to
    /// stderr.
    Policy {
        /// A policy file (JSON, the shape of a report's `policy`; every field optional).
        #[arg(long, value_name = "FILE")]
        policy: Option<PathBuf>,
        #[command(flatten)]
        sample: evaluate::SampleFlags,
        #[command(flatten)]
        decision: evaluate::DecisionFlags,
    },
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
        /// The OpenSSF Model Signing v1.0 subject digest, as `model_signing sign` computes it
        /// (its default ignore paths, `model.sig` left out; symbolic links refused).
        #[arg(long)]
        oms: bool,
        /// With --oms: the `shards` method with shards of N bytes (default: `files`).
        #[arg(long, value_name = "N", requires = "oms")]
        shard_size: Option<u64>,
    },
    /// Sign a report's decision for a model and a target: a DSSE envelope (in-toto VSA).
    Sign(sign::SignArgs),
    /// Verify a signed decision. Exit 0: valid (whatever the decision). 2: invalid, with the
    /// failing check named. 1: usage or I/O.
    Verify(sign::VerifyArgs),
    /// Verify, then deploy (PASSED) or keep the old model (FAILED), once per decision. Exit 0:
    /// deployed. 3: kept the old model. 2: verification failed (or applied already). 4:
    /// deployed, but the ledger could not record it. 1: usage or I/O (nothing deployed).
    Apply(apply::ApplyArgs),
    /// Compare two evaluations (reports or signed decisions): the decision, the policy, the
    /// inputs and every case whose verdict flipped; prints the diff JSON.
    ///
    /// Exit code 0: the same decision. 5: the decision changed. 1: unusable input or usage. A
    /// signed decision is read only once it verifies against --trusted-key (its age and target
    /// are not checked). The inputs are never written.
    Diff(diff::DiffArgs),
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

fn json_text(v: &impl serde::Serialize) -> String {
    serde_json::to_value(v)
        .ok()
        .and_then(|v| v.as_str().map(str::to_owned))
        .unwrap_or_default()
}

/// The help of the policy flags ends with the default, taken from the policy's one home.
fn with_defaults(cmd: clap::Command) -> clap::Command {
    let d = GatePolicy::default();
    let max = d.test_set.max_samples.map_or("none".to_owned(), |n| n.to_string());
    let defaults = [
        ("min_samples", d.test_set.min_samples.to_string()),
        ("max_samples", max),
        ("seed", d.test_set.seed.to_string()),
        ("pass_verdicts", d.pass_verdicts.verdicts().join(",")),
        ("task_tol", format!("{:?}", d.task_regression_tol)),
        ("traj_tol", format!("{:?}", d.trajectory_regression_tol)),
        ("on_insufficient", json_text(&d.on_insufficient)),
        ("mode", json_text(&d.mode)),
        ("confidence", format!("{:?}", d.confidence)),
        ("cluster", json_text(&d.cluster())),
        ("repeats", json_text(&d.repeats())),
    ];
    let add = |mut c: clap::Command| {
        for (id, value) in &defaults {
            if c.get_arguments().any(|a| a.get_id() == id) {
                c = c.mut_arg(id, |a| {
                    let help = a.get_help().map(|h| h.to_string()).unwrap_or_default();
                    a.help(format!("{help} [default: {value}]"))
                });
            }
        }
        c
    };
    cmd.mut_subcommand("test-set", add)
        .mut_subcommand("evaluate", add)
        .mut_subcommand("policy", add)
}

/// Runs the `deploy-gate` command with `args` (the program's name first, as
/// [`std::env::args_os`] gives them): parses the flags, runs the command, prints its output and
/// errors, and returns the exit code the process exits with (0 approved or done, 1 unusable
/// input or usage, 3 blocked, 4 inconclusive, 128+N stopped by signal N during `run`).
///
/// `run` installs its SIGINT and SIGTERM handlers for the time it runs and puts the earlier ones
/// back when it returns, so an embedding process (the Python package) keeps its own.
pub fn main<I, T>(args: I) -> u8
where
    I: IntoIterator<Item = T>,
    T: Into<OsString> + Clone,
{
    let code = match with_defaults(Cli::command())
        .try_get_matches_from(args)
        .and_then(|m| Cli::from_arg_matches(&m))
    {
        Ok(cli) => match run(cli) {
            Ok(code) => code,
            Err(e) => {
                eprintln!("deploy-gate: error: {e:#}");
                EXIT_INPUT
            }
        },
        Err(e) => {
            let _ = e.print();
            if e.use_stderr() {
                EXIT_INPUT
            } else {
                EXIT_OK
            }
        }
    };
    // A process that does not exit now (an embedding one) still shows everything printed.
    let _ = std::io::stdout().flush();
    code
}

fn run(cli: Cli) -> anyhow::Result<u8> {
    match cli.command {
        Command::TestSet { audit, out } => evaluate::test_set_cmd(&audit, out.as_deref()),
        Command::Evaluate(args) => evaluate::evaluate_cmd(&args),
        Command::Run(args) => run::run_cmd(&args),
        Command::Policy {
            policy,
            sample,
            decision,
        } => evaluate::policy_cmd(policy.as_deref(), &sample, &decision),
        Command::Keygen { out } => sign::keygen(&out),
        Command::Digest { path, oms, shard_size } => sign::digest(&path, oms, shard_size),
        Command::Sign(args) => sign::sign_cmd(&args),
        Command::Verify(args) => sign::verify_cmd(&args),
        Command::Apply(args) => apply::apply_cmd(&args),
        Command::Diff(args) => diff::diff_cmd(&args),
        Command::Rollback { config, ledger } => apply::rollback_cmd(&config, ledger.as_deref()),
    }
}
