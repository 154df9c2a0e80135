"""Shared helpers of the Python package's tests: the project's paths, the CLI binary the test
command builds, and audit logs written from lines."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any, Iterable, List

import pytest

ROOT = Path(__file__).resolve().parents[2]
PARITY = ROOT / "tests" / "fixtures" / "parity"
FIXTURES = Path(__file__).resolve().parent / "fixtures"
# The CLI binary the package's results are compared with: DEPLOY_GATE_CLI (the test command names
# the one its cargo-test step built: the same source, built apart from the wheel), else the
# release build.
CLI = Path(os.environ.get("DEPLOY_GATE_CLI") or ROOT / "target" / "release" / "deploy-gate")


def reference_policy(d: Path) -> Any:
    """A parity fixture's policy under the reference's rule for missing verdicts: each counts as
    a failure whatever their number (`max_missing: 1`; deploy-gate's default, 5%, fails closed)."""
    policy = json.loads((d / "args.json").read_text())["policy"]
    policy["max_missing"] = 1
    return policy


def parity_dirs() -> List[Path]:
    dirs = sorted(p for p in PARITY.iterdir() if (p / "args.json").exists())
    assert len(dirs) >= 8, dirs
    return dirs


@pytest.fixture
def cli() -> Path:
    """The CLI binary (DEPLOY_GATE_CLI, else `cargo build --release --bins`); the test command
    requires it (DEPLOY_GATE_REQUIRE_CLI=1), elsewhere a test needing it is skipped."""
    if not CLI.exists():
        if os.environ.get("DEPLOY_GATE_REQUIRE_CLI") == "1":
            pytest.fail(f"{CLI} is missing: run cargo build --release --bins, or set DEPLOY_GATE_CLI")
        pytest.skip(f"{CLI} is missing")
    return CLI


def run_cli(cli: Path, *args: str) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run([str(cli), *args], capture_output=True, check=False)


def write_lines(path: Path, lines: Iterable[str]) -> Path:
    path.write_text("".join(line + "\n" for line in lines), encoding="utf-8")
    return path


def stage(pid: Any, stage_id: str, input: Any, output: Any = "ok", template: str = "t/a") -> str:
    return json.dumps(
        {"pipeline_id": pid, "template_id": template, "stage_id": stage_id, "stage_type": "llm",
         "input": input, "output": output, "reward": 0.5}
    )


def completion(pid: Any, verdict: Any, template: str = "t/a", is_complete: bool = True, error: Any = None) -> str:
    return json.dumps(
        {"pipeline_id": pid, "template_id": template, "verdict": verdict, "is_complete": is_complete,
         "error": error, "step_count": 1, "episode_reward": 0.5}
    )


def big_log(path: Path, n: int, verdicts: Iterable[str] = ("APPROVE", "PASS", "COMPLETE")) -> Path:
    """`n` successful pipelines, one stage each (input `in-<i>`), expected verdicts cycling."""
    vs = list(verdicts)
    with path.open("w", encoding="utf-8") as f:
        for i in range(n):
            pid = f"pipe-{i:07d}"
            f.write(stage(pid, "decide", f"in-{i}", {"verdict": vs[i % len(vs)]}) + "\n")
            f.write(completion(pid, vs[i % len(vs)]) + "\n")
    return path
