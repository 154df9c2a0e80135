#!/usr/bin/env python3
"""Known answers for deploy-gate's guardrails (src/stats/paired.rs, src/guardrail/evaluate.rs),
computed independently with numpy, scipy and statsmodels from the same verdict records.

    python3 scripts/guardrail-known-answers.py --write tests/fixtures/stats/guardrail-known-answers.json
    python3 scripts/guardrail-known-answers.py --check tests/fixtures/stats/guardrail-known-answers.json

Each case set is a policy and a list of cases (a template id or null, the old model's verdict
records and the new model's, each record exactly as a verdict file carries it). The Rust test
(tests/it/guardrail_known_answers.rs) writes the audit log and both verdict files from them,
evaluates, and holds the report's `guardrails` to what this script finds:

- a case's value: the mean of the metric over its counted records carrying it (every record
  under `repeats: mean`, the last one under `last`); a case lacking it on either side excluded;
- `mean` with `max_difference`: the paired t interval, `scipy.stats.ttest_rel(new, old)
  .confidence_interval(c)` under `cluster: none`; under `cluster: template` the cluster-robust
  interval by hand from the per-cluster sums of the residuals, `G/(G−1)·Σ_g S_g²/N²` on `G − 1`
  degrees of freedom (checked against statsmodels' OLS on a constant, `cov_type="cluster"`);
- `mean` with `max_increase`: Fieller's interval for `mean(new)/mean(old)`, the roots of
  `(m_n − ρ m_o)² = t²(v_nn − 2ρ v_no + ρ² v_oo)` by `numpy.roots` (unbounded, null, when the
  leading coefficient is not positive), minus 1; the same covariances, by hand;
- quantiles: the point estimates `numpy.quantile(x, p, method="inverted_cdf")` (nearest rank),
  exactly; the interval by `scipy.stats.bootstrap(paired=True, method="percentile",
  n_resamples=10000)` of the same statistic (under `cluster: template` the data bootstrapped
  are the clusters, each drawn with all its cases). Different generators draw different
  resamples, so the Rust test holds deploy-gate's bound to a band: a bootstrap percentile at
  level q estimated from B resamples sits at a point whose true bootstrap CDF value is
  q ± sqrt(q(1−q)/B) (the order statistic's binomial spread), so two independent estimates
  differ in CDF terms by at most z·sqrt(q(1−q)·(1/B_rust + 1/B_scipy)); with z = 4.5
  (two-sided 7·10⁻⁶ per bound) the band is scipy's own resampled values between the levels
  q − δ and q + δ (nearest rank, inclusive). The script checks the limit lies outside every
  band it uses, so the outcome cannot depend on the resamples;
- `template_regression`: per template with `min_cases` cases, the one-sided p-value
  `scipy.stats.ttest_1samp(d + max_drop, 0, alternative="less")` of the case score differences
  d = new − old (differences without spread: 0 when their mean is below −max_drop, else 1, as
  src/stats/paired.rs documents), Holm's adjustment by `statsmodels.stats.multitest
  .multipletests(method="holm")`, regressed when its `reject` at the level α/(2k) (blocking) or
  α/2 (advisory);
- outcomes: not shown under `min_cases`; within when high ≤ limit (the interval at c);
  exceeded when the lower bound at 1 − α/k (blocking, k the blocking criteria) or at c
  (advisory) exceeds the limit; else not shown.

`--check` recomputes everything (scipy's bootstrap is seeded) and fails when a number differs
from the file by more than 1e-12 (relative above 1).
"""

import argparse
import json
import math
import sys
import warnings

import numpy as np
import scipy
import statsmodels
import statsmodels.api as sm
from scipy import stats
from statsmodels.stats.multitest import multipletests

RESAMPLES = 10_000
Z_BAND = 4.5


# ---------------------------------------------------------------------------------------------
# The case sets


def lognormal_pair(rng, n, median, sigma, rho, scale_new=1.0):
    """Paired lognormal values (old, new): log-correlation rho, the new one scaled."""
    z1 = rng.standard_normal(n)
    z2 = rho * z1 + math.sqrt(1 - rho * rho) * rng.standard_normal(n)
    old = median * np.exp(sigma * z1)
    new = scale_new * median * np.exp(sigma * z2)
    return np.round(old, 1), np.round(new, 1)


def record(verdict, latency=None, prompt=None, completion=None, metrics=None):
    r = {"verdict": verdict}
    if latency is not None:
        r["latency_ms"] = float(latency)
    if prompt is not None or completion is not None:
        u = {}
        if prompt is not None:
            u["prompt_tokens"] = int(prompt)
        if completion is not None:
            u["completion_tokens"] = int(completion)
        r["usage"] = u
    if metrics:
        r["metrics"] = {k: float(v) for k, v in metrics.items()}
    return r


def base_policy(confidence, cluster, repeats, seed, guardrails, template_regression=None, prices=None):
    p = {"min_samples": 0, "max_samples": None, "confidence": confidence, "cluster": cluster, "repeats": repeats,
         "mode": "non_inferiority", "task_tol": 0.05, "seed": seed, "guardrails": guardrails}
    if template_regression is not None:
        p["template_regression"] = template_regression
    if prices is not None:
        p["prices"] = prices
    return p


def set_latency_tokens():
    """200 independent cases: latency +5%, tokens +2%; every method, unclustered."""
    rng = np.random.default_rng(11)
    n = 200
    lo, ln = lognormal_pair(rng, n, 800.0, 0.5, 0.6, 1.05)
    po = rng.integers(200, 600, n)
    co = rng.integers(40, 200, n)
    pn = po + rng.integers(-5, 12, n)
    cn = co + rng.integers(-10, 16, n)
    steps_o = rng.integers(2, 12, n)
    steps_n = steps_o + rng.integers(-1, 2, n)
    cases = []
    for i in range(n):
        cases.append({"template": f"t{i % 12}",
                      "old": [record("PASS" if rng.random() < 0.8 else "FAIL", lo[i], po[i], co[i], {"steps": steps_o[i]})],
                      "new": [record("PASS" if rng.random() < 0.8 else "FAIL", ln[i], pn[i], cn[i], {"steps": steps_n[i]})]})
    rails = [
        {"metric": "latency_ms", "statistic": "mean", "max_increase": "10%"},
        {"metric": "latency_ms", "statistic": "mean", "max_difference": 150},
        {"metric": "latency_ms", "statistic": "p95", "max_increase": "25%"},
        {"metric": "latency_ms", "statistic": "p50", "max_difference": 250, "action": "advise"},
        {"metric": "total_tokens", "statistic": "mean", "max_increase": 0.1},
        {"metric": "total_tokens", "statistic": "p90", "max_difference": 60},
        {"metric": "cost", "statistic": "mean", "max_difference": 0.00005, "action": "advise"},
        {"metric": "metrics.steps", "statistic": "mean", "max_difference": 0.5},
    ]
    prices = {"old": {"prompt_per_million": 0.15, "completion_per_million": 0.6},
              "new": {"prompt_per_million": 0.2, "completion_per_million": 0.8}}
    return ("latency, tokens, cost and steps: 200 independent cases", base_policy(0.95, "none", "last", 7, rails, prices=prices), cases)


def set_clustered():
    """The same kind of data clustered by template (shared template effects), some cases without one."""
    rng = np.random.default_rng(12)
    cases = []
    for t in range(22):
        size = int(rng.integers(3, 20))
        effect = math.exp(rng.normal(0, 0.4))
        shift = math.exp(rng.normal(0.03, 0.08))
        tok = int(rng.integers(150, 800))
        for _ in range(size):
            lo, ln = lognormal_pair(rng, 1, 700.0 * effect, 0.35, 0.6, shift)
            to = tok + int(rng.integers(-50, 50))
            tn = to + int(rng.integers(-20, 60))
            cases.append({"template": f"tpl-{t}",
                          "old": [record("PASS", lo[0], to, 50)],
                          "new": [record("PASS" if rng.random() < 0.9 else "FAIL", ln[0], tn, 50)]})
    for _ in range(6):
        lo, ln = lognormal_pair(rng, 1, 700.0, 0.35, 0.6, 1.0)
        cases.append({"template": None, "old": [record("PASS", lo[0], 300, 50)], "new": [record("PASS", ln[0], 310, 50)]})
    rails = [
        {"metric": "latency_ms", "statistic": "mean", "max_increase": "20%"},
        {"metric": "latency_ms", "statistic": "mean", "max_difference": 200},
        {"metric": "latency_ms", "statistic": "p90", "max_increase": "40%", "min_cases": 50},
        {"metric": "prompt_tokens", "statistic": "mean", "max_difference": 2},
        {"metric": "prompt_tokens", "statistic": "p50", "max_increase": "30%", "action": "advise"},
    ]
    return ("clustered by template: 22 templates of 3 to 19 cases and 6 cases without one",
            base_policy(0.9, "template", "last", 2024, rails), cases)


def set_exceeded():
    """Latency +80% and steps +2: exceeded at the Bonferroni level."""
    rng = np.random.default_rng(13)
    n = 250
    lo, ln = lognormal_pair(rng, n, 1200.0, 0.6, 0.6, 1.8)
    cases = []
    for i in range(n):
        s = int(rng.integers(3, 9))
        cases.append({"template": f"t{i % 7}",
                      "old": [record("PASS", lo[i], metrics={"steps": s})],
                      "new": [record("PASS", ln[i], metrics={"steps": s + 2 + int(rng.integers(-1, 2))})]})
    rails = [
        {"metric": "latency_ms", "statistic": "p95", "max_increase": "10%"},
        {"metric": "latency_ms", "statistic": "mean", "max_increase": "10%"},
        {"metric": "latency_ms", "statistic": "p99", "max_increase": "10%"},
        {"metric": "metrics.steps", "statistic": "mean", "max_difference": 1},
        {"metric": "metrics.steps", "statistic": "p50", "max_difference": 3, "action": "advise"},
    ]
    return ("exceeded: latency +80%, steps +2, 250 cases", base_policy(0.95, "none", "last", 99, rails), cases)


def set_missing_and_repeats():
    """Repeated runs (case means), records lacking a metric, a ratio of means near 0, too few cases."""
    rng = np.random.default_rng(14)
    cases = []
    for i in range(120):
        runs_o, runs_n = int(rng.integers(1, 4)), int(rng.integers(1, 4))
        old, new = [], []
        for runs, out, shift in [(runs_o, old, 0.0), (runs_n, new, 0.3)]:
            for _ in range(runs):
                m = {}
                if rng.random() < 0.85:
                    m["score"] = round(float(rng.normal(5 + shift, 1)), 3)
                m["delta"] = round(float(rng.normal(0.0, 1.0)), 3)
                out.append(record("PASS" if rng.random() < 0.7 else "FAIL",
                                  latency=round(float(rng.lognormal(6, 0.4)), 1) if rng.random() < 0.9 else None,
                                  metrics=m))
        cases.append({"template": f"t{i % 9}", "old": old, "new": new})
    rails = [
        {"metric": "metrics.score", "statistic": "mean", "max_increase": "5%"},
        {"metric": "metrics.score", "statistic": "mean", "max_difference": 0.5},
        {"metric": "metrics.delta", "statistic": "mean", "max_increase": "10%"},
        {"metric": "latency_ms", "statistic": "p99", "max_increase": "10%"},
        {"metric": "latency_ms", "statistic": "p50", "max_increase": "20%"},
    ]
    return ("repeated runs (means of the records carrying the metric), missing metrics, a mean near 0, too few cases",
            base_policy(0.95, "none", "mean", 5, rails), cases)


def set_templates(action):
    """template_regression: regressions, no spread, untested templates, cases without a template."""
    rng = np.random.default_rng(15 if action == "block" else 16)
    cases = []
    plan = [  # (template, cases, old rate, new rate)
        ("a", 40, 0.85, 0.85), ("b", 30, 0.9, 0.45), ("c", 25, 0.8, 0.7), ("d", 35, 0.7, 0.75),
        ("e", 12, 1.0, 1.0), ("f", 15, 1.0, 0.0), ("g", 6, 0.9, 0.1), ("h", 50, 0.6, 0.35),
        ("i", 20, 0.5, 0.5), ("j", 18, 0.95, 0.7),
    ]
    for t, k, po, pn in plan:
        for _ in range(k):
            cases.append({"template": t,
                          "old": [record("PASS" if rng.random() < po else "FAIL", latency=round(float(rng.lognormal(6, .3)), 1))],
                          "new": [record("PASS" if rng.random() < pn else "FAIL", latency=round(float(rng.lognormal(6, .3)), 1))]})
    for _ in range(10):
        cases.append({"template": None, "old": [record("PASS")], "new": [record("FAIL")]})
    rails = [{"metric": "latency_ms", "statistic": "mean", "max_increase": "10%"}] if action == "block" else []
    tr = {"max_drop": 0.1, "min_cases": 10, "action": action}
    name = ("template_regression, blocking, beside a blocking guardrail (k = 2)" if action == "block"
            else "template_regression, advisory (level α/2)")
    return (name, base_policy(0.95, "template", "last", 3, rails, template_regression=tr), cases)


def set_templates_repeats():
    """template_regression on case means of repeated runs, 90% confidence."""
    rng = np.random.default_rng(17)
    cases = []
    for t in range(20):
        drop = 0.6 if t == 3 else 0.0
        for _ in range(15):
            cases.append({"template": f"tpl{t:02}",
                          "old": [record("PASS" if rng.random() < 0.8 else "FAIL") for _ in range(int(rng.integers(1, 4)))],
                          "new": [record("PASS" if rng.random() < 0.8 - drop else "FAIL") for _ in range(int(rng.integers(1, 4)))]})
    tr = {"max_drop": 0.05, "min_cases": 15, "action": "block"}
    return ("template_regression over 20 templates of case means, 90%", base_policy(0.9, "template", "mean", 1, [], template_regression=tr), cases)


def case_sets():
    return [set_latency_tokens(), set_clustered(), set_exceeded(), set_missing_and_repeats(),
            set_templates("block"), set_templates("advise"), set_templates_repeats()]


# ---------------------------------------------------------------------------------------------
# The independent computations


def value_of(metric, r, price):
    u = r.get("usage", {})
    if metric == "latency_ms":
        return r.get("latency_ms")
    if metric in ("prompt_tokens", "completion_tokens"):
        return u.get(metric)
    if metric in ("total_tokens", "cost"):
        if "prompt_tokens" not in u or "completion_tokens" not in u:
            return None
        if metric == "total_tokens":
            return u["prompt_tokens"] + u["completion_tokens"]
        return (u["prompt_tokens"] * price["prompt_per_million"] + u["completion_tokens"] * price["completion_per_million"]) / 1e6
    name = metric.removeprefix("metrics.")
    return r.get("metrics", {}).get(name)


def counted(records, repeats):
    return records if repeats == "mean" else records[-1:]


def case_value(metric, records, price):
    vals = [v for v in (value_of(metric, r, price) for r in records) if v is not None]
    return sum(vals) / len(vals) if vals else None


def parse_limit(rail):
    if "max_increase" in rail:
        v = rail["max_increase"]
        return "max_increase", float(v[:-1]) / 100 if isinstance(v, str) else float(v)
    return "max_difference", float(rail["max_difference"])


def percentile_of(statistic):
    return None if statistic == "mean" else int(statistic[1:]) / 100


def default_min_cases(statistic):
    p = percentile_of(statistic)
    return 10 if p is None else max(10, math.ceil(10 / (1 - p) - 1e-9))


def robust_cov(old, new, groups):
    """G/(G−1)·Σ_g A_g B_g/N² from the per-cluster sums of residuals: [v_oo, v_nn, v_on]."""
    n = len(old)
    g = groups.max() + 1
    so = np.bincount(groups, weights=old - old.mean(), minlength=g)
    sn = np.bincount(groups, weights=new - new.mean(), minlength=g)
    k = g / (g - 1) / n**2
    return k * np.dot(so, so), k * np.dot(sn, sn), k * np.dot(so, sn), g


def paired_t(old, new, groups, confidence, clustered):
    d = new - old
    if not clustered:
        ci = stats.ttest_rel(new, old).confidence_interval(confidence)
        return float(ci.low), float(ci.high)
    voo, vnn, von, g = robust_cov(old, new, groups)
    t = stats.t.ppf(1 - (1 - confidence) / 2, g - 1)
    half = t * math.sqrt(max(vnn + voo - 2 * von, 0.0))
    low, high = d.mean() - half, d.mean() + half
    # statsmodels agrees: OLS of d on a constant with the cluster-robust covariance.
    fit = sm.OLS(d, np.ones((len(d), 1))).fit(cov_type="cluster", cov_kwds={"groups": groups}, use_t=True)
    sl, sh = fit.conf_int(alpha=1 - confidence)[0]
    assert math.isclose(sl, low, rel_tol=1e-9, abs_tol=1e-9) and math.isclose(sh, high, rel_tol=1e-9, abs_tol=1e-9), (sl, low, sh, high)
    return float(low), float(high)


def fieller(old, new, groups, confidence, clustered):
    mo, mn = old.mean(), new.mean()
    if clustered:
        voo, vnn, von, g = robust_cov(old, new, groups)
        df = g - 1
    else:
        c = np.cov(np.vstack([old, new]), ddof=1) / len(old)
        voo, vnn, von, df = c[0, 0], c[1, 1], c[0, 1], len(old) - 1
    t = stats.t.ppf(1 - (1 - confidence) / 2, df)
    a = mo * mo - t * t * voo
    b = -2 * (mn * mo - t * t * von)
    c2 = mn * mn - t * t * vnn
    if a <= 0:
        return None
    roots = np.roots([a, b, c2])
    if np.iscomplexobj(roots):
        # No real root: the (double-precision) discriminant is negative; deploy-gate takes it as 0.
        roots = np.array([-b / (2 * a)] * 2)
    r1, r2 = sorted(float(r) for r in roots)
    # Each end is where the pivot (m_n − ρ m_o)/se(ρ) is ±t.
    for r in (r1, r2):
        se = math.sqrt(max(vnn - 2 * r * von + r * r * voo, 0.0))
        if se > 0:
            assert math.isclose(abs(mn - r * mo) / se, t, rel_tol=1e-6), (r, abs(mn - r * mo) / se, t)
    return r1 - 1, r2 - 1


def nearest_rank(x, p, axis=-1):
    return np.quantile(x, p, method="inverted_cdf", axis=axis)


def compare(o, n, relative):
    if not relative:
        return n - o
    with np.errstate(divide="ignore", invalid="ignore"):
        return n / o - 1


def bootstrap(old, new, groups, p, relative, confidence, seed, clustered):
    """scipy's percentile bootstrap of the quantile change: its interval and its distribution."""
    if not clustered:
        def statistic(o, n, axis=-1):
            return compare(nearest_rank(o, p, axis), nearest_rank(n, p, axis), relative)
        res = stats.bootstrap((old, new), statistic, paired=True, vectorized=True, method="percentile",
                              n_resamples=RESAMPLES, confidence_level=confidence, rng=np.random.default_rng(seed))
    else:
        members = [np.flatnonzero(groups == g) for g in range(groups.max() + 1)]

        def statistic(drawn):
            idx = np.concatenate([members[int(g)] for g in drawn])
            return compare(nearest_rank(old[idx], p), nearest_rank(new[idx], p), relative)
        res = stats.bootstrap((np.arange(len(members)),), statistic, vectorized=False, method="percentile",
                              n_resamples=RESAMPLES, confidence_level=confidence, rng=np.random.default_rng(seed))
    ci = res.confidence_interval
    return float(ci.low), float(ci.high), np.sort(res.bootstrap_distribution)


def band(sorted_dist, q):
    """The values a bootstrap percentile at level q may take from another generator's B resamples."""
    delta = Z_BAND * math.sqrt(q * (1 - q) * (1 / RESAMPLES + 1 / len(sorted_dist)))
    lo = nearest_rank(sorted_dist, max(q - delta, 1e-12))
    hi = nearest_rank(sorted_dist, min(q + delta, 1.0))
    return [float(lo), float(hi)]


def groups_of(cases, clustered):
    ids, codes = {}, []
    for i, c in enumerate(cases):
        key = ("template", c["template"]) if clustered and c["template"] is not None else ("case", i)
        codes.append(ids.setdefault(key, len(ids)))
    return np.array(codes, dtype=np.int64)


def criterion(rail, policy, cases, k, adjusted):
    confidence = policy["confidence"]
    clustered = policy["cluster"] == "template"
    kind, limit = parse_limit(rail)
    relative = kind == "max_increase"
    statistic = rail.get("statistic", "mean")
    action = rail.get("action", "block")
    blocking = action == "block"
    min_cases = rail.get("min_cases", default_min_cases(statistic))
    prices = policy.get("prices")
    judged, old, new = [], [], []
    for c in cases:
        o = case_value(rail["metric"], counted(c["old"], policy["repeats"]), prices and prices["old"])
        n = case_value(rail["metric"], counted(c["new"], policy["repeats"]), prices and prices["new"])
        if o is not None and n is not None:
            judged.append(c)
            old.append(o)
            new.append(n)
    old, new = np.array(old, dtype=float), np.array(new, dtype=float)
    groups = groups_of(judged, clustered)
    n = len(old)
    p = percentile_of(statistic)
    out = {"metric": rail["metric"], "statistic": statistic, "action": action, "limit_kind": kind, "limit": limit,
           "n": n, "excluded": len(cases) - n, "min_cases": min_cases}
    # No change is measured from a statistic that is not finite, nor a relative one from an old
    # statistic at or below 0, unless every case is the same on both sides (a change of 0).
    so = float(old.mean()) if p is None else float(nearest_rank(old, p)) if n else None
    sn = float(new.mean()) if p is None else float(nearest_rank(new, p)) if n else None
    unchanged = n > 0 and bool(np.all(old == new))
    finite = so is not None and math.isfinite(so) and math.isfinite(sn)
    if n > 0 and not (finite and (not relative or unchanged or so > 0)):
        out["old"] = so if so is not None and math.isfinite(so) else None
        out["new"] = sn if sn is not None and math.isfinite(sn) else None
        out["method"] = ("fieller" if relative else "paired_t") if p is None else "bootstrap"
        out["change"] = out["low"] = out["high"] = out["exceeded_low"] = None
        out["outcome"] = "not_shown"
        return out
    if unchanged and n >= min_cases:
        out["old"], out["new"] = so, sn
        out["method"] = ("fieller" if relative else "paired_t") if p is None else "bootstrap"
        out["change"] = out["low"] = out["high"] = out["exceeded_low"] = 0.0
        out["outcome"] = "within" if 0.0 <= limit else "exceeded"
        return out
    if p is None:
        out["old"], out["new"] = float(old.mean()), float(new.mean())
        out["method"] = "fieller" if relative else "paired_t"
        out["change"] = float(new.mean() / old.mean() - 1) if relative else float(new.mean() - old.mean())
        f = fieller if relative else paired_t
        shown = f(old, new, groups, confidence, clustered)
        at_adjusted = f(old, new, groups, adjusted if blocking else confidence, clustered)
        out["low"], out["high"] = shown if shown else (None, None)
        out["exceeded_low"] = at_adjusted[0] if at_adjusted else None
    else:
        qo, qn = float(nearest_rank(old, p)), float(nearest_rank(new, p))
        out["old"], out["new"] = qo, qn
        out["method"] = "bootstrap"
        out["change"] = float(compare(qo, qn, relative))
        if n < min_cases:
            # Not bootstrapped: no change, no interval.
            out["change"] = out["low"] = out["high"] = out["exceeded_low"] = None
        else:
            seed = policy["seed"]
            low, high, dist = bootstrap(old, new, groups, p, relative, confidence, seed, clustered)
            level = adjusted if blocking else confidence
            low_adj, _, dist2 = bootstrap(old, new, groups, p, relative, level, seed, clustered)
            assert np.array_equal(dist, dist2)
            alpha, alpha_x = 1 - confidence, 1 - level
            out["low"], out["high"], out["exceeded_low"] = low, high, low_adj
            out["bands"] = {"low": band(dist, alpha / 2), "high": band(dist, 1 - alpha / 2),
                            "exceeded_low": band(dist, alpha_x / 2)}
            # The outcome must not hang on the resamples: the limit lies outside each band used.
            for key in ("high", "exceeded_low"):
                lo, hi = out["bands"][key]
                assert hi <= limit or lo > limit, f"{rail}: the limit {limit} is inside the {key} band {out['bands'][key]}"
    if n < min_cases:
        outcome = "not_shown"
    elif out["high"] is not None and out["high"] <= limit:
        outcome = "within"
    elif out["exceeded_low"] is not None and out["exceeded_low"] > limit:
        outcome = "exceeded"
    else:
        outcome = "not_shown"
    out["outcome"] = outcome
    return out


def template_regression(tr, policy, cases, k):
    alpha = 1 - policy["confidence"]
    level = alpha / 2 / k if tr["action"] == "block" else alpha / 2
    groups = {}
    for c in cases:
        if c["template"] is None:
            continue
        score = lambda rs: sum(r["verdict"] == "PASS" for r in rs) / len(rs)
        o = score(counted(c["old"], policy["repeats"]))
        n = score(counted(c["new"], policy["repeats"]))
        groups.setdefault(c["template"], ([], []))
        groups[c["template"]][0].append(o)
        groups[c["template"]][1].append(n)
    tested = [(t, np.array(o), np.array(n)) for t, (o, n) in groups.items() if len(o) >= tr["min_cases"]]
    untested = len(groups) - len(tested)
    pvals = []
    for t, o, n in tested:
        d = n - o
        if np.all(d == d[0]):
            pvals.append(0.0 if d.mean() + tr["max_drop"] < 0 else 1.0)
        else:
            pvals.append(float(stats.ttest_1samp(d + tr["max_drop"], 0.0, alternative="less").pvalue))
    reject, adjusted, _, _ = multipletests(pvals, alpha=level, method="holm")
    rows = [{"template_id": t, "n": len(o), "old": float(o.mean()), "new": float(n.mean()), "p_value": p,
             "adjusted_p": float(a), "regressed": bool(r)}
            for (t, o, n), p, a, r in zip(tested, pvals, adjusted, reject)]
    return {"max_drop": tr["max_drop"], "min_cases": tr["min_cases"], "action": tr["action"], "alpha": level,
            "tested": len(rows), "untested": untested,
            "outcome": "exceeded" if any(r["regressed"] for r in rows) else "within",
            "templates": rows}


def expected(policy, cases):
    rails = policy["guardrails"]
    tr = policy.get("template_regression")
    k_true = sum(r.get("action", "block") == "block" for r in rails) + int(bool(tr) and tr["action"] == "block")
    k = max(k_true, 1)
    adjusted = 1 - (1 - policy["confidence"]) / k
    out = {"confidence": policy["confidence"], "blocking": k_true, "adjusted_confidence": adjusted, "cases": len(cases),
           "seed": policy["seed"], "resamples": RESAMPLES,
           "criteria": [criterion(r, policy, cases, k, adjusted) for r in rails]}
    if tr:
        out["template_regression"] = template_regression(tr, policy, cases, k)
    return out


def document():
    sets = []
    for name, policy, cases in case_sets():
        sets.append({"name": name, "policy": policy, "cases": cases, "expected": expected(policy, cases)})
    return {
        "made_by": "python3 scripts/guardrail-known-answers.py --write tests/fixtures/stats/guardrail-known-answers.json",
        "sources": {"numpy": np.__version__, "scipy": scipy.__version__, "statsmodels": statsmodels.__version__},
        "band_z": Z_BAND,
        "sets": sets,
    }


def close(a, b):
    if a is None or b is None:
        return a is b
    return abs(a - b) <= 1e-12 * max(1.0, abs(b))


def compare_docs(fresh, stored, where="$"):
    bad = []
    if isinstance(fresh, dict):
        for k in fresh:
            if k in ("sources", "made_by"):
                continue
            bad += compare_docs(fresh[k], stored.get(k) if isinstance(stored, dict) else None, f"{where}.{k}")
    elif isinstance(fresh, list):
        if not isinstance(stored, list) or len(stored) != len(fresh):
            return [f"{where}: length differs"]
        for i, (a, b) in enumerate(zip(fresh, stored)):
            bad += compare_docs(a, b, f"{where}[{i}]")
    elif isinstance(fresh, float) or isinstance(stored, float):
        if not close(stored, fresh):
            bad.append(f"{where}: the file has {stored!r}, numpy/scipy/statsmodels give {fresh!r}")
    elif fresh != stored:
        bad.append(f"{where}: the file has {stored!r}, the script {fresh!r}")
    return bad


def dumps(doc):
    """Indented, but each case on one line (the file stays small and readable)."""
    cases = [s.pop("cases") for s in doc["sets"]]
    text = json.dumps(doc, indent=1, ensure_ascii=False)
    for s, c in zip(doc["sets"], cases):
        s["cases"] = c
    lines = text.split("\n")
    out, k = [], 0
    for line in lines:
        out.append(line)
        if line == '   "name": ' + json.dumps(doc["sets"][k]["name"], ensure_ascii=False) + ",":
            body = ",\n    ".join(json.dumps(c, ensure_ascii=False) for c in cases[k])
            out.append('   "cases": [\n    ' + body + "\n   ],")
            k = min(k + 1, len(cases) - 1)
    text = "\n".join(out) + "\n"
    assert json.loads(text) == doc
    return text


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
            f.write(dumps(doc))
        print(f"wrote {args.write}: {len(doc['sets'])} case sets")
        return 0
    with open(args.check) as f:
        stored = json.load(f)
    bad = compare_docs(doc, stored)
    for line in bad[:20]:
        print(line, file=sys.stderr)
    if bad:
        print(f"{args.check}: {len(bad)} value(s) differ from numpy {np.__version__} / scipy {scipy.__version__} / "
              f"statsmodels {statsmodels.__version__}", file=sys.stderr)
        return 1
    print(f"{args.check}: every guardrail known answer matches numpy {np.__version__}, scipy {scipy.__version__} and "
          f"statsmodels {statsmodels.__version__} to 1e-12")
    return 0


if __name__ == "__main__":
    sys.exit(main())
