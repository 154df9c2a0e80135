//! OpenSSF Model Signing (OMS v1.0): the trainer's signature over a model's files.
//!
//! A `model.sig` is a Sigstore bundle (v0.3 JSON) whose DSSE envelope holds an in-toto statement
//! with predicate type `https://model_signing/signature/v1.0`: one subject (the model's name and
//! a sha256 over its manifest) and `predicate.resources`, every file (or byte range) with its
//! sha256. This module is sans-IO: the bundle and the files' digests come in as bytes.
//!
//! Verifying is two steps, because the signed predicate says how to read the model folder
//! (`files` or `shards`, the ignore paths):
//! 1. [`verify_bundle`]: shape, signer, signature, statement and predicate type, subject digest;
//! 2. [`Verified::check_files`] against the [`Manifest`] of the files on hand (built with
//!    [`Manifest::files_from_bytes`], or by `native::oms` from a folder).
//!
//! Each failure is an [`OmsError`] whose [`Check`] names the check.

pub mod bundle;
pub mod check;
pub mod identity;
pub mod keyless;
pub mod keys;
pub mod manifest;
pub mod x509;

pub use bundle::{Bundle, Material, Statement, BUNDLE_MEDIA_TYPE, PAYLOAD_TYPE, PREDICATE_TYPE, STATEMENT_TYPE};
pub use check::{DecisionModel, FileDigests, ModelCheck, Outcome};
pub use identity::{decision_scheme, ModelIdentity};
pub use keys::{EcKey, TrustedKey};
pub use manifest::{digest_of, shard_ranges, Manifest, Method, Resource};
pub use x509::{ChainSigner, Roots};

use serde::Serialize;
use std::collections::HashMap;
use std::fmt;

/// The paths `model-signing` leaves out of every model folder (at the model root only; a
/// directory's whole subtree).
pub const DEFAULT_IGNORE_PATHS: [&str; 4] = [".git", ".gitattributes", ".github", ".gitignore"];

/// The file name `model-signing` writes the signature to by default.
pub const SIGNATURE_FILE: &str = "model.sig";

/// The name of a failed OMS check, in the order they run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Check {
    /// Not a Sigstore bundle v0.3 with the OMS shape (JSON schema, duplicate keys, base64).
    BundleShape,
    /// The keyless Sigstore method (Fulcio certificate, transparency log) with no trusted
    /// trainer identity given.
    Keyless,
    /// The certificate's identity or OIDC issuer is not a trusted pair.
    KeylessIdentity,
    /// The Fulcio certificate does not chain to the trusted root at the verified times (or
    /// is not a code-signing leaf valid then).
    CertificateChain,
    /// The certificate's embedded SCT does not verify with a trusted CT log key.
    Sct,
    /// The log entry's inclusion proof does not verify (or names an untrusted log).
    TlogInclusion,
    /// The log's checkpoint is not signed by the log.
    TlogCheckpoint,
    /// The signed entry timestamp (inclusion promise) does not verify.
    TlogPromise,
    /// The log entry's body does not describe this envelope and certificate.
    TlogBody,
    /// No verified time (signed entry timestamp, RFC 3161 timestamp), or one outside the
    /// certificate's validity or its authority's.
    Timestamp,
    /// Not exactly one signature (`model-signing` writes one and verifies the first only).
    SignatureCount,
    /// A certificate of the chain cannot be used (unreadable, wrong key usage, RSA, …).
    Certificate,
    /// The signer is not a trusted trainer key, or the chain does not reach a trusted root.
    UntrustedKey,
    /// The DSSE signature over PAE does not verify.
    Signature,
    /// Not an in-toto Statement v1.
    StatementType,
    /// Not the OMS v1.0 predicate type.
    PredicateType,
    /// The predicate is not an OMS v1.0 predicate (serialization, resources).
    Predicate,
    /// The subject digest is not the digest of the signed resources.
    SubjectDigest,
    /// A symbolic link (or a special file) in the model folder.
    Symlink,
    /// A signed file is not in the model folder.
    FileMissing,
    /// A file in the model folder is not signed (and not ignored).
    FileExtra,
    /// A file's digest is not the signed one.
    FileDigest,
    /// The gate's signed decision names another model than the trainer's signature.
    ModelIdentity,
}

impl Check {
    /// Every check, in the order they run.
    pub const ALL: [Check; 23] = [
        Check::BundleShape,
        Check::Keyless,
        Check::KeylessIdentity,
        Check::CertificateChain,
        Check::Sct,
        Check::TlogInclusion,
        Check::TlogCheckpoint,
        Check::TlogPromise,
        Check::TlogBody,
        Check::Timestamp,
        Check::SignatureCount,
        Check::Certificate,
        Check::UntrustedKey,
        Check::Signature,
        Check::StatementType,
        Check::PredicateType,
        Check::Predicate,
        Check::SubjectDigest,
        Check::Symlink,
        Check::FileMissing,
        Check::FileExtra,
        Check::FileDigest,
        Check::ModelIdentity,
    ];

    /// The name (`"file_digest"`, …).
    pub fn as_str(self) -> &'static str {
        match self {
            Check::BundleShape => "bundle_shape",
            Check::Keyless => "keyless",
            Check::KeylessIdentity => "keyless_identity",
            Check::CertificateChain => "certificate_chain",
            Check::Sct => "sct",
            Check::TlogInclusion => "tlog_inclusion",
            Check::TlogCheckpoint => "tlog_checkpoint",
            Check::TlogPromise => "tlog_promise",
            Check::TlogBody => "tlog_body",
            Check::Timestamp => "timestamp",
            Check::SignatureCount => "signature_count",
            Check::Certificate => "certificate",
            Check::UntrustedKey => "untrusted_key",
            Check::Signature => "signature",
            Check::StatementType => "statement_type",
            Check::PredicateType => "predicate_type",
            Check::Predicate => "predicate",
            Check::SubjectDigest => "subject_digest",
            Check::Symlink => "symlink",
            Check::FileMissing => "file_missing",
            Check::FileExtra => "file_extra",
            Check::FileDigest => "file_digest",
            Check::ModelIdentity => "model_identity",
        }
    }
}

impl fmt::Display for Check {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A failed OMS check: which one, why, and the file concerned when there is one.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("model signature check `{check}` failed: {detail}")]
pub struct OmsError {
    /// The check.
    pub check: Check,
    /// What was found.
    pub detail: String,
    /// The model file concerned (relative path), for the file checks.
    pub file: Option<String>,
}

impl OmsError {
    /// A failure of `check`.
    pub fn new(check: Check, detail: impl Into<String>) -> OmsError {
        OmsError {
            check,
            detail: detail.into(),
            file: None,
        }
    }

    fn with_file(check: Check, file: &str, detail: impl Into<String>) -> OmsError {
        OmsError {
            check,
            detail: detail.into(),
            file: Some(file.to_owned()),
        }
    }
}

/// The keys and roots a deploy host trusts for trainers' signatures.
#[derive(Debug, Clone, Default)]
pub struct Trust {
    /// Trusted public keys (the key method).
    pub keys: Vec<TrustedKey>,
    /// Trusted root certificates (the certificate method).
    pub roots: Roots,
    /// Trusted signer identities and the Sigstore root (the keyless method).
    pub keyless: Option<keyless::KeylessTrust>,
}

/// How the bundle was signed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "method", rename_all = "snake_case")]
pub enum SignedBy {
    /// A trusted public key.
    Key,
    /// A certificate chained to a trusted root.
    Certificate {
        /// The signing certificate's subject.
        subject: String,
        /// The trusted root's subject.
        root: String,
    },
    /// The keyless Sigstore method: a Fulcio certificate for an OIDC identity, logged.
    Keyless {
        /// The certificate's identity (subject alternative name).
        identity: String,
        /// The certificate's OIDC issuer.
        issuer: String,
        /// The transparency log entry's index.
        log_index: Option<u64>,
        /// The log's integrated time (Unix seconds).
        integrated_time: Option<i64>,
    },
}

/// A bundle whose signature and statement verified (its files not yet compared).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Verified {
    /// The signer's key id: hex sha256 of its SPKI DER.
    pub key_id: String,
    /// The same key's `model-signing` hint (hex sha256 of its SPKI PEM).
    pub key_hint: String,
    /// `P-256` or `P-384`.
    pub curve: &'static str,
    /// Key or certificate.
    pub signed_by: SignedBy,
    /// `subject[0].name`.
    pub model_name: String,
    /// `subject[0].digest.sha256`, equal to the digest of `resources`.
    pub subject_digest: [u8; 32],
    /// `files` or `shards`.
    pub method: Method,
    /// `serialization.allow_symlinks` as signed (symbolic links are refused either way).
    pub allow_symlinks: bool,
    /// `serialization.ignore_paths` as signed.
    pub ignore_paths: Vec<String>,
    /// The signed resources, in the order listed.
    pub resources: Vec<Resource>,
    /// sha256 (hex) of the DSSE payload.
    pub payload_sha256: String,
}

impl Verified {
    /// The subject digest as lowercase hex.
    pub fn subject_digest_hex(&self) -> String {
        hex::encode(self.subject_digest)
    }

    /// The trainer's identity and OIDC issuer, when signed by the keyless method.
    pub fn keyless_signer(&self) -> Option<(&str, &str)> {
        match &self.signed_by {
            SignedBy::Keyless { identity, issuer, .. } => Some((identity, issuer)),
            _ => None,
        }
    }

    /// The trainer's key id, unless signed by the keyless method (whose key lives ten
    /// minutes: the identity and issuer name the signer instead).
    pub fn trainer_key(&self) -> Option<&str> {
        self.keyless_signer().is_none().then_some(self.key_id.as_str())
    }

    /// The signer as the summaries name it: the key id, or the identity and issuer.
    pub fn signer(&self) -> String {
        match &self.signed_by {
            SignedBy::Keyless {
                identity,
                issuer,
                log_index,
                ..
            } => format!(
                "identity {identity} (issuer {issuer}, log index {})",
                log_index.map_or_else(|| "none".to_owned(), |i| i.to_string())
            ),
            _ => format!("key {} ({})", self.key_id, self.curve),
        }
    }

    /// The paths left out of the model folder: the defaults and the signed `ignore_paths`.
    pub fn ignore_paths(&self) -> Vec<String> {
        let mut all: Vec<String> = DEFAULT_IGNORE_PATHS.iter().map(|s| s.to_string()).collect();
        for p in &self.ignore_paths {
            if !all.contains(p) {
                all.push(p.clone());
            }
        }
        all
    }

    /// Compares a folder's listing — each file's path (relative, `/`-separated) and size —
    /// with the signed resources before any file is hashed: the first signed file that is not
    /// listed ([`Check::FileMissing`]), else the first listed file that is not signed
    /// ([`Check::FileExtra`]), else, by `shards`, the first file whose size is not the one the
    /// signed ranges cut ([`Check::FileDigest`]; by `files` a resource carries no size). An
    /// empty file has no shard, so by `shards` it is neither signed nor extra, as when hashed.
    /// [`Verified::check_files`] then compares the digests.
    pub fn check_listing<'a>(&self, listing: impl IntoIterator<Item = (&'a str, u64)>) -> Result<(), OmsError> {
        let shards = matches!(self.method, Method::Shards { .. });
        let mut signed: Vec<&Resource> = self.resources.iter().collect();
        signed.sort_by(|a, b| a.canonical_cmp(b));
        // Each signed path once, with its ranges in order.
        let mut by_path: Vec<(&str, Vec<(u64, u64)>)> = Vec::new();
        for r in &signed {
            match by_path.last_mut() {
                Some((p, ranges)) if *p == r.path.as_str() => ranges.extend(r.range),
                _ => by_path.push((r.path.as_str(), r.range.into_iter().collect())),
            }
        }
        let listed: HashMap<&str, u64> = listing.into_iter().filter(|(_, len)| !shards || *len > 0).collect();
        let missing: Vec<&str> = by_path
            .iter()
            .map(|(p, _)| *p)
            .filter(|p| !listed.contains_key(p))
            .collect();
        if let Some(first) = missing.first() {
            return Err(OmsError::with_file(
                Check::FileMissing,
                first,
                format!("`{first}` is signed but not in the model{}", more(missing.len())),
            ));
        }
        let signed_paths: HashMap<&str, &[(u64, u64)]> = by_path.iter().map(|(p, r)| (*p, r.as_slice())).collect();
        let mut extra: Vec<&str> = listed
            .keys()
            .copied()
            .filter(|p| !signed_paths.contains_key(p))
            .collect();
        extra.sort_by(|a, b| a.split('/').cmp(b.split('/')));
        if let Some(first) = extra.first() {
            return Err(OmsError::with_file(
                Check::FileExtra,
                first,
                format!("`{first}` is in the model but not signed{}", more(extra.len())),
            ));
        }
        if let Method::Shards { shard_size } = self.method {
            for (path, ranges) in &by_path {
                let len = listed[path];
                // Compared range by range, stopping at the first difference: a huge (sparse)
                // file costs no more than its signed ranges.
                let mut want = shard_ranges(len, shard_size);
                let same = ranges.iter().all(|r| want.next() == Some(*r)) && want.next().is_none();
                if !same {
                    let signed_len = ranges.last().map_or(0, |r| r.1);
                    return Err(OmsError::with_file(
                        Check::FileDigest,
                        path,
                        format!(
                            "`{path}` is {len} bytes; the signed shards are of a file of {signed_len} bytes (not hashed)"
                        ),
                    ));
                }
            }
        }
        Ok(())
    }

    /// Compares the files on hand (their manifest, built with [`Verified::method`] and
    /// [`Verified::ignore_paths`]) with the signed resources: the first missing file, else the
    /// first extra one, else the first whose digest differs (canonical order).
    pub fn check_files(&self, local: &Manifest) -> Result<(), OmsError> {
        if local.method != self.method {
            return Err(OmsError::new(
                Check::Predicate,
                format!(
                    "the files were read by {}, the signature is by {}",
                    local.method, self.method
                ),
            ));
        }
        let local_by_name: HashMap<String, &Resource> = local.resources.iter().map(|r| (r.name(), r)).collect();
        let mut signed = self.resources.clone();
        signed.sort_by(Resource::canonical_cmp);
        let signed_names: HashMap<String, &Resource> = signed.iter().map(|r| (r.name(), r)).collect();
        let file_of = |r: &Resource| r.path.clone();
        let missing: Vec<&Resource> = signed
            .iter()
            .filter(|r| !local_by_name.contains_key(&r.name()))
            .collect();
        if let Some(first) = missing.first() {
            return Err(OmsError::with_file(
                Check::FileMissing,
                &file_of(first),
                format!(
                    "`{}` is signed but not in the model{}",
                    first.name(),
                    more(missing.len())
                ),
            ));
        }
        let extra: Vec<&Resource> = local
            .resources
            .iter()
            .filter(|r| !signed_names.contains_key(&r.name()))
            .collect();
        if let Some(first) = extra.first() {
            return Err(OmsError::with_file(
                Check::FileExtra,
                &file_of(first),
                format!("`{}` is in the model but not signed{}", first.name(), more(extra.len())),
            ));
        }
        for s in &signed {
            let l = local_by_name[&s.name()];
            if l.digest != s.digest {
                return Err(OmsError::with_file(
                    Check::FileDigest,
                    &s.path,
                    format!(
                        "`{}` has sha256 {}, the signature says {}",
                        s.name(),
                        l.digest_hex(),
                        s.digest_hex()
                    ),
                ));
            }
        }
        Ok(())
    }
}

fn more(n: usize) -> String {
    if n > 1 {
        format!(" (and {} more)", n - 1)
    } else {
        String::new()
    }
}

/// Verifies a bundle's bytes: shape, method, signer, DSSE signature over PAE, statement type,
/// predicate type, predicate, and that the subject digest is the digest of the resources (in
/// the order listed, as `model-signing` computes it). The keyless method is refused.
pub fn verify_bundle(bytes: &[u8], trust: &Trust) -> Result<Verified, OmsError> {
    let b = Bundle::parse(bytes)?;
    if b.payload_type != PAYLOAD_TYPE {
        return Err(OmsError::new(
            Check::BundleShape,
            format!(
                "`dsseEnvelope.payloadType` is `{}`, not `{PAYLOAD_TYPE}`",
                b.payload_type
            ),
        ));
    }
    if b.material == Material::Keyless && trust.keyless.is_none() {
        return Err(OmsError::new(
            Check::Keyless,
            "the bundle is signed by the keyless Sigstore method (Fulcio certificate and transparency log) \
             and no trusted trainer identity was given (the trainer's identity and OIDC issuer)",
        ));
    }
    if b.signatures.len() != 1 {
        return Err(OmsError::new(
            Check::SignatureCount,
            format!(
                "the envelope has {} signatures; an OMS bundle has exactly one",
                b.signatures.len()
            ),
        ));
    }
    let (key, signed_by) = match &b.material {
        Material::PublicKey { hint } => {
            if trust.keys.is_empty() {
                return Err(OmsError::new(
                    Check::UntrustedKey,
                    "the bundle is signed with a key and no trusted trainer key was given",
                ));
            }
            let candidates: Vec<&TrustedKey> = match hint {
                Some(h) => {
                    let found: Vec<&TrustedKey> = trust.keys.iter().filter(|k| &k.hint == h).collect();
                    if found.is_empty() {
                        return Err(OmsError::new(
                            Check::UntrustedKey,
                            format!("the bundle names the key {h}, which is not a trusted trainer key"),
                        ));
                    }
                    found
                }
                None => trust.keys.iter().collect(),
            };
            let pae = crate::attest::dsse::pae(PAYLOAD_TYPE, &b.payload);
            let Some(k) = candidates.into_iter().find(|k| k.verifies(&pae, &b.signatures[0])) else {
                return Err(OmsError::new(
                    Check::Signature,
                    match hint {
                        Some(h) => format!("the signature does not verify with the trusted key {h}"),
                        None => "the signature does not verify with any trusted trainer key".to_owned(),
                    },
                ));
            };
            (k.clone(), SignedBy::Key)
        }
        Material::CertificateChain(chain) => {
            let s = x509::verify_chain(chain, &trust.roots)?;
            let pae = crate::attest::dsse::pae(PAYLOAD_TYPE, &b.payload);
            if !s.key.verifies(&pae, &b.signatures[0]) {
                return Err(OmsError::new(
                    Check::Signature,
                    format!("the signature does not verify with the certificate of `{}`", s.subject),
                ));
            }
            (
                s.key,
                SignedBy::Certificate {
                    subject: s.subject,
                    root: s.root,
                },
            )
        }
        Material::Keyless => {
            let kt = trust.keyless.as_ref().expect("refused above without one");
            let subject = Statement::subject_digest_unverified(&b.payload);
            let signer = keyless::verify(bytes, subject, kt)?;
            (
                keyless::leaf_key(bytes)?,
                SignedBy::Keyless {
                    identity: signer.identity,
                    issuer: signer.issuer,
                    log_index: signer.log_index,
                    integrated_time: signer.integrated_time,
                },
            )
        }
    };
    let st = Statement::parse(&b.payload)?;
    let listed = digest_of(&st.resources);
    if listed != st.subject_digest {
        return Err(OmsError::new(
            Check::SubjectDigest,
            format!(
                "the subject digest is {}, the signed resources hash to {}",
                hex::encode(st.subject_digest),
                hex::encode(listed)
            ),
        ));
    }
    use sha2::Digest as _;
    Ok(Verified {
        key_id: key.key_id.clone(),
        key_hint: key.hint.clone(),
        curve: key.curve(),
        signed_by,
        model_name: st.model_name,
        subject_digest: st.subject_digest,
        method: st.method,
        allow_symlinks: st.allow_symlinks,
        ignore_paths: st.ignore_paths,
        resources: st.resources,
        payload_sha256: hex::encode(sha2::Sha256::digest(&b.payload)),
    })
}

#[cfg(test)]
mod tests;
