//! Reads audit logs for the core. Pass 1 cuts each plain file into segments at newlines,
//! scans them on several threads while another thread hashes the file, and merges them in file
//! order as they finish. On Unix the file is mapped into memory for this (see `mapped`);
//! otherwise, or when it cannot be mapped, one thread reads it once, in order, and the chunks
//! go (shared, not copied) to the hashing and scan threads. Pass 2: positioned reads of just the
//! chosen pipelines' ranges. Gzip-compressed logs (detected by their magic bytes) stream through
//! both passes.

use super::plan::{read_at, InOrder, Plan};
use super::{ReadError, ReadOptions, CHUNK};
use crate::audit::{AuditIndex, IndexBuilder, Segment, DEFAULT_MAX_LINE};
use crate::input::InputFile;
use crate::policy::PassSet;
use crate::session::Session;
use crate::testset::{TestSetBuilder, TestSetError};
use flate2::read::MultiGzDecoder;
use sha2::{Digest, Sha256};
use std::fs::File;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::sync::{mpsc, Arc};

/// The file name the report shows for a path (no directory).
pub fn file_name(path: &Path) -> String {
    path.file_name()
        .map_or_else(|| path.display().to_string(), |n| n.to_string_lossy().into_owned())
}

fn open_audit(path: &Path) -> Result<File, ReadError> {
    File::open(path).map_err(|source| ReadError::OpenAudit {
        path: path.into(),
        source,
    })
}

fn cannot_read(path: &Path) -> impl FnOnce(std::io::Error) -> ReadError + '_ {
    move |source| ReadError::Read {
        path: path.into(),
        source,
    }
}

fn is_gzip(path: &Path) -> Result<bool, ReadError> {
    let mut magic = [0u8; 2];
    let mut f = open_audit(path)?;
    let n = f.read(&mut magic).map_err(cannot_read(path))?;
    Ok(n == 2 && magic == [0x1f, 0x8b])
}

/// A whole input file in memory: mapped where it can be (Unix, a regular file, not empty,
/// `map` asked for), read otherwise.
pub enum Contents {
    /// Mapped into memory.
    #[cfg(unix)]
    Mapped(super::mapped::Mapping),
    /// Read into memory.
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

impl Contents {
    /// Gives back the resident pages of `from..to` when mapped (see
    /// [`super::mapped::Mapping::release`]; read again, they are mapped again) and gives where
    /// the next release starts; read into memory, keeps everything and gives `to`.
    pub fn release(&self, from: usize, to: usize) -> usize {
        match self {
            #[cfg(unix)]
            Contents::Mapped(map) => map.release(from, to),
            Contents::Read(_) => {
                let _ = from;
                to
            }
        }
    }
}

/// The whole of file `path` (`what` it is, for the error).
pub fn read_whole(path: &Path, what: &'static str, map: bool) -> Result<Contents, ReadError> {
    let cannot = |source| ReadError::ReadInput {
        what,
        path: path.into(),
        source,
    };
    let mut f = File::open(path).map_err(cannot)?;
    let meta = f.metadata().map_err(cannot)?;
    #[cfg(unix)]
    if meta.is_file() && meta.len() > 0 && map {
        if let Ok(map) = super::mapped::Mapping::new(&f, meta.len(), path) {
            return Ok(Contents::Mapped(map));
        }
    }
    let mut bytes = Vec::with_capacity(usize::try_from(meta.len()).unwrap_or(0));
    f.read_to_end(&mut bytes).map_err(cannot)?;
    Ok(Contents::Read(bytes))
}

/// The sha256 (hex) of a file, streamed.
pub fn hash_file(path: &Path) -> Result<String, ReadError> {
    let mut f = File::open(path).map_err(|source| ReadError::Open {
        path: path.into(),
        source,
    })?;
    let mut h = Sha256::new();
    let mut buf = vec![0u8; CHUNK];
    loop {
        let n = f.read(&mut buf).map_err(cannot_read(path))?;
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

/// Pass 1 over a plain (regular) file: cut into segments at newlines, scanned on
/// `opts.threads` threads while another hashes the file, merged in file order. The file is
/// mapped into memory where it can be, and read in chunks otherwise.
fn scan_plain(
    path: &Path,
    file_no: u32,
    pass: &PassSet,
    opts: &ReadOptions,
    builder: &mut IndexBuilder,
) -> Result<(u64, String), ReadError> {
    let f = open_audit(path)?;
    let len = f.metadata()?.len();
    let plan = Plan::new(path, file_no, pass, &f, opts, DEFAULT_MAX_LINE)?;
    if len == 0 {
        // One empty segment, as an empty gzip stream gives (no thread has anything to read).
        let mut segment = plan.segment(0);
        segment.finish();
        builder.merge(segment);
        return Ok((
            0,
            if opts.hash {
                hex::encode(Sha256::digest(b""))
            } else {
                String::new()
            },
        ));
    }
    #[cfg(unix)]
    if opts.map {
        // A file that cannot be mapped (some file systems) is read in chunks instead.
        if let Ok(map) = super::mapped::Mapping::new(&f, len, path) {
            return super::mapped::scan(&plan, &map, builder);
        }
    }
    scan_copied(&plan, &f, builder)
}

/// Pass 1 over a file read in chunks. One thread reads the file once, in order; another hashes
/// each chunk (unless the plan says not to); the chunks go, without copying, to the scan
/// threads, segment `k` to thread `k % threads`.
fn scan_copied(plan: &Plan, f: &File, builder: &mut IndexBuilder) -> Result<(u64, String), ReadError> {
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
        let (hash_tx, hasher) = if plan.hash {
            let (hash_tx, hash_rx) = mpsc::sync_channel::<Chunk>(4 * threads + 4);
            let hasher = scope.spawn(move || {
                let mut sha = Sha256::new();
                for chunk in hash_rx {
                    sha.update(&chunk.buf);
                }
                hex::encode(sha.finalize())
            });
            (Some(hash_tx), Some(hasher))
        } else {
            (None, None)
        };
        let reader = scope.spawn(move || -> Result<(), ReadError> {
            let free_rx = free_rx;
            let mut at = 0u64;
            // The first segment that has not been ended yet.
            let mut first = 0usize;
            while at < len {
                plan.watch.check()?;
                let mut buf = free_rx
                    .recv()
                    .map_err(|_| ReadError::Stopped("the scan threads stopped"))?;
                buf.resize(chunk_size, 0);
                let want = buf.len().min((len - at) as usize);
                let n = read_at(f, &mut buf[..want], at).map_err(cannot_read(path))?;
                if n == 0 {
                    return Err(ReadError::Shorter(path.into()));
                }
                buf.truncate(n);
                plan.watch.add(n as u64);
                let chunk = Arc::new(Pooled {
                    buf,
                    pool: free_tx.clone(),
                });
                if let Some(hash_tx) = &hash_tx {
                    if hash_tx.send(chunk.clone()).is_err() {
                        return Err(ReadError::Stopped("the hashing thread stopped"));
                    }
                }
                let end = at + n as u64;
                let mut k = first;
                while k < starts.len() && starts[k] < end {
                    let from = starts[k].max(at);
                    let to = ends[k].min(end);
                    if from < to {
                        let range = (from - at) as usize..(to - at) as usize;
                        if lanes[k % threads].send((k, Some((chunk.clone(), range)))).is_err() {
                            return Err(ReadError::Stopped("a scan thread stopped"));
                        }
                    }
                    if ends[k] <= end {
                        if lanes[k % threads].send((k, None)).is_err() {
                            return Err(ReadError::Stopped("a scan thread stopped"));
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
        plan.watch.check()?;
        let sha = hasher.map_or_else(String::new, |h| h.join().expect("the hashing thread panicked"));
        in_order.check_complete()?;
        Ok((len, sha))
    })
}

/// Pass 1 over a gzip file: one stream, decompressed as it is read, never whole in memory
/// (the compressed bytes hashed as they are read when `hash`).
fn scan_gzip(
    path: &Path,
    file_no: u32,
    pass: &PassSet,
    hash: bool,
    watch: &super::Watch,
    builder: &mut IndexBuilder,
) -> Result<(u64, String), ReadError> {
    let file = open_audit(path)?;
    let mut tee = HashingReader {
        inner: file,
        sha: hash.then(Sha256::new),
        bytes: 0,
    };
    let mut segment = Segment::new(pass.clone(), DEFAULT_MAX_LINE, file_no, 0);
    {
        let mut gz = MultiGzDecoder::new(&mut tee);
        let mut buf = vec![0u8; CHUNK];
        let mut counted = 0;
        loop {
            watch.check()?;
            let n = gz.read(&mut buf).map_err(|source| ReadError::Gzip {
                path: path.into(),
                source,
            })?;
            if n == 0 {
                break;
            }
            segment.push(&buf[..n]);
            let read = gz.get_ref().bytes;
            watch.add(read - counted);
            counted = read;
        }
    }
    // Hash whatever follows the last gzip member too, so the digest is the file's.
    std::io::copy(&mut tee, &mut std::io::sink())?;
    segment.finish();
    builder.merge(segment);
    Ok((
        tee.bytes,
        tee.sha.map_or_else(String::new, |sha| hex::encode(sha.finalize())),
    ))
}

/// Counts (and, with a hasher, hashes) the bytes read through it.
struct HashingReader<R> {
    inner: R,
    sha: Option<Sha256>,
    bytes: u64,
}

impl<R: Read> Read for HashingReader<R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = self.inner.read(buf)?;
        if let Some(sha) = &mut self.sha {
            sha.update(&buf[..n]);
        }
        self.bytes += n as u64;
        Ok(n)
    }
}

/// Pass 1 over every audit file, in order.
/// The files' sizes are the watch's total (`opts.watch`), their bytes its progress.
pub fn scan(paths: &[PathBuf], pass: &PassSet, opts: ReadOptions) -> Result<(AuditIndex, Vec<bool>), ReadError> {
    let mut builder = IndexBuilder::new();
    let mut gzipped = Vec::new();
    // (A file that is not there is named below, where it is opened.)
    let total = paths
        .iter()
        .filter_map(|p| std::fs::metadata(p).ok())
        .map(|m| m.len())
        .sum();
    opts.watch.set_total(total);
    for path in paths {
        let no = builder.add_file(InputFile {
            role: crate::input::Role::Audit,
            name: file_name(path),
            bytes: 0,
            sha256: String::new(),
        });
        // (Checked without opening it: opening a pipe would wait for a writer.)
        let meta = std::fs::metadata(path).map_err(|source| ReadError::OpenAudit {
            path: path.into(),
            source,
        })?;
        if !meta.is_file() {
            return Err(ReadError::NotRegular(path.into()));
        }
        let gz = is_gzip(path)?;
        let (len, sha) = if gz {
            scan_gzip(path, no, pass, opts.hash, &opts.watch, &mut builder)?
        } else {
            scan_plain(path, no, pass, &opts, &mut builder)?
        };
        builder.set_file_digest(no, len, sha);
        gzipped.push(gz);
    }
    opts.watch.done();
    Ok((builder.finish(), gzipped))
}

/// Feeds range `i` from `read` (which fills a buffer from the range's next bytes, 0 at the
/// end of the file) and ends it.
fn feed_range(
    builder: &mut TestSetBuilder,
    i: usize,
    buf: &mut [u8],
    path: &Path,
    watch: &super::Watch,
    mut read: impl FnMut(&mut [u8]) -> std::io::Result<usize>,
) -> Result<(), ReadError> {
    let range = builder.ranges()[i];
    let mut left = range.end.saturating_sub(range.start);
    while left > 0 {
        watch.check()?;
        let want = buf.len().min(usize::try_from(left).unwrap_or(usize::MAX));
        let n = read(&mut buf[..want]).map_err(|source| ReadError::Read {
            path: path.into(),
            source,
        })?;
        if n == 0 {
            break;
        }
        builder.push(i, &buf[..n]).map_err(pass2(path))?;
        left -= n as u64;
    }
    builder.end_range(i).map_err(pass2(path))
}

fn pass2(path: &Path) -> impl Fn(TestSetError) -> ReadError + '_ {
    move |error| ReadError::Pass2 {
        path: path.into(),
        error,
    }
}

/// Pass 1 over the audit files into `session` (on `opts.threads` threads); gives which files
/// are gzip-compressed, for [`read_chosen`].
pub fn scan_into(session: &mut Session, paths: &[PathBuf], opts: ReadOptions) -> Result<Vec<bool>, ReadError> {
    let (index, gzipped) = scan(paths, &session.policy().pass_verdicts, opts)?;
    session.set_audit_index(index);
    Ok(gzipped)
}

/// Pass 1, the selection, then pass 2 over just the chosen pipelines' ranges: `session` then
/// holds the test set (its pipeline table released: it selects no more).
pub fn build_test_set(session: &mut Session, paths: &[PathBuf], opts: ReadOptions) -> Result<(), ReadError> {
    let watch = opts.watch.clone();
    let gzipped = scan_into(session, paths, opts)?;
    session.needed_ranges()?;
    // Pass 2 needs the files, not the pipeline table (nor the ids in it, which the selection
    // has copied for its cases).
    session.release_pipelines();
    read_chosen(paths, session.test_set_builder()?, &gzipped, &watch)?;
    session.finish_test_set()?;
    Ok(())
}

/// Pass 2: reads just the ranges `builder` needs from `paths` (the files pass 1 read,
/// `gzipped` as it found them): positioned reads of a plain file; a gzip file decompressed
/// again and its stream handed over whole, up to its last range. [`TestSetBuilder::finish`]
/// (or [`Session::finish_test_set`]) follows. `watch` can cancel it (its progress is pass 1's).
pub fn read_chosen(
    paths: &[PathBuf],
    builder: &mut TestSetBuilder,
    gzipped: &[bool],
    watch: &super::Watch,
) -> Result<(), ReadError> {
    let ranges = builder.ranges().to_vec();
    let mut buf = vec![0u8; CHUNK];
    for (no, path) in paths.iter().enumerate() {
        let file = no as u32;
        let wanted: Vec<usize> = (0..ranges.len()).filter(|&i| ranges[i].file == file).collect();
        if wanted.is_empty() {
            continue;
        }
        if gzipped[no] {
            let mut gz = MultiGzDecoder::new(File::open(path)?);
            while !builder.stream_done(file) {
                watch.check()?;
                let n = gz.read(&mut buf).map_err(|source| ReadError::Read {
                    path: path.into(),
                    source,
                })?;
                if n == 0 {
                    break;
                }
                builder.push_stream(file, &buf[..n]).map_err(pass2(path))?;
            }
            builder.end_stream(file).map_err(pass2(path))?;
        } else {
            let f = File::open(path).map_err(|source| ReadError::Reopen {
                path: path.into(),
                source,
            })?;
            for &i in &wanted {
                let mut at = ranges[i].start;
                feed_range(builder, i, &mut buf, path, watch, |b| {
                    let n = read_at(&f, b, at)?;
                    at += n as u64;
                    Ok(n)
                })?;
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::native::Watch;
    use std::io::Write;
    use std::sync::Mutex;

    fn log(lines: usize) -> tempfile::NamedTempFile {
        let mut f = tempfile::NamedTempFile::new().unwrap();
        for i in 0..lines {
            writeln!(
                f,
                r#"{{"pipeline_id":"p{i}","stage_id":"s","stage_type":"llm","input":"in-{i}","output":"ok"}}"#
            )
            .unwrap();
            writeln!(f, r#"{{"pipeline_id":"p{i}","verdict":"PASS","is_complete":true}}"#).unwrap();
        }
        f
    }

    #[test]
    fn the_hook_hears_increasing_counts_ending_at_the_total_at_a_bounded_rate() {
        let f = log(20_000);
        let total = f.as_file().metadata().unwrap().len();
        for (map, threads) in [(true, 3), (false, 3), (false, 1)] {
            let seen = Arc::new(Mutex::new(Vec::new()));
            let heard = seen.clone();
            let watch = Watch::with_hook(move |read, total| heard.lock().unwrap().push((read, total)));
            let opts = ReadOptions::new(threads)
                .with_segment(64 << 10)
                .with_map(map)
                .with_watch(watch.clone());
            let (index, _) = scan(&[f.path().to_path_buf()], &PassSet::default(), opts).unwrap();
            assert_eq!(index.summary().lines, 40_000);
            let seen = seen.lock().unwrap().clone();
            assert!(
                seen.len() >= 2 && seen.len() <= 101,
                "{map} {threads}: {} calls",
                seen.len()
            );
            assert!(seen.windows(2).all(|w| w[0].0 <= w[1].0), "{seen:?}");
            assert!(seen.iter().all(|&(_, t)| t == total));
            assert_eq!(seen.last(), Some(&(total, total)));
            assert_eq!(watch.progress(), (total, total));
        }
    }

    #[test]
    fn a_cancelled_read_stops_with_cancelled_before_the_end() {
        let f = log(20_000);
        for map in [true, false] {
            // Cancelled by its own hook at the first hundredth read.
            let cell: Arc<std::sync::OnceLock<Watch>> = Arc::new(std::sync::OnceLock::new());
            let own = cell.clone();
            let watch = Watch::with_hook(move |_, _| {
                if let Some(w) = own.get() {
                    w.cancel();
                }
            });
            cell.set(watch.clone()).unwrap();
            let opts = ReadOptions::new(2)
                .with_segment(64 << 10)
                .with_map(map)
                .with_watch(watch.clone());
            let out = scan(&[f.path().to_path_buf()], &PassSet::default(), opts);
            assert!(matches!(out, Err(ReadError::Cancelled)), "{map}: {:?}", out.err());
            let (read, total) = watch.progress();
            assert!(read < total / 2, "{map}: stopped early ({read} of {total})");
            // Cancelled before it starts: nothing is read.
            let watch = Watch::new();
            watch.cancel();
            let opts = ReadOptions::new(2).with_map(map).with_watch(watch.clone());
            assert!(matches!(
                scan(&[f.path().to_path_buf()], &PassSet::default(), opts),
                Err(ReadError::Cancelled)
            ));
            assert_eq!(watch.progress().0, 0);
        }
    }
}
