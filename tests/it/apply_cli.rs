//! `apply` and `rollback` under races, crashes and faults, with real processes: exactly once
//! per decision and config, a truthful state at every crash point, one write per ledger entry,
//! safe temporary files, symlinked configs.

use crate::common::*;
use deploy_gate::deploy::{backup_file_name, deploy_config, legacy_backup_file_name, normalize_model_path, Change};
use serde_json::Value;
use std::fs;
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

const CONFIG: &str = "# serving config\nbackend: transformers\ndefault_model: /models/agent-7b-v1\nport: 8080\n";
/// The decision's target: a name, so one envelope serves every config path of the tests.
const TARGET: &str = "serving-config";

/// One signed, approved decision (and its key and model), shared by every test.
struct Signed {
    _dir: tempfile::TempDir,
    envelope: PathBuf,
    public: PathBuf,
    model: PathBuf,
    payload_sha256: String,
}

fn signed() -> &'static Signed {
    static SIGNED: OnceLock<Signed> = OnceLock::new();
    SIGNED.get_or_init(|| {
        let dir = tempdir();
        let Reviewer { report, key, public } = reviewer(dir.path());
        let model = dir.path().join("agent-7b-v2");
        fs::create_dir_all(model.join("weights")).unwrap();
        fs::write(model.join("config.json"), "{\"layers\": 32}").unwrap();
        fs::write(model.join("weights/part-0.bin"), [1u8, 2, 3]).unwrap();
        let envelope = dir.path().join("decision.dsse.json");
        let out = run(&[
            "sign".into(),
            s(&report),
            "--key".into(),
            s(&key),
            "--model".into(),
            "agent-7b".into(),
            "--model-path".into(),
            s(&model),
            "--target".into(),
            TARGET.into(),
            "--out".into(),
            s(&envelope),
        ]);
        assert!(out.status.success(), "{}", stderr(&out));
        let env: Value = serde_json::from_slice(&fs::read(&envelope).unwrap()).unwrap();
        let payload = deploy_gate::attest::dsse::decode(env["payload"].as_str().unwrap()).unwrap();
        Signed {
            public,
            payload_sha256: deploy_gate::attest::file_digest(&payload),
            envelope,
            model,
            _dir: dir,
        }
    })
}

/// The config the built-in edit makes of CONFIG (whatever the library's rules).
fn new_config() -> Vec<u8> {
    let model = s(&signed().model);
    let change = Change {
        model_path: &model,
        backend: "transformers",
        stage_models: &[],
    };
    deploy_config(CONFIG.as_bytes(), &change).unwrap()
}

fn apply_args(config: &Path, ledger: Option<&Path>, extra: &[&str]) -> Vec<String> {
    let sg = signed();
    let mut args = vec![
        "apply".to_owned(),
        s(&sg.envelope),
        "--trusted-key".into(),
        s(&sg.public),
        "--model-path".into(),
        s(&sg.model),
        "--config".into(),
        s(config),
        "--target".into(),
        TARGET.into(),
    ];
    if let Some(l) = ledger {
        args.extend(["--ledger".into(), s(l)]);
    }
    args.extend(extra.iter().map(|a| a.to_string()));
    args
}

fn apply(config: &Path, ledger: Option<&Path>, extra: &[&str]) -> Output {
    run(&apply_args(config, ledger, extra))
}

fn spawn(config: &Path, ledger: Option<&Path>, extra: &[&str]) -> Child {
    dg().args(apply_args(config, ledger, extra))
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap()
}

fn backup_of(config: &Path) -> PathBuf {
    config.with_file_name(backup_file_name(&config.file_name().unwrap().to_string_lossy()))
}

fn default_ledger(real_config: &Path) -> PathBuf {
    real_config.with_file_name(format!(
        "{}.deploy-gate-ledger.jsonl",
        real_config.file_name().unwrap().to_string_lossy()
    ))
}

/// The ledger's complete lines as JSON (every complete line must be JSON), and whether a torn
/// last line follows.
fn ledger_entries(path: &Path) -> (Vec<Value>, bool) {
    let bytes = fs::read(path).unwrap_or_default();
    let text = String::from_utf8(bytes).unwrap();
    let torn = !text.is_empty() && !text.ends_with('\n');
    let complete = if torn {
        &text[..text.rfind('\n').map_or(0, |i| i + 1)]
    } else {
        &text[..]
    };
    let entries = complete
        .lines()
        .enumerate()
        .map(|(i, l)| serde_json::from_str(l).unwrap_or_else(|e| panic!("{} line {}: {e}: {l}", path.display(), i + 1)))
        .collect();
    (entries, torn)
}

fn results_of(entries: &[Value], payload: &str) -> Vec<String> {
    entries
        .iter()
        .filter(|e| e["payload_sha256"] == payload)
        .map(|e| e["result"].as_str().unwrap().to_owned())
        .collect()
}

fn temps_in(dir: &Path) -> Vec<String> {
    fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| {
            // This version's names, and the `.NAME.deploy-gate-PID` of earlier ones.
            n.contains(".deploy-gate-tmp-")
                || n.rsplit_once(".deploy-gate-")
                    .is_some_and(|(_, pid)| !pid.is_empty() && pid.bytes().all(|b| b.is_ascii_digit()))
        })
        .collect()
}

/// A fresh directory with CONFIG in it.
fn fresh() -> (tempfile::TempDir, PathBuf) {
    let dir = tempdir();
    let config = dir.path().join("config.yaml");
    fs::write(&config, CONFIG).unwrap();
    (dir, config)
}

/// After a finished apply of the decision: the new config, the old one as backup, exactly one
/// `deployed` entry, every ledger line whole, no temporary file.
fn assert_deployed_once(config: &Path, ledger: &Path) {
    let payload = &signed().payload_sha256;
    assert_eq!(
        fs::read(config).unwrap(),
        new_config(),
        "the config holds the new bytes"
    );
    assert_eq!(
        fs::read(backup_of(config)).unwrap(),
        CONFIG.as_bytes(),
        "the backup is the config from before the deploy"
    );
    let (entries, torn) = ledger_entries(ledger);
    assert!(!torn, "no torn line is left");
    let results = results_of(&entries, payload);
    assert_eq!(
        results.iter().filter(|r| *r == "deployed").count(),
        1,
        "one deployed entry: {results:?}"
    );
    assert_eq!(results.last().map(String::as_str), Some("deployed"), "{results:?}");
    let dir = config.parent().unwrap();
    assert_eq!(temps_in(dir), Vec::<String>::new(), "no temporary file left");
}

// ---------------------------------------------------------------- item 2: exactly once

#[test]
fn applies_of_one_decision_started_together_deploy_exactly_once() {
    let mut seed = seed();
    for round in 0..12 {
        let (dir, config) = fresh();
        let ledger = dir.path().join("ledger.jsonl");
        let n = [2, 3, 4][round % 3];
        // Half the rounds start all at once, half a few milliseconds apart; some go through a
        // symlink to the same file (one config lock whatever the path).
        let link = dir.path().join("link.yaml");
        std::os::unix::fs::symlink("config.yaml", &link).unwrap();
        let children: Vec<Child> = (0..n)
            .map(|i| {
                if round % 2 == 1 {
                    std::thread::sleep(Duration::from_micros(next(&mut seed) % 4000));
                }
                let path = if round % 4 == 3 && i % 2 == 1 { &link } else { &config };
                spawn(path, Some(&ledger), &[])
            })
            .collect();
        let outs: Vec<Output> = children.into_iter().map(|c| c.wait_with_output().unwrap()).collect();
        let codes: Vec<Option<i32>> = outs.iter().map(|o| o.status.code()).collect();
        assert_eq!(
            codes.iter().filter(|c| **c == Some(0)).count(),
            1,
            "round {round}: exactly one deploys: {codes:?} {:?}",
            outs.iter().map(stderr).collect::<Vec<_>>()
        );
        for o in outs.iter().filter(|o| o.status.code() != Some(0)) {
            assert_eq!(o.status.code(), Some(2), "{}", stderr(o));
            let v: Value = serde_json::from_slice(&o.stdout).unwrap();
            assert_eq!(v["check"], "replayed", "the others are refused as replays");
        }
        // The backup is never written over by a later apply of the same decision: the symlink
        // rounds write their backup beside the link, so check the one beside the config only
        // where only the config was used.
        if round % 4 != 3 {
            assert_deployed_once(&config, &ledger);
        } else {
            assert_eq!(fs::read(&config).unwrap(), new_config());
            let (entries, _) = ledger_entries(&ledger);
            assert_eq!(
                results_of(&entries, &signed().payload_sha256)
                    .iter()
                    .filter(|r| *r == "deployed")
                    .count(),
                1
            );
        }
    }
}

#[test]
fn two_ledgers_on_one_config_replace_it_once_and_keep_the_backup() {
    for _ in 0..4 {
        let (dir, config) = fresh();
        let (a, b) = (dir.path().join("a.jsonl"), dir.path().join("b.jsonl"));
        let pa = spawn(&config, Some(&a), &[]);
        let pb = spawn(&config, Some(&b), &[]);
        let (oa, ob) = (pa.wait_with_output().unwrap(), pb.wait_with_output().unwrap());
        assert_eq!((oa.status.code(), ob.status.code()), (Some(0), Some(0)));
        assert!(
            stderr(&oa).contains("unchanged") ^ stderr(&ob).contains("unchanged"),
            "one of them finds the config deployed already: {} / {}",
            stderr(&oa),
            stderr(&ob)
        );
        assert_eq!(fs::read(backup_of(&config)).unwrap(), CONFIG.as_bytes());
        assert_eq!(fs::read(&config).unwrap(), new_config());
    }
}

#[test]
fn without_a_ledger_flag_the_default_ledger_beside_the_config_refuses_a_replay() {
    let (_dir, config) = fresh();
    let out = apply(&config, None, &[]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let ledger = default_ledger(&config);
    assert!(ledger.exists(), "the default ledger is {}", ledger.display());
    let again = apply(&config, None, &[]);
    assert_eq!(again.status.code(), Some(2), "{}", stderr(&again));
    assert!(stderr(&again).contains("replayed"));
    assert_deployed_once(&config, &ledger);
}

// ---------------------------------------------------------------- item 5: crash points

/// In the order an apply passes them: the intent comes first, so nothing before the config's
/// exchange replaces the previous backup unless the intent is recorded.
const STEPS: &[&str] = &[
    "locked",
    "intent-logged",
    "backup-written",
    "config-written",
    "backup-renamed",
    "config-renamed",
    "outcome-logged",
];

/// What must hold at any moment, even right after a `kill -9`.
fn assert_truthful(config: &Path, ledger: &Path, context: &str) {
    let payload = &signed().payload_sha256;
    let now = fs::read(config).unwrap();
    let new = new_config();
    assert!(
        now == CONFIG.as_bytes() || now == new,
        "{context}: the config holds the old or the new bytes"
    );
    if let Ok(b) = fs::read(backup_of(config)) {
        assert_eq!(b, CONFIG.as_bytes(), "{context}: the backup is the pre-deploy config");
    }
    let (entries, _) = ledger_entries(ledger);
    let results = results_of(&entries, payload);
    assert!(
        results.iter().filter(|r| *r == "deployed").count() <= 1,
        "{context}: {results:?}"
    );
    if results.last().map(String::as_str) == Some("deployed") {
        assert_eq!(
            now, new,
            "{context}: the ledger says deployed only when the config was replaced"
        );
    }
    if now == new {
        assert!(
            matches!(results.last().map(String::as_str), Some("deployed" | "intent")),
            "{context}: a replaced config is recorded (deployed, or an intent): {results:?}"
        );
    }
}

/// The next apply after an interruption: it reports and completes, or refuses as a replay when
/// the config was replaced already (saying the model IS deployed).
/// Returns whether it deployed.
fn assert_next_apply_completes(config: &Path, ledger: &Path, context: &str) -> bool {
    let was_new = fs::read(config).unwrap() == new_config();
    let (entries, _) = ledger_entries(ledger);
    let interrupted = results_of(&entries, &signed().payload_sha256)
        .last()
        .map(String::as_str)
        == Some("intent");
    let out = apply(config, Some(ledger), &[]);
    if interrupted {
        let want = if was_new {
            "DID replace"
        } else {
            "recorded as not deployed"
        };
        assert!(
            stderr(&out).contains("interrupted apply") && stderr(&out).contains(want),
            "{context}: the interrupted apply is reported: {}",
            stderr(&out)
        );
    }
    if was_new {
        assert_eq!(out.status.code(), Some(2), "{context}: {}", stderr(&out));
        assert!(stderr(&out).contains("replayed"), "{context}: {}", stderr(&out));
        assert!(stderr(&out).contains("IS deployed"), "{context}: {}", stderr(&out));
    } else {
        assert_eq!(out.status.code(), Some(0), "{context}: {}", stderr(&out));
    }
    assert_deployed_once(config, ledger);
    !was_new
}

#[test]
fn every_crash_point_leaves_a_truthful_state_that_the_next_apply_resolves() {
    for step in STEPS {
        let (dir, config) = fresh();
        let ledger = dir.path().join("ledger.jsonl");
        let out = apply(&config, Some(&ledger), &["--fail-at", step]);
        assert_eq!(
            out.status.signal(),
            Some(libc::SIGABRT),
            "{step}: the process aborts there: {}",
            stderr(&out)
        );
        assert_truthful(&config, &ledger, step);
        let replaced = matches!(*step, "config-renamed" | "outcome-logged");
        assert_eq!(fs::read(&config).unwrap() == new_config(), replaced, "{step}");
        let temps = match *step {
            "backup-written" | "backup-renamed" => 1,
            "config-written" => 2,
            _ => 0,
        };
        assert_eq!(
            temps_in(dir.path()).len(),
            temps,
            "{step}: a crash leaves its temporary files, no others"
        );
        let next = apply(&config, Some(&ledger), &[]);
        let err = stderr(&next);
        if temps > 0 {
            assert!(err.contains("removed"), "{step}: {err}");
        }
        match *step {
            "intent-logged" | "backup-written" | "config-written" | "backup-renamed" => {
                assert!(err.contains("recorded as not deployed"), "{step}: {err}");
                assert_eq!(next.status.code(), Some(0), "{step}: {err}");
            }
            "config-renamed" => {
                assert!(
                    err.contains("DID replace") && err.contains("IS deployed"),
                    "{step}: {err}"
                );
                assert_eq!(next.status.code(), Some(2), "{step}: {err}");
            }
            "outcome-logged" => assert_eq!(next.status.code(), Some(2), "{step}: {err}"),
            _ => assert_eq!(next.status.code(), Some(0), "{step}: {err}"),
        }
        assert_deployed_once(&config, &ledger);
        let (entries, _) = ledger_entries(&ledger);
        let results = results_of(&entries, &signed().payload_sha256);
        let want: &[&str] = match *step {
            "intent-logged" | "backup-written" | "config-written" | "backup-renamed" => {
                &["intent", "not_deployed", "intent", "deployed"]
            }
            "config-renamed" => &["intent", "deployed"],
            _ => &["intent", "deployed"],
        };
        assert_eq!(results, want, "{step}");
    }
}

#[test]
fn an_interrupted_intent_on_a_config_changed_since_is_recorded_unknown_and_not_applied_again() {
    let (dir, config) = fresh();
    let ledger = dir.path().join("ledger.jsonl");
    let out = apply(&config, Some(&ledger), &["--fail-at", "intent-logged"]);
    assert_eq!(out.status.signal(), Some(libc::SIGABRT));
    let edited = "# edited by hand after the crash\nbackend: api\n";
    fs::write(&config, edited).unwrap();
    let out = apply(&config, Some(&ledger), &[]);
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains("neither the bytes before nor after") && err.contains("replayed"),
        "{err}"
    );
    assert_eq!(fs::read_to_string(&config).unwrap(), edited, "the config is left alone");
    let (entries, _) = ledger_entries(&ledger);
    assert_eq!(results_of(&entries, &signed().payload_sha256), ["intent", "unknown"]);
}

#[test]
fn an_interrupted_deploy_command_is_recorded_unknown_and_not_run_again() {
    let (dir, config) = fresh();
    let ledger = dir.path().join("ledger.jsonl");
    let runs = dir.path().join("runs");
    let cmd = [
        "--deploy-cmd",
        "/bin/sh",
        "-c",
        "echo run >> \"$0\"",
        &*s(&runs).leak(),
        ";",
    ];
    let mut crashed = cmd.to_vec();
    crashed.extend(["--fail-at", "intent-logged"]);
    let out = apply(&config, Some(&ledger), &crashed);
    assert_eq!(out.status.signal(), Some(libc::SIGABRT));
    let out = apply(&config, Some(&ledger), &cmd);
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("outcome is unknown"), "{err}");
    assert!(!runs.exists(), "the command is not run again");
    let (entries, _) = ledger_entries(&ledger);
    assert_eq!(results_of(&entries, &signed().payload_sha256), ["intent", "unknown"]);
    // A command that fails: not deployed, and the decision may be retried.
    let (dir, config) = fresh();
    let ledger = dir.path().join("ledger.jsonl");
    let out = apply(&config, Some(&ledger), &["--deploy-cmd", "/bin/false", ";"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(stderr(&out).contains("NOT deployed"), "{}", stderr(&out));
    let out = apply(&config, Some(&ledger), &cmd);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(fs::read_to_string(&runs).unwrap(), "run\n");
    let (entries, _) = ledger_entries(&ledger);
    assert_eq!(
        results_of(&entries, &signed().payload_sha256),
        ["intent", "not_deployed", "intent", "deployed"]
    );
}

fn seed() -> u64 {
    let t = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_nanos() as u64;
    eprintln!("random seed {t}");
    t | 1
}

fn next(x: &mut u64) -> u64 {
    // xorshift64*
    *x ^= *x >> 12;
    *x ^= *x << 25;
    *x ^= *x >> 27;
    x.wrapping_mul(0x2545_F491_4F6C_DD1D)
}

#[test]
fn kill_9_at_random_moments_leaves_a_truthful_state_and_the_next_apply_completes() {
    let seed0 = seed();
    let (dir, config) = fresh();
    let ledger = dir.path().join("ledger.jsonl");
    // How long one apply takes here (the fastest of three), and when it writes its first file.
    let args = apply_args(&config, Some(&ledger), &[]);
    let timed = |args: &[String]| {
        fs::write(&config, CONFIG).unwrap();
        let _ = fs::remove_file(&ledger);
        let start = Instant::now();
        let out = run(args);
        assert!(out.status.success(), "{}", stderr(&out));
        (out, start.elapsed().as_micros() as u64)
    };
    let whole = (0..3).map(|_| timed(&args).1).min().unwrap();
    // Everything before the first write is what `verify` does too.
    let sg = signed();
    let verify = [
        "verify".to_owned(),
        s(&sg.envelope),
        "--trusted-key".into(),
        s(&sg.public),
        "--model-path".into(),
        s(&sg.model),
        "--target".into(),
        TARGET.into(),
    ];
    let writing = (0..3).map(|_| timed(&verify).1).min().unwrap().min(whole);
    // Three workers, each in its own directory, kill applies until together they have made at
    // least 100 kills (more while the time budget lasts).
    let budget = Instant::now();
    let total = std::sync::atomic::AtomicUsize::new(0);
    let counts: Vec<[usize; 4]> = std::thread::scope(|scope| {
        let workers: Vec<_> = (0..3u64)
            .map(|w| {
                let total = &total;
                scope.spawn(move || {
                    let mut seed = seed0 ^ (w + 1).wrapping_mul(0x9E37_79B9_7F4A_7C15);
                    let (dir, config) = fresh();
                    let ledger = dir.path().join("ledger.jsonl");
                    // [nothing written, intent (old config), intent (new config), deployed]
                    let mut seen = [0usize; 4];
                    // The window follows how long this worker's own full applies take (the
                    // machine's load changes it), keeping the first write at the same share.
                    let mut whole = whole;
                    let writing_share = writing as f64 / whole as f64;
                    loop {
                        let done = total.load(std::sync::atomic::Ordering::SeqCst);
                        if done >= 100 && (done >= 300 || budget.elapsed() > Duration::from_secs(3)) {
                            break;
                        }
                        total.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                        fs::write(&config, CONFIG).unwrap();
                        let _ = fs::remove_file(&ledger);
                        let _ = fs::remove_file(backup_of(&config));
                        let mut child = spawn(&config, Some(&ledger), &[]);
                        // Three kills in four land from shortly before the first write to just
                        // after the end; the others anywhere.
                        let r = next(&mut seed);
                        let end = whole + whole / 8;
                        let at = if r.is_multiple_of(4) {
                            r / 4 % end
                        } else {
                            let from = (whole as f64 * writing_share * 0.75) as u64;
                            from + r / 4 % end.saturating_sub(from).max(1)
                        };
                        std::thread::sleep(Duration::from_micros(at));
                        let _ = child.kill();
                        child.wait().unwrap();
                        let context = format!("worker {w}, kill after {at} µs");
                        assert_truthful(&config, &ledger, &context);
                        let (entries, _) = ledger_entries(&ledger);
                        let results = results_of(&entries, &signed().payload_sha256);
                        let replaced = fs::read(&config).unwrap() == new_config();
                        seen[match (results.last().map(String::as_str), replaced) {
                            (None, _) => 0,
                            (Some("intent"), false) => 1,
                            (Some("intent"), true) => 2,
                            _ => 3,
                        }] += 1;
                        let start = Instant::now();
                        if assert_next_apply_completes(&config, &ledger, &context) {
                            whole = (whole * 3 + start.elapsed().as_micros() as u64) / 4;
                        }
                    }
                    seen
                })
            })
            .collect();
        workers.into_iter().map(|w| w.join().unwrap()).collect()
    });
    let sum = counts.iter().fold([0; 4], |mut a, c| {
        (0..4).for_each(|i| a[i] += c[i]);
        a
    });
    eprintln!(
        "{} kills: {} before any write to the ledger, {} with an intent and the old config, {} with an intent and the new config, {} after the deployed entry (one apply: {whole} µs, first write at {writing} µs)",
        sum.iter().sum::<usize>(),
        sum[0],
        sum[1],
        sum[2],
        sum[3]
    );
    assert!(sum.iter().sum::<usize>() >= 100);
    assert!(sum[0] > 0 && sum[3] > 0, "kills landed before and after: {sum:?}");
}

// ---------------------------------------------------------------- item 5: ledger failures

/// Runs `apply` with a file size limit (`RLIMIT_FSIZE`, SIGXFSZ ignored), as a full disk.
fn apply_with_fsize_limit(config: &Path, ledger: &Path, limit: u64) -> Output {
    let mut cmd = dg();
    cmd.args(apply_args(config, Some(ledger), &[]));
    // SAFETY: only async-signal-safe calls between fork and exec.
    unsafe {
        cmd.pre_exec(move || {
            let lim = libc::rlimit {
                rlim_cur: limit,
                rlim_max: limit,
            };
            if libc::setrlimit(libc::RLIMIT_FSIZE, &lim) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            libc::signal(libc::SIGXFSZ, libc::SIG_IGN);
            Ok(())
        });
    }
    cmd.output().unwrap()
}

fn other_entries(n: usize) -> String {
    (0..n)
        .map(|i| {
            format!(
                "{{\"payload_sha256\":\"{:064x}\",\"result\":\"deployed\",\"applied_at\":\"2026-11-01T00:00:00Z\",\"model\":\"older\"}}\n",
                i
            )
        })
        .collect()
}

#[test]
fn deployed_but_the_ledger_failed_says_the_model_is_deployed_and_the_next_apply_records_it() {
    let (dir, config) = fresh();
    let ledger = dir.path().join("ledger.jsonl");
    let prefix = other_entries(100);
    fs::write(&ledger, &prefix).unwrap();
    // The intent line's length, from a run stopped right after it.
    let out = apply(&config, Some(&ledger), &["--fail-at", "intent-logged"]);
    assert_eq!(out.status.signal(), Some(libc::SIGABRT));
    let intent_len = fs::metadata(&ledger).unwrap().len() - prefix.len() as u64;
    fs::write(&ledger, &prefix).unwrap();
    // The intent comes before the backup: none was made.
    assert!(!backup_of(&config).exists());
    // The disk fills up after the intent: the deployed entry is cut at 20 bytes.
    let out = apply_with_fsize_limit(&config, &ledger, prefix.len() as u64 + intent_len + 20);
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(4), "deployed, unrecorded: {err}");
    assert!(err.contains("IS deployed") && err.contains(&s(&ledger)), "{err}");
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["result"], "deployed_unrecorded");
    assert_eq!(fs::read(&config).unwrap(), new_config());
    let (entries, torn) = ledger_entries(&ledger);
    assert!(!torn, "the cut line was removed again");
    assert_eq!(results_of(&entries, &signed().payload_sha256), ["intent"]);
    // The retry does not deploy again: it records the deploy and refuses.
    let next = apply(&config, Some(&ledger), &[]);
    assert_eq!(next.status.code(), Some(2), "{}", stderr(&next));
    assert!(stderr(&next).contains("DID replace"), "{}", stderr(&next));
    assert_deployed_once(&config, &ledger);
}

struct Immutable(PathBuf);
impl Drop for Immutable {
    fn drop(&mut self) {
        let _ = Command::new("chattr").arg("-i").arg(&self.0).status();
    }
}

#[test]
fn a_missing_or_immutable_ledger_deploys_nothing_and_names_the_ledger() {
    let (dir, config) = fresh();
    let missing = dir.path().join("no-such-dir/ledger.jsonl");
    let out = apply(&config, Some(&missing), &[]);
    assert_eq!(out.status.code(), Some(1));
    assert!(stderr(&out).contains(&s(&missing)), "{}", stderr(&out));
    assert_eq!(fs::read(&config).unwrap(), CONFIG.as_bytes(), "nothing deployed");
    assert!(!backup_of(&config).exists());

    let ledger = dir.path().join("ledger.jsonl");
    fs::write(&ledger, other_entries(1)).unwrap();
    let ok = Command::new("chattr").arg("+i").arg(&ledger).status();
    if !matches!(ok, Ok(s) if s.success()) {
        eprintln!("chattr +i is not available here: the immutable case is not run");
        return;
    }
    let _guard = Immutable(ledger.clone());
    let out = apply(&config, Some(&ledger), &[]);
    assert_eq!(out.status.code(), Some(1));
    assert!(stderr(&out).contains(&s(&ledger)), "{}", stderr(&out));
    assert_eq!(fs::read(&config).unwrap(), CONFIG.as_bytes(), "nothing deployed");
}

// ---------------------------------------------------------------- item 6: ledger lines

#[test]
fn a_torn_last_ledger_line_is_cut_off_and_reported_not_fatal() {
    let (dir, config) = fresh();
    let ledger = dir.path().join("ledger.jsonl");
    let torn = "{\"payload_sha256\":\"ab12\",\"res";
    fs::write(&ledger, format!("{}{torn}", other_entries(1))).unwrap();
    // verify reads it (read-only: the torn line is ignored with a warning).
    let sg = signed();
    let out = run(&[
        "verify".into(),
        s(&sg.envelope),
        "--trusted-key".into(),
        s(&sg.public),
        "--model-path".into(),
        s(&sg.model),
        "--target".into(),
        TARGET.into(),
        "--ledger".into(),
        s(&ledger),
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let out = apply(&config, Some(&ledger), &[]);
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(0), "{err}");
    assert!(
        err.contains(&format!("{} line 2", s(&ledger))) && err.contains("cut short"),
        "{err}"
    );
    let (entries, _) = ledger_entries(&ledger);
    assert_eq!(entries.len(), 3, "the old entry, the intent, the deploy");
    assert_deployed_once(&config, &ledger);
}

#[test]
fn a_last_ledger_line_without_newline_gets_one_and_no_entry_is_glued_to_it() {
    let (dir, config) = fresh();
    let ledger = dir.path().join("ledger.jsonl");
    let mut text = other_entries(2);
    text.pop();
    fs::write(&ledger, &text).unwrap();
    let out = apply(&config, Some(&ledger), &[]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let (entries, _) = ledger_entries(&ledger);
    assert_eq!(entries.len(), 4);
    assert_eq!(entries[1]["model"], "older");
    assert_deployed_once(&config, &ledger);
}

#[test]
fn each_ledger_entry_is_one_write_of_a_whole_line() {
    // strace counts the write calls on the ledger's descriptor (skipped where strace is absent).
    if Command::new("strace").arg("-V").output().is_err() {
        eprintln!("strace is not installed: the syscall count is not checked");
        return;
    }
    let (dir, config) = fresh();
    let ledger = dir.path().join("ledger.jsonl");
    let trace = dir.path().join("trace");
    let out = Command::new("strace")
        .args(["-f", "-e", "trace=openat,write", "-o"])
        .arg(&trace)
        .arg(crate::common::cli_path())
        .args(apply_args(&config, Some(&ledger), &[]))
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let trace = fs::read_to_string(&trace).unwrap();
    let lines: Vec<&str> = trace.lines().collect();
    let open = lines
        .iter()
        .position(|l| l.contains(&format!("\"{}\"", s(&ledger))) && l.contains("O_APPEND"))
        .unwrap_or_else(|| panic!("no O_APPEND open of the ledger: {trace}"));
    let fd = lines[open].rsplit("= ").next().unwrap().trim().to_owned();
    let writes = lines[open..]
        .iter()
        .filter(|l| l.contains(&format!("write({fd}, ")))
        .count();
    assert_eq!(writes, 2, "one write for the intent, one for the deployed entry");
}

// ---------------------------------------------------------------- item 7: files

fn free_pages_tmpfs(dir: &Path) -> Option<TmpfsMount> {
    let ok = Command::new("mount")
        .args(["-t", "tmpfs", "-o", "size=256k", "tmpfs"])
        .arg(dir)
        .stderr(Stdio::null())
        .status();
    matches!(ok, Ok(s) if s.success()).then(|| TmpfsMount(dir.to_path_buf()))
}

struct TmpfsMount(PathBuf);
impl Drop for TmpfsMount {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg(&self.0).status();
    }
}

/// Fills the file system at `dir` up, then frees `pages` pages.
fn fill(dir: &Path, pages: u64) -> PathBuf {
    use std::io::Write;
    let filler = dir.join("filler");
    let mut f = fs::File::create(&filler).unwrap();
    let block = [0u8; 4096];
    while f.write_all(&block).is_ok() {}
    let _ = f.sync_all();
    let len = fs::metadata(&filler).unwrap().len() / 4096 * 4096;
    f.set_len(len.saturating_sub(pages * 4096)).unwrap();
    filler
}

#[test]
fn a_full_disk_keeps_the_old_config_leaves_no_temporary_file_and_names_the_file() {
    let outer = tempdir();
    let mnt = outer.path().join("mnt");
    fs::create_dir(&mnt).unwrap();
    let ledger = outer.path().join("ledger.jsonl");
    let Some(_mount) = free_pages_tmpfs(&mnt) else {
        // No tmpfs: a file size limit below the config's size, as a full disk.
        let config = mnt.join("config.yaml");
        fs::write(&config, CONFIG).unwrap();
        let out = apply_with_fsize_limit(&config, &ledger, 16);
        assert_eq!(out.status.code(), Some(1));
        assert!(stderr(&out).contains(&s(&mnt)), "{}", stderr(&out));
        assert_eq!(fs::read(&config).unwrap(), CONFIG.as_bytes());
        assert_eq!(temps_in(&mnt), Vec::<String>::new());
        return;
    };
    let config = mnt.join("config.yaml");
    let mut failed_at_backup = false;
    let mut failed_at_config = false;
    // The config's record (in the lock file) takes the first free page the first time; after
    // that its page is there and the next 0- and 1-page runs fail at the backup and the config.
    for pages in [0, 1, 0, 1, 2] {
        fs::write(&config, CONFIG).unwrap();
        let _ = fs::remove_file(backup_of(&config));
        let _ = fs::remove_file(&ledger);
        let filler = fill(&mnt, pages);
        let out = apply(&config, Some(&ledger), &[]);
        let err = stderr(&out);
        let (entries, _) = ledger_entries(&ledger);
        let results = results_of(&entries, &signed().payload_sha256);
        match out.status.code() {
            Some(0) => assert_deployed_once(&config, &ledger),
            Some(1) => {
                assert_eq!(
                    fs::read(&config).unwrap(),
                    CONFIG.as_bytes(),
                    "{pages}: old config intact"
                );
                assert!(err.contains("NOT deployed"), "{pages}: {err}");
                assert!(err.contains(&s(&mnt)), "{pages}: the error names the file: {err}");
                // The intent comes first (the ledger is on another disk), so both failures
                // are recorded; the error names the temporary file that could not be written.
                assert_eq!(results, ["intent", "not_deployed"]);
                if err.contains(".config.yaml.backup.deploy-gate-tmp-") {
                    failed_at_backup = true;
                } else if err.contains(".config.yaml.deploy-gate-tmp-") {
                    failed_at_config = true;
                } else {
                    // The config's record, appended after the intent, is on the full disk too.
                    assert!(err.contains(".config.yaml.deploy-gate.lock"), "{pages}: {err}");
                }
            }
            c => panic!("{pages}: exit {c:?}: {err}"),
        }
        assert_eq!(temps_in(&mnt), Vec::<String>::new(), "{pages}: no temporary file left");
        if let Ok(b) = fs::read(backup_of(&config)) {
            assert_eq!(b, CONFIG.as_bytes());
        }
        fs::remove_file(filler).unwrap();
        // With room again, the next apply deploys.
        if out.status.code() == Some(1) {
            let out = apply(&config, Some(&ledger), &[]);
            assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
            assert_deployed_once(&config, &ledger);
        }
    }
    assert!(
        failed_at_backup && failed_at_config,
        "the disk filled up at both writes"
    );
}

#[test]
fn symlinks_planted_at_predictable_temporary_names_are_never_written_through() {
    let (dir, config) = fresh();
    let ledger = dir.path().join("ledger.jsonl");
    let victim = dir.path().join("victim");
    fs::write(&victim, "VICTIM").unwrap();
    // The names earlier versions used (`.NAME.deploy-gate-PID`), for the next few thousand PIDs.
    let probe = Command::new("true").spawn().unwrap();
    let pid = probe.id();
    let mut probe = probe;
    probe.wait().unwrap();
    for p in pid..pid + 3000 {
        for name in [
            "config.yaml",
            "config.yaml.backup",
            &*backup_of(&config).file_name().unwrap().to_string_lossy(),
        ] {
            let _ = std::os::unix::fs::symlink(&victim, dir.path().join(format!(".{name}.deploy-gate-{p}")));
        }
    }
    // And at the backup's own name.
    std::os::unix::fs::symlink(&victim, backup_of(&config)).unwrap();
    let out = apply(&config, Some(&ledger), &[]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(
        fs::read_to_string(&victim).unwrap(),
        "VICTIM",
        "nothing written through a link"
    );
    let backup = fs::symlink_metadata(backup_of(&config)).unwrap();
    assert!(
        backup.file_type().is_file(),
        "the planted link at the backup's name is replaced, not followed"
    );
    assert_eq!(fs::read(backup_of(&config)).unwrap(), CONFIG.as_bytes());
    assert_eq!(fs::read(&config).unwrap(), new_config());
}

#[test]
fn a_0600_configs_backup_and_replacement_keep_its_mode_and_owner() {
    for mode in [0o600, 0o640] {
        let (dir, config) = fresh();
        let ledger = dir.path().join("ledger.jsonl");
        fs::set_permissions(&config, fs::Permissions::from_mode(mode)).unwrap();
        let root = unsafe { libc::geteuid() } == 0;
        if root {
            std::os::unix::fs::chown(&config, Some(4321), Some(4322)).unwrap();
        }
        let want = fs::metadata(&config).unwrap();
        let out = apply(&config, Some(&ledger), &[]);
        assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
        for file in [backup_of(&config), config.clone()] {
            let m = fs::metadata(&file).unwrap();
            assert_eq!(
                m.mode() & 0o777,
                mode,
                "{}: mode {:o}",
                file.display(),
                m.mode() & 0o777
            );
            assert_eq!(
                (m.uid(), m.gid()),
                (want.uid(), want.gid()),
                "{}: owner",
                file.display()
            );
        }
    }
}

// ---------------------------------------------------------------- item 8: symlinked configs

#[test]
fn a_symlinked_config_is_updated_where_it_points_and_the_links_stay() {
    // A Kubernetes ConfigMap mount: config.yaml -> ..data/config.yaml, ..data -> ..<timestamp>.
    let dir = tempdir();
    let stamp = dir.path().join("..2026_12_01_08_00_00.000000001");
    fs::create_dir(&stamp).unwrap();
    fs::write(stamp.join("config.yaml"), CONFIG).unwrap();
    std::os::unix::fs::symlink("..2026_12_01_08_00_00.000000001", dir.path().join("..data")).unwrap();
    let config = dir.path().join("config.yaml");
    std::os::unix::fs::symlink("..data/config.yaml", &config).unwrap();
    let ledger = dir.path().join("ledger.jsonl");
    let out = apply(&config, Some(&ledger), &[]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(
        fs::read_link(&config).unwrap(),
        Path::new("..data/config.yaml"),
        "the link stays"
    );
    assert_eq!(
        fs::read_link(dir.path().join("..data")).unwrap(),
        Path::new("..2026_12_01_08_00_00.000000001")
    );
    assert_eq!(
        fs::read(stamp.join("config.yaml")).unwrap(),
        new_config(),
        "the file it points to is updated"
    );
    let backup = backup_of(&config);
    assert!(
        fs::symlink_metadata(&backup).unwrap().is_file(),
        "the backup is beside the path as given"
    );
    assert_eq!(fs::read(&backup).unwrap(), CONFIG.as_bytes());
    assert_eq!(temps_in(dir.path()), Vec::<String>::new());
    assert_eq!(temps_in(&stamp), Vec::<String>::new());
    let out = run(&["rollback".into(), "--config".into(), s(&config)]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(fs::read_link(&config).unwrap(), Path::new("..data/config.yaml"));
    assert_eq!(fs::read(stamp.join("config.yaml")).unwrap(), CONFIG.as_bytes());

    // An /etc/alternatives chain of absolute links.
    let etc = dir.path().join("etc");
    let alt = dir.path().join("alternatives");
    let opt = dir.path().join("opt/v2");
    for d in [&etc, &alt, &opt] {
        fs::create_dir_all(d).unwrap();
    }
    fs::write(opt.join("serving.yaml"), CONFIG).unwrap();
    std::os::unix::fs::symlink(opt.join("serving.yaml"), alt.join("serving")).unwrap();
    let config = etc.join("serving.yaml");
    std::os::unix::fs::symlink(alt.join("serving"), &config).unwrap();
    let out = apply(&config, None, &[]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(fs::read_link(&config).unwrap(), alt.join("serving"));
    assert_eq!(fs::read_link(alt.join("serving")).unwrap(), opt.join("serving.yaml"));
    assert_eq!(fs::read(opt.join("serving.yaml")).unwrap(), new_config());
    assert_eq!(fs::read(backup_of(&config)).unwrap(), CONFIG.as_bytes());
    assert!(
        default_ledger(&opt.join("serving.yaml")).exists(),
        "the default ledger is beside the file itself"
    );
}

// ---------------------------------------------------------------- CLI wiring

#[test]
fn rollback_restores_the_upstream_named_backup_or_else_the_legacy_one_and_says_which() {
    let dir = tempdir();
    let config = dir.path().join("serving.yml");
    fs::write(&config, CONFIG).unwrap();
    let out = apply(&config, None, &[]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let upstream = dir.path().join(backup_file_name("serving.yml"));
    assert_eq!(
        fs::read(&upstream).unwrap(),
        CONFIG.as_bytes(),
        "upstream's backup name"
    );
    let out = run(&["rollback".into(), "--config".into(), s(&config)]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(stderr(&out).contains(&s(&upstream)), "{}", stderr(&out));
    assert_eq!(fs::read(&config).unwrap(), CONFIG.as_bytes());

    fs::remove_file(&upstream).unwrap();
    let legacy = dir.path().join(legacy_backup_file_name("serving.yml"));
    fs::write(&legacy, "legacy: true\n").unwrap();
    let out = run(&["rollback".into(), "--config".into(), s(&config)]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(stderr(&out).contains(&s(&legacy)), "says which: {}", stderr(&out));
    assert_eq!(fs::read_to_string(&config).unwrap(), "legacy: true\n");

    fs::remove_file(&legacy).unwrap();
    let out = run(&["rollback".into(), "--config".into(), s(&config)]);
    assert_eq!(out.status.code(), Some(1));
    assert!(stderr(&out).contains(&s(&upstream)), "{}", stderr(&out));
}

#[test]
fn stage_models_and_the_normalised_model_path_reach_the_config_and_the_deploy_command() {
    let (dir, config) = fresh();
    let stages = [("plan".to_owned(), "/models/planner".to_owned())];
    let model = s(&signed().model);
    let want = deploy_config(
        CONFIG.as_bytes(),
        &Change {
            model_path: &model,
            backend: "vllm",
            stage_models: &stages,
        },
    );
    let out = apply(
        &config,
        None,
        &["--backend", "vllm", "--stage-model", "plan=/models/planner"],
    );
    match want {
        Ok(bytes) => {
            assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
            assert_eq!(fs::read(&config).unwrap(), bytes, "the stage map reaches the edit");
        }
        Err(e) => {
            assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
            assert!(stderr(&out).contains(&e.to_string()), "{}", stderr(&out));
            assert_eq!(fs::read(&config).unwrap(), CONFIG.as_bytes());
        }
    }
    let out = apply(&config, None, &["--stage-model", "no-equals-sign"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(stderr(&out).contains("STAGE=PATH"), "{}", stderr(&out));

    // A deploy command gets the normalised path.
    let spelled = format!("{}/./", model);
    let seen = dir.path().join("seen");
    let mut args = apply_args(&dir.path().join("other.yaml"), None, &[]);
    let i = args.iter().position(|a| a == "--model-path").unwrap();
    args[i + 1] = spelled.clone();
    args.extend([
        "--deploy-cmd".into(),
        "/bin/sh".into(),
        "-c".into(),
        "printf '%s' \"$DEPLOY_GATE_MODEL_PATH\" > \"$0\"".into(),
        s(&seen),
        ";".into(),
    ]);
    let out = run(&args);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(fs::read_to_string(&seen).unwrap(), normalize_model_path(&spelled));
}
