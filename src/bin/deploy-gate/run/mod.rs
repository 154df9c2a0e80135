//! `deploy-gate run`: runs one model, or the old and the new model together, over the test
//! set and writes their verdicts as verdict files. A model is asked through worker programs
//! (`-- PROGRAM ARG…`, or a target file of `kind: command`) or an endpoint (a target file of
//! `kind: openai-chat` or `http`). The protocol, the records and the targets are the core's
//! (`deploy_gate::run`, `deploy_gate::target`); here are the processes (`worker`, `command`),
//! the requests (`http`), the cache (`cache`), the output files (`output`), what is shown on
//! stderr (`display`), and the loop that feeds them all (`engine`).
//!
//! The main thread owns every decision; worker threads and request tasks (tokio, for the
//! endpoints) send it messages over one channel.

mod cache;
mod command;
mod display;
mod engine;
mod http;
mod output;
mod stop;
mod worker;

use crate::exit::EXIT_OK;
use anyhow::{anyhow, bail, Context, Result};
use deploy_gate::run::read_cases;
use deploy_gate::target::control::Limiter;
use deploy_gate::target::{read_target, Kind as TargetKind, Target};
use display::Display;
use engine::{Asker, Engine, Lane, Tally};
use output::Output;
use std::ffi::OsString;
use std::num::NonZeroUsize;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;
use worker::Program;

/// The flags of `run`.
#[derive(clap::Args)]
pub struct RunArgs {
    /// The test set: JSONL, one case per line, as `deploy-gate test-set` writes it.
    #[arg(long, value_name = "FILE")]
    test_set: PathBuf,
    /// The verdict file to write (JSONL of {pipeline_id, verdict|error}), with `--target` or
    /// `-- PROGRAM`. When it holds records already, their cases are skipped: an interrupted
    /// run resumes.
    #[arg(long, value_name = "FILE")]
    out: Option<PathBuf>,
    /// One model's target file (YAML or JSON: kind openai-chat, http or command), with --out.
    #[arg(long, value_name = "FILE", conflicts_with_all = ["old", "new"])]
    target: Option<PathBuf>,
    /// The old model's target file, with --new, --out-old and --out-new: both models in one
    /// run, each case sent to both together.
    #[arg(long, value_name = "FILE", requires_all = ["new", "out_old", "out_new"])]
    old: Option<PathBuf>,
    /// The new model's target file (with --old).
    #[arg(long, value_name = "FILE", requires = "old")]
    new: Option<PathBuf>,
    /// The old model's verdict file (with --old).
    #[arg(long, value_name = "FILE", requires = "old")]
    out_old: Option<PathBuf>,
    /// The new model's verdict file (with --old).
    #[arg(long, value_name = "FILE", requires = "old")]
    out_new: Option<PathBuf>,
    /// A sequential policy (JSON, as `evaluate --policy`; `sequential: true`), in a two-model
    /// run: the cases go in its seed's order, only its budget is asked, and the run stops
    /// sending as soon as the decision is reached.
    #[arg(long, value_name = "FILE", requires = "old")]
    policy: Option<PathBuf>,
    /// The seed of the cases' random order (target files; a worker program gets them in file
    /// order; with --policy, the policy's seed orders them).
    #[arg(long, value_name = "N", default_value_t = 0)]
    order_seed: u64,
    /// The response cache's folder [default: .deploy-gate-cache beside the (first) output].
    #[arg(long, value_name = "DIR", conflicts_with = "no_cache")]
    cache: Option<PathBuf>,
    /// Ask every case again, reading and writing no cache.
    #[arg(long)]
    no_cache: bool,
    /// Worker processes [default: the number of cores] (`-- PROGRAM` only).
    #[arg(long, value_name = "N")]
    jobs: Option<NonZeroUsize>,
    /// The longest a worker may take to answer one case; then it is killed, the case recorded
    /// as errored, and a new worker started. `none`: no limit (`-- PROGRAM` only; a target
    /// file has its own `timeout`).
    #[arg(long, value_name = "DURATION")]
    timeout: Option<String>,
    /// How many times a case whose worker exited (or was killed) while answering it is sent
    /// again, each time to a new worker, before it is recorded as errored (`-- PROGRAM` only).
    #[arg(long, value_name = "N")]
    retries: Option<u32>,
    /// The worker program and its arguments, after `--`: run directly, never through a shell.
    #[arg(last = true, value_name = "PROGRAM ARG…")]
    program: Vec<OsString>,
}

/// The per-case limit as given (`60s`) and as a duration (`None`: no limit).
fn parse_timeout(text: &str) -> Result<Option<Duration>> {
    if text == "none" {
        return Ok(None);
    }
    let d = humantime::parse_duration(text).map_err(|e| anyhow!("--timeout {text:?}: {e} (e.g. 60s, 5m, none)"))?;
    if d.is_zero() {
        bail!("--timeout {text:?}: must be more than zero (`none`: no limit)");
    }
    if d > deploy_gate::target::MAX_TIMEOUT {
        bail!("--timeout {text:?}: more than 7 days (`none`: no limit)");
    }
    Ok(Some(d))
}

/// `-- PROGRAM`: the argv, the workers, the per-case limit and the retries.
struct Workers {
    argv: Vec<String>,
    jobs: usize,
    timeout: Option<(Duration, String)>,
    retries: u32,
}

/// One model to run: how it is named, asked and written.
struct Model {
    name: String,
    target: Option<Arc<Target>>,
    program: Option<Workers>,
    out: PathBuf,
}

fn load_target(path: &Path) -> Result<Arc<Target>> {
    let shown = path.display().to_string();
    let meta = std::fs::metadata(path).with_context(|| format!("cannot read the target file {shown}"))?;
    if meta.len() > deploy_gate::target::MAX_TARGET_FILE as u64 {
        bail!(
            "{shown}: more than {} bytes; a target file is small",
            deploy_gate::target::MAX_TARGET_FILE
        );
    }
    let bytes = std::fs::read(path).with_context(|| format!("cannot read the target file {shown}"))?;
    Ok(Arc::new(read_target(&shown, &bytes)?))
}

/// Two paths that name one file: the same file once links are followed (symbolic or hard),
/// or, before either exists, the same folder and name.
fn same_file(a: &Path, b: &Path) -> bool {
    use std::os::unix::fs::MetadataExt;
    if let (Ok(x), Ok(y)) = (std::fs::metadata(a), std::fs::metadata(b)) {
        return x.dev() == y.dev() && x.ino() == y.ino();
    }
    let canon = |p: &Path| {
        std::fs::canonicalize(p).unwrap_or_else(|_| {
            let dir = crate::replace::dir_of(p);
            let dir = std::fs::canonicalize(&dir).unwrap_or(dir);
            dir.join(p.file_name().unwrap_or_default())
        })
    };
    canon(a) == canon(b)
}

pub fn run_cmd(args: &RunArgs) -> Result<u8> {
    let mut models = Vec::new();
    if !args.program.is_empty() {
        if args.target.is_some() || args.old.is_some() {
            bail!("give a worker program after `--` or target files (--target, or --old and --new), not both");
        }
        if args.cache.is_some() || args.no_cache {
            bail!("--cache and --no-cache are for target files; a worker program's run keeps no cache");
        }
        let out = args
            .out
            .clone()
            .ok_or_else(|| anyhow!("--out FILE is needed: the verdict file to write"))?;
        let argv: Vec<String> = args
            .program
            .iter()
            .map(|a| a.to_str().map(str::to_owned).ok_or_else(|| anyhow!("{a:?}: not UTF-8")))
            .collect::<Result<_>>()?;
        let text = args.timeout.clone().unwrap_or_else(|| "60s".to_owned());
        let timeout = parse_timeout(&text)?.map(|d| (d, text));
        let jobs = args
            .jobs
            .map(NonZeroUsize::get)
            .unwrap_or_else(|| std::thread::available_parallelism().map_or(1, NonZeroUsize::get));
        models.push(Model {
            name: String::new(),
            target: None,
            program: Some(Workers {
                argv,
                jobs,
                timeout,
                retries: args.retries.unwrap_or(1),
            }),
            out,
        });
    } else {
        for (flag, given) in [
            ("--jobs", args.jobs.is_some()),
            ("--timeout", args.timeout.is_some()),
            ("--retries", args.retries.is_some()),
        ] {
            if given && (args.target.is_some() || args.old.is_some()) {
                bail!("{flag} is for a worker program after `--`; a target file sets its own (timeout, retries, concurrency)");
            }
        }
        if let Some(path) = &args.target {
            let out = args
                .out
                .clone()
                .ok_or_else(|| anyhow!("--target needs --out FILE: the verdict file to write"))?;
            models.push(Model {
                name: String::new(),
                target: Some(load_target(path)?),
                program: None,
                out,
            });
        } else if let (Some(old), Some(new), Some(out_old), Some(out_new)) =
            (&args.old, &args.new, &args.out_old, &args.out_new)
        {
            if args.out.is_some() {
                bail!("--out is for one model; a two-model run writes --out-old and --out-new");
            }
            if same_file(out_old, out_new) {
                bail!("--out-old and --out-new name the same file {}", out_old.display());
            }
            models.push(Model {
                name: "old".into(),
                target: Some(load_target(old)?),
                program: None,
                out: out_old.clone(),
            });
            models.push(Model {
                name: "new".into(),
                target: Some(load_target(new)?),
                program: None,
                out: out_new.clone(),
            });
        } else {
            bail!("nothing to run: give --target FILE --out FILE, or --old FILE --new FILE --out-old FILE --out-new FILE, or a worker program after `--`");
        }
    }

    let test_set = &args.test_set;
    for m in &models {
        if same_file(&m.out, test_set) {
            bail!(
                "the output {} is the test set {}: give another output file",
                m.out.display(),
                test_set.display()
            );
        }
    }
    let bytes = std::fs::read(test_set).with_context(|| format!("cannot read the test set {}", test_set.display()))?;
    let cases = read_cases(&test_set.display().to_string(), &bytes).map_err(|e| anyhow!("{e}"))?;
    let stopper = match &args.policy {
        None => None,
        Some(path) => {
            let policy = crate::files::resolve_policy(Some(path), Default::default())?;
            let test_set_cases = deploy_gate::run::test_set_of(&test_set.display().to_string(), &bytes, &cases)
                .map_err(|e| anyhow!("{e}"))?;
            Some(
                stop::Stopper::new(test_set_cases, policy)
                    .map_err(|e| anyhow!("{} (policy file): {e}", path.display()))?,
            )
        }
    };
    // Secrets are read before anything starts: a missing key stops the run at once.
    let secrets: Vec<_> = models
        .iter()
        .map(|m| {
            m.target
                .as_ref()
                .map(|t| t.secrets(&|name| std::env::var(name).ok()))
                .transpose()
        })
        .collect::<Result<_, _>>()?;
    let cache = if models.iter().any(|m| m.target.is_some()) && !args.no_cache {
        let dir = args
            .cache
            .clone()
            .unwrap_or_else(|| crate::replace::dir_of(&models[0].out).join(".deploy-gate-cache"));
        Some((cache::Cache::open(&dir)?, dir))
    } else {
        None
    };

    engine::catch_stop_signals();
    let mut outputs = Vec::new();
    for m in &models {
        outputs.push(Output::open(
            &m.out,
            &cases,
            m.target.as_ref().map(|t| t.digest.as_str()),
        )?);
    }
    let lane_counts: Vec<(String, u64, u64, u64)> = models
        .iter()
        .zip(&outputs)
        .map(|(m, o)| {
            (
                m.name.clone(),
                cases.len() as u64,
                o.done().count() as u64,
                o.errored_before as u64,
            )
        })
        .collect();
    let display = Display::new(&lane_counts);
    for o in &outputs {
        if let Some(note) = &o.note {
            display.line(note);
        }
    }
    let need_of = |o: &Output| {
        let mut need = vec![true; cases.len()];
        for p in o.done() {
            need[p] = false;
        }
        need
    };
    let pending = |need: &[bool]| need.iter().filter(|n| **n).count();
    let (events, rx) = engine::channel();
    let bytes = Arc::new(bytes);
    let runtime = if models.iter().any(|m| {
        m.target
            .as_ref()
            .is_some_and(|t| !matches!(t.kind, TargetKind::Command(_)))
    }) {
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

    // The header, and each model's asker (workers start only when there are cases for them).
    let mut header = format!("deploy-gate run: {} cases in {}", cases.len(), test_set.display());
    let mut lanes = Vec::new();
    for ((m, output), secrets) in models.iter().zip(outputs).zip(secrets) {
        let need = need_of(&output);
        let pending = pending(&need);
        let already = cases.len() - pending;
        let asker = match (&m.program, &m.target) {
            (Some(w), _) => {
                let jobs = w.jobs.min(pending).max(1);
                if already > 0 {
                    header += &format!(", {already} already answered in {} (resumed)", m.out.display());
                }
                if pending > 0 {
                    header += &format!(", {jobs} worker{}", if jobs == 1 { "" } else { "s" });
                }
                let program = Program {
                    argv: w.argv.clone(),
                    side: lanes.len(),
                    label: "worker".into(),
                };
                workers(
                    program,
                    jobs,
                    pending,
                    w.timeout.clone(),
                    w.retries,
                    &bytes,
                    &events,
                    &display,
                )?
            }
            (None, Some(t)) => {
                let label = if m.name.is_empty() {
                    String::new()
                } else {
                    format!("{}: ", m.name)
                };
                header += &format!(
                    "\n  {label}{} ({}) → {}",
                    t.describe(),
                    short(&t.digest),
                    m.out.display()
                );
                if already > 0 {
                    header += &format!(", {already} already answered (resumed)");
                }
                match &t.kind {
                    TargetKind::Command(c) => {
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
                        workers(program, jobs, pending, timeout, t.retries, &bytes, &events, &display)?
                    }
                    _ => {
                        let ca =
                            match &t.tls_ca {
                                None => None,
                                Some(file) => {
                                    let path = crate::replace::dir_of(Path::new(&t.file)).join(file);
                                    Some(std::fs::read(&path).with_context(|| {
                                        format!("{}: tls_ca: cannot read {}", t.file, path.display())
                                    })?)
                                }
                            };
                        let endpoint = http::Endpoint::new(
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
                }
            }
            (None, None) => unreachable!("a model has a program or a target"),
        };
        let is_command_target = m
            .target
            .as_ref()
            .is_some_and(|t| matches!(t.kind, TargetKind::Command(_)));
        lanes.push(Lane {
            name: m.name.clone(),
            output,
            asker,
            target: m.target.as_ref().map(|t| t.digest.clone()),
            need,
            again: Default::default(),
            later: Default::default(),
            tally: Tally::default(),
            cache: if is_command_target {
                cache.as_ref().map(|c| c.0.clone())
            } else {
                None
            },
            cache_target: if is_command_target { m.target.clone() } else { None },
        });
    }
    if let Some(stopper) = &stopper {
        header += &format!(
            "\n  sequential policy: at most {}, in its seed's order; the run stops sending once the decision is reached",
            stopper.describe()
        );
        if let Some(note) = stopper.template_note() {
            header += &format!("\n  sequential: {note}");
        }
    } else if models[0].target.is_some() {
        header += &format!(
            "\n  order seed {}, {}",
            args.order_seed,
            match &cache {
                Some((_, dir)) => format!("cache {}", dir.display()),
                None => "no cache".to_owned(),
            }
        );
    }
    display.line(&header);

    let order = if let Some(stopper) = &stopper {
        stopper.order()
    } else if models[0].target.is_some() {
        engine::shuffled(cases.len(), args.order_seed)
    } else {
        (0..cases.len()).collect()
    };
    let mut engine = Engine {
        cases: &cases,
        bytes: Arc::clone(&bytes),
        lanes,
        display,
        events,
        runtime,
        stopper,
    };
    let outcome = engine.run(order, rx);
    engine.finish();
    engine.display.clear();
    let mut sync = Ok(());
    for lane in &engine.lanes {
        if let Err(e) = lane.output.sync() {
            sync = Err(e);
        }
    }
    let done_counts = |engine: &Engine<'_>| {
        engine
            .lanes
            .iter()
            .zip(&models)
            .map(|(l, m)| {
                format!(
                    "{} of {} cases have a record in {}",
                    l.output.done().count(),
                    cases.len(),
                    m.out.display()
                )
            })
            .collect::<Vec<_>>()
            .join("; ")
    };
    match outcome {
        Err(e) => {
            eprintln!(
                "deploy-gate run: stopped; {} (run again to resume)",
                done_counts(&engine)
            );
            Err(e)
        }
        Ok(Some(signal)) => {
            sync?;
            eprintln!(
                "deploy-gate run: interrupted (signal {signal}); {}; run the same command again to resume",
                done_counts(&engine)
            );
            Ok(128 + signal as u8)
        }
        Ok(None) => {
            sync?;
            let Engine { lanes, stopper, .. } = engine;
            if let Some(stopper) = &stopper {
                match (&stopper.decided, &stopper.last) {
                    (Some(r), _) => eprintln!(
                        "deploy-gate run: the sequential decision was reached after {} of {}: {}; `deploy-gate evaluate` with the same policy replays it",
                        r.used,
                        stopper.describe(),
                        r.stopped
                    ),
                    (None, Some(r)) => eprintln!(
                        "deploy-gate run: sequential: {}; the budget is spent without a decision (inconclusive): continue with a larger budget",
                        stop::live(r, r.used)
                    ),
                    (None, None) => {}
                }
            }
            for (lane, m) in lanes.into_iter().zip(&models) {
                let Lane {
                    output, tally: t, name, ..
                } = lane;
                let errored_before = output.errored_before as u64;
                let recorded = output.done().count() as u64;
                output.finish()?;
                let this_run = t.errored;
                let errored = this_run + errored_before;
                let label = if name.is_empty() {
                    String::new()
                } else {
                    format!("{name}: ")
                };
                let of = if recorded == cases.len() as u64 {
                    format!("{} cases", cases.len())
                } else {
                    format!("{recorded} of {} cases", cases.len())
                };
                eprintln!(
                    "deploy-gate run: {label}{of} in {}: {} answered, {errored} errored",
                    m.out.display(),
                    recorded - errored,
                );
                if m.target.is_none() {
                    if this_run > 0 {
                        eprintln!(
                            "deploy-gate run: this run: {} worker errors, {} timeouts, {} crashes, {} invalid answers",
                            t.worker_errors, t.timeouts, t.crashes, t.invalid
                        );
                    }
                } else {
                    eprintln!(
                        "deploy-gate run: {label}this run: {} asked, {} from the cache, {} retries, {} overloads ({} cuts of the concurrency), {} errored",
                        t.asked, t.cached, t.retries, t.overloads, t.cuts, this_run
                    );
                }
            }
            Ok(EXIT_OK)
        }
    }
}

/// The first 12 hex digits of a digest, for a person.
fn short(digest: &str) -> &str {
    let hex = digest.strip_prefix("sha256:").unwrap_or(digest);
    &hex[..hex.len().min(12)]
}

#[allow(clippy::too_many_arguments)]
fn workers(
    program: Program,
    jobs: usize,
    pending: usize,
    timeout: Option<(Duration, String)>,
    retries: u32,
    bytes: &Arc<Vec<u8>>,
    events: &std::sync::mpsc::Sender<engine::Msg>,
    display: &Display,
) -> Result<Asker> {
    let jobs = if pending == 0 { 0 } else { jobs };
    Ok(Asker::Workers(command::Pool::start(
        program,
        jobs,
        timeout,
        retries,
        Arc::clone(bytes),
        events,
        display,
    )?))
}
