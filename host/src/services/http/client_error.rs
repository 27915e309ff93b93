//! How the client's failures become [`HttpError`]s.
//!
//! The resolver reports refusals and lookup failures as [`HttpError`]s, which reach
//! us wrapped inside reqwest and hyper errors; [`from_reqwest`] walks the `source()`
//! chain to recover them, so the plugin sees "refused by policy: ..." rather than
//! "error sending request".

use std::error::Error as StdError;
use std::io;
use std::time::Duration;

use url::Url;

use super::HttpError;

/// Which part of the exchange a reqwest error came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Stage {
    /// Connecting, sending the request and reading the response head.
    Send,
    /// Reading the response body.
    Body,
}

/// Sorts a reqwest error for `url` into an [`HttpError`].
pub(crate) fn from_reqwest(
    err: &reqwest::Error,
    url: &Url,
    connect_timeout: Duration,
    stage: Stage,
) -> HttpError {
    if let Some(own) = find::<HttpError>(err) {
        return own.clone();
    }
    let target = authority(url);
    if let Some(tls) = find::<rustls::Error>(err) {
        return HttpError::Tls(format!("{target}: {tls}"));
    }
    let io_kind = find::<io::Error>(err).map(io::Error::kind);
    if err.is_connect() {
        if err.is_timeout() || io_kind == Some(io::ErrorKind::TimedOut) {
            return HttpError::Timeout(format!(
                "connecting to {target} took longer than {} (the connect timeout)",
                format_duration(connect_timeout)
            ));
        }
        let what = match io_kind {
            Some(io::ErrorKind::ConnectionRefused) => "refused the connection".to_owned(),
            Some(io::ErrorKind::HostUnreachable) => "is unreachable (no route to host)".to_owned(),
            Some(io::ErrorKind::NetworkUnreachable) => {
                "is unreachable (network unreachable)".to_owned()
            }
            Some(io::ErrorKind::ConnectionReset) => "reset the connection".to_owned(),
            _ => format!("could not be reached: {}", innermost(err)),
        };
        return HttpError::Connect(format!("{target} {what}"));
    }
    if err.is_builder() {
        return HttpError::InvalidRequest(innermost(err));
    }
    match stage {
        Stage::Send => {
            HttpError::Other(format!("exchange with {target} failed: {}", innermost(err)))
        }
        Stage::Body => HttpError::Other(format!(
            "reading the response body from {target} failed: {}",
            innermost(err)
        )),
    }
}

/// Finds the first error of type `T` in the chain, looking inside `io::Error`s too
/// (whose `source()` skips the error they wrap).
fn find<'a, T: StdError + 'static>(err: &'a (dyn StdError + 'static)) -> Option<&'a T> {
    let mut current: Option<&'a (dyn StdError + 'static)> = Some(err);
    while let Some(e) = current {
        if let Some(hit) = e.downcast_ref::<T>() {
            return Some(hit);
        }
        if let Some(inner) = e.downcast_ref::<io::Error>().and_then(io::Error::get_ref)
            && let Some(hit) = find::<T>(inner)
        {
            return Some(hit);
        }
        current = e.source();
    }
    None
}

/// The message of the deepest error in the chain: the most specific one.
fn innermost(err: &(dyn StdError + 'static)) -> String {
    let mut current = err;
    while let Some(next) = current.source() {
        current = next;
    }
    current.to_string()
}

/// `host:port` of a URL, for messages (IPv6 in brackets).
pub(crate) fn authority(url: &Url) -> String {
    match (url.host(), url.port_or_known_default()) {
        (Some(host), Some(port)) => format!("{host}:{port}"),
        (Some(host), None) => host.to_string(),
        _ => url.to_string(),
    }
}

/// `30 s` or `250 ms`.
pub(crate) fn format_duration(d: Duration) -> String {
    if d.subsec_millis() == 0 && d.as_secs() > 0 {
        format!("{} s", d.as_secs())
    } else {
        format!("{} ms", d.as_millis())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_read_well() {
        assert_eq!(format_duration(Duration::from_secs(30)), "30 s");
        assert_eq!(format_duration(Duration::from_millis(250)), "250 ms");
        assert_eq!(format_duration(Duration::from_millis(1500)), "1500 ms");
        assert_eq!(format_duration(Duration::ZERO), "0 ms");
    }

    #[test]
    fn own_errors_are_found_through_io_errors() {
        let own = HttpError::Policy("x".into());
        let wrapped = io::Error::other(own.clone());
        assert_eq!(find::<HttpError>(&wrapped), Some(&own));
        let tls = io::Error::new(io::ErrorKind::InvalidData, rustls::Error::DecryptError);
        assert!(find::<rustls::Error>(&tls).is_some());
        assert!(find::<HttpError>(&tls).is_none());
    }

    #[test]
    fn authorities_show_effective_ports() {
        let url = |s: &str| Url::parse(s).expect("test URL parses");
        assert_eq!(authority(&url("https://example.com/x")), "example.com:443");
        assert_eq!(authority(&url("http://[::1]:8080/")), "[::1]:8080");
    }
}
