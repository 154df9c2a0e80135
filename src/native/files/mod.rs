//! The deploy step's files, for every native shell (Unix only): a trusted file read whole and
//! bounded (`regular`), a file replaced durably and atomically (`replace`), the config's lock
//! and the ledger (`locks`); and [`deploy_to_config`], the upstream bridge's change to a serving
//! config made with them, for a caller that deploys without a signed decision (the Python
//! binding's `DeploymentGate.apply_decision`). The CLI's `apply` composes the same parts with
//! verification and the ledger.

mod digest;
pub mod locks;
pub mod regular;
pub mod replace;

pub use digest::model_digest;
pub use regular::{open_error, read_regular};

use crate::deploy::{deploy_config, Change, MAX_CONFIG_BYTES};
use anyhow::{anyhow, bail, Result};
use locks::{lock_config, ConfigPaths};
use replace::{dir_of, file_name_of, remove_stale_temps, TempFile};
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

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

/// Makes `change` to the serving config at `config` as `apply`'s built-in action makes it:
/// under the config's lock, the YAML edited in place (every other byte kept, the result parsed
/// again and compared), the config as read saved under upstream's backup name, both written
/// and synced before either is renamed, the config replaced only if nobody changed it
/// meanwhile. A config with other hard links is refused. Nothing is recorded in a ledger: there
/// is no signed decision to record.
pub fn deploy_to_config(config: &Path, change: &Change<'_>) -> Result<Deployed> {
    let paths = ConfigPaths::resolve(config)?;
    let _lock = lock_config(&paths)?;
    remove_stale_temps(&paths.real_dir, &paths.real_name)?;
    let (meta, original) = read_regular(&paths.real, "config", MAX_CONFIG_BYTES)
        .map_err(|e| anyhow!("{e:#} (config {})", paths.given.display()))?;
    if meta.nlink() != 1 {
        bail!(
            "the config {} has {} hard links; refused, NOT deployed (replacing it would leave its other names with the old model)",
            paths.given.display(),
            meta.nlink()
        );
    }
    let updated = deploy_config(&original, change).map_err(|e| anyhow!("{}: {e}", paths.given.display()))?;
    if updated == original {
        return Ok(Deployed {
            changed: false,
            config: paths.real,
            backup: None,
        });
    }
    let owner_only = std::fs::canonicalize(dir_of(&paths.given)).ok().as_deref() != Some(paths.real_dir.as_path());
    let mut backup = TempFile::create(&dir_of(&paths.backup), &file_name_of(&paths.backup)?, &meta, owner_only)?;
    backup.write_synced(&original)?;
    let mut staged = TempFile::create(&paths.real_dir, &paths.real_name, &meta, false)?;
    staged.write_synced(&updated)?;
    backup.commit(&paths.backup)?;
    staged.commit_if_unchanged(&paths.real, &original, || ())?;
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
        let done = deploy_to_config(&config, &change).unwrap();
        assert!(done.changed);
        assert_eq!(
            std::fs::read_to_string(&config).unwrap(),
            "# serving\ndefault_model: \"models/new\"  # the live one\nbackend: \"transformers\"\nport: 8080\n"
        );
        let backup = dir.path().join("serving.yaml.backup");
        assert_eq!(done.backup.as_deref(), Some(backup.as_path()));
        assert_eq!(std::fs::read_to_string(&backup).unwrap(), before);
        // Again: nothing to change, nothing written, the backup kept.
        let again = deploy_to_config(&config, &change).unwrap();
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
        assert!(deploy_to_config(&config, &change).is_err());
        assert_eq!(std::fs::read_to_string(&config).unwrap(), "- a\n- b\n");
        assert!(!dir.path().join("serving.yaml.backup").exists());
    }
}
