"""The native scan from Python: a progress callable hears increasing byte counts ending at the
total, and Ctrl-C (SIGINT) stops a scan of a large log with KeyboardInterrupt before it ends,
leaving no thread running."""

from __future__ import annotations

import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path
from typing import Any, List

import deploy_gate
from deploy_gate import DeploymentGate


def test_a_callable_progress_hears_the_scan_in_increasing_bytes(tmp_path: Path) -> None:
    from conftest import big_log
    log = big_log(tmp_path / "audit.jsonl", 60_000)
    size = log.stat().st_size
    for threads in (1, 2):
        calls: List[Any] = []
        ts = deploy_gate.build_test_set(log, max_samples=None, threads=threads,
                                        progress=lambda read, total, what: calls.append((read, total, what)))
        assert len(ts) == 60_000
        assert calls and all(c[1] == size and c[2] == "scan" for c in calls)
        assert [c[0] for c in calls] == sorted(c[0] for c in calls)
        assert calls[-1][0] == size
        assert len(calls) <= 101
    gate_calls: List[Any] = []
    DeploymentGate(progress=lambda r, t, w: gate_calls.append((r, t, w))).build_test_set(str(log), 1, 50)
    assert gate_calls[-1] == (size, size, "scan")


def _large_log(path: Path, pipelines: int) -> Path:
    with path.open("w", encoding="utf-8") as f:
        block = []
        for i in range(pipelines):
            block.append(
                f'{{"pipeline_id": "p{i:08d}", "template_id": "t/a", "stage_id": "decide", "stage_type": "llm", '
                f'"input": "a question that is long enough to be a realistic input {i}", "output": {{"v": "ok"}}}}\n'
                f'{{"pipeline_id": "p{i:08d}", "template_id": "t/a", "verdict": "PASS", "is_complete": true, '
                f'"error": null, "episode_reward": 0.5}}\n'
            )
            if len(block) == 10_000:
                f.write("".join(block))
                block.clear()
        f.write("".join(block))
    return path


CHILD = textwrap.dedent("""
    import os, sys, threading, time
    import deploy_gate
    def progress(read, total, what):
        print(f"progress {read} {total}", flush=True)
    try:
        deploy_gate.build_test_set(sys.argv[1], max_samples=None, threads=int(sys.argv[2]), progress=progress)
        print("finished", flush=True)
    except KeyboardInterrupt:
        at = time.monotonic()
        # (A joined thread's OS thread may take a moment to exit.)
        deadline = at + 5
        while len(os.listdir("/proc/self/task")) > 1 and time.monotonic() < deadline:
            time.sleep(0.01)
        tasks = len(os.listdir("/proc/self/task"))
        print(f"interrupted {threading.active_count()} {tasks} {at}", flush=True)
""")


def test_ctrl_c_stops_a_scan_of_a_large_log_cleanly(tmp_path: Path) -> None:
    log = _large_log(tmp_path / "large.jsonl", 1_500_000)
    size = log.stat().st_size
    for threads in ("1", "2"):
        p = subprocess.Popen([sys.executable, "-c", CHILD, str(log), threads], stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True)
        assert p.stdout is not None
        first = p.stdout.readline().split()
        assert first[0] == "progress", first
        sent = time.monotonic()
        p.send_signal(signal.SIGINT)
        out, err = p.communicate(timeout=120)
        lines = [first] + [line.split() for line in out.splitlines()]
        assert lines[-1][0] == "interrupted", (lines[-3:], err)
        _, python_threads, os_threads, at = lines[-1]
        # Stopped before the end of the scan, with no thread left: only the main one.
        seen = [int(x[1]) for x in lines if x[0] == "progress"]
        assert seen[-1] < size, (seen[-1], size)
        assert python_threads == "1" and os_threads == "1", lines[-1]
        assert p.returncode == 0, err
        print(f"threads={threads}: KeyboardInterrupt {float(at) - sent:.3f} s after SIGINT, "
              f"at {seen[-1]} of {size} bytes")
