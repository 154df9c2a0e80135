"""Signed decisions: ``sign`` (``deploy-gate sign``), ``verify`` (``deploy-gate verify``) and
``digest`` (``deploy-gate digest``), through the core's attest module."""

from __future__ import annotations

import json
import os
import time
from typing import Any, Dict, Optional, Sequence, Tuple, Union

from . import _core
from ._evaluate import Report, _review_bytes
from .errors import SignError, VerificationError
from ._trainer import TrainerIdentities, TrainerKeys, _Bundle, _model_signature, _text

__all__ = ["digest", "sign", "verify"]

PathLike = Union[str, "os.PathLike[str]"]


OMS_FILES_SCHEME = "oms-v1.0-files"


def digest(path: PathLike, *, oms: bool = False, shard_size: Optional[int] = None) -> str:
    """The model digest of a file or a directory, ``sha256:<hex>`` as ``deploy-gate digest``;
    with ``oms=True`` the OpenSSF Model Signing subject digest, as ``deploy-gate digest --oms``
    (``shard_size``: the ``shards`` method's, else ``files``)."""
    if shard_size is not None and not oms:
        raise ValueError("shard_size is for the OMS digest (oms=True)")
    d: str = _core.oms_digest(os.fspath(path), shard_size) if oms else _core.model_digest(os.fspath(path))
    return f"sha256:{d}"


def _subject(
    model_path: Optional[PathLike], model_digest: Optional[str], digest_scheme: Optional[str]
) -> Tuple[str, Optional[str]]:
    """The subject's digest and its scheme: a model path is named by its OMS digest (as
    ``deploy-gate sign --model-path``); a given digest by the scheme given with it."""
    if (model_path is None) == (model_digest is None):
        raise ValueError("give one of model_path and model_digest")
    if model_path is not None:
        if digest_scheme is not None:
            raise ValueError("digest_scheme goes with model_digest (a model_path is named by its OMS digest)")
        return digest(model_path, oms=True), OMS_FILES_SCHEME
    return str(model_digest), digest_scheme



def sign(
    report: Union[Report, str, PathLike],
    *,
    key: Union[str, bytes, PathLike],
    model: str,
    target: str,
    model_path: Optional[PathLike] = None,
    model_digest: Optional[str] = None,
    time_verified: Optional[int] = None,
    digest_scheme: Optional[str] = None,
    review: Optional[PathLike] = None,
) -> str:
    """Signs the report's decision for ``model`` and ``target``: the DSSE envelope's JSON
    text, the bytes ``deploy-gate sign`` writes. The model is named by the OpenSSF Model
    Signing digest of ``model_path`` (``digest(model_path, oms=True)``, the subject annotated
    ``digest_scheme: oms-v1.0-files``), or by ``model_digest="sha256:…"`` as given (annotated
    only with ``digest_scheme="oms-v1.0-files"``; without it the digest is read as the
    original ``digest()``'s). ``report``: a ``Report``, its JSON text, or a report file's path.
    ``key``: a PKCS#8 PEM private key (text, bytes or a file's path). ``time_verified``: Unix
    seconds (default: now). ``review``: a review file's path (``deploy-gate/review/v1``, the
    reviewer's marks), pinned in the statement as ``deploy-gate sign --review`` pins it (its
    sha256 and size, its cases per mark, the regressed cases it marks)."""
    if isinstance(report, Report):
        text = report.to_json()
    elif isinstance(report, str) and report.lstrip().startswith("{"):
        text = report
    else:
        with open(os.fspath(report), encoding="utf-8") as f:
            text = f.read()
    when = int(time.time()) if time_verified is None else int(time_verified)
    subject, scheme = _subject(model_path, model_digest, digest_scheme)
    try:
        marks, review_name = _review_bytes(review)
    except ValueError as e:
        raise SignError(str(e)) from None
    envelope: str = _core.sign_report(text, _text(key), model, subject, target, when, scheme, marks, review_name)
    return envelope


def verify(
    envelope: Optional[Union[str, bytes, PathLike]] = None,
    *,
    trusted_keys: Sequence[Union[str, bytes, PathLike]],
    target: Optional[str] = None,
    model_path: Optional[PathLike] = None,
    model_digest: Optional[str] = None,
    threshold: int = 1,
    max_age: int = 24 * 3600,
    now: Optional[int] = None,
    model_signature: Optional[Union[str, bytes, PathLike]] = None,
    trainer_keys: TrainerKeys = (),
    trainer_roots: TrainerKeys = (),
    trainer_identities: TrainerIdentities = (),
    sigstore_root: Optional[Union[str, bytes, PathLike]] = None,
    mlflow: Optional[str] = None,
    model_uri: Optional[str] = None,
    ca_file: Optional[PathLike] = None,
    mlflow_insecure_tls: bool = False,
) -> Dict[str, Any]:
    """Verifies a signed decision as ``deploy-gate verify`` (without a ledger): the checks in
    the CLI's order against the ``trusted_keys`` only (``threshold`` distinct keys), the
    model's digest, the ``target``, and the age (``max_age`` seconds, default 24 h as the
    CLI's). Returns the verified decision (``approved``, ``outcome``, ``reason``, ``model_name``,
    ``signers``, ``payload_sha256``, ``statement``, …): a valid envelope may carry a blocked
    decision. Raises ``VerificationError`` naming the failed check (the CLI's exit 2).

    ``model_path``: the model's digest is computed by the scheme the decision's subject names
    (``digest_scheme: oms-v1.0-files``: the OpenSSF Model Signing digest; none: the original
    directory digest). With ``trainer_keys`` (ECDSA P-256/P-384 public keys: paths, or PEM
    text / bytes) or ``trainer_roots`` (root certificates, the certificate method), the
    trainer's OpenSSF Model Signing signature ``model_signature`` (a path, or the bundle's
    JSON text / bytes; default ``model.sig`` inside ``model_path``) is checked first, as
    ``--model-signature``/``--trainer-key``/``--trainer-root``: the bundle, the signature by a
    trusted trainer key, every file under ``model_path`` against the signed ones, and then that
    the decision names the same model. A failure raises ``VerificationError`` whose ``check``
    is the OMS check (``untrusted_key``, ``file_digest``, ``file_missing``, ``file_extra``,
    ``symlink``, ``model_identity``, …). The result then has ``trainer`` (``key_id``,
    ``model``, ``model_digest``, ``method``, ``resources``, ``same_model_by``, …).
    ``trainer_identities`` (``[(identity, issuer)]``, exact; any one pair is enough) verifies a
    keyless (Sigstore) signature offline, with ``sigstore_root`` (a ``trusted_root.json`` or a
    ClientTrustConfig: path, or JSON text / bytes; default: the public-good root bundled), as
    ``--trainer-identity``/``--trainer-issuer``/``--sigstore-root``; ``trainer`` then has
    ``identity`` and ``issuer`` (``key_id`` None).

    With ``mlflow`` (the tracking server's URL) and ``model_uri`` (``models:/NAME@ALIAS``)
    instead of ``envelope`` and ``target``: ``deploy-gate verify --mlflow`` — the alias is
    resolved, and the decision recorded on its version must verify (signatures, threshold,
    ``max_age``), name that version's files and the URI, and approve. Returns ``{"ok": True,
    "reason", "version", "decision_sha256", "subject"}``; anything else raises
    ``VerificationError`` with ``check`` ``"registry"`` and the reason (an alias moved by hand
    names its version and "no signed decision"). mlflow's own package is not needed."""
    if mlflow is not None:
        if envelope is not None or target is not None or model_path is not None or model_digest is not None:
            raise ValueError("mlflow: envelope, target, model_path and model_digest are not given with it")
        if not model_uri:
            raise ValueError("mlflow: model_uri (models:/NAME@ALIAS) is required")
        if now is not None or model_signature is not None or trainer_keys or trainer_roots or trainer_identities:
            raise ValueError("mlflow: now and the trainer's signature arguments are not given with it")
        from ._deploy import _notify, _Staged

        staged = _Staged()
        try:
            keys = [staged.path(k, isinstance(k, str) and k.lstrip().startswith("-----BEGIN")) for k in trusted_keys]
            if not keys:
                raise ValueError("trusted_keys: at least one trusted key")
            checked_alias: Dict[str, Any] = json.loads(
                _core.verify_mlflow(
                    mlflow,
                    model_uri,
                    keys,
                    threshold,
                    int(max_age),
                    64 << 20,
                    None if ca_file is None else os.fspath(ca_file),
                    bool(mlflow_insecure_tls),
                    _notify,
                )
            )
        finally:
            staged.close()
        if not checked_alias["ok"]:
            raise VerificationError("registry", checked_alias["reason"])
        return checked_alias
    if envelope is None or target is None:
        raise ValueError("envelope and target are required (or mlflow and model_uri)")
    if isinstance(envelope, bytes):
        data = envelope
    elif isinstance(envelope, str) and envelope.lstrip().startswith("{"):
        data = envelope.encode("utf-8")
    else:
        with open(os.fspath(envelope), "rb") as f:
            data = f.read()
    keys = [_text(k) for k in trusted_keys]
    when = int(time.time()) if now is None else int(now)
    signature = _model_signature(
        model_path, model_signature, trainer_keys, trainer_roots, trainer_identities, sigstore_root
    )
    if model_path is not None and model_digest is None:
        bundle = _Bundle(signature[0]) if signature is not None and signature[0] is not None else None
        try:
            out: str = _core.verify_model_envelope(
                data,
                keys,
                threshold,
                os.fspath(model_path),
                target,
                when,
                int(max_age),
                None if bundle is None else bundle.path,
                [] if signature is None else signature[1],
                [] if signature is None else signature[2],
                [] if signature is None else signature[3],
                None if signature is None else signature[4],
            )
        finally:
            if bundle is not None:
                bundle.close()
        checked: Dict[str, Any] = json.loads(out)
        return checked
    result: Dict[str, Any] = json.loads(
        _core.verify_envelope(
            data,
            keys,
            threshold,
            _subject(model_path, model_digest, None)[0],
            target,
            when,
            int(max_age),
        )
    )
    return result
