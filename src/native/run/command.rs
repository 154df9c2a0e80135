//! A model run by worker programs (`-- PROGRAM ARG…`, or an endpoint of `kind: command`): the
//! pool of long-lived workers, each on one case at a time, and what is recorded when a worker
//! misbehaves (docs/run.md): a timeout kills it, a crash sends the case again up to `retries`
//! times, an answer that is not one errors the case; every such worker is replaced. Workers
//! that keep exiting without answering stop the run.

use super::msg::{Done, Effect, Kind, Msg, Outcome};
use super::progress::Progress;
use super::worker::{self, describe, Event, Program, Worker};
use crate::endpoint::response::Usage;
use crate::run::records::Answered;
use crate::run::{describe_id, parse_answer, Answer, BadAnswer, Cases};
use anyhow::{bail, Result};
use std::collections::HashMap;
use std::sync::mpsc::Sender;
use std::sync::Arc;
use std::time::{Duration, Instant};

struct Slot {
    worker: Option<Worker>,
    generation: u64,
    case: Option<(usize, Instant)>,
}

/// The worker pool of one model.
pub struct Pool {
    program: Program,
    slots: Vec<Slot>,
    timeout: Option<(Duration, String)>,
    retries: u32,
    attempts: HashMap<usize, u32>,
    /// Workers in a row that ended without answering a case.
    fruitless: usize,
    fruitless_limit: usize,
    /// Cases whose tries all ended that way, with their error: recorded once a worker answers
    /// a case (the program works, these cases crash it) or the run ends, and not at all when
    /// the run stops because the program never answers (a rerun with it fixed runs them).
    suspects: Vec<(usize, String)>,
    bytes: Arc<Vec<u8>>,
}

impl Drop for Pool {
    fn drop(&mut self) {
        for slot in &mut self.slots {
            if let Some(worker) = slot.worker.take() {
                worker.kill();
            }
        }
    }
}

impl Pool {
    /// Starts `jobs` workers.
    pub fn start(
        program: Program,
        jobs: usize,
        timeout: Option<(Duration, String)>,
        retries: u32,
        bytes: Arc<Vec<u8>>,
        events: &Sender<Msg>,
        progress: &Arc<dyn Progress>,
    ) -> Result<Pool> {
        let mut pool = Pool {
            program,
            slots: Vec::with_capacity(jobs),
            timeout,
            retries,
            attempts: HashMap::new(),
            fruitless: 0,
            fruitless_limit: jobs + 2 * (retries as usize + 1),
            suspects: Vec::new(),
            bytes,
        };
        for slot in 0..jobs {
            let worker = pool.program.start(slot, 0, events, progress)?;
            pool.slots.push(Slot {
                worker: Some(worker),
                generation: 0,
                case: None,
            });
        }
        Ok(pool)
    }

    /// Workers free for a case.
    pub fn free(&self) -> usize {
        self.slots
            .iter()
            .filter(|s| s.case.is_none() && s.worker.is_some())
            .count()
    }

    /// Whether no worker is on a case.
    pub fn idle(&self) -> bool {
        self.slots.iter().all(|s| s.case.is_none())
    }

    /// Sends a case to a free worker (there is one: see [`Pool::free`]).
    pub fn send(&mut self, cases: &Cases, position: usize) {
        let slot = self
            .slots
            .iter_mut()
            .find(|s| s.case.is_none() && s.worker.is_some())
            .expect("a free worker");
        slot.worker
            .as_ref()
            .expect("checked")
            .send(&self.bytes, cases.cases[position].line.clone());
        slot.case = Some((position, Instant::now()));
    }

    /// The soonest a case's time runs out.
    pub fn deadline(&self) -> Option<Instant> {
        let (limit, _) = self.timeout.as_ref()?;
        self.slots
            .iter()
            .filter_map(|s| s.case)
            .map(|(_, since)| since + *limit)
            .min()
    }

    fn name(&self, slot: usize) -> String {
        format!("{} {}", self.program.label, slot + 1)
    }

    fn done(position: usize, outcome: Outcome, kind: Kind, latency_ms: Option<f64>, metrics: Option<String>) -> Effect {
        Self::done_with(position, outcome, kind, latency_ms, metrics, None)
    }

    /// [`Self::done`] with what the worker answered (`output`, or an invalid line as text).
    fn done_with(
        position: usize,
        outcome: Outcome,
        kind: Kind,
        latency_ms: Option<f64>,
        metrics: Option<String>,
        output: Option<Answered>,
    ) -> Effect {
        Effect::Record(
            Done {
                position,
                outcome,
                latency_ms,
                usage: Usage::default(),
                attempts: None,
                metrics,
                output,
                cached: false,
            },
            kind,
        )
    }

    /// Kills the workers whose case ran out of time; their cases are errored.
    pub fn check_timeouts(
        &mut self,
        cases: &Cases,
        more: bool,
        events: &Sender<Msg>,
        progress: &Arc<dyn Progress>,
    ) -> Result<Vec<Effect>> {
        let mut effects = Vec::new();
        let Some((limit, text)) = self.timeout.clone() else {
            return Ok(effects);
        };
        for slot in 0..self.slots.len() {
            if let Some((position, since)) = self.slots[slot].case {
                if since.elapsed() >= limit {
                    self.slots[slot].case = None;
                    if let Some(worker) = self.slots[slot].worker.take() {
                        worker.kill();
                    }
                    progress.line(&format!(
                        "deploy-gate run: {}: no answer to pipeline_id {} after {text}; killed and restarted",
                        self.name(slot),
                        describe_id(&cases.cases[position].id)
                    ));
                    effects.push(Self::done(
                        position,
                        Outcome::Error(format!("timeout after {text}")),
                        Kind::Timeout,
                        None,
                        None,
                    ));
                    self.restart(slot, more, events, progress)?;
                }
            }
        }
        Ok(effects)
    }

    /// The cases whose workers only crashed, recorded as errored (the run goes on or ends).
    pub fn take_suspects(&mut self) -> Vec<Effect> {
        std::mem::take(&mut self.suspects)
            .into_iter()
            .map(|(position, error)| Self::done(position, Outcome::Error(error), Kind::Crash, None, None))
            .collect()
    }

    /// Starts a new worker in the slot, unless no case is left for it.
    fn restart(&mut self, slot: usize, more: bool, events: &Sender<Msg>, progress: &Arc<dyn Progress>) -> Result<()> {
        let s = &mut self.slots[slot];
        s.generation += 1;
        s.worker = None;
        if more {
            s.worker = Some(self.program.start(slot, s.generation, events, progress)?);
        }
        Ok(())
    }

    /// What a worker's stdout said.
    pub fn handle(
        &mut self,
        cases: &Cases,
        event: Event,
        more: bool,
        events: &Sender<Msg>,
        progress: &Arc<dyn Progress>,
    ) -> Result<Vec<Effect>> {
        let (slot, generation) = match &event {
            Event::Line { slot, generation, .. }
            | Event::TooLong { slot, generation, .. }
            | Event::Closed { slot, generation, .. } => (*slot, *generation),
        };
        let mut effects = Vec::new();
        if self.slots[slot].generation != generation || self.slots[slot].worker.is_none() {
            return Ok(effects); // from a worker already killed
        }
        let name = self.name(slot);
        let case = self.slots[slot].case.take();
        // An invalid answer's line is kept as the case's output (bounded as any), so that the
        // reviewer sees what the worker wrote.
        let (position, bad, unread) = match event {
            Event::Line { line, more: extra, .. } => match case {
                None => {
                    progress.line(&format!(
                        "deploy-gate run: {name} wrote a line while it had no case ({:?}); restarted",
                        String::from_utf8_lossy(&line[..line.len().min(200)])
                    ));
                    if let Some(worker) = self.slots[slot].worker.take() {
                        worker.kill();
                    }
                    self.restart(slot, more, events, progress)?;
                    return Ok(effects);
                }
                Some((position, since)) => {
                    let latency = since.elapsed().as_secs_f64() * 1000.0;
                    let parsed = if extra {
                        Err(BadAnswer::ExtraLine)
                    } else {
                        parse_answer(&line, &cases.cases[position].id)
                    };
                    match parsed {
                        Ok(reply) => {
                            self.fruitless = 0;
                            effects.extend(self.take_suspects());
                            if let Some(worker) = &mut self.slots[slot].worker {
                                worker.answered += 1;
                            }
                            let (outcome, kind) = match reply.answer {
                                Answer::Verdict(v) => (Outcome::Verdict(v.get().to_owned()), Kind::Verdict),
                                Answer::Error(e) => (Outcome::Error(e), Kind::WorkerError),
                            };
                            effects.push(Self::done_with(
                                position,
                                outcome,
                                kind,
                                Some(latency),
                                reply.metrics,
                                reply.output.map(Answered::Raw),
                            ));
                            return Ok(effects);
                        }
                        Err(bad) => (
                            position,
                            bad,
                            Some(Answered::Text(String::from_utf8_lossy(&line).into_owned())),
                        ),
                    }
                }
            },
            Event::TooLong { .. } => match case {
                Some((position, _)) => (position, BadAnswer::TooLong(worker::MAX_ANSWER), None),
                None => {
                    if let Some(worker) = self.slots[slot].worker.take() {
                        worker.kill();
                    }
                    self.restart(slot, more, events, progress)?;
                    return Ok(effects);
                }
            },
            Event::Closed { .. } => {
                let worker = self.slots[slot].worker.take().expect("checked above");
                let answered = worker.answered;
                let status = describe(worker.reap());
                if answered == 0 {
                    self.fruitless += 1;
                }
                let mut again = false;
                if let Some((position, _)) = case {
                    let tries = self.attempts.entry(position).or_insert(0);
                    *tries += 1;
                    let tries = *tries;
                    let id = describe_id(&cases.cases[position].id);
                    if tries <= self.retries {
                        progress.line(&format!(
                            "deploy-gate run: {name} exited ({status}) while answering pipeline_id {id}; restarted, the case is sent again"
                        ));
                        effects.push(Effect::Again(position));
                        again = true;
                    } else {
                        progress.line(&format!(
                            "deploy-gate run: {name} exited ({status}) while answering pipeline_id {id}; restarted, the case is recorded as errored"
                        ));
                        let times = if tries == 1 {
                            "once".to_owned()
                        } else {
                            format!("{tries} times")
                        };
                        let error = format!("the worker exited with {status} while answering (tried {times})");
                        if self.fruitless > 0 {
                            self.suspects.push((position, error));
                        } else {
                            effects.push(Self::done(position, Outcome::Error(error), Kind::Crash, None, None));
                        }
                    }
                } else if more {
                    progress.line(&format!("deploy-gate run: {name} exited ({status}); restarted"));
                }
                if self.fruitless >= self.fruitless_limit {
                    bail!(
                        "the worker program exited {} times in a row without answering a case (the last time with {status}); its stderr is above, each line marked [{} N]",
                        self.fruitless,
                        self.program.label
                    );
                }
                self.restart(slot, more || again, events, progress)?;
                return Ok(effects);
            }
        };
        progress.line(&format!(
            "deploy-gate run: {name}: invalid answer to pipeline_id {}: {bad}; restarted",
            describe_id(&cases.cases[position].id)
        ));
        if let Some(worker) = self.slots[slot].worker.take() {
            worker.kill();
        }
        effects.push(Self::done_with(
            position,
            Outcome::Error(format!("invalid answer from the worker: {bad}")),
            Kind::Invalid,
            None,
            None,
            unread,
        ));
        self.restart(slot, more, events, progress)?;
        Ok(effects)
    }

    /// At the end: every worker gets the end of its input, then is killed by `until`.
    pub fn finish(&mut self, until: Instant) {
        for slot in &mut self.slots {
            if let Some(worker) = slot.worker.take() {
                worker.finish(until);
            }
        }
    }
}
