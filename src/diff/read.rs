//! One side of a diff read from its bytes: a report (`deploy-gate/report/v1`, as every build
//! wrote it) or a signed decision, which is read only after its signatures verify.

use super::{Evaluation, Interval, SideInput, Source, TemplateId};
use crate::attest::{self, jcs, Limits, VerifyError};
use crate::audit::PipelineId;
use crate::decision::Outcome;
use crate::policy::GatePolicy;
use crate::report::SCHEMA;
use ed25519_dalek::VerifyingKey;
use serde::Deserialize;
use serde_json::value::RawValue;
use sha2::{Digest, Sha256};
use std::borrow::Cow;

/// The keys a signed decision must verify against (its age and target are not checked: a diff
/// reads what a decision says, it deploys nothing).
#[derive(Debug, Clone, Copy)]
pub struct Trust<'a> {
    /// The only keys whose signatures count.
    pub keys: &'a [VerifyingKey],
    /// How many distinct trusted keys must have signed (at least 1).
    pub threshold: usize,
    /// Size and count limits of an envelope.
    pub limits: Limits,
}

/// Why a side could not be read.
#[derive(Debug, PartialEq, thiserror::Error)]
pub enum Problem {
    /// Not JSON, or JSON without the shape of a report (serde's message, with line and column).
    #[error("not a deploy-gate report: {0}")]
    Report(String),
    /// JSON that is neither a report nor a signed decision.
    #[error("neither a deploy-gate report (no `schema`) nor a signed decision (no `payloadType`)")]
    Unknown,
    /// A signed decision where a report was asked for.
    #[error("it is a signed decision, not a report: a signed decision is read with the keys it must verify against")]
    SignedNotReport,
    /// A document of another schema (a diff, a report of another version).
    #[error("its schema is `{0}`, not {SCHEMA}")]
    Schema(String),
    /// A signed decision, and no key to verify it with.
    #[error("it is a signed decision: it is read only once it verifies, and no trusted key was given")]
    NoTrustedKeys,
    /// A signed decision that does not verify against the trusted keys.
    #[error("the signed decision does not verify ({check}): {error}", check = .0.check(), error = .0)]
    Refused(VerifyError),
    /// A verified statement whose report cannot be read.
    #[error("the signed statement's report: {0}")]
    SignedReport(Box<Problem>),
    /// A value the report's writer never writes (a field named by its place).
    #[error("{place}: {message}")]
    Value {
        /// Where, e.g. `cases[3].pipeline_id`.
        place: String,
        /// What is wrong with it.
        message: String,
    },
}

/// A side that could not be read: the file's name and why.
#[derive(Debug, PartialEq, thiserror::Error)]
#[error("{name}: {problem}")]
pub struct ReadError {
    /// The file's name as the caller gave it.
    pub name: String,
    /// What is wrong.
    pub problem: Problem,
}

impl ReadError {
    /// The failed verification check when a signed decision was refused (`signature`, …).
    pub fn check(&self) -> Option<&'static str> {
        match &self.problem {
            Problem::Refused(e) => Some(e.check()),
            _ => None,
        }
    }
}

// ---- The parts of a report a diff reads (unknown fields are ignored) ----

#[derive(Deserialize)]
struct Probe<'a> {
    #[serde(borrow, default)]
    schema: Option<&'a RawValue>,
    #[serde(borrow, default, rename = "payloadType")]
    payload_type: Option<&'a RawValue>,
}

#[derive(Deserialize)]
struct ReportDoc<'a> {
    #[serde(borrow)]
    schema: Cow<'a, str>,
    /// An envelope's key: a document that has it is no report (see [`read_document`]).
    #[serde(default, rename = "payloadType")]
    payload_type: Option<serde::de::IgnoredAny>,
    #[serde(borrow)]
    tool: ToolDoc<'a>,
    #[serde(borrow)]
    policy: &'a RawValue,
    #[serde(borrow)]
    inputs: Vec<InputDoc<'a>>,
    #[serde(borrow)]
    decision: DecisionDoc<'a>,
    /// Reports written before the statistics were added have none.
    #[serde(default)]
    stats: Option<StatsDoc>,
    #[serde(borrow)]
    cases: Vec<CaseDoc<'a>>,
    #[serde(borrow)]
    templates: Vec<TemplateDoc<'a>>,
    /// Present only when the report's policy has guardrails.
    #[serde(borrow, default)]
    guardrails: Option<super::guardrails::GuardrailsDoc<'a>>,
    /// Present when a case lacks a verdict or the decision is sequential.
    #[serde(default)]
    evidence: Option<EvidenceDoc>,
}

#[derive(Deserialize)]
struct EvidenceDoc {
    test_cases: u64,
    rests_on: u64,
    missing: MissingDoc,
    #[serde(default)]
    not_run: Option<u64>,
    over: String,
}

#[derive(Deserialize)]
struct MissingDoc {
    old: u64,
    new: u64,
}

#[derive(Deserialize)]
struct ToolDoc<'a> {
    #[serde(borrow)]
    name: Cow<'a, str>,
    #[serde(borrow)]
    version: Cow<'a, str>,
}

#[derive(Deserialize)]
struct InputDoc<'a> {
    #[serde(borrow)]
    role: Cow<'a, str>,
    #[serde(borrow)]
    name: Cow<'a, str>,
    #[serde(borrow, default)]
    sha256: Option<Cow<'a, str>>,
}

#[derive(Deserialize)]
struct DecisionDoc<'a> {
    approved: bool,
    #[serde(borrow)]
    reason: Cow<'a, str>,
    /// Written by builds that know an inconclusive decision; absent before.
    #[serde(borrow, default)]
    outcome: Option<Cow<'a, str>>,
    task_delta: Option<f64>,
    num_cases: u64,
}

#[derive(Deserialize)]
struct StatsDoc {
    confidence: Option<f64>,
    task: TaskDoc,
}

#[derive(Deserialize)]
struct TaskDoc {
    delta: DeltaDoc,
    /// The intervals clustered by template: absent in a report made before `cluster` existed,
    /// `null` when the rules did not cluster (`cluster: none`, fewer than two clusters).
    #[serde(default)]
    clustered: Option<ClusteredDoc>,
}

impl TaskDoc {
    /// The interval of `new − old` the rules used, as the report's `rule_delta`
    /// ([`crate::stats::TaskStats::rule_delta`]): the clustered one when there is one; and
    /// whether it is.
    fn rule_delta(&self) -> (&DeltaDoc, bool) {
        match &self.clustered {
            Some(c) => (&c.delta, true),
            None => (&self.delta, false),
        }
    }
}

#[derive(Deserialize)]
struct ClusteredDoc {
    delta: DeltaDoc,
}

#[derive(Deserialize)]
struct DeltaDoc {
    low: Option<f64>,
    high: Option<f64>,
    /// Absent in a hand-made report.
    #[serde(default)]
    method: Option<String>,
}

#[derive(Deserialize)]
struct CaseDoc<'a> {
    /// Raw: an integer id wider than 64 bits keeps its digits.
    #[serde(borrow)]
    pipeline_id: &'a RawValue,
    #[serde(borrow)]
    template_id: &'a RawValue,
    #[serde(borrow)]
    old_verdict: Option<Cow<'a, str>>,
    #[serde(borrow)]
    new_verdict: Option<Cow<'a, str>>,
    old_pass: bool,
    new_pass: bool,
    #[serde(default)]
    old_missing: bool,
    #[serde(default)]
    new_missing: bool,
}

#[derive(Deserialize)]
struct TemplateDoc<'a> {
    #[serde(borrow)]
    template_id: &'a RawValue,
    n: u64,
    delta: Option<f64>,
}

/// A statement as a diff reads it: the report it carries and the policy digest it pins.
#[derive(Deserialize)]
struct StatementDoc<'a> {
    #[serde(borrow)]
    predicate: PredicateDoc<'a>,
}

#[derive(Deserialize)]
struct PredicateDoc<'a> {
    /// [`attest::REPORT_KEY`] (a test checks that the two are the same).
    #[serde(borrow, rename = "https://deploy-gate.dev/report/v1")]
    report: ReportDoc<'a>,
    #[serde(borrow, default)]
    policy: Option<PinDoc<'a>>,
    /// [`attest::REVIEW_KEY`]: the review signed with it (checked by the verifier already).
    #[serde(default, rename = "https://deploy-gate.dev/review/v1")]
    review: Option<crate::review::ReviewPin>,
}

#[derive(Deserialize)]
struct PinDoc<'a> {
    #[serde(borrow, default)]
    digest: Option<PinDigest<'a>>,
}

#[derive(Deserialize)]
struct PinDigest<'a> {
    #[serde(borrow, default)]
    sha256: Option<Cow<'a, str>>,
}

fn value_error(place: impl Into<String>, message: impl Into<String>) -> Problem {
    Problem::Value {
        place: place.into(),
        message: message.into(),
    }
}

/// A pipeline id as the report writes it: a JSON string, or a JSON integer of any size. In a
/// signed statement, a float where an id should be is an integer id wider than 64 bits that its
/// signer wrote as a double: its digits are gone, and the message says so.
fn pipeline_id(raw: &RawValue, signed: bool, place: impl Fn() -> String) -> Result<PipelineId, Problem> {
    let text = raw.get();
    if text.starts_with('"') {
        let s: String = serde_json::from_str(text).map_err(|e| value_error(place(), e.to_string()))?;
        return Ok(PipelineId {
            text: s.into(),
            numeric: false,
        });
    }
    if crate::json::is_integer_id_text(text) {
        return Ok(PipelineId {
            text: text.into(),
            numeric: true,
        });
    }
    let lost = signed && text.parse::<f64>().is_ok_and(|x| x.is_finite() && x.abs() >= 9.2e18);
    Err(value_error(
        place(),
        if lost {
            format!(
                "`{}` is not a pipeline id (a string or an integer): the report had an integer id wider than \
                 64 bits, which the build that signed it wrote as a float, so its digits are lost and it \
                 cannot be matched with any case",
                shown(text)
            )
        } else {
            format!("`{}` is not a pipeline id (a string or an integer)", shown(text))
        },
    ))
}

/// At most 60 characters of a value, for a message.
fn shown(text: &str) -> Cow<'_, str> {
    match text.char_indices().nth(60) {
        None => Cow::Borrowed(text),
        Some((at, _)) => Cow::Owned(format!("{}…", &text[..at])),
    }
}

/// Reads a report's JSON (`deploy-gate evaluate --out`, from any build).
pub fn read_report(name: &str, bytes: &[u8]) -> Result<Evaluation, ReadError> {
    let fail = |problem| ReadError {
        name: name.to_owned(),
        problem,
    };
    let doc: ReportDoc<'_> = serde_json::from_slice(bytes).map_err(|e| fail(report_problem(&e, bytes)))?;
    if doc.payload_type.is_some() {
        return Err(fail(Problem::SignedNotReport));
    }
    evaluation(doc, Source::Report, Vec::new(), None).map_err(fail)
}

/// Reads a signed decision: its signatures verify against the trusted keys first (through the
/// verifier, [`attest::verify_signatures`]), then the report is read from the verified
/// statement's bytes.
pub fn read_signed(name: &str, bytes: &[u8], trust: Option<&Trust<'_>>) -> Result<Evaluation, ReadError> {
    let fail = |problem| ReadError {
        name: name.to_owned(),
        problem,
    };
    let trust = trust
        .filter(|t| !t.keys.is_empty())
        .ok_or_else(|| fail(Problem::NoTrustedKeys))?;
    let signed = attest::verify_signatures(bytes, trust.keys, trust.threshold, &trust.limits)
        .map_err(|e| fail(Problem::Refused(e)))?;
    // The statement as a `Value` goes before its report is read again from the same bytes
    // (keeping every digit of an id): only one of the two is held at a time.
    let attest::SignedStatement { payload, signers, .. } = signed;
    let signed_report = |p: Problem| fail(Problem::SignedReport(Box::new(p)));
    let statement: StatementDoc<'_> =
        serde_json::from_slice(&payload).map_err(|e| signed_report(Problem::Report(e.to_string())))?;
    let pinned = statement
        .predicate
        .policy
        .and_then(|p| p.digest)
        .and_then(|d| d.sha256)
        .map(Cow::into_owned);
    let review = statement.predicate.review;
    let mut evaluation =
        evaluation(statement.predicate.report, Source::Signed, signers, pinned).map_err(signed_report)?;
    evaluation.review = review;
    Ok(evaluation)
}

/// The first key of a JSON object, when it is spelt without escapes (`None` otherwise).
fn first_key(bytes: &[u8]) -> Option<&[u8]> {
    let ws = |b: &u8| matches!(b, b' ' | b'\t' | b'\n' | b'\r');
    let rest = &bytes[bytes.iter().position(|b| !ws(b))?..];
    let rest = rest.strip_prefix(b"{")?;
    let rest = &rest[rest.iter().position(|b| !ws(b))?..];
    let rest = rest.strip_prefix(b"\"")?;
    let end = rest.iter().position(|&b| b == b'"' || b == b'\\')?;
    (rest[end] == b'"').then(|| &rest[..end])
}

/// Reads either: a signed decision (a JSON object with `payloadType`) through [`read_signed`],
/// else a report through [`read_report`].
pub fn read_document(name: &str, bytes: &[u8], trust: Option<&Trust<'_>>) -> Result<Evaluation, ReadError> {
    // A report as every build writes it starts with its schema: read it at once (a report is
    // tens of MB; a first pass to find its keys would read it twice). Should it also have a
    // `payloadType`, it is read as the signed decision it claims to be.
    if first_key(bytes) == Some(b"schema") {
        match read_report(name, bytes) {
            Err(ReadError {
                problem: Problem::SignedNotReport,
                ..
            }) => return read_signed(name, bytes, trust),
            other => return other,
        }
    }
    let probe: Probe<'_> = serde_json::from_slice(bytes).map_err(|e| ReadError {
        name: name.to_owned(),
        problem: report_problem(&e, bytes),
    })?;
    match (probe.payload_type, probe.schema) {
        (Some(_), _) => read_signed(name, bytes, trust),
        (None, Some(_)) => read_report(name, bytes),
        (None, None) => Err(ReadError {
            name: name.to_owned(),
            problem: Problem::Unknown,
        }),
    }
}

/// serde's message, or the document's own schema when that is what is wrong.
fn report_problem(e: &serde_json::Error, bytes: &[u8]) -> Problem {
    match serde_json::from_slice::<Probe<'_>>(bytes) {
        Ok(Probe {
            payload_type: Some(_), ..
        }) => return Problem::SignedNotReport,
        Ok(Probe { schema: Some(raw), .. }) => match serde_json::from_str::<String>(raw.get()) {
            Ok(s) if s != SCHEMA => return Problem::Schema(shown(&s).into_owned()),
            _ => {}
        },
        _ => {}
    }
    Problem::Report(e.to_string())
}

/// The owned side of a diff from a report's parts.
fn evaluation(
    doc: ReportDoc<'_>,
    source: Source,
    signers: Vec<String>,
    pinned: Option<String>,
) -> Result<Evaluation, Problem> {
    if doc.schema != SCHEMA {
        return Err(Problem::Schema(shown(&doc.schema).into_owned()));
    }
    let policy_value: serde_json::Value =
        serde_json::from_str(doc.policy.get()).map_err(|e| value_error("policy", e.to_string()))?;
    let policy = GatePolicy::from_report(&policy_value).map_err(|e| value_error("policy", e.message))?;
    // The digest a signature of this report pins (`sign` canonicalises the policy as written);
    // a signed decision's own pin when it has one.
    let policy_digest = match pinned {
        Some(d) => d,
        None => {
            let canonical = jcs::canonical_json(&policy_value).map_err(|e| value_error("policy", e.to_string()))?;
            hex::encode(Sha256::digest(canonical.as_bytes()))
        }
    };
    let d = &doc.decision;
    let outcome = match &d.outcome {
        None => None,
        Some(o) => match Outcome::parse(o) {
            None => {
                return Err(value_error(
                    "decision.outcome",
                    format!("`{}` is not approved, blocked or inconclusive", shown(o)),
                ))
            }
            Some(parsed) if (parsed == Outcome::Approved) != d.approved => {
                return Err(value_error(
                    "decision.outcome",
                    format!("`{o}` contradicts decision.approved = {}", d.approved),
                ))
            }
            Some(_) => Some(o.clone().into_owned()),
        },
    };
    let answered_by_both = doc.cases.iter().filter(|c| !c.old_missing && !c.new_missing).count() as u64;
    let evidence = doc.evidence.map(|e| super::SideEvidence {
        test_cases: e.test_cases,
        rests_on: e.rests_on,
        missing: super::EvidenceMissing {
            old: e.missing.old,
            new: e.missing.new,
        },
        not_run: e.not_run,
        over: e.over,
    });
    let rests_on = evidence.as_ref().map_or(answered_by_both, |e| e.rests_on);
    let mut cases = Vec::with_capacity(doc.cases.len());
    for (i, c) in doc.cases.into_iter().enumerate() {
        cases.push(super::CaseRow {
            id: pipeline_id(c.pipeline_id, source == Source::Signed, || {
                format!("cases[{i}].pipeline_id")
            })?,
            template: TemplateId::from_raw(c.template_id.get()),
            old_pass: c.old_pass,
            new_pass: c.new_pass,
            old_verdict: c.old_verdict.map(Cow::into_owned),
            new_verdict: c.new_verdict.map(Cow::into_owned),
        });
    }
    let templates = doc
        .templates
        .into_iter()
        .map(|t| super::TemplateStat {
            template: TemplateId::from_raw(t.template_id.get()),
            n: t.n,
            delta: t.delta,
        })
        .collect();
    Ok(Evaluation {
        source,
        review: None,
        signers,
        tool: super::Tool {
            name: doc.tool.name.into_owned(),
            version: doc.tool.version.into_owned(),
        },
        decision: super::SideDecision {
            approved: d.approved,
            reason: d.reason.clone().into_owned(),
            outcome,
        },
        task_delta: d.task_delta,
        policy,
        policy_digest,
        num_cases: d.num_cases,
        inputs: doc
            .inputs
            .into_iter()
            .map(|f| SideInput {
                role: f.role.into_owned(),
                name: f.name.into_owned(),
                sha256: f.sha256.map(Cow::into_owned),
            })
            .collect(),
        cases,
        templates,
        interval: {
            let rule = doc.stats.as_ref().map(|s| s.task.rule_delta());
            Interval {
                task_delta: d.task_delta,
                low: rule.and_then(|(r, _)| r.low),
                high: rule.and_then(|(r, _)| r.high),
                confidence: doc.stats.as_ref().and_then(|s| s.confidence),
                method: rule.and_then(|(r, _)| r.method.clone()),
                clustered: rule.is_some_and(|(_, c)| c),
            }
        },
        guardrails: doc.guardrails.map(super::guardrails::side),
        evidence,
        rests_on,
    })
}
