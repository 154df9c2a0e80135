//! What `verify` and `apply` trust, read from files and checked: the trusted keys, the envelope
//! read within its limit, the ledger as `verify` reads it (no lock, nothing written), then every
//! check of [`crate::attest::verify`].

use super::ApplyError;
use crate::attest::keys::read_public_pem;
use crate::attest::ledger::{self, Ledger, Tail};
use crate::attest::{verify, Check, Failure, Limits, Requirements, Verified, VerifyError, DEFAULT_MAX_STATEMENT_BYTES};
use crate::native::files::{read_key, read_regular, FilesError, Notice, Notify};
use std::fs::{self, File};
use std::io::{self, Read};
use std::path::{Path, PathBuf};

/// The oldest decision accepted by default: 24 hours, in seconds.
pub const DEFAULT_MAX_AGE: i64 = 24 * 3600;

/// What a signed decision is checked against.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Trust {
    /// The trusted public keys (SPKI PEM files): only their signatures count.
    pub trusted_keys: Vec<PathBuf>,
    /// How many distinct trusted keys must have signed. Default 1.
    pub threshold: usize,
    /// The oldest acceptable decision, in seconds. Default [`DEFAULT_MAX_AGE`] (24 h).
    pub max_age: i64,
    /// The ledger of applied decisions: one already in it is refused. Default none (`apply`
    /// then uses the one beside the config).
    pub ledger: Option<PathBuf>,
    /// The largest statement accepted (the decoded payload). Default
    /// [`DEFAULT_MAX_STATEMENT_BYTES`] (64 MiB).
    pub max_statement_size: usize,
}

impl Default for Trust {
    fn default() -> Trust {
        Trust {
            trusted_keys: Vec::new(),
            threshold: 1,
            max_age: DEFAULT_MAX_AGE,
            ledger: None,
            max_statement_size: DEFAULT_MAX_STATEMENT_BYTES,
        }
    }
}

/// Reads the envelope at `path` once, within the limit `trust` sets (a pipe, whose size is not
/// known beforehand, is read up to one byte past it): the same bytes then name the digest
/// scheme the model is hashed with and are verified ([`check`]), so a pipe works and a file
/// swapped between two reads cannot be. `Ok(Err(..))` is an envelope over the limit.
/// A threshold no envelope can meet is refused before the envelope is read.
pub fn read_envelope_for(path: &Path, trust: &Trust) -> Result<Result<Vec<u8>, Failure>, ApplyError> {
    match check_trust(trust)? {
        Ok(limit) => read_envelope(path, limit),
        Err(failure) => Ok(Err(failure)),
    }
}

/// Reads the trusted keys and refuses a threshold no envelope can meet (`Ok(Err(..))`);
/// `Ok(Ok(n))` is the largest envelope accepted, in bytes.
pub fn check_trust(trust: &Trust) -> Result<Result<usize, Failure>, ApplyError> {
    let trusted = trusted_keys(trust)?;
    let never = |_: &str| false;
    let req = Requirements {
        trusted: &trusted,
        threshold: trust.threshold,
        subject_sha256: None,
        target: None,
        now: 0,
        max_age: trust.max_age,
        already_applied: &never,
        limits: Limits::for_statement_bytes(trust.max_statement_size),
    };
    if let Err(e) = req.check_threshold() {
        return Ok(Err(Failure::from(&e)));
    }
    Ok(Ok(req.limits.envelope_bytes))
}

/// The trusted keys' files, read.
fn trusted_keys(trust: &Trust) -> Result<Vec<ed25519_dalek::VerifyingKey>, ApplyError> {
    let mut trusted = Vec::new();
    for path in &trust.trusted_keys {
        let pem = read_key(path, "trusted key")?;
        trusted.push(read_public_pem(&pem).map_err(|error| ApplyError::TrustedKey {
            path: path.clone(),
            error,
        })?);
    }
    Ok(trusted)
}

/// Reads an envelope, refusing one over the size limit before reading it (a pipe, whose size
/// is not known beforehand, is read up to one byte past the limit).
fn read_envelope(path: &Path, limit: usize) -> Result<Result<Vec<u8>, Failure>, ApplyError> {
    let cannot = |source| ApplyError::ReadEnvelope {
        path: path.to_path_buf(),
        source,
    };
    let file = File::open(path).map_err(cannot)?;
    let size = file.metadata().map_err(cannot)?.len();
    if size > limit as u64 {
        let e = VerifyError::EnvelopeSize {
            bytes: usize::try_from(size).unwrap_or(usize::MAX),
            limit,
        };
        return Ok(Err(Failure::new(
            Check::EnvelopeSize,
            format!("{}: {e} (--max-statement-size raises it)", path.display()),
        )));
    }
    let mut bytes = Vec::with_capacity(size as usize);
    file.take(limit as u64 + 1).read_to_end(&mut bytes).map_err(cannot)?;
    if bytes.len() > limit {
        let message = format!(
            "{}: the envelope is more than the limit of {limit} bytes (--max-statement-size raises it)",
            path.display()
        );
        return Ok(Err(Failure::new(Check::EnvelopeSize, message)));
    }
    Ok(Ok(bytes))
}

/// The most `verify --ledger` reads of a ledger (about 500 bytes an entry).
const MAX_LEDGER_BYTES: usize = 1 << 30;

/// A ledger as `verify --ledger` reads it (no lock, nothing written: a torn last line is
/// ignored with a warning, the next apply removes it); none or a missing file is empty.
pub fn read_ledger(path: Option<&Path>, notify: &mut Notify<'_>) -> Result<Ledger, ApplyError> {
    let empty = || ledger::parse(b"").expect("an empty ledger parses");
    let Some(path) = path else {
        return Ok(empty());
    };
    let bytes = match fs::symlink_metadata(path) {
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(empty()),
        // A link the ledger's writer would refuse is read where it points; FIFOs and devices
        // are refused, and the size is bounded.
        _ => {
            let real =
                fs::canonicalize(path).map_err(FilesError::io(format!("cannot read the ledger {}", path.display())))?;
            read_regular(&real, "ledger", MAX_LEDGER_BYTES)
                .map_err(|source| ApplyError::ReadLedger {
                    path: path.to_path_buf(),
                    source,
                })?
                .1
        }
    };
    let parsed = ledger::parse(&bytes).map_err(|error| FilesError::Ledger {
        path: path.to_path_buf(),
        error,
    })?;
    if let Tail::Torn { line, .. } = parsed.tail {
        notify(Notice::warning(format!(
            "the ledger {} line {line} was cut short by an interrupted write; ignored (the next apply removes it)",
            path.display()
        )));
    }
    Ok(parsed)
}

/// Runs every check of the envelope's bytes (read by [`read_envelope_for`]) against `trust`,
/// the model's `digest` (hex) and the `target`, at `now` (Unix seconds): `Ok(Err(..))` is a
/// verification failure naming its check (the CLI's exit 2), `Err` a file that could not be
/// read.
pub fn check(
    envelope: &[u8],
    trust: &Trust,
    digest: &str,
    target: &str,
    now: i64,
    notify: &mut Notify<'_>,
) -> Result<Result<Verified, Failure>, ApplyError> {
    let trusted = trusted_keys(trust)?;
    let ledger = read_ledger(trust.ledger.as_deref(), notify)?;
    let applied = |d: &str| ledger.applied(d);
    let req = Requirements {
        trusted: &trusted,
        threshold: trust.threshold,
        subject_sha256: Some(digest),
        target: Some(target),
        now,
        max_age: trust.max_age,
        already_applied: &applied,
        limits: Limits::for_statement_bytes(trust.max_statement_size),
    };
    let failed = |e: VerifyError| Failure::from(&e);
    Ok(verify(envelope, &req).map_err(failed))
}
