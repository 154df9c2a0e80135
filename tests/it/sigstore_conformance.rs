//! The Sigstore conformance suite's bundle-verification cases (tests/fixtures/sigstore-conformance),
//! read directly and run through deploy-gate's verifier (`oms::keyless::verify_sigstore`), on
//! the artifact and on its sha256: every case must end as the suite says, except the
//! deviations named in `DEVIATIONS` (and in docs/model-signing.md), each with its reason.

use deploy_gate::oms::keyless::{verify_sigstore, Identity, Signed, Signer, SigstoreRoot};
use sha2::Digest as _;
use std::fs;
use std::path::{Path, PathBuf};

const DEFAULT_IDENTITY: &str = "https://github.com/sigstore-conformance/extremely-dangerous-public-oidc-beacon/.github/workflows/extremely-dangerous-oidc-beacon.yml@refs/heads/main";
const DEFAULT_ISSUER: &str = "https://token.actions.githubusercontent.com";

/// Cases whose outcome here differs from the suite's, and why.
const DEVIATIONS: [(&str, &str); 4] = [
    ("happy-path-v0.1", OLD),
    ("happy-path-v0.2", OLD),
    ("intoto-with-custom-trust-root", OLD),
    ("trust-root-tlog-validity-end-inclusive", OLD),
];

/// The check some `_fail` cases are refused by (on the file and on its digest): each names
/// what the case was made to break.
const CHECKS: [(&str, &str); 5] = [
    // The envelope is not the one logged: the entry records another PAE's hash.
    ("rekor2-dsse-mismatch-envelope_fail", "tlog_body"),
    ("rekor2-dsse-mismatch-sig_fail", "tlog_body"),
    ("dsse-mismatch-envelope_fail", "tlog_body"),
    ("rekor2-dsse-invalid-sig_fail", "signature"),
    ("rekor2-checkpoint-no-matching-signature_fail", "tlog_checkpoint"),
];

/// Why the v0.1 and v0.2 cases that must verify are refused.
const OLD: &str = "a v0.1 or v0.2 bundle (no inclusion proof required) is refused: only v0.3 is read";

fn cases() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/sigstore-conformance/bundle-verify")
}

fn read_opt(dir: &Path, name: &str) -> Option<Vec<u8>> {
    fs::read(dir.join(name)).ok()
}

/// One run: `Ok(())` verified, `Err(check: detail)` refused, `None` when the case cannot be
/// run on a digest (an Ed25519 signature over the message itself).
fn run_case(dir: &Path, by_digest: bool, relabel: bool) -> Result<(), String> {
    let mut bundle = fs::read(dir.join("bundle.sigstore.json")).unwrap();
    if relabel {
        // (A bundle that is not JSON stays as it is.)
        if let Ok(mut v) = serde_json::from_slice::<serde_json::Value>(&bundle) {
            v["mediaType"] = deploy_gate::oms::BUNDLE_MEDIA_TYPE.into();
            bundle = serde_json::to_vec(&v).unwrap();
        }
    }
    let artifact = read_opt(dir, "artifact").unwrap_or_else(|| fs::read(cases().join("a.txt")).unwrap());
    let root = match read_opt(dir, "trusted_root.json") {
        Some(bytes) => SigstoreRoot::from_json(&bytes).map_err(|e| format!("trusted root: {e}"))?,
        None => SigstoreRoot::public_good(),
    };
    let text = |name: &str, default: &str| {
        read_opt(dir, name).map_or_else(
            || default.to_owned(),
            |b| String::from_utf8(b).unwrap().trim().to_owned(),
        )
    };
    let identities = [Identity {
        identity: text("identity", DEFAULT_IDENTITY),
        issuer: text("issuer", DEFAULT_ISSUER),
    }];
    let key = read_opt(dir, "key.pub").map(|b| String::from_utf8(b).unwrap());
    let signer = match &key {
        Some(pem) => Signer::KeyPem(pem),
        None => Signer::Identities(&identities),
    };
    let digest: [u8; 32] = sha2::Sha256::digest(&artifact).into();
    let signed = if by_digest {
        Signed::Sha256(digest)
    } else {
        Signed::Bytes(&artifact)
    };
    verify_sigstore(&bundle, signed, signer, &root)
        .map(|_| ())
        .map_err(|e| format!("{}: {}", e.check, e.detail))
}

#[test]
fn every_bundle_verify_case_ends_as_the_suite_says_on_the_file_and_on_its_digest() {
    let mut names: Vec<String> = fs::read_dir(cases())
        .unwrap()
        .map(|e| e.unwrap())
        .filter(|e| e.path().is_dir())
        .map(|e| e.file_name().into_string().unwrap())
        .collect();
    names.sort();
    assert_eq!(names.len(), 70, "the suite's 70 cases");
    let mut wrong = Vec::new();
    let mut runs = 0;
    let mut digest_unsupported = Vec::new();
    // `_fail` cases refused for their media type alone (they fail, as the suite says, before
    // the check they were made for).
    let mut old_refused = Vec::new();
    for name in &names {
        let dir = cases().join(name);
        let must_fail = name.ends_with("_fail");
        for by_digest in [false, true] {
            let got = run_case(&dir, by_digest, false);
            // Ed25519 signs the message itself: a digest cannot stand for it (the suite's
            // clients skip the digest form for such cases).
            if by_digest && got.as_ref().is_err_and(|e| e.contains("does not support prehashed")) {
                digest_unsupported.push(name.clone());
                continue;
            }
            runs += 1;
            if must_fail
                && got
                    .as_ref()
                    .is_err_and(|e| e.contains("only a Sigstore bundle v0.3 is read"))
            {
                // Refused for its media type alone: relabelled v0.3, the verifier must still
                // refuse it, for another reason (the one the case was made for, or the
                // inclusion proof an old bundle lacks).
                match run_case(&dir, by_digest, true) {
                    Ok(()) => wrong.push(format!("{name} relabelled v0.3: verified")),
                    Err(e) if !by_digest => old_refused.push(format!("{name}: {e}")),
                    Err(_) => {}
                }
            }
            if let Some((_, check)) = CHECKS.iter().find(|(n, _)| n == name) {
                if !got.as_ref().is_err_and(|e| e.starts_with(&format!("{check}: "))) {
                    wrong.push(format!("{name}: not refused by `{check}`: {got:?}"));
                }
            }
            let deviates = DEVIATIONS.iter().any(|(n, _)| n == name);
            let as_suite = got.is_err() == must_fail;
            if as_suite == deviates {
                wrong.push(format!(
                    "{name} ({}): {}",
                    if by_digest { "digest" } else { "file" },
                    match &got {
                        Ok(()) => "verified".to_owned(),
                        Err(e) => e.clone(),
                    }
                ));
            }
        }
    }
    assert!(
        wrong.is_empty(),
        "{} of {runs} runs not as expected:\n{}",
        wrong.len(),
        wrong.join("\n")
    );
    eprintln!(
        "conformance: {runs} runs as expected ({} cases deviate, named); digest form not applicable: {digest_unsupported:?}; failing cases refused by their media type: {old_refused:?}",
        DEVIATIONS.len()
    );
}
