//! The keyless Sigstore method (`model_signing sign` by default): a short-lived Fulcio
//! certificate for the signer's OIDC identity, the signature logged in Rekor. Verified offline
//! by `sigstore-verify` (sigstore-rust, pinned) from a trusted root and an identity policy:
//! the verified times (signed entry timestamp, RFC 3161 timestamps), the certificate chain at
//! those times, the SCT, the inclusion proof and checkpoint, the inclusion promise, the log
//! body against the envelope, the identity and issuer, then the DSSE signature. Each failure
//! is mapped to a named [`Check`].
//!
//! The verifier takes the verified times from the bundle's own evidence; it reads the clock
//! only to refuse a log entry integrated in the future.

mod provider;

use super::{Check, OmsError};
use sigstore_verify::trust_root::TrustedRoot;
use sigstore_verify::{CertificateError, Error, TimestampError, TransparencyLogError, VerificationPolicy, Verifier};

/// The public-good Sigstore instance's trusted root bundled with this build: the copy in
/// `sigstore-trust-root` 0.15.1 (see [`PUBLIC_GOOD_ROOT_DATE`]).
pub const PUBLIC_GOOD_ROOT: &str = sigstore_verify::trust_root::SIGSTORE_PRODUCTION_TRUSTED_ROOT;

/// How recent the bundled public-good root is: the start of its newest key's validity, in
/// `sigstore-trust-root` 0.15.1's copy.
pub const PUBLIC_GOOD_ROOT_DATE: &str = "2025-09-23 (sigstore-trust-root 0.15.1)";

/// A Sigstore trusted root: the Fulcio CAs, Rekor and CT log keys, timestamp authorities.
#[derive(Debug, Clone)]
pub struct SigstoreRoot {
    root: TrustedRoot,
}

impl SigstoreRoot {
    /// Reads a `trusted_root.json`, or a ClientTrustConfig (its `trustedRoot`), checking that
    /// every key and certificate in it can be used.
    pub fn from_json(bytes: &[u8]) -> Result<SigstoreRoot, String> {
        let value: serde_json::Value = serde_json::from_slice(bytes).map_err(|e| format!("not JSON: {e}"))?;
        let root = match value.get("trustedRoot") {
            Some(inner)
                if value
                    .get("mediaType")
                    .and_then(|m| m.as_str())
                    .is_some_and(|m| m.contains("clienttrustconfig")) =>
            {
                inner.clone()
            }
            _ => value,
        };
        let root =
            TrustedRoot::from_json(&root.to_string()).map_err(|e| format!("not a Sigstore trusted root: {e}"))?;
        install_provider();
        Verifier::new(&root).map_err(|e| format!("the trusted root cannot be used: {e}"))?;
        Ok(SigstoreRoot { root })
    }

    /// The public-good instance's root bundled with this build.
    pub fn public_good() -> SigstoreRoot {
        SigstoreRoot::from_json(PUBLIC_GOOD_ROOT.as_bytes()).expect("the bundled root is usable")
    }
}

/// A signer the deploy host accepts: the certificate's subject alternative name and OIDC
/// issuer, each matched exactly.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Identity {
    /// The subject alternative name (an email address, a URI, …).
    pub identity: String,
    /// The OIDC issuer.
    pub issuer: String,
}

/// What the keyless method trusts: the identities (any one is enough) and the root.
#[derive(Debug, Clone)]
pub struct KeylessTrust {
    /// The accepted signers.
    pub identities: Vec<Identity>,
    /// The trusted root.
    pub root: SigstoreRoot,
}

/// The verified signer of a keyless bundle.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KeylessSigner {
    /// The certificate's identity.
    pub identity: String,
    /// The certificate's OIDC issuer.
    pub issuer: String,
    /// The log entry's index.
    pub log_index: Option<u64>,
    /// The log's integrated time (Unix seconds), when the log gave one.
    pub integrated_time: Option<i64>,
}

fn install_provider() {
    // Installed once per process; a second call finds it there.
    let _ = sigstore_verify::crypto::provider::install_default_provider(&provider::RUST_CRYPTO);
}

/// The named check a verifier error fails.
fn check_of(e: &Error) -> Check {
    match e {
        Error::IdentityMismatch { .. } | Error::IssuerMismatch { .. } => Check::KeylessIdentity,
        Error::Certificate(CertificateError::Sct(_)) => Check::Sct,
        Error::Certificate(_) | Error::InvalidTrustRoot(_) | Error::TrustRoot(_) | Error::TrustedCertificate(_) => {
            Check::CertificateChain
        }
        Error::TransparencyLog(t) => match t {
            TransparencyLogError::Checkpoint(_) => Check::TlogCheckpoint,
            TransparencyLogError::InclusionPromise(_) => Check::TlogPromise,
            TransparencyLogError::EntryMismatch(_) | TransparencyLogError::MalformedEntry(_) => Check::TlogBody,
            TransparencyLogError::IntegratedTime(_) => Check::Timestamp,
            _ => Check::TlogInclusion,
        },
        Error::Timestamp(TimestampError::Invalid(_) | TimestampError::OutsideAuthorityValidity { .. })
        | Error::Timestamp(_) => Check::Timestamp,
        Error::SignatureInvalid(_) | Error::Crypto(_) => Check::Signature,
        _ => Check::BundleShape,
    }
}

/// Verifies a keyless bundle's bytes whose statement names `subject_digest`, for one of the
/// trusted identities.
pub fn verify(bundle: &[u8], subject_digest: [u8; 32], trust: &KeylessTrust) -> Result<KeylessSigner, OmsError> {
    install_provider();
    let text = std::str::from_utf8(bundle).map_err(|_| OmsError::new(Check::BundleShape, "the bundle is not UTF-8"))?;
    let parsed = sigstore_verify::types::Bundle::from_json(text)
        .map_err(|e| OmsError::new(Check::BundleShape, format!("not a Sigstore bundle: {e}")))?;
    if trust.identities.is_empty() {
        return Err(OmsError::new(
            Check::KeylessIdentity,
            "the bundle is signed by the keyless method and no trainer identity and issuer were given",
        ));
    }
    let verifier = Verifier::new(&trust.root.root)
        .map_err(|e| OmsError::new(Check::CertificateChain, format!("the trusted root: {e}")))?;
    let digest = sigstore_verify::types::Sha256Hash::new(subject_digest);
    let mut mismatch = None;
    for want in &trust.identities {
        let policy = VerificationPolicy::new(want.identity.as_str(), want.issuer.clone());
        match verifier.verify(digest, &parsed, &policy) {
            Ok(r) => {
                let entry = parsed.verification_material.tlog_entries.first();
                return Ok(KeylessSigner {
                    identity: r
                        .identity()
                        .map_or_else(|| want.identity.clone(), |i| i.as_str().to_owned()),
                    issuer: r.issuer().unwrap_or(&want.issuer).to_owned(),
                    log_index: entry.and_then(|e| e.log_index.to_string().parse().ok()),
                    integrated_time: r.integrated_time().map(|t| t.as_second()),
                });
            }
            Err(e) if check_of(&e) == Check::KeylessIdentity => mismatch = Some(e),
            Err(e) => return Err(OmsError::new(check_of(&e), e.to_string())),
        }
    }
    let wanted: Vec<String> = trust
        .identities
        .iter()
        .map(|i| format!("{} ({})", i.identity, i.issuer))
        .collect();
    Err(OmsError::new(
        Check::KeylessIdentity,
        format!(
            "the signer is not a trusted trainer identity ({}); trusted: {}",
            mismatch.map_or_else(String::new, |e| e.to_string()),
            wanted.join(", ")
        ),
    ))
}

/// The leaf certificate's key (`verificationMaterial.certificate`), for the key id the other
/// methods report.
pub fn leaf_key(bundle: &[u8]) -> Result<super::TrustedKey, OmsError> {
    use x509_cert::der::{Decode as _, Encode as _};
    let bad = |what: String| OmsError::new(Check::CertificateChain, what);
    let value: serde_json::Value = serde_json::from_slice(bundle).map_err(|e| bad(e.to_string()))?;
    let b64 = value
        .pointer("/verificationMaterial/certificate/rawBytes")
        .and_then(|v| v.as_str())
        .ok_or_else(|| bad("no `verificationMaterial.certificate.rawBytes`".into()))?;
    let der = crate::attest::dsse::decode(b64).ok_or_else(|| bad("the certificate is not base64".into()))?;
    let cert = x509_cert::Certificate::from_der(&der).map_err(|e| bad(format!("the certificate: {e}")))?;
    let spki = cert
        .tbs_certificate
        .subject_public_key_info
        .to_der()
        .map_err(|e| bad(format!("the certificate's key: {e}")))?;
    super::TrustedKey::from_spki_der(&spki).map_err(|e| bad(format!("the certificate's key: {}", e.detail)))
}

#[cfg(test)]
mod tests;
