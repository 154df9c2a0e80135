//! Statements (the signed payload) from arbitrary bytes, each signed here with the fixed key so
//! the fuzzer gets past the signature check into the statement checks. Oracles: the signature
//! of a well-formed envelope always verifies (the failure, if any, is in the statement), and
//! whatever verifies is what the statement says.
#![no_main]

#[path = "../common/attest.rs"]
mod attest;

use deploy_gate::attest::VerifyError;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|payload: &[u8]| {
    match attest::verify_fixed(&attest::signed(payload)) {
        Ok(v) => attest::check_verified(&v, payload),
        Err(e @ (VerifyError::Envelope(_) | VerifyError::Signature { .. })) => {
            panic!(
                "an envelope signed by the trusted key failed the {} check: {e}",
                e.check()
            )
        }
        Err(_) => {}
    }
});
