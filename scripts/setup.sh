#!/usr/bin/env bash
# Installs what the build and the tests need, skipping what is already there (idempotent):
# the wasm32 target, clippy and rustfmt, wasm-bindgen-cli (the version in
# Cargo.lock: scripts/build-wasm.sh and the wasm-bindgen tests' runner), wasm-opt (npm binaryen: Debian's crashes at load), Debian's Chromium and
# ChromeDriver, python3-venv (the Python package's tests), PyYAML (the config-edit oracle), junitparser and markdown-it-py (readers of the CI outputs), the e2e tests' npm packages (playwright-core; typescript for the type check; esbuild, which bundles the single-file viewer and builds the consumer project of tests/e2e/consumer.test.mjs; Vite, which builds the portal of tests/e2e/vite-portal.test.mjs) and cargo-fuzz
# (scripts/fuzz.sh). Needs Rust, Node, Python and apt (as root, or sudo).
set -euo pipefail
cd "$(dirname "$0")/.."

BINARYEN_VERSION=132.0.0

log() { printf 'setup: %s\n' "$*" >&2; }

# What to install: everything (default); `--tools` only the programs compiled from crates.io
# (cargo-fuzz, then wasm-bindgen-cli), or one of them (`--tool-fuzz`, `--tool-bindgen`);
# `--no-tools` all the rest. The test command runs `--no-tools` first and each tool beside its
# first builds (cargo-fuzz is needed from the fuzz step on, wasm-bindgen-cli after the wasm
# package's compile).
what=${1:-all}
case $what in all | --tools | --tool-fuzz | --tool-bindgen | --no-tools) ;; *) printf 'setup: usage: scripts/setup.sh [--tools | --tool-fuzz | --tool-bindgen | --no-tools]\n' >&2; exit 2 ;; esac
want() { # fuzz | bindgen | rest
  case $what in
    all) true ;;
    --tools) [ "$1" != rest ] ;;
    --tool-fuzz) [ "$1" = fuzz ] ;;
    --tool-bindgen) [ "$1" = bindgen ] ;;
    --no-tools) [ "$1" = rest ] ;;
  esac
}

# The tools are built for a short compile, not for speed: without LTO, with 16 codegen units and
# opt-level 0 (they run for seconds in the test command, and compiling them was most of a new
# machine's setup: at opt-level 1 wasm-bindgen-cli took 292 processor seconds and cargo-fuzz 85,
# at 0 129 and 42; docs/test-command.md), into one target folder, so that the dependencies they
# share are compiled once.
cargo_install() {
  local dir=${CARGO_INSTALL_TARGET_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/deploy-gate/cargo-install}
  CARGO_PROFILE_RELEASE_LTO=false CARGO_PROFILE_RELEASE_CODEGEN_UNITS=16 \
    CARGO_PROFILE_RELEASE_OPT_LEVEL=0 CARGO_PROFILE_RELEASE_DEBUG=0 CARGO_PROFILE_RELEASE_INCREMENTAL=false \
    cargo install --target-dir "$dir" "$@"
}
fail() { printf 'setup: error: %s\n' "$*" >&2; exit 1; }
as_root() { if [ "$(id -u)" = 0 ]; then "$@"; else sudo "$@"; fi; }

# (Not for the tools alone: the test command installs them beside `--no-tools`, and two rustups
# adding the same component at once would race.)
if want rest; then
  rustup target list --installed | grep -qx wasm32-unknown-unknown || { log "adding the wasm32 target"; rustup target add wasm32-unknown-unknown; }
  rustup component list --installed | grep -q '^clippy' || rustup component add clippy
  rustup component list --installed | grep -q '^rustfmt' || rustup component add rustfmt
fi

if want fuzz && ! cargo fuzz --version >/dev/null 2>&1; then
  log "installing cargo-fuzz (scripts/fuzz.sh)"
  cargo_install cargo-fuzz --locked || fail "cannot install cargo-fuzz"
fi

if want bindgen; then
  WB=$(awk '/^name = "wasm-bindgen"$/ { getline; gsub(/version = |"/, ""); print; exit }' Cargo.lock)
  [ -n "$WB" ] || fail "no wasm-bindgen version in Cargo.lock"
  if ! wasm-bindgen --version 2>/dev/null | grep -q " $WB\$"; then
    log "installing wasm-bindgen-cli $WB"
    # Without its default feature (TLS for the test runner's downloads, ring and rustls compiled):
    # the runner talks to a ChromeDriver on localhost, and nothing is downloaded.
    if ! cargo_install wasm-bindgen-cli --version "$WB" --locked --no-default-features; then
      cargo_install wasm-bindgen-cli --version "$WB" --no-default-features || fail "cannot install wasm-bindgen-cli $WB"
    fi
  fi
fi

if want rest; then
  if dpkg -s binaryen >/dev/null 2>&1; then
    log "removing Debian's binaryen (its wasm-opt makes modules that crash at load)"
    as_root apt-get remove -y binaryen
  fi
  if ! wasm-opt --version 2>/dev/null | grep -q "version ${BINARYEN_VERSION%%.*}"; then
    log "installing wasm-opt (npm binaryen $BINARYEN_VERSION)"
    as_root npm install -g --prefix /usr/local "binaryen@$BINARYEN_VERSION"
  fi

  if [ ! -x /usr/bin/chromium ] || [ ! -x /usr/bin/chromedriver ]; then
    log "installing Debian's chromium and chromium-driver"
    as_root apt-get update
    as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y chromium chromium-driver
  fi

  if ! command -v strace >/dev/null; then
    log "installing strace (tests/it/apply_cli.rs counts the writes of a ledger entry with it)"
    as_root apt-get update
    as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y strace
  fi

  if ! command -v nginx >/dev/null && [ ! -x /usr/sbin/nginx ]; then
    log "installing nginx (tests/it/run_tls.rs: run against a TLS server speaking HTTP/2; scripts/bench-endpoints.sh)"
    as_root apt-get update
    as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y nginx-light
  fi

  if ! dpkg -s libboost-dev >/dev/null 2>&1; then
    log "installing libboost-dev (confseq's C++ extension: the sequential decisions' known answers)"
    as_root apt-get update
    as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y libboost-dev
  fi

  if ! command -v openssl >/dev/null; then
    log "installing openssl (the signing tests check interoperability with it)"
    as_root apt-get update
    as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y openssl
  fi

  # A Python package for the tests: pip for this python3; on a Debian python3 that refuses pip
  # (PEP 668, "externally managed"), into the user's site-packages.
  pip_install() {
    if ! python3 -m pip --version >/dev/null 2>&1; then
      as_root apt-get update
      as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y python3-pip
    fi
    python3 -m pip install "$@" 2>/dev/null \
      || python3 -m pip install --user --break-system-packages "$@"
  }

  # The Python package's tests run in a virtual environment (scripts/test.sh); Debian's python3
  # leaves venv's pip (ensurepip) to the python3-venv package.
  if ! python3 -c 'import venv, ensurepip' 2>/dev/null; then
    log "installing python3-venv (the Python package's tests run in a venv)"
    as_root apt-get update
    as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y python3-venv
    python3 -c 'import venv, ensurepip' || fail "python3 -m venv still cannot make a venv with pip"
  fi

  if ! python3 -c 'import yaml' 2>/dev/null; then
    log "installing PyYAML (the YAML oracle of tests/it/yaml_oracle.rs: upstream loads configs with it)"
    pip_install pyyaml || fail "cannot install PyYAML"
  fi

  if ! python3 -c 'import junitparser, markdown_it' 2>/dev/null; then
    log "installing junitparser and markdown-it-py (tests/it/ci_outputs.rs reads the CI outputs with them)"
    pip_install junitparser markdown-it-py || fail "cannot install junitparser and markdown-it-py"
  fi
fi

if want rest; then
  if [ ! -d tests/e2e/node_modules/playwright-core ] || [ ! -d tests/e2e/node_modules/typescript ] || [ ! -d tests/e2e/node_modules/esbuild ] || [ ! -d tests/e2e/node_modules/vite ]; then
    log "installing the e2e tests' npm packages"
    (cd tests/e2e && npm ci --no-audit --no-fund)
  fi
fi
