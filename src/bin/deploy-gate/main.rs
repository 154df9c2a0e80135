//! The `deploy-gate` command. Native only: under wasm32 (where the tests of the JS API are
//! built) it is an empty program.

#[cfg(not(target_arch = "wasm32"))]
mod apply;
#[cfg(not(target_arch = "wasm32"))]
mod cli;
#[cfg(not(target_arch = "wasm32"))]
mod files;
#[cfg(not(target_arch = "wasm32"))]
mod sign;

#[cfg(not(target_arch = "wasm32"))]
fn main() -> std::process::ExitCode {
    cli::main()
}

#[cfg(target_arch = "wasm32")]
fn main() {}
