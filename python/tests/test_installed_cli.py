"""The `deploy-gate` command `pip install ./python` installs (the core crate's CLI, run in the
extension by `deploy_gate._cli`), and `python -m deploy_gate`: on the venv's PATH, the same
subcommands, outputs and exit codes as the native binary, SIGINT and SIGTERM during `run` as the
binary handles them, and the embedding process's own handlers back after a run in-process. The
names of the run concept (`endpoint`, with `target` kept as its earlier name) are checked here
too. The test command also runs the CLI's own Rust tests against this command
(`DEPLOY_GATE_TEST_CLI`, scripts/test.sh)."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import sysconfig
import time
from pathlib import Path
from typing import Dict, List, Optional

import pytest

import deploy_gate
from conftest import CLI, PARITY, reference_policy
from deploy_gate import _core

SCRIPTS = Path(sysconfig.get_path("scripts"))
INSTALLED = SCRIPTS / "deploy-gate"


@pytest.fixture
def installed() -> Path:
    """The console script of this interpreter's environment; the test command installs the
    package with pip, so it must be there (DEPLOY_GATE_REQUIRE_CLI=1)."""
    if not INSTALLED.exists():
        if os.environ.get("DEPLOY_GATE_REQUIRE_CLI") == "1":
            pytest.fail(f"{INSTALLED} is missing: pip install ./python installs it")
        pytest.skip(f"{INSTALLED} is missing (the package is not pip-installed here)")
    return INSTALLED


def _env_with_scripts_first() -> Dict[str, str]:
    env = dict(os.environ)
    env["PATH"] = os.pathsep.join([str(SCRIPTS), env.get("PATH", "")])
    return env


def _run(cmd: List[str], **kw: object) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(cmd, capture_output=True, check=False, timeout=120, **kw)  # type: ignore[call-overload,no-any-return]


def test_endpoint_is_the_name_and_target_the_earlier_one() -> None:
    assert deploy_gate.target is deploy_gate.endpoint
    assert deploy_gate.Target is deploy_gate.Endpoint
    assert deploy_gate.TargetFileError is deploy_gate.EndpointFileError
    with pytest.raises(deploy_gate.TargetFileError) as e:
        deploy_gate.endpoint({"kind": "openai-chat"})
    assert str(e.value).startswith("endpoint (dict)"), e.value
    assert e.value.role == "target"  # its value before the rename, kept: code compares it


def test_the_command_is_on_the_venvs_path_without_rust(installed: Path) -> None:
    found = shutil.which("deploy-gate", path=_env_with_scripts_first()["PATH"])
    assert found is not None and Path(found) == installed
    # A Python entry point, not a copy of a native binary.
    assert installed.read_bytes().startswith(b"#!"), installed.read_bytes()[:40]
    out = _run([str(installed), "--version"])
    assert out.returncode == 0, out.stderr
    assert out.stdout.decode() == f"deploy-gate {deploy_gate.__version__}\n"
    out = _run([sys.executable, "-m", "deploy_gate", "--version"])
    assert (out.returncode, out.stdout.decode()) == (0, f"deploy-gate {deploy_gate.__version__}\n"), out.stderr


def test_the_command_imports_the_extension_alone() -> None:
    # The command starts as the binary does: the API's modules (and asyncio, json, dataclasses
    # with them) are imported when a program uses them, not by `deploy-gate --version`.
    code = (
        "import sys, deploy_gate._cli\n"
        "print(sorted(m for m in sys.modules if m.startswith('deploy_gate')))\n"
        "print('asyncio' in sys.modules)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.split("\n")
    assert out[0] == str(["deploy_gate", "deploy_gate._cli", "deploy_gate._core", "deploy_gate.errors"]), out
    assert out[1] == "False", out
    # Every public name is still there, as the objects of the modules it comes from.
    from deploy_gate import _endpoint, _gate

    assert deploy_gate.DeploymentGate is _gate.DeploymentGate
    assert deploy_gate.Target is deploy_gate.Endpoint is _endpoint.Endpoint
    assert set(deploy_gate.__all__) <= set(dir(deploy_gate))
    for name in deploy_gate.__all__:  # each name resolves, to an object of that name
        value = getattr(deploy_gate, name)
        names = (name, "Endpoint", "endpoint", "EndpointFileError")  # the earlier names' objects
        assert getattr(value, "__name__", name) in names, (name, value)
    with pytest.raises(AttributeError, match="no attribute 'nope'"):
        getattr(deploy_gate, "nope")


def test_usage_errors_and_help_exit_as_the_binary(installed: Path) -> None:
    out = _run([str(installed), "evaluate", "--no-such-flag"])
    assert out.returncode == 1, out
    assert b"--no-such-flag" in out.stderr and b"Usage: deploy-gate evaluate" in out.stderr, out.stderr
    help_ = _run([str(installed), "--help"])
    assert help_.returncode == 0 and b"Usage: deploy-gate <COMMAND>" in help_.stdout, help_
    for sub in ("run", "sign", "verify", "apply", "rollback", "diff", "evaluate", "test-set", "policy", "keygen", "digest"):
        assert f"\n  {sub} ".encode() in help_.stdout, sub
    if CLI.exists():
        native = _run([str(CLI), "evaluate", "--no-such-flag"])
        assert (native.returncode, native.stdout, native.stderr) == (out.returncode, out.stdout, out.stderr)


def _evaluate_args(d: Path, policy: Path) -> List[str]:
    args = ["evaluate", "--audit", str(d / "audit.jsonl"), "--old-verdicts", str(d / "old_verdicts.jsonl"),
            "--new-verdicts", str(d / "new_verdicts.jsonl"), "--policy", str(policy)]
    if (d / "old_trajectories.jsonl").exists():
        args += ["--old-trajectories", str(d / "old_trajectories.jsonl"),
                 "--new-trajectories", str(d / "new_trajectories.jsonl")]
    return args


@pytest.mark.parametrize("fixture", ["approved", "both-regressed"])
def test_evaluate_sign_verify_as_the_binary(installed: Path, tmp_path: Path, fixture: str) -> None:
    """The deploy host's path with the package alone: evaluate, keygen, sign, verify (and another
    model's files refused), each exit code and output the native binary's when it is built."""
    d = PARITY / fixture
    policy = tmp_path / "policy.json"
    policy.write_text(json.dumps(reference_policy(d)))
    report = tmp_path / "report.json"
    ev = _run([str(installed), *_evaluate_args(d, policy), "--out", str(report)])
    want_code = 0 if fixture == "approved" else 3
    assert ev.returncode == want_code, ev.stderr
    if CLI.exists():
        native_report = tmp_path / "native.json"
        native = _run([str(CLI), *_evaluate_args(d, policy), "--out", str(native_report)])
        assert native.returncode == ev.returncode
        assert native_report.read_bytes() == report.read_bytes()
    assert _run([str(installed), "keygen", "--out", str(tmp_path / "reviewer")]).returncode == 0
    model = tmp_path / "model"
    model.mkdir()
    (model / "weights.bin").write_bytes(b"\x01\x02")
    config = tmp_path / "config.yaml"
    config.write_text("default_model: /models/a\nport: 8080\n")
    envelope = tmp_path / "decision.dsse.json"
    sign = _run([str(installed), "sign", str(report), "--key", str(tmp_path / "reviewer.key.pem"), "--model", "m",
                 "--model-path", str(model), "--target", str(config), "--out", str(envelope)])
    assert sign.returncode == 0, sign.stderr
    verify = [str(installed), "verify", str(envelope), "--trusted-key", str(tmp_path / "reviewer.pub.pem"),
              "--model-path", str(model), "--target", str(config)]
    ok = _run(verify)
    assert ok.returncode == 0, ok.stderr
    (model / "weights.bin").write_bytes(b"\x01\x03")  # not the model the decision was signed for
    bad = _run(verify)
    assert bad.returncode not in (0, None), bad
    if CLI.exists():
        native = _run([str(CLI), *verify[1:]])
        assert (native.returncode, native.stdout, native.stderr) == (bad.returncode, bad.stdout, bad.stderr)


def _slow_run(tmp_path: Path, n: int) -> List[str]:
    cases = tmp_path / "cases.jsonl"
    cases.write_text("".join(json.dumps({"pipeline_id": i, "template_id": "t", "input_text": f"x{i}",
                                         "expected_verdict": "PASS"}) + "\n" for i in range(1, n + 1)))
    worker = tmp_path / "worker.py"
    worker.write_text(
        "import json, sys, time\n"
        "for line in sys.stdin:\n"
        "    json.loads(line)\n"
        "    time.sleep(0.05)\n"
        "    print(json.dumps({'verdict': 'PASS'}), flush=True)\n"
    )
    return ["run", "--test-set", str(cases), "--out", str(tmp_path / "v.jsonl"), "--jobs", "2",
            "--", sys.executable, str(worker)]


def _records(path: Path) -> List[Dict[str, object]]:
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text().splitlines()]


@pytest.mark.parametrize("sig, code", [(signal.SIGINT, 130), (signal.SIGTERM, 143)])
def test_a_signal_during_run_stops_it_as_the_binarys_and_it_resumes(
    installed: Path, tmp_path: Path, sig: int, code: int
) -> None:
    n = 200
    args = _slow_run(tmp_path, n)
    out = tmp_path / "v.jsonl"
    child = subprocess.Popen([str(installed), *args], stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE)
    until = time.monotonic() + 60
    while time.monotonic() < until and len(_records(out)) < 3:
        time.sleep(0.01)
    child.send_signal(sig)
    stdout, stderr = child.communicate(timeout=60)
    assert child.returncode == code, stderr.decode()
    assert f"interrupted (signal {int(sig)})".encode() in stderr, stderr.decode()
    assert b"Traceback" not in stderr, stderr.decode()
    kept = _records(out)  # every line a whole record
    assert 3 <= len(kept) < n, len(kept)
    done = _run([str(installed), *args])
    assert done.returncode == 0, done.stderr
    records = _records(out)
    assert sorted(int(str(r["pipeline_id"])) for r in records) == list(range(1, n + 1))
    assert all(r.get("verdict") == "PASS" for r in records)


def test_a_run_in_process_gives_back_the_callers_signal_handlers(tmp_path: Path) -> None:
    """`_core.cli_main` is the console script's call: the run's handlers are the command's while
    it runs and the caller's afterwards, in the operating system's table (not only Python's):
    a SIGTERM after the run reaches the caller's Python handler, and Ctrl-C raises
    KeyboardInterrupt again."""
    got: List[int] = []
    previous = signal.signal(signal.SIGTERM, lambda signum, frame: got.append(signum))
    try:
        before = {s: signal.getsignal(s) for s in (signal.SIGINT, signal.SIGTERM)}
        code = _core.cli_main(["deploy-gate", *_slow_run(tmp_path, 4)])
        assert code == 0
        assert {s: signal.getsignal(s) for s in before} == before
        os.kill(os.getpid(), signal.SIGTERM)
        until = time.monotonic() + 5
        while not got and time.monotonic() < until:
            time.sleep(0.01)
        assert got == [signal.SIGTERM]
    finally:
        signal.signal(signal.SIGTERM, previous)
    with pytest.raises(KeyboardInterrupt):
        os.kill(os.getpid(), signal.SIGINT)
        time.sleep(1)


def test_an_ignored_sigint_stays_ignored_as_the_binary_leaves_it(installed: Path, tmp_path: Path) -> None:
    """A command started with SIGINT ignored (a background job of a script) is not ended by a
    Ctrl-C meant for the foreground one; during `run`, it stops as the binary's does."""
    args = _slow_run(tmp_path, 200)
    child = subprocess.Popen([str(installed), *args], stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_IGN))
    out = tmp_path / "v.jsonl"
    until = time.monotonic() + 60
    while time.monotonic() < until and len(_records(out)) < 3:
        time.sleep(0.01)
    child.send_signal(signal.SIGINT)
    _, stderr = child.communicate(timeout=60)
    assert child.returncode == 130, stderr.decode()
    # Outside `run` the command leaves an ignored SIGINT ignored (and Python's own handler
    # becomes the default action, as the binary has).
    probe = (
        "import signal, sys\n"
        "signal.signal(signal.SIGINT, signal.SIG_IGN)\n"
        "from deploy_gate import _cli\n"
        "try:\n"
        "    _cli.main(['--version'])\n"
        "except SystemExit:\n"
        "    pass\n"
        "print(signal.getsignal(signal.SIGINT) is signal.SIG_IGN)\n"
        "signal.signal(signal.SIGINT, signal.default_int_handler)\n"
        "try:\n"
        "    _cli.main(['--version'])\n"
        "except SystemExit:\n"
        "    pass\n"
        "print(signal.getsignal(signal.SIGINT) is signal.SIG_DFL)\n"
    )
    quick = subprocess.run([sys.executable, "-c", probe], capture_output=True, timeout=60)
    assert quick.returncode == 0, quick.stderr
    lines = quick.stdout.decode().splitlines()
    assert lines.count(f"deploy-gate {deploy_gate.__version__}") == 2, lines
    assert [line for line in lines if line in ("True", "False")] == ["True", "True"], lines


def test_stdout_is_whole_when_the_command_returns(installed: Path, tmp_path: Path) -> None:
    d = PARITY / "approved"
    policy = tmp_path / "policy.json"
    policy.write_text(json.dumps(reference_policy(d)))
    out = _run([str(installed), *_evaluate_args(d, policy)])
    report: Optional[Dict[str, object]] = json.loads(out.stdout)
    assert report is not None and "decision" in report, out.stdout[:200]
