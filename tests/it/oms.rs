//! OpenSSF Model Signing: bundles made by the reference implementation (`model-signing`, in
//! tests/fixtures/oms, made by its make.sh) verified offline, the spec's test vectors, every
//! tampering refused by its named check, and `sign`/`verify`/`apply` with both signatures
//! (real processes, real files).

use crate::common::*;
use deploy_gate::native::oms::{manifest_of, oms_digest, verify_model, ModelError};
use deploy_gate::oms::{self, Bundle, Check, Material, Method, Roots, Statement, Trust, TrustedKey};
use serde_json::Value;
use std::fs;
use std::path::{Path, PathBuf};

fn fixtures() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/oms")
}

fn fx(rel: &str) -> PathBuf {
    fixtures().join(rel)
}

/// The subject digests the reference implementation signed (digests.txt: `<bundle> <hex>`).
fn signed_digest(bundle: &str) -> String {
    let text = fs::read_to_string(fx("digests.txt")).unwrap();
    text.lines()
        .find_map(|l| l.strip_prefix(bundle).map(|d| d.trim().to_owned()))
        .unwrap_or_else(|| panic!("{bundle} not in digests.txt"))
}

fn key(name: &str) -> TrustedKey {
    TrustedKey::from_pem(&fs::read_to_string(fx(&format!("keys/{name}.pub.pem"))).unwrap()).unwrap()
}

fn trust(keys: &[&str]) -> Trust {
    Trust {
        keys: keys.iter().map(|k| key(k)).collect(),
        roots: Roots::new(),
        keyless: None,
    }
}

fn copy_dir(from: &Path, to: &Path) {
    fs::create_dir_all(to).unwrap();
    for e in fs::read_dir(from).unwrap() {
        let e = e.unwrap();
        let target = to.join(e.file_name());
        if e.file_type().unwrap().is_dir() {
            copy_dir(&e.path(), &target);
        } else {
            fs::copy(e.path(), &target).unwrap();
        }
    }
}

/// A copy of the signed tree with a `.git` directory added (ignored, as model-signing ignores
/// it); `keep_sig`: keep its `model.sig`.
fn tree_copy(dir: &Path, keep_sig: bool) -> PathBuf {
    let t = dir.join("tree");
    copy_dir(&fx("models/tree"), &t);
    fs::create_dir_all(t.join(".git/refs")).unwrap();
    fs::write(t.join(".git/HEAD"), "ref: refs/heads/main\n").unwrap();
    if !keep_sig {
        fs::remove_file(t.join("model.sig")).unwrap();
    }
    t
}

fn verify_at(model: &Path, bundle: &Path, t: &Trust) -> Result<oms::Verified, ModelError> {
    verify_model(model, &fs::read(bundle).unwrap(), bundle, t)
}

fn refused(r: Result<oms::Verified, ModelError>) -> (Check, Option<String>) {
    match r {
        Err(ModelError::Check(e)) => (e.check, e.file),
        Err(other) => panic!("not a named check: {other}"),
        Ok(v) => panic!("verified: {v:?}"),
    }
}

#[test]
fn the_oms_digest_is_the_reference_implementations() {
    for (path, bundle, shard) in [
        ("models/tree", "models/tree/model.sig", None),
        ("models/single/model.safetensors", "sigs/single.sig", None),
        ("models/other", "sigs/other.sig", None),
        ("models/tree", "sigs/tree-shards.sig", Some(65536)),
    ] {
        let mut args = vec!["digest".to_owned(), "--oms".to_owned(), s(&fx(path))];
        if let Some(n) = shard {
            args.extend(["--shard-size".to_owned(), format!("{n}")]);
        }
        let o = run(&args);
        assert!(o.status.success(), "{}", text(&o));
        assert_eq!(
            String::from_utf8_lossy(&o.stdout).trim(),
            format!("sha256:{}", signed_digest(bundle)),
            "{path} {shard:?}"
        );
    }
    // The original digest is unchanged by default.
    let o = run(&["digest".to_owned(), s(&fx("models/other"))]);
    let legacy = deploy_gate::native::files::model_digest(&fx("models/other")).unwrap();
    assert_eq!(String::from_utf8_lossy(&o.stdout).trim(), format!("sha256:{legacy}"));
}

#[test]
fn bundles_by_the_reference_implementation_verify() {
    let dir = tempdir();
    let with_sig = tree_copy(&dir.path().join("a"), true);
    let v = verify_at(&with_sig, &with_sig.join("model.sig"), &trust(&["p256"])).unwrap();
    assert_eq!(v.key_id, key("p256").key_id);
    assert_eq!(v.subject_digest_hex(), signed_digest("models/tree/model.sig"));
    assert_eq!(v.model_name, "tree");
    assert_eq!(v.method, Method::Files);
    assert!(v.resources.iter().any(|r| r.path == "tokenizer/unicodé/vocab é.txt"));
    assert!(v.resources.iter().any(|r| r.path == "weights/empty.bin"));
    assert!(!v.resources.iter().any(|r| r.path.starts_with(".git")));

    let bare = tree_copy(&dir.path().join("b"), false);
    let v = verify_at(&bare, &fx("sigs/tree-p384.sig"), &trust(&["p256", "p384"])).unwrap();
    assert_eq!((v.key_id.as_str(), v.curve), (key("p384").key_id.as_str(), "P-384"));
    let v = verify_at(&bare, &fx("sigs/tree-shards.sig"), &trust(&["p256"])).unwrap();
    assert_eq!(v.method, Method::Shards { shard_size: 65536 });
    assert_eq!(v.subject_digest_hex(), signed_digest("sigs/tree-shards.sig"));

    let mut roots = Roots::new();
    roots
        .add_pem(&fs::read_to_string(fx("keys/root.pem")).unwrap())
        .unwrap();
    let t = Trust {
        keys: vec![],
        roots,
        keyless: None,
    };
    let v = verify_at(&bare, &fx("sigs/tree-cert.sig"), &t).unwrap();
    assert_eq!(
        v.signed_by,
        oms::SignedBy::Certificate {
            subject: "CN=training-pipeline".into(),
            root: "CN=Trainer Root CA".into()
        }
    );
    let v = verify_at(
        &fx("models/single/model.safetensors"),
        &fx("sigs/single.sig"),
        &trust(&["p256"]),
    )
    .unwrap();
    assert_eq!(v.resources.len(), 1);
    assert_eq!(v.resources[0].path, ".");
}

#[test]
fn the_spec_test_vectors() {
    let v = fx("spec/test-vectors/v1.0");
    for name in ["valid/key", "valid/certificate"] {
        let bytes = fs::read(v.join(format!("{name}.bundle.json"))).unwrap();
        let b = Bundle::parse(&bytes).unwrap();
        let st = Statement::parse(&b.payload).unwrap();
        assert_eq!(oms::digest_of(&st.resources), st.subject_digest, "{name}");
        // No key of theirs is trusted here.
        let e = oms::verify_bundle(&bytes, &Trust::default()).unwrap_err();
        assert_eq!(e.check, Check::UntrustedKey, "{name}");
    }
    let sigstore = fs::read(v.join("valid/sigstore.bundle.json")).unwrap();
    assert_eq!(Bundle::parse(&sigstore).unwrap().material, Material::Keyless);
    assert_eq!(
        oms::verify_bundle(&sigstore, &Trust::default()).unwrap_err().check,
        Check::Keyless
    );
    for name in ["empty", "missing-envelope", "missing-verification-material"] {
        let bytes = fs::read(v.join(format!("invalid/{name}.bundle.json"))).unwrap();
        assert_eq!(Bundle::parse(&bytes).unwrap_err().check, Check::BundleShape, "{name}");
    }
    // A keyless bundle without its log entries: refused either way, never accepted.
    let bytes = fs::read(v.join("invalid/missing-tlog-entries.bundle.json")).unwrap();
    assert!(oms::verify_bundle(&bytes, &Trust::default()).is_err());
    let bytes = fs::read(v.join("invalid-payload/wrong-predicate.bundle.json")).unwrap();
    let b = Bundle::parse(&bytes).unwrap();
    assert_eq!(Statement::parse(&b.payload).unwrap_err().check, Check::PredicateType);
}

/// Rewrites a bundle's JSON.
fn edit_bundle(from: &Path, to: &Path, edit: impl FnOnce(&mut Value)) {
    let mut b: Value = serde_json::from_slice(&fs::read(from).unwrap()).unwrap();
    edit(&mut b);
    fs::write(to, serde_json::to_vec_pretty(&b).unwrap()).unwrap();
}

#[test]
fn every_tampering_is_refused_by_its_check() {
    let dir = tempdir();
    let t = trust(&["p256"]);
    let fresh = |name: &str| tree_copy(&dir.path().join(name), true);

    let m = fresh("changed");
    fs::write(m.join("weights/part-1.bin"), b"tampered").unwrap();
    assert_eq!(
        refused(verify_at(&m, &m.join("model.sig"), &t)),
        (Check::FileDigest, Some("weights/part-1.bin".into()))
    );
    let m = fresh("added");
    fs::write(m.join("tokenizer/extra.json"), b"{}").unwrap();
    assert_eq!(
        refused(verify_at(&m, &m.join("model.sig"), &t)),
        (Check::FileExtra, Some("tokenizer/extra.json".into()))
    );
    let m = fresh("removed");
    fs::remove_file(m.join("weights/empty.bin")).unwrap();
    assert_eq!(
        refused(verify_at(&m, &m.join("model.sig"), &t)),
        (Check::FileMissing, Some("weights/empty.bin".into()))
    );
    let m = fresh("renamed");
    fs::rename(m.join("config.json"), m.join("config2.json")).unwrap();
    assert_eq!(
        refused(verify_at(&m, &m.join("model.sig"), &t)),
        (Check::FileMissing, Some("config.json".into()))
    );
    // A symlink planted in the model folder, to a file inside or outside it.
    let m = fresh("symlink");
    std::os::unix::fs::symlink("/etc/passwd", m.join("weights/passwd")).unwrap();
    assert_eq!(
        refused(verify_at(&m, &m.join("model.sig"), &t)),
        (Check::Symlink, Some("weights/passwd".into()))
    );
    let m = fresh("symlink-dir");
    fs::rename(m.join("tokenizer"), dir.path().join("elsewhere")).unwrap();
    std::os::unix::fs::symlink(dir.path().join("elsewhere"), m.join("tokenizer")).unwrap();
    assert_eq!(refused(verify_at(&m, &m.join("model.sig"), &t)).0, Check::Symlink);

    let m = fresh("keys");
    // Signed by another key: its hint names a key nobody trusts.
    assert_eq!(
        refused(verify_at(&m, &fx("sigs/tree-other-key.sig"), &t)).0,
        Check::UntrustedKey
    );
    // The same, with the hint forged to name the trusted key: the signature does not verify.
    let forged = dir.path().join("forged.sig");
    edit_bundle(&fx("sigs/tree-other-key.sig"), &forged, |b| {
        b["verificationMaterial"]["publicKey"]["hint"] = key("p256").hint.into();
    });
    assert_eq!(refused(verify_at(&m, &forged, &t)).0, Check::Signature);
    // A trusted key that did not sign it.
    assert_eq!(
        refused(verify_at(&m, &m.join("model.sig"), &trust(&["p384"]))).0,
        Check::UntrustedKey
    );
    // An edited predicate (a digest changed in the payload, the signature kept).
    let edited = dir.path().join("edited.sig");
    edit_bundle(&m.join("model.sig"), &edited, |b| {
        let payload = deploy_gate::attest::dsse::decode(b["dsseEnvelope"]["payload"].as_str().unwrap()).unwrap();
        let mut st: Value = serde_json::from_slice(&payload).unwrap();
        st["predicate"]["resources"][0]["digest"] = "00".repeat(32).into();
        b["dsseEnvelope"]["payload"] = deploy_gate::attest::dsse::encode(&serde_json::to_vec(&st).unwrap()).into();
    });
    assert_eq!(refused(verify_at(&m, &edited, &t)).0, Check::Signature);
    // A second signature.
    let twice = dir.path().join("twice.sig");
    edit_bundle(&m.join("model.sig"), &twice, |b| {
        let sig = b["dsseEnvelope"]["signatures"][0].clone();
        b["dsseEnvelope"]["signatures"].as_array_mut().unwrap().push(sig);
    });
    assert_eq!(refused(verify_at(&m, &twice, &t)).0, Check::SignatureCount);
    // An unknown field: the schema allows none.
    let odd = dir.path().join("odd.sig");
    edit_bundle(&m.join("model.sig"), &odd, |b| b["extra"] = 1.into());
    assert_eq!(refused(verify_at(&m, &odd, &t)).0, Check::BundleShape);
    // The bundle of another model.
    let m2 = fresh("other-model");
    fs::remove_file(m2.join("model.sig")).unwrap();
    let (check, _) = refused(verify_at(&m2, &fx("sigs/other.sig"), &t));
    assert_eq!(check, Check::FileMissing);
    // A certificate chain to a root that is not trusted.
    let mut roots = Roots::new();
    roots
        .add_pem(&fs::read_to_string(fx("keys/other-root.pem")).unwrap())
        .unwrap();
    let t2 = Trust {
        keys: vec![],
        roots,
        keyless: None,
    };
    assert_eq!(
        refused(verify_at(&m2, &fx("sigs/tree-cert.sig"), &t2)).0,
        Check::UntrustedKey
    );
}

#[test]
fn the_walk_streams_and_ignores_as_model_signing_does() {
    let dir = tempdir();
    let m = dir.path().join("m");
    fs::create_dir_all(m.join("sub/.git")).unwrap();
    fs::create_dir_all(m.join(".github")).unwrap();
    fs::write(m.join("w.bin"), vec![7u8; 3 << 20]).unwrap();
    fs::write(m.join("sub/.git/x"), b"nested .git is not ignored").unwrap();
    fs::write(m.join(".github/x"), b"ignored").unwrap();
    fs::write(m.join(".gitignore"), b"ignored").unwrap();
    fs::write(m.join("model.sig"), b"ignored by default").unwrap();
    let ignore = deploy_gate::native::oms::default_ignore(&m, Some(&m.join("model.sig")));
    let man = manifest_of(&m, Method::Files, &ignore).unwrap();
    let names: Vec<String> = man.resources.iter().map(|r| r.name()).collect();
    assert_eq!(names, ["sub/.git/x", "w.bin"]);
    let shards = manifest_of(&m, Method::Shards { shard_size: 1 << 20 }, &ignore).unwrap();
    assert_eq!(shards.resources.len(), 4);
    assert_eq!(
        oms_digest(&m, Method::Files).unwrap(),
        oms::Manifest::files_from_bytes([
            ("sub/.git/x", &b"nested .git is not ignored"[..]),
            ("w.bin", &vec![7u8; 3 << 20][..])
        ])
        .digest_hex()
    );
    // A FIFO is refused, not read (which would block).
    let fifo = m.join("pipe");
    let c = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
    match manifest_of(&m, Method::Files, &ignore) {
        Err(ModelError::Check(e)) => assert_eq!((e.check, e.file.as_deref()), (Check::Symlink, Some("pipe"))),
        other => panic!("{other:?}"),
    }
}

// ------------------------------------------------------------------ the CLI, both signatures

struct Setup {
    _dir: tempfile::TempDir,
    dir: PathBuf,
    reviewer: Reviewer,
    model: PathBuf,
}

fn setup() -> Setup {
    let dir = tempdir();
    let reviewer = reviewer(dir.path());
    let model = tree_copy(dir.path(), true);
    Setup {
        dir: dir.path().to_path_buf(),
        _dir: dir,
        reviewer,
        model,
    }
}

fn sign_decision(st: &Setup, out: &Path) {
    let o = run(&[
        "sign".into(),
        s(&st.reviewer.report),
        "--key".into(),
        s(&st.reviewer.key),
        "--model".into(),
        "tree".into(),
        "--model-path".into(),
        s(&st.model),
        "--target".into(),
        "config.yaml".into(),
        "--out".into(),
        s(out),
    ]);
    assert!(o.status.success(), "{}", text(&o));
}

fn statement_of(envelope: &Path) -> Value {
    let env: Value = serde_json::from_slice(&fs::read(envelope).unwrap()).unwrap();
    serde_json::from_slice(&deploy_gate::attest::dsse::decode(env["payload"].as_str().unwrap()).unwrap()).unwrap()
}

fn verify_args(st: &Setup, envelope: &Path, extra: &[String]) -> Vec<String> {
    let mut args = vec![
        "verify".into(),
        s(envelope),
        "--trusted-key".into(),
        s(&st.reviewer.public),
        "--model-path".into(),
        s(&st.model),
        "--target".into(),
        "config.yaml".into(),
    ];
    args.extend(extra.iter().cloned());
    args
}

#[test]
fn sign_names_the_model_by_its_oms_digest_and_verify_checks_both_signatures() {
    let st = setup();
    let envelope = st.dir.join("decision.dsse.json");
    sign_decision(&st, &envelope);
    let subject = &statement_of(&envelope)["subject"][0];
    assert_eq!(subject["digest"]["sha256"], signed_digest("models/tree/model.sig"));
    assert_eq!(subject["annotations"]["digest_scheme"], "oms-v1.0-files");

    let trainer = ["--trainer-key".to_owned(), s(&fx("keys/p256.pub.pem"))];
    let o = run(&verify_args(&st, &envelope, &trainer));
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let out = json_stdout(&o);
    assert_eq!(out["trainer"]["key_id"], key("p256").key_id);
    assert_eq!(
        out["trainer"]["model_digest"],
        format!("sha256:{}", signed_digest("models/tree/model.sig"))
    );
    assert_eq!(out["trainer"]["same_model_by"], "digest");
    assert!(stderr(&o).contains(&key("p256").key_id), "{}", text(&o));

    // Without trainer keys: the decision alone, as before (the model.sig beside it is said to
    // be unchecked).
    let o = run(&verify_args(&st, &envelope, &[]));
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    assert!(json_stdout(&o).get("trainer").is_none());
    assert!(stderr(&o).contains("is there but not checked"), "{}", text(&o));

    // A wrong trainer key, and a tampered file: exit 2, the check named.
    let o = run(&verify_args(
        &st,
        &envelope,
        &["--trainer-key".to_owned(), s(&fx("keys/other.pub.pem"))],
    ));
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert_eq!(json_stdout(&o)["check"], "untrusted_key");
    fs::write(st.model.join("a-b"), "changed").unwrap();
    let o = run(&verify_args(&st, &envelope, &trainer));
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    let out = json_stdout(&o);
    assert_eq!(
        (out["check"].as_str(), out["file"].as_str()),
        (Some("file_digest"), Some("a-b"))
    );
    // --model-signature elsewhere without a trainer key is an error, not silently ignored.
    let o = run(&verify_args(
        &st,
        &envelope,
        &["--model-signature".to_owned(), s(&fx("sigs/other.sig"))],
    ));
    assert_eq!(o.status.code(), Some(1), "{}", text(&o));
}

#[test]
fn a_decision_signed_with_the_original_digest_still_verifies() {
    let st = setup();
    // What an earlier build's `sign --model-path` wrote: the original directory digest, no
    // annotation (the same library call that build made).
    let legacy = deploy_gate::native::files::model_digest(&st.model).unwrap();
    let report = deploy_gate::attest::ReportToSign::parse(&fs::read_to_string(&st.reviewer.report).unwrap()).unwrap();
    let key = deploy_gate::attest::keys::read_private_pem(&fs::read_to_string(&st.reviewer.key).unwrap()).unwrap();
    let claim = deploy_gate::attest::Claim {
        report: &report,
        model_name: "tree",
        model_sha256: &legacy,
        target: "config.yaml",
        time_verified: deploy_gate::native::apply::unix_now(),
        review: None,
    };
    let envelope = st.dir.join("old.dsse.json");
    fs::write(&envelope, deploy_gate::attest::sign(&claim, &key).unwrap().to_json()).unwrap();
    assert!(statement_of(&envelope)["subject"][0].get("annotations").is_none());
    let o = run(&verify_args(&st, &envelope, &[]));
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    assert_eq!(json_stdout(&o)["model_digest"], format!("sha256:{legacy}"));
    let o = run(&verify_args(
        &st,
        &envelope,
        &["--trainer-key".to_owned(), s(&fx("keys/p256.pub.pem"))],
    ));
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    assert_eq!(json_stdout(&o)["trainer"]["same_model_by"], "files");
}

const CONFIG: &str = "# serving config\nbackend: transformers\ndefault_model: /models/old\nport: 8080\n";

fn apply_args(st: &Setup, envelope: &Path, config: &Path, ledger: &Path, extra: &[String]) -> Vec<String> {
    let mut args = vec![
        "apply".into(),
        s(envelope),
        "--trusted-key".into(),
        s(&st.reviewer.public),
        "--model-path".into(),
        s(&st.model),
        "--config".into(),
        s(config),
        "--target".into(),
        "config.yaml".into(),
        "--ledger".into(),
        s(ledger),
    ];
    args.extend(extra.iter().cloned());
    args
}

#[test]
fn apply_deploys_only_the_model_the_trainer_signed() {
    let st = setup();
    let envelope = st.dir.join("decision.dsse.json");
    sign_decision(&st, &envelope);
    let config = st.dir.join("config.yaml");
    let ledger = st.dir.join("ledger.jsonl");
    fs::write(&config, CONFIG).unwrap();
    let trainer = ["--trainer-key".to_owned(), s(&fx("keys/p256.pub.pem"))];

    // A file the trainer did not sign, under a valid decision for these very files (re-signed
    // after the change): nothing is deployed, nothing recorded.
    fs::write(st.model.join("weights/part-1.bin"), b"swapped weights").unwrap();
    let resigned = st.dir.join("resigned.dsse.json");
    sign_decision(&st, &resigned);
    let o = run(&apply_args(&st, &resigned, &config, &ledger, &trainer));
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    let out = json_stdout(&o);
    assert_eq!(
        (out["check"].as_str(), out["file"].as_str()),
        (Some("file_digest"), Some("weights/part-1.bin"))
    );
    assert_eq!(fs::read_to_string(&config).unwrap(), CONFIG);
    assert!(!ledger.exists() || !fs::read_to_string(&ledger).unwrap().contains("\"deployed\""));

    // The trainer's files back: deployed, and the ledger names the trainer's key.
    fs::copy(
        fx("models/tree/weights/part-1.bin"),
        st.model.join("weights/part-1.bin"),
    )
    .unwrap();
    let o = run(&apply_args(&st, &envelope, &config, &ledger, &trainer));
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let out = json_stdout(&o);
    assert_eq!(out["result"], "deployed");
    assert_eq!(out["trainer"]["key_id"], key("p256").key_id);
    assert!(fs::read_to_string(&config).unwrap().contains(&s(&st.model)));
    let entries = fs::read_to_string(&ledger).unwrap();
    let last: Value = serde_json::from_str(entries.lines().last().unwrap()).unwrap();
    assert_eq!(last["result"], "deployed");
    assert_eq!(last["trainer_key"], key("p256").key_id);
}

#[test]
fn apply_refuses_a_planted_symlink() {
    let st = setup();
    let envelope = st.dir.join("decision.dsse.json");
    sign_decision(&st, &envelope);
    let config = st.dir.join("config.yaml");
    fs::write(&config, CONFIG).unwrap();
    std::os::unix::fs::symlink("/etc/passwd", st.model.join("weights/extra.bin")).unwrap();
    let trainer = ["--trainer-key".to_owned(), s(&fx("keys/p256.pub.pem"))];
    let o = run(&apply_args(
        &st,
        &envelope,
        &config,
        &st.dir.join("ledger.jsonl"),
        &trainer,
    ));
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert_eq!(json_stdout(&o)["check"], "symlink");
    assert_eq!(fs::read_to_string(&config).unwrap(), CONFIG);
}

#[test]
fn model_identity_compares_the_two_digests() {
    let id = deploy_gate::native::oms::ModelIdentity {
        digest: "ab".repeat(32),
        scheme: Some(deploy_gate::attest::OMS_FILES_SCHEME.into()),
        trainer: Some({
            let dir = tempdir();
            let m = tree_copy(dir.path(), true);
            verify_at(&m, &m.join("model.sig"), &trust(&["p256"])).unwrap()
        }),
    };
    let e = id.check_same_model(&"ab".repeat(32)).unwrap_err();
    assert_eq!(e.check, Check::ModelIdentity);
    id.check_same_model(&signed_digest("models/tree/model.sig")).unwrap();
}

#[test]
fn a_deploy_command_gets_the_trainers_key_id() {
    let st = setup();
    let envelope = st.dir.join("decision.dsse.json");
    sign_decision(&st, &envelope);
    let config = st.dir.join("config.yaml");
    fs::write(&config, CONFIG).unwrap();
    let seen = st.dir.join("trainer-key.txt");
    let script = format!("printf %s \"$DEPLOY_GATE_TRAINER_KEY\" > '{}'", s(&seen));
    let extra = [
        "--trainer-key".to_owned(),
        s(&fx("keys/p256.pub.pem")),
        "--deploy-cmd".to_owned(),
        "sh".to_owned(),
        "-c".to_owned(),
        script,
        ";".to_owned(),
    ];
    let o = run(&apply_args(
        &st,
        &envelope,
        &config,
        &st.dir.join("ledger.jsonl"),
        &extra,
    ));
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    assert_eq!(fs::read_to_string(&seen).unwrap(), key("p256").key_id);
}

/// The review's downgrade: a decision for a folder (its OMS digest, sha256 of its files'
/// digests in order) against a single file G made of those digests, whose original digest is
/// sha256(G), the same value. Given through a pipe (the envelope read once) it is refused: the
/// matched subject is annotated `oms-v1.0-files`, the digest was computed by the original scheme.
#[test]
fn a_folder_decision_never_matches_a_file_of_its_digests() {
    use std::io::Write;
    use std::process::Stdio;
    let st = setup();
    let envelope = st.dir.join("decision.dsse.json");
    sign_decision(&st, &envelope);
    let ignore = deploy_gate::native::oms::default_ignore(&st.model, Some(&st.model.join("model.sig")));
    let m = manifest_of(&st.model, Method::Files, &ignore).unwrap();
    let g: Vec<u8> = m.resources.iter().flat_map(|r| r.digest).collect();
    let file = st.dir.join("G.bin");
    fs::write(&file, &g).unwrap();
    let signed = statement_of(&envelope)["subject"][0]["digest"]["sha256"].clone();
    assert_eq!(signed, deploy_gate::native::files::model_digest(&file).unwrap());

    let config = st.dir.join("config.yaml");
    fs::write(&config, CONFIG).unwrap();
    let ledger = st.dir.join("ledger.jsonl");
    let piped = |args: Vec<String>| {
        let mut child = dg()
            .args(args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let bytes = fs::read(&envelope).unwrap();
        child.stdin.take().unwrap().write_all(&bytes).unwrap();
        child.wait_with_output().unwrap()
    };
    let with_model = |mut args: Vec<String>, model: &Path| {
        let i = args.iter().position(|a| a == "--model-path").unwrap();
        args[i + 1] = s(model);
        args
    };
    let stdin = Path::new("/dev/stdin");
    for args in [
        with_model(verify_args(&st, stdin, &[]), &file),
        with_model(apply_args(&st, stdin, &config, &ledger, &[]), &file),
    ] {
        let o = piped(args);
        assert_eq!(o.status.code(), Some(2), "{}", text(&o));
        assert_eq!(json_stdout(&o)["check"], "subject_digest", "{}", text(&o));
    }
    assert_eq!(fs::read_to_string(&config).unwrap(), CONFIG);
    // From a file, likewise.
    let o = run(&with_model(verify_args(&st, &envelope, &[]), &file));
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));

    // The decision on standard input with its own folder: verified, then applied.
    let o = piped(verify_args(&st, stdin, &[]));
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let o = piped(apply_args(&st, stdin, &config, &ledger, &[]));
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    assert_eq!(json_stdout(&o)["result"], "deployed");
}

/// A decision whose subject names a scheme this build does not know, or whose annotation is
/// not a string, is refused, never read with the original scheme; and the subject that matches
/// the digest must carry the scheme it was computed by (here the first subject's annotation
/// leads the host to the OMS digest, which an unannotated second subject names).
#[test]
fn an_unknown_or_unreadable_scheme_is_refused() {
    let st = setup();
    let report: Value = serde_json::from_slice(&fs::read(&st.reviewer.report).unwrap()).unwrap();
    let key = deploy_gate::attest::keys::read_private_pem(&fs::read_to_string(&st.reviewer.key).unwrap()).unwrap();
    let legacy = deploy_gate::native::files::model_digest(&st.model).unwrap();
    let claim = deploy_gate::attest::Claim {
        report: &deploy_gate::attest::ReportToSign::of_value(&report),
        model_name: "tree",
        model_sha256: &legacy,
        target: "config.yaml",
        time_verified: deploy_gate::native::apply::unix_now(),
        review: None,
    };
    let oms_digest = oms_digest(&st.model, Method::Files).unwrap();
    let mixed = serde_json::json!([
        {"name": "other", "digest": {"sha256": "ab".repeat(32)}, "annotations": {"digest_scheme": "oms-v1.0-files"}},
        {"name": "tree", "digest": {"sha256": oms_digest}},
    ]);
    for scheme in [
        serde_json::json!("oms-v9-files"),
        serde_json::json!(7),
        Value::Null,
        mixed,
    ] {
        let mut statement = deploy_gate::attest::statement_in(&claim, None).unwrap();
        if scheme.is_array() {
            statement["subject"] = scheme.clone();
        } else {
            statement["subject"][0]["annotations"] = serde_json::json!({ "digest_scheme": scheme });
        }
        use deploy_gate::attest::dsse;
        let payload = serde_json::to_vec(&statement).unwrap();
        let sig = ed25519_dalek::Signer::sign(&key, &dsse::pae(dsse::PAYLOAD_TYPE, &payload));
        let env = dsse::Envelope {
            payload_type: dsse::PAYLOAD_TYPE.into(),
            payload: dsse::encode(&payload),
            signatures: vec![dsse::Signature {
                keyid: String::new(),
                sig: dsse::encode(&sig.to_bytes()),
            }],
        };
        let envelope = st.dir.join("odd.dsse.json");
        fs::write(&envelope, serde_json::to_vec(&env).unwrap()).unwrap();
        let o = run(&verify_args(&st, &envelope, &[]));
        assert_ne!(o.status.code(), Some(0), "{scheme}: {}", text(&o));
        assert!(!stdout_of(&o).contains("\"valid\": true"), "{scheme}: {}", text(&o));
        if scheme.is_array() {
            assert_eq!(json_stdout(&o)["check"], "subject_digest", "{}", text(&o));
            assert!(stderr(&o).contains("computed by `oms-v1.0-files`"), "{}", text(&o));
        }
    }
}

fn stdout_of(o: &std::process::Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

/// The review's memory blow-up: a `model.sig` padded with `[]` values in `tlogEntries` (262 MB
/// and 87 million values there; here a smaller version of the same shape under the byte cap,
/// and one over it) is refused by `bundle_shape` before any JSON tree is built, quickly; so is a
/// statement padded the same way, and a transparency-log entry or a timestamp the key method
/// never writes.
#[test]
fn a_padded_bundle_is_refused_before_it_is_parsed() {
    let dir = tempdir();
    let t = trust(&["p256"]);
    let m = tree_copy(dir.path(), true);
    let good = fs::read_to_string(m.join("model.sig")).unwrap();
    assert!(
        good.contains("\"tlogEntries\":[]"),
        "model-signing writes an empty tlogEntries"
    );
    let padded = |n: usize| {
        good.replacen(
            "\"tlogEntries\":[]",
            &format!("\"tlogEntries\":[{}[]]", "[],".repeat(n)),
            1,
        )
    };
    let started = std::time::Instant::now();
    for (n, why) in [(3_000_000, "JSON values"), (12_000_000, "bytes")] {
        let sig = dir.path().join(format!("padded-{n}.sig"));
        fs::write(&sig, padded(n)).unwrap();
        let e = match verify_model(&m, &fs::read(&sig).unwrap(), &sig, &t) {
            Err(ModelError::Check(e)) => e,
            other => panic!("{other:?}"),
        };
        assert_eq!(e.check, Check::BundleShape, "{e}");
        assert!(e.detail.contains(why), "{e}");
        // From the file, as verify and apply read it: refused by its size before it is read.
        if why == "bytes" {
            let e = deploy_gate::native::oms::read_bundle(&sig).unwrap_err();
            assert_eq!(e.check(), Some(Check::BundleShape), "{e}");
            assert!(e.to_string().contains(&s(&sig)), "{e}");
        }
    }
    assert!(
        started.elapsed() < std::time::Duration::from_secs(20),
        "{:?}",
        started.elapsed()
    );

    // A statement padded the same way, within its byte limit.
    let payload = format!(
        "{{\"_type\":\"{}\",\"pad\":[{}[]]}}",
        oms::bundle::STATEMENT_TYPE,
        "[],".repeat(3_000_000)
    );
    let e = Statement::parse(payload.as_bytes()).unwrap_err();
    assert_eq!(e.check, Check::BundleShape, "{e}");
    assert!(e.detail.contains("JSON values"), "{e}");

    // Material the key method never writes: refused; an empty timestamp block is not.
    for (material, ok) in [
        (serde_json::json!({"tlogEntries": [{}]}), false),
        (
            serde_json::json!({"timestampVerificationData": {"rfc3161Timestamps": [{}]}}),
            false,
        ),
        (serde_json::json!({"timestampVerificationData": []}), false),
        (
            serde_json::json!({"timestampVerificationData": {"rfc3161Timestamps": []}}),
            true,
        ),
    ] {
        let sig = dir.path().join("edited.sig");
        edit_bundle(&m.join("model.sig"), &sig, |b| {
            for (k, v) in material.as_object().unwrap() {
                b["verificationMaterial"][k] = v.clone();
            }
        });
        let r = verify_model(&m, &fs::read(&sig).unwrap(), &m.join("model.sig"), &t);
        if ok {
            assert!(r.is_ok(), "{material}: {r:?}");
        } else {
            assert_eq!(refused(r).0, Check::BundleShape, "{material}");
        }
    }
}

/// The review's stall: a sparse file of 1 TiB planted in the folder (or a signed file grown to
/// it) is refused by the listing, before any file is hashed — by name with either method, by
/// the size the signed shards imply with `shards` — in well under a second, where hashing it
/// would take hours.
#[test]
fn a_planted_sparse_file_is_refused_before_hashing() {
    let dir = tempdir();
    let t = trust(&["p256"]);
    let tib = 1u64 << 40;
    let plant = |m: &Path, rel: &str| {
        let f = fs::OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(m.join(rel))
            .unwrap();
        f.set_len(tib).unwrap();
    };
    let started = std::time::Instant::now();
    let m = tree_copy(&dir.path().join("extra"), true);
    plant(&m, "zz.bin");
    assert_eq!(
        refused(verify_at(&m, &m.join("model.sig"), &t)),
        (Check::FileExtra, Some("zz.bin".into()))
    );
    let shards = fx("sigs/tree-shards.sig");
    let m = tree_copy(&dir.path().join("extra-shards"), false);
    plant(&m, "zz.bin");
    assert_eq!(
        refused(verify_at(&m, &shards, &t)),
        (Check::FileExtra, Some("zz.bin".into()))
    );
    let m = tree_copy(&dir.path().join("grown-shards"), false);
    plant(&m, "weights/part-1.bin");
    let e = match verify_at(&m, &shards, &t) {
        Err(ModelError::Check(e)) => e,
        other => panic!("{other:?}"),
    };
    assert_eq!(
        (e.check, e.file.as_deref()),
        (Check::FileDigest, Some("weights/part-1.bin"))
    );
    assert!(e.detail.contains(&tib.to_string()) && e.detail.contains("70000"), "{e}");
    // A missing file is named before anything is read, too.
    fs::remove_file(m.join("config.json")).unwrap();
    assert_eq!(
        refused(verify_at(&m, &shards, &t)),
        (Check::FileMissing, Some("config.json".into()))
    );
    assert!(
        started.elapsed() < std::time::Duration::from_secs(5),
        "{:?}",
        started.elapsed()
    );
}

/// A decision (by either scheme) and a trainer's signature (by `files` or `shards`, inside or
/// outside the folder) are checked against one walk of the folder, each file read once: the
/// digests are the ones computed apart.
#[test]
fn one_walk_gives_both_digests() {
    use deploy_gate::native::oms::{identify, ModelSignature};
    let st = setup();
    let report: Value = serde_json::from_slice(&fs::read(&st.reviewer.report).unwrap()).unwrap();
    let key = deploy_gate::attest::keys::read_private_pem(&fs::read_to_string(&st.reviewer.key).unwrap()).unwrap();
    for sig in [
        st.model.join("model.sig"),
        fx("sigs/tree-shards.sig"),
        fx("sigs/tree-p384.sig"),
    ] {
        if !sig.starts_with(&st.model) {
            // A signature outside the folder: the folder holds no model.sig.
            let _ = fs::remove_file(st.model.join("model.sig"));
        }
        let oms_envelope = st.dir.join("decision.dsse.json");
        sign_decision(&st, &oms_envelope);
        let legacy = deploy_gate::native::files::model_digest(&st.model).unwrap();
        let claim = deploy_gate::attest::Claim {
            report: &deploy_gate::attest::ReportToSign::of_value(&report),
            model_name: "tree",
            model_sha256: &legacy,
            target: "config.yaml",
            time_verified: deploy_gate::native::apply::unix_now(),
            review: None,
        };
        let old_envelope = serde_json::to_vec(&deploy_gate::attest::sign(&claim, &key).unwrap()).unwrap();
        let oms = oms_digest(&st.model, Method::Files).unwrap();
        let signature = ModelSignature {
            path: sig.clone(),
            trust: trust(&["p256", "p384"]),
        };
        for (envelope, want) in [(fs::read(&oms_envelope).unwrap(), &oms), (old_envelope, &legacy)] {
            let id = identify(&st.model, &envelope, Some(&signature)).unwrap();
            assert_eq!(&id.digest, want, "{}", sig.display());
            assert!(id.trainer.is_some());
        }
    }
}

/// The review's race: the folder swapped with another (renameat2 RENAME_EXCHANGE, over and
/// over) while a decision by the original scheme and a trainer's signature by `shards` outside
/// the folder are checked (two walks before). A check that passes must have read the signed
/// content for both: its digest is never the other folder's.
#[test]
fn a_folder_swapped_during_the_check_never_passes_with_the_other_content() {
    use deploy_gate::native::oms::{identify, ModelSignature};
    use std::sync::atomic::{AtomicBool, Ordering};
    let dir = tempdir();
    let m = tree_copy(&dir.path().join("a"), false);
    let other = tree_copy(&dir.path().join("b"), false);
    fs::write(other.join("config.json"), b"{\"unsigned\": 1}\n").unwrap();
    let signed_legacy = deploy_gate::native::files::model_digest(&m).unwrap();
    let other_legacy = deploy_gate::native::files::model_digest(&other).unwrap();
    let st = setup();
    let report: Value = serde_json::from_slice(&fs::read(&st.reviewer.report).unwrap()).unwrap();
    let key = deploy_gate::attest::keys::read_private_pem(&fs::read_to_string(&st.reviewer.key).unwrap()).unwrap();
    let claim = deploy_gate::attest::Claim {
        report: &deploy_gate::attest::ReportToSign::of_value(&report),
        model_name: "tree",
        model_sha256: &other_legacy,
        target: "config.yaml",
        time_verified: deploy_gate::native::apply::unix_now(),
        review: None,
    };
    let envelope = serde_json::to_vec(&deploy_gate::attest::sign(&claim, &key).unwrap()).unwrap();
    let signature = ModelSignature {
        path: fx("sigs/tree-shards.sig"),
        trust: trust(&["p256"]),
    };
    let stop = AtomicBool::new(false);
    let (a, b) = (
        std::ffi::CString::new(s(&m)).unwrap(),
        std::ffi::CString::new(s(&other)).unwrap(),
    );
    std::thread::scope(|scope| {
        scope.spawn(|| {
            while !stop.load(Ordering::Relaxed) {
                // SAFETY: two valid NUL-terminated paths.
                let r = unsafe {
                    libc::syscall(
                        libc::SYS_renameat2,
                        libc::AT_FDCWD,
                        a.as_ptr(),
                        libc::AT_FDCWD,
                        b.as_ptr(),
                        libc::RENAME_EXCHANGE,
                    )
                };
                assert_eq!(r, 0, "renameat2: {}", std::io::Error::last_os_error());
                std::thread::sleep(std::time::Duration::from_micros(1500));
            }
        });
        let digests: Vec<String> = (0..300)
            .filter_map(|_| identify(&m, &envelope, Some(&signature)).ok().map(|id| id.digest))
            .collect();
        stop.store(true, Ordering::Relaxed);
        let mixed = digests.iter().filter(|d| **d == other_legacy).count();
        assert_eq!(mixed, 0, "the trainer's check and the digest read different folders");
        assert!(digests.iter().all(|d| *d == signed_legacy));
        eprintln!("{} of 300 checks passed, each on the signed content", digests.len());
    });
}

/// Certificate chains OpenSSL (and so `model-signing`) refuses are refused (fixtures made by
/// tests/fixtures/oms/chains/make.sh; OpenSSL's verdicts in openssl-verify.txt there): an
/// intermediate below a CA with `pathlen:0`, and a CA whose key usage lacks `keyCertSign`.
#[test]
fn chains_beyond_path_length_or_without_cert_signing_are_refused() {
    let pem = |name: &str| fs::read_to_string(fx(&format!("chains/{name}.pem"))).unwrap();
    let der = |name: &str| {
        let body: String = pem(name).lines().filter(|l| !l.starts_with("-----")).collect();
        deploy_gate::attest::dsse::decode(&body).unwrap()
    };
    let mut roots = Roots::new();
    roots.add_one_pem(&pem("root")).unwrap();
    let verify = |chain: &[&str]| oms::x509::verify_chain(&chain.iter().map(|n| der(n)).collect::<Vec<_>>(), &roots);
    let signer = verify(&["leaf-good", "sub2"]).unwrap();
    assert!(signer.subject.contains("leaf under sub2"), "{}", signer.subject);
    for (chain, why) in [
        (&["leaf-pathlen", "sub", "i0"][..], "pathLenConstraint"),
        (&["leaf-noks", "inoks"][..], "keyCertSign"),
    ] {
        let e = verify(chain).unwrap_err();
        assert_eq!(e.check, Check::UntrustedKey, "{e}");
        assert!(e.detail.contains(why), "{e}");
    }
    // A Fulcio certificate re-wrapped as a chain is the keyless method, refused by name.
    assert_eq!(verify(&["leaf-fulcio", "sub2"]).unwrap_err().check, Check::Keyless);
    let said = fs::read_to_string(fx("chains/openssl-verify.txt")).unwrap();
    assert!(said.contains("path length constraint exceeded") && said.contains("leaf-good.pem: OK"));
}

/// A shard named with leading zeros (`f:00:3`) is the shard `f:0:3`: listed twice.
#[test]
fn a_shard_listed_twice_under_two_spellings_is_refused() {
    let digest = "ab".repeat(32);
    let statement = serde_json::json!({
        "_type": oms::bundle::STATEMENT_TYPE,
        "subject": [{"name": "m", "digest": {"sha256": digest}}],
        "predicateType": oms::bundle::PREDICATE_TYPE,
        "predicate": {
            "serialization": {"method": "shards", "hash_type": "sha256", "shard_size": 3, "allow_symlinks": false},
            "resources": [
                {"name": "f:0:3", "digest": digest, "algorithm": "sha256"},
                {"name": "f:00:3", "digest": digest, "algorithm": "sha256"},
            ],
        },
    });
    let e = Statement::parse(&serde_json::to_vec(&statement).unwrap()).unwrap_err();
    assert_eq!(e.check, Check::Predicate, "{e}");
    assert!(e.detail.contains("listed twice"), "{e}");
}
