#!/usr/bin/env python3
"""Known answers for deploy-gate's clustered intervals and its Student t quantile, computed by
statsmodels and scipy themselves.

    python3 scripts/known-answers.py --write tests/fixtures/stats/known-answers.json
    python3 scripts/known-answers.py --check tests/fixtures/stats/known-answers.json

Each case set is a list of test cases (a template id or null, the old model's verdicts and the
new model's, 1 for a pass). A case's score is its share of passing verdicts; for every set the
script fits statsmodels' OLS of the score (old, new, and new − old) on a constant with
`cov_type="cluster"` (groups: the template, a case without one a group of its own), its default
small-sample correction, and `use_t=True`, and records the estimate, the interval at the set's
confidence (unclipped: deploy-gate clips rates to [0, 1] and the difference to [-1, 1]), the
clusters and the design effect (the clustered variance of the difference over OLS's ordinary
one). A set with fewer than two clusters records null. The t quantiles are scipy's
`t.ppf(p, df)` over many degrees of freedom and probabilities, each with the root of
`I_{df/(df+t²)}(df/2, 1/2)/2 = 1 − p` found by mpmath at 40 digits (scipy's own quantile is off
by up to about 1e-4 relative just above the median, e.g. df = 4, p = 0.5000001). `--check`
recomputes everything and fails when a number differs from the file by more than 1e-12
(relative above 1). The Rust tests (tests/it/known_answers.rs) read the file and hold the
report to it.
"""

import argparse
import json
import math
import random
import sys
import warnings

import mpmath as mp
import numpy as np
import scipy
import statsmodels
import statsmodels.api as sm
from scipy import stats


def case_sets():
    """The case sets: (name, confidence, cases), each case (template or None, old runs, new runs)."""
    sets = []
    # Unequal clusters, two singleton templates and two cases without a template; one verdict each.
    unequal = []
    outcomes = [(1, 1), (1, 0), (1, 1), (0, 1), (1, 1), (1, 0), (0, 0), (1, 1), (1, 0), (1, 1), (0, 1), (1, 0), (1, 1), (0, 0), (1, 0)]
    templates = ["a"] * 6 + ["b"] * 3 + ["c"] * 2 + ["d", "e"] + [None, None]
    for t, (o, n) in zip(templates, outcomes):
        unequal.append((t, [o], [n]))
    sets.append(("unequal clusters, singletons and cases without a template", 0.95, unequal))
    # Every case its own template: the paired t interval.
    rng = random.Random(1)
    sets.append(("singleton clusters only", 0.95, [(f"t{i}", [int(rng.random() < 0.8)], [int(rng.random() < 0.7)]) for i in range(12)]))
    # All pass, all fail: no variance.
    sets.append(("all pass", 0.95, [(f"t{i % 3}", [1], [1]) for i in range(10)]))
    sets.append(("all fail", 0.95, [(f"t{i % 4}", [0], [0]) for i in range(11)]))
    # One template: one cluster, no clustered interval.
    sets.append(("one template", 0.95, [("only", [int(i % 3 != 0)], [int(i % 4 != 0)]) for i in range(12)]))
    # Two clusters: t on 1 degree of freedom.
    sets.append(("two clusters", 0.95, [("x" if i < 7 else "y", [int(i % 2 == 0)], [int(i % 3 == 0)]) for i in range(11)]))
    # Repeated runs: case scores are fractions.
    rng = random.Random(2)
    repeated = []
    for i in range(16):
        k_old, k_new = rng.randint(1, 4), rng.randint(1, 4)
        repeated.append((["p", "q", "r", None][i % 4] if i % 5 else f"solo{i}", [int(rng.random() < 0.75) for _ in range(k_old)], [int(rng.random() < 0.6) for _ in range(k_new)]))
    sets.append(("repeated runs (case means)", 0.95, repeated))
    # Cases without a template next to two templates.
    sets.append(("null templates are clusters of their own", 0.95, [(None if i % 3 == 0 else ("m" if i % 2 else "n"), [int(i % 4 != 1)], [int(i % 5 != 2)]) for i in range(13)]))
    # Many cases, correlated within 25 templates of unequal sizes.
    rng = random.Random(3)
    big = []
    for t in range(25):
        level = rng.uniform(0.4, 0.95)
        shift = rng.uniform(-0.15, 0.1)
        for _ in range(rng.randint(1, 24)):
            big.append((f"tpl-{t}", [int(rng.random() < level)], [int(rng.random() < level + shift)]))
    sets.append(("300-odd cases in 25 templates", 0.95, big))
    sets.append(("300-odd cases in 25 templates, 90% intervals", 0.9, big))
    sets.append(("repeated runs, 99% intervals", 0.99, repeated))
    return sets


def groups_of(cases):
    ids, codes = {}, []
    for i, (t, _, _) in enumerate(cases):
        key = ("template", t) if t is not None else ("case", i)
        codes.append(ids.setdefault(key, len(ids)))
    return np.array(codes), len(ids)


def fit(y, groups, alpha):
    x = np.ones((len(y), 1))
    robust = sm.OLS(y, x).fit(cov_type="cluster", cov_kwds={"groups": groups}, use_t=True)
    plain = sm.OLS(y, x).fit()
    low, high = robust.conf_int(alpha=alpha)[0]
    # The interval is statsmodels' own; check that it is the t quantile on G - 1 degrees of freedom.
    g = len(set(groups.tolist()))
    half = stats.t.ppf(1 - alpha / 2, g - 1) * robust.bse[0]
    assert math.isclose(high - robust.params[0], half, rel_tol=1e-12, abs_tol=1e-15), (high, half)
    return robust, plain, low, high


def answers():
    out = []
    for name, confidence, cases in case_sets():
        old = np.array([sum(o) / len(o) for _, o, _ in cases])
        new = np.array([sum(n) / len(n) for _, _, n in cases])
        groups, g = groups_of(cases)
        entry = {"name": name, "confidence": confidence,
                 "cases": [{"template": t, "old": o, "new": n} for t, o, n in cases]}
        if g < 2:
            entry["expected"] = None
        else:
            alpha = 1 - confidence
            result = {"clusters": g}
            for key, y in [("old", old), ("new", new), ("delta", new - old)]:
                robust, plain, low, high = fit(y, groups, alpha)
                result[key] = {"estimate": float(robust.params[0]), "low": float(low), "high": float(high),
                               "variance": float(robust.cov_params()[0, 0])}
                if key == "delta":
                    naive = float(plain.cov_params()[0, 0])
                    result["design_effect"] = float(robust.cov_params()[0, 0]) / naive if naive > 0 else None
            entry["expected"] = result
        out.append(entry)
    return out


def t_exact(p, df):
    """The p quantile of Student's t with df degrees of freedom at 40 digits (p exactly the double)."""
    mp.mp.dps = 40
    p, df = mp.mpf(p), mp.mpf(df)
    sign = 1
    if p < 0.5:
        p, sign = 1 - p, -1
    q = 1 - p
    tail = lambda t: mp.betainc(df / 2, mp.mpf(1) / 2, 0, df / (df + t * t), regularized=True) / 2 - q
    start = mp.mpf(stats.t.ppf(float(p), float(df)))
    return float(sign * mp.findroot(tail, start, tol=mp.mpf(10) ** -35))


def t_quantiles():
    dfs = list(range(1, 41)) + [45, 50, 60, 75, 99, 100, 120, 150, 199, 250, 500, 999, 1000, 2500, 10_000, 20_000,
                                 49_999, 50_001, 99_999, 1_000_000, 10_000_000]
    ps = [0.5000001, 0.55, 0.6, 0.75, 0.8, 0.9, 0.95, 0.975, 0.99, 0.995, 0.9975, 0.999, 0.9995, 0.99995, 0.999995, 0.025, 0.1]
    return [[df, p, float(stats.t.ppf(p, df)), t_exact(p, df)] for df in dfs for p in ps]


def document():
    return {
        "made_by": "python3 scripts/known-answers.py --write tests/fixtures/stats/known-answers.json",
        "sources": {"statsmodels": statsmodels.__version__, "scipy": scipy.__version__, "numpy": np.__version__,
                    "mpmath": mp.__version__},
        "t_quantiles_columns": ["df", "p", "scipy t.ppf(p, df)", "mpmath, 40 digits"],
        "cluster": answers(),
        "t_quantiles": t_quantiles(),
    }


def close(a, b):
    if a is None or b is None:
        return a is b
    return abs(a - b) <= 1e-12 * max(1.0, abs(b))


def compare(path, fresh, stored, where="$"):
    bad = []
    if isinstance(fresh, dict):
        for k in fresh:
            if k in ("sources", "made_by"):
                continue
            bad += compare(path, fresh[k], stored.get(k) if isinstance(stored, dict) else None, f"{where}.{k}")
    elif isinstance(fresh, list):
        if not isinstance(stored, list) or len(stored) != len(fresh):
            return [f"{where}: length differs"]
        for i, (a, b) in enumerate(zip(fresh, stored)):
            bad += compare(path, a, b, f"{where}[{i}]")
    elif isinstance(fresh, float) or isinstance(stored, float):
        if not close(stored, fresh):
            bad.append(f"{where}: the file has {stored!r}, statsmodels/scipy give {fresh!r}")
    elif fresh != stored:
        bad.append(f"{where}: the file has {stored!r}, the script {fresh!r}")
    return bad


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    group = ap.add_mutually_exclusive_group(required=True)
    group.add_argument("--write", metavar="FILE")
    group.add_argument("--check", metavar="FILE")
    args = ap.parse_args()
    warnings.simplefilter("ignore")
    doc = document()
    if args.write:
        with open(args.write, "w") as f:
            json.dump(doc, f, indent=1)
            f.write("\n")
        print(f"wrote {args.write}: {len(doc['cluster'])} case sets, {len(doc['t_quantiles'])} t quantiles")
        return 0
    with open(args.check) as f:
        stored = json.load(f)
    bad = compare(args.check, doc, stored)
    for line in bad[:20]:
        print(line, file=sys.stderr)
    if bad:
        print(f"{args.check}: {len(bad)} number(s) differ from statsmodels {statsmodels.__version__} / scipy {scipy.__version__}", file=sys.stderr)
        return 1
    print(f"{args.check}: every known answer matches statsmodels {statsmodels.__version__} and scipy {scipy.__version__} to 1e-12")
    return 0


if __name__ == "__main__":
    sys.exit(main())
