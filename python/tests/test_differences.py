"""The three deliberate differences a keyword restores, against the reference's own recorded
behaviour (fixtures/reference_differences.json, see fixtures/README.md): a None trajectory
metric (none_metric="error"), a runner's None against an empty expected verdict
(none_verdict="empty"), and seed=None (none_seed="os")."""

from __future__ import annotations

import json
import logging
import types
from pathlib import Path
from typing import Any, Dict, List

import pytest

import deploy_gate
from conftest import FIXTURES
from deploy_gate import DeploymentGate

REF: Dict[str, Any] = json.loads((FIXTURES / "reference_differences.json").read_text())


def _objects(rows: List[Dict[str, Any]]) -> List[Any]:
    return [types.SimpleNamespace(**r) for r in rows]


@pytest.mark.parametrize("row", REF["none_metric"], ids=lambda r: r["metric"])
def test_a_none_metric_counts_zero_or_raises_type_error_as_the_reference(row: Dict[str, Any]) -> None:
    assert row["raises"] == "TypeError" and row["evaluate_decision_raises"] == "TypeError"
    # deploy-gate's default: None counts 0 (the reference's mean with the metric 0).
    gate = DeploymentGate()
    assert gate._mean_trajectory_score(_objects(row["results"])) == row["zero_mean"]
    assert gate._mean_trajectory_score(row["results"]) == row["zero_mean"]  # dicts alike
    # none_metric="error": the reference's TypeError, from the mean and from evaluate_decision.
    strict = DeploymentGate(none_metric="error")
    with pytest.raises(TypeError, match=row["metric"]):
        strict._mean_trajectory_score(_objects(row["results"]))
    with pytest.raises(TypeError):
        strict.evaluate_decision([{"input_text": "a", "expected_verdict": "PASS"}], lambda t: "PASS",
                                 lambda t: "PASS", _objects(row["results"]), _objects(row["results"][1:]))
    # Without a None, both keywords give the reference's mean.
    assert strict._mean_trajectory_score(_objects(row["absent_results"])) == row["absent_mean"]


def test_a_runners_none_is_a_miss_or_the_references_empty_verdict() -> None:
    ref = REF["none_verdict"]
    test_set, runners, scores = ref["test_set"], ref["runners"], ref["scores"]
    reference_way = DeploymentGate(none_verdict="empty")
    default = DeploymentGate()
    for name, table in runners.items():
        fn = (lambda t, table=table: table[t])
        assert reference_way.score_model(test_set, fn) == scores[name], name
        # The default differs exactly where a None meets an empty expected verdict.
        misses = sum(1 for c in test_set if table[c["input_text"]] is None and not c.get("expected_verdict"))
        assert default.score_model(test_set, fn) == round(scores[name] - misses / len(test_set), 4), name
    cmp = reference_way.compare_models(test_set, lambda t: runners["always_none"][t], lambda t: runners["mixed"][t])
    assert cmp.__dict__ == ref["compare_always_none_vs_mixed"]


def test_seed_none_is_seed_0_or_seeded_from_the_os(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    ref = REF["none_seed"]
    log = tmp_path / "audit.jsonl"
    log.write_text("\n".join(ref["audit_lines"]) + "\n")
    lo, hi = ref["min_samples"], ref["max_samples"]

    def ids(gate: DeploymentGate) -> List[str]:
        return [c["pipeline_id"] for c in gate.build_test_set(str(log), lo, hi)]

    # The reference: another sample for each unseeded gate; the same for a seeded one.
    assert ref["unseeded_distinct"] > 1
    assert ref["seed_0_samples"][0] == ref["seed_0_samples"][1]
    # deploy-gate's default: seed=None is seed 0, reproducible.
    assert ids(DeploymentGate()) == ids(DeploymentGate(None)) == ids(DeploymentGate(0))
    # none_seed="os": seeded from the OS, another sample for each gate (as the reference),
    # and the seed drawn is kept and logged, so the test set can be built again.
    caplog.set_level(logging.INFO, logger="deploy_gate")
    gates = [DeploymentGate(None, none_seed="os") for _ in range(6)]
    samples = [ids(g) for g in gates]
    assert len({tuple(s) for s in samples}) > 1
    for g, s in zip(gates, samples):
        assert isinstance(g.seed, int) and ids(DeploymentGate(g.seed)) == s
        assert f"seed={g.seed}" in caplog.text
    assert all(len(s) == hi for s in samples)
    # With sampling="python", seed=None is the reference's own random.Random(None).
    py = [ids(DeploymentGate(None, sampling="python")) for _ in range(6)]
    assert len({tuple(s) for s in py}) > 1
    with pytest.raises(ValueError):
        DeploymentGate(none_seed="random")
    with pytest.raises(ValueError):
        DeploymentGate(none_metric="ignore")
    with pytest.raises(ValueError):
        DeploymentGate(none_verdict="none")
