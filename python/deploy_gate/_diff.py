"""``diff``: what changed between two evaluations, as ``deploy-gate diff`` writes it (the core's
``deploy-gate/diff/v1``), from reports or signed decisions."""

from __future__ import annotations

import json
import os
from typing import Any, Dict, Optional, Sequence, Tuple, Union

from . import _core
from ._evaluate import Report
from ._trainer import _text

__all__ = ["diff"]

PathLike = Union[str, "os.PathLike[str]"]
Evaluation = Union[Report, str, bytes, PathLike]


def _document(value: Evaluation, default: str) -> Tuple[bytes, str]:
    """The bytes of a report or a signed decision, and the name errors give it."""
    if isinstance(value, Report):
        return value.to_json().encode("utf-8"), default
    if isinstance(value, bytes):
        return value, default
    if isinstance(value, str) and value.lstrip().startswith("{"):
        return value.encode("utf-8"), default
    path = os.fspath(value)
    with open(path, "rb") as f:
        return f.read(), str(path)


def diff(
    before: Evaluation,
    after: Evaluation,
    trusted_keys: Optional[Sequence[Union[str, bytes, PathLike]]] = None,
    *,
    threshold: int = 1,
) -> Dict[str, Any]:
    """Compares two evaluations as ``deploy-gate diff BEFORE AFTER`` does and returns the diff
    (``deploy-gate/diff/v1``) as the dict ``json.loads`` reads from the CLI's ``--out`` file:
    the decision's change (``decision["changed"]``, ``"before"``, ``"after"``), the policy
    fields and inputs that differ, the cases in common and on one side only, per model the
    flips each way and verdict changes, every flip (``cases["flips"]``, pass→fail first), the
    templates by the change in their delta, and each side's interval for the task difference: the
    one that decided (``stats["after"]["clustered"]``: clustered by template when the report has
    that interval, as the rules use it; ``method`` names it).

    ``before`` and ``after``: a ``Report``, a report's or a signed decision's JSON text or
    bytes, or a file's path. A signed decision is read only once its signatures verify
    against ``trusted_keys`` (PEM text, bytes or paths; ``threshold`` distinct keys); its age
    and target are not checked. Raises ``VerificationError`` naming the failed check for one
    that does not verify, and ``InputError`` (a ``ValueError``) naming the file for anything
    else unusable. Integer pipeline ids keep every digit (Python ints)."""
    b, b_name = _document(before, "before")
    a, a_name = _document(after, "after")
    keys = [_text(k) for k in (trusted_keys or [])]
    text: str = _core.diff_documents(b, a, b_name, a_name, keys, int(threshold))
    result: Dict[str, Any] = json.loads(text)
    return result
