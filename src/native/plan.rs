//! The plan of pass 1 over a plain file (its segments, threads and read size) and the merge
//! of its segments in file order, shared by the copying reader and the mapped one.

use super::ReadError;
use crate::audit::{IndexBuilder, Segment};
use crate::policy::PassSet;
use std::collections::BTreeMap;
use std::fs::File;
use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;

/// Read size (small enough that a chunk is still in cache when a scan thread reads it).
pub const CHUNK: usize = 512 << 10;

/// How the audit files are read.
#[derive(Debug, Clone)]
pub struct ReadOptions {
    /// Threads scanning segments (at least 1).
    pub threads: usize,
    /// Segment size: a file is cut at the first newline after every multiple of it.
    pub segment: u64,
    /// Whether plain files are mapped into memory (on Unix) rather than copied.
    pub map: bool,
    /// Whether each audit file's sha256 is computed in pass 1 (on a thread of its own). A
    /// caller whose output does not carry the digest (`test-set`) turns it off: the files'
    /// sha256 then stays empty, and the scan threads have every core.
    pub hash: bool,
    /// The read's progress and cancellation, shared with whoever watches it. Default: a
    /// [`Watch`] nobody else holds.
    pub watch: Watch,
}

/// The default segment size: 4 MiB.
pub const DEFAULT_SEGMENT: u64 = 4 << 20;

impl ReadOptions {
    /// `threads` (0 = every core), 4 MiB segments, memory maps on.
    pub fn new(threads: usize) -> Self {
        let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
        ReadOptions {
            threads: if threads == 0 { cores } else { threads },
            segment: DEFAULT_SEGMENT,
            map: true,
            hash: true,
            watch: Watch::default(),
        }
    }

    /// With segments of `bytes` (at least 1; the tests set it low to split small files).
    pub fn with_segment(mut self, bytes: u64) -> Self {
        self.segment = bytes.max(1);
        self
    }

    /// With memory maps on or off (the tests check both ways of reading).
    pub fn with_map(mut self, map: bool) -> Self {
        self.map = map;
        self
    }

    /// With the audit files hashed in pass 1 or not (see [`ReadOptions::hash`]).
    pub fn with_hash(mut self, hash: bool) -> Self {
        self.hash = hash;
        self
    }

    /// Watched by `watch` (progress, cancellation).
    pub fn with_watch(mut self, watch: Watch) -> Self {
        self.watch = watch;
        self
    }
}

/// A hook told a read's progress: `(bytes read, total bytes)`.
pub type ProgressHook = dyn Fn(u64, u64) + Send + Sync;

/// The progress of a read and its cancellation, shared between the reading threads and
/// whoever watches them (a progress bar, a Python binding checking for Ctrl-C). Pass 1 counts
/// the audit files' bytes as the scan threads get through them (a gzip file by its compressed
/// bytes) out of the files' total size; every reading thread checks [`Watch::is_cancelled`]
/// before each chunk it reads or scans, so a cancelled read stops within a chunk
/// ([`CHUNK`], 512 KiB) per thread and returns [`ReadError::Cancelled`]. Clones share it.
#[derive(Clone, Default)]
pub struct Watch(Arc<WatchState>);

#[derive(Default)]
struct WatchState {
    read: AtomicU64,
    total: AtomicU64,
    cancelled: AtomicBool,
    /// The hook, the count of hundredths of the total it has been told, and the lock its
    /// calls take: one call at a time, each with the count as it is when the call is made, so
    /// that the counts it hears never go down (a thread that passed a hundredth and was then
    /// preempted would otherwise tell its older count after another thread told a newer one).
    hook: Option<(Box<ProgressHook>, AtomicU64, std::sync::Mutex<()>)>,
}

impl std::fmt::Debug for Watch {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let (read, total) = self.progress();
        f.debug_struct("Watch")
            .field("read", &read)
            .field("total", &total)
            .field("cancelled", &self.is_cancelled())
            .finish()
    }
}

impl Watch {
    /// A watch nobody is told of (poll it with [`Watch::progress`]).
    pub fn new() -> Watch {
        Watch::default()
    }

    /// A watch that tells `hook` the progress at a bounded rate: each time the bytes read pass
    /// another hundredth of the total (at most about 100 calls a read, from whichever reading
    /// thread passed it), and once at the end with `(total, total)`.
    pub fn with_hook(hook: impl Fn(u64, u64) + Send + Sync + 'static) -> Watch {
        Watch(Arc::new(WatchState {
            hook: Some((Box::new(hook), AtomicU64::new(0), std::sync::Mutex::new(()))),
            ..WatchState::default()
        }))
    }

    /// Asks every reading thread to stop (at the next chunk).
    pub fn cancel(&self) {
        self.0.cancelled.store(true, Ordering::SeqCst);
    }

    /// Whether [`Watch::cancel`] was called.
    pub fn is_cancelled(&self) -> bool {
        self.0.cancelled.load(Ordering::Relaxed)
    }

    /// `(bytes read, total bytes)` so far (the total is known once the read has started).
    pub fn progress(&self) -> (u64, u64) {
        (
            self.0.read.load(Ordering::Relaxed),
            self.0.total.load(Ordering::Relaxed),
        )
    }

    /// `Err(Cancelled)` once cancelled.
    pub(crate) fn check(&self) -> Result<(), ReadError> {
        if self.is_cancelled() {
            Err(ReadError::Cancelled)
        } else {
            Ok(())
        }
    }

    pub(crate) fn set_total(&self, total: u64) {
        self.0.total.store(total, Ordering::Relaxed);
        self.0.read.store(0, Ordering::Relaxed);
        if let Some((_, told, _)) = &self.0.hook {
            told.store(0, Ordering::Relaxed);
        }
    }

    /// Counts `n` more bytes read, telling the hook when another hundredth is passed.
    pub(crate) fn add(&self, n: u64) {
        let read = self.0.read.fetch_add(n, Ordering::Relaxed) + n;
        if let Some((hook, told, calls)) = &self.0.hook {
            let total = self.0.total.load(Ordering::Relaxed).max(1);
            let step = (read.min(total) * 100 / total).min(99);
            let before = told.load(Ordering::Relaxed);
            if step > before
                && told
                    .compare_exchange(before, step, Ordering::Relaxed, Ordering::Relaxed)
                    .is_ok()
            {
                let _one_at_a_time = calls.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
                // The count now: at least what any earlier call told (the counter only grows,
                // and the lock orders this read after theirs).
                hook(self.0.read.load(Ordering::Relaxed).min(total), total);
            }
        }
    }

    /// The read ended: the count is the total, and the hook is told so.
    pub(crate) fn done(&self) {
        let total = self.0.total.load(Ordering::Relaxed);
        self.0.read.store(total, Ordering::Relaxed);
        if let Some((hook, _, calls)) = &self.0.hook {
            let _one_at_a_time = calls.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
            hook(total, total);
        }
    }
}

impl Default for ReadOptions {
    fn default() -> Self {
        ReadOptions::new(0)
    }
}

#[cfg(unix)]
pub(crate) fn read_at(f: &File, buf: &mut [u8], offset: u64) -> std::io::Result<usize> {
    std::os::unix::fs::FileExt::read_at(f, buf, offset)
}

#[cfg(windows)]
pub(crate) fn read_at(f: &File, buf: &mut [u8], offset: u64) -> std::io::Result<usize> {
    std::os::windows::fs::FileExt::seek_read(f, buf, offset)
}

/// The segment starts of a file: 0 and, for each cut, the byte after the first newline at or
/// after it.
fn segment_starts(f: &File, len: u64, parts: u64) -> std::io::Result<Vec<u64>> {
    let mut starts = vec![0u64];
    let mut buf = vec![0u8; 4 << 10];
    for i in 1..parts {
        let mut at = len * i / parts;
        if at <= *starts.last().expect("not empty") {
            continue;
        }
        let start = loop {
            let n = read_at(f, &mut buf, at)?;
            if n == 0 {
                break None;
            }
            if let Some(p) = memchr::memchr(b'\n', &buf[..n]) {
                break Some(at + p as u64 + 1);
            }
            at += n as u64;
        };
        match start {
            Some(s) if s < len => starts.push(s),
            _ => break,
        }
    }
    Ok(starts)
}

/// A plain file cut into segments for pass 1.
pub struct Plan<'a> {
    pub path: &'a Path,
    file_no: u32,
    pass: &'a PassSet,
    pub len: u64,
    /// Where each segment starts and ends.
    pub starts: Vec<u64>,
    pub ends: Vec<u64>,
    /// Scan threads (at most one per segment).
    pub threads: usize,
    /// Read (or, mapped, push) size: [`CHUNK`], or the segment size when that is smaller.
    pub chunk: usize,
    /// Lines longer than this are skipped.
    max_line: usize,
    /// Whether the file is hashed.
    pub hash: bool,
    /// The read's progress and cancellation.
    pub watch: Watch,
}

impl<'a> Plan<'a> {
    /// The plan for file `f` (opened from `path`, number `file_no`): its segments, threads and
    /// read size from `opts`, lines longer than `max_line` skipped.
    pub fn new(
        path: &'a Path,
        file_no: u32,
        pass: &'a PassSet,
        f: &File,
        opts: &ReadOptions,
        max_line: usize,
    ) -> Result<Plan<'a>, ReadError> {
        let len = f.metadata()?.len();
        let starts = segment_starts(f, len, len.div_ceil(opts.segment).max(1))?;
        let ends: Vec<u64> = starts.iter().skip(1).copied().chain([len]).collect();
        Ok(Plan {
            path,
            file_no,
            pass,
            len,
            threads: opts.threads.clamp(1, starts.len()),
            chunk: CHUNK.min(opts.segment.max(4096) as usize),
            starts,
            ends,
            max_line,
            hash: opts.hash,
            watch: opts.watch.clone(),
        })
    }

    /// A fresh segment for part `k`.
    pub fn segment(&self, k: usize) -> Segment {
        Segment::new(self.pass.clone(), self.max_line, self.file_no, self.starts[k])
    }
}

/// Merges the finished segments of a file into the index in file order, whatever order they
/// finish in.
pub struct InOrder<'b> {
    plan: &'b Plan<'b>,
    builder: &'b mut IndexBuilder,
    pending: BTreeMap<usize, Segment>,
    /// Segments merged so far (the next one to merge).
    merged: usize,
    /// What [`IndexBuilder::pipeline_count`] gave before this file.
    before: (usize, usize),
}

impl<'b> InOrder<'b> {
    /// Merges `plan`'s segments into `builder`.
    pub fn new(plan: &'b Plan<'b>, builder: &'b mut IndexBuilder) -> Self {
        let before = builder.pipeline_count();
        InOrder {
            plan,
            builder,
            pending: BTreeMap::new(),
            merged: 0,
            before,
        }
    }

    /// Segment `k` finished: merges it and every finished one after it, in order.
    pub fn add(&mut self, k: usize, segment: Segment) {
        self.pending.insert(k, segment);
        while let Some(segment) = self.pending.remove(&self.merged) {
            self.builder.merge(segment);
            if self.merged == 0 {
                self.builder
                    .reserve_for_rest(self.before, self.plan.ends[0], self.plan.len);
            }
            self.merged += 1;
        }
    }

    /// Where the segments not merged yet start (the file's length once all are).
    #[cfg_attr(not(unix), allow(dead_code))]
    pub fn frontier(&self) -> u64 {
        self.plan.starts.get(self.merged).copied().unwrap_or(self.plan.len)
    }

    /// Every segment was merged, or the error saying a scan thread stopped.
    pub fn check_complete(&self) -> Result<(), ReadError> {
        if self.merged == self.plan.starts.len() {
            Ok(())
        } else {
            Err(ReadError::StoppedEarly(self.plan.path.to_owned()))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::Watch;
    use std::sync::{Arc, Mutex};

    #[test]
    fn the_hook_hears_counts_that_never_go_down_however_the_threads_interleave() {
        // Many threads passing hundredths at once, a hook that gives the processor away: a
        // thread that won a hundredth and was then preempted must not tell an older count
        // after a newer one was told.
        for _ in 0..20 {
            let heard = Arc::new(Mutex::new(Vec::new()));
            let into = heard.clone();
            let watch = Watch::with_hook(move |read, total| {
                std::thread::yield_now();
                into.lock().unwrap().push((read, total));
            });
            watch.set_total(40_000);
            let threads: Vec<_> = (0..8)
                .map(|_| {
                    let w = watch.clone();
                    std::thread::spawn(move || {
                        for _ in 0..5_000 {
                            w.add(1);
                        }
                    })
                })
                .collect();
            for t in threads {
                t.join().unwrap();
            }
            watch.done();
            let heard = heard.lock().unwrap();
            assert!(heard.windows(2).all(|w| w[0].0 <= w[1].0), "{heard:?}");
            assert_eq!(heard.last(), Some(&(40_000, 40_000)));
            assert!(heard.len() <= 101, "{} calls", heard.len());
        }
    }
}
