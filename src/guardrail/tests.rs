use super::{combine, CriterionResult, GuardrailOutcome, GuardrailsReport};
use crate::decision::Outcome;
use crate::gate::{evaluate_in_memory, MemoryInputs};
use crate::policy::{Action, GatePolicy, PolicyInput};
use crate::report::GateReport;
use serde_json::{json, Value};

fn policy(extra: Value) -> GatePolicy {
    let mut base =
        json!({"mode": "non_inferiority", "task_tol": 0.2, "min_samples": 1, "max_samples": null, "cluster": "none"});
    for (k, v) in extra.as_object().unwrap() {
        base[k] = v.clone();
    }
    PolicyInput::from_value(&base).unwrap().into_policy().unwrap()
}

fn refused(extra: Value) -> (String, String) {
    let mut base = json!({});
    for (k, v) in extra.as_object().unwrap() {
        base[k] = v.clone();
    }
    let e = PolicyInput::from_value(&base)
        .and_then(PolicyInput::into_policy)
        .unwrap_err();
    (e.field, e.message)
}

/// `n` cases in `templates` templates, both models passing every case except the new one on
/// the cases `fail_new` picks; latencies `old(i)`, `new(i)` and tokens per record.
fn report(
    n: usize,
    templates: usize,
    fail_new: impl Fn(usize) -> bool,
    latency: impl Fn(usize) -> (f64, f64),
    policy: &GatePolicy,
) -> GateReport {
    let (mut audit, mut old, mut new) = (String::new(), String::new(), String::new());
    for i in 0..n {
        let t = i % templates.max(1);
        audit.push_str(&format!(
            "{{\"pipeline_id\": \"c{i}\", \"stage_id\": \"s\", \"stage_type\": \"llm\", \"input\": \"in\", \"output\": {{}}, \"template_id\": \"t{t}\"}}\n\
             {{\"pipeline_id\": \"c{i}\", \"verdict\": \"PASS\", \"is_complete\": true, \"template_id\": \"t{t}\"}}\n"
        ));
        let (lo, ln) = latency(i);
        let v = if fail_new(i) { "FAIL" } else { "PASS" };
        old.push_str(&format!(
            "{{\"pipeline_id\": \"c{i}\", \"verdict\": \"PASS\", \"latency_ms\": {lo}, \"usage\": {{\"prompt_tokens\": 100, \"completion_tokens\": {}}}, \"metrics\": {{\"steps\": {}}}}}\n",
            20 + i % 7,
            3 + i % 3
        ));
        new.push_str(&format!(
            "{{\"pipeline_id\": \"c{i}\", \"verdict\": \"{v}\", \"latency_ms\": {ln}, \"usage\": {{\"prompt_tokens\": 100, \"completion_tokens\": {}}}, \"metrics\": {{\"steps\": {}}}}}\n",
            20 + i % 7,
            3 + i % 3
        ));
    }
    evaluate(&audit, &old, &new, policy)
}

/// The report on files in memory.
fn evaluate(audit: &str, old: &str, new: &str, policy: &GatePolicy) -> GateReport {
    let inputs = MemoryInputs {
        audit: vec![("audit.jsonl", audit.as_bytes())],
        old_verdicts: ("old.jsonl", old.as_bytes()),
        new_verdicts: ("new.jsonl", new.as_bytes()),
        old_trajectories: None,
        new_trajectories: None,
    };
    evaluate_in_memory(&inputs, policy).unwrap().1
}

/// A latency of some spread: 100 to 199 ms, scrambled.
fn spread(i: usize) -> f64 {
    100.0 + ((i * 37) % 100) as f64
}

#[test]
fn a_policy_without_guardrails_is_written_as_before() {
    let p = policy(json!({}));
    let v = p.to_value();
    for k in ["prices", "guardrails", "template_regression"] {
        assert!(v.get(k).is_none(), "{v}");
    }
    // An empty list is none.
    assert_eq!(policy(json!({"guardrails": []})).digest(), p.digest());
    let r = report(40, 4, |_| false, |i| (spread(i), spread(i)), &p);
    assert!(serde_json::to_value(&r).unwrap().get("guardrails").is_none());
}

#[test]
fn the_fields_parse_to_their_canonical_form_and_back() {
    let p = policy(json!({
        "prices": {"prompt_per_million": 0.5, "completion_per_million": "1.5"},
        "guardrails": [
            {"metric": "latency_ms", "statistic": "p95", "max_increase": "15%"},
            {"metric": "cost", "max_difference": 0.01, "action": "advise", "min_cases": "30"},
            {"metric": "metrics.steps", "statistic": "p50", "max_difference": 1}
        ],
        "template_regression": {"max_drop": "5%"}
    }));
    let v = p.to_value();
    assert_eq!(
        v["guardrails"],
        json!([
            {"metric": "latency_ms", "statistic": "p95", "max_increase": 0.15, "action": "block"},
            {"metric": "cost", "statistic": "mean", "max_difference": 0.01, "action": "advise", "min_cases": 30},
            {"metric": "metrics.steps", "statistic": "p50", "max_difference": 1.0, "action": "block"}
        ])
    );
    assert_eq!(
        v["prices"],
        json!({"old": {"prompt_per_million": 0.5, "completion_per_million": 1.5},
               "new": {"prompt_per_million": 0.5, "completion_per_million": 1.5}})
    );
    assert_eq!(
        v["template_regression"],
        json!({"max_drop": 0.05, "min_cases": 10, "action": "block"})
    );
    assert_eq!(GatePolicy::from_report(&v).unwrap(), p);
    assert_eq!(p.guardrails.blocking(), 3);
}

#[test]
fn every_bad_field_is_refused_by_its_name() {
    let cases = [
        (json!({"guardrails": {}}), "guardrails", "a list"),
        (
            json!({"guardrails": [{"statistic": "mean", "max_increase": 0.1}]}),
            "guardrails[0].metric",
            "missing",
        ),
        (
            json!({"guardrails": [{"metric": "latency", "max_increase": 0.1}]}),
            "guardrails[0].metric",
            "latency_ms",
        ),
        (
            json!({"guardrails": [{"metric": "metrics.", "max_increase": 0.1}]}),
            "guardrails[0].metric",
            "metrics.NAME",
        ),
        (
            json!({"guardrails": [{"metric": "latency_ms", "statistic": "p75", "max_increase": 0.1}]}),
            "guardrails[0].statistic",
            "p99",
        ),
        (
            json!({"guardrails": [{"metric": "latency_ms"}]}),
            "guardrails[0]",
            "needs a limit",
        ),
        (
            json!({"guardrails": [{"metric": "latency_ms", "max_increase": 0.1, "max_difference": 3}]}),
            "guardrails[0]",
            "both",
        ),
        (
            json!({"guardrails": [{"metric": "latency_ms", "max_increase": "ten%"}]}),
            "guardrails[0].max_increase",
            "percentage",
        ),
        (
            json!({"guardrails": [{"metric": "latency_ms", "max_increase": "10"}]}),
            "guardrails[0].max_increase",
            "without `%`",
        ),
        (
            json!({"template_regression": {"max_drop": "0.05"}}),
            "template_regression.max_drop",
            "without `%`",
        ),
        (
            json!({"guardrails": [{"metric": "latency_ms", "max_increase": "-100%"}]}),
            "guardrails[0].max_increase",
            "above -100%",
        ),
        (
            json!({"guardrails": [{"metric": "latency_ms", "max_difference": "inf"}]}),
            "guardrails[0].max_difference",
            "finite",
        ),
        (
            json!({"guardrails": [{"metric": "latency_ms", "max_increase": 0.1, "action": "warn"}]}),
            "guardrails[0].action",
            "block or advise",
        ),
        (
            json!({"guardrails": [{"metric": "latency_ms", "max_increase": 0.1, "min_cases": 1}]}),
            "guardrails[0].min_cases",
            "≥ 2",
        ),
        (
            json!({"guardrails": [{"metric": "latency_ms", "max_increase": 0.1, "limit": 3}]}),
            "guardrails[0].limit",
            "unknown field",
        ),
        (
            json!({"guardrails": [{"metric": "latency_ms", "max_increase": 0.1}, {"metric": "cost", "max_increase": 0.1}]}),
            "guardrails[1].metric",
            "prices",
        ),
        (
            json!({"prices": {"old": {"prompt_per_million": 1, "completion_per_million": 1}}}),
            "prices.new",
            "missing",
        ),
        (
            json!({"prices": {"prompt_per_million": -1, "completion_per_million": 1}}),
            "prices.prompt_per_million",
            "negative",
        ),
        (
            json!({"prices": {"prompt_per_million": 1}}),
            "prices.completion_per_million",
            "missing",
        ),
        (
            json!({"template_regression": {"max_drop": 1.5}}),
            "template_regression.max_drop",
            "between 0 and 1",
        ),
        (
            json!({"template_regression": {"min_cases": 0}}),
            "template_regression.min_cases",
            "≥ 2",
        ),
        (
            json!({"template_regression": {"drop": 0.1}}),
            "template_regression.drop",
            "unknown field",
        ),
        (
            json!({"template_regression": true}),
            "template_regression",
            "JSON object",
        ),
    ];
    for (input, field, says) in cases {
        let (f, message) = refused(input.clone());
        assert_eq!(f, field, "{input}: {message}");
        assert!(message.contains(says), "{input}: {message}");
    }
}

#[test]
fn a_slower_model_is_blocked_by_its_latency_guardrail_and_the_reason_says_why() {
    let p = policy(json!({"guardrails": [
        {"metric": "latency_ms", "max_increase": "10%"},
        {"metric": "total_tokens", "statistic": "p50", "max_increase": "10%"},
        {"metric": "metrics.steps", "max_difference": 2, "action": "advise"}
    ]}));
    let r = report(300, 6, |_| false, |i| (spread(i), 1.4 * spread(i)), &p);
    let g = r.guardrails.as_ref().unwrap();
    let outcomes: Vec<&str> = g.criteria.iter().map(|c| c.outcome.as_str()).collect();
    assert_eq!(outcomes, ["exceeded", "within", "within"]);
    let lat = &g.criteria[0];
    assert!((lat.change.unwrap() - 0.4).abs() < 1e-9, "{lat:?}");
    assert_eq!((lat.n, lat.excluded, lat.method), (300, 0, "fieller"));
    assert_eq!(r.decision.outcome(), Outcome::Blocked);
    assert!(!r.decision.approved);
    let reason = &r.decision.reason;
    assert!(
        reason.starts_with("blocked: mean latency_ms exceeded its limit; task rule: non-inferiority shown"),
        "{reason}"
    );
    assert!(reason.contains("blocking guardrails: mean latency_ms +40.0% [+40.0%, +40.0%] (limit +10.0%, n 300): exceeded; p50 total_tokens"), "{reason}");
    assert!(reason.contains("advisory guardrails: mean metrics.steps"), "{reason}");
    assert_eq!(g.blocking, 2);
    assert!((g.adjusted_confidence - 0.975).abs() < 1e-12);
    let d = lat.distribution.as_ref().unwrap();
    assert_eq!(d.counts.iter().sum::<usize>(), 300);
}

#[test]
fn an_equal_model_is_approved_and_too_few_cases_are_inconclusive() {
    let rails = json!({"guardrails": [{"metric": "latency_ms", "statistic": "p90", "max_increase": "10%"}]});
    let p = policy(rails.clone());
    let r = report(
        300,
        6,
        |_| false,
        |i| (spread(i), spread(i) * (1.0 + (i % 5) as f64 / 100.0)),
        &p,
    );
    assert_eq!(
        r.guardrails.as_ref().unwrap().criteria[0].outcome,
        GuardrailOutcome::Within
    );
    assert_eq!(r.decision.outcome(), Outcome::Approved, "{}", r.decision.reason);
    assert!(r
        .decision
        .reason
        .starts_with("approved: the task rule and every blocking guardrail passed; task rule: "));
    // p90 needs 100 cases.
    let r = report(60, 6, |_| false, |i| (spread(i), spread(i)), &p);
    let c = &r.guardrails.as_ref().unwrap().criteria[0];
    assert_eq!(
        (c.outcome, c.n, c.min_cases, c.low),
        (GuardrailOutcome::NotShown, 60, 100, None)
    );
    assert_eq!(r.decision.outcome(), Outcome::Inconclusive);
    assert!(
        r.decision
            .reason
            .starts_with("inconclusive: not shown: p90 latency_ms; task rule: "),
        "{}",
        r.decision.reason
    );
    assert!(
        r.decision.reason.contains("60 of the 100 cases it needs"),
        "{}",
        r.decision.reason
    );
    // Advisory: reported, never decides.
    let p = policy(json!({"guardrails": [{"metric": "latency_ms", "max_increase": "10%", "action": "advise"}]}));
    let r = report(200, 4, |_| false, |i| (spread(i), 2.0 * spread(i)), &p);
    assert_eq!(
        r.guardrails.as_ref().unwrap().criteria[0].outcome,
        GuardrailOutcome::Exceeded
    );
    assert_eq!(r.decision.outcome(), Outcome::Approved, "{}", r.decision.reason);
    assert_eq!(r.guardrails.as_ref().unwrap().blocking, 0);
}

#[test]
fn a_case_missing_the_metric_on_one_side_is_excluded_and_counted() {
    let p = policy(json!({"guardrails": [{"metric": "metrics.judge", "max_difference": 0.5}]}));
    let (mut audit, mut old, mut new) = (String::new(), String::new(), String::new());
    for i in 0..30 {
        audit.push_str(&format!(
            "{{\"pipeline_id\": \"c{i}\", \"stage_id\": \"s\", \"stage_type\": \"llm\", \"input\": \"in\", \"output\": {{}}}}\n\
             {{\"pipeline_id\": \"c{i}\", \"verdict\": \"PASS\", \"is_complete\": true}}\n"
        ));
        old.push_str(&format!(
            "{{\"pipeline_id\": \"c{i}\", \"verdict\": \"PASS\", \"metrics\": {{\"judge\": {}}}}}\n",
            i % 3
        ));
        let m = if i < 10 {
            String::new()
        } else {
            format!(", \"metrics\": {{\"judge\": {}}}", i % 3)
        };
        new.push_str(&format!("{{\"pipeline_id\": \"c{i}\", \"verdict\": \"PASS\"{m}}}\n"));
    }
    let r = evaluate(&audit, &old, &new, &p);
    let c = &r.guardrails.as_ref().unwrap().criteria[0];
    assert_eq!((c.n, c.excluded), (20, 10));
    assert_eq!(c.outcome, GuardrailOutcome::Within);
}

#[test]
fn a_template_that_breaks_is_named_and_blocks() {
    let p = policy(json!({"template_regression": {"max_drop": 0.1, "min_cases": 10}}));
    // t3 of 8 templates fails on 30 of its 40 cases with the new model.
    let r = report(320, 8, |i| i % 8 == 3 && i % 32 != 3, |i| (spread(i), spread(i)), &p);
    let t = r.guardrails.as_ref().unwrap().template_regression.as_ref().unwrap();
    assert_eq!((t.tested, t.untested, t.outcome), (8, 0, GuardrailOutcome::Exceeded));
    assert_eq!(t.templates[0].template_id.get(), "\"t3\"");
    assert!(t.templates[0].regressed && t.templates.iter().skip(1).all(|r| !r.regressed));
    assert_eq!(r.decision.outcome(), Outcome::Blocked);
    assert!(
        r.decision
            .reason
            .contains("template_regression (\"t3\") exceeded its limit"),
        "{}",
        r.decision.reason
    );
    // The same drop under a max_drop it stays within: not shown to exceed it.
    let p = policy(json!({"template_regression": {"max_drop": 0.9, "min_cases": 10}}));
    let r = report(320, 8, |i| i % 8 == 3 && i % 32 != 3, |i| (spread(i), spread(i)), &p);
    let t = r.guardrails.as_ref().unwrap().template_regression.as_ref().unwrap();
    assert_eq!(t.outcome, GuardrailOutcome::Within);
}

#[test]
fn the_reason_combines_every_outcome() {
    let g = |outcomes: &[(GuardrailOutcome, Action)]| GuardrailsReport {
        confidence: 0.95,
        blocking: outcomes.iter().filter(|o| o.1 == Action::Block).count(),
        adjusted_confidence: 0.95,
        cases: 100,
        seed: 0,
        resamples: 10,
        criteria: outcomes
            .iter()
            .enumerate()
            .map(|(i, (o, a))| CriterionResult {
                metric: format!("metrics.m{i}"),
                statistic: "mean".into(),
                action: *a,
                limit_kind: "max_difference",
                limit: 1.0,
                old: Some(1.0),
                new: Some(1.5),
                change: Some(0.5),
                low: Some(0.1),
                high: Some(0.9),
                exceeded_low: Some(0.1),
                method: "paired_t",
                n: 100,
                excluded: 0,
                min_cases: 10,
                outcome: *o,
                distribution: None,
            })
            .collect(),
        template_regression: None,
    };
    use GuardrailOutcome::*;
    let cases = [
        (Outcome::Approved, vec![(Within, Action::Block)], Outcome::Approved),
        (
            Outcome::Approved,
            vec![(Within, Action::Block), (Exceeded, Action::Advise)],
            Outcome::Approved,
        ),
        (
            Outcome::Approved,
            vec![(NotShown, Action::Block)],
            Outcome::Inconclusive,
        ),
        (
            Outcome::Approved,
            vec![(NotShown, Action::Block), (Exceeded, Action::Block)],
            Outcome::Blocked,
        ),
        (
            Outcome::Inconclusive,
            vec![(Within, Action::Block)],
            Outcome::Inconclusive,
        ),
        (Outcome::Blocked, vec![(Within, Action::Block)], Outcome::Blocked),
        (Outcome::Inconclusive, vec![(Exceeded, Action::Block)], Outcome::Blocked),
    ];
    for (task, rails, want) in cases {
        let (got, reason) = combine(task, "approved: the task's own words", &g(&rails));
        assert_eq!(got, want, "{task:?} {rails:?}: {reason}");
        assert!(reason.starts_with(want.as_str()), "{reason}");
        assert!(reason.contains("; task rule: the task's own words"), "{reason}");
    }
    // No case: the task rule's decision stands, the guardrails said to be unjudged.
    let mut none = g(&[(NotShown, Action::Block)]);
    none.cases = 0;
    let (got, reason) = combine(
        Outcome::Blocked,
        "blocked: insufficient test cases (empty test set)",
        &none,
    );
    assert_eq!(got, Outcome::Blocked);
    assert!(reason.starts_with("blocked: insufficient test cases (empty test set); guardrails not judged (no case)"));
}

#[test]
fn a_sequential_decision_judges_the_guardrails_on_the_cases_it_used() {
    let p = policy(
        json!({"task_tol": 0.3, "sequential": true, "guardrails": [{"metric": "latency_ms", "max_increase": "50%"}]}),
    );
    let r = report(1000, 0, |_| false, |i| (spread(i), spread(i)), &p);
    let q = r.sequential.as_ref().unwrap();
    assert_eq!(q.stopped, "approved");
    assert!(q.used < 1000);
    let g = r.guardrails.as_ref().unwrap();
    assert_eq!((g.cases, g.criteria[0].n), (q.used, q.used));
    assert_eq!(r.decision.outcome(), Outcome::Approved, "{}", r.decision.reason);
}

/// `n` cases, every one passing for both models, with `metrics.score` `values(i)` (old, new).
fn scored(n: usize, values: impl Fn(usize) -> (f64, f64), policy: &GatePolicy) -> GateReport {
    let (mut audit, mut old, mut new) = (String::new(), String::new(), String::new());
    for i in 0..n {
        audit.push_str(&format!(
            "{{\"pipeline_id\": \"c{i}\", \"stage_id\": \"s\", \"stage_type\": \"llm\", \"input\": \"in\", \"output\": {{}}}}\n\
             {{\"pipeline_id\": \"c{i}\", \"verdict\": \"PASS\", \"is_complete\": true}}\n"
        ));
        let (o, w) = values(i);
        for (out, x) in [(&mut old, o), (&mut new, w)] {
            out.push_str(&format!(
                "{{\"pipeline_id\": \"c{i}\", \"verdict\": \"PASS\", \"metrics\": {{\"score\": {x:e}}}}}\n"
            ));
        }
    }
    evaluate(&audit, &old, &new, policy)
}

#[test]
fn a_relative_limit_needs_an_old_value_above_zero_and_a_statistic_that_is_finite() {
    let rail = |stat: &str| {
        policy(json!({"guardrails": [{"metric": "metrics.score", "statistic": stat, "max_increase": "10%"}]}))
    };
    let one = |r: &GateReport| r.guardrails.as_ref().unwrap().criteria[0].clone();
    // A negative old statistic: a rise from −11 to −1.1 is no "−90%"; nothing is shown.
    for stat in ["mean", "p50"] {
        let r = scored(
            300,
            |i| (-10.0 - (i % 3) as f64, -1.0 - (i % 3) as f64 * 0.1),
            &rail(stat),
        );
        let c = one(&r);
        assert_eq!(c.outcome, GuardrailOutcome::NotShown, "{stat}: {c:?}");
        assert_eq!((c.change, c.low, c.high), (None, None, None));
        assert_eq!(r.decision.outcome(), Outcome::Inconclusive);
        assert!(
            r.decision
                .reason
                .contains(&format!("no relative change from an old {stat} of -")),
            "{}",
            r.decision.reason
        );
        assert!(!super::task_rule_open(&r.decision.reason), "{}", r.decision.reason);
    }
    // Every value 0 on both sides: no change, within, for any statistic.
    for stat in ["mean", "p50"] {
        let r = scored(300, |_| (0.0, 0.0), &rail(stat));
        let c = one(&r);
        assert_eq!(c.outcome, GuardrailOutcome::Within, "{stat}: {c:?}");
        assert_eq!((c.change, c.low, c.high), (Some(0.0), Some(0.0), Some(0.0)));
        assert_eq!(r.decision.outcome(), Outcome::Approved, "{}", r.decision.reason);
    }
    // An old mean of 0 with a new one above it: not shown, said why.
    let r = scored(300, |i| (0.0, (i % 2) as f64), &rail("mean"));
    assert_eq!(one(&r).outcome, GuardrailOutcome::NotShown);
    assert!(
        r.decision.reason.contains("from an old mean of 0"),
        "{}",
        r.decision.reason
    );
    // A mean that overflows: not shown, neither within nor exceeded.
    let r = scored(300, |_| (1e308, 1.5e308), &rail("mean"));
    let c = one(&r);
    assert_eq!((c.outcome, c.old, c.new), (GuardrailOutcome::NotShown, None, None));
    assert!(
        r.decision.reason.contains("the mean is not a finite number"),
        "{}",
        r.decision.reason
    );
    // max_difference on negative values is measured as any difference is: +9.9, limit 1.
    let p = policy(json!({"guardrails": [{"metric": "metrics.score", "max_difference": 1}]}));
    let r = scored(300, |i| (-10.0 - (i % 3) as f64, -0.1 - (i % 3) as f64 * 1.1), &p);
    assert_eq!(one(&r).outcome, GuardrailOutcome::Exceeded);
}

#[test]
fn template_regression_with_no_template_tested_is_not_shown() {
    // Three templates of 9 cases, min_cases 10: none tested, though the new model fails every
    // case of one.
    let p = policy(json!({"template_regression": {"min_cases": 10}}));
    let r = report(27, 3, |i| i % 3 == 1, |_| (100.0, 100.0), &p);
    let t = r.guardrails.as_ref().unwrap().template_regression.clone().unwrap();
    assert_eq!((t.tested, t.untested, t.outcome), (0, 3, GuardrailOutcome::NotShown));
    assert_ne!(r.decision.outcome(), Outcome::Approved, "{}", r.decision.reason);
    assert!(
        r.decision
            .reason
            .contains("not shown (no template has the 10 cases min_cases asks)"),
        "{}",
        r.decision.reason
    );
}
