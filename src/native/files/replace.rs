//! Replacing a file durably and atomically: exclusive temporary files beside it with its mode
//! and owner, synced, renamed (or exchanged, so a concurrent writer is seen) into place, the
//! directory synced; and the path helpers `apply` and `rollback` share.

use super::regular::read_regular;
use super::{chain, FilesError, Notice, Notify};
use crate::deploy::MAX_CONFIG_BYTES;
use std::fs::{self, File, Metadata, OpenOptions};
use std::io::{self, Write};
use std::os::unix::fs::{MetadataExt, OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};

/// The directory of `path` (`.` for a bare name).
pub fn dir_of(path: &Path) -> PathBuf {
    match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
        _ => PathBuf::from("."),
    }
}

/// The file name of `path` as UTF-8, or a refusal naming it.
pub fn file_name_of(path: &Path) -> Result<String, FilesError> {
    let name = path
        .file_name()
        .ok_or_else(|| FilesError::NotAFilePath(path.to_path_buf()))?;
    name.to_str()
        .map(str::to_owned)
        .ok_or_else(|| FilesError::FileNameNotUtf8(path.to_path_buf()))
}

/// A path as UTF-8 text, or a refusal naming it: the config, the ledger and the deploy command
/// get paths as text, and a lossy conversion would name another file.
pub fn utf8<'a>(path: &'a Path, what: &str) -> Result<&'a str, FilesError> {
    path.to_str().ok_or_else(|| FilesError::NotUtf8 {
        what: what.to_owned(),
        path: path.to_path_buf(),
    })
}

/// Syncs a directory, so a rename in it is durable.
pub fn sync_dir(dir: &Path) -> Result<(), FilesError> {
    File::open(dir)
        .and_then(|d| d.sync_all())
        .map_err(FilesError::io(format!("cannot sync the directory {}", dir.display())))
}

/// What the names of this tool's temporary files contain (`.NAME.deploy-gate-tmp-<random>`).
pub const TEMP_MARK: &str = ".deploy-gate-tmp-";

/// A temporary file beside its destination, removed when dropped unless renamed into place.
pub struct TempFile {
    path: PathBuf,
    file: File,
    done: bool,
}

impl TempFile {
    /// Creates `.BASE.deploy-gate-tmp-<random>` in `dir`, exclusively (`O_EXCL|O_NOFOLLOW`: a
    /// planted file or symlink is refused), with the owner and mode of `like` — or, where the
    /// owner cannot be given, owned by this user and readable by nobody else.
    pub fn create(dir: &Path, base: &str, like: &Metadata, owner_only: bool) -> Result<TempFile, FilesError> {
        let mut random = [0u8; 12];
        getrandom::fill(&mut random).map_err(|e| FilesError::Random(e.to_string()))?;
        let path = dir.join(format!(".{base}{TEMP_MARK}{}", hex::encode(random)));
        let file = OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC)
            .open(&path)
            .map_err(FilesError::io(format!(
                "cannot create the temporary file {}",
                path.display()
            )))?;
        let temp = TempFile {
            path,
            file,
            done: false,
        };
        let mut mode = like.mode() & 0o777;
        if owner_only || std::os::unix::fs::fchown(&temp.file, Some(like.uid()), Some(like.gid())).is_err() {
            mode &= 0o700;
        }
        temp.file
            .set_permissions(fs::Permissions::from_mode(mode))
            .map_err(FilesError::io(format!(
                "cannot set the mode of {}",
                temp.path.display()
            )))?;
        Ok(temp)
    }

    /// Writes `bytes` and syncs the file.
    pub fn write_synced(&mut self, bytes: &[u8]) -> Result<(), FilesError> {
        self.file
            .write_all(bytes)
            .and_then(|()| self.file.sync_all())
            .map_err(FilesError::io(format!("cannot write {}", self.path.display())))
    }

    /// Renames it over `dest` (same directory) and syncs the directory (a failed sync is a
    /// warning: the file is replaced).
    pub fn commit(mut self, dest: &Path, notify: &mut Notify<'_>) -> Result<(), FilesError> {
        fs::rename(&self.path, dest).map_err(FilesError::io(format!(
            "cannot rename {} to {}",
            self.path.display(),
            dest.display()
        )))?;
        self.done = true;
        if let Err(e) = sync_dir(&dir_of(dest)) {
            notify(Notice::warning(format!(
                "{} ({} is replaced)",
                chain(&e),
                dest.display()
            )));
        }
        Ok(())
    }
}

/// Exchanges two names in one directory atomically (`renameat2(RENAME_EXCHANGE)`). `Ok(false)`
/// where the file system or kernel cannot.
pub fn exchange(a: &Path, b: &Path) -> Result<bool, FilesError> {
    use std::os::unix::ffi::OsStrExt;
    let cannot = || format!("cannot exchange {} and {}", a.display(), b.display());
    let c_path = |p: &Path| {
        std::ffi::CString::new(p.as_os_str().as_bytes())
            .map_err(|e| FilesError::io(cannot())(io::Error::new(io::ErrorKind::InvalidInput, e)))
    };
    let (ca, cb) = (c_path(a)?, c_path(b)?);
    // SAFETY: two valid C strings; renameat2 only reads them.
    let r = unsafe {
        libc::renameat2(
            libc::AT_FDCWD,
            ca.as_ptr(),
            libc::AT_FDCWD,
            cb.as_ptr(),
            libc::RENAME_EXCHANGE,
        )
    };
    if r == 0 {
        return Ok(true);
    }
    let e = io::Error::last_os_error();
    match e.raw_os_error() {
        Some(libc::EINVAL | libc::ENOSYS | libc::ENOTSUP) => Ok(false),
        _ => Err(FilesError::io(cannot())(e)),
    }
}

impl TempFile {
    /// Puts it in place of `dest` (same directory), provided `dest` still holds `expected`: an
    /// atomic exchange, then a comparison of what was swapped out; if that differs (another
    /// program replaced `dest` meanwhile), the exchange is undone and this is an error. Where
    /// the exchange is not available, `dest` is compared just before a rename.
    pub fn commit_if_unchanged(
        mut self,
        dest: &Path,
        expected: &[u8],
        notify: &mut Notify<'_>,
    ) -> Result<(), FilesError> {
        let changed = |source: Option<FilesError>| FilesError::ConfigChanged {
            path: dest.to_path_buf(),
            source: source.map(Box::new),
        };
        if !exchange(&self.path, dest)? {
            let (_, now) = read_regular(dest, "config", MAX_CONFIG_BYTES)?;
            if now != expected {
                return Err(changed(None));
            }
            return self.commit(dest, notify);
        }
        // `self.path` now holds what was at `dest`.
        let swapped = read_regular(&self.path, "config swapped out", MAX_CONFIG_BYTES).map(|(_, b)| b);
        if swapped.as_deref().ok() != Some(expected) {
            if let Err(e) = exchange(&self.path, dest) {
                // The new config IS in place (so this apply is recorded as deployed); the other
                // program's version is kept where the exchange left it, and named.
                self.done = true;
                // Out of the temporary names the next apply removes.
                let kept = PathBuf::from(format!("{}.kept", dest.display()));
                let at = match fs::hard_link(&self.path, &kept).and_then(|()| fs::remove_file(&self.path)) {
                    Ok(()) => kept,
                    Err(_) => self.path.clone(),
                };
                notify(Notice::warning(format!(
                    "the config {} changed while apply ran, and putting the other program's version back failed ({}): that version is kept at {}; the new config is in place",
                    dest.display(),
                    chain(&e),
                    at.display()
                )));
                return Ok(());
            }
            return Err(changed(swapped.err()));
        }
        // The old config, a copy of which is the backup.
        let _ = fs::remove_file(&self.path);
        self.done = true;
        if let Err(e) = sync_dir(&dir_of(dest)) {
            notify(Notice::warning(format!(
                "{} ({} is replaced)",
                chain(&e),
                dest.display()
            )));
        }
        Ok(())
    }
}

impl Drop for TempFile {
    fn drop(&mut self) {
        if !self.done {
            let _ = fs::remove_file(&self.path);
        }
    }
}

/// Replaces `dest` by `bytes` atomically: a temporary file in its directory, synced, renamed
/// over it. `like` gives the owner and mode.
pub fn replace_file(dest: &Path, bytes: &[u8], like: &Metadata, notify: &mut Notify<'_>) -> Result<(), FilesError> {
    let dir = dir_of(dest);
    let mut temp = TempFile::create(&dir, &file_name_of(dest)?, like, false)?;
    temp.write_synced(bytes)?;
    temp.commit(dest, notify)
}

/// Removes the temporary files an interrupted apply left for `base` in `dir` (only called under
/// the config lock, when no other apply to this config runs).
pub fn remove_stale_temps(dir: &Path, base: &str, notify: &mut Notify<'_>) -> Result<(), FilesError> {
    let prefix = format!(".{base}{TEMP_MARK}");
    let cannot_list = || format!("cannot list {}", dir.display());
    let entries = fs::read_dir(dir).map_err(FilesError::io(cannot_list()))?;
    for entry in entries {
        let entry = entry.map_err(FilesError::io(cannot_list()))?;
        if entry.file_name().to_string_lossy().starts_with(&prefix) {
            let path = entry.path();
            fs::remove_file(&path).map_err(FilesError::io(format!("cannot remove {}", path.display())))?;
            notify(Notice::info(format!(
                "removed {}, a temporary file left by an interrupted apply",
                path.display()
            )));
        }
    }
    Ok(())
}
