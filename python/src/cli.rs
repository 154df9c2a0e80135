//! The `deploy-gate` command in the package: the core crate's CLI (`deploy_gate::cli::main`),
//! run in this process for the console script `deploy_gate._cli:main` installs. Every
//! subcommand, flag, output and exit code is the native binary's, because it is the same code.

use pyo3::prelude::*;
use std::ffi::OsString;

/// Runs `deploy-gate` with `argv` (the program's name first) and gives its exit code. The GIL is
/// released while it runs. During `run`, SIGINT and SIGTERM are the command's (the run stops
/// at its next turn, what was written is kept, and the code is 128+N); the process's own
/// handlers are put back when the command returns. A panic gives 101, as the binary's process
/// exits with then (its message printed by the panic hook, stdout flushed), not a Python
/// exception.
#[pyfunction]
pub fn cli_main(py: Python<'_>, argv: Vec<OsString>) -> u8 {
    py.allow_threads(|| {
        std::panic::catch_unwind(|| deploy_gate::cli::main(argv)).unwrap_or_else(|_| {
            let _ = std::io::Write::flush(&mut std::io::stdout());
            101
        })
    })
}
