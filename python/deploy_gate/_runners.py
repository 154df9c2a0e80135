"""Running a model over test cases: the reference's runner contract, on the calling thread, a
thread pool or an event loop. The answers go to the core as verdict records; nothing here
scores or compares."""

from __future__ import annotations

import asyncio
import concurrent.futures
import inspect
import json
import logging
import os
import threading
from typing import Any, Awaitable, Callable, List, Mapping, Optional, Sequence, Tuple

from ._progress import Progress

logger = logging.getLogger("deploy_gate")

# The kinds of answer the core takes (see deploy_gate._core.Session.add_answers).
VERDICT, MISSING, ERROR = 0, 1, 2

Answer = Tuple[int, str]
# ``evaluate()``'s runners: the answer, and what the model answered as JSON text (or None).
Kept = Tuple[int, str, Optional[str]]


def verdict_answer(produced: Any) -> Answer:
    """The reference's rule for what a runner returned: ``None`` is a miss, anything else is
    made text with Python's own ``str(v or "")`` (upper-casing is the core's, which is
    Python's ``str.upper``)."""
    if produced is None:
        return (MISSING, "")
    return (VERDICT, str(produced or ""))


def output_json(value: Any) -> str:
    """What a model answered as the JSON text its record keeps: the value as JSON, or its
    ``str()`` as a JSON string when it is not JSON (an object of another kind, a NaN)."""
    try:
        text = json.dumps(value, ensure_ascii=False, allow_nan=False)
    except (TypeError, ValueError):
        text = json.dumps(str(value), ensure_ascii=False)
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:  # a lone surrogate: JSON's \ud83d escape, which is valid JSON
        text = json.dumps(json.loads(text), ensure_ascii=True)
    return text


def kept_answer(produced: Any) -> Kept:
    """``evaluate()``'s rule for what a runner returned: a mapping with ``"verdict"`` or
    ``"output"`` gives its verdict (by the reference's rule: a missing or ``None`` verdict is a
    miss) and keeps its output (any JSON value: the model's text, a response object, a
    transcript); anything else is a verdict as ``verdict_answer`` makes it, with no output.
    (The drop-in ``DeploymentGate`` keeps the reference's rule for every return value.)"""
    if isinstance(produced, Mapping) and ("verdict" in produced or "output" in produced):
        kind, text = verdict_answer(produced.get("verdict"))
        return (kind, text, output_json(produced["output"]) if "output" in produced else None)
    kind, text = verdict_answer(produced)
    return (kind, text, None)


def error_answer(exc: BaseException) -> Answer:
    """A runner that raised: a failed case, with the exception as its error."""
    return (ERROR, f"{type(exc).__name__}: {exc}")


def _logged(pipeline_id: Any, exc: BaseException, where: str) -> Answer:
    logger.warning("%s: runner raised on %s: %s", where, pipeline_id, exc)
    return error_answer(exc)


def call_runner(
    fn: Callable[[Any], Any],
    case_input: Any,
    pipeline_id: Any,
    where: str,
    convert: Callable[[Any], Any] = verdict_answer,
) -> Any:
    """One call of a synchronous runner, as the reference makes it (``convert``: how its return
    value becomes an answer)."""
    try:
        produced = fn(case_input)
        return convert(produced)
    except Exception as exc:  # a crash is a failed case, never a crash of the gate
        return _logged(pipeline_id, exc, where)


def is_async_runner(fn: Any) -> bool:
    """True for an ``async def`` function (or an object whose ``__call__`` is one)."""
    if inspect.iscoroutinefunction(fn):
        return True
    call = getattr(fn, "__call__", None)
    return call is not None and inspect.iscoroutinefunction(call)


def run_sequential(
    fn: Callable[[Any], Any],
    cases: Sequence[Tuple[Any, Any]],
    where: str,
    progress: Optional[Progress] = None,
    convert: Callable[[Any], Any] = verdict_answer,
) -> List[Any]:
    """Runs ``fn`` over ``(pipeline_id, input)`` pairs in order, on this thread."""
    out: List[Any] = []
    for pid, case_input in cases:
        out.append(call_runner(fn, case_input, pid, where, convert))
        if progress is not None:
            progress.advance(1)
    return out


def _run_chunk(
    fn: Callable[[Any], Any],
    chunk: Sequence[Tuple[Any, Any]],
    where: str,
    progress: Optional[Progress],
    stop: threading.Event,
    convert: Callable[[Any], Any],
) -> List[Any]:
    out: List[Any] = []
    for pid, case_input in chunk:
        if stop.is_set():
            break
        out.append(call_runner(fn, case_input, pid, where, convert))
    if progress is not None:
        progress.advance(len(out))
    return out


def run_threads(
    fn: Callable[[Any], Any],
    cases: Sequence[Tuple[Any, Any]],
    max_workers: Optional[int],
    where: str,
    progress: Optional[Progress] = None,
    convert: Callable[[Any], Any] = verdict_answer,
) -> List[Any]:
    """Runs ``fn`` over the cases on a pool of ``max_workers`` threads (``None``: Python's
    default), handing each thread runs of consecutive cases (a future per case costs more
    than a trivial runner). Answers come back in case order. KeyboardInterrupt stops the
    runs at their next case and is raised again once the running calls return."""
    if max_workers is not None and max_workers <= 1:
        return run_sequential(fn, cases, where, progress, convert)
    pool = concurrent.futures.ThreadPoolExecutor(max_workers=max_workers, thread_name_prefix="deploy-gate-runner")
    workers = max_workers or min(32, (os.cpu_count() or 1) + 4)  # the pool's own default
    size = max(1, min(256, len(cases) // (workers * 8) or 1))
    chunks = [cases[i : i + size] for i in range(0, len(cases), size)]
    stop = threading.Event()
    try:
        futures = [pool.submit(_run_chunk, fn, chunk, where, progress, stop, convert) for chunk in chunks]
        out: List[Any] = []
        for future in futures:
            out.extend(future.result())
    except BaseException:
        stop.set()
        pool.shutdown(wait=True, cancel_futures=True)
        raise
    pool.shutdown(wait=True)
    return out


async def _run_async(
    fn: Callable[[Any], Awaitable[Any]],
    cases: Sequence[Tuple[Any, Any]],
    max_concurrency: int,
    where: str,
    progress: Optional[Progress],
    convert: Callable[[Any], Any],
) -> List[Any]:
    # max_concurrency workers take the next case as they finish one (cheaper than a task and
    # a semaphore per case).
    out: List[Any] = [None] * len(cases)
    next_case = iter(range(len(cases)))

    async def worker() -> None:
        for i in next_case:
            pid, case_input = cases[i]
            try:
                answer = convert(await fn(case_input))
            except Exception as exc:
                answer = _logged(pid, exc, where)
            out[i] = answer
            if progress is not None:
                progress.advance(1)

    tasks = [asyncio.ensure_future(worker()) for _ in range(min(max_concurrency, len(cases)))]
    try:
        await asyncio.gather(*tasks)
    except BaseException:
        for t in tasks:
            t.cancel()
        raise
    return [a if a is not None else convert(None) for a in out]


def run_async(
    fn: Callable[[Any], Awaitable[Any]],
    cases: Sequence[Tuple[Any, Any]],
    max_concurrency: Optional[int],
    where: str,
    progress: Optional[Progress] = None,
    convert: Callable[[Any], Any] = verdict_answer,
) -> List[Any]:
    """Runs an ``async def`` runner over the cases, at most ``max_concurrency`` (default 64)
    at a time, on a new event loop. Where this thread already runs a loop (a notebook), the
    new loop runs on a thread of its own and this call waits for it."""
    limit = 64 if max_concurrency is None else max(1, int(max_concurrency))
    coro_args = (fn, cases, limit, where, progress, convert)
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(_run_async(*coro_args))
    result: List[List[Any]] = []
    failure: List[BaseException] = []

    def target() -> None:
        try:
            result.append(asyncio.run(_run_async(*coro_args)))
        except BaseException as exc:  # handed to the caller's thread
            failure.append(exc)

    thread = threading.Thread(target=target, name="deploy-gate-async-runner", daemon=True)
    thread.start()
    thread.join()
    if failure:
        raise failure[0]
    return result[0]


def run_runner(
    fn: Any,
    cases: Sequence[Tuple[Any, Any]],
    max_workers: Optional[int],
    max_concurrency: Optional[int],
    where: str,
    progress: Optional[Progress] = None,
    convert: Callable[[Any], Any] = verdict_answer,
) -> List[Any]:
    """A sync runner on a thread pool, an async one on an event loop; ``convert`` makes each
    return value an answer (``verdict_answer``, or ``kept_answer`` for ``evaluate()``)."""
    if is_async_runner(fn):
        return run_async(fn, cases, max_concurrency, where, progress, convert)
    return run_threads(fn, cases, max_workers, where, progress, convert)
