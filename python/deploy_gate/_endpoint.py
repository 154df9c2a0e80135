"""Models asked as ``deploy-gate run`` asks them: ``endpoint`` (an endpoint file, or a dict
shaped as one, as a runner the drop-in and ``evaluate`` accept; ``target`` is its earlier name)
and ``run`` (the two-model run).

The requests are made by the library's run engine, the one ``deploy-gate run`` calls (its HTTP
client: adaptive concurrency, retries with ``Retry-After``, the response cache, secrets
redacted), in this process through the native module (``_core.run_endpoints``): no
``deploy-gate`` binary is needed. Python writes the cases to a temporary test set, the engine
runs on a thread of its own with the GIL released, its lines (the header, the summary) are
logged on the logger ``deploy_gate`` and each record advances the progress display; Ctrl-C stops
it at its next turn, its records whole (the same call resumes), and raises
``KeyboardInterrupt``. The endpoint file is read first by the core's own reader, so a refused
one raises before anything runs, with the file, the line and the field."""

from __future__ import annotations

import json
import logging
import os
import re
import tempfile
import warnings
from typing import (
    Any,
    Dict,
    Iterator,
    List,
    Mapping,
    NamedTuple,
    Optional,
    Protocol,
    Sequence,
    Tuple,
    Union,
)

from . import _core
from ._progress import Progress, ProgressArg
from ._runners import ERROR, MISSING, VERDICT, Answer, verdict_answer
from .errors import InputError, RunError, EndpointFileError

__all__ = ["Endpoint", "Target", "RunResult", "endpoint", "target", "run"]

logger = logging.getLogger("deploy_gate")

PathLike = Union[str, "os.PathLike[str]"]
EndpointArg = Union[PathLike, Mapping[str, Any], "Endpoint"]
CacheArg = Union[None, bool, PathLike]


class _TestSetLike(Protocol):
    """A test set that writes itself as JSONL: ``deploy_gate.TestSet``."""

    def to_jsonl(self) -> str: ...


TestSetArg = Union[PathLike, _TestSetLike, Sequence[Mapping[str, Any]]]

#: An endpoint file's ``role`` on the errors about it: ``"target"`` (``"old_target"``,
#: ``"new_target"`` in a two-model run), its value before endpoint files had their name, kept
#: because code compares it.
ROLE = "target"

#: The name a dict endpoint has in messages (it has no file).
DICT_ENDPOINT_NAME = "endpoint (dict)"

# Header names whose value is a credential: in a dict endpoint their value must come from the
# environment (`${VAR}`), never be written in the dict.
_SECRET_HEADER = re.compile(r"auth|key|token|secret|cookie|password", re.IGNORECASE)


# ---------------------------------------------------------------------------- the engine


def _deprecated_cli(cli: Optional[PathLike]) -> None:
    """``cli=`` and ``DEPLOY_GATE_BIN`` are accepted and ignored: the run engine is in the
    native module."""
    if cli is not None:
        warnings.warn(
            "cli= is ignored: endpoints are run in this process by the native module (no deploy-gate binary is needed)",
            DeprecationWarning,
            stacklevel=3,
        )
    if os.environ.get("DEPLOY_GATE_BIN"):
        warnings.warn(
            "DEPLOY_GATE_BIN is ignored: endpoints are run in this process by the native module "
            "(no deploy-gate binary is needed)",
            DeprecationWarning,
            stacklevel=3,
        )


def _log_line(line: str) -> None:
    for part in line.split("\n"):
        logger.info("%s", part)


def _invoke(
    run_args: Dict[str, Any],
    inputs: Dict[str, Tuple[str, str]],
    progress: ProgressArg = False,
    total: int = 0,
) -> None:
    """Runs the engine as ``deploy-gate run`` would with ``run_args`` (``test_set``,
    ``endpoints``, ``outs``, ``order_seed``, ``cache``, ``no_cache``, ``policy_file``,
    ``outputs``), its
    lines logged on the logger ``deploy_gate`` and each record advancing ``progress`` (of
    ``total`` records). ``inputs`` maps the paths given to the engine to (the path to name,
    the role) for errors. Raises as ``_failure`` says when it fails, and ``KeyboardInterrupt``
    when Ctrl-C stopped it (its records whole: the same call resumes)."""
    logger.debug("deploy-gate run (in-process): %s", run_args)
    with Progress(progress, total, "run") as bar:

        def on_case(lane: int, errored: bool) -> None:
            bar.advance(1)

        message, _counts = _core.run_endpoints(
            on_line=_log_line, on_case=on_case if progress else None, **run_args
        )
    if message is not None:
        raise _failure(1, [f"deploy-gate: error: {message}"], inputs)


_AT_LINE = re.compile(r"^ line (\d+)\b")


def _failure(code: int, lines: List[str], inputs: Dict[str, Tuple[str, str]]) -> BaseException:
    """The exception of a failed run: the CLI's message (``deploy-gate: error: …``) as an
    ``InputError`` naming the file and line when it is about the test set, a
    ``EndpointFileError`` when about an endpoint file, ``FileNotFoundError``/``OSError`` when an input
    cannot be read, else a ``RunError``."""
    errors = [ln[len("deploy-gate: error: ") :] for ln in lines if ln.startswith("deploy-gate: error: ")]
    message = errors[-1] if errors else "\n".join(ln for ln in lines if ln.strip()) or f"exit status {code}"
    if code > 128:
        return RunError(f"deploy-gate run was interrupted (signal {code - 128}): {message}", code, lines)
    for given, (shown, role) in inputs.items():
        for prefix in (
            f"cannot read the test set {given}",
            f"cannot read the endpoint file {given}",
            f"cannot read the target file {given}",
        ):
            if message.startswith(prefix):
                text = message.replace(given, shown, 1)
                return FileNotFoundError(text) if "No such file" in text else OSError(text)
        rest = message[len(given) :] if message.startswith(given) else None
        if rest is not None and (rest.startswith(":") or rest.startswith(" line ")):
            m = _AT_LINE.match(rest)
            line = int(m.group(1)) if m is not None else None
            cls = EndpointFileError if role.endswith("target") else InputError
            return cls(shown + rest, role, shown, line)
    return RunError(message, code, lines)


# ---------------------------------------------------------------------------- cases and records


def _valid_id(value: Any) -> bool:
    if isinstance(value, bool):
        return False
    if isinstance(value, int):
        return -(1 << 63) <= value < (1 << 64)  # the CLI's integer ids (JSON's i64 and u64)
    return isinstance(value, str) and value != ""


def _id_key(value: Any) -> Tuple[bool, str]:
    """A pipeline id as the CLI matches it: ``5`` and ``"5"`` are two ids."""
    return (isinstance(value, int) and not isinstance(value, bool), str(value))


def _batch(cases: Sequence[Mapping[str, Any]]) -> Tuple[str, List[Tuple[bool, str]]]:
    """The test set's JSONL for ``cases`` and each case's id key. A list whose ids are not
    distinct non-empty strings or integers (the drop-in's hand-made test sets need none) is
    sent with ids by position (``"0"``, ``"1"``, …) instead."""
    ids = [c.get("pipeline_id") for c in cases]
    keys = [_id_key(i) for i in ids]
    positional = not all(_valid_id(i) for i in ids) or len(set(keys)) != len(keys)
    out: List[str] = []
    for n, case in enumerate(cases):
        row = dict(case)
        if positional:
            row["pipeline_id"] = str(n)
        out.append(json.dumps(row, ensure_ascii=False, allow_nan=False) + "\n")
    if positional:
        keys = [(False, str(n)) for n in range(len(cases))]
    return "".join(out), keys


def _records_of(data: bytes, keys: List[Tuple[bool, str]]) -> List[Dict[str, Any]]:
    """The verdict records of a run's output, in the order of ``keys``."""
    by_key: Dict[Tuple[bool, str], Dict[str, Any]] = {}
    # Records end in "\n" alone (str.splitlines would also break at characters a JSON string
    # may hold raw, such as U+2028).
    for line in data.decode("utf-8").split("\n"):
        if line.strip():
            record = json.loads(line)
            by_key[_id_key(record.get("pipeline_id"))] = record
    missing = [k for k in keys if k not in by_key]
    if missing:
        raise RunError(f"deploy-gate run left {len(missing)} of {len(keys)} cases without a record (first: {missing[0][1]!r})", 0, [])
    return [by_key[k] for k in keys]


def record_answer(record: Mapping[str, Any]) -> Answer:
    """A verdict record as the runner answers the drop-in scores: an error record is an errored
    case, a verdict is made text by the reference's ``str(v or "")`` (as the core reads a verdict
    file: ``9`` is ``"9"``, ``true`` is ``"True"``), ``null`` a missing verdict, and an object or
    an array an errored case (a verdict file's composite verdict fails its case too)."""
    if "error" in record and "verdict" not in record:
        return (ERROR, str(record["error"]))
    verdict = record.get("verdict")
    if isinstance(verdict, (dict, list)):
        return (ERROR, f"the verdict is a JSON {'object' if isinstance(verdict, dict) else 'array'}, not a verdict")
    if verdict is None:
        return (MISSING, "")
    return verdict_answer(verdict)


# ---------------------------------------------------------------------------- Endpoint


class Endpoint:
    """A model asked through its endpoint file, as ``deploy-gate run --endpoint`` asks it: made by
    ``deploy_gate.endpoint(path_or_dict)`` (``Target`` is its earlier name).

    A runner like any other: ``DeploymentGate.score_model`` / ``compare_models`` /
    ``evaluate_decision`` and ``deploy_gate.evaluate`` recognise it and send the whole test set
    through one run of the engine ``deploy-gate run`` uses (both models in one run when old and
    new are endpoints with the same settings), and ``evaluate`` reads the CLI's verdict file as ``deploy-gate evaluate``
    would. Called directly, ``t(input_text)`` (or ``t(case_dict)``) runs a one-case batch and
    returns the verdict (``None`` for none), raising ``RunError`` with the record's error when
    the case errored.

    ``kind`` (``openai-chat``, ``http``, ``command``), ``description``, ``digest`` (the
    endpoint file's ``sha256:…``, as each record's ``target`` field), ``env`` (the environment variables its
    secrets come from), ``file`` (``None`` for a dict)."""

    def __init__(
        self,
        file: Optional[str],
        text: Optional[str],
        kind: str,
        description: str,
        digest: str,
        env: List[str],
        cache: CacheArg,
        order_seed: int,
        cli: Optional[PathLike],
        progress: ProgressArg = False,
    ) -> None:
        self.file = file
        self._text = text
        self.kind = kind
        self.description = description
        self.digest = digest
        self.env = env
        self.cache = cache
        self.order_seed = order_seed
        self.cli = cli
        self.progress = progress

    def __repr__(self) -> str:
        where = self.file if self.file is not None else "dict"
        return f"Endpoint({self.kind}: {self.description}, {where}, {self.digest[:19]})"

    def _path_in(self, folder: str, name: str) -> str:
        """The endpoint file to give the engine (a dict's JSON written into ``folder``)."""
        if self.file is not None:
            return self.file
        assert self._text is not None
        path = os.path.join(folder, name)
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(self._text)
        return path

    def _same_run(self, other: "Endpoint") -> bool:
        """Whether two endpoints can share one two-model run (the run's settings are one)."""
        return (self.cache, self.order_seed) == (other.cache, other.order_seed)

    def __call__(self, case: Any) -> Any:
        """Asks the model one case: ``case`` is the input text (as the reference's runners
        get it) or a test case dict. Returns the verdict (any JSON value; ``None`` for none)."""
        if isinstance(case, Mapping):
            row = dict(case)
            if not _valid_id(row.get("pipeline_id")):
                row["pipeline_id"] = "0"
        else:
            row = {"pipeline_id": "0", "input_text": case}
        record = _run_endpoints([self], [row])[0][0]
        if "error" in record and "verdict" not in record:
            raise RunError(str(record["error"]), 0, [])
        return record.get("verdict")

    def answers(self, cases: Sequence[Mapping[str, Any]]) -> List[Answer]:
        """The answers to ``cases`` (one run), as ``(kind, text)`` pairs the core scores."""
        return [record_answer(r) for r in self.records(cases)]

    def records(self, cases: Sequence[Mapping[str, Any]]) -> List[Dict[str, Any]]:
        """Runs the model over ``cases`` (test case dicts) in one ``deploy-gate run`` and
        returns its verdict records in case order (``pipeline_id``, ``verdict`` or ``error``,
        ``output`` (what the model answered, and ``output_truncated`` when it was cut),
        ``latency_ms``, ``usage``, ``attempts``, ``target``, and ``metrics`` when a command
        endpoint's worker answered with them)."""
        return _run_endpoints([self], cases)[0]


def run_batch(endpoints: List[Endpoint], jsonl: str, keys: List[Tuple[bool, str]]) -> List[bytes]:
    """One ``deploy-gate run`` of one endpoint (``--endpoint``) or two (``--old``/``--new``, each
    case sent to both together) over the test set ``jsonl`` (whose cases' ids are ``keys``);
    the bytes of each endpoint's verdict file (every case has its record, in test-set order).
    Raises ``RunError`` when a case has no record."""
    first = endpoints[0]
    _deprecated_cli(first.cli)
    with tempfile.TemporaryDirectory(prefix="deploy-gate-run-") as folder:
        test_set = os.path.join(folder, "cases.jsonl")
        with open(test_set, "w", encoding="utf-8") as f:
            f.write(jsonl)
        outs = [os.path.join(folder, f"out-{i}.jsonl") for i in range(len(endpoints))]
        files = [t._path_in(folder, f"endpoint-{i}.json") for i, t in enumerate(endpoints)]
        # A batch's outputs live in a temporary folder: a cache is kept only where one is named.
        cache = first.cache
        cache_dir = None if cache is None or isinstance(cache, bool) else os.fspath(cache)
        run_args: Dict[str, Any] = {
            "test_set": test_set,
            "endpoints": files,
            "outs": outs,
            "order_seed": int(first.order_seed),
            "cache": cache_dir,
            "no_cache": cache_dir is None,
        }
        inputs = {test_set: ("the cases", "test_set")}
        for name, t in zip(files, endpoints):
            inputs[name] = (t.file if t.file is not None else DICT_ENDPOINT_NAME, ROLE)
        _invoke(run_args, inputs, first.progress, len(keys) * len(endpoints))
        out: List[bytes] = []
        for path in outs:
            with open(path, "rb") as f:
                data = f.read()
            _records_of(data, keys)  # every case has its record
            out.append(data)
        return out


def _run_endpoints(endpoints: List[Endpoint], cases: Sequence[Mapping[str, Any]]) -> List[List[Dict[str, Any]]]:
    """``run_batch`` over case dicts; each endpoint's records in case order."""
    if not cases:
        return [[] for _ in endpoints]
    jsonl, keys = _batch(cases)
    return [_records_of(data, keys) for data in run_batch(endpoints, jsonl, keys)]


# ---------------------------------------------------------------------------- endpoint()


def _check_dict_secrets(spec: Mapping[str, Any]) -> None:
    """A dict endpoint names its secrets' environment variables only: ``api_key_env`` is a
    variable's name (the core checks), and a credential header's value is ``${VAR}``."""
    headers = spec.get("headers")
    if isinstance(headers, Mapping):
        for name, value in headers.items():
            if isinstance(name, str) and _SECRET_HEADER.search(name):
                if not (isinstance(value, str) and "${" in value):
                    raise EndpointFileError(
                        f"{DICT_ENDPOINT_NAME}: headers.{name}: a credential is read from the environment: "
                        "write ${VARIABLE} (or api_key_env: VARIABLE), never the value itself",
                        ROLE,
                        DICT_ENDPOINT_NAME,
                        None,
                    )


def endpoint(
    spec: EndpointArg,
    *,
    cache: CacheArg = False,
    order_seed: int = 0,
    cli: Optional[PathLike] = None,
    progress: ProgressArg = False,
) -> Endpoint:
    """A model's endpoint as a runner: ``spec`` is an endpoint file's path (YAML or JSON, as
    ``deploy-gate run --endpoint`` reads it) or a dict shaped as one (``{"kind": "openai-chat",
    "base_url": …, "model": …, "messages": […], "api_key_env": "OPENAI_API_KEY"}``).

    The endpoint is read now by the core's reader (the CLI's): a refused one raises
    ``EndpointFileError`` naming the file (``endpoint (dict)`` for a dict), the line and the field.
    Secrets come from the environment when the model is asked: ``api_key_env`` and ``${VAR}``
    in headers name variables; a dict holding a credential header's value is refused.

    ``cache``: ``False`` (default: every case asked again), or a folder for the CLI's response
    cache (``--cache DIR``: an answer cached there is reused). ``order_seed``: the seed of the
    cases' order (``--order-seed``). ``progress``: ``False`` (default), ``True`` (a tqdm bar of
    the records when tqdm is installed) or a callable ``progress(done, total, "run")``. The
    model is asked in this process (the GIL released while it runs); ``cli`` is ignored (with a
    ``DeprecationWarning``)."""
    _deprecated_cli(cli)
    if isinstance(spec, Endpoint):
        return Endpoint(
            spec.file, spec._text, spec.kind, spec.description, spec.digest, spec.env, cache, order_seed, None,
            progress,
        )
    if isinstance(spec, Mapping):
        _check_dict_secrets(spec)
        body = dict(spec)
        tls_ca = body.get("tls_ca")
        if isinstance(tls_ca, str) and tls_ca and not os.path.isabs(tls_ca):
            # Relative to the endpoint file's folder in the CLI; a dict has none: the working directory.
            body["tls_ca"] = os.path.abspath(tls_ca)
        try:
            text = json.dumps(body, indent=2, ensure_ascii=False, allow_nan=False) + "\n"
        except (TypeError, ValueError) as exc:
            raise EndpointFileError(f"{DICT_ENDPOINT_NAME}: not JSON ({exc})", ROLE, DICT_ENDPOINT_NAME, None) from None
        kind, description, digest, env = _core.read_endpoint(DICT_ENDPOINT_NAME, text.encode("utf-8"))
        return Endpoint(None, text, kind, description, digest, env, cache, order_seed, None, progress)
    if isinstance(spec, (str, os.PathLike)):
        path = os.fspath(spec)
        with open(path, "rb") as f:
            data = f.read((1 << 20) + 1)
        kind, description, digest, env = _core.read_endpoint(path, data)
        return Endpoint(path, None, kind, description, digest, env, cache, order_seed, None, progress)
    raise TypeError(f"endpoint: an endpoint file's path or a dict, not {type(spec).__name__}")


#: ``endpoint`` by its earlier name (the endpoint file was a "target file").
target = endpoint


# ---------------------------------------------------------------------------- run()


class RunResult(NamedTuple):
    """The two verdict files ``run`` wrote (JSONL of ``{pipeline_id, verdict|error, …}``):
    unpack as ``old, new = deploy_gate.run(…)``; ``records("old")`` reads one."""

    old: str
    new: str

    def records(self, side: str) -> List[Dict[str, Any]]:
        """The records of ``side`` (``"old"`` or ``"new"``), in the test set's order."""
        if side not in ("old", "new"):
            raise ValueError(f"side must be 'old' or 'new', not {side!r}")
        with open(self.old if side == "old" else self.new, encoding="utf-8", newline="\n") as f:
            return [json.loads(line) for line in f if line.strip()]

    def verdicts(self, side: str) -> Iterator[Tuple[Any, Any]]:
        """``(pipeline_id, verdict)`` of ``side``'s records (``None`` for an error)."""
        for r in self.records(side):
            yield r["pipeline_id"], r.get("verdict")


def _as_endpoint(value: EndpointArg, role: str) -> Endpoint:
    if isinstance(value, Endpoint):
        return value
    if isinstance(value, (str, os.PathLike, Mapping)):
        return endpoint(value)
    raise TypeError(f"{role}: an endpoint file's path, a dict or an Endpoint, not {type(value).__name__}")


def run(
    test_set: TestSetArg,
    old: EndpointArg,
    new: EndpointArg,
    out_old: Optional[PathLike] = None,
    out_new: Optional[PathLike] = None,
    order_seed: int = 0,
    cache: CacheArg = None,
    *,
    policy: Optional[Union[PathLike, Mapping[str, Any]]] = None,
    cli: Optional[PathLike] = None,
    progress: ProgressArg = False,
    outputs: bool = True,
) -> RunResult:
    """Runs the old and the new model over the test set, as ``deploy-gate run --test-set FILE
    --old OLD --new NEW --out-old FILE --out-new FILE``: each case sent to both together, in an
    order shuffled by ``order_seed``; an interrupted run resumes from the records the output
    files hold. ``policy``: a sequential policy (a policy file's path, or its dict, with
    ``"sequential": True``), as ``run --policy``: the cases go in its seed's order, at most its
    budget, and the run stops sending as soon as the decision is reached.

    ``test_set``: a test set's path (JSONL, as ``deploy-gate test-set`` writes it), a
    ``TestSet``, or a list of case dicts. ``old`` / ``new``: endpoint files' paths, dicts shaped
    as endpoint files, or ``Endpoint`` objects. ``out_old`` / ``out_new``: the verdict files to
    write (default: ``old.jsonl`` and ``new.jsonl`` in a new temporary folder, yours to
    remove). ``cache``: ``None`` (the CLI's default: ``.deploy-gate-cache`` beside
    ``out_old``), a folder, or ``False`` (``--no-cache``). ``progress``: ``False`` (default),
    ``True`` (a tqdm bar of the records when tqdm is installed) or a callable ``progress(done,
    total, "run")``. ``outputs``: ``False`` keeps none of the models' answers in the records
    (``--no-outputs``); by default each record keeps what its model answered (``output``, as its
    endpoint file bounds it). ``cli`` is ignored (with a ``DeprecationWarning``): the run is made in this
    process by the native module, the GIL released; Ctrl-C stops it, its records whole (the
    same call resumes), and raises ``KeyboardInterrupt``.

    Returns a ``RunResult`` (the two paths; ``records(side)``). A refused endpoint file raises
    ``EndpointFileError``, an unusable test set ``InputError`` (both with the CLI's message naming
    the file, the line and the field), a missing file ``FileNotFoundError``, any other failure
    ``RunError`` with the CLI's message. The lines the CLI prints (its header and summary) are
    logged on the logger ``deploy_gate``."""
    old_t, new_t = _as_endpoint(old, "old"), _as_endpoint(new, "new")
    _deprecated_cli(cli)
    folder: Optional[str] = None
    if out_old is None or out_new is None:
        folder = tempfile.mkdtemp(prefix="deploy-gate-run-")
    old_path = os.fspath(out_old) if out_old is not None else os.path.join(folder or "", "old.jsonl")
    new_path = os.fspath(out_new) if out_new is not None else os.path.join(folder or "", "new.jsonl")
    with tempfile.TemporaryDirectory(prefix="deploy-gate-run-") as scratch:
        inputs: Dict[str, Tuple[str, str]] = {}
        if isinstance(test_set, (str, os.PathLike)):
            ts_path = os.fspath(test_set)
            inputs[ts_path] = (ts_path, "test_set")
        else:
            ts_path = os.path.join(scratch, "cases.jsonl")
            to_jsonl = getattr(test_set, "to_jsonl", None)
            text = to_jsonl() if callable(to_jsonl) else _batch_text(test_set)
            with open(ts_path, "w", encoding="utf-8") as f:
                f.write(text)
            inputs[ts_path] = ("the test set", "test_set")
        files = [old_t._path_in(scratch, "old-endpoint.json"), new_t._path_in(scratch, "new-endpoint.json")]
        for f_, t, side in zip(files, (old_t, new_t), ("old", "new")):
            inputs.setdefault(f_, (t.file if t.file is not None else f"{side} {DICT_ENDPOINT_NAME}", f"{side}_{ROLE}"))
        run_args: Dict[str, Any] = {
            "test_set": ts_path,
            "endpoints": files,
            "outs": [old_path, new_path],
            "order_seed": int(order_seed),
            "outputs": bool(outputs),
        }
        if policy is not None:
            if isinstance(policy, Mapping):
                policy_path = os.path.join(scratch, "policy.json")
                with open(policy_path, "w", encoding="utf-8") as f:
                    json.dump(dict(policy), f)
                inputs[policy_path] = ("the policy", "policy")
            else:
                policy_path = os.fspath(policy)
                inputs[policy_path] = (policy_path, "policy")
            run_args["policy_file"] = policy_path
        if cache is False:
            run_args["no_cache"] = True
        elif cache is not None and cache is not True:
            run_args["cache"] = os.fspath(cache)
        total = 0
        if progress:
            with open(ts_path, "rb") as f:
                total = 2 * sum(1 for line in f if line.strip())
        _invoke(run_args, inputs, progress, total)
    return RunResult(old_path, new_path)


def _batch_text(cases: Any) -> str:
    rows = list(cases)
    for i, c in enumerate(rows):
        if not isinstance(c, Mapping):
            raise TypeError(f"test_set[{i}]: a case dict, not {type(c).__name__}")
    return "".join(json.dumps(dict(c), ensure_ascii=False, allow_nan=False) + "\n" for c in rows)


#: ``Endpoint`` by its earlier name.
Target = Endpoint
