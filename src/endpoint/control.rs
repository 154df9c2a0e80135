//! The rules a careful client follows, as pure functions and state: what an HTTP status
//! means for a retry, how long to wait before the next try (`Retry-After`, exponential backoff
//! with jitter), the adaptive concurrency limit (additive increase, multiplicative decrease),
//! `${ENV}` in header values, and the redaction of secrets from any text written.

use std::time::{Duration, SystemTime};

/// What a failed try means.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Failure {
    /// The server is overloaded (429, 503) or did not answer in time: back off, cut the
    /// concurrency, try again.
    Overload,
    /// A passing fault (500, 502, 504, 408, a broken connection): try again.
    Transient,
    /// The request itself is refused (another 4xx, a redirect): trying again gives the same.
    Final,
}

/// What an HTTP status other than 2xx means.
pub fn classify(status: u16) -> Failure {
    match status {
        429 | 503 => Failure::Overload,
        408 | 500 | 502 | 504 => Failure::Transient,
        _ => Failure::Final,
    }
}

/// The longest `Retry-After` honoured; a server asking for more is waited for this long.
pub const MAX_RETRY_AFTER: Duration = Duration::from_secs(120);
/// The first backoff without `Retry-After`.
pub const BASE_BACKOFF: Duration = Duration::from_millis(500);
/// The longest backoff without `Retry-After`.
pub const MAX_BACKOFF: Duration = Duration::from_secs(30);

/// A `Retry-After` value: whole seconds, or an HTTP date (its distance from `now`, zero when
/// past). `None` when it is neither.
pub fn retry_after(value: &str, now: SystemTime) -> Option<Duration> {
    let v = value.trim();
    if let Ok(secs) = v.parse::<u64>() {
        return Some(Duration::from_secs(secs).min(MAX_RETRY_AFTER));
    }
    let when = httpdate::parse_http_date(v).ok()?;
    Some(when.duration_since(now).unwrap_or(Duration::ZERO).min(MAX_RETRY_AFTER))
}

/// How long to wait before try `attempt + 1` (`attempt` ≥ 1 tries made): the server's
/// `Retry-After` when it gave one (capped), else exponential backoff from [`BASE_BACKOFF`]
/// doubling up to [`MAX_BACKOFF`], with "equal jitter" (half fixed, half random: `jitter` in
/// [0, 1)), so that clients that failed together do not retry together.
pub fn backoff(attempt: u32, server: Option<Duration>, jitter: f64) -> Duration {
    // Within [0, 1], NaN as 0 (`clamp` keeps a NaN, which `Duration` refuses with a panic).
    let jitter = if jitter.is_nan() { 0.0 } else { jitter.clamp(0.0, 1.0) };
    if let Some(d) = server {
        // A little jitter on top, so a crowd told "1 second" does not come back in one burst.
        return d + Duration::from_secs_f64(0.1 * jitter);
    }
    let exp = BASE_BACKOFF.saturating_mul(1u32 << attempt.saturating_sub(1).min(16));
    let d = exp.min(MAX_BACKOFF);
    d / 2 + d.mul_f64(0.5 * jitter)
}

/// The adaptive concurrency limit of one endpoint: it grows by about one request per round
/// trip of the whole window while answers come back (each success adds `1/limit`), and halves
/// on an overload (429, 503, a timeout), staying between `min` and `max`. An overload seen by
/// a request sent before the last cut does not cut again: one burst of 429s is one signal.
#[derive(Debug, Clone)]
pub struct Limiter {
    limit: f64,
    min: f64,
    max: f64,
    /// The number of the first request sent after the last cut.
    cut_at: u64,
    /// Requests sent so far (numbers handed out by [`Limiter::sent`]).
    sent: u64,
    /// Cuts made.
    pub cuts: u64,
}

impl Limiter {
    /// A limit starting at `initial`, within `min..=max`.
    pub fn new(initial: usize, min: usize, max: usize) -> Limiter {
        let min = min.max(1) as f64;
        let max = (max as f64).max(min);
        Limiter {
            limit: (initial as f64).clamp(min, max),
            min,
            max,
            cut_at: 0,
            sent: 0,
            cuts: 0,
        }
    }

    /// Requests that may be in flight now.
    pub fn permits(&self) -> usize {
        self.limit.floor() as usize
    }

    /// A request is sent: its number, to give back with its outcome.
    pub fn sent(&mut self) -> u64 {
        self.sent += 1;
        self.sent
    }

    /// An answer came back.
    pub fn success(&mut self) {
        self.limit = (self.limit + 1.0 / self.limit).min(self.max);
    }

    /// Request `number` met an overload. Returns whether the limit was cut.
    pub fn overload(&mut self, number: u64) -> bool {
        if number < self.cut_at {
            return false;
        }
        self.limit = (self.limit / 2.0).max(self.min);
        self.cut_at = self.sent + 1;
        self.cuts += 1;
        true
    }
}

/// The names of the `${NAME}` variables in a header value; refuses a `${` that is not closed
/// or whose name is not a variable name.
pub fn env_names(template: &str) -> Result<Vec<String>, String> {
    let mut names = Vec::new();
    let mut rest = template;
    while let Some(open) = rest.find("${") {
        let after = &rest[open + 2..];
        let close = after.find('}').ok_or_else(|| "`${` is not closed by `}`".to_owned())?;
        let name = &after[..close];
        if name.is_empty()
            || !name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_')
            || name.as_bytes()[0].is_ascii_digit()
        {
            return Err(format!("${{{name}}} is not an environment variable's name"));
        }
        names.push(name.to_owned());
        rest = &after[close + 1..];
    }
    Ok(names)
}

/// The header value with each `${NAME}` replaced by the variable's value, and whether any
/// was; `Err(NAME)` for a variable that is not set.
pub fn expand_env(template: &str, env: &dyn Fn(&str) -> Option<String>) -> Result<(String, bool), String> {
    let mut out = String::new();
    let mut rest = template;
    let mut used = false;
    while let Some(open) = rest.find("${") {
        out.push_str(&rest[..open]);
        let after = &rest[open + 2..];
        let close = after.find('}').expect("checked when the target was read");
        let name = &after[..close];
        out.push_str(&env(name).ok_or_else(|| name.to_owned())?);
        used = true;
        rest = &after[close + 1..];
    }
    out.push_str(rest);
    Ok((out, used))
}

/// `text` with every occurrence of each secret replaced by `[redacted]`. The occurrences are
/// found in `text` as given and those that overlap go as one, so that no part of a secret is
/// left (a secret inside another, two that overlap, one that overlaps itself).
pub fn redact(text: &str, secrets: &[String]) -> String {
    let mut spans: Vec<(usize, usize)> = Vec::new();
    for s in secrets.iter().filter(|s| !s.is_empty()) {
        let step = s.chars().next().map_or(1, char::len_utf8);
        let mut from = 0;
        while let Some(at) = text[from..].find(s.as_str()) {
            spans.push((from + at, from + at + s.len()));
            from += at + step;
        }
    }
    if spans.is_empty() {
        return text.to_owned();
    }
    spans.sort_unstable();
    let mut out = String::with_capacity(text.len());
    let mut done = 0;
    let mut i = 0;
    while i < spans.len() {
        let (start, mut end) = spans[i];
        i += 1;
        while i < spans.len() && spans[i].0 < end {
            end = end.max(spans[i].1);
            i += 1;
        }
        out.push_str(&text[done..start]);
        out.push_str("[redacted]");
        done = end;
    }
    out.push_str(&text[done..]);
    out
}
