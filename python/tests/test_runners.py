"""The reference's runner contract through `evaluate` and the drop-in: `str(v or "")`
compared case-insensitively, an exception a failed (errored) case that is logged, `None` a
missing verdict; sync runners on threads, async runners on an event loop; the verdicts enter
the core as the records a verdict file would hold."""

from __future__ import annotations

import asyncio
import json
import logging
import threading
from pathlib import Path
from typing import Any

import pytest

import deploy_gate
from conftest import big_log, completion, run_cli, stage, write_lines


def _log(tmp_path: Path) -> Path:
    lines = []
    for i, v in enumerate(["APPROVE", "PASS", "COMPLETE", "approve", "Pass", "APPROVE"]):
        lines += [stage(f"p{i}", "s", f"in{i}"), completion(f"p{i}", v)]
    return write_lines(tmp_path / "audit.jsonl", lines)


def _run(tmp_path: Path, old: Any, new: Any, **kw: Any) -> dict:
    report = deploy_gate.evaluate(_log(tmp_path), old, new, policy={"min_samples": 1}, progress=False, **kw)
    return report.data


def test_case_insensitive_str_none_and_exceptions(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    answers = {"in0": "approve", "in1": "PASS", "in2": None, "in3": 0, "in4": RuntimeError("model crashed"),
               "in5": "DENY"}

    def old(text: str) -> Any:
        v = answers[text]
        if isinstance(v, Exception):
            raise v
        return v

    with caplog.at_level(logging.WARNING, logger="deploy_gate"):
        data = _run(tmp_path, old, lambda text: "approve")
    counts = data["verdicts"]["old"]
    assert (counts["passed"], counts["missing"], counts["errored"], counts["wrong"]) == (2, 1, 1, 2)
    assert data["verdicts"]["old"]["pass_rate"] == round(2 / 6, 4)
    assert any("runner raised on p4: model crashed" in r.getMessage() for r in caplog.records)
    by_id = {c["pipeline_id"]: c for c in data["cases"]}
    assert by_id["p4"]["old_error"] == "RuntimeError: model crashed"
    assert by_id["p3"]["old_verdict"] == ""  # str(0 or "")
    # The new model's "approve" passes the cases expecting APPROVE (any case).
    assert data["verdicts"]["new"]["passed"] == 3


def test_verdicts_are_pythons_str(tmp_path: Path) -> None:
    class Odd:
        def __str__(self) -> str:
            return "complete"

    lines = [stage("a", "s", "x"), completion("a", "COMPLETE"), stage("b", "s", "y"), completion("b", "PASS")]
    log = write_lines(tmp_path / "a.jsonl", lines)
    report = deploy_gate.evaluate(log, lambda t: Odd(), lambda t: ["PASS"], policy={"min_samples": 1}, progress=False)
    cases = {c["pipeline_id"]: c for c in report.cases}
    assert cases["a"]["old_pass"] is True and cases["b"]["old_pass"] is False
    assert cases["b"]["new_verdict"] == "['PASS']"  # str() of a list, as the reference compares it


def test_runner_verdicts_are_a_verdict_files_records(tmp_path: Path, cli: Path) -> None:
    log = _log(tmp_path)

    def old(text: str) -> Any:
        if text == "in1":
            raise ValueError("bad input")
        return None if text == "in2" else "APPROVE"

    report = deploy_gate.evaluate(log, old, {"p0": "PASS", "p1": "pass"}, policy={"min_samples": 1}, progress=False)
    saved = tmp_path / "old-runner.jsonl"
    saved.write_bytes(report.verdict_file("old") or b"")
    mapping = tmp_path / "new-verdicts.json"
    mapping.write_text(json.dumps({"p0": "PASS", "p1": "pass"}))
    policy = tmp_path / "policy.json"
    policy.write_text('{"min_samples": 1}')
    out = tmp_path / "report.json"
    done = run_cli(cli, "evaluate", "--audit", str(log), "--old-verdicts", str(saved), "--new-verdicts", str(mapping),
                   "--policy", str(policy), "--out", str(out))
    # Four of the six cases lack the new model's verdict: more than max_missing (5%) allows, so
    # the decision is inconclusive (exit 4) in both, from the same records.
    assert done.returncode == 4, done.stderr.decode()
    assert report.data["decision"]["outcome"] == "inconclusive"
    assert out.read_text() == report.to_json()
    assert report.verdict_file("new") is None


def test_a_runner_may_return_its_verdict_with_what_the_model_answered(tmp_path: Path, cli: Path) -> None:
    log = _log(tmp_path)
    transcript = {"messages": [{"role": "assistant", "content": "APPROVE", "tool_calls": [{"name": "look"}]}]}

    def old(text: str) -> Any:
        if text == "in0":
            return {"verdict": "APPROVE", "output": transcript}
        if text == "in1":
            return {"verdict": "PASS", "output": "é" * 40000}  # 80,000 bytes: cut at 64 KiB
        if text == "in2":
            return {"output": "I could not decide"}  # no verdict: a miss, its output kept
        if text == "in3":
            return {"verdict": None, "output": float("nan")}  # not JSON: kept as its text
        if text == "in4":
            raise RuntimeError("model crashed")
        return {"verdict": "APPROVE", "why": "a mapping without output"}

    report = deploy_gate.evaluate(log, old, old, policy={"min_samples": 1}, progress=False)
    cases = {c["pipeline_id"]: c for c in report.cases}
    assert [cases[f"p{i}"]["old_pass"] for i in range(6)] == [True, True, False, False, False, True]
    assert cases["p2"]["old_missing"] and cases["p3"]["old_missing"] and cases["p4"]["old_errored"]
    records = {r["pipeline_id"]: r for r in map(json.loads, (report.verdict_file("old") or b"").splitlines())}
    assert records["p0"]["output"] == transcript and "output_truncated" not in records["p0"]
    assert records["p1"]["output"] == "é" * 32768 and records["p1"]["output_truncated"] is True
    assert records["p2"] == {"pipeline_id": "p2", "verdict": None, "output": "I could not decide"}
    assert records["p3"]["output"] == "nan"
    assert "output" not in records["p4"] and "output" not in records["p5"]
    # The outputs are never scored: the same verdicts without them give the same report, and
    # the CLI reads the runner's file (outputs and all) to the same report.
    plain = deploy_gate.evaluate(
        log, lambda t: old(t).get("verdict") if t != "in4" else old(t), old, policy={"min_samples": 1}, progress=False
    )
    assert [c["status"] for c in plain.cases] == [c["status"] for c in report.cases]
    assert plain.data["decision"] == report.data["decision"]
    saved = tmp_path / "old-runner.jsonl"
    saved.write_bytes(report.verdict_file("old") or b"")
    policy = tmp_path / "policy.json"
    policy.write_text('{"min_samples": 1}')
    out = tmp_path / "report.json"
    done = run_cli(cli, "evaluate", "--audit", str(log), "--old-verdicts", str(saved), "--new-verdicts", str(saved),
                   "--policy", str(policy), "--out", str(out))
    assert done.returncode in (0, 3, 4), done.stderr.decode()
    assert out.read_text() == report.to_json().replace("new-runner.jsonl", "old-runner.jsonl")


@pytest.mark.optional_deps
def test_the_cases_frame_shows_what_each_model_answered(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    pytest.importorskip("pandas")
    log = _log(tmp_path)
    transcript = {"messages": [{"role": "assistant", "content": "<b>APPROVE</b>"}]}

    def old(text: str) -> Any:
        return {"verdict": "APPROVE", "output": transcript} if text == "in0" else "APPROVE"

    # The new model's file: an answer per record, a CSV-like text and a JSON value, one without.
    new = tmp_path / "new.jsonl"
    new.write_text(
        "".join(
            json.dumps({"pipeline_id": f"p{i}", "verdict": "APPROVE", **({"output": f"answer {i},\n\"x\""} if i % 2 else {})})
            + "\n"
            for i in range(6)
        )
    )
    # Given as a path relative to the working folder, which changes before the frame is made.
    monkeypatch.chdir(tmp_path)
    report = deploy_gate.evaluate(log, old, "new.jsonl", policy={"min_samples": 1}, progress=False)
    monkeypatch.chdir(log.anchor)
    frame = report.cases_frame().set_index("pipeline_id")
    assert frame.loc["p0", "old_output"] == transcript and frame.loc["p1", "old_output"] is None
    assert not frame["old_output_truncated"].any() and not frame["new_output_truncated"].any()
    assert [frame.loc[f"p{i}", "new_output"] for i in range(6)] == [
        None, "answer 1,\n\"x\"", None, "answer 3,\n\"x\"", None, "answer 5,\n\"x\""
    ]
    # A mapping's values may carry answers too.
    mapping = {f"p{i}": {"verdict": "APPROVE", "output": [i]} for i in range(6)}
    frame = deploy_gate.evaluate(log, mapping, new, policy={"min_samples": 1}, progress=False).cases_frame()
    assert list(frame["old_output"]) == [[i] for i in range(6)]
    # A runner's answer cut to its bound says so.
    long = deploy_gate.evaluate(
        log, lambda t: {"verdict": "APPROVE", "output": "é" * 40000}, new, policy={"min_samples": 1}, progress=False
    ).cases_frame()
    assert long["old_output_truncated"].all() and all(len(o) == 32768 for o in long["old_output"])
    # The answers are read again from the file: one changed since refuses, naming it.
    new.write_text(new.read_text().replace("answer", "ANSWER"))
    with pytest.raises(deploy_gate.InputError, match="changed since it was read"):
        report.cases_frame()


def test_the_drop_in_keeps_the_references_rule_for_a_mapping(tmp_path: Path) -> None:
    # DeploymentGate.score_model compares str() of whatever the runner returned, as the
    # reference does: a mapping is its str(), never read for a verdict.
    gate = deploy_gate.DeploymentGate(progress=False)
    cases = [{"pipeline_id": "a", "input_text": "x", "expected_verdict": "PASS"}]
    assert gate.score_model(cases, lambda t: {"verdict": "PASS", "output": "PASS"}) == 0.0
    assert gate.score_model(cases, lambda t: "PASS") == 1.0


def test_async_runner_with_bounded_concurrency(tmp_path: Path) -> None:
    running = 0
    peak = 0

    async def new(text: str) -> str:
        nonlocal running, peak
        running += 1
        peak = max(peak, running)
        await asyncio.sleep(0.01)
        running -= 1
        if text == "in5":
            raise RuntimeError("async crash")
        return "approve" if text in ("in0", "in5") else "pass"

    data = _run(tmp_path, lambda t: "DENY", new, max_concurrency=2)
    assert peak == 2
    assert data["verdicts"]["new"]["errored"] == 1
    assert data["verdicts"]["new"]["passed"] == 3  # in0 APPROVE, in1 PASS, in4 Pass


def test_async_runner_inside_a_running_loop(tmp_path: Path) -> None:
    async def new(text: str) -> str:
        await asyncio.sleep(0)
        return "PASS"

    async def notebook_cell() -> dict:
        return _run(tmp_path, lambda t: "PASS", new)

    data = asyncio.run(notebook_cell())
    assert data["verdicts"]["new"]["passed"] == data["verdicts"]["old"]["passed"] == 2


def test_threads_are_used(tmp_path: Path) -> None:
    seen = set()
    barrier = threading.Barrier(3, timeout=10)

    def old(text: str) -> str:
        seen.add(threading.get_ident())
        if text in ("in0", "in1", "in2"):
            barrier.wait()  # three cases at once, or this times out
        return "APPROVE"

    data = _run(tmp_path, old, lambda t: "APPROVE", max_workers=4)
    assert len(seen) >= 3
    assert data["verdicts"]["old"]["errored"] == 0


def test_progress_callable(tmp_path: Path) -> None:
    calls = []
    deploy_gate.evaluate(_log(tmp_path), lambda t: "PASS", lambda t: "PASS", policy={"min_samples": 1},
                         progress=lambda done, total, what: calls.append((done, total, what)), max_workers=1)
    assert calls[-1][:2] == (6, 6) and {c[2] for c in calls} == {"scan", "old model", "new model"}
    scan = [c for c in calls if c[2] == "scan"]
    assert scan[-1][0] == scan[-1][1] > 0


def test_keyboard_interrupt_stops_the_run(tmp_path: Path) -> None:
    calls = []

    def old(text: str) -> str:
        calls.append(text)
        if len(calls) == 2:
            raise KeyboardInterrupt
        return "PASS"

    with pytest.raises(KeyboardInterrupt):
        _run(tmp_path, old, lambda t: "PASS", max_workers=1)
    assert len(calls) == 2
    with pytest.raises(KeyboardInterrupt):
        deploy_gate.DeploymentGate().score_model([{"input_text": "a"}, {"input_text": "b"}],
                                                 lambda t: (_ for _ in ()).throw(KeyboardInterrupt()))


def _expected(i: int) -> str:
    return ("APPROVE", "PASS", "COMPLETE")[i % 3]


@pytest.fixture(scope="module")
def log_100k(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return big_log(tmp_path_factory.mktemp("big") / "audit.jsonl", 100_000)


def test_100k_cases_sync_on_8_threads_and_async(log_100k: Path) -> None:
    def old(text: str) -> str:
        i = int(text[3:])
        return _expected(i).lower() if i % 10 else "DENY"  # 90% pass

    async def new(text: str) -> Any:
        i = int(text[3:])
        await asyncio.sleep(0)
        if i % 1000 == 7:
            raise RuntimeError("flaky")
        return None if i % 1000 == 8 else _expected(i)

    report = deploy_gate.evaluate(log_100k, old, new, policy={"max_samples": None}, max_workers=8,
                                  max_concurrency=256, progress=False)
    d = report.data
    assert d["test_set"]["num_cases"] == 100_000
    assert d["verdicts"]["old"]["passed"] == 90_000
    assert (d["verdicts"]["new"]["errored"], d["verdicts"]["new"]["missing"]) == (100, 100)
    assert d["verdicts"]["new"]["passed"] == 99_800
    assert d["decision"]["task_old"] == 0.9 and d["decision"]["task_new"] == 0.998
    assert report.approved


def test_gil_is_released_during_a_scan(log_100k: Path) -> None:
    import time

    ticks = []
    stop = threading.Event()

    def spin() -> None:
        while not stop.is_set():
            ticks.append(time.perf_counter())
            time.sleep(0.0005)

    t = threading.Thread(target=spin)
    t.start()
    try:
        time.sleep(0.01)
        start = time.perf_counter()
        ts = deploy_gate.build_test_set(log_100k, max_samples=None, threads=1)
        end = time.perf_counter()
    finally:
        stop.set()
        t.join()
    assert len(ts) == 100_000
    during = [x for x in ticks if start < x < end]
    # The other thread ran all through the scan, not only around it.
    assert end - start > 0.02
    assert len(during) >= 10, (len(during), end - start)


def test_the_html_report_shows_both_answers_as_the_cli_does(tmp_path: Path, cli: Path) -> None:
    log = _log(tmp_path)
    # Hostile answers: markup, a closing tag, a bidi override, a structured answer; two cases
    # regress (p0, p5), which the report lists with their answers.
    answers = ["<script>alert(1)</script>", "</pre></td><b>x</b>", "\u202egnp.exe", {"tool_calls": [{"id": 7}]}, "fine", "ok"]
    old = tmp_path / "old.jsonl"
    new = tmp_path / "new.jsonl"
    old.write_text("".join(json.dumps({"pipeline_id": f"p{i}", "verdict": "APPROVE", "output": a}) + "\n" for i, a in enumerate(answers)))
    new.write_text(
        "".join(
            json.dumps({"pipeline_id": f"p{i}", "verdict": "DENY" if i in (0, 5) else "APPROVE", **({"output": f"new {a}"} if i % 2 else {})}) + "\n"
            for i, a in enumerate(answers)
        )
    )
    report = deploy_gate.evaluate(log, old, new, policy={"min_samples": 1}, progress=False)
    html = report.to_html()
    out = tmp_path / "report.html"
    done = run_cli(cli, "evaluate", "--audit", str(log), "--old-verdicts", str(old), "--new-verdicts", str(new), "--min-samples", "1", "--html", str(out))
    # Exit 3: blocked (two regressed), the files written.
    assert done.returncode == 3, done.stderr
    assert html == out.read_text(encoding="utf-8")
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in html and "<script>alert" not in html
    assert "<ins>new </ins>ok" in html
    # Without answers: the report as before answers were shown.
    plain = report.to_html(answers=False)
    assert "<ins>" not in plain and "alert(1)" not in plain
    # A verdict file that changed since it was read (even where no answer shown is) is refused,
    # naming it; the report without answers still renders.
    new.write_text(new.read_text().replace("APPROVE", "approve", 1))
    with pytest.raises(deploy_gate.InputError, match="changed since it was read"):
        report.to_html()
    assert report.to_html(answers=False) == plain
