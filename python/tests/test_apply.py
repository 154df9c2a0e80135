"""apply, rollback and apply_decision's own deploy from Python, tested as the CLI's are: real
processes applying at once, kill -9 at every crash point and at random moments, a full disk
(a file size limit), planted symlinks; and the same outcomes as the CLI's `apply`."""

from __future__ import annotations

import json
import os
import random
import resource
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path
from typing import Any, Dict, List, Optional, Tuple

import pytest

import deploy_gate
from conftest import PARITY, run_cli, reference_policy

CONFIG = "# serving config\nbackend: transformers\ndefault_model: /models/agent-7b-v1\nport: 8080\n"
TARGET = "serving-config"
STEPS = ["locked", "intent-logged", "backup-written", "config-written", "backup-renamed", "config-renamed",
         "outcome-logged"]
TEMP_MARK = ".deploy-gate-tmp-"


class Signed:
    """Keys, a model, and two signed decisions (approved and blocked) for TARGET."""

    def __init__(self, cli: Path, root: Path) -> None:
        root.mkdir(parents=True, exist_ok=True)
        done = run_cli(cli, "keygen", "--out", str(root / "k"))
        assert done.returncode == 0, done.stderr.decode()
        self.key = root / "k.key.pem"
        self.public = root / "k.pub.pem"
        self.model = root / "agent-7b-v2"
        (self.model / "weights").mkdir(parents=True)
        (self.model / "config.json").write_text('{"layers": 32}')
        (self.model / "weights" / "part-0.bin").write_bytes(b"\x01\x02\x03")
        self.envelope = root / "approved.dsse.json"
        self.envelope.write_text(self._sign("approved"))
        self.blocked = root / "blocked.dsse.json"
        self.blocked.write_text(self._sign("both-regressed"))
        v = deploy_gate.verify(self.envelope, trusted_keys=[self.public], model_path=self.model, target=TARGET)
        assert v["approved"] is True
        self.payload = v["payload_sha256"]

    def _sign(self, case: str) -> str:
        d = PARITY / case
        report = deploy_gate.evaluate(d / "audit.jsonl", d / "old_verdicts.jsonl", d / "new_verdicts.jsonl",
                                      policy=reference_policy(d), progress=False)
        return deploy_gate.sign(report, key=self.key, model="agent-7b", model_path=self.model, target=TARGET)

    def kwargs(self, config: Path, ledger: Optional[Path]) -> Dict[str, Any]:
        return {"trusted_keys": [str(self.public)], "model_path": str(self.model), "config": str(config),
                "target": TARGET, "ledger": None if ledger is None else str(ledger)}


@pytest.fixture(scope="module")
def signed(tmp_path_factory: pytest.TempPathFactory) -> Signed:
    from conftest import CLI
    if not CLI.exists():
        if os.environ.get("DEPLOY_GATE_REQUIRE_CLI") == "1":
            pytest.fail(f"{CLI} is missing: run cargo build --release --bins, or set DEPLOY_GATE_CLI")
        pytest.skip(f"{CLI} is missing")
    return Signed(CLI, tmp_path_factory.mktemp("signed"))


def fresh(tmp_path: Path, name: str = "run") -> Tuple[Path, Path, Path]:
    d = tmp_path / name
    d.mkdir()
    config = d / "config.yaml"
    config.write_text(CONFIG)
    return d, config, d / "ledger.jsonl"


def new_config(signed: Signed) -> str:
    return CONFIG.replace("/models/agent-7b-v1", f'"{signed.model}"').replace(
        "backend: transformers", 'backend: "transformers"')


def backup_of(config: Path) -> Path:
    return config.with_name(config.stem + ".yaml.backup")


def entries(ledger: Path) -> Tuple[List[Dict[str, Any]], bool]:
    """The ledger's complete lines as JSON, and whether a torn last line follows."""
    if not ledger.exists():
        return [], False
    text = ledger.read_text()
    torn = bool(text) and not text.endswith("\n")
    complete = text[: text.rfind("\n") + 1] if torn else text
    return [json.loads(line) for line in complete.splitlines() if line.strip()], torn


def results(ledger: Path, payload: str) -> List[str]:
    return [e["result"] for e in entries(ledger)[0] if e["payload_sha256"] == payload]


def temps_in(d: Path) -> List[str]:
    return sorted(p.name for p in d.iterdir() if TEMP_MARK in p.name)


def assert_truthful(signed: Signed, config: Path, ledger: Path, context: str) -> None:
    """What must hold at any moment, even right after a kill -9."""
    now = config.read_text()
    assert now in (CONFIG, new_config(signed)), f"{context}: the config is the old or the new bytes"
    if backup_of(config).exists():
        assert backup_of(config).read_text() == CONFIG, f"{context}: the backup is the pre-deploy config"
    rs = results(ledger, signed.payload)
    assert rs.count("deployed") <= 1, f"{context}: {rs}"
    if rs and rs[-1] == "deployed":
        assert now == new_config(signed), f"{context}: deployed only when the config was replaced"
    if now == new_config(signed):
        assert rs and rs[-1] in ("deployed", "intent"), f"{context}: a replaced config is recorded: {rs}"


def assert_deployed_once(signed: Signed, config: Path, ledger: Path) -> None:
    assert config.read_text() == new_config(signed)
    assert backup_of(config).read_text() == CONFIG
    es, torn = entries(ledger)
    assert not torn
    rs = results(ledger, signed.payload)
    assert rs.count("deployed") == 1 and rs[-1] == "deployed", rs
    assert temps_in(config.parent) == []


# A child process: imports deploy_gate, says "ready", waits for a line on stdin, then runs CODE
# and prints its outcome as one JSON line ({"result": …} or {"error": class, "check": …}).
CHILD = textwrap.dedent("""
    import json, logging, sys
    import deploy_gate
    from deploy_gate import _deploy
    logging.basicConfig(level=logging.INFO, stream=sys.stderr)
    args = json.loads(sys.argv[1])
    _deploy._FAIL_AT = args.pop("_fail_at", None)
    mode = args.pop("_mode")
    print("ready", flush=True)
    sys.stdin.readline()
    try:
        if mode == "apply":
            envelope = args.pop("envelope")
            out = {"result": deploy_gate.apply(envelope, **args).result}
        else:
            gate = deploy_gate.DeploymentGate()
            decision = deploy_gate.GateDecision(approved=True, reason="ok")
            r = gate.apply_decision(decision, args["config"], args["trained"])
            out = {"result": r}
    except deploy_gate.VerificationError as e:
        out = {"error": "VerificationError", "check": e.check, "message": e.message}
    except deploy_gate.DeployError as e:
        out = {"error": "DeployError", "message": str(e)}
    print(json.dumps(out), flush=True)
""")


def child(args: Dict[str, Any], preexec: Any = None) -> "subprocess.Popen[str]":
    p = subprocess.Popen([sys.executable, "-c", CHILD, json.dumps(args)], stdin=subprocess.PIPE,
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, preexec_fn=preexec)
    assert p.stdout is not None
    line = p.stdout.readline()
    assert line.strip() == "ready", line + (p.stderr.read() if p.stderr else "")
    return p


def go(p: "subprocess.Popen[str]") -> None:
    assert p.stdin is not None
    p.stdin.write("go\n")
    p.stdin.flush()


def finish(p: "subprocess.Popen[str]", timeout: float = 120) -> Tuple[Optional[Dict[str, Any]], str]:
    out, err = p.communicate(timeout=timeout)
    last = [line for line in out.splitlines() if line.strip()]
    return (json.loads(last[-1]) if last else None), err


def apply_args(signed: Signed, config: Path, ledger: Optional[Path], **extra: Any) -> Dict[str, Any]:
    args = {"_mode": "apply", "envelope": str(signed.envelope), **signed.kwargs(config, ledger)}
    args.update(extra)
    return args


# ---------------------------------------------------------------- outcomes, as the CLI's


def test_apply_deploys_once_then_refuses_the_replay_like_the_cli(signed: Signed, tmp_path: Path,
                                                                 caplog: pytest.LogCaptureFixture) -> None:
    _, config, ledger = fresh(tmp_path, "py")
    caplog.set_level("INFO", logger="deploy_gate")
    done = deploy_gate.apply(signed.envelope, **signed.kwargs(config, ledger))
    assert done.result == "deployed" and done.deployed and not done.unchanged
    assert done.decision["approved"] is True and done.decision["payload_sha256"] == signed.payload
    assert done.config == str(config.resolve()) and done.backup == str(backup_of(config))
    assert done.ledger == str(ledger) and done.model_path == str(signed.model)
    assert_deployed_once(signed, config, ledger)
    assert "DEPLOYED agent-7b" in caplog.text
    # The CLI's output for the same apply in another directory: the same fields and values.
    from conftest import CLI
    d, cli_config, cli_ledger = fresh(tmp_path, "cli")
    out = run_cli(CLI, "apply", str(signed.envelope), "--trusted-key", str(signed.public), "--model-path",
                  str(signed.model), "--config", str(cli_config), "--target", TARGET, "--ledger", str(cli_ledger))
    assert out.returncode == 0, out.stderr.decode()
    cli_json = json.loads(out.stdout)
    assert sorted(cli_json) == sorted(done.output) == ["backup", "config", "decision", "ledger", "result"]
    assert cli_json["decision"] == done.decision and cli_json["result"] == done.result
    assert json.loads(done.to_json()) == done.output
    # Again: refused as a replay, naming the check, saying the model IS deployed.
    with pytest.raises(deploy_gate.VerificationError) as e:
        deploy_gate.apply(signed.envelope, **signed.kwargs(config, ledger))
    assert e.value.check == "replayed" and "IS deployed" in e.value.message
    out = run_cli(CLI, "apply", str(signed.envelope), "--trusted-key", str(signed.public), "--model-path",
                  str(signed.model), "--config", str(config), "--target", TARGET, "--ledger", str(ledger))
    assert out.returncode == 2 and json.loads(out.stdout)["check"] == "replayed"
    # Envelope and key given in memory, as sign() returns them, with another ledger: the config
    # holds this deploy already, so nothing is written (the backup kept): `unchanged`.
    again = deploy_gate.apply(signed.envelope.read_text(), **{**signed.kwargs(config, tmp_path / "other.jsonl"),
                                                               "trusted_keys": [signed.public.read_text()]})
    assert again.result == "deployed" and again.unchanged and again.backup is None
    assert sorted(again.output) == ["decision", "ledger", "result", "unchanged"]
    assert_deployed_once(signed, config, ledger)
    # Rollback restores the backup and records the decision as rolled back.
    back = deploy_gate.rollback(config, ledger=ledger)
    assert back.result == "rolled_back" and back.recorded_in == "ledger" and back.decision == signed.payload
    assert back.backup == str(backup_of(config)) and not back.legacy_backup
    assert config.read_text() == CONFIG
    assert results(ledger, signed.payload)[-1] == "rolled_back"
    with pytest.raises(deploy_gate.VerificationError, match="rolled back"):
        deploy_gate.apply(signed.envelope, **signed.kwargs(config, ledger))


def test_kept_old_dry_run_and_failed_checks(signed: Signed, tmp_path: Path) -> None:
    _, config, ledger = fresh(tmp_path)
    marker = tmp_path / "rolled-back"
    kept = deploy_gate.apply(signed.blocked, **signed.kwargs(config, ledger),
                             rollback_cmd=["sh", "-c", f'echo "$DEPLOY_GATE_DECISION" > {marker}'])
    assert kept.result == "kept_old" and not kept.deployed and kept.decision["approved"] is False
    assert marker.read_text().strip() == "FAILED"
    assert config.read_text() == CONFIG and not backup_of(config).exists()
    dry = deploy_gate.apply(signed.envelope, **signed.kwargs(config, ledger), dry_run=True)
    assert dry.result == "dry_run" and dry.decision["approved"] is True
    assert config.read_text() == CONFIG and results(ledger, signed.payload) == []
    # Each failed check is named, nothing written.
    other = tmp_path / "other"
    other.mkdir()
    (other / "w.bin").write_bytes(b"\x09")
    with pytest.raises(deploy_gate.VerificationError) as e:
        deploy_gate.apply(signed.envelope, **{**signed.kwargs(config, ledger), "model_path": str(other)})
    assert e.value.check == "subject_digest"
    with pytest.raises(deploy_gate.VerificationError) as e:
        deploy_gate.apply(signed.envelope, **{**signed.kwargs(config, ledger), "target": "elsewhere"})
    assert e.value.check == "target"
    with pytest.raises(deploy_gate.VerificationError) as e:
        deploy_gate.apply(signed.envelope, **signed.kwargs(config, ledger), threshold=2)
    assert e.value.check == "threshold"
    with pytest.raises(deploy_gate.VerificationError) as e:
        deploy_gate.apply(signed.envelope, **signed.kwargs(config, ledger), max_age=-10)
    assert e.value.check == "too_old"
    assert config.read_text() == CONFIG
    # A ledger in a missing directory: DeployError naming it, nothing deployed (the CLI's exit 1).
    with pytest.raises(deploy_gate.DeployError) as d:
        deploy_gate.apply(signed.envelope, **signed.kwargs(config, tmp_path / "nope" / "ledger.jsonl"))
    assert "nope/ledger.jsonl" in str(d.value) and d.value.file == str(config)
    # A failing deploy command: NOT deployed, recorded as such.
    with pytest.raises(deploy_gate.DeployError, match="NOT deployed"):
        deploy_gate.apply(signed.envelope, **signed.kwargs(config, ledger), deploy_cmd=["false"])
    assert results(ledger, signed.payload)[-2:] == ["intent", "not_deployed"]
    with pytest.raises(deploy_gate.DeployError, match="no backup to restore"):
        deploy_gate.rollback(config, ledger=ledger)
    with pytest.raises(ValueError):
        deploy_gate.apply(signed.envelope, **signed.kwargs(config, ledger), backend="torch")


def test_the_gil_is_released_while_apply_works(signed: Signed, tmp_path: Path) -> None:
    import threading
    _, config, ledger = fresh(tmp_path)
    ticks = 0
    stop = threading.Event()

    def count() -> None:
        nonlocal ticks
        while not stop.is_set():
            ticks += 1
            time.sleep(0.0005)

    # A deploy command that takes 0.5 s: Python threads keep running meanwhile.
    t = threading.Thread(target=count)
    t.start()
    try:
        done = deploy_gate.apply(signed.envelope, **signed.kwargs(config, ledger), deploy_cmd=["sleep", "0.5"])
    finally:
        stop.set()
        t.join()
    assert done.result == "deployed" and ticks > 50, ticks


# ---------------------------------------------------------------- processes at once


def test_python_processes_applying_at_once_deploy_exactly_once(signed: Signed, tmp_path: Path) -> None:
    for round in range(3):
        _, config, ledger = fresh(tmp_path, f"r{round}")
        procs = [child(apply_args(signed, config, ledger)) for _ in range(4)]
        for p in procs:
            go(p)
        outs = [finish(p) for p in procs]
        got = [o for o, _ in outs]
        deployed = [o for o in got if o and o.get("result") == "deployed"]
        refused = [o for o in got if o and o.get("check") == "replayed"]
        assert len(deployed) == 1 and len(refused) == 3, outs
        assert_deployed_once(signed, config, ledger)


def test_apply_decision_in_processes_at_once_is_serialised(signed: Signed, tmp_path: Path) -> None:
    for round in range(3):
        d, config, _ = fresh(tmp_path, f"r{round}")
        procs = [child({"_mode": "apply_decision", "config": str(config), "trained": str(signed.model)})
                 for _ in range(4)]
        for p in procs:
            go(p)
        outs = [finish(p) for p in procs]
        assert all(o == {"result": "deployed"} for o, _ in outs), outs
        assert config.read_text() == new_config(signed)
        assert backup_of(config).read_text() == CONFIG, "the backup is the config from before, never overwritten"
        assert temps_in(d) == []


# ---------------------------------------------------------------- crashes


def test_every_crash_point_leaves_a_truthful_state_that_the_next_apply_resolves(
        signed: Signed, tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level("INFO", logger="deploy_gate")
    for step in STEPS:
        d, config, ledger = fresh(tmp_path, step)
        p = child(apply_args(signed, config, ledger, _fail_at=step))
        go(p)
        out, err = finish(p)
        assert p.returncode == -signal.SIGABRT and out is None, f"{step}: {err}"
        assert_truthful(signed, config, ledger, step)
        replaced = step in ("config-renamed", "outcome-logged")
        assert (config.read_text() == new_config(signed)) == replaced, step
        want_temps = {"backup-written": 1, "backup-renamed": 1, "config-written": 2}.get(step, 0)
        assert len(temps_in(d)) == want_temps, f"{step}: {temps_in(d)}"
        caplog.clear()
        if replaced:
            with pytest.raises(deploy_gate.VerificationError) as e:
                deploy_gate.apply(signed.envelope, **signed.kwargs(config, ledger))
            assert e.value.check == "replayed" and "IS deployed" in e.value.message
            if step == "config-renamed":
                assert "DID replace" in caplog.text, caplog.text
        else:
            assert deploy_gate.apply(signed.envelope, **signed.kwargs(config, ledger)).result == "deployed"
            if step != "locked":
                assert "recorded as not deployed" in caplog.text, f"{step}: {caplog.text}"
        if want_temps:
            assert "removed" in caplog.text
        assert_deployed_once(signed, config, ledger)


def _timed_full_apply(signed: Signed, tmp_path: Path) -> float:
    _, config, ledger = fresh(tmp_path, "timing")
    p = child(apply_args(signed, config, ledger))
    t0 = time.monotonic()
    go(p)
    out, err = finish(p)
    assert out == {"result": "deployed"}, err
    return time.monotonic() - t0


def test_kill_9_at_random_moments_of_apply(signed: Signed, tmp_path: Path) -> None:
    rng = random.Random(int(os.environ.get("DEPLOY_GATE_TEST_SEED", "0")) or None)
    window = _timed_full_apply(signed, tmp_path) * 1.2
    before = after = 0
    for i in range(24):
        d, config, ledger = fresh(tmp_path, f"k{i}")
        p = child(apply_args(signed, config, ledger))
        go(p)
        time.sleep(rng.uniform(0, window))
        p.send_signal(signal.SIGKILL)
        p.communicate()
        assert_truthful(signed, config, ledger, f"kill {i}")
        if config.read_text() == new_config(signed):
            after += 1
            with pytest.raises(deploy_gate.VerificationError, match="IS deployed"):
                deploy_gate.apply(signed.envelope, **signed.kwargs(config, ledger))
        else:
            before += 1
            assert deploy_gate.apply(signed.envelope, **signed.kwargs(config, ledger)).result == "deployed"
        assert_deployed_once(signed, config, ledger)
    assert before + after == 24


def test_kill_9_during_apply_decision(signed: Signed, tmp_path: Path) -> None:
    trained = str(signed.model)
    for step in ["locked", "backup-written", "config-written", "backup-renamed", "config-renamed"]:
        d, config, _ = fresh(tmp_path, step)
        p = child({"_mode": "apply_decision", "config": str(config), "trained": trained, "_fail_at": step})
        go(p)
        _, err = finish(p)
        assert p.returncode == -signal.SIGABRT, f"{step}: {err}"
        assert config.read_text() == (new_config(signed) if step == "config-renamed" else CONFIG), step
        if backup_of(config).exists():
            assert backup_of(config).read_text() == CONFIG, step
        gate = deploy_gate.DeploymentGate()
        assert gate.apply_decision(deploy_gate.GateDecision(approved=True, reason="ok"), str(config), trained) \
            == "deployed"
        assert config.read_text() == new_config(signed) and backup_of(config).read_text() == CONFIG, step
        assert temps_in(d) == [], f"{step}: the next deploy removes the crashed one's temporary files"
    rng = random.Random(int(os.environ.get("DEPLOY_GATE_TEST_SEED", "0")) or None)
    for i in range(16):
        d, config, _ = fresh(tmp_path, f"k{i}")
        p = child({"_mode": "apply_decision", "config": str(config), "trained": trained})
        go(p)
        time.sleep(rng.uniform(0, 0.05))
        p.send_signal(signal.SIGKILL)
        p.communicate()
        assert config.read_text() in (CONFIG, new_config(signed)), i
        if backup_of(config).exists():
            assert backup_of(config).read_text() == CONFIG, i
        deploy_gate.DeploymentGate().apply_decision(deploy_gate.GateDecision(approved=True, reason="ok"),
                                                    str(config), trained)
        assert config.read_text() == new_config(signed) and backup_of(config).read_text() == CONFIG
        assert temps_in(d) == []


# ---------------------------------------------------------------- a full disk, planted symlinks


def _fsize_limit(limit: int) -> Any:
    def pre() -> None:
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
    return pre


def _older_entries(n: int) -> str:
    return "".join('{"payload_sha256":"%064x","result":"deployed","applied_at":"2026-11-01T00:00:00Z",'
                   '"model":"older"}\n' % i for i in range(n))


def test_a_full_disk_deploys_nothing_or_says_the_model_is_deployed(signed: Signed, tmp_path: Path) -> None:
    # A config larger than the file size limit: its temporary files cannot be written (the
    # ledger and the config's record, smaller, can). NOT deployed, the old config and no
    # temporary file left, the error naming the file, both steps recorded.
    d = tmp_path / "full"
    d.mkdir()
    config = d / "config.yaml"
    big = "# " + "padding " * 2500 + "\n" + CONFIG
    config.write_text(big)
    ledger = d / "ledger.jsonl"
    p = child(apply_args(signed, config, ledger), preexec=_fsize_limit(len(big) // 2))
    go(p)
    out, err = finish(p)
    assert out is not None and out["error"] == "DeployError", (out, err)
    assert "NOT deployed" in out["message"] and ".config.yaml.backup.deploy-gate-tmp-" in out["message"], out
    assert config.read_text() == big and temps_in(d) == [] and not backup_of(config).exists()
    assert results(ledger, signed.payload) == ["intent", "not_deployed"]
    # Room again: the next apply deploys.
    assert deploy_gate.apply(signed.envelope, **signed.kwargs(config, ledger)).result == "deployed"
    assert backup_of(config).read_text() == big

    # The disk fills up after the intent: the deployed entry is cut; the model IS deployed.
    d, config, ledger = fresh(tmp_path, "unrecorded")
    prefix = _older_entries(100)
    ledger.write_text(prefix)
    p = child(apply_args(signed, config, ledger, _fail_at="intent-logged"))
    go(p)
    finish(p)
    intent_len = ledger.stat().st_size - len(prefix)
    ledger.write_text(prefix)
    config.write_text(CONFIG)
    for f in d.iterdir():
        if f.name.startswith(".config.yaml.deploy-gate.lock"):
            f.unlink()
    p = child(apply_args(signed, config, ledger), preexec=_fsize_limit(len(prefix) + intent_len + 20))
    go(p)
    out, err = finish(p)
    assert out == {"result": "deployed_unrecorded"}, (out, err)
    assert "IS deployed" in err and str(ledger) in err, err
    assert config.read_text() == new_config(signed)
    es, torn = entries(ledger)
    assert not torn and results(ledger, signed.payload) == ["intent"]
    with pytest.raises(deploy_gate.VerificationError, match="IS deployed"):
        deploy_gate.apply(signed.envelope, **signed.kwargs(config, ledger))
    assert_deployed_once(signed, config, ledger)


def test_planted_symlinks_are_never_written_through(signed: Signed, tmp_path: Path) -> None:
    d, config, ledger = fresh(tmp_path)
    victim = tmp_path / "victim"
    victim.write_text("VICTIM")
    # At the backup's name: replaced, not followed.
    backup_of(config).symlink_to(victim)
    # At the names earlier versions used for temporary files (`.NAME.deploy-gate-PID`).
    for pid in range(os.getpid(), os.getpid() + 2000):
        for name in ("config.yaml", "config.yaml.backup"):
            (d / f".{name}.deploy-gate-{pid}").symlink_to(victim)
    assert deploy_gate.apply(signed.envelope, **signed.kwargs(config, ledger)).result == "deployed"
    assert victim.read_text() == "VICTIM"
    assert not backup_of(config).is_symlink() and backup_of(config).read_text() == CONFIG
    assert config.read_text() == new_config(signed)
    # At the ledger's path: refused, nothing deployed, the victim untouched.
    d2, config2, ledger2 = fresh(tmp_path, "ledger-link")
    ledger2.symlink_to(victim)
    with pytest.raises(deploy_gate.DeployError, match="symbolic link"):
        deploy_gate.apply(signed.envelope, **signed.kwargs(config2, ledger2))
    assert victim.read_text() == "VICTIM" and config2.read_text() == CONFIG
    # apply_decision's deploy: the same for the backup's name.
    d3, config3, _ = fresh(tmp_path, "drop-in")
    backup_of(config3).symlink_to(victim)
    deploy_gate.DeploymentGate().apply_decision(deploy_gate.GateDecision(approved=True, reason="ok"),
                                                str(config3), str(signed.model))
    assert victim.read_text() == "VICTIM" and backup_of(config3).read_text() == CONFIG
    # A symlinked config: the file it points to is replaced, the link kept.
    d4 = tmp_path / "linked"
    (d4 / "data").mkdir(parents=True)
    real = d4 / "data" / "config.yaml"
    real.write_text(CONFIG)
    link = d4 / "config.yaml"
    link.symlink_to(real)
    assert deploy_gate.apply(signed.envelope, **signed.kwargs(link, d4 / "ledger.jsonl")).result == "deployed"
    assert link.is_symlink() and real.read_text() == new_config(signed)
