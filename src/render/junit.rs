//! The report as JUnit XML, the test-result format CI systems render (GitLab's test report,
//! Jenkins, Azure DevOps, the GitHub test-reporter actions): one `<testcase>` per test case
//! (class name: its template id; name: its pipeline id), a regression as a `<failure>`, a missing
//! or errored verdict (either model) as an `<error>`, and the decision, the policy and the input
//! digests as the suite's `<properties>`. With guardrails, one `<testcase>` per blocking
//! guardrail (class name `deploy-gate.guardrails`): a `<failure>` when exceeded, an `<error>`
//! when not shown; advisory ones as `<skipped>` test cases with their figures as the message.
//! A decision taken on missing evidence (too few cases answered by both models, too many
//! verdicts missing) is a `<failure>` of its own (class name `deploy-gate`, name `decision`), so
//! that such a suite never reads as a pass; in a sequential report a case neither model
//! answered was not run: `<skipped>`, never a missing verdict. The properties say how many cases
//! the decision rests on (`rests_on`).
//!
//! Every text is XML-escaped; characters XML 1.0 cannot carry at all (most C0 controls,
//! U+FFFE, U+FFFF) are written as `\u{…}` so that the file stays well-formed.

use super::evidence::{EvidenceView, INSUFFICIENT_PREFIX, MISSING_PREFIX};
use super::guardrails::GuardrailsView;
use crate::report::GateReport;
use crate::scoring::{CaseOutcome, CaseStatus};
use serde_json::Value;
use std::fmt::Write;

/// Whether XML 1.0 allows `c` in a document.
pub(super) fn xml_char(c: char) -> bool {
    matches!(c, '\t' | '\n' | '\r' | '\u{20}'..='\u{d7ff}' | '\u{e000}'..='\u{fffd}' | '\u{10000}'..)
}

/// `text` escaped for an attribute value (between double quotes) or, with `attribute` false,
/// for element content.
pub(super) fn escape(out: &mut String, text: &str, attribute: bool) {
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' if attribute => out.push_str("&quot;"),
            '\'' if attribute => out.push_str("&apos;"),
            // An attribute's whitespace is normalised to spaces unless written as a reference.
            '\t' if attribute => out.push_str("&#9;"),
            '\n' if attribute => out.push_str("&#10;"),
            '\r' => out.push_str("&#13;"),
            c if !xml_char(c) => {
                let _ = write!(out, "\\u{{{:x}}}", c as u32);
            }
            c => out.push(c),
        }
    }
}

pub(super) fn attr(out: &mut String, name: &str, value: &str) {
    out.push(' ');
    out.push_str(name);
    out.push_str("=\"");
    escape(out, value, true);
    out.push('"');
}

/// A JSON value as text: a string as it is, anything else as compact JSON (keys in the log's
/// order, so the same id spelt with other spacing is the same class).
fn json_text(raw: &str) -> String {
    match serde_json::from_str::<Value>(raw) {
        Ok(Value::String(s)) => s,
        Ok(other) => other.to_string(),
        Err(_) => raw.to_owned(),
    }
}

/// A number as the report writes it (`null` when absent).
fn number(x: Option<f64>) -> String {
    serde_json::to_string(&x).expect("a number serializes")
}

/// What goes wrong with one case, if anything: (`error` or `failure`, type, message).
fn outcome(c: &CaseOutcome) -> Option<(&'static str, &'static str, String)> {
    let verdict = |v: &Option<String>| v.as_deref().map_or_else(|| "none".to_owned(), |v| format!("{v:?}"));
    let side = |name: &str, missing: bool, errored: bool, error: &Option<String>| -> Option<String> {
        if errored {
            Some(match error {
                Some(e) => format!("the {name} model's run failed: {e}"),
                None => format!("the {name} model's run failed"),
            })
        } else if missing {
            Some(format!("no {name} verdict"))
        } else {
            None
        }
    };
    let problems: Vec<String> = [
        side("old", c.old_missing, c.old_errored, &c.old_error),
        side("new", c.new_missing, c.new_errored, &c.new_error),
    ]
    .into_iter()
    .flatten()
    .collect();
    let regressed = c.status == CaseStatus::Regressed;
    if !problems.is_empty() {
        let kind = if c.new_errored || c.old_errored {
            "errored_verdict"
        } else {
            "missing_verdict"
        };
        let mut message = problems.join("; ");
        if regressed {
            message.push_str(" (counted as a regression)");
        }
        return Some(("error", kind, message));
    }
    regressed.then(|| {
        let message = match (c.old_runs, c.old_passes, c.new_runs, c.new_passes) {
            (Some(or), Some(op), Some(nr), Some(np)) => format!(
                "regressed: the old model passed {op} of {or} run(s), the new one {np} of {nr} (last verdicts {} and {})",
                verdict(&c.old_verdict),
                verdict(&c.new_verdict)
            ),
            _ => format!(
                "regressed: the old model passed ({}), the new one fails ({})",
                verdict(&c.old_verdict),
                verdict(&c.new_verdict)
            ),
        };
        ("failure", "regression", message)
    })
}

/// A guardrail's test case: class name, name, the element (`failure`, `error`, `skipped`) and
/// its type (none: passed), the message.
type GuardrailCase = (&'static str, String, Option<(&'static str, &'static str)>, String);

/// The guardrails' test cases: one per blocking guardrail (and a blocking
/// `template_regression`), failed when exceeded, an error when not shown (it keeps the old
/// model, exit 4, as a missing verdict does), passed when within; an advisory one is skipped
/// with its figures as the message (it never decides, and CI systems list a skipped test's
/// message without failing the job).
fn guardrail_cases(report: &GateReport) -> Vec<GuardrailCase> {
    let Some(g) = report.guardrails.as_ref().and_then(GuardrailsView::of) else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for (blocking, class) in [
        (true, "deploy-gate.guardrails"),
        (false, "deploy-gate.guardrails.advisory"),
    ] {
        for r in g.rows(blocking) {
            let kind = match (blocking, r.outcome.as_str()) {
                (false, _) => Some(("skipped", "advisory")),
                (true, "exceeded") => Some(("failure", "guardrail_exceeded")),
                (true, "within") => None,
                (true, _) => Some(("error", "guardrail_not_shown")),
            };
            out.push((class, r.name.clone(), kind, r.line(|id| format!("{id:?}"))));
        }
    }
    out
}

/// The JUnit XML of `report`.
pub fn report_junit(report: &GateReport) -> String {
    // (Not the whole report as a `Value`: a pipeline id wider than 64 bits is no `Value` number.)
    let evidence = report.evidence.as_ref().and_then(|e| serde_json::to_value(e).ok());
    let ev = EvidenceView::new(
        evidence.as_ref(),
        report.test_set.num_cases as u64,
        report.cases.iter().map(|c| (c.old_missing, c.new_missing)),
    );
    junit(report, &ev)
}

/// The test case of a decision taken on missing evidence (too few cases answered by both
/// models, too many verdicts missing): a failure, so that the suite cannot look like a pass when
/// no case failed; `None` for any other decision.
fn decision_case(report: &GateReport, ev: &EvidenceView) -> Option<(&'static str, String)> {
    let d = &report.decision;
    if d.approved {
        return None;
    }
    let kind = if d.reason.starts_with(INSUFFICIENT_PREFIX) {
        "insufficient_evidence"
    } else if d.reason.starts_with(MISSING_PREFIX) {
        "missing_verdicts"
    } else {
        return None;
    };
    Some((kind, format!("{} ({})", d.reason, ev.rests_on_text())))
}

fn junit(report: &GateReport, ev: &EvidenceView) -> String {
    // In a sequential report a case neither model answered was not run: skipped, not missing.
    let not_run = |c: &CaseOutcome| ev.not_run.is_some() && c.old_missing && c.new_missing;
    let outcomes: Vec<_> = report
        .cases
        .iter()
        .map(|c| if not_run(c) { None } else { outcome(c) })
        .collect();
    let skipped_cases = report.cases.iter().filter(|c| not_run(c)).count();
    let guardrails = guardrail_cases(report);
    let decision = decision_case(report, ev);
    let kinds = || guardrails.iter().filter_map(|g| g.2.map(|k| k.0));
    let failures = outcomes.iter().flatten().filter(|o| o.0 == "failure").count()
        + kinds().filter(|k| *k == "failure").count()
        + usize::from(decision.is_some());
    let errors =
        outcomes.iter().flatten().filter(|o| o.0 == "error").count() + kinds().filter(|k| *k == "error").count();
    let skipped = (kinds().filter(|k| *k == "skipped").count() + skipped_cases).to_string();
    let tests = (report.cases.len() + guardrails.len() + usize::from(decision.is_some())).to_string();
    let (failures, errors) = (failures.to_string(), errors.to_string());

    let mut x = String::with_capacity(512 + report.cases.len() * 96);
    x.push_str("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<testsuites");
    attr(&mut x, "name", "deploy-gate");
    attr(&mut x, "tests", &tests);
    attr(&mut x, "failures", &failures);
    attr(&mut x, "errors", &errors);
    x.push_str(">\n  <testsuite");
    attr(&mut x, "name", "deploy-gate");
    attr(&mut x, "tests", &tests);
    attr(&mut x, "failures", &failures);
    attr(&mut x, "errors", &errors);
    attr(&mut x, "skipped", &skipped);
    x.push_str(">\n    <properties>\n");
    for (name, value) in properties(report, ev) {
        x.push_str("      <property");
        attr(&mut x, "name", &name);
        attr(&mut x, "value", &value);
        x.push_str("/>\n");
    }
    x.push_str("    </properties>\n");
    if let Some((kind, message)) = &decision {
        x.push_str("    <testcase");
        attr(&mut x, "classname", "deploy-gate");
        attr(&mut x, "name", "decision");
        x.push_str(">\n      <failure");
        attr(&mut x, "type", kind);
        attr(&mut x, "message", message);
        x.push('>');
        escape(&mut x, message, false);
        x.push_str("</failure>\n    </testcase>\n");
    }
    for (c, o) in report.cases.iter().zip(&outcomes) {
        x.push_str("    <testcase");
        attr(&mut x, "classname", &json_text(c.template_id.get()));
        attr(&mut x, "name", &c.pipeline_id.to_string());
        match o {
            None if not_run(c) => {
                x.push_str(">\n      <skipped");
                attr(
                    &mut x,
                    "message",
                    "not run (the sequential rule stopped before it was asked; it counts for neither model)",
                );
                x.push_str("/>\n    </testcase>\n");
            }
            None => x.push_str("/>\n"),
            Some((element, kind, message)) => {
                let _ = write!(x, ">\n      <{element}");
                attr(&mut x, "type", kind);
                attr(&mut x, "message", message);
                x.push('>');
                escape(&mut x, &details(c), false);
                let _ = write!(x, "</{element}>\n    </testcase>\n");
            }
        }
    }
    for (class, name, kind, message) in &guardrails {
        x.push_str("    <testcase");
        attr(&mut x, "classname", class);
        attr(&mut x, "name", name);
        match kind {
            None => x.push_str("/>\n"),
            Some(("skipped", _)) => {
                x.push_str(">\n      <skipped");
                attr(&mut x, "message", message);
                x.push_str("/>\n    </testcase>\n");
            }
            Some((element, kind)) => {
                let _ = write!(x, ">\n      <{element}");
                attr(&mut x, "type", kind);
                attr(&mut x, "message", message);
                x.push('>');
                escape(&mut x, message, false);
                let _ = write!(x, "</{element}>\n    </testcase>\n");
            }
        }
    }
    x.push_str("  </testsuite>\n</testsuites>\n");
    x
}

/// The body of a failure or an error: the case as the report lists it.
fn details(c: &CaseOutcome) -> String {
    let mut s = format!(
        "expected: {}\nold verdict: {}\nnew verdict: {}\nstatus: {}",
        c.expected.get(),
        serde_json::to_string(&c.old_verdict).expect("serializes"),
        serde_json::to_string(&c.new_verdict).expect("serializes"),
        serde_json::to_value(c.status)
            .expect("serializes")
            .as_str()
            .unwrap_or_default()
    );
    for (side, error) in [("old", &c.old_error), ("new", &c.new_error)] {
        if let Some(e) = error {
            let _ = write!(s, "\n{side} error: {e}");
        }
    }
    for (side, runs, passes) in [("old", c.old_runs, c.old_passes), ("new", c.new_runs, c.new_passes)] {
        if let (Some(r), Some(p)) = (runs, passes) {
            let _ = write!(s, "\n{side} runs: {p} of {r} pass");
        }
    }
    s
}

/// The suite's properties: the decision, the policy (each field, and its digest) and the inputs.
fn properties(r: &GateReport, ev: &EvidenceView) -> Vec<(String, String)> {
    let d = &r.decision;
    let mut p: Vec<(String, String)> = vec![
        ("decision".into(), d.outcome().as_str().into()),
        ("approved".into(), d.approved.to_string()),
        ("reason".into(), d.reason.clone()),
        ("rests_on".into(), ev.rests_on.to_string()),
        ("rests_on.text".into(), ev.rests_on_text()),
        ("num_cases".into(), d.num_cases.to_string()),
        ("candidates".into(), r.test_set.candidates.to_string()),
        ("task_old".into(), number(Some(d.task_old))),
        ("task_new".into(), number(Some(d.task_new))),
        ("task_delta".into(), number(Some(d.task_delta))),
        ("task_regressed".into(), d.details.task_regressed.to_string()),
        ("trajectory_checked".into(), d.details.trajectory_checked.to_string()),
    ];
    if let Some(n) = ev.not_run {
        p.push(("not_run".into(), n.to_string()));
    }
    if let Some(over) = ev.over() {
        p.push(("figures".into(), over));
    }
    if d.details.trajectory_checked {
        p.extend([
            ("trajectory_old".into(), number(d.trajectory_old)),
            ("trajectory_new".into(), number(d.trajectory_new)),
            ("trajectory_delta".into(), number(Some(d.trajectory_delta))),
            (
                "trajectory_regressed".into(),
                d.details.trajectory_regressed.to_string(),
            ),
        ]);
    }
    // The evidence behind the rule, in a report of this revision (a report made before
    // outcomes existed keeps the properties it had).
    if d.outcome.is_some() {
        let st = &r.stats.task;
        p.extend([
            ("task_interval.method".into(), st.delta.method.to_owned()),
            ("task_interval.low".into(), number(Some(st.delta.low))),
            ("task_interval.high".into(), number(Some(st.delta.high))),
        ]);
        if let Some(Some(c)) = &st.clustered {
            p.extend([
                ("clustered.clusters".into(), c.clusters.to_string()),
                ("clustered.design_effect".into(), number(c.design_effect)),
                ("clustered.low".into(), number(Some(c.delta.low))),
                ("clustered.high".into(), number(Some(c.delta.high))),
            ]);
        }
        if d.outcome() == crate::decision::Outcome::Inconclusive {
            p.push((
                "cases_needed".into(),
                st.sample_size
                    .cases_needed
                    .map_or_else(|| "null".to_owned(), |n| n.to_string()),
            ));
        }
    }
    if let Ok(Value::Object(policy)) = serde_json::to_value(&r.policy) {
        for (k, v) in policy {
            let text = match v {
                Value::String(s) => s,
                Value::Array(items) => items
                    .iter()
                    .map(|i| i.as_str().map_or_else(|| i.to_string(), str::to_owned))
                    .collect::<Vec<_>>()
                    .join(","),
                other => other.to_string(),
            };
            p.push((format!("policy.{k}"), text));
        }
    }
    if let Ok(digest) = r.policy.digest() {
        p.push(("policy.sha256".into(), digest));
    }
    for (i, f) in r.inputs.iter().enumerate() {
        p.push((format!("input.{i}.role"), f.role.as_str().to_owned()));
        p.push((format!("input.{i}.name"), f.name.clone()));
        p.push((format!("input.{i}.bytes"), f.bytes.to_string()));
        p.push((format!("input.{i}.sha256"), f.sha256.clone()));
    }
    p
}

#[cfg(test)]
mod tests {
    use super::*;

    fn escaped(text: &str, attribute: bool) -> String {
        let mut s = String::new();
        escape(&mut s, text, attribute);
        s
    }

    #[test]
    fn markup_and_forbidden_characters_are_escaped() {
        assert_eq!(escaped("a<b>&\"'", true), "a&lt;b&gt;&amp;&quot;&apos;");
        assert_eq!(escaped("x]]>y", false), "x]]&gt;y");
        assert_eq!(
            escaped("\u{0}\u{1b}\u{b}\u{fffe}", false),
            "\\u{0}\\u{1b}\\u{b}\\u{fffe}"
        );
        assert_eq!(escaped("a\tb\nc\rd", true), "a&#9;b&#10;c&#13;d");
        assert_eq!(escaped("a\tb\nc", false), "a\tb\nc");
        assert_eq!(escaped("é 😀 \u{fffd}", true), "é 😀 \u{fffd}");
    }

    #[test]
    fn template_ids_as_class_names() {
        assert_eq!(json_text("\"tmpl-a\""), "tmpl-a");
        assert_eq!(json_text("7"), "7");
        assert_eq!(json_text("null"), "null");
        assert_eq!(json_text("{\"b\": 1, \"a\": [1.0]}"), "{\"b\":1,\"a\":[1.0]}");
    }
}

#[cfg(test)]
mod report_tests {
    use super::*;
    use crate::render::testing::report;
    use serde_json::json;

    #[test]
    fn counts_and_one_result_per_case() {
        // p0 passes, p1 regresses, p2 has no new verdict, p3's runner failed, p4 passes.
        let ids = [json!("a"), json!("a"), json!("b"), json!({"k": 1}), json!(null)];
        let r = report(
            &ids,
            &[
                Some("PASS"),
                Some("FAIL"),
                None,
                Some("!boom <&> ]]>\u{1}"),
                Some("PASS"),
            ],
        );
        let x = report_junit(&r);
        assert!(
            x.contains("<testsuites name=\"deploy-gate\" tests=\"5\" failures=\"1\" errors=\"2\">"),
            "{x}"
        );
        assert!(x.contains("<testsuite name=\"deploy-gate\" tests=\"5\" failures=\"1\" errors=\"2\" skipped=\"0\">"));
        assert_eq!(x.matches("<testcase ").count(), 5);
        assert_eq!(x.matches("<failure ").count(), 1);
        assert_eq!(x.matches("<error ").count(), 2);
        assert!(x.contains("<testcase classname=\"a\" name=\"p1\">\n      <failure type=\"regression\""));
        assert!(x.contains("<testcase classname=\"b\" name=\"p2\">\n      <error type=\"missing_verdict\" message=\"no new verdict (counted as a regression)\">"));
        assert!(x.contains("<testcase classname=\"{&quot;k&quot;:1}\" name=\"p3\">\n      <error type=\"errored_verdict\" message=\"the new model&apos;s run failed: boom &lt;&amp;&gt; ]]&gt;\\u{1} (counted as a regression)\">"));
        assert!(x.contains("<testcase classname=\"null\" name=\"p4\"/>"));
        assert!(!x.contains("]]>"));
        assert!(!x.contains('\u{1}'));
        assert!(x.contains("<property name=\"decision\" value=\"blocked\"/>"));
        assert!(x.contains("<property name=\"approved\" value=\"false\"/>"));
        assert!(x.contains(&format!(
            "<property name=\"policy.sha256\" value=\"{}\"/>",
            r.policy.digest().unwrap()
        )));
        assert!(x.contains(&format!(
            "<property name=\"input.0.sha256\" value=\"{}\"/>",
            r.inputs[0].sha256
        )));
    }

    #[test]
    fn a_testcase_per_blocking_guardrail_advisory_ones_skipped() {
        use crate::render::testing::{guarded_report, HOSTILE_TEMPLATE};
        let r = guarded_report();
        let x = report_junit(&r);
        // 160 cases (40 regressed: the hostile template's), 3 blocking criteria, 1 advisory.
        assert!(
            x.contains("<testsuite name=\"deploy-gate\" tests=\"164\" failures=\"42\" errors=\"0\" skipped=\"1\">"),
            "{x}"
        );
        let guardrail = |name: &str| -> String {
            let open = format!("<testcase classname=\"deploy-gate.guardrails\" name=\"{name}\"");
            let at = x.find(&open).unwrap_or_else(|| panic!("{open}"));
            x[at..].split_inclusive('\n').take(3).collect()
        };
        let latency = guardrail("p95 latency_ms");
        assert!(
            latency.contains("<failure type=\"guardrail_exceeded\" message=\"block p95 latency_ms "),
            "{latency}"
        );
        assert!(
            latency.contains("limit increase ≤ +10.0%; n 160: exceeded"),
            "{latency}"
        );
        let templates = guardrail("template_regression");
        assert!(
            templates.contains("<failure type=\"guardrail_exceeded\""),
            "{templates}"
        );
        assert!(
            templates.contains("regressed: &quot;&lt;/td&gt;&lt;script&gt;alert(\\&quot;t\\&quot;)&lt;/script&gt;\\u{1b}&quot; 100.0% → 0.0%"),
            "{templates}"
        );
        assert!(guardrail("mean total_tokens")
            .starts_with("<testcase classname=\"deploy-gate.guardrails\" name=\"mean total_tokens\"/>"));
        assert!(x.contains(
            "<testcase classname=\"deploy-gate.guardrails.advisory\" name=\"mean metrics.steps\">\n      <skipped message=\"advise mean metrics.steps "
        ));
        assert!(!x.contains(HOSTILE_TEMPLATE) && !x.contains('\u{1b}'));
        #[cfg(not(target_arch = "wasm32"))]
        {
            let doc = roxmltree::Document::parse(&x).expect("well-formed XML");
            let cases = doc.descendants().filter(|n| n.has_tag_name("testcase")).count();
            assert_eq!(cases, 164);
            let skipped = doc.descendants().find(|n| n.has_tag_name("skipped")).unwrap();
            assert!(skipped
                .attribute("message")
                .unwrap()
                .ends_with("n 150 (10 excluded): exceeded"));
        }
        // Without guardrails: no such test case, nothing skipped.
        let plain = report_junit(&report(&[json!("a")], &[Some("PASS")]));
        assert!(!plain.contains("guardrails") && plain.contains("skipped=\"0\""));
    }

    #[test]
    fn deterministic() {
        let ids = [json!("a"), json!("b")];
        let outcomes = [Some("FAIL"), Some("PASS")];
        assert_eq!(
            report_junit(&report(&ids, &outcomes)),
            report_junit(&report(&ids, &outcomes))
        );
    }

    #[test]
    fn a_missing_evidence_decision_is_a_failure_not_a_pass() {
        // Four of 200 cases answered by the new model, every answer a pass.
        let templates: Vec<serde_json::Value> = (0..200).map(|i| serde_json::json!(format!("t{}", i % 4))).collect();
        let new: Vec<Option<&str>> = (0..200).map(|i| (i < 4).then_some("PASS")).collect();
        let mut r = report(&templates, &new);
        for (reason, kind) in [
            (
                "blocked: insufficient evidence (4 of 200 test cases answered by both models < min_samples 20; old 0 missing, new 196 missing)",
                "insufficient_evidence",
            ),
            (
                "inconclusive: missing verdicts (old 0 missing, new 196 missing of 200 test cases: 196 cases (98.0%) lack a verdict, more than max_missing 5%)",
                "missing_verdicts",
            ),
        ] {
            r.decision.approved = false;
            r.decision.reason = reason.into();
            let x = report_junit(&r);
            assert!(
                x.contains(&format!(
                    "<testcase classname=\"deploy-gate\" name=\"decision\">\n      <failure type=\"{kind}\" message=\"{} (rests on 4 of 200 test cases)\">",
                    reason.replace('<', "&lt;")
                )),
                "{x}"
            );
            assert!(x.contains("<property name=\"rests_on\" value=\"4\"/>"));
            assert!(x.contains("<property name=\"rests_on.text\" value=\"rests on 4 of 200 test cases\"/>"));
            // The decision is one more test, one more failure.
            assert!(x.contains("<testsuite name=\"deploy-gate\" tests=\"201\" failures=\"1\" errors=\"196\" skipped=\"0\">"), "{}", &x[..400]);
        }
        // An approval has no such test case.
        let ok = report(&[serde_json::json!("a")], &[Some("PASS")]);
        assert!(!report_junit(&ok).contains("<testcase classname=\"deploy-gate\" name=\"decision\">"));
    }

    #[test]
    fn cases_not_run_are_neither_missing_nor_failed() {
        // A sequential report whose verdict files answer 120 of 200 cases: its cases are the
        // used ones; the 80 not run are a property, never a missing verdict.
        let mut r = sequential_report_with_unanswered();
        let x = report_junit(&r);
        let used = r.cases.len();
        assert!(!x.contains("missing_verdict") && !x.contains("no old verdict") && !x.contains("no new verdict"));
        assert!(x.contains("<property name=\"not_run\" value=\"80\"/>"), "{x}");
        assert!(x.contains(&format!(
            "<property name=\"figures\" value=\"over the {used} cases used\"/>"
        )));
        assert!(x.contains(&format!("tests=\"{used}\" failures=\"0\" errors=\"0\" skipped=\"0\"")));
        assert!(!x.contains("<testcase classname=\"deploy-gate\" name=\"decision\">"));
        // A case neither model answered, were one listed, is skipped as not run.
        let mut c = r.cases[0].clone();
        (c.old_missing, c.new_missing) = (true, true);
        r.cases.push(c);
        let x = report_junit(&r);
        assert_eq!(x.matches("not run (the sequential rule stopped").count(), 1);
        assert!(!x.contains("missing_verdict") && x.contains("skipped=\"1\""));
    }

    /// The early stop's report as evaluated (its 80 cases without a verdict listed).
    fn sequential_report_with_unanswered() -> GateReport {
        use crate::gate::{evaluate_in_memory, MemoryInputs};
        let (mut audit, mut old_v, mut new_v) = (String::new(), String::new(), String::new());
        for i in 0..200 {
            let pid = format!("c{i:03}");
            audit += &format!("{{\"pipeline_id\":\"{pid}\",\"template_id\":\"t\",\"stage_id\":\"s\",\"stage_type\":\"llm\",\"input\":\"q\",\"output\":\"a\"}}\n");
            audit += &format!(
                "{{\"pipeline_id\":\"{pid}\",\"template_id\":\"t\",\"verdict\":\"PASS\",\"is_complete\":true}}\n"
            );
            if i < 120 {
                old_v += &format!("{{\"pipeline_id\":\"{pid}\",\"verdict\":\"PASS\"}}\n");
                new_v += &format!("{{\"pipeline_id\":\"{pid}\",\"verdict\":\"PASS\"}}\n");
            }
        }
        let policy = crate::policy::PolicyInput::from_json(
            r#"{"min_samples": 1, "max_samples": null, "mode": "non_inferiority", "cluster": "none",
                "sequential": true, "budget": 2000, "on_insufficient": "approve", "task_regression_tol": 0.1}"#,
        )
        .unwrap()
        .into_policy()
        .unwrap();
        let inputs = MemoryInputs {
            audit: vec![("audit.jsonl", audit.as_bytes())],
            old_verdicts: ("old_verdicts.jsonl", old_v.as_bytes()),
            new_verdicts: ("new_verdicts.jsonl", new_v.as_bytes()),
            old_trajectories: None,
            new_trajectories: None,
        };
        evaluate_in_memory(&inputs, &policy).unwrap().1
    }
}
