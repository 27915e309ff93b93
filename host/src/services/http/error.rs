//! Why a request failed, worded for the plugin (`client_error.rs` sorts the client's
//! failures into these reasons).

use crate::base::limits::format_bytes;

/// Why a request failed. `Display` is the one-line message the plugin sees; each
/// message names what failed and, where it helps, the host involved.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum HttpError {
    /// The request itself is unusable: bad URL, scheme, header name or value.
    #[error("invalid request: {0}")]
    InvalidRequest(String),
    /// The plugin's HTTP policy forbids the destination; the text says how to grant it.
    #[error("refused by policy: {0}")]
    Policy(String),
    /// The host name could not be resolved.
    #[error("DNS lookup failed: {0}")]
    Dns(String),
    /// No connection could be made (refused, unreachable, reset).
    #[error("connection failed: {0}")]
    Connect(String),
    /// The TLS handshake failed, usually because of the server's certificate.
    #[error("TLS failed: {0}")]
    Tls(String),
    /// A deadline passed; the text says which one.
    #[error("timed out: {0}")]
    Timeout(String),
    /// The response body is larger than the configured limit.
    #[error("response body exceeds the {} limit", format_bytes(*limit))]
    TooLarge {
        /// The limit in bytes (`HttpSettings::max_response_bytes`).
        limit: u64,
    },
    /// A redirect could not be followed: too many, or an unusable `Location`.
    #[error("redirect failed: {0}")]
    Redirect(String),
    /// Anything else, e.g. the server closing the connection mid-response.
    #[error("HTTP request failed: {0}")]
    Other(String),
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_body_over_the_limit_names_it() {
        assert_eq!(
            HttpError::TooLarge {
                limit: 4 * 1024 * 1024
            }
            .to_string(),
            "response body exceeds the 4 MiB limit"
        );
    }
}
