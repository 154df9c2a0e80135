//! What `verify` and `apply` trust, as flags: the trusted keys, threshold, age, ledger and
//! size flags, mapped to the library's `native::apply::Trust`; its checks run there, and a
//! failure is printed here.

use crate::attest::{Failure, Verified, DEFAULT_MAX_STATEMENT_BYTES};
use crate::cli::exit::{notice, now, EXIT_INVALID};
use crate::native::apply::{self, Trust};
use crate::native::mlflow::RegistrySignature;
use crate::native::oms::ModelSignature;
use crate::oms::keyless::{Identity, KeylessTrust, SigstoreRoot};
use crate::oms::{OmsError, Trust as OmsTrust, TrustedKey};
use anyhow::Result;
use clap::Args;
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

impl TrustArgs {
    /// The library's `Trust`.
    pub(crate) fn trust(&self) -> Trust {
        Trust {
            trusted_keys: self.trusted_key.clone(),
            threshold: self.threshold,
            max_age: self.max_age,
            ledger: self.ledger.clone(),
            max_statement_size: self.max_statement_size,
        }
    }
}

/// Reads the envelope once, within `--max-statement-size`; `Ok(Err(..))` is one over it.
pub(crate) fn read_envelope(envelope: &Path, trust: &TrustArgs) -> Result<Result<Vec<u8>, Failure>> {
    Ok(apply::read_envelope_for(envelope, &trust.trust())?)
}

/// Runs every check; `Ok(Err(..))` is a verification failure (exit 2), `Err` an I/O problem.
pub(crate) fn check(
    envelope: &[u8],
    trust: &TrustArgs,
    digest: &str,
    target: &str,
) -> Result<Result<Verified, Failure>> {
    Ok(apply::check(
        envelope,
        &trust.trust(),
        digest,
        target,
        now(),
        &mut notice,
    )?)
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
pub(crate) fn model_digest(path: &Path) -> Result<String> {
    Ok(crate::native::files::model_digest(path)?)
}

/// The trainer's model signature (OpenSSF Model Signing) `verify` and `apply` check.
#[derive(Args, Clone)]
pub struct ModelSignatureArgs {
    /// The trainer's signature over the model's files (an OMS `model.sig` bundle). Default:
    /// `model.sig` inside --model-path, when it is there and a --trainer-key or --trainer-root
    /// is given.
    #[arg(long, value_name = "model.sig")]
    model_signature: Option<PathBuf>,
    /// A trusted trainer public key (ECDSA P-256/P-384 SPKI PEM, as `model_signing sign key`
    /// uses); repeat for several.
    #[arg(long, value_name = "PUB.pem")]
    trainer_key: Vec<PathBuf>,
    /// A trusted root certificate (PEM) for the certificate method; repeat for several.
    #[arg(long, value_name = "CA.pem")]
    trainer_root: Vec<PathBuf>,
    /// A trusted trainer identity for the keyless Sigstore method: the Fulcio certificate's
    /// subject alternative name, matched exactly. Given with --trainer-issuer; repeat both for
    /// several pairs (the n-th identity goes with the n-th issuer; any one pair is enough).
    #[arg(long, value_name = "ID")]
    trainer_identity: Vec<String>,
    /// The OIDC issuer of the --trainer-identity in the same position, matched exactly.
    #[arg(long, value_name = "URL")]
    trainer_issuer: Vec<String>,
    /// The Sigstore trusted root for the keyless method: a `trusted_root.json` or a
    /// ClientTrustConfig. Default: the public-good instance's root bundled with this build.
    #[arg(long, value_name = "FILE")]
    sigstore_root: Option<PathBuf>,
}

/// The most bytes of a Sigstore trusted root read (the public-good one is about 10 KiB).
const MAX_SIGSTORE_ROOT_BYTES: usize = 4 << 20;

impl ModelSignatureArgs {
    /// The signature to check, if any (`model_path`: the model given).
    pub(crate) fn resolve(&self, model_path: Option<&Path>) -> Result<Option<ModelSignature>> {
        self.check_pairs()?;
        let trusted =
            !self.trainer_key.is_empty() || !self.trainer_root.is_empty() || !self.trainer_identity.is_empty();
        if !trusted {
            if let Some(p) = &self.model_signature {
                anyhow::bail!(
                    "--model-signature {} needs --trainer-key, --trainer-root or --trainer-identity with --trainer-issuer: what the trainer's signature is checked against",
                    p.display()
                );
            }
            // A trainer's signature beside the model, not asked for: said, not silently
            // passed over (it is not covered by an OMS-scheme decision's digest either).
            if let Some(sig) = model_path.map(|m| m.join(crate::oms::SIGNATURE_FILE)) {
                if std::fs::symlink_metadata(&sig).is_ok() {
                    eprintln!(
                        "deploy-gate: warning: {} is there but not checked: give --trainer-key, --trainer-root, or --trainer-identity with --trainer-issuer (keyless) to verify the trainer's signature",
                        sig.display()
                    );
                }
            }
            return Ok(None);
        }
        let Some(model) = model_path else {
            anyhow::bail!("the trainer's model signature is checked against the files: give --model-path");
        };
        let path = match &self.model_signature {
            Some(p) => p.clone(),
            None => {
                let default = model.join(crate::oms::SIGNATURE_FILE);
                if !model.is_dir() || std::fs::symlink_metadata(&default).is_err() {
                    anyhow::bail!(
                        "no model signature: {} is not there; give --model-signature",
                        default.display()
                    );
                }
                default
            }
        };
        Ok(Some(ModelSignature {
            path,
            trust: self.trust()?,
        }))
    }

    /// The signature a registry apply checks over the version's files, if any: the bundle given
    /// with --model-signature, else `model.sig` among the version's files (as `--model-path`'s
    /// `model.sig` by default).
    pub(crate) fn resolve_registry(&self) -> Result<Option<RegistrySignature>> {
        self.check_pairs()?;
        let trusted =
            !self.trainer_key.is_empty() || !self.trainer_root.is_empty() || !self.trainer_identity.is_empty();
        if !trusted {
            // --model-signature without anything to check it against is refused.
            self.resolve(None)?;
            return Ok(None);
        }
        Ok(Some(RegistrySignature {
            path: self.model_signature.clone(),
            trust: self.trust()?,
        }))
    }

    /// Identities go with issuers in pairs; a Sigstore root needs an identity.
    fn check_pairs(&self) -> Result<()> {
        if self.trainer_identity.len() != self.trainer_issuer.len() {
            anyhow::bail!(
                "{} --trainer-identity and {} --trainer-issuer given: each identity goes with its issuer, in pairs",
                self.trainer_identity.len(),
                self.trainer_issuer.len()
            );
        }
        if let (Some(root), true) = (&self.sigstore_root, self.trainer_identity.is_empty()) {
            anyhow::bail!(
                "--sigstore-root {} needs --trainer-identity and --trainer-issuer: whom the keyless signature must name",
                root.display()
            );
        }
        Ok(())
    }

    /// The trusted trainer keys, roots and keyless identities.
    fn trust(&self) -> Result<OmsTrust> {
        let mut trust = OmsTrust::default();
        for k in &self.trainer_key {
            let text = crate::cli::files::read_key(k, "trainer key")?;
            trust
                .keys
                .push(TrustedKey::from_pem(&text).map_err(|e| anyhow::anyhow!("{}: {}", k.display(), e.detail))?);
        }
        for r in &self.trainer_root {
            let text = crate::cli::files::read_key(r, "trainer root")?;
            trust
                .roots
                .add_pem(&text)
                .map_err(|e| anyhow::anyhow!("{}: {}", r.display(), e.detail))?;
        }
        if !self.trainer_identity.is_empty() {
            let root = match &self.sigstore_root {
                None => SigstoreRoot::public_good(),
                Some(p) => {
                    let (_, bytes) =
                        crate::native::files::read_regular(p, "Sigstore trusted root", MAX_SIGSTORE_ROOT_BYTES)?;
                    SigstoreRoot::from_json(&bytes).map_err(|e| anyhow::anyhow!("{}: {e}", p.display()))?
                }
            };
            let identities = self
                .trainer_identity
                .iter()
                .zip(&self.trainer_issuer)
                .map(|(identity, issuer)| Identity {
                    identity: identity.clone(),
                    issuer: issuer.clone(),
                })
                .collect();
            trust.keyless = Some(KeylessTrust { identities, root });
        }
        Ok(trust)
    }
}

/// Prints a failed model-signature check (compact JSON on stdout, a line on stderr): exit 2.
pub(crate) fn model_invalid(e: &OmsError) -> u8 {
    println!("{}", crate::native::apply::model_failure_json(e));
    eprintln!("deploy-gate: verification failed ({}): {}", e.check, e.detail);
    EXIT_INVALID
}
