// Inline SVG charts. Labels come from files, so they are set as text nodes only.
import { s, text, percent, signed, shorten } from "./dom.js";

const W = 420;

/** Old vs new pass rate, as two horizontal bars with their intervals as error bars. */
export function passRateChart(oldRate, newRate, oldInterval, newInterval) {
  const rows = [
    ["old model", oldRate, "dg-bar-old", oldInterval],
    ["new model", newRate, "dg-bar-new", newInterval],
  ];
  const svg = s("svg", { viewBox: `0 0 ${W} 70`, role: "img", "aria-label": `Pass rate: old ${percent(oldRate)}, new ${percent(newRate)}`, class: "dg-chart" });
  const scale = (x) => 90 + Math.max(0, Math.min(1, x || 0)) * (W - 170);
  rows.forEach(([label, rate, cls, interval], i) => {
    const y = 8 + i * 30;
    svg.append(
      s("text", { x: 0, y: y + 15, class: "dg-chart-label" }, label),
      s("rect", { x: 90, y, width: W - 170, height: 20, class: "dg-bar-track" }),
      s("rect", { x: 90, y, width: scale(rate) - 90, height: 20, class: cls }),
      s("text", { x: W - 72, y: y + 15, class: "dg-chart-value" }, percent(rate)),
    );
    if (interval) {
      const [lo, hi] = [scale(interval.low), scale(interval.high)];
      svg.append(
        s("g", { class: "dg-errorbar", "data-testid": "error-bar" }, s("title", {}, `${label}: ${percent(interval.low)} to ${percent(interval.high)}`),
          s("line", { x1: lo, x2: hi, y1: y + 10, y2: y + 10 }), s("line", { x1: lo, x2: lo, y1: y + 4, y2: y + 16 }), s("line", { x1: hi, x2: hi, y1: y + 4, y2: y + 16 })),
      );
    }
  });
  return svg;
}

/** Per-template deltas as bars left (worse) or right (better) of zero. */
export function templateDeltaChart(templates) {
  const rows = templates.slice(0, 20);
  const height = 14 + rows.length * 22;
  const svg = s("svg", { viewBox: `0 0 ${W} ${height}`, role: "img", "aria-label": "Pass-rate change per template", class: "dg-chart" });
  const mid = 260;
  const half = W - mid - 60;
  const max = Math.max(0.05, ...rows.map((r) => Math.abs(r.delta)));
  svg.append(s("line", { x1: mid, x2: mid, y1: 0, y2: height, class: "dg-axis" }));
  rows.forEach((r, i) => {
    const y = 6 + i * 22;
    const w = (Math.abs(r.delta) / max) * Math.min(half, mid - 170);
    const label = text(r.template_id);
    svg.append(
      s("text", { x: 0, y: y + 13, class: "dg-chart-label" }, s("title", {}, shorten(label)), label.length > 26 ? `${label.slice(0, 25)}…` : label),
      s("rect", { x: r.delta < 0 ? mid - w : mid, y, width: w, height: 16, class: r.delta < 0 ? "dg-bar-worse" : "dg-bar-better" }),
      s("text", { x: W - 56, y: y + 13, class: "dg-chart-value" }, signed(r.delta, 3)),
    );
  });
  return svg;
}

/** Histograms of trajectory composites, old above new, 10 bins over [0, 1] (shares per bin). */
export function trajectoryChart(oldComposites, newComposites) {
  const bins = 10;
  const shares = (values) => {
    const c = new Array(bins).fill(0);
    for (const v of values) c[Math.min(bins - 1, Math.max(0, Math.floor(v * bins)))]++;
    return c.map((n) => ({ n, share: values.length ? n / values.length : 0 }));
  };
  const series = [
    ["old", shares(oldComposites), "dg-bar-old"],
    ["new", shares(newComposites), "dg-bar-new"],
  ];
  const max = Math.max(0.01, ...series.flatMap(([, bars]) => bars.map((b) => b.share)));
  const svg = s("svg", { viewBox: `0 0 ${W} 150`, role: "img", "aria-label": "Distribution of trajectory composite scores, old and new", class: "dg-chart" });
  const bw = (W - 40) / bins;
  series.forEach(([label, bars, cls], k) => {
    const base = 62 + k * 68;
    svg.append(s("text", { x: 0, y: base - 20, class: "dg-chart-label" }, label));
    bars.forEach((b, i) => {
      const hgt = (b.share / max) * 48;
      const range = `${(i / bins).toFixed(1)}–${((i + 1) / bins).toFixed(1)}`;
      svg.append(s("rect", { x: 40 + i * bw, y: base - hgt, width: bw - 2, height: hgt, class: cls }, s("title", {}, `${label} ${range}: ${b.n}`)));
    });
    svg.append(s("line", { x1: 40, x2: W, y1: base, y2: base, class: "dg-axis" }));
  });
  svg.append(s("text", { x: 40, y: 148, class: "dg-chart-value" }, "0"), s("text", { x: W - 10, y: 148, class: "dg-chart-value" }, "1"));
  return svg;
}

/** `1234567` as `1,234,567`. */
const grouped = (n) => String(n).replace(/\B(?=(\d{3})+(?!\d))/g, ",");
/** A bound to 3 decimals with a true minus sign. */
const bound = (x) => {
  const t = x.toFixed(3);
  return t.startsWith("-") ? (/[1-9]/.test(t) ? `−${t.slice(1)}` : t.slice(1)) : t;
};
/** The tolerance negated, as the reasons write it. */
const minus = (tol) => (tol === 0 ? "0" : `−${tol}`);

/** How a sequential decision stopped (the report's `sequential`), as the Markdown and HTML
 * reports say it (src/render/sequential.rs), e.g. `approved after 412 of 2,000 cases; lower
 * bound −0.031 > −0.05`. */
export function sequentialStop(q) {
  const of = `${grouped(q.used)} of ${grouped(q.budget)} ${q.unit === "template" ? "templates" : "cases"}`;
  const [l, u] = [q.lower, q.upper];
  if (q.stopped === "approved" && l !== null) return `approved after ${of}; lower bound ${bound(l)} > ${minus(q.tolerance)}`;
  if (q.stopped === "blocked" && u !== null) return `blocked after ${of}; upper bound ${bound(u)} < 0`;
  if (l !== null && u !== null) return `inconclusive after ${of} (the budget); interval ${bound(l)} to ${bound(u)}, tolerance ${q.tolerance}`;
  return `inconclusive after ${of} (the budget)`;
}

/** The reports' one sentence on a sequential decision. */
export const sequentialSentence = (q) => `Sequential (betting confidence sequence): ${sequentialStop(q)}`;

/** What to do after a sequential decision that stopped at its budget (null for any other stop),
 * as the reports say it: continue the same sequence, not a fresh fixed-size count. */
export function sequentialContinuation(q) {
  if (!q || q.stopped !== "budget") return null;
  const unit = q.unit === "template" ? "template" : "case";
  return q.used >= q.budget
    ? `The budget is spent (${grouped(q.used)} of ${grouped(q.budget)} ${unit}s): to continue, evaluate again with a larger budget (the same seed's order, the sequence picking up where it stopped, its error rate held).`
    : `Every ${unit} answered was used (${grouped(q.used)} of a budget of ${grouped(q.budget)}): to continue, answer more of the test set's cases and evaluate again (the same seed's order, its error rate held).`;
}

// The sequence chart's frame (as src/render/sequential.rs draws it in the HTML report).
const [SX0, SX1, SY0, SY1] = [40, 360, 10, 140];
const co = (x) => String(Math.round(x * 100) / 100);

/** A sequential decision's confidence sequence (the report's `sequential`): the lower and upper
 * bounds of the change in pass rate against the units used, lines at −tolerance and 0, and a
 * marker where it stopped. Null before any look. */
export function sequenceChart(q) {
  const { n, lower, upper } = q.looks;
  if (!n.length || n.length !== lower.length || n.length !== upper.length) return null;
  const units = q.unit === "template" ? "templates" : "cases";
  const lf = q.lower ?? -1;
  const uf = q.upper ?? 1;
  const xmax = Math.max(1, q.used, Math.min(q.budget, 5 * q.used));
  const span = Math.max(uf - lf, 3 * q.tolerance, 0.1);
  const ylo = Math.max(-1, Math.min(lf, -q.tolerance) - span / 2);
  const yhi = Math.max(ylo + 0.01, Math.min(1, Math.max(uf, 0) + span / 2));
  const x = (v) => SX0 + (v / xmax) * (SX1 - SX0);
  const y = (v) => SY1 - ((Math.min(yhi, Math.max(ylo, v)) - ylo) / (yhi - ylo)) * (SY1 - SY0);
  const pts = (vals) => n.map((k, i) => `${co(x(k))},${co(y(vals[i]))}`);
  const sentence = sequentialSentence(q);
  const sx = co(x(q.used));
  const svg = s(
    "svg",
    { viewBox: `0 0 ${W} 170`, role: "img", class: "dg-chart", "data-testid": "sequential-chart" },
    s("title", {}, `Confidence sequence for the change in pass rate (new − old) against the ${units} used`),
    s("desc", {}, sentence),
    s("polygon", { points: [...pts(upper), ...pts(lower).reverse()].join(" "), class: "dg-seq-band" }),
    s("line", { x1: SX0, x2: SX1, y1: co(y(0)), y2: co(y(0)), class: "dg-axis" }),
    s("line", { x1: SX0, x2: SX1, y1: co(y(-q.tolerance)), y2: co(y(-q.tolerance)), class: "dg-seq-tolerance" }),
    s("polyline", { points: pts(lower).join(" "), class: "dg-seq-bound", "data-bound": "lower" }),
    s("polyline", { points: pts(upper).join(" "), class: "dg-seq-bound", "data-bound": "upper" }),
    s(
      "g",
      { class: "dg-seq-stop", "data-testid": "sequential-stop", "data-n": q.used },
      s("title", {}, sentence),
      s("line", { x1: sx, x2: sx, y1: SY0, y2: SY1 }),
      s("circle", { cx: sx, cy: co(y(q.stopped === "blocked" ? uf : lf)), r: 4 }),
    ),
    s("text", { x: SX0 - 4, y: co(y(0) + 4), class: "dg-chart-value", "text-anchor": "end" }, "0"),
    s("text", { x: SX1 + 4, y: co(y(-q.tolerance) + 4), class: "dg-chart-value" }, minus(q.tolerance)),
    s("line", { x1: SX0, x2: SX0, y1: SY0, y2: SY1, class: "dg-axis" }),
    s("text", { x: SX0, y: 158, class: "dg-chart-value" }, "0"),
    s("text", { x: SX1, y: 158, class: "dg-chart-value", "text-anchor": "end" }, grouped(xmax)),
    s("text", { x: (SX0 + SX1) / 2, y: 158, class: "dg-chart-value", "text-anchor": "middle" }, units),
  );
  return svg;
}

/** A number as the guardrails' reasons write it (`src/guardrail/evaluate.rs`): a relative
 * change as `+12.3%`; an absolute one as `+0`, `+123.4`, `+0.1234` or `+1.234e-3`. `sign`:
 * with a leading `+` for a positive one (changes, limits), else none (values). */
export function guardrailFigure(x, relative, sign = true) {
  const plus = (t) => (sign && !t.startsWith("-") ? `+${t}` : t);
  if (relative) return `${plus((x * 100).toFixed(1))}%`;
  if (x === 0) return plus("0");
  const a = Math.abs(x);
  return plus(a >= 100 ? x.toFixed(1) : a >= 0.01 ? x.toFixed(4) : x.toExponential(3));
}

/** The per-case paired changes of a guardrail's metric (its report's `distribution`: equal bins
 * from `low` to `high`) as a small histogram, with zero (no change) and the limit marked when
 * they fall inside. One bar per bin, each with its range and count as a title. */
export function changeDistributionChart(name, dist, relative, limit) {
  const w = 240;
  const top = 4;
  const base = 46;
  const bins = dist.counts.length;
  const total = dist.counts.reduce((a, b) => a + b, 0);
  const max = Math.max(1, ...dist.counts);
  const fig = (x) => guardrailFigure(x, relative);
  const label = `Paired changes of ${name}, case by case: ${total} cases in ${bins} bins from ${fig(dist.low)} to ${fig(dist.high)}; the most in one bin ${max}; limit ${fig(limit)}`;
  const svg = s("svg", { viewBox: `0 0 ${w} 62`, role: "img", "aria-label": label, class: "dg-chart dg-spark", "data-testid": "guardrail-plot" }, s("title", {}, label));
  const span = dist.high - dist.low;
  // All changes equal: the core puts them in the middle bin; the axis then spans ±1 of them.
  const [lo, hi] = span > 0 ? [dist.low, dist.high] : [dist.low - 1, dist.low + 1];
  const x = (v) => ((v - lo) / (hi - lo)) * w;
  const bw = w / bins;
  dist.counts.forEach((n, i) => {
    const from = dist.low + (span * i) / bins;
    const to = dist.low + (span * (i + 1)) / bins;
    const hgt = (n / max) * (base - top);
    svg.append(s("rect", { x: i * bw + 0.5, y: base - hgt, width: Math.max(0, bw - 1), height: hgt, class: "dg-bar-new", "data-testid": "guardrail-bar", "data-count": n }, s("title", {}, `${fig(from)} to ${fig(to)}: ${n} case${n === 1 ? "" : "s"}`)));
  });
  svg.append(s("line", { x1: 0, x2: w, y1: base, y2: base, class: "dg-axis" }));
  for (const [v, cls, what] of [[0, "dg-axis", "no change"], [limit, "dg-limit", "limit"]]) {
    if (v < lo || v > hi) continue;
    svg.append(s("line", { x1: x(v), x2: x(v), y1: top - 2, y2: base + 2, class: cls }, s("title", {}, `${what}: ${fig(v)}`)));
  }
  svg.append(
    s("text", { x: 0, y: 60, class: "dg-chart-value" }, fig(dist.low)),
    s("text", { x: w, y: 60, class: "dg-chart-value", "text-anchor": "end" }, fig(dist.high)),
  );
  return svg;
}
