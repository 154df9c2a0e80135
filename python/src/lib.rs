//! `deploy_gate._core`: the Python binding's native module, a mapping layer over the core
//! crate. Python values come in (paths, policy JSON, verdict texts the Python side made with
//! `str(v or "")`), the core's session, scoring, decision and renderers run, and their values
//! go out (JSON text, tuples, floats). No rule of the gate is implemented here: every number,
//! reason and byte of a report is the core's. File scans run with the GIL released.

use deploy_gate::attest;
use deploy_gate::audit::PipelineId;
use deploy_gate::decision::{compare_with, decide, Evidence};
use deploy_gate::input::{InputError, Role, Side};
use deploy_gate::native::{self, file_name, ReadError, ReadOptions, Watch};
use deploy_gate::policy::{GatePolicy, PolicyInput};
use deploy_gate::render::{html, junit, markdown};
use deploy_gate::report::GateReport;
use deploy_gate::runs::{score_answers, verdicts_of, Answer};
use deploy_gate::session::{Session as CoreSession, SessionError};
use deploy_gate::trajectory::{composite, mean_score, parse_trajectories, Metrics};
use pyo3::exceptions::{PyFileNotFoundError, PyOSError, PyRuntimeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyBool, PyBytes, PyInt};
use std::path::PathBuf;
use std::sync::Arc;

mod running;

/// Raises `deploy_gate.errors.<class>(message, role, file, line)`.
fn raise(
    py: Python<'_>,
    class: &str,
    message: String,
    role: Option<&str>,
    file: Option<&str>,
    line: Option<u64>,
) -> PyErr {
    let made = py
        .import("deploy_gate.errors")
        .and_then(|m| m.getattr(class))
        .and_then(|c| c.call1((message.clone(), role, file, line)));
    match made {
        Ok(value) => PyErr::from_value(value),
        Err(e) => e,
    }
}

/// An input error as the Python exception of its role.
fn input_error(py: Python<'_>, e: &InputError) -> PyErr {
    let class = match e.role {
        Role::Audit => "AuditFileError",
        Role::OldVerdicts | Role::NewVerdicts => "VerdictFileError",
        Role::OldTrajectories | Role::NewTrajectories => "TrajectoryFileError",
    };
    raise(py, class, e.to_string(), Some(e.role.as_str()), Some(&e.file), e.line)
}

/// The I/O error in `e` or its causes that says a file does not exist, if any.
fn missing_file<'e>(e: &'e (dyn std::error::Error + 'static)) -> Option<&'e std::io::Error> {
    let mut at = Some(e);
    while let Some(err) = at {
        match err.downcast_ref::<std::io::Error>() {
            Some(io) if io.kind() == std::io::ErrorKind::NotFound => return Some(io),
            _ => at = err.source(),
        }
    }
    None
}

/// A file that cannot be opened or read, `message` naming it: `FileNotFoundError` (a subclass
/// of `OSError`, its `errno` set) when `e` or a cause of it says the file does not exist, else
/// `OSError`.
fn os_error(py: Python<'_>, message: String, e: &(dyn std::error::Error + 'static)) -> PyErr {
    let Some(io) = missing_file(e) else {
        return PyOSError::new_err(message);
    };
    let err = PyFileNotFoundError::new_err(message);
    if let Some(errno) = io.raw_os_error() {
        // Not `filename`: with it set, `str()` would no longer be the message.
        let _ = err.value(py).setattr("errno", errno);
    }
    err
}

/// A reading error: the audit log not as pass 1 read it is an input error; a file that cannot
/// be opened or read is an `OSError` ([`os_error`]: `FileNotFoundError` for a missing one) with
/// the CLI's message and its cause.
fn read_error(py: Python<'_>, e: ReadError) -> PyErr {
    match e {
        ReadError::Pass2 { ref path, .. } | ReadError::Gzip { ref path, .. } | ReadError::Shorter(ref path) => {
            let name = file_name(path);
            raise(
                py,
                "AuditFileError",
                native::files::chain(&e),
                Some("audit"),
                Some(&name),
                None,
            )
        }
        ReadError::Session(e) => session_error(py, e),
        e => os_error(py, native::files::chain(&e), &e),
    }
}

/// How often a native read started from Python looks up: Ctrl-C and the progress callback.
const LOOK_UP: std::time::Duration = std::time::Duration::from_millis(50);

/// Runs `work` (a native read, given a [`Watch`]) on a thread of its own while this thread,
/// without the GIL but for a moment every [`LOOK_UP`], checks Python's signals and tells
/// `progress(read, total)` (on a change only; finally `(total, total)` after pass 1). A signal
/// handler that raises (Ctrl-C: `KeyboardInterrupt`) cancels the read, waits for its thread to
/// stop (within a chunk) and raises; so does an exception in `progress`. Nothing keeps running
/// once this returns.
fn watched<T: Send>(
    py: Python<'_>,
    progress: Option<Py<PyAny>>,
    work: impl FnOnce(Watch) -> Result<T, ReadError> + Send,
) -> PyResult<T> {
    let watch = Watch::new();
    std::thread::scope(|scope| {
        let (done_tx, done_rx) = std::sync::mpsc::channel::<()>();
        // (A receiver is not `Sync`; the GIL-free closures borrow it.)
        let done_rx = std::sync::Mutex::new(done_rx);
        let theirs = watch.clone();
        let worker = scope.spawn(move || {
            let out = work(theirs);
            let _ = done_tx.send(());
            out
        });
        let mut told = (u64::MAX, u64::MAX);
        let stop = |e: PyErr| {
            watch.cancel();
            py.allow_threads(|| worker_join_quietly(&done_rx));
            Err(e)
        };
        loop {
            let finished = !matches!(
                py.allow_threads(|| lock(&done_rx).recv_timeout(LOOK_UP)),
                Err(std::sync::mpsc::RecvTimeoutError::Timeout)
            );
            if let Err(e) = py.check_signals() {
                return stop(e);
            }
            if let Some(f) = &progress {
                let now = watch.progress();
                if now != told && now.1 > 0 {
                    told = now;
                    if let Err(e) = f.call1(py, now) {
                        return stop(e);
                    }
                }
            }
            if finished {
                break;
            }
        }
        match worker.join() {
            Ok(out) => out.map_err(|e| read_error(py, e)),
            Err(panic) => std::panic::resume_unwind(panic),
        }
    })
}

/// Waits for a cancelled read's thread to say it ended (the scope joins it).
fn worker_join_quietly(done: &std::sync::Mutex<std::sync::mpsc::Receiver<()>>) {
    let _ = lock(done).recv();
}

fn lock<T>(m: &std::sync::Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

fn session_error(py: Python<'_>, e: SessionError) -> PyErr {
    match e {
        SessionError::Input(e) => input_error(py, &e),
        other => PyRuntimeError::new_err(other.to_string()),
    }
}

fn policy_error(py: Python<'_>, message: String) -> PyErr {
    raise(py, "PolicyError", message, None, None, None)
}

fn side_of(side: &str) -> PyResult<Side> {
    match side {
        "old" => Ok(Side::Old),
        "new" => Ok(Side::New),
        other => Err(PyValueError::new_err(format!(
            "side must be 'old' or 'new', not {other:?}"
        ))),
    }
}

/// A test case's pipeline id as the core holds it: a Python `int` (not a `bool`) is an integer
/// id, a `str` a string id.
fn typed_id(id: &Bound<'_, PyAny>) -> PyResult<PipelineId> {
    if id.is_instance_of::<PyBool>() {
        return Err(PyValueError::new_err("a pipeline id is an int or a str, not a bool"));
    }
    if id.is_instance_of::<PyInt>() {
        let text: String = id.str()?.extract()?;
        return Ok(PipelineId {
            text: Arc::from(text),
            numeric: true,
        });
    }
    let text: String = id
        .extract()
        .map_err(|_| PyValueError::new_err("a pipeline id is an int or a str"))?;
    Ok(PipelineId {
        text: Arc::from(text),
        numeric: false,
    })
}

/// The answers from parallel lists: kind 0 a verdict (`texts[i]`), 1 no verdict, 2 an error
/// (`texts[i]` its message).
fn answers(kinds: &[u8], texts: Vec<String>) -> PyResult<Vec<Answer>> {
    if kinds.len() != texts.len() {
        return Err(PyValueError::new_err("kinds and texts differ in length"));
    }
    kinds
        .iter()
        .zip(texts)
        .map(|(k, t)| match k {
            0 => Ok(Answer::Verdict(t)),
            1 => Ok(Answer::Missing),
            2 => Ok(Answer::Error(t)),
            _ => Err(PyValueError::new_err(format!("unknown answer kind {k}"))),
        })
        .collect()
}

/// The policy from a full or partial policy JSON object (the shape of a policy file), with
/// `overrides` (same shape) layered over it and the defaults under both.
fn policy_of(
    py: Python<'_>,
    base: Option<&str>,
    base_file: Option<PathBuf>,
    overrides: Option<&str>,
) -> PyResult<GatePolicy> {
    let base = match (base, base_file) {
        (Some(text), _) => PolicyInput::from_json(text).map_err(|e| policy_error(py, e.to_string()))?,
        (None, Some(path)) => {
            let bytes = std::fs::read(&path)
                .map_err(|e| os_error(py, format!("cannot read policy file {}: {e}", path.display()), &e))?;
            PolicyInput::from_file(&bytes).map_err(|e| policy_error(py, format!("{}: {e}", path.display())))?
        }
        (None, None) => PolicyInput::default(),
    };
    let over = match overrides {
        Some(text) => PolicyInput::from_json(text).map_err(|e| policy_error(py, e.to_string()))?,
        None => PolicyInput::default(),
    };
    over.or(base).into_policy().map_err(|e| policy_error(py, e.to_string()))
}

fn policy_json(policy: &GatePolicy) -> String {
    serde_json::to_string(policy).expect("a policy serializes")
}

/// The resolved policy as the report's `policy` object (JSON): defaults < `policy` (JSON text)
/// or `policy_file` < `overrides` (JSON text).
#[pyfunction]
#[pyo3(signature = (policy=None, policy_file=None, overrides=None))]
fn resolve_policy(
    py: Python<'_>,
    policy: Option<&str>,
    policy_file: Option<PathBuf>,
    overrides: Option<&str>,
) -> PyResult<String> {
    Ok(policy_json(&policy_of(py, policy, policy_file, overrides)?))
}

/// The policy's digest (sha256 of its RFC 8785 form), as a signed decision pins it.
#[pyfunction]
fn policy_digest(py: Python<'_>, policy: &str) -> PyResult<String> {
    policy_of(py, Some(policy), None, None)?
        .digest()
        .map_err(|e| policy_error(py, e.to_string()))
}

/// The reference's `score_model` over cases by position: the pass rate (`None` for no case)
/// and the cases passed.
#[pyfunction]
fn score_answers_by_position(
    py: Python<'_>,
    expected: Vec<String>,
    kinds: Vec<u8>,
    texts: Vec<String>,
) -> PyResult<(Option<f64>, usize)> {
    if expected.len() != kinds.len() {
        return Err(PyValueError::new_err("one answer per case"));
    }
    let answers = answers(&kinds, texts)?;
    score_answers(&expected, &answers).map_err(|e| input_error(py, &e))
}

/// The reference's `compare_models` from two scores: (old, new, delta, num_cases,
/// new_is_better, recommendation).
#[pyfunction]
fn compare(
    old: Option<f64>,
    new: Option<f64>,
    num_cases: usize,
    min_delta: f64,
) -> (f64, f64, f64, usize, bool, String) {
    let c = compare_with(old, new, num_cases, min_delta);
    (
        c.old_score,
        c.new_score,
        c.delta,
        c.num_cases,
        c.new_is_better,
        c.recommendation,
    )
}

/// The gate decision (the report's `decision` object, as JSON) from the two task scores and
/// the two trajectory means under `policy` (JSON), the point rule.
#[pyfunction]
#[pyo3(signature = (task_old, task_new, trajectory_old, trajectory_new, num_cases, candidates, policy))]
#[allow(clippy::too_many_arguments)]
fn decide_scores(
    py: Python<'_>,
    task_old: Option<f64>,
    task_new: Option<f64>,
    trajectory_old: Option<f64>,
    trajectory_new: Option<f64>,
    num_cases: usize,
    candidates: usize,
    policy: &str,
) -> PyResult<String> {
    let policy = policy_of(py, Some(policy), None, None)?;
    let evidence = Evidence {
        task_old,
        task_new,
        trajectory_old,
        trajectory_new,
        num_cases,
        candidates,
        task_delta_low: None,
        trajectory_delta_low: None,
        task_delta_high: None,
        trajectory_delta_high: None,
        cases_needed: None,
        sequential: None,
    };
    Ok(serde_json::to_string(&decide(&evidence, &policy)).expect("a decision serializes"))
}

/// The mean composite trajectory score of results given as (judge, tac, scsr, iasa, egs, arr,
/// lcf); `None` for none.
#[pyfunction]
fn trajectory_mean(results: Vec<(f64, f64, f64, f64, f64, f64, f64)>) -> Option<f64> {
    let composites: Vec<f64> = results
        .into_iter()
        .map(|(judge, tac, scsr, iasa, egs, arr, lcf)| {
            composite(&Metrics {
                judge,
                tac,
                scsr,
                iasa,
                egs,
                arr,
                lcf,
            })
        })
        .collect();
    mean_score(&composites)
}

/// A test set given as JSONL (the drop-in's list of case dicts, each with its own
/// `pipeline_id`), read as `deploy-gate run` reads one: an unusable line raises `InputError`
/// naming it.
fn cases_test_set(py: Python<'_>, data: &[u8]) -> PyResult<deploy_gate::testset::TestSet> {
    const NAME: &str = "test set";
    let bad = |e: deploy_gate::run::RunFileError| raise(py, "InputError", e.to_string(), None, Some(&e.file), e.line);
    let cases = deploy_gate::run::read_cases(NAME, data).map_err(bad)?;
    deploy_gate::run::test_set_of(NAME, data, &cases).map_err(bad)
}

/// The policy from a resolved policy's JSON (as `Session::new` reads it).
fn resolved_policy(py: Python<'_>, policy: &str) -> PyResult<GatePolicy> {
    let value: serde_json::Value =
        serde_json::from_str(policy).map_err(|e| policy_error(py, format!("policy: {e}")))?;
    GatePolicy::from_report(&value).map_err(|e| policy_error(py, e.to_string()))
}

/// The sequential rule's units of a test set (JSONL) under `policy`, in the seed's order, each
/// its cases' positions in the test set (`deploy_gate::sequential::run_units`, the order
/// `run --policy` asks them in): the cases are asked in the order the report's sequence takes
/// them.
#[pyfunction]
fn sequential_units(py: Python<'_>, policy: &str, test_set: &[u8]) -> PyResult<Vec<Vec<usize>>> {
    let policy = resolved_policy(py, policy)?;
    let ts = cases_test_set(py, test_set)?;
    Ok(deploy_gate::sequential::run_units(&ts, &policy))
}

/// One side's answers for `evaluate_cases`: ids, kinds and texts (see `answers`).
type SideAnswers<'py> = (Vec<Bound<'py, PyAny>>, Vec<u8>, Vec<String>);

/// The report (JSON) of a test set given as JSONL (see `cases_test_set`) and each model's
/// answers (a case neither answers was not run), with trajectory files' bytes: the core's
/// `evaluate`, as `deploy-gate evaluate` would give it on the same test set and verdict files
/// (no audit log: the report lists none).
#[pyfunction]
#[pyo3(signature = (policy, test_set, old, new, old_trajectories=None, new_trajectories=None))]
fn evaluate_cases(
    py: Python<'_>,
    policy: &str,
    test_set: &[u8],
    old: SideAnswers<'_>,
    new: SideAnswers<'_>,
    old_trajectories: Option<&[u8]>,
    new_trajectories: Option<&[u8]>,
) -> PyResult<String> {
    let policy = resolved_policy(py, policy)?;
    let ts = cases_test_set(py, test_set)?;
    let mut verdicts = Vec::with_capacity(2);
    for (side, label, (ids, kinds, texts)) in [(Side::Old, "old", old), (Side::New, "new", new)] {
        let ids = ids.iter().map(typed_id).collect::<PyResult<Vec<_>>>()?;
        if ids.len() != kinds.len() {
            return Err(PyValueError::new_err("one answer per id"));
        }
        let answers = answers(&kinds, texts)?;
        let name = format!("{label}-runner.jsonl");
        let (v, _) = verdicts_of(Role::verdicts(side), &name, ids.iter().zip(answers.iter()))
            .map_err(|e| input_error(py, &e))?;
        v.check_against(&ts).map_err(|e| input_error(py, &e))?;
        verdicts.push(v);
    }
    let mut trajectories = Vec::with_capacity(2);
    for (side, label, data) in [
        (Side::Old, "old", old_trajectories),
        (Side::New, "new", new_trajectories),
    ] {
        trajectories.push(match data {
            Some(bytes) => {
                let name = format!("{label}-trajectories.jsonl");
                Some(parse_trajectories(Role::trajectories(side), &name, bytes).map_err(|e| input_error(py, &e))?)
            }
            None => None,
        });
    }
    let audit = deploy_gate::scan_all(&[], deploy_gate::policy::PassSet::default());
    let inputs = deploy_gate::GateInputs {
        audit: &audit,
        test_set: &ts,
        old_verdicts: &verdicts[0],
        new_verdicts: &verdicts[1],
        old_trajectories: trajectories[0].as_ref(),
        new_trajectories: trajectories[1].as_ref(),
    };
    Ok(py.allow_threads(|| deploy_gate::evaluate(&inputs, &policy).to_json()))
}

/// One evaluation: the core's session, fed from Python.
#[pyclass(module = "deploy_gate._core")]
struct Session {
    inner: CoreSession,
    /// The audit files `scan` read and which were gzip, until `read_test_set`.
    scanned: Option<(Vec<PathBuf>, Vec<bool>)>,
    /// The verdict files the answers became, by side, for a caller that saves them.
    answer_files: [Option<Vec<u8>>; 2],
}

#[pymethods]
impl Session {
    /// A session under `policy` (JSON, as `resolve_policy` gives it: a whole policy, which
    /// resolves as a report's does, so a policy from before `cluster` and `repeats` stays one).
    #[new]
    fn new(py: Python<'_>, policy: &str) -> PyResult<Self> {
        let value: serde_json::Value =
            serde_json::from_str(policy).map_err(|e| policy_error(py, format!("policy: {e}")))?;
        let policy = GatePolicy::from_report(&value).map_err(|e| policy_error(py, e.to_string()))?;
        Ok(Session {
            inner: CoreSession::new(policy),
            scanned: None,
            answer_files: [None, None],
        })
    }

    /// The session's policy (JSON).
    fn policy(&self) -> String {
        policy_json(self.inner.policy())
    }

    /// Pass 1 on `threads` threads (0: every core), the selection and pass 2 over the audit
    /// files, with the GIL released ([`watched`]: `progress(read, total)`, Ctrl-C). `hash`:
    /// also the logs' sha256 (a report pins them; a test set alone, as `deploy-gate test-set`,
    /// does not need them).
    #[pyo3(signature = (paths, threads=0, progress=None, hash=true))]
    fn build_test_set(
        &mut self,
        py: Python<'_>,
        paths: Vec<PathBuf>,
        threads: usize,
        progress: Option<Py<PyAny>>,
        hash: bool,
    ) -> PyResult<()> {
        let session = &mut self.inner;
        watched(py, progress, |watch| {
            native::build_test_set(
                session,
                &paths,
                ReadOptions::new(threads).with_watch(watch).with_hash(hash),
            )
        })
    }

    /// Pass 1 only, on `threads` threads, with the GIL released: the number of candidates
    /// (successful pipelines with a stage and an input), for a caller that samples them itself
    /// (`read_test_set` follows).
    #[pyo3(signature = (paths, threads=0, progress=None, hash=true))]
    fn scan(
        &mut self,
        py: Python<'_>,
        paths: Vec<PathBuf>,
        threads: usize,
        progress: Option<Py<PyAny>>,
        hash: bool,
    ) -> PyResult<u64> {
        let session = &mut self.inner;
        let gzipped = watched(py, progress, |watch| {
            native::scan_into(
                session,
                &paths,
                ReadOptions::new(threads).with_watch(watch).with_hash(hash),
            )
        })?;
        let candidates = self.inner.audit_index().map_or(0, |i| i.summary().candidates);
        self.scanned = Some((paths, gzipped));
        Ok(candidates)
    }

    /// After `scan`: the selection (the policy's sample, or the candidates at `positions`,
    /// 0-based in candidate order) and pass 2, with the GIL released.
    #[pyo3(signature = (positions=None))]
    fn read_test_set(&mut self, py: Python<'_>, positions: Option<Vec<usize>>) -> PyResult<()> {
        let (paths, gzipped) = self
            .scanned
            .take()
            .ok_or_else(|| PyRuntimeError::new_err("call scan first"))?;
        let chosen = match &positions {
            Some(p) => self.inner.needed_ranges_at(p).map(|_| ()),
            None => self.inner.needed_ranges().map(|_| ()),
        };
        chosen.map_err(|e| match e {
            SessionError::Positions(m) => PyValueError::new_err(m),
            e => session_error(py, e),
        })?;
        self.inner.release_pipelines();
        let session = &mut self.inner;
        watched(py, None, |watch| -> Result<(), ReadError> {
            native::read_chosen(&paths, session.test_set_builder()?, &gzipped, &watch)?;
            session.finish_test_set()?;
            Ok(())
        })
    }

    /// (num_cases, candidates, sampled, insufficient) of the built test set.
    fn test_set_info(&self) -> PyResult<(usize, usize, bool, bool)> {
        let ts = self.test_set()?;
        Ok((ts.cases.len(), ts.candidates, ts.sampled, ts.insufficient))
    }

    /// The built test set's cases, each as its JSON line (the lines of `deploy-gate test-set`).
    fn case_lines(&self) -> PyResult<Vec<String>> {
        let ts = self.test_set()?;
        Ok(ts
            .cases
            .iter()
            .map(|c| serde_json::to_string(c).expect("test cases serialize"))
            .collect())
    }

    /// The test set as `deploy-gate test-set` writes it.
    fn test_set_jsonl(&self) -> PyResult<String> {
        Ok(self.test_set()?.to_jsonl())
    }

    /// The test-set warnings (non-string stage ids, …).
    fn test_set_warnings(&self) -> PyResult<Vec<String>> {
        Ok(self.test_set()?.warnings.clone())
    }

    /// Reads `side`'s verdict file from `path` (any of the formats the CLI reads).
    fn add_verdict_file(&mut self, py: Python<'_>, side: &str, path: PathBuf) -> PyResult<()> {
        let side = side_of(side)?;
        let bytes = py
            .allow_threads(|| native::read_whole(&path, "verdict file", true))
            .map_err(|e| read_error(py, e))?;
        self.inner
            .add_verdicts(side, &file_name(&path), &bytes)
            .map_err(|e| session_error(py, e))
    }

    /// Reads `side`'s verdicts from a file's bytes named `name`.
    fn add_verdict_bytes(&mut self, py: Python<'_>, side: &str, name: &str, data: &[u8]) -> PyResult<()> {
        let side = side_of(side)?;
        self.inner
            .add_verdicts(side, name, data)
            .map_err(|e| session_error(py, e))
    }

    /// `side`'s verdicts from a model run: answer `i` is for pipeline `ids[i]` (see `answers`),
    /// an `int` or a `str` as the test case holds it (the integer 5 and the string "5" are two
    /// cases). They are read as the JSONL verdict file they make, named `name`.
    fn add_answers(
        &mut self,
        py: Python<'_>,
        side: &str,
        name: &str,
        ids: Vec<Bound<'_, PyAny>>,
        kinds: Vec<u8>,
        texts: Vec<String>,
    ) -> PyResult<()> {
        let side_v = side_of(side)?;
        let ids = ids.iter().map(typed_id).collect::<PyResult<Vec<_>>>()?;
        if ids.len() != kinds.len() {
            return Err(PyValueError::new_err("one answer per id"));
        }
        let answers = answers(&kinds, texts)?;
        let (verdicts, bytes) = verdicts_of(Role::verdicts(side_v), name, ids.iter().zip(answers.iter()))
            .map_err(|e| input_error(py, &e))?;
        self.inner.set_verdicts(side_v, verdicts);
        self.answer_files[usize::from(side_v == Side::New)] = Some(bytes);
        Ok(())
    }

    /// The JSONL verdict file `side`'s answers made, if they came from a run.
    fn answer_file<'py>(&self, py: Python<'py>, side: &str) -> PyResult<Option<Bound<'py, PyBytes>>> {
        let side = side_of(side)?;
        Ok(self.answer_files[usize::from(side == Side::New)]
            .as_deref()
            .map(|b| PyBytes::new(py, b)))
    }

    /// Reads `side`'s trajectory file from `path`.
    fn add_trajectory_file(&mut self, py: Python<'_>, side: &str, path: PathBuf) -> PyResult<()> {
        let side = side_of(side)?;
        let bytes = py
            .allow_threads(|| native::read_whole(&path, "trajectory file", true))
            .map_err(|e| read_error(py, e))?;
        self.inner
            .add_trajectories(side, &file_name(&path), &bytes)
            .map_err(|e| session_error(py, e))
    }

    /// Reads `side`'s trajectories from a file's bytes named `name`.
    fn add_trajectory_bytes(&mut self, py: Python<'_>, side: &str, name: &str, data: &[u8]) -> PyResult<()> {
        let side = side_of(side)?;
        let parsed = parse_trajectories(Role::trajectories(side), name, data).map_err(|e| input_error(py, &e))?;
        self.inner.set_trajectories(side, parsed);
        Ok(())
    }

    /// The GateReport.
    fn report(&self, py: Python<'_>) -> PyResult<Report> {
        let report = self.inner.report().map_err(|e| session_error(py, e))?;
        let json = report.to_json();
        Ok(Report { report, json })
    }
}

impl Session {
    fn test_set(&self) -> PyResult<&deploy_gate::TestSet> {
        self.inner
            .test_set()
            .ok_or_else(|| PyRuntimeError::new_err("the test set is not built"))
    }
}

/// A GateReport and its canonical JSON.
#[pyclass(module = "deploy_gate._core", frozen)]
struct Report {
    report: GateReport,
    json: String,
}

#[pymethods]
impl Report {
    /// The report's JSON, the bytes `deploy-gate evaluate --out` writes.
    fn to_json(&self) -> &str {
        &self.json
    }

    /// The standalone HTML report (`evaluate --html`).
    fn to_html(&self) -> String {
        html::report_html(&self.report)
    }

    /// The Markdown summary (`evaluate --markdown`).
    fn to_markdown(&self) -> PyResult<String> {
        markdown::markdown_from_json(&self.json).map_err(|e| PyRuntimeError::new_err(e.to_string()))
    }

    /// JUnit XML (`evaluate --junit`).
    fn to_junit(&self) -> String {
        junit::report_junit(&self.report)
    }

    /// Whether the gate approved the new model.
    #[getter]
    fn approved(&self) -> bool {
        self.report.decision.approved
    }

    /// `approved`, `blocked` or `inconclusive`.
    #[getter]
    fn outcome(&self) -> &'static str {
        self.report.decision.outcome().as_str()
    }
}

/// Reads a report's JSON (as `to_json` or `evaluate --out` wrote it) back into a report.
#[pyfunction]
fn report_html_from_json(json: &str) -> PyResult<String> {
    html::report_html_json(json).map_err(|e| PyValueError::new_err(e.to_string()))
}

/// The crash points' test hook from its name (`None`: none).
#[cfg(unix)]
fn fail_at(name: Option<&str>) -> PyResult<native::files::FailAt> {
    match name {
        None => Ok(native::files::FailAt(None)),
        Some(n) => native::files::Step::parse(n)
            .map(|s| native::files::FailAt(Some(s)))
            .ok_or_else(|| PyValueError::new_err(format!("no deploy step {n:?}"))),
    }
}

/// The deploy step's notices, passed to `notify(warning, text)` as they come (the GIL taken
/// for the call only); an exception in `notify` is printed, never raised into the deploy.
#[cfg(unix)]
fn notifier(notify: Option<Py<PyAny>>) -> impl FnMut(native::files::Notice) + Send {
    move |n: native::files::Notice| {
        if let Some(f) = &notify {
            Python::with_gil(|py| {
                if let Err(e) = f.call1(py, (n.warning, n.text)) {
                    e.print(py);
                }
            });
        }
    }
}

/// The upstream bridge's change to the serving config at `config_path` (see
/// `deploy_gate::native::files::deploy_to_config`): (changed, config, backup).
#[cfg(unix)]
#[pyfunction]
#[pyo3(signature = (config_path, trained_path, backend, stages, notify=None, fail_at_step=None))]
fn deploy_config(
    py: Python<'_>,
    config_path: PathBuf,
    trained_path: &str,
    backend: &str,
    stages: Vec<(String, String)>,
    notify: Option<Py<PyAny>>,
    fail_at_step: Option<&str>,
) -> PyResult<(bool, String, Option<String>)> {
    let change = deploy_gate::deploy::Change {
        model_path: trained_path,
        backend,
        stage_models: &stages,
    };
    let hook = fail_at(fail_at_step)?;
    let mut notify = notifier(notify);
    let done = py
        .allow_threads(|| native::files::deploy_to_config(&config_path, &change, hook, &mut notify))
        .map_err(|e| {
            raise(
                py,
                "DeployError",
                native::files::chain(&e),
                None,
                Some(&config_path.display().to_string()),
                None,
            )
        })?;
    let text = |p: &std::path::Path| p.display().to_string();
    Ok((done.changed, text(&done.config), done.backup.as_deref().map(text)))
}

/// `deploy-gate apply` (see `deploy_gate::native::apply`), with the GIL released while it
/// works: (result, the CLI's stdout JSON, model path as written, why the ledger could not
/// record a deploy). A failed check raises `VerificationError(check, message)` (the CLI's exit
/// 2), any other stop `DeployError` (exit 1).
#[cfg(unix)]
#[pyfunction]
#[pyo3(signature = (envelope, trusted_keys, model_path, config, target, ledger, threshold, max_age, max_statement_size, backend, stage_models, deploy_cmd, rollback_cmd, dry_run, notify=None, fail_at_step=None, model_signature=None, trainer_pems=Vec::new(), root_pems=Vec::new(), trainer_identities=Vec::new(), sigstore_root=None))]
#[allow(clippy::too_many_arguments)]
fn apply(
    py: Python<'_>,
    envelope: PathBuf,
    trusted_keys: Vec<PathBuf>,
    model_path: PathBuf,
    config: PathBuf,
    target: Option<String>,
    ledger: Option<PathBuf>,
    threshold: usize,
    max_age: i64,
    max_statement_size: usize,
    backend: String,
    stage_models: Vec<(String, String)>,
    deploy_cmd: Vec<String>,
    rollback_cmd: Vec<String>,
    dry_run: bool,
    notify: Option<Py<PyAny>>,
    fail_at_step: Option<&str>,
    model_signature: Option<PathBuf>,
    trainer_pems: Vec<String>,
    root_pems: Vec<String>,
    trainer_identities: Vec<(String, String)>,
    sigstore_root: Option<String>,
) -> PyResult<(String, String, String, Option<String>)> {
    use native::apply::{Applied, ApplyOptions, Trust};
    let model_signature = match model_signature {
        None => None,
        Some(path) => Some(native::oms::ModelSignature {
            path,
            trust: trainer_trust(&trainer_pems, &root_pems, &trainer_identities, sigstore_root.as_deref())?,
        }),
    };
    let opts = ApplyOptions {
        envelope,
        trust: Trust {
            trusted_keys,
            threshold,
            max_age,
            ledger,
            max_statement_size,
        },
        model_path,
        config,
        target,
        backend,
        stage_models,
        deploy_cmd,
        rollback_cmd,
        dry_run,
        fail_at: fail_at(fail_at_step)?,
        model_signature,
    };
    let mut notify = notifier(notify);
    let out = py
        .allow_threads(|| native::apply::apply(&opts, &mut notify))
        .map_err(|e| deploy_error(py, &e, &opts.config))?;
    let json = serde_json::to_string(&out.to_json()).expect("an outcome serializes");
    let word = out.result().to_owned();
    match out {
        Applied::Refused(f) => Err(verification_error(py, f.check.as_str(), &f.message)),
        Applied::ModelRefused(e) => Err(verification_error(py, e.check.as_str(), &e.detail)),
        Applied::Deployed(d) => Ok((word, json, d.model_path, None)),
        Applied::DeployedUnrecorded(d, e) => Ok((word, json, d.model_path, Some(native::files::chain(&e)))),
        Applied::KeptOld { .. } | Applied::DryRun(_) => Ok((word, json, String::new(), None)),
    }
}

/// `deploy-gate apply --mlflow` (see `deploy_gate::native::mlflow`), with the GIL released:
/// (result, the CLI's stdout JSON). `restore` puts the alias back (`apply --restore`). A failed
/// check raises `VerificationError(check, message)`, any other stop `DeployError`.
#[cfg(unix)]
#[pyfunction]
#[pyo3(signature = (envelope, trusted_keys, mlflow, registered_model, alias, model_version, target, ledger, threshold, max_age, max_statement_size, dry_run, restore, ca_file=None, allow_insecure_tls=false, notify=None))]
#[allow(clippy::too_many_arguments)]
fn apply_mlflow(
    py: Python<'_>,
    envelope: PathBuf,
    trusted_keys: Vec<PathBuf>,
    mlflow: String,
    registered_model: String,
    alias: String,
    model_version: Option<String>,
    target: Option<String>,
    ledger: Option<PathBuf>,
    threshold: usize,
    max_age: i64,
    max_statement_size: usize,
    dry_run: bool,
    restore: bool,
    ca_file: Option<PathBuf>,
    allow_insecure_tls: bool,
    notify: Option<Py<PyAny>>,
) -> PyResult<(String, String)> {
    use native::mlflow::{MlflowApply, Promoted, RegistrySettings};
    let opts = MlflowApply {
        envelope,
        trust: native::apply::Trust {
            trusted_keys,
            threshold,
            max_age,
            ledger,
            max_statement_size,
        },
        registry: RegistrySettings {
            url: mlflow,
            ca_file,
            allow_insecure_tls,
        },
        name: registered_model,
        alias,
        version: model_version,
        target,
        dry_run,
        fail_at: native::files::FailAt(None),
        pause_before_move: None,
    };
    let uri = native::mlflow::model_uri(&opts.name, &opts.alias);
    let mut notify = notifier(notify);
    let registry_error =
        |py: Python<'_>, e: &native::mlflow::MlflowError| raise(py, "DeployError", e.message(), None, Some(&uri), None);
    if restore {
        let r = py
            .allow_threads(|| native::mlflow::restore(&opts, &mut notify))
            .map_err(|e| registry_error(py, &e))?;
        let word = if r.unchanged { "unchanged" } else { "restored" };
        let json = serde_json::json!({"result": word, "model_uri": r.uri, "version": r.to, "version_before": r.from, "decision_sha256": r.decision_sha256});
        return Ok((word.to_owned(), json.to_string()));
    }
    let out = py
        .allow_threads(|| native::mlflow::apply(&opts, &mut notify))
        .map_err(|e| registry_error(py, &e))?;
    let json = out.to_json(&uri).to_string();
    match out {
        Promoted::Refused(f) => Err(verification_error(py, f.check.as_str(), &f.message)),
        Promoted::Moved { .. } => Ok(("deployed".to_owned(), json)),
        Promoted::KeptOld { .. } => Ok(("kept_old".to_owned(), json)),
        Promoted::DryRun { .. } => Ok(("dry_run".to_owned(), json)),
    }
}

/// `deploy-gate verify --mlflow` (see `deploy_gate::native::mlflow::verify`), with the GIL
/// released: the `--json` output (`{ok, reason, version, decision_sha256, subject}`). A
/// registry or file problem raises `DeployError`.
#[cfg(unix)]
#[pyfunction]
#[pyo3(signature = (mlflow, model_uri, trusted_keys, threshold, max_age, max_statement_size, ca_file=None, allow_insecure_tls=false, notify=None))]
#[allow(clippy::too_many_arguments)]
fn verify_mlflow(
    py: Python<'_>,
    mlflow: String,
    model_uri: String,
    trusted_keys: Vec<PathBuf>,
    threshold: usize,
    max_age: i64,
    max_statement_size: usize,
    ca_file: Option<PathBuf>,
    allow_insecure_tls: bool,
    notify: Option<Py<PyAny>>,
) -> PyResult<String> {
    let opts = native::mlflow::MlflowVerify {
        registry: native::mlflow::RegistrySettings {
            url: mlflow,
            ca_file,
            allow_insecure_tls,
        },
        model_uri,
        trust: native::apply::Trust {
            trusted_keys,
            threshold,
            max_age,
            ledger: None,
            max_statement_size,
        },
    };
    let mut notify = notifier(notify);
    let checked = py
        .allow_threads(|| native::mlflow::verify(&opts, &mut notify))
        .map_err(|e| raise(py, "DeployError", e.message(), None, Some(&opts.model_uri), None))?;
    Ok(serde_json::to_string(&checked).expect("a check serializes"))
}

/// `deploy-gate rollback` (see `deploy_gate::native::apply::rollback`), with the GIL
/// released: (config, backup, legacy backup, ledger, where the decision undone was recorded —
/// "ledger", "config_record" or None — and its payload sha256).
#[cfg(unix)]
#[pyfunction]
#[pyo3(signature = (config, ledger=None, notify=None))]
#[allow(clippy::type_complexity)]
fn rollback(
    py: Python<'_>,
    config: PathBuf,
    ledger: Option<PathBuf>,
    notify: Option<Py<PyAny>>,
) -> PyResult<(String, String, bool, String, Option<String>, Option<String>)> {
    use native::apply::RollbackRecord;
    let mut notify = notifier(notify);
    let done = py
        .allow_threads(|| native::apply::rollback(&config, ledger.as_deref(), &mut notify))
        .map_err(|e| deploy_error(py, &e, &config))?;
    let text = |p: &std::path::Path| p.display().to_string();
    let recorded_in = match &done.recorded {
        RollbackRecord::Ledger(_) => Some("ledger".to_owned()),
        RollbackRecord::ConfigRecord(_) => Some("config_record".to_owned()),
        RollbackRecord::Nothing => None,
    };
    Ok((
        text(&done.config),
        text(&done.backup),
        done.legacy_backup,
        text(&done.ledger),
        recorded_in,
        done.recorded.decision().map(str::to_owned),
    ))
}

/// An apply's or a rollback's error as `DeployError(message, file=config)`.
#[cfg(unix)]
fn deploy_error(py: Python<'_>, e: &native::apply::ApplyError, config: &std::path::Path) -> PyErr {
    raise(
        py,
        "DeployError",
        e.message(),
        None,
        Some(&config.display().to_string()),
        None,
    )
}

/// `deploy_gate.errors.VerificationError(check, message)`.
fn verification_error(py: Python<'_>, check: &str, message: &str) -> PyErr {
    let made = py
        .import("deploy_gate.errors")
        .and_then(|m| m.getattr("VerificationError"))
        .and_then(|c| c.call1((check, message)));
    match made {
        Ok(value) => PyErr::from_value(value),
        Err(err) => err,
    }
}

/// The model digest (hex sha256) of a file or a directory, as `deploy-gate digest` prints it.
#[cfg(unix)]
#[pyfunction]
fn model_digest(py: Python<'_>, path: PathBuf) -> PyResult<String> {
    py.allow_threads(|| native::files::model_digest(&path))
        .map_err(|e| os_error(py, native::files::chain(&e), &e))
}

/// The OpenSSF Model Signing digest (hex sha256) of a model directory or file, as
/// `deploy-gate digest --oms [--shard-size N]` prints it.
#[cfg(unix)]
#[pyfunction]
#[pyo3(signature = (path, shard_size=None))]
fn oms_digest(py: Python<'_>, path: PathBuf, shard_size: Option<u64>) -> PyResult<String> {
    let method = match shard_size {
        None => deploy_gate::oms::Method::Files,
        Some(0) => return Err(PyValueError::new_err("shard_size must be positive")),
        Some(shard_size) => deploy_gate::oms::Method::Shards { shard_size },
    };
    py.allow_threads(|| native::oms::oms_digest(&path, method))
        .map_err(|e| match e {
            native::oms::ModelError::Check(e) => verification_error(py, e.check.as_str(), &e.detail),
            other => os_error(py, other.to_string(), &other),
        })
}

/// Signs a report's decision for a model and a target, as `deploy-gate sign`: the DSSE
/// envelope's JSON (pretty, with a final newline, the bytes the CLI writes).
#[pyfunction]
#[allow(clippy::too_many_arguments)]
fn sign_report(
    py: Python<'_>,
    report: &str,
    key_pem: &str,
    model: &str,
    model_sha256: &str,
    target: &str,
    time_verified: i64,
    digest_scheme: Option<&str>,
) -> PyResult<String> {
    if digest_scheme.is_some_and(|s| s != attest::OMS_FILES_SCHEME) {
        return Err(PyValueError::new_err(format!(
            "digest_scheme is `{}` or None (the original directory digest)",
            attest::OMS_FILES_SCHEME
        )));
    }
    let report = attest::ReportToSign::parse(report)
        .map_err(|e| raise(py, "SignError", format!("the report: {e}"), None, None, None))?;
    let key = attest::keys::read_private_pem(key_pem)
        .map_err(|e| raise(py, "SignError", format!("the key: {e}"), None, None, None))?;
    let digest =
        attest::parse_digest(model_sha256).map_err(|e| raise(py, "SignError", e.to_string(), None, None, None))?;
    let claim = attest::Claim {
        report: &report,
        model_name: model,
        model_sha256: &digest,
        target,
        time_verified,
    };
    let envelope = attest::sign_in(&claim, &key, digest_scheme)
        .map_err(|e| raise(py, "SignError", e.to_string(), None, None, None))?;
    let mut text = serde_json::to_string_pretty(&envelope).expect("an envelope serializes");
    text.push('\n');
    Ok(text)
}

/// Verifies a signed decision as `deploy-gate verify` does (without a ledger): the verified
/// decision as JSON, or `VerificationError(check, message)` naming the check that failed.
#[pyfunction]
#[pyo3(signature = (envelope, trusted_pems, threshold, subject_sha256, target, now, max_age))]
#[allow(clippy::too_many_arguments)]
fn verify_envelope(
    py: Python<'_>,
    envelope: &[u8],
    trusted_pems: Vec<String>,
    threshold: usize,
    subject_sha256: Option<&str>,
    target: Option<&str>,
    now: i64,
    max_age: i64,
) -> PyResult<String> {
    let v = verified_decision(
        py,
        envelope,
        &trusted_pems,
        threshold,
        subject_sha256,
        target,
        now,
        max_age,
    )?;
    Ok(v.to_json())
}

/// The trusted trainer keys (SPKI PEM, ECDSA P-256/P-384), root certificates (PEM) and, for
/// the keyless method, (identity, issuer) pairs with a Sigstore trusted root's JSON (`None`:
/// the public-good root bundled).
fn trainer_trust(
    trainer_pems: &[String],
    root_pems: &[String],
    identities: &[(String, String)],
    sigstore_root: Option<&str>,
) -> PyResult<deploy_gate::oms::Trust> {
    use deploy_gate::oms::keyless::{Identity, KeylessTrust, SigstoreRoot};
    let mut trust = deploy_gate::oms::Trust::default();
    if !identities.is_empty() {
        let root = match sigstore_root {
            Some(text) => SigstoreRoot::from_json(text.as_bytes())
                .map_err(|e| PyValueError::new_err(format!("sigstore_root: {e}")))?,
            None => SigstoreRoot::public_good(),
        };
        let identities = identities
            .iter()
            .map(|(identity, issuer)| Identity {
                identity: identity.clone(),
                issuer: issuer.clone(),
            })
            .collect();
        trust.keyless = Some(KeylessTrust { identities, root });
    }
    for (i, pem) in trainer_pems.iter().enumerate() {
        trust.keys.push(
            deploy_gate::oms::TrustedKey::from_pem(pem)
                .map_err(|e| PyValueError::new_err(format!("trainer key {}: {}", i + 1, e.detail)))?,
        );
    }
    for (i, pem) in root_pems.iter().enumerate() {
        trust
            .roots
            .add_pem(pem)
            .map_err(|e| PyValueError::new_err(format!("trainer root {}: {}", i + 1, e.detail)))?;
    }
    Ok(trust)
}

/// The digest scheme the decision's subject is annotated with (`None`: the original directory
/// digest). Read before the envelope is verified, only to know which digest to compute: the
/// verifier then compares that digest with the signed subject.
#[cfg(unix)]
fn decision_scheme(envelope: &[u8]) -> Option<String> {
    let env: attest::dsse::Envelope = serde_json::from_slice(envelope).ok()?;
    let payload = attest::dsse::decode(&env.payload)?;
    let statement: serde_json::Value = serde_json::from_slice(&payload).ok()?;
    statement.get("subject")?.as_array()?.iter().find_map(|s| {
        s.pointer("/annotations/digest_scheme")
            .and_then(|v| v.as_str())
            .map(str::to_owned)
    })
}

/// A model check that failed: `VerificationError(check, message)` for a named OMS check,
/// `OSError` for a file that cannot be read ([`os_error`]: `FileNotFoundError` for a missing one).
#[cfg(unix)]
fn model_error(py: Python<'_>, e: native::oms::ModelError) -> PyErr {
    match e {
        native::oms::ModelError::Check(e) => verification_error(py, e.check.as_str(), &e.detail),
        other => os_error(py, other.to_string(), &other),
    }
}

/// `deploy-gate verify --model-path` (the model's digest computed by the decision's digest
/// scheme) and, with `signature`, `--model-signature`/`--trainer-key`/`--trainer-root`: the
/// trainer's OpenSSF Model Signing signature checked against the model's files, then that it
/// names the same model as the decision (`model_identity`). The verified decision's JSON, with
/// `trainer` when a signature was checked. The GIL is released while the model is read.
#[cfg(unix)]
#[pyfunction]
#[pyo3(signature = (envelope, trusted_pems, threshold, model_path, target, now, max_age, signature=None, trainer_pems=Vec::new(), root_pems=Vec::new(), trainer_identities=Vec::new(), sigstore_root=None))]
#[allow(clippy::too_many_arguments)]
fn verify_model_envelope(
    py: Python<'_>,
    envelope: &[u8],
    trusted_pems: Vec<String>,
    threshold: usize,
    model_path: PathBuf,
    target: Option<&str>,
    now: i64,
    max_age: i64,
    signature: Option<PathBuf>,
    trainer_pems: Vec<String>,
    root_pems: Vec<String>,
    trainer_identities: Vec<(String, String)>,
    sigstore_root: Option<String>,
) -> PyResult<String> {
    use native::oms::{oms_digest, verify_model, ModelError, ModelIdentity};
    let scheme = decision_scheme(envelope);
    let trust = match &signature {
        Some(_) => Some(trainer_trust(
            &trainer_pems,
            &root_pems,
            &trainer_identities,
            sigstore_root.as_deref(),
        )?),
        None => None,
    };
    let id = py
        .allow_threads(|| -> Result<ModelIdentity, ModelError> {
            let trainer = match (&signature, &trust) {
                (Some(path), Some(trust)) => {
                    let bundle = native::oms::read_bundle(path)?;
                    Some(verify_model(&model_path, &bundle, path, trust)?)
                }
                _ => None,
            };
            let digest = match scheme.as_deref() {
                None => native::files::model_digest(&model_path).map_err(|e| ModelError::Files(Box::new(e)))?,
                Some(attest::OMS_FILES_SCHEME) => oms_digest(&model_path, deploy_gate::oms::Method::Files)?,
                Some(other) => return Err(ModelError::UnknownScheme(other.to_owned())),
            };
            Ok(ModelIdentity {
                digest,
                scheme: scheme.clone(),
                trainer,
            })
        })
        .map_err(|e| model_error(py, e))?;
    let v = verified_decision(
        py,
        envelope,
        &trusted_pems,
        threshold,
        Some(&id.digest),
        target,
        now,
        max_age,
    )?;
    id.check_same_model(&v.model_sha256)
        .map_err(|e| verification_error(py, e.check.as_str(), &e.detail))?;
    // The verified decision with its report's digits as signed, and the trainer's signature.
    let mut out = v.to_json();
    if let Some(t) = &id.trainer {
        let mut trainer = native::apply::trainer_json(t);
        trainer["same_model_by"] = serde_json::json!(id.matched_by());
        out.pop(); // the object's closing brace
        out.push_str(",\"trainer\":");
        out.push_str(&trainer.to_string());
        out.push('}');
    }
    Ok(out)
}

/// Verifies a signed decision's bytes against trusted public keys (PEM) with the CLI's checks.
#[allow(clippy::too_many_arguments)]
fn verified_decision(
    py: Python<'_>,
    envelope: &[u8],
    trusted_pems: &[String],
    threshold: usize,
    subject_sha256: Option<&str>,
    target: Option<&str>,
    now: i64,
    max_age: i64,
) -> PyResult<attest::Verified> {
    let mut trusted = Vec::new();
    for (i, pem) in trusted_pems.iter().enumerate() {
        trusted.push(
            attest::keys::read_public_pem(pem)
                .map_err(|e| raise(py, "SignError", format!("trusted key {}: {e}", i + 1), None, None, None))?,
        );
    }
    let subject = subject_sha256
        .map(attest::parse_digest)
        .transpose()
        .map_err(|e| raise(py, "SignError", e.to_string(), None, None, None))?;
    let never = |_: &str| false;
    let req = attest::Requirements {
        trusted: &trusted,
        threshold,
        subject_sha256: subject.as_deref(),
        target,
        now,
        max_age,
        already_applied: &never,
        limits: attest::Limits::default(),
    };
    attest::verify(envelope, &req).map_err(|e| verification_error(py, e.kind().as_str(), &e.to_string()))
}

/// Compares two evaluations as `deploy-gate diff` does: each side a report's or a signed
/// decision's bytes (a signed one read only once it verifies against `trusted_pems`). The diff
/// JSON, byte for byte the CLI's; `VerificationError(check, message)` for a signed decision that
/// does not verify, `InputError(message, file=name)` for anything else unusable.
#[pyfunction]
#[pyo3(signature = (before, after, before_name, after_name, trusted_pems, threshold))]
fn diff_documents(
    py: Python<'_>,
    before: &[u8],
    after: &[u8],
    before_name: &str,
    after_name: &str,
    trusted_pems: Vec<String>,
    threshold: usize,
) -> PyResult<String> {
    use deploy_gate::diff::{self, Problem, Trust};
    let mut keys = Vec::new();
    for (i, pem) in trusted_pems.iter().enumerate() {
        keys.push(
            attest::keys::read_public_pem(pem)
                .map_err(|e| raise(py, "SignError", format!("trusted key {}: {e}", i + 1), None, None, None))?,
        );
    }
    let trust = Trust {
        keys: &keys,
        threshold,
        limits: attest::Limits::default(),
    };
    let read = |name: &str, bytes: &[u8]| {
        py.allow_threads(|| diff::read_document(name, bytes, Some(&trust)))
            .map_err(|e| match &e.problem {
                Problem::Refused(v) => verification_error(py, v.kind().as_str(), &e.to_string()),
                _ => raise(py, "InputError", e.to_string(), None, Some(&e.name), None),
            })
    };
    let b = read(before_name, before)?;
    let a = read(after_name, after)?;
    let d = py.allow_threads(|| diff::diff(&b, &a)).map_err(|e| {
        let name = if e.side == "before" { before_name } else { after_name };
        raise(py, "InputError", format!("{name}: {}", e.error), None, Some(name), None)
    })?;
    Ok(py.allow_threads(|| d.to_json()))
}

/// The fields of AgenticEvalResult a trajectory file's result may have: the id, then the
/// numeric ones (the core's one list).
#[pyfunction]
fn trajectory_fields() -> Vec<&'static str> {
    std::iter::once(deploy_gate::trajectory::ID_FIELD)
        .chain(deploy_gate::trajectory::NUMERIC_FIELDS.iter().copied())
        .collect()
}

/// Reads a `run` target file (YAML or JSON) as `deploy-gate run` does, naming it `file` in
/// every refusal: its kind (`openai-chat`, `http`, `command`), what a person reads as the model,
/// its digest (`sha256:…`, no secret in it) and the environment variables it reads secrets from
/// (none is read here). A refusal raises `TargetFileError` with the file, the line and the
/// field, as the CLI's message.
#[pyfunction]
fn read_target(py: Python<'_>, file: &str, data: &[u8]) -> PyResult<(String, String, String, Vec<String>)> {
    use deploy_gate::target::{read_target as read, Kind};
    let t = read(file, data).map_err(|e| {
        raise(
            py,
            "TargetFileError",
            e.to_string(),
            Some("target"),
            Some(&e.file),
            e.line.map(|l| l as u64),
        )
    })?;
    let (kind, headers, key_env) = match &t.kind {
        Kind::Chat(c) => ("openai-chat", &c.headers[..], c.api_key_env.clone()),
        Kind::Http(h) => ("http", &h.headers[..], None),
        Kind::Command(_) => ("command", &[][..], None),
    };
    let mut env: Vec<String> = key_env.into_iter().collect();
    for (_, value) in headers {
        for name in deploy_gate::target::control::env_names(value).unwrap_or_default() {
            if !env.contains(&name) {
                env.push(name);
            }
        }
    }
    Ok((kind.to_owned(), t.describe(), t.digest.clone(), env))
}

/// The core's version.
#[pyfunction]
fn core_version() -> String {
    deploy_gate::report::Tool::default().version
}

#[pymodule]
fn _core(m: &Bound<'_, PyModule>) -> PyResult<()> {
    running::register(m)?;
    m.add_class::<Session>()?;
    m.add_class::<Report>()?;
    m.add_function(wrap_pyfunction!(resolve_policy, m)?)?;
    m.add_function(wrap_pyfunction!(policy_digest, m)?)?;
    m.add_function(wrap_pyfunction!(score_answers_by_position, m)?)?;
    m.add_function(wrap_pyfunction!(compare, m)?)?;
    m.add_function(wrap_pyfunction!(decide_scores, m)?)?;
    m.add_function(wrap_pyfunction!(trajectory_mean, m)?)?;
    m.add_function(wrap_pyfunction!(report_html_from_json, m)?)?;
    m.add_function(wrap_pyfunction!(core_version, m)?)?;
    m.add_function(wrap_pyfunction!(read_target, m)?)?;
    m.add_function(wrap_pyfunction!(trajectory_fields, m)?)?;
    m.add_function(wrap_pyfunction!(sequential_units, m)?)?;
    m.add_function(wrap_pyfunction!(evaluate_cases, m)?)?;
    m.add_function(wrap_pyfunction!(sign_report, m)?)?;
    m.add_function(wrap_pyfunction!(verify_envelope, m)?)?;
    #[cfg(unix)]
    m.add_function(wrap_pyfunction!(verify_model_envelope, m)?)?;
    m.add_function(wrap_pyfunction!(diff_documents, m)?)?;
    #[cfg(unix)]
    m.add_function(wrap_pyfunction!(deploy_config, m)?)?;
    #[cfg(unix)]
    m.add_function(wrap_pyfunction!(model_digest, m)?)?;
    #[cfg(unix)]
    m.add_function(wrap_pyfunction!(oms_digest, m)?)?;
    #[cfg(unix)]
    m.add_function(wrap_pyfunction!(apply, m)?)?;
    #[cfg(unix)]
    m.add_function(wrap_pyfunction!(apply_mlflow, m)?)?;
    #[cfg(unix)]
    m.add_function(wrap_pyfunction!(verify_mlflow, m)?)?;
    #[cfg(unix)]
    m.add_function(wrap_pyfunction!(rollback, m)?)?;
    Ok(())
}
