"""An example user of the package, type-checked by `mypy --strict` (test_typing.py): the
stubs and inline types must describe the API a user writes against."""

from __future__ import annotations

import asyncio
from typing import Any, Dict, List, Optional

import deploy_gate
from deploy_gate import ABComparison, DeploymentGate, GateDecision, Report, TestSet


def runner(input_text: Any) -> str:
    return "APPROVE"


async def async_runner(input_text: Any) -> Optional[str]:
    await asyncio.sleep(0)
    return None


def use_the_drop_in(path: str) -> str:
    gate = DeploymentGate(seed=7, sampling="python")
    cases: List[Dict[str, Any]] = gate.build_test_set(path, min_samples=1, max_samples=50)
    score: Optional[float] = gate.score_model(cases, runner)
    cmp: ABComparison = gate.compare_models(cases, runner, runner, min_delta=0.01)
    decision: GateDecision = gate.evaluate_decision(cases, runner, runner, None, [{"overall_judge_score": 0.5}])
    trajectory: Optional[float] = decision.trajectory_new
    print(score, cmp.recommendation, trajectory)
    return gate.apply_decision(decision, "serving.yaml", "models/new", deploy_fn=lambda **kw: None)


def use_evaluate(path: str) -> bool:
    ts: TestSet = deploy_gate.build_test_set(path, max_samples=None, seed=3)
    report: Report = deploy_gate.evaluate(
        path, runner, async_runner, policy={"min_samples": 1}, max_workers=8, max_concurrency=16, progress=False
    )
    text: str = report.to_json() + report.to_markdown() + report.to_junit() + report.to_html()
    stats: Dict[str, Any] = report.stats
    evidence: Optional[Dict[str, Any]] = report.evidence
    counts: int = report.rests_on + report.not_run
    print(len(ts), ts.to_jsonl()[:10], text[:10], stats.keys(), report.decision.reason, evidence, counts)
    try:
        deploy_gate.evaluate(path, "old.jsonl", {"p1": "PASS"}, policy="policy.json")
    except deploy_gate.VerdictFileError as e:
        print(e.file, e.line)
    return report.approved


def use_sequential(path: str, cases: List[Dict[str, Any]]) -> Optional[int]:
    report: Report = deploy_gate.evaluate(
        path,
        "old.jsonl",
        "new.jsonl",
        policy={"mode": "non_inferiority", "sequential": True, "budget": 500},
        progress=False,
    )
    seq: Optional[Dict[str, Any]] = report.sequential
    decision: GateDecision = DeploymentGate(seed=11).evaluate_decision(
        cases, runner, runner, task_regression_tol=0.05, sequential=True, budget=400, cluster="none", chunk=20
    )
    stopped: Optional[Dict[str, Any]] = decision.sequential
    print(decision.outcome, stopped)
    return None if seq is None else int(seq["used"])


def use_apply(envelope: str, key: str) -> Optional[str]:
    try:
        done: deploy_gate.ApplyResult = deploy_gate.apply(
            envelope,
            trusted_keys=[key],
            model_path="models/new",
            config="serving.yaml",
            target="serving-config",
            ledger="ledger.jsonl",
            max_age=3600,
            stage_models={"decide": "models/new"},
            dry_run=False,
        )
    except deploy_gate.VerificationError as e:
        check: str = e.check
        return check
    except deploy_gate.DeployError as e:
        return str(e)
    approved: bool = done.decision["approved"]
    print(done.result, done.deployed, done.backup, done.unchanged, approved, done.to_json())
    back: deploy_gate.RollbackResult = deploy_gate.rollback("serving.yaml", ledger="ledger.jsonl")
    return back.decision


def use_diff(before: str, after: Report, key: str) -> bool:
    d: Dict[str, Any] = deploy_gate.diff(before, after)
    signed: Dict[str, Any] = deploy_gate.diff(before.encode(), after, trusted_keys=[key], threshold=1)
    flips: List[Dict[str, Any]] = d["cases"]["flips"]
    print(len(flips), signed["after"]["source"])
    changed: bool = d["decision"]["changed"]
    return changed


def use_targets(path: str, cases: List[Dict[str, Any]]) -> Optional[float]:
    old: deploy_gate.Target = deploy_gate.target("old.yaml", cache="cache", order_seed=3)
    new = deploy_gate.target({"kind": "http", "url": "http://127.0.0.1:8000/agent", "verdict": "/verdict"})
    verdict: Any = old("input text")
    records: List[Dict[str, Any]] = new.records(cases)
    gate = DeploymentGate()
    decision: GateDecision = gate.evaluate_decision(cases, old, new)
    report: Report = deploy_gate.evaluate(path, old, new, progress=False)
    try:
        result: deploy_gate.RunResult = deploy_gate.run(
            "cases.jsonl", old="old.yaml", new=new, out_old="o.jsonl", out_new=None, order_seed=1, cache=False
        )
    except deploy_gate.TargetFileError as e:
        print(e.file, e.line)
        return None
    except deploy_gate.RunError as e:
        print(e.exit_code, e.lines)
        return None
    old_path, new_path = result
    print(verdict, len(records), report.approved, old_path, new_path, result.records("new"), decision.reason)
    return gate.score_model(cases, new)


def use_guardrails(path: str) -> List[str]:
    report: Report = deploy_gate.evaluate(
        path,
        "old.jsonl",
        "new.jsonl",
        policy={
            "prices": {"prompt_per_million": 0.15, "completion_per_million": 0.6},
            "guardrails": [
                {"metric": "latency_ms", "statistic": "p95", "max_increase": "10%"},
                {"metric": "cost", "max_difference": 0.001, "action": "advise"},
            ],
            "template_regression": {"max_drop": 0.1, "min_cases": 10, "action": "block"},
        },
        progress=False,
    )
    guardrails: Optional[Dict[str, Any]] = report.guardrails
    criteria: List[Dict[str, Any]] = report.decision.details.get("guardrails", [])
    print(None if guardrails is None else guardrails["adjusted_confidence"])
    return [f"{c['statistic']} {c['metric']}: {c['outcome']}" for c in criteria]
