//! The deploy step's files, for every native shell (Unix only): a trusted file read whole and
//! bounded (`regular`), a file replaced durably and atomically (`replace`), the config's lock
//! and the ledger (`locks`), their typed errors and notices (`error`); and
//! [`deploy_to_config`], the upstream bridge's change to a serving config made with them, for a
//! caller that deploys without a signed decision (the Python binding's
//! `DeploymentGate.apply_decision`). [`crate::native::apply`] composes the same parts with
//! verification and the ledger.

mod digest;
mod error;
pub mod locks;
pub mod regular;
pub mod replace;

pub use digest::model_digest;
pub use error::{chain, FilesError, Notice, Notify};
pub use regular::{open_error, read_key, read_regular};

use crate::deploy::{backup_file_name, deploy_config, Change, MAX_CONFIG_BYTES};
use locks::{lock_config, ConfigPaths};
use replace::{dir_of, file_name_of, remove_stale_temps, TempFile};
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

/// A point of a deploy at which a test stops the process ([`FailAt`]): the CLI's hidden
/// `apply --fail-at STEP`, and the Python binding's test hook.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Step {
    /// The locks are held; nothing written yet.
    Locked,
    /// The intent entry is in the ledger (and the config's record).
    IntentLogged,
    /// The backup's temporary file is written and synced, not renamed.
    BackupWritten,
    /// The new config's temporary file is written and synced too.
    ConfigWritten,
    /// The backup is in place; the config is untouched.
    BackupRenamed,
    /// The new config is in place; the ledger has only the intent.
    ConfigRenamed,
    /// The outcome entry is in the ledger.
    OutcomeLogged,
    /// A registry apply: the decision is recorded on the model version (its tags); the ledger
    /// has nothing yet.
    DecisionTagged,
    /// A registry apply: the alias points at the new version; the ledger has only the intent.
    AliasMoved,
}

impl Step {
    /// Every step, in the order a deploy reaches them (a config's deploy, then a registry's).
    pub const ALL: [Step; 9] = [
        Step::Locked,
        Step::IntentLogged,
        Step::BackupWritten,
        Step::ConfigWritten,
        Step::BackupRenamed,
        Step::ConfigRenamed,
        Step::OutcomeLogged,
        Step::DecisionTagged,
        Step::AliasMoved,
    ];

    /// Its name in kebab case, as `--fail-at` takes it (`intent-logged`).
    pub fn as_str(self) -> &'static str {
        match self {
            Step::Locked => "locked",
            Step::IntentLogged => "intent-logged",
            Step::BackupWritten => "backup-written",
            Step::ConfigWritten => "config-written",
            Step::BackupRenamed => "backup-renamed",
            Step::ConfigRenamed => "config-renamed",
            Step::OutcomeLogged => "outcome-logged",
            Step::DecisionTagged => "decision-tagged",
            Step::AliasMoved => "alias-moved",
        }
    }

    /// The step named `name` (kebab or snake case).
    pub fn parse(name: &str) -> Option<Step> {
        let name = name.replace('_', "-");
        Step::ALL.into_iter().find(|s| s.as_str() == name)
    }
}

/// The test hook of the crash points: `FailAt(Some(step))` aborts the process (`SIGABRT`) when
/// a deploy reaches `step`, leaving its files as a crash there would. `FailAt::default()` never
/// does. Only tests set it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct FailAt(pub Option<Step>);

impl FailAt {
    /// Aborts the process if this is the step (saying so first).
    pub fn reached(self, step: Step, notify: &mut Notify<'_>) {
        if self.0 == Some(step) {
            notify(Notice::info(format!("--fail-at {step:?}: aborting")));
            std::process::abort();
        }
    }
}

/// What [`deploy_to_config`] did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Deployed {
    /// False when the config held this change already (nothing was written).
    pub changed: bool,
    /// The config file replaced (after every symlink).
    pub config: PathBuf,
    /// The backup written (upstream's name beside the config as given), when changed.
    pub backup: Option<PathBuf>,
}

/// Reads the config for an edit: a regular file with one link, at most [`MAX_CONFIG_BYTES`].
pub(crate) fn read_config(paths: &ConfigPaths) -> Result<(std::fs::Metadata, Vec<u8>), FilesError> {
    let (meta, original) =
        read_regular(&paths.real, "config", MAX_CONFIG_BYTES).map_err(|e| FilesError::ReadConfig {
            given: paths.given.clone(),
            cause: Box::new(e),
        })?;
    if meta.nlink() != 1 {
        return Err(FilesError::ConfigHardLinks {
            path: paths.given.clone(),
            links: meta.nlink(),
        });
    }
    Ok((meta, original))
}

/// Refuses a config whose backup name another file in its directory maps to as well
/// (`serving.yml` and `serving.yaml` both back up to `serving.yaml.backup`).
pub fn check_backup_name_is_ours(paths: &ConfigPaths) -> Result<(), FilesError> {
    let dir = dir_of(&paths.given);
    let ours = file_name_of(&paths.given)?;
    let backup = file_name_of(&paths.backup)?;
    let cannot_list = || format!("cannot list {}", dir.display());
    let entries = std::fs::read_dir(&dir).map_err(FilesError::io(cannot_list()))?;
    for entry in entries {
        let entry = entry.map_err(FilesError::io(cannot_list()))?;
        let Some(name) = entry.file_name().to_str().map(str::to_owned) else {
            continue;
        };
        if name == ours || name == backup {
            continue;
        }
        if backup_file_name(&name) == backup && std::fs::metadata(entry.path()).is_ok_and(|m| m.is_file()) {
            return Err(FilesError::SharedBackup {
                config: paths.given.clone(),
                other: entry.path(),
                backup: paths.backup.clone(),
            });
        }
    }
    Ok(())
}

/// Whether the backup and its temporary file are made readable by the owner only: when the
/// config as given is reached through a symlinked directory, the backup lands in another
/// directory than the config (whose permissions are not known to protect it).
pub(crate) fn backup_owner_only(paths: &ConfigPaths) -> bool {
    std::fs::canonicalize(dir_of(&paths.given)).ok().as_deref() != Some(paths.real_dir.as_path())
}

/// Makes `change` to the serving config at `config` as `apply`'s built-in action makes it:
/// under the config's lock, the YAML edited in place (every other byte kept, the result parsed
/// again and compared), the config as read saved under upstream's backup name, both written
/// and synced before either is renamed, the config replaced only if nobody changed it
/// meanwhile. A config with other hard links is refused. Nothing is recorded in a ledger: there
/// is no signed decision to record. `fail_at` is the crash points' test hook (its
/// `BackupWritten` … `ConfigRenamed`); `notify` hears what was repaired or could not be synced.
pub fn deploy_to_config(
    config: &Path,
    change: &Change<'_>,
    fail_at: FailAt,
    notify: &mut Notify<'_>,
) -> Result<Deployed, FilesError> {
    let paths = ConfigPaths::resolve(config)?;
    let _lock = lock_config(&paths)?;
    check_backup_name_is_ours(&paths)?;
    remove_stale_temps(&paths.real_dir, &paths.real_name, notify)?;
    // After the check: the backup's temporary files are this config's.
    remove_stale_temps(&dir_of(&paths.backup), &file_name_of(&paths.backup)?, notify)?;
    fail_at.reached(Step::Locked, notify);
    let (meta, original) = read_config(&paths)?;
    let updated = deploy_config(&original, change).map_err(|error| FilesError::Edit {
        path: paths.given.clone(),
        error,
    })?;
    if updated == original {
        return Ok(Deployed {
            changed: false,
            config: paths.real,
            backup: None,
        });
    }
    let owner_only = backup_owner_only(&paths);
    let mut backup = TempFile::create(&dir_of(&paths.backup), &file_name_of(&paths.backup)?, &meta, owner_only)?;
    backup.write_synced(&original)?;
    fail_at.reached(Step::BackupWritten, notify);
    let mut staged = TempFile::create(&paths.real_dir, &paths.real_name, &meta, false)?;
    staged.write_synced(&updated)?;
    fail_at.reached(Step::ConfigWritten, notify);
    backup.commit(&paths.backup, notify)?;
    fail_at.reached(Step::BackupRenamed, notify);
    staged.commit_if_unchanged(&paths.real, &original, notify)?;
    fail_at.reached(Step::ConfigRenamed, notify);
    Ok(Deployed {
        changed: true,
        config: paths.real,
        backup: Some(paths.backup),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn deploys_keeping_every_other_byte_and_the_upstream_backup() {
        let dir = tempfile::tempdir().unwrap();
        let config = dir.path().join("serving.yml");
        let before = "# serving\ndefault_model: models/old  # the live one\nbackend: vllm\nport: 8080\n";
        std::fs::write(&config, before).unwrap();
        let change = Change {
            model_path: "./models/new/",
            backend: "transformers",
            stage_models: &[],
        };
        let done = deploy_to_config(&config, &change, FailAt::default(), &mut |_| ()).unwrap();
        assert!(done.changed);
        assert_eq!(
            std::fs::read_to_string(&config).unwrap(),
            "# serving\ndefault_model: \"models/new\"  # the live one\nbackend: \"transformers\"\nport: 8080\n"
        );
        let backup = dir.path().join("serving.yaml.backup");
        assert_eq!(done.backup.as_deref(), Some(backup.as_path()));
        assert_eq!(std::fs::read_to_string(&backup).unwrap(), before);
        // Again: nothing to change, nothing written, the backup kept.
        let again = deploy_to_config(&config, &change, FailAt::default(), &mut |_| ()).unwrap();
        assert!(!again.changed && again.backup.is_none());
        assert_eq!(std::fs::read_to_string(&backup).unwrap(), before);
    }

    #[test]
    fn a_config_that_is_not_a_mapping_is_refused_untouched() {
        let dir = tempfile::tempdir().unwrap();
        let config = dir.path().join("serving.yaml");
        std::fs::write(&config, "- a\n- b\n").unwrap();
        let change = Change {
            model_path: "m",
            backend: "api",
            stage_models: &[],
        };
        assert!(deploy_to_config(&config, &change, FailAt::default(), &mut |_| ()).is_err());
        assert_eq!(std::fs::read_to_string(&config).unwrap(), "- a\n- b\n");
        assert!(!dir.path().join("serving.yaml.backup").exists());
    }
}
