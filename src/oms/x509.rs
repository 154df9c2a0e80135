//! The certificate method: the bundle's chain (signing certificate first) must lead, signature
//! by signature, to a certificate the deploy host trusts (`--trainer-root`).
//!
//! Deliberately small, and as `model-signing` checks it: every certificate on the path must be
//! valid at the signing certificate's `notBefore` (the signing time, as there is no timestamp),
//! issuers must be CAs, the signing certificate must allow digital signatures or code signing,
//! and an unknown critical extension is refused. Issuer keys must be ECDSA P-256 or P-384 with
//! ecdsa-with-SHA256/384 signatures; RSA issuers are refused by name. A trusted root must be
//! self-signed (an intermediate given as a root ends no chain, as in OpenSSL's default). There
//! is no revocation checking.

use super::keys::TrustedKey;
use super::{Check, OmsError};
use sha2::{Digest as _, Sha256, Sha384};
use x509_cert::der::{Decode, DecodePem, Encode};
use x509_cert::ext::pkix::{BasicConstraints, ExtendedKeyUsage, KeyUsage};
use x509_cert::Certificate;

const ECDSA_SHA256: &str = "1.2.840.10045.4.3.2";
const ECDSA_SHA384: &str = "1.2.840.10045.4.3.3";
const KEY_USAGE: &str = "2.5.29.15";
const EXT_KEY_USAGE: &str = "2.5.29.37";
const BASIC_CONSTRAINTS: &str = "2.5.29.19";
const SUBJECT_ALT_NAME: &str = "2.5.29.17";
const CODE_SIGNING: &str = "1.3.6.1.5.5.7.3.3";
/// The longest path followed (signing certificate, intermediates, root).
const MAX_PATH: usize = 8;

/// Certificates the deploy host trusts as roots of the certificate method.
#[derive(Debug, Clone, Default)]
pub struct Roots {
    certs: Vec<Certificate>,
}

/// The Sigstore (Fulcio) OID arc: its certificates carry extensions under it.
const FULCIO_ARC: &str = "1.3.6.1.4.1.57264.";

fn cert_err(detail: impl Into<String>) -> OmsError {
    OmsError::new(Check::Certificate, detail)
}

fn untrusted(detail: impl Into<String>) -> OmsError {
    OmsError::new(Check::UntrustedKey, detail)
}

impl Roots {
    /// No roots.
    pub fn new() -> Roots {
        Roots::default()
    }

    /// Adds every certificate of a PEM file's text.
    pub fn add_pem(&mut self, pem: &str) -> Result<(), OmsError> {
        let certs =
            Certificate::load_pem_chain(pem.as_bytes()).map_err(|e| cert_err(format!("not PEM certificates: {e}")))?;
        if certs.is_empty() {
            return Err(cert_err("no certificate in the PEM text"));
        }
        self.certs.extend(certs);
        Ok(())
    }

    /// Adds one PEM certificate.
    pub fn add_one_pem(&mut self, pem: &str) -> Result<(), OmsError> {
        let c = Certificate::from_pem(pem.as_bytes()).map_err(|e| cert_err(format!("not a PEM certificate: {e}")))?;
        self.certs.push(c);
        Ok(())
    }

    /// Whether no root was given.
    pub fn is_empty(&self) -> bool {
        self.certs.is_empty()
    }
}

/// The signing certificate's key and subject, once the chain is verified.
#[derive(Debug, Clone)]
pub struct ChainSigner {
    /// The signing certificate's public key.
    pub key: TrustedKey,
    /// The signing certificate's subject (RFC 4514).
    pub subject: String,
    /// The root's subject.
    pub root: String,
}

fn spki_key(c: &Certificate) -> Result<TrustedKey, OmsError> {
    let der = c
        .tbs_certificate
        .subject_public_key_info
        .to_der()
        .map_err(|e| cert_err(format!("the public key does not encode: {e}")))?;
    TrustedKey::from_spki_der(&der).map_err(|_| {
        cert_err(format!(
            "`{}` has a key that is not ECDSA P-256 or P-384 (RSA and others are not supported)",
            c.tbs_certificate.subject
        ))
    })
}

fn issued_by(child: &Certificate, issuer: &Certificate) -> Result<bool, OmsError> {
    if child.tbs_certificate.issuer != issuer.tbs_certificate.subject {
        return Ok(false);
    }
    let tbs = child
        .tbs_certificate
        .to_der()
        .map_err(|e| cert_err(format!("a certificate does not re-encode: {e}")))?;
    let prehash: Vec<u8> = match child.signature_algorithm.oid.to_string().as_str() {
        ECDSA_SHA256 => Sha256::digest(&tbs).to_vec(),
        ECDSA_SHA384 => Sha384::digest(&tbs).to_vec(),
        other => {
            return Err(cert_err(format!(
                "`{}` is signed with algorithm {other}; only ecdsa-with-SHA256/384 are supported",
                child.tbs_certificate.subject
            )))
        }
    };
    let Some(sig) = child.signature.as_bytes() else {
        return Ok(false);
    };
    let key = spki_key(issuer)?;
    Ok(key.verifies_prehash(&prehash, sig))
}

struct Exts {
    key_usage: Option<KeyUsage>,
    ext_key_usage: Option<ExtendedKeyUsage>,
    ca: bool,
    path_len: Option<u8>,
}

fn extensions(c: &Certificate) -> Result<Exts, OmsError> {
    let mut out = Exts {
        key_usage: None,
        ext_key_usage: None,
        ca: false,
        path_len: None,
    };
    let subject = &c.tbs_certificate.subject;
    for e in c.tbs_certificate.extensions.iter().flatten() {
        let bytes = e.extn_value.as_bytes();
        let bad = |what: &str| cert_err(format!("`{subject}`: the {what} extension does not decode"));
        match e.extn_id.to_string().as_str() {
            KEY_USAGE => out.key_usage = Some(KeyUsage::from_der(bytes).map_err(|_| bad("key usage"))?),
            EXT_KEY_USAGE => {
                out.ext_key_usage = Some(ExtendedKeyUsage::from_der(bytes).map_err(|_| bad("extended key usage"))?)
            }
            BASIC_CONSTRAINTS => {
                let b = BasicConstraints::from_der(bytes).map_err(|_| bad("basic constraints"))?;
                out.ca = b.ca;
                out.path_len = b.path_len_constraint;
            }
            SUBJECT_ALT_NAME => {}
            other if e.critical => {
                return Err(cert_err(format!(
                    "`{subject}` has the unknown critical extension {other}"
                )))
            }
            _ => {}
        }
    }
    Ok(out)
}

fn valid_at(c: &Certificate, t: std::time::Duration) -> Result<(), OmsError> {
    let v = &c.tbs_certificate.validity;
    if t < v.not_before.to_unix_duration() || t > v.not_after.to_unix_duration() {
        return Err(untrusted(format!(
            "`{}` is not valid at the signing time (valid {} to {})",
            c.tbs_certificate.subject, v.not_before, v.not_after
        )));
    }
    Ok(())
}

/// `issuer` may issue certificates on a path where `below` intermediate CA certificates lie
/// between it and the signing certificate (RFC 5280, as OpenSSL checks): a CA
/// (`basicConstraints` `CA:TRUE`), whose `keyUsage`, if it has one, allows `keyCertSign`, and
/// whose `pathLenConstraint`, if it has one, is at least `below`.
fn may_issue(issuer: &Certificate, below: usize, role: &str) -> Result<(), OmsError> {
    let subject = &issuer.tbs_certificate.subject;
    let e = extensions(issuer)?;
    if !e.ca {
        return Err(untrusted(format!("{role} `{subject}` is not a CA certificate")));
    }
    if e.key_usage.is_some_and(|k| !k.key_cert_sign()) {
        return Err(untrusted(format!(
            "{role} `{subject}` is a CA whose key usage does not include certificate signing (keyCertSign)"
        )));
    }
    if let Some(max) = e.path_len {
        if below > usize::from(max) {
            return Err(untrusted(format!(
                "{role} `{subject}` allows {max} intermediate CA certificate(s) below it (pathLenConstraint), the chain has {below}"
            )));
        }
    }
    Ok(())
}

/// Verifies the bundle's chain (DER, signing certificate first) to one of `roots`.
pub fn verify_chain(chain: &[Vec<u8>], roots: &Roots) -> Result<ChainSigner, OmsError> {
    if roots.is_empty() {
        return Err(untrusted(
            "the bundle is signed with a certificate and no trusted root certificate was given",
        ));
    }
    let certs = chain
        .iter()
        .enumerate()
        .map(|(i, der)| {
            Certificate::from_der(der).map_err(|e| cert_err(format!("certificate {i} of the bundle's chain: {e}")))
        })
        .collect::<Result<Vec<_>, _>>()?;
    let leaf = &certs[0];
    // A Fulcio certificate (the keyless method's, short-lived, meaningful only with its
    // transparency-log entry) re-wrapped as a chain is still the keyless method: refused by
    // name, whatever roots are trusted.
    if let Some(e) = certs
        .iter()
        .flat_map(|c| c.tbs_certificate.extensions.iter().flatten())
        .find(|e| e.extn_id.to_string().starts_with(FULCIO_ARC))
    {
        return Err(OmsError::new(
            Check::Keyless,
            format!(
                "a certificate of the chain carries the Sigstore Fulcio extension {}: the keyless method is not verified",
                e.extn_id
            ),
        ));
    }
    let when = leaf.tbs_certificate.validity.not_before.to_unix_duration();
    let leaf_ext = extensions(leaf)?;
    let signs = leaf_ext.key_usage.is_some_and(|k| k.digital_signature())
        || leaf_ext
            .ext_key_usage
            .as_ref()
            .is_some_and(|e| e.0.iter().any(|o| o.to_string() == CODE_SIGNING));
    if !signs {
        return Err(cert_err(format!(
            "the signing certificate `{}` allows neither digital signatures nor code signing",
            leaf.tbs_certificate.subject
        )));
    }
    let key = spki_key(leaf)?;
    let subject = leaf.tbs_certificate.subject.to_string();
    let mut current = leaf;
    // How many intermediate CA certificates lie between `current` and the leaf.
    for below in 0..MAX_PATH {
        valid_at(current, when)?;
        if let Some(root) = roots
            .certs
            .iter()
            .find(|r| *r == current && issued_by(r, r).unwrap_or(false))
        {
            // The certificate is itself trusted (an intermediate must still be allowed to
            // issue the path below it).
            if below > 0 {
                may_issue(current, below - 1, "the trusted certificate")?;
            }
            return Ok(ChainSigner {
                key,
                subject,
                root: root.tbs_certificate.subject.to_string(),
            });
        }
        for root in &roots.certs {
            // As OpenSSL (and so `model-signing`) by default: a trust anchor is a self-signed
            // certificate; an intermediate given as a root does not end a chain.
            if issued_by(current, root)? && issued_by(root, root)? {
                valid_at(root, when)?;
                may_issue(root, below, "the root")?;
                return Ok(ChainSigner {
                    key,
                    subject,
                    root: root.tbs_certificate.subject.to_string(),
                });
            }
        }
        let mut next = None;
        for c in &certs[1..] {
            if !std::ptr::eq(c, current) && issued_by(current, c)? {
                may_issue(c, below, "the issuer")?;
                next = Some(c);
                break;
            }
        }
        match next {
            Some(c) => current = c,
            None => {
                return Err(untrusted(format!(
                    "the chain of `{subject}` does not lead to a trusted root (stops at `{}`, issued by `{}`)",
                    current.tbs_certificate.subject, current.tbs_certificate.issuer
                )))
            }
        }
    }
    Err(untrusted(format!(
        "the chain of `{subject}` is longer than {MAX_PATH} certificates"
    )))
}
