//! Reading an OMS bundle (a Sigstore bundle v0.3 JSON holding a DSSE envelope) and its in-toto
//! statement, strictly: a duplicate key anywhere, an unknown field where the OMS JSON schemas
//! allow none, a wrong type or a missing field is a [`Check::BundleShape`] (or
//! [`Check::Predicate`] inside the predicate) failure naming the field.

use super::manifest::{Method, Resource};
use super::{Check, OmsError};
use crate::attest::{dsse, strict};
use serde::Deserialize;
use serde_json::Value;

/// The Sigstore bundle media type `model-signing` writes and checks.
pub const BUNDLE_MEDIA_TYPE: &str = "application/vnd.dev.sigstore.bundle.v0.3+json";
/// The other spelling of the v0.3 media type, which Sigstore clients also write.
pub const BUNDLE_MEDIA_TYPE_ALT: &str = "application/vnd.dev.sigstore.bundle+json;version=0.3";
/// The DSSE payload type.
pub const PAYLOAD_TYPE: &str = "application/vnd.in-toto+json";
/// The in-toto statement type.
pub const STATEMENT_TYPE: &str = "https://in-toto.io/Statement/v1";
/// The OMS v1.0 predicate type.
pub const PREDICATE_TYPE: &str = "https://model_signing/signature/v1.0";
/// The largest bundle read: 32 MiB. `model-signing` 1.1.1 writes about 250 bytes per resource
/// (a 10,000-file folder named like `model-00001-of-10000.safetensors`: 2,467,795 bytes), so
/// this holds a manifest of about 130,000 such files (docs/model-signing.md). A bound against a
/// hostile file read before any signature is checked, not a format limit.
pub const MAX_BUNDLE_BYTES: usize = 32 << 20;
/// The largest statement (the decoded DSSE payload) read: 24 MiB, what a bundle of
/// [`MAX_BUNDLE_BYTES`] can hold in base64.
pub const MAX_STATEMENT_BYTES: usize = 24 << 20;
/// The most JSON values in a bundle outside its payload (`model-signing` writes about 20, a
/// certificate chain two more per certificate), counted before any is built.
pub const MAX_BUNDLE_VALUES: usize = 10_000;
/// The most JSON values in a statement, counted before any is built: a resource is 4 values
/// (7 by [`values_at_most`]'s count), so this holds the largest manifest that fits in
/// [`MAX_STATEMENT_BYTES`] (a resource is at least about 100 bytes).
pub const MAX_STATEMENT_VALUES: usize = 2_000_000;

/// Who the bundle says signed it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Material {
    /// The key method: a public key named by a hint (`model-signing`: hex sha256 of the key's
    /// SPKI PEM), or no hint (bundles before `model-signing` 1.1).
    PublicKey {
        /// `publicKey.hint`.
        hint: Option<String>,
    },
    /// The certificate method: DER certificates, the signing one first.
    CertificateChain(Vec<Vec<u8>>),
    /// The keyless Sigstore method (a Fulcio certificate and a transparency log entry).
    Keyless,
}

/// A parsed bundle, not yet verified.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Bundle {
    /// The verification material.
    pub material: Material,
    /// The DSSE payload (the statement's bytes).
    pub payload: Vec<u8>,
    /// The DSSE payload type.
    pub payload_type: String,
    /// The raw signatures (ASN.1 DER ECDSA as `model-signing` writes them).
    pub signatures: Vec<Vec<u8>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct RawBundle {
    media_type: String,
    verification_material: RawMaterial,
    dsse_envelope: RawEnvelope,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct RawMaterial {
    public_key: Option<RawPublicKey>,
    x509_certificate_chain: Option<RawChain>,
    certificate: Option<Value>,
    #[serde(default)]
    tlog_entries: Vec<Value>,
    timestamp_verification_data: Option<Value>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct RawPublicKey {
    hint: Option<String>,
    raw_bytes: Option<String>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct RawChain {
    certificates: Vec<RawCert>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct RawCert {
    raw_bytes: String,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct RawEnvelope {
    payload: String,
    payload_type: String,
    signatures: Vec<RawSignature>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawSignature {
    sig: String,
    #[allow(dead_code)]
    keyid: Option<String>,
}

fn shape(detail: impl Into<String>) -> OmsError {
    OmsError::new(Check::BundleShape, detail)
}

/// Whether `bytes` hold at most `limit` JSON values, counted without parsing and without
/// allocating: one, plus one per `{`, `[`, `,` and `:` outside strings (an upper bound of the
/// values a parser would build from them). Stops at the first count past `limit`.
pub fn values_at_most(bytes: &[u8], limit: usize) -> bool {
    let mut count = 1usize;
    for b in crate::json::layout::outside_strings(bytes) {
        if matches!(b, b'{' | b'[' | b',' | b':') {
            count += 1;
            if count > limit {
                return false;
            }
        }
    }
    true
}

/// `bytes` read strictly into a tree, once their size and their number of values are known to
/// be within `max_bytes` and `max_values` (a hostile file is refused before any tree is built).
fn strict_value(bytes: &[u8], what: &str, max_bytes: usize, max_values: usize) -> Result<Value, OmsError> {
    if bytes.len() > max_bytes {
        return Err(shape(format!(
            "{what} is {} bytes, more than the {max_bytes} read",
            bytes.len()
        )));
    }
    if !values_at_most(bytes, max_values) {
        return Err(shape(format!(
            "{what} holds more than the {max_values} JSON values read"
        )));
    }
    strict::from_slice(bytes).map_err(|e| shape(format!("{what} is not JSON read strictly: {e}")))
}

impl Bundle {
    /// Reads a bundle's bytes (shape only; nothing is verified).
    pub fn parse(bytes: &[u8]) -> Result<Bundle, OmsError> {
        let value = strict_value(bytes, "the bundle", MAX_BUNDLE_BYTES, MAX_BUNDLE_VALUES)?;
        let raw: RawBundle = serde_json::from_value(value).map_err(|e| shape(format!("the bundle: {e}")))?;
        if raw.media_type != BUNDLE_MEDIA_TYPE && raw.media_type != BUNDLE_MEDIA_TYPE_ALT {
            return Err(shape(format!(
                "`mediaType` is `{}`, not `{BUNDLE_MEDIA_TYPE}`",
                raw.media_type
            )));
        }
        let m = raw.verification_material;
        // The key and certificate methods write no transparency-log entry and no timestamp
        // (`model-signing` 1.1.1: `tlogEntries: []`, no `timestampVerificationData`); neither is
        // verified here, so any is refused rather than carried unread.
        if m.certificate.is_none() {
            if !m.tlog_entries.is_empty() {
                return Err(shape(format!(
                    "`verificationMaterial.tlogEntries` has {} entries; the key and certificate methods write none and deploy-gate verifies no transparency log",
                    m.tlog_entries.len()
                )));
            }
            let empty = |v: &Value| match v {
                Value::Object(o) => o.values().all(|x| x.as_array().is_some_and(Vec::is_empty)),
                _ => false,
            };
            if m.timestamp_verification_data.as_ref().is_some_and(|t| !empty(t)) {
                return Err(shape(
                    "`verificationMaterial.timestampVerificationData` is not empty; the key and certificate methods write none and deploy-gate verifies no timestamp",
                ));
            }
        }
        let material =
            match (m.public_key, m.x509_certificate_chain, m.certificate) {
                (Some(k), None, None) => {
                    if k.hint.is_none() && k.raw_bytes.is_none() {
                        return Err(shape(
                            "`verificationMaterial.publicKey` has neither `hint` nor `rawBytes`",
                        ));
                    }
                    Material::PublicKey {
                        hint: k.hint.filter(|h| !h.is_empty()),
                    }
                }
                (None, Some(chain), None) => {
                    if chain.certificates.is_empty() {
                        return Err(shape(
                            "`verificationMaterial.x509CertificateChain.certificates` is empty",
                        ));
                    }
                    let mut ders = Vec::new();
                    for (i, c) in chain.certificates.iter().enumerate() {
                        let der = dsse::decode(&c.raw_bytes).filter(|d| !d.is_empty()).ok_or_else(|| {
                            shape(format!(
                                "`verificationMaterial.x509CertificateChain.certificates[{i}].rawBytes` is not base64"
                            ))
                        })?;
                        ders.push(der);
                    }
                    Material::CertificateChain(ders)
                }
                (None, None, Some(_)) => Material::Keyless,
                (None, None, None) => {
                    return Err(shape(
                        "`verificationMaterial` has none of `publicKey`, `x509CertificateChain`, `certificate`",
                    ))
                }
                _ => return Err(shape(
                    "`verificationMaterial` has more than one of `publicKey`, `x509CertificateChain`, `certificate`",
                )),
            };
        let env = raw.dsse_envelope;
        let payload = dsse::decode(&env.payload)
            .filter(|p| !p.is_empty())
            .ok_or_else(|| shape("`dsseEnvelope.payload` is not base64 (or empty)"))?;
        if env.signatures.is_empty() {
            return Err(shape("`dsseEnvelope.signatures` is empty"));
        }
        let mut signatures = Vec::new();
        for (i, s) in env.signatures.iter().enumerate() {
            let sig = dsse::decode(&s.sig)
                .filter(|d| !d.is_empty())
                .ok_or_else(|| shape(format!("`dsseEnvelope.signatures[{i}].sig` is not base64 (or empty)")))?;
            signatures.push(sig);
        }
        Ok(Bundle {
            material,
            payload,
            payload_type: env.payload_type,
            signatures,
        })
    }
}

/// The signed statement: the subject and the predicate's manifest.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Statement {
    /// `subject[0].name`: the model's name (informative; the folder or file name at signing).
    pub model_name: String,
    /// `subject[0].digest.sha256`.
    pub subject_digest: [u8; 32],
    /// `serialization.method` (and `shard_size`).
    pub method: Method,
    /// `serialization.allow_symlinks`.
    pub allow_symlinks: bool,
    /// `serialization.ignore_paths` (relative to the model root).
    pub ignore_paths: Vec<String>,
    /// `predicate.resources`, in the order listed.
    pub resources: Vec<Resource>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawStatement {
    #[serde(rename = "_type")]
    type_: Value,
    subject: Value,
    #[serde(rename = "predicateType")]
    predicate_type: Value,
    predicate: Value,
}

#[derive(Deserialize)]
struct RawSubject {
    name: String,
    digest: serde_json::Map<String, Value>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawPredicate {
    resources: Vec<RawResource>,
    serialization: RawSerialization,
}

#[derive(Deserialize)]
struct RawResource {
    name: String,
    digest: String,
    algorithm: String,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawSerialization {
    method: String,
    hash_type: String,
    shard_size: Option<serde_json::Number>,
    allow_symlinks: bool,
    ignore_paths: Option<Vec<String>>,
}

fn predicate(detail: impl Into<String>) -> OmsError {
    OmsError::new(Check::Predicate, detail)
}

fn sha256_hex(text: &str) -> Option<[u8; 32]> {
    if text.len() != 64 || text.bytes().any(|b| !matches!(b, b'0'..=b'9' | b'a'..=b'f')) {
        return None;
    }
    hex::decode(text).ok()?.try_into().ok()
}

/// A relative `/`-separated path with no empty, `.` or `..` component and no leading `/`.
fn plain_relative(path: &str) -> bool {
    !path.is_empty() && !path.contains('\0') && path.split('/').all(|c| !c.is_empty() && c != "." && c != "..")
}

// `shard_size` as `model-signing` writes it: a JSON number (protobuf's Struct makes it a
// double, `3.0`) that is a positive whole number.
fn shard_size(n: &serde_json::Number) -> Option<u64> {
    if let Some(u) = n.as_u64() {
        return (u > 0).then_some(u);
    }
    let f = n.as_f64()?;
    (f > 0.0 && f.fract() == 0.0 && f < 9.007_199_254_740_992e15).then_some(f as u64)
}

impl Statement {
    /// The subject digest the payload claims, read without trust (zeros when it names none):
    /// what the keyless verifier is asked to match, before the statement is read strictly.
    pub fn subject_digest_unverified(payload: &[u8]) -> [u8; 32] {
        let mut out = [0u8; 32];
        let value: Option<Value> = serde_json::from_slice(payload).ok();
        if let Some(hex) = value
            .as_ref()
            .and_then(|v| v.pointer("/subject/0/digest/sha256"))
            .and_then(Value::as_str)
        {
            let _ = hex::decode_to_slice(hex, &mut out);
        }
        out
    }

    /// Reads the DSSE payload: the statement type, the predicate type, one subject with a
    /// sha256 digest, and the predicate (each failure its own check).
    pub fn parse(payload: &[u8]) -> Result<Statement, OmsError> {
        let value = strict_value(payload, "the statement", MAX_STATEMENT_BYTES, MAX_STATEMENT_VALUES)?;
        let raw: RawStatement = serde_json::from_value(value).map_err(|e| shape(format!("the statement: {e}")))?;
        if raw.type_.as_str() != Some(STATEMENT_TYPE) {
            return Err(OmsError::new(
                Check::StatementType,
                format!("`_type` is {}, not `{STATEMENT_TYPE}`", raw.type_),
            ));
        }
        if raw.predicate_type.as_str() != Some(PREDICATE_TYPE) {
            return Err(OmsError::new(
                Check::PredicateType,
                format!("`predicateType` is {}, not `{PREDICATE_TYPE}`", raw.predicate_type),
            ));
        }
        let subjects: Vec<RawSubject> =
            serde_json::from_value(raw.subject).map_err(|e| shape(format!("`subject`: {e}")))?;
        let [subject] = <[RawSubject; 1]>::try_from(subjects)
            .map_err(|s| shape(format!("`subject` has {} entries; an OMS statement has one", s.len())))?;
        if subject.name.is_empty() {
            return Err(shape("`subject[0].name` is empty"));
        }
        let subject_digest = subject
            .digest
            .get("sha256")
            .and_then(Value::as_str)
            .and_then(sha256_hex)
            .ok_or_else(|| shape("`subject[0].digest.sha256` is not 64 lowercase hex digits"))?;
        let p: RawPredicate = serde_json::from_value(raw.predicate).map_err(|e| predicate(format!("{e}")))?;
        let s = p.serialization;
        if s.hash_type != "sha256" {
            return Err(predicate(format!(
                "`serialization.hash_type` is `{}`; only `sha256` is verified",
                s.hash_type
            )));
        }
        let method = match (s.method.as_str(), &s.shard_size) {
            ("files", None) => Method::Files,
            ("files", Some(_)) => return Err(predicate("`serialization.shard_size` is given with method `files`")),
            ("shards", Some(n)) => Method::Shards {
                shard_size: shard_size(n)
                    .ok_or_else(|| predicate(format!("`serialization.shard_size` {n} is not a positive integer")))?,
            },
            ("shards", None) => return Err(predicate("`serialization.shard_size` is missing for method `shards`")),
            (other, _) => {
                return Err(predicate(format!(
                    "`serialization.method` `{other}` is not `files` or `shards`"
                )))
            }
        };
        let ignore_paths = s.ignore_paths.unwrap_or_default();
        for (i, p) in ignore_paths.iter().enumerate() {
            if !plain_relative(p) || p.contains(['*', '?', '[']) {
                return Err(predicate(format!(
                    "`serialization.ignore_paths[{i}]` `{p}` is not a plain relative path"
                )));
            }
        }
        let mut resources = Vec::with_capacity(p.resources.len());
        let mut seen = std::collections::HashSet::new();
        for (i, r) in p.resources.iter().enumerate() {
            let at = || format!("`resources[{i}]` (`{}`)", r.name);
            let ok_algorithm = match method {
                Method::Files => r.algorithm == "sha256",
                Method::Shards { .. } => r.algorithm == "sha256" || r.algorithm == method.algorithm(),
            };
            if !ok_algorithm {
                return Err(predicate(format!(
                    "{}: algorithm `{}`, not `{}`",
                    at(),
                    r.algorithm,
                    method.algorithm()
                )));
            }
            let digest = sha256_hex(&r.digest)
                .ok_or_else(|| predicate(format!("{}: the digest is not 64 lowercase hex digits", at())))?;
            let resource = match method {
                Method::Files => Resource::file(r.name.clone(), digest),
                Method::Shards { shard_size } => {
                    let parts: Vec<&str> = r.name.rsplitn(3, ':').collect();
                    let bad = || predicate(format!("{}: not `path:start:end` within one shard", at()));
                    let [end, start, path] = parts[..] else {
                        return Err(bad());
                    };
                    let (start, end) = (
                        start.parse::<u64>().map_err(|_| bad())?,
                        end.parse::<u64>().map_err(|_| bad())?,
                    );
                    if end <= start || end - start > shard_size || start % shard_size != 0 {
                        return Err(bad());
                    }
                    Resource::shard(path, start, end, digest)
                }
            };
            if !(plain_relative(&resource.path) || (resource.path == "." && p.resources.len() == 1)) {
                return Err(predicate(format!("{}: not a plain relative path", at())));
            }
            // By the name as read (`f:00:3` is `f:0:3`), as the files are compared.
            if !seen.insert(resource.name()) {
                return Err(predicate(format!("{}: listed twice", at())));
            }
            resources.push(resource);
        }
        Ok(Statement {
            model_name: subject.name,
            subject_digest,
            method,
            allow_symlinks: s.allow_symlinks,
            ignore_paths,
            resources,
        })
    }
}
