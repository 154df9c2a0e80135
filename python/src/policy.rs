//! The gate policy from Python: a policy's JSON (or a policy file) with overrides, resolved by
//! the core's one parser; its canonical JSON and digest.

use crate::errors::{os_error, policy_error};
use deploy_gate::native::policy_file::{read_policy_file, ReadPolicyError};
use deploy_gate::policy::{GatePolicy, PolicyInput};
use pyo3::prelude::*;
use std::path::PathBuf;

/// The policy from a full or partial policy JSON object (the shape of a policy file), with
/// `overrides` (same shape) layered over it and the defaults under both.
pub(crate) fn policy_of(
    py: Python<'_>,
    base: Option<&str>,
    base_file: Option<PathBuf>,
    overrides: Option<&str>,
) -> PyResult<GatePolicy> {
    let base = match (base, base_file) {
        (Some(text), _) => PolicyInput::from_json(text).map_err(|e| policy_error(py, e.to_string()))?,
        (None, Some(path)) => read_policy_file(&path).map_err(|e| match &e {
            ReadPolicyError::Io { path, source } => os_error(
                py,
                format!("cannot read policy file {}: {source}", path.display()),
                source,
            ),
            _ => policy_error(py, e.to_string()),
        })?,
        (None, None) => PolicyInput::default(),
    };
    let over = match overrides {
        Some(text) => PolicyInput::from_json(text).map_err(|e| policy_error(py, e.to_string()))?,
        None => PolicyInput::default(),
    };
    over.or(base).into_policy().map_err(|e| policy_error(py, e.to_string()))
}

pub(crate) fn policy_json(policy: &GatePolicy) -> String {
    serde_json::to_string(policy).expect("a policy serializes")
}

/// The resolved policy as the report's `policy` object (JSON): defaults < `policy` (JSON text)
/// or `policy_file` < `overrides` (JSON text).
#[pyfunction]
#[pyo3(signature = (policy=None, policy_file=None, overrides=None))]
pub(crate) fn resolve_policy(
    py: Python<'_>,
    policy: Option<&str>,
    policy_file: Option<PathBuf>,
    overrides: Option<&str>,
) -> PyResult<String> {
    Ok(policy_json(&policy_of(py, policy, policy_file, overrides)?))
}

/// The policy's digest (sha256 of its RFC 8785 form), as a signed decision pins it.
#[pyfunction]
pub(crate) fn policy_digest(py: Python<'_>, policy: &str) -> PyResult<String> {
    policy_of(py, Some(policy), None, None)?
        .digest()
        .map_err(|e| policy_error(py, e.to_string()))
}

/// The policy from a resolved policy's JSON (as `Session::new` reads it).
pub(crate) fn resolved_policy(py: Python<'_>, policy: &str) -> PyResult<GatePolicy> {
    let value: serde_json::Value =
        serde_json::from_str(policy).map_err(|e| policy_error(py, format!("policy: {e}")))?;
    GatePolicy::from_report(&value).map_err(|e| policy_error(py, e.to_string()))
}
