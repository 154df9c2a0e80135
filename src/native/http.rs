//! The one HTTP client deploy-gate makes, for every native use: `run`'s endpoint targets and the
//! MLflow registry (`apply --mlflow`, `verify --mlflow`). reqwest over rustls with the ring
//! provider (pure Rust and assembly, no cmake), the system's roots plus an optional CA bundle,
//! redirects never followed (a redirect could carry credentials to another host), and the
//! user agent `deploy-gate/VERSION`.

use std::time::Duration;

/// What a client is made with, beyond the common settings.
#[derive(Debug, Clone, Default)]
pub struct ClientSettings {
    /// A PEM bundle trusted besides the system's roots, and the name it is reported by (a file
    /// or a config's field).
    pub ca: Option<(Vec<u8>, String)>,
    /// Accept any server certificate (only when the caller was asked to, explicitly).
    pub insecure_tls: bool,
    /// The time to connect.
    pub connect_timeout: Option<Duration>,
    /// The time of a whole request, answer included.
    pub timeout: Option<Duration>,
}

/// A client builder with the common settings and `settings` applied; the caller may add its
/// own (pool sizes) and build it. The error names the CA bundle when it is not usable.
pub fn builder(settings: &ClientSettings) -> Result<reqwest::ClientBuilder, String> {
    // The ring provider, once per process (a second install is refused harmlessly). rustls
    // 0.23.48 (the Python binding's lock) deprecates it for its lack of post-quantum key
    // exchange; aws-lc-rs, which has it, needs cmake and a C toolchain this project avoids.
    #[allow(deprecated)]
    let _ = rustls::crypto::ring::default_provider().install_default();
    let mut builder = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .tcp_nodelay(true)
        .user_agent(concat!("deploy-gate/", env!("CARGO_PKG_VERSION")));
    if let Some(t) = settings.connect_timeout {
        builder = builder.connect_timeout(t);
    }
    if let Some(t) = settings.timeout {
        builder = builder.timeout(t);
    }
    if let Some((pem, name)) = &settings.ca {
        let certs = reqwest::Certificate::from_pem_bundle(pem)
            .map_err(|e| format!("{name}: not a PEM certificate bundle: {e}"))?;
        if certs.is_empty() {
            return Err(format!("{name}: the file holds no certificate"));
        }
        builder = builder.tls_certs_merge(certs);
    }
    if settings.insecure_tls {
        builder = builder.tls_danger_accept_invalid_certs(true);
    }
    Ok(builder)
}

/// An error with its causes, `: `-separated (reqwest's own Display leaves them out).
pub fn chain(e: &dyn std::error::Error) -> String {
    let mut out = e.to_string();
    let mut source = e.source();
    while let Some(s) = source {
        let text = s.to_string();
        if !out.contains(&text) {
            out.push_str(": ");
            out.push_str(&text);
        }
        source = s.source();
    }
    out
}
