//! What `verify` and `apply` trust, and how it is checked: the trusted keys, threshold, age
//! and ledger flags, the envelope read within its limit and verified by `deploy_gate::attest`,
//! the ledger as `verify` reads it, and the model digest of a file or directory.

use crate::exit::{now, EXIT_INVALID};
use crate::files::{read_key, read_regular};
use anyhow::{anyhow, Context, Result};
use clap::Args;
use deploy_gate::attest::keys::read_public_pem;
use deploy_gate::attest::ledger::{self, Ledger, Tail};
use deploy_gate::attest::{
    verify, Check, Failure, Limits, Requirements, Verified, VerifyError, DEFAULT_MAX_STATEMENT_BYTES,
};
use std::fs::{self, File};
use std::io::{self, Read};
use std::path::{Path, PathBuf};

/// A size in bytes: a number, optionally with a binary suffix (`K`/`KiB`, `M`/`MiB`, `G`/`GiB`).
pub(crate) fn parse_size(s: &str) -> Result<usize, String> {
    let t = s.trim();
    let split = t.find(|c: char| !c.is_ascii_digit()).unwrap_or(t.len());
    let (digits, suffix) = t.split_at(split);
    let unit: usize = match suffix.trim() {
        "" | "B" => 1,
        "K" | "KiB" => 1 << 10,
        "M" | "MiB" => 1 << 20,
        "G" | "GiB" => 1 << 30,
        _ => return Err(format!("`{s}`: a size in bytes, e.g. 65536, 512K, 64M or 1G")),
    };
    digits
        .parse::<usize>()
        .ok()
        .and_then(|n| n.checked_mul(unit))
        .filter(|&n| n > 0)
        .ok_or_else(|| format!("`{s}`: a size in bytes, e.g. 65536, 512K, 64M or 1G"))
}

fn parse_max_age(s: &str) -> Result<i64, String> {
    let d = humantime::parse_duration(s).map_err(|e| format!("`{s}`: {e} (e.g. 24h, 90m, 7d)"))?;
    i64::try_from(d.as_secs()).map_err(|_| format!("`{s}` is too long a maximum age"))
}

#[derive(Args, Clone)]
pub struct TrustArgs {
    /// A trusted public key (SPKI PEM); repeat for several. Only these keys' signatures count.
    #[arg(long, value_name = "PUB.pem", required = true)]
    trusted_key: Vec<PathBuf>,
    /// How many distinct trusted keys must have signed.
    #[arg(long, value_name = "N", default_value_t = 1)]
    threshold: usize,
    /// The oldest acceptable decision.
    #[arg(long, value_name = "DURATION", default_value = "24h", value_parser = parse_max_age)]
    max_age: i64,
    /// The ledger of applied decisions: one already in it is refused.
    #[arg(long, value_name = "FILE")]
    pub(crate) ledger: Option<PathBuf>,
    /// The largest statement accepted (the decoded payload; the envelope may be 1.5 times as
    /// large plus 64 KiB). Default 64M.
    #[arg(long, value_name = "SIZE", default_value_t = DEFAULT_MAX_STATEMENT_BYTES, value_parser = parse_size, hide_default_value = true)]
    max_statement_size: usize,
}

/// Reads an envelope, refusing one over the size limit before reading it (a pipe, whose size
/// is not known beforehand, is read up to one byte past the limit).
fn read_envelope(path: &Path, limit: usize) -> Result<Result<Vec<u8>, Failure>> {
    let context = || format!("cannot read envelope {}", path.display());
    let file = File::open(path).with_context(context)?;
    let size = file.metadata().with_context(context)?.len();
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
    file.take(limit as u64 + 1)
        .read_to_end(&mut bytes)
        .with_context(context)?;
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
pub(crate) fn read_ledger(path: Option<&Path>) -> Result<Ledger> {
    let empty = || ledger::parse(b"").expect("an empty ledger parses");
    let Some(path) = path else {
        return Ok(empty());
    };
    let bytes = match fs::symlink_metadata(path) {
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(empty()),
        // A link the ledger's writer would refuse is read where it points; FIFOs and devices
        // are refused, and the size is bounded.
        _ => {
            let real = fs::canonicalize(path).with_context(|| format!("cannot read the ledger {}", path.display()))?;
            read_regular(&real, "ledger", MAX_LEDGER_BYTES)
                .with_context(|| format!("the ledger {}", path.display()))?
                .1
        }
    };
    let parsed = ledger::parse(&bytes).map_err(|e| anyhow!("the ledger {} {e}", path.display()))?;
    if let Tail::Torn { line, .. } = parsed.tail {
        eprintln!(
            "deploy-gate: warning: the ledger {} line {line} was cut short by an interrupted write; ignored (the next apply removes it)",
            path.display()
        );
    }
    Ok(parsed)
}

/// Runs every check; `Ok(Err(..))` is a verification failure (exit 2), `Err` an I/O problem.
pub(crate) fn check(
    envelope: &Path,
    trust: &TrustArgs,
    digest: &str,
    target: &str,
) -> Result<Result<Verified, Failure>> {
    let mut trusted = Vec::new();
    for path in &trust.trusted_key {
        trusted.push(read_public_pem(&read_key(path, "trusted key")?).map_err(|e| anyhow!("{}: {e}", path.display()))?);
    }
    let ledger = read_ledger(trust.ledger.as_deref())?;
    let applied = |d: &str| ledger.applied(d);
    let req = Requirements {
        trusted: &trusted,
        threshold: trust.threshold,
        subject_sha256: Some(digest),
        target: Some(target),
        now: now(),
        max_age: trust.max_age,
        already_applied: &applied,
        limits: Limits::for_statement_bytes(trust.max_statement_size),
    };
    let failed = |e: VerifyError| Failure::from(&e);
    // A threshold no envelope can meet is refused before the envelope is read.
    if let Err(e) = req.check_threshold() {
        return Ok(Err(failed(e)));
    }
    let bytes = match read_envelope(envelope, req.limits.envelope_bytes)? {
        Ok(bytes) => bytes,
        Err(refused) => return Ok(Err(refused)),
    };
    Ok(verify(&bytes, &req).map_err(failed))
}

/// Prints a verification failure (compact JSON on stdout, a line on stderr): exit 2.
pub(crate) fn invalid(failure: &Failure) -> u8 {
    println!("{}", serde_json::to_string(failure).expect("a failure serializes"));
    eprintln!(
        "deploy-gate: verification failed ({}): {}",
        failure.check, failure.message
    );
    EXIT_INVALID
}

/// The model digest of a file or a directory: the library's, which the Python binding shares.
pub use deploy_gate::native::files::model_digest;
