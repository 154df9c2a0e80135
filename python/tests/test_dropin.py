"""The drop-in's behaviours beside the recorded results: the missing audit file, real-writer
logs, trajectory dicts, apply_decision's hooks and its own deploy step, errors naming files."""

from __future__ import annotations

import json
import logging
import sys
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import pytest

import deploy_gate
from conftest import PARITY, completion, stage, write_lines, reference_policy
from deploy_gate import DeploymentGate, GateDecision


def test_missing_audit_file_gives_an_empty_list_and_the_references_warning(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING, logger="deploy_gate"):
        assert DeploymentGate(seed=0).build_test_set("/nonexistent/audit.jsonl") == []
    assert "DeploymentGate.build_test_set: /nonexistent/audit.jsonl not found" in caplog.text
    # The evaluate API raises instead.
    with pytest.raises(OSError, match="nonexistent"):
        deploy_gate.evaluate("/nonexistent/audit.jsonl", {}, {}, progress=False)


def test_too_few_runs_warns_and_gives_an_empty_list(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    log = write_lines(tmp_path / "a.jsonl", [stage("p", "s", "x"), completion("p", "PASS")])
    with caplog.at_level(logging.WARNING, logger="deploy_gate"):
        assert DeploymentGate().build_test_set(str(log), min_samples=2) == []
    assert "only 1 successful runs found (min_samples=2)" in caplog.text


def test_a_real_writers_log_gives_test_cases() -> None:
    # The reference finds none in this shape (its completions carry stage_type: "output").
    cases = DeploymentGate().build_test_set(str(PARITY / "real-writer-shape" / "audit.jsonl"), min_samples=1)
    assert cases and set(cases[0]) == {"pipeline_id", "template_id", "input_text", "expected_verdict",
                                       "expected_stage_outputs", "episode_reward"}


def test_trajectory_objects_and_dicts_are_read_alike() -> None:
    class Result:
        def __init__(self, **kw: float) -> None:
            self.__dict__.update(kw)

    rows = [dict(overall_judge_score=0.9, tac_score=0.8, scsr_score=0.7, iasa_score=0.6, egs_score=0.5,
                 arr_score=0.1, lcf_score=1), dict(overall_judge_score=1.5, tac_score=1.0)]
    gate = DeploymentGate()
    by_dict = gate._mean_trajectory_score(rows)
    by_object = gate._mean_trajectory_score([Result(**r) for r in rows])
    # (0.9+0.8+0.7+0.6+0.5)/5 - 0.02 - 0.1 = 0.58; (1.5+1.0)/5 = 0.5; mean 0.54.
    assert by_dict == by_object == 0.54
    assert gate._mean_trajectory_score([{"tac_score": 1.0}]) is None
    assert gate._mean_trajectory_score(None) is None


def test_an_empty_test_set_with_a_trajectory_regression_names_both_causes() -> None:
    # Upstream's closed loop (its trajectory-signal test): the test set is empty, so the task
    # scores tie at 0.0, and the new model's trajectories regress (judge 0.4 against 0.9, beyond
    # the tolerance 0.05); it expects a block whose reason names the trajectory.
    @dataclass
    class AgenticEvalResult:
        trajectory_id: str
        overall_judge_score: float
        tac_score: float
        scsr_score: float
        iasa_score: float
        egs_score: float
        arr_score: float = 0.0
        lcf_score: int = 0

    def results(tag: str, score: float) -> list:
        return [AgenticEvalResult(f"{tag}{i}", score, score, score, score, score) for i in range(12)]

    gate = DeploymentGate(seed=0)
    decision = gate.evaluate_decision(
        [],
        old_model_fn=lambda i: "GOOD",
        new_model_fn=lambda i: "BAD",
        old_trajectory_results=results("GOOD", 0.9),
        new_trajectory_results=results("BAD", 0.4),
        task_regression_tol=0.0,
        trajectory_regression_tol=0.05,
    )
    assert decision.approved is False and decision.outcome == "blocked"
    assert "trajectory" in decision.reason
    assert decision.reason == (
        "blocked: insufficient test cases (empty test set); "
        "trajectory quality regressed (new mean 0.400 < old mean 0.900 - 0.05)"
    )
    assert (decision.trajectory_old, decision.trajectory_new, decision.trajectory_delta) == (0.9, 0.4, -0.5)
    assert decision.details["trajectory_regressed"] is True and decision.details["task_regressed"] is False
    # Trajectories within the tolerance are no cause; the reference's approval on request names
    # the trajectory by its own rule.
    kept = gate.evaluate_decision([], lambda i: "x", lambda i: "x", results("a", 0.9), results("b", 0.88))
    assert kept.reason == "blocked: insufficient test cases (empty test set)"
    reference = gate.evaluate_decision(
        [], lambda i: "x", lambda i: "x", results("a", 0.9), results("b", 0.4), on_insufficient="approve"
    )
    assert (reference.approved, reference.reason) == (False, "blocked: trajectory quality regressed")


def test_apply_decision_hooks() -> None:
    gate = DeploymentGate(seed=0)
    calls: dict = {}
    approved = GateDecision(approved=True, reason="ok")
    out = gate.apply_decision(approved, config_path="cfg.yaml", trained_path="/models/new",
                              deploy_fn=lambda config_path, trained_path: calls.update(d=(config_path, trained_path)))
    assert out == "deployed" and calls["d"] == ("cfg.yaml", "/models/new")
    blocked = GateDecision(approved=False, reason="blocked: task accuracy regressed")
    assert gate.apply_decision(blocked, config_path="cfg.yaml",
                               rollback_fn=lambda config_path: calls.update(r=config_path)) == "kept_old"
    assert calls["r"] == "cfg.yaml"
    assert gate.apply_decision(blocked, config_path="cfg.yaml") == "kept_old"
    with pytest.raises(ValueError):
        gate.apply_decision(approved, config_path="cfg.yaml", deploy_fn=lambda **k: None)


def test_apply_decision_deploys_through_deploy_gates_deploy_step(tmp_path: Path) -> None:
    config = tmp_path / "serving.yml"
    before = "# the serving config\ndefault_model: models/old   # live\nbackend: vllm\nstages:\n  extract: {model: a}\n"
    config.write_text(before)
    model = tmp_path / "models" / "new"
    model.mkdir(parents=True)
    gate = DeploymentGate()
    out = gate.apply_decision(GateDecision(approved=True, reason="ok"), str(config), str(model) + "/",
                              stage_model_map={"extract": "models/x"})
    assert out == "deployed"
    after = config.read_text()
    # The values are written as quoted scalars; every other byte (comments, layout) is kept.
    assert after == before.replace("models/old", f'"{model}"').replace("vllm", '"transformers"').replace(
        "{model: a}", '{model: "models/x"}')
    # Upstream's backup name, holding the config as it was.
    assert (tmp_path / "serving.yaml.backup").read_text() == before
    # A config that is not a mapping is refused and left untouched.
    bad = tmp_path / "gateway.yaml"
    bad.write_text("- a\n")
    with pytest.raises(deploy_gate.DeployError, match="gateway.yaml"):
        gate.apply_decision(GateDecision(approved=True, reason="ok"), str(bad), str(model))
    assert bad.read_text() == "- a\n"
    with pytest.raises(FileNotFoundError):
        gate.apply_decision(GateDecision(approved=True, reason="ok"), str(config), str(tmp_path / "nope"))


def test_errors_name_the_file_and_the_line(tmp_path: Path) -> None:
    log = write_lines(tmp_path / "a.jsonl", [stage("p", "s", "x"), completion("p", "PASS")])
    bad = write_lines(tmp_path / "old.jsonl", ['{"pipeline_id": "p", "verdict": "PASS"}', '{"pipeline_id": 1.5}'])
    with pytest.raises(deploy_gate.VerdictFileError) as e:
        deploy_gate.evaluate(log, bad, {"p": "PASS"}, policy={"min_samples": 1}, progress=False)
    assert isinstance(e.value, deploy_gate.InputError) and isinstance(e.value, ValueError)
    assert (e.value.file, e.value.line, e.value.role) == ("old.jsonl", 2, "old_verdicts")
    assert "old.jsonl" in str(e.value) and "line 2" in str(e.value)
    traj = write_lines(tmp_path / "t.jsonl", ['{"overall_judge_score": "high"}'])
    with pytest.raises(deploy_gate.TrajectoryFileError) as t:
        deploy_gate.evaluate(log, {"p": "PASS"}, {"p": "PASS"}, traj, traj, policy={"min_samples": 1}, progress=False)
    assert (t.value.file, t.value.line) == ("t.jsonl", 1)
    with pytest.raises(deploy_gate.PolicyError, match="min_sample"):
        deploy_gate.evaluate(log, {}, {}, policy={"min_sample": 1}, progress=False)
    with pytest.raises(deploy_gate.TrajectoryFileError):
        deploy_gate.evaluate(log, {}, {}, [{"overall_judge_score": float("nan")}], [], progress=False)


def test_gzip_and_several_files_are_one_stream(tmp_path: Path) -> None:
    import gzip

    a = write_lines(tmp_path / "a.jsonl", [stage("p1", "s", "x"), completion("p1", "PASS")])
    b = tmp_path / "b.jsonl.gz"
    b.write_bytes(gzip.compress((stage("p2", "s", "y") + "\n" + completion("p2", "APPROVE") + "\n").encode()))
    ts = deploy_gate.build_test_set([a, b], min_samples=1)
    assert [c["pipeline_id"] for c in ts] == ["p1", "p2"]
    assert DeploymentGate().build_test_set(str(b), min_samples=1)[0]["input_text"] == "y"


def test_report_renderings_and_notebook_view(tmp_path: Path) -> None:
    d = PARITY / "approved"
    r = deploy_gate.evaluate(d / "audit.jsonl", d / "old_verdicts.jsonl", d / "new_verdicts.jsonl",
                             policy=reference_policy(d), progress=False)
    assert r.to_html().startswith("<!DOCTYPE html>") and "srcdoc" in r._repr_html_()
    assert r.to_junit().startswith("<?xml") and r.to_markdown().startswith("#")
    assert r.cases and r.stats["task"]["mcnemar"]["b"] >= 0
    assert "approved=True" in repr(r)


@pytest.mark.optional_deps
def test_cases_frame_with_pandas_and_a_tqdm_bar(tmp_path: Path) -> None:
    pd = pytest.importorskip("pandas")
    pytest.importorskip("tqdm")
    d = PARITY / "approved"
    r = deploy_gate.evaluate(d / "audit.jsonl", lambda t: "PASS", d / "new_verdicts.jsonl",
                             policy=reference_policy(d), progress=True)
    frame = r.cases_frame()
    assert isinstance(frame, pd.DataFrame) and len(frame) == r.data["test_set"]["num_cases"]
    assert {"pipeline_id", "old_pass", "new_pass", "status"} <= set(frame.columns)


def test_cases_frame_without_pandas_says_so(monkeypatch: pytest.MonkeyPatch) -> None:
    import builtins

    real = builtins.__import__

    def no_pandas(name: str, *a: object, **k: object) -> object:
        if name == "pandas":
            raise ImportError("no pandas")
        return real(name, *a, **k)  # type: ignore[arg-type]

    d = PARITY / "approved"
    r = deploy_gate.evaluate(d / "audit.jsonl", d / "old_verdicts.jsonl", d / "new_verdicts.jsonl", progress=True)
    monkeypatch.setattr(builtins, "__import__", no_pandas)
    with pytest.raises(ImportError, match="pip install pandas"):
        r.cases_frame()


def _reference_decision(n: int, old: float, new: float, task_tol: float = 0.0) -> dict:
    """The reference's decision on task scores alone (no trajectories): a regression when
    ``new < old - task_tol``, a missing verdict being a failed case whatever their number."""
    regressed = new < old - task_tol
    return {
        "approved": not regressed,
        "reason": "blocked: task accuracy regressed" if regressed else "approved: no regression on task or trajectory",
        "task_delta": round(new - old, 4),
        "trajectory_delta": 0.0,
        "task_old": old,
        "task_new": new,
        "trajectory_old": None,
        "trajectory_new": None,
        "num_cases": n,
        "details": {"task_regressed": regressed, "trajectory_regressed": False, "task_regression_tol": task_tol,
                    "trajectory_regression_tol": 0.05, "trajectory_checked": False},
    }


def test_missing_verdicts_through_the_drop_in_give_the_references_answer() -> None:
    # 200 cases; each model answers 4 (correctly) and gives no verdict on the other 196 (None,
    # or an exception): the reference scores the 196 as failures and, the models failing alike,
    # approves. The drop-in keeps that answer and its default: the CLI's fail-closed rule on
    # missing evidence is not the drop-in's (deploy_gate.evaluate, the CLI's API, has it).
    cases = [{"pipeline_id": f"p{i}", "template_id": "t", "input_text": f"in {i}", "expected_verdict": "PASS",
              "expected_stage_outputs": {}, "episode_reward": None} for i in range(200)]

    def none_after_four(text: str) -> Any:
        return "PASS" if int(text.split()[1]) < 4 else None

    def raises_after_four(text: str) -> Any:
        if int(text.split()[1]) < 4:
            return "pass"
        raise RuntimeError("model crashed")

    gate = DeploymentGate(seed=0)
    assert gate.on_insufficient == "block"
    for old, new in ((none_after_four, none_after_four), (raises_after_four, none_after_four)):
        assert gate.score_model(cases, old) == gate.score_model(cases, new) == 0.02
        assert asdict(gate.compare_models(cases, old, new)) == {
            "old_score": 0.02, "new_score": 0.02, "delta": 0.0, "num_cases": 200, "new_is_better": False,
            "recommendation": "keep_old"}
        decision = gate.evaluate_decision(cases, old, new)
        assert asdict(decision) == _reference_decision(200, 0.02, 0.02)
        assert decision.outcome == "approved"
    # A new model missing its verdicts where the old one answers: a regression, as the reference says.
    everything = lambda text: "PASS"  # noqa: E731
    assert asdict(gate.evaluate_decision(cases, everything, none_after_four, task_regression_tol=0.5)) == \
        _reference_decision(200, 1.0, 0.02, 0.5)
    # Upstream's partial-crash scoring: a runner that crashes on 2 of 3 cases scores 1/3.
    assert gate.score_model(cases[:3], lambda text: "PASS" if text == "in 0" else 1 / 0) == 0.3333


def test_missing_verdict_records_through_targets_give_the_references_answer(tmp_path: Path, cli: Path) -> None:
    # The file-based path: two command targets through one `deploy-gate run`, whose verdict
    # files answer 4 of 200 cases (the others' records carry `"verdict": null`, a missing
    # verdict). Read back by the drop-in, the reference's answer; read by deploy_gate.evaluate
    # (the CLI's rules), insufficient evidence.
    worker = tmp_path / "worker.py"
    worker.write_text(
        "import json, sys\n"
        "for line in sys.stdin:\n"
        "    case = json.loads(line)\n"
        "    i = int(case['pipeline_id'][1:])\n"
        "    print(json.dumps({'verdict': 'PASS' if i < 4 else None}), flush=True)\n",
        encoding="utf-8",
    )
    log = write_lines(tmp_path / "audit.jsonl",
                      [line for i in range(200) for line in (stage(f"p{i}", "s", f"in {i}"), completion(f"p{i}", "PASS"))])
    gate = DeploymentGate(seed=0)
    cases = gate.build_test_set(str(log), min_samples=20, max_samples=200)
    assert len(cases) == 200

    def target(name: str) -> Any:
        return deploy_gate.target({"kind": "command", "argv": [sys.executable, str(worker)], "description": name,
                                   "concurrency": {"initial": 1, "min": 1, "max": 1}}, cli=cli)

    old, new = target("old"), target("new")
    records = old.records(cases)
    assert sum(r.get("verdict") == "PASS" for r in records) == 4
    assert sum("verdict" in r and r["verdict"] is None for r in records) == 196
    assert asdict(gate.evaluate_decision(cases, old, new)) == _reference_decision(200, 0.02, 0.02)
    # The same verdict files under deploy-gate's own rules fail closed.
    verdicts = tmp_path / "verdicts.jsonl"
    write_lines(verdicts, [json.dumps(r) for r in records])
    report = deploy_gate.evaluate(log, verdicts, verdicts, progress=False)
    assert report.outcome == "blocked" and report.rests_on == 4
    assert report.decision.reason.startswith("blocked: insufficient evidence (4 of 200 test cases answered by both")
