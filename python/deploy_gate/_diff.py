"""``diff``: what changed between two evaluations, as ``deploy-gate diff`` writes it (the core's
``deploy-gate/diff/v1``), from reports or signed decisions."""

from __future__ import annotations

import json
import os
from typing import Any, Dict, Optional, Sequence, Tuple, Union

from . import _core
from ._evaluate import Report, _review_bytes
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
    review_before: Optional[PathLike] = None,
    review_after: Optional[PathLike] = None,
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
    else unusable. Integer pipeline ids keep every digit (Python ints).

    ``review_before`` and ``review_after`` (both or neither): the two sides' review files
    (``deploy-gate/review/v1``; a side signed with a review must be given the file it pins). The
    diff then has ``review_changes``: every case whose mark or note changed, as
    ``diff --review-before/--review-after`` gives it."""
    b, b_name = _document(before, "before")
    a, a_name = _document(after, "after")
    keys = [_text(k) for k in (trusted_keys or [])]
    if (review_before is None) != (review_after is None):
        raise ValueError("review_before and review_after go together")
    reviews = None
    if review_before is not None and review_after is not None:
        rb, nb = _review_bytes(review_before)
        ra, na = _review_bytes(review_after)
        assert rb is not None and ra is not None  # (both paths were given)
        reviews = ((rb, nb), (ra, na))
    text: str = _core.diff_documents(b, a, b_name, a_name, keys, int(threshold), reviews)
    result: Dict[str, Any] = json.loads(text)
    return result
