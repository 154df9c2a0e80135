"""Exceptions of deploy_gate: unusable inputs name their file and, where there is one, the line."""

from __future__ import annotations

from typing import List, Optional

__all__ = [
    "InputError",
    "AuditFileError",
    "VerdictFileError",
    "TrajectoryFileError",
    "PolicyError",
    "EndpointFileError",
    "TargetFileError",
    "RunError",
    "DeployError",
    "SignError",
    "VerificationError",
]


class InputError(ValueError):
    """An input is unusable. ``file`` and ``line`` say where (``None`` when not known);
    ``role`` is the input's role (``audit``, ``old_verdicts``, ``new_verdicts``,
    ``old_trajectories``, ``new_trajectories``) or ``None`` for a policy."""

    def __init__(
        self,
        message: str,
        role: Optional[str] = None,
        file: Optional[str] = None,
        line: Optional[int] = None,
    ) -> None:
        super().__init__(message)
        self.role = role
        self.file = file
        self.line = line


class AuditFileError(InputError):
    """An audit log is unusable (it changed while it was read, is not valid gzip, …)."""


class VerdictFileError(InputError):
    """A verdict file (or a verdict mapping) is unusable: the message names the file and line."""


class TrajectoryFileError(InputError):
    """A trajectory-results file (or list) is unusable: the message names the file and line."""


class PolicyError(InputError):
    """A policy is invalid: the message names the field."""


class EndpointFileError(InputError):
    """An endpoint file (or a dict shaped as one) is refused: the message names the file
    (``endpoint (dict)`` for a dict), the line and the field, as ``deploy-gate run``'s; or a
    secret it names is not in the environment."""


#: ``EndpointFileError`` by its earlier name.
TargetFileError = EndpointFileError


class RunError(RuntimeError):
    """``deploy-gate run`` stopped (its message, ``exit_code``, and its stderr ``lines``), or a
    ``Endpoint`` called on one case got an error record for it (``exit_code`` 0: the message is
    the record's error)."""

    def __init__(self, message: str, exit_code: int = 0, lines: Optional[List[str]] = None) -> None:
        super().__init__(message)
        self.message = message
        self.exit_code = exit_code
        self.lines = list(lines or [])


class DeployError(RuntimeError):
    """A deploy stopped (the CLI's exit 1): the serving config could not be changed (not a YAML
    mapping, refused, unwritable, changed while it was written), the ledger could not be read or
    written, a deploy command failed, no backup to roll back to. Nothing was deployed unless the
    message says so (``NOT deployed: …`` says what was left as it was and how it is recorded).
    ``file`` is the config's path."""

    def __init__(
        self,
        message: str,
        role: Optional[str] = None,
        file: Optional[str] = None,
        line: Optional[int] = None,
    ) -> None:
        super().__init__(message)
        self.file = file
        self.line = line


class SignError(ValueError):
    """A report, key or digest cannot be signed or used (not a report, not a PEM key, …)."""

    def __init__(self, message: str, role: Optional[str] = None, file: Optional[str] = None, line: Optional[int] = None) -> None:
        super().__init__(message)


class VerificationError(Exception):
    """A signed decision did not verify, or ``apply`` refused it; ``check`` names the check that
    failed (``signature``, ``subject_digest``, ``target``, ``from_the_future``, ``replayed``,
    …), as ``deploy-gate verify`` and ``apply`` report it (exit code 2)."""

    def __init__(self, check: str, message: str) -> None:
        super().__init__(f"{check}: {message}")
        self.check = check
        self.message = message
