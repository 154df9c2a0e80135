#!/usr/bin/env bash
# The two-model run against a local OpenAI-compatible server that answers at once (nginx
# returning a fixed chat completion, keep-alive), side by side with the `openai` package's
# AsyncOpenAI at the same concurrency on the same server. Prints, for each: wall seconds, cases/s
# (a case is two requests: the old and the new model) and peak RSS (/usr/bin/time -v).
# Usage: scripts/bench-endpoints.sh [CASES] [CONCURRENCY]   (default 20000 cases, 32 per model)
# RUNS=N repeats each (interleaved), default 3; the median is printed.
set -euo pipefail
cd "$(dirname "$0")/.."
cases=${1:-20000}
conc=${2:-32}
runs=${RUNS:-3}
as_root() { if [ "$(id -u)" = 0 ]; then "$@"; else sudo "$@"; fi; }

command -v nginx >/dev/null || { as_root apt-get update; as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y nginx-light; }
cargo build --release --bin deploy-gate 2>/dev/null
venv=${BENCH_VENV:-.venv-bench}
[ -x "$venv/bin/python" ] || python3 -m venv "$venv"
"$venv/bin/python" -c 'import openai' 2>/dev/null || "$venv/bin/python" -m pip install --quiet "openai==2.*"

work=$(mktemp -d)
trap 'kill $(cat "$work/nginx.pid" 2>/dev/null) 2>/dev/null || true; rm -rf "$work"' EXIT
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
body='{"id":"x","object":"chat.completion","created":1,"model":"m","choices":[{"index":0,"message":{"role":"assistant","content":"PASS"},"finish_reason":"stop"}],"usage":{"prompt_tokens":12,"completion_tokens":1,"total_tokens":13}}'
cat > "$work/nginx.conf" <<EOF
worker_processes 1;
pid $work/nginx.pid;
error_log $work/error.log;
events { worker_connections 4096; }
http {
  access_log off;
  keepalive_requests 1000000;
  client_body_temp_path $work/body;
  server {
    listen 127.0.0.1:$port;
    location /v1/chat/completions {
      default_type application/json;
      return 200 '$body';
    }
  }
}
EOF
nginx -c "$work/nginx.conf"
sleep 0.3

python3 - "$cases" > "$work/cases.jsonl" <<'PY'
import json, sys
for i in range(1, int(sys.argv[1]) + 1):
    print(json.dumps({"pipeline_id": i, "template_id": f"t{i % 20}", "input_text": f"case {i}: is this run fine?",
                      "expected_verdict": "PASS", "expected_stage_outputs": {}, "episode_reward": 1.0}))
PY
for m in old new; do
cat > "$work/$m.yaml" <<EOF
kind: openai-chat
base_url: http://127.0.0.1:$port/v1
model: agent-$m
messages:
  - {role: user, content: "{{input_text}}"}
params: {temperature: 0, max_tokens: 8}
concurrency: {initial: $conc, min: $conc, max: $conc}
EOF
done
cat > "$work/async_openai.py" <<'PY'
# Both models per case, `conc` requests in flight per model, as a team would write it.
import asyncio, json, sys
from openai import AsyncOpenAI
cases_file, base, conc, out = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
cases = [json.loads(l) for l in open(cases_file)]
async def main():
    client = AsyncOpenAI(base_url=base, api_key="none", max_retries=3)
    sems = {m: asyncio.Semaphore(conc) for m in ("old", "new")}
    async def ask(model, case):
        async with sems[model]:
            r = await client.chat.completions.create(model=f"agent-{model}", temperature=0, max_tokens=8,
                messages=[{"role": "user", "content": case["input_text"]}])
            return {"pipeline_id": case["pipeline_id"], "verdict": r.choices[0].message.content.strip(),
                    "usage": {"prompt_tokens": r.usage.prompt_tokens, "completion_tokens": r.usage.completion_tokens}}
    results = await asyncio.gather(*[ask(m, c) for c in cases for m in ("old", "new")])
    with open(out, "w") as f:
        for r in results:
            f.write(json.dumps(r) + "\n")
asyncio.run(main())
PY

measure() {  # name, command…: prints "wall_s peak_kb"
  local name=$1; shift
  /usr/bin/time -v "$@" 2> "$work/time.txt" >/dev/null || { cat "$work/time.txt" >&2; exit 1; }
  local wall kb
  wall=$(awk -F': ' '/Elapsed \(wall clock\)/ {n=split($2,a,":"); s=0; for(i=1;i<=n;i++) s=s*60+a[i]; print s}' "$work/time.txt")
  kb=$(awk -F': ' '/Maximum resident set size/ {print $2}' "$work/time.txt")
  echo "$name $wall $kb" >> "$work/results.txt"
}
for _ in $(seq "$runs"); do
  rm -f "$work/old.jsonl" "$work/new.jsonl"
  measure deploy-gate ./target/release/deploy-gate run --test-set "$work/cases.jsonl" --old "$work/old.yaml" \
    --new "$work/new.yaml" --out-old "$work/old.jsonl" --out-new "$work/new.jsonl" --no-cache
  measure AsyncOpenAI "$venv/bin/python" "$work/async_openai.py" "$work/cases.jsonl" "http://127.0.0.1:$port/v1" "$conc" "$work/py.jsonl"
done
[ "$(wc -l < "$work/old.jsonl")" = "$cases" ] && [ "$(wc -l < "$work/py.jsonl")" = $((2 * cases)) ] || { echo "incomplete output" >&2; exit 1; }
echo "machine: $(nproc) cores; $cases cases, 2 models, $conc requests in flight per model, $runs runs each (median)"
for name in deploy-gate AsyncOpenAI; do
  wall=$(awk -v n="$name" '$1==n {print $2}' "$work/results.txt" | sort -g | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}')
  kb=$(awk -v n="$name" '$1==n {print $3}' "$work/results.txt" | sort -g | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}')
  awk -v n="$name" -v c="$cases" -v w="$wall" -v m="$kb" 'BEGIN {
    printf "%-12s %7.2f s  %9.0f cases/s  %9.0f requests/s  peak %6.1f MB\n", n, w, c/w, 2*c/w, m/1024 }'
done
