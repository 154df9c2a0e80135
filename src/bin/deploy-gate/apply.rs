//! `apply` and `rollback`: verify a signed decision and deploy it exactly once, leaving a
//! truthful state at every crash or error point. The files they lock are in `locks`, the file
//! replacement they share (exclusive temporary files with the config's mode and owner, renames
//! synced, symlinks kept) in `replace`.
//!
//! # Locks
//! Two `flock(LOCK_EX)` locks, always taken in this order and held from the replay check to the
//! last ledger entry (they are released when the process ends, however it ends):
//! 1. the config lock, `.NAME.deploy-gate.lock` beside the file the config path finally points
//!    to (after every symlink): two applies (or an apply and a rollback) to one config never run
//!    at once, whichever path or ledger they are given. The lock file is also the config's own
//!    record of the decisions applied to it (`<payload sha256> <result> <before> <after>`
//!    lines, each one `write`, fsynced; read and formatted by `attest::ledger::record`),
//!    checked as well as the ledger: one decision replaces one config once, whatever ledger,
//!    backend or spelling of the model path a later apply is given;
//! 2. the ledger itself (opened `O_APPEND|O_NOFOLLOW`, a regular file with one link): reading it,
//!    verifying and appending are one step for every apply that shares it.
//!
//! Without `--ledger`, the ledger is `NAME.deploy-gate-ledger.jsonl` beside that same file, so
//! replay protection always holds.
//!
//! # The sequence of a built-in deploy, and what each crash point leaves
//! 1. Lock; cut a torn last ledger line (`Ledger::repair` says whether and where); remove temporary files an interrupted apply left; resolve
//!    the config's unresolved intents (below). Crash: nothing changed but those repairs.
//! 2. Hash the model (under the locks), verify (signatures, digest, target, age) and refuse a
//!    decision the ledger or the config's record has already.
//! 3. Read the config (a regular file with one link, at most `MAX_CONFIG_BYTES`) and make the
//!    edit. Append an `intent` entry with the sha256 of the config before and after, then the
//!    intent to the config's record. If either cannot be written, stop: nothing is deployed.
//! 4. Write the backup (the config read) and the new config to temporary files, each synced.
//!    Crash: the config and the backup are untouched; the next apply removes the temporary
//!    files, finds the config's bytes equal the "before" hash and records `not_deployed`.
//! 5. Check the config still holds the bytes read, rename the backup into place, then exchange
//!    the new config with the config (`renameat2(RENAME_EXCHANGE)`) and compare what was swapped
//!    out with the bytes read: if another program changed the config meanwhile, exchange back
//!    and stop ("the config changed while apply ran; NOT deployed").
//!    Crash after the exchange: the next apply finds the "after" bytes, records `deployed` and
//!    says so.
//! 6. Append the `deployed` entry (and to the record). If that fails, the model IS deployed and
//!    the intent says so: exit 4 with that message, and the next apply records it.
//!
//! A config that holds this deploy's bytes already is not written at all (no backup either):
//! the decision is recorded as deployed, `unchanged`.
//!
//! # What remains
//! The model is deployed as a path, not as a pinned copy: it is hashed under the locks, just
//! before the config is edited, but whoever can write the model directory can change it after
//! that hash.

use crate::exit::{now, EXIT_BLOCKED, EXIT_DEPLOYED_UNRECORDED, EXIT_OK};
use crate::files::read_regular;
use crate::locks::{lock_config, ConfigLock, ConfigPaths, LedgerFile};
use crate::replace::{dir_of, file_name_of, remove_stale_temps, replace_file, utf8, TempFile};
use crate::trust::{check, invalid, model_digest, read_ledger, TrustArgs};
use anyhow::{anyhow, bail, Context, Result};
use clap::{Args, ValueEnum};
use deploy_gate::attest::ledger::record::RecordedResult;
use deploy_gate::attest::ledger::{self, Entry, Outcome};
use deploy_gate::attest::{file_digest, time, Check, Failure, Summary, VerificationResult, Verified};
use deploy_gate::deploy::{backup_file_name, deploy_config, normalize_model_path, Change, BACKENDS, MAX_CONFIG_BYTES};
use serde_json::json;
use std::fs;
use std::io;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::process::Command;

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
    /// The model to deploy (file or directory); its digest must be the statement's subject.
    #[arg(long, value_name = "PATH")]
    model_path: PathBuf,
    /// The serving config (YAML) the built-in deploy edits. A symlink is followed: the file it
    /// points to is replaced, in its own directory, and the link kept. Applies to one config
    /// are serialised by a lock file beside that file.
    #[arg(long, value_name = "CONFIG.yaml")]
    config: PathBuf,
    /// The target the decision must name (default: the config path as given).
    #[arg(long, value_name = "URI")]
    target: Option<String>,
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
}

fn sha256_hex(bytes: &[u8]) -> String {
    file_digest(bytes)
}

// ---------------------------------------------------------------- apply

fn crash_point(args: &ApplyArgs, step: Step) {
    if args.fail_at == Some(step) {
        eprintln!("deploy-gate: --fail-at {step:?}: aborting");
        std::process::abort();
    }
}

fn entry_for(v: &Verified, result: Outcome) -> Entry {
    let mut e = Entry::new(&v.payload_sha256, result, &time::format_rfc3339(now()));
    e.model = Some(v.model_name.clone());
    e.model_digest = Some(format!("sha256:{}", v.model_sha256));
    e.target = Some(v.target.clone());
    e.signers = v.signers.clone();
    e
}

/// Records the outcome of this config's interrupted intents, from the config's bytes now.
fn resolve_pending(ledger: &mut LedgerFile, paths: &ConfigPaths, mut lock: Option<&mut ConfigLock>) -> Result<()> {
    let real = paths.real.display().to_string();
    let pending: Vec<Entry> = ledger.parsed.pending().into_iter().cloned().collect();
    for intent in pending {
        if intent.config.as_deref() != Some(real.as_str()) {
            eprintln!(
                "deploy-gate: warning: the ledger {} has an interrupted apply of decision {} to {}; the next apply to that config resolves it",
                ledger.path.display(),
                intent.payload_sha256,
                intent.config.as_deref().unwrap_or("?")
            );
            continue;
        }
        let now_sha = match fs::symlink_metadata(&paths.real) {
            Err(e) if e.kind() == io::ErrorKind::NotFound => None,
            _ => Some(sha256_hex(&read_regular(&paths.real, "config", MAX_CONFIG_BYTES)?.1)),
        };
        let outcome = if intent.action.as_deref() == Some("config") {
            ledger::resolve(&intent, now_sha.as_deref())
        } else {
            Outcome::Unknown
        };
        let mut entry = intent.clone();
        entry.result = outcome;
        entry.applied_at = time::format_rfc3339(now());
        entry.recovered = true;
        ledger.append(&entry)?;
        if let Some(lock) = lock.as_deref_mut() {
            lock.record(&intent, outcome)?;
        }
        let what = match (outcome, intent.action.as_deref()) {
            (Outcome::Deployed, _) => format!("it DID replace {}: the model IS deployed; recorded as deployed", paths.real.display()),
            (Outcome::NotDeployed, _) => format!("it did not replace {} (the config holds the bytes before); recorded as not deployed", paths.real.display()),
            (_, Some("config")) => format!("{} holds neither the bytes before nor after it; recorded as unknown (the decision is not applied again)", paths.real.display()),
            _ => "it ran a deploy command whose outcome is unknown; recorded as unknown (the decision is not applied again)".to_owned(),
        };
        eprintln!(
            "deploy-gate: the ledger {} had an interrupted apply of decision {} (intent at {}): {what}",
            ledger.path.display(),
            intent.payload_sha256,
            intent.applied_at
        );
    }
    Ok(())
}

fn run_program(argv: &[String], env: &[(&str, String)], what: &str) -> Result<()> {
    let status = Command::new(&argv[0])
        .args(&argv[1..])
        .envs(env.iter().map(|(k, v)| (*k, v.as_str())))
        .status()
        .with_context(|| format!("cannot run the {what} command `{}`", argv[0]))?;
    if !status.success() {
        bail!("the {what} command `{}` failed ({status})", argv[0]);
    }
    Ok(())
}

fn report(v: &Verified, result: &str, ledger: &Path, extra: serde_json::Value) -> Result<()> {
    let mut out = json!({"result": result, "decision": Summary::of(v), "ledger": ledger.display().to_string()});
    if let (Some(o), serde_json::Value::Object(x)) = (out.as_object_mut(), extra) {
        o.extend(x);
    }
    println!("{}", serde_json::to_string_pretty(&out)?);
    Ok(())
}

/// The message of a replay refusal, from the decision's last ledger entry.
fn replayed_message(v: &Verified, ledger: &LedgerFile, last: &Entry, lock: Option<&ConfigLock>) -> String {
    let rolled_back_here = lock
        .and_then(|l| l.record.get(&v.payload_sha256))
        .is_some_and(|r| r.result == RecordedResult::Known(Outcome::RolledBack));
    let state = match last.result {
        _ if rolled_back_here => {
            " — the config's record says it was then rolled back: the config holds the one from before it"
        }
        Outcome::Deployed => " — the model IS deployed",
        Outcome::RolledBack => " — it was deployed, then rolled back: the config holds the one from before it",
        _ => "",
    };
    format!(
        "decision {} was applied already: the ledger {} says {} at {}{}{state}",
        v.payload_sha256,
        ledger.path.display(),
        last.result.as_str(),
        last.applied_at,
        if last.recovered {
            " (recorded from an interrupted apply)"
        } else {
            ""
        }
    )
}

/// Refuses a config whose backup name another file in its directory maps to as well
/// (`serving.yml` and `serving.yaml` both back up to `serving.yaml.backup`).
fn check_backup_name_is_ours(paths: &ConfigPaths) -> Result<()> {
    let dir = dir_of(&paths.given);
    let ours = file_name_of(&paths.given)?;
    let backup = file_name_of(&paths.backup)?;
    let entries = fs::read_dir(&dir).with_context(|| format!("cannot list {}", dir.display()))?;
    for entry in entries {
        let entry = entry.with_context(|| format!("cannot list {}", dir.display()))?;
        let Some(name) = entry.file_name().to_str().map(str::to_owned) else {
            continue;
        };
        if name == ours || name == backup {
            continue;
        }
        if backup_file_name(&name) == backup && fs::metadata(entry.path()).is_ok_and(|m| m.is_file()) {
            bail!(
                "the configs {} and {} would share the backup {}; refused, nothing changed (rename one of them)",
                paths.given.display(),
                entry.path().display(),
                paths.backup.display()
            );
        }
    }
    Ok(())
}

/// Why a verified decision keeps the old model: it is blocked, or inconclusive (which never
/// deploys).
fn kept_because(v: &Verified) -> &'static str {
    match v.outcome {
        deploy_gate::decision::Outcome::Inconclusive => "inconclusive",
        _ => "blocked",
    }
}

pub fn apply_cmd(args: &ApplyArgs) -> Result<u8> {
    let model_text = utf8(&args.model_path, "model path")?;
    let target = match &args.target {
        Some(t) => t.clone(),
        None => utf8(&args.config, "config path")?.to_owned(),
    };
    let model_path = normalize_model_path(model_text);
    let paths = ConfigPaths::resolve(&args.config)?;
    let ledger_path = args.trust.ledger.clone().unwrap_or_else(|| paths.default_ledger());

    if args.dry_run {
        let digest = model_digest(&args.model_path)?;
        let mut trust = args.trust.clone();
        trust.ledger = None;
        let v = match check(&args.envelope, &trust, &digest, &target)? {
            Ok(v) => v,
            Err(failure) => return Ok(invalid(&failure)),
        };
        if read_ledger(Some(&ledger_path))?.applied(&v.payload_sha256) {
            return Ok(invalid(&Failure::new(
                Check::Replayed,
                format!(
                    "decision {} is in the ledger {} already",
                    v.payload_sha256,
                    ledger_path.display()
                ),
            )));
        }
        eprintln!(
            "deploy-gate: dry run — verified; would {} ({})",
            if v.approved {
                "deploy the new model".to_owned()
            } else {
                format!("keep the old model (decision {})", kept_because(&v))
            },
            v.reason
        );
        println!("{}", serde_json::to_string_pretty(&Summary::of(&v))?);
        return Ok(if v.approved { EXIT_OK } else { EXIT_BLOCKED });
    }

    let mut config_lock = match lock_config(&paths) {
        Ok(lock) => Some(lock),
        // A deploy command does not write beside the config, which may be read-only (a
        // ConfigMap mount); the ledger's lock still holds.
        Err(e)
            if !args.deploy_cmd.is_empty()
                && e.downcast_ref::<io::Error>()
                    .and_then(io::Error::raw_os_error)
                    .is_some_and(|c| [libc::EROFS, libc::EACCES, libc::EPERM].contains(&c)) =>
        {
            eprintln!("deploy-gate: warning: {e:#}; only the ledger is locked");
            None
        }
        Err(e) => return Err(e),
    };
    let mut ledger = LedgerFile::open_locked(&ledger_path)?;
    crash_point(args, Step::Locked);
    remove_stale_temps(&paths.real_dir, &paths.real_name)?;
    if args.deploy_cmd.is_empty() {
        // Before the backup's temporary files are touched: they could be another config's.
        check_backup_name_is_ours(&paths).context("NOT deployed")?;
        remove_stale_temps(&dir_of(&paths.backup), &file_name_of(&paths.backup)?)?;
    }
    resolve_pending(&mut ledger, &paths, config_lock.as_mut())?;

    // The model is hashed under the locks, right before it is verified and deployed.
    let digest = model_digest(&args.model_path)?;
    // The replay check is made here, against the ledger read under its lock.
    let mut trust = args.trust.clone();
    trust.ledger = None;
    let v = match check(&args.envelope, &trust, &digest, &target)? {
        Ok(v) => v,
        Err(failure) => return Ok(invalid(&failure)),
    };
    if ledger.parsed.applied(&v.payload_sha256) {
        let last = ledger.parsed.last(&v.payload_sha256).expect("applied");
        return Ok(invalid(&Failure::new(
            Check::Replayed,
            replayed_message(&v, &ledger, last, config_lock.as_ref()),
        )));
    }

    let env = [
        (
            "DEPLOY_GATE_DECISION",
            VerificationResult::of(v.approved).as_str().to_owned(),
        ),
        ("DEPLOY_GATE_REASON", v.reason.clone()),
        ("DEPLOY_GATE_MODEL_PATH", model_path.clone()),
        ("DEPLOY_GATE_MODEL_NAME", v.model_name.clone()),
        ("DEPLOY_GATE_MODEL_DIGEST", format!("sha256:{}", v.model_sha256)),
        ("DEPLOY_GATE_CONFIG", utf8(&args.config, "config path")?.to_owned()),
        ("DEPLOY_GATE_TARGET", v.target.clone()),
        ("DEPLOY_GATE_BACKEND", args.backend.clone()),
        ("DEPLOY_GATE_SIGNERS", v.signers.join(",")),
        ("DEPLOY_GATE_PAYLOAD_SHA256", v.payload_sha256.clone()),
    ];

    if !v.approved {
        if !args.rollback_cmd.is_empty() {
            run_program(&args.rollback_cmd, &env, "rollback")?;
        }
        ledger
            .append(&entry_for(&v, Outcome::KeptOld))
            .context(if args.rollback_cmd.is_empty() {
                "KEPT the old model (nothing was changed), but the ledger could not record the decision"
            } else {
                "KEPT the old model (the rollback command ran), but the ledger could not record the decision"
            })?;
        crash_point(args, Step::OutcomeLogged);
        report(&v, "kept_old", &ledger.path, json!({}))?;
        eprintln!(
            "deploy-gate: KEPT the old model (decision {}) — {}",
            kept_because(&v),
            v.reason
        );
        return Ok(EXIT_BLOCKED);
    }

    if !args.deploy_cmd.is_empty() {
        let mut intent = entry_for(&v, Outcome::Intent);
        intent.action = Some("command".into());
        intent.config = Some(paths.real.display().to_string());
        ledger
            .append(&intent)
            .context("NOT deployed: the deploy command was not run")?;
        crash_point(args, Step::IntentLogged);
        if let Err(e) = run_program(&args.deploy_cmd, &env, "deploy") {
            let mut failed = intent.clone();
            failed.result = Outcome::NotDeployed;
            failed.applied_at = time::format_rfc3339(now());
            let recorded = match ledger.append(&failed) {
                Ok(()) => "recorded as not deployed".to_owned(),
                Err(le) => format!("{le:#}; the next apply records it as unknown"),
            };
            return Err(e.context(format!("NOT deployed ({recorded})")));
        }
        return finish(args, &v, &mut ledger, None, intent, &model_path, json!({}));
    }
    let mut lock = config_lock.expect("the built-in deploy always locks the config");

    // The built-in edit.
    let (meta, original) = read_regular(&paths.real, "config", MAX_CONFIG_BYTES)
        .map_err(|e| anyhow!("{e:#} (config {})", paths.given.display()))?;
    if meta.nlink() != 1 {
        bail!(
            "the config {} has {} hard links; refused, NOT deployed (replacing it would leave its other names with the old model)",
            paths.given.display(),
            meta.nlink()
        );
    }
    let change = Change {
        model_path: model_text,
        backend: &args.backend,
        stage_models: &args.stage_model,
    };
    let updated = deploy_config(&original, &change).map_err(|e| anyhow!("{}: {e}", paths.given.display()))?;
    let recorded_here = lock.record.applied(&v.payload_sha256, &sha256_hex(&original)).cloned();

    if updated == original {
        // Deployed already (through another ledger, or the same model by an earlier decision):
        // nothing to write, and the backup keeps the config from before that deploy.
        let mut done = entry_for(&v, Outcome::Deployed);
        done.action = Some("config".into());
        done.config = Some(paths.real.display().to_string());
        done.config_sha256_before = Some(sha256_hex(&original));
        done.config_sha256_after = Some(sha256_hex(&updated));
        done.unchanged = true;
        ledger.append(&done)?;
        if recorded_here.is_none() {
            lock.record(&done, Outcome::Deployed)?;
        }
        crash_point(args, Step::OutcomeLogged);
        report(&v, "deployed", &ledger.path, json!({"unchanged": true}))?;
        eprintln!(
            "deploy-gate: DEPLOYED {} ({model_path}) — {} holds this deploy already: unchanged, backup left as it was",
            v.model_name,
            paths.given.display()
        );
        return Ok(EXIT_OK);
    }
    if let Some(result) = recorded_here {
        let result = match &result {
            RecordedResult::Known(Outcome::RolledBack) => "rolled_back: it was deployed, then rolled back",
            other => other.as_str(),
        };
        return Ok(invalid(&Failure::new(
            Check::Replayed,
            format!(
                "decision {} was applied to the config {} already (its record {} says {result}); the ledger {} does not have it, but one decision replaces one config once",
                v.payload_sha256,
                paths.given.display(),
                lock.path.display(),
                ledger.path.display()
            ),
        )));
    }
    let mut intent = entry_for(&v, Outcome::Intent);
    intent.action = Some("config".into());
    intent.config = Some(paths.real.display().to_string());
    intent.backup = Some(paths.backup.display().to_string());
    intent.config_sha256_before = Some(sha256_hex(&original));
    intent.config_sha256_after = Some(sha256_hex(&updated));
    ledger
        .append(&intent)
        .with_context(|| format!("NOT deployed: {} is unchanged", paths.given.display()))?;
    let not_deployed = |ledger: &mut LedgerFile, lock: &mut ConfigLock, e: anyhow::Error, backup_replaced: bool| {
        let mut failed = intent.clone();
        failed.result = Outcome::NotDeployed;
        failed.applied_at = time::format_rfc3339(now());
        let recorded = match ledger
            .append(&failed)
            .and_then(|()| lock.record(&failed, Outcome::NotDeployed))
        {
            Ok(()) => "recorded as not deployed".to_owned(),
            Err(le) => format!("{le:#}; the next apply records it"),
        };
        e.context(format!(
            "NOT deployed: this apply did not replace {} ({}; {recorded})",
            paths.given.display(),
            if backup_replaced {
                "the backup holds the config as this apply read it"
            } else {
                "the backup is as it was"
            }
        ))
    };
    if let Err(e) = lock.record(&intent, Outcome::Intent) {
        return Err(not_deployed(&mut ledger, &mut lock, e, false));
    }
    crash_point(args, Step::IntentLogged);

    // Both files are written and synced before either is renamed: a failure here leaves the
    // config and its previous backup as they were.
    let owner_only = fs::canonicalize(dir_of(&paths.given)).ok().as_deref() != Some(paths.real_dir.as_path());
    let staged = (|| -> Result<(TempFile, TempFile)> {
        let mut backup = TempFile::create(&dir_of(&paths.backup), &file_name_of(&paths.backup)?, &meta, owner_only)?;
        backup.write_synced(&original)?;
        crash_point(args, Step::BackupWritten);
        let mut config = TempFile::create(&paths.real_dir, &paths.real_name, &meta, false)?;
        config.write_synced(&updated)?;
        crash_point(args, Step::ConfigWritten);
        // The cheap check first, so a change seen now keeps the previous backup too.
        let (_, now) = read_regular(&paths.real, "config", MAX_CONFIG_BYTES)?;
        if now != original {
            bail!(
                "the config {} changed while apply ran (another program wrote it); NOT deployed, its new content kept",
                paths.given.display()
            );
        }
        Ok((backup, config))
    })();
    let (backup, config) = match staged {
        Ok(files) => files,
        Err(e) => return Err(not_deployed(&mut ledger, &mut lock, e, false)),
    };
    if let Err(e) = backup.commit(&paths.backup) {
        return Err(not_deployed(&mut ledger, &mut lock, e, false));
    }
    crash_point(args, Step::BackupRenamed);
    if let Err(e) = config.commit_if_unchanged(&paths.real, &original, || crash_point(args, Step::ConfigRenamed)) {
        return Err(not_deployed(&mut ledger, &mut lock, e, true));
    }
    let extra = json!({
        "config": paths.real.display().to_string(),
        "backup": paths.backup.display().to_string(),
    });
    finish(args, &v, &mut ledger, Some(&mut lock), intent, &model_path, extra)
}

/// The deployed entry after a deploy; a failure to write it still says the model is deployed.
fn finish(
    args: &ApplyArgs,
    v: &Verified,
    ledger: &mut LedgerFile,
    lock: Option<&mut ConfigLock>,
    intent: Entry,
    model_path: &str,
    extra: serde_json::Value,
) -> Result<u8> {
    let mut done = intent;
    done.result = Outcome::Deployed;
    done.applied_at = time::format_rfc3339(now());
    if let Err(e) = ledger.append(&done) {
        report(v, "deployed_unrecorded", &ledger.path, extra)?;
        eprintln!(
            "deploy-gate: DEPLOYED {} ({model_path}) — the model IS deployed, but the ledger could not record it: {e:#}. Its intent entry is there: the next apply records the deploy and will not deploy this decision again.",
            v.model_name
        );
        return Ok(EXIT_DEPLOYED_UNRECORDED);
    }
    if let Some(lock) = lock {
        if let Err(e) = lock.record(&done, Outcome::Deployed) {
            // Its intent is in the record: no apply replaces the config with this decision again.
            eprintln!("deploy-gate: warning: {e:#} (the ledger has the deploy)");
        }
    }
    crash_point(args, Step::OutcomeLogged);
    report(v, "deployed", &ledger.path, extra)?;
    eprintln!("deploy-gate: DEPLOYED {} ({model_path}) — {}", v.model_name, v.reason);
    Ok(EXIT_OK)
}

// ---------------------------------------------------------------- rollback

/// Restores the config from the backup `apply` made (upstream's name, else the legacy one),
/// under the config's lock and the ledger's: interrupted applies are resolved first, and the
/// decision whose deploy is undone gets a `rolled_back` entry, so it is not applied again.
pub fn rollback_cmd(config: &Path, ledger: Option<&Path>) -> Result<u8> {
    let paths = ConfigPaths::resolve(config)?;
    let mut lock = lock_config(&paths)?;
    let ledger_path = ledger.map_or_else(|| paths.default_ledger(), Path::to_path_buf);
    let mut ledger = LedgerFile::open_locked(&ledger_path)?;
    check_backup_name_is_ours(&paths)?;
    remove_stale_temps(&paths.real_dir, &paths.real_name)?;
    resolve_pending(&mut ledger, &paths, Some(&mut lock))?;
    let present = |p: &Path| fs::symlink_metadata(p).is_ok();
    let (backup, which) = if present(&paths.backup) {
        (&paths.backup, "the backup")
    } else if present(&paths.legacy_backup) {
        (&paths.legacy_backup, "the legacy-named backup")
    } else {
        bail!(
            "no backup to restore: neither {} nor {} exists",
            paths.backup.display(),
            paths.legacy_backup.display()
        );
    };
    let (backup_meta, bytes) = read_regular(backup, "backup", MAX_CONFIG_BYTES)?;
    let (like, current) = match read_regular(&paths.real, "config", MAX_CONFIG_BYTES) {
        Ok((m, b)) => (m, Some(b)),
        Err(_) if !present(&paths.real) => (backup_meta, None),
        Err(e) => return Err(e),
    };
    if let Some(n) = current.as_ref().and(fs::metadata(&paths.real).ok()).map(|m| m.nlink()) {
        if n != 1 {
            bail!(
                "the config {} has {n} hard links; refused, nothing restored (replacing it would leave its other names as they are)",
                config.display()
            );
        }
    }
    // The decision whose deploy the config holds now.
    let now_sha = current.as_deref().map(sha256_hex);
    let real = paths.real.display().to_string();
    let undone = ledger
        .parsed
        .entries
        .iter()
        .rev()
        .find(|e| {
            e.result == Outcome::Deployed
                && e.config.as_deref() == Some(real.as_str())
                && e.config_sha256_after.is_some()
                && e.config_sha256_after == now_sha
                && ledger.parsed.last(&e.payload_sha256).map(|l| l.result) == Some(Outcome::Deployed)
        })
        .cloned();
    replace_file(&paths.real, &bytes, &like, || {})?;
    eprintln!(
        "deploy-gate: restored {} from {which} {}",
        config.display(),
        backup.display()
    );
    match undone {
        Some(entry) => {
            let mut rolled = entry;
            rolled.result = Outcome::RolledBack;
            rolled.applied_at = time::format_rfc3339(now());
            rolled.recovered = false;
            rolled.unchanged = false;
            ledger.append(&rolled).context(
                "the config IS restored, but the ledger could not record the rollback (the decision stays recorded as deployed)",
            )?;
            lock.record(&rolled, Outcome::RolledBack)?;
            eprintln!(
                "deploy-gate: recorded decision {} as rolled back in the ledger {}",
                rolled.payload_sha256,
                ledger.path.display()
            );
        }
        None => {
            // Deployed through another ledger: the config's own record still gets it, so no
            // apply deploys that decision to this config again.
            let in_record = now_sha.as_deref().and_then(|now_sha| {
                lock.record
                    .deployed_as(now_sha)
                    .map(|(p, r)| (p.to_owned(), r.before.clone(), r.after.clone()))
            });
            match in_record {
                Some((payload, before, after)) => {
                    let mut rolled = Entry::new(&payload, Outcome::RolledBack, &time::format_rfc3339(now()));
                    rolled.config_sha256_before = before;
                    rolled.config_sha256_after = after;
                    lock.record(&rolled, Outcome::RolledBack)?;
                    eprintln!(
                        "deploy-gate: decision {payload} is recorded as rolled back in the config's record {}; the ledger {} does not have it (give apply's --ledger to record it there too)",
                        lock.path.display(),
                        ledger.path.display()
                    );
                }
                None => eprintln!(
                    "deploy-gate: neither the ledger {} nor the config's record has a deployed decision whose config this was; nothing recorded",
                    ledger.path.display()
                ),
            }
        }
    }
    Ok(EXIT_OK)
}
