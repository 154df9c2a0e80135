#!/usr/bin/env python3
"""Runs the reference `DeploymentGate` on a parity fixture folder and prints its expected.json.

    python3 scripts/reference-run.py PATH/TO/deployment_gate.py tests/fixtures/parity/NAME > expected.json

The folder holds audit.jsonl, old_verdicts.jsonl, new_verdicts.jsonl (JSONL records
{pipeline_id, verdict} or {pipeline_id, error}), optionally old_trajectories.jsonl and
new_trajectories.jsonl, and args.json (the policy). The reference module imports
`agenttune.decide.state.PASS_VERDICTS`; it is given the fixture's pass verdicts instead.
A model runner returns the verdict the file records for the case's pipeline (as Python's json
read it), and raises when the file has none or records an error.
"""

import importlib.util
import json
import logging
import sys
import types
from pathlib import Path


def load_gate(module_path, pass_verdicts):
    for name in ("agenttune", "agenttune.decide"):
        sys.modules.setdefault(name, types.ModuleType(name))
    state = types.ModuleType("agenttune.decide.state")
    state.PASS_VERDICTS = set(pass_verdicts)
    sys.modules["agenttune.decide.state"] = state
    spec = importlib.util.spec_from_file_location("deployment_gate", module_path)
    module = importlib.util.module_from_spec(spec)
    sys.modules["deployment_gate"] = module
    spec.loader.exec_module(module)
    return module.DeploymentGate


def read_jsonl(path):
    with open(path, encoding="utf-8") as f:
        return [json.loads(line) for line in f if line.strip()]


def runner(test_set, path):
    records = {}
    for r in read_jsonl(path):
        records[str(r["pipeline_id"])] = r
    cases = iter(test_set)

    def run(_input_text):
        case = next(cases)
        r = records.get(str(case["pipeline_id"]))
        if r is None or r.get("error") is not None:
            raise RuntimeError("no verdict")
        return r.get("verdict")

    return run


def trajectories(path):
    if not path.exists():
        return None
    return [types.SimpleNamespace(**r) for r in read_jsonl(path)]


def main():
    logging.disable(logging.CRITICAL)
    module_path, folder = sys.argv[1], Path(sys.argv[2])
    policy = json.loads((folder / "args.json").read_text())["policy"]
    gate_class = load_gate(module_path, policy["pass_verdicts"])
    gate = gate_class(seed=0)
    max_samples = policy["max_samples"]
    test_set = gate.build_test_set(
        str(folder / "audit.jsonl"),
        min_samples=policy["min_samples"],
        max_samples=max_samples if max_samples is not None else 10**12,
    )
    old_t = trajectories(folder / "old_trajectories.jsonl")
    new_t = trajectories(folder / "new_trajectories.jsonl")
    task_old = gate.score_model(test_set, runner(test_set, folder / "old_verdicts.jsonl"))
    task_new = gate.score_model(test_set, runner(test_set, folder / "new_verdicts.jsonl"))
    comparison = gate.compare_models(
        test_set,
        runner(test_set, folder / "old_verdicts.jsonl"),
        runner(test_set, folder / "new_verdicts.jsonl"),
    )
    decision = gate.evaluate_decision(
        test_set,
        runner(test_set, folder / "old_verdicts.jsonl"),
        runner(test_set, folder / "new_verdicts.jsonl"),
        old_t,
        new_t,
        task_regression_tol=policy["task_regression_tol"],
        trajectory_regression_tol=policy["trajectory_regression_tol"],
    )
    out = {
        "test_set": test_set,
        "task_old": task_old,
        "task_new": task_new,
        "comparison": vars(comparison),
        "decision": vars(decision),
    }
    json.dump(out, sys.stdout, indent=1)
    sys.stdout.write("\n")


if __name__ == "__main__":
    main()
