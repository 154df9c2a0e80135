"""The drop-in against the reference's own results (recorded outside the project, see
fixtures/README.md), on generated logs, runners and trajectory results."""

from __future__ import annotations

import json
import random
import types
from dataclasses import asdict
from pathlib import Path
from typing import Any, Callable, Dict, List

import pytest

from conftest import FIXTURES, write_lines
from deploy_gate import ABComparison, DeploymentGate, GateDecision

DATA = json.loads((FIXTURES / "reference_results.json").read_text())
SCENARIOS = DATA["scenarios"]


def key_of(x: Any) -> str:
    return json.dumps(x, sort_keys=True)


def runner(spec: Dict[str, Any]) -> Callable[[Any], Any]:
    def run(input_text: Any) -> Any:
        v = spec["table"].get(key_of(input_text), spec["default"])
        if isinstance(v, dict) and "raise" in v:
            raise RuntimeError(v["raise"])
        if isinstance(v, dict) and "none" in v:
            return None
        return v

    return run


def _log(tmp_path: Path, s: Dict[str, Any]) -> str:
    return str(write_lines(tmp_path / "audit.jsonl", s["audit_lines"]))


def _seed(s: Dict[str, Any]) -> int:
    return 99 if s["config"]["seed"] is None else int(s["config"]["seed"])


@pytest.mark.parametrize("s", SCENARIOS, ids=lambda s: s["name"])
def test_python_sampling_gives_the_references_test_sets(s: Dict[str, Any], tmp_path: Path) -> None:
    c = s["config"]
    gate = DeploymentGate(_seed(s), sampling="python")
    path = _log(tmp_path, s)
    assert gate.build_test_set(path, c["min_samples"], c["max_samples"]) == s["reference"]["build_test_set"]
    # The generator lives in the gate, as the reference's: the second call draws another sample.
    assert gate.build_test_set(path, c["min_samples"], c["max_samples"]) == s["reference"]["build_test_set_again"]
    assert DeploymentGate(0, sampling="python").build_test_set(path, 0, 10**9) == s["reference"]["full_test_set"]


@pytest.mark.parametrize("s", SCENARIOS, ids=lambda s: s["name"])
def test_default_sampling_keeps_the_same_candidates(s: Dict[str, Any], tmp_path: Path) -> None:
    c = s["config"]
    path = _log(tmp_path, s)
    full = s["reference"]["full_test_set"]
    ts = DeploymentGate(_seed(s)).build_test_set(path, c["min_samples"], c["max_samples"])
    assert len(ts) == len(s["reference"]["build_test_set"])
    if len(full) <= c["max_samples"]:
        assert ts == s["reference"]["build_test_set"]  # no sample: the same list, in audit order
    else:
        ids = [t["pipeline_id"] for t in full]
        assert [t["pipeline_id"] for t in ts] == [i for i in ids if i in {t["pipeline_id"] for t in ts}]
        assert all(t in full for t in ts)
        # Reproducible: another gate with the same seed gives the same sample.
        assert DeploymentGate(_seed(s)).build_test_set(path, c["min_samples"], c["max_samples"]) == ts


@pytest.mark.parametrize("s", SCENARIOS, ids=lambda s: s["name"])
def test_scores_comparisons_and_decisions_are_the_references(s: Dict[str, Any], tmp_path: Path) -> None:
    ref = s["reference"]
    gate = DeploymentGate(_seed(s), sampling="python", on_insufficient="approve")
    sets = {"sampled": ref["build_test_set"], "full": ref["full_test_set"]}
    for key, want in ref["score_model"].items():
        which, name = key.split("/")
        assert gate.score_model(sets[which], runner(s["runners"][name])) == want, key
    for cmp in ref["compare_models"]:
        got = gate.compare_models(sets["full"], runner(s["runners"][cmp["old"]]), runner(s["runners"][cmp["new"]]),
                                  cmp["min_delta"])
        assert isinstance(got, ABComparison)
        assert asdict(got) == cmp["result"], cmp
    for ev in ref["evaluate_decision"]:
        for as_objects in (True, False):
            def traj(name: Any) -> Any:
                if name is None:
                    return None
                rows = s["trajectories"][name]
                return [types.SimpleNamespace(**r) for r in rows] if as_objects else [dict(r) for r in rows]

            got = gate.evaluate_decision(sets[ev["test_set"]], runner(s["runners"][ev["old"]]),
                                         runner(s["runners"][ev["new"]]), traj(ev["old_traj"]), traj(ev["new_traj"]),
                                         ev["task_tol"], ev["traj_tol"])
            assert isinstance(got, GateDecision)
            assert asdict(got) == ev["result"], ev


def test_hand_made_test_sets_and_the_empty_one() -> None:
    hand = DATA["hand"]
    gate = DeploymentGate(0)
    for name, want in hand["reference"]["score_model"].items():
        assert gate.score_model(hand["test_set"], runner(hand["runners"][name])) == want
    got = gate.compare_models(hand["test_set"], runner(hand["runners"]["bad"]), runner(hand["runners"]["good"]))
    assert asdict(got) == hand["reference"]["compare"]
    good = runner(hand["runners"]["good"])
    assert gate.score_model([], good) is hand["reference"]["empty_score"] is None
    assert asdict(gate.compare_models([], good, good)) == hand["reference"]["empty_compare"]
    # The deliberate difference: an empty test set is blocked unless on_insufficient="approve".
    blocked = gate.evaluate_decision([], good, good)
    assert (blocked.approved, blocked.reason) == (False, "blocked: insufficient test cases (empty test set)")
    want = hand["reference"]["empty_decision"]
    assert asdict(gate.evaluate_decision([], good, good, on_insufficient="approve")) == want
    assert asdict(DeploymentGate(0, on_insufficient="approve").evaluate_decision([], good, good)) == want


def test_python_sampling_is_cpythons_on_many_seeds_sizes_and_caps(tmp_path: Path) -> None:
    # CPython's sample picks its algorithm (a pool or a set of drawn indices) from n and k;
    # sizes either side of its switch, caps from 1 to n - 1, and seeds small, large and negative.
    lines: List[str] = []
    n_max = 700
    for i in range(n_max):
        pid = f"id-{i:04d}"
        lines.append(json.dumps({"pipeline_id": pid, "stage_id": "s", "input": f"x{i}"}))
        lines.append(json.dumps({"pipeline_id": pid, "verdict": "PASS", "is_complete": True, "error": None}))
    rng = random.Random(5)
    checked = 0
    for n in (2, 5, 21, 22, 50, 100, 300, 700):
        path = write_lines(tmp_path / f"a{n}.jsonl", lines[: 2 * n])
        all_cases = DeploymentGate(0).build_test_set(str(path), 0, n)
        assert len(all_cases) == n
        for k in sorted(k for k in {1, 2, n // 7 or 1, n // 2, n - 1, rng.randrange(1, n)} if k < n):
            for seed in (0, 1, 42, 2**32 + 1, 2**64 + 12345, -7, rng.randrange(2**40)):
                got = DeploymentGate(seed, sampling="python").build_test_set(str(path), 0, k)
                assert got == random.Random(seed).sample(all_cases, k), (n, k, seed)
                checked += 1
    assert checked > 200
