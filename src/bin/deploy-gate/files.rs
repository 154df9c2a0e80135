//! Reading this tool's files, each bounded in size: key files (the library's bounded read),
//! reports and envelopes to sign, and policy files (read here, parsed by `deploy_gate::policy`).

use anyhow::{anyhow, Context, Result};
use deploy_gate::policy::{GatePolicy, PolicyInput};
use std::fs;
use std::io::Read;
use std::path::Path;

pub fn read_text(path: &Path, what: &str) -> Result<String> {
    fs::read_to_string(path).with_context(|| format!("cannot read {what} {}", path.display()))
}

/// A key file's text, bounded: the library's, which `verify` and `apply` share.
pub fn read_key(path: &Path, what: &str) -> Result<String> {
    Ok(deploy_gate::native::files::read_key(path, what)?)
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
    // A field refused in the file on its own (`sequential: true` with `mode: point`) names the file.
    flags.or(from_file.clone()).into_policy().map_err(|e| match file {
        Some(path) if from_file.into_policy().is_err_and(|f| f.field == e.field) => {
            anyhow!("{} (policy file): {e}", path.display())
        }
        _ => anyhow!("{e}"),
    })
}
