"""Trajectory-evaluation results (``AgenticEvalResult`` objects, or dicts with the same keys)
mapped to what the core takes. Objects and dicts are read alike."""

from __future__ import annotations

import dataclasses
import json
from typing import Any, Iterable, List, Optional, Tuple

from . import _core
from .errors import TrajectoryFileError

# The fields of AgenticEvalResult the trajectory file format has: the core's list.
FIELDS = tuple(_core.trajectory_fields())

# The metrics the composite uses, in the order the core's trajectory_mean takes them.
METRICS = ("overall_judge_score", "tac_score", "scsr_score", "iasa_score", "egs_score", "arr_score", "lcf_score")

_MISSING = object()


def _get(result: Any, name: str) -> Any:
    if isinstance(result, dict):
        return result.get(name, _MISSING)
    return getattr(result, name, _MISSING)


def has_judge(result: Any) -> bool:
    """The reference scores only results with an ``overall_judge_score``."""
    return _get(result, "overall_judge_score") is not _MISSING


def metrics(result: Any, none_raises: bool = False) -> Tuple[float, float, float, float, float, float, float]:
    """The seven metrics of one result; an absent one counts 0 as in the reference's
    ``getattr(r, name, 0.0)``, and so does ``None`` unless ``none_raises`` (then ``TypeError``,
    as the reference's arithmetic on it raises)."""
    out = []
    for name in METRICS:
        v = _get(result, name)
        if v is None and none_raises:
            raise TypeError(
                f"a trajectory result's {name} is None "
                "(none_metric='error': the reference's composite cannot add None)"
            )
        if v is _MISSING or v is None:
            out.append(0.0)
        else:
            out.append(float(v))
    return (out[0], out[1], out[2], out[3], out[4], out[5], out[6])


def metric_rows(
    results: Optional[Iterable[Any]], none_raises: bool = False
) -> List[Tuple[float, float, float, float, float, float, float]]:
    """The metrics of every result that has a judge score, in order (see ``metrics``)."""
    return [metrics(r, none_raises) for r in (results or []) if has_judge(r)]


def to_jsonl(results: Iterable[Any], role: str, name: str) -> bytes:
    """The results as a trajectory file (JSONL) for the core: each result's fields of
    AgenticEvalResult, from a dict's keys or an object's attributes (dataclasses included)."""
    lines = []
    for i, r in enumerate(results):
        if isinstance(r, dict):
            record = {k: r[k] for k in r if k in FIELDS}
        elif dataclasses.is_dataclass(r) and not isinstance(r, type):
            record = {f.name: getattr(r, f.name) for f in dataclasses.fields(r) if f.name in FIELDS}
        else:
            record = {}
            for name in FIELDS:
                v = getattr(r, name, _MISSING)
                if v is not _MISSING:
                    record[name] = v
        try:
            lines.append(json.dumps(record, allow_nan=False))
        except (TypeError, ValueError) as exc:
            raise TrajectoryFileError(f"{name} result {i}: {exc}", role, name, i + 1) from None
    return ("\n".join(lines) + ("\n" if lines else "")).encode("utf-8")
