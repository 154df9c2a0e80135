//! The engine called as a binding calls it: on a thread of its own, with a progress callback,
//! stopped by its token from another thread; real worker processes.

use super::*;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;

/// Counts what the run tells.
#[derive(Default)]
struct Count {
    done: AtomicU64,
    lines: Mutex<Vec<String>>,
    plans: AtomicU64,
    lanes_done: AtomicU64,
}

impl Progress for Count {
    fn line(&self, text: &str) {
        self.lines.lock().unwrap().push(text.to_owned());
    }
    fn plan(&self, _plan: &Plan) {
        self.plans.fetch_add(1, Ordering::SeqCst);
    }
    fn case_done(&self, _lane: usize, _errored: bool) {
        self.done.fetch_add(1, Ordering::SeqCst);
    }
    fn lane_done(&self, _lane: &LaneReport) {
        self.lanes_done.fetch_add(1, Ordering::SeqCst);
    }
}

fn spec(dir: &Path, cases: usize, worker: &str) -> RunSpec {
    let text: String = (0..cases)
        .map(|i| format!("{{\"pipeline_id\": \"p{i}\", \"input_text\": \"x\"}}\n"))
        .collect();
    RunSpec {
        test_set: TestSetInput::new("cases.jsonl", None, text.into_bytes()).unwrap(),
        models: vec![Model {
            name: String::new(),
            asking: Asking::Program(Workers {
                argv: vec!["python3".into(), "-c".into(), worker.into()],
                jobs: 2,
                timeout: None,
                retries: 0,
            }),
            out: dir.join("out.jsonl"),
        }],
        cache: CacheDir::Off,
        order_seed: 0,
        policy: None,
        outputs: true,
    }
}

fn assert_send<T: Send + 'static>(_: &T) {}

#[test]
fn a_run_on_another_thread_reports_progress_and_completes() {
    let dir = tempfile::tempdir().unwrap();
    let worker = "import sys\nfor line in sys.stdin:\n    print('{\"verdict\": \"PASS\"}', flush=True)\n";
    let spec = spec(dir.path(), 20, worker);
    assert_send(&spec);
    let count = Arc::new(Count::default());
    let progress: Arc<dyn Progress> = count.clone();
    let cancel = Arc::new(Cancel::new());
    let token = Arc::clone(&cancel);
    let ran = std::thread::spawn(move || run(spec, progress, &token))
        .join()
        .unwrap()
        .unwrap();
    assert!(matches!(ran.ended, Ended::Completed), "{:?}", ran.ended);
    assert_eq!(count.done.load(Ordering::SeqCst), 20);
    assert_eq!(count.plans.load(Ordering::SeqCst), 1);
    assert_eq!(count.lanes_done.load(Ordering::SeqCst), 1);
    assert_eq!(ran.lanes[0].recorded, 20);
    assert_eq!(ran.lanes[0].tally.verdicts, 20);
    let written = std::fs::read_to_string(dir.path().join("out.jsonl")).unwrap();
    assert_eq!(written.lines().count(), 20);
    assert!(
        written.starts_with("{\"pipeline_id\":\"p0\",\"verdict\":\"PASS\""),
        "{written}"
    );
}

#[test]
fn a_cancelled_run_keeps_whole_records_and_the_next_resumes() {
    let dir = tempfile::tempdir().unwrap();
    // Slow answers: a case every 50 ms per worker.
    let worker =
        "import sys, time\nfor line in sys.stdin:\n    time.sleep(0.05)\n    print('{\"verdict\": \"PASS\"}', flush=True)\n";
    let count = Arc::new(Count::default());
    let cancel = Arc::new(Cancel::new());
    let (c, token) = (count.clone(), Arc::clone(&cancel));
    let spec1 = spec(dir.path(), 200, worker);
    let handle = std::thread::spawn(move || run(spec1, c, &token));
    while count.done.load(Ordering::SeqCst) < 4 {
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    cancel.cancel(2);
    let ran = handle.join().unwrap().unwrap();
    assert!(matches!(ran.ended, Ended::Cancelled(2)), "{:?}", ran.ended);
    let first = ran.lanes[0].recorded;
    assert!((4..200).contains(&first), "{first}");
    let written = std::fs::read_to_string(dir.path().join("out.jsonl")).unwrap();
    assert_eq!(written.lines().count() as u64, first);
    assert!(written.ends_with('\n'));
    // Resumed: only the rest is asked.
    let fast = "import sys\nfor line in sys.stdin:\n    print('{\"verdict\": \"PASS\"}', flush=True)\n";
    let again = Arc::new(Count::default());
    let ran = run(spec(dir.path(), 200, fast), again.clone(), &Cancel::new()).unwrap();
    assert!(matches!(ran.ended, Ended::Completed), "{:?}", ran.ended);
    assert_eq!(again.done.load(Ordering::SeqCst), 200 - first);
    assert_eq!(ran.lanes[0].recorded, 200);
    assert_eq!(ran.lanes[0].tally.asked, 200 - first);
}
