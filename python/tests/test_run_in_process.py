"""Models run in this process by the native module's run engine (the one `deploy-gate run`
calls), with no `deploy-gate` binary anywhere: against the fault-injecting server
(`tests/servers/fault_server.py`: 429 with Retry-After, 503, a reset, slow answers) and
llama.cpp's server (`tests/servers/llama_server.py`, when its venv is there), as the drop-in's
and `evaluate`'s runners, with a cache, and stopped by a SIGINT sent to the Python process."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import textwrap
import time
import urllib.request
import warnings
from pathlib import Path
from typing import Any, Dict, Iterator, List

import pytest

import deploy_gate
from conftest import ROOT, completion, stage, write_lines
from deploy_gate import DeploymentGate

SERVER = ROOT / "tests" / "servers" / "fault_server.py"
LLAMA = ROOT / "tests" / "servers" / "llama_server.py"


@pytest.fixture(autouse=True)
def _no_cli(monkeypatch: pytest.MonkeyPatch) -> None:
    """No `deploy-gate` on PATH and no DEPLOY_GATE_BIN: the package must not need one."""
    monkeypatch.delenv("DEPLOY_GATE_BIN", raising=False)
    path = [d for d in os.environ.get("PATH", "").split(os.pathsep) if not (Path(d) / "deploy-gate").exists()]
    monkeypatch.setenv("PATH", os.pathsep.join(path))
    assert shutil.which("deploy-gate") is None


@pytest.fixture(scope="module")
def server() -> Iterator[str]:
    proc = subprocess.Popen([sys.executable, str(SERVER)], stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout is not None
        port = json.loads(proc.stdout.readline())["port"]
        yield f"http://127.0.0.1:{port}"
    finally:
        proc.terminate()
        proc.wait(timeout=10)


def _stats(base: str) -> Dict[str, Any]:
    with urllib.request.urlopen(f"{base}/stats") as r:
        stats: Dict[str, Any] = json.load(r)
    return stats


def _reset(base: str) -> None:
    urllib.request.urlopen(urllib.request.Request(f"{base}/stats/reset", data=b"", method="POST")).close()


def _chat(base: str, **extra: Any) -> Dict[str, Any]:
    return {
        "kind": "openai-chat",
        "base_url": f"{base}/v1",
        "model": "old-7b",
        "messages": [{"role": "user", "content": "{{input_text}} answer=DENY"}],
        **extra,
    }


def _agent(base: str, **extra: Any) -> Dict[str, Any]:
    return {"kind": "http", "url": f"{base}/agent", "body": {"input": "{{input_text}}"}, "verdict": "/result/verdict", **extra}


def _lines(path: str) -> List[Dict[str, Any]]:
    return [json.loads(line) for line in Path(path).read_text(encoding="utf-8").splitlines()]


def test_two_models_through_429_503_and_a_reset(tmp_path: Path, server: str) -> None:
    cases = [
        {"pipeline_id": "rate", "input_text": "r fault=429 times=1 retry_after=1"},
        {"pipeline_id": "busy", "input_text": "b fault=503 times=1 retry_after=0"},
        {"pipeline_id": "reset", "input_text": "x fault=reset times=1"},
        {"pipeline_id": "ok", "input_text": "plain answer=APPROVE"},
    ]
    _reset(server)
    started = time.monotonic()
    result = deploy_gate.run(cases, old=_chat(server, retries=3), new=_agent(server, retries=3), cache=False,
                             out_old=tmp_path / "old.jsonl", out_new=tmp_path / "new.jsonl")
    # The 429 said Retry-After: 1; the client waited for it.
    assert time.monotonic() - started >= 1.0
    old, new = _lines(result.old), _lines(result.new)
    assert [r["pipeline_id"] for r in old] == [r["pipeline_id"] for r in new] == [c["pipeline_id"] for c in cases]
    assert all("error" not in r for r in old + new), old + new
    assert [r["verdict"] for r in old] == ["DENY", "DENY", "DENY", "APPROVE"]
    assert [r["verdict"] for r in new] == ["PASS", "PASS", "PASS", "APPROVE"]
    by_id = {r["pipeline_id"]: r for r in new}
    for faulty in ("rate", "busy", "reset"):
        assert by_id[faulty]["attempts"] == 2, by_id[faulty]
    assert by_id["ok"]["attempts"] == 1
    # Each faulty case asked twice of each model, the plain one once.
    assert _stats(server)["requests"] == 2 * (3 * 2 + 1)


def test_a_single_model_runner_in_the_drop_in_and_in_evaluate(tmp_path: Path, server: str) -> None:
    lines: List[str] = []
    expected = ["APPROVE", "PASS", "PASS", "COMPLETE"]
    for i, (text, verdict) in enumerate(zip(["a answer=APPROVE", "b", "c fault=500", "d answer=COMPLETE"], expected)):
        lines += [stage(f"p{i}", "s", text), completion(f"p{i}", verdict)]
    log = write_lines(tmp_path / "audit.jsonl", lines)
    runner = deploy_gate.endpoint(_agent(server, retries=0))
    gate = DeploymentGate()
    cases = gate.build_test_set(str(log), min_samples=1)
    # p2 errors (a 500 every time): 3 of 4.
    assert gate.score_model(cases, runner) == 0.75
    report = deploy_gate.evaluate(log, lambda text: "PASS", runner, policy={"min_samples": 1}, progress=False)
    assert report.data["verdicts"]["new"]["passed"] == 3
    assert report.data["verdicts"]["new"]["errored"] == 1
    assert report.data["verdicts"]["old"]["passed"] == 2


def test_a_cache_is_reused_on_a_second_call(tmp_path: Path, server: str) -> None:
    runner = deploy_gate.endpoint(_agent(server), cache=tmp_path / "cache")
    cases = [{"pipeline_id": i, "input_text": f"cached {i} answer=A{i}"} for i in range(5)]
    _reset(server)
    first = runner.records(cases)
    assert _stats(server)["requests"] == 5
    second = runner.records(cases)
    assert _stats(server)["requests"] == 5  # nothing asked again
    assert [r["verdict"] for r in second] == [r["verdict"] for r in first] == [f"A{i}" for i in range(5)]


def test_progress_is_told_each_record(tmp_path: Path, server: str) -> None:
    seen: List[Any] = []
    runner = deploy_gate.endpoint(_agent(server), progress=lambda done, total, what: seen.append((done, total, what)))
    runner.records([{"pipeline_id": i, "input_text": f"p {i}"} for i in range(3)])
    assert seen[-1] == (3, 3, "run"), seen


def test_cli_and_deploy_gate_bin_are_ignored_with_a_warning(
    tmp_path: Path, server: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    with pytest.warns(DeprecationWarning, match="cli= is ignored"):
        runner = deploy_gate.endpoint(_agent(server), cli="/nonexistent/deploy-gate")
    assert runner("x answer=YES") == "YES"
    monkeypatch.setenv("DEPLOY_GATE_BIN", "/nonexistent/deploy-gate")
    with pytest.warns(DeprecationWarning, match="DEPLOY_GATE_BIN is ignored"):
        assert runner("x answer=NO") == "NO"
    monkeypatch.delenv("DEPLOY_GATE_BIN")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert runner("x answer=NO") == "NO"


SCRIPT = textwrap.dedent(
    """
    import sys, deploy_gate
    base, out_old, out_new, cases = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
    def told(done, total, what):
        print(done, flush=True)
    chat = {"kind": "openai-chat", "base_url": base + "/v1", "model": "m", "retries": 0,
            "messages": [{"role": "user", "content": "{{input_text}} answer=DENY"}],
            "concurrency": {"initial": 8, "min": 1, "max": 8}}
    agent = {"kind": "http", "url": base + "/agent", "body": {"input": "{{input_text}}"},
             "verdict": "/result/verdict", "retries": 0, "concurrency": {"initial": 8, "min": 1, "max": 8}}
    test_set = [{"pipeline_id": f"f{i}", "input_text": f"fast {i}"} for i in range(cases)]
    test_set += [{"pipeline_id": f"s{i}", "input_text": f"slow {i} fault=slow delay=30 times=1"} for i in range(cases)]
    deploy_gate.run(test_set, old=chat, new=agent, out_old=out_old, out_new=out_new, cache=False, progress=told)
    print("finished", flush=True)
    """
)


def test_sigint_mid_run_raises_keyboard_interrupt_and_a_second_call_resumes(tmp_path: Path, server: str) -> None:
    script = tmp_path / "run.py"
    script.write_text(SCRIPT, encoding="utf-8")
    out_old, out_new, n = tmp_path / "old.jsonl", tmp_path / "new.jsonl", 4
    args = [sys.executable, str(script), server, str(out_old), str(out_new), str(n)]
    env = {k: v for k, v in os.environ.items() if k != "DEPLOY_GATE_BIN"}
    _reset(server)
    proc = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    assert proc.stdout is not None
    # Wait until both models answered the fast cases (the slow ones are in flight), then Ctrl-C.
    for line in proc.stdout:
        if line.strip() == str(2 * n):
            break
    time.sleep(0.3)
    proc.send_signal(signal.SIGINT)
    started = time.monotonic()
    _, err = proc.communicate(timeout=30)
    assert time.monotonic() - started < 15
    assert proc.returncode in (-signal.SIGINT, 128 + signal.SIGINT), (proc.returncode, err)
    assert "KeyboardInterrupt" in err, err
    assert "finished" not in err
    # Whole records: every line is one JSON record; the fast cases have theirs, the slow ones none.
    for path in (out_old, out_new):
        text = path.read_text(encoding="utf-8")
        assert text.endswith("\n")
        ids = sorted(json.loads(line)["pipeline_id"] for line in text.splitlines())
        assert ids == [f"f{i}" for i in range(n)], (path, text)
    # Their requests left the server.
    deadline = time.monotonic() + 10
    while _stats(server)["in_flight"] and time.monotonic() < deadline:
        time.sleep(0.05)
    assert _stats(server)["in_flight"] == 0
    # The same call again resumes: only the slow cases are asked (now fast: `times=1`).
    before = _stats(server)["requests"]
    done = subprocess.run(args, capture_output=True, text=True, env=env, timeout=60)
    assert done.returncode == 0, done.stderr
    assert "finished" in done.stdout
    assert _stats(server)["requests"] - before == 2 * n
    for path in (out_old, out_new):
        records = _lines(str(path))
        assert [r["pipeline_id"] for r in records] == [f"f{i}" for i in range(n)] + [f"s{i}" for i in range(n)]
        assert all("verdict" in r for r in records), records


def _llama_venv() -> Path:
    for venv in (os.environ.get("LLAMA_VENV"), str(ROOT / ".venv-llama")):
        if venv and (Path(venv) / "bin" / "python").exists():
            return Path(venv)
    if os.environ.get("CI"):
        pytest.fail("the llama.cpp server's venv is missing: bash tests/servers/llama_venv.sh makes it")
    pytest.skip("no llama.cpp server venv (bash tests/servers/llama_venv.sh makes it)")


@pytest.fixture(scope="module")
def llama() -> Iterator[Dict[str, Any]]:
    venv = _llama_venv()
    env = {**os.environ, "LLAMA_VENV": str(venv)}
    proc = subprocess.Popen([sys.executable, str(LLAMA), "--timeout", "120"], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, text=True, env=env)
    try:
        assert proc.stdout is not None
        yield json.loads(proc.stdout.readline())
    finally:
        assert proc.stdin is not None
        proc.stdin.close()
        proc.wait(timeout=30)


def test_two_models_on_llama_cpp(tmp_path: Path, llama: Dict[str, Any]) -> None:
    def endpoint(system: str) -> Dict[str, Any]:
        return {
            "kind": "openai-chat",
            "base_url": llama["base_url"] + "/v1",
            "model": llama["model"],
            "messages": [{"role": "system", "content": system}, {"role": "user", "content": "{{input_text}}"}],
            "params": {"temperature": 0, "seed": 7, "max_tokens": 6},
            "concurrency": {"initial": 2, "min": 1, "max": 2},
            "timeout": "120s",
        }

    cases = [{"pipeline_id": f"c{i}", "input_text": f"Deploy step {i}: answer PASS or FAIL."} for i in range(4)]
    result = deploy_gate.run(cases, old=endpoint("Answer PASS."), new=endpoint("Answer FAIL."),
                             out_old=tmp_path / "old.jsonl", out_new=tmp_path / "new.jsonl", cache=tmp_path / "cache")
    for side in ("old", "new"):
        records = result.records(side)
        assert [r["pipeline_id"] for r in records] == [c["pipeline_id"] for c in cases]
        for r in records:
            assert "error" not in r, r
            assert isinstance(r["verdict"], str)
            assert r["usage"]["prompt_tokens"] > 5, r
    # Deterministic at temperature 0 with a seed: the same run, uncached, gives the same verdicts.
    again = deploy_gate.run(cases, old=endpoint("Answer PASS."), new=endpoint("Answer FAIL."),
                            out_old=tmp_path / "old2.jsonl", out_new=tmp_path / "new2.jsonl", cache=False)
    for side in ("old", "new"):
        assert list(again.verdicts(side)) == list(result.verdicts(side))
