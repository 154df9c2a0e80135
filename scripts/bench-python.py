#!/usr/bin/env python3
"""Times the Python package: scoring N cases (default 10,000) with a trivial runner on 1 and 8
threads and with an async runner (deploy_gate.evaluate, median of --runs runs), and, with
--audit FILE, build_test_set over that log. Run it with the Python the package is installed in:
  .venv-test/bin/python scripts/bench-python.py [--cases N] [--runs R] [--audit FILE]"""

import argparse
import asyncio
import json
import statistics
import tempfile
import time
from pathlib import Path

import deploy_gate


def log(path: Path, n: int) -> Path:
    with path.open("w") as f:
        for i in range(n):
            pid = f"pipe-{i:07d}"
            f.write(json.dumps({"pipeline_id": pid, "stage_id": "s", "stage_type": "llm", "input": f"in-{i}"}) + "\n")
            f.write(json.dumps({"pipeline_id": pid, "verdict": "PASS", "is_complete": True, "error": None}) + "\n")
    return path


def trivial(text):
    return "PASS"


async def trivial_async(text):
    return "PASS"


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--cases", type=int, default=10_000)
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--audit")
    a = ap.parse_args()
    if a.audit:
        t = time.perf_counter()
        ts = deploy_gate.build_test_set(a.audit)
        print(f"build_test_set {a.audit}: {len(ts)} cases of {ts.candidates} in {time.perf_counter() - t:.3f} s")
        return
    with tempfile.TemporaryDirectory() as d:
        audit = log(Path(d) / "audit.jsonl", a.cases)
        policy = {"max_samples": None}
        verdicts = {f"pipe-{i:07d}": "PASS" for i in range(a.cases)}
        setups = [
            ("verdict mapping (no runner)", dict(old=verdicts, new=verdicts)),
            ("sync runner, 1 thread", dict(old=trivial, new=verdicts, max_workers=1)),
            ("sync runner, 8 threads", dict(old=trivial, new=verdicts, max_workers=8)),
            ("async runner", dict(old=trivial_async, new=verdicts)),
        ]
        times = {name: [] for name, _ in setups}
        for _ in range(a.runs):
            for name, kw in setups:  # interleaved
                t = time.perf_counter()
                r = deploy_gate.evaluate(audit, policy=policy, progress=False, **kw)
                times[name].append(time.perf_counter() - t)
                assert r.data["test_set"]["num_cases"] == a.cases
        for name, ts in times.items():
            print(f"{a.cases} cases, {name}: median {statistics.median(ts):.3f} s (runs: {', '.join(f'{x:.3f}' for x in ts)})")


if __name__ == "__main__":
    main()
