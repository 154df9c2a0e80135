#!/usr/bin/env bash
# Runs every test: formatting, lints, the wasm32 build, Rust unit/integration/parity/property
# tests, a few seconds of each fuzz target (scripts/fuzz.sh), wasm-bindgen tests (node and
# headless Chromium), the end-to-end tests of the page (Playwright + Chromium) and the Python
# package's tests (pytest in a fresh venv the package is pip-installed into), and the
# statistics' known answers checked against statsmodels, scipy, mpmath and confseq, and
# interoperability with model-signing (OpenSSF Model Signing), in venvs built once and kept by
# their pinned versions (scripts/reference-venv.sh); `run` against a real llama.cpp server and a
# fault-injecting one (tests/servers/); `apply --mlflow` and `verify --mlflow` against a real
# MLflow tracking server (tests/servers/mlflow.sh). Installs what is missing first
# (scripts/setup.sh), and prints each step's wall time at the end. The host's tests build with
# the `ci` profile (Cargo.toml), linted by clippy as they compile; the single-core steps run in lanes beside the builds.
set -euo pipefail
cd "$(dirname "$0")/.."

# Each step's wall time, printed as a table at the end (also when a step fails), so the next
# growth of the command shows where it happens: `step NAME DESCRIPTION` starts a step.
# Beside the wall time, the processor time (user + system) of the processes that ended during the
# step (bash's `times`): its own commands, and a background install that happened to end then.
step_names=()
step_times=()
step_cpus=()
step_started=
step_cpu_started=
failed_step=
test_started=$EPOCHREALTIME
seconds_since() { awk -v a="$1" -v b="$EPOCHREALTIME" 'BEGIN { printf "%.1f", b - a }'; }
times_file=$(mktemp "${TMPDIR:-/tmp}/deploy-gate-times.XXXXXX")
read_cpu() { # cpu_now: the user + system seconds of the shell's ended children so far (`times`
  # run in this shell, never in $(…) or a pipe: a subshell's children are not these)
  times >"$times_file"
  cpu_now=$(awk 'NR == 2 { t = 0; for (i = 1; i <= 2; i++) { split($i, p, "m"); t += p[1] * 60 + p[2] } printf "%.1f", t }' "$times_file")
}
step_done() {
  if [ -n "$step_started" ]; then
    step_times+=("$(seconds_since "$step_started")")
    read_cpu
    step_cpus+=("$(awk -v a="$step_cpu_started" -v b="$cpu_now" 'BEGIN { printf "%.1f", b - a }')")
    step_started=
  fi
}
step() {
  step_done
  step_names+=("$1")
  step_started=$EPOCHREALTIME
  read_cpu
  step_cpu_started=$cpu_now
  printf '\n== %s\n' "$2" >&2
}
step_table() {
  local status=$? i
  step_done
  {
    printf '\n| step | seconds | processor seconds |\n|---|---:|---:|\n'
    for i in "${!step_times[@]}"; do printf '| %s | %s | %s |\n' "${step_names[$i]}" "${step_times[$i]}" "${step_cpus[$i]}"; done
    read_cpu
    printf '| total | %s | %s |\n' "$(seconds_since "$test_started")" "$cpu_now"
    [ "$status" = 0 ] || printf '(stopped by a failure in the step "%s", status %s)\n' "${failed_step:-${step_names[-1]}}" "$status"
  } >&2
}
# On the way out, also the prefetches still running (a failure before their step), with what
# they started (a compiler, pip), which would go on using the cores and holding cargo's locks.
kill_tree() { # the process first (it starts no more), then the children it had
  local children child
  children=$(pgrep -P "$1" 2>/dev/null || true)
  kill "$1" 2>/dev/null || true
  for child in $children; do kill_tree "$child"; done
}
lanes=()     # the lanes started (start_lane, below)
lane_pids=()
lanes_dir=
on_exit() {
  local status=$? job stopped_in
  set +e # a failing command here must not end the handler before the table (errexit holds in traps)
  for job in $(jobs -pr); do kill_tree "$job"; done
  if [ "$status" != 0 ] && [ "${#lanes[@]}" != 0 ]; then
    # The foreground step that failed, named and timed before the lanes' rows are added.
    step_done
    stopped_in=${step_names[-1]}
    failed_step=${failed_step:-$stopped_in}
    printf '\n== the lanes, stopped by the failure of the step "%s" (above)\n' "$stopped_in" >&2
    show_lanes
    printf '\n(the run stopped at the failure of the step "%s", shown above the lanes)\n' "$stopped_in" >&2
  fi
  (exit "$status")
  step_table
  rm -f "$times_file"
  [ -z "$lanes_dir" ] || rm -rf "$lanes_dir"
}
trap on_exit EXIT

# A CI run builds everything once from nothing: incremental compilation only adds work there, and
# the wasm-bindgen tests' build needs no debug information (a failed assertion or a panic names its
# file and line without it; only a debugger would use it). The host's test builds use the `ci`
# profile (Cargo.toml: opt-level 1, no debug information) everywhere.
if [ -n "${CI:-}" ]; then
  export CARGO_INCREMENTAL=0 CARGO_PROFILE_DEV_DEBUG=0
fi

# The lints are not a separate `cargo clippy` (a check of every dependency, for the host and again
# for wasm32, that no build can reuse): clippy's driver compiles the workspace's own crates in the
# builds of the tests themselves (`RUSTC_WORKSPACE_WRAPPER`, as `cargo clippy` runs it, with
# `-D warnings`): the host's every target (cargo-build), the Python binding (its wheel's build) and
# the library for wasm32 with its wasm-bindgen tests (wasm-test-node); the dependencies are
# compiled once, by rustc. Never for the wasm package (clippy's driver turns MIR optimisations
# off, so pkg/ would differ) or the fuzz targets.
clippy_driver="$(rustc --print sysroot)/bin/clippy-driver"
linted() { RUSTC_WORKSPACE_WRAPPER="$clippy_driver" CLIPPY_ARGS="-D__CLIPPY_HACKERY__warnings__CLIPPY_HACKERY__" "$@"; }
# The tests of the host: every target, the `ci` profile, linted (the later steps build nothing new).
ci_test() { linted cargo test --profile ci --all-targets "$@"; }

# The installs that take long but are needed later start now, beside the builds, at a lower
# priority, and the steps that use them wait for them: at nice 10 (the scripts nice their own
# compile or pip), llama.cpp's server (compiled into .venv-llama; the llama and Python tests) and
# the MLflow venv (niced once, by the script; niced twice, pip ran at nice 19 and the step waited:
# docs/test-command.md) and the tools compiled from crates.io (cargo-fuzz, then wasm-bindgen-cli);
# at nice 15, the reference implementations' venvs. On a new machine
# they are then mostly off the critical path; all of them are kept, so a second run finds them at
# once. Their output is shown when a step first waits for them. A prefetch writes NAME.status
# when it ends, so that a step in a lane (a subshell, which cannot `wait` for its parent's
# children) can wait for it too.
prefetch_log=$(mktemp -d "${TMPDIR:-/tmp}/deploy-gate-prefetch.XXXXXX")
prefetch() { # NAME COMMAND...: runs COMMAND in the background, its output kept for `prefetched`
  local name=$1
  shift
  (
    status=0
    "$@" >"$prefetch_log/$name" 2>&1 || status=$?
    echo "$status" >"$prefetch_log/$name.status.tmp"
    mv "$prefetch_log/$name.status.tmp" "$prefetch_log/$name.status"
  ) &
  echo $! >"$prefetch_log/$name.pid"
}
prefetched() { # NAME: waits for a prefetch, shows its output (once), fails if it failed
  local status
  while [ ! -f "$prefetch_log/$1.status" ]; do
    if ! kill -0 "$(cat "$prefetch_log/$1.pid")" 2>/dev/null && [ ! -f "$prefetch_log/$1.status" ]; then
      cat "$prefetch_log/$1" >&2
      echo "error: the $1 install ended without saying how (killed?): its output is above" >&2
      return 1
    fi
    sleep 1
  done
  read -r status <"$prefetch_log/$1.status"
  if mkdir "$prefetch_log/$1.shown" 2>/dev/null; then cat "$prefetch_log/$1" >&2; fi
  [ "$status" = 0 ] || { echo "error: the $1 install failed (status $status): $prefetch_log/$1" >&2; return 1; }
}
# The tools, one after the other (one cargo target folder), from the start: they need only cargo,
# and the setup step beside them mostly waits for downloads. cargo-fuzz first, which the fuzz step
# needs; wasm-bindgen-cli is needed only after the fuzz step and the wasm compiles.
prefetch tool-fuzz nice -n 10 scripts/setup.sh --tool-fuzz
prefetch tool-bindgen sh -c 'until [ -f "$1" ]; do sleep 2; done; exec nice -n 10 scripts/setup.sh --tool-bindgen' sh "$prefetch_log/tool-fuzz.status"

step setup "install what is missing (scripts/setup.sh), but the tools compiled from crates.io, which install beside the first builds"
scripts/setup.sh --no-tools

# The other installs need what the setup step installed (Debian's packages, python3-venv).
prefetch llama bash tests/servers/llama_venv.sh
prefetch mlflow bash tests/servers/mlflow.sh venv
prefetch reference sh -c 'nice -n 15 scripts/reference-venv.sh stats && nice -n 15 scripts/reference-venv.sh confseq'

# Lanes: steps that keep about one core busy at most (a browser, a Python interpreter, a registry
# server, most of the time waiting) run in the background beside the builds, which run at nice 5
# so that the lanes' tests get the processor when they want it. `about[NAME]` describes a step,
# the function `step_NAME` (hyphens as underscores) runs it. `start_lane "A B"` runs A then B in
# the background, each step in a subshell of its own (set -e holds in it), its output kept;
# `finish_lanes` waits for every lane started, shows each step's output in order and adds each
# step's own time to the table. A lane stops at its first failure. (A lane's processor time is
# also in the row of the foreground step during which the lane ended, as a prefetch's is; the
# total counts it once.)
declare -A about
lanes_dir=$(mktemp -d "${TMPDIR:-/tmp}/deploy-gate-lanes.XXXXXX")
start_lane() {
  local name
  lanes+=("$1")
  printf '\n== started in the background: %s\n' "$1" >&2
  (
    times_file="$lanes_dir/times.${#lanes[@]}" # read_cpu here counts this lane's children
    for name in $1; do
      started=$EPOCHREALTIME
      read_cpu
      cpu_started=$cpu_now
      printf '\n== %s\n' "${about[$name]}" >"$lanes_dir/$name.log"
      code=0
      ("step_${name//-/_}") >>"$lanes_dir/$name.log" 2>&1 &
      wait $! || code=$?
      read_cpu
      printf '%s %s %s\n' "$(seconds_since "$started")" \
        "$(awk -v a="$cpu_started" -v b="$cpu_now" 'BEGIN { printf "%.1f", b - a }')" "$code" >"$lanes_dir/$name.result"
      printf '   %s: %s\n' "$name" "$([ "$code" = 0 ] && echo passed || echo "FAILED (status $code)")" >&2
      [ "$code" = 0 ] || exit "$code"
    done
  ) &
  lane_pids+=($!)
}
show_lanes() { # each lane step's output that is there (also when a failure elsewhere ends the run)
  local lane name wall cpu code
  for lane in "${lanes[@]}"; do
    for name in $lane; do
      [ -f "$lanes_dir/$name.log" ] || continue
      cat "$lanes_dir/$name.log" >&2
      if [ -f "$lanes_dir/$name.result" ]; then
        read -r wall cpu code <"$lanes_dir/$name.result"
        step_names+=("$name (lane)")
        step_times+=("$wall")
        step_cpus+=("$cpu")
        [ "$code" = 0 ] || failed_step=$name
      else
        printf '(%s did not end)\n' "$name" >&2
      fi
    done
  done
  lanes=()
}
finish_lanes() {
  local pid status=0
  step lanes "waiting for the lanes started in the background (their steps' own times are below)"
  for pid in "${lane_pids[@]}"; do wait "$pid" || status=$?; done
  lane_pids=()
  step_done
  show_lanes
  [ "$status" = 0 ] || { echo "error: the step \"${failed_step:-in a lane}\" failed (above)" >&2; return "$status"; }
  rm -rf "$lanes_dir"
  lanes_dir=
}

step fmt "cargo fmt --check (the crate and the Python binding)"
cargo fmt --check
cargo fmt --check --manifest-path python/Cargo.toml

step lint-probe "that clippy's driver denies a clippy warning (the lints run in the builds of the tests: python-install, cargo-build, wasm-test-node)"
# That the driver takes the arguments as `cargo clippy` passes them (warnings are errors): a file
# with a clippy warning must fail, or the lints in the builds below would be silently off.
lint_probe=$(mktemp -d "${TMPDIR:-/tmp}/deploy-gate-lint.XXXXXX")
printf 'fn main() {\n    let v = vec![1];\n    println!("{}", v.len() == 0);\n}\n' >"$lint_probe/probe.rs"
if linted "$clippy_driver" rustc --edition 2021 --crate-type bin --emit metadata --out-dir "$lint_probe" "$lint_probe/probe.rs" 2>"$lint_probe/log" \
  || ! grep -q 'clippy::len_zero' "$lint_probe/log"; then
  cat "$lint_probe/log" >&2
  echo "error: clippy's driver did not deny a clippy warning as \`cargo clippy -- -D warnings\` does" >&2
  exit 1
fi
rm -rf "$lint_probe"

step test-servers "the fault-injecting server's self-test (llama.cpp's server, a real OpenAI-compatible one for tests/it/run_llama.rs, is compiled into .venv-llama beside the builds; the llama and Python tests wait for it in their lane)"
python3 tests/servers/test_fault_server.py

# The Python package, built and installed first. What a user does (a fresh venv, pip building the
# wheel with maturin, python/pyproject.toml), but with the `ci` profile: the binding is a member of
# the root's workspace, so the core crate and its dependencies it compiles are the very units the
# tests' build then finds built (a release build of them took 800 processor seconds), and the
# binding is linted by clippy as it compiles (warnings are errors). It comes before the tests'
# build so that, should a difference in features ever make the core crate two units again, the
# tests' copy of target/ci/deps/libdeploy_gate.rlib (a cdylib and rlib has no hash in its name)
# is the one written last, the one the tests link against (docs/test-command.md).
step python-install "the Python package installed from source into a fresh venv (built with the ci profile, the binding linted)"
rm -rf .venv-test
python3 -m venv .venv-test
.venv-test/bin/python -m pip install --quiet --no-compile --upgrade pip
MATURIN_PEP517_ARGS="--profile ci" \
  linted .venv-test/bin/python -m pip install --quiet --no-compile ./python pytest mypy
# Its `deploy-gate` command: the CLI the e2e tests, the interoperability test and the CLI's tests
# against the installed command run (the same `cli::main`).
installed_cli="$PWD/.venv-test/bin/deploy-gate"

step cargo-build "the host's tests built (cargo test --no-run, profile ci, linted by clippy), and the audit log generator"
# Their JSON messages name the test binaries, which the lanes run directly (a second cargo
# beside the builds would wait for the target folder's lock); the diagnostics are shown as usual.
build_json="$lanes_dir/build.json"
ci_test --no-run --message-format=json-render-diagnostics >"$build_json"
it_bin=$(python3 -c 'import json, sys
for line in open(sys.argv[1]):
    m = json.loads(line)
    if m.get("reason") == "compiler-artifact" and m["target"]["name"] == "it" and m["profile"]["test"] and m.get("executable"):
        print(m["executable"])' "$build_json")
[ -x "$it_bin" ] || { echo "error: no test binary for tests/it in cargo's messages ($build_json)" >&2; exit 1; }
# The audit log generator the e2e tests run (examples/gen_audit.rs): `cargo test --all-targets`
# builds examples as test harnesses, so it is built by name, with the same settings (the library
# is fresh: only the example compiles).
linted cargo build --profile ci --example gen_audit
# The lanes run copies of the CLI and the generator: cargo replaces the files in target/ci (a new
# link) when the foreground's next `cargo test` runs, and a test starting the CLI then could find
# no file.
cp target/ci/deploy-gate target/ci/examples/gen_audit "$lanes_dir/"
export DEPLOY_GATE_GEN_AUDIT="$lanes_dir/gen_audit"
lane_cli="$lanes_dir/deploy-gate"

# Everything the lanes need is built or being installed (they wait for their prefetches), and the
# page's e2e tests run on the committed pkg/, which the build-wasm step then compares, byte for
# byte, with what the source builds (so a pass means the tested bytes are the source's).
about[e2e]="end-to-end tests of the page (Playwright, headless Chromium), on the committed pkg/"
step_e2e() {
  # The large logs are written by the generator the cargo-build step built (DEPLOY_GATE_GEN_AUDIT).
  cd tests/e2e
  DEPLOY_GATE_BIN="$installed_cli" node --test --test-concurrency=1
}
about[mlflow]="a real MLflow registry: tests/it/mlflow_cli.rs starts the tracking server and its basic-auth app in .venv-mlflow (their start times are printed) and stops them"
step_mlflow() {
  prefetched mlflow
  DEPLOY_GATE_TEST_CLI="$lane_cli" DEPLOY_GATE_REQUIRE_MLFLOW=1 "$it_bin" mlflow_cli --nocapture
}
about[oms-interop]="interoperability with OpenSSF Model Signing's reference implementation (tests/oms_interop_test.py)"
step_oms_interop() {
  # model-signing 1.1.1 made the committed fixtures (it imports pyOpenSSL without declaring it).
  local venv
  prefetched reference
  venv=$(scripts/reference-venv.sh stats)
  DEPLOY_GATE_BIN="$installed_cli" "$venv/bin/python" -m pytest -q tests/oms_interop_test.py
}
# statsmodels, scipy, numpy, mpmath pinned (the fixtures record these versions, and the
# guardrails' check replays scipy's seeded bootstrap). None of the reference venvs imports
# deploy-gate's package, whose own tests run in the fresh venv.
about[known-answers]="the statistics' known answers (tests/fixtures/stats/known-answers.json) against statsmodels, scipy and mpmath"
step_known_answers() {
  local venv
  prefetched reference
  venv=$(scripts/reference-venv.sh stats)
  "$venv/bin/python" scripts/known-answers.py --check tests/fixtures/stats/known-answers.json
}
about[guardrail-known-answers]="the guardrails' known answers (tests/fixtures/stats/guardrail-known-answers.json) against numpy, scipy and statsmodels"
step_guardrail_known_answers() {
  local venv
  prefetched reference
  venv=$(scripts/reference-venv.sh stats)
  "$venv/bin/python" scripts/guardrail-known-answers.py --check tests/fixtures/stats/guardrail-known-answers.json
}
# confseq 0.0.11 uses np.float_ (numpy < 2), so it has a venv of its own; its C++ extension needs
# Debian's libboost-dev (scripts/setup.sh) and a pybind11 that builds on this Python.
about[sequential-known-answers]="the sequential decisions' known answers (tests/fixtures/stats/sequential-known-answers.json) against confseq"
step_sequential_known_answers() {
  local venv
  prefetched reference
  venv=$(scripts/reference-venv.sh confseq)
  "$venv/bin/python" scripts/sequential-known-answers.py --check tests/fixtures/stats/sequential-known-answers.json
}
about[llama]="run against a real llama.cpp server (tests/it/run_llama.rs)"
step_llama() {
  prefetched llama
  DEPLOY_GATE_TEST_CLI="$lane_cli" "$it_bin" run_llama
}
about[python-tests]="the Python package's tests (pytest), without and with the optional packages"
step_python_tests() {
  prefetched llama
  # The binary the package is compared with is the cargo-build step's (a copy): the same source,
  # built apart from the wheel. Without the optional packages (pytest exits non-zero on a failure, and
  # with 5 when no test ran)…
  export DEPLOY_GATE_CLI="$lane_cli" DEPLOY_GATE_REQUIRE_CLI=1
  .venv-test/bin/python -m pytest -q python/tests
  # …and the tests that use them, with pandas and tqdm installed.
  .venv-test/bin/python -m pip install --quiet --no-compile pandas tqdm
  .venv-test/bin/python -m pytest -q -m optional_deps python/tests
}
about[cli-installed]="the CLI's own tests against the deploy-gate command the Python package installed (.venv-test/bin/deploy-gate): the same command, exit codes and signals (tests/it/*cli.rs)"
step_cli_installed() {
  DEPLOY_GATE_TEST_CLI="$installed_cli" "$it_bin" cli:: --skip mlflow_cli
}
start_lane "e2e cli-installed"
start_lane "mlflow oms-interop known-answers guardrail-known-answers sequential-known-answers llama python-tests"

step cargo-test "cargo test, profile ci (unit, integration, parity, property tests; the MLflow and llama.cpp tests run in a lane)"
ci_test -- --skip mlflow_cli --skip run_llama

step fuzz "fuzz targets, a few seconds each (scripts/fuzz.sh, at nice 5)"
prefetched tool-fuzz
# For seconds-long runs the targets are compiled at opt-level 1 with line tables (AddressSanitizer
# and debug assertions as always): 482 processor seconds instead of 691 at the fuzz profile's
# opt-level 3, for 85–95% of its executions a second (docs/test-command.md). A long fuzzing
# session (scripts/fuzz.sh 600) keeps the profile's.
CARGO_PROFILE_RELEASE_OPT_LEVEL=1 CARGO_PROFILE_RELEASE_DEBUG=line-tables-only nice -n 5 scripts/fuzz.sh "${FUZZ_SECONDS:-4}"

step wasm-compile "the wasm package's compile and the wasm-bindgen tests' build, at nice 5 (neither needs wasm-bindgen-cli, which may still be installing)"
nice -n 5 scripts/build-wasm.sh --compile-only
linted nice -n 5 cargo test --target wasm32-unknown-unknown --test wasm --no-run

# The wasm package built apart and compared with pkg/ in a lane (wasm-bindgen, then wasm-opt: one
# core), beside the wasm-bindgen tests in the foreground (node: one core). Both wait for
# wasm-bindgen-cli.
about[pkg-check]="the wasm package built apart (target/pkg-check), and that it is the committed pkg/, byte for byte"
step_pkg_check() {
  prefetched tool-bindgen
  # Built beside pkg/, not into it: the e2e tests may be reading pkg/ meanwhile.
  rm -rf target/pkg-check
  DEPLOY_GATE_PKG_DIR=target/pkg-check nice -n 5 scripts/build-wasm.sh
  if ! pkg_changes=$(diff -r --brief pkg target/pkg-check 2>&1); then
    printf '%s\n' "$pkg_changes" >&2
    echo "error: pkg/ differs from what the source builds (target/pkg-check: files above)." >&2
    echo "Run scripts/build-wasm.sh and commit pkg/ with the source change." >&2
    exit 1
  fi
  # …and what was compared is what is committed (in a git checkout).
  if git rev-parse --is-inside-work-tree >/dev/null 2>&1 \
    && pkg_changes=$(git status --porcelain --untracked-files=all -- pkg/) && [ -n "$pkg_changes" ]; then
    printf '%s\n' "$pkg_changes" >&2
    echo "error: pkg/ is what the source builds, but not what is committed (files above): commit pkg/." >&2
    exit 1
  fi
}
start_lane "pkg-check"

# The wasm-bindgen tests (tests/wasm.rs) run as `wasm-pack test` runs them, less its first step:
# `cargo build --tests` for wasm32, which also compiles the library's unit tests and tests/it for
# wasm32 (none of them run there). This build is the wasm32 lint: the library and tests/wasm.rs
# compiled by clippy's driver (the library's unit tests and tests/it are linted on the host only,
# no longer for wasm32 too). The runner is wasm-bindgen-cli's, the version in Cargo.lock
# (scripts/setup.sh); both runs share the wasm-compile step's build.
wasm_test() {
  local runner
  runner=$(command -v wasm-bindgen-test-runner) || { echo "error: wasm-bindgen-test-runner is not on PATH (scripts/setup.sh installs wasm-bindgen-cli)" >&2; return 1; }
  CARGO_TARGET_WASM32_UNKNOWN_UNKNOWN_RUNNER="$runner" linted nice -n 5 cargo test --target wasm32-unknown-unknown --test wasm
}

step wasm-test-node "wasm-bindgen tests under node (after wasm-bindgen-cli's install)"
prefetched tool-bindgen
WASM_BINDGEN_TEST_ONLY_NODE=1 wasm_test

step wasm-test-chrome "wasm-bindgen tests in headless Chromium"
# As `wasm-pack test --headless --chrome` ran them: the runner with ChromeDriver, web tests only
# (WASM_BINDGEN_USE_BROWSER: without it the runner skips every test in a browser and exits 0).
# The browser's settings are webdriver.json's (Debian's Chromium, headless, no sandbox as root).
CHROMEDRIVER=/usr/bin/chromedriver WASM_BINDGEN_TEST_ONLY_WEB=1 WASM_BINDGEN_USE_BROWSER=1 wasm_test

finish_lanes

printf '\n== all tests passed\n' >&2
