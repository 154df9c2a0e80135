//! The command line: flags, exit codes, outputs, and errors that name the file and line.

use crate::common::*;
use std::path::Path;

fn small_audit(dir: &Path) -> String {
    let mut text = String::new();
    for i in 0..3 {
        text += &format!("{{\"pipeline_id\":\"p{i}\",\"stage_id\":\"s\",\"stage_type\":\"llm\",\"input\":\"in\"}}\n");
        text += &format!("{{\"pipeline_id\":\"p{i}\",\"template_id\":\"t\",\"verdict\":\"PASS\",\"is_complete\":true,\"error\":null}}\n");
    }
    write(dir, "audit.jsonl", &text)
}

#[test]
fn evaluate_exits_0_when_approved_and_3_when_blocked() {
    let dir = tempdir();
    let audit = small_audit(dir.path());
    let good = write(
        dir.path(),
        "good.csv",
        "pipeline_id,verdict\np0,PASS\np1,PASS\np2,PASS\n",
    );
    let bad = write(
        dir.path(),
        "bad.json",
        "{\"p0\": \"FAIL\", \"p1\": \"PASS\", \"p2\": \"PASS\"}",
    );
    let base = |old: &str, new: &str| {
        vec![
            "evaluate".into(),
            "--audit".into(),
            audit.clone(),
            "--old-verdicts".into(),
            old.into(),
            "--new-verdicts".into(),
            new.into(),
            "--min-samples".into(),
            "1".into(),
        ]
    };
    let out = run(&base(&bad, &good));
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(stderr(&out).contains("APPROVED"));
    let out = run(&base(&good, &bad));
    assert_eq!(out.status.code(), Some(3));
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(report["decision"]["reason"], "blocked: task accuracy regressed");
    assert_eq!(report["cases"][0]["status"], "regressed");
    // Fail closed by default on a test set below min_samples.
    let mut args = base(&good, &good);
    args.truncate(7);
    let out = run(&args);
    assert_eq!(out.status.code(), Some(3));
    assert!(String::from_utf8_lossy(&out.stdout).contains("blocked: insufficient test cases (3 < min_samples 20)"));
}

#[test]
fn out_writes_the_same_bytes_as_stdout() {
    let dir = tempdir();
    let fixture = parity_dir().join("approved");
    let mut args = evaluate_args(&fixture);
    let stdout = run(&args).stdout;
    let out = dir.path().join("report.json");
    args.extend(["--out".into(), s(&out)]);
    let o = run(&args);
    assert!(o.stdout.is_empty());
    assert_eq!(std::fs::read(&out).unwrap(), stdout);
    assert_eq!(
        run(&evaluate_args(&fixture)).stdout,
        stdout,
        "the same inputs give the same bytes"
    );
}

#[test]
fn test_set_prints_jsonl_and_honours_sampling_flags() {
    let dir = tempdir();
    let audit = small_audit(dir.path());
    let out = run(&[
        "test-set".into(),
        "--audit".into(),
        audit.clone(),
        "--min-samples".into(),
        "1".into(),
        "--max-samples".into(),
        "2".into(),
        "--seed".into(),
        "9".into(),
    ]);
    assert!(out.status.success());
    let text = String::from_utf8(out.stdout).unwrap();
    assert_eq!(text.lines().count(), 2);
    for line in text.lines() {
        let v: serde_json::Value = serde_json::from_str(line).unwrap();
        assert_eq!(v["expected_verdict"], "PASS");
    }
    let file = dir.path().join("ts.jsonl");
    let out = run(&[
        "test-set".into(),
        "--audit".into(),
        audit,
        "--min-samples".into(),
        "1".into(),
        "--max-samples".into(),
        "2".into(),
        "--seed".into(),
        "9".into(),
        "--out".into(),
        s(&file),
    ]);
    assert!(out.status.success());
    assert_eq!(std::fs::read_to_string(file).unwrap(), text);
}

#[test]
fn bad_input_names_the_file_and_line_and_exits_1() {
    let dir = tempdir();
    let audit = small_audit(dir.path());
    let good = write(
        dir.path(),
        "good.jsonl",
        "{\"pipeline_id\":\"p0\",\"verdict\":\"PASS\"}\n",
    );
    let broken = write(
        dir.path(),
        "broken.jsonl",
        "{\"pipeline_id\":\"p0\",\"verdict\":\"PASS\"}\n{\"pipeline_id\":\"p1\",\"verdict\":\n",
    );
    let out = run(&[
        "evaluate".into(),
        "--audit".into(),
        audit.clone(),
        "--old-verdicts".into(),
        good.clone(),
        "--new-verdicts".into(),
        broken.clone(),
    ]);
    assert_eq!(out.status.code(), Some(1));
    let err = stderr(&out);
    assert!(
        err.contains(&format!(
            "{broken} (new_verdicts) line 2, column 30: not valid JSON: EOF while parsing a value"
        )),
        "{err}"
    );

    let traj = write(
        dir.path(),
        "t.jsonl",
        "{\"overall_judge_score\":0.5}\n{\"overall_judge_score\":0.5,\"tac_score\":\"x\"}\n",
    );
    let out = run(&[
        "evaluate".into(),
        "--audit".into(),
        audit.clone(),
        "--old-verdicts".into(),
        good.clone(),
        "--new-verdicts".into(),
        good.clone(),
        "--old-trajectories".into(),
        traj.clone(),
        "--new-trajectories".into(),
        traj.clone(),
    ]);
    assert_eq!(out.status.code(), Some(1));
    assert!(stderr(&out).contains("t.jsonl (old_trajectories) line 2, column 40: tac_score is a string"));

    let missing = s(&dir.path().join("nope.jsonl"));
    let out = run(&["test-set".into(), "--audit".into(), missing.clone()]);
    assert_eq!(out.status.code(), Some(1));
    assert!(stderr(&out).contains(&missing));
}

/// A named pipe at `path`.
fn mkfifo(path: &Path) -> std::path::PathBuf {
    assert!(std::process::Command::new("mkfifo")
        .arg(path)
        .status()
        .unwrap()
        .success());
    path.to_path_buf()
}

#[test]
fn an_audit_log_that_is_not_a_regular_file_is_refused_by_name() {
    // Pass 2 reads the log again, which a pipe cannot do; it is refused before it is opened
    // (no writer ever opens this one).
    let dir = tempdir();
    let fifo = mkfifo(&dir.path().join("audit.fifo"));
    for path in [s(&fifo), s(dir.path())] {
        let out = run(&["test-set".into(), "--audit".into(), path.clone()]);
        assert_eq!(out.status.code(), Some(1));
        let err = stderr(&out);
        assert!(err.contains(&format!("{path}: not a regular file")), "{err}");
    }
}

#[test]
fn a_verdict_file_may_be_a_pipe() {
    // Verdict files are read once, so a pipe will do (it is read, not mapped); the report is
    // the one of the file, digest and all.
    let dir = tempdir();
    let fixture = parity_dir().join("approved");
    let args = evaluate_args(&fixture);
    let from_file = run(&args);
    let fifo = mkfifo(&dir.path().join("old_verdicts.jsonl"));
    let writer = {
        let (fifo, text) = (fifo.clone(), std::fs::read(fixture.join("old_verdicts.jsonl")).unwrap());
        std::thread::spawn(move || std::fs::write(fifo, text).unwrap())
    };
    let mut piped = args.clone();
    let i = piped.iter().position(|a| a == "--old-verdicts").unwrap();
    piped[i + 1] = s(&fifo);
    let from_pipe = run(&piped);
    writer.join().unwrap();
    assert_eq!(from_pipe.status.code(), from_file.status.code());
    assert_eq!(
        String::from_utf8_lossy(&from_pipe.stdout),
        String::from_utf8_lossy(&from_file.stdout)
    );
}

#[test]
fn an_empty_audit_log_reads_as_no_lines_either_way() {
    let dir = tempdir();
    let empty = write(dir.path(), "empty.jsonl", "");
    for map in READ_MODES {
        let out = dg()
            .args(["test-set", "--audit", &empty, "--min-samples", "0"])
            .args(no_mmap(map))
            .output()
            .unwrap();
        assert!(out.status.success(), "{}", stderr(&out));
        assert!(out.stdout.is_empty());
    }
}

#[test]
fn usage_errors_exit_1() {
    for args in [
        vec!["evaluate", "--audit", "a.jsonl"],
        vec![
            "evaluate",
            "--audit",
            "a",
            "--old-verdicts",
            "o",
            "--new-verdicts",
            "n",
            "--old-trajectories",
            "t",
        ],
        vec!["test-set", "--audit", "a", "--on-insufficient", "maybe"],
        vec![
            "evaluate",
            "--audit",
            "a",
            "--old-verdicts",
            "o",
            "--new-verdicts",
            "n",
            "--on-insufficient",
            "maybe",
        ],
        vec!["test-set", "--audit", "a", "--max-samples", "many"],
        vec!["frobnicate"],
    ] {
        let out = run(&args.iter().map(|a| a.to_string()).collect::<Vec<_>>());
        assert_eq!(out.status.code(), Some(1), "{args:?}");
    }
    assert_eq!(run(&["--help"]).status.code(), Some(0));
    assert_eq!(run(&["--version"]).status.code(), Some(0));
}

#[test]
fn several_audit_files_are_read_as_one_stream() {
    let dir = tempdir();
    let stages = write(
        dir.path(),
        "1.jsonl",
        "{\"pipeline_id\":\"a\",\"stage_id\":\"s\",\"input\":\"x\"}",
    );
    let done = write(
        dir.path(),
        "2.jsonl",
        "{\"pipeline_id\":\"a\",\"verdict\":\"PASS\",\"is_complete\":true}\n",
    );
    let out = run(&[
        "test-set".into(),
        "--audit".into(),
        stages,
        "--audit".into(),
        done,
        "--min-samples".into(),
        "1".into(),
    ]);
    assert_eq!(String::from_utf8(out.stdout).unwrap().lines().count(), 1);
}

fn with_flag(mut args: Vec<String>, flag: &str, value: &str) -> Vec<String> {
    match args.iter().position(|a| a == flag) {
        Some(i) => args[i + 1] = value.into(),
        None => args.extend([flag.into(), value.into()]),
    }
    args
}

#[test]
fn non_inferiority_mode_decides_on_the_interval_and_the_report_carries_the_statistics() {
    let base = evaluate_args(&parity_dir().join("approved"));
    let ni = with_flag(
        with_flag(base.clone(), "--mode", "non_inferiority"),
        "--task-tol",
        "0.05",
    );
    // Unclustered: Newcombe's interval.
    let out = run(&with_flag(ni.clone(), "--cluster", "none"));
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let r: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(
        r["decision"]["reason"],
        "approved: non-inferiority shown (task lower bound 0.006 > -0.05; trajectory lower bound -0.013 > -0.05)"
    );
    assert_eq!(r["decision"]["outcome"], "approved");
    assert_eq!(r["stats"]["task"]["clustered"], serde_json::Value::Null);
    // By default the rule uses the interval clustered by template.
    let out = run(&ni);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let clustered: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let low = clustered["stats"]["task"]["clustered"]["delta"]["low"]
        .as_f64()
        .unwrap();
    assert_eq!(
        clustered["decision"]["reason"],
        format!("approved: non-inferiority shown (task lower bound {low:.3} > -0.05; trajectory lower bound -0.013 > -0.05)")
    );
    assert_eq!(
        (r["policy"]["mode"].as_str(), r["policy"]["confidence"].as_f64()),
        (Some("non_inferiority"), Some(0.95))
    );
    let task = &r["stats"]["task"];
    for side in ["old", "new"] {
        for key in ["rate", "low", "high"] {
            assert!(task[side][key].is_f64(), "stats.task.{side}.{key}");
        }
    }
    assert_eq!(task["delta"]["method"], "newcombe");
    assert!(task["delta"]["low"].as_f64().unwrap() < task["delta"]["estimate"].as_f64().unwrap());
    assert_eq!(
        (task["mcnemar"]["b"].as_u64(), task["mcnemar"]["c"].as_u64()),
        (Some(4), Some(13))
    );
    // scipy.stats.binomtest(4, 17, 0.5).pvalue
    assert!((task["mcnemar"]["p_exact"].as_f64().unwrap() - 0.049041748046875).abs() < 1e-12);
    assert_eq!(task["sample_size"]["power"], 0.8);
    let traj = &r["stats"]["trajectory"];
    assert_eq!(
        (traj["old"]["n"].as_u64(), traj["new"]["n"].as_u64()),
        (Some(25), Some(25))
    );
    assert_eq!(
        (traj["delta"]["method"].as_str(), traj["delta"]["resamples"].as_u64()),
        (Some("bootstrap"), Some(10000))
    );

    // A trajectory interval that reaches past the tolerance and above 0: inconclusive (exit 4).
    let strict_traj = with_flag(ni.clone(), "--traj-tol", "0.01");
    let out = run(&strict_traj);
    assert_eq!(out.status.code(), Some(4), "{}", stderr(&out));
    let r: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let high = r["stats"]["trajectory"]["delta"]["high"].as_f64().unwrap();
    assert_eq!(
        r["decision"]["reason"],
        format!(
            "inconclusive: trajectory non-inferiority not shown, nor a regression (interval -0.013 to {high:.3}, \
             tolerance 0.01: lower bound <= -0.01, upper bound >= 0)"
        )
    );
    assert_eq!(
        (r["decision"]["outcome"].as_str(), r["decision"]["approved"].as_bool()),
        (Some("inconclusive"), Some(false))
    );
    assert_eq!(r["decision"]["details"]["trajectory_regressed"], true);
    assert!(
        stderr(&out).contains("INCONCLUSIVE — keep the old model"),
        "{}",
        stderr(&out)
    );

    // The point rule (default) is unchanged; the intervals widen with the confidence.
    let point: serde_json::Value = serde_json::from_slice(&run(&base).stdout).unwrap();
    assert_eq!(
        point["decision"]["reason"],
        "approved: no regression on task or trajectory"
    );
    let wide: serde_json::Value =
        serde_json::from_slice(&run(&with_flag(base.clone(), "--confidence", "0.99")).stdout).unwrap();
    assert!(wide["stats"]["task"]["delta"]["low"].as_f64() < point["stats"]["task"]["delta"]["low"].as_f64());
    for bad in [("--confidence", "1.5"), ("--confidence", "0"), ("--mode", "vibes")] {
        assert_eq!(
            run(&with_flag(base.clone(), bad.0, bad.1)).status.code(),
            Some(1),
            "{bad:?}"
        );
    }
}

#[test]
fn all_cores_and_tiny_segments_give_the_single_threaded_report_on_every_fixture() {
    for dir in parity_cases() {
        let one = with_flag(evaluate_args(&dir), "--threads", "1");
        let many = with_flag(evaluate_args(&dir), "--threads", "4");
        let single = run(&one).stdout;
        for map in READ_MODES {
            let out = dg()
                .args(&many)
                .args(["--segment-size", "4096"])
                .args(no_mmap(map))
                .output()
                .unwrap();
            assert!(
                String::from_utf8_lossy(&out.stdout) == String::from_utf8_lossy(&single),
                "{}, mmap={map}\n{}",
                dir.display(),
                diff(&single, &out.stdout)
            );
        }
    }
}

/// The two ways pass 1 reads a plain file: mapped into memory (`1`, the default on Unix) and
/// copied in chunks (`0`, the hidden flag `--no-mmap`).
const READ_MODES: [&str; 2] = ["1", "0"];

/// The flags that read as `map` says (`0`: copied).
fn no_mmap(map: &str) -> &'static [&'static str] {
    if map == "0" {
        &["--no-mmap"]
    } else {
        &[]
    }
}

#[test]
fn gzip_audit_logs_stream_through_both_passes() {
    use std::io::Write;
    let dir = tempdir();
    let fixture = parity_dir().join("approved");
    let plain = std::fs::read(fixture.join("audit.jsonl")).unwrap();
    let gz_path = dir.path().join("audit.jsonl.gz");
    let mut enc =
        flate2::write::GzEncoder::new(std::fs::File::create(&gz_path).unwrap(), flate2::Compression::default());
    enc.write_all(&plain).unwrap();
    enc.finish().unwrap();
    let args = evaluate_args(&fixture);
    let mut gz_args = args.clone();
    let i = gz_args.iter().position(|a| a == "--audit").unwrap();
    gz_args[i + 1] = s(&gz_path);
    let a: serde_json::Value = serde_json::from_slice(&run(&args).stdout).unwrap();
    let b: serde_json::Value = serde_json::from_slice(&run(&gz_args).stdout).unwrap();
    for key in ["decision", "comparison", "cases", "stats", "templates"] {
        assert_eq!(a[key], b[key], "{key}");
    }
    assert_eq!(a["audit"]["lines"], b["audit"]["lines"]);
    let gz_bytes = std::fs::read(&gz_path).unwrap();
    assert_eq!(
        b["inputs"][0]["bytes"].as_u64(),
        Some(gz_bytes.len() as u64),
        "the digest is of the file as given"
    );
    let mut ts_args = vec![
        "test-set".to_owned(),
        "--audit".into(),
        s(&gz_path),
        "--max-samples".into(),
        "none".into(),
    ];
    let gz_ts = run(&ts_args).stdout;
    ts_args[2] = s(&fixture.join("audit.jsonl"));
    assert_eq!(gz_ts, run(&ts_args).stdout);
}

#[test]
fn one_reader_feeding_many_segments_gives_the_single_threaded_test_set() {
    // Every fixture's log in one file: 6 MB, with lines of every shape.
    let dir = tempdir();
    let log = dir.path().join("all.jsonl");
    let mut all = Vec::new();
    for case in parity_cases() {
        all.extend_from_slice(&std::fs::read(case.join("audit.jsonl")).unwrap());
        if all.last() != Some(&b'\n') {
            all.push(b'\n');
        }
    }
    std::fs::write(&log, &all).unwrap();
    // Segments of one line each, of 4 KiB, and larger than a read chunk, on 1 to 5 threads.
    let single = segmented_test_sets_match(
        &log,
        &[
            ("1", "3"),
            ("4096", "2"),
            ("4096", "5"),
            ("700000", "2"),
            ("700000", "1"),
        ],
    );
    assert!(single.len() > 100_000, "the test set is not trivial");
}

/// Checks that the `test-set` of `log` (every candidate) read in segments of each given size on
/// the given threads is the one of a single thread; gives the latter.
fn segmented_test_sets_match(log: &Path, splits: &[(&str, &str)]) -> Vec<u8> {
    let args = |threads: &str| -> Vec<String> {
        [
            "test-set",
            "--audit",
            log.to_str().unwrap(),
            "--max-samples",
            "none",
            "--threads",
            threads,
        ]
        .map(String::from)
        .to_vec()
    };
    let single = run(&args("1"));
    assert!(single.status.success());
    for &(segment, threads) in splits {
        for map in READ_MODES {
            let out = dg()
                .args(args(threads))
                .args(["--segment-size", segment])
                .args(no_mmap(map))
                .output()
                .unwrap();
            assert!(out.status.success(), "{}", stderr(&out));
            assert!(
                out.stdout == single.stdout,
                "segment {segment}, {threads} threads, mmap={map}\n{}",
                diff(&single.stdout, &out.stdout)
            );
        }
    }
    single.stdout
}

#[test]
fn cuts_inside_lines_longer_than_the_read_at_a_cut_give_the_single_threaded_test_set() {
    // Every line of a fixture padded to over 9 KB: each 4 KiB cut lands inside a line longer
    // than what is read at a cut to find the next line start.
    let dir = tempdir();
    let log = dir.path().join("long.jsonl");
    let text = std::fs::read_to_string(parity_dir().join("approved/audit.jsonl")).unwrap();
    let mut padded = String::new();
    for (n, line) in text.lines().enumerate() {
        // (The fixture's lines that are not JSON objects stay as they are.)
        match serde_json::from_str::<serde_json::Value>(line) {
            Ok(serde_json::Value::Object(mut v)) => {
                v.insert("padding".into(), "x".repeat(9000 + n % 5000).into());
                padded.push_str(&serde_json::Value::Object(v).to_string());
            }
            _ => padded.push_str(line),
        }
        padded.push('\n');
    }
    std::fs::write(&log, &padded).unwrap();
    assert!(!segmented_test_sets_match(&log, &[("4096", "3")]).is_empty());
}

#[test]
fn a_segment_longer_than_the_read_window_gives_the_single_threaded_test_set() {
    // One 17 MiB line in a log cut every 4 KiB: the segment holding it is longer than how far
    // the mapped scan's hashing and scan threads may run ahead of each other (16 MiB), which
    // must hold neither of them up for good. Each run gets a minute.
    let dir = tempdir();
    let log = dir.path().join("long-line.jsonl");
    let text = std::fs::read_to_string(parity_dir().join("approved/audit.jsonl")).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    let mut out = String::new();
    for (n, line) in lines.iter().cycle().take(4 * lines.len()).enumerate() {
        if n == 2 * lines.len() {
            out.push_str(&format!(
                "{{\"pipeline_id\": \"long\", \"stage_id\": \"s\", \"padding\": \"{}\"}}\n",
                "x".repeat(17 << 20)
            ));
        }
        out.push_str(line);
        out.push('\n');
    }
    std::fs::write(&log, out).unwrap();
    let out_path = dir.path().join("test-set.jsonl");
    let test_set = |threads: &str, segment: &str, map: &str| {
        let mut child = dg()
            .args([
                "test-set",
                "--audit",
                &s(&log),
                "--max-samples",
                "none",
                "--threads",
                threads,
            ])
            // (To a file: a full stdout pipe would hold the child up while this polls.)
            .args(["--out", &s(&out_path)])
            .args(["--segment-size", segment])
            .args(no_mmap(map))
            .stderr(std::process::Stdio::null())
            .spawn()
            .unwrap();
        let started = std::time::Instant::now();
        while child.try_wait().unwrap().is_none() {
            if started.elapsed() > std::time::Duration::from_secs(60) {
                child.kill().unwrap();
                panic!("{threads} threads, segment {segment}, mmap={map}: still running after a minute");
            }
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
        assert!(child.wait().unwrap().success());
        std::fs::read(&out_path).unwrap()
    };
    let single = test_set("1", "4096", "0");
    assert!(!single.is_empty());
    for map in READ_MODES {
        let got = test_set("3", "4096", map);
        assert!(got == single, "mmap={map}\n{}", diff(&single, &got));
    }
}

#[test]
fn a_log_cut_into_three_files_plain_or_gzip_gives_the_test_set_of_the_whole() {
    use std::io::Write;
    // The real-writer fixture cut at two line boundaries: pipelines run across the files, so
    // pass 2 reads spans that start in one file and end in another.
    let dir = tempdir();
    let whole_path = parity_dir().join("real-writer-shape").join("audit.jsonl");
    let whole = std::fs::read(&whole_path).unwrap();
    let cut = |at: usize| at + whole[at..].iter().position(|&b| b == b'\n').unwrap() + 1;
    let (a, b) = (cut(whole.len() / 3), cut(2 * whole.len() / 3));
    let parts = [&whole[..a], &whole[a..b], &whole[b..]];
    let args = |paths: &[String]| -> Vec<String> {
        let mut v: Vec<String> = ["test-set", "--max-samples", "none", "--min-samples", "1"]
            .map(String::from)
            .to_vec();
        for p in paths {
            v.extend(["--audit".to_owned(), p.clone()]);
        }
        v
    };
    let single = run(&args(&[whole_path.to_str().unwrap().to_owned()]));
    assert!(single.status.success());
    for gzip in [false, true] {
        let paths: Vec<String> = parts
            .iter()
            .enumerate()
            .map(|(i, part)| {
                let path = dir.path().join(format!("part{i}-{gzip}.jsonl"));
                if gzip {
                    let mut enc = flate2::write::GzEncoder::new(
                        std::fs::File::create(&path).unwrap(),
                        flate2::Compression::fast(),
                    );
                    enc.write_all(part).unwrap();
                    enc.finish().unwrap();
                } else {
                    std::fs::write(&path, part).unwrap();
                }
                path.to_str().unwrap().to_owned()
            })
            .collect();
        let out = run(&args(&paths));
        assert!(out.status.success(), "{}", stderr(&out));
        assert!(
            out.stdout == single.stdout,
            "gzip: {gzip}\n{}",
            diff(&single.stdout, &out.stdout)
        );
    }
}

/// Every input's digest in the report is the sha256 of the file as given, whichever way the
/// log was read: hashed on its own thread while the scan threads share the chunks, in segments
/// smaller or larger than a read chunk, plain or gzip.
#[test]
fn the_report_carries_the_sha256_of_each_input_as_given() {
    use sha2::{Digest, Sha256};
    use std::io::Write;
    let dir = tempdir();
    // Every fixture's log in one file: 6 MB, many read chunks.
    let mut all = Vec::new();
    for case in parity_cases() {
        all.extend_from_slice(&std::fs::read(case.join("audit.jsonl")).unwrap());
        if all.last() != Some(&b'\n') {
            all.push(b'\n');
        }
    }
    let plain = dir.path().join("all.jsonl");
    std::fs::write(&plain, &all).unwrap();
    let gz = dir.path().join("all.jsonl.gz");
    let mut enc = flate2::write::GzEncoder::new(std::fs::File::create(&gz).unwrap(), flate2::Compression::fast());
    enc.write_all(&all).unwrap();
    enc.finish().unwrap();
    let fixture = parity_dir().join("approved");
    for (log, segment, threads, map) in [
        (&plain, "700000", "2", "1"),
        (&plain, "4096", "3", "1"),
        (&plain, "4096", "3", "0"),
        (&plain, "64000000", "1", "1"),
        (&gz, "4096", "2", "1"),
    ] {
        let mut args = with_flag(evaluate_args(&fixture), "--threads", threads);
        let i = args.iter().position(|a| a == "--audit").unwrap();
        args[i + 1] = s(log);
        let out = dg()
            .args(&args)
            .args(["--segment-size", segment])
            .args(no_mmap(map))
            .output()
            .unwrap();
        let report: serde_json::Value =
            serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("{e}: {}", stderr(&out)));
        let inputs = report["inputs"].as_array().unwrap();
        assert!(inputs.len() >= 3, "{inputs:?}");
        for input in inputs {
            let name = input["name"].as_str().unwrap();
            let path = if input["role"] == "audit" {
                log.clone()
            } else {
                let flag = format!("--{}", input["role"].as_str().unwrap().replace('_', "-"));
                let j = args
                    .iter()
                    .position(|a| *a == flag)
                    .unwrap_or_else(|| panic!("no {flag}"));
                std::path::PathBuf::from(&args[j + 1])
            };
            let bytes = std::fs::read(&path).unwrap();
            assert_eq!(input["bytes"].as_u64(), Some(bytes.len() as u64), "{name}");
            assert_eq!(
                input["sha256"].as_str(),
                Some(hex::encode(Sha256::digest(&bytes)).as_str()),
                "{name}, segment {segment}, {threads} threads"
            );
        }
    }
}

/// `test-set` does not hash the log (its output carries no digest): the test set read without
/// the hashing thread is byte for byte the one read with it, whichever way the log is read
/// (mapped or copied, one thread or several, segments smaller or larger than a read chunk,
/// plain or gzip), and the command prints it. Hashed, the files' sha256 is the file's; not
/// hashed, it is left empty.
#[test]
fn the_test_set_read_without_hashing_is_the_hashed_one() {
    use deploy_gate::native::{self, ReadOptions};
    use deploy_gate::policy::GatePolicy;
    use deploy_gate::session::Session;
    use sha2::{Digest, Sha256};
    use std::io::Write;
    let dir = tempdir();
    let mut all = Vec::new();
    for case in parity_cases() {
        all.extend_from_slice(&std::fs::read(case.join("audit.jsonl")).unwrap());
        if all.last() != Some(&b'\n') {
            all.push(b'\n');
        }
    }
    let plain = dir.path().join("all.jsonl");
    std::fs::write(&plain, &all).unwrap();
    let gz = dir.path().join("all.jsonl.gz");
    let mut enc = flate2::write::GzEncoder::new(std::fs::File::create(&gz).unwrap(), flate2::Compression::fast());
    enc.write_all(&all).unwrap();
    enc.finish().unwrap();
    let mut policy = GatePolicy::default();
    policy.test_set.max_samples = None;
    policy.test_set.min_samples = 1;
    for (log, segment, threads, map) in [
        (&plain, 700_000, 2, true),
        (&plain, 4096, 3, true),
        (&plain, 4096, 3, false),
        (&plain, 64_000_000, 1, true),
        (&plain, 64_000_000, 1, false),
        (&gz, 4096, 2, true),
    ] {
        let build = |hash: bool| {
            let opts = ReadOptions::new(threads)
                .with_segment(segment)
                .with_map(map)
                .with_hash(hash);
            let mut session = Session::new(policy.clone());
            native::build_test_set(&mut session, std::slice::from_ref(log), opts).unwrap();
            let files = session.audit_index().unwrap().files().to_vec();
            (session.test_set().unwrap().to_jsonl(), files)
        };
        let (hashed, hashed_files) = build(true);
        let (unhashed, unhashed_files) = build(false);
        let what = format!("{}, segment {segment}, {threads} threads, map {map}", log.display());
        assert!(hashed.lines().count() > 20, "{what}");
        assert!(
            hashed == unhashed,
            "{what}\n{}",
            diff(hashed.as_bytes(), unhashed.as_bytes())
        );
        let bytes = std::fs::read(log).unwrap();
        assert_eq!(hashed_files[0].sha256, hex::encode(Sha256::digest(&bytes)), "{what}");
        assert_eq!(unhashed_files[0].sha256, "", "{what}");
        assert_eq!(hashed_files[0].bytes, unhashed_files[0].bytes, "{what}");
        let out = dg()
            .args(["test-set", "--max-samples", "none", "--min-samples", "1", "--audit"])
            .arg(log)
            .args([
                "--threads",
                &threads.to_string(),
                "--segment-size",
                &segment.to_string(),
            ])
            .args(no_mmap(if map { "1" } else { "0" }))
            .output()
            .unwrap();
        assert!(out.status.success(), "{}", stderr(&out));
        assert!(
            out.stdout == hashed.as_bytes(),
            "{what}\n{}",
            diff(hashed.as_bytes(), &out.stdout)
        );
    }
}

/// The `gen_audit` example: the one `DEPLOY_GATE_GEN_AUDIT` names (the test command builds it
/// before the tests run and hands the same one to the e2e tests), or built (in this test's
/// profile) if missing or stale.
fn gen_audit() -> std::path::PathBuf {
    if let Some(built) = std::env::var_os("DEPLOY_GATE_GEN_AUDIT") {
        return built.into();
    }
    let test_exe = std::env::current_exe().unwrap();
    // target/<profile dir>/deps/it-HASH → target/<profile dir>
    let profile_dir = test_exe.parent().unwrap().parent().unwrap();
    let mut build = std::process::Command::new(env!("CARGO"));
    build
        .args(["build", "--quiet", "--example", "gen_audit", "--manifest-path"])
        .arg(Path::new(env!("CARGO_MANIFEST_DIR")).join("Cargo.toml"))
        .arg("--target-dir")
        .arg(profile_dir.parent().unwrap());
    // The profile whose folder this is: `debug` is the dev profile's, any other its own name's.
    match profile_dir.file_name().and_then(|n| n.to_str()) {
        Some("debug") | None => {}
        Some(profile) => {
            build.args(["--profile", profile]);
        }
    }
    let status = build.status().expect("cargo runs");
    assert!(status.success(), "cargo build --example gen_audit failed");
    profile_dir.join("examples/gen_audit")
}

#[test]
fn gen_audit_prints_help_and_refuses_unknown_arguments_writing_nothing() {
    let exe = gen_audit();
    for flag in ["--help", "-h"] {
        let dir = tempdir();
        let out = std::process::Command::new(&exe)
            .arg(flag)
            .current_dir(dir.path())
            .output()
            .unwrap();
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert_eq!(out.status.code(), Some(0), "{flag}: {}", stderr(&out));
        assert!(stdout.contains("Usage: gen_audit"), "{flag}: {stdout}");
        for option in ["--size", "--out", "--seed", "--ascii"] {
            assert!(stdout.contains(option), "{flag}: {option} missing from {stdout}");
        }
        let written: Vec<_> = std::fs::read_dir(dir.path()).unwrap().collect();
        assert!(written.is_empty(), "{flag} wrote {written:?}");
    }
    for args in [&["--bogus"][..], &["stray"], &["--size", "ten"], &["--seed"]] {
        let dir = tempdir();
        let out = std::process::Command::new(&exe)
            .args(args)
            .current_dir(dir.path())
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        assert!(!out.stderr.is_empty(), "{args:?}: no message");
        let written: Vec<_> = std::fs::read_dir(dir.path()).unwrap().collect();
        assert!(written.is_empty(), "{args:?} wrote {written:?}");
    }
    // The ordinary use still writes the files.
    let dir = tempdir();
    let out = std::process::Command::new(&exe)
        .args(["--size", "4K", "--out"])
        .arg(dir.path())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let audit = std::fs::read(dir.path().join("audit.jsonl")).unwrap();
    assert!(audit.len() >= 4096, "{} bytes", audit.len());
}
