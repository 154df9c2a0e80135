//! Signed gate decisions: an in-toto Statement v1 with a SLSA verification summary (VSA)
//! predicate carrying the whole GateReport, in a DSSE envelope signed with Ed25519.
//!
//! Sans-IO: the time, the keys and the model digest are arguments. [`verify`] follows the
//! DSSE "reject if" steps in a fixed order, each failure with its own [`VerifyError`] variant,
//! and returns the verified statement and the keys that signed it, so nothing downstream
//! re-parses the envelope.

pub mod check;
pub mod dsse;
pub mod jcs;
pub mod keys;
pub mod ledger;
pub mod pin;
pub mod reproduce;
pub mod strict;
pub mod summary;
pub mod time;
mod verifier;

pub use check::Check;
pub use pin::PolicyMismatch;
pub use reproduce::{reproduce, Mismatch};
pub use summary::{Failure, Scope, Summary, VerifyResult};
pub use verifier::{
    verify, verify_signatures, Limits, Requirements, SignedStatement, Verified, VerifyError,
    DEFAULT_MAX_STATEMENT_BYTES, MAX_SIGNATURES,
};

use dsse::{Envelope, Signature, PAYLOAD_TYPE};
use ed25519_dalek::{Signer, SigningKey};
use serde::Serialize;
use serde_json::value::RawValue;
use serde_json::{json, Value};
use sha2::{Digest, Sha256};

/// `_type` of an in-toto Statement v1.
pub const STATEMENT_TYPE: &str = "https://in-toto.io/Statement/v1";
/// The SLSA verification summary predicate type.
pub const PREDICATE_TYPE: &str = "https://slsa.dev/verification_summary/v1";
/// The predicate key that carries the whole GateReport.
pub const REPORT_KEY: &str = "https://deploy-gate.dev/report/v1";
/// The JSON pointer (RFC 6901) of a statement's embedded report: `/predicate/` and
/// [`REPORT_KEY`] escaped.
pub fn report_pointer() -> String {
    json_pointer(&["predicate", REPORT_KEY])
}

/// One reference token of a JSON pointer (RFC 6901 §4): `~` as `~0`, then `/` as `~1`.
pub fn pointer_token(key: &str) -> String {
    key.replace('~', "~0").replace('/', "~1")
}

/// The JSON pointer (RFC 6901) to the value under these keys, each escaped.
pub fn json_pointer(keys: &[&str]) -> String {
    keys.iter().map(|k| format!("/{}", pointer_token(k))).collect()
}

/// The predicate key that pins the review a decision was signed with (a
/// [`crate::review::ReviewPin`]); absent when it was signed without one.
pub const REVIEW_KEY: &str = "https://deploy-gate.dev/review/v1";

/// The verifier id in the predicate.
pub const VERIFIER_ID: &str = "https://deploy-gate.dev/verifier/v1";
/// The policy URI in the predicate.
pub const POLICY_URI: &str = "https://deploy-gate.dev/policy/v1";
/// The level an approved decision verifies.
pub const APPROVED_LEVEL: &str = "DEPLOY_GATE_APPROVED";

/// The SLSA `verificationResult`: `PASSED` (deploy) or `FAILED` (keep the old model).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum VerificationResult {
    /// The decision approves the new model.
    Passed,
    /// The decision keeps the old model.
    Failed,
}

impl VerificationResult {
    /// `PASSED` for an approved decision, else `FAILED`.
    pub fn of(approved: bool) -> VerificationResult {
        if approved {
            VerificationResult::Passed
        } else {
            VerificationResult::Failed
        }
    }

    /// The word.
    pub fn as_str(self) -> &'static str {
        match self {
            VerificationResult::Passed => "PASSED",
            VerificationResult::Failed => "FAILED",
        }
    }
}

/// Clock skew tolerated for a statement dated in the future, in seconds.
pub const MAX_SKEW_SECONDS: i64 = 300;

/// A signing request could not be honoured.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum SignError {
    /// The report is not a deploy-gate report.
    #[error("not a deploy-gate report: {0}")]
    Report(String),
    /// A model digest is not `sha256:` and 64 hex digits.
    #[error("model digest must be sha256:<64 hex digits>, not `{0}`")]
    Digest(String),
    /// The existing envelope is not one this signer may add to.
    #[error("cannot add a signature: {0}")]
    Cosign(String),
}

/// Parses `sha256:<hex>` (or bare hex) into lowercase hex.
pub fn parse_digest(text: &str) -> Result<String, SignError> {
    let hex_part = text.trim().strip_prefix("sha256:").unwrap_or(text.trim());
    if hex_part.len() == 64 && hex_part.bytes().all(|b| b.is_ascii_hexdigit()) {
        Ok(hex_part.to_ascii_lowercase())
    } else {
        Err(SignError::Digest(text.to_owned()))
    }
}

/// The model digest of one file's bytes.
pub fn file_digest(bytes: &[u8]) -> String {
    hex::encode(Sha256::digest(bytes))
}

/// The model digest of a directory: sha256 over the lines `"<relative path>\0<sha256>\n"`
/// sorted by path (bytes), paths with `/` separators.
pub fn directory_digest(files: &[(String, String)]) -> String {
    let mut sorted: Vec<&(String, String)> = files.iter().collect();
    sorted.sort_by(|a, b| a.0.as_bytes().cmp(b.0.as_bytes()));
    let mut h = Sha256::new();
    for (path, digest) in sorted {
        h.update(path.as_bytes());
        h.update(b"\0");
        h.update(digest.as_bytes());
        h.update(b"\n");
    }
    hex::encode(h.finalize())
}

/// A report to sign: the value the signer's checks read, and its JSON text, which the statement
/// carries as written (without its whitespace), so every number keeps its digits: a pipeline id
/// of 30 digits is signed as that id, not as the nearest double.
pub struct ReportToSign {
    value: Value,
    text: Box<RawValue>,
}

impl ReportToSign {
    /// Reads a report's JSON text as the verifier will read the statement: a key twice anywhere
    /// is refused.
    pub fn parse(text: &str) -> Result<Self, SignError> {
        let value = strict::from_slice(text.as_bytes()).map_err(|e| SignError::Report(format!("not JSON: {e}")))?;
        let text =
            RawValue::from_string(crate::json::layout::compact(text)).expect("JSON stays JSON without whitespace");
        Ok(ReportToSign { value, text })
    }

    /// A report given as a value (its numbers are what the value holds).
    pub fn of_value(value: &Value) -> Self {
        let text = serde_json::value::to_raw_value(value).expect("a JSON value serializes");
        ReportToSign {
            value: value.clone(),
            text,
        }
    }

    /// The report as its checks read it.
    pub fn value(&self) -> &Value {
        &self.value
    }

    /// The report's JSON text (without whitespace), every number as written.
    pub fn text(&self) -> &str {
        self.text.get()
    }
}

/// What a signer states about a report.
pub struct Claim<'a> {
    /// The GateReport.
    pub report: &'a ReportToSign,
    /// The model's name (the statement's subject).
    pub model_name: &'a str,
    /// The model's sha256, hex.
    pub model_sha256: &'a str,
    /// Where it is to be deployed (`resourceUri`).
    pub target: &'a str,
    /// When the decision was verified, Unix seconds (from the shell's clock).
    pub time_verified: i64,
    /// The review signed with the decision (`sign --review`), pinned in the statement.
    pub review: Option<&'a crate::review::ReviewPin>,
}

fn check_report(report: &Value) -> Result<bool, SignError> {
    if report.get("schema").and_then(Value::as_str) != Some(crate::report::SCHEMA) {
        return Err(SignError::Report(format!("`schema` is not {}", crate::report::SCHEMA)));
    }
    let approved = report
        .pointer("/decision/approved")
        .and_then(Value::as_bool)
        .ok_or_else(|| SignError::Report("no decision.approved".into()))?;
    // An outcome, where the report has one, says what `approved` says: only an approved decision
    // is PASSED; a blocked or inconclusive one is FAILED.
    if let Some(outcome) = report.pointer("/decision/outcome") {
        match outcome.as_str().and_then(crate::decision::Outcome::parse) {
            Some(o) if (o == crate::decision::Outcome::Approved) == approved => {}
            _ => {
                return Err(SignError::Report(format!(
                    "decision.outcome {outcome} does not agree with decision.approved {approved}"
                )))
            }
        }
    }
    if !report.get("policy").is_some_and(Value::is_object) || !report.get("inputs").is_some_and(Value::is_array) {
        return Err(SignError::Report("no policy or inputs".into()));
    }
    // Every input must be pinned by its digest: a statement naming an input without one would
    // vouch for a file nobody can check.
    for input in report["inputs"].as_array().expect("checked") {
        let sha = input.get("sha256").and_then(Value::as_str).unwrap_or("");
        if sha.len() != 64 || parse_digest(sha).is_err() {
            let name = input.get("name").and_then(Value::as_str).unwrap_or("?");
            return Err(SignError::Report(format!(
                "input {name} has no sha256 yet (it is still being computed, or the report was edited)"
            )));
        }
    }
    Ok(approved)
}

/// The subject annotation naming how a subject's digest was computed, when it is not the
/// original directory digest ([`directory_digest`]); a subject without it was signed before the
/// annotation existed and is read with the original scheme.
pub const DIGEST_SCHEME: &str = "digest_scheme";

/// The [`DIGEST_SCHEME`] of the OpenSSF Model Signing v1.0 subject digest (`files` method, the
/// default ignore paths): what `sign --model-path` names a model by.
pub const OMS_FILES_SCHEME: &str = "oms-v1.0-files";

/// The in-toto statement for a claim.
pub fn statement(claim: &Claim<'_>) -> Result<Value, SignError> {
    statement_in(claim, None)
}

/// The in-toto statement for a claim whose model digest was computed by `digest_scheme` (recorded
/// as the subject's `annotations.digest_scheme`; `None`: the original scheme, no annotation).
pub fn statement_in(claim: &Claim<'_>, digest_scheme: Option<&str>) -> Result<Value, SignError> {
    let report = claim.report.value();
    let approved = check_report(report)?;
    // A policy that requires a review: the shells name the unmarked cases
    // (`review::check_required`); this refuses any claim without a review that marks them all.
    if crate::policy::ReviewPolicy::of_report_policy(&report["policy"])
        .map_err(SignError::Report)?
        .is_some()
        && claim
            .review
            .is_none_or(|pin| pin.regressed.marked < pin.regressed.cases)
    {
        return Err(SignError::Report(
            "its policy requires a review marking every regressed case (review: {\"require\": \"regressed\"}): sign with --review".into(),
        ));
    }
    let sha = parse_digest(claim.model_sha256)?;
    let policy = jcs::canonical_json(&report["policy"]).map_err(|e| SignError::Report(e.to_string()))?;
    let inputs: Vec<Value> = report["inputs"]
        .as_array()
        .expect("checked")
        .iter()
        .map(|f| json!({"uri": f["name"], "digest": {"sha256": f["sha256"]}, "annotations": {"role": f["role"], "bytes": f["bytes"]}}))
        .collect();
    let mut statement = json!({
        "_type": STATEMENT_TYPE,
        "subject": [match digest_scheme {
            None => json!({"name": claim.model_name, "digest": {"sha256": sha}}),
            Some(scheme) => json!({"name": claim.model_name, "digest": {"sha256": sha}, "annotations": {DIGEST_SCHEME: scheme}}),
        }],
        "predicateType": PREDICATE_TYPE,
        "predicate": {
            "verifier": {"id": VERIFIER_ID, "version": {"deploy-gate": env!("CARGO_PKG_VERSION")}},
            "timeVerified": time::format_rfc3339(claim.time_verified),
            "resourceUri": claim.target,
            "policy": {"uri": POLICY_URI, "digest": {"sha256": hex::encode(Sha256::digest(policy.as_bytes()))}},
            "inputAttestations": inputs,
            "verificationResult": VerificationResult::of(approved).as_str(),
            "verifiedLevels": if approved { vec![APPROVED_LEVEL] } else { Vec::new() },
            REPORT_KEY: report,
        }
    });
    if let Some(review) = claim.review {
        statement["predicate"][REVIEW_KEY] = serde_json::to_value(review).expect("a pin serializes");
    }
    Ok(statement)
}

fn signature(key: &SigningKey, payload: &[u8]) -> Signature {
    let sig = key.sign(&dsse::pae(PAYLOAD_TYPE, payload));
    Signature {
        keyid: keys::keyid(&key.verifying_key()),
        sig: dsse::encode(&sig.to_bytes()),
    }
}

/// A JSON value written with the value at `path` (a chain of object keys) replaced by raw JSON
/// text.
struct Spliced<'a> {
    value: &'a Value,
    path: &'a [&'a str],
    raw: &'a RawValue,
}

impl Serialize for Spliced<'_> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        let Some((first, rest)) = self.path.split_first() else {
            return self.raw.serialize(s);
        };
        let object = self.value.as_object().expect("the path runs through objects");
        let mut map = s.serialize_map(Some(object.len()))?;
        for (key, value) in object {
            if key == first {
                map.serialize_entry(
                    key,
                    &Spliced {
                        value,
                        path: rest,
                        raw: self.raw,
                    },
                )?;
            } else {
                map.serialize_entry(key, value)?;
            }
        }
        map.end()
    }
}

/// Signs a claim: the statement as compact JSON in a one-signature envelope, the report in it as
/// its text was given.
pub fn sign(claim: &Claim<'_>, key: &SigningKey) -> Result<Envelope, SignError> {
    sign_in(claim, key, None)
}

/// [`sign`], the model digest computed by `digest_scheme` ([`statement_in`]).
pub fn sign_in(claim: &Claim<'_>, key: &SigningKey, digest_scheme: Option<&str>) -> Result<Envelope, SignError> {
    let statement = statement_in(claim, digest_scheme)?;
    let spliced = Spliced {
        value: &statement,
        path: &["predicate", REPORT_KEY],
        raw: &claim.report.text,
    };
    let payload = serde_json::to_vec(&spliced).expect("a statement serializes");
    let sig = signature(key, &payload);
    Ok(Envelope {
        payload_type: PAYLOAD_TYPE.into(),
        payload: dsse::encode(&payload),
        signatures: vec![sig],
    })
}

/// Adds a second (third, …) signature to an envelope after checking that its statement makes
/// the same claim: same report, subject and target (its time is kept).
pub fn cosign(existing: &Envelope, claim: &Claim<'_>, key: &SigningKey) -> Result<Envelope, SignError> {
    cosign_in(existing, claim, key, None)
}

/// [`cosign`], the model digest computed by `digest_scheme` ([`statement_in`]).
pub fn cosign_in(
    existing: &Envelope,
    claim: &Claim<'_>,
    key: &SigningKey,
    digest_scheme: Option<&str>,
) -> Result<Envelope, SignError> {
    let cosign_err = |m: &str| SignError::Cosign(m.to_owned());
    if existing.payload_type != PAYLOAD_TYPE {
        return Err(cosign_err("its payloadType is not an in-toto statement"));
    }
    let payload = dsse::decode(&existing.payload).ok_or_else(|| cosign_err("its payload is not base64"))?;
    // Read as the verifier reads it: a statement with a duplicate key means different things
    // to different parsers, and must not gain a signature.
    let found = strict::from_slice(&payload).map_err(|e| SignError::Cosign(format!("its payload: {e}")))?;
    let mut wanted = statement_in(claim, digest_scheme)?;
    wanted["predicate"]["timeVerified"] = found["predicate"]["timeVerified"].clone();
    for (what, pointer) in [
        ("report", report_pointer()),
        ("subject", json_pointer(&["subject"])),
        ("target", json_pointer(&["predicate", "resourceUri"])),
        ("review", json_pointer(&["predicate", REVIEW_KEY])),
    ] {
        if found.pointer(&pointer) != wanted.pointer(&pointer) {
            return Err(SignError::Cosign(format!("its {what} differs from the one given")));
        }
    }
    if found != wanted {
        return Err(cosign_err("its statement differs from the one this report gives"));
    }
    let id = keys::keyid(&key.verifying_key());
    if existing.signatures.iter().any(|s| s.keyid == id) {
        return Err(cosign_err("this key has signed it already"));
    }
    let mut out = existing.clone();
    out.signatures.push(signature(key, &payload));
    Ok(out)
}

/// Co-signs the envelope whose bytes were just verified (`verified` is what [`verify`] returned
/// for `envelope_bytes`): the claim is the verified statement's own (its report, the subject
/// that matched, its target), so the signer adds a signature to exactly the decision they
/// reviewed, and the result is the envelope [`cosign`] gives for that claim (what
/// `deploy-gate sign --envelope` writes). The statement's bytes are kept as they are.
///
/// Refused when the envelope's payload is not the statement that was verified, or when the
/// statement is not one [`cosign`] would add to (several subjects, another signer's shape, a
/// key that signed it already).
pub fn cosign_verified(envelope_bytes: &[u8], verified: &Verified, key: &SigningKey) -> Result<Envelope, SignError> {
    let existing: Envelope = serde_json::from_slice(envelope_bytes)
        .map_err(|e| SignError::Cosign(format!("it is not a DSSE envelope: {e}")))?;
    let payload =
        dsse::decode(&existing.payload).ok_or_else(|| SignError::Cosign("its payload is not base64".into()))?;
    if hex::encode(Sha256::digest(&payload)) != verified.payload_sha256 {
        return Err(SignError::Cosign(
            "its statement is not the one that was verified".into(),
        ));
    }
    // The statement verified, so it is signed as it stands (by whichever version made it): no
    // statement is rebuilt here. Whether this key signed it already is decided by the signatures
    // that verified, not by the envelope's keyid hints (a forged hint neither blocks a co-signer
    // nor hides a second signature by one key, which the verifier would count once).
    let id = keys::keyid(&key.verifying_key());
    if verified.signers.contains(&id) {
        return Err(SignError::Cosign("this key has signed it already".into()));
    }
    let mut out = existing;
    out.signatures.push(signature(key, &payload));
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::attest::keys::signing_key_from_seed;

    #[test]
    fn pointers_escape_tilde_before_slash() {
        assert_eq!(pointer_token("a/b"), "a~1b");
        assert_eq!(pointer_token("m~n"), "m~0n");
        // A key spelling an escape itself: `~1` must not come back as `/`.
        assert_eq!(pointer_token("~1"), "~01");
        assert_eq!(pointer_token("/~"), "~1~0");
        assert_eq!(json_pointer(&[]), "");
        assert_eq!(json_pointer(&[""]), "/");
        let v = json!({"a/b": {"m~n": {"~1": 1, "/": 2}}, "a": {"b": 3}});
        assert_eq!(v.pointer(&json_pointer(&["a/b", "m~n", "~1"])), Some(&json!(1)));
        assert_eq!(v.pointer(&json_pointer(&["a/b", "m~n", "/"])), Some(&json!(2)));
        assert_eq!(v.pointer(&json_pointer(&["a", "b"])), Some(&json!(3)));
    }

    #[test]
    fn the_statement_carries_the_report_as_written_and_refuses_a_key_twice() {
        let text = serde_json::to_string_pretty(&report()).unwrap().replacen(
            "{\n",
            "{\n  \"wide\": 123456789012345678901234567890.50e-3,\n",
            1,
        );
        let parsed = ReportToSign::parse(&text).unwrap();
        let claim = Claim {
            report: &parsed,
            model_name: "agent-7b",
            model_sha256: MODEL,
            target: "prod",
            time_verified: NOW,
            review: None,
        };
        let key = signing_key_from_seed([3; 32]);
        let envelope = sign(&claim, &key).unwrap();
        let payload = String::from_utf8(dsse::decode(&envelope.payload).unwrap()).unwrap();
        assert!(payload.contains(&crate::json::layout::compact(&text)), "{payload}");
        // The rest of the statement is what `statement` gives.
        assert_eq!(
            strict::from_slice(payload.as_bytes()).unwrap(),
            statement(&claim).unwrap()
        );
        let verified = verified(&serde_json::to_vec(&envelope).unwrap(), &[key.verifying_key()], 1).unwrap();
        assert_eq!(verified.report_text, crate::json::layout::compact(&text));
        let whole: Value = serde_json::from_str(&verified.to_json()).unwrap();
        assert_eq!(whole["statement"], statement(&claim).unwrap());

        let twice = ReportToSign::parse("{\"schema\": 1, \"schema\": 2}").err().unwrap();
        assert!(twice.to_string().contains("more than once"), "{twice}");
    }

    #[test]
    fn the_report_pointer_finds_the_report_under_its_key() {
        assert_eq!(report_pointer(), "/predicate/https:~1~1deploy-gate.dev~1report~1v1");
        let statement = json!({"predicate": {REPORT_KEY: {"schema": "x"}, "https:": {"": {}}}});
        assert_eq!(statement.pointer(&report_pointer()), Some(&json!({"schema": "x"})));
    }

    const MODEL: &str = "abababababababababababababababababababababababababababababababab";
    const NOW: i64 = 1_795_984_397;

    fn report() -> Value {
        json!({
            "schema": crate::report::SCHEMA,
            "policy": {"min_samples": 20, "task_regression_tol": 0.05},
            "inputs": [{"role": "audit", "name": "audit.jsonl", "bytes": 3, "sha256": "0f".repeat(32)}],
            "decision": {"approved": true, "reason": "approved: no regression on task or trajectory"},
            "cases": [{"pipeline_id": "p1", "status": "both_pass"}],
        })
    }

    fn signed(report: &Value, key: &SigningKey, target: &str) -> Vec<u8> {
        let claim = Claim {
            report: &ReportToSign::of_value(report),
            model_name: "agent-7b",
            model_sha256: MODEL,
            target,
            time_verified: NOW - 60,
            review: None,
        };
        serde_json::to_vec_pretty(&sign(&claim, key).unwrap()).unwrap()
    }

    /// A statement signed as it is, by hand (what a signer with a key could make).
    fn signed_by_hand(statement: &Value, key: &SigningKey) -> Vec<u8> {
        let payload = serde_json::to_vec(statement).unwrap();
        let envelope = Envelope {
            payload_type: PAYLOAD_TYPE.into(),
            payload: dsse::encode(&payload),
            signatures: vec![signature(key, &payload)],
        };
        serde_json::to_vec(&envelope).unwrap()
    }

    fn verified(
        envelope: &[u8],
        trusted: &[ed25519_dalek::VerifyingKey],
        threshold: usize,
    ) -> Result<Verified, VerifyError> {
        verify(
            envelope,
            &Requirements {
                trusted,
                threshold,
                subject_sha256: None,
                target: None,
                now: NOW,
                max_age: 3600,
                already_applied: &|_| false,
                limits: Limits::default(),
            },
        )
    }

    #[test]
    fn an_inconclusive_decision_is_failed_with_no_level_and_its_outcome_must_agree() {
        let key = signing_key_from_seed([3; 32]);
        let mut r = report();
        r["decision"] = json!({"approved": false, "outcome": "inconclusive", "reason": "inconclusive: task …"});
        let envelope = signed(&r, &key, "file:config.yaml");
        let v = verified(&envelope, &[key.verifying_key()], 1).unwrap();
        assert_eq!((v.approved, v.outcome), (false, crate::decision::Outcome::Inconclusive));
        let pred = &v.statement["predicate"];
        assert_eq!(pred["verificationResult"], "FAILED");
        assert_eq!(pred["verifiedLevels"], json!([]));
        // A report made before outcomes existed: approved or blocked from `approved`.
        let v = verified(&signed(&report(), &key, "t"), &[key.verifying_key()], 1).unwrap();
        assert_eq!(v.outcome, crate::decision::Outcome::Approved);
        // The signer refuses an outcome that contradicts `approved`…
        for (approved, outcome) in [(true, "inconclusive"), (false, "approved"), (true, "maybe")] {
            let mut bad = report();
            bad["decision"] = json!({"approved": approved, "outcome": outcome, "reason": "r"});
            let claim = Claim {
                report: &ReportToSign::of_value(&bad),
                model_name: "m",
                model_sha256: MODEL,
                target: "t",
                time_verified: NOW,
                review: None,
            };
            assert!(matches!(sign(&claim, &key), Err(SignError::Report(_))), "{outcome}");
        }
        // …and the verifier an envelope that carries one anyway (signed by hand).
        let good: Envelope = serde_json::from_slice(&envelope).unwrap();
        let mut statement: Value = serde_json::from_slice(&dsse::decode(&good.payload).unwrap()).unwrap();
        statement["predicate"][REPORT_KEY]["decision"]["outcome"] = json!("approved");
        let payload = serde_json::to_vec(&statement).unwrap();
        let forged = Envelope {
            payload_type: PAYLOAD_TYPE.into(),
            payload: dsse::encode(&payload),
            signatures: vec![signature(&key, &payload)],
        };
        let err = verified(&serde_json::to_vec(&forged).unwrap(), &[key.verifying_key()], 1).unwrap_err();
        assert!(matches!(err, VerifyError::Predicate(_)), "{err}");
        assert!(
            err.to_string().contains("does not match verificationResult FAILED"),
            "{err}"
        );
    }

    #[test]
    fn cosigning_a_verified_envelope_is_what_cosign_gives_for_its_claim() {
        let (a, b) = (signing_key_from_seed([1; 32]), signing_key_from_seed([2; 32]));
        let r = report();
        let one = signed(&r, &a, "file:config.yaml");
        let v = verified(&one, &[a.verifying_key()], 1).unwrap();
        assert_eq!(v.report(), &r, "the report comes out of the verified statement");
        let two = cosign_verified(&one, &v, &b).unwrap();
        // The same envelope as the CLI's `sign --envelope` (cosign with the claim given again).
        let existing: Envelope = serde_json::from_slice(&one).unwrap();
        let claim = Claim {
            report: &ReportToSign::of_value(&r),
            model_name: "agent-7b",
            model_sha256: MODEL,
            target: "file:config.yaml",
            time_verified: NOW,
            review: None,
        };
        assert_eq!(two, cosign(&existing, &claim, &b).unwrap());
        // The statement's bytes are kept; the first signature too; one signature is added.
        assert_eq!(two.payload, existing.payload);
        assert_eq!(two.signatures.len(), 2);
        assert_eq!(two.signatures[0], existing.signatures[0]);
        assert_eq!(two.signatures[1].keyid, keys::keyid(&b.verifying_key()));
        let bytes = serde_json::to_vec(&two).unwrap();
        let both = verified(&bytes, &[a.verifying_key(), b.verifying_key()], 2).unwrap();
        assert_eq!(both.signers.len(), 2);
        assert_eq!(both.payload_sha256, v.payload_sha256);
        // Only A's signature does not meet a threshold of 2.
        assert!(matches!(
            verified(&one, &[a.verifying_key(), b.verifying_key()], 2),
            Err(VerifyError::Signature {
                verified: 1,
                required: 2
            })
        ));
    }

    #[test]
    fn a_review_is_pinned_verified_and_cosigned_only_with_the_same_file() {
        let (a, b) = (signing_key_from_seed([1; 32]), signing_key_from_seed([2; 32]));
        let mut r = report();
        r["cases"] =
            json!([{"pipeline_id": "p1", "status": "regressed"}, {"pipeline_id": "p2", "status": "regressed"}]);
        let report = ReportToSign::of_value(&r);
        let file = b"{\"pipeline_id\": \"p1\", \"mark\": \"accepted\", \"note\": \"fine\"}\n";
        let review = crate::review::Review::parse("review.jsonl", file).unwrap();
        let pin = crate::review::ReviewPin::of(&review, report.text()).unwrap();
        let claim = |review| Claim {
            report: &report,
            model_name: "agent-7b",
            model_sha256: MODEL,
            target: "file:config.yaml",
            time_verified: NOW,
            review,
        };
        let envelope = sign(&claim(Some(&pin)), &a).unwrap();
        let bytes = serde_json::to_vec(&envelope).unwrap();
        let v = verified(&bytes, &[a.verifying_key()], 1).unwrap();
        assert_eq!(v.review(), Some(pin.clone()));
        assert!(v.review().unwrap().pins(file));
        assert_eq!(
            (pin.marks.accepted, pin.regressed.cases, pin.regressed.marked),
            (1, 2, 1)
        );
        let summary = serde_json::to_value(Summary::of(&v)).unwrap();
        assert_eq!(summary["review"]["sha256"], json!(review.sha256));
        assert_eq!(summary["review"]["regressed"], json!({"cases": 2, "marked": 1}));
        // Without a review, the summary has no such key (as before reviews existed).
        let plain = verified(&signed(&r, &a, "file:config.yaml"), &[a.verifying_key()], 1).unwrap();
        assert_eq!(plain.review(), None);
        assert!(serde_json::to_value(Summary::of(&plain))
            .unwrap()
            .get("review")
            .is_none());
        // A co-signer gives the same review, or is refused.
        assert!(cosign(&envelope, &claim(Some(&pin)), &b).is_ok());
        let other = crate::review::ReviewPin {
            sha256: "ab".repeat(32),
            ..pin.clone()
        };
        for wrong in [None, Some(&other)] {
            assert_eq!(
                cosign(&envelope, &claim(wrong), &b).unwrap_err(),
                SignError::Cosign("its review differs from the one given".into())
            );
        }
        // A statement whose review pin is not one is refused by the verifier (signed by hand).
        for bad in [
            json!("yes"),
            json!({"sha256": "x", "bytes": 1}),
            json!({"sha256": "ab".repeat(32), "bytes": 1, "marks": {"accepted": 0, "label_wrong": 0, "needs_fix": 0}, "regressed": {"cases": 0, "marked": 3}}),
        ] {
            let mut statement = statement(&claim(None)).unwrap();
            statement["predicate"][REVIEW_KEY] = bad.clone();
            let err = verified(&signed_by_hand(&statement, &a), &[a.verifying_key()], 1).unwrap_err();
            assert!(
                matches!(&err, VerifyError::Predicate(m) if m.contains("the review it pins")),
                "{bad}: {err}"
            );
        }
    }

    #[test]
    fn a_policy_that_requires_a_review_is_held_at_signing_and_at_verifying() {
        let a = signing_key_from_seed([1; 32]);
        let mut r = report();
        r["policy"]["review"] = json!({"require": "regressed"});
        r["cases"] = json!([{"pipeline_id": "p1", "status": "regressed"}, {"pipeline_id": 2, "status": "regressed"}]);
        let report = ReportToSign::of_value(&r);
        let pin_of = |file: &[u8]| {
            let review = crate::review::Review::parse("review.jsonl", file).unwrap();
            (
                crate::review::check_required(report.text(), &r["policy"], Some(&review)),
                crate::review::ReviewPin::of(&review, report.text()).unwrap(),
            )
        };
        let claim = |review| Claim {
            report: &report,
            model_name: "agent-7b",
            model_sha256: MODEL,
            target: "t",
            time_verified: NOW,
            review,
        };
        // Without a review, or with one that leaves a regressed case unmarked: refused, the
        // shells' check naming the cases.
        let none = crate::review::check_required(report.text(), &r["policy"], None).unwrap_err();
        assert!(
            none.contains("2 of 2 unmarked, no review given (--review FILE): \"p1\", 2"),
            "{none}"
        );
        assert!(matches!(sign(&claim(None), &a), Err(SignError::Report(m)) if m.contains("requires a review")));
        let (check, partial) = pin_of(b"{\"pipeline_id\": \"p1\", \"mark\": \"accepted\"}\n");
        assert!(check.unwrap_err().contains("1 of 2 unmarked: 2"));
        assert!(matches!(sign(&claim(Some(&partial)), &a), Err(SignError::Report(_))));
        // Every regressed case marked: signed, and it verifies.
        let (check, full) = pin_of(
            b"{\"pipeline_id\": \"p1\", \"mark\": \"accepted\"}\n{\"pipeline_id\": 2, \"mark\": \"needs_fix\"}\n",
        );
        assert_eq!(check, Ok(()));
        let envelope = sign(&claim(Some(&full)), &a).unwrap();
        assert!(verified(&serde_json::to_vec(&envelope).unwrap(), &[a.verifying_key()], 1).is_ok());
        // A statement under that policy signed by hand without the review, or with a pin that
        // marks fewer cases than the report has, is refused (check `review`).
        let short = crate::review::ReviewPin {
            regressed: crate::review::RegressedMarked { cases: 1, marked: 1 },
            ..full.clone()
        };
        for pin in [None, Some(&partial), Some(&short)] {
            let mut statement = statement(&claim(Some(&full))).unwrap();
            match pin {
                None => {
                    statement["predicate"].as_object_mut().unwrap().remove(REVIEW_KEY);
                }
                Some(pin) => statement["predicate"][REVIEW_KEY] = serde_json::to_value(pin).unwrap(),
            }
            let err = verified(&signed_by_hand(&statement, &a), &[a.verifying_key()], 1).unwrap_err();
            assert_eq!(err.kind(), Check::Review, "{pin:?}: {err}");
            assert!(
                err.to_string()
                    .contains("requires a review marking every regressed case"),
                "{err}"
            );
        }
    }

    #[test]
    fn cosigning_refuses_another_statement_than_the_verified_one_and_a_second_signature_by_a_key() {
        let (a, b) = (signing_key_from_seed([1; 32]), signing_key_from_seed([2; 32]));
        let r = report();
        let one = signed(&r, &a, "file:config.yaml");
        let v = verified(&one, &[a.verifying_key()], 1).unwrap();
        // Another decision (another target), signed by the same key: its statement is not the
        // one verified, so `v` does not vouch for it.
        let other = signed(&r, &a, "file:other.yaml");
        let err = cosign_verified(&other, &v, &b).unwrap_err();
        assert_eq!(
            err,
            SignError::Cosign("its statement is not the one that was verified".into())
        );
        // A key that signed already does not sign twice.
        let err = cosign_verified(&one, &v, &a).unwrap_err();
        assert_eq!(err, SignError::Cosign("this key has signed it already".into()));
        assert!(matches!(
            cosign_verified(b"not json", &v, &b),
            Err(SignError::Cosign(_))
        ));
        // The envelope's text as written (pretty, one newline at the end).
        let text = cosign_verified(&one, &v, &b).unwrap().to_json();
        assert!(text.ends_with("}\n") && !text.ends_with("\n\n"));
        assert_eq!(
            serde_json::from_str::<Envelope>(&text).unwrap(),
            cosign_verified(&one, &v, &b).unwrap()
        );
    }

    #[test]
    fn who_signed_already_is_decided_by_the_verified_signatures_not_the_keyid_hints() {
        let (a, b) = (signing_key_from_seed([1; 32]), signing_key_from_seed([2; 32]));
        let one = signed(&report(), &a, "file:config.yaml");
        let mut envelope: Envelope = serde_json::from_slice(&one).unwrap();
        // A's signature under another hint: A has still signed it, and signs no second time.
        envelope.signatures[0].keyid = "not-a-keyid".into();
        let rehinted = serde_json::to_vec(&envelope).unwrap();
        let v = verified(&rehinted, &[a.verifying_key()], 1).unwrap();
        let err = cosign_verified(&rehinted, &v, &a).unwrap_err();
        assert_eq!(err, SignError::Cosign("this key has signed it already".into()));
        // A forged entry hinting at B's key id does not stop B from co-signing.
        let mut forged: Envelope = serde_json::from_slice(&one).unwrap();
        let mut fake = forged.signatures[0].clone();
        fake.keyid = keys::keyid(&b.verifying_key());
        fake.sig = dsse::encode(&[0u8; 64]);
        forged.signatures.push(fake);
        let forged = serde_json::to_vec(&forged).unwrap();
        let v = verified(&forged, &[a.verifying_key()], 1).unwrap();
        let cosigned = cosign_verified(&forged, &v, &b).unwrap();
        let both = verified(
            &serde_json::to_vec(&cosigned).unwrap(),
            &[a.verifying_key(), b.verifying_key()],
            2,
        )
        .unwrap();
        assert_eq!(both.signers.len(), 2);
    }
}
