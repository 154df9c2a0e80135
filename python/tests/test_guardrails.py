"""Guardrails through the Python package: the report's dict carries ``guardrails``
(``Report.guardrails``), the decision's ``details["guardrails"]`` holds its criteria as plain
dicts, a blocking guardrail decides with the task rule (blocked when exceeded, inconclusive when
not shown), an advisory one never decides, ``prices`` and ``template_regression`` are read, and
a bad guardrail field raises ``PolicyError`` naming it."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any, Dict, List, Optional

import pytest

import deploy_gate
from deploy_gate import PolicyError

from conftest import completion, run_cli, stage, write_lines

N = 60


def _log(tmp_path: Path, n: int = N, templates: int = 3) -> Path:
    lines = []
    for i in range(n):
        pid, tpl = f"pipe-{i:04d}", f"tpl-{i % templates}"
        lines += [stage(pid, "decide", f"in-{i}", template=tpl), completion(pid, "APPROVE", template=tpl)]
    return write_lines(tmp_path / "audit.jsonl", lines)


def _old_latency(i: int) -> float:
    # A spread of latencies, the same every run (no randomness in the test).
    return 100.0 + 40.0 * math.sin(i * 1.7) ** 2 + (i % 7) * 3.0


def _verdicts(
    tmp_path: Path,
    name: str,
    latency: Any,
    usage: Optional[Any] = None,
    verdict: Any = lambda i: "APPROVE",
    metrics: Optional[Any] = None,
    n: int = N,
) -> Path:
    records = []
    for i in range(n):
        r: Dict[str, Any] = {"pipeline_id": f"pipe-{i:04d}", "verdict": verdict(i), "latency_ms": latency(i)}
        if usage is not None:
            r["usage"] = usage(i)
        if metrics is not None:
            r["metrics"] = metrics(i)
        records.append(json.dumps(r))
    return write_lines(tmp_path / name, records)


def _policy(*guardrails: Dict[str, Any], **more: Any) -> Dict[str, Any]:
    return {"min_samples": 1, "max_samples": None, "guardrails": list(guardrails), **more}


def _slower(tmp_path: Path, factor: float) -> Any:
    return (
        _verdicts(tmp_path, "old.jsonl", _old_latency),
        _verdicts(tmp_path, "new.jsonl", lambda i: round(_old_latency(i) * factor, 1)),
    )


def test_a_blocking_latency_guardrail_blocks_naming_it(tmp_path: Path) -> None:
    log = _log(tmp_path)
    old, new = _slower(tmp_path, 1.5)
    report = deploy_gate.evaluate(
        log, old, new, policy=_policy({"metric": "latency_ms", "max_increase": "10%"}), progress=False
    )
    assert report.outcome == "blocked" and not report.approved
    decision = report.decision
    assert not decision.approved and decision.outcome == "blocked"
    assert decision.reason.startswith("blocked: mean latency_ms exceeded its limit; task rule: "), decision.reason
    assert "blocking guardrails: mean latency_ms +50.0%" in decision.reason

    # The report's dict carries it, as its JSON does.
    guardrails = report.guardrails
    assert guardrails is not None
    assert guardrails == json.loads(report.to_json())["guardrails"] == report.data["guardrails"]
    assert (guardrails["blocking"], guardrails["cases"], guardrails["confidence"]) == (1, N, 0.95)
    (c,) = guardrails["criteria"]
    assert (c["metric"], c["statistic"], c["action"], c["limit_kind"]) == ("latency_ms", "mean", "block", "max_increase")
    assert (c["limit"], c["n"], c["excluded"], c["outcome"]) == (0.1, N, 0, "exceeded")
    # The figures against the records: the means of each side, their ratio less one.
    old_mean = sum(_old_latency(i) for i in range(N)) / N
    new_mean = sum(round(_old_latency(i) * 1.5, 1) for i in range(N)) / N
    assert c["old"] == pytest.approx(old_mean, rel=1e-12)
    assert c["new"] == pytest.approx(new_mean, rel=1e-12)
    assert c["change"] == pytest.approx(new_mean / old_mean - 1, rel=1e-12)
    assert c["low"] <= c["change"] <= c["high"] and c["exceeded_low"] > 0.1

    # The drop-in's decision: the criteria as plain dicts in ``details``, the reference's fields as they were.
    assert decision.details["guardrails"] == guardrails["criteria"]
    assert all(type(d) is dict for d in decision.details["guardrails"])
    assert "template_regression" not in decision.details
    assert decision.details["task_regressed"] is False


def test_the_cli_writes_the_same_report(cli: Path, tmp_path: Path) -> None:
    log = _log(tmp_path)
    old, new = _slower(tmp_path, 1.5)
    policy = _policy({"metric": "latency_ms", "statistic": "p90", "max_increase": 0.1, "min_cases": 20})
    report = deploy_gate.evaluate(log, old, new, policy=policy, progress=False)
    (tmp_path / "policy.json").write_text(json.dumps(policy))
    out = tmp_path / "report.json"
    done = run_cli(cli, "evaluate", "--audit", str(log), "--old-verdicts", str(old), "--new-verdicts", str(new),
                   "--policy", str(tmp_path / "policy.json"), "--out", str(out))
    assert done.returncode == 3, done.stderr.decode()
    assert out.read_text(encoding="utf-8") == report.to_json()
    assert report.guardrails is not None and report.guardrails["criteria"][0]["method"] == "bootstrap"


def test_not_shown_is_inconclusive(tmp_path: Path) -> None:
    log = _log(tmp_path)
    old, new = _slower(tmp_path, 1.5)
    # Fewer cases than the guardrail's min_cases: not shown, whatever the change.
    report = deploy_gate.evaluate(
        log, old, new, policy=_policy({"metric": "latency_ms", "max_increase": "10%", "min_cases": N + 1}),
        progress=False,
    )
    assert report.outcome == "inconclusive" and not report.approved
    decision = report.decision
    assert decision.outcome == "inconclusive" and not decision.approved
    assert decision.reason.startswith("inconclusive: "), decision.reason
    assert "latency_ms" in decision.reason.split(";")[0], decision.reason
    assert decision.details["guardrails"][0]["outcome"] == "not_shown"
    assert decision.details["guardrails"][0]["min_cases"] == N + 1
    # Within the limit, shown: approved.
    old, same = _slower(tmp_path, 1.0)
    report = deploy_gate.evaluate(
        log, old, same, policy=_policy({"metric": "latency_ms", "max_increase": "10%"}), progress=False
    )
    assert report.outcome == "approved", report.decision.reason
    assert report.decision.details["guardrails"][0]["outcome"] == "within"


def test_an_advisory_guardrail_never_decides(tmp_path: Path) -> None:
    log = _log(tmp_path)
    old, new = _slower(tmp_path, 1.5)
    for minimum in (None, N + 1):  # exceeded, then not shown: approved both times
        rule: Dict[str, Any] = {"metric": "latency_ms", "max_increase": "10%", "action": "advise"}
        if minimum is not None:
            rule["min_cases"] = minimum
        report = deploy_gate.evaluate(log, old, new, policy=_policy(rule), progress=False)
        assert report.outcome == "approved" and report.approved, report.decision.reason
        (c,) = report.decision.details["guardrails"]
        assert c["action"] == "advise"
        assert c["outcome"] == ("exceeded" if minimum is None else "not_shown")
        assert report.guardrails is not None and report.guardrails["blocking"] == 0
        assert "advisory guardrails: mean latency_ms" in report.decision.reason


def test_tokens_cost_metrics_and_template_regression_from_a_policy_dict(tmp_path: Path) -> None:
    log = _log(tmp_path)

    def usage(extra: int) -> Any:
        return lambda i: {"prompt_tokens": 100 + i, "completion_tokens": 10 + i % 5 + extra}

    old = _verdicts(tmp_path, "old.jsonl", _old_latency, usage(0), metrics=lambda i: {"steps": 3 + i % 2})
    # The new model: 20 completion tokens more, the same steps, and fails every case of one template.
    new = _verdicts(
        tmp_path,
        "new.jsonl",
        _old_latency,
        usage(20),
        verdict=lambda i: "FAIL" if i % 3 == 2 else "APPROVE",
        metrics=lambda i: {"steps": 3 + i % 2},
    )
    price = {"prompt_per_million": 2.0, "completion_per_million": 8.0}
    policy = _policy(
        {"metric": "completion_tokens", "max_difference": 5},
        {"metric": "total_tokens", "max_increase": "50%"},
        {"metric": "cost", "max_increase": "10%", "action": "advise"},
        {"metric": "metrics.steps", "statistic": "p50", "max_difference": 1},
        prices={"old": price, "new": price},
        template_regression={"max_drop": 0.1, "min_cases": 10, "action": "block"},
        task_regression_tol=1.0,
    )
    report = deploy_gate.evaluate(log, old, new, policy=policy, progress=False)
    assert report.data["policy"]["prices"] == {"old": price, "new": price}
    assert report.data["policy"]["template_regression"]["max_drop"] == 0.1
    g = report.guardrails
    assert g is not None
    by = {c["metric"]: c for c in g["criteria"]}
    assert [c["outcome"] for c in g["criteria"]] == ["exceeded", "within", "exceeded", "within"]
    old_completion = sum(10 + i % 5 for i in range(N)) / N
    assert by["completion_tokens"]["old"] == pytest.approx(old_completion)
    assert by["completion_tokens"]["change"] == pytest.approx(20.0)
    old_total = sum(110 + i + i % 5 for i in range(N)) / N
    assert by["total_tokens"]["change"] == pytest.approx(20.0 / old_total)
    old_cost = sum((100 + i) * 2.0 + (10 + i % 5) * 8.0 for i in range(N)) / N / 1e6
    assert by["cost"]["old"] == pytest.approx(old_cost, rel=1e-12)
    assert by["cost"]["action"] == "advise"
    tr = g["template_regression"]
    assert tr["outcome"] == "exceeded"
    assert [t["template_id"] for t in tr["templates"] if t["regressed"]] == ["tpl-2"]
    decision = report.decision
    assert decision.outcome == "blocked"
    assert decision.reason.startswith(
        'blocked: mean completion_tokens exceeded its limit, template_regression ("tpl-2") exceeded its limit; task rule: '
    ), decision.reason
    assert decision.details["template_regression"] == tr
    assert [c["metric"] for c in decision.details["guardrails"]] == [
        "completion_tokens", "total_tokens", "cost", "metrics.steps"
    ]


def test_without_guardrails_nothing_changes(tmp_path: Path) -> None:
    log = _log(tmp_path)
    old, new = _slower(tmp_path, 1.5)
    report = deploy_gate.evaluate(log, old, new, policy={"min_samples": 1, "max_samples": None}, progress=False)
    assert report.guardrails is None and "guardrails" not in report.data
    assert "guardrails" not in report.data["policy"]
    assert "guardrails" not in report.decision.details
    assert report.outcome == "approved"
    # An empty list is no guardrail: the same report, the same policy digest.
    empty = deploy_gate.evaluate(log, old, new, policy={"min_samples": 1, "max_samples": None, "guardrails": []},
                                 progress=False)
    assert empty.to_json() == report.to_json()


@pytest.mark.parametrize(
    "rule, field",
    [
        ({"metric": "latency", "max_increase": "10%"}, "guardrails[0].metric"),
        ({"metric": "latency_ms", "statistic": "p97", "max_increase": "10%"}, "guardrails[0].statistic"),
        ({"metric": "latency_ms", "max_increase": "10%", "action": "warn"}, "guardrails[0].action"),
        ({"metric": "latency_ms"}, "guardrails[0] needs a limit"),
    ],
)
def test_a_bad_guardrail_raises_policy_error_naming_the_field(tmp_path: Path, rule: Dict[str, Any], field: str) -> None:
    log = _log(tmp_path)
    old, new = _slower(tmp_path, 1.0)
    with pytest.raises(PolicyError) as err:
        deploy_gate.evaluate(log, old, new, policy=_policy({"metric": "latency_ms", "max_increase": "5%"}, rule),
                             progress=False)
    message = str(err.value)
    assert field.replace("[0]", "[1]") in message, message


def test_a_bad_metric_on_a_record_names_the_file_and_line(tmp_path: Path) -> None:
    log = _log(tmp_path)
    old = _verdicts(tmp_path, "old.jsonl", _old_latency)
    lines: List[str] = (tmp_path / "old.jsonl").read_text().splitlines()
    record = json.loads(lines[4])
    record["metrics"] = {"steps": "seven"}
    lines[4] = json.dumps(record)
    bad = write_lines(tmp_path / "bad.jsonl", lines)
    with pytest.raises(deploy_gate.VerdictFileError) as err:
        deploy_gate.evaluate(log, old, bad, policy=_policy({"metric": "metrics.steps", "max_difference": 1}),
                             progress=False)
    message = str(err.value)
    assert "bad.jsonl" in message and "line 5" in message and "steps" in message, message
