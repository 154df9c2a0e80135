//! Unit tests of `run` targets: reading the file (and every refusal naming file, line and
//! field), the digest, secrets, templates, cache keys, replies and the client's rules.

use super::control::{self, backoff, classify, env_names, expand_env, retry_after, Failure, Limiter};
use super::request::{case_fields, check_body_template, Template, FIELDS};
use super::response::{body_prefix, cut, error_text, server_message, Usage, MAX_MESSAGE};
use super::*;
use proptest::prelude::*;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

// ---------------------------------------------------------------------------------------------
// Helpers

const FILE: &str = "models/target.yaml";

fn read(text: &str) -> Result<Endpoint, EndpointError> {
    read_endpoint(FILE, text.as_bytes())
}

fn ok(text: &str) -> Endpoint {
    read(text).unwrap_or_else(|e| panic!("refused: {e}\n--- text ---\n{text}"))
}

fn refused(text: &str) -> EndpointError {
    match read(text) {
        Ok(t) => panic!("accepted: {:?}\n--- text ---\n{text}", t.identity()),
        Err(e) => {
            assert_eq!(e.file, FILE, "{e}");
            e
        }
    }
}

/// Refused at `line`, naming `field`, with a message holding `needle`.
fn refused_at(text: &str, line: usize, field: &str, needle: &str) -> EndpointError {
    let e = refused(text);
    assert_eq!(e.line, Some(line), "line of: {e}\n--- text ---\n{text}");
    assert_eq!(e.field.as_deref(), Some(field), "field of: {e}\n--- text ---\n{text}");
    assert!(
        e.message.contains(needle),
        "{e:?} does not hold {needle:?}\n--- text ---\n{text}"
    );
    let shown = e.to_string();
    let prefix = format!("{FILE} line {line}: {field}: ");
    assert!(shown.starts_with(&prefix), "{shown:?} does not start with {prefix:?}");
    e
}

fn chat(t: &Endpoint) -> &Chat {
    match &t.kind {
        Kind::Chat(c) => c,
        other => panic!("not a chat target: {other:?}"),
    }
}

fn http(t: &Endpoint) -> &Http {
    match &t.kind {
        Kind::Http(h) => h,
        other => panic!("not an http target: {other:?}"),
    }
}

fn command(t: &Endpoint) -> &Command {
    match &t.kind {
        Kind::Command(c) => c,
        other => panic!("not a command target: {other:?}"),
    }
}

fn env_of(pairs: &[(&str, &str)]) -> impl Fn(&str) -> Option<String> {
    let pairs: Vec<(String, String)> = pairs.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
    move |name: &str| pairs.iter().find(|(k, _)| k == name).map(|(_, v)| v.clone())
}

fn no_env(_: &str) -> Option<String> {
    None
}

fn case(v: Json) -> JsonMap<String, Json> {
    match v {
        Json::Object(m) => m,
        other => panic!("not an object: {other}"),
    }
}

fn sample_case() -> JsonMap<String, Json> {
    case(json!({
        "input_text": "deploy build 42 to prod",
        "pipeline_id": 17,
        "template_id": "tpl-9",
        "expected_stage_outputs": {"lint": "ok", "tests": [1, 2]},
        "expected_verdict": "pass",
    }))
}

/// A chat target with every field.
const CHAT_YAML: &str = r#"kind: openai-chat
base_url: http://localhost:8000/v1/
model: agent-7b
api_key_env: GATE_API_KEY
headers:
  X-Team: "team ${TEAM_TOKEN}"
messages:
  - role: system
    content: You review deployments.
  - role: user
    content: "Pipeline {{pipeline_id}}: {{input_text}}"
params:
  temperature: 0
  max_tokens: 64
verdict: json:/verdict
"#;

/// The same target in JSON, its keys in another order.
const CHAT_JSON: &str = r#"{
  "verdict": "json:/verdict",
  "params": {"max_tokens": 64, "temperature": 0},
  "messages": [
    {"content": "You review deployments.", "role": "system"},
    {"role": "user", "content": "Pipeline {{pipeline_id}}: {{input_text}}"}
  ],
  "headers": {"X-Team": "team ${TEAM_TOKEN}"},
  "api_key_env": "GATE_API_KEY",
  "model": "agent-7b",
  "base_url": "http://localhost:8000/v1",
  "kind": "openai-chat"
}"#;

const HTTP_YAML: &str = r#"kind: http
url: https://scorer.internal:8443/score
method: put
headers:
  X-Api-Key: "${SCORER_KEY}"
  X-Client: deploy-gate
body:
  text: "{{input_text}}"
  pipeline: "{{pipeline_id}}"
  outputs: "{{expected_stage_outputs}}"
  note: "case {{pipeline_id}} from {{template_id}}"
  fixed: 3
  list: ["{{pipeline_id}}", "{{ template_id }}", true]
verdict: /result/verdict
"#;

const HTTP_JSON: &str = r#"{"kind": "http", "verdict": "/result/verdict",
 "body": {"list": ["{{pipeline_id}}", "{{ template_id }}", true], "fixed": 3,
          "note": "case {{pipeline_id}} from {{template_id}}",
          "outputs": "{{expected_stage_outputs}}",
          "pipeline": "{{pipeline_id}}", "text": "{{input_text}}"},
 "headers": {"X-Client": "deploy-gate", "X-Api-Key": "${SCORER_KEY}"},
 "method": "PUT", "url": "https://scorer.internal:8443/score"}"#;

const COMMAND_YAML: &str = "kind: command\nargv: [python3, worker.py, --model, ./ckpt]\n";

const MINIMAL_CHAT: &str = "kind: openai-chat\nbase_url: http://h:8000/v1\nmodel: m\nmessages:\n  - role: user\n    content: \"{{input_text}}\"\n";

const MINIMAL_HTTP: &str = "kind: http\nurl: http://h:9000/score\nverdict: /verdict\n";

// ---------------------------------------------------------------------------------------------
// Good files

#[test]
fn chat_target_yaml_reads_every_field() {
    let t = ok(CHAT_YAML);
    assert_eq!(t.file, FILE);
    let c = chat(&t);
    assert_eq!(
        c.base_urls,
        vec!["http://localhost:8000/v1".to_owned()],
        "the trailing / is dropped"
    );
    assert_eq!(c.model, "agent-7b");
    assert_eq!(c.api_key_env.as_deref(), Some("GATE_API_KEY"));
    assert_eq!(c.headers, vec![("X-Team".to_owned(), "team ${TEAM_TOKEN}".to_owned())]);
    assert_eq!(c.messages.len(), 2);
    assert_eq!(c.messages[0].0, "system");
    assert_eq!(c.messages[0].1.source(), "You review deployments.");
    assert_eq!(c.messages[1].0, "user");
    assert_eq!(c.messages[1].1.source(), "Pipeline {{pipeline_id}}: {{input_text}}");
    assert_eq!(
        Json::Object(c.params.clone()),
        json!({"temperature": 0, "max_tokens": 64})
    );
    assert!(matches!(&c.verdict, VerdictRule::Json(p) if p == "/verdict"));
    assert_eq!(t.describe(), "agent-7b at http://localhost:8000/v1");
}

#[test]
fn chat_target_defaults() {
    let t = ok(MINIMAL_CHAT);
    assert_eq!(t.timeout, Some(Duration::from_secs(60)));
    assert_eq!(t.timeout_text, "60s");
    assert_eq!(t.retries, 3);
    assert_eq!(t.retries, DEFAULT_RETRIES);
    assert_eq!(
        t.concurrency,
        Some(Concurrency {
            initial: 8,
            min: 1,
            max: 64
        })
    );
    assert_eq!(t.max_response_bytes, 16 * 1024 * 1024);
    assert_eq!(t.tls_ca, None);
    let c = chat(&t);
    assert_eq!(c.api_key_env, None);
    assert!(c.headers.is_empty());
    assert!(c.params.is_empty());
    assert!(matches!(c.verdict, VerdictRule::Content));
    assert!(t.digest.starts_with("sha256:"));
    assert_eq!(t.digest.len(), "sha256:".len() + 64);
    assert!(t.digest["sha256:".len()..]
        .bytes()
        .all(|b| b.is_ascii_hexdigit() && !b.is_ascii_uppercase()));
}

#[test]
fn chat_target_json_equals_yaml() {
    let y = ok(CHAT_YAML);
    let j = read_endpoint("target.json", CHAT_JSON.as_bytes()).unwrap();
    assert_eq!(j.file, "target.json");
    assert_eq!(chat(&j).base_urls, chat(&y).base_urls);
    assert_eq!(chat(&j).model, "agent-7b");
    assert_eq!(y.identity(), j.identity());
    assert_eq!(y.digest, j.digest);
    // The same request for a case.
    let case = sample_case();
    assert_eq!(y.body(&case), j.body(&case));
}

#[test]
fn base_url_as_a_list_of_replicas() {
    let t = ok("kind: openai-chat\nbase_url:\n  - http://a:8000/v1/\n  - https://b.example/v1\n  - http://c:8000/\nmodel: m\nmessages: [{role: user, content: hi}]\n");
    assert_eq!(
        chat(&t).base_urls,
        vec!["http://a:8000/v1", "https://b.example/v1", "http://c:8000"]
    );
    assert_eq!(t.describe(), "m at http://a:8000/v1 (+2 replicas)");
    // A list of one is the same target as the string.
    let one = ok("kind: openai-chat\nbase_url: [http://a:8000/v1]\nmodel: m\nmessages: [{role: user, content: hi}]\n");
    let plain = ok("kind: openai-chat\nbase_url: http://a:8000/v1/\nmodel: m\nmessages: [{role: user, content: hi}]\n");
    assert_eq!(chat(&one).base_urls, chat(&plain).base_urls);
    assert_eq!(one.digest, plain.digest);
}

#[test]
fn chat_common_fields_given() {
    let t = ok(&format!(
        "{MINIMAL_CHAT}timeout: 2m 30s\nretries: 0\nconcurrency:\n  initial: 4\n  min: 2\n  max: 16\nmax_response_bytes: 1MiB\ntls_ca: certs/ca.pem\ndescription: the candidate\n"
    ));
    assert_eq!(t.timeout, Some(Duration::from_secs(150)));
    assert_eq!(t.timeout_text, "2m 30s");
    assert_eq!(t.retries, 0);
    assert_eq!(
        t.concurrency,
        Some(Concurrency {
            initial: 4,
            min: 2,
            max: 16
        })
    );
    assert_eq!(t.max_response_bytes, 1 << 20);
    assert_eq!(t.tls_ca.as_deref(), Some("certs/ca.pem"));
}

#[test]
fn timeout_forms() {
    let with = |v: &str| ok(&format!("{MINIMAL_HTTP}timeout: {v}\n"));
    assert_eq!(with("none").timeout, None);
    assert_eq!(with("none").timeout_text, "none");
    assert_eq!(with("500ms").timeout, Some(Duration::from_millis(500)));
    assert_eq!(with("5m").timeout, Some(Duration::from_secs(300)));
    // A number is seconds.
    assert_eq!(with("90").timeout, Some(Duration::from_secs(90)));
    assert_eq!(with("90").timeout_text, "90s");
    assert_eq!(with("1.5").timeout, Some(Duration::from_millis(1500)));
    assert_eq!(with("\"60s\"").timeout, Some(Duration::from_secs(60)));
}

#[test]
fn max_response_bytes_forms() {
    let with = |v: &str| ok(&format!("{MINIMAL_HTTP}max_response_bytes: {v}\n")).max_response_bytes;
    assert_eq!(with("1000"), 1000);
    assert_eq!(with("\"1000\""), 1000);
    assert_eq!(with("2KB"), 2000);
    assert_eq!(with("2kB"), 2000);
    assert_eq!(with("2KiB"), 2048);
    assert_eq!(with("3MB"), 3_000_000);
    assert_eq!(with("16MiB"), DEFAULT_MAX_RESPONSE);
    assert_eq!(with("16 MiB"), DEFAULT_MAX_RESPONSE);
    assert_eq!(with("1GiB"), 1 << 30);
    assert_eq!(with("1GB"), 1_000_000_000);
    assert_eq!(with("7B"), 7);
}

#[test]
fn concurrency_partial_fills_defaults_within_bounds() {
    let with = |v: &str| ok(&format!("{MINIMAL_HTTP}concurrency: {v}\n")).concurrency.unwrap();
    assert_eq!(with("{}"), DEFAULT_CONCURRENCY);
    assert_eq!(
        with("{max: 4}"),
        Concurrency {
            initial: 4,
            min: 1,
            max: 4
        }
    );
    assert_eq!(
        with("{min: 16}"),
        Concurrency {
            initial: 16,
            min: 16,
            max: 64
        }
    );
    assert_eq!(
        with("{min: 100}"),
        Concurrency {
            initial: 100,
            min: 100,
            max: 100
        }
    );
    assert_eq!(
        with("{initial: 1}"),
        Concurrency {
            initial: 1,
            min: 1,
            max: 64
        }
    );
    assert_eq!(
        with("{initial: 4096, max: 4096}"),
        Concurrency {
            initial: 4096,
            min: 1,
            max: 4096
        }
    );
}

#[test]
fn http_target_yaml_and_json() {
    let t = ok(HTTP_YAML);
    let h = http(&t);
    assert_eq!(h.url, "https://scorer.internal:8443/score");
    assert_eq!(h.method, "PUT", "upper-cased");
    assert_eq!(
        h.headers,
        vec![
            ("X-Api-Key".to_owned(), "${SCORER_KEY}".to_owned()),
            ("X-Client".to_owned(), "deploy-gate".to_owned())
        ]
    );
    assert_eq!(h.verdict, "/result/verdict");
    assert!(h.body.is_some());
    assert_eq!(t.describe(), "PUT https://scorer.internal:8443/score");
    assert_eq!(t.concurrency, Some(DEFAULT_CONCURRENCY));
    assert_eq!(t.timeout, Some(Duration::from_secs(60)));
    assert_eq!(t.retries, 3);
    assert_eq!(t.max_response_bytes, 16 << 20);

    let j = read_endpoint("t.json", HTTP_JSON.as_bytes()).unwrap();
    assert_eq!(j.identity(), t.identity());
    assert_eq!(j.digest, t.digest);
    assert_eq!(j.body(&sample_case()), t.body(&sample_case()));
}

#[test]
fn http_target_defaults() {
    let t = ok(MINIMAL_HTTP);
    let h = http(&t);
    assert_eq!(h.method, "POST");
    assert!(h.headers.is_empty());
    assert_eq!(h.body, None);
    assert_eq!(t.timeout_text, "60s");
    assert_eq!(t.retries, 3);
    assert_eq!(
        t.concurrency,
        Some(Concurrency {
            initial: 8,
            min: 1,
            max: 64
        })
    );
    assert_eq!(t.max_response_bytes, 16 << 20);
    // An empty pointer: the whole body is the verdict.
    let whole = ok("kind: http\nurl: http://h/score\nverdict: \"\"\n");
    assert_eq!(http(&whole).verdict, "");
    // GET is refused: the request would not carry its case.
    refused_at(
        "kind: http\nurl: http://h/score\nmethod: GET\nverdict: /v\n",
        3,
        "method",
        "\"GET\": expected POST, PUT or PATCH (a request must carry its case)",
    );
}

#[test]
fn http_url_keeps_its_trailing_slash() {
    // A plain endpoint's URL is sent as written: `/score/` and `/score` are different routes,
    // and redirects are not followed.
    let t = ok("kind: http\nurl: http://h:9000/score/\nverdict: /v\n");
    assert_eq!(http(&t).url, "http://h:9000/score/");
}

#[test]
fn command_target_yaml_and_json() {
    let t = ok(COMMAND_YAML);
    assert_eq!(command(&t).argv, vec!["python3", "worker.py", "--model", "./ckpt"]);
    assert_eq!(
        t.concurrency, None,
        "a command target without concurrency: one worker per core"
    );
    assert_eq!(t.timeout, Some(Duration::from_secs(60)));
    assert_eq!(t.retries, 3);
    assert_eq!(t.max_response_bytes, DEFAULT_MAX_RESPONSE);
    assert_eq!(t.describe(), "python3 worker.py --model ./ckpt");
    let j = read_endpoint(
        "t.json",
        br#"{"argv": ["python3", "worker.py", "--model", "./ckpt"], "kind": "command"}"#,
    )
    .unwrap();
    assert_eq!(j.digest, t.digest);
    // Block list form, concurrency given.
    let b = ok("kind: command\nargv:\n  - ./worker\nconcurrency:\n  max: 3\n");
    assert_eq!(command(&b).argv, vec!["./worker"]);
    assert_eq!(
        b.concurrency,
        Some(Concurrency {
            initial: 3,
            min: 1,
            max: 3
        })
    );
    assert_eq!(t.body(&sample_case()), None);
}

#[test]
fn verdict_rules() {
    let rule = |v: &str| chat(&ok(&format!("{MINIMAL_CHAT}verdict: '{v}'\n"))).verdict.clone();
    assert!(matches!(rule("content"), VerdictRule::Content));
    assert!(matches!(rule("json:"), VerdictRule::Json(p) if p.is_empty()));
    assert!(matches!(rule("json:/a/0/b"), VerdictRule::Json(p) if p == "/a/0/b"));
    match rule(r"regex:VERDICT:\s*(\w+)") {
        VerdictRule::Regex(re) => assert_eq!(re.as_str(), r"VERDICT:\s*(\w+)"),
        other => panic!("{other:?}"),
    }
}

#[test]
fn params_stream_false_and_n_one_are_allowed() {
    let t = ok(&format!("{MINIMAL_CHAT}params:\n  stream: false\n  n: 1\n  stop: [\"\\n\"]\n  seed: 7\n  top_p: 0.5\n  extra: {{a: null}}\n"));
    assert_eq!(
        Json::Object(chat(&t).params.clone()),
        json!({"stream": false, "n": 1, "stop": ["\n"], "seed": 7, "top_p": 0.5, "extra": {"a": null}})
    );
}

#[test]
fn header_values_and_names() {
    let t = ok(&format!(
        "{MINIMAL_CHAT}headers:\n  X-Num: 5\n  X-Two: \"${{A}}-${{B_2}}\"\n  x_odd.name~: plain\n"
    ));
    assert_eq!(
        chat(&t).headers,
        vec![
            ("X-Num".to_owned(), "5".to_owned()),
            ("X-Two".to_owned(), "${A}-${B_2}".to_owned()),
            ("x_odd.name~".to_owned(), "plain".to_owned()),
        ]
    );
}

// ---------------------------------------------------------------------------------------------
// Refusals: file, line, field

#[test]
fn display_format_exact() {
    let e = refused("kind: command\nargv: [x]\ncolour: red\n");
    assert_eq!(
        e.to_string(),
        "models/target.yaml line 3: colour: unknown field (expected one of: kind, timeout, retries, concurrency, max_response_bytes, outputs, max_output_bytes, tls_ca, description, argv)"
    );
    let e = refused(&format!("{MINIMAL_HTTP}timeout: fast\n"));
    assert_eq!(
        e.to_string(),
        "models/target.yaml line 4: timeout: \"fast\" is not a duration (e.g. 60s, 500ms, 5m, none)"
    );
    let e = refused("kind: http\nverdict: /v\n");
    assert_eq!(
        e.to_string(),
        "models/target.yaml line 1: url: missing (an endpoint of kind http needs it)"
    );
    let e = refused(&format!("{MINIMAL_CHAT}concurrency:\n  min: 10\n  max: 5\n"));
    assert_eq!(
        e.to_string(),
        "models/target.yaml line 9: concurrency.max: 5 is less than min (10)"
    );
    let e = refused("kind: openai-chat\nbase_url: http://h/v1\nmodel: m\nmessages:\n  - role: user\n    content: a\n  - role: user\n    content: \"{{expected_verdict}}\"\n");
    assert_eq!(
        e.to_string(),
        "models/target.yaml line 8: messages[1].content: {{expected_verdict}} is not a placeholder: the model must not be sent the answer it is scored against"
    );
    // A refusal of the whole file has neither line nor field.
    let e = refused("");
    assert_eq!(
        e.to_string(),
        "models/target.yaml: empty: an endpoint file is a mapping with at least `kind`"
    );
}

#[test]
fn unknown_keys() {
    refused_at(
        "kind: openai-chat\nbase_url: http://h/v1\nmodel: m\ntemperature: 0.2\n",
        4,
        "temperature",
        "unknown field",
    );
    // A key of another kind is unknown too.
    refused_at(
        "kind: http\nurl: http://h/x\nverdict: /v\nmodel: m\n",
        4,
        "model",
        "unknown field",
    );
    refused_at("kind: command\nargv: [x]\nurl: http://h/\n", 3, "url", "unknown field");
    refused_at(
        &format!("{MINIMAL_HTTP}concurrency:\n  initial: 2\n  maximum: 5\n"),
        6,
        "concurrency.maximum",
        "expected one of: initial, min, max",
    );
    refused_at(
        "kind: openai-chat\nbase_url: http://h/v1\nmodel: m\nmessages:\n  - role: system\n    content: a\n  - role: user\n    content: b\n    name: bob\n",
        9,
        "messages[1].name",
        "expected one of: role, content",
    );
    // JSON: the line of the key.
    refused_at(
        "{\n  \"kind\": \"command\",\n  \"argv\": [\"x\"],\n  \"Argv\": [\"y\"]\n}\n",
        4,
        "Argv",
        "unknown field",
    );
}

#[test]
fn missing_fields() {
    refused_at("argv: [x]\n", 1, "kind", "missing");
    refused_at("{}", 1, "kind", "missing");
    refused_at(
        "kind: openai-chat\nmodel: m\nmessages: [{role: user, content: hi}]\n",
        1,
        "base_url",
        "missing (an endpoint of kind openai-chat needs it)",
    );
    refused_at(
        "kind: openai-chat\nbase_url: http://h/v1\nmessages: [{role: user, content: hi}]\n",
        1,
        "model",
        "missing",
    );
    refused_at(
        "kind: openai-chat\nbase_url: http://h/v1\nmodel: m\n",
        1,
        "messages",
        "missing",
    );
    refused_at("kind: http\nverdict: /v\n", 1, "url", "missing");
    refused_at("kind: http\nurl: http://h/x\n", 1, "verdict", "missing");
    refused_at("kind: command\n", 1, "argv", "missing");
    // Inside a message: the item's line.
    refused_at(
        "kind: openai-chat\nbase_url: http://h/v1\nmodel: m\nmessages:\n  - role: user\n  - content: hi\n",
        5,
        "messages[0].content",
        "missing",
    );
    refused_at("kind: openai-chat\nbase_url: http://h/v1\nmodel: m\nmessages:\n  - role: user\n    content: x\n  - content: hi\n", 7, "messages[1].role", "missing");
}

#[test]
fn wrong_types() {
    refused_at("kind: 5\n", 1, "kind", "expected a string, found a number");
    refused_at("kind: grpc\n", 1, "kind", "\"grpc\" is not a kind");
    refused_at(
        "kind: openai-chat\nbase_url: http://h/v1\nmodel: 5\nmessages: [{role: user, content: hi}]\n",
        3,
        "model",
        "expected a string, found a number",
    );
    refused_at(
        "kind: openai-chat\nbase_url: http://h/v1\nmodel: \" \"\nmessages: [{role: user, content: hi}]\n",
        3,
        "model",
        "must not be empty",
    );
    refused_at(
        "kind: openai-chat\nbase_url: {a: 1}\nmodel: m\nmessages: [{role: user, content: hi}]\n",
        2,
        "base_url",
        "expected a string, found a mapping",
    );
    refused_at(
        "kind: openai-chat\nbase_url: []\nmodel: m\nmessages: [{role: user, content: hi}]\n",
        2,
        "base_url",
        "an empty list",
    );
    refused_at(
        "kind: openai-chat\nbase_url: http://h/v1\nmodel: m\nmessages: hi\n",
        4,
        "messages",
        "expected a list of {role, content}, found a string",
    );
    refused_at(
        "kind: openai-chat\nbase_url: http://h/v1\nmodel: m\nmessages: []\n",
        4,
        "messages",
        "an empty list",
    );
    refused_at(
        "kind: openai-chat\nbase_url: http://h/v1\nmodel: m\nmessages:\n  - hi\n",
        5,
        "messages[0]",
        "expected a mapping, found a string",
    );
    refused_at(
        "kind: openai-chat\nbase_url: http://h/v1\nmodel: m\nmessages:\n  - role: user\n    content: [a]\n",
        6,
        "messages[0].content",
        "expected a string, found a list",
    );
    refused_at(
        "kind: openai-chat\nbase_url: http://h/v1\nmodel: m\nmessages:\n  - role: \"\"\n    content: a\n",
        5,
        "messages[0].role",
        "must not be empty",
    );
    refused_at(
        &format!("{MINIMAL_CHAT}params: [1]\n"),
        7,
        "params",
        "expected a mapping, found a list",
    );
    refused_at(
        &format!("{MINIMAL_CHAT}params:\n  temperature: .nan\n"),
        8,
        "params.temperature",
        "NaN",
    );
    refused_at(
        &format!("{MINIMAL_CHAT}verdict: 5\n"),
        7,
        "verdict",
        "expected a string",
    );
    refused_at(
        &format!("{MINIMAL_CHAT}headers: [a]\n"),
        7,
        "headers",
        "expected a mapping, found a list",
    );
    refused_at(
        &format!("{MINIMAL_CHAT}headers:\n  X-A: true\n"),
        8,
        "headers.X-A",
        "expected a string, found a boolean",
    );
    refused_at(
        &format!("{MINIMAL_CHAT}api_key_env: 5\n"),
        7,
        "api_key_env",
        "expected a string",
    );
    refused_at(
        &format!("{MINIMAL_HTTP}retries: three\n"),
        4,
        "retries",
        "expected a whole number, found a string",
    );
    refused_at(
        &format!("{MINIMAL_HTTP}retries: 1.5\n"),
        4,
        "retries",
        "expected a whole number, found a number",
    );
    refused_at(
        &format!("{MINIMAL_HTTP}retries: 101\n"),
        4,
        "retries",
        "101 is out of range (0 to 100)",
    );
    refused_at(&format!("{MINIMAL_HTTP}retries: -1\n"), 4, "retries", "out of range");
    refused_at(
        &format!("{MINIMAL_HTTP}concurrency: 8\n"),
        4,
        "concurrency",
        "expected a mapping, found a number",
    );
    refused_at(
        &format!("{MINIMAL_HTTP}tls_ca: \"\"\n"),
        4,
        "tls_ca",
        "must not be empty",
    );
    refused_at(
        &format!("{MINIMAL_HTTP}description: [a]\n"),
        4,
        "description",
        "expected a string",
    );
    refused_at("kind: http\nurl: 5\nverdict: /v\n", 2, "url", "expected a string");
    refused_at(
        "kind: http\nurl: http://h/x\nverdict: 5\n",
        3,
        "verdict",
        "expected a string",
    );
    refused_at(
        "kind: http\nurl: http://h/x\nverdict: result\n",
        3,
        "verdict",
        "is not a JSON pointer",
    );
    refused_at(
        "kind: http\nurl: http://h/x\nmethod: DELETE\nverdict: /v\n",
        3,
        "method",
        "\"DELETE\": expected POST, PUT or PATCH (a request must carry its case)",
    );
    refused_at("kind: command\nargv: python3 worker.py\n", 2, "argv", "expected a list");
    refused_at("kind: command\nargv: []\n", 2, "argv", "empty");
    refused_at("kind: command\nargv: [\"\"]\n", 2, "argv[0]", "the program is empty");
    refused_at(
        "kind: command\nargv:\n  - x\n  - 5\n",
        4,
        "argv[1]",
        "expected a string, found a number",
    );
}

#[test]
fn bad_urls() {
    let at = |url: &str, needle: &str| {
        refused_at(
            &format!("kind: openai-chat\nmodel: m\nbase_url: '{url}'\nmessages: [{{role: user, content: hi}}]\n"),
            3,
            "base_url",
            needle,
        )
    };
    at("localhost:8000/v1", "is not an http:// or https:// URL");
    at("ftp://h/v1", "is not an http:// or https:// URL");
    at("http://", "has no host");
    at("https:///v1", "has no host");
    at("", "must not be empty");
    at("http://h /v1", "white space");
    let e = at("http://user:pw@host:8000/v1", "credentials in a URL are refused");
    assert!(!e.to_string().contains("pw"), "the credentials are not repeated: {e}");
    at("http://token@host/v1", "credentials");
    at("http://h:8000/v1/chat/completions", "ends with /chat/completions");
    at("http://h:8000/v1/chat/completions/", "ends with /chat/completions");
    // In a list: the item's line and index.
    refused_at(
        "kind: openai-chat\nmodel: m\nbase_url:\n  - http://a/v1\n  - a/v1\nmessages: [{role: user, content: hi}]\n",
        5,
        "base_url[1]",
        "not an http",
    );
    refused_at(
        "kind: openai-chat\nmodel: m\nbase_url:\n  - http://a/v1\n  - http://b/v1/chat/completions\nmessages: [{role: user, content: hi}]\n",
        5,
        "base_url[1]",
        "ends with /chat/completions",
    );
    // The http kind's url.
    refused_at(
        "kind: http\nurl: http://u:p@h/score\nverdict: /v\n",
        2,
        "url",
        "credentials",
    );
    refused_at("kind: http\nurl: h/score\nverdict: /v\n", 2, "url", "not an http");
}

#[test]
fn bad_placeholders() {
    let base = "kind: openai-chat\nbase_url: http://h/v1\nmodel: m\nmessages:\n  - role: system\n    content: Be brief.\n  - role: user\n";
    let e = refused_at(
        &format!("{base}    content: \"Case {{{{foo}}}}\"\n"),
        8,
        "messages[1].content",
        "{{foo}} is not a placeholder",
    );
    for f in FIELDS {
        assert!(e.message.contains(&format!("{{{{{f}}}}}")), "{e}");
    }
    assert!(!e.message.contains("expected_verdict"), "{e}");
    refused_at(
        &format!("{base}    content: \"{{{{expected_verdict}}}}\"\n"),
        8,
        "messages[1].content",
        "must not be sent the answer",
    );
    refused_at(
        &format!("{base}    content: \"{{{{ expected_verdict }}}}\"\n"),
        8,
        "messages[1].content",
        "expected_verdict",
    );
    refused_at(
        &format!("{base}    content: \"ab {{{{input_text\"\n"),
        8,
        "messages[1].content",
        "`{{` at byte 3 is not closed by `}}`",
    );
    // In an http body: the path within the body, at the body's line.
    refused_at(
        "kind: http\nurl: http://h/x\nverdict: /v\nbody:\n  a:\n    - ok\n    - \"{{foo}}\"\n",
        5,
        "body.a[1]",
        "{{foo}}",
    );
    refused_at(
        "kind: http\nurl: http://h/x\nverdict: /v\nbody: \"{{expected_verdict}}\"\n",
        4,
        "body",
        "expected_verdict",
    );
}

#[test]
fn bad_headers() {
    refused_at(
        &format!("{MINIMAL_CHAT}headers:\n  X-Ok: a\n  Bad Name: b\n"),
        9,
        "headers.Bad Name",
        "not a valid header name",
    );
    refused_at(
        &format!("{MINIMAL_CHAT}headers:\n  \"X:Y\": b\n"),
        8,
        "headers.X:Y",
        "not a valid header name",
    );
    refused_at(
        &format!("{MINIMAL_CHAT}headers:\n  \"\": b\n"),
        8,
        "headers.",
        "not a valid header name",
    );
    refused_at(
        &format!("{MINIMAL_CHAT}headers:\n  Host: evil\n"),
        8,
        "headers.Host",
        "set by the client",
    );
    refused_at(
        &format!("{MINIMAL_CHAT}headers:\n  content-length: 5\n"),
        8,
        "headers.content-length",
        "set by the client",
    );
    refused_at(
        &format!("{MINIMAL_CHAT}headers:\n  X-T: \"${{TOKEN\"\n"),
        8,
        "headers.X-T",
        "`${` is not closed by `}`",
    );
    refused_at(
        &format!("{MINIMAL_CHAT}headers:\n  X-T: \"${{}}\"\n"),
        8,
        "headers.X-T",
        "is not an environment variable's name",
    );
    refused_at(
        &format!("{MINIMAL_CHAT}headers:\n  X-T: \"${{1A}}\"\n"),
        8,
        "headers.X-T",
        "is not an environment variable's name",
    );
    refused_at(
        &format!("{MINIMAL_CHAT}headers:\n  X-T: \"a\\nb\"\n"),
        8,
        "headers.X-T",
        "line break",
    );
    refused_at(
        &format!("{MINIMAL_CHAT}api_key_env: K\nheaders:\n  authorization: x\n"),
        9,
        "headers.authorization",
        "given twice",
    );
    // The header's own line, not the first header's.
    refused_at(
        &format!("{MINIMAL_CHAT}api_key_env: K\nheaders:\n  X-A: a\n  Authorization: \"Bearer ${{K}}\"\n"),
        10,
        "headers.Authorization",
        "given twice: api_key_env sets it",
    );
    // Without api_key_env, an Authorization header is the way to send a key.
    let t = ok(&format!("{MINIMAL_CHAT}headers:\n  Authorization: \"Bearer ${{K}}\"\n"));
    let s = t.secrets(&env_of(&[("K", "sk-0000000000")])).unwrap();
    assert_eq!(
        s.headers,
        vec![("Authorization".to_owned(), "Bearer sk-0000000000".to_owned())]
    );
    assert_eq!(s.values, vec!["sk-0000000000".to_owned()]);
    refused_at(
        &format!("{MINIMAL_CHAT}api_key_env: sk-live-123\n"),
        7,
        "api_key_env",
        "the NAME of an environment variable",
    );
    refused_at(
        &format!("{MINIMAL_CHAT}api_key_env: 1KEY\n"),
        7,
        "api_key_env",
        "the NAME",
    );
    refused_at(
        "kind: http\nurl: http://h/x\nverdict: /v\nheaders:\n  X-K: \"${K\"\n",
        5,
        "headers.X-K",
        "not closed",
    );
}

#[test]
fn refused_params() {
    refused_at(
        &format!("{MINIMAL_CHAT}params:\n  temperature: 0\n  model: other\n"),
        9,
        "params.model",
        "set by the endpoint's own `model`",
    );
    refused_at(
        &format!("{MINIMAL_CHAT}params:\n  messages: []\n"),
        8,
        "params.messages",
        "cannot be a param",
    );
    refused_at(
        &format!("{MINIMAL_CHAT}params:\n  stream: true\n"),
        8,
        "params.stream",
        "streamed answers are not read",
    );
    refused_at(
        &format!("{MINIMAL_CHAT}params:\n  stream: yes\n"),
        8,
        "params.stream",
        "streamed",
    );
    refused_at(
        &format!("{MINIMAL_CHAT}params:\n  n: 2\n"),
        8,
        "params.n",
        "one answer per request",
    );
    refused_at(
        &format!("{MINIMAL_CHAT}params:\n  n: \"1\"\n"),
        8,
        "params.n",
        "one answer",
    );
}

#[test]
fn bad_concurrency() {
    refused_at(
        &format!("{MINIMAL_HTTP}concurrency:\n  min: 10\n  max: 5\n"),
        6,
        "concurrency.max",
        "5 is less than min (10)",
    );
    refused_at(
        &format!("{MINIMAL_HTTP}concurrency:\n  max: 10\n  initial: 100\n"),
        6,
        "concurrency.initial",
        "100 is not between min (1) and max (10)",
    );
    refused_at(
        &format!("{MINIMAL_HTTP}concurrency:\n  min: 4\n  initial: 2\n"),
        6,
        "concurrency.initial",
        "2 is not between min (4) and max (64)",
    );
    refused_at(
        &format!("{MINIMAL_HTTP}concurrency:\n  initial: 0\n"),
        5,
        "concurrency.initial",
        "0 is out of range (1 to 4096)",
    );
    refused_at(
        &format!("{MINIMAL_HTTP}concurrency:\n  max: 5000\n"),
        5,
        "concurrency.max",
        "out of range",
    );
    refused_at(
        &format!("{MINIMAL_HTTP}concurrency:\n  min: x\n"),
        5,
        "concurrency.min",
        "expected a whole number",
    );
    refused_at(
        "kind: command\nargv: [x]\nconcurrency:\n  min: 3\n  max: 2\n",
        5,
        "concurrency.max",
        "less than min",
    );
}

#[test]
fn bad_timeouts() {
    refused_at(
        &format!("{MINIMAL_HTTP}timeout: fast\n"),
        4,
        "timeout",
        "\"fast\" is not a duration",
    );
    refused_at(
        &format!("{MINIMAL_HTTP}timeout: 0s\n"),
        4,
        "timeout",
        "must be more than zero",
    );
    refused_at(&format!("{MINIMAL_HTTP}timeout: 0ms\n"), 4, "timeout", "more than zero");
    refused_at(
        &format!("{MINIMAL_HTTP}timeout: 0\n"),
        4,
        "timeout",
        "expected a duration",
    );
    refused_at(
        &format!("{MINIMAL_HTTP}timeout: -5\n"),
        4,
        "timeout",
        "expected a duration",
    );
    refused_at(&format!("{MINIMAL_HTTP}timeout: [1]\n"), 4, "timeout", "found a list");
    refused_at(
        &format!("{MINIMAL_HTTP}timeout: \"\"\n"),
        4,
        "timeout",
        "is not a duration",
    );
    refused_at(
        &format!("{MINIMAL_HTTP}timeout: .inf\n"),
        4,
        "timeout",
        "expected a duration",
    );
}

#[test]
fn bad_max_response_bytes() {
    for v in [
        "lots",
        "0",
        "\"0\"",
        "-1",
        "16XB",
        "\"\"",
        "1.5",
        "99999999999GiB",
        "[1]",
    ] {
        refused_at(
            &format!("{MINIMAL_HTTP}max_response_bytes: {v}\n"),
            4,
            "max_response_bytes",
            "",
        );
    }
    refused_at(
        &format!("{MINIMAL_HTTP}max_response_bytes: lots\n"),
        4,
        "max_response_bytes",
        "\"lots\" is not a size",
    );
}

#[test]
fn bad_verdict_rules() {
    refused_at(
        &format!("{MINIMAL_CHAT}verdict: \"xml:/a\"\n"),
        7,
        "verdict",
        "expected content, json:/POINTER or regex:PATTERN",
    );
    refused_at(
        &format!("{MINIMAL_CHAT}verdict: \"json:verdict\"\n"),
        7,
        "verdict",
        "is not a JSON pointer",
    );
    refused_at(
        &format!("{MINIMAL_CHAT}verdict: \"regex:(unclosed\"\n"),
        7,
        "verdict",
        "not a regular expression",
    );
    refused_at(
        &format!("{MINIMAL_CHAT}verdict: Content\n"),
        7,
        "verdict",
        "expected content",
    );
}

#[test]
fn duplicate_keys_and_bad_yaml_are_refused() {
    let e = refused("kind: command\nargv: [x]\nkind: http\n");
    let shown = e.to_string();
    assert!(shown.starts_with(FILE), "{shown}");
    assert!(shown.contains("duplicate key") && shown.contains("line 3"), "{shown}");
    let e = refused("{\"kind\": \"command\", \"argv\": [\"x\"], \"argv\": [\"y\"]}");
    assert!(e.to_string().contains("duplicate key"), "{e}");
    let e = refused(&format!("{MINIMAL_CHAT}headers:\n  X-A: a\n  X-A: b\n"));
    assert!(e.to_string().contains("duplicate key"), "{e}");
    let e = refused("kind: [unclosed\n");
    assert!(e.to_string().contains("line"), "{e}");
}

#[test]
fn whole_file_refusals() {
    let e = read_endpoint("t.yaml", b"kind: command\nargv: [\xff]\n").unwrap_err();
    assert_eq!(e.line, None);
    assert!(e.to_string().starts_with("t.yaml: not UTF-8 (at byte 21)"), "{e}");
    let big = vec![b'#'; MAX_ENDPOINT_FILE + 1];
    let e = read_endpoint("t.yaml", &big).unwrap_err();
    assert!(e.message.contains("more than"), "{e}");
    let e = read_endpoint("t.yaml", b"# only a comment\n").unwrap_err();
    assert!(e.message.starts_with("empty"), "{e}");
}

// ---------------------------------------------------------------------------------------------
// The digest

#[test]
fn digest_stable_across_formats_and_key_order() {
    let a = ok(CHAT_YAML);
    let reordered = ok(r#"verdict: json:/verdict
params:
  max_tokens: 64
  temperature: 0
messages:
  - content: You review deployments.
    role: system
  - role: user
    content: "Pipeline {{pipeline_id}}: {{input_text}}"
model: agent-7b
headers:
  X-Team: "team ${TEAM_TOKEN}"
api_key_env: GATE_API_KEY
base_url: "http://localhost:8000/v1"
kind: openai-chat
"#);
    assert_eq!(a.digest, reordered.digest);
    assert_eq!(a.digest, read_endpoint("t.json", CHAT_JSON.as_bytes()).unwrap().digest);
    // Reading twice gives the same.
    assert_eq!(a.digest, ok(CHAT_YAML).digest);
    // The file's name is not part of it.
    assert_eq!(
        a.digest,
        read_endpoint("elsewhere/other.yml", CHAT_YAML.as_bytes())
            .unwrap()
            .digest
    );
    // Nor a comment.
    assert_eq!(a.digest, ok(&format!("# the candidate\n{CHAT_YAML}")).digest);
}

#[test]
fn digest_equal_with_defaults_explicit() {
    let explicit = ok(&format!(
        "{MINIMAL_CHAT}timeout: 60s\nretries: 3\nconcurrency: {{initial: 8, min: 1, max: 64}}\nmax_response_bytes: 16MiB\nverdict: content\nparams: {{}}\nheaders: {{}}\n"
    ));
    assert_eq!(ok(MINIMAL_CHAT).digest, explicit.digest);
    assert_eq!(
        ok(MINIMAL_CHAT).digest,
        ok(&format!("{MINIMAL_CHAT}retries: 3\n")).digest
    );
    assert_eq!(
        ok(MINIMAL_CHAT).digest,
        ok(&format!("{MINIMAL_CHAT}timeout: 60\n")).digest
    );
    assert_eq!(
        ok(MINIMAL_CHAT).digest,
        ok(&format!("{MINIMAL_CHAT}max_response_bytes: 16777216\n")).digest
    );
    assert_eq!(
        ok(MINIMAL_CHAT).digest,
        ok(&format!("{MINIMAL_CHAT}concurrency: {{}}\n")).digest
    );
    assert_eq!(
        ok(MINIMAL_HTTP).digest,
        ok(&format!("{MINIMAL_HTTP}method: POST\n")).digest
    );
    assert_eq!(
        ok(MINIMAL_HTTP).digest,
        ok(&format!("{MINIMAL_HTTP}method: post\n")).digest
    );
    assert_eq!(
        ok(COMMAND_YAML).digest,
        ok(&format!("{COMMAND_YAML}retries: 3\ntimeout: 60s\n")).digest
    );
}

#[test]
fn digest_changes_with_every_field() {
    let base = ok(CHAT_YAML).digest;
    let changes: &[(&str, &str)] = &[
        ("model: agent-7b", "model: agent-8b"),
        (
            "base_url: http://localhost:8000/v1/",
            "base_url: http://localhost:8001/v1/",
        ),
        ("api_key_env: GATE_API_KEY", "api_key_env: OTHER_KEY"),
        ("X-Team: \"team ${TEAM_TOKEN}\"", "X-Team: \"team ${OTHER}\""),
        ("X-Team:", "X-Group:"),
        ("temperature: 0", "temperature: 0.7"),
        ("max_tokens: 64", "max_tokens: 65"),
        ("max_tokens: 64", "max_tokens: 64\n  seed: 1"),
        ("content: You review deployments.", "content: You review deployments!"),
        ("role: system", "role: developer"),
        ("verdict: json:/verdict", "verdict: json:/answer"),
        ("verdict: json:/verdict", "verdict: content"),
        ("verdict: json:/verdict", "verdict: 'regex:(\\w+)'"),
    ];
    let mut seen = vec![base.clone()];
    for (from, to) in changes {
        assert!(CHAT_YAML.contains(from), "{from}");
        let d = ok(&CHAT_YAML.replacen(from, to, 1)).digest;
        assert!(!seen.contains(&d), "{from} → {to} gives a digest seen before");
        seen.push(d);
    }
    // The order of messages counts.
    let swapped = ok(&CHAT_YAML.replace(
        "  - role: system\n    content: You review deployments.\n  - role: user\n    content: \"Pipeline {{pipeline_id}}: {{input_text}}\"\n",
        "  - role: user\n    content: \"Pipeline {{pipeline_id}}: {{input_text}}\"\n  - role: system\n    content: You review deployments.\n",
    ));
    assert!(!seen.contains(&swapped.digest));
    seen.push(swapped.digest);
    // The common fields.
    for extra in [
        "timeout: 61s",
        "timeout: none",
        "retries: 4",
        "concurrency: {max: 32}",
        "concurrency: {initial: 9}",
        "concurrency: {min: 2}",
        "max_response_bytes: 1MiB",
        "tls_ca: ca.pem",
    ] {
        let d = ok(&format!("{CHAT_YAML}{extra}\n")).digest;
        assert!(!seen.contains(&d), "{extra} gives a digest seen before");
        seen.push(d);
    }
    // Http and command fields.
    let h = ok(HTTP_YAML).digest;
    for (from, to) in [
        ("method: put", "method: patch"),
        (
            "url: https://scorer.internal:8443/score",
            "url: https://scorer.internal:8443/score2",
        ),
        ("verdict: /result/verdict", "verdict: /result/label"),
        ("fixed: 3", "fixed: 4"),
        ("X-Client: deploy-gate", "X-Client: other"),
    ] {
        assert!(HTTP_YAML.contains(from), "{from}");
        assert_ne!(ok(&HTTP_YAML.replacen(from, to, 1)).digest, h, "{from} → {to}");
    }
    let c = ok(COMMAND_YAML).digest;
    assert_ne!(
        ok("kind: command\nargv: [python3, worker.py, --model, ./ckpt2]\n").digest,
        c
    );
    assert_ne!(ok("kind: command\nargv: [python3, worker.py, --model]\n").digest, c);
    assert_ne!(ok(&format!("{COMMAND_YAML}concurrency: {{}}\n")).digest, c);
    // Kinds differ from one another.
    assert_ne!(h, c);
    assert_ne!(h, base);
}

#[test]
fn digest_and_cache_key_hold_no_secret() {
    let t = ok(CHAT_YAML);
    let env_a = env_of(&[
        ("GATE_API_KEY", "sk-aaaaaaaaaaaaaaaa"),
        ("TEAM_TOKEN", "tok-1111111111"),
    ]);
    let env_b = env_of(&[
        ("GATE_API_KEY", "sk-bbbbbbbbbbbbbbbb"),
        ("TEAM_TOKEN", "tok-2222222222"),
    ]);
    let sa = t.secrets(&env_a).unwrap();
    let sb = t.secrets(&env_b).unwrap();
    assert_ne!(sa.headers, sb.headers);
    let body = t.body(&sample_case());
    let key = t.cache_key(body.as_ref(), b"{}", 0);
    // Reading the same file again (another run, another environment) gives the same identity.
    let again = ok(CHAT_YAML);
    assert_eq!(t.digest, again.digest);
    assert_eq!(key, again.cache_key(again.body(&sample_case()).as_ref(), b"{}", 0));
    let identity = crate::attest::jcs::canonical_json(&t.identity()).unwrap();
    for secret in [
        "sk-aaaaaaaaaaaaaaaa",
        "sk-bbbbbbbbbbbbbbbb",
        "tok-1111111111",
        "tok-2222222222",
    ] {
        assert!(!identity.contains(secret));
        assert!(!t.digest.contains(secret));
        assert!(!key.contains(secret));
        assert!(!format!("{:?}", body).contains(secret));
    }
    // The names are in it, the values never.
    assert!(identity.contains("GATE_API_KEY"));
    assert!(identity.contains("${TEAM_TOKEN}"));
    // The same for an http target.
    let h = ok(HTTP_YAML);
    let s1 = h.secrets(&env_of(&[("SCORER_KEY", "secret-one-1234")])).unwrap();
    let s2 = h.secrets(&env_of(&[("SCORER_KEY", "secret-two-5678")])).unwrap();
    assert_ne!(s1.headers, s2.headers);
    let hb = h.body(&sample_case());
    assert_eq!(
        h.cache_key(hb.as_ref(), b"{}", 0),
        ok(HTTP_YAML).cache_key(hb.as_ref(), b"{}", 0)
    );
}

// ---------------------------------------------------------------------------------------------
// Secrets

#[test]
fn secrets_need_the_key_variable() {
    let t = ok(CHAT_YAML);
    let e = t.secrets(&env_of(&[("TEAM_TOKEN", "tok-123456")])).unwrap_err();
    assert_eq!(e.file, FILE);
    assert_eq!(
        e.to_string(),
        "models/target.yaml: api_key_env: the environment variable GATE_API_KEY is not set (it holds the API key)"
    );
    // Set but empty is not set.
    let e = t
        .secrets(&env_of(&[("GATE_API_KEY", ""), ("TEAM_TOKEN", "tok-123456")]))
        .unwrap_err();
    assert!(e.message.contains("GATE_API_KEY is not set"), "{e}");
    // A control character: the variable is named, the value never shown.
    let e = t
        .secrets(&env_of(&[
            ("GATE_API_KEY", "sk-abc\ndef-123"),
            ("TEAM_TOKEN", "tok-123456"),
        ]))
        .unwrap_err();
    assert!(e.message.contains("GATE_API_KEY"), "{e}");
    assert!(
        !e.to_string().contains("sk-abc") && !e.to_string().contains("def-123"),
        "{e}"
    );
    // A header variable unset: named.
    let e = t
        .secrets(&env_of(&[("GATE_API_KEY", "sk-live-0123456789")]))
        .unwrap_err();
    assert_eq!(
        e.to_string(),
        "models/target.yaml: headers.X-Team: the environment variable TEAM_TOKEN is not set"
    );
    assert!(!e.to_string().contains("sk-live"), "{e}");
}

#[test]
fn secrets_expand_headers_and_redact() {
    let t = ok(CHAT_YAML);
    let key = "sk-live-0123456789";
    let token = "tok-abcdef";
    let s = t
        .secrets(&env_of(&[("GATE_API_KEY", key), ("TEAM_TOKEN", token)]))
        .unwrap();
    assert_eq!(
        s.headers,
        vec![
            ("Authorization".to_owned(), format!("Bearer {key}")),
            ("X-Team".to_owned(), format!("team {token}")),
        ]
    );
    assert_eq!(s.values, vec![key.to_owned(), token.to_owned()], "longest first");
    let text = format!("401 for Bearer {key} with X-Team: team {token}; again {key}");
    let red = s.redact(&text);
    assert!(!red.contains(key) && !red.contains(token), "{red}");
    assert_eq!(
        red,
        "401 for Bearer [redacted] with X-Team: team [redacted]; again [redacted]"
    );
    // Debug shows counts, never a value.
    let dbg = format!("{s:?}");
    assert_eq!(dbg, "Secrets(2 headers, 2 values)");
    assert!(!dbg.contains(key) && !dbg.contains(token));
    // A target without secrets.
    let none = ok(MINIMAL_CHAT).secrets(&no_env).unwrap();
    assert!(none.headers.is_empty() && none.values.is_empty());
    assert_eq!(none.redact("nothing to hide"), "nothing to hide");
    let cmd = ok(COMMAND_YAML).secrets(&no_env).unwrap();
    assert!(cmd.headers.is_empty());
}

#[test]
fn secrets_of_plain_headers_are_not_values() {
    let t = ok("kind: http\nurl: http://h/x\nverdict: /v\nheaders:\n  X-Client: deploy-gate\n  X-Key: \"k=${KEY}\"\n");
    let s = t.secrets(&env_of(&[("KEY", "value-0987654321")])).unwrap();
    assert_eq!(
        s.headers,
        vec![
            ("X-Client".to_owned(), "deploy-gate".to_owned()),
            ("X-Key".to_owned(), "k=value-0987654321".to_owned())
        ]
    );
    assert!(!s.values.iter().any(|v| v == "deploy-gate"));
    assert!(s.values.iter().any(|v| v == "value-0987654321"));
    assert_eq!(s.redact("k=value-0987654321"), "k=[redacted]");
}

#[test]
fn secrets_values_are_deduplicated() {
    // The same value from the key and from a header, another of the same length between.
    let t = ok(&format!(
        "{MINIMAL_CHAT}api_key_env: KEY\nheaders:\n  X-A: \"${{OTHER}}\"\n  X-B: \"${{SAME}}\"\n"
    ));
    let s = t
        .secrets(&env_of(&[
            ("KEY", "samesecret"),
            ("OTHER", "othersecre"),
            ("SAME", "samesecret"),
        ]))
        .unwrap();
    let mut sorted = s.values.clone();
    sorted.sort();
    sorted.dedup();
    assert_eq!(s.values.len(), sorted.len(), "{:?}", s.values);
    assert_eq!(s.values.len(), 2);
}

// ---------------------------------------------------------------------------------------------
// Templates and bodies

#[test]
fn template_renders_fields() {
    let t =
        Template::parse("id={{pipeline_id}} tpl={{template_id}} in={{ input_text }} out={{expected_stage_outputs}}!")
            .unwrap();
    let c = sample_case();
    assert_eq!(
        t.render(&c),
        r#"id=17 tpl=tpl-9 in=deploy build 42 to prod out={"lint":"ok","tests":[1,2]}!"#
    );
    // A missing field is null.
    let mut partial = c.clone();
    partial.remove("template_id");
    assert_eq!(Template::parse("[{{template_id}}]").unwrap().render(&partial), "[null]");
    // A JSON null, a boolean, a float: compact JSON.
    let c2 = case(json!({"input_text": null, "pipeline_id": 1.5, "template_id": true}));
    assert_eq!(
        Template::parse("{{input_text}}|{{pipeline_id}}|{{template_id}}")
            .unwrap()
            .render(&c2),
        "null|1.5|true"
    );
    // A string is put in as it is: no quotes, no escapes.
    let c3 = case(json!({"input_text": "a \"quoted\"\nline {{template_id}}"}));
    assert_eq!(
        Template::parse("<{{input_text}}>").unwrap().render(&c3),
        "<a \"quoted\"\nline {{template_id}}>"
    );
    // No placeholder: the text.
    let plain = Template::parse("no fields { } }} here").unwrap();
    assert_eq!(plain.render(&c), "no fields { } }} here");
    assert_eq!(plain.source(), "no fields { } }} here");
    assert_eq!(Template::parse("").unwrap().render(&c), "");
    assert_eq!(
        Template::parse("{{input_text}}{{input_text}}")
            .unwrap()
            .render(&c3)
            .matches("quoted")
            .count(),
        2
    );
}

#[test]
fn template_refusals() {
    assert!(Template::parse("{{foo}}")
        .unwrap_err()
        .contains("{{foo}} is not a placeholder"));
    assert!(Template::parse("{{expected_verdict}}")
        .unwrap_err()
        .contains("must not be sent the answer"));
    assert!(Template::parse("{{}}").is_err());
    assert_eq!(
        Template::parse("x{{input_text").unwrap_err(),
        "`{{` at byte 1 is not closed by `}}`"
    );
    assert!(Template::parse("{{input_text}} {{").is_err());
    // Multi-byte text before: the byte offset.
    assert_eq!(
        Template::parse("é{{").unwrap_err(),
        "`{{` at byte 2 is not closed by `}}`"
    );
}

#[test]
fn chat_body() {
    let t = ok(CHAT_YAML);
    let body = t.body(&sample_case()).unwrap();
    assert_eq!(
        body,
        json!({
            "model": "agent-7b",
            "messages": [
                {"role": "system", "content": "You review deployments."},
                {"role": "user", "content": "Pipeline 17: deploy build 42 to prod"},
            ],
            "temperature": 0,
            "max_tokens": 64,
        })
    );
    // The expected verdict is never sent.
    assert!(!body.to_string().contains("expected_verdict"));
}

#[test]
fn http_body_template() {
    let t = ok(HTTP_YAML);
    let body = t.body(&sample_case()).unwrap();
    assert_eq!(
        body,
        json!({
            "text": "deploy build 42 to prod",
            "pipeline": 17,
            "outputs": {"lint": "ok", "tests": [1, 2]},
            "note": "case 17 from tpl-9",
            "fixed": 3,
            "list": [17, "tpl-9", true],
        })
    );
    // A missing field alone is null.
    let mut partial = sample_case();
    partial.remove("pipeline_id");
    let body = t.body(&partial).unwrap();
    assert_eq!(body["pipeline"], Json::Null);
    assert_eq!(body["note"], json!("case null from tpl-9"));
    // A body that is one placeholder.
    let whole = ok("kind: http\nurl: http://h/x\nverdict: /v\nbody: \"{{expected_stage_outputs}}\"\n");
    assert_eq!(whole.body(&sample_case()), Some(json!({"lint": "ok", "tests": [1, 2]})));
    // Object keys are not templates.
    let keys = ok("kind: http\nurl: http://h/x\nverdict: /v\nbody:\n  \"{{input_text}}\": 1\n");
    assert_eq!(keys.body(&sample_case()), Some(json!({"{{input_text}}": 1})));
}

#[test]
fn http_default_body_is_the_case_without_its_answer() {
    let t = ok(MINIMAL_HTTP);
    let mut c = sample_case();
    c.insert("episode_reward".into(), json!(1.0));
    let mut sent = c.clone();
    sent.remove("expected_verdict");
    sent.remove("episode_reward");
    assert_eq!(t.body(&c), Some(Json::Object(sent.clone())));
    let put = ok("kind: http\nurl: http://h/x\nmethod: PUT\nverdict: /v\n");
    assert_eq!(put.body(&c), Some(Json::Object(sent)));
}

#[test]
fn check_body_template_paths() {
    assert_eq!(
        check_body_template(&json!({"a": [1, "x", {"b": "{{input_text}}"}]})),
        Ok(())
    );
    let (path, message) = check_body_template(&json!({"a": [1, "x", {"b": "{{nope}}"}]})).unwrap_err();
    assert_eq!(path, ".a[2].b");
    assert!(message.contains("{{nope}}"));
    let (path, _) = check_body_template(&json!("{{nope}}")).unwrap_err();
    assert_eq!(path, "");
}

#[test]
fn case_fields_reads_objects_only() {
    assert_eq!(
        case_fields(br#"{"input_text": "x"}"#).unwrap().get("input_text"),
        Some(&json!("x"))
    );
    assert_eq!(case_fields(b"[1]").unwrap_err(), "the test case is not a JSON object");
    assert!(case_fields(b"{nope")
        .unwrap_err()
        .starts_with("the test case is not JSON"));
    assert!(case_fields(b"").is_err());
}

// ---------------------------------------------------------------------------------------------
// Cache keys

#[test]
fn cache_key_same_for_same_request() {
    let t = ok(CHAT_YAML);
    let b = t.body(&sample_case());
    let k = t.cache_key(b.as_ref(), b"line", 0);
    assert_eq!(k.len(), 64);
    assert!(k.bytes().all(|c| c.is_ascii_hexdigit()));
    assert_eq!(k, t.cache_key(b.as_ref(), b"line", 0));
    // The case line does not count for an endpoint: the body does.
    assert_eq!(k, t.cache_key(b.as_ref(), b"another line", 0));
    // What does not change the request does not change the key.
    let slower = ok(&format!(
        "{CHAT_YAML}timeout: 5m\nretries: 9\nconcurrency: {{max: 2}}\n"
    ));
    assert_eq!(k, slower.cache_key(slower.body(&sample_case()).as_ref(), b"line", 0));
}

#[test]
fn cache_key_differs_by_repeat_params_body() {
    let t = ok(CHAT_YAML);
    let c = sample_case();
    let b = t.body(&c);
    let k0 = t.cache_key(b.as_ref(), b"", 0);
    let k1 = t.cache_key(b.as_ref(), b"", 1);
    let k2 = t.cache_key(b.as_ref(), b"", 2);
    assert!(k0 != k1 && k1 != k2 && k0 != k2);
    // Other params.
    let hot = ok(&CHAT_YAML.replace("temperature: 0", "temperature: 1"));
    assert_ne!(k0, hot.cache_key(hot.body(&c).as_ref(), b"", 0));
    // Another model.
    let other = ok(&CHAT_YAML.replace("model: agent-7b", "model: agent-8b"));
    assert_ne!(k0, other.cache_key(other.body(&c).as_ref(), b"", 0));
    // Another case.
    let mut c2 = c.clone();
    c2.insert("input_text".into(), json!("another"));
    assert_ne!(k0, t.cache_key(t.body(&c2).as_ref(), b"", 0));
    // No body vs a body.
    assert_ne!(k0, t.cache_key(None, b"", 0));
    // Another endpoint, another header template.
    let moved = ok(&CHAT_YAML.replace("localhost:8000", "localhost:9000"));
    assert_ne!(k0, moved.cache_key(b.as_ref(), b"", 0));
    let hdr = ok(&CHAT_YAML.replace("team ${TEAM_TOKEN}", "group ${TEAM_TOKEN}"));
    assert_ne!(k0, hdr.cache_key(b.as_ref(), b"", 0));
    // Http: the method counts.
    let h = ok(MINIMAL_HTTP);
    let p = ok(&format!("{MINIMAL_HTTP}method: PUT\n"));
    let hb = h.body(&c);
    assert_ne!(h.cache_key(hb.as_ref(), b"", 0), p.cache_key(hb.as_ref(), b"", 0));
    // An http target and a chat target with the same body differ.
    assert_ne!(h.cache_key(b.as_ref(), b"", 0), k0);
}

#[test]
fn cache_key_ignores_replica_order() {
    let a = ok("kind: openai-chat\nbase_url: [http://a/v1, http://b/v1, http://c/v1]\nmodel: m\nmessages: [{role: user, content: \"{{input_text}}\"}]\n");
    let b = ok("kind: openai-chat\nbase_url: [http://c/v1, http://a/v1/, http://b/v1]\nmodel: m\nmessages: [{role: user, content: \"{{input_text}}\"}]\n");
    let c = sample_case();
    assert_eq!(
        a.cache_key(a.body(&c).as_ref(), b"", 3),
        b.cache_key(b.body(&c).as_ref(), b"", 3)
    );
    // A replica set is not one of its members.
    let single = ok(
        "kind: openai-chat\nbase_url: http://a/v1\nmodel: m\nmessages: [{role: user, content: \"{{input_text}}\"}]\n",
    );
    assert_ne!(
        a.cache_key(a.body(&c).as_ref(), b"", 3),
        single.cache_key(single.body(&c).as_ref(), b"", 3)
    );
}

#[test]
fn cache_key_of_a_command() {
    let t = ok(COMMAND_YAML);
    let line = br#"{"input_text":"x"}"#;
    let k = t.cache_key(None, line, 0);
    assert_eq!(k, ok(COMMAND_YAML).cache_key(None, line, 0));
    assert_ne!(k, t.cache_key(None, br#"{"input_text":"y"}"#, 0));
    assert_ne!(k, t.cache_key(None, line, 1));
    let other = ok("kind: command\nargv: [python3, worker.py, --model, ./other]\n");
    assert_ne!(k, other.cache_key(None, line, 0));
    // Only the argv and the line: other settings do not count.
    let slow = ok(&format!("{COMMAND_YAML}timeout: 10m\nretries: 0\n"));
    assert_eq!(k, slow.cache_key(None, line, 0));
}

// ---------------------------------------------------------------------------------------------
// Replies

fn chat_with(verdict: &str) -> Endpoint {
    ok(&format!("{MINIMAL_CHAT}verdict: '{verdict}'\n"))
}

fn answer(content: &str) -> Vec<u8> {
    json!({"choices": [{"index": 0, "message": {"role": "assistant", "content": content}, "finish_reason": "stop"}]})
        .to_string()
        .into_bytes()
}

#[test]
fn reply_content_trimmed() {
    let t = ok(MINIMAL_CHAT);
    let r = t.read_reply(&answer("  PASS \n")).unwrap();
    assert_eq!(r.verdict, "\"PASS\"");
    assert!(r.usage.is_empty());
    assert_eq!(r.usage, Usage::default());
    let r = t.read_reply(&answer("say \"hi\"")).unwrap();
    assert_eq!(r.verdict, r#""say \"hi\"""#);
    let r = t.read_reply(&answer("")).unwrap();
    assert_eq!(r.verdict, "\"\"");
}

#[test]
fn reply_json_pointer() {
    let t = chat_with("json:/verdict");
    assert_eq!(
        t.read_reply(&answer(r#"{"verdict": "block", "why": "x"}"#))
            .unwrap()
            .verdict,
        "\"block\""
    );
    assert_eq!(
        t.read_reply(&answer("```json\n{\"verdict\": \"allow\"}\n```"))
            .unwrap()
            .verdict,
        "\"allow\""
    );
    assert_eq!(
        t.read_reply(&answer("  ```\n{\"verdict\": 3}\n```  ")).unwrap().verdict,
        "3"
    );
    assert_eq!(
        t.read_reply(&answer(r#"{"verdict": {"a": [1, true]}}"#))
            .unwrap()
            .verdict,
        r#"{"a":[1,true]}"#
    );
    let e = t.read_reply(&answer(r#"{"other": 1}"#)).unwrap_err();
    assert!(e.contains("nothing at /verdict"), "{e}");
    let e = t.read_reply(&answer("I think it should pass")).unwrap_err();
    assert!(e.starts_with("the answer is not JSON"), "{e}");
    assert!(e.contains("I think it should pass"), "{e}");
    // The whole answer.
    let whole = chat_with("json:");
    assert_eq!(whole.read_reply(&answer("[1, 2]")).unwrap().verdict, "[1,2]");
    // Nested pointers.
    let nested = chat_with("json:/result/0/label");
    assert_eq!(
        nested
            .read_reply(&answer(r#"{"result": [{"label": null}]}"#))
            .unwrap()
            .verdict,
        "null"
    );
}

#[test]
fn reply_regex() {
    let group = chat_with(r"regex:VERDICT:\s*(\w+)");
    assert_eq!(
        group
            .read_reply(&answer("Reasoning...\nVERDICT: block\n"))
            .unwrap()
            .verdict,
        "\"block\""
    );
    let whole = chat_with(r"regex:\b(?:PASS|FAIL)\b");
    assert_eq!(
        whole.read_reply(&answer("the result is FAIL, sadly")).unwrap().verdict,
        "\"FAIL\""
    );
    let e = whole.read_reply(&answer("no idea")).unwrap_err();
    assert!(e.contains("does not match regex"), "{e}");
    assert!(e.contains("no idea"), "{e}");
    // The first match.
    assert_eq!(
        group.read_reply(&answer("VERDICT: a VERDICT: b")).unwrap().verdict,
        "\"a\""
    );
}

#[test]
fn reply_without_text() {
    let t = ok(MINIMAL_CHAT);
    assert_eq!(
        t.read_reply(br#"{"choices": []}"#).unwrap_err(),
        "the response has no choices[0]"
    );
    assert_eq!(
        t.read_reply(br#"{"id": "x"}"#).unwrap_err(),
        "the response has no choices[0]"
    );
    let e = t
        .read_reply(br#"{"error": {"message": "model overloaded"}}"#)
        .unwrap_err();
    assert_eq!(e, "the server answered an error: model overloaded");
    let e = t
        .read_reply(br#"{"choices": [{"message": {"role": "assistant", "content": null}, "finish_reason": "length"}]}"#)
        .unwrap_err();
    assert_eq!(
        e,
        "the answer has no text in choices[0].message.content (finish_reason \"length\")"
    );
    let e = t
        .read_reply(br#"{"choices": [{"message": {"role": "assistant"}}]}"#)
        .unwrap_err();
    assert_eq!(e, "the answer has no text in choices[0].message.content");
    let e = t
        .read_reply(br#"{"choices": [{"message": {"content": [{"type": "text"}]}}]}"#)
        .unwrap_err();
    assert_eq!(e, "choices[0].message.content is not text but a list");
    let e = t
        .read_reply(br#"{"choices": [{"message": {"content": {"a": 1}}}]}"#)
        .unwrap_err();
    assert!(e.ends_with("an object"), "{e}");
    let e = t
        .read_reply(br#"{"choices": [{"message": {"content": 5}}]}"#)
        .unwrap_err();
    assert!(e.ends_with("a scalar"), "{e}");
}

#[test]
fn reply_not_json() {
    let t = ok(MINIMAL_CHAT);
    let e = t.read_reply(b"<html><body>502 Bad Gateway</body></html>").unwrap_err();
    assert!(e.starts_with("the response is not JSON ("), "{e}");
    assert!(e.contains("502 Bad Gateway"), "{e}");
    let e = t.read_reply(b"").unwrap_err();
    assert!(e.starts_with("the response is not JSON"), "{e}");
    // Long or binary bodies are cut.
    let long = vec![b'x'; 10_000];
    let e = t.read_reply(&long).unwrap_err();
    assert!(e.len() < 400, "{}", e.len());
    let e = t.read_reply(&[0xff, 0xfe, 0xe2, 0x82]).unwrap_err();
    assert!(e.starts_with("the response is not JSON"), "{e}");
}

#[test]
fn reply_http_pointer() {
    let t = ok(MINIMAL_HTTP);
    let r = t
        .read_reply(br#"{"verdict": "pass", "usage": {"prompt_tokens": 3}}"#)
        .unwrap();
    assert_eq!(r.verdict, "\"pass\"");
    assert_eq!(
        r.usage,
        Usage {
            prompt_tokens: Some(3),
            completion_tokens: None
        }
    );
    let e = t.read_reply(br#"{"message": "no such model"}"#).unwrap_err();
    assert_eq!(e, "the response has nothing at /verdict: no such model");
    let nested = ok(HTTP_YAML);
    assert_eq!(
        nested
            .read_reply(br#"{"result": {"verdict": [1, "a"]}}"#)
            .unwrap()
            .verdict,
        r#"[1,"a"]"#
    );
    assert!(nested.read_reply(br#"{"result": 5}"#).is_err());
    let whole = ok("kind: http\nurl: http://h/x\nverdict: \"\"\n");
    assert_eq!(whole.read_reply(b" true ").unwrap().verdict, "true");
    // A command target has no HTTP reply.
    assert!(ok(COMMAND_YAML).read_reply(b"{}").is_err());
}

#[test]
fn reply_usage() {
    let t = ok(MINIMAL_CHAT);
    let body = json!({
        "choices": [{"message": {"content": "ok"}}],
        "usage": {"prompt_tokens": 120, "completion_tokens": 7, "total_tokens": 127},
    });
    let r = t.read_reply(body.to_string().as_bytes()).unwrap();
    assert_eq!(
        r.usage,
        Usage {
            prompt_tokens: Some(120),
            completion_tokens: Some(7)
        }
    );
    assert!(!r.usage.is_empty());
    let r = t
        .read_reply(br#"{"choices": [{"message": {"content": "ok"}}], "usage": {"completion_tokens": 2}}"#)
        .unwrap();
    assert_eq!(
        r.usage,
        Usage {
            prompt_tokens: None,
            completion_tokens: Some(2)
        }
    );
    // Not numbers: not read.
    let r = t
        .read_reply(br#"{"choices": [{"message": {"content": "ok"}}], "usage": {"prompt_tokens": "many", "completion_tokens": -1}}"#)
        .unwrap();
    assert!(r.usage.is_empty());
    let r = t
        .read_reply(br#"{"choices": [{"message": {"content": "ok"}}], "usage": null}"#)
        .unwrap();
    assert!(r.usage.is_empty());
}

#[test]
fn server_messages_and_cut() {
    assert_eq!(
        server_message(br#"{"error": {"message": "rate limited"}}"#),
        "rate limited"
    );
    assert_eq!(server_message(br#"{"message": "bad"}"#), "bad");
    assert_eq!(
        server_message(br#"{"detail": [{"loc": ["body"]}]}"#),
        r#"[{"loc":["body"]}]"#
    );
    assert_eq!(server_message(br#"{"error": "plain"}"#), "plain");
    assert_eq!(server_message(b"  Service Unavailable\r\n"), "Service Unavailable");
    let long = "é".repeat(MAX_MESSAGE + 10);
    let c = cut(&long);
    assert_eq!(c.chars().count(), MAX_MESSAGE + 1);
    assert!(c.ends_with('…'));
    assert_eq!(cut("a\tb\nc"), "a b c");
}

#[test]
fn a_body_longer_than_read_keeps_its_beginning_cut_on_a_character() {
    // Whole: the message, as before.
    assert_eq!(
        error_text(br#"{"error": {"message": "overloaded"}}"#, true),
        "overloaded"
    );
    // Longer than read: not JSON any more, so its beginning as text.
    let body = format!(
        r#"{{"error":{{"message":"overloaded","padding":"{}"}}}}"#,
        "é".repeat(40)
    );
    for n in 1..body.len() {
        let prefix = &body.as_bytes()[..n];
        let text = error_text(prefix, false);
        assert!(!text.contains('\u{FFFD}'), "{n}: {text:?}");
        assert!(body.starts_with(&text), "{n}: {text:?}");
        assert!(text.len() + 1 >= n, "at most one torn 2-byte character dropped: {n}");
    }
    assert_eq!(
        cut(&error_text(&body.as_bytes()[..32], false)),
        r#"{"error":{"message":"overloaded""#
    );
    // Torn 3- and 4-byte characters, each cut back whole; whole ones kept.
    for c in ["€", "😀", "é", "a"] {
        let s = format!("ab{c}");
        for n in 2..=s.len() {
            let kept = body_prefix(&s.as_bytes()[..n]);
            assert_eq!(kept, if n == s.len() { s.as_bytes() } else { b"ab" }, "{c} {n}");
        }
    }
    // Bytes that are not UTF-8 before the end are read as elsewhere (replacement characters).
    assert_eq!(error_text(b"\xff\xfeoops", false), "\u{FFFD}\u{FFFD}oops");
    assert_eq!(
        body_prefix(b"ok\x80"),
        b"ok\x80",
        "a stray continuation byte is not a torn character"
    );
}

// ---------------------------------------------------------------------------------------------
// Control: statuses, Retry-After, backoff, the limiter, ${ENV}, redaction

#[test]
fn classify_statuses() {
    assert_eq!(classify(429), Failure::Overload);
    assert_eq!(classify(503), Failure::Overload);
    for s in [500, 502, 504, 408] {
        assert_eq!(classify(s), Failure::Transient, "{s}");
    }
    for s in [400, 401, 403, 404, 409, 422, 301, 307, 308, 501, 505] {
        assert_eq!(classify(s), Failure::Final, "{s}");
    }
}

#[test]
fn retry_after_values() {
    let now = UNIX_EPOCH + Duration::from_secs(1_700_000_000);
    assert_eq!(retry_after("5", now), Some(Duration::from_secs(5)));
    assert_eq!(retry_after(" 7 ", now), Some(Duration::from_secs(7)));
    assert_eq!(retry_after("0", now), Some(Duration::ZERO));
    assert_eq!(retry_after("120", now), Some(control::MAX_RETRY_AFTER));
    assert_eq!(retry_after("3600", now), Some(control::MAX_RETRY_AFTER));
    assert_eq!(retry_after("18446744073709551615", now), Some(control::MAX_RETRY_AFTER));
    let date = |t: SystemTime| httpdate::fmt_http_date(t);
    assert_eq!(
        retry_after(&date(now + Duration::from_secs(30)), now),
        Some(Duration::from_secs(30))
    );
    assert_eq!(
        retry_after(&date(now + Duration::from_secs(3600)), now),
        Some(control::MAX_RETRY_AFTER)
    );
    assert_eq!(
        retry_after(&date(now - Duration::from_secs(30)), now),
        Some(Duration::ZERO)
    );
    assert_eq!(retry_after(&date(now), now), Some(Duration::ZERO));
    assert_eq!(retry_after("Wed, 21 Oct 2015 07:28:00 GMT", now), Some(Duration::ZERO));
    for garbage in ["", "soon", "-1", "1.5", "5s", "Wed, 32 Oct 2015 07:28:00 GMT"] {
        assert_eq!(retry_after(garbage, now), None, "{garbage:?}");
    }
}

#[test]
fn backoff_grows_and_is_capped() {
    use control::{BASE_BACKOFF, MAX_BACKOFF};
    // Without jitter: half the exponential; with the most jitter: all of it.
    assert_eq!(backoff(1, None, 0.0), BASE_BACKOFF / 2);
    assert_eq!(backoff(1, None, 1.0), BASE_BACKOFF);
    assert_eq!(backoff(2, None, 0.0), BASE_BACKOFF);
    assert_eq!(backoff(3, None, 0.0), BASE_BACKOFF * 2);
    assert_eq!(backoff(0, None, 0.0), BASE_BACKOFF / 2);
    let mut last = Duration::ZERO;
    for attempt in 1..40 {
        for jitter in [0.0, 0.25, 0.5, 0.999] {
            let d = backoff(attempt, None, jitter);
            let full = BASE_BACKOFF.saturating_mul(1 << (attempt - 1).min(16)).min(MAX_BACKOFF);
            assert!(d >= full / 2 && d <= full, "attempt {attempt} jitter {jitter}: {d:?}");
            assert!(d <= MAX_BACKOFF);
        }
        let d = backoff(attempt, None, 0.5);
        assert!(d >= last, "attempt {attempt}: {d:?} < {last:?}");
        last = d;
    }
    assert_eq!(backoff(100, None, 0.0), MAX_BACKOFF / 2);
    assert_eq!(backoff(u32::MAX, None, 1.0), MAX_BACKOFF);
    // Jitter out of [0, 1] is clamped.
    assert_eq!(backoff(4, None, 7.0), backoff(4, None, 1.0));
    assert_eq!(backoff(4, None, -3.0), backoff(4, None, 0.0));
    assert_eq!(backoff(4, None, f64::NAN), backoff(4, None, 0.0));
    assert_eq!(
        backoff(4, Some(Duration::from_secs(1)), f64::NAN),
        Duration::from_secs(1)
    );
    // The server's wait, plus at most 100 ms.
    let s = Duration::from_secs(2);
    assert_eq!(backoff(1, Some(s), 0.0), s);
    let d = backoff(9, Some(s), 0.999);
    assert!(d >= s && d < s + Duration::from_millis(100), "{d:?}");
    assert_eq!(backoff(1, Some(Duration::ZERO), 0.0), Duration::ZERO);
}

#[test]
fn limiter_starts_at_initial_within_bounds() {
    assert_eq!(Limiter::new(8, 1, 64).permits(), 8);
    assert_eq!(Limiter::new(100, 1, 10).permits(), 10);
    assert_eq!(Limiter::new(1, 5, 10).permits(), 5);
    assert_eq!(Limiter::new(0, 0, 0).permits(), 1, "never below one");
    assert_eq!(Limiter::new(3, 5, 2).permits(), 5, "max below min is min");
    assert_eq!(Limiter::new(8, 1, 64).cuts, 0);
}

#[test]
fn limiter_grows_by_about_one_per_window() {
    let mut l = Limiter::new(8, 1, 64);
    let mut n = 0;
    while l.permits() == 8 {
        l.success();
        n += 1;
    }
    assert_eq!(l.permits(), 9);
    assert!((7..=9).contains(&n), "{n} successes from 8 to 9");
    let mut m = 0;
    while l.permits() == 9 {
        l.success();
        m += 1;
    }
    assert!((8..=10).contains(&m), "{m} successes from 9 to 10");
    // Never above max.
    for _ in 0..100_000 {
        l.success();
    }
    assert_eq!(l.permits(), 64);
}

#[test]
fn limiter_halves_on_overload_never_below_min() {
    let mut l = Limiter::new(32, 3, 64);
    let n = l.sent();
    assert!(l.overload(n));
    assert_eq!(l.permits(), 16);
    assert_eq!(l.cuts, 1);
    for expected in [8, 4, 3, 3, 3] {
        let n = l.sent();
        assert!(l.overload(n));
        assert_eq!(l.permits(), expected);
    }
    assert_eq!(l.cuts, 6);
    // Then it grows back.
    for _ in 0..100 {
        l.success();
    }
    assert!(l.permits() > 3);
}

#[test]
fn limiter_one_burst_is_one_signal() {
    let mut l = Limiter::new(16, 1, 64);
    // Eight requests in flight at once; all meet a 429.
    let burst: Vec<u64> = (0..8).map(|_| l.sent()).collect();
    assert!(l.overload(burst[3]), "the first overload cuts");
    assert_eq!(l.permits(), 8);
    for &n in &burst {
        assert!(!l.overload(n), "request {n} was sent before the cut");
    }
    assert_eq!(l.permits(), 8);
    assert_eq!(l.cuts, 1);
    // A request sent after the cut that meets an overload cuts again.
    let after = l.sent();
    assert!(l.overload(after));
    assert_eq!(l.permits(), 4);
    assert!(!l.overload(after));
    assert_eq!(l.cuts, 2);
    // Successes in between do not reset that.
    let mut l = Limiter::new(16, 1, 64);
    let a = l.sent();
    let b = l.sent();
    assert!(l.overload(b));
    l.success();
    assert!(!l.overload(a));
}

#[test]
fn env_names_and_expansion() {
    assert_eq!(env_names("plain").unwrap(), Vec::<String>::new());
    assert_eq!(env_names("${A}").unwrap(), vec!["A"]);
    assert_eq!(
        env_names("Bearer ${TOKEN_1} and ${_X}${Y}").unwrap(),
        vec!["TOKEN_1", "_X", "Y"]
    );
    assert_eq!(env_names("$A {B} $ {").unwrap(), Vec::<String>::new());
    assert_eq!(env_names("${A").unwrap_err(), "`${` is not closed by `}`");
    assert_eq!(env_names("${A}${").unwrap_err(), "`${` is not closed by `}`");
    assert_eq!(
        env_names("${A-B}").unwrap_err(),
        "${A-B} is not an environment variable's name"
    );
    assert!(env_names("${}").is_err());
    assert!(env_names("${9}").is_err());
    assert!(env_names("${ A}").is_err());
    assert!(env_names("${é}").is_err());

    let env = env_of(&[("A", "1"), ("TOKEN", "s3cr3t"), ("EMPTY", ""), ("NEST", "${A}")]);
    assert_eq!(expand_env("plain", &env).unwrap(), ("plain".to_owned(), false));
    assert_eq!(
        expand_env("Bearer ${TOKEN}", &env).unwrap(),
        ("Bearer s3cr3t".to_owned(), true)
    );
    assert_eq!(
        expand_env("${A}${A}-${EMPTY}.", &env).unwrap(),
        ("11-.".to_owned(), true)
    );
    // A value is not expanded again.
    assert_eq!(expand_env("${NEST}", &env).unwrap(), ("${A}".to_owned(), true));
    assert_eq!(expand_env("x ${MISSING} ${A}", &env).unwrap_err(), "MISSING");
}

#[test]
fn redact_secrets() {
    let s = |v: &[&str]| v.iter().map(|x| x.to_string()).collect::<Vec<_>>();
    assert_eq!(
        control::redact("key=abc123 again abc123", &s(&["abc123"])),
        "key=[redacted] again [redacted]"
    );
    assert_eq!(control::redact("nothing", &s(&["abc123"])), "nothing");
    assert_eq!(control::redact("text", &s(&[""])), "text", "an empty secret is ignored");
    assert_eq!(control::redact("", &s(&["abc"])), "");
    // One inside another: the longer goes whole.
    assert_eq!(
        control::redact("xx abcdef yy cd", &s(&["abcdef", "cd"])),
        "xx [redacted] yy [redacted]"
    );
    // Overlapping secrets: nothing of either is left.
    assert_eq!(control::redact("[abcdefgh]", &s(&["abcdef", "efgh"])), "[[redacted]]");
    assert_eq!(control::redact("[abcdefgh]", &s(&["efgh", "abcdef"])), "[[redacted]]");
    assert_eq!(
        control::redact("[efghabcdef]", &s(&["abcdef", "efgh"])),
        "[[redacted][redacted]]"
    );
    assert_eq!(
        control::redact("[xyzabcdef]", &s(&["abcdef", "defghi", "xyzab"])),
        "[[redacted]]"
    );
    // A secret overlapping itself.
    assert_eq!(control::redact("aaaaa", &s(&["aaa"])), "[redacted]");
    // Next to each other: each is redacted.
    assert_eq!(
        control::redact("KEY1KEY2", &s(&["KEY1", "KEY2"])),
        "[redacted][redacted]"
    );
    // Multi-byte text around and in secrets.
    assert_eq!(control::redact("é→sécrét←é", &s(&["sécrét"])), "é→[redacted]←é");
    assert_eq!(control::redact("ééé", &s(&["éé"])), "[redacted]");
    // A secret that is part of the replacement text does not garble it.
    assert_eq!(
        control::redact("key: topsecret, redacted", &s(&["topsecret", "redacted"])),
        "key: [redacted], [redacted]"
    );
}

// ---------------------------------------------------------------------------------------------
// Never a panic

/// Fragments of target files, to build texts near the valid ones.
fn fragment() -> impl Strategy<Value = String> {
    prop_oneof![
        Just("kind: openai-chat\n".to_owned()),
        Just("kind: http\n".to_owned()),
        Just("kind: command\n".to_owned()),
        Just("base_url: http://h/v1\n".to_owned()),
        Just("base_url: [http://a/v1, 'x']\n".to_owned()),
        Just("url: http://h/x/\n".to_owned()),
        Just("model: m\n".to_owned()),
        Just("messages:\n  - role: user\n    content: \"{{input_text}}\"\n".to_owned()),
        Just("messages: [{role: u, content: '{{'}]\n".to_owned()),
        Just("verdict: /v\n".to_owned()),
        Just("verdict: 'regex:(a'\n".to_owned()),
        Just("argv: [x]\n".to_owned()),
        Just("argv: []\n".to_owned()),
        Just("headers: {X: '${A'}\n".to_owned()),
        Just("concurrency: {min: 0, max: 99999999999999999999999}\n".to_owned()),
        Just("timeout: 1e400\n".to_owned()),
        Just("timeout: 99999999999999999999999999999s\n".to_owned()),
        Just("max_response_bytes: 99999999999999999999999GiB\n".to_owned()),
        Just("retries: 340282366920938463463374607431768211455\n".to_owned()),
        Just("params: {n: .nan, stream: ~}\n".to_owned()),
        Just("body: &a [*a]\n".to_owned()),
        Just("api_key_env: \"\"\n".to_owned()),
        Just("  ".to_owned()),
        Just("- ".to_owned()),
        Just("{".to_owned()),
        Just("\"".to_owned()),
        "[ -~]{0,12}\n?",
        "\\PC{0,8}",
    ]
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 512, ..ProptestConfig::default() })]

    #[test]
    fn read_target_never_panics_on_text(text in "\\PC*") {
        let _ = read_endpoint("t.yaml", text.as_bytes());
    }

    #[test]
    fn read_target_never_panics_on_bytes(bytes in proptest::collection::vec(any::<u8>(), 0..512)) {
        let _ = read_endpoint("t.yaml", &bytes);
    }

    #[test]
    fn read_target_never_panics_near_valid_files(parts in proptest::collection::vec(fragment(), 0..12)) {
        let text: String = parts.concat();
        if let Ok(t) = read_endpoint("t.yaml", text.as_bytes()) {
            // A target read is usable without a panic.
            let c = sample_case();
            let body = t.body(&c);
            let _ = t.cache_key(body.as_ref(), b"{}", 0);
            let _ = t.read_reply(&answer("x"));
            let _ = t.secrets(&env_of(&[("A", "value")]));
            let _ = t.describe();
            prop_assert!(t.digest.starts_with("sha256:"));
        }
    }

    #[test]
    fn refusals_name_the_file(parts in proptest::collection::vec(fragment(), 0..8)) {
        let text: String = parts.concat();
        if let Err(e) = read_endpoint("named.yaml", text.as_bytes()) {
            prop_assert_eq!(e.file.as_str(), "named.yaml");
            prop_assert!(e.to_string().starts_with("named.yaml"));
        }
    }

    #[test]
    fn redact_leaves_no_secret(text in "[ab ]{0,40}", secrets in proptest::collection::vec("[ab]{2,5}", 1..4)) {
        let out = control::redact(&text, &secrets);
        // `[redacted]` holds no `b`, no `aa` and no `ab`: any secret left is a leak.
        for s in &secrets {
            prop_assert!(!out.contains(s.as_str()), "{:?} left in {:?}", s, out);
        }
    }

    #[test]
    fn backoff_within_bounds(attempt in 0u32..200, jitter in 0.0f64..1.0) {
        let d = backoff(attempt, None, jitter);
        prop_assert!(d >= control::BASE_BACKOFF / 2 && d <= control::MAX_BACKOFF);
    }

    #[test]
    fn limiter_stays_within_bounds(
        initial in 0usize..100, min in 0usize..20, max in 0usize..100,
        steps in proptest::collection::vec(any::<bool>(), 0..200),
    ) {
        let mut l = Limiter::new(initial, min, max);
        let lo = min.max(1);
        let hi = max.max(lo);
        for overload in steps {
            let n = l.sent();
            if overload { l.overload(n); } else { l.success(); }
            prop_assert!(l.permits() >= lo && l.permits() <= hi, "{} not in {}..={}", l.permits(), lo, hi);
        }
    }
}

#[test]
fn lines_of_block_scalars_and_leading_comments() {
    // A block scalar: the line of its `|`.
    refused_at(
        "kind: openai-chat\nbase_url: http://h/v1\nmodel: m\nmessages:\n  - role: user\n    content: |\n      line one\n      {{foo}}\n",
        6,
        "messages[0].content",
        "{{foo}} is not a placeholder",
    );
    // A missing field: the line where the mapping starts.
    refused_at(
        "# a comment\n\nkind: command\n",
        3,
        "argv",
        "missing (an endpoint of kind command needs it)",
    );
    // Not a mapping: the line, no field.
    let e = refused("- kind\n- http\n");
    assert_eq!(
        e.to_string(),
        "models/target.yaml line 1: expected a mapping, found a list"
    );
    let e = refused("just text\n");
    assert_eq!(
        e.to_string(),
        "models/target.yaml line 1: expected a mapping, found a string"
    );
}

// ---------------------------------------------------------------------------------------------
// What the records keep of the answers (`output`)

fn kept(t: &Endpoint, body: &[u8]) -> Option<(String, bool)> {
    t.answered(body).map(|a| {
        let o = a.bounded(t.max_output_bytes);
        (o.json, o.truncated)
    })
}

#[test]
fn outputs_are_kept_by_default_within_64_kib_and_the_fields_read() {
    let t = ok(MINIMAL_CHAT);
    assert!(t.outputs);
    assert_eq!(t.max_output_bytes, 64 * 1024);
    let t = ok(&format!("{MINIMAL_CHAT}outputs: false\nmax_output_bytes: 1KiB\n"));
    assert!(!t.outputs);
    assert_eq!(t.max_output_bytes, 1024);
    assert_eq!(kept(&t, &answer("PASS")), None);
    assert_eq!(
        ok(&format!("{MINIMAL_HTTP}max_output_bytes: 300\n")).max_output_bytes,
        300
    );
    refused_at(
        &format!("{MINIMAL_CHAT}outputs: no way\n"),
        7,
        "outputs",
        "expected true or false",
    );
    refused_at(
        &format!("{MINIMAL_CHAT}max_output_bytes: 0\n"),
        7,
        "max_output_bytes",
        "must be more than 0",
    );
    refused_at(
        &format!("{MINIMAL_CHAT}max_output_bytes: lots\n"),
        7,
        "max_output_bytes",
        "is not a size",
    );
    refused_at(
        &format!("{MINIMAL_HTTP}output: result\n"),
        4,
        "output",
        "is not a JSON pointer",
    );
    // Only an http endpoint has an `output` pointer.
    refused_at(&format!("{MINIMAL_CHAT}output: /x\n"), 7, "output", "unknown field");
}

#[test]
fn what_records_keep_does_not_change_the_digest() {
    // The same model asked the same way: files written before these fields keep their digest.
    for extra in ["outputs: false", "outputs: true", "max_output_bytes: 1KiB"] {
        assert_eq!(
            ok(MINIMAL_CHAT).digest,
            ok(&format!("{MINIMAL_CHAT}{extra}\n")).digest,
            "{extra}"
        );
        assert_eq!(
            ok(COMMAND_YAML).digest,
            ok(&format!("{COMMAND_YAML}{extra}\n")).digest,
            "{extra}"
        );
    }
    assert_eq!(
        ok(MINIMAL_HTTP).digest,
        ok(&format!("{MINIMAL_HTTP}output: /text\n")).digest
    );
}

#[test]
fn a_chat_answer_is_kept_as_its_text_or_as_its_message() {
    let t = ok(MINIMAL_CHAT);
    assert_eq!(
        kept(&t, &answer("  PASS, because the tests pass\n")),
        Some(("\"  PASS, because the tests pass\\n\"".into(), false))
    );
    // Tool calls, reasoning or a refusal: the message object, as the server gave it.
    for extra in [
        json!({"tool_calls": [{"id": "c1", "type": "function", "function": {"name": "lookup", "arguments": "{}"}}]}),
        json!({"reasoning_content": "first I check the stage"}),
        json!({"refusal": "I cannot"}),
    ] {
        let mut message = json!({"role": "assistant", "content": "PASS"});
        for (k, v) in extra.as_object().unwrap() {
            message[k] = v.clone();
        }
        let body = json!({"choices": [{"index": 0, "message": message.clone()}]}).to_string();
        let (json, truncated) = kept(&t, body.as_bytes()).unwrap();
        assert_eq!(serde_json::from_str::<Json>(&json).unwrap(), message);
        assert!(!truncated);
    }
    // `tool_calls: null` is no tool call.
    let body =
        json!({"choices": [{"message": {"role": "assistant", "content": "OK", "tool_calls": null}}]}).to_string();
    assert_eq!(kept(&t, body.as_bytes()), Some(("\"OK\"".into(), false)));
    // No text: the message (the case is errored, and the reviewer sees why).
    let body = json!({"choices": [{"message": {"role": "assistant", "content": null}, "finish_reason": "length"}]})
        .to_string();
    assert!(t.read_reply(body.as_bytes()).is_err());
    assert_eq!(
        kept(&t, body.as_bytes()),
        Some(("{\"role\":\"assistant\",\"content\":null}".into(), false))
    );
    // No choices: the whole response; not JSON: its text.
    let body = br#"{"object":"chat.completion","choices":[]}"#;
    assert_eq!(
        kept(&t, body),
        Some(("{\"object\":\"chat.completion\",\"choices\":[]}".into(), false))
    );
    assert_eq!(
        kept(&t, b"<html>oops</html>"),
        Some(("\"<html>oops</html>\"".into(), false))
    );
}

#[test]
fn an_answer_the_verdict_rule_cannot_read_is_kept_whole() {
    let t = chat_with("json:/verdict");
    let body = answer("The verdict is allow, I think");
    assert!(t.read_reply(&body).is_err());
    assert_eq!(
        kept(&t, &body),
        Some(("\"The verdict is allow, I think\"".into(), false))
    );
}

#[test]
fn an_http_answer_is_kept_whole_or_at_its_output_pointer() {
    let body = br#"{"verdict": "PASS", "explanation": {"steps": [1, 2]}}"#;
    let t = ok(MINIMAL_HTTP);
    assert_eq!(
        kept(&t, body),
        Some(("{\"verdict\":\"PASS\",\"explanation\":{\"steps\":[1,2]}}".into(), false))
    );
    let t = ok(&format!("{MINIMAL_HTTP}output: /explanation\n"));
    assert_eq!(kept(&t, body), Some(("{\"steps\":[1,2]}".into(), false)));
    // Nothing there: the whole response.
    let t = ok(&format!("{MINIMAL_HTTP}output: /missing\n"));
    assert_eq!(
        kept(&t, body),
        Some(("{\"verdict\":\"PASS\",\"explanation\":{\"steps\":[1,2]}}".into(), false))
    );
    // A command's workers send their own.
    assert!(ok(COMMAND_YAML).answered(body).is_none());
}

#[test]
fn a_long_answer_is_cut_on_a_character_boundary_and_marked() {
    let t = ok(&format!("{MINIMAL_CHAT}max_output_bytes: 10\n"));
    // 9 ASCII bytes, then a 4-byte character that would cross the bound.
    let (json, truncated) = kept(&t, &answer("123456789😀 and more")).unwrap();
    assert_eq!(json, "\"123456789\"");
    assert!(truncated);
    // Exactly at the bound: whole.
    assert_eq!(kept(&t, &answer("0123456789")), Some(("\"0123456789\"".into(), false)));
    // A message object over the bound: the text of its first bytes.
    let body = json!({"choices": [{"message": {"role": "assistant", "content": "x", "refusal": "no"}}]}).to_string();
    let (json, truncated) = kept(&t, body.as_bytes()).unwrap();
    assert_eq!(serde_json::from_str::<String>(&json).unwrap(), "{\"role\":\"a");
    assert!(truncated);
}

proptest! {
    #[test]
    fn any_answer_is_kept_as_one_line_of_json_within_the_bound(text in "\\PC{0,40}", max in 1usize..48) {
        let o = crate::run::records::Output::text(&text, max);
        let back: String = serde_json::from_str(&o.json).unwrap();
        prop_assert!(back.len() <= max);
        prop_assert!(text.starts_with(&back));
        prop_assert_eq!(o.truncated, back.len() < text.len());
        prop_assert!(!o.json.contains('\n'));
    }
}
