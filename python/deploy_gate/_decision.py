"""The gate's decision as the reference's API returns it: ``ABComparison`` (the A/B scoring of
two models) and ``GateDecision`` (deploy or not, and why), read from a core report's
``decision`` object. Shared by ``DeploymentGate`` and ``Report.decision``."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Dict, Optional

__all__ = ["ABComparison", "GateDecision"]


@dataclass
class ABComparison:
    """Result of A/B scoring an old model vs a new (retrained) model."""

    old_score: float
    new_score: float
    delta: float  # new_score - old_score
    num_cases: int
    new_is_better: bool  # new_score > old_score (by >= min_delta)
    recommendation: str  # "deploy" | "keep_old"


@dataclass
class GateDecision:
    """The gate's decision for a retrained model: deploy only if the new model is not worse on
    task accuracy and not worse on trajectory quality."""

    approved: bool
    reason: str
    task_delta: float = 0.0
    trajectory_delta: float = 0.0
    task_old: float = 0.0
    task_new: float = 0.0
    trajectory_old: Optional[float] = None
    trajectory_new: Optional[float] = None
    num_cases: int = 0
    details: Dict[str, Any] = field(default_factory=dict)

    @property
    def outcome(self) -> str:
        """``"approved"``, ``"blocked"`` or ``"inconclusive"`` (the evidence shows neither
        non-inferiority nor a regression; only under the non-inferiority rule, and it never
        deploys). deploy-gate's addition: a property, not a field, so the reference's fields,
        their order and ``dataclasses.asdict`` are unchanged."""
        if self.approved:
            return "approved"
        return "inconclusive" if getattr(self, "_outcome", None) == "inconclusive" else "blocked"

    @property
    def sequential(self) -> Optional[Dict[str, Any]]:
        """The report's ``sequential`` object when the decision was taken by the sequential
        rule (``evaluate_decision(..., sequential=True)``), else ``None``. deploy-gate's
        addition, a property as ``outcome`` is."""
        sequential: Optional[Dict[str, Any]] = getattr(self, "_sequential", None)
        return sequential

    @classmethod
    def _from_core(
        cls,
        d: Dict[str, Any],
        sequential: Optional[Dict[str, Any]] = None,
        guardrails: Optional[Dict[str, Any]] = None,
    ) -> "GateDecision":
        """The decision of a core report's ``decision`` object. ``guardrails`` (the report's,
        when the policy has guardrails or ``template_regression``) adds to ``details``
        ``"guardrails"``: each criterion as a plain dict (``metric``, ``statistic``, ``action``,
        ``limit_kind``, ``limit``, ``old``, ``new``, ``change``, ``low``, ``high``, ``n``,
        ``excluded``, ``outcome``…, as the report writes it), and ``"template_regression"``
        when the policy has it."""
        decision = cls._fields_from_core(d)
        if guardrails is not None:
            decision.details["guardrails"] = [dict(c) for c in guardrails.get("criteria", [])]
            if guardrails.get("template_regression") is not None:
                decision.details["template_regression"] = dict(guardrails["template_regression"])
        # Not fields: kept beside them (see ``outcome`` and ``sequential``).
        object.__setattr__(decision, "_outcome", d.get("outcome"))
        object.__setattr__(decision, "_sequential", sequential)
        return decision

    @classmethod
    def _fields_from_core(cls, d: Dict[str, Any]) -> "GateDecision":
        return cls(
            approved=d["approved"],
            reason=d["reason"],
            task_delta=d["task_delta"],
            trajectory_delta=d["trajectory_delta"],
            task_old=d["task_old"],
            task_new=d["task_new"],
            trajectory_old=d["trajectory_old"],
            trajectory_new=d["trajectory_new"],
            num_cases=d["num_cases"],
            details=dict(d["details"]),
        )
