//! The keyless Sigstore method through the CLI: `verify` and `apply` with
//! `--trainer-identity`/`--trainer-issuer` over a model signed by `model_signing sign` (the
//! reference's own keyless bundle, tests/fixtures/oms-keyless), the identity and issuer in the
//! summary, the ledger and the deploy command's environment, and the flags' usage errors.

use crate::common::*;
use serde_json::Value;
use std::fs;
use std::path::{Path, PathBuf};

const IDENTITY: &str = "stefanb@us.ibm.com";
const ISSUER: &str = "https://sigstore.verify.ibm.com/oauth2";
const CONFIG: &str = "backend: transformers\ndefault_model: /models/old\n";

struct Setup {
    _dir: tempfile::TempDir,
    dir: PathBuf,
    reviewer: Reviewer,
    model: PathBuf,
    envelope: PathBuf,
}

/// The v1.1.0 model (its signed files and `model.sig`; `ignore-me`, left out only at the
/// reference's verification, is not copied) and a decision signed for it.
fn setup() -> Setup {
    let dir = tempdir();
    let model = dir.path().join("model");
    fs::create_dir_all(&model).unwrap();
    let from = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/oms-keyless/v1.1.0-sigstore");
    for f in ["model.sig", "signme-1", "signme-2"] {
        fs::copy(from.join(f), model.join(f)).unwrap();
    }
    let reviewer = reviewer(dir.path());
    let envelope = dir.path().join("decision.dsse.json");
    let o = run(&[
        "sign".into(),
        s(&reviewer.report),
        "--key".into(),
        s(&reviewer.key),
        "--model".into(),
        "m".into(),
        "--model-path".into(),
        s(&model),
        "--target".into(),
        "config.yaml".into(),
        "--out".into(),
        s(&envelope),
    ]);
    assert!(o.status.success(), "{}", text(&o));
    Setup {
        dir: dir.path().to_path_buf(),
        _dir: dir,
        reviewer,
        model,
        envelope,
    }
}

fn s(p: &Path) -> String {
    p.display().to_string()
}

fn pair(identity: &str, issuer: &str) -> Vec<String> {
    vec![
        "--trainer-identity".into(),
        identity.into(),
        "--trainer-issuer".into(),
        issuer.into(),
    ]
}

fn verify(st: &Setup, extra: &[String]) -> std::process::Output {
    let mut args = vec![
        "verify".into(),
        s(&st.envelope),
        "--trusted-key".into(),
        s(&st.reviewer.public),
        "--model-path".into(),
        s(&st.model),
        "--target".into(),
        "config.yaml".into(),
    ];
    args.extend(extra.iter().cloned());
    run(&args)
}

#[test]
fn verify_names_the_keyless_trainer_and_refuses_another_identity() {
    let st = setup();
    let o = verify(&st, &pair(IDENTITY, ISSUER));
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let out = json_stdout(&o);
    assert_eq!(out["trainer"]["identity"], IDENTITY);
    assert_eq!(out["trainer"]["issuer"], ISSUER);
    assert_eq!(out["trainer"]["key_id"], Value::Null);
    assert_eq!(out["trainer"]["signed_by"]["method"], "keyless");
    assert!(
        text(&o).contains(&format!("identity {IDENTITY} (issuer {ISSUER}")),
        "{}",
        text(&o)
    );

    // A second pair that matches is enough; one character off in either is refused by name.
    let mut two = pair("someone@example.com", ISSUER);
    two.extend(pair(IDENTITY, ISSUER));
    assert_eq!(verify(&st, &two).status.code(), Some(0));
    for (identity, issuer) in [
        ("stefanb@us.ibm.co", ISSUER),
        (IDENTITY, "https://sigstore.verify.ibm.com/oauth3"),
    ] {
        let o = verify(&st, &pair(identity, issuer));
        assert_eq!(o.status.code(), Some(2), "{}", text(&o));
        assert_eq!(json_stdout(&o)["check"], "keyless_identity");
    }
    // Without any trust for the trainer, the signature beside the model is only warned about;
    // with a key only, the keyless bundle is refused by name.
    let key = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/oms/keys/p256.pub.pem");
    let o = verify(&st, &["--trainer-key".into(), s(&key)]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert_eq!(json_stdout(&o)["check"], "keyless");
    // A changed model file.
    fs::write(st.model.join("signme-2"), b"changed\n").unwrap();
    let o = verify(&st, &pair(IDENTITY, ISSUER));
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
}

#[test]
fn apply_records_the_identity_and_passes_it_to_the_deploy_command() {
    let st = setup();
    let config = st.dir.join("config.yaml");
    fs::write(&config, CONFIG).unwrap();
    let ledger = st.dir.join("ledger.jsonl");
    let seen = st.dir.join("seen.txt");
    let script = format!(
        "printf '%s|%s|%s' \"$DEPLOY_GATE_TRAINER_IDENTITY\" \"$DEPLOY_GATE_TRAINER_ISSUER\" \"$DEPLOY_GATE_TRAINER_KEY\" > '{}'",
        s(&seen)
    );
    let mut args = vec![
        "apply".into(),
        s(&st.envelope),
        "--trusted-key".into(),
        s(&st.reviewer.public),
        "--model-path".into(),
        s(&st.model),
        "--config".into(),
        s(&config),
        "--target".into(),
        "config.yaml".into(),
        "--ledger".into(),
        s(&ledger),
    ];
    args.extend(pair(IDENTITY, ISSUER));
    args.extend(["--deploy-cmd".into(), "sh".into(), "-c".into(), script, ";".into()]);
    let o = run(&args);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    assert_eq!(fs::read_to_string(&seen).unwrap(), format!("{IDENTITY}|{ISSUER}|"));
    let last: Value = serde_json::from_str(fs::read_to_string(&ledger).unwrap().lines().last().unwrap()).unwrap();
    assert_eq!(last["result"], "deployed");
    assert_eq!(
        (last["trainer_identity"].as_str(), last["trainer_issuer"].as_str()),
        (Some(IDENTITY), Some(ISSUER))
    );
    assert!(last.get("trainer_key").is_none());
}

#[test]
fn the_keyless_flags_usage_errors_name_what_is_wrong() {
    let st = setup();
    let o = verify(&st, &["--trainer-identity".into(), IDENTITY.into()]);
    assert_eq!(o.status.code(), Some(1), "{}", text(&o));
    assert!(
        text(&o).contains("1 --trainer-identity and 0 --trainer-issuer"),
        "{}",
        text(&o)
    );
    let root = st.dir.join("root.json");
    fs::write(&root, b"{\"not\": \"a root\"").unwrap();
    let mut args = pair(IDENTITY, ISSUER);
    args.extend(["--sigstore-root".into(), s(&root)]);
    let o = verify(&st, &args);
    assert_eq!(o.status.code(), Some(1), "{}", text(&o));
    assert!(text(&o).contains(&s(&root)), "{}", text(&o));
    let o = verify(&st, &["--sigstore-root".into(), s(&root)]);
    assert_eq!(o.status.code(), Some(1), "{}", text(&o));
    assert!(text(&o).contains("needs --trainer-identity"), "{}", text(&o));
}
