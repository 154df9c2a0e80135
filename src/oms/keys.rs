//! The trainer's ECDSA public keys (P-256 with SHA-256, P-384 with SHA-384, as `model-signing
//! sign key` and `sign certificate` use them) and their ids.

use super::{Check, OmsError};
use p256::pkcs8::DecodePublicKey;
use sha2::{Digest as _, Sha256, Sha384};

/// An ECDSA public key on a curve OMS verification supports here.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum EcKey {
    /// NIST P-256 (secp256r1); signatures over SHA-256.
    P256(p256::ecdsa::VerifyingKey),
    /// NIST P-384 (secp384r1); signatures over SHA-384.
    P384(p384::ecdsa::VerifyingKey),
}

/// A public key: the key, its SPKI DER, and the two ids derived from it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TrustedKey {
    /// The key.
    pub key: EcKey,
    /// Its SubjectPublicKeyInfo, DER.
    pub spki_der: Vec<u8>,
    /// The key id deploy-gate prints: hex sha256 of the SPKI DER (as for the gate's own keys).
    pub key_id: String,
    /// `model-signing`'s `publicKey.hint`: hex sha256 of the SPKI PEM (64-column base64, LF).
    pub hint: String,
}

fn pem_of(der: &[u8]) -> String {
    let b64 = crate::attest::dsse::encode(der);
    let mut out = String::from("-----BEGIN PUBLIC KEY-----\n");
    for line in b64.as_bytes().chunks(64) {
        out.push_str(std::str::from_utf8(line).expect("base64 is ASCII"));
        out.push('\n');
    }
    out.push_str("-----END PUBLIC KEY-----\n");
    out
}

impl TrustedKey {
    /// A key from SPKI DER (P-256 or P-384; anything else is refused by name).
    pub fn from_spki_der(der: &[u8]) -> Result<TrustedKey, OmsError> {
        let key = if let Ok(k) = p256::ecdsa::VerifyingKey::from_public_key_der(der) {
            EcKey::P256(k)
        } else if let Ok(k) = p384::ecdsa::VerifyingKey::from_public_key_der(der) {
            EcKey::P384(k)
        } else {
            return Err(OmsError::new(
                Check::UntrustedKey,
                "the public key is not an ECDSA P-256 or P-384 key (SubjectPublicKeyInfo)",
            ));
        };
        Ok(TrustedKey {
            key,
            key_id: hex::encode(Sha256::digest(der)),
            hint: hex::encode(Sha256::digest(pem_of(der).as_bytes())),
            spki_der: der.to_vec(),
        })
    }

    /// A key from a `-----BEGIN PUBLIC KEY-----` PEM file's text.
    pub fn from_pem(pem: &str) -> Result<TrustedKey, OmsError> {
        let (label, der) = x509_cert::der::pem::decode_vec(pem.trim().as_bytes())
            .map_err(|e| OmsError::new(Check::UntrustedKey, format!("not a PEM public key: {e}")))?;
        if label != "PUBLIC KEY" {
            return Err(OmsError::new(
                Check::UntrustedKey,
                format!("the PEM block is `{label}`, not `PUBLIC KEY`"),
            ));
        }
        TrustedKey::from_spki_der(&der)
    }

    /// `P-256` or `P-384`.
    pub fn curve(&self) -> &'static str {
        match self.key {
            EcKey::P256(_) => "P-256",
            EcKey::P384(_) => "P-384",
        }
    }

    /// Whether `sig` (ASN.1 DER, or the fixed-size `r || s`) signs `message` with this key, the
    /// message hashed with the curve's hash.
    pub fn verifies(&self, message: &[u8], sig: &[u8]) -> bool {
        match &self.key {
            EcKey::P256(k) => verify_prehash_p256(k, &Sha256::digest(message), sig),
            EcKey::P384(k) => verify_prehash_p384(k, &Sha384::digest(message), sig),
        }
    }

    /// Whether `sig` signs a message whose hash (any length) is `prehash`.
    pub fn verifies_prehash(&self, prehash: &[u8], sig: &[u8]) -> bool {
        match &self.key {
            EcKey::P256(k) => verify_prehash_p256(k, prehash, sig),
            EcKey::P384(k) => verify_prehash_p384(k, prehash, sig),
        }
    }
}

fn verify_prehash_p256(k: &p256::ecdsa::VerifyingKey, prehash: &[u8], sig: &[u8]) -> bool {
    use p256::ecdsa::signature::hazmat::PrehashVerifier;
    let Ok(s) = p256::ecdsa::Signature::from_der(sig).or_else(|_| p256::ecdsa::Signature::from_slice(sig)) else {
        return false;
    };
    k.verify_prehash(prehash, &s).is_ok()
}

fn verify_prehash_p384(k: &p384::ecdsa::VerifyingKey, prehash: &[u8], sig: &[u8]) -> bool {
    use p384::ecdsa::signature::hazmat::PrehashVerifier;
    let Ok(s) = p384::ecdsa::Signature::from_der(sig).or_else(|_| p384::ecdsa::Signature::from_slice(sig)) else {
        return false;
    };
    k.verify_prehash(prehash, &s).is_ok()
}
