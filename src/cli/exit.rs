//! What every command shares besides its files: the exit codes, writing the output, the
//! clock, the message of an input error, and the library's notices on stderr.

use crate::input::InputError;
use crate::native::files::Notice;
use anyhow::{anyhow, Context, Result};
use std::io::Write;
use std::path::Path;

/// Exit code: the gate approved the deploy (or the command succeeded).
pub const EXIT_OK: u8 = 0;
/// Exit code: unusable input, I/O error or usage error.
pub const EXIT_INPUT: u8 = 1;
/// Exit code: the gate blocked the deploy (keep the old model).
pub const EXIT_BLOCKED: u8 = 3;
/// Exit code (`evaluate`): the decision is inconclusive under the non-inferiority rule (keep the
/// old model; more cases would settle it).
pub const EXIT_INCONCLUSIVE: u8 = 4;
/// Exit code: the envelope failed verification.
pub const EXIT_INVALID: u8 = 2;
/// Exit code: `diff` found that the decision changed between the two evaluations.
pub const EXIT_CHANGED: u8 = 5;
/// Exit code: the model was deployed, but the ledger could not record it (its intent entry is
/// there; the next apply records the deploy).
pub const EXIT_DEPLOYED_UNRECORDED: u8 = 4;

/// Now, in Unix seconds.
pub fn now() -> i64 {
    crate::native::apply::unix_now()
}

/// Prints a notice of the library's deploy step on stderr (`deploy-gate: [warning: ]TEXT`).
pub fn notice(n: Notice) {
    let warning = if n.warning { "warning: " } else { "" };
    eprintln!("deploy-gate: {warning}{}", n.text);
}

/// Writes the output to `out`, or to stdout (a closed pipe is not an error).
pub fn write_output(out: Option<&Path>, bytes: &[u8]) -> Result<()> {
    match out {
        Some(path) => std::fs::write(path, bytes).with_context(|| format!("cannot write {}", path.display())),
        None => {
            let mut stdout = std::io::stdout().lock();
            match stdout.write_all(bytes).and_then(|_| stdout.flush()) {
                Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => Ok(()),
                other => other.context("cannot write to stdout"),
            }
        }
    }
}

/// An input error with the path as the user typed it.
pub fn input_error(path: &Path, e: InputError) -> anyhow::Error {
    anyhow!("{} ({}){}: {}", path.display(), e.role, e.location(), e.message)
}
