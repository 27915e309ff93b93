//! MCP over streamable HTTP: the SDK's `StreamableHttpService` at `/mcp`, served by
//! hyper on one listening socket, beside the probes `/healthz` and `/readyz`, with what
//! the SDK does not do in front of it:
//!
//! - it runs on a thread of its own ([`HttpServer::spawn`]), so that a request's way
//!   through the SDK's tasks never wakes another thread;
//! - accepted connections set `TCP_NODELAY`, and each response's body goes out in as
//!   few writes as it is ready in: otherwise Nagle's algorithm holds the end of a
//!   response until the client's delayed acknowledgement (40 ms) for clients that do
//!   not tune their own sockets;
//! - a POSTed JSON-RPC message passes `jsonrpc::check` first: one that fails is a 400
//!   (413 when too large) whose body is the JSON-RPC error saying why;
//! - a plain `tools/call` in a session is answered without the SDK's session routing,
//!   its answer sent whole as one event (`direct`);
//! - at most [`HttpOptions::max_sessions`] sessions live at once: another `initialize`
//!   is a 503 until one ends (DELETE, or [`SESSION_IDLE`] without a request);
//! - with a bearer token, a request to `/mcp` without it is a 401 (the token is
//!   compared in constant time; the probes need none);
//! - a POSTed message's body that has not arrived within [`REQUEST_BODY_TIMEOUT`] is
//!   a 408; what idle, slow or numerous connections may hold is bounded below all of
//!   this (`connections`).
//!
//! The address is loopback unless the user said otherwise (`--allow-remote`, which
//! needs a token). On loopback the SDK also checks the `Host` header (against DNS
//! rebinding from web pages).

use std::convert::Infallible;
use std::future::Future;
use std::io;
use std::pin::Pin;
use std::sync::{Arc, OnceLock};
use std::task::{Context, Poll};
use std::time::Duration;

use bytes::{Bytes, BytesMut};
use http_body_util::{BodyExt, Full, LengthLimitError, Limited};
use hyper::body::{Frame, Incoming, SizeHint};
use hyper::header::{AUTHORIZATION, CONTENT_TYPE, HeaderValue, RETRY_AFTER, WWW_AUTHENTICATE};
use hyper::{Method, Request, Response, StatusCode};
use hyper_util::rt::{TokioExecutor, TokioIo};
use hyper_util::server::conn::auto;
use hyper_util::server::graceful::GracefulShutdown;
use rmcp::model::{ClientJsonRpcMessage, ClientRequest, ErrorCode, RequestId};
use rmcp::transport::streamable_http_server::session::local::{LocalSessionManager, SessionConfig};
use rmcp::transport::{StreamableHttpServerConfig, StreamableHttpService};
use subtle::ConstantTimeEq;
use tokio::net::TcpListener;
use tokio_util::sync::CancellationToken;

use super::ServerState;
use super::connections::{ConnectionLimits, Listener};
use super::direct::{DirectCall, Enrolment, Sessions};
use super::jsonrpc::{self, MAX_MESSAGE_BYTES, Rejection};
use super::lifecycle::{Lifecycle, RequestGuard};
use super::server::ToolServer;

/// The path the MCP endpoint is served at.
pub const ENDPOINT: &str = "/mcp";

/// The liveness probe: 200 whenever the process answers.
pub const HEALTH_ENDPOINT: &str = "/healthz";

/// The readiness probe: 200 when the plugins are loaded and no reload is being
/// applied and the server is not shutting down, else 503 and why.
pub const READY_ENDPOINT: &str = "/readyz";

/// How long a session may go without a request before it ends.
pub const SESSION_IDLE: Duration = SessionConfig::DEFAULT_KEEP_ALIVE;

/// How many sessions may live at once unless the user says otherwise.
pub const DEFAULT_MAX_SESSIONS: u32 = 256;

/// How long a POST's response waits for its body before its head is sent (see
/// [`joined`]).
const JOIN_WAIT: Duration = Duration::from_millis(5);

/// How long a POSTed message's body may take to arrive once its head has.
pub const REQUEST_BODY_TIMEOUT: Duration = Duration::from_secs(30);

/// How long open connections get to finish once the sessions are closed.
const FLUSH_GRACE: Duration = Duration::from_secs(2);

/// The header that names a session.
const SESSION_HEADER: &str = "mcp-session-id";

type Body = http_body_util::combinators::BoxBody<Bytes, Infallible>;
type Service = StreamableHttpService<ToolServer, LocalSessionManager>;

/// How the HTTP server admits clients.
#[derive(Clone)]
pub struct HttpOptions {
    /// Serve any `Host` header (for a server reachable under other names than
    /// loopback): the DNS-rebinding check is off.
    pub any_host: bool,
    /// How many sessions may live at once.
    pub max_sessions: u32,
    /// The bearer token every request to the MCP endpoint must carry, if any.
    pub token: Option<Arc<str>>,
    /// The caps on open connections.
    pub connections: ConnectionLimits,
}

/// The MCP endpoint, once the plugins are loaded: the SDK's service and its sessions,
/// and the sessions whose calls may be answered directly.
struct Mcp {
    service: Service,
    sessions: Arc<LocalSessionManager>,
    direct: Sessions,
}

/// A POSTed message that passed the checks: who answers it.
enum Admitted {
    /// The SDK, with the request (its body read); an `initialize` that opens a session
    /// carries an enrolment for `direct`.
    Sdk(Box<Request<Full<Bytes>>>, Option<Enrolment>),
    /// The session's handler, directly.
    Direct(Box<DirectCall>),
}

/// One HTTP server through its life: probes from the start, MCP once the plugins are
/// loaded ([`HttpServer::open`]), no new connections once draining
/// ([`HttpServer::stop_accepting`]), and an end once the sessions are closed
/// ([`HttpServer::close`]). Clones share the server.
#[derive(Clone)]
pub struct HttpServer {
    lifecycle: Lifecycle,
    mcp: Arc<OnceLock<Mcp>>,
    options: Arc<HttpOptions>,
    stop_accepting: CancellationToken,
    closed: CancellationToken,
}

impl HttpServer {
    /// A server whose readiness `lifecycle` tracks, admitting clients as `options` say.
    pub fn new(lifecycle: Lifecycle, options: HttpOptions) -> HttpServer {
        HttpServer {
            lifecycle,
            mcp: Arc::new(OnceLock::new()),
            options: Arc::new(options),
            stop_accepting: CancellationToken::new(),
            closed: CancellationToken::new(),
        }
    }

    /// Serves MCP over `shared` from now on, and marks the plugins loaded.
    pub fn open(&self, shared: ServerState) {
        let mut config = StreamableHttpServerConfig::default()
            .with_cancellation_token(shared.shutdown.child_token())
            // `admit` reads the body first, with the same limit.
            .with_max_request_body_bytes(MAX_MESSAGE_BYTES);
        if self.options.any_host {
            config = config.disable_allowed_hosts();
        }
        let sessions = Arc::new(LocalSessionManager::default());
        let direct = Sessions::new(config.allowed_hosts.clone());
        let service = StreamableHttpService::new(
            move || Ok(ToolServer::new(shared.clone())),
            sessions.clone(),
            config,
        );
        // Opened once; a second call changes nothing.
        let _ = self.mcp.set(Mcp {
            service,
            sessions,
            direct,
        });
        self.lifecycle.loaded();
    }

    /// Closes the listening socket; open connections finish the requests they carry
    /// and close.
    pub fn stop_accepting(&self) {
        self.stop_accepting.cancel();
    }

    /// The sessions are closed (`ServerState::shut_down`): connections still open get
    /// [`FLUSH_GRACE`] to finish, then [`HttpServer::serve`] returns.
    pub fn close(&self) {
        self.stop_accepting.cancel();
        self.closed.cancel();
    }

    /// Serves on `listener` until closed, on a thread of its own with a single-threaded
    /// tokio runtime; the future returned ends when the server has ended.
    ///
    /// A request's way through the SDK crosses four tasks (connection, session worker,
    /// service loop, handler) and back. On one thread each hop is a queue push; on a
    /// runtime with several workers an idle worker is woken to steal each hop, and the
    /// round trip pays for the wake-ups and the cache misses of moving between threads.
    /// Plugins still run in parallel: a call's first step runs here (a trivial call ends
    /// in it), and a step that yields moves to the plugin's runtime.
    pub fn spawn(self, listener: std::net::TcpListener) -> io::Result<impl Future<Output = ()>> {
        listener.set_nonblocking(true)?;
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()?;
        let (ended, end) = tokio::sync::oneshot::channel::<()>();
        std::thread::Builder::new()
            .name("toolcell-http".to_string())
            .spawn(move || {
                runtime.block_on(async move {
                    match TcpListener::from_std(listener) {
                        Ok(listener) => self.serve(listener).await,
                        Err(error) => tracing::error!("cannot serve MCP over HTTP: {error}"),
                    }
                });
                // What is still open (sessions, connections past the grace) ends here.
                drop(runtime);
                let _ = ended.send(());
            })?;
        Ok(async move {
            let _ = end.await;
        })
    }

    async fn serve(self, listener: TcpListener) {
        let connections = GracefulShutdown::new();
        let mut listener = Listener::new(listener, "MCP", self.options.connections);
        loop {
            let (stream, connection) = tokio::select! {
                () = self.stop_accepting.cancelled() => break,
                accepted = listener.accept() => accepted,
            };
            if let Err(error) = stream.get_ref().set_nodelay(true) {
                tracing::debug!("cannot set TCP_NODELAY on an MCP connection: {error}");
            }
            let server = self.clone();
            let service = connection.service(move |request: Request<Incoming>| {
                let server = server.clone();
                async move { server.route(request).await }
            });
            let serving = auto::Builder::new(TokioExecutor::new())
                .serve_connection_with_upgrades(TokioIo::new(stream), service)
                .into_owned();
            tokio::spawn(connection.serve(connections.watch(serving)));
        }
        drop(listener);
        let finished = connections.shutdown();
        let deadline = async {
            self.closed.cancelled().await;
            tokio::time::sleep(FLUSH_GRACE).await;
        };
        tokio::select! {
            () = finished => {}
            () = deadline => tracing::debug!("some MCP connections did not close in time"),
        }
    }

    async fn route(&self, request: Request<Incoming>) -> Response<Body> {
        match request.uri().path() {
            HEALTH_ENDPOINT => text(StatusCode::OK, "ok\n".to_string()),
            READY_ENDPOINT => match self.lifecycle.readiness() {
                Ok(()) => text(StatusCode::OK, "ready\n".to_string()),
                Err(why) => text(
                    StatusCode::SERVICE_UNAVAILABLE,
                    format!("not ready: {why}\n"),
                ),
            },
            ENDPOINT => match self.mcp.get() {
                Some(mcp) => self.serve_mcp(mcp, request).await,
                None => {
                    let mut response = text(
                        StatusCode::SERVICE_UNAVAILABLE,
                        "not ready: loading plugins\n".to_string(),
                    );
                    response
                        .headers_mut()
                        .insert(RETRY_AFTER, HeaderValue::from_static("1"));
                    response
                }
            },
            _ => not_found(),
        }
    }

    async fn serve_mcp(&self, mcp: &Mcp, request: Request<Incoming>) -> Response<Body> {
        if let Some(token) = &self.options.token
            && !authorized(&request, token)
        {
            let mut response = text(
                StatusCode::UNAUTHORIZED,
                "unauthorized: this server needs `Authorization: Bearer TOKEN`\n".to_string(),
            );
            response
                .headers_mut()
                .insert(WWW_AUTHENTICATE, HeaderValue::from_static("Bearer"));
            return response;
        }
        // A drain waits for a POST's response (a tool call's result) to be sent; a GET
        // is a stream of notifications that never ends by itself.
        if request.method() == Method::GET {
            return mcp.service.handle(request).await.map(coalesced);
        }
        let in_flight = self.lifecycle.request();
        let response = if request.method() == Method::POST && is_json(&request) {
            match self.admit(mcp, request).await {
                Ok(Admitted::Sdk(request, enrolment)) => {
                    let response = mcp.service.handle(*request).await;
                    if let Some(enrolment) = enrolment {
                        mcp.direct.enrolled(&enrolment, &response);
                    }
                    joined(response).await
                }
                Ok(Admitted::Direct(call)) => call.answer().await.map(BodyExt::boxed),
                Err(refusal) => return refusal,
            }
        } else {
            joined(mcp.service.handle(request).await).await
        };
        response.map(|body| {
            Tracked {
                body,
                _in_flight: in_flight,
            }
            .boxed()
        })
    }

    /// Reads a POSTed message and checks it; says who answers it, or gives the
    /// response refusing it.
    async fn admit(
        &self,
        mcp: &Mcp,
        request: Request<Incoming>,
    ) -> Result<Admitted, Response<Body>> {
        let (mut parts, body) = request.into_parts();
        let read = tokio::time::timeout(
            REQUEST_BODY_TIMEOUT,
            Limited::new(body, MAX_MESSAGE_BYTES).collect(),
        );
        let Ok(read) = read.await else {
            return Err(text(
                StatusCode::REQUEST_TIMEOUT,
                format!(
                    "the request body did not arrive whole within {} s\n",
                    REQUEST_BODY_TIMEOUT.as_secs()
                ),
            ));
        };
        let bytes = match read {
            Ok(collected) => collected.to_bytes(),
            Err(error) if error.is::<LengthLimitError>() => {
                return Err(refusal(
                    StatusCode::PAYLOAD_TOO_LARGE,
                    &Rejection::too_large(None),
                ));
            }
            Err(error) => {
                return Err(text(
                    StatusCode::BAD_REQUEST,
                    format!("cannot read the request body: {error}\n"),
                ));
            }
        };
        if speaks_2026_07_28(&parts.headers)
            && let Some(rejection) = jsonrpc::removed_method(&bytes)
        {
            return Err(refusal(StatusCode::NOT_FOUND, &rejection));
        }
        let message = jsonrpc::check(&bytes)
            .map_err(|rejection| refusal(StatusCode::BAD_REQUEST, &rejection))?;
        let mut enrolment = None;
        if let ClientJsonRpcMessage::Request(request) = &message
            && matches!(request.request, ClientRequest::InitializeRequest(_))
            && !parts.headers.contains_key(SESSION_HEADER)
        {
            self.room_for_a_session(mcp, &request.id).await?;
            let opening = Enrolment::default();
            parts.extensions.insert(opening.clone());
            enrolment = Some(opening);
        }
        mcp.direct.cancel(&parts, &message);
        if let ClientJsonRpcMessage::Request(request) = message
            && let Some(handler) = mcp.direct.handler(&mcp.sessions, &parts, &request).await
        {
            return Ok(Admitted::Direct(Box::new(handler.call(parts, request))));
        }
        Ok(Admitted::Sdk(
            Box::new(Request::from_parts(parts, Full::new(bytes))),
            enrolment,
        ))
    }

    /// Refuses a new session when [`HttpOptions::max_sessions`] live.
    async fn room_for_a_session(&self, mcp: &Mcp, id: &RequestId) -> Result<(), Response<Body>> {
        let live = mcp.sessions.sessions.read().await.len();
        if live < self.options.max_sessions as usize {
            return Ok(());
        }
        let rejection = Rejection {
            id: Some(id.clone()),
            code: ErrorCode::INTERNAL_ERROR,
            message: format!(
                "too many sessions: {live} are open and the server allows {}; end one (DELETE {ENDPOINT} with its {SESSION_HEADER}) or wait until one has been idle for {} s",
                self.options.max_sessions,
                SESSION_IDLE.as_secs()
            ),
            silent: false,
        };
        Err(refusal(StatusCode::SERVICE_UNAVAILABLE, &rejection))
    }
}

/// Whether `request` carries the bearer `token` (compared in constant time). The
/// scheme is matched without case (RFC 9110, section 11.1): `bearer TOKEN` is as good.
fn authorized<B>(request: &Request<B>, token: &str) -> bool {
    let Some((scheme, given)) = request
        .headers()
        .get(AUTHORIZATION)
        .and_then(|value| value.to_str().ok())
        .and_then(|value| value.split_once(' '))
    else {
        return false;
    };
    scheme.eq_ignore_ascii_case("Bearer") && bool::from(given.as_bytes().ct_eq(token.as_bytes()))
}

/// Whether the request says it is of protocol 2026-07-28 or later (its
/// `MCP-Protocol-Version` header; versions are dates, so they compare as text).
fn speaks_2026_07_28(headers: &hyper::HeaderMap) -> bool {
    headers
        .get("mcp-protocol-version")
        .and_then(|value| value.to_str().ok())
        .is_some_and(|version| version >= "2026-07-28")
}

fn is_json<B>(request: &Request<B>) -> bool {
    request
        .headers()
        .get(CONTENT_TYPE)
        .and_then(|value| value.to_str().ok())
        .and_then(|value| value.split(';').next())
        .is_some_and(|essence| essence.trim().eq_ignore_ascii_case("application/json"))
}

/// The response refusing a message: `rejection`'s JSON-RPC error as the body.
fn refusal(status: StatusCode, rejection: &Rejection) -> Response<Body> {
    let mut response = Response::new(Full::new(Bytes::from(rejection.to_json())).boxed());
    *response.status_mut() = status;
    response
        .headers_mut()
        .insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
    response
}

fn coalesced(body: Body) -> Body {
    Coalesced {
        inner: body,
        ready: None,
        held: None,
        ended: false,
    }
    .boxed()
}

/// `response` with as much of its body as comes within [`JOIN_WAIT`]: a response that
/// ends by then (a call that ends at once) is sent whole, head and body in one write,
/// with its length; the rest of a longer one follows as it is ready.
async fn joined(response: Response<Body>) -> Response<Body> {
    let (parts, mut body) = response.into_parts();
    let mut ready = BytesMut::new();
    let wait = tokio::time::sleep(JOIN_WAIT);
    let mut wait = std::pin::pin!(wait);
    let held = loop {
        tokio::select! {
            biased;
            frame = body.frame() => match frame {
                Some(Ok(frame)) => match frame.into_data() {
                    Ok(data) => ready.extend_from_slice(&data),
                    Err(frame) => break Some(frame),
                },
                None => return Response::from_parts(parts, Full::new(ready.freeze()).boxed()),
            },
            () = &mut wait => break None,
        }
    };
    let rest = Coalesced {
        inner: body,
        ready: (!ready.is_empty()).then_some(ready),
        held,
        ended: false,
    };
    Response::from_parts(parts, rest.boxed())
}

/// A response body whose frames are joined while they are ready: an SSE response is
/// written in one piece per burst of events (a priming event, a result and the end),
/// not one write per event.
struct Coalesced {
    inner: Body,
    /// Data read already, to go out first (with what is ready after it).
    ready: Option<BytesMut>,
    /// A frame that is not data (trailers), held back until the data before it went.
    held: Option<Frame<Bytes>>,
    /// Whether `inner` has ended (it is not polled again).
    ended: bool,
}

impl hyper::body::Body for Coalesced {
    type Data = Bytes;
    type Error = Infallible;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Infallible>>> {
        let mut joined = self.ready.take();
        if joined.is_none()
            && let Some(frame) = self.held.take()
        {
            return Poll::Ready(Some(Ok(frame)));
        }
        if self.ended || self.held.is_some() {
            return Poll::Ready(joined.map(|data| Ok(Frame::data(data.freeze()))));
        }
        loop {
            let frame = Pin::new(&mut self.inner).poll_frame(cx);
            self.ended |= matches!(frame, Poll::Ready(None));
            match frame {
                Poll::Ready(Some(Ok(frame))) => match frame.into_data() {
                    Ok(data) => joined
                        .get_or_insert_with(BytesMut::new)
                        .extend_from_slice(&data),
                    Err(frame) => {
                        let Some(data) = joined else {
                            return Poll::Ready(Some(Ok(frame)));
                        };
                        self.held = Some(frame);
                        return Poll::Ready(Some(Ok(Frame::data(data.freeze()))));
                    }
                },
                Poll::Ready(None) | Poll::Pending if joined.is_some() => {
                    let data = joined.take().map(BytesMut::freeze).unwrap_or_default();
                    return Poll::Ready(Some(Ok(Frame::data(data))));
                }
                other => return other,
            }
        }
    }

    fn is_end_stream(&self) -> bool {
        self.ready.is_none() && self.held.is_none() && (self.ended || self.inner.is_end_stream())
    }

    fn size_hint(&self) -> SizeHint {
        self.inner.size_hint()
    }
}

/// A response body that keeps its request counted as in flight until it is sent.
struct Tracked {
    body: Body,
    _in_flight: RequestGuard,
}

impl hyper::body::Body for Tracked {
    type Data = Bytes;
    type Error = Infallible;

    fn poll_frame(
        self: Pin<&mut Self>,
        context: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Infallible>>> {
        Pin::new(&mut self.get_mut().body).poll_frame(context)
    }

    fn is_end_stream(&self) -> bool {
        self.body.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.body.size_hint()
    }
}

fn text(status: StatusCode, body: String) -> Response<Body> {
    let mut response = Response::new(Full::new(Bytes::from(body)).boxed());
    *response.status_mut() = status;
    response
}

fn not_found() -> Response<Body> {
    text(
        StatusCode::NOT_FOUND,
        format!("not found: the MCP endpoint is {ENDPOINT}\n"),
    )
}
