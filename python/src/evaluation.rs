//! One evaluation from Python: the core's session fed from paths (file scans with the GIL
//! released, Ctrl-C and progress looked up meanwhile), the report and its renderings, the
//! reference's `compare_models` and point decision, trajectory means, and `diff` of two
//! evaluations.

use crate::errors::{input_error, policy_error, raise, read_error, session_error, verification_error};
use crate::policy::{policy_json, policy_of};
use crate::running::{answers, kept_outputs, typed_id};
use crate::signing::trusted_keys;
use deploy_gate::attest;
use deploy_gate::decision::{compare_with, decide, Evidence};
use deploy_gate::input::{Role, Side};
use deploy_gate::native::{self, file_name, ReadError, ReadOptions, Watch};
use deploy_gate::policy::GatePolicy;
use deploy_gate::render::{html, junit, markdown};
use deploy_gate::report::GateReport;
use deploy_gate::run::records::verdicts_of_kept;
use deploy_gate::session::{Session as CoreSession, SessionError};
use deploy_gate::trajectory::{composite, mean_score, parse_trajectories, Metrics};
use pyo3::exceptions::{PyRuntimeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::PyBytes;
use std::collections::HashMap;
use std::path::PathBuf;

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

fn side_of(side: &str) -> PyResult<Side> {
    match side {
        "old" => Ok(Side::Old),
        "new" => Ok(Side::New),
        other => Err(PyValueError::new_err(format!(
            "side must be 'old' or 'new', not {other:?}"
        ))),
    }
}

/// The reference's `compare_models` from two scores: (old, new, delta, num_cases,
/// new_is_better, recommendation).
#[pyfunction]
pub(crate) fn compare(
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
pub(crate) fn decide_scores(
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
pub(crate) fn trajectory_mean(results: Vec<(f64, f64, f64, f64, f64, f64, f64)>) -> Option<f64> {
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

/// One evaluation: the core's session, fed from Python.
#[pyclass(module = "deploy_gate._core")]
pub(crate) struct Session {
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
    /// cases), with what the model answered, `outputs[i]` (JSON text, or `None`), kept on its
    /// record up to 64 KiB. They are read as the JSONL verdict file they make, named `name`.
    #[pyo3(signature = (side, name, ids, kinds, texts, outputs=None))]
    #[allow(clippy::too_many_arguments)]
    fn add_answers(
        &mut self,
        py: Python<'_>,
        side: &str,
        name: &str,
        ids: Vec<Bound<'_, PyAny>>,
        kinds: Vec<u8>,
        texts: Vec<String>,
        outputs: Option<Vec<Option<String>>>,
    ) -> PyResult<()> {
        let side_v = side_of(side)?;
        let ids = ids.iter().map(typed_id).collect::<PyResult<Vec<_>>>()?;
        if ids.len() != kinds.len() {
            return Err(PyValueError::new_err("one answer per id"));
        }
        let answers = answers(&kinds, texts)?;
        let outputs = kept_outputs(outputs, ids.len())?;
        let (verdicts, bytes) = verdicts_of_kept(
            Role::verdicts(side_v),
            name,
            ids.iter()
                .zip(answers.iter())
                .zip(outputs.iter())
                .map(|((id, a), o)| (id, a, o.as_ref())),
        )
        .map_err(|e| input_error(py, &e))?;
        self.inner.set_verdicts(side_v, verdicts);
        self.answer_files[usize::from(side_v == Side::New)] = Some(bytes);
        Ok(())
    }

    /// True when some record of `side`'s verdict file carries an answer (`output`).
    fn carries_outputs(&self, side: &str) -> PyResult<bool> {
        Ok(self.inner.carries_outputs(side_of(side)?))
    }

    /// What each test case's record in `side`'s verdict file answered, in test-set order:
    /// `(JSON text, truncated)` or `None`. `data` are the file's bytes again (a path is read again):
    /// refused when they are not the bytes that were read.
    fn case_outputs(&self, py: Python<'_>, side: &str, data: &[u8]) -> PyResult<Vec<Option<(String, bool)>>> {
        let side = side_of(side)?;
        // Hashing the file and reading the answers: without the GIL.
        py.allow_threads(|| self.inner.case_outputs(side, data))
            .map_err(|e| session_error(py, e))
    }

    /// `side`'s verdict file read again from `path`, for [`Session::case_outputs`].
    fn case_outputs_of_file(&self, py: Python<'_>, side: &str, path: PathBuf) -> PyResult<Vec<Option<(String, bool)>>> {
        let side = side_of(side)?;
        let bytes = py
            .allow_threads(|| native::read_whole(&path, "verdict file", true))
            .map_err(|e| read_error(py, e))?;
        py.allow_threads(|| self.inner.case_outputs(side, &bytes))
            .map_err(|e| session_error(py, e))
    }

    /// `side`'s answers of the test cases at `cases` (the report's places, as
    /// `Report.answer_cases` gives them), read by byte range from the file's bytes `data` (the
    /// bytes a run or a mapping made), once they are checked to be the bytes read.
    fn case_answers(
        &self,
        py: Python<'_>,
        side: &str,
        data: &[u8],
        cases: Vec<usize>,
    ) -> PyResult<HashMap<usize, (String, bool)>> {
        let side = side_of(side)?;
        py.allow_threads(|| self.inner.case_answers(side, data, &cases))
            .map_err(|e| session_error(py, e))
    }

    /// [`Session::case_answers`] from the verdict file at `path`: checked first to be the file
    /// read (its sha256, streamed), then read at the answers' byte ranges only.
    fn case_answers_of_file(
        &self,
        py: Python<'_>,
        side: &str,
        path: PathBuf,
        cases: Vec<usize>,
    ) -> PyResult<HashMap<usize, (String, bool)>> {
        let side = side_of(side)?;
        let (sha256, size) = py
            .allow_threads(|| {
                Ok::<_, ReadError>((
                    native::hash_file(&path)?,
                    std::fs::metadata(&path).map_or(0, |m| m.len()),
                ))
            })
            .map_err(|e| read_error(py, e))?;
        self.inner
            .check_verdict_file(side, &sha256, size)
            .map_err(|e| session_error(py, e))?;
        py.allow_threads(|| native::answers::read_case_answers(&self.inner, side, &path, &cases))
            .map_err(PyRuntimeError::new_err)
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
pub(crate) struct Report {
    report: GateReport,
    json: String,
}

#[pymethods]
impl Report {
    /// The report's JSON, the bytes `deploy-gate evaluate --out` writes.
    fn to_json(&self) -> &str {
        &self.json
    }

    /// The cases (their places in the report) whose answers the HTML report shows when given
    /// them: the first 200 it lists.
    fn answer_cases(&self) -> PyResult<Vec<usize>> {
        html::answer_cases(&self.json).map_err(|e| PyRuntimeError::new_err(e.to_string()))
    }

    /// The standalone HTML report (`evaluate --html`); with a review file's bytes, its marked
    /// cases listed (`evaluate --html --review`); with each side's answers of the cases it lists
    /// (`answer_cases`, read by `Session.case_answers`; `None` for a side whose records carry
    /// none), both answers of those cases, as `evaluate --html` shows them.
    #[pyo3(signature = (review=None, review_name="review", old_answers=None, new_answers=None))]
    fn to_html(
        &self,
        review: Option<&[u8]>,
        review_name: &str,
        old_answers: Option<HashMap<usize, (String, bool)>>,
        new_answers: Option<HashMap<usize, (String, bool)>>,
    ) -> PyResult<String> {
        let listing = self.review_listing(review, review_name)?;
        let answers = match (&old_answers, &new_answers) {
            (None, None) => None,
            _ => {
                let mut both: HashMap<usize, html::CaseAnswers> = HashMap::new();
                for (side, answers) in [(Side::Old, old_answers), (Side::New, new_answers)] {
                    for (i, answer) in answers.into_iter().flatten() {
                        let entry = both.entry(i).or_default();
                        *match side {
                            Side::Old => &mut entry.old,
                            Side::New => &mut entry.new,
                        } = Some(answer);
                    }
                }
                Some(both)
            }
        };
        let extras = html::Extras {
            review: listing.as_ref(),
            answers: answers.as_ref(),
        };
        html::report_html_with(&self.json, &extras).map_err(|e| PyRuntimeError::new_err(e.to_string()))
    }

    /// The Markdown summary (`evaluate --markdown`); with a review file's bytes, its marked cases
    /// listed (`evaluate --markdown --review`).
    #[pyo3(signature = (review=None, review_name="review"))]
    fn to_markdown(&self, review: Option<&[u8]>, review_name: &str) -> PyResult<String> {
        let listing = self.review_listing(review, review_name)?;
        markdown::markdown_reviewed(&self.json, listing.as_ref()).map_err(|e| PyRuntimeError::new_err(e.to_string()))
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

impl Report {
    /// A review file's bytes (`review_name` names it in errors) read against this report.
    fn review_listing(
        &self,
        review: Option<&[u8]>,
        review_name: &str,
    ) -> PyResult<Option<deploy_gate::review::Listing>> {
        let Some(bytes) = review else { return Ok(None) };
        let marks =
            deploy_gate::review::Review::parse(review_name, bytes).map_err(|e| PyValueError::new_err(e.to_string()))?;
        deploy_gate::review::Listing::of(&marks, &self.json)
            .map(Some)
            .map_err(|e| PyValueError::new_err(format!("{review_name}: {e}")))
    }
}

/// A file's bytes and its name (for errors).
type NamedBytes = (Vec<u8>, String);

/// Reads a report's JSON (as `to_json` or `evaluate --out` wrote it) back into a report.
#[pyfunction]
pub(crate) fn report_html_from_json(json: &str) -> PyResult<String> {
    html::report_html_json(json).map_err(|e| PyValueError::new_err(e.to_string()))
}

/// Compares two evaluations as `deploy-gate diff` does: each side a report's or a signed
/// decision's bytes (a signed one read only once it verifies against `trusted_pems`). The diff
/// JSON, byte for byte the CLI's; `VerificationError(check, message)` for a signed decision that
/// does not verify, `InputError(message, file=name)` for anything else unusable.
#[pyfunction]
#[pyo3(signature = (before, after, before_name, after_name, trusted_pems, threshold, reviews=None))]
#[allow(clippy::too_many_arguments)]
pub(crate) fn diff_documents(
    py: Python<'_>,
    before: &[u8],
    after: &[u8],
    before_name: &str,
    after_name: &str,
    trusted_pems: Vec<String>,
    threshold: usize,
    reviews: Option<(NamedBytes, NamedBytes)>,
) -> PyResult<String> {
    use deploy_gate::diff::{self, Problem, Trust};
    let keys = trusted_keys(py, &trusted_pems)?;
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
    let mut d = py.allow_threads(|| diff::diff(&b, &a)).map_err(|e| {
        let name = if e.side == "before" { before_name } else { after_name };
        raise(py, "InputError", format!("{name}: {}", e.error), None, Some(name), None)
    })?;
    if let Some(((rb, nb), (ra, na))) = &reviews {
        let changes =
            diff::review_changes(&d, (nb, rb), (na, ra)).map_err(|e| raise(py, "InputError", e, None, None, None))?;
        d.review_changes = Some(changes);
    }
    Ok(py.allow_threads(|| d.to_json()))
}

/// The fields of AgenticEvalResult a trajectory file's result may have: the id, then the
/// numeric ones (the core's one list).
#[pyfunction]
pub(crate) fn trajectory_fields() -> Vec<&'static str> {
    std::iter::once(deploy_gate::trajectory::ID_FIELD)
        .chain(deploy_gate::trajectory::NUMERIC_FIELDS.iter().copied())
        .collect()
}
