#!/usr/bin/env python3
"""Self-test of tests/servers/fault_server.py: plain Python, no pytest.

    python3 tests/servers/test_fault_server.py

Starts the server as subprocesses on loopback, checks every directive over real
sockets, prints `N passed, M failed` and exits 0 only when nothing failed.
"""

from __future__ import annotations

import email.utils
import http.client
import json
import os
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import traceback
import urllib.error
import urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))
SERVER = os.path.join(HERE, "fault_server.py")

TESTS = []


def test(fn):
    TESTS.append(fn)
    return fn


# ------------------------------------------------------------------ helpers


class Server:
    def __init__(self, *args: str):
        self.proc = subprocess.Popen(
            [sys.executable, SERVER, *args],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        line = self.proc.stdout.readline()
        self.first_line = line
        self.port = json.loads(line)["port"]

    def stop(self, sig=signal.SIGTERM, timeout=5.0) -> tuple[int, str]:
        if self.proc.poll() is None:
            self.proc.send_signal(sig)
        try:
            rc = self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
            rc = None
        rest_out = self.proc.stdout.read()
        err = self.proc.stderr.read()
        self.proc.stdout.close()
        self.proc.stderr.close()
        return rc, rest_out + err


def request(port, method, path, body=None, headers=None, timeout=5.0):
    """One request on a fresh connection: (status, headers dict lower-cased, body bytes)."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
    try:
        data = None
        hdrs = dict(headers or {})
        if body is not None:
            data = body if isinstance(body, bytes) else json.dumps(body).encode()
            hdrs.setdefault("Content-Type", "application/json")
        conn.request(method, path, body=data, headers=hdrs)
        resp = conn.getresponse()
        payload = resp.read()
        return resp.status, {k.lower(): v for k, v in resp.getheaders()}, payload
    finally:
        conn.close()


def chat_body(content, model="test-model", **extra):
    body = {"model": model, "messages": [{"role": "user", "content": content}]}
    body.update(extra)
    return body


def chat(port, content, headers=None, **extra):
    return request(port, "POST", "/v1/chat/completions", chat_body(content, **extra), headers)


def agent(port, text, headers=None):
    return request(port, "POST", "/agent", {"input": text}, headers)


def answer_of(payload: bytes):
    return json.loads(payload)["choices"][0]["message"]["content"]


def stats(port):
    status, _, payload = request(port, "GET", "/stats")
    assert status == 200, status
    return json.loads(payload)


def reset(port):
    """Wait until no scenario request is in flight, then reset the counters."""
    wait_idle(port)
    status, _, _ = request(port, "POST", "/stats/reset")
    assert status == 200


def wait_idle(port, timeout=5.0):
    deadline = time.monotonic() + timeout
    while stats(port)["in_flight"] != 0:
        assert time.monotonic() < deadline, "requests still in flight"
        time.sleep(0.02)


def in_parallel(n, fn):
    """Run fn(i) in n threads released together; returns the results in order."""
    results = [None] * n
    barrier = threading.Barrier(n)

    def run(i):
        barrier.wait()
        try:
            results[i] = fn(i)
        except Exception as exc:  # noqa: BLE001 (reported to the caller)
            results[i] = exc

    threads = [threading.Thread(target=run, args=(i,)) for i in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(30)
    return results


# The main server, shared by most tests; started in main().
S: Server
LOG_PATH: str


# -------------------------------------------------------------------- tests


@test
def startup_line_is_port_json():
    assert S.first_line == json.dumps({"port": S.port}) + "\n", repr(S.first_line)
    assert S.port > 0


@test
def explicit_port_is_used():
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    server = Server("--port", str(port))
    try:
        assert server.port == port
        assert chat(port, "explicit port")[0] == 200
    finally:
        rc, out = server.stop()
    assert rc == 0, (rc, out)


@test
def normal_chat_completion():
    body = {
        "model": "judge-7",
        "messages": [
            {"role": "system", "content": "You are a judge."},
            {"role": "user", "content": "case 1 plain"},
        ],
    }
    status, headers, payload = request(S.port, "POST", "/v1/chat/completions", body)
    assert status == 200
    assert headers["content-type"] == "application/json"
    value = json.loads(payload)
    assert value["object"] == "chat.completion"
    assert value["model"] == "judge-7"
    assert isinstance(value["id"], str) and isinstance(value["created"], int)
    choice = value["choices"][0]
    assert choice == {"index": 0, "message": {"role": "assistant", "content": "PASS"},
                      "finish_reason": "stop"}, choice
    assert value["usage"] == {"prompt_tokens": 7, "completion_tokens": 1, "total_tokens": 8}


@test
def answer_word_and_json_answers():
    assert answer_of(chat(S.port, "case 2 answer=FAIL")[2]) == "FAIL"
    text = answer_of(chat(S.port, "case 2 answer=FAIL json=1")[2])
    assert json.loads(text) == {"verdict": "FAIL"}, text
    status, _, payload = chat(S.port, "case 2 rf", response_format={"type": "json_object"})
    assert status == 200
    assert json.loads(answer_of(payload)) == {"verdict": "PASS"}
    assert json.loads(payload)["usage"]["completion_tokens"] == 2  # '{"verdict":' and '"PASS"}'


@test
def content_parts_are_read():
    body = {"model": "m", "messages": [
        {"role": "user", "content": [{"type": "text", "text": "case 3 answer=PARTS"}]}]}
    status, _, payload = request(S.port, "POST", "/v1/chat/completions", body)
    assert status == 200 and answer_of(payload) == "PARTS"


@test
def fault_429_times_then_normal():
    content = "case 10 fault=429 times=2 retry_after=1"
    for _ in range(2):
        status, headers, payload = chat(S.port, content)
        assert status == 429, status
        assert headers["retry-after"] == "1"
        assert json.loads(payload)["error"]["type"] == "rate_limit_error"
    status, _, payload = chat(S.port, content)
    assert status == 200 and answer_of(payload) == "PASS"
    assert stats(S.port)["by_content"][content] == 3


@test
def times_are_counted_per_content_and_reset():
    a, b = "case 11 fault=500 times=1", "case 12 fault=500 times=1"
    assert chat(S.port, a)[0] == 500
    assert chat(S.port, b)[0] == 500
    assert chat(S.port, a)[0] == 200
    assert chat(S.port, b)[0] == 200
    reset(S.port)
    assert chat(S.port, a)[0] == 500


@test
def fault_429_retry_after_http_date():
    status, headers, _ = chat(S.port, "case 13 fault=429 retry_after_date=5")
    assert status == 429
    when = email.utils.parsedate_to_datetime(headers["retry-after"])
    assert when.tzinfo is not None
    delta = when.timestamp() - time.time()
    assert 4.5 <= delta <= 6.1, delta


@test
def fault_503_500_400():
    status, headers, payload = chat(S.port, "case 14 fault=503 retry_after=2")
    assert status == 503 and headers["retry-after"] == "2"
    assert "error" in json.loads(payload)
    status, headers, _ = chat(S.port, "case 14 fault=503")
    assert status == 503 and "retry-after" not in headers
    status, _, payload = chat(S.port, "case 15 fault=500")
    assert status == 500 and json.loads(payload)["error"]["type"] == "server_error"
    status, _, payload = chat(S.port, "case 16 fault=400")
    assert status == 400 and json.loads(payload)["error"]["type"] == "invalid_request_error"


@test
def fault_401_echoes_key():
    key = "sk-test-0123456789abcdef"
    status, _, payload = chat(S.port, "case 17 fault=401",
                              headers={"Authorization": f"Bearer {key}"})
    assert status == 401
    message = json.loads(payload)["error"]["message"]
    assert message == f"invalid api key {key}", message
    assert f"Bearer {key}" in stats(S.port)["auth_headers_seen"]


@test
def fault_slow_delays_and_times_out():
    start = time.monotonic()
    status, _, payload = chat(S.port, "case 18 fault=slow delay=0.3 answer=LATE")
    took = time.monotonic() - start
    assert status == 200 and answer_of(payload) == "LATE"
    assert took >= 0.3, took
    req = urllib.request.Request(
        f"http://127.0.0.1:{S.port}/v1/chat/completions",
        data=json.dumps(chat_body("case 19 fault=slow delay=1")).encode(),
        headers={"Content-Type": "application/json"}, method="POST")
    try:
        urllib.request.urlopen(req, timeout=0.2).read()
    except (TimeoutError, socket.timeout, urllib.error.URLError) as exc:
        reason = getattr(exc, "reason", exc)
        assert isinstance(reason, (TimeoutError, socket.timeout)), repr(exc)
    else:
        raise AssertionError("no timeout")
    assert chat(S.port, "case 19 still alive")[0] == 200
    # A client that hangs up stops counting as in flight at once, not when the delay ends.
    wait_idle(S.port)
    body = json.dumps({"input": "case 19 fault=slow delay=3"}).encode()
    sock = socket.create_connection(("127.0.0.1", S.port))
    sock.sendall(b"POST /agent HTTP/1.1\r\nHost: t\r\nContent-Length: %d\r\n\r\n" % len(body)
                 + body)
    deadline = time.monotonic() + 2
    while stats(S.port)["in_flight"] != 1:
        assert time.monotonic() < deadline
        time.sleep(0.01)
    sock.close()
    start = time.monotonic()
    wait_idle(S.port, timeout=1.0)
    assert time.monotonic() - start < 0.5


@test
def fault_reset_sends_partial_body_then_rst():
    body = json.dumps(chat_body("case 20 fault=reset")).encode()
    sock = socket.create_connection(("127.0.0.1", S.port), timeout=5)
    sock.sendall(b"POST /v1/chat/completions HTTP/1.1\r\nHost: t\r\nContent-Type: "
                 b"application/json\r\nContent-Length: %d\r\n\r\n" % len(body) + body)
    received = b""
    error = None
    try:
        while True:
            chunk = sock.recv(65536)
            if not chunk:
                break
            received += chunk
    except ConnectionResetError as exc:
        error = exc
    finally:
        sock.close()
    assert isinstance(error, ConnectionResetError), ("no RST", received)
    head, _, rest = received.partition(b"\r\n\r\n")
    assert b"Content-Length: 1000" in head, head
    assert len(rest) == 10, rest
    # And http.client sees a broken response, not a short valid one.
    try:
        status, _, payload = chat(S.port, "case 20 fault=reset")
    except (http.client.IncompleteRead, ConnectionResetError):
        pass
    else:
        raise AssertionError(f"reset answered {status} {payload!r}")


@test
def fault_notjson():
    status, headers, payload = chat(S.port, "case 21 fault=notjson")
    assert status == 200
    assert headers["content-type"].startswith("text/html")
    assert payload == b"<html>oops</html>"


@test
def fault_big_has_the_size_and_is_json():
    status, _, payload = chat(S.port, "case 22 fault=big size=200000 answer=HUGE")
    assert status == 200
    assert len(payload) == 200000, len(payload)
    assert answer_of(payload).startswith("HUGE ")
    status, _, payload = agent(S.port, "case 22 fault=big size=50000")
    assert status == 200 and len(payload) == 50000, len(payload)
    assert json.loads(payload)["result"]["verdict"] == "PASS"


@test
def fault_errors_padded_with_size():
    for size in (200000, 200001):
        status, headers, payload = chat(S.port, f"case 24 fault=503 size={size} retry_after=0")
        assert status == 503 and len(payload) == size, (status, len(payload))
        assert headers["retry-after"] == "0"
        error = json.loads(payload)["error"]
        assert error["message"] == "The server is overloaded", error["message"]
        assert payload.startswith(b'{"error":{"message":"The server is overloaded"'), payload[:60]
        assert set(error["padding"]) <= {"\u00e9", "x"}
    status, _, payload = agent(S.port, "case 24 fault=400 size=10")
    assert status == 400 and "padding" not in json.loads(payload)["error"], payload
    status, _, payload = chat(S.port, "case 24 fault=500 size=abc")
    assert status == 400 and b"bad parameter" in payload, payload


@test
def fault_redirect_is_not_followed_by_default():
    reset(S.port)
    status, headers, payload = chat(S.port, "case 23 fault=redirect")
    assert status == 307
    location = headers["location"]
    assert location == f"http://127.0.0.1:{S.port}/elsewhere", location
    assert stats(S.port)["followed_redirects"] == 0
    # Following it (as a careless client would) is answered and counted.
    status, _, payload = request(S.port, "POST", "/elsewhere",
                                 chat_body("case 23 fault=redirect"))
    assert status == 200 and answer_of(payload) == "REDIRECTED"
    snapshot = stats(S.port)
    assert snapshot["followed_redirects"] == 1
    assert snapshot["paths"]["/elsewhere"] == 1


@test
def fault_nocontent():
    status, _, payload = chat(S.port, "case 24 fault=nocontent")
    assert status == 200
    assert json.loads(payload)["choices"][0]["message"] == {"role": "assistant", "content": None}
    status, _, payload = agent(S.port, "case 24 fault=nocontent")
    assert status == 200 and json.loads(payload) == {"result": {"verdict": None}}


@test
def fault_echo_returns_the_request_body():
    body = chat_body("case 25 fault=echo é", temperature=0, max_tokens=5)
    status, _, payload = request(S.port, "POST", "/v1/chat/completions", body)
    assert status == 200
    content = answer_of(payload)
    assert content == json.dumps(body, separators=(",", ":"), ensure_ascii=False), content
    status, _, payload = agent(S.port, "case 25 fault=echo")
    assert status == 200
    assert json.loads(payload) == {"result": {"verdict": "PASS",
                                              "echo": {"input": "case 25 fault=echo"}}}


@test
def agent_endpoint():
    status, headers, payload = agent(S.port, "case 30")
    assert status == 200 and headers["content-type"] == "application/json"
    assert json.loads(payload) == {"result": {"verdict": "PASS"}}
    assert json.loads(agent(S.port, "case 31 answer=FAIL")[2]) == {"result": {"verdict": "FAIL"}}
    status, headers, _ = agent(S.port, "case 32 fault=429 times=1 retry_after=0")
    assert status == 429 and headers["retry-after"] == "0"
    assert agent(S.port, "case 32 fault=429 times=1 retry_after=0")[0] == 200
    status, _, payload = agent(S.port, "case 33 fault=401")
    assert status == 401 and "invalid api key" in json.loads(payload)["error"]["message"]


@test
def bad_requests_are_answered_not_crashed():
    status, _, payload = request(S.port, "POST", "/v1/chat/completions", b"{not json")
    assert status == 400 and "error" in json.loads(payload)
    assert request(S.port, "POST", "/v1/chat/completions", {"model": "m"})[0] == 400
    assert request(S.port, "POST", "/agent", {"nope": 1})[0] == 400
    assert request(S.port, "GET", "/v1/chat/completions")[0] == 405
    assert request(S.port, "GET", "/nowhere")[0] == 404
    status, _, payload = chat(S.port, "case 34 fault=bogus")
    assert status == 400 and "unknown fault" in json.loads(payload)["error"]["message"]
    assert chat(S.port, "case 34 fault=slow delay=abc")[0] == 400


@test
def chunked_request_body():
    conn = http.client.HTTPConnection("127.0.0.1", S.port, timeout=5)
    try:
        data = json.dumps(chat_body("case 35 answer=CHUNKED")).encode()
        conn.request("POST", "/v1/chat/completions", body=iter([data[:10], data[10:]]),
                     headers={"Content-Type": "application/json"}, encode_chunked=True)
        resp = conn.getresponse()
        assert resp.status == 200
        assert answer_of(resp.read()) == "CHUNKED"
    finally:
        conn.close()


@test
def keep_alive_two_requests_on_one_connection():
    conn = http.client.HTTPConnection("127.0.0.1", S.port, timeout=5)
    try:
        def one(content):
            data = json.dumps(chat_body(content)).encode()
            conn.request("POST", "/v1/chat/completions", body=data,
                         headers={"Content-Type": "application/json"})
            resp = conn.getresponse()
            payload = resp.read()
            assert not resp.will_close, resp.getheaders()
            assert resp.version == 11
            return resp.status, payload

        assert one("case 40 answer=ONE")[1] and conn.sock is not None
        sock, local = conn.sock, conn.sock.getsockname()
        status, payload = one("case 41 answer=TWO")
        assert status == 200 and answer_of(payload) == "TWO"
        # An error answer keeps the connection too (its body was complete).
        assert one("case 42 fault=429")[0] == 429
        assert one("case 43")[0] == 200
        assert conn.sock is sock and conn.sock.getsockname() == local
    finally:
        conn.close()


@test
def stats_and_reset():
    reset(S.port)
    snapshot = stats(S.port)
    assert snapshot == {"requests": 0, "by_content": {}, "max_in_flight": 0, "in_flight": 0,
                        "followed_redirects": 0, "auth_headers_seen": [], "paths": {}}, snapshot
    chat(S.port, "case 50", headers={"Authorization": "Bearer sk-a"})
    chat(S.port, "case 50", headers={"Authorization": "Bearer sk-a"})
    agent(S.port, "case 51", headers={"Authorization": "Bearer sk-b"})
    request(S.port, "GET", "/nowhere")
    snapshot = stats(S.port)
    assert snapshot["requests"] == 4, snapshot
    assert snapshot["by_content"] == {"case 50": 2, "case 51": 1}
    assert snapshot["paths"] == {"/v1/chat/completions": 2, "/agent": 1, "/nowhere": 1}
    assert snapshot["auth_headers_seen"] == ["Bearer sk-a", "Bearer sk-b"]
    assert snapshot["max_in_flight"] == 1 and snapshot["in_flight"] == 0


@test
def max_in_flight_counts_concurrent_requests():
    reset(S.port)
    results = in_parallel(8, lambda i: chat(S.port, f"case 60 fault=slow delay=0.4 n={i}")[0])
    assert results == [200] * 8, results
    snapshot = stats(S.port)
    assert snapshot["max_in_flight"] == 8, snapshot
    assert snapshot["in_flight"] == 0


@test
def many_concurrent_keep_alive_connections():
    reset(S.port)

    def client(i):
        conn = http.client.HTTPConnection("127.0.0.1", S.port, timeout=10)
        try:
            for j in range(5):
                data = json.dumps(chat_body(f"case 70 c={i} r={j} answer=OK")).encode()
                conn.request("POST", "/v1/chat/completions", body=data,
                             headers={"Content-Type": "application/json"})
                resp = conn.getresponse()
                assert resp.status == 200 and answer_of(resp.read()) == "OK"
            return True
        finally:
            conn.close()

    results = in_parallel(64, client)
    assert results == [True] * 64, [r for r in results if r is not True][:3]
    assert stats(S.port)["requests"] == 64 * 5


@test
def client_disconnects_do_not_hurt():
    port = S.port
    # 1. a body shorter than its Content-Length, then gone
    s = socket.create_connection(("127.0.0.1", port))
    s.sendall(b"POST /agent HTTP/1.1\r\nHost: t\r\nContent-Length: 100\r\n\r\n{\"input\"")
    s.close()
    # 2. a slow answer whose client leaves before it is written
    body = json.dumps({"input": "case 80 fault=slow delay=0.2"}).encode()
    s = socket.create_connection(("127.0.0.1", port))
    s.sendall(b"POST /agent HTTP/1.1\r\nHost: t\r\nContent-Length: %d\r\n\r\n" % len(body) + body)
    s.close()
    # 3. an RST from the client in the middle of the headers
    s = socket.create_connection(("127.0.0.1", port))
    s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, b"\x01\x00\x00\x00\x00\x00\x00\x00")
    s.sendall(b"POST /agent HTTP/1.1\r\nHost")
    s.close()
    # 4. garbage
    s = socket.create_connection(("127.0.0.1", port))
    s.sendall(b"\x00\x01\x02 nonsense\r\n\r\n")
    s.recv(4096)
    s.close()
    # 5. big answer, the client reads a little and resets
    body = json.dumps(chat_body("case 81 fault=big size=5000000")).encode()
    s = socket.create_connection(("127.0.0.1", port))
    s.sendall(b"POST /v1/chat/completions HTTP/1.1\r\nHost: t\r\nContent-Length: %d\r\n\r\n"
              % len(body) + body)
    s.recv(100)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, b"\x01\x00\x00\x00\x00\x00\x00\x00")
    s.close()
    time.sleep(0.35)
    assert S.proc.poll() is None
    assert chat(port, "case 82 after disconnects")[0] == 200
    assert stats(port)["in_flight"] == 0


@test
def capacity_throttles_then_recovers():
    server = Server("--capacity", "2", "--latency", "400")
    try:
        port = server.port

        def one(i):
            status, headers, payload = chat(port, f"case 90 n={i}")
            return status, headers.get("retry-after")

        results = in_parallel(6, one)
        ok = [r for r in results if r[0] == 200]
        throttled = [r for r in results if r[0] == 429]
        assert len(ok) == 2 and len(throttled) == 4, results
        assert all(r[1] == "0" for r in throttled), throttled
        snapshot = stats(port)
        assert snapshot["max_in_flight"] >= 3, snapshot
        # Back under capacity: everything is answered again.
        results = in_parallel(2, one)
        assert [r[0] for r in results] == [200, 200], results
        start = time.monotonic()
        assert chat(port, "case 91")[0] == 200
        assert time.monotonic() - start >= 0.4  # --latency applies to normal answers
    finally:
        rc, out = server.stop()
    assert rc == 0, (rc, out)
    assert "Traceback" not in out, out


@test
def a_client_at_the_capacity_is_never_throttled():
    # The server leaves its in-flight count before it writes an answer, so a client that keeps
    # exactly `capacity` requests outstanding (the next sent as soon as an answer arrives) is
    # never counted over it.
    server = Server("--capacity", "2", "--latency", "5")
    try:
        port = server.port

        def client(i):
            conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
            statuses = []
            try:
                for j in range(20):
                    data = json.dumps(chat_body(f"case 92 c={i} r={j}")).encode()
                    conn.request("POST", "/v1/chat/completions", body=data,
                                 headers={"Content-Type": "application/json"})
                    resp = conn.getresponse()
                    resp.read()
                    statuses.append(resp.status)
            finally:
                conn.close()
            return statuses

        results = in_parallel(2, client)
        assert results == [[200] * 20, [200] * 20], results
        assert stats(port)["max_in_flight"] == 2
    finally:
        rc, out = server.stop()
    assert rc == 0, (rc, out)


@test
def sigint_exits_cleanly_even_with_a_request_in_flight():
    server = Server()
    body = json.dumps({"input": "case 95 fault=slow delay=5"}).encode()
    s = socket.create_connection(("127.0.0.1", server.port))
    s.sendall(b"POST /agent HTTP/1.1\r\nHost: t\r\nContent-Length: %d\r\n\r\n" % len(body) + body)
    time.sleep(0.1)
    start = time.monotonic()
    rc, out = server.stop(signal.SIGINT)
    s.close()
    assert rc == 0, (rc, out)
    assert time.monotonic() - start < 2
    assert "Traceback" not in out, out


@test
def log_file_has_one_line_per_request():
    reset(S.port)
    chat(S.port, "case 99 fault=500 logged")
    with open(LOG_PATH, encoding="utf-8") as f:
        records = [json.loads(line) for line in f]
    assert any(r["path"] == "/v1/chat/completions" and r["content"] == "case 99 fault=500 logged"
               and r["status"] == 500 for r in records), records[-3:]
    assert all({"path", "content", "status"} <= set(r) for r in records)


# Runs last: stops the shared server.
@test
def sigterm_exits_cleanly_without_tracebacks():
    rc, out = S.stop(signal.SIGTERM)
    assert rc == 0, (rc, out)
    assert "Traceback" not in out and "Exception" not in out, out


def main() -> int:
    global S, LOG_PATH
    started = time.monotonic()
    with tempfile.TemporaryDirectory() as tmp:
        LOG_PATH = os.path.join(tmp, "requests.jsonl")
        S = Server("--port", "0", "--log", LOG_PATH)
        passed = failed = 0
        try:
            for fn in TESTS:
                try:
                    fn()
                except Exception:  # noqa: BLE001 (a failing check is reported, not raised)
                    failed += 1
                    print(f"FAIL {fn.__name__}")
                    traceback.print_exc()
                else:
                    passed += 1
                    print(f"ok   {fn.__name__}")
        finally:
            if S.proc.poll() is None:
                S.stop()
    print(f"({time.monotonic() - started:.1f} s)")
    print(f"{passed} passed, {failed} failed")
    return 0 if failed == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
