//! The messages of a run: what worker threads and request tasks send the thread that runs
//! (one channel), and a case's outcome. Their own module, below the engine and the askers, so
//! that the askers need not know the engine.

use super::worker;
use crate::endpoint::response::Usage;
use crate::run::records::Answered;
use std::time::Duration;

/// A message to the thread that runs.
pub enum Msg {
    /// A worker's stdout.
    Worker(worker::Event),
    /// A request's last try: the case's outcome (`overload`: it met a 429, a 503 or a timeout).
    Done {
        side: usize,
        number: u64,
        overload: bool,
        done: Done,
    },
    /// An answer that could not be cached (a note for stderr), with the case's outcome.
    Cached {
        side: usize,
        number: u64,
        done: Done,
        note: String,
    },
    /// A try failed and the case is tried again after `wait`, holding no slot meanwhile.
    Again {
        side: usize,
        number: u64,
        overload: bool,
        position: usize,
        request: Request,
        attempt: u32,
        wait: Duration,
    },
}

impl From<worker::Event> for Msg {
    fn from(e: worker::Event) -> Msg {
        Msg::Worker(e)
    }
}

/// What was sent for a case, kept for the cache.
pub struct Request {
    /// The body's bytes.
    pub body: Option<Vec<u8>>,
    /// The cache key.
    pub key: String,
}

/// What a case's ask gave.
#[derive(Debug, Clone, PartialEq)]
pub enum Outcome {
    /// A verdict, as its JSON text.
    Verdict(String),
    /// An error's message.
    Error(String),
}

/// A case's outcome and what it cost.
#[derive(Debug, Clone)]
pub struct Done {
    pub position: usize,
    pub outcome: Outcome,
    pub latency_ms: Option<f64>,
    pub usage: Usage,
    pub attempts: Option<u32>,
    /// The `metrics` a worker answered with, as the record's JSON text.
    pub metrics: Option<String>,
    /// What the model answered, before the lane bounds it (`output`).
    pub output: Option<Answered>,
    /// Read from the cache: no call was made.
    pub cached: bool,
}

/// What a worker event means for the run.
pub enum Effect {
    /// A case has its outcome.
    Record(Done, Kind),
    /// A case goes back to the front of the queue (its worker crashed; it is tried again).
    Again(usize),
}

/// How a case's record came to be, for the summary.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Verdict,
    WorkerError,
    Timeout,
    Crash,
    Invalid,
}
