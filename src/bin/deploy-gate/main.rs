//! The `deploy-gate` binary: the library's command ([`deploy_gate::cli::main`]) with the
//! process's arguments. Under wasm32 (where the tests of the JS API are built) an empty program.

#[cfg(not(target_arch = "wasm32"))]
fn main() -> std::process::ExitCode {
    std::process::ExitCode::from(deploy_gate::cli::main(std::env::args_os()))
}

#[cfg(target_arch = "wasm32")]
fn main() {}
