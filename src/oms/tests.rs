use super::*;
use p256::ecdsa::signature::Signer as _;

fn p256_key(seed: u8) -> p256::ecdsa::SigningKey {
    p256::ecdsa::SigningKey::from_bytes(&[seed; 32].into()).unwrap()
}

fn trusted(k: &p256::ecdsa::SigningKey) -> TrustedKey {
    use p256::pkcs8::EncodePublicKey;
    let der = k.verifying_key().to_public_key_der().unwrap();
    TrustedKey::from_spki_der(der.as_bytes()).unwrap()
}

fn statement(files: &[(&str, &[u8])]) -> String {
    let m = Manifest::files_from_bytes(files.iter().copied());
    let resources: Vec<String> = m
        .resources
        .iter()
        .map(|r| {
            format!(
                r#"{{"name":"{}","algorithm":"sha256","digest":"{}"}}"#,
                r.name(),
                r.digest_hex()
            )
        })
        .collect();
    format!(
        r#"{{"_type":"{STATEMENT_TYPE}","subject":[{{"name":"m","digest":{{"sha256":"{}"}}}}],"predicateType":"{PREDICATE_TYPE}","predicate":{{"serialization":{{"method":"files","hash_type":"sha256","allow_symlinks":false,"ignore_paths":["model.sig"]}},"resources":[{}]}}}}"#,
        m.digest_hex(),
        resources.join(",")
    )
}

fn bundle(payload: &str, k: &p256::ecdsa::SigningKey, hint: &str, sigs: usize) -> Vec<u8> {
    let pae = crate::attest::dsse::pae(PAYLOAD_TYPE, payload.as_bytes());
    let sig: p256::ecdsa::DerSignature = k.sign(&pae);
    let one = format!(
        r#"{{"sig":"{}","keyid":""}}"#,
        crate::attest::dsse::encode(sig.as_bytes())
    );
    let sigs = vec![one; sigs].join(",");
    format!(
        r#"{{"mediaType":"{BUNDLE_MEDIA_TYPE}","verificationMaterial":{{"publicKey":{{"hint":"{hint}"}},"tlogEntries":[]}},"dsseEnvelope":{{"payload":"{}","payloadType":"{PAYLOAD_TYPE}","signatures":[{sigs}]}}}}"#,
        crate::attest::dsse::encode(payload.as_bytes())
    )
    .into_bytes()
}

const FILES: [(&str, &[u8]); 3] = [("a.bin", b"hello"), ("empty", b""), ("sub/\u{e9} x.txt", b"xyz")];

fn trust(keys: &[&p256::ecdsa::SigningKey]) -> Trust {
    Trust {
        keys: keys.iter().map(|k| trusted(k)).collect(),
        roots: Roots::new(),
        keyless: None,
    }
}

#[test]
fn a_good_bundle_verifies_and_its_files_match() {
    let k = p256_key(7);
    let t = trust(&[&k]);
    let b = bundle(&statement(&FILES), &k, &trusted(&k).hint, 1);
    let v = verify_bundle(&b, &t).unwrap();
    assert_eq!(v.key_id, trusted(&k).key_id);
    assert_eq!(v.model_name, "m");
    assert_eq!(
        v.subject_digest_hex(),
        "00edfc2db9491845085709b4401fdf92cae3abd3a08ab33bb7616f8efe7a0059"
    );
    assert_eq!(v.resources.len(), 3);
    assert!(v.ignore_paths().contains(&"model.sig".to_owned()));
    v.check_files(&Manifest::files_from_bytes(FILES)).unwrap();
}

fn fails(b: &[u8], t: &Trust) -> Check {
    verify_bundle(b, t).unwrap_err().check
}

#[test]
fn each_tampering_is_refused_by_its_check() {
    let k = p256_key(7);
    let other = p256_key(9);
    let t = trust(&[&k]);
    let hint = trusted(&k).hint;
    let good = statement(&FILES);
    assert_eq!(
        fails(&bundle(&good, &other, &trusted(&other).hint, 1), &t),
        Check::UntrustedKey
    );
    assert_eq!(fails(&bundle(&good, &other, &hint, 1), &t), Check::Signature);
    assert_eq!(fails(&bundle(&good, &k, &hint, 2), &t), Check::SignatureCount);
    assert_eq!(fails(&bundle(&good, &k, &hint, 1), &trust(&[])), Check::UntrustedKey);
    // An edited payload under the old signature.
    let mut b = String::from_utf8(bundle(&good, &k, &hint, 1)).unwrap();
    let edited = good.replace("\"m\"", "\"n\"");
    b = b.replace(
        &crate::attest::dsse::encode(good.as_bytes()),
        &crate::attest::dsse::encode(edited.as_bytes()),
    );
    assert_eq!(fails(b.as_bytes(), &t), Check::Signature);
    // Signed statements that are wrong.
    let wrong_type = good.replace("https://in-toto.io/Statement/v1", "https://in-toto.io/Statement/v0.1");
    assert_eq!(fails(&bundle(&wrong_type, &k, &hint, 1), &t), Check::StatementType);
    let wrong_pred = good.replace(PREDICATE_TYPE, "https://model_signing/Digests/v0.1");
    assert_eq!(fails(&bundle(&wrong_pred, &k, &hint, 1), &t), Check::PredicateType);
    let other_digest = statement(&[("a.bin", b"hello")]);
    let mixed = good.replacen(
        &Manifest::files_from_bytes(FILES).digest_hex(),
        &Manifest::files_from_bytes([("a.bin", &b"hello"[..])]).digest_hex(),
        1,
    );
    assert_ne!(mixed, good);
    let _ = other_digest;
    assert_eq!(fails(&bundle(&mixed, &k, &hint, 1), &t), Check::SubjectDigest);
    let blake = good.replace("\"hash_type\":\"sha256\"", "\"hash_type\":\"blake3\"");
    assert_eq!(fails(&bundle(&blake, &k, &hint, 1), &t), Check::Predicate);
    let extra_field = good.replace("\"method\":\"files\"", "\"method\":\"files\",\"x\":1");
    assert_eq!(fails(&bundle(&extra_field, &k, &hint, 1), &t), Check::Predicate);
    // Shape.
    assert_eq!(fails(b"{}", &t), Check::BundleShape);
    assert_eq!(fails(b"not json", &t), Check::BundleShape);
    let dup = String::from_utf8(bundle(&good, &k, &hint, 1)).unwrap().replacen(
        "{",
        &format!(r#"{{"mediaType":"{BUNDLE_MEDIA_TYPE}","#),
        1,
    );
    assert_eq!(fails(dup.as_bytes(), &t), Check::BundleShape);
    let keyless = String::from_utf8(bundle(&good, &k, &hint, 1)).unwrap().replace(
        &format!(r#""publicKey":{{"hint":"{hint}"}}"#),
        r#""certificate":{"rawBytes":"MIIB"}"#,
    );
    assert_eq!(fails(keyless.as_bytes(), &t), Check::Keyless);
}

#[test]
fn file_checks_name_the_file() {
    let k = p256_key(7);
    let v = verify_bundle(&bundle(&statement(&FILES), &k, &trusted(&k).hint, 1), &trust(&[&k])).unwrap();
    let check = |files: &[(&str, &[u8])]| {
        v.check_files(&Manifest::files_from_bytes(files.iter().copied()))
            .unwrap_err()
    };
    let e = check(&[("a.bin", b"hellO"), ("empty", b""), ("sub/\u{e9} x.txt", b"xyz")]);
    assert_eq!((e.check, e.file.as_deref()), (Check::FileDigest, Some("a.bin")));
    let e = check(&[("a.bin", b"hello"), ("sub/\u{e9} x.txt", b"xyz")]);
    assert_eq!((e.check, e.file.as_deref()), (Check::FileMissing, Some("empty")));
    let e = check(&[
        ("a.bin", b"hello"),
        ("empty", b""),
        ("sub/\u{e9} x.txt", b"xyz"),
        ("new", b""),
    ]);
    assert_eq!((e.check, e.file.as_deref()), (Check::FileExtra, Some("new")));
    let e = check(&[("b.bin", b"hello"), ("empty", b""), ("sub/\u{e9} x.txt", b"xyz")]);
    assert_eq!((e.check, e.file.as_deref()), (Check::FileMissing, Some("a.bin")));
}

#[test]
fn pem_keys_and_hints() {
    let k = p256_key(3);
    let t = trusted(&k);
    use p256::pkcs8::EncodePublicKey;
    let pem = k.verifying_key().to_public_key_pem(Default::default()).unwrap();
    assert_eq!(TrustedKey::from_pem(&pem).unwrap(), t);
    // model-signing's hint is sha256 of exactly this PEM text.
    use sha2::Digest;
    assert_eq!(t.hint, hex::encode(sha2::Sha256::digest(pem.as_bytes())));
    assert_eq!(t.curve(), "P-256");
    assert!(TrustedKey::from_pem("-----BEGIN PUBLIC KEY-----\nAAAA\n-----END PUBLIC KEY-----\n").is_err());
}

#[test]
fn check_names_are_unique() {
    let names: std::collections::HashSet<_> = Check::ALL.iter().map(|c| c.as_str()).collect();
    assert_eq!(names.len(), Check::ALL.len());
}

#[test]
fn ignore_matches_whole_components_at_the_root() {
    use check::is_ignored;
    let ig = vec![".git".to_owned(), "model.sig".to_owned()];
    assert!(is_ignored(".git", &ig));
    assert!(is_ignored(".git/HEAD", &ig));
    assert!(!is_ignored(".github2", &ig));
    assert!(!is_ignored(".gitx/a", &ig));
    assert!(!is_ignored("sub/.git", &ig));
    assert!(is_ignored("model.sig", &ig));
    assert!(!is_ignored(".", &[".".to_owned()]));
}

fn digests(bytes: &[u8]) -> FileDigests {
    use sha2::Digest;
    FileDigests {
        size: bytes.len() as u64,
        sha256: sha2::Sha256::digest(bytes).into(),
        shards: Vec::new(),
    }
}

#[test]
fn the_model_check_compares_the_files_given_and_leaves_out_the_ignored_ones() {
    let k = p256_key(7);
    let b = bundle(&statement(&FILES), &k, &trusted(&k).hint, 1);
    let subject = Manifest::files_from_bytes(FILES).digest_hex();
    let decision = DecisionModel {
        digest: subject.clone(),
        scheme: Some(crate::attest::OMS_FILES_SCHEME.to_owned()),
    };
    let mut c = ModelCheck::new(&b, &trust(&[&k]), Some(decision));
    let before = c.outcome();
    assert!(before.valid && before.files.is_none());
    assert_eq!(before.same_model.as_ref().unwrap().same, Some(true));
    for (p, bytes) in FILES {
        c.add_file(p, digests(bytes)).unwrap();
    }
    // Ignored: a default path and the signature itself (the bundle's own bytes).
    c.add_file(".git/HEAD", digests(b"ref")).unwrap();
    c.add_file(SIGNATURE_FILE, digests(&b)).unwrap();
    assert_eq!(
        c.add_file("a.bin", digests(b"hello")),
        Err(check::InputError::Twice("a.bin".into()))
    );
    assert!(matches!(
        c.add_file("../x", digests(b"")),
        Err(check::InputError::NotRelative(_))
    ));
    let out = c.finish();
    assert!(out.valid, "{out:?}");
    let files = out.files.unwrap();
    assert_eq!(
        (files.given, files.checked, files.ignored, files.all_match),
        (5, 3, 2, true)
    );
    assert_eq!(c.add_file("late", digests(b"")), Err(check::InputError::Finished));
}

#[test]
fn the_model_check_names_the_failed_file_and_the_other_model() {
    let k = p256_key(7);
    let b = bundle(&statement(&FILES), &k, &trusted(&k).hint, 1);
    let other = DecisionModel {
        digest: "ab".repeat(32),
        scheme: Some(crate::attest::OMS_FILES_SCHEME.to_owned()),
    };
    let mut c = ModelCheck::new(&b, &trust(&[&k]), Some(other));
    c.add_file("a.bin", digests(b"hellO")).unwrap();
    c.add_file("empty", digests(b"")).unwrap();
    // A signature over a `.sig` other than this bundle is compared (and so extra).
    c.add_file(SIGNATURE_FILE, digests(b"another signature")).unwrap();
    let out = c.finish();
    let f = out.failure.unwrap();
    assert_eq!(
        (f.check, f.file.as_deref()),
        (Check::FileMissing, Some("sub/\u{e9} x.txt"))
    );
    assert_eq!(out.same_model.unwrap().same, Some(false));
    // A bundle that fails is the outcome's failure; the decision cannot be compared.
    let bad = ModelCheck::new(
        b"{}",
        &trust(&[&k]),
        Some(DecisionModel {
            digest: "00".repeat(32),
            scheme: None,
        }),
    );
    let out = bad.outcome();
    assert_eq!(out.failure.unwrap().check, Check::BundleShape);
    assert_eq!(out.same_model.unwrap().same, None);
}

#[test]
fn the_same_model_rule_by_the_original_directory_digest() {
    let k = p256_key(7);
    let b = bundle(&statement(&FILES), &k, &trusted(&k).hint, 1);
    let all: Vec<(String, [u8; 32])> = FILES
        .iter()
        .map(|(p, bytes)| (p.to_string(), digests(bytes).sha256))
        .collect();
    let original = check::original_digest(all.iter().map(|(p, d)| (p.as_str(), d)));
    let decision = DecisionModel {
        digest: original,
        scheme: None,
    };
    // Without files: by the signed resources, which are the whole folder here.
    let c = ModelCheck::new(&b, &trust(&[&k]), Some(decision.clone()));
    assert_eq!(c.outcome().same_model.unwrap().by, Some("resources"));
    // With files: the folder's every file counts, the ignored ones too.
    let mut c = ModelCheck::new(&b, &trust(&[&k]), Some(decision));
    for (p, bytes) in FILES {
        c.add_file(p, digests(bytes)).unwrap();
    }
    c.add_file(".gitignore", digests(b"x")).unwrap();
    let same = c.finish().same_model.unwrap();
    assert_eq!((same.same, same.by), (Some(false), Some("files")));
}
