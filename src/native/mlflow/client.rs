//! A small client of MLflow's public REST API (the tracking server's `/api/2.0/mlflow/` and its
//! artifact proxy `/api/2.0/mlflow-artifacts/`): the calls `apply --mlflow` and `verify
//! --mlflow` make, over the crate's one HTTP client ([`crate::native::http`]).
//!
//! Credentials come from MLflow's own environment variables only: `MLFLOW_TRACKING_TOKEN`
//! (a bearer token), else `MLFLOW_TRACKING_USERNAME` and `MLFLOW_TRACKING_PASSWORD` (basic
//! auth). They are sent in a header and never put into a message: errors name the server by
//! its URL (which may not carry a user or password) and the call, and quote the server's own
//! error code and message. `MLFLOW_TRACKING_INSECURE_TLS=true` is refused unless the caller
//! allows it.

use crate::native::http::{self, ClientSettings};
use serde_json::{json, Value};
use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// The most of an error answer's body quoted.
const MAX_ERROR_TEXT: usize = 600;
/// The most of an error answer's body read.
const MAX_ERROR_BYTES: usize = 64 << 10;
/// The most of one JSON answer read (a version's tags included).
pub const MAX_JSON_BYTES: usize = 32 << 20;
/// The most pages of a search for a model's versions read (200 versions a page).
pub const MAX_SEARCH_PAGES: usize = 100;
/// The most folders deep a version's files are listed.
pub const MAX_DEPTH: usize = 32;
/// The most files (and folders) a version's listing may hold.
pub const MAX_FILES: usize = 100_000;
/// The default of the most bytes a version's files may hold, all files together
/// ([`RegistrySettings::max_download_bytes`]): 256 GiB.
pub const DEFAULT_MAX_DOWNLOAD_BYTES: u64 = 256 << 30;

/// Why a call to the registry failed. The messages never hold credentials.
#[derive(Debug, thiserror::Error)]
pub enum RegistryError {
    /// The registry's URL is not usable.
    #[error("--mlflow {0}")]
    Url(String),
    /// The client could not be made (a CA file, TLS settings, credentials' variables).
    #[error("{0}")]
    Setup(String),
    /// The server could not be reached, or the answer was cut.
    #[error("MLflow at {base}: {call}: {detail}")]
    Transport {
        /// The server's URL.
        base: String,
        /// The call.
        call: String,
        /// What went wrong.
        detail: String,
    },
    /// The server answered with an error.
    #[error("MLflow at {base}: {call}: HTTP {status}{}: {message}", if .code.is_empty() { String::new() } else { format!(" {}", .code) })]
    Status {
        /// The server's URL.
        base: String,
        /// The call.
        call: String,
        /// The HTTP status.
        status: u16,
        /// MLflow's error code (`RESOURCE_DOES_NOT_EXIST`, `PERMISSION_DENIED`, …), if any.
        code: String,
        /// The server's message.
        message: String,
    },
    /// The answer is not what the API documents.
    #[error("MLflow at {base}: {call}: unexpected answer: {detail}")]
    Answer {
        /// The server's URL.
        base: String,
        /// The call.
        call: String,
        /// What is wrong.
        detail: String,
    },
    /// A downloaded file could not be written.
    #[error("cannot write {}: {source}", .path.display())]
    Write {
        /// The file.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
}

impl RegistryError {
    /// Whether the server said the thing asked for does not exist.
    pub fn is_not_found(&self) -> bool {
        matches!(self, RegistryError::Status { status: 404, .. })
            || matches!(self, RegistryError::Status { code, .. } if code == "RESOURCE_DOES_NOT_EXIST")
    }
}

/// How to reach the registry.
#[derive(Debug, Clone, Default)]
pub struct RegistrySettings {
    /// The tracking server's URL (`http://host:5000`, `https://mlflow.example/prefix`).
    pub url: String,
    /// A PEM bundle trusted besides the system's roots.
    pub ca_file: Option<PathBuf>,
    /// Whether `MLFLOW_TRACKING_INSECURE_TLS=true` may turn certificate checks off.
    pub allow_insecure_tls: bool,
    /// The most bytes a version's files may hold, all together (`None`:
    /// [`DEFAULT_MAX_DOWNLOAD_BYTES`]), through the artifact proxy or at a local `file:`
    /// location; in a search for the version by its digest, the versions read together. A file
    /// is also never read past the size its listing gives.
    pub max_download_bytes: Option<u64>,
}

enum Auth {
    None,
    Basic(String, String),
    Bearer(String),
}

impl std::fmt::Debug for Auth {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Auth::None => "none",
            Auth::Basic(..) => "basic (from MLFLOW_TRACKING_USERNAME/PASSWORD)",
            Auth::Bearer(_) => "bearer (from MLFLOW_TRACKING_TOKEN)",
        })
    }
}

/// A model version as the registry describes it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ModelVersion {
    /// The registered model.
    pub name: String,
    /// The version number, as text.
    pub version: String,
    /// Where its files were registered from.
    pub source: String,
    /// Its tags, in the server's order.
    pub tags: Vec<(String, String)>,
}

impl ModelVersion {
    /// A tag's value.
    pub fn tag(&self, key: &str) -> Option<&str> {
        self.tags.iter().find(|(k, _)| k == key).map(|(_, v)| v.as_str())
    }

    fn from_json(v: &Value) -> Option<ModelVersion> {
        let tags = v
            .get("tags")
            .and_then(Value::as_array)
            .map(|tags| {
                tags.iter()
                    .filter_map(|t| {
                        Some((
                            t.get("key")?.as_str()?.to_owned(),
                            t.get("value")?.as_str().unwrap_or("").to_owned(),
                        ))
                    })
                    .collect()
            })
            .unwrap_or_default();
        Some(ModelVersion {
            name: v.get("name")?.as_str()?.to_owned(),
            version: v.get("version")?.as_str()?.to_owned(),
            source: v.get("source").and_then(Value::as_str).unwrap_or("").to_owned(),
            tags,
        })
    }
}

/// The registry: its URL, the client and the credentials (kept out of every message).
pub struct Registry {
    base: url::Url,
    shown: String,
    client: reqwest::Client,
    runtime: tokio::runtime::Runtime,
    auth: Auth,
    max_download: u64,
}

impl std::fmt::Debug for Registry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Registry")
            .field("url", &self.shown)
            .field("auth", &self.auth)
            .finish()
    }
}

fn env(name: &str) -> Option<String> {
    std::env::var(name).ok().filter(|v| !v.is_empty())
}

impl Registry {
    /// The registry at `settings.url`, with the credentials of MLflow's environment variables.
    pub fn connect(settings: &RegistrySettings) -> Result<Registry, RegistryError> {
        let base = url::Url::parse(&settings.url)
            .map_err(|e| RegistryError::Url(format!("`{}`: {e}", shown_url(&settings.url))))?;
        if !matches!(base.scheme(), "http" | "https") {
            return Err(RegistryError::Url(format!(
                "`{}`: an http:// or https:// URL",
                shown_url(&settings.url)
            )));
        }
        if !base.username().is_empty() || base.password().is_some() {
            return Err(RegistryError::Url(
                "carries a user or password: give them in MLFLOW_TRACKING_USERNAME and MLFLOW_TRACKING_PASSWORD (or MLFLOW_TRACKING_TOKEN), never in the URL".to_owned(),
            ));
        }
        if base.query().is_some() || base.fragment().is_some() {
            // Not echoed: a query may carry a token.
            return Err(RegistryError::Url(format!(
                "`{}`: a URL without a query or fragment",
                shown_url(&settings.url)
            )));
        }
        let insecure = env("MLFLOW_TRACKING_INSECURE_TLS").is_some_and(|v| v.eq_ignore_ascii_case("true"));
        if insecure && !settings.allow_insecure_tls {
            return Err(RegistryError::Setup(
                "MLFLOW_TRACKING_INSECURE_TLS=true would turn off the server certificate's check: refused (unset it, give --ca-file, or pass --mlflow-insecure-tls to accept it)".to_owned(),
            ));
        }
        let ca = match &settings.ca_file {
            Some(p) => Some((
                fs::read(p)
                    .map_err(|e| RegistryError::Setup(format!("cannot read the CA file {}: {e}", p.display())))?,
                format!("the CA file {}", p.display()),
            )),
            None => None,
        };
        let client_settings = ClientSettings {
            ca,
            insecure_tls: insecure,
            connect_timeout: Some(Duration::from_secs(30)),
            timeout: Some(Duration::from_secs(600)),
        };
        let client = http::builder(&client_settings)
            .map_err(RegistryError::Setup)?
            // MLflow's server is uvicorn, which closes an idle connection after 5 s: a pooled
            // one is not reused after 4 (a reuse as it closes fails the request).
            .pool_idle_timeout(Duration::from_secs(4))
            .build()
            .map_err(|e| RegistryError::Setup(format!("cannot make an HTTP client: {}", http::chain(&e))))?;
        let auth = match (
            env("MLFLOW_TRACKING_TOKEN"),
            env("MLFLOW_TRACKING_USERNAME"),
            env("MLFLOW_TRACKING_PASSWORD"),
        ) {
            (Some(t), _, _) => Auth::Bearer(t),
            (None, Some(u), Some(p)) => Auth::Basic(u, p),
            (None, Some(_), None) => {
                return Err(RegistryError::Setup(
                    "MLFLOW_TRACKING_USERNAME is set but MLFLOW_TRACKING_PASSWORD is not".to_owned(),
                ))
            }
            (None, None, Some(_)) => {
                return Err(RegistryError::Setup(
                    "MLFLOW_TRACKING_PASSWORD is set but MLFLOW_TRACKING_USERNAME is not".to_owned(),
                ))
            }
            (None, None, None) => Auth::None,
        };
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .map_err(|e| RegistryError::Setup(format!("cannot start the HTTP client's runtime: {e}")))?;
        let shown = base.as_str().trim_end_matches('/').to_owned();
        Ok(Registry {
            base,
            shown,
            client,
            runtime,
            auth,
            max_download: settings.max_download_bytes.unwrap_or(DEFAULT_MAX_DOWNLOAD_BYTES),
        })
    }

    /// The server's URL as messages show it.
    pub fn url(&self) -> &str {
        &self.shown
    }

    /// The server's URL (no credentials: refused in [`Registry::connect`]).
    pub fn base(&self) -> &url::Url {
        &self.base
    }

    fn endpoint(&self, path: &str) -> url::Url {
        let mut u = self.base.clone();
        let joined = format!("{}/{}", u.path().trim_end_matches('/'), path.trim_start_matches('/'));
        u.set_path(&joined);
        u
    }

    fn authed(&self, req: reqwest::RequestBuilder) -> reqwest::RequestBuilder {
        match &self.auth {
            Auth::None => req,
            Auth::Basic(u, p) => req.basic_auth(u, Some(p)),
            Auth::Bearer(t) => req.bearer_auth(t),
        }
    }

    fn transport(&self, call: &str, e: &dyn std::error::Error) -> RegistryError {
        RegistryError::Transport {
            base: self.shown.clone(),
            call: call.to_owned(),
            // reqwest's text names the URL, which holds no credentials (refused in `connect`).
            detail: http::chain(e),
        }
    }

    /// Sends `req`; an error status is read into [`RegistryError::Status`].
    fn send(&self, call: &str, req: reqwest::RequestBuilder) -> Result<reqwest::Response, RegistryError> {
        let req = self.authed(req);
        let response = self
            .runtime
            .block_on(async { req.send().await })
            .map_err(|e| self.transport(call, &e))?;
        let status = response.status();
        if status.is_success() {
            return Ok(response);
        }
        // The first 64 KiB at most: an endless error body is not read to its end.
        let (body, _) = self.read_capped(call, response, MAX_ERROR_BYTES);
        let text = String::from_utf8_lossy(&body).into_owned();
        let (code, message) = match serde_json::from_str::<Value>(&text) {
            Ok(v) => (
                v.get("error_code").and_then(Value::as_str).unwrap_or("").to_owned(),
                v.get("message")
                    .and_then(Value::as_str)
                    .map(str::to_owned)
                    .unwrap_or_else(|| cut(&text)),
            ),
            Err(_) => (String::new(), cut(text.trim())),
        };
        Err(RegistryError::Status {
            base: self.shown.clone(),
            call: call.to_owned(),
            status: status.as_u16(),
            code,
            message: if message.is_empty() {
                status.canonical_reason().unwrap_or("").to_owned()
            } else {
                message
            },
        })
    }

    /// The body, read up to `max` bytes, and the error when it is longer (then the first `max`
    /// bytes are read) or cut.
    fn read_capped(&self, call: &str, mut response: reqwest::Response, max: usize) -> (Vec<u8>, Option<RegistryError>) {
        let mut body = Vec::new();
        loop {
            match self.runtime.block_on(response.chunk()) {
                Ok(Some(chunk)) => {
                    if body.len() + chunk.len() > max {
                        let room = max - body.len();
                        body.extend_from_slice(&chunk[..room]);
                        let e = self.answer(
                            call,
                            format!("the answer is longer than {max} bytes, the most deploy-gate reads of it (refused unread)"),
                        );
                        return (body, Some(e));
                    }
                    body.extend_from_slice(&chunk);
                }
                Ok(None) => return (body, None),
                Err(e) => return (body, Some(self.transport(call, &e))),
            }
        }
    }

    fn json(&self, call: &str, req: reqwest::RequestBuilder) -> Result<Value, RegistryError> {
        let response = self.send(call, req)?;
        let (bytes, cut) = self.read_capped(call, response, MAX_JSON_BYTES);
        if let Some(e) = cut {
            return Err(e);
        }
        serde_json::from_slice(&bytes).map_err(|e| self.answer(call, format!("not JSON: {e}")))
    }

    fn answer(&self, call: &str, detail: String) -> RegistryError {
        RegistryError::Answer {
            base: self.shown.clone(),
            call: call.to_owned(),
            detail,
        }
    }

    fn get(&self, call: &str, path: &str, query: &[(&str, &str)]) -> Result<Value, RegistryError> {
        let mut u = self.endpoint(path);
        u.query_pairs_mut().extend_pairs(query);
        self.json(call, self.client.get(u))
    }

    fn post(&self, call: &str, path: &str, body: &Value) -> Result<Value, RegistryError> {
        let u = self.endpoint(path);
        let req = self
            .client
            .post(u)
            .header(reqwest::header::CONTENT_TYPE, "application/json")
            .body(serde_json::to_vec(body).expect("JSON serializes"));
        self.json(call, req)
    }

    fn version_of(&self, call: &str, v: &Value) -> Result<ModelVersion, RegistryError> {
        v.get("model_version")
            .and_then(ModelVersion::from_json)
            .ok_or_else(|| self.answer(call, "no model_version".to_owned()))
    }

    /// The version an alias points to; `None` when the alias is not set.
    pub fn alias(&self, name: &str, alias: &str) -> Result<Option<ModelVersion>, RegistryError> {
        let call = format!("the alias {alias} of {name}");
        match self.get(
            &call,
            "api/2.0/mlflow/registered-models/alias",
            &[("name", name), ("alias", alias)],
        ) {
            Ok(v) => Ok(Some(self.version_of(&call, &v)?)),
            // MLflow 3.17 answers an unset alias with HTTP 400 INVALID_PARAMETER_VALUE
            // "Registered model alias NAME not found." (a missing model is a 404, an error here).
            Err(RegistryError::Status {
                status: 400,
                code,
                message,
                ..
            }) if code == "INVALID_PARAMETER_VALUE" && message.contains("alias") && message.ends_with("not found.") => {
                Ok(None)
            }
            Err(e) => Err(e),
        }
    }

    /// A version, with its tags.
    pub fn version(&self, name: &str, version: &str) -> Result<ModelVersion, RegistryError> {
        let call = format!("version {version} of {name}");
        let v = self.get(
            &call,
            "api/2.0/mlflow/model-versions/get",
            &[("name", name), ("version", version)],
        )?;
        self.version_of(&call, &v)
    }

    /// Every version of a registered model (a name with `'` is refused: the search filter
    /// could not hold it exactly).
    pub fn versions(&self, name: &str) -> Result<Vec<ModelVersion>, RegistryError> {
        let call = format!("the versions of {name}");
        if name.contains('\'') || name.contains('\\') {
            return Err(RegistryError::Setup(format!(
                "the registered model name `{name}` holds a quote or backslash: give --model-version"
            )));
        }
        let filter = format!("name='{name}'");
        let mut out = Vec::new();
        let mut token = String::new();
        for page in 1.. {
            if page > MAX_SEARCH_PAGES {
                return Err(self.answer(
                    &call,
                    format!(
                        "more than {MAX_SEARCH_PAGES} pages of versions (the most deploy-gate reads, {} versions): give --model-version",
                        MAX_SEARCH_PAGES * 200
                    ),
                ));
            }
            let mut q = vec![("filter", filter.as_str()), ("max_results", "200")];
            if !token.is_empty() {
                q.push(("page_token", token.as_str()));
            }
            let v = self.get(&call, "api/2.0/mlflow/model-versions/search", &q)?;
            for mv in v.get("model_versions").and_then(Value::as_array).into_iter().flatten() {
                let mv = ModelVersion::from_json(mv)
                    .ok_or_else(|| self.answer(&call, "a version without name or number".to_owned()))?;
                // The filter is the server's to apply; a name that differs is not ours.
                if mv.name == name {
                    out.push(mv);
                }
            }
            match v.get("next_page_token").and_then(Value::as_str) {
                Some(t) if !t.is_empty() && t != token => token = t.to_owned(),
                _ => break,
            }
        }
        if out.is_empty() {
            // A missing model and a model without versions read alike in a search.
            let call = format!("the registered model {name}");
            self.get(&call, "api/2.0/mlflow/registered-models/get", &[("name", name)])?;
        }
        Ok(out)
    }

    /// Where a version's files can be downloaded from.
    pub fn download_uri(&self, name: &str, version: &str) -> Result<String, RegistryError> {
        let call = format!("the download URI of version {version} of {name}");
        let v = self.get(
            &call,
            "api/2.0/mlflow/model-versions/get-download-uri",
            &[("name", name), ("version", version)],
        )?;
        v.get("artifact_uri")
            .and_then(Value::as_str)
            .map(str::to_owned)
            .ok_or_else(|| self.answer(&call, "no artifact_uri".to_owned()))
    }

    /// Sets a tag on a version.
    pub fn set_tag(&self, name: &str, version: &str, key: &str, value: &str) -> Result<(), RegistryError> {
        let call = format!("setting the tag {key} on version {version} of {name}");
        self.post(
            &call,
            "api/2.0/mlflow/model-versions/set-tag",
            &json!({"name": name, "version": version, "key": key, "value": value}),
        )
        .map_err(|e| needs_edit(e, name))?;
        Ok(())
    }

    /// Points an alias at a version.
    pub fn set_alias(&self, name: &str, alias: &str, version: &str) -> Result<(), RegistryError> {
        let call = format!("setting the alias {alias} of {name} to version {version}");
        self.post(
            &call,
            "api/2.0/mlflow/registered-models/alias",
            &json!({"name": name, "alias": alias, "version": version}),
        )
        .map_err(|e| needs_edit(e, name))?;
        Ok(())
    }

    /// The most bytes the files read may hold (`--mlflow-max-bytes`).
    pub fn max_download(&self) -> u64 {
        self.max_download
    }

    /// Downloads every file under the artifact proxy's `path` (an `mlflow-artifacts:` URI's
    /// path) into `dest`, keeping the tree, within what is left of `budget` (spent as it goes).
    /// Returns the number of files.
    pub fn download_proxied(&self, path: &str, dest: &Path, budget: &mut Budget) -> Result<usize, RegistryError> {
        let mut count = 0;
        let mut stack = vec![(String::new(), 0usize)];
        while let Some((rel, depth)) = stack.pop() {
            let listed = if rel.is_empty() {
                path.to_owned()
            } else {
                format!("{path}/{rel}")
            };
            let call = format!("listing the artifacts at {listed}");
            let v = self.get(&call, "api/2.0/mlflow-artifacts/artifacts", &[("path", &listed)])?;
            let listing = v.get("files").and_then(Value::as_array).map_or(&[][..], Vec::as_slice);
            // Counted before any of them is fetched.
            budget.entries += listing.len();
            if budget.entries > MAX_FILES {
                return Err(self.answer(
                    &call,
                    format!(
                        "the version's files list more than {MAX_FILES} files and folders, the most deploy-gate reads"
                    ),
                ));
            }
            for f in listing {
                let p = f
                    .get("path")
                    .and_then(Value::as_str)
                    .ok_or_else(|| self.answer(&call, "a file without a path".to_owned()))?;
                // Listed relative to the path asked for; only plain names go into `dest`.
                let name = p.rsplit('/').next().unwrap_or(p);
                if name.is_empty() || name == "." || name == ".." {
                    return Err(self.answer(&call, format!("the artifact path `{p}`")));
                }
                let child = if rel.is_empty() {
                    name.to_owned()
                } else {
                    format!("{rel}/{name}")
                };
                if f.get("is_dir").and_then(Value::as_bool) == Some(true) {
                    if depth + 1 > MAX_DEPTH {
                        return Err(self.answer(
                            &call,
                            format!("the folder `{child}` is more than {MAX_DEPTH} folders deep, the most deploy-gate reads"),
                        ));
                    }
                    fs::create_dir(dest.join(&child)).map_err(|source| RegistryError::Write {
                        path: dest.join(&child),
                        source,
                    })?;
                    stack.push((child, depth + 1));
                } else {
                    // The size the listing gives bounds the file's download, and the sizes
                    // together the version's, before anything is fetched.
                    let listed = f
                        .get("file_size")
                        .and_then(|s| s.as_u64().or_else(|| s.as_str().and_then(|s| s.parse().ok())));
                    let room = self.max_download.saturating_sub(budget.bytes);
                    if let Some(n) = listed {
                        if n > room {
                            return Err(self.too_big(&call, &child, Some(n)));
                        }
                    }
                    let got = self.fetch_file(&format!("{path}/{child}"), &dest.join(&child), listed.unwrap_or(room), listed.is_some())
                        .map_err(|e| match e {
                            FetchError::Registry(e) => e,
                            FetchError::TooLong => match listed {
                                Some(n) => self.answer(
                                    &format!("downloading the artifact {path}/{child}"),
                                    format!("the server sent more of the file `{child}` than the {n} bytes its listing gives (refused unread)"),
                                ),
                                None => self.too_big(&format!("downloading the artifact {path}/{child}"), &child, None),
                            },
                        })?;
                    budget.bytes += got;
                    count += 1;
                }
            }
        }
        Ok(count)
    }

    /// The error of a file longer than its listing said, or than the room left.
    fn too_big(&self, call: &str, child: &str, listed: Option<u64>) -> RegistryError {
        let max = self.max_download;
        self.answer(
            call,
            match listed {
                Some(n) if n > max => format!("the file `{child}` is listed with {n} bytes: more than the {max} bytes a version's files may hold (--mlflow-max-bytes)"),
                Some(n) => format!("the file `{child}` ({n} bytes listed) takes the version's files past {max} bytes, the most they may hold (--mlflow-max-bytes)"),
                None => format!("the file `{child}` (no size listed) takes the version's files past {max} bytes, the most they may hold (--mlflow-max-bytes)"),
            },
        )
    }

    /// Downloads one file, at most `max` bytes (`exact`: its listed size, which it must have).
    /// Returns its size.
    fn fetch_file(&self, artifact: &str, to: &Path, max: u64, exact: bool) -> Result<u64, FetchError> {
        let call = format!("downloading the artifact {artifact}");
        let mut u = self.endpoint("api/2.0/mlflow-artifacts/artifacts");
        {
            let mut segs = u
                .path_segments_mut()
                .map_err(|()| RegistryError::Url("cannot be a base".to_owned()))?;
            for s in artifact.split('/').filter(|s| !s.is_empty()) {
                segs.push(s);
            }
        }
        let mut response = self.send(&call, self.client.get(u))?;
        let write_err = |source| RegistryError::Write {
            path: to.to_path_buf(),
            source,
        };
        let mut file = fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(to)
            .map_err(write_err)?;
        let mut got = 0u64;
        loop {
            match self.runtime.block_on(response.chunk()) {
                Ok(Some(chunk)) => {
                    got += chunk.len() as u64;
                    if got > max {
                        return Err(FetchError::TooLong);
                    }
                    file.write_all(&chunk).map_err(write_err)?
                }
                Ok(None) => break,
                Err(e) => return Err(self.transport(&call, &e).into()),
            }
        }
        if exact && got != max {
            return Err(self
                .answer(&call, format!("{got} bytes received, the listing said {max}"))
                .into());
        }
        file.sync_all().map_err(write_err)?;
        Ok(got)
    }
}

/// What the files read so far have spent of the limits ([`MAX_FILES`] files and folders,
/// `--mlflow-max-bytes`): one budget for one version's files, or for every version a search
/// reads.
#[derive(Debug, Default)]
pub struct Budget {
    /// Files and folders listed (or walked).
    pub entries: usize,
    /// Bytes read.
    pub bytes: u64,
}

/// Why a file's download stopped.
enum FetchError {
    Registry(RegistryError),
    /// Longer than it may be.
    TooLong,
}

impl From<RegistryError> for FetchError {
    fn from(e: RegistryError) -> FetchError {
        FetchError::Registry(e)
    }
}

/// A refusal of a write, said with what is needed.
fn needs_edit(e: RegistryError, name: &str) -> RegistryError {
    match e {
        RegistryError::Status {
            base,
            call,
            status: status @ (401 | 403),
            code,
            message,
        } => RegistryError::Status {
            base,
            call,
            status,
            code,
            message: format!(
                "{message} (the user of MLFLOW_TRACKING_USERNAME or MLFLOW_TRACKING_TOKEN needs EDIT permission on the registered model {name})"
            ),
        },
        other => other,
    }
}

fn cut(text: &str) -> String {
    if text.len() <= MAX_ERROR_TEXT {
        return text.to_owned();
    }
    let mut end = MAX_ERROR_TEXT;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}…", &text[..end])
}

/// A URL as an error may show it: without a user or password, and without a query or
/// fragment (either may carry a token; shown as `?…`, `#…`).
fn shown_url(raw: &str) -> String {
    match url::Url::parse(raw) {
        Ok(mut u) if u.has_host() => {
            let _ = u.set_username("");
            let _ = u.set_password(None);
            let query = u.query().is_some();
            let fragment = u.fragment().is_some();
            u.set_query(None);
            u.set_fragment(None);
            format!(
                "{u}{}{}",
                if query { "?…" } else { "" },
                if fragment { "#…" } else { "" }
            )
        }
        // Not a URL with a host: whatever stands before an `@` may be a credential, and
        // whatever follows a `?` or `#`.
        _ => {
            let (text, cut) = match raw.find(['?', '#']) {
                Some(i) => (&raw[..i], "?…"),
                None => (raw, ""),
            };
            match text.rsplit_once('@') {
                Some((_, rest)) => format!("…@{rest}{cut}"),
                None => format!("{text}{cut}"),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_url_with_credentials_is_refused_without_showing_them() {
        let e = Registry::connect(&RegistrySettings {
            url: "http://alice:s3cret@127.0.0.1:5000".to_owned(),
            ..RegistrySettings::default()
        })
        .unwrap_err()
        .to_string();
        assert!(e.contains("never in the URL"), "{e}");
        assert!(!e.contains("s3cret") && !e.contains("alice"), "{e}");
        assert_eq!(shown_url("ftp://bob:pw@h/x"), "ftp://h/x");
        assert_eq!(shown_url("bob:pw@h x"), "…@h x");
    }

    #[test]
    fn a_url_with_a_query_or_fragment_is_refused_without_showing_them() {
        for url in [
            "http://127.0.0.1:5000/?token=s3cret",
            "http://127.0.0.1:5000/mlflow#s3cret",
            "http://127.0.0.1:99999/?token=s3cret",
        ] {
            let e = Registry::connect(&RegistrySettings {
                url: url.to_owned(),
                ..RegistrySettings::default()
            })
            .unwrap_err()
            .to_string();
            assert!(e.contains("127.0.0.1"), "{e}");
            assert!(!e.contains("s3cret"), "{e}");
        }
        assert_eq!(shown_url("http://h/p?token=x#y"), "http://h/p?…#…");
        assert_eq!(shown_url("bob:pw@h?token=x"), "…@h?…");
    }

    #[test]
    fn long_error_texts_are_cut_at_a_character() {
        let s = "é".repeat(400);
        let c = cut(&s);
        assert!(c.ends_with('…') && c.len() <= MAX_ERROR_TEXT + 3);
    }
}
