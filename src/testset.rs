//! The ground-truth test set: choosing the cases (sampling) and building them in pass 2.
//!
//! [`AuditIndex::select`] picks the pipelines from pass 1's index and lists the lines they
//! need; the shell reads just those lines (positioned reads, `File.slice`) and feeds them to a
//! [`TestSetBuilder`], which assembles the cases.

use crate::audit::{AuditIndex, LineRef, PipelineId};
use crate::json::{parse_object_line, Scalar};
use serde::ser::SerializeMap;
use serde::{Serialize, Serializer};
use serde_json::value::RawValue;
use sha2::{Digest, Sha256};

/// How the test set is sized.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct TestSetPolicy {
    /// Fewer candidate cases than this give an empty test set.
    pub min_samples: usize,
    /// More candidates than this are sampled down to it (`None`: no limit).
    pub max_samples: Option<usize>,
    /// Seed of the reproducible sample.
    pub seed: u64,
}

impl Default for TestSetPolicy {
    fn default() -> Self {
        TestSetPolicy {
            min_samples: 20,
            max_samples: Some(200),
            seed: 0,
        }
    }
}

/// One line pass 2 needs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct NeededLine {
    /// Where the line is.
    pub at: LineRef,
    case: u32,
    completion: bool,
}

/// The chosen pipelines and the lines pass 2 must read for them, sorted by file and offset.
#[derive(Debug, Clone)]
pub struct Selection {
    /// Successful pipelines with stage entries and an input.
    pub candidates: usize,
    /// True when the candidates were sampled down to `max_samples`.
    pub sampled: bool,
    /// True when there were fewer candidates than `min_samples` (the test set is empty).
    pub insufficient: bool,
    /// The policy it was made with.
    pub policy: TestSetPolicy,
    chosen: Vec<u32>,
    lines: Vec<NeededLine>,
}

impl Selection {
    /// The lines to read, in file then offset order; feed them to [`TestSetBuilder::feed`].
    pub fn lines(&self) -> &[NeededLine] {
        &self.lines
    }

    /// Number of cases chosen.
    pub fn len(&self) -> usize {
        self.chosen.len()
    }

    /// True when no case was chosen.
    pub fn is_empty(&self) -> bool {
        self.chosen.is_empty()
    }
}

/// The sample key of a pipeline: `sha256("<seed>:<pipeline_id>")`.
pub fn sample_key(seed: u64, id: &PipelineId) -> [u8; 32] {
    let mut h = Sha256::new();
    h.update(seed.to_string().as_bytes());
    h.update(b":");
    h.update(id.text.as_bytes());
    h.finalize().into()
}

impl AuditIndex {
    /// Chooses the test cases: candidates in order of first successful completion, emptied when
    /// fewer than `min_samples`, and sampled to the `max_samples` smallest sample keys.
    pub fn select(&self, policy: &TestSetPolicy) -> Selection {
        let mut chosen: Vec<u32> = (0..self.pipelines.len() as u32)
            .filter(|&i| {
                let p = &self.pipelines[i as usize];
                p.success.is_some() && !p.stages.is_empty() && p.has_input
            })
            .collect();
        chosen.sort_by_key(|&i| self.pipelines[i as usize].success.map(|s| s.first_rank));
        let candidates = chosen.len();
        let insufficient = candidates < policy.min_samples;
        let mut sampled = false;
        if insufficient {
            chosen.clear();
        } else if let Some(max) = policy.max_samples.filter(|&m| candidates > m) {
            let mut keyed: Vec<([u8; 32], usize, u32)> = chosen
                .iter()
                .enumerate()
                .map(|(order, &i)| (sample_key(policy.seed, &self.pipelines[i as usize].id), order, i))
                .collect();
            keyed.sort_unstable();
            keyed.truncate(max);
            keyed.sort_unstable_by_key(|&(_, order, _)| order);
            chosen = keyed.into_iter().map(|(_, _, i)| i).collect();
            sampled = true;
        }
        let mut lines = Vec::new();
        for (case, &i) in chosen.iter().enumerate() {
            let p = &self.pipelines[i as usize];
            let success = p.success.expect("candidates are successful");
            lines.push(NeededLine {
                at: success.line,
                case: case as u32,
                completion: true,
            });
            lines.extend(p.stages.iter().map(|&at| NeededLine {
                at,
                case: case as u32,
                completion: false,
            }));
        }
        lines.sort_by_key(|l| l.at);
        Selection {
            candidates,
            sampled,
            insufficient,
            policy: policy.clone(),
            chosen,
            lines,
        }
    }
}

/// A stage-output map that keeps the order in which stage ids first appeared.
#[derive(Debug, Clone, Default)]
pub struct StageOutputs(pub Vec<(String, Box<RawValue>)>);

impl StageOutputs {
    fn insert(&mut self, key: String, value: Box<RawValue>) {
        match self.0.iter_mut().find(|(k, _)| *k == key) {
            Some(slot) => slot.1 = value,
            None => self.0.push((key, value)),
        }
    }
}

impl Serialize for StageOutputs {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut map = s.serialize_map(Some(self.0.len()))?;
        for (k, v) in &self.0 {
            map.serialize_entry(k, v)?;
        }
        map.end()
    }
}

/// One test case, with the reference's field names (values exactly as in the log).
#[derive(Debug, Clone, Serialize)]
pub struct TestCase {
    /// The pipeline.
    pub pipeline_id: PipelineId,
    /// `template_id` of the winning completion (`null` when absent).
    pub template_id: Box<RawValue>,
    /// The user input: the first stage's `state_snapshot.input_text`, else its `input`.
    pub input_text: Box<RawValue>,
    /// `verdict` of the winning completion.
    pub expected_verdict: Box<RawValue>,
    /// `stage_id → output`, later entries of a stage overwriting earlier ones.
    pub expected_stage_outputs: StageOutputs,
    /// `episode_reward` of the winning completion (`null` when absent).
    pub episode_reward: Box<RawValue>,
    /// `input_hash` of the stage that gave the input, when it has one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub input_hash: Option<Box<RawValue>>,
}

impl TestCase {
    /// The expected verdict as text (empty unless a string).
    pub fn expected_text(&self) -> String {
        serde_json::from_str::<String>(self.expected_verdict.get()).unwrap_or_default()
    }
}

/// The test set and how it was made.
#[derive(Debug, Clone)]
pub struct TestSet {
    /// The cases, in order of each pipeline's first successful completion.
    pub cases: Vec<TestCase>,
    /// Candidates before `min_samples` / `max_samples` were applied.
    pub candidates: usize,
    /// True when sampled down to `max_samples`.
    pub sampled: bool,
    /// True when there were fewer candidates than `min_samples`.
    pub insufficient: bool,
    /// The policy it was made with.
    pub policy: TestSetPolicy,
    /// Things worth a reader's attention (non-string stage ids, …).
    pub warnings: Vec<String>,
}

impl TestSet {
    /// The test set as JSONL, one case per line.
    pub fn to_jsonl(&self) -> String {
        let mut out = String::new();
        for case in &self.cases {
            out.push_str(&serde_json::to_string(case).expect("test cases serialize"));
            out.push('\n');
        }
        out
    }
}

/// Pass 2 failed: the audit file is not what pass 1 read.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum TestSetError {
    /// A line pass 1 indexed no longer holds the same entry.
    #[error(
        "audit file {file} changed while it was read: the line at byte {offset} is not the entry indexed in pass 1"
    )]
    Changed {
        /// File name.
        file: String,
        /// Byte offset of the line.
        offset: u64,
    },
    /// A needed line was never fed.
    #[error("audit file {file}: the line at byte {offset} was not read in pass 2")]
    NotFed {
        /// File name.
        file: String,
        /// Byte offset of the line.
        offset: u64,
    },
}

#[derive(Default)]
struct Partial {
    completion: Option<(Box<RawValue>, Box<RawValue>, Box<RawValue>)>,
    input: Option<(Box<RawValue>, Option<Box<RawValue>>)>,
    outputs: StageOutputs,
}

/// Builds the cases from the lines a [`Selection`] lists (pass 2). It keeps what it needs of
/// the index, so it does not borrow it.
pub struct TestSetBuilder {
    selection: Selection,
    ids: Vec<PipelineId>,
    file_names: Vec<String>,
    cases: Vec<Partial>,
    fed: Vec<bool>,
    warnings: Vec<String>,
}

fn null() -> Box<RawValue> {
    RawValue::from_string("null".to_owned()).expect("null is JSON")
}

fn owned(raw: Option<&RawValue>) -> Box<RawValue> {
    raw.map_or_else(null, |r| r.to_owned())
}

fn is_set(raw: &Option<&RawValue>) -> bool {
    raw.is_some_and(|r| r.get() != "null")
}

impl TestSetBuilder {
    /// A builder for the selection made from `index`.
    pub fn new(index: &AuditIndex, selection: Selection) -> Self {
        let cases = (0..selection.chosen.len()).map(|_| Partial::default()).collect();
        let fed = vec![false; selection.lines.len()];
        let ids = selection
            .chosen
            .iter()
            .map(|&i| index.pipelines[i as usize].id.clone())
            .collect();
        let file_names = index.files.iter().map(|f| f.name.clone()).collect();
        TestSetBuilder {
            selection,
            ids,
            file_names,
            cases,
            fed,
            warnings: Vec::new(),
        }
    }

    /// The selection being built.
    pub fn selection(&self) -> &Selection {
        &self.selection
    }

    /// Feeds the bytes of `selection.lines()[i]` (without line ending).
    pub fn feed(&mut self, i: usize, bytes: &[u8]) -> Result<(), TestSetError> {
        let needed = self.selection.lines[i];
        let changed = || TestSetError::Changed {
            file: self.file_names[needed.at.file as usize].clone(),
            offset: needed.at.offset,
        };
        if bytes.len() != needed.at.len as usize {
            return Err(changed());
        }
        let pipeline_id = &self.ids[needed.case as usize];
        let mut id = Scalar::Absent;
        let (mut template, mut verdict, mut reward, mut stage_id, mut output) = (None, None, None, None, None);
        let (mut input, mut input_hash, mut snapshot_input) = (None, None, None);
        parse_object_line(bytes, |key, v| {
            match key {
                "pipeline_id" => id = v.scalar()?,
                "template_id" => template = Some(v.raw()?),
                "verdict" => verdict = Some(v.raw()?),
                "episode_reward" => reward = Some(v.raw()?),
                "stage_id" => stage_id = Some(v.raw()?),
                "output" => output = Some(v.raw()?),
                "input" => input = Some(v.raw()?),
                "input_hash" => input_hash = Some(v.raw()?),
                "state_snapshot" => {
                    snapshot_input = None;
                    v.object(&mut |k, inner| {
                        if k == "input_text" {
                            snapshot_input = Some(inner.raw()?);
                            Ok(())
                        } else {
                            inner.skip()
                        }
                    })?;
                }
                _ => v.skip()?,
            }
            Ok(())
        })
        .map_err(|_| changed())?;
        if PipelineId::from_scalar(&id).ok().as_ref() != Some(pipeline_id) {
            return Err(changed());
        }
        let case = &mut self.cases[needed.case as usize];
        if needed.completion {
            case.completion = Some((owned(template), owned(verdict), owned(reward)));
        } else {
            if case.input.is_none() {
                let chosen = if is_set(&snapshot_input) {
                    snapshot_input
                } else if is_set(&input) {
                    input
                } else {
                    None
                };
                if let Some(text) = chosen {
                    let hash = input_hash.filter(|h| h.get() != "null").map(|h| h.to_owned());
                    case.input = Some((text.to_owned(), hash));
                }
            }
            if let Some(sid) = stage_id.filter(|r| r.get() != "null") {
                let key = match serde_json::from_str::<String>(sid.get()) {
                    Ok(s) => s,
                    Err(_) => {
                        let text = sid.get().trim().to_owned();
                        self.warnings.push(format!(
                            "pipeline {}: stage_id {text} is not a string; its output is keyed \"{text}\"",
                            pipeline_id
                        ));
                        text
                    }
                };
                case.outputs.insert(key, owned(output));
            }
        }
        self.fed[i] = true;
        Ok(())
    }

    /// The finished test set; every listed line must have been fed.
    pub fn finish(self) -> Result<TestSet, TestSetError> {
        if let Some(i) = self.fed.iter().position(|f| !f) {
            let at = self.selection.lines[i].at;
            return Err(TestSetError::NotFed {
                file: self.file_names[at.file as usize].clone(),
                offset: at.offset,
            });
        }
        let mut cases = Vec::with_capacity(self.cases.len());
        let mut first_line: Vec<Option<LineRef>> = vec![None; self.cases.len()];
        for l in self.selection.lines.iter().rev() {
            first_line[l.case as usize] = Some(l.at);
        }
        for (n, (partial, id)) in self.cases.into_iter().zip(self.ids).enumerate() {
            let at = first_line[n].expect("every case has a completion line");
            let not_found = || TestSetError::Changed {
                file: self.file_names[at.file as usize].clone(),
                offset: at.offset,
            };
            let (template_id, expected_verdict, episode_reward) = partial.completion.ok_or_else(not_found)?;
            let (input_text, input_hash) = partial.input.ok_or_else(not_found)?;
            cases.push(TestCase {
                pipeline_id: id,
                template_id,
                input_text,
                expected_verdict,
                expected_stage_outputs: partial.outputs,
                episode_reward,
                input_hash,
            });
        }
        Ok(TestSet {
            cases,
            candidates: self.selection.candidates,
            sampled: self.selection.sampled,
            insufficient: self.selection.insufficient,
            policy: self.selection.policy,
            warnings: self.warnings,
        })
    }
}

/// Builds the test set from whole in-memory audit files (pass 2 by slicing them).
pub fn build_from_memory(index: &AuditIndex, files: &[&[u8]], policy: &TestSetPolicy) -> Result<TestSet, TestSetError> {
    let selection = index.select(policy);
    let mut builder = TestSetBuilder::new(index, selection);
    for i in 0..builder.selection().lines().len() {
        let at = builder.selection().lines()[i].at;
        let file = files[at.file as usize];
        let start = at.offset as usize;
        let line = file.get(start..start + at.len as usize).unwrap_or(&[]);
        builder.feed(i, line)?;
    }
    builder.finish()
}
