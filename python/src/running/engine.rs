//! Running models in-process: `run_endpoints` calls the library's run engine
//! ([`deploy_gate::native::run`]) as `deploy-gate run` does, on a thread of its own with the GIL
//! released. What the engine tells is handed to Python callables (the lines the CLI prints on
//! stderr, and each case done, taking the GIL for each), and Ctrl-C stops it: the calling thread
//! checks Python's signals while the engine runs, sets the engine's cancellation token on
//! `KeyboardInterrupt`, waits for the engine to write its last whole records, then raises.

use deploy_gate::native::files::Notice;
use deploy_gate::native::run::{
    read_endpoint_file, run, Asking, CacheDir, Cancel, Ended, LaneReport, Model, Plan, Progress, Ran, RunSpec,
    SequentialEnd, SequentialPolicy, TestSetInput,
};
use deploy_gate::policy::PolicyInput;
use pyo3::prelude::*;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::sync::mpsc;
use std::sync::Arc;
use std::time::Duration;

/// How often the calling thread checks Python's signals while the engine runs.
const SIGNAL_POLL: Duration = Duration::from_millis(50);

/// A policy file is a small JSON object (as the CLI reads it).
const MAX_POLICY_FILE: u64 = 1 << 20;

/// SIGINT's number, the reason a Ctrl-C gives the engine (as the CLI's handler does).
const SIGINT: i32 = 2;

/// The engine's progress told to Python: `on_line(text)` for every line the CLI would print
/// (the header, workers' lines, the summary), `on_case(lane, errored)` for every record written.
struct ToPython {
    test_set: String,
    on_line: Option<Py<PyAny>>,
    on_case: Option<Py<PyAny>>,
}

/// A callback's failure must not stop the run: it is shown as Python shows an unraisable one.
fn shown(py: Python<'_>, result: PyResult<Py<PyAny>>) {
    if let Err(e) = result {
        e.write_unraisable(py, None);
    }
}

impl Progress for ToPython {
    fn line(&self, text: &str) {
        if let Some(f) = &self.on_line {
            Python::with_gil(|py| shown(py, f.call1(py, (text,))));
        }
    }

    // The header, the sequential end and the summary: the CLI's lines (the library's wording).
    fn plan(&self, plan: &Plan) {
        self.line(&plan.header(&self.test_set));
    }

    fn case_done(&self, lane: usize, errored: bool) {
        if let Some(f) = &self.on_case {
            Python::with_gil(|py| shown(py, f.call1(py, (lane, errored))));
        }
    }

    fn notice(&self, notice: Notice) {
        let warning = if notice.warning { "warning: " } else { "" };
        self.line(&format!("deploy-gate: {warning}{}", notice.text));
    }

    fn sequential_done(&self, end: &SequentialEnd) {
        if let Some(line) = end.summary() {
            self.line(&line);
        }
    }

    fn lane_done(&self, lane: &LaneReport) {
        for line in lane.summary() {
            self.line(&line);
        }
    }
}

/// A sequential policy file, read as `deploy-gate run --policy FILE` reads it.
fn read_policy(path: &Path) -> anyhow::Result<SequentialPolicy> {
    let shown = path.display().to_string();
    let mut bytes = Vec::new();
    std::fs::File::open(path)
        .and_then(|f| f.take(MAX_POLICY_FILE + 1).read_to_end(&mut bytes))
        .map_err(|e| anyhow::anyhow!("cannot read {shown}: {e}"))?;
    if bytes.len() as u64 > MAX_POLICY_FILE {
        anyhow::bail!("{shown} (policy file): more than {MAX_POLICY_FILE} bytes; a policy file is a small JSON object");
    }
    let policy = PolicyInput::from_file(&bytes)
        .map_err(|e| anyhow::anyhow!("{shown} (policy file): {e}"))?
        .into_policy()
        .map_err(|e| anyhow::anyhow!("{shown} (policy file): {e}"))?;
    Ok(SequentialPolicy { policy, file: shown })
}

/// The spec of `deploy-gate run --test-set TEST_SET` with one endpoint file (`--endpoint`) or
/// two (`--old`, `--new`), their outputs, the cache and the order seed or the policy.
fn spec_of(
    test_set: &Path,
    endpoints: &[PathBuf],
    outs: &[PathBuf],
    order_seed: u64,
    cache: CacheDir,
    policy: Option<&Path>,
    outputs: bool,
) -> anyhow::Result<RunSpec> {
    if endpoints.is_empty() || endpoints.len() > 2 || endpoints.len() != outs.len() {
        anyhow::bail!("a run has one endpoint file or two (old and new), each with its output");
    }
    let names: &[&str] = if endpoints.len() == 1 { &[""] } else { &["old", "new"] };
    let mut models = Vec::new();
    for ((name, endpoint), out) in names.iter().zip(endpoints).zip(outs) {
        models.push(Model {
            name: (*name).to_owned(),
            asking: Asking::Endpoint(read_endpoint_file(endpoint)?),
            out: out.clone(),
        });
    }
    Ok(RunSpec {
        test_set: TestSetInput::read(test_set)?,
        models,
        cache,
        order_seed,
        policy: policy.map(read_policy).transpose()?,
        outputs,
    })
}

/// How many records each output holds, as the CLI says it when a run stops.
fn done_counts(ran: &Ran) -> String {
    ran.lanes
        .iter()
        .map(|l| {
            format!(
                "{} of {} cases have a record in {}",
                l.recorded,
                l.cases,
                l.out.display()
            )
        })
        .collect::<Vec<_>>()
        .join("; ")
}

/// Runs `deploy-gate run` in-process: `endpoints` (one, or old and new) over the test set into
/// `outs`, with `cache` (a folder; `None` with `no_cache` false: `.deploy-gate-cache` beside
/// the first output), `order_seed`, a sequential `policy_file` and `outputs` (false: the records
/// keep none of the answers, as `--no-outputs`). Returns `(None, summary)`
/// when every case asked has its record, or `(message, summary)` when the run failed (the CLI's
/// `deploy-gate: error:` message); raises `KeyboardInterrupt` after a Ctrl-C has stopped it
/// (its records whole: the same call resumes).
#[pyfunction]
#[pyo3(signature = (test_set, endpoints, outs, order_seed=0, cache=None, no_cache=false, policy_file=None, on_line=None, on_case=None, outputs=true))]
#[allow(clippy::too_many_arguments)]
pub fn run_endpoints(
    py: Python<'_>,
    test_set: PathBuf,
    endpoints: Vec<PathBuf>,
    outs: Vec<PathBuf>,
    order_seed: u64,
    cache: Option<PathBuf>,
    no_cache: bool,
    policy_file: Option<PathBuf>,
    on_line: Option<Py<PyAny>>,
    on_case: Option<Py<PyAny>>,
    outputs: bool,
) -> PyResult<(Option<String>, String)> {
    let cache = match (cache, no_cache) {
        (_, true) => CacheDir::Off,
        (Some(dir), false) => CacheDir::At(dir),
        (None, false) => CacheDir::Beside,
    };
    let spec = match py.allow_threads(|| {
        spec_of(
            &test_set,
            &endpoints,
            &outs,
            order_seed,
            cache,
            policy_file.as_deref(),
            outputs,
        )
    }) {
        Ok(spec) => spec,
        Err(e) => return Ok((Some(format!("{e:#}")), String::new())),
    };
    let progress: Arc<dyn Progress> = Arc::new(ToPython {
        test_set: test_set.display().to_string(),
        on_line,
        on_case,
    });
    let cancel = Arc::new(Cancel::new());
    let (tx, rx) = mpsc::channel();
    let engine = {
        let cancel = Arc::clone(&cancel);
        let progress = Arc::clone(&progress);
        std::thread::Builder::new()
            .name("deploy-gate run".into())
            .spawn(move || {
                let _ = tx.send(run(spec, progress, &cancel));
            })
            .map_err(|e| pyo3::exceptions::PyOSError::new_err(format!("cannot start the run's thread: {e}")))?
    };
    let mut interrupted: Option<PyErr> = None;
    let mut rx = rx;
    let outcome = loop {
        // A receiver is not `Sync`: it goes into the GIL-free wait and comes back out.
        let (got, back) = py.allow_threads(move || (rx.recv_timeout(SIGNAL_POLL), rx));
        rx = back;
        match got {
            Ok(outcome) => break Some(outcome),
            Err(mpsc::RecvTimeoutError::Disconnected) => break None,
            Err(mpsc::RecvTimeoutError::Timeout) => {
                if let Err(e) = py.check_signals() {
                    // Stop at the engine's next turn; the records written stay whole.
                    cancel.cancel(SIGINT);
                    interrupted.get_or_insert(e);
                }
            }
        }
    };
    let joined = py.allow_threads(|| engine.join());
    let emit = |text: String| progress.line(&text);
    let Some(outcome) = outcome.filter(|_| joined.is_ok()) else {
        return Err(pyo3::exceptions::PyRuntimeError::new_err("the run engine panicked"));
    };
    let ran = match outcome {
        Ok(ran) => ran,
        Err(e) => match interrupted {
            Some(k) => return Err(k),
            None => return Ok((Some(format!("{e:#}")), String::new())),
        },
    };
    let counts = done_counts(&ran);
    match ran.ended {
        Ended::Completed => match interrupted {
            Some(k) => Err(k),
            None => Ok((None, counts)),
        },
        Ended::Cancelled(signal) => {
            emit(format!(
                "deploy-gate run: interrupted (signal {signal}); {counts}; run the same command again to resume"
            ));
            Err(interrupted.unwrap_or_else(|| pyo3::exceptions::PyKeyboardInterrupt::new_err(())))
        }
        Ended::Failed(e) => {
            emit(format!("deploy-gate run: stopped; {counts} (run again to resume)"));
            match interrupted {
                Some(k) => Err(k),
                None => Ok((Some(format!("{e:#}")), counts)),
            }
        }
    }
}

/// Registers the running functions on the module.
pub(crate) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(run_endpoints, m)?)?;
    Ok(())
}
