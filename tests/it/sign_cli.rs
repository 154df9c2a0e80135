//! keygen, digest, sign, verify, apply and rollback through the command line, with openssl
//! interoperability.

use crate::common::*;
use serde_json::Value;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn openssl(args: &[&str]) -> Output {
    let out = Command::new("openssl")
        .args(args)
        .output()
        .expect("openssl is installed (scripts/setup.sh)");
    assert!(out.status.success(), "openssl {args:?}: {}", stderr(&out));
    out
}

struct Setup {
    dir: tempfile::TempDir,
    report: PathBuf,
    model: PathBuf,
    config: PathBuf,
    key: PathBuf,
    public: PathBuf,
}

const CONFIG: &str = "# serving config\nbackend: transformers\ndefault_model: /models/agent-7b-v1\nport: 8080\n";

fn setup(fixture: &str) -> Setup {
    let dir = tempdir();
    let report = dir.path().join("report.json");
    let mut args = evaluate_args(&parity_dir().join(fixture));
    args.extend(["--out".into(), s(&report)]);
    let out = run(&args);
    assert!(matches!(out.status.code(), Some(0 | 3)), "{}", stderr(&out));
    let model = dir.path().join("agent-7b-v2");
    fs::create_dir_all(model.join("weights")).unwrap();
    fs::write(model.join("config.json"), "{\"layers\": 32}").unwrap();
    fs::write(model.join("weights/part-0.bin"), [1u8, 2, 3]).unwrap();
    let config = dir.path().join("config.yaml");
    fs::write(&config, CONFIG).unwrap();
    let name = dir.path().join("reviewer");
    let out = run(&["keygen", "--out", &s(&name)]);
    assert!(out.status.success(), "{}", stderr(&out));
    Setup {
        report,
        model,
        config,
        key: dir.path().join("reviewer.key.pem"),
        public: dir.path().join("reviewer.pub.pem"),
        dir,
    }
}

fn sign(st: &Setup, key: &Path, extra: &[&str]) -> PathBuf {
    let envelope = st.dir.path().join("decision.dsse.json");
    let mut args = vec![
        "sign",
        &*s(&st.report).leak(),
        "--key",
        &*s(key).leak(),
        "--model",
        "agent-7b",
        "--model-path",
        &*s(&st.model).leak(),
    ];
    let config = s(&st.config);
    args.extend(["--target", &*config.leak(), "--out", &*s(&envelope).leak()]);
    args.extend(extra);
    let out = run(&args);
    assert!(out.status.success(), "{}", stderr(&out));
    envelope
}

/// `sign` of the setup's report with `key` into `envelope`, `extra` added; its output.
fn sign_to(st: &Setup, key: &Path, envelope: &Path, extra: &[&str]) -> Output {
    let mut args = vec![
        "sign".to_owned(),
        s(&st.report),
        "--key".into(),
        s(key),
        "--model".into(),
        "agent-7b".into(),
        "--model-path".into(),
        s(&st.model),
        "--target".into(),
        s(&st.config),
        "--out".into(),
        s(envelope),
    ];
    args.extend(extra.iter().map(|a| a.to_string()));
    run(&args)
}

/// `verify` of `envelope` against the setup's key, model and target, `extra` added.
fn verify_of(st: &Setup, envelope: &Path, extra: &[&str]) -> Output {
    let mut args = vec![
        "verify".to_owned(),
        s(envelope),
        "--trusted-key".into(),
        s(&st.public),
        "--model-path".into(),
        s(&st.model),
        "--target".into(),
        s(&st.config),
    ];
    args.extend(extra.iter().map(|a| a.to_string()));
    run(&args)
}

/// A parity fixture's five input files as `verify --reproduce` takes them.
fn input_flags(fixture: &Path) -> Vec<String> {
    [
        ("--audit", "audit.jsonl"),
        ("--old-verdicts", "old_verdicts.jsonl"),
        ("--new-verdicts", "new_verdicts.jsonl"),
        ("--old-trajectories", "old_trajectories.jsonl"),
        ("--new-trajectories", "new_trajectories.jsonl"),
    ]
    .into_iter()
    .flat_map(|(flag, file)| [flag.to_owned(), s(&fixture.join(file))])
    .collect()
}

/// The ids of the report's regressed cases, as the report writes them (JSON).
fn regressed_ids(report: &Path) -> Vec<String> {
    let report: Value = serde_json::from_str(&fs::read_to_string(report).unwrap()).unwrap();
    report["cases"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|c| c["status"] == "regressed")
        .map(|c| c["pipeline_id"].to_string())
        .collect()
}

#[test]
fn keygen_writes_a_private_key_only_its_owner_reads_and_prints_the_key_id() {
    let st = setup("approved");
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        assert_eq!(fs::metadata(&st.key).unwrap().permissions().mode() & 0o777, 0o600);
    }
    let der = openssl(&["pkey", "-pubin", "-in", &s(&st.public), "-outform", "DER"]).stdout;
    let want = hex::encode(<sha2::Sha256 as sha2::Digest>::digest(&der));
    let again = run(&["keygen", "--out", &s(&st.dir.path().join("reviewer"))]);
    assert_eq!(again.status.code(), Some(1), "keygen never overwrites a key");
    let other = st.dir.path().join("other");
    let out = run(&["keygen", "--out", &s(&other)]);
    let printed = String::from_utf8(out.stdout).unwrap().trim().to_owned();
    let der = openssl(&[
        "pkey",
        "-pubin",
        "-in",
        &format!("{}.pub.pem", s(&other)),
        "-outform",
        "DER",
    ])
    .stdout;
    assert_eq!(printed, hex::encode(<sha2::Sha256 as sha2::Digest>::digest(&der)));
    assert_eq!(want.len(), 64);
    // openssl reads our private key too.
    openssl(&["pkey", "-in", &s(&st.key), "-noout"]);
}

#[test]
fn digest_of_a_file_and_of_a_directory() {
    let st = setup("approved");
    let file = st.model.join("config.json");
    let out = run(&["digest", &s(&file)]);
    let file_hex = hex::encode(<sha2::Sha256 as sha2::Digest>::digest(b"{\"layers\": 32}"));
    assert_eq!(
        String::from_utf8(out.stdout).unwrap().trim(),
        format!("sha256:{file_hex}")
    );
    let part_hex = hex::encode(<sha2::Sha256 as sha2::Digest>::digest([1u8, 2, 3]));
    let listing = format!("config.json\0{file_hex}\nweights/part-0.bin\0{part_hex}\n");
    let want = hex::encode(<sha2::Sha256 as sha2::Digest>::digest(listing.as_bytes()));
    let out = run(&["digest", &s(&st.model)]);
    assert_eq!(String::from_utf8(out.stdout).unwrap().trim(), format!("sha256:{want}"));
}

#[test]
fn an_openssl_key_signs_and_openssl_checks_the_signature() {
    let st = setup("approved");
    let key = st.dir.path().join("openssl.key.pem");
    let public = st.dir.path().join("openssl.pub.pem");
    openssl(&["genpkey", "-algorithm", "ed25519", "-out", &s(&key)]);
    openssl(&["pkey", "-in", &s(&key), "-pubout", "-out", &s(&public)]);
    let envelope = sign(&st, &key, &[]);
    let out = run(&[
        "verify",
        &s(&envelope),
        "--trusted-key",
        &s(&public),
        "--model-path",
        &s(&st.model),
        "--target",
        &s(&st.config),
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    // openssl verifies the DSSE signature over PAE(payloadType, payload).
    let env: Value = serde_json::from_slice(&fs::read(&envelope).unwrap()).unwrap();
    let payload = deploy_gate::attest::dsse::decode(env["payload"].as_str().unwrap()).unwrap();
    let pae = deploy_gate::attest::dsse::pae(env["payloadType"].as_str().unwrap(), &payload);
    let sig = deploy_gate::attest::dsse::decode(env["signatures"][0]["sig"].as_str().unwrap()).unwrap();
    fs::write(st.dir.path().join("pae.bin"), pae).unwrap();
    fs::write(st.dir.path().join("sig.bin"), sig).unwrap();
    openssl(&[
        "pkeyutl",
        "-verify",
        "-pubin",
        "-inkey",
        &s(&public),
        "-rawin",
        "-in",
        &s(&st.dir.path().join("pae.bin")),
        "-sigfile",
        &s(&st.dir.path().join("sig.bin")),
    ]);
}

#[test]
fn sign_verify_reproduce_apply_replay_and_rollback() {
    let st = setup("approved");
    let envelope = sign(&st, &st.key, &[]);
    let common = |cmd: &str| vec![cmd.to_owned(), s(&envelope), "--trusted-key".into(), s(&st.public)];

    let mut args = common("verify");
    args.extend([
        "--model-path".into(),
        s(&st.model),
        "--target".into(),
        s(&st.config),
        "--reproduce".into(),
    ]);
    let fixture = parity_dir().join("approved");
    args.extend(input_flags(&fixture));
    let out = run(&args);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let v = json_stdout(&out);
    assert_eq!(
        (v["valid"].as_bool(), v["verification_result"].as_str()),
        (Some(true), Some("PASSED"))
    );

    // --reproduce with other files: the decision or the digests differ.
    let mut other = args.clone();
    let i = other.iter().position(|a| a == "--new-verdicts").unwrap();
    other[i + 1] = s(&fixture.join("old_verdicts.jsonl"));
    let out = run(&other);
    assert_eq!(out.status.code(), Some(2));
    assert_eq!(json_stdout(&out)["check"], "reproduce");

    let mut wrong_target = common("verify");
    wrong_target.extend([
        "--model-path".into(),
        s(&st.model),
        "--target".into(),
        "file:/etc/other.yaml".into(),
    ]);
    let out = run(&wrong_target);
    assert_eq!(out.status.code(), Some(2));
    assert_eq!(json_stdout(&out)["check"], "target");
    assert!(stderr(&out).contains("verification failed (target)"));

    let mut wrong_model = common("verify");
    wrong_model.extend([
        "--model-digest".into(),
        format!("sha256:{}", "0".repeat(64)),
        "--target".into(),
        s(&st.config),
    ]);
    assert_eq!(json_stdout(&run(&wrong_model))["check"], "subject_digest");

    let ledger = st.dir.path().join("ledger.jsonl");
    let mut apply = common("apply");
    apply.extend([
        "--model-path".into(),
        s(&st.model),
        "--config".into(),
        s(&st.config),
        "--backend".into(),
        "vllm".into(),
        "--ledger".into(),
        s(&ledger),
    ]);
    let mut dry = apply.clone();
    dry.push("--dry-run".into());
    assert_eq!(run(&dry).status.code(), Some(0));
    assert_eq!(
        fs::read_to_string(&st.config).unwrap(),
        CONFIG,
        "a dry run changes nothing"
    );

    let out = run(&apply);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let deployed = fs::read_to_string(&st.config).unwrap();
    assert_eq!(
        deployed,
        format!(
            "# serving config\nbackend: \"vllm\"\ndefault_model: \"{}\"\nport: 8080\n",
            s(&st.model)
        )
    );
    assert_eq!(
        fs::read_to_string(format!("{}.backup", s(&st.config))).unwrap(),
        CONFIG,
        "a byte-identical backup"
    );
    let entry: Value = serde_json::from_str(fs::read_to_string(&ledger).unwrap().lines().last().unwrap()).unwrap();
    assert_eq!(entry["result"], "deployed");

    let out = run(&apply);
    assert_eq!(out.status.code(), Some(2), "a replay is refused");
    assert_eq!(json_stdout(&out)["check"], "replayed");

    let out = run(&["rollback", "--config", &s(&st.config)]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(fs::read_to_string(&st.config).unwrap(), CONFIG);
    let nothing = st.dir.path().join("none.yaml");
    assert_eq!(run(&["rollback", "--config", &s(&nothing)]).status.code(), Some(1));
}

#[test]
fn a_failed_decision_keeps_the_old_model_and_the_config_byte_identical() {
    let st = setup("both-regressed");
    let envelope = sign(&st, &st.key, &[]);
    let marker = st.dir.path().join("rolled-back");
    let script = st.dir.path().join("rollback.sh");
    fs::write(
        &script,
        "#!/bin/sh\necho \"$DEPLOY_GATE_DECISION $DEPLOY_GATE_REASON\" > \"$1\"\n",
    )
    .unwrap();
    let out = run(&[
        "apply",
        &s(&envelope),
        "--trusted-key",
        &s(&st.public),
        "--model-path",
        &s(&st.model),
        "--config",
        &s(&st.config),
        "--rollback-cmd",
        "/bin/sh",
        &s(&script),
        &s(&marker),
        ";",
    ]);
    assert_eq!(out.status.code(), Some(3), "{}", stderr(&out));
    assert_eq!(fs::read(&st.config).unwrap(), CONFIG.as_bytes());
    assert!(!Path::new(&format!("{}.backup", s(&st.config))).exists());
    assert_eq!(
        fs::read_to_string(&marker).unwrap(),
        "FAILED blocked: task AND trajectory regressed\n"
    );
}

#[test]
fn a_deploy_command_gets_values_in_its_environment_never_through_a_shell() {
    let st = setup("approved");
    // A model path full of shell syntax: it must arrive as one plain value.
    let model = st.dir.path().join("m; touch pwned $(touch pwned2)");
    fs::rename(&st.model, &model).unwrap();
    let st = Setup { model, ..st };
    let envelope = sign(&st, &st.key, &[]);
    let seen = st.dir.path().join("seen.txt");
    let script = st.dir.path().join("deploy.sh");
    fs::write(&script, "#!/bin/sh\nprintf '%s\\n' \"$DEPLOY_GATE_MODEL_PATH\" \"$DEPLOY_GATE_DECISION\" \"$DEPLOY_GATE_MODEL_NAME\" \"$2\" > \"$1\"\n").unwrap();
    let out = dg()
        .current_dir(st.dir.path())
        .args([
            "apply",
            &s(&envelope),
            "--trusted-key",
            &s(&st.public),
            "--model-path",
            &s(&st.model),
            "--config",
            &s(&st.config),
        ])
        .args([
            "--deploy-cmd",
            "/bin/sh",
            &s(&script),
            &s(&seen),
            "--flag-like-arg",
            ";",
            "--dry-run",
        ])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(
        !seen.exists(),
        "--dry-run after the command list still counts as a flag"
    );
    let out = dg()
        .current_dir(st.dir.path())
        .args([
            "apply",
            &s(&envelope),
            "--trusted-key",
            &s(&st.public),
            "--model-path",
            &s(&st.model),
            "--config",
            &s(&st.config),
        ])
        .args([
            "--deploy-cmd",
            "/bin/sh",
            &s(&script),
            &s(&seen),
            "--flag-like-arg",
            ";",
        ])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(
        fs::read_to_string(&seen).unwrap(),
        format!("{}\nPASSED\nagent-7b\n--flag-like-arg\n", s(&st.model))
    );
    assert!(!st.dir.path().join("pwned").exists() && !st.dir.path().join("pwned2").exists());
    assert_eq!(
        fs::read_to_string(&st.config).unwrap(),
        CONFIG,
        "a deploy command replaces the built-in edit"
    );
}

#[test]
fn two_person_approval_with_a_threshold() {
    let st = setup("approved");
    let second = st.dir.path().join("second");
    assert!(run(&["keygen", "--out", &s(&second)]).status.success());
    let second_key = st.dir.path().join("second.key.pem");
    let second_pub = st.dir.path().join("second.pub.pem");
    let first = sign(&st, &st.key, &[]);
    let both = st.dir.path().join("both.dsse.json");
    let out = run(&[
        "sign",
        &s(&st.report),
        "--key",
        &s(&second_key),
        "--model",
        "agent-7b",
        "--model-path",
        &s(&st.model),
        "--target",
        &s(&st.config),
        "--envelope",
        &s(&first),
        "--out",
        &s(&both),
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    let verify = |env: &Path, keys: &[&Path], threshold: &str| {
        let mut args = vec![
            "verify".to_owned(),
            s(env),
            "--threshold".into(),
            threshold.into(),
            "--model-path".into(),
            s(&st.model),
            "--target".into(),
            s(&st.config),
        ];
        for k in keys {
            args.extend(["--trusted-key".into(), s(k)]);
        }
        run(&args)
    };
    assert_eq!(verify(&both, &[&st.public, &second_pub], "2").status.code(), Some(0));
    let out = verify(&first, &[&st.public, &second_pub], "2");
    assert_eq!(out.status.code(), Some(2));
    assert_eq!(json_stdout(&out)["check"], "signature");
    assert_eq!(
        verify(&both, &[&st.public], "2").status.code(),
        Some(2),
        "one trusted key cannot count twice"
    );
}

#[test]
fn a_review_is_signed_with_the_decision_shown_by_verify_and_checked_against_its_file() {
    let st = setup("both-regressed");
    let regressed = regressed_ids(&st.report);
    assert!(regressed.len() >= 2, "{regressed:?}");
    // The first regressed case accepted, then marked again (the later line counts), with a note.
    let review = st.dir.path().join("review.jsonl");
    let first = &regressed[0];
    let text = format!(
        "{{\"pipeline_id\": {first}, \"mark\": \"needs_fix\"}}\n{{\"pipeline_id\": {first}, \"mark\": \"accepted\", \"note\": \"<b>known</b>\", \"time\": \"2026-12-07T10:00:00Z\"}}\n{{\"pipeline_id\": \"not-a-case\", \"mark\": \"label_wrong\"}}\n"
    );
    fs::write(&review, &text).unwrap();
    let sha = hex::encode(<sha2::Sha256 as sha2::Digest>::digest(text.as_bytes()));
    let envelope = st.dir.path().join("reviewed.dsse.json");
    let out = sign_to(&st, &st.key, &envelope, &["--review", &s(&review)]);
    assert!(out.status.success(), "{}", stderr(&out));
    let want = format!(
        "1 accepted, 1 label_wrong, 0 needs_fix; 1 of {} regressed case(s) marked (sha256:{sha}, {} bytes)",
        regressed.len(),
        text.len()
    );
    assert!(stderr(&out).contains(&want), "{}", stderr(&out));

    let out = verify_of(&st, &envelope, &[]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let v = json_stdout(&out);
    assert_eq!(v["review"]["sha256"], sha);
    assert_eq!(
        v["review"]["marks"],
        serde_json::json!({"accepted": 1, "label_wrong": 1, "needs_fix": 0})
    );
    assert_eq!(v["review"]["regressed"]["marked"], 1);
    assert!(
        stderr(&out).contains(&format!("signed with a review: {want}")),
        "{}",
        stderr(&out)
    );
    // The file given is the one pinned.
    let out = verify_of(&st, &envelope, &["--review", &s(&review)]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(stderr(&out).contains("signed with a review (the file given)"));
    // A statement whose pin claims other counts for this very file (re-signed by the key's
    // holder): `--review` recomputes them from the file and refuses.
    {
        use deploy_gate::attest::{dsse, keys, REVIEW_KEY};
        let good: dsse::Envelope = serde_json::from_str(&fs::read_to_string(&envelope).unwrap()).unwrap();
        let mut statement: Value = serde_json::from_slice(&dsse::decode(&good.payload).unwrap()).unwrap();
        statement["predicate"][REVIEW_KEY]["regressed"]["marked"] = regressed.len().into();
        let payload = serde_json::to_vec(&statement).unwrap();
        let key = keys::read_private_pem(&fs::read_to_string(&st.key).unwrap()).unwrap();
        let sig = ed25519_dalek::Signer::sign(&key, &dsse::pae(dsse::PAYLOAD_TYPE, &payload));
        let forged = st.dir.path().join("forged.dsse.json");
        let forged_envelope = dsse::Envelope {
            payload_type: dsse::PAYLOAD_TYPE.into(),
            payload: dsse::encode(&payload),
            signatures: vec![dsse::Signature {
                keyid: String::new(),
                sig: dsse::encode(&sig.to_bytes()),
            }],
        };
        fs::write(&forged, serde_json::to_vec(&forged_envelope).unwrap()).unwrap();
        assert_eq!(
            verify_of(&st, &forged, &[]).status.code(),
            Some(0),
            "the pin alone is the signer's word"
        );
        let out = verify_of(&st, &forged, &["--review", &s(&review)]);
        assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
        assert_eq!(json_stdout(&out)["check"], "review");
        assert!(
            stderr(&out).contains("the statement says the review file gives"),
            "{}",
            stderr(&out)
        );
    }
    // Another file (one byte more) is refused, naming the check.
    let other = st.dir.path().join("other.jsonl");
    fs::write(&other, format!("{text}\n")).unwrap();
    let out = verify_of(&st, &envelope, &["--review", &s(&other)]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert_eq!(json_stdout(&out)["check"], "review");
    // Reproducing needs the review file too.
    let mut inputs = vec!["--reproduce".to_owned()];
    inputs.extend(input_flags(&parity_dir().join("both-regressed")));
    let mut flags: Vec<&str> = inputs.iter().map(String::as_str).collect();
    let out = verify_of(&st, &envelope, &flags);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert_eq!(json_stdout(&out)["check"], "review");
    assert!(stderr(&out).contains("give its file with --review"), "{}", stderr(&out));
    let review_path = s(&review);
    flags.extend(["--review", &review_path]);
    let out = verify_of(&st, &envelope, &flags);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    // A decision signed without a review: no `review` in the summary, and `--review` is refused.
    let plain = sign(&st, &st.key, &[]);
    assert!(json_stdout(&verify_of(&st, &plain, &[])).get("review").is_none());
    let out = verify_of(&st, &plain, &["--review", &review_path]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert_eq!(json_stdout(&out)["check"], "review");
    assert!(stderr(&out).contains("signed without a review"), "{}", stderr(&out));
    // A co-signer must give the same review.
    let second = st.dir.path().join("second");
    assert!(run(&["keygen", "--out", &s(&second)]).status.success());
    let second_key = st.dir.path().join("second.key.pem");
    let both = st.dir.path().join("both.dsse.json");
    let envelope_path = s(&envelope);
    let out = sign_to(
        &st,
        &second_key,
        &both,
        &["--envelope", &envelope_path, "--review", &s(&other)],
    );
    assert_eq!(out.status.code(), Some(1));
    assert!(
        stderr(&out).contains("its review differs from the one given"),
        "{}",
        stderr(&out)
    );
    assert!(sign_to(
        &st,
        &second_key,
        &both,
        &["--envelope", &envelope_path, "--review", &review_path]
    )
    .status
    .success());
    // A bad review file: an error naming the file and line, nothing signed.
    fs::write(&other, format!("{text}{{\"pipeline_id\": 1, \"mark\": \"maybe\"}}\n")).unwrap();
    let bad = st.dir.path().join("bad.dsse.json");
    let out = sign_to(&st, &st.key, &bad, &["--review", &s(&other)]);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        stderr(&out).contains(&format!("{}:4: `mark` must be", s(&other))),
        "{}",
        stderr(&out)
    );
    assert!(!bad.exists());
}

#[test]
fn a_policy_that_requires_a_review_refuses_to_sign_until_every_regressed_case_is_marked() {
    let st = setup("both-regressed");
    // The same evaluation under a policy file that adds `review: {require: regressed}`.
    let policy = st.dir.path().join("policy.json");
    fs::write(&policy, r#"{"review": {"require": "regressed"}}"#).unwrap();
    let mut args = evaluate_args(&parity_dir().join("both-regressed"));
    args.extend(["--policy".into(), s(&policy), "--out".into(), s(&st.report)]);
    let out = run(&args);
    assert!(matches!(out.status.code(), Some(0 | 3)), "{}", stderr(&out));
    let report: Value = serde_json::from_str(&fs::read_to_string(&st.report).unwrap()).unwrap();
    assert_eq!(report["policy"]["review"], serde_json::json!({"require": "regressed"}));
    let regressed = regressed_ids(&st.report);
    let envelope = st.dir.path().join("decision.dsse.json");
    // No review: refused, every regressed case named.
    let out = sign_to(&st, &st.key, &envelope, &[]);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let n = regressed.len();
    let all = regressed.join(", ");
    assert!(
        stderr(&out).contains(&format!("{n} of {n} unmarked, no review given (--review FILE): {all}")),
        "{}",
        stderr(&out)
    );
    assert!(!envelope.exists());
    // One case unmarked: refused, naming it.
    let review = st.dir.path().join("review.jsonl");
    let review_path = s(&review);
    let lines: Vec<String> = regressed
        .iter()
        .map(|id| format!("{{\"pipeline_id\": {id}, \"mark\": \"accepted\"}}\n"))
        .collect();
    fs::write(&review, lines[1..].concat()).unwrap();
    let out = sign_to(&st, &st.key, &envelope, &["--review", &review_path]);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        stderr(&out).contains(&format!("1 of {n} unmarked: {}", regressed[0])),
        "{}",
        stderr(&out)
    );
    assert!(!envelope.exists());
    // Every regressed case marked: signed, and it verifies.
    fs::write(&review, lines.concat()).unwrap();
    let out = sign_to(&st, &st.key, &envelope, &["--review", &review_path]);
    assert!(out.status.success(), "{}", stderr(&out));
    let out = verify_of(&st, &envelope, &[]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(
        json_stdout(&out)["review"]["regressed"],
        serde_json::json!({"cases": n, "marked": n})
    );
}
