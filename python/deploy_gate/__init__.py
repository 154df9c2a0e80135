"""deploy-gate for Python: gate the deployment of a retrained agent model in-process.

- The reference's API as a drop-in: ``from deploy_gate import DeploymentGate, GateDecision,
  ABComparison`` (runner callables ``fn(input_text) -> verdict``; trajectory results as
  objects or dicts).
- Beyond it: ``evaluate`` (verdict files, mappings, sync or async runners) returning a
  ``Report`` whose ``to_json()`` is byte for byte the CLI's ``evaluate --out``;
  ``build_test_set`` (the CLI's ``test-set``); ``sign``, ``verify`` and ``digest`` (signed
  decisions, as the CLI's); ``apply`` and ``rollback`` (a signed decision deployed exactly
  once with the ledger, as the CLI's); ``diff`` (two evaluations compared, as ``deploy-gate
  diff``); ``endpoint`` and ``run`` (models asked as ``deploy-gate run`` asks them, by the same
  engine in this process: endpoint files or dicts as runners, and the two-model run;
  ``target`` is ``endpoint``'s earlier name). Installing the package also installs the
  ``deploy-gate`` command (the same CLI, ``python -m deploy_gate`` too).

Every score, rounding, delta, decision and reason comes from deploy-gate's Rust core.
"""

from __future__ import annotations

import importlib as _importlib
from typing import TYPE_CHECKING as _TYPE_CHECKING

from ._core import core_version as _core_version
from .errors import (
    AuditFileError,
    DeployError,
    EndpointFileError,
    InputError,
    PolicyError,
    RunError,
    SignError,
    TargetFileError,
    TrajectoryFileError,
    VerdictFileError,
    VerificationError,
)

# The API's modules are imported when a name of theirs is first used, not with the package: the
# ``deploy-gate`` command (``deploy_gate._cli``) needs only the extension, and importing them all
# (asyncio, dataclasses, json…) took 155 ms of every command's start. ``from deploy_gate import
# X`` and ``deploy_gate.X`` give the same objects as before.
_LAZY = {
    "digest": "._attest",
    "sign": "._attest",
    "verify": "._attest",
    "ABComparison": "._decision",
    "GateDecision": "._decision",
    "ApplyResult": "._deploy",
    "RollbackResult": "._deploy",
    "apply": "._deploy",
    "deploy_model": "._deploy",
    "rollback": "._deploy",
    "diff": "._diff",
    "Report": "._evaluate",
    "TestSet": "._evaluate",
    "build_test_set": "._evaluate",
    "evaluate": "._evaluate",
    "DeploymentGate": "._gate",
    "Endpoint": "._endpoint",
    "RunResult": "._endpoint",
    "Target": "._endpoint",
    "endpoint": "._endpoint",
    "run": "._endpoint",
    "target": "._endpoint",
}

if _TYPE_CHECKING:
    from ._attest import digest, sign, verify
    from ._decision import ABComparison, GateDecision
    from ._deploy import ApplyResult, RollbackResult, apply, deploy_model, rollback
    from ._diff import diff
    from ._endpoint import Endpoint, RunResult, Target, endpoint, run, target
    from ._evaluate import Report, TestSet, build_test_set, evaluate
    from ._gate import DeploymentGate
else:
    # At run time only: a type checker sees the imports above, and a misspelt name stays an error.

    def __getattr__(name: str) -> object:
        module = _LAZY.get(name)
        if module is None:
            raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
        value = getattr(_importlib.import_module(module, __name__), name)
        globals()[name] = value
        return value

    def __dir__() -> list[str]:
        return sorted(set(globals()) | set(_LAZY))


__version__ = _core_version()

__all__ = [
    "ABComparison",
    "ApplyResult",
    "AuditFileError",
    "DeployError",
    "DeploymentGate",
    "Endpoint",
    "EndpointFileError",
    "GateDecision",
    "InputError",
    "PolicyError",
    "Report",
    "RollbackResult",
    "RunError",
    "RunResult",
    "SignError",
    "Target",
    "TargetFileError",
    "TestSet",
    "TrajectoryFileError",
    "VerdictFileError",
    "VerificationError",
    "apply",
    "build_test_set",
    "deploy_model",
    "diff",
    "digest",
    "endpoint",
    "evaluate",
    "rollback",
    "run",
    "sign",
    "target",
    "verify",
]
