"""The parity fixtures through the Python API give the CLI's test sets and reports, byte for
byte, and the reference's decisions."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import deploy_gate
from conftest import parity_dirs, reference_policy, run_cli


def _args(d: Path) -> dict:
    args = json.loads((d / "args.json").read_text())
    args["policy"] = reference_policy(d)
    return args


def _inputs(d: Path) -> dict:
    traj = (d / "old_trajectories.jsonl").exists()
    return dict(
        audit=d / "audit.jsonl",
        old=d / "old_verdicts.jsonl",
        new=d / "new_verdicts.jsonl",
        old_trajectories=d / "old_trajectories.jsonl" if traj else None,
        new_trajectories=d / "new_trajectories.jsonl" if traj else None,
    )


@pytest.mark.parametrize("d", parity_dirs(), ids=lambda d: d.name)
def test_report_is_the_clis_byte_for_byte(d: Path, cli: Path, tmp_path: Path) -> None:
    policy = _args(d)["policy"]
    report = deploy_gate.evaluate(**_inputs(d), policy=policy, progress=False)
    policy_file = tmp_path / "policy.json"
    policy_file.write_text(json.dumps(policy))
    out = tmp_path / "report.json"
    i = _inputs(d)
    args = ["evaluate", "--audit", str(i["audit"]), "--old-verdicts", str(i["old"]), "--new-verdicts", str(i["new"]),
            "--policy", str(policy_file), "--out", str(out)]
    if i["old_trajectories"]:
        args += ["--old-trajectories", str(i["old_trajectories"]), "--new-trajectories", str(i["new_trajectories"])]
    md, junit, html = tmp_path / "r.md", tmp_path / "r.xml", tmp_path / "r.html"
    args += ["--markdown", str(md), "--junit", str(junit), "--html", str(html)]
    done = run_cli(cli, *args)
    assert done.returncode == (0 if report.approved else 3), done.stderr.decode()
    assert report.to_json().encode() == out.read_bytes()
    assert report.to_markdown().encode() == md.read_bytes()
    assert report.to_junit().encode() == junit.read_bytes()
    assert report.to_html().encode() == html.read_bytes()


@pytest.mark.parametrize("d", parity_dirs(), ids=lambda d: d.name)
def test_test_set_is_the_clis_byte_for_byte(d: Path, cli: Path) -> None:
    p = _args(d)["policy"]
    ts = deploy_gate.build_test_set(
        d / "audit.jsonl", min_samples=p["min_samples"], max_samples=p["max_samples"], pass_verdicts=p["pass_verdicts"]
    )
    args = ["test-set", "--audit", str(d / "audit.jsonl"), "--min-samples", str(p["min_samples"]),
            "--max-samples", "none" if p["max_samples"] is None else str(p["max_samples"]),
            "--pass-verdicts", ",".join(p["pass_verdicts"])]
    done = run_cli(cli, *args)
    assert done.returncode == 0, done.stderr.decode()
    assert ts.to_jsonl().encode() == done.stdout
    assert len(ts) == len(done.stdout.splitlines())


@pytest.mark.parametrize("d", parity_dirs(), ids=lambda d: d.name)
def test_decision_and_test_set_are_the_references(d: Path) -> None:
    expected = json.loads((d / "expected.json").read_text())
    report = deploy_gate.evaluate(**_inputs(d), policy=_args(d)["policy"], progress=False)
    # The reference's GateDecision, and deploy-gate's outcome beside it (the point rule's).
    decision_data = dict(report.data["decision"])
    assert decision_data.pop("outcome") == ("approved" if expected["decision"]["approved"] else "blocked")
    assert decision_data == expected["decision"]
    assert report.data["comparison"] == expected["comparison"]
    decision = report.decision
    assert isinstance(decision, deploy_gate.GateDecision)
    assert decision.approved == expected["decision"]["approved"]
    assert decision.reason == expected["decision"]["reason"]
    p = _args(d)["policy"]
    ts = deploy_gate.build_test_set(
        d / "audit.jsonl", min_samples=p["min_samples"], max_samples=p["max_samples"], pass_verdicts=p["pass_verdicts"]
    )
    cases = [{k: v for k, v in c.items() if k != "input_hash"} for c in ts.cases]
    assert cases == expected["test_set"]


def test_policy_file_path_and_dict_agree(tmp_path: Path) -> None:
    d = parity_dirs()[0]
    policy = _args(d)["policy"]
    f = tmp_path / "policy.json"
    f.write_text(json.dumps(policy))
    a = deploy_gate.evaluate(**_inputs(d), policy=policy, progress=False)
    b = deploy_gate.evaluate(**_inputs(d), policy=f, progress=False)
    assert a.to_json() == b.to_json()
