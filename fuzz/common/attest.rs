//! What the envelope and statement targets share: the fixed trusted key, the fixed clock, and
#![allow(dead_code)]
//! the checks that a verified decision says what its signed statement says.

use deploy_gate::attest::dsse::{self, Envelope, Signature, PAYLOAD_TYPE};
use deploy_gate::attest::keys::{keyid, signing_key_from_seed};
use deploy_gate::attest::time::parse_rfc3339;
use deploy_gate::attest::{verify, Limits, Requirements, Verified, VerifyError, REPORT_KEY};
use ed25519_dalek::{Signer, SigningKey, VerifyingKey};
use sha2::{Digest, Sha256};

/// The seed of the fixed signing key (the corpus envelopes are signed with it).
pub const KEY_SEED: [u8; 32] = [7; 32];
/// The fixed clock: 2026-12-01T12:00:00Z.
pub const NOW: i64 = 1_796_126_400;

pub fn key() -> SigningKey {
    signing_key_from_seed(KEY_SEED)
}

/// Verifies with the fixed key as the only trusted one, threshold 1, the fixed clock, a
/// maximum age of 100 years (so the fuzzer reaches past the time checks) and an empty ledger.
pub fn verify_fixed(envelope: &[u8]) -> Result<Verified, VerifyError> {
    let trusted: [VerifyingKey; 1] = [key().verifying_key()];
    verify(
        envelope,
        &Requirements {
            trusted: &trusted,
            threshold: 1,
            subject_sha256: None,
            target: None,
            now: NOW,
            max_age: 100 * 365 * 86_400,
            already_applied: &|_| false,
            limits: Limits::default(),
        },
    )
}

/// An envelope of `payload` signed by the fixed key.
pub fn signed(payload: &[u8]) -> Vec<u8> {
    let key = key();
    let sig = key.sign(&dsse::pae(PAYLOAD_TYPE, payload));
    let env = Envelope {
        payload_type: PAYLOAD_TYPE.into(),
        payload: dsse::encode(payload),
        signatures: vec![Signature {
            keyid: keyid(&key.verifying_key()),
            sig: dsse::encode(&sig.to_bytes()),
        }],
    };
    serde_json::to_vec(&env).expect("an envelope serializes")
}

/// A verified decision must be what its signed payload says, read independently here.
pub fn check_verified(v: &Verified, payload: &[u8]) {
    assert_eq!(v.payload_sha256, hex::encode(Sha256::digest(payload)), "payload_sha256");
    assert_eq!(v.signers, vec![keyid(&key().verifying_key())], "signers");
    let statement: serde_json::Value = serde_json::from_slice(payload).expect("a verified payload is JSON");
    assert_eq!(v.statement, statement, "the statement returned is not the payload");
    let predicate = &statement["predicate"];
    assert_eq!(
        v.approved,
        predicate["verificationResult"] == "PASSED",
        "approved but verificationResult is {}",
        predicate["verificationResult"]
    );
    assert_eq!(Some(v.target.as_str()), predicate["resourceUri"].as_str(), "target");
    let time = predicate["timeVerified"].as_str().and_then(|t| parse_rfc3339(t).ok());
    assert_eq!(time, Some(v.time_verified), "timeVerified");
    assert!(
        v.time_verified <= NOW + deploy_gate::attest::MAX_SKEW_SECONDS,
        "from the future"
    );
    assert!(
        !v.report().is_null() || predicate.get(REPORT_KEY).is_some(),
        "no report"
    );
    let subjects = statement["subject"]
        .as_array()
        .expect("a verified statement has subjects");
    assert!(
        subjects
            .iter()
            .any(|s| s["name"].as_str() == Some(v.model_name.as_str())
                && s["digest"]["sha256"].as_str().map(str::to_ascii_lowercase).as_deref()
                    == Some(v.model_sha256.as_str())),
        "the model ({}, {}) is none of the subjects (digests compare as lowercase hex)",
        v.model_name,
        v.model_sha256
    );
}
