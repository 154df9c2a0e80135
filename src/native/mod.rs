//! Reading input files natively, for every native shell (the CLI and the Python binding):
//! pass 1 over audit logs cut into segments and scanned on several threads (mapped into
//! memory on Unix, copied otherwise), gzip-compressed logs streamed, pass 2 by positioned reads
//! or by the decompressed stream, and whole verdict and trajectory files. Native only; the
//! one part of the library that touches files and threads — the core stays sans-IO, and this
//! module only feeds it.

pub mod answers;
#[cfg(unix)]
pub mod apply;
#[cfg(unix)]
pub mod files;
pub mod http;
#[cfg(unix)]
pub mod mapped;
#[cfg(unix)]
pub mod mlflow;
#[cfg(unix)]
pub mod oms;
mod plan;
pub mod policy_file;
pub mod read;
#[cfg(unix)]
pub mod run;

pub use plan::{ProgressHook, ReadOptions, Watch, CHUNK, DEFAULT_SEGMENT};
pub use read::{build_test_set, file_name, hash_file, read_chosen, read_whole, scan, scan_into, Contents};

use std::path::PathBuf;

/// Why an input file could not be read. The messages (with their causes, as `anyhow`'s `{:#}`
/// prints them) are the CLI's.
#[derive(Debug, thiserror::Error)]
pub enum ReadError {
    /// An audit log cannot be opened.
    #[error("cannot open audit log {}", .path.display())]
    OpenAudit {
        /// The path.
        path: PathBuf,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// A file cannot be opened.
    #[error("cannot open {}", .path.display())]
    Open {
        /// The path.
        path: PathBuf,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// An audit log cannot be opened again for pass 2.
    #[error("cannot reopen {}", .path.display())]
    Reopen {
        /// The path.
        path: PathBuf,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// A file cannot be read.
    #[error("cannot read {}", .path.display())]
    Read {
        /// The path.
        path: PathBuf,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// An input (`what` it is: "verdict file", …) cannot be read.
    #[error("cannot read {what} {}", .path.display())]
    ReadInput {
        /// What the file is.
        what: &'static str,
        /// The path.
        path: PathBuf,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// A gzip audit log is not valid gzip.
    #[error("{}: not a valid gzip stream", .path.display())]
    Gzip {
        /// The path.
        path: PathBuf,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// An audit log is a pipe, a device or a directory: it must be read twice.
    #[error("{}: not a regular file; an audit log is read twice (to index it, then for the chosen pipelines), so a pipe, a device or a directory will not do: save it to a file (a .jsonl.gz is read as it is)", .0.display())]
    NotRegular(PathBuf),
    /// A file got shorter while pass 1 read it.
    #[error("{} changed while it was read (it is shorter now)", .0.display())]
    Shorter(PathBuf),
    /// A scan thread ended before its segments were all merged.
    #[error("{}: a scan thread stopped early", .0.display())]
    StoppedEarly(PathBuf),
    /// A thread of pass 1 stopped ("the hashing thread stopped", …).
    #[error("{0}")]
    Stopped(&'static str),
    /// Pass 2 found an audit file not as pass 1 read it.
    #[error("{}: {error}", .path.display())]
    Pass2 {
        /// The path.
        path: PathBuf,
        /// What pass 2 found.
        error: crate::testset::TestSetError,
    },
    /// The session refused a step (pass 2 did not end whole, …).
    #[error(transparent)]
    Session(#[from] crate::session::SessionError),
    /// The read was cancelled ([`Watch::cancel`]).
    #[error("cancelled")]
    Cancelled,
    /// Another I/O error.
    #[error(transparent)]
    Io(#[from] std::io::Error),
}
