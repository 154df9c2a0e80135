// The Markdown summary of a report, for a pull request.
import { percent, signed } from "./dom.js";

const cell = (v) => String(v === null || v === undefined ? "—" : typeof v === "string" ? v : JSON.stringify(v)).replace(/[|\\`*_<>[\]]/g, "\\$&").replace(/\s+/g, " ");

export function markdownSummary(report) {
  const d = report.decision;
  const lines = [];
  lines.push(`## deploy-gate: ${d.approved ? "✅ approved — deploy the new model" : "⛔ blocked — keep the old model"}`);
  lines.push("");
  lines.push(`**Reason:** \`${d.reason}\``);
  lines.push("");
  lines.push("| | old | new | Δ | tolerance |");
  lines.push("|---|---|---|---|---|");
  lines.push(`| task pass rate | ${percent(d.task_old)} | ${percent(d.task_new)} | ${signed(d.task_delta)} | ${d.details.task_regression_tol} |`);
  if (d.details.trajectory_checked) {
    lines.push(`| trajectory score | ${d.trajectory_old} | ${d.trajectory_new} | ${signed(d.trajectory_delta)} | ${d.details.trajectory_regression_tol} |`);
  } else {
    lines.push("| trajectory score | — | — | not checked | — |");
  }
  const st = report.stats.task;
  lines.push("");
  lines.push(`Rule: \`${report.policy.mode}\`. ${Math.round(report.stats.confidence * 100)}% interval for the change in pass rate: ${signed(st.delta.low)} to ${signed(st.delta.high)} (Newcombe); McNemar b = ${st.mcnemar.b}, c = ${st.mcnemar.c}, p = ${st.mcnemar.p_exact.toPrecision(3)}.`);
  lines.push("");
  const o = report.verdicts.old;
  const n = report.verdicts.new;
  const regressed = report.cases.filter((c) => c.status === "regressed").length;
  const improved = report.cases.filter((c) => c.status === "improved").length;
  lines.push(`Test set: **${report.test_set.num_cases}** cases (${report.test_set.candidates} candidates${report.test_set.sampled ? `, sampled with seed ${report.policy.seed}` : ""}). Regressed ${regressed}, improved ${improved}. Missing verdicts: old ${o.missing}, new ${n.missing}; errored: old ${o.errored}, new ${n.errored}.`);
  if (report.templates.length) {
    lines.push("");
    lines.push("| template | n | old | new | Δ |");
    lines.push("|---|---|---|---|---|");
    for (const t of report.templates) lines.push(`| ${cell(t.template_id)} | ${t.n} | ${percent(t.old_pass_rate)} | ${percent(t.new_pass_rate)} | ${signed(t.delta)} |`);
  }
  if (report.warnings.length) {
    lines.push("");
    lines.push("<details><summary>Warnings</summary>");
    lines.push("");
    for (const w of report.warnings) lines.push(`- ${cell(w)}`);
    lines.push("");
    lines.push("</details>");
  }
  lines.push("");
  lines.push("Inputs:");
  for (const f of report.inputs) lines.push(`- ${f.role}: \`${cell(f.name)}\` (${f.bytes} bytes, sha256 \`${f.sha256}\`)`);
  lines.push("");
  lines.push(`<sub>${report.tool.name} ${report.tool.version}, policy: min_samples ${report.policy.min_samples}, max_samples ${report.policy.max_samples ?? "none"}, seed ${report.policy.seed}, on_insufficient ${report.policy.on_insufficient}</sub>`);
  return lines.join("\n") + "\n";
}
