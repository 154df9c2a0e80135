//! The response cache of a run: one file per answer, named by its key (the SHA-256 of what
//! identifies the request, never a secret: `crate::endpoint::Endpoint::cache_key`), in
//! `DIR/ab/abcdef…`. An entry is written whole (a temporary file beside it, then a rename),
//! and carries the SHA-256 of its content: one a crash left torn is ignored and asked again.
//! Two runs may share a folder: the rename is atomic, and two runs that ask the same question
//! at once both write the same answer.

use sha2::{Digest, Sha256};
use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

const MAGIC: &str = "deploy-gate-cache v1";

/// What a cache entry holds.
#[derive(Debug, Clone, PartialEq)]
pub struct Entry {
    /// The call's latency when it was made, in milliseconds.
    pub latency_ms: f64,
    /// Tries it took.
    pub attempts: u32,
    /// The answer's body (an HTTP response body; a worker's answer line).
    pub body: Vec<u8>,
}

/// A cache folder.
#[derive(Debug, Clone)]
pub struct Cache {
    dir: PathBuf,
}

static TEMPS: AtomicU64 = AtomicU64::new(0);

impl Cache {
    /// The cache in `dir`, created if missing.
    pub fn open(dir: &Path) -> anyhow::Result<Cache> {
        fs::create_dir_all(dir)
            .map_err(|e| anyhow::anyhow!("cannot create the cache folder {}: {e}", dir.display()))?;
        let meta = fs::symlink_metadata(dir)?;
        if !meta.is_dir() {
            anyhow::bail!("the cache {} is not a folder", dir.display());
        }
        Ok(Cache { dir: dir.to_path_buf() })
    }

    fn path(&self, key: &str) -> PathBuf {
        self.dir.join(&key[..2]).join(key)
    }

    /// The entry of `key`; `None` when there is none, or it is torn or unreadable (then it is
    /// asked again and rewritten).
    pub fn get(&self, key: &str) -> Option<Entry> {
        let path = self.path(key);
        // Neither the entry nor its folder may be a link: what it points at is not the cache's.
        let regular = |p: &Path| fs::symlink_metadata(p).is_ok_and(|m| !m.file_type().is_symlink());
        if !regular(path.parent()?) || !regular(&path) {
            return None;
        }
        let bytes = fs::read(&path).ok()?;
        decode(&bytes)
    }

    /// Stores an entry; a failure (a full disk) only costs a later run a call, so it is
    /// reported by the caller as a note, never fatal.
    pub fn put(&self, key: &str, entry: &Entry) -> std::io::Result<()> {
        let path = self.path(key);
        let dir = path.parent().expect("a file in a folder");
        match fs::symlink_metadata(dir) {
            Ok(meta) if meta.is_dir() => {}
            Ok(_) => {
                return Err(std::io::Error::other(format!(
                    "{} is not a folder (a link planted in the cache?): the answer is not cached",
                    dir.display()
                )))
            }
            Err(_) => fs::create_dir(dir).or_else(|e| {
                // Made by another run just now.
                if e.kind() == std::io::ErrorKind::AlreadyExists && fs::symlink_metadata(dir).is_ok_and(|m| m.is_dir())
                {
                    Ok(())
                } else {
                    Err(e)
                }
            })?,
        }
        let temp = dir.join(format!(
            ".{key}.tmp-{}-{}",
            std::process::id(),
            TEMPS.fetch_add(1, Ordering::Relaxed)
        ));
        let result = (|| {
            let mut file = fs::OpenOptions::new().write(true).create_new(true).open(&temp)?;
            file.write_all(&encode(entry))?;
            file.sync_data()?;
            fs::rename(&temp, &path)
        })();
        if result.is_err() {
            let _ = fs::remove_file(&temp);
        }
        result
    }
}

/// `MAGIC <sha256 of the rest>\n{"latency_ms":…,"attempts":…}\n<body>`.
fn encode(entry: &Entry) -> Vec<u8> {
    let mut rest = format!(
        "{{\"latency_ms\":{},\"attempts\":{}}}\n",
        serde_json::Number::from_f64(entry.latency_ms).map_or("0".to_owned(), |n| n.to_string()),
        entry.attempts
    )
    .into_bytes();
    rest.extend_from_slice(&entry.body);
    let mut out = format!("{MAGIC} {}\n", hex::encode(Sha256::digest(&rest))).into_bytes();
    out.extend_from_slice(&rest);
    out
}

fn decode(bytes: &[u8]) -> Option<Entry> {
    let nl = bytes.iter().position(|&b| b == b'\n')?;
    let head = std::str::from_utf8(&bytes[..nl]).ok()?;
    let sum = head.strip_prefix(MAGIC)?.strip_prefix(' ')?;
    let rest = &bytes[nl + 1..];
    if hex::encode(Sha256::digest(rest)) != sum {
        return None;
    }
    let nl = rest.iter().position(|&b| b == b'\n')?;
    let meta: serde_json::Value = serde_json::from_slice(&rest[..nl]).ok()?;
    Some(Entry {
        latency_ms: meta.get("latency_ms")?.as_f64()?,
        attempts: u32::try_from(meta.get("attempts")?.as_u64()?).ok()?,
        body: rest[nl + 1..].to_vec(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn entries_round_trip_and_torn_ones_are_ignored() {
        let dir = tempfile::tempdir().unwrap();
        let cache = Cache::open(dir.path()).unwrap();
        let key = "ab".repeat(32);
        assert_eq!(cache.get(&key), None);
        let entry = Entry {
            latency_ms: 12.5,
            attempts: 2,
            body: b"{\"choices\":[]}".to_vec(),
        };
        cache.put(&key, &entry).unwrap();
        assert_eq!(cache.get(&key), Some(entry.clone()));
        // Torn: cut short, or a byte changed.
        let path = cache.path(&key);
        let bytes = fs::read(&path).unwrap();
        fs::write(&path, &bytes[..bytes.len() - 3]).unwrap();
        assert_eq!(cache.get(&key), None);
        let mut changed = bytes.clone();
        *changed.last_mut().unwrap() ^= 1;
        fs::write(&path, &changed).unwrap();
        assert_eq!(cache.get(&key), None);
        // Rewritten whole.
        cache.put(&key, &entry).unwrap();
        assert_eq!(cache.get(&key), Some(entry));
    }
}
