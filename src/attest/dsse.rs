//! DSSE: the pre-authentication encoding and the envelope.

use base64::alphabet;
use base64::engine::general_purpose::{GeneralPurpose, GeneralPurposeConfig, STANDARD};
use base64::engine::DecodePaddingMode;
use base64::Engine;
use serde::{Deserialize, Serialize};

/// The payload type of an in-toto statement.
pub const PAYLOAD_TYPE: &str = "application/vnd.in-toto+json";

/// `PAE(type, body) = "DSSEv1" SP len(type) SP type SP len(body) SP body` (lengths in bytes).
pub fn pae(payload_type: &str, body: &[u8]) -> Vec<u8> {
    let mut out = pae_header(payload_type, body.len());
    out.extend_from_slice(body);
    out
}

/// The PAE up to the body, for a body of `body_len` bytes (a verifier decodes the body right
/// after it, so a large payload is never copied).
pub fn pae_header(payload_type: &str, body_len: usize) -> Vec<u8> {
    format!("DSSEv1 {} {payload_type} {body_len} ", payload_type.len()).into_bytes()
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

impl Envelope {
    /// The envelope as written to `decision.dsse.json`: indented JSON and a newline.
    pub fn to_json(&self) -> String {
        let mut text = serde_json::to_string_pretty(self).expect("an envelope serializes");
        text.push('\n');
        text
    }
}

/// Encodes bytes as standard base64 (with padding).
pub fn encode(bytes: &[u8]) -> String {
    STANDARD.encode(bytes)
}

const INDIFFERENT: GeneralPurposeConfig =
    GeneralPurposeConfig::new().with_decode_padding_mode(DecodePaddingMode::Indifferent);
const STANDARD_ANY_PAD: GeneralPurpose = GeneralPurpose::new(&alphabet::STANDARD, INDIFFERENT);
const URL_SAFE_ANY_PAD: GeneralPurpose = GeneralPurpose::new(&alphabet::URL_SAFE, INDIFFERENT);

/// Decodes standard or URL-safe base64, with or without padding (surrounding whitespace is
/// ignored; the two alphabets are not mixed).
pub fn decode(text: &str) -> Option<Vec<u8>> {
    // Three bytes more than the exact length: the decoder sizes its output by an estimate.
    let mut out = Vec::with_capacity(decoded_len(text)? + 3);
    decode_into(text, &mut out).then_some(out)
}

/// Decodes like [`decode`], appending to `out`; `false` (with `out` possibly extended) when the
/// text is not base64.
pub fn decode_into(text: &str, out: &mut Vec<u8>) -> bool {
    let t = text.trim();
    let engine = if memchr::memchr2(b'-', b'_', t.as_bytes()).is_some() {
        &URL_SAFE_ANY_PAD
    } else {
        &STANDARD_ANY_PAD
    };
    engine.decode_vec(t, out).is_ok()
}

/// How many bytes [`decode`] gives for a text, from its length alone (`None`: no base64 text
/// has that length), so a size limit is checked before anything is decoded.
pub fn decoded_len(text: &str) -> Option<usize> {
    let t = text.trim().as_bytes();
    let pad = t.iter().rev().take(2).take_while(|&&c| c == b'=').count();
    let n = t.len() - pad;
    match n % 4 {
        1 => None,
        r => Some(n / 4 * 3 + r.saturating_sub(1)),
    }
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
        assert!(decode("+/-_AA==").is_none(), "the alphabets are not mixed");
        assert_eq!(encode(&bytes), "+//+AA==");
    }

    #[test]
    fn decoded_len_is_exact_before_decoding() {
        for n in 0..40 {
            let bytes: Vec<u8> = (0..n as u8).map(|b| b.wrapping_mul(37)).collect();
            let padded = encode(&bytes);
            let unpadded = padded.trim_end_matches('=').to_owned();
            for text in [padded, unpadded, format!(" {} \n", encode(&bytes))] {
                assert_eq!(decoded_len(&text), Some(n), "{text}");
                assert_eq!(decode(&text).map(|d| d.len()), Some(n), "{text}");
            }
        }
        assert_eq!(decoded_len("A"), None);
        assert_eq!(decoded_len("AAAAA"), None);
    }
}
