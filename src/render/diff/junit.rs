//! The diff as JUnit XML: one failing `<testcase>` per pass→fail flip of the new model (class
//! name: its template; name: its pipeline id), so that a CI system marks each case that
//! regressed between the two evaluations; the decision's change and the counts are the suite's
//! `<properties>`. Escaped as the report's JUnit is (`crate::render::junit`).

use super::headline;
use crate::diff::{id_label, GateDiff, Model};
use crate::render::junit::{attr, escape};
use std::fmt::Write;

fn verdict(v: &Option<String>) -> String {
    v.as_deref().map_or_else(|| "none".to_owned(), |v| format!("{v:?}"))
}

/// The JUnit XML of a diff.
pub fn diff_junit(d: &GateDiff) -> String {
    let failing: Vec<_> = d
        .cases
        .flips
        .iter()
        .filter(|f| f.model == Model::New && f.is_pass_to_fail())
        .collect();
    let n = failing.len().to_string();
    let mut x = String::with_capacity(1024 + failing.len() * 160);
    x.push_str("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<testsuites");
    for (k, v) in [
        ("name", "deploy-gate diff"),
        ("tests", &n),
        ("failures", &n),
        ("errors", "0"),
    ] {
        attr(&mut x, k, v);
    }
    x.push_str(">\n  <testsuite");
    for (k, v) in [
        ("name", "deploy-gate diff"),
        ("tests", &n),
        ("failures", &n),
        ("errors", "0"),
        ("skipped", "0"),
    ] {
        attr(&mut x, k, v);
    }
    x.push_str(">\n    <properties>\n");
    let c = &d.cases;
    let props: Vec<(&str, String)> = vec![
        ("summary", headline(d)),
        ("decision_before", d.decision.before.clone()),
        ("decision_after", d.decision.after.clone()),
        ("decision_changed", d.decision.changed.to_string()),
        ("reason_before", d.before.decision.reason.clone()),
        ("reason_after", d.after.decision.reason.clone()),
        ("policy_sha256_before", d.before.policy_digest.clone()),
        ("policy_sha256_after", d.after.policy_digest.clone()),
        (
            "policy_fields_changed",
            d.policy.iter().map(|p| p.field.as_str()).collect::<Vec<_>>().join(","),
        ),
        ("rests_on_before", d.before.rests_on.to_string()),
        ("rests_on_after", d.after.rests_on.to_string()),
        ("common_cases", c.common.to_string()),
        ("only_before", c.only_before.len().to_string()),
        ("only_after", c.only_after.len().to_string()),
        ("new_pass_to_fail", c.counts.new.pass_to_fail.to_string()),
        ("new_fail_to_pass", c.counts.new.fail_to_pass.to_string()),
        ("old_pass_to_fail", c.counts.old.pass_to_fail.to_string()),
        ("old_fail_to_pass", c.counts.old.fail_to_pass.to_string()),
    ];
    for (name, value) in props {
        x.push_str("      <property");
        attr(&mut x, "name", name);
        attr(&mut x, "value", &value);
        x.push_str("/>\n");
    }
    x.push_str("    </properties>\n");
    for f in failing {
        x.push_str("    <testcase");
        attr(&mut x, "classname", &f.template_id.text().unwrap_or_default());
        attr(&mut x, "name", &id_label(&f.pipeline_id));
        x.push_str(">\n      <failure");
        attr(&mut x, "type", "pass_to_fail");
        attr(
            &mut x,
            "message",
            &format!(
                "the new model passed before ({}) and fails now ({})",
                verdict(&f.before_verdict),
                verdict(&f.after_verdict)
            ),
        );
        x.push('>');
        let mut body = String::new();
        let _ = write!(
            body,
            "pipeline: {}\ntemplate: {}\nbefore: {}\nafter: {}",
            f.pipeline_id.to_json(),
            f.template_id.json(),
            verdict(&f.before_verdict),
            verdict(&f.after_verdict)
        );
        escape(&mut x, &body, false);
        x.push_str("</failure>\n    </testcase>\n");
    }
    x.push_str("  </testsuite>\n</testsuites>\n");
    x
}
