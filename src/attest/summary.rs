//! What a verification says, as one serialisable shape for every shell: [`Summary`] for a
//! verified decision, [`Failure`] for a rejected one, and [`Check`], the name of each check.
//!
//! The CLI prints a [`Summary`] (`verify`, `apply --dry-run`) or passes it on (`apply`'s
//! `decision`), and a [`Failure`] on exit 2; the page gets the same two shapes with a
//! [`Scope`] added (what it was asked to check, since there the digest and target are
//! optional). Field order is the printed order.

use super::check::Check;
use super::time;
use super::verifier::Verified;
use super::VerificationResult;
use serde::{Serialize, Serializer};

/// `valid: true`, the mark of a [`Summary`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Valid;

impl Serialize for Valid {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_bool(true)
    }
}

/// `valid: false`, the mark of a [`Failure`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Invalid;

impl Serialize for Invalid {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_bool(false)
    }
}

/// What a caller that may leave checks out asked for (the page: the model digest and the
/// target are optional there). The CLI requires both, and does not print it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Scope {
    /// The key ids the envelope's signatures name, trusted or not, in envelope order (an
    /// envelope that is not JSON names none).
    pub hinted_keyids: Vec<String>,
    /// A model digest was given, so the subject was checked against it.
    pub subject_checked: bool,
    /// A target was given, so the statement's target was checked against it.
    pub target_checked: bool,
}

/// A verified decision, as printed by `verify` and passed on by `apply`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Summary {
    /// Always `true`.
    pub valid: Valid,
    /// `PASSED` or `FAILED`, as signed.
    pub verification_result: VerificationResult,
    /// Whether the decision deploys the new model (`verification_result == PASSED`).
    pub approved: bool,
    /// `approved`, `blocked` or `inconclusive` (the last two keep the old model).
    pub outcome: crate::decision::Outcome,
    /// The decision's reason.
    pub reason: String,
    /// The name of the subject that matched the model.
    pub model: String,
    /// That subject's digest, `sha256:<hex>`.
    pub model_digest: String,
    /// That subject's position in the statement's `subject` list.
    pub subject_index: usize,
    /// The statement's target (`resourceUri`).
    pub target: String,
    /// When the decision was signed, RFC 3339 UTC.
    pub time_verified: String,
    /// The key ids of the trusted keys whose signatures verified, each once.
    pub signers: Vec<String>,
    /// sha256 (hex) of the statement's bytes: the decision's key in the ledger.
    pub payload_sha256: String,
    /// The review the decision was signed with (`sign --review`): the file's sha256 and size,
    /// its cases per mark, and how many regressed cases it marks; absent when it has none.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub review: Option<crate::review::ReviewPin>,
    /// The page's [`Scope`]; absent from the CLI's output.
    #[serde(flatten, skip_serializing_if = "Option::is_none")]
    pub scope: Option<Scope>,
}

impl Summary {
    /// The summary of a verified decision (no scope).
    pub fn of(v: &Verified) -> Summary {
        Summary {
            valid: Valid,
            verification_result: VerificationResult::of(v.approved),
            approved: v.approved,
            outcome: v.outcome,
            reason: v.reason.clone(),
            model: v.model_name.clone(),
            model_digest: format!("sha256:{}", v.model_sha256),
            subject_index: v.subject_index,
            target: v.target.clone(),
            time_verified: time::format_rfc3339(v.time_verified),
            signers: v.signers.clone(),
            payload_sha256: v.payload_sha256.clone(),
            review: v.review(),
            scope: None,
        }
    }

    /// With the caller's scope.
    pub fn with_scope(mut self, scope: Scope) -> Summary {
        self.scope = Some(scope);
        self
    }
}

/// A rejected decision: `{"valid": false, "check", "message"}`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Failure {
    /// Always `false`.
    pub valid: Invalid,
    /// The check that failed.
    pub check: Check,
    /// What is wrong, for a person.
    pub message: String,
    /// With a scope (the page): the trusted signers, none (the page's result has `signers` in
    /// both shapes). Absent from the CLI's output.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub signers: Option<Vec<String>>,
    /// The page's [`Scope`]; absent from the CLI's output.
    #[serde(flatten, skip_serializing_if = "Option::is_none")]
    pub scope: Option<Scope>,
}

impl Failure {
    /// A failure of `check` (no scope).
    pub fn new(check: Check, message: impl Into<String>) -> Failure {
        Failure {
            valid: Invalid,
            check,
            message: message.into(),
            signers: None,
            scope: None,
        }
    }

    /// With the caller's scope (and an empty `signers`).
    pub fn with_scope(mut self, scope: Scope) -> Failure {
        self.signers = Some(Vec::new());
        self.scope = Some(scope);
        self
    }
}

impl From<&super::VerifyError> for Failure {
    fn from(e: &super::VerifyError) -> Failure {
        Failure::new(e.kind(), e.to_string())
    }
}

/// A verification's result: a [`Summary`] or a [`Failure`] (told apart by `valid`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(untagged)]
pub enum VerifyResult {
    /// Verified.
    Valid(Summary),
    /// Rejected.
    Invalid(Failure),
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn verified() -> Verified {
        Verified {
            statement: json!({}),
            payload_sha256: "ab".repeat(32),
            signers: vec!["k1".into(), "k2".into()],
            approved: false,
            outcome: crate::decision::Outcome::Blocked,
            reason: "blocked: task accuracy regressed".into(),
            model_name: "agent-7b".into(),
            model_sha256: "cd".repeat(32),
            subject_index: 1,
            target: "file:serving.yaml".into(),
            time_verified: 1_764_547_200,
            report_text: String::new(),
        }
    }

    #[test]
    fn the_cli_summary_is_printed_in_its_order_without_the_scope() {
        let text = serde_json::to_string_pretty(&Summary::of(&verified())).unwrap();
        let want = format!(
            r#"{{
  "valid": true,
  "verification_result": "FAILED",
  "approved": false,
  "outcome": "blocked",
  "reason": "blocked: task accuracy regressed",
  "model": "agent-7b",
  "model_digest": "sha256:{cd}",
  "subject_index": 1,
  "target": "file:serving.yaml",
  "time_verified": "2025-12-01T00:00:00Z",
  "signers": [
    "k1",
    "k2"
  ],
  "payload_sha256": "{ab}"
}}"#,
            cd = "cd".repeat(32),
            ab = "ab".repeat(32)
        );
        assert_eq!(text, want);
        let mut approved = verified();
        approved.approved = true;
        assert_eq!(
            serde_json::to_value(Summary::of(&approved)).unwrap()["verification_result"],
            "PASSED"
        );
    }

    #[test]
    fn the_page_gets_the_summary_and_its_scope() {
        let scope = Scope {
            hinted_keyids: vec!["k9".into()],
            subject_checked: true,
            target_checked: false,
        };
        let v = serde_json::to_value(VerifyResult::Valid(Summary::of(&verified()).with_scope(scope.clone()))).unwrap();
        for key in [
            "valid",
            "verification_result",
            "approved",
            "outcome",
            "reason",
            "model",
            "model_digest",
            "subject_index",
            "target",
            "time_verified",
            "signers",
            "payload_sha256",
        ] {
            assert!(v.get(key).is_some(), "{key}");
        }
        assert_eq!(
            (
                &v["valid"],
                &v["hinted_keyids"],
                &v["subject_checked"],
                &v["target_checked"]
            ),
            (&json!(true), &json!(["k9"]), &json!(true), &json!(false))
        );
        let f = serde_json::to_value(VerifyResult::Invalid(
            Failure::new(Check::Signature, "0 of the required 1").with_scope(scope),
        ))
        .unwrap();
        assert_eq!(
            f,
            json!({"valid": false, "check": "signature", "message": "0 of the required 1", "signers": [],
                   "hinted_keyids": ["k9"], "subject_checked": true, "target_checked": false})
        );
    }

    #[test]
    fn the_cli_failure_is_three_fields_in_order() {
        let f = Failure::new(Check::Target, "the statement is for target `a`, not `b`");
        assert_eq!(
            serde_json::to_string(&f).unwrap(),
            r#"{"valid":false,"check":"target","message":"the statement is for target `a`, not `b`"}"#
        );
    }

    #[test]
    fn each_check_serialises_as_its_name() {
        for c in Check::ALL {
            assert_eq!(serde_json::to_value(c).unwrap(), json!(c.as_str()));
            assert_eq!(c.to_string(), c.as_str());
        }
    }
}
