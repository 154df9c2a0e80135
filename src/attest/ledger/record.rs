//! A config's own record of the decisions applied to it, kept in the lock file beside the
//! config: one line per step, `<payload sha256> <result> <config sha256 before> <after>` (`-`
//! where a hash is unknown), each written with one `write`. It is checked as well as the
//! ledger: one decision replaces one config once, whatever ledger a later apply is given.
//!
//! Sans-IO: [`Record::parse`] reads the file's bytes, [`Record::line`] gives the next line to
//! write and [`Record::wrote`] takes it in once written; the shell opens, locks, writes and
//! syncs. A line that is not a record line (a write cut short, or an older format) is skipped:
//! [`parse_line`] says why.

use super::{Entry, Outcome};
use std::collections::HashMap;

/// A result word in the record: one of [`Outcome`], or another word (from another version or
/// an edit), kept as written. Any result but `not_deployed` counts as applied.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RecordedResult {
    /// A word this version writes.
    Known(Outcome),
    /// Another word.
    Other(String),
}

impl RecordedResult {
    /// The word.
    pub fn as_str(&self) -> &str {
        match self {
            RecordedResult::Known(o) => o.as_str(),
            RecordedResult::Other(w) => w,
        }
    }

    fn of(word: &str) -> RecordedResult {
        Outcome::from_word(word).map_or_else(|| RecordedResult::Other(word.to_owned()), RecordedResult::Known)
    }
}

/// A decision's line in the record.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Recorded {
    /// Its result.
    pub result: RecordedResult,
    /// The config's sha256 (hex) before the deploy, where known.
    pub before: Option<String>,
    /// The config's sha256 (hex) after the deploy, where known.
    pub after: Option<String>,
    /// Its place among the record's lines (later lines have larger numbers).
    pub seq: usize,
}

/// Why a line of the record is not a record line (it is skipped).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RecordLineError {
    /// The line is not UTF-8.
    #[error("not UTF-8")]
    NotUtf8,
    /// The line does not have four words (a blank line has none).
    #[error("{0} word(s), not 4")]
    Words(usize),
    /// The first word is not a sha256 (64 hex digits).
    #[error("the payload `{0}` is not a sha256")]
    Payload(String),
    /// A config hash is neither `-` nor a sha256.
    #[error("the config hash `{0}` is neither `-` nor a sha256")]
    Hash(String),
}

fn is_sha256(w: &str) -> bool {
    w.len() == 64 && w.bytes().all(|b| b.is_ascii_hexdigit())
}

/// One line of the record (without its `\n`): the payload sha256 and what it records.
pub fn parse_line(line: &[u8]) -> Result<(String, Recorded), RecordLineError> {
    let line = std::str::from_utf8(line).map_err(|_| RecordLineError::NotUtf8)?;
    let words: Vec<&str> = line.split_ascii_whitespace().collect();
    let [payload, result, before, after] = words[..] else {
        return Err(RecordLineError::Words(words.len()));
    };
    if !is_sha256(payload) {
        return Err(RecordLineError::Payload(payload.to_owned()));
    }
    let hash = |w: &str| match w {
        "-" => Ok(None),
        w if is_sha256(w) => Ok(Some(w.to_owned())),
        w => Err(RecordLineError::Hash(w.to_owned())),
    };
    Ok((
        payload.to_owned(),
        Recorded {
            result: RecordedResult::of(result),
            before: hash(before)?,
            after: hash(after)?,
            seq: 0,
        },
    ))
}

/// A config's record: each decision's last line.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Record {
    decisions: HashMap<String, Recorded>,
    /// The bytes do not end in `\n` (a write cut short): the next line starts with one.
    unterminated: bool,
    lines: usize,
}

impl Record {
    /// Reads a record's bytes; lines that are not record lines are skipped.
    pub fn parse(bytes: &[u8]) -> Record {
        let mut record = Record {
            unterminated: !bytes.is_empty() && !bytes.ends_with(b"\n"),
            ..Record::default()
        };
        for line in bytes.split(|&b| b == b'\n') {
            if let Ok((payload, recorded)) = parse_line(line) {
                record.insert(payload, recorded);
            }
        }
        record
    }

    fn insert(&mut self, payload: String, mut recorded: Recorded) {
        self.lines += 1;
        recorded.seq = self.lines;
        self.decisions.insert(payload, recorded);
    }

    /// Whether the bytes end without `\n`, so that [`Record::line`] starts with one.
    pub fn unterminated(&self) -> bool {
        self.unterminated
    }

    /// The decision's last line.
    pub fn get(&self, payload_sha256: &str) -> Option<&Recorded> {
        self.decisions.get(payload_sha256)
    }

    /// The decision's last result on this config if it was (or may have been) applied to it
    /// and the config does not hold the bytes from before it again (`config_sha256` now): a
    /// config put back by hand to what it was before may get the decision again (its backup is
    /// then those bytes); one rolled back by `rollback` may not.
    pub fn applied(&self, payload_sha256: &str, config_sha256: &str) -> Option<&RecordedResult> {
        let r = self.decisions.get(payload_sha256)?;
        match &r.result {
            RecordedResult::Known(Outcome::NotDeployed) => None,
            RecordedResult::Known(Outcome::RolledBack) => Some(&r.result),
            _ if r.before.as_deref() == Some(config_sha256) => None,
            other => Some(other),
        }
    }

    /// The decision recorded as deployed whose config bytes after are `config_sha256` (the
    /// config holds its deploy now); of several, the one recorded last.
    pub fn deployed_as(&self, config_sha256: &str) -> Option<(&str, &Recorded)> {
        self.decisions
            .iter()
            .filter(|(_, r)| {
                r.result == RecordedResult::Known(Outcome::Deployed) && r.after.as_deref() == Some(config_sha256)
            })
            .max_by_key(|(_, r)| r.seq)
            .map(|(p, r)| (p.as_str(), r))
    }

    /// The bytes to append for `entry`'s decision with `result` (its config hashes, `-` where
    /// unknown), as one `write`: one whole line, after a `\n` if the record is unterminated.
    pub fn line(&self, entry: &Entry, result: Outcome) -> Vec<u8> {
        let before = entry.config_sha256_before.as_deref().unwrap_or("-");
        let after = entry.config_sha256_after.as_deref().unwrap_or("-");
        let mut line = if self.unterminated {
            "\n".to_owned()
        } else {
            String::new()
        };
        line.push_str(&format!(
            "{} {} {before} {after}\n",
            entry.payload_sha256,
            result.as_str()
        ));
        line.into_bytes()
    }

    /// Takes in the line [`Record::line`] gave, once it is written whole.
    pub fn wrote(&mut self, entry: &Entry, result: Outcome) {
        self.unterminated = false;
        let hash = |h: &Option<String>| h.clone().filter(|h| h != "-");
        self.insert(
            entry.payload_sha256.clone(),
            Recorded {
                result: RecordedResult::Known(result),
                before: hash(&entry.config_sha256_before),
                after: hash(&entry.config_sha256_after),
                seq: 0,
            },
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sha(c: char) -> String {
        c.to_string().repeat(64)
    }

    fn entry(payload: &str, before: Option<&str>, after: Option<&str>) -> Entry {
        let mut e = Entry::new(payload, Outcome::Intent, "t");
        e.config_sha256_before = before.map(str::to_owned);
        e.config_sha256_after = after.map(str::to_owned);
        e
    }

    #[test]
    fn lines_that_are_not_record_lines_say_why_and_are_skipped() {
        let (a, b) = (sha('a'), sha('b'));
        assert_eq!(parse_line(b"\xff\xfe"), Err(RecordLineError::NotUtf8));
        assert_eq!(parse_line(b""), Err(RecordLineError::Words(0)));
        // The older two-word format.
        assert_eq!(
            parse_line(format!("{a} deployed").as_bytes()),
            Err(RecordLineError::Words(2))
        );
        assert_eq!(
            parse_line(format!("{a} deployed - - extra").as_bytes()),
            Err(RecordLineError::Words(5))
        );
        assert_eq!(
            parse_line(b"abc deployed - -"),
            Err(RecordLineError::Payload("abc".into()))
        );
        assert_eq!(
            parse_line(format!("{a} deployed {b} 12").as_bytes()),
            Err(RecordLineError::Hash("12".into()))
        );
        assert_eq!(
            RecordLineError::Hash("12".into()).to_string(),
            "the config hash `12` is neither `-` nor a sha256"
        );
        let (payload, r) = parse_line(format!("{a} deployed - {b}").as_bytes()).unwrap();
        assert_eq!(
            (payload.as_str(), &r.result, r.before, r.after.as_deref()),
            (
                a.as_str(),
                &RecordedResult::Known(Outcome::Deployed),
                None,
                Some(b.as_str())
            )
        );
        // Tabs and a CR are whitespace; another result word is kept as written.
        let (_, r) = parse_line(format!("{a}\tsomething {b} {b}\r").as_bytes()).unwrap();
        assert_eq!(r.result, RecordedResult::Other("something".into()));
        let mut text = format!("garbage\n{a} intent {b} -\n").into_bytes();
        text.extend_from_slice(b"\xff\n");
        text.extend_from_slice(format!("{a} deployed {b} {a}\nabc").as_bytes());
        let record = Record::parse(&text);
        assert!(record.unterminated());
        assert_eq!(record.get(&a).unwrap().result, RecordedResult::Known(Outcome::Deployed));
        assert!(!Record::parse(b"").unterminated());
        assert!(!Record::parse(format!("{a} intent - -\n").as_bytes()).unterminated());
    }

    #[test]
    fn a_line_after_an_unterminated_record_starts_with_a_newline() {
        let (a, b) = (sha('a'), sha('b'));
        let e = entry(&a, Some(&b), None);
        let mut record = Record::parse(b"partial");
        assert_eq!(
            record.line(&e, Outcome::Intent),
            format!("\n{a} intent {b} -\n").into_bytes()
        );
        record.wrote(&e, Outcome::Intent);
        assert_eq!(
            record.line(&e, Outcome::Deployed),
            format!("{a} deployed {b} -\n").into_bytes()
        );
        // What is written reads back as what was taken in.
        let mut bytes = b"partial".to_vec();
        bytes.extend(Record::parse(b"partial").line(&e, Outcome::Intent));
        assert_eq!(Record::parse(&bytes).get(&a), record.get(&a));
    }

    #[test]
    fn the_last_line_decides_and_bytes_from_before_allow_a_redeploy() {
        let (p, before, after, other) = (sha('1'), sha('b'), sha('c'), sha('d'));
        let mut record = Record::default();
        assert_eq!(record.applied(&p, &before), None);
        let e = entry(&p, Some(&before), Some(&after));
        record.wrote(&e, Outcome::Intent);
        assert_eq!(record.applied(&p, &other).map(RecordedResult::as_str), Some("intent"));
        // The config holds the bytes from before it again: it may get the decision again.
        assert_eq!(record.applied(&p, &before), None);
        record.wrote(&e, Outcome::NotDeployed);
        assert_eq!(record.applied(&p, &other), None);
        record.wrote(&e, Outcome::Deployed);
        assert_eq!(record.applied(&p, &other).map(RecordedResult::as_str), Some("deployed"));
        record.wrote(&e, Outcome::RolledBack);
        // Rolled back by `rollback`: never again, even with the bytes from before.
        assert_eq!(
            record.applied(&p, &before).map(RecordedResult::as_str),
            Some("rolled_back")
        );
    }

    #[test]
    fn the_deploy_a_config_holds_is_the_one_recorded_last() {
        let (p1, p2, h0, h1) = (sha('1'), sha('2'), sha('a'), sha('b'));
        let mut record = Record::default();
        assert_eq!(record.deployed_as(&h1), None);
        record.wrote(&entry(&p1, Some(&h0), Some(&h1)), Outcome::Deployed);
        record.wrote(&entry(&p2, Some(&h1), Some(&h1)), Outcome::Deployed);
        assert_eq!(record.deployed_as(&h1).map(|(p, _)| p), Some(p2.as_str()));
        record.wrote(&entry(&p2, Some(&h1), Some(&h1)), Outcome::RolledBack);
        assert_eq!(record.deployed_as(&h1).map(|(p, _)| p), Some(p1.as_str()));
        assert_eq!(record.deployed_as(&h0), None);
        // Parsed, the order is the file's.
        let text = format!("{p2} deployed {h1} {h1}\n{p1} deployed {h0} {h1}\n");
        assert_eq!(
            Record::parse(text.as_bytes()).deployed_as(&h1).map(|(p, _)| p),
            Some(p1.as_str())
        );
    }
}
