//! Trajectory-evaluation results (AgenticEvalResult objects) and their composite score.

use crate::compat::round4;
use crate::input::Role;
use crate::input::{InputError, InputFile};
use crate::json::{parse_object_line, value_offsets, why_not_json, NotObject, Scalar};
use crate::lines::{invalid_utf8, split_all, Piece};
use crate::verdicts::{describe, each_array_element, invalid_utf8_message, offset_of};
use serde::Serialize;

/// The metrics the composite score uses (absent ones are 0).
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize)]
pub struct Metrics {
    /// `overall_judge_score`.
    pub judge: f64,
    /// `tac_score`.
    pub tac: f64,
    /// `scsr_score`.
    pub scsr: f64,
    /// `iasa_score`.
    pub iasa: f64,
    /// `egs_score`.
    pub egs: f64,
    /// `arr_score` (a penalty).
    pub arr: f64,
    /// `lcf_score`, a count of loop collapses (a penalty).
    pub lcf: f64,
}

/// The composite score of one result, exactly as the reference computes it:
/// `(judge + tac + scsr + iasa + egs)/5 − 0.2·arr − (0.1·lcf if lcf > 0)`, clamped to [0, 1]
/// with Python's `max(0.0, min(1.0, x))` (so NaN becomes 1.0 and −0.0 becomes 0.0).
pub fn composite(m: &Metrics) -> f64 {
    let mut c = (m.judge + m.tac + m.scsr + m.iasa + m.egs) / 5.0;
    c -= m.arr * 0.2;
    if m.lcf > 0.0 {
        c -= 0.1 * m.lcf;
    }
    let capped = if c < 1.0 { c } else { 1.0 };
    if capped > 0.0 {
        capped
    } else {
        0.0
    }
}

/// The mean composite rounded to 4 decimals (summed left to right); `None` for no results.
pub fn mean_score(composites: &[f64]) -> Option<f64> {
    if composites.is_empty() {
        return None;
    }
    let sum = composites.iter().fold(0.0, |acc, c| acc + c);
    Some(round4(sum / composites.len() as f64))
}

/// One scored result.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Scored {
    /// `trajectory_id`, when given.
    pub trajectory_id: Option<String>,
    /// Its composite score.
    pub composite: f64,
    /// `pipeline_id`, when given: the test case the result is for (its text, and whether it
    /// was a JSON integer). Not in any report: the page shows the result with its case.
    #[serde(skip)]
    pub pipeline_id: Option<(String, bool)>,
    /// The metrics the composite was made from.
    #[serde(skip)]
    pub metrics: Metrics,
}

/// A parsed trajectory file.
#[derive(Debug, Clone)]
pub struct Trajectories {
    /// The file (role, name, size, sha256).
    pub file: InputFile,
    /// Results with an `overall_judge_score`, in file order.
    pub results: Vec<Scored>,
    /// Objects without `overall_judge_score` (skipped, as the reference does).
    pub skipped_without_judge: usize,
}

impl Trajectories {
    /// The mean composite score (rounded to 4), `None` without results.
    pub fn mean(&self) -> Option<f64> {
        mean_score(&self.results.iter().map(|r| r.composite).collect::<Vec<_>>())
    }
}

/// The id field of AgenticEvalResult (text or a number).
pub const ID_FIELD: &str = crate::verdicts::TRAJECTORY_ID;

/// Numeric fields of AgenticEvalResult: a non-numeric value in any of them is an error. With
/// [`ID_FIELD`], the fields a trajectory file's result may have (the Python binding reads
/// these from result objects and dicts).
pub const NUMERIC_FIELDS: &[&str] = &[
    "goal_completion_score",
    "tool_sequence_validity",
    "unnecessary_steps_penalty",
    "error_recovery_score",
    "overall_judge_score",
    "tac_score",
    "ter_score",
    "latency_ms",
    "bleu_score",
    "bert_score",
    "arr_score",
    "scsr_score",
    "rad_score",
    "iasa_score",
    "egs_score",
    "pas_score",
    "pmed_score",
    "ase_score",
    "scr_score",
    "rotation_id",
    "lcf_score",
];

/// Why a result of a trajectory file is unusable; the message goes into the [`InputError`].
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
enum ResultError {
    /// Not UTF-8.
    #[error("invalid UTF-8")]
    InvalidUtf8,
    /// Not JSON.
    #[error("not valid JSON")]
    NotJson,
    /// JSON but not an object.
    #[error("not a JSON object")]
    NotObject,
    /// A score field that is not a number (the first such).
    #[error("{key} is {kind}, expected a number")]
    NotANumber {
        /// The field.
        key: String,
        /// The JSON type it has.
        kind: &'static str,
    },
}

/// A result's error and where in its text it is (the value of the first non-numeric metric,
/// where the JSON stops being JSON).
fn placed(e: &ResultError, text: &str) -> (String, Option<usize>) {
    match e {
        ResultError::NotJson => match why_not_json(text) {
            Some(syntax) => (
                format!("not valid JSON: {}", syntax.message),
                Some(offset_of(text, syntax.line, syntax.column)),
            ),
            None => (e.to_string(), None),
        },
        ResultError::NotANumber { key, .. } => {
            let offset = value_offsets(text, key)
                .into_iter()
                .find(|(_, raw)| Scalar::of_raw(raw).is_ok_and(|v| v.is_set() && v.as_f64().is_none()))
                .map(|(offset, _)| offset);
            (e.to_string(), offset)
        }
        _ => (e.to_string(), None),
    }
}

fn read_result(text: &str) -> Result<Option<Scored>, ResultError> {
    let mut m = Metrics::default();
    let mut has_judge = false;
    let mut trajectory_id = None;
    let mut pipeline_id = None;
    let mut problem = None;
    parse_object_line(text.as_bytes(), |key, v| {
        if key == "pipeline_id" {
            pipeline_id = match v.scalar()? {
                Scalar::Str(s) if !s.is_empty() => Some((s.into_owned(), false)),
                Scalar::Int(i) => Some((i.to_string(), true)),
                Scalar::BigInt(digits) => Some((digits.into_owned(), true)),
                _ => None,
            };
            return Ok(());
        }
        if key == ID_FIELD {
            trajectory_id = match v.scalar()? {
                Scalar::Str(s) => Some(s.into_owned()),
                Scalar::Int(i) => Some(i.to_string()),
                Scalar::BigInt(digits) => Some(digits.into_owned()),
                _ => None,
            };
            return Ok(());
        }
        if !NUMERIC_FIELDS.contains(&key) {
            return v.skip();
        }
        let value = v.scalar()?;
        let number = match value {
            Scalar::Absent | Scalar::Null => None,
            ref other => match other.as_f64() {
                Some(x) => Some(x),
                None => {
                    problem.get_or_insert(ResultError::NotANumber {
                        key: key.to_owned(),
                        kind: other.kind(),
                    });
                    None
                }
            },
        };
        let slot = match key {
            "overall_judge_score" => {
                has_judge = number.is_some();
                &mut m.judge
            }
            "tac_score" => &mut m.tac,
            "scsr_score" => &mut m.scsr,
            "iasa_score" => &mut m.iasa,
            "egs_score" => &mut m.egs,
            "arr_score" => &mut m.arr,
            "lcf_score" => &mut m.lcf,
            _ => return Ok(()),
        };
        *slot = number.unwrap_or(0.0);
        Ok(())
    })
    .map_err(|e| match e {
        NotObject::InvalidUtf8 => ResultError::InvalidUtf8,
        NotObject::NotJson => ResultError::NotJson,
        NotObject::NotObject => ResultError::NotObject,
    })?;
    if let Some(p) = problem {
        return Err(p);
    }
    Ok(has_judge.then(|| Scored {
        trajectory_id,
        composite: composite(&m),
        pipeline_id,
        metrics: m,
    }))
}

/// Reads a trajectory file: JSONL or a JSON array of AgenticEvalResult objects. An unusable
/// result stops it with an error naming its line and, where it helps, the column.
pub fn parse_trajectories(role: Role, name: &str, bytes: &[u8]) -> Result<Trajectories, InputError> {
    let at = |line: u64, column: Option<u64>, msg: String| InputError::at_column(role, name, line, column, msg);
    let body = bytes.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(bytes);
    let mut out = Trajectories {
        file: describe(role, name, bytes),
        results: Vec::new(),
        skipped_without_judge: 0,
    };
    let mut take = |r: Option<Scored>| match r {
        Some(s) => out.results.push(s),
        None => out.skipped_without_judge += 1,
    };
    if body.iter().find(|b| !b.is_ascii_whitespace()) == Some(&b'[') {
        // One element at a time, placed by its offset.
        each_array_element(role, name, body, "results", |_, item, _| {
            read_result(item).map(&mut take).map_err(|e| placed(&e, item))
        })?;
    } else {
        let mut failure = None;
        split_all(bytes, usize::MAX, |piece| {
            let Piece::Line(line) = piece else { return };
            if failure.is_some() || line.bytes.iter().all(u8::is_ascii_whitespace) {
                return;
            }
            let Some(text) = line.text() else {
                let (offset, byte) = invalid_utf8(line.bytes).expect("not UTF-8");
                failure = Some(at(line.number, Some(offset as u64 + 1), invalid_utf8_message(byte)));
                return;
            };
            match read_result(text) {
                Ok(r) => take(r),
                Err(e) => {
                    let (msg, offset) = placed(&e, text);
                    failure = Some(at(line.number, offset.map(|o| o as u64 + 1), msg));
                }
            }
        });
        if let Some(e) = failure {
            return Err(e);
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn composite_follows_the_reference() {
        let m = Metrics {
            judge: 0.5,
            tac: 0.5,
            scsr: 0.5,
            iasa: 0.5,
            egs: 0.5,
            arr: 0.5,
            lcf: 1.0,
        };
        assert_eq!(composite(&m), 0.5 - 0.1 - 0.1);
        assert_eq!(
            composite(&Metrics {
                judge: 9.0,
                ..Metrics::default()
            }),
            1.0
        );
        assert_eq!(
            composite(&Metrics {
                lcf: 3.0,
                ..Metrics::default()
            }),
            0.0
        );
        assert_eq!(
            composite(&Metrics {
                judge: f64::NAN,
                ..Metrics::default()
            }),
            1.0
        );
        assert_eq!(mean_score(&[]), None);
        assert_eq!(mean_score(&[0.1, 0.2]), Some(0.15));
    }

    #[test]
    fn objects_without_judge_are_skipped_and_bad_metrics_are_errors() {
        let t = parse_trajectories(
            Role::OldTrajectories,
            "t",
            b"{\"overall_judge_score\":0.5}\n{\"tac_score\":1}\n[1]\n",
        )
        .unwrap_err();
        assert_eq!(t.line, Some(3));
        let t = parse_trajectories(
            Role::OldTrajectories,
            "t",
            b"{\"overall_judge_score\":0.5}\n{\"tac_score\":1}\n",
        )
        .unwrap();
        assert_eq!((t.results.len(), t.skipped_without_judge), (1, 1));
        assert_eq!(t.mean(), Some(0.1));
        let e = parse_trajectories(Role::OldTrajectories, "t", b"{\"overall_judge_score\":\"high\"}").unwrap_err();
        assert_eq!(
            e.to_string(),
            "t (old_trajectories) line 1, column 24: overall_judge_score is a string, expected a number"
        );
        let a = parse_trajectories(
            Role::OldTrajectories,
            "t",
            b"[{\"overall_judge_score\":1,\"lcf_score\":2}]",
        )
        .unwrap();
        assert_eq!(a.results[0].composite, 0.0);
    }

    #[test]
    fn a_result_may_name_its_case_and_counts_as_before() {
        let with = concat!(
            "{\"pipeline_id\": \"p-1\", \"overall_judge_score\": 0.5, \"tac_score\": 1}\n",
            "{\"pipeline_id\": 123456789012345678901234567890, \"overall_judge_score\": 0.7}\n",
            "{\"pipeline_id\": 7, \"overall_judge_score\": 0.9, \"lcf_score\": 2}\n",
            "{\"pipeline_id\": \"\", \"overall_judge_score\": 0.1}\n",
        );
        let without = concat!(
            "{\"overall_judge_score\": 0.5, \"tac_score\": 1}\n",
            "{\"overall_judge_score\": 0.7}\n",
            "{\"overall_judge_score\": 0.9, \"lcf_score\": 2}\n",
            "{\"overall_judge_score\": 0.1}\n",
        );
        let a = parse_trajectories(Role::NewTrajectories, "a", with.as_bytes()).unwrap();
        let b = parse_trajectories(Role::NewTrajectories, "b", without.as_bytes()).unwrap();
        let ids: Vec<_> = a.results.iter().map(|r| r.pipeline_id.clone()).collect();
        assert_eq!(
            ids,
            [
                Some(("p-1".to_owned(), false)),
                Some(("123456789012345678901234567890".to_owned(), true)),
                Some(("7".to_owned(), true)),
                None
            ]
        );
        assert_eq!(a.results[0].metrics.tac, 1.0);
        assert_eq!(a.results[2].metrics.lcf, 2.0);
        // The scores, and what a report writes of them, are those of the file without the ids.
        let composites = |t: &Trajectories| t.results.iter().map(|r| r.composite).collect::<Vec<_>>();
        assert_eq!(composites(&a), composites(&b));
        assert_eq!(a.mean(), b.mean());
        assert_eq!(
            serde_json::to_string(&a.results).unwrap(),
            serde_json::to_string(&b.results).unwrap()
        );
    }
}
