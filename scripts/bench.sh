#!/usr/bin/env bash
# The benchmark: generates a deterministic 1 GiB audit log (once, in bench-data/) and prints, for
# that file: the physical references (newline count, typed serde_json parse), MB/s and peak RSS
# of `deploy-gate evaluate`, MB/s of the wasm core under node on one core, the seconds the page
# needs in headless Chromium, and — when ../shared/seeds/deployment_gate.py is there — the
# reference implementation's time and peak RSS; with the duckdb Python package, native `test-set`
# against DuckDB side by side (scripts/bench-duckdb.py); and the page with verdict files carrying
# answers (about 1 GiB) against the same cases without them. Usage: scripts/bench.sh [SIZE]   (default 1G;
# RUNS=N sets how many times `evaluate` runs, default 7, of which the median is printed;
# ASCII=1 uses a log whose strings escape non-ASCII as \uXXXX, as Python's json.dumps writes
# by default, generated once in bench-data[-SIZE]-ascii/)
set -euo pipefail
cd "$(dirname "$0")/.."
size=${1:-1G}
data=bench-data
[ "$size" = 1G ] || data="bench-data-$size"
gen_flags=()
if [ -n "${ASCII:-}" ]; then
  data="$data-ascii"
  gen_flags=(--ascii)
fi

scripts/setup.sh
cargo build --release --bins --examples 2>/dev/null
scripts/build-wasm.sh >/dev/null 2>&1
if [ ! -f "$data/audit.jsonl" ]; then
  ./target/release/examples/gen_audit --size "$size" --out "$data" "${gen_flags[@]}"
fi
bytes=$(stat -c %s "$data/audit.jsonl")
echo "machine: $(nproc) cores, $(free -g | awk '/Mem:/ {print $2}') GiB, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs)"
echo "file: $data/audit.jsonl, $bytes bytes"
cat "$data/audit.jsonl" > /dev/null   # into the page cache, for every run alike

./target/release/examples/bench_refs "$data/audit.jsonl"

timing=$(mktemp)
runs=${RUNS:-7}
all=$(mktemp)
for _ in $(seq "$runs"); do
  /usr/bin/time -o "$timing" -f '%e %M' ./target/release/deploy-gate evaluate --audit "$data/audit.jsonl" \
    --old-verdicts "$data/old_verdicts.jsonl" --new-verdicts "$data/new_verdicts.jsonl" \
    --old-trajectories "$data/old_trajectories.jsonl" --new-trajectories "$data/new_trajectories.jsonl" \
    --out /dev/null 2>/dev/null || true
  cat "$timing" >> "$all"
done
# The median time of the runs, the fastest and the slowest; the largest peak RSS.
sort -n "$all" | awk -v b="$bytes" -v n="$runs" '{ t[NR] = $1; if ($2 > k) k = $2 } END {
  m = t[int((n + 1) / 2)]
  printf "deploy-gate evaluate (native, all cores, median of %d): %.2f s (%.2f–%.2f), %.0f MB/s, peak RSS %.0f MB\n", n, m, t[1], t[n], b/1e6/m, k/1024 }'
rm -f "$all"

# Native `test-set` against DuckDB running the same rules in SQL (scripts/duckdb-testset.sql),
# side by side, when the duckdb Python package is installed (`pip install duckdb`; not needed by
# the tests): interleaved pairs, their medians and ratios; it fails if the two test sets differ.
if python3 -c 'import duckdb' 2>/dev/null; then
  python3 scripts/bench-duckdb.py "$data/audit.jsonl" --pairs "${DUCKDB_PAIRS:-5}"
else
  echo "DuckDB side by side: skipped (pip install duckdb to run scripts/bench-duckdb.py)"
fi

node scripts/bench-wasm.mjs "$data"
NO_HASH=1 node scripts/bench-wasm.mjs "$data" | sed "s/one core)/one core, sha256 left to another worker)/"
node scripts/bench-page.mjs "$data"

# The page with verdict files that carry the models' answers (about 1 GiB each, answers of
# about 1,400 words) against the same cases without answers: time to the decision, peak memory,
# and the time to open the case at the new file's end (its answers read by byte range). Generated
# once, in bench-answers/ (ANSWERS=0 skips this part).
if [ "${ANSWERS:-1}" != 0 ]; then
  for kind in without with; do
    dir="bench-answers/$kind"
    flags=()
    [ "$kind" = with ] && flags=(--answers --answer-words "${ANSWER_WORDS:-1400}")
    [ -f "$dir/new_verdicts.jsonl" ] || ./target/release/examples/gen_audit --compact --size 48M --seed 7 --out "$dir" "${flags[@]}"
    echo "answers: $kind"
    node scripts/bench-page.mjs "$dir" --policy max_samples=none --open-last
  done
  # The same answers as JSON arrays: read in pieces too (element by element).
  dir=bench-answers/with
  for side in old new; do
    [ -f "$dir/${side}_verdicts.json" ] || node scripts/jsonl-to-array.mjs "$dir/${side}_verdicts.jsonl" "$dir/${side}_verdicts.json"
  done
  echo "answers: with, as JSON arrays"
  node scripts/bench-page.mjs "$dir" --verdicts json --policy max_samples=none --open-last
fi

seed=${SEED_PY:-../shared/seeds/deployment_gate.py}
# (Only on the 1 GiB log: the reference holds about 4.4 times the log in memory.)
if [ -f "$seed" ] && [ "$size" = 1G ]; then
  stub=$(mktemp -d)
  mkdir -p "$stub/agenttune/decide"
  touch "$stub/agenttune/__init__.py" "$stub/agenttune/decide/__init__.py"
  echo 'PASS_VERDICTS = {"PASS", "APPROVE", "COMPLETE"}' > "$stub/agenttune/decide/state.py"
  /usr/bin/time -o "$timing" -f '%e %M' env PYTHONPATH="$stub:$(dirname "$seed")" python3 -c \
    "import deployment_gate as d; print(len(d.DeploymentGate(seed=0).build_test_set('$data/audit.jsonl', max_samples=10**9)))" >/dev/null 2>&1 || true
  read -r secs kb < "$timing"
  awk -v b="$bytes" -v s="$secs" -v k="$kb" 'BEGIN { printf "reference implementation (python, build_test_set only): %.2f s, %.0f MB/s, peak RSS %.0f MB\n", s, b/1e6/s, k/1024 }'
  rm -rf "$stub"
fi
rm -f "$timing"
