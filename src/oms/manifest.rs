//! The OMS manifest: one resource per file (`files`) or per byte range of a file (`shards`), and
//! the subject digest over it.
//!
//! The order is the reference implementation's (`model-signing` 1.1.1): files by their path's
//! components (`"a/b"` before `"a.b"`, because `"a"` < `"a.b"`), shards by path components, then
//! start and end as numbers (`f:3:6` before `f:12:15`). The subject digest is sha256 over the
//! concatenated raw 32-byte digests in that order. An empty file is one resource in `files` and
//! none in `shards`; a single-file model is one resource named `"."`.

use sha2::{Digest as _, Sha256};
use std::cmp::Ordering;
use std::fmt;

/// How the files were cut into resources (`predicate.serialization.method`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Method {
    /// One resource per file, the sha256 of its bytes.
    Files,
    /// One resource per `shard_size` bytes of each file (the last one shorter; none for an
    /// empty file).
    Shards {
        /// The bytes per shard (> 0).
        shard_size: u64,
    },
}

impl Method {
    /// `files` or `shards`.
    pub fn name(self) -> &'static str {
        match self {
            Method::Files => "files",
            Method::Shards { .. } => "shards",
        }
    }

    /// The resource `algorithm` the reference implementation writes: `sha256`, or
    /// `sha256-sharded-<shard_size>`.
    pub fn algorithm(self) -> String {
        match self {
            Method::Files => "sha256".to_owned(),
            Method::Shards { shard_size } => format!("sha256-sharded-{shard_size}"),
        }
    }
}

impl fmt::Display for Method {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Method::Files => f.write_str("files"),
            Method::Shards { shard_size } => write!(f, "shards (shard_size {shard_size})"),
        }
    }
}

/// One resource of a manifest: a file, or a byte range `[start, end)` of one.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Resource {
    /// The file's path relative to the model root, `/`-separated (`"."` for a single-file model).
    pub path: String,
    /// The byte range, for `shards`.
    pub range: Option<(u64, u64)>,
    /// sha256 of the file or range.
    pub digest: [u8; 32],
}

impl Resource {
    /// A whole file.
    pub fn file(path: impl Into<String>, digest: [u8; 32]) -> Resource {
        Resource {
            path: path.into(),
            range: None,
            digest,
        }
    }

    /// A byte range `[start, end)` of a file.
    pub fn shard(path: impl Into<String>, start: u64, end: u64, digest: [u8; 32]) -> Resource {
        Resource {
            path: path.into(),
            range: Some((start, end)),
            digest,
        }
    }

    /// The resource's `name` in the predicate: the path, or `path:start:end`.
    pub fn name(&self) -> String {
        match self.range {
            None => self.path.clone(),
            Some((s, e)) => format!("{}:{s}:{e}", self.path),
        }
    }

    /// The digest as lowercase hex.
    pub fn digest_hex(&self) -> String {
        hex::encode(self.digest)
    }

    /// The reference implementation's order (see the module documentation).
    pub fn canonical_cmp(&self, other: &Resource) -> Ordering {
        self.path
            .split('/')
            .cmp(other.path.split('/'))
            .then_with(|| self.range.cmp(&other.range))
    }
}

/// The byte ranges `shards` cuts a file of `size` bytes into: `[0, s)`, `[s, 2s)`, …, the last
/// ending at `size`; none for an empty file.
pub fn shard_ranges(size: u64, shard_size: u64) -> impl Iterator<Item = (u64, u64)> {
    assert!(shard_size > 0, "a shard size is positive");
    let count = size.div_ceil(shard_size);
    (0..count).map(move |i| {
        let start = i * shard_size;
        (start, (start + shard_size).min(size))
    })
}

/// A model's manifest: its resources in canonical order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Manifest {
    /// How the resources were cut.
    pub method: Method,
    /// The resources, sorted by [`Resource::canonical_cmp`].
    pub resources: Vec<Resource>,
}

impl Manifest {
    /// A manifest of these resources (sorted here).
    pub fn new(method: Method, mut resources: Vec<Resource>) -> Manifest {
        resources.sort_by(Resource::canonical_cmp);
        Manifest { method, resources }
    }

    /// The `files` manifest of in-memory files (relative `/`-separated path, bytes).
    pub fn files_from_bytes<'a>(files: impl IntoIterator<Item = (&'a str, &'a [u8])>) -> Manifest {
        let resources = files
            .into_iter()
            .map(|(path, bytes)| Resource::file(path, Sha256::digest(bytes).into()))
            .collect();
        Manifest::new(Method::Files, resources)
    }

    /// The `shards` manifest of in-memory files.
    pub fn shards_from_bytes<'a>(files: impl IntoIterator<Item = (&'a str, &'a [u8])>, shard_size: u64) -> Manifest {
        let mut resources = Vec::new();
        for (path, bytes) in files {
            for (s, e) in shard_ranges(bytes.len() as u64, shard_size) {
                let digest = Sha256::digest(&bytes[s as usize..e as usize]).into();
                resources.push(Resource::shard(path, s, e, digest));
            }
        }
        Manifest::new(Method::Shards { shard_size }, resources)
    }

    /// The subject digest: sha256 over the resources' raw digests in canonical order.
    pub fn digest(&self) -> [u8; 32] {
        digest_of(&self.resources)
    }

    /// [`Manifest::digest`] as lowercase hex.
    pub fn digest_hex(&self) -> String {
        hex::encode(self.digest())
    }
}

/// sha256 over the raw digests of these resources, in the order given.
pub fn digest_of(resources: &[Resource]) -> [u8; 32] {
    let mut h = Sha256::new();
    for r in resources {
        h.update(r.digest);
    }
    h.finalize().into()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn order_is_by_path_components_then_numeric_range() {
        let m = Manifest::new(
            Method::Files,
            vec![
                Resource::file("a.b", [0; 32]),
                Resource::file("a/b", [1; 32]),
                Resource::file("a-b", [2; 32]),
            ],
        );
        let names: Vec<_> = m.resources.iter().map(Resource::name).collect();
        assert_eq!(names, ["a/b", "a-b", "a.b"]);
        let m = Manifest::new(
            Method::Shards { shard_size: 3 },
            vec![
                Resource::shard("f", 12, 15, [0; 32]),
                Resource::shard("f", 3, 6, [0; 32]),
                Resource::shard("f", 0, 3, [0; 32]),
            ],
        );
        let names: Vec<_> = m.resources.iter().map(Resource::name).collect();
        assert_eq!(names, ["f:0:3", "f:3:6", "f:12:15"]);
    }

    #[test]
    fn ranges() {
        assert_eq!(shard_ranges(0, 3).count(), 0);
        assert_eq!(shard_ranges(5, 3).collect::<Vec<_>>(), [(0, 3), (3, 5)]);
        assert_eq!(shard_ranges(6, 3).collect::<Vec<_>>(), [(0, 3), (3, 6)]);
        assert_eq!(shard_ranges(u64::MAX, u64::MAX).collect::<Vec<_>>(), [(0, u64::MAX)]);
    }

    // Known answers from `model-signing` 1.1.1 (`model_signing sign key`) on a folder holding
    // `a.bin` = "hello", an empty `empty` and `sub/é x.txt` = "xyz", and on the file "abcdefghij".
    #[test]
    fn reference_digests() {
        let files: [(&str, &[u8]); 3] = [("sub/é x.txt", b"xyz"), ("empty", b""), ("a.bin", b"hello")];
        assert_eq!(
            Manifest::files_from_bytes(files).digest_hex(),
            "00edfc2db9491845085709b4401fdf92cae3abd3a08ab33bb7616f8efe7a0059"
        );
        assert_eq!(
            Manifest::files_from_bytes([(".", &b"abcdefghij"[..])]).digest_hex(),
            "27635cf23fdf8a10f4cb2c52ade13038c38718c6d7ca716bfe726111a57ad201"
        );
        assert_eq!(Manifest::shards_from_bytes(files, 3).resources.len(), 3);
    }
}
