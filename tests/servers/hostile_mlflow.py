#!/usr/bin/env python3
"""A hostile MLflow registry for tests/it/mlflow_cli.rs: it answers the REST paths that
`apply --mlflow` and `verify --mlflow` call, each registered model name a way of being hostile.

    python3 tests/servers/hostile_mlflow.py --log FILE [--local DIR]

Python 3 standard library only. On start it prints exactly one line, `{"port": N}`, then serves
on 127.0.0.1 until SIGTERM. Every request is appended to FILE as a line `METHOD PATH?QUERY`
(written before the answer), so a test can say that nothing was written (no POST).

The registered model name chooses the behaviour:

| name            | what the server does                                                       |
|-----------------|----------------------------------------------------------------------------|
| `pages`         | a search for versions answers no version and a new `next_page_token`, ever |
| `huge-json`     | the alias's answer is an endless JSON body                                 |
| `huge-error`    | the alias's answer is HTTP 500 with an endless body                        |
| `deep`          | every folder of the version's files holds one folder, ever deeper          |
| `many-files`    | the version's files list 100 001 files                                     |
| `endless-file`  | a file listed with 10 bytes is sent without end                            |
| `unlisted-file` | a file listed without a size is sent without end                           |
| `big-listed`    | a file listed with 10^15 bytes                                             |
| `many-versions` | 5 versions, each one file of 10 bytes (within any per-version limit)       |
| `local-NAME`    | 3 versions, whose files are at `file://DIR/NAME` (DIR: `--local`)          |

Any other name: HTTP 404 RESOURCE_DOES_NOT_EXIST. An alias is never set (answered 400 "not
found"), and a POST is answered 403.
"""

import argparse
import json
import signal
import sys
import threading
import urllib.parse
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

API = "/api/2.0/mlflow/"
ARTIFACTS = "/api/2.0/mlflow-artifacts/artifacts"
CHUNK = b"x" * 65536

log_lock = threading.Lock()
log_path = None
local_dir = None


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):  # no stderr noise
        pass

    def record(self):
        with log_lock, open(log_path, "a", encoding="utf-8") as f:
            f.write(f"{self.command} {self.path}\n")

    def send_json(self, status, obj):
        body = json.dumps(obj).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def endless(self, status, head=b""):
        """An answer without a length that never ends (until the client leaves)."""
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Connection", "close")
        self.end_headers()
        self.close_connection = True
        try:
            self.wfile.write(head)
            while True:
                self.wfile.write(CHUNK)
        except (BrokenPipeError, ConnectionResetError):
            pass

    def do_POST(self):
        self.record()
        length = int(self.headers.get("Content-Length") or 0)
        self.rfile.read(min(length, 1 << 20))
        self.send_json(403, {"error_code": "PERMISSION_DENIED", "message": "this registry writes nothing"})

    def do_GET(self):
        self.record()
        url = urllib.parse.urlsplit(self.path)
        q = dict(urllib.parse.parse_qsl(url.query))
        path = url.path
        if path == "/health":
            return self.send_json(200, {"ok": True})
        if path.startswith(ARTIFACTS):
            return self.artifacts(path[len(ARTIFACTS):].lstrip("/"), q)
        call = path[len(API):] if path.startswith(API) else ""
        name = q.get("name", "")
        if call == "model-versions/search":
            name = q.get("filter", "").removeprefix("name='").removesuffix("'")
        if name not in {
            "many-versions",
            "pages",
            "huge-json",
            "huge-error",
            "deep",
            "many-files",
            "endless-file",
            "unlisted-file",
            "big-listed",
        } and not (name.startswith("local-") and local_dir):
            return self.send_json(404, {"error_code": "RESOURCE_DOES_NOT_EXIST", "message": f"no model {name}"})
        if call == "registered-models/alias":
            if name == "huge-json":
                return self.endless(200, b'{"model_version": {"name": "huge-json", "version": "1", "tags": [')
            if name == "huge-error":
                return self.endless(500)
            return self.send_json(
                400,
                {"error_code": "INVALID_PARAMETER_VALUE", "message": f"Registered model alias {q.get('alias')} not found."},
            )
        if call == "model-versions/search" and (name == "many-versions" or name.startswith("local-")):
            count = 5 if name == "many-versions" else 3
            versions = [{"name": name, "version": str(i)} for i in range(1, count + 1)]
            return self.send_json(200, {"model_versions": versions})
        if call == "model-versions/search":
            n = int(q.get("page_token") or 0)
            return self.send_json(200, {"model_versions": [], "next_page_token": str(n + 1)})
        if call == "registered-models/get":
            return self.send_json(200, {"registered_model": {"name": name}})
        if call == "model-versions/get":
            return self.send_json(200, {"model_version": {"name": name, "version": q.get("version", "1")}})
        if call == "model-versions/get-download-uri" and name.startswith("local-"):
            return self.send_json(200, {"artifact_uri": f"file://{local_dir}/{name.removeprefix('local-')}"})
        if call == "model-versions/get-download-uri" and name == "many-versions":
            return self.send_json(200, {"artifact_uri": f"mlflow-artifacts:/{name}/{q.get('version', '1')}"})
        if call == "model-versions/get-download-uri":
            return self.send_json(200, {"artifact_uri": f"mlflow-artifacts:/{name}/files"})
        return self.send_json(404, {"error_code": "ENDPOINT_NOT_FOUND", "message": path})

    def artifacts(self, rest, q):
        if rest:
            # A file's download: `NAME/files/...`.
            name = rest.split("/", 1)[0]
            if name in {"endless-file", "unlisted-file"}:
                return self.endless(200)
            body = b"0123456789"
            self.send_response(200)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            return self.wfile.write(body)
        listed = q.get("path", "")
        name = listed.split("/", 1)[0]
        if name == "deep":
            return self.send_json(200, {"root_uri": "", "files": [{"path": "d", "is_dir": True}]})
        if name == "many-files":
            files = [{"path": f"f{i}", "is_dir": False, "file_size": 10} for i in range(100_001)]
            return self.send_json(200, {"files": files})
        if name == "endless-file":
            return self.send_json(200, {"files": [{"path": "weights.bin", "is_dir": False, "file_size": 10}]})
        if name == "unlisted-file":
            return self.send_json(200, {"files": [{"path": "weights.bin", "is_dir": False}]})
        if name == "many-versions":
            return self.send_json(200, {"files": [{"path": "weights.bin", "is_dir": False, "file_size": 10}]})
        if name == "big-listed":
            return self.send_json(200, {"files": [{"path": "weights.bin", "is_dir": False, "file_size": 10**15}]})
        return self.send_json(200, {"files": []})


def main():
    global log_path, local_dir
    p = argparse.ArgumentParser()
    p.add_argument("--log", required=True)
    p.add_argument("--local")
    args = p.parse_args()
    log_path = args.log
    local_dir = args.local
    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    signal.signal(signal.SIGTERM, lambda *_: threading.Thread(target=server.shutdown).start())
    print(json.dumps({"port": server.server_address[1]}), flush=True)
    server.serve_forever()
    sys.exit(0)


if __name__ == "__main__":
    main()
