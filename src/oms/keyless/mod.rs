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
use sigstore_verify::bundle::Error as BundleError;
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
        // Strictly, as the bundle: a key given twice would leave which one counts to the parser.
        let value = crate::attest::strict::from_slice(bytes).map_err(|e| format!("not JSON read strictly: {e}"))?;
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

/// The named check a verifier error fails; `dsse` when the bundle holds a DSSE envelope.
fn check_of(e: &Error, dsse: bool) -> Check {
    match e {
        // Of a DSSE bundle the log entry records the hash of the envelope's PAE: a different
        // one means the entry does not describe this envelope.
        Error::ArtifactMismatch(m) if dsse && m.contains("hashedrekord") => Check::TlogBody,
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
        // Found while the bundle's structure is read, but they are the log's evidence: a proof
        // whose root is not its checkpoint's, an index outside its tree, a proof without a
        // checkpoint.
        Error::Bundle(BundleError::CheckpointRootMismatch | BundleError::LogIndexOutOfRange { .. }) => {
            Check::TlogInclusion
        }
        Error::Bundle(BundleError::MissingCheckpoint) => Check::TlogCheckpoint,
        _ => Check::BundleShape,
    }
}

/// Whom a Sigstore bundle must be signed by.
#[derive(Debug, Clone, Copy)]
pub enum Signer<'a> {
    /// A Fulcio certificate naming one of these identities (the keyless method).
    Identities(&'a [Identity]),
    /// This public key (SPKI PEM), a managed key whose signature is logged.
    KeyPem(&'a str),
}

/// What a Sigstore bundle signs: the bytes, or their sha256.
#[derive(Debug, Clone, Copy)]
pub enum Signed<'a> {
    /// The artifact's bytes (a DSSE statement's subject, for an attestation).
    Bytes(&'a [u8]),
    /// The artifact's sha256.
    Sha256([u8; 32]),
}

/// Verifies a Sigstore bundle (v0.3, either spelling) over `signed`, signed by `signer`, with
/// the log entries, timestamps and certificate authorities of `root`: Sigstore's client
/// verification, each failure a named check. The keyless identity is reported; `None` for a
/// key.
pub fn verify_sigstore(
    bundle: &[u8],
    signed: Signed<'_>,
    signer: Signer<'_>,
    root: &SigstoreRoot,
) -> Result<Option<KeylessSigner>, OmsError> {
    install_provider();
    let text = std::str::from_utf8(bundle).map_err(|_| OmsError::new(Check::BundleShape, "the bundle is not UTF-8"))?;
    let media: Option<String> = serde_json::from_str::<serde_json::Value>(text)
        .ok()
        .and_then(|v| v.get("mediaType").and_then(|m| m.as_str()).map(str::to_owned));
    let media = media.unwrap_or_default();
    if media != super::BUNDLE_MEDIA_TYPE && media != super::bundle::BUNDLE_MEDIA_TYPE_ALT {
        return Err(OmsError::new(
            Check::BundleShape,
            format!("`mediaType` is `{media}`; only a Sigstore bundle v0.3 is read (an older one may lack the inclusion proof)"),
        ));
    }
    let parsed = sigstore_verify::types::Bundle::from_json(text)
        .map_err(|e| OmsError::new(Check::BundleShape, format!("not a Sigstore bundle: {e}")))?;
    let dsse = matches!(
        parsed.content,
        sigstore_verify::types::SignatureContent::DsseEnvelope(_)
    );
    let check = |e: &Error| check_of(e, dsse);
    let verifier = Verifier::new(&root.root)
        .map_err(|e| OmsError::new(Check::CertificateChain, format!("the trusted root: {e}")))?;
    let run = |policy: &dyn Fn(
        sigstore_verify::types::Artifact<'_>,
    ) -> sigstore_verify::Result<sigstore_verify::VerificationResult>| match signed {
        Signed::Bytes(b) => policy(b.into()),
        Signed::Sha256(d) => policy(sigstore_verify::types::Sha256Hash::new(d).into()),
    };
    let signer_of = |r: &sigstore_verify::VerificationResult| {
        let entry = parsed.verification_material.tlog_entries.first();
        KeylessSigner {
            identity: r.identity().map(|i| i.as_str().to_owned()).unwrap_or_default(),
            issuer: r.issuer().unwrap_or_default().to_owned(),
            log_index: entry.and_then(|e| e.log_index.to_string().parse().ok()),
            integrated_time: r.integrated_time().map(|t| t.as_second()),
        }
    };
    let identities = match signer {
        Signer::KeyPem(pem) => {
            let key = sigstore_verify::types::DerPublicKey::from_pem(pem)
                .map_err(|e| OmsError::new(Check::UntrustedKey, format!("the trusted key: {e}")))?;
            let policy = sigstore_verify::PublicKeyVerificationPolicy::new(key);
            return run(&|a| verifier.verify(a, &parsed, &policy))
                .map(|_| None)
                .map_err(|e| OmsError::new(check(&e), e.to_string()));
        }
        Signer::Identities(ids) => ids,
    };
    if identities.is_empty() {
        return Err(OmsError::new(
            Check::Keyless,
            "the bundle is signed by the keyless method and no trainer identity and issuer were given",
        ));
    }
    let mut mismatch = None;
    for want in identities {
        let policy = VerificationPolicy::new(want.identity.as_str(), want.issuer.clone());
        match run(&|a| verifier.verify(a, &parsed, &policy)) {
            Ok(r) => return Ok(Some(signer_of(&r))),
            Err(e) if check(&e) == Check::KeylessIdentity => mismatch = Some(e),
            Err(e) => return Err(OmsError::new(check(&e), e.to_string())),
        }
    }
    let wanted: Vec<String> = identities
        .iter()
        .map(|i| format!("{:?} (issuer {:?})", i.identity, i.issuer))
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

/// Verifies a keyless OMS bundle's bytes whose statement names `subject_digest`, for one of
/// the trusted identities.
pub fn verify(bundle: &[u8], subject_digest: [u8; 32], trust: &KeylessTrust) -> Result<KeylessSigner, OmsError> {
    let signer = verify_sigstore(
        bundle,
        Signed::Sha256(subject_digest),
        Signer::Identities(&trust.identities),
        &trust.root,
    )?;
    Ok(signer.expect("the keyless method reports its signer"))
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
