//! MCP over streamable HTTP: the SDK's `StreamableHttpService` at `/mcp`, served by
//! hyper on one listening socket, with what the SDK does not do in front of it:
//!
//! - accepted connections set `TCP_NODELAY`, and each response's body goes out in as
//!   few writes as it is ready in: otherwise Nagle's algorithm holds the end of a
//!   response until the client's delayed acknowledgement (40 ms) for clients that do
//!   not tune their own sockets;
//! - a POSTed JSON-RPC message passes `jsonrpc::check` first: one that fails is a 400
//!   (413 when too large) whose body is the JSON-RPC error saying why;
//! - at most [`HttpOptions::max_sessions`] sessions live at once: another `initialize`
//!   is a 503 until one ends (DELETE, or [`SESSION_IDLE`] without a request);
//! - with a bearer token, a request without it is a 401 (the token is compared in
//!   constant time).
//!
//! The address is loopback unless the user said otherwise (`--allow-remote`, which
//! needs a token). On loopback the SDK also checks the `Host` header (against DNS
//! rebinding from web pages).

use std::convert::Infallible;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use bytes::{Bytes, BytesMut};
use http_body_util::combinators::BoxBody;
use http_body_util::{BodyExt, Full, Limited};
use hyper::body::{Body, Frame, Incoming, SizeHint};
use hyper::header::{AUTHORIZATION, CONTENT_TYPE, HeaderValue, WWW_AUTHENTICATE};
use hyper::{Method, Request, Response, StatusCode};
use hyper_util::rt::{TokioExecutor, TokioIo};
use hyper_util::server::conn::auto;
use hyper_util::server::graceful::GracefulShutdown;
use rmcp::model::{ClientJsonRpcMessage, ClientRequest, ErrorCode, RequestId};
use rmcp::transport::streamable_http_server::session::local::{LocalSessionManager, SessionConfig};
use rmcp::transport::{StreamableHttpServerConfig, StreamableHttpService};
use subtle::ConstantTimeEq;
use tokio::net::TcpListener;

use super::Shared;
use super::jsonrpc::{self, MAX_MESSAGE_BYTES, Rejection};
use super::server::ToolServer;

/// The path the MCP endpoint is served at.
pub const ENDPOINT: &str = "/mcp";

/// How long a session may go without a request before it ends.
pub const SESSION_IDLE: Duration = SessionConfig::DEFAULT_KEEP_ALIVE;

/// How many sessions may live at once unless the user says otherwise.
pub const DEFAULT_MAX_SESSIONS: u32 = 256;

/// How long open connections get to finish when the server stops.
const SHUTDOWN_GRACE: Duration = Duration::from_secs(2);

/// The header that names a session.
const SESSION_HEADER: &str = "mcp-session-id";

/// How the HTTP server admits clients.
#[derive(Clone)]
pub struct HttpOptions {
    /// Serve any `Host` header (for a server reachable under other names than
    /// loopback): the DNS-rebinding check is off.
    pub any_host: bool,
    /// How many sessions may live at once.
    pub max_sessions: u32,
    /// The bearer token every request must carry, if any.
    pub token: Option<Arc<str>>,
}

type HttpResponse = Response<BoxBody<Bytes, Infallible>>;

/// Serves MCP on `listener` until `shared` is shut down.
pub async fn serve_http(shared: Shared, listener: TcpListener, options: HttpOptions) {
    let mut config = StreamableHttpServerConfig::default()
        .with_cancellation_token(shared.shutdown.child_token())
        // The checks below read the body first, with the same limit.
        .with_max_request_body_bytes(MAX_MESSAGE_BYTES);
    if options.any_host {
        config = config.disable_allowed_hosts();
    }
    let factory_shared = shared.clone();
    let sessions = Arc::new(LocalSessionManager::default());
    let service = StreamableHttpService::new(
        move || Ok(ToolServer::new(factory_shared.clone())),
        sessions.clone(),
        config,
    );
    let endpoint = Arc::new(Endpoint {
        service,
        sessions,
        options,
    });
    let connections = GracefulShutdown::new();
    loop {
        let stream = tokio::select! {
            () = shared.shutdown.cancelled() => break,
            accepted = listener.accept() => match accepted {
                Ok((stream, _)) => stream,
                Err(error) => {
                    tracing::warn!("accepting an MCP connection failed: {error}");
                    continue;
                }
            },
        };
        if let Err(error) = stream.set_nodelay(true) {
            tracing::debug!("cannot set TCP_NODELAY on an MCP connection: {error}");
        }
        let endpoint = endpoint.clone();
        let handler = hyper::service::service_fn(move |request: Request<Incoming>| {
            let endpoint = endpoint.clone();
            async move { Ok::<_, Infallible>(endpoint.handle(request).await) }
        });
        let connection = auto::Builder::new(TokioExecutor::new())
            .serve_connection_with_upgrades(TokioIo::new(stream), handler)
            .into_owned();
        let connection = connections.watch(connection);
        tokio::spawn(async move {
            if let Err(error) = connection.await {
                tracing::debug!("an MCP connection ended with an error: {error}");
            }
        });
    }
    if tokio::time::timeout(SHUTDOWN_GRACE, connections.shutdown())
        .await
        .is_err()
    {
        tracing::debug!("some MCP connections did not close in time");
    }
}

/// The `/mcp` endpoint: the SDK's service behind the checks of the module docs.
struct Endpoint {
    service: StreamableHttpService<ToolServer, LocalSessionManager>,
    sessions: Arc<LocalSessionManager>,
    options: HttpOptions,
}

impl Endpoint {
    async fn handle(&self, request: Request<Incoming>) -> HttpResponse {
        if request.uri().path() != ENDPOINT {
            return text_response(
                StatusCode::NOT_FOUND,
                format!("not found: the MCP endpoint is {ENDPOINT}\n"),
            );
        }
        if let Some(token) = &self.options.token
            && !authorized(&request, token)
        {
            let mut response = text_response(
                StatusCode::UNAUTHORIZED,
                "unauthorized: this server needs `Authorization: Bearer TOKEN`\n".to_string(),
            );
            response
                .headers_mut()
                .insert(WWW_AUTHENTICATE, HeaderValue::from_static("Bearer"));
            return response;
        }
        let response = if request.method() == Method::POST && is_json(&request) {
            match self.admit(request).await {
                Ok(request) => self.service.handle(request).await,
                Err(response) => return response,
            }
        } else {
            self.service.handle(request).await
        };
        let (parts, body) = response.into_parts();
        Response::from_parts(parts, BoxBody::new(Coalesced::new(body)))
    }

    /// Reads a POSTed message and checks it; gives the request back with its body
    /// read, or the response refusing it.
    async fn admit(
        &self,
        request: Request<Incoming>,
    ) -> Result<Request<Full<Bytes>>, HttpResponse> {
        let (parts, body) = request.into_parts();
        let bytes = match Limited::new(body, MAX_MESSAGE_BYTES).collect().await {
            Ok(collected) => collected.to_bytes(),
            Err(error) if error.is::<http_body_util::LengthLimitError>() => {
                return Err(rejection_response(
                    StatusCode::PAYLOAD_TOO_LARGE,
                    &Rejection::too_large(None),
                ));
            }
            Err(error) => {
                return Err(text_response(
                    StatusCode::BAD_REQUEST,
                    format!("cannot read the request body: {error}\n"),
                ));
            }
        };
        let message = jsonrpc::check(&bytes)
            .map_err(|rejection| rejection_response(StatusCode::BAD_REQUEST, &rejection))?;
        if let ClientJsonRpcMessage::Request(request) = &message
            && matches!(request.request, ClientRequest::InitializeRequest(_))
            && !parts.headers.contains_key(SESSION_HEADER)
        {
            self.room_for_a_session(&request.id).await?;
        }
        Ok(Request::from_parts(parts, Full::new(bytes)))
    }

    /// Refuses a new session when [`HttpOptions::max_sessions`] live.
    async fn room_for_a_session(&self, id: &RequestId) -> Result<(), HttpResponse> {
        let live = self.sessions.sessions.read().await.len();
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
        Err(rejection_response(
            StatusCode::SERVICE_UNAVAILABLE,
            &rejection,
        ))
    }
}

/// Whether `request` carries the bearer `token` (compared in constant time).
fn authorized<B>(request: &Request<B>, token: &str) -> bool {
    let Some(given) = request
        .headers()
        .get(AUTHORIZATION)
        .and_then(|value| value.to_str().ok())
        .and_then(|value| value.strip_prefix("Bearer "))
    else {
        return false;
    };
    given.as_bytes().ct_eq(token.as_bytes()).into()
}

fn is_json<B>(request: &Request<B>) -> bool {
    request
        .headers()
        .get(CONTENT_TYPE)
        .and_then(|value| value.to_str().ok())
        .and_then(|value| value.split(';').next())
        .is_some_and(|essence| essence.trim().eq_ignore_ascii_case("application/json"))
}

fn rejection_response(status: StatusCode, rejection: &Rejection) -> HttpResponse {
    let mut response = Response::new(Full::new(Bytes::from(rejection.to_json())).boxed());
    *response.status_mut() = status;
    response
        .headers_mut()
        .insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
    response
}

fn text_response(status: StatusCode, text: String) -> HttpResponse {
    let mut response = Response::new(Full::new(Bytes::from(text)).boxed());
    *response.status_mut() = status;
    response
}

/// A response body whose frames are joined while they are ready: an SSE response is
/// written in one piece per burst of events (a priming event, a result and the end),
/// not one write per event.
struct Coalesced<B> {
    inner: B,
    /// A frame that is not data (trailers), held back until the data before it went.
    held: Option<Frame<Bytes>>,
    /// Whether `inner` has ended (it is not polled again).
    ended: bool,
}

impl<B> Coalesced<B> {
    fn new(inner: B) -> Self {
        Coalesced {
            inner,
            held: None,
            ended: false,
        }
    }
}

impl<B> Body for Coalesced<B>
where
    B: Body<Data = Bytes, Error = Infallible> + Unpin,
{
    type Data = Bytes;
    type Error = Infallible;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Infallible>>> {
        if let Some(frame) = self.held.take() {
            return Poll::Ready(Some(Ok(frame)));
        }
        if self.ended {
            return Poll::Ready(None);
        }
        let mut joined: Option<BytesMut> = None;
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
        self.held.is_none() && (self.ended || self.inner.is_end_stream())
    }

    fn size_hint(&self) -> SizeHint {
        self.inner.size_hint()
    }
}
