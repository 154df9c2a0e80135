#!/usr/bin/env python3
"""Start llama.cpp's OpenAI-compatible server (llama-cpp-python) on a tiny model.

    python3 tests/servers/llama_server.py [--setup] [--model PATH] [--log FILE] ...

Stdlib only: any python3 can run it; the server itself runs in the venv made by
tests/servers/llama_venv.sh (default <repo>/.venv-llama, or $LLAMA_VENV).

It picks a free port on 127.0.0.1, writes the tiny model (tiny_model.py; cached
in $TMPDIR/llama-tiny-model/, keyed by the script's hash) unless --model is
given, starts `python -m llama_cpp.server` as its child, waits until
GET /v1/models answers 200, then prints ONE line on stdout and flushes it:

    {"port": 41234, "pid": 5678, "launcher_pid": 5677, "base_url": "http://127.0.0.1:41234",
     "model": "tiny", "model_path": "...", "log": "/tmp/llama-server-....log"}

(one line in reality). It then stays in the foreground, keeping the server as
its child, and stops it (SIGTERM, then SIGKILL after 5 s) when
  * its stdin is a pipe and reaches EOF (the test dropped the pipe or died),
  * it gets SIGTERM, SIGINT or SIGHUP,
  * or it is SIGKILLed itself (the server has PR_SET_PDEATHSIG = SIGKILL).
If the server dies on its own the launcher exits with status 1.
stdin that is /dev/null or a terminal is not watched (use a signal).

Exit status before the ready line: 3 = venv missing (run llama_venv.sh or pass
--setup), 1 = server did not come up in --timeout seconds (its log tail goes
to stderr).

A Rust test: spawn `python3 tests/servers/llama_server.py` with stdin and
stdout piped (and process_group(0)), read one line, parse "port"; at the end
drop the stdin pipe (or kill the group) and wait for the child.
"""
import argparse
import hashlib
import json
import os
import signal
import socket
import stat
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))
REPO_ROOT = os.path.dirname(os.path.dirname(HERE))


def log(msg):
    print("llama_server: " + msg, file=sys.stderr, flush=True)


def venv_python(args):
    venv = args.venv or os.environ.get("LLAMA_VENV") or ".venv-llama"
    if not os.path.isabs(venv):
        venv = os.path.join(REPO_ROOT, venv)
    py = os.path.join(venv, "bin", "python")
    if not os.path.exists(py) and args.setup:
        env = dict(os.environ, LLAMA_VENV=venv)
        # the build's own output goes to our stderr, never to our stdout
        rc = subprocess.call(["bash", os.path.join(HERE, "llama_venv.sh")],
                             env=env, stdin=subprocess.DEVNULL, stdout=sys.stderr)
        if rc != 0:
            log("llama_venv.sh failed with status %d" % rc)
            sys.exit(3)
    if not os.path.exists(py):
        log("no venv at %s: run `bash tests/servers/llama_venv.sh` or pass --setup" % venv)
        sys.exit(3)
    return py


def tiny_model(py):
    script = os.path.join(HERE, "tiny_model.py")
    with open(script, "rb") as f:
        key = hashlib.sha256(f.read()).hexdigest()[:16]
    cache = os.path.join(tempfile.gettempdir(), "llama-tiny-model")
    os.makedirs(cache, exist_ok=True)
    path = os.path.join(cache, "tiny-%s.gguf" % key)
    if not os.path.exists(path):
        tmp = "%s.%d.tmp" % (path, os.getpid())
        subprocess.check_call([py, script, tmp], stdin=subprocess.DEVNULL, stdout=sys.stderr)
        os.replace(tmp, path)  # atomic: concurrent launchers write identical bytes
    return path


def free_port():
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def set_pdeathsig():
    # Runs in the child between fork and exec: die with the launcher.
    try:
        import ctypes
        libc = ctypes.CDLL("libc.so.6", use_errno=True)
        libc.prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
    except Exception:
        pass


def models_ready(port):
    try:
        with urllib.request.urlopen("http://127.0.0.1:%d/v1/models" % port, timeout=2) as r:
            return r.status == 200
    except (urllib.error.URLError, OSError, ValueError):
        return False


def tail(path, n=40):
    try:
        with open(path, "rb") as f:
            return b"\n".join(f.read().splitlines()[-n:]).decode("utf-8", "replace")
    except OSError:
        return ""


def stop(proc):
    if proc.poll() is None:
        proc.terminate()
        try:
            proc.wait(5)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--venv", help="venv dir (default $LLAMA_VENV or <repo>/.venv-llama)")
    ap.add_argument("--setup", action="store_true", help="run llama_venv.sh first if the venv is missing")
    ap.add_argument("--model", help="GGUF file (default: the tiny model, generated)")
    ap.add_argument("--model-alias", default="tiny", help="name in /v1/models (default tiny)")
    ap.add_argument("--n-ctx", type=int, default=512)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--port", type=int, default=0, help="default: a free port")
    ap.add_argument("--log", help="server log file (default: a temp file, removed on a clean stop)")
    ap.add_argument("--timeout", type=float, default=60.0, help="seconds to wait for /v1/models")
    ap.add_argument("--quiet", action="store_true", help="server verbose=False (no llama.cpp timings in the log)")
    ap.add_argument("--interrupt-requests", action="store_true",
                    help="keep llama-cpp-python's default of cutting a running stream short (data: [DONE], "
                         "no finish_reason) when another request arrives; off here for deterministic streams")
    args = ap.parse_args()

    py = venv_python(args)
    model = os.path.abspath(args.model) if args.model else tiny_model(py)

    if args.log:
        log_path, keep_log = os.path.abspath(args.log), True
        log_file = open(log_path, "ab")
    else:
        fd, log_path = tempfile.mkstemp(prefix="llama-server-", suffix=".log")
        log_file, keep_log = os.fdopen(fd, "ab"), False

    stop_event = threading.Event()

    def on_signal(signum, _frame):
        stop_event.set()

    for s in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        signal.signal(s, on_signal)

    proc, port = None, None
    t0 = time.monotonic()
    for _attempt in range(3):  # retry if another process took the port meanwhile
        port = args.port or free_port()
        cmd = [py, "-m", "llama_cpp.server",
               "--model", model, "--model_alias", args.model_alias,
               "--host", "127.0.0.1", "--port", str(port),
               "--n_ctx", str(args.n_ctx),
               "--n_threads", str(args.threads), "--n_threads_batch", str(args.threads)]
        cmd += ["--interrupt_requests", "True" if args.interrupt_requests else "False"]
        if args.quiet:
            cmd += ["--verbose", "False"]
        log_file.write(("$ %s\n" % " ".join(cmd)).encode())
        log_file.flush()
        env = dict(os.environ, PYTHONUNBUFFERED="1")
        proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=log_file,
                                stderr=subprocess.STDOUT, env=env, preexec_fn=set_pdeathsig)
        deadline = time.monotonic() + args.timeout
        while proc.poll() is None and time.monotonic() < deadline and not stop_event.is_set():
            if models_ready(port):
                break
            time.sleep(0.1)
        else:
            if stop_event.is_set():
                stop(proc)
                sys.exit(1)
            if proc.poll() is not None and not args.port and "already in use" in tail(log_path, 30):
                log("port %d was taken meanwhile; retrying" % port)
                continue
            if proc.poll() is not None:
                log("server exited with %s; log %s:\n%s" % (proc.returncode, log_path, tail(log_path)))
                sys.exit(1)
            stop(proc)
            log("server not ready after %.0f s; log %s:\n%s" % (args.timeout, log_path, tail(log_path)))
            sys.exit(1)
        break
    else:
        log("server failed to start; log %s:\n%s" % (log_path, tail(log_path)))
        sys.exit(1)

    ready = {
        "port": port,
        "pid": proc.pid,
        "launcher_pid": os.getpid(),
        "base_url": "http://127.0.0.1:%d" % port,
        "model": args.model_alias,
        "model_path": model,
        "log": log_path,
        "start_seconds": round(time.monotonic() - t0, 3),
    }
    sys.stdout.write(json.dumps(ready) + "\n")
    sys.stdout.flush()

    try:
        mode = os.fstat(0).st_mode
        watch_stdin = stat.S_ISFIFO(mode) or stat.S_ISSOCK(mode)
    except OSError:
        watch_stdin = False
    if watch_stdin:
        def read_stdin():
            try:
                while os.read(0, 4096):
                    pass
            except OSError:
                pass
            stop_event.set()
        threading.Thread(target=read_stdin, daemon=True).start()

    while not stop_event.wait(0.2):
        if proc.poll() is not None:
            log("server exited unexpectedly with %s; log %s:\n%s" % (proc.returncode, log_path, tail(log_path)))
            sys.exit(1)
    stop(proc)
    log_file.close()
    if not keep_log:
        try:
            os.unlink(log_path)
        except OSError:
            pass
    return 0


if __name__ == "__main__":
    sys.exit(main())
