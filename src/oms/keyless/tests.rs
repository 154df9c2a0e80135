use super::*;
use crate::oms::{verify_bundle, Manifest, SignedBy, Trust};

const IDENTITY: &str = "stefanb@us.ibm.com";
const ISSUER: &str = "https://sigstore.verify.ibm.com/oauth2";

macro_rules! fixture {
    ($v:literal, $f:literal) => {
        include_bytes!(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/tests/fixtures/oms-keyless/",
            $v,
            "-sigstore/",
            $f
        ))
    };
}

/// A version, its bundle and its two files.
type Fixture = (&'static str, &'static [u8], &'static [u8], &'static [u8]);

const BUNDLES: [Fixture; 3] = [
    (
        "v1.0.0",
        fixture!("v1.0.0", "model.sig"),
        fixture!("v1.0.0", "signme-1"),
        fixture!("v1.0.0", "signme-2"),
    ),
    (
        "v1.0.1",
        fixture!("v1.0.1", "model.sig"),
        fixture!("v1.0.1", "signme-1"),
        fixture!("v1.0.1", "signme-2"),
    ),
    (
        "v1.1.0",
        fixture!("v1.1.0", "model.sig"),
        fixture!("v1.1.0", "signme-1"),
        fixture!("v1.1.0", "signme-2"),
    ),
];

fn trust(pairs: &[(&str, &str)], root: SigstoreRoot) -> Trust {
    Trust {
        keyless: Some(KeylessTrust {
            identities: pairs
                .iter()
                .map(|(i, s)| Identity {
                    identity: i.to_string(),
                    issuer: s.to_string(),
                })
                .collect(),
            root,
        }),
        ..Trust::default()
    }
}

fn good() -> Trust {
    trust(&[(IDENTITY, ISSUER)], SigstoreRoot::public_good())
}

fn fails(bundle: &[u8], t: &Trust) -> Check {
    match verify_bundle(bundle, t) {
        Ok(_) => panic!("verified"),
        Err(e) => {
            eprintln!("{e}");
            e.check
        }
    }
}

#[test]
fn the_reference_keyless_bundles_verify_with_the_right_identity_and_their_files() {
    for (v, sig, one, two) in BUNDLES {
        let ok = verify_bundle(sig, &good()).unwrap_or_else(|e| panic!("{v}: {e}"));
        match &ok.signed_by {
            SignedBy::Keyless {
                identity,
                issuer,
                log_index,
                integrated_time,
            } => {
                assert_eq!((identity.as_str(), issuer.as_str()), (IDENTITY, ISSUER), "{v}");
                assert!(log_index.is_some() && integrated_time.is_some(), "{v}");
            }
            other => panic!("{v}: {other:?}"),
        }
        ok.check_files(&Manifest::files_from_bytes([("signme-1", one), ("signme-2", two)]))
            .unwrap_or_else(|e| panic!("{v}: {e}"));
        // A changed model file is the file check's.
        let e = ok
            .check_files(&Manifest::files_from_bytes([
                ("signme-1", &b"changed"[..]),
                ("signme-2", two),
            ]))
            .unwrap_err();
        assert_eq!(
            (e.check, e.file.as_deref()),
            (Check::FileDigest, Some("signme-1")),
            "{v}"
        );
        // Any one of several pairs is enough.
        let two_pairs = trust(&[("a@b.c", ISSUER), (IDENTITY, ISSUER)], SigstoreRoot::public_good());
        verify_bundle(sig, &two_pairs).unwrap_or_else(|e| panic!("{v}: {e}"));
    }
}

#[test]
fn a_keyless_bundle_without_an_identity_is_refused_by_name() {
    let (_, sig, _, _) = BUNDLES[2];
    assert_eq!(fails(sig, &Trust::default()), Check::Keyless);
}

#[test]
fn an_identity_or_issuer_off_by_one_character_is_refused() {
    for (v, sig, _, _) in BUNDLES {
        let root = SigstoreRoot::public_good;
        for pair in [
            ("stefanb@us.ibm.co", ISSUER),
            ("Stefanb@us.ibm.com", ISSUER),
            (IDENTITY, "https://sigstore.verify.ibm.com/oauth"),
            (IDENTITY, "https://sigstore.verify.ibm.com/oauth2/"),
        ] {
            assert_eq!(
                fails(sig, &trust(&[pair], root())),
                Check::KeylessIdentity,
                "{v} {pair:?}"
            );
        }
    }
    // The trusted identities are quoted: a trailing space or newline is seen.
    let (_, sig, _, _) = BUNDLES[2];
    let t = trust(&[(&format!("{IDENTITY}\n"), ISSUER)], SigstoreRoot::public_good());
    let e = verify_bundle(sig, &t).unwrap_err();
    assert!(
        e.detail
            .contains(&format!("trusted: \"{IDENTITY}\\n\" (issuer \"{ISSUER}\")")),
        "{}",
        e.detail
    );
}

/// The bundle as JSON, edited by `f`, as bytes.
fn edited(sig: &[u8], f: impl FnOnce(&mut serde_json::Value)) -> Vec<u8> {
    let mut v: serde_json::Value = serde_json::from_slice(sig).unwrap();
    f(&mut v);
    serde_json::to_vec(&v).unwrap()
}

fn flip_b64(s: &str, at: usize) -> String {
    let mut bytes = crate::attest::dsse::decode(s).unwrap();
    let i = at.min(bytes.len() - 1);
    bytes[i] ^= 1;
    crate::attest::dsse::encode(&bytes)
}

#[test]
fn each_tampering_is_refused_by_its_check() {
    let (_, sig, _, _) = BUNDLES[2];
    let t = good();
    let entry = "/verificationMaterial/tlogEntries/0";
    let set_str = |p: &str, f: &dyn Fn(&str) -> String| {
        edited(sig, |v| {
            let old = v.pointer(p).unwrap().as_str().unwrap().to_owned();
            *v.pointer_mut(p).unwrap() = serde_json::Value::String(f(&old));
        })
    };
    // A changed payload (a resource's digest) under the old signature.
    let payload = set_str("/dsseEnvelope/payload", &|old| {
        let text = String::from_utf8(crate::attest::dsse::decode(old).unwrap()).unwrap();
        crate::attest::dsse::encode(text.replacen("\"digest\"", "\"digest\" ", 1).as_bytes())
    });
    assert_eq!(fails(&payload, &t), Check::Signature);
    // The signature itself: the bundle's RFC 3161 timestamp is over the signature's bytes,
    // and the verified times are established first.
    assert_eq!(
        fails(&set_str("/dsseEnvelope/signatures/0/sig", &|s| flip_b64(s, 40)), &t),
        Check::Timestamp
    );
    // Another certificate: the v1.0.0 bundle's, from the same identity.
    let other: serde_json::Value = serde_json::from_slice(BUNDLES[0].1).unwrap();
    let swapped = edited(sig, |v| {
        v["verificationMaterial"]["certificate"] = other["verificationMaterial"]["certificate"].clone();
    });
    // Its ten minutes ended months before this entry was logged.
    assert_eq!(fails(&swapped, &t), Check::CertificateChain);
    // The log's evidence.
    let proof = set_str(&format!("{entry}/inclusionProof/hashes/0"), &|s| flip_b64(s, 3));
    assert_eq!(fails(&proof, &t), Check::TlogInclusion);
    // The proof's root hash, no longer its checkpoint's.
    let root_hash = set_str(&format!("{entry}/inclusionProof/rootHash"), &|s| flip_b64(s, 5));
    assert_eq!(fails(&root_hash, &t), Check::TlogInclusion);
    let checkpoint = set_str(&format!("{entry}/inclusionProof/checkpoint/envelope"), &|s| {
        s.replacen('1', "2", 1)
    });
    assert_eq!(fails(&checkpoint, &t), Check::TlogCheckpoint);
    let set = set_str(&format!("{entry}/inclusionPromise/signedEntryTimestamp"), &|s| {
        flip_b64(s, 20)
    });
    assert_eq!(fails(&set, &t), Check::TlogPromise);
    let body = set_str(&format!("{entry}/canonicalizedBody"), &|s| flip_b64(s, 60));
    // The signed entry timestamp signs the body: an edited body fails it.
    assert_eq!(fails(&body, &t), Check::TlogPromise);
    // Relabelled v0.1 (which would need no inclusion proof), and without it.
    let old = edited(sig, |v| {
        v["mediaType"] = "application/vnd.dev.sigstore.bundle+json;version=0.1".into();
        v.pointer_mut(entry)
            .unwrap()
            .as_object_mut()
            .unwrap()
            .remove("inclusionProof");
    });
    assert_eq!(fails(&old, &t), Check::BundleShape);
    // A trusted root without the Fulcio CA.
    let mut root: serde_json::Value = serde_json::from_str(PUBLIC_GOOD_ROOT).unwrap();
    root["certificateAuthorities"] = serde_json::json!([]);
    let no_ca = SigstoreRoot::from_json(root.to_string().as_bytes()).unwrap();
    assert_eq!(
        fails(sig, &trust(&[(IDENTITY, ISSUER)], no_ca)),
        Check::CertificateChain
    );
}

#[test]
fn an_unusable_trusted_root_is_an_error_not_a_check() {
    assert!(SigstoreRoot::from_json(b"not json").unwrap_err().contains("not JSON"));
    // A key given twice (the logs, empty then the real ones) is refused, not read last-wins.
    let dup = PUBLIC_GOOD_ROOT.replacen("\"tlogs\"", "\"tlogs\": [], \"tlogs\"", 1);
    assert_ne!(dup, PUBLIC_GOOD_ROOT);
    let e = SigstoreRoot::from_json(dup.as_bytes()).unwrap_err();
    assert!(e.contains("the key `tlogs` appears more than once"), "{e}");
    assert!(SigstoreRoot::from_json(b"{\"mediaType\": 3}").is_err());
}
