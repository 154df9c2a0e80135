"""Deploying: ``apply`` and ``rollback`` (``deploy-gate apply`` / ``rollback``: a signed
decision verified, then deployed exactly once with the ledger), and ``deploy_model`` (the deploy
step without a signed decision, ``DeploymentGate.apply_decision``'s default). All three run
deploy-gate's native deploy code with the GIL released; what it says along the way (temporary
files removed, interrupted applies resolved, warnings) is logged on the logger ``deploy_gate``."""

from __future__ import annotations

import datetime
import json
import logging
import os
import tempfile
from dataclasses import dataclass, field
from typing import Any, Dict, List, Mapping, Optional, Sequence, Tuple, Union

from . import _core
from ._trainer import TrainerIdentities, TrainerKeys, _model_signature, _Signature

__all__ = ["ApplyResult", "RollbackResult", "apply", "deploy_model", "rollback"]

logger = logging.getLogger("deploy_gate")

BACKENDS = ("transformers", "vllm", "api")

#: The oldest decision ``apply`` accepts by default, in seconds (the CLI's ``--max-age 24h``).
DEFAULT_MAX_AGE = 24 * 3600
#: The largest statement ``apply`` accepts by default (the CLI's ``--max-statement-size 64M``).
DEFAULT_MAX_STATEMENT_SIZE = 64 << 20

PathLike = Union[str, "os.PathLike[str]"]

# The crash points' test hook (tests only): the name of a deploy step (``"intent-logged"``,
# ``"config-renamed"``, …) at which ``apply`` and ``deploy_model`` abort the process, as the
# CLI's hidden ``apply --fail-at STEP``.
_FAIL_AT: Optional[str] = None


def _notify(warning: bool, text: str) -> None:
    if warning:
        logger.warning("%s", text)
    else:
        logger.info("%s", text)


@dataclass(frozen=True)
class ApplyResult:
    """What ``apply`` did: the fields of ``deploy-gate apply``'s JSON output.

    ``result`` is ``"deployed"`` (the CLI's exit 0), ``"deployed_unrecorded"`` (exit 4: the
    model IS deployed but the ledger could not record it; ``error`` says why, and the next
    apply records it), ``"kept_old"`` (exit 3: a valid decision that keeps the old model; the
    rollback command ran, if one was given) or ``"dry_run"`` (nothing done; ``decision``
    says what would be). ``decision`` is the verified decision as ``verify`` prints it
    (``approved``, ``reason``, ``model``, ``model_digest``, ``target``, ``signers``,
    ``payload_sha256``, …). ``config`` and ``backup`` are set by the built-in deploy;
    ``unchanged`` when the config held this deploy already (nothing written)."""

    result: str
    decision: Dict[str, Any]
    ledger: Optional[str] = None
    config: Optional[str] = None
    backup: Optional[str] = None
    unchanged: bool = False
    model_path: Optional[str] = None
    error: Optional[str] = None
    output: Dict[str, Any] = field(default_factory=dict, repr=False, compare=False)

    @property
    def deployed(self) -> bool:
        """Whether the new model is deployed now (``deployed`` or ``deployed_unrecorded``)."""
        return self.result in ("deployed", "deployed_unrecorded")

    def to_json(self) -> str:
        """The CLI's stdout JSON for the same apply (compact)."""
        return json.dumps(self.output, ensure_ascii=False)


@dataclass(frozen=True)
class RollbackResult:
    """What ``rollback`` did: ``config`` restored from ``backup`` (``legacy_backup`` when it
    had the name earlier versions used); the decision whose deploy was undone, ``decision``
    (its payload sha256), recorded as rolled back in ``recorded_in`` (``"ledger"``, or
    ``"config_record"`` when only the config's own record had it), or ``None`` when neither
    had a deployed decision whose config this was."""

    config: str
    backup: str
    legacy_backup: bool
    ledger: str
    recorded_in: Optional[str]
    decision: Optional[str]
    result: str = "rolled_back"


class _Staged:
    """Envelope or key texts given in memory, written to a private temporary directory (the
    native apply reads files)."""

    def __init__(self) -> None:
        self._dir: Optional[tempfile.TemporaryDirectory[str]] = None
        self._n = 0

    def path(self, value: Union[str, bytes, PathLike], looks_inline: bool) -> str:
        if isinstance(value, (bytes, bytearray)) or (isinstance(value, str) and looks_inline):
            if self._dir is None:
                self._dir = tempfile.TemporaryDirectory(prefix="deploy-gate-")
            self._n += 1
            p = os.path.join(self._dir.name, f"input-{self._n}")
            data = value.encode("utf-8") if isinstance(value, str) else bytes(value)
            fd = os.open(p, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
            with os.fdopen(fd, "wb") as f:
                f.write(data)
            return p
        return os.fspath(value)

    def close(self) -> None:
        if self._dir is not None:
            self._dir.cleanup()
            self._dir = None


def _seconds(value: Union[int, float, datetime.timedelta]) -> int:
    if isinstance(value, datetime.timedelta):
        return int(value.total_seconds())
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise TypeError(f"max_age: seconds (int) or a datetime.timedelta, not {type(value).__name__}")
    return int(value)


def _stages(stage_models: Optional[Union[Mapping[str, str], Sequence[Tuple[str, str]]]]) -> List[Tuple[str, str]]:
    if stage_models is None:
        return []
    pairs = list(stage_models.items()) if isinstance(stage_models, Mapping) else list(stage_models)
    out = []
    for stage, path in pairs:
        if not stage or not path:
            raise ValueError(f"stage_models: {stage!r}={path!r}: expected a stage and a path")
        out.append((str(stage), os.fspath(path)))
    return out


def _argv(cmd: Optional[Sequence[str]], what: str) -> List[str]:
    if cmd is None:
        return []
    if isinstance(cmd, (str, bytes)):
        raise TypeError(f"{what}: a list of program and arguments (never run through a shell), not a string")
    argv = [os.fspath(a) for a in cmd]
    if not argv:
        raise ValueError(f"{what}: an empty command")
    return argv


def apply(
    envelope: Union[str, bytes, PathLike],
    *,
    trusted_keys: Sequence[Union[str, bytes, PathLike]],
    model_path: Optional[PathLike] = None,
    config: Optional[PathLike] = None,
    target: Optional[str] = None,
    ledger: Optional[PathLike] = None,
    threshold: int = 1,
    max_age: Union[int, float, datetime.timedelta] = DEFAULT_MAX_AGE,
    max_statement_size: int = DEFAULT_MAX_STATEMENT_SIZE,
    backend: str = "transformers",
    stage_models: Optional[Union[Mapping[str, str], Sequence[Tuple[str, str]]]] = None,
    deploy_cmd: Optional[Sequence[str]] = None,
    rollback_cmd: Optional[Sequence[str]] = None,
    dry_run: bool = False,
    model_signature: Optional[Union[str, bytes, PathLike]] = None,
    trainer_keys: TrainerKeys = (),
    trainer_roots: TrainerKeys = (),
    trainer_identities: TrainerIdentities = (),
    sigstore_root: Optional[Union[str, bytes, PathLike]] = None,
    mlflow: Optional[str] = None,
    registered_model: Optional[str] = None,
    alias: Optional[str] = None,
    model_version: Optional[Union[str, int]] = None,
    restore: bool = False,
    ca_file: Optional[PathLike] = None,
    mlflow_insecure_tls: bool = False,
) -> ApplyResult:
    """Verifies a signed decision and applies it exactly once, as ``deploy-gate apply``.

    With ``mlflow`` (the tracking server's URL), ``registered_model`` and ``alias`` instead of
    ``model_path`` and ``config``: ``deploy-gate apply --mlflow`` — the decision must be signed
    for ``models:/NAME@ALIAS``; the version (``model_version``, else the one whose files'
    digest is the decision's subject) is downloaded and hashed, the decision recorded in its
    tags, and the alias moved exactly once if it still points where it pointed when the apply
    began. ``ledger`` is required. ``result`` is ``deployed``, ``kept_old`` (the refusal is
    recorded on the version) or ``dry_run``; ``output`` has ``version`` and
    ``version_before``. ``restore=True`` puts the alias back on the last version the ledger
    promoted whose decision still verifies (``result``: ``restored`` or ``unchanged``).
    Credentials come from ``MLFLOW_TRACKING_TOKEN`` or ``MLFLOW_TRACKING_USERNAME`` /
    ``MLFLOW_TRACKING_PASSWORD`` only; ``MLFLOW_TRACKING_INSECURE_TLS=true`` is refused unless
    ``mlflow_insecure_tls``; ``ca_file`` adds CA certificates. mlflow's own package is not
    needed. The trainer's arguments check the trainer's signature over the version's files as
    the registry serves them (``model_signature``, else ``model.sig`` among them), as
    ``deploy-gate apply --mlflow --trainer-key …``.

    ``envelope``: the envelope's path, or its JSON text / bytes (as ``sign`` returns it).
    ``trusted_keys``: SPKI PEM public keys (paths, or PEM text / bytes); ``threshold``
    distinct ones must have signed. ``model_path``: the model (file or directory) whose digest
    must be the statement's subject. ``config``: the serving config the built-in deploy edits
    (``default_model``, ``backend`` and ``stage_models``' ``model`` set, every other byte kept,
    upstream's backup name, atomic replacement under the config's lock; a symlink is followed
    and kept). ``target``: the target the decision must name (default: ``config`` as given).
    ``ledger``: the ledger of applied decisions (default ``NAME.deploy-gate-ledger.jsonl``
    beside the config); a decision in it (or in the config's own record) is refused as a
    replay. ``max_age``: the oldest acceptable decision (seconds or a ``timedelta``; 24 h).
    ``deploy_cmd`` / ``rollback_cmd``: ``[program, arg, …]`` run instead of the built-in deploy
    / when the decision keeps the old model, with the values in ``DEPLOY_GATE_*`` environment
    variables, never through a shell. ``dry_run``: verify and say what would be done.
    ``trainer_keys`` (ECDSA P-256/P-384 public keys: paths, or PEM text / bytes) or
    ``trainer_roots`` (root certificates): the trainer's OpenSSF Model Signing signature
    ``model_signature`` (a path, or the bundle's JSON text / bytes; default ``model.sig`` inside
    ``model_path``) is checked against every file of the model, and must name the model the
    decision names, before anything is deployed (``--model-signature``, ``--trainer-key``,
    ``--trainer-root``); the ledger entry then names the trainer's key id.

    Returns an ``ApplyResult`` (``result``: ``deployed``, ``deployed_unrecorded``,
    ``kept_old`` or ``dry_run``). Raises ``VerificationError`` naming the failed check
    (``signature``, ``subject_digest``, ``target``, ``age``, ``replayed``, …, or the model
    signature's ``untrusted_key``, ``file_digest``, ``model_identity``, …; the CLI's exit 2) and ``DeployError`` when it stops (the CLI's exit 1: nothing deployed unless the
    message says so). Two applies of one decision, in any processes, deploy it once; a crash
    at any point leaves a state the next apply reports and resolves. The GIL is released while
    it works.

    ``trainer_identities`` (``[(identity, issuer)]``) and ``sigstore_root`` verify a keyless
    (Sigstore) trainer's signature offline, as in ``verify``."""
    if backend not in BACKENDS:
        raise ValueError(f"backend must be one of {', '.join(BACKENDS)}, not {backend!r}")
    if isinstance(threshold, bool) or not isinstance(threshold, int) or threshold < 1:
        raise ValueError(f"threshold must be a positive int, not {threshold!r}")
    if isinstance(trusted_keys, (str, bytes)):
        raise TypeError("trusted_keys: a list of keys")
    if mlflow is not None:
        given = [
            name
            for name, value in (
                ("model_path", model_path),
                ("config", config),
                ("deploy_cmd", deploy_cmd),
                ("rollback_cmd", rollback_cmd),
                ("stage_models", stage_models),
            )
            if value is not None
        ]
        if given or backend != "transformers":
            raise ValueError(f"mlflow: {', '.join(given) or 'backend'} cannot be given with it")
        signature = _model_signature(
            None, model_signature, trainer_keys, trainer_roots, trainer_identities, sigstore_root, in_files=True
        )
        if restore and signature is not None:
            raise ValueError(
                "restore re-checks the decisions recorded on the versions, not the trainer's signature: give it without the trainer's arguments"
            )
        if not registered_model or not alias:
            raise ValueError("mlflow: registered_model and alias are required")
        if ledger is None:
            raise ValueError("mlflow: ledger is required (the record of the decisions applied to the registry)")
        return _apply_mlflow(
            envelope,
            trusted_keys,
            mlflow,
            registered_model,
            alias,
            None if model_version is None else str(model_version),
            target,
            ledger,
            threshold,
            _seconds(max_age),
            int(max_statement_size),
            bool(dry_run),
            bool(restore),
            ca_file,
            bool(mlflow_insecure_tls),
            signature,
        )
    if model_path is None or config is None:
        raise ValueError("model_path and config are required (or mlflow, registered_model and alias)")
    if restore:
        raise ValueError("restore: only with mlflow (a config is restored by rollback())")
    signature = _model_signature(
        model_path, model_signature, trainer_keys, trainer_roots, trainer_identities, sigstore_root
    )
    staged = _Staged()
    try:
        env_path = staged.path(envelope, isinstance(envelope, str) and envelope.lstrip().startswith("{"))
        sig_path = None if signature is None or signature[0] is None else staged.path(signature[0], False)
        keys = [staged.path(k, isinstance(k, str) and k.lstrip().startswith("-----BEGIN")) for k in trusted_keys]
        if not keys:
            raise ValueError("trusted_keys: at least one trusted key")
        word, output, normalized, error = _core.apply(
            env_path,
            keys,
            os.fspath(model_path),
            os.fspath(config),
            target,
            None if ledger is None else os.fspath(ledger),
            threshold,
            _seconds(max_age),
            int(max_statement_size),
            backend,
            _stages(stage_models),
            _argv(deploy_cmd, "deploy_cmd"),
            _argv(rollback_cmd, "rollback_cmd"),
            bool(dry_run),
            _notify,
            _FAIL_AT,
            model_signature=sig_path,
            trainer_pems=[] if signature is None else signature[1],
            root_pems=[] if signature is None else signature[2],
            trainer_identities=[] if signature is None else signature[3],
            sigstore_root=None if signature is None else signature[4],
        )
    finally:
        staged.close()
    out: Dict[str, Any] = json.loads(output)
    if word == "dry_run":
        approved = bool(out.get("approved"))
        logger.info(
            "apply: dry run — verified; would %s (%s)",
            "deploy the new model" if approved else f"keep the old model (decision {_kept_because(out)})",
            out.get("reason"),
        )
        return ApplyResult(result=word, decision=out, output=out)
    decision: Dict[str, Any] = out["decision"]
    result = ApplyResult(
        result=word,
        decision=decision,
        ledger=out.get("ledger"),
        config=out.get("config"),
        backup=out.get("backup"),
        unchanged=bool(out.get("unchanged", False)),
        model_path=normalized or None,
        error=error,
        output=out,
    )
    if word == "deployed":
        logger.info("apply: DEPLOYED %s (%s) — %s", decision["model"], normalized, decision["reason"])
    elif word == "deployed_unrecorded":
        logger.warning(
            "apply: DEPLOYED %s (%s) — the model IS deployed, but the ledger could not record it: %s. "
            "Its intent entry is there: the next apply records the deploy and will not deploy this decision again.",
            decision["model"],
            normalized,
            error,
        )
    else:
        logger.warning("apply: KEPT the old model (decision %s) — %s", _kept_because(decision), decision["reason"])
    return result


def _apply_mlflow(
    envelope: Union[str, bytes, PathLike],
    trusted_keys: Sequence[Union[str, bytes, PathLike]],
    mlflow: str,
    registered_model: str,
    alias: str,
    model_version: Optional[str],
    target: Optional[str],
    ledger: PathLike,
    threshold: int,
    max_age: int,
    max_statement_size: int,
    dry_run: bool,
    restore: bool,
    ca_file: Optional[PathLike],
    insecure_tls: bool,
    signature: Optional[_Signature] = None,
) -> ApplyResult:
    """``apply`` to an MLflow registry alias (see ``apply``)."""
    staged = _Staged()
    try:
        env_path = staged.path(envelope, isinstance(envelope, str) and envelope.lstrip().startswith("{"))
        sig_path = None if signature is None or signature[0] is None else staged.path(signature[0], False)
        keys = [staged.path(k, isinstance(k, str) and k.lstrip().startswith("-----BEGIN")) for k in trusted_keys]
        if not keys:
            raise ValueError("trusted_keys: at least one trusted key")
        word, output = _core.apply_mlflow(
            env_path,
            keys,
            mlflow,
            registered_model,
            alias,
            model_version,
            target,
            os.fspath(ledger),
            threshold,
            max_age,
            max_statement_size,
            dry_run,
            restore,
            None if ca_file is None else os.fspath(ca_file),
            insecure_tls,
            _notify,
            trainer=signature is not None,
            model_signature=sig_path,
            trainer_pems=[] if signature is None else signature[1],
            root_pems=[] if signature is None else signature[2],
            trainer_identities=[] if signature is None else signature[3],
            sigstore_root=None if signature is None else signature[4],
        )
    finally:
        staged.close()
    out: Dict[str, Any] = json.loads(output)
    uri = f"models:/{registered_model}@{alias}"
    if word in ("restored", "unchanged"):
        logger.info("apply: %s %s → version %s", word.upper(), uri, out.get("version"))
        return ApplyResult(result=word, decision={}, unchanged=word == "unchanged", output=out)
    if word == "dry_run":
        return ApplyResult(result=word, decision=out, output=out)
    decision: Dict[str, Any] = out["decision"]
    if word == "deployed":
        logger.info("apply: DEPLOYED %s → version %s — %s", uri, out.get("version"), decision["reason"])
    else:
        logger.warning("apply: KEPT %s where it was (decision %s) — %s", uri, _kept_because(decision), decision["reason"])
    return ApplyResult(
        result=word,
        decision=decision,
        ledger=out.get("ledger"),
        unchanged=bool(out.get("unchanged", False)),
        output=out,
    )


def _kept_because(decision: Dict[str, Any]) -> str:
    """Why a verified decision keeps the old model: blocked, or inconclusive (never deploys)."""
    return "inconclusive" if decision.get("outcome") == "inconclusive" else "blocked"


def rollback(config: PathLike, ledger: Optional[PathLike] = None) -> RollbackResult:
    """Restores the config saved by the last ``apply`` (upstream's backup name, else
    ``NAME.backup``), as ``deploy-gate rollback``: under the config's lock and the ledger's,
    interrupted applies resolved first; the decision whose deploy is undone is recorded as
    rolled back in ``ledger`` (default: the one beside the config), so it is not applied
    again. Raises ``DeployError`` (no backup, a refused file, …; nothing restored unless the
    message says so)."""
    cfg, backup, legacy, ledger_path, recorded_in, decision = _core.rollback(
        os.fspath(config), None if ledger is None else os.fspath(ledger), _notify
    )
    return RollbackResult(
        config=cfg,
        backup=backup,
        legacy_backup=legacy,
        ledger=ledger_path,
        recorded_in=recorded_in,
        decision=decision,
    )


def deploy_model(
    config_path: str,
    trained_path: str,
    *,
    backend: str = "transformers",
    stage_model_map: Optional[Dict[str, str]] = None,
) -> Dict[str, object]:
    """Sets ``default_model`` (``trained_path`` normalised as upstream writes it), ``backend``
    and each named stage's ``model`` in the YAML config at ``config_path``: every other byte
    kept, the result parsed again and compared, the previous config saved as upstream's
    backup name (``serving.yml`` → ``serving.yaml.backup``), the config replaced atomically
    under its lock (two processes deploying at once are serialised; a crash leaves the old or
    the new config, and the backup is the config from before). Both paths must exist, as
    upstream's bridge requires. Returns ``{"changed", "config", "backup"}`` (``changed``
    False when the config held this deploy already; then no backup is written)."""
    if backend not in BACKENDS:
        raise ValueError(f"backend must be one of {', '.join(BACKENDS)}, not {backend!r}")
    if not os.path.exists(trained_path):
        raise FileNotFoundError(f"trained model not found: {trained_path}")
    if not os.path.exists(config_path):
        raise FileNotFoundError(f"config not found: {config_path}")
    stages = sorted((stage_model_map or {}).items())
    changed, config, backup = _core.deploy_config(
        os.fspath(config_path), os.fspath(trained_path), backend, stages, _notify, _FAIL_AT
    )
    return {"changed": changed, "config": config, "backup": backup}
