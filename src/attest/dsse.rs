//! DSSE: the pre-authentication encoding and the envelope.

use base64::engine::general_purpose::{STANDARD, STANDARD_NO_PAD, URL_SAFE, URL_SAFE_NO_PAD};
use base64::Engine;
use serde::{Deserialize, Serialize};

/// The payload type of an in-toto statement.
pub const PAYLOAD_TYPE: &str = "application/vnd.in-toto+json";

/// `PAE(type, body) = "DSSEv1" SP len(type) SP type SP len(body) SP body` (lengths in bytes).
pub fn pae(payload_type: &str, body: &[u8]) -> Vec<u8> {
    let mut out = format!("DSSEv1 {} {payload_type} {} ", payload_type.len(), body.len()).into_bytes();
    out.extend_from_slice(body);
    out
}

/// One signature of an envelope.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Signature {
    /// A hint naming the key (hex sha256 of its SPKI DER); never trusted by itself.
    #[serde(default)]
    pub keyid: String,
    /// The base64 signature.
    pub sig: String,
}

/// A DSSE envelope.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Envelope {
    /// The payload's type.
    pub payload_type: String,
    /// The base64 payload.
    pub payload: String,
    /// One or more signatures.
    pub signatures: Vec<Signature>,
}

/// Encodes bytes as standard base64 (with padding).
pub fn encode(bytes: &[u8]) -> String {
    STANDARD.encode(bytes)
}

/// Decodes standard or URL-safe base64, with or without padding.
pub fn decode(text: &str) -> Option<Vec<u8>> {
    let t = text.trim();
    [&STANDARD, &URL_SAFE, &STANDARD_NO_PAD, &URL_SAFE_NO_PAD]
        .iter()
        .find_map(|e| e.decode(t).ok())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pae_matches_the_spec_vector() {
        assert_eq!(
            pae("http://example.com/HelloWorld", b"hello world"),
            b"DSSEv1 29 http://example.com/HelloWorld 11 hello world".to_vec()
        );
        assert_eq!(pae("", b""), b"DSSEv1 0  0 ".to_vec());
        // Lengths count bytes, not characters.
        assert_eq!(pae("t", "é".as_bytes()), b"DSSEv1 1 t 2 \xC3\xA9".to_vec());
    }

    #[test]
    fn both_base64_alphabets_are_accepted() {
        let bytes = [0xfbu8, 0xff, 0xfe, 0x00];
        assert_eq!(decode("+//+AA==").unwrap(), bytes);
        assert_eq!(decode("-__-AA==").unwrap(), bytes);
        assert_eq!(decode("-__-AA").unwrap(), bytes);
        assert_eq!(decode("+//+AA").unwrap(), bytes);
        assert!(decode("not base64!").is_none());
        assert_eq!(encode(&bytes), "+//+AA==");
    }
}
