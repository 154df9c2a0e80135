"""Progress display: tqdm when it is installed, a callable ``progress(done, total, what)``, or
nothing. Thread-safe (runners on a pool report from their threads)."""

from __future__ import annotations

import threading
from typing import Any, Callable, Optional, Union

ProgressArg = Union[bool, None, Callable[[int, int, str], Any]]


class Progress:
    """Counts work done towards a total and shows it."""

    def __init__(self, arg: ProgressArg, total: int, what: str) -> None:
        self._lock = threading.Lock()
        self._done = 0
        self._total = total
        self._what = what
        self._callback: Optional[Callable[[int, int, str], Any]] = None
        self._bar: Any = None
        if callable(arg):
            self._callback = arg
        elif arg:
            try:
                from tqdm.auto import tqdm
            except ImportError:
                tqdm = None
            if tqdm is not None:
                self._bar = tqdm(total=total, desc=what, unit="case", leave=False)

    def advance(self, n: int) -> None:
        with self._lock:
            self._done += n
            done = self._done
            if self._bar is not None:
                self._bar.update(n)
        if self._callback is not None:
            self._callback(done, self._total, self._what)

    def close(self) -> None:
        if self._bar is not None:
            self._bar.close()
            self._bar = None

    def __enter__(self) -> "Progress":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
