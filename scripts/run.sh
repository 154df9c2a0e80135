#!/usr/bin/env bash
# The main job: builds the wasm package and serves the page on 127.0.0.1 (the bundled example
# is one click away: "Load example"). Usage: scripts/run.sh [PORT]   (default 8000)
set -euo pipefail
cd "$(dirname "$0")/.."

scripts/setup.sh
scripts/build-wasm.sh
cargo build --release --bins
exec node scripts/serve.mjs "${1:-${PORT:-8000}}"
