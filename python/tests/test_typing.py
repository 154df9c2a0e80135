"""The stubs (`_core.pyi`, `py.typed`) ship in the wheel and check an example under
`mypy --strict`."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path

import deploy_gate


def test_stubs_and_marker_are_installed() -> None:
    root = Path(deploy_gate.__file__).parent
    assert (root / "py.typed").exists()
    assert (root / "_core.pyi").exists()
    spec = importlib.util.find_spec("deploy_gate._core")
    assert spec is not None and spec.origin is not None and ".abi3." in Path(spec.origin).name


def test_example_passes_mypy_strict(tmp_path: Path) -> None:
    example = Path(__file__).with_name("typing_example.py")
    done = subprocess.run(
        [sys.executable, "-m", "mypy", "--strict", "--no-incremental", "--cache-dir", str(tmp_path), str(example)],
        capture_output=True,
        text=True,
        cwd=tmp_path,
    )
    assert done.returncode == 0, done.stdout + done.stderr


def test_example_with_a_type_error_fails_mypy(tmp_path: Path) -> None:
    bad = tmp_path / "bad.py"
    bad.write_text("from deploy_gate import DeploymentGate\nx: int = DeploymentGate().score_model([], len)\n")
    done = subprocess.run(
        [sys.executable, "-m", "mypy", "--strict", "--no-incremental", "--cache-dir", str(tmp_path / "c"), str(bad)],
        capture_output=True,
        text=True,
        cwd=tmp_path,
    )
    assert done.returncode == 1 and "incompatible types" in done.stdout.lower(), done.stdout
