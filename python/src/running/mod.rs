//! Models run from Python: the answers of Python runners as verdict records (by position, as
//! the reference's `score_model`, or by pipeline id into a report), the test set and the
//! sequential order a run asks cases in, and endpoint files read as `deploy-gate run` reads them.

mod engine;
pub(crate) use engine::register;

use crate::errors::{input_error, raise};
use crate::policy::resolved_policy;
use deploy_gate::audit::PipelineId;
use deploy_gate::input::{Role, Side};
use deploy_gate::run::records::{score_answers, verdicts_of, Answer, Output, DEFAULT_MAX_OUTPUT_BYTES};
use deploy_gate::trajectory::parse_trajectories;
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::{PyBool, PyInt};
use std::sync::Arc;

/// A test case's pipeline id as the core holds it: a Python `int` (not a `bool`) is an integer
/// id, a `str` a string id.
pub(crate) fn typed_id(id: &Bound<'_, PyAny>) -> PyResult<PipelineId> {
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
pub(crate) fn answers(kinds: &[u8], texts: Vec<String>) -> PyResult<Vec<Answer>> {
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

/// What the models answered, one per answer (`None`: no output, or no list at all), each JSON
/// text bounded as a run bounds it (64 KiB, cut on a character boundary and marked).
pub(crate) fn kept_outputs(outputs: Option<Vec<Option<String>>>, count: usize) -> PyResult<Vec<Option<Output>>> {
    let Some(outputs) = outputs else {
        return Ok(vec![None; count]);
    };
    if outputs.len() != count {
        return Err(PyValueError::new_err("one output per answer"));
    }
    outputs
        .into_iter()
        .map(|o| {
            o.map(|text| {
                let raw: Box<serde_json::value::RawValue> = serde_json::from_str(&text)
                    .map_err(|e| PyValueError::new_err(format!("an output is not JSON text: {e}")))?;
                Ok(Output::raw(&raw, DEFAULT_MAX_OUTPUT_BYTES))
            })
            .transpose()
        })
        .collect()
}

/// The reference's `score_model` over cases by position: the pass rate (`None` for no case)
/// and the cases passed.
#[pyfunction]
pub(crate) fn score_answers_by_position(
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

/// A test set given as JSONL (the drop-in's list of case dicts, each with its own
/// `pipeline_id`), read as `deploy-gate run` reads one: an unusable line raises `InputError`
/// naming it.
fn cases_test_set(py: Python<'_>, data: &[u8]) -> PyResult<deploy_gate::testset::TestSet> {
    const NAME: &str = "test set";
    let bad = |e: deploy_gate::run::RunFileError| raise(py, "InputError", e.to_string(), None, Some(&e.file), e.line);
    let cases = deploy_gate::run::read_cases(NAME, data).map_err(bad)?;
    deploy_gate::run::test_set_of(NAME, data, &cases).map_err(bad)
}

/// The sequential rule's units of a test set (JSONL) under `policy`, in the seed's order, each
/// its cases' positions in the test set (`deploy_gate::sequential::run_units`, the order
/// `run --policy` asks them in): the cases are asked in the order the report's sequence takes
/// them.
#[pyfunction]
pub(crate) fn sequential_units(py: Python<'_>, policy: &str, test_set: &[u8]) -> PyResult<Vec<Vec<usize>>> {
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
pub(crate) fn evaluate_cases(
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

/// Reads an endpoint file (YAML or JSON) as `deploy-gate run` does, naming it `file` in
/// every refusal: its kind (`openai-chat`, `http`, `command`), what a person reads as the model,
/// its digest (`sha256:…`, no secret in it) and the environment variables it reads secrets from
/// (none is read here). A refusal raises `EndpointFileError` with the file, the line and the
/// field, as the CLI's message.
#[pyfunction]
pub(crate) fn read_endpoint(
    py: Python<'_>,
    file: &str,
    data: &[u8],
) -> PyResult<(String, String, String, Vec<String>)> {
    use deploy_gate::endpoint::{read_endpoint as read, Kind};
    let t = read(file, data).map_err(|e| {
        raise(
            py,
            "EndpointFileError",
            e.to_string(),
            // The role's value before endpoint files had their name (code compares it).
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
        for name in deploy_gate::endpoint::control::env_names(value).unwrap_or_default() {
            if !env.contains(&name) {
                env.push(name);
            }
        }
    }
    Ok((kind.to_owned(), t.describe(), t.digest.clone(), env))
}
