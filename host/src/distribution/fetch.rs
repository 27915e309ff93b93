//! Talking to a registry with every response bounded by size and time.
//!
//! `oci-client` reads whole bodies (manifests, tokens, error bodies) into memory
//! without a limit, so a hostile registry could serve a manifest of gigabytes, and a
//! body trickled a byte at a time never ends; it has no hook to bound them. So this
//! module makes the few requests of the OCI distribution protocol toolcell needs itself,
//! with reqwest: a pull's manifest and component blob, a push's blob uploads and
//! manifest, each answering the registry's token challenge (RFC 6750 and the Docker
//! token protocol) when it asks. Each response is read chunk by chunk against a byte
//! limit and a deadline ([`Timeouts`]); a pulled blob is also held to its declared
//! size, both ways, and to its digest.

use std::time::Duration;

use oci_client::Reference;
use oci_client::secrets::RegistryAuth;
use reqwest::header::{ACCEPT, CONTENT_TYPE, LOCATION, WWW_AUTHENTICATE};
use reqwest::{Client, Method, RequestBuilder, Response, StatusCode, Url};
use tokio::time::Instant;

use crate::engine::cache::sha256_hex;

/// The largest manifest read: the OCI distribution spec's guidance for what a
/// registry should accept (a plugin's manifest is under 1 KiB).
pub const MAX_MANIFEST_BYTES: u64 = 4 << 20;

/// The largest token response or error body read.
pub const MAX_SMALL_BODY_BYTES: u64 = 64 << 10;

/// How long a manifest, a token or an error body may take to arrive whole.
pub const RESPONSE_TIMEOUT: Duration = Duration::from_secs(30);

/// How long a component's blob may take to arrive whole.
pub const TRANSFER_TIMEOUT: Duration = Duration::from_secs(600);

/// The content type of a blob upload.
const OCTET_STREAM: &str = "application/octet-stream";

/// At most this much of an error body is quoted.
const QUOTED_BYTES: usize = 300;

/// How long responses may take.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Timeouts {
    /// A manifest, a token or an error body, from the request to its last byte.
    pub response: Duration,
    /// A component's blob, from the request to its last byte.
    pub transfer: Duration,
}

impl Default for Timeouts {
    fn default() -> Self {
        Timeouts {
            response: RESPONSE_TIMEOUT,
            transfer: TRANSFER_TIMEOUT,
        }
    }
}

/// A client for one repository of one registry.
pub struct Fetcher {
    client: Client,
    /// `http://HOST` or `https://HOST`.
    base: String,
    repository: String,
    auth: RegistryAuth,
    /// The bearer token the registry's challenge gave, once asked for.
    token: Option<String>,
    timeouts: Timeouts,
}

impl Fetcher {
    /// A fetcher for `reference`'s repository over `http` or HTTPS.
    pub fn new(
        client: Client,
        reference: &Reference,
        http: bool,
        auth: RegistryAuth,
        timeouts: Timeouts,
    ) -> Fetcher {
        let scheme = if http { "http" } else { "https" };
        Fetcher {
            client,
            base: format!("{scheme}://{}", reference.resolve_registry()),
            repository: reference.repository().to_string(),
            auth,
            token: None,
            timeouts,
        }
    }

    /// The manifest `tag_or_digest` names, as bytes, at most [`MAX_MANIFEST_BYTES`].
    pub async fn manifest(&mut self, tag_or_digest: &str, accept: &str) -> Result<Vec<u8>, String> {
        let url = format!(
            "{}/v2/{}/manifests/{tag_or_digest}",
            self.base, self.repository
        );
        let response = self.get(&url, accept).await?;
        read(response, MAX_MANIFEST_BYTES, self.timeouts.response)
            .await
            .map_err(|error| error.of("the manifest", MAX_MANIFEST_BYTES))
    }

    /// The blob `digest`, checked against its declared `size` (which the caller has
    /// held to its own limit) and its digest as it arrives: more than `size` bytes,
    /// fewer, or other bytes are refused.
    pub async fn blob(&mut self, digest: &str, size: u64) -> Result<Vec<u8>, String> {
        let url = format!("{}/v2/{}/blobs/{digest}", self.base, self.repository);
        let response = self.get(&url, "*/*").await?;
        let what = "the component";
        let bytes =
            read(response, size, self.timeouts.transfer)
                .await
                .map_err(|error| match error {
                    ReadError::TooLarge => {
                        format!("{what} is larger than the {size} bytes its manifest declares")
                    }
                    error => error.of(what, size),
                })?;
        if (bytes.len() as u64) < size {
            return Err(format!(
                "{what} ended after {} bytes; its manifest declares {size}",
                bytes.len()
            ));
        }
        let actual = format!("sha256:{}", sha256_hex(&bytes));
        if actual != digest {
            return Err(format!(
                "{what}'s digest is {actual}, but the manifest says {digest}"
            ));
        }
        Ok(bytes)
    }

    /// Uploads the blob `bytes` as `digest` (a monolithic upload: POST, then PUT).
    pub async fn upload(&mut self, digest: &str, bytes: &[u8]) -> Result<(), String> {
        let start = format!("{}/v2/{}/blobs/uploads/", self.base, self.repository);
        let empty = Some((OCTET_STREAM, &[][..]));
        let response = self
            .request(Method::POST, &start, "*/*", empty, self.timeouts.response)
            .await?;
        let location = response
            .headers()
            .get(LOCATION)
            .and_then(|value| value.to_str().ok())
            .ok_or("the registry started an upload without a Location")?;
        let url = if location.starts_with('/') {
            format!("{}{location}", self.base)
        } else {
            location.to_string()
        };
        let separator = if url.contains('?') { '&' } else { '?' };
        let url = format!("{url}{separator}digest={digest}");
        let body = Some((OCTET_STREAM, bytes));
        self.request(Method::PUT, &url, "*/*", body, self.timeouts.transfer)
            .await?;
        Ok(())
    }

    /// Stores `manifest` (of `media_type`) under `tag`.
    pub async fn put_manifest(
        &mut self,
        tag: &str,
        media_type: &'static str,
        manifest: &[u8],
    ) -> Result<(), String> {
        let url = format!("{}/v2/{}/manifests/{tag}", self.base, self.repository);
        let body = Some((media_type, manifest));
        self.request(Method::PUT, &url, "*/*", body, self.timeouts.response)
            .await?;
        Ok(())
    }

    /// GETs `url`.
    async fn get(&mut self, url: &str, accept: &str) -> Result<Response, String> {
        self.request(Method::GET, url, accept, None, self.timeouts.response)
            .await
    }

    /// Sends a request, answering the registry's authentication challenge once; the
    /// response if it succeeded, else what the registry said. `timeout` bounds the
    /// wait for the response's head (the body, if any, is sent before it).
    async fn request(
        &mut self,
        method: Method,
        url: &str,
        accept: &str,
        body: Option<(&'static str, &[u8])>,
        timeout: Duration,
    ) -> Result<Response, String> {
        let response = self.send(&method, url, accept, body, timeout).await?;
        if response.status() != StatusCode::UNAUTHORIZED || self.token.is_some() {
            return self.success(response).await;
        }
        let challenge = response
            .headers()
            .get(WWW_AUTHENTICATE)
            .and_then(|value| value.to_str().ok())
            .map(str::to_string);
        match challenge.as_deref().and_then(bearer_challenge) {
            Some(challenge) => {
                self.token = Some(self.token_for(&challenge).await?);
                let response = self.send(&method, url, accept, body, timeout).await?;
                self.success(response).await
            }
            None => self.success(response).await,
        }
    }

    fn send(
        &self,
        method: &Method,
        url: &str,
        accept: &str,
        body: Option<(&'static str, &[u8])>,
        timeout: Duration,
    ) -> impl Future<Output = Result<Response, String>> + use<> {
        let mut request = self
            .client
            .request(method.clone(), url)
            .header(ACCEPT, accept);
        if let Some((content_type, bytes)) = body {
            request = request
                .header(CONTENT_TYPE, content_type)
                .body(bytes.to_vec());
        }
        request = match (&self.token, &self.auth) {
            (Some(token), _) => request.bearer_auth(token),
            (None, RegistryAuth::Basic(user, password)) => request.basic_auth(user, Some(password)),
            (None, RegistryAuth::Bearer(token)) => request.bearer_auth(token),
            (None, RegistryAuth::Anonymous) => request,
        };
        sent(request, timeout)
    }

    /// `response` if it succeeded; else what the registry said, its body bounded.
    async fn success(&self, response: Response) -> Result<Response, String> {
        let status = response.status();
        if status.is_success() {
            return Ok(response);
        }
        let body = read(response, MAX_SMALL_BODY_BYTES, self.timeouts.response)
            .await
            .unwrap_or_default();
        let text = String::from_utf8_lossy(&body[..body.len().min(QUOTED_BYTES)]).into_owned();
        let text = text.split_whitespace().collect::<Vec<_>>().join(" ");
        Err(if text.is_empty() {
            format!("the registry answered {status}")
        } else {
            format!("the registry answered {status}: {text}")
        })
    }

    /// A token from the challenge's realm, with the user's credentials if any.
    async fn token_for(&self, challenge: &Challenge) -> Result<String, String> {
        let mut params = vec![];
        if let Some(service) = &challenge.service {
            params.push(("service", service.as_str()));
        }
        let scope = challenge
            .scope
            .clone()
            .unwrap_or_else(|| format!("repository:{}:pull", self.repository));
        params.push(("scope", scope.as_str()));
        let url = Url::parse_with_params(&challenge.realm, &params).map_err(|error| {
            format!("the registry's token realm {:?}: {error}", challenge.realm)
        })?;
        let mut request = self.client.get(url);
        if let RegistryAuth::Basic(user, password) = &self.auth {
            request = request.basic_auth(user, Some(password));
        }
        let response = sent(request, self.timeouts.response).await?;
        let response = self.success(response).await?;
        let body = read(response, MAX_SMALL_BODY_BYTES, self.timeouts.response)
            .await
            .map_err(|error| error.of("the registry's token", MAX_SMALL_BODY_BYTES))?;
        #[derive(serde::Deserialize)]
        struct Token {
            token: Option<String>,
            access_token: Option<String>,
        }
        let token: Token = serde_json::from_slice(&body)
            .map_err(|error| format!("the registry's token is not JSON: {error}"))?;
        token
            .token
            .or(token.access_token)
            .ok_or_else(|| "the registry's token response holds no token".to_string())
    }
}

/// Sends `request`, waiting at most `timeout` for the response's head.
async fn sent(request: RequestBuilder, timeout: Duration) -> Result<Response, String> {
    match tokio::time::timeout(timeout, request.send()).await {
        Ok(Ok(response)) => Ok(response),
        Ok(Err(error)) => Err(describe(&error)),
        Err(_) => Err(format!(
            "the registry did not answer within {} s",
            timeout.as_secs()
        )),
    }
}

/// Why a body was not read whole.
#[derive(Debug)]
enum ReadError {
    /// It is longer than the limit.
    TooLarge,
    /// It did not arrive whole in time.
    TooSlow(Duration),
    /// The connection failed.
    Failed(String),
}

impl ReadError {
    /// The error, for the body `what` of at most `limit` bytes.
    fn of(self, what: &str, limit: u64) -> String {
        match self {
            ReadError::TooLarge => format!("{what} is larger than {limit} bytes"),
            ReadError::TooSlow(timeout) => {
                format!("{what} did not arrive whole within {} s", timeout.as_secs())
            }
            ReadError::Failed(why) => format!("reading {what} failed: {why}"),
        }
    }
}

/// Reads `response`'s body: at most `limit` bytes, whole within `timeout`.
async fn read(mut response: Response, limit: u64, timeout: Duration) -> Result<Vec<u8>, ReadError> {
    if response
        .content_length()
        .is_some_and(|length| length > limit)
    {
        return Err(ReadError::TooLarge);
    }
    let deadline = Instant::now() + timeout;
    let mut bytes = Vec::new();
    loop {
        let chunk = match tokio::time::timeout_at(deadline, response.chunk()).await {
            Ok(Ok(Some(chunk))) => chunk,
            Ok(Ok(None)) => return Ok(bytes),
            Ok(Err(error)) => return Err(ReadError::Failed(describe(&error))),
            Err(_) => return Err(ReadError::TooSlow(timeout)),
        };
        if bytes.len() as u64 + chunk.len() as u64 > limit {
            return Err(ReadError::TooLarge);
        }
        bytes.extend_from_slice(&chunk);
    }
}

/// A `Bearer` challenge's parameters.
#[derive(Debug, PartialEq, Eq)]
struct Challenge {
    realm: String,
    service: Option<String>,
    scope: Option<String>,
}

/// The parameters of `WWW-Authenticate: Bearer realm="...",service="...",scope="..."`.
fn bearer_challenge(header: &str) -> Option<Challenge> {
    let (scheme, params) = header.trim().split_once(' ')?;
    if !scheme.eq_ignore_ascii_case("bearer") {
        return None;
    }
    let (mut realm, mut service, mut scope) = (None, None, None);
    let mut rest = params.trim();
    while !rest.is_empty() {
        let (key, after) = rest.split_once('=')?;
        let (value, after) = match after.strip_prefix('"') {
            Some(quoted) => {
                let end = quoted.find('"')?;
                (&quoted[..end], &quoted[end + 1..])
            }
            None => after.split_once(',').unwrap_or((after, "")),
        };
        match key.trim().to_ascii_lowercase().as_str() {
            "realm" => realm = Some(value.to_string()),
            "service" => service = Some(value.to_string()),
            "scope" => scope = Some(value.to_string()),
            _ => {}
        }
        rest = after.trim_start_matches([',', ' ']);
    }
    Some(Challenge {
        realm: realm?,
        service,
        scope,
    })
}

/// An error and its causes, on one line.
pub(super) fn describe(error: &dyn std::error::Error) -> String {
    let mut text = error.to_string();
    let mut source = error.source();
    while let Some(cause) = source {
        let line = cause.to_string();
        if !text.contains(&line) {
            text.push_str(": ");
            text.push_str(&line);
        }
        source = cause.source();
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bearer_challenges_are_read() {
        assert_eq!(
            bearer_challenge(
                r#"Bearer realm="https://auth.example/token",service="registry.example",scope="repository:a/b:pull""#
            ),
            Some(Challenge {
                realm: "https://auth.example/token".to_string(),
                service: Some("registry.example".to_string()),
                scope: Some("repository:a/b:pull".to_string()),
            })
        );
        assert_eq!(
            bearer_challenge(r#"bearer realm="http://127.0.0.1:1/t""#).map(|c| c.realm),
            Some("http://127.0.0.1:1/t".to_string())
        );
        assert_eq!(bearer_challenge(r#"Basic realm="x""#), None);
        assert_eq!(bearer_challenge(r#"Bearer service="x""#), None);
        assert_eq!(bearer_challenge(r#"Bearer realm="unterminated"#), None);
    }
}
