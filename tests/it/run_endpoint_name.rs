//! The endpoint file's flag: `run --endpoint FILE`, and `run --target FILE`, its earlier name,
//! kept as a hidden alias that warns once; records written before the rename resume.

use crate::common::*;
use std::path::Path;

const WARNING: &str = "--target is now --endpoint";

fn fixture() -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/run-before-endpoint")
}

/// `run` of the fixture's endpoint over its test set with `flag` (`--endpoint`, `--target`).
fn run_with(flag: &str, out: &Path) -> std::process::Output {
    let f = fixture();
    run(&[
        "run",
        "--test-set",
        &s(&f.join("cases.jsonl")),
        flag,
        &s(&f.join("endpoint.json")),
        "--out",
        &s(out),
        "--no-cache",
    ])
}

/// A record without what varies from run to run (its latency).
fn steady(mut v: serde_json::Value) -> serde_json::Value {
    v.as_object_mut().unwrap().remove("latency_ms");
    v
}

#[test]
fn target_is_a_hidden_alias_of_endpoint_that_warns_once() {
    let dir = tempdir();
    let (by_endpoint, by_target) = (dir.path().join("e.jsonl"), dir.path().join("t.jsonl"));
    let e = run_with("--endpoint", &by_endpoint);
    assert!(e.status.success(), "{}", text(&e));
    assert!(!stderr(&e).contains(WARNING), "{}", stderr(&e));
    let t = run_with("--target", &by_target);
    assert!(t.status.success(), "{}", text(&t));
    let log = stderr(&t);
    assert_eq!(log.matches(WARNING).count(), 1, "{log}");
    assert!(
        log.starts_with("deploy-gate run: warning: --target is now --endpoint"),
        "{log}"
    );
    // The same records, the endpoint file's digest in each.
    let (a, b) = (jsonl(&by_endpoint), jsonl(&by_target));
    assert_eq!(a.len(), 3);
    assert_eq!(
        a.into_iter().map(steady).collect::<Vec<_>>(),
        b.into_iter().map(steady).collect::<Vec<_>>()
    );
    // Both at once are refused, as two endpoint files would be.
    let f = fixture();
    let both = run(&[
        "run",
        "--test-set",
        &s(&f.join("cases.jsonl")),
        "--endpoint",
        &s(&f.join("endpoint.json")),
        "--target",
        &s(&f.join("endpoint.json")),
        "--out",
        &s(&dir.path().join("x.jsonl")),
    ]);
    assert_eq!(both.status.code(), Some(1), "{}", text(&both));
    assert!(!dir.path().join("x.jsonl").exists());
}

#[test]
fn help_shows_endpoint_and_not_target() {
    let o = run(&["run", "--help"]);
    assert!(o.status.success(), "{}", text(&o));
    let help = String::from_utf8_lossy(&o.stdout);
    assert!(help.contains("--endpoint <FILE>"), "{help}");
    assert!(!help.contains("--target"), "{help}");
}

#[test]
fn records_written_before_the_rename_resume() {
    let f = fixture();
    let dir = tempdir();
    let out = dir.path().join("out.jsonl");
    let partial = std::fs::read(f.join("partial.jsonl")).unwrap();
    std::fs::write(&out, &partial).unwrap();
    let o = run_with("--endpoint", &out);
    assert!(o.status.success(), "{}", text(&o));
    let log = stderr(&o);
    assert!(log.contains("2 already answered (resumed)"), "{log}");
    assert!(log.contains("1 asked, 0 from the cache"), "{log}");
    // The two records of the earlier build kept byte for byte, the third added by this one.
    let bytes = std::fs::read(&out).unwrap();
    assert!(bytes.starts_with(&partial), "{}", String::from_utf8_lossy(&bytes));
    let records = jsonl(&out);
    assert_eq!(records.len(), 3);
    assert_eq!(records[2]["pipeline_id"], 3);
    assert_eq!(records[2]["verdict"], "FAIL");
    assert_eq!(
        records[2]["target"], records[0]["target"],
        "one endpoint file, one digest"
    );
    // And `evaluate`-side reading: the file is a verdict file whose ids are the test set's.
    let ids: Vec<_> = records.iter().map(|r| r["pipeline_id"].clone()).collect();
    assert_eq!(
        ids,
        [serde_json::json!(1), serde_json::json!("b"), serde_json::json!(3)]
    );
}
