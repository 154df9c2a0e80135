"""Beyond the reference: ``evaluate`` (the CLI's ``evaluate`` in-process, with verdict files,
verdict mappings or runner callables, sync or async), ``build_test_set`` (the CLI's
``test-set``), and the ``Report`` and ``TestSet`` they return."""

from __future__ import annotations

import html as _html
import json
import os
from typing import Any, Callable, Dict, Iterator, List, Mapping, Optional, Sequence, Tuple, Union

from . import _core
from ._decision import GateDecision
from ._progress import Progress, ProgressArg, ScanProgress
from ._runners import kept_answer, run_runner
from ._endpoint import Endpoint, _id_key, run_batch
from ._trajectories import to_jsonl as _trajectories_jsonl
from .errors import VerdictFileError

__all__ = ["evaluate", "build_test_set", "Report", "TestSet"]

PathLike = Union[str, "os.PathLike[str]"]
AuditArg = Union[PathLike, Sequence[PathLike]]

# The most bytes a review file may hold (the CLI's bound: about a million marks).
_MAX_REVIEW_BYTES = 64 << 20


def _review_bytes(review: Optional[PathLike]) -> Tuple[Optional[bytes], str]:
    """A review file's bytes and its name (``(None, "review")`` without one); ``ValueError``
    when it holds more than a review file may."""
    if review is None:
        return None, "review"
    name = os.fspath(review)
    with open(name, "rb") as f:
        data = f.read(_MAX_REVIEW_BYTES + 1)
    if len(data) > _MAX_REVIEW_BYTES:
        raise ValueError(f"the review file {name} is more than the {_MAX_REVIEW_BYTES} bytes a review file may hold")
    return data, name

PolicyArg = Union[None, Mapping[str, Any], PathLike]
ModelArg = Union[PathLike, Mapping[Any, Any], Callable[[Any], Any]]


def _paths(audit: AuditArg) -> List[str]:
    if isinstance(audit, (str, os.PathLike)):
        return [os.fspath(audit)]
    paths = [os.fspath(p) for p in audit]
    if not paths:
        raise ValueError("audit: give at least one audit log")
    return paths


def _policy_json(policy: PolicyArg, overrides: Optional[Dict[str, Any]] = None) -> str:
    over = json.dumps(overrides) if overrides else None
    if policy is None:
        resolved: str = _core.resolve_policy(overrides=over)
    elif isinstance(policy, Mapping):
        resolved = _core.resolve_policy(policy=json.dumps(dict(policy)), overrides=over)
    else:
        resolved = _core.resolve_policy(policy_file=os.fspath(policy), overrides=over)
    return resolved


class TestSet:
    """A test set as ``deploy-gate test-set`` builds it: ``cases`` (dicts with the reference's
    keys, plus ``input_hash`` where the log has one), ``candidates`` (before sampling),
    ``sampled``, ``insufficient`` (fewer candidates than ``min_samples``: no case) and
    ``to_jsonl()`` (the CLI's bytes)."""

    __test__ = False  # not a pytest test class

    def __init__(self, session: "_core.Session") -> None:
        self._session = session
        num, candidates, sampled, insufficient = session.test_set_info()
        self.candidates: int = candidates
        self.sampled: bool = sampled
        self.insufficient: bool = insufficient
        self.warnings: List[str] = list(session.test_set_warnings())
        self._lines: List[str] = session.case_lines()
        self._cases: Optional[List[Dict[str, Any]]] = None

    @property
    def cases(self) -> List[Dict[str, Any]]:
        if self._cases is None:
            self._cases = [json.loads(line) for line in self._lines]
        return self._cases

    def to_jsonl(self) -> str:
        """The test set as JSONL, byte for byte what ``deploy-gate test-set`` writes."""
        jsonl: str = self._session.test_set_jsonl()
        return jsonl

    def __len__(self) -> int:
        return len(self._lines)

    def __iter__(self) -> Iterator[Dict[str, Any]]:
        return iter(self.cases)

    def __repr__(self) -> str:
        return f"TestSet({len(self)} cases of {self.candidates} candidates, sampled={self.sampled})"


def build_test_set(
    audit: AuditArg,
    *,
    policy: PolicyArg = None,
    min_samples: Optional[int] = None,
    max_samples: Union[int, None, str] = "policy",
    seed: Optional[int] = None,
    pass_verdicts: Optional[Sequence[str]] = None,
    threads: int = 0,
    progress: ProgressArg = True,
) -> TestSet:
    """Builds the test set from one or more audit logs (plain or gzip JSONL, read as one
    stream in the order given) on ``threads`` threads (0: every core), with the GIL released
    while the files are scanned. ``policy`` (a dict shaped as a policy file, or a policy file's
    path) and the keywords (``max_samples=None``: no cap) set the test-set policy as the CLI's
    ``--policy`` and flags do. ``progress``: ``True`` (a tqdm bar of the bytes scanned when
    tqdm is installed), ``False``, or a callable ``progress(read, total, "scan")`` (bytes,
    increasing, ending at the total). Ctrl-C stops the scan within a fraction of a second
    (``KeyboardInterrupt``; no thread is left running). A missing file (a log, the policy file)
    raises ``FileNotFoundError`` naming it, a file that cannot be read another ``OSError``, an
    unusable one an ``InputError``."""
    overrides: Dict[str, Any] = {}
    if min_samples is not None:
        overrides["min_samples"] = min_samples
    if max_samples != "policy":
        overrides["max_samples"] = max_samples
    if seed is not None:
        overrides["seed"] = seed
    if pass_verdicts is not None:
        overrides["pass_verdicts"] = list(pass_verdicts)
    session = _core.Session(_policy_json(policy, overrides))
    with ScanProgress(progress) as bar:
        # A test set pins no digest: the logs are not hashed (as `deploy-gate test-set`).
        session.build_test_set(_paths(audit), threads, bar.callback(), hash=False)
    return TestSet(session)


class Report:
    """A gate report (``deploy-gate/report/v1``): ``decision`` (a ``GateDecision``),
    ``approved``, ``outcome``, ``stats``, ``cases``, ``sequential``, ``evidence``, ``rests_on``
    (how many cases the decision rests on), ``not_run``, ``data`` (the whole report as a dict), and its
    renderings: ``to_json()`` (the bytes of ``deploy-gate evaluate --out``), ``to_html()``,
    ``to_markdown()``, ``to_junit()``; ``cases_frame()`` (pandas); shown as HTML in a
    notebook."""

    def __init__(
        self,
        core: "_core.Report",
        verdict_files: Dict[str, Optional[bytes]],
        answers: Optional["_Answers"] = None,
    ) -> None:
        self._core = core
        self._data: Optional[Dict[str, Any]] = None
        self._verdict_files = verdict_files
        self._answers = answers

    @property
    def data(self) -> Dict[str, Any]:
        """The whole report as a dict (parsed from ``to_json()``)."""
        if self._data is None:
            self._data = json.loads(self._core.to_json())
        return self._data

    @property
    def decision(self) -> GateDecision:
        """The decision; with guardrails in the policy, its ``details["guardrails"]`` holds
        each criterion as a plain dict (see ``guardrails``)."""
        return GateDecision._from_core(self.data["decision"], guardrails=self.guardrails)

    @property
    def approved(self) -> bool:
        approved: bool = self._core.approved
        return approved

    @property
    def outcome(self) -> str:
        """``"approved"``, ``"blocked"`` or ``"inconclusive"`` (under the non-inferiority rule,
        when the evidence shows neither non-inferiority nor a regression: keep the old model,
        and ``stats["task"]["sample_size"]["cases_needed"]`` says about how many cases would
        settle it)."""
        outcome: str = self._core.outcome
        return outcome

    @property
    def stats(self) -> Dict[str, Any]:
        stats: Dict[str, Any] = self.data["stats"]
        return stats

    @property
    def cases(self) -> List[Dict[str, Any]]:
        cases: List[Dict[str, Any]] = self.data["cases"]
        return cases

    @property
    def sequential(self) -> Optional[Dict[str, Any]]:
        """The report's ``sequential`` object under a sequential policy (``sequential: True``,
        ``mode: "non_inferiority"``): ``method``, ``unit``, ``order_seed``, ``budget``,
        ``available``, ``used``, ``stopped`` (``"approved"``, ``"blocked"`` or ``"budget"``),
        ``tolerance``, ``confidence``, ``lower``, ``upper`` and ``looks``; ``None`` otherwise."""
        sequential: Optional[Dict[str, Any]] = self.data.get("sequential")
        return sequential

    @property
    def evidence(self) -> Optional[Dict[str, Any]]:
        """The report's ``evidence`` object, present when a case lacks a verdict on some side or
        the decision is sequential: ``test_cases``, ``answered`` (by both models), ``missing``
        (``{"old": n, "new": n}``), ``not_run`` (sequential only), ``rests_on``, ``over``
        (``"used"``: the report's figures are over the cases the sequential rule used;
        ``"test_set"``: over the whole test set) and ``max_missing``; ``None`` otherwise (every
        case answered by both models, or a report made before it existed)."""
        evidence: Optional[Dict[str, Any]] = self.data.get("evidence")
        return evidence

    @property
    def rests_on(self) -> int:
        """How many test cases the decision rests on: ``evidence["rests_on"]``, or without
        ``evidence`` the cases both models answered (every case of the test set when every case
        is answered)."""
        evidence = self.evidence
        if evidence is not None:
            return int(evidence["rests_on"])
        return sum(1 for c in self.cases if not c.get("old_missing") and not c.get("new_missing"))

    @property
    def not_run(self) -> int:
        """The test cases neither model answered in a sequential report (the rule stopped before
        they were asked; they count for neither model, and are not in ``cases``); 0 otherwise."""
        evidence = self.evidence
        return int(evidence.get("not_run", 0)) if evidence is not None else 0

    @property
    def guardrails(self) -> Optional[Dict[str, Any]]:
        """The report's ``guardrails`` object when the policy has ``guardrails`` or
        ``template_regression``: ``confidence``, ``blocking``, ``adjusted_confidence``,
        ``cases``, ``seed``, ``resamples``, ``criteria`` (per guardrail: ``metric``,
        ``statistic``, ``action``, ``limit_kind``, ``limit``, ``old``, ``new``, ``change``,
        ``low``, ``high``, ``exceeded_low``, ``method``, ``n``, ``excluded``, ``min_cases``,
        ``outcome`` (``"within"``, ``"exceeded"`` or ``"not_shown"``), ``distribution``) and
        ``template_regression`` when given; ``None`` otherwise."""
        guardrails: Optional[Dict[str, Any]] = self.data.get("guardrails")
        return guardrails

    def to_json(self) -> str:
        """The report's JSON, byte for byte what ``deploy-gate evaluate --out`` writes for the
        same inputs and policy."""
        text: str = self._core.to_json()
        return text

    def to_html(self, review: Optional[PathLike] = None, answers: bool = True) -> str:
        """The standalone HTML report (``evaluate --html``), byte for byte the CLI's for the same
        inputs. ``review``: a review file's path (``deploy-gate/review/v1``); its marked cases
        are listed with their notes (``evaluate --html --review``). A bad line raises
        ``ValueError`` naming it. When the verdict records carry the models' answers, the first
        200 cases it lists show both, read again from the verdict files at their byte ranges
        (each file's sha256 checked first: a file that changed since is an ``InputError``);
        ``answers=False`` leaves them out."""
        old = new = None
        if answers and self._answers is not None:
            cases: List[int] = self._core.answer_cases()
            old, new = self._answers.at("old", cases), self._answers.at("new", cases)
        text: str = self._core.to_html(*_review_bytes(review), old, new)
        return text

    def to_markdown(self, review: Optional[PathLike] = None) -> str:
        """The Markdown summary (``evaluate --markdown``). ``review``: a review file's path; its
        marked cases are listed with their notes (``evaluate --markdown --review``)."""
        text: str = self._core.to_markdown(*_review_bytes(review))
        return text

    def to_junit(self) -> str:
        """JUnit XML (``evaluate --junit``)."""
        text: str = self._core.to_junit()
        return text

    def verdict_file(self, side: str) -> Optional[bytes]:
        """The JSONL verdict file a runner's answers (or a target's ``deploy-gate run``) made
        for ``side`` (``"old"``/``"new"``), or ``None`` when that side's verdicts came from a
        file or a mapping. Saved under the name the report lists, it gives ``deploy-gate
        evaluate`` the same report."""
        return self._verdict_files.get(side)

    def cases_frame(self) -> Any:
        """The cases as a pandas DataFrame, one row per case (needs pandas), with what each model
        answered when its records carry it: ``old_output`` and ``new_output`` (the answer as
        given: a ``str``, or the JSON value decoded; ``None`` without one) and
        ``old_output_truncated``/``new_output_truncated`` (``True`` when the answer was cut to
        its bound), read again from the verdict files (a file that changed since is an
        ``InputError``; a file whose records carry no answer is not read)."""
        try:
            import pandas as pd
        except ImportError as exc:
            raise ImportError("Report.cases_frame() needs pandas: pip install pandas") from exc
        frame = pd.DataFrame(self.cases)
        if self._answers is not None:
            for side in ("old", "new"):
                answers = self._answers.of(side)
                # Object dtype: each answer as given (pandas would make a column of texts a
                # string column, its missing answers NaN).
                found = [answers.get(_id_key(c["pipeline_id"])) for c in self.cases]
                frame[f"{side}_output"] = pd.Series(
                    [a[0] if a is not None else None for a in found], index=frame.index, dtype=object
                )
                frame[f"{side}_output_truncated"] = [a is not None and a[1] for a in found]
        return frame

    def _repr_html_(self) -> str:
        # The standalone report, isolated in a frame so its styles do not leak into the notebook.
        return (
            '<iframe sandbox="" style="width:100%;height:640px;border:0" srcdoc="'
            + _html.escape(self.to_html(), quote=True)
            + '"></iframe>'
        )

    def __repr__(self) -> str:
        d = self.data["decision"]
        not_run = f", not_run={self.not_run}" if self.not_run else ""
        return (
            f"Report(approved={d['approved']}, outcome={self.outcome!r}, reason={d['reason']!r}, "
            f"num_cases={d['num_cases']}, rests_on={self.rests_on}{not_run})"
        )


class _Answers:
    """Where each side's verdict file is (a path read again, or its bytes), to read the models'
    answers from it when asked (``Report.cases_frame``): the report never holds them."""

    def __init__(self, session: "_core.Session", sources: Dict[str, Union[str, bytes]]) -> None:
        self._session = session
        self._sources = sources

    def at(self, side: str, cases: List[int]) -> Optional[Dict[int, Tuple[str, bool]]]:
        """``side``'s answers of the test cases at ``cases``: each ``(JSON text, truncated)``,
        read by byte range once the file is checked to be the one read (a file changed since is
        an ``InputError``); ``None`` when the file carries none (it is then not read again)."""
        source = self._sources.get(side)
        if source is None or not self._session.carries_outputs(side):
            return None
        if isinstance(source, bytes):
            found: Dict[int, Tuple[str, bool]] = self._session.case_answers(side, source, cases)
        else:
            found = self._session.case_answers_of_file(side, source, cases)
        return found

    def of(self, side: str) -> Dict[Tuple[bool, str], Tuple[Any, bool]]:
        """``side``'s answers by case id: ``(answer, truncated)``; a file without any is not
        read again."""
        source = self._sources.get(side)
        if source is None or not self._session.carries_outputs(side):
            return {}
        if isinstance(source, bytes):
            outputs = self._session.case_outputs(side, source)
        else:
            outputs = self._session.case_outputs_of_file(side, source)
        keys = [_id_key(json.loads(line)["pipeline_id"]) for line in self._session.case_lines()]
        return {key: (json.loads(o[0]), o[1]) for key, o in zip(keys, outputs) if o is not None}


def _add_model(
    session: "_core.Session",
    side: str,
    model: ModelArg,
    cases: Optional[List[Tuple[Any, Any]]],
    ids: Optional[List[Union[int, str]]],
    max_workers: Optional[int],
    max_concurrency: Optional[int],
    progress: ProgressArg,
) -> Union[str, bytes, None]:
    """Adds ``side``'s verdicts; returns where its verdict file is (a path, or the bytes a mapping
    made; ``None`` for a runner's, which the session keeps)."""
    if isinstance(model, (str, os.PathLike)):
        session.add_verdict_file(side, os.fspath(model))
        # Absolute: the answers are read again later, maybe from another working folder.
        return os.path.abspath(os.fspath(model))
    elif isinstance(model, Mapping):
        try:
            data = json.dumps({str(k): v for k, v in model.items()}, allow_nan=False)
        except (TypeError, ValueError) as exc:
            raise VerdictFileError(
                f"{side} verdicts: the mapping is not JSON ({exc})", f"{side}_verdicts", f"{side}-verdicts.json", None
            ) from None
        encoded = data.encode("utf-8")
        session.add_verdict_bytes(side, f"{side}-verdicts.json", encoded)
        return encoded
    elif callable(model):
        assert cases is not None and ids is not None
        with Progress(progress, len(cases), f"{side} model") as bar:
            answers = run_runner(model, cases, max_workers, max_concurrency, f"evaluate({side})", bar, kept_answer)
        # A runner that raised has no output (its answer is the error alone).
        outputs = [a[2] if len(a) > 2 else None for a in answers]
        session.add_answers(
            side,
            f"{side}-runner.jsonl",
            ids,
            [a[0] for a in answers],
            [a[1] for a in answers],
            outputs if any(o is not None for o in outputs) else None,
        )
        return None
    else:
        raise TypeError(f"{side}: give a verdict file path, a {{pipeline_id: verdict}} mapping or a runner callable")


def _add_trajectories(session: "_core.Session", side: str, results: Any) -> None:
    if results is None:
        return
    if isinstance(results, (str, os.PathLike)):
        session.add_trajectory_file(side, os.fspath(results))
        return
    name = f"{side}-trajectories.jsonl"
    session.add_trajectory_bytes(side, name, _trajectories_jsonl(list(results), f"{side}_trajectories", name))


def evaluate(
    audit: AuditArg,
    old: ModelArg,
    new: ModelArg,
    old_trajectories: Any = None,
    new_trajectories: Any = None,
    policy: PolicyArg = None,
    max_workers: Optional[int] = None,
    max_concurrency: Optional[int] = None,
    progress: ProgressArg = True,
    *,
    threads: int = 0,
) -> Report:
    """Evaluates the gate as ``deploy-gate evaluate`` does, in-process.

    ``audit``: an audit log's path, or several (one stream). ``old`` / ``new``: each a verdict
    file's path (JSONL, JSON array or object, CSV/TSV), a ``{pipeline_id: verdict}`` mapping
    (read as a JSON-object verdict file), a runner ``fn(input_text) -> verdict`` (run on a
    thread pool of ``max_workers``), or an ``async def`` runner (run on an event loop, at most
    ``max_concurrency`` at a time, default 64), or a ``deploy_gate.endpoint(…)`` (the test set
    through ``deploy-gate run``, one two-model run when both are targets; its verdict file read
    as ``deploy-gate evaluate`` reads it, and given by ``Report.verdict_file``). A runner's
    answers follow the reference's rules (``str(v or "")``, case-insensitive; ``None`` a
    missing verdict; an exception an errored case, logged) and enter the core as the verdict
    records a file would hold. A runner may also return ``{"verdict": …, "output": …}`` (any
    mapping with those keys): the verdict is read by the same rules and the output, what the
    model answered (any JSON value: its text, a response object, a transcript), is kept on the
    case's record in ``Report.verdict_file(side)`` (up to 64 KiB, cut and marked
    ``output_truncated`` beyond), never scored.
    ``*_trajectories``: a trajectory file's path, or a list of ``AgenticEvalResult`` objects or
    dicts. ``policy``: a dict shaped as a policy file (or the report's ``policy``), or a policy
    file's path; ``{"mode": "non_inferiority", "sequential": True, "budget": N}`` decides the
    task criterion by the sequential rule (the report's ``sequential``, ``Report.sequential``),
    as ``deploy-gate evaluate --sequential --budget N`` does; ``guardrails`` (a list of
    ``{"metric": "latency_ms", "statistic": "p95", "max_increase": "10%", "action": "block"}``…),
    ``prices`` and ``template_regression`` gate the verdict records' latency, tokens, cost and
    ``metrics`` and each template's pass rate too (``Report.guardrails``). ``progress``: ``True`` (tqdm bars when tqdm is installed: the bytes of the
    scan, then the cases of each runner), ``False``, or a callable ``progress(done, total,
    what)`` (``what``: ``"scan"``, counting bytes, then ``"old model"`` / ``"new model"``,
    counting cases). Ctrl-C stops the scan or the runs cleanly (``KeyboardInterrupt``).

    Raises ``FileNotFoundError`` naming a missing file (an audit log, a verdict or trajectory
    file, the policy file), another ``OSError`` for a file that cannot be read, an
    ``InputError`` subclass naming the file and line for one that is unusable, ``PolicyError``
    for an invalid policy.
    """
    session = _core.Session(_policy_json(policy))
    with ScanProgress(progress) as bar:
        session.build_test_set(_paths(audit), threads, bar.callback())
    cases: Optional[List[Tuple[Any, Any]]] = None
    ids: Optional[List[Union[int, str]]] = None
    if _is_runner(old) or _is_runner(new):
        parsed = [json.loads(line) for line in session.case_lines()]
        cases = [(c["pipeline_id"], c["input_text"]) for c in parsed]
        ids = [c["pipeline_id"] for c in parsed]
    target_files = _run_target_sides(session, old, new)
    sources: Dict[str, Union[str, bytes]] = {}
    for side, model in (("old", old), ("new", new)):
        if side not in target_files:
            source = _add_model(session, side, model, cases, ids, max_workers, max_concurrency, progress)
            if source is not None:
                sources[side] = source
    _add_trajectories(session, "old", old_trajectories)
    _add_trajectories(session, "new", new_trajectories)
    files = {side: target_files[side] if side in target_files else session.answer_file(side) for side in ("old", "new")}
    for side, data in files.items():
        if data is not None:
            sources[side] = data
    return Report(session.report(), files, _Answers(session, sources))


def _is_runner(model: ModelArg) -> bool:
    return callable(model) and not isinstance(model, (Mapping, Endpoint))


def _run_target_sides(session: "_core.Session", old: ModelArg, new: ModelArg) -> Dict[str, Optional[bytes]]:
    """The sides whose model is a ``Endpoint``: the test set (the bytes ``deploy-gate test-set``
    writes) through ``deploy-gate run`` (one two-model run when both are targets with the same
    settings), each verdict file read as ``deploy-gate evaluate`` reads it (listed as
    ``<side>-target.jsonl``). Returns their verdict files' bytes."""
    sides = [(side, m) for side, m in (("old", old), ("new", new)) if isinstance(m, Endpoint)]
    if not sides:
        return {}
    jsonl = session.test_set_jsonl()
    keys = [_id_key(json.loads(line)["pipeline_id"]) for line in session.case_lines()]
    if not keys:
        datas = [b"" for _ in sides]
    elif len(sides) == 2 and sides[0][1]._same_run(sides[1][1]):
        datas = run_batch([sides[0][1], sides[1][1]], jsonl, keys)
    else:
        datas = [run_batch([t], jsonl, keys)[0] for _, t in sides]
    out: Dict[str, Optional[bytes]] = {}
    for (side, _), data in zip(sides, datas):
        session.add_verdict_bytes(side, f"{side}-target.jsonl", data)
        out[side] = data
    return out
