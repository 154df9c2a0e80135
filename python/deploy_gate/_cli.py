"""The ``deploy-gate`` command the package installs (``[project.scripts]``), and ``python -m
deploy_gate``: the core crate's CLI run in this process, so a Python team has ``verify``,
``apply`` and every other subcommand without Rust. The same flags, outputs and exit codes as
the native binary; during ``run``, Ctrl-C and SIGTERM stop the run as they stop the binary's
(records kept whole, exit code 130 or 143)."""

from __future__ import annotations

import os
import signal
import sys
from typing import List, Optional

from . import _core

__all__ = ["main"]


def main(argv: Optional[List[str]] = None) -> None:
    """Runs ``deploy-gate`` with ``argv`` (default: this process's arguments after the program's
    name) and exits with its exit code."""
    args = list(sys.argv[1:] if argv is None else argv)
    # Outside `run`, Ctrl-C ends the command as it ends the binary (no traceback): Python's own
    # SIGINT handler would only run once the command has returned. An ignored SIGINT (a job in the
    # background of a script) stays ignored, as the binary leaves it.
    if signal.getsignal(signal.SIGINT) is signal.default_int_handler:
        signal.signal(signal.SIGINT, signal.SIG_DFL)
    # What Python printed before (nothing, normally) comes first; a closed stream is None.
    for stream in (sys.stdout, sys.stderr):
        if stream is not None:
            stream.flush()
    argv0 = os.path.basename(sys.argv[0]) if sys.argv and sys.argv[0] else "deploy-gate"
    if argv0 in ("__main__.py", "-c", "-m", ""):
        argv0 = "deploy-gate"
    code = _core.cli_main([argv0, *args])
    sys.exit(code)
