//! The gate policy: its types, its defaults, the one parser for every source, its validation and
//! its canonical digest.
//!
//! A policy comes from four places, all read by [`PolicyInput`] (every field optional):
//! - the CLI's flags (`--min-samples 30`): each flag's text goes through the `parse_*` functions
//!   below, the same rules as the JSON values;
//! - the page's form and JS embedders (a plain object, [`PolicyInput::from_json`]);
//! - a policy file a team keeps in its repository ([`PolicyInput::from_file`]: JSON, duplicate keys
//!   and unknown fields refused);
//! - the `policy` object of a report ([`GatePolicy::from_report`]), so that a signed report's policy
//!   parses back to exactly the policy that made it; a whole report given as a policy file is read
//!   the same way ([`PolicyInput::from_file`]).
//!
//! Sources are layered with [`PolicyInput::or`]: defaults < policy file < explicit flags or fields.
//! [`PolicyInput::into_policy`] fills in the defaults and validates. Every error is a
//! [`PolicyError`] naming the field.
//!
//! The accepted spellings, everywhere: the tolerances as `task_tol` / `traj_tol` (the flags' and
//! the form's names) or `task_regression_tol` / `trajectory_regression_tol` (the report's names);
//! `mode` as `point`, `non_inferiority` or `non-inferiority`; `on_insufficient` as `block` or
//! `approve`; `max_samples` as a number, or `null`, `"none"`, `"all"` or `""` for no limit;
//! `pass_verdicts` as a list or one comma-separated string. In JSON, a string value is read as
//! the field's flag reads its text (`"min_samples": "20"` is `--min-samples 20`), which is how
//! the page's form sends its fields. A policy is always written out
//! in the report's spelling ([`GatePolicy`]'s `Serialize`).
//!
//! # The defaults, and who reads them
//!
//! The `DEFAULT_*` constants below are the only place a default is written. They are read through
//! [`GatePolicy::default`] (with [`TestSetPolicy::default`] and [`PassSet::default`]), which
//! [`PolicyInput::into_policy`] fills every absent field from. Its readers:
//! - the CLI (`src/cli/`): `test-set`, `evaluate` and `policy` (`evaluate.rs`) layer
//!   their `--policy FILE` and flags over the defaults (`files.rs` reads the file), and `mod.rs`
//!   prints them in `--help`; `verify --policy` (`sign.rs`) resolves the file over them;
//! - the wasm layer (`src/wasm.rs`): `GateSession` (an absent policy or field), `defaultPolicy()`
//!   and `checkPolicy()`; the page's form (`www/components/policy-form.js`) shows
//!   `defaultPolicy()` and checks its fields with `checkPolicy()`;
//! - the core: [`crate::gate::evaluate_in_memory`]'s callers pass a [`GatePolicy`], usually this
//!   default, and a report made before `mode` and `confidence` existed reads them as the
//!   defaults ([`GatePolicy::from_report`]).
//!
//! # `cluster` and `repeats`: a default for new evaluations, and what their absence means
//!
//! The two fields came later than the others, and their defaults for a new evaluation
//! ([`DEFAULT_CLUSTER`] `template`, [`DEFAULT_REPEATS`] `last`) are not what a policy meant before
//! they existed (no clustering, the last verdict of a case, a decision that is approved or
//! blocked). So a policy is one of two kinds, and [`GatePolicy::case_model`] says which:
//! - `Some(CaseModel)`: a policy of this revision. It is written out with both fields, always, and
//!   its decisions carry an `outcome` (approved, blocked or, under non-inferiority, inconclusive).
//!   Every new evaluation has one: the defaults, flags, the page's form and a policy file fill an
//!   absent `cluster` or `repeats` with its default ([`PolicyInput::into_policy`]).
//! - `None`: a policy written before the fields existed — a report's `policy` object without
//!   them ([`GatePolicy::from_report`], a report given as a policy file). It resolves exactly as
//!   it did: the intervals are not clustered, the last verdict of a case counts, the decision is
//!   approved or blocked with the reasons of that time, the report has the shape it had (no
//!   `outcome`, no `clustered`), and its canonical form, so its digest, is the nine fields it had.
//!   That is how an old signed decision still verifies (its pinned digest) and reproduces (its
//!   report, byte for byte).
//!
//! A policy file that names neither field resolves, for a new evaluation, with the defaults; a
//! deploy step checking it against a decision signed before the fields existed resolves it as it
//! did then ([`resolve_pinned`]).

mod error;
mod guardrails;

pub use error::PolicyError;
pub use guardrails::{Action, Guardrail, Guardrails, Limit, Metric, Price, Prices, Statistic, TemplateRegression};

use crate::attest::{jcs, strict};
use crate::compat::upper;
use serde::ser::SerializeStruct;
use serde::{Deserialize, Serialize, Serializer};
use serde_json::{Map, Value};
use sha2::{Digest, Sha256};

/// Default of `min_samples`: fewer candidate cases than this give an empty test set.
pub const DEFAULT_MIN_SAMPLES: usize = 20;
/// Default of `max_samples`: more candidates than this are sampled down to it (`None`: no limit).
pub const DEFAULT_MAX_SAMPLES: Option<usize> = Some(200);
/// Default of `seed`: the seed of the reproducible sample.
pub const DEFAULT_SEED: u64 = 0;
/// Default of `pass_verdicts`: the verdicts of a successful run (compared after upper-casing).
pub const DEFAULT_PASS_VERDICTS: [&str; 3] = ["PASS", "APPROVE", "COMPLETE"];
/// Default of `task_regression_tol` (`task_tol`): blocked when `new < old − tol`.
pub const DEFAULT_TASK_TOL: f64 = 0.0;
/// Default of `trajectory_regression_tol` (`traj_tol`).
pub const DEFAULT_TRAJ_TOL: f64 = 0.05;
/// Default of `on_insufficient`: fail closed.
pub const DEFAULT_ON_INSUFFICIENT: OnInsufficient = OnInsufficient::Block;
/// Default of `mode`: the reference's point rule.
pub const DEFAULT_MODE: Mode = Mode::Point;
/// Default of `confidence`: the level of the intervals.
pub const DEFAULT_CONFIDENCE: f64 = 0.95;
/// Default of `cluster` for a new evaluation: cases are clustered by their template.
pub const DEFAULT_CLUSTER: Cluster = Cluster::Template;
/// Default of `repeats` for a new evaluation: the last verdict of a case counts (the reference's
/// rule).
pub const DEFAULT_REPEATS: Repeats = Repeats::Last;

/// Default of `max_missing`: the most test cases (a fraction of those run) that may lack a
/// verdict on a side before the decision is inconclusive. Written into the policy only when given.
pub const DEFAULT_MAX_MISSING: f64 = 0.05;

/// The sequential rule's `budget` when the policy gives none: every unit of the test set (its
/// cases, or its templates under `cluster: template`).
pub const DEFAULT_BUDGET: Option<usize> = None;

/// How the `schema` of every deploy-gate report begins (`report::SCHEMA` is the current one).
pub const REPORT_SCHEMA_PREFIX: &str = "deploy-gate/report/";

/// The policy's fields, in the report's order and spelling (`cluster` and `repeats` only in a
/// policy of this revision: see the module's documentation; `sequential` and `budget` only when
/// the policy is sequential and gives a budget: see [`SequentialPolicy`]).
pub const FIELDS: [&str; 18] = [
    "min_samples",
    "max_samples",
    "seed",
    "pass_verdicts",
    "task_regression_tol",
    "trajectory_regression_tol",
    "on_insufficient",
    "mode",
    "confidence",
    "cluster",
    "repeats",
    "sequential",
    "budget",
    "prices",
    "guardrails",
    "template_regression",
    "max_missing",
    "review",
];

/// Why a policy file cannot be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PolicyFileError {
    /// Not JSON, or a key twice.
    #[error("{0}")]
    Json(#[from] strict::StrictJsonError),
    /// JSON, but not an object.
    #[error("a policy file is a JSON object (the shape of a report's `policy`)")]
    NotObject,
    /// A field is unknown or invalid.
    #[error("{0}")]
    Field(#[from] PolicyError),
}

impl PolicyFileError {
    /// The field at fault, if the error is about one.
    pub fn field(&self) -> Option<&str> {
        match self {
            PolicyFileError::Field(e) => Some(&e.field),
            _ => None,
        }
    }
}

/// What to do when the test set is empty or has fewer cases than `min_samples`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Default)]
#[serde(rename_all = "lowercase")]
pub enum OnInsufficient {
    /// Fail closed: keep the old model (the default).
    #[default]
    Block,
    /// The reference's behaviour: compare 0.0 with 0.0 and approve.
    Approve,
}

impl std::str::FromStr for OnInsufficient {
    type Err = PolicyError;
    fn from_str(s: &str) -> Result<Self, PolicyError> {
        match s {
            "block" => Ok(OnInsufficient::Block),
            "approve" => Ok(OnInsufficient::Approve),
            other => Err(PolicyError::new(
                "on_insufficient",
                format!("on_insufficient must be `block` or `approve`, not `{other}`"),
            )),
        }
    }
}

/// How the gate decides.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Default)]
#[serde(rename_all = "snake_case")]
pub enum Mode {
    /// The reference's rule on the point estimates: blocked when `new < old − tolerance`.
    #[default]
    Point,
    /// Approved only when the lower bound of the interval for `new − old` is ≥ −tolerance
    /// (task, and trajectory when checked).
    NonInferiority,
}

impl std::str::FromStr for Mode {
    type Err = PolicyError;
    fn from_str(s: &str) -> Result<Self, PolicyError> {
        match s {
            "point" => Ok(Mode::Point),
            "non_inferiority" | "non-inferiority" => Ok(Mode::NonInferiority),
            other => Err(PolicyError::new(
                "mode",
                format!("mode must be `point` or `non_inferiority`, not `{other}`"),
            )),
        }
    }
}

/// How cases are grouped for the intervals.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Default)]
#[serde(rename_all = "lowercase")]
pub enum Cluster {
    /// Cases of one `template_id` form a cluster (a case without a template is a cluster of its
    /// own): the intervals are cluster-robust.
    #[default]
    Template,
    /// Every case is independent of the others.
    None,
}

impl std::str::FromStr for Cluster {
    type Err = PolicyError;
    fn from_str(s: &str) -> Result<Self, PolicyError> {
        match s {
            "template" => Ok(Cluster::Template),
            "none" => Ok(Cluster::None),
            other => Err(PolicyError::new(
                "cluster",
                format!("cluster must be `template` or `none`, not `{other}`"),
            )),
        }
    }
}

/// Which verdicts of a case count when a verdict file holds several for it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Default)]
#[serde(rename_all = "lowercase")]
pub enum Repeats {
    /// The last one (the reference's rule).
    #[default]
    Last,
    /// Every one: a case's score is the share of its verdicts that pass.
    Mean,
}

impl std::str::FromStr for Repeats {
    type Err = PolicyError;
    fn from_str(s: &str) -> Result<Self, PolicyError> {
        match s {
            "last" => Ok(Repeats::Last),
            "mean" => Ok(Repeats::Mean),
            other => Err(PolicyError::new(
                "repeats",
                format!("repeats must be `last` or `mean`, not `{other}`"),
            )),
        }
    }
}

/// How a policy of this revision treats the cases: clustered or not, one verdict or every one.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CaseModel {
    /// `cluster`.
    pub cluster: Cluster,
    /// `repeats`.
    pub repeats: Repeats,
}

impl Default for CaseModel {
    fn default() -> Self {
        CaseModel {
            cluster: DEFAULT_CLUSTER,
            repeats: DEFAULT_REPEATS,
        }
    }
}

/// The sequential rule (`sequential: true`; docs/statistics.md, "Sequential decisions"): the
/// task criterion decided by an anytime-valid confidence sequence over the units taken in the
/// seed's order, at most `budget` of them.
///
/// Absent (`GatePolicy::sequential` `None`, `sequential: false`) it is not written into the
/// report's `policy`, so every policy without it has the canonical form, and the digest, it
/// had before the field existed; `budget` is written only when given.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct SequentialPolicy {
    /// The most units (cases, or templates under `cluster: template`) to use; `None`: all of
    /// the test set's.
    pub budget: Option<usize>,
}

/// Serde reads the enums through `FromStr`: one set of spellings for flags and JSON.
macro_rules! deserialize_from_str {
    ($t:ty) => {
        impl<'de> Deserialize<'de> for $t {
            fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
                let s = String::deserialize(d)?;
                s.parse().map_err(serde::de::Error::custom)
            }
        }
    };
}
deserialize_from_str!(OnInsufficient);
deserialize_from_str!(Mode);
deserialize_from_str!(Cluster);
deserialize_from_str!(Repeats);

/// Checks a confidence level: strictly between 0 and 1.
pub fn check_confidence(c: f64) -> Result<f64, PolicyError> {
    if c > 0.0 && c < 1.0 {
        Ok(c)
    } else {
        Err(PolicyError::new(
            "confidence",
            format!("confidence must be between 0 and 1 (e.g. 0.95), not {c}"),
        ))
    }
}

/// The set of verdicts that count as a successful run (compared after upper-casing).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PassSet {
    verdicts: Vec<String>,
}

impl PassSet {
    /// A pass set from verdict names; they are upper-cased, empty names dropped.
    pub fn new<S: AsRef<str>>(verdicts: impl IntoIterator<Item = S>) -> Self {
        let mut list: Vec<String> = Vec::new();
        for v in verdicts {
            let v = upper(v.as_ref().trim()).into_owned();
            if !v.is_empty() && !list.contains(&v) {
                list.push(v);
            }
        }
        PassSet { verdicts: list }
    }

    /// The upper-cased verdicts, in the order given.
    pub fn verdicts(&self) -> &[String] {
        &self.verdicts
    }

    /// Whether `upper(verdict)` is in the set.
    pub fn contains(&self, verdict: &str) -> bool {
        if verdict.is_ascii() {
            self.verdicts.iter().any(|v| v.eq_ignore_ascii_case(verdict))
        } else {
            let up = upper(verdict);
            self.verdicts.iter().any(|v| *v == *up)
        }
    }
}

impl Default for PassSet {
    fn default() -> Self {
        PassSet::new(DEFAULT_PASS_VERDICTS)
    }
}

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
            min_samples: DEFAULT_MIN_SAMPLES,
            max_samples: DEFAULT_MAX_SAMPLES,
            seed: DEFAULT_SEED,
        }
    }
}

/// Every knob of the gate.
#[derive(Debug, Clone, PartialEq)]
pub struct GatePolicy {
    /// Test-set size and sampling.
    pub test_set: TestSetPolicy,
    /// Verdicts of a successful run.
    pub pass_verdicts: PassSet,
    /// Task regression tolerance (`new < old − tol` blocks).
    pub task_regression_tol: f64,
    /// Trajectory regression tolerance.
    pub trajectory_regression_tol: f64,
    /// Empty / too small test set: block or approve.
    pub on_insufficient: OnInsufficient,
    /// The decision rule.
    pub mode: Mode,
    /// Confidence level of the intervals (default 0.95).
    pub confidence: f64,
    /// `cluster` and `repeats`; `None` for a policy written before they existed, which resolves
    /// as it did then (see the module's documentation).
    pub case_model: Option<CaseModel>,
    /// The sequential rule (`sequential: true`, its `budget`); `None`: the fixed rule.
    pub sequential: Option<SequentialPolicy>,
    /// `prices`, `guardrails` and `template_regression` (see [`crate::guardrail`]), each written
    /// only when given: a policy without them has the canonical form and digest it had.
    pub guardrails: Guardrails,
    /// `max_missing`, a fraction in [0, 1]; `None`: not given, [`DEFAULT_MAX_MISSING`] applies
    /// and the field is not written (so a policy without it keeps its canonical form and digest).
    pub max_missing: Option<f64>,
    /// `review`: what review a signed decision needs (`{"require": "regressed"}`: a mark on every
    /// regressed case); `None`: none, and the field is not written, as before it existed.
    pub review: Option<ReviewPolicy>,
}

/// `review` in a policy: which cases a signed decision's review must mark.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ReviewPolicy {
    /// The cases that need a mark.
    pub require: ReviewRequire,
}

/// The cases a review must mark.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ReviewRequire {
    /// Every regressed case: signing refuses, naming the unmarked ones; `verify` and `apply`
    /// refuse a decision signed without such a review.
    Regressed,
}

impl ReviewPolicy {
    /// The `review` field of a report's policy (its JSON), if it requires one; `Err` when it is
    /// there but not a review policy.
    pub fn of_report_policy(policy: &Value) -> Result<Option<ReviewPolicy>, String> {
        match policy.get("review") {
            None => Ok(None),
            Some(v) => serde_json::from_value(v.clone())
                .map(Some)
                .map_err(|e| format!("the policy's review: {e}")),
        }
    }
}

impl Default for GatePolicy {
    fn default() -> Self {
        GatePolicy {
            test_set: TestSetPolicy::default(),
            pass_verdicts: PassSet::default(),
            task_regression_tol: DEFAULT_TASK_TOL,
            trajectory_regression_tol: DEFAULT_TRAJ_TOL,
            on_insufficient: DEFAULT_ON_INSUFFICIENT,
            mode: DEFAULT_MODE,
            confidence: DEFAULT_CONFIDENCE,
            case_model: Some(CaseModel::default()),
            sequential: None,
            guardrails: Guardrails::default(),
            max_missing: None,
            review: None,
        }
    }
}

/// The report's `policy` object: [`FIELDS`], in that order (`cluster` and `repeats` only when the
/// policy has a [`CaseModel`]; `sequential: true` only for a sequential policy, and `budget`
/// only when it gives one).
impl Serialize for GatePolicy {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let fields = if self.case_model.is_some() { 11 } else { 9 }
            + self.sequential.map_or(0, |q| 1 + usize::from(q.budget.is_some()))
            + usize::from(self.guardrails.prices.is_some())
            + usize::from(!self.guardrails.list.is_empty())
            + usize::from(self.guardrails.template_regression.is_some())
            + usize::from(self.max_missing.is_some())
            + usize::from(self.review.is_some());
        let mut st = s.serialize_struct("GatePolicy", fields)?;
        st.serialize_field("min_samples", &self.test_set.min_samples)?;
        st.serialize_field("max_samples", &self.test_set.max_samples)?;
        st.serialize_field("seed", &self.test_set.seed)?;
        st.serialize_field("pass_verdicts", self.pass_verdicts.verdicts())?;
        st.serialize_field("task_regression_tol", &self.task_regression_tol)?;
        st.serialize_field("trajectory_regression_tol", &self.trajectory_regression_tol)?;
        st.serialize_field("on_insufficient", &self.on_insufficient)?;
        st.serialize_field("mode", &self.mode)?;
        st.serialize_field("confidence", &self.confidence)?;
        if let Some(m) = &self.case_model {
            st.serialize_field("cluster", &m.cluster)?;
            st.serialize_field("repeats", &m.repeats)?;
        }
        if let Some(q) = &self.sequential {
            st.serialize_field("sequential", &true)?;
            if let Some(b) = q.budget {
                st.serialize_field("budget", &b)?;
            }
        }
        let g = &self.guardrails;
        if let Some(p) = &g.prices {
            st.serialize_field("prices", p)?;
        }
        if !g.list.is_empty() {
            st.serialize_field("guardrails", &g.list)?;
        }
        if let Some(t) = &g.template_regression {
            st.serialize_field("template_regression", t)?;
        }
        if let Some(m) = self.max_missing {
            st.serialize_field("max_missing", &m)?;
        }
        if let Some(r) = &self.review {
            st.serialize_field("review", r)?;
        }
        st.end()
    }
}

impl GatePolicy {
    /// How cases are clustered: `None` (no clustering) for a policy written before `cluster`.
    pub fn cluster(&self) -> Cluster {
        self.case_model.map_or(Cluster::None, |m| m.cluster)
    }

    /// Which verdicts count: `Last` for a policy written before `repeats`.
    pub fn repeats(&self) -> Repeats {
        self.case_model.map_or(Repeats::Last, |m| m.repeats)
    }

    /// `max_missing`: the policy's, or [`DEFAULT_MAX_MISSING`] when it gives none.
    pub fn max_missing(&self) -> f64 {
        self.max_missing.unwrap_or(DEFAULT_MAX_MISSING)
    }

    /// Whether the task criterion is decided by the sequential rule.
    pub fn is_sequential(&self) -> bool {
        self.sequential.is_some()
    }

    /// The policy as the report's `policy` object.
    pub fn to_value(&self) -> Value {
        serde_json::to_value(self).expect("a policy serialises")
    }

    /// The RFC 8785 canonical JSON of the report's `policy` object.
    pub fn canonical_json(&self) -> Result<String, PolicyError> {
        jcs::canonical_json(&self.to_value()).map_err(|e| PolicyError::new("policy", e.to_string()))
    }

    /// The policy's digest: lowercase hex sha256 of [`GatePolicy::canonical_json`] — the digest a
    /// signed statement pins in `predicate.policy.digest.sha256`.
    pub fn digest(&self) -> Result<String, PolicyError> {
        Ok(hex::encode(Sha256::digest(self.canonical_json()?.as_bytes())))
    }

    /// The policy a report was made with, from the report's `policy` object. The fields every
    /// report has listed from the start are required (`mode` and `confidence` came later; absent,
    /// they are the defaults); the values are read by the one parser. Without `cluster` and
    /// `repeats` the report was made before they existed, and its policy resolves as it did
    /// (`case_model: None`); a report of this revision lists both.
    pub fn from_report(policy: &Value) -> Result<GatePolicy, PolicyError> {
        PolicyInput::from_report(policy)?.into_policy()
    }
}

/// A policy with every field optional: what a flag set, a form, a policy file or a report gives.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct PolicyInput {
    /// Fewer candidates than this give an empty test set.
    pub min_samples: Option<usize>,
    /// Sample down to this many cases; `Some(None)`: keep all.
    pub max_samples: Option<Option<usize>>,
    /// Seed of the sample.
    pub seed: Option<u64>,
    /// Task regression tolerance.
    pub task_tol: Option<f64>,
    /// Trajectory regression tolerance.
    pub traj_tol: Option<f64>,
    /// Pass verdicts (as given; upper-cased by [`PassSet`]).
    pub pass_verdicts: Option<Vec<String>>,
    /// `block` or `approve`.
    pub on_insufficient: Option<OnInsufficient>,
    /// `point` or `non_inferiority`.
    pub mode: Option<Mode>,
    /// Confidence level of the intervals.
    pub confidence: Option<f64>,
    /// `template` or `none`.
    pub cluster: Option<Cluster>,
    /// `last` or `mean`.
    pub repeats: Option<Repeats>,
    /// `sequential`: `true` decides the task criterion by the sequential rule.
    pub sequential: Option<bool>,
    /// The sequential rule's budget (a whole number ≥ 1).
    pub budget: Option<usize>,
    /// `prices`: each model's price per million tokens.
    pub prices: Option<Prices>,
    /// `guardrails` (an empty list: none).
    pub guardrails: Option<Vec<Guardrail>>,
    /// `template_regression`.
    pub template_regression: Option<TemplateRegression>,
    /// `max_missing`: a fraction in [0, 1].
    pub max_missing: Option<f64>,
    /// `review`: `{"require": "regressed"}`.
    pub review: Option<ReviewPolicy>,
    /// Read from a report's `policy` (a policy complete for its time): if neither `cluster` nor
    /// `repeats` is given, the policy predates them and resolves as it did (see the module's
    /// documentation); otherwise absent fields take the defaults.
    pub of_report: bool,
}

/// The field a key names (both spellings of the tolerances), or `None` for an unknown key.
fn canonical_field(key: &str) -> Option<&'static str> {
    Some(match key {
        "min_samples" => "min_samples",
        "max_samples" => "max_samples",
        "seed" => "seed",
        "pass_verdicts" => "pass_verdicts",
        "task_tol" | "task_regression_tol" => "task_regression_tol",
        "traj_tol" | "trajectory_regression_tol" => "trajectory_regression_tol",
        "on_insufficient" => "on_insufficient",
        "mode" => "mode",
        "confidence" => "confidence",
        "cluster" => "cluster",
        "repeats" => "repeats",
        "sequential" => "sequential",
        "budget" => "budget",
        "prices" => "prices",
        "guardrails" => "guardrails",
        "template_regression" => "template_regression",
        "max_missing" => "max_missing",
        "review" => "review",
        _ => return None,
    })
}

fn json_text(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

fn count_error(name: &str, text: &str) -> PolicyError {
    PolicyError::new(name, format!("{name} must be a whole number ≥ 0, not `{text}`"))
}

fn count_text(name: &str, text: &str) -> Result<u64, PolicyError> {
    text.trim().parse().map_err(|_| count_error(name, text))
}

fn usize_of(name: &str, n: u64) -> Result<usize, PolicyError> {
    usize::try_from(n).map_err(|_| PolicyError::new(name, format!("{name} is too large: {n}")))
}

fn max_text(name: &str, text: &str) -> Result<Option<usize>, PolicyError> {
    match text.trim() {
        "" => Ok(None),
        t if t.eq_ignore_ascii_case("none") || t.eq_ignore_ascii_case("all") => Ok(None),
        n => n
            .parse()
            .map(Some)
            .map_err(|_| PolicyError::new(name, format!("{name} must be a number or `none`, not `{text}`"))),
    }
}

fn tol_text(name: &str, text: &str) -> Result<f64, PolicyError> {
    match text.trim().parse::<f64>() {
        Ok(x) if x.is_finite() => Ok(x),
        _ => Err(PolicyError::new(
            name,
            format!("{name} must be a finite number, not `{text}`"),
        )),
    }
}

fn confidence_error(name: &str, text: &str) -> PolicyError {
    PolicyError::new(
        name,
        format!("{name} must be between 0 and 1 (e.g. 0.95), not `{text}`"),
    )
}

fn confidence_text(name: &str, text: &str) -> Result<f64, PolicyError> {
    let c = text.trim().parse::<f64>().map_err(|_| confidence_error(name, text))?;
    check_confidence(c).map_err(|e| PolicyError::new(name, e.message))
}

/// `min_samples` from a flag's (or a form field's) text.
pub fn parse_min_samples(text: &str) -> Result<usize, PolicyError> {
    usize_of("min_samples", count_text("min_samples", text)?)
}

/// `seed` from a flag's text.
pub fn parse_seed(text: &str) -> Result<u64, PolicyError> {
    count_text("seed", text)
}

/// `budget` from a flag's text: a whole number ≥ 1.
pub fn parse_budget(text: &str) -> Result<usize, PolicyError> {
    budget_of(
        "budget",
        count_text("budget", text).map_err(|_| budget_error("budget", text))?,
        text,
    )
}

fn budget_error(name: &str, text: &str) -> PolicyError {
    PolicyError::new(name, format!("{name} must be a whole number ≥ 1, not `{text}`"))
}

fn budget_of(name: &str, n: u64, text: &str) -> Result<usize, PolicyError> {
    if n == 0 {
        return Err(budget_error(name, text));
    }
    usize_of(name, n)
}

/// `sequential` from text: `true` or `false`.
pub fn parse_sequential(text: &str) -> Result<bool, PolicyError> {
    sequential_text("sequential", text)
}

fn sequential_text(name: &str, text: &str) -> Result<bool, PolicyError> {
    match text.trim() {
        "true" => Ok(true),
        "false" => Ok(false),
        _ => Err(PolicyError::new(
            name,
            format!("{name} must be `true` or `false`, not `{text}`"),
        )),
    }
}

/// `max_samples` from text: a number, or `none` / `all` (any case) / empty for no limit.
pub fn parse_max_samples(text: &str) -> Result<Option<usize>, PolicyError> {
    max_text("max_samples", text)
}

/// The task tolerance from a flag's text: a finite number.
pub fn parse_task_tol(text: &str) -> Result<f64, PolicyError> {
    tol_text("task_tol", text)
}

/// The trajectory tolerance from a flag's text: a finite number.
pub fn parse_traj_tol(text: &str) -> Result<f64, PolicyError> {
    tol_text("traj_tol", text)
}

fn max_missing_error(name: &str, text: &str) -> PolicyError {
    PolicyError::new(
        name,
        format!("{name} must be a fraction between 0 and 1 (e.g. 0.05) or a percentage (e.g. 5%), not `{text}`"),
    )
}

fn check_max_missing(name: &str, x: f64, text: &str) -> Result<f64, PolicyError> {
    if x.is_finite() && (0.0..=1.0).contains(&x) {
        Ok(x)
    } else {
        Err(max_missing_error(name, text))
    }
}

fn max_missing_text(name: &str, text: &str) -> Result<f64, PolicyError> {
    let t = text.trim();
    let x = match t.strip_suffix('%') {
        Some(pct) => pct.trim().parse::<f64>().map(|x| x / 100.0),
        None => t.parse::<f64>(),
    }
    .map_err(|_| max_missing_error(name, text))?;
    check_max_missing(name, x, text)
}

/// `max_missing` from a flag's text: a fraction in [0, 1] (`0.05`) or a percentage (`5%`).
pub fn parse_max_missing(text: &str) -> Result<f64, PolicyError> {
    max_missing_text("max_missing", text)
}

/// A confidence level from text: a number strictly between 0 and 1.
pub fn parse_confidence(text: &str) -> Result<f64, PolicyError> {
    confidence_text("confidence", text)
}

/// Pass verdicts from one comma-separated text.
pub fn split_pass_verdicts(text: &str) -> Vec<String> {
    text.split(',')
        .map(|v| v.trim().to_owned())
        .filter(|v| !v.is_empty())
        .collect()
}

fn check_pass_verdicts(list: Vec<String>) -> Result<Vec<String>, PolicyError> {
    if PassSet::new(&list).verdicts().is_empty() {
        Err(PolicyError::new(
            "pass_verdicts",
            "pass_verdicts must name at least one verdict",
        ))
    } else {
        Ok(list)
    }
}

/// Reads one field's value into `p`: a JSON value of the field's type, or a string read as the
/// field's flag reads its text (so `"20"`, `"none"`, `"PASS,OK"` mean what `--min-samples 20`,
/// `--max-samples none`, `--pass-verdicts PASS,OK` mean). Errors name the field as `key` spells it.
fn set_field(p: &mut PolicyInput, field: &str, key: &str, v: &Value) -> Result<(), PolicyError> {
    let text = v.as_str();
    let shown = json_text(v);
    match field {
        "min_samples" => {
            let n = match text {
                Some(t) => count_text(key, t)?,
                None => v.as_u64().ok_or_else(|| count_error(key, &shown))?,
            };
            p.min_samples = Some(usize_of(key, n)?);
        }
        "seed" => {
            p.seed = Some(match text {
                Some(t) => count_text(key, t)?,
                None => v.as_u64().ok_or_else(|| count_error(key, &shown))?,
            })
        }
        "max_samples" => {
            p.max_samples = Some(match (text, v) {
                (Some(t), _) => max_text(key, t)?,
                (None, Value::Null) => None,
                (None, _) => Some(v.as_u64().and_then(|n| usize::try_from(n).ok()).ok_or_else(|| {
                    PolicyError::new(key, format!("{key} must be a number or `none`, not `{shown}`"))
                })?),
            })
        }
        "task_regression_tol" | "trajectory_regression_tol" => {
            let x = match (text, v.as_f64()) {
                (Some(t), _) => tol_text(key, t)?,
                (None, Some(x)) if x.is_finite() => x,
                _ => {
                    return Err(PolicyError::new(
                        key,
                        format!("{key} must be a finite number, not `{shown}`"),
                    ))
                }
            };
            if field == "task_regression_tol" {
                p.task_tol = Some(x);
            } else {
                p.traj_tol = Some(x);
            }
        }
        "pass_verdicts" => {
            let list = match v {
                Value::String(s) => split_pass_verdicts(s),
                Value::Array(items) => items
                    .iter()
                    .map(|i| i.as_str().map(str::to_owned))
                    .collect::<Option<Vec<_>>>()
                    .ok_or_else(|| PolicyError::new(key, format!("{key} must be a list of strings, not `{shown}`")))?,
                _ => {
                    return Err(PolicyError::new(
                        key,
                        format!("{key} must be a list of verdicts or one comma-separated string, not `{shown}`"),
                    ))
                }
            };
            p.pass_verdicts = Some(check_pass_verdicts(list)?);
        }
        "on_insufficient" => {
            p.on_insufficient = Some(
                shown
                    .parse()
                    .map_err(|e: PolicyError| PolicyError::new(key, e.message))?,
            )
        }
        "mode" => {
            p.mode = Some(
                shown
                    .parse()
                    .map_err(|e: PolicyError| PolicyError::new(key, e.message))?,
            )
        }
        "cluster" => {
            p.cluster = Some(
                shown
                    .parse()
                    .map_err(|e: PolicyError| PolicyError::new(key, e.message))?,
            )
        }
        "repeats" => {
            p.repeats = Some(
                shown
                    .parse()
                    .map_err(|e: PolicyError| PolicyError::new(key, e.message))?,
            )
        }
        "sequential" => {
            p.sequential = Some(match (text, v) {
                (Some(t), _) => sequential_text(key, t)?,
                (None, Value::Bool(b)) => *b,
                _ => return Err(sequential_text(key, &shown).unwrap_err()),
            })
        }
        "budget" => {
            let n = match text {
                Some(t) => count_text(key, t).map_err(|_| budget_error(key, t))?,
                None => v.as_u64().ok_or_else(|| budget_error(key, &shown))?,
            };
            p.budget = Some(budget_of(key, n, &shown)?);
        }
        "prices" => p.prices = Some(Guardrails::parse_prices(key, v)?),
        "guardrails" => p.guardrails = Some(Guardrails::parse_list(key, v)?),
        "template_regression" => p.template_regression = Some(Guardrails::parse_template_regression(key, v)?),
        "review" => {
            p.review = Some(serde_json::from_value(v.clone()).map_err(|e| {
                PolicyError::new(
                    key,
                    format!("review must be {{\"require\": \"regressed\"}}, not {shown} ({e})"),
                )
            })?)
        }
        "max_missing" => {
            p.max_missing = Some(match (text, v.as_f64()) {
                (Some(t), _) => max_missing_text(key, t)?,
                (None, Some(x)) => check_max_missing(key, x, &shown)?,
                (None, None) => return Err(max_missing_error(key, &shown)),
            })
        }
        "confidence" => {
            p.confidence = Some(match (text, v.as_f64()) {
                (Some(t), _) => confidence_text(key, t)?,
                (None, Some(c)) => check_confidence(c).map_err(|e| PolicyError::new(key, e.message))?,
                (None, None) => return Err(confidence_error(key, &shown)),
            })
        }
        _ => unreachable!("every canonical field is matched"),
    }
    Ok(())
}

impl PolicyInput {
    /// The page's or an embedder's policy: JSON text of an object (a key twice is refused).
    pub fn from_json(text: &str) -> Result<PolicyInput, PolicyError> {
        let value = strict::from_slice(text.as_bytes()).map_err(|e| PolicyError::new("policy", e.to_string()))?;
        PolicyInput::from_value(&value)
    }

    /// A policy from a JSON value, which must be an object.
    pub fn from_value(value: &Value) -> Result<PolicyInput, PolicyError> {
        match value {
            Value::Object(map) => PolicyInput::from_map(map),
            _ => Err(PolicyError::new("policy", "the policy is not a JSON object")),
        }
    }

    /// A policy file's contents: a JSON object, the shape of a report's `policy` (every field
    /// optional), read strictly: a key twice, an unknown field or an invalid value is refused.
    /// A whole report (an object with a `schema`, `deploy-gate/report/v1`) is read as its `policy` object is
    /// ([`PolicyInput::from_report`]): evaluating under it reproduces the policy that made it.
    pub fn from_file(bytes: &[u8]) -> Result<PolicyInput, PolicyFileError> {
        match strict::from_slice(bytes)? {
            // `schema` is no policy field: the file is a report.
            Value::Object(map) if map.contains_key("schema") => {
                let schema = map["schema"].as_str().unwrap_or_default();
                if !schema.starts_with(REPORT_SCHEMA_PREFIX) {
                    return Err(PolicyError::new(
                        "schema",
                        format!(
                            "a file with a `schema` is read as a report, and `{schema}` is not a deploy-gate report's"
                        ),
                    )
                    .into());
                }
                Ok(PolicyInput::from_report(map.get("policy").unwrap_or(&Value::Null))?)
            }
            Value::Object(map) => Ok(PolicyInput::from_map(&map)?),
            _ => Err(PolicyFileError::NotObject),
        }
    }

    /// A report's `policy` object: every field its time listed is required, and it resolves as
    /// it did when the report was made (`of_report`; see [`GatePolicy::from_report`]). A report
    /// of this revision lists both `cluster` and `repeats`, one of an earlier one neither.
    pub fn from_report(policy: &Value) -> Result<PolicyInput, PolicyError> {
        let map = policy
            .as_object()
            .ok_or_else(|| PolicyError::new("policy", "the signed report has no policy object"))?;
        for k in &FIELDS[..7] {
            if !map.contains_key(*k) {
                return Err(PolicyError::new(k, format!("the signed report's policy has no {k}")));
            }
        }
        match (map.contains_key("cluster"), map.contains_key("repeats")) {
            (true, false) => {
                return Err(PolicyError::new(
                    "repeats",
                    "the signed report's policy has cluster but no repeats",
                ))
            }
            (false, true) => {
                return Err(PolicyError::new(
                    "cluster",
                    "the signed report's policy has repeats but no cluster",
                ))
            }
            _ => {}
        }
        Ok(PolicyInput {
            of_report: true,
            ..PolicyInput::from_map(map)?
        })
    }

    /// A policy from a JSON object's fields (any of the accepted spellings).
    pub fn from_map(map: &Map<String, Value>) -> Result<PolicyInput, PolicyError> {
        let mut p = PolicyInput::default();
        let mut seen: Vec<(&'static str, &str)> = Vec::new();
        for (key, v) in map {
            let Some(field) = canonical_field(key) else {
                return Err(PolicyError::new(
                    key,
                    format!(
                        "unknown field `{key}` (the fields are min_samples, max_samples, seed, pass_verdicts, \
                         task_tol or task_regression_tol, traj_tol or trajectory_regression_tol, \
                         on_insufficient, mode, confidence, cluster, repeats, sequential, budget, prices, guardrails, \
                         template_regression, max_missing, review)"
                    ),
                ));
            };
            if let Some((_, first)) = seen.iter().find(|(f, _)| *f == field) {
                return Err(PolicyError::new(
                    key,
                    format!("`{first}` and `{key}` are the same field; give one"),
                ));
            }
            seen.push((field, key));
            set_field(&mut p, field, key, v)?;
        }
        Ok(p)
    }

    /// Layers `self` over `lower`: a field `self` gives wins, else `lower`'s.
    pub fn or(self, lower: PolicyInput) -> PolicyInput {
        PolicyInput {
            min_samples: self.min_samples.or(lower.min_samples),
            max_samples: self.max_samples.or(lower.max_samples),
            seed: self.seed.or(lower.seed),
            task_tol: self.task_tol.or(lower.task_tol),
            traj_tol: self.traj_tol.or(lower.traj_tol),
            pass_verdicts: self.pass_verdicts.or(lower.pass_verdicts),
            on_insufficient: self.on_insufficient.or(lower.on_insufficient),
            mode: self.mode.or(lower.mode),
            confidence: self.confidence.or(lower.confidence),
            cluster: self.cluster.or(lower.cluster),
            repeats: self.repeats.or(lower.repeats),
            sequential: self.sequential.or(lower.sequential),
            budget: self.budget.or(lower.budget),
            prices: self.prices.or(lower.prices),
            guardrails: self.guardrails.or(lower.guardrails),
            template_regression: self.template_regression.or(lower.template_regression),
            max_missing: self.max_missing.or(lower.max_missing),
            review: self.review.or(lower.review),
            of_report: self.of_report || lower.of_report,
        }
    }

    /// Whether the input names `cluster` or `repeats`.
    pub fn names_case_model(&self) -> bool {
        self.cluster.is_some() || self.repeats.is_some()
    }

    /// The full policy, defaults filled in; `Err` names the first invalid field. A report's
    /// policy without `cluster` and `repeats` (`of_report`) resolves as it did before they
    /// existed (`case_model: None`); every other input gets the defaults for absent fields.
    pub fn into_policy(self) -> Result<GatePolicy, PolicyError> {
        let d = GatePolicy::default();
        let before = self.of_report && !self.names_case_model();
        let finite = |name: &str, x: Option<f64>, default: f64| match x {
            Some(v) if !v.is_finite() => Err(PolicyError::new(name, format!("{name} must be a finite number"))),
            Some(v) => Ok(v),
            None => Ok(default),
        };
        let pass_verdicts = match self.pass_verdicts {
            Some(list) => PassSet::new(&check_pass_verdicts(list)?),
            None => d.pass_verdicts,
        };
        let mode = self.mode.unwrap_or(d.mode);
        let sequential = match (self.sequential.unwrap_or(false), self.budget) {
            (true, _) if mode != Mode::NonInferiority => {
                return Err(PolicyError::new(
                    "sequential",
                    format!(
                        "sequential: true needs mode `non_inferiority` (the sequential rule shows \
                         non-inferiority or a regression), not `{}`",
                        serde_json::to_value(mode)
                            .expect("a mode serialises")
                            .as_str()
                            .unwrap_or_default()
                    ),
                ))
            }
            (true, budget) => Some(SequentialPolicy { budget }),
            (false, Some(_)) => {
                return Err(PolicyError::new(
                    "budget",
                    "budget is the sequential rule's: give it with sequential: true",
                ))
            }
            (false, None) => None,
        };
        let guardrails = Guardrails {
            list: self.guardrails.unwrap_or_default(),
            prices: self.prices,
            template_regression: self.template_regression,
        };
        guardrails.check()?;
        Ok(GatePolicy {
            test_set: TestSetPolicy {
                min_samples: self.min_samples.unwrap_or(d.test_set.min_samples),
                max_samples: self.max_samples.unwrap_or(d.test_set.max_samples),
                seed: self.seed.unwrap_or(d.test_set.seed),
            },
            pass_verdicts,
            task_regression_tol: finite("task_tol", self.task_tol, d.task_regression_tol)?,
            trajectory_regression_tol: finite("traj_tol", self.traj_tol, d.trajectory_regression_tol)?,
            on_insufficient: self.on_insufficient.unwrap_or(d.on_insufficient),
            mode,
            confidence: check_confidence(self.confidence.unwrap_or(d.confidence))?,
            case_model: if before {
                None
            } else {
                Some(CaseModel {
                    cluster: self.cluster.unwrap_or(DEFAULT_CLUSTER),
                    repeats: self.repeats.unwrap_or(DEFAULT_REPEATS),
                })
            },
            sequential,
            guardrails,
            max_missing: self.max_missing,
            review: self.review,
        })
    }

    /// The policy as it resolved before `cluster` and `repeats` existed, when it names neither:
    /// what a policy file meant to a decision signed then ([`resolve_pinned`]).
    pub fn into_policy_as_before(self) -> Result<GatePolicy, PolicyError> {
        PolicyInput {
            of_report: true,
            ..self
        }
        .into_policy()
    }
}

/// The policy a deploy step's policy file (`input`, already layered over what it is layered
/// over) means for a signed decision that pins the digest `pinned`: resolved as a new
/// evaluation's; or, when that is not the pinned one and the file names neither `cluster` nor
/// `repeats`, as it resolved before they existed — which only a decision signed then can pin (a
/// policy of this revision is written with both fields). `Ok(Err(policy))`: neither matches;
/// the policy is the first resolution, for the message.
pub fn resolve_pinned(input: PolicyInput, pinned: &str) -> Result<Result<GatePolicy, GatePolicy>, PolicyError> {
    let current = input.clone().into_policy()?;
    if current.digest()? == pinned {
        return Ok(Ok(current));
    }
    if !input.names_case_model() {
        let before = input.into_policy_as_before()?;
        if before.digest()? == pinned {
            return Ok(Ok(before));
        }
    }
    Ok(Err(current))
}

/// `serde_json::from_str::<PolicyInput>` reads through [`PolicyInput::from_value`].
impl<'de> Deserialize<'de> for PolicyInput {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let value = Value::deserialize(d)?;
        PolicyInput::from_value(&value).map_err(serde::de::Error::custom)
    }
}

/// What a policy change asks the caller to redo.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PolicyChange {
    /// Nothing: the report can be made again from what is loaded.
    Ready,
    /// The test set: its size or seed changed (select and read pass 2 again).
    Rebuild,
    /// The audit log: the pass verdicts changed, so pass 1 counted other completions.
    Rescan,
}

impl PolicyChange {
    /// The name the JS API gives it: `ready`, `rebuild` or `rescan`.
    pub fn as_str(self) -> &'static str {
        match self {
            PolicyChange::Ready => "ready",
            PolicyChange::Rebuild => "rebuild",
            PolicyChange::Rescan => "rescan",
        }
    }
}

/// What going from policy `old` to `new` invalidates: the pass verdicts are read by pass 1
/// (rescan); the test-set part by the selection (rebuild); the rest only by the report.
pub fn policy_change(old: &GatePolicy, new: &GatePolicy) -> PolicyChange {
    if new.pass_verdicts != old.pass_verdicts {
        PolicyChange::Rescan
    } else if new.test_set != old.test_set {
        PolicyChange::Rebuild
    } else {
        PolicyChange::Ready
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn review_is_read_from_every_source_and_written_only_when_given() {
        let given = parse(r#"{"review": {"require": "regressed"}}"#).unwrap();
        assert_eq!(
            given.review,
            Some(ReviewPolicy {
                require: ReviewRequire::Regressed
            })
        );
        let canonical = given.canonical_json().unwrap();
        assert!(
            canonical.contains(r#","review":{"require":"regressed"},"#),
            "{canonical}"
        );
        assert!(serde_json::to_string(&given)
            .unwrap()
            .ends_with(r#","review":{"require":"regressed"}}"#));
        // Absent: not written, and the digest is the one it had before the field existed.
        let d = GatePolicy::default();
        assert_eq!(d.review, None);
        assert!(!d.canonical_json().unwrap().contains("review"));
        assert_ne!(given.digest().unwrap(), d.digest().unwrap());
        // Read back from a report's policy, and layered.
        let back = GatePolicy::from_report(&serde_json::to_value(&given).unwrap()).unwrap();
        assert_eq!(back.review, given.review);
        assert_eq!(
            ReviewPolicy::of_report_policy(&serde_json::to_value(&given).unwrap()),
            Ok(given.review)
        );
        assert_eq!(
            ReviewPolicy::of_report_policy(&serde_json::to_value(&d).unwrap()),
            Ok(None)
        );
        let layered =
            PolicyInput::default().or(PolicyInput::from_json(r#"{"review": {"require": "regressed"}}"#).unwrap());
        assert_eq!(layered.into_policy().unwrap().review, given.review);
        for bad in [
            r#"{"review": true}"#,
            r#"{"review": {"require": "all"}}"#,
            r#"{"review": {"require": "regressed", "by": 2}}"#,
            r#"{"review": {}}"#,
        ] {
            assert_eq!(field_of(bad), "review", "{bad}");
        }
    }

    #[test]
    fn max_missing_is_a_fraction_or_a_percentage_written_only_when_given() {
        assert_eq!(parse_max_missing("5%"), Ok(0.05));
        assert_eq!(parse_max_missing(" 12.5 % "), Ok(0.125));
        assert_eq!(parse_max_missing("0.1"), Ok(0.1));
        assert_eq!(parse_max_missing("0"), Ok(0.0));
        assert_eq!(parse_max_missing("100%"), Ok(1.0));
        for bad in ["120%", "-1%", "1.5", "lots", "", "NaN", "inf"] {
            let e = parse_max_missing(bad).unwrap_err();
            assert_eq!(e.field, "max_missing", "{bad}");
            assert!(e.message.contains("between 0 and 1"), "{bad}: {}", e.message);
        }
        assert_eq!(parse(r#"{"max_missing": 0.02}"#).unwrap().max_missing, Some(0.02));
        assert_eq!(parse(r#"{"max_missing": "2%"}"#).unwrap().max_missing, Some(0.02));
        assert_eq!(field_of(r#"{"max_missing": 2}"#), "max_missing");
        assert_eq!(field_of(r#"{"max_missing": true}"#), "max_missing");
        // Absent: the default applies, and the policy keeps its canonical form and digest.
        let d = GatePolicy::default();
        assert_eq!((d.max_missing, d.max_missing()), (None, DEFAULT_MAX_MISSING));
        assert!(!d.canonical_json().unwrap().contains("max_missing"));
        let given = parse(r#"{"max_missing": 0.05}"#).unwrap();
        assert_ne!(given.digest().unwrap(), d.digest().unwrap());
        assert!(given.canonical_json().unwrap().contains(r#""max_missing":0.05,"#));
        // A report's policy gives it back; layering keeps the upper one.
        let back = GatePolicy::from_report(&given.to_value()).unwrap();
        assert_eq!(back, given);
        let upper = PolicyInput {
            max_missing: Some(0.2),
            ..PolicyInput::default()
        };
        assert_eq!(
            upper
                .or(PolicyInput::from_json(r#"{"max_missing": 0.1}"#).unwrap())
                .max_missing,
            Some(0.2)
        );
    }

    #[test]
    fn pass_set_matches_case_insensitively() {
        let set = PassSet::default();
        assert!(set.contains("pass") && set.contains("Approve") && set.contains("COMPLETE"));
        assert!(!set.contains("passed") && !set.contains(""));
        let set = PassSet::new(["straße"]);
        assert!(set.contains("STRASSE") && set.contains("Straße"));
    }

    fn parse(json: &str) -> Result<GatePolicy, String> {
        serde_json::from_str::<PolicyInput>(json)
            .map_err(|e| e.to_string())?
            .into_policy()
            .map_err(|e| e.to_string())
    }

    fn field_of(json: &str) -> String {
        match PolicyInput::from_json(json).and_then(PolicyInput::into_policy) {
            Err(e) => e.field,
            Ok(p) => panic!("{json} parsed to {p:?}"),
        }
    }

    #[test]
    fn the_defaults_are_the_named_constants() {
        let d = GatePolicy::default();
        assert_eq!(d.test_set.min_samples, DEFAULT_MIN_SAMPLES);
        assert_eq!(d.test_set.max_samples, DEFAULT_MAX_SAMPLES);
        assert_eq!(d.test_set.seed, DEFAULT_SEED);
        assert_eq!(d.pass_verdicts.verdicts(), DEFAULT_PASS_VERDICTS);
        assert_eq!(d.task_regression_tol, DEFAULT_TASK_TOL);
        assert_eq!(d.trajectory_regression_tol, DEFAULT_TRAJ_TOL);
        assert_eq!(d.on_insufficient, DEFAULT_ON_INSUFFICIENT);
        assert_eq!(d.mode, DEFAULT_MODE);
        assert_eq!(d.confidence, DEFAULT_CONFIDENCE);
        assert_eq!(d.cluster(), DEFAULT_CLUSTER);
        assert_eq!(d.repeats(), DEFAULT_REPEATS);
        // As the report lists them.
        assert_eq!(
            serde_json::to_string(&d).unwrap(),
            r#"{"min_samples":20,"max_samples":200,"seed":0,"pass_verdicts":["PASS","APPROVE","COMPLETE"],"task_regression_tol":0.0,"trajectory_regression_tol":0.05,"on_insufficient":"block","mode":"point","confidence":0.95,"cluster":"template","repeats":"last"}"#
        );
        assert_eq!(PolicyInput::default().into_policy().unwrap(), d);
    }

    #[test]
    fn defaults_and_spellings() {
        assert_eq!(parse("{}").unwrap(), GatePolicy::default());
        let p = parse(
            r#"{"max_samples": null, "pass_verdicts": "pass, ok", "task_tol": 0.07, "on_insufficient": "approve"}"#,
        )
        .unwrap();
        assert_eq!(p.test_set.max_samples, None);
        assert_eq!(p.pass_verdicts.verdicts(), ["PASS", "OK"]);
        assert_eq!(
            (p.task_regression_tol, p.on_insufficient),
            (0.07, OnInsufficient::Approve)
        );
        assert_eq!(parse(r#"{"max_samples": "none"}"#).unwrap().test_set.max_samples, None);
        assert_eq!(parse(r#"{"max_samples": "all"}"#).unwrap().test_set.max_samples, None);
        assert_eq!(parse(r#"{"max_samples": ""}"#).unwrap().test_set.max_samples, None);
        assert_eq!(
            parse(r#"{"max_samples": "50"}"#).unwrap().test_set.max_samples,
            Some(50)
        );
    }

    #[test]
    fn one_set_of_spellings_for_every_source() {
        // The mode: both spellings from JSON (serde), from a flag (FromStr) and from a file.
        for spelt in ["non_inferiority", "non-inferiority"] {
            assert_eq!(spelt.parse::<Mode>().unwrap(), Mode::NonInferiority);
            assert_eq!(
                serde_json::from_value::<Mode>(Value::from(spelt)).unwrap(),
                Mode::NonInferiority
            );
            let json = format!(r#"{{"mode": "{spelt}"}}"#);
            assert_eq!(parse(&json).unwrap().mode, Mode::NonInferiority);
            let file = PolicyInput::from_file(json.as_bytes()).unwrap();
            assert_eq!(file.mode, Some(Mode::NonInferiority));
        }
        // Written one way only.
        assert_eq!(serde_json::to_value(Mode::NonInferiority).unwrap(), "non_inferiority");
        // The tolerances under the flags' names and under the report's names.
        let short = parse(r#"{"task_tol": 0.1, "traj_tol": 0.2}"#).unwrap();
        let long = parse(r#"{"task_regression_tol": 0.1, "trajectory_regression_tol": 0.2}"#).unwrap();
        assert_eq!(short, long);
        assert_eq!((short.task_regression_tol, short.trajectory_regression_tol), (0.1, 0.2));
        // Mode and confidence are read from the page's JSON too.
        let p = parse(r#"{"mode": "non_inferiority", "confidence": 0.9}"#).unwrap();
        assert_eq!((p.mode, p.confidence), (Mode::NonInferiority, 0.9));
        // Flags' text goes through the same rules.
        assert_eq!(parse_max_samples("none").unwrap(), None);
        assert_eq!(parse_max_samples("all").unwrap(), None);
        assert_eq!(parse_max_samples(" NONE ").unwrap(), None);
        assert_eq!(parse_max_samples("7").unwrap(), Some(7));
        assert_eq!(parse_task_tol("0.25").unwrap(), 0.25);
        assert_eq!(parse_confidence("0.99").unwrap(), 0.99);
        assert_eq!(split_pass_verdicts("a, b,,c"), ["a", "b", "c"]);
        assert_eq!("approve".parse::<OnInsufficient>().unwrap(), OnInsufficient::Approve);
    }

    #[test]
    fn invalid_fields_are_named() {
        assert!(parse(r#"{"max_samples": "lots"}"#).unwrap_err().contains("max_samples"));
        assert!(parse(r#"{"pass_verdicts": []}"#).unwrap_err().contains("pass_verdicts"));
        assert!(parse(r#"{"on_insufficient": "maybe"}"#).is_err());
        assert!(parse(r#"{"min_sample": 3}"#).unwrap_err().contains("min_sample"));
        let cases = [
            (r#"{"min_samples": -1}"#, "min_samples"),
            (r#"{"min_samples": 2.5}"#, "min_samples"),
            (r#"{"min_samples": "twenty"}"#, "min_samples"),
            (r#"{"min_samples": ""}"#, "min_samples"),
            (r#"{"min_samples": true}"#, "min_samples"),
            (r#"{"seed": "x"}"#, "seed"),
            (r#"{"max_samples": "lots"}"#, "max_samples"),
            (r#"{"max_samples": -3}"#, "max_samples"),
            (r#"{"task_tol": "x"}"#, "task_tol"),
            (r#"{"task_tol": "NaN"}"#, "task_tol"),
            (r#"{"trajectory_regression_tol": null}"#, "trajectory_regression_tol"),
            (r#"{"pass_verdicts": []}"#, "pass_verdicts"),
            (r#"{"pass_verdicts": " , "}"#, "pass_verdicts"),
            (r#"{"pass_verdicts": [1]}"#, "pass_verdicts"),
            (r#"{"on_insufficient": "maybe"}"#, "on_insufficient"),
            (r#"{"mode": "strict"}"#, "mode"),
            (r#"{"confidence": 1}"#, "confidence"),
            (r#"{"confidence": 0}"#, "confidence"),
            (r#"{"confidence": "high"}"#, "confidence"),
            (r#"{"min_sample": 3}"#, "min_sample"),
            (
                r#"{"task_tol": 0.1, "task_regression_tol": 0.1}"#,
                "task_regression_tol",
            ),
            ("[]", "policy"),
            (r#"{"seed": 1, "seed": 2}"#, "policy"),
        ];
        for (json, field) in cases {
            assert_eq!(field_of(json), field, "{json}");
        }
        // The messages the CLI and the page show.
        let message = |json: &str| PolicyInput::from_json(json).unwrap_err().message;
        assert_eq!(
            message(r#"{"max_samples": "lots"}"#),
            "max_samples must be a number or `none`, not `lots`"
        );
        assert_eq!(
            message(r#"{"pass_verdicts": []}"#),
            "pass_verdicts must name at least one verdict"
        );
        assert_eq!(
            message(r#"{"confidence": 1.5}"#),
            "confidence must be between 0 and 1 (e.g. 0.95), not 1.5"
        );
        assert_eq!(
            message(r#"{"mode": "x"}"#),
            "mode must be `point` or `non_inferiority`, not `x`"
        );
        assert_eq!(
            message(r#"{"on_insufficient": "x"}"#),
            "on_insufficient must be `block` or `approve`, not `x`"
        );
        // A flag's text names its field too.
        assert_eq!(parse_min_samples("lots").unwrap_err().field, "min_samples");
        assert_eq!(parse_seed("-1").unwrap_err().field, "seed");
        assert_eq!(parse_max_samples("x").unwrap_err().field, "max_samples");
        assert_eq!(parse_task_tol("inf").unwrap_err().field, "task_tol");
        assert_eq!(parse_traj_tol("NaN").unwrap_err().field, "traj_tol");
        assert_eq!(parse_confidence("1").unwrap_err().field, "confidence");
        assert_eq!(parse_confidence("x").unwrap_err().field, "confidence");
        // A policy built by hand is validated too.
        let bad = PolicyInput {
            task_tol: Some(f64::NAN),
            ..PolicyInput::default()
        };
        assert_eq!(bad.into_policy().unwrap_err().field, "task_tol");
        let bad = PolicyInput {
            pass_verdicts: Some(vec![" ".into()]),
            ..PolicyInput::default()
        };
        assert_eq!(bad.into_policy().unwrap_err().field, "pass_verdicts");
    }

    #[test]
    fn a_string_is_read_as_the_flags_text() {
        // The page's form sends every field as its text.
        let form = r#"{"min_samples": "20", "max_samples": "200", "seed": "0", "task_tol": "0.0",
            "traj_tol": "0.05", "pass_verdicts": "PASS,APPROVE,COMPLETE", "confidence": "0.95",
            "on_insufficient": "block", "mode": "point"}"#;
        assert_eq!(parse(form).unwrap(), GatePolicy::default());
        let p = parse(r#"{"min_samples": " 3 ", "seed": "7", "max_samples": "none", "confidence": "0.9"}"#).unwrap();
        assert_eq!(
            (
                p.test_set.min_samples,
                p.test_set.seed,
                p.test_set.max_samples,
                p.confidence
            ),
            (3, 7, None, 0.9)
        );
        // Each text means what the flag's text means.
        assert_eq!(
            parse(r#"{"task_tol": "0.25"}"#).unwrap().task_regression_tol,
            parse_task_tol("0.25").unwrap()
        );
        assert_eq!(
            PolicyInput::from_json(r#"{"min_samples": "x"}"#).unwrap_err().message,
            parse_min_samples("x").unwrap_err().message
        );
        // An error names the field as it was spelt.
        assert_eq!(
            field_of(r#"{"trajectory_regression_tol": "x"}"#),
            "trajectory_regression_tol"
        );
        assert_eq!(field_of(r#"{"traj_tol": "x"}"#), "traj_tol");
    }

    #[test]
    fn a_policy_file_is_read_strictly() {
        assert_eq!(
            PolicyInput::from_file(br#"{"min_samples": 5}"#).unwrap(),
            PolicyInput {
                min_samples: Some(5),
                ..PolicyInput::default()
            }
        );
        let e = PolicyInput::from_file(br#"{"min_samples": 5, "min_samples": 6}"#).unwrap_err();
        assert!(
            matches!(e, PolicyFileError::Json(strict::StrictJsonError::DuplicateKey { .. })),
            "{e}"
        );
        assert!(e.to_string().contains("min_samples"), "{e}");
        let e = PolicyInput::from_file(b"{\"seed\": ").unwrap_err();
        assert!(
            matches!(e, PolicyFileError::Json(strict::StrictJsonError::Syntax(_))),
            "{e}"
        );
        assert_eq!(PolicyInput::from_file(b"[1]").unwrap_err(), PolicyFileError::NotObject);
        let e = PolicyInput::from_file(br#"{"colour": "red"}"#).unwrap_err();
        assert_eq!(e.field(), Some("colour"));
        let e = PolicyInput::from_file(br#"{"seed": -4}"#).unwrap_err();
        assert_eq!(e.field(), Some("seed"));
    }

    #[test]
    fn precedence_is_defaults_then_file_then_flags() {
        let file = PolicyInput::from_file(br#"{"min_samples": 5, "seed": 9, "mode": "non_inferiority"}"#).unwrap();
        let flags = PolicyInput {
            seed: Some(1),
            task_tol: Some(0.2),
            ..PolicyInput::default()
        };
        let p = flags.or(file).into_policy().unwrap();
        assert_eq!(p.test_set.min_samples, 5, "from the file");
        assert_eq!(p.test_set.seed, 1, "the flag wins over the file");
        assert_eq!(p.task_regression_tol, 0.2, "from the flag");
        assert_eq!(p.mode, Mode::NonInferiority, "from the file");
        assert_eq!(p.test_set.max_samples, DEFAULT_MAX_SAMPLES, "the default");
        assert_eq!(p.confidence, DEFAULT_CONFIDENCE, "the default");
        // `max_samples: none` in a file is a value, not an absence: the default does not come back.
        let file = PolicyInput::from_file(br#"{"max_samples": null}"#).unwrap();
        assert_eq!(
            PolicyInput::default()
                .or(file)
                .into_policy()
                .unwrap()
                .test_set
                .max_samples,
            None
        );
    }

    #[test]
    fn a_reports_policy_parses_back() {
        let p = GatePolicy {
            test_set: TestSetPolicy {
                min_samples: 3,
                max_samples: None,
                seed: 42,
            },
            pass_verdicts: PassSet::new(["ok", "PASS"]),
            task_regression_tol: 0.07,
            trajectory_regression_tol: -0.5,
            on_insufficient: OnInsufficient::Approve,
            mode: Mode::NonInferiority,
            confidence: 0.9,
            case_model: Some(CaseModel {
                cluster: Cluster::None,
                repeats: Repeats::Mean,
            }),
            sequential: None,
            guardrails: Guardrails::default(),
            max_missing: Some(0.1),
            review: None,
        };
        assert_eq!(GatePolicy::from_report(&p.to_value()).unwrap(), p);
        // Reports made before `mode` and `confidence` existed: the defaults.
        let mut old = p.to_value();
        old.as_object_mut().unwrap().remove("mode");
        old.as_object_mut().unwrap().remove("confidence");
        let back = GatePolicy::from_report(&old).unwrap();
        assert_eq!((back.mode, back.confidence), (Mode::Point, 0.95));
        // Reports made before `cluster` and `repeats` existed: the policy as it was, which is
        // written back without them.
        old.as_object_mut().unwrap().remove("cluster");
        old.as_object_mut().unwrap().remove("repeats");
        old.as_object_mut().unwrap().remove("max_missing");
        let back = GatePolicy::from_report(&old).unwrap();
        assert_eq!(back.case_model, None);
        assert_eq!((back.cluster(), back.repeats()), (Cluster::None, Repeats::Last));
        assert_eq!(back.to_value().as_object().unwrap().len(), 9);
        assert_eq!(GatePolicy::from_report(&back.to_value()).unwrap(), back);
        // A report of this revision lists both.
        let mut half = p.to_value();
        half.as_object_mut().unwrap().remove("repeats");
        let e = GatePolicy::from_report(&half).unwrap_err();
        assert_eq!(
            (e.field.as_str(), e.message.as_str()),
            ("repeats", "the signed report's policy has cluster but no repeats")
        );
        // The fields every report lists are required.
        let mut cut = p.to_value();
        cut.as_object_mut().unwrap().remove("seed");
        let e = GatePolicy::from_report(&cut).unwrap_err();
        assert_eq!(
            (e.field.as_str(), e.message.as_str()),
            ("seed", "the signed report's policy has no seed")
        );
        assert_eq!(GatePolicy::from_report(&Value::Null).unwrap_err().field, "policy");
    }

    #[test]
    fn the_digest_is_sha256_of_the_canonical_policy() {
        let d = GatePolicy::default();
        let canonical = d.canonical_json().unwrap();
        assert_eq!(
            canonical,
            r#"{"cluster":"template","confidence":0.95,"max_samples":200,"min_samples":20,"mode":"point","on_insufficient":"block","pass_verdicts":["PASS","APPROVE","COMPLETE"],"repeats":"last","seed":0,"task_regression_tol":0,"trajectory_regression_tol":0.05}"#
        );
        assert_eq!(d.digest().unwrap(), hex::encode(Sha256::digest(canonical.as_bytes())));
    }

    /// The digest every signed decision of the build before `cluster` and `repeats` pinned for
    /// the default policy (`deploy-gate policy` of commit a46aed2 printed it).
    const DEFAULT_DIGEST_BEFORE: &str = "4c8e8e165c7c261f0606f1517b079c9ba4432bf494397485a131786e4a5cb8d9";

    #[test]
    fn a_policy_from_before_cluster_and_repeats_keeps_its_canonical_form_and_digest() {
        let before = PolicyInput::default().into_policy_as_before().unwrap();
        assert_eq!(before.case_model, None);
        assert_eq!(
            before.canonical_json().unwrap(),
            r#"{"confidence":0.95,"max_samples":200,"min_samples":20,"mode":"point","on_insufficient":"block","pass_verdicts":["PASS","APPROVE","COMPLETE"],"seed":0,"task_regression_tol":0,"trajectory_regression_tol":0.05}"#
        );
        assert_eq!(before.digest().unwrap(), DEFAULT_DIGEST_BEFORE);
        // Naming either field makes it a policy of this revision (the other one's default).
        let named = PolicyInput {
            repeats: Some(Repeats::Last),
            ..PolicyInput::default()
        };
        assert_eq!(named.into_policy_as_before().unwrap(), GatePolicy::default());
    }

    #[test]
    fn a_pinned_digest_resolves_a_file_as_it_resolved_when_the_decision_was_signed() {
        let file = || PolicyInput::from_file(br#"{"mode": "non_inferiority", "task_tol": 0.05}"#).unwrap();
        let now = file().into_policy().unwrap();
        let before = file().into_policy_as_before().unwrap();
        assert_ne!(now.digest().unwrap(), before.digest().unwrap());
        // A decision signed today pins the policy with its defaults; one signed before, without.
        assert_eq!(resolve_pinned(file(), &now.digest().unwrap()).unwrap(), Ok(now.clone()));
        assert_eq!(
            resolve_pinned(file(), &before.digest().unwrap()).unwrap(),
            Ok(before.clone())
        );
        assert_eq!(resolve_pinned(file(), "00").unwrap(), Err(now.clone()));
        // A file that names a field of this revision never resolves as before.
        let explicit = PolicyInput {
            cluster: Some(Cluster::None),
            ..file()
        };
        assert!(resolve_pinned(explicit, &before.digest().unwrap()).unwrap().is_err());
    }

    #[test]
    fn a_whole_report_as_a_policy_file_is_its_policy() {
        let p = GatePolicy {
            confidence: 0.9,
            ..GatePolicy::default()
        };
        let report = serde_json::json!({"schema": "deploy-gate/report/v1", "policy": p.to_value(), "decision": {}});
        let read = PolicyInput::from_file(report.to_string().as_bytes()).unwrap();
        assert_eq!(read.clone().into_policy().unwrap(), p);
        // A report from before `cluster` and `repeats`: its policy as it was.
        let mut old = p.to_value();
        old.as_object_mut().unwrap().remove("cluster");
        old.as_object_mut().unwrap().remove("repeats");
        let report = serde_json::json!({"schema": "deploy-gate/report/v1", "policy": old});
        let read = PolicyInput::from_file(report.to_string().as_bytes()).unwrap();
        assert_eq!(read.clone().into_policy().unwrap().case_model, None);
        // Flags over it still win, and naming a new field makes it a policy of this revision.
        let over = PolicyInput {
            confidence: Some(0.8),
            ..PolicyInput::default()
        }
        .or(read.clone());
        assert_eq!(over.into_policy().unwrap().confidence, 0.8);
        let over = PolicyInput {
            repeats: Some(Repeats::Mean),
            ..PolicyInput::default()
        }
        .or(read);
        assert_eq!(
            over.into_policy().unwrap().case_model,
            Some(CaseModel {
                cluster: DEFAULT_CLUSTER,
                repeats: Repeats::Mean
            })
        );
        // A report without a policy is refused naming it.
        let e = PolicyInput::from_file(br#"{"schema": "deploy-gate/report/v1"}"#).unwrap_err();
        assert_eq!(e.field(), Some("policy"));
    }

    #[test]
    fn sequential_and_budget_are_written_only_when_given() {
        // Absent: the canonical form and the digest of before the fields existed.
        let ni = parse(r#"{"mode": "non_inferiority"}"#).unwrap();
        assert_eq!(ni.sequential, None);
        assert_eq!(
            parse(r#"{"mode": "non_inferiority", "sequential": false}"#).unwrap(),
            ni
        );
        assert!(!ni.canonical_json().unwrap().contains("sequential"));
        assert_eq!(
            GatePolicy::default().digest().unwrap(),
            hex::encode(Sha256::digest(
                r#"{"cluster":"template","confidence":0.95,"max_samples":200,"min_samples":20,"mode":"point","on_insufficient":"block","pass_verdicts":["PASS","APPROVE","COMPLETE"],"repeats":"last","seed":0,"task_regression_tol":0,"trajectory_regression_tol":0.05}"#
            ))
        );
        // Given: written after `repeats`, `budget` only when given.
        let seq = parse(r#"{"mode": "non_inferiority", "sequential": true}"#).unwrap();
        assert_eq!(seq.sequential, Some(SequentialPolicy { budget: None }));
        assert!(serde_json::to_string(&seq)
            .unwrap()
            .ends_with(r#""repeats":"last","sequential":true}"#));
        let b = parse(r#"{"mode": "non_inferiority", "sequential": "true", "budget": "200"}"#).unwrap();
        assert_eq!(b.sequential, Some(SequentialPolicy { budget: Some(200) }));
        assert!(serde_json::to_string(&b)
            .unwrap()
            .ends_with(r#""sequential":true,"budget":200}"#));
        for p in [&seq, &b] {
            assert_eq!(&GatePolicy::from_report(&p.to_value()).unwrap(), p);
            assert_ne!(p.digest().unwrap(), ni.digest().unwrap());
        }
        // Flags' text.
        assert_eq!(parse_budget("2000").unwrap(), 2000);
        assert!(parse_sequential("true").unwrap());
        // Refused, naming the field.
        assert_eq!(field_of(r#"{"sequential": true}"#), "sequential");
        assert_eq!(
            PolicyInput::from_json(r#"{"sequential": true, "mode": "point"}"#)
                .and_then(PolicyInput::into_policy)
                .unwrap_err()
                .message,
            "sequential: true needs mode `non_inferiority` (the sequential rule shows non-inferiority or a \
             regression), not `point`"
        );
        assert_eq!(field_of(r#"{"mode": "non_inferiority", "budget": 20}"#), "budget");
        assert_eq!(
            field_of(r#"{"mode": "non_inferiority", "sequential": true, "budget": 0}"#),
            "budget"
        );
        assert_eq!(field_of(r#"{"sequential": "yes"}"#), "sequential");
        assert_eq!(field_of(r#"{"sequential": 1}"#), "sequential");
        assert_eq!(field_of(r#"{"budget": -3}"#), "budget");
        assert_eq!(field_of(r#"{"budget": 2.5}"#), "budget");
        assert_eq!(parse_budget("0").unwrap_err().field, "budget");
        assert_eq!(
            parse_budget("x").unwrap_err().message,
            "budget must be a whole number ≥ 1, not `x`"
        );
        assert_eq!(parse_sequential("1").unwrap_err().field, "sequential");
        // Only the report changes with them.
        assert_eq!(policy_change(&ni, &b), PolicyChange::Ready);
    }

    #[test]
    fn cluster_and_repeats_are_read_from_every_source() {
        let p = parse(r#"{"cluster": "none", "repeats": "mean"}"#).unwrap();
        assert_eq!((p.cluster(), p.repeats()), (Cluster::None, Repeats::Mean));
        assert_eq!("template".parse::<Cluster>().unwrap(), Cluster::Template);
        assert_eq!("mean".parse::<Repeats>().unwrap(), Repeats::Mean);
        assert_eq!(field_of(r#"{"cluster": "pipeline"}"#), "cluster");
        assert_eq!(field_of(r#"{"repeats": "first"}"#), "repeats");
        assert_eq!(
            PolicyInput::from_json(r#"{"cluster": "x"}"#).unwrap_err().message,
            "cluster must be `template` or `none`, not `x`"
        );
        assert_eq!(
            PolicyInput::from_json(r#"{"repeats": "x"}"#).unwrap_err().message,
            "repeats must be `last` or `mean`, not `x`"
        );
        // Only the report changes with them.
        let d = GatePolicy::default();
        assert_eq!(policy_change(&d, &p), PolicyChange::Ready);
    }
}

#[cfg(all(test, not(target_arch = "wasm32")))]
mod round_trip {
    use super::*;
    use proptest::prelude::*;

    fn policy() -> impl Strategy<Value = GatePolicy> {
        (
            (0usize..100_000, proptest::option::of(0usize..1_000_000), any::<u64>()),
            proptest::collection::vec("[A-Za-z_ßé]{1,8}", 1..4),
            (
                -1e3f64..1e3,
                prop_oneof![Just(0.05), -1.0f64..1.0, Just(0.0), Just(-0.0)],
            ),
            (any::<bool>(), any::<bool>(), 0.0001f64..0.9999),
            proptest::option::of((any::<bool>(), any::<bool>())),
            proptest::option::of(proptest::option::of(1usize..1_000_000)),
            guardrails(),
            proptest::option::of(prop_oneof![Just(0.0), Just(1.0), 0.0f64..1.0]),
            proptest::bool::ANY,
        )
            .prop_map(
                |(
                    (min, max, seed),
                    pass,
                    (task, traj),
                    (approve, ni, confidence),
                    model,
                    sequential,
                    guardrails,
                    max_missing,
                    review,
                )| {
                    GatePolicy {
                        test_set: TestSetPolicy {
                            min_samples: min,
                            max_samples: max,
                            seed,
                        },
                        pass_verdicts: PassSet::new(pass),
                        task_regression_tol: task,
                        trajectory_regression_tol: traj,
                        on_insufficient: if approve {
                            OnInsufficient::Approve
                        } else {
                            OnInsufficient::Block
                        },
                        mode: if ni { Mode::NonInferiority } else { Mode::Point },
                        confidence,
                        case_model: model.map(|(none, mean)| CaseModel {
                            cluster: if none { Cluster::None } else { Cluster::Template },
                            repeats: if mean { Repeats::Mean } else { Repeats::Last },
                        }),
                        // The sequential rule is a non-inferiority rule.
                        sequential: sequential.filter(|_| ni).map(|budget| SequentialPolicy { budget }),
                        guardrails,
                        max_missing,
                        review: review.then_some(ReviewPolicy {
                            require: ReviewRequire::Regressed,
                        }),
                    }
                },
            )
    }

    fn guardrails() -> impl Strategy<Value = Guardrails> {
        use super::{Action, Limit, Metric, Price, Prices, Statistic, TemplateRegression};
        let metric = prop_oneof![
            Just(Metric::LatencyMs),
            Just(Metric::PromptTokens),
            Just(Metric::CompletionTokens),
            Just(Metric::TotalTokens),
            Just(Metric::Cost),
            "[a-z_ß]{1,8}".prop_map(Metric::Named),
        ];
        let statistic = prop_oneof![
            Just(Statistic::Mean),
            prop::sample::select(vec![50u8, 90, 95, 99]).prop_map(Statistic::Percentile)
        ];
        let limit = prop_oneof![
            (-0.99f64..10.0).prop_map(Limit::Increase),
            (-1e6f64..1e6).prop_map(Limit::Difference)
        ];
        let action = prop_oneof![Just(Action::Block), Just(Action::Advise)];
        let rail = (
            metric,
            statistic,
            limit,
            action.clone(),
            proptest::option::of(2usize..5000),
        )
            .prop_map(|(metric, statistic, limit, action, min_cases)| Guardrail {
                metric,
                statistic,
                limit,
                action,
                min_cases,
            });
        let price = (0.0f64..100.0, 0.0f64..100.0).prop_map(|(p, c)| Price {
            prompt_per_million: p,
            completion_per_million: c,
        });
        let template =
            (0.0f64..1.0, 2usize..500, action).prop_map(|(max_drop, min_cases, action)| TemplateRegression {
                max_drop,
                min_cases,
                action,
            });
        (
            proptest::collection::vec(rail, 0..4),
            proptest::option::of((price.clone(), price)),
            proptest::option::of(template),
        )
            .prop_map(|(list, prices, template_regression)| {
                let needs = list.iter().any(|g| g.metric == Metric::Cost);
                let prices = prices.map(|(old, new)| Prices { old, new }).or_else(|| {
                    needs.then_some(Prices {
                        old: Price {
                            prompt_per_million: 1.0,
                            completion_per_million: 2.0,
                        },
                        new: Price {
                            prompt_per_million: 1.0,
                            completion_per_million: 2.0,
                        },
                    })
                });
                Guardrails {
                    list,
                    prices,
                    template_regression,
                }
            })
    }

    proptest! {
        /// A report's policy → the one parser → serialised again: the same bytes, the same digest.
        #[test]
        fn report_policy_parse_serialise_is_identity(p in policy()) {
            let text = serde_json::to_string(&p).unwrap();
            let value: Value = serde_json::from_str(&text).unwrap();
            let back = GatePolicy::from_report(&value).unwrap();
            prop_assert_eq!(serde_json::to_string(&back).unwrap(), text.clone());
            prop_assert_eq!(back.digest().unwrap(), p.digest().unwrap());
            // And as a policy file (the same shape, read strictly), for a policy of this revision;
            // a file naming neither new field is a new evaluation's, with their defaults.
            let file = PolicyInput::from_file(text.as_bytes()).unwrap().into_policy().unwrap();
            if p.case_model.is_some() {
                prop_assert_eq!(serde_json::to_string(&file).unwrap(), text);
            } else {
                prop_assert_eq!(file.case_model, Some(CaseModel::default()));
                prop_assert_eq!(GatePolicy { case_model: None, ..file }, back);
            }
        }
    }
}
