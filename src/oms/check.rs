//! The model check every shell maps: the trainer's bundle verified once, the model's files
//! given by their digests (hashed by the shell: a native walk, a browser worker, bytes in
//! memory), the files compared with the signed resources, and whether the signature names the
//! same model as a signed decision (the same-model rule).
//!
//! Sans-IO: the shells read and hash the files; this module only keeps and compares digests.

use super::{shard_ranges, Check, Manifest, Method, OmsError, Resource, SignedBy, Trust, Verified};
use serde::Serialize;
use std::collections::HashSet;

/// One file's digests: its size, the whole file's sha256 and, when cut into shards, each
/// shard's sha256 in order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileDigests {
    /// The file's size in bytes.
    pub size: u64,
    /// sha256 of the whole file.
    pub sha256: [u8; 32],
    /// sha256 of each shard, for the `shards` method (empty for `files`).
    pub shards: Vec<[u8; 32]>,
}

/// Whether `path` (relative, `/`-separated) is left out by `ignore`: a listed path, or anything
/// below one (whole components only). `"."`, a single-file model, is never left out.
pub fn is_ignored(path: &str, ignore: &[String]) -> bool {
    path != "."
        && ignore.iter().any(|p| {
            path == p || (path.len() > p.len() && path.starts_with(p.as_str()) && path.as_bytes()[p.len()] == b'/')
        })
}

/// The manifest of files given by their digests, read by `method` (each file's shards in
/// order of their ranges).
pub fn manifest_of_digests<'a>(
    method: Method,
    files: impl IntoIterator<Item = (&'a str, &'a FileDigests)>,
) -> Manifest {
    let mut resources = Vec::new();
    for (path, d) in files {
        match method {
            Method::Files => resources.push(Resource::file(path, d.sha256)),
            Method::Shards { shard_size } => {
                for ((s, e), digest) in shard_ranges(d.size, shard_size).zip(&d.shards) {
                    resources.push(Resource::shard(path, s, e, *digest));
                }
            }
        }
    }
    Manifest::new(method, resources)
}

/// The model's digest by the original scheme (hex): a single-file model (one file named `"."`)
/// is its sha256, a folder the directory digest over every file
/// ([`crate::attest::directory_digest`]).
pub fn original_digest<'a>(files: impl IntoIterator<Item = (&'a str, &'a [u8; 32])>) -> String {
    let all: Vec<(String, String)> = files.into_iter().map(|(p, d)| (p.to_owned(), hex::encode(d))).collect();
    if all.len() == 1 && all[0].0 == "." {
        return all[0].1.clone();
    }
    crate::attest::directory_digest(&all)
}

/// Why a file could not be given to a [`ModelCheck`] (the shell's mistake, not the model's).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum InputError {
    /// The check was finished.
    #[error("the check is finished")]
    Finished,
    /// The path is not relative to the model root as OMS names files.
    #[error(
        "`{0}` is not a path relative to the model root (`/`-separated, no `.` or `..`, no leading or trailing `/`)"
    )]
    NotRelative(String),
    /// The same path was given twice.
    #[error("`{0}` was given twice")]
    Twice(String),
    /// Not as many shard digests as the file's size has shards.
    #[error("`{path}`: {given} shard digests given, a file of {size} bytes has {want} shards of {shard_size} bytes")]
    ShardCount {
        /// The file.
        path: String,
        /// The digests given.
        given: usize,
        /// The file's size.
        size: u64,
        /// The shards of that size.
        want: u64,
        /// The signature's shard size.
        shard_size: u64,
    },
}

/// A file path as OMS names files: relative, `/`-separated, no empty, `.` or `..` component
/// (or `"."` alone, a single-file model).
pub fn check_path(path: &str) -> Result<(), InputError> {
    if path == "." {
        return Ok(());
    }
    if path.is_empty() || path.split('/').any(|c| c.is_empty() || c == "." || c == "..") {
        return Err(InputError::NotRelative(path.to_owned()));
    }
    Ok(())
}

/// How a signed decision names its model: its subject digest (hex) and the subject's
/// `digest_scheme` annotation (`None`: the original directory digest).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DecisionModel {
    /// The subject digest, lowercase hex.
    pub digest: String,
    /// The digest scheme (`None`: the original one).
    pub scheme: Option<String>,
}

/// The trainer's signature over a model, checked file by file: made from the bundle (verified
/// at once), it takes every file of the folder (the ignored paths too, each exactly once) by
/// its digests, then [`ModelCheck::finish`] compares them with the signed resources.
#[derive(Debug, Clone)]
pub struct ModelCheck {
    bundle_sha256: [u8; 32],
    verified: Result<Verified, OmsError>,
    decision: Option<DecisionModel>,
    ignore: Vec<String>,
    files: Vec<(String, FileDigests)>,
    seen: HashSet<String>,
    finished: bool,
}

impl ModelCheck {
    /// Verifies `bundle` (`model.sig`'s bytes) against `trust`; a bundle that fails is kept as
    /// the outcome's failure. `decision`: the signed decision to compare the model with.
    pub fn new(bundle: &[u8], trust: &Trust, decision: Option<DecisionModel>) -> ModelCheck {
        let verified = if bundle.len() > super::bundle::MAX_BUNDLE_BYTES {
            Err(OmsError::new(
                Check::BundleShape,
                format!(
                    "the bundle is {} bytes, more than the {} MiB a model signature may be",
                    bundle.len(),
                    super::bundle::MAX_BUNDLE_BYTES >> 20
                ),
            ))
        } else {
            super::verify_bundle(bundle, trust)
        };
        let ignore = verified.as_ref().map(Verified::ignore_paths).unwrap_or_default();
        use sha2::Digest as _;
        ModelCheck {
            bundle_sha256: sha2::Sha256::digest(bundle).into(),
            verified,
            decision,
            ignore,
            files: Vec::new(),
            seen: HashSet::new(),
            finished: false,
        }
    }

    /// The bundle's verification.
    pub fn verified(&self) -> Result<&Verified, &OmsError> {
        self.verified.as_ref()
    }

    /// The shard size the files are hashed with (0: the `files` method, or no valid bundle).
    pub fn shard_size(&self) -> u64 {
        match &self.verified {
            Ok(Verified {
                method: Method::Shards { shard_size },
                ..
            }) => *shard_size,
            _ => 0,
        }
    }

    /// Whether [`ModelCheck::finish`] was called.
    pub fn is_finished(&self) -> bool {
        self.finished
    }

    /// Whether the signature leaves this path out (OMS's defaults and the signed
    /// `ignore_paths`). An ignored file is still given (the original directory digest counts
    /// it) but not compared; nor is a `model.sig` at the model root whose bytes are the
    /// bundle's (the signature itself, left out as `deploy-gate verify` leaves it out).
    pub fn ignored(&self, path: &str) -> bool {
        is_ignored(path, &self.ignore)
    }

    /// Begins a file whose digests come later ([`ModelCheck::end_file`]): the check must be
    /// open, the path relative and not given before.
    pub fn begin_file(&mut self, path: &str) -> Result<(), InputError> {
        if self.finished {
            return Err(InputError::Finished);
        }
        check_path(path)?;
        if !self.seen.insert(path.to_owned()) {
            return Err(InputError::Twice(path.to_owned()));
        }
        Ok(())
    }

    /// The digests of a file begun with [`ModelCheck::begin_file`].
    pub fn end_file(&mut self, path: String, digests: FileDigests) {
        self.files.push((path, digests));
    }

    /// A file hashed elsewhere: its shard digests must be as many as its size has shards.
    pub fn add_file(&mut self, path: &str, digests: FileDigests) -> Result<(), InputError> {
        if self.finished {
            return Err(InputError::Finished);
        }
        let shard_size = self.shard_size();
        if shard_size > 0 && digests.shards.len() as u64 != digests.size.div_ceil(shard_size) {
            return Err(InputError::ShardCount {
                path: path.to_owned(),
                given: digests.shards.len(),
                size: digests.size,
                want: digests.size.div_ceil(shard_size),
                shard_size,
            });
        }
        self.begin_file(path)?;
        self.end_file(path.to_owned(), digests);
        Ok(())
    }

    /// Compares the files given with the signed resources (the check takes no more files).
    pub fn finish(&mut self) -> Outcome {
        self.finished = true;
        self.outcome()
    }

    /// Not compared: an ignored path, or the signature file itself.
    fn left_out(&self, path: &str, d: &FileDigests) -> bool {
        self.ignored(path) || (path == super::SIGNATURE_FILE && d.sha256 == self.bundle_sha256)
    }

    fn compared(&self) -> impl Iterator<Item = (&str, &FileDigests)> {
        self.files
            .iter()
            .filter(|(p, d)| !self.left_out(p, d))
            .map(|(p, d)| (p.as_str(), d))
    }

    /// The result so far: the bundle's verification (and the decision's model, compared by the
    /// digest or the signed resources); once finished, with the files.
    pub fn outcome(&self) -> Outcome {
        let v = match &self.verified {
            Ok(v) => v,
            Err(e) => {
                return Outcome {
                    valid: false,
                    failure: Some(Failure::of(e)),
                    signature: None,
                    files: None,
                    same_model: self.decision.as_ref().map(|_| SameModel {
                        same: None,
                        by: None,
                        detail: "the trainer's signature did not verify".into(),
                    }),
                };
            }
        };
        let mut failure = None;
        let files = self.finished.then(|| {
            let checked = self.compared().count();
            let matched = v.check_files(&manifest_of_digests(v.method, self.compared()));
            if let Err(e) = &matched {
                failure = Some(Failure::of(e));
            }
            FilesChecked {
                given: self.files.len(),
                checked,
                ignored: self.files.len() - checked,
                all_match: matched.is_ok(),
            }
        });
        Outcome {
            valid: failure.is_none(),
            failure,
            signature: Some(Signature::of(v, &self.ignore)),
            files,
            same_model: self.decision.as_ref().map(|d| self.same_model(v, d)),
        }
    }

    /// The same-model rule: whether `v` names the decision's model.
    fn same_model(&self, v: &Verified, decision: &DecisionModel) -> SameModel {
        let digest = decision.digest.as_str();
        let have_files = self.finished && !self.files.is_empty();
        match decision.scheme.as_deref() {
            Some(crate::attest::OMS_FILES_SCHEME) => {
                if v.method == Method::Files || v.subject_digest_hex() == digest {
                    return by_digest(v, digest);
                }
                // A `shards` signature: the decision's digest is the `files` digest, which the
                // files give.
                if !have_files {
                    return SameModel {
                        same: None,
                        by: None,
                        detail: "the trainer signed shards and the decision the files' OMS digest: choose the model folder to compare".into(),
                    };
                }
                let local = manifest_of_digests(Method::Files, self.compared()).digest_hex();
                by_files(local == digest, digest, "OMS files digest")
            }
            Some(other) => SameModel {
                same: None,
                by: None,
                detail: format!("the decision's digest is by the scheme `{other}`, which this build does not know"),
            },
            None if have_files => {
                let local = original_digest(self.files.iter().map(|(p, d)| (p.as_str(), &d.sha256)));
                by_files(local == digest, digest, "original directory digest")
            }
            None => {
                let listed = match v.method {
                    Method::Files => Some(original_digest(
                        v.resources.iter().map(|r| (r.path.as_str(), &r.digest)),
                    )),
                    Method::Shards { .. } => None,
                };
                if listed.as_deref() == Some(digest) {
                    SameModel {
                        same: Some(true),
                        by: Some("resources"),
                        detail: format!(
                            "the decision's digest sha256:{digest} is the original directory digest of the signed files"
                        ),
                    }
                } else {
                    SameModel {
                        same: None,
                        by: None,
                        detail: "the decision names the model by the original directory digest, which counts every file of the folder: choose the model folder to compare".into(),
                    }
                }
            }
        }
    }
}

/// The same-model rule when both name the model by the OMS `files` digest: the decision's
/// digest (hex) must be the trainer's subject digest.
pub fn by_digest(v: &Verified, digest: &str) -> SameModel {
    let same = v.subject_digest_hex() == digest;
    SameModel {
        same: Some(same),
        by: Some("digest"),
        detail: if same {
            format!("the decision and the trainer both name sha256:{digest}")
        } else {
            format!(
                "the decision names sha256:{digest}, the trainer's signature sha256:{}",
                v.subject_digest_hex()
            )
        },
    }
}

fn by_files(same: bool, digest: &str, what: &str) -> SameModel {
    SameModel {
        same: Some(same),
        by: Some("files"),
        detail: if same {
            format!("the files' {what} is the decision's sha256:{digest}")
        } else {
            format!("the files' {what} is not the decision's sha256:{digest}")
        },
    }
}

/// A model check's result, as every shell reports it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Outcome {
    /// The bundle verified and, when the check was finished, every file matched.
    pub valid: bool,
    /// The first failed check (`None` when valid).
    pub failure: Option<Failure>,
    /// The verified bundle (`None` when the bundle itself failed).
    pub signature: Option<Signature>,
    /// The files compared (`None` before the check is finished, or when the bundle failed).
    pub files: Option<FilesChecked>,
    /// `None` when no decision was given.
    pub same_model: Option<SameModel>,
}

/// A failed check, by name.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Failure {
    /// The check's name.
    pub check: Check,
    /// What was found.
    pub detail: String,
    /// The model file concerned.
    pub file: Option<String>,
    /// The whole message.
    pub message: String,
}

impl Failure {
    /// The failure of `e`.
    pub fn of(e: &OmsError) -> Failure {
        Failure {
            check: e.check,
            detail: e.detail.clone(),
            file: e.file.clone(),
            message: e.to_string(),
        }
    }
}

/// The files compared: how many were given, how many compared (the others are left out).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct FilesChecked {
    /// Files given.
    pub given: usize,
    /// Files compared.
    pub checked: usize,
    /// Files left out (ignored paths, the signature itself).
    pub ignored: usize,
    /// Every signed file matched.
    pub all_match: bool,
}

/// Whether the trainer's signature names the decision's model.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct SameModel {
    /// `None` when it cannot be told.
    pub same: Option<bool>,
    /// How it was told: `digest`, `files` or `resources`.
    pub by: Option<&'static str>,
    /// A sentence saying so.
    pub detail: String,
}

/// What a verified bundle says.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Signature {
    /// hex sha256 of the trainer's public key (SPKI DER).
    pub key_id: String,
    /// `model-signing`'s `publicKey.hint` for the same key.
    pub key_hint: String,
    /// `P-256` or `P-384`.
    pub curve: &'static str,
    /// Key or certificate.
    pub signed_by: SignedBy,
    /// The signed model name.
    pub model_name: String,
    /// `sha256:<hex>`.
    pub subject_digest: String,
    /// `files` or `shards`.
    pub method: &'static str,
    /// The shard size, for `shards`.
    pub shard_size: Option<u64>,
    /// The paths left out of the folder.
    pub ignore_paths: Vec<String>,
    /// One resource named `"."`: a single-file model.
    pub single_file: bool,
    /// The signed resources.
    pub resources: Vec<SignedResource>,
    /// sha256 (hex) of the DSSE payload.
    pub payload_sha256: String,
}

/// A signed resource: a file, or the byte range `start`..`end` of one.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct SignedResource {
    /// The resource's OMS name.
    pub name: String,
    /// The file's path.
    pub path: String,
    /// The range's start, for `shards`.
    pub start: Option<u64>,
    /// The range's end, for `shards`.
    pub end: Option<u64>,
    /// sha256, hex.
    pub digest: String,
}

impl Signature {
    /// The summary of `v`, with the paths left out.
    pub fn of(v: &Verified, ignore: &[String]) -> Signature {
        Signature {
            key_id: v.key_id.clone(),
            key_hint: v.key_hint.clone(),
            curve: v.curve,
            signed_by: v.signed_by.clone(),
            model_name: v.model_name.clone(),
            subject_digest: format!("sha256:{}", v.subject_digest_hex()),
            method: v.method.name(),
            shard_size: match v.method {
                Method::Shards { shard_size } => Some(shard_size),
                Method::Files => None,
            },
            ignore_paths: ignore.to_vec(),
            single_file: v.resources.len() == 1 && v.resources[0].path == ".",
            resources: v
                .resources
                .iter()
                .map(|r| SignedResource {
                    name: r.name(),
                    path: r.path.clone(),
                    start: r.range.map(|(s, _)| s),
                    end: r.range.map(|(_, e)| e),
                    digest: r.digest_hex(),
                })
                .collect(),
            payload_sha256: v.payload_sha256.clone(),
        }
    }
}
