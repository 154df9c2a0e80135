//! One call for inputs already in memory: pass 1, selection, pass 2 and the report.

use crate::audit::{AuditIndex, AuditScanner, DEFAULT_MAX_LINE};
use crate::input::Role;
use crate::input::{InputError, Side};
use crate::policy::GatePolicy;
use crate::report::GateReport;
use crate::session::{Session, SessionError};
use crate::testset::{build_from_memory, TestSet, TestSetError};

/// A named file's bytes.
pub type NamedBytes<'a> = (&'a str, &'a [u8]);

/// All inputs of one gate run, in memory.
pub struct MemoryInputs<'a> {
    /// The audit files, in order (one stream).
    pub audit: Vec<NamedBytes<'a>>,
    /// The old model's verdict file.
    pub old_verdicts: NamedBytes<'a>,
    /// The new model's verdict file.
    pub new_verdicts: NamedBytes<'a>,
    /// The old model's trajectory file.
    pub old_trajectories: Option<NamedBytes<'a>>,
    /// The new model's trajectory file.
    pub new_trajectories: Option<NamedBytes<'a>>,
}

/// Scans in-memory audit files (pass 1).
pub fn scan_audit(files: &[NamedBytes<'_>], policy: &GatePolicy) -> AuditIndex {
    let mut scanner = AuditScanner::new(policy.pass_verdicts.clone(), DEFAULT_MAX_LINE);
    for (name, bytes) in files {
        scanner.begin_file(name);
        scanner.push(bytes);
    }
    scanner.finish()
}

/// Builds the test set from in-memory audit files.
pub fn test_set_in_memory(files: &[NamedBytes<'_>], policy: &GatePolicy) -> Result<(AuditIndex, TestSet), InputError> {
    let index = scan_audit(files, policy);
    let bytes: Vec<&[u8]> = files.iter().map(|f| f.1).collect();
    let ts = build_from_memory(&index, &bytes, &policy.test_set).map_err(audit_error)?;
    Ok((index, ts))
}

/// Reads every input and evaluates the gate: one [`Session`] fed the whole files.
pub fn evaluate_in_memory(inputs: &MemoryInputs<'_>, policy: &GatePolicy) -> Result<(TestSet, GateReport), InputError> {
    let mut session = Session::new(policy.clone());
    session.set_audit_index(scan_audit(&inputs.audit, policy));
    let files: Vec<&[u8]> = inputs.audit.iter().map(|f| f.1).collect();
    session.build_test_set(&files).map_err(input)?;
    session
        .add_verdicts(Side::Old, inputs.old_verdicts.0, inputs.old_verdicts.1)
        .map_err(input)?;
    session
        .add_verdicts(Side::New, inputs.new_verdicts.0, inputs.new_verdicts.1)
        .map_err(input)?;
    for (side, file) in [
        (Side::Old, inputs.old_trajectories),
        (Side::New, inputs.new_trajectories),
    ] {
        if let Some((name, bytes)) = file {
            session.add_trajectories(side, name, bytes).map_err(input)?;
        }
    }
    let report = session.report().map_err(input)?;
    Ok((session.take_test_set().expect("the test set is in"), report))
}

/// A pass-2 error as an input error naming the audit file.
fn audit_error(e: TestSetError) -> InputError {
    let file = match &e {
        TestSetError::Changed { file, .. } | TestSetError::NotFed { file, .. } => file.clone(),
    };
    InputError::at(Role::Audit, &file, None, e.to_string())
}

/// The input errors of the calls above (the others cannot happen in this order).
fn input(e: SessionError) -> InputError {
    match e {
        SessionError::Input(e) => e,
        SessionError::TestSet(e) => audit_error(e),
        other => InputError::at(Role::Audit, "", None, other.to_string()),
    }
}
