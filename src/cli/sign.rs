//! The signing commands: keygen, digest, sign, verify (apply and rollback are in `apply`).

use crate::attest::dsse::Envelope;
use crate::attest::keys::{keyid, private_pem, public_pem, read_private_pem, signing_key_from_seed};
use crate::attest::{
    cosign_in, parse_digest, reproduce, sign_in, Check, Claim, Failure, Mismatch, ReportToSign, Summary,
    VerificationResult, Verified, OMS_FILES_SCHEME,
};
use crate::cli::evaluate::{evaluate_inputs, InputPaths};
use crate::cli::exit::{notice, now, write_output, EXIT_OK};
use crate::cli::files::{read_key, read_policy_file, read_review, read_review_bytes, read_text};
use crate::cli::registry::RegistryArgs;
use crate::cli::trust::{check, invalid, model_digest, model_invalid, read_envelope, ModelSignatureArgs, TrustArgs};
use crate::decision::Outcome;
use crate::decision::Rules;
use crate::native::oms::{identify, oms_digest, ModelError};
use crate::oms::Method;
use crate::policy::{resolve_pinned, GatePolicy};
use crate::review::ReviewPin;
use anyhow::{anyhow, Context, Result};
use clap::Args;
use serde_json::Value;
use std::fs::OpenOptions;
use std::io::Write;
use std::path::{Path, PathBuf};

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

/// `sign`'s subject digest and its scheme: the OMS digest of `--model-path` (annotated
/// `digest_scheme`), or `--model-digest` as given (annotated only with `--digest-scheme`).
fn sign_digest(args: &SignArgs) -> Result<(String, Option<&'static str>)> {
    match (&args.model_path, &args.model_digest) {
        (Some(p), _) => Ok((oms_digest(p, Method::Files)?, Some(OMS_FILES_SCHEME))),
        (None, Some(d)) => Ok((parse_digest(d)?, args.digest_scheme.map(|_| OMS_FILES_SCHEME))),
        (None, None) => unreachable!("clap requires one"),
    }
}

pub fn digest(path: &Path, oms: bool, shard_size: Option<u64>) -> Result<u8> {
    if oms {
        let method = match shard_size {
            Some(0) => anyhow::bail!("--shard-size must be positive"),
            Some(shard_size) => Method::Shards { shard_size },
            None => Method::Files,
        };
        println!("sha256:{}", oms_digest(path, method)?);
    } else {
        println!("sha256:{}", model_digest(path)?);
    }
    Ok(EXIT_OK)
}

/// `--digest-scheme`: the scheme of a digest given with `--model-digest`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum DigestScheme {
    /// The OpenSSF Model Signing v1.0 subject digest (`deploy-gate digest --oms`).
    #[value(name = "oms-v1.0-files")]
    OmsFiles,
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
    /// The model file or directory (its OpenSSF Model Signing digest is computed, as
    /// `deploy-gate digest --oms` prints it, and the scheme recorded in the subject).
    #[arg(long, value_name = "PATH")]
    model_path: Option<PathBuf>,
    /// The model digest, `sha256:<hex>` (as `deploy-gate digest` prints it).
    #[arg(long, value_name = "sha256:HEX")]
    model_digest: Option<String>,
    /// The scheme of --model-digest when it is `deploy-gate digest --oms`'s (recorded in the
    /// subject); without it the digest is read as `deploy-gate digest`'s.
    #[arg(long, value_name = "SCHEME", requires = "model_digest")]
    digest_scheme: Option<DigestScheme>,
    /// The deployment target (`resourceUri`), e.g. the config path `apply` will be given.
    #[arg(long, value_name = "URI")]
    target: String,
    /// Add this signature to an existing envelope (two-person approval).
    #[arg(long, value_name = "EXISTING.json")]
    envelope: Option<PathBuf>,
    /// A review file (`deploy-gate/review/v1`: the reviewer's marks, as the page exports them)
    /// signed with the decision: its sha256 and size, its cases per mark and how many of the
    /// regressed cases it marks are pinned in the statement. A co-signer gives the same file.
    #[arg(long, value_name = "FILE")]
    review: Option<PathBuf>,
    /// Write the envelope to FILE instead of stdout.
    #[arg(long, value_name = "FILE")]
    out: Option<PathBuf>,
}

pub fn sign_cmd(args: &SignArgs) -> Result<u8> {
    let report = ReportToSign::parse(&read_text(&args.report, "report")?)
        .map_err(|e| anyhow!("{}: {e}", args.report.display()))?;
    let key = read_private_pem(&read_key(&args.key, "key")?).map_err(|e| anyhow!("{}: {e}", args.key.display()))?;
    let (digest, scheme) = sign_digest(args)?;
    let marks = match &args.review {
        Some(path) => Some(read_review(path)?.1),
        None => None,
    };
    crate::review::check_required(report.text(), &report.value()["policy"], marks.as_ref())
        .map_err(|e| anyhow!("{}: {e}", args.report.display()))?;
    let review = marks
        .as_ref()
        .map(|marks| ReviewPin::of(marks, report.text()))
        .transpose()
        .map_err(|e| anyhow!("{}: {e}", args.report.display()))?;
    let claim = Claim {
        report: &report,
        model_name: &args.model,
        model_sha256: &digest,
        target: &args.target,
        time_verified: now(),
        review: review.as_ref(),
    };
    let envelope = match &args.envelope {
        None => sign_in(&claim, &key, scheme).map_err(|e| anyhow!("{}: {e}", args.report.display()))?,
        Some(path) => {
            let existing: Envelope = serde_json::from_str(&read_text(path, "envelope")?)
                .with_context(|| format!("{} is not a DSSE envelope", path.display()))?;
            cosign_in(&existing, &claim, &key, scheme).map_err(|e| anyhow!("{}: {e}", path.display()))?
        }
    };
    let mut text = serde_json::to_string_pretty(&envelope)?;
    text.push('\n');
    write_output(args.out.as_deref(), text.as_bytes())?;
    eprintln!(
        "deploy-gate: signed {} decision for {} (sha256:{}) → {} with key {}",
        match Outcome::of_decision(&report.value()["decision"]) {
            Some(Outcome::Approved) => "an APPROVED",
            Some(Outcome::Inconclusive) => "an INCONCLUSIVE",
            _ => "a BLOCKED",
        },
        args.model,
        digest,
        args.target,
        keyid(&key.verifying_key())
    );
    if let (Some(path), Some(pin)) = (&args.review, &review) {
        eprintln!("deploy-gate: with the review {}: {}", path.display(), review_line(pin));
    }
    Ok(EXIT_OK)
}

/// `verify --review FILE`: `Ok(Err(why))` unless the decision pins a review, FILE is that file
/// (its sha256 and size), and what the pin says of it (its cases per mark, the regressed cases it
/// marks) is what the file gives for the signed report.
fn check_review_file(path: &Path, pin: Option<&ReviewPin>, report: &str) -> Result<Result<(), String>> {
    let bytes = read_review_bytes(path)?;
    let Some(pin) = pin else {
        return Ok(Err("the decision was signed without a review".to_owned()));
    };
    if !pin.pins(&bytes) {
        return Ok(Err(format!(
            "the review file {} (sha256:{}, {} bytes) is not the one the statement pins (sha256:{}, {} bytes)",
            path.display(),
            crate::attest::file_digest(&bytes),
            bytes.len(),
            pin.sha256,
            pin.bytes
        )));
    }
    let given = crate::review::Review::parse(&path.display().to_string(), &bytes)
        .map_err(|e| e.to_string())
        .and_then(|review| ReviewPin::of(&review, report));
    Ok(match given {
        Err(e) => Err(format!("the pinned review file cannot be read: {e}")),
        Ok(given) if given != *pin => Err(format!(
            "the statement says the review file gives {}, and it gives {}",
            review_line(pin),
            review_line(&given)
        )),
        Ok(_) => Ok(()),
    })
}

/// A review pin as one line: its cases per mark, the regressed cases it marks, its digest.
fn review_line(pin: &ReviewPin) -> String {
    format!(
        "{} accepted, {} label_wrong, {} needs_fix; {} of {} regressed case(s) marked (sha256:{}, {} bytes)",
        pin.marks.accepted,
        pin.marks.label_wrong,
        pin.marks.needs_fix,
        pin.regressed.marked,
        pin.regressed.cases,
        pin.sha256,
        pin.bytes
    )
}

// ---------------------------------------------------------------- verify

/// `verify --mlflow URL --model-uri models:/NAME@ALIAS`: exit 0 only if the alias's version
/// carries a decision that verifies against its files and the URI, and approves; else 2.
fn verify_mlflow(args: &VerifyArgs) -> Result<u8> {
    use crate::native::mlflow::{self, MlflowVerify};
    let Some(uri) = &args.model_uri else {
        anyhow::bail!("--mlflow needs --model-uri models:/NAME@ALIAS");
    };
    if args.reproduce
        || args.policy.is_some()
        || args.review.is_some()
        || !matches!(args.model_signature.resolve(None), Ok(None))
    {
        anyhow::bail!("--reproduce, --policy, --review and the trainer's signature flags cannot be used with --mlflow");
    }
    let opts = MlflowVerify {
        registry: args.registry.settings()?,
        model_uri: uri.clone(),
        trust: args.trust.trust(),
    };
    let checked = match mlflow::verify(&opts, &mut notice) {
        Ok(checked) => checked,
        // The registry could not be asked, or answered with an error (unreachable, 401, an
        // unknown model): with --json, said on stdout too, for a consumer that reads only it.
        Err(e) if args.json => {
            let failed = mlflow::AliasCheck {
                ok: false,
                reason: e.message(),
                version: None,
                decision_sha256: None,
                subject: None,
            };
            println!("{}", serde_json::to_string(&failed)?);
            eprintln!("deploy-gate: error: {}", failed.reason);
            return Ok(crate::cli::exit::EXIT_INPUT);
        }
        Err(e) => return Err(anyhow!(e.message())),
    };
    if args.json {
        println!("{}", serde_json::to_string(&checked)?);
    }
    if checked.ok {
        eprintln!("deploy-gate: valid — {}", checked.reason);
        Ok(EXIT_OK)
    } else {
        eprintln!("deploy-gate: verification failed: {}", checked.reason);
        Ok(crate::cli::exit::EXIT_INVALID)
    }
}

#[derive(Args)]
#[command(group(clap::ArgGroup::new("model_id").required(true).args(["model_path", "model_digest", "model_uri"])))]
pub struct VerifyArgs {
    /// The envelope (decision.dsse.json). With --mlflow, the decision recorded on the alias's
    /// version is read instead.
    #[arg(required_unless_present = "mlflow", conflicts_with = "mlflow")]
    envelope: Option<PathBuf>,
    #[command(flatten)]
    registry: RegistryArgs,
    /// With --mlflow: the alias to check, `models:/NAME@ALIAS`. It resolves to a version, whose
    /// recorded decision must verify against its files and this URI, and approve.
    #[arg(long, value_name = "models:/NAME@ALIAS", requires = "mlflow")]
    model_uri: Option<String>,
    /// With --mlflow: print `{ok, reason, version, decision_sha256, subject}` on stdout.
    #[arg(long, requires = "mlflow")]
    json: bool,
    #[command(flatten)]
    trust: TrustArgs,
    #[command(flatten)]
    model_signature: ModelSignatureArgs,
    /// The model about to be deployed (its digest is computed).
    #[arg(long, value_name = "PATH")]
    model_path: Option<PathBuf>,
    /// The digest of the model about to be deployed.
    #[arg(long, value_name = "sha256:HEX")]
    model_digest: Option<String>,
    /// The deployment target the decision must name.
    #[arg(
        long,
        value_name = "URI",
        required_unless_present = "mlflow",
        conflicts_with = "mlflow"
    )]
    target: Option<String>,
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
    /// The review file the decision was signed with: refused (check `review`) unless it is the
    /// file the statement pins. With --reproduce it is required when the statement pins one.
    #[arg(long, value_name = "FILE")]
    review: Option<PathBuf>,
}

/// The policy a report was made with, read by the core's one policy parser.
fn policy_of(report: &Value) -> Result<GatePolicy> {
    GatePolicy::from_report(&report["policy"]).map_err(|e| anyhow!("{e}"))
}

/// `--policy FILE`: the file's resolved policy (defaults under it) must have the digest the
/// statement pins (`Verified::check_policy`); a file that names neither `cluster` nor `repeats`
/// also resolves as it did before they existed, for a decision signed then
/// (`policy::resolve_pinned`). `Ok(Err(message))` when it does not.
fn pinned_policy(path: &Path, verified: &Verified) -> Result<Result<GatePolicy, String>> {
    let input = read_policy_file(path)?;
    let pinned = verified.policy_digest().unwrap_or_default();
    let resolved = resolve_pinned(input, pinned).map_err(|e| anyhow!("{} (policy file): {e}", path.display()))?;
    Ok(match resolved {
        Ok(policy) => Ok(policy),
        Err(policy) => {
            let digest = policy.digest().map_err(|e| anyhow!("{}: {e}", path.display()))?;
            let mismatch = verified
                .check_policy(&digest)
                .expect_err("resolve_pinned found no match");
            Err(format!("the policy file {} {mismatch}", path.display()))
        }
    })
}

/// The reproduce step: the report the input files give now (under the pinned policy file's
/// policy, else the signed report's), against the signed one.
fn reproduced(args: &VerifyArgs, signed: &Value, pinned: Option<GatePolicy>) -> Result<Result<(), Mismatch>> {
    let policy = match pinned {
        Some(policy) => policy,
        None => policy_of(signed)?,
    };
    let inputs = InputPaths {
        audit: &args.audit,
        old_verdicts: args.old_verdicts.as_deref().expect("clap requires it"),
        new_verdicts: args.new_verdicts.as_deref().expect("clap requires it"),
        old_trajectories: args.old_trajectories.as_deref(),
        new_trajectories: args.new_trajectories.as_deref(),
        threads: 0,
    };
    // Under the current rules, or else under the earlier ones (a decision signed by the build
    // before the evidence rules reproduces under the rules that signed it).
    let reports = evaluate_inputs(&inputs, &policy, &[Rules::Current, Rules::Before])?;
    let mut first = None;
    for report in reports {
        // Read back from the report's text, as the signed one was: a pipeline id past 64 bits
        // is written as its digits, which `serde_json::to_value` cannot hold.
        let fresh: Value = serde_json::from_str(&report.to_json())?;
        match reproduce(signed, &fresh) {
            Ok(()) => return Ok(Ok(())),
            Err(mismatch) => {
                first.get_or_insert(mismatch);
            }
        }
    }
    Ok(Err(first.expect("two reports were made")))
}

pub fn verify_cmd(args: &VerifyArgs) -> Result<u8> {
    if args.registry.mlflow.is_some() {
        return verify_mlflow(args);
    }
    let (Some(envelope), Some(target)) = (&args.envelope, &args.target) else {
        unreachable!("clap requires the envelope and --target without --mlflow")
    };
    let signature = args.model_signature.resolve(args.model_path.as_deref())?;
    // Read once: the same bytes name the digest scheme and are verified (a pipe works).
    let envelope = match read_envelope(envelope, &args.trust)? {
        Ok(bytes) => bytes,
        Err(failure) => return Ok(invalid(&failure)),
    };
    let id = match (&args.model_path, &args.model_digest) {
        (Some(p), _) => match identify(p, &envelope, signature.as_ref()) {
            Ok(id) => Some(id),
            Err(ModelError::Check(e)) => return Ok(model_invalid(&e)),
            Err(e) => return Err(e.into()),
        },
        (None, Some(_)) => None,
        (None, None) => unreachable!("clap requires one"),
    };
    let digest = match (&id, &args.model_digest) {
        (Some(id), _) => id.digest.clone(),
        (None, Some(d)) => parse_digest(d)?,
        (None, None) => unreachable!("clap requires one"),
    };
    let verified = match check(&envelope, &args.trust, &digest, target)? {
        Ok(v) => v,
        Err(failure) => return Ok(invalid(&failure)),
    };
    if let Some(id) = &id {
        if let Err(failure) = id.check_scheme(&verified) {
            return Ok(invalid(&failure));
        }
        if let Err(e) = id.check_same_model(&verified.model_sha256) {
            return Ok(model_invalid(&e));
        }
    }
    let trainer = id
        .as_ref()
        .and_then(|id| id.trainer.as_ref().map(|t| (t, id.matched_by())));
    let pinned = match &args.policy {
        Some(path) => match pinned_policy(path, &verified)? {
            Ok(policy) => Some(policy),
            Err(problem) => return Ok(invalid(&Failure::new(Check::Policy, problem))),
        },
        None => None,
    };
    let review = verified.review();
    if let Some(path) = &args.review {
        if let Err(problem) = check_review_file(path, review.as_ref(), &verified.report_text)? {
            return Ok(invalid(&Failure::new(Check::Review, problem)));
        }
    }
    if args.reproduce {
        if let (Some(pin), None) = (&review, &args.review) {
            let problem = format!(
                "the decision pins a review (sha256:{}): give its file with --review to reproduce it",
                pin.sha256
            );
            return Ok(invalid(&Failure::new(Check::Review, problem)));
        }
        if let Err(mismatch) = reproduced(args, verified.report(), pinned)? {
            return Ok(invalid(&Failure::new(Check::Reproduce, mismatch.to_string())));
        }
    }
    let mut summary = serde_json::to_value(Summary::of(&verified))?;
    if let Some((t, matched_by)) = trainer {
        let mut tj = crate::native::apply::trainer_json(t);
        tj["same_model_by"] = serde_json::json!(matched_by);
        summary["trainer"] = tj;
    }
    println!("{}", serde_json::to_string_pretty(&summary)?);
    if let Some((t, matched_by)) = trainer {
        eprintln!(
            "deploy-gate: the trainer's model signature verified — {}, `{}` sha256:{}, {} files checked; the same model as the decision (by {matched_by})",
            t.signer(),
            t.model_name,
            t.subject_digest_hex(),
            t.resources.len()
        );
    }
    if let Some(pin) = &review {
        eprintln!(
            "deploy-gate: signed with a review{}: {}",
            if args.review.is_some() { " (the file given)" } else { "" },
            review_line(pin)
        );
    }
    eprintln!(
        "deploy-gate: valid — {}{} ({}), signed by {} trusted key(s){}",
        VerificationResult::of(verified.approved).as_str(),
        if verified.outcome == Outcome::Inconclusive {
            ", inconclusive"
        } else {
            ""
        },
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
