//! `deploy-gate run`: the flags mapped to the library's run engine
//! ([`crate::native::run`]), what it tells printed on stderr (`progress`), and the exit
//! code. Ctrl-C and SIGTERM set the engine's cancellation token: the run stops at its next
//! turn, its records whole, and the same command resumes it.

mod progress;

use crate::cli::exit::EXIT_OK;
use crate::native::run::{
    read_endpoint_file, same_file, Asking, CacheDir, Cancel, Ended, Model, RunSpec, SequentialPolicy, TestSetInput,
    Workers,
};
use anyhow::{anyhow, bail, Result};
use progress::Printer;
use std::ffi::OsString;
use std::num::NonZeroUsize;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

/// The flags of `run`.
#[derive(clap::Args)]
pub struct RunArgs {
    /// The test set: JSONL, one case per line, as `deploy-gate test-set` writes it.
    #[arg(long, value_name = "FILE")]
    test_set: PathBuf,
    /// The verdict file to write (JSONL of {pipeline_id, verdict|error}), with `--endpoint` or
    /// `-- PROGRAM`. When it holds records already, their cases are skipped: an interrupted
    /// run resumes.
    #[arg(long, value_name = "FILE")]
    out: Option<PathBuf>,
    /// One model's endpoint file (YAML or JSON: kind openai-chat, http or command), with --out.
    #[arg(long, value_name = "FILE", conflicts_with_all = ["old", "new", "target"])]
    endpoint: Option<PathBuf>,
    /// `--endpoint`, by its earlier name (hidden; warns once).
    #[arg(long, value_name = "FILE", hide = true, conflicts_with_all = ["old", "new"])]
    target: Option<PathBuf>,
    /// The old model's endpoint file, with --new, --out-old and --out-new: both models in one
    /// run, each case sent to both together.
    #[arg(long, value_name = "FILE", requires_all = ["new", "out_old", "out_new"])]
    old: Option<PathBuf>,
    /// The new model's endpoint file (with --old).
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
    /// The seed of the cases' random order (endpoint files; a worker program gets them in file
    /// order; with --policy, the policy's seed orders them).
    #[arg(long, value_name = "N", default_value_t = 0)]
    order_seed: u64,
    /// The response cache's folder [default: .deploy-gate-cache beside the (first) output].
    #[arg(long, value_name = "DIR", conflicts_with = "no_cache")]
    cache: Option<PathBuf>,
    /// Ask every case again, reading and writing no cache.
    #[arg(long)]
    no_cache: bool,
    /// Keep none of the models' answers in the records (`output`), whatever the endpoint files
    /// say: for answers that must not be written.
    #[arg(long)]
    no_outputs: bool,
    /// Worker processes [default: the number of cores] (`-- PROGRAM` only).
    #[arg(long, value_name = "N")]
    jobs: Option<NonZeroUsize>,
    /// The longest a worker may take to answer one case; then it is killed, the case recorded
    /// as errored, and a new worker started. `none`: no limit (`-- PROGRAM` only; an endpoint
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
    if d > crate::endpoint::MAX_TIMEOUT {
        bail!("--timeout {text:?}: more than 7 days (`none`: no limit)");
    }
    Ok(Some(d))
}

/// The run's cancellation token, set by Ctrl-C and SIGTERM (the signal's number).
static STOP: Cancel = Cancel::new();

/// One `run` at a time in a process: the token and the signal handlers are the process's. A
/// process that calls [`crate::cli::main`] from two threads (the Python package's command, the
/// GIL released) runs their `run`s one after the other.
static ONE_RUN: std::sync::Mutex<()> = std::sync::Mutex::new(());

extern "C" fn on_signal(signal: libc::c_int) {
    STOP.cancel(signal);
}

/// Ctrl-C and SIGTERM stop the run at its next turn (what was written is kept), for as long as
/// this guard lives; dropping it puts back the handlers there were before, so a process that
/// embeds the command (the Python package's `deploy-gate`) keeps its own after the run.
struct CatchStopSignals {
    previous: Vec<(libc::c_int, libc::sigaction)>,
}

impl CatchStopSignals {
    fn install() -> CatchStopSignals {
        STOP.clear();
        let mut previous = Vec::new();
        for signal in [libc::SIGINT, libc::SIGTERM] {
            // SAFETY: sigaction with a zeroed, then filled struct; the handler only stores to an
            // atomic, which is async-signal-safe.
            unsafe {
                let mut action: libc::sigaction = std::mem::zeroed();
                action.sa_sigaction = on_signal as *const () as libc::sighandler_t;
                libc::sigemptyset(&mut action.sa_mask);
                action.sa_flags = libc::SA_RESTART;
                let mut old: libc::sigaction = std::mem::zeroed();
                if libc::sigaction(signal, &action, &mut old) == 0 {
                    previous.push((signal, old));
                }
            }
        }
        CatchStopSignals { previous }
    }
}

impl Drop for CatchStopSignals {
    fn drop(&mut self) {
        for (signal, old) in &self.previous {
            // SAFETY: puts back the action sigaction returned for this signal.
            unsafe {
                libc::sigaction(*signal, old, std::ptr::null_mut());
            }
        }
    }
}

pub fn run_cmd(args: &RunArgs) -> Result<u8> {
    if args.target.is_some() {
        eprintln!(
            "deploy-gate run: warning: --target is now --endpoint (the endpoint file); --target still works, for now"
        );
    }
    let endpoint = args.endpoint.as_ref().or(args.target.as_ref());
    let mut models = Vec::new();
    if !args.program.is_empty() {
        if endpoint.is_some() || args.old.is_some() {
            bail!("give a worker program after `--` or endpoint files (--endpoint, or --old and --new), not both");
        }
        if args.cache.is_some() || args.no_cache {
            bail!("--cache and --no-cache are for endpoint files; a worker program's run keeps no cache");
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
            asking: Asking::Program(Workers {
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
            if given && (endpoint.is_some() || args.old.is_some()) {
                bail!("{flag} is for a worker program after `--`; an endpoint file sets its own (timeout, retries, concurrency)");
            }
        }
        if let Some(path) = endpoint {
            let out = args
                .out
                .clone()
                .ok_or_else(|| anyhow!("--endpoint needs --out FILE: the verdict file to write"))?;
            models.push(Model {
                name: String::new(),
                asking: Asking::Endpoint(read_endpoint_file(path)?),
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
                asking: Asking::Endpoint(read_endpoint_file(old)?),
                out: out_old.clone(),
            });
            models.push(Model {
                name: "new".into(),
                asking: Asking::Endpoint(read_endpoint_file(new)?),
                out: out_new.clone(),
            });
        } else {
            bail!("nothing to run: give --endpoint FILE --out FILE, or --old FILE --new FILE --out-old FILE --out-new FILE, or a worker program after `--`");
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
    let test_set_input = TestSetInput::read(test_set)?;
    let policy = match &args.policy {
        None => None,
        Some(path) => Some(SequentialPolicy {
            policy: crate::cli::files::resolve_policy(Some(path), Default::default())?,
            file: path.display().to_string(),
        }),
    };
    let spec = RunSpec {
        test_set: test_set_input,
        models,
        cache: match (&args.cache, args.no_cache) {
            (_, true) => CacheDir::Off,
            (Some(dir), false) => CacheDir::At(dir.clone()),
            (None, false) => CacheDir::Beside,
        },
        order_seed: args.order_seed,
        policy,
        outputs: !args.no_outputs,
    };
    let printer = Arc::new(Printer::new(test_set.display().to_string()));
    let _one_run = ONE_RUN.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
    let signals = CatchStopSignals::install();
    let ran = crate::native::run::run(spec, printer.clone(), &STOP);
    drop(signals);
    let ran = ran?;
    let done_counts = || {
        ran.lanes
            .iter()
            .map(|l| {
                format!(
                    "{} of {} cases have a record in {}",
                    l.recorded,
                    l.cases,
                    l.out.display()
                )
            })
            .collect::<Vec<_>>()
            .join("; ")
    };
    match &ran.ended {
        Ended::Failed(_) => {
            eprintln!("deploy-gate run: stopped; {} (run again to resume)", done_counts());
            let Ended::Failed(e) = ran.ended else { unreachable!() };
            Err(e)
        }
        Ended::Cancelled(signal) => {
            eprintln!(
                "deploy-gate run: interrupted (signal {signal}); {}; run the same command again to resume",
                done_counts()
            );
            Ok(128 + *signal as u8)
        }
        Ended::Completed => Ok(EXIT_OK),
    }
}
