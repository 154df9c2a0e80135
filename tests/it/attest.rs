//! Signing and verification: every rejection has its own named check.

use deploy_gate::attest::dsse::{self, Envelope};
use deploy_gate::attest::keys::{keyid, signing_key_from_seed};
use deploy_gate::attest::{cosign, sign, verify, Claim, Requirements, Verified, VerifyError};
use ed25519_dalek::{SigningKey, VerifyingKey};
use serde_json::{json, Value};

const NOW: i64 = 1_795_984_397;
const MODEL: &str = "abababababababababababababababababababababababababababababababab";

fn report(approved: bool) -> Value {
    json!({
        "schema": "deploy-gate/report/v1",
        "policy": {"min_samples": 20, "max_samples": 200, "seed": 0, "task_regression_tol": 0.0},
        "inputs": [{"role": "audit", "name": "audit.jsonl", "bytes": 3, "sha256": "00".repeat(32)}],
        "decision": {"approved": approved, "reason": if approved { "approved: no regression on task or trajectory" } else { "blocked: task accuracy regressed" }},
    })
}

fn key(n: u8) -> SigningKey {
    signing_key_from_seed([n; 32])
}

fn signed(approved: bool, signer: &SigningKey, time: i64) -> Vec<u8> {
    let r = report(approved);
    let claim = Claim {
        report: &deploy_gate::attest::ReportToSign::of_value(&r),
        model_name: "agent-7b",
        model_sha256: MODEL,
        target: "file:config.yaml",
        time_verified: time,
        review: None,
    };
    serde_json::to_vec(&sign(&claim, signer).unwrap()).unwrap()
}

fn check(envelope: &[u8], trusted: &[VerifyingKey], threshold: usize) -> Result<Verified, VerifyError> {
    verify(
        envelope,
        &Requirements {
            trusted,
            threshold,
            subject_sha256: Some(MODEL),
            target: Some("file:config.yaml"),
            now: NOW,
            max_age: 24 * 3600,
            already_applied: &|_| false,
            limits: Default::default(),
        },
    )
}

fn edit(envelope: &[u8], f: impl FnOnce(&mut Envelope)) -> Vec<u8> {
    let mut env: Envelope = serde_json::from_slice(envelope).unwrap();
    f(&mut env);
    serde_json::to_vec(&env).unwrap()
}

#[test]
fn a_good_envelope_verifies_and_names_its_signer() {
    let k = key(1);
    let v = check(
        &signed(true, &k, NOW - 60),
        &[key(9).verifying_key(), k.verifying_key()],
        1,
    )
    .unwrap();
    assert!(v.approved);
    assert_eq!(v.signers, vec![keyid(&k.verifying_key())]);
    assert_eq!(
        (v.model_name.as_str(), v.target.as_str()),
        ("agent-7b", "file:config.yaml")
    );
    assert_eq!(v.report()["decision"]["approved"], true);
    let statement = &v.statement;
    assert_eq!(
        statement["predicate"]["verifiedLevels"],
        json!(["DEPLOY_GATE_APPROVED"])
    );
    assert_eq!(
        statement["predicate"]["inputAttestations"][0]["digest"]["sha256"],
        "00".repeat(32)
    );
    let failed = check(&signed(false, &k, NOW), &[k.verifying_key()], 1).unwrap();
    assert!(!failed.approved);
    assert_eq!(failed.statement["predicate"]["verificationResult"], "FAILED");
}

#[test]
fn url_safe_base64_is_accepted() {
    let k = key(1);
    let env = edit(&signed(true, &k, NOW), |e| {
        e.payload = e
            .payload
            .replace('+', "-")
            .replace('/', "_")
            .trim_end_matches('=')
            .to_owned();
        for s in &mut e.signatures {
            s.sig = s.sig.replace('+', "-").replace('/', "_");
        }
    });
    assert!(check(&env, &[k.verifying_key()], 1).is_ok());
}

fn rejected(result: Result<Verified, VerifyError>) -> &'static str {
    result.expect_err("must be rejected").check()
}

#[test]
fn each_tampering_is_rejected_with_its_own_check() {
    let k = key(1);
    let trusted = [k.verifying_key()];
    let good = signed(true, &k, NOW - 60);

    let flipped = edit(&good, |e| {
        let mut p = dsse::decode(&e.payload).unwrap();
        let i = p.len() / 2;
        p[i] ^= 1;
        e.payload = dsse::encode(&p);
    });
    assert_eq!(
        rejected(check(&flipped, &trusted, 1)),
        "signature",
        "a changed payload byte"
    );
    let retyped = edit(&good, |e| e.payload_type = "application/json".into());
    assert_eq!(
        rejected(check(&retyped, &trusted, 1)),
        "signature",
        "a changed payloadType (PAE covers it)"
    );
    assert_eq!(
        rejected(check(&signed(true, &key(2), NOW), &trusted, 1)),
        "signature",
        "an untrusted key"
    );

    let impostor = edit(&signed(true, &key(2), NOW), |e| {
        e.signatures[0].keyid = keyid(&k.verifying_key())
    });
    assert_eq!(
        rejected(check(&impostor, &trusted, 1)),
        "signature",
        "a keyid naming a trusted key on another key's signature"
    );

    let doubled = edit(&good, |e| e.signatures.push(e.signatures[0].clone()));
    let two = [k.verifying_key(), key(2).verifying_key()];
    assert_eq!(
        check(&doubled, &two, 2).unwrap_err(),
        VerifyError::Signature {
            verified: 1,
            required: 2
        },
        "one signature twice"
    );

    assert_eq!(rejected(check(b"{\"payload\": 1}", &trusted, 1)), "envelope");
    assert_eq!(
        rejected(check(&edit(&good, |e| e.signatures.clear()), &trusted, 1)),
        "envelope"
    );

    let r = report(true);
    let other_model = |digest: &str, target: &str| {
        let claim = Claim {
            report: &deploy_gate::attest::ReportToSign::of_value(&r),
            model_name: "m",
            model_sha256: digest,
            target,
            time_verified: NOW,
            review: None,
        };
        serde_json::to_vec(&sign(&claim, &k).unwrap()).unwrap()
    };
    assert_eq!(
        rejected(check(&other_model(&"cd".repeat(32), "file:config.yaml"), &trusted, 1)),
        "subject_digest"
    );
    assert_eq!(
        rejected(check(&other_model(MODEL, "file:other.yaml"), &trusted, 1)),
        "target"
    );
    assert_eq!(
        rejected(check(&signed(true, &k, NOW - 25 * 3600), &trusted, 1)),
        "too_old"
    );
    assert_eq!(
        rejected(check(&signed(true, &k, NOW + 3600), &trusted, 1)),
        "from_the_future"
    );
    assert!(
        check(&signed(true, &k, NOW + 120), &trusted, 1).is_ok(),
        "small clock skew is tolerated"
    );

    let applied = check(&good, &trusted, 1).unwrap().payload_sha256;
    let ledger = |d: &str| d == applied;
    let replay = verify(
        &good,
        &Requirements {
            trusted: &trusted,
            threshold: 1,
            subject_sha256: Some(MODEL),
            target: Some("file:config.yaml"),
            now: NOW,
            max_age: 86400,
            already_applied: &ledger,
            limits: Default::default(),
        },
    );
    assert_eq!(rejected(replay), "replayed");
}

#[test]
fn statements_of_another_kind_are_rejected() {
    let k = key(1);
    let trusted = [k.verifying_key()];
    let resign = |statement: Value, payload_type: &str| {
        let payload = serde_json::to_vec(&statement).unwrap();
        let sig = ed25519_dalek::Signer::sign(&k, &dsse::pae(payload_type, &payload));
        serde_json::to_vec(&Envelope {
            payload_type: payload_type.into(),
            payload: dsse::encode(&payload),
            signatures: vec![dsse::Signature {
                keyid: String::new(),
                sig: dsse::encode(&sig.to_bytes()),
            }],
        })
        .unwrap()
    };
    let good: Envelope = serde_json::from_slice(&signed(true, &k, NOW)).unwrap();
    let statement: Value = serde_json::from_slice(&dsse::decode(&good.payload).unwrap()).unwrap();
    assert_eq!(
        rejected(check(&resign(statement.clone(), "application/json"), &trusted, 1)),
        "payload_type"
    );
    let mut wrong = statement.clone();
    wrong["_type"] = json!("https://in-toto.io/Statement/v0.1");
    assert_eq!(
        rejected(check(&resign(wrong, dsse::PAYLOAD_TYPE), &trusted, 1)),
        "statement_type"
    );
    let mut wrong = statement.clone();
    wrong["predicateType"] = json!("https://slsa.dev/provenance/v1");
    assert_eq!(
        rejected(check(&resign(wrong, dsse::PAYLOAD_TYPE), &trusted, 1)),
        "predicate"
    );
    let mut lying = statement.clone();
    lying["predicate"]["verificationResult"] = json!("PASSED");
    lying["predicate"]["https://deploy-gate.dev/report/v1"]["decision"]["approved"] = json!(false);
    assert_eq!(
        rejected(check(&resign(lying, dsse::PAYLOAD_TYPE), &trusted, 1)),
        "predicate"
    );
}

#[test]
fn two_person_approval() {
    let (a, b) = (key(1), key(2));
    let r = report(true);
    let claim = Claim {
        report: &deploy_gate::attest::ReportToSign::of_value(&r),
        model_name: "agent-7b",
        model_sha256: MODEL,
        target: "file:config.yaml",
        time_verified: NOW - 10,
        review: None,
    };
    let first = sign(&claim, &a).unwrap();
    let later = Claim {
        time_verified: NOW,
        review: None,
        ..claim
    };
    let both = cosign(&first, &later, &b).unwrap();
    assert_eq!(both.payload, first.payload, "the statement is kept, time included");
    let bytes = serde_json::to_vec(&both).unwrap();
    let v = check(&bytes, &[a.verifying_key(), b.verifying_key()], 2).unwrap();
    assert_eq!(v.signers.len(), 2);
    assert!(cosign(&both, &later, &a).is_err(), "the same key twice");
    let other = Claim {
        target: "file:elsewhere.yaml",
        ..later
    };
    assert!(cosign(&first, &other, &b).unwrap_err().to_string().contains("target"));
    let blocked = report(false);
    let other = Claim {
        report: &deploy_gate::attest::ReportToSign::of_value(&blocked),
        ..later
    };
    assert!(cosign(&first, &other, &b).unwrap_err().to_string().contains("report"));
}

#[test]
fn a_report_with_an_input_whose_sha256_is_not_in_yet_is_not_signed() {
    for sha in ["", "pending", &"0".repeat(63)] {
        let mut r = report(true);
        r["inputs"][0]["sha256"] = json!(sha);
        let claim = Claim {
            report: &deploy_gate::attest::ReportToSign::of_value(&r),
            model_name: "agent-7b",
            model_sha256: MODEL,
            target: "file:config.yaml",
            time_verified: NOW,
            review: None,
        };
        let err = sign(&claim, &key(1)).unwrap_err().to_string();
        assert!(err.contains("audit.jsonl has no sha256"), "{err}");
    }
}

/// The statement of `signed(true, k, time)` with its subject list replaced, re-signed by `k`.
fn with_subjects(k: &SigningKey, subjects: Value) -> Vec<u8> {
    resigned(true, k, |statement| statement["subject"] = subjects)
}

fn without_digest(envelope: &[u8], trusted: &[VerifyingKey]) -> Result<Verified, VerifyError> {
    verify(
        envelope,
        &Requirements {
            trusted,
            threshold: 1,
            subject_sha256: None,
            target: None,
            now: NOW,
            max_age: 24 * 3600,
            already_applied: &|_| false,
            limits: Default::default(),
        },
    )
}

#[test]
fn the_matched_subject_is_reported_and_without_a_digest_only_a_single_one() {
    let k = key(1);
    let trusted = [k.verifying_key()];
    let decoy = "cd".repeat(32);
    let two = with_subjects(
        &k,
        json!([{"name": "decoy", "digest": {"sha256": decoy}}, {"name": "agent-7b", "digest": {"sha256": MODEL.to_uppercase()}}]),
    );
    let v = check(&two, &trusted, 1).unwrap();
    assert_eq!(
        (v.model_name.as_str(), v.model_sha256.as_str(), v.subject_index),
        ("agent-7b", MODEL, 1)
    );
    // Without an artifact digest (the page before one is entered) nothing says which subject is
    // meant: several are refused, a single one is reported.
    assert_eq!(rejected(without_digest(&two, &trusted)), "ambiguous_subject");
    let v = without_digest(&signed(true, &k, NOW), &trusted).unwrap();
    assert_eq!((v.model_name.as_str(), v.subject_index), ("agent-7b", 0));
    let repeated = with_subjects(
        &k,
        json!([{"name": "agent-7b", "digest": {"sha256": MODEL}}, {"name": "agent-7b", "digest": {"sha256": MODEL}}]),
    );
    assert_eq!(
        without_digest(&repeated, &trusted).unwrap().subject_index,
        0,
        "one subject listed twice"
    );
    let nameless = with_subjects(
        &k,
        json!([{"name": "x"}, {"name": "agent-7b", "digest": {"sha512": "00"}}]),
    );
    assert_eq!(
        rejected(without_digest(&nameless, &trusted)),
        "statement_type",
        "no subject with a sha256"
    );
    // A sha256 that is not 64 hex digits names no artefact: never reported as the model's.
    for bad in ["", "xyz", &"g".repeat(64), &"ab".repeat(33)] {
        let odd = with_subjects(&k, json!([{"name": "agent-7b", "digest": {"sha256": bad}}]));
        assert_eq!(
            rejected(without_digest(&odd, &trusted)),
            "statement_type",
            "sha256 {bad:?}"
        );
    }
    // A subject without a name names no model (found by the statement fuzz target).
    for nameless in [
        json!([{"digest": {"sha256": MODEL}}]),
        json!([{"name": 7, "digest": {"sha256": MODEL}}]),
    ] {
        let env = with_subjects(&k, nameless);
        assert_eq!(rejected(without_digest(&env, &trusted)), "statement_type");
        assert_eq!(rejected(check(&env, &trusted, 1)), "subject_digest");
    }
}

#[test]
fn the_same_key_twice_is_one_key_and_an_unreachable_threshold_is_refused() {
    let k = key(1);
    let env = signed(true, &k, NOW);
    let twice = [k.verifying_key(), k.verifying_key()];
    assert_eq!(
        check(&env, &twice, 2).unwrap_err(),
        VerifyError::Threshold {
            required: 2,
            distinct: 1
        }
    );
    assert_eq!(check(&env, &twice, 1).unwrap().signers, vec![keyid(&k.verifying_key())]);
    let three = [k.verifying_key(), key(2).verifying_key(), k.verifying_key()];
    assert_eq!(
        check(&env, &three, 2).unwrap_err(),
        VerifyError::Signature {
            verified: 1,
            required: 2
        }
    );
}

#[test]
fn a_duplicate_key_in_the_statement_is_refused_and_never_cosigned() {
    let k = key(1);
    let good: Envelope = serde_json::from_slice(&signed(true, &k, NOW)).unwrap();
    let text = String::from_utf8(dsse::decode(&good.payload).unwrap()).unwrap();
    let doubled = text.replacen(
        "\"verificationResult\":\"PASSED\"",
        "\"verificationResult\":\"FAILED\",\"verificationResult\":\"PASSED\"",
        1,
    );
    assert_ne!(doubled, text);
    let payload = doubled.into_bytes();
    let sig = ed25519_dalek::Signer::sign(&k, &dsse::pae(dsse::PAYLOAD_TYPE, &payload));
    let env = Envelope {
        payload_type: dsse::PAYLOAD_TYPE.into(),
        payload: dsse::encode(&payload),
        signatures: vec![dsse::Signature {
            keyid: keyid(&k.verifying_key()),
            sig: dsse::encode(&sig.to_bytes()),
        }],
    };
    let err = check(&serde_json::to_vec(&env).unwrap(), &[k.verifying_key()], 1).unwrap_err();
    assert_eq!(err.check(), "duplicate_key");
    assert!(
        err.to_string().contains("`verificationResult`") && err.to_string().contains("`/predicate`"),
        "{err}"
    );
    let r = report(true);
    let claim = Claim {
        report: &deploy_gate::attest::ReportToSign::of_value(&r),
        model_name: "agent-7b",
        model_sha256: MODEL,
        target: "file:config.yaml",
        time_verified: NOW,
        review: None,
    };
    let refused = cosign(&env, &claim, &key(2)).unwrap_err().to_string();
    assert!(refused.contains("verificationResult"), "{refused}");
    // In the envelope itself, a field twice is not an envelope.
    let good = String::from_utf8(signed(true, &k, NOW)).unwrap();
    let twice = good.replacen("\"payload\":", "\"payload\":\"e30=\",\"payload\":", 1);
    let err = check(twice.as_bytes(), &[k.verifying_key()], 1).unwrap_err();
    assert_eq!(err.check(), "envelope");
    assert!(err.to_string().contains("duplicate field `payload`"), "{err}");
}

#[test]
fn limits_are_checked_before_the_work_they_bound() {
    let k = key(1);
    let env = signed(true, &k, NOW);
    let trusted = [k.verifying_key()];
    let at = |limits: deploy_gate::attest::Limits| {
        verify(
            &env,
            &Requirements {
                trusted: &trusted,
                threshold: 1,
                subject_sha256: Some(MODEL),
                target: Some("file:config.yaml"),
                now: NOW,
                max_age: 86400,
                already_applied: &|_| false,
                limits,
            },
        )
    };
    let payload_len = dsse::decode(&serde_json::from_slice::<Envelope>(&env).unwrap().payload)
        .unwrap()
        .len();
    let exact = deploy_gate::attest::Limits {
        envelope_bytes: env.len(),
        statement_bytes: payload_len,
        signatures: 1,
    };
    assert!(at(exact).is_ok(), "limits are inclusive");
    let smaller = |f: fn(&mut deploy_gate::attest::Limits)| {
        let mut l = exact;
        f(&mut l);
        rejected(at(l))
    };
    assert_eq!(smaller(|l| l.envelope_bytes -= 1), "envelope_size");
    assert_eq!(smaller(|l| l.statement_bytes -= 1), "statement_size");
    assert_eq!(smaller(|l| l.signatures = 0), "signature_count");
    let d = deploy_gate::attest::Limits::default();
    assert_eq!(
        (d.statement_bytes, d.envelope_bytes, d.signatures),
        (64 << 20, (96 << 20) + (64 << 10), 16)
    );
}

/// An envelope of the good statement for `approved`, edited by `f` and signed by `k`.
fn resigned(approved: bool, k: &SigningKey, f: impl FnOnce(&mut Value)) -> Vec<u8> {
    let good: Envelope = serde_json::from_slice(&signed(approved, k, NOW)).unwrap();
    let mut statement: Value = serde_json::from_slice(&dsse::decode(&good.payload).unwrap()).unwrap();
    f(&mut statement);
    let payload = serde_json::to_vec(&statement).unwrap();
    let sig = ed25519_dalek::Signer::sign(k, &dsse::pae(dsse::PAYLOAD_TYPE, &payload));
    serde_json::to_vec(&Envelope {
        payload_type: dsse::PAYLOAD_TYPE.into(),
        payload: dsse::encode(&payload),
        signatures: vec![dsse::Signature {
            keyid: String::new(),
            sig: dsse::encode(&sig.to_bytes()),
        }],
    })
    .unwrap()
}

#[test]
fn verified_levels_must_agree_with_the_result() {
    let k = key(1);
    let trusted = [k.verifying_key()];
    assert!(check(&resigned(true, &k, |_| {}), &trusted, 1).is_ok());
    assert!(check(&resigned(false, &k, |_| {}), &trusted, 1).is_ok());
    let passed_without = resigned(true, &k, |s| s["predicate"]["verifiedLevels"] = json!([]));
    assert_eq!(rejected(check(&passed_without, &trusted, 1)), "predicate");
    let passed_missing = resigned(true, &k, |s| {
        s["predicate"].as_object_mut().unwrap().remove("verifiedLevels");
    });
    assert_eq!(rejected(check(&passed_missing, &trusted, 1)), "predicate");
    let failed_with = resigned(false, &k, |s| {
        s["predicate"]["verifiedLevels"] = json!(["DEPLOY_GATE_APPROVED"])
    });
    assert_eq!(rejected(check(&failed_with, &trusted, 1)), "predicate");
}
