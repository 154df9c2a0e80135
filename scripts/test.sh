#!/usr/bin/env bash
# Runs every test: formatting, lints, the wasm32 build, Rust unit/integration/parity/property
# tests, a few seconds of each fuzz target (scripts/fuzz.sh), wasm-bindgen tests (node and
# headless Chromium), the end-to-end tests of the page (Playwright + Chromium) and the Python
# package's tests (pytest in a fresh venv the package is pip-installed into), and the
# statistics' known answers checked against statsmodels, scipy and mpmath in that venv, and
# interoperability with model-signing (OpenSSF Model Signing) in that venv; `run` against a real
# llama.cpp server and a fault-injecting one (tests/servers/); `apply --mlflow` and `verify
# --mlflow` against a real MLflow tracking server (tests/servers/mlflow.sh). Installs
# what is missing first (scripts/setup.sh).
set -euo pipefail
cd "$(dirname "$0")/.."

scripts/setup.sh

step() { printf '\n== %s\n' "$*" >&2; }

step "cargo fmt --check"
cargo fmt --check

step "cargo clippy (all targets, warnings are errors)"
cargo clippy --all-targets -- -D warnings
cargo clippy --lib --tests --target wasm32-unknown-unknown -- -D warnings

step "the test servers: the fault-injecting server's self-test, and llama.cpp's server (a real OpenAI-compatible server, built once into .venv-llama) for tests/it/run_llama.rs"
python3 tests/servers/test_fault_server.py
bash tests/servers/llama_venv.sh

step "cargo test (unit, integration, parity, property tests; the MLflow tests are the next step)"
cargo test --all-targets -- --skip mlflow_cli

step "a real MLflow registry: mlflow[auth] installed once into .venv-mlflow (the install time is printed), then tests/it/mlflow_cli.rs, which starts the tracking server and its basic-auth app (their start times are printed) and stops them"
bash tests/servers/mlflow.sh venv
DEPLOY_GATE_REQUIRE_MLFLOW=1 cargo test --test it mlflow_cli -- --nocapture

step "fuzz targets, a few seconds each (scripts/fuzz.sh)"
scripts/fuzz.sh "${FUZZ_SECONDS:-4}"

step "the wasm package (pkg/), and that the committed pkg/ is what the source builds"
scripts/build-wasm.sh
if ! git rev-parse --is-inside-work-tree >/dev/null 2>&1; then
  echo "note: not a git checkout, so pkg/ cannot be compared with the committed one" >&2
elif pkg_changes=$(git status --porcelain --untracked-files=all -- pkg/) && [ -n "$pkg_changes" ]; then
  printf '%s\n' "$pkg_changes" >&2
  echo "error: pkg/ differs from what the source builds (files above: M changed, ?? new, D gone)." >&2
  echo "Run scripts/build-wasm.sh and commit pkg/ with the source change." >&2
  exit 1
fi

step "wasm-bindgen tests under node"
wasm-pack test --node -- --test wasm

step "wasm-bindgen tests in headless Chromium"
WASM_BINDGEN_USE_BROWSER=1 wasm-pack test --headless --chrome --chromedriver /usr/bin/chromedriver -- --test wasm

step "end-to-end tests of the page (Playwright, headless Chromium)"
cargo build --release --bins --examples
(cd tests/e2e && node --test --test-concurrency=1)

step "the Python package (python/): its fmt and clippy, installed from source into a fresh venv, pytest"
cargo fmt --check --manifest-path python/Cargo.toml
cargo clippy --manifest-path python/Cargo.toml --all-targets -- -D warnings
rm -rf .venv-test
python3 -m venv .venv-test
.venv-test/bin/python -m pip install --quiet --upgrade pip
# Exactly what a user does: pip builds the wheel with maturin (python/pyproject.toml), into python/target.
.venv-test/bin/python -m pip install --quiet ./python pytest mypy
# Without the optional packages (pytest exits non-zero on a failure, and with 5 when no test ran)…
DEPLOY_GATE_REQUIRE_CLI=1 .venv-test/bin/python -m pytest -q python/tests
# …and the tests that use them, with pandas and tqdm installed.
.venv-test/bin/python -m pip install --quiet pandas tqdm
DEPLOY_GATE_REQUIRE_CLI=1 .venv-test/bin/python -m pytest -q -m optional_deps python/tests

step "the statistics' known answers (tests/fixtures/stats/known-answers.json) against statsmodels, scipy and mpmath"
# Pinned: the fixtures record these versions, and the guardrails' check replays scipy's seeded bootstrap.
.venv-test/bin/python -m pip install --quiet statsmodels==0.15.0 scipy==1.17.1 numpy==2.4.6 mpmath==1.4.1
.venv-test/bin/python scripts/known-answers.py --check tests/fixtures/stats/known-answers.json

step "the guardrails' known answers (tests/fixtures/stats/guardrail-known-answers.json) against numpy, scipy and statsmodels"
.venv-test/bin/python scripts/guardrail-known-answers.py --check tests/fixtures/stats/guardrail-known-answers.json

step "the sequential decisions' known answers (tests/fixtures/stats/sequential-known-answers.json) against confseq"
# confseq 0.0.11 uses np.float_ (numpy < 2), so it has a venv of its own; its C++ extension needs
# Debian's libboost-dev (scripts/setup.sh) and a pybind11 that builds on this Python.
rm -rf .venv-seq
python3 -m venv .venv-seq
.venv-seq/bin/python -m pip install --quiet --upgrade pip
.venv-seq/bin/python -m pip install --quiet "pybind11>=2.10" cmake scikit-build setuptools wheel "numpy<2"
.venv-seq/bin/python -m pip install --quiet --no-build-isolation confseq==0.0.11 "numpy<2"
.venv-seq/bin/python scripts/sequential-known-answers.py --check tests/fixtures/stats/sequential-known-answers.json

step "interoperability with OpenSSF Model Signing's reference implementation (tests/oms_interop_test.py)"
# model-signing imports pyOpenSSL without declaring it; 1.1.1 made the committed fixtures.
.venv-test/bin/python -m pip install --quiet model-signing==1.1.1 pyOpenSSL
DEPLOY_GATE_BIN=target/release/deploy-gate .venv-test/bin/python -m pytest -q tests/oms_interop_test.py

step "all tests passed"
