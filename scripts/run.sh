#!/usr/bin/env bash
# The main job: evaluates the gate on the bundled example with the CLI and prints the report.
# Usage: scripts/run.sh
set -euo pipefail
cd "$(dirname "$0")/.."

scripts/setup.sh
cargo build --release
ex=www/examples
set +e
./target/release/deploy-gate evaluate --audit "$ex/audit.jsonl" \
  --old-verdicts "$ex/old_verdicts.jsonl" --new-verdicts "$ex/new_verdicts.jsonl" \
  --old-trajectories "$ex/old_trajectories.jsonl" --new-trajectories "$ex/new_trajectories.jsonl" \
  --out target/example-report.json
code=$?
set -e
echo "report: target/example-report.json (exit code $code: 0 approved, 3 blocked)"
