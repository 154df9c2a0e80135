//! Reading this tool's files, each bounded in size: key files (the library's bounded read),
//! reports and envelopes to sign, and policy files (read here, parsed by `crate::policy`).

use crate::policy::{GatePolicy, PolicyInput};
use anyhow::{anyhow, Context, Result};
use std::fs;
use std::path::Path;

pub fn read_text(path: &Path, what: &str) -> Result<String> {
    fs::read_to_string(path).with_context(|| format!("cannot read {what} {}", path.display()))
}

/// A review file (`sign --review`, `verify --review`): its bytes (at most 64 MiB) and the marks
/// read from them, an error naming the file and line otherwise.
pub fn read_review(path: &Path) -> Result<(Vec<u8>, crate::review::Review)> {
    let bytes = read_review_bytes(path)?;
    let review = crate::review::Review::parse(&path.display().to_string(), &bytes)?;
    Ok((bytes, review))
}

/// A review file's bytes, at most [`crate::review::MAX_FILE_BYTES`].
pub fn read_review_bytes(path: &Path) -> Result<Vec<u8>> {
    let max = crate::review::MAX_FILE_BYTES;
    let size = fs::metadata(path)
        .with_context(|| format!("cannot read the review file {}", path.display()))?
        .len();
    anyhow::ensure!(
        size <= max,
        "the review file {} is {size} bytes, more than the {max} a review file may hold",
        path.display()
    );
    fs::read(path).with_context(|| format!("cannot read the review file {}", path.display()))
}

/// A key file's text, bounded: the library's, which `verify` and `apply` share.
pub fn read_key(path: &Path, what: &str) -> Result<String> {
    Ok(crate::native::files::read_key(path, what)?)
}

/// Reads a policy file: the library's bounded read (the Python package reads it there too).
pub fn read_policy_file(path: &Path) -> Result<PolicyInput> {
    Ok(crate::native::policy_file::read_policy_file(path)?)
}

/// The policy: the defaults, under the policy file (if any), under the flags given.
pub fn resolve_policy(file: Option<&Path>, flags: PolicyInput) -> Result<GatePolicy> {
    let from_file = match file {
        Some(path) => read_policy_file(path)?,
        None => PolicyInput::default(),
    };
    // A field refused in the file on its own (`sequential: true` with `mode: point`) names the file.
    flags.or(from_file.clone()).into_policy().map_err(|e| match file {
        Some(path) if from_file.into_policy().is_err_and(|f| f.field == e.field) => {
            anyhow!("{} (policy file): {e}", path.display())
        }
        _ => anyhow!("{e}"),
    })
}
