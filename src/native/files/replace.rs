//! Replacing a file durably and atomically: exclusive temporary files beside it with its mode
//! and owner, synced, renamed (or exchanged, so a concurrent writer is seen) into place, the
//! directory synced; and the path helpers `apply` and `rollback` share.

use super::regular::read_regular;
use crate::deploy::MAX_CONFIG_BYTES;
use anyhow::{anyhow, Context, Result};
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
pub fn file_name_of(path: &Path) -> Result<String> {
    let name = path
        .file_name()
        .ok_or_else(|| anyhow!("{} is not a file path", path.display()))?;
    name.to_str()
        .map(str::to_owned)
        .ok_or_else(|| anyhow!("{}: the file name is not UTF-8; refused", path.display()))
}

/// A path as UTF-8 text, or a refusal naming it: the config, the ledger and the deploy command
/// get paths as text, and a lossy conversion would name another file.
pub fn utf8<'a>(path: &'a Path, what: &str) -> Result<&'a str> {
    path.to_str().ok_or_else(|| {
        anyhow!(
            "the {what} {} is not UTF-8; refused (it could not be written into the config or the ledger exactly)",
            path.display()
        )
    })
}

/// Syncs a directory, so a rename in it is durable.
pub fn sync_dir(dir: &Path) -> Result<()> {
    File::open(dir)
        .and_then(|d| d.sync_all())
        .with_context(|| format!("cannot sync the directory {}", dir.display()))
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
    pub fn create(dir: &Path, base: &str, like: &Metadata, owner_only: bool) -> Result<TempFile> {
        let mut random = [0u8; 12];
        getrandom::fill(&mut random).map_err(|e| anyhow!("no randomness from the OS: {e}"))?;
        let path = dir.join(format!(".{base}{TEMP_MARK}{}", hex::encode(random)));
        let file = OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC)
            .open(&path)
            .with_context(|| format!("cannot create the temporary file {}", path.display()))?;
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
            .with_context(|| format!("cannot set the mode of {}", temp.path.display()))?;
        Ok(temp)
    }

    /// Writes `bytes` and syncs the file.
    pub fn write_synced(&mut self, bytes: &[u8]) -> Result<()> {
        self.file
            .write_all(bytes)
            .and_then(|()| self.file.sync_all())
            .with_context(|| format!("cannot write {}", self.path.display()))
    }

    /// Renames it over `dest` (same directory) and syncs the directory.
    pub fn commit(mut self, dest: &Path) -> Result<()> {
        fs::rename(&self.path, dest)
            .with_context(|| format!("cannot rename {} to {}", self.path.display(), dest.display()))?;
        self.done = true;
        if let Err(e) = sync_dir(&dir_of(dest)) {
            eprintln!("deploy-gate: warning: {e:#} ({} is replaced)", dest.display());
        }
        Ok(())
    }
}

/// Exchanges two names in one directory atomically (`renameat2(RENAME_EXCHANGE)`). `Ok(false)`
/// where the file system or kernel cannot.
pub fn exchange(a: &Path, b: &Path) -> Result<bool> {
    use std::os::unix::ffi::OsStrExt;
    let ca = std::ffi::CString::new(a.as_os_str().as_bytes())?;
    let cb = std::ffi::CString::new(b.as_os_str().as_bytes())?;
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
        _ => Err(e).with_context(|| format!("cannot exchange {} and {}", a.display(), b.display())),
    }
}

impl TempFile {
    /// Puts it in place of `dest` (same directory), provided `dest` still holds `expected`: an
    /// atomic exchange, then a comparison of what was swapped out; if that differs (another
    /// program replaced `dest` meanwhile), the exchange is undone and this is an error. Where
    /// the exchange is not available, `dest` is compared just before a rename.
    pub fn commit_if_unchanged(mut self, dest: &Path, expected: &[u8], hook: impl FnOnce()) -> Result<()> {
        let changed = || {
            anyhow!(
                "the config {} changed while apply ran (another program wrote it); NOT deployed, its new content kept",
                dest.display()
            )
        };
        if !exchange(&self.path, dest)? {
            let (_, now) = read_regular(dest, "config", MAX_CONFIG_BYTES)?;
            if now != expected {
                return Err(changed());
            }
            return self.commit(dest).map(|()| hook());
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
                eprintln!(
                    "deploy-gate: warning: the config {} changed while apply ran, and putting the other program's version back failed ({e:#}): that version is kept at {}; the new config is in place",
                    dest.display(),
                    at.display()
                );
                hook();
                return Ok(());
            }
            return Err(match swapped {
                Ok(_) => changed(),
                Err(e) => e.context(changed()),
            });
        }
        // The old config, a copy of which is the backup.
        let _ = fs::remove_file(&self.path);
        self.done = true;
        if let Err(e) = sync_dir(&dir_of(dest)) {
            eprintln!("deploy-gate: warning: {e:#} ({} is replaced)", dest.display());
        }
        hook();
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
/// over it. `like` gives the owner and mode; `hook` runs between the write and the rename.
pub fn replace_file(dest: &Path, bytes: &[u8], like: &Metadata, hook: impl FnOnce()) -> Result<()> {
    let dir = dir_of(dest);
    let mut temp = TempFile::create(&dir, &file_name_of(dest)?, like, false)?;
    temp.write_synced(bytes)?;
    hook();
    temp.commit(dest)
}

/// Removes the temporary files an interrupted apply left for `base` in `dir` (only called under
/// the config lock, when no other apply to this config runs).
pub fn remove_stale_temps(dir: &Path, base: &str) -> Result<()> {
    let prefix = format!(".{base}{TEMP_MARK}");
    let entries = fs::read_dir(dir).with_context(|| format!("cannot list {}", dir.display()))?;
    for entry in entries {
        let entry = entry.with_context(|| format!("cannot list {}", dir.display()))?;
        if entry.file_name().to_string_lossy().starts_with(&prefix) {
            let path = entry.path();
            fs::remove_file(&path).with_context(|| format!("cannot remove {}", path.display()))?;
            eprintln!(
                "deploy-gate: removed {}, a temporary file left by an interrupted apply",
                path.display()
            );
        }
    }
    Ok(())
}
