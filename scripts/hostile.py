#!/usr/bin/env python3
"""Writes the hostile audit logs the memory and time bounds in docs/performance.md were measured on.

    python3 scripts/hostile.py KIND SIZE > FILE          (or | gzip -1 > FILE.gz)

KIND is one of
  big-pipeline   one successful pipeline whose stage lines total about SIZE bytes (4 stage ids
                 cycling, ~1 KiB outputs), then 20 ordinary pipelines (so 21 candidates)
  templates      SIZE successful pipelines, each with its own template id (writes
                 old.jsonl/new.jsonl verdict files next to nothing: use `templates-verdicts`)
  templates-verdicts  SIZE verdict records, one per pipeline of `templates`
  one-line       SIZE bytes without a newline
  long-ids       SIZE pipelines (one stage line, one completion each) with 1 MiB ids
  many-pipelines SIZE one-line pipelines (a stage line each, about 190 bytes)
SIZE takes K, M, G suffixes (powers of 1024).
"""
import sys

out = sys.stdout.buffer


def size(s):
    mult = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}.get(s[-1:].upper(), 1)
    return int(s[:-1] if mult > 1 else s) * mult


def stage(pid, sid, output, with_input=False):
    inp = ', "input": "the user input"' if with_input else ""
    return f'{{"pipeline_id": "{pid}", "stage_id": "{sid}"{inp}, "output": "{output}"}}\n'.encode()


def complete(pid, template="t", verdict="PASS"):
    return (
        f'{{"pipeline_id": "{pid}", "is_complete": true, "verdict": "{verdict}", '
        f'"template_id": "{template}", "episode_reward": 1.0}}\n'
    ).encode()


def main():
    kind, n = sys.argv[1], size(sys.argv[2])
    if kind == "big-pipeline":
        written, i = 0, 0
        pad = "x" * 1000
        buf = []
        while written < n:
            line = stage("big", f"s{i % 4}", f"{i:012d}{pad}", with_input=i == 0)
            buf.append(line)
            written += len(line)
            i += 1
            if len(buf) == 4096:
                out.write(b"".join(buf))
                buf = []
        out.write(b"".join(buf))
        out.write(complete("big"))
        for k in range(20):
            out.write(stage(f"p{k}", "s0", "out", with_input=True))
            out.write(complete(f"p{k}"))
    elif kind == "templates":
        for k in range(n):
            out.write(stage(f"p{k}", "s0", "out", with_input=True) + complete(f"p{k}", template=f"tpl-{k}"))
    elif kind == "templates-verdicts":
        for k in range(n):
            out.write(f'{{"pipeline_id": "p{k}", "verdict": "{"PASS" if k % 3 else "FAIL"}"}}\n'.encode())
    elif kind == "one-line":
        chunk = b"x" * (1 << 20)
        for _ in range(n // len(chunk)):
            out.write(chunk)
        out.write(b"x" * (n % len(chunk)))
    elif kind == "long-ids":
        for k in range(n):
            pid = f"{k:08d}" + "i" * ((1 << 20) - 8)
            out.write(stage(pid, "s0", "out", with_input=True) + complete(pid))
    elif kind == "many-pipelines":
        pad = "y" * 110
        for k in range(n):
            out.write(stage(f"pipeline-{k:012d}", "s0", pad, with_input=True))
    else:
        sys.exit(f"unknown kind {kind}")


main()
