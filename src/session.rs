//! One gate evaluation, as a state machine every shell drives: the policy, the audit log
//! (streamed through pass 1 here, or scanned elsewhere as segments and merged, or indexed by a
//! shell that scanned it itself), the selection and pass 2, the verdict and trajectory files,
//! and the report. What a policy change or a removed input invalidates is decided here, once.
//!
//! The states of the audit log are explicit ([`Audit`]): at most one of "being scanned",
//! "segments being merged" and "indexed" holds at a time, and a test set exists only beside
//! the index it was built from.

use crate::audit::{AuditIndex, AuditScanner, IndexBuilder, Segment, DEFAULT_MAX_LINE};
use crate::decision::Rules;
use crate::input::{InputError, InputFile, Role, Side};
use crate::policy::{policy_change, GatePolicy, PolicyChange};
use crate::report::{evaluate_under, GateInputs, GateReport};
use crate::testset::{ReadRange, TestSet, TestSetBuilder, TestSetError};
use crate::trajectory::{parse_trajectories, Trajectories};
use crate::verdicts::{parse_verdicts, read_output, OutputAt, Verdicts};

/// Why a session call cannot be done; the messages are the ones the JS API shows.
#[derive(Debug, thiserror::Error)]
pub enum SessionError {
    /// A streamed-audit call without an audit file begun.
    #[error("no audit file was begun")]
    NoAuditBegun,
    /// `push_audit` before `begin_audit`.
    #[error("call beginAudit before pushAudit")]
    PushBeforeBegin,
    /// A segmented-audit call outside a segmented audit.
    #[error("call beginSegmentedAudit first")]
    NotSegmented,
    /// A segment's bytes are not a segment.
    #[error(transparent)]
    Segment(#[from] crate::audit::WireError),
    /// A segment names a file that was not declared.
    #[error("a segment of a file that was not added")]
    SegmentOfUnknownFile,
    /// An audit file number out of range.
    #[error("there is no audit file {0}")]
    NoSuchAuditFile(u32),
    /// A call that needs the index before pass 1 ended.
    #[error("the audit log is not loaded")]
    AuditNotLoaded,
    /// A pass-2 call without a selection being read.
    #[error("call neededRanges first")]
    NoSelection,
    /// A range number the selection does not have.
    #[error("range {0} was not asked for")]
    NoSuchRange(usize),
    /// Pass 2 found the log not as pass 1 indexed it, or not read whole.
    #[error(transparent)]
    TestSet(#[from] TestSetError),
    /// Whole audit files given in another number than pass 1 saw.
    #[error("expected {expected} audit file(s), got {got}")]
    AuditFileCount {
        /// Files pass 1 read.
        expected: usize,
        /// Files given.
        got: usize,
    },
    /// A verdict or trajectory file is unusable.
    #[error(transparent)]
    Input(#[from] InputError),
    /// The report needs an input that is not in ("the test set", …).
    #[error("{0} is not loaded")]
    Missing(&'static str),
    /// The test set is asked for before it was built.
    #[error("the test set is not built")]
    TestSetNotBuilt,
    /// Candidate positions that are out of range or repeated.
    #[error("{0}")]
    Positions(String),
    /// A new selection from an index whose pipeline table was released.
    #[error("the audit log's pipelines were released: scan it again to choose other test cases")]
    PipelinesReleased,
}

/// Pass 2 over an indexed audit log.
enum Pass2 {
    /// No selection made, or it was invalidated.
    None,
    /// The selection's ranges are being read.
    Building(Box<TestSetBuilder>),
    /// The test set.
    Built(TestSet),
}

/// Where the audit log is. (A session holds one, moved rarely: the variants' sizes do not matter.)
#[allow(clippy::large_enum_variant)]
enum Audit {
    /// Not given (or removed, or invalidated by a change of pass verdicts).
    Empty,
    /// Streamed through pass 1 here, file after file.
    Scanning(AuditScanner),
    /// Scanned elsewhere as segments, merged here in file order.
    Merging(IndexBuilder),
    /// Pass 1 is done.
    Indexed {
        index: AuditIndex,
        pass2: Pass2,
        /// The pipeline table was freed ([`Session::release_pipelines`]): no new selection
        /// can be made from this index.
        released: bool,
    },
}

/// One gate evaluation: policy, audit log, test set, verdicts, trajectories, report.
pub struct Session {
    policy: GatePolicy,
    hashing: bool,
    audit: Audit,
    verdicts: [Option<Verdicts>; 2],
    trajectories: [Option<Trajectories>; 2],
}

fn slot(side: Side) -> usize {
    match side {
        Side::Old => 0,
        Side::New => 1,
    }
}

/// The info of a built test set, as the report lists it.
pub fn test_set_info(ts: &TestSet) -> crate::report::TestSetInfo {
    crate::report::TestSetInfo {
        num_cases: ts.cases.len(),
        candidates: ts.candidates,
        sampled: ts.sampled,
        insufficient: ts.insufficient,
    }
}

impl Session {
    /// A session with `policy` and nothing loaded; audit files are hashed as they stream.
    pub fn new(policy: GatePolicy) -> Self {
        Session {
            policy,
            hashing: true,
            audit: Audit::Empty,
            verdicts: [None, None],
            trajectories: [None, None],
        }
    }

    /// The policy.
    pub fn policy(&self) -> &GatePolicy {
        &self.policy
    }

    /// Replaces the policy and forgets what it invalidates ([`policy_change`]): a rescan drops
    /// the audit log (also a scan or merge under way, made with the old pass verdicts); a
    /// rebuild drops the test set. Any selection being read is dropped in every case. An index
    /// whose pipeline table was released cannot be selected from again, so there a rebuild is
    /// a rescan.
    pub fn set_policy(&mut self, new: GatePolicy) -> PolicyChange {
        let mut change = policy_change(&self.policy, &new);
        if let Audit::Indexed { pass2, released, .. } = &mut self.audit {
            if change == PolicyChange::Rebuild && *released {
                change = PolicyChange::Rescan;
            }
            match change {
                PolicyChange::Ready => {
                    if matches!(pass2, Pass2::Building(_)) {
                        *pass2 = Pass2::None;
                    }
                }
                PolicyChange::Rebuild => *pass2 = Pass2::None,
                PolicyChange::Rescan => {}
            }
        }
        if change == PolicyChange::Rescan {
            self.audit = Audit::Empty;
        }
        self.policy = new;
        change
    }

    /// Whether audit files are hashed as they stream (default true). A caller that hashes
    /// elsewhere turns it off and gives each digest with [`Session::set_audit_sha256`].
    pub fn set_hashing(&mut self, on: bool) {
        self.hashing = on;
        if let Audit::Scanning(s) = &mut self.audit {
            s.hash_files(on);
        }
    }

    /// Gives the sha256 (hex, checked by the caller) of streamed audit file `file`.
    pub fn set_audit_sha256(&mut self, file: u32, sha256: String) -> Result<(), SessionError> {
        let Audit::Scanning(scanner) = &mut self.audit else {
            return Err(SessionError::NoAuditBegun);
        };
        scanner.set_file_sha256(file, sha256);
        Ok(())
    }

    /// Starts an audit log read as segments scanned elsewhere (the audit log before is dropped).
    pub fn begin_segmented_audit(&mut self) {
        self.audit = Audit::Merging(IndexBuilder::new());
    }

    /// True while an audit log is streamed through pass 1 here (`begin_audit` … `finish_audit`).
    pub fn is_scanning(&self) -> bool {
        matches!(self.audit, Audit::Scanning(_))
    }

    /// The number of files declared so far in a segmented audit log.
    pub fn segmented_file_count(&self) -> Result<usize, SessionError> {
        match &self.audit {
            Audit::Merging(b) => Ok(b.file_count()),
            _ => Err(SessionError::NotSegmented),
        }
    }

    fn merging(&mut self) -> Result<&mut IndexBuilder, SessionError> {
        match &mut self.audit {
            Audit::Merging(b) => Ok(b),
            _ => Err(SessionError::NotSegmented),
        }
    }

    /// Declares the next audit file of a segmented audit log; gives its number.
    pub fn add_audit_file(&mut self, name: &str) -> Result<u32, SessionError> {
        Ok(self.merging()?.add_file(InputFile {
            role: Role::Audit,
            name: name.into(),
            bytes: 0,
            sha256: String::new(),
        }))
    }

    /// Merges the next segment (its wire bytes), in file then offset order.
    pub fn merge_segment(&mut self, bytes: &[u8]) -> Result<(), SessionError> {
        let b = self.merging()?;
        let segment = Segment::from_bytes(bytes).map_err(SessionError::Segment)?;
        if segment.file() as usize >= b.file_count() {
            return Err(SessionError::SegmentOfUnknownFile);
        }
        b.merge(segment);
        Ok(())
    }

    /// Gives a segmented audit file's size and sha256 (hex, or empty when it comes later).
    pub fn set_audit_file_digest(&mut self, file: u32, size: u64, sha256: String) -> Result<(), SessionError> {
        let b = self.merging()?;
        if file as usize >= b.file_count() {
            return Err(SessionError::NoSuchAuditFile(file));
        }
        b.set_file_digest(file, size, sha256);
        Ok(())
    }

    /// Ends a segmented audit log: the index.
    pub fn finish_segmented_audit(&mut self) -> Result<&AuditIndex, SessionError> {
        if !matches!(self.audit, Audit::Merging(_)) {
            return Err(SessionError::NotSegmented);
        }
        let Audit::Merging(b) = std::mem::replace(&mut self.audit, Audit::Empty) else {
            unreachable!("checked above")
        };
        Ok(self.indexed(b.finish()))
    }

    /// Takes an audit log a shell scanned itself (e.g. on several threads).
    pub fn set_audit_index(&mut self, index: AuditIndex) -> &AuditIndex {
        self.indexed(index)
    }

    fn indexed(&mut self, index: AuditIndex) -> &AuditIndex {
        self.audit = Audit::Indexed {
            index,
            pass2: Pass2::None,
            released: false,
        };
        match &self.audit {
            Audit::Indexed { index, .. } => index,
            _ => unreachable!("just set"),
        }
    }

    /// Starts an audit file; the first after anything but a streamed scan starts a new log.
    pub fn begin_audit(&mut self, name: &str) {
        if !matches!(self.audit, Audit::Scanning(_)) {
            let mut s = AuditScanner::new(self.policy.pass_verdicts.clone(), DEFAULT_MAX_LINE);
            s.hash_files(self.hashing);
            self.audit = Audit::Scanning(s);
        }
        let Audit::Scanning(scanner) = &mut self.audit else {
            unreachable!("just set")
        };
        scanner.begin_file(name);
    }

    /// Feeds the next chunk of the current audit file.
    pub fn push_audit(&mut self, chunk: &[u8]) -> Result<(), SessionError> {
        match &mut self.audit {
            Audit::Scanning(s) => {
                s.push(chunk);
                Ok(())
            }
            _ => Err(SessionError::PushBeforeBegin),
        }
    }

    /// Ends a streamed audit log (all its files): the index.
    pub fn finish_audit(&mut self) -> Result<&AuditIndex, SessionError> {
        if !matches!(self.audit, Audit::Scanning(_)) {
            return Err(SessionError::NoAuditBegun);
        }
        let Audit::Scanning(s) = std::mem::replace(&mut self.audit, Audit::Empty) else {
            unreachable!("checked above")
        };
        Ok(self.indexed(s.finish()))
    }

    /// The index, once pass 1 is done.
    pub fn audit_index(&self) -> Option<&AuditIndex> {
        match &self.audit {
            Audit::Indexed { index, .. } => Some(index),
            _ => None,
        }
    }

    /// Gives an indexed audit file's sha256 (hex) after pass 1.
    pub fn set_audit_digest(&mut self, file: u32, sha256: String) -> Result<(), SessionError> {
        let Audit::Indexed { index, .. } = &mut self.audit else {
            return Err(SessionError::AuditNotLoaded);
        };
        if file as usize >= index.files().len() {
            return Err(SessionError::NoSuchAuditFile(file));
        }
        index.set_file_sha256(file as usize, sha256);
        Ok(())
    }

    /// Chooses the test cases and starts pass 2: the ranges to read. A test set built before
    /// is dropped.
    pub fn needed_ranges(&mut self) -> Result<&[ReadRange], SessionError> {
        let Audit::Indexed { index, pass2, released } = &mut self.audit else {
            return Err(SessionError::AuditNotLoaded);
        };
        if *released {
            return Err(SessionError::PipelinesReleased);
        }
        let selection = index.select(&self.policy.test_set);
        *pass2 = Pass2::Building(Box::new(TestSetBuilder::new(index, selection)));
        match pass2 {
            Pass2::Building(b) => Ok(b.ranges()),
            _ => unreachable!("just set"),
        }
    }

    /// [`Session::needed_ranges`] for the candidates at `positions` (a caller's own sample, see
    /// [`AuditIndex::select_positions`]); `Err` for a position out of range or repeated.
    pub fn needed_ranges_at(&mut self, positions: &[usize]) -> Result<&[ReadRange], SessionError> {
        let Audit::Indexed { index, pass2, released } = &mut self.audit else {
            return Err(SessionError::AuditNotLoaded);
        };
        if *released {
            return Err(SessionError::PipelinesReleased);
        }
        let selection = index
            .select_positions(&self.policy.test_set, positions)
            .map_err(SessionError::Positions)?;
        *pass2 = Pass2::Building(Box::new(TestSetBuilder::new(index, selection)));
        match pass2 {
            Pass2::Building(b) => Ok(b.ranges()),
            _ => unreachable!("just set"),
        }
    }

    /// Frees the audit index's pipeline table (a shell that will not select again does this
    /// before reading the verdict files, to hold less memory). A later rebuild is then a rescan.
    pub fn release_pipelines(&mut self) {
        if let Audit::Indexed { index, released, .. } = &mut self.audit {
            index.release_pipelines();
            *released = true;
        }
    }

    /// The builder of the selection being read (pass 2), to feed it.
    pub fn test_set_builder(&mut self) -> Result<&mut TestSetBuilder, SessionError> {
        match &mut self.audit {
            Audit::Indexed {
                pass2: Pass2::Building(b),
                ..
            } => Ok(b),
            _ => Err(SessionError::NoSelection),
        }
    }

    fn range_builder(&mut self, i: usize) -> Result<&mut TestSetBuilder, SessionError> {
        let builder = self.test_set_builder()?;
        if i >= builder.ranges().len() {
            return Err(SessionError::NoSuchRange(i));
        }
        Ok(builder)
    }

    /// Feeds the next bytes of range `i` of [`Session::needed_ranges`].
    pub fn feed_range(&mut self, i: usize, bytes: &[u8]) -> Result<(), SessionError> {
        Ok(self.range_builder(i)?.push(i, bytes)?)
    }

    /// Ends range `i` once all its bytes were fed.
    pub fn end_range(&mut self, i: usize) -> Result<(), SessionError> {
        Ok(self.range_builder(i)?.end_range(i)?)
    }

    /// Feeds the next bytes of audit file `file`'s whole (decompressed) stream, from offset 0
    /// in order: the builder keeps what its ranges need ([`TestSetBuilder::push_stream`]).
    /// Gives whether more of the stream is needed (false once its last range was ended).
    pub fn feed_stream(&mut self, file: u32, bytes: &[u8]) -> Result<bool, SessionError> {
        let builder = self.test_set_builder()?;
        builder.push_stream(file, bytes)?;
        Ok(!builder.stream_done(file))
    }

    /// Ends audit file `file`'s stream ([`TestSetBuilder::end_stream`]).
    pub fn end_stream(&mut self, file: u32) -> Result<(), SessionError> {
        Ok(self.test_set_builder()?.end_stream(file)?)
    }

    /// Finishes pass 2 after every range was read and ended: the test set.
    pub fn finish_test_set(&mut self) -> Result<&TestSet, SessionError> {
        let Audit::Indexed { pass2, .. } = &mut self.audit else {
            return Err(SessionError::NoSelection);
        };
        if !matches!(pass2, Pass2::Building(_)) {
            return Err(SessionError::NoSelection);
        }
        let Pass2::Building(b) = std::mem::replace(pass2, Pass2::None) else {
            unreachable!("checked above")
        };
        *pass2 = Pass2::Built(b.finish()?);
        match pass2 {
            Pass2::Built(ts) => Ok(ts),
            _ => unreachable!("just set"),
        }
    }

    /// Builds the test set from the whole audit files (in the order pass 1 read them).
    pub fn build_test_set(&mut self, files: &[&[u8]]) -> Result<&TestSet, SessionError> {
        let Audit::Indexed { index, pass2, released } = &mut self.audit else {
            return Err(SessionError::AuditNotLoaded);
        };
        if *released {
            return Err(SessionError::PipelinesReleased);
        }
        if files.len() != index.files().len() {
            return Err(SessionError::AuditFileCount {
                expected: index.files().len(),
                got: files.len(),
            });
        }
        let ts = crate::testset::build_from_memory(index, files, &self.policy.test_set)?;
        *pass2 = Pass2::Built(ts);
        match pass2 {
            Pass2::Built(ts) => Ok(ts),
            _ => unreachable!("just set"),
        }
    }

    /// The test set, once built.
    pub fn test_set(&self) -> Option<&TestSet> {
        match &self.audit {
            Audit::Indexed {
                pass2: Pass2::Built(ts),
                ..
            } => Some(ts),
            _ => None,
        }
    }

    /// Takes the test set out (the session has none afterwards).
    pub fn take_test_set(&mut self) -> Option<TestSet> {
        match &mut self.audit {
            Audit::Indexed { pass2, .. } => match std::mem::replace(pass2, Pass2::None) {
                Pass2::Built(ts) => Some(ts),
                other => {
                    *pass2 = other;
                    None
                }
            },
            _ => None,
        }
    }

    /// Reads `side`'s verdict file.
    pub fn add_verdicts(&mut self, side: Side, file_name: &str, bytes: &[u8]) -> Result<(), SessionError> {
        let parsed = parse_verdicts(Role::verdicts(side), file_name, bytes)?;
        self.set_verdicts(side, parsed);
        Ok(())
    }

    /// Takes `side`'s verdicts read by the shell (e.g. on a thread of its own).
    pub fn set_verdicts(&mut self, side: Side, verdicts: Verdicts) {
        self.verdicts[slot(side)] = Some(verdicts);
    }

    /// Reads `side`'s trajectory file.
    pub fn add_trajectories(&mut self, side: Side, file_name: &str, bytes: &[u8]) -> Result<(), SessionError> {
        let parsed = parse_trajectories(Role::trajectories(side), file_name, bytes)?;
        self.set_trajectories(side, parsed);
        Ok(())
    }

    /// Takes `side`'s trajectories read by the shell.
    pub fn set_trajectories(&mut self, side: Side, trajectories: Trajectories) {
        self.trajectories[slot(side)] = Some(trajectories);
    }

    /// Forgets an input; the audit log takes the test set with it.
    pub fn remove_input(&mut self, input: Role) {
        match input {
            Role::Audit => self.audit = Audit::Empty,
            Role::OldVerdicts => self.verdicts[slot(Side::Old)] = None,
            Role::NewVerdicts => self.verdicts[slot(Side::New)] = None,
            Role::OldTrajectories => self.trajectories[slot(Side::Old)] = None,
            Role::NewTrajectories => self.trajectories[slot(Side::New)] = None,
        }
    }

    /// True when some record of `side`'s verdict file that a test case may take carries an answer
    /// (`output`): [`Session::case_outputs`] then has something to read.
    pub fn carries_outputs(&self, side: Side) -> bool {
        self.verdicts[slot(side)]
            .as_ref()
            .is_some_and(Verdicts::carries_outputs)
    }

    /// What each test case's record in `side`'s verdict file answered, in test-set order: the
    /// answer as JSON text ([`crate::verdicts::read_output`]) and whether it was cut to its bound,
    /// `None` for a case whose record carries no answer (or that has no record). `bytes` are the
    /// file's, read again: refused when they are not the bytes that were read (another sha256).
    pub fn case_outputs(&self, side: Side, bytes: &[u8]) -> Result<Vec<Option<(String, bool)>>, SessionError> {
        let test_set = self.test_set().ok_or(SessionError::Missing("the test set"))?;
        let sha256 = hex::encode(<sha2::Sha256 as sha2::Digest>::digest(bytes));
        self.check_verdict_file(side, &sha256, bytes.len() as u64)?;
        Ok((0..test_set.cases.len())
            .map(|i| {
                let at = self.output_at(side, i)?;
                Some((read_output(bytes, &at)?, at.truncated))
            })
            .collect())
    }

    /// What the records of the test cases at `cases` (places in test-set order) answered in
    /// `side`'s verdict file `bytes`, read again (refused when not the bytes read): each case
    /// whose record carries an answer, with the answer's JSON text and whether it was cut.
    pub fn case_answers(
        &self,
        side: Side,
        bytes: &[u8],
        cases: &[usize],
    ) -> Result<std::collections::HashMap<usize, (String, bool)>, SessionError> {
        let sha256 = hex::encode(<sha2::Sha256 as sha2::Digest>::digest(bytes));
        self.check_verdict_file(side, &sha256, bytes.len() as u64)?;
        Ok(cases
            .iter()
            .filter_map(|&i| {
                let at = self.output_at(side, i)?;
                Some((i, (read_output(bytes, &at)?, at.truncated)))
            })
            .collect())
    }

    /// Refuses a verdict file that is not the one `side`'s verdicts were read from: its sha256
    /// (hex) or its size differs, so the answers' places in it say nothing.
    pub fn check_verdict_file(&self, side: Side, sha256: &str, bytes: u64) -> Result<(), SessionError> {
        let verdicts = self.verdicts[slot(side)]
            .as_ref()
            .ok_or(SessionError::Missing(match side {
                Side::Old => "the old model's verdict file",
                Side::New => "the new model's verdict file",
            }))?;
        let file = &verdicts.file;
        if sha256 != file.sha256 || bytes != file.bytes {
            return Err(InputError::at(
                file.role,
                &file.name,
                None,
                format!(
                    "the file changed since it was read (sha256 {sha256}, {bytes} bytes; read: sha256 {}, {} bytes): its answers cannot be shown",
                    file.sha256, file.bytes
                ),
            )
            .into());
        }
        Ok(())
    }

    /// Where the answer of test case `index` (in test-set order) is in `side`'s verdict file:
    /// `None` when the case's record carries none, or there is no such case or file. The page
    /// keeps these offsets, not the answers, and reads a case's answer from the file on demand.
    pub fn output_at(&self, side: Side, index: usize) -> Option<OutputAt> {
        let test_set = self.test_set()?;
        let case = test_set.cases.get(index)?;
        self.verdicts[slot(side)]
            .as_ref()?
            .output_for(&case.pipeline_id, test_set.has_twin(index))
    }

    /// `side`'s trajectory result for test case `index`: when the case's verdict record names
    /// one (`trajectory_id`), the last result of the trajectory file with that id; otherwise (or
    /// when the file has no such result) the last result that names the case's `pipeline_id`
    /// (the same text and type), if any.
    pub fn case_trajectory(&self, side: Side, index: usize) -> Option<&crate::trajectory::Scored> {
        let test_set = self.test_set()?;
        let case = test_set.cases.get(index)?;
        let results = &self.trajectories[slot(side)].as_ref()?.results;
        let named = self.verdicts[slot(side)]
            .as_ref()
            .and_then(|v| v.trajectory_for(&case.pipeline_id, test_set.has_twin(index)));
        let id = &case.pipeline_id;
        named
            .and_then(|named| results.iter().rev().find(|r| r.trajectory_id.as_deref() == Some(named)))
            .or_else(|| {
                results.iter().rev().find(|r| {
                    r.pipeline_id
                        .as_ref()
                        .is_some_and(|(text, numeric)| *numeric == id.numeric && **text == *id.text)
                })
            })
    }

    /// `side`'s latency and tokens per test case (in the test set's order, over the records each
    /// case counts); `None` when its verdict file carries no cost field.
    pub fn case_costs(&self, side: Side) -> Option<Vec<crate::cost::CaseCost>> {
        let test_set = self.test_set()?;
        let verdicts = self.verdicts[slot(side)].as_ref()?;
        if !verdicts.carries_cost() {
            return None;
        }
        let all_runs = self.policy.repeats() == crate::policy::Repeats::Mean;
        Some(
            test_set
                .cases
                .iter()
                .enumerate()
                .map(|(i, case)| {
                    crate::cost::CaseCost::of(verdicts.costs_for(&case.pipeline_id, test_set.has_twin(i), all_runs).1)
                })
                .collect(),
        )
    }

    /// True when the test set and both verdict files are in: [`Session::report`] can run.
    pub fn is_ready(&self) -> bool {
        self.test_set().is_some() && self.verdicts.iter().all(Option::is_some)
    }

    /// The GateReport, under the current rules.
    pub fn report(&self) -> Result<GateReport, SessionError> {
        self.report_under(Rules::Current)
    }

    /// The GateReport under `rules` ([`Rules::Before`]: the previous build's report, which
    /// `verify --reproduce` accepts a decision signed by that build against).
    pub fn report_under(&self, rules: Rules) -> Result<GateReport, SessionError> {
        let index = self.audit_index().ok_or(SessionError::Missing("the audit log"))?;
        let test_set = self.test_set().ok_or(SessionError::Missing("the test set"))?;
        let [old, new] = &self.verdicts;
        for verdicts in [old, new].into_iter().flatten() {
            verdicts.check_against(test_set)?;
        }
        let inputs = GateInputs {
            audit: index,
            test_set,
            old_verdicts: old
                .as_ref()
                .ok_or(SessionError::Missing("the old model's verdict file"))?,
            new_verdicts: new
                .as_ref()
                .ok_or(SessionError::Missing("the new model's verdict file"))?,
            old_trajectories: self.trajectories[0].as_ref(),
            new_trajectories: self.trajectories[1].as_ref(),
        };
        Ok(evaluate_under(&inputs, &self.policy, rules))
    }
}

#[cfg(test)]
mod tests;
