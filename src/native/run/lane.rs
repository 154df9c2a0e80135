//! One model of a run (a "lane"): its output file, how it is asked, what waits to be sent to
//! it, and its counts.

use super::cache::Cache;
use super::command::Pool;
use super::http::Client;
use super::msg::Request;
use super::output::Output;
use super::progress::Tally;
use crate::endpoint::control::Limiter;
use crate::endpoint::Endpoint;
use std::collections::{BinaryHeap, VecDeque};
use std::sync::Arc;
use std::time::Instant;

/// A try waiting for its time, in the order of that time.
pub struct Later {
    pub due: Instant,
    pub seq: u64,
    pub position: usize,
    pub request: Request,
    pub attempt: u32,
}

impl PartialEq for Later {
    fn eq(&self, other: &Self) -> bool {
        (self.due, self.seq) == (other.due, other.seq)
    }
}
impl Eq for Later {}
impl PartialOrd for Later {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}
impl Ord for Later {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        // The soonest first in a max-heap.
        (other.due, other.seq).cmp(&(self.due, self.seq))
    }
}

/// How a model is asked.
pub enum Asker {
    /// Worker programs.
    Workers(Pool),
    /// An endpoint, under its adaptive limit.
    Endpoint {
        endpoint: Arc<Client>,
        limiter: Limiter,
        in_flight: usize,
    },
}

/// One model of the run.
pub struct Lane {
    /// `old`, `new`; empty in a one-model run.
    pub name: String,
    pub output: Output,
    pub asker: Asker,
    /// The endpoint file's digest, written in each record (`None` for `-- PROGRAM`).
    pub target: Option<String>,
    /// Cases that need a record from this model.
    pub need: Vec<bool>,
    /// Cases to send again (a worker crashed on them), before the next of the queue.
    pub again: VecDeque<usize>,
    /// Requests to try again once their wait is over (they hold no slot while they wait).
    pub later: BinaryHeap<Later>,
    pub tally: Tally,
    /// The cache, for worker answers (an endpoint keeps its own).
    pub cache: Option<Cache>,
    /// The command's argv, for its cache key.
    pub cache_target: Option<Arc<Endpoint>>,
    /// The most bytes of an answer a record keeps (`output`); `None`: none is kept.
    pub keep_outputs: Option<usize>,
}
