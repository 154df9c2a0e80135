//! The files `apply` and `rollback` lock, and where they are: the config's paths, its lock
//! file (which is also its record of the decisions applied to it), and the ledger, each opened
//! for appending, locked, read, and appended to one synced `write` at a time. The order the
//! locks are taken in is described in `apply`.

use super::regular::open_error;
use super::replace::{dir_of, file_name_of, sync_dir, utf8};
use super::{FilesError, Notice, Notify};
use crate::attest::ledger::record::Record;
use crate::attest::ledger::{self, Entry, Ledger, Outcome, Repair, Tail};
use crate::deploy::{backup_file_name, legacy_backup_file_name};
use std::fs::{self, File, Metadata, OpenOptions};
use std::io::{self, Read, Write};
use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
use std::os::unix::io::AsRawFd;
use std::path::{Path, PathBuf};

/// The config as given, the file it finally points to, and the names beside them.
pub struct ConfigPaths {
    /// As given.
    pub given: PathBuf,
    /// After every symlink (of the file and of its directories).
    pub real: PathBuf,
    /// The real file's directory.
    pub real_dir: PathBuf,
    /// The real file's name.
    pub real_name: String,
    /// Upstream's backup name, beside the path as given (where upstream's rollback looks).
    pub backup: PathBuf,
    /// The name earlier versions used.
    pub legacy_backup: PathBuf,
}

impl ConfigPaths {
    /// Resolves the config as given (it need not exist yet; its directory must).
    pub fn resolve(given: &Path) -> Result<ConfigPaths, FilesError> {
        utf8(given, "config path")?;
        let name = file_name_of(given)?;
        let dir = dir_of(given);
        let real = match fs::canonicalize(given) {
            Ok(p) => p,
            // Not there (or a dangling link): the file it would be, in the real directory.
            Err(e) if e.kind() == io::ErrorKind::NotFound => fs::canonicalize(&dir)
                .map_err(FilesError::io(format!(
                    "the config's directory {} does not exist",
                    dir.display()
                )))?
                .join(&name),
            Err(e) => return Err(FilesError::io(format!("cannot resolve the config {}", given.display()))(e)),
        };
        utf8(&real, "config's real path")?;
        Ok(ConfigPaths {
            given: given.to_path_buf(),
            real_dir: dir_of(&real),
            real_name: file_name_of(&real)?,
            real,
            backup: dir.join(backup_file_name(&name)),
            legacy_backup: dir.join(legacy_backup_file_name(&name)),
        })
    }

    /// The config's lock file (and record): `.NAME.deploy-gate.lock` beside the real file.
    pub fn lock_path(&self) -> PathBuf {
        self.real_dir.join(format!(".{}.deploy-gate.lock", self.real_name))
    }

    /// The ledger `apply` uses by default: `NAME.deploy-gate-ledger.jsonl` beside the real file.
    pub fn default_ledger(&self) -> PathBuf {
        self.real_dir
            .join(format!("{}.deploy-gate-ledger.jsonl", self.real_name))
    }
}

/// Takes an exclusive `flock` on `file` (the `what` at `path`, for the error), retrying on EINTR.
pub fn flock(file: &File, path: &Path, what: &str) -> Result<(), FilesError> {
    loop {
        // SAFETY: flock on a descriptor this process owns.
        if unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX) } == 0 {
            return Ok(());
        }
        let e = io::Error::last_os_error();
        if e.kind() != io::ErrorKind::Interrupted {
            return Err(FilesError::io(format!("cannot lock the {what} {}", path.display()))(e));
        }
    }
}

/// The config's lock file, locked, and the record of decisions applied to the config in it.
pub struct ConfigLock {
    /// The lock file's path.
    pub path: PathBuf,
    file: File,
    /// The decisions applied to the config, as its record lists them.
    pub record: Record,
}

/// The most a config's record is read (about 80 bytes per apply).
pub const MAX_RECORD_BYTES: u64 = 64 << 20;

/// Opens (creating, with `mode`) a file of this tool's for reading and appending, refusing a
/// symbolic link, anything but a regular file, and a file with other hard links (appending
/// would write into another file); then takes its `flock`. Returns it and its metadata from
/// before the lock.
pub fn open_append_locked(path: &Path, what: &str, mode: u32) -> Result<(File, Metadata), FilesError> {
    let file = OpenOptions::new()
        .read(true)
        .append(true)
        .create(true)
        .mode(mode)
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK | libc::O_CLOEXEC)
        .open(path)
        .map_err(|e| {
            open_error(
                e,
                what,
                path,
                format!("cannot open the {what} {} for appending", path.display()),
            )
        })?;
    let meta = file
        .metadata()
        .map_err(FilesError::io(format!("cannot read the {what} {}", path.display())))?;
    if !meta.is_file() {
        return Err(FilesError::NotRegular {
            what: what.to_owned(),
            path: path.to_path_buf(),
        });
    }
    if meta.nlink() != 1 {
        return Err(FilesError::AppendHardLinks {
            what: what.to_owned(),
            path: path.to_path_buf(),
            links: meta.nlink(),
        });
    }
    flock(&file, path, what)?;
    Ok((file, meta))
}

/// Opens (creating) and locks the config's lock file; the lock lasts as long as the file.
pub fn lock_config(paths: &ConfigPaths) -> Result<ConfigLock, FilesError> {
    let path = paths.lock_path();
    let (mut file, meta) = open_append_locked(&path, "lock file", 0o600)?;
    if meta.len() > MAX_RECORD_BYTES {
        return Err(FilesError::RecordTooLarge {
            path,
            len: meta.len(),
            limit: MAX_RECORD_BYTES,
        });
    }
    let mut bytes = Vec::new();
    (&mut file)
        .take(MAX_RECORD_BYTES)
        .read_to_end(&mut bytes)
        .map_err(FilesError::io(format!("cannot read the lock file {}", path.display())))?;
    Ok(ConfigLock {
        path,
        file,
        record: Record::parse(&bytes),
    })
}

impl ConfigLock {
    /// Appends `<payload> <result> <sha256 before> <sha256 after>` to the record: one `write`,
    /// synced.
    pub fn record(&mut self, entry: &Entry, result: Outcome) -> Result<(), FilesError> {
        let line = self.record.line(entry, result);
        let written = loop {
            match self.file.write(&line) {
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                r => break r,
            }
        };
        match written {
            Ok(n) if n == line.len() => {}
            Ok(n) => {
                return Err(FilesError::ShortWrite {
                    what: "the config's record",
                    path: self.path.clone(),
                    written: n,
                    len: line.len(),
                })
            }
            Err(e) => {
                return Err(FilesError::io(format!(
                    "cannot append to the config's record {}",
                    self.path.display()
                ))(e))
            }
        }
        self.record.wrote(entry, result);
        self.file.sync_data().map_err(FilesError::io(format!(
            "cannot sync the config's record {}",
            self.path.display()
        )))?;
        Ok(())
    }
}

/// An open, locked ledger.
pub struct LedgerFile {
    /// The ledger's path.
    pub path: PathBuf,
    file: File,
    /// Its entries as read.
    pub parsed: Ledger,
}

impl LedgerFile {
    /// Opens (creating) the ledger for appending, locks it, reads it, and repairs its end: a torn
    /// last line is cut off, a whole last entry without its newline gets one (each said).
    pub fn open_locked(path: &Path, notify: &mut Notify<'_>) -> Result<LedgerFile, FilesError> {
        utf8(path, "ledger")?;
        let (mut file, _) = open_append_locked(path, "ledger", 0o644)?;
        if file.metadata().is_ok_and(|m| m.len() == 0) {
            // Perhaps just created: make its name durable before anything relies on it.
            sync_dir(&dir_of(path))?;
        }
        let mut bytes = Vec::new();
        file.read_to_end(&mut bytes)
            .map_err(FilesError::io(format!("cannot read the ledger {}", path.display())))?;
        let parsed = ledger::parse(&bytes).map_err(|error| FilesError::Ledger {
            path: path.to_path_buf(),
            error,
        })?;
        let mut this = LedgerFile {
            path: path.to_path_buf(),
            file,
            parsed,
        };
        let repair = this.parsed.repair(&bytes).map_err(|error| FilesError::ForeignTail {
            path: path.to_path_buf(),
            error,
        })?;
        match repair {
            Repair::Nothing => {}
            Repair::EndLine => {
                this.write_once(b"\n", bytes.len() as u64)?;
                notify(Notice::info(format!(
                    "the ledger {}'s last line had no newline; ended it",
                    path.display()
                )));
            }
            Repair::Cut { keep, line, bytes: n } => {
                this.file
                    .set_len(keep as u64)
                    .and_then(|()| this.file.sync_all())
                    .map_err(FilesError::io(format!(
                        "cannot cut the torn last line of the ledger {}",
                        path.display()
                    )))?;
                notify(Notice::info(format!(
                    "the ledger {} line {line} was cut short by an interrupted write ({n} bytes, no newline: {}); removed it",
                    path.display(),
                    ledger::preview(&bytes[keep..])
                )));
            }
        }
        this.parsed.tail = Tail::Clean;
        Ok(this)
    }

    /// One `write` of `bytes` at the end, synced; a short write is cut back off.
    pub fn write_once(&mut self, bytes: &[u8], len_before: u64) -> Result<(), FilesError> {
        let written = loop {
            match self.file.write(bytes) {
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                r => break r,
            }
        };
        let problem = match written {
            Ok(n) if n == bytes.len() => None,
            Ok(n) => Some(FilesError::ShortWrite {
                what: "the ledger",
                path: self.path.clone(),
                written: n,
                len: bytes.len(),
            }),
            Err(e) => Some(FilesError::io(format!(
                "cannot append to the ledger {}",
                self.path.display()
            ))(e)),
        };
        if let Some(problem) = problem {
            let _ = self.file.set_len(len_before).and_then(|()| self.file.sync_all());
            return Err(problem);
        }
        self.file.sync_data().map_err(FilesError::io(format!(
            "cannot sync the ledger {}",
            self.path.display()
        )))
    }

    /// Appends one entry: one whole line, one `write`, synced.
    pub fn append(&mut self, entry: &Entry) -> Result<(), FilesError> {
        let len = self
            .file
            .metadata()
            .map_err(FilesError::io(format!(
                "cannot read the ledger {}",
                self.path.display()
            )))?
            .len();
        self.write_once(&entry.to_line(), len)?;
        self.parsed.entries.push(entry.clone());
        Ok(())
    }
}
