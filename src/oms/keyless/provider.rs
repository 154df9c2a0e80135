//! The cryptography `sigstore-verify` runs on: a [`CryptoProvider`] over RustCrypto crates
//! (sha2, p256, p384, ed25519-dalek, rsa), verification only, so that the same verifier builds for
//! wasm32 (the crate's own provider, aws-lc-rs, is C and is left out).

use sigstore_verify::crypto::provider::{CryptoProvider, HashContext};
use sigstore_verify::crypto::{Error, Result, SigningScheme};
use sigstore_verify::types::HashAlgorithm;

/// The RustCrypto provider.
#[derive(Debug)]
pub(crate) struct RustCrypto;

/// The one instance installed.
pub(crate) static RUST_CRYPTO: RustCrypto = RustCrypto;

struct Hash<D>(D);

impl<D: sha2::Digest + Send> HashContext for Hash<D> {
    fn update(&mut self, data: &[u8]) {
        self.0.update(data);
    }

    fn finalize(self: Box<Self>) -> Vec<u8> {
        self.0.finalize().to_vec()
    }
}

fn bad(e: impl std::fmt::Display) -> Error {
    Error::Verification(e.to_string())
}

/// A prehashed ECDSA verification with a SEC1 key and a DER signature, on curve `$c`.
macro_rules! ecdsa_prehash {
    ($c:ident, $key:expr, $digest:expr, $signature:expr) => {{
        use $c::ecdsa::signature::hazmat::PrehashVerifier as _;
        let key = $c::ecdsa::VerifyingKey::from_sec1_bytes($key).map_err(bad)?;
        let sig = $c::ecdsa::Signature::from_der($signature).map_err(bad)?;
        key.verify_prehash($digest, &sig).map_err(bad)
    }};
}

/// An RSA verification of a prehashed `digest` with a PKCS#1 `RSAPublicKey` DER key.
fn rsa_verify(key: &[u8], scheme: impl rsa::traits::SignatureScheme, digest: &[u8], signature: &[u8]) -> Result<()> {
    use rsa::pkcs1::DecodeRsaPublicKey as _;
    let key = rsa::RsaPublicKey::from_pkcs1_der(key).map_err(bad)?;
    key.verify(scheme, digest, signature).map_err(bad)
}

fn digest(alg: HashAlgorithm, data: &[u8]) -> Vec<u8> {
    use sha2::Digest as _;
    match alg {
        HashAlgorithm::Sha2384 => sha2::Sha384::digest(data).to_vec(),
        HashAlgorithm::Sha2512 => sha2::Sha512::digest(data).to_vec(),
        _ => sha2::Sha256::digest(data).to_vec(),
    }
}

impl CryptoProvider for RustCrypto {
    fn hash(&self, algorithm: HashAlgorithm) -> Result<Box<dyn HashContext>> {
        Ok(match algorithm {
            HashAlgorithm::Sha2256 => Box::new(Hash(sha2::Sha256::default())),
            HashAlgorithm::Sha2384 => Box::new(Hash(sha2::Sha384::default())),
            HashAlgorithm::Sha2512 => Box::new(Hash(sha2::Sha512::default())),
            other => return Err(Error::UnsupportedAlgorithm(format!("{other:?}"))),
        })
    }

    fn verify_raw(&self, scheme: SigningScheme, key: &[u8], data: &[u8], signature: &[u8]) -> Result<()> {
        if scheme == SigningScheme::Ed25519 {
            let key: [u8; 32] = key.try_into().map_err(bad)?;
            let key = ed25519_dalek::VerifyingKey::from_bytes(&key).map_err(bad)?;
            let sig = ed25519_dalek::Signature::from_slice(signature).map_err(bad)?;
            return key.verify_strict(data, &sig).map_err(bad);
        }
        let alg = scheme
            .hash_algorithm()
            .ok_or_else(|| Error::UnsupportedAlgorithm(scheme.name().to_owned()))?;
        self.verify_prehashed(scheme, key, &digest(alg, data), signature)
    }

    fn verify_prehashed(&self, scheme: SigningScheme, key: &[u8], digest: &[u8], signature: &[u8]) -> Result<()> {
        match scheme {
            SigningScheme::EcdsaP256Sha256 | SigningScheme::EcdsaP256Sha384 => {
                ecdsa_prehash!(p256, key, digest, signature)
            }
            SigningScheme::EcdsaP384Sha256 | SigningScheme::EcdsaP384Sha384 => {
                ecdsa_prehash!(p384, key, digest, signature)
            }
            SigningScheme::RsaPkcs1Sha256 => {
                rsa_verify(key, rsa::Pkcs1v15Sign::new::<sha2::Sha256>(), digest, signature)
            }
            SigningScheme::RsaPkcs1Sha384 => {
                rsa_verify(key, rsa::Pkcs1v15Sign::new::<sha2::Sha384>(), digest, signature)
            }
            SigningScheme::RsaPkcs1Sha512 => {
                rsa_verify(key, rsa::Pkcs1v15Sign::new::<sha2::Sha512>(), digest, signature)
            }
            SigningScheme::RsaPssSha256 => rsa_verify(key, rsa::Pss::new::<sha2::Sha256>(), digest, signature),
            SigningScheme::RsaPssSha384 => rsa_verify(key, rsa::Pss::new::<sha2::Sha384>(), digest, signature),
            SigningScheme::RsaPssSha512 => rsa_verify(key, rsa::Pss::new::<sha2::Sha512>(), digest, signature),
            other => Err(Error::UnsupportedAlgorithm(format!(
                "{} (deploy-gate verifies ECDSA P-256/P-384, Ed25519 and RSA Sigstore signatures)",
                other.name()
            ))),
        }
    }
}
