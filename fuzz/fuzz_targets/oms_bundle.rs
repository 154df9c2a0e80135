//! OpenSSF Model Signing bundles from arbitrary bytes, verified with a fixed trusted P-256 key
//! (tests/fixtures/oms/keys/p256.pub.pem), a fixed root and, for the keyless method, the
//! reference bundles' signer (tests/fixtures/oms-keyless) under the bundled Sigstore root. Oracle: nothing panics; whatever
//! verifies has a subject digest equal to its resources' digest, and a file check of its own
//! resources passes.
#![no_main]

use deploy_gate::oms::keyless::{Identity, KeylessTrust, SigstoreRoot};
use deploy_gate::oms::{self, Manifest, Roots, Trust, TrustedKey};
use libfuzzer_sys::fuzz_target;
use std::sync::OnceLock;

fn trust() -> &'static Trust {
    static TRUST: OnceLock<Trust> = OnceLock::new();
    TRUST.get_or_init(|| {
        let key = include_str!("../../tests/fixtures/oms/keys/p256.pub.pem");
        let mut roots = Roots::new();
        roots
            .add_pem(include_str!("../../tests/fixtures/oms/keys/root.pem"))
            .expect("the fixture root reads");
        Trust {
            keys: vec![TrustedKey::from_pem(key).expect("the fixture key reads")],
            roots,
            keyless: Some(KeylessTrust {
                identities: vec![Identity {
                    identity: "stefanb@us.ibm.com".into(),
                    issuer: "https://sigstore.verify.ibm.com/oauth2".into(),
                }],
                root: SigstoreRoot::public_good(),
            }),
        }
    })
}

fuzz_target!(|bytes: &[u8]| {
    if let Ok(b) = oms::Bundle::parse(bytes) {
        let _ = oms::Statement::parse(&b.payload);
    }
    if let Ok(v) = oms::verify_bundle(bytes, trust()) {
        assert_eq!(oms::digest_of(&v.resources), v.subject_digest);
        let own = Manifest::new(v.method, v.resources.clone());
        v.check_files(&own).expect("a manifest of the signed resources matches them");
    }
});
