"""The deploy step without a signed decision (``DeploymentGate.apply_decision``'s default):
the upstream bridge's change to the serving config, made by deploy-gate's native deploy code."""

from __future__ import annotations

import os
from typing import Dict, Optional

from . import _core

__all__ = ["deploy_model"]

BACKENDS = ("transformers", "vllm", "api")


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
    under its lock. Both paths must exist, as upstream's bridge requires. Returns
    ``{"changed", "config", "backup"}`` (``changed`` False when the config held this deploy
    already; then no backup is written)."""
    if backend not in BACKENDS:
        raise ValueError(f"backend must be one of {', '.join(BACKENDS)}, not {backend!r}")
    if not os.path.exists(trained_path):
        raise FileNotFoundError(f"trained model not found: {trained_path}")
    if not os.path.exists(config_path):
        raise FileNotFoundError(f"config not found: {config_path}")
    stages = sorted((stage_model_map or {}).items())
    changed, config, backup = _core.deploy_config(os.fspath(config_path), os.fspath(trained_path), backend, stages)
    return {"changed": changed, "config": config, "backup": backup}
