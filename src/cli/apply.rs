//! `apply` and `rollback`: the flags, mapped to the library's `native::apply` (which verifies,
//! locks, deploys exactly once and records; its documentation describes the sequence and the
//! crash points), and its outcome mapped to stdout's JSON, stderr's messages and the exit code.

use crate::attest::Verified;
use crate::cli::exit::{notice, EXIT_BLOCKED, EXIT_DEPLOYED_UNRECORDED, EXIT_OK};
use crate::cli::registry::RegistryArgs;
use crate::cli::trust::{invalid, model_invalid, ModelSignatureArgs, TrustArgs};
use crate::deploy::BACKENDS;
use crate::native::apply::{self, Applied, ApplyOptions, FailAt};
use crate::native::files::chain;
use anyhow::Result;
use clap::{Args, ValueEnum};
use std::path::{Path, PathBuf};

/// The point of an apply at which `--fail-at` aborts the process (testing the crash points).
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum Step {
    /// The locks are held; nothing written yet.
    Locked,
    /// The intent entry is in the ledger (and the config's record).
    IntentLogged,
    /// The backup's temporary file is written and synced, not renamed.
    BackupWritten,
    /// The new config's temporary file is written and synced too.
    ConfigWritten,
    /// The backup is in place; the config is untouched.
    BackupRenamed,
    /// The new config is in place; the ledger has only the intent.
    ConfigRenamed,
    /// The outcome entry is in the ledger.
    OutcomeLogged,
    /// A registry apply: the decision is recorded on the version; nothing in the ledger yet.
    DecisionTagged,
    /// A registry apply: the alias is moved; the ledger has only the intent.
    AliasMoved,
}

impl Step {
    fn library(self) -> apply::Step {
        match self {
            Step::Locked => apply::Step::Locked,
            Step::IntentLogged => apply::Step::IntentLogged,
            Step::BackupWritten => apply::Step::BackupWritten,
            Step::ConfigWritten => apply::Step::ConfigWritten,
            Step::BackupRenamed => apply::Step::BackupRenamed,
            Step::ConfigRenamed => apply::Step::ConfigRenamed,
            Step::OutcomeLogged => apply::Step::OutcomeLogged,
            Step::DecisionTagged => apply::Step::DecisionTagged,
            Step::AliasMoved => apply::Step::AliasMoved,
        }
    }
}

fn parse_backend(s: &str) -> Result<String, String> {
    if BACKENDS.contains(&s) {
        Ok(s.to_owned())
    } else {
        Err(format!("`{s}`: one of transformers, vllm, api"))
    }
}

fn parse_stage(s: &str) -> Result<(String, String), String> {
    match s.split_once('=') {
        Some((stage, path)) if !stage.is_empty() && !path.is_empty() => Ok((stage.to_owned(), path.to_owned())),
        _ => Err(format!("`{s}`: expected STAGE=PATH")),
    }
}

#[derive(Args)]
pub struct ApplyArgs {
    /// The envelope (decision.dsse.json).
    envelope: PathBuf,
    #[command(flatten)]
    trust: TrustArgs,
    #[command(flatten)]
    model_signature: ModelSignatureArgs,
    /// The model to deploy (file or directory); its digest must be the statement's subject.
    #[arg(
        long,
        value_name = "PATH",
        required_unless_present = "mlflow",
        conflicts_with = "mlflow"
    )]
    model_path: Option<PathBuf>,
    /// The serving config (YAML) the built-in deploy edits. A symlink is followed: the file it
    /// points to is replaced, in its own directory, and the link kept. Applies to one config
    /// are serialised by a lock file beside that file.
    #[arg(
        long,
        value_name = "CONFIG.yaml",
        required_unless_present = "mlflow",
        conflicts_with = "mlflow"
    )]
    config: Option<PathBuf>,
    /// The target the decision must name (default: the config path as given; with --mlflow,
    /// `models:/NAME@ALIAS`, the only one accepted there).
    #[arg(long, value_name = "URI")]
    target: Option<String>,
    #[command(flatten)]
    registry: RegistryArgs,
    /// The registered model whose alias --mlflow moves.
    #[arg(long, value_name = "NAME", requires = "mlflow")]
    registered_model: Option<String>,
    /// The alias --mlflow moves (`champion`): the decision must be signed for
    /// `models:/NAME@ALIAS`.
    #[arg(long, value_name = "ALIAS", requires = "mlflow")]
    alias: Option<String>,
    /// The version to promote (default: the one whose files' digest is the decision's subject).
    #[arg(long, value_name = "V", requires = "mlflow", conflicts_with = "restore")]
    model_version: Option<String>,
    /// Put the alias back on the last version the ledger promoted whose recorded decision still
    /// verifies (after a move by hand). Needs --mlflow.
    #[arg(long, requires = "mlflow")]
    restore: bool,
    /// The serving backend to set.
    #[arg(long, default_value = "transformers", value_parser = parse_backend)]
    backend: String,
    /// Set `model` on a stage of the config (upstream's stage_model_map); repeat for several.
    #[arg(long, value_name = "STAGE=PATH", value_parser = parse_stage)]
    stage_model: Vec<(String, String)>,
    /// Run PROGRAM ARG… instead of the built-in deploy (end the list with `;`). Values are
    /// passed in DEPLOY_GATE_* environment variables, never through a shell.
    #[arg(long, value_name = "PROGRAM ARG…", num_args = 1.., value_terminator = ";", allow_hyphen_values = true)]
    deploy_cmd: Vec<String>,
    /// Run PROGRAM ARG… when the decision keeps the old model (end the list with `;`).
    #[arg(long, value_name = "PROGRAM ARG…", num_args = 1.., value_terminator = ";", allow_hyphen_values = true)]
    rollback_cmd: Vec<String>,
    /// Verify and say what would be done, without doing it.
    #[arg(long)]
    dry_run: bool,
    /// Abort the process at this step (tests the crash points).
    #[arg(long, value_name = "STEP", hide = true)]
    fail_at: Option<Step>,
    /// With --mlflow: wait MS milliseconds after the intent, before the alias is read again
    /// (tests a move by another client meanwhile).
    #[arg(long, value_name = "MS", hide = true, requires = "mlflow")]
    pause_before_move: Option<u64>,
}

fn pretty(out: &Applied) -> Result<()> {
    println!("{}", serde_json::to_string_pretty(&out.to_json())?);
    Ok(())
}

/// Why a verified decision keeps the old model: it is blocked, or inconclusive (which never
/// deploys).
fn kept_because(v: &Verified) -> &'static str {
    match v.outcome {
        crate::decision::Outcome::Inconclusive => "inconclusive",
        _ => "blocked",
    }
}

pub fn apply_cmd(args: &ApplyArgs) -> Result<u8> {
    if args.registry.mlflow.is_some() {
        return mlflow_apply_cmd(args);
    }
    let (Some(model_path), Some(config)) = (&args.model_path, &args.config) else {
        unreachable!("clap requires --model-path and --config without --mlflow")
    };
    let opts = ApplyOptions {
        envelope: args.envelope.clone(),
        trust: args.trust.trust(),
        model_path: model_path.clone(),
        config: config.clone(),
        target: args.target.clone(),
        backend: args.backend.clone(),
        stage_models: args.stage_model.clone(),
        deploy_cmd: args.deploy_cmd.clone(),
        rollback_cmd: args.rollback_cmd.clone(),
        dry_run: args.dry_run,
        fail_at: FailAt(args.fail_at.map(Step::library)),
        model_signature: args.model_signature.resolve(Some(model_path))?,
    };
    let out = apply::apply(&opts, &mut notice)?;
    match &out {
        Applied::Refused(failure) => Ok(invalid(failure)),
        Applied::ModelRefused(e) => Ok(model_invalid(e)),
        Applied::DryRun(v) => {
            eprintln!(
                "deploy-gate: dry run — verified; would {} ({})",
                if v.approved {
                    "deploy the new model".to_owned()
                } else {
                    format!("keep the old model (decision {})", kept_because(v))
                },
                v.reason
            );
            pretty(&out)?;
            Ok(if v.approved { EXIT_OK } else { EXIT_BLOCKED })
        }
        Applied::KeptOld { decision, .. } => {
            pretty(&out)?;
            eprintln!(
                "deploy-gate: KEPT the old model (decision {}) — {}",
                kept_because(decision),
                decision.reason
            );
            Ok(EXIT_BLOCKED)
        }
        Applied::Deployed(d) => {
            pretty(&out)?;
            let v = &d.decision;
            if d.unchanged {
                eprintln!(
                    "deploy-gate: DEPLOYED {} ({}) — {} holds this deploy already: unchanged, backup left as it was",
                    v.model_name,
                    d.model_path,
                    config.display()
                );
            } else {
                eprintln!(
                    "deploy-gate: DEPLOYED {} ({}) — {}",
                    v.model_name, d.model_path, v.reason
                );
            }
            Ok(EXIT_OK)
        }
        Applied::DeployedUnrecorded(d, e) => {
            pretty(&out)?;
            eprintln!(
                "deploy-gate: DEPLOYED {} ({}) — the model IS deployed, but the ledger could not record it: {}. Its intent entry is there: the next apply records the deploy and will not deploy this decision again.",
                d.decision.model_name,
                d.model_path,
                chain(e)
            );
            Ok(EXIT_DEPLOYED_UNRECORDED)
        }
    }
}

/// Restores the config from the backup `apply` made; the library says what it restored and
/// recorded.
pub fn rollback_cmd(config: &Path, ledger: Option<&Path>) -> Result<u8> {
    apply::rollback(config, ledger, &mut notice)?;
    Ok(EXIT_OK)
}

/// `apply --mlflow`: the registry alias moved (or put back with `--restore`).
fn mlflow_apply_cmd(args: &ApplyArgs) -> Result<u8> {
    use crate::native::mlflow::{self, MlflowApply, Promoted};
    let (Some(name), Some(alias)) = (&args.registered_model, &args.alias) else {
        anyhow::bail!("--mlflow needs --registered-model NAME and --alias ALIAS");
    };
    let given: Vec<&str> = [
        (!args.deploy_cmd.is_empty(), "--deploy-cmd"),
        (!args.rollback_cmd.is_empty(), "--rollback-cmd"),
        (!args.stage_model.is_empty(), "--stage-model"),
        (args.backend != "transformers", "--backend"),
    ]
    .into_iter()
    .filter_map(|(on, flag)| on.then_some(flag))
    .collect();
    if !given.is_empty() {
        anyhow::bail!(
            "{} cannot be used with --mlflow (the registry apply moves an alias)",
            given.join(", ")
        );
    }
    let opts = MlflowApply {
        envelope: args.envelope.clone(),
        trust: args.trust.trust(),
        registry: args.registry.settings()?,
        name: name.clone(),
        alias: alias.clone(),
        version: args.model_version.clone(),
        target: args.target.clone(),
        dry_run: args.dry_run,
        fail_at: FailAt(args.fail_at.map(Step::library)),
        model_signature: args.model_signature.resolve_registry()?,
        pause_before_move: args.pause_before_move.map(std::time::Duration::from_millis),
    };
    let uri = mlflow::model_uri(name, alias);
    if args.restore {
        if opts.model_signature.is_some() {
            anyhow::bail!("--restore re-checks the decisions recorded on the versions, not the trainer's signature: give it without the trainer's flags");
        }
        if args.dry_run {
            anyhow::bail!("--restore has no --dry-run: `verify --mlflow` says where the alias points and why");
        }
        let r = mlflow::restore(&opts, &mut notice).map_err(|e| anyhow::anyhow!(e.message()))?;
        println!(
            "{}",
            serde_json::to_string_pretty(&serde_json::json!({
                "result": if r.unchanged { "unchanged" } else { "restored" },
                "model_uri": r.uri, "version": r.to, "version_before": r.from, "decision_sha256": r.decision_sha256,
            }))?
        );
        if r.unchanged {
            eprintln!(
                "deploy-gate: {} points to version {} already, whose decision verifies; nothing set",
                r.uri, r.to
            );
        } else {
            eprintln!(
                "deploy-gate: RESTORED {} to version {} (it pointed to {}); decision {}",
                r.uri,
                r.to,
                r.from
                    .as_deref()
                    .map_or("no version".to_owned(), |v| format!("version {v}")),
                r.decision_sha256
            );
        }
        return Ok(EXIT_OK);
    }
    let out = mlflow::apply(&opts, &mut notice).map_err(|e| anyhow::anyhow!(e.message()))?;
    let print = || -> Result<()> {
        println!("{}", serde_json::to_string_pretty(&out.to_json(&uri))?);
        Ok(())
    };
    match &out {
        Promoted::Refused(failure) => Ok(invalid(failure)),
        Promoted::ModelRefused(e) => Ok(model_invalid(e)),
        Promoted::DryRun {
            decision,
            version,
            current,
            ..
        } => {
            eprintln!(
                "deploy-gate: dry run — verified; would {} ({})",
                if decision.approved {
                    format!(
                        "point {uri} at version {version} (it points to {})",
                        current
                            .as_deref()
                            .map_or("no version".to_owned(), |v| format!("version {v}"))
                    )
                } else {
                    format!("leave {uri} where it is (decision {})", kept_because(decision))
                },
                decision.reason
            );
            print()?;
            Ok(if decision.approved { EXIT_OK } else { EXIT_BLOCKED })
        }
        Promoted::KeptOld { decision, version, .. } => {
            print()?;
            eprintln!(
                "deploy-gate: KEPT {uri} where it was (decision {} for version {version}, recorded on it) — {}",
                kept_because(decision),
                decision.reason
            );
            Ok(EXIT_BLOCKED)
        }
        Promoted::Moved {
            decision,
            version,
            before,
            unchanged,
            ..
        } => {
            print()?;
            if *unchanged {
                eprintln!("deploy-gate: DEPLOYED {uri} — it pointed to version {version} already; the decision is recorded on it");
            } else {
                eprintln!(
                    "deploy-gate: DEPLOYED {uri} → version {version} (was {}) — {}",
                    before.as_deref().map_or("unset".to_owned(), |v| format!("version {v}")),
                    decision.reason
                );
            }
            Ok(EXIT_OK)
        }
    }
}
