//! The session's invalidation rules, natively.

use super::*;
use crate::policy::PassSet;
use crate::policy::{Mode, OnInsufficient};

const DIR: &str = "real-writer-shape";
const AUDIT: &[u8] = include_bytes!("../../tests/fixtures/parity/real-writer-shape/audit.jsonl");
const OLD: &[u8] = include_bytes!("../../tests/fixtures/parity/real-writer-shape/old_verdicts.jsonl");
const NEW: &[u8] = include_bytes!("../../tests/fixtures/parity/real-writer-shape/new_verdicts.jsonl");
const OLD_T: &[u8] = include_bytes!("../../tests/fixtures/parity/real-writer-shape/old_trajectories.jsonl");
const NEW_T: &[u8] = include_bytes!("../../tests/fixtures/parity/real-writer-shape/new_trajectories.jsonl");

fn policy() -> GatePolicy {
    let mut p = GatePolicy::default();
    p.test_set.min_samples = 20;
    p.test_set.max_samples = None;
    p.on_insufficient = OnInsufficient::Approve;
    // The reference's rule: a missing verdict is a failure, whatever their number.
    p.max_missing = Some(1.0);
    p
}

fn streamed(s: &mut Session) {
    s.begin_audit("audit.jsonl");
    for chunk in AUDIT.chunks(4093) {
        s.push_audit(chunk).unwrap();
    }
    s.finish_audit().unwrap();
}

fn ranges_fed(s: &mut Session) {
    let ranges = s.needed_ranges().unwrap().to_vec();
    for (i, r) in ranges.iter().enumerate() {
        let end = if r.end == crate::testset::TO_END {
            AUDIT.len()
        } else {
            r.end as usize
        };
        for chunk in AUDIT[r.start as usize..end].chunks(97) {
            s.feed_range(i, chunk).unwrap();
        }
        s.end_range(i).unwrap();
    }
    s.finish_test_set().unwrap();
}

fn results(s: &mut Session) {
    s.add_verdicts(Side::Old, "old_verdicts.jsonl", OLD).unwrap();
    s.add_verdicts(Side::New, "new_verdicts.jsonl", NEW).unwrap();
    s.add_trajectories(Side::Old, "old_trajectories.jsonl", OLD_T).unwrap();
    s.add_trajectories(Side::New, "new_trajectories.jsonl", NEW_T).unwrap();
}

fn loaded() -> Session {
    let mut s = Session::new(policy());
    streamed(&mut s);
    ranges_fed(&mut s);
    results(&mut s);
    assert!(s.is_ready(), "{DIR}");
    s
}

fn err(r: Result<GateReport, SessionError>) -> String {
    match r {
        Ok(_) => panic!("an error expected"),
        Err(e) => e.to_string(),
    }
}

#[test]
fn the_report_is_the_in_memory_evaluation() {
    let s = loaded();
    let inputs = crate::gate::MemoryInputs {
        audit: vec![("audit.jsonl", AUDIT)],
        old_verdicts: ("old_verdicts.jsonl", OLD),
        new_verdicts: ("new_verdicts.jsonl", NEW),
        old_trajectories: Some(("old_trajectories.jsonl", OLD_T)),
        new_trajectories: Some(("new_trajectories.jsonl", NEW_T)),
    };
    let (_, report) = crate::gate::evaluate_in_memory(&inputs, &policy()).unwrap();
    assert_eq!(s.report().unwrap().to_json(), report.to_json());
    let expected = include_str!("../../tests/fixtures/parity/real-writer-shape/expected.json");
    let want: serde_json::Value = serde_json::from_str(expected).unwrap();
    let got: serde_json::Value = serde_json::from_str(&report.to_json()).unwrap();
    assert_eq!(got["decision"]["approved"], want["decision"]["approved"]);
}

#[test]
fn policy_change_classifies_every_field() {
    let base = policy();
    let with = |f: &dyn Fn(&mut GatePolicy)| {
        let mut p = base.clone();
        f(&mut p);
        policy_change(&base, &p)
    };
    assert_eq!(with(&|_| {}), PolicyChange::Ready);
    assert_eq!(
        with(&|p| p.pass_verdicts = PassSet::new(["PASS"])),
        PolicyChange::Rescan
    );
    // Upper-cased: the same verdicts in lower case are no change.
    assert_eq!(
        with(&|p| p.pass_verdicts = PassSet::new(["pass", "approve", "complete"])),
        PolicyChange::Ready
    );
    assert_eq!(with(&|p| p.test_set.min_samples = 3), PolicyChange::Rebuild);
    assert_eq!(with(&|p| p.test_set.max_samples = Some(5)), PolicyChange::Rebuild);
    assert_eq!(with(&|p| p.test_set.seed = 7), PolicyChange::Rebuild);
    assert_eq!(with(&|p| p.task_regression_tol = 0.1), PolicyChange::Ready);
    assert_eq!(with(&|p| p.trajectory_regression_tol = 0.1), PolicyChange::Ready);
    assert_eq!(
        with(&|p| p.on_insufficient = OnInsufficient::Block),
        PolicyChange::Ready
    );
    assert_eq!(with(&|p| p.mode = Mode::NonInferiority), PolicyChange::Ready);
    assert_eq!(with(&|p| p.confidence = 0.9), PolicyChange::Ready);
    // Both: the larger redo wins.
    assert_eq!(
        with(&|p| {
            p.pass_verdicts = PassSet::new(["PASS"]);
            p.test_set.seed = 9;
        }),
        PolicyChange::Rescan
    );
    assert_eq!(PolicyChange::Rescan.as_str(), "rescan");
    assert_eq!(PolicyChange::Rebuild.as_str(), "rebuild");
    assert_eq!(PolicyChange::Ready.as_str(), "ready");
}

#[test]
fn a_ready_change_keeps_the_test_set_and_changes_the_report() {
    let mut s = loaded();
    let before = s.report().unwrap();
    let mut p = policy();
    p.task_regression_tol = 0.25;
    assert_eq!(s.set_policy(p), PolicyChange::Ready);
    assert!(s.is_ready());
    let after = s.report().unwrap();
    assert_eq!(after.decision.details.task_regression_tol, 0.25);
    assert_ne!(before.to_json(), after.to_json());
}

#[test]
fn a_ready_change_drops_a_selection_being_read() {
    let mut s = loaded();
    s.needed_ranges().unwrap();
    s.feed_range(0, b"").unwrap();
    let mut p = policy();
    p.confidence = 0.9;
    assert_eq!(s.set_policy(p), PolicyChange::Ready);
    assert_eq!(
        s.feed_range(0, b"x").unwrap_err().to_string(),
        "call neededRanges first"
    );
}

#[test]
fn a_rebuild_drops_the_test_set_but_keeps_the_index_and_the_results() {
    let mut s = loaded();
    let mut p = policy();
    p.test_set.max_samples = Some(20);
    assert_eq!(s.set_policy(p), PolicyChange::Rebuild);
    assert!(!s.is_ready());
    assert_eq!(err(s.report()), "the test set is not loaded");
    assert!(s.audit_index().is_some());
    ranges_fed(&mut s);
    let report = s.report().unwrap();
    assert_eq!(report.test_set.num_cases, 20);
    assert!(report.test_set.sampled);
}

#[test]
fn a_rescan_drops_the_audit_log_and_keeps_the_results() {
    let mut s = loaded();
    let mut p = policy();
    p.pass_verdicts = PassSet::new(["PASS"]);
    assert_eq!(s.set_policy(p), PolicyChange::Rescan);
    assert!(s.audit_index().is_none());
    assert_eq!(err(s.report()), "the audit log is not loaded");
    assert_eq!(
        s.needed_ranges().err().unwrap().to_string(),
        "the audit log is not loaded"
    );
    streamed(&mut s);
    ranges_fed(&mut s);
    // The verdicts and trajectories were kept.
    assert!(s.is_ready());
    assert_eq!(s.report().unwrap().policy.pass_verdicts.verdicts(), ["PASS"]);
}

#[test]
fn a_rescan_mid_scan_drops_the_files_scanned_with_the_old_pass_verdicts() {
    let mut s = Session::new(policy());
    s.begin_audit("first.jsonl");
    s.push_audit(AUDIT).unwrap();
    let mut p = policy();
    p.pass_verdicts = PassSet::new(["PASS"]);
    assert_eq!(s.set_policy(p), PolicyChange::Rescan);
    assert_eq!(
        s.push_audit(b"{}\n").unwrap_err().to_string(),
        "call beginAudit before pushAudit"
    );
    s.begin_audit("second.jsonl");
    s.push_audit(AUDIT).unwrap();
    let index = s.finish_audit().unwrap();
    let names: Vec<&str> = index.files().iter().map(|f| f.name.as_str()).collect();
    assert_eq!(names, ["second.jsonl"]);
}

#[test]
fn a_rescan_mid_merge_drops_the_segments() {
    let mut s = Session::new(policy());
    s.begin_segmented_audit();
    s.add_audit_file("audit.jsonl").unwrap();
    let mut p = policy();
    p.pass_verdicts = PassSet::new(["PASS"]);
    assert_eq!(s.set_policy(p), PolicyChange::Rescan);
    assert_eq!(
        s.add_audit_file("b").unwrap_err().to_string(),
        "call beginSegmentedAudit first"
    );
}

#[test]
fn a_test_set_or_seed_change_mid_scan_keeps_the_scan() {
    let mut s = Session::new(policy());
    s.begin_audit("audit.jsonl");
    s.push_audit(AUDIT).unwrap();
    let mut p = policy();
    p.test_set.seed = 3;
    assert_eq!(s.set_policy(p), PolicyChange::Rebuild);
    assert_eq!(
        s.finish_audit().unwrap().summary().lines,
        loaded().audit_index().unwrap().summary().lines
    );
}

#[test]
fn after_the_pipelines_are_released_a_rebuild_is_a_rescan() {
    let mut s = loaded();
    s.release_pipelines();
    let mut p = policy();
    p.test_set.seed = 1;
    assert_eq!(s.set_policy(p.clone()), PolicyChange::Rescan);
    assert!(s.audit_index().is_none());
    // Nor is a new selection made from a released index (it would find no candidate).
    let mut s = loaded();
    s.release_pipelines();
    assert!(matches!(s.needed_ranges(), Err(SessionError::PipelinesReleased)));
    assert!(matches!(
        s.build_test_set(&[AUDIT]),
        Err(SessionError::PipelinesReleased)
    ));
    assert!(s.is_ready(), "the test set built before stays");
    // A ready change keeps everything, released or not.
    let mut s = loaded();
    s.release_pipelines();
    let mut q = policy();
    q.task_regression_tol = 0.5;
    assert_eq!(s.set_policy(q), PolicyChange::Ready);
    assert!(s.is_ready());
}

#[test]
fn removing_each_input_forgets_just_it() {
    let full = loaded().report().unwrap();
    for (input, message) in [
        (Role::OldVerdicts, Some("the old model's verdict file is not loaded")),
        (Role::NewVerdicts, Some("the new model's verdict file is not loaded")),
        (Role::OldTrajectories, None),
        (Role::NewTrajectories, None),
        (Role::Audit, Some("the audit log is not loaded")),
    ] {
        let mut s = loaded();
        s.remove_input(input);
        match message {
            Some(m) => {
                assert!(!s.is_ready(), "{input:?}");
                assert_eq!(err(s.report()), m, "{input:?}");
            }
            None => {
                assert!(s.is_ready(), "{input:?}");
                let r = s.report().unwrap();
                assert!(!r.decision.details.trajectory_checked, "{input:?}");
                assert!(full.decision.details.trajectory_checked);
                let (old, new) = (&r.trajectories.old, &r.trajectories.new);
                assert_eq!(old.is_none(), input == Role::OldTrajectories);
                assert_eq!(new.is_none(), input == Role::NewTrajectories);
            }
        }
    }
    let mut s = loaded();
    s.remove_input(Role::Audit);
    assert!(s.test_set().is_none());
}

#[test]
fn replacing_an_input_uses_the_new_one() {
    let mut s = loaded();
    let before = s.report().unwrap();
    // The new model's verdicts as the old model's: no difference left.
    s.add_verdicts(Side::Old, "same.jsonl", NEW).unwrap();
    let after = s.report().unwrap();
    assert_eq!(after.decision.task_delta, 0.0);
    assert_ne!(before.decision.task_delta, 0.0);
    assert_eq!(after.verdicts.old.cases, before.verdicts.old.cases);
    // A file that cannot be read leaves the one before in place.
    let e = s.add_verdicts(Side::Old, "bad.json", b"[1,").unwrap_err();
    assert!(e.to_string().starts_with("bad.json (old_verdicts)"), "{e}");
    assert_eq!(s.report().unwrap().to_json(), after.to_json());
    s.add_trajectories(Side::New, "t.jsonl", OLD_T).unwrap();
    assert_eq!(s.report().unwrap().decision.trajectory_delta, 0.0);
}

#[test]
fn re_beginning_the_audit_log_starts_a_new_one() {
    // Two files begun in one scan are one log; after finishing, the next begin starts afresh.
    let mut s = loaded();
    s.begin_audit("again.jsonl");
    assert!(s.audit_index().is_none() && s.test_set().is_none());
    s.push_audit(AUDIT).unwrap();
    s.begin_audit("more.jsonl");
    let index = s.finish_audit().unwrap();
    let names: Vec<&str> = index.files().iter().map(|f| f.name.as_str()).collect();
    assert_eq!(names, ["again.jsonl", "more.jsonl"]);
    // A segmented audit begun over an index drops it, and one begun over a scan too.
    let mut s = loaded();
    s.begin_segmented_audit();
    assert!(s.audit_index().is_none());
    assert_eq!(s.finish_audit().err().unwrap().to_string(), "no audit file was begun");
    let mut s = Session::new(policy());
    s.begin_audit("a.jsonl");
    s.begin_segmented_audit();
    assert_eq!(
        s.push_audit(b"x").unwrap_err().to_string(),
        "call beginAudit before pushAudit"
    );
    // And a streamed scan begun over a merge drops the merge.
    s.begin_audit("b.jsonl");
    assert_eq!(
        s.merge_segment(b"").unwrap_err().to_string(),
        "call beginSegmentedAudit first"
    );
}

#[test]
fn segmented_and_streamed_audit_logs_give_the_same_report() {
    let reference = loaded().report().unwrap().to_json();
    let mut s = Session::new(policy());
    s.begin_segmented_audit();
    let no = s.add_audit_file("audit.jsonl").unwrap();
    // Three segments cut at newlines.
    let cut = |at: usize| at + memchr::memchr(b'\n', &AUDIT[at..]).unwrap() + 1;
    let (a, b) = (cut(AUDIT.len() / 3), cut(2 * AUDIT.len() / 3));
    for (start, end) in [(0, a), (a, b), (b, AUDIT.len())] {
        let mut seg = Segment::new(policy().pass_verdicts, DEFAULT_MAX_LINE, no, start as u64);
        seg.push(&AUDIT[start..end]);
        seg.finish();
        s.merge_segment(&seg.to_bytes()).unwrap();
    }
    let sha = hex::encode(<sha2::Sha256 as sha2::Digest>::digest(AUDIT));
    s.set_audit_file_digest(no, AUDIT.len() as u64, String::new()).unwrap();
    s.finish_segmented_audit().unwrap();
    // The digest given after pass 1.
    s.set_audit_digest(no, sha).unwrap();
    ranges_fed(&mut s);
    results(&mut s);
    assert_eq!(s.report().unwrap().to_json(), reference);
}

#[test]
fn a_segmented_audit_refuses_what_does_not_fit() {
    let mut s = Session::new(policy());
    assert!(matches!(s.add_audit_file("a"), Err(SessionError::NotSegmented)));
    assert!(matches!(
        s.finish_segmented_audit().err(),
        Some(SessionError::NotSegmented)
    ));
    s.begin_segmented_audit();
    let mut seg = Segment::new(policy().pass_verdicts, DEFAULT_MAX_LINE, 0, 0);
    seg.finish();
    assert_eq!(
        s.merge_segment(&seg.to_bytes()).unwrap_err().to_string(),
        "a segment of a file that was not added"
    );
    assert!(matches!(s.merge_segment(b"nope"), Err(SessionError::Segment(_))));
    assert_eq!(
        s.set_audit_file_digest(0, 1, String::new()).unwrap_err().to_string(),
        "there is no audit file 0"
    );
    s.add_audit_file("a").unwrap();
    s.finish_segmented_audit().unwrap();
    assert_eq!(
        s.set_audit_digest(1, String::new()).unwrap_err().to_string(),
        "there is no audit file 1"
    );
}

#[test]
fn pass_two_calls_out_of_order_are_refused() {
    let mut s = Session::new(policy());
    assert_eq!(
        s.needed_ranges().err().unwrap().to_string(),
        "the audit log is not loaded"
    );
    assert_eq!(
        s.build_test_set(&[AUDIT]).err().unwrap().to_string(),
        "the audit log is not loaded"
    );
    assert_eq!(
        s.set_audit_sha256(0, String::new()).unwrap_err().to_string(),
        "no audit file was begun"
    );
    streamed(&mut s);
    assert_eq!(s.feed_range(0, b"").unwrap_err().to_string(), "call neededRanges first");
    assert_eq!(
        s.finish_test_set().err().unwrap().to_string(),
        "call neededRanges first"
    );
    let n = s.needed_ranges().unwrap().len();
    assert_eq!(
        s.end_range(n).unwrap_err().to_string(),
        format!("range {n} was not asked for")
    );
    assert_eq!(
        s.build_test_set(&[AUDIT, AUDIT]).err().unwrap().to_string(),
        "expected 1 audit file(s), got 2"
    );
    // A test set asked for again drops the one built.
    s.build_test_set(&[AUDIT]).unwrap();
    assert!(s.test_set().is_some());
    s.needed_ranges().unwrap();
    assert!(s.test_set().is_none());
}

#[test]
fn the_whole_stream_builds_the_same_test_set_as_the_ranges() {
    let mut by_ranges = Session::new(policy());
    streamed(&mut by_ranges);
    ranges_fed(&mut by_ranges);
    let mut s = Session::new(policy());
    streamed(&mut s);
    s.needed_ranges().unwrap();
    for chunk in AUDIT.chunks(1000) {
        s.feed_stream(0, chunk).unwrap();
    }
    s.end_stream(0).unwrap();
    s.finish_test_set().unwrap();
    assert_eq!(
        s.test_set().unwrap().to_jsonl(),
        by_ranges.test_set().unwrap().to_jsonl()
    );
    // A stream that stops short is not the file pass 1 read.
    let mut s = Session::new(policy());
    streamed(&mut s);
    s.needed_ranges().unwrap();
    s.feed_stream(0, &AUDIT[..AUDIT.len() / 2]).unwrap();
    let e = s.end_stream(0).unwrap_err();
    assert!(e.to_string().contains("were not read in pass 2"), "{e}");
}

#[test]
fn chosen_positions_build_those_candidates_in_audit_order() {
    let mut all = Session::new(policy());
    streamed(&mut all);
    ranges_fed(&mut all);
    let every: Vec<String> = all.test_set().unwrap().to_jsonl().lines().map(str::to_owned).collect();
    assert!(every.len() >= 20);
    let mut s = Session::new(policy());
    streamed(&mut s);
    let positions = [7, 0, every.len() - 1, 3];
    s.needed_ranges_at(&positions).unwrap();
    let ranges = s.test_set_builder().unwrap().ranges().to_vec();
    for (i, r) in ranges.iter().enumerate() {
        let end = if r.end == crate::testset::TO_END {
            AUDIT.len()
        } else {
            r.end as usize
        };
        s.feed_range(i, &AUDIT[r.start as usize..end]).unwrap();
        s.end_range(i).unwrap();
    }
    let ts = s.finish_test_set().unwrap();
    let got: Vec<String> = ts.to_jsonl().lines().map(str::to_owned).collect();
    let mut sorted = positions.to_vec();
    sorted.sort_unstable();
    assert_eq!(got, sorted.iter().map(|&p| every[p].clone()).collect::<Vec<_>>());
    assert!(ts.sampled && ts.candidates == every.len());
    // Out of range or repeated positions are refused.
    let e = s.needed_ranges_at(&[every.len()]).unwrap_err();
    assert!(e.to_string().contains("out of range"), "{e}");
    assert!(s.needed_ranges_at(&[1, 1]).unwrap_err().to_string().contains("twice"));
}

#[test]
fn a_verdict_record_names_its_cases_trajectory_result() {
    let mut s = loaded();
    let ids: Vec<crate::PipelineId> = s
        .test_set()
        .unwrap()
        .cases
        .iter()
        .map(|c| c.pipeline_id.clone())
        .collect();
    let json_id = |id: &crate::PipelineId| {
        if id.numeric {
            id.text.to_string()
        } else {
            serde_json::to_string(&*id.text).unwrap()
        }
    };
    // Old: JSONL records naming `old-K`, an integer id for case 1, none for case 2 (whose
    // result names its pipeline_id), and for case 3 an id no result has (its pipeline_id's
    // result is then taken).
    let mut old = String::new();
    let mut old_t = String::new();
    for (k, id) in ids.iter().enumerate() {
        let named = match k {
            1 => ",\"trajectory_id\":41".to_owned(),
            2 => String::new(),
            3 => ",\"trajectory_id\":\"missing\"".to_owned(),
            _ => format!(",\"trajectory_id\":\"old-{k}\""),
        };
        old.push_str(&format!(
            "{{\"pipeline_id\":{},\"verdict\":\"PASS\"{named}}}\n",
            json_id(id)
        ));
        let result_id = if k == 1 {
            "41".to_owned()
        } else {
            format!("\"old-{k}\"")
        };
        old_t.push_str(&format!(
            "{{\"trajectory_id\":{result_id},\"overall_judge_score\":0.{k}}}\n"
        ));
    }
    // A result naming case 0's pipeline_id loses to the one its record names; the pipeline's
    // results for cases 2 and 3.
    for k in [0, 2, 3] {
        old_t.push_str(&format!(
            "{{\"trajectory_id\":\"by-pipeline-{k}\",\"pipeline_id\":{},\"overall_judge_score\":0.99}}\n",
            json_id(&ids[k])
        ));
    }
    s.add_verdicts(Side::Old, "old.jsonl", old.as_bytes()).unwrap();
    s.add_trajectories(Side::Old, "old_t.jsonl", old_t.as_bytes()).unwrap();
    let named = |s: &Session, side, k| s.case_trajectory(side, k).and_then(|r| r.trajectory_id.clone());
    assert_eq!(named(&s, Side::Old, 0).as_deref(), Some("old-0"));
    assert_eq!(named(&s, Side::Old, 1).as_deref(), Some("41"));
    assert_eq!(named(&s, Side::Old, 2).as_deref(), Some("by-pipeline-2"));
    assert_eq!(named(&s, Side::Old, 3).as_deref(), Some("by-pipeline-3"));
    assert_eq!(named(&s, Side::Old, 4).as_deref(), Some("old-4"));
    // New: the object form and CSV name them too; a later record for a case replaces the name.
    let mut map = String::from("{");
    let mut csv = String::from("pipeline_id,verdict,trajectory_id\n");
    let mut new_t = String::new();
    for (k, id) in ids.iter().enumerate() {
        let sep = if k == 0 { "" } else { "," };
        map.push_str(&format!(
            "{sep}{}:{{\"verdict\":\"PASS\",\"trajectory_id\":\"new-{k}\"}}",
            serde_json::to_string(&*id.text).unwrap()
        ));
        csv.push_str(&format!("\"{}\",PASS,new-{k}\n", id.text.replace('"', "\"\"")));
        new_t.push_str(&format!(
            "{{\"trajectory_id\":\"new-{k}\",\"overall_judge_score\":0.5}}\n"
        ));
    }
    csv.push_str(&format!("\"{}\",FAIL,new-4\n", ids[0].text.replace('"', "\"\"")));
    map.push('}');
    s.add_trajectories(Side::New, "new_t.jsonl", new_t.as_bytes()).unwrap();
    s.add_verdicts(Side::New, "new.json", map.as_bytes()).unwrap();
    assert_eq!(named(&s, Side::New, 0).as_deref(), Some("new-0"));
    assert_eq!(named(&s, Side::New, 5).as_deref(), Some("new-5"));
    s.add_verdicts(Side::New, "new.csv", csv.as_bytes()).unwrap();
    assert_eq!(named(&s, Side::New, 0).as_deref(), Some("new-4"));
    assert_eq!(named(&s, Side::New, 5).as_deref(), Some("new-5"));
    // Naming a trajectory changes no score: the report is the one without the names.
    let without: String = old
        .lines()
        .map(|l| {
            let cut = l.find(",\"trajectory_id\"").unwrap_or(l.len() - 1);
            format!("{}}}\n", &l[..cut])
        })
        .collect();
    let with_names = s.report().unwrap();
    s.add_verdicts(Side::Old, "old.jsonl", without.as_bytes()).unwrap();
    let mut without_names = s.report().unwrap();
    without_names.inputs = with_names.inputs.clone();
    assert_eq!(
        serde_json::to_value(&with_names).unwrap(),
        serde_json::to_value(&without_names).unwrap()
    );
}
