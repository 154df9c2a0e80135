"""Signed decisions: ``sign`` (``deploy-gate sign``), ``verify`` (``deploy-gate verify``) and
``digest`` (``deploy-gate digest``), through the core's attest module."""

from __future__ import annotations

import json
import os
import time
from typing import Any, Dict, Optional, Sequence, Union

from . import _core
from ._evaluate import Report

__all__ = ["digest", "sign", "verify"]

PathLike = Union[str, "os.PathLike[str]"]


def _text(value: Union[str, bytes, PathLike]) -> str:
    if isinstance(value, bytes):
        return value.decode("utf-8")
    if isinstance(value, str) and value.lstrip().startswith("-----BEGIN"):
        return value
    with open(os.fspath(value), encoding="utf-8") as f:
        return f.read()


def digest(path: PathLike) -> str:
    """The model digest of a file or a directory, ``sha256:<hex>`` as ``deploy-gate digest``."""
    d: str = _core.model_digest(os.fspath(path))
    return f"sha256:{d}"


def _subject(model_path: Optional[PathLike], model_digest: Optional[str]) -> str:
    if (model_path is None) == (model_digest is None):
        raise ValueError("give one of model_path and model_digest")
    return digest(model_path) if model_path is not None else str(model_digest)


def sign(
    report: Union[Report, str, PathLike],
    *,
    key: Union[str, bytes, PathLike],
    model: str,
    target: str,
    model_path: Optional[PathLike] = None,
    model_digest: Optional[str] = None,
    time_verified: Optional[int] = None,
) -> str:
    """Signs the report's decision for ``model`` (its digest from ``model_path``, or given as
    ``model_digest="sha256:…"``) and ``target``: the DSSE envelope's JSON text, the bytes
    ``deploy-gate sign`` writes. ``report``: a ``Report``, its JSON text, or a report file's
    path. ``key``: a PKCS#8 PEM private key (text, bytes or a file's path).
    ``time_verified``: Unix seconds (default: now)."""
    if isinstance(report, Report):
        text = report.to_json()
    elif isinstance(report, str) and report.lstrip().startswith("{"):
        text = report
    else:
        with open(os.fspath(report), encoding="utf-8") as f:
            text = f.read()
    when = int(time.time()) if time_verified is None else int(time_verified)
    envelope: str = _core.sign_report(text, _text(key), model, _subject(model_path, model_digest), target, when)
    return envelope


def verify(
    envelope: Union[str, bytes, PathLike],
    *,
    trusted_keys: Sequence[Union[str, bytes, PathLike]],
    target: str,
    model_path: Optional[PathLike] = None,
    model_digest: Optional[str] = None,
    threshold: int = 1,
    max_age: int = 24 * 3600,
    now: Optional[int] = None,
) -> Dict[str, Any]:
    """Verifies a signed decision as ``deploy-gate verify`` (without a ledger): the checks in
    the CLI's order against the ``trusted_keys`` only (``threshold`` distinct keys), the
    model's digest, the ``target``, and the age (``max_age`` seconds, default 24 h as the
    CLI's). Returns the verified decision (``approved``, ``outcome``, ``reason``, ``model_name``,
    ``signers``, ``payload_sha256``, ``statement``, …): a valid envelope may carry a blocked
    decision. Raises ``VerificationError`` naming the failed check (the CLI's exit 2)."""
    if isinstance(envelope, bytes):
        data = envelope
    elif isinstance(envelope, str) and envelope.lstrip().startswith("{"):
        data = envelope.encode("utf-8")
    else:
        with open(os.fspath(envelope), "rb") as f:
            data = f.read()
    result: Dict[str, Any] = json.loads(
        _core.verify_envelope(
            data,
            [_text(k) for k in trusted_keys],
            threshold,
            _subject(model_path, model_digest),
            target,
            int(time.time()) if now is None else int(now),
            int(max_age),
        )
    )
    return result
