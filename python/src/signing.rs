//! Signed decisions: `sign` and `verify` over a report, with the CLI's checks.

use crate::errors::{raise, verification_error};
use deploy_gate::attest;
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;

/// Signs a report's decision for a model and a target, as `deploy-gate sign`: the DSSE
/// envelope's JSON (pretty, with a final newline, the bytes the CLI writes).
/// `review`: a review file's bytes (`deploy-gate/review/v1`), pinned in the statement as
/// `sign --review` pins it; `review_name` names it in errors.
#[pyfunction]
#[pyo3(signature = (report, key_pem, model, model_sha256, target, time_verified, digest_scheme, review=None, review_name="review"))]
#[allow(clippy::too_many_arguments)]
pub(crate) fn sign_report(
    py: Python<'_>,
    report: &str,
    key_pem: &str,
    model: &str,
    model_sha256: &str,
    target: &str,
    time_verified: i64,
    digest_scheme: Option<&str>,
    review: Option<&[u8]>,
    review_name: &str,
) -> PyResult<String> {
    if digest_scheme.is_some_and(|s| s != attest::OMS_FILES_SCHEME) {
        return Err(PyValueError::new_err(format!(
            "digest_scheme is `{}` or None (the original directory digest)",
            attest::OMS_FILES_SCHEME
        )));
    }
    let report = attest::ReportToSign::parse(report)
        .map_err(|e| raise(py, "SignError", format!("the report: {e}"), None, None, None))?;
    let key = attest::keys::read_private_pem(key_pem)
        .map_err(|e| raise(py, "SignError", format!("the key: {e}"), None, None, None))?;
    let digest =
        attest::parse_digest(model_sha256).map_err(|e| raise(py, "SignError", e.to_string(), None, None, None))?;
    let marks = review
        .map(|bytes| deploy_gate::review::Review::parse(review_name, bytes))
        .transpose()
        .map_err(|e| raise(py, "SignError", e.to_string(), None, None, None))?;
    deploy_gate::review::check_required(report.text(), &report.value()["policy"], marks.as_ref())
        .map_err(|e| raise(py, "SignError", format!("the report: {e}"), None, None, None))?;
    let review = marks
        .as_ref()
        .map(|marks| deploy_gate::review::ReviewPin::of(marks, report.text()))
        .transpose()
        .map_err(|e| raise(py, "SignError", format!("the report: {e}"), None, None, None))?;
    let claim = attest::Claim {
        report: &report,
        model_name: model,
        model_sha256: &digest,
        target,
        time_verified,
        review: review.as_ref(),
    };
    let envelope = attest::sign_in(&claim, &key, digest_scheme)
        .map_err(|e| raise(py, "SignError", e.to_string(), None, None, None))?;
    let mut text = serde_json::to_string_pretty(&envelope).expect("an envelope serializes");
    text.push('\n');
    Ok(text)
}

/// Verifies a signed decision as `deploy-gate verify` does (without a ledger): the verified
/// decision as JSON, or `VerificationError(check, message)` naming the check that failed.
#[pyfunction]
#[pyo3(signature = (envelope, trusted_pems, threshold, subject_sha256, target, now, max_age))]
#[allow(clippy::too_many_arguments)]
pub(crate) fn verify_envelope(
    py: Python<'_>,
    envelope: &[u8],
    trusted_pems: Vec<String>,
    threshold: usize,
    subject_sha256: Option<&str>,
    target: Option<&str>,
    now: i64,
    max_age: i64,
) -> PyResult<String> {
    let v = verified_decision(
        py,
        envelope,
        &trusted_pems,
        threshold,
        subject_sha256,
        target,
        now,
        max_age,
    )?;
    Ok(v.to_json())
}

/// Verifies a signed decision's bytes against trusted public keys (PEM) with the CLI's checks.
#[allow(clippy::too_many_arguments)]
pub(crate) fn verified_decision(
    py: Python<'_>,
    envelope: &[u8],
    trusted_pems: &[String],
    threshold: usize,
    subject_sha256: Option<&str>,
    target: Option<&str>,
    now: i64,
    max_age: i64,
) -> PyResult<attest::Verified> {
    let trusted = trusted_keys(py, trusted_pems)?;
    let subject = subject_sha256
        .map(attest::parse_digest)
        .transpose()
        .map_err(|e| raise(py, "SignError", e.to_string(), None, None, None))?;
    let never = |_: &str| false;
    let req = attest::Requirements {
        trusted: &trusted,
        threshold,
        subject_sha256: subject.as_deref(),
        target,
        now,
        max_age,
        already_applied: &never,
        limits: attest::Limits::default(),
    };
    attest::verify(envelope, &req).map_err(|e| verification_error(py, e.kind().as_str(), &e.to_string()))
}

/// The trusted public keys from their PEM texts; a key that cannot be read raises `SignError`
/// naming it by its 1-based position.
pub(crate) fn trusted_keys(py: Python<'_>, pems: &[String]) -> PyResult<Vec<attest::keys::VerifyingKey>> {
    pems.iter()
        .enumerate()
        .map(|(i, pem)| {
            attest::keys::read_public_pem(pem)
                .map_err(|e| raise(py, "SignError", format!("trusted key {}: {e}", i + 1), None, None, None))
        })
        .collect()
}
