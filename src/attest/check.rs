//! The names of the verification checks, one place for every shell (`verify`'s `check`, the
//! page's result, the ledger's refusals).

use serde::Serialize;

/// The name of a failed check, as printed in `check` (`"subject_digest"`, …).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Check {
    /// The threshold is more than the distinct trusted keys.
    Threshold,
    /// The envelope is larger than the limit.
    EnvelopeSize,
    /// Not a DSSE envelope.
    Envelope,
    /// More signatures than the limit.
    SignatureCount,
    /// The statement is larger than the limit.
    StatementSize,
    /// Too few trusted signatures verified.
    Signature,
    /// The payload type is not an in-toto statement.
    PayloadType,
    /// The statement has a key twice.
    DuplicateKey,
    /// Not an in-toto Statement v1.
    StatementType,
    /// The predicate is not a VSA, or incomplete.
    Predicate,
    /// The subject digest is not the artifact's.
    SubjectDigest,
    /// Several subjects could be the one meant.
    AmbiguousSubject,
    /// The target is not the one deployed to.
    Target,
    /// `timeVerified` is not a real RFC 3339 time.
    Time,
    /// The decision is older than the maximum age.
    TooOld,
    /// The decision is dated in the future.
    FromTheFuture,
    /// The decision was applied already (the ledger or the config's record).
    Replayed,
    /// The input files do not give the signed report ([`super::reproduce`]).
    Reproduce,
    /// The policy file given is not the policy the statement pins.
    Policy,
}

impl Check {
    /// The name.
    pub fn as_str(self) -> &'static str {
        match self {
            Check::Threshold => "threshold",
            Check::EnvelopeSize => "envelope_size",
            Check::Envelope => "envelope",
            Check::SignatureCount => "signature_count",
            Check::StatementSize => "statement_size",
            Check::Signature => "signature",
            Check::PayloadType => "payload_type",
            Check::DuplicateKey => "duplicate_key",
            Check::StatementType => "statement_type",
            Check::Predicate => "predicate",
            Check::SubjectDigest => "subject_digest",
            Check::AmbiguousSubject => "ambiguous_subject",
            Check::Target => "target",
            Check::Time => "time",
            Check::TooOld => "too_old",
            Check::FromTheFuture => "from_the_future",
            Check::Replayed => "replayed",
            Check::Reproduce => "reproduce",
            Check::Policy => "policy",
        }
    }
}

impl std::fmt::Display for Check {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}
