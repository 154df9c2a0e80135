//! `apply --mlflow` and `verify --mlflow` against a real MLflow tracking server (mlflow 3.17.2,
//! started by `tests/servers/mlflow.sh` from the venv it caches, with sqlite and the artifact
//! proxy; a second one with MLflow's basic-auth app), the versions registered through MLflow's
//! own Python client (`tests/servers/mlflow_registrar.py`) with real files. Each test uses its
//! own registered model; the servers are shared by the tests of this process and stopped when
//! it ends. TLS and a bearer token are tested through nginx in front of the real server; the
//! limits, against `tests/servers/hostile_mlflow.py`. Without the venv the tests say "skipped", unless DEPLOY_GATE_REQUIRE_MLFLOW=1 (the
//! test command), where that is a failure.

use crate::common::*;
use serde_json::{json, Value};
use std::fs;
use std::io::{BufRead, BufReader, Write};
use std::os::unix::process::ExitStatusExt;
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, ChildStdout, Command, Output, Stdio};
use std::sync::{Mutex, OnceLock};
use std::time::{Duration, Instant};

const ADMIN_PASSWORD: &str = "admin-password-1234";
const READER_PASSWORD: &str = "reader-pw-5678-secret";

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

fn venv() -> PathBuf {
    let v = std::env::var("MLFLOW_VENV").unwrap_or_else(|_| ".venv-mlflow".into());
    if Path::new(&v).is_absolute() {
        v.into()
    } else {
        root().join(v)
    }
}

/// Whether the tests can run: the venv is there (else skipped, or a failure when required).
fn available() -> bool {
    if venv().join("bin/python").exists() {
        return true;
    }
    assert!(
        std::env::var("DEPLOY_GATE_REQUIRE_MLFLOW").as_deref() != Ok("1"),
        "no MLflow venv at {} (bash tests/servers/mlflow.sh venv makes it)",
        venv().display()
    );
    eprintln!("skipped: no MLflow venv (bash tests/servers/mlflow.sh venv makes it)");
    false
}

struct Server {
    url: String,
    dir: PathBuf,
}

fn start(kind: &str) -> Server {
    let dir = std::env::temp_dir().join(format!("deploy-gate-mlflow-{}-{kind}", std::process::id()));
    let _ = fs::remove_dir_all(&dir);
    fs::create_dir_all(&dir).unwrap();
    let port = free_port();
    let out = Command::new("bash")
        .arg(root().join("tests/servers/mlflow.sh"))
        .args([
            "start",
            &s(&dir),
            &port.to_string(),
            kind,
            &std::process::id().to_string(),
        ])
        .env("MLFLOW_VENV", venv())
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out));
    eprint!("{}", String::from_utf8_lossy(&out.stdout));
    Server {
        url: format!("http://127.0.0.1:{port}"),
        dir,
    }
}

fn server() -> &'static Server {
    static S: OnceLock<Server> = OnceLock::new();
    S.get_or_init(|| {
        // Each server takes 20–30 s to start alone, and up to 105 s was seen in the test command
        // beside the fuzz build (tests/servers/mlflow.sh waits 300 s): the other one starts
        // meanwhile, in a thread (a failure there is seen by the first test that needs it, which
        // starts it again).
        std::thread::spawn(auth_server);
        start("plain")
    })
}

/// The basic-auth server, with a user `reader` who has the default READ permission only.
fn auth_server() -> &'static Server {
    static S: OnceLock<Server> = OnceLock::new();
    S.get_or_init(|| {
        std::thread::spawn(server);
        let s = start("auth");
        let out = curl(
            &s,
            Some(("admin", ADMIN_PASSWORD)),
            &["-X", "POST", "-H", "content-type: application/json", "-d"],
            &json!({"username": "reader", "password": READER_PASSWORD}).to_string(),
            "/api/2.0/mlflow/users/create",
        );
        assert!(out.contains("\"reader\""), "{out}");
        s
    })
}

fn curl(server: &Server, user: Option<(&str, &str)>, flags: &[&str], data: &str, path: &str) -> String {
    let mut cmd = Command::new("curl");
    cmd.args(["-s", "--max-time", "60"]).args(flags);
    if !data.is_empty() {
        cmd.arg(data);
    }
    if let Some((u, p)) = user {
        cmd.arg("-u").arg(format!("{u}:{p}"));
    }
    let out = cmd.arg(format!("{}{path}", server.url)).output().unwrap();
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// Where an alias points, read by a plain client (`None`: unset).
fn alias_of(server: &Server, user: Option<(&str, &str)>, name: &str, alias: &str) -> Option<String> {
    let body = curl(
        server,
        user,
        &[],
        "",
        &format!("/api/2.0/mlflow/registered-models/alias?name={name}&alias={alias}"),
    );
    let v: Value = serde_json::from_str(&body).unwrap_or_else(|e| panic!("{e}: {body}"));
    v["model_version"]["version"].as_str().map(str::to_owned)
}

/// MLflow's own Python client, one process for the whole run.
struct Registrar {
    _child: Child,
    stdin: ChildStdin,
    stdout: BufReader<ChildStdout>,
}

fn registrar(cmd: Value) -> Value {
    static R: OnceLock<Mutex<Registrar>> = OnceLock::new();
    let r = R.get_or_init(|| {
        let mut child = Command::new(venv().join("bin/python"))
            .arg(root().join("tests/servers/mlflow_registrar.py"))
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        Mutex::new(Registrar {
            stdin: child.stdin.take().unwrap(),
            stdout: BufReader::new(child.stdout.take().unwrap()),
            _child: child,
        })
    });
    let mut r = r.lock().unwrap_or_else(|p| p.into_inner());
    writeln!(r.stdin, "{cmd}").unwrap();
    r.stdin.flush().unwrap();
    let mut line = String::new();
    r.stdout.read_line(&mut line).unwrap();
    let v: Value = serde_json::from_str(&line).unwrap_or_else(|e| panic!("{e}: {line:?}"));
    assert!(v.get("error").is_none(), "{cmd}: {v}");
    v
}

/// A model folder with files of its own (`seed` makes them differ).
fn model_files(dir: &Path, seed: &str) -> PathBuf {
    let m = dir.join(format!("model-{seed}"));
    fs::create_dir_all(m.join("weights")).unwrap();
    fs::write(m.join("config.json"), format!("{{\"seed\": \"{seed}\"}}")).unwrap();
    fs::write(m.join("weights/part-0.bin"), seed.repeat(1000)).unwrap();
    m
}

fn register(server: &Server, admin: bool, name: &str, files: &Path) -> String {
    let mut cmd = json!({"op": "register", "url": server.url, "name": name, "dir": s(files)});
    if admin {
        cmd["user"] = json!("admin");
        cmd["password"] = json!(ADMIN_PASSWORD);
    }
    registrar(cmd)["version"].as_str().unwrap().to_owned()
}

fn move_by_hand(server: &Server, admin: bool, name: &str, alias: &str, version: &str) {
    let mut cmd = json!({"op": "alias", "url": server.url, "name": name, "alias": alias, "version": version});
    if admin {
        cmd["user"] = json!("admin");
        cmd["password"] = json!(ADMIN_PASSWORD);
    }
    registrar(cmd);
}

fn tags(server: &Server, admin: bool, name: &str, version: &str) -> serde_json::Map<String, Value> {
    let mut cmd = json!({"op": "tags", "url": server.url, "name": name, "version": version});
    if admin {
        cmd["user"] = json!("admin");
        cmd["password"] = json!(ADMIN_PASSWORD);
    }
    registrar(cmd)["tags"].as_object().unwrap().clone()
}

/// A reviewer (key and an approved report) per test directory.
struct Case {
    dir: tempfile::TempDir,
    report: PathBuf,
    key: PathBuf,
    public: PathBuf,
    ledger: PathBuf,
}

fn case() -> Case {
    let dir = tempdir();
    let Reviewer { report, key, public } = reviewer(dir.path());
    let ledger = dir.path().join("ledger.jsonl");
    Case {
        dir,
        report,
        key,
        public,
        ledger,
    }
}

impl Case {
    fn path(&self) -> &Path {
        self.dir.path()
    }

    /// Signs `report` for the files at `model` and `target`: (envelope, payload sha256).
    fn sign_report(&self, report: &Path, model: &Path, target: &str, name: &str) -> (PathBuf, String) {
        static N: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
        let n = N.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let envelope = self.path().join(format!("decision-{n}.dsse.json"));
        let out = run(&strings(&[
            "sign",
            &s(report),
            "--key",
            &s(&self.key),
            "--model",
            name,
            "--model-path",
            &s(model),
            "--target",
            target,
            "--out",
            &s(&envelope),
        ]));
        assert!(out.status.success(), "{}", text(&out));
        let env: Value = serde_json::from_slice(&fs::read(&envelope).unwrap()).unwrap();
        let payload = deploy_gate::attest::dsse::decode(env["payload"].as_str().unwrap()).unwrap();
        (envelope, deploy_gate::attest::file_digest(&payload))
    }

    /// Each decision signed for a subject name of its own, so two signed in one second differ.
    fn sign(&self, model: &Path, target: &str) -> (PathBuf, String) {
        static N: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
        let n = N.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        self.sign_report(&self.report, model, target, &format!("agent-{n}"))
    }

    fn apply_args(&self, server: &Server, envelope: &Path, name: &str, alias: &str, extra: &[&str]) -> Vec<String> {
        let mut a = strings(&[
            "apply",
            &s(envelope),
            "--trusted-key",
            &s(&self.public),
            "--mlflow",
            &server.url,
            "--registered-model",
            name,
            "--alias",
            alias,
            "--ledger",
            &s(&self.ledger),
        ]);
        a.extend(strings(extra));
        a
    }

    /// deploy-gate with its temporary files (a version's downloaded files, which a kill leaves)
    /// in this test's directory.
    fn dg(&self) -> Command {
        let mut cmd = crate::common::dg();
        cmd.env("TMPDIR", self.path());
        cmd
    }

    fn apply(&self, server: &Server, envelope: &Path, name: &str, alias: &str, extra: &[&str]) -> Output {
        out(self.dg().args(self.apply_args(server, envelope, name, alias, extra)))
    }

    fn verify(&self, server: &Server, uri: &str) -> (Option<i32>, Value, String) {
        let out = run(&strings(&[
            "verify",
            "--mlflow",
            &server.url,
            "--model-uri",
            uri,
            "--trusted-key",
            &s(&self.public),
            "--json",
        ]));
        let v = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("{e}: {}", text(&out)));
        (out.status.code(), v, stderr(&out))
    }

    fn entries(&self, payload: &str) -> Vec<String> {
        jsonl(&self.ledger)
            .iter()
            .filter(|e| e["payload_sha256"] == payload)
            .map(|e| e["result"].as_str().unwrap().to_owned())
            .collect()
    }
}

#[test]
fn promote_replay_hand_move_verify_and_restore() {
    if !available() {
        return;
    }
    let srv = server();
    let c = case();
    let (m1, m2) = (model_files(c.path(), "one"), model_files(c.path(), "two"));
    let v1 = register(srv, false, "promote", &m1);
    let v2 = register(srv, false, "promote", &m2);
    let (envelope, payload) = c.sign(&m1, "models:/promote@champion");

    // A dry run says what it would do, and uses nothing up.
    let out = c.apply(srv, &envelope, "promote", "champion", &["--dry-run"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    assert!(
        stderr(&out).contains(&format!("would point models:/promote@champion at version {v1}")),
        "{}",
        text(&out)
    );
    assert_eq!(alias_of(srv, None, "promote", "champion"), None);

    // Promoted: the version found by its files' digest, the alias set, the decision recorded.
    let out = c.apply(srv, &envelope, "promote", "champion", &[]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let j = json_stdout(&out);
    assert_eq!(
        (j["result"].as_str(), j["version"].as_str()),
        (Some("deployed"), Some(v1.as_str()))
    );
    assert_eq!(alias_of(srv, None, "promote", "champion").as_deref(), Some(v1.as_str()));
    assert_eq!(c.entries(&payload), ["intent", "deployed"]);
    let t = tags(srv, false, "promote", &v1);
    assert_eq!(t["deploy-gate.champion.decision_sha256"], payload.as_str());
    assert_eq!(t["deploy-gate.champion.decision"], "approved");
    let envelope_bytes = fs::read(&envelope).unwrap();
    assert_eq!(
        t["deploy-gate.champion.envelope_sha256"],
        deploy_gate::attest::file_digest(&envelope_bytes).as_str()
    );
    let parts: usize = t["deploy-gate.champion.envelope.parts"]
        .as_str()
        .unwrap()
        .parse()
        .unwrap();
    assert!(
        parts > 1,
        "the envelope ({} bytes) is cut into pieces",
        envelope_bytes.len()
    );
    assert!(t.values().all(|v| v.as_str().unwrap().len() <= 5000));

    // The serving side's check passes.
    let (code, v, err) = c.verify(srv, "models:/promote@champion");
    assert_eq!(code, Some(0), "{err}");
    assert_eq!(v["ok"], true);
    assert_eq!(v["version"], v1.as_str());
    assert_eq!(v["decision_sha256"], payload.as_str());
    let digest = run(&["digest", "--oms", &s(&m1)]);
    assert_eq!(v["subject"], String::from_utf8(digest.stdout).unwrap().trim());

    // Replay refused, exit 2, the ledger unchanged.
    let out = c.apply(srv, &envelope, "promote", "champion", &[]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    assert!(stderr(&out).contains("applied already"), "{}", text(&out));
    assert_eq!(c.entries(&payload), ["intent", "deployed"]);

    // Moved by hand to a version without a decision: caught, naming the version.
    move_by_hand(srv, false, "promote", "champion", &v2);
    let (code, v, err) = c.verify(srv, "models:/promote@champion");
    assert_eq!(code, Some(2), "{err}");
    assert_eq!(
        (v["ok"].as_bool(), v["version"].as_str()),
        (Some(false), Some(v2.as_str()))
    );
    let reason = v["reason"].as_str().unwrap();
    assert!(
        reason.contains(&format!("version {v2}")) && reason.contains("no signed decision"),
        "{reason}"
    );

    // --restore puts it back on the last version with a verified decision.
    let out = c.apply(srv, &envelope, "promote", "champion", &["--restore"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    assert_eq!(json_stdout(&out)["result"], "restored");
    assert_eq!(alias_of(srv, None, "promote", "champion").as_deref(), Some(v1.as_str()));
    let (code, _, err) = c.verify(srv, "models:/promote@champion");
    assert_eq!(code, Some(0), "{err}");
    // Restoring again changes nothing.
    let out = c.apply(srv, &envelope, "promote", "champion", &["--restore"]);
    assert_eq!(json_stdout(&out)["result"], "unchanged", "{}", text(&out));
    // The decision is not for another alias of the same version.
    let (code, v, _) = c.verify(srv, "models:/promote@canary");
    assert_eq!(code, Some(2));
    assert!(v["reason"].as_str().unwrap().contains("not set"), "{v}");
}

#[test]
fn a_decision_for_other_files_is_refused_and_not_used_up() {
    if !available() {
        return;
    }
    let srv = server();
    let c = case();
    let reviewed = model_files(c.path(), "reviewed");
    let registered = model_files(c.path(), "registered");
    let v = register(srv, false, "digest", &registered);
    let (envelope, payload) = c.sign(&reviewed, "models:/digest@champion");
    // No version has the reviewed files.
    let out = c.apply(srv, &envelope, "digest", "champion", &[]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    assert_eq!(json_stdout(&out)["check"], "subject_digest", "{}", text(&out));
    assert!(
        stderr(&out).contains(&format!("{v} sha256:")),
        "names the versions read: {}",
        text(&out)
    );
    // The version named: its files are not the reviewed ones.
    let out = c.apply(srv, &envelope, "digest", "champion", &["--model-version", &v]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    assert_eq!(json_stdout(&out)["check"], "subject_digest");
    assert_eq!(alias_of(srv, None, "digest", "champion"), None);
    assert!(c.entries(&payload).is_empty(), "a refusal uses nothing up");
    assert!(tags(srv, false, "digest", &v).is_empty());
    // Two versions with the reviewed files: ambiguous, named, nothing used up.
    let a = register(srv, false, "digest", &reviewed);
    let b = register(srv, false, "digest", &reviewed);
    let out = c.apply(srv, &envelope, "digest", "champion", &[]);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    assert!(
        stderr(&out).contains(&format!("versions {a}, {b}")) || stderr(&out).contains(&format!("versions {b}, {a}")),
        "{}",
        text(&out)
    );
    assert!(c.entries(&payload).is_empty());
    // Named, the reviewed files are promoted.
    let out = c.apply(srv, &envelope, "digest", "champion", &["--model-version", &b]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    assert_eq!(alias_of(srv, None, "digest", "champion").as_deref(), Some(b.as_str()));
}

#[test]
fn a_decision_for_another_alias_or_model_is_refused() {
    if !available() {
        return;
    }
    let srv = server();
    let c = case();
    let m = model_files(c.path(), "target");
    register(srv, false, "target", &m);
    register(srv, false, "target-other", &m);
    let (envelope, payload) = c.sign(&m, "models:/target@champion");
    for (name, alias) in [("target", "staging"), ("target-other", "champion")] {
        let out = c.apply(srv, &envelope, name, alias, &[]);
        assert_eq!(out.status.code(), Some(2), "{name}@{alias}: {}", text(&out));
        assert_eq!(json_stdout(&out)["check"], "target", "{}", text(&out));
        assert_eq!(alias_of(srv, None, name, alias), None);
    }
    // A --target other than the alias's URI is refused before anything is read.
    let out = c.apply(srv, &envelope, "target", "champion", &["--target", "serving.yaml"]);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    assert!(stderr(&out).contains("a registry apply's target is the alias's URI models:/target@champion"));
    assert!(c.entries(&payload).is_empty());
}

#[test]
fn blocked_and_inconclusive_decisions_leave_the_alias_and_record_the_refusal() {
    if !available() {
        return;
    }
    let srv = server();
    let c = case();
    let old = model_files(c.path(), "old");
    let new = model_files(c.path(), "new");
    let v_old = register(srv, false, "blocked", &old);
    let v_new = register(srv, false, "blocked", &new);
    move_by_hand(srv, false, "blocked", "champion", &v_old);

    // Blocked: both-regressed.
    let blocked_report = c.path().join("blocked.json");
    let mut args = evaluate_args(&parity_dir().join("both-regressed"));
    args.extend(["--out".into(), s(&blocked_report)]);
    assert_eq!(run(&args).status.code(), Some(3));
    // Inconclusive: the compatibility inputs under non-inferiority (tests/it/outcomes.rs).
    let inputs = root().join("tests/fixtures/compat/inputs");
    let inconclusive_report = c.path().join("inconclusive.json");
    let out = run(&strings(&[
        "evaluate",
        "--audit",
        &s(&inputs.join("audit.jsonl")),
        "--old-verdicts",
        &s(&inputs.join("old_verdicts.jsonl")),
        "--new-verdicts",
        &s(&inputs.join("new_equal.jsonl")),
        "--mode",
        "non_inferiority",
        "--task-tol",
        "0.05",
        "--out",
        &s(&inconclusive_report),
    ]));
    assert_eq!(out.status.code(), Some(4), "{}", text(&out));

    for (report, word) in [(&blocked_report, "blocked"), (&inconclusive_report, "inconclusive")] {
        let (envelope, payload) = c.sign_report(report, &new, "models:/blocked@champion", word);
        let out = c.apply(srv, &envelope, "blocked", "champion", &[]);
        assert_eq!(out.status.code(), Some(3), "{word}: {}", text(&out));
        assert!(stderr(&out).contains(&format!("decision {word}")), "{}", text(&out));
        assert_eq!(
            alias_of(srv, None, "blocked", "champion").as_deref(),
            Some(v_old.as_str())
        );
        let t = tags(srv, false, "blocked", &v_new);
        let refused: Value = serde_json::from_str(t["deploy-gate.champion.refused"].as_str().unwrap()).unwrap();
        assert_eq!(
            (refused["decision"].as_str(), refused["decision_sha256"].as_str()),
            (Some(word), Some(payload.as_str()))
        );
        assert!(
            t.get("deploy-gate.champion.envelope.parts").is_none(),
            "no approving record"
        );
        assert_eq!(c.entries(&payload), ["kept_old"]);
    }
}

/// Sets up one promotion to crash or race: a model with versions v1 (where the alias points)
/// and v2 (the decision's files).
fn two_versions(srv: &Server, c: &Case, name: &str) -> (String, String, PathBuf) {
    let (m1, m2) = (
        model_files(c.path(), &format!("{name}-1")),
        model_files(c.path(), &format!("{name}-2")),
    );
    let v1 = register(srv, false, name, &m1);
    let v2 = register(srv, false, name, &m2);
    move_by_hand(srv, false, name, "champion", &v1);
    (v1, v2, m2)
}

/// After a crash and a rerun: the alias at v2, the decision deployed once, a third apply refused.
fn finished_once(srv: &Server, c: &Case, name: &str, envelope: &Path, payload: &str, v2: &str, what: &str) {
    assert_eq!(alias_of(srv, None, name, "champion").as_deref(), Some(v2), "{what}");
    let results = c.entries(payload);
    assert_eq!(
        results.last().map(String::as_str),
        Some("deployed"),
        "{what}: {results:?}"
    );
    // One intent reached the alias; any earlier ones were resolved as not deployed.
    let reached: Vec<&String> = results
        .iter()
        .filter(|r| r.as_str() != "not_deployed" && r.as_str() != "intent")
        .collect();
    assert_eq!(reached.len(), 1, "{what}: {results:?}");
    let out = c.apply(srv, envelope, name, "champion", &[]);
    assert_eq!(out.status.code(), Some(2), "{what}: {}", text(&out));
    assert!(stderr(&out).contains("applied already"), "{what}: {}", text(&out));
}

#[test]
fn every_crash_point_is_finished_by_the_next_apply_exactly_once() {
    if !available() {
        return;
    }
    let srv = server();
    let c = case();
    let (v1, v2, m2) = two_versions(srv, &c, "crash");
    for step in [
        "locked",
        "decision-tagged",
        "intent-logged",
        "alias-moved",
        "outcome-logged",
    ] {
        move_by_hand(srv, false, "crash", "champion", &v1);
        let (envelope, payload) = c.sign(&m2, "models:/crash@champion");
        let out = c.apply(srv, &envelope, "crash", "champion", &["--fail-at", step]);
        assert_eq!(out.status.signal(), Some(libc::SIGABRT), "{step}: {}", text(&out));
        let moved = alias_of(srv, None, "crash", "champion");
        assert_eq!(
            moved.as_deref() == Some(v2.as_str()),
            ["alias-moved", "outcome-logged"].contains(&step),
            "{step}"
        );
        let out = c.apply(srv, &envelope, "crash", "champion", &[]);
        let finished = stderr(&out);
        if ["alias-moved"].contains(&step) {
            // The rerun resolves the intent (the alias is at v2) and refuses the replay.
            assert_eq!(out.status.code(), Some(2), "{step}: {}", text(&out));
            assert!(finished.contains("recorded as deployed"), "{step}: {finished}");
        } else if step == "outcome-logged" {
            assert_eq!(out.status.code(), Some(2), "{step}: {}", text(&out));
        } else {
            assert_eq!(out.status.code(), Some(0), "{step}: {}", text(&out));
        }
        finished_once(srv, &c, "crash", &envelope, &payload, &v2, step);
    }
}

#[test]
fn kill_9_at_random_moments_then_a_rerun_finishes_exactly_once() {
    if !available() {
        return;
    }
    let srv = server();
    let c = case();
    let (v1, v2, m2) = two_versions(srv, &c, "kill");
    // One apply's duration, measured, sets the window the kills land in.
    let (envelope, _) = c.sign(&m2, "models:/kill@champion");
    let t = Instant::now();
    let out = c.apply(srv, &envelope, "kill", "champion", &[]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let window = t.elapsed();
    let mut seed = std::process::id() as u64 | 1;
    let mut landed = (0, 0, 0);
    let trials = 8;
    for i in 0..trials {
        move_by_hand(srv, false, "kill", "champion", &v1);
        let (envelope, payload) = c.sign(&m2, "models:/kill@champion");
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        let delay = window.mul_f64((seed % 1000) as f64 / 1000.0);
        let mut child = c
            .dg()
            .args(c.apply_args(srv, &envelope, "kill", "champion", &[]))
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        std::thread::sleep(delay);
        let _ = child.kill();
        let status = child.wait().unwrap();
        let entries = c.entries(&payload);
        match (status.signal().is_some(), entries.last().map(String::as_str)) {
            (false, _) => landed.2 += 1,
            (true, None) => landed.0 += 1,
            (true, Some(_)) => landed.1 += 1,
        }
        let out = c.apply(srv, &envelope, "kill", "champion", &[]);
        assert!(matches!(out.status.code(), Some(0 | 2)), "trial {i}: {}", text(&out));
        finished_once(
            srv,
            &c,
            "kill",
            &envelope,
            &payload,
            &v2,
            &format!("trial {i} ({delay:?})"),
        );
    }
    eprintln!(
        "{trials} kills within {window:?}: {} before any ledger entry, {} after the intent, {} after the apply ended",
        landed.0, landed.1, landed.2
    );
}

#[test]
fn two_applies_at_once_move_the_alias_once() {
    if !available() {
        return;
    }
    let srv = server();
    let c = case();
    let (_, v2, m2) = two_versions(srv, &c, "race");
    let (envelope, payload) = c.sign(&m2, "models:/race@champion");
    let children: Vec<Child> = (0..2)
        .map(|_| {
            c.dg()
                .args(c.apply_args(srv, &envelope, "race", "champion", &[]))
                .stdin(Stdio::null())
                .stdout(Stdio::piped())
                .stderr(Stdio::piped())
                .spawn()
                .unwrap()
        })
        .collect();
    let mut codes: Vec<Option<i32>> = children
        .into_iter()
        .map(|ch| ch.wait_with_output().unwrap().status.code())
        .collect();
    codes.sort();
    assert_eq!(codes, [Some(0), Some(2)]);
    assert_eq!(c.entries(&payload), ["intent", "deployed"]);
    assert_eq!(alias_of(srv, None, "race", "champion").as_deref(), Some(v2.as_str()));
}

#[test]
fn an_alias_moved_meanwhile_is_reported_not_overwritten() {
    if !available() {
        return;
    }
    let srv = server();
    let c = case();
    let (_, v2, m2) = two_versions(srv, &c, "meanwhile");
    let v3 = register(srv, false, "meanwhile", &model_files(c.path(), "meanwhile-3"));
    let (envelope, payload) = c.sign(&m2, "models:/meanwhile@champion");
    let child = c
        .dg()
        .args(c.apply_args(
            srv,
            &envelope,
            "meanwhile",
            "champion",
            &["--pause-before-move", "8000"],
        ))
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let t = Instant::now();
    while c.entries(&payload).is_empty() {
        assert!(t.elapsed() < Duration::from_secs(120), "no intent");
        std::thread::sleep(Duration::from_millis(50));
    }
    move_by_hand(srv, false, "meanwhile", "champion", &v3);
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    assert!(
        stderr(&out).contains(&format!("now points to version {v3}")),
        "{}",
        text(&out)
    );
    assert_eq!(
        alias_of(srv, None, "meanwhile", "champion").as_deref(),
        Some(v3.as_str())
    );
    assert_eq!(c.entries(&payload), ["intent", "not_deployed"]);
    // Not used up: applied again, it moves the alias from where it points now.
    let out = c.apply(srv, &envelope, "meanwhile", "champion", &[]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    assert_eq!(
        alias_of(srv, None, "meanwhile", "champion").as_deref(),
        Some(v2.as_str())
    );
}

#[test]
fn without_edit_permission_a_clear_error_and_nothing_recorded_and_no_credential_anywhere() {
    if !available() {
        return;
    }
    let srv = auth_server();
    let c = case();
    let m = model_files(c.path(), "auth");
    let v = register(srv, true, "auth", &m);
    let (envelope, payload) = c.sign(&m, "models:/auth@champion");
    let args = c.apply_args(srv, &envelope, "auth", "champion", &[]);
    let with = |user: &str, password: &str| {
        out(c
            .dg()
            .args(&args)
            .env("MLFLOW_TRACKING_USERNAME", user)
            .env("MLFLOW_TRACKING_PASSWORD", password))
    };
    let mut outputs = Vec::new();
    // No credentials at all.
    let none = c.apply(srv, &envelope, "auth", "champion", &[]);
    assert_eq!(none.status.code(), Some(1), "{}", text(&none));
    assert!(stderr(&none).contains("HTTP 401"), "{}", text(&none));
    // READ only: refused when recording, nothing recorded, the decision not used up.
    let reader = with("reader", READER_PASSWORD);
    assert_eq!(reader.status.code(), Some(1), "{}", text(&reader));
    let err = stderr(&reader);
    assert!(
        err.contains("HTTP 403") && err.contains("needs EDIT permission on the registered model auth"),
        "{err}"
    );
    assert!(c.entries(&payload).is_empty());
    assert!(tags(srv, true, "auth", &v).is_empty());
    assert_eq!(alias_of(srv, Some(("admin", ADMIN_PASSWORD)), "auth", "champion"), None);
    outputs.push(reader);
    // A wrong password is refused as such.
    let wrong = with("reader", "not-the-password-0000");
    assert_eq!(wrong.status.code(), Some(1));
    outputs.push(wrong);
    // The admin promotes; the reader's verify passes (READ is enough to check).
    let admin = with("admin", ADMIN_PASSWORD);
    assert_eq!(admin.status.code(), Some(0), "{}", text(&admin));
    assert_eq!(
        alias_of(srv, Some(("admin", ADMIN_PASSWORD)), "auth", "champion").as_deref(),
        Some(v.as_str())
    );
    outputs.push(admin);
    let check = out(c
        .dg()
        .args(strings(&[
            "verify",
            "--mlflow",
            &srv.url,
            "--model-uri",
            "models:/auth@champion",
            "--trusted-key",
            &s(&c.public),
            "--json",
        ]))
        .env("MLFLOW_TRACKING_USERNAME", "reader")
        .env("MLFLOW_TRACKING_PASSWORD", READER_PASSWORD));
    assert_eq!(check.status.code(), Some(0), "{}", text(&check));
    outputs.push(check);
    // A password in the URL is refused without being repeated.
    let in_url = run(&c.apply_args(
        &Server {
            url: srv.url.replace("http://", &format!("http://reader:{READER_PASSWORD}@")),
            dir: srv.dir.clone(),
        },
        &envelope,
        "auth",
        "champion",
        &[],
    ));
    assert_eq!(in_url.status.code(), Some(1));
    assert!(stderr(&in_url).contains("never in the URL"), "{}", text(&in_url));
    outputs.push(in_url);
    for o in &outputs {
        for secret in [READER_PASSWORD, ADMIN_PASSWORD] {
            assert!(!text(o).contains(secret), "a password in the output: {}", text(o));
        }
    }
    // No file this run wrote holds one (the test's directory: ledger, envelopes, keys), nor
    // any file deploy-gate might leave in the temporary directory.
    let grep = Command::new("grep")
        .args(["-rl", "-e", READER_PASSWORD, "-e", ADMIN_PASSWORD])
        .arg(c.path())
        .output()
        .unwrap();
    assert_eq!(String::from_utf8_lossy(&grep.stdout), "", "files holding a password");
}

#[test]
fn insecure_tls_is_refused_unless_asked_and_a_ledger_is_required() {
    let c = case();
    let m = model_files(c.path(), "tls");
    let (envelope, _) = c.sign(&m, "models:/tls@champion");
    let fake = Server {
        url: "https://127.0.0.1:9".into(),
        dir: PathBuf::new(),
    };
    let out = run_env(
        &c.apply_args(&fake, &envelope, "tls", "champion", &[]),
        &[("MLFLOW_TRACKING_INSECURE_TLS", "true")],
    );
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    assert!(
        stderr(&out).contains("MLFLOW_TRACKING_INSECURE_TLS=true would turn off"),
        "{}",
        text(&out)
    );
    // Asked for: accepted (and then the server is not there).
    let out = run_env(
        &c.apply_args(&fake, &envelope, "tls", "champion", &["--mlflow-insecure-tls"]),
        &[("MLFLOW_TRACKING_INSECURE_TLS", "true")],
    );
    assert_eq!(out.status.code(), Some(1));
    assert!(stderr(&out).contains("MLflow at https://127.0.0.1:9"), "{}", text(&out));
    // Without --ledger.
    let mut args = c.apply_args(&fake, &envelope, "tls", "champion", &[]);
    let i = args.iter().position(|a| a == "--ledger").unwrap();
    args.drain(i..i + 2);
    let out = run(&args);
    assert_eq!(out.status.code(), Some(1));
    assert!(stderr(&out).contains("--mlflow needs --ledger FILE"), "{}", text(&out));
    // --config and --mlflow do not go together.
    let out = run(&[
        c.apply_args(&fake, &envelope, "tls", "champion", &[]),
        strings(&["--config", "x.yaml"]),
    ]
    .concat());
    assert_eq!(out.status.code(), Some(1));
    assert!(stderr(&out).contains("cannot be used with"), "{}", text(&out));
}

#[test]
fn an_interrupted_restore_leaves_the_old_decision_used_and_the_next_restore_finishes() {
    if !available() {
        return;
    }
    let srv = server();
    let c = case();
    let (m1, m2) = (model_files(c.path(), "restore-1"), model_files(c.path(), "restore-2"));
    let v1 = register(srv, false, "rcrash", &m1);
    let v2 = register(srv, false, "rcrash", &m2);
    let (envelope, payload) = c.sign(&m1, "models:/rcrash@champion");
    let out = c.apply(srv, &envelope, "rcrash", "champion", &[]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    move_by_hand(srv, false, "rcrash", "champion", &v2);

    // Killed after the restore's intent, before the move: the alias is where the hand put it.
    let out = c.apply(
        srv,
        &envelope,
        "rcrash",
        "champion",
        &["--restore", "--fail-at", "intent-logged"],
    );
    assert_eq!(out.status.signal(), Some(libc::SIGABRT), "{}", text(&out));
    assert_eq!(alias_of(srv, None, "rcrash", "champion").as_deref(), Some(v2.as_str()));
    // The decision applied once is still used up: applying it again is a replay.
    let out = c.apply(srv, &envelope, "rcrash", "champion", &[]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    assert!(stderr(&out).contains("applied already"), "{}", text(&out));
    assert!(
        !c.entries(&payload).contains(&"not_deployed".to_owned()),
        "{:?}",
        c.entries(&payload)
    );
    assert_eq!(alias_of(srv, None, "rcrash", "champion").as_deref(), Some(v2.as_str()));

    // Killed after the move: the next restore records it and finds nothing to change.
    let out = c.apply(
        srv,
        &envelope,
        "rcrash",
        "champion",
        &["--restore", "--fail-at", "alias-moved"],
    );
    assert_eq!(out.status.signal(), Some(libc::SIGABRT), "{}", text(&out));
    assert_eq!(alias_of(srv, None, "rcrash", "champion").as_deref(), Some(v1.as_str()));
    let out = c.apply(srv, &envelope, "rcrash", "champion", &["--restore"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    assert_eq!(json_stdout(&out)["result"], "unchanged", "{}", text(&out));
    assert!(stderr(&out).contains("recorded as deployed"), "{}", text(&out));
    let out = c.apply(srv, &envelope, "rcrash", "champion", &[]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    assert_eq!(c.entries(&payload).last().map(String::as_str), Some("deployed"));
}

#[test]
fn latest_and_version_aliases_are_refused_before_the_registry_is_asked() {
    let c = case();
    let m = model_files(c.path(), "latest");
    // No server there: each refusal comes before any call.
    let fake = Server {
        url: "http://127.0.0.1:9".into(),
        dir: PathBuf::new(),
    };
    for alias in ["latest", "Latest", "LATEST", "v3", "V12"] {
        let (envelope, _) = c.sign(&m, &format!("models:/latest@{alias}"));
        for extra in [&[][..], &["--restore"][..], &["--dry-run"][..]] {
            let out = run(&c.apply_args(&fake, &envelope, "latest", alias, extra));
            assert_eq!(out.status.code(), Some(1), "{alias} {extra:?}: {}", text(&out));
            assert!(
                stderr(&out).contains(&format!("the alias `{alias}`")) && !stderr(&out).contains("MLflow at"),
                "{alias} {extra:?}: {}",
                text(&out)
            );
        }
        let out = run(&strings(&[
            "verify",
            "--mlflow",
            &fake.url,
            "--model-uri",
            &format!("models:/latest@{alias}"),
            "--trusted-key",
            &s(&c.public),
            "--json",
        ]));
        assert_ne!(out.status.code(), Some(0), "{alias}: {}", text(&out));
        assert!(
            text(&out).contains(&format!("the alias `{alias}`")) && !text(&out).contains("MLflow at"),
            "{alias}: {}",
            text(&out)
        );
    }
    assert!(!c.ledger.exists());
}

/// A registry that does every call of one apply, and answers the alias's set with HTTP 502 after
/// doing it (a proxy's error after the server's commit): a stand-in for an answer lost.
fn lossy_registry(model: &Path) -> String {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    let source = format!("file://{}", model.display());
    std::thread::spawn(move || {
        let mut alias: Option<String> = None;
        for stream in listener.incoming() {
            let mut stream = stream.unwrap();
            let mut reader = BufReader::new(stream.try_clone().unwrap());
            let mut line = String::new();
            reader.read_line(&mut line).unwrap();
            let (method, target) = line.split_once(' ').unwrap();
            let path = target.split([' ', '?']).next().unwrap().to_owned();
            let method = method.to_owned();
            let mut length = 0;
            loop {
                let mut h = String::new();
                reader.read_line(&mut h).unwrap();
                if h.trim().is_empty() {
                    break;
                }
                if let Some((k, v)) = h.split_once(':') {
                    if k.eq_ignore_ascii_case("content-length") {
                        length = v.trim().parse().unwrap();
                    }
                }
            }
            let mut body = vec![0; length];
            std::io::Read::read_exact(&mut reader, &mut body).unwrap();
            let version =
                |v: &str| json!({"model_version": {"name": "lossy", "version": v, "source": source, "tags": []}});
            let (status, answer) = match (method.as_str(), path.as_str()) {
                ("GET", "/api/2.0/mlflow/registered-models/alias") => match &alias {
                    Some(v) => (200, version(v)),
                    None => (
                        400,
                        json!({"error_code": "INVALID_PARAMETER_VALUE", "message": "Registered model alias champion not found."}),
                    ),
                },
                ("POST", "/api/2.0/mlflow/registered-models/alias") => {
                    let b: Value = serde_json::from_slice(&body).unwrap();
                    alias = Some(b["version"].as_str().unwrap().to_owned());
                    (502, json!({"message": "upstream timed out"}))
                }
                ("GET", "/api/2.0/mlflow/model-versions/get") => (200, version("1")),
                ("GET", "/api/2.0/mlflow/model-versions/get-download-uri") => (200, json!({"artifact_uri": source})),
                ("POST", "/api/2.0/mlflow/model-versions/set-tag") => (200, json!({})),
                _ => (404, json!({"error_code": "ENDPOINT_NOT_FOUND", "message": path})),
            };
            let text = answer.to_string();
            let _ = write!(
                stream,
                "HTTP/1.1 {status} X\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{text}",
                text.len()
            );
        }
    });
    url
}

#[test]
fn a_set_that_reports_an_error_but_moved_the_alias_is_recorded_as_deployed() {
    let c = case();
    let m = model_files(c.path(), "lossy");
    let srv = Server {
        url: lossy_registry(&m),
        dir: PathBuf::new(),
    };
    let (envelope, payload) = c.sign(&m, "models:/lossy@champion");
    let out = c.apply(&srv, &envelope, "lossy", "champion", &["--model-version", "1"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    assert!(stderr(&out).contains("HTTP 502"), "{}", text(&out));
    assert_eq!(json_stdout(&out)["result"], "deployed");
    assert_eq!(c.entries(&payload), ["intent", "deployed"]);
    // So it is not applied again.
    let out = c.apply(&srv, &envelope, "lossy", "champion", &["--model-version", "1"]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    assert!(stderr(&out).contains("applied already"), "{}", text(&out));
}

// ---------------------------------------------------------------- the trainer's signature

fn oms_fx(rel: &str) -> PathBuf {
    root().join("tests/fixtures/oms").join(rel)
}

fn copy_tree(from: &Path, to: &Path) {
    fs::create_dir_all(to).unwrap();
    for e in fs::read_dir(from).unwrap() {
        let e = e.unwrap();
        if e.file_type().unwrap().is_dir() {
            copy_tree(&e.path(), &to.join(e.file_name()));
        } else {
            fs::copy(e.path(), to.join(e.file_name())).unwrap();
        }
    }
}

#[test]
fn the_trainers_signature_is_checked_over_the_versions_files() {
    if !available() {
        return;
    }
    let srv = server();
    let c = case();
    // The reference implementation's signed tree (model.sig by the P-256 key inside, unicode
    // and empty files), registered as it is; and the same with a file the trainer never signed.
    let signed = c.path().join("signed");
    copy_tree(&oms_fx("models/tree"), &signed);
    let v1 = register(srv, false, "trainer", &signed);
    let grown = c.path().join("grown");
    copy_tree(&oms_fx("models/tree"), &grown);
    fs::write(grown.join("weights/extra.bin"), "not signed by the trainer").unwrap();
    let v2 = register(srv, false, "trainer", &grown);
    let p256 = s(&oms_fx("keys/p256.pub.pem"));
    let refused = |c: &Case, out: &Output, check: &str, payload: &str| {
        assert_eq!(out.status.code(), Some(2), "{}", text(out));
        assert_eq!(json_stdout(out)["check"], check, "{}", text(out));
        assert_eq!(
            alias_of(srv, None, "trainer", "champion"),
            None,
            "the alias did not move"
        );
        assert!(c.entries(payload).is_empty(), "nothing used up");
    };

    // A decision for the grown files (found by their digest, model.sig left out of it as OMS
    // leaves it out), whose model.sig does not cover extra.bin: refused.
    let (grown_env, grown_payload) = c.sign(&grown, "models:/trainer@champion");
    let out = c.apply(srv, &grown_env, "trainer", "champion", &["--trainer-key", &p256]);
    refused(&c, &out, "file_extra", &grown_payload);
    assert!(text(&out).contains("weights/extra.bin"), "{}", text(&out));
    assert!(tags(srv, false, "trainer", &v2).is_empty());

    let (envelope, payload) = c.sign(&signed, "models:/trainer@champion");
    // By a key not trusted.
    let other = s(&oms_fx("keys/other.pub.pem"));
    let out = c.apply(srv, &envelope, "trainer", "champion", &["--trainer-key", &other]);
    refused(&c, &out, "untrusted_key", &payload);
    // A signature given on the command line, over other files (models/other), by the trusted key.
    let out = c.apply(
        srv,
        &envelope,
        "trainer",
        "champion",
        &[
            "--trainer-key",
            &p256,
            "--model-signature",
            &s(&oms_fx("sigs/other.sig")),
            "--model-version",
            &v1,
        ],
    );
    let check = json_stdout(&out)["check"].as_str().unwrap_or("").to_owned();
    assert!(
        ["file_missing", "file_extra"].contains(&check.as_str()),
        "{}",
        text(&out)
    );
    refused(&c, &out, &check, &payload);
    assert!(tags(srv, false, "trainer", &v1).is_empty());

    // A dry run says the trainer, and uses nothing up.
    let out = c.apply(
        srv,
        &envelope,
        "trainer",
        "champion",
        &["--trainer-key", &p256, "--dry-run"],
    );
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    assert_eq!(json_stdout(&out)["trainer"]["method"], "files", "{}", text(&out));
    assert!(c.entries(&payload).is_empty());
    // The good signature, model.sig among the version's files: promoted, the trainer recorded.
    let out = c.apply(srv, &envelope, "trainer", "champion", &["--trainer-key", &p256]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let j = json_stdout(&out);
    assert_eq!(j["version"], v1.as_str());
    assert_eq!(j["trainer"]["curve"], "P-256");
    assert!(
        stderr(&out).contains("the trainer's model signature verified"),
        "{}",
        text(&out)
    );
    assert_eq!(alias_of(srv, None, "trainer", "champion").as_deref(), Some(v1.as_str()));
    let entries: Vec<Value> = jsonl(&c.ledger)
        .into_iter()
        .filter(|e| e["payload_sha256"] == payload.as_str())
        .collect();
    assert_eq!(entries.len(), 2);
    assert!(
        entries.iter().all(|e| e["trainer_key"] == j["trainer"]["key_id"]),
        "{entries:?}"
    );
    let (code, _, err) = c.verify(srv, "models:/trainer@champion");
    assert_eq!(code, Some(0), "{err}");

    // Files without a model.sig: said, with what to give; the bundle given on the command line
    // (by the P-384 key) then verifies.
    let bare = c.path().join("bare");
    copy_tree(&oms_fx("models/tree"), &bare);
    fs::remove_file(bare.join("model.sig")).unwrap();
    let v = register(srv, false, "trainer-bare", &bare);
    let (envelope, payload) = c.sign(&bare, "models:/trainer-bare@champion");
    let out = c.apply(srv, &envelope, "trainer-bare", "champion", &["--trainer-key", &p256]);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    assert!(
        stderr(&out).contains(&format!("version {v} of trainer-bare: no model signature"))
            && stderr(&out).contains("give --model-signature"),
        "{}",
        text(&out)
    );
    assert!(c.entries(&payload).is_empty());
    let out = c.apply(
        srv,
        &envelope,
        "trainer-bare",
        "champion",
        &[
            "--trainer-key",
            &s(&oms_fx("keys/p384.pub.pem")),
            "--model-signature",
            &s(&oms_fx("sigs/tree-p384.sig")),
        ],
    );
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    assert_eq!(json_stdout(&out)["trainer"]["curve"], "P-384");
    assert_eq!(
        alias_of(srv, None, "trainer-bare", "champion").as_deref(),
        Some(v.as_str())
    );
    // --restore checks recorded decisions, not the trainer: the flags are refused there.
    let out = c.apply(
        srv,
        &envelope,
        "trainer-bare",
        "champion",
        &["--restore", "--trainer-key", &p256],
    );
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    assert!(stderr(&out).contains("--restore re-checks"), "{}", text(&out));
}

// ---------------------------------------------------------------- verify --json on errors

#[test]
fn verify_json_says_why_when_the_registry_cannot_answer() {
    let c = case();
    let verify = |url: &str, uri: &str, env: &[(&str, &str)]| {
        let out = run_env(
            &strings(&[
                "verify",
                "--mlflow",
                url,
                "--model-uri",
                uri,
                "--trusted-key",
                &s(&c.public),
                "--json",
            ]),
            env,
        );
        assert_eq!(out.status.code(), Some(1), "{}", text(&out));
        let j = json_stdout(&out);
        assert_eq!(j["ok"], false, "{}", text(&out));
        assert!(j["version"].is_null() && j["decision_sha256"].is_null() && j["subject"].is_null());
        j["reason"].as_str().unwrap().to_owned()
    };
    // Nothing listens there.
    let closed = format!("http://127.0.0.1:{}", free_port());
    let reason = verify(&closed, "models:/m@champion", &[]);
    assert!(reason.contains(&format!("MLflow at {closed}")), "{reason}");
    // A bad --model-uri is said the same way.
    let reason = verify(&closed, "runs:/abc", &[]);
    assert!(reason.contains("expected models:/NAME@ALIAS"), "{reason}");
    if !available() {
        return;
    }
    // An unknown model, on a real server.
    let reason = verify(&server().url, "models:/no-such-model@champion", &[]);
    assert!(
        reason.contains("HTTP 404") && reason.contains("RESOURCE_DOES_NOT_EXIST"),
        "{reason}"
    );
    // A 401, without showing the password.
    let reason = verify(
        &auth_server().url,
        "models:/m@champion",
        &[
            ("MLFLOW_TRACKING_USERNAME", "reader"),
            ("MLFLOW_TRACKING_PASSWORD", "wrong-pw-4321"),
        ],
    );
    assert!(
        reason.contains("HTTP 401") && !reason.contains("wrong-pw-4321"),
        "{reason}"
    );
}

// ---------------------------------------------------------------- TLS and the token

struct Nginx(Child);

impl Drop for Nginx {
    /// SIGTERM (nginx's fast shutdown), which ends its worker too: a SIGKILL of the master
    /// would leave the worker listening.
    fn drop(&mut self) {
        unsafe {
            libc::kill(self.0.id() as libc::pid_t, libc::SIGTERM);
        }
        let until = Instant::now() + Duration::from_secs(10);
        while Instant::now() < until {
            if let Ok(Some(_)) = self.0.try_wait() {
                return;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// nginx on TLS (a certificate for 127.0.0.1 from a CA made here, `dir/ca.pem`) in front of
/// `upstream`, answering 401 unless `Authorization: Bearer TOKEN`; its access log
/// (`dir/access.log`) has the status and path of each request.
fn tls_proxy(nginx: &str, dir: &Path, upstream: &str, token: &str) -> (Nginx, String) {
    openssl(
        dir,
        &[
            "req",
            "-x509",
            "-newkey",
            "ec",
            "-pkeyopt",
            "ec_paramgen_curve:P-256",
            "-nodes",
            "-keyout",
            "ca.key",
            "-out",
            "ca.pem",
            "-days",
            "2",
            "-subj",
            "/CN=deploy-gate test CA",
        ],
    );
    openssl(
        dir,
        &[
            "req",
            "-newkey",
            "ec",
            "-pkeyopt",
            "ec_paramgen_curve:P-256",
            "-nodes",
            "-keyout",
            "server.key",
            "-out",
            "server.csr",
            "-subj",
            "/CN=127.0.0.1",
        ],
    );
    fs::write(
        dir.join("ext.cnf"),
        "subjectAltName=IP:127.0.0.1,DNS:localhost\nextendedKeyUsage=serverAuth\n",
    )
    .unwrap();
    openssl(
        dir,
        &[
            "x509",
            "-req",
            "-in",
            "server.csr",
            "-CA",
            "ca.pem",
            "-CAkey",
            "ca.key",
            "-CAcreateserial",
            "-out",
            "server.pem",
            "-days",
            "2",
            "-extfile",
            "ext.cnf",
        ],
    );
    let port = free_port();
    let host = upstream.trim_start_matches("http://");
    let conf = format!(
        "worker_processes 1;\npid {d}/nginx.pid;\nerror_log {d}/error.log;\nevents {{ worker_connections 256; }}\n\
         http {{\n  log_format st '$status $request_method $uri';\n  access_log {d}/access.log st;\n  client_body_temp_path {d}/body;\n\
         proxy_temp_path {d}/proxy;\n  fastcgi_temp_path {d}/fastcgi;\n  uwsgi_temp_path {d}/uwsgi;\n  scgi_temp_path {d}/scgi;\n\
         server {{\n    listen 127.0.0.1:{port} ssl;\n    ssl_certificate {d}/server.pem;\n    ssl_certificate_key {d}/server.key;\n\
         client_max_body_size 0;\n\
         location / {{\n      if ($http_authorization != \"Bearer {token}\") {{ return 401 '{{\"error_code\": \"UNAUTHENTICATED\", \"message\": \"a bearer token is needed\"}}'; }}\n\
         proxy_set_header Host {host};\n      proxy_pass {upstream};\n    }}\n  }}\n}}\n",
        d = dir.display()
    );
    fs::write(dir.join("nginx.conf"), conf).unwrap();
    let child = Command::new(nginx)
        .args(["-c", &s(&dir.join("nginx.conf")), "-g", "daemon off;"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("nginx starts");
    let proxy = Nginx(child);
    let until = Instant::now() + Duration::from_secs(30);
    while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
        assert!(
            Instant::now() < until,
            "nginx did not listen: {}",
            fs::read_to_string(dir.join("error.log")).unwrap_or_default()
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    (proxy, format!("https://127.0.0.1:{port}"))
}

#[test]
fn over_tls_with_the_ca_file_and_a_bearer_token_that_appears_nowhere() {
    if !available() {
        return;
    }
    let (Some(nginx), Some(_)) = (find_program("nginx"), find_program("openssl")) else {
        assert!(
            std::env::var("DEPLOY_GATE_REQUIRE_MLFLOW").as_deref() != Ok("1"),
            "nginx and openssl are installed by scripts/setup.sh for this test"
        );
        eprintln!("skipped: nginx or openssl is not installed");
        return;
    };
    let srv = server();
    let c = case();
    let tls_dir = tempdir();
    let mut token_bytes = [0u8; 16];
    getrandom::fill(&mut token_bytes).unwrap();
    let token = format!("tok-{}", hex::encode(token_bytes));
    let (_proxy, https) = tls_proxy(&nginx, tls_dir.path(), &srv.url, &token);
    let ca = s(&tls_dir.path().join("ca.pem"));
    let tls = Server {
        url: https.clone(),
        dir: PathBuf::new(),
    };
    let m = model_files(c.path(), "tls-token");
    let v = register(srv, false, "tls", &m);
    let (envelope, payload) = c.sign(&m, "models:/tls@champion");
    let mut outputs = Vec::new();
    let bearer = [("MLFLOW_TRACKING_TOKEN", token.as_str())];
    let verify = |extra: &[&str], env: &[(&str, &str)]| {
        let mut args = strings(&[
            "verify",
            "--mlflow",
            &https,
            "--model-uri",
            "models:/tls@champion",
            "--trusted-key",
            &s(&c.public),
            "--json",
        ]);
        args.extend(strings(extra));
        run_env(&args, env)
    };

    // Without the CA file: the certificate is not trusted, said as such; nothing used up.
    let out = run_env(&c.apply_args(&tls, &envelope, "tls", "champion", &[]), &bearer);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    assert!(
        stderr(&out).contains(&format!("MLflow at {https}")) && stderr(&out).to_lowercase().contains("certificate"),
        "{}",
        text(&out)
    );
    assert!(c.entries(&payload).is_empty());
    outputs.push(out);
    let out = verify(&[], &bearer);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    let j = json_stdout(&out);
    assert!(
        j["ok"] == false && j["reason"].as_str().unwrap().to_lowercase().contains("certificate"),
        "{j}"
    );
    outputs.push(out);
    // MLFLOW_TRACKING_INSECURE_TLS=true is refused unless asked for.
    let insecure = [
        ("MLFLOW_TRACKING_TOKEN", token.as_str()),
        ("MLFLOW_TRACKING_INSECURE_TLS", "true"),
    ];
    let out = run_env(&c.apply_args(&tls, &envelope, "tls", "champion", &[]), &insecure);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    assert!(
        stderr(&out).contains("MLFLOW_TRACKING_INSECURE_TLS=true would turn off"),
        "{}",
        text(&out)
    );
    outputs.push(out);
    // Without the token (or with another): nginx's 401, said, nothing used up.
    let out = run_env(
        &c.apply_args(&tls, &envelope, "tls", "champion", &["--ca-file", &ca]),
        &[],
    );
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    assert!(stderr(&out).contains("HTTP 401"), "{}", text(&out));
    let out = verify(&["--ca-file", &ca], &[("MLFLOW_TRACKING_TOKEN", "tok-not-this-one")]);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    assert!(
        json_stdout(&out)["reason"].as_str().unwrap().contains("HTTP 401"),
        "{}",
        text(&out)
    );
    assert!(c.entries(&payload).is_empty());
    assert_eq!(alias_of(srv, None, "tls", "champion"), None);

    // With the CA file and the token: promoted through the proxy (every call and download).
    let out = run_env(
        &c.apply_args(&tls, &envelope, "tls", "champion", &["--ca-file", &ca]),
        &bearer,
    );
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    assert_eq!(alias_of(srv, None, "tls", "champion").as_deref(), Some(v.as_str()));
    assert_eq!(c.entries(&payload), ["intent", "deployed"]);
    outputs.push(out);
    let out = verify(&["--ca-file", &ca], &bearer);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    assert_eq!(json_stdout(&out)["version"], v.as_str());
    outputs.push(out);
    // Insecure, asked for: accepted without the CA file.
    let out = verify(&["--mlflow-insecure-tls"], &insecure);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    outputs.push(out);
    // The token reached the server (the proxy let the downloads through) and nothing else.
    let log = fs::read_to_string(tls_dir.path().join("access.log")).unwrap();
    assert!(
        log.lines()
            .any(|l| l.starts_with("200 GET /api/2.0/mlflow-artifacts/artifacts/")),
        "{log}"
    );
    assert!(
        log.lines()
            .any(|l| l.starts_with("200 POST /api/2.0/mlflow/registered-models/alias")),
        "{log}"
    );
    assert!(log.lines().any(|l| l.starts_with("401 ")), "{log}");
    for o in &outputs {
        assert!(!text(o).contains(&token), "the token in the output: {}", text(o));
    }
    let grep = Command::new("grep")
        .args(["-rl", "-e", &token])
        .arg(c.path())
        .output()
        .unwrap();
    assert_eq!(String::from_utf8_lossy(&grep.stdout), "", "files holding the token");
}

// ---------------------------------------------------------------- a hostile registry

struct Hostile {
    child: Child,
    url: String,
    log: PathBuf,
}

impl Drop for Hostile {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The hostile registry; its `local-NAME` models' files are at `file://DIR/local/NAME`.
fn hostile(dir: &Path) -> Hostile {
    let log = dir.join("hostile.log");
    let mut child = Command::new("python3")
        .arg(root().join("tests/servers/hostile_mlflow.py"))
        .arg("--log")
        .arg(&log)
        .arg("--local")
        .arg(dir.join("local"))
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .spawn()
        .expect("python3 runs");
    let mut line = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    let port = serde_json::from_str::<Value>(&line).unwrap()["port"].as_u64().unwrap();
    Hostile {
        child,
        url: format!("http://127.0.0.1:{port}"),
        log,
    }
}

#[test]
fn a_hostile_registry_meets_each_limit_and_nothing_is_written() {
    let c = case();
    let h = hostile(c.path());
    let srv = Server {
        url: h.url.clone(),
        dir: PathBuf::new(),
    };
    let m = model_files(c.path(), "hostile");
    for (name, extra, limit) in [
        ("pages", &[][..], "more than 100 pages of versions"),
        ("huge-json", &[][..], "longer than 33554432 bytes"),
        ("deep", &["--model-version", "1"][..], "more than 32 folders deep"),
        (
            "many-files",
            &["--model-version", "1"][..],
            "more than 100000 files and folders",
        ),
        (
            "endless-file",
            &["--model-version", "1"][..],
            "more of the file `weights.bin` than the 10 bytes its listing gives",
        ),
        (
            "unlisted-file",
            &["--model-version", "1", "--mlflow-max-bytes", "1000000"][..],
            "past 1000000 bytes, the most they may hold (--mlflow-max-bytes)",
        ),
        (
            "big-listed",
            &["--model-version", "1"][..],
            "listed with 1000000000000000 bytes: more than the 274877906944 bytes",
        ),
    ] {
        let (envelope, payload) = c.sign(&m, &format!("models:/{name}@champion"));
        let started = Instant::now();
        let out = c.apply(&srv, &envelope, name, "champion", extra);
        assert_eq!(out.status.code(), Some(1), "{name}: {}", text(&out));
        assert!(stderr(&out).contains(limit), "{name}: {}", text(&out));
        assert!(
            started.elapsed() < Duration::from_secs(60),
            "{name}: {:?}",
            started.elapsed()
        );
        assert!(c.entries(&payload).is_empty(), "{name}");
    }
    // An endless error body is cut, not read to its end.
    let (envelope, _) = c.sign(&m, "models:/huge-error@champion");
    let out = c.apply(&srv, &envelope, "huge-error", "champion", &[]);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    assert!(
        stderr(&out).contains("HTTP 500") && stderr(&out).len() < 4000,
        "{}",
        text(&out)
    );
    // verify --json on the endless answer.
    let out = run(&strings(&[
        "verify",
        "--mlflow",
        &h.url,
        "--model-uri",
        "models:/huge-json@champion",
        "--trusted-key",
        &s(&c.public),
        "--json",
    ]));
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    assert!(json_stdout(&out)["reason"]
        .as_str()
        .unwrap()
        .contains("longer than 33554432 bytes"));
    // Nothing was ever written to the registry (no tag, no alias), and no downloaded file left.
    let log = fs::read_to_string(&h.log).unwrap();
    assert!(log.lines().count() > 100, "{log}");
    assert!(!log.lines().any(|l| l.starts_with("POST")), "{log}");
    let left: Vec<_> = fs::read_dir(c.path())
        .unwrap()
        .filter_map(|e| e.ok())
        .filter(|e| e.file_name().to_string_lossy().starts_with("deploy-gate-mlflow-"))
        .collect();
    assert!(left.is_empty(), "{left:?}");
}

#[test]
fn local_locations_and_a_search_of_many_versions_meet_the_limits_and_nothing_is_written() {
    let c = case();
    let h = hostile(c.path());
    let srv = Server {
        url: h.url.clone(),
        dir: PathBuf::new(),
    };
    let local = c.path().join("local");
    // Three files of 10 bytes.
    fs::create_dir_all(local.join("big")).unwrap();
    for i in 0..3 {
        fs::write(local.join(format!("big/part-{i}.bin")), "0123456789").unwrap();
    }
    // 33 folders deep.
    let mut deep = local.join("deep");
    for _ in 0..33 {
        deep = deep.join("d");
    }
    fs::create_dir_all(&deep).unwrap();
    fs::write(deep.join("weights.bin"), "w").unwrap();
    // A symbolic link out of the folder.
    fs::create_dir_all(local.join("link")).unwrap();
    fs::write(local.join("link/config.json"), "{}").unwrap();
    std::os::unix::fs::symlink("/etc", local.join("link/etc")).unwrap();
    // The location itself a symbolic link.
    std::os::unix::fs::symlink(local.join("big"), local.join("linked")).unwrap();
    let m = model_files(c.path(), "hostile-local");
    for (name, extra, limits) in [
        (
            "local-big",
            &["--model-version", "1", "--mlflow-max-bytes", "15"][..],
            &[
                "version 1 of local-big",
                "past 15 bytes, the most they may hold (--mlflow-max-bytes)",
            ][..],
        ),
        (
            "local-deep",
            &["--model-version", "1"][..],
            &["version 1 of local-deep", "more than 32 folders deep"][..],
        ),
        (
            "local-link",
            &["--model-version", "1"][..],
            &["/link/etc is a symbolic link, which deploy-gate does not follow"][..],
        ),
        (
            "local-linked",
            &["--model-version", "1"][..],
            &["/local/linked is a symbolic link, which deploy-gate does not follow"][..],
        ),
        // Searched for (no --model-version): a limit stops the search, not only that version.
        (
            "local-big",
            &["--mlflow-max-bytes", "15"][..],
            &[
                "version 1 of local-big, searched for the decision's files",
                "(--mlflow-max-bytes)",
                "give --model-version",
            ][..],
        ),
        // Each version's one file of 10 bytes is within 25 bytes; the versions read together are
        // not: the third is refused.
        (
            "many-versions",
            &["--mlflow-max-bytes", "25"][..],
            &[
                "version 3 of many-versions, searched for the decision's files",
                "past 25 bytes",
                "give --model-version",
            ][..],
        ),
    ] {
        let (envelope, payload) = c.sign(&m, &format!("models:/{name}@champion"));
        let out = c.apply(&srv, &envelope, name, "champion", extra);
        assert_eq!(out.status.code(), Some(1), "{name} {extra:?}: {}", text(&out));
        for limit in limits {
            assert!(
                stderr(&out).contains(limit),
                "{name} {extra:?}: {limit}: {}",
                text(&out)
            );
        }
        assert!(!stderr(&out).contains("left out"), "{name}: {}", text(&out));
        assert!(c.entries(&payload).is_empty(), "{name}");
    }
    // Within the limits, each version of many-versions is read (and none has the decision's
    // files): the budget, not a single version, was what stopped the search above.
    let (envelope, _) = c.sign(&m, "models:/many-versions@champion");
    let out = c.apply(
        &srv,
        &envelope,
        "many-versions",
        "champion",
        &["--mlflow-max-bytes", "50"],
    );
    assert_ne!(out.status.code(), Some(0), "{}", text(&out));
    assert!(text(&out).contains("versions read: 1 sha256:"), "{}", text(&out));
    // Nothing was written to the registry: no tag, no alias.
    let log = fs::read_to_string(&h.log).unwrap();
    assert!(!log.lines().any(|l| l.starts_with("POST")), "{log}");
    assert!(!log.is_empty());
    let left: Vec<_> = fs::read_dir(c.path())
        .unwrap()
        .filter_map(|e| e.ok())
        .filter(|e| e.file_name().to_string_lossy().starts_with("deploy-gate-mlflow-"))
        .collect();
    assert!(left.is_empty(), "{left:?}");
}
