#!/usr/bin/env python3
"""Native `deploy-gate test-set` against DuckDB running the same rules in SQL, side by side.

    python3 scripts/bench-duckdb.py [AUDIT.jsonl] [--pairs 5] [--deploy-gate target/release/deploy-gate]

The SQL is `scripts/duckdb-testset.sql` (the test-set rules, written from the design, with the
default policy: seed 0, min_samples 20, max_samples 200, pass verdicts PASS, APPROVE, COMPLETE).
The log is read once first so that both read it from the page cache. Then each pair runs
`deploy-gate test-set` and the query in a fresh process each, in turn (the order alternating from
pair to pair), and prints their wall time and peak RSS; at the end the medians and the ratios.
DuckDB runs with its default settings (one thread per core). Its time is the query's alone,
measured inside its process (the Python start-up and `import duckdb` left out); its peak RSS is
the process's, as is deploy-gate's (whose time is the whole command's).

Every run's cases are checked against the first deploy-gate run: the same pipeline ids in the
same order (and the same template ids, expected verdicts and inputs, and candidate count). Any
difference stops the script with exit status 1. Needs `pip install duckdb`.
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
SQL = os.path.join(HERE, "duckdb-testset.sql")


def child_duckdb(audit):
    """In a child process: the query, timed; the cases and the time as JSON on stdout."""
    import duckdb

    con = duckdb.connect()
    con.execute("SET VARIABLE audit = ?", [audit])
    con.execute("SET VARIABLE seed = 0")
    con.execute("SET VARIABLE min_samples = 20")
    con.execute("SET VARIABLE max_samples = 200")
    con.execute("SET VARIABLE pass_verdicts = ['PASS', 'APPROVE', 'COMPLETE']")
    with open(SQL, encoding="utf-8") as f:
        sql = f.read()
    threads = con.execute("SELECT current_setting('threads')").fetchone()[0]
    import resource
    before = resource.getrusage(resource.RUSAGE_SELF)
    start = time.perf_counter()
    rows = con.execute(sql).fetchall()
    seconds = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_SELF)
    cpu = (after.ru_utime + after.ru_stime) - (before.ru_utime + before.ru_stime)
    cases = [
        {
            "id": [row[0], not row[1]],
            "template_id": json.loads(row[2]) if row[2] is not None else None,
            "expected_verdict": json.loads(row[3]) if row[3] is not None else None,
            "input_text": json.loads(row[4]),
        }
        for row in rows
    ]
    candidates = rows[0][6] if rows else None
    json.dump(
        {"seconds": seconds, "cpu": cpu, "threads": threads, "version": duckdb.__version__,
         "cases": cases, "candidates": candidates},
        sys.stdout,
        ensure_ascii=False,
    )


def run(cmd, stdout):
    """Runs `cmd`; gives (wall seconds, CPU seconds, peak RSS in bytes, exit status, stderr)."""
    start = time.perf_counter()
    proc = subprocess.Popen(cmd, stdout=stdout, stderr=subprocess.PIPE)
    err = proc.stderr.read()
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - start
    proc.returncode = os.waitstatus_to_exitcode(status)
    cpu = usage.ru_utime + usage.ru_stime
    return wall, cpu, usage.ru_maxrss * 1024, proc.returncode, err.decode("utf-8", "replace")


def native_cases(path):
    cases = []
    with open(path, encoding="utf-8") as f:
        for line in f:
            c = json.loads(line)
            pid = c["pipeline_id"]
            cases.append({
                "id": [str(pid), isinstance(pid, int)],
                "template_id": c.get("template_id"),
                "expected_verdict": c.get("expected_verdict"),
                "input_text": c.get("input_text"),
            })
    return cases


def fail(message):
    print(f"bench-duckdb: FAILED: {message}", file=sys.stderr)
    sys.exit(1)


def first_difference(a, b):
    for i, (x, y) in enumerate(zip(a, b)):
        if x != y:
            return f"case {i}: deploy-gate {json.dumps(x, ensure_ascii=False)[:300]} against DuckDB {json.dumps(y, ensure_ascii=False)[:300]}"
    return f"deploy-gate gives {len(a)} cases, DuckDB {len(b)}"


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("audit", nargs="?", default="bench-data/audit.jsonl")
    ap.add_argument("--pairs", type=int, default=5)
    ap.add_argument("--deploy-gate", default=os.path.join(HERE, "..", "target", "release", "deploy-gate"))
    ap.add_argument("--child-duckdb", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child_duckdb:
        child_duckdb(args.audit)
        return
    if args.pairs < 1:
        fail("--pairs must be at least 1")
    audit = os.path.abspath(args.audit)
    size = os.path.getsize(audit)
    # The log into the page cache, for both.
    with open(audit, "rb") as f:
        while f.read(16 << 20):
            pass
    print(f"bench-duckdb: {audit} ({size:,} bytes), {args.pairs} pairs, {os.cpu_count()} cores, "
          f"load {os.getloadavg()[0]:.2f}")
    expected = None
    expected_candidates = None
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "cases.jsonl")

        def native():
            wall, cpu, rss, code, err = run([args.deploy_gate, "test-set", "--audit", audit, "--out", out],
                                            subprocess.DEVNULL)
            if code != 0:
                fail(f"deploy-gate test-set exited {code}: {err.strip()}")
            nonlocal expected, expected_candidates
            cases = native_cases(out)
            words = err.split()
            candidates = int(words[words.index("from") + 1]) if "from" in words else None
            if expected is None:
                expected, expected_candidates = cases, candidates
            elif cases != expected:
                fail("two deploy-gate runs gave different test sets: " + first_difference(expected, cases))
            return wall, cpu, rss

        def duckdb():
            with open(os.path.join(tmp, "duckdb.json"), "w+b") as res:
                wall, _, rss, code, err = run([sys.executable, os.path.abspath(__file__), "--child-duckdb", audit], res)
                if code != 0:
                    fail(f"the DuckDB query exited {code}: {err.strip()[-2000:]}")
                res.seek(0)
                got = json.load(res)
            return got, wall, rss

        for pair in range(args.pairs):
            first_native = pair % 2 == 0
            if first_native:
                n_wall, n_cpu, n_rss = native()
                got, d_wall, d_rss = duckdb()
            else:
                got, d_wall, d_rss = duckdb()
                n_wall, n_cpu, n_rss = native()
            if expected is None:
                fail("no deploy-gate run")
            if got["cases"] != expected:
                fail("DuckDB and deploy-gate chose different test cases: " + first_difference(expected, got["cases"]))
            if expected_candidates is not None and got["candidates"] is not None and got["candidates"] != expected_candidates:
                fail(f"candidates: deploy-gate {expected_candidates}, DuckDB {got['candidates']}")
            rows.append((n_wall, n_rss, got["seconds"], d_wall, d_rss, n_cpu, got["cpu"]))
            print(f"pair {pair + 1} ({'native first' if first_native else 'DuckDB first'}): "
                  f"deploy-gate {n_wall:.3f} s (CPU {n_cpu:.2f} s) {n_rss / 2**20:.1f} MiB | "
                  f"DuckDB {got['version']} ({got['threads']} threads) query {got['seconds']:.3f} s "
                  f"(CPU {got['cpu']:.2f} s; process {d_wall:.3f} s) {d_rss / 2**20:.1f} MiB | "
                  f"x{got['seconds'] / n_wall:.2f}", flush=True)
    med = [statistics.median(col) for col in zip(*rows)]
    print(f"same {len(expected)} cases in the same order in every run ({expected_candidates} candidates)")
    print(f"median: deploy-gate {med[0]:.3f} s (CPU {med[5]:.2f} s) {med[1] / 2**20:.1f} MiB | "
          f"DuckDB query {med[2]:.3f} s (CPU {med[6]:.2f} s; process {med[3]:.3f} s) {med[4] / 2**20:.1f} MiB")
    print(f"DuckDB / deploy-gate: time x{med[2] / med[0]:.2f} (target >= 8; median of the pairs' ratios "
          f"x{statistics.median(r[2] / r[0] for r in rows):.2f}; CPU x{med[6] / med[5]:.2f}), "
          f"peak RSS x{med[4] / med[1]:.1f} (target >= 20); load {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
