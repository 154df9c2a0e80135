//! The run engine: runs one model, or the old and the new model together, over a test set and
//! writes their verdicts as verdict files. A model is asked through worker programs (an argv,
//! or an endpoint file of `kind: command`) or an endpoint (`kind: openai-chat` or `http`). The
//! protocol, the records and the endpoint files are the core's ([`crate::run`],
//! [`crate::endpoint`]); here are the processes (`worker`, `command`), the requests (`http`),
//! the cache (`cache`), the output files (`output`), a sequential policy's stop (`stop`), and
//! the loop that feeds them all (`engine`), behind one call: [`run`].
//!
//! Every shell calls [`run`]: the CLI's `deploy-gate run` maps its flags to a [`RunSpec`] and
//! prints what [`Progress`] tells; a binding can call it on a thread of its own (the spec and
//! the progress are `Send`), stopping it through a [`Cancel`] token. The thread that calls
//! [`run`] makes every decision and writes every record; worker threads and request tasks (on a
//! tokio runtime the run makes for endpoints) send it messages over one channel.
//!
//! Native and Unix only (processes, locks, signals of the workers' group).

mod cache;
mod command;
mod engine;
mod http;
mod lane;
mod msg;
mod output;
mod progress;
mod stop;
mod worker;

pub use cache::{Cache, Entry};
pub use progress::{
    live, Asked, Cancel, LanePlan, LaneReport, LaneStart, Plan, Progress, SequentialEnd, SequentialPlan, Tally,
};
pub use worker::describe as describe_status;

use crate::endpoint::control::Limiter;
use crate::endpoint::{read_endpoint, Endpoint, Kind as EndpointKind};
use crate::native::files::replace::dir_of;
use crate::policy::GatePolicy;
use crate::run::{read_cases, test_set_of, Cases};
use anyhow::{anyhow, bail, Context, Result};
use engine::Engine;
use lane::{Asker, Lane};
use output::Output;
use std::num::NonZeroUsize;
use std::path::{Path, PathBuf};
use std::sync::mpsc;
use std::sync::Arc;
use std::time::Duration;
use stop::Stopper;
use worker::Program;

/// The test set of a run: its name (for messages), its bytes and its cases.
pub struct TestSetInput {
    name: String,
    path: Option<PathBuf>,
    bytes: Arc<Vec<u8>>,
    cases: Cases,
}

impl TestSetInput {
    /// Reads the cases of a test set (JSONL, one case per line, as `deploy-gate test-set`
    /// writes it). `name` names it in messages; `path`, when it is a file, is checked against
    /// the outputs (an output may not be the test set).
    pub fn new(name: &str, path: Option<&Path>, bytes: Vec<u8>) -> Result<TestSetInput> {
        let cases = read_cases(name, &bytes).map_err(|e| anyhow!("{e}"))?;
        Ok(TestSetInput {
            name: name.to_owned(),
            path: path.map(Path::to_path_buf),
            bytes: Arc::new(bytes),
            cases,
        })
    }

    /// Reads the test set file at `path`.
    pub fn read(path: &Path) -> Result<TestSetInput> {
        let bytes = std::fs::read(path).with_context(|| format!("cannot read the test set {}", path.display()))?;
        TestSetInput::new(&path.display().to_string(), Some(path), bytes)
    }

    /// Its cases.
    pub fn len(&self) -> usize {
        self.cases.len()
    }

    /// Whether it has no case.
    pub fn is_empty(&self) -> bool {
        self.cases.len() == 0
    }
}

/// Worker programs (`-- PROGRAM ARG…`): the argv, run directly (never through a shell), the
/// workers, the per-case limit and the retries.
#[derive(Debug, Clone)]
pub struct Workers {
    /// The program and its arguments.
    pub argv: Vec<String>,
    /// Worker processes.
    pub jobs: usize,
    /// The longest a worker may take on one case, and that limit as the user gave it (`60s`),
    /// for messages; `None`: no limit.
    pub timeout: Option<(Duration, String)>,
    /// How many times a case whose worker exited while answering it is sent again.
    pub retries: u32,
}

/// How one model is asked.
#[derive(Debug, Clone)]
pub enum Asking {
    /// Worker programs.
    Program(Workers),
    /// An endpoint file (`kind: openai-chat`, `http` or `command`), as [`read_endpoint_file`] reads it.
    Endpoint(Arc<Endpoint>),
}

/// One model to run.
#[derive(Debug, Clone)]
pub struct Model {
    /// `old`, `new`; empty in a one-model run.
    pub name: String,
    /// How it is asked.
    pub asking: Asking,
    /// Its verdict file: created, or resumed when it holds records already.
    pub out: PathBuf,
}

/// Where the response cache is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CacheDir {
    /// `.deploy-gate-cache` beside the (first) output.
    Beside,
    /// This folder.
    At(PathBuf),
    /// No cache: every case is asked again.
    Off,
}

/// A sequential policy (`sequential: true`) for a two-model run, and the file it came from
/// (for messages).
#[derive(Debug, Clone)]
pub struct SequentialPolicy {
    /// The policy.
    pub policy: GatePolicy,
    /// Its file, as the user named it.
    pub file: String,
}

/// What to run.
pub struct RunSpec {
    /// The test set.
    pub test_set: TestSetInput,
    /// One model, or two (old, then new): each case is sent to both in the same turn.
    pub models: Vec<Model>,
    /// The response cache (endpoint files only; a worker program's run keeps none).
    pub cache: CacheDir,
    /// The seed of the cases' random order (endpoint files; worker programs get them in file
    /// order; under a sequential policy, the policy's seed orders them).
    pub order_seed: u64,
    /// A sequential policy (two models): only its budget is asked, in its seed's order, and
    /// nothing more is sent once the decision is reached.
    pub policy: Option<SequentialPolicy>,
    /// Whether records keep what the models answered (`output`), as each endpoint file says
    /// (`outputs`, `max_output_bytes`; a worker program's up to the default bound); `false`
    /// (`--no-outputs`): none is kept, whatever the endpoint files say.
    pub outputs: bool,
}

/// How a run ended.
#[derive(Debug)]
pub enum Ended {
    /// Every case asked has its record (or a sequential decision stopped it); the outputs are
    /// final (in test-set order when complete).
    Completed,
    /// [`Cancel::cancel`] stopped it, with this reason: the records written are whole and a
    /// run of the same spec resumes them.
    Cancelled(i32),
    /// An error stopped it after it began (a worker program that never answers, a full
    /// disk): what was written is kept and resumable.
    Failed(anyhow::Error),
}

/// What a run did.
#[derive(Debug)]
pub struct Ran {
    /// How it ended.
    pub ended: Ended,
    /// Each model's summary.
    pub lanes: Vec<LaneReport>,
    /// Under a sequential policy, its decision.
    pub sequential: Option<SequentialEnd>,
}

/// Reads an endpoint file (YAML or JSON, small).
pub fn read_endpoint_file(path: &Path) -> Result<Arc<Endpoint>> {
    let shown = path.display().to_string();
    let meta = std::fs::metadata(path).with_context(|| format!("cannot read the endpoint file {shown}"))?;
    if meta.len() > crate::endpoint::MAX_ENDPOINT_FILE as u64 {
        bail!(
            "{shown}: more than {} bytes; an endpoint file is small",
            crate::endpoint::MAX_ENDPOINT_FILE
        );
    }
    let bytes = std::fs::read(path).with_context(|| format!("cannot read the endpoint file {shown}"))?;
    Ok(Arc::new(read_endpoint(&shown, &bytes)?))
}

/// Two paths that name one file: the same file once links are followed (symbolic or hard),
/// or, before either exists, the same folder and name.
pub fn same_file(a: &Path, b: &Path) -> bool {
    use std::os::unix::fs::MetadataExt;
    if let (Ok(x), Ok(y)) = (std::fs::metadata(a), std::fs::metadata(b)) {
        return x.dev() == y.dev() && x.ino() == y.ino();
    }
    let canon = |p: &Path| {
        std::fs::canonicalize(p).unwrap_or_else(|_| {
            let dir = dir_of(p);
            let dir = std::fs::canonicalize(&dir).unwrap_or(dir);
            dir.join(p.file_name().unwrap_or_default())
        })
    };
    canon(a) == canon(b)
}

/// Runs `spec`, telling `progress` as it goes, until every case asked has its record, `cancel`
/// is set, or an error stops it. `Err`: the run could not begin (an output locked by another
/// run, a missing secret, a worker program that cannot start…); nothing was asked.
pub fn run(spec: RunSpec, progress: Arc<dyn Progress>, cancel: &Cancel) -> Result<Ran> {
    let RunSpec {
        test_set,
        models,
        cache: cache_dir,
        order_seed,
        policy,
        outputs: keep_answers,
    } = spec;
    if models.is_empty() || models.len() > 2 {
        bail!("a run has one model or two (old and new)");
    }
    if models.len() == 2 && same_file(&models[0].out, &models[1].out) {
        bail!("the two models' outputs name the same file {}", models[0].out.display());
    }
    if let Some(path) = &test_set.path {
        for m in &models {
            if same_file(&m.out, path) {
                bail!(
                    "the output {} is the test set {}: give another output file",
                    m.out.display(),
                    path.display()
                );
            }
        }
    }
    let TestSetInput {
        name: test_set_name,
        bytes,
        cases,
        ..
    } = test_set;
    let endpoint = |m: &Model| match &m.asking {
        Asking::Endpoint(t) => Some(Arc::clone(t)),
        Asking::Program(_) => None,
    };
    let stopper = match policy {
        None => None,
        Some(SequentialPolicy { policy, file }) => {
            if models.len() != 2 {
                bail!("a sequential policy is for a two-model run (old and new)");
            }
            let test_set_cases = test_set_of(&test_set_name, &bytes, &cases).map_err(|e| anyhow!("{e}"))?;
            Some(Stopper::new(test_set_cases, policy).map_err(|e| anyhow!("{file} (policy file): {e}"))?)
        }
    };
    // Secrets are read before anything starts: a missing key stops the run at once.
    let secrets: Vec<_> = models
        .iter()
        .map(|m| {
            endpoint(m)
                .map(|t| t.secrets(&|name| std::env::var(name).ok()))
                .transpose()
        })
        .collect::<Result<_, _>>()?;
    let cache = match &cache_dir {
        _ if !models.iter().any(|m| endpoint(m).is_some()) => None,
        CacheDir::Off => None,
        CacheDir::Beside => {
            let dir = dir_of(&models[0].out).join(".deploy-gate-cache");
            Some((Cache::open(&dir)?, dir))
        }
        CacheDir::At(dir) => Some((Cache::open(dir)?, dir.clone())),
    };

    let mut outputs = Vec::new();
    for m in &models {
        let digest = endpoint(m).map(|t| t.digest.clone());
        outputs.push(Output::open(&m.out, &cases, digest.as_deref())?);
    }
    let starts: Vec<LaneStart> = models
        .iter()
        .zip(&outputs)
        .map(|(m, o)| LaneStart {
            name: m.name.clone(),
            total: cases.len() as u64,
            done: o.done().count() as u64,
            errored: o.errored_before as u64,
        })
        .collect();
    progress.begin(&starts);
    for o in &outputs {
        if let Some(note) = &o.note {
            progress.line(note);
        }
    }
    let need_of = |o: &Output| {
        let mut need = vec![true; cases.len()];
        for p in o.done() {
            need[p] = false;
        }
        need
    };
    let (events, rx) = mpsc::channel();
    let runtime = if models
        .iter()
        .any(|m| endpoint(m).is_some_and(|t| !matches!(t.kind, EndpointKind::Command(_))))
    {
        Some(
            tokio::runtime::Builder::new_multi_thread()
                .worker_threads(2)
                .enable_all()
                .build()
                .context("cannot start the HTTP client's runtime")?,
        )
    } else {
        None
    };

    // Each model's asker (workers start only when there are cases for them).
    let mut lanes = Vec::new();
    let mut plans = Vec::new();
    for ((m, output), secrets) in models.iter().zip(outputs).zip(secrets) {
        let need = need_of(&output);
        let pending = need.iter().filter(|n| **n).count();
        let already = cases.len() - pending;
        let start_workers = |program: Program, jobs: usize, timeout: Option<(Duration, String)>, retries: u32| {
            let jobs = if pending == 0 { 0 } else { jobs };
            command::Pool::start(program, jobs, timeout, retries, Arc::clone(&bytes), &events, &progress)
                .map(Asker::Workers)
        };
        let (asker, asked) = match &m.asking {
            Asking::Program(w) => {
                let jobs = w.jobs.min(pending).max(1);
                let program = Program {
                    argv: w.argv.clone(),
                    side: lanes.len(),
                    label: "worker".into(),
                };
                let asker = start_workers(program, jobs, w.timeout.clone(), w.retries)?;
                (asker, Asked::Program { jobs })
            }
            Asking::Endpoint(t) => {
                let asked = Asked::Endpoint {
                    describe: t.describe(),
                    digest: t.digest.clone(),
                };
                let asker = match &t.kind {
                    EndpointKind::Command(c) => {
                        let jobs = t
                            .concurrency
                            .map(|c| c.initial)
                            .unwrap_or_else(|| std::thread::available_parallelism().map_or(1, NonZeroUsize::get))
                            .min(pending)
                            .max(1);
                        let program = Program {
                            argv: c.argv.clone(),
                            side: lanes.len(),
                            label: if m.name.is_empty() {
                                "worker".into()
                            } else {
                                format!("{} worker", m.name)
                            },
                        };
                        let timeout = t.timeout.map(|d| (d, t.timeout_text.clone()));
                        start_workers(program, jobs, timeout, t.retries)?
                    }
                    _ => {
                        let ca =
                            match &t.tls_ca {
                                None => None,
                                Some(file) => {
                                    let path = dir_of(Path::new(&t.file)).join(file);
                                    Some(std::fs::read(&path).with_context(|| {
                                        format!("{}: tls_ca: cannot read {}", t.file, path.display())
                                    })?)
                                }
                            };
                        let endpoint = http::Client::new(
                            Arc::clone(t),
                            secrets.unwrap_or_default(),
                            ca,
                            cache.as_ref().map(|c| c.0.clone()),
                        )?;
                        let c = t.concurrency.expect("an endpoint has concurrency bounds");
                        Asker::Endpoint {
                            endpoint: Arc::new(endpoint),
                            limiter: Limiter::new(c.initial, c.min, c.max),
                            in_flight: 0,
                        }
                    }
                };
                (asker, asked)
            }
        };
        plans.push(LanePlan {
            name: m.name.clone(),
            out: m.out.clone(),
            asked,
            already,
            pending,
        });
        let command_target = endpoint(m).filter(|t| matches!(t.kind, EndpointKind::Command(_)));
        let keep_outputs = match endpoint(m) {
            _ if !keep_answers => None,
            Some(e) => e.outputs.then_some(e.max_output_bytes),
            None => Some(crate::run::records::DEFAULT_MAX_OUTPUT_BYTES),
        };
        lanes.push(Lane {
            keep_outputs,
            name: m.name.clone(),
            output,
            asker,
            target: endpoint(m).map(|t| t.digest.clone()),
            need,
            again: Default::default(),
            later: Default::default(),
            tally: Tally::default(),
            cache: command_target.as_ref().and(cache.as_ref().map(|c| c.0.clone())),
            cache_target: command_target,
        });
    }
    progress.plan(&Plan {
        cases: cases.len(),
        lanes: plans,
        sequential: stopper.as_ref().map(|s| SequentialPlan {
            budget: s.describe(),
            template_note: s.template_note(),
        }),
        order_seed,
        cache: cache.as_ref().map(|c| c.1.clone()),
    });

    let order = if let Some(stopper) = &stopper {
        stopper.order()
    } else if endpoint(&models[0]).is_some() {
        engine::shuffled(cases.len(), order_seed)
    } else {
        (0..cases.len()).collect()
    };
    let mut engine = Engine {
        cases: &cases,
        bytes: Arc::clone(&bytes),
        lanes,
        progress: Arc::clone(&progress),
        events,
        runtime,
        stopper,
    };
    let outcome = engine.run(order, rx, cancel);
    engine.finish();
    progress.end();
    let mut sync = Ok(());
    for lane in &engine.lanes {
        if let Err(e) = lane.output.sync() {
            sync = Err(e);
        }
    }
    let report = |lane: &Lane, m: &Model| LaneReport {
        name: lane.name.clone(),
        out: m.out.clone(),
        endpoint: endpoint(m).is_some(),
        cases: cases.len() as u64,
        recorded: lane.output.done().count() as u64,
        errored_before: lane.output.errored_before as u64,
        tally: lane.tally.clone(),
    };
    let sequential = engine.stopper.as_ref().map(|s| SequentialEnd {
        budget: s.describe(),
        decided: s.decided.clone(),
        last: s.last.clone(),
    });
    match outcome {
        Err(e) => Ok(Ran {
            ended: Ended::Failed(e),
            lanes: engine.lanes.iter().zip(&models).map(|(l, m)| report(l, m)).collect(),
            sequential,
        }),
        Ok(Some(reason)) => {
            sync?;
            Ok(Ran {
                ended: Ended::Cancelled(reason),
                lanes: engine.lanes.iter().zip(&models).map(|(l, m)| report(l, m)).collect(),
                sequential,
            })
        }
        Ok(None) => {
            sync?;
            if let Some(end) = &sequential {
                progress.sequential_done(end);
            }
            let mut reports = Vec::new();
            for (lane, m) in engine.lanes.into_iter().zip(&models) {
                let r = report(&lane, m);
                lane.output.finish(&*progress)?;
                progress.lane_done(&r);
                reports.push(r);
            }
            Ok(Ran {
                ended: Ended::Completed,
                lanes: reports,
                sequential,
            })
        }
    }
}

#[cfg(test)]
mod tests;
