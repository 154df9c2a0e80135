"""`deploy_gate.endpoint` (``target`` by its earlier name) and `deploy_gate.run`: models asked by
the run engine in this process (no `deploy-gate` binary on PATH) against a real server on
loopback (`tests/servers/fault_server.py`, see `tests/servers/README.md`): the two-model run's
files, endpoints as the drop-in's runners and `evaluate`'s, refused endpoint files and test
sets naming the file and the line, dict endpoints and their secrets."""

from __future__ import annotations

import json
import logging
import os
import re
import shutil
import signal
import subprocess
import sys
import threading
import time
import urllib.request
from pathlib import Path
from typing import Any, Dict, Iterator, List

import pytest

import deploy_gate
from conftest import ROOT, completion, run_cli, stage, write_lines
from deploy_gate import DeploymentGate

SERVER = ROOT / "tests" / "servers" / "fault_server.py"

# (input text, expected verdict). The server answers `answer=WORD` (first one wins), else PASS;
# `fault=500` is a 500 every time.
CASES = [
    ("case 0 answer=APPROVE", "APPROVE"),
    ("case 1 answer=APPROVE", "APPROVE"),
    ("case 2", "PASS"),
    ("case 3", "PASS"),
    ("case 4", "PASS"),
    ("case 5 answer=COMPLETE", "COMPLETE"),
    ("case 6 fault=500", "PASS"),
]
# The old model's template adds `answer=DENY`: it fails the cases that name no answer (2, 3, 4),
# and both fail case 6 (an error). Old 3/7, new 6/7.
OLD_PASSED, NEW_PASSED = 3, 6


@pytest.fixture(scope="module")
def server() -> Iterator[str]:
    """The fault server's base URL (`http://127.0.0.1:PORT`)."""
    proc = subprocess.Popen([sys.executable, str(SERVER)], stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout is not None
        port = json.loads(proc.stdout.readline())["port"]
        yield f"http://127.0.0.1:{port}"
    finally:
        proc.terminate()
        proc.wait(timeout=10)


@pytest.fixture(autouse=True)
def _no_cli(monkeypatch: pytest.MonkeyPatch) -> None:
    # The package runs the engine itself: no `deploy-gate` on PATH, no DEPLOY_GATE_BIN.
    monkeypatch.delenv("DEPLOY_GATE_BIN", raising=False)
    path = [d for d in os.environ.get("PATH", "").split(os.pathsep) if not (Path(d) / "deploy-gate").exists()]
    monkeypatch.setenv("PATH", os.pathsep.join(path))
    assert shutil.which("deploy-gate") is None


def _stats(base: str) -> Dict[str, Any]:
    with urllib.request.urlopen(f"{base}/stats") as r:
        stats: Dict[str, Any] = json.load(r)
    return stats


def _reset(base: str) -> None:
    urllib.request.urlopen(urllib.request.Request(f"{base}/stats/reset", data=b"", method="POST")).close()


def _log(tmp_path: Path) -> Path:
    lines: List[str] = []
    for i, (text, verdict) in enumerate(CASES):
        lines += [stage(f"p{i}", "s", text), completion(f"p{i}", verdict)]
    return write_lines(tmp_path / "audit.jsonl", lines)


def _test_set(tmp_path: Path) -> Path:
    ts = deploy_gate.build_test_set(_log(tmp_path), min_samples=1, progress=False)
    path = tmp_path / "cases.jsonl"
    path.write_text(ts.to_jsonl(), encoding="utf-8")
    return path


def _old_yaml(tmp_path: Path, base: str) -> Path:
    path = tmp_path / "old.yaml"
    path.write_text(
        "kind: openai-chat\n"
        f"base_url: {base}/v1\n"
        "model: old-7b\n"
        "messages:\n"
        "  - role: system\n"
        "    content: You review deployments.\n"
        "  - role: user\n"
        '    content: "{{input_text}} answer=DENY"\n'
        "retries: 0\n",
        encoding="utf-8",
    )
    return path


def _new_yaml(tmp_path: Path, base: str) -> Path:
    path = tmp_path / "new.yaml"
    path.write_text(
        "kind: http\n"
        f"url: {base}/agent\n"
        "body:\n"
        '  input: "{{input_text}}"\n'
        "verdict: /result/verdict\n"
        "retries: 0\n",
        encoding="utf-8",
    )
    return path


def _new_dict(base: str) -> Dict[str, Any]:
    return {
        "kind": "http",
        "url": f"{base}/agent",
        "body": {"input": "{{input_text}}"},
        "verdict": "/result/verdict",
        "retries": 0,
    }


def _headers(caplog: pytest.LogCaptureFixture) -> List[str]:
    """The `deploy-gate run` headers logged (one per run)."""
    return [r.getMessage() for r in caplog.records if re.match(r"deploy-gate run: \d+ cases in ", r.getMessage())]


def test_run_writes_both_verdict_files(tmp_path: Path, server: str) -> None:
    cases = _test_set(tmp_path)
    out_old, out_new = tmp_path / "o.jsonl", tmp_path / "n.jsonl"
    result = deploy_gate.run(
        cases, old=_old_yaml(tmp_path, server), new=_new_yaml(tmp_path, server),
        out_old=out_old, out_new=out_new, order_seed=3, cache=tmp_path / "cache",
    )
    assert result == (str(out_old), str(out_new))
    ids = [json.loads(line)["pipeline_id"] for line in cases.read_text().splitlines()]
    for side, passed in (("old", OLD_PASSED), ("new", NEW_PASSED)):
        records = result.records(side)
        # One record per case, in the test set's order.
        assert [r["pipeline_id"] for r in records] == ids
        expected = {f"p{i}": v for i, (_, v) in enumerate(CASES)}
        assert sum(r.get("verdict") == expected[r["pipeline_id"]] for r in records) == passed
        errored = [r for r in records if "error" in r]
        assert [r["pipeline_id"] for r in errored] == ["p6"] and "500" in errored[0]["error"]
    assert dict(result.verdicts("old"))["p2"] == "DENY"
    # The files are what `deploy-gate evaluate` reads.
    assert (tmp_path / "cache").is_dir()
    # Run again: every case has its record, so the run resumes and asks nothing.
    _reset(server)
    deploy_gate.run(cases, old=_old_yaml(tmp_path, server), new=_new_yaml(tmp_path, server),
                    out_old=out_old, out_new=out_new, cache=False)
    assert _stats(server)["requests"] == 0


def test_run_takes_a_test_set_object_or_dicts_and_defaults_its_outputs(tmp_path: Path, server: str) -> None:
    ts = deploy_gate.build_test_set(_log(tmp_path), min_samples=1, progress=False)
    old, new = _old_yaml(tmp_path, server), _new_dict(server)
    for given in (ts, ts.cases):
        result = deploy_gate.run(given, old=old, new=new, cache=False)
        assert Path(result.old).parent == Path(result.new).parent  # a new temporary folder
        assert len(result.records("old")) == len(result.records("new")) == len(CASES)


def test_drop_in_with_targets_scores_both_models_in_one_run(
    tmp_path: Path, server: str, caplog: pytest.LogCaptureFixture
) -> None:
    gate = DeploymentGate()
    cases = gate.build_test_set(str(_log(tmp_path)), min_samples=1)
    assert len(cases) == len(CASES)
    old = deploy_gate.endpoint(_old_yaml(tmp_path, server))
    new = deploy_gate.endpoint(_new_yaml(tmp_path, server))
    _reset(server)
    with caplog.at_level(logging.INFO, logger="deploy_gate"):
        decision = gate.evaluate_decision(cases, old, new)
    assert decision.task_old == round(OLD_PASSED / len(CASES), 4)
    assert decision.task_new == round(NEW_PASSED / len(CASES), 4)
    assert decision.approved, decision.reason
    # One two-model run: each case asked once of each model.
    assert len(_headers(caplog)) == 1
    stats = _stats(server)
    assert stats["requests"] == 2 * len(CASES), stats
    assert stats["paths"] == {"/v1/chat/completions": len(CASES), "/agent": len(CASES)}
    # The same through compare_models and score_model.
    cmp = gate.compare_models(cases, old, new)
    assert (cmp.old_score, cmp.new_score, cmp.recommendation) == (decision.task_old, decision.task_new, "deploy")
    assert gate.score_model(cases, new) == decision.task_new


def test_a_target_mixed_with_a_plain_runner(tmp_path: Path, server: str) -> None:
    gate = DeploymentGate()
    cases = gate.build_test_set(str(_log(tmp_path)), min_samples=1)
    new = deploy_gate.endpoint(_new_yaml(tmp_path, server))
    cmp = gate.compare_models(cases, lambda text: "PASS", new)
    # "PASS" passes the four cases expecting PASS (case 6 included: a plain runner is not asked).
    assert cmp.old_score == round(4 / len(CASES), 4) and cmp.new_score == round(NEW_PASSED / len(CASES), 4)


def test_a_target_called_on_one_case(tmp_path: Path, server: str) -> None:
    old = deploy_gate.endpoint(_old_yaml(tmp_path, server))
    new = deploy_gate.endpoint(_new_dict(server))
    assert old("case 9") == "DENY"
    assert old("case 9 answer=APPROVE") == "APPROVE"
    assert new({"pipeline_id": 12, "input_text": "x answer=COMPLETE"}) == "COMPLETE"
    with pytest.raises(deploy_gate.RunError, match="500"):
        new("case fault=500")
    # A hand-made test set needs no ids: the cases are sent with ids by position.
    hand_made = [{"input_text": "a answer=X", "expected_verdict": "x"}, {"input_text": "b", "expected_verdict": "PASS"},
                 {"pipeline_id": 1, "input_text": "c answer=DENY", "expected_verdict": "PASS"}]
    assert DeploymentGate().score_model(hand_made, new) == round(2 / 3, 4)
    assert old.kind == "openai-chat" and new.kind == "http"
    assert old.digest.startswith("sha256:") and old.file == str(tmp_path / "old.yaml") and new.file is None


def test_evaluate_with_targets_reads_the_clis_verdict_files(tmp_path: Path, server: str, cli: Path) -> None:
    log = _log(tmp_path)
    report = deploy_gate.evaluate(
        log, deploy_gate.endpoint(_old_yaml(tmp_path, server)), deploy_gate.endpoint(_new_dict(server)),
        policy={"min_samples": 1}, progress=False,
    )
    assert report.data["verdicts"]["old"]["passed"] == OLD_PASSED
    assert report.data["verdicts"]["new"]["passed"] == NEW_PASSED
    assert report.data["verdicts"]["new"]["errored"] == 1
    # The verdict files it read, given to the CLI's evaluate, give the same decision.
    old_bytes, new_bytes = report.verdict_file("old"), report.verdict_file("new")
    assert old_bytes is not None and new_bytes is not None
    (tmp_path / "old-target.jsonl").write_bytes(old_bytes)
    (tmp_path / "new-target.jsonl").write_bytes(new_bytes)
    done = run_cli(cli, "evaluate", "--audit", str(log), "--old-verdicts", str(tmp_path / "old-target.jsonl"),
                   "--new-verdicts", str(tmp_path / "new-target.jsonl"), "--min-samples", "1",
                   "--out", str(tmp_path / "report.json"))
    assert done.returncode in (0, 3), done.stderr
    cli_report = json.loads((tmp_path / "report.json").read_text())
    assert cli_report["decision"] == report.data["decision"]


def test_a_bad_target_file_raises_with_the_file_and_line(tmp_path: Path, server: str) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text(
        "kind: openai-chat\n"
        f"base_url: {server}/v1\n"
        "model: m\n"
        "messages:\n"
        "  - role: user\n"
        '    content: "{{input_text}}"\n'
        "concurrency:\n"
        "  max: 0\n",
        encoding="utf-8",
    )
    with pytest.raises(deploy_gate.EndpointFileError) as e:
        deploy_gate.endpoint(bad)
    assert str(e.value).startswith(f"{bad} line 8: concurrency.max: 0 is out of range"), e.value
    assert (e.value.file, e.value.line) == (str(bad), 8)
    assert isinstance(e.value, deploy_gate.InputError)
    # run() reads its targets first: the same message, nothing run.
    with pytest.raises(deploy_gate.EndpointFileError, match=rf"^{re.escape(str(bad))} line 8: concurrency\.max"):
        deploy_gate.run(_test_set(tmp_path), old=bad, new=_new_yaml(tmp_path, server),
                        out_old=tmp_path / "o.jsonl", out_new=tmp_path / "n.jsonl")
    assert not (tmp_path / "o.jsonl").exists()


def test_the_clis_message_for_a_bad_target_is_the_same(tmp_path: Path, server: str, cli: Path) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text(f"kind: http\nurl: {server}/agent\nmethod: DELETE\n", encoding="utf-8")
    with pytest.raises(deploy_gate.EndpointFileError) as e:
        deploy_gate.endpoint(bad)
    done = run_cli(cli, "run", "--test-set", str(_test_set(tmp_path)),
                   "--endpoint", str(bad), "--out", str(tmp_path / "x.jsonl"))
    assert str(e.value) in done.stderr.decode(), done.stderr


def test_a_bad_dict_target_names_its_line_and_field(server: str) -> None:
    spec = _new_dict(server)
    spec["method"] = "DELETE"
    with pytest.raises(deploy_gate.EndpointFileError) as e:
        deploy_gate.endpoint(spec)
    # The dict is read as its JSON (indent 2): the line is `method`'s there.
    line = next(n for n, text in enumerate(json.dumps(spec, indent=2).splitlines(), 1) if text.startswith('  "method"'))
    assert str(e.value).startswith(f'endpoint (dict) line {line}: method: "DELETE": expected '), e.value
    assert (e.value.file, e.value.line) == ("endpoint (dict)", line)


def test_an_unusable_test_set_raises_with_the_file_and_line(tmp_path: Path, server: str) -> None:
    cases = tmp_path / "cases.jsonl"
    cases.write_text('{"pipeline_id": "a", "input_text": "x"}\n{"input_text": "y"}\n', encoding="utf-8")
    with pytest.raises(deploy_gate.InputError, match=rf"^{re.escape(str(cases))} line 2: no pipeline_id") as e:
        deploy_gate.run(cases, old=_old_yaml(tmp_path, server), new=_new_dict(server),
                        out_old=tmp_path / "o.jsonl", out_new=tmp_path / "n.jsonl")
    assert (e.value.file, e.value.line) == (str(cases), 2)
    with pytest.raises(FileNotFoundError, match="cannot read the test set"):
        deploy_gate.run(tmp_path / "none.jsonl", old=_old_yaml(tmp_path, server), new=_new_dict(server),
                        out_old=tmp_path / "o.jsonl", out_new=tmp_path / "n.jsonl")


def test_dict_targets_take_secrets_from_the_environment_only(
    tmp_path: Path, server: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    chat = {
        "kind": "openai-chat",
        "base_url": f"{server}/v1",
        "model": "m",
        "api_key_env": "DG_TEST_KEY",
        "messages": [{"role": "user", "content": "{{input_text}}"}],
        "retries": 0,
    }
    t = deploy_gate.endpoint(chat)
    assert t.env == ["DG_TEST_KEY"]
    # Not set: the CLI refuses before asking anything, naming the variable.
    monkeypatch.delenv("DG_TEST_KEY", raising=False)
    with pytest.raises(deploy_gate.EndpointFileError, match="api_key_env: the environment variable DG_TEST_KEY is not set"):
        t("case answer=PASS")
    monkeypatch.setenv("DG_TEST_KEY", "sk-test-1234")
    _reset(server)
    assert t("case answer=APPROVE") == "APPROVE"
    assert _stats(server)["auth_headers_seen"] == ["Bearer sk-test-1234"]
    # A credential written into the dict is refused; a ${VAR} is not.
    for name in ("Authorization", "X-Api-Key"):
        with pytest.raises(deploy_gate.EndpointFileError, match=f"headers.{name}: a credential is read from the environment"):
            deploy_gate.endpoint({**_new_dict(server), "headers": {name: "Bearer sk-live"}})
    deploy_gate.endpoint({**_new_dict(server), "headers": {"X-Api-Key": "${DG_TEST_KEY}", "X-Team": "gate"}})
    # The key's value is in no record.
    result = deploy_gate.run([{"pipeline_id": "a", "input_text": "fault=401"}], old=chat, new=chat, cache=False)
    text = Path(result.old).read_text() + Path(result.new).read_text()
    assert "sk-test-1234" not in text and "401" in text


def test_no_cli_is_needed(monkeypatch: pytest.MonkeyPatch, tmp_path: Path, server: str) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))
    assert deploy_gate.endpoint(_new_dict(server))("x answer=HERE") == "HERE"


def test_the_gil_is_released_while_the_run_waits(server: str) -> None:
    t = deploy_gate.endpoint(_new_dict(server))
    count, stop = [0], threading.Event()

    def spin() -> None:
        while not stop.is_set():
            count[0] += 1

    thread = threading.Thread(target=spin)
    thread.start()
    try:
        started = time.monotonic()
        assert t("fault=slow delay=1") == "PASS"
        waited = time.monotonic() - started
    finally:
        stop.set()
        thread.join()
    assert waited >= 1.0
    # The other thread ran all along (with the GIL held here, it would barely have started).
    assert count[0] > 100_000, count


def test_ctrl_c_stops_the_run(server: str) -> None:
    t = deploy_gate.endpoint(_new_dict(server))
    _reset(server)
    timer = threading.Timer(1.0, os.kill, (os.getpid(), signal.SIGINT))
    timer.start()
    started = time.monotonic()
    with pytest.raises(KeyboardInterrupt):
        t.records([{"pipeline_id": i, "input_text": f"case {i} fault=slow delay=30"} for i in range(3)])
    assert time.monotonic() - started < 15
    # The process was stopped: its requests left the server (a client gone during `slow`).
    deadline = time.monotonic() + 10
    while _stats(server)["in_flight"] and time.monotonic() < deadline:
        time.sleep(0.05)
    assert _stats(server)["in_flight"] == 0


def test_run_with_a_sequential_policy_asks_at_most_its_budget(tmp_path: Path, server: str) -> None:
    cases = _test_set(tmp_path)
    out_old, out_new = tmp_path / "o.jsonl", tmp_path / "n.jsonl"
    policy = {"mode": "non_inferiority", "sequential": True, "budget": 2, "cluster": "none"}
    result = deploy_gate.run(
        cases, old=_old_yaml(tmp_path, server), new=_new_yaml(tmp_path, server),
        out_old=out_old, out_new=out_new, cache=False, policy=policy,
    )
    # The budget's two cases, in the policy's order, both models; no more.
    assert len(result.records("old")) == len(result.records("new")) == 2
    # A policy that is not sequential is refused by the CLI, with its reason.
    with pytest.raises(deploy_gate.RunError, match="sequential: true"):
        deploy_gate.run(
            cases, old=_old_yaml(tmp_path, server), new=_new_yaml(tmp_path, server),
            out_old=tmp_path / "a.jsonl", out_new=tmp_path / "b.jsonl", cache=False,
            policy={"mode": "non_inferiority"},
        )
