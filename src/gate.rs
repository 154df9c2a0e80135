//! One call for inputs already in memory: pass 1, selection, pass 2 and the report.

use crate::audit::{AuditIndex, AuditScanner, DEFAULT_MAX_LINE};
use crate::decision::GatePolicy;
use crate::error::InputError;
use crate::input::Role;
use crate::report::{evaluate, GateInputs, GateReport};
use crate::testset::{build_from_memory, TestSet, TestSetError};
use crate::trajectory::{parse_trajectories, Trajectories};
use crate::verdicts::{parse_verdicts, Verdicts};

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
    let ts = build_from_memory(&index, &bytes, &policy.test_set).map_err(|e| {
        let file = match &e {
            TestSetError::Changed { file, .. } | TestSetError::NotFed { file, .. } => file.clone(),
        };
        InputError::at(Role::Audit, &file, None, e.to_string())
    })?;
    Ok((index, ts))
}

/// Reads every input and evaluates the gate.
pub fn evaluate_in_memory(inputs: &MemoryInputs<'_>, policy: &GatePolicy) -> Result<(TestSet, GateReport), InputError> {
    let (index, ts) = test_set_in_memory(&inputs.audit, policy)?;
    let old: Verdicts = parse_verdicts(Role::OldVerdicts, inputs.old_verdicts.0, inputs.old_verdicts.1)?;
    let new: Verdicts = parse_verdicts(Role::NewVerdicts, inputs.new_verdicts.0, inputs.new_verdicts.1)?;
    let traj = |role: Role, f: Option<NamedBytes<'_>>| -> Result<Option<Trajectories>, InputError> {
        f.map(|(name, bytes)| parse_trajectories(role, name, bytes)).transpose()
    };
    let old_t = traj(Role::OldTrajectories, inputs.old_trajectories)?;
    let new_t = traj(Role::NewTrajectories, inputs.new_trajectories)?;
    let report = evaluate(
        &GateInputs {
            audit: &index,
            test_set: &ts,
            old_verdicts: &old,
            new_verdicts: &new,
            old_trajectories: old_t.as_ref(),
            new_trajectories: new_t.as_ref(),
        },
        policy,
    );
    Ok((ts, report))
}
