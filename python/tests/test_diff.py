"""deploy_gate.diff: the same diff as ``deploy-gate diff``, from reports, paths, bytes, Report
objects and signed decisions (verified, or refused with the check named)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import deploy_gate
from conftest import PARITY, run_cli, reference_policy

FIXTURES = Path(__file__).resolve().parents[2] / "tests" / "fixtures" / "diff"


def _report(fixture: str, swap: bool = False) -> deploy_gate.Report:
    d = PARITY / fixture
    old, new = d / "old_verdicts.jsonl", d / "new_verdicts.jsonl"
    if swap:
        old, new = new, old
    policy = reference_policy(d)
    return deploy_gate.evaluate(d / "audit.jsonl", old, new, policy=policy, progress=False)


def test_the_same_dict_as_the_cli(cli: Path, tmp_path: Path) -> None:
    before, after = _report("approved"), _report("approved", swap=True)
    b, a = tmp_path / "before.json", tmp_path / "after.json"
    b.write_text(before.to_json())
    a.write_text(after.to_json())
    done = run_cli(cli, "diff", str(b), str(a))
    assert done.returncode == 5, done.stderr.decode()
    want = json.loads(done.stdout)
    for x, y in [(before, after), (b, a), (str(b), str(a)), (b.read_bytes(), a.read_bytes()), (b.read_text(), a.read_text())]:
        assert deploy_gate.diff(x, y) == want
    d = deploy_gate.diff(before, after)
    assert d["schema"] == "deploy-gate/diff/v1"
    assert d["decision"] == {"changed": True, "before": "approved", "after": "blocked"}
    assert d["cases"]["counts"]["new"]["pass_to_fail"] > 0
    assert d["cases"]["flips"][0]["before_pass"] is True and d["cases"]["flips"][0]["after_pass"] is False


def test_each_side_shows_the_interval_that_decided_and_says_which() -> None:
    d = PARITY / "approved"
    policy = reference_policy(d)
    seen = set()
    for cluster in ("template", "none"):
        report = deploy_gate.evaluate(d / "audit.jsonl", d / "old_verdicts.jsonl", d / "new_verdicts.jsonl",
                                      policy={**policy, "cluster": cluster}, progress=False)
        task = report.stats["task"]
        # The interval the rules use: the clustered one when the report has it.
        rule = task["clustered"]["delta"] if task["clustered"] else task["delta"]
        side = deploy_gate.diff(report, report)["stats"]["after"]
        assert (side["low"], side["high"], side["method"]) == (rule["low"], rule["high"], rule["method"])
        assert side["clustered"] is (task["clustered"] is not None)
        seen.add(side["method"])
    assert seen == {"cluster_robust_t", "newcombe"}


def test_wide_integer_ids_keep_their_digits(cli: Path, tmp_path: Path) -> None:
    typed = FIXTURES / "previous" / "typed-ids.report.json"
    # The same log with no verdict at all: every case that passed for a model flips.
    empty = tmp_path / "none.jsonl"
    empty.write_text("")
    t = PARITY / "typed-ids"
    after = tmp_path / "after.json"
    done = run_cli(cli, "evaluate", "--audit", str(t / "audit.jsonl"), "--old-verdicts", str(empty), "--new-verdicts",
                   str(empty), "--min-samples", "1", "--max-samples", "none", "--on-insufficient", "approve",
                   "--out", str(after))
    assert done.returncode in (0, 3), done.stderr.decode()
    done = run_cli(cli, "diff", str(typed), str(after))
    d = deploy_gate.diff(typed, after)
    assert d == json.loads(done.stdout)
    ids = [f["pipeline_id"] for f in d["cases"]["flips"]]
    assert 1234567890123456789012345678901234567890123 in ids, ids
    assert -9223372036854775809 in ids
    # 5 and "5", -7 and "-7": two cases each, told apart by their type.
    assert "-7" in ids and -7 in ids


def test_signed_decisions_verify_first(tmp_path: Path) -> None:
    prev = FIXTURES / "previous"
    key = prev / "reviewer.pub.pem"
    d = deploy_gate.diff(prev / "approved.report.json", prev / "approved.dsse.json", trusted_keys=[key])
    assert d["after"]["source"] == "signed"
    assert d["after"]["signers"] == ["df1756d890bc6d8baf6447de52c841633eb30bb1f3ff0ad4511e46aa871bc76f"]
    assert d["decision"]["changed"] is False
    assert deploy_gate.diff(prev / "approved.report.json", prev / "approved.dsse.json", trusted_keys=[key.read_text()]) == d
    with pytest.raises(deploy_gate.InputError, match="no trusted key was given") as e:
        deploy_gate.diff(prev / "approved.report.json", prev / "approved.dsse.json")
    assert e.value.file == str(prev / "approved.dsse.json")
    other = tmp_path / "other.pub.pem"
    other.write_text(
        "-----BEGIN PUBLIC KEY-----\nMCowBQYDK2VwAyEAGb9ECWmEzf6FQbrBZ9w7lshQhqowtrbLDFw4rXAxZuE=\n-----END PUBLIC KEY-----\n"
    )
    with pytest.raises(deploy_gate.VerificationError) as v:
        deploy_gate.diff(prev / "approved.report.json", prev / "approved.dsse.json", trusted_keys=[other])
    assert v.value.check == "signature"
    with pytest.raises(deploy_gate.VerificationError) as v:
        deploy_gate.diff(prev / "approved.report.json", prev / "approved.dsse.json", trusted_keys=[key], threshold=2)
    assert v.value.check == "threshold"


def test_unusable_inputs_name_their_file(tmp_path: Path) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text('{"schema": "deploy-gate/diff/v1"}')
    with pytest.raises(deploy_gate.InputError, match="bad.json: its schema is `deploy-gate/diff/v1`") as e:
        deploy_gate.diff(FIXTURES / "previous" / "approved.report.json", bad)
    assert e.value.file == str(bad)
    with pytest.raises(ValueError, match="^before: not a deploy-gate report"):
        deploy_gate.diff(b"[1,", b"{}")


def test_review_files_give_the_marks_that_changed_as_the_cli(cli: Path, tmp_path: Path) -> None:
    compat = Path(__file__).resolve().parents[2] / "tests" / "fixtures" / "compat-afae7eb"
    a, b = compat / "scenarios" / "fixed-answers", compat / "scenarios" / "review-required"
    key = compat / "reviewer.pub.pem"
    changed = tmp_path / "changed.jsonl"
    lines = (b / "review.jsonl").read_text().splitlines()
    first = json.loads(lines[0])
    first["note"] = "<b>changed</b> @team"
    changed.write_text("\n".join([json.dumps(first)] + lines[2:]) + "\n")
    # A report on the after side: any review file (nothing pins it).
    d = deploy_gate.diff(a / "decision.dsse.json", b / "report.json", trusted_keys=[key],
                         review_before=a / "review.jsonl", review_after=changed)
    second = json.loads(lines[1])
    assert [c["pipeline_id"] for c in d["review_changes"]] == [first["pipeline_id"], second["pipeline_id"]]
    assert d["review_changes"][0]["after"] == {"mark": first["mark"], "note": "<b>changed</b> @team"}
    assert d["review_changes"][1]["after"] is None
    done = run_cli(cli, "diff", str(a / "decision.dsse.json"), str(b / "report.json"), "--trusted-key", str(key),
                   "--review-before", str(a / "review.jsonl"), "--review-after", str(changed))
    assert done.returncode in (0, 5), done.stderr.decode()
    assert json.loads(done.stdout) == d
    # A signed side given another file than the one it pins: refused, naming the file.
    with pytest.raises(deploy_gate.InputError, match="not the review file the earlier decision was signed with"):
        deploy_gate.diff(a / "decision.dsse.json", b / "report.json", trusted_keys=[key],
                         review_before=changed, review_after=changed)
    with pytest.raises(ValueError, match="go together"):
        deploy_gate.diff(a / "report.json", b / "report.json", review_before=changed)
    assert "review_changes" not in deploy_gate.diff(a / "report.json", b / "report.json")
