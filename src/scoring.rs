//! Scores both models on the test set: per-case outcomes, pass rates, per-template table.
//!
//! Under `repeats: last` (the reference's rule) a case's last verdict decides it. Under
//! `repeats: mean` every verdict of a case counts: its score per model is the share of its
//! verdicts that pass (0 without any), a pass rate is the mean of the case scores, and a case's
//! status compares its two scores; the per-verdict fields (`old_verdict`, `old_pass`, missing,
//! errored) still describe the case's last verdict, and the counts of runs and passes are added.

use crate::audit::PipelineId;
use crate::compat::{round4, upper};
use crate::input::Side;
use crate::policy::Repeats;
use crate::testset::TestSet;
use crate::verdicts::{VerdictFormat, VerdictRecord, Verdicts};
use serde::Serialize;
use serde_json::value::RawValue;
use std::collections::HashMap;
use std::hash::Hash;

/// How a case moved from the old model to the new one.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum CaseStatus {
    /// Old passed, new fails.
    Regressed,
    /// Old failed, new passes.
    Improved,
    /// Both pass.
    BothPass,
    /// Both fail.
    BothFail,
}

/// One case's outcome for both models.
#[derive(Debug, Clone, Serialize)]
pub struct CaseOutcome {
    /// The pipeline.
    pub pipeline_id: PipelineId,
    /// Its template.
    pub template_id: Box<RawValue>,
    /// The expected verdict, as in the log.
    pub expected: Box<RawValue>,
    /// The old model's verdict (`null`: none).
    pub old_verdict: Option<String>,
    /// The new model's verdict (`null`: none).
    pub new_verdict: Option<String>,
    /// Whether the old model's verdict matches.
    pub old_pass: bool,
    /// Whether the new model's verdict matches.
    pub new_pass: bool,
    /// Regressed, improved, both pass or both fail.
    pub status: CaseStatus,
    /// The old verdict file has no verdict for this case (or a null one).
    pub old_missing: bool,
    /// The new verdict file has no verdict for this case (or a null one).
    pub new_missing: bool,
    /// The old verdict is an object or an array (the case fails).
    pub old_composite: bool,
    /// The new verdict is an object or an array (the case fails).
    pub new_composite: bool,
    /// The old model's runner failed on this case.
    pub old_errored: bool,
    /// The new model's runner failed on this case.
    pub new_errored: bool,
    /// The old runner's error message.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub old_error: Option<String>,
    /// The new runner's error message.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub new_error: Option<String>,
    /// `repeats: mean`: the old model's verdicts for this case.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub old_runs: Option<usize>,
    /// `repeats: mean`: how many of them pass.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub old_passes: Option<usize>,
    /// `repeats: mean`: the new model's verdicts for this case.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub new_runs: Option<usize>,
    /// `repeats: mean`: how many of them pass.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub new_passes: Option<usize>,
}

impl CaseOutcome {
    /// The case's score for `side`: the share of its verdicts that pass under `repeats: mean`
    /// (0 without any), else 1 or 0 as its verdict passes.
    pub fn score(&self, side: Side) -> f64 {
        let (runs, passes, pass) = match side {
            Side::Old => (self.old_runs, self.old_passes, self.old_pass),
            Side::New => (self.new_runs, self.new_passes, self.new_pass),
        };
        match (runs, passes) {
            (Some(0), _) => 0.0,
            (Some(r), Some(p)) => p as f64 / r as f64,
            _ => f64::from(u8::from(pass)),
        }
    }
}

/// One model's counts over the test set and its verdict file.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct ModelCounts {
    /// The verdict file's detected format.
    pub format: VerdictFormat,
    /// Test cases scored.
    pub cases: usize,
    /// Cases whose verdict matches.
    pub passed: usize,
    /// Cases with a verdict that does not match.
    pub wrong: usize,
    /// Cases without a verdict (absent or null).
    pub missing: usize,
    /// Cases whose runner failed.
    pub errored: usize,
    /// Cases whose verdict is an object or an array (they fail).
    pub composite: usize,
    /// `round(passed / cases, 4)`; under `repeats: mean`, the mean of the case scores, rounded
    /// the same way; `null` for an empty test set.
    pub pass_rate: Option<f64>,
    /// Records in the verdict file.
    pub records: usize,
    /// Distinct pipelines in the file that are not test cases.
    pub extra: usize,
    /// Records repeating an id (the last one counts).
    pub duplicates: usize,
    /// Ids whose repeated records disagree.
    pub conflicting: usize,
    /// The first of those ids.
    pub conflicting_ids: Vec<String>,
    /// Audit-log stage entries in the file, ignored.
    pub ignored_stage_entries: usize,
    /// `repeats: mean`: the verdicts of test cases (every run of every case).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub runs: Option<usize>,
    /// `repeats: mean`: how many of them pass.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub passes: Option<usize>,
}

/// One row of the per-template table.
#[derive(Debug, Clone, Serialize)]
pub struct TemplateRow {
    /// The template (as in the log; `null` when absent).
    pub template_id: Box<RawValue>,
    /// Test cases of this template.
    pub n: usize,
    /// The old model's pass rate on them, rounded to 4.
    pub old_pass_rate: f64,
    /// The new model's pass rate on them, rounded to 4.
    pub new_pass_rate: f64,
    /// `round(new − old, 4)`.
    pub delta: f64,
    /// The unclustered interval of `new − old` on this template's cases (Newcombe's, or the
    /// paired t under `repeats: mean`); absent under a policy written before `cluster` and
    /// `repeats`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub interval: Option<crate::stats::DeltaInterval>,
}

/// Both models scored on one test set.
#[derive(Debug, Clone)]
pub struct Scoring {
    /// Per-case outcomes in test-set order.
    pub cases: Vec<CaseOutcome>,
    /// The old model's counts.
    pub old: ModelCounts,
    /// The new model's counts.
    pub new: ModelCounts,
    /// The per-template table, in order of first appearance.
    pub templates: Vec<TemplateRow>,
}

/// `passed / n` rounded as the reference rounds it; `None` when `n` is 0.
pub fn pass_rate(passed: usize, n: usize) -> Option<f64> {
    (n > 0).then(|| round4(passed as f64 / n as f64))
}

struct Judged {
    verdict: Option<String>,
    pass: bool,
    missing: bool,
    composite: bool,
    error: Option<String>,
}

fn judge(expected_upper: &str, record: Option<&VerdictRecord>) -> Judged {
    match record {
        Some(VerdictRecord {
            error: Some(e),
            verdict,
            ..
        }) => Judged {
            verdict: verdict.clone(),
            pass: false,
            missing: false,
            composite: false,
            error: Some(e.clone()),
        },
        Some(VerdictRecord { verdict: Some(v), .. }) => Judged {
            pass: *upper(v) == *expected_upper,
            verdict: Some(v.clone()),
            missing: false,
            composite: false,
            error: None,
        },
        Some(VerdictRecord { composite: true, .. }) => Judged {
            verdict: None,
            pass: false,
            missing: false,
            composite: true,
            error: None,
        },
        _ => Judged {
            verdict: None,
            pass: false,
            missing: true,
            composite: false,
            error: None,
        },
    }
}

fn counts(verdicts: &Verdicts, cases: &[CaseOutcome], side: Side, test_set: &TestSet, repeats: Repeats) -> ModelCounts {
    let pick = |c: &CaseOutcome| match side {
        Side::Old => (c.old_pass, c.old_missing, c.old_errored, c.old_composite),
        Side::New => (c.new_pass, c.new_missing, c.new_errored, c.new_composite),
    };
    let passed = cases.iter().filter(|c| pick(c).0).count();
    let missing = cases.iter().filter(|c| pick(c).1).count();
    let errored = cases.iter().filter(|c| pick(c).2).count();
    let composite = cases.iter().filter(|c| pick(c).3).count();
    let runs = |c: &CaseOutcome| match side {
        Side::Old => (c.old_runs.unwrap_or(0), c.old_passes.unwrap_or(0)),
        Side::New => (c.new_runs.unwrap_or(0), c.new_passes.unwrap_or(0)),
    };
    let mean = repeats == Repeats::Mean;
    let pass_rate = if mean {
        (!cases.is_empty()).then(|| round4(cases.iter().fold(0.0, |a, c| a + c.score(side)) / cases.len() as f64))
    } else {
        pass_rate(passed, cases.len())
    };
    ModelCounts {
        format: verdicts.format,
        cases: cases.len(),
        passed,
        wrong: cases.len() - passed - missing - errored - composite,
        missing,
        errored,
        composite,
        pass_rate,
        records: verdicts.records,
        extra: verdicts.count_outside(test_set),
        duplicates: verdicts.duplicates,
        conflicting: verdicts.conflicting.len(),
        conflicting_ids: verdicts.conflicting_listed().to_vec(),
        ignored_stage_entries: verdicts.ignored_stage_entries,
        runs: mean.then(|| cases.iter().map(|c| runs(c).0).sum()),
        passes: mean.then(|| cases.iter().map(|c| runs(c).1).sum()),
    }
}

/// Under `repeats: mean`, how a case moved: regressed when its new score is below its old one,
/// improved when above; equal scores are both pass at ½ or more, both fail below.
fn status_of_scores(old: f64, new: f64) -> CaseStatus {
    if new < old {
        CaseStatus::Regressed
    } else if new > old {
        CaseStatus::Improved
    } else if old >= 0.5 {
        CaseStatus::BothPass
    } else {
        CaseStatus::BothFail
    }
}

/// A case's runs and how many pass.
fn runs_of(expected_upper: &str, records: &[&VerdictRecord]) -> (usize, usize) {
    let passes = records.iter().filter(|r| judge(expected_upper, Some(r)).pass).count();
    (records.len(), passes)
}

/// Scores the old and the new model: a case passes when `upper(verdict) == upper(expected)`;
/// a missing, null or errored verdict fails. The last verdict of a case counts
/// (`repeats: last`).
pub fn score(test_set: &TestSet, old: &Verdicts, new: &Verdicts) -> Scoring {
    score_with(test_set, old, new, Repeats::Last)
}

/// [`score`] under a `repeats` rule: `mean` counts every verdict of a case (see the module's
/// documentation).
pub fn score_with(test_set: &TestSet, old: &Verdicts, new: &Verdicts, repeats: Repeats) -> Scoring {
    let mean = repeats == Repeats::Mean;
    let mut cases = Vec::with_capacity(test_set.cases.len());
    for (i, case) in test_set.cases.iter().enumerate() {
        let expected = upper(&case.expected_text()).into_owned();
        let twin = test_set.has_twin(i);
        let o = judge(&expected, old.record_for(&case.pipeline_id, twin));
        let n = judge(&expected, new.record_for(&case.pipeline_id, twin));
        let (o_runs, n_runs) = if mean {
            (
                Some(runs_of(&expected, &old.records_for(&case.pipeline_id, twin))),
                Some(runs_of(&expected, &new.records_for(&case.pipeline_id, twin))),
            )
        } else {
            (None, None)
        };
        let status = match (o_runs, n_runs) {
            (Some(o), Some(n)) => {
                let score = |(runs, passes): (usize, usize)| if runs == 0 { 0.0 } else { passes as f64 / runs as f64 };
                status_of_scores(score(o), score(n))
            }
            _ => match (o.pass, n.pass) {
                (true, false) => CaseStatus::Regressed,
                (false, true) => CaseStatus::Improved,
                (true, true) => CaseStatus::BothPass,
                (false, false) => CaseStatus::BothFail,
            },
        };
        cases.push(CaseOutcome {
            pipeline_id: case.pipeline_id.clone(),
            template_id: case.template_id.clone(),
            expected: case.expected_verdict.clone(),
            old_verdict: o.verdict,
            new_verdict: n.verdict,
            old_pass: o.pass,
            new_pass: n.pass,
            status,
            old_composite: o.composite,
            new_composite: n.composite,
            old_missing: o.missing,
            new_missing: n.missing,
            old_errored: o.error.is_some(),
            new_errored: n.error.is_some(),
            old_error: o.error,
            new_error: n.error,
            old_runs: o_runs.map(|r| r.0),
            old_passes: o_runs.map(|r| r.1),
            new_runs: n_runs.map(|r| r.0),
            new_passes: n_runs.map(|r| r.1),
        });
    }
    let old_counts = counts(old, &cases, Side::Old, test_set, repeats);
    let new_counts = counts(new, &cases, Side::New, test_set, repeats);
    Scoring {
        templates: templates(&cases, repeats),
        cases,
        old: old_counts,
        new: new_counts,
    }
}

/// The per-template table, in order of each template's first case. Templates are told apart by
/// their JSON text as in the log.
fn templates(cases: &[CaseOutcome], repeats: Repeats) -> Vec<TemplateRow> {
    let mut rows = template_rows(cases, |c| c.template_id.get());
    if repeats == Repeats::Mean {
        // The rates are the means of the case scores.
        let mut sums: HashMap<&str, (f64, f64)> = HashMap::new();
        for c in cases {
            let e = sums.entry(c.template_id.get()).or_insert((0.0, 0.0));
            e.0 += c.score(Side::Old);
            e.1 += c.score(Side::New);
        }
        for r in &mut rows {
            let (old, new) = sums[r.template_id.get()];
            r.old_pass_rate = round4(old / r.n as f64);
            r.new_pass_rate = round4(new / r.n as f64);
            r.delta = round4(r.new_pass_rate - r.old_pass_rate);
        }
    }
    rows
}

/// Each case's position in the per-template table (the rows of [`Scoring::templates`]).
pub fn template_index(cases: &[CaseOutcome]) -> Vec<usize> {
    let mut rows: HashMap<&str, usize> = HashMap::new();
    cases
        .iter()
        .map(|c| {
            let next = rows.len();
            *rows.entry(c.template_id.get()).or_insert(next)
        })
        .collect()
}

/// [`templates`] with the key of a case given: one hash lookup per case, so linear in the
/// number of cases however many templates there are (a test counts the key comparisons).
fn template_rows<'c, K: Hash + Eq>(cases: &'c [CaseOutcome], key: impl Fn(&'c CaseOutcome) -> K) -> Vec<TemplateRow> {
    let mut order: Vec<(usize, usize, usize, &RawValue)> = Vec::new();
    let mut rows: HashMap<K, usize> = HashMap::new();
    for c in cases {
        let next = order.len();
        let i = *rows.entry(key(c)).or_insert(next);
        if i == next {
            order.push((0, 0, 0, &c.template_id));
        }
        let row = &mut order[i];
        row.0 += 1;
        row.1 += c.old_pass as usize;
        row.2 += c.new_pass as usize;
    }
    order
        .into_iter()
        .map(|(n, old, new, id)| {
            let old_rate = pass_rate(old, n).unwrap_or(0.0);
            let new_rate = pass_rate(new, n).unwrap_or(0.0);
            TemplateRow {
                template_id: id.to_owned(),
                n,
                old_pass_rate: old_rate,
                new_pass_rate: new_rate,
                delta: round4(new_rate - old_rate),
                interval: None,
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::cell::Cell;
    use std::hash::Hasher;

    fn case(template: &str, old_pass: bool, new_pass: bool) -> CaseOutcome {
        let raw = |s: &str| RawValue::from_string(s.to_owned()).unwrap();
        CaseOutcome {
            pipeline_id: PipelineId {
                text: "p".into(),
                numeric: false,
            },
            template_id: raw(template),
            expected: raw("\"PASS\""),
            old_verdict: None,
            new_verdict: None,
            old_pass,
            new_pass,
            status: CaseStatus::BothFail,
            old_missing: false,
            new_missing: false,
            old_errored: false,
            new_errored: false,
            old_composite: false,
            new_composite: false,
            old_error: None,
            new_error: None,
            old_runs: None,
            old_passes: None,
            new_runs: None,
            new_passes: None,
        }
    }

    #[test]
    fn template_rows_come_in_order_of_first_case_keyed_by_their_json_text() {
        let cases = [
            case("\"b\"", true, false),
            case("\"a\"", true, true),
            case("\"b\"", false, true),
            case("\"\\u0061\"", false, false),
            case("null", true, true),
            case("\"a\"", false, true),
        ];
        let rows: Vec<(String, usize, f64, f64)> = templates(&cases, Repeats::Last)
            .into_iter()
            .map(|r| (r.template_id.get().to_owned(), r.n, r.old_pass_rate, r.new_pass_rate))
            .collect();
        let want = [
            ("\"b\"", 2, 0.5, 0.5),
            ("\"a\"", 2, 0.5, 1.0),
            ("\"\\u0061\"", 1, 0.0, 0.0),
            ("null", 1, 1.0, 1.0),
        ];
        let want: Vec<(String, usize, f64, f64)> = want.iter().map(|&(t, n, o, w)| (t.to_owned(), n, o, w)).collect();
        assert_eq!(rows, want);
    }

    /// A template key that counts how often it is compared.
    struct Counted<'a> {
        text: &'a str,
        compared: &'a Cell<u64>,
    }

    impl PartialEq for Counted<'_> {
        fn eq(&self, other: &Self) -> bool {
            self.compared.set(self.compared.get() + 1);
            self.text == other.text
        }
    }

    impl Eq for Counted<'_> {}

    impl Hash for Counted<'_> {
        fn hash<H: Hasher>(&self, h: &mut H) {
            self.text.hash(h);
        }
    }

    #[test]
    fn the_template_table_compares_a_bounded_number_of_keys_per_case() {
        // 20,000 distinct templates, then each once more: a search through the rows seen so far
        // compares about 3·10^8 keys; the table compares each case's key about once.
        let n = 20_000;
        let texts: Vec<String> = (0..n).map(|i| format!("\"tpl-{i}\"")).collect();
        let cases: Vec<CaseOutcome> = texts
            .iter()
            .chain(texts.iter().rev())
            .enumerate()
            .map(|(k, t)| case(t, k % 2 == 0, k % 3 == 0))
            .collect();
        let compared = Cell::new(0);
        let rows = template_rows(&cases, |c| Counted {
            text: c.template_id.get(),
            compared: &compared,
        });
        assert_eq!(rows.len(), n);
        assert!(rows.iter().all(|r| r.n == 2));
        assert!(rows
            .iter()
            .map(|r| r.template_id.get())
            .eq(texts.iter().map(String::as_str)));
        assert!(
            compared.get() <= 2 * cases.len() as u64,
            "{} key comparisons for {} cases",
            compared.get(),
            cases.len()
        );
    }
}
