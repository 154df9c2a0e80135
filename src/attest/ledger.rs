//! The ledger of applied decisions, sans-IO: one JSON object per line, parsed and formatted here;
//! the shell opens, locks, appends and syncs the file.
//!
//! Every entry names the decision (`payload_sha256`) and a `result`. A deploy that edits a
//! config writes an `intent` entry (with the sha256 of the config before and after) before it
//! replaces the config, and a `deployed` entry after; an apply interrupted between the two leaves
//! the intent as the decision's last entry, and the next apply resolves it by comparing the
//! config's bytes with the recorded hashes ([`resolve`]). A decision's state is its last entry's
//! result: any entry but `not_deployed` means it was applied (or may have been) and is not
//! applied again.
//!
//! Each entry is one line ending in `\n`, written with one `write`. A last line without a newline
//! is a write that was cut short (a crash or a full disk): [`parse`] reports it as
//! [`Tail::Torn`] with the length of the complete part, so the shell can cut it off, or, if it is
//! a whole entry that only lacks its newline, as [`Tail::Unterminated`] so the shell can end it.
//! A complete line that is not an entry is corruption and an error naming the line.
//! [`Ledger::repair`] decides what the shell does to such an end before it appends: cut a torn
//! line (only one that a cut-short entry write could have left), end an unterminated one.
//!
//! The config's own record of the decisions applied to it (the lines of its lock file) is
//! [`record`].

pub mod record;

use serde::{Deserialize, Serialize};

/// What an entry says happened to its decision.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Outcome {
    /// The new model was deployed (the config replaced, or the deploy command succeeded).
    Deployed,
    /// The decision kept the old model.
    KeptOld,
    /// A deploy was started: the config is about to be replaced (or the command run).
    Intent,
    /// A started deploy did not happen: the config still holds the bytes before. The decision
    /// may be applied again.
    NotDeployed,
    /// A started deploy's outcome cannot be known (the config holds neither the bytes before
    /// nor after, or a deploy command was interrupted). The decision is not applied again.
    Unknown,
    /// The decision was deployed, then `rollback` restored the config from before it. It is
    /// not applied again.
    RolledBack,
}

impl Outcome {
    /// Every outcome.
    pub const ALL: [Outcome; 6] = [
        Outcome::Deployed,
        Outcome::KeptOld,
        Outcome::Intent,
        Outcome::NotDeployed,
        Outcome::Unknown,
        Outcome::RolledBack,
    ];

    /// The outcome a word names ([`Outcome::as_str`]), if any.
    pub fn from_word(word: &str) -> Option<Outcome> {
        Outcome::ALL.into_iter().find(|o| o.as_str() == word)
    }

    /// The word written in the ledger.
    pub fn as_str(self) -> &'static str {
        match self {
            Outcome::Deployed => "deployed",
            Outcome::KeptOld => "kept_old",
            Outcome::Intent => "intent",
            Outcome::NotDeployed => "not_deployed",
            Outcome::Unknown => "unknown",
            Outcome::RolledBack => "rolled_back",
        }
    }
}

/// One ledger line.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Entry {
    /// The sha256 (hex) of the decision's statement bytes.
    pub payload_sha256: String,
    /// What happened.
    pub result: Outcome,
    /// When, RFC 3339 UTC.
    pub applied_at: String,
    /// The model name the decision's subject gives.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    /// `sha256:<hex>` of the model.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model_digest: Option<String>,
    /// The decision's target.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub target: Option<String>,
    /// The key ids that signed it.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub signers: Vec<String>,
    /// The key id of the trainer whose model signature (OpenSSF Model Signing) verified, when
    /// one was checked.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub trainer_key: Option<String>,
    /// The trainer's identity (the Fulcio certificate's subject alternative name), when the
    /// trainer signed by the keyless Sigstore method (then there is no `trainer_key`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub trainer_identity: Option<String>,
    /// The OIDC issuer of `trainer_identity`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub trainer_issuer: Option<String>,
    /// The config file that was (to be) replaced, after following symlinks.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub config: Option<String>,
    /// The backup of the config before the deploy.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub backup: Option<String>,
    /// sha256 (hex) of the config's bytes before the deploy.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub config_sha256_before: Option<String>,
    /// sha256 (hex) of the config's bytes after the deploy.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub config_sha256_after: Option<String>,
    /// The version a registry alias pointed to before the apply (`""`: the alias was not
    /// set), for `action: mlflow_alias` and `mlflow_restore`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub alias_before: Option<String>,
    /// The version the apply points the registry alias to.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub alias_version: Option<String>,
    /// `config` (the built-in edit), `command` (a deploy or rollback command), `mlflow_alias`
    /// (an MLflow registry alias moved) or `mlflow_restore` (the alias put back).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub action: Option<String>,
    /// Written by a later apply that resolved this decision's interrupted intent.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub recovered: bool,
    /// The config held this deploy's bytes already, so nothing was written (the decision was
    /// deployed to it through another ledger, or an earlier decision deployed the same model).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub unchanged: bool,
}

impl Entry {
    /// An entry with only the required fields.
    pub fn new(payload_sha256: &str, result: Outcome, applied_at: &str) -> Entry {
        Entry {
            payload_sha256: payload_sha256.to_owned(),
            result,
            applied_at: applied_at.to_owned(),
            model: None,
            model_digest: None,
            target: None,
            signers: Vec::new(),
            trainer_key: None,
            trainer_identity: None,
            trainer_issuer: None,
            config: None,
            backup: None,
            config_sha256_before: None,
            config_sha256_after: None,
            alias_before: None,
            alias_version: None,
            action: None,
            recovered: false,
            unchanged: false,
        }
    }

    /// The entry as one whole line, ending in `\n`, to be written with one `write`.
    pub fn to_line(&self) -> Vec<u8> {
        let mut line = serde_json::to_vec(self).expect("an entry serializes");
        line.push(b'\n');
        line
    }
}

/// The end of the ledger.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Tail {
    /// The file is empty or ends in `\n`.
    Clean,
    /// The last line is a whole entry without its `\n` (it is in [`Ledger::entries`]): a `\n`
    /// must be written before the next entry.
    Unterminated,
    /// The last line, without `\n`, is not an entry: a write cut short. It is not in
    /// [`Ledger::entries`]; the complete part is `complete_len` bytes.
    Torn {
        /// Its line number (1-based).
        line: usize,
        /// Its length in bytes.
        bytes: usize,
    },
}

/// What the shell must do to the end of a ledger before it appends an entry.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Repair {
    /// Nothing: the file is empty or ends in `\n`.
    Nothing,
    /// Write `\n` at the end: the last line is a whole entry without it.
    EndLine,
    /// Cut the file to `keep` bytes: its last line is an entry's write cut short.
    Cut {
        /// The length of the complete part ([`Ledger::complete_len`]).
        keep: usize,
        /// The torn line's number (1-based).
        line: usize,
        /// The torn line's length in bytes.
        bytes: usize,
    },
}

/// The start of every line [`Entry::to_line`] writes: a last line without `\n` that is
/// neither a prefix of it nor starts with it was not left by a cut-short entry write.
pub const ENTRY_START: &[u8] = br#"{"payload_sha256":""#;

/// A last line without `\n` that no cut-short entry write could have left: it is not cut.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("line {line} has no newline and is not the start of a ledger entry ({preview}); refused, nothing cut (is it a ledger?)")]
pub struct ForeignTail {
    /// Its line number (1-based).
    pub line: usize,
    /// Its start, quoted ([`preview`]).
    pub preview: String,
}

/// Some bytes of a ledger as a quoted, escaped string for a message: the first 120, with `…`
/// after the quote when there are more.
pub fn preview(bytes: &[u8]) -> String {
    let text = String::from_utf8_lossy(&bytes[..bytes.len().min(120)]).into_owned();
    if bytes.len() > 120 {
        format!("{text:?}…")
    } else {
        format!("{text:?}")
    }
}

/// A parsed ledger.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Ledger {
    /// The entries, in file order.
    pub entries: Vec<Entry>,
    /// How the file ends.
    pub tail: Tail,
    /// The length of the file up to the end of its last complete line.
    pub complete_len: usize,
}

/// A complete ledger line that is not an entry.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("line {line}: {message}")]
pub struct LedgerError {
    /// The line number (1-based).
    pub line: usize,
    /// What is wrong with it.
    pub message: String,
}

fn entry(line: &[u8], n: usize) -> Result<Entry, LedgerError> {
    let text = std::str::from_utf8(line).map_err(|_| LedgerError {
        line: n,
        message: "not UTF-8".into(),
    })?;
    serde_json::from_str(text.trim_end_matches('\r')).map_err(|e| LedgerError {
        line: n,
        message: format!("not a ledger entry ({e})"),
    })
}

/// Parses a ledger's bytes. Blank lines are skipped.
pub fn parse(bytes: &[u8]) -> Result<Ledger, LedgerError> {
    let mut entries = Vec::new();
    let mut start = 0;
    let mut n = 0;
    while start < bytes.len() {
        n += 1;
        let Some(end) = memchr::memchr(b'\n', &bytes[start..]).map(|i| start + i) else {
            let line = &bytes[start..];
            return Ok(match entry(line, n) {
                Ok(e) => {
                    entries.push(e);
                    Ledger {
                        entries,
                        tail: Tail::Unterminated,
                        complete_len: bytes.len(),
                    }
                }
                Err(_) if line.iter().all(u8::is_ascii_whitespace) => Ledger {
                    entries,
                    tail: Tail::Clean,
                    complete_len: bytes.len(),
                },
                Err(_) => Ledger {
                    entries,
                    tail: Tail::Torn {
                        line: n,
                        bytes: line.len(),
                    },
                    complete_len: start,
                },
            });
        };
        let line = &bytes[start..end];
        if !line.iter().all(u8::is_ascii_whitespace) {
            entries.push(entry(line, n)?);
        }
        start = end + 1;
    }
    Ok(Ledger {
        entries,
        tail: Tail::Clean,
        complete_len: bytes.len(),
    })
}

impl Ledger {
    /// What to do to the end of the ledger parsed from `bytes` before appending: nothing, end
    /// its last line, or cut a torn last line off — only when that line is the start of an
    /// entry (or a part of that start), which is what a write cut short leaves; anything else
    /// is refused.
    pub fn repair(&self, bytes: &[u8]) -> Result<Repair, ForeignTail> {
        match self.tail {
            Tail::Clean => Ok(Repair::Nothing),
            Tail::Unterminated => Ok(Repair::EndLine),
            Tail::Torn { line, bytes: n } => {
                let keep = self.complete_len;
                let torn = &bytes[keep.min(bytes.len())..];
                if torn.starts_with(ENTRY_START) || ENTRY_START.starts_with(torn) {
                    Ok(Repair::Cut { keep, line, bytes: n })
                } else {
                    Err(ForeignTail {
                        line,
                        preview: preview(torn),
                    })
                }
            }
        }
    }

    /// The decision's last entry.
    pub fn last(&self, payload_sha256: &str) -> Option<&Entry> {
        self.entries.iter().rev().find(|e| e.payload_sha256 == payload_sha256)
    }

    /// Whether the decision was applied, or may have been (an unresolved intent): its last entry
    /// is anything but `not_deployed`.
    pub fn applied(&self, payload_sha256: &str) -> bool {
        self.last(payload_sha256)
            .is_some_and(|e| e.result != Outcome::NotDeployed)
    }

    /// The intents not followed by an outcome of their decision, in file order.
    pub fn pending(&self) -> Vec<&Entry> {
        let mut out: Vec<&Entry> = Vec::new();
        for (i, e) in self.entries.iter().enumerate() {
            if e.result == Outcome::Intent
                && !self.entries[i + 1..]
                    .iter()
                    .any(|later| later.payload_sha256 == e.payload_sha256)
            {
                out.push(e);
            }
        }
        out
    }
}

/// What an interrupted intent turned out to be, from the config's bytes now (their sha256):
/// `deployed` if they are the bytes after, `not_deployed` if the bytes before, else `unknown`.
/// An intent without hashes (a deploy command) is `unknown`.
pub fn resolve(intent: &Entry, config_sha256_now: Option<&str>) -> Outcome {
    match (
        config_sha256_now,
        intent.config_sha256_after.as_deref(),
        intent.config_sha256_before.as_deref(),
    ) {
        (Some(now), Some(after), _) if now == after => Outcome::Deployed,
        (Some(now), _, Some(before)) if now == before => Outcome::NotDeployed,
        _ => Outcome::Unknown,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn line(payload: &str, result: Outcome) -> Vec<u8> {
        Entry::new(payload, result, "2026-12-01T00:00:00Z").to_line()
    }

    #[test]
    fn one_line_per_entry_round_trips_and_keeps_old_entries_readable() {
        let mut e = Entry::new("ab", Outcome::Intent, "2026-12-01T00:00:00Z");
        e.config_sha256_before = Some("00".into());
        let bytes = e.to_line();
        assert_eq!(bytes.iter().filter(|&&b| b == b'\n').count(), 1);
        assert_eq!(parse(&bytes).unwrap().entries, vec![e]);
        // An entry as earlier versions wrote it.
        let old = br#"{"payload_sha256":"cd","applied_at":"2026-11-01T00:00:00Z","result":"deployed","model":"m","model_digest":"sha256:00","target":"t","signers":["k"]}
"#;
        let l = parse(old).unwrap();
        assert_eq!(l.tail, Tail::Clean);
        assert!(l.applied("cd") && !l.applied("ab"));
    }

    #[test]
    fn a_torn_last_line_is_reported_with_the_complete_length() {
        let mut bytes = line("a", Outcome::Deployed);
        let good = bytes.len();
        bytes.extend_from_slice(br#"{"payload_sha256":"b","res"#);
        let l = parse(&bytes).unwrap();
        assert_eq!(l.tail, Tail::Torn { line: 2, bytes: 26 });
        assert_eq!(l.complete_len, good);
        assert_eq!(l.entries.len(), 1);
    }

    #[test]
    fn a_whole_last_entry_without_newline_is_unterminated() {
        let mut bytes = line("a", Outcome::Deployed);
        bytes.pop();
        let l = parse(&bytes).unwrap();
        assert_eq!((l.tail, l.entries.len()), (Tail::Unterminated, 1));
    }

    #[test]
    fn a_write_cut_at_any_byte_leaves_the_whole_entries_before_it() {
        let entries: Vec<Entry> = (0..3)
            .map(|i| Entry::new(&format!("{i:064x}"), Outcome::Deployed, "2026-12-01T00:00:00Z"))
            .collect();
        let bytes: Vec<u8> = entries.iter().flat_map(Entry::to_line).collect();
        let ends: Vec<usize> = bytes
            .iter()
            .enumerate()
            .filter(|(_, &b)| b == b'\n')
            .map(|(i, _)| i + 1)
            .collect();
        for cut in 0..=bytes.len() {
            let l = parse(&bytes[..cut]).unwrap();
            let whole = ends.iter().filter(|&&e| e <= cut).count();
            if ends.contains(&cut) || cut == 0 {
                assert_eq!((l.entries.len(), &l.tail), (whole, &Tail::Clean), "cut at {cut}");
            } else if ends.contains(&(cut + 1)) {
                // Only the newline is missing.
                assert_eq!(
                    (l.entries.len(), &l.tail),
                    (whole + 1, &Tail::Unterminated),
                    "cut at {cut}"
                );
            } else {
                assert_eq!(l.entries.len(), whole, "cut at {cut}");
                assert!(
                    matches!(l.tail, Tail::Torn { line, .. } if line == whole + 1),
                    "cut at {cut}"
                );
                assert_eq!(l.complete_len, ends.get(whole.wrapping_sub(1)).copied().unwrap_or(0));
            }
            assert_eq!(&l.entries[..], &entries[..l.entries.len()]);
        }
    }

    #[test]
    fn a_torn_entry_is_cut_where_its_line_starts_and_anything_else_is_refused() {
        let mut bytes = line("a", Outcome::Deployed);
        let good = bytes.len();
        let whole = line("b", Outcome::Deployed);
        // Every cut of the second entry's write but the last (the missing newline only).
        for cut in 1..whole.len() - 1 {
            bytes.truncate(good);
            bytes.extend_from_slice(&whole[..cut]);
            let l = parse(&bytes).unwrap();
            assert_eq!(
                l.repair(&bytes),
                Ok(Repair::Cut {
                    keep: good,
                    line: 2,
                    bytes: cut
                }),
                "cut at {cut}"
            );
        }
        bytes.truncate(good);
        bytes.extend_from_slice(&whole[..whole.len() - 1]);
        assert_eq!(parse(&bytes).unwrap().repair(&bytes), Ok(Repair::EndLine));
        bytes.truncate(good);
        assert_eq!(parse(&bytes).unwrap().repair(&bytes), Ok(Repair::Nothing));
        assert_eq!(parse(b"").unwrap().repair(b""), Ok(Repair::Nothing));
        // A last line that is not an entry's start is not cut.
        bytes.extend_from_slice(b"hello");
        let e = parse(&bytes).unwrap().repair(&bytes).unwrap_err();
        assert_eq!(e.line, 2);
        assert_eq!(
            e.to_string(),
            r#"line 2 has no newline and is not the start of a ledger entry ("hello"); refused, nothing cut (is it a ledger?)"#
        );
        // Another key first, even one that is JSON.
        let other = br#"{"result":"deployed","payload_sha256":"b""#;
        assert!(parse(other).unwrap().repair(other).is_err());
        // A long foreign line is shown by its start.
        let long = vec![b'x'; 500];
        let e = parse(&long).unwrap().repair(&long).unwrap_err();
        assert_eq!(e.preview, format!("{:?}…", "x".repeat(120)));
    }

    #[test]
    fn outcomes_are_named_by_their_words() {
        for o in Outcome::ALL {
            assert_eq!(Outcome::from_word(o.as_str()), Some(o));
            assert_eq!(serde_json::to_value(o).unwrap(), serde_json::json!(o.as_str()));
        }
        assert_eq!(Outcome::from_word("Deployed"), None);
    }

    #[test]
    fn a_bad_complete_line_is_an_error_naming_it() {
        let mut bytes = line("a", Outcome::Deployed);
        bytes.extend_from_slice(b"\nnot json\n");
        assert_eq!(parse(&bytes).unwrap_err().line, 3);
    }

    #[test]
    fn the_last_entry_decides_and_intents_resolve_by_hash() {
        let mut bytes = line("a", Outcome::Intent);
        bytes.extend(line("a", Outcome::NotDeployed));
        bytes.extend(line("b", Outcome::Intent));
        let l = parse(&bytes).unwrap();
        assert!(!l.applied("a"), "a deploy that did not happen may be retried");
        assert!(l.applied("b"), "an unresolved intent may have deployed");
        assert_eq!(l.pending().len(), 1);
        let mut i = Entry::new("b", Outcome::Intent, "t");
        i.config_sha256_before = Some("old".into());
        i.config_sha256_after = Some("new".into());
        assert_eq!(resolve(&i, Some("new")), Outcome::Deployed);
        assert_eq!(resolve(&i, Some("old")), Outcome::NotDeployed);
        assert_eq!(resolve(&i, Some("other")), Outcome::Unknown);
        assert_eq!(resolve(&i, None), Outcome::Unknown);
        i.config_sha256_before = Some("same".into());
        i.config_sha256_after = Some("same".into());
        assert_eq!(resolve(&i, Some("same")), Outcome::Deployed);
    }

    #[test]
    fn a_rolled_back_decision_counts_as_applied_and_round_trips() {
        let mut bytes = line("a", Outcome::Deployed);
        bytes.extend(line("a", Outcome::RolledBack));
        assert!(String::from_utf8_lossy(&bytes).contains(r#""result":"rolled_back""#));
        let l = parse(&bytes).unwrap();
        assert!(l.applied("a"), "a rolled-back decision is not applied again");
        assert_eq!(l.last("a").unwrap().result, Outcome::RolledBack);
        assert!(l.pending().is_empty());
    }
}
