//! `deploy-gate run` with real worker programs (Python and shell scripts written into a
//! temporary directory): every case answered once and read back by `evaluate`, concurrency,
//! workers that crash, hang past the timeout or write garbage, start-up failures, bad input,
//! SIGTERM, and resuming after `run` itself is killed with SIGKILL at random moments.

use crate::common::*;
use serde_json::Value;
use std::collections::HashMap;
use std::path::Path;
use std::process::Stdio;
use std::time::{Duration, Instant};

/// A fixture of 116 cases, three of them with integer ids.
fn fixture() -> std::path::PathBuf {
    parity_dir().join("trajectory-regressed").join("audit.jsonl")
}

/// Builds the whole test set of the fixture into `dir/cases.jsonl`; gives its path and lines.
fn test_set(dir: &Path) -> (String, Vec<Value>) {
    let path = dir.join("cases.jsonl");
    let o = run(&[
        "test-set",
        "--audit",
        &s(&fixture()),
        "--max-samples",
        "none",
        "--min-samples",
        "1",
        "--out",
        &s(&path),
    ]);
    assert!(o.status.success(), "{}", text(&o));
    let cases = lines(&path);
    assert!(cases.len() > 20, "the fixture gives a test set worth running");
    (s(&path), cases)
}

/// A file's lines as JSON.
fn lines(path: &Path) -> Vec<Value> {
    jsonl(path)
}

/// A worker script in `dir`, made executable.
fn script(dir: &Path, name: &str, body: &str) -> String {
    let path = write(dir, name, body);
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
    path
}

/// A Python worker answering each case with its expected verdict; `extra` runs first on each
/// case (with `case`, `cid` (the id as text) and `sys`, `os`, `time` in scope).
fn python_worker(dir: &Path, name: &str, extra: &str) -> String {
    let extra: String = extra.lines().map(|l| format!("    {l}\n")).collect();
    script(
        dir,
        name,
        &format!(
            "import json, os, sys, time\n\
             for line in sys.stdin:\n\
             \x20   case = json.loads(line)\n\
             \x20   cid = str(case['pipeline_id'])\n\
             {extra}\
             \x20   print(json.dumps({{'verdict': case['expected_verdict']}}), flush=True)\n"
        ),
    )
}

/// `deploy-gate run` over `cases` into `out` with these flags, then `--` and the program.
fn run_args(cases: &str, out: &Path, flags: &[&str], program: &[&str]) -> Vec<String> {
    let mut args = strings(&["run", "--test-set", cases, "--out", &s(out)]);
    args.extend(strings(flags));
    args.push("--".into());
    args.extend(strings(program));
    args
}

/// The records of an output file by id (as JSON text, so `7` and `"7"` differ), checking there
/// is one per case of `cases` and each has exactly the id's JSON type (and, after the verdict or
/// error, at most what its worker answered (`output`, `output_truncated`) and the `metrics` it
/// answered with, in that order).
fn records_by_id(out: &Path, cases: &[Value]) -> HashMap<String, Value> {
    let records = lines(out);
    let mut by_id = HashMap::new();
    for r in &records {
        let mut keys: Vec<&String> = r.as_object().unwrap().keys().collect();
        for optional in ["metrics", "output_truncated", "output"] {
            if keys.len() > 2 && keys[keys.len() - 1] == optional {
                keys.pop();
            }
        }
        assert!(
            keys == ["pipeline_id", "verdict"] || keys == ["pipeline_id", "error"],
            "a record is {{pipeline_id, verdict|error}} (then output, output_truncated, metrics): {r}"
        );
        let id = r["pipeline_id"].to_string();
        assert!(by_id.insert(id.clone(), r.clone()).is_none(), "one record for {id}");
    }
    for c in cases {
        assert!(
            by_id.contains_key(&c["pipeline_id"].to_string()),
            "a record for {}",
            c["pipeline_id"]
        );
    }
    assert_eq!(by_id.len(), cases.len(), "no record of another case");
    by_id
}

/// The id of the n-th case as the workers see it (`str()` of the JSON value).
fn cid(cases: &[Value], n: usize) -> String {
    match &cases[n]["pipeline_id"] {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

#[test]
fn every_case_gets_its_record_and_evaluate_reads_the_file() {
    let dir = tempdir();
    let (cases_path, cases) = test_set(dir.path());
    assert!(cases
        .iter()
        .any(|c| c["pipeline_id"].is_i64() || c["pipeline_id"].is_u64()));
    let worker = python_worker(dir.path(), "w.py", "");
    let out = dir.path().join("verdicts.jsonl");
    let o = run(&run_args(&cases_path, &out, &["--jobs", "3"], &["python3", &worker]));
    assert!(o.status.success(), "{}", text(&o));
    let n = cases.len();
    assert!(
        stderr(&o).contains(&format!("{n} cases in {}: {n} answered, 0 errored", s(&out))),
        "{}",
        text(&o)
    );

    // In test-set order at the end, each id with its JSON type, each verdict the worker's.
    let records = lines(&out);
    let ids = |v: &[Value]| v.iter().map(|r| r["pipeline_id"].clone()).collect::<Vec<_>>();
    assert_eq!(ids(&records), ids(&cases));
    for (r, c) in records.iter().zip(&cases) {
        assert_eq!(r["verdict"], c["expected_verdict"]);
    }
    records_by_id(&out, &cases);

    let policy = write(dir.path(), "policy.json", r#"{"min_samples": 1, "max_samples": null}"#);
    let report = dir.path().join("report.json");
    let o = run(&[
        "evaluate",
        "--audit",
        &s(&fixture()),
        "--policy",
        &policy,
        "--old-verdicts",
        &s(&out),
        "--new-verdicts",
        &s(&out),
        "--out",
        &s(&report),
    ]);
    let report: Value = serde_json::from_slice(&std::fs::read(&report).unwrap()).unwrap();
    assert_eq!(report["decision"]["num_cases"], n, "{}", text(&o));
    assert_eq!(
        report["stats"]["task"]["table"]["both_pass"], n,
        "every case read, none missing"
    );
}

#[test]
fn metrics_in_answers_reach_the_records_resume_and_the_guardrails() {
    let dir = tempdir();
    let d = dir.path();
    let (cases_path, cases) = test_set(d);
    let n = cases.len();
    // Each case's steps: old 3 + its position modulo 4; the new model takes 2 more, and costs
    // the same. The new model's answer to the third case has a NaN (Python writes `NaN`), which
    // is no JSON: that case is errored, naming it.
    let position: HashMap<String, usize> = (0..n).map(|i| (cid(&cases, i), i)).collect();
    let worker = |name: &str, more: u32| {
        python_worker(
            d,
            name,
            &format!(
                "i = {position:?}[cid]\n\
                 steps = 3 + i % 4 + {more}\n\
                 m = {{'steps': steps, 'cost_usd': 0.25}}\n\
                 if {more} and i == 2:\n    m['steps'] = float('nan')\n\
                 print(json.dumps({{'verdict': case['expected_verdict'], 'metrics': m}}), flush=True)\n\
                 continue"
            ),
        )
    };
    let (old_worker, new_worker) = (worker("old.py", 0), worker("new.py", 2));
    let (old, new) = (d.join("old.jsonl"), d.join("new.jsonl"));
    let o = run(&run_args(
        &cases_path,
        &old,
        &["--jobs", "2"],
        &["python3", &old_worker],
    ));
    assert!(o.status.success(), "{}", text(&o));
    let o = run(&run_args(
        &cases_path,
        &new,
        &["--jobs", "2"],
        &["python3", &new_worker],
    ));
    assert!(o.status.success(), "{}", text(&o));
    let nan_case = describe(&cases[2]["pipeline_id"]);
    assert!(
        stderr(&o).contains(&format!(
            "invalid answer to pipeline_id {nan_case}: the answer is not a JSON object: "
        )),
        "{}",
        text(&o)
    );
    assert!(stderr(&o).contains("(JSON has no NaN or Infinity: a metric must be a finite number)"));

    let old_records = records_by_id(&old, &cases);
    let new_records = records_by_id(&new, &cases);
    for (i, c) in cases.iter().enumerate() {
        let key = c["pipeline_id"].to_string();
        let steps = 3 + i as u64 % 4;
        assert_eq!(
            old_records[&key]["metrics"],
            serde_json::json!({"steps": steps, "cost_usd": 0.25})
        );
        if i == 2 {
            assert!(new_records[&key]["error"].as_str().unwrap().contains("NaN"));
            assert!(new_records[&key].get("metrics").is_none());
        } else {
            assert_eq!(new_records[&key]["metrics"]["steps"], steps + 2);
        }
        // A worker's record carries no cost field but its metrics.
        assert!(old_records[&key].get("latency_ms").is_none());
    }
    // A run resumed from records with metrics keeps them and asks only the rest.
    let whole = std::fs::read_to_string(&new).unwrap();
    let kept: String = whole.lines().take(n / 2).map(|l| format!("{l}\n")).collect();
    let resumed = d.join("resumed.jsonl");
    std::fs::write(&resumed, &kept).unwrap();
    let o = run(&run_args(
        &cases_path,
        &resumed,
        &["--jobs", "1"],
        &["python3", &new_worker],
    ));
    assert!(o.status.success(), "{}", text(&o));
    assert_eq!(std::fs::read_to_string(&resumed).unwrap(), whole);

    // `evaluate` reads them: a blocking guardrail on the mean steps (+2, limit +1) blocks, an
    // advisory one on cost (equal) is within and decides nothing; the task rule (one case
    // lost, within the tolerance under the point rule) approves.
    let policy = write(
        d,
        "policy.json",
        r#"{"min_samples": 1, "max_samples": null, "task_regression_tol": 0.05, "guardrails": [
            {"metric": "metrics.steps", "max_difference": 1},
            {"metric": "metrics.cost_usd", "max_increase": "10%", "action": "advise"}]}"#,
    );
    let report = d.join("report.json");
    let o = run(&[
        "evaluate",
        "--audit",
        &s(&fixture()),
        "--policy",
        &policy,
        "--old-verdicts",
        &s(&old),
        "--new-verdicts",
        &s(&new),
        "--out",
        &s(&report),
    ]);
    assert_eq!(o.status.code(), Some(3), "{}", text(&o));
    let report: Value = serde_json::from_slice(&std::fs::read(&report).unwrap()).unwrap();
    let reason = report["decision"]["reason"].as_str().unwrap();
    assert!(
        reason.starts_with("blocked: mean metrics.steps exceeded its limit; task rule: "),
        "{reason}"
    );
    let criteria = report["guardrails"]["criteria"].as_array().unwrap();
    let steps = &criteria[0];
    assert_eq!(steps["metric"], "metrics.steps");
    assert_eq!(steps["outcome"], "exceeded");
    assert_eq!(
        (steps["n"].as_u64(), steps["excluded"].as_u64()),
        (Some(n as u64 - 1), Some(1))
    );
    let mean_old = (0..n).filter(|&i| i != 2).map(|i| 3.0 + (i % 4) as f64).sum::<f64>() / (n - 1) as f64;
    assert!((steps["old"].as_f64().unwrap() - mean_old).abs() < 1e-9, "{steps}");
    assert!(
        (steps["new"].as_f64().unwrap() - mean_old - 2.0).abs() < 1e-9,
        "{steps}"
    );
    assert!((steps["change"].as_f64().unwrap() - 2.0).abs() < 1e-9, "{steps}");
    let cost = &criteria[1];
    assert_eq!(
        (&cost["action"], &cost["outcome"]),
        (&Value::from("advise"), &Value::from("within"))
    );
    assert_eq!(cost["change"].as_f64(), Some(0.0));
}

#[test]
fn a_command_targets_metrics_are_cached_with_its_verdict() {
    let dir = tempdir();
    let d = dir.path();
    let cases = write(
        d,
        "cases.jsonl",
        "{\"pipeline_id\": 1, \"input_text\": \"a\"}\n{\"pipeline_id\": \"b\", \"input_text\": \"bb\"}\n",
    );
    let worker = "import sys, json\nfor line in sys.stdin:\n    c = json.loads(line)\n    print(json.dumps({'verdict': 'PASS', 'metrics': {'chars': len(c['input_text'])}}), flush=True)\n";
    let target = write(
        d,
        "cmd.json",
        &serde_json::json!({"kind": "command", "argv": ["python3", "-c", worker]}).to_string(),
    );
    let cache = s(&d.join("cache"));
    let go = |out: &str| {
        let out = d.join(out);
        let o = run(&[
            "run",
            "--test-set",
            &cases,
            "--target",
            &target,
            "--out",
            &s(&out),
            "--cache",
            &cache,
        ]);
        assert!(o.status.success(), "{}", text(&o));
        (lines(&out), stderr(&o))
    };
    let (first, _) = go("v1.jsonl");
    let (second, log) = go("v2.jsonl");
    assert!(log.contains("0 asked, 2 from the cache"), "{log}");
    for records in [&first, &second] {
        assert_eq!(records[0]["metrics"], serde_json::json!({"chars": 1}));
        assert_eq!(records[1]["metrics"], serde_json::json!({"chars": 2}));
        assert!(records[0]["target"].as_str().unwrap().starts_with("sha256:"));
        assert!(records[0]["latency_ms"].is_number());
    }
}

/// A pipeline id as `run`'s messages name it: `7 (an integer)` or `"a-7"`.
fn describe(id: &Value) -> String {
    match id {
        Value::String(_) => id.to_string(),
        other => format!("{other} (an integer)"),
    }
}

#[test]
fn verdicts_are_kept_as_the_worker_wrote_them() {
    let dir = tempdir();
    let cases = write(dir.path(), "cases.jsonl", "{\"pipeline_id\": 12345678901234567890, \"input_text\": \"a\"}\n{\"pipeline_id\": \"12\", \"input_text\": \"b\"}\n");
    // A shell worker: the verdict's JSON text is written as it is, never re-encoded.
    let worker = script(
        dir.path(),
        "w.sh",
        "#!/bin/sh\nwhile IFS= read -r line; do\n  case \"$line\" in\n    *'\"a\"'*) echo '{\"verdict\": 1E16}' ;;\n    *) echo '{\"verdict\":{\"x\": [1,2]}, \"pipeline_id\": \"12\"}' ;;\n  esac\ndone\n",
    );
    let out = dir.path().join("v.jsonl");
    let o = run(&run_args(&cases, &out, &["--jobs", "1"], &[&worker]));
    assert!(o.status.success(), "{}", text(&o));
    assert_eq!(
        std::fs::read_to_string(&out).unwrap(),
        "{\"pipeline_id\":12345678901234567890,\"verdict\":1E16}\n{\"pipeline_id\":\"12\",\"verdict\":{\"x\": [1,2]}}\n"
    );
}

#[test]
fn the_models_outputs_are_kept_bounded_beside_the_verdicts_and_never_scored() {
    let dir = tempdir();
    let (cases_path, cases) = test_set(dir.path());
    // Each case's answer: a transcript object, a long text (cut at 64 KiB on a character
    // boundary), or, on the third case, a line that is not an answer (kept as text).
    let worker = python_worker(
        dir.path(),
        "w.py",
        "if cid == sys.argv[1]:\n\
         \x20   print('verdict: ' + case['expected_verdict'], flush=True)\n\
         \x20   continue\n\
         if cid == sys.argv[2]:\n\
         \x20   print(json.dumps({'verdict': case['expected_verdict'], 'output': 'é' * 40000}), flush=True)\n\
         \x20   continue\n\
         print(json.dumps({'output': {'messages': [{'role': 'assistant', 'content': 'It is ' + case['expected_verdict'], 'tool_calls': [{'name': 'look', 'arguments': cid}]}]}, 'verdict': case['expected_verdict'], 'metrics': {'steps': 2}}), flush=True)\n\
         continue",
    );
    let (bad, long) = (cid(&cases, 2), cid(&cases, 5));
    let out = dir.path().join("v.jsonl");
    let o = run(&run_args(
        &cases_path,
        &out,
        &["--jobs", "2"],
        &["python3", &worker, &bad, &long],
    ));
    assert!(o.status.success(), "{}", text(&o));
    let by_id = records_by_id(&out, &cases);
    for (n, c) in cases.iter().enumerate() {
        let r = &by_id[&c["pipeline_id"].to_string()];
        let id = cid(&cases, n);
        if id == bad {
            assert!(
                r["error"]
                    .as_str()
                    .unwrap()
                    .starts_with("invalid answer from the worker"),
                "{r}"
            );
            assert_eq!(
                r["output"],
                format!("verdict: {}", c["expected_verdict"].as_str().unwrap()),
                "{r}"
            );
        } else if id == long {
            let kept = r["output"].as_str().unwrap();
            assert!(kept.len() <= 64 * 1024 && kept.len() > 64 * 1024 - 2, "{}", kept.len());
            assert!(kept.chars().all(|ch| ch == 'é'));
            assert_eq!(r["output_truncated"], true);
        } else {
            assert_eq!(r["verdict"], c["expected_verdict"], "{r}");
            assert_eq!(
                r["output"]["messages"][0]["tool_calls"][0]["arguments"],
                id.as_str(),
                "{r}"
            );
            assert_eq!(r["metrics"]["steps"], 2, "{r}");
            assert!(r.get("output_truncated").is_none(), "{r}");
        }
    }
    // Scoring never sees them: the report of the file with outputs is, byte for byte, the report
    // of the same records without them, but for the verdict files' sizes and digests.
    let stripped: String = lines(&out)
        .into_iter()
        .map(|mut r| {
            let o = r.as_object_mut().unwrap();
            o.remove("output");
            o.remove("output_truncated");
            format!("{r}\n")
        })
        .collect();
    let policy = write(dir.path(), "policy.json", r#"{"min_samples": 1, "max_samples": null}"#);
    let report = |verdicts: &[u8], sub: &str| {
        let folder = dir.path().join(sub);
        std::fs::create_dir_all(&folder).unwrap();
        let file = folder.join("v.jsonl");
        std::fs::write(&file, verdicts).unwrap();
        let path = folder.join("report.json");
        let o = run(&[
            "evaluate",
            "--audit",
            &s(&fixture()),
            "--policy",
            &policy,
            "--old-verdicts",
            &s(&file),
            "--new-verdicts",
            &s(&file),
            "--out",
            &s(&path),
        ]);
        assert!(o.status.code().is_some(), "{}", text(&o));
        use sha2::Digest;
        let digest = hex::encode(sha2::Sha256::digest(verdicts));
        std::fs::read_to_string(&path)
            .unwrap()
            .replace(&digest, "DIGEST")
            .replace(&format!("\"bytes\": {},", verdicts.len()), "\"bytes\": BYTES,")
    };
    let with = std::fs::read(&out).unwrap();
    assert_ne!(with, stripped.as_bytes());
    assert_eq!(report(&with, "with"), report(stripped.as_bytes(), "without"));
    // A resumed run reads records with outputs and keeps them as they were; --no-outputs keeps
    // none.
    let before = std::fs::read(&out).unwrap();
    let o = run(&run_args(
        &cases_path,
        &out,
        &["--jobs", "2"],
        &["python3", &worker, &bad, &long],
    ));
    assert!(o.status.success(), "{}", text(&o));
    assert_eq!(std::fs::read(&out).unwrap(), before);
    let none = dir.path().join("none.jsonl");
    let o = run(&run_args(
        &cases_path,
        &none,
        &["--no-outputs"],
        &["python3", &worker, &bad, &long],
    ));
    assert!(o.status.success(), "{}", text(&o));
    assert!(lines(&none)
        .iter()
        .all(|r| r.get("output").is_none() && r.get("output_truncated").is_none()));
}

#[test]
fn jobs_run_concurrently_and_worker_stderr_is_passed_through() {
    let dir = tempdir();
    let (cases_path, cases) = test_set(dir.path());
    let pids = dir.path().join("pids");
    let worker = python_worker(
        dir.path(),
        "w.py",
        &format!(
            "open({:?}, 'a').write(str(os.getpid()) + '\\n')\nprint('working on', cid, file=sys.stderr, flush=True)\ntime.sleep(0.1)",
            s(&pids)
        ),
    );
    let out = dir.path().join("v.jsonl");
    let started = Instant::now();
    let o = run(&run_args(&cases_path, &out, &["--jobs", "4"], &["python3", &worker]));
    let took = started.elapsed();
    assert!(o.status.success(), "{}", text(&o));
    records_by_id(&out, &cases);
    let used: std::collections::HashSet<String> = std::fs::read_to_string(&pids)
        .unwrap()
        .lines()
        .map(str::to_owned)
        .collect();
    assert_eq!(used.len(), 4, "four workers answered cases");
    let serial = Duration::from_millis(100) * cases.len() as u32;
    assert!(
        took < serial,
        "4 workers took {took:?}, one would take {serial:?} sleeping alone"
    );
    let err = stderr(&o);
    for n in 1..=4 {
        assert!(
            err.contains(&format!("[worker {n}] working on ")),
            "worker {n}'s stderr is shown: {err}"
        );
    }
    assert!(
        err.contains(&format!("[worker 1] working on {}", cid(&cases, 0))),
        "{err}"
    );
}

#[test]
fn a_crashing_worker_is_restarted_and_its_case_retried_then_errored() {
    let dir = tempdir();
    let (cases_path, cases) = test_set(dir.path());
    let (always, once) = (cid(&cases, 3), cid(&cases, 7));
    let marker = s(&dir.path().join("crashed-once"));
    let worker = python_worker(
        dir.path(),
        "w.py",
        &format!(
            "if cid == {always:?}:\n    os._exit(3)\nif cid == {once:?} and not os.path.exists({marker:?}):\n    open({marker:?}, 'w').close()\n    os.kill(os.getpid(), 9)"
        ),
    );
    let out = dir.path().join("v.jsonl");
    let o = run(&run_args(
        &cases_path,
        &out,
        &["--jobs", "2", "--retries", "1"],
        &["python3", &worker],
    ));
    assert!(o.status.success(), "{}", text(&o));
    let by_id = records_by_id(&out, &cases);
    let record = |n: usize| &by_id[&cases[n]["pipeline_id"].to_string()];
    assert_eq!(
        record(3)["error"],
        "the worker exited with exit status 3 while answering (tried 2 times)",
        "{}",
        text(&o)
    );
    assert_eq!(
        record(7)["verdict"],
        cases[7]["expected_verdict"],
        "retried on a new worker"
    );
    let errored: Vec<_> = by_id.values().filter(|r| r.get("error").is_some()).collect();
    assert_eq!(errored.len(), 1, "{errored:?}");
    let err = stderr(&o);
    assert!(err.contains("exited (signal 9) while answering"), "{err}");
    assert!(err.contains("1 errored") && err.contains("1 crashes"), "{err}");

    // With no retry, a crash is recorded at once.
    std::fs::remove_file(&marker).unwrap();
    let out = dir.path().join("v0.jsonl");
    let o = run(&run_args(
        &cases_path,
        &out,
        &["--jobs", "1", "--retries", "0"],
        &["python3", &worker],
    ));
    assert!(o.status.success(), "{}", text(&o));
    let by_id = records_by_id(&out, &cases);
    let record = |n: usize| &by_id[&cases[n]["pipeline_id"].to_string()];
    assert_eq!(
        record(7)["error"],
        "the worker exited with signal 9 while answering (tried once)"
    );
}

#[test]
fn a_hung_worker_is_killed_at_the_timeout_and_its_case_errored() {
    let dir = tempdir();
    let (cases_path, cases) = test_set(dir.path());
    let hang = cid(&cases, 2);
    // A shell worker whose hang is a child process: the whole process group is killed.
    let worker = script(
        dir.path(),
        "w.sh",
        &format!("#!/bin/sh\nwhile IFS= read -r line; do\n  case \"$line\" in\n    *'\"pipeline_id\":\"{hang}\"'*|*'\"pipeline_id\":{hang},'*) sleep 1000 ;;\n  esac\n  echo '{{\"verdict\": \"PASS\"}}'\ndone\n"),
    );
    let out = dir.path().join("v.jsonl");
    let started = Instant::now();
    let o = run(&run_args(
        &cases_path,
        &out,
        &["--jobs", "2", "--timeout", "2s"],
        &[&worker],
    ));
    assert!(o.status.success(), "{}", text(&o));
    assert!(started.elapsed() < Duration::from_secs(30), "{:?}", started.elapsed());
    let by_id = records_by_id(&out, &cases);
    for (n, c) in cases.iter().enumerate() {
        let r = &by_id[&c["pipeline_id"].to_string()];
        if n == 2 {
            assert_eq!(r["error"], "timeout after 2s");
        } else {
            assert_eq!(r["verdict"], "PASS", "{r}");
        }
    }
    assert!(stderr(&o).contains("after 2s; killed and restarted"), "{}", text(&o));
}

#[test]
fn garbage_on_stdout_errors_the_case_and_restarts_the_worker() {
    let dir = tempdir();
    let (cases_path, cases) = test_set(dir.path());
    let (a, b, c, d) = (cid(&cases, 1), cid(&cases, 4), cid(&cases, 6), cid(&cases, 9));
    let pids = dir.path().join("pids");
    let worker = python_worker(
        dir.path(),
        "w.py",
        &format!(
            "open({:?}, 'a').write(str(os.getpid()) + '\\n')\n\
             bad = {{{a:?}: 'PASS', {b:?}: '{{\"verdit\": \"PASS\"}}', {c:?}: '{{\"verdict\": \"PASS\"}}\\n{{\"verdict\": \"PASS\"}}', {d:?}: '{{\"verdict\": \"PASS\", \"error\": \"x\"}}'}}\n\
             if cid in bad:\n    sys.stdout.write(bad[cid] + '\\n')\n    sys.stdout.flush()\n    continue",
            s(&pids)
        ),
    );
    let out = dir.path().join("v.jsonl");
    let o = run(&run_args(&cases_path, &out, &["--jobs", "1"], &["python3", &worker]));
    assert!(o.status.success(), "{}", text(&o));
    let by_id = records_by_id(&out, &cases);
    let error = |n: usize| {
        by_id[&cases[n]["pipeline_id"].to_string()]["error"]
            .as_str()
            .unwrap_or("")
            .to_owned()
    };
    assert!(
        error(1).starts_with("invalid answer from the worker: the answer is not a JSON object"),
        "{}",
        error(1)
    );
    assert_eq!(
        error(4),
        "invalid answer from the worker: the answer has the key \"verdit\"; only \"verdict\" or \"error\" (and \"pipeline_id\", \"metrics\", \"output\") are read"
    );
    assert_eq!(
        error(6),
        "invalid answer from the worker: the worker wrote more than one line for this case"
    );
    assert_eq!(
        error(9),
        "invalid answer from the worker: the answer has both \"verdict\" and \"error\""
    );
    let errored = by_id.values().filter(|r| r.get("error").is_some()).count();
    assert_eq!(errored, 4, "the others are answered");
    let starts = std::fs::read_to_string(&pids).unwrap();
    let distinct: std::collections::HashSet<&str> = starts.lines().collect();
    assert_eq!(distinct.len(), 5, "a new worker after each garbage answer");
}

#[test]
fn a_worker_that_cannot_start_stops_the_run_with_a_clear_error() {
    let dir = tempdir();
    let (cases_path, _) = test_set(dir.path());
    let out = dir.path().join("v.jsonl");
    let o = run(&run_args(&cases_path, &out, &["--jobs", "2"], &["/nonexistent/worker"]));
    assert_eq!(o.status.code(), Some(1), "{}", text(&o));
    assert!(
        stderr(&o).contains("cannot start the worker program \"/nonexistent/worker\": No such file or directory"),
        "{}",
        text(&o)
    );

    let worker = script(
        dir.path(),
        "fail.sh",
        "#!/bin/sh\necho 'cannot load the model' >&2\nexit 4\n",
    );
    let started = Instant::now();
    let o = run(&run_args(&cases_path, &out, &["--jobs", "2"], &[&worker]));
    assert_eq!(o.status.code(), Some(1), "{}", text(&o));
    let err = stderr(&o);
    assert!(
        err.contains(
            "the worker program exited 6 times in a row without answering a case (the last time with exit status 4)"
        ),
        "{err}"
    );
    assert!(err.contains("[worker 1] cannot load the model"), "{err}");
    assert!(started.elapsed() < Duration::from_secs(20));
    assert!(lines(&out).is_empty(), "no case is recorded as answered");
}

#[test]
fn bad_input_and_usage_exit_1_naming_the_file_and_line() {
    let dir = tempdir();
    let out = dir.path().join("v.jsonl");
    let bad = write(dir.path(), "bad.jsonl", "{\"pipeline_id\": 1}\n{\"pipeline_id\": 2\n");
    let o = run(&run_args(&bad, &out, &[], &["true"]));
    assert_eq!(o.status.code(), Some(1));
    assert!(
        stderr(&o).contains(&format!("{bad} line 2: not a valid test case")),
        "{}",
        text(&o)
    );

    let cases = write(
        dir.path(),
        "cases.jsonl",
        "{\"pipeline_id\": 1}\n{\"pipeline_id\": \"1\"}\n",
    );
    let o = run(&strings(&["run", "--test-set", &cases, "--out", &s(&out)]));
    assert_eq!(o.status.code(), Some(1), "no program: {}", text(&o));
    let o = run(&run_args(&cases, &out, &["--timeout", "soon"], &["true"]));
    assert_eq!(o.status.code(), Some(1));
    assert!(stderr(&o).contains("--timeout \"soon\""), "{}", text(&o));

    // An output file of another test set, or with the id's other JSON type, is refused.
    let other = write(
        dir.path(),
        "other.jsonl",
        "{\"pipeline_id\":\"2\",\"verdict\":\"PASS\"}\n",
    );
    let o = run(&run_args(&cases, Path::new(&other), &[], &["true"]));
    assert_eq!(o.status.code(), Some(1));
    assert!(
        stderr(&o).contains(&format!(
            "{other} line 1: pipeline_id \"2\" is not a case of the test set"
        )),
        "{}",
        text(&o)
    );
}

#[test]
fn a_resumed_run_skips_the_cases_answered_and_drops_a_torn_line() {
    let dir = tempdir();
    let cases = write(
        dir.path(),
        "cases.jsonl",
        "{\"pipeline_id\": 1}\n{\"pipeline_id\": \"1\"}\n{\"pipeline_id\": 2}\n{\"pipeline_id\": \"x\"}\n",
    );
    let seen = dir.path().join("seen");
    let worker = script(
        dir.path(),
        "w.sh",
        &format!("#!/bin/sh\nwhile IFS= read -r line; do\n  printf '%s\\n' \"$line\" >> '{}'\n  echo '{{\"verdict\": \"PASS\"}}'\ndone\n", s(&seen)),
    );
    let out = write(
        dir.path(),
        "v.jsonl",
        "{\"pipeline_id\":\"1\",\"verdict\":\"FAIL\"}\n{\"pipeline_id\":2,\"error\":\"boom\"}\n{\"pipeline_id\":\"x\",\"ver",
    );
    let o = run(&run_args(&cases, Path::new(&out), &["--jobs", "1"], &[&worker]));
    assert!(o.status.success(), "{}", text(&o));
    let err = stderr(&o);
    assert!(err.contains("line 3 was torn"), "{err}");
    assert!(err.contains("2 already answered"), "{err}");
    assert!(
        err.contains("4 cases in ") && err.contains("3 answered, 1 errored"),
        "{err}"
    );
    assert_eq!(
        std::fs::read_to_string(&seen).unwrap(),
        "{\"pipeline_id\": 1}\n{\"pipeline_id\": \"x\"}\n",
        "only the cases without a record are run"
    );
    assert_eq!(
        std::fs::read_to_string(&out).unwrap(),
        "{\"pipeline_id\":1,\"verdict\":\"PASS\"}\n{\"pipeline_id\":\"1\",\"verdict\":\"FAIL\"}\n{\"pipeline_id\":2,\"error\":\"boom\"}\n{\"pipeline_id\":\"x\",\"verdict\":\"PASS\"}\n",
        "rewritten in test-set order once complete"
    );
    // Nothing left to run: no worker is started.
    let o = run(&run_args(&cases, Path::new(&out), &[], &["/nonexistent/worker"]));
    assert!(o.status.success(), "{}", text(&o));
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

/// Starts `deploy-gate run`, its output discarded.
fn spawn_run(args: &[String]) -> std::process::Child {
    dg().args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap()
}

#[test]
fn sigkill_of_run_at_random_moments_then_a_rerun_gives_one_record_per_case() {
    let dir = tempdir();
    let (cases_path, cases) = test_set(dir.path());
    let worker = python_worker(dir.path(), "w.py", "time.sleep(0.02)");
    let out = dir.path().join("v.jsonl");
    let args = run_args(&cases_path, &out, &["--jobs", "3"], &["python3", &worker]);
    let seed = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_nanos() as u64;
    eprintln!("sigkill test seed: {seed}");
    let mut random = Lcg(seed);
    let count = || std::fs::read_to_string(&out).map_or(0, |t| t.lines().count());
    let mut mid_run = 0;
    for round in 0..6 {
        let before = count();
        let mut child = spawn_run(&args);
        // Once this run writes, at a random moment within the next ~150 ms.
        let until = Instant::now() + Duration::from_secs(30);
        while count() == before && Instant::now() < until && child.try_wait().unwrap().is_none() {
            std::thread::sleep(Duration::from_millis(2));
        }
        std::thread::sleep(Duration::from_millis(random.below(150)));
        child.kill().unwrap(); // SIGKILL
        let status = child.wait().unwrap();
        let bytes = std::fs::read(&out).unwrap_or_default();
        assert!(
            bytes.is_empty() || bytes.ends_with(b"\n"),
            "seed {seed} round {round}: no torn line"
        );
        let records = lines(&out);
        let ids: std::collections::HashSet<String> = records.iter().map(|r| r["pipeline_id"].to_string()).collect();
        assert_eq!(
            ids.len(),
            records.len(),
            "seed {seed} round {round}: one record per case"
        );
        if records.len() > before && records.len() < cases.len() {
            mid_run += 1;
        }
        eprintln!("round {round}: {status:?}, {before} -> {} records", records.len());
    }
    assert!(
        mid_run >= 3,
        "seed {seed}: {mid_run} of the kills landed while the run was writing"
    );
    let o = run(&args);
    assert!(o.status.success(), "seed {seed}: {}", text(&o));
    let by_id = records_by_id(&out, &cases);
    assert!(
        by_id.values().all(|r| r.get("verdict").is_some()),
        "seed {seed}: nothing errored"
    );
    let leftovers: Vec<_> = std::fs::read_dir(dir.path())
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with(".v.jsonl"))
        .collect();
    assert!(leftovers.is_empty(), "no temporary file is left: {leftovers:?}");
}

#[test]
fn sigint_and_sigterm_stop_the_workers_and_keep_what_was_written() {
    let dir = tempdir();
    let (cases_path, cases) = test_set(dir.path());
    let pids = dir.path().join("pids");
    let worker = python_worker(
        dir.path(),
        "w.py",
        &format!(
            "open({:?}, 'a').write(str(os.getpid()) + '\\n')\ntime.sleep(0.05)",
            s(&pids)
        ),
    );
    let out = dir.path().join("v.jsonl");
    let args = run_args(&cases_path, &out, &["--jobs", "2"], &["python3", &worker]);
    let count = || std::fs::read_to_string(&out).map_or(0, |t| t.lines().count());
    for (signal, code) in [(libc::SIGINT, 130), (libc::SIGTERM, 143)] {
        let before = count();
        let child = dg()
            .args(&args)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        // Once a few records are written (the workers are running).
        let until = Instant::now() + Duration::from_secs(30);
        while Instant::now() < until && count() < before + 3 {
            std::thread::sleep(Duration::from_millis(10));
        }
        // SAFETY: a signal to the child this test started.
        assert_eq!(unsafe { libc::kill(child.id() as i32, signal) }, 0);
        let o = child.wait_with_output().unwrap();
        assert_eq!(o.status.code(), Some(code), "{}", text(&o));
        assert!(
            stderr(&o).contains(&format!("interrupted (signal {signal})")),
            "{}",
            text(&o)
        );
        assert!(
            stderr(&o).contains("run the same command again to resume"),
            "{}",
            text(&o)
        );
        let kept = lines(&out);
        assert!(
            kept.len() > before && kept.len() < cases.len(),
            "{before} -> {} of {}",
            kept.len(),
            cases.len()
        );
        for pid in std::fs::read_to_string(&pids).unwrap().lines() {
            let pid: i32 = pid.parse().unwrap();
            // SAFETY: signal 0 only asks whether the process exists.
            assert_ne!(unsafe { libc::kill(pid, 0) }, 0, "worker {pid} is gone");
        }
    }
    let o = run(&args);
    assert!(o.status.success(), "{}", text(&o));
    records_by_id(&out, &cases);
}

#[test]
fn one_worker_that_crashes_or_answers_garbage_on_a_case_before_the_last_still_finishes() {
    // With one worker, the case after the bad one is the next waiting to be sent when the
    // worker is lost: a new worker must be started for it (the run once waited forever).
    let dir = tempdir();
    let text_set: String = (1..=3)
        .map(|i| {
            format!(
                "{{\"pipeline_id\":{i},\"template_id\":\"t\",\"input_text\":\"x\",\"expected_verdict\":\"PASS\"}}\n"
            )
        })
        .collect();
    let cases_path = write(dir.path(), "three.jsonl", &text_set);
    for (name, bad) in [
        ("crash.py", "os._exit(3)"),
        ("garbage.py", "print('garbage', flush=True)\n    continue"),
        ("closes.py", "os.close(1)\n    time.sleep(30)"),
    ] {
        let worker = script(
            dir.path(),
            name,
            &format!(
                "import json, os, sys, time\nfor line in sys.stdin:\n  case = json.loads(line)\n  if case['pipeline_id'] == 2:\n    {bad}\n  print(json.dumps({{'verdict': 'PASS'}}), flush=True)\n"
            ),
        );
        let out = dir.path().join(format!("{name}.jsonl"));
        let mut child = std::process::Command::new(crate::common::cli_path())
            .args(run_args(
                &cases_path,
                &out,
                &["--jobs", "1", "--retries", "0", "--timeout", "5s"],
                &["python3", &worker],
            ))
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .unwrap();
        let until = std::time::Instant::now() + std::time::Duration::from_secs(60);
        let status = loop {
            if let Some(status) = child.try_wait().unwrap() {
                break status;
            }
            if std::time::Instant::now() > until {
                let _ = child.kill();
                panic!("{name}: the run did not finish");
            }
            std::thread::sleep(std::time::Duration::from_millis(50));
        };
        assert!(status.success(), "{name}");
        let records = lines(&out);
        assert_eq!(records.len(), 3, "{name}: {records:?}");
        assert!(records[1]["error"].is_string(), "{name}: {records:?}");
        assert_eq!(
            (records[0]["verdict"].clone(), records[2]["verdict"].clone()),
            (Value::from("PASS"), Value::from("PASS")),
            "{name}"
        );
    }
}
