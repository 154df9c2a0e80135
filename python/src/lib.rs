//! `deploy_gate._core`: the Python binding's native module, a mapping layer over the core
//! crate. Python values come in (paths, policy JSON, verdict texts the Python side made with
//! `str(v or "")`), the core's session, scoring, decision and renderers run, and their values
//! go out (JSON text, tuples, floats). No rule of the gate is implemented here: every number,
//! reason and byte of a report is the core's. File scans run with the GIL released.
//!
//! One module per concept, as the core has them: [`errors`] (the core's errors as the package's
//! exceptions), [`policy`], [`evaluation`] (the session, the report, its renderings, `diff`),
//! [`running`] (models run from Python: the run engine in-process, endpoint files), [`signing`] (signed decisions),
//! [`identity`] (model digests, the trainer's signature), [`deploy`] (the deploy step) and
//! [`cli`] (the `deploy-gate` command the package installs). This file registers what they
//! export.

mod cli;
mod deploy;
mod errors;
mod evaluation;
mod identity;
mod policy;
mod running;
mod signing;

use pyo3::prelude::*;

/// The core's version.
#[pyfunction]
fn core_version() -> String {
    deploy_gate::report::Tool::default().version
}

#[pymodule]
fn _core(m: &Bound<'_, PyModule>) -> PyResult<()> {
    running::register(m)?;
    m.add_class::<evaluation::Session>()?;
    m.add_class::<evaluation::Report>()?;
    m.add_function(wrap_pyfunction!(policy::resolve_policy, m)?)?;
    m.add_function(wrap_pyfunction!(policy::policy_digest, m)?)?;
    m.add_function(wrap_pyfunction!(running::score_answers_by_position, m)?)?;
    m.add_function(wrap_pyfunction!(evaluation::compare, m)?)?;
    m.add_function(wrap_pyfunction!(evaluation::decide_scores, m)?)?;
    m.add_function(wrap_pyfunction!(evaluation::trajectory_mean, m)?)?;
    m.add_function(wrap_pyfunction!(evaluation::report_html_from_json, m)?)?;
    m.add_function(wrap_pyfunction!(core_version, m)?)?;
    m.add_function(wrap_pyfunction!(cli::cli_main, m)?)?;
    m.add_function(wrap_pyfunction!(running::read_endpoint, m)?)?;
    m.add_function(wrap_pyfunction!(evaluation::trajectory_fields, m)?)?;
    m.add_function(wrap_pyfunction!(running::sequential_units, m)?)?;
    m.add_function(wrap_pyfunction!(running::evaluate_cases, m)?)?;
    m.add_function(wrap_pyfunction!(signing::sign_report, m)?)?;
    m.add_function(wrap_pyfunction!(signing::verify_envelope, m)?)?;
    #[cfg(unix)]
    m.add_function(wrap_pyfunction!(identity::verify_model_envelope, m)?)?;
    m.add_function(wrap_pyfunction!(evaluation::diff_documents, m)?)?;
    #[cfg(unix)]
    m.add_function(wrap_pyfunction!(deploy::deploy_config, m)?)?;
    #[cfg(unix)]
    m.add_function(wrap_pyfunction!(identity::model_digest, m)?)?;
    #[cfg(unix)]
    m.add_function(wrap_pyfunction!(identity::oms_digest, m)?)?;
    #[cfg(unix)]
    m.add_function(wrap_pyfunction!(deploy::apply, m)?)?;
    #[cfg(unix)]
    m.add_function(wrap_pyfunction!(deploy::apply_mlflow, m)?)?;
    #[cfg(unix)]
    m.add_function(wrap_pyfunction!(deploy::verify_mlflow, m)?)?;
    #[cfg(unix)]
    m.add_function(wrap_pyfunction!(deploy::rollback, m)?)?;
    Ok(())
}
