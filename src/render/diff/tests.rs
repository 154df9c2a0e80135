//! The diff's renderings: hostile ids, templates and verdicts stay values in every one of
//! them, and the same diff gives the same bytes.

use super::{html, junit, markdown};
use crate::diff::{diff, read_report, GateDiff};
use crate::gate::{evaluate_in_memory, MemoryInputs};
use crate::policy::GatePolicy;
use markdown::diff_markdown;
use serde_json::{json, Value};

/// Strings that end a table cell, open Markdown, HTML, a comment or a script, break a line,
/// reach a terminal, or look like an integer id.
const HOSTILE: [&str; 9] = [
    "a|b||c",
    "*bold* _u_ `code` ~~s~~ [x](javascript:alert(1))",
    "two\nlines\r\nand\u{2028}more",
    "</script><script>alert(1)</script><!-- <img src=x onerror=\"alert(2)\"> & 'q'",
    "</details><sub>&lt;b&gt;",
    "ends with a backslash \\",
    "\u{1b}[31mred\u{7} \\u003c",
    "5",
    "]]></failure>",
];

/// A report over one pipeline per hostile string (its id, its template, the expected verdict),
/// with the new model's verdicts from `new` (by position; `None`: missing).
fn hostile_report(new: &[Option<&str>]) -> String {
    let q = |s: &str| serde_json::to_string(s).unwrap();
    let (mut audit, mut old_v, mut new_v) = (String::new(), String::new(), String::new());
    for (i, h) in HOSTILE.iter().enumerate() {
        let id = q(h);
        audit += &format!(
            "{{\"pipeline_id\": {id}, \"template_id\": {t}, \"stage_id\": \"s\", \"stage_type\": \"llm\", \"input\": \"q\", \"output\": \"a\"}}\n",
            t = q(&format!("{h}-t"))
        );
        audit += &format!(
            "{{\"pipeline_id\": {id}, \"template_id\": {t}, \"verdict\": \"PASS\", \"is_complete\": true, \"error\": null}}\n",
            t = q(&format!("{h}-t"))
        );
        old_v += &format!("{{\"pipeline_id\": {id}, \"verdict\": \"PASS\"}}\n");
        if let Some(v) = new.get(i).copied().flatten() {
            new_v += &format!("{{\"pipeline_id\": {id}, \"verdict\": {}}}\n", q(v));
        }
    }
    let mut policy = GatePolicy::default();
    policy.test_set.min_samples = 1;
    // Missing verdicts counted as failures (the reference's rule), whatever their number.
    policy.max_missing = Some(1.0);
    let inputs = MemoryInputs {
        audit: vec![("a|<b>.jsonl", audit.as_bytes())],
        old_verdicts: ("old_verdicts.jsonl", old_v.as_bytes()),
        new_verdicts: ("new_verdicts.jsonl", new_v.as_bytes()),
        old_trajectories: None,
        new_trajectories: None,
    };
    evaluate_in_memory(&inputs, &policy).unwrap().1.to_json()
}

/// Before: every new verdict passes; after: each fails with a hostile verdict, and one is missing.
fn hostile_diff() -> GateDiff {
    let before = hostile_report(&[Some("PASS"); 9]);
    let mut after: Vec<Option<&str>> = HOSTILE.iter().map(|h| Some(*h)).collect();
    after[2] = None;
    let after = hostile_report(&after);
    diff(
        &read_report("before.json", before.as_bytes()).unwrap(),
        &read_report("after.json", after.as_bytes()).unwrap(),
    )
    .unwrap()
}

/// The cells of a GFM table row: split at each `|` not after a backslash.
fn cells(row: &str) -> Vec<String> {
    let mut out = vec![String::new()];
    let mut escaped = false;
    for c in row.chars() {
        if c == '|' && !escaped {
            out.push(String::new());
        } else {
            out.last_mut().unwrap().push(c);
        }
        escaped = c == '\\' && !escaped;
    }
    out[1..out.len() - 1].iter().map(|c| c.trim().to_owned()).collect()
}

#[test]
fn hostile_values_stay_in_their_cells_in_the_markdown() {
    let d = hostile_diff();
    assert_eq!(d.cases.counts.new.pass_to_fail, 9);
    assert!(d.changed());
    let md = markdown::diff_markdown(&d);
    // Every table row has as many cells as its header.
    let mut width = 0;
    for line in md.lines() {
        if !line.starts_with('|') {
            width = 0;
            continue;
        }
        let n = cells(line).len();
        if width == 0 {
            width = n;
        }
        assert_eq!(n, width, "{line}\n{md}");
    }
    // The flips table shows each id escaped, on its own line.
    let start = md.find("| pipeline | template | model | before | after |").unwrap();
    let rows: Vec<&str> = md[start..].lines().skip(2).take_while(|l| l.starts_with('|')).collect();
    assert_eq!(rows.len(), 9);
    let ids: Vec<String> = rows.iter().map(|r| cells(r)[0].clone()).collect();
    assert!(ids.contains(&r"a\|b\|\|c".to_owned()), "{ids:?}");
    assert!(
        ids.contains(&r#""5""#.to_owned()),
        "a string id that reads as an integer is quoted"
    );
    assert!(ids.contains(&"two lines and more".to_owned()));
    assert!(ids.contains(&r"\u{1b}\[31mred\u{7} \\u003c".to_owned()));
    // No tag from a value: every `<` is one the comment writes itself, or escaped.
    let mut rest = md.clone();
    for tag in ["<details>", "<summary>", "</summary>", "</details>", "<sub>", "</sub>"] {
        rest = rest.replacen(tag, "", 1);
    }
    assert!(
        rest.match_indices('<').all(|(i, _)| rest[..i].ends_with('\\')),
        "{rest}"
    );
    assert!(
        md.starts_with(
            "## deploy-gate diff: ⚠️ the decision changed: approved → blocked (rests on 9 of 9 → 8 of 9 test cases)\n"
        ),
        "{md}"
    );
}

#[test]
fn hostile_values_are_escaped_in_the_html_and_the_diff_is_embedded() {
    let d = hostile_diff();
    let page = html::diff_html(&d);
    assert_eq!(page.matches("<script").count(), 2, "only its own two scripts");
    assert_eq!(page.matches("</script>").count(), 2);
    assert_eq!(page.matches("<!--").count(), 0);
    assert_eq!(page.matches("<img").count(), 0);
    assert_eq!(page.matches("</details><sub>").count(), 0);
    assert!(!page.contains("onerror=\"alert"));
    assert!(page.contains(&crate::render::html::esc(HOSTILE[3])));
    assert_eq!(html::embedded_json(&page).as_deref(), Some(d.to_json().as_str()));
    // The one inline script is the one its CSP allows.
    let csp_start = page.find("script-src '").unwrap() + "script-src '".len();
    let hash = &page[csp_start..csp_start + page[csp_start..].find('\'').unwrap()];
    let open = "<script>";
    let s = page.rfind(open).unwrap() + open.len();
    let script = &page[s..s + page[s..].find("</script>").unwrap()];
    use base64::Engine as _;
    use sha2::Digest as _;
    let want = format!(
        "sha256-{}",
        base64::engine::general_purpose::STANDARD.encode(sha2::Sha256::digest(script.as_bytes()))
    );
    assert_eq!(hash, want);
    assert!(page.contains("data-testid=\"diff-decision\" data-changed=\"true\""));
}

#[cfg(not(target_arch = "wasm32"))]
#[test]
fn the_junit_is_well_formed_with_a_failure_per_new_pass_to_fail_flip() {
    let d = hostile_diff();
    let xml = junit::diff_junit(&d);
    let doc = roxmltree::Document::parse(&xml).expect("well-formed XML");
    let cases: Vec<roxmltree::Node> = doc.descendants().filter(|n| n.has_tag_name("testcase")).collect();
    let want: Vec<_> = d
        .cases
        .flips
        .iter()
        .filter(|f| f.model == crate::diff::Model::New && f.is_pass_to_fail())
        .collect();
    assert_eq!(cases.len(), want.len());
    assert_eq!(cases.len(), 9);
    for (node, flip) in cases.iter().zip(&want) {
        let label = crate::diff::id_label(&flip.pipeline_id);
        // Characters XML cannot hold are written as `\u{…}`, the rest as they are.
        let shown: String = label
            .chars()
            .map(|c| match c {
                '\u{1b}' | '\u{7}' => format!("\\u{{{:x}}}", c as u32),
                c => c.to_string(),
            })
            .collect();
        assert_eq!(node.attribute("name"), Some(shown.as_str()));
        assert_eq!(node.children().filter(|n| n.has_tag_name("failure")).count(), 1);
    }
    let suite = doc.descendants().find(|n| n.has_tag_name("testsuite")).unwrap();
    assert_eq!(suite.attribute("failures"), Some("9"));
    let prop = |name: &str| {
        doc.descendants()
            .find(|n| n.has_tag_name("property") && n.attribute("name") == Some(name))
            .and_then(|n| n.attribute("value"))
            .map(str::to_owned)
    };
    assert_eq!(prop("decision_changed").as_deref(), Some("true"));
    assert_eq!(prop("new_pass_to_fail").as_deref(), Some("9"));
}

#[test]
fn the_same_diff_gives_the_same_bytes() {
    let (a, b) = (hostile_diff(), hostile_diff());
    assert_eq!(a.to_json(), b.to_json());
    assert_eq!(markdown::diff_markdown(&a), markdown::diff_markdown(&b));
    assert_eq!(html::diff_html(&a), html::diff_html(&b));
    assert_eq!(junit::diff_junit(&a), junit::diff_junit(&b));
}

#[test]
fn the_interval_that_decided_is_shown_and_named() {
    // The default policy clusters by template: nine templates, so the rules use the clustered
    // interval, and the diff shows it.
    let mut d = hostile_diff();
    let clustered = (d.stats.before.low, d.stats.before.high);
    assert!(d.stats.before.clustered && d.stats.after.clustered);
    assert_eq!(d.stats.after.method.as_deref(), Some("cluster_robust_t"));
    let md = markdown::diff_markdown(&d);
    let row = md.lines().find(|l| l.starts_with("| task Δ")).unwrap();
    assert_eq!(row.matches(", clustered by template)").count(), 2, "{row}");
    let page = html::diff_html(&d);
    assert_eq!(page.matches(", clustered by template)</span>").count(), 2);
    // An unclustered interval reads as it always did.
    d.stats.before.clustered = false;
    let md = markdown::diff_markdown(&d);
    let row = md.lines().find(|l| l.starts_with("| task Δ")).unwrap();
    assert_eq!(row.matches(", clustered by template)").count(), 1, "{row}");
    assert_eq!((d.stats.before.low, d.stats.before.high), clustered);
}

#[test]
fn an_unchanged_decision_without_flips_says_so_everywhere() {
    let r = hostile_report(&[Some("PASS"); 9]);
    let e = read_report("r", r.as_bytes()).unwrap();
    let d = diff(&e, &e).unwrap();
    assert!(!d.changed());
    let md = markdown::diff_markdown(&d);
    assert!(
        md.starts_with("## deploy-gate diff: ✅ the decision is unchanged: approved (rests on 9 of 9 test cases)\n"),
        "{md}"
    );
    assert!(md.contains("**Policy:** the same resolved policy."));
    assert!(md.contains("**Inputs:** the same files (by sha256)."));
    assert!(!md.contains("**Flips**"));
    assert!(html::diff_html(&d).contains("data-changed=\"false\""));
    assert!(junit::diff_junit(&d).contains("tests=\"0\" failures=\"0\""));
}

/// A real report with guardrails (evaluated from generated verdict files), as JSON.
fn guarded_json() -> Value {
    serde_json::from_str(&crate::render::testing::guarded_report().to_json()).unwrap()
}

fn diff_of(before: &Value, after: &Value) -> GateDiff {
    let text = |v: &Value| serde_json::to_string(v).unwrap();
    diff(
        &read_report("before.json", text(before).as_bytes()).unwrap(),
        &read_report("after.json", text(after).as_bytes()).unwrap(),
    )
    .unwrap()
}

#[test]
fn guardrails_that_changed_outcome_are_listed_and_only_those() {
    use crate::diff::GuardrailChangeKind;
    use crate::render::testing::HOSTILE_TEMPLATE;
    let after = guarded_json();
    // Before: the latency guardrail within, no template regressed, no advisory guardrail.
    let mut before = after.clone();
    let g = &mut before["guardrails"];
    g["criteria"][0]["outcome"] = json!("within");
    g["criteria"][0]["change"] = json!(0.02);
    g["criteria"][0]["low"] = json!(-0.01);
    g["criteria"][0]["high"] = json!(0.05);
    g["criteria"].as_array_mut().unwrap().truncate(2);
    g["template_regression"]["outcome"] = json!("within");
    for t in g["template_regression"]["templates"].as_array_mut().unwrap() {
        t["regressed"] = json!(false);
    }
    let d = diff_of(&before, &after);
    let gc = d.guardrails.as_ref().expect("a guardrails part");
    assert_eq!(gc.unchanged, 1, "mean total_tokens is within on both sides");
    let names: Vec<(&str, GuardrailChangeKind)> = gc.changed.iter().map(|c| (c.criterion.as_str(), c.change)).collect();
    assert_eq!(
        names,
        [
            ("p95 latency_ms", GuardrailChangeKind::Changed),
            ("mean metrics.steps", GuardrailChangeKind::Added),
            ("template_regression", GuardrailChangeKind::Changed),
        ]
    );
    let latency = &gc.changed[0];
    assert_eq!(latency.before.as_ref().unwrap().outcome, "within");
    assert_eq!(latency.after.as_ref().unwrap().outcome, "exceeded");
    assert_eq!(latency.before.as_ref().unwrap().high, Some(0.05));
    let json: Value = serde_json::from_str(&d.to_json()).unwrap();
    assert_eq!(
        json["guardrails"]["changed"][2]["after"]["regressed"],
        json!([HOSTILE_TEMPLATE])
    );
    assert_eq!(json["guardrails"]["changed"][1]["before"], Value::Null);
    // The Markdown: one row each, before and after with the change and its interval; the
    // hostile template escaped.
    let md = diff_markdown(&d);
    let at = md.find("| guardrail | change | before | after |").expect(&md);
    let rows: Vec<Vec<String>> = md[at..]
        .lines()
        .skip(2)
        .take_while(|l| l.starts_with('|'))
        .map(cells)
        .collect();
    assert_eq!(rows.len(), 3);
    assert_eq!(rows[0][0], r"p95 latency\_ms");
    assert_eq!(
        rows[0][2],
        "block, within: +2.0% (−1.0% to +5.0%); limit increase ≤ +10.0%; n 160"
    );
    assert!(rows[0][3].starts_with("block, exceeded: +"), "{:?}", rows[0]);
    assert_eq!(rows[1][2], "—");
    assert_eq!(rows[2][1], "changed");
    assert!(
        rows[2][3].contains(r#"regressed \</td\>\<script\>alert("t")\</script\>\u{1b};"#),
        "{}",
        rows[2][3]
    );
    assert!(!md.contains(HOSTILE_TEMPLATE));
    // The HTML: a row each, the hostile template escaped.
    let page = html::diff_html(&d);
    let at = page
        .find("<section class=\"panel\" id=\"guardrails\">")
        .expect("a guardrails panel");
    let panel = &page[at..at + page[at..].find("</section>").unwrap()];
    assert_eq!(panel.matches("<tr><th scope=\"row\">").count(), 3, "{panel}");
    assert!(
        panel.contains("regressed &lt;/td&gt;&lt;script&gt;alert(&quot;t&quot;)&lt;/script&gt;\u{1b};"),
        "{panel}"
    );
    assert!(!page.contains(HOSTILE_TEMPLATE));
    // The same guardrails on both sides: none listed, the count said.
    let same = diff_of(&after, &after);
    let g = same.guardrails.as_ref().unwrap();
    assert_eq!((g.unchanged, g.changed.len()), (4, 0));
    assert!(diff_markdown(&same).contains("**Guardrails:** the same outcome on both sides for each of the 4."));
    // Reports without guardrails: no guardrails part, in the JSON or the Markdown.
    let mut plain = after.clone();
    plain.as_object_mut().unwrap().remove("guardrails");
    let d = diff_of(&plain, &plain);
    assert!(d.guardrails.is_none());
    assert!(!d.to_json().contains("\"guardrails\""));
    assert!(!diff_markdown(&d).contains("**Guardrails"));
    assert!(!html::diff_html(&d).contains("id=\"guardrails\""));
    // One side only: every criterion of the other added (or removed).
    let added = diff_of(&plain, &after);
    assert_eq!(added.guardrails.as_ref().unwrap().changed.len(), 4);
}

#[test]
fn the_evidence_of_each_side_is_compared() {
    use crate::render::testing::{early_stop_json, missing_evidence_json};
    let before = early_stop_json(120);
    let after = missing_evidence_json(200, 4, 20);
    let d = diff(
        &read_report("before.json", before.to_string().as_bytes()).unwrap(),
        &read_report("after.json", after.to_string().as_bytes()).unwrap(),
    )
    .unwrap();
    let used = before["evidence"]["rests_on"].as_u64().unwrap();
    let md = diff_markdown(&d);
    assert!(
        md.starts_with(&format!(
            "## deploy-gate diff: ⚠️ the decision changed: approved → blocked (rests on {used} of 200 → 4 of 200 test cases)\n"
        )),
        "{md}"
    );
    assert!(
        md.contains(&format!(
            "| evidence | rests on {used} of 200; missing old 0, new 0; not run 80 (figures over the cases used) | rests on 4 of 200; missing old 0, new 196 |"
        )),
        "{md}"
    );
    let json: Value = serde_json::from_str(&d.to_json()).unwrap();
    assert_eq!(json["before"]["evidence"]["not_run"], 80);
    assert_eq!(json["after"]["evidence"]["missing"], json!({"old": 0, "new": 196}));
    assert!(json["after"]["evidence"].get("not_run").is_none());
    assert!(html::diff_html(&d).contains("<dt>evidence</dt><dd>rests on 4 of 200; missing old 0, new 196</dd>"));
    let x = junit::diff_junit(&d);
    assert!(x.contains("<property name=\"rests_on_after\" value=\"4\"/>"), "{x}");
    // A diff of reports without `evidence` writes none.
    let r = hostile_report(&[Some("PASS"); 9]);
    let e = read_report("r", r.as_bytes()).unwrap();
    assert!(!diff(&e, &e).unwrap().to_json().contains("\"evidence\""));
}
