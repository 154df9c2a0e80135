//! The HTML report: escaping, determinism, the sections, the embedded JSON, the charts.

use super::*;
use crate::gate::{evaluate_in_memory, MemoryInputs};
use crate::policy::{GatePolicy, OnInsufficient, PassSet};

const AUDIT: &[u8] = include_bytes!("../../../tests/fixtures/parity/approved/audit.jsonl");
const OLD: &[u8] = include_bytes!("../../../tests/fixtures/parity/approved/old_verdicts.jsonl");
const NEW: &[u8] = include_bytes!("../../../tests/fixtures/parity/approved/new_verdicts.jsonl");
const OLD_T: &[u8] = include_bytes!("../../../tests/fixtures/parity/approved/old_trajectories.jsonl");
const NEW_T: &[u8] = include_bytes!("../../../tests/fixtures/parity/approved/new_trajectories.jsonl");

fn fixture_report() -> GateReport {
    let mut policy = GatePolicy::default();
    policy.test_set.max_samples = None;
    policy.on_insufficient = OnInsufficient::Approve;
    // The reference's rule for the fixture's missing verdicts: failures, whatever their number.
    policy.max_missing = Some(1.0);
    let inputs = MemoryInputs {
        audit: vec![("audit.jsonl", AUDIT)],
        old_verdicts: ("old_verdicts.jsonl", OLD),
        new_verdicts: ("new_verdicts.jsonl", NEW),
        old_trajectories: Some(("old_trajectories.jsonl", OLD_T)),
        new_trajectories: Some(("new_trajectories.jsonl", NEW_T)),
    };
    evaluate_in_memory(&inputs, &policy).unwrap().1
}

/// Strings that break out of an element, an attribute, a comment or a script, plus a literal
/// `\u003c` and backslashes (which the embedded JSON's escaping must leave alone).
const HOSTILE: &str = r#"</script><script>alert(1)</script><!-- <img src=x onerror="alert(2)"> & 'q' \u003c \\"#;

/// A report with a hostile value in every string field that comes from an input: pipeline ids,
/// template ids (a string and an object key), expected verdicts, the models' verdicts, runner
/// errors, file names (and so the warnings and skipped-line locations), the pass verdicts.
fn hostile_report() -> GateReport {
    let q = |s: &str| serde_json::to_string(s).unwrap();
    let mut audit = String::new();
    let mut old = String::new();
    let mut new = String::new();
    for i in 0..30 {
        let id = q(&format!("{HOSTILE}-{i}"));
        let template = if i % 3 == 0 {
            format!("{{{}: {i}}}", q(HOSTILE))
        } else {
            q(&format!("{HOSTILE}-t{}", i % 2))
        };
        audit.push_str(&format!(
            "{{\"pipeline_id\": {id}, \"stage_id\": {h}, \"stage_type\": {h}, \"input\": {{\"q\": {h}}}, \"output\": {h}, \"reward\": null}}\n",
            h = q(HOSTILE)
        ));
        audit.push_str(&format!(
            "{{\"pipeline_id\": {id}, \"template_id\": {template}, \"verdict\": {h}, \"is_complete\": true, \"error\": null}}\n",
            h = q(HOSTILE)
        ));
        let wrong = q(&format!("{HOSTILE} wrong"));
        match i % 5 {
            0 => old.push_str(&format!("{{\"pipeline_id\": {id}, \"verdict\": {}}}\n", q(HOSTILE))),
            1 => old.push_str(&format!("{{\"pipeline_id\": {id}, \"verdict\": {wrong}}}\n")),
            2 => old.push_str(&format!(
                "{{\"pipeline_id\": {id}, \"verdict\": null, \"error\": {}}}\n",
                q(HOSTILE)
            )),
            3 => {}
            _ => old.push_str(&format!("{{\"pipeline_id\": {id}, \"verdict\": {}}}\n", q(HOSTILE))),
        }
        match i % 4 {
            0 => new.push_str(&format!("{{\"pipeline_id\": {id}, \"verdict\": {wrong}}}\n")),
            1 => new.push_str(&format!("{{\"pipeline_id\": {id}, \"verdict\": {}}}\n", q(HOSTILE))),
            2 => {}
            _ => new.push_str(&format!(
                "{{\"pipeline_id\": {id}, \"verdict\": \"FAIL\", \"error\": {}}}\n",
                q(HOSTILE)
            )),
        }
    }
    audit.push_str("not json </script>\n");
    let mut policy = GatePolicy::default();
    policy.test_set.min_samples = 1;
    policy.pass_verdicts = PassSet::new([HOSTILE, "PASS"]);
    // Its missing verdicts counted as failures (the reference's rule), whatever their number.
    policy.max_missing = Some(1.0);
    let name = format!("{HOSTILE}.jsonl");
    let inputs = MemoryInputs {
        audit: vec![(name.as_str(), audit.as_bytes())],
        old_verdicts: (name.as_str(), old.as_bytes()),
        new_verdicts: (name.as_str(), new.as_bytes()),
        old_trajectories: Some((name.as_str(), b"{\"overall_judge_score\": 0.5}\n{}\n")),
        new_trajectories: Some((name.as_str(), b"{\"overall_judge_score\": 0.25}\n")),
    };
    evaluate_in_memory(&inputs, &policy).unwrap().1
}

fn count(hay: &str, needle: &str) -> usize {
    hay.matches(needle).count()
}

/// The text of every `<svg …>…</svg>` in the page.
#[cfg(not(target_arch = "wasm32"))]
fn svgs(html: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let mut rest = html;
    while let Some(start) = rest.find("<svg ") {
        let end = start + rest[start..].find("</svg>").expect("an svg is closed") + "</svg>".len();
        out.push(&rest[start..end]);
        rest = &rest[end..];
    }
    out
}

#[test]
fn escapes_every_special_character() {
    assert_eq!(
        esc(r#"<script>&"'</script>"#),
        "&lt;script&gt;&amp;&quot;&#39;&lt;/script&gt;"
    );
    assert_eq!(esc("plain é 東京"), "plain é 東京");
}

#[test]
fn long_values_are_shortened_with_a_note() {
    let long = "é".repeat(SHOWN_CHARACTERS + 5);
    assert_eq!(
        shorten(&long),
        format!("{}… (5 more characters)", "é".repeat(SHOWN_CHARACTERS))
    );
    assert_eq!(shorten("short"), "short");
}

#[test]
fn hostile_values_are_escaped_everywhere() {
    let report = hostile_report();
    let json = report.to_json();
    // The hostile values are in the report: in ids, templates, verdicts, errors and file names.
    assert!(report.cases.iter().any(|c| c.old_errored), "an errored case");
    assert!(report
        .cases
        .iter()
        .any(|c| c.status == crate::scoring::CaseStatus::Regressed));
    assert!(count(&json, "</script>") > 50, "the report carries the hostile values");
    let html = report_html(&report);
    // The page has exactly its own two script elements, no comment, no other element.
    assert_eq!(count(&html, "<script"), 2, "{html}");
    assert_eq!(count(&html, "</script>"), 2);
    assert_eq!(count(&html, "<!--"), 0);
    assert_eq!(count(&html, "<img"), 0);
    assert_eq!(count(&html, "alert(1)</"), 0);
    // Each value is shown escaped: in the cases, the templates, the inputs, the warnings.
    let shown = esc(HOSTILE);
    assert!(
        count(&html, &format!("{shown}-0")) >= 1,
        "the pipeline id is shown escaped"
    );
    assert!(
        count(&html, &format!("{shown}-t1")) >= 2,
        "a template id is shown escaped (table and chart)"
    );
    assert!(
        count(&html, &format!("{shown}.jsonl")) >= 5,
        "the file names are shown escaped"
    );
    assert!(
        html.contains(&format!("{shown} wrong")),
        "a wrong verdict is shown escaped"
    );
    // An attribute cannot be closed by a value: every `"` inside the body's text is escaped.
    assert!(!html.contains("onerror=\"alert"));
    // The embedded JSON is the report, byte for byte.
    assert_eq!(embedded_json(&html).as_deref(), Some(json.as_str()));
}

#[test]
fn the_embedded_json_is_the_report_byte_for_byte() {
    let report = fixture_report();
    let html = report_html(&report);
    let embedded = embedded_json(&html).expect("the report is embedded");
    assert_eq!(embedded, report.to_json());
    let back: serde_json::Value = serde_json::from_str(&embedded).unwrap();
    let direct: serde_json::Value = serde_json::from_str(&report.to_json()).unwrap();
    assert_eq!(back, direct);
    // The escaped text is JSON too, with the same value (what a browser's JSON.parse reads).
    let open = format!("id=\"{EMBEDDED_ID}\">");
    let start = html.find(&open).unwrap() + open.len();
    let raw = &html[start..start + html[start..].find("</script>").unwrap()];
    assert!(!raw.contains('<'));
    let hostile = hostile_report();
    let hostile_html = report_html(&hostile);
    let start = hostile_html.find(&open).unwrap() + open.len();
    let raw = &hostile_html[start..start + hostile_html[start..].find("</script>").unwrap()];
    let parsed: serde_json::Value = serde_json::from_str(raw).unwrap();
    assert_eq!(
        parsed,
        serde_json::from_str::<serde_json::Value>(&hostile.to_json()).unwrap()
    );
}

#[test]
fn unescaping_leaves_escaped_backslashes_alone() {
    // `\\u003c` is an escaped backslash and the text `u003c`; `\u003c` is `<`.
    assert_eq!(
        unescape_embedded(r#""a\\u003cb" \u003c/script"#),
        r#""a\\u003cb" </script"#
    );
    assert_eq!(unescape_embedded(r#"\"\u003c\\\u003c"#), r#"\"<\\<"#);
    assert_eq!(unescape_embedded("é\\é"), "é\\é");
}

#[test]
fn the_same_report_gives_the_same_bytes() {
    let report = fixture_report();
    let a = report_html(&report);
    let b = report_html(&fixture_report());
    assert_eq!(a, b);
    assert_eq!(
        report_html_json(&report.to_json()).unwrap(),
        a,
        "from the JSON text as from the report"
    );
    let h = hostile_report();
    assert_eq!(report_html(&h), report_html(&hostile_report()));
}

#[test]
fn every_section_is_there() {
    let report = fixture_report();
    let html = report_html(&report);
    assert!(html.starts_with("<!DOCTYPE html>\n"));
    assert!(html.contains("data-testid=\"decision\" data-approved=\"true\""));
    assert!(html.contains("Approved — deploy the new model"));
    assert!(html.contains(&esc(&report.decision.reason)));
    for id in [
        "id=\"task\"",
        "id=\"trajectory\"",
        "id=\"templates\"",
        "id=\"cases\"",
        "id=\"data-quality\"",
        "id=\"warnings\"",
        "id=\"policy\"",
    ] {
        assert!(html.contains(id), "{id}");
    }
    // The intervals of the cards.
    let st = &report.stats.task;
    assert!(html.contains(&format!("{} – {}", pct(N(st.old.low)), pct(N(st.old.high)))));
    assert!(html.contains(&signed(N(st.delta.low), 3)));
    // Every input's digest, every warning, every template.
    for f in &report.inputs {
        assert!(html.contains(&f.sha256), "{}", f.name);
    }
    for w in &report.warnings {
        assert!(html.contains(&esc(w)), "{w}");
    }
    let templates = &html[html.find("id=\"templates\"").unwrap()..];
    let templates = &templates[..templates.find("</section>").unwrap()];
    assert_eq!(count(templates, "<tr><td>"), report.templates.len());
    // The cases: every regressed, improved or differing one, regressed first.
    let listed = report
        .cases
        .iter()
        .filter(|c| {
            use crate::scoring::CaseStatus::*;
            matches!(c.status, Regressed | Improved)
                || c.old_verdict.as_deref().map(str::to_uppercase) != c.new_verdict.as_deref().map(str::to_uppercase)
                || c.old_missing
                || c.new_missing
                || c.old_errored
                || c.new_errored
        })
        .count();
    assert!(listed > 0 && listed < report.cases.len());
    // Each listed case's row is its anchor: `case-N`, N its place in the report's cases.
    assert_eq!(count(&html, "<tr id=\"case-"), listed);
    for (i, c) in report.cases.iter().enumerate() {
        if c.status == crate::scoring::CaseStatus::Regressed {
            assert!(html.contains(&format!("<tr id=\"case-{i}\" class=\"regressed\"")));
        }
    }
    let first_improved = html.find("\" class=\"improved\"").unwrap();
    let last_regressed = html.rfind("\" class=\"regressed\"").unwrap();
    assert!(last_regressed < first_improved, "regressed cases come first");
    assert!(html.contains(&format!("{listed} of {} test case(s) listed", report.cases.len())));
    // A blocked report says so.
    let hostile = report_html(&hostile_report());
    assert!(hostile.contains("data-approved=\"false\""));
    assert!(hostile.contains("Blocked — keep the old model"));
}

#[test]
fn the_csp_allows_only_the_inline_script() {
    let html = report_html(&fixture_report());
    let start = html.find("<script>").unwrap() + "<script>".len();
    let script = &html[start..start + html[start..].find("</script>").unwrap()];
    assert_eq!(script, filter_script("case").0);
    let hash = format!(
        "sha256-{}",
        base64::engine::general_purpose::STANDARD.encode(Sha256::digest(script.as_bytes()))
    );
    let csp = format!("default-src 'none'; style-src 'unsafe-inline'; script-src '{hash}';");
    assert!(html.contains(&csp), "{csp}");
    assert_eq!(count(&html, "Content-Security-Policy"), 1);
    // Nothing is loaded from anywhere: no src or href but the empty data: icon.
    assert_eq!(count(&html, " src="), 0);
    assert_eq!(count(&html, " href="), 1);
    assert!(html.contains("<link rel=\"icon\" href=\"data:,\"/>"));
}

/// (roxmltree is a native dev-dependency.)
#[cfg(not(target_arch = "wasm32"))]
#[test]
fn the_charts_are_well_formed_svg() {
    for html in [report_html(&fixture_report()), report_html(&hostile_report())] {
        let charts = svgs(&html);
        assert_eq!(charts.len(), 3, "pass rates, templates, trajectories");
        for svg in charts {
            let doc = roxmltree::Document::parse(svg).unwrap_or_else(|e| panic!("{e}: {svg}"));
            assert_eq!(doc.root_element().tag_name().name(), "svg");
            assert!(doc.descendants().any(|n| n.has_tag_name("rect")));
        }
    }
}

#[test]
fn print_and_dark_mode_have_their_styles() {
    let html = report_html(&fixture_report());
    assert!(html.contains("@media (prefers-color-scheme:dark)"));
    assert!(html.contains("@media print"));
    assert!(
        html.contains("#cases tbody tr[hidden]{display:table-row!important}"),
        "printing shows every listed case"
    );
}

#[test]
fn other_json_is_refused() {
    assert!(matches!(report_html_json("{}"), Err(HtmlError::Shape(_))));
    assert!(matches!(report_html_json("not json"), Err(HtmlError::Shape(_))));
    let other = fixture_report().to_json().replace(SCHEMA, "deploy-gate/report/v0");
    assert!(matches!(report_html_json(&other), Err(HtmlError::Schema { .. })));
}

#[test]
fn guardrails_beside_the_decision_failing_first_hostile_ids_escaped() {
    use crate::render::testing::{guarded_report, HOSTILE_TEMPLATE};
    let report = guarded_report();
    let html = report_html(&report);
    let start = html
        .find("<section class=\"panel\" id=\"guardrails\"")
        .expect("a guardrails section");
    let section = &html[start..start + html[start..].find("</section>").unwrap()];
    // After the cards (the task decision), before the templates.
    assert!(html.find("id=\"task\"").unwrap() < start && start < html.find("id=\"templates\"").unwrap());
    // Blocking then advisory; the failing ones first.
    let outcomes: Vec<&str> = section
        .split("<tr data-outcome=\"")
        .skip(1)
        .map(|r| &r[..r.find('"').unwrap()])
        .collect();
    assert_eq!(outcomes, ["exceeded", "exceeded", "within", "exceeded"]);
    assert!(section.find("data-group=\"blocking\"").unwrap() < section.find("data-group=\"advisory\"").unwrap());
    let names: Vec<&str> = section
        .split("<th scope=\"row\">")
        .skip(1)
        .map(|r| &r[..r.find('<').unwrap()])
        .collect();
    assert_eq!(
        names,
        [
            "p95 latency_ms",
            "template_regression",
            "mean total_tokens",
            "mean metrics.steps"
        ]
    );
    assert!(
        section.contains("<td class=\"num\">150 (10 excluded)</td>"),
        "{section}"
    );
    // The hostile template is named, escaped: no element of its own, only the page's scripts.
    assert!(
        section.contains(&format!("<li><code>{}</code> 100.0% → 0.0%", esc(HOSTILE_TEMPLATE))),
        "{section}"
    );
    assert!(!html.contains(HOSTILE_TEMPLATE));
    assert_eq!(count(&html, "<script"), 2);
    assert_eq!(count(&html, "alert(\"t\")</"), 0);
    assert_eq!(embedded_json(&html).as_deref(), Some(report.to_json().as_str()));
    // A report without guardrails has no such section.
    assert!(!report_html(&fixture_report()).contains("id=\"guardrails\""));
}

/// The text of an HTML fragment without its tags.
fn plain_text(html: &str) -> String {
    let mut out = String::new();
    let mut in_tag = false;
    for c in html.chars() {
        match c {
            '<' => in_tag = true,
            '>' => in_tag = false,
            c if !in_tag => out.push(c),
            _ => {}
        }
    }
    out
}

#[test]
fn missing_evidence_decisions_say_what_they_rest_on() {
    use crate::render::testing::missing_evidence_json;
    let html = report_html_json(&missing_evidence_json(200, 4, 20).to_string()).unwrap();
    assert!(html.contains("data-outcome=\"blocked\""));
    assert!(html.contains("data-rests-on=\"4\""));
    assert!(html.contains(
        "<h1>Blocked — keep the old model <span class=\"rests\" data-testid=\"rests-on\">(rests on 4 of 200 test cases)</span></h1>"
    ));
    assert!(html.contains("data-testid=\"missing-evidence\"><strong>Too few test cases were answered by both models"));
    let html = report_html_json(&missing_evidence_json(200, 176, 20).to_string()).unwrap();
    assert!(html.contains("<h1>Inconclusive — keep the old model; too many test cases lack a verdict <span"));
    assert!(html.contains("more than max_missing 5%"));
    assert!(!html.contains("data-testid=\"cases-needed\""));
}

#[test]
fn an_early_stop_speaks_of_the_cases_used_and_not_run() {
    let v = crate::render::testing::early_stop_json(120);
    let used = v["evidence"]["rests_on"].as_u64().unwrap();
    let html = report_html_json(&v.to_string()).unwrap();
    let over = format!("over the {used} cases used");
    assert!(html.contains(&format!("(rests on {used} of 200 test cases)")));
    assert!(html.contains(&format!("Every figure below is <strong>{over}</strong>")));
    assert!(html.contains("<span data-testid=\"not-run\">80 test cases not run"));
    // The task card, the template table and the case table each say so.
    for id in ["id=\"task\"", "id=\"templates\"", "id=\"cases-panel\""] {
        let at = html.find(id).unwrap();
        let section = &html[at..at + html[at..].find("</section>").unwrap()];
        assert!(section.contains(&over), "{id}: {section}");
    }
    assert!(html.contains("<dt>not run</dt><dd>80 (neither model was asked"));
    assert!(
        html.contains("descriptive, not the decision&#39;s evidence")
            || html.contains("descriptive, not the decision's evidence")
    );
    let min_units = v["sequential"]["min_units"].as_u64().unwrap();
    assert!(html.contains(&format!(
        "data-testid=\"min-units\">Fewest units: no decision is possible before {min_units} cases"
    )));
    // Not run is never missing: the body (the embedded JSON aside) says no "80" next to missing.
    let body = plain_text(&html[..html.find("<script type=\"application/json\"").unwrap()]);
    assert!(!body.contains("old 80") && !body.contains("new 80") && !body.contains("80 missing"));
}

/// The sequential decision's chart. (roxmltree is a native dev-dependency.)
#[cfg(not(target_arch = "wasm32"))]
#[test]
fn the_chart_has_a_point_per_look_and_the_stop() {
    let q = serde_json::json!({"unit": "case", "budget": 100, "used": 3, "stopped": "approved", "tolerance": 0.05,
        "lower": -0.04, "upper": 0.5,
        "looks": {"n": [1, 2, 3], "lower": [-1.0, -0.5, -0.04], "upper": [1.0, 0.8, 0.5]}});
    let svg = sequential_chart(&q).unwrap();
    let doc = roxmltree::Document::parse(&svg).unwrap();
    let root = doc.root_element();
    assert_eq!(root.attribute("role"), Some("img"));
    let first = root.first_element_child().unwrap();
    assert_eq!(first.tag_name().name(), "title");
    assert!(root.children().any(|c| c.tag_name().name() == "desc"
        && c.text()
            == Some(
                "Sequential (betting confidence sequence): approved after 3 of 100 cases; lower bound −0.040 > −0.05"
            )));
    for bound in ["lower", "upper"] {
        let line = root
            .descendants()
            .find(|c| c.attribute("data-bound") == Some(bound))
            .unwrap();
        assert_eq!(line.attribute("points").unwrap().split(' ').count(), 3, "{bound}");
    }
    let stop = root
        .descendants()
        .find(|c| c.attribute("data-testid") == Some("sequential-stop"))
        .unwrap();
    assert_eq!(stop.attribute("data-n"), Some("3"));
    // The x axis runs to the budget, at most five times the units used: 15 here.
    assert!(svg.contains(">15</text>"), "{svg}");
    let none = serde_json::json!({"unit": "case", "budget": 100, "used": 0, "stopped": "budget", "tolerance": 0.05,
        "lower": null, "upper": null, "looks": {"n": [], "lower": [], "upper": []}});
    assert_eq!(sequential_chart(&none), None);
    assert_eq!(sequential_chart(&Value::Null), None);
}
