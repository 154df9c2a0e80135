"""sign, verify and digest from Python, interoperating with the CLI's."""

from __future__ import annotations

import base64
import json
from pathlib import Path

import pytest

import deploy_gate
from conftest import PARITY, run_cli, reference_policy


def _report() -> deploy_gate.Report:
    d = PARITY / "approved"
    return deploy_gate.evaluate(d / "audit.jsonl", d / "old_verdicts.jsonl", d / "new_verdicts.jsonl",
                                policy=reference_policy(d), progress=False)


def _keys(cli: Path, tmp_path: Path, name: str) -> tuple:
    done = run_cli(cli, "keygen", "--out", str(tmp_path / name))
    assert done.returncode == 0, done.stderr.decode()
    return tmp_path / f"{name}.key.pem", tmp_path / f"{name}.pub.pem"


def test_sign_in_python_verify_in_both(cli: Path, tmp_path: Path) -> None:
    key, pub = _keys(cli, tmp_path, "a")
    model = tmp_path / "model"
    model.mkdir()
    (model / "weights.bin").write_bytes(b"\x00" * 100)
    assert run_cli(cli, "digest", str(model)).stdout.decode().strip() == deploy_gate.digest(model)
    # A model path is named by its OpenSSF Model Signing digest, as the CLI's sign names it.
    digest = deploy_gate.digest(model, oms=True)
    assert run_cli(cli, "digest", "--oms", str(model)).stdout.decode().strip() == digest
    assert digest != deploy_gate.digest(model)
    envelope = deploy_gate.sign(_report(), key=key, model="kyc-v2", model_path=model, target="serving.yaml")
    subject = json.loads(base64.b64decode(json.loads(envelope)["payload"]))["subject"]
    assert subject == [{"name": "kyc-v2", "digest": {"sha256": digest[len("sha256:"):]},
                        "annotations": {"digest_scheme": "oms-v1.0-files"}}]
    env_file = tmp_path / "decision.dsse.json"
    env_file.write_text(envelope)
    done = run_cli(cli, "verify", str(env_file), "--trusted-key", str(pub), "--model-path", str(model),
                   "--target", "serving.yaml")
    assert done.returncode == 0, done.stderr.decode()
    v = deploy_gate.verify(env_file, trusted_keys=[pub], model_path=model, target="serving.yaml")
    assert v["approved"] is True and v["model_name"] == "kyc-v2" and len(v["signers"]) == 1
    assert v["statement"]["predicate"]["https://deploy-gate.dev/report/v1"] == _report().data


def test_a_review_signed_in_python_is_the_one_the_cli_verifies(cli: Path, tmp_path: Path) -> None:
    d = PARITY / "both-regressed"
    report = deploy_gate.evaluate(d / "audit.jsonl", d / "old_verdicts.jsonl", d / "new_verdicts.jsonl",
                                  policy=reference_policy(d), progress=False)
    regressed = [c["pipeline_id"] for c in report.data["cases"] if c["status"] == "regressed"]
    assert regressed
    key, pub = _keys(cli, tmp_path, "a")
    review = tmp_path / "review.jsonl"
    review.write_text("".join(json.dumps({"pipeline_id": i, "mark": "label_wrong"}) + "\n" for i in regressed))
    digest = "sha256:" + "ab" * 32
    envelope = deploy_gate.sign(report, key=key, model="m", model_digest=digest, target="prod", review=review)
    pin = deploy_gate.verify(envelope, trusted_keys=[pub], model_digest=digest,
                             target="prod")["statement"]["predicate"]["https://deploy-gate.dev/review/v1"]
    assert pin["marks"] == {"accepted": 0, "label_wrong": len(regressed), "needs_fix": 0}
    assert pin["regressed"] == {"cases": len(regressed), "marked": len(regressed)}
    env_file = tmp_path / "decision.dsse.json"
    env_file.write_text(envelope)
    done = run_cli(cli, "verify", str(env_file), "--trusted-key", str(pub), "--model-digest", digest,
                   "--target", "prod", "--review", str(review))
    assert done.returncode == 0, done.stderr.decode()
    assert json.loads(done.stdout)["review"] == pin
    # Under a policy that requires a review, signing without one is refused, naming the cases.
    policy = reference_policy(d)
    policy["review"] = {"require": "regressed"}
    strict = deploy_gate.evaluate(d / "audit.jsonl", d / "old_verdicts.jsonl", d / "new_verdicts.jsonl",
                                  policy=policy, progress=False)
    with pytest.raises(deploy_gate.SignError, match=r"requires a review mark on every regressed case"):
        deploy_gate.sign(strict, key=key, model="m", model_digest=digest, target="prod")
    assert deploy_gate.sign(strict, key=key, model="m", model_digest=digest, target="prod", review=review)
    # A bad line: SignError naming the file and the line.
    review.write_text('{"pipeline_id": "x", "mark": "accepted"}\n{"pipeline_id": "x", "mark": "ok"}\n')
    with pytest.raises(deploy_gate.SignError, match=r"review.jsonl:2: `mark` must be"):
        deploy_gate.sign(report, key=key, model="m", model_digest=digest, target="prod", review=review)


def test_the_summary_and_the_html_report_list_a_review_as_the_cli_does(cli: Path, tmp_path: Path) -> None:
    d = PARITY / "both-regressed"
    report = deploy_gate.evaluate(d / "audit.jsonl", d / "old_verdicts.jsonl", d / "new_verdicts.jsonl",
                                  policy=reference_policy(d), progress=False)
    regressed = [c["pipeline_id"] for c in report.data["cases"] if c["status"] == "regressed"]
    review = tmp_path / "review.jsonl"
    review.write_text(json.dumps({"pipeline_id": regressed[0], "mark": "accepted", "note": "<b>ok</b> | fine"}) + "\n")
    md = report.to_markdown(review=review)
    assert "**Review marks.** 1 case(s) marked: 1 accepted" in md
    assert "`<b>ok</b> \\| fine`" in md
    assert report.to_markdown() != md and "Review marks" not in report.to_markdown()
    html = report.to_html(review=review)
    assert 'id="review"' in html and "&lt;b&gt;ok&lt;/b&gt; | fine" in html
    # The CLI writes the same bytes for the same report and review.
    out_md, out_html = tmp_path / "s.md", tmp_path / "r.html"
    args = ["evaluate", "--audit", str(d / "audit.jsonl"), "--old-verdicts", str(d / "old_verdicts.jsonl"),
            "--new-verdicts", str(d / "new_verdicts.jsonl"), "--markdown", str(out_md), "--html", str(out_html),
            "--review", str(review)]
    policy = tmp_path / "policy.json"
    policy.write_text(json.dumps(reference_policy(d)))
    done = run_cli(cli, *args, "--policy", str(policy))
    assert done.returncode in (0, 3, 4), done.stderr.decode()
    assert out_md.read_text() == md
    assert out_html.read_text() == html
    review.write_text('{"pipeline_id": "x", "mark": "maybe"}\n')
    with pytest.raises(ValueError, match=r"review.jsonl:1: `mark` must be"):
        report.to_markdown(review=review)


def test_cli_signed_verifies_in_python_and_failures_name_the_check(cli: Path, tmp_path: Path) -> None:
    key, pub = _keys(cli, tmp_path, "a")
    _, other = _keys(cli, tmp_path, "b")
    report = tmp_path / "report.json"
    report.write_text(_report().to_json())
    digest = "sha256:" + "ab" * 32
    done = run_cli(cli, "sign", str(report), "--key", str(key), "--model", "m", "--model-digest", digest,
                   "--target", "prod")
    assert done.returncode == 0, done.stderr.decode()
    envelope = done.stdout
    assert deploy_gate.verify(envelope, trusted_keys=[pub], model_digest=digest, target="prod")["approved"]
    with pytest.raises(deploy_gate.VerificationError) as e:
        deploy_gate.verify(envelope, trusted_keys=[other], model_digest=digest, target="prod")
    assert e.value.check == "signature"
    with pytest.raises(deploy_gate.VerificationError) as e:
        deploy_gate.verify(envelope, trusted_keys=[pub], model_digest=digest, target="staging")
    assert e.value.check == "target"
    with pytest.raises(deploy_gate.VerificationError) as e:
        deploy_gate.verify(envelope, trusted_keys=[pub], model_digest="sha256:" + "cd" * 32, target="prod")
    assert e.value.check == "subject_digest"
    with pytest.raises(deploy_gate.VerificationError) as e:
        deploy_gate.verify(envelope, trusted_keys=[pub], model_digest=digest, target="prod", now=1)
    assert e.value.check == "from_the_future"  # a decision signed after "now"
    with pytest.raises(deploy_gate.SignError):
        deploy_gate.sign(_report(), key="-----BEGIN PRIVATE KEY-----\nnope\n-----END PRIVATE KEY-----\n",
                         model="m", model_digest=digest, target="prod")


def test_a_wide_pipeline_id_keeps_its_digits_through_sign_and_verify(cli: Path, tmp_path: Path) -> None:
    d = PARITY / "typed-ids"
    report = deploy_gate.evaluate(d / "audit.jsonl", d / "old_verdicts.jsonl", d / "new_verdicts.jsonl",
                                  policy={"min_samples": 1}, progress=False)
    wide = 1234567890123456789012345678901234567890123
    assert wide in [c["pipeline_id"] for c in json.loads(report.to_json())["cases"]]
    key, pub = _keys(cli, tmp_path, "a")
    digest = "sha256:" + "ab" * 32
    envelope = deploy_gate.sign(report, key=key, model="m", model_digest=digest, target="prod")
    v = deploy_gate.verify(envelope, trusted_keys=[pub], model_digest=digest, target="prod")
    signed = v["statement"]["predicate"]["https://deploy-gate.dev/report/v1"]
    assert signed == json.loads(report.to_json())
    assert {wide, -wide} <= {c["pipeline_id"] for c in signed["cases"]}
