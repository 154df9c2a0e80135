//! What is sent for a case: the message and body templates with the test case's fields put in
//! (`{{input_text}}`, `{{pipeline_id}}`, `{{template_id}}`, `{{expected_stage_outputs}}`), the
//! chat request body, and the cache key of a request (never a secret in it).

use super::{Endpoint, Kind};
use serde_json::{Map as JsonMap, Value as Json};
use sha2::{Digest, Sha256};

/// The test-case fields a template may use. `expected_verdict` is deliberately not one: the
/// model must not be told the answer it is scored against.
pub const FIELDS: [&str; 4] = ["input_text", "pipeline_id", "template_id", "expected_stage_outputs"];

/// The test-case fields never sent to a model (an http endpoint's default body leaves them out).
pub const HIDDEN: [&str; 2] = ["expected_verdict", "episode_reward"];

/// A piece of a template.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Part {
    Text(String),
    Field(&'static str),
}

/// A string with `{{field}}` placeholders.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Template {
    source: String,
    parts: Vec<Part>,
}

impl Template {
    /// Parses a template; an unknown or unclosed placeholder is refused.
    pub fn parse(source: &str) -> Result<Template, String> {
        let mut parts = Vec::new();
        let mut rest = source;
        while let Some(open) = rest.find("{{") {
            if open > 0 {
                parts.push(Part::Text(rest[..open].to_owned()));
            }
            let after = &rest[open + 2..];
            let close = after.find("}}").ok_or_else(|| {
                format!(
                    "`{{{{` at byte {} is not closed by `}}}}`",
                    source.len() - rest.len() + open
                )
            })?;
            let name = after[..close].trim();
            let field = FIELDS.iter().find(|f| **f == name).ok_or_else(|| {
                if name == "expected_verdict" {
                    "{{expected_verdict}} is not a placeholder: the model must not be sent the answer it is scored against".to_owned()
                } else {
                    format!("{{{{{name}}}}} is not a placeholder (one of: {})", FIELDS.map(|f| format!("{{{{{f}}}}}")).join(", "))
                }
            })?;
            parts.push(Part::Field(field));
            rest = &after[close + 2..];
        }
        if !rest.is_empty() {
            parts.push(Part::Text(rest.to_owned()));
        }
        Ok(Template {
            source: source.to_owned(),
            parts,
        })
    }

    /// The template as written.
    pub fn source(&self) -> &str {
        &self.source
    }

    /// The one field the template is, when it is nothing but one placeholder.
    fn alone(&self) -> Option<&'static str> {
        match self.parts.as_slice() {
            [Part::Field(f)] => Some(f),
            _ => None,
        }
    }

    /// The text with the case's fields put in: a string field as it is, any other JSON value
    /// as its compact JSON, a field the case lacks as `null`.
    pub fn render(&self, case: &JsonMap<String, Json>) -> String {
        let mut out = String::with_capacity(self.source.len());
        for part in &self.parts {
            match part {
                Part::Text(t) => out.push_str(t),
                Part::Field(f) => match case.get(*f) {
                    Some(Json::String(s)) => out.push_str(s),
                    Some(v) => out.push_str(&serde_json::to_string(v).expect("JSON serializes")),
                    None => out.push_str("null"),
                },
            }
        }
        out
    }
}

/// Checks every string of an HTTP body template; the error names the path (`.a[2]`).
pub fn check_body_template(body: &Json) -> Result<(), (String, String)> {
    fn walk(v: &Json, path: &mut String) -> Result<(), (String, String)> {
        match v {
            Json::String(s) => Template::parse(s).map(|_| ()).map_err(|m| (path.clone(), m)),
            Json::Array(items) => {
                for (i, item) in items.iter().enumerate() {
                    let len = path.len();
                    path.push_str(&format!("[{i}]"));
                    walk(item, path)?;
                    path.truncate(len);
                }
                Ok(())
            }
            Json::Object(map) => {
                for (k, item) in map {
                    let len = path.len();
                    path.push_str(&format!(".{k}"));
                    walk(item, path)?;
                    path.truncate(len);
                }
                Ok(())
            }
            _ => Ok(()),
        }
    }
    walk(body, &mut String::new())
}

/// The body template with the case put in: a string that is one placeholder alone becomes the
/// field's JSON value; other strings get the fields' text.
fn render_body(template: &Json, case: &JsonMap<String, Json>) -> Json {
    match template {
        Json::String(s) => {
            let t = Template::parse(s).expect("checked when the target was read");
            match t.alone() {
                Some(f) => case.get(f).cloned().unwrap_or(Json::Null),
                None => Json::String(t.render(case)),
            }
        }
        Json::Array(items) => Json::Array(items.iter().map(|i| render_body(i, case)).collect()),
        Json::Object(map) => Json::Object(map.iter().map(|(k, v)| (k.clone(), render_body(v, case))).collect()),
        other => other.clone(),
    }
}

/// A test-set line read as the object its fields come from.
pub fn case_fields(line: &[u8]) -> Result<JsonMap<String, Json>, String> {
    match serde_json::from_slice::<Json>(line) {
        Ok(Json::Object(map)) => Ok(map),
        Ok(_) => Err("the test case is not a JSON object".into()),
        Err(e) => Err(format!("the test case is not JSON: {e}")),
    }
}

impl Endpoint {
    /// The request body for a case (`None` for a command endpoint, which is sent the line).
    pub fn body(&self, case: &JsonMap<String, Json>) -> Option<Json> {
        match &self.kind {
            Kind::Chat(c) => {
                let mut body = JsonMap::new();
                body.insert("model".into(), Json::String(c.model.clone()));
                body.insert(
                    "messages".into(),
                    Json::Array(
                        c.messages
                            .iter()
                            .map(|(role, t)| {
                                let mut m = JsonMap::new();
                                m.insert("role".into(), Json::String(role.clone()));
                                m.insert("content".into(), Json::String(t.render(case)));
                                Json::Object(m)
                            })
                            .collect(),
                    ),
                );
                for (k, v) in &c.params {
                    body.insert(k.clone(), v.clone());
                }
                Some(Json::Object(body))
            }
            Kind::Http(h) => match &h.body {
                Some(template) => Some(render_body(template, case)),
                // The case without what it is scored against: the model must not be sent its
                // expected verdict (nor the episode's reward).
                None => Some(Json::Object(
                    case.iter()
                        .filter(|(k, _)| !HIDDEN.contains(&k.as_str()))
                        .map(|(k, v)| (k.clone(), v.clone()))
                        .collect(),
                )),
            },
            Kind::Command(_) => None,
        }
    }

    /// The cache key of one request: the hex SHA-256 of what identifies the answer (the
    /// endpoint, the method, the header templates as written, the body sent, the repeat
    /// index) and of nothing secret. Replicas are one endpoint: their order does not count.
    /// For a command endpoint, the program and the case's line.
    pub fn cache_key(&self, body: Option<&Json>, case_line: &[u8], repeat: u32) -> String {
        let identity = match &self.kind {
            Kind::Chat(c) => {
                let mut urls = c.base_urls.clone();
                urls.sort();
                // The key's variable by name: two endpoints asking with two keys (a gateway's
                // virtual keys route by key) never share answers.
                serde_json::json!({"kind": "openai-chat", "endpoint": urls, "api_key_env": c.api_key_env, "headers": c.headers, "body": body})
            }
            Kind::Http(h) => {
                serde_json::json!({"kind": "http", "endpoint": h.url, "method": h.method, "headers": h.headers, "body": body})
            }
            Kind::Command(c) => serde_json::json!({
                "kind": "command",
                "argv": c.argv,
                "case": String::from_utf8_lossy(case_line),
            }),
        };
        let mut hasher = Sha256::new();
        hasher.update(b"deploy-gate cache v1\n");
        hasher.update(serde_json::to_string(&identity).expect("JSON serializes").as_bytes());
        hasher.update(format!("\nrepeat {repeat}").as_bytes());
        hex::encode(hasher.finalize())
    }
}
