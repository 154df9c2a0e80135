//! Reading a file this tool trusts: without following a final symlink, without blocking on a
//! FIFO, a regular file bounded in size.

use anyhow::{anyhow, bail, Context, Result};
use std::fs::{Metadata, OpenOptions};
use std::io::{self, Read};
use std::os::unix::fs::OpenOptionsExt;
use std::path::Path;

/// The error of an open with `O_NOFOLLOW`: a symbolic link is refused by name, anything else
/// keeps its cause under `context`.
pub fn open_error(e: io::Error, what: &str, path: &Path, context: String) -> anyhow::Error {
    if e.raw_os_error() == Some(libc::ELOOP) {
        anyhow!("the {what} {} is a symbolic link; refused", path.display())
    } else {
        anyhow::Error::new(e).context(context)
    }
}

/// Opens `path` for reading without following a final symlink and without blocking (a FIFO),
/// and requires a regular file of at most `limit` bytes; returns it, its metadata and bytes.
pub fn read_regular(path: &Path, what: &str, limit: usize) -> Result<(Metadata, Vec<u8>)> {
    let cannot = || format!("cannot read the {what} {}", path.display());
    let file = OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK | libc::O_CLOEXEC)
        .open(path)
        .map_err(|e| open_error(e, what, path, cannot()))?;
    let meta = file.metadata().with_context(cannot)?;
    if !meta.is_file() {
        bail!("the {what} {} is not a regular file; refused", path.display());
    }
    if meta.len() > limit as u64 {
        bail!(
            "the {what} {} is {} bytes, more than the {limit} this tool reads; refused",
            path.display(),
            meta.len()
        );
    }
    let mut bytes = Vec::with_capacity(meta.len() as usize);
    file.take(limit as u64 + 1)
        .read_to_end(&mut bytes)
        .with_context(cannot)?;
    if bytes.len() > limit {
        bail!(
            "the {what} {} grew past the {limit} bytes this tool reads; refused",
            path.display()
        );
    }
    Ok((meta, bytes))
}
