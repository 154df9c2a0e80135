//! A model folder (or file) read for OpenSSF Model Signing ([`crate::oms`]): the walk, the
//! streaming hashes, and the trainer's signature checked against the files.
//!
//! The walk follows `model-signing` 1.1.1: every regular file below the root except the ignore
//! paths (the defaults `.git`, `.gitattributes`, `.github`, `.gitignore`, the signature file,
//! and the signed `ignore_paths`; each at the model root, with its whole subtree), paths
//! relative to the root with `/`. A symbolic link or a special file anywhere in the walk is
//! refused ([`Check::Symlink`]), as `model-signing` refuses them by default (it also refuses one
//! inside an ignored directory; this walk does not descend into ignored directories at all).
//!
//! Against a folder changing under it: each file is opened with `O_NOFOLLOW` and must be the
//! same file (device and inode) the listing saw, and must still have the size listed once read.
//! Files are read in 1 MiB blocks (never whole), on as many threads as there are cores.

use crate::oms::check::{is_ignored, manifest_of_digests, original_digest};
use crate::oms::{self, Check, FileDigests, Manifest, Method, OmsError, Resource, Trust, Verified};
pub use crate::oms::{decision_scheme, ModelIdentity};
use sha2::{Digest as _, Sha256};
use std::fs::{self, File, Metadata, OpenOptions};
use std::io;
use std::os::unix::fs::{FileExt, MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Mutex;

/// Why a model could not be read or verified.
#[derive(Debug, thiserror::Error)]
pub enum ModelError {
    /// A named OMS check failed.
    #[error(transparent)]
    Check(#[from] OmsError),
    /// A file could not be read.
    #[error("cannot read {}: {source}", path.display())]
    Io {
        /// The file.
        path: PathBuf,
        /// The cause.
        source: io::Error,
    },
    /// A file name is not UTF-8 (OMS names files by UTF-8 paths).
    #[error("{}: the file name is not UTF-8, which an OMS manifest cannot name", path.display())]
    NotUtf8 {
        /// The file.
        path: PathBuf,
    },
    /// The model digest by the original scheme, or a file read by the tool's common rules.
    #[error(transparent)]
    Files(Box<crate::native::files::FilesError>),
    /// The decision's subject names a digest scheme this build does not know.
    #[error("the decision's subject digest is by the scheme `{0}`, which this build does not know; refused")]
    UnknownScheme(String),
    /// A file changed while it was read.
    #[error("{}: the file changed while it was read", path.display())]
    Changed {
        /// The file.
        path: PathBuf,
    },
}

impl ModelError {
    /// The failed check's name, when a named check failed.
    pub fn check(&self) -> Option<Check> {
        match self {
            ModelError::Check(e) => Some(e.check),
            _ => None,
        }
    }
}

fn io_err(path: &Path) -> impl FnOnce(io::Error) -> ModelError + '_ {
    move |source| ModelError::Io {
        path: path.to_path_buf(),
        source,
    }
}

fn not_regular(rel: &str, meta: &Metadata) -> ModelError {
    let what = if meta.file_type().is_symlink() {
        "a symbolic link"
    } else {
        "not a regular file or directory"
    };
    ModelError::Check(OmsError {
        check: Check::Symlink,
        detail: format!("`{rel}` is {what}; a model folder may hold only regular files and directories"),
        file: Some(rel.to_owned()),
    })
}

/// One file to hash: its path, its path relative to the root, and what the listing saw.
struct Listed {
    path: PathBuf,
    rel: String,
    len: u64,
    dev: u64,
    ino: u64,
}

/// A directory of the walk, as the listing saw it.
struct Dir {
    path: PathBuf,
    dev: u64,
    ino: u64,
}

impl Dir {
    /// Still the same directory (not replaced by a symbolic link or another directory)?
    fn unchanged(&self) -> Result<(), ModelError> {
        match fs::symlink_metadata(&self.path) {
            Ok(m) if m.is_dir() && m.dev() == self.dev && m.ino() == self.ino => Ok(()),
            _ => Err(ModelError::Changed {
                path: self.path.clone(),
            }),
        }
    }
}

/// The files below `root` (or `root` itself), and the directories listed.
fn list(root: &Path, ignore: &[String]) -> Result<(Vec<Listed>, Vec<Dir>), ModelError> {
    let meta = fs::symlink_metadata(root).map_err(io_err(root))?;
    if meta.is_file() {
        let file = Listed {
            path: root.to_path_buf(),
            rel: ".".to_owned(),
            len: meta.len(),
            dev: meta.dev(),
            ino: meta.ino(),
        };
        return Ok((vec![file], Vec::new()));
    }
    if !meta.is_dir() {
        let name = root.display().to_string();
        return Err(not_regular(&name, &meta));
    }
    let mut out = Vec::new();
    let mut dirs = Vec::new();
    let mut stack = vec![(
        Dir {
            path: root.to_path_buf(),
            dev: meta.dev(),
            ino: meta.ino(),
        },
        String::new(),
    )];
    while let Some((d, prefix)) = stack.pop() {
        // A directory swapped for a symbolic link after it was listed would be read through
        // the link: it must be the directory the listing saw, before and after it is read.
        d.unchanged()?;
        let dir = d.path.clone();
        for entry in fs::read_dir(&dir).map_err(io_err(&dir))? {
            let entry = entry.map_err(io_err(&dir))?;
            let path = entry.path();
            let name = entry
                .file_name()
                .into_string()
                .map_err(|_| ModelError::NotUtf8 { path: path.clone() })?;
            let rel = if prefix.is_empty() {
                name
            } else {
                format!("{prefix}/{name}")
            };
            if is_ignored(&rel, ignore) {
                continue;
            }
            let meta = fs::symlink_metadata(&path).map_err(io_err(&path))?;
            if meta.is_dir() {
                let sub = Dir {
                    path,
                    dev: meta.dev(),
                    ino: meta.ino(),
                };
                stack.push((sub, rel));
            } else if meta.is_file() {
                out.push(Listed {
                    path,
                    rel,
                    len: meta.len(),
                    dev: meta.dev(),
                    ino: meta.ino(),
                });
            } else {
                return Err(not_regular(&rel, &meta));
            }
        }
        d.unchanged()?;
        dirs.push(d);
    }
    Ok((out, dirs))
}

fn open_listed(f: &Listed) -> Result<File, ModelError> {
    let file = OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK | libc::O_CLOEXEC)
        .open(&f.path)
        .map_err(|e| {
            if e.raw_os_error() == Some(libc::ELOOP) {
                ModelError::Check(OmsError {
                    check: Check::Symlink,
                    detail: format!("`{}` became a symbolic link while the folder was read", f.rel),
                    file: Some(f.rel.clone()),
                })
            } else {
                ModelError::Io {
                    path: f.path.clone(),
                    source: e,
                }
            }
        })?;
    let meta = file.metadata().map_err(io_err(&f.path))?;
    if !meta.is_file() || meta.dev() != f.dev || meta.ino() != f.ino || meta.len() != f.len {
        return Err(ModelError::Changed { path: f.path.clone() });
    }
    Ok(file)
}

const BLOCK: usize = 1 << 20;

/// Why a job stopped early: another job failed first (its error is the one reported).
fn cancelled(f: &Listed) -> ModelError {
    ModelError::Changed { path: f.path.clone() }
}

/// sha256 of bytes `[start, end)` of an open file, read in 1 MiB blocks (stopping early once
/// `stop` is set).
fn hash_range(
    file: &File,
    start: u64,
    end: u64,
    buf: &mut [u8],
    f: &Listed,
    stop: &AtomicBool,
) -> Result<[u8; 32], ModelError> {
    let mut h = Sha256::new();
    let mut at = start;
    while at < end {
        if stop.load(Ordering::Relaxed) {
            return Err(cancelled(f));
        }
        let want = ((end - at) as usize).min(buf.len());
        let n = file.read_at(&mut buf[..want], at).map_err(io_err(&f.path))?;
        if n == 0 {
            return Err(ModelError::Changed { path: f.path.clone() });
        }
        h.update(&buf[..n]);
        at += n as u64;
    }
    Ok(h.finalize().into())
}

/// Runs `work` over `0..n` on up to `threads` threads, keeping the first error; once one job
/// fails, `stop` (the third argument) is set so that the others stop at their next block
/// rather than read their whole file.
fn parallel<T: Send>(
    n: usize,
    threads: usize,
    work: impl Fn(usize, &mut Vec<u8>, &AtomicBool) -> Result<T, ModelError> + Sync,
) -> Result<Vec<T>, ModelError> {
    let next = AtomicUsize::new(0);
    let stop = AtomicBool::new(false);
    let out: Mutex<Vec<(usize, T)>> = Mutex::new(Vec::new());
    let failed: Mutex<Option<ModelError>> = Mutex::new(None);
    std::thread::scope(|s| {
        for _ in 0..threads.clamp(1, n.max(1)) {
            s.spawn(|| {
                let mut buf = vec![0u8; BLOCK];
                loop {
                    let i = next.fetch_add(1, Ordering::Relaxed);
                    if i >= n || failed.lock().expect("not poisoned").is_some() {
                        break;
                    }
                    match work(i, &mut buf, &stop) {
                        Ok(v) => out.lock().expect("not poisoned").push((i, v)),
                        Err(e) => {
                            failed.lock().expect("not poisoned").get_or_insert(e);
                            stop.store(true, Ordering::Relaxed);
                            break;
                        }
                    }
                }
            });
        }
    });
    if let Some(e) = failed.into_inner().expect("not poisoned") {
        return Err(e);
    }
    let mut out = out.into_inner().expect("not poisoned");
    out.sort_by_key(|(i, _)| *i);
    Ok(out.into_iter().map(|(_, v)| v).collect())
}

fn threads() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get())
}

/// The OMS manifest of a model folder or file, read by `method`, leaving out `ignore` (paths
/// relative to the root; a single-file model ignores nothing).
pub fn manifest_of(root: &Path, method: Method, ignore: &[String]) -> Result<Manifest, ModelError> {
    read_manifest(root, method, ignore, None)
}

/// [`manifest_of`]; with `signed`, the listing is first compared with the signed resources
/// ([`Verified::check_listing`]: names, and sizes by `shards`), so that a missing, extra or
/// resized file (a planted sparse file of terabytes) is refused before any file is hashed.
fn read_manifest(
    root: &Path,
    method: Method,
    ignore: &[String],
    signed: Option<&Verified>,
) -> Result<Manifest, ModelError> {
    let (files, dirs) = list(root, ignore)?;
    if let Some(v) = signed {
        v.check_listing(files.iter().map(|f| (f.rel.as_str(), f.len)))?;
    }
    // The jobs (a whole file, or one shard of it) are numbered, never listed: job `i` is found
    // from the running count of jobs per file. The largest files first, so the last thread is
    // not left with the biggest one.
    let mut order: Vec<usize> = (0..files.len()).collect();
    order.sort_by_key(|&i| std::cmp::Reverse(files[i].len));
    let jobs_of = |f: &Listed| match method {
        Method::Files => 1,
        Method::Shards { shard_size } => f.len.div_ceil(shard_size),
    };
    let mut ends = Vec::with_capacity(order.len());
    let mut total = 0u64;
    for &i in &order {
        total = total.saturating_add(jobs_of(&files[i]));
        ends.push(total);
    }
    let total = usize::try_from(total).unwrap_or(usize::MAX);
    let resources = parallel(total, threads(), |i, buf, stop| {
        let k = ends.partition_point(|&e| e <= i as u64);
        let f = &files[order[k]];
        let nth = i as u64 - if k == 0 { 0 } else { ends[k - 1] };
        let range = match method {
            Method::Files => None,
            Method::Shards { shard_size } => {
                let start = nth * shard_size;
                Some((start, (start + shard_size).min(f.len)))
            }
        };
        let file = open_listed(f)?;
        let (start, end) = range.unwrap_or((0, f.len));
        let digest = hash_range(&file, start, end, buf, f, stop)?;
        if range.is_none() {
            // The whole file was read: it must end where the listing said.
            let mut one = [0u8; 1];
            if file.read_at(&mut one, end).map_err(io_err(&f.path))? != 0 {
                return Err(ModelError::Changed { path: f.path.clone() });
            }
        }
        Ok(match range {
            None => Resource::file(f.rel.clone(), digest),
            Some((s, e)) => Resource::shard(f.rel.clone(), s, e, digest),
        })
    })?;
    // Every directory is still the one listed once every file is read (a file is opened by its
    // path: a directory on it swapped for a link meanwhile would have been read through).
    for d in &dirs {
        d.unchanged()?;
    }
    Ok(Manifest::new(method, resources))
}

/// The ignore list a folder is read with by default: OMS's defaults, and `signature` when it
/// lies inside `root`.
pub fn default_ignore(root: &Path, signature: Option<&Path>) -> Vec<String> {
    let mut out: Vec<String> = oms::DEFAULT_IGNORE_PATHS.iter().map(|s| s.to_string()).collect();
    if let Some(rel) = signature.and_then(|s| relative_inside(root, s)) {
        if !out.contains(&rel) {
            out.push(rel);
        }
    }
    out
}

fn relative_inside(root: &Path, path: &Path) -> Option<String> {
    let root = fs::canonicalize(root).ok()?;
    let parent = fs::canonicalize(
        path.parent()
            .filter(|p| !p.as_os_str().is_empty())
            .unwrap_or(Path::new(".")),
    )
    .ok()?;
    let full = parent.join(path.file_name()?);
    let rel = full.strip_prefix(&root).ok()?;
    let parts: Option<Vec<&str>> = rel.components().map(|c| c.as_os_str().to_str()).collect();
    let rel = parts?.join("/");
    (!rel.is_empty()).then_some(rel)
}

/// The OMS subject digest of a model folder or file, as `model-signing` computes it with its
/// defaults (`model.sig` inside the folder is left out, as `model_signing sign` leaves out the
/// signature it writes).
pub fn oms_digest(root: &Path, method: Method) -> Result<String, ModelError> {
    let sig = root.join(oms::SIGNATURE_FILE);
    let ignore = if fs::symlink_metadata(root).map(|m| m.is_dir()).unwrap_or(false) {
        default_ignore(root, Some(&sig))
    } else {
        Vec::new()
    };
    Ok(manifest_of(root, method, &ignore)?.digest_hex())
}

/// Verifies the trainer's signature `bundle` (the bytes of `signature_path`) over the model at
/// `root`: the bundle ([`oms::verify_bundle`]), then every file, read the way the signature
/// says, leaving out the defaults, the signed `ignore_paths` and the signature file itself.
pub fn verify_model(root: &Path, bundle: &[u8], signature_path: &Path, trust: &Trust) -> Result<Verified, ModelError> {
    let v = oms::verify_bundle(bundle, trust)?;
    let is_dir = fs::symlink_metadata(root).map_err(io_err(root))?.is_dir();
    let ignore = if is_dir {
        let mut ignore = default_ignore(root, Some(signature_path));
        for p in v.ignore_paths() {
            if !ignore.contains(&p) {
                ignore.push(p);
            }
        }
        ignore
    } else {
        Vec::new()
    };
    let local = read_manifest(root, v.method, &ignore, Some(&v))?;
    v.check_files(&local)?;
    Ok(v)
}

/// The trainer's signature to check before a deploy: the bundle's path and what is trusted.
#[derive(Debug, Clone, Default)]
pub struct ModelSignature {
    /// The bundle (`model.sig`).
    pub path: PathBuf,
    /// The trusted trainer keys and roots.
    pub trust: Trust,
}

/// The model's digest for the decision `envelope` (its bytes, as read once for verification)
/// and, when asked, the trainer's signature checked against the same folder (the folder is
/// read once when the two leave out the same paths).
pub fn identify(
    model: &Path,
    envelope: &[u8],
    signature: Option<&ModelSignature>,
) -> Result<ModelIdentity, ModelError> {
    let scheme = decision_scheme(envelope);
    let oms_scheme = match scheme.as_deref() {
        None => false,
        Some(crate::attest::OMS_FILES_SCHEME) => true,
        Some(other) => return Err(ModelError::UnknownScheme(other.to_owned())),
    };
    let Some(sig) = signature else {
        let digest = if oms_scheme {
            oms_digest(model, Method::Files)?
        } else {
            crate::native::files::model_digest(model).map_err(|e| ModelError::Files(Box::new(e)))?
        };
        return Ok(ModelIdentity {
            digest,
            scheme,
            trainer: None,
        });
    };
    let bytes = read_bundle(&sig.path)?;
    let v = oms::verify_bundle(&bytes, &sig.trust)?;
    let is_dir = fs::symlink_metadata(model).map_err(io_err(model))?.is_dir();
    let (trainer_ignore, decision_ignore) = if is_dir {
        let mut ignore = default_ignore(model, Some(&sig.path));
        for p in v.ignore_paths() {
            if !ignore.contains(&p) {
                ignore.push(p);
            }
        }
        let decision = if oms_scheme {
            default_ignore(model, Some(&model.join(oms::SIGNATURE_FILE)))
        } else {
            // The original scheme covers every file.
            Vec::new()
        };
        (ignore, decision)
    } else {
        (Vec::new(), Vec::new())
    };
    // One walk, each file read once, for both digests: a folder swapped between two walks
    // could otherwise pass the trainer's check with one content and the decision's with
    // another. The walk leaves out only what both leave out.
    let walk_ignore: Vec<String> = trainer_ignore
        .iter()
        .filter(|p| decision_ignore.contains(p))
        .cloned()
        .collect();
    let (files, dirs) = list(model, &walk_ignore)?;
    let for_trainer = |f: &&Listed| !is_ignored(&f.rel, &trainer_ignore);
    v.check_listing(files.iter().filter(for_trainer).map(|f| (f.rel.as_str(), f.len)))?;
    let shard_size = match v.method {
        Method::Files => None,
        Method::Shards { shard_size } => Some(shard_size),
    };
    let hashes = hash_files(&files, shard_size)?;
    for d in &dirs {
        d.unchanged()?;
    }
    let both = || files.iter().zip(&hashes).map(|(f, h)| (f.rel.as_str(), h));
    v.check_files(&manifest_of_digests(
        v.method,
        both().filter(|(p, _)| !is_ignored(p, &trainer_ignore)),
    ))?;
    let digest = if oms_scheme {
        let mine = both().filter(|(p, _)| !is_ignored(p, &decision_ignore));
        manifest_of_digests(Method::Files, mine).digest_hex()
    } else {
        original_digest(both().map(|(p, h)| (p, &h.sha256)))
    };
    Ok(ModelIdentity {
        digest,
        scheme,
        trainer: Some(v),
    })
}

/// Each listed file read once, from start to end (one file per job, the largest first), into
/// its sha256 and, with `shard_size`, the sha256 of each of its shards.
fn hash_files(files: &[Listed], shard_size: Option<u64>) -> Result<Vec<FileDigests>, ModelError> {
    let mut order: Vec<usize> = (0..files.len()).collect();
    order.sort_by_key(|&i| std::cmp::Reverse(files[i].len));
    let mut out = parallel(order.len(), threads(), |k, buf, stop| {
        let f = &files[order[k]];
        let file = open_listed(f)?;
        let mut whole = Sha256::new();
        let mut shards = Vec::new();
        let mut shard = Sha256::new();
        let mut at = 0u64;
        while at < f.len {
            if stop.load(Ordering::Relaxed) {
                return Err(cancelled(f));
            }
            let mut want = ((f.len - at) as usize).min(buf.len());
            if let Some(size) = shard_size {
                let shard_end = (at / size + 1) * size;
                want = want.min((shard_end - at) as usize);
            }
            let n = file.read_at(&mut buf[..want], at).map_err(io_err(&f.path))?;
            if n == 0 {
                return Err(ModelError::Changed { path: f.path.clone() });
            }
            whole.update(&buf[..n]);
            at += n as u64;
            if let Some(size) = shard_size {
                shard.update(&buf[..n]);
                if at.is_multiple_of(size) || at == f.len {
                    shards.push(std::mem::take(&mut shard).finalize().into());
                }
            }
        }
        // The file must end where the listing said.
        let mut one = [0u8; 1];
        if file.read_at(&mut one, f.len).map_err(io_err(&f.path))? != 0 {
            return Err(ModelError::Changed { path: f.path.clone() });
        }
        Ok((
            order[k],
            FileDigests {
                size: f.len,
                sha256: whole.finalize().into(),
                shards,
            },
        ))
    })?;
    // Back in the listing's order.
    out.sort_by_key(|(i, _)| *i);
    Ok(out.into_iter().map(|(_, h)| h).collect())
}

/// The most bytes of a `model.sig` read (see [`oms::bundle::MAX_BUNDLE_BYTES`]).
pub fn read_bundle(path: &Path) -> Result<Vec<u8>, ModelError> {
    use crate::native::files::FilesError;
    let (_, bytes) = crate::native::files::read_regular(path, "model signature", oms::bundle::MAX_BUNDLE_BYTES)
        .map_err(|e| match e {
            // Too large is the bundle's shape (exit 2, named), as a bundle over the limit in
            // memory is.
            FilesError::TooLarge { .. } | FilesError::Grew { .. } => ModelError::Check(OmsError {
                check: Check::BundleShape,
                detail: e.to_string(),
                file: None,
            }),
            e => ModelError::Files(Box::new(e)),
        })?;
    Ok(bytes)
}
