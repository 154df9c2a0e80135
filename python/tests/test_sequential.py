"""Sequential decisions in Python: ``evaluate`` under a sequential policy gives the CLI's
``evaluate --sequential`` report, and the drop-in's ``evaluate_decision(..., sequential=True)``
asks its runners in the seed's order and stops asking once the decision is reached, with the
decision the CLI gives on the same verdicts."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any, Callable, Dict, List, Optional, Tuple

import pytest

import deploy_gate
from conftest import ROOT, completion, run_cli, stage, write_lines
from deploy_gate import DeploymentGate

EXAMPLES = ROOT / "www" / "examples"


def _u(*parts: Any) -> float:
    """A fixed pseudo-random number in [0, 1) from its parts."""
    digest = hashlib.sha256(":".join(str(p) for p in parts).encode()).digest()
    return int.from_bytes(digest[:8], "big") / 2**64


def _log(tmp_path: Path, n: int, templates: int = 1) -> Path:
    lines = []
    for i in range(n):
        pid, tpl = f"pipe-{i:05d}", f"tpl-{i % templates}"
        lines += [stage(pid, "decide", f"in-{i}", template=tpl), completion(pid, "APPROVE", template=tpl)]
    return write_lines(tmp_path / "audit.jsonl", lines)


def _passes(i: int, p_old: float, p_new: float) -> Tuple[bool, bool]:
    """Paired outcomes of case ``i``: one uniform draw, so equal rates give few discordant
    pairs, as retrained models do."""
    u, v = _u("case", i), _u("other", i)
    return u < p_old, (u if v < 0.85 else _u("new", i)) < p_new


def _verdict(ok: bool) -> str:
    return "APPROVE" if ok else "DENY"


def _verdict_file(path: Path, table: Dict[str, str]) -> Path:
    return write_lines(path, [json.dumps({"pipeline_id": pid, "verdict": v}) for pid, v in table.items()])


SEQ_FLAGS = ["--mode", "non_inferiority", "--sequential", "--task-tol", "0.05", "--seed", "11",
             "--min-samples", "1", "--max-samples", "none", "--cluster", "none"]


def _cli_report(cli: Path, tmp_path: Path, log: Path, old: Path, new: Path, *flags: str) -> Dict[str, Any]:
    out = tmp_path / "cli-report.json"
    done = run_cli(cli, "evaluate", "--audit", str(log), "--old-verdicts", str(old), "--new-verdicts", str(new),
                   "--out", str(out), *flags)
    assert done.returncode in (0, 3, 4), done.stderr.decode()
    data: Dict[str, Any] = json.loads(out.read_text())
    return data


# ---------------------------------------------------------------- evaluate


@pytest.mark.parametrize(
    "p_old,p_new,budget,stopped",
    [(0.8, 0.97, None, "approved"), (0.8, 0.55, None, "blocked"), (0.8, 0.8, 150, "budget")],
)
def test_evaluate_gives_the_clis_sequential_report(
    cli: Path, tmp_path: Path, p_old: float, p_new: float, budget: Optional[int], stopped: str
) -> None:
    n = 1500
    log = _log(tmp_path, n)
    pairs = [_passes(i, p_old, p_new) for i in range(n)]
    old = _verdict_file(tmp_path / "old.jsonl", {f"pipe-{i:05d}": _verdict(o) for i, (o, _) in enumerate(pairs)})
    new = _verdict_file(tmp_path / "new.jsonl", {f"pipe-{i:05d}": _verdict(w) for i, (_, w) in enumerate(pairs)})
    policy: Dict[str, Any] = {"mode": "non_inferiority", "sequential": True, "task_regression_tol": 0.05,
                              "seed": 11, "min_samples": 1, "max_samples": None, "cluster": "none"}
    flags = list(SEQ_FLAGS)
    if budget is not None:
        policy["budget"] = budget
        flags += ["--budget", str(budget)]
    report = deploy_gate.evaluate(log, old, new, policy=policy, progress=False)
    expected = _cli_report(cli, tmp_path, log, old, new, *flags)
    assert json.loads(report.to_json()) == expected
    assert report.to_json() == (tmp_path / "cli-report.json").read_text()
    seq = report.sequential
    assert seq is not None and seq == expected["sequential"]
    assert seq["stopped"] == stopped and seq["unit"] == "case" and seq["order_seed"] == 11
    assert report.outcome == {"approved": "approved", "blocked": "blocked", "budget": "inconclusive"}[stopped]
    assert report.decision.reason == expected["decision"]["reason"]
    if stopped != "budget":
        assert seq["used"] < 600, seq["used"]  # well before the test set's 1,500 cases
    else:
        assert seq["used"] == seq["budget"] == 150


def test_evaluate_on_the_bundled_example(cli: Path, tmp_path: Path) -> None:
    files = [EXAMPLES / f for f in ("audit.jsonl", "old_verdicts.jsonl", "new_verdicts.jsonl")]
    report = deploy_gate.evaluate(
        files[0], files[1], files[2], policy={"mode": "non_inferiority", "sequential": True, "budget": 40},
        progress=False,
    )
    expected = _cli_report(cli, tmp_path, *files, "--mode", "non_inferiority", "--sequential", "--budget", "40")
    assert report.to_json() == (tmp_path / "cli-report.json").read_text()
    assert report.sequential == expected["sequential"] and report.sequential is not None
    assert report.sequential["budget"] == 40


def test_no_sequential_object_without_the_policy_and_refusals(tmp_path: Path) -> None:
    log = _log(tmp_path, 30)
    table = {f"pipe-{i:05d}": "APPROVE" for i in range(30)}
    report = deploy_gate.evaluate(log, table, table, policy={"min_samples": 1}, progress=False)
    assert report.sequential is None and "sequential" not in report.data
    with pytest.raises(deploy_gate.PolicyError, match="sequential"):
        deploy_gate.evaluate(log, table, table, policy={"sequential": True, "mode": "point"}, progress=False)
    with pytest.raises(deploy_gate.PolicyError, match="budget"):
        deploy_gate.evaluate(log, table, table, policy={"budget": 10}, progress=False)


# ---------------------------------------------------------------- the drop-in


class Counting:
    """A runner answering from a table by input text, recording what it was asked."""

    def __init__(self, table: Dict[str, str]) -> None:
        self.table = table
        self.asked: List[str] = []

    def __call__(self, input_text: Any) -> str:
        self.asked.append(input_text)
        return self.table[input_text]


def _runners(n: int, p_old: float, p_new: float) -> Tuple[Counting, Counting]:
    pairs = [_passes(i, p_old, p_new) for i in range(n)]
    return (Counting({f"in-{i}": _verdict(o) for i, (o, _) in enumerate(pairs)}),
            Counting({f"in-{i}": _verdict(w) for i, (_, w) in enumerate(pairs)}))


def _asked_verdicts(tmp_path: Path, runner: Counting, side: str) -> Path:
    table = {f"pipe-{int(text.split('-')[1]):05d}": runner.table[text] for text in runner.asked}
    return _verdict_file(tmp_path / f"{side}-asked.jsonl", table)


def _decision_dict(d: deploy_gate.GateDecision) -> Dict[str, Any]:
    return {"approved": d.approved, "reason": d.reason, "task_delta": d.task_delta, "task_old": d.task_old,
            "task_new": d.task_new, "num_cases": d.num_cases, "outcome": d.outcome}


def _cli_decision(data: Dict[str, Any]) -> Dict[str, Any]:
    d = data["decision"]
    return {k: d[k] for k in ("approved", "reason", "task_delta", "task_old", "task_new", "num_cases", "outcome")}


@pytest.mark.parametrize("p_old,p_new,stopped", [(0.8, 0.97, "approved"), (0.8, 0.55, "blocked")])
def test_dropin_stops_asking_once_decided(
    cli: Path, tmp_path: Path, p_old: float, p_new: float, stopped: str
) -> None:
    n, budget = 2000, 1500
    log = _log(tmp_path, n)
    gate = DeploymentGate(seed=11, progress=False)
    cases = gate.build_test_set(str(log), min_samples=1, max_samples=None)
    assert len(cases) == n
    old, new = _runners(n, p_old, p_new)
    decision = gate.evaluate_decision(cases, old, new, task_regression_tol=0.05, sequential=True, budget=budget,
                                      cluster="none")
    seq = decision.sequential
    assert seq is not None and seq["stopped"] == stopped and decision.outcome == stopped
    # Both models were asked the same cases, each once, and far fewer than the budget.
    assert old.asked == new.asked and len(set(old.asked)) == len(old.asked)
    assert seq["used"] <= len(old.asked) <= max(10, seq["used"] * 21 // 20 + 10)
    assert len(old.asked) < budget // 3, (len(old.asked), seq)
    # In the seed's order: the first cases asked are the first units of the core's order.
    ids = [f"pipe-{int(t.split('-')[1]):05d}" for t in old.asked]
    ranks = [hashlib.sha256(f"deploy-gate/sequential-order/v1:11:{pid}".encode()).digest() for pid in ids]
    assert ranks == sorted(ranks)
    # The CLI on the verdicts the runners gave reaches the same decision and sequence.
    expected = _cli_report(cli, tmp_path, log, _asked_verdicts(tmp_path, old, "old"),
                           _asked_verdicts(tmp_path, new, "new"), *SEQ_FLAGS, "--budget", str(budget))
    assert seq == expected["sequential"]
    assert _decision_dict(decision) == _cli_decision(expected)


def test_dropin_equal_models_match_the_cli(cli: Path, tmp_path: Path) -> None:
    n, budget = 600, 250
    log = _log(tmp_path, n)
    gate = DeploymentGate(seed=11, progress=False)
    cases = gate.build_test_set(str(log), min_samples=1, max_samples=None)
    old, new = _runners(n, 0.8, 0.8)
    decision = gate.evaluate_decision(cases, old, new, task_regression_tol=0.05, sequential=True, budget=budget,
                                      cluster="none")
    seq = decision.sequential
    assert seq is not None
    expected = _cli_report(cli, tmp_path, log, _asked_verdicts(tmp_path, old, "old"),
                           _asked_verdicts(tmp_path, new, "new"), *SEQ_FLAGS, "--budget", str(budget))
    assert seq == expected["sequential"]
    assert _decision_dict(decision) == _cli_decision(expected)
    assert len(old.asked) <= budget
    if seq["stopped"] == "budget":
        assert len(old.asked) == budget and decision.outcome == "inconclusive"


def test_dropin_templates_are_asked_together(cli: Path, tmp_path: Path) -> None:
    n, templates = 1200, 60
    log = _log(tmp_path, n, templates=templates)
    gate = DeploymentGate(seed=5, progress=False)
    cases = gate.build_test_set(str(log), min_samples=1, max_samples=None)
    old, new = _runners(n, 0.6, 0.98)
    decision = gate.evaluate_decision(cases, old, new, task_regression_tol=0.05, sequential=True, chunk=2)
    seq = decision.sequential
    assert seq is not None and seq["unit"] == "template" and seq["budget"] == templates
    asked_templates = [int(t.split("-")[1]) % templates for t in old.asked]
    # Whole templates, one after another.
    runs = [t for k, t in enumerate(asked_templates) if k == 0 or asked_templates[k - 1] != t]
    assert len(runs) == len(set(runs)) and len(old.asked) == len(runs) * (n // templates)
    assert len(runs) < templates
    flags = ["--mode", "non_inferiority", "--sequential", "--task-tol", "0.05", "--seed", "5", "--min-samples", "1",
             "--max-samples", "none", "--budget", str(templates)]  # the default cluster: template
    expected = _cli_report(cli, tmp_path, log, _asked_verdicts(tmp_path, old, "old"),
                           _asked_verdicts(tmp_path, new, "new"), *flags)
    assert seq == expected["sequential"]
    assert _decision_dict(decision) == _cli_decision(expected)


def test_dropin_sequential_refusals(tmp_path: Path) -> None:
    gate = DeploymentGate(progress=False)
    runner: Callable[[Any], str] = lambda text: "APPROVE"
    cases = [{"pipeline_id": "a", "input_text": "x", "expected_verdict": "APPROVE"},
             {"pipeline_id": "a", "input_text": "y", "expected_verdict": "APPROVE"}]
    with pytest.raises(deploy_gate.InputError, match="appears again"):
        gate.evaluate_decision(cases, runner, runner, sequential=True)
    with pytest.raises(ValueError, match="budget"):
        gate.evaluate_decision(cases[:1], runner, runner, budget=3)
    with pytest.raises(ValueError, match="chunk"):
        gate.evaluate_decision(cases[:1], runner, runner, sequential=True, chunk=0)
    # The point rule as before: no sequential object.
    assert gate.evaluate_decision(cases[:1], runner, runner).sequential is None
