//! The MLflow registry's flags, shared by `apply --mlflow` and `verify --mlflow`: the server's
//! URL, a CA bundle, and the explicit acceptance of `MLFLOW_TRACKING_INSECURE_TLS`. The
//! credentials are MLflow's own environment variables, read by the library, never flags.

use crate::native::mlflow::RegistrySettings;
use anyhow::Result;
use clap::Args;
use std::path::PathBuf;

#[derive(Args, Clone)]
pub struct RegistryArgs {
    /// The MLflow tracking server (http:// or https://): promote through its model registry
    /// alias instead of a config. Credentials come from MLFLOW_TRACKING_TOKEN, or
    /// MLFLOW_TRACKING_USERNAME and MLFLOW_TRACKING_PASSWORD, never from a flag or the URL.
    #[arg(long, value_name = "URL")]
    pub(crate) mlflow: Option<String>,
    /// A PEM bundle of CA certificates trusted for --mlflow besides the system's roots.
    #[arg(long, value_name = "PEM", requires = "mlflow")]
    ca_file: Option<PathBuf>,
    /// Accept MLFLOW_TRACKING_INSECURE_TLS=true (no check of the server's certificate); without
    /// this flag that setting is refused.
    #[arg(long, requires = "mlflow")]
    mlflow_insecure_tls: bool,
    /// The most bytes a model version's files may hold, all together, read from --mlflow or a
    /// local file: location (default 256 GiB); without --model-version, the most the versions
    /// searched may hold together. Each file is also read no further than the size its listing
    /// gives.
    #[arg(long, value_name = "BYTES", requires = "mlflow")]
    mlflow_max_bytes: Option<u64>,
}

impl RegistryArgs {
    /// The library's settings (`--mlflow` given).
    pub(crate) fn settings(&self) -> Result<RegistrySettings> {
        Ok(RegistrySettings {
            url: self
                .mlflow
                .clone()
                .ok_or_else(|| anyhow::anyhow!("--mlflow URL is needed"))?,
            ca_file: self.ca_file.clone(),
            allow_insecure_tls: self.mlflow_insecure_tls,
            max_download_bytes: self.mlflow_max_bytes,
        })
    }
}
