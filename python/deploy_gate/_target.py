"""The module ``_endpoint`` had as its earlier name, kept so that what refers to it (a pickled
``Target``, an import of ``deploy_gate._target``) still finds it."""

from ._endpoint import Endpoint, RunResult, endpoint, run

Target = Endpoint
target = endpoint

__all__ = ["Endpoint", "Target", "RunResult", "endpoint", "target", "run"]
