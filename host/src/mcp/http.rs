//! MCP over streamable HTTP: the SDK's `StreamableHttpService` at `/mcp`, served by
//! hyper on one listening socket, beside the probes `/healthz` and `/readyz`.
//!
//! The address is loopback unless the user said otherwise (`--allow-remote`): there is
//! no authentication, so whoever reaches the port can run every tool. On loopback the
//! SDK also checks the `Host` header (against DNS rebinding from web pages).

use std::convert::Infallible;
use std::pin::Pin;
use std::sync::{Arc, OnceLock};
use std::task::{Context, Poll};
use std::time::Duration;

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::body::{Frame, Incoming, SizeHint};
use hyper::header::{HeaderValue, RETRY_AFTER};
use hyper::{Method, Request, Response, StatusCode};
use hyper_util::rt::{TokioExecutor, TokioIo};
use hyper_util::server::conn::auto;
use hyper_util::server::graceful::GracefulShutdown;
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::{StreamableHttpServerConfig, StreamableHttpService};
use tokio::net::TcpListener;
use tokio_util::sync::CancellationToken;

use super::Shared;
use super::lifecycle::{Lifecycle, RequestGuard};
use super::server::ToolServer;

/// The path the MCP endpoint is served at.
pub const ENDPOINT: &str = "/mcp";

/// The liveness probe: 200 whenever the process answers.
pub const HEALTH_ENDPOINT: &str = "/healthz";

/// The readiness probe: 200 when the plugins are loaded and no reload is being
/// applied and the server is not shutting down, else 503 and why.
pub const READY_ENDPOINT: &str = "/readyz";

/// How long open connections get to finish once the sessions are closed.
const FLUSH_GRACE: Duration = Duration::from_secs(2);

type Body = http_body_util::combinators::BoxBody<Bytes, Infallible>;
type Service = StreamableHttpService<ToolServer, LocalSessionManager>;

/// One HTTP server through its life: probes from the start, MCP once the plugins are
/// loaded ([`HttpServer::open`]), no new connections once draining
/// ([`HttpServer::stop_accepting`]), and an end once the sessions are closed
/// ([`HttpServer::close`]). Clones share the server.
#[derive(Clone)]
pub struct HttpServer {
    lifecycle: Lifecycle,
    mcp: Arc<OnceLock<Service>>,
    any_host: bool,
    stop_accepting: CancellationToken,
    closed: CancellationToken,
}

impl HttpServer {
    /// A server whose readiness `lifecycle` tracks. `any_host` turns off the `Host`
    /// header check (for a server reachable under other names than loopback).
    pub fn new(lifecycle: Lifecycle, any_host: bool) -> HttpServer {
        HttpServer {
            lifecycle,
            mcp: Arc::new(OnceLock::new()),
            any_host,
            stop_accepting: CancellationToken::new(),
            closed: CancellationToken::new(),
        }
    }

    /// Serves MCP over `shared` from now on, and marks the plugins loaded.
    pub fn open(&self, shared: Shared) {
        let mut config = StreamableHttpServerConfig::default()
            .with_cancellation_token(shared.shutdown.child_token());
        if self.any_host {
            config = config.disable_allowed_hosts();
        }
        let service = StreamableHttpService::new(
            move || Ok(ToolServer::new(shared.clone())),
            Arc::new(LocalSessionManager::default()),
            config,
        );
        // Opened once; a second call changes nothing.
        let _ = self.mcp.set(service);
        self.lifecycle.loaded();
    }

    /// Closes the listening socket; open connections finish the requests they carry
    /// and close.
    pub fn stop_accepting(&self) {
        self.stop_accepting.cancel();
    }

    /// The sessions are closed (`Shared::shut_down`): connections still open get
    /// [`FLUSH_GRACE`] to finish, then [`HttpServer::serve`] returns.
    pub fn close(&self) {
        self.stop_accepting.cancel();
        self.closed.cancel();
    }

    /// Serves on `listener` until closed.
    pub async fn serve(self, listener: TcpListener) {
        let connections = GracefulShutdown::new();
        loop {
            let stream = tokio::select! {
                () = self.stop_accepting.cancelled() => break,
                accepted = listener.accept() => match accepted {
                    Ok((stream, _)) => stream,
                    Err(error) => {
                        tracing::warn!("accepting an MCP connection failed: {error}");
                        continue;
                    }
                },
            };
            let server = self.clone();
            let handler = hyper::service::service_fn(move |request: Request<Incoming>| {
                let server = server.clone();
                async move { Ok::<_, Infallible>(server.route(request).await) }
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
                Some(service) => {
                    // A drain waits for a POST's response (a tool call's result) to be
                    // sent; a GET is a stream of notifications that never ends by itself.
                    if request.method() == Method::GET {
                        return service.handle(request).await;
                    }
                    let in_flight = self.lifecycle.request();
                    service.handle(request).await.map(|body| {
                        Tracked {
                            body,
                            _in_flight: in_flight,
                        }
                        .boxed()
                    })
                }
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
