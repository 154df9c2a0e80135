#!/usr/bin/env bash
# Runs every test: formatting, lints, the wasm32 build, unit, integration and parity tests.
# Installs what is missing first (scripts/setup.sh). Usage: scripts/test.sh
set -euo pipefail
cd "$(dirname "$0")/.."

scripts/setup.sh

step() { printf '\n== %s\n' "$*" >&2; }

step "cargo fmt --check"
cargo fmt --check

step "cargo clippy (all targets, warnings are errors)"
cargo clippy --all-targets -- -D warnings

step "the library builds for wasm32-unknown-unknown"
cargo build --lib --target wasm32-unknown-unknown

step "cargo test (unit, integration, parity, property tests)"
cargo test --all-targets

step "all tests passed"
