#!/usr/bin/env python3
"""Known answers for deploy-gate's betting confidence sequence (src/stats/sequential.rs),
computed by confseq itself (confseq 0.0.11, `confseq.betting`).

    python3 scripts/sequential-known-answers.py --write tests/fixtures/stats/sequential-known-answers.json
    python3 scripts/sequential-known-answers.py --check tests/fixtures/stats/sequential-known-answers.json

For each seeded sequence of observations in [0, 1] the script records, at each listed look t:

- `lower` and `upper`: the exact bounds of confseq's `betting_cs` with its defaults (the
  hedged capital max(½K⁺, ½K⁻) with `lambda_predmix_eb` bets at α/2 on each side,
  `trunc_scale=1/2`, `m_trunc=True`, `convex_comb=False`), found by bisection to 1e-13 on
  confseq's own capital: `betting_mart(x[:t], m, theta=1)` for K⁺ (non-increasing in m) and
  `theta=0` for K⁻ (non-decreasing), with the bets `betting_cs` passes to them;
- `grid_lower` and `grid_upper`: `betting_cs(x, alpha=alpha)` itself, which searches a grid of
  m with `breaks=1000` and widens by one step, so `grid_lower < lower <= grid_lower + 0.001`
  (or both 0) and `grid_upper - 0.001 <= upper < grid_upper` (or both 1). The script asserts
  that bracket.

`--check` recomputes everything and fails when an exact bound differs from the file by more
than 1e-12 or a grid bound differs at all. The Rust test (tests/it/sequential_known_answers.rs)
holds deploy-gate's bounds to the exact ones within 1e-9 and to the grid's bracket.
"""

import argparse
import json
import sys

import numpy as np
from confseq.betting import betting_cs, betting_mart
from confseq.betting_strategies import lambda_predmix_eb

BREAKS = 1000
WIDTH = 1e-13


def sequences():
    """(name, seed, alpha, x, looks): observations in [0, 1] and the looks to record."""
    out = []

    def paired(name, seed, alpha, n, delta, discordant=0.12):
        # Paired pass/fail: d = new - old in {-1, 0, 1}, x = (d + 1) / 2.
        rng = np.random.default_rng(seed)
        u = rng.random(n)
        p_old_only = (discordant - delta) / 2
        p_new_only = (discordant + delta) / 2
        d = np.where(u < p_old_only, -1.0, np.where(u < p_old_only + p_new_only, 1.0, 0.0))
        out.append((name, seed, alpha, (d + 1) / 2))

    paired("paired cases, equal models, 12% discordant", 1, 0.05, 400, 0.0)
    paired("paired cases, new - old = -0.10", 2, 0.05, 300, -0.10)
    paired("paired cases, new - old = +0.03, alpha 0.1", 3, 0.1, 250, 0.03)
    rng = np.random.default_rng(4)
    out.append(("Bernoulli(0.3), alpha 0.01", 4, 0.01, (rng.random(200) < 0.3).astype(float)))
    rng = np.random.default_rng(5)
    out.append(("uniform on [0, 1]", 5, 0.05, rng.random(150)))
    rng = np.random.default_rng(6)
    out.append(("Beta(2, 5)", 6, 0.05, rng.beta(2, 5, 120)))
    rng = np.random.default_rng(7)
    out.append(("template means of 20 templates", 7, 0.05, (np.clip(rng.normal(0, 0.3, 40), -1, 1) + 1) / 2))
    out.append(("all ones", 0, 0.05, np.ones(60)))
    result = []
    for name, seed, alpha, x in out:
        n = len(x)
        looks = [t for t in range(1, n + 1) if t <= 100 or t % 10 == 0 or t == n]
        result.append((name, seed, alpha, [float(v) for v in x], looks))
    return result


def side(x, m, alpha, theta):
    """confseq's K+ (theta 1) or K- (theta 0) at every look for the null mean m, with the bets
    betting_cs passes by default (lambda_predmix_eb at alpha/2 on each side)."""
    bets = lambda x, m: lambda_predmix_eb(x, alpha=alpha * 0.5)
    return betting_mart(
        x, m, alpha=alpha, lambdas_fn_positive=bets, lambdas_fn_negative=bets, theta=theta, trunc_scale=0.5, m_trunc=True
    )


def exact_bounds(x, alpha):
    """Bisection at one look (the last of x) on each side; m is in the CS when ½K <= 1/α."""
    x = np.asarray(x)
    inside = lambda k: 0.5 * k <= 1 / alpha
    k_above = lambda m: side(x, m, alpha, 1)[-1]
    k_below = lambda m: side(x, m, alpha, 0)[-1]
    if inside(k_above(0.0)):
        lower = 0.0
    else:
        out, inn = 0.0, 1.0
        while inn - out > WIDTH:
            mid = 0.5 * (out + inn)
            if inside(k_above(mid)):
                inn = mid
            else:
                out = mid
        lower = inn
    if inside(k_below(1.0)):
        upper = 1.0
    else:
        inn, out = 0.0, 1.0
        while out - inn > WIDTH:
            mid = 0.5 * (inn + out)
            if inside(k_below(mid)):
                inn = mid
            else:
                out = mid
        upper = inn
    return lower, upper


def compute():
    import importlib.metadata

    doc = {
        "source": "confseq %s, confseq.betting.betting_cs defaults" % importlib.metadata.version("confseq"),
        "breaks": BREAKS,
        "sequences": [],
    }
    for name, seed, alpha, x, looks in sequences():
        gl, gu = betting_cs(np.asarray(x), alpha=alpha, breaks=BREAKS)
        rows = []
        for t in looks:
            lower, upper = exact_bounds(x[:t], alpha)
            g_lower, g_upper = float(gl[t - 1]), float(gu[t - 1])
            step = 1 / BREAKS + 1e-12
            assert (g_lower == 0 and lower <= step) or g_lower < lower <= g_lower + step, (name, t, lower, g_lower)
            assert (g_upper == 1 and upper >= 1 - step) or g_upper - step <= upper < g_upper, (name, t, upper, g_upper)
            rows.append({"t": t, "lower": lower, "upper": upper, "grid_lower": g_lower, "grid_upper": g_upper})
        doc["sequences"].append({"name": name, "seed": seed, "alpha": alpha, "x": x, "looks": rows})
    return doc


def check(path):
    want = json.load(open(path))
    got = compute()
    bad = 0
    for ws, gs in zip(want["sequences"], got["sequences"]):
        if ws["x"] != gs["x"] or ws["alpha"] != gs["alpha"] or len(ws["looks"]) != len(gs["looks"]):
            print(f"{ws['name']}: the sequence differs", file=sys.stderr)
            bad += 1
            continue
        for w, g in zip(ws["looks"], gs["looks"]):
            for key in ("lower", "upper"):
                if abs(w[key] - g[key]) > 1e-12:
                    print(f"{ws['name']} t={w['t']} {key}: file {w[key]!r}, confseq {g[key]!r}", file=sys.stderr)
                    bad += 1
            for key in ("grid_lower", "grid_upper"):
                if w[key] != g[key]:
                    print(f"{ws['name']} t={w['t']} {key}: file {w[key]!r}, confseq {g[key]!r}", file=sys.stderr)
                    bad += 1
    if len(want["sequences"]) != len(got["sequences"]):
        print("the number of sequences differs", file=sys.stderr)
        bad += 1
    looks = sum(len(s["looks"]) for s in got["sequences"])
    if bad:
        print(f"{bad} differences", file=sys.stderr)
        return 1
    print(f"{len(got['sequences'])} sequences, {looks} looks: the file matches {got['source']}")
    return 0


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    g = ap.add_mutually_exclusive_group(required=True)
    g.add_argument("--write", metavar="FILE")
    g.add_argument("--check", metavar="FILE")
    args = ap.parse_args()
    if args.check:
        sys.exit(check(args.check))
    doc = compute()
    with open(args.write, "w") as f:
        json.dump(doc, f, indent=1)
        f.write("\n")
    print(f"wrote {args.write}")


if __name__ == "__main__":
    main()
