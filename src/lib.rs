//! deploy-gate: gates the deployment of a retrained agent model.
//!
//! The core is sans-IO: bytes are pushed in and values come out. Nothing in this library opens
//! files, reads a clock or draws entropy; the CLI (`src/bin/deploy-gate.rs`) and the wasm shell
//! do that and pass the results in.
#![deny(missing_docs)]

pub mod attest;
pub mod audit;
pub mod compat;
pub mod decision;
pub mod deploy;
pub mod error;
pub mod gate;
pub mod json;
pub mod lines;
pub mod report;
pub mod scoring;
pub mod sniff;
pub mod stats;
pub mod testset;
pub mod trajectory;
pub mod verdicts;
#[cfg(target_arch = "wasm32")]
pub mod wasm;
