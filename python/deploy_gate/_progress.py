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


class ScanProgress:
    """The progress of a native scan of audit logs, told ``(bytes read, total bytes)`` by the
    native module at a bounded rate (every 50 ms at most, on a change): a tqdm bar in bytes when
    tqdm is installed and ``arg`` is true, ``arg(read, total, "scan")`` when ``arg`` is a
    callable, else nothing. Use as a context manager (the bar is closed at the end)."""

    def __init__(self, arg: ProgressArg, what: str = "scan") -> None:
        self._arg = arg
        self._what = what
        self._bar: Any = None
        self._shown = 0

    def callback(self) -> Optional[Callable[[int, int], None]]:
        """What the native module calls, or ``None`` when nothing is shown."""
        if callable(self._arg) or self._arg:
            return self
        return None

    def __call__(self, read: int, total: int) -> None:
        if callable(self._arg):
            self._arg(read, total, self._what)
            return
        if self._bar is None:
            try:
                from tqdm.auto import tqdm
            except ImportError:
                self._arg = False
                return
            self._bar = tqdm(total=total, desc=self._what, unit="B", unit_scale=True, unit_divisor=1024,
                             leave=False)
        self._bar.update(read - self._shown)
        self._shown = read

    def close(self) -> None:
        if self._bar is not None:
            self._bar.close()
            self._bar = None

    def __enter__(self) -> "ScanProgress":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
