//! Reading a file this tool trusts: without following a final symlink, without blocking on a
//! FIFO, a regular file bounded in size; and key files, bounded.

use super::FilesError;
use std::fs::{File, Metadata, OpenOptions};
use std::io::{self, Read};
use std::os::unix::fs::OpenOptionsExt;
use std::path::Path;

/// The error of an open with `O_NOFOLLOW`: a symbolic link is refused by name, anything else
/// keeps its cause under `action`.
pub fn open_error(e: io::Error, what: &str, path: &Path, action: String) -> FilesError {
    if e.raw_os_error() == Some(libc::ELOOP) {
        FilesError::Symlink {
            what: what.to_owned(),
            path: path.to_path_buf(),
        }
    } else {
        FilesError::Io { action, source: e }
    }
}

/// Opens `path` for reading without following a final symlink and without blocking (a FIFO),
/// and requires a regular file of at most `limit` bytes; returns its metadata and bytes.
pub fn read_regular(path: &Path, what: &str, limit: usize) -> Result<(Metadata, Vec<u8>), FilesError> {
    let cannot = || format!("cannot read the {what} {}", path.display());
    let file = OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK | libc::O_CLOEXEC)
        .open(path)
        .map_err(|e| open_error(e, what, path, cannot()))?;
    let meta = file.metadata().map_err(FilesError::io(cannot()))?;
    if !meta.is_file() {
        return Err(FilesError::NotRegular {
            what: what.to_owned(),
            path: path.to_path_buf(),
        });
    }
    if meta.len() > limit as u64 {
        return Err(FilesError::TooLarge {
            what: what.to_owned(),
            path: path.to_path_buf(),
            len: meta.len(),
            limit: limit as u64,
        });
    }
    let mut bytes = Vec::with_capacity(meta.len() as usize);
    file.take(limit as u64 + 1)
        .read_to_end(&mut bytes)
        .map_err(FilesError::io(cannot()))?;
    if bytes.len() > limit {
        return Err(FilesError::Grew {
            what: what.to_owned(),
            path: path.to_path_buf(),
            limit: limit as u64,
        });
    }
    Ok((meta, bytes))
}

/// The most bytes of a key file: a PEM key is a few hundred.
pub const MAX_KEY_BYTES: u64 = 64 << 10;

/// A key file's text (`what`: "key", "trusted key"), read to at most [`MAX_KEY_BYTES`] (a
/// device or pipe given as a key cannot make it read without end).
pub fn read_key(path: &Path, what: &str) -> Result<String, FilesError> {
    let cannot = || format!("cannot read {what} {}", path.display());
    let mut text = String::new();
    File::open(path)
        .map_err(FilesError::io(cannot()))?
        .take(MAX_KEY_BYTES + 1)
        .read_to_string(&mut text)
        .map_err(FilesError::io(cannot()))?;
    if text.len() as u64 > MAX_KEY_BYTES {
        return Err(FilesError::KeyTooLarge {
            what: what.to_owned(),
            path: path.to_path_buf(),
            limit: MAX_KEY_BYTES,
        });
    }
    Ok(text)
}
