// The report's `guardrails` on the page: a card of every criterion besides the task rule,
// blocking and advisory apart, the failing ones first, each with its figures and a small plot of
// the per-case paired changes. Template ids come from users' logs: text nodes only.
import { h, text, longText } from "./dom.js";
import { changeDistributionChart, guardrailFigure } from "./charts.js";

/** Failing first: exceeded, then not shown, then within. */
const ORDER = { exceeded: 0, not_shown: 1, within: 2 };
const outcomeText = (o) => o.replace("_", " ");
const METHODS = { paired_t: "paired t", fieller: "Fieller", bootstrap: "bootstrap" };
const level = (x) => `${Math.round(x * 10000) / 100}%`;

/** A criterion's name as the reasons write it: `p95 latency_ms`. */
export const criterionName = (c) => `${c.statistic} ${c.metric}`;

/** The regressed templates of a `template_regression` result. */
const regressed = (t) => t.templates.filter((r) => r.regressed);

/** The blocking criteria (and `template_regression` when it blocks) with outcome `o`, by name. */
export function blockingWith(g, o) {
  const names = g.criteria.filter((c) => c.action === "block" && c.outcome === o).map(criterionName);
  const t = g.template_regression;
  if (t && t.action === "block" && t.outcome === o) {
    const ids = regressed(t).map((r) => text(r.template_id));
    names.push(ids.length ? `template_regression (${ids.join(", ")})` : "template_regression");
  }
  return names;
}

/** One criterion: its outcome, figures and plot. */
function criterionItem(g, c) {
  const relative = c.limit_kind === "max_increase";
  const fig = (x) => guardrailFigure(x, relative);
  const value = (x) => (x === null ? "—" : guardrailFigure(x, false, false));
  let change = c.n < c.min_cases ? `not measured: ${c.n} of the ${c.min_cases} cases it needs` : "not measured";
  if (c.change !== null) {
    const interval = c.low !== null && c.high !== null ? `[${fig(c.low)}, ${fig(c.high)}]` : "[unbounded]";
    change = `${fig(c.change)} ${interval} (${METHODS[c.method] || c.method}, ${level(g.confidence)})`;
  }
  const short = c.n < c.min_cases ? `; needs ${c.min_cases}` : "";
  const rows = [
    ["old → new", `${value(c.old)} → ${value(c.new)}`, "values"],
    [relative ? "change (new/old − 1)" : "change (new − old)", change, "change"],
    ["limit", `${relative ? "max increase" : "max difference"} ${fig(c.limit)}`, "limit"],
    ["n (excluded)", `${c.n} (${c.excluded})${short}`, "n"],
  ];
  return h(
    "li",
    { class: `dg-guardrail dg-${c.outcome}`, "data-testid": "guardrail", "data-name": criterionName(c), "data-action": c.action, "data-outcome": c.outcome },
    h("h5", {}, h("span", { "data-testid": "guardrail-name" }, criterionName(c)), " — ", h("strong", { "data-testid": "guardrail-outcome" }, outcomeText(c.outcome))),
    h("dl", {}, rows.map(([k, v, id]) => [h("dt", {}, k), h("dd", { "data-testid": `guardrail-${id}` }, v)])),
    c.distribution ? changeDistributionChart(criterionName(c), c.distribution, relative, c.limit) : null,
  );
}

/** `template_regression`: its test, and the templates shown to regress by name. */
function templateItem(t) {
  const bad = regressed(t);
  return h(
    "li",
    { class: `dg-guardrail dg-${t.outcome}`, "data-testid": "guardrail", "data-name": "template_regression", "data-action": t.action, "data-outcome": t.outcome },
    h("h5", {}, h("span", { "data-testid": "guardrail-name" }, "template_regression"), " — ", h("strong", { "data-testid": "guardrail-outcome" }, outcomeText(t.outcome))),
    h(
      "dl",
      {},
      h("dt", {}, "limit"),
      h("dd", { "data-testid": "guardrail-limit" }, `max drop ${t.max_drop} of a template's pass rate (one-sided, Holm at α ${t.alpha.toPrecision(3)})`),
      h("dt", {}, "tested"),
      h("dd", { "data-testid": "guardrail-n" }, `${t.tested} of ${t.tested + t.untested} templates (those with at least ${t.min_cases} cases)`),
    ),
    bad.length
      ? h(
          "ul",
          { class: "dg-regressed", "aria-label": "Templates shown to regress" },
          bad.map((r) => h("li", { "data-testid": "regressed-template" }, h("code", {}, longText(text(r.template_id))), ` ${r.old.toFixed(3)} → ${r.new.toFixed(3)} (n ${r.n}, adjusted p ${r.adjusted_p.toPrecision(3)})`)),
        )
      : h("p", { class: "dg-muted" }, "No template shown to regress."),
  );
}

/** The guardrails card, or null for a report without `guardrails`. */
export function guardrailsCard(report) {
  const g = report.guardrails;
  if (!g) return null;
  const groups = ["block", "advise"].map((action) => {
    const items = g.criteria.filter((c) => c.action === action).map((c) => [c.outcome, criterionItem(g, c)]);
    const t = g.template_regression;
    if (t && t.action === action) items.push([t.outcome, templateItem(t)]);
    // A stable sort: the policy's order within an outcome.
    items.sort((a, b) => ORDER[a[0]] - ORDER[b[0]]);
    return [action, items.map(([, el]) => el)];
  });
  const head =
    g.cases === 0
      ? "Not judged: no case (the task rule's decision stands)."
      : `${g.cases} cases; intervals at ${level(g.confidence)}; ${g.blocking} blocking, each judged exceeded at ${level(g.adjusted_confidence)} (the error rate shared among them); quantiles by a seeded bootstrap (seed ${g.seed}, ${g.resamples} resamples).`;
  return h(
    "section",
    { class: "dg-card dg-guardrails", "data-testid": "guardrails" },
    h("h3", {}, "Guardrails"),
    h("p", { class: "dg-muted", "data-testid": "guardrails-summary" }, head),
    groups.map(([action, items]) =>
      items.length
        ? [
            h("h4", {}, action === "block" ? "Blocking" : "Advisory (never decide)"),
            h("ol", { class: "dg-guardrail-list", "data-testid": `guardrails-${action}` }, items),
          ]
        : null,
    ),
  );
}
