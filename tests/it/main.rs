//! The integration tests, one binary (`cargo test --test it`): one module per subject, and the
//! helpers they share in `common` (a temporary directory, the `deploy-gate` runner, readable
//! output and diffs). Tests share this process: anything process-wide (resource limits, signal
//! dispositions, the environment, the current directory) is changed only in a child process.
//! The wasm-bindgen tests are `tests/wasm.rs` (run by scripts/test.sh with wasm-bindgen-test-runner).

#[cfg(not(target_arch = "wasm32"))]
mod common;

#[cfg(all(unix, not(target_arch = "wasm32")))]
mod apply_cli;
#[cfg(all(unix, not(target_arch = "wasm32")))]
mod attack;
#[cfg(not(target_arch = "wasm32"))]
mod attest;
#[cfg(not(target_arch = "wasm32"))]
mod bounds;
#[cfg(not(target_arch = "wasm32"))]
mod chunking;
#[cfg(not(target_arch = "wasm32"))]
mod ci_outputs;
#[cfg(not(target_arch = "wasm32"))]
mod cli;
#[cfg(not(target_arch = "wasm32"))]
mod compat;
#[cfg(not(target_arch = "wasm32"))]
mod cost;
#[cfg(all(unix, not(target_arch = "wasm32")))]
mod diff_cli;
#[cfg(not(target_arch = "wasm32"))]
mod evidence;
#[cfg(not(target_arch = "wasm32"))]
mod guardrail_known_answers;
#[cfg(not(target_arch = "wasm32"))]
mod guardrails;
#[cfg(not(target_arch = "wasm32"))]
mod guardrails_render;
#[cfg(not(target_arch = "wasm32"))]
mod html_report;
#[cfg(not(target_arch = "wasm32"))]
mod ids;
#[cfg(not(target_arch = "wasm32"))]
mod known_answers;
#[cfg(not(target_arch = "wasm32"))]
mod layers;
#[cfg(all(unix, not(target_arch = "wasm32")))]
mod mlflow_cli;
#[cfg(not(target_arch = "wasm32"))]
mod numbers;
#[cfg(all(unix, not(target_arch = "wasm32")))]
mod oms;
#[cfg(all(unix, not(target_arch = "wasm32")))]
mod oms_keyless;
#[cfg(all(unix, not(target_arch = "wasm32")))]
mod outcomes;
#[cfg(not(target_arch = "wasm32"))]
mod outputs;
#[cfg(not(target_arch = "wasm32"))]
mod parity;
#[cfg(not(target_arch = "wasm32"))]
mod policy_cli;
#[cfg(not(target_arch = "wasm32"))]
mod positions;
#[cfg(not(target_arch = "wasm32"))]
mod rules;
#[cfg(all(unix, not(target_arch = "wasm32")))]
mod run_cli;
#[cfg(all(unix, not(target_arch = "wasm32")))]
mod run_endpoint_name;
#[cfg(all(unix, not(target_arch = "wasm32")))]
mod run_endpoints;
#[cfg(all(unix, not(target_arch = "wasm32")))]
mod run_llama;
#[cfg(all(unix, not(target_arch = "wasm32")))]
mod run_tls;
#[cfg(not(target_arch = "wasm32"))]
mod sequential_cli;
#[cfg(not(target_arch = "wasm32"))]
mod sequential_known_answers;
#[cfg(not(target_arch = "wasm32"))]
mod sign_cli;
#[cfg(not(target_arch = "wasm32"))]
mod sigstore_conformance;
#[cfg(not(target_arch = "wasm32"))]
mod spans;
#[cfg(not(target_arch = "wasm32"))]
mod stats;
#[cfg(not(target_arch = "wasm32"))]
mod verify_cli;
#[cfg(not(target_arch = "wasm32"))]
mod yaml_oracle;
