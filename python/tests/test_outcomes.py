"""The decision's outcome, repeated runs and clustered intervals through the Python package:
``Report.outcome`` and ``GateDecision.outcome`` (a property: the reference's fields and
``dataclasses.asdict`` are unchanged), the CLI's bytes and exit code 4 for an inconclusive
decision, every verdict of a case under ``repeats: mean``, and a report made before these existed
evaluated again under its own policy, byte for byte."""

from __future__ import annotations

import json
from dataclasses import asdict, fields
from pathlib import Path

import deploy_gate
from conftest import ROOT, run_cli
from deploy_gate import DeploymentGate, GateDecision

COMPAT = ROOT / "tests" / "fixtures" / "compat"
INPUTS = COMPAT / "inputs"
NI = {"mode": "non_inferiority", "task_tol": 0.05}


def _evaluate(policy: object, new: str = "new_equal.jsonl") -> "deploy_gate.Report":
    return deploy_gate.evaluate(
        audit=INPUTS / "audit.jsonl", old=INPUTS / "old_verdicts.jsonl", new=INPUTS / new, policy=policy, progress=False
    )


def test_an_inconclusive_report_is_the_clis_and_says_so(cli: Path, tmp_path: Path) -> None:
    report = _evaluate(NI)
    assert (report.outcome, report.approved) == ("inconclusive", False)
    assert report.decision.outcome == "inconclusive" and not report.decision.approved
    needed = report.stats["task"]["sample_size"]["cases_needed"]
    assert f"a fresh fixed-size evaluation would need about {needed} cases" in report.decision.reason
    assert report.decision.reason.endswith("sequential: true adds cases safely")
    assert report.stats["task"]["clustered"]["clusters"] == 16
    assert "outcome='inconclusive'" in repr(report)
    out = tmp_path / "report.json"
    done = run_cli(cli, "evaluate", "--audit", str(INPUTS / "audit.jsonl"), "--old-verdicts", str(INPUTS / "old_verdicts.jsonl"),
                   "--new-verdicts", str(INPUTS / "new_equal.jsonl"), "--mode", "non_inferiority", "--task-tol", "0.05",
                   "--out", str(out))
    assert done.returncode == 4, done.stderr.decode()
    assert report.to_json().encode() == out.read_bytes()
    blocked = _evaluate(NI, new="new_worse.jsonl")
    assert (blocked.outcome, blocked.decision.outcome) == ("blocked", "blocked")


def test_the_drop_ins_decision_keeps_the_references_fields() -> None:
    names = [f.name for f in fields(GateDecision)]
    assert "outcome" not in names
    assert names[:2] == ["approved", "reason"]
    d = GateDecision(approved=True, reason="ok")
    assert d.outcome == "approved"
    assert GateDecision(approved=False, reason="no").outcome == "blocked"
    gate = DeploymentGate()
    cases = [{"pipeline_id": f"p{i}", "input_text": str(i), "expected_verdict": "PASS"} for i in range(20)]
    decision = gate.evaluate_decision(cases, lambda _: "PASS", lambda _: "FAIL")
    assert decision.outcome == "blocked"
    assert set(asdict(decision)) == {"approved", "reason", "task_delta", "trajectory_delta", "task_old", "task_new",
                                     "trajectory_old", "trajectory_new", "num_cases", "details"}


def test_repeats_mean_counts_every_run() -> None:
    report = _evaluate({"repeats": "mean", "cluster": "none"})
    runs = [(c["new_runs"], c["new_passes"]) for c in report.cases]
    assert sum(r for r, _ in runs) == report.data["verdicts"]["new"]["records"]
    assert report.stats["task"]["mcnemar"] is None
    assert report.stats["task"]["clustered"] is None
    assert report.data["policy"]["repeats"] == "mean"


def test_an_old_report_evaluated_again_under_its_policy_is_the_same_bytes() -> None:
    for name in ["ni-policy-file", "format-map", "point-worse"]:
        old = COMPAT / "scenarios" / name / "report.json"
        args = (COMPAT / "scenarios" / name / "args").read_text().splitlines()
        report = _evaluate(old, new=args[0])
        assert report.to_json().encode() == old.read_bytes(), name
        assert "outcome" not in report.data["decision"]
        assert report.outcome == ("approved" if report.approved else "blocked")
        policy = json.loads(deploy_gate._core.resolve_policy(policy_file=str(old)))
        assert "cluster" not in policy and "repeats" not in policy
