//! `deploy-gate run`: runs a model over the test set through worker processes and writes
//! their verdicts as a verdict file. The protocol and the records are the core's
//! `deploy_gate::run`; here are the processes (`worker`), the output file (`output`), what is
//! shown on stderr (`display`), and the loop that hands cases to idle workers, watches their
//! time, and restarts the ones that crash, hang or write garbage.
//!
//! Threads, no async runtime: the main thread owns every decision; each worker has a thread
//! for its stdin, its stdout and its stderr, and the stdout threads send their lines to the
//! main thread over one channel.

mod display;
mod output;
mod worker;

use crate::exit::EXIT_OK;
use anyhow::{anyhow, bail, Context, Result};
use deploy_gate::run::{describe_id, parse_answer, read_cases, record_line, Answer, BadAnswer, Cases};
use display::Display;
use output::Output;
use std::collections::VecDeque;
use std::ffi::OsString;
use std::num::NonZeroUsize;
use std::path::PathBuf;
use std::sync::atomic::{AtomicI32, Ordering};
use std::sync::mpsc::{self, RecvTimeoutError};
use std::sync::Arc;
use std::time::{Duration, Instant};
use worker::{describe, Event, Program, Worker};

/// The flags of `run`.
#[derive(clap::Args)]
pub struct RunArgs {
    /// The test set: JSONL, one case per line, as `deploy-gate test-set` writes it.
    #[arg(long, value_name = "FILE")]
    test_set: PathBuf,
    /// The verdict file to write (JSONL of {pipeline_id, verdict|error}). When it holds
    /// records already, their cases are skipped: an interrupted run resumes.
    #[arg(long, value_name = "FILE")]
    out: PathBuf,
    /// Worker processes [default: the number of cores].
    #[arg(long, value_name = "N")]
    jobs: Option<NonZeroUsize>,
    /// The longest a worker may take to answer one case; then it is killed, the case recorded
    /// as errored, and a new worker started. `none`: no limit.
    #[arg(long, value_name = "DURATION", default_value = "60s")]
    timeout: String,
    /// How many times a case whose worker exited (or was killed) while answering it is sent
    /// again, each time to a new worker, before it is recorded as errored.
    #[arg(long, value_name = "N", default_value_t = 1)]
    retries: u32,
    /// The worker program and its arguments, after `--`: run directly, never through a shell.
    #[arg(last = true, required = true, value_name = "PROGRAM ARG…")]
    program: Vec<OsString>,
}

/// The signal that asked the run to stop (0: none yet).
static STOP: AtomicI32 = AtomicI32::new(0);

extern "C" fn on_signal(signal: libc::c_int) {
    STOP.store(signal, Ordering::SeqCst);
}

fn catch_stop_signals() {
    for signal in [libc::SIGINT, libc::SIGTERM] {
        // SAFETY: the handler only stores to an atomic, which is async-signal-safe.
        unsafe {
            libc::signal(signal, on_signal as *const () as libc::sighandler_t);
        }
    }
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
    Ok(Some(d))
}

/// What happened to the cases of this run.
#[derive(Default)]
struct Tally {
    verdicts: u64,
    worker_errors: u64,
    timeouts: u64,
    crashes: u64,
    invalid: u64,
}

/// One worker slot: its worker (none once the run needs no more) and the case it is on.
struct Slot {
    worker: Option<Worker>,
    generation: u64,
    case: Option<(usize, Instant)>,
}

/// The slots; dropping them kills every worker still running (an error or a signal).
struct Slots(Vec<Slot>);

impl Drop for Slots {
    fn drop(&mut self) {
        for slot in &mut self.0 {
            if let Some(worker) = slot.worker.take() {
                worker.kill();
            }
        }
    }
}

struct Run<'a> {
    cases: &'a Cases,
    bytes: Arc<Vec<u8>>,
    program: Program,
    output: Output,
    display: Display,
    timeout: Option<(Duration, &'a str)>,
    retries: u32,
    attempts: Vec<u32>,
    pending: VecDeque<usize>,
    tally: Tally,
    /// Workers in a row that ended without answering a case.
    fruitless: usize,
    /// Cases whose tries all ended that way, with their error: recorded once a worker answers
    /// a case (the program works, these cases crash it) or the run ends, and not at all when
    /// the run stops because the program never answers (a rerun with it fixed runs them).
    suspects: Vec<(usize, String)>,
    fruitless_limit: usize,
    events: mpsc::Sender<Event>,
}

pub fn run_cmd(args: &RunArgs) -> Result<u8> {
    let timeout = parse_timeout(&args.timeout)?;
    let test_set = &args.test_set;
    let bytes = std::fs::read(test_set).with_context(|| format!("cannot read the test set {}", test_set.display()))?;
    let cases = read_cases(&test_set.display().to_string(), &bytes).map_err(|e| anyhow!("{e}"))?;
    let argv: Vec<String> = args
        .program
        .iter()
        .map(|a| a.to_str().map(str::to_owned).ok_or_else(|| anyhow!("{a:?}: not UTF-8")))
        .collect::<Result<_>>()?;

    catch_stop_signals();
    let output = Output::open(&args.out, &cases)?;
    let mut done = vec![false; cases.len()];
    for position in output.done() {
        done[position] = true;
    }
    let already = done.iter().filter(|d| **d).count();
    let pending: VecDeque<usize> = (0..cases.len()).filter(|p| !done[*p]).collect();
    let jobs = args
        .jobs
        .map(NonZeroUsize::get)
        .unwrap_or_else(|| std::thread::available_parallelism().map_or(1, NonZeroUsize::get));
    let jobs = jobs.min(pending.len()).max(1);
    let display = Display::new(cases.len() as u64, already as u64, output.errored_before as u64);
    let mut header = format!("deploy-gate run: {} cases in {}", cases.len(), test_set.display());
    if already > 0 {
        header += &format!(", {already} already answered in {} (resumed)", args.out.display());
    }
    if !pending.is_empty() {
        header += &format!(", {jobs} worker{}", if jobs == 1 { "" } else { "s" });
    }
    if let Some(note) = &output.note {
        display.line(note);
    }
    display.line(&header);

    let (events, rx) = mpsc::channel();
    let mut run = Run {
        cases: &cases,
        bytes: Arc::new(bytes),
        program: Program { argv },
        output,
        display,
        timeout: timeout.map(|d| (d, args.timeout.as_str())),
        retries: args.retries,
        attempts: vec![0; cases.len()],
        pending,
        tally: Tally::default(),
        fruitless: 0,
        suspects: Vec::new(),
        fruitless_limit: jobs + 2 * (args.retries as usize + 1),
        events,
    };
    let outcome = run.run(jobs, rx);
    run.display.clear();
    let sync = run.output.sync();
    match outcome {
        Err(e) => {
            eprintln!(
                "deploy-gate run: stopped; {} of {} cases have a record in {} (run again to resume)",
                run.output.done().count(),
                cases.len(),
                args.out.display()
            );
            Err(e)
        }
        Ok(Some(signal)) => {
            sync?;
            eprintln!(
                "deploy-gate run: interrupted (signal {signal}); {} of {} cases have a record in {}; run the same command again to resume",
                run.output.done().count(),
                cases.len(),
                args.out.display()
            );
            Ok(128 + signal as u8)
        }
        Ok(None) => {
            sync?;
            let Run { output, tally, .. } = run;
            let errored_before = output.errored_before;
            output.finish()?;
            let t = &tally;
            let errored = t.worker_errors + t.timeouts + t.crashes + t.invalid + errored_before as u64;
            eprintln!(
                "deploy-gate run: {} cases in {}: {} answered, {errored} errored",
                cases.len(),
                args.out.display(),
                cases.len() as u64 - errored,
            );
            if t.worker_errors + t.timeouts + t.crashes + t.invalid > 0 {
                eprintln!(
                    "deploy-gate run: this run: {} worker errors, {} timeouts, {} crashes, {} invalid answers",
                    t.worker_errors, t.timeouts, t.crashes, t.invalid
                );
            }
            Ok(EXIT_OK)
        }
    }
}

impl Run<'_> {
    /// Runs the pending cases; `Some(signal)` when a signal stopped it.
    fn run(&mut self, jobs: usize, rx: mpsc::Receiver<Event>) -> Result<Option<i32>> {
        if self.pending.is_empty() {
            return Ok(None);
        }
        let mut slots = Slots(Vec::with_capacity(jobs));
        for slot in 0..jobs {
            let worker = self.program.start(slot, 0, &self.events, &self.display)?;
            slots.0.push(Slot {
                worker: Some(worker),
                generation: 0,
                case: None,
            });
        }
        loop {
            let signal = STOP.load(Ordering::SeqCst);
            if signal != 0 {
                return Ok(Some(signal));
            }
            for slot in &mut slots.0 {
                if slot.case.is_none() {
                    if let Some(worker) = &slot.worker {
                        if let Some(position) = self.pending.pop_front() {
                            worker.send(&self.bytes, self.cases.cases[position].line.clone());
                            slot.case = Some((position, Instant::now()));
                        }
                    }
                }
            }
            if self.pending.is_empty() && slots.0.iter().all(|s| s.case.is_none()) {
                self.record_suspects()?;
                break;
            }
            let mut wait = Duration::from_millis(200);
            if let Some((limit, _)) = self.timeout {
                for (_, since) in slots.0.iter().filter_map(|s| s.case) {
                    wait = wait.min((since + limit).saturating_duration_since(Instant::now()));
                }
            }
            match rx.recv_timeout(wait) {
                Ok(event) => self.handle(&mut slots, event)?,
                Err(RecvTimeoutError::Timeout) => {}
                Err(RecvTimeoutError::Disconnected) => unreachable!("the run holds a sender"),
            }
            if let Some((limit, text)) = self.timeout {
                for slot in 0..slots.0.len() {
                    if let Some((position, since)) = slots.0[slot].case {
                        if since.elapsed() >= limit {
                            slots.0[slot].case = None;
                            if let Some(worker) = slots.0[slot].worker.take() {
                                worker.kill();
                            }
                            self.tally.timeouts += 1;
                            self.display.line(&format!(
                                "deploy-gate run: worker {}: no answer to pipeline_id {} after {text}; killed and restarted",
                                slot + 1,
                                describe_id(&self.cases.cases[position].id)
                            ));
                            self.record(position, Answer::Error(format!("timeout after {text}")))?;
                            self.restart(&mut slots, slot)?;
                        }
                    }
                }
            }
            self.display.tick();
        }
        // Every case has its record: the workers get the end of their input, then are killed.
        let until = Instant::now() + Duration::from_secs(2);
        for slot in &mut slots.0 {
            if let Some(worker) = slot.worker.take() {
                worker.finish(until);
            }
        }
        Ok(None)
    }

    fn record(&mut self, position: usize, answer: Answer) -> Result<()> {
        let errored = matches!(answer, Answer::Error(_));
        let line = record_line(&self.cases.cases[position].id, &answer);
        self.output.append(position, line)?;
        self.display.case_done(errored);
        Ok(())
    }

    fn record_suspects(&mut self) -> Result<()> {
        for (position, error) in std::mem::take(&mut self.suspects) {
            self.record(position, Answer::Error(error))?;
        }
        Ok(())
    }

    /// Starts a new worker in the slot, unless no case is left for it.
    fn restart(&mut self, slots: &mut Slots, slot: usize) -> Result<()> {
        let s = &mut slots.0[slot];
        s.generation += 1;
        s.worker = None;
        if !self.pending.is_empty() {
            s.worker = Some(self.program.start(slot, s.generation, &self.events, &self.display)?);
        }
        Ok(())
    }

    fn handle(&mut self, slots: &mut Slots, event: Event) -> Result<()> {
        let (slot, generation) = match &event {
            Event::Line { slot, generation, .. }
            | Event::TooLong { slot, generation }
            | Event::Closed { slot, generation } => (*slot, *generation),
        };
        if slots.0[slot].generation != generation || slots.0[slot].worker.is_none() {
            return Ok(()); // from a worker already killed
        }
        let number = slot + 1;
        let case = slots.0[slot].case.take();
        let bad = match event {
            Event::Line { line, more, .. } => match case {
                None => {
                    self.display.line(&format!(
                        "deploy-gate run: worker {number} wrote a line while it had no case ({:?}); restarted",
                        String::from_utf8_lossy(&line[..line.len().min(200)])
                    ));
                    if let Some(worker) = slots.0[slot].worker.take() {
                        worker.kill();
                    }
                    return self.restart(slots, slot);
                }
                Some((position, _)) => {
                    let parsed = if more {
                        Err(BadAnswer::ExtraLine)
                    } else {
                        parse_answer(&line, &self.cases.cases[position].id)
                    };
                    match parsed {
                        Ok(answer) => {
                            match answer {
                                Answer::Verdict(_) => self.tally.verdicts += 1,
                                Answer::Error(_) => self.tally.worker_errors += 1,
                            }
                            self.fruitless = 0;
                            self.record_suspects()?;
                            if let Some(worker) = &mut slots.0[slot].worker {
                                worker.answered += 1;
                            }
                            return self.record(position, answer);
                        }
                        Err(bad) => (position, bad),
                    }
                }
            },
            Event::TooLong { .. } => match case {
                Some((position, _)) => (position, BadAnswer::TooLong(worker::MAX_ANSWER)),
                None => {
                    if let Some(worker) = slots.0[slot].worker.take() {
                        worker.kill();
                    }
                    return self.restart(slots, slot);
                }
            },
            Event::Closed { .. } => {
                let worker = slots.0[slot].worker.take().expect("checked above");
                let answered = worker.answered;
                let status = describe(worker.reap());
                if answered == 0 {
                    self.fruitless += 1;
                }
                if let Some((position, _)) = case {
                    self.attempts[position] += 1;
                    let tries = self.attempts[position];
                    let id = describe_id(&self.cases.cases[position].id);
                    if tries <= self.retries {
                        self.display.line(&format!(
                            "deploy-gate run: worker {number} exited ({status}) while answering pipeline_id {id}; restarted, the case is sent again"
                        ));
                        self.pending.push_front(position);
                    } else {
                        self.display.line(&format!(
                            "deploy-gate run: worker {number} exited ({status}) while answering pipeline_id {id}; restarted, the case is recorded as errored"
                        ));
                        self.tally.crashes += 1;
                        let times = if tries == 1 {
                            "once".to_owned()
                        } else {
                            format!("{tries} times")
                        };
                        let error = format!("the worker exited with {status} while answering (tried {times})");
                        if self.fruitless > 0 {
                            self.suspects.push((position, error));
                        } else {
                            self.record(position, Answer::Error(error))?;
                        }
                    }
                } else if !self.pending.is_empty() {
                    self.display.line(&format!(
                        "deploy-gate run: worker {number} exited ({status}); restarted"
                    ));
                }
                if self.fruitless >= self.fruitless_limit {
                    bail!(
                        "the worker program exited {} times in a row without answering a case (the last time with {status}); its stderr is above, each line marked [worker N]",
                        self.fruitless
                    );
                }
                return self.restart(slots, slot);
            }
        };
        let (position, bad) = bad;
        self.tally.invalid += 1;
        self.display.line(&format!(
            "deploy-gate run: worker {number}: invalid answer to pipeline_id {}: {bad}; restarted",
            describe_id(&self.cases.cases[position].id)
        ));
        if let Some(worker) = slots.0[slot].worker.take() {
            worker.kill();
        }
        self.record(
            position,
            Answer::Error(format!("invalid answer from the worker: {bad}")),
        )?;
        self.restart(slots, slot)
    }
}
