"""The trainer's OpenSSF Model Signing signature in ``verify`` and ``apply``: a model.sig signed
by the reference implementation (model-signing 1.1.1, tests/fixtures/oms-page) beside a
decision signed by the CLI, each failure a ``VerificationError`` naming its OMS check."""

from __future__ import annotations

import base64
import hashlib
import json
import shutil
from pathlib import Path
from typing import Any, Dict

import pytest

import deploy_gate
from conftest import PARITY, ROOT, run_cli, reference_policy

OMS = ROOT / "tests" / "fixtures" / "oms-page"
TRAINER = OMS / "trainer.pub.pem"
OTHER = OMS / "other.pub.pem"


def key_id(pem: Path) -> str:
    """deploy-gate's key id: hex sha256 of the SubjectPublicKeyInfo DER."""
    body = "".join(line for line in pem.read_text().splitlines() if not line.startswith("-----"))
    return hashlib.sha256(base64.b64decode(body)).hexdigest()


class Setup:
    def __init__(self, cli: Path, tmp: Path) -> None:
        self.cli = cli
        self.tmp = tmp
        self.model = tmp / "model"
        shutil.copytree(OMS / "model", self.model)
        done = run_cli(cli, "keygen", "--out", str(tmp / "a"))
        assert done.returncode == 0, done.stderr.decode()
        self.key, self.pub = tmp / "a.key.pem", tmp / "a.pub.pem"
        d = PARITY / "approved"
        report = deploy_gate.evaluate(d / "audit.jsonl", d / "old_verdicts.jsonl", d / "new_verdicts.jsonl",
                                      policy=reference_policy(d), progress=False)
        self.report = tmp / "report.json"
        self.report.write_text(report.to_json())
        self.config = tmp / "serving.yaml"
        self.config.write_text("backend: transformers\ndefault_model: /models/old\n")

    def sign(self, name: str, *what: str) -> Path:
        out = self.tmp / name
        done = run_cli(self.cli, "sign", str(self.report), "--key", str(self.key), "--model", "agent-7b-v2", *what,
                       "--target", str(self.config), "--out", str(out))
        assert done.returncode == 0, done.stderr.decode()
        return out

    def verify(self, envelope: Path, **kw: Any) -> Dict[str, Any]:
        args: Dict[str, Any] = {"trusted_keys": [self.pub], "target": str(self.config), "model_path": self.model,
                                "trainer_keys": [TRAINER], **kw}
        return deploy_gate.verify(envelope, **args)

    def check(self, envelope: Path, **kw: Any) -> str:
        with pytest.raises(deploy_gate.VerificationError) as e:
            self.verify(envelope, **kw)
        return e.value.check


@pytest.fixture
def s(cli: Path, tmp_path: Path) -> Setup:
    return Setup(cli, tmp_path)


def test_verify_checks_the_trainers_signature_and_names_the_key(s: Setup) -> None:
    decision = s.sign("decision.dsse.json", "--model-path", str(s.model))
    v = s.verify(decision)
    assert v["approved"] is True
    t = v["trainer"]
    assert t["key_id"] == key_id(TRAINER)
    assert t["curve"] == "P-256" and t["method"] == "files" and t["resources"] == 6
    assert t["model_digest"] == run_cli(s.cli, "digest", "--oms", str(s.model)).stdout.decode().strip()
    assert t["same_model_by"] == "digest"
    # The key given as PEM text, the signature as the bundle's bytes: the same.
    again = s.verify(decision, trainer_keys=[TRAINER.read_text()], model_signature=(s.model / "model.sig").read_bytes())
    assert again["trainer"]["key_id"] == t["key_id"]
    # Without trainer keys nothing is asked of the trainer, and the decision still verifies by
    # the digest its subject names.
    assert "trainer" not in s.verify(decision, trainer_keys=[])


def test_each_failure_names_its_check(s: Setup) -> None:
    decision = s.sign("decision.dsse.json", "--model-path", str(s.model))
    assert s.check(decision, trainer_keys=[OTHER]) == "untrusted_key"
    weights = s.model / "weights" / "part-00002.bin"
    data = bytearray(weights.read_bytes())
    data[7] ^= 1
    weights.write_bytes(bytes(data))
    with pytest.raises(deploy_gate.VerificationError) as e:
        s.verify(decision)
    assert e.value.check == "file_digest" and "weights/part-00002.bin" in e.value.message
    shutil.copytree(OMS / "model", s.model, dirs_exist_ok=True)
    (s.model / "planted.bin").write_bytes(b"x")
    assert s.check(decision) == "file_extra"
    (s.model / "planted.bin").unlink()
    (s.model / "empty.txt").unlink()
    assert s.check(decision) == "file_missing"
    (s.model / "empty.txt").write_bytes(b"")
    (s.model / "link").symlink_to("config.json")
    assert s.check(decision) == "symlink"
    (s.model / "link").unlink()
    assert s.verify(decision)["trainer"]["resources"] == 6


def test_a_decision_about_another_model_is_model_identity(s: Setup) -> None:
    # The trainer left a file out of what it signed (its signed ignore_paths): the files match
    # the signature, the decision's digest is the folder's, but the two name different models.
    decision = s.sign("decision.dsse.json", "--model-path", str(s.model))
    assert s.check(decision, model_signature=OMS / "fewer-files.sig") == "model_identity"
    # A shards signature of the same files is compared by the files (two kinds of digest).
    assert s.verify(decision, model_signature=OMS / "shards.sig")["trainer"]["same_model_by"] == "files"


def test_arguments_are_checked_as_the_cli_checks_them(s: Setup) -> None:
    decision = s.sign("decision.dsse.json", "--model-path", str(s.model))
    with pytest.raises(ValueError, match="needs trainer_keys"):
        s.verify(decision, trainer_keys=[], model_signature=s.model / "model.sig")
    (s.model / "model.sig").unlink()
    with pytest.raises(ValueError, match="no model signature"):
        s.verify(decision)
    with pytest.raises(ValueError, match="trainer key 1"):
        s.verify(decision, trainer_keys=[s.pub], model_signature=OMS / "model" / "model.sig")


def test_apply_deploys_only_a_model_the_trainer_signed(s: Setup) -> None:
    decision = s.sign("decision.dsse.json", "--model-path", str(s.model))
    ledger = s.tmp / "ledger.jsonl"
    before = s.config.read_text()
    args: Dict[str, Any] = {"trusted_keys": [s.pub], "model_path": s.model, "config": s.config, "ledger": ledger}
    with pytest.raises(deploy_gate.VerificationError) as e:
        deploy_gate.apply(decision, **args, trainer_keys=[OTHER])
    assert e.value.check == "untrusted_key"
    assert s.config.read_text() == before
    assert not ledger.exists() or ledger.read_text() == "", "nothing recorded"
    done = deploy_gate.apply(decision, **args, trainer_keys=[TRAINER])
    assert done.result == "deployed"
    assert done.output["trainer"]["key_id"] == key_id(TRAINER)
    entries = [json.loads(line) for line in ledger.read_text().splitlines()]
    assert any(entry.get("trainer_key") == key_id(TRAINER) for entry in entries)
    assert "default_model" in s.config.read_text() and s.config.read_text() != before


KEYLESS = ROOT / "tests" / "fixtures" / "oms-keyless" / "v1.1.0-sigstore"
IDENTITY = ("stefanb@us.ibm.com", "https://sigstore.verify.ibm.com/oauth2")


def test_a_keyless_signature_is_verified_offline_by_identity_and_issuer(cli: Path, tmp_path: Path) -> None:
    s = Setup(cli, tmp_path)
    shutil.rmtree(s.model)
    s.model.mkdir()
    for name in ("model.sig", "signme-1", "signme-2"):
        shutil.copy(KEYLESS / name, s.model / name)
    decision = s.sign("decision.dsse.json", "--model-path", str(s.model))
    v = s.verify(decision, trainer_keys=[], trainer_identities=[IDENTITY])
    t = v["trainer"]
    assert (t["identity"], t["issuer"], t["key_id"]) == (IDENTITY[0], IDENTITY[1], None)
    assert t["signed_by"]["method"] == "keyless"
    assert s.check(decision, trainer_keys=[], trainer_identities=[("stefanb@us.ibm.co", IDENTITY[1])]) == "keyless_identity"
    assert s.check(decision) == "keyless"
    with pytest.raises(ValueError, match="sigstore_root"):
        s.verify(decision, trainer_keys=[], trainer_identities=[IDENTITY], sigstore_root="{}")
    with pytest.raises(ValueError, match="needs trainer_identities"):
        s.verify(decision, trainer_keys=[], sigstore_root="{}")
    done = deploy_gate.apply(decision, trusted_keys=[s.pub], model_path=s.model, config=s.config,
                             target=str(s.config), ledger=tmp_path / "ledger.jsonl", trainer_identities=[IDENTITY])
    assert done.result == "deployed"
    last = json.loads((tmp_path / "ledger.jsonl").read_text().splitlines()[-1])
    assert (last["trainer_identity"], last["trainer_issuer"]) == IDENTITY
