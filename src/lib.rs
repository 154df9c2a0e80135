//! deploy-gate: gates the deployment of a retrained agent model.
//!
//! The core is sans-IO: bytes are pushed in and values come out. Nothing in this library opens
//! files, reads a clock or draws entropy; the shells do that and pass the results in, through
//! one [`session::Session`]: `native` (the file reading native shells share, the deploy step,
//! the run engine), `cli` (the `deploy-gate` command) and `wasm` (the JS API).
//!
//! # Features
//!
//! - `native` (native builds only): the `native` layer, with its HTTP client, TLS, tokio, the
//!   memory map and gzip.
//! - `cli` (default; implies `native`): the `deploy-gate` command, `cli::main` with clap and
//!   the progress bar, which the binary and the Python package's console script both run.
//!
//! Without default features the library is the sans-IO core (and, natively, the `deploy` and
//! `endpoint` readers): what the fuzz targets build.
//!
//! # Layers
//!
//! The modules sit in seven layers, bottom to top; a module imports from its own layer and the
//! ones below, and no two files import each other, directly or round a loop (`tests/it/layers.rs`
//! holds this table and checks both; at most 10 imports may point upward, each one listed when
//! it runs, and `docs/architecture.md` draws it):
//!
//! 1. **inputs**, bytes into values: [`input`] (the files' roles and errors), [`lines`],
//!    [`compat`] (the reference's numeric and string rules), [`json`] (reading JSON lines, and
//!    numbers as JavaScript writes them, `json::number`), `parallel`, [`audit`] (pass 1: the
//!    audit log scanned into an index), [`policy`] (the gate policy's one home: types, defaults,
//!    parsing from every source, validation, the guardrails' fields), `attest::jcs` and
//!    `attest::strict` (the canonical and the strict JSON a policy's digest and files use),
//!    `attest::time` (RFC 3339 times), [`testset`] (the cases chosen and built, pass 2),
//!    [`sniff`](mod@sniff) (a file's likely [`Role`] for the page), [`review`] (a reviewer's
//!    marks on cases, `deploy-gate/review/v1`, and what a signed decision pins of them).
//! 2. **evidence**, what the models did: [`verdicts`] (verdict files), [`cost`] (what each
//!    verdict's call cost, when its record says), [`trajectory`], and the run concept's pure
//!    part: [`run`] (the worker protocol, its records, resuming, and the answers of a run in
//!    memory as verdict records) and `endpoint` (the endpoint files `run` asks models through).
//! 3. **decision**: [`scoring`], [`stats`], [`decision`] (the policy's rule, its outcome and the
//!    [`decision::Rules`] a report is made under), [`sequential`] (the sequential rule),
//!    [`guardrail`].
//! 4. **report**: [`report`] (the GateReport), [`session`] (one evaluation as a state machine
//!    every shell drives), [`gate`] (one call for inputs in memory).
//! 5. **attest/deploy**: [`attest`] (the decision signed and verified), [`oms`] (the trainer's
//!    OpenSSF Model Signing signature), `deploy` (the serving config edited), [`diff`] (two
//!    evaluations compared, reports or signed decisions read through the verifier).
//! 6. **renderings**: [`render`] (the standalone HTML report, the Markdown summary, JUnit XML,
//!    the diff's renderings).
//! 7. **shells**: `native` (not built for wasm: the file reading native shells share, the
//!    deploy step, and the engine that runs models, `native::run`), `cli` (the `deploy-gate`
//!    command: flags mapped onto `native` and the layers below, and what it prints) and `wasm`
//!    (the JS API); outside the library, the binary (`src/bin/deploy-gate/`, which calls
//!    `cli::main`) and the Python extension (`python/src/`), which only map values onto these.
//!
//! The types a user of the library needs are re-exported here at the root.
#![deny(missing_docs)]

pub mod attest;
pub mod audit;
#[cfg(all(not(target_arch = "wasm32"), feature = "cli"))]
pub mod cli;
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
#[cfg(all(not(target_arch = "wasm32"), feature = "native"))]
pub mod native;
pub mod oms;
mod parallel;
pub mod policy;
/// Reports for people and CI systems: the standalone HTML report, the Markdown summary, JUnit XML.
pub mod render;
pub mod report;
pub mod review;
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
