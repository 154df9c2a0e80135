//! The deploy step (Unix): the serving config's change, `apply`, `rollback` and the MLflow
//! registry's, the library's `native::apply` with the GIL released.

use crate::errors::{deploy_error, raise, verification_error};
use crate::identity::trainer_trust;
use deploy_gate::native;
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use std::path::PathBuf;

/// The crash points' test hook from its name (`None`: none).
#[cfg(unix)]
fn fail_at(name: Option<&str>) -> PyResult<native::files::FailAt> {
    match name {
        None => Ok(native::files::FailAt(None)),
        Some(n) => native::files::Step::parse(n)
            .map(|s| native::files::FailAt(Some(s)))
            .ok_or_else(|| PyValueError::new_err(format!("no deploy step {n:?}"))),
    }
}

/// The deploy step's notices, passed to `notify(warning, text)` as they come (the GIL taken
/// for the call only); an exception in `notify` is printed, never raised into the deploy.
#[cfg(unix)]
fn notifier(notify: Option<Py<PyAny>>) -> impl FnMut(native::files::Notice) + Send {
    move |n: native::files::Notice| {
        if let Some(f) = &notify {
            Python::with_gil(|py| {
                if let Err(e) = f.call1(py, (n.warning, n.text)) {
                    e.print(py);
                }
            });
        }
    }
}

/// The upstream bridge's change to the serving config at `config_path` (see
/// `deploy_gate::native::files::deploy_to_config`): (changed, config, backup).
#[cfg(unix)]
#[pyfunction]
#[pyo3(signature = (config_path, trained_path, backend, stages, notify=None, fail_at_step=None))]
pub(crate) fn deploy_config(
    py: Python<'_>,
    config_path: PathBuf,
    trained_path: &str,
    backend: &str,
    stages: Vec<(String, String)>,
    notify: Option<Py<PyAny>>,
    fail_at_step: Option<&str>,
) -> PyResult<(bool, String, Option<String>)> {
    let change = deploy_gate::deploy::Change {
        model_path: trained_path,
        backend,
        stage_models: &stages,
    };
    let hook = fail_at(fail_at_step)?;
    let mut notify = notifier(notify);
    let done = py
        .allow_threads(|| native::files::deploy_to_config(&config_path, &change, hook, &mut notify))
        .map_err(|e| {
            raise(
                py,
                "DeployError",
                native::files::chain(&e),
                None,
                Some(&config_path.display().to_string()),
                None,
            )
        })?;
    let text = |p: &std::path::Path| p.display().to_string();
    Ok((done.changed, text(&done.config), done.backup.as_deref().map(text)))
}

/// `deploy-gate apply` (see `deploy_gate::native::apply`), with the GIL released while it
/// works: (result, the CLI's stdout JSON, model path as written, why the ledger could not
/// record a deploy). A failed check raises `VerificationError(check, message)` (the CLI's exit
/// 2), any other stop `DeployError` (exit 1).
#[cfg(unix)]
#[pyfunction]
#[pyo3(signature = (envelope, trusted_keys, model_path, config, target, ledger, threshold, max_age, max_statement_size, backend, stage_models, deploy_cmd, rollback_cmd, dry_run, notify=None, fail_at_step=None, model_signature=None, trainer_pems=Vec::new(), root_pems=Vec::new(), trainer_identities=Vec::new(), sigstore_root=None))]
#[allow(clippy::too_many_arguments)]
pub(crate) fn apply(
    py: Python<'_>,
    envelope: PathBuf,
    trusted_keys: Vec<PathBuf>,
    model_path: PathBuf,
    config: PathBuf,
    target: Option<String>,
    ledger: Option<PathBuf>,
    threshold: usize,
    max_age: i64,
    max_statement_size: usize,
    backend: String,
    stage_models: Vec<(String, String)>,
    deploy_cmd: Vec<String>,
    rollback_cmd: Vec<String>,
    dry_run: bool,
    notify: Option<Py<PyAny>>,
    fail_at_step: Option<&str>,
    model_signature: Option<PathBuf>,
    trainer_pems: Vec<String>,
    root_pems: Vec<String>,
    trainer_identities: Vec<(String, String)>,
    sigstore_root: Option<String>,
) -> PyResult<(String, String, String, Option<String>)> {
    use native::apply::{Applied, ApplyOptions, Trust};
    let model_signature = match model_signature {
        None => None,
        Some(path) => Some(native::oms::ModelSignature {
            path,
            trust: trainer_trust(&trainer_pems, &root_pems, &trainer_identities, sigstore_root.as_deref())?,
        }),
    };
    let opts = ApplyOptions {
        envelope,
        trust: Trust {
            trusted_keys,
            threshold,
            max_age,
            ledger,
            max_statement_size,
        },
        model_path,
        config,
        target,
        backend,
        stage_models,
        deploy_cmd,
        rollback_cmd,
        dry_run,
        fail_at: fail_at(fail_at_step)?,
        model_signature,
    };
    let mut notify = notifier(notify);
    let out = py
        .allow_threads(|| native::apply::apply(&opts, &mut notify))
        .map_err(|e| deploy_error(py, &e, &opts.config))?;
    let json = serde_json::to_string(&out.to_json()).expect("an outcome serializes");
    let word = out.result().to_owned();
    match out {
        Applied::Refused(f) => Err(verification_error(py, f.check.as_str(), &f.message)),
        Applied::ModelRefused(e) => Err(verification_error(py, e.check.as_str(), &e.detail)),
        Applied::Deployed(d) => Ok((word, json, d.model_path, None)),
        Applied::DeployedUnrecorded(d, e) => Ok((word, json, d.model_path, Some(native::files::chain(&e)))),
        Applied::KeptOld { .. } | Applied::DryRun(_) => Ok((word, json, String::new(), None)),
    }
}

/// `deploy-gate apply --mlflow` (see `deploy_gate::native::mlflow`), with the GIL released:
/// (result, the CLI's stdout JSON). `restore` puts the alias back (`apply --restore`). A failed
/// check raises `VerificationError(check, message)`, any other stop `DeployError`.
#[cfg(unix)]
#[pyfunction]
#[pyo3(signature = (envelope, trusted_keys, mlflow, registered_model, alias, model_version, target, ledger, threshold, max_age, max_statement_size, dry_run, restore, ca_file=None, allow_insecure_tls=false, notify=None, trainer=false, model_signature=None, trainer_pems=Vec::new(), root_pems=Vec::new(), trainer_identities=Vec::new(), sigstore_root=None))]
#[allow(clippy::too_many_arguments)]
pub(crate) fn apply_mlflow(
    py: Python<'_>,
    envelope: PathBuf,
    trusted_keys: Vec<PathBuf>,
    mlflow: String,
    registered_model: String,
    alias: String,
    model_version: Option<String>,
    target: Option<String>,
    ledger: Option<PathBuf>,
    threshold: usize,
    max_age: i64,
    max_statement_size: usize,
    dry_run: bool,
    restore: bool,
    ca_file: Option<PathBuf>,
    allow_insecure_tls: bool,
    notify: Option<Py<PyAny>>,
    trainer: bool,
    model_signature: Option<PathBuf>,
    trainer_pems: Vec<String>,
    root_pems: Vec<String>,
    trainer_identities: Vec<(String, String)>,
    sigstore_root: Option<String>,
) -> PyResult<(String, String)> {
    use native::mlflow::{MlflowApply, Promoted, RegistrySettings, RegistrySignature};
    let model_signature = if trainer {
        Some(RegistrySignature {
            path: model_signature,
            trust: trainer_trust(&trainer_pems, &root_pems, &trainer_identities, sigstore_root.as_deref())?,
        })
    } else {
        None
    };
    let opts = MlflowApply {
        envelope,
        trust: native::apply::Trust {
            trusted_keys,
            threshold,
            max_age,
            ledger,
            max_statement_size,
        },
        registry: RegistrySettings {
            url: mlflow,
            ca_file,
            allow_insecure_tls,
            max_download_bytes: None,
        },
        name: registered_model,
        alias,
        version: model_version,
        target,
        dry_run,
        fail_at: native::files::FailAt(None),
        model_signature,
        pause_before_move: None,
    };
    let uri = native::mlflow::model_uri(&opts.name, &opts.alias);
    let mut notify = notifier(notify);
    let registry_error =
        |py: Python<'_>, e: &native::mlflow::MlflowError| raise(py, "DeployError", e.message(), None, Some(&uri), None);
    if restore {
        let r = py
            .allow_threads(|| native::mlflow::restore(&opts, &mut notify))
            .map_err(|e| registry_error(py, &e))?;
        let word = if r.unchanged { "unchanged" } else { "restored" };
        let json = serde_json::json!({"result": word, "model_uri": r.uri, "version": r.to, "version_before": r.from, "decision_sha256": r.decision_sha256});
        return Ok((word.to_owned(), json.to_string()));
    }
    let out = py
        .allow_threads(|| native::mlflow::apply(&opts, &mut notify))
        .map_err(|e| registry_error(py, &e))?;
    let json = out.to_json(&uri).to_string();
    match out {
        Promoted::Refused(f) => Err(verification_error(py, f.check.as_str(), &f.message)),
        Promoted::ModelRefused(e) => Err(verification_error(py, e.check.as_str(), &e.detail)),
        Promoted::Moved { .. } => Ok(("deployed".to_owned(), json)),
        Promoted::KeptOld { .. } => Ok(("kept_old".to_owned(), json)),
        Promoted::DryRun { .. } => Ok(("dry_run".to_owned(), json)),
    }
}

/// `deploy-gate verify --mlflow` (see `deploy_gate::native::mlflow::verify`), with the GIL
/// released: the `--json` output (`{ok, reason, version, decision_sha256, subject}`). A
/// registry or file problem raises `DeployError`.
#[cfg(unix)]
#[pyfunction]
#[pyo3(signature = (mlflow, model_uri, trusted_keys, threshold, max_age, max_statement_size, ca_file=None, allow_insecure_tls=false, notify=None))]
#[allow(clippy::too_many_arguments)]
pub(crate) fn verify_mlflow(
    py: Python<'_>,
    mlflow: String,
    model_uri: String,
    trusted_keys: Vec<PathBuf>,
    threshold: usize,
    max_age: i64,
    max_statement_size: usize,
    ca_file: Option<PathBuf>,
    allow_insecure_tls: bool,
    notify: Option<Py<PyAny>>,
) -> PyResult<String> {
    let opts = native::mlflow::MlflowVerify {
        registry: native::mlflow::RegistrySettings {
            url: mlflow,
            ca_file,
            allow_insecure_tls,
            max_download_bytes: None,
        },
        model_uri,
        trust: native::apply::Trust {
            trusted_keys,
            threshold,
            max_age,
            ledger: None,
            max_statement_size,
        },
    };
    let mut notify = notifier(notify);
    let checked = py
        .allow_threads(|| native::mlflow::verify(&opts, &mut notify))
        .map_err(|e| raise(py, "DeployError", e.message(), None, Some(&opts.model_uri), None))?;
    Ok(serde_json::to_string(&checked).expect("a check serializes"))
}

/// `deploy-gate rollback` (see `deploy_gate::native::apply::rollback`), with the GIL
/// released: (config, backup, legacy backup, ledger, where the decision undone was recorded —
/// "ledger", "config_record" or None — and its payload sha256).
#[cfg(unix)]
#[pyfunction]
#[pyo3(signature = (config, ledger=None, notify=None))]
#[allow(clippy::type_complexity)]
pub(crate) fn rollback(
    py: Python<'_>,
    config: PathBuf,
    ledger: Option<PathBuf>,
    notify: Option<Py<PyAny>>,
) -> PyResult<(String, String, bool, String, Option<String>, Option<String>)> {
    use native::apply::RollbackRecord;
    let mut notify = notifier(notify);
    let done = py
        .allow_threads(|| native::apply::rollback(&config, ledger.as_deref(), &mut notify))
        .map_err(|e| deploy_error(py, &e, &config))?;
    let text = |p: &std::path::Path| p.display().to_string();
    let recorded_in = match &done.recorded {
        RollbackRecord::Ledger(_) => Some("ledger".to_owned()),
        RollbackRecord::ConfigRecord(_) => Some("config_record".to_owned()),
        RollbackRecord::Nothing => None,
    };
    Ok((
        text(&done.config),
        text(&done.backup),
        done.legacy_backup,
        text(&done.ledger),
        recorded_in,
        done.recorded.decision().map(str::to_owned),
    ))
}
