//! What a run tells its caller while it runs (the [`Progress`] callback), how the caller stops
//! it (the [`Cancel`] token), and what it reports: the plan once every model is ready to be
//! asked, and each model's summary at the end.

use crate::native::files::Notice;
use crate::sequential::SequentialReport;
use std::path::PathBuf;
use std::sync::atomic::{AtomicI32, Ordering};

/// A run's progress, told as it happens. Called from the thread that runs (and, for
/// [`Progress::line`], from the threads that copy the workers' stderr): it must be `Send +
/// Sync`. Every method but [`Progress::line`] has a default that does nothing.
pub trait Progress: Send + Sync {
    /// Before anything is asked: each model's counts (the output files are open and read).
    fn begin(&self, _lanes: &[LaneStart]) {}
    /// A line of text for a person: a note on a file, a worker's stderr line (`[worker 3] …`),
    /// a worker restarted, the sequential decision as it stands. Lines are whole, without
    /// their newline.
    fn line(&self, text: &str);
    /// Every model is ready to be asked (workers started, clients made): what the run will do.
    fn plan(&self, _plan: &Plan) {}
    /// One more case of model `lane` has its record (`errored`: the record is an error).
    fn case_done(&self, _lane: usize, _errored: bool) {}
    /// A request of model `lane` is tried again.
    fn retried(&self, _lane: usize) {}
    /// The run's loop turned (about every 200 ms at most): time to show a periodic line.
    fn tick(&self) {}
    /// Nothing more is asked: the workers have ended (before the summary).
    fn end(&self) {}
    /// A notice of the output's final rewrite (a folder that could not be synced).
    fn notice(&self, _notice: Notice) {}
    /// At the end of a completed run under a sequential policy, before the models' summaries.
    fn sequential_done(&self, _end: &SequentialEnd) {}
    /// At the end of a completed run, each model's summary, once its output is final.
    fn lane_done(&self, _lane: &LaneReport) {}
}

/// Stops a run at its next turn (every 200 ms at most); what was written is kept whole, and a
/// later run resumes it. `Sync`: set it from a signal handler (it only stores to an atomic),
/// another thread, or a Python thread watching for Ctrl-C.
#[derive(Debug, Default)]
pub struct Cancel(AtomicI32);

impl Cancel {
    /// A token not set.
    pub const fn new() -> Cancel {
        Cancel(AtomicI32::new(0))
    }

    /// Asks the run to stop, for `reason` (not 0; the CLI gives the signal's number).
    pub fn cancel(&self, reason: i32) {
        self.0.store(reason, Ordering::SeqCst);
    }

    /// Unsets the token, for a token reused by the next run (a static one, as a signal handler
    /// needs).
    pub fn clear(&self) {
        self.0.store(0, Ordering::SeqCst);
    }

    /// The reason given, once set.
    pub fn reason(&self) -> Option<i32> {
        match self.0.load(Ordering::SeqCst) {
            0 => None,
            r => Some(r),
        }
    }
}

/// One model's counts as the run begins.
#[derive(Debug, Clone)]
pub struct LaneStart {
    /// `old`, `new`; empty in a one-model run.
    pub name: String,
    /// The test set's cases.
    pub total: u64,
    /// Cases with a record already (a resumed run).
    pub done: u64,
    /// Of those, the errors.
    pub errored: u64,
}

/// What a run will do, once every model is ready.
#[derive(Debug, Clone)]
pub struct Plan {
    /// The test set's cases.
    pub cases: usize,
    /// Each model.
    pub lanes: Vec<LanePlan>,
    /// Under a sequential policy: its budget and note.
    pub sequential: Option<SequentialPlan>,
    /// The seed of the cases' order (endpoints; a worker program gets them in file order).
    pub order_seed: u64,
    /// The response cache's folder (`None`: no cache).
    pub cache: Option<PathBuf>,
}

/// How one model is asked.
#[derive(Debug, Clone)]
pub enum Asked {
    /// Worker programs (`-- PROGRAM`): how many are started.
    Program {
        /// Workers started (0 when no case is pending).
        jobs: usize,
    },
    /// An endpoint file.
    Endpoint {
        /// What it asks (`openai-chat http://… model m`), as [`crate::endpoint::Endpoint::describe`].
        describe: String,
        /// The endpoint file's digest.
        digest: String,
    },
}

/// One model of the plan.
#[derive(Debug, Clone)]
pub struct LanePlan {
    /// `old`, `new`; empty in a one-model run.
    pub name: String,
    /// Its output (verdict) file.
    pub out: PathBuf,
    /// How it is asked.
    pub asked: Asked,
    /// Cases with a record already (resumed).
    pub already: usize,
    /// Cases left to ask.
    pub pending: usize,
}

/// A sequential policy's part of the plan.
#[derive(Debug, Clone)]
pub struct SequentialPlan {
    /// The budget and its unit (`400 cases`, `40 templates`).
    pub budget: String,
    /// Under `cluster: template`, the templates and the fewest that could decide.
    pub template_note: Option<String>,
}

/// The sequential decision at the end of a completed run.
#[derive(Debug, Clone)]
pub struct SequentialEnd {
    /// The budget and its unit.
    pub budget: String,
    /// The decision, once reached (approved or blocked).
    pub decided: Option<SequentialReport>,
    /// The last decision computed (the budget spent without one, when `decided` is `None`).
    pub last: Option<SequentialReport>,
}

/// What happened to one model's cases.
#[derive(Debug, Clone, Default)]
pub struct Tally {
    /// Verdicts recorded.
    pub verdicts: u64,
    /// Cases a worker answered with an error.
    pub worker_errors: u64,
    /// Cases whose worker ran out of time.
    pub timeouts: u64,
    /// Cases whose worker exited while answering (after its retries).
    pub crashes: u64,
    /// Cases a worker answered with something that is not an answer.
    pub invalid: u64,
    /// Endpoint cases errored (after their retries).
    pub request_errors: u64,
    /// Asked of the model in this run (not from the cache).
    pub asked: u64,
    /// Read from the cache.
    pub cached: u64,
    /// Tries made again.
    pub retries: u64,
    /// Tries that met an overload (429, 503, a timeout).
    pub overloads: u64,
    /// The adaptive limit's cuts.
    pub cuts: u64,
    /// Records of this run that are errors (from the cache too).
    pub errored: u64,
}

/// One model's summary.
#[derive(Debug, Clone)]
pub struct LaneReport {
    /// `old`, `new`; empty in a one-model run.
    pub name: String,
    /// Its output file.
    pub out: PathBuf,
    /// Asked through an endpoint file (not `-- PROGRAM`).
    pub endpoint: bool,
    /// The test set's cases.
    pub cases: u64,
    /// Cases with a record in the output.
    pub recorded: u64,
    /// Error records read back when the run began (resumed).
    pub errored_before: u64,
    /// This run's counts.
    pub tally: Tally,
}

/// The first 12 hex digits of a digest, for a person.
fn short(digest: &str) -> &str {
    let hex = digest.strip_prefix("sha256:").unwrap_or(digest);
    &hex[..hex.len().min(12)]
}

/// `old: ` or `new: ` before a model's line in a two-model run; nothing in a one-model run.
fn label(name: &str) -> String {
    if name.is_empty() {
        String::new()
    } else {
        format!("{name}: ")
    }
}

impl Plan {
    /// The header `run` shows once every model is ready (the CLI on stderr, Python through its
    /// logger), `test_set` as the caller names it: the cases, each model (a program's workers
    /// and resumed records; an endpoint's description, digest and output), and the order (the
    /// sequential policy's budget, or the seed and the cache of endpoints).
    pub fn header(&self, test_set: &str) -> String {
        let mut header = format!("deploy-gate run: {} cases in {test_set}", self.cases);
        for lane in &self.lanes {
            match &lane.asked {
                Asked::Program { jobs } => {
                    if lane.already > 0 {
                        header += &format!(
                            ", {} already answered in {} (resumed)",
                            lane.already,
                            lane.out.display()
                        );
                    }
                    if lane.pending > 0 {
                        header += &format!(", {jobs} worker{}", if *jobs == 1 { "" } else { "s" });
                    }
                }
                Asked::Endpoint { describe, digest } => {
                    header += &format!(
                        "\n  {}{describe} ({}) → {}",
                        label(&lane.name),
                        short(digest),
                        lane.out.display()
                    );
                    if lane.already > 0 {
                        header += &format!(", {} already answered (resumed)", lane.already);
                    }
                }
            }
        }
        if let Some(sequential) = &self.sequential {
            header += &format!(
                "\n  sequential policy: at most {}, in its seed's order; the run stops sending once the decision is reached",
                sequential.budget
            );
            if let Some(note) = &sequential.template_note {
                header += &format!("\n  sequential: {note}");
            }
        } else if matches!(self.lanes.first().map(|l| &l.asked), Some(Asked::Endpoint { .. })) {
            header += &format!(
                "\n  order seed {}, {}",
                self.order_seed,
                match &self.cache {
                    Some(dir) => format!("cache {}", dir.display()),
                    None => "no cache".to_owned(),
                }
            );
        }
        header
    }
}

impl SequentialEnd {
    /// What a completed run under a sequential policy says of its decision, if anything.
    pub fn summary(&self) -> Option<String> {
        match (&self.decided, &self.last) {
            (Some(r), _) => Some(format!(
                "deploy-gate run: the sequential decision was reached after {} of {}: {}; `deploy-gate evaluate` with the same policy replays it",
                r.used, self.budget, r.stopped
            )),
            (None, Some(r)) => Some(format!(
                "deploy-gate run: sequential: {}; the budget is spent without a decision (inconclusive): continue with a larger budget",
                live(r, r.used)
            )),
            (None, None) => None,
        }
    }
}

impl LaneReport {
    /// A model's summary lines at the end of a completed run: its records (answered, errored),
    /// then what this run did (an endpoint's requests, cache hits, retries and overloads; a
    /// program's worker errors, when there were any).
    pub fn summary(&self) -> Vec<String> {
        let t = &self.tally;
        let this_run = t.errored;
        let errored = this_run + self.errored_before;
        let label = label(&self.name);
        let of = if self.recorded == self.cases {
            format!("{} cases", self.cases)
        } else {
            format!("{} of {} cases", self.recorded, self.cases)
        };
        let mut lines = vec![format!(
            "deploy-gate run: {label}{of} in {}: {} answered, {errored} errored",
            self.out.display(),
            self.recorded - errored,
        )];
        if self.endpoint {
            lines.push(format!(
                "deploy-gate run: {label}this run: {} asked, {} from the cache, {} retries, {} overloads ({} cuts of the concurrency), {} errored",
                t.asked, t.cached, t.retries, t.overloads, t.cuts, this_run
            ));
        } else if this_run > 0 {
            lines.push(format!(
                "deploy-gate run: this run: {} worker errors, {} timeouts, {} crashes, {} invalid answers",
                t.worker_errors, t.timeouts, t.crashes, t.invalid
            ));
        }
        lines
    }
}

/// `412 of 2000 units, new − old in [−0.031, +0.089]: approved` (or how far from each bound).
pub fn live(r: &SequentialReport, budget: usize) -> String {
    let (Some(lo), Some(hi)) = (r.lower, r.upper) else {
        return format!("0 of {budget} {}s answered by both", r.unit);
    };
    let head = format!("{} of {budget} {}s, new − old in [{lo:+.4}, {hi:+.4}]", r.used, r.unit);
    match r.stopped {
        "approved" => format!(
            "{head}: approved (lower bound above −{}); no more cases are sent",
            r.tolerance
        ),
        "blocked" => format!("{head}: blocked (upper bound below 0, a regression shown); no more cases are sent"),
        _ => format!(
            "{head}: {:.4} to go to approve (lower bound > −{}), {:.4} to go to block (upper bound < 0)",
            (-r.tolerance - lo).max(0.0),
            r.tolerance,
            hi.max(0.0)
        ),
    }
}
