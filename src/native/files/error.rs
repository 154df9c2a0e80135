//! Why a file of the deploy step could not be read, locked, written or replaced
//! ([`FilesError`]), and the notices the deploy step gives along the way ([`Notice`]).

use std::io;
use std::path::PathBuf;

/// A file of the deploy step could not be used. The messages are the CLI's; an I/O cause is the
/// error's `source`, so a chain printed as `anyhow`'s `{:#}` prints it reads
/// `cannot read the config /etc/serving.yaml: Permission denied (os error 13)`.
#[derive(Debug, thiserror::Error)]
pub enum FilesError {
    /// An I/O operation failed: `action` says which, on which file (`cannot read the config
    /// /etc/serving.yaml`, `cannot rename A to B`, …).
    #[error("{action}")]
    Io {
        /// What was being done, and to which file.
        action: String,
        /// The operating system's error.
        #[source]
        source: io::Error,
    },
    /// A file this tool trusts is a symbolic link (opened with `O_NOFOLLOW`).
    #[error("the {what} {} is a symbolic link; refused", .path.display())]
    Symlink {
        /// What the file is ("config", "ledger", …).
        what: String,
        /// The path.
        path: PathBuf,
    },
    /// A file this tool trusts is a FIFO, a device or a directory.
    #[error("the {what} {} is not a regular file; refused", .path.display())]
    NotRegular {
        /// What the file is.
        what: String,
        /// The path.
        path: PathBuf,
    },
    /// A file is larger than this tool reads of it.
    #[error("the {what} {} is {len} bytes, more than the {limit} this tool reads; refused", .path.display())]
    TooLarge {
        /// What the file is.
        what: String,
        /// The path.
        path: PathBuf,
        /// Its size.
        len: u64,
        /// The most read.
        limit: u64,
    },
    /// A file grew past the limit while it was read.
    #[error("the {what} {} grew past the {limit} bytes this tool reads; refused", .path.display())]
    Grew {
        /// What the file is.
        what: String,
        /// The path.
        path: PathBuf,
        /// The most read.
        limit: u64,
    },
    /// A key file is larger than a PEM key can be.
    #[error("{what} {} is larger than {limit} bytes: not a PEM key", .path.display())]
    KeyTooLarge {
        /// What the key is ("trusted key", "key").
        what: String,
        /// The path.
        path: PathBuf,
        /// The most read.
        limit: u64,
    },
    /// A file this tool appends to has other hard links.
    #[error("the {what} {} has {links} hard links; refused (appending would write into another file)", .path.display())]
    AppendHardLinks {
        /// What the file is.
        what: String,
        /// The path.
        path: PathBuf,
        /// Its link count.
        links: u64,
    },
    /// The config has other hard links: replacing it would leave them with the old model.
    #[error("the config {} has {links} hard links; refused, NOT deployed (replacing it would leave its other names with the old model)", .path.display())]
    ConfigHardLinks {
        /// The config as given.
        path: PathBuf,
        /// Its link count.
        links: u64,
    },
    /// A path that is written into the config or the ledger is not UTF-8.
    #[error("the {what} {} is not UTF-8; refused (it could not be written into the config or the ledger exactly)", .path.display())]
    NotUtf8 {
        /// What the path is.
        what: String,
        /// The path.
        path: PathBuf,
    },
    /// A path has no file name (`/`, `..`).
    #[error("{} is not a file path", .0.display())]
    NotAFilePath(PathBuf),
    /// A file name is not UTF-8.
    #[error("{}: the file name is not UTF-8; refused", .0.display())]
    FileNameNotUtf8(PathBuf),
    /// The config's record (its lock file) is larger than this tool reads.
    #[error("the config's record {} is {len} bytes, more than the {limit} this tool reads; refused (archive it and start a new one)", .path.display())]
    RecordTooLarge {
        /// The lock file.
        path: PathBuf,
        /// Its size.
        len: u64,
        /// The most read.
        limit: u64,
    },
    /// An append wrote only part of its line (a full disk).
    #[error("cannot append to {what} {}: only {written} of {len} bytes written (is the disk full?)", .path.display())]
    ShortWrite {
        /// "the ledger" or "the config's record".
        what: &'static str,
        /// The file.
        path: PathBuf,
        /// Bytes written.
        written: usize,
        /// Bytes of the line.
        len: usize,
    },
    /// A ledger line is not an entry.
    #[error("the ledger {} {error}", .path.display())]
    Ledger {
        /// The ledger.
        path: PathBuf,
        /// The line and what is wrong.
        error: crate::attest::ledger::LedgerError,
    },
    /// A ledger's last line has no newline and is not the start of an entry.
    #[error("the ledger {} {error}", .path.display())]
    ForeignTail {
        /// The ledger.
        path: PathBuf,
        /// The line.
        error: crate::attest::ledger::ForeignTail,
    },
    /// Two configs in one directory would share one backup name.
    #[error("the configs {} and {} would share the backup {}; refused, nothing changed (rename one of them)", .config.display(), .other.display(), .backup.display())]
    SharedBackup {
        /// The config as given.
        config: PathBuf,
        /// The other file.
        other: PathBuf,
        /// The backup both map to.
        backup: PathBuf,
    },
    /// The OS gave no randomness for a temporary file's name.
    #[error("no randomness from the OS: {0}")]
    Random(String),
    /// Another program wrote the config while it was being replaced; it keeps that content.
    #[error("the config {} changed while apply ran (another program wrote it); NOT deployed, its new content kept", .path.display())]
    ConfigChanged {
        /// The config.
        path: PathBuf,
        /// Why what was swapped out could not be compared, when it could not.
        #[source]
        source: Option<Box<FilesError>>,
    },
    /// The config cannot be read (the cause, then the config as given).
    #[error("{} (config {})", chain(.cause.as_ref()), .given.display())]
    ReadConfig {
        /// The config as given.
        given: PathBuf,
        /// Why (not a `source`: the message shows it first).
        cause: Box<FilesError>,
    },
    /// The config cannot be edited safely; it is left as it was.
    #[error("{}: {error}", .path.display())]
    Edit {
        /// The config as given.
        path: PathBuf,
        /// What the edit found.
        error: crate::deploy::ConfigError,
    },
    /// The model path does not exist.
    #[error("model path {} does not exist", .path.display())]
    ModelMissing {
        /// The path.
        path: PathBuf,
        /// Why.
        #[source]
        source: io::Error,
    },
    /// A file name below a model directory is not UTF-8 (the digest names files by UTF-8 paths).
    #[error("{}: a file name in the model directory is not UTF-8 ({:?}); the model digest needs UTF-8 names", .root.display(), .path)]
    ModelNameNotUtf8 {
        /// The model directory.
        root: PathBuf,
        /// The file.
        path: PathBuf,
    },
    /// Something below a model directory is neither a file nor a directory.
    #[error("{} is neither a file nor a directory", .0.display())]
    ModelNotFileOrDir(PathBuf),
    /// A model file could not be hashed.
    #[error(transparent)]
    Hash(#[from] super::super::ReadError),
}

impl FilesError {
    /// An I/O error with what was being done.
    pub fn io(action: impl Into<String>) -> impl FnOnce(io::Error) -> FilesError {
        let action = action.into();
        move |source| FilesError::Io { action, source }
    }

    /// The operating system's error behind this one, if it is one.
    pub fn os_error(&self) -> Option<&io::Error> {
        match self {
            FilesError::Io { source, .. } | FilesError::ModelMissing { source, .. } => Some(source),
            _ => None,
        }
    }
}

/// An error and its causes, each after `: ` (as `anyhow`'s `{:#}` prints a chain): the message
/// every shell shows.
pub fn chain(e: &(dyn std::error::Error + 'static)) -> String {
    let mut text = e.to_string();
    let mut source = e.source();
    while let Some(s) = source {
        text.push_str(": ");
        text.push_str(&s.to_string());
        source = s.source();
    }
    text
}

/// Something the deploy step tells its user along the way (a temporary file removed, an
/// interrupted apply resolved, a warning); the CLI prints it on stderr, the Python binding logs
/// it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Notice {
    /// A warning (the CLI prefixes `warning: `), else information.
    pub warning: bool,
    /// The text.
    pub text: String,
}

impl Notice {
    /// Information.
    pub fn info(text: impl Into<String>) -> Notice {
        Notice {
            warning: false,
            text: text.into(),
        }
    }

    /// A warning.
    pub fn warning(text: impl Into<String>) -> Notice {
        Notice {
            warning: true,
            text: text.into(),
        }
    }
}

/// Where notices go: a callback the shell gives.
pub type Notify<'a> = dyn FnMut(Notice) + 'a;
