//! `apply` and `rollback`: verify a signed decision and deploy it exactly once, leaving a
//! truthful state at every crash or error point; and the file replacement they share
//! (exclusive temporary files with the config's mode and owner, renames synced, symlinks kept).
//!
//! # Locks
//! Two `flock(LOCK_EX)` locks, always taken in this order and held from the replay check to the
//! last ledger entry (they are released when the process ends, however it ends):
//! 1. the config lock, `.NAME.deploy-gate.lock` beside the file the config path finally points
//!    to (after every symlink): two applies (or an apply and a rollback) to one config never run
//!    at once, whichever path or ledger they are given;
//! 2. the ledger itself (opened `O_APPEND`): reading it, verifying and appending are one step for
//!    every apply that shares it, whatever config it deploys to.
//!
//! Without `--ledger`, the ledger is `NAME.deploy-gate-ledger.jsonl` beside that same file, so
//! replay protection always holds.
//!
//! # The sequence of a built-in deploy, and what each crash point leaves
//! 1. Lock; cut a torn last ledger line; remove temporary files an interrupted apply left; resolve
//!    the config's unresolved intents (below). Crash: nothing changed but those repairs.
//! 2. Verify (signatures, digest, target, age) and refuse a decision the ledger already has.
//! 3. Write the backup (a copy of the config now) to a temporary file and rename it to the
//!    backup name. Crash: the config is old; the backup is the old one or the config now; a
//!    temporary file may stay, removed by the next apply.
//! 4. Append an `intent` entry with the sha256 of the config before and after. If it cannot be
//!    written, stop: nothing is deployed (exit 1).
//! 5. Write the new config to a temporary file and rename it over the config. Crash before the
//!    rename: the config is old and the intent unresolved; the next apply finds the config's bytes
//!    equal the "before" hash and records `not_deployed` (the decision may then be applied).
//!    Crash after: the next apply finds the "after" bytes, records `deployed` and says so.
//! 6. Append the `deployed` entry. If that fails, the model IS deployed and the intent says so:
//!    exit 4 with that message, and the next apply records it.
//!
//! A config that holds this deploy's bytes already is not written at all (no backup either):
//! the decision is recorded as deployed, `unchanged`. So a second ledger used with one config
//! cannot replace its backup by the new config.

use crate::cli::{EXIT_BLOCKED, EXIT_OK};
use crate::sign::{check, invalid, model_digest, now, summary, TrustArgs};
use anyhow::{anyhow, bail, Context, Result};
use clap::{Args, ValueEnum};
use deploy_gate::attest::ledger::{self, Entry, Ledger, Outcome, Tail};
use deploy_gate::attest::{file_digest, time, Verified};
use deploy_gate::deploy::{
    backup_file_name, deploy_config, legacy_backup_file_name, normalize_model_path, Change, BACKENDS,
};
use serde_json::json;
use std::collections::{HashMap, HashSet};
use std::fs::{self, File, Metadata, OpenOptions};
use std::io::{self, Read, Write};
use std::os::unix::fs::{MetadataExt, OpenOptionsExt, PermissionsExt};
use std::os::unix::io::AsRawFd;
use std::path::{Path, PathBuf};
use std::process::Command;

/// Exit code: the model was deployed, but the ledger could not record it (its intent entry is
/// there; the next apply records the deploy).
pub const EXIT_DEPLOYED_UNRECORDED: u8 = 4;

/// The point of an apply at which `--fail-at` aborts the process (testing the crash points).
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum Step {
    /// The locks are held; nothing written yet.
    Locked,
    /// The backup's temporary file is written and synced, not renamed.
    BackupWritten,
    /// The backup is in place.
    BackupRenamed,
    /// The intent entry is in the ledger.
    IntentLogged,
    /// The new config's temporary file is written and synced, not renamed.
    ConfigWritten,
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

// ---------------------------------------------------------------- files

fn sha256_hex(bytes: &[u8]) -> String {
    file_digest(bytes)
}

/// The config as given, the file it finally points to, and the names beside them.
struct ConfigPaths {
    /// As given.
    given: PathBuf,
    /// After every symlink (of the file and of its directories).
    real: PathBuf,
    real_dir: PathBuf,
    real_name: String,
    /// Upstream's backup name, beside the path as given (where upstream's rollback looks).
    backup: PathBuf,
    /// The name earlier versions used.
    legacy_backup: PathBuf,
}

fn dir_of(path: &Path) -> PathBuf {
    match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
        _ => PathBuf::from("."),
    }
}

fn file_name_of(path: &Path) -> Result<String> {
    path.file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .ok_or_else(|| anyhow!("{} is not a file path", path.display()))
}

impl ConfigPaths {
    fn resolve(given: &Path) -> Result<ConfigPaths> {
        let name = file_name_of(given)?;
        let dir = dir_of(given);
        let real = match fs::canonicalize(given) {
            Ok(p) => p,
            // Not there (or a dangling link): the file it would be, in the real directory.
            Err(e) if e.kind() == io::ErrorKind::NotFound => fs::canonicalize(&dir)
                .with_context(|| format!("the config's directory {} does not exist", dir.display()))?
                .join(&name),
            Err(e) => return Err(e).with_context(|| format!("cannot resolve the config {}", given.display())),
        };
        Ok(ConfigPaths {
            given: given.to_path_buf(),
            real_dir: dir_of(&real),
            real_name: file_name_of(&real)?,
            real,
            backup: dir.join(backup_file_name(&name)),
            legacy_backup: dir.join(legacy_backup_file_name(&name)),
        })
    }

    fn lock_path(&self) -> PathBuf {
        self.real_dir.join(format!(".{}.deploy-gate.lock", self.real_name))
    }

    fn default_ledger(&self) -> PathBuf {
        self.real_dir
            .join(format!("{}.deploy-gate-ledger.jsonl", self.real_name))
    }
}

fn flock(file: &File, path: &Path, what: &str) -> Result<()> {
    loop {
        // SAFETY: flock on a descriptor this process owns.
        if unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX) } == 0 {
            return Ok(());
        }
        let e = io::Error::last_os_error();
        if e.kind() != io::ErrorKind::Interrupted {
            return Err(e).with_context(|| format!("cannot lock the {what} {}", path.display()));
        }
    }
}

/// Opens (creating) and locks the config's lock file; the lock lasts as long as the file.
fn lock_config(paths: &ConfigPaths) -> Result<File> {
    let path = paths.lock_path();
    let file = OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .mode(0o600)
        .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC)
        .open(&path)
        .with_context(|| format!("cannot open the lock file {}", path.display()))?;
    flock(&file, &path, "lock file")?;
    Ok(file)
}

/// Syncs a directory, so a rename in it is durable.
fn sync_dir(dir: &Path) -> Result<()> {
    File::open(dir)
        .and_then(|d| d.sync_all())
        .with_context(|| format!("cannot sync the directory {}", dir.display()))
}

const TEMP_MARK: &str = ".deploy-gate-tmp-";

/// A temporary file beside its destination, removed when dropped unless renamed into place.
struct TempFile {
    path: PathBuf,
    file: File,
    done: bool,
}

impl TempFile {
    /// Creates `.BASE.deploy-gate-tmp-<random>` in `dir`, exclusively (`O_EXCL|O_NOFOLLOW`: a
    /// planted file or symlink is refused), with the owner and mode of `like` — or, where the
    /// owner cannot be given, owned by this user and readable by nobody else.
    fn create(dir: &Path, base: &str, like: &Metadata) -> Result<TempFile> {
        let mut random = [0u8; 12];
        getrandom::fill(&mut random).map_err(|e| anyhow!("no randomness from the OS: {e}"))?;
        let path = dir.join(format!(".{base}{TEMP_MARK}{}", hex::encode(random)));
        let file = OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC)
            .open(&path)
            .with_context(|| format!("cannot create the temporary file {}", path.display()))?;
        let temp = TempFile {
            path,
            file,
            done: false,
        };
        let mut mode = like.mode() & 0o777;
        if std::os::unix::fs::fchown(&temp.file, Some(like.uid()), Some(like.gid())).is_err() {
            mode &= 0o700;
        }
        temp.file
            .set_permissions(fs::Permissions::from_mode(mode))
            .with_context(|| format!("cannot set the mode of {}", temp.path.display()))?;
        Ok(temp)
    }

    fn write_synced(&mut self, bytes: &[u8]) -> Result<()> {
        self.file
            .write_all(bytes)
            .and_then(|()| self.file.sync_all())
            .with_context(|| format!("cannot write {}", self.path.display()))
    }

    /// Renames it over `dest` (same directory) and syncs the directory.
    fn commit(mut self, dest: &Path) -> Result<()> {
        fs::rename(&self.path, dest)
            .with_context(|| format!("cannot rename {} to {}", self.path.display(), dest.display()))?;
        self.done = true;
        if let Err(e) = sync_dir(&dir_of(dest)) {
            eprintln!("deploy-gate: warning: {e:#} ({} is replaced)", dest.display());
        }
        Ok(())
    }
}

impl Drop for TempFile {
    fn drop(&mut self) {
        if !self.done {
            let _ = fs::remove_file(&self.path);
        }
    }
}

/// Replaces `dest` by `bytes` atomically: a temporary file in its directory, synced, renamed
/// over it. `like` gives the owner and mode; `hook` runs between the write and the rename.
fn replace_file(dest: &Path, bytes: &[u8], like: &Metadata, hook: impl FnOnce()) -> Result<()> {
    let dir = dir_of(dest);
    let mut temp = TempFile::create(&dir, &file_name_of(dest)?, like)?;
    temp.write_synced(bytes)?;
    hook();
    temp.commit(dest)
}

/// Removes the temporary files an interrupted apply left for `base` in `dir` (only called under
/// the config lock, when no other apply to this config runs).
fn remove_stale_temps(dir: &Path, base: &str) -> Result<()> {
    let prefix = format!(".{base}{TEMP_MARK}");
    let entries = fs::read_dir(dir).with_context(|| format!("cannot list {}", dir.display()))?;
    for entry in entries {
        let entry = entry.with_context(|| format!("cannot list {}", dir.display()))?;
        if entry.file_name().to_string_lossy().starts_with(&prefix) {
            let path = entry.path();
            fs::remove_file(&path).with_context(|| format!("cannot remove {}", path.display()))?;
            eprintln!(
                "deploy-gate: removed {}, a temporary file left by an interrupted apply",
                path.display()
            );
        }
    }
    Ok(())
}

// ---------------------------------------------------------------- the ledger file

/// An open, locked ledger.
struct LedgerFile {
    path: PathBuf,
    file: File,
    parsed: Ledger,
}

fn show(bytes: &[u8]) -> String {
    let text = String::from_utf8_lossy(&bytes[..bytes.len().min(120)]).into_owned();
    if bytes.len() > 120 {
        format!("{text:?}…")
    } else {
        format!("{text:?}")
    }
}

impl LedgerFile {
    /// Opens (creating) the ledger for appending, locks it, reads it, and repairs its end: a torn
    /// last line is cut off, a whole last entry without its newline gets one.
    fn open_locked(path: &Path) -> Result<LedgerFile> {
        let mut file = OpenOptions::new()
            .read(true)
            .append(true)
            .create(true)
            .custom_flags(libc::O_CLOEXEC)
            .open(path)
            .with_context(|| format!("cannot open the ledger {} for appending", path.display()))?;
        flock(&file, path, "ledger")?;
        if file.metadata().is_ok_and(|m| m.len() == 0) {
            // Perhaps just created: make its name durable before anything relies on it.
            sync_dir(&dir_of(path))?;
        }
        let mut bytes = Vec::new();
        file.read_to_end(&mut bytes)
            .with_context(|| format!("cannot read the ledger {}", path.display()))?;
        let parsed = ledger::parse(&bytes).map_err(|e| anyhow!("the ledger {} {e}", path.display()))?;
        let mut this = LedgerFile {
            path: path.to_path_buf(),
            file,
            parsed,
        };
        match this.parsed.tail.clone() {
            Tail::Clean => {}
            Tail::Unterminated => {
                this.write_once(b"\n", bytes.len() as u64)?;
                eprintln!(
                    "deploy-gate: the ledger {}'s last line had no newline; ended it",
                    path.display()
                );
            }
            Tail::Torn { line, bytes: n } => {
                let keep = this.parsed.complete_len;
                this.file
                    .set_len(keep as u64)
                    .and_then(|()| this.file.sync_all())
                    .with_context(|| format!("cannot cut the torn last line of the ledger {}", path.display()))?;
                eprintln!(
                    "deploy-gate: the ledger {} line {line} was cut short by an interrupted write ({n} bytes, no newline: {}); removed it",
                    path.display(),
                    show(&bytes[keep..])
                );
            }
        }
        this.parsed.tail = Tail::Clean;
        Ok(this)
    }

    /// One `write` of `bytes` at the end, synced; a short write is cut back off.
    fn write_once(&mut self, bytes: &[u8], len_before: u64) -> Result<()> {
        let written = loop {
            match self.file.write(bytes) {
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                r => break r,
            }
        };
        let problem = match written {
            Ok(n) if n == bytes.len() => None,
            Ok(n) => Some(format!("only {n} of {} bytes written (is the disk full?)", bytes.len())),
            Err(e) => Some(e.to_string()),
        };
        if let Some(problem) = problem {
            let _ = self.file.set_len(len_before).and_then(|()| self.file.sync_all());
            bail!("cannot append to the ledger {}: {problem}", self.path.display());
        }
        self.file
            .sync_data()
            .with_context(|| format!("cannot sync the ledger {}", self.path.display()))
    }

    /// Appends one entry: one whole line, one `write`, synced.
    fn append(&mut self, entry: &Entry) -> Result<()> {
        let len = self
            .file
            .metadata()
            .with_context(|| format!("cannot read the ledger {}", self.path.display()))?
            .len();
        self.write_once(&entry.to_line(), len)?;
        self.parsed.entries.push(entry.clone());
        Ok(())
    }
}

/// The decisions a ledger counts as applied (for `verify --ledger`; no lock, nothing written: a
/// torn last line is ignored with a warning, the next apply removes it).
pub fn read_ledger(path: Option<&Path>) -> Result<HashSet<String>> {
    let Some(path) = path else {
        return Ok(HashSet::new());
    };
    let bytes = match fs::read(path) {
        Ok(b) => b,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(HashSet::new()),
        Err(e) => return Err(e).with_context(|| format!("cannot read the ledger {}", path.display())),
    };
    let parsed = ledger::parse(&bytes).map_err(|e| anyhow!("the ledger {} {e}", path.display()))?;
    if let Tail::Torn { line, .. } = parsed.tail {
        eprintln!(
            "deploy-gate: warning: the ledger {} line {line} was cut short by an interrupted write; ignored (the next apply removes it)",
            path.display()
        );
    }
    let mut last: HashMap<&str, Outcome> = HashMap::new();
    for e in &parsed.entries {
        last.insert(&e.payload_sha256, e.result);
    }
    Ok(last
        .into_iter()
        .filter(|(_, r)| *r != Outcome::NotDeployed)
        .map(|(p, _)| p.to_owned())
        .collect())
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
fn resolve_pending(ledger: &mut LedgerFile, paths: &ConfigPaths) -> Result<()> {
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
        let now_sha = match fs::read(&paths.real) {
            Ok(bytes) => Some(sha256_hex(&bytes)),
            Err(e) if e.kind() == io::ErrorKind::NotFound => None,
            Err(e) => return Err(e).with_context(|| format!("cannot read config {}", paths.real.display())),
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
    let mut out = json!({"result": result, "decision": summary(v), "ledger": ledger.display().to_string()});
    if let (Some(o), serde_json::Value::Object(x)) = (out.as_object_mut(), extra) {
        o.extend(x);
    }
    println!("{}", serde_json::to_string_pretty(&out)?);
    Ok(())
}

pub fn apply_cmd(args: &ApplyArgs) -> Result<u8> {
    let digest = model_digest(&args.model_path)?;
    let target = args.target.clone().unwrap_or_else(|| args.config.display().to_string());
    let model_path = normalize_model_path(&args.model_path.to_string_lossy());
    let paths = ConfigPaths::resolve(&args.config)?;
    let ledger_path = args.trust.ledger.clone().unwrap_or_else(|| paths.default_ledger());

    if args.dry_run {
        let mut trust = args.trust.clone();
        trust.ledger = None;
        let v = match check(&args.envelope, &trust, &digest, &target)? {
            Ok(v) => v,
            Err((check, message)) => return Ok(invalid(&check, &message)),
        };
        if read_ledger(Some(&ledger_path))?.contains(&v.payload_sha256) {
            return Ok(invalid(
                "replayed",
                &format!(
                    "decision {} is in the ledger {} already",
                    v.payload_sha256,
                    ledger_path.display()
                ),
            ));
        }
        eprintln!(
            "deploy-gate: dry run — verified; would {} ({})",
            if v.approved {
                "deploy the new model"
            } else {
                "keep the old model"
            },
            v.reason
        );
        println!("{}", serde_json::to_string_pretty(&summary(&v))?);
        return Ok(if v.approved { EXIT_OK } else { EXIT_BLOCKED });
    }

    let _config_lock = match lock_config(&paths) {
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
    remove_stale_temps(&dir_of(&paths.backup), &file_name_of(&paths.backup)?)?;
    resolve_pending(&mut ledger, &paths)?;

    // The replay check is made here, against the ledger read under its lock.
    let mut trust = args.trust.clone();
    trust.ledger = None;
    let v = match check(&args.envelope, &trust, &digest, &target)? {
        Ok(v) => v,
        Err((check, message)) => return Ok(invalid(&check, &message)),
    };
    if ledger.parsed.applied(&v.payload_sha256) {
        let last = ledger.parsed.last(&v.payload_sha256).expect("applied");
        let deployed = if last.result == Outcome::Deployed {
            " — the model IS deployed"
        } else {
            ""
        };
        return Ok(invalid(
            "replayed",
            &format!(
                "decision {} was applied already: the ledger {} says {} at {}{}{deployed}",
                v.payload_sha256,
                ledger.path.display(),
                last.result.as_str(),
                last.applied_at,
                if last.recovered {
                    " (recorded from an interrupted apply)"
                } else {
                    ""
                }
            ),
        ));
    }

    let env = [
        (
            "DEPLOY_GATE_DECISION",
            if v.approved { "PASSED" } else { "FAILED" }.to_owned(),
        ),
        ("DEPLOY_GATE_REASON", v.reason.clone()),
        ("DEPLOY_GATE_MODEL_PATH", model_path.clone()),
        ("DEPLOY_GATE_MODEL_NAME", v.model_name.clone()),
        ("DEPLOY_GATE_MODEL_DIGEST", format!("sha256:{}", v.model_sha256)),
        ("DEPLOY_GATE_CONFIG", args.config.display().to_string()),
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
        eprintln!("deploy-gate: KEPT the old model — {}", v.reason);
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
        return finish(args, &v, &mut ledger, intent, &model_path, json!({}));
    }

    // The built-in edit.
    let cannot_read = || format!("cannot read config {}", paths.given.display());
    let mut file = File::open(&paths.real).with_context(cannot_read)?;
    let meta = file.metadata().with_context(cannot_read)?;
    if !meta.is_file() {
        bail!("config {} is not a regular file", paths.given.display());
    }
    let mut original = Vec::new();
    file.read_to_end(&mut original).with_context(cannot_read)?;
    drop(file);
    let given_model_path = args.model_path.to_string_lossy();
    let change = Change {
        model_path: &given_model_path,
        backend: &args.backend,
        stage_models: &args.stage_model,
    };
    let updated = deploy_config(&original, &change).map_err(|e| anyhow!("{}: {e}", paths.given.display()))?;

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
        crash_point(args, Step::OutcomeLogged);
        report(&v, "deployed", &ledger.path, json!({"unchanged": true}))?;
        eprintln!(
            "deploy-gate: DEPLOYED {} ({model_path}) — {} holds this deploy already: unchanged, backup left as it was",
            v.model_name,
            paths.given.display()
        );
        return Ok(EXIT_OK);
    }

    let mut backup = TempFile::create(&dir_of(&paths.backup), &file_name_of(&paths.backup)?, &meta)?;
    backup.write_synced(&original)?;
    crash_point(args, Step::BackupWritten);
    backup.commit(&paths.backup)?;
    crash_point(args, Step::BackupRenamed);

    let mut intent = entry_for(&v, Outcome::Intent);
    intent.action = Some("config".into());
    intent.config = Some(paths.real.display().to_string());
    intent.backup = Some(paths.backup.display().to_string());
    intent.config_sha256_before = Some(sha256_hex(&original));
    intent.config_sha256_after = Some(sha256_hex(&updated));
    ledger
        .append(&intent)
        .with_context(|| format!("NOT deployed: {} is unchanged", paths.given.display()))?;
    crash_point(args, Step::IntentLogged);

    if let Err(e) = replace_file(&paths.real, &updated, &meta, || crash_point(args, Step::ConfigWritten)) {
        let mut failed = intent.clone();
        failed.result = Outcome::NotDeployed;
        failed.applied_at = time::format_rfc3339(now());
        let recorded = match ledger.append(&failed) {
            Ok(()) => "recorded as not deployed".to_owned(),
            Err(le) => format!("{le:#}; the next apply records it"),
        };
        return Err(e.context(format!(
            "NOT deployed: {} is unchanged ({recorded})",
            paths.given.display()
        )));
    }
    crash_point(args, Step::ConfigRenamed);
    let extra = json!({
        "config": paths.real.display().to_string(),
        "backup": paths.backup.display().to_string(),
    });
    finish(args, &v, &mut ledger, intent, &model_path, extra)
}

/// The deployed entry after a deploy; a failure to write it still says the model is deployed.
fn finish(
    args: &ApplyArgs,
    v: &Verified,
    ledger: &mut LedgerFile,
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
    crash_point(args, Step::OutcomeLogged);
    report(v, "deployed", &ledger.path, extra)?;
    eprintln!("deploy-gate: DEPLOYED {} ({model_path}) — {}", v.model_name, v.reason);
    Ok(EXIT_OK)
}

// ---------------------------------------------------------------- rollback

/// Restores the config from the backup `apply` made: upstream's name, else the legacy one.
pub fn rollback_cmd(config: &Path) -> Result<u8> {
    let paths = ConfigPaths::resolve(config)?;
    let _lock = lock_config(&paths)?;
    let (backup, which) = if paths.backup.exists() {
        (&paths.backup, "the backup")
    } else if paths.legacy_backup.exists() {
        (&paths.legacy_backup, "the legacy-named backup")
    } else {
        bail!(
            "no backup to restore: neither {} nor {} exists",
            paths.backup.display(),
            paths.legacy_backup.display()
        );
    };
    let bytes = fs::read(backup).with_context(|| format!("cannot read the backup {}", backup.display()))?;
    let like = match fs::metadata(&paths.real) {
        Ok(m) => m,
        Err(_) => fs::metadata(backup).with_context(|| format!("cannot read the backup {}", backup.display()))?,
    };
    replace_file(&paths.real, &bytes, &like, || {})?;
    eprintln!(
        "deploy-gate: restored {} from {which} {}",
        config.display(),
        backup.display()
    );
    Ok(EXIT_OK)
}
