//! Memory bounds of pass 1, the selection, pass 2 and the scoring, measured with an allocator
//! that counts the bytes live in the process (each test runs alone in a child process of this
//! binary): what a step holds must follow from what its result holds, not from the number or
//! the size of the lines read.

use deploy_gate::audit::{scan_all, AuditIndex};
use deploy_gate::policy::{PassSet, TestSetPolicy};
use deploy_gate::scoring::score;
use deploy_gate::testset::{TestSet, TestSetBuilder, TO_END};
use deploy_gate::verdicts::parse_verdicts;
use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicBool, AtomicIsize, Ordering};
use std::sync::Mutex;

/// The system allocator, counting the bytes live and their peak.
struct Counting;

static LIVE: AtomicIsize = AtomicIsize::new(0);
static PEAK: AtomicIsize = AtomicIsize::new(0);
/// Held by each test while it measures, so that the others' allocations do not count.
static TURN: Mutex<()> = Mutex::new(());

/// Whether the allocations are counted: only in the child process that runs one test alone
/// (see [`alone`]), so the other tests of this binary pay nothing for the counting.
static COUNTING: AtomicBool = AtomicBool::new(false);

fn count(delta: isize) {
    if !COUNTING.load(Ordering::Relaxed) {
        return;
    }
    let now = LIVE.fetch_add(delta, Ordering::Relaxed) + delta;
    PEAK.fetch_max(now, Ordering::Relaxed);
}

// SAFETY: every call is passed on to the system allocator unchanged; the counters are atomics
// that never allocate.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        count(layout.size() as isize);
        // SAFETY: as the caller promised.
        unsafe { System.alloc(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        count(-(layout.size() as isize));
        // SAFETY: as the caller promised.
        unsafe { System.dealloc(ptr, layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        count(new_size as isize - layout.size() as isize);
        // SAFETY: as the caller promised.
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static ALLOC: Counting = Counting;

/// Taken by each test for its whole run; counting starts with it.
fn turn() -> std::sync::MutexGuard<'static, ()> {
    let turn = TURN.lock().unwrap_or_else(|e| e.into_inner());
    COUNTING.store(true, Ordering::Relaxed);
    turn
}

/// Set in the child process that runs one of these tests alone: the test's name.
const ALONE: &str = "IT_BOUNDS_ALONE";

/// Runs `body` in a child process of this binary that runs test `name` alone on one thread: the
/// allocator counts the bytes live in the whole process, and the other tests of this binary
/// (and libtest's threads) would count too.
fn alone(name: &str, body: impl FnOnce()) {
    let test = format!("bounds::{name}");
    if std::env::var_os(ALONE).is_some_and(|v| v == *test) {
        return body();
    }
    let out = std::process::Command::new(std::env::current_exe().unwrap())
        .args(["--exact", &test, "--test-threads=1", "--nocapture"])
        .env(ALONE, &test)
        .stdin(std::process::Stdio::null())
        .output()
        .expect("the test binary runs");
    print!("{}", String::from_utf8_lossy(&out.stdout));
    eprint!("{}", String::from_utf8_lossy(&out.stderr));
    assert!(
        out.status.success() && String::from_utf8_lossy(&out.stdout).contains("1 passed"),
        "{test} in its own process: {}",
        crate::common::text(&out)
    );
}

/// Runs `f` and gives its result and the most bytes live at once beyond what was live when it
/// started (the threads it starts count too; the caller holds [`turn`]).
fn peak_of<T>(f: impl FnOnce() -> T) -> (T, usize) {
    let base = LIVE.load(Ordering::Relaxed);
    PEAK.store(base, Ordering::Relaxed);
    let out = f();
    (out, (PEAK.load(Ordering::Relaxed) - base).max(0) as usize)
}

/// Pass 2 over in-memory files, each range fed in `chunk`-byte pieces, the ranges in reverse
/// order (so a pipeline's later lines can come before its earlier ones).
fn pass_2(index: &AuditIndex, files: &[&[u8]], policy: &TestSetPolicy, chunk: usize) -> TestSet {
    let mut builder = TestSetBuilder::new(index, index.select(policy));
    let ranges = builder.ranges().to_vec();
    for (i, r) in ranges.iter().enumerate().rev() {
        let file = files[r.file as usize];
        let end = if r.end == TO_END { file.len() } else { r.end as usize };
        for piece in file[r.start as usize..end].chunks(chunk) {
            builder.push(i, piece).unwrap();
        }
        builder.end_range(i).unwrap();
    }
    builder.finish().unwrap()
}

fn stage(id: &str, stage: &str, output: &str, input: bool) -> String {
    let input = if input { r#", "input": "the user input""# } else { "" };
    format!("{{\"pipeline_id\": \"{id}\", \"stage_id\": \"{stage}\"{input}, \"output\": \"{output}\"}}\n")
}

fn complete(id: &str) -> String {
    format!("{{\"pipeline_id\": \"{id}\", \"is_complete\": true, \"verdict\": \"PASS\", \"template_id\": \"t\"}}\n")
}

#[test]
fn pass_2_keeps_one_output_per_stage_id_not_every_stage_line() {
    alone("pass_2_keeps_one_output_per_stage_id_not_every_stage_line", || {
        let _turn = turn();
        // One pipeline with 16,000 stage lines of about 1 KB (16 MB) over 4 stage ids, in two
        // files (so in two ranges, read last first), and 20 small pipelines.
        let pad = "x".repeat(1000);
        let mut files = [String::new(), String::new()];
        for i in 0..16_000 {
            files[i / 8_000].push_str(&stage(
                "big",
                &format!("s{}", (i * 7) % 4),
                &format!("{i:06}{pad}"),
                i == 5,
            ));
        }
        files[1].push_str(&complete("big"));
        for k in 0..20 {
            files[1].push_str(&stage(&format!("p{k}"), "s0", "o", true));
            files[1].push_str(&complete(&format!("p{k}")));
        }
        let index = scan_all(
            &[("a.jsonl", files[0].as_bytes()), ("b.jsonl", files[1].as_bytes())],
            PassSet::default(),
        );
        let bytes: Vec<&[u8]> = files.iter().map(|f| f.as_bytes()).collect();
        let policy = TestSetPolicy {
            min_samples: 1,
            ..TestSetPolicy::default()
        };
        let (ts, peak) = peak_of(|| pass_2(&index, &bytes, &policy, 64 << 10));
        let big = ts.cases.iter().find(|c| &*c.pipeline_id.text == "big").unwrap();
        let outputs: Vec<(&str, String)> = big
            .expected_stage_outputs
            .0
            .iter()
            .map(|(k, v)| (k.as_str(), v.get()[1..7].to_owned()))
            .collect();
        // Key order of first appearance (s0, s3, s2, s1: i·7 mod 4), each with its last output.
        assert_eq!(
            outputs,
            [("s0", "015996"), ("s3", "015997"), ("s2", "015998"), ("s1", "015999")].map(|(k, v)| (k, v.to_owned()))
        );
        assert_eq!(big.input_text.get(), r#""the user input""#);
        // What the cases hold is about 4 KB; the chunks fed and the parse add little.
        assert!(
            peak < 1 << 20,
            "pass 2 had {peak} bytes live at once for a 16 MB pipeline"
        );
    });
}

#[test]
fn a_chosen_id_is_kept_once_from_the_selection_to_the_scores() {
    alone("a_chosen_id_is_kept_once_from_the_selection_to_the_scores", || {
        let _turn = turn();
        // 24 pipelines with 256 KiB ids: 6 MiB of ids, which the test set must hold once, and the
        // scores (one outcome per case, sharing the case's id) must not copy again.
        let ids: Vec<String> = (0..24)
            .map(|k| format!("{k:04}{}", "i".repeat((256 << 10) - 4)))
            .collect();
        let mut log = String::new();
        for id in &ids {
            log.push_str(&stage(id, "s0", "o", true));
            log.push_str(&complete(id));
        }
        let index = scan_all(&[("a.jsonl", log.as_bytes())], PassSet::default());
        let id_bytes: usize = ids.iter().map(String::len).sum();
        let policy = TestSetPolicy::default();
        let (ts, peak) = peak_of(|| pass_2(&index, &[log.as_bytes()], &policy, 1 << 20));
        assert_eq!(ts.cases.len(), ids.len());
        // The ids once, and a line or two of carry (a line is longer than a chunk here).
        assert!(
            peak < id_bytes + (id_bytes >> 2),
            "selection and pass 2 had {peak} bytes live at once for {id_bytes} bytes of ids"
        );
        let verdicts: String = ids
            .iter()
            .map(|id| format!("{{\"pipeline_id\": \"{id}\", \"verdict\": \"PASS\"}}\n"))
            .collect();
        let old = parse_verdicts(deploy_gate::Role::OldVerdicts, "old.jsonl", verdicts.as_bytes()).unwrap();
        let new = parse_verdicts(deploy_gate::Role::NewVerdicts, "new.jsonl", verdicts.as_bytes()).unwrap();
        let (scoring, peak) = peak_of(|| score(&ts, &old, &new));
        assert_eq!(scoring.cases.len(), ids.len());
        assert!(
            peak < id_bytes >> 3,
            "scoring had {peak} bytes live at once for {id_bytes} bytes of ids"
        );
    });
}

#[test]
fn the_index_costs_a_fixed_record_per_pipeline_and_its_id_once() {
    alone("the_index_costs_a_fixed_record_per_pipeline_and_its_id_once", || {
        let _turn = turn();
        // 200,000 one-line pipelines with 24-byte ids, scanned as one segment (as the page reads a
        // file): the index is that segment's table, not a copy of it.
        let n = 200_000;
        let log: String = (0..n)
            .map(|k| format!("{{\"pipeline_id\": \"pipeline-{k:015}\", \"stage_id\": \"s0\", \"input\": \"i\"}}\n"))
            .collect();
        let (index, peak) = peak_of(|| scan_all(&[("a.jsonl", log.as_bytes())], PassSet::default()));
        assert_eq!(index.summary().pipelines, n as u64);
        let per_pipeline = peak / n;
        println!("{per_pipeline} bytes per pipeline at the peak");
        // A 64-byte record and an 8-byte hash slot (each table grown by doubling, so up to twice
        // that at its peak) and the 24-byte id.
        assert!(
            per_pipeline <= 2 * (64 + 8 * 8 / 7) + 2 * 24,
            "{per_pipeline} bytes live per pipeline at the peak of pass 1"
        );
    });
}

#[test]
fn sampling_holds_a_bounded_number_of_keys_however_many_candidates() {
    alone(
        "sampling_holds_a_bounded_number_of_keys_however_many_candidates",
        || {
            let _turn = turn();
            // 200,000 candidates sampled down to 200: one 48-byte key per candidate gathered at once
            // would be 9.6 MB; each sampling run holds at most about 2·200 keys (at least 4096).
            let n = 200_000;
            let mut log = String::new();
            for k in 0..n {
                let id = format!("p{k}");
                log.push_str(&stage(&id, "s0", "o", true));
                log.push_str(&complete(&id));
            }
            let index = scan_all(&[("a.jsonl", log.as_bytes())], PassSet::default());
            let (selection, peak) = peak_of(|| index.select(&TestSetPolicy::default()));
            assert_eq!((selection.candidates, selection.len()), (n, 200));
            // The candidates' indices (4 bytes each), the runs' keys, and the chosen ids.
            assert!(peak < 4 * n + (2 << 20), "the selection had {peak} bytes live at once");
        },
    );
}

#[test]
fn a_verdict_file_holds_a_fixed_few_bytes_per_record_it_does_not_keep_in_every_format() {
    alone(
        "a_verdict_file_holds_a_fixed_few_bytes_per_record_it_does_not_keep_in_every_format",
        || {
            let _turn = turn();
            // 100,000 records with 24-byte ids, 10 of them kept (the test set's): what is held for the
            // others is a 16-byte hash pair each, whatever the format; a tree of the file (a JSON
            // `Value`) or a copy of each record would be hundreds of bytes a record.
            let n = 100_000;
            let id = |k: usize| format!("pipeline-{k:015}");
            let keep: deploy_gate::verdicts::KeepSet = (0..10).map(|k| id(k * 1000).into()).collect();
            let jsonl: String = (0..n)
                .map(|k| format!("{{\"pipeline_id\": \"{}\", \"verdict\": \"PASS\"}}\n", id(k)))
                .collect();
            let array = format!(
                "[{}]",
                (0..n)
                    .map(|k| format!("{{\"pipeline_id\": \"{}\", \"verdict\": \"PASS\"}}", id(k)))
                    .collect::<Vec<_>>()
                    .join(",\n")
            );
            let map = format!(
                "{{{}}}",
                (0..n)
                    .map(|k| format!("\"{}\": \"PASS\"", id(k)))
                    .collect::<Vec<_>>()
                    .join(",\n")
            );
            let csv: String = std::iter::once("pipeline_id,verdict\n".to_owned())
                .chain((0..n).map(|k| format!("{},PASS\n", id(k))))
                .collect();
            for (format, text) in [("jsonl", &jsonl), ("array", &array), ("map", &map), ("csv", &csv)] {
                let (verdicts, peak) = peak_of(|| {
                    deploy_gate::verdicts::parse_verdicts_keeping(
                        deploy_gate::Role::OldVerdicts,
                        format,
                        text.as_bytes(),
                        keep.clone(),
                    )
                    .unwrap()
                });
                assert_eq!((verdicts.records, verdicts.len()), (n, n), "{format}");
                let per_record = peak / n;
                println!("{format}: {per_record} bytes live per record at the peak");
                // The hash pairs (16 bytes, their vector grown by doubling: up to 32 at its peak) and
                // the sort at the end.
                assert!(
                    per_record <= 40,
                    "{format}: {per_record} bytes live per record not kept"
                );
            }
        },
    );
}
