"""The reference's ``DeploymentGate`` API as a drop-in: the same classes, methods, parameters,
defaults and return types, with every number, rounding, delta, decision and reason computed by
deploy-gate's Rust core. Where deploy-gate deliberately differs, the default is deploy-gate's
and one keyword restores the reference's behaviour (each listed in the method's docstring)."""

from __future__ import annotations

import json
import logging
import os
import random
import secrets
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

from . import _core
from ._decision import ABComparison, GateDecision
from ._deploy import deploy_model
from ._progress import ProgressArg, ScanProgress
from ._runners import MISSING, VERDICT, Answer, run_sequential
from ._endpoint import Endpoint, _run_endpoints, record_answer
from ._trajectories import metric_rows, to_jsonl

logger = logging.getLogger("deploy_gate")

__all__ = ["DeploymentGate"]

# The reference's test-case keys, in its order (deploy-gate's test sets add ``input_hash``).
_CASE_KEYS = (
    "pipeline_id",
    "template_id",
    "input_text",
    "expected_verdict",
    "expected_stage_outputs",
    "episode_reward",
)


def _reference_case(line: str) -> Dict[str, Any]:
    case = json.loads(line)
    return {k: case[k] for k in _CASE_KEYS}


def _expected_text(case: Dict[str, Any]) -> str:
    return str(case.get("expected_verdict") or "")


def _trajectory_bytes(side: str, results: Optional[List[Any]]) -> Optional[bytes]:
    if results is None:
        return None
    name = f"{side}-trajectories.jsonl"
    return to_jsonl(list(results), f"{side}_trajectories", name)


class DeploymentGate:
    """Builds a ground-truth test set from an audit log and gates the deploy of a retrained
    model: ``build_test_set``, ``score_model``, ``compare_models``, ``evaluate_decision``,
    ``apply_decision``.

    ``seed`` seeds the sample of ``build_test_set``. ``sampling`` chooses how a test set larger
    than ``max_samples`` is sampled:

    - ``"deploy-gate"`` (default): deploy-gate's reproducible sample, the ``max_samples`` cases
      with the smallest ``sha256("<seed>:<pipeline_id>")``, in audit order; the same in the CLI,
      the page and here, and stable as the log grows. ``seed=None`` means seed 0 (the CLI's
      default), so the test set is still reproducible.
    - ``"python"``: the reference's ``random.Random(seed).sample(cases, max_samples)``, exactly
      (CPython's own ``random``), so a team that switches keeps the test set it had. As in the
      reference the generator lives in the gate: a second call draws another sample, and
      ``seed=None`` seeds it from the OS.

    Deliberate differences from the reference, each restored by one keyword:

    - ``on_insufficient="block"`` (default): ``evaluate_decision`` on an empty test set blocks
      (``"blocked: insufficient test cases (empty test set)"``, then ``"; trajectory quality
      regressed (new mean 0.400 < old mean 0.900 - 0.05)"`` when the trajectory results show a
      regression: the reason names every cause); ``on_insufficient="approve"`` approves 0.0 vs
      0.0 as the reference does.
    - ``build_test_set`` reads the real writer's completion entries (which carry
      ``stage_type: "output"``) as completions, and takes the user input from
      ``state_snapshot.input_text`` when a stage has it; the reference files such completions as
      stages and finds no test case in a real log. No keyword restores that defect.
    - ``none_metric="zero"`` (default): a trajectory metric that is ``None`` counts 0 (as an
      absent one does, but for the judge score, whose absence skips the result);
      ``none_metric="error"`` raises ``TypeError`` as the reference does (it adds them up).
    - ``none_verdict="missing"`` (default): a runner that returns ``None`` gives a missing
      verdict, a failed case even against an empty expected verdict (which only a hand-made
      test set has); ``none_verdict="empty"`` makes it ``""`` as the reference's ``str(v or
      "")`` does, which passes against an empty expected verdict.
    - ``none_seed="zero"`` (default): ``seed=None`` means seed 0, the CLI's default, so the
      test set is reproducible; ``none_seed="os"`` draws the seed from the OS, as the
      reference's ``random.Random(None)`` is seeded (another test set each gate), and keeps it
      in ``gate.seed`` (logged) so the test set can be built again. (``sampling="python"``
      follows the reference in this too.)
    - ``pass_verdicts`` (default ``PASS, APPROVE, COMPLETE``, the reference's) can be changed.

    ``progress`` (``True``: a tqdm bar of the bytes scanned when tqdm is installed; ``False``;
    or a callable ``progress(read, total, "scan")``) shows ``build_test_set``'s scan. Ctrl-C
    stops a scan within a fraction of a second (``KeyboardInterrupt``).
    """

    def __init__(
        self,
        seed: Optional[int] = None,
        sampling: str = "deploy-gate",
        *,
        on_insufficient: str = "block",
        none_metric: str = "zero",
        none_verdict: str = "missing",
        none_seed: str = "zero",
        pass_verdicts: Optional[Sequence[str]] = None,
        threads: int = 0,
        progress: ProgressArg = True,
    ) -> None:
        for name, value, allowed in (
            ("sampling", sampling, ("deploy-gate", "python")),
            ("on_insufficient", on_insufficient, ("block", "approve")),
            ("none_metric", none_metric, ("zero", "error")),
            ("none_verdict", none_verdict, ("missing", "empty")),
            ("none_seed", none_seed, ("zero", "os")),
        ):
            if value not in allowed:
                raise ValueError(f"{name} must be {' or '.join(repr(a) for a in allowed)}, not {value!r}")
        if seed is None and none_seed == "os" and sampling != "python":
            seed = secrets.randbits(64)
            logger.info("DeploymentGate: seeded from the OS (none_seed='os'): seed=%d", seed)
        self.seed = seed
        self.none_metric = none_metric
        self.none_verdict = none_verdict
        self.none_seed = none_seed
        self.progress = progress
        self.sampling = sampling
        self.on_insufficient = on_insufficient
        self.pass_verdicts = list(pass_verdicts) if pass_verdicts is not None else None
        self.threads = threads
        # The reference's generator (used by sampling="python" only).
        self._rng = random.Random(seed)

    # ------------------------------------------------------------------ test set

    def build_test_set(
        self,
        audit_path: str,
        min_samples: int = 20,
        max_samples: int = 200,
    ) -> List[Dict[str, Any]]:
        """Reconstructs test cases from the successful pipeline runs of the audit log at
        ``audit_path`` (plain or gzip JSONL; read by deploy-gate's native reader on every core,
        with the GIL released).

        Returns the reference's list of dicts ``{pipeline_id, template_id, input_text,
        expected_verdict, expected_stage_outputs, episode_reward}``; an empty list, with the
        reference's warning, when the file does not exist or fewer than ``min_samples``
        successful runs are found. More than ``max_samples`` cases are sampled as the gate's
        ``sampling`` says (``max_samples=None``: no cap).

        Differences from the reference: the real writer's completion entries count (see the
        class docstring), the sample is deploy-gate's unless ``sampling="python"``, and
        ``seed=None`` is seed 0 unless ``none_seed="os"`` (the reference seeds from the OS).
        """
        if not os.path.exists(audit_path):
            logger.warning("DeploymentGate.build_test_set: %s not found", audit_path)
            return []
        python_sampling = self.sampling == "python"
        overrides: Dict[str, Any] = {
            "min_samples": min_samples,
            "max_samples": None if python_sampling else max_samples,
        }
        if self.seed is not None and not python_sampling:
            overrides["seed"] = self.seed
        if self.pass_verdicts is not None:
            overrides["pass_verdicts"] = self.pass_verdicts
        session = _core.Session(_core.resolve_policy(overrides=json.dumps(overrides)))
        order: Optional[List[int]] = None
        if python_sampling:
            # CPython's sample(population, k) uses only len(population): drawing positions from
            # range(n) consumes the generator exactly as drawing from the cases would, and only
            # the chosen cases are then built.
            with ScanProgress(self.progress) as bar:
                n = session.scan([os.fspath(audit_path)], self.threads, bar.callback(), hash=False)
            if max_samples is not None and n > max_samples and n >= min_samples:
                order = self._rng.sample(range(n), max_samples)
            session.read_test_set(order)
        else:
            with ScanProgress(self.progress) as bar:
                # A list of cases pins no digest: the logs are not hashed (as `deploy-gate test-set`).
                session.build_test_set([os.fspath(audit_path)], self.threads, bar.callback(), hash=False)
        num_cases, candidates, _sampled, insufficient = session.test_set_info()
        if insufficient:
            logger.warning(
                "DeploymentGate.build_test_set: only %d successful runs found "
                "(min_samples=%d) — returning empty test set.",
                candidates,
                min_samples,
            )
            return []
        cases = [_reference_case(line) for line in session.case_lines()]
        if order is not None:
            # The cases come in audit (candidate) order; the reference lists them in sample order.
            by_position = dict(zip(sorted(order), cases))
            cases = [by_position[p] for p in order]
        logger.info("DeploymentGate.build_test_set: built %d test cases from %s", len(cases), audit_path)
        return cases

    # ------------------------------------------------------------------ scoring

    def score_model(
        self,
        test_set: List[Dict[str, Any]],
        model_runner_fn: Callable[[Any], Any],
    ) -> Optional[float]:
        """Scores a model on the test set: the fraction of cases whose verdict matches.

        ``model_runner_fn(input_text) -> verdict`` is called once per case, in order, on this
        thread; a ``deploy_gate.endpoint(…)`` is asked every case in one ``deploy-gate run``
        (its records read as the same answers: an error record an errored case). A verdict is
        made text as ``str(v or "")`` and compared case-insensitively with
        ``str(expected_verdict or "")``; a runner that raises is a failed case (logged). The
        pass rate is rounded to 4 decimals as Python's ``round``; ``None`` for an empty test set.

        Difference from the reference: a runner that returns ``None`` is a missing verdict and
        fails even against an empty expected verdict (the reference compares ``""`` with
        ``""`` and passes it); ``DeploymentGate(none_verdict="empty")`` restores the
        reference's way.
        """
        if not test_set:
            logger.warning("DeploymentGate.score_model: empty test set — nothing to score.")
            return None
        if isinstance(model_runner_fn, Endpoint):
            # The whole test set through one `deploy-gate run` (see deploy_gate.endpoint).
            return self._score_answers(test_set, model_runner_fn.answers(test_set))
        cases = [(case.get("pipeline_id"), case.get("input_text")) for case in test_set]
        return self._score_answers(test_set, run_sequential(model_runner_fn, cases, "score_model"))

    def _score_answers(self, test_set: List[Dict[str, Any]], answers: List[Answer]) -> Optional[float]:
        if self.none_verdict == "empty":
            answers = [(VERDICT, "") if a[0] == MISSING else a for a in answers]
        score, passed = _core.score_answers_by_position(
            [_expected_text(c) for c in test_set], [a[0] for a in answers], [a[1] for a in answers]
        )
        logger.info("DeploymentGate.score_model: %d/%d passed (%.3f).", passed, len(test_set), score or 0.0)
        return score

    def _score_both(
        self,
        test_set: List[Dict[str, Any]],
        old_model_fn: Callable[[Any], Any],
        new_model_fn: Callable[[Any], Any],
    ) -> Tuple[Optional[float], Optional[float]]:
        """``score_model`` of the old model, then of the new. Two targets with the same
        settings go through one two-model ``deploy-gate run`` (each case sent to both
        together), scored as ``score_model`` scores them (unless a subclass changed it)."""
        if (
            test_set
            and isinstance(old_model_fn, Endpoint)
            and isinstance(new_model_fn, Endpoint)
            and old_model_fn._same_run(new_model_fn)
            and type(self).score_model is DeploymentGate.score_model
        ):
            old_records, new_records = _run_endpoints([old_model_fn, new_model_fn], test_set)
            return (
                self._score_answers(test_set, [record_answer(r) for r in old_records]),
                self._score_answers(test_set, [record_answer(r) for r in new_records]),
            )
        return self.score_model(test_set, old_model_fn), self.score_model(test_set, new_model_fn)

    def compare_models(
        self,
        test_set: List[Dict[str, Any]],
        old_model_fn: Callable[[Any], Any],
        new_model_fn: Callable[[Any], Any],
        min_delta: float = 0.0,
    ) -> ABComparison:
        """A/B scores the old and the new model on the same test set (old first).
        ``new_is_better`` needs ``delta >= min_delta`` and the new score strictly higher;
        ``recommendation`` is ``"deploy"`` or ``"keep_old"``."""
        old_score, new_score = self._score_both(test_set, old_model_fn, new_model_fn)
        old, new, delta, num_cases, better, recommendation = _core.compare(
            old_score, new_score, len(test_set), float(min_delta)
        )
        logger.info(
            "DeploymentGate.compare_models: old=%.3f new=%.3f delta=%+.3f → %s",
            old,
            new,
            delta,
            recommendation,
        )
        return ABComparison(
            old_score=old,
            new_score=new,
            delta=delta,
            num_cases=num_cases,
            new_is_better=better,
            recommendation=recommendation,
        )

    # ------------------------------------------------------------------ the gate

    def _mean_trajectory_score(self, results: Optional[List[Any]]) -> Optional[float]:
        """The mean composite trajectory score of results that have an
        ``overall_judge_score`` (objects or dicts alike), rounded to 4; ``None`` for none. A
        ``None`` metric counts 0, or raises ``TypeError`` under ``none_metric="error"``."""
        rows = metric_rows(results, none_raises=self.none_metric == "error")
        mean: Optional[float] = _core.trajectory_mean(rows)
        return mean

    def evaluate_decision(
        self,
        test_set: List[Dict[str, Any]],
        old_model_fn: Callable[[Any], Any],
        new_model_fn: Callable[[Any], Any],
        old_trajectory_results: Optional[List[Any]] = None,
        new_trajectory_results: Optional[List[Any]] = None,
        task_regression_tol: float = 0.0,
        trajectory_regression_tol: float = 0.05,
        *,
        on_insufficient: Optional[str] = None,
        sequential: bool = False,
        budget: Optional[int] = None,
        cluster: Optional[str] = None,
        confidence: float = 0.95,
        chunk: int = 10,
    ) -> GateDecision:
        """Decides whether to deploy the new model: blocked when the task pass rate regresses
        (``new < old - task_regression_tol``) or, when both trajectory results are given, the
        mean trajectory score regresses (``new < old - trajectory_regression_tol``).

        deploy-gate's addition, ``sequential=True``: the task criterion is decided by the
        sequential rule (the policy ``mode: non_inferiority``, ``sequential: true``, ``budget``,
        ``cluster`` (``None``: the policy's default, ``"template"``), ``confidence``, ``seed``
        the gate's seed, 0 for ``None``; ``budget=None``:
        every unit of the test set, written into the policy), and the runners
        are asked in the seed's order, ``chunk`` units at a time (or a twentieth of those asked,
        when more), until the decision is reached or ``budget`` units (cases, or templates
        under ``cluster="template"``) are spent: the cases after the stop are never asked. The
        decision is the core's report's over the answered cases (its ``sequential`` object is
        ``decision.sequential``), as ``deploy-gate evaluate --sequential`` gives on the same
        verdicts. The cases need distinct ``pipeline_id``s (the order is drawn from them).
        ``task_regression_tol`` is the non-inferiority margin: at 0 only an improvement shown
        approves.

        Trajectory results are ``AgenticEvalResult`` objects or dicts with the same keys (the
        reference ignores dicts); results without ``overall_judge_score`` are skipped, and a
        metric that is ``None`` counts 0 (the reference raises ``TypeError``;
        ``DeploymentGate(none_metric="error")`` raises it too).

        Difference from the reference: an empty test set is blocked
        (``"blocked: insufficient test cases (empty test set)"``; when the trajectory results
        show a regression the reason names it too, ``"…; trajectory quality regressed (new mean
        0.400 < old mean 0.900 - 0.05)"``) unless ``on_insufficient="approve"`` (here or on the
        gate) restores the reference's approval.
        """
        if sequential or budget is not None:
            if not sequential:
                raise ValueError("budget is the sequential rule's: give it with sequential=True")
            if test_set:
                return self._sequential_decision(
                    test_set,
                    old_model_fn,
                    new_model_fn,
                    old_trajectory_results,
                    new_trajectory_results,
                    {
                        "task_regression_tol": float(task_regression_tol),
                        "trajectory_regression_tol": float(trajectory_regression_tol),
                        "on_insufficient": on_insufficient or self.on_insufficient,
                        "min_samples": 0,
                        "max_samples": None,
                        "seed": self.seed if self.seed is not None else 0,
                        "mode": "non_inferiority",
                        "sequential": True,
                        "budget": budget,
                        "confidence": float(confidence),
                    },
                    chunk,
                    cluster,
                )
        task_old, task_new = self._score_both(test_set, old_model_fn, new_model_fn)
        traj_old = self._mean_trajectory_score(old_trajectory_results)
        traj_new = self._mean_trajectory_score(new_trajectory_results)
        policy = _core.resolve_policy(
            overrides=json.dumps(
                {
                    "task_regression_tol": float(task_regression_tol),
                    "trajectory_regression_tol": float(trajectory_regression_tol),
                    "on_insufficient": on_insufficient or self.on_insufficient,
                    "min_samples": 0,
                    "mode": "point",
                }
            )
        )
        n = len(test_set)
        decision = GateDecision._from_core(
            json.loads(_core.decide_scores(task_old, task_new, traj_old, traj_new, n, n, policy))
        )
        logger.info(
            "GateDecision: approved=%s (%s) task %.3f→%.3f traj %s→%s",
            decision.approved,
            decision.reason,
            decision.task_old,
            decision.task_new,
            traj_old,
            traj_new,
        )
        return decision

    def _answers(self, cases: List[Dict[str, Any]], fn: Callable[[Any], Any]) -> List[Answer]:
        """One model's answers to ``cases``, as ``score_model`` asks them (a target: one run)."""
        if isinstance(fn, Endpoint):
            answers = fn.answers(cases)
        else:
            pairs = [(case.get("pipeline_id"), case.get("input_text")) for case in cases]
            answers = run_sequential(fn, pairs, "evaluate_decision")
        if self.none_verdict == "empty":
            answers = [(VERDICT, "") if a[0] == MISSING else a for a in answers]
        return answers

    def _sequential_decision(
        self,
        test_set: List[Dict[str, Any]],
        old_model_fn: Callable[[Any], Any],
        new_model_fn: Callable[[Any], Any],
        old_trajectory_results: Optional[List[Any]],
        new_trajectory_results: Optional[List[Any]],
        overrides: Dict[str, Any],
        chunk: int,
        cluster: Optional[str],
    ) -> GateDecision:
        """``evaluate_decision`` under the sequential rule: the units in the seed's order (the
        core's), asked in chunks; after each, the answers so far are evaluated by the core,
        and asking stops once its ``sequential.stopped`` is ``approved`` or ``blocked``."""
        if isinstance(chunk, bool) or not isinstance(chunk, int) or chunk < 1:
            raise ValueError(f"chunk must be a whole number >= 1, not {chunk!r}")
        budget = overrides.pop("budget")
        if cluster is not None:
            overrides["cluster"] = cluster
        policy = _core.resolve_policy(overrides=json.dumps(overrides))
        # The cases as the core reads a test set: the expected verdict as the drop-in compares
        # it (``str(v or "")``).
        jsonl = "".join(
            json.dumps(
                {
                    "pipeline_id": case.get("pipeline_id"),
                    "template_id": case.get("template_id"),
                    "input_text": case.get("input_text"),
                    "expected_verdict": _expected_text(case),
                },
                allow_nan=False,
            )
            + "\n"
            for case in test_set
        ).encode("utf-8")
        units = _core.sequential_units(policy, jsonl)
        # The budget is written into the policy, the test set's units when not given: the core
        # would otherwise take the units answered so far as the budget.
        overrides["budget"] = len(units) if budget is None else budget
        policy = _core.resolve_policy(overrides=json.dumps(overrides))
        limit = min(len(units), overrides["budget"])
        # The trajectory criterion is checked once, at the end (``none_metric`` first).
        for results in (old_trajectory_results, new_trajectory_results):
            self._mean_trajectory_score(results)
        asked: List[int] = []
        answers: Tuple[List[Answer], List[Answer]] = ([], [])
        done = 0
        while True:
            batch = [i for unit in units[done : min(limit, done + max(chunk, done // 20))] for i in unit]
            done = min(limit, done + max(chunk, done // 20))
            cases = [test_set[i] for i in batch]
            asked += batch
            answers[0].extend(self._answers(cases, old_model_fn))
            answers[1].extend(self._answers(cases, new_model_fn))
            sides = tuple(
                ([test_set[i]["pipeline_id"] for i in asked], [a[0] for a in side], [a[1] for a in side])
                for side in answers
            )
            last = done >= limit
            data = json.loads(_core.evaluate_cases(policy, jsonl, sides[0], sides[1]))
            stopped = (data.get("sequential") or {}).get("stopped")
            if last or stopped in ("approved", "blocked"):
                break
        if old_trajectory_results is not None or new_trajectory_results is not None:
            data = json.loads(
                _core.evaluate_cases(
                    policy,
                    jsonl,
                    sides[0],
                    sides[1],
                    _trajectory_bytes("old", old_trajectory_results),
                    _trajectory_bytes("new", new_trajectory_results),
                )
            )
        decision = GateDecision._from_core(data["decision"], data.get("sequential"), data.get("guardrails"))
        seq = decision.sequential or {}
        logger.info(
            "GateDecision (sequential): %s after %s of %s %ss, %d cases asked of %d: %s",
            decision.outcome,
            seq.get("used"),
            seq.get("budget"),
            seq.get("unit"),
            len(asked),
            len(test_set),
            decision.reason,
        )
        return decision

    def apply_decision(
        self,
        decision: GateDecision,
        config_path: str,
        trained_path: Optional[str] = None,
        deploy_fn: Optional[Callable[..., Any]] = None,
        rollback_fn: Optional[Callable[..., Any]] = None,
        *,
        backend: str = "transformers",
        stage_model_map: Optional[Dict[str, str]] = None,
    ) -> str:
        """Acts on a decision: approved → deploy the new model (``"deployed"``); otherwise keep
        the old one (``"kept_old"``), calling ``rollback_fn(config_path=...)`` when given.

        ``deploy_fn(config_path=..., trained_path=...)`` is called when given. Without it the
        serving config is changed as the upstream bridge changes it — ``default_model`` set to
        the normalised ``trained_path``, ``backend`` (and each stage's ``model`` in
        ``stage_model_map``) — by deploy-gate's deploy step: the config is edited through a
        YAML parser keeping every other byte, checked by parsing it again, the previous config
        kept as ``<config>.yaml.backup`` (where upstream's rollback finds it), and replaced
        atomically under the config's lock.

        Difference from the reference: the reference's default deploy call passes a keyword its
        bridge does not take and raises; this one deploys.
        """
        if decision.approved:
            if trained_path is None:
                raise ValueError("apply_decision(approved): trained_path is required to deploy.")
            if deploy_fn is not None:
                deploy_fn(config_path=config_path, trained_path=trained_path)
            else:
                deploy_model(config_path, trained_path, backend=backend, stage_model_map=stage_model_map)
            logger.info("apply_decision: DEPLOYED new model (%s).", decision.reason)
            return "deployed"
        if rollback_fn is not None:
            rollback_fn(config_path=config_path)
        logger.warning("apply_decision: KEPT OLD model (decision %s: %s).", decision.outcome, decision.reason)
        return "kept_old"
