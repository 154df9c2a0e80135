//! Running a model, the pure part (the engine that runs the processes and the requests is
//! `native::run`, its one native counterpart): the worker protocol, the test set read
//! as cases, the records written for each case and resuming an output an earlier run left
//! ([`protocol`], whose items are re-exported here), and the answers of a run in memory made
//! verdict records ([`records`]). The endpoint files that say how to ask a model are
//! [`crate::endpoint`].

pub mod protocol;
pub mod records;

pub use protocol::{
    describe_id, parse_answer, read_cases, read_resume, record_line, test_set_of, Answer, BadAnswer, Case, Cases,
    Reply, Resumed, RunFileError,
};
