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
//! read through the fast path of [`skim`]) into an index with one record per pipeline;
//! [`testset`] chooses the cases and builds them from just their pipelines' spans (pass 2); [`verdicts`] and [`trajectory`] read the models' results; [`scoring`], [`stats`]
//! and [`decision`] score and decide; [`report`] assembles the GateReport; [`attest`] signs and
//! verifies the decision; [`deploy`] edits the serving config.
#![deny(missing_docs)]

pub mod attest;
pub mod audit;
pub mod compat;
pub mod decision;
#[cfg(not(target_arch = "wasm32"))]
pub mod deploy;
pub mod error;
pub mod gate;
pub mod json;
pub mod lines;
#[cfg(not(target_arch = "wasm32"))]
pub mod native;
mod parallel;
pub mod policy;
pub mod report;
pub mod scoring;
pub mod session;
pub mod skim;
pub mod sniff;
pub mod stats;
pub mod testset;
pub mod trajectory;
pub mod verdicts;
#[cfg(target_arch = "wasm32")]
pub mod wasm;
