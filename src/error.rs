//! The error for an input file that cannot be used: it names the file and, where one is known,
//! the line.

use std::fmt;

/// An input file is unusable; the message says where and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InputError {
    /// The file's role (`old_verdicts`, `new_trajectories`, …).
    pub role: String,
    /// The file name.
    pub file: String,
    /// 1-based line number, when the problem is on one line.
    pub line: Option<u64>,
    /// What is wrong, lowercase.
    pub message: String,
}

impl InputError {
    /// An error at a line of a file.
    pub fn at(role: &str, file: &str, line: Option<u64>, message: impl Into<String>) -> Self {
        InputError {
            role: role.into(),
            file: file.into(),
            line,
            message: message.into(),
        }
    }
}

impl fmt::Display for InputError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} ({})", self.file, self.role)?;
        if let Some(line) = self.line {
            write!(f, " line {line}")?;
        }
        write!(f, ": {}", self.message)
    }
}

impl std::error::Error for InputError {}
