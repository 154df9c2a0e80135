//! deploy-gate: gates the deployment of a retrained agent model.
//!
//! The core is sans-IO: bytes are pushed in and values come out. Nothing in this library opens
//! files, reads a clock or draws entropy; the CLI (`src/bin/deploy-gate/`) and the wasm shell
//! (`wasm`) do that and pass the results in, through one [`session::Session`]. The one
//! exception is [`native`] (not built for wasm): the file reading native shells share.
//!
//! The gate policy (types, defaults, parsing from every source, validation) is in [`policy`].
//!
//! The flow: [`audit`] scans the audit log (pass 1, in segments that can run in parallel; lines
//! read through [`json`], whose fast path takes the lines a writer produces) into an index with
//! one record per pipeline; [`testset`] chooses the cases and builds them from just their
//! pipelines' spans (pass 2); [`verdicts`] and [`trajectory`] read the models' results
//! ([`cost`]: what each verdict's call cost, when its record says);
//! [`scoring`], [`stats`] and [`decision`] score and decide; [`report`] assembles the
//! GateReport; [`attest`] signs and verifies the decision; [`deploy`] edits the serving config.
//! [`render`] writes the report as a Markdown summary and as JUnit XML for CI systems.
//! [`oms`] verifies the trainer's OpenSSF Model Signing signature over the model's files.
//! [`diff`] compares two evaluations (reports or signed decisions), case by case.
//! [`run`] is the pure part of running a model (the worker protocol, its records, resuming, the
//! answers of a run in memory made verdict records); its engine is [`native`]'s `run`.
//! Every input file has a [`Role`] ([`input`]); [`sniff`](mod@sniff) guesses it for the page.
//!
//! The types a user of the library needs are re-exported here at the root.
#![deny(missing_docs)]

pub mod attest;
pub mod audit;
pub mod compat;
pub mod cost;
pub mod decision;
#[cfg(not(target_arch = "wasm32"))]
pub mod deploy;
pub mod diff;
#[cfg(not(target_arch = "wasm32"))]
pub mod endpoint;
pub mod gate;
pub mod guardrail;
pub mod input;
pub mod json;
pub mod lines;
#[cfg(not(target_arch = "wasm32"))]
pub mod native;
pub mod oms;
mod parallel;
pub mod policy;
/// Reports for people and CI systems: the standalone HTML report, the Markdown summary, JUnit XML.
pub mod render;
pub mod report;
pub mod run;
pub mod scoring;
pub mod sequential;
pub mod session;
pub mod sniff;
pub mod stats;
pub mod testset;
pub mod trajectory;
pub mod verdicts;
#[cfg(target_arch = "wasm32")]
pub mod wasm;

// The public API at the crate root: the types a user of the library needs.
pub use audit::{scan_all, AuditIndex, AuditScanner, AuditSummary, IndexBuilder, PipelineId, Segment, WireError};
/// The endpoint files: [`endpoint`], by its earlier name.
#[cfg(not(target_arch = "wasm32"))]
#[doc(hidden)]
pub use endpoint as target;
pub use gate::{evaluate_in_memory, scan_audit, test_set_in_memory, MemoryInputs, NamedBytes};
pub use input::{InputError, InputFile, Role, Side, UnknownRole};
pub use json::{NotObject, PyText, Scalar, ValueError, ValueSink};
pub use policy::{
    GatePolicy, Mode, OnInsufficient, PassSet, PolicyChange, PolicyError, PolicyFileError, PolicyInput, TestSetPolicy,
};
pub use report::{evaluate, GateInputs, GateReport};
/// The answers of a model run in memory made verdict records: [`run::records`], by its
/// earlier name.
#[doc(hidden)]
pub use run::records as runs;
pub use session::{Session, SessionError};
pub use sniff::{sniff, Guess};
pub use testset::{TestSet, TestSetBuilder, TestSetError};
pub use trajectory::{parse_trajectories, Trajectories};
pub use verdicts::{
    parse_verdicts, parse_verdicts_keeping, parse_verdicts_keeping_with_progress, KeepSet, VerdictFormat, Verdicts,
};
