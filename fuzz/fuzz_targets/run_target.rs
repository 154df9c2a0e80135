//! An endpoint file (`run --endpoint`), and what is read with it: whatever the bytes, reading never panics; a
//! refusal names the file; a target read twice has one digest; and for a target that is read,
//! a request body, a cache key, the secrets (from a fixed environment), a reply read from the
//! same bytes and the redaction of a text never panic, and the redacted text holds no secret.
#![no_main]

use deploy_gate::endpoint::read_endpoint as read_target;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let target = match read_target("t.yaml", data) {
        Ok(t) => t,
        Err(e) => {
            assert!(e.to_string().starts_with("t.yaml"), "{e}");
            return;
        }
    };
    let again = read_target("t.yaml", data).expect("read once, read twice");
    assert_eq!(target.digest, again.digest);
    let case: serde_json::Map<String, serde_json::Value> = serde_json::from_str(
        r#"{"pipeline_id": 7, "template_id": "t", "input_text": "x {{input_text}} ${KEY}", "expected_verdict": "PASS", "expected_stage_outputs": {"a": [1]}}"#,
    )
    .expect("a case");
    let body = target.body(&case);
    let _ = target.cache_key(body.as_ref(), b"{}", 0);
    let env = |name: &str| Some(format!("secret-value-of-{name}"));
    if let Ok(secrets) = target.secrets(&env) {
        let text = String::from_utf8_lossy(data);
        let redacted = secrets.redact(&text);
        for v in &secrets.values {
            assert!(!redacted.contains(v.as_str()), "{v:?} left in {redacted:?}");
        }
    }
    let _ = target.read_reply(data);
});
