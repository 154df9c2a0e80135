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
