#!/usr/bin/env bash
# Installs what the build and the tests need, skipping what is already there (idempotent).
# Works on a fresh Debian machine with Rust, Node and apt. Usage: scripts/setup.sh
set -euo pipefail
cd "$(dirname "$0")/.."

log() { printf 'setup: %s\n' "$*" >&2; }

if ! rustup target list --installed | grep -qx wasm32-unknown-unknown; then
  log "adding the wasm32-unknown-unknown target"
  rustup target add wasm32-unknown-unknown
fi
if ! rustup component list --installed | grep -q '^clippy'; then
  rustup component add clippy
fi
if ! rustup component list --installed | grep -q '^rustfmt'; then
  rustup component add rustfmt
fi
