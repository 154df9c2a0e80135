// <dg-results>: the decision, its evidence and the exports for one report. Emits `dg-export`
// ({kind: "report" | "html" | "testset" | "markdown"}).
import { h, text, pretty, percent, signed, longText } from "../dom.js";
import { passRateChart, templateDeltaChart, trajectoryChart, sequenceChart, sequentialSentence, sequentialContinuation } from "../charts.js";
import { CaseTable } from "./case-table.js";
import { guardrailsCard, blockingWith } from "../guardrails.js";

const pct1 = (x) => `${(x * 100).toFixed(1)}`;
const conf = (report) => `${Math.round(report.stats.confidence * 1000) / 10}%`;

const grouped = (n) => n.toLocaleString("en-US");

/**
 * What the decision rests on (src/render/evidence.rs says it the same way): the report's
 * `evidence`, or for a report made before it existed, the cases both models answered.
 * `over`: "over the 94 cases used" when the figures are those of the cases the sequential rule
 * used, else null.
 */
export function evidenceOf(report) {
  const e = report.evidence;
  const cases = Array.isArray(report.cases) ? report.cases : null;
  const allCases = report.test_set?.num_cases ?? report.decision?.num_cases ?? 0;
  const restsOn = e ? e.rests_on : cases ? cases.filter((c) => !c.old_missing && !c.new_missing).length : allCases;
  const testCases = e ? e.test_cases : allCases;
  const used = Boolean(e && e.over === "used");
  const notRun = e && e.not_run ? e.not_run : 0;
  return {
    restsOn,
    testCases,
    used,
    notRun,
    restsOnText: `rests on ${grouped(restsOn)} of ${grouped(testCases)} test case${testCases === 1 ? "" : "s"}`,
    over: used ? `over the ${grouped(restsOn)} case${restsOn === 1 ? "" : "s"} used` : null,
    notRunText: notRun ? `${grouped(notRun)} test case${notRun === 1 ? "" : "s"} not run (the sequential rule stopped before ${notRun === 1 ? "it was" : "they were"} asked; they count for neither model)` : null,
  };
}

/** The label of the fixed-sample interval and McNemar's test after an early stop. */
export const DESCRIPTIVE = "descriptive, not the decision's evidence (after an early stop the fixed-sample interval and McNemar's test are not valid; the decision's evidence is the confidence sequence)";

/** What a decision taken on missing evidence asks of the reader; null for any other. */
export function missingEvidenceAdvice(reason) {
  if (reason.startsWith("blocked: insufficient evidence (")) return "Too few test cases were answered by both models to decide: check that the verdict files belong to this test set (the same pipeline ids) and that the runs finished, then evaluate again.";
  if (reason.startsWith("inconclusive: missing verdicts (")) return "Too many verdicts are missing to decide: answer the missing cases (or find why they are missing: another test set, a run that stopped, a join on the wrong id) and evaluate again.";
  return null;
}

/** The fewest units at which the sequential rule could decide, or null. */
function minUnitsText(q) {
  if (!q || q.min_units === undefined) return null;
  const unit = q.unit === "template" ? "templates" : "cases";
  if (q.min_units === null) return `no decision is possible within 1,000,000 ${unit}, whatever the verdicts`;
  return `no decision is possible before ${grouped(q.min_units)} ${unit} (of ${grouped(q.available)} available), whatever the verdicts`;
}

/** The decision's outcome: its `outcome`, or for a report made before outcomes existed,
 * approved or blocked. */
export const outcomeOf = (decision) => decision.outcome || (decision.approved ? "approved" : "blocked");

const methods = { newcombe: "Newcombe", paired_t: "paired t", cluster_robust_t: "cluster-robust t", bootstrap: "bootstrap" };
const methodName = (m) => methods[m] || m;

const dash = "—";
const ms = (c, k) => (c.latency_ms ? c.latency_ms[k].toFixed(1) : dash);
const tokens = (t) => (t.mean === null ? dash : `${t.mean.toFixed(1)} (${t.total} in all, ${t.records} records)`);
/** The rows of the "Latency and tokens" table (the Markdown and HTML reports' rows, `src/render/cost.rs`). */
const costRows = [
  ["records counted", (c) => String(c.records)],
  ["with a latency", (c) => String(c.with_latency)],
  ["latency p50 (ms)", (c) => ms(c, "p50")],
  ["latency p95 (ms)", (c) => ms(c, "p95")],
  ["latency mean (ms)", (c) => ms(c, "mean")],
  ["latency max (ms)", (c) => ms(c, "max")],
  ["prompt tokens a record", (c) => tokens(c.prompt_tokens)],
  ["completion tokens a record", (c) => tokens(c.completion_tokens)],
  ["attempts", (c) => (c.with_attempts ? `${c.attempts} over ${c.with_attempts} records, ${c.retried} retried` : dash)],
  ["target", (c) => c.target ?? (c.targets.length ? `${c.targets.length} targets: ${c.targets.join(", ")}` : dash)],
];

/** The report's `cost` per model as a table, or null for a report without it. */
export function costTable(report) {
  const cost = report.cost;
  if (!cost) return null;
  const cell = (c, get) => h("td", { class: "dg-num" }, c ? longText(get(c)) : dash);
  return h(
    "table",
    { "data-testid": "cost" },
    h("caption", {}, "Latency and tokens"),
    h("thead", {}, h("tr", {}, h("td", {}), h("th", { scope: "col", class: "dg-num" }, "old"), h("th", { scope: "col", class: "dg-num" }, "new"))),
    h("tbody", {}, costRows.map(([label, get]) => h("tr", {}, h("th", { scope: "row" }, label), cell(cost.old, get), cell(cost.new, get)))),
  );
}

/** The rule of the policy, in one plain sentence. */
export function ruleSentence(report) {
  const sentence = fixedRuleSentence(report);
  return evidenceOf(report).used ? `${sentence} The interval and McNemar's test here are ${DESCRIPTIVE}.` : sentence;
}

function fixedRuleSentence(report) {
  const p = report.policy;
  const t = report.stats.task;
  const ni = p.mode === "non_inferiority";
  let interval = `The ${conf(report)} interval for the change in pass rate is ${signed(t.delta.low, 3)} to ${signed(t.delta.high, 3)}`;
  if (t.clustered) interval += `; clustered by template, ${signed(t.clustered.delta.low, 3)} to ${signed(t.clustered.delta.high, 3)}${ni ? " (the rule uses this one)" : ""}`;
  const traj = report.decision.details.trajectory_checked ? `; likewise for trajectory quality with ${p.trajectory_regression_tol}` : "";
  if (ni && report.decision.outcome === undefined) {
    return `Non-inferiority rule: the new model is approved only if, with ${conf(report)} confidence, it is at most ${p.task_regression_tol} worse than the old one (the interval's lower bound must be ≥ −${p.task_regression_tol}${traj}). ${interval}.`;
  }
  if (ni) {
    return `Non-inferiority rule: approved when, with ${conf(report)} confidence, the new model is at most ${p.task_regression_tol} worse than the old one (the interval's lower bound > −${p.task_regression_tol}${traj}); blocked when the interval lies below 0 (a regression is shown); otherwise inconclusive (neither is shown), which keeps the old model. ${interval}.`;
  }
  return `Point rule (the reference): blocked when the new pass rate is below the old one minus ${p.task_regression_tol}. ${interval}${t.mcnemar ? `; McNemar p = ${t.mcnemar.p_exact.toPrecision(3)}` : ""}.`;
}

/** How many cases would settle an inconclusive decision; for a sequential decision stopped at
 * its budget, how to continue it instead. */
export function settle(report) {
  const advice = missingEvidenceAdvice(report.decision.reason);
  if (advice) return advice;
  const continued = sequentialContinuation(report.sequential);
  if (continued) return continued;
  const ss = report.stats.task.sample_size;
  return ss.cases_needed === null
    ? "With a tolerance of 0 no number of cases shows non-inferiority."
    : `About ${ss.cases_needed} cases would settle it (at the observed discordance; this test set has ${ss.num_cases}).`;
}

/** Whether the guardrails were judged, and if so the task rule's part in the decision as the
 * reason's head names it: blocked (the task rule blocked), open (the task rule did not approve)
 * or null (not named). */
function guardrailsJudged(report) {
  const g = report.guardrails;
  if (!g || g.cases === 0) return null;
  const head = report.decision.reason.split(";")[0];
  return { g, taskBlocked: head.includes("the task rule blocked"), taskOpen: head.includes("not shown: the task rule") };
}

const names = (list) => list.join(", ");

/** The decision in plain words, the guardrails' part first when they decided it. */
export function explain(report) {
  const judged = guardrailsJudged(report);
  const outcome = outcomeOf(report.decision);
  if (judged) {
    const exceeded = blockingWith(judged.g, "exceeded");
    const notShown = blockingWith(judged.g, "not_shown");
    if (outcome === "blocked" && exceeded.length) {
      const also = judged.taskBlocked ? ` ${explainTask(report).replace(/ Keep the old model\.$/, "")}` : "";
      return `A blocking guardrail is exceeded (shown beyond its limit): ${names(exceeded)}.${also} Keep the old model.`;
    }
    if (outcome === "inconclusive" && !judged.taskOpen) {
      return `The task rule approves, but for the blocking guardrail${notShown.length === 1 ? "" : "s"} ${names(notShown)} the data show neither that the change is within the limit nor that it is beyond it. Keep the old model, and gather more cases to settle it.`;
    }
    if (outcome === "inconclusive" && notShown.length) {
      return `${explainTask(report)} Nor is it shown for the blocking guardrail${notShown.length === 1 ? "" : "s"} ${names(notShown)}.`;
    }
    if (outcome === "approved" && blockingWith(judged.g, "within").length) {
      return `${explainTask(report).replace(/ It may be deployed\.$/, "")} Every blocking guardrail is within its limit. It may be deployed.`;
    }
  }
  return explainTask(report);
}

/** The task rule's decision in plain words. */
function explainTask(report) {
  const d = report.decision;
  const tol = d.details;
  const task = `task accuracy went from ${percent(d.task_old)} to ${percent(d.task_new)}`;
  const ev = evidenceOf(report);
  if (!d.approved && d.reason.startsWith("blocked: insufficient evidence (")) {
    return `The decision rests on only ${grouped(ev.restsOn)} of ${grouped(ev.testCases)} test cases answered by both models (at least ${report.policy.min_samples} are needed), so there is not enough evidence to replace the model. Keep the old one.`;
  }
  if (!d.approved && d.reason.startsWith("inconclusive: missing verdicts (")) {
    return "Too many test cases lack a verdict on one side or both for the evidence to be trusted: a missing verdict is no evidence either way. Keep the old model.";
  }
  if (outcomeOf(d) === "inconclusive") {
    if (report.sequential) return "The confidence sequence shows neither that the new model is within the tolerance of the old one nor that it is worse. Keep the old model, or continue the sequence with a larger budget.";
    return "The evidence shows neither that the new model is within the tolerance of the old one nor that it is worse. Keep the old model, and gather more cases to settle it.";
  }
  if (d.outcome && d.reason.includes("regression shown")) {
    return "The interval shows a regression: the new model is worse than the old one. Keep the old model.";
  }
  if (d.reason.includes("non-inferiority")) {
    if (d.approved) return "Non-inferiority is shown: the new model is, with the stated confidence, no worse than the tolerance allows. It may be deployed.";
    const parts = [];
    if (tol.task_regressed) parts.push("task accuracy");
    if (tol.trajectory_regressed) parts.push("trajectory quality");
    return `The data do not show that the new model's ${parts.join(" and ")} is within the tolerance of the old one's. Keep the old model, or gather more cases.`;
  }
  if (!d.approved && d.reason.startsWith("blocked: insufficient")) {
    return `Only ${report.test_set.candidates} usable past run(s) were found in the audit log (at least ${report.policy.min_samples} are needed), so there is not enough evidence to replace the model. Keep the old one.`;
  }
  const parts = [];
  if (tol.task_regressed) parts.push(`Task accuracy fell from ${percent(d.task_old)} to ${percent(d.task_new)}, more than the tolerance of ${tol.task_regression_tol} allows.`);
  if (tol.trajectory_regressed) parts.push(`Trajectory quality fell from ${d.trajectory_old} to ${d.trajectory_new}, more than the tolerance of ${tol.trajectory_regression_tol} allows.`);
  if (parts.length) return `${parts.join(" ")} Keep the old model.`;
  if (d.num_cases === 0) return "No test case was found; the policy (too few cases: approve) approves anyway, as the reference implementation does.";
  const traj = tol.trajectory_checked ? ` and trajectory quality from ${d.trajectory_old} to ${d.trajectory_new}` : " (trajectory quality was not checked)";
  return `The new model is not worse: ${task}${traj}. It may be deployed.`;
}

/** A sequential decision's confidence sequence and its sentence; null without one. */
function sequentialFigure(report) {
  const q = report.sequential;
  const chart = q ? sequenceChart(q) : null;
  if (!chart) return null;
  const minUnits = minUnitsText(q);
  const warnings = report.warnings.filter((w) => w.startsWith("sequential: "));
  return h(
    "figure",
    { class: "dg-sequential" },
    chart,
    h("figcaption", { "data-testid": "sequential" }, `${sequentialSentence(q)}.`),
    minUnits ? h("p", { class: "dg-muted", "data-testid": "min-units" }, `Fewest units: ${minUnits}.`) : null,
    warnings.map((w) => h("p", { class: "dg-warning", "data-testid": "sequential-warning" }, longText(w))),
  );
}

function card(title, rows, extra) {
  return h("section", { class: "dg-card" }, h("h3", {}, title), h("dl", {}, rows.map(([k, v]) => [h("dt", {}, k), h("dd", {}, v)])), extra);
}

export class ResultsView extends HTMLElement {
  /** Shows a report. `cases` are the test cases (for the drill-down; null when not at hand).
   * `options.source`: where the report comes from, when it is not a live evaluation (shown in
   * the banner) and `options.kind` what it is (`signed` by default when there is a source;
   * `file` for a reopened HTML report); `options.exports`: the export buttons offered (default:
   * all four); `options.answers(index)`: test case `index`'s two answers side by side (a live
   * evaluation's, read from the verdict files); `options.review`: the reviewer's marks (a
   * ReviewMarks); `options.costs`: each test case's latency and tokens per model
   * (`{old, new}`, each the core's CaseCosts or null); `options.trajectory(index)`: test case
   * `index`'s trajectory results, old beside new (the core's CaseTrajectory, or null). */
  show(report, cases, options = {}) {
    const d = report.decision;
    const outcome = outcomeOf(d);
    const ev = evidenceOf(report);
    const overNote = () => (ev.over ? h("p", { class: "dg-muted", "data-testid": "over" }, ev.over) : null);
    const advice = missingEvidenceAdvice(d.reason);
    const offered = options.exports || ["report", "html", "testset", "markdown"];
    // How many cases would settle the task rule: not said when only the guardrails are open.
    const judged = guardrailsJudged(report);
    const taskUnsettled = !judged || judged.taskOpen;
    const exportButton = (kind, label) => h("button", { type: "button", class: "dg-button dg-secondary", "data-testid": `export-${kind}`, onclick: () => this.dispatchEvent(new CustomEvent("dg-export", { bubbles: true, detail: { kind } })) }, label);
    const banner = h(
      "section",
      { class: `dg-banner dg-${outcome}`, "data-testid": "decision", "data-approved": String(d.approved), "data-outcome": outcome, "data-reason": d.reason, "data-source": options.kind || (options.source ? "signed" : "live"), role: "status" },
      options.source ? h("p", { class: "dg-source", "data-testid": "report-source" }, options.source) : null,
      h("h2", {}, { approved: "Approved — deploy the new model", blocked: "Blocked — keep the old model", inconclusive: advice ? "Inconclusive — keep the old model; too many test cases lack a verdict" : "Inconclusive — keep the old model" }[outcome], " ", h("span", { class: "dg-rests", "data-testid": "rests-on", "data-rests-on": String(ev.restsOn) }, `(${ev.restsOnText})`)),
      h("p", {}, explain(report)),
      ev.over ? h("p", { "data-testid": "figures-over" }, "Every figure below is ", h("strong", {}, ev.over), " by the sequential rule (the units it used when it stopped)", ev.notRunText ? ["; ", h("span", { "data-testid": "not-run" }, ev.notRunText)] : null, ".") : null,
      advice ? h("p", { class: "dg-settle", "data-testid": "missing-evidence" }, h("strong", {}, advice)) : null,
      outcome === "inconclusive" && taskUnsettled && !advice ? h("p", { class: "dg-settle", "data-testid": sequentialContinuation(report.sequential) ? "sequential-continue" : "cases-needed" }, h("strong", {}, settle(report))) : null,
      h("p", { class: "dg-muted", "data-testid": "rule" }, ruleSentence(report)),
      h("p", { class: "dg-muted" }, "Reason: ", h("code", {}, d.reason), " · test cases: ", h("strong", { "data-testid": "num-cases" }, String(d.num_cases))),
    );
    this.digestNote = h("span", { class: "dg-muted", "data-testid": "digest-status", "aria-live": "polite" });
    const labels = { report: "Download report JSON", testset: "Download test set JSONL", html: "Download HTML report", markdown: "Copy Markdown summary" };
    const exports = h("div", { class: "dg-exports" }, offered.map((kind) => exportButton(kind, labels[kind])), this.digestNote);

    const o = report.verdicts.old;
    const n = report.verdicts.new;
    const st = report.stats.task;
    const tbl = st.table;
    const twoByTwo = h(
      "table",
      { class: "dg-table dg-2x2", "data-testid": "two-by-two" },
      h("caption", {}, "Old × new on the same cases"),
      h("thead", {}, h("tr", {}, h("td"), h("th", { scope: "col" }, "new passes"), h("th", { scope: "col" }, "new fails"))),
      h("tbody", {}, h("tr", {}, h("th", { scope: "row" }, "old passes"), h("td", { class: "dg-num" }, String(tbl.both_pass)), h("td", { class: "dg-num dg-worse" }, String(tbl.old_only))), h("tr", {}, h("th", { scope: "row" }, "old fails"), h("td", { class: "dg-num dg-better" }, String(tbl.new_only)), h("td", { class: "dg-num" }, String(tbl.both_fail)))),
    );
    const ss = st.sample_size;
    const guidance = ss.cases_needed === null
      ? "Non-inferiority needs a tolerance above 0."
      : `Non-inferiority at tolerance ${ss.tolerance} would need about ${ss.cases_needed} cases (80% power, equal models, ${pct1(ss.discordance)}% discordant); this test set has ${ss.num_cases}.`;
    const ni = report.policy.mode === "non_inferiority";
    const cl = st.clustered;
    const clusteredRows = cl
      ? [
          ["clustered delta", h("span", { "data-testid": "clustered-interval" }, `${signed(cl.delta.low, 3)} to ${signed(cl.delta.high, 3)} (cluster-robust t${ni ? "; the rule uses it" : ""})`)],
          ["clusters", h("span", { "data-testid": "clusters" }, `${cl.clusters} (templates; a case without one is its own)`)],
          ["design effect", h("span", { "data-testid": "design-effect" }, cl.design_effect === null ? "—" : cl.design_effect.toFixed(2))],
        ]
      : report.policy.cluster === "template" && report.test_set.num_cases > 0
        ? [["clustered delta", h("span", { "data-testid": "clustered-interval" }, "none: every case has the same template (one cluster)")]]
        : [];
    const runs = o.runs !== undefined && n.runs !== undefined ? [["runs (every verdict counts)", `old ${o.passes} of ${o.runs} pass · new ${n.passes} of ${n.runs}`]] : [];
    const taskCard = card(
      "Task accuracy",
      [
        ["old → new", `${percent(d.task_old)} → ${percent(d.task_new)}`],
        ["old interval", `${percent(st.old.low)} – ${percent(st.old.high)} (${st.delta.method === "paired_t" ? "t" : "Wilson"} ${conf(report)})`],
        ["new interval", `${percent(st.new.low)} – ${percent(st.new.high)}`],
        ["delta", `${signed(d.task_delta)} (${signed(st.delta.low, 3)} to ${signed(st.delta.high, 3)}, ${methodName(st.delta.method)})`],
        ...clusteredRows,
        ["McNemar", (st.mcnemar ? `b = ${st.mcnemar.b}, c = ${st.mcnemar.c}: p = ${st.mcnemar.p_exact.toPrecision(3)} (mid-p ${st.mcnemar.p_mid.toPrecision(3)})` : "none (several verdicts a case)") + (ev.used ? " (descriptive)" : "")],
        ...runs,
        ["tolerance", String(d.details.task_regression_tol)],
        ["passed", `old ${o.passed} · new ${n.passed} of ${o.cases}`],
        ["wrong verdict", `old ${o.wrong} · new ${n.wrong}`],
        ["missing verdict", `old ${o.missing} · new ${n.missing}`],
        ["runner errors", `old ${o.errored} · new ${n.errored}`],
        ...(ev.notRun ? [["not run", h("span", { "data-testid": "not-run-count" }, `${grouped(ev.notRun)} (neither model was asked: the sequential rule stopped first)`)]] : []),
        ["extra verdicts", `old ${o.extra} · new ${n.extra}`],
      ],
      [overNote(), passRateChart(d.task_old, d.task_new, st.old, st.new), sequentialFigure(report), twoByTwo, h("p", { class: "dg-muted", "data-testid": "sample-size" }, guidance)],
    );
    const t = report.trajectories;
    const trajCard = d.details.trajectory_checked
      ? card(
          "Trajectory quality",
          [
            ["old → new", `${d.trajectory_old} → ${d.trajectory_new}`],
            ["delta", report.stats.trajectory ? `${signed(d.trajectory_delta)} (${signed(report.stats.trajectory.delta.low, 3)} to ${signed(report.stats.trajectory.delta.high, 3)}, bootstrap)` : signed(d.trajectory_delta)],
            ["tolerance", String(d.details.trajectory_regression_tol)],
            ["results", `old ${t.old.results} · new ${t.new.results}`],
            ["without judge score", `old ${t.old.skipped_without_judge} · new ${t.new.skipped_without_judge}`],
          ],
          trajectoryChart(t.old.composites, t.new.composites),
        )
      : card("Trajectory quality", [["status", "not checked (needs both trajectory files)"]]);

    // Reports made before the templates' intervals existed keep their table.
    const intervals = report.templates.some((r) => r.interval);
    // A template's row shows its cases in the cases' table.
    const showTemplate = (id) => {
      this.caseTable.setTemplate(id);
      this.caseTable.scrollIntoView({ block: "start" });
    };
    const templates = h(
      "section",
      { class: "dg-panel" },
      h("h3", {}, "Per template"),
      overNote(),
      report.templates.length ? templateDeltaChart(report.templates) : null,
      h(
        "table",
        { class: "dg-table" },
        h("thead", {}, h("tr", {}, ["template", "cases", "old", "new", "Δ", ...(intervals ? [`${conf(report)} interval`] : [])].map((c) => h("th", { scope: "col" }, c)))),
        h(
          "tbody",
          {},
          report.templates.map((r) =>
            h(
              "tr",
              { "data-testid": "template-row", tabindex: "0", class: "dg-clickable", title: "Show this template's cases", onclick: () => showTemplate(r.template_id), onkeydown: (e) => {
                if (e.key !== "Enter") return;
                e.stopPropagation();
                showTemplate(r.template_id);
              } },
              h("td", {}, longText(r.template_id)),
              h("td", { class: "dg-num" }, String(r.n)),
              h("td", { class: "dg-num" }, percent(r.old_pass_rate)),
              h("td", { class: "dg-num" }, percent(r.new_pass_rate)),
              h("td", { class: `dg-num ${r.delta < 0 ? "dg-worse" : r.delta > 0 ? "dg-better" : ""}` }, signed(r.delta)),
              intervals ? h("td", { class: "dg-num", "data-testid": "template-interval" }, r.interval ? `${signed(r.interval.low, 3)} to ${signed(r.interval.high, 3)}` : "—") : null,
            ),
          ),
        ),
      ),
    );

    const table = new CaseTable();
    this.caseTable = table;
    const review = options.review || null;
    const reviewTools = review ? this.reviewTools(review) : null;
    const casesPanel = h("section", { class: "dg-panel", id: "dg-cases" }, h("h3", {}, "Cases"), ev.over ? h("p", { class: "dg-muted", "data-testid": "over" }, `Listed ${ev.over}; the cases not run are not listed.`) : null, reviewTools, table);
    table.show(report.cases, cases, { answers: options.answers, trajectory: options.trajectory, review, costs: options.costs });

    const a = report.audit;
    const quality = h(
      "section",
      { class: "dg-panel", "data-testid": "data-quality" },
      h("h3", {}, "Audit log data quality"),
      h("dl", { class: "dg-grid" }, [
        ["files", a.files], ["lines read", a.lines], ["blank lines", a.blank_lines], ["stage entries", a.stage_entries],
        ["completion entries", a.completion_entries], ["successful completions", a.successful_completions], ["pipelines", a.pipelines],
        ["successful pipelines", a.successful_pipelines], ["…without stage entries", a.successful_without_stages],
        ["…without an input", a.successful_without_input], ["candidate cases", a.candidates], ["test cases", report.test_set.num_cases],
      ].map(([k, v]) => [h("dt", {}, k), h("dd", {}, String(v))])),
      Object.keys(a.skipped).length
        ? h("ul", { class: "dg-skipped" }, Object.entries(a.skipped).map(([reason, stat]) => h("li", {}, h("strong", {}, `${stat.count} × ${reason}`), " — first at ", longText(stat.first_lines.map((l) => `${l.file}:${l.line}`).join(", ")))))
        : h("p", { class: "dg-muted" }, "No line was skipped."),
      costTable(report),
    );
    const warnings = report.warnings.length ? h("section", { class: "dg-panel dg-warnings" }, h("h3", {}, "Warnings"), h("ul", {}, report.warnings.map((w) => h("li", {}, longText(w))))) : null;
    this.replaceChildren(banner, exports, h("div", { class: "dg-cards" }, taskCard, guardrailsCard(report), trajCard), templates, casesPanel, quality, warnings);
  }

  /** The review's line above the cases: how many are marked, and the review file's export and
   * import (emitted as `dg-review-export` and `dg-review-import` with the file). */
  reviewTools(review) {
    const status = h("span", { "data-testid": "review-status", "aria-live": "polite" });
    const input = h("input", { type: "file", accept: ".jsonl,.json,application/x-ndjson,text/plain", hidden: true, "data-testid": "review-import-input" });
    input.addEventListener("change", () => {
      if (input.files[0]) this.dispatchEvent(new CustomEvent("dg-review-import", { bubbles: true, detail: { file: input.files[0] } }));
      input.value = "";
    });
    const exportButton = h("button", { type: "button", class: "dg-button dg-secondary", "data-testid": "review-export", onclick: () => this.dispatchEvent(new CustomEvent("dg-review-export", { bubbles: true })) }, "Download review file");
    const importButton = h("button", { type: "button", class: "dg-button dg-secondary", "data-testid": "review-import", onclick: () => input.click() }, "Import a review file");
    this.reviewMessage = h("span", { class: "dg-muted", "data-testid": "review-message", "aria-live": "polite" });
    const update = () => {
      const n = review.size;
      exportButton.disabled = !review.ready || n === 0;
      importButton.disabled = !review.ready;
      status.textContent = !review.ready
        ? "Review marks: waiting for the files' sha256 (marks are kept per report). "
        : `Review marks: ${n} case(s) marked, ${review.saveError ? `not kept: ${review.saveError}` : "kept in this browser for this report"}. `;
    };
    // One listener at a time: the last report shown's.
    if (this.reviewListener) this.reviewListener.abort();
    this.reviewListener = new AbortController();
    review.addEventListener("change", (e) => e.detail.noteOnly || update(), { signal: this.reviewListener.signal });
    update();
    return h("div", { class: "dg-review-tools", "data-testid": "review-tools" }, status, exportButton, " ", importButton, input, " ", this.reviewMessage);
  }

  /** Says what an import or export of the review did (or why it could not). */
  reviewSaid(message, error = false) {
    if (!this.reviewMessage) return;
    this.reviewMessage.className = error ? "dg-error" : "dg-muted";
    this.reviewMessage.textContent = message;
  }

  /** While the audit log's sha256 is being computed, the exports that carry it wait. */
  setDigestPending(pending) {
    for (const kind of ["report", "html", "markdown"]) {
      const button = this.querySelector(`[data-testid="export-${kind}"]`);
      if (button) button.disabled = pending;
    }
    if (this.digestNote) this.digestNote.textContent = pending ? "Computing the audit log's sha256 (the report and the summary carry it)…" : "";
  }

  clear() {
    if (this.reviewListener) this.reviewListener.abort();
    this.caseTable = null;
    this.replaceChildren();
  }
}

export { pretty };
