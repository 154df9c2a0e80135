#!/usr/bin/env bash
# Builds the JS/wasm package into pkg/ (wasm-pack, target web, release, wasm-opt).
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

# A fresh pkg/: wasm-pack lists in package.json the license files it finds there already, so
# an old pkg/ would change the output.
rm -rf pkg
wasm-pack build --target web --out-dir pkg --release -- \
  --config "target.wasm32-unknown-unknown.rustflags=[$rustflags]"
rm -f pkg/.gitignore
# npm shows pkg/README.md; wasm-pack copies the repository's README.md there, replace it with the
# package's own.
cp www/npm-readme.md pkg/README.md

# The rest of the npm package: the viewer element with its workers, styles and types in
# pkg/viewer/, package.json's exports map (scripts/build-package.mjs), and the single-file
# viewer pkg/deploy-gate-viewer.html (scripts/build-single.mjs, bundled with esbuild from
# tests/e2e's npm packages).
if [ ! -d tests/e2e/node_modules/esbuild ]; then
  echo "build-wasm.sh: installing tests/e2e's npm packages (esbuild bundles the single-file viewer)" >&2
  (cd tests/e2e && npm ci --no-audit --no-fund)
fi
node scripts/build-package.mjs
node scripts/build-single.mjs pkg/deploy-gate-viewer.html
