//! Ed25519 keys as PEM (PKCS#8 private, SPKI public, interoperable with openssl) and key ids.

use ed25519_dalek::pkcs8::{DecodePrivateKey, DecodePublicKey, EncodePublicKey};
use ed25519_dalek::SigningKey;
/// An Ed25519 public key, as the readers here give it and the verifier takes it.
pub use ed25519_dalek::VerifyingKey;
use sha2::{Digest, Sha256};

/// A key could not be read.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum KeyError {
    /// Not an Ed25519 PKCS#8 private key in PEM.
    #[error("not an Ed25519 private key (PKCS#8 PEM, as `openssl genpkey -algorithm ed25519` writes)")]
    Private,
    /// Not an Ed25519 SPKI public key in PEM.
    #[error("not an Ed25519 public key (SPKI PEM, as `openssl pkey -pubout` writes)")]
    Public,
}

/// A signing key made from 32 bytes of entropy (the caller draws them).
pub fn signing_key_from_seed(seed: [u8; 32]) -> SigningKey {
    SigningKey::from_bytes(&seed)
}

/// Reads a PKCS#8 PEM private key.
pub fn read_private_pem(pem: &str) -> Result<SigningKey, KeyError> {
    SigningKey::from_pkcs8_pem(pem.trim()).map_err(|_| KeyError::Private)
}

/// Reads an SPKI PEM public key.
pub fn read_public_pem(pem: &str) -> Result<VerifyingKey, KeyError> {
    VerifyingKey::from_public_key_pem(pem.trim()).map_err(|_| KeyError::Public)
}

/// The DER prefix of a PKCS#8 v1 Ed25519 private key (RFC 8410 §7): SEQUENCE, version 0,
/// AlgorithmIdentifier id-Ed25519, OCTET STRING wrapping the 32-byte seed.
const PKCS8_V1_PREFIX: [u8; 16] = [
    0x30, 0x2e, 0x02, 0x01, 0x00, 0x30, 0x05, 0x06, 0x03, 0x2b, 0x65, 0x70, 0x04, 0x22, 0x04, 0x20,
];

/// The private key as PKCS#8 v1 PEM, the form `openssl genpkey -algorithm ed25519` writes (and
/// OpenSSL 3.0 reads; it refuses the v2 form with the public key inside).
pub fn private_pem(key: &SigningKey) -> String {
    let mut der = PKCS8_V1_PREFIX.to_vec();
    der.extend_from_slice(&key.to_bytes());
    let b64 = crate::attest::dsse::encode(&der);
    format!("-----BEGIN PRIVATE KEY-----\n{b64}\n-----END PRIVATE KEY-----\n")
}

/// The public key as SPKI PEM.
pub fn public_pem(key: &VerifyingKey) -> String {
    key.to_public_key_pem(Default::default())
        .expect("an Ed25519 key encodes")
}

/// The key id: hex sha256 of the public key's SPKI DER.
pub fn keyid(key: &VerifyingKey) -> String {
    let der = key.to_public_key_der().expect("an Ed25519 key encodes");
    hex::encode(Sha256::digest(der.as_bytes()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use ed25519_dalek::{Signer, Verifier};

    fn bytes<const N: usize>(hex_text: &str) -> [u8; N] {
        hex::decode(hex_text).unwrap().try_into().unwrap()
    }

    #[test]
    fn rfc8032_vectors() {
        // RFC 8032 §7.1, TEST 1, TEST 2 and TEST 3.
        let vectors: &[(&str, &str, &str, &str)] = &[
            ("9d61b19deffd5a60ba844af492ec2cc44449c5697b326919703bac031cae7f60", "d75a980182b10ab7d54bfed3c964073a0ee172f3daa62325af021a68f707511a", "",
             "e5564300c360ac729086e2cc806e828a84877f1eb8e5d974d873e065224901555fb8821590a33bacc61e39701cf9b46bd25bf5f0595bbe24655141438e7a100b"),
            ("4ccd089b28ff96da9db6c346ec114e0f5b8a319f35aba624da8cf6ed4fb8a6fb", "3d4017c3e843895a92b70aa74d1b7ebc9c982ccf2ec4968cc0cd55f12af4660c", "72",
             "92a009a9f0d4cab8720e820b5f642540a2b27b5416503f8fb3762223ebdb69da085ac1e43e15996e458f3613d0f11d8c387b2eaeb4302aeeb00d291612bb0c00"),
            ("c5aa8df43f9f837bedb7442f31dcb7b166d38535076f094b85ce3a2e0b4458f7", "fc51cd8e6218a1a38da47ed00230f0580816ed13ba3303ac5deb911548908025", "af82",
             "6291d657deec24024827e69c3abe01a30ce548a284743a445e3680d7db5ac3ac18ff9b538d16f290ae67f760984dc6594a7c15e9716ed28dc027beceea1ec40a"),
        ];
        for (secret, public, message, signature) in vectors {
            let key = signing_key_from_seed(bytes(secret));
            assert_eq!(hex::encode(key.verifying_key().to_bytes()), *public);
            let msg = hex::decode(message).unwrap();
            let sig = key.sign(&msg);
            assert_eq!(hex::encode(sig.to_bytes()), *signature);
            assert!(key.verifying_key().verify(&msg, &sig).is_ok());
        }
    }

    #[test]
    fn pem_round_trip_and_keyid() {
        let key = signing_key_from_seed([7; 32]);
        let private = private_pem(&key);
        assert!(private.starts_with("-----BEGIN PRIVATE KEY-----"));
        // RFC 8410 §10.3's example key, byte for byte.
        let rfc = signing_key_from_seed(bytes(
            "d4ee72dbf913584ad5b6d8f1f769f8ad3afe7c28cbf1d4fbe097a88f44755842",
        ));
        assert_eq!(private_pem(&rfc), "-----BEGIN PRIVATE KEY-----\nMC4CAQAwBQYDK2VwBCIEINTuctv5E1hK1bbY8fdp+K06/nwoy/HU++CXqI9EdVhC\n-----END PRIVATE KEY-----\n");
        assert_eq!(read_private_pem(&private).unwrap().to_bytes(), key.to_bytes());
        let public = public_pem(&key.verifying_key());
        assert!(public.starts_with("-----BEGIN PUBLIC KEY-----"));
        assert_eq!(read_public_pem(&public).unwrap(), key.verifying_key());
        assert_eq!(keyid(&key.verifying_key()).len(), 64);
        assert_eq!(read_public_pem(&private), Err(KeyError::Public));
        assert_eq!(read_private_pem(&public).err(), Some(KeyError::Private));
    }
}
