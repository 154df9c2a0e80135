//! The core's errors as the package's exceptions (`deploy_gate.errors`): an input file's error
//! naming its role, file and line; `OSError`/`FileNotFoundError` for a file that cannot be read;
//! `PolicyError`, `VerificationError(check, message)`, `DeployError`.

use deploy_gate::input::{InputError, Role};
use deploy_gate::native::{self, file_name, ReadError};
use deploy_gate::session::SessionError;
use pyo3::exceptions::{PyFileNotFoundError, PyOSError, PyRuntimeError};
use pyo3::prelude::*;

/// `deploy_gate.errors.<class>(*args)` as the error to raise (or the error of making it).
fn exception<'py>(py: Python<'py>, class: &str, args: impl pyo3::call::PyCallArgs<'py>) -> PyErr {
    let made = py
        .import("deploy_gate.errors")
        .and_then(|m| m.getattr(class))
        .and_then(|c| c.call1(args));
    match made {
        Ok(value) => PyErr::from_value(value),
        Err(e) => e,
    }
}

/// Raises `deploy_gate.errors.<class>(message, role, file, line)`.
pub(crate) fn raise(
    py: Python<'_>,
    class: &str,
    message: String,
    role: Option<&str>,
    file: Option<&str>,
    line: Option<u64>,
) -> PyErr {
    exception(py, class, (message, role, file, line))
}

/// An input error as the Python exception of its role.
pub(crate) fn input_error(py: Python<'_>, e: &InputError) -> PyErr {
    let class = match e.role {
        Role::Audit => "AuditFileError",
        Role::OldVerdicts | Role::NewVerdicts => "VerdictFileError",
        Role::OldTrajectories | Role::NewTrajectories => "TrajectoryFileError",
    };
    raise(py, class, e.to_string(), Some(e.role.as_str()), Some(&e.file), e.line)
}

/// The I/O error in `e` or its causes that says a file does not exist, if any.
fn missing_file<'e>(e: &'e (dyn std::error::Error + 'static)) -> Option<&'e std::io::Error> {
    let mut at = Some(e);
    while let Some(err) = at {
        match err.downcast_ref::<std::io::Error>() {
            Some(io) if io.kind() == std::io::ErrorKind::NotFound => return Some(io),
            _ => at = err.source(),
        }
    }
    None
}

/// A file that cannot be opened or read, `message` naming it: `FileNotFoundError` (a subclass
/// of `OSError`, its `errno` set) when `e` or a cause of it says the file does not exist, else
/// `OSError`.
pub(crate) fn os_error(py: Python<'_>, message: String, e: &(dyn std::error::Error + 'static)) -> PyErr {
    let Some(io) = missing_file(e) else {
        return PyOSError::new_err(message);
    };
    let err = PyFileNotFoundError::new_err(message);
    if let Some(errno) = io.raw_os_error() {
        // Not `filename`: with it set, `str()` would no longer be the message.
        let _ = err.value(py).setattr("errno", errno);
    }
    err
}

/// A reading error: the audit log not as pass 1 read it is an input error; a file that cannot
/// be opened or read is an `OSError` ([`os_error`]: `FileNotFoundError` for a missing one) with
/// the CLI's message and its cause.
pub(crate) fn read_error(py: Python<'_>, e: ReadError) -> PyErr {
    match e {
        ReadError::Pass2 { ref path, .. } | ReadError::Gzip { ref path, .. } | ReadError::Shorter(ref path) => {
            let name = file_name(path);
            raise(
                py,
                "AuditFileError",
                native::files::chain(&e),
                Some("audit"),
                Some(&name),
                None,
            )
        }
        ReadError::Session(e) => session_error(py, e),
        e => os_error(py, native::files::chain(&e), &e),
    }
}

pub(crate) fn session_error(py: Python<'_>, e: SessionError) -> PyErr {
    match e {
        SessionError::Input(e) => input_error(py, &e),
        other => PyRuntimeError::new_err(other.to_string()),
    }
}

pub(crate) fn policy_error(py: Python<'_>, message: String) -> PyErr {
    raise(py, "PolicyError", message, None, None, None)
}

/// An apply's or a rollback's error as `DeployError(message, file=config)`.
#[cfg(unix)]
pub(crate) fn deploy_error(py: Python<'_>, e: &native::apply::ApplyError, config: &std::path::Path) -> PyErr {
    raise(
        py,
        "DeployError",
        e.message(),
        None,
        Some(&config.display().to_string()),
        None,
    )
}

/// `deploy_gate.errors.VerificationError(check, message)`.
pub(crate) fn verification_error(py: Python<'_>, check: &str, message: &str) -> PyErr {
    exception(py, "VerificationError", (check, message))
}

/// A model check that failed: `VerificationError(check, message)` for a named OMS check,
/// `OSError` for a file that cannot be read ([`os_error`]: `FileNotFoundError` for a missing one).
#[cfg(unix)]
pub(crate) fn model_error(py: Python<'_>, e: native::oms::ModelError) -> PyErr {
    match e {
        native::oms::ModelError::Check(e) => verification_error(py, e.check.as_str(), &e.detail),
        other => os_error(py, other.to_string(), &other),
    }
}
