//! The signing commands: keygen, digest, sign, verify (apply and rollback are in `apply`).

use crate::cli::{evaluate_inputs, EXIT_OK};
use crate::files::read_regular;
use anyhow::{anyhow, bail, Context, Result};
use clap::Args;
use deploy_gate::attest::dsse::Envelope;
use deploy_gate::attest::keys::{
    keyid, private_pem, public_pem, read_private_pem, read_public_pem, signing_key_from_seed,
};
use deploy_gate::attest::ledger::{self, Ledger, Tail};
use deploy_gate::attest::{
    cosign, directory_digest, parse_digest, reproduce, sign, verify, Check, Claim, Failure, Limits, Requirements,
    Summary, VerificationResult, Verified, VerifyError, DEFAULT_MAX_STATEMENT_BYTES,
};
use deploy_gate::policy::GatePolicy;
use serde_json::Value;
use std::fs::{self, File, OpenOptions};
use std::io::{self, Read, Write};
use std::path::{Path, PathBuf};
use std::time::{SystemTime, UNIX_EPOCH};

/// Exit code: the envelope failed verification.
pub const EXIT_INVALID: u8 = 2;

pub(crate) fn now() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs() as i64)
        .unwrap_or(0)
}

/// A size in bytes: a number, optionally with a binary suffix (`K`/`KiB`, `M`/`MiB`, `G`/`GiB`).
fn parse_size(s: &str) -> Result<usize, String> {
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

// ---------------------------------------------------------------- keygen, digest

pub fn keygen(out: &Path) -> Result<u8> {
    let mut seed = [0u8; 32];
    getrandom::fill(&mut seed).map_err(|e| anyhow!("no entropy from the OS: {e}"))?;
    let key = signing_key_from_seed(seed);
    let private = PathBuf::from(format!("{}.key.pem", out.display()));
    let public = PathBuf::from(format!("{}.pub.pem", out.display()));
    let mut options = OpenOptions::new();
    options.write(true).create_new(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
    let mut f = options
        .open(&private)
        .with_context(|| format!("cannot create {} (it must not exist yet)", private.display()))?;
    f.write_all(private_pem(&key).as_bytes())?;
    let mut f = OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(&public)
        .with_context(|| format!("cannot create {}", public.display()))?;
    f.write_all(public_pem(&key.verifying_key()).as_bytes())?;
    println!("{}", keyid(&key.verifying_key()));
    eprintln!(
        "deploy-gate: wrote {} (private, mode 0600) and {} (public); key id above",
        private.display(),
        public.display()
    );
    Ok(EXIT_OK)
}

fn file_sha256(path: &Path) -> Result<String> {
    Ok(deploy_gate::native::hash_file(path)?)
}

/// The subject digest: computed from `--model-path`, or given as `--model-digest`.
fn subject_digest(path: &Option<PathBuf>, digest: &Option<String>) -> Result<String> {
    match (path, digest) {
        (Some(p), _) => model_digest(p),
        (None, Some(d)) => Ok(parse_digest(d)?),
        (None, None) => unreachable!("clap requires one"),
    }
}

/// The model digest of a file, or of a directory (every regular file below it).
pub fn model_digest(path: &Path) -> Result<String> {
    let meta = fs::metadata(path).with_context(|| format!("model path {} does not exist", path.display()))?;
    if meta.is_file() {
        return file_sha256(path);
    }
    let mut files = Vec::new();
    let mut stack = vec![path.to_path_buf()];
    while let Some(dir) = stack.pop() {
        for entry in fs::read_dir(&dir).with_context(|| format!("cannot list {}", dir.display()))? {
            let p = entry?.path();
            let m = fs::metadata(&p).with_context(|| format!("cannot read {}", p.display()))?;
            if m.is_dir() {
                stack.push(p);
            } else if m.is_file() {
                let rel = p.strip_prefix(path).expect("below the root");
                // The digest names files by their UTF-8 paths: two names that differ only in
                // bytes that are not UTF-8 would read alike, so such a name is refused.
                let rel = rel
                    .components()
                    .map(|c| {
                        c.as_os_str().to_str().map(str::to_owned).ok_or_else(|| {
                            anyhow!(
                                "{}: a file name in the model directory is not UTF-8 ({:?}); the model digest needs UTF-8 names",
                                path.display(),
                                p
                            )
                        })
                    })
                    .collect::<Result<Vec<_>>>()?
                    .join("/");
                files.push((rel, file_sha256(&p)?));
            } else {
                bail!("{} is neither a file nor a directory", p.display());
            }
        }
    }
    Ok(directory_digest(&files))
}

pub fn digest(path: &Path) -> Result<u8> {
    println!("sha256:{}", model_digest(path)?);
    Ok(EXIT_OK)
}

// ---------------------------------------------------------------- sign

#[derive(Args)]
#[command(group(clap::ArgGroup::new("model_id").required(true).args(["model_path", "model_digest"])))]
pub struct SignArgs {
    /// The GateReport JSON (from `deploy-gate evaluate` or the page's export).
    report: PathBuf,
    /// The signer's private key (PKCS#8 PEM).
    #[arg(long, value_name = "KEY.pem")]
    key: PathBuf,
    /// The model's name (the statement's subject).
    #[arg(long, value_name = "NAME")]
    model: String,
    /// The model file or directory (its digest is computed).
    #[arg(long, value_name = "PATH")]
    model_path: Option<PathBuf>,
    /// The model digest, `sha256:<hex>` (as `deploy-gate digest` prints it).
    #[arg(long, value_name = "sha256:HEX")]
    model_digest: Option<String>,
    /// The deployment target (`resourceUri`), e.g. the config path `apply` will be given.
    #[arg(long, value_name = "URI")]
    target: String,
    /// Add this signature to an existing envelope (two-person approval).
    #[arg(long, value_name = "EXISTING.json")]
    envelope: Option<PathBuf>,
    /// Write the envelope to FILE instead of stdout.
    #[arg(long, value_name = "FILE")]
    out: Option<PathBuf>,
}

fn read_text(path: &Path, what: &str) -> Result<String> {
    fs::read_to_string(path).with_context(|| format!("cannot read {what} {}", path.display()))
}

/// The most bytes of a key file: a PEM key is a few hundred.
const MAX_KEY_BYTES: u64 = 64 << 10;

/// A key file's text, read to at most [`MAX_KEY_BYTES`] (a device or pipe given as a key
/// cannot make it read without end).
fn read_key(path: &Path, what: &str) -> Result<String> {
    let context = || format!("cannot read {what} {}", path.display());
    let mut text = String::new();
    File::open(path)
        .with_context(context)?
        .take(MAX_KEY_BYTES + 1)
        .read_to_string(&mut text)
        .with_context(context)?;
    if text.len() as u64 > MAX_KEY_BYTES {
        bail!(
            "{what} {} is larger than {MAX_KEY_BYTES} bytes: not a PEM key",
            path.display()
        );
    }
    Ok(text)
}

pub fn sign_cmd(args: &SignArgs) -> Result<u8> {
    let report: Value = serde_json::from_str(&read_text(&args.report, "report")?)
        .with_context(|| format!("{} is not JSON", args.report.display()))?;
    let key = read_private_pem(&read_key(&args.key, "key")?).map_err(|e| anyhow!("{}: {e}", args.key.display()))?;
    let digest = subject_digest(&args.model_path, &args.model_digest)?;
    let claim = Claim {
        report: &report,
        model_name: &args.model,
        model_sha256: &digest,
        target: &args.target,
        time_verified: now(),
    };
    let envelope = match &args.envelope {
        None => sign(&claim, &key).map_err(|e| anyhow!("{}: {e}", args.report.display()))?,
        Some(path) => {
            let existing: Envelope = serde_json::from_str(&read_text(path, "envelope")?)
                .with_context(|| format!("{} is not a DSSE envelope", path.display()))?;
            cosign(&existing, &claim, &key).map_err(|e| anyhow!("{}: {e}", path.display()))?
        }
    };
    let mut text = serde_json::to_string_pretty(&envelope)?;
    text.push('\n');
    crate::cli::write_output(args.out.as_deref(), text.as_bytes())?;
    eprintln!(
        "deploy-gate: signed {} decision for {} (sha256:{}) → {} with key {}",
        if report["decision"]["approved"] == true {
            "an APPROVED"
        } else {
            "a BLOCKED"
        },
        args.model,
        digest,
        args.target,
        keyid(&key.verifying_key())
    );
    Ok(EXIT_OK)
}

// ---------------------------------------------------------------- verify

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

#[derive(Args)]
#[command(group(clap::ArgGroup::new("model_id").required(true).args(["model_path", "model_digest"])))]
pub struct VerifyArgs {
    /// The envelope (decision.dsse.json).
    envelope: PathBuf,
    #[command(flatten)]
    trust: TrustArgs,
    /// The model about to be deployed (its digest is computed).
    #[arg(long, value_name = "PATH")]
    model_path: Option<PathBuf>,
    /// The digest of the model about to be deployed.
    #[arg(long, value_name = "sha256:HEX")]
    model_digest: Option<String>,
    /// The deployment target the decision must name.
    #[arg(long, value_name = "URI")]
    target: String,
    /// Recompute the report from the input files and require the same decision and input digests.
    #[arg(long, requires_all = ["audit", "old_verdicts", "new_verdicts"])]
    reproduce: bool,
    /// A policy file (JSON, as `test-set`/`evaluate --policy`): refused (check `policy`) unless its
    /// resolved policy has the digest the statement pins; with --reproduce, the policy used.
    #[arg(long, value_name = "FILE")]
    policy: Option<PathBuf>,
    /// Audit log(s), for --reproduce.
    #[arg(long, value_name = "FILE")]
    audit: Vec<PathBuf>,
    /// The old model's verdicts, for --reproduce.
    #[arg(long, value_name = "FILE")]
    old_verdicts: Option<PathBuf>,
    /// The new model's verdicts, for --reproduce.
    #[arg(long, value_name = "FILE")]
    new_verdicts: Option<PathBuf>,
    /// The old model's trajectories, for --reproduce.
    #[arg(long, value_name = "FILE", requires = "new_trajectories")]
    old_trajectories: Option<PathBuf>,
    /// The new model's trajectories, for --reproduce.
    #[arg(long, value_name = "FILE", requires = "old_trajectories")]
    new_trajectories: Option<PathBuf>,
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

/// The policy a report was made with, read by the core's one policy parser.
fn policy_of(report: &Value) -> Result<GatePolicy> {
    GatePolicy::from_report(&report["policy"]).map_err(|e| anyhow!("{e}"))
}

/// `--policy FILE`: the file's resolved policy (defaults under it) must have the digest the
/// statement pins; `Ok(Err(message))` when it does not.
fn pinned_policy(path: &Path, verified: &Verified) -> Result<Result<GatePolicy, String>> {
    let policy = crate::cli::resolve_policy(Some(path), Default::default())?;
    let digest = policy.digest().map_err(|e| anyhow!("{}: {e}", path.display()))?;
    let pinned = verified.statement["predicate"]["policy"]["digest"]["sha256"]
        .as_str()
        .unwrap_or_default();
    if digest != pinned {
        return Ok(Err(format!(
            "the policy file {} resolves to sha256:{digest}, the statement pins sha256:{pinned}",
            path.display()
        )));
    }
    Ok(Ok(policy))
}

/// The reproduce step: the report the input files give now (under the pinned policy file's
/// policy, else the signed report's), against the signed one.
fn reproduced(
    args: &VerifyArgs,
    signed: &Value,
    pinned: Option<GatePolicy>,
) -> Result<Result<(), deploy_gate::attest::Mismatch>> {
    let policy = match pinned {
        Some(policy) => policy,
        None => policy_of(signed)?,
    };
    let inputs = crate::cli::InputPaths {
        audit: &args.audit,
        old_verdicts: args.old_verdicts.as_deref().expect("clap requires it"),
        new_verdicts: args.new_verdicts.as_deref().expect("clap requires it"),
        old_trajectories: args.old_trajectories.as_deref(),
        new_trajectories: args.new_trajectories.as_deref(),
        threads: 0,
    };
    let fresh = serde_json::to_value(evaluate_inputs(&inputs, &policy)?)?;
    Ok(reproduce(signed, &fresh))
}

pub fn verify_cmd(args: &VerifyArgs) -> Result<u8> {
    let digest = subject_digest(&args.model_path, &args.model_digest)?;
    let verified = match check(&args.envelope, &args.trust, &digest, &args.target)? {
        Ok(v) => v,
        Err(failure) => return Ok(invalid(&failure)),
    };
    let pinned = match &args.policy {
        Some(path) => match pinned_policy(path, &verified)? {
            Ok(policy) => Some(policy),
            Err(problem) => return Ok(invalid(&Failure::new(Check::Policy, problem))),
        },
        None => None,
    };
    if args.reproduce {
        if let Err(mismatch) = reproduced(args, verified.report(), pinned)? {
            return Ok(invalid(&Failure::new(Check::Reproduce, mismatch.to_string())));
        }
    }
    println!("{}", serde_json::to_string_pretty(&Summary::of(&verified))?);
    eprintln!(
        "deploy-gate: valid — {} ({}), signed by {} trusted key(s){}",
        VerificationResult::of(verified.approved).as_str(),
        verified.reason,
        verified.signers.len(),
        if args.reproduce {
            "; reproduced from the input files"
        } else {
            ""
        }
    );
    Ok(EXIT_OK)
}
