//! Reads audit logs for the core. Pass 1 cuts each plain file into segments at newlines,
//! scans them on several threads while another thread hashes the file, and merges them in file
//! order as they finish. On Unix the file is mapped into memory for this (see `mapped`);
//! otherwise, or when it cannot be mapped, one thread reads it once, in order, and the chunks
//! go (shared, not copied) to the hashing and scan threads. Pass 2: positioned reads of just the
//! chosen pipelines' ranges. Gzip-compressed logs (detected by their magic bytes) stream through
//! both passes.

use anyhow::{anyhow, Context, Result};
use deploy_gate::audit::{AuditIndex, IndexBuilder, InputFile, Segment, DEFAULT_MAX_LINE};
use deploy_gate::compat::PassSet;
use deploy_gate::testset::{Selection, TestSet, TestSetBuilder, TestSetPolicy};
use flate2::read::MultiGzDecoder;
use sha2::{Digest, Sha256};
use std::collections::BTreeMap;
use std::fs::File;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::sync::{mpsc, Arc};

/// Read size (small enough that a chunk is still in cache when a scan thread reads it).
pub const CHUNK: usize = 512 << 10;

/// How the audit files are read.
#[derive(Debug, Clone, Copy)]
pub struct ReadOptions {
    /// Threads scanning segments (at least 1).
    pub threads: usize,
    /// Segment size: a file is cut at the first newline after every multiple of it.
    pub segment: u64,
    /// Whether pass 1 maps plain files into memory (on Unix) rather than copying them.
    pub map: bool,
}

impl ReadOptions {
    /// `threads` (0 = every core), the segment size from `DEPLOY_GATE_SEGMENT` (bytes,
    /// default 4 MiB; the tests set it low to split small files), and memory maps unless
    /// `DEPLOY_GATE_MMAP` is `0` (the tests check both ways of reading).
    pub fn new(threads: usize) -> Self {
        let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
        let segment = std::env::var("DEPLOY_GATE_SEGMENT")
            .ok()
            .and_then(|v| v.parse().ok())
            .unwrap_or(4 << 20);
        ReadOptions {
            threads: if threads == 0 { cores } else { threads },
            segment: segment.max(1),
            map: std::env::var_os("DEPLOY_GATE_MMAP").is_none_or(|v| v != "0"),
        }
    }
}

/// The file name the report shows for a path (no directory).
pub fn file_name(path: &Path) -> String {
    path.file_name()
        .map_or_else(|| path.display().to_string(), |n| n.to_string_lossy().into_owned())
}

fn is_gzip(path: &Path) -> Result<bool> {
    let mut magic = [0u8; 2];
    let mut f = File::open(path).with_context(|| format!("cannot open audit log {}", path.display()))?;
    let n = f
        .read(&mut magic)
        .with_context(|| format!("cannot read {}", path.display()))?;
    Ok(n == 2 && magic == [0x1f, 0x8b])
}

#[cfg(unix)]
fn read_at(f: &File, buf: &mut [u8], offset: u64) -> std::io::Result<usize> {
    std::os::unix::fs::FileExt::read_at(f, buf, offset)
}

#[cfg(windows)]
fn read_at(f: &File, buf: &mut [u8], offset: u64) -> std::io::Result<usize> {
    std::os::windows::fs::FileExt::seek_read(f, buf, offset)
}

/// The segment starts of a file: 0 and, for each cut, the byte after the first newline at or
/// after it.
fn segment_starts(f: &File, len: u64, parts: u64) -> Result<Vec<u64>> {
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

/// A whole input file in memory: mapped where it can be (Unix, a regular file, not empty,
/// `DEPLOY_GATE_MMAP` not `0`), read otherwise.
pub enum Contents {
    #[cfg(unix)]
    Mapped(crate::mapped::Mapping),
    Read(Vec<u8>),
}

impl std::ops::Deref for Contents {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        match self {
            #[cfg(unix)]
            Contents::Mapped(map) => map.bytes(),
            Contents::Read(bytes) => bytes,
        }
    }
}

/// The whole of file `path` (`what` it is, for the error).
pub fn read_whole(path: &Path, what: &str) -> Result<Contents> {
    let cannot = || format!("cannot read {what} {}", path.display());
    let mut f = File::open(path).with_context(cannot)?;
    let meta = f.metadata().with_context(cannot)?;
    #[cfg(unix)]
    if meta.is_file() && meta.len() > 0 && ReadOptions::new(1).map {
        if let Ok(map) = crate::mapped::Mapping::new(&f, meta.len(), path) {
            return Ok(Contents::Mapped(map));
        }
    }
    let mut bytes = Vec::with_capacity(usize::try_from(meta.len()).unwrap_or(0));
    f.read_to_end(&mut bytes).with_context(cannot)?;
    Ok(Contents::Read(bytes))
}

/// The sha256 (hex) of a file, streamed.
pub fn hash_file(path: &Path) -> Result<String> {
    let mut f = File::open(path).with_context(|| format!("cannot open {}", path.display()))?;
    let mut h = Sha256::new();
    let mut buf = vec![0u8; CHUNK];
    loop {
        let n = f
            .read(&mut buf)
            .with_context(|| format!("cannot read {}", path.display()))?;
        if n == 0 {
            break;
        }
        h.update(&buf[..n]);
    }
    Ok(hex::encode(h.finalize()))
}

/// A buffer that goes back to its pool when dropped.
struct Pooled {
    buf: Vec<u8>,
    pool: mpsc::Sender<Vec<u8>>,
}

impl Drop for Pooled {
    fn drop(&mut self) {
        // The pool is gone once reading ended; the buffer is then simply freed.
        let _ = self.pool.send(std::mem::take(&mut self.buf));
    }
}

/// A chunk of the file as read once, shared by the segments it overlaps.
type Chunk = Arc<Pooled>;

/// What a scan thread is sent: `(segment, chunk, range of the chunk that belongs to it)`, in
/// file order; `None` as the chunk ends the segment.
type Piece = (usize, Option<(Chunk, std::ops::Range<usize>)>);

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
}

impl<'a> Plan<'a> {
    /// The plan for file `f` (opened from `path`, number `file_no`): its segments, threads and
    /// read size from `opts`, lines longer than `max_line` skipped.
    pub fn new(
        path: &'a Path,
        file_no: u32,
        pass: &'a PassSet,
        f: &File,
        opts: ReadOptions,
        max_line: usize,
    ) -> Result<Plan<'a>> {
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
        })
    }

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

    pub fn check_complete(&self) -> Result<()> {
        if self.merged == self.plan.starts.len() {
            Ok(())
        } else {
            Err(anyhow!("{}: a scan thread stopped early", self.plan.path.display()))
        }
    }
}

/// Pass 1 over a plain (regular) file: cut into segments at newlines, scanned on
/// `opts.threads` threads while another hashes the file, merged in file order. The file is
/// mapped into memory where it can be, and read in chunks otherwise.
fn scan_plain(
    path: &Path,
    file_no: u32,
    pass: &PassSet,
    opts: ReadOptions,
    builder: &mut IndexBuilder,
) -> Result<(u64, String)> {
    let f = File::open(path).with_context(|| format!("cannot open audit log {}", path.display()))?;
    let len = f.metadata()?.len();
    let plan = Plan::new(path, file_no, pass, &f, opts, DEFAULT_MAX_LINE)?;
    if len == 0 {
        // One empty segment, as an empty gzip stream gives (no thread has anything to read).
        let mut segment = plan.segment(0);
        segment.finish();
        builder.merge(segment);
        return Ok((0, hex::encode(Sha256::digest(b""))));
    }
    #[cfg(unix)]
    if opts.map {
        // A file that cannot be mapped (some file systems) is read in chunks instead.
        if let Ok(map) = crate::mapped::Mapping::new(&f, len, path) {
            return crate::mapped::scan(&plan, &map, builder);
        }
    }
    scan_copied(&plan, &f, builder)
}

/// Pass 1 over a file read in chunks. One thread reads the file once, in order; another hashes
/// each chunk; the chunks go, without copying, to the scan threads, segment `k` to thread
/// `k % threads`.
fn scan_copied(plan: &Plan, f: &File, builder: &mut IndexBuilder) -> Result<(u64, String)> {
    let (path, len, threads) = (plan.path, plan.len, plan.threads);
    let (starts, ends) = (&plan.starts, &plan.ends);
    let chunk_size = plan.chunk;
    std::thread::scope(|scope| {
        let (done_tx, done_rx) = mpsc::channel::<(usize, Segment)>();
        let (free_tx, free_rx) = mpsc::channel::<Vec<u8>>();
        let mut lanes = Vec::new();
        for _ in 0..threads {
            let (tx, rx) = mpsc::sync_channel::<Piece>(4);
            lanes.push(tx);
            let done_tx = done_tx.clone();
            scope.spawn(move || {
                let mut open: Option<(usize, Segment)> = None;
                for (k, piece) in rx {
                    let (_, segment) = open.get_or_insert_with(|| (k, plan.segment(k)));
                    match piece {
                        Some((chunk, range)) => {
                            segment.push(&chunk.buf[range]);
                        }
                        None => {
                            let (k, mut segment) = open.take().expect("a segment is open");
                            segment.finish();
                            if done_tx.send((k, segment)).is_err() {
                                return;
                            }
                        }
                    }
                }
            });
        }
        // A fixed pool of buffers: the reader waits for one to come back rather than allocate.
        for _ in 0..4 * threads + 4 {
            free_tx.send(vec![0u8; chunk_size]).expect("the receiver is alive");
        }
        drop(done_tx);
        // The hash has a thread of its own: on the reading thread it would be the longest chain.
        let (hash_tx, hash_rx) = mpsc::sync_channel::<Chunk>(4 * threads + 4);
        let hasher = scope.spawn(move || {
            let mut sha = Sha256::new();
            for chunk in hash_rx {
                sha.update(&chunk.buf);
            }
            hex::encode(sha.finalize())
        });
        let reader = scope.spawn(move || -> Result<()> {
            let free_rx = free_rx;
            let mut at = 0u64;
            // The first segment that has not been ended yet.
            let mut first = 0usize;
            while at < len {
                let mut buf = free_rx.recv().map_err(|_| anyhow!("the scan threads stopped"))?;
                buf.resize(chunk_size, 0);
                let want = buf.len().min((len - at) as usize);
                let n = read_at(f, &mut buf[..want], at).with_context(|| format!("cannot read {}", path.display()))?;
                if n == 0 {
                    return Err(anyhow!(
                        "{} changed while it was read (it is shorter now)",
                        path.display()
                    ));
                }
                buf.truncate(n);
                let chunk = Arc::new(Pooled {
                    buf,
                    pool: free_tx.clone(),
                });
                if hash_tx.send(chunk.clone()).is_err() {
                    return Err(anyhow!("the hashing thread stopped"));
                }
                let end = at + n as u64;
                let mut k = first;
                while k < starts.len() && starts[k] < end {
                    let from = starts[k].max(at);
                    let to = ends[k].min(end);
                    if from < to {
                        let range = (from - at) as usize..(to - at) as usize;
                        if lanes[k % threads].send((k, Some((chunk.clone(), range)))).is_err() {
                            return Err(anyhow!("a scan thread stopped"));
                        }
                    }
                    if ends[k] <= end {
                        if lanes[k % threads].send((k, None)).is_err() {
                            return Err(anyhow!("a scan thread stopped"));
                        }
                        first = k + 1;
                    }
                    k += 1;
                }
                drop(chunk);
                at = end;
            }
            drop(lanes);
            Ok(())
        });
        let mut in_order = InOrder::new(plan, builder);
        for (k, segment) in done_rx {
            in_order.add(k, segment);
        }
        reader.join().expect("the reading thread panicked")?;
        let sha = hasher.join().expect("the hashing thread panicked");
        in_order.check_complete()?;
        Ok((len, sha))
    })
}

/// Pass 1 over a gzip file: one stream, decompressed as it is read, never whole in memory.
fn scan_gzip(path: &Path, file_no: u32, pass: &PassSet, builder: &mut IndexBuilder) -> Result<(u64, String)> {
    let file = File::open(path).with_context(|| format!("cannot open audit log {}", path.display()))?;
    let mut tee = HashingReader {
        inner: file,
        sha: Sha256::new(),
        bytes: 0,
    };
    let mut segment = Segment::new(pass.clone(), DEFAULT_MAX_LINE, file_no, 0);
    {
        let mut gz = MultiGzDecoder::new(&mut tee);
        let mut buf = vec![0u8; CHUNK];
        loop {
            let n = gz
                .read(&mut buf)
                .with_context(|| format!("{}: not a valid gzip stream", path.display()))?;
            if n == 0 {
                break;
            }
            segment.push(&buf[..n]);
        }
    }
    // Hash whatever follows the last gzip member too, so the digest is the file's.
    std::io::copy(&mut tee, &mut std::io::sink())?;
    segment.finish();
    builder.merge(segment);
    Ok((tee.bytes, hex::encode(tee.sha.finalize())))
}

struct HashingReader<R> {
    inner: R,
    sha: Sha256,
    bytes: u64,
}

impl<R: Read> Read for HashingReader<R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = self.inner.read(buf)?;
        self.sha.update(&buf[..n]);
        self.bytes += n as u64;
        Ok(n)
    }
}

/// Pass 1 over every audit file, in order.
pub fn scan(paths: &[PathBuf], pass: &PassSet, opts: ReadOptions) -> Result<(AuditIndex, Vec<bool>)> {
    let mut builder = IndexBuilder::new();
    let mut gzipped = Vec::new();
    for path in paths {
        let no = builder.add_file(InputFile {
            role: deploy_gate::Role::Audit,
            name: file_name(path),
            bytes: 0,
            sha256: String::new(),
        });
        // (Checked without opening it: opening a pipe would wait for a writer.)
        let meta = std::fs::metadata(path).with_context(|| format!("cannot open audit log {}", path.display()))?;
        if !meta.is_file() {
            return Err(anyhow!(
                "{}: not a regular file; an audit log is read twice (to index it, then for the chosen pipelines), so a pipe, a device or a directory will not do: save it to a file (a .jsonl.gz is read as it is)",
                path.display()
            ));
        }
        let gz = is_gzip(path)?;
        let (len, sha) = if gz {
            scan_gzip(path, no, pass, &mut builder)?
        } else {
            scan_plain(path, no, pass, opts, &mut builder)?
        };
        builder.set_file_digest(no, len, sha);
        gzipped.push(gz);
    }
    Ok((builder.finish(), gzipped))
}

/// Feeds range `i` from `read` (which fills a buffer from the range's next bytes, 0 at the
/// end of the file) and ends it.
fn feed_range(
    builder: &mut TestSetBuilder,
    i: usize,
    buf: &mut [u8],
    path: &Path,
    mut read: impl FnMut(&mut [u8]) -> std::io::Result<usize>,
) -> Result<()> {
    let range = builder.ranges()[i];
    let mut left = range.end.saturating_sub(range.start);
    while left > 0 {
        let want = buf.len().min(usize::try_from(left).unwrap_or(usize::MAX));
        let n = read(&mut buf[..want]).with_context(|| format!("cannot read {}", path.display()))?;
        if n == 0 {
            break;
        }
        builder
            .push(i, &buf[..n])
            .map_err(|e| anyhow!("{}: {e}", path.display()))?;
        left -= n as u64;
    }
    builder.end_range(i).map_err(|e| anyhow!("{}: {e}", path.display()))
}

/// Pass 1, the selection, then pass 2 over just the chosen pipelines' ranges.
pub fn build_test_set(
    paths: &[PathBuf],
    pass: &PassSet,
    policy: &TestSetPolicy,
    opts: ReadOptions,
) -> Result<(AuditIndex, TestSet)> {
    let Chosen {
        mut index,
        selection,
        gzipped,
    } = choose(paths, pass, policy, opts)?;
    // Pass 2 needs the files, not the pipeline table (nor the ids in it, which the selection
    // has copied for its cases).
    index.release_pipelines();
    let ts = read_chosen(paths, &index, selection, &gzipped)?;
    Ok((index, ts))
}

/// What pass 1 and the selection give: the index, the chosen pipelines, and which files are
/// gzip-compressed.
pub struct Chosen {
    pub index: AuditIndex,
    pub selection: Selection,
    pub gzipped: Vec<bool>,
}

/// Pass 1 and the selection.
pub fn choose(paths: &[PathBuf], pass: &PassSet, policy: &TestSetPolicy, opts: ReadOptions) -> Result<Chosen> {
    let (index, gzipped) = scan(paths, pass, opts)?;
    let selection = index.select(policy);
    Ok(Chosen {
        index,
        selection,
        gzipped,
    })
}

/// Pass 2: reads just the ranges of `selection` in `paths` (the files pass 1 read into `index`,
/// `gzipped` as it found them) into the test set. It needs the index's files, not its pipeline
/// table, which may be released before.
pub fn read_chosen(paths: &[PathBuf], index: &AuditIndex, selection: Selection, gzipped: &[bool]) -> Result<TestSet> {
    let mut builder = TestSetBuilder::new(index, selection);
    let ranges = builder.ranges().to_vec();
    let mut buf = vec![0u8; CHUNK];
    for (no, path) in paths.iter().enumerate() {
        let wanted: Vec<usize> = (0..ranges.len()).filter(|&i| ranges[i].file as usize == no).collect();
        if wanted.is_empty() {
            continue;
        }
        if gzipped[no] {
            // Decompress again, skipping to each range (they are in offset order).
            let mut gz = MultiGzDecoder::new(File::open(path)?);
            let mut pos = 0u64;
            for &i in &wanted {
                let start = ranges[i].start;
                if pos < start {
                    let skipped = std::io::copy(&mut (&mut gz).take(start - pos), &mut std::io::sink())?;
                    pos += skipped;
                }
                feed_range(&mut builder, i, &mut buf, path, |b| {
                    let n = gz.read(b)?;
                    pos += n as u64;
                    Ok(n)
                })?;
            }
        } else {
            let f = File::open(path).with_context(|| format!("cannot reopen {}", path.display()))?;
            for &i in &wanted {
                let mut at = ranges[i].start;
                feed_range(&mut builder, i, &mut buf, path, |b| {
                    let n = read_at(&f, b, at)?;
                    at += n as u64;
                    Ok(n)
                })?;
            }
        }
    }
    builder.finish().map_err(|e| anyhow!("{e}"))
}
