//! `deploy-gate verify` (and the verify step of `apply`) against crafted envelopes, through the
//! real binary: keys counted once however they are given, statements with a key twice,
//! several subjects, size and count limits, impossible times.

use crate::common::*;
use deploy_gate::attest::dsse::{self, Envelope, Signature};
use deploy_gate::attest::keys::{keyid, read_private_pem, read_public_pem};
use ed25519_dalek::{Signer, SigningKey};
use serde_json::{json, Value};
use std::fs;
use std::path::{Path, PathBuf};
use std::process::Output;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

struct Setup {
    dir: tempfile::TempDir,
    model: PathBuf,
    target: String,
    envelope: PathBuf,
    key: SigningKey,
    public: PathBuf,
    /// The model's digest, hex.
    digest: String,
}

/// A reviewer key, an approved report signed with it for a model directory and a target.
fn setup() -> Setup {
    let dir = tempdir();
    let report = dir.path().join("report.json");
    let mut args = evaluate_args(&parity_dir().join("approved"));
    args.extend(["--out".into(), s(&report)]);
    let out = run(&args);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let model = dir.path().join("agent-7b-v2");
    fs::create_dir_all(&model).unwrap();
    fs::write(model.join("weights.bin"), [7u8; 64]).unwrap();
    let target = s(&dir.path().join("config.yaml"));
    let name = dir.path().join("reviewer");
    let out = run(&["keygen", "--out", &s(&name)]);
    assert!(out.status.success(), "{}", stderr(&out));
    let key_path = dir.path().join("reviewer.key.pem");
    let envelope = dir.path().join("decision.dsse.json");
    let out = run(&[
        "sign",
        &s(&report),
        "--key",
        &s(&key_path),
        "--model",
        "agent-7b",
        "--model-path",
        &s(&model),
        "--target",
        &target,
        "--out",
        &s(&envelope),
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    // `sign --model-path` names the model by its OpenSSF Model Signing digest.
    let digest = String::from_utf8(run(&["digest", "--oms", &s(&model)]).stdout).unwrap();
    let digest = digest.trim().strip_prefix("sha256:").unwrap().to_owned();
    Setup {
        key: read_private_pem(&fs::read_to_string(&key_path).unwrap()).unwrap(),
        public: dir.path().join("reviewer.pub.pem"),
        dir,
        model,
        target,
        envelope,
        digest,
    }
}

impl Setup {
    /// The signed statement's text.
    fn payload(&self) -> String {
        let env: Envelope = serde_json::from_slice(&fs::read(&self.envelope).unwrap()).unwrap();
        String::from_utf8(dsse::decode(&env.payload).unwrap()).unwrap()
    }

    /// An envelope of `payload` signed by each of `keys`, written to `name`.
    fn signed(&self, name: &str, payload: &str, keys: &[&SigningKey]) -> PathBuf {
        let pae = dsse::pae(dsse::PAYLOAD_TYPE, payload.as_bytes());
        let env = Envelope {
            payload_type: dsse::PAYLOAD_TYPE.into(),
            payload: dsse::encode(payload.as_bytes()),
            signatures: keys
                .iter()
                .map(|k| Signature {
                    keyid: keyid(&k.verifying_key()),
                    sig: dsse::encode(&k.sign(&pae).to_bytes()),
                })
                .collect(),
        };
        let path = self.dir.path().join(name);
        fs::write(&path, serde_json::to_vec(&env).unwrap()).unwrap();
        path
    }

    /// The statement with one text edit, signed by the reviewer.
    fn edited(&self, name: &str, needle: &str, replacement: &str) -> PathBuf {
        let payload = self.payload();
        assert_eq!(payload.matches(needle).count(), 1, "`{needle}` once in the statement");
        self.signed(name, &payload.replacen(needle, replacement, 1), &[&self.key])
    }

    /// `verify ENVELOPE --trusted-key <reviewer> --model-path MODEL --target TARGET` + extra.
    fn verify(&self, envelope: &Path, extra: &[&str]) -> Output {
        let mut args = vec![
            "verify".to_owned(),
            s(envelope),
            "--model-path".into(),
            s(&self.model),
            "--target".into(),
            self.target.clone(),
        ];
        if !extra.contains(&"--trusted-key") {
            args.extend(["--trusted-key".into(), s(&self.public)]);
        }
        args.extend(extra.iter().map(|a| a.to_string()));
        run(&args)
    }
}

/// Exit 2 with the named check (on stdout and stderr); returns the message.
fn refused(out: &Output, check: &str) -> String {
    assert_eq!(
        out.status.code(),
        Some(2),
        "expected the check {check}: {}",
        stderr(out)
    );
    let v = json_stdout(out);
    assert_eq!(
        (v["valid"].as_bool(), v["check"].as_str()),
        (Some(false), Some(check)),
        "{v}"
    );
    assert!(
        stderr(out).contains(&format!("verification failed ({check})")),
        "{}",
        stderr(out)
    );
    v["message"].as_str().unwrap().to_owned()
}

fn valid(out: &Output) -> Value {
    assert_eq!(out.status.code(), Some(0), "{}", stderr(out));
    let v = json_stdout(out);
    assert_eq!(v["valid"], true);
    v
}

// ------------------------------------------------------------------------------ item 1

#[test]
fn a_key_given_twice_in_a_copied_file_or_with_crlf_counts_once() {
    let st = setup();
    let copy = st.dir.path().join("copy-of-reviewer.pub.pem");
    fs::copy(&st.public, &copy).unwrap();
    let crlf = st.dir.path().join("reviewer-crlf.pub.pem");
    let pem = fs::read_to_string(&st.public).unwrap();
    fs::write(&crlf, pem.replace('\n', "\r\n")).unwrap();
    let reread = read_public_pem(&fs::read_to_string(&crlf).unwrap()).unwrap();
    assert_eq!(reread, st.key.verifying_key(), "the CRLF spelling is the same key");
    let (a, c, r) = (s(&st.public), s(&copy), s(&crlf));

    // One signature, one key given three ways: a threshold of 2 can never be met.
    for keys in [vec![&a, &a], vec![&a, &c], vec![&a, &r], vec![&a, &c, &r]] {
        let mut args = vec!["--threshold", "2"];
        for k in &keys {
            args.extend(["--trusted-key", k.as_str()]);
        }
        let message = refused(&st.verify(&st.envelope, &args), "threshold");
        assert!(message.contains("1 distinct public key"), "{message}");
    }
    // With a threshold of 1 the key is listed once among the signers.
    let v = valid(&st.verify(
        &st.envelope,
        &["--trusted-key", &a, "--trusted-key", &c, "--trusted-key", &r],
    ));
    assert_eq!(v["signers"], json!([keyid(&st.key.verifying_key())]));

    // A second reviewer: two distinct keys are needed, and given twice or in two files one of
    // them is still one.
    let second = SigningKey::from_bytes(&[42; 32]);
    let second_pub = st.dir.path().join("second.pub.pem");
    fs::write(
        &second_pub,
        deploy_gate::attest::keys::public_pem(&second.verifying_key()),
    )
    .unwrap();
    let b = s(&second_pub);
    let payload = st.payload();
    let only_first = st.signed("first.dsse.json", &payload, &[&st.key, &st.key]);
    let out = st.verify(
        &only_first,
        &[
            "--threshold",
            "2",
            "--trusted-key",
            &a,
            "--trusted-key",
            &r,
            "--trusted-key",
            &c,
            "--trusted-key",
            &b,
        ],
    );
    let message = refused(&out, "signature");
    assert!(message.starts_with("1 of the required 2"), "{message}");
    let both = st.signed("both.dsse.json", &payload, &[&st.key, &second, &st.key]);
    let v = valid(&st.verify(
        &both,
        &[
            "--threshold",
            "2",
            "--trusted-key",
            &a,
            "--trusted-key",
            &r,
            "--trusted-key",
            &b,
        ],
    ));
    assert_eq!(
        v["signers"],
        json!([keyid(&st.key.verifying_key()), keyid(&second.verifying_key())])
    );
    let message = refused(
        &st.verify(
            &both,
            &[
                "--threshold",
                "3",
                "--trusted-key",
                &a,
                "--trusted-key",
                &c,
                "--trusted-key",
                &b,
            ],
        ),
        "threshold",
    );
    assert!(
        message.contains("threshold of 3") && message.contains("2 distinct"),
        "{message}"
    );
}

// ------------------------------------------------------------------------------ item 3

#[test]
fn a_key_twice_anywhere_in_the_statement_is_refused_with_its_own_check() {
    let st = setup();
    let payload = st.payload();
    valid(&st.verify(&st.signed("resigned.dsse.json", &payload, &[&st.key]), &[]));
    let decoy = "cd".repeat(32);
    let report_decision = "\"decision\":{\"approved\":true";
    let cases: Vec<(&str, String, String, &str)> = vec![
        (
            "verificationResult, FAILED then PASSED",
            "\"verificationResult\":\"PASSED\"".into(),
            "\"verificationResult\":\"FAILED\",\"verificationResult\":\"PASSED\"".into(),
            "verificationResult",
        ),
        (
            "the same key spelt with an escape",
            "\"verificationResult\":\"PASSED\"".into(),
            "\"verificationResul\\u0074\":\"FAILED\",\"verificationResult\":\"PASSED\"".into(),
            "verificationResult",
        ),
        (
            "subject",
            "\"subject\":[".into(),
            format!("\"subject\":[{{\"name\":\"decoy\",\"digest\":{{\"sha256\":\"{decoy}\"}}}}],\"subject\":["),
            "subject",
        ),
        (
            "predicate",
            "\"predicate\":{".into(),
            "\"predicate\":{\"verificationResult\":\"FAILED\"},\"predicate\":{".into(),
            "predicate",
        ),
        (
            "decision.approved inside the embedded report",
            report_decision.into(),
            "\"decision\":{\"approved\":false,\"approved\":true".into(),
            "approved",
        ),
        (
            "a subject's digest",
            format!("{{\"sha256\":\"{}\"}}", st.digest),
            format!("{{\"sha256\":\"{decoy}\",\"sha256\":\"{}\"}}", st.digest),
            "sha256",
        ),
    ];
    for (i, (what, needle, replacement, key)) in cases.iter().enumerate() {
        let envelope = st.edited(&format!("dup-{i}.dsse.json"), needle, replacement);
        let message = refused(&st.verify(&envelope, &[]), "duplicate_key");
        assert!(message.contains(&format!("`{key}`")), "{what}: {message}");
    }
    // The message says where: the embedded report's decision object.
    let envelope = st.edited(
        "dup-where.dsse.json",
        report_decision,
        "\"decision\":{\"approved\":false,\"approved\":true",
    );
    let message = refused(&st.verify(&envelope, &[]), "duplicate_key");
    assert!(
        message.contains("/predicate/https:~1~1deploy-gate.dev~1report~1v1/decision"),
        "{message}"
    );
}

// ------------------------------------------------------------------------------ item 4

#[test]
fn with_several_subjects_the_one_that_matched_is_reported_and_passed_to_the_deploy() {
    let st = setup();
    let decoy = "cd".repeat(32);
    let real = format!(
        "{{\"name\":\"agent-7b\",\"digest\":{{\"sha256\":\"{}\"}},\"annotations\":{{\"digest_scheme\":\"oms-v1.0-files\"}}}}",
        st.digest
    );
    let decoy_subject = format!("{{\"name\":\"decoy-model\",\"digest\":{{\"sha256\":\"{decoy}\"}}}}");
    let envelope = st.edited(
        "several.dsse.json",
        &format!("\"subject\":[{real}]"),
        &format!("\"subject\":[{decoy_subject},{real}]"),
    );
    let v = valid(&st.verify(&envelope, &[]));
    assert_eq!(
        (
            v["model"].as_str(),
            v["model_digest"].as_str(),
            v["subject_index"].as_u64()
        ),
        (Some("agent-7b"), Some(&*format!("sha256:{}", st.digest)), Some(1)),
        "{v}"
    );
    // The other subject is the artifact: that one is reported.
    let v = valid(&run(&[
        "verify".into(),
        s(&envelope),
        "--trusted-key".into(),
        s(&st.public),
        "--model-digest".into(),
        format!("sha256:{decoy}"),
        "--target".into(),
        st.target.clone(),
    ]));
    assert_eq!(
        (v["model"].as_str(), v["subject_index"].as_u64()),
        (Some("decoy-model"), Some(0))
    );

    // apply hands the matched subject to the deploy command and writes it to the ledger.
    let seen = st.dir.path().join("seen.txt");
    let script = st.dir.path().join("deploy.sh");
    fs::write(
        &script,
        "#!/bin/sh\nprintf '%s\\n' \"$DEPLOY_GATE_MODEL_NAME\" \"$DEPLOY_GATE_MODEL_DIGEST\" > \"$1\"\n",
    )
    .unwrap();
    let config = st.dir.path().join("config.yaml");
    fs::write(&config, "backend: transformers\ndefault_model: /models/old\n").unwrap();
    let ledger = st.dir.path().join("ledger.jsonl");
    let out = run(&[
        "apply".into(),
        s(&envelope),
        "--trusted-key".into(),
        s(&st.public),
        "--model-path".into(),
        s(&st.model),
        "--config".into(),
        s(&config),
        "--target".into(),
        st.target.clone(),
        "--ledger".into(),
        s(&ledger),
        "--deploy-cmd".into(),
        "/bin/sh".into(),
        s(&script),
        s(&seen),
        ";".into(),
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(
        fs::read_to_string(&seen).unwrap(),
        format!("agent-7b\nsha256:{}\n", st.digest)
    );
    let ledger_text = fs::read_to_string(&ledger).unwrap();
    assert!(
        ledger_text.contains("agent-7b") && ledger_text.contains(&st.digest) && !ledger_text.contains("decoy"),
        "{ledger_text}"
    );

    // Two subjects with the artifact's digest but different names: which one is meant is
    // not known, so nothing is accepted.
    let twin = format!(
        "{{\"name\":\"agent-7b-twin\",\"digest\":{{\"sha256\":\"{}\"}}}}",
        st.digest
    );
    let envelope = st.edited(
        "twins.dsse.json",
        &format!("\"subject\":[{real}]"),
        &format!("\"subject\":[{twin},{real}]"),
    );
    let message = refused(&st.verify(&envelope, &[]), "ambiguous_subject");
    assert!(
        message.contains("agent-7b-twin") && message.contains("`agent-7b`"),
        "{message}"
    );
    // The same subject listed twice is one subject.
    let envelope = st.edited(
        "repeated.dsse.json",
        &format!("\"subject\":[{real}]"),
        &format!("\"subject\":[{real},{real}]"),
    );
    assert_eq!(valid(&st.verify(&envelope, &[]))["model"], "agent-7b");
}

// ------------------------------------------------------------------------------ item 18

/// An envelope of the statement with extra `signatures`: the reviewer's last.
fn with_junk_signatures(st: &Setup, name: &str, junk: usize) -> PathBuf {
    let mut env: Value = serde_json::from_slice(&fs::read(&st.envelope).unwrap()).unwrap();
    let real = env["signatures"][0].clone();
    let mut sigs: Vec<Value> = (0..junk)
        .map(|i| {
            let mut bytes = [0u8; 64];
            bytes[..8].copy_from_slice(&(i as u64).to_le_bytes());
            json!({"keyid": "", "sig": dsse::encode(&bytes)})
        })
        .collect();
    sigs.push(real);
    env["signatures"] = Value::Array(sigs);
    let path = st.dir.path().join(name);
    fs::write(&path, serde_json::to_vec(&env).unwrap()).unwrap();
    path
}

#[test]
fn signature_lists_over_the_limit_are_refused_before_any_is_checked() {
    let st = setup();
    // 16 signatures (the limit), the good one last: valid.
    valid(&st.verify(&with_junk_signatures(&st, "16.dsse.json", 15), &[]));
    let message = refused(
        &st.verify(&with_junk_signatures(&st, "17.dsse.json", 16), &[]),
        "signature_count",
    );
    assert!(
        message.contains("17 signatures") && message.contains("limit of 16"),
        "{message}"
    );
    let many = with_junk_signatures(&st, "100001.dsse.json", 100_000);
    let started = Instant::now();
    let message = refused(&st.verify(&many, &[]), "signature_count");
    assert!(message.contains("100001 signatures"), "{message}");
    assert!(
        started.elapsed() < Duration::from_secs(30),
        "counted, not checked: {:?}",
        started.elapsed()
    );
}

#[test]
fn envelopes_and_statements_over_the_size_limits_are_refused_before_they_are_read() {
    let st = setup();
    // Over the default envelope limit (96 MiB + 64 KiB): refused from its size alone.
    let big = st.dir.path().join("big.dsse.json");
    {
        let mut text = String::with_capacity(101 << 20);
        text.push_str("{\"payloadType\":\"application/vnd.in-toto+json\",\"payload\":\"");
        text.extend(std::iter::repeat_n('A', 100 << 20));
        text.push_str("\",\"signatures\":[{\"keyid\":\"\",\"sig\":\"\"}]}");
        fs::write(&big, text).unwrap();
    }
    let message = refused(&st.verify(&big, &[]), "envelope_size");
    assert!(message.contains("more than the limit of 100728832 bytes"), "{message}");
    // Raised, the same file is read (and then fails on its signature, as it should).
    refused(&st.verify(&big, &["--max-statement-size", "128M"]), "signature");
    fs::remove_file(&big).unwrap();

    // A statement over the limit in an envelope within it: refused before it is decoded.
    let padded = st.payload().replacen(
        "\"predicate\":{",
        &format!(
            "\"predicate\":{{\"https://example.com/padding\":\"{}\",",
            "x".repeat(100_000)
        ),
        1,
    );
    let envelope = st.signed("padded.dsse.json", &padded, &[&st.key]);
    let limit = padded.len() - 1000;
    let message = refused(
        &st.verify(&envelope, &["--max-statement-size", &limit.to_string()]),
        "statement_size",
    );
    assert!(
        message.contains(&format!("the statement is {} bytes", padded.len()))
            && message.contains(&format!("limit of {limit} bytes")),
        "{message}"
    );
    // With half of that, the envelope (1.5 times the limit + 64 KiB) is over its own limit.
    let half = (padded.len() / 2).to_string();
    refused(&st.verify(&envelope, &["--max-statement-size", &half]), "envelope_size");
    // The default holds it; so does a raised limit.
    valid(&st.verify(&envelope, &[]));
    valid(&st.verify(&envelope, &["--max-statement-size", "1M"]));
    valid(&st.verify(&envelope, &["--max-statement-size", &padded.len().to_string()]));
    let out = st.verify(&envelope, &["--max-statement-size", "lots"]);
    assert_eq!(out.status.code(), Some(1), "a bad size is a usage error");

    // From a pipe, whose size is not known beforehand: read up to the limit, then refused.
    let fifo = st.dir.path().join("envelope.fifo");
    let made = std::process::Command::new("mkfifo").arg(&fifo).status().unwrap();
    assert!(made.success());
    let writer = {
        let (fifo, bytes) = (fifo.clone(), fs::read(&envelope).unwrap());
        std::thread::spawn(move || {
            use std::io::Write;
            // The reader stops early: a broken pipe is expected.
            let _ = fs::OpenOptions::new()
                .write(true)
                .open(&fifo)
                .and_then(|mut f| f.write_all(&bytes));
        })
    };
    let message = refused(&st.verify(&fifo, &["--max-statement-size", &half]), "envelope_size");
    assert!(message.contains("more than the limit of"), "{message}");
    writer.join().unwrap();
}

#[test]
fn a_threshold_no_envelope_can_meet_is_refused_before_the_envelope_is_read() {
    let st = setup();
    let missing = st.dir.path().join("no-such-envelope.json");
    let a = s(&st.public);
    let message = refused(
        &st.verify(
            &missing,
            &["--threshold", "2", "--trusted-key", &a, "--trusted-key", &a],
        ),
        "threshold",
    );
    assert!(message.contains("threshold of 2"), "{message}");
    // With a reachable threshold, the missing file is an I/O error (exit 1) naming it.
    let out = st.verify(&missing, &[]);
    assert_eq!(out.status.code(), Some(1));
    assert!(stderr(&out).contains("no-such-envelope.json"), "{}", stderr(&out));
}

// ------------------------------------------------------------------------------ item 19

#[test]
fn a_malformed_or_impossible_time_is_refused_by_the_time_check_never_a_panic() {
    let st = setup();
    let payload = st.payload();
    let v: Value = serde_json::from_str(&payload).unwrap();
    let signed_time = v["predicate"]["timeVerified"].as_str().unwrap().to_owned();
    let now = SystemTime::now().duration_since(UNIX_EPOCH).unwrap().as_secs() as i64;
    let today = deploy_gate::attest::time::format_rfc3339(now);
    let date = &today[..10];
    for (i, bad) in [
        "2026-11-30T07:23:55+0é:0".to_owned(),
        format!("{date}T07:23:55+é0:00"),
        format!("{}+99:99", today.trim_end_matches('Z')),
        format!("{}+24:00", today.trim_end_matches('Z')),
        "2026-02-31T12:00:00Z".to_owned(),
        format!("{date}T24:00:00Z"),
        format!("{date}T12:60:00Z"),
        format!("{date}T12:00:60Z"),
        format!("{date}T12:00:00"),
        format!("{date}T12:00:00.Z"),
    ]
    .iter()
    .enumerate()
    {
        let envelope = st.edited(
            &format!("time-{i}.dsse.json"),
            &format!("\"timeVerified\":\"{signed_time}\""),
            &format!("\"timeVerified\":\"{bad}\""),
        );
        let out = st.verify(&envelope, &["--max-age", "100000d"]);
        let message = refused(&out, "time");
        assert!(message.contains("timeVerified"), "{bad}: {message}");
    }
}

// ------------------------------------------------------------------ operator inputs

#[test]
fn trusted_keys_are_read_to_a_bound_and_an_overlong_max_age_is_a_usage_error() {
    let st = setup();
    // A device given as a trusted key is read to 64 KiB, not without end.
    let out = st.verify(&st.envelope, &["--trusted-key", "/dev/zero"]);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    assert!(stderr(&out).contains("/dev/zero"), "{}", stderr(&out));
    let out = st.verify(&st.envelope, &["--max-age", "18446744073709551615s"]);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    assert!(stderr(&out).contains("too long a maximum age"), "{}", stderr(&out));
}

#[test]
fn a_model_directory_with_a_file_name_that_is_not_utf8_has_no_digest() {
    use std::os::unix::ffi::OsStringExt;
    let dir = tempdir();
    fs::write(dir.path().join(std::ffi::OsString::from_vec(b"w\xff".to_vec())), "W").unwrap();
    let out = run(&["digest", &s(dir.path())]);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    assert!(stderr(&out).contains("not UTF-8"), "{}", stderr(&out));
}
