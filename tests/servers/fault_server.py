#!/usr/bin/env python3
"""Fault-injecting HTTP/1.1 server for the HTTP client tests of `deploy-gate run`.

A real process on loopback (no mocks inside the client). Python 3.11 standard
library only. One server serves every scenario: the behaviour of each request is
chosen by a directive inside the request's own text (see tests/servers/README.md).

    python3 tests/servers/fault_server.py [--port N] [--capacity N] [--latency MS] [--log FILE]

On start it prints exactly one line, `{"port": N}`, to stdout and flushes; then it
serves until SIGTERM or SIGINT, on which it exits with status 0.
"""

from __future__ import annotations

import argparse
import email.utils
import json
import math
import select
import signal
import socket
import struct
import sys
import threading
import time
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

CHAT_PATH = "/v1/chat/completions"
AGENT_PATH = "/agent"
ELSEWHERE_PATH = "/elsewhere"
STATS_PATH = "/stats"
STATS_RESET_PATH = "/stats/reset"
HEALTH_PATH = "/health"

# The largest request body the server reads (a guard, not a test feature).
MAX_REQUEST_BODY = 64 * 1024 * 1024

KNOWN_FAULTS = {
    "429", "503", "500", "400", "401", "slow", "reset", "notjson", "big",
    "redirect", "nocontent", "echo", "echokey",
}

# Errors that mean "the client went away": never worth a traceback.
DISCONNECT_ERRORS = (
    BrokenPipeError,
    ConnectionResetError,
    ConnectionAbortedError,
    TimeoutError,
    socket.timeout,
)


def compact(value) -> str:
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


def parse_directive(text: str) -> dict[str, str]:
    """Every whitespace-separated `k=v` token of the text, the first one of each key winning."""
    params: dict[str, str] = {}
    for token in text.split():
        key, sep, value = token.partition("=")
        if sep and key and key not in params:
            params[key] = value
    return params


def content_text(content) -> str:
    """The text of a chat message's content: a string, or a list of OpenAI content parts."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = []
        for part in content:
            if isinstance(part, dict) and isinstance(part.get("text"), str):
                parts.append(part["text"])
            elif isinstance(part, str):
                parts.append(part)
        return " ".join(parts)
    return compact(content)


class Stats:
    """Bookkeeping shared by all handler threads; every access holds the lock."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.in_flight = 0
        self._reset_locked()

    def _reset_locked(self) -> None:
        self.requests = 0
        self.by_content: dict[str, int] = {}
        self.fault_counts: dict[str, int] = {}
        self.max_in_flight = self.in_flight
        self.followed_redirects = 0
        self.auth_headers_seen: list[str] = []
        self.paths: dict[str, int] = {}

    def reset(self) -> None:
        with self.lock:
            self._reset_locked()

    def snapshot(self) -> dict:
        with self.lock:
            return {
                "requests": self.requests,
                "by_content": dict(self.by_content),
                "max_in_flight": self.max_in_flight,
                "in_flight": self.in_flight,
                "followed_redirects": self.followed_redirects,
                "auth_headers_seen": list(self.auth_headers_seen),
                "paths": dict(self.paths),
            }


class FaultServer(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True
    request_queue_size = 1024

    def __init__(self, address, capacity: int | None, latency_ms: float, log_path: str | None):
        super().__init__(address, Handler)
        self.capacity = capacity
        self.latency = max(0.0, latency_ms) / 1000.0
        self.stats = Stats()
        self.log_lock = threading.Lock()
        self.log_file = open(log_path, "a", encoding="utf-8") if log_path else None

    def log_request_line(self, record: dict) -> None:
        if self.log_file is None:
            return
        line = json.dumps(record, ensure_ascii=False) + "\n"
        with self.log_lock:
            try:
                self.log_file.write(line)
                self.log_file.flush()
            except (OSError, ValueError):
                pass

    def handle_error(self, request, client_address) -> None:
        exc = sys.exc_info()[1]
        if isinstance(exc, DISCONNECT_ERRORS) or isinstance(exc, OSError):
            return  # a client that went away (or a socket we reset on purpose)
        super().handle_error(request, client_address)

    def server_close(self) -> None:
        super().server_close()
        if self.log_file is not None:
            with self.log_lock:
                self.log_file.close()
                self.log_file = None


class BadRequest(Exception):
    pass


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = "fault-server/1"
    # Idle keep-alive connections are closed after this many seconds.
    timeout = 120
    server: FaultServer

    # ----------------------------------------------------------------- plumbing

    def setup(self) -> None:
        super().setup()
        try:
            self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        except OSError:
            pass

    def version_string(self) -> str:
        return self.server_version

    def log_message(self, format, *args) -> None:  # noqa: A002 (the base class's name)
        pass  # quiet: --log FILE is the request log

    def handle_one_request(self) -> None:
        try:
            super().handle_one_request()
        except DISCONNECT_ERRORS:
            self.close_connection = True
        except OSError:
            self.close_connection = True

    def read_body(self) -> bytes:
        if "chunked" in self.headers.get("Transfer-Encoding", "").lower():
            chunks = []
            total = 0
            while True:
                line = self.rfile.readline(65537)
                if not line:
                    raise ConnectionResetError("eof in chunked body")
                size = int(line.split(b";", 1)[0].strip() or b"0", 16)
                if size == 0:
                    # trailers, up to the empty line
                    while True:
                        trailer = self.rfile.readline(65537)
                        if trailer in (b"\r\n", b"\n", b""):
                            break
                    break
                total += size
                if total > MAX_REQUEST_BODY:
                    raise BadRequest("request body too large")
                chunks.append(self.rfile.read(size))
                self.rfile.readline(3)  # CRLF after the chunk
            return b"".join(chunks)
        length_text = self.headers.get("Content-Length")
        if not length_text:
            return b""
        try:
            length = int(length_text)
        except ValueError:
            self.close_connection = True
            raise BadRequest("bad Content-Length")
        if length < 0 or length > MAX_REQUEST_BODY:
            self.close_connection = True
            raise BadRequest("request body too large")
        data = self.rfile.read(length)
        if len(data) < length:
            raise ConnectionResetError("eof in body")
        return data

    def send_raw(self, status: int, body: bytes, content_type: str = "application/json",
                 headers: dict[str, str] | None = None) -> None:
        """One response, headers and body in a single write (no Nagle stalls on keep-alive)."""
        reason = self.responses.get(status, ("",))[0]
        lines = [
            f"HTTP/1.1 {status} {reason}",
            f"Server: {self.version_string()}",
            f"Date: {self.date_time_string()}",
            f"Content-Type: {content_type}",
            f"Content-Length: {len(body)}",
        ]
        for name, value in (headers or {}).items():
            lines.append(f"{name}: {value}")
        if self.close_connection:
            lines.append("Connection: close")
        head = ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1")
        self.before_response(status)
        self.wfile.write(head + body)

    def before_response(self, status: int | None) -> None:
        """Leave the in-flight count and write the log line, before the client can see the answer.

        Leaving before the write keeps the server's in-flight window inside the client's (request
        sent .. response received): a client at its limit that sends its next request as soon as
        an answer arrives is never counted one over, and --capacity never rejects it for that.
        """
        self.status_sent = status
        if self.holds_flight:
            self.holds_flight = False
            stats = self.server.stats
            with stats.lock:
                stats.in_flight -= 1
        if not self.logged:
            self.logged = True
            self.server.log_request_line({
                "time": round(time.time(), 3),
                "method": self.command,
                "path": self.route_path,
                "content": self.log_content,
                "fault": self.log_fault,
                "status": status,
            })

    def send_json(self, status: int, value, headers: dict[str, str] | None = None) -> None:
        self.send_raw(status, compact(value).encode("utf-8"), "application/json", headers)

    def send_error_json(self, status: int, message: str, err_type: str,
                        headers: dict[str, str] | None = None, size: int | None = None) -> None:
        """An OpenAI-style error; with `size`, padded (an `error.padding` field of `é`s, two
        bytes each, after the message) to exactly `size` bytes when that is larger."""
        value = {"error": {"message": message, "type": err_type, "code": status}}
        if size is not None:
            value["error"]["padding"] = ""
            base = len(compact(value).encode("utf-8"))
            if size > base:
                # An odd gap ends with one ASCII byte, so the size is exact.
                value["error"]["padding"] = "é" * ((size - base) // 2) + "x" * ((size - base) % 2)
            else:
                del value["error"]["padding"]
        self.send_json(status, value, headers)

    # ------------------------------------------------------------------ routing

    def do_GET(self) -> None:
        self.route("GET")

    def do_POST(self) -> None:
        self.route("POST")

    def do_PUT(self) -> None:
        self.route("PUT")

    def do_DELETE(self) -> None:
        self.route("DELETE")

    def route(self, method: str) -> None:
        self.status_sent = None
        self.log_content = None
        self.log_fault = None
        self.holds_flight = False
        self.logged = False
        path = self.path.split("?", 1)[0]
        self.route_path = path
        try:
            try:
                body = self.read_body()
            except BadRequest as exc:
                self.send_error_json(400, str(exc), "invalid_request_error")
                return
            if path == STATS_PATH and method == "GET":
                self.send_json(200, self.server.stats.snapshot())
                return
            if path == STATS_RESET_PATH and method == "POST":
                self.server.stats.reset()
                self.send_json(200, {"reset": True})
                return
            if path == HEALTH_PATH and method == "GET":
                self.send_json(200, {"ok": True})
                return
            self.count_request(path)
            if path in (CHAT_PATH, AGENT_PATH):
                if method != "POST":
                    self.send_error_json(405, f"{method} not allowed on {path}",
                                         "invalid_request_error", {"Allow": "POST"})
                    return
                self.serve_scenario(path, body)
                return
            if path == ELSEWHERE_PATH:
                with self.server.stats.lock:
                    self.server.stats.followed_redirects += 1
                self.serve_elsewhere(body)
                return
            self.send_error_json(404, f"no such path: {path}", "not_found_error")
        finally:
            self.before_response(self.status_sent)  # no answer written: a client gone, say

    def count_request(self, path: str) -> None:
        auth = self.headers.get("Authorization")
        stats = self.server.stats
        with stats.lock:
            stats.requests += 1
            stats.paths[path] = stats.paths.get(path, 0) + 1
            if auth is not None and auth not in stats.auth_headers_seen:
                stats.auth_headers_seen.append(auth)

    # ---------------------------------------------------------------- scenarios

    def extract(self, path: str, body: bytes):
        """(request JSON, scenario text, words in all messages) or raises BadRequest."""
        try:
            request = json.loads(body.decode("utf-8")) if body else None
        except (UnicodeDecodeError, json.JSONDecodeError) as exc:
            raise BadRequest(f"request body is not JSON: {exc}")
        if not isinstance(request, dict):
            raise BadRequest("request body must be a JSON object")
        if path == CHAT_PATH:
            messages = request.get("messages")
            if not isinstance(messages, list) or not messages:
                raise BadRequest("'messages' must be a non-empty array")
            texts = [content_text(m.get("content")) if isinstance(m, dict) else "" for m in messages]
            prompt_words = sum(len(t.split()) for t in texts)
            return request, texts[-1], prompt_words
        value = request.get("input")
        if value is None:
            raise BadRequest("'input' is required")
        text = value if isinstance(value, str) else compact(value)
        return request, text, len(text.split())

    def serve_scenario(self, path: str, body: bytes) -> None:
        stats = self.server.stats
        try:
            request, text, prompt_words = self.extract(path, body)
        except BadRequest as exc:
            self.send_error_json(400, str(exc), "invalid_request_error")
            return
        self.log_content = text
        with stats.lock:
            stats.in_flight += 1
            self.holds_flight = True
            stats.max_in_flight = max(stats.max_in_flight, stats.in_flight)
            stats.by_content[text] = stats.by_content.get(text, 0) + 1
            over_capacity = (self.server.capacity is not None
                             and stats.in_flight > self.server.capacity)
        try:
            if over_capacity:
                self.log_fault = "capacity"
                self.send_error_json(429, "server over capacity", "rate_limit_error",
                                     {"Retry-After": "0"})
                return
            params = parse_directive(text)
            fault = params.get("fault")
            if fault is not None:
                with stats.lock:
                    seen = stats.fault_counts.get(text, 0) + 1
                    stats.fault_counts[text] = seen
                times = params.get("times")
                if times is not None:
                    try:
                        if seen > int(times):
                            fault = None
                    except ValueError:
                        self.send_error_json(400, f"fault_server: bad times={times}",
                                             "invalid_request_error")
                        return
            self.log_fault = fault
            try:
                self.answer(path, request, text, prompt_words, params, fault)
            except ValueError as exc:  # a bad number in delay=, size=, retry_after_date=
                if self.status_sent is None:
                    self.send_error_json(400, f"fault_server: bad parameter: {exc}",
                                         "invalid_request_error")
        finally:
            if self.holds_flight:  # no answer was written
                self.before_response(self.status_sent)

    def retry_after_headers(self, params: dict[str, str]) -> dict[str, str]:
        headers = {}
        if "retry_after" in params:
            headers["Retry-After"] = params["retry_after"]
        elif "retry_after_date" in params:
            seconds = float(params["retry_after_date"])
            # HTTP-dates have a one-second resolution: round up, never earlier than asked.
            headers["Retry-After"] = email.utils.formatdate(math.ceil(time.time() + seconds),
                                                            usegmt=True)
        return headers

    def answer(self, path: str, request: dict, text: str, prompt_words: int,
               params: dict[str, str], fault: str | None) -> None:
        if fault is None or fault in ("slow",):
            if fault == "slow" and not self.sleep_unless_gone(float(params.get("delay", "1"))):
                return
            self.answer_normally(path, request, prompt_words, params)
            return
        if fault not in KNOWN_FAULTS:
            self.send_error_json(400, f"fault_server: unknown fault {fault!r}",
                                 "invalid_request_error")
            return
        # size= on an error fault: its body padded to that many bytes.
        size = int(params["size"]) if "size" in params else None
        if fault == "429":
            self.send_error_json(429, "Rate limit reached, retry later", "rate_limit_error",
                                 self.retry_after_headers(params), size)
        elif fault == "503":
            self.send_error_json(503, "The server is overloaded", "server_error",
                                 self.retry_after_headers(params), size)
        elif fault == "500":
            self.send_error_json(500, "The server had an error while processing your request",
                                 "server_error", size=size)
        elif fault == "400":
            self.send_error_json(400, "Invalid request: bad parameter", "invalid_request_error",
                                 size=size)
        elif fault == "401":
            auth = self.headers.get("Authorization")
            if auth is None:
                key = "(none)"
            else:
                scheme, _, token = auth.partition(" ")
                key = token if scheme.lower() == "bearer" and token else auth
            self.send_json(401, {"error": {"message": f"invalid api key {key}",
                                           "type": "invalid_request_error",
                                           "code": "invalid_api_key"}})
        elif fault == "echokey":
            # A 200 whose answer is the bearer token, every character \u-escaped: a secret a
            # client must find in any spelling.
            auth = self.headers.get("Authorization") or ""
            token = auth.partition(" ")[2] or auth
            escaped = "".join(f"\\u{ord(c):04x}" for c in token)
            body = ('{"id":"k","object":"chat.completion","created":1,"model":"m","choices":[{"index":0,'
                    '"message":{"role":"assistant","content":"' + escaped + '"},"finish_reason":"stop"}]}')
            self.send_raw(200, body.encode())
        elif fault == "reset":
            self.reset_connection()
        elif fault == "notjson":
            self.send_raw(200, b"<html>oops</html>", "text/html")
        elif fault == "redirect":
            port = self.server.server_address[1]
            self.send_raw(307, b"", "text/plain",
                          {"Location": f"http://127.0.0.1:{port}{ELSEWHERE_PATH}"})
        else:  # big, nocontent, echo: a normal answer, shaped
            self.answer_normally(path, request, prompt_words, params, shape=fault)

    def sleep_unless_gone(self, seconds: float) -> bool:
        """Sleep; False (and the connection closed) as soon as the client hangs up.

        So a client that gave up (a timeout) stops counting as in flight when it closes its
        connection, not when the sleep would have ended.
        """
        deadline = time.monotonic() + max(0.0, seconds)
        poller = select.poll()
        poller.register(self.connection, select.POLLIN | select.POLLHUP | select.POLLERR)
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                return True
            if not poller.poll(min(left, 0.05) * 1000):
                continue
            try:
                data = self.connection.recv(1, socket.MSG_PEEK | socket.MSG_DONTWAIT)
            except BlockingIOError:
                continue
            except OSError:
                data = b""
            if not data:
                self.close_connection = True
                return False
            # The client sent more (pipelining): just sleep out the rest.
            time.sleep(max(0.0, deadline - time.monotonic()))
            return True

    def answer_word(self, request: dict, params: dict[str, str], path: str) -> str:
        word = params.get("answer", "PASS")
        if path == CHAT_PATH and ("response_format" in request or params.get("json") == "1"):
            return json.dumps({"verdict": word}, ensure_ascii=False)
        return word

    def answer_normally(self, path: str, request: dict, prompt_words: int,
                        params: dict[str, str], shape: str | None = None) -> None:
        if self.server.latency and not self.sleep_unless_gone(self.server.latency):
            return
        answer = self.answer_word(request, params, path)
        if shape == "echo":
            answer = compact(request)
        if path == AGENT_PATH:
            result: dict = {"verdict": None if shape == "nocontent" else answer}
            if shape == "echo":
                result = {"verdict": params.get("answer", "PASS"), "echo": request}
            value = {"result": result}
            if shape == "big":
                self.send_padded(value, lambda pad: value["result"].__setitem__("padding", pad),
                                 params)
                return
            self.send_json(200, value)
            return
        content = None if shape == "nocontent" else answer
        completion_words = len(answer.split()) if content is not None else 0
        model = request.get("model")
        value = {
            "id": "chatcmpl-" + uuid.uuid4().hex[:24],
            "object": "chat.completion",
            "created": int(time.time()),
            "model": model if model is not None else "fault-server",
            "choices": [{
                "index": 0,
                "message": {"role": "assistant", "content": content},
                "finish_reason": "stop",
            }],
            "usage": {
                "prompt_tokens": prompt_words,
                "completion_tokens": completion_words,
                "total_tokens": prompt_words + completion_words,
            },
        }
        if shape == "big":
            message = value["choices"][0]["message"]
            self.send_padded(value, lambda pad: message.__setitem__("content", answer + pad),
                             params)
            return
        self.send_json(200, value)

    def send_padded(self, value: dict, set_pad, params: dict[str, str]) -> None:
        """A valid JSON body of about size= bytes (exactly, when it is larger than the skeleton)."""
        size = int(params.get("size", "1000000"))
        set_pad("")
        base = len(compact(value).encode("utf-8"))
        set_pad(" " + "x" * max(0, size - base - 1) if size > base else "")
        self.send_json(200, value)

    def serve_elsewhere(self, body: bytes) -> None:
        """The redirect target: answers normally (no faults) in the shape of the body it got."""
        try:
            request = json.loads(body.decode("utf-8")) if body else {}
        except (UnicodeDecodeError, json.JSONDecodeError):
            request = {}
        if not isinstance(request, dict):
            request = {}
        if isinstance(request.get("messages"), list) or "input" not in request:
            messages = request.get("messages") if isinstance(request.get("messages"), list) else []
            words = sum(len(content_text(m.get("content")).split())
                        for m in messages if isinstance(m, dict))
            self.answer_normally(CHAT_PATH, request, words, {"answer": "REDIRECTED"})
        else:
            self.answer_normally(AGENT_PATH, request, 0, {"answer": "REDIRECTED"})

    def reset_connection(self) -> None:
        """Promise 1000 bytes, send 10, then close with SO_LINGER 0 (an RST, not a FIN)."""
        head = (
            "HTTP/1.1 200 OK\r\n"
            f"Server: {self.version_string()}\r\n"
            "Content-Type: application/json\r\n"
            "Content-Length: 1000\r\n"
            "\r\n"
        ).encode("latin-1")
        self.before_response(200)
        self.close_connection = True
        try:
            self.wfile.write(head + b'{"id":"ch"')
            time.sleep(0.05)  # let the partial body reach the client before the RST
        finally:
            try:
                self.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER,
                                           struct.pack("ii", 1, 0))
            except OSError:
                pass
            # The makefile() reader holds a reference that would defer the real close.
            try:
                self.rfile.close()
            except OSError:
                pass
            self.connection.close()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Fault-injecting HTTP/1.1 test server.")
    parser.add_argument("--port", type=int, default=0, help="port on 127.0.0.1 (0: a free one)")
    parser.add_argument("--capacity", type=int, default=None,
                        help="answer 429 (Retry-After: 0) when more than N requests are in flight")
    parser.add_argument("--latency", type=float, default=0.0,
                        help="base sleep in milliseconds before every normal answer")
    parser.add_argument("--log", default=None, help="append one JSON line per request to FILE")
    args = parser.parse_args(argv)

    server = FaultServer(("127.0.0.1", args.port), args.capacity, args.latency, args.log)

    def stop(signum, frame):  # noqa: ARG001
        # shutdown() waits for serve_forever() to return: call it off the main thread.
        threading.Thread(target=server.shutdown, daemon=True).start()

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)

    sys.stdout.write(json.dumps({"port": server.server_address[1]}) + "\n")
    sys.stdout.flush()
    try:
        server.serve_forever(poll_interval=0.1)
    finally:
        server.server_close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
