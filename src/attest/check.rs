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
    /// The review file given is not the one the statement pins, or it pins none.
    Review,
}

impl Check {
    /// Every check (the test below holds the list to the enum and to the TypeScript).
    pub const ALL: [Check; 20] = [
        Check::Threshold,
        Check::EnvelopeSize,
        Check::Envelope,
        Check::SignatureCount,
        Check::StatementSize,
        Check::Signature,
        Check::PayloadType,
        Check::DuplicateKey,
        Check::StatementType,
        Check::Predicate,
        Check::SubjectDigest,
        Check::AmbiguousSubject,
        Check::Target,
        Check::Time,
        Check::TooOld,
        Check::FromTheFuture,
        Check::Replayed,
        Check::Reproduce,
        Check::Policy,
        Check::Review,
    ];

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
            Check::Review => "review",
        }
    }
}

impl std::fmt::Display for Check {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::Check;

    /// Adding a variant breaks this match until it is listed here and in [`Check::ALL`].
    #[allow(dead_code)]
    fn listed(c: Check) {
        match c {
            Check::Threshold
            | Check::EnvelopeSize
            | Check::Envelope
            | Check::SignatureCount
            | Check::StatementSize
            | Check::Signature
            | Check::PayloadType
            | Check::DuplicateKey
            | Check::StatementType
            | Check::Predicate
            | Check::SubjectDigest
            | Check::AmbiguousSubject
            | Check::Target
            | Check::Time
            | Check::TooOld
            | Check::FromTheFuture
            | Check::Replayed
            | Check::Reproduce
            | Check::Policy
            | Check::Review => {}
        }
    }

    #[test]
    fn the_typescript_check_names_are_these() {
        // A new check (a variant above, then the compiler's exhaustive match in `as_str`) must
        // reach the JS package's `CheckName`, and a name removed here must leave it.
        let wasm = include_str!("../wasm.rs");
        let line = wasm
            .lines()
            .find(|l| l.starts_with("export type CheckName ="))
            .expect("wasm.rs declares CheckName");
        let mut declared: Vec<&str> = line
            .trim_start_matches("export type CheckName =")
            .trim_end_matches(';')
            .split('|')
            .map(|n| n.trim().trim_matches('"'))
            .collect();
        let mut names: Vec<&str> = Check::ALL.iter().map(|c| c.as_str()).collect();
        declared.sort_unstable();
        names.sort_unstable();
        assert_eq!(declared, names);
        for c in Check::ALL {
            // Each variant has a name of its own.
            assert_eq!(Check::ALL.iter().filter(|d| d.as_str() == c.as_str()).count(), 1);
        }
    }
}
