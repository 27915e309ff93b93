//! The TLS client configuration every plugin's HTTP client shares.
//!
//! Building a verifier reads and parses the system's root certificates; doing that
//! for each of a thousand plugins would waste time and memory. It is built once per
//! process and each client gets a cheap clone (the verifier and its roots sit behind
//! an `Arc`).

use std::sync::{Arc, OnceLock};

use rustls::ClientConfig;
use rustls_platform_verifier::BuilderVerifierExt;

use super::HttpError;

/// The process-wide configuration, or why it could not be built.
static SHARED: OnceLock<Result<ClientConfig, String>> = OnceLock::new();

/// A clone of the shared configuration: system roots (with the platform verifier, as
/// reqwest uses by default), aws-lc-rs crypto, TLS 1.2 and 1.3, HTTP/1.1 by ALPN.
pub(crate) fn client_config() -> Result<ClientConfig, HttpError> {
    SHARED
        .get_or_init(build)
        .clone()
        .map_err(|e| HttpError::Other(format!("cannot set up TLS: {e}")))
}

/// Builds the configuration; runs once.
fn build() -> Result<ClientConfig, String> {
    let provider = Arc::new(rustls::crypto::aws_lc_rs::default_provider());
    let mut config = ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| e.to_string())?
        .with_platform_verifier()
        .map_err(|e| e.to_string())?
        .with_no_client_auth();
    config.alpn_protocols = vec![b"http/1.1".to_vec()];
    tracing::debug!("built the shared TLS client configuration");
    Ok(config)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_configuration_is_shared() {
        let a = client_config().expect("TLS configuration builds");
        let b = client_config().expect("TLS configuration builds");
        // Clones of one configuration: the same provider (and verifier, whose
        // roots were parsed once), not fresh ones.
        assert!(Arc::ptr_eq(
            &a.crypto_provider().clone(),
            &b.crypto_provider().clone()
        ));
        assert_eq!(a.alpn_protocols, vec![b"http/1.1".to_vec()]);
    }
}
