"""A missing input file raises ``FileNotFoundError`` (a subclass of ``OSError``, so ``except
OSError`` still catches it) naming the file, at every entry point that reads one: the audit
log, the verdict and trajectory files, a policy file, a model, a report, a key, a signed
decision, a target file. The drop-in's ``build_test_set`` keeps the reference's empty list."""

from __future__ import annotations

import errno
import logging
from pathlib import Path
from typing import Any, Callable

import pytest

import deploy_gate
from conftest import completion, stage, write_lines
from deploy_gate import DeploymentGate


def missing(call: Callable[[], Any], name: str) -> FileNotFoundError:
    with pytest.raises(FileNotFoundError) as e:
        call()
    assert isinstance(e.value, OSError)
    assert name in str(e.value), str(e.value)
    return e.value


@pytest.fixture
def inputs(tmp_path: Path) -> dict:
    log = write_lines(tmp_path / "audit.jsonl", [stage("p", "s", "x"), completion("p", "PASS")])
    verdicts = write_lines(tmp_path / "v.jsonl", ['{"pipeline_id": "p", "verdict": "PASS"}'])
    traj = write_lines(tmp_path / "t.jsonl", ['{"trajectory_id": "p", "overall_judge_score": 0.5}'])
    return {"log": log, "verdicts": verdicts, "traj": traj, "gone": tmp_path / "gone"}


def test_evaluate_names_each_missing_input(inputs: dict) -> None:
    log, v, t, gone = inputs["log"], inputs["verdicts"], inputs["traj"], inputs["gone"]
    policy = {"min_samples": 1}
    e = missing(lambda: deploy_gate.evaluate(gone / "audit.jsonl", v, v, policy=policy, progress=False), "audit.jsonl")
    assert e.errno == errno.ENOENT
    missing(lambda: deploy_gate.evaluate([log, gone / "more.jsonl"], v, v, policy=policy, progress=False), "more.jsonl")
    missing(lambda: deploy_gate.evaluate(log, gone / "old.jsonl", v, policy=policy, progress=False), "old.jsonl")
    missing(lambda: deploy_gate.evaluate(log, v, gone / "new.csv", policy=policy, progress=False), "new.csv")
    missing(lambda: deploy_gate.evaluate(log, v, v, gone / "ot.jsonl", t, policy=policy, progress=False), "ot.jsonl")
    missing(lambda: deploy_gate.evaluate(log, v, v, t, gone / "nt.jsonl", policy=policy, progress=False), "nt.jsonl")
    missing(lambda: deploy_gate.evaluate(log, v, v, policy=gone / "policy.json", progress=False), "policy.json")
    # Nothing missing: the same call works.
    assert deploy_gate.evaluate(log, v, v, t, t, policy=policy, progress=False).approved


def test_build_test_set_names_a_missing_log_or_policy(inputs: dict) -> None:
    gone = inputs["gone"]
    missing(lambda: deploy_gate.build_test_set(gone / "audit.jsonl", progress=False), "audit.jsonl")
    missing(lambda: deploy_gate.build_test_set(inputs["log"], policy=gone / "team.yaml", progress=False), "team.yaml")


def test_the_drop_ins_build_test_set_keeps_the_references_empty_list(
    inputs: dict, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.WARNING, logger="deploy_gate"):
        assert DeploymentGate(seed=0).build_test_set(str(inputs["gone"] / "audit.jsonl")) == []
    assert "not found" in caplog.text


def test_digest_sign_verify_and_diff_name_a_missing_file(inputs: dict, tmp_path: Path) -> None:
    gone = inputs["gone"]
    e = missing(lambda: deploy_gate.digest(gone / "model.bin"), "model.bin")
    assert e.errno == errno.ENOENT
    missing(lambda: deploy_gate.digest(gone / "model", oms=True), "model")
    report = deploy_gate.evaluate(inputs["log"], inputs["verdicts"], inputs["verdicts"], policy={"min_samples": 1},
                                  progress=False)
    missing(lambda: deploy_gate.sign(gone / "report.json", key=gone / "k.pem", model="m", target="t",
                                     model_digest="sha256:" + "ab" * 32), "report.json")
    missing(lambda: deploy_gate.sign(report, key=gone / "reviewer.key.pem", model="m", target="t",
                                     model_digest="sha256:" + "ab" * 32), "reviewer.key.pem")
    missing(lambda: deploy_gate.verify(gone / "decision.dsse.json", trusted_keys=[gone / "k.pub.pem"],
                                       model_digest="sha256:" + "ab" * 32, target="t"), "decision.dsse.json")
    missing(lambda: deploy_gate.diff(gone / "before.json", report), "before.json")
    missing(lambda: deploy_gate.diff(report, gone / "after.json"), "after.json")


def test_a_missing_target_file_is_named(inputs: dict) -> None:
    missing(lambda: deploy_gate.endpoint(inputs["gone"] / "model.target.json"), "model.target.json")


def test_deploy_names_a_missing_model_or_config(inputs: dict, tmp_path: Path) -> None:
    config = tmp_path / "serving.yaml"
    config.write_text("default_model: a\n")
    missing(lambda: deploy_gate.deploy_model(str(config), str(inputs["gone"] / "models")), "models")
    missing(lambda: deploy_gate.deploy_model(str(inputs["gone"] / "c.yaml"), str(tmp_path)), "c.yaml")
