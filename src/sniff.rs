//! Guesses a file's role (audit log, old/new verdicts, old/new trajectories) from its first
//! bytes and its name, for the page's drop zone. The user can always correct the guess.

use crate::audit::entry::Marks;
use crate::input::Role;
use crate::input::Side;
use crate::json::parse_object_line;
use serde::Serialize;

/// What a file holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Kind {
    /// An audit log (stage and completion entries).
    Audit,
    /// A verdict file.
    Verdicts,
    /// Trajectory-evaluation results.
    Trajectories,
    /// A gate policy (`deploy-gate evaluate --policy`'s file): a JSON object with a policy field
    /// at its top level, or a file named as one (`policy` in its name) that is no other kind;
    /// whether it is a valid policy is the policy reader's to say.
    Policy,
    /// Not recognised.
    Unknown,
}

/// The guess: the kind, the side when the name tells it, and the role name when both are known.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Guess {
    /// What the file holds.
    pub kind: Kind,
    /// Old or new, when the name says.
    pub side: Option<Side>,
    /// The role (serialised as `audit`, `old_verdicts`, …), or `None` when undecided.
    pub role: Option<Role>,
}

const OLD_WORDS: &[&str] = &[
    "old", "baseline", "base", "prod", "current", "before", "champion", "previous", "deployed",
];
const NEW_WORDS: &[&str] = &[
    "new",
    "candidate",
    "cand",
    "retrained",
    "retrain",
    "after",
    "challenger",
    "next",
    "trained",
];

fn side_from_name(name: &str) -> Option<Side> {
    let lower = name.to_lowercase();
    let words: Vec<&str> = lower
        .split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
        .collect();
    let old = words.iter().any(|w| OLD_WORDS.contains(w));
    let new = words.iter().any(|w| NEW_WORDS.contains(w));
    match (old, new) {
        (true, false) => Some(Side::Old),
        (false, true) => Some(Side::New),
        _ => None,
    }
}

fn kind_of_object(line: &[u8]) -> Option<Kind> {
    // Keys only, never values: `stage_name` is not read (see [`Marks`]); `state_snapshot`,
    // `step_count` and `episode_reward` are audit-log signs of the sniffer's own.
    let mut marks = Marks::default();
    let (mut audit_hint, mut judge, mut id, mut verdict) = (false, false, false, false);
    parse_object_line(line, |k, v| {
        match k {
            "stage_id" | "stage_type" => marks.stage_key = true,
            "is_complete" => marks.is_complete_key = true,
            "state_snapshot" | "step_count" | "episode_reward" => audit_hint = true,
            "overall_judge_score" | "goal_completion_score" | "tac_score" => judge = true,
            "pipeline_id" => id = true,
            "verdict" | "error" => verdict = true,
            _ => {}
        }
        v.skip()
    })
    .ok()?;
    Some(if judge {
        Kind::Trajectories
    } else if id && (marks.audit_only() || audit_hint) {
        Kind::Audit
    } else if id && verdict {
        Kind::Verdicts
    } else {
        Kind::Unknown
    })
}

/// Guesses from the file name and its first bytes (a few KiB suffice; a cut last line is fine).
pub fn sniff(name: &str, head: &[u8]) -> Guess {
    let kind = match sniff_kind(name, head) {
        Kind::Verdicts | Kind::Unknown if looks_like_policy(name, head) => Kind::Policy,
        kind => kind,
    };
    let side = side_from_name(name);
    let role = match (kind, side) {
        (Kind::Audit, _) => Some(Role::Audit),
        (Kind::Verdicts, Some(Side::Old)) => Some(Role::OldVerdicts),
        (Kind::Verdicts, Some(Side::New)) => Some(Role::NewVerdicts),
        (Kind::Trajectories, Some(Side::Old)) => Some(Role::OldTrajectories),
        (Kind::Trajectories, Some(Side::New)) => Some(Role::NewTrajectories),
        _ => None,
    };
    Guess { kind, side, role }
}

/// Whether a file looks meant as a policy: one JSON object (not JSON lines) with at least one
/// policy field at its top level (a report, which has `schema`, is not one), or a `.json` file
/// with `policy` in its name that is not a JSON object of verdicts.
fn looks_like_policy(name: &str, head: &[u8]) -> bool {
    let head = head.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(head);
    let named = {
        let lower = name.to_lowercase();
        lower.contains("policy") && (lower.ends_with(".json") || !lower.contains('.'))
    };
    match serde_json::from_slice::<serde_json::Value>(head) {
        Ok(serde_json::Value::Object(map)) => {
            !map.contains_key("schema")
                && (map
                    .keys()
                    .any(|k| crate::policy::FIELDS.contains(&k.as_str()) || k == "max_missing")
                    || (named && !map.values().all(|v| v.is_string() || v.is_null())))
        }
        Ok(_) => named,
        // Not one JSON value (cut, JSON lines, or broken): named as a policy and not JSON lines
        // of verdicts (the caller has found none).
        Err(_) => named,
    }
}

fn sniff_kind(name: &str, head: &[u8]) -> Kind {
    let lower = name.to_lowercase();
    if lower.ends_with(".gz") {
        return if lower.contains("audit") {
            Kind::Audit
        } else {
            Kind::Unknown
        };
    }
    let head = head.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(head);
    let first = head.iter().position(|b| !b.is_ascii_whitespace());
    let Some(first) = first else {
        return Kind::Unknown;
    };
    let body = &head[first..];
    match body[0] {
        b'[' => {
            // The first element of an array: from its `{` to the matching line end is enough
            // for the keys we look for.
            let text = String::from_utf8_lossy(body);
            if text.contains("\"overall_judge_score\"") {
                Kind::Trajectories
            } else if text.contains("\"pipeline_id\"") {
                Kind::Verdicts
            } else {
                Kind::Unknown
            }
        }
        b'{' => {
            let mut votes = [0usize; 3];
            let mut objects = 0;
            for line in body.split(|&b| b == b'\n').take(50) {
                let line = line.strip_suffix(b"\r").unwrap_or(line);
                if line.iter().all(u8::is_ascii_whitespace) {
                    continue;
                }
                match kind_of_object(line) {
                    Some(Kind::Audit) => votes[0] += 1,
                    Some(Kind::Verdicts) => votes[1] += 1,
                    Some(Kind::Trajectories) => votes[2] += 1,
                    Some(Kind::Unknown | Kind::Policy) => {}
                    None => continue,
                }
                objects += 1;
            }
            if objects == 0 {
                // Not JSONL: a JSON object mapping ids to verdicts.
                return Kind::Verdicts;
            }
            if votes[0] > 0 {
                Kind::Audit
            } else if votes[2] >= votes[1] && votes[2] > 0 {
                Kind::Trajectories
            } else if votes[1] > 0 {
                Kind::Verdicts
            } else {
                Kind::Unknown
            }
        }
        _ => {
            let header = body.split(|&b| b == b'\n').next().unwrap_or(b"");
            let header = String::from_utf8_lossy(header).to_lowercase();
            let cols: Vec<&str> = header.split([',', '\t']).map(|c| c.trim().trim_matches('"')).collect();
            if cols.contains(&"pipeline_id") && (cols.contains(&"verdict") || cols.contains(&"error")) {
                Kind::Verdicts
            } else {
                Kind::Unknown
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn role(name: &str, head: &str) -> Option<String> {
        sniff(name, head.as_bytes()).role.map(|r| r.to_string())
    }

    #[test]
    fn recognises_each_kind() {
        let audit = "{\"pipeline_id\":\"p\",\"stage_id\":\"s\",\"stage_type\":\"x\"}\n{\"pipeline_id\":\"p\",\"verdict\":\"PASS\",\"is_complete\":true}\n";
        assert_eq!(role("whatever.jsonl", audit).as_deref(), Some("audit"));
        let verdicts = "{\"pipeline_id\":\"p\",\"verdict\":\"PASS\"}\n{\"pipeline_id\":\"q\",\"verd";
        assert_eq!(role("old_verdicts.jsonl", verdicts).as_deref(), Some("old_verdicts"));
        assert_eq!(role("candidate.jsonl", verdicts).as_deref(), Some("new_verdicts"));
        assert_eq!(sniff("verdicts.jsonl", verdicts.as_bytes()).kind, Kind::Verdicts);
        assert_eq!(sniff("verdicts.jsonl", verdicts.as_bytes()).role, None);
        let traj = "{\"overall_judge_score\": 0.5, \"tac_score\": 1}\n";
        assert_eq!(
            role("new_trajectories.jsonl", traj).as_deref(),
            Some("new_trajectories")
        );
        assert_eq!(
            role("baseline-traj.json", "[{\"overall_judge_score\": 1}]").as_deref(),
            Some("old_trajectories")
        );
        assert_eq!(
            role("old.csv", "pipeline_id,verdict\np,PASS\n").as_deref(),
            Some("old_verdicts")
        );
        assert_eq!(
            role("new.json", "{\n  \"p\": \"PASS\"\n}").as_deref(),
            Some("new_verdicts")
        );
        assert_eq!(sniff("notes.txt", b"hello").kind, Kind::Unknown);
        assert_eq!(role("prod-audit.jsonl.gz", "\x1f").as_deref(), Some("audit"));
    }

    #[test]
    fn policy_files_are_recognised() {
        let kind = |name: &str, head: &str| sniff(name, head.as_bytes()).kind;
        // Pretty or compact, whatever the name.
        assert_eq!(
            kind(
                "gate.json",
                "{\n  \"min_samples\": 20,\n  \"mode\": \"non_inferiority\"\n}\n"
            ),
            Kind::Policy
        );
        assert_eq!(kind("x.json", "{\"max_missing\": \"5%\"}"), Kind::Policy);
        assert_eq!(sniff("x.json", b"{\"seed\": 1}").role, None);
        // Named as one but broken, or with unknown fields: still a policy (its reader says why).
        assert_eq!(kind("policy.json", "{\"min_samples\": 20,"), Kind::Policy);
        assert_eq!(kind("my-policy.json", "{\"min_sampels\": 20}"), Kind::Policy);
        // Verdicts stay verdicts, even in a file named policy; a report is no policy.
        assert_eq!(kind("verdicts.json", "{\n  \"p\": \"PASS\"\n}"), Kind::Verdicts);
        assert_eq!(
            kind("policy-run.json", "{\n  \"p\": \"PASS\",\n  \"q\": null\n}"),
            Kind::Verdicts
        );
        assert_eq!(
            kind("policy.jsonl", "{\"pipeline_id\":\"p\",\"verdict\":\"PASS\"}\n"),
            Kind::Verdicts
        );
        assert_ne!(
            kind(
                "r.json",
                "{\"schema\": \"deploy-gate/report/v1\", \"policy\": {\"min_samples\": 1}}"
            ),
            Kind::Policy
        );
        assert_eq!(kind("notes.txt", "min_samples: 20"), Kind::Unknown);
    }

    #[test]
    fn name_words_decide_the_side() {
        assert_eq!(side_from_name("old_verdicts.jsonl"), Some(Side::Old));
        assert_eq!(side_from_name("verdicts-new.csv"), Some(Side::New));
        assert_eq!(side_from_name("newsletter.csv"), None);
        assert_eq!(side_from_name("old-vs-new.csv"), None);
    }
}
