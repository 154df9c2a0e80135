#!/usr/bin/env bash
# Builds the JS/wasm package into pkg/ (or into $DEPLOY_GATE_PKG_DIR: the test command builds it
# apart and compares it with the committed pkg/): the crate for wasm32 (release), its bindings for the web
# (wasm-bindgen-cli, the version in Cargo.lock, which the wasm-bindgen tests need anyway), wasm-opt
# -O, then the package's own files. These are the steps `wasm-pack build --target web --release`
# ran for this crate, with the same output byte for byte; the test command no longer compiles
# wasm-pack only to run them.
#
# The build is reproducible: the same source and toolchain give the same pkg/ bytes whatever the
# checkout's path, the cargo home or the rustup home. Panic locations in the module name the
# dependencies' files, which live under the cargo home (~/.cargo/registry/src/…); every such
# prefix is remapped to a fixed name with --remap-path-prefix. The flags are added through
# `--config`, which cargo joins with the wasm32 rustflags of .cargo/config.toml (+simd128)
# instead of replacing them as RUSTFLAGS would.
set -euo pipefail
cd "$(dirname "$0")/.."

src_dir=$(pwd)
cargo_home=${CARGO_HOME:-$HOME/.cargo}
rustup_home=${RUSTUP_HOME:-$HOME/.rustup}
target_dir=${CARGO_TARGET_DIR:-$src_dir/target}
out=${DEPLOY_GATE_PKG_DIR:-pkg}
case $out in /*) ;; *) out=$src_dir/$out ;; esac # a relative folder is the checkout's
# The folder is emptied first: only pkg/, a folder in the target folder, or one that does not
# exist yet.
out=$(realpath -m -- "$out")
case $out in
  "$(realpath -m -- "$src_dir/pkg")" | "$(realpath -m -- "$target_dir")"/?*) ;;
  *) [ ! -e "$out" ] || { echo "build-wasm.sh: DEPLOY_GATE_PKG_DIR=$out exists and is neither pkg/ nor in $target_dir: not emptied" >&2; exit 1; } ;;
esac
export DEPLOY_GATE_PKG_DIR=$out # for scripts/build-package.mjs and scripts/build-single.mjs

# rustc applies the last matching --remap-path-prefix, so the broadest prefix comes first.
flags=()
remap() { # remap PATH NAME: the path as given and, if it differs, as resolved
  local name=$2 p paths=("$1")
  [ "$(realpath -m -- "$1")" = "$1" ] || paths+=("$(realpath -m -- "$1")")
  for p in "${paths[@]}"; do
    case $p in *\'*) echo "build-wasm.sh: cannot remap a path with a quote: $p" >&2; exit 1 ;; esac
    flags+=("'--remap-path-prefix=$p=$name'")
  done
}
remap "$src_dir" /deploy-gate
remap "$cargo_home" /cargo
remap "$rustup_home" /rustup
remap "$target_dir" /target
rustflags=$(IFS=,; echo "${flags[*]}")

# Without debug information (the release profile's `debug = 1` is for the CLI's backtraces):
# wasm-bindgen drops it from the module anyway, and compiling it cost 39 processor seconds of the
# package's build (docs/test-command.md).
compile() {
  cargo build --lib --release --target wasm32-unknown-unknown \
    --config "target.wasm32-unknown-unknown.rustflags=[$rustflags]" --config profile.release.debug=0
}
# `--compile-only`: the crate's compile alone, which needs neither tool (the test command runs it
# while wasm-bindgen-cli is still being installed; the full build then finds it done).
if [ "${1:-}" = --compile-only ]; then
  compile
  exit 0
fi

for tool in wasm-bindgen wasm-opt; do
  command -v "$tool" >/dev/null || { echo "build-wasm.sh: $tool is not on PATH (scripts/setup.sh installs it)" >&2; exit 1; }
done
lock_version=$(awk '/^name = "wasm-bindgen"$/ { getline; gsub(/version = |"/, ""); print; exit }' Cargo.lock)
bindgen_version=$(wasm-bindgen --version | awk '{ print $2 }')
if [ "$bindgen_version" != "$lock_version" ]; then
  echo "build-wasm.sh: wasm-bindgen $bindgen_version is on PATH, Cargo.lock has $lock_version (scripts/setup.sh installs it)" >&2
  exit 1
fi

compile
rm -rf "$out"
wasm-bindgen "$target_dir/wasm32-unknown-unknown/release/deploy_gate.wasm" --out-dir "$out" --typescript --target web
wasm-opt "$out/deploy_gate_bg.wasm" -o "$out/deploy_gate_bg.wasm-opt.wasm" -O
mv "$out/deploy_gate_bg.wasm-opt.wasm" "$out/deploy_gate_bg.wasm"
# npm shows pkg/README.md: the package's own.
cp www/npm-readme.md "$out/README.md"

# The rest of the npm package: package.json (name, version and licence from Cargo.toml), the licence
# texts, the viewer element with its workers, styles and types in
# pkg/viewer/, package.json's exports map (scripts/build-package.mjs), and the single-file
# viewer pkg/deploy-gate-viewer.html (scripts/build-single.mjs, bundled with esbuild from
# tests/e2e's npm packages).
if [ ! -d tests/e2e/node_modules/esbuild ]; then
  echo "build-wasm.sh: installing tests/e2e's npm packages (esbuild bundles the single-file viewer)" >&2
  (cd tests/e2e && npm ci --no-audit --no-fund)
fi
node scripts/build-package.mjs
node scripts/build-single.mjs "$out/deploy-gate-viewer.html"
