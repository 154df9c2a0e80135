//! How a signed decision and the trainer's signature name the same model: the decision's
//! digest scheme, the digest the model was read by, and the same-model rule a deploy checks.

use super::{Check, Method, OmsError, Verified};

/// How the gate's decision and the trainer's signature name the model.
#[derive(Debug, Clone)]
pub struct ModelIdentity {
    /// The model's digest (hex) by the decision's scheme: the OMS subject digest when the
    /// decision's subject carries `digest_scheme: oms-v1.0-files`, else the original digest.
    pub digest: String,
    /// The decision's digest scheme (`None`: the original one).
    pub scheme: Option<String>,
    /// The trainer's verified signature, when one was asked for.
    pub trainer: Option<Verified>,
}

impl ModelIdentity {
    /// `model_identity`: the decision's subject digest (`decision_sha256`, as verified) must be
    /// the trainer's subject digest when both are OMS `files` digests; otherwise (a decision
    /// signed with the original scheme, a trainer's signature by `shards`) both were checked
    /// against the same files, which is all that can be compared.
    pub fn check_same_model(&self, decision_sha256: &str) -> Result<(), OmsError> {
        let Some(t) = &self.trainer else { return Ok(()) };
        if self.matched_by() == "digest" && super::check::by_digest(t, decision_sha256).same != Some(true) {
            return Err(OmsError::new(
                Check::ModelIdentity,
                format!(
                    "the decision names the model sha256:{decision_sha256}, the trainer's signature names sha256:{} (`{}`)",
                    t.subject_digest_hex(),
                    t.model_name
                ),
            ));
        }
        Ok(())
    }

    /// The decision's subject that matched the digest (`v`, as verified against
    /// [`ModelIdentity::digest`]) must be annotated with the scheme that digest was computed by
    /// (no annotation: the original scheme). Without this, a decision for one folder's OMS
    /// digest, read as the original scheme, would match a single file made of that folder's
    /// file digests (the original digest of a file is its sha256).
    pub fn check_scheme(&self, v: &crate::attest::Verified) -> Result<(), crate::attest::Failure> {
        let signed = v.statement.pointer(&format!(
            "/subject/{}/annotations/{}",
            v.subject_index,
            crate::attest::DIGEST_SCHEME
        ));
        let same = match (signed, self.scheme.as_deref()) {
            (None, None) => true,
            (Some(serde_json::Value::String(s)), Some(computed)) => s == computed,
            _ => false,
        };
        if same {
            return Ok(());
        }
        let name = |s: Option<&str>| s.map_or_else(|| "the original scheme".to_owned(), |s| format!("`{s}`"));
        let signed = match signed {
            None => name(None),
            Some(serde_json::Value::String(s)) => name(Some(s)),
            Some(other) => format!("the unreadable scheme {other}"),
        };
        Err(crate::attest::Failure::new(
            crate::attest::Check::SubjectDigest,
            format!(
                "the decision's subject sha256:{} is a digest by {signed}, but the model's digest was computed by {}; refused",
                v.model_sha256,
                name(self.scheme.as_deref())
            ),
        ))
    }

    /// How the two are matched: `digest` (the same OMS `files` digest) or `files` (a decision
    /// signed with the original scheme, or a trainer's signature by `shards`: the two digests
    /// are of different kinds, and both were checked against the same files).
    pub fn matched_by(&self) -> &'static str {
        let trainer_files = self.trainer.as_ref().is_none_or(|t| t.method == Method::Files);
        if self.scheme.as_deref() == Some(crate::attest::OMS_FILES_SCHEME) && trainer_files {
            "digest"
        } else {
            "files"
        }
    }
}

/// The digest scheme the decision's first subject carrying one is annotated with (`None`: the
/// original one), read from the envelope's bytes without trust, only to know which digest to
/// compute. The verifier then checks the same bytes' signature and compares that digest with
/// the signed subject, and [`ModelIdentity::check_scheme`] requires the matched subject to be
/// annotated with the scheme the digest was computed by: a wrong guess can only refuse.
pub fn decision_scheme(envelope: &[u8]) -> Option<String> {
    let env: crate::attest::dsse::Envelope = serde_json::from_slice(envelope).ok()?;
    let payload = crate::attest::dsse::decode(&env.payload)?;
    let statement: serde_json::Value = serde_json::from_slice(&payload).ok()?;
    let mut schemes = statement.get("subject")?.as_array()?.iter().filter_map(|s| {
        s.pointer("/annotations/digest_scheme")
            .and_then(|v| v.as_str())
            .map(str::to_owned)
    });
    schemes.next()
}
