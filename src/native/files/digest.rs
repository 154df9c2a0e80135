//! The model digest `sign`, `verify` and `apply` name a model by: sha256 of a file, or of a
//! directory's sorted `"<relative path>\0<sha256>\n"` lines ([`crate::attest::directory_digest`]).

use super::FilesError;
use crate::attest::directory_digest;
use std::fs;
use std::path::Path;

fn file_sha256(path: &Path) -> Result<String, FilesError> {
    Ok(crate::native::hash_file(path)?)
}

/// The model digest of a file, or of a directory (every regular file below it).
pub fn model_digest(path: &Path) -> Result<String, FilesError> {
    let meta = fs::metadata(path).map_err(|source| FilesError::ModelMissing {
        path: path.to_path_buf(),
        source,
    })?;
    if meta.is_file() {
        return file_sha256(path);
    }
    let mut files = Vec::new();
    let mut stack = vec![path.to_path_buf()];
    while let Some(dir) = stack.pop() {
        let cannot_list = || format!("cannot list {}", dir.display());
        for entry in fs::read_dir(&dir).map_err(FilesError::io(cannot_list()))? {
            let p = entry.map_err(FilesError::io(cannot_list()))?.path();
            let m = fs::metadata(&p).map_err(FilesError::io(format!("cannot read {}", p.display())))?;
            if m.is_dir() {
                stack.push(p);
            } else if m.is_file() {
                let rel = p.strip_prefix(path).expect("below the root");
                // The digest names files by their UTF-8 paths: two names that differ only in
                // bytes that are not UTF-8 would read alike, so such a name is refused.
                let rel = rel
                    .components()
                    .map(|c| {
                        c.as_os_str()
                            .to_str()
                            .map(str::to_owned)
                            .ok_or_else(|| FilesError::ModelNameNotUtf8 {
                                root: path.to_path_buf(),
                                path: p.clone(),
                            })
                    })
                    .collect::<Result<Vec<_>, _>>()?
                    .join("/");
                files.push((rel, file_sha256(&p)?));
            } else {
                return Err(FilesError::ModelNotFileOrDir(p));
            }
        }
    }
    Ok(directory_digest(&files))
}
