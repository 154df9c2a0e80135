#!/usr/bin/env bash
# Builds the fuzz targets (fuzz/: cargo-fuzz, libFuzzer, AddressSanitizer, debug assertions) and
# runs each for SECONDS (default 4) on its committed seed corpus (fuzz/corpus/TARGET) and its
# regression inputs (fuzz/regressions/TARGET), one per core at a time. Fails on a crash, leak, timeout or
# out-of-memory, printing the crashing input's path. Nothing is written into the source tree:
# new inputs and crash artifacts go to a temporary folder (kept on failure).
#
#   scripts/fuzz.sh [SECONDS]        every target
#   TARGETS="audit_line verdicts" scripts/fuzz.sh 600
#
# cargo-fuzz needs nightly compiler flags: it uses the `nightly` toolchain when rustup has one,
# else the default (stable) one with RUSTC_BOOTSTRAP=1 (FUZZ_TOOLCHAIN=stable forces that). The
# build goes to fuzz/target, or $CARGO_TARGET_DIR (an absolute path). Install cargo-fuzz with scripts/setup.sh.
set -euo pipefail
cd "$(dirname "$0")/.."

SECONDS_EACH=${1:-4}
log() { printf 'fuzz: %s\n' "$*" >&2; }
fail() { printf 'fuzz: error: %s\n' "$*" >&2; exit 1; }

command -v cargo-fuzz >/dev/null || fail "cargo-fuzz is not installed (scripts/setup.sh installs it)"
case $SECONDS_EACH in '' | *[!0-9]*) fail "SECONDS must be a whole number, not '$SECONDS_EACH'" ;; esac

toolchain=()
if [ "${FUZZ_TOOLCHAIN:-}" != stable ] && rustup toolchain list 2>/dev/null | grep -q '^nightly'; then
  toolchain=(+nightly)
else
  export RUSTC_BOOTSTRAP=1
fi
triple=$(rustc "${toolchain[@]}" -vV | sed -n 's/^host: //p')

targets=${TARGETS:-$(cd fuzz && cargo "${toolchain[@]}" fuzz list)}

log "building $(echo $targets | wc -w) targets with ${toolchain[*]:-stable, RUSTC_BOOTSTRAP=1}"
if [ -n "${TARGETS:-}" ]; then
  for t in $targets; do (cd fuzz && cargo "${toolchain[@]}" fuzz build --debug-assertions "$t"); done
else
  (cd fuzz && cargo "${toolchain[@]}" fuzz build --debug-assertions)
fi

work=$(mktemp -d "${TMPDIR:-/tmp}/deploy-gate-fuzz.XXXXXX")
# One target: its binary on a temporary corpus seeded by the committed one; its stats, or what
# failed and the input that did, printed when it ends.
run_target() {
  local t=$1 bin=${CARGO_TARGET_DIR:-fuzz/target}/$triple/release/$1
  [ -x "$bin" ] || fail "no binary for target $t ($bin)"
  mkdir -p "$work/$t/corpus" "$work/$t/artifacts"
  local seeds=(fuzz/corpus/"$t")
  [ -d fuzz/regressions/"$t" ] && seeds+=(fuzz/regressions/"$t")
  # The first corpus folder receives new inputs: the temporary one, never the committed seeds.
  if ! "$bin" "$work/$t/corpus" "${seeds[@]}" \
    -max_total_time="$SECONDS_EACH" -timeout=10 -rss_limit_mb=1024 -malloc_limit_mb=512 \
    -artifact_prefix="$work/$t/artifacts/" -print_final_stats=1 >"$work/$t/log" 2>&1; then
    # The panic message (or the sanitizer's report) and libFuzzer's summary, not the whole log.
    {
      grep -a -m1 -A12 -E 'panicked at|ERROR: AddressSanitizer|ERROR: libFuzzer' "$work/$t/log" || true
      grep -a -E '^SUMMARY' "$work/$t/log" || true
      log "$t FAILED; the input that failed:"
      ls -1 "$work/$t/artifacts/"* || true
    } >&2
    fail "$t failed (log: $work/$t/log; minimise with: cd fuzz && cargo fuzz tmin $t ARTIFACT)"
  fi
  log "$t: ${SECONDS_EACH}s: $(grep -E '^stat::number_of_executed_units|^stat::peak_rss_mb' "$work/$t/log" | tr '\n' ' ')"
}
export -f run_target log fail
export work triple SECONDS_EACH

# FUZZ_JOBS targets at a time (default: one per core): each libFuzzer run is one process.
jobs=${FUZZ_JOBS:-$(nproc 2>/dev/null || echo 2)}
log "running each target for ${SECONDS_EACH}s, $jobs at a time"
if ! printf '%s\n' $targets | xargs -P "$jobs" -I{} bash -c 'run_target "$1"' _ {}; then
  fail "a target failed (above); its inputs and logs are kept in $work"
fi
rm -rf "$work"
log "all targets ran ${SECONDS_EACH}s each without a failure"
