//! The model digest `sign`, `verify` and `apply` name a model by: sha256 of a file, or of a
//! directory's sorted `"<relative path>\0<sha256>\n"` lines ([`crate::attest::directory_digest`]).

use crate::attest::directory_digest;
use anyhow::{anyhow, bail, Context, Result};
use std::fs;
use std::path::Path;

fn file_sha256(path: &Path) -> Result<String> {
    Ok(crate::native::hash_file(path)?)
}

/// The model digest of a file, or of a directory (every regular file below it).
pub fn model_digest(path: &Path) -> Result<String> {
    let meta = fs::metadata(path).with_context(|| format!("model path {} does not exist", path.display()))?;
    if meta.is_file() {
        return file_sha256(path);
    }
    let mut files = Vec::new();
    let mut stack = vec![path.to_path_buf()];
    while let Some(dir) = stack.pop() {
        for entry in fs::read_dir(&dir).with_context(|| format!("cannot list {}", dir.display()))? {
            let p = entry?.path();
            let m = fs::metadata(&p).with_context(|| format!("cannot read {}", p.display()))?;
            if m.is_dir() {
                stack.push(p);
            } else if m.is_file() {
                let rel = p.strip_prefix(path).expect("below the root");
                // The digest names files by their UTF-8 paths: two names that differ only in
                // bytes that are not UTF-8 would read alike, so such a name is refused.
                let rel = rel
                    .components()
                    .map(|c| {
                        c.as_os_str().to_str().map(str::to_owned).ok_or_else(|| {
                            anyhow!(
                                "{}: a file name in the model directory is not UTF-8 ({:?}); the model digest needs UTF-8 names",
                                path.display(),
                                p
                            )
                        })
                    })
                    .collect::<Result<Vec<_>>>()?
                    .join("/");
                files.push((rel, file_sha256(&p)?));
            } else {
                bail!("{} is neither a file nor a directory", p.display());
            }
        }
    }
    Ok(directory_digest(&files))
}
