//! The reproduce step of verification: the signed report against the one the input files give
//! now. The shell computes the fresh report (it reads the files); this compares them.

use serde_json::Value;

/// Why the input files do not reproduce the signed report.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Mismatch {
    /// The decisions differ (any field of `decision`). Each reason is its JSON text
    /// (`"approved: …"` with its quotes; `null` where there is none).
    #[error("the files give `{fresh_reason}`, the signed report `{signed_reason}`")]
    Decision {
        /// The fresh report's `decision.reason`, as JSON.
        fresh_reason: String,
        /// The signed report's `decision.reason`, as JSON.
        signed_reason: String,
    },
    /// The decisions agree but the inputs' sha256 by role do not.
    #[error("the input files' sha256 differ from the signed report's inputs")]
    InputDigests,
}

/// Each input's role and sha256 (as JSON text, so a missing field is `null`), sorted.
fn digests_by_role(report: &Value) -> Vec<(String, String)> {
    let mut v: Vec<(String, String)> = report["inputs"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|f| (f["role"].to_string(), f["sha256"].to_string()))
        .collect();
    v.sort();
    v
}

/// Whether the fresh decision is the signed one: every field equal, or every field but a reason
/// an earlier build wrote in its words (a fixed-rule inconclusive ending, a too small test set's
/// block without its trajectory cause: [`crate::decision::reason_as_before`]).
fn same_decision(signed: &Value, fresh: &Value) -> bool {
    if fresh == signed {
        return true;
    }
    let Some(before) = fresh["reason"].as_str().and_then(crate::decision::reason_as_before) else {
        return false;
    };
    let mut fresh = fresh.clone();
    fresh["reason"] = Value::String(before);
    &fresh == signed
}

/// `Ok` when the fresh report makes the signed report's decision (every field of `decision`
/// equal, the reason in the words of the build that signed it) from
/// inputs with the same sha256 for each role (the same multiset of role and digest pairs, in any
/// order), and, for a sequential decision, the same `sequential` record (the same stop); the
/// decision is compared first.
pub fn reproduce(signed: &Value, fresh: &Value) -> Result<(), Mismatch> {
    let sequential_differs = signed.get("sequential").is_some() && fresh.get("sequential") != signed.get("sequential");
    if !same_decision(&signed["decision"], &fresh["decision"]) || sequential_differs {
        return Err(Mismatch::Decision {
            fresh_reason: fresh["decision"]["reason"].to_string(),
            signed_reason: signed["decision"]["reason"].to_string(),
        });
    }
    if digests_by_role(fresh) != digests_by_role(signed) {
        return Err(Mismatch::InputDigests);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn report(approved: bool, reason: &str, inputs: Value) -> Value {
        json!({"decision": {"approved": approved, "reason": reason, "task_delta": 0.01}, "inputs": inputs})
    }

    fn inputs(old: &str) -> Value {
        json!([
            {"name": "audit.jsonl", "role": "audit", "sha256": "aa"},
            {"name": "old.jsonl", "role": "old_verdicts", "sha256": old},
            {"name": "new.jsonl", "role": "new_verdicts", "sha256": "cc"},
        ])
    }

    #[test]
    fn the_same_decision_from_the_same_inputs_in_any_order_reproduces() {
        let signed = report(true, "approved", inputs("bb"));
        let mut shuffled = inputs("bb");
        shuffled.as_array_mut().unwrap().reverse();
        // Names are not compared: the same bytes under another file name reproduce.
        shuffled[0]["name"] = json!("elsewhere/new.jsonl");
        assert_eq!(reproduce(&signed, &report(true, "approved", shuffled)), Ok(()));
    }

    #[test]
    fn another_decision_is_a_mismatch_naming_both_reasons_as_json() {
        let signed = report(true, "approved: no \"regression\"", inputs("bb"));
        let fresh = report(false, "blocked: task accuracy regressed", inputs("bb"));
        let e = reproduce(&signed, &fresh).unwrap_err();
        assert_eq!(
            e.to_string(),
            r#"the files give `"blocked: task accuracy regressed"`, the signed report `"approved: no \"regression\""`"#
        );
        // A decision that differs in another field, with the same reason, is a mismatch too.
        let mut other = report(true, "approved: no \"regression\"", inputs("bb"));
        other["decision"]["task_delta"] = json!(0.02);
        assert!(matches!(reproduce(&signed, &other), Err(Mismatch::Decision { .. })));
        // A report without a decision at all.
        assert_eq!(
            reproduce(&signed, &json!({})).unwrap_err().to_string(),
            r#"the files give `null`, the signed report `"approved: no \"regression\""`"#
        );
    }

    #[test]
    fn an_inconclusive_reason_in_the_words_of_an_earlier_build_reproduces() {
        let old = "inconclusive: task non-inferiority not shown, nor a regression (interval -0.1 to 0.05, tolerance \
                   0.05: lower bound <= -0.05, upper bound >= 0); about 911 cases would settle the task comparison";
        let new = "inconclusive: task non-inferiority not shown, nor a regression (interval -0.1 to 0.05, tolerance \
                   0.05: lower bound <= -0.05, upper bound >= 0); a fresh fixed-size evaluation would need about 911 \
                   cases for the task comparison; adding cases to this one and deciding again raises the error \
                   rate, sequential: true adds cases safely";
        assert_eq!(crate::decision::reason_as_before(new).as_deref(), Some(old));
        assert_eq!(crate::decision::reason_as_before(old), None);
        let signed = report(false, old, inputs("bb"));
        assert_eq!(reproduce(&signed, &report(false, new, inputs("bb"))), Ok(()));
        // Another number, or another field, is still a mismatch.
        let other = new.replace("911", "912");
        assert!(reproduce(&signed, &report(false, &other, inputs("bb"))).is_err());
        let mut moved = report(false, new, inputs("bb"));
        moved["decision"]["task_delta"] = json!(0.5);
        assert!(reproduce(&signed, &moved).is_err());
        // A signed decision in the current words needs them.
        assert!(reproduce(&report(false, new, inputs("bb")), &report(false, old, inputs("bb"))).is_err());
    }

    #[test]
    fn a_too_small_test_set_blocked_in_the_words_of_an_earlier_build_reproduces() {
        // Earlier builds named only the test set; this one names the trajectory regression too.
        let old = "blocked: insufficient test cases (3 < min_samples 20)";
        let new = "blocked: insufficient test cases (3 < min_samples 20); trajectory quality regressed (new mean \
                   0.761 < old mean 0.767 - 0)";
        assert_eq!(crate::decision::reason_as_before(new).as_deref(), Some(old));
        assert_eq!(crate::decision::reason_as_before(old), None);
        let signed = report(false, old, inputs("bb"));
        assert_eq!(reproduce(&signed, &report(false, new, inputs("bb"))), Ok(()));
        // Another first cause, or another field, is still a mismatch.
        let other = new.replace("3 <", "4 <");
        assert!(reproduce(&signed, &report(false, &other, inputs("bb"))).is_err());
        let mut moved = report(false, new, inputs("bb"));
        moved["decision"]["task_delta"] = json!(0.5);
        assert!(reproduce(&signed, &moved).is_err());
        // A signed decision in the current words needs them.
        assert!(reproduce(&report(false, new, inputs("bb")), &report(false, old, inputs("bb"))).is_err());
        // Only that cause is dropped: another reason holding the words is not rewritten.
        assert_eq!(
            crate::decision::reason_as_before("blocked: trajectory quality regressed (new mean 1 < old mean 2 - 0)"),
            None
        );
    }

    #[test]
    fn a_sequential_record_must_reproduce_too() {
        let mut signed = report(true, "approved", inputs("bb"));
        signed["sequential"] = json!({"used": 412});
        let mut fresh = signed.clone();
        assert_eq!(reproduce(&signed, &fresh), Ok(()));
        fresh["sequential"]["used"] = json!(413);
        assert!(matches!(reproduce(&signed, &fresh), Err(Mismatch::Decision { .. })));
    }

    #[test]
    fn a_different_digest_or_a_missing_input_is_a_digest_mismatch() {
        let signed = report(true, "approved", inputs("bb"));
        let e = reproduce(&signed, &report(true, "approved", inputs("bd"))).unwrap_err();
        assert_eq!(e, Mismatch::InputDigests);
        assert_eq!(
            e.to_string(),
            "the input files' sha256 differ from the signed report's inputs"
        );
        let mut fewer = inputs("bb");
        fewer.as_array_mut().unwrap().pop();
        assert_eq!(
            reproduce(&signed, &report(true, "approved", fewer)),
            Err(Mismatch::InputDigests)
        );
        // The same digests under swapped roles do not reproduce.
        let mut swapped = inputs("cc");
        swapped[2]["sha256"] = json!("bb");
        assert_eq!(
            reproduce(&signed, &report(true, "approved", swapped)),
            Err(Mismatch::InputDigests)
        );
    }
}
