//! Promotion through an MLflow model registry alias: `apply --mlflow` verifies a signed decision
//! as `apply` does and moves `models:/NAME@ALIAS` exactly once; `verify --mlflow` re-checks the
//! alias against the decision recorded on the version it points to; `apply --mlflow --restore`
//! puts the alias back on the last version the ledger promoted whose decision still verifies.
//!
//! # The decision recorded on the version
//! Tags on the model version, all under `deploy-gate.ALIAS.` (MLflow keeps tag values to 5000
//! characters; every value here is shorter):
//! - `envelope.parts` (`N`) and `envelope.0` … `envelope.N-1`: the envelope's JSON text cut into
//!   pieces of at most [`TAG_PIECE`] bytes, at character boundaries;
//! - `envelope_sha256`: the sha256 of the envelope's bytes (the pieces joined must hash to it);
//! - `decision_sha256`: the sha256 of the statement (the ledger's `payload_sha256`);
//! - `decision` (`approved`), `policy_digest`, `signers` (key ids, comma-separated), `time`
//!   (when it was recorded, RFC 3339 UTC).
//!
//! A blocking or inconclusive decision leaves those alone (an earlier approving decision stays
//! readable) and sets `deploy-gate.ALIAS.refused`: `{"decision", "decision_sha256", "reason",
//! "signers", "time"}` as JSON, cut to the tag limit.
//!
//! # The sequence of an approving apply, and what a crash leaves
//! 1. Lock the ledger (`--ledger`, required); resolve its interrupted registry intents for this
//!    alias by reading the alias now: at the intent's version → `deployed`, at the version
//!    before → `not_deployed` (the decision may be applied again), elsewhere → `unknown`.
//! 2. Read the alias (the version it points to now: "before"); find the version (given, or the
//!    one whose files' digest is the statement's subject); download its files and hash them;
//!    verify; refuse a replay. A refusal writes nothing.
//! 3. Record the decision on the version (its tags). A failure here (no EDIT permission) writes
//!    nothing to the ledger. Crash: tags without a ledger entry, the alias where it was: the next
//!    apply writes them again and goes on.
//! 4. Append the `intent` entry (`alias_before`, `alias_version`).
//! 5. Read the alias again: moved by someone else since step 2 → `not_deployed`, reported, the
//!    alias left as the other client set it. Else set it. Crash: the next apply resolves the
//!    intent from where the alias points (step 1).
//! 6. Append the `deployed` entry.
//!
//! MLflow has no compare-and-set for aliases: between the read of step 5 and the set, another
//! client's move can still be overwritten (the window is one HTTP round trip). Two deploy-gate
//! applies sharing a ledger never overlap (its lock).

mod client;

pub use client::{
    Budget, ModelVersion, Registry, RegistryError, RegistrySettings, DEFAULT_MAX_DOWNLOAD_BYTES, MAX_DEPTH, MAX_FILES,
    MAX_JSON_BYTES, MAX_SEARCH_PAGES,
};

use crate::attest::ledger::{Entry, Outcome};
use crate::attest::{time, Check, Failure, Summary, Verified};
use crate::native::apply::{
    check, model_failure_json, read_envelope_for, read_ledger, trainer_json, unix_now, ApplyError, FailAt, Step, Trust,
};
use crate::native::files::locks::LedgerFile;
use crate::native::files::{FilesError, Notice, Notify};
use crate::native::oms::{identify, ModelError, ModelIdentity, ModelSignature};
use crate::oms::OmsError;
use serde::Serialize;
use serde_json::{json, Value};
use std::fs;
use std::path::{Path, PathBuf};

/// The largest piece of the envelope in one tag value (MLflow's limit is 5000 characters).
pub const TAG_PIECE: usize = 4000;
/// The most pieces read back (an envelope of up to 4 MB).
const MAX_PIECES: usize = 1000;

/// Why a registry apply, verify or restore stopped (the CLI's exit 1). The messages never hold
/// credentials.
#[derive(Debug, thiserror::Error)]
pub enum MlflowError {
    /// A call to the registry failed.
    #[error(transparent)]
    Registry(Box<RegistryError>),
    /// The envelope, keys or ledger could not be read, or the ledger written.
    #[error(transparent)]
    Apply(Box<ApplyError>),
    /// A file could not be read or written.
    #[error(transparent)]
    Files(Box<FilesError>),
    /// The version's downloaded files could not be hashed.
    #[error(transparent)]
    Model(Box<ModelError>),
    /// The arguments do not fit together.
    #[error("{0}")]
    Usage(String),
    /// A local `file:` location's files reach a limit deploy-gate reads within.
    #[error("{0}")]
    Limit(String),
    /// Several versions have the decision's files.
    #[error("versions {} of {name} all have the files whose digest the decision names (sha256:{digest}): give --model-version", .versions.join(", "))]
    Ambiguous {
        /// The registered model.
        name: String,
        /// The digest.
        digest: String,
        /// The versions.
        versions: Vec<String>,
    },
    /// The alias was moved by another client while apply ran; it was not overwritten.
    #[error("the alias {uri} moved while apply ran (it pointed to {before} and now points to {now}); NOT moved: deploy-gate does not overwrite another client's move ({recorded})")]
    MovedMeanwhile {
        /// `models:/NAME@ALIAS`.
        uri: String,
        /// The version at the start (`no version` when unset).
        before: String,
        /// The version now.
        now: String,
        /// How the ledger records it.
        recorded: String,
    },
    /// The decision is recorded on the version, but not yet the intent: nothing moved.
    #[error("NOT moved: the decision is recorded on version {version}, but the ledger could not record the intent; the alias is where it was")]
    IntentUnrecorded {
        /// The version.
        version: String,
        /// Why.
        #[source]
        source: Box<FilesError>,
    },
    /// Setting the alias failed after the intent was written; what the ledger says follows.
    #[error("NOT moved ({recorded})")]
    NotMoved {
        /// How the ledger records it.
        recorded: String,
        /// Why.
        #[source]
        source: Box<MlflowError>,
    },
    /// `--restore` found nothing to put back.
    #[error("{0}")]
    NothingToRestore(String),
}

impl From<RegistryError> for MlflowError {
    fn from(e: RegistryError) -> MlflowError {
        MlflowError::Registry(Box::new(e))
    }
}

impl From<ApplyError> for MlflowError {
    fn from(e: ApplyError) -> MlflowError {
        MlflowError::Apply(Box::new(e))
    }
}

impl From<FilesError> for MlflowError {
    fn from(e: FilesError) -> MlflowError {
        MlflowError::Files(Box::new(e))
    }
}

impl From<ModelError> for MlflowError {
    fn from(e: ModelError) -> MlflowError {
        MlflowError::Model(Box::new(e))
    }
}

impl MlflowError {
    /// The message with its causes (as the CLI prints it).
    pub fn message(&self) -> String {
        crate::native::files::chain(self)
    }
}

/// `models:/NAME@ALIAS`, split; `None` for any other form.
pub fn parse_model_uri(uri: &str) -> Option<(String, String)> {
    let rest = uri.strip_prefix("models:/")?;
    let (name, alias) = rest.rsplit_once('@')?;
    (!name.is_empty() && !alias.is_empty() && !name.starts_with('/')).then(|| (name.to_owned(), alias.to_owned()))
}

/// The registry target a decision for `name`'s alias `alias` is signed for.
pub fn model_uri(name: &str, alias: &str) -> String {
    format!("models:/{name}@{alias}")
}

/// Refuses the aliases MLflow does not let anyone move: `latest` (in any case), which the
/// server resolves to the newest version whatever registers it, and the version aliases
/// `vN`/`VN`, which it reserves.
fn movable_alias(alias: &str) -> Result<(), MlflowError> {
    if alias.eq_ignore_ascii_case("latest") {
        return Err(MlflowError::Usage(format!(
            "the alias `{alias}`: MLflow resolves @latest (in any case) to the newest version of the model, whoever registers it; it is not a pointer a signed decision can move or vouch for"
        )));
    }
    let digits = alias.strip_prefix(['v', 'V']).unwrap_or("");
    if !digits.is_empty() && digits.bytes().all(|b| b.is_ascii_digit()) {
        return Err(MlflowError::Usage(format!(
            "the alias `{alias}`: MLflow reserves vN for versions; it cannot be set as an alias"
        )));
    }
    Ok(())
}

/// The tag key prefix of an alias's records.
fn prefix(alias: &str) -> String {
    format!("deploy-gate.{alias}.")
}

/// A registry apply.
#[derive(Debug, Clone)]
pub struct MlflowApply {
    /// The envelope.
    pub envelope: PathBuf,
    /// Keys, threshold, age, ledger (required) and size limit.
    pub trust: Trust,
    /// How to reach the registry.
    pub registry: RegistrySettings,
    /// The registered model.
    pub name: String,
    /// The alias.
    pub alias: String,
    /// The version to promote; default: the one whose files' digest is the subject.
    pub version: Option<String>,
    /// The target the decision must name; default (and the only one accepted)
    /// `models:/NAME@ALIAS`.
    pub target: Option<String>,
    /// Verify and say what would be done.
    pub dry_run: bool,
    /// The crash points' test hook.
    pub fail_at: FailAt,
    /// The trainer's model signature to check over the version's files, and that it names the
    /// same model as the decision. Default none.
    pub model_signature: Option<RegistrySignature>,
    /// A test hook: wait this long after the intent, before the alias is read again (so a test
    /// can move it meanwhile). Default none.
    pub pause_before_move: Option<std::time::Duration>,
}

/// What a registry apply did.
#[derive(Debug)]
pub enum Promoted {
    /// The alias points at the version (moved now, or `unchanged`: it pointed there already).
    Moved {
        /// The decision.
        decision: Verified,
        /// The version.
        version: String,
        /// The version before (`None`: the alias was not set).
        before: Option<String>,
        /// It pointed there already.
        unchanged: bool,
        /// The ledger.
        ledger: PathBuf,
        /// The trainer's verified model signature, when one was checked.
        trainer: Option<crate::oms::Verified>,
    },
    /// The decision blocks (or is inconclusive): the alias left, the refusal recorded.
    KeptOld {
        /// The decision.
        decision: Verified,
        /// The version the decision was about.
        version: String,
        /// Where the alias points.
        current: Option<String>,
        /// The ledger.
        ledger: PathBuf,
        /// The trainer's verified model signature, when one was checked.
        trainer: Option<crate::oms::Verified>,
    },
    /// A dry run.
    DryRun {
        /// The decision.
        decision: Verified,
        /// The version it would promote.
        version: String,
        /// Where the alias points.
        current: Option<String>,
        /// The trainer's verified model signature, when one was checked.
        trainer: Option<crate::oms::Verified>,
    },
    /// Verification failed or the decision was applied already: nothing done (exit 2).
    Refused(Failure),
    /// The trainer's model signature failed a check over the version's files (or names another
    /// model than the decision): nothing done (exit 2).
    ModelRefused(OmsError),
}

impl Promoted {
    /// The CLI's stdout JSON.
    pub fn to_json(&self, uri: &str) -> Value {
        let with_trainer = |mut out: Value, t: &Option<crate::oms::Verified>| {
            if let Some(t) = t {
                out["trainer"] = trainer_json(t);
            }
            out
        };
        match self {
            Promoted::Moved {
                decision,
                version,
                before,
                unchanged,
                ledger,
                trainer,
            } => {
                let mut out = json!({"result": "deployed", "decision": Summary::of(decision), "ledger": ledger.display().to_string(),
                    "model_uri": uri, "version": version, "version_before": before});
                if *unchanged {
                    out["unchanged"] = json!(true);
                }
                with_trainer(out, trainer)
            }
            Promoted::KeptOld {
                decision,
                version,
                current,
                ledger,
                trainer,
            } => with_trainer(
                json!({"result": "kept_old", "decision": Summary::of(decision), "ledger": ledger.display().to_string(),
                "model_uri": uri, "version": version, "alias_version": current}),
                trainer,
            ),
            Promoted::DryRun {
                decision,
                version,
                current,
                trainer,
            } => {
                let mut out = serde_json::to_value(Summary::of(decision)).expect("a summary serializes");
                out["model_uri"] = json!(uri);
                out["version"] = json!(version);
                out["alias_version"] = json!(current);
                with_trainer(out, trainer)
            }
            Promoted::Refused(f) => serde_json::to_value(f).expect("a failure serializes"),
            Promoted::ModelRefused(e) => model_failure_json(e),
        }
    }
}

/// A directory removed when dropped (the downloaded files of a version).
struct Scratch(PathBuf);

impl Scratch {
    fn new() -> Result<Scratch, MlflowError> {
        let mut bytes = [0u8; 8];
        getrandom::fill(&mut bytes).map_err(|e| MlflowError::Usage(format!("no randomness: {e}")))?;
        let dir = std::env::temp_dir().join(format!("deploy-gate-mlflow-{}", hex::encode(bytes)));
        let mut b = fs::DirBuilder::new();
        std::os::unix::fs::DirBuilderExt::mode(&mut b, 0o700);
        b.create(&dir)
            .map_err(FilesError::io(format!("cannot create {}", dir.display())))?;
        Ok(Scratch(dir))
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = fs::remove_dir_all(&self.0);
    }
}

/// The trainer's signature (OpenSSF Model Signing) a registry apply checks over the version's
/// files, as `apply --config` checks it over `--model-path`.
#[derive(Debug, Clone)]
pub struct RegistrySignature {
    /// The bundle given on the command line; `None`: `model.sig` among the version's files (as
    /// `model_signing sign` writes it beside the model, left out of the trainer's own digest and
    /// of an `oms-v1.0-files` decision's digest).
    pub path: Option<PathBuf>,
    /// The trusted trainer keys, roots and keyless identities.
    pub trust: crate::oms::Trust,
}

/// The identity of a version's files as the registry serves them, by the scheme the
/// decision's subject names (as `deploy-gate digest`): through the artifact proxy
/// (`mlflow-artifacts:`) into a private temporary directory, or in place for a `file:`
/// location; with `signature`, the trainer's signature checked over the same files, in the same
/// read. `Ok(Err(..))`: the trainer's signature failed a check.
fn version_identity(
    reg: &Registry,
    mv: &ModelVersion,
    envelope: &[u8],
    signature: Option<&RegistrySignature>,
    budget: &mut Budget,
) -> Result<Result<ModelIdentity, OmsError>, MlflowError> {
    let uri = reg.download_uri(&mv.name, &mv.version)?;
    let unreadable = || {
        MlflowError::Usage(format!(
            "version {} of {}: its files are at `{uri}`, which deploy-gate cannot read (it reads `mlflow-artifacts:` locations through the server's artifact proxy, and local `file:` paths)",
            mv.version, mv.name
        ))
    };
    let identify_at = |dir: &Path| -> Result<Result<ModelIdentity, OmsError>, MlflowError> {
        let sig = match signature {
            None => None,
            Some(s) => {
                let path = match &s.path {
                    Some(p) => p.clone(),
                    None => {
                        let inside = dir.join(crate::oms::SIGNATURE_FILE);
                        if !dir.is_dir() || fs::symlink_metadata(&inside).is_err() {
                            return Err(MlflowError::Usage(format!(
                                "version {} of {}: no model signature: its files (at `{uri}`) hold no {}; give --model-signature",
                                mv.version,
                                mv.name,
                                crate::oms::SIGNATURE_FILE
                            )));
                        }
                        inside
                    }
                };
                Some(ModelSignature {
                    path,
                    trust: s.trust.clone(),
                })
            }
        };
        match identify(dir, envelope, sig.as_ref()) {
            Ok(id) => Ok(Ok(id)),
            Err(ModelError::Check(e)) if signature.is_some() => Ok(Err(e)),
            Err(e) => Err(e.into()),
        }
    };
    if let Some(proxied) = proxied_path(&uri, reg.base()) {
        let path = match proxied {
            Ok(path) => path,
            Err(why) => {
                return Err(MlflowError::Usage(format!(
                    "version {} of {}: its files are at `{uri}`: {why}",
                    mv.version, mv.name
                )))
            }
        };
        let scratch = Scratch::new()?;
        let dir = scratch.0.join("files");
        fs::create_dir(&dir).map_err(FilesError::io(format!("cannot create {}", dir.display())))?;
        let n = reg.download_proxied(path, &dir, budget)?;
        if n == 0 {
            // A location that is one file, or an empty folder, lists as nothing: a registered
            // model is a folder of files.
            return Err(MlflowError::Usage(format!(
                "version {} of {}: no files under `{uri}`",
                mv.version, mv.name
            )));
        }
        return identify_at(&dir);
    }
    let local = if let Some(p) = uri.strip_prefix("file://") {
        // `file:///abs` (an empty host) only.
        p.starts_with('/').then(|| PathBuf::from(percent_decode(p)))
    } else if let Some(p) = uri.strip_prefix("file:") {
        p.starts_with('/').then(|| PathBuf::from(percent_decode(p)))
    } else if uri.starts_with('/') {
        Some(PathBuf::from(&uri))
    } else {
        None
    };
    match local {
        Some(p) => {
            local_limits(&p, reg.max_download(), budget).map_err(|stop| {
                let (limit, why) = match stop {
                    LocalStop::Limit(why) => (true, why),
                    LocalStop::Unreadable(why) => (false, why),
                };
                let text = format!("version {} of {}: its files are at `{uri}`: {why}", mv.version, mv.name);
                if limit {
                    MlflowError::Limit(text)
                } else {
                    MlflowError::Usage(text)
                }
            })?;
            identify_at(&p)
        }
        None => Err(unreadable()),
    }
}

/// Walks a local `file:` location as a download through the artifact proxy is bounded, within
/// what is left of `budget` (spent as it goes): at most [`MAX_FILES`] files and folders,
/// [`MAX_DEPTH`] folders deep, `max_bytes` together; a symbolic link anywhere (the location
/// itself included) is refused, so the registry cannot lead the walk out of the folder.
fn local_limits(root: &Path, max_bytes: u64, budget: &mut Budget) -> Result<(), LocalStop> {
    let meta = |p: &Path| {
        fs::symlink_metadata(p).map_err(|e| LocalStop::Unreadable(format!("cannot read {}: {e}", p.display())))
    };
    let top = meta(root)?;
    if top.file_type().is_symlink() {
        return Err(LocalStop::Limit(format!(
            "{} is a symbolic link, which deploy-gate does not follow",
            root.display()
        )));
    }
    let over_bytes = |bytes: u64| {
        format!(
            "the files read reach {bytes} bytes: past {max_bytes} bytes, the most they may hold (--mlflow-max-bytes)"
        )
    };
    if !top.is_dir() {
        budget.bytes = budget.bytes.saturating_add(top.len());
        return if budget.bytes > max_bytes {
            Err(LocalStop::Limit(over_bytes(budget.bytes)))
        } else {
            Ok(())
        };
    }
    let mut stack = vec![(root.to_path_buf(), 0usize)];
    while let Some((dir, depth)) = stack.pop() {
        let unreadable = |e: std::io::Error| LocalStop::Unreadable(format!("cannot read {}: {e}", dir.display()));
        for entry in fs::read_dir(&dir).map_err(unreadable)? {
            let entry = entry.map_err(unreadable)?;
            budget.entries += 1;
            if budget.entries > MAX_FILES {
                return Err(LocalStop::Limit(format!(
                    "more than {MAX_FILES} files and folders, the most deploy-gate reads"
                )));
            }
            let path = entry.path();
            let m = meta(&path)?;
            if m.file_type().is_symlink() {
                return Err(LocalStop::Limit(format!(
                    "{} is a symbolic link, which deploy-gate does not follow",
                    path.display()
                )));
            }
            if m.is_dir() {
                if depth + 1 > MAX_DEPTH {
                    return Err(LocalStop::Limit(format!(
                        "the folder {} is more than {MAX_DEPTH} folders deep, the most deploy-gate reads",
                        path.display()
                    )));
                }
                stack.push((path, depth + 1));
            } else {
                budget.bytes = budget.bytes.saturating_add(m.len());
                if budget.bytes > max_bytes {
                    return Err(LocalStop::Limit(over_bytes(budget.bytes)));
                }
            }
        }
    }
    Ok(())
}

/// Why [`local_limits`] stopped.
#[derive(Debug)]
enum LocalStop {
    /// A limit reached (or a symbolic link).
    Limit(String),
    /// A file or folder that cannot be read.
    Unreadable(String),
}

/// The artifact proxy's path of an `mlflow-artifacts:` location (`None`: another scheme).
/// `mlflow-artifacts:/PATH` is the tracking server's; `mlflow-artifacts://HOST:PORT/PATH` is
/// downloaded by MLflow's clients from HOST:PORT, so it is read only when that is the tracking
/// server itself (the files hashed are the files a client loads).
fn proxied_path<'a>(uri: &'a str, tracking: &url::Url) -> Option<Result<&'a str, String>> {
    let rest = uri.strip_prefix("mlflow-artifacts:")?;
    let path = match rest.strip_prefix("//") {
        Some(hosted) => {
            let (netloc, path) = hosted.split_once('/').unwrap_or((hosted, ""));
            if !netloc.is_empty() {
                let same = url::Url::parse(&format!("{}://{netloc}/", tracking.scheme())).is_ok_and(|u| {
                    u.username().is_empty()
                        && u.password().is_none()
                        && u.host_str() == tracking.host_str()
                        && u.port_or_known_default() == tracking.port_or_known_default()
                });
                if !same {
                    return Some(Err(format!(
                        "MLflow's clients download them from {netloc}, not from the tracking server {}: deploy-gate hashes only the files the tracking server serves",
                        tracking.host_str().unwrap_or("?")
                    )));
                }
            }
            path
        }
        None => rest,
    }
    .trim_matches('/');
    if path.is_empty() || path.split('/').any(|s| s == ".." || s == ".") {
        return Some(Err("not a path deploy-gate reads".to_owned()));
    }
    Some(Ok(path))
}

fn percent_decode(s: &str) -> String {
    url::Url::parse(&format!("file://{s}"))
        .ok()
        .and_then(|u| u.to_file_path().ok())
        .map(|p| p.display().to_string())
        .unwrap_or_else(|| s.to_owned())
}

/// The subjects' digests (hex) of an envelope, unverified: only to pick the version to hash.
fn subject_digests(envelope: &[u8]) -> Vec<String> {
    let Some(env) = serde_json::from_slice::<crate::attest::dsse::Envelope>(envelope).ok() else {
        return Vec::new();
    };
    let Some(payload) = crate::attest::dsse::decode(&env.payload) else {
        return Vec::new();
    };
    let Ok(statement) = serde_json::from_slice::<Value>(&payload) else {
        return Vec::new();
    };
    statement
        .get("subject")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|s| {
            s.pointer("/digest/sha256")
                .and_then(Value::as_str)
                .map(str::to_ascii_lowercase)
        })
        .collect()
}

/// `approved`, `blocked` or `inconclusive`.
fn outcome_word(v: &Verified) -> String {
    serde_json::to_value(v.outcome)
        .ok()
        .and_then(|w| w.as_str().map(str::to_owned))
        .unwrap_or_default()
}

fn stamp() -> String {
    time::format_rfc3339(unix_now())
}

/// The envelope's text cut into tag values, at character boundaries.
fn pieces(text: &str) -> Vec<&str> {
    let mut pieces = Vec::new();
    let mut rest: &str = text;
    while !rest.is_empty() {
        let mut end = rest.len().min(TAG_PIECE);
        while !rest.is_char_boundary(end) {
            end -= 1;
        }
        pieces.push(&rest[..end]);
        rest = &rest[end..];
    }
    pieces
}

/// Refuses an envelope that [`recorded_envelope`] could not read back from the version's tags
/// (more than [`MAX_PIECES`] pieces), before anything is written: the alias would otherwise move
/// to a version whose decision `verify --mlflow` never accepts.
fn recordable(envelope: &[u8]) -> Result<(), MlflowError> {
    let n = pieces(&String::from_utf8_lossy(envelope)).len();
    if n > MAX_PIECES {
        return Err(MlflowError::Usage(format!(
            "the decision's envelope is {} bytes: recorded on the version it would take {n} tags of at most {TAG_PIECE} bytes, and a recorded decision is read back from at most {MAX_PIECES} ({} bytes); nothing was done",
            envelope.len(),
            MAX_PIECES * TAG_PIECE
        )));
    }
    Ok(())
}

/// The tags recording an approving decision on a version.
pub fn decision_tags(alias: &str, envelope: &[u8], v: &Verified) -> Vec<(String, String)> {
    let p = prefix(alias);
    let text = String::from_utf8_lossy(envelope);
    let pieces = pieces(&text);
    let mut tags = vec![(format!("{p}envelope.parts"), pieces.len().to_string())];
    for (i, piece) in pieces.iter().enumerate() {
        tags.push((format!("{p}envelope.{i}"), (*piece).to_owned()));
    }
    tags.push((format!("{p}envelope_sha256"), crate::attest::file_digest(envelope)));
    tags.push((format!("{p}decision_sha256"), v.payload_sha256.clone()));
    tags.push((format!("{p}decision"), outcome_word(v)));
    tags.push((format!("{p}policy_digest"), v.policy_digest().unwrap_or("").to_owned()));
    tags.push((format!("{p}signers"), v.signers.join(",")));
    tags.push((format!("{p}time"), stamp()));
    tags
}

/// The envelope recorded on `mv` for `alias`: `Ok(None)` when there is none, `Err` (a reason)
/// when the record is incomplete or does not hash to its `envelope_sha256`.
pub fn recorded_envelope(mv: &ModelVersion, alias: &str) -> Result<Option<Vec<u8>>, String> {
    let p = prefix(alias);
    let Some(parts) = mv.tag(&format!("{p}envelope.parts")) else {
        return Ok(None);
    };
    let n: usize = parts
        .parse()
        .ok()
        .filter(|&n| n > 0 && n <= MAX_PIECES)
        .ok_or_else(|| format!("its tag {p}envelope.parts is `{parts}`"))?;
    let mut text = String::new();
    for i in 0..n {
        text.push_str(
            mv.tag(&format!("{p}envelope.{i}"))
                .ok_or_else(|| format!("its tag {p}envelope.{i} is missing"))?,
        );
    }
    let want = mv.tag(&format!("{p}envelope_sha256")).unwrap_or("");
    let got = crate::attest::file_digest(text.as_bytes());
    if want != got {
        return Err(format!(
            "the envelope recorded in its tags has sha256 {got}, its tag {p}envelope_sha256 says `{want}`"
        ));
    }
    Ok(Some(text.into_bytes()))
}

/// What [`find_version`] found.
enum Found {
    /// The version, and its files' identity (the trainer's signature checked, when asked).
    Version(ModelVersion, Box<ModelIdentity>),
    /// No version has the decision's files.
    Refused(Failure),
    /// The trainer's signature failed a check over the version's files.
    ModelRefused(OmsError),
}

/// The version to promote: the one given, else the one whose files have the subject's digest;
/// the trainer's signature, when asked, is checked over the files of that version (read again,
/// the digest then taken from the same read).
fn find_version(
    reg: &Registry,
    opts: &MlflowApply,
    envelope: &[u8],
    notify: &mut Notify<'_>,
) -> Result<Found, MlflowError> {
    let signed = |mv: ModelVersion| -> Result<Found, MlflowError> {
        Ok(
            match version_identity(
                reg,
                &mv,
                envelope,
                opts.model_signature.as_ref(),
                &mut Budget::default(),
            )? {
                Ok(id) => Found::Version(mv, Box::new(id)),
                Err(e) => Found::ModelRefused(e),
            },
        )
    };
    if let Some(v) = &opts.version {
        return signed(reg.version(&opts.name, v)?);
    }
    let subjects = subject_digests(envelope);
    let mut matching = Vec::new();
    let mut seen = Vec::new();
    // One budget for every version read: a registry with many versions does not get a download
    // allowance for each.
    let mut budget = Budget::default();
    for mv in reg.versions(&opts.name)? {
        let id =
            match version_identity(reg, &mv, envelope, None, &mut budget).and_then(|r| r.map_err(|e| ModelError::Check(e).into())) {
                Ok(id) => id,
                // A limit reached, or the registry failing, stops the search.
                Err(e @ (MlflowError::Registry(_) | MlflowError::Limit(_))) => {
                    return Err(MlflowError::Usage(format!(
                        "version {} of {}, searched for the decision's files: {}; without --model-version the limits hold for every version read together: give --model-version",
                        mv.version,
                        opts.name,
                        e.message()
                    )))
                }
                Err(e) => {
                    notify(Notice::warning(format!(
                        "version {} of {} left out: {}",
                        mv.version,
                        opts.name,
                        e.message()
                    )));
                    continue;
                }
            };
        seen.push(format!("{} sha256:{}", mv.version, id.digest));
        if subjects.contains(&id.digest) {
            matching.push((mv, id));
        }
    }
    match matching.len() {
        1 => {
            let (mv, id) = matching.pop().expect("one");
            if opts.model_signature.is_some() {
                signed(mv)
            } else {
                Ok(Found::Version(mv, Box::new(id)))
            }
        }
        0 => Ok(Found::Refused(Failure::new(
            Check::SubjectDigest,
            format!(
                "no version of {} has the files the decision names (sha256:{}); versions read: {}",
                opts.name,
                subjects.join(", sha256:"),
                if seen.is_empty() {
                    "none".to_owned()
                } else {
                    seen.join("; ")
                }
            ),
        ))),
        _ => Err(MlflowError::Ambiguous {
            name: opts.name.clone(),
            digest: matching[0].1.digest.clone(),
            versions: matching.into_iter().map(|(mv, _)| mv.version).collect(),
        }),
    }
}

fn shown(v: &Option<String>) -> String {
    v.as_ref()
        .map_or_else(|| "no version (unset)".to_owned(), |v| format!("version {v}"))
}

/// Records the outcome of the ledger's interrupted registry intents for `uri`, from where the
/// alias points now.
fn resolve_pending(
    reg: &Registry,
    ledger: &mut LedgerFile,
    name: &str,
    alias: &str,
    uri: &str,
    notify: &mut Notify<'_>,
) -> Result<(), MlflowError> {
    let pending: Vec<Entry> = ledger.parsed.pending().into_iter().cloned().collect();
    for intent in pending {
        let ours = matches!(intent.action.as_deref(), Some("mlflow_alias" | "mlflow_restore"));
        if !ours || intent.target.as_deref() != Some(uri) {
            notify(Notice::warning(format!(
                "the ledger {} has an interrupted apply of decision {} to {}; the next apply there resolves it",
                ledger.path.display(),
                intent.payload_sha256,
                intent.config.as_deref().or(intent.target.as_deref()).unwrap_or("?")
            )));
            continue;
        }
        let now = reg.alias(name, alias)?.map(|mv| mv.version);
        let before = intent.alias_before.clone().filter(|b| !b.is_empty());
        let outcome = if now.is_some() && now == intent.alias_version {
            Outcome::Deployed
        } else if now == before {
            Outcome::NotDeployed
        } else {
            Outcome::Unknown
        };
        let restore = intent.action.as_deref() == Some("mlflow_restore");
        let mut entry = intent.clone();
        entry.result = outcome;
        if restore && outcome == Outcome::NotDeployed {
            // A restore that did not move the alias closes with its decision's last entry as it
            // was (deployed), as a restore that fails does: `not_deployed` would let that old
            // decision be applied again. Without one, `unknown` (not applied again).
            match ledger
                .parsed
                .entries
                .iter()
                .rev()
                .find(|e| e.payload_sha256 == intent.payload_sha256 && e.result != Outcome::Intent)
            {
                Some(last) => entry = last.clone(),
                None => entry.result = Outcome::Unknown,
            }
        }
        entry.applied_at = stamp();
        entry.recovered = true;
        ledger.append(&entry)?;
        let what = match outcome {
            Outcome::NotDeployed if restore => format!(
                "the alias still points to {}: the restore did not happen, the decision's record is kept as it was ({})",
                shown(&now),
                entry.result.as_str()
            ),
            Outcome::Deployed => format!("the alias points to version {}: recorded as deployed", intent.alias_version.as_deref().unwrap_or("?")),
            Outcome::NotDeployed => format!("the alias still points to {}: recorded as not deployed", shown(&now)),
            _ => format!("the alias points to {}, neither the version before nor after: recorded as unknown (the decision is not applied again)", shown(&now)),
        };
        notify(Notice::info(format!(
            "the ledger {} had an interrupted apply of decision {} to {uri} (intent at {}): {what}",
            ledger.path.display(),
            intent.payload_sha256,
            intent.applied_at
        )));
    }
    Ok(())
}

fn entry_for(v: &Verified, result: Outcome, uri: &str, action: &str) -> Entry {
    let mut e = Entry::new(&v.payload_sha256, result, &stamp());
    e.model = Some(v.model_name.clone());
    e.model_digest = Some(format!("sha256:{}", v.model_sha256));
    e.target = Some(uri.to_owned());
    e.signers = v.signers.clone();
    e.action = Some(action.to_owned());
    e
}

fn connect(opts: &MlflowApply) -> Result<(Registry, String, PathBuf), MlflowError> {
    movable_alias(&opts.alias)?;
    let uri = model_uri(&opts.name, &opts.alias);
    if let Some(t) = &opts.target {
        if *t != uri {
            return Err(MlflowError::Usage(format!(
                "--target {t}: a registry apply's target is the alias's URI {uri}"
            )));
        }
    }
    let ledger = opts.trust.ledger.clone().ok_or_else(|| {
        MlflowError::Usage(
            "--mlflow needs --ledger FILE (the record of the decisions applied to the registry)".to_owned(),
        )
    })?;
    Ok((Registry::connect(&opts.registry)?, uri, ledger))
}

/// Verifies the decision at `opts.envelope` and moves the alias exactly once (the module's
/// documentation gives the sequence).
pub fn apply(opts: &MlflowApply, notify: &mut Notify<'_>) -> Result<Promoted, MlflowError> {
    let (reg, uri, ledger_path) = connect(opts)?;
    let envelope = match read_envelope_for(&opts.envelope, &opts.trust)? {
        Ok(bytes) => bytes,
        Err(failure) => return Ok(Promoted::Refused(failure)),
    };
    let mut trust = opts.trust.clone();
    trust.ledger = None;

    let mut ledger = if opts.dry_run {
        None
    } else {
        let mut l = LedgerFile::open_locked(&ledger_path, notify)?;
        opts.fail_at.reached(Step::Locked, notify);
        resolve_pending(&reg, &mut l, &opts.name, &opts.alias, &uri, notify)?;
        Some(l)
    };
    let before = reg.alias(&opts.name, &opts.alias)?.map(|mv| mv.version);
    let (mv, id) = match find_version(&reg, opts, &envelope, notify)? {
        Found::Version(mv, id) => (mv, id),
        Found::Refused(failure) => return Ok(Promoted::Refused(failure)),
        Found::ModelRefused(e) => return Ok(Promoted::ModelRefused(e)),
    };
    let v = match check(&envelope, &trust, &id.digest, &uri, unix_now(), notify)? {
        Ok(v) => v,
        Err(failure) => return Ok(Promoted::Refused(failure)),
    };
    if let Err(failure) = id.check_scheme(&v) {
        return Ok(Promoted::Refused(failure));
    }
    if let Err(e) = id.check_same_model(&v.model_sha256) {
        return Ok(Promoted::ModelRefused(e));
    }
    crate::native::apply::trainer_notice(&id, notify);
    let trainer = id.trainer.clone();
    let entry_for = |v: &Verified, result: Outcome, uri: &str, action: &str| {
        let mut e = entry_for(v, result, uri, action);
        if let Some(t) = &trainer {
            e.trainer_key = t.trainer_key().map(str::to_owned);
            if let Some((identity, issuer)) = t.keyless_signer() {
                e.trainer_identity = Some(identity.to_owned());
                e.trainer_issuer = Some(issuer.to_owned());
            }
        }
        e
    };
    let applied = match &ledger {
        Some(l) => l
            .parsed
            .last(&v.payload_sha256)
            .filter(|e| e.result != Outcome::NotDeployed)
            .cloned(),
        None => read_ledger(Some(&ledger_path), notify)?
            .last(&v.payload_sha256)
            .filter(|e| e.result != Outcome::NotDeployed)
            .cloned(),
    };
    if let Some(last) = applied {
        return Ok(Promoted::Refused(Failure::new(
            Check::Replayed,
            format!(
                "decision {} was applied already: the ledger {} says {} at {}{}",
                v.payload_sha256,
                ledger_path.display(),
                last.result.as_str(),
                last.applied_at,
                match (last.result, &last.alias_version) {
                    (Outcome::Deployed, Some(ver)) =>
                        format!(" (it moved {} to version {ver})", last.target.as_deref().unwrap_or("?")),
                    _ => String::new(),
                }
            ),
        )));
    }
    if v.approved {
        recordable(&envelope)?;
    }
    let Some(mut ledger) = ledger.take() else {
        return Ok(Promoted::DryRun {
            decision: v,
            version: mv.version,
            current: before,
            trainer: id.trainer,
        });
    };

    if !v.approved {
        let refusal = json!({
            "decision": outcome_word(&v),
            "decision_sha256": v.payload_sha256,
            "reason": v.reason,
            "signers": v.signers.join(","),
            "time": stamp(),
        })
        .to_string();
        let refusal = if refusal.len() > 5000 {
            json!({"decision": outcome_word(&v), "decision_sha256": v.payload_sha256, "time": stamp()}).to_string()
        } else {
            refusal
        };
        reg.set_tag(
            &mv.name,
            &mv.version,
            &format!("{}refused", prefix(&opts.alias)),
            &refusal,
        )?;
        let mut e = entry_for(&v, Outcome::KeptOld, &uri, "mlflow_alias");
        e.alias_before = Some(before.clone().unwrap_or_default());
        e.alias_version = Some(mv.version.clone());
        ledger.append(&e)?;
        opts.fail_at.reached(Step::OutcomeLogged, notify);
        return Ok(Promoted::KeptOld {
            decision: v,
            version: mv.version,
            current: before,
            ledger: ledger.path.clone(),
            trainer: id.trainer,
        });
    }

    // 3. The decision on the version, before anything in the ledger: no permission → nothing used up.
    for (key, value) in decision_tags(&opts.alias, &envelope, &v) {
        reg.set_tag(&mv.name, &mv.version, &key, &value)?;
    }
    opts.fail_at.reached(Step::DecisionTagged, notify);
    // 4. The intent.
    let mut intent = entry_for(&v, Outcome::Intent, &uri, "mlflow_alias");
    intent.alias_before = Some(before.clone().unwrap_or_default());
    intent.alias_version = Some(mv.version.clone());
    ledger.append(&intent).map_err(|source| MlflowError::IntentUnrecorded {
        version: mv.version.clone(),
        source: Box::new(source),
    })?;
    opts.fail_at.reached(Step::IntentLogged, notify);
    if let Some(pause) = opts.pause_before_move {
        std::thread::sleep(pause);
    }
    // 5. Compare, then set.
    let outcome = move_alias(&reg, opts, &uri, &before, &mv.version);
    // A set that failed may still have been done (an answer lost, a proxy's 5xx after the
    // server's commit): unless the move was refused before any set, the alias is read back.
    let now = match &outcome {
        Err(MlflowError::MovedMeanwhile { .. }) | Ok(_) => None,
        Err(_) => Some(reg.alias(&opts.name, &opts.alias).map(|a| a.map(|mv| mv.version))),
    };
    let unchanged = match (outcome, now) {
        (Ok(unchanged), _) => unchanged,
        (Err(e), Some(Ok(Some(now)))) if now == mv.version => {
            notify(Notice::warning(format!(
                "setting the alias reported an error, but {uri} points to version {now}: it moved ({})",
                e.message()
            )));
            false
        }
        (Err(e), now) => {
            let recorded = match now {
                Some(Ok(now)) if now != before => format!(
                    "the alias now points to {}: the ledger keeps the intent, the next apply resolves it from where the alias points",
                    shown(&now)
                ),
                Some(Err(re)) => format!(
                    "the alias could not be read back ({}): the ledger keeps the intent, the next apply resolves it from where the alias points",
                    re
                ),
                _ => {
                    let mut failed = intent.clone();
                    failed.result = Outcome::NotDeployed;
                    failed.applied_at = stamp();
                    match ledger.append(&failed) {
                        Ok(()) => "recorded as not deployed: the decision may be applied again".to_owned(),
                        Err(le) => format!(
                            "{}; the next apply resolves it from where the alias points",
                            crate::native::files::chain(&le)
                        ),
                    }
                }
            };
            return Err(match e {
                MlflowError::MovedMeanwhile { uri, before, now, .. } => MlflowError::MovedMeanwhile {
                    uri,
                    before,
                    now,
                    recorded,
                },
                other => MlflowError::NotMoved {
                    recorded,
                    source: Box::new(other),
                },
            });
        }
    };
    opts.fail_at.reached(Step::AliasMoved, notify);
    // 6. Done.
    let mut done = intent;
    done.result = Outcome::Deployed;
    done.applied_at = stamp();
    done.unchanged = unchanged;
    if let Err(e) = ledger.append(&done) {
        notify(Notice::warning(format!(
            "the alias IS moved, but the ledger could not record it: {} (its intent is there: the next apply records it)",
            crate::native::files::chain(&e)
        )));
    }
    opts.fail_at.reached(Step::OutcomeLogged, notify);
    Ok(Promoted::Moved {
        decision: v,
        version: mv.version,
        before,
        unchanged,
        ledger: ledger.path.clone(),
        trainer: id.trainer,
    })
}

/// Sets the alias to `version` if it still points to `before`; `Ok(true)` when it pointed to
/// `version` already.
fn move_alias(
    reg: &Registry,
    opts: &MlflowApply,
    uri: &str,
    before: &Option<String>,
    version: &str,
) -> Result<bool, MlflowError> {
    let now = reg.alias(&opts.name, &opts.alias)?.map(|mv| mv.version);
    if now != *before {
        return Err(MlflowError::MovedMeanwhile {
            uri: uri.to_owned(),
            before: shown(before),
            now: shown(&now),
            recorded: String::new(),
        });
    }
    if now.as_deref() == Some(version) {
        return Ok(true);
    }
    reg.set_alias(&opts.name, &opts.alias, version)?;
    Ok(false)
}

/// What `verify --mlflow` found: the CLI's `--json` (`{ok, reason, version, decision_sha256,
/// subject}`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct AliasCheck {
    /// Every check holds.
    pub ok: bool,
    /// Why (or what was verified).
    pub reason: String,
    /// The version the alias points to, if any.
    pub version: Option<String>,
    /// The sha256 of the recorded decision's statement (the ledger's `payload_sha256`).
    pub decision_sha256: Option<String>,
    /// `sha256:<hex>` of the version's files, when they were hashed.
    pub subject: Option<String>,
}

/// A `verify --mlflow`.
#[derive(Debug, Clone)]
pub struct MlflowVerify {
    /// How to reach the registry.
    pub registry: RegistrySettings,
    /// `models:/NAME@ALIAS`.
    pub model_uri: String,
    /// Keys, threshold, age and size limit (the ledger is not read).
    pub trust: Trust,
}

/// Resolves the alias and verifies the decision recorded on its version: signatures,
/// threshold, age, the subject against the version's files, the target against the URI, and
/// that it approves. A check that fails is `Ok` with `ok: false`; `Err` is a registry or file
/// problem (exit 1).
pub fn verify(opts: &MlflowVerify, notify: &mut Notify<'_>) -> Result<AliasCheck, MlflowError> {
    let (name, alias) = parse_model_uri(&opts.model_uri)
        .ok_or_else(|| MlflowError::Usage(format!("--model-uri `{}`: expected models:/NAME@ALIAS", opts.model_uri)))?;
    movable_alias(&alias).map_err(|e| MlflowError::Usage(format!("--model-uri `{}`: {e}", opts.model_uri)))?;
    let reg = Registry::connect(&opts.registry)?;
    let mut trust = opts.trust.clone();
    trust.ledger = None;
    // The keys are read (and a threshold no envelope meets refused) before the registry is asked.
    if let Err(f) = crate::native::apply::check_trust(&trust)? {
        return Ok(fail(None, None, None, f.message));
    }
    let Some(mv) = reg.alias(&name, &alias)? else {
        return Ok(fail(
            None,
            None,
            None,
            format!("the alias {} is not set", opts.model_uri),
        ));
    };
    verify_version(&reg, &mv, &alias, &opts.model_uri, &trust, notify)
}

fn fail(version: Option<String>, decision: Option<String>, subject: Option<String>, reason: String) -> AliasCheck {
    AliasCheck {
        ok: false,
        reason,
        version,
        decision_sha256: decision,
        subject,
    }
}

fn verify_version(
    reg: &Registry,
    mv: &ModelVersion,
    alias: &str,
    uri: &str,
    trust: &Trust,
    notify: &mut Notify<'_>,
) -> Result<AliasCheck, MlflowError> {
    let ver = Some(mv.version.clone());
    let envelope = match recorded_envelope(mv, alias) {
        Ok(Some(e)) => e,
        Ok(None) => {
            return Ok(fail(
                ver,
                None,
                None,
                format!(
                    "{uri} points to version {} of {}, which has no signed decision recorded for the alias {alias}",
                    mv.version, mv.name
                ),
            ))
        }
        Err(why) => {
            return Ok(fail(
                ver,
                None,
                None,
                format!(
                    "{uri} points to version {} of {}, which has no signed decision that can be read: {why}",
                    mv.version, mv.name
                ),
            ))
        }
    };
    let id = match version_identity(reg, mv, &envelope, None, &mut Budget::default())? {
        Ok(id) => id,
        Err(e) => return Err(ModelError::Check(e).into()),
    };
    let subject = Some(format!("sha256:{}", id.digest));
    let checked =
        check(&envelope, trust, &id.digest, uri, unix_now(), notify)?.and_then(|v| id.check_scheme(&v).map(|()| v));
    match checked {
        Err(f) => Ok(fail(
            ver,
            None,
            subject,
            format!("version {} of {}: the decision recorded on it fails ({}): {}", mv.version, mv.name, f.check, f.message),
        )),
        Ok(v) if !v.approved => Ok(fail(
            ver,
            Some(v.payload_sha256.clone()),
            subject,
            format!("version {} of {}: the decision recorded on it does not approve ({}: {})", mv.version, mv.name, outcome_word(&v), v.reason),
        )),
        Ok(v) => Ok(AliasCheck {
            ok: true,
            reason: format!(
                "{uri} points to version {} of {}, whose files match the signed decision {} (approved; signed by {}): {}",
                mv.version,
                mv.name,
                v.payload_sha256,
                v.signers.join(", "),
                v.reason
            ),
            version: ver,
            decision_sha256: Some(v.payload_sha256),
            subject,
        }),
    }
}

/// What `--restore` did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Restored {
    /// `models:/NAME@ALIAS`.
    pub uri: String,
    /// The version it pointed to (`None`: unset).
    pub from: Option<String>,
    /// The version it points to now.
    pub to: String,
    /// The decision recorded on that version.
    pub decision_sha256: String,
    /// It pointed there already, with a verified decision: nothing was set.
    pub unchanged: bool,
}

/// Puts the alias back on the last version the ledger says it promoted and whose recorded
/// decision still verifies (signatures, threshold, subject, target, approval; not the age:
/// that decision was checked when it was applied). Written as an `mlflow_restore` intent, the
/// compare-and-set move, then `deployed`.
pub fn restore(opts: &MlflowApply, notify: &mut Notify<'_>) -> Result<Restored, MlflowError> {
    let (reg, uri, ledger_path) = connect(opts)?;
    let mut ledger = LedgerFile::open_locked(&ledger_path, notify)?;
    resolve_pending(&reg, &mut ledger, &opts.name, &opts.alias, &uri, notify)?;
    let mut trust = opts.trust.clone();
    trust.ledger = None;
    trust.max_age = i64::MAX;
    let now = reg.alias(&opts.name, &opts.alias)?.map(|mv| mv.version);
    let mut tried = Vec::new();
    let candidates: Vec<Entry> = ledger
        .parsed
        .entries
        .iter()
        .rev()
        .filter(|e| {
            e.result == Outcome::Deployed
                && e.target.as_deref() == Some(uri.as_str())
                && matches!(e.action.as_deref(), Some("mlflow_alias" | "mlflow_restore"))
                && e.alias_version.is_some()
        })
        .cloned()
        .collect();
    for e in candidates {
        let version = e.alias_version.clone().expect("filtered");
        if tried.contains(&version) {
            continue;
        }
        tried.push(version.clone());
        let mv = match reg.version(&opts.name, &version) {
            Ok(mv) => mv,
            Err(err) if err.is_not_found() => continue,
            Err(err) => return Err(err.into()),
        };
        let checked = verify_version(&reg, &mv, &opts.alias, &uri, &trust, notify)?;
        if !checked.ok || checked.decision_sha256.as_deref() != Some(e.payload_sha256.as_str()) {
            notify(Notice::warning(format!(
                "version {version} (decision {}) is not restored: {}",
                e.payload_sha256,
                if checked.ok {
                    "it records another decision than the ledger's".to_owned()
                } else {
                    checked.reason
                }
            )));
            continue;
        }
        if now.as_deref() == Some(version.as_str()) {
            return Ok(Restored {
                uri,
                from: now,
                to: version,
                decision_sha256: e.payload_sha256,
                unchanged: true,
            });
        }
        let mut intent = e.clone();
        intent.result = Outcome::Intent;
        intent.applied_at = stamp();
        intent.action = Some("mlflow_restore".to_owned());
        intent.alias_before = Some(now.clone().unwrap_or_default());
        intent.recovered = false;
        intent.unchanged = false;
        ledger.append(&intent)?;
        opts.fail_at.reached(Step::IntentLogged, notify);
        let moved = move_alias(&reg, opts, &uri, &now, &version);
        match moved {
            Ok(_) => {
                opts.fail_at.reached(Step::AliasMoved, notify);
                let mut done = intent;
                done.applied_at = stamp();
                done.result = Outcome::Deployed;
                ledger.append(&done)?;
                return Ok(Restored {
                    uri,
                    from: now,
                    to: version,
                    decision_sha256: e.payload_sha256,
                    unchanged: false,
                });
            }
            Err(err) => {
                // The restore did not happen: its intent is closed with the decision's last
                // entry as it was (deployed).
                let recorded = match ledger.append(&e_restore_failed(&e)) {
                    Ok(()) => "the ledger keeps the decision as it was".to_owned(),
                    Err(le) => crate::native::files::chain(&le),
                };
                return Err(MlflowError::NotMoved {
                    recorded,
                    source: Box::new(err),
                });
            }
        }
    }
    Err(MlflowError::NothingToRestore(format!(
        "nothing to restore {uri} to: the ledger {} has no version promoted to it whose recorded decision still verifies{}",
        ledger_path.display(),
        if tried.is_empty() {
            String::new()
        } else {
            format!(" (tried versions {})", tried.join(", "))
        }
    )))
}

/// The entry that closes a restore's intent that did not move the alias: the decision's last
/// entry as it was before the restore.
fn e_restore_failed(last: &Entry) -> Entry {
    let mut e = last.clone();
    e.applied_at = stamp();
    e
}

#[cfg(test)]
mod tests {
    use super::*;

    fn why(stop: LocalStop) -> String {
        match stop {
            LocalStop::Limit(w) => w,
            LocalStop::Unreadable(w) => format!("unreadable: {w}"),
        }
    }

    #[test]
    fn a_local_location_is_walked_within_the_limits_and_one_budget() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("m");
        fs::create_dir_all(root.join("a/b")).unwrap();
        fs::write(root.join("a/b/w.bin"), [0u8; 40]).unwrap();
        fs::write(root.join("c.json"), [0u8; 10]).unwrap();
        let mut budget = Budget::default();
        local_limits(&root, 50, &mut budget).map_err(why).unwrap();
        assert_eq!((budget.entries, budget.bytes), (4, 50));
        // The same files again in the same budget: past the bytes.
        let e = local_limits(&root, 50, &mut budget).map_err(why).unwrap_err();
        assert!(e.contains("past 50 bytes") && e.contains("--mlflow-max-bytes"), "{e}");
        // Too many files and folders, counted with what the budget already spent.
        let mut budget = Budget {
            entries: MAX_FILES - 1,
            bytes: 0,
        };
        let e = local_limits(&root, 50, &mut budget).map_err(why).unwrap_err();
        assert!(e.contains(&format!("more than {MAX_FILES} files and folders")), "{e}");
        // Too deep.
        let mut deep = dir.path().join("deep");
        for _ in 0..=MAX_DEPTH {
            deep = deep.join("d");
        }
        fs::create_dir_all(&deep).unwrap();
        let e = local_limits(&dir.path().join("deep"), 50, &mut Budget::default())
            .map_err(why)
            .unwrap_err();
        assert!(e.contains(&format!("more than {MAX_DEPTH} folders deep")), "{e}");
        // A symbolic link inside, or the location itself one.
        std::os::unix::fs::symlink("/", root.join("a/up")).unwrap();
        let e = local_limits(&root, 1 << 20, &mut Budget::default())
            .map_err(why)
            .unwrap_err();
        assert!(e.contains("a/up is a symbolic link"), "{e}");
        std::os::unix::fs::symlink(&root, dir.path().join("l")).unwrap();
        let e = local_limits(&dir.path().join("l"), 1 << 20, &mut Budget::default())
            .map_err(why)
            .unwrap_err();
        assert!(e.contains("is a symbolic link"), "{e}");
        // A location that is not there is unreadable, not a limit (a search leaves it out).
        let e = local_limits(&dir.path().join("none"), 50, &mut Budget::default()).unwrap_err();
        assert!(matches!(e, LocalStop::Unreadable(_)), "{e:?}");
    }

    #[test]
    fn an_envelope_is_recorded_only_when_it_can_be_read_back() {
        let most = "x".repeat(MAX_PIECES * TAG_PIECE);
        assert!(recordable(most.as_bytes()).is_ok());
        let mut tags = vec![(
            "deploy-gate.c.envelope.parts".to_owned(),
            pieces(&most).len().to_string(),
        )];
        for (i, p) in pieces(&most).iter().enumerate() {
            tags.push((format!("deploy-gate.c.envelope.{i}"), (*p).to_owned()));
        }
        tags.push((
            "deploy-gate.c.envelope_sha256".to_owned(),
            crate::attest::file_digest(most.as_bytes()),
        ));
        let mv = ModelVersion { tags, ..version(&[]) };
        assert_eq!(recorded_envelope(&mv, "c"), Ok(Some(most.clone().into_bytes())));
        // One byte more (or a character cut short of a piece's end) is refused before any write.
        let e = recordable(format!("{most}x").as_bytes()).unwrap_err().message();
        assert!(e.contains("4000001 bytes") && e.contains("1001 tags"), "{e}");
        // Three-byte characters: 3999 bytes a piece.
        let wide = "€".repeat(1_333_300);
        assert!(wide.len() < MAX_PIECES * TAG_PIECE);
        assert!(recordable(wide.as_bytes()).is_err());
    }

    #[test]
    fn artifact_locations_hosted_elsewhere_are_not_read() {
        let tracking = url::Url::parse("http://127.0.0.1:5000/prefix").unwrap();
        let ok = |uri| proxied_path(uri, &tracking).map(|r| r.unwrap());
        assert_eq!(
            ok("mlflow-artifacts:/1/models/m-1/artifacts"),
            Some("1/models/m-1/artifacts")
        );
        assert_eq!(ok("mlflow-artifacts:///1/m"), Some("1/m"));
        assert_eq!(ok("mlflow-artifacts://127.0.0.1:5000/1/m"), Some("1/m"));
        assert_eq!(ok("file:///tmp/m"), None);
        for elsewhere in [
            "mlflow-artifacts://evil.example:5000/1/m",
            "mlflow-artifacts://127.0.0.1:5001/1/m",
            "mlflow-artifacts://127.0.0.1/1/m",
            "mlflow-artifacts://localhost:5000/1/m",
            "mlflow-artifacts://u@127.0.0.1:5000/1/m",
        ] {
            let why = proxied_path(elsewhere, &tracking).unwrap().unwrap_err();
            assert!(why.contains("not from the tracking server"), "{elsewhere}: {why}");
        }
        let https = url::Url::parse("https://mlflow.example").unwrap();
        assert_eq!(
            proxied_path("mlflow-artifacts://mlflow.example:443/a", &https).map(|r| r.unwrap()),
            Some("a")
        );
        for bad in [
            "mlflow-artifacts:/",
            "mlflow-artifacts:/a/../b",
            "mlflow-artifacts://127.0.0.1:5000",
        ] {
            assert!(proxied_path(bad, &tracking).unwrap().is_err(), "{bad}");
        }
    }

    #[test]
    fn model_uris() {
        assert_eq!(
            parse_model_uri("models:/agent@champion"),
            Some(("agent".into(), "champion".into()))
        );
        assert_eq!(
            parse_model_uri("models:/team/agent@v@x"),
            Some(("team/agent@v".into(), "x".into()))
        );
        for bad in [
            "models:/agent",
            "models:/@a",
            "models:/a@",
            "runs:/x@a",
            "models://a@b",
            "serving.yaml",
        ] {
            assert_eq!(parse_model_uri(bad), None, "{bad}");
        }
        assert_eq!(model_uri("agent", "champion"), "models:/agent@champion");
    }

    fn version(tags: &[(&str, &str)]) -> ModelVersion {
        ModelVersion {
            name: "agent".into(),
            version: "3".into(),
            source: String::new(),
            tags: tags.iter().map(|(k, v)| ((*k).to_owned(), (*v).to_owned())).collect(),
        }
    }

    #[test]
    fn the_recorded_envelope_is_its_pieces_joined_and_must_hash_to_its_tag() {
        let text = "{\"payload\":\"é…\"}";
        let sha = crate::attest::file_digest(text.as_bytes());
        let (a, b) = text.split_at(12);
        let ok = version(&[
            ("deploy-gate.champion.envelope.parts", "2"),
            ("deploy-gate.champion.envelope.0", a),
            ("deploy-gate.champion.envelope.1", b),
            ("deploy-gate.champion.envelope_sha256", &sha),
        ]);
        assert_eq!(recorded_envelope(&ok, "champion"), Ok(Some(text.as_bytes().to_vec())));
        assert_eq!(recorded_envelope(&ok, "canary"), Ok(None));
        let missing = version(&[
            ("deploy-gate.champion.envelope.parts", "2"),
            ("deploy-gate.champion.envelope.0", a),
        ]);
        assert!(recorded_envelope(&missing, "champion")
            .unwrap_err()
            .contains("envelope.1 is missing"));
        let other = version(&[
            ("deploy-gate.champion.envelope.parts", "1"),
            ("deploy-gate.champion.envelope.0", a),
            ("deploy-gate.champion.envelope_sha256", &sha),
        ]);
        assert!(recorded_envelope(&other, "champion")
            .unwrap_err()
            .contains("has sha256"));
        for parts in ["0", "x", "1001"] {
            let bad = version(&[("deploy-gate.champion.envelope.parts", parts)]);
            assert!(recorded_envelope(&bad, "champion").is_err(), "{parts}");
        }
    }
}
