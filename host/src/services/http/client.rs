//! [`PluginHttp`]: one plugin's HTTP client. It checks each request and each
//! redirect hop against the plugin's policy, sends it through the client of the
//! route the policy chose, follows redirects itself, and reads the body up to the
//! size limit, all under one deadline.
//!
//! Redirects are followed here rather than by reqwest: the policy decision depends on
//! the port, which reqwest's resolver never sees, so every hop must pick its client
//! (granted or public-only) anew, and reqwest can only follow a redirect within
//! one client.

use std::sync::Arc;

use bytes::Bytes;
use reqwest::header::{self, HeaderMap, HeaderName, HeaderValue};
use url::Url;

use super::client_error::{Stage, authority, format_duration, from_reqwest};
use super::policy::Route;
use super::resolve::{Admit, PolicyResolver};
use super::{HttpError, HttpPolicy, HttpSettings, Method, Request, Response, tls};

/// Sent unless the plugin gives its own `User-Agent`; some APIs reject requests
/// without one.
const USER_AGENT: &str = concat!("toolcell/", env!("CARGO_PKG_VERSION"));

/// Headers that frame or route the message. The host sets them from the URL and the
/// body; a plugin's own values could desynchronize the request (smuggling) or
/// address a different virtual host than the one the policy checked.
const HOST_MANAGED_HEADERS: &[&str] = &[
    "host",
    "content-length",
    "transfer-encoding",
    "connection",
    "keep-alive",
    "proxy-connection",
    "te",
    "trailer",
    "upgrade",
];

/// Headers that describe a body, dropped when a redirect turns a POST into a GET.
const BODY_HEADERS: &[HeaderName] = &[
    header::CONTENT_TYPE,
    header::CONTENT_ENCODING,
    header::CONTENT_LANGUAGE,
    header::CONTENT_LOCATION,
];

/// Credentials, dropped when a redirect leaves the origin they were meant for.
const CREDENTIAL_HEADERS: &[HeaderName] = &[
    header::AUTHORIZATION,
    header::PROXY_AUTHORIZATION,
    header::COOKIE,
];

/// A plugin's HTTP client: performs requests under that plugin's policy and limits.
///
/// Cheap to create (the TLS configuration and root certificates are shared by the
/// whole process) and meant to be kept for the plugin's life, so that connections
/// are reused. Requests must be awaited on a tokio runtime. Dropping a `fetch`
/// future closes its connection; that is how a request is cancelled.
#[derive(Debug, Clone)]
pub struct PluginHttp {
    policy: Arc<HttpPolicy>,
    settings: HttpSettings,
    /// For URLs whose host and port are granted: any address of a granted name.
    granted: reqwest::Client,
    /// For other URLs, when public hosts are allowed: public addresses only.
    public: reqwest::Client,
}

impl PluginHttp {
    /// A client for one plugin. Fails only if TLS cannot be set up (for example,
    /// no root certificates on the system).
    pub fn new(policy: HttpPolicy, settings: HttpSettings) -> Result<Self, HttpError> {
        let policy = Arc::new(policy);
        let tls = tls::client_config()?;
        let granted = build_client(&policy, Admit::Granted, &settings, tls.clone())?;
        let public = build_client(&policy, Admit::PublicOnly, &settings, tls)?;
        Ok(PluginHttp {
            policy,
            settings,
            granted,
            public,
        })
    }

    /// The policy this client enforces.
    pub fn policy(&self) -> &HttpPolicy {
        &self.policy
    }

    /// The limits this client applies.
    pub fn settings(&self) -> &HttpSettings {
        &self.settings
    }

    /// Performs `request`, following redirects, and returns the complete response
    /// (any status), or why there is none.
    pub async fn fetch(&self, request: Request) -> Result<Response, HttpError> {
        let url = parse_url(&request.url)?;
        let headers = header_map(&request.headers)?;
        let first = authority(&url);
        let hop = Hop {
            method: request.method,
            url,
            headers,
            body: request.body.map(Bytes::from),
        };
        let limit = self.settings.timeout;
        match tokio::time::timeout(limit, self.follow(hop)).await {
            Ok(result) => result,
            Err(_) => Err(HttpError::Timeout(format!(
                "no complete response from {first} within {} (the request timeout)",
                format_duration(limit)
            ))),
        }
    }

    /// Sends `hop` and the redirects it leads to, then reads the final body.
    async fn follow(&self, mut hop: Hop) -> Result<Response, HttpError> {
        let mut redirects = 0;
        loop {
            let response = match self.send(&hop).await {
                Ok(response) => response,
                Err(HttpError::Policy(why)) if redirects > 0 => {
                    let to = shorten(hop.url.as_str());
                    return Err(HttpError::Policy(format!("redirect to {to}: {why}")));
                }
                Err(e) => return Err(e),
            };
            let Some(next) = redirect_target(&response, &hop.url)? else {
                return self.read(response, &hop.url).await;
            };
            if redirects >= self.settings.max_redirects {
                return Err(HttpError::Redirect(format!(
                    "too many redirects (the limit is {}; the next one was to {})",
                    self.settings.max_redirects,
                    shorten(next.as_str())
                )));
            }
            redirects += 1;
            tracing::debug!(from = %authority(&hop.url), to = %authority(&next), "following redirect");
            hop.redirect(response.status().as_u16(), next);
        }
    }

    /// Checks one hop against the policy and sends it through its route's client.
    async fn send(&self, hop: &Hop) -> Result<reqwest::Response, HttpError> {
        let client = match self.policy.route(&hop.url)? {
            Route::Granted => &self.granted,
            Route::Public => &self.public,
        };
        let method = match hop.method {
            Method::Get => reqwest::Method::GET,
            Method::Post => reqwest::Method::POST,
        };
        let mut builder = client
            .request(method, hop.url.clone())
            .headers(hop.headers.clone());
        if let Some(body) = &hop.body {
            builder = builder.body(body.clone());
        }
        tracing::debug!(method = %hop.method, target = %authority(&hop.url), "HTTP request");
        builder
            .send()
            .await
            .map_err(|e| from_reqwest(&e, &hop.url, self.settings.connect_timeout, Stage::Send))
    }

    /// Reads the response body, refusing it as soon as it passes the size limit.
    async fn read(
        &self,
        mut response: reqwest::Response,
        url: &Url,
    ) -> Result<Response, HttpError> {
        let limit = self.settings.max_response_bytes;
        let announced = response.content_length();
        if announced.is_some_and(|len| len > limit) {
            return Err(HttpError::TooLarge { limit });
        }
        let status = response.status().as_u16();
        let headers = response
            .headers()
            .iter()
            .map(|(name, value)| {
                (
                    name.as_str().to_owned(),
                    String::from_utf8_lossy(value.as_bytes()).into_owned(),
                )
            })
            .collect();
        let capacity = usize::try_from(announced.unwrap_or(0).min(limit)).unwrap_or(0);
        let mut body = Vec::with_capacity(capacity);
        while let Some(chunk) = response
            .chunk()
            .await
            .map_err(|e| from_reqwest(&e, url, self.settings.connect_timeout, Stage::Body))?
        {
            let total = u64::try_from(body.len().saturating_add(chunk.len())).unwrap_or(u64::MAX);
            if total > limit {
                return Err(HttpError::TooLarge { limit });
            }
            body.extend_from_slice(&chunk);
        }
        tracing::debug!(status, bytes = body.len(), target = %authority(url), "HTTP response");
        Ok(Response {
            status,
            headers,
            body,
        })
    }
}

/// One request on the way through a redirect chain.
struct Hop {
    method: Method,
    url: Url,
    headers: HeaderMap,
    body: Option<Bytes>,
}

impl Hop {
    /// Turns this hop into the one a `status` redirect to `next` asks for, as
    /// browsers do: 303 (and 301/302 after a POST) continue as a GET without the
    /// body; 307/308 repeat the method and body. Credentials do not follow a
    /// redirect to another origin.
    fn redirect(&mut self, status: u16, next: Url) {
        let to_get = status == 303 || (matches!(status, 301 | 302) && self.method == Method::Post);
        if to_get {
            self.method = Method::Get;
            self.body = None;
            for name in BODY_HEADERS {
                self.headers.remove(name);
            }
        }
        if self.url.origin() != next.origin() {
            for name in CREDENTIAL_HEADERS {
                self.headers.remove(name);
            }
        }
        self.url = next;
    }
}

/// Creates the reqwest client for one route.
fn build_client(
    policy: &Arc<HttpPolicy>,
    admit: Admit,
    settings: &HttpSettings,
    tls: rustls::ClientConfig,
) -> Result<reqwest::Client, HttpError> {
    reqwest::Client::builder()
        .tls_backend_preconfigured(tls)
        .dns_resolver(PolicyResolver::new(policy.clone(), admit))
        // An environment proxy would connect on our behalf, past the address checks.
        .no_proxy()
        .redirect(reqwest::redirect::Policy::none())
        .referer(false)
        .connect_timeout(settings.connect_timeout)
        .http1_only()
        .user_agent(USER_AGENT)
        .build()
        .map_err(|e| HttpError::Other(format!("cannot create the HTTP client: {e}")))
}

/// Parses the plugin's URL; only absolute `http` and `https` URLs are accepted.
fn parse_url(text: &str) -> Result<Url, HttpError> {
    let url = Url::parse(text).map_err(|e| {
        HttpError::InvalidRequest(format!("{:?} is not a valid URL ({e})", shorten(text)))
    })?;
    check_scheme(&url).map_err(HttpError::InvalidRequest)?;
    Ok(url)
}

/// `Err` with the reason when `url` is not an `http` or `https` URL with a host.
fn check_scheme(url: &Url) -> Result<(), String> {
    if !matches!(url.scheme(), "http" | "https") {
        return Err(format!(
            "only http and https URLs are supported, not {}:",
            url.scheme()
        ));
    }
    if url.host().is_none() {
        return Err(format!("{:?} has no host", shorten(url.as_str())));
    }
    Ok(())
}

/// Where a response redirects to, if it is a redirect to follow. A 3xx without a
/// `Location` is returned to the plugin as it is.
fn redirect_target(response: &reqwest::Response, current: &Url) -> Result<Option<Url>, HttpError> {
    if !matches!(response.status().as_u16(), 301 | 302 | 303 | 307 | 308) {
        return Ok(None);
    }
    let Some(location) = response.headers().get(header::LOCATION) else {
        return Ok(None);
    };
    let from = authority(current);
    let text = std::str::from_utf8(location.as_bytes())
        .map_err(|_| HttpError::Redirect(format!("{from} sent a Location that is not UTF-8")))?;
    let next = current.join(text).map_err(|e| {
        HttpError::Redirect(format!(
            "{from} redirected to {:?}, not a valid URL ({e})",
            shorten(text)
        ))
    })?;
    check_scheme(&next).map_err(|why| {
        HttpError::Redirect(format!(
            "{from} redirected to {}: {why}",
            shorten(next.as_str())
        ))
    })?;
    Ok(Some(next))
}

/// Converts the plugin's headers, refusing invalid ones and those the host manages.
fn header_map(headers: &[(String, String)]) -> Result<HeaderMap, HttpError> {
    let mut map = HeaderMap::with_capacity(headers.len());
    for (name, value) in headers {
        let header = HeaderName::from_bytes(name.as_bytes()).map_err(|_| {
            HttpError::InvalidRequest(format!("{:?} is not a valid header name", shorten(name)))
        })?;
        if HOST_MANAGED_HEADERS.contains(&header.as_str()) {
            return Err(HttpError::InvalidRequest(format!(
                "header {:?} is set by the host and cannot be given",
                header.as_str()
            )));
        }
        let value = HeaderValue::from_bytes(value.as_bytes()).map_err(|_| {
            HttpError::InvalidRequest(format!(
                "the value of header {:?} contains a control character (such as CR or LF)",
                header.as_str()
            ))
        })?;
        map.append(header, value);
    }
    Ok(map)
}

/// At most 200 characters of untrusted text, for messages.
fn shorten(text: &str) -> String {
    const MAX: usize = 200;
    match text.char_indices().nth(MAX) {
        Some((end, _)) => format!("{}...", &text[..end]),
        None => text.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn invalid(result: Result<impl std::fmt::Debug, HttpError>) -> String {
        match result {
            Err(e @ HttpError::InvalidRequest(_)) => e.to_string(),
            other => panic!("expected an invalid request, got {other:?}"),
        }
    }

    #[test]
    fn only_http_and_https_urls() {
        assert!(parse_url("http://example.com/").is_ok());
        assert!(parse_url("HTTPS://Example.com:8443/x?y#z").is_ok());
        assert!(
            invalid(parse_url("ftp://example.com/"))
                .contains("only http and https URLs are supported, not ftp:")
        );
        assert!(
            invalid(parse_url("file:///etc/passwd"))
                .contains("only http and https URLs are supported, not file:")
        );
        assert!(invalid(parse_url("example.com/x")).contains("is not a valid URL"));
        assert!(invalid(parse_url("http://")).contains("is not a valid URL"));
        assert!(invalid(parse_url("")).contains("is not a valid URL"));
    }

    #[test]
    fn headers_are_checked_and_named() {
        let list = |pairs: &[(&str, &str)]| -> Vec<(String, String)> {
            pairs
                .iter()
                .map(|(n, v)| (n.to_string(), v.to_string()))
                .collect()
        };
        let map = header_map(&list(&[
            ("X-One", "1"),
            ("x-one", "2"),
            ("Accept", "text/plain"),
        ]))
        .expect("valid headers");
        assert_eq!(map.get_all("x-one").iter().count(), 2);
        assert!(
            invalid(header_map(&list(&[("bad name", "x")])))
                .contains("\"bad name\" is not a valid header name")
        );
        assert!(invalid(header_map(&list(&[("", "x")]))).contains("not a valid header name"));
        assert!(
            invalid(header_map(&list(&[("X-Evil", "a\r\nHost: b")])))
                .contains("header \"x-evil\" contains a control")
        );
        assert!(
            invalid(header_map(&list(&[("Content-Length", "5")])))
                .contains("\"content-length\" is set by the host")
        );
        assert!(
            invalid(header_map(&list(&[("Host", "internal")])))
                .contains("\"host\" is set by the host")
        );
        // Non-ASCII bytes are legal (obs-text) and sent as given.
        assert!(header_map(&list(&[("X-Name", "Zoë")])).is_ok());
    }

    #[test]
    fn redirects_change_method_and_drop_credentials_like_browsers() {
        let url = |s: &str| Url::parse(s).expect("test URL parses");
        let mut headers = HeaderMap::new();
        headers.insert(header::AUTHORIZATION, HeaderValue::from_static("Bearer t"));
        headers.insert(
            header::CONTENT_TYPE,
            HeaderValue::from_static("application/json"),
        );
        let post = |to: &str| Hop {
            method: Method::Post,
            url: url(to),
            headers: headers.clone(),
            body: Some(Bytes::from_static(b"{}")),
        };

        let mut hop = post("http://a.example/x");
        hop.redirect(307, url("http://a.example/y"));
        assert_eq!(hop.method, Method::Post);
        assert!(hop.body.is_some() && hop.headers.contains_key(header::CONTENT_TYPE));
        assert!(hop.headers.contains_key(header::AUTHORIZATION));

        let mut hop = post("http://a.example/x");
        hop.redirect(302, url("http://b.example/y"));
        assert_eq!(hop.method, Method::Get);
        assert!(hop.body.is_none() && !hop.headers.contains_key(header::CONTENT_TYPE));
        assert!(!hop.headers.contains_key(header::AUTHORIZATION));

        // Same host, different port: a different origin.
        let mut hop = post("http://a.example/x");
        hop.redirect(308, url("http://a.example:8080/x"));
        assert_eq!(hop.method, Method::Post);
        assert!(!hop.headers.contains_key(header::AUTHORIZATION));
    }

    #[test]
    fn long_text_is_shortened() {
        assert_eq!(shorten("abc"), "abc");
        let long = "é".repeat(300);
        assert_eq!(shorten(&long).chars().count(), 203);
    }

    #[test]
    fn clients_are_cheap_to_create() {
        let start = std::time::Instant::now();
        for _ in 0..100 {
            PluginHttp::new(HttpPolicy::default(), HttpSettings::default()).expect("client builds");
        }
        // Generous: only catches per-client certificate parsing or similar.
        assert!(
            start.elapsed() < std::time::Duration::from_secs(5),
            "{:?}",
            start.elapsed()
        );
    }
}
