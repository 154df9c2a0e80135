//! An endpoint's requests (`kind: openai-chat` and `http`): reqwest on a tokio runtime
//! (HTTP/1.1 keep-alive, HTTP/2 when a TLS server offers it by ALPN, rustls with the system's
//! roots and the endpoint's `tls_ca`, redirects never followed). Each case is one task that
//! tries up to `retries + 1` times, waiting `Retry-After` or an exponential backoff with jitter
//! between tries, and reports to the run's main thread: an overload (for the adaptive limit),
//! a retry, and at last the case's outcome. The limit itself is the main thread's.

use super::cache::{Cache, Entry};
use super::msg::{Done, Msg, Outcome, Request};
use crate::endpoint::control::{backoff, classify, retry_after, Failure};
use crate::endpoint::response::{cut, error_text, Usage};
use crate::endpoint::{Endpoint, Kind, Secrets};
use crate::native::http::chain;
use std::sync::mpsc::Sender;
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};

/// The most of an error response's body read for its message.
const MAX_ERROR_BODY: u64 = 64 << 10;

/// One endpoint's client.
pub struct Client {
    target: Arc<Endpoint>,
    secrets: Arc<Secrets>,
    client: reqwest::Client,
    urls: Vec<String>,
    method: reqwest::Method,
    cache: Option<Cache>,
}

impl Client {
    /// The client of an endpoint; `ca` is the PEM of the endpoint's `tls_ca`.
    pub fn new(
        target: Arc<Endpoint>,
        secrets: Secrets,
        ca: Option<Vec<u8>>,
        cache: Option<Cache>,
    ) -> anyhow::Result<Client> {
        let (urls, method) = match &target.kind {
            Kind::Chat(c) => (
                c.base_urls.iter().map(|u| format!("{u}/chat/completions")).collect(),
                reqwest::Method::POST,
            ),
            Kind::Http(h) => (
                vec![h.url.clone()],
                reqwest::Method::from_bytes(h.method.as_bytes()).expect("a method checked on reading"),
            ),
            Kind::Command(_) => unreachable!("a command target has workers"),
        };
        let max = target.concurrency.map_or(64, |c| c.max);
        let settings = crate::native::http::ClientSettings {
            ca: ca.map(|pem| (pem, format!("{}: tls_ca", target.file))),
            insecure_tls: false,
            connect_timeout: Some(
                target
                    .timeout
                    .unwrap_or(Duration::from_secs(60))
                    .min(Duration::from_secs(30)),
            ),
            timeout: target.timeout,
        };
        let builder = crate::native::http::builder(&settings)
            .map_err(|e| anyhow::anyhow!(e))?
            .pool_max_idle_per_host(max)
            // Under the 5 s keep-alive of uvicorn (llama.cpp's Python server, vLLM's and many others), so a
            // pooled connection is not reused just as the server closes it.
            .pool_idle_timeout(Duration::from_secs(4));
        let client = builder
            .build()
            .map_err(|e| anyhow::anyhow!("{}: cannot make an HTTP client: {}", target.file, chain(&e)))?;
        Ok(Client {
            target,
            secrets: Arc::new(secrets),
            client,
            urls,
            method,
            cache,
        })
    }

    /// The request for a case and its cache key.
    pub fn request(&self, case: &serde_json::Map<String, serde_json::Value>, line: &[u8]) -> Request {
        let body = self.target.body(case);
        let key = self.target.cache_key(body.as_ref(), line, 0);
        Request {
            body: body.map(|b| serde_json::to_vec(&b).expect("JSON serializes")),
            key,
        }
    }

    /// The cached answer of a request, read as a fresh one would be. An entry that holds a
    /// secret this endpoint sends (a cache folder may be shared, and its keys hold no secret)
    /// is not read: the case is asked again, and its answer checked as any.
    pub fn cached(&self, position: usize, request: &Request) -> Option<Done> {
        let entry = self.cache.as_ref()?.get(&request.key)?;
        if self.holds_secret(&entry.body) {
            return None;
        }
        Some(self.outcome(position, &entry.body, entry.latency_ms, entry.attempts, true))
    }

    fn outcome(&self, position: usize, body: &[u8], latency_ms: f64, attempts: u32, cached: bool) -> Done {
        let (outcome, usage) = match self.target.read_reply(body) {
            Ok(reply) => (Outcome::Verdict(reply.verdict), reply.usage),
            Err(e) => (Outcome::Error(self.scrub(&e)), Usage::default()),
        };
        Done {
            position,
            outcome,
            latency_ms: Some(latency_ms),
            usage,
            attempts: Some(attempts),
            metrics: None,
            output: self.target.answered(body),
            cached,
        }
    }

    /// Whether a body holds a secret this endpoint sends, in any spelling a server may use: as
    /// sent, percent-encoded, JSON-escaped (`\/`, `\u0073`…). Such an answer is neither read
    /// nor cached: the secret would reach the record or the cache's files.
    fn holds_secret(&self, body: &[u8]) -> bool {
        if self.secrets.values.is_empty() {
            return false;
        }
        let text = String::from_utf8_lossy(body);
        if self.secrets.values.iter().any(|s| text.contains(s.as_str())) {
            return true;
        }
        // JSON escapes decoded: the values' strings as they are.
        match serde_json::from_slice::<serde_json::Value>(body) {
            Ok(v) => {
                let decoded = v.to_string();
                self.secrets.values.iter().any(|s| decoded.contains(s.as_str()))
            }
            Err(_) => false,
        }
    }

    /// A server's text made safe to write: every secret redacted (the whole text first, then
    /// cut, so that a secret is never cut in two before it is found).
    fn scrub(&self, text: &str) -> String {
        cut(&self.secrets.redact(text))
    }

    /// Sends one try of a case's request on `runtime` (try `attempt`, numbered `number` by the
    /// limiter); what it gave goes to `events`: the case's outcome, or its next try, parked by
    /// the run (holding no slot) until its wait is over.
    #[allow(clippy::too_many_arguments)]
    pub fn send(
        self: &Arc<Self>,
        runtime: &tokio::runtime::Handle,
        side: usize,
        number: u64,
        position: usize,
        request: Request,
        attempt: u32,
        events: Sender<Msg>,
    ) {
        let me = Arc::clone(self);
        // Replicas in turn.
        let url = self.urls[number as usize % self.urls.len()].clone();
        runtime.spawn(async move {
            let msg = me.try_once(side, number, position, url, request, attempt).await;
            let _ = events.send(msg);
        });
    }

    async fn try_once(
        &self,
        side: usize,
        number: u64,
        position: usize,
        url: String,
        request: Request,
        attempt: u32,
    ) -> Msg {
        let t = &self.target;
        let failed = |error: String, overload: bool| Msg::Done {
            side,
            number,
            overload,
            done: Done {
                position,
                outcome: Outcome::Error(error),
                latency_ms: None,
                usage: Usage::default(),
                attempts: Some(attempt),
                metrics: None,
                output: None,
                cached: false,
            },
        };
        let started = Instant::now();
        let mut req = self.client.request(self.method.clone(), &url);
        if let Some(body) = &request.body {
            req = req
                .header(reqwest::header::CONTENT_TYPE, "application/json")
                .body(body.clone());
        }
        req = req.header(reqwest::header::ACCEPT, "application/json");
        for (name, value) in &self.secrets.headers {
            req = req.header(name.as_str(), value.as_str());
        }
        let (failure, message, wait) = match req.send().await {
            Err(e) if e.is_timeout() => (Failure::Overload, format!("no answer within {}", t.timeout_text), None),
            Err(e) => (
                Failure::Transient,
                self.scrub(&format!("cannot reach {url}: {}", chain(&e))),
                None,
            ),
            Ok(response) => {
                let status = response.status();
                if status.is_success() {
                    match read_body(response, t.max_response_bytes).await {
                        Ok(body) => {
                            let ms = started.elapsed().as_secs_f64() * 1000.0;
                            if self.holds_secret(&body) {
                                return failed(
                                    "the answer holds a secret this target sends (its API key, or a header's value from the environment): neither read nor cached".to_owned(),
                                    false,
                                );
                            }
                            let done = self.outcome(position, &body, ms, attempt, false);
                            // Only an answer that gives a verdict is kept: an error is asked again.
                            if let (Some(cache), Outcome::Verdict(_)) = (&self.cache, &done.outcome) {
                                let entry = Entry {
                                    latency_ms: ms,
                                    attempts: attempt,
                                    body,
                                };
                                if let Err(e) = cache.put(&request.key, &entry) {
                                    return Msg::Cached {
                                        side,
                                        number,
                                        done,
                                        note: format!("cannot write the cache: {e}"),
                                    };
                                }
                            }
                            return Msg::Done {
                                side,
                                number,
                                overload: false,
                                done,
                            };
                        }
                        Err(BodyError::TooLarge) => {
                            return failed(
                                format!(
                                    "the response is larger than max_response_bytes ({} bytes)",
                                    t.max_response_bytes
                                ),
                                false,
                            )
                        }
                        Err(BodyError::Timeout) => (
                            Failure::Overload,
                            format!("the response did not end within {}", t.timeout_text),
                            None,
                        ),
                        Err(BodyError::Broken(e)) => (
                            Failure::Transient,
                            self.scrub(&format!("the response was cut off: {e}")),
                            None,
                        ),
                    }
                } else if status.is_redirection() {
                    let to = response
                        .headers()
                        .get(reqwest::header::LOCATION)
                        .map(|v| String::from_utf8_lossy(v.as_bytes()).into_owned())
                        .unwrap_or_else(|| "nowhere".to_owned());
                    return failed(
                        format!(
                            "HTTP {}: a redirect to {:?}, not followed (give the final URL in the endpoint file)",
                            status.as_u16(),
                            self.scrub(&to)
                        ),
                        false,
                    );
                } else {
                    let wait = response
                        .headers()
                        .get(reqwest::header::RETRY_AFTER)
                        .and_then(|v| v.to_str().ok())
                        .and_then(|v| retry_after(v, SystemTime::now()));
                    let (body, whole) = read_prefix(response, MAX_ERROR_BODY).await;
                    let message = format!("HTTP {}: {}", status.as_u16(), self.scrub(&error_text(&body, whole)));
                    match classify(status.as_u16()) {
                        Failure::Final => return failed(message, false),
                        f => (f, message, wait),
                    }
                }
            }
        };
        let overload = failure == Failure::Overload;
        if attempt > t.retries {
            let tries = if attempt == 1 {
                "1 attempt".to_owned()
            } else {
                format!("{attempt} attempts")
            };
            return failed(format!("{message} ({tries})"), overload);
        }
        let mut jitter = [0u8; 8];
        let _ = getrandom::fill(&mut jitter);
        let jitter = (u64::from_le_bytes(jitter) >> 11) as f64 / (1u64 << 53) as f64;
        Msg::Again {
            side,
            number,
            overload,
            position,
            request,
            attempt: attempt + 1,
            wait: backoff(attempt, wait, jitter),
        }
    }
}

enum BodyError {
    TooLarge,
    Timeout,
    Broken(String),
}

/// Reads a body of at most `max` bytes.
async fn read_body(mut response: reqwest::Response, max: u64) -> Result<Vec<u8>, BodyError> {
    if response.content_length().is_some_and(|n| n > max) {
        return Err(BodyError::TooLarge);
    }
    let mut out = Vec::new();
    loop {
        match response.chunk().await {
            Ok(Some(chunk)) => {
                if (out.len() + chunk.len()) as u64 > max {
                    return Err(BodyError::TooLarge);
                }
                out.extend_from_slice(&chunk);
            }
            Ok(None) => return Ok(out),
            Err(e) if e.is_timeout() => return Err(BodyError::Timeout),
            Err(e) => return Err(BodyError::Broken(chain(&e))),
        }
    }
}

/// The first `max` bytes of a body (all of it when shorter, then `true`): an error body's
/// message is read from its beginning however long it is. A body that breaks off or times out
/// gives what came before.
async fn read_prefix(mut response: reqwest::Response, max: u64) -> (Vec<u8>, bool) {
    let max = max as usize;
    let mut out = Vec::new();
    loop {
        match response.chunk().await {
            Ok(Some(chunk)) => {
                if out.len() + chunk.len() > max {
                    out.extend_from_slice(&chunk[..max - out.len()]);
                    return (out, false);
                }
                out.extend_from_slice(&chunk);
            }
            Ok(None) => return (out, true),
            Err(_) => return (out, false),
        }
    }
}
