//! Attacks on `apply`, `verify` and `rollback` from outside, with real processes and files. Each
//! test asserts the SAFE behaviour, so it fails while the defect it names exists.

use crate::common::*;
use std::ffi::{OsStr, OsString};
use std::fs;
use std::os::unix::ffi::{OsStrExt, OsStringExt};
use std::os::unix::fs::PermissionsExt;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

const TARGET: &str = "serving-config";

/// A report, a key pair, and a way to sign a decision for any model directory.
struct Keys {
    dir: tempfile::TempDir,
    report: PathBuf,
    key: PathBuf,
    public: PathBuf,
}

fn keys() -> &'static Keys {
    static KEYS: OnceLock<Keys> = OnceLock::new();
    KEYS.get_or_init(|| {
        let dir = tempdir();
        let Reviewer { report, key, public } = reviewer(dir.path());
        Keys {
            report,
            key,
            public,
            dir,
        }
    })
}

/// Makes a model directory with `content` and signs an approved decision for it.
fn model_and_envelope(at: &Path, content: &str) -> PathBuf {
    fs::create_dir_all(at).unwrap();
    fs::write(at.join("weights.bin"), content).unwrap();
    signed_for(at)
}

/// Signs an approved decision for the model at `model` (its digest computed); returns the envelope.
fn signed_for(model: &Path) -> PathBuf {
    let k = keys();
    let digest = out(dg().arg("digest").arg(model));
    assert!(digest.status.success(), "{}", text(&digest));
    let digest = String::from_utf8(digest.stdout).unwrap().trim().to_owned();
    static N: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    let n = N.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
    let envelope = k.dir.path().join(format!("decision-{n}.dsse.json"));
    let o = out(dg()
        .arg("sign")
        .arg(&k.report)
        .arg("--key")
        .arg(&k.key)
        .args([
            "--model",
            "agent",
            "--model-digest",
            &digest,
            "--target",
            TARGET,
            "--out",
        ])
        .arg(&envelope));
    assert!(o.status.success(), "{}", text(&o));
    envelope
}

fn apply_cmd(envelope: &Path, model: &Path, config: &Path) -> Command {
    let mut c = dg();
    c.arg("apply")
        .arg(envelope)
        .arg("--trusted-key")
        .arg(&keys().public)
        .arg("--model-path")
        .arg(model)
        .arg("--config")
        .arg(config)
        .args(["--target", TARGET]);
    c
}

/// Runs the command and kills it if it has not ended within `limit`; `None` if it had to be killed.
fn run_bounded(cmd: &mut Command, limit: Duration) -> Option<Output> {
    let mut child = cmd
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let start = Instant::now();
    loop {
        if child.try_wait().unwrap().is_some() {
            return Some(child.wait_with_output().unwrap());
        }
        if start.elapsed() > limit {
            let _ = child.kill();
            let _ = child.wait();
            return None;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn digest_of(model: &Path) -> String {
    let o = out(dg().arg("digest").arg(model));
    assert!(o.status.success(), "{}", text(&o));
    String::from_utf8(o.stdout).unwrap().trim().to_owned()
}

// ---------------------------------------------------------------- deploying what was not signed

/// The model path is hashed as its bytes but written into the config through
/// `to_string_lossy`: a non-UTF-8 byte becomes U+FFFD, so the config names ANOTHER directory
/// (which anyone who can write beside the model can create, with any weights in it).
#[test]
fn a_non_utf8_model_path_never_deploys_a_different_directory() {
    let dir = tempdir();
    let good = dir.path().join(OsStr::from_bytes(b"agent-\xff"));
    let envelope = model_and_envelope(&good, "the signed weights");
    let evil = dir.path().join("agent-\u{FFFD}");
    fs::create_dir_all(&evil).unwrap();
    fs::write(evil.join("weights.bin"), "EVIL weights").unwrap();
    let config = dir.path().join("config.yaml");
    fs::write(&config, "default_model: /models/old\n").unwrap();
    let o = out(&mut apply_cmd(&envelope, &good, &config));
    if o.status.success() {
        // Whatever it wrote must name the directory that was verified.
        let after = fs::read_to_string(&config).unwrap();
        assert!(
            !after.contains('\u{FFFD}'),
            "deployed, but the config names a different directory than the one verified:\n{after}\n{}",
            text(&o)
        );
    }
}

/// The model's digest is computed before the config lock is taken; while another apply holds
/// the lock, the directory can be replaced, and the config then points at unverified content.
#[test]
fn a_model_replaced_while_apply_waits_for_the_lock_is_not_deployed() {
    let dir = tempdir();
    let model = dir.path().join("model");
    let envelope = model_and_envelope(&model, "the signed weights");
    let signed_digest = digest_of(&model);
    let config = dir.path().join("config.yaml");
    fs::write(&config, "default_model: /models/old\n").unwrap();
    // Hold the config's lock as another apply would.
    let lock_path = dir.path().join(".config.yaml.deploy-gate.lock");
    let lock = fs::File::create(&lock_path).unwrap();
    // SAFETY: flock on a descriptor we own.
    assert_eq!(
        unsafe { libc::flock(std::os::unix::io::AsRawFd::as_raw_fd(&lock), libc::LOCK_EX) },
        0
    );
    let child = apply_cmd(&envelope, &model, &config)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_millis(500));
    fs::remove_dir_all(&model).unwrap();
    fs::create_dir_all(&model).unwrap();
    fs::write(model.join("weights.bin"), "EVIL weights").unwrap();
    drop(lock);
    let o = child.wait_with_output().unwrap();
    if o.status.success() {
        assert_eq!(
            digest_of(&model),
            signed_digest,
            "apply reported deployed, but the config points at a model that is not the one signed\n{}",
            text(&o)
        );
    }
}

// ---------------------------------------------------------------- losing the old config

/// `serving.yml` and `serving.yaml` have one backup name (`serving.yaml.backup`) and different
/// locks: deploying both loses `serving.yml`'s old config, and its rollback restores the other
/// file's content. (The safe behaviour chosen: while both exist, apply and rollback refuse
/// either, naming both; with one of them gone, the other deploys and rolls back.)
#[test]
fn two_configs_sharing_a_backup_name_do_not_lose_each_others_old_config() {
    let dir = tempdir();
    let model = dir.path().join("model");
    let envelope = model_and_envelope(&model, "w");
    let yml = dir.path().join("serving.yml");
    let yaml = dir.path().join("serving.yaml");
    fs::write(&yml, "default_model: yml-original\n").unwrap();
    fs::write(&yaml, "default_model: yaml-original\n").unwrap();
    for c in [&yml, &yaml] {
        let o = out(&mut apply_cmd(&envelope, &model, c));
        assert_eq!(o.status.code(), Some(1), "{}", text(&o));
        let t = text(&o);
        assert!(
            t.contains(&s(&yml)) && t.contains(&s(&yaml)) && t.contains("NOT deployed"),
            "the refusal names both configs: {t}"
        );
        let o = out(dg().arg("rollback").arg("--config").arg(c));
        assert_eq!(o.status.code(), Some(1), "{}", text(&o));
    }
    assert_eq!(fs::read_to_string(&yml).unwrap(), "default_model: yml-original\n");
    assert_eq!(fs::read_to_string(&yaml).unwrap(), "default_model: yaml-original\n");
    assert!(!dir.path().join("serving.yaml.backup").exists());
    fs::remove_file(&yaml).unwrap();
    let o = out(&mut apply_cmd(&envelope, &model, &yml));
    assert!(o.status.success(), "{}", text(&o));
    let o = out(dg().arg("rollback").arg("--config").arg(&yml));
    assert!(o.status.success(), "{}", text(&o));
    assert_eq!(
        fs::read_to_string(&yml).unwrap(),
        "default_model: yml-original\n",
        "rollback of serving.yml restored another config's content"
    );
}

/// Two configs whose names differ only in non-UTF-8 bytes get one lock, one backup and one
/// default ledger (names are made with `to_string_lossy`). (The safe behaviour chosen: a
/// config path that is not UTF-8 is refused, by name, and nothing is written beside it.)
#[test]
fn configs_whose_names_differ_in_non_utf8_bytes_keep_their_own_backup_and_ledger() {
    let dir = tempdir();
    let model = dir.path().join("model");
    let envelope = model_and_envelope(&model, "w");
    let a = dir.path().join(OsStr::from_bytes(b"c\xff.yaml"));
    let b = dir.path().join(OsStr::from_bytes(b"c\xfe.yaml"));
    fs::write(&a, "default_model: a-original\n").unwrap();
    fs::write(&b, "default_model: b-original\n").unwrap();
    for c in [&a, &b] {
        let o = out(&mut apply_cmd(&envelope, &model, c));
        assert_eq!(o.status.code(), Some(1), "{}", text(&o));
        assert!(text(&o).contains("not UTF-8"), "{}", text(&o));
        let o = out(dg().arg("rollback").arg("--config").arg(c));
        assert_eq!(o.status.code(), Some(1), "{}", text(&o));
    }
    assert_eq!(fs::read_to_string(&a).unwrap(), "default_model: a-original\n");
    assert_eq!(fs::read_to_string(&b).unwrap(), "default_model: b-original\n");
    let names: Vec<_> = fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(names.len(), 3, "nothing written beside them: {names:?}");
}

/// The backup is renamed into place before the intent entry is written: when that entry cannot
/// be written (full disk), nothing is deployed, but the backup of the previous deploy (the
/// only copy of the config before it) has been replaced.
#[test]
fn an_apply_that_deploys_nothing_keeps_the_previous_backup() {
    let dir = tempdir();
    let m1 = dir.path().join("m1");
    let e1 = model_and_envelope(&m1, "first");
    let m2 = dir.path().join("m2");
    let e2 = model_and_envelope(&m2, "second");
    let config = dir.path().join("config.yaml");
    let original = "default_model: the-original\n";
    fs::write(&config, original).unwrap();
    let ledger = dir.path().join("ledger.jsonl");
    let o = out(apply_cmd(&e1, &m1, &config).arg("--ledger").arg(&ledger));
    assert!(o.status.success(), "{}", text(&o));
    let backup = dir.path().join("config.yaml.backup");
    assert_eq!(fs::read_to_string(&backup).unwrap(), original);
    // A file size limit a little past the ledger: the backup (small) fits, the intent does not.
    let limit = fs::metadata(&ledger).unwrap().len() + 64;
    let mut cmd = apply_cmd(&e2, &m2, &config);
    cmd.arg("--ledger").arg(&ledger);
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
    let o = out(&mut cmd);
    assert_eq!(o.status.code(), Some(1), "{}", text(&o));
    assert!(text(&o).contains("NOT deployed"), "{}", text(&o));
    assert_eq!(
        fs::read_to_string(&backup).unwrap(),
        original,
        "an apply that deployed nothing replaced the backup: the config before the last deploy is lost"
    );
}

/// The same decision applied to one config with a second ledger and another `--backend` (or
/// another spelling of the model path) deploys again and replaces the backup with the config
/// the first apply wrote.
#[test]
fn the_same_decision_through_a_second_ledger_never_replaces_the_backup() {
    let dir = tempdir();
    let model = dir.path().join("model");
    let envelope = model_and_envelope(&model, "w");
    let config = dir.path().join("config.yaml");
    let original = "default_model: the-original\nbackend: api\n";
    fs::write(&config, original).unwrap();
    let o = out(apply_cmd(&envelope, &model, &config)
        .arg("--ledger")
        .arg(dir.path().join("l1")));
    assert!(o.status.success(), "{}", text(&o));
    let _ = out(apply_cmd(&envelope, &model, &config)
        .arg("--ledger")
        .arg(dir.path().join("l2"))
        .args(["--backend", "vllm"]));
    assert_eq!(
        fs::read_to_string(dir.path().join("config.yaml.backup")).unwrap(),
        original,
        "a second apply of one decision to one config replaced its backup"
    );
}

// ---------------------------------------------------------------- planted symlinks, leaks

/// The default ledger's name beside the config is opened without `O_NOFOLLOW`: a symlink
/// planted there is followed, and a one-line target without a newline is truncated as a "torn
/// last line", then appended to.
#[test]
fn a_symlink_planted_at_the_default_ledger_name_is_not_written_through() {
    let dir = tempdir();
    let model = dir.path().join("model");
    let envelope = model_and_envelope(&model, "w");
    let confdir = dir.path().join("conf");
    fs::create_dir_all(&confdir).unwrap();
    let config = confdir.join("config.yaml");
    fs::write(&config, "default_model: old\n").unwrap();
    let victim = dir.path().join("victim");
    fs::write(&victim, "precious, one line, no newline").unwrap();
    std::os::unix::fs::symlink(&victim, confdir.join("config.yaml.deploy-gate-ledger.jsonl")).unwrap();
    let _ = out(&mut apply_cmd(&envelope, &model, &config));
    assert_eq!(
        fs::read_to_string(&victim).unwrap(),
        "precious, one line, no newline",
        "apply wrote through a symlink planted at the default ledger's name"
    );
}

/// `rollback` reads the backup through a planted symlink and copies the target's content into
/// the config with the config's mode: a 0600 file becomes world-readable.
#[test]
fn rollback_never_reads_the_backup_through_a_planted_symlink() {
    let dir = tempdir();
    let config = dir.path().join("config.yaml");
    fs::write(&config, "default_model: old\n").unwrap();
    fs::set_permissions(&config, fs::Permissions::from_mode(0o644)).unwrap();
    let secret = dir.path().join("secret");
    fs::write(&secret, "root:SECRET-HASH:1:0:::\n").unwrap();
    fs::set_permissions(&secret, fs::Permissions::from_mode(0o600)).unwrap();
    std::os::unix::fs::symlink(&secret, dir.path().join("config.yaml.backup")).unwrap();
    let _ = out(dg().arg("rollback").arg("--config").arg(&config));
    assert!(
        !fs::read_to_string(&config).unwrap().contains("SECRET"),
        "rollback copied a 0600 file it reached through a planted symlink into a 0644 config"
    );
}

/// Whether a user other than the owner (and its group) can read `path`: the file readable by
/// others and every directory above it searchable by others.
fn readable_by_others(path: &Path) -> bool {
    let canon = fs::canonicalize(path).unwrap();
    if fs::metadata(&canon).unwrap().permissions().mode() & 0o004 == 0 {
        return false;
    }
    canon
        .ancestors()
        .skip(1)
        .all(|d| fs::metadata(d).unwrap().permissions().mode() & 0o001 != 0)
}

/// A config reached through a symlink, protected by its 0700 directory: the backup is written
/// beside the symlink with the file's mode, where anyone can read it.
#[test]
fn the_backup_of_a_config_others_cannot_read_is_not_readable_by_others() {
    let dir = tempdir();
    fs::set_permissions(dir.path(), fs::Permissions::from_mode(0o755)).unwrap();
    let model = dir.path().join("model");
    let envelope = model_and_envelope(&model, "w");
    let secret = dir.path().join("secret");
    let public = dir.path().join("public");
    fs::create_dir_all(&secret).unwrap();
    fs::create_dir_all(&public).unwrap();
    fs::set_permissions(&secret, fs::Permissions::from_mode(0o700)).unwrap();
    fs::set_permissions(&public, fs::Permissions::from_mode(0o755)).unwrap();
    let real = secret.join("config.yaml");
    fs::write(&real, "default_model: old\napi_key: TOP-SECRET\n").unwrap();
    fs::set_permissions(&real, fs::Permissions::from_mode(0o644)).unwrap();
    let link = public.join("config.yaml");
    std::os::unix::fs::symlink(&real, &link).unwrap();
    if readable_by_others(&real) {
        return; // the temporary directory's parents are not searchable here: nothing to show
    }
    let o = out(&mut apply_cmd(&envelope, &model, &link));
    assert!(o.status.success(), "{}", text(&o));
    let backup = public.join("config.yaml.backup");
    assert!(
        !(backup.exists() && readable_by_others(&backup)),
        "the secret config's backup is readable by every user at {}",
        backup.display()
    );
}

// ---------------------------------------------------------------- hangs

/// A FIFO at the config's path: `apply` opens it for reading before checking what it is and
/// blocks forever, holding the config and ledger locks (every other apply sharing them waits).
#[test]
fn a_fifo_config_is_refused_not_waited_on() {
    let dir = tempdir();
    let model = dir.path().join("model");
    let envelope = model_and_envelope(&model, "w");
    let config = dir.path().join("config.yaml");
    let c = std::ffi::CString::new(config.as_os_str().as_bytes()).unwrap();
    // SAFETY: a valid C string.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o644) }, 0);
    let o = run_bounded(&mut apply_cmd(&envelope, &model, &config), Duration::from_secs(5));
    let o = o.expect("apply hung on a FIFO config (killed after 5 s)");
    assert_eq!(o.status.code(), Some(1), "{}", text(&o));
}

/// A FIFO as the ledger: opened read-write (which never blocks) and then read to its end,
/// which never comes.
#[test]
fn a_fifo_ledger_is_refused_not_waited_on() {
    let dir = tempdir();
    let model = dir.path().join("model");
    let envelope = model_and_envelope(&model, "w");
    let config = dir.path().join("config.yaml");
    fs::write(&config, "default_model: old\n").unwrap();
    let ledger = dir.path().join("ledger.jsonl");
    let c = std::ffi::CString::new(ledger.as_os_str().as_bytes()).unwrap();
    // SAFETY: a valid C string.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o644) }, 0);
    let o = run_bounded(
        apply_cmd(&envelope, &model, &config).arg("--ledger").arg(&ledger),
        Duration::from_secs(5),
    );
    let o = o.expect("apply hung on a FIFO ledger (killed after 5 s)");
    assert_ne!(o.status.code(), Some(0), "{}", text(&o));
    assert_eq!(fs::read_to_string(&config).unwrap(), "default_model: old\n");
}

// ---------------------------------------------------------------- digests

/// The directory digest joins path components with `to_string_lossy`: two directories whose
/// file names differ only in non-UTF-8 bytes have one digest.
#[test]
fn directories_with_different_file_names_have_different_digests() {
    let dir = tempdir();
    let a = dir.path().join("a");
    let b = dir.path().join("b");
    fs::create_dir_all(&a).unwrap();
    fs::create_dir_all(&b).unwrap();
    fs::write(a.join(OsString::from_vec(b"w\xff".to_vec())), "W").unwrap();
    fs::write(b.join(OsString::from_vec(b"w\xfe".to_vec())), "W").unwrap();
    let (da, db) = (out(dg().arg("digest").arg(&a)), out(dg().arg("digest").arg(&b)));
    // Refusing such names is safe too.
    if da.status.success() && db.status.success() {
        assert_ne!(
            String::from_utf8_lossy(&da.stdout),
            String::from_utf8_lossy(&db.stdout),
            "two different directories, one digest"
        );
    }
}

// ---------------------------------------------------------------- rollback and the ledger

/// `rollback` writes nothing to the ledger: the next apply of the decision is refused with
/// "the model IS deployed" while the config holds the old model.
#[test]
fn after_a_rollback_a_replayed_apply_does_not_say_the_model_is_deployed() {
    let dir = tempdir();
    let model = dir.path().join("model");
    let envelope = model_and_envelope(&model, "w");
    let config = dir.path().join("config.yaml");
    fs::write(&config, "default_model: old\n").unwrap();
    let o = out(&mut apply_cmd(&envelope, &model, &config));
    assert!(o.status.success(), "{}", text(&o));
    let o = out(dg().arg("rollback").arg("--config").arg(&config));
    assert!(o.status.success(), "{}", text(&o));
    assert_eq!(fs::read_to_string(&config).unwrap(), "default_model: old\n");
    let o = out(&mut apply_cmd(&envelope, &model, &config));
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(
        !text(&o).contains("the model IS deployed"),
        "the config holds the old model (rolled back), but apply says it is deployed\n{}",
        text(&o)
    );
}

/// An apply killed after it replaced the config (the ledger has only its intent), then a
/// `rollback` by the operator: the next apply finds the config's "before" bytes, records the
/// decision `not_deployed` — it WAS deployed — and deploys it a second time, undoing the
/// rollback.
#[test]
fn a_deploy_interrupted_after_the_rename_and_rolled_back_is_not_deployed_again() {
    let dir = tempdir();
    let model = dir.path().join("model");
    let envelope = model_and_envelope(&model, "w");
    let config = dir.path().join("config.yaml");
    fs::write(&config, "default_model: old\n").unwrap();
    let o = out(apply_cmd(&envelope, &model, &config).args(["--fail-at", "config-renamed"]));
    assert!(!o.status.success(), "{}", text(&o));
    assert_ne!(
        fs::read_to_string(&config).unwrap(),
        "default_model: old\n",
        "the crash point is after the rename"
    );
    let o = out(dg().arg("rollback").arg("--config").arg(&config));
    assert!(o.status.success(), "{}", text(&o));
    let o = out(&mut apply_cmd(&envelope, &model, &config));
    assert!(
        !o.status.success(),
        "a decision that was deployed (and then rolled back) was deployed again\n{}",
        text(&o)
    );
    assert_eq!(fs::read_to_string(&config).unwrap(), "default_model: old\n");
}

// ---------------------------------------------------------------- a config changed during the apply

/// Another program (an operator's editor, a config manager) replaces the config while `apply`
/// runs: the apply read the config, then spends milliseconds on the backup, the intent and
/// their syncs before it renames its edit over the config. An edit made in between is in
/// neither the config nor the backup: lost, while apply reports deployed. (The safe behaviour:
/// check the config is still the file read, just before and after the rename, e.g.
/// `renameat2(RENAME_EXCHANGE)` and a hash of what was swapped out, and keep what changed.)
#[test]
fn an_edit_made_while_apply_runs_is_never_lost() {
    let dir = tempdir();
    let model = dir.path().join("model");
    let envelope = model_and_envelope(&model, "w");
    let config = dir.path().join("config.yaml");
    let reset = || {
        for name in ["config.yaml.backup", "config.yaml.deploy-gate-ledger.jsonl"] {
            let _ = fs::remove_file(dir.path().join(name));
        }
        fs::write(&config, "default_model: old\n").unwrap();
    };
    // How long one apply takes here: the edits are spread over that whole time, so some land
    // between the apply's read of the config and its replacement, however fast the machine.
    reset();
    let t0 = Instant::now();
    let o = out(&mut apply_cmd(&envelope, &model, &config));
    assert!(o.status.success(), "{}", text(&o));
    let whole = t0.elapsed();
    let start = Instant::now();
    let mut trials = 0;
    let mut refused = 0;
    while trials < 60 && start.elapsed() < Duration::from_secs(8) {
        trials += 1;
        reset();
        let delay = whole.mul_f64(f64::from(trials % 24) / 20.0);
        let child = apply_cmd(&envelope, &model, &config)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        std::thread::sleep(delay);
        let temp = dir.path().join(".edit");
        fs::write(&temp, "default_model: old\nedited_by: operator\n").unwrap();
        fs::rename(&temp, &config).unwrap();
        let o = child.wait_with_output().unwrap();
        refused += usize::from(text(&o).contains("changed while apply ran"));
        let in_config = fs::read_to_string(&config).unwrap().contains("edited_by");
        let in_backup = fs::read_to_string(dir.path().join("config.yaml.backup"))
            .map(|b| b.contains("edited_by"))
            .unwrap_or(false);
        assert!(
            in_config || in_backup,
            "trial {trials} ({delay:?}): the operator's edit is in neither the config nor the backup\n{}",
            text(&o)
        );
    }
    eprintln!("{trials} trials ({whole:?} an apply): {refused} found the config changed and deployed nothing");
}

/// A config with a second hard link (a served path): the rename gives the given name a new
/// file, the other name keeps the old model, and apply reports deployed.
#[test]
fn a_hard_linked_config_is_not_reported_deployed_while_its_other_name_keeps_the_old_model() {
    let dir = tempdir();
    let model = dir.path().join("model");
    let envelope = model_and_envelope(&model, "w");
    let served = dir.path().join("served.yaml");
    fs::write(&served, "default_model: old\n").unwrap();
    let config = dir.path().join("config.yaml");
    fs::hard_link(&served, &config).unwrap();
    let o = out(&mut apply_cmd(&envelope, &model, &config));
    if o.status.success() {
        assert_eq!(
            fs::read_to_string(&served).unwrap(),
            fs::read_to_string(&config).unwrap(),
            "apply reported deployed, but the config's other hard link keeps the old model"
        );
    }
}

// ---------------------------------------------------------------- memory

/// The config has no size limit and its edit takes about 420 bytes of memory per byte of a
/// flow sequence: a 4 MB config takes 1.7 GB (`/usr/bin/time -v deploy-gate apply …`). Under a
/// 1 GiB address-space limit the apply aborts (`memory allocation … failed`, SIGABRT) instead
/// of refusing the config by name.
#[test]
fn a_4_mb_config_is_edited_or_refused_within_1_gib() {
    let dir = tempdir();
    let model = dir.path().join("model");
    let envelope = model_and_envelope(&model, "w");
    let config = dir.path().join("config.yaml");
    let mut yaml = String::from("default_model: old\nx: [");
    yaml.push_str(&vec!["1"; 2_000_000].join(","));
    yaml.push_str("]\n");
    fs::write(&config, &yaml).unwrap();
    let mut cmd = apply_cmd(&envelope, &model, &config);
    // SAFETY: only async-signal-safe calls between fork and exec.
    unsafe {
        cmd.pre_exec(|| {
            let lim = libc::rlimit {
                rlim_cur: 1 << 30,
                rlim_max: 1 << 30,
            };
            if libc::setrlimit(libc::RLIMIT_AS, &lim) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
    let o = out(&mut cmd);
    assert!(
        matches!(o.status.code(), Some(0 | 1)),
        "apply ended by a signal on a 4 MB config: {}",
        text(&o).chars().take(600).collect::<String>()
    );
    if o.status.code() == Some(1) {
        assert!(text(&o).contains("config.yaml"), "{}", text(&o));
    }
}

/// A FIFO at the backup's name: `rollback` reads it (`fs::read`) without checking what it is,
/// and blocks forever holding the config's lock.
#[test]
fn rollback_refuses_a_fifo_backup_instead_of_waiting_on_it() {
    let dir = tempdir();
    let config = dir.path().join("config.yaml");
    fs::write(&config, "default_model: old\n").unwrap();
    let backup = dir.path().join("config.yaml.backup");
    let c = std::ffi::CString::new(backup.as_os_str().as_bytes()).unwrap();
    // SAFETY: a valid C string.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o644) }, 0);
    let o = run_bounded(
        dg().arg("rollback").arg("--config").arg(&config),
        Duration::from_secs(5),
    );
    let o = o.expect("rollback hung on a FIFO backup (killed after 5 s)");
    assert_eq!(o.status.code(), Some(1), "{}", text(&o));
    assert_eq!(fs::read_to_string(&config).unwrap(), "default_model: old\n");
}

/// `verify --ledger` read the ledger with `fs::read`: a device that never ends (`/dev/zero`)
/// or a FIFO nobody writes to is read forever (memory without bound, or a hang).
#[test]
fn verify_refuses_a_ledger_that_is_not_a_regular_file() {
    let dir = tempdir();
    let model = dir.path().join("model");
    let envelope = model_and_envelope(&model, "w");
    let fifo = dir.path().join("ledger.fifo");
    let c = std::ffi::CString::new(fifo.as_os_str().as_bytes()).unwrap();
    // SAFETY: a valid C string.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o644) }, 0);
    for ledger in [Path::new("/dev/zero"), fifo.as_path()] {
        let mut cmd = dg();
        cmd.arg("verify")
            .arg(&envelope)
            .arg("--trusted-key")
            .arg(&keys().public)
            .arg("--model-path")
            .arg(&model)
            .args(["--target", TARGET, "--ledger"])
            .arg(ledger);
        let o = run_bounded(&mut cmd, Duration::from_secs(5))
            .unwrap_or_else(|| panic!("verify hung reading the ledger {} (killed after 5 s)", ledger.display()));
        assert_eq!(o.status.code(), Some(1), "{}", text(&o));
        assert!(
            text(&o).contains(&s(ledger)),
            "the error names the ledger: {}",
            text(&o)
        );
    }
}

/// The torn-tail repair cut whatever followed the ledger's last newline: a file given as the
/// ledger by mistake (or planted as a hard link) lost its last line.
#[test]
fn a_ledger_whose_last_line_is_not_the_start_of_an_entry_is_not_cut() {
    let dir = tempdir();
    let model = dir.path().join("model");
    let envelope = model_and_envelope(&model, "w");
    let config = dir.path().join("config.yaml");
    fs::write(&config, "default_model: old\n").unwrap();
    let ledger = dir.path().join("notes.txt");
    fs::write(&ledger, "precious, one line, no newline").unwrap();
    let o = out(apply_cmd(&envelope, &model, &config).arg("--ledger").arg(&ledger));
    assert_eq!(o.status.code(), Some(1), "{}", text(&o));
    assert!(text(&o).contains(&s(&ledger)), "{}", text(&o));
    assert_eq!(fs::read_to_string(&ledger).unwrap(), "precious, one line, no newline");
    assert_eq!(fs::read_to_string(&config).unwrap(), "default_model: old\n");
}

/// A rollback given no `--ledger` while the apply used one: the decision must still not be
/// deployed to that config again, through that ledger or any other (the config's own record
/// gets the rollback).
#[test]
fn a_rollback_without_the_apply_ledger_still_stops_a_redeploy_through_another_ledger() {
    let dir = tempdir();
    let model = dir.path().join("model");
    let envelope = model_and_envelope(&model, "w");
    let config = dir.path().join("config.yaml");
    fs::write(&config, "default_model: old\n").unwrap();
    let o = out(apply_cmd(&envelope, &model, &config)
        .arg("--ledger")
        .arg(dir.path().join("l1")));
    assert!(o.status.success(), "{}", text(&o));
    let o = out(dg().arg("rollback").arg("--config").arg(&config));
    assert!(o.status.success(), "{}", text(&o));
    assert_eq!(fs::read_to_string(&config).unwrap(), "default_model: old\n");
    for ledger in ["l1", "l2"] {
        let o = out(apply_cmd(&envelope, &model, &config)
            .arg("--ledger")
            .arg(dir.path().join(ledger)));
        assert_eq!(o.status.code(), Some(2), "{ledger}: {}", text(&o));
        assert!(text(&o).contains("replayed"), "{}", text(&o));
        assert!(text(&o).contains("rolled back"), "{ledger}: {}", text(&o));
        assert!(!text(&o).contains("IS deployed"), "{ledger}: {}", text(&o));
        assert_eq!(
            fs::read_to_string(&config).unwrap(),
            "default_model: old\n",
            "{ledger}: the rolled-back decision was deployed again"
        );
    }
}
