//! The input files and their roles: which file is which ([`Role`]), a file as the report lists
//! it ([`InputFile`]), and the error for a file that cannot be used ([`InputError`]), which
//! names the file and, where one is known, the line.

use serde::{Deserialize, Serialize};
use std::fmt;

/// What an input file is. Serialised (in reports and errors) as `audit`, `old_verdicts`,
/// `new_verdicts`, `old_trajectories`, `new_trajectories`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Role {
    /// An audit log.
    Audit,
    /// The deployed model's verdicts.
    OldVerdicts,
    /// The retrained model's verdicts.
    NewVerdicts,
    /// The deployed model's trajectory-evaluation results.
    OldTrajectories,
    /// The retrained model's trajectory-evaluation results.
    NewTrajectories,
}

impl Role {
    /// Every role, in the order above.
    pub const ALL: [Role; 5] = [
        Role::Audit,
        Role::OldVerdicts,
        Role::NewVerdicts,
        Role::OldTrajectories,
        Role::NewTrajectories,
    ];

    /// The role's name, as it appears in reports and errors.
    pub fn as_str(self) -> &'static str {
        match self {
            Role::Audit => "audit",
            Role::OldVerdicts => "old_verdicts",
            Role::NewVerdicts => "new_verdicts",
            Role::OldTrajectories => "old_trajectories",
            Role::NewTrajectories => "new_trajectories",
        }
    }
}

/// Which model a verdict or trajectory file belongs to. Serialised as `old`, `new`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Side {
    /// The deployed model.
    Old,
    /// The retrained model.
    New,
}

impl Role {
    /// The verdict file of a model.
    pub fn verdicts(side: Side) -> Role {
        match side {
            Side::Old => Role::OldVerdicts,
            Side::New => Role::NewVerdicts,
        }
    }

    /// The trajectory file of a model.
    pub fn trajectories(side: Side) -> Role {
        match side {
            Side::Old => Role::OldTrajectories,
            Side::New => Role::NewTrajectories,
        }
    }

    /// The model a verdict or trajectory file belongs to (`None` for the audit log).
    pub fn side(self) -> Option<Side> {
        match self {
            Role::Audit => None,
            Role::OldVerdicts | Role::OldTrajectories => Some(Side::Old),
            Role::NewVerdicts | Role::NewTrajectories => Some(Side::New),
        }
    }
}

impl fmt::Display for Role {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A name that is not one of the five roles.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown role `{0}`")]
pub struct UnknownRole(pub String);

impl std::str::FromStr for Role {
    type Err = UnknownRole;
    fn from_str(s: &str) -> Result<Role, UnknownRole> {
        Role::ALL
            .into_iter()
            .find(|r| r.as_str() == s)
            .ok_or_else(|| UnknownRole(s.to_owned()))
    }
}

/// A file read as input, as listed in the report.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct InputFile {
    /// What the file is.
    pub role: Role,
    /// The file name (no directory).
    pub name: String,
    /// Its size in bytes.
    pub bytes: u64,
    /// Lowercase hex sha256 of its bytes.
    pub sha256: String,
}

/// An input file is unusable; the message says where and why.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub struct InputError {
    /// The file's role.
    pub role: Role,
    /// The file name.
    pub file: String,
    /// 1-based line number, when the problem is on one line.
    pub line: Option<u64>,
    /// 1-based column on that line, counted in bytes, when the problem is at one place of it
    /// (a byte that is not UTF-8, where the JSON stops being JSON, a value of the wrong type).
    pub column: Option<u64>,
    /// What is wrong, lowercase.
    pub message: String,
}

impl InputError {
    /// An error at a line of a file.
    pub fn at(role: Role, file: &str, line: Option<u64>, message: impl Into<String>) -> Self {
        InputError {
            role,
            file: file.into(),
            line,
            column: None,
            message: message.into(),
        }
    }

    /// An error at a line and column of a file.
    pub fn at_column(role: Role, file: &str, line: u64, column: Option<u64>, message: impl Into<String>) -> Self {
        InputError {
            column,
            ..InputError::at(role, file, Some(line), message)
        }
    }

    /// Where in the file, as the message writes it: ` line 3, column 17`, ` line 3`, or empty.
    pub fn location(&self) -> String {
        match (self.line, self.column) {
            (Some(line), Some(column)) => format!(" line {line}, column {column}"),
            (Some(line), None) => format!(" line {line}"),
            _ => String::new(),
        }
    }
}

impl fmt::Display for InputError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} ({}){}: {}", self.file, self.role, self.location(), self.message)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn roles_read_and_write_as_their_names() {
        for role in Role::ALL {
            assert_eq!(serde_json::to_string(&role).unwrap(), format!("\"{role}\""));
            assert_eq!(role.as_str().parse::<Role>(), Ok(role));
        }
        assert_eq!("old".parse::<Role>(), Err(UnknownRole("old".into())));
        assert_eq!(Role::OldTrajectories.side(), Some(Side::Old));
        assert_eq!(Role::NewVerdicts.side(), Some(Side::New));
        assert_eq!(Role::Audit.side(), None);
    }
}
