//! Reading this tool's files, each bounded in size: the files `verify` and `apply` trust
//! (without following a final symlink, without blocking on a FIFO), key files, reports and
//! envelopes to sign, and policy files (read here, parsed by `deploy_gate::policy`).

use anyhow::{anyhow, bail, Context, Result};
use deploy_gate::policy::{GatePolicy, PolicyInput};
use std::fs::{self, File};
use std::io::Read;
use std::path::Path;

/// Trusted reads (no final symlink, no FIFO, bounded): the library's, which the deploy step shares.
pub use deploy_gate::native::files::read_regular;

pub fn read_text(path: &Path, what: &str) -> Result<String> {
    fs::read_to_string(path).with_context(|| format!("cannot read {what} {}", path.display()))
}

/// The most bytes of a key file: a PEM key is a few hundred.
const MAX_KEY_BYTES: u64 = 64 << 10;

/// A key file's text, read to at most [`MAX_KEY_BYTES`] (a device or pipe given as a key
/// cannot make it read without end).
pub fn read_key(path: &Path, what: &str) -> Result<String> {
    let context = || format!("cannot read {what} {}", path.display());
    let mut text = String::new();
    File::open(path)
        .with_context(context)?
        .take(MAX_KEY_BYTES + 1)
        .read_to_string(&mut text)
        .with_context(context)?;
    if text.len() as u64 > MAX_KEY_BYTES {
        bail!(
            "{what} {} is larger than {MAX_KEY_BYTES} bytes: not a PEM key",
            path.display()
        );
    }
    Ok(text)
}

/// A policy file is a small JSON object; anything longer than this is refused unread.
const MAX_POLICY_FILE: u64 = 1 << 20;

/// Reads a policy file: every field optional, unknown fields and duplicate keys refused.
pub fn read_policy_file(path: &Path) -> Result<PolicyInput> {
    let mut bytes = Vec::new();
    std::fs::File::open(path)
        .and_then(|f| f.take(MAX_POLICY_FILE + 1).read_to_end(&mut bytes))
        .with_context(|| format!("cannot read {}", path.display()))?;
    if bytes.len() as u64 > MAX_POLICY_FILE {
        return Err(anyhow!(
            "{} (policy file): more than {MAX_POLICY_FILE} bytes; a policy file is a small JSON object",
            path.display()
        ));
    }
    PolicyInput::from_file(&bytes).map_err(|e| anyhow!("{} (policy file): {e}", path.display()))
}

/// The policy: the defaults, under the policy file (if any), under the flags given.
pub fn resolve_policy(file: Option<&Path>, flags: PolicyInput) -> Result<GatePolicy> {
    let from_file = match file {
        Some(path) => read_policy_file(path)?,
        None => PolicyInput::default(),
    };
    flags.or(from_file).into_policy().map_err(|e| anyhow!("{e}"))
}
