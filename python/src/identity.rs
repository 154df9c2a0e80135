//! Model identity: a model's digest (deploy-gate's, and OpenSSF Model Signing's), the trainer's
//! trust, and `verify` with the model and its trainer's signature checked.

use crate::errors::{model_error, os_error, verification_error};
use crate::signing::verified_decision;
use deploy_gate::attest;
use deploy_gate::native;
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use std::path::PathBuf;

/// The model digest (hex sha256) of a file or a directory, as `deploy-gate digest` prints it.
#[cfg(unix)]
#[pyfunction]
pub(crate) fn model_digest(py: Python<'_>, path: PathBuf) -> PyResult<String> {
    py.allow_threads(|| native::files::model_digest(&path))
        .map_err(|e| os_error(py, native::files::chain(&e), &e))
}

/// The OpenSSF Model Signing digest (hex sha256) of a model directory or file, as
/// `deploy-gate digest --oms [--shard-size N]` prints it.
#[cfg(unix)]
#[pyfunction]
#[pyo3(signature = (path, shard_size=None))]
pub(crate) fn oms_digest(py: Python<'_>, path: PathBuf, shard_size: Option<u64>) -> PyResult<String> {
    let method = match shard_size {
        None => deploy_gate::oms::Method::Files,
        Some(0) => return Err(PyValueError::new_err("shard_size must be positive")),
        Some(shard_size) => deploy_gate::oms::Method::Shards { shard_size },
    };
    py.allow_threads(|| native::oms::oms_digest(&path, method))
        .map_err(|e| model_error(py, e))
}

/// The trusted trainer keys (SPKI PEM, ECDSA P-256/P-384), root certificates (PEM) and, for
/// the keyless method, (identity, issuer) pairs with a Sigstore trusted root's JSON (`None`:
/// the public-good root bundled).
pub(crate) fn trainer_trust(
    trainer_pems: &[String],
    root_pems: &[String],
    identities: &[(String, String)],
    sigstore_root: Option<&str>,
) -> PyResult<deploy_gate::oms::Trust> {
    use deploy_gate::oms::keyless::{Identity, KeylessTrust, SigstoreRoot};
    let mut trust = deploy_gate::oms::Trust::default();
    if !identities.is_empty() {
        let root = match sigstore_root {
            Some(text) => SigstoreRoot::from_json(text.as_bytes())
                .map_err(|e| PyValueError::new_err(format!("sigstore_root: {e}")))?,
            None => SigstoreRoot::public_good(),
        };
        let identities = identities
            .iter()
            .map(|(identity, issuer)| Identity {
                identity: identity.clone(),
                issuer: issuer.clone(),
            })
            .collect();
        trust.keyless = Some(KeylessTrust { identities, root });
    }
    for (i, pem) in trainer_pems.iter().enumerate() {
        trust.keys.push(
            deploy_gate::oms::TrustedKey::from_pem(pem)
                .map_err(|e| PyValueError::new_err(format!("trainer key {}: {}", i + 1, e.detail)))?,
        );
    }
    for (i, pem) in root_pems.iter().enumerate() {
        trust
            .roots
            .add_pem(pem)
            .map_err(|e| PyValueError::new_err(format!("trainer root {}: {}", i + 1, e.detail)))?;
    }
    Ok(trust)
}

/// The digest scheme the decision's subject is annotated with (`None`: the original directory
/// digest). Read before the envelope is verified, only to know which digest to compute: the
/// verifier then compares that digest with the signed subject.
#[cfg(unix)]
fn decision_scheme(envelope: &[u8]) -> Option<String> {
    let env: attest::dsse::Envelope = serde_json::from_slice(envelope).ok()?;
    let payload = attest::dsse::decode(&env.payload)?;
    let statement: serde_json::Value = serde_json::from_slice(&payload).ok()?;
    statement.get("subject")?.as_array()?.iter().find_map(|s| {
        s.pointer("/annotations/digest_scheme")
            .and_then(|v| v.as_str())
            .map(str::to_owned)
    })
}

/// `deploy-gate verify --model-path` (the model's digest computed by the decision's digest
/// scheme) and, with `signature`, `--model-signature`/`--trainer-key`/`--trainer-root`: the
/// trainer's OpenSSF Model Signing signature checked against the model's files, then that it
/// names the same model as the decision (`model_identity`). The verified decision's JSON, with
/// `trainer` when a signature was checked. The GIL is released while the model is read.
#[cfg(unix)]
#[pyfunction]
#[pyo3(signature = (envelope, trusted_pems, threshold, model_path, target, now, max_age, signature=None, trainer_pems=Vec::new(), root_pems=Vec::new(), trainer_identities=Vec::new(), sigstore_root=None))]
#[allow(clippy::too_many_arguments)]
pub(crate) fn verify_model_envelope(
    py: Python<'_>,
    envelope: &[u8],
    trusted_pems: Vec<String>,
    threshold: usize,
    model_path: PathBuf,
    target: Option<&str>,
    now: i64,
    max_age: i64,
    signature: Option<PathBuf>,
    trainer_pems: Vec<String>,
    root_pems: Vec<String>,
    trainer_identities: Vec<(String, String)>,
    sigstore_root: Option<String>,
) -> PyResult<String> {
    use native::oms::{oms_digest, verify_model, ModelError, ModelIdentity};
    let scheme = decision_scheme(envelope);
    let trust = match &signature {
        Some(_) => Some(trainer_trust(
            &trainer_pems,
            &root_pems,
            &trainer_identities,
            sigstore_root.as_deref(),
        )?),
        None => None,
    };
    let id = py
        .allow_threads(|| -> Result<ModelIdentity, ModelError> {
            let trainer = match (&signature, &trust) {
                (Some(path), Some(trust)) => {
                    let bundle = native::oms::read_bundle(path)?;
                    Some(verify_model(&model_path, &bundle, path, trust)?)
                }
                _ => None,
            };
            let digest = match scheme.as_deref() {
                None => native::files::model_digest(&model_path).map_err(|e| ModelError::Files(Box::new(e)))?,
                Some(attest::OMS_FILES_SCHEME) => oms_digest(&model_path, deploy_gate::oms::Method::Files)?,
                Some(other) => return Err(ModelError::UnknownScheme(other.to_owned())),
            };
            Ok(ModelIdentity {
                digest,
                scheme: scheme.clone(),
                trainer,
            })
        })
        .map_err(|e| model_error(py, e))?;
    let v = verified_decision(
        py,
        envelope,
        &trusted_pems,
        threshold,
        Some(&id.digest),
        target,
        now,
        max_age,
    )?;
    id.check_same_model(&v.model_sha256)
        .map_err(|e| verification_error(py, e.check.as_str(), &e.detail))?;
    // The verified decision with its report's digits as signed, and the trainer's signature.
    let mut out = v.to_json();
    if let Some(t) = &id.trainer {
        let mut trainer = native::apply::trainer_json(t);
        trainer["same_model_by"] = serde_json::json!(id.matched_by());
        out.pop(); // the object's closing brace
        out.push_str(",\"trainer\":");
        out.push_str(&trainer.to_string());
        out.push('}');
    }
    Ok(out)
}
