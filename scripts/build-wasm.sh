#!/usr/bin/env bash
# Builds the JS/wasm package into pkg/ (wasm-pack, target web, release, wasm-opt).
set -euo pipefail
cd "$(dirname "$0")/.."
wasm-pack build --target web --out-dir pkg --release
rm -f pkg/.gitignore
