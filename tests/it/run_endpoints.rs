//! `deploy-gate run` against real endpoints: the fault-injecting server of `tests/servers/`
//! (a Python process on loopback, one per test) behind target files of `kind: openai-chat` and
//! `http`, and a `kind: command` target beside one. Two-model runs read back by `evaluate`,
//! retries and `Retry-After`, timeouts and broken answers, secrets never written, adaptive
//! concurrency under a server's capacity, the response cache, resuming after SIGKILL, target
//! files refused with their line, and replicas.

use crate::common::*;
use serde_json::{json, Value};
use std::collections::{HashMap, HashSet};
use std::io::{BufRead, BufReader, Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

/// The longest any process of these tests may take before it is killed and the test fails.
const LIMIT: Duration = Duration::from_secs(60);

/// A fault server (`tests/servers/fault_server.py`), killed when dropped.
struct Server {
    child: Child,
    port: u16,
}

impl Server {
    /// Starts a server on a free port with these flags (`--capacity 4`, `--latency 20`).
    fn start(flags: &[&str]) -> Server {
        let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/servers/fault_server.py");
        let mut child = Command::new("python3")
            .arg(script)
            .args(["--port", "0"])
            .args(flags)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("python3 runs the fault server");
        let stdout = child.stdout.take().expect("piped");
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let mut line = String::new();
            let _ = BufReader::new(stdout).read_line(&mut line);
            let _ = tx.send(line);
        });
        let mut server = Server { child, port: 0 };
        let line = rx.recv_timeout(LIMIT).expect("the fault server prints its port");
        let start: Value = serde_json::from_str(&line).unwrap_or_else(|e| panic!("{e}: {line:?}"));
        server.port = start["port"].as_u64().expect("a port") as u16;
        server
    }

    /// `http://127.0.0.1:PORT` and the path.
    fn url(&self, path: &str) -> String {
        format!("http://127.0.0.1:{}{path}", self.port)
    }

    /// A request without a body, its answer's body as JSON.
    fn call(&self, method: &str, path: &str) -> Value {
        let mut stream = std::net::TcpStream::connect(("127.0.0.1", self.port)).unwrap();
        stream.set_read_timeout(Some(LIMIT)).unwrap();
        write!(
            stream,
            "{method} {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
        )
        .unwrap();
        let mut answer = Vec::new();
        stream.read_to_end(&mut answer).unwrap();
        let at = answer
            .windows(4)
            .position(|w| w == b"\r\n\r\n")
            .expect("an HTTP answer");
        serde_json::from_slice(&answer[at + 4..]).unwrap()
    }

    /// `GET /stats`.
    fn stats(&self) -> Value {
        self.call("GET", "/stats")
    }

    /// `POST /stats/reset`.
    fn reset(&self) {
        self.call("POST", "/stats/reset");
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A thread reading one of a process's outputs to its end.
type Reader = std::thread::JoinHandle<Vec<u8>>;

/// A `deploy-gate` process whose output is being read; killed if dropped before its end (a
/// test that failed while it ran).
struct Running {
    child: Child,
    /// Its stdout and stderr.
    output: Option<(Reader, Reader)>,
}

/// Starts a command, reading its output.
fn start(cmd: &mut Command) -> Running {
    let mut child = cmd
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("deploy-gate starts");
    let drain = |mut r: Box<dyn Read + Send>| {
        std::thread::spawn(move || {
            let mut bytes = Vec::new();
            let _ = r.read_to_end(&mut bytes);
            bytes
        })
    };
    let stdout = drain(Box::new(child.stdout.take().unwrap()));
    let stderr = drain(Box::new(child.stderr.take().unwrap()));
    Running {
        child,
        output: Some((stdout, stderr)),
    }
}

impl Running {
    /// Waits for the end, at most [`LIMIT`] (then kills it and fails).
    fn wait(mut self) -> Output {
        let until = Instant::now() + LIMIT;
        let status = loop {
            if let Some(status) = self.child.try_wait().unwrap() {
                break status;
            }
            assert!(
                Instant::now() < until,
                "deploy-gate did not end within {LIMIT:?}; killed"
            );
            std::thread::sleep(Duration::from_millis(10));
        };
        let (stdout, stderr) = self.output.take().expect("waited once");
        Output {
            status,
            stdout: stdout.join().unwrap(),
            stderr: stderr.join().unwrap(),
        }
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        if let Ok(None) = self.child.try_wait() {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

/// Runs `deploy-gate` with the arguments, at most [`LIMIT`].
fn dg_run(args: &[String]) -> Output {
    start(dg().args(args)).wait()
}

/// A one-model run's arguments.
fn one(cases: &str, target: &str, out: &Path, flags: &[&str]) -> Vec<String> {
    let mut args = strings(&["run", "--test-set", cases, "--target", target, "--out", &s(out)]);
    args.extend(strings(flags));
    args
}

/// A two-model run's arguments.
fn two(cases: &str, old: &str, new: &str, out_old: &Path, out_new: &Path, flags: &[&str]) -> Vec<String> {
    let mut args = strings(&[
        "run",
        "--test-set",
        cases,
        "--old",
        old,
        "--new",
        new,
        "--out-old",
        &s(out_old),
        "--out-new",
        &s(out_new),
    ]);
    args.extend(strings(flags));
    args
}

/// Writes a test set of one case per text into `dir/name`: ids alternate between integers
/// (even positions) and strings (`c1`, `c3`, …). Gives its path and the cases.
fn test_set(dir: &Path, name: &str, texts: &[String]) -> (String, Vec<Value>) {
    let cases: Vec<Value> = texts
        .iter()
        .enumerate()
        .map(|(i, text)| {
            let id = if i % 2 == 0 { json!(i) } else { json!(format!("c{i}")) };
            json!({
                "pipeline_id": id,
                "template_id": "tmpl",
                "input_text": text,
                "expected_verdict": "PASS",
                "expected_stage_outputs": {},
            })
        })
        .collect();
    let mut text = String::new();
    for c in &cases {
        text += &c.to_string();
        text.push('\n');
    }
    (write(dir, name, &text), cases)
}

/// `n` plain cases (`case 0`, `case 1`, …): each answered PASS.
fn plain(n: usize) -> Vec<String> {
    (0..n).map(|i| format!("case {i}")).collect()
}

/// An `openai-chat` target in `dir/name` (JSON: YAML too): `base` (one URL or a list), the last
/// message `{{input_text}}`, and `extra` fields over the defaults.
fn chat_target(dir: &Path, name: &str, base: Value, model: &str, extra: Value) -> String {
    let mut t = json!({
        "kind": "openai-chat",
        "base_url": base,
        "model": model,
        "messages": [
            {"role": "system", "content": "You judge one case."},
            {"role": "user", "content": "{{input_text}}"}
        ],
        "timeout": "20s",
    });
    for (k, v) in extra.as_object().expect("extra fields are an object") {
        t[k] = v.clone();
    }
    write(dir, name, &serde_json::to_string_pretty(&t).unwrap())
}

/// A file's lines as JSON.
fn lines(path: &Path) -> Vec<Value> {
    jsonl(path)
}

/// The records of a finished output: one per case, in test-set order; by id (as JSON text).
fn records(out: &Path, cases: &[Value]) -> HashMap<String, Value> {
    let records = lines(out);
    let ids = |v: &[Value]| v.iter().map(|r| r["pipeline_id"].clone()).collect::<Vec<_>>();
    assert_eq!(
        ids(&records),
        ids(cases),
        "{}: one record per case, in test-set order",
        out.display()
    );
    records.into_iter().map(|r| (r["pipeline_id"].to_string(), r)).collect()
}

/// The record of case `n`.
fn rec<'a>(by_id: &'a HashMap<String, Value>, cases: &[Value], n: usize) -> &'a Value {
    &by_id[&cases[n]["pipeline_id"].to_string()]
}

/// The keys of a record, in order.
fn keys(r: &Value) -> Vec<&str> {
    r.as_object().unwrap().keys().map(String::as_str).collect()
}

/// The numbers of a model's `this run:` summary line: asked, from the cache, retries,
/// overloads, cuts, errored. `label` is `old: `, `new: ` or empty.
fn summary(o: &Output, label: &str) -> [u64; 6] {
    let err = stderr(o);
    let head = format!("deploy-gate run: {label}this run: ");
    let line = err
        .lines()
        .find_map(|l| l.strip_prefix(&head))
        .unwrap_or_else(|| panic!("no {head:?} line: {}", text(o)));
    let numbers: Vec<u64> = line
        .split_whitespace()
        .filter_map(|w| w.trim_start_matches('(').parse().ok())
        .collect();
    numbers
        .try_into()
        .unwrap_or_else(|n| panic!("six numbers in {line:?}: {n:?}"))
}

/// Every regular file under `dir`.
fn files_under(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap().flatten() {
        let path = entry.path();
        if path.is_dir() {
            out.extend(files_under(&path));
        } else {
            out.push(path);
        }
    }
    out
}

/// A count from the server's `/stats` (0 when missing).
fn count(stats: &Value, pointer: &str) -> u64 {
    stats.pointer(pointer).and_then(Value::as_u64).unwrap_or(0)
}

/// The requests the server saw with this scenario text.
fn seen(stats: &Value, text: &str) -> u64 {
    stats["by_content"][text].as_u64().unwrap_or(0)
}

/// A fixture's audit log of 116 cases.
fn fixture() -> PathBuf {
    parity_dir().join("trajectory-regressed").join("audit.jsonl")
}

#[test]
fn a_two_model_run_writes_full_records_that_evaluate_reads() {
    let dir = tempdir();
    let server = Server::start(&[]);
    let cases_path = dir.path().join("cases.jsonl");
    let o = dg_run(&strings(&[
        "test-set",
        "--audit",
        &s(&fixture()),
        "--max-samples",
        "none",
        "--min-samples",
        "1",
        "--out",
        &s(&cases_path),
    ]));
    assert!(o.status.success(), "{}", text(&o));
    let cases = lines(&cases_path);
    let n = cases.len();
    assert!(n > 20);
    let base = json!(server.url("/v1"));
    let old = chat_target(dir.path(), "old.json", base.clone(), "m-old", json!({}));
    let new = chat_target(
        dir.path(),
        "new.json",
        base,
        "m-new",
        json!({"verdict": "regex:(PASS|FAIL)"}),
    );
    let (out_old, out_new) = (dir.path().join("old.jsonl"), dir.path().join("new.jsonl"));
    let o = dg_run(&two(
        &s(&cases_path),
        &old,
        &new,
        &out_old,
        &out_new,
        &["--order-seed", "7"],
    ));
    assert!(o.status.success(), "{}", text(&o));
    let err = stderr(&o);
    for (label, out) in [("old", &out_old), ("new", &out_new)] {
        assert!(
            err.contains(&format!("{label}: {n} cases in {}: {n} answered, 0 errored", s(out))),
            "{err}"
        );
        assert_eq!(summary(&o, &format!("{label}: ")), [n as u64, 0, 0, 0, 0, 0], "{err}");
    }

    let mut digests = Vec::new();
    for out in [&out_old, &out_new] {
        let by_id = records(out, &cases);
        let digest = by_id.values().next().unwrap()["target"].clone();
        assert!(digest.as_str().unwrap().starts_with("sha256:"), "{digest}");
        for r in by_id.values() {
            assert_eq!(
                keys(r),
                [
                    "pipeline_id",
                    "verdict",
                    "output",
                    "latency_ms",
                    "usage",
                    "attempts",
                    "target"
                ],
                "{r}"
            );
            assert_eq!(r["verdict"], "PASS", "{r}");
            // What the model answered, as it gave it (the verdict is its text, trimmed).
            assert_eq!(r["output"].as_str().unwrap().trim(), "PASS", "{r}");
            assert!(r["latency_ms"].as_f64().unwrap() >= 0.0, "{r}");
            assert!(r["usage"]["prompt_tokens"].as_u64().unwrap() > 4, "{r}");
            assert_eq!(r["usage"]["completion_tokens"], 1, "{r}");
            assert_eq!(r["attempts"], 1, "{r}");
            assert_eq!(r["target"], digest, "one target per file");
        }
        digests.push(digest);
    }
    assert_ne!(
        digests[0], digests[1],
        "the two targets differ, and so do their digests"
    );
    let stats = server.stats();
    assert_eq!(count(&stats, "/requests"), 2 * n as u64, "{stats}");
    for text in stats["by_content"].as_object().unwrap().values() {
        assert_eq!(text, 2, "each case asked once of each model");
    }

    let policy = write(dir.path(), "policy.json", r#"{"min_samples": 1, "max_samples": null}"#);
    let report = dir.path().join("report.json");
    let o = dg_run(&strings(&[
        "evaluate",
        "--audit",
        &s(&fixture()),
        "--policy",
        &policy,
        "--old-verdicts",
        &s(&out_old),
        "--new-verdicts",
        &s(&out_new),
        "--out",
        &s(&report),
    ]));
    let report: Value = serde_json::from_slice(&std::fs::read(&report).unwrap_or_default())
        .unwrap_or_else(|e| panic!("{e}: {}", text(&o)));
    assert_eq!(report["decision"]["num_cases"], n, "{}", text(&o));
    // Both models answered PASS to every case: each case is in one cell where they agree.
    let table = &report["stats"]["task"]["table"];
    let cell = |k: &str| table[k].as_u64().unwrap_or_else(|| panic!("{k} in {table}"));
    assert_eq!((cell("old_only"), cell("new_only")), (0, 0), "{table}");
    assert!(cell("both_pass") > 0, "{table}");
    assert_eq!(
        cell("both_pass") + cell("both_fail"),
        n as u64,
        "every record read: {table}"
    );
}

#[test]
fn retries_honour_retry_after_and_client_errors_are_not_retried() {
    let dir = tempdir();
    let log = dir.path().join("server.log");
    let server = Server::start(&["--log", &s(&log)]);
    let texts = strings(&[
        "case 0 fault=429 times=2 retry_after=1",
        "case 1 fault=429 times=2 retry_after_date=1",
        "case 2 fault=503 times=2 retry_after=1",
        "case 3 fault=500 times=1",
        "case 4 fault=400",
        "case 5 fault=401",
        "case 6 fault=429 retry_after=0",
        "case 7",
    ]);
    let (cases_path, cases) = test_set(dir.path(), "cases.jsonl", &texts);
    let target = chat_target(
        dir.path(),
        "t.json",
        json!(server.url("/v1")),
        "m",
        json!({"retries": 3}),
    );
    let out = dir.path().join("v.jsonl");
    let o = dg_run(&one(&cases_path, &target, &out, &[]));
    assert!(o.status.success(), "{}", text(&o));
    let by_id = records(&out, &cases);
    let r = |n: usize| rec(&by_id, &cases, n);
    for n in [0, 1, 2] {
        assert_eq!(r(n)["verdict"], "PASS", "{}", r(n));
        assert_eq!(r(n)["attempts"], 3, "{}", r(n));
    }
    assert_eq!(r(3)["verdict"], "PASS");
    assert_eq!(r(3)["attempts"], 2, "500 is retried");
    for (n, status) in [(4, "HTTP 400: "), (5, "HTTP 401: ")] {
        assert!(r(n)["error"].as_str().unwrap().starts_with(status), "{}", r(n));
        assert_eq!(r(n)["attempts"], 1, "not retried: {}", r(n));
        assert!(r(n).get("verdict").is_none());
    }
    let e = r(6)["error"].as_str().expect("errored past its retries, never a pass");
    assert!(e.contains("HTTP 429") && e.contains("(4 attempts)"), "{e}");
    assert_eq!(r(6)["attempts"], 4);
    assert_eq!(r(7)["verdict"], "PASS");
    assert_eq!(r(7)["attempts"], 1);

    let stats = server.stats();
    for (n, want) in [(0, 3), (1, 3), (2, 3), (3, 2), (4, 1), (5, 1), (6, 4), (7, 1)] {
        assert_eq!(seen(&stats, &texts[n]), want, "requests of {:?}: {stats}", texts[n]);
    }
    // retries: 2 + 2 + 2 + 1 + 3; overloads: the 429s and 503s (2 + 2 + 2 + 4).
    let [asked, cached, retries, overloads, _cuts, errored] = summary(&o, "");
    assert_eq!(
        (asked, cached, retries, overloads, errored),
        (8, 0, 10, 10, 3),
        "{}",
        text(&o)
    );
    assert!(
        stderr(&o).contains(&format!("8 cases in {}: 5 answered, 3 errored", s(&out))),
        "{}",
        text(&o)
    );

    // The waits the server asked for were kept (a lower bound: the log's times, to the ms).
    let mut times: HashMap<String, Vec<f64>> = HashMap::new();
    for line in lines(&log) {
        if let Some(content) = line["content"].as_str() {
            times
                .entry(content.to_owned())
                .or_default()
                .push(line["time"].as_f64().unwrap());
        }
    }
    // An HTTP date has whole seconds (the server rounds up): a little slack for its clock.
    for (n, least) in [(0, 0.99), (1, 0.95), (2, 0.99)] {
        let t = &times[&texts[n]];
        assert_eq!(t.len(), 3);
        for pair in t.windows(2) {
            assert!(
                pair[1] - pair[0] >= least,
                "{:?}: retried after {:.3}s",
                texts[n],
                pair[1] - pair[0]
            );
        }
    }
}

#[test]
fn an_error_body_longer_than_the_cap_keeps_its_beginning() {
    // The client reads 64 KiB of an error body; these are 200 KB (padded with `é`s after the
    // message, two bytes each, so the bound falls inside one when the size is odd or even).
    let dir = tempdir();
    let server = Server::start(&[]);
    let texts = strings(&[
        "case 0 fault=503 size=200000 retry_after=0",
        "case 1 fault=400 size=200001",
        "case 2 fault=503 retry_after=0",
    ]);
    let (cases_path, cases) = test_set(dir.path(), "cases.jsonl", &texts);
    let target = chat_target(
        dir.path(),
        "t.json",
        json!(server.url("/v1")),
        "m",
        json!({"retries": 2}),
    );
    let out = dir.path().join("v.jsonl");
    let o = dg_run(&one(&cases_path, &target, &out, &[]));
    assert!(o.status.success(), "{}", text(&o));
    let by_id = records(&out, &cases);
    let error = |n: usize| {
        let r = rec(&by_id, &cases, n);
        assert!(r.get("verdict").is_none(), "never a pass: {r}");
        r["error"].as_str().unwrap_or_else(|| panic!("errored: {r}")).to_owned()
    };
    for (n, head, tries) in [
        (
            0,
            r#"HTTP 503: {"error":{"message":"The server is overloaded","type":"server_error","code":503,"padding":"ééé"#,
            " (3 attempts)",
        ),
        (
            1,
            r#"HTTP 400: {"error":{"message":"Invalid request: bad parameter","type":"invalid_request_error","code":400,"padding":"ééé"#,
            "",
        ),
    ] {
        // (A client error is final: no count of attempts.)
        let e = error(n);
        assert!(e.starts_with(head), "{e}");
        let tail = format!("é…{tries}");
        assert!(e.ends_with(&tail), "{e}");
        // The body's beginning, cut to the bound of a message (300 characters and the `…`).
        let kept = &e["HTTP 503: ".len()..e.len() - tries.len()];
        assert_eq!(kept.chars().count(), 301, "{e}");
    }
    // A short error body gives its message, as before.
    assert_eq!(error(2), "HTTP 503: The server is overloaded (3 attempts)");
    let stats = server.stats();
    for (text, want) in texts.iter().zip([3, 1, 3]) {
        assert_eq!(seen(&stats, text), want, "{text}: {stats}");
    }
}

#[test]
fn timeouts_cut_bodies_and_bad_answers_are_errored() {
    let dir = tempdir();
    let server = Server::start(&[]);
    let error_of = |r: &Value| {
        assert!(r.get("verdict").is_none(), "never a pass: {r}");
        r["error"].as_str().unwrap_or_else(|| panic!("errored: {r}")).to_owned()
    };

    // No answer within the timeout, twice (alone in its run: a short timeout on a busy machine
    // would fail the other cases too).
    let slow = strings(&["case 0 fault=slow delay=2"]);
    let (slow_path, slow_cases) = test_set(dir.path(), "slow.jsonl", &slow);
    let short = chat_target(
        dir.path(),
        "short.json",
        json!(server.url("/v1")),
        "m",
        json!({"timeout": "300ms", "retries": 1}),
    );
    let out = dir.path().join("slow-v.jsonl");
    let o = dg_run(&one(&slow_path, &short, &out, &[]));
    assert!(o.status.success(), "{}", text(&o));
    let by_id = records(&out, &slow_cases);
    let r = rec(&by_id, &slow_cases, 0);
    assert_eq!(error_of(r), "no answer within 300ms (2 attempts)");
    assert_eq!(r["attempts"], 2);
    let [asked, _, retries, overloads, _, errored] = summary(&o, "");
    assert_eq!(
        (asked, retries, overloads, errored),
        (1, 1, 2, 1),
        "a timeout is an overload: {}",
        text(&o)
    );

    let texts = strings(&[
        "case 1 fault=reset",
        "case 2 fault=notjson",
        "case 3 fault=big size=20000",
        "case 4 fault=redirect",
        "case 5 fault=nocontent",
        "case 6",
    ]);
    let (cases_path, cases) = test_set(dir.path(), "cases.jsonl", &texts);
    let target = chat_target(
        dir.path(),
        "t.json",
        json!(server.url("/v1")),
        "m",
        json!({"retries": 1, "max_response_bytes": 10000}),
    );
    let out = dir.path().join("v.jsonl");
    let o = dg_run(&one(&cases_path, &target, &out, &[]));
    assert!(o.status.success(), "{}", text(&o));
    let by_id = records(&out, &cases);
    let error = |n: usize| error_of(rec(&by_id, &cases, n));
    assert!(
        error(0).starts_with("the response was cut off") && error(0).ends_with("(2 attempts)"),
        "{}",
        error(0)
    );
    assert!(error(1).starts_with("the response is not JSON"), "{}", error(1));
    assert!(error(1).contains("<html>oops</html>"), "{}", error(1));
    assert_eq!(error(2), "the response is larger than max_response_bytes (10000 bytes)");
    assert!(error(3).starts_with("HTTP 307: a redirect to"), "{}", error(3));
    assert!(error(3).contains("not followed"), "{}", error(3));
    assert!(error(4).starts_with("the answer has no text"), "{}", error(4));
    assert_eq!(rec(&by_id, &cases, 5)["verdict"], "PASS");
    for n in 1..5 {
        assert_eq!(rec(&by_id, &cases, n)["attempts"], 1, "a bad answer is not asked again");
    }

    let stats = server.stats();
    assert_eq!(count(&stats, "/followed_redirects"), 0, "{stats}");
    assert_eq!(seen(&stats, &slow[0]), 2, "{stats}");
    assert_eq!(seen(&stats, &texts[0]), 2, "{stats}");
    for text in &texts[1..] {
        assert_eq!(seen(&stats, text), 1, "{text}: {stats}");
    }
    let [.., errored] = summary(&o, "");
    assert_eq!(errored, 5, "{}", text(&o));
}

/// A piece (12 characters) of `secret` found in `hay`.
fn piece_of<'a>(secret: &'a str, hay: &[u8]) -> Option<&'a str> {
    (0..=secret.len().saturating_sub(12))
        .map(|i| &secret[i..(i + 12).min(secret.len())])
        .find(|piece| hay.windows(piece.len()).any(|w| w == piece.as_bytes()))
}

#[test]
fn the_api_key_is_written_nowhere_and_is_no_part_of_digests_or_cache_keys() {
    use sha2::{Digest, Sha256};
    let dir = tempdir();
    let server = Server::start(&[]);
    let texts = strings(&[
        "case 0 fault=401",
        "case 1",
        "case 2 answer=FAIL",
        "case 3 fault=echokey",
    ]);
    let (cases_path, cases) = test_set(dir.path(), "cases.jsonl", &texts);
    let target = chat_target(
        dir.path(),
        "t.json",
        json!(server.url("/v1")),
        "m",
        json!({"api_key_env": "DG_IT_ENDPOINT_KEY", "headers": {"X-Org": "org ${DG_IT_ORG}"}}),
    );
    let out = dir.path().join("v.jsonl");
    let args = one(&cases_path, &target, &out, &[]);
    // Random-looking secrets (no piece of them is anywhere by chance): a short key, then a
    // long token (a JWT can be 1 KB), longer than the part of a server's message kept.
    let hexes = |seed: &str, n: usize| {
        (0..n)
            .map(|i| hex::encode(Sha256::digest(format!("{seed} {i}"))))
            .collect::<String>()
    };
    let rounds = [
        (format!("sk-it-{}", hexes("key", 1)), hexes("org", 1)),
        (format!("eyJ{}", hexes("token", 10)), hexes("org 2", 1)),
    ];
    let mut digests = Vec::new();
    for (round, (key, org)) in rounds.iter().enumerate() {
        let _ = std::fs::remove_file(&out);
        let o = start(dg().args(&args).env("DG_IT_ENDPOINT_KEY", key).env("DG_IT_ORG", org)).wait();
        assert!(o.status.success(), "{}", text(&o));
        let by_id = records(&out, &cases);
        let e = rec(&by_id, &cases, 0)["error"].as_str().unwrap().to_owned();
        assert!(e.starts_with("HTTP 401: invalid api key [redacted]"), "{e}");
        assert_eq!(rec(&by_id, &cases, 2)["verdict"], "FAIL");
        // The key echoed in an answer, every character \u-escaped: the case is errored, and
        // nothing of the answer is written or cached.
        let e = rec(&by_id, &cases, 3)["error"].as_str().unwrap();
        assert!(e.contains("holds a secret this target sends"), "{e}");
        let stats = server.stats();
        assert!(
            stats["auth_headers_seen"]
                .as_array()
                .unwrap()
                .contains(&json!(format!("Bearer {key}"))),
            "the key was sent"
        );
        for secret in [key, org] {
            for bytes in [&o.stdout, &o.stderr] {
                let piece = piece_of(secret, bytes);
                assert!(
                    piece.is_none(),
                    "round {round}: {piece:?} on stdout or stderr: {}",
                    text(&o)
                );
            }
            let written = files_under(dir.path());
            assert!(written
                .iter()
                .any(|p| p.starts_with(dir.path().join(".deploy-gate-cache"))));
            for path in written {
                let piece = piece_of(secret, &std::fs::read(&path).unwrap());
                assert!(piece.is_none(), "round {round}: {piece:?} is in {}", path.display());
            }
        }
        // The second run, with other secrets: the answers come from the first run's cache.
        let [asked, cached, ..] = summary(&o, "");
        let want = if round == 0 { (4, 0) } else { (2, 2) };
        assert_eq!((asked, cached), want, "round {round}: {}", text(&o));
        assert_eq!(count(&stats, "/requests"), 4 + 2 * round as u64, "{stats}");
        digests.push(rec(&by_id, &cases, 1)["target"].clone());
    }
    assert_eq!(digests[0], digests[1], "the secrets' values are not in the digest");
}

/// A cache folder may be shared, and its entries are files anyone with access could write: an
/// entry that holds the key this run sends (planted, or cached by a run with another key that a
/// server echoed) is never read into a record; the case is asked again.
#[test]
fn a_cached_answer_holding_the_runs_key_is_not_read_and_the_case_is_asked_again() {
    use sha2::{Digest, Sha256};
    let dir = tempdir();
    let server = Server::start(&[]);
    let (cases_path, cases) = test_set(dir.path(), "cases.jsonl", &plain(3));
    let target = chat_target(
        dir.path(),
        "t.json",
        json!(server.url("/v1")),
        "m",
        json!({"api_key_env": "DG_IT_ENDPOINT_KEY"}),
    );
    let out = dir.path().join("v.jsonl");
    let args = one(&cases_path, &target, &out, &[]);
    let run = |key: &str| {
        let _ = std::fs::remove_file(&out);
        let o = start(dg().args(&args).env("DG_IT_ENDPOINT_KEY", key)).wait();
        assert!(o.status.success(), "{}", text(&o));
        o
    };
    let first_key = format!("sk-first-{}", hex::encode(Sha256::digest("first")));
    let key = format!("sk-second-{}", hex::encode(Sha256::digest("second")));
    run(&first_key);
    assert_eq!(count(&server.stats(), "/requests"), 3);
    // Every entry rewritten whole (a valid checksum): an answer that reads as a verdict and holds
    // the second run's key, as sent and JSON-escaped.
    let entries: Vec<PathBuf> = files_under(&dir.path().join(".deploy-gate-cache"))
        .into_iter()
        .filter(|p| !p.file_name().unwrap().to_string_lossy().starts_with('.'))
        .collect();
    assert_eq!(entries.len(), 3);
    for (i, entry) in entries.iter().enumerate() {
        let spelled = if i == 0 {
            key.clone()
        } else {
            key.replace('s', "\\u0073")
        };
        let body = format!(
            r#"{{"choices":[{{"message":{{"role":"assistant","content":"PASS {spelled}"}}}}],"usage":{{"prompt_tokens":1,"completion_tokens":1}}}}"#
        );
        let mut rest = b"{\"latency_ms\":1.0,\"attempts\":1}\n".to_vec();
        rest.extend_from_slice(body.as_bytes());
        let mut bytes = format!("deploy-gate-cache v1 {}\n", hex::encode(Sha256::digest(&rest))).into_bytes();
        bytes.extend_from_slice(&rest);
        std::fs::write(entry, bytes).unwrap();
    }
    let o = run(&key);
    let [asked, cached, ..] = summary(&o, "");
    assert_eq!((asked, cached), (3, 0), "{}", text(&o));
    assert_eq!(count(&server.stats(), "/requests"), 6, "every case asked again");
    let by_id = records(&out, &cases);
    for n in 0..3 {
        assert!(
            rec(&by_id, &cases, n).get("verdict").is_some(),
            "{}",
            rec(&by_id, &cases, n)
        );
    }
    for bytes in [std::fs::read(&out).unwrap(), o.stdout.clone(), o.stderr.clone()] {
        assert_eq!(piece_of(&key, &bytes), None, "{}", text(&o));
    }
}

#[test]
fn adaptive_concurrency_backs_off_under_a_server_capacity() {
    let dir = tempdir();
    let server = Server::start(&["--capacity", "4", "--latency", "20"]);
    let (cases_path, cases) = test_set(dir.path(), "cases.jsonl", &plain(200));
    let target = chat_target(
        dir.path(),
        "t.json",
        json!(server.url("/v1")),
        "m",
        json!({"retries": 20, "concurrency": {"initial": 16, "min": 1, "max": 32}}),
    );
    let out = dir.path().join("v.jsonl");
    let o = dg_run(&one(&cases_path, &target, &out, &[]));
    assert!(o.status.success(), "{}", text(&o));
    let by_id = records(&out, &cases);
    assert!(
        by_id.values().all(|r| r["verdict"] == "PASS"),
        "the retries absorb the 429s: {}",
        text(&o)
    );
    let [asked, _, retries, overloads, cuts, errored] = summary(&o, "");
    assert_eq!((asked, errored), (200, 0), "{}", text(&o));
    assert!(overloads > 0 && retries > 0 && cuts > 0, "{}", text(&o));
    let stats = server.stats();
    assert!(count(&stats, "/max_in_flight") <= 32, "{stats}");
    assert_eq!(
        count(&stats, "/requests"),
        200 + overloads,
        "each 429 a request: {stats}"
    );
}

#[test]
fn the_concurrency_never_passes_the_targets_max() {
    let dir = tempdir();
    let (a, b) = (Server::start(&["--latency", "20"]), Server::start(&["--latency", "20"]));
    let (cases_path, _) = test_set(dir.path(), "cases.jsonl", &plain(60));
    let bounds = json!({"concurrency": {"initial": 2, "min": 1, "max": 3}});
    let old = chat_target(dir.path(), "old.json", json!(a.url("/v1")), "m-old", bounds.clone());
    let new = chat_target(dir.path(), "new.json", json!(b.url("/v1")), "m-new", bounds.clone());
    let (out_old, out_new) = (dir.path().join("o.jsonl"), dir.path().join("n.jsonl"));
    let o = dg_run(&two(&cases_path, &old, &new, &out_old, &out_new, &[]));
    assert!(o.status.success(), "{}", text(&o));
    for server in [&a, &b] {
        let stats = server.stats();
        assert_eq!(count(&stats, "/requests"), 60, "{stats}");
        let most = count(&stats, "/max_in_flight");
        assert!((1..=3).contains(&most), "{stats}");
    }

    // Both models on one server: their requests share it (3 + 3 at most).
    a.reset();
    let new_a = chat_target(dir.path(), "new_a.json", json!(a.url("/v1")), "m-new", bounds);
    let (out_old, out_new) = (dir.path().join("o2.jsonl"), dir.path().join("n2.jsonl"));
    let o = dg_run(&two(&cases_path, &old, &new_a, &out_old, &out_new, &["--no-cache"]));
    assert!(o.status.success(), "{}", text(&o));
    let stats = a.stats();
    assert_eq!(count(&stats, "/requests"), 120, "{stats}");
    assert!(count(&stats, "/max_in_flight") <= 6, "{stats}");
}

#[test]
fn the_cache_answers_a_second_run_and_a_torn_entry_is_asked_again() {
    let dir = tempdir();
    let server = Server::start(&[]);
    let (cases_path, cases) = test_set(dir.path(), "cases.jsonl", &plain(40));
    let target = chat_target(dir.path(), "t.json", json!(server.url("/v1")), "m", json!({}));
    let out = dir.path().join("v.jsonl");
    let requests = || count(&server.stats(), "/requests");
    let again = |flags: &[&str]| {
        let _ = std::fs::remove_file(&out);
        let o = dg_run(&one(&cases_path, &target, &out, flags));
        assert!(o.status.success(), "{}", text(&o));
        records(&out, &cases);
        o
    };

    let o = again(&[]);
    let first = std::fs::read(&out).unwrap();
    assert_eq!(summary(&o, "")[..2], [40, 0]);
    assert_eq!(requests(), 40);

    let o = again(&[]);
    assert!(stderr(&o).contains("40 from the cache"), "{}", text(&o));
    assert_eq!(summary(&o, "")[..2], [0, 40]);
    assert_eq!(requests(), 40, "the server was asked nothing");
    assert_eq!(
        std::fs::read(&out).unwrap(),
        first,
        "the cached records are the first run's"
    );

    let o = again(&["--no-cache"]);
    assert_eq!(summary(&o, "")[..2], [40, 0]);
    assert_eq!(requests(), 80);

    // A torn entry (cut short, as a crash could leave it) is asked again, and written again.
    let cache = dir.path().join(".deploy-gate-cache");
    let entries: Vec<PathBuf> = files_under(&cache)
        .into_iter()
        .filter(|p| !p.file_name().unwrap().to_string_lossy().starts_with('.'))
        .collect();
    assert_eq!(entries.len(), 40, "one entry per case");
    let torn = &entries[0];
    let len = std::fs::metadata(torn).unwrap().len();
    std::fs::OpenOptions::new()
        .write(true)
        .open(torn)
        .unwrap()
        .set_len(len - 3)
        .unwrap();
    let o = again(&[]);
    assert_eq!(summary(&o, "")[..2], [1, 39], "{}", text(&o));
    assert_eq!(requests(), 81);
    let o = again(&[]);
    assert_eq!(summary(&o, "")[..2], [0, 40], "{}", text(&o));

    // Two runs at once sharing one cache folder, each with its own output.
    let shared = dir.path().join("shared-cache");
    let outs = [dir.path().join("a.jsonl"), dir.path().join("b.jsonl")];
    let running: Vec<Running> = outs
        .iter()
        .map(|out| start(dg().args(one(&cases_path, &target, out, &["--cache", &s(&shared)]))))
        .collect();
    for (run, out) in running.into_iter().zip(&outs) {
        let o = run.wait();
        assert!(o.status.success(), "{}", text(&o));
        let by_id = records(out, &cases);
        assert!(by_id.values().all(|r| r["verdict"] == "PASS"), "{}", text(&o));
    }
    let leftovers: Vec<_> = files_under(&shared)
        .into_iter()
        .filter(|p| p.file_name().unwrap().to_string_lossy().starts_with('.'))
        .collect();
    assert!(leftovers.is_empty(), "no temporary file is left: {leftovers:?}");
}

/// A small generator of random moments, seeded from the clock (the seed is printed).
struct Lcg(u64);

impl Lcg {
    fn below(&mut self, n: u64) -> u64 {
        self.0 = self
            .0
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        (self.0 >> 33) % n
    }
}

#[test]
fn sigkill_at_random_moments_then_a_rerun_gives_one_record_per_case() {
    let dir = tempdir();
    let server = Server::start(&["--latency", "5"]);
    let (cases_path, cases) = test_set(dir.path(), "cases.jsonl", &plain(300));
    let base = json!(server.url("/v1"));
    let old = chat_target(dir.path(), "old.json", base.clone(), "m-old", json!({}));
    let new = chat_target(dir.path(), "new.json", base.clone(), "m-new", json!({}));
    let seed = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_nanos() as u64;
    eprintln!("sigkill test seed: {seed}");
    let mut random = Lcg(seed);
    let mut mid_run = 0;
    let mut outs = Vec::new();
    for round in 0..5 {
        // Fresh outputs (and a fresh cache beside them) each round: a kill in a run of its own.
        let sub = dir.path().join(format!("round{round}"));
        std::fs::create_dir(&sub).unwrap();
        outs = vec![sub.join("old.jsonl"), sub.join("new.jsonl")];
        let args = two(&cases_path, &old, &new, &outs[0], &outs[1], &[]);
        let written = || {
            outs.iter()
                .map(|o| std::fs::read_to_string(o).map_or(0, |t| t.lines().count()))
                .sum::<usize>()
        };
        let mut child = dg()
            .args(&args)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        // Once the run writes, a random 50 to 400 ms later.
        let until = Instant::now() + LIMIT;
        while written() == 0 && Instant::now() < until && child.try_wait().unwrap().is_none() {
            std::thread::sleep(Duration::from_millis(2));
        }
        std::thread::sleep(Duration::from_millis(50 + random.below(351)));
        child.kill().unwrap(); // SIGKILL
        let status = child.wait().unwrap();
        let mut kept = Vec::new();
        for out in &outs {
            let records = lines(out);
            let ids: HashSet<String> = records.iter().map(|r| r["pipeline_id"].to_string()).collect();
            assert_eq!(ids.len(), records.len(), "seed {seed} round {round}: no duplicate");
            kept.push(records.len());
        }
        eprintln!("round {round}: {status:?}, {kept:?} records kept");
        if kept.iter().any(|&k| k > 0 && k < cases.len()) {
            mid_run += 1;
        }

        let o = dg_run(&args);
        assert!(o.status.success(), "seed {seed} round {round}: {}", text(&o));
        for ((out, label), k) in outs.iter().zip(["old: ", "new: "]).zip(&kept) {
            let by_id = records(out, &cases);
            assert!(
                by_id.values().all(|r| r["verdict"] == "PASS"),
                "seed {seed} round {round}: {}",
                text(&o)
            );
            // Only the cases without a record were run again (asked, or read from the cache).
            let [asked, cached, ..] = summary(&o, label);
            assert_eq!(
                asked + cached,
                (cases.len() - k) as u64,
                "seed {seed} round {round}: {}",
                text(&o)
            );
            if *k > 0 {
                assert!(
                    stderr(&o).contains(&format!("{k} already answered (resumed)")),
                    "seed {seed} round {round}: {}",
                    text(&o)
                );
            }
        }
    }
    assert!(
        mid_run >= 2,
        "seed {seed}: only {mid_run} of the kills landed while the run was writing"
    );

    // The same outputs with another target: refused, the files left as they are.
    let read = || outs.iter().map(|o| std::fs::read(o).unwrap()).collect::<Vec<_>>();
    let before = read();
    let other = chat_target(dir.path(), "other.json", base, "m-other", json!({}));
    let o = dg_run(&two(&cases_path, &old, &other, &outs[0], &outs[1], &[]));
    assert_eq!(o.status.code(), Some(1), "{}", text(&o));
    let err = stderr(&o);
    assert!(err.contains(&format!("{} line 1: ", s(&outs[1]))), "{err}");
    assert!(err.contains("another target"), "{err}");
    assert_eq!(read(), before, "a refused run changes nothing");
}

#[test]
fn bad_target_files_are_refused_naming_the_file_line_and_field() {
    let dir = tempdir();
    let (cases_path, _) = test_set(dir.path(), "cases.jsonl", &plain(2));
    let out = dir.path().join("v.jsonl");
    let good = "kind: openai-chat\nbase_url: http://127.0.0.1:9/v1\nmodel: m\nmessages:\n  - role: user\n    content: \"{{input_text}}\"\n";
    for (name, yaml, want) in [
        (
            "unknown.yaml",
            format!("{good}temprature: 0.2\n"),
            " line 7: temprature: unknown field",
        ),
        (
            "nomodel.yaml",
            good.replace("model: m\n", ""),
            " line 1: model: missing",
        ),
        (
            "placeholder.yaml",
            good.replace("{{input_text}}", "Judge {{input}}"),
            " line 6: messages[0].content: {{input}} is not a placeholder",
        ),
    ] {
        let path = write(dir.path(), name, &yaml);
        let o = dg_run(&one(&cases_path, &path, &out, &[]));
        assert_eq!(o.status.code(), Some(1), "{}", text(&o));
        assert!(stderr(&o).contains(&format!("{path}{want}")), "{}", text(&o));
    }

    let path = write(
        dir.path(),
        "key.yaml",
        &format!("{good}api_key_env: DG_IT_UNSET_KEY_VAR\n"),
    );
    let o = start(
        dg().args(one(&cases_path, &path, &out, &[]))
            .env_remove("DG_IT_UNSET_KEY_VAR"),
    )
    .wait();
    assert_eq!(o.status.code(), Some(1), "{}", text(&o));
    let err = stderr(&o);
    assert!(
        err.contains(&path) && err.contains("DG_IT_UNSET_KEY_VAR is not set"),
        "{err}"
    );
    assert!(!out.exists(), "nothing is written before the run can start");
}

#[test]
fn http_and_command_targets() {
    let dir = tempdir();
    let server = Server::start(&[]);
    let texts: Vec<String> = (0..6)
        .map(|i| format!("case {i}{}", if i % 2 == 1 { " answer=FAIL" } else { "" }))
        .collect();
    let (cases_path, cases) = test_set(dir.path(), "cases.jsonl", &texts);
    let http = |name: &str, verdict: &str| {
        let t = json!({
            "kind": "http",
            "url": server.url("/agent"),
            "body": {"input": "{{input_text}}", "id": "{{pipeline_id}}"},
            "verdict": verdict,
        });
        write(dir.path(), name, &t.to_string())
    };
    let out = dir.path().join("h.jsonl");
    let o = dg_run(&one(&cases_path, &http("h.json", "/result/verdict"), &out, &[]));
    assert!(o.status.success(), "{}", text(&o));
    let by_id = records(&out, &cases);
    for n in 0..texts.len() {
        let r = rec(&by_id, &cases, n);
        assert_eq!(r["verdict"], if n % 2 == 1 { "FAIL" } else { "PASS" }, "{r}");
        assert_eq!(
            keys(r),
            ["pipeline_id", "verdict", "output", "latency_ms", "attempts", "target"],
            "{r}"
        );
        // The whole response, as the server gave it.
        assert_eq!(r["output"]["result"]["verdict"], r["verdict"], "{r}");
    }
    let stats = server.stats();
    assert_eq!(count(&stats, "/paths/~1agent"), 6, "{stats}");
    for text in &texts {
        assert_eq!(seen(&stats, text), 1, "{stats}");
    }

    // What was sent: the server echoes the body, whose fields are the case's (an id alone in
    // its string keeps its JSON type).
    let echo: Vec<String> = (0..4).map(|i| format!("case {i} fault=echo")).collect();
    let (echo_path, echo_cases) = test_set(dir.path(), "echo.jsonl", &echo);
    let out = dir.path().join("e.jsonl");
    let o = dg_run(&one(&echo_path, &http("e.json", "/result/echo"), &out, &[]));
    assert!(o.status.success(), "{}", text(&o));
    let by_id = records(&out, &echo_cases);
    for (n, c) in echo_cases.iter().enumerate() {
        assert_eq!(
            rec(&by_id, &echo_cases, n)["verdict"],
            json!({"input": echo[n], "id": c["pipeline_id"]})
        );
    }

    // A command target paired with an endpoint in one run.
    let worker = "import sys, json\nfor line in sys.stdin:\n    print(json.dumps({'verdict': 'PASS'}), flush=True)\n";
    let command = write(
        dir.path(),
        "cmd.json",
        &json!({"kind": "command", "argv": ["python3", "-c", worker]}).to_string(),
    );
    let chat = chat_target(dir.path(), "chat.json", json!(server.url("/v1")), "m", json!({}));
    let (out_old, out_new) = (dir.path().join("o.jsonl"), dir.path().join("n.jsonl"));
    let o = dg_run(&two(&cases_path, &command, &chat, &out_old, &out_new, &[]));
    assert!(o.status.success(), "{}", text(&o));
    let old = records(&out_old, &cases);
    let new = records(&out_new, &cases);
    for n in 0..texts.len() {
        let (a, b) = (rec(&old, &cases, n), rec(&new, &cases, n));
        assert_eq!(a["verdict"], "PASS", "{a}");
        assert_eq!(b["verdict"], if n % 2 == 1 { "FAIL" } else { "PASS" }, "{b}");
        assert!(a["target"].as_str().unwrap().starts_with("sha256:"), "{a}");
        assert_ne!(a["target"], b["target"]);
    }
    assert_eq!(summary(&o, "old: ")[5], 0, "{}", text(&o));
    assert_eq!(summary(&o, "new: ")[..2], [6, 0], "{}", text(&o));
}

#[test]
fn replicas_share_the_requests() {
    let dir = tempdir();
    let (a, b) = (Server::start(&[]), Server::start(&[]));
    let (cases_path, cases) = test_set(dir.path(), "cases.jsonl", &plain(20));
    let target = chat_target(
        dir.path(),
        "t.json",
        json!([a.url("/v1"), b.url("/v1")]),
        "m",
        json!({}),
    );
    let out = dir.path().join("v.jsonl");
    let o = dg_run(&one(&cases_path, &target, &out, &[]));
    assert!(o.status.success(), "{}", text(&o));
    let by_id = records(&out, &cases);
    assert!(by_id.values().all(|r| r["verdict"] == "PASS"));
    let (ra, rb) = (count(&a.stats(), "/requests"), count(&b.stats(), "/requests"));
    assert!(ra > 0 && rb > 0, "both replicas asked: {ra} and {rb}");
    assert_eq!(ra + rb, 20);
}

#[test]
fn errors_are_not_cached_and_retries_wait_without_a_slot() {
    let dir = tempdir();
    let log = dir.path().join("server.log");
    let server = Server::start(&["--log", &s(&log)]);
    // An answer with no verdict is not cached: once its record is dropped, it is asked again.
    let texts = strings(&["case 0 fault=nocontent times=1", "case 1"]);
    let (cases_path, cases) = test_set(dir.path(), "cases.jsonl", &texts);
    let target = chat_target(dir.path(), "t.json", json!(server.url("/v1")), "m", json!({}));
    let out = dir.path().join("v.jsonl");
    let o = dg_run(&one(&cases_path, &target, &out, &[]));
    assert!(o.status.success(), "{}", text(&o));
    assert!(rec(&records(&out, &cases), &cases, 0)["error"].is_string());
    let kept: String = std::fs::read_to_string(&out)
        .unwrap()
        .lines()
        .filter(|l| !l.contains("\"error\""))
        .map(|l| format!("{l}\n"))
        .collect();
    std::fs::write(&out, kept).unwrap();
    let o = dg_run(&one(&cases_path, &target, &out, &[]));
    assert!(o.status.success(), "{}", text(&o));
    assert_eq!(rec(&records(&out, &cases), &cases, 0)["verdict"], "PASS");
    let [asked, cached, ..] = summary(&o, "");
    assert_eq!(
        (asked, cached),
        (1, 0),
        "the resumed run asks only the dropped case: {}",
        text(&o)
    );

    // One slot: a case told to wait 2 s does not hold it meanwhile, the others go on.
    let mut texts: Vec<String> = (0..3)
        .map(|i| format!("wait {i} fault=429 times=1 retry_after=2"))
        .collect();
    texts.extend((0..6).map(|i| format!("plain {i}")));
    let (cases_path, _) = test_set(dir.path(), "wait.jsonl", &texts);
    let one_slot = chat_target(
        dir.path(),
        "one.json",
        json!(server.url("/v1")),
        "m",
        json!({"concurrency": {"initial": 1, "min": 1, "max": 1}}),
    );
    let out = dir.path().join("w.jsonl");
    std::fs::write(&log, "").unwrap();
    let o = dg_run(&one(&cases_path, &one_slot, &out, &["--no-cache"]));
    assert!(o.status.success(), "{}", text(&o));
    let entries: Vec<Value> = std::fs::read_to_string(&log)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let first_429 = entries.iter().position(|e| e["status"] == 429).expect("a 429");
    let content = entries[first_429]["content"].as_str().unwrap().to_owned();
    let retried = entries
        .iter()
        .position(|e| e["content"] == content.as_str() && e["status"] == 200)
        .expect("answered after its wait");
    let plain_after = entries[first_429..]
        .iter()
        .filter(|e| e["content"].as_str().unwrap().starts_with("plain"))
        .count();
    let plain_between = entries[first_429..retried]
        .iter()
        .filter(|e| e["content"].as_str().unwrap().starts_with("plain"))
        .count();
    assert!(
        plain_after == 0 || plain_between > 0,
        "while {content:?} waited, no other case was asked: {entries:?}"
    );
    assert!(lines(&out).iter().all(|r| r["verdict"] == "PASS"));
}

#[test]
fn a_sequential_policy_stops_the_run_once_decided_and_evaluate_replays_the_stop() {
    let dir = tempdir();
    let d = dir.path();
    let server = Server::start(&[]);
    let audit = parity_dir().join("real-writer-shape").join("audit.jsonl");
    let cases_path = s(&d.join("cases.jsonl"));
    let o = dg_run(&strings(&[
        "test-set",
        "--audit",
        &s(&audit),
        "--max-samples",
        "none",
        "--out",
        &cases_path,
    ]));
    assert!(o.status.success(), "{}", text(&o));
    let total = std::fs::read_to_string(&cases_path).unwrap().lines().count();
    assert_eq!(total, 132);
    // `answer=FAIL` in its prompt makes a model fail every case; the other passes most. One
    // request at a time: hardly a pair is in flight when the decision is reached.
    let one_at_a_time = json!({"initial": 1, "min": 1, "max": 1});
    let good = chat_target(
        d,
        "good.json",
        json!(server.url("/v1")),
        "good",
        json!({"concurrency": one_at_a_time}),
    );
    let bad = chat_target(
        d,
        "bad.json",
        json!(server.url("/v1")),
        "bad",
        json!({"messages": [{"role": "user", "content": "{{input_text}} answer=FAIL"}], "concurrency": one_at_a_time}),
    );
    let policy = write(
        d,
        "policy.json",
        r#"{"mode": "non_inferiority", "sequential": true, "task_regression_tol": 0.05, "seed": 3}"#,
    );
    for (old, new, want) in [(&bad, &good, "approved"), (&good, &bad, "blocked")] {
        let (oo, no) = (d.join(format!("{want}-old.jsonl")), d.join(format!("{want}-new.jsonl")));
        let mut args = two(&cases_path, old, new, &oo, &no, &["--no-cache", "--policy", &policy]);
        let o = dg_run(&args);
        assert!(o.status.success(), "{}", text(&o));
        let err = stderr(&o);
        let line = err
            .lines()
            .find(|l| l.contains("the sequential decision was reached after"))
            .unwrap_or_else(|| panic!("{err}"));
        assert!(line.contains(&format!(": {want};")), "{line}");
        let (o_lines, n_lines) = (lines(&oo), lines(&no));
        assert_eq!(o_lines.len(), n_lines.len(), "pairs are asked together");
        assert!(
            o_lines.len() < total,
            "the run stopped early: {} {}",
            o_lines.len(),
            text(&o)
        );
        // evaluate replays the same stop from the files.
        let report = d.join(format!("{want}.json"));
        let o = dg_run(&strings(&[
            "evaluate",
            "--audit",
            &s(&audit),
            "--old-verdicts",
            &s(&oo),
            "--new-verdicts",
            &s(&no),
            "--policy",
            &policy,
            "--max-samples",
            "none",
            "--out",
            &s(&report),
        ]));
        let r: Value = serde_json::from_str(&std::fs::read_to_string(&report).unwrap())
            .unwrap_or_else(|e| panic!("{e}: {}", text(&o)));
        assert_eq!(r["sequential"]["stopped"], want, "{}", r["sequential"]);
        let used = r["sequential"]["used"].as_u64().unwrap();
        assert_eq!(r["decision"]["outcome"], want, "{}", r["decision"]);
        assert_eq!(
            o.status.code(),
            Some(if want == "approved" { 0 } else { 3 }),
            "{}",
            text(&o)
        );
        assert!(line.contains(&format!("after {used} of ")), "{line} vs {used}");
        // Run again: nothing more is asked, the same stop.
        args = two(&cases_path, old, new, &oo, &no, &["--no-cache", "--policy", &policy]);
        let o = dg_run(&args);
        assert!(stderr(&o).contains(&format!("after {used} of ")), "{}", text(&o));
        let [asked, ..] = summary(&o, "old: ");
        assert_eq!(asked, 0, "{}", text(&o));
    }
    // Units of one case: the rule decides on fewer cases than min_samples (20), and the run asks
    // on until 20 are answered by both (below, evaluate would find the evidence insufficient):
    // evaluate approves whatever was in flight at the stop, one request at a time here.
    let cases_policy = write(
        d,
        "cases-policy.json",
        r#"{"mode": "non_inferiority", "sequential": true, "task_regression_tol": 0.05, "cluster": "none"}"#,
    );
    let (oo, no) = (d.join("c-old.jsonl"), d.join("c-new.jsonl"));
    let o = dg_run(&two(
        &cases_path,
        &bad,
        &good,
        &oo,
        &no,
        &["--no-cache", "--policy", &cases_policy],
    ));
    assert!(o.status.success(), "{}", text(&o));
    assert!(
        stderr(&o).contains("no more cases are sent (asked on until min_samples 20 cases were answered by both)"),
        "{}",
        text(&o)
    );
    let asked = lines(&oo).len();
    assert!((20..=22).contains(&asked), "{asked}: {}", text(&o));
    let report = d.join("cases.json");
    let o = dg_run(&strings(&[
        "evaluate",
        "--audit",
        &s(&audit),
        "--old-verdicts",
        &s(&oo),
        "--new-verdicts",
        &s(&no),
        "--policy",
        &cases_policy,
        "--max-samples",
        "none",
        "--out",
        &s(&report),
    ]));
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let r: Value = serde_json::from_str(&std::fs::read_to_string(&report).unwrap()).unwrap();
    let used = r["sequential"]["used"].as_u64().unwrap();
    assert!(
        used < 20 && r["sequential"]["stopped"] == "approved",
        "{}",
        r["sequential"]
    );
    assert_eq!(r["evidence"]["rests_on"].as_u64(), Some(used));

    // A budget of 3 cases, equal models: the budget is spent, inconclusive, 3 pairs asked.
    let small = write(
        d,
        "small.json",
        r#"{"mode": "non_inferiority", "sequential": true, "budget": 3, "cluster": "none", "task_regression_tol": 0.05}"#,
    );
    let (oo, no) = (d.join("s-old.jsonl"), d.join("s-new.jsonl"));
    let o = dg_run(&two(
        &cases_path,
        &good,
        &good,
        &oo,
        &no,
        &["--no-cache", "--policy", &small],
    ));
    assert!(o.status.success(), "{}", text(&o));
    assert!(
        stderr(&o).contains("the budget is spent without a decision"),
        "{}",
        text(&o)
    );
    assert_eq!((lines(&oo).len(), lines(&no).len()), (3, 3));
    // Continued with a larger budget on the same files: the same order, the first three cases
    // kept (not asked again), the sequence going on from them.
    let first: Vec<Value> = lines(&oo);
    let larger = write(
        d,
        "larger.json",
        r#"{"mode": "non_inferiority", "sequential": true, "budget": 60, "cluster": "none", "task_regression_tol": 0.05}"#,
    );
    let o = dg_run(&two(
        &cases_path,
        &good,
        &good,
        &oo,
        &no,
        &["--no-cache", "--policy", &larger],
    ));
    assert!(o.status.success(), "{}", text(&o));
    assert!(stderr(&o).contains("3 already answered (resumed)"), "{}", text(&o));
    let after = lines(&oo);
    assert!(after.len() > 3 && after.len() <= 60, "{}", after.len());
    for r in &first {
        assert!(after.contains(r), "a record of the first run kept: {r}");
    }
    // A fixed-size policy is refused: it needs every case.
    let fixed = write(d, "fixed.json", r#"{"mode": "non_inferiority"}"#);
    let o = dg_run(&two(
        &cases_path,
        &good,
        &bad,
        &d.join("f-old.jsonl"),
        &d.join("f-new.jsonl"),
        &["--policy", &fixed],
    ));
    assert_eq!(o.status.code(), Some(1));
    assert!(stderr(&o).contains("sequential: true"), "{}", text(&o));
}

/// A pseudo-random draw in [0, 1) from a case's index and a salt.
fn draw(i: usize, salt: u64) -> f64 {
    let mut x = (i as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ salt.wrapping_mul(0xD1B5_4A32_D192_ED03);
    x ^= x >> 31;
    x = x.wrapping_mul(0xBF58_476D_1CE4_E5B9);
    x ^= x >> 29;
    (x >> 11) as f64 / (1u64 << 53) as f64
}

#[test]
fn a_sequential_run_stopped_early_through_retries_is_evaluated_over_the_cases_used() {
    let dir = tempdir();
    let d = dir.path();
    let server = Server::start(&[]);
    // 600 cases in 40 templates. The old model reads the stage's input, the new one its
    // output (the test set's `expected_stage_outputs`): each carries the answer that model
    // gives (the old one fails about 20%, the new one 10%) and, for some cases, a 429 or a 503
    // answered once before the real answer.
    const N: usize = 600;
    let mut audit = String::new();
    for i in 0..N {
        let answer = |fails: bool| if fails { "FAIL" } else { "PASS" };
        let old_fault = if i % 3 == 0 {
            " fault=429 times=1 retry_after=0"
        } else {
            ""
        };
        let new_fault = if i % 4 == 1 {
            " fault=503 times=1 retry_after=0"
        } else {
            ""
        };
        audit += &json!({"pipeline_id": format!("p{i:04}"), "stage_id": "s", "stage_type": "llm",
            "input": format!("case {i} answer={}{old_fault}", answer(draw(i, 1) < 0.2)),
            "output": format!("case {i} answer={}{new_fault} ", answer(draw(i, 2) < 0.1))})
        .to_string();
        audit.push('\n');
        audit += &json!({"pipeline_id": format!("p{i:04}"), "template_id": format!("t{}", i % 40),
            "verdict": "PASS", "is_complete": true})
        .to_string();
        audit.push('\n');
    }
    let audit = write(d, "audit.jsonl", &audit);
    let cases_path = s(&d.join("cases.jsonl"));
    let o = dg_run(&strings(&[
        "test-set",
        "--audit",
        &audit,
        "--max-samples",
        "none",
        "--out",
        &cases_path,
    ]));
    assert!(o.status.success(), "{}", text(&o));
    let cases = lines(Path::new(&cases_path));
    assert_eq!(cases.len(), N);
    let old = chat_target(
        d,
        "old.json",
        json!(server.url("/v1")),
        "old",
        json!({"messages": [{"role": "user", "content": "{{input_text}}"}]}),
    );
    let new = chat_target(
        d,
        "new.json",
        json!(server.url("/v1")),
        "new",
        json!({"messages": [{"role": "user", "content": "{{expected_stage_outputs}}"}]}),
    );
    let policy = write(
        d,
        "policy.json",
        r#"{"mode": "non_inferiority", "sequential": true, "task_regression_tol": 0.1, "cluster": "none", "budget": 200,
            "guardrails": [{"metric": "total_tokens", "max_difference": 10}, {"metric": "latency_ms", "max_increase": "100000%"}]}"#,
    );
    let (oo, no) = (d.join("old.jsonl"), d.join("new.jsonl"));
    let o = dg_run(&two(
        &cases_path,
        &old,
        &new,
        &oo,
        &no,
        &["--no-cache", "--policy", &policy],
    ));
    assert!(o.status.success(), "{}", text(&o));
    let err = stderr(&o);
    let line = err
        .lines()
        .find(|l| l.contains("the sequential decision was reached after"))
        .unwrap_or_else(|| panic!("{err}"));
    assert!(line.contains(": approved;"), "{line}");
    // (The stop comes after more than min_samples cases: a stop before them is checked in
    // a_sequential_policy_stops_the_run_once_decided_and_evaluate_replays_the_stop.)
    let [_, _, old_retries, ..] = summary(&o, "old: ");
    let [_, _, new_retries, ..] = summary(&o, "new: ");

    // The cases asked, from the run's outputs; every one the server saw (twice when faulted).
    let (old_records, new_records) = (lines(&oo), lines(&no));
    let ids = |r: &[Value]| -> HashSet<String> {
        r.iter()
            .map(|r| r["pipeline_id"].as_str().unwrap().to_owned())
            .collect()
    };
    let asked: HashSet<String> = ids(&old_records).union(&ids(&new_records)).cloned().collect();
    assert_eq!(ids(&old_records), ids(&new_records), "pairs are asked together");
    assert!(asked.len() <= 200, "the budget: {}", asked.len());
    let stats = server.stats();
    for c in &cases {
        let text = c["input_text"].as_str().unwrap();
        let id = c["pipeline_id"].as_str().unwrap();
        if asked.contains(id) {
            let want = if text.contains("fault=") { 2 } else { 1 };
            assert_eq!(seen(&stats, text), want, "{id}: {text}");
        }
    }
    // One retry for each faulted case asked.
    let index = |id: &String| -> usize { id[1..].parse().unwrap() };
    let faulted_asked = |r: usize, every: usize| asked.iter().filter(|id| index(id) % every == r).count() as u64;
    assert_eq!(
        (old_retries, new_retries),
        (faulted_asked(0, 3), faulted_asked(1, 4)),
        "{err}"
    );
    let never_asked = (N - asked.len()) as u64;

    // evaluate with the same policy: every rendering over the cases used.
    let evaluate = strings(&[
        "evaluate",
        "--audit",
        &audit,
        "--old-verdicts",
        &s(&oo),
        "--new-verdicts",
        &s(&no),
        "--policy",
        &policy,
        "--max-samples",
        "none",
    ]);
    let test_set: Vec<crate::evidence::TestCase> = cases
        .iter()
        .map(|c| crate::evidence::TestCase {
            id: c["pipeline_id"].as_str().unwrap().to_owned(),
            template: c["template_id"].as_str().unwrap().to_owned(),
        })
        .collect();
    let out = d.join("renderings");
    std::fs::create_dir(&out).unwrap();
    let found = crate::evidence::the_renderings_speak_of_the_cases_used(&out, &evaluate, &test_set, &oo, &no);
    assert_eq!(found.not_run, never_asked);
    assert_eq!(found.report["sequential"]["stopped"], "approved");
    assert!(
        line.contains(&format!("after {} of 200 cases", found.used)),
        "{line} / {}",
        found.used
    );
    // The used cases' records went through their retries: one for each faulted case used.
    let used_ids: Vec<usize> = found.report["cases"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["pipeline_id"].as_str().unwrap()[1..].parse().unwrap())
        .collect();
    let faulted = |r: usize, every: usize| used_ids.iter().filter(|i| *i % every == r).count() as u64;
    let cost = &found.report["cost"];
    assert_eq!(
        (cost["old"]["retried"].as_u64(), cost["new"]["retried"].as_u64()),
        (Some(faulted(0, 3)), Some(faulted(1, 4)))
    );
    assert!(faulted(0, 3) > 0 && faulted(1, 4) > 0, "{used_ids:?}");
}
