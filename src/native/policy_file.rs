//! A policy file read from disk, bounded, for every native shell: the CLI's `--policy FILE` and
//! the Python package's policy path read it here, and the core parses it
//! ([`PolicyInput::from_file`]).

use crate::policy::{PolicyFileError, PolicyInput};
use std::io::Read;
use std::path::{Path, PathBuf};

/// A policy file is a small JSON object; anything longer than this is refused unread.
pub const MAX_POLICY_FILE: u64 = 1 << 20;

/// Why a policy file gave no policy. The messages are the CLI's.
#[derive(Debug, thiserror::Error)]
pub enum ReadPolicyError {
    /// The file cannot be opened or read.
    #[error("cannot read {}", .path.display())]
    Io {
        /// The path.
        path: PathBuf,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// The file is longer than [`MAX_POLICY_FILE`].
    #[error("{} (policy file): more than {MAX_POLICY_FILE} bytes; a policy file is a small JSON object", .path.display())]
    TooLong {
        /// The path.
        path: PathBuf,
    },
    /// Not a policy: not JSON, a key twice, not an object, or a field unknown or invalid.
    #[error("{} (policy file): {error}", .path.display())]
    Invalid {
        /// The path.
        path: PathBuf,
        /// What is wrong in it.
        error: PolicyFileError,
    },
}

/// Reads a policy file: every field optional, unknown fields and duplicate keys refused.
pub fn read_policy_file(path: &Path) -> Result<PolicyInput, ReadPolicyError> {
    let mut bytes = Vec::new();
    std::fs::File::open(path)
        .and_then(|f| f.take(MAX_POLICY_FILE + 1).read_to_end(&mut bytes))
        .map_err(|source| ReadPolicyError::Io {
            path: path.to_path_buf(),
            source,
        })?;
    if bytes.len() as u64 > MAX_POLICY_FILE {
        return Err(ReadPolicyError::TooLong {
            path: path.to_path_buf(),
        });
    }
    PolicyInput::from_file(&bytes).map_err(|error| ReadPolicyError::Invalid {
        path: path.to_path_buf(),
        error,
    })
}
