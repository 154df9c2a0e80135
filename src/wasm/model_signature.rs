//! The trainer's OpenSSF Model Signing signature (`model.sig`) for the page and JS embedders.
//!
//! `verifyModelSignature` verifies a bundle (and, when given, files held in memory) in one call.
//! A model folder of many gigabytes is checked without holding it: a `ModelCheck` verifies the
//! bundle, then takes the files one at a time — streamed through it (`addFile`, `update`,
//! `finishFile`), or hashed elsewhere, in as many workers as wanted, with a `ModelFileHasher`
//! each (`addFileDigests`) — and `finish` compares them with the signed resources.
//!
//! The result also says whether the signature names the same model as a signed decision (its
//! subject digest and `digest_scheme` annotation): by the OMS digest when the decision was
//! signed with it, else by the original directory digest over the files (or over the signed
//! resources, when they are all the folder holds).

use super::{into_error, to_js};
use crate::oms::{self, FileDigests, Trust, TrustedKey};
use serde::Deserialize;
use wasm_bindgen::prelude::*;

#[wasm_bindgen(typescript_custom_section)]
const OMS_TYPES: &'static str = r#"
/** The name of a failed model-signature check (`src/oms/mod.rs`), in the order they run. */
export type ModelSignatureCheckName = "bundle_shape" | "keyless" | "keyless_identity" | "certificate_chain" | "sct" | "tlog_inclusion" | "tlog_checkpoint" | "tlog_promise" | "tlog_body" | "timestamp" | "signature_count" | "certificate" | "untrusted_key" | "signature" | "statement_type" | "predicate_type" | "predicate" | "subject_digest" | "symlink" | "file_missing" | "file_extra" | "file_digest" | "model_identity";
/** How a signed decision names its model: its subject digest (`sha256:<hex>` or hex) and the
 * subject's `digest_scheme` annotation (null or absent: the original directory digest). */
export interface DecisionModel { model_digest: string; digest_scheme?: string | null; }
/** Options of `verifyModelSignature` and `new ModelCheck`. */
export interface ModelSignatureOptions {
  /** Trusted root certificates (PEM; several in one text are fine) for the certificate method. */
  trusted_roots?: string[];
  /** The signed decision to compare the model with. */
  decision?: DecisionModel;
  /** Trusted signers for the keyless Sigstore method, matched exactly (any one pair is enough). */
  trainer_identities?: { identity: string; issuer: string }[];
  /** The Sigstore trusted root (`trusted_root.json` or a ClientTrustConfig, as text) for the
   * keyless method; default: the public-good instance's root bundled with this build. */
  sigstore_root?: string;
}
/** A file held in memory: its path relative to the model root, `/`-separated (`"."` for a
 * single-file model), and its bytes. */
export interface ModelFileInput { path: string; bytes: Uint8Array; }
export interface ModelSignatureFailure { check: ModelSignatureCheckName; detail: string; file: string | null; message: string; }
/** A signed resource: a file, or (method `shards`) the byte range `start`..`end` of one. */
export interface ModelResource { name: string; path: string; start: number | null; end: number | null; digest: string; }
/** What a verified `model.sig` says. */
export interface TrainerSignature {
  /** hex sha256 of the trainer's public key (SPKI DER), as deploy-gate names keys. */
  key_id: string;
  /** model-signing's `publicKey.hint` for the same key. */
  key_hint: string;
  curve: "P-256" | "P-384";
  signed_by: { method: "key" } | { method: "certificate"; subject: string; root: string } | { method: "keyless"; identity: string; issuer: string; log_index: number | null; integrated_time: number | null };
  model_name: string;
  /** The OMS subject digest, `sha256:<hex>`. */
  subject_digest: string;
  method: "files" | "shards";
  shard_size: number | null;
  /** The paths left out of the folder: OMS's defaults and the signed ones (and `model.sig` at the root when it is this bundle). */
  ignore_paths: string[];
  /** One resource named "." : a single-file model. */
  single_file: boolean;
  resources: ModelResource[];
  payload_sha256: string;
}
/** The files compared: how many were given, how many compared (the others are ignored paths). */
export interface ModelFilesChecked { given: number; checked: number; ignored: number; all_match: boolean; }
/** Whether the trainer's signature names the decision's model: `same` null when it cannot be
 * told; `by` how it was told (the OMS digest, the files given, or the signed resources). */
export interface SameModel { same: boolean | null; by: "digest" | "files" | "resources" | null; detail: string; }
export interface ModelSignatureResult {
  /** The bundle verified and, when files were given, every file matched. */
  valid: boolean;
  /** The first failed check (null when valid). */
  failure: ModelSignatureFailure | null;
  /** The verified bundle (null when the bundle itself failed). */
  signature: TrainerSignature | null;
  /** null when no files were given (or the bundle failed). */
  files: ModelFilesChecked | null;
  /** null when no decision was given. */
  same_model: SameModel | null;
}
/** A file hashed by a `ModelFileHasher`. */
export interface ModelFileDigests { size: number; sha256: string; shards: string[]; }
/** A trusted trainer key or root certificates, as `trainerKeyInfo` reads them. */
export type TrainerKeyInfo = { kind: "key"; key_id: string; key_hint: string; curve: "P-256" | "P-384" } | { kind: "roots"; certificates: number; subjects: string[] };
"#;

/// The options, without the files.
#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields)]
struct Options {
    #[serde(default)]
    trusted_roots: Option<Vec<String>>,
    #[serde(default)]
    decision: Option<DecisionModel>,
    #[serde(default)]
    trainer_identities: Option<Vec<IdentityIn>>,
    #[serde(default)]
    sigstore_root: Option<String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct IdentityIn {
    identity: String,
    issuer: String,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct DecisionModel {
    model_digest: String,
    #[serde(default)]
    digest_scheme: Option<String>,
}

fn read_options(options: &JsValue) -> Result<Options, JsError> {
    if options.is_undefined() || options.is_null() {
        return Ok(Options::default());
    }
    let text = js_sys::JSON::stringify(options)
        .ok()
        .and_then(|s| s.as_string())
        .ok_or_else(|| into_error("options: not an object"))?;
    serde_json::from_str(&text).map_err(|e| into_error(format!("options: {e}")))
}

/// The bundle's bytes: a `Uint8Array` or its JSON text.
fn bundle_bytes(bundle: &JsValue) -> Result<Vec<u8>, JsError> {
    if let Some(text) = bundle.as_string() {
        return Ok(text.into_bytes());
    }
    if bundle.is_instance_of::<js_sys::Uint8Array>() {
        return Ok(js_sys::Uint8Array::new(bundle).to_vec());
    }
    Err(into_error("the model signature must be a Uint8Array or a string"))
}

fn trust(keys: &[String], options: &Options) -> Result<Trust, JsError> {
    use oms::keyless::{Identity, KeylessTrust, SigstoreRoot};
    let roots = options.trusted_roots.as_deref().unwrap_or_default();
    let mut trust = Trust::default();
    let identities = options.trainer_identities.as_deref().unwrap_or_default();
    if !identities.is_empty() {
        let root = match &options.sigstore_root {
            Some(text) => {
                SigstoreRoot::from_json(text.as_bytes()).map_err(|e| into_error(format!("sigstore_root: {e}")))?
            }
            None => SigstoreRoot::public_good(),
        };
        let identities = identities
            .iter()
            .map(|i| Identity {
                identity: i.identity.clone(),
                issuer: i.issuer.clone(),
            })
            .collect();
        trust.keyless = Some(KeylessTrust { identities, root });
    } else if options.sigstore_root.is_some() {
        return Err(into_error(
            "sigstore_root needs trainer_identities: whom the keyless signature must name",
        ));
    }
    for (i, pem) in keys.iter().enumerate() {
        let key = TrustedKey::from_pem(pem)
            .map_err(|e| into_error(format!("trusted trainer key {}: {}", i + 1, e.detail)))?;
        trust.keys.push(key);
    }
    for (i, pem) in roots.iter().enumerate() {
        trust
            .roots
            .add_pem(pem)
            .map_err(|e| into_error(format!("trusted root {}: {}", i + 1, e.detail)))?;
    }
    Ok(trust)
}

/// A streaming hash of one file: the whole and (with a shard size) each shard, in one pass.
struct Hasher {
    whole: sha2_simd::Sha256,
    shard_size: u64,
    at: u64,
    shard: Option<sha2_simd::Sha256>,
    shards: Vec<[u8; 32]>,
}

impl Hasher {
    fn new(shard_size: u64) -> Hasher {
        Hasher {
            whole: sha2_simd::Digest::new(),
            shard_size,
            at: 0,
            shard: None,
            shards: Vec::new(),
        }
    }

    fn update(&mut self, mut bytes: &[u8]) {
        use sha2_simd::Digest as _;
        self.whole.update(bytes);
        if self.shard_size == 0 {
            self.at += bytes.len() as u64;
            return;
        }
        while !bytes.is_empty() {
            let room = self.shard_size - self.at % self.shard_size;
            let n = (room.min(bytes.len() as u64)) as usize;
            self.shard
                .get_or_insert_with(sha2_simd::Sha256::new)
                .update(&bytes[..n]);
            self.at += n as u64;
            bytes = &bytes[n..];
            if self.at.is_multiple_of(self.shard_size) {
                let done = self.shard.take().expect("a shard was begun");
                self.shards.push(done.finalize().into());
            }
        }
    }

    fn finish(mut self) -> FileDigests {
        use sha2_simd::Digest as _;
        if let Some(last) = self.shard.take() {
            self.shards.push(last.finalize().into());
        }
        FileDigests {
            size: self.at,
            sha256: self.whole.finalize().into(),
            shards: self.shards,
        }
    }
}

/// Hashes one file of a model as a `shards` (or, with shard size 0, `files`) signature needs it,
/// in one pass: for a worker that hashes files while another holds the `ModelCheck`.
#[wasm_bindgen]
pub struct ModelFileHasher {
    inner: Hasher,
}

#[wasm_bindgen]
impl ModelFileHasher {
    /// A hasher; `shard_size`: the signature's (`TrainerSignature.shard_size`), 0 or null for
    /// the `files` method.
    #[wasm_bindgen(constructor)]
    pub fn new(shard_size: Option<f64>) -> Result<ModelFileHasher, JsError> {
        Ok(ModelFileHasher {
            inner: Hasher::new(shard_size_of(shard_size)?),
        })
    }

    /// Adds the file's next bytes.
    pub fn update(&mut self, bytes: &[u8]) {
        self.inner.update(bytes);
    }

    /// The file's size, sha256 and shard digests (hex); the hasher can be used no further.
    #[wasm_bindgen(unchecked_return_type = "ModelFileDigests")]
    pub fn finish(self) -> Result<JsValue, JsError> {
        let d = self.inner.finish();
        to_js(&serde_json::json!({
            "size": d.size,
            "sha256": hex::encode(d.sha256),
            "shards": d.shards.iter().map(hex::encode).collect::<Vec<_>>(),
        }))
    }
}

fn shard_size_of(n: Option<f64>) -> Result<u64, JsError> {
    match n {
        None => Ok(0),
        Some(n) if n >= 0.0 && n.fract() == 0.0 && n <= 9_007_199_254_740_991.0 => Ok(n as u64),
        Some(n) => Err(into_error(format!("a shard size is a whole number of bytes, not {n}"))),
    }
}

/// The trainer's signature over a model, checked file by file.
///
/// Made from the bundle (verified at once: `result()`), it takes the model's files — every file
/// of the folder, the ignored paths too, each exactly once — streamed (`addFile`, `update`,
/// `finishFile`) or as digests computed elsewhere (`addFileDigests`), then `finish` compares
/// them with the signed resources.
#[wasm_bindgen]
pub struct ModelCheck {
    inner: oms::ModelCheck,
    current: Option<(String, Hasher)>,
}

#[wasm_bindgen]
impl ModelCheck {
    /// Verifies `bundle` (`model.sig`: bytes or JSON text) against the trusted trainer keys
    /// (SPKI PEM, P-256 or P-384) and `options.trusted_roots`. A bundle that fails is a result
    /// (`result().failure`), not an exception; an unreadable key or option throws.
    #[wasm_bindgen(constructor)]
    pub fn new(
        #[wasm_bindgen(unchecked_param_type = "Uint8Array | string")] bundle: JsValue,
        trusted_keys: Vec<String>,
        #[wasm_bindgen(unchecked_optional_param_type = "ModelSignatureOptions")] options: Option<JsValue>,
    ) -> Result<ModelCheck, JsError> {
        let bytes = bundle_bytes(&bundle)?;
        let options = read_options(&options.unwrap_or(JsValue::UNDEFINED))?;
        let trust = trust(&trusted_keys, &options)?;
        let decision = match options.decision {
            None => None,
            Some(d) => Some(oms::DecisionModel {
                digest: crate::attest::parse_digest(&d.model_digest)
                    .map_err(|_| into_error(format!("decision: `{}` is not a sha256", d.model_digest)))?,
                scheme: d.digest_scheme.filter(|s| !s.is_empty()),
            }),
        };
        Ok(ModelCheck {
            inner: oms::ModelCheck::new(&bytes, &trust, decision),
            current: None,
        })
    }

    /// The result so far: the bundle's verification (and the decision's model, compared by the
    /// digest or the signed resources); after `finish`, with the files.
    #[wasm_bindgen(unchecked_return_type = "ModelSignatureResult")]
    pub fn result(&self) -> Result<JsValue, JsError> {
        to_js(&self.inner.outcome())
    }

    /// Whether the bundle verified (its files may still differ).
    #[wasm_bindgen(getter, js_name = bundleValid)]
    pub fn bundle_valid(&self) -> bool {
        self.inner.verified().is_ok()
    }

    /// The shard size the files are hashed with (0: the `files` method, or no valid bundle).
    #[wasm_bindgen(getter, js_name = shardSize)]
    pub fn shard_size(&self) -> f64 {
        self.inner.shard_size() as f64
    }

    /// Whether the signature leaves this path out (OMS's defaults and the signed
    /// `ignore_paths`, each at the model root with everything below it). An ignored file is
    /// still given (the original directory digest counts it) but not compared; nor is a
    /// `model.sig` at the model root whose bytes are the bundle's (the signature itself, left
    /// out as `deploy-gate verify` leaves out the signature file).
    pub fn ignored(&self, path: &str) -> bool {
        self.inner.ignored(path)
    }

    /// Begins a file streamed through this check (its bytes with `update`, then `finishFile`).
    #[wasm_bindgen(js_name = addFile)]
    pub fn add_file(&mut self, path: &str) -> Result<(), JsError> {
        if self.inner.is_finished() {
            return Err(into_error(oms::check::InputError::Finished));
        }
        if let Some((p, _)) = &self.current {
            return Err(into_error(format!("`{p}` is not finished (finishFile)")));
        }
        self.inner.begin_file(path).map_err(into_error)?;
        self.current = Some((path.to_owned(), Hasher::new(self.inner.shard_size())));
        Ok(())
    }

    /// The current file's next bytes.
    pub fn update(&mut self, bytes: &[u8]) -> Result<(), JsError> {
        match &mut self.current {
            Some((_, h)) => {
                h.update(bytes);
                Ok(())
            }
            None => Err(into_error("no file begun (addFile)")),
        }
    }

    /// Ends the current file.
    #[wasm_bindgen(js_name = finishFile)]
    pub fn finish_file(&mut self) -> Result<(), JsError> {
        let (path, h) = self
            .current
            .take()
            .ok_or_else(|| into_error("no file begun (addFile)"))?;
        self.inner.end_file(path, h.finish());
        Ok(())
    }

    /// A file hashed elsewhere (`ModelFileHasher.finish()`, or for the `files` method any sha256
    /// such as `Sha256Stream`'s): its size, sha256 (hex) and, for `shards`, its shards' sha256
    /// in order.
    #[wasm_bindgen(js_name = addFileDigests)]
    pub fn add_file_digests(
        &mut self,
        path: &str,
        size: f64,
        sha256: &str,
        shards: Option<Vec<String>>,
    ) -> Result<(), JsError> {
        if self.inner.is_finished() {
            return Err(into_error(oms::check::InputError::Finished));
        }
        let hex32 = |text: &str| -> Result<[u8; 32], JsError> {
            let h = crate::attest::parse_digest(text)
                .map_err(|_| into_error(format!("`{path}`: `{text}` is not a sha256")))?;
            let mut out = [0u8; 32];
            hex::decode_to_slice(h, &mut out).map_err(into_error)?;
            Ok(out)
        };
        let size = shard_size_of(Some(size))
            .map_err(|_| into_error(format!("`{path}`: the size {size} is not a byte count")))?;
        let digests = FileDigests {
            size,
            sha256: hex32(sha256)?,
            shards: shards
                .unwrap_or_default()
                .iter()
                .map(|s| hex32(s))
                .collect::<Result<_, _>>()?,
        };
        self.inner.add_file(path, digests).map_err(into_error)
    }

    /// Compares the files given with the signed resources: the result, `files` filled in (the
    /// check can take no more files).
    #[wasm_bindgen(unchecked_return_type = "ModelSignatureResult")]
    pub fn finish(&mut self) -> Result<JsValue, JsError> {
        if let Some((p, _)) = &self.current {
            return Err(into_error(format!("`{p}` is not finished (finishFile)")));
        }
        to_js(&self.inner.finish())
    }
}

/// Verifies a trainer's `model.sig` (OpenSSF Model Signing v1.0) against trusted trainer keys
/// (SPKI PEM, ECDSA P-256/P-384) and, with `options.trusted_roots`, the certificate method; with
/// `files`, the model's files held in memory are compared with the signed ones (a large folder:
/// `ModelCheck`). A failed check is a result (`valid: false`, `failure`), not an exception.
#[wasm_bindgen(js_name = verifyModelSignature, unchecked_return_type = "ModelSignatureResult")]
pub fn verify_model_signature(
    #[wasm_bindgen(unchecked_param_type = "Uint8Array | string")] bundle: JsValue,
    trusted_keys: Vec<String>,
    #[wasm_bindgen(unchecked_optional_param_type = "ModelFileInput[] | null")] files: Option<JsValue>,
    #[wasm_bindgen(unchecked_optional_param_type = "ModelSignatureOptions")] options: Option<JsValue>,
) -> Result<JsValue, JsError> {
    let mut check = ModelCheck::new(bundle, trusted_keys, options)?;
    let Some(files) = files.filter(|f| !f.is_null() && !f.is_undefined()) else {
        return check.result();
    };
    if !js_sys::Array::is_array(&files) {
        return Err(into_error("files: an array of {path, bytes}"));
    }
    for (i, f) in js_sys::Array::from(&files).iter().enumerate() {
        let get = |key: &str| js_sys::Reflect::get(&f, &JsValue::from_str(key)).unwrap_or(JsValue::UNDEFINED);
        let path = get("path")
            .as_string()
            .ok_or_else(|| into_error(format!("files[{i}]: no `path` string")))?;
        let bytes = get("bytes");
        let bytes = if let Some(text) = bytes.as_string() {
            text.into_bytes()
        } else if bytes.is_instance_of::<js_sys::Uint8Array>() {
            js_sys::Uint8Array::new(&bytes).to_vec()
        } else {
            return Err(into_error(format!(
                "files[{i}] (`{path}`): `bytes` is not a Uint8Array"
            )));
        };
        check.add_file(&path)?;
        check.update(&bytes)?;
        check.finish_file()?;
    }
    check.finish()
}

/// What a trusted trainer key's PEM holds: an ECDSA public key (its key id, model-signing's
/// hint and its curve) or root certificates (how many, and their subjects).
#[wasm_bindgen(js_name = trainerKeyInfo, unchecked_return_type = "TrainerKeyInfo")]
pub fn trainer_key_info(pem: &str) -> Result<JsValue, JsError> {
    if pem.contains("-----BEGIN CERTIFICATE-----") {
        let certs = x509_cert::Certificate::load_pem_chain(pem.as_bytes())
            .map_err(|e| into_error(format!("not PEM certificates: {e}")))?;
        let mut roots = oms::Roots::new();
        roots.add_pem(pem).map_err(|e| into_error(e.detail))?;
        let subjects: Vec<String> = certs.iter().map(|c| c.tbs_certificate.subject.to_string()).collect();
        return to_js(&serde_json::json!({"kind": "roots", "certificates": certs.len(), "subjects": subjects}));
    }
    let key = TrustedKey::from_pem(pem).map_err(|e| into_error(e.detail))?;
    to_js(&serde_json::json!({"kind": "key", "key_id": key.key_id, "key_hint": key.hint, "curve": key.curve()}))
}
