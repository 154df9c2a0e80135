"""What a decision rests on, through the Python package: ``Report.rests_on`` (the report's
``evidence.rests_on``, or the cases both models answered), ``Report.evidence``,
``Report.not_run`` and the repr; verdicts answering a few cases never approve; a sequential
early stop's cases not run are neither in ``cases`` nor missing."""

from __future__ import annotations

from pathlib import Path

import deploy_gate
from conftest import ROOT

INPUTS = ROOT / "tests" / "fixtures" / "compat" / "inputs"


def _ids() -> list[str]:
    ts = deploy_gate.build_test_set(INPUTS / "audit.jsonl", max_samples=None, progress=False)
    return [str(c["pipeline_id"]) for c in ts.cases]


def test_a_report_on_few_answered_cases_rests_on_them_and_does_not_approve() -> None:
    ids = _ids()
    new = {i: "PASS" for i in ids[:4]}
    report = deploy_gate.evaluate(
        audit=INPUTS / "audit.jsonl", old=INPUTS / "old_verdicts.jsonl", new=new, policy={"max_samples": None}, progress=False
    )
    assert report.rests_on == 4
    assert report.rests_on == sum(1 for c in report.cases if not c["old_missing"] and not c["new_missing"])
    assert not report.approved
    assert report.not_run == 0
    assert "rests_on=4" in repr(report) and "not_run" not in repr(report)
    evidence = report.evidence
    assert evidence is not None and evidence["rests_on"] == 4 and evidence["over"] == "test_set"
    assert evidence["missing"]["new"] == len(ids) - 4 and "not_run" not in evidence
    assert "(rests on 4 of " in report.to_markdown().splitlines()[0]


def test_every_case_answered_rests_on_the_test_set_without_evidence() -> None:
    report = deploy_gate.evaluate(
        audit=INPUTS / "audit.jsonl", old=INPUTS / "old_verdicts.jsonl", new=INPUTS / "new_equal.jsonl", progress=False
    )
    assert report.evidence is None
    assert report.rests_on == report.data["test_set"]["num_cases"]
    assert report.not_run == 0


def test_a_sequential_early_stop_counts_the_cases_not_run_apart(tmp_path: Path) -> None:
    ids = _ids()
    asked = ids[: len(ids) * 3 // 4]
    verdicts = {i: "PASS" for i in asked}
    report = deploy_gate.evaluate(
        audit=INPUTS / "audit.jsonl",
        old=verdicts,
        new=verdicts,
        policy={"mode": "non_inferiority", "sequential": True, "cluster": "none", "task_tol": 0.2, "max_samples": None, "min_samples": 1},
        progress=False,
    )
    seq = report.sequential
    assert seq is not None and seq["stopped"] == "approved", seq
    evidence = report.evidence
    assert evidence is not None and evidence["over"] == "used"
    assert report.not_run == len(ids) - len(asked) == evidence["not_run"]
    assert evidence["missing"] == {"old": 0, "new": 0}
    # The cases are the ones used, none missing.
    assert len(report.cases) == report.rests_on == evidence["rests_on"]
    assert not any(c["old_missing"] or c["new_missing"] for c in report.cases)
    assert f"not_run={report.not_run}" in repr(report)
    md = report.to_markdown()
    assert f"over the {report.rests_on} cases used" in md and "not run" in md
