"""``apply(mlflow=…)`` and ``verify(mlflow=…)`` against a real MLflow tracking server started by
``tests/servers/mlflow.sh`` (its venv, .venv-mlflow, made by ``bash tests/servers/mlflow.sh
venv``); the versions are registered through MLflow's own client, which runs in that venv, not
in this package's: deploy_gate itself needs no mlflow package. Without that venv the tests are
skipped, unless DEPLOY_GATE_REQUIRE_MLFLOW=1."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from pathlib import Path
from typing import Any, Dict, Iterator, Tuple

import pytest

import deploy_gate
from conftest import PARITY, ROOT, reference_policy

VENV = Path(os.environ.get("MLFLOW_VENV", ROOT / ".venv-mlflow"))
if not VENV.is_absolute():
    VENV = ROOT / VENV


class Registry:
    def __init__(self, url: str) -> None:
        self.url = url
        self.proc = subprocess.Popen(
            [str(VENV / "bin" / "python"), str(ROOT / "tests" / "servers" / "mlflow_registrar.py")],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
        )

    def call(self, **cmd: Any) -> Dict[str, Any]:
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.proc.stdin.write(json.dumps({"url": self.url, **cmd}) + "\n")
        self.proc.stdin.flush()
        out: Dict[str, Any] = json.loads(self.proc.stdout.readline())
        assert "error" not in out, out
        return out


@pytest.fixture(scope="module")
def registry(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Registry]:
    if not (VENV / "bin" / "python").exists():
        if os.environ.get("DEPLOY_GATE_REQUIRE_MLFLOW") == "1":
            pytest.fail(f"no MLflow venv at {VENV}: bash tests/servers/mlflow.sh venv")
        pytest.skip("no MLflow venv (bash tests/servers/mlflow.sh venv)")
    d = tmp_path_factory.mktemp("mlflow")
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    script = str(ROOT / "tests" / "servers" / "mlflow.sh")
    env = {**os.environ, "MLFLOW_VENV": str(VENV)}
    started = subprocess.run(["bash", script, "start", str(d), str(port), "plain", str(os.getpid())],
                             capture_output=True, text=True, env=env, check=False)
    assert started.returncode == 0, started.stderr
    sys.stderr.write(started.stdout)
    reg = Registry(f"http://127.0.0.1:{port}")
    try:
        yield reg
    finally:
        reg.proc.terminate()
        subprocess.run(["bash", script, "stop", str(d)], check=False, env=env)


def model(root: Path, seed: str) -> Path:
    m = root / f"model-{seed}"
    (m / "weights").mkdir(parents=True)
    (m / "config.json").write_text(json.dumps({"seed": seed}))
    (m / "weights" / "part-0.bin").write_bytes(seed.encode() * 100)
    return m


def signed(tmp_path: Path, files: Path, target: str, case: str = "approved") -> Tuple[str, Path]:
    key = tmp_path / "k"
    if not (tmp_path / "k.key.pem").exists():
        _keygen(key)
    d = PARITY / case
    report = deploy_gate.evaluate(d / "audit.jsonl", d / "old_verdicts.jsonl", d / "new_verdicts.jsonl",
                                  policy=reference_policy(d), progress=False)
    envelope = deploy_gate.sign(report, key=tmp_path / "k.key.pem", model="agent", model_path=files, target=target)
    return envelope, tmp_path / "k.pub.pem"


def _keygen(key: Path) -> None:
    """An Ed25519 key pair made by OpenSSL (deploy-gate reads its PEM files as its own)."""
    priv, pub = Path(f"{key}.key.pem"), Path(f"{key}.pub.pem")
    for argv in (["openssl", "genpkey", "-algorithm", "ed25519", "-out", str(priv)],
                 ["openssl", "pkey", "-in", str(priv), "-pubout", "-out", str(pub)]):
        done = subprocess.run(argv, capture_output=True, check=False)
        assert done.returncode == 0, done.stderr


def test_apply_and_verify_through_the_registry_without_mlflow_installed(registry: Registry, tmp_path: Path) -> None:
    import importlib.util
    assert importlib.util.find_spec("mlflow") is None, "this venv must not need mlflow"
    m1, m2 = model(tmp_path, "one"), model(tmp_path, "two")
    v1 = registry.call(op="register", name="py", dir=str(m1))["version"]
    v2 = registry.call(op="register", name="py", dir=str(m2))["version"]
    envelope, public = signed(tmp_path, m1, "models:/py@champion")
    ledger = tmp_path / "ledger.jsonl"
    common = {"trusted_keys": [public], "mlflow": registry.url, "registered_model": "py", "alias": "champion",
              "ledger": ledger}

    dry = deploy_gate.apply(envelope, dry_run=True, **common)
    assert (dry.result, dry.output["version"]) == ("dry_run", v1)
    done = deploy_gate.apply(envelope, **common)
    assert (done.result, done.output["version"], done.deployed) == ("deployed", v1, True)
    checked = deploy_gate.verify(trusted_keys=[public], mlflow=registry.url, model_uri="models:/py@champion")
    assert (checked["ok"], checked["version"]) == (True, v1)
    assert checked["decision_sha256"] == done.decision["payload_sha256"]

    with pytest.raises(deploy_gate.VerificationError) as replay:
        deploy_gate.apply(envelope, **common)
    assert replay.value.check == "replayed"

    registry.call(op="alias", name="py", alias="champion", version=v2)
    with pytest.raises(deploy_gate.VerificationError) as moved:
        deploy_gate.verify(trusted_keys=[public], mlflow=registry.url, model_uri="models:/py@champion")
    assert moved.value.check == "registry"
    assert f"version {v2}" in moved.value.message and "no signed decision" in moved.value.message

    back = deploy_gate.apply(envelope, restore=True, **common)
    assert (back.result, back.output["version"]) == ("restored", v1)
    assert deploy_gate.verify(trusted_keys=[public], mlflow=registry.url, model_uri="models:/py@champion")["ok"]


def test_blocked_keeps_the_alias_and_other_files_are_refused(registry: Registry, tmp_path: Path) -> None:
    m1, m2 = model(tmp_path, "kept-1"), model(tmp_path, "kept-2")
    v1 = registry.call(op="register", name="py-kept", dir=str(m1))["version"]
    v2 = registry.call(op="register", name="py-kept", dir=str(m2))["version"]
    registry.call(op="alias", name="py-kept", alias="champion", version=v1)
    blocked, public = signed(tmp_path, m2, "models:/py-kept@champion", case="both-regressed")
    common = {"trusted_keys": [public], "mlflow": registry.url, "registered_model": "py-kept", "alias": "champion",
              "ledger": tmp_path / "ledger.jsonl"}
    kept = deploy_gate.apply(blocked, **common)
    assert (kept.result, kept.output["version"], kept.output["alias_version"]) == ("kept_old", v2, v1)
    other, _ = signed(tmp_path, model(tmp_path, "unregistered"), "models:/py-kept@champion")
    with pytest.raises(deploy_gate.VerificationError) as refused:
        deploy_gate.apply(other, **common)
    assert refused.value.check == "subject_digest"
    with pytest.raises(ValueError, match="ledger is required"):
        deploy_gate.apply(other, **{**common, "ledger": None})


def test_the_trainers_signature_over_the_versions_files(registry: Registry, tmp_path: Path) -> None:
    import shutil
    fx = ROOT / "tests" / "fixtures" / "oms"
    files = tmp_path / "signed"
    shutil.copytree(fx / "models" / "tree", files)   # model.sig by the P-256 key inside
    v = registry.call(op="register", name="py-trainer", dir=str(files))["version"]
    envelope, public = signed(tmp_path, files, "models:/py-trainer@champion")
    ledger = tmp_path / "ledger.jsonl"
    common = {"trusted_keys": [public], "mlflow": registry.url, "registered_model": "py-trainer",
              "alias": "champion", "ledger": ledger}
    with pytest.raises(deploy_gate.VerificationError) as untrusted:
        deploy_gate.apply(envelope, trainer_keys=[fx / "keys" / "other.pub.pem"], **common)
    assert untrusted.value.check == "untrusted_key"
    assert not ledger.exists() or ledger.read_text() == ""
    with pytest.raises(ValueError, match="restore re-checks"):
        deploy_gate.apply(envelope, restore=True, trainer_keys=[fx / "keys" / "p256.pub.pem"], **common)
    done = deploy_gate.apply(envelope, trainer_keys=[fx / "keys" / "p256.pub.pem"], **common)
    assert (done.result, done.output["version"], done.output["trainer"]["curve"]) == ("deployed", v, "P-256")
