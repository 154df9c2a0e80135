#!/usr/bin/env python3
"""Times `deploy-gate apply` against `deploy_gate.apply` on the same signed decision: each run
applies it to a fresh config (with a fresh ledger), the set-ups interleaved; prints medians.

    .venv-test/bin/python scripts/bench-apply.py [--runs 21]

Needs the CLI (`cargo build --release --bins`) and the package in the running Python. The
set-ups: the CLI (a process each), `deploy_gate.apply` in this process, and a Python process
that imports deploy_gate and applies (what a deploy script in Python costs end to end).
"""

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import deploy_gate

ROOT = Path(__file__).resolve().parents[1]
CLI = ROOT / "target" / "release" / "deploy-gate"
CONFIG = "# serving config\nbackend: transformers\ndefault_model: /models/agent-7b-v1\nport: 8080\n"
TARGET = "serving-config"


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=21)
    args = ap.parse_args()
    work = Path(tempfile.mkdtemp(prefix="bench-apply-"))
    subprocess.run([str(CLI), "keygen", "--out", str(work / "k")], check=True, capture_output=True)
    model = work / "model"
    model.mkdir()
    (model / "weights.bin").write_bytes(bytes(range(256)) * 4096)  # 1 MiB
    d = ROOT / "tests" / "fixtures" / "parity" / "approved"
    report = deploy_gate.evaluate(d / "audit.jsonl", d / "old_verdicts.jsonl", d / "new_verdicts.jsonl",
                                  policy=json.loads((d / "args.json").read_text())["policy"], progress=False)
    envelope = work / "decision.dsse.json"
    envelope.write_text(deploy_gate.sign(report, key=work / "k.key.pem", model="agent", model_path=model,
                                         target=TARGET))
    public = work / "k.pub.pem"
    n = 0

    def fresh() -> Path:
        nonlocal n
        n += 1
        run = work / f"run{n}"
        run.mkdir()
        (run / "config.yaml").write_text(CONFIG)
        return run

    child = (
        "import sys, deploy_gate; deploy_gate.apply(sys.argv[1], trusted_keys=[sys.argv[2]], "
        "model_path=sys.argv[3], config=sys.argv[4], target=sys.argv[5])"
    )
    times = {"cli": [], "python in-process": [], "python process": []}
    for _ in range(args.runs):
        for what in times:
            run = fresh()
            config = run / "config.yaml"
            t0 = time.perf_counter()
            if what == "cli":
                subprocess.run([str(CLI), "apply", str(envelope), "--trusted-key", str(public), "--model-path",
                                str(model), "--config", str(config), "--target", TARGET], check=True,
                               capture_output=True)
            elif what == "python in-process":
                deploy_gate.apply(envelope, trusted_keys=[public], model_path=model, config=config, target=TARGET)
            else:
                subprocess.run([sys.executable, "-c", child, str(envelope), str(public), str(model), str(config),
                                TARGET], check=True, capture_output=True)
            times[what].append(time.perf_counter() - t0)
    for what, ts in times.items():
        print(f"{what:18} median {statistics.median(ts) * 1000:7.2f} ms  (min {min(ts) * 1000:.2f}, "
              f"max {max(ts) * 1000:.2f}, {len(ts)} runs)")


if __name__ == "__main__":
    main()
