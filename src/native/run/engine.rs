//! The loop of a run: one or two models ("lanes"), each with its output file and its way of
//! being asked (worker programs, or an endpoint's requests under an adaptive limit), fed the
//! cases in one order. In a two-model run a case goes to both models in the same turn of the
//! loop, so that the two sides of every pair run at the same moment and drift on the serving
//! side hits both alike; a model whose limit is full holds the next case back for both.
//!
//! The thread that runs makes every decision and writes every record; worker threads and request
//! tasks only send it messages.

use super::lane::{Asker, Lane, Later};
use super::msg::{Done, Effect, Kind, Msg, Outcome, Request};
use super::progress::{Cancel, Progress};
use super::stop::Stopper;
use super::worker;
use crate::endpoint::request::case_fields;
use crate::endpoint::response::Usage;
use crate::run::records::{write_record_kept, Answered, Cost, Record};
use crate::run::Cases;
use anyhow::Result;
use std::collections::VecDeque;
use std::sync::mpsc::{Receiver, RecvTimeoutError, Sender};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// The run's state.
pub struct Engine<'a> {
    pub cases: &'a Cases,
    pub bytes: Arc<Vec<u8>>,
    pub lanes: Vec<Lane>,
    pub progress: Arc<dyn Progress>,
    pub events: Sender<Msg>,
    pub runtime: Option<tokio::runtime::Runtime>,
    /// A sequential policy's decision, taken as the records come in (`run --policy`).
    pub stopper: Option<Stopper>,
}

impl Engine<'_> {
    /// Whether model `lane` has cases left to ask (`waiting`: the queue or the next case
    /// held back for both models is not empty).
    fn more(waiting: bool, lane: &Lane) -> bool {
        waiting || !lane.again.is_empty() || !lane.later.is_empty()
    }

    /// Runs the cases in `order` that some model still needs; `Some(reason)` when `cancel`
    /// stopped it.
    pub fn run(&mut self, order: Vec<usize>, rx: Receiver<Msg>, cancel: &Cancel) -> Result<Option<i32>> {
        let mut queue: VecDeque<usize> = order
            .into_iter()
            .filter(|&p| self.lanes.iter().any(|l| l.need[p]))
            .collect();
        // A resumed sequential run may be decided by the records it holds already.
        if let Some(stopper) = &mut self.stopper {
            let progress = Arc::clone(&self.progress);
            if stopper.check(&self.lanes, true, &|line| progress.line(line))? {
                queue.clear();
            }
        }
        // The next case, its requests made and the cache asked (once).
        let mut head: Option<(usize, Vec<Option<Request>>)> = None;
        loop {
            if let Some(reason) = cancel.reason() {
                return Ok(Some(reason));
            }
            // Tries whose wait is over and cases to send again go first, each to its own model.
            let now = Instant::now();
            for lane in 0..self.lanes.len() {
                while self.free(lane) > 0 && self.lanes[lane].later.peek().is_some_and(|l| l.due <= now) {
                    let later = self.lanes[lane].later.pop().expect("peeked");
                    self.send(lane, later.position, Some(later.request), later.attempt)?;
                }
                while self.free(lane) > 0 {
                    let Some(position) = self.lanes[lane].again.pop_front() else {
                        break;
                    };
                    self.send(lane, position, None, 1)?;
                }
            }
            // Then the queue, each case to every model that needs it in the same turn.
            loop {
                if head.is_none() {
                    let Some(position) = queue.pop_front() else { break };
                    let requests = self.prepare(position)?;
                    head = Some((position, requests));
                }
                let (position, requests) = head.as_mut().expect("set above");
                let position = *position;
                let waiting: Vec<usize> = (0..self.lanes.len())
                    .filter(|&l| self.lanes[l].need[position] && requests[l].is_some())
                    .collect();
                if waiting.iter().any(|&l| self.free(l) == 0) {
                    break;
                }
                let mut requests = std::mem::take(requests);
                head = None;
                for l in waiting {
                    let request = requests[l].take().expect("filtered");
                    self.send(l, position, Some(request), 1)?;
                }
            }
            let idle = self.lanes.iter().all(|l| match &l.asker {
                Asker::Workers(pool) => pool.idle(),
                Asker::Endpoint { in_flight, .. } => *in_flight == 0,
            });
            if head.is_none()
                && queue.is_empty()
                && idle
                && self.lanes.iter().all(|l| l.again.is_empty() && l.later.is_empty())
            {
                for lane in 0..self.lanes.len() {
                    if let Asker::Workers(pool) = &mut self.lanes[lane].asker {
                        let effects = pool.take_suspects();
                        self.apply(lane, effects)?;
                    }
                }
                if let Some(stopper) = &mut self.stopper {
                    let progress = Arc::clone(&self.progress);
                    stopper.check(&self.lanes, true, &|line| progress.line(line))?;
                }
                break;
            }
            let mut wait = Duration::from_millis(200);
            for lane in &self.lanes {
                if let Some(l) = lane.later.peek() {
                    wait = wait.min(l.due.saturating_duration_since(Instant::now()));
                }
                if let Asker::Workers(pool) = &lane.asker {
                    if let Some(d) = pool.deadline() {
                        wait = wait.min(d.saturating_duration_since(Instant::now()));
                    }
                }
            }
            let waiting = !queue.is_empty() || head.is_some();
            match rx.recv_timeout(wait) {
                Ok(msg) => {
                    self.handle(msg, waiting)?;
                    // Drain what else is there before the next turn.
                    while let Ok(msg) = rx.try_recv() {
                        self.handle(msg, waiting)?;
                    }
                }
                Err(RecvTimeoutError::Timeout) => {}
                Err(RecvTimeoutError::Disconnected) => unreachable!("the run holds a sender"),
            }
            if let Some(stopper) = &mut self.stopper {
                let progress = Arc::clone(&self.progress);
                if stopper.check(&self.lanes, false, &|line| progress.line(line))? {
                    // Decided: nothing more is sent; the pairs in flight finish and are recorded.
                    queue.clear();
                    head = None;
                }
            }
            let waiting = !queue.is_empty() || head.is_some();
            for lane in 0..self.lanes.len() {
                let more = Self::more(waiting, &self.lanes[lane]);
                if let Asker::Workers(pool) = &mut self.lanes[lane].asker {
                    let effects = pool.check_timeouts(self.cases, more, &self.events, &self.progress)?;
                    self.apply(lane, effects)?;
                }
            }
            self.progress.tick();
        }
        Ok(None)
    }

    /// Ends the workers (the end of their input, then killed) and the request tasks.
    pub fn finish(&mut self) {
        let until = Instant::now() + Duration::from_secs(2);
        for lane in &mut self.lanes {
            if let Asker::Workers(pool) = &mut lane.asker {
                pool.finish(until);
            }
        }
        if let Some(runtime) = self.runtime.take() {
            runtime.shutdown_background();
        }
    }

    fn free(&self, lane: usize) -> usize {
        match &self.lanes[lane].asker {
            Asker::Workers(pool) => pool.free(),
            Asker::Endpoint { limiter, in_flight, .. } => limiter.permits().saturating_sub(*in_flight),
        }
    }

    /// A case's request for each model that needs it; a model whose answer is cached gets
    /// its record now and no request.
    fn prepare(&mut self, position: usize) -> Result<Vec<Option<Request>>> {
        let bytes = Arc::clone(&self.bytes);
        let line = &bytes[self.cases.cases[position].line.clone()];
        let mut fields = None;
        let mut out = Vec::with_capacity(self.lanes.len());
        for lane in 0..self.lanes.len() {
            if !self.lanes[lane].need[position] {
                out.push(None);
                continue;
            }
            let cached = match &self.lanes[lane].asker {
                Asker::Endpoint { endpoint, .. } => {
                    if fields.is_none() {
                        fields = Some(case_fields(line).unwrap_or_default());
                    }
                    let request = endpoint.request(fields.as_ref().expect("set"), line);
                    match endpoint.cached(position, &request) {
                        Some(done) => Some(done),
                        None => {
                            out.push(Some(request));
                            continue;
                        }
                    }
                }
                Asker::Workers(_) => self.cached_answer(lane, position),
            };
            match cached {
                Some(done) => {
                    self.lanes[lane].tally.cached += 1;
                    self.record(lane, done, None)?;
                    out.push(None);
                }
                None => out.push(Some(Request {
                    body: None,
                    key: String::new(),
                })),
            }
        }
        Ok(out)
    }

    /// A worker's cached answer to the case, read as a fresh one.
    fn cached_answer(&self, lane: usize, position: usize) -> Option<Done> {
        let l = &self.lanes[lane];
        let (cache, target) = (l.cache.as_ref()?, l.cache_target.as_ref()?);
        let line = &self.bytes[self.cases.cases[position].line.clone()];
        let entry = cache.get(&target.cache_key(None, line, 0))?;
        let reply = crate::run::parse_answer(&entry.body, &self.cases.cases[position].id).ok()?;
        match reply.answer {
            crate::run::Answer::Verdict(v) => Some(Done {
                position,
                outcome: Outcome::Verdict(v.get().to_owned()),
                latency_ms: Some(entry.latency_ms),
                usage: Usage::default(),
                attempts: Some(entry.attempts),
                metrics: reply.metrics,
                output: reply.output.map(Answered::Raw),
                cached: true,
            }),
            crate::run::Answer::Error(_) => None,
        }
    }

    fn send(&mut self, lane: usize, position: usize, request: Option<Request>, attempt: u32) -> Result<()> {
        let l = &mut self.lanes[lane];
        match &mut l.asker {
            Asker::Workers(pool) => {
                pool.send(self.cases, position);
                l.tally.asked += 1;
            }
            Asker::Endpoint {
                endpoint,
                limiter,
                in_flight,
            } => {
                let request = match request {
                    Some(r) => r,
                    None => {
                        let line = &self.bytes[self.cases.cases[position].line.clone()];
                        endpoint.request(&case_fields(line).unwrap_or_default(), line)
                    }
                };
                let number = limiter.sent();
                *in_flight += 1;
                if attempt == 1 {
                    l.tally.asked += 1;
                }
                let runtime = self.runtime.as_ref().expect("an endpoint run has a runtime").handle();
                endpoint.send(runtime, lane, number, position, request, attempt, self.events.clone());
            }
        }
        Ok(())
    }

    fn handle(&mut self, msg: Msg, waiting: bool) -> Result<()> {
        match msg {
            Msg::Worker(event) => {
                let lane = match &event {
                    worker::Event::Line { side, .. }
                    | worker::Event::TooLong { side, .. }
                    | worker::Event::Closed { side, .. } => *side,
                };
                let more = Self::more(waiting, &self.lanes[lane]);
                let Asker::Workers(pool) = &mut self.lanes[lane].asker else {
                    unreachable!("a worker event comes from a worker lane")
                };
                let effects = pool.handle(self.cases, event, more, &self.events, &self.progress)?;
                self.apply(lane, effects)?;
            }
            Msg::Cached {
                side,
                number,
                done,
                note,
            } => {
                self.progress.line(&format!("deploy-gate run: {note}"));
                return self.handle(
                    Msg::Done {
                        side,
                        number,
                        overload: false,
                        done,
                    },
                    waiting,
                );
            }
            Msg::Done {
                side,
                number,
                overload,
                done,
            } => {
                let answered = matches!(done.outcome, Outcome::Verdict(_)) || done.latency_ms.is_some();
                self.returned(side, number, overload, answered);
                let l = &mut self.lanes[side];
                if matches!(done.outcome, Outcome::Verdict(_)) {
                    l.tally.verdicts += 1;
                } else {
                    l.tally.request_errors += 1;
                }
                self.record(side, done, None)?;
            }
            Msg::Again {
                side,
                number,
                overload,
                position,
                request,
                attempt,
                wait,
            } => {
                self.returned(side, number, overload, false);
                let l = &mut self.lanes[side];
                l.tally.retries += 1;
                self.progress.retried(side);
                let seq = l.tally.retries;
                l.later.push(Later {
                    due: Instant::now() + wait,
                    seq,
                    position,
                    request,
                    attempt,
                });
            }
        }
        Ok(())
    }

    /// A try of model `side` came back: its slot is free, and the limit learns from it.
    fn returned(&mut self, side: usize, number: u64, overload: bool, answered: bool) {
        let l = &mut self.lanes[side];
        if overload {
            l.tally.overloads += 1;
        }
        if let Asker::Endpoint { limiter, in_flight, .. } = &mut l.asker {
            *in_flight -= 1;
            if overload {
                if limiter.overload(number) {
                    l.tally.cuts += 1;
                }
            } else if answered {
                limiter.success();
            }
        }
    }

    fn apply(&mut self, lane: usize, effects: Vec<Effect>) -> Result<()> {
        for effect in effects {
            match effect {
                Effect::Again(position) => self.lanes[lane].again.push_front(position),
                Effect::Record(done, kind) => {
                    let t = &mut self.lanes[lane].tally;
                    match kind {
                        Kind::Verdict => t.verdicts += 1,
                        Kind::WorkerError => t.worker_errors += 1,
                        Kind::Timeout => t.timeouts += 1,
                        Kind::Crash => t.crashes += 1,
                        Kind::Invalid => t.invalid += 1,
                    }
                    self.record(lane, done, Some(kind))?;
                }
            }
        }
        Ok(())
    }

    /// Writes a case's record (and, for a worker's verdict, caches it).
    fn record(&mut self, lane: usize, done: Done, kind: Option<Kind>) -> Result<()> {
        let l = &mut self.lanes[lane];
        let id = &self.cases.cases[done.position].id;
        let mut line = Vec::new();
        let record = match &done.outcome {
            Outcome::Verdict(v) => Record::Verdict(v),
            Outcome::Error(e) => Record::Error(e),
        };
        // A worker program's run (`-- PROGRAM`) writes its records as it always has, with the
        // metrics its worker gave.
        let cost = match &l.target {
            None => Cost {
                metrics: done.metrics.as_deref(),
                ..Cost::default()
            },
            Some(target) => Cost {
                latency_ms: done.latency_ms,
                prompt_tokens: done.usage.prompt_tokens,
                completion_tokens: done.usage.completion_tokens,
                attempts: done.attempts,
                metrics: done.metrics.as_deref(),
                target: Some(target),
            },
        };
        let output = l.keep_outputs.zip(done.output.as_ref()).map(|(max, a)| a.bounded(max));
        write_record_kept(&mut line, id, record, output.as_ref(), &cost);
        if kind == Some(Kind::Verdict) && !done.cached {
            if let (Some(cache), Some(target), Outcome::Verdict(v)) = (&l.cache, &l.cache_target, &done.outcome) {
                let case_line = &self.bytes[self.cases.cases[done.position].line.clone()];
                let entry = super::cache::Entry {
                    latency_ms: done.latency_ms.unwrap_or(0.0),
                    attempts: 1,
                    body: {
                        // The worker's answer as it gave it (its output unbounded: the bound is
                        // the run's, applied when a record is written), its output only when
                        // the run keeps outputs (--no-outputs: answers are written nowhere).
                        let mut body = format!("{{\"verdict\":{v}");
                        if let (Some(Answered::Raw(o)), Some(_)) = (&done.output, l.keep_outputs) {
                            body.push_str(",\"output\":");
                            body.push_str(o.get());
                        }
                        if let Some(m) = &done.metrics {
                            body.push_str(",\"metrics\":");
                            body.push_str(m);
                        }
                        body.push('}');
                        body.into_bytes()
                    },
                };
                if let Err(e) = cache.put(&target.cache_key(None, case_line, 0), &entry) {
                    self.progress
                        .line(&format!("deploy-gate run: cannot write the cache: {e}"));
                }
            }
        }
        l.need[done.position] = false;
        l.tally.errored += u64::from(matches!(done.outcome, Outcome::Error(_)));
        l.output
            .append(done.position, String::from_utf8(line).expect("a record is UTF-8"))?;
        self.progress.case_done(lane, matches!(done.outcome, Outcome::Error(_)));
        Ok(())
    }
}

/// The cases in a seeded random order (the same seed, the same order).
pub fn shuffled(n: usize, seed: u64) -> Vec<usize> {
    use rand_chacha::rand_core::{RngCore, SeedableRng};
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(seed);
    let mut order: Vec<usize> = (0..n).collect();
    for i in (1..n).rev() {
        let j = (rng.next_u64() % (i as u64 + 1)) as usize;
        order.swap(i, j);
    }
    order
}
