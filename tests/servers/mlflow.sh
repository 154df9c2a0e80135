#!/usr/bin/env bash
# A real MLflow tracking server for tests/it/mlflow_cli.rs (apply --mlflow, verify --mlflow).
#
#   bash tests/servers/mlflow.sh venv
#       creates (idempotently) the venv .venv-mlflow at the repo root with mlflow[auth]
#       (the full package: mlflow-skinny has no server; [auth] is the basic-auth app's
#       Flask-WTF) and prints how long the install took.
#   bash tests/servers/mlflow.sh start DIR PORT [auth] [WATCH_PID]
#       starts `python -m mlflow server` on 127.0.0.1:PORT with its store and artifacts under
#       DIR (sqlite, and the artifact proxy: sources are mlflow-artifacts:/ URIs), in its own
#       process group; with `auth`, MLflow's basic-auth app (admin password in
#       DIR/basic_auth.ini). Waits for GET /health (up to MLFLOW_START_SECONDS, 300 s) and prints the start time.
#       With WATCH_PID, the server is stopped when that process ends (the test binary), and
#       DIR removed.
#   bash tests/servers/mlflow.sh stop DIR
#
# Environment: MLFLOW_VENV (default .venv-mlflow, relative to the repo root), PYTHON.
set -euo pipefail

MLFLOW_VERSION=3.17.2

repo_root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
venv="${MLFLOW_VENV:-.venv-mlflow}"
case "$venv" in /*) ;; *) venv="$repo_root/$venv" ;; esac
python="${PYTHON:-python3}"

check() {
    [ -x "$venv/bin/python" ] || return 1
    "$venv/bin/python" - "$MLFLOW_VERSION" <<'EOF' 2>/dev/null
import sys
from importlib.metadata import version
assert version("mlflow") == sys.argv[1], version("mlflow")
import mlflow.server, flask_wtf  # noqa: F401  (the server, and the [auth] extra)
EOF
}

make_venv() {
    if check; then
        echo "mlflow_venv: $venv already has mlflow==$MLFLOW_VERSION (skipped)"
        return 0
    fi
    mkdir -p "$(dirname "$venv")"
    if command -v flock >/dev/null 2>&1; then
        exec 9>"${TMPDIR:-/tmp}/mlflow-venv-$(printf '%s' "$venv" | cksum | cut -d' ' -f1).lock"
        flock 9
        if check; then
            echo "mlflow_venv: $venv was completed by another run (skipped)"
            return 0
        fi
    fi
    local start end
    start=$(date +%s)
    [ -x "$venv/bin/python" ] || "$python" -m venv "$venv"
    echo "mlflow_venv: installing mlflow[auth]==$MLFLOW_VERSION into $venv"
    nice -n 10 "$venv/bin/python" -m pip install --disable-pip-version-check --progress-bar off -q --no-compile \
        "mlflow[auth]==$MLFLOW_VERSION"
    if ! check; then
        echo "mlflow_venv: install finished but the import check failed" >&2
        exit 1
    fi
    end=$(date +%s)
    echo "mlflow_venv: installed in $((end - start)) s ($venv)"
}

start_server() {
    local dir="$1" port="$2" auth="${3:-}" watch="${4:-}"
    check || { echo "mlflow.sh: no mlflow venv at $venv: run 'bash tests/servers/mlflow.sh venv'" >&2; exit 1; }
    mkdir -p "$dir/art"
    local app=()
    if [ "$auth" = auth ]; then
        # The admin's password is the test's own, in a file only this server reads.
        cat > "$dir/basic_auth.ini" <<EOF
[mlflow]
default_permission = READ
database_uri = sqlite:///$dir/auth.sqlite
admin_username = admin
admin_password = admin-password-1234
authorization_function = mlflow.server.auth:authenticate_request_basic_auth
EOF
        export MLFLOW_AUTH_CONFIG_PATH="$dir/basic_auth.ini"
        export MLFLOW_FLASK_SERVER_SECRET_KEY="deploy-gate-test-$(od -An -N8 -tx8 /dev/urandom | tr -d ' ')"
        app=(--app-name basic-auth)
    elif [ "$auth" != "" ] && [ "$auth" != plain ]; then
        echo "mlflow.sh: start DIR PORT [auth|plain] [WATCH_PID]" >&2
        exit 2
    fi
    local start end
    start=$(date +%s.%N)
    # Its own session, so `stop` ends the server and its workers together. Without MLflow 3's job
    # execution (a job runner and three huey consumers: 12–13% of a core each over their first
    # minute in a test run, by ps): the registry's REST API, which the tests use, does not need it.
    MLFLOW_SERVER_ENABLE_JOB_EXECUTION=false setsid "$venv/bin/python" -m mlflow server --host 127.0.0.1 --port "$port" --workers 1 \
        --backend-store-uri "sqlite:///$dir/db.sqlite" \
        --serve-artifacts --artifacts-destination "file://$dir/art" \
        "${app[@]}" > "$dir/server.log" 2>&1 < /dev/null &
    local pid=$!
    echo "$pid" > "$dir/server.pid"
    if [ -n "$watch" ]; then
        # Stops the server when the process that asked for it ends, however it ends.
        setsid bash -c 'while kill -0 "$1" 2>/dev/null && kill -0 "$2" 2>/dev/null; do sleep 1; done; kill -TERM -- "-$2" 2>/dev/null; sleep 2; kill -KILL -- "-$2" 2>/dev/null; rm -rf -- "$3"' \
            _ "$watch" "$pid" "$dir" > /dev/null 2>&1 < /dev/null &
    fi
    # A deadline by the clock, not a count of tries: on a busy 2-core machine (the fuzz build and
    # the other server starting beside it) a start has taken 105 s, and each try's curl is slow too.
    local limit="${MLFLOW_START_SECONDS:-300}" deadline
    deadline=$(( $(date +%s) + limit ))
    while [ "$(date +%s)" -lt "$deadline" ]; do
        if curl -fsS --max-time 10 "http://127.0.0.1:$port/health" > /dev/null 2>&1; then
            end=$(date +%s.%N)
            printf 'mlflow_server: up on port %s in %.1f s (%s)\n' "$port" "$(echo "$end - $start" | bc)" "${auth:-plain}"
            return 0
        fi
        if ! kill -0 "$pid" 2>/dev/null; then
            echo "mlflow_server: the server exited; its log:" >&2
            tail -n 40 "$dir/server.log" >&2
            exit 1
        fi
        sleep 0.1
    done
    echo "mlflow_server: no answer on /health after $limit s; its log:" >&2
    tail -n 40 "$dir/server.log" >&2
    kill -TERM -- "-$pid" 2>/dev/null || true
    exit 1
}

stop_server() {
    local dir="$1"
    [ -f "$dir/server.pid" ] || return 0
    local pid
    pid=$(cat "$dir/server.pid")
    kill -TERM -- "-$pid" 2>/dev/null || true
    for _ in $(seq 1 50); do
        kill -0 "$pid" 2>/dev/null || break
        sleep 0.1
    done
    kill -KILL -- "-$pid" 2>/dev/null || true
    rm -f "$dir/server.pid"
}

case "${1:-}" in
    venv) make_venv ;;
    start) shift; start_server "$@" ;;
    stop) shift; stop_server "$@" ;;
    *) echo "usage: mlflow.sh venv | start DIR PORT [auth|plain] [WATCH_PID] | stop DIR" >&2; exit 2 ;;
esac
