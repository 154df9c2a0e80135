//! `apply` and `rollback` for every native shell (Unix only): verify a signed decision and
//! deploy it exactly once, leaving a truthful state at every crash or error point; restore the
//! config `apply` saved. The CLI and the Python binding map the typed outcome ([`Applied`],
//! [`RolledBack`]) and error ([`ApplyError`]) to their output, exit codes and exceptions; what
//! is said along the way goes to the caller's [`Notify`].
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
//! Without a ledger given, the ledger is `NAME.deploy-gate-ledger.jsonl` beside that same file,
//! so replay protection always holds.
//!
//! # The sequence of a built-in deploy, and what each crash point ([`Step`]) leaves
//! 1. Lock; cut a torn last ledger line (`Ledger::repair` says whether and where); remove
//!    temporary files an interrupted apply left; resolve the config's unresolved intents
//!    (below). Crash: nothing changed but those repairs.
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
//!    the intent says so ([`Applied::DeployedUnrecorded`]), and the next apply records it.
//!
//! A config that holds this deploy's bytes already is not written at all (no backup either):
//! the decision is recorded as deployed, `unchanged`.
//!
//! # What remains
//! The model is deployed as a path, not as a pinned copy: it is hashed under the locks, just
//! before the config is edited, but whoever can write the model directory can change it after
//! that hash.

mod trust;

pub use crate::native::files::{FailAt, Step};
pub use trust::{check, check_trust, read_envelope_for, read_ledger, Trust, DEFAULT_MAX_AGE};

use crate::attest::keys::KeyError;
use crate::attest::ledger::record::RecordedResult;
use crate::attest::ledger::{self, Entry, Outcome};
use crate::attest::{time, Check, Failure, Summary, VerificationResult, Verified};
use crate::deploy::{deploy_config, normalize_model_path, Change, MAX_CONFIG_BYTES};
use crate::native::files::locks::{lock_config, ConfigLock, ConfigPaths, LedgerFile};
use crate::native::files::replace::{dir_of, file_name_of, remove_stale_temps, replace_file, utf8, TempFile};
use crate::native::files::{
    backup_owner_only, chain, check_backup_name_is_ours, read_config, read_regular, FilesError, Notice, Notify,
};
use serde_json::{json, Value};
use std::fs;
use std::io;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitStatus};
use std::time::{SystemTime, UNIX_EPOCH};

/// Why an apply or a rollback stopped (the CLI's exit 1). Nothing was deployed unless the
/// message says it was; the messages are the CLI's.
#[derive(Debug, thiserror::Error)]
pub enum ApplyError {
    /// A file could not be read, locked, written or replaced, or was refused.
    #[error(transparent)]
    Files(#[from] FilesError),
    /// The model folder read for the trainer's signature could not be read.
    #[error(transparent)]
    Model(Box<crate::native::oms::ModelError>),
    /// A trusted key is not an SPKI PEM Ed25519 key.
    #[error("{}: {error}", .path.display())]
    TrustedKey {
        /// The key file.
        path: PathBuf,
        /// What is wrong.
        error: KeyError,
    },
    /// The ledger cannot be read (by a read-only check).
    #[error("the ledger {}", .path.display())]
    ReadLedger {
        /// The ledger.
        path: PathBuf,
        /// Why.
        #[source]
        source: FilesError,
    },
    /// The envelope cannot be read.
    #[error("cannot read envelope {}", .path.display())]
    ReadEnvelope {
        /// The envelope.
        path: PathBuf,
        /// Why.
        #[source]
        source: io::Error,
    },
    /// The deploy or rollback command could not be started.
    #[error("cannot run the {what} command `{program}`")]
    Spawn {
        /// "deploy" or "rollback".
        what: &'static str,
        /// The program.
        program: String,
        /// Why.
        #[source]
        source: io::Error,
    },
    /// The deploy or rollback command failed.
    #[error("the {what} command `{program}` failed ({status})")]
    CommandFailed {
        /// "deploy" or "rollback".
        what: &'static str,
        /// The program.
        program: String,
        /// How it ended.
        status: ExitStatus,
    },
    /// Nothing was deployed: `context` says so and what was left as it was and recorded
    /// (`NOT deployed: this apply did not replace … (the backup is as it was; recorded as not
    /// deployed)`); `source` says why.
    #[error("{context}")]
    NotDeployed {
        /// What was left, and how it is recorded.
        context: String,
        /// Why.
        #[source]
        source: Box<ApplyError>,
    },
    /// The decision keeps the old model, and it was kept (the rollback command ran, if one was
    /// given), but the ledger could not record it: a later apply of it is not refused.
    #[error("KEPT the old model ({}), but the ledger could not record the decision", if *.rollback_ran { "the rollback command ran" } else { "nothing was changed" })]
    KeptOldUnrecorded {
        /// Whether a rollback command ran.
        rollback_ran: bool,
        /// Why the ledger could not record it.
        #[source]
        source: FilesError,
    },
    /// `rollback` found no backup.
    #[error("no backup to restore: neither {} nor {} exists", .backup.display(), .legacy.display())]
    NoBackup {
        /// Upstream's backup name.
        backup: PathBuf,
        /// The name earlier versions used.
        legacy: PathBuf,
    },
    /// `rollback` refuses a config with other hard links.
    #[error("the config {} has {links} hard links; refused, nothing restored (replacing it would leave its other names as they are)", .path.display())]
    RollbackHardLinks {
        /// The config as given.
        path: PathBuf,
        /// Its link count.
        links: u64,
    },
    /// The config is restored, but the ledger could not record the rollback.
    #[error("the config IS restored, but the ledger could not record the rollback (the decision stays recorded as deployed)")]
    RollbackUnrecorded {
        /// Why.
        #[source]
        source: FilesError,
    },
}

impl ApplyError {
    /// The message with its causes (as the CLI prints it after `deploy-gate: error: `).
    pub fn message(&self) -> String {
        chain(self)
    }

    fn not_deployed(context: impl Into<String>, source: impl Into<ApplyError>) -> ApplyError {
        ApplyError::NotDeployed {
            context: context.into(),
            source: Box::new(source.into()),
        }
    }
}

/// An apply: the decision, what it is checked against, and the deploy to make.
#[derive(Debug, Clone)]
pub struct ApplyOptions {
    /// The envelope (`decision.dsse.json`).
    pub envelope: PathBuf,
    /// The trusted keys, threshold, age, ledger and size limit.
    pub trust: Trust,
    /// The model to deploy (file or directory); its digest must be the statement's subject.
    pub model_path: PathBuf,
    /// The serving config (YAML) the built-in deploy edits (a symlink is followed: the file
    /// it points to is replaced and the link kept).
    pub config: PathBuf,
    /// The target the decision must name. Default (`None`): the config path as given.
    pub target: Option<String>,
    /// The serving backend to set: `transformers` (the default), `vllm` or `api`.
    pub backend: String,
    /// `model` set on stages of the config (upstream's stage_model_map). Default none.
    pub stage_models: Vec<(String, String)>,
    /// A program and its arguments run instead of the built-in deploy (values in
    /// `DEPLOY_GATE_*` environment variables, never through a shell). Default none.
    pub deploy_cmd: Vec<String>,
    /// A program and its arguments run when the decision keeps the old model. Default none.
    pub rollback_cmd: Vec<String>,
    /// Verify and say what would be done, without doing it. Default false.
    pub dry_run: bool,
    /// The crash points' test hook. Default: none.
    pub fail_at: FailAt,
    /// The trainer's OpenSSF Model Signing signature to check against the model's files, and
    /// that it names the same model as the decision. Default: none.
    pub model_signature: Option<crate::native::oms::ModelSignature>,
}

impl ApplyOptions {
    /// An apply of `envelope` with `model_path` to `config`, every other option its default.
    pub fn new(
        envelope: impl Into<PathBuf>,
        model_path: impl Into<PathBuf>,
        config: impl Into<PathBuf>,
    ) -> ApplyOptions {
        ApplyOptions {
            envelope: envelope.into(),
            trust: Trust::default(),
            model_path: model_path.into(),
            config: config.into(),
            target: None,
            backend: "transformers".to_owned(),
            stage_models: Vec::new(),
            deploy_cmd: Vec::new(),
            rollback_cmd: Vec::new(),
            dry_run: false,
            fail_at: FailAt::default(),
            model_signature: None,
        }
    }
}

/// A deploy that happened: the verified decision and where it went.
#[derive(Debug, Clone)]
pub struct Deploy {
    /// The verified decision.
    pub decision: Verified,
    /// The ledger the decision is recorded in.
    pub ledger: PathBuf,
    /// The model path as written into the config (normalised as upstream writes it).
    pub model_path: String,
    /// The config replaced (after every symlink), by the built-in deploy; `None` when a deploy
    /// command ran or the config was unchanged.
    pub config: Option<PathBuf>,
    /// The backup written beside the config, by the built-in deploy.
    pub backup: Option<PathBuf>,
    /// The config held this deploy already: nothing was written, the backup left as it was.
    pub unchanged: bool,
    /// The trainer's verified model signature, when one was checked.
    pub trainer: Option<crate::oms::Verified>,
}

/// What an apply did (every outcome but an error).
#[derive(Debug)]
pub enum Applied {
    /// Deployed, and recorded (the CLI's exit 0).
    Deployed(Deploy),
    /// Deployed, but the ledger could not record it (the CLI's exit 4): its intent entry is
    /// there, so the next apply records the deploy and does not deploy this decision again.
    DeployedUnrecorded(Deploy, FilesError),
    /// The decision keeps the old model: nothing deployed (the rollback command ran, if one
    /// was given), recorded (the CLI's exit 3).
    KeptOld {
        /// The verified decision.
        decision: Verified,
        /// The ledger it is recorded in.
        ledger: PathBuf,
        /// The trainer's verified model signature, when one was checked.
        trainer: Option<crate::oms::Verified>,
    },
    /// A dry run: the decision verified; nothing done (exit 0 if it approves, else 3).
    DryRun(Verified),
    /// Verification failed, or the decision was applied already (`Check::Replayed`): nothing
    /// done (the CLI's exit 2).
    Refused(Failure),
    /// The trainer's model signature failed a check (or names another model than the
    /// decision): nothing done (the CLI's exit 2).
    ModelRefused(crate::oms::OmsError),
}

impl Applied {
    /// The word of the result: `deployed`, `deployed_unrecorded`, `kept_old`, `dry_run`,
    /// `refused`.
    pub fn result(&self) -> &'static str {
        match self {
            Applied::Deployed(_) => "deployed",
            Applied::DeployedUnrecorded(..) => "deployed_unrecorded",
            Applied::KeptOld { .. } => "kept_old",
            Applied::DryRun(_) => "dry_run",
            Applied::Refused(_) | Applied::ModelRefused(_) => "refused",
        }
    }

    /// The CLI's stdout JSON: `{"result", "decision", "ledger"}` and, for a built-in deploy,
    /// `"config"` and `"backup"` (or `"unchanged": true`); a dry run prints the decision's
    /// summary, a refusal the failure (`{"valid": false, "check", "message"}`).
    pub fn to_json(&self) -> Value {
        let head = |result: &str, v: &Verified, ledger: &Path| json!({"result": result, "decision": Summary::of(v), "ledger": ledger.display().to_string()});
        match self {
            Applied::Deployed(d) | Applied::DeployedUnrecorded(d, _) => {
                let mut out = head(self.result(), &d.decision, &d.ledger);
                let o = out.as_object_mut().expect("an object");
                if let Some(c) = &d.config {
                    o.insert("config".into(), json!(c.display().to_string()));
                }
                if let Some(b) = &d.backup {
                    o.insert("backup".into(), json!(b.display().to_string()));
                }
                if d.unchanged {
                    o.insert("unchanged".into(), json!(true));
                }
                if let Some(t) = &d.trainer {
                    o.insert("trainer".into(), trainer_json(t));
                }
                out
            }
            Applied::KeptOld {
                decision,
                ledger,
                trainer,
            } => {
                let mut out = head("kept_old", decision, ledger);
                if let Some(t) = trainer {
                    out["trainer"] = trainer_json(t);
                }
                out
            }
            Applied::DryRun(v) => serde_json::to_value(Summary::of(v)).expect("a summary serializes"),
            Applied::Refused(f) => serde_json::to_value(f).expect("a failure serializes"),
            Applied::ModelRefused(e) => model_failure_json(e),
        }
    }
}

/// The trainer's verified signature as the CLI prints it.
pub fn trainer_json(t: &crate::oms::Verified) -> Value {
    let mut out = json!({
        "key_id": t.key_id,
        "key_hint": t.key_hint,
        "curve": t.curve,
        "signed_by": t.signed_by,
        "model": t.model_name,
        "model_digest": format!("sha256:{}", t.subject_digest_hex()),
        "method": t.method.name(),
        "resources": t.resources.len(),
    });
    // Keyless: the signer is the identity and issuer; the certificate's key lived ten minutes.
    if let Some((identity, issuer)) = t.keyless_signer() {
        out["key_id"] = Value::Null;
        out["key_hint"] = Value::Null;
        out["identity"] = json!(identity);
        out["issuer"] = json!(issuer);
    }
    out
}

/// A failed model-signature check as the CLI prints it: `{"valid": false, "check", "message"}`
/// and the file concerned, if any.
pub fn model_failure_json(e: &crate::oms::OmsError) -> Value {
    let mut out = json!({"valid": false, "check": e.check, "message": e.detail});
    if let Some(f) = &e.file {
        out["file"] = json!(f);
    }
    out
}

/// The model's digest for the decision, and the trainer's signature checked; `Ok(Err(..))` is
/// a failed model-signature check.
fn identify_model(
    opts: &ApplyOptions,
    envelope: &[u8],
) -> Result<Result<crate::native::oms::ModelIdentity, crate::oms::OmsError>, ApplyError> {
    use crate::native::oms::{identify, ModelError};
    match identify(&opts.model_path, envelope, opts.model_signature.as_ref()) {
        Ok(id) => Ok(Ok(id)),
        Err(ModelError::Check(e)) => Ok(Err(e)),
        Err(e) => Err(ApplyError::Model(Box::new(e))),
    }
}

/// Says which trainer key signed the model, and how it was matched with the decision.
pub(crate) fn trainer_notice(id: &crate::native::oms::ModelIdentity, notify: &mut Notify<'_>) {
    if let Some(t) = &id.trainer {
        notify(Notice::info(format!(
            "the trainer's model signature verified: {}, model `{}` sha256:{}, {} resources (by {}); the decision names the same model (by {})",
            t.signer(),
            t.model_name,
            t.subject_digest_hex(),
            t.resources.len(),
            t.method.name(),
            id.matched_by()
        )));
    }
}

/// Now, in Unix seconds.
pub fn unix_now() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs() as i64)
        .unwrap_or(0)
}

fn stamp() -> String {
    time::format_rfc3339(unix_now())
}

fn sha256_hex(bytes: &[u8]) -> String {
    crate::attest::file_digest(bytes)
}

fn entry_for(v: &Verified, result: Outcome) -> Entry {
    let mut e = Entry::new(&v.payload_sha256, result, &stamp());
    e.model = Some(v.model_name.clone());
    e.model_digest = Some(format!("sha256:{}", v.model_sha256));
    e.target = Some(v.target.clone());
    e.signers = v.signers.clone();
    e
}

/// Records the outcome of this config's interrupted intents, from the config's bytes now.
fn resolve_pending(
    ledger: &mut LedgerFile,
    paths: &ConfigPaths,
    mut lock: Option<&mut ConfigLock>,
    notify: &mut Notify<'_>,
) -> Result<(), ApplyError> {
    let real = paths.real.display().to_string();
    let pending: Vec<Entry> = ledger.parsed.pending().into_iter().cloned().collect();
    for intent in pending {
        if intent.config.as_deref() != Some(real.as_str()) {
            notify(Notice::warning(format!(
                "the ledger {} has an interrupted apply of decision {} to {}; the next apply to that config resolves it",
                ledger.path.display(),
                intent.payload_sha256,
                intent.config.as_deref().or(intent.target.as_deref()).unwrap_or("?")
            )));
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
        entry.applied_at = stamp();
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
        notify(Notice::info(format!(
            "the ledger {} had an interrupted apply of decision {} (intent at {}): {what}",
            ledger.path.display(),
            intent.payload_sha256,
            intent.applied_at
        )));
    }
    Ok(())
}

fn run_program(argv: &[String], env: &[(&str, String)], what: &'static str) -> Result<(), ApplyError> {
    let status = Command::new(&argv[0])
        .args(&argv[1..])
        .envs(env.iter().map(|(k, v)| (*k, v.as_str())))
        .status()
        .map_err(|source| ApplyError::Spawn {
            what,
            program: argv[0].clone(),
            source,
        })?;
    if !status.success() {
        return Err(ApplyError::CommandFailed {
            what,
            program: argv[0].clone(),
            status,
        });
    }
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

/// Verifies the decision at `opts.envelope` and applies it exactly once: the built-in deploy
/// (the config edited, upstream's backup, atomic replacement) or `opts.deploy_cmd` for an
/// approved decision, `opts.rollback_cmd` (if any) for one that keeps the old model, each
/// recorded in the ledger and the config's record. See the module's documentation for the
/// sequence and what each crash point leaves.
pub fn apply(opts: &ApplyOptions, notify: &mut Notify<'_>) -> Result<Applied, ApplyError> {
    let model_text = utf8(&opts.model_path, "model path")?;
    let target = match &opts.target {
        Some(t) => t.clone(),
        None => utf8(&opts.config, "config path")?.to_owned(),
    };
    let model_path = normalize_model_path(model_text);
    let paths = ConfigPaths::resolve(&opts.config)?;
    let ledger_path = opts.trust.ledger.clone().unwrap_or_else(|| paths.default_ledger());
    // Read once: the same bytes name the digest scheme and are verified.
    let envelope = match read_envelope_for(&opts.envelope, &opts.trust)? {
        Ok(bytes) => bytes,
        Err(failure) => return Ok(Applied::Refused(failure)),
    };

    if opts.dry_run {
        let id = match identify_model(opts, &envelope)? {
            Ok(id) => id,
            Err(e) => return Ok(Applied::ModelRefused(e)),
        };
        let mut trust = opts.trust.clone();
        trust.ledger = None;
        let v = match check(&envelope, &trust, &id.digest, &target, unix_now(), notify)? {
            Ok(v) => v,
            Err(failure) => return Ok(Applied::Refused(failure)),
        };
        if let Err(failure) = id.check_scheme(&v) {
            return Ok(Applied::Refused(failure));
        }
        if let Err(e) = id.check_same_model(&v.model_sha256) {
            return Ok(Applied::ModelRefused(e));
        }
        trainer_notice(&id, notify);
        if read_ledger(Some(&ledger_path), notify)?.applied(&v.payload_sha256) {
            return Ok(Applied::Refused(Failure::new(
                Check::Replayed,
                format!(
                    "decision {} is in the ledger {} already",
                    v.payload_sha256,
                    ledger_path.display()
                ),
            )));
        }
        return Ok(Applied::DryRun(v));
    }

    let mut config_lock = match lock_config(&paths) {
        Ok(lock) => Some(lock),
        // A deploy command does not write beside the config, which may be read-only (a
        // ConfigMap mount); the ledger's lock still holds.
        Err(e)
            if !opts.deploy_cmd.is_empty()
                && e.os_error()
                    .and_then(io::Error::raw_os_error)
                    .is_some_and(|c| [libc::EROFS, libc::EACCES, libc::EPERM].contains(&c)) =>
        {
            notify(Notice::warning(format!("{}; only the ledger is locked", chain(&e))));
            None
        }
        Err(e) => return Err(e.into()),
    };
    let mut ledger = LedgerFile::open_locked(&ledger_path, notify)?;
    opts.fail_at.reached(Step::Locked, notify);
    remove_stale_temps(&paths.real_dir, &paths.real_name, notify)?;
    if opts.deploy_cmd.is_empty() {
        // Before the backup's temporary files are touched: they could be another config's.
        check_backup_name_is_ours(&paths).map_err(|e| ApplyError::not_deployed("NOT deployed", e))?;
        remove_stale_temps(&dir_of(&paths.backup), &file_name_of(&paths.backup)?, notify)?;
    }
    resolve_pending(&mut ledger, &paths, config_lock.as_mut(), notify)?;

    // The model is hashed under the locks, right before it is verified and deployed (with the
    // trainer's signature checked against the same files, when one is given).
    let id = match identify_model(opts, &envelope)? {
        Ok(id) => id,
        Err(e) => return Ok(Applied::ModelRefused(e)),
    };
    // The replay check is made here, against the ledger read under its lock.
    let mut trust = opts.trust.clone();
    trust.ledger = None;
    let v = match check(&envelope, &trust, &id.digest, &target, unix_now(), notify)? {
        Ok(v) => v,
        Err(failure) => return Ok(Applied::Refused(failure)),
    };
    if let Err(failure) = id.check_scheme(&v) {
        return Ok(Applied::Refused(failure));
    }
    if let Err(e) = id.check_same_model(&v.model_sha256) {
        return Ok(Applied::ModelRefused(e));
    }
    trainer_notice(&id, notify);
    let trainer_key = id.trainer.as_ref().and_then(|t| t.trainer_key()).map(str::to_owned);
    let keyless = id.trainer.as_ref().and_then(|t| t.keyless_signer());
    let (trainer_identity, trainer_issuer) = (keyless.map(|k| k.0.to_owned()), keyless.map(|k| k.1.to_owned()));
    let entry_for = |v: &Verified, result: Outcome| {
        let mut e = entry_for(v, result);
        e.trainer_key = trainer_key.clone();
        e.trainer_identity = trainer_identity.clone();
        e.trainer_issuer = trainer_issuer.clone();
        e
    };
    if ledger.parsed.applied(&v.payload_sha256) {
        let last = ledger.parsed.last(&v.payload_sha256).expect("applied");
        return Ok(Applied::Refused(Failure::new(
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
        ("DEPLOY_GATE_CONFIG", utf8(&opts.config, "config path")?.to_owned()),
        ("DEPLOY_GATE_TARGET", v.target.clone()),
        ("DEPLOY_GATE_BACKEND", opts.backend.clone()),
        ("DEPLOY_GATE_SIGNERS", v.signers.join(",")),
        ("DEPLOY_GATE_PAYLOAD_SHA256", v.payload_sha256.clone()),
        // Empty when no trainer's signature was checked.
        ("DEPLOY_GATE_TRAINER_KEY", trainer_key.clone().unwrap_or_default()),
        // Empty unless the trainer signed by the keyless method.
        (
            "DEPLOY_GATE_TRAINER_IDENTITY",
            trainer_identity.clone().unwrap_or_default(),
        ),
        ("DEPLOY_GATE_TRAINER_ISSUER", trainer_issuer.clone().unwrap_or_default()),
    ];

    if !v.approved {
        let rollback_ran = !opts.rollback_cmd.is_empty();
        if rollback_ran {
            run_program(&opts.rollback_cmd, &env, "rollback")?;
        }
        ledger
            .append(&entry_for(&v, Outcome::KeptOld))
            .map_err(|source| ApplyError::KeptOldUnrecorded { rollback_ran, source })?;
        opts.fail_at.reached(Step::OutcomeLogged, notify);
        return Ok(Applied::KeptOld {
            decision: v,
            ledger: ledger.path.clone(),
            trainer: id.trainer,
        });
    }

    let deploy = |decision: Verified, ledger: &LedgerFile| Deploy {
        decision,
        ledger: ledger.path.clone(),
        model_path: model_path.clone(),
        config: None,
        backup: None,
        unchanged: false,
        trainer: id.trainer.clone(),
    };

    if !opts.deploy_cmd.is_empty() {
        let mut intent = entry_for(&v, Outcome::Intent);
        intent.action = Some("command".into());
        intent.config = Some(paths.real.display().to_string());
        ledger
            .append(&intent)
            .map_err(|e| ApplyError::not_deployed("NOT deployed: the deploy command was not run", e))?;
        opts.fail_at.reached(Step::IntentLogged, notify);
        if let Err(e) = run_program(&opts.deploy_cmd, &env, "deploy") {
            let mut failed = intent.clone();
            failed.result = Outcome::NotDeployed;
            failed.applied_at = stamp();
            let recorded = match ledger.append(&failed) {
                Ok(()) => "recorded as not deployed".to_owned(),
                Err(le) => format!("{}; the next apply records it as unknown", chain(&le)),
            };
            return Err(ApplyError::not_deployed(format!("NOT deployed ({recorded})"), e));
        }
        let done = deploy(v, &ledger);
        return Ok(finish(opts, done, &mut ledger, None, intent, notify));
    }
    let mut lock = config_lock.expect("the built-in deploy always locks the config");

    // The built-in edit.
    let (meta, original) = read_config(&paths)?;
    let change = Change {
        model_path: model_text,
        backend: &opts.backend,
        stage_models: &opts.stage_models,
    };
    let updated = deploy_config(&original, &change).map_err(|error| FilesError::Edit {
        path: paths.given.clone(),
        error,
    })?;
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
        opts.fail_at.reached(Step::OutcomeLogged, notify);
        let mut d = deploy(v, &ledger);
        d.unchanged = true;
        return Ok(Applied::Deployed(d));
    }
    if let Some(result) = recorded_here {
        let result = match &result {
            RecordedResult::Known(Outcome::RolledBack) => "rolled_back: it was deployed, then rolled back",
            other => other.as_str(),
        };
        return Ok(Applied::Refused(Failure::new(
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
        .map_err(|e| ApplyError::not_deployed(format!("NOT deployed: {} is unchanged", paths.given.display()), e))?;
    let not_deployed = |ledger: &mut LedgerFile, lock: &mut ConfigLock, e: FilesError, backup_replaced: bool| {
        let mut failed = intent.clone();
        failed.result = Outcome::NotDeployed;
        failed.applied_at = stamp();
        let recorded = match ledger
            .append(&failed)
            .and_then(|()| lock.record(&failed, Outcome::NotDeployed))
        {
            Ok(()) => "recorded as not deployed".to_owned(),
            Err(le) => format!("{}; the next apply records it", chain(&le)),
        };
        ApplyError::not_deployed(
            format!(
                "NOT deployed: this apply did not replace {} ({}; {recorded})",
                paths.given.display(),
                if backup_replaced {
                    "the backup holds the config as this apply read it"
                } else {
                    "the backup is as it was"
                }
            ),
            e,
        )
    };
    if let Err(e) = lock.record(&intent, Outcome::Intent) {
        return Err(not_deployed(&mut ledger, &mut lock, e, false));
    }
    opts.fail_at.reached(Step::IntentLogged, notify);

    // Both files are written and synced before either is renamed: a failure here leaves the
    // config and its previous backup as they were.
    let owner_only = backup_owner_only(&paths);
    let mut staged = || -> Result<(TempFile, TempFile), FilesError> {
        let mut backup = TempFile::create(&dir_of(&paths.backup), &file_name_of(&paths.backup)?, &meta, owner_only)?;
        backup.write_synced(&original)?;
        opts.fail_at.reached(Step::BackupWritten, notify);
        let mut config = TempFile::create(&paths.real_dir, &paths.real_name, &meta, false)?;
        config.write_synced(&updated)?;
        opts.fail_at.reached(Step::ConfigWritten, notify);
        // The cheap check first, so a change seen now keeps the previous backup too.
        let (_, now) = read_regular(&paths.real, "config", MAX_CONFIG_BYTES)?;
        if now != original {
            return Err(FilesError::ConfigChanged {
                path: paths.given.clone(),
                source: None,
            });
        }
        Ok((backup, config))
    };
    let (backup, config) = match staged() {
        Ok(files) => files,
        Err(e) => return Err(not_deployed(&mut ledger, &mut lock, e, false)),
    };
    if let Err(e) = backup.commit(&paths.backup, notify) {
        return Err(not_deployed(&mut ledger, &mut lock, e, false));
    }
    opts.fail_at.reached(Step::BackupRenamed, notify);
    if let Err(e) = config.commit_if_unchanged(&paths.real, &original, notify) {
        return Err(not_deployed(&mut ledger, &mut lock, e, true));
    }
    opts.fail_at.reached(Step::ConfigRenamed, notify);
    let mut done = deploy(v, &ledger);
    done.config = Some(paths.real.clone());
    done.backup = Some(paths.backup.clone());
    Ok(finish(opts, done, &mut ledger, Some(&mut lock), intent, notify))
}

/// The deployed entry after a deploy; a failure to write it still says the model is deployed.
fn finish(
    opts: &ApplyOptions,
    deploy: Deploy,
    ledger: &mut LedgerFile,
    lock: Option<&mut ConfigLock>,
    intent: Entry,
    notify: &mut Notify<'_>,
) -> Applied {
    let mut done = intent;
    done.result = Outcome::Deployed;
    done.applied_at = stamp();
    if let Err(e) = ledger.append(&done) {
        return Applied::DeployedUnrecorded(deploy, e);
    }
    if let Some(lock) = lock {
        if let Err(e) = lock.record(&done, Outcome::Deployed) {
            // Its intent is in the record: no apply replaces the config with this decision again.
            notify(Notice::warning(format!("{} (the ledger has the deploy)", chain(&e))));
        }
    }
    opts.fail_at.reached(Step::OutcomeLogged, notify);
    Applied::Deployed(deploy)
}

/// Where a rollback recorded the decision whose deploy it undid.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RollbackRecord {
    /// In the ledger (and the config's record): a `rolled_back` entry for this decision.
    Ledger(String),
    /// Only in the config's record: the decision was deployed through another ledger.
    ConfigRecord(String),
    /// Neither has a deployed decision whose config this was: nothing recorded.
    Nothing,
}

impl RollbackRecord {
    /// The decision's payload sha256, when one was recorded.
    pub fn decision(&self) -> Option<&str> {
        match self {
            RollbackRecord::Ledger(p) | RollbackRecord::ConfigRecord(p) => Some(p),
            RollbackRecord::Nothing => None,
        }
    }
}

/// What a rollback did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RolledBack {
    /// The config restored (as given).
    pub config: PathBuf,
    /// The backup it was restored from.
    pub backup: PathBuf,
    /// The backup had the name earlier versions used (`NAME.backup`).
    pub legacy_backup: bool,
    /// The ledger.
    pub ledger: PathBuf,
    /// Where the decision undone was recorded.
    pub recorded: RollbackRecord,
}

/// Restores the config from the backup `apply` made (upstream's name, else the legacy one),
/// under the config's lock and the ledger's: interrupted applies are resolved first, and the
/// decision whose deploy is undone gets a `rolled_back` entry, so it is not applied again.
/// `ledger`: default `NAME.deploy-gate-ledger.jsonl` beside the config.
pub fn rollback(config: &Path, ledger: Option<&Path>, notify: &mut Notify<'_>) -> Result<RolledBack, ApplyError> {
    let paths = ConfigPaths::resolve(config)?;
    let mut lock = lock_config(&paths)?;
    let ledger_path = ledger.map_or_else(|| paths.default_ledger(), Path::to_path_buf);
    let mut ledger = LedgerFile::open_locked(&ledger_path, notify)?;
    check_backup_name_is_ours(&paths)?;
    remove_stale_temps(&paths.real_dir, &paths.real_name, notify)?;
    resolve_pending(&mut ledger, &paths, Some(&mut lock), notify)?;
    let present = |p: &Path| fs::symlink_metadata(p).is_ok();
    let (backup, legacy_backup) = if present(&paths.backup) {
        (&paths.backup, false)
    } else if present(&paths.legacy_backup) {
        (&paths.legacy_backup, true)
    } else {
        return Err(ApplyError::NoBackup {
            backup: paths.backup.clone(),
            legacy: paths.legacy_backup.clone(),
        });
    };
    let (backup_meta, bytes) = read_regular(backup, "backup", MAX_CONFIG_BYTES)?;
    let (like, current) = match read_regular(&paths.real, "config", MAX_CONFIG_BYTES) {
        Ok((m, b)) => (m, Some(b)),
        Err(_) if !present(&paths.real) => (backup_meta, None),
        Err(e) => return Err(e.into()),
    };
    if let Some(n) = current.as_ref().and(fs::metadata(&paths.real).ok()).map(|m| m.nlink()) {
        if n != 1 {
            return Err(ApplyError::RollbackHardLinks {
                path: config.to_path_buf(),
                links: n,
            });
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
    replace_file(&paths.real, &bytes, &like, notify)?;
    notify(Notice::info(format!(
        "restored {} from {} {}",
        config.display(),
        if legacy_backup {
            "the legacy-named backup"
        } else {
            "the backup"
        },
        backup.display()
    )));
    let recorded = match undone {
        Some(entry) => {
            let mut rolled = entry;
            rolled.result = Outcome::RolledBack;
            rolled.applied_at = stamp();
            rolled.recovered = false;
            rolled.unchanged = false;
            ledger
                .append(&rolled)
                .map_err(|source| ApplyError::RollbackUnrecorded { source })?;
            lock.record(&rolled, Outcome::RolledBack)?;
            notify(Notice::info(format!(
                "recorded decision {} as rolled back in the ledger {}",
                rolled.payload_sha256,
                ledger.path.display()
            )));
            RollbackRecord::Ledger(rolled.payload_sha256)
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
                    let mut rolled = Entry::new(&payload, Outcome::RolledBack, &stamp());
                    rolled.config_sha256_before = before;
                    rolled.config_sha256_after = after;
                    lock.record(&rolled, Outcome::RolledBack)?;
                    notify(Notice::info(format!(
                        "decision {payload} is recorded as rolled back in the config's record {}; the ledger {} does not have it (give apply's --ledger to record it there too)",
                        lock.path.display(),
                        ledger.path.display()
                    )));
                    RollbackRecord::ConfigRecord(payload)
                }
                None => {
                    notify(Notice::info(format!(
                        "neither the ledger {} nor the config's record has a deployed decision whose config this was; nothing recorded",
                        ledger.path.display()
                    )));
                    RollbackRecord::Nothing
                }
            }
        }
    };
    Ok(RolledBack {
        config: config.to_path_buf(),
        backup: backup.clone(),
        legacy_backup,
        ledger: ledger.path.clone(),
        recorded,
    })
}
