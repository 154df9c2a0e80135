//! Reads audit logs for the core: pass 1 split at newlines into segments scanned on all cores
//! (and the file hashed on its own thread), pass 2 with positioned reads of just the needed
//! lines. Gzip-compressed logs (detected by their magic bytes) stream through both passes.

use anyhow::{anyhow, Context, Result};
use deploy_gate::audit::{AuditIndex, IndexBuilder, InputFile, Segment, DEFAULT_MAX_LINE};
use deploy_gate::compat::PassSet;
use deploy_gate::testset::{TestSet, TestSetBuilder, TestSetPolicy};
use flate2::read::MultiGzDecoder;
use sha2::{Digest, Sha256};
use std::fs::File;
use std::io::Read;
use std::path::{Path, PathBuf};

/// Read size.
const CHUNK: usize = 4 << 20;

/// How the audit files are read.
#[derive(Debug, Clone, Copy)]
pub struct ReadOptions {
    /// Threads scanning segments (at least 1).
    pub threads: usize,
    /// Files smaller than twice this are not split.
    pub min_segment: u64,
}

impl ReadOptions {
    /// `threads` (0 = every core) and the minimum segment size from `DEPLOY_GATE_MIN_SEGMENT`
    /// (bytes, default 8 MiB; the tests set it low to split small files).
    pub fn new(threads: usize) -> Self {
        let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
        let min_segment = std::env::var("DEPLOY_GATE_MIN_SEGMENT")
            .ok()
            .and_then(|v| v.parse().ok())
            .unwrap_or(8 << 20);
        ReadOptions {
            threads: if threads == 0 { cores } else { threads },
            min_segment: min_segment.max(1),
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
    let mut buf = vec![0u8; 64 << 10];
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

fn scan_range(f: &File, path: &Path, segment: &mut Segment, start: u64, end: u64) -> Result<()> {
    let mut buf = vec![0u8; CHUNK.min((end - start) as usize).max(1)];
    let mut at = start;
    while at < end {
        let want = buf.len().min((end - at) as usize);
        let n = read_at(f, &mut buf[..want], at).with_context(|| format!("cannot read {}", path.display()))?;
        if n == 0 {
            return Err(anyhow!(
                "{} changed while it was read (it is shorter now)",
                path.display()
            ));
        }
        segment.push(&buf[..n]);
        at += n as u64;
    }
    segment.finish();
    Ok(())
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

/// Pass 1 over a plain file: segments on `threads` threads, the sha256 on another.
fn scan_plain(path: &Path, file_no: u32, pass: &PassSet, opts: ReadOptions) -> Result<(Vec<Segment>, u64, String)> {
    let f = File::open(path).with_context(|| format!("cannot open audit log {}", path.display()))?;
    let len = f.metadata()?.len();
    let parts = (len / opts.min_segment).clamp(1, opts.threads as u64);
    let starts = segment_starts(&f, len, parts)?;
    let ends: Vec<u64> = starts.iter().skip(1).copied().chain([len]).collect();
    std::thread::scope(|scope| {
        let hasher = scope.spawn(|| hash_file(path));
        let workers: Vec<_> = starts
            .iter()
            .zip(&ends)
            .map(|(&start, &end)| {
                let f = &f;
                scope.spawn(move || -> Result<Segment> {
                    let mut segment = Segment::new(pass.clone(), DEFAULT_MAX_LINE, file_no, start);
                    scan_range(f, path, &mut segment, start, end)?;
                    Ok(segment)
                })
            })
            .collect();
        let segments = workers
            .into_iter()
            .map(|w| w.join().expect("a scan thread panicked"))
            .collect::<Result<Vec<_>>>()?;
        let sha = hasher.join().expect("the hash thread panicked")?;
        Ok((segments, len, sha))
    })
}

/// Pass 1 over a gzip file: one stream, decompressed as it is read, never whole in memory.
fn scan_gzip(path: &Path, file_no: u32, pass: &PassSet) -> Result<(Vec<Segment>, u64, String)> {
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
    Ok((vec![segment], tee.bytes, hex::encode(tee.sha.finalize())))
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
            role: "audit".into(),
            name: file_name(path),
            bytes: 0,
            sha256: String::new(),
        });
        let gz = is_gzip(path)?;
        let (segments, len, sha) = if gz {
            scan_gzip(path, no, pass)?
        } else {
            scan_plain(path, no, pass, opts)?
        };
        builder.set_file_digest(no, len, sha);
        for s in segments {
            builder.merge(s);
        }
        gzipped.push(gz);
    }
    Ok((builder.finish(), gzipped))
}

/// Pass 1, the selection, then pass 2 over just the needed lines.
pub fn build_test_set(
    paths: &[PathBuf],
    pass: &PassSet,
    policy: &TestSetPolicy,
    opts: ReadOptions,
) -> Result<(AuditIndex, TestSet)> {
    let (index, gzipped) = scan(paths, pass, opts)?;
    let selection = index.select(policy);
    let mut builder = TestSetBuilder::new(&index, selection);
    let lines: Vec<_> = builder.selection().lines().iter().map(|l| l.at).collect();
    for (no, path) in paths.iter().enumerate() {
        let wanted: Vec<usize> = (0..lines.len()).filter(|&i| lines[i].file as usize == no).collect();
        if wanted.is_empty() {
            continue;
        }
        let changed = || anyhow!("{} changed while it was read (it is shorter now)", path.display());
        if gzipped[no] {
            // Decompress again and copy out the needed lines (they are in offset order).
            let mut gz = MultiGzDecoder::new(File::open(path)?);
            let mut pos = 0u64;
            let mut line = Vec::new();
            let mut skip_buf = vec![0u8; CHUNK];
            for &i in &wanted {
                let at = lines[i];
                while pos < at.offset {
                    let n = ((at.offset - pos) as usize).min(skip_buf.len());
                    gz.read_exact(&mut skip_buf[..n]).map_err(|_| changed())?;
                    pos += n as u64;
                }
                line.resize(at.len as usize, 0);
                gz.read_exact(&mut line).map_err(|_| changed())?;
                pos += at.len as u64;
                builder.feed(i, &line).map_err(|e| anyhow!("{}: {e}", path.display()))?;
            }
        } else {
            let f = File::open(path).with_context(|| format!("cannot reopen {}", path.display()))?;
            let mut line = Vec::new();
            for &i in &wanted {
                let at = lines[i];
                line.resize(at.len as usize, 0);
                let mut got = 0;
                while got < line.len() {
                    let n = read_at(&f, &mut line[got..], at.offset + got as u64)?;
                    if n == 0 {
                        return Err(changed());
                    }
                    got += n;
                }
                builder.feed(i, &line).map_err(|e| anyhow!("{}: {e}", path.display()))?;
            }
        }
    }
    let ts = builder.finish().map_err(|e| anyhow!("{e}"))?;
    Ok((index, ts))
}
