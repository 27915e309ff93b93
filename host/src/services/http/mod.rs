//! The host's HTTP service: plugins make HTTP requests only through here.
//!
//! Plugins are untrusted, so this module is a security boundary. Each plugin gets a
//! [`PluginHttp`] bound to its [`HttpPolicy`]: which hosts it was granted
//! (`--allow-http HOST[:PORT]`) and whether it may reach other, public hosts. The
//! policy is enforced on the addresses actually connected to, not on names: a
//! resolver filters what DNS returns, literal IPs are checked before sending, and
//! every redirect hop is checked again. Loopback, private, link-local (cloud
//! metadata) and other special addresses are refused unless granted.
//!
//! Every request is bounded ([`HttpSettings`]): a whole-request timeout, a connect
//! timeout, a response size limit and a redirect limit. Failures come back as an
//! [`HttpError`] whose message tells the plugin what failed.
//!
//! Files: `policy.rs` (grants and the per-URL decision), `addr.rs` (address
//! classes), `resolve.rs` (the filtering resolver), `tls.rs` (the shared TLS
//! configuration), `client.rs` (requests, redirects, bodies), `error.rs` (errors),
//! `client_error.rs` (the client's failures as errors). The client and what only it
//! uses need the `http` feature; without it `unavailable.rs` stands in, and every
//! request fails, saying why.

mod addr;
#[cfg(feature = "http")]
mod client;
#[cfg(feature = "http")]
mod client_error;
mod error;
// Without the client, nothing asks the policy about a URL or a resolved address.
#[cfg_attr(not(feature = "http"), allow(dead_code))]
mod policy;
#[cfg(feature = "http")]
mod resolve;
#[cfg(feature = "http")]
mod tls;
#[cfg(not(feature = "http"))]
mod unavailable;

use std::fmt;
use std::str::FromStr;
use std::time::Duration;

pub use addr::{AddrClass, classify};
#[cfg(feature = "http")]
pub use client::PluginHttp;
pub use error::HttpError;
pub use policy::{HostGrant, HostGrantError, HttpPolicy};
#[cfg(not(feature = "http"))]
pub use unavailable::PluginHttp;

/// The HTTP methods plugins can use (the plugin API offers `http.get` and `http.post`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Method {
    /// GET, without a body.
    Get,
    /// POST, usually with a body.
    Post,
}

impl Method {
    /// The method as it appears on the wire.
    pub fn as_str(self) -> &'static str {
        match self {
            Method::Get => "GET",
            Method::Post => "POST",
        }
    }
}

impl fmt::Display for Method {
    /// The method as it appears on the wire.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for Method {
    type Err = HttpError;

    /// Parses the method string a plugin sends ("GET" or "POST", any case).
    fn from_str(text: &str) -> Result<Self, Self::Err> {
        if text.eq_ignore_ascii_case("GET") {
            Ok(Method::Get)
        } else if text.eq_ignore_ascii_case("POST") {
            Ok(Method::Post)
        } else {
            Err(HttpError::InvalidRequest(format!(
                "unsupported method {text:?} (GET or POST)"
            )))
        }
    }
}

/// One plugin's HTTP request, as the plugin gave it; nothing here is trusted yet.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Request {
    /// GET or POST.
    pub method: Method,
    /// An absolute `http` or `https` URL.
    pub url: String,
    /// Header names and values, sent in this order (repeats of one name are sent
    /// together, where the first of them was). Framing and routing headers
    /// (`Host`, `Content-Length`, `Transfer-Encoding`, `Connection`, ...) are the
    /// host's business and are refused.
    pub headers: Vec<(String, String)>,
    /// The body, sent as given; `None` sends none.
    pub body: Option<Vec<u8>>,
}

impl Request {
    /// A GET of `url` without headers.
    pub fn get(url: impl Into<String>) -> Self {
        Request {
            method: Method::Get,
            url: url.into(),
            headers: Vec::new(),
            body: None,
        }
    }

    /// A POST of `body` to `url` without headers.
    pub fn post(url: impl Into<String>, body: impl Into<Vec<u8>>) -> Self {
        Request {
            method: Method::Post,
            url: url.into(),
            headers: Vec::new(),
            body: Some(body.into()),
        }
    }

    /// The same request with one more header.
    pub fn with_header(mut self, name: impl Into<String>, value: impl Into<String>) -> Self {
        self.headers.push((name.into(), value.into()));
        self
    }
}

/// A complete response, whatever its status (4xx and 5xx are responses, not errors).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Response {
    /// The HTTP status code.
    pub status: u16,
    /// Header names (lower case) and values, in the order received. Values that are
    /// not UTF-8 are converted lossily.
    pub headers: Vec<(String, String)>,
    /// The whole body, at most `HttpSettings::max_response_bytes` long.
    pub body: Vec<u8>,
}

impl Response {
    /// The first value of header `name` (case-insensitive), if present.
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }
}

/// Bounds on each request that the plugin API leaves open. They protect the host
/// from slow or huge responses; the defaults suit API calls.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HttpSettings {
    /// The whole request, redirects and body included, must finish within this.
    /// Default 30 s.
    pub timeout: Duration,
    /// Each connection attempt (TCP, not TLS) must succeed within this. Default 10 s.
    pub connect_timeout: Duration,
    /// The largest response body accepted, in bytes; larger bodies fail with
    /// [`HttpError::TooLarge`]. Default 4 MiB.
    pub max_response_bytes: u64,
    /// How many redirects are followed; one more fails with [`HttpError::Redirect`]
    /// (so 0 makes any redirect an error). Default 5.
    pub max_redirects: usize,
}

impl Default for HttpSettings {
    /// 30 s per request, 10 s to connect, 4 MiB of body, 5 redirects.
    fn default() -> Self {
        HttpSettings {
            timeout: Duration::from_secs(30),
            connect_timeout: Duration::from_secs(10),
            max_response_bytes: 4 * 1024 * 1024,
            max_redirects: 5,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn methods_parse() {
        assert_eq!("GET".parse::<Method>().ok(), Some(Method::Get));
        assert_eq!("post".parse::<Method>().ok(), Some(Method::Post));
        match "DELETE".parse::<Method>() {
            Err(e) => assert_eq!(
                e.to_string(),
                "invalid request: unsupported method \"DELETE\" (GET or POST)"
            ),
            Ok(m) => panic!("DELETE parsed as {m}"),
        }
    }

    #[test]
    fn defaults_are_documented_values() {
        let s = HttpSettings::default();
        assert_eq!(s.timeout, Duration::from_secs(30));
        assert_eq!(s.connect_timeout, Duration::from_secs(10));
        assert_eq!(s.max_response_bytes, 4 << 20);
        assert_eq!(s.max_redirects, 5);
        let p = HttpPolicy::default();
        assert!(p.allow_public() && p.grants().is_empty());
    }

    #[test]
    fn response_headers_are_found_case_insensitively() {
        let r = Response {
            status: 200,
            headers: vec![("content-type".into(), "text/plain".into())],
            body: vec![],
        };
        assert_eq!(r.header("Content-Type"), Some("text/plain"));
        assert_eq!(r.header("x-missing"), None);
    }
}
