//! What an answer says: the verdict (as the JSON text a verdict record holds) and the token
//! usage, read from a response body; or why the body gives no verdict, which makes the case
//! errored, never passed.

use super::{Endpoint, Kind, VerdictRule};
use crate::run::records::Answered;
use serde_json::Value as Json;

/// Tokens as the server reported them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Usage {
    /// `prompt_tokens`.
    pub prompt_tokens: Option<u64>,
    /// `completion_tokens`.
    pub completion_tokens: Option<u64>,
}

impl Usage {
    /// Whether the server reported neither.
    pub fn is_empty(&self) -> bool {
        self.prompt_tokens.is_none() && self.completion_tokens.is_none()
    }
}

/// A verdict read from an answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Reply {
    /// The verdict as JSON text (a string's quotes included).
    pub verdict: String,
    /// The usage the body reported.
    pub usage: Usage,
}

/// The longest piece of a server's text put into an error record.
pub const MAX_MESSAGE: usize = 300;

/// `text` cut to [`MAX_MESSAGE`] characters (on a character boundary), control characters as
/// spaces.
pub fn cut(text: &str) -> String {
    let mut out: String = text
        .chars()
        .take(MAX_MESSAGE)
        .map(|c| if c.is_control() { ' ' } else { c })
        .collect();
    if text.chars().count() > MAX_MESSAGE {
        out.push('…');
    }
    out.trim().to_owned()
}

fn usage_of(body: &Json) -> Usage {
    let n = |k: &str| body.pointer(&format!("/usage/{k}")).and_then(Json::as_u64);
    Usage {
        prompt_tokens: n("prompt_tokens"),
        completion_tokens: n("completion_tokens"),
    }
}

/// A JSON document that may stand inside a Markdown code fence (```json … ```), as models
/// often write it.
fn unfenced(text: &str) -> &str {
    let t = text.trim();
    if let Some(rest) = t.strip_prefix("```") {
        if let Some(inner) = rest.strip_suffix("```") {
            let inner = inner.strip_prefix("json").unwrap_or(inner);
            return inner.trim();
        }
    }
    t
}

/// The message a non-success body carries (`error.message`, `message`, `detail`, `error`), or
/// its text, whole (to be redacted before it is [`cut`]).
pub fn server_text(body: &[u8]) -> String {
    if let Ok(v) = serde_json::from_slice::<Json>(body) {
        for p in ["/error/message", "/message", "/detail", "/error"] {
            match v.pointer(p) {
                Some(Json::String(s)) => return s.clone(),
                Some(other @ (Json::Object(_) | Json::Array(_))) if p == "/detail" => return other.to_string(),
                _ => {}
            }
        }
    }
    String::from_utf8_lossy(body).into_owned()
}

/// [`server_text`], cut.
pub fn server_message(body: &[u8]) -> String {
    cut(&server_text(body))
}

/// The beginning of a body that was longer than a client read: `prefix` cut back to its last
/// whole UTF-8 character (a multi-byte character torn by the bound is dropped, not turned
/// into `�`); invalid bytes before that are read as [`String::from_utf8_lossy`] reads them.
pub fn body_prefix(prefix: &[u8]) -> &[u8] {
    // The last character's first byte is at most 3 bytes from the end (a 4-byte sequence
    // torn after its third byte); its length says whether it is all there.
    let n = prefix.len();
    for back in 1..=n.min(4) {
        let length = match prefix[n - back] {
            0x80..=0xBF => continue,
            0xC2..=0xDF => 2,
            0xE0..=0xEF => 3,
            0xF0..=0xF4 => 4,
            _ => 1,
        };
        return if length > back && std::str::from_utf8(&prefix[n - back..]).is_err_and(|e| e.error_len().is_none()) {
            &prefix[..n - back]
        } else {
            prefix
        };
    }
    prefix
}

/// The text of an error body of which only `prefix` was read (`whole` when that is all of
/// it): its message as [`server_text`] finds it in a whole body; of a longer one, its
/// beginning as text, cut on a character boundary ([`body_prefix`]). To be redacted, then
/// [`cut`].
pub fn error_text(prefix: &[u8], whole: bool) -> String {
    if whole {
        server_text(prefix)
    } else {
        String::from_utf8_lossy(body_prefix(prefix)).into_owned()
    }
}

impl Endpoint {
    /// What the model answered in a success body, as its record keeps it (`output`), whether
    /// or not a verdict could be read from it (an answer the verdict rule cannot read is kept
    /// whole, so that the reviewer sees why):
    /// - `openai-chat`: the assistant message's text (`choices[0].message.content`), or the
    ///   message object itself when it also carries `tool_calls`, `reasoning_content` or a
    ///   `refusal`, or has no text; the whole response when it has no `choices[0].message`;
    /// - `http`: the value at the endpoint's `output` pointer, or the whole response (also when
    ///   the pointer finds nothing);
    /// - a body that is not JSON: its text.
    ///
    /// `None` when the endpoint keeps no outputs (`outputs: false`) or is a command (its
    /// workers send their own `output`).
    pub fn answered(&self, body: &[u8]) -> Option<Answered> {
        if !self.outputs || matches!(self.kind, Kind::Command(_)) {
            return None;
        }
        let Ok(json) = serde_json::from_slice::<Json>(body) else {
            return Some(Answered::Text(String::from_utf8_lossy(body).into_owned()));
        };
        let value = match &self.kind {
            Kind::Chat(_) => match json.pointer("/choices/0/message") {
                Some(message) => {
                    let present = |k: &str| message.get(k).is_some_and(|v| !v.is_null());
                    match message.get("content") {
                        Some(Json::String(text))
                            if !present("tool_calls") && !present("reasoning_content") && !present("refusal") =>
                        {
                            Json::String(text.clone())
                        }
                        _ => message.clone(),
                    }
                }
                None => json,
            },
            Kind::Http(h) => match h.output.as_deref().and_then(|p| json.pointer(p)) {
                Some(v) => v.clone(),
                None => json,
            },
            Kind::Command(_) => return None,
        };
        Some(Answered::Value(value))
    }

    /// Reads a success body into a verdict; the error says what was wrong with it.
    pub fn read_reply(&self, body: &[u8]) -> Result<Reply, String> {
        let json: Json = serde_json::from_slice(body).map_err(|e| {
            let start = String::from_utf8_lossy(&body[..body.len().min(80)]).into_owned();
            format!("the response is not JSON ({e}); it starts {:?}", cut(&start))
        })?;
        let usage = usage_of(&json);
        match &self.kind {
            Kind::Chat(c) => {
                let choice = json.pointer("/choices/0").ok_or_else(|| match json.get("error") {
                    Some(_) => format!("the server answered an error: {}", server_message(body)),
                    None => "the response has no choices[0]".to_owned(),
                })?;
                let content = match choice.pointer("/message/content") {
                    Some(Json::String(s)) => s.as_str(),
                    Some(Json::Null) | None => {
                        let reason = choice
                            .get("finish_reason")
                            .and_then(Json::as_str)
                            .map(|r| format!(" (finish_reason {r:?})"))
                            .unwrap_or_default();
                        return Err(format!("the answer has no text in choices[0].message.content{reason}"));
                    }
                    Some(other) => {
                        let kind = match other {
                            Json::Array(_) => "a list",
                            Json::Object(_) => "an object",
                            _ => "a scalar",
                        };
                        return Err(format!("choices[0].message.content is not text but {kind}"));
                    }
                };
                let verdict = match &c.verdict {
                    VerdictRule::Content => serde_json::to_string(content.trim()).expect("a string serializes"),
                    VerdictRule::Json(pointer) => {
                        let inner: Json = serde_json::from_str(unfenced(content))
                            .map_err(|e| format!("the answer is not JSON ({e}): {:?}", cut(content)))?;
                        let v = inner
                            .pointer(pointer)
                            .ok_or_else(|| format!("the answer's JSON has nothing at {pointer}: {}", cut(content)))?;
                        serde_json::to_string(v).expect("JSON serializes")
                    }
                    VerdictRule::Regex(re) => {
                        let caps = re.captures(content).ok_or_else(|| {
                            format!("the answer does not match regex {}: {:?}", re.as_str(), cut(content))
                        })?;
                        let m = caps.get(1).or_else(|| caps.get(0)).expect("a match has group 0");
                        serde_json::to_string(m.as_str()).expect("a string serializes")
                    }
                };
                Ok(Reply { verdict, usage })
            }
            Kind::Http(h) => {
                let v = json
                    .pointer(&h.verdict)
                    .ok_or_else(|| format!("the response has nothing at {}: {}", h.verdict, server_message(body)))?;
                Ok(Reply {
                    verdict: serde_json::to_string(v).expect("JSON serializes"),
                    usage,
                })
            }
            Kind::Command(_) => Err("a command target has no HTTP reply".into()),
        }
    }
}
