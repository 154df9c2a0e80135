//! The output file of a run: opened for appending and locked (one run per file), read back
//! to resume (a torn last line is dropped), appended one whole record per `write`, synced at
//! the end and, once every case has its record, rewritten in test-set order (atomically).

use super::progress::Progress;
use crate::native::files::replace::{dir_of, file_name_of, replace_file, TEMP_MARK};
use crate::run::{read_resume, Cases};
use anyhow::{anyhow, bail, Context, Result};
use std::fs::{self, File, OpenOptions};
use std::io::{Read, Write};
use std::os::unix::fs::MetadataExt;
use std::os::unix::io::AsRawFd;
use std::path::{Path, PathBuf};

/// The output file, locked while the run writes it.
pub struct Output {
    path: PathBuf,
    file: File,
    /// Each case's record line (with its newline), once it has one.
    records: Vec<Option<Box<str>>>,
    /// The cases with a record, in file order.
    order: Vec<usize>,
    /// Errors among the records read back.
    pub errored_before: usize,
    /// What was wrong with the file and mended (a torn last line), for stderr.
    pub note: Option<String>,
}

impl Output {
    /// Opens (or creates) `path`, locks it, removes what an interrupted final rewrite left
    /// beside it, and reads the records it holds for `cases`.
    pub fn open(path: &Path, cases: &Cases, target: Option<&str>) -> Result<Output> {
        let file = open_locked(path)?;
        remove_stale_temps(path)?;
        let mut bytes = Vec::new();
        (&file)
            .read_to_end(&mut bytes)
            .with_context(|| format!("cannot read {}", path.display()))?;
        let shown = path.display().to_string();
        let resumed = read_resume(&shown, &bytes, cases, target).map_err(|e| anyhow!("{e}"))?;
        let mut note = None;
        if let Some(line) = resumed.torn_line {
            file.set_len(resumed.whole_len as u64)
                .with_context(|| format!("cannot cut the torn last line of {}", path.display()))?;
            note = Some(format!(
                "deploy-gate run: {shown} line {line} was torn (a write cut short by a crash); dropped, its case runs again"
            ));
        }
        let mut records = vec![None; cases.len()];
        let mut order = Vec::with_capacity(resumed.done.len());
        for (position, range) in &resumed.done {
            let mut line = String::from_utf8_lossy(&bytes[range.clone()]).into_owned();
            line.push('\n');
            records[*position] = Some(line.into_boxed_str());
            order.push(*position);
        }
        Ok(Output {
            path: path.to_path_buf(),
            file,
            records,
            order,
            errored_before: resumed.errored,
            note,
        })
    }

    /// A case's record line (with its newline), once it has one.
    pub fn record(&self, position: usize) -> Option<&str> {
        self.records[position].as_deref()
    }

    /// The cases that have a record.
    pub fn done(&self) -> impl Iterator<Item = usize> + '_ {
        self.order.iter().copied()
    }

    /// Appends a case's record: one `write` of the whole line, so an interruption leaves the
    /// line whole or (a crash of the machine) torn at the end, where the resume drops it.
    pub fn append(&mut self, position: usize, line: String) -> Result<()> {
        let written = (&self.file)
            .write(line.as_bytes())
            .with_context(|| format!("cannot write {}", self.path.display()))?;
        if written != line.len() {
            bail!(
                "cannot write {}: only {written} of {} bytes written (is the disk full?)",
                self.path.display(),
                line.len()
            );
        }
        self.records[position] = Some(line.into_boxed_str());
        self.order.push(position);
        Ok(())
    }

    /// Makes what was written durable.
    pub fn sync(&self) -> Result<()> {
        self.file
            .sync_all()
            .with_context(|| format!("cannot sync {}", self.path.display()))
    }

    /// Syncs; when every case has its record and they are not in test-set order, replaces the
    /// file by the records in test-set order (atomically: a crash leaves the old or the new).
    pub fn finish(self, progress: &dyn Progress) -> Result<()> {
        self.sync()?;
        let complete = self.records.iter().all(Option::is_some);
        let in_order = self.order.windows(2).all(|w| w[0] < w[1]);
        if !complete || in_order {
            return Ok(());
        }
        let mut bytes = Vec::new();
        for line in self.records.iter().flatten() {
            bytes.extend_from_slice(line.as_bytes());
        }
        let meta = self
            .file
            .metadata()
            .with_context(|| format!("cannot read {}", self.path.display()))?;
        Ok(replace_file(&self.path, &bytes, &meta, &mut |n| progress.notice(n))?)
    }
}

/// Opens `path` for reading and appending, and takes its lock without waiting. When the name
/// was replaced (a run finished and rewrote it) between the open and the lock, opens it again.
fn open_locked(path: &Path) -> Result<File> {
    for _ in 0..10 {
        let file = OpenOptions::new()
            .read(true)
            .append(true)
            .create(true)
            .open(path)
            .with_context(|| format!("cannot open the output file {}", path.display()))?;
        if !file.metadata().map(|m| m.is_file()).unwrap_or(false) {
            bail!("the output file {} is not a regular file", path.display());
        }
        // SAFETY: flock on a descriptor this function owns.
        if unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) } != 0 {
            let e = std::io::Error::last_os_error();
            if e.raw_os_error() == Some(libc::EWOULDBLOCK) {
                bail!(
                    "another `deploy-gate run` is writing {}; wait for it to end",
                    path.display()
                );
            }
            return Err(e).with_context(|| format!("cannot lock {}", path.display()));
        }
        let opened = file
            .metadata()
            .with_context(|| format!("cannot read {}", path.display()))?;
        match fs::metadata(path) {
            Ok(now) if now.dev() == opened.dev() && now.ino() == opened.ino() => return Ok(file),
            _ => continue,
        }
    }
    bail!(
        "the output file {} keeps being replaced while it is opened",
        path.display()
    )
}

/// Removes the temporary files a final rewrite cut short left beside the output (under its
/// lock, when no other run writes it).
fn remove_stale_temps(path: &Path) -> Result<()> {
    let dir = dir_of(path);
    let prefix = format!(".{}{TEMP_MARK}", file_name_of(path)?);
    let entries = fs::read_dir(&dir).with_context(|| format!("cannot list {}", dir.display()))?;
    for entry in entries.flatten() {
        if entry.file_name().to_string_lossy().starts_with(&prefix) {
            let temp = entry.path();
            fs::remove_file(&temp).with_context(|| format!("cannot remove {}", temp.display()))?;
        }
    }
    Ok(())
}
