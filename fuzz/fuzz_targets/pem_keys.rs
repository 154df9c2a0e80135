//! PEM keys (PKCS#8 private, SPKI public). Oracle: a key that reads writes back to a PEM that
//! reads to the same key, with the same key id.
#![no_main]

use deploy_gate::attest::keys::{keyid, private_pem, public_pem, read_private_pem, read_public_pem};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    if let Ok(key) = read_private_pem(text) {
        let again = read_private_pem(&private_pem(&key)).expect("our private PEM reads");
        assert_eq!(again.to_bytes(), key.to_bytes());
        let public = key.verifying_key();
        let read = read_public_pem(&public_pem(&public)).expect("our public PEM reads");
        assert_eq!(read, public);
        assert_eq!(keyid(&read), keyid(&public));
    }
    if let Ok(key) = read_public_pem(text) {
        let again = read_public_pem(&public_pem(&key)).expect("our public PEM reads");
        assert_eq!(again, key);
        assert_eq!(keyid(&again), keyid(&key));
    }
});
