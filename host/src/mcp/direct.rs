//! Tool calls answered on their own connection. rmcp's way for a POSTed request
//! crosses four tasks (connection, session worker, service loop, handler) and back,
//! and answers with an SSE stream; for a plain `tools/call` this module runs the
//! session's handler right where hyper read the request, and answers with the whole
//! event stream at once: one event, the JSON-RPC response. (The transport would allow
//! an `application/json` body too, but not every client reads one although it says it
//! accepts it; an event stream is what every client reads already.)
//!
//! A call is answered directly only when rmcp would treat it no differently:
//!
//! - its session began with `initialize` here and rmcp's session manager still holds
//!   it (a deleted or expired session goes to rmcp, which answers as it always does;
//!   like rmcp, a call before `notifications/initialized` is served);
//! - its client cannot be asked for approvals (no form elicitation): an elicitation
//!   request must ride the call's own stream, which only rmcp's way has;
//! - it has no progress token: progress rides the call's own stream too;
//! - it passes rmcp's checks as they are configured here: the `Host` header is one
//!   rmcp allows, there is no `Origin` (a browser's request; rmcp decides), the client
//!   accepts both media types (without parameters), and the protocol version, in the
//!   header if any, is one of the session protocols (before 2026-07-28), with none in
//!   the request's `_meta`.
//!
//! The handler is rmcp's own entry point ([`Service::handle_request`]), so the result
//! is the one rmcp would send. What the call sends besides (log messages) goes to the
//! session's standalone stream, as on rmcp's way. `notifications/cancelled` naming a
//! direct call cancels it ([`Sessions::cancel`]) and its response ends without a
//! message, as rmcp drops a cancelled request's answer; a connection that closes drops
//! the call, which cancels it in its sandbox. rmcp's session worker never sees a direct
//! call, so it is told about the session's activity at most every [`TOUCH_EVERY`]:
//! the session's idle timeout still runs from its last request.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock, PoisonError, Weak};
use std::time::{Duration, Instant};

use bytes::Bytes;
use http_body_util::Full;
use hyper::Response;
use hyper::header::{ACCEPT, CONTENT_TYPE, HOST, HeaderMap, HeaderValue, ORIGIN};
use hyper::http::request::Parts;
use hyper::http::uri::Authority;
use rmcp::RoleServer;
use rmcp::model::{
    ClientJsonRpcMessage, ClientNotification, ClientRequest, Extensions, GetExtensions, GetMeta,
    JsonRpcMessage, JsonRpcRequest, ProtocolVersion, RequestId, RequestMetaObject,
    ServerJsonRpcMessage,
};
use rmcp::service::{Peer, RequestContext, Service};
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use tokio_util::sync::CancellationToken;

use super::server::{SessionState, ToolServer};

/// How often at most rmcp's session worker is told that a session answered directly
/// is active.
pub const TOUCH_EVERY: Duration = Duration::from_secs(1);

/// The header that names a session.
const SESSION_HEADER: &str = "mcp-session-id";

/// The header that names the protocol version.
const VERSION_HEADER: &str = "mcp-protocol-version";

/// A request-wise stream id rmcp's session worker never gives out (it counts up from
/// zero): closing it changes nothing, and it counts as the session's activity.
const NO_STREAM: u64 = u64::MAX;

/// The sessions whose calls may be answered directly, by session id.
pub struct Sessions {
    by_id: Mutex<HashMap<String, Enrolled>>,
    /// The `Host` values rmcp accepts (empty: any).
    allowed_hosts: Vec<String>,
}

struct Enrolled {
    state: Weak<SessionState>,
    /// When rmcp's session worker was last told of the session's activity.
    touched: Instant,
}

/// Travels in an `initialize` request to the session's handler, which enrols its
/// state here ([`enrol`]); the response then names the session ([`Sessions::enrolled`]).
#[derive(Clone, Default)]
pub struct Enrolment(Arc<OnceLock<Weak<SessionState>>>);

/// The session that answers a call directly.
pub struct Handler {
    state: Arc<SessionState>,
    peer: Peer<RoleServer>,
}

/// A `tools/call` to answer directly.
pub struct DirectCall {
    handler: Handler,
    request: JsonRpcRequest<ClientRequest>,
    parts: Parts,
}

/// Called by the handler of a new session: enrols it if its `initialize` came with
/// an [`Enrolment`] (streamable HTTP); whether it did.
pub fn enrol(context: &RequestContext<RoleServer>, server: &ToolServer) -> bool {
    let Some(enrolment) = context
        .extensions
        .get::<Parts>()
        .and_then(|parts| parts.extensions.get::<Enrolment>())
    else {
        return false;
    };
    let _ = enrolment.0.set(server.downgrade());
    true
}

impl Sessions {
    /// No sessions yet; rmcp accepts the `Host` values `allowed_hosts` (empty: any).
    pub fn new(allowed_hosts: Vec<String>) -> Sessions {
        Sessions {
            by_id: Mutex::new(HashMap::new()),
            allowed_hosts,
        }
    }

    /// Records the session `response` (to an `initialize` that carried `enrolment`)
    /// opened, and forgets the sessions that have ended.
    pub fn enrolled<B>(&self, enrolment: &Enrolment, response: &Response<B>) {
        let Some(state) = enrolment.0.get() else {
            return;
        };
        let Some(id) = response
            .headers()
            .get(SESSION_HEADER)
            .and_then(|value| value.to_str().ok())
        else {
            return;
        };
        let mut sessions = self.by_id.lock().unwrap_or_else(PoisonError::into_inner);
        sessions.retain(|_, enrolled| enrolled.state.strong_count() > 0);
        sessions.insert(
            id.to_string(),
            Enrolled {
                state: state.clone(),
                touched: Instant::now(),
            },
        );
    }

    /// Cancels the direct call `message` cancels, if it is one.
    pub fn cancel(&self, parts: &Parts, message: &ClientJsonRpcMessage) {
        let ClientJsonRpcMessage::Notification(notification) = message else {
            return;
        };
        let ClientNotification::CancelledNotification(cancelled) = &notification.notification
        else {
            return;
        };
        if let Some(id) = &cancelled.params.request_id
            && let Some(state) = self.state(&parts.headers)
        {
            state.cancel_direct(id);
        }
    }

    /// Who answers `request` directly, if it may be answered so (see the module's
    /// doc); none: rmcp answers it.
    pub async fn handler(
        &self,
        manager: &LocalSessionManager,
        parts: &Parts,
        request: &JsonRpcRequest<ClientRequest>,
    ) -> Option<Handler> {
        let meta = request.request.get_meta();
        if !matches!(request.request, ClientRequest::CallToolRequest(_))
            || meta.get_progress_token().is_some()
            || meta.protocol_version().is_some()
            || !self.passes_checks(&parts.headers)
        {
            return None;
        }
        let id = session_id(&parts.headers)?;
        let (state, touch) = {
            let mut sessions = self.by_id.lock().unwrap_or_else(PoisonError::into_inner);
            let enrolled = sessions.get_mut(id)?;
            let state = enrolled.state.upgrade()?;
            let touch = enrolled.touched.elapsed() >= TOUCH_EVERY;
            if touch {
                enrolled.touched = Instant::now();
            }
            (state, touch)
        };
        let peer = state.direct_peer()?.clone();
        if touch {
            let handle = manager.sessions.read().await.get(id).cloned()?;
            handle.close_request_wise_channel(NO_STREAM).await.ok()?;
        } else if !manager.sessions.read().await.contains_key(id) {
            return None;
        }
        Some(Handler { state, peer })
    }

    /// The state of the enrolled session `headers` name, while it lasts.
    fn state(&self, headers: &HeaderMap) -> Option<Arc<SessionState>> {
        let id = session_id(headers)?;
        let sessions = self.by_id.lock().unwrap_or_else(PoisonError::into_inner);
        sessions.get(id)?.state.upgrade()
    }

    /// Whether rmcp, as configured here, would pass a request with `headers` to its
    /// session without a different answer.
    fn passes_checks(&self, headers: &HeaderMap) -> bool {
        !headers.contains_key(ORIGIN)
            && self.host_allowed(headers)
            && accepts_json_and_sse(headers)
            && headers.get(VERSION_HEADER).is_none_or(|value| {
                value.to_str().is_ok_and(|version| {
                    version < ProtocolVersion::V_2026_07_28.as_str()
                        && ProtocolVersion::KNOWN_VERSIONS
                            .iter()
                            .any(|known| known.as_str() == version)
                })
            })
    }

    fn host_allowed(&self, headers: &HeaderMap) -> bool {
        if self.allowed_hosts.is_empty() {
            return true;
        }
        let Some(host) = headers
            .get(HOST)
            .and_then(|value| value.to_str().ok())
            .and_then(|value| Authority::try_from(value).ok())
        else {
            return false;
        };
        let name = bare_host(host.host());
        self.allowed_hosts.iter().any(|allowed| {
            // As rmcp reads an entry: an authority, else (a bare IPv6 address) a host.
            let (allowed, port) = match Authority::try_from(allowed.trim()) {
                Ok(authority) => (bare_host(authority.host()), authority.port_u16()),
                Err(_) => (bare_host(allowed.trim()), None),
            };
            allowed == name && port.is_none_or(|port| host.port_u16() == Some(port))
        })
    }
}

impl Handler {
    /// The call `request`, which came with `parts`.
    pub fn call(self, parts: Parts, request: JsonRpcRequest<ClientRequest>) -> DirectCall {
        DirectCall {
            handler: self,
            request,
            parts,
        }
    }
}

impl DirectCall {
    /// Runs the call in its session's handler; the response is an event stream of
    /// one event, its JSON-RPC answer, or, when the client cancelled it, of none.
    pub async fn answer(self) -> Response<Full<Bytes>> {
        let DirectCall {
            handler: Handler { state, peer },
            mut request,
            parts,
        } = self;
        let id = request.id.clone();
        let cancel = CancellationToken::new();
        let _cancellable = Cancellable::new(&state, &request.id, &cancel);
        let mut meta = RequestMetaObject::default();
        std::mem::swap(&mut meta, request.request.get_meta_mut());
        let mut extensions = Extensions::new();
        std::mem::swap(&mut extensions, request.request.extensions_mut());
        extensions.insert(parts);
        let mut context = RequestContext::new(id.clone(), peer);
        context.ct = cancel.clone();
        context.meta = meta;
        context.extensions = extensions;
        let server = ToolServer::of(state.clone());
        let result = server.handle_request(request.request, context).await;
        if cancel.is_cancelled() {
            return event_stream(Bytes::new());
        }
        let message: ServerJsonRpcMessage = match result {
            Ok(result) => JsonRpcMessage::response(result, id),
            Err(error) => JsonRpcMessage::error(error, Some(id)),
        };
        let mut event = b"data: ".to_vec();
        if let Err(error) = serde_json::to_writer(&mut event, &message) {
            tracing::error!("cannot serialize a tool call's answer: {error}");
            let mut response = Response::new(Full::new(Bytes::new()));
            *response.status_mut() = hyper::StatusCode::INTERNAL_SERVER_ERROR;
            return response;
        }
        event.extend_from_slice(b"\n\n");
        event_stream(Bytes::from(event))
    }
}

/// A direct call, cancellable by its request id while it runs.
struct Cancellable<'a> {
    state: &'a SessionState,
    id: &'a RequestId,
}

impl<'a> Cancellable<'a> {
    fn new(state: &'a SessionState, id: &'a RequestId, cancel: &CancellationToken) -> Self {
        state.track_direct(id.clone(), cancel.clone());
        Cancellable { state, id }
    }
}

impl Drop for Cancellable<'_> {
    fn drop(&mut self) {
        self.state.untrack_direct(self.id);
    }
}

fn session_id(headers: &HeaderMap) -> Option<&str> {
    headers
        .get(SESSION_HEADER)
        .and_then(|value| value.to_str().ok())
}

/// A host name as rmcp compares it: without IPv6 brackets, in lower case.
fn bare_host(host: &str) -> String {
    host.trim_matches(['[', ']']).to_ascii_lowercase()
}

/// Whether the `Accept` header lists both media types a POST's answer may have. An
/// entry with parameters (a quality of zero refuses a type) leaves it to rmcp.
fn accepts_json_and_sse(headers: &HeaderMap) -> bool {
    let (mut json, mut sse) = (false, false);
    for value in headers.get_all(ACCEPT) {
        let Ok(value) = value.to_str() else {
            return false;
        };
        for entry in value.split(',').map(str::trim) {
            if entry.contains([';', '"']) {
                return false;
            }
            json |= entry.eq_ignore_ascii_case("application/json");
            sse |= entry.eq_ignore_ascii_case("text/event-stream");
        }
    }
    json && sse
}

/// A response whose body is the whole event stream `events`.
fn event_stream(events: Bytes) -> Response<Full<Bytes>> {
    let mut response = Response::new(Full::new(events));
    response
        .headers_mut()
        .insert(CONTENT_TYPE, HeaderValue::from_static("text/event-stream"));
    response
}

#[cfg(test)]
mod tests {
    use super::*;

    fn headers(pairs: &[(&'static str, &'static str)]) -> HeaderMap {
        let mut headers = HeaderMap::new();
        for (name, value) in pairs {
            headers.append(*name, HeaderValue::from_static(value));
        }
        headers
    }

    const PLAIN: [(&str, &str); 2] = [
        ("host", "127.0.0.1:8765"),
        ("accept", "application/json, text/event-stream"),
    ];

    #[test]
    fn only_requests_rmcp_would_pass_as_they_are_are_answered_directly() {
        let loopback = Sessions::new(vec!["localhost".into(), "127.0.0.1".into(), "::1".into()]);
        assert!(loopback.passes_checks(&headers(&PLAIN)));
        for host in ["LOCALHOST", "localhost:1", "[::1]:8765"] {
            let request = headers(&[("host", host), PLAIN[1]]);
            assert!(loopback.passes_checks(&request), "{host}");
        }
        for version in ["2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25"] {
            let request = headers(&[PLAIN[0], PLAIN[1], ("mcp-protocol-version", version)]);
            assert!(loopback.passes_checks(&request), "{version}");
        }
        let refused = [
            // DNS rebinding: rmcp answers 403.
            headers(&[("host", "attacker.example"), PLAIN[1]]),
            headers(&[PLAIN[1]]),
            // A browser's request: rmcp decides about its Origin.
            headers(&[PLAIN[0], PLAIN[1], ("origin", "http://localhost")]),
            // rmcp answers 406, or weighs the types.
            headers(&[PLAIN[0], ("accept", "application/json")]),
            headers(&[
                PLAIN[0],
                ("accept", "application/json, text/event-stream;q=0"),
            ]),
            // Not a session protocol, or not one rmcp knows.
            headers(&[PLAIN[0], PLAIN[1], ("mcp-protocol-version", "2026-07-28")]),
            headers(&[PLAIN[0], PLAIN[1], ("mcp-protocol-version", "2025-01-01")]),
        ];
        for request in refused {
            assert!(!loopback.passes_checks(&request), "{request:?}");
        }
        let any_host = Sessions::new(Vec::new());
        assert!(any_host.passes_checks(&headers(&[("host", "tools.example"), PLAIN[1]])));
    }

    #[test]
    fn an_allowed_host_with_a_port_allows_that_port_only() {
        let sessions = Sessions::new(vec!["tools.example:8080".into()]);
        assert!(sessions.host_allowed(&headers(&[("host", "tools.example:8080")])));
        assert!(!sessions.host_allowed(&headers(&[("host", "tools.example:8081")])));
        assert!(!sessions.host_allowed(&headers(&[("host", "tools.example")])));
    }
}
