//! DSSE envelopes from arbitrary bytes, verified with a fixed trusted key and clock. Oracle:
//! whatever verifies is what its payload says (the payload digest, the signer, approval,
//! target, time and subject, read independently).
#![no_main]

#[path = "../common/attest.rs"]
mod attest;

use libfuzzer_sys::fuzz_target;

fuzz_target!(|bytes: &[u8]| {
    if let Ok(v) = attest::verify_fixed(bytes) {
        let env: serde_json::Value = serde_json::from_slice(bytes).expect("a verified envelope is JSON");
        let payload = env["payload"]
            .as_str()
            .and_then(deploy_gate::attest::dsse::decode)
            .expect("a verified envelope has a base64 payload");
        attest::check_verified(&v, &payload);
    }
});
