//! The policy pin: a signed statement names the sha256 of its report's policy (RFC 8785
//! canonical JSON), and a deploy step that keeps its own policy file requires that digest.

use super::verifier::Verified;
use crate::review::ReviewPin;

/// A policy whose digest is not the one the statement pins.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("resolves to sha256:{resolved}, the statement pins sha256:{pinned}")]
pub struct PolicyMismatch {
    /// The digest of the policy given, lowercase hex.
    pub resolved: String,
    /// The digest the statement pins (empty when it pins none).
    pub pinned: String,
}

impl Verified {
    /// The policy digest the statement pins (`predicate.policy.digest.sha256`), if any.
    pub fn policy_digest(&self) -> Option<&str> {
        self.statement["predicate"]["policy"]["digest"]["sha256"].as_str()
    }

    /// `Ok` when `digest` (of a resolved policy, as [`crate::policy::GatePolicy::digest`] gives
    /// it) is the one the statement pins.
    pub fn check_policy(&self, digest: &str) -> Result<(), PolicyMismatch> {
        let pinned = self.policy_digest().unwrap_or_default();
        if digest == pinned {
            Ok(())
        } else {
            Err(PolicyMismatch {
                resolved: digest.to_owned(),
                pinned: pinned.to_owned(),
            })
        }
    }
}

impl Verified {
    /// The review the decision was signed with, if any (checked when it was verified).
    pub fn review(&self) -> Option<ReviewPin> {
        super::verifier::review_pin(&self.statement).ok().flatten()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::{json, Value};

    fn verified(statement: Value) -> Verified {
        Verified {
            statement,
            payload_sha256: "p".into(),
            signers: vec!["k".into()],
            approved: true,
            outcome: crate::decision::Outcome::Approved,
            reason: "r".into(),
            model_name: "m".into(),
            model_sha256: "d".into(),
            subject_index: 0,
            target: "t".into(),
            time_verified: 0,
            report_text: String::new(),
        }
    }

    fn pinning(digest: &str) -> Verified {
        verified(json!({"predicate": {"policy": {"uri": "u", "digest": {"sha256": digest}}}}))
    }

    #[test]
    fn the_pinned_digest_is_read_from_the_predicate() {
        assert_eq!(pinning("ab12").policy_digest(), Some("ab12"));
        assert_eq!(verified(json!({"predicate": {}})).policy_digest(), None);
        assert_eq!(
            verified(json!({"predicate": {"policy": {"digest": {"sha256": 7}}}})).policy_digest(),
            None
        );
    }

    #[test]
    fn only_the_pinned_digest_passes() {
        assert_eq!(pinning("ab12").check_policy("ab12"), Ok(()));
        let e = pinning("ab12").check_policy("cd34").unwrap_err();
        assert_eq!(
            e,
            PolicyMismatch {
                resolved: "cd34".into(),
                pinned: "ab12".into()
            }
        );
        assert_eq!(e.to_string(), "resolves to sha256:cd34, the statement pins sha256:ab12");
    }

    #[test]
    fn a_statement_pinning_nothing_matches_no_policy() {
        let none = verified(json!({"predicate": {}}));
        let e = none.check_policy("cd34").unwrap_err();
        assert_eq!(e.to_string(), "resolves to sha256:cd34, the statement pins sha256:");
    }
}
