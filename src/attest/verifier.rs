//! Verification of an envelope: the DSSE "reject if" steps in a fixed order, each failure with
//! its own [`VerifyError`] variant, the limits first, each before the work it bounds.

use super::check::Check;
use super::dsse::{self, Signature, PAYLOAD_TYPE};
use super::{json_pointer, keys, strict, time, MAX_SKEW_SECONDS, PREDICATE_TYPE, REPORT_KEY, STATEMENT_TYPE};
use ed25519_dalek::VerifyingKey;
use serde::Deserialize;
use serde_json::value::RawValue;
use serde_json::Value;
use sha2::{Digest, Sha256};
use std::borrow::Cow;

/// The default most bytes of a statement (the decoded payload): 64 MiB. A report of the
/// default 200 samples is under 100 KB; one of every case of a large log (`--max-samples
/// none`) is about 300 bytes a case, so this holds some 200,000 cases.
pub const DEFAULT_MAX_STATEMENT_BYTES: usize = 64 << 20;
/// The most signatures an envelope may carry: every one may cost a hash of the whole
/// statement per trusted key (a 64 MiB statement: about 0.12 s each), and a real envelope has
/// one per reviewer.
pub const MAX_SIGNATURES: usize = 16;
/// Room in an envelope beyond its base64 payload: signatures, key ids, whitespace.
const ENVELOPE_OVERHEAD: usize = 64 << 10;

/// Sizes and counts an envelope may not exceed; each is checked before the work it bounds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// The most bytes of the envelope file.
    pub envelope_bytes: usize,
    /// The most bytes of the statement (the decoded payload).
    pub statement_bytes: usize,
    /// The most signatures in the envelope.
    pub signatures: usize,
}

impl Limits {
    /// The limits for statements of at most `statement_bytes`: the envelope may have 1.5 times
    /// as many bytes plus 64 KiB (base64 makes the payload 4/3 as long), and
    /// [`MAX_SIGNATURES`] signatures.
    pub fn for_statement_bytes(statement_bytes: usize) -> Limits {
        Limits {
            envelope_bytes: statement_bytes
                .saturating_add(statement_bytes / 2)
                .saturating_add(ENVELOPE_OVERHEAD),
            statement_bytes,
            signatures: MAX_SIGNATURES,
        }
    }
}

impl Default for Limits {
    /// [`DEFAULT_MAX_STATEMENT_BYTES`] (64 MiB) statements, 96 MiB + 64 KiB envelopes, 16
    /// signatures.
    fn default() -> Limits {
        Limits::for_statement_bytes(DEFAULT_MAX_STATEMENT_BYTES)
    }
}

/// What a verifier requires.
pub struct Requirements<'a> {
    /// The only keys whose signatures count. The same public key given more than once (in
    /// another file or spelling) is one key.
    pub trusted: &'a [VerifyingKey],
    /// How many distinct trusted keys must have signed (at least 1; more than the distinct
    /// trusted keys is refused).
    pub threshold: usize,
    /// The sha256 (hex) of the artifact about to be deployed; `None` skips the check (the page
    /// without a digest entered), and then the statement must name exactly one subject.
    pub subject_sha256: Option<&'a str>,
    /// The deployment target; `None` skips the check.
    pub target: Option<&'a str>,
    /// Now, Unix seconds.
    pub now: i64,
    /// The oldest acceptable `timeVerified`, as an age in seconds.
    pub max_age: i64,
    /// Whether a statement (by its payload sha256) was applied already (the ledger).
    pub already_applied: &'a dyn Fn(&str) -> bool,
    /// Size and count limits ([`Limits::default`] unless raised).
    pub limits: Limits,
}

impl Requirements<'_> {
    /// `Err(VerifyError::Threshold)` when no envelope could meet the threshold: it is more
    /// than the distinct trusted keys. [`verify`] checks it first; a caller may check it
    /// before reading an envelope at all.
    pub fn check_threshold(&self) -> Result<(), VerifyError> {
        let (required, distinct) = (self.threshold.max(1), distinct_keys(self.trusted).len());
        if required > distinct {
            return Err(VerifyError::Threshold { required, distinct });
        }
        Ok(())
    }
}

/// Why an envelope was rejected; each check has its own variant, in the order they run.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum VerifyError {
    /// The threshold is more than the distinct trusted keys: no envelope can meet it.
    #[error(
        "a threshold of {required} can never be met: the trusted keys given are {distinct} distinct public key(s)"
    )]
    Threshold {
        /// The threshold.
        required: usize,
        /// Distinct public keys among the trusted keys.
        distinct: usize,
    },
    /// The envelope has more bytes than the limit (nothing of it was read).
    #[error("the envelope is {bytes} bytes, more than the limit of {limit} bytes")]
    EnvelopeSize {
        /// Its size.
        bytes: usize,
        /// The limit.
        limit: usize,
    },
    /// Not a DSSE envelope (JSON shape, base64 payload, at least one signature).
    #[error("not a DSSE envelope: {0}")]
    Envelope(String),
    /// The envelope has more signatures than the limit (none was checked).
    #[error("the envelope has {count} signatures, more than the limit of {limit}")]
    SignatureCount {
        /// How many it has.
        count: usize,
        /// The limit.
        limit: usize,
    },
    /// The payload decodes to more bytes than the limit (it was not decoded).
    #[error("the statement is {bytes} bytes, more than the limit of {limit} bytes")]
    StatementSize {
        /// Its decoded size.
        bytes: usize,
        /// The limit.
        limit: usize,
    },
    /// Fewer distinct trusted keys verified than the threshold.
    #[error("{verified} of the required {required} trusted signature(s) verified")]
    Signature {
        /// Distinct trusted keys whose signature verified.
        verified: usize,
        /// The threshold.
        required: usize,
    },
    /// The payload type is not an in-toto statement.
    #[error("payloadType is `{0}`, not {PAYLOAD_TYPE}")]
    PayloadType(String),
    /// The statement has an object with a key twice: parsers disagree on what it says.
    #[error("the statement is ambiguous: {0}")]
    DuplicateKey(strict::StrictJsonError),
    /// The statement's `_type` is wrong (or the payload is not a statement).
    #[error("not an in-toto Statement v1: {0}")]
    StatementType(String),
    /// The predicate is not a VSA, or is incomplete.
    #[error("predicate: {0}")]
    Predicate(String),
    /// The subject digest is not the artifact's.
    #[error("the statement is for sha256:{found}, not for the artifact sha256:{expected}")]
    SubjectDigest {
        /// The artifact's digest.
        expected: String,
        /// The statement's digest(s).
        found: String,
    },
    /// Several different subjects could be the one meant: none is chosen.
    #[error("the statement names {count} different subjects that could be meant ({names}); {hint}")]
    AmbiguousSubject {
        /// How many.
        count: usize,
        /// Their names and digests.
        names: String,
        /// What would settle it.
        hint: &'static str,
    },
    /// The target is not the one being deployed to.
    #[error("the statement is for target `{found}`, not `{expected}`")]
    Target {
        /// The target given.
        expected: String,
        /// The statement's `resourceUri`.
        found: String,
    },
    /// `timeVerified` is not an RFC 3339 date-time of a real time.
    #[error("timeVerified: {0}")]
    Time(time::TimeError),
    /// `timeVerified` is older than the maximum age.
    #[error("the decision is {age_seconds} s old, older than the maximum {max_seconds} s")]
    TooOld {
        /// Its age.
        age_seconds: i64,
        /// The maximum.
        max_seconds: i64,
    },
    /// `timeVerified` is in the future beyond the allowed clock skew.
    #[error("the decision is dated {ahead_seconds} s in the future")]
    FromTheFuture {
        /// How far ahead.
        ahead_seconds: i64,
    },
    /// The ledger shows this statement applied already.
    #[error("this decision was applied already (ledger entry sha256:{0})")]
    Replayed(String),
    /// The decision's policy requires a review that the statement does not pin.
    #[error("{0}")]
    Review(String),
}

impl VerifyError {
    /// The failed check.
    pub fn kind(&self) -> Check {
        match self {
            VerifyError::Threshold { .. } => Check::Threshold,
            VerifyError::EnvelopeSize { .. } => Check::EnvelopeSize,
            VerifyError::Envelope(_) => Check::Envelope,
            VerifyError::SignatureCount { .. } => Check::SignatureCount,
            VerifyError::StatementSize { .. } => Check::StatementSize,
            VerifyError::Signature { .. } => Check::Signature,
            VerifyError::PayloadType(_) => Check::PayloadType,
            VerifyError::DuplicateKey(_) => Check::DuplicateKey,
            VerifyError::StatementType(_) => Check::StatementType,
            VerifyError::Predicate(_) => Check::Predicate,
            VerifyError::SubjectDigest { .. } => Check::SubjectDigest,
            VerifyError::AmbiguousSubject { .. } => Check::AmbiguousSubject,
            VerifyError::Target { .. } => Check::Target,
            VerifyError::Time(_) => Check::Time,
            VerifyError::TooOld { .. } => Check::TooOld,
            VerifyError::FromTheFuture { .. } => Check::FromTheFuture,
            VerifyError::Replayed(_) => Check::Replayed,
            VerifyError::Review(_) => Check::Review,
        }
    }

    /// The name of the failed check.
    pub fn check(&self) -> &'static str {
        self.kind().as_str()
    }
}

/// A verified decision: everything a deploy step needs, taken from the verified payload.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct Verified {
    /// The statement, as signed.
    pub statement: Value,
    /// sha256 of the payload bytes (the ledger key).
    pub payload_sha256: String,
    /// Key ids of the trusted keys whose signatures verified, each key once.
    pub signers: Vec<String>,
    /// `verificationResult == "PASSED"`.
    pub approved: bool,
    /// The decision's outcome: its `outcome` (approved exactly when `approved`), or for a
    /// report made before outcomes existed, approved or blocked.
    pub outcome: crate::decision::Outcome,
    /// The decision's reason string.
    pub reason: String,
    /// The name of the subject that matched the artifact (the only subject when no artifact
    /// digest was required).
    pub model_name: String,
    /// That subject's digest, lowercase hex.
    pub model_sha256: String,
    /// That subject's position in the statement's `subject` list.
    pub subject_index: usize,
    /// `resourceUri`.
    pub target: String,
    /// `timeVerified`, Unix seconds.
    pub time_verified: i64,
    /// The GateReport's JSON text as signed, without whitespace: every number as written (the
    /// [`Verified::report`] value holds a pipeline id past 64 bits as the nearest double).
    #[serde(skip)]
    pub report_text: String,
}

/// The report's JSON text in a statement's payload (which has been read as JSON already, and
/// found to hold the report); `report` as serde_json writes it should that reading fail.
fn report_text(payload: &[u8], report: &Value) -> String {
    #[derive(Deserialize)]
    struct Statement<'a> {
        #[serde(borrow)]
        predicate: Predicate<'a>,
    }
    #[derive(Deserialize)]
    struct Predicate<'a> {
        // REPORT_KEY (a test checks that the two are the same).
        #[serde(borrow, rename = "https://deploy-gate.dev/report/v1")]
        report: &'a RawValue,
    }
    match serde_json::from_slice::<Statement<'_>>(payload) {
        Ok(statement) => crate::json::layout::compact(statement.predicate.report.get()),
        Err(_) => report.to_string(),
    }
}

impl Verified {
    /// The verified decision as compact JSON (what serializing it gives), with the report in the
    /// statement as signed: every digit of a pipeline id past 64 bits.
    pub fn to_json(&self) -> String {
        let value = serde_json::to_value(self).expect("a verified decision serializes");
        let Ok(raw) = RawValue::from_string(self.report_text.clone()) else {
            return value.to_string();
        };
        let spliced = super::Spliced {
            value: &value,
            path: &["statement", "predicate", REPORT_KEY],
            raw: &raw,
        };
        serde_json::to_string(&spliced).expect("a verified decision serializes")
    }

    /// The GateReport inside the statement.
    pub fn report(&self) -> &Value {
        &self.statement["predicate"][REPORT_KEY]
    }
}

/// The envelope as read for verification: the payload borrowed from the input when it can be,
/// the signatures only delimited (each is decoded once their number is known to be allowed).
/// Serde's derive refuses a repeated field.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Incoming<'a> {
    payload_type: String,
    #[serde(borrow)]
    payload: Cow<'a, str>,
    #[serde(borrow)]
    signatures: Vec<&'a RawValue>,
}

/// The trusted keys, each public key once (compared as curve points, so that two encodings
/// of one key are one key).
fn distinct_keys(trusted: &[VerifyingKey]) -> Vec<&VerifyingKey> {
    let mut seen: Vec<[u8; 32]> = Vec::with_capacity(trusted.len());
    let mut keys = Vec::with_capacity(trusted.len());
    for key in trusted {
        let point = key.to_edwards().compress().to_bytes();
        if !seen.contains(&point) {
            seen.push(point);
            keys.push(key);
        }
    }
    keys
}

/// The subject the deploy is about: the one whose digest is the artifact's, or the only one.
fn choose_subject(subjects: &[Value], expected: Option<&str>) -> Result<(usize, String, String), VerifyError> {
    let entries: Vec<(usize, String, String)> = subjects
        .iter()
        .enumerate()
        .filter_map(|(i, s)| {
            // Only a sha256 that is one (64 hex digits) names an artefact.
            let digest = s.pointer("/digest/sha256").and_then(Value::as_str)?;
            let digest = (digest.len() == 64)
                .then(|| super::parse_digest(digest).ok())
                .flatten()?;
            // And the subject names the model it is (the deploy reports and passes it on).
            let name = s.get("name").and_then(Value::as_str)?;
            Some((i, name.to_owned(), digest))
        })
        .collect();
    let candidates: Vec<&(usize, String, String)> = match expected {
        Some(expected) => {
            let expected = expected.to_ascii_lowercase();
            let matching: Vec<_> = entries.iter().filter(|e| e.2 == expected).collect();
            if matching.is_empty() {
                let found: Vec<&str> = entries.iter().map(|e| e.2.as_str()).collect();
                return Err(VerifyError::SubjectDigest {
                    expected,
                    found: found.join(", "),
                });
            }
            matching
        }
        None => entries.iter().collect(),
    };
    let mut distinct: Vec<&(usize, String, String)> = Vec::new();
    for c in &candidates {
        if !distinct.iter().any(|d| (&d.1, &d.2) == (&c.1, &c.2)) {
            distinct.push(c);
        }
    }
    match distinct.as_slice() {
        [] => Err(VerifyError::StatementType(
            "no subject with a name and a sha256 digest".into(),
        )),
        [only] => Ok((*only).clone()),
        several => Err(VerifyError::AmbiguousSubject {
            count: several.len(),
            names: several
                .iter()
                .map(|(_, name, digest)| format!("`{name}` sha256:{digest}"))
                .collect::<Vec<_>>()
                .join(", "),
            hint: if expected.is_some() {
                "their digests are the same but their names differ"
            } else {
                "give the artifact's digest to say which one is deployed"
            },
        }),
    }
}

/// An envelope whose signatures verified against trusted keys, with its statement read and its
/// predicate checked (steps 1 to 4 of [`verify`]): what the statement says, before anything is
/// compared with a deploy (its subject, target, age and replay are not checked).
#[derive(Debug, Clone, PartialEq)]
pub struct SignedStatement {
    /// The statement, as signed.
    pub statement: Value,
    /// The payload's bytes, exactly as signed (the statement's text: a reader that must keep
    /// every digit of a number reads it from here).
    pub payload: Vec<u8>,
    /// Key ids of the trusted keys whose signatures verified, each key once.
    pub signers: Vec<String>,
    /// `verificationResult == "PASSED"`.
    pub approved: bool,
    /// The decision's outcome: its `outcome` (approved exactly when `approved`), or for a
    /// report made before outcomes existed, approved or blocked.
    pub outcome: crate::decision::Outcome,
    /// The decision's reason string.
    pub reason: String,
}

/// Steps 1 to 4 of [`verify`]: the envelope's size and shape, the signatures against `trusted`
/// (at least `threshold` distinct keys), the payload type, and the statement read strictly with
/// its types and predicate checked. A caller that only reads what a signed decision says (a
/// diff of two of them) stops here; [`verify`] goes on to the subject, target, age and replay.
pub fn verify_signatures(
    envelope_bytes: &[u8],
    trusted: &[VerifyingKey],
    threshold: usize,
    limits: &Limits,
) -> Result<SignedStatement, VerifyError> {
    let (required, trusted) = (threshold.max(1), distinct_keys(trusted));
    if required > trusted.len() {
        return Err(VerifyError::Threshold {
            required,
            distinct: trusted.len(),
        });
    }
    // 1. Envelope size, shape and signature count.
    if envelope_bytes.len() > limits.envelope_bytes {
        return Err(VerifyError::EnvelopeSize {
            bytes: envelope_bytes.len(),
            limit: limits.envelope_bytes,
        });
    }
    let env: Incoming<'_> = serde_json::from_slice(envelope_bytes).map_err(|e| VerifyError::Envelope(e.to_string()))?;
    if env.signatures.is_empty() {
        return Err(VerifyError::Envelope("no signatures".into()));
    }
    if env.signatures.len() > limits.signatures {
        return Err(VerifyError::SignatureCount {
            count: env.signatures.len(),
            limit: limits.signatures,
        });
    }
    let signatures = env
        .signatures
        .iter()
        .enumerate()
        .map(|(i, raw)| {
            serde_json::from_str::<Signature>(raw.get())
                .map_err(|e| VerifyError::Envelope(format!("signature {}: {e}", i + 1)))
        })
        .collect::<Result<Vec<_>, _>>()?;
    let payload_len = dsse::decoded_len(&env.payload)
        .ok_or_else(|| VerifyError::Envelope("payload is not base64 (its length)".into()))?;
    if payload_len > limits.statement_bytes {
        return Err(VerifyError::StatementSize {
            bytes: payload_len,
            limit: limits.statement_bytes,
        });
    }
    // The PAE message, with the payload decoded in place after its header.
    let mut message = dsse::pae_header(&env.payload_type, payload_len);
    let header_len = message.len();
    message.reserve_exact(payload_len + 3);
    if !dsse::decode_into(&env.payload, &mut message) || message.len() != header_len + payload_len {
        return Err(VerifyError::Envelope("payload is not base64".into()));
    }
    drop(env.payload);
    let payload = &message[header_len..];
    // 2. Signatures, against the trusted keys only. The keyid only orders the tries (the key
    //    it names first), it never excludes a key; each distinct key counts once, whatever the
    //    number of signatures it made, and a repeated signature is checked once.
    let keyids: Vec<String> = trusted.iter().map(|k| keys::keyid(k)).collect();
    let mut counted = vec![false; trusted.len()];
    let mut seen: Vec<[u8; 64]> = Vec::new();
    let mut signers: Vec<String> = Vec::new();
    for sig in &signatures {
        if dsse::decoded_len(&sig.sig) != Some(64) {
            continue;
        }
        let Some(bytes) = dsse::decode(&sig.sig).and_then(|b| <[u8; 64]>::try_from(b).ok()) else {
            continue;
        };
        if seen.contains(&bytes) {
            continue;
        }
        seen.push(bytes);
        let signature = ed25519_dalek::Signature::from_bytes(&bytes);
        let hinted = keyids.iter().position(|id| *id == sig.keyid);
        let order = hinted
            .into_iter()
            .chain((0..trusted.len()).filter(|&i| Some(i) != hinted));
        for i in order {
            if !counted[i] && trusted[i].verify_strict(&message, &signature).is_ok() {
                counted[i] = true;
                signers.push(keyids[i].clone());
                break;
            }
        }
    }
    if signers.len() < required {
        return Err(VerifyError::Signature {
            verified: signers.len(),
            required,
        });
    }
    // 3. Payload type (authenticated by the signature through PAE).
    if env.payload_type != PAYLOAD_TYPE {
        return Err(VerifyError::PayloadType(env.payload_type));
    }
    // 4. The statement, read strictly (a key twice anywhere is refused), and its types.
    let statement = match strict::from_slice(payload) {
        Ok(v) => v,
        Err(e @ strict::StrictJsonError::DuplicateKey { .. }) => return Err(VerifyError::DuplicateKey(e)),
        Err(e) => return Err(VerifyError::StatementType(format!("payload is not JSON: {e}"))),
    };
    let found_type = statement.get("_type").and_then(Value::as_str).unwrap_or("");
    if found_type != STATEMENT_TYPE {
        return Err(VerifyError::StatementType(format!("_type is `{found_type}`")));
    }
    let predicate_type = statement.get("predicateType").and_then(Value::as_str).unwrap_or("");
    if predicate_type != PREDICATE_TYPE {
        return Err(VerifyError::Predicate(format!("predicateType is `{predicate_type}`")));
    }
    let pred = &statement["predicate"];
    let field = |name: &str| {
        pred.get(name)
            .and_then(Value::as_str)
            .ok_or_else(|| VerifyError::Predicate(format!("no `{name}`")))
    };
    let approved = match field("verificationResult")? {
        "PASSED" => true,
        "FAILED" => false,
        other => return Err(VerifyError::Predicate(format!("verificationResult is `{other}`"))),
    };
    // A PASSED summary states the level it verified (as the signer writes it); a FAILED one
    // verifies none.
    let levels = pred.get("verifiedLevels").and_then(Value::as_array);
    let has_level = levels.is_some_and(|l| l.iter().any(|v| v.as_str() == Some(super::APPROVED_LEVEL)));
    if approved != has_level {
        return Err(VerifyError::Predicate(format!(
            "verificationResult is {} but verifiedLevels {} {}",
            super::VerificationResult::of(approved).as_str(),
            if has_level { "has" } else { "lacks" },
            super::APPROVED_LEVEL
        )));
    }
    // (The target and the time are read by `verify`, which checks them; here only their presence.)
    field("resourceUri")?;
    field("timeVerified")?;
    let report_approved = pred
        .pointer(&json_pointer(&[REPORT_KEY, "decision", "approved"]))
        .and_then(Value::as_bool);
    if report_approved != Some(approved) {
        return Err(VerifyError::Predicate(
            "the report's decision does not match verificationResult".into(),
        ));
    }
    // The outcome, when the report states one, agrees with the result (an inconclusive or a
    // blocked decision is FAILED; only an approved one PASSED).
    let outcome = match pred.pointer(&json_pointer(&[REPORT_KEY, "decision", "outcome"])) {
        None => crate::decision::Outcome::of_approved(approved),
        Some(v) => match v.as_str().and_then(crate::decision::Outcome::parse) {
            Some(o) if (o == crate::decision::Outcome::Approved) == approved => o,
            _ => {
                return Err(VerifyError::Predicate(format!(
                    "the report's decision outcome {v} does not match verificationResult {}",
                    super::VerificationResult::of(approved).as_str()
                )))
            }
        },
    };
    let reason = pred
        .pointer(&json_pointer(&[REPORT_KEY, "decision", "reason"]))
        .and_then(Value::as_str)
        .unwrap_or("")
        .to_owned();
    if statement
        .get("subject")
        .and_then(Value::as_array)
        .is_none_or(|s| s.is_empty())
    {
        return Err(VerifyError::StatementType("no subject".into()));
    }
    // A review pin, where the statement has one, is one (`sign --review`); and a decision made
    // under a policy that requires a review carries one that marks every regressed case.
    let pin = review_pin(&statement).map_err(VerifyError::Predicate)?;
    required_review(&pred[REPORT_KEY], pin.as_ref())?;
    // The payload alone: the PAE header goes (a move of the bytes, no copy of them elsewhere).
    message.drain(..header_len);
    Ok(SignedStatement {
        statement,
        payload: message,
        signers,
        approved,
        outcome,
        reason,
    })
}

/// The review a statement pins (`predicate["https://deploy-gate.dev/review/v1"]`), read and
/// checked: `Ok(None)` when it pins none, `Err` when what it pins is not a review pin.
pub(super) fn review_pin(statement: &serde_json::Value) -> Result<Option<crate::review::ReviewPin>, String> {
    let Some(value) = statement["predicate"].get(super::REVIEW_KEY) else {
        return Ok(None);
    };
    let pin: crate::review::ReviewPin =
        serde_json::from_value(value.clone()).map_err(|e| format!("the review it pins: {e}"))?;
    pin.check().map_err(|e| format!("the review it pins: {e}"))?;
    Ok(Some(pin))
}

/// The review the report's policy requires (`review: {"require": "regressed"}`), checked against
/// what the statement pins: one, that marks as many regressed cases as the report has.
fn required_review(report: &Value, pin: Option<&crate::review::ReviewPin>) -> Result<(), VerifyError> {
    let required = crate::policy::ReviewPolicy::of_report_policy(&report["policy"]).map_err(VerifyError::Predicate)?;
    if required.is_none() {
        return Ok(());
    }
    let regressed = report["cases"]
        .as_array()
        .map_or(0, |cases| cases.iter().filter(|c| c["status"] == "regressed").count()) as u64;
    let Some(pin) = pin else {
        return Err(VerifyError::Review(format!(
            "the decision's policy requires a review marking every regressed case (review: {{\"require\": \"regressed\"}}), and it was signed without one ({regressed} regressed case(s))"
        )));
    };
    if pin.regressed.cases != regressed || pin.regressed.marked != regressed {
        return Err(VerifyError::Review(format!(
            "the decision's policy requires a review marking every regressed case (review: {{\"require\": \"regressed\"}}); the review it pins marks {} of {} (the report has {regressed})",
            pin.regressed.marked, pin.regressed.cases
        )));
    }
    Ok(())
}

/// Verifies an envelope's bytes against the requirements, in the order of DESIGN "Verify".
///
/// Limits come first, each before the work it bounds: the envelope's size before it is
/// parsed, the number of signatures before any is decoded, the statement's size (from the
/// payload's length) before it is decoded.
pub fn verify(envelope_bytes: &[u8], req: &Requirements<'_>) -> Result<Verified, VerifyError> {
    req.check_threshold()?;
    let SignedStatement {
        statement,
        payload,
        signers,
        approved,
        outcome,
        reason,
    } = verify_signatures(envelope_bytes, req.trusted, req.threshold, &req.limits)?;
    let pred = &statement["predicate"];
    let text = |name: &str| pred.get(name).and_then(Value::as_str).unwrap_or_default();
    let (target, time_text) = (text("resourceUri").to_owned(), text("timeVerified"));
    let subjects = statement["subject"].as_array().map_or(&[][..], Vec::as_slice);
    // 5. Subject: the one whose digest is the artifact's (or the only one, without a digest).
    let (subject_index, model_name, model_sha256) = choose_subject(subjects, req.subject_sha256)?;
    // 6. Target.
    if let Some(expected) = req.target {
        if expected != target {
            return Err(VerifyError::Target {
                expected: expected.to_owned(),
                found: target,
            });
        }
    }
    // 7. Time: a real RFC 3339 time, within the maximum age, not in the future.
    let time_verified = time::parse_rfc3339(time_text).map_err(VerifyError::Time)?;
    if time_verified > req.now.saturating_add(MAX_SKEW_SECONDS) {
        return Err(VerifyError::FromTheFuture {
            ahead_seconds: time_verified.saturating_sub(req.now),
        });
    }
    let age = req.now.saturating_sub(time_verified);
    if age > req.max_age {
        return Err(VerifyError::TooOld {
            age_seconds: age,
            max_seconds: req.max_age,
        });
    }
    // 8. Replay.
    let payload_sha256 = hex::encode(Sha256::digest(&payload));
    if (req.already_applied)(&payload_sha256) {
        return Err(VerifyError::Replayed(payload_sha256));
    }
    Ok(Verified {
        report_text: report_text(&payload, &statement["predicate"][REPORT_KEY]),
        model_name,
        model_sha256,
        subject_index,
        statement,
        payload_sha256,
        signers,
        approved,
        outcome,
        reason,
        target,
        time_verified,
    })
}
