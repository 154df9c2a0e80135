//! An endpoint file: one model and how to ask it (`run --endpoint FILE`), read from YAML or
//! JSON (`kind: openai-chat`, `http` or `command`), with every refusal naming the file, the line and the
//! field. Sans-IO: the file's text comes in, the environment is a function, and what goes out
//! is the request body for a case ([`request`]), the verdict read from an answer
//! ([`response`]), and the rules a careful client follows between them ([`control`]: adaptive
//! concurrency, backoff, `Retry-After`, redaction of secrets).
//!
//! Secrets never enter an endpoint's [`Endpoint::digest`] or a cache key: the file names the
//! environment variable that holds a key (`api_key_env`) and header values may be `${ENV}`;
//! both are expanded only into the request sent ([`Endpoint::secrets`]).
//!
//! "Target" is the deployment target a decision is signed for (`sign --target`); the file
//! that says how to ask a model is an endpoint file. Records keep the field name they were first
//! written with: a record's `target` is the digest of the endpoint file that answered it.

pub mod control;
pub mod request;
pub mod response;

/// [`Endpoint`], by its earlier name.
#[doc(hidden)]
pub type Target = Endpoint;
/// [`read_endpoint`], by its earlier name.
#[doc(hidden)]
pub use self::read_endpoint as read_target;

use crate::deploy::spanned::{read_yaml, Spanned, Value};
use request::Template;
use serde_json::{json, Map as JsonMap, Value as Json};
use sha2::{Digest, Sha256};
use std::time::Duration;

/// An endpoint file is refused: the file, the line and the field, and why.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{file}{}: {}{message}", line.map(|l| format!(" line {l}")).unwrap_or_default(), field.as_ref().map(|f| format!("{f}: ")).unwrap_or_default())]
pub struct EndpointError {
    /// The file as the user named it.
    pub file: String,
    /// The 1-based line, when known.
    pub line: Option<usize>,
    /// The field (`concurrency.max`, `messages[1].content`), when one is at fault.
    pub field: Option<String>,
    /// What is wrong.
    pub message: String,
}

/// How an endpoint is asked.
#[derive(Debug, Clone)]
pub enum Kind {
    /// An OpenAI-compatible `/v1/chat/completions` endpoint.
    Chat(Chat),
    /// A plain HTTP JSON endpoint.
    Http(Http),
    /// A worker program speaking `run`'s line protocol.
    Command(Command),
}

/// `kind: openai-chat`.
#[derive(Debug, Clone)]
pub struct Chat {
    /// The base URLs (replicas), each without a trailing `/`; requests go to
    /// `{base_url}/chat/completions`.
    pub base_urls: Vec<String>,
    /// The `model` sent.
    pub model: String,
    /// The environment variable holding the API key (sent as `Authorization: Bearer …`).
    pub api_key_env: Option<String>,
    /// Extra headers (values may hold `${ENV}`).
    pub headers: Vec<(String, String)>,
    /// The messages: role and content template.
    pub messages: Vec<(String, Template)>,
    /// Merged into the request body.
    pub params: JsonMap<String, Json>,
    /// How the answer becomes a verdict.
    pub verdict: VerdictRule,
}

/// `kind: http`.
#[derive(Debug, Clone)]
pub struct Http {
    /// The URL.
    pub url: String,
    /// The method (upper case).
    pub method: String,
    /// Headers (values may hold `${ENV}`).
    pub headers: Vec<(String, String)>,
    /// The body's template; `None`: the test case's JSON object as the body.
    pub body: Option<Json>,
    /// The JSON pointer of the verdict in the response body.
    pub verdict: String,
    /// The JSON pointer of what the record keeps as the model's answer (`output`); `None`: the
    /// whole response.
    pub output: Option<String>,
}

/// `kind: command`.
#[derive(Debug, Clone)]
pub struct Command {
    /// The program and its arguments (never run through a shell).
    pub argv: Vec<String>,
}

/// How a chat answer becomes a verdict.
#[derive(Debug, Clone)]
pub enum VerdictRule {
    /// The message text, trimmed.
    Content,
    /// The message text parsed as JSON, then this pointer.
    Json(String),
    /// The first capture group of the first match (the whole match without a group).
    Regex(regex::Regex),
}

/// Concurrency bounds of an endpoint: where the adaptive limit starts and its range.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Concurrency {
    /// The limit at the start.
    pub initial: usize,
    /// The least it backs off to.
    pub min: usize,
    /// The most it grows to.
    pub max: usize,
}

/// An endpoint read from its file.
#[derive(Debug, Clone)]
pub struct Endpoint {
    /// The file as the user named it (for messages).
    pub file: String,
    /// How to ask it.
    pub kind: Kind,
    /// The longest one request (or, for a command, one case) may take; `None`: no limit.
    pub timeout: Option<Duration>,
    /// The timeout as written (`60s`), for records and messages.
    pub timeout_text: String,
    /// Requests retried at most this many times.
    pub retries: u32,
    /// The concurrency bounds; `None` for a command endpoint that gave none (one worker per core).
    pub concurrency: Option<Concurrency>,
    /// The largest response body read.
    pub max_response_bytes: u64,
    /// Whether records keep what the model answered (`outputs`, default true).
    pub outputs: bool,
    /// The most bytes of an answer a record keeps (`max_output_bytes`); a longer one is cut.
    pub max_output_bytes: usize,
    /// A PEM file of CA certificates to trust besides the system's, as written (relative to
    /// the endpoint file's folder).
    pub tls_ca: Option<String>,
    /// `sha256:` and the hex SHA-256 of the endpoint's canonical JSON (defaults filled in, no
    /// secret: names of variables, never their values).
    pub digest: String,
}

/// The defaults of the common fields.
pub const DEFAULT_TIMEOUT: &str = "60s";
/// Requests retried at most this many times by default.
pub const DEFAULT_RETRIES: u32 = 3;
/// The default concurrency of an endpoint.
pub const DEFAULT_CONCURRENCY: Concurrency = Concurrency {
    initial: 8,
    min: 1,
    max: 64,
};
/// The largest response read by default: 16 MiB.
pub const DEFAULT_MAX_RESPONSE: u64 = 16 << 20;
/// The most retries an endpoint may ask for.
pub const MAX_RETRIES: u32 = 100;
/// The most concurrent requests an endpoint may ask for.
pub const MAX_CONCURRENCY: usize = 4096;
/// A header value from the environment shorter than this is not taken for a secret.
pub const MIN_SECRET: usize = 8;
/// The longest `timeout` (a longer one is surely a mistake: `none` has no limit).
pub const MAX_TIMEOUT: Duration = Duration::from_secs(7 * 24 * 3600);
/// An endpoint file larger than this is refused unread.
pub const MAX_ENDPOINT_FILE: usize = 1 << 20;

struct Reader<'a> {
    file: &'a str,
}

impl Reader<'_> {
    fn err(&self, line: usize, field: &str, message: impl Into<String>) -> EndpointError {
        EndpointError {
            file: self.file.to_owned(),
            line: Some(line),
            field: (!field.is_empty()).then(|| field.to_owned()),
            message: message.into(),
        }
    }

    fn string(&self, v: &Spanned, field: &str) -> Result<String, EndpointError> {
        match &v.value {
            Value::Str(s) => Ok(s.clone()),
            other => Err(self.err(v.line, field, format!("expected a string, found {}", other.describe()))),
        }
    }

    /// A JSON pointer (empty, or starting with `/`; `example` is shown when it is not one).
    fn pointer(&self, v: &Spanned, field: &str, example: &str) -> Result<String, EndpointError> {
        let pointer = self.string(v, field)?;
        if !(pointer.is_empty() || pointer.starts_with('/')) {
            return Err(self.err(
                v.line,
                field,
                format!("{pointer:?} is not a JSON pointer (it starts with `/`, e.g. {example})"),
            ));
        }
        Ok(pointer)
    }

    fn nonempty(&self, v: &Spanned, field: &str) -> Result<String, EndpointError> {
        let s = self.string(v, field)?;
        if s.trim().is_empty() {
            return Err(self.err(v.line, field, "must not be empty"));
        }
        Ok(s)
    }

    fn count(&self, v: &Spanned, field: &str, least: i128, most: i128) -> Result<i128, EndpointError> {
        match &v.value {
            Value::Int(n) if (least..=most).contains(n) => Ok(*n),
            Value::Int(n) => Err(self.err(v.line, field, format!("{n} is out of range ({least} to {most})"))),
            other => Err(self.err(
                v.line,
                field,
                format!("expected a whole number, found {}", other.describe()),
            )),
        }
    }

    fn map<'v>(&self, v: &'v Spanned, field: &str) -> Result<&'v [(String, usize, Spanned)], EndpointError> {
        match &v.value {
            Value::Map(entries) => Ok(entries),
            other => Err(self.err(v.line, field, format!("expected a mapping, found {}", other.describe()))),
        }
    }

    /// Refuses keys other than `allowed` (naming the key's line).
    fn only(&self, entries: &[(String, usize, Spanned)], allowed: &[&str], within: &str) -> Result<(), EndpointError> {
        for (key, line, _) in entries {
            if !allowed.contains(&key.as_str()) {
                let field = if within.is_empty() {
                    key.clone()
                } else {
                    format!("{within}.{key}")
                };
                return Err(self.err(
                    *line,
                    &field,
                    format!("unknown field (expected one of: {})", allowed.join(", ")),
                ));
            }
        }
        Ok(())
    }

    fn headers(&self, v: &Spanned) -> Result<Vec<(String, String)>, EndpointError> {
        let mut out = Vec::new();
        for (name, line, value) in self.map(v, "headers")? {
            let field = format!("headers.{name}");
            if name.is_empty()
                || !name
                    .bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b))
            {
                return Err(self.err(*line, &field, "not a valid header name"));
            }
            let lower = name.to_ascii_lowercase();
            if matches!(
                lower.as_str(),
                "content-length" | "host" | "transfer-encoding" | "connection"
            ) {
                return Err(self.err(*line, &field, "set by the client; it cannot be given"));
            }
            let text = match &value.value {
                Value::Str(s) => s.clone(),
                Value::Int(n) => n.to_string(),
                other => {
                    return Err(self.err(
                        value.line,
                        &field,
                        format!("expected a string, found {}", other.describe()),
                    ))
                }
            };
            control::env_names(&text).map_err(|m| self.err(value.line, &field, m))?;
            if text.bytes().any(|b| b == b'\r' || b == b'\n' || b == 0) {
                return Err(self.err(value.line, &field, "a header value cannot hold a line break or NUL"));
            }
            out.push((name.clone(), text));
        }
        Ok(out)
    }

    /// A URL; `base`: a base URL that a path is added to (no query, no fragment).
    fn url(&self, v: &Spanned, field: &str, base: bool) -> Result<String, EndpointError> {
        let s = self.nonempty(v, field)?;
        let rest = s
            .strip_prefix("http://")
            .or_else(|| s.strip_prefix("https://"))
            .ok_or_else(|| self.err(v.line, field, format!("{s:?} is not an http:// or https:// URL")))?;
        if rest.is_empty() || rest.starts_with('/') {
            return Err(self.err(v.line, field, format!("{s:?} has no host")));
        }
        if s.chars().any(|c| c.is_whitespace() || c.is_control()) {
            return Err(self.err(v.line, field, format!("{s:?} holds white space")));
        }
        if rest.split('/').next().unwrap_or("").contains('@') {
            return Err(self.err(
                v.line,
                field,
                "credentials in a URL are refused (they would be recorded): use api_key_env or headers with ${ENV}",
            ));
        }
        let parsed =
            url::Url::parse(&s).map_err(|e| self.err(v.line, field, format!("{s:?} is not a valid URL: {e}")))?;
        if parsed.host().is_none() {
            return Err(self.err(v.line, field, format!("{s:?} has no host")));
        }
        if parsed.fragment().is_some() {
            return Err(self.err(v.line, field, format!("{s:?} has a fragment (#…), which is never sent")));
        }
        if base && parsed.query().is_some() {
            return Err(self.err(
                v.line,
                field,
                format!("{s:?} has a query (?…): a base URL gets /chat/completions added to its path; put a query parameter the server needs in the endpoint's headers, or use kind: http"),
            ));
        }
        Ok(s.trim_end_matches('/').to_owned())
    }
}

/// Converts a YAML value to JSON (for `params` and `body`); non-finite floats are refused.
fn to_json(r: &Reader<'_>, v: &Spanned, field: &str) -> Result<Json, EndpointError> {
    Ok(match &v.value {
        Value::Null => Json::Null,
        Value::Bool(b) => Json::Bool(*b),
        Value::Int(n) => {
            if let Ok(i) = i64::try_from(*n) {
                json!(i)
            } else if let Ok(u) = u64::try_from(*n) {
                json!(u)
            } else {
                return Err(r.err(v.line, field, "an integer beyond 64 bits"));
            }
        }
        Value::Float(f) => serde_json::Number::from_f64(*f)
            .map(Json::Number)
            .ok_or_else(|| r.err(v.line, field, "NaN and infinities are not JSON"))?,
        Value::Str(s) => Json::String(s.clone()),
        Value::Seq(items) => Json::Array(
            items
                .iter()
                .enumerate()
                .map(|(i, item)| to_json(r, item, &format!("{field}[{i}]")))
                .collect::<Result<_, _>>()?,
        ),
        Value::Map(entries) => {
            let mut map = JsonMap::new();
            for (k, _, item) in entries {
                map.insert(k.clone(), to_json(r, item, &format!("{field}.{k}"))?);
            }
            Json::Object(map)
        }
    })
}

/// A byte size: a whole number, or a number with `KB`, `MB`, `GB`, `KiB`, `MiB`, `GiB`.
fn byte_size(text: &str) -> Option<u64> {
    let t = text.trim();
    let split = t.find(|c: char| !c.is_ascii_digit()).unwrap_or(t.len());
    let (digits, unit) = t.split_at(split);
    let n: u64 = digits.parse().ok()?;
    let scale: u64 = match unit.trim() {
        "" | "B" => 1,
        "KB" | "kB" => 1_000,
        "MB" => 1_000_000,
        "GB" => 1_000_000_000,
        "KiB" => 1 << 10,
        "MiB" => 1 << 20,
        "GiB" => 1 << 30,
        _ => return None,
    };
    n.checked_mul(scale)
}

/// Reads an endpoint file's text. `file` names it in every message.
pub fn read_endpoint(file: &str, text: &[u8]) -> Result<Endpoint, EndpointError> {
    let r = Reader { file };
    let whole = |message: String| EndpointError {
        file: file.to_owned(),
        line: None,
        field: None,
        message,
    };
    if text.len() > MAX_ENDPOINT_FILE {
        return Err(whole(format!(
            "more than {MAX_ENDPOINT_FILE} bytes; an endpoint file is small"
        )));
    }
    let text = std::str::from_utf8(text).map_err(|e| whole(format!("not UTF-8 (at byte {})", e.valid_up_to())))?;
    let root = read_yaml(text)
        .map_err(|e| whole(e.to_string()))?
        .ok_or_else(|| whole("empty: an endpoint file is a mapping with at least `kind`".into()))?;
    let entries = r.map(&root, "")?;
    let get = |key: &str| entries.iter().find(|e| e.0 == key).map(|e| &e.2);
    let kind_value = get("kind").ok_or_else(|| r.err(root.line, "kind", "missing (openai-chat, http or command)"))?;
    let kind_name = r.string(kind_value, "kind")?;
    const COMMON: [&str; 9] = [
        "kind",
        "timeout",
        "retries",
        "concurrency",
        "max_response_bytes",
        "outputs",
        "max_output_bytes",
        "tls_ca",
        "description",
    ];
    let specific: &[&str] = match kind_name.as_str() {
        "openai-chat" => &[
            "base_url",
            "model",
            "api_key_env",
            "headers",
            "messages",
            "params",
            "verdict",
        ],
        "http" => &["url", "method", "headers", "body", "verdict", "output"],
        "command" => &["argv"],
        other => {
            return Err(r.err(
                kind_value.line,
                "kind",
                format!("{other:?} is not a kind (openai-chat, http or command)"),
            ))
        }
    };
    let allowed: Vec<&str> = COMMON.iter().chain(specific.iter()).copied().collect();
    r.only(entries, &allowed, "")?;
    let required = |key: &str| {
        get(key).ok_or_else(|| {
            r.err(
                root.line,
                key,
                format!("missing (an endpoint of kind {kind_name} needs it)"),
            )
        })
    };

    // The common fields.
    let timeout_text = match get("timeout") {
        None => DEFAULT_TIMEOUT.to_owned(),
        Some(v) => match &v.value {
            Value::Str(s) => s.clone(),
            Value::Int(n) if *n > 0 => format!("{n}s"),
            Value::Float(f) if *f > 0.0 && f.is_finite() => format!("{}ms", (f * 1000.0).round() as u64),
            other => {
                return Err(r.err(
                    v.line,
                    "timeout",
                    format!(
                        "expected a duration such as 60s, 5m or none, found {}",
                        other.describe()
                    ),
                ))
            }
        },
    };
    let timeout = if timeout_text == "none" {
        None
    } else {
        let line = get("timeout").map_or(root.line, |v| v.line);
        let d = parse_duration(&timeout_text).ok_or_else(|| {
            r.err(
                line,
                "timeout",
                format!("{timeout_text:?} is not a duration (e.g. 60s, 500ms, 5m, none)"),
            )
        })?;
        if d.is_zero() {
            return Err(r.err(line, "timeout", "must be more than zero (`none`: no limit)"));
        }
        if d > MAX_TIMEOUT {
            return Err(r.err(line, "timeout", "more than 7 days (`none`: no limit)"));
        }
        Some(d)
    };
    let retries = match get("retries") {
        None => DEFAULT_RETRIES,
        Some(v) => r.count(v, "retries", 0, MAX_RETRIES as i128)? as u32,
    };
    let concurrency = match get("concurrency") {
        None if kind_name == "command" => None,
        None => Some(DEFAULT_CONCURRENCY),
        Some(v) => {
            let c = r.map(v, "concurrency")?;
            r.only(c, &["initial", "min", "max"], "concurrency")?;
            let field = |k: &str, default: usize| -> Result<(usize, usize), EndpointError> {
                match c.iter().find(|e| e.0 == k) {
                    None => Ok((default, v.line)),
                    Some((_, line, value)) => Ok((
                        r.count(value, &format!("concurrency.{k}"), 1, MAX_CONCURRENCY as i128)? as usize,
                        *line,
                    )),
                }
            };
            let (min, _) = field("min", DEFAULT_CONCURRENCY.min)?;
            let (max, max_line) = field("max", DEFAULT_CONCURRENCY.max.max(min))?;
            let (initial, initial_line) = field("initial", DEFAULT_CONCURRENCY.initial.clamp(min, max.max(min)))?;
            if min > max {
                return Err(r.err(max_line, "concurrency.max", format!("{max} is less than min ({min})")));
            }
            if !(min..=max).contains(&initial) {
                return Err(r.err(
                    initial_line,
                    "concurrency.initial",
                    format!("{initial} is not between min ({min}) and max ({max})"),
                ));
            }
            Some(Concurrency { initial, min, max })
        }
    };
    let size = |field: &str, default: u64| -> Result<u64, EndpointError> {
        Ok(match get(field) {
            None => default,
            Some(v) => match &v.value {
                Value::Int(n) if *n > 0 && *n <= u64::MAX as i128 => *n as u64,
                Value::Int(n) if *n <= 0 => {
                    return Err(r.err(v.line, field, format!("{n} is not a size: it must be more than 0")))
                }
                Value::Str(s) => byte_size(s)
                    .filter(|n| *n > 0)
                    .ok_or_else(|| r.err(v.line, field, format!("{s:?} is not a size (e.g. 16MiB, 1000000)")))?,
                other => {
                    return Err(r.err(
                        v.line,
                        field,
                        format!("expected a size such as 16MiB, found {}", other.describe()),
                    ))
                }
            },
        })
    };
    let max_response_bytes = size("max_response_bytes", DEFAULT_MAX_RESPONSE)?;
    let max_output_bytes = usize::try_from(size(
        "max_output_bytes",
        crate::run::records::DEFAULT_MAX_OUTPUT_BYTES as u64,
    )?)
    .unwrap_or(usize::MAX);
    let outputs = match get("outputs") {
        None => true,
        Some(v) => match &v.value {
            Value::Bool(b) => *b,
            other => {
                return Err(r.err(
                    v.line,
                    "outputs",
                    format!("expected true or false, found {}", other.describe()),
                ))
            }
        },
    };
    let tls_ca = get("tls_ca").map(|v| r.nonempty(v, "tls_ca")).transpose()?;
    if let Some(v) = get("description") {
        r.string(v, "description")?;
    }

    let kind = match kind_name.as_str() {
        "openai-chat" => Kind::Chat(read_chat(&r, &get, &required)?),
        "http" => {
            // Checked as a base URL is, but sent as written: `/score/` and `/score` are two
            // routes, and redirects are not followed.
            let url_value = required("url")?;
            r.url(url_value, "url", false)?;
            let url = r.string(url_value, "url")?;
            let method = match get("method") {
                None => "POST".to_owned(),
                Some(v) => {
                    let m = r.string(v, "method")?.to_ascii_uppercase();
                    if !matches!(m.as_str(), "POST" | "PUT" | "PATCH") {
                        return Err(r.err(
                            v.line,
                            "method",
                            format!("{m:?}: expected POST, PUT or PATCH (a request must carry its case)"),
                        ));
                    }
                    m
                }
            };
            let headers = get("headers").map(|v| r.headers(v)).transpose()?.unwrap_or_default();
            let body = match get("body") {
                None => None,
                Some(v) => {
                    let body = to_json(&r, v, "body")?;
                    request::check_body_template(&body)
                        .map_err(|(path, m)| r.err(v.line, &format!("body{path}"), m))?;
                    Some(body)
                }
            };
            let verdict = r.pointer(required("verdict")?, "verdict", "/result/verdict")?;
            let output = get("output")
                .map(|v| r.pointer(v, "output", "/result/answer"))
                .transpose()?;
            Kind::Http(Http {
                url,
                method,
                headers,
                body,
                verdict,
                output,
            })
        }
        _ => {
            let v = required("argv")?;
            let argv = match &v.value {
                Value::Seq(items) if !items.is_empty() => items
                    .iter()
                    .enumerate()
                    .map(|(i, item)| r.string(item, &format!("argv[{i}]")))
                    .collect::<Result<Vec<_>, _>>()?,
                Value::Seq(_) => return Err(r.err(v.line, "argv", "empty: the program and its arguments")),
                other => {
                    return Err(r.err(
                        v.line,
                        "argv",
                        format!(
                            "expected a list (the program and its arguments), found {}",
                            other.describe()
                        ),
                    ))
                }
            };
            if argv[0].is_empty() {
                return Err(r.err(v.line, "argv[0]", "the program is empty"));
            }
            Kind::Command(Command { argv })
        }
    };
    let mut target = Endpoint {
        file: file.to_owned(),
        kind,
        timeout,
        timeout_text,
        retries,
        concurrency,
        max_response_bytes,
        outputs,
        max_output_bytes,
        tls_ca,
        digest: String::new(),
    };
    let canonical = crate::attest::jcs::canonical_json(&target.identity())
        .map_err(|e| whole(format!("cannot be written as canonical JSON: {e}")))?;
    target.digest = format!("sha256:{}", hex::encode(Sha256::digest(canonical.as_bytes())));
    Ok(target)
}

fn read_chat<'v>(
    r: &Reader<'_>,
    get: &dyn Fn(&str) -> Option<&'v Spanned>,
    required: &dyn Fn(&str) -> Result<&'v Spanned, EndpointError>,
) -> Result<Chat, EndpointError> {
    let base = required("base_url")?;
    // Each URL is refused at its own line and index.
    let base_url = |v: &Spanned, field: &str| {
        let url = r.url(v, field, true)?;
        if url.ends_with("/chat/completions") {
            return Err(r.err(
                v.line,
                field,
                format!(
                    "{url:?} ends with /chat/completions: give the base (e.g. http://host:8000/v1), the path is added"
                ),
            ));
        }
        Ok(url)
    };
    let base_urls = match &base.value {
        Value::Seq(items) if !items.is_empty() => items
            .iter()
            .enumerate()
            .map(|(i, item)| base_url(item, &format!("base_url[{i}]")))
            .collect::<Result<Vec<_>, _>>()?,
        Value::Seq(_) => return Err(r.err(base.line, "base_url", "an empty list")),
        _ => vec![base_url(base, "base_url")?],
    };
    let model = r.nonempty(required("model")?, "model")?;
    let api_key_env = match get("api_key_env") {
        None => None,
        Some(v) => {
            let name = r.nonempty(v, "api_key_env")?;
            if !name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_') || name.as_bytes()[0].is_ascii_digit() {
                return Err(r.err(
                    v.line,
                    "api_key_env",
                    "the NAME of an environment variable (letters, digits, _), never the key itself",
                ));
            }
            Some(name)
        }
    };
    let headers = get("headers").map(|v| r.headers(v)).transpose()?.unwrap_or_default();
    if let (Some(_), Some(v)) = (&api_key_env, get("headers")) {
        // The header's own line and spelling.
        if let Some((name, line, _)) = r
            .map(v, "headers")?
            .iter()
            .find(|e| e.0.eq_ignore_ascii_case("authorization"))
        {
            return Err(r.err(*line, &format!("headers.{name}"), "given twice: api_key_env sets it"));
        }
    }
    let m = required("messages")?;
    let items = match &m.value {
        Value::Seq(items) if !items.is_empty() => items,
        Value::Seq(_) => return Err(r.err(m.line, "messages", "an empty list")),
        other => {
            return Err(r.err(
                m.line,
                "messages",
                format!("expected a list of {{role, content}}, found {}", other.describe()),
            ))
        }
    };
    let mut messages = Vec::new();
    for (i, item) in items.iter().enumerate() {
        let field = format!("messages[{i}]");
        let entries = r.map(item, &field)?;
        r.only(entries, &["role", "content"], &field)?;
        let find = |k: &str| {
            entries
                .iter()
                .find(|e| e.0 == k)
                .map(|e| &e.2)
                .ok_or_else(|| r.err(item.line, &format!("{field}.{k}"), "missing"))
        };
        let role = r.nonempty(find("role")?, &format!("{field}.role"))?;
        let content_value = find("content")?;
        let content_field = format!("{field}.content");
        let content = r.string(content_value, &content_field)?;
        let template = Template::parse(&content).map_err(|m| r.err(content_value.line, &content_field, m))?;
        messages.push((role, template));
    }
    let mut params = JsonMap::new();
    if let Some(v) = get("params") {
        for (key, line, value) in r.map(v, "params")? {
            let field = format!("params.{key}");
            match key.as_str() {
                "model" | "messages" => {
                    return Err(r.err(
                        *line,
                        &field,
                        format!("set by the endpoint's own `{key}`; it cannot be a param"),
                    ))
                }
                "stream" if value.value != Value::Bool(false) => {
                    return Err(r.err(*line, &field, "streamed answers are not read: leave it out or false"))
                }
                "n" if value.value != Value::Int(1) => {
                    return Err(r.err(*line, &field, "one answer per request: leave it out or 1"))
                }
                _ => {}
            }
            params.insert(key.clone(), to_json(r, value, &field)?);
        }
    }
    let verdict = match get("verdict") {
        None => VerdictRule::Content,
        Some(v) => {
            let text = r.string(v, "verdict")?;
            if text == "content" {
                VerdictRule::Content
            } else if let Some(pointer) = text.strip_prefix("json:") {
                if !(pointer.is_empty() || pointer.starts_with('/')) {
                    return Err(r.err(
                        v.line,
                        "verdict",
                        format!("{pointer:?} is not a JSON pointer (json:/verdict)"),
                    ));
                }
                VerdictRule::Json(pointer.to_owned())
            } else if let Some(pattern) = text.strip_prefix("regex:") {
                let re = regex::RegexBuilder::new(pattern)
                    .size_limit(1 << 20)
                    .build()
                    .map_err(|e| r.err(v.line, "verdict", format!("not a regular expression: {e}")))?;
                VerdictRule::Regex(re)
            } else {
                return Err(r.err(
                    v.line,
                    "verdict",
                    format!("{text:?}: expected content, json:/POINTER or regex:PATTERN"),
                ));
            }
        }
    };
    Ok(Chat {
        base_urls,
        model,
        api_key_env,
        headers,
        messages,
        params,
        verdict,
    })
}

/// A duration as `run --timeout` takes them: `500ms`, `60s`, `5m`, `1m 30s`.
pub fn parse_duration(text: &str) -> Option<Duration> {
    humantime::parse_duration(text.trim()).ok()
}

impl Endpoint {
    /// The endpoint's canonical identity: every field with its default filled in, secrets
    /// only by name. Its digest is the endpoint's; a change in any field that says how the model
    /// is asked changes it. What the records keep of the answers (`outputs`, `max_output_bytes`,
    /// an http endpoint's `output` pointer) is not part of it: the same model asked the same
    /// way, and endpoint files written before these fields keep their digest (and their runs
    /// resume).
    pub fn identity(&self) -> Json {
        let headers = |h: &[(String, String)]| {
            Json::Object(h.iter().map(|(k, v)| (k.clone(), Json::String(v.clone()))).collect())
        };
        let mut out = match &self.kind {
            Kind::Chat(c) => json!({
                "kind": "openai-chat",
                "base_url": c.base_urls,
                "model": c.model,
                "api_key_env": c.api_key_env,
                "headers": headers(&c.headers),
                "messages": c.messages.iter().map(|(role, t)| json!({"role": role, "content": t.source()})).collect::<Vec<_>>(),
                "params": c.params,
                "verdict": match &c.verdict {
                    VerdictRule::Content => "content".to_owned(),
                    VerdictRule::Json(p) => format!("json:{p}"),
                    VerdictRule::Regex(re) => format!("regex:{}", re.as_str()),
                },
            }),
            Kind::Http(h) => json!({
                "kind": "http",
                "url": h.url,
                "method": h.method,
                "headers": headers(&h.headers),
                "body": h.body,
                "verdict": h.verdict,
            }),
            Kind::Command(c) => json!({"kind": "command", "argv": c.argv}),
        };
        let o = out.as_object_mut().expect("an object");
        // The limit itself, so that `1m` and `60s` are one endpoint.
        o.insert("timeout_ms".into(), json!(self.timeout.map(|d| d.as_millis() as u64)));
        o.insert("retries".into(), json!(self.retries));
        o.insert(
            "concurrency".into(),
            match self.concurrency {
                Some(c) => json!({"initial": c.initial, "min": c.min, "max": c.max}),
                None => Json::Null,
            },
        );
        o.insert("max_response_bytes".into(), json!(self.max_response_bytes));
        o.insert("tls_ca".into(), json!(self.tls_ca));
        out
    }

    /// The secret values this endpoint sends (the API key, header values from `${ENV}`), read
    /// through `env`; each is redacted from every message and never written. Fails naming
    /// the variable that is not set.
    pub fn secrets(&self, env: &dyn Fn(&str) -> Option<String>) -> Result<Secrets, EndpointError> {
        let fail = |message: String| EndpointError {
            file: self.file.clone(),
            line: None,
            field: None,
            message,
        };
        let mut headers = Vec::new();
        let mut values = Vec::new();
        let (list, key_env) = match &self.kind {
            Kind::Chat(c) => (&c.headers[..], c.api_key_env.as_deref()),
            Kind::Http(h) => (&h.headers[..], None),
            Kind::Command(_) => (&[][..], None),
        };
        if let Some(name) = key_env {
            let key = env(name).filter(|k| !k.is_empty()).ok_or_else(|| {
                fail(format!(
                    "api_key_env: the environment variable {name} is not set (it holds the API key)"
                ))
            })?;
            if key.bytes().any(|b| b < 0x20 || b == 0x7f) {
                return Err(fail(format!("api_key_env: {name} holds a control character")));
            }
            values.push(key.clone());
            headers.push(("Authorization".to_owned(), format!("Bearer {key}")));
        }
        for (name, template) in list {
            let (value, used) = control::expand_env(template, env)
                .map_err(|var| fail(format!("headers.{name}: the environment variable {var} is not set")))?;
            if value.bytes().any(|b| b == b'\r' || b == b'\n' || b == 0) {
                return Err(fail(format!(
                    "headers.{name}: the value from the environment holds a line break"
                )));
            }
            if used {
                // The whole expanded value and each variable's value are secrets.
                for var in control::env_names(template).unwrap_or_default() {
                    // Shorter values are not taken for secrets: they would be redacted out
                    // of answers they happen to stand in (`PASS`).
                    if let Some(v) = env(&var).filter(|v| v.len() >= MIN_SECRET) {
                        values.push(v);
                    }
                }
            }
            headers.push((name.clone(), value));
        }
        // Each in the spellings a server may echo it in: percent-encoded (a redirect's
        // Location), JSON-escaped (`\/`, `\"`).
        let mut spelled = Vec::new();
        for v in &values {
            spelled.push(v.clone());
            let percent: String = url::form_urlencoded::byte_serialize(v.as_bytes()).collect();
            spelled.push(percent.replace('+', "%20"));
            spelled.push(percent);
            let json = serde_json::to_string(v).expect("a string serializes");
            let json = json[1..json.len() - 1].to_owned();
            spelled.push(json.replace('/', "\\/"));
            spelled.push(json);
        }
        let mut values = spelled;
        // Longest first; equal values next to each other, so that `dedup` drops them all.
        values.sort_by(|a, b| b.len().cmp(&a.len()).then_with(|| a.cmp(b)));
        values.dedup();
        Ok(Secrets { headers, values })
    }

    /// What a person reads as the model: `model at http://…` or the program.
    pub fn describe(&self) -> String {
        match &self.kind {
            Kind::Chat(c) => format!(
                "{} at {}{}",
                c.model,
                c.base_urls[0],
                if c.base_urls.len() > 1 {
                    format!(" (+{} replicas)", c.base_urls.len() - 1)
                } else {
                    String::new()
                }
            ),
            Kind::Http(h) => format!("{} {}", h.method, h.url),
            Kind::Command(c) => c.argv.join(" "),
        }
    }
}

/// The headers an endpoint sends with their secrets in, and the secret values to redact.
#[derive(Clone, Default)]
pub struct Secrets {
    /// Every header sent (name, value), the key's `Authorization` first.
    pub headers: Vec<(String, String)>,
    /// Secret values, longest first.
    pub values: Vec<String>,
}

impl std::fmt::Debug for Secrets {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "Secrets({} headers, {} values)",
            self.headers.len(),
            self.values.len()
        )
    }
}

impl Secrets {
    /// `text` with every secret value replaced by `[redacted]`.
    pub fn redact(&self, text: &str) -> String {
        control::redact(text, &self.values)
    }
}

#[cfg(test)]
mod tests;
