//! MCP over streamable HTTP: the SDK's `StreamableHttpService` at `/mcp`, served by
//! hyper on one listening socket.
//!
//! The address is loopback unless the user said otherwise (`--allow-remote`): there is
//! no authentication, so whoever reaches the port can run every tool. On loopback the
//! SDK also checks the `Host` header (against DNS rebinding from web pages).

use std::convert::Infallible;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
use hyper::{Request, Response, StatusCode};
use hyper_util::rt::{TokioExecutor, TokioIo};
use hyper_util::server::conn::auto;
use hyper_util::server::graceful::GracefulShutdown;
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::{StreamableHttpServerConfig, StreamableHttpService};
use tokio::net::TcpListener;

use super::Shared;
use super::server::ToolServer;

/// The path the MCP endpoint is served at.
pub const ENDPOINT: &str = "/mcp";

/// How long open connections get to finish when the server stops.
const SHUTDOWN_GRACE: Duration = Duration::from_secs(2);

/// Serves MCP on `listener` until `shared` is shut down. `any_host` turns off the
/// `Host` header check (for a server reachable under other names than loopback).
pub async fn serve_http(shared: Shared, listener: TcpListener, any_host: bool) {
    let mut config = StreamableHttpServerConfig::default()
        .with_cancellation_token(shared.shutdown.child_token());
    if any_host {
        config = config.disable_allowed_hosts();
    }
    let factory_shared = shared.clone();
    let service = StreamableHttpService::new(
        move || Ok(ToolServer::new(factory_shared.clone())),
        Arc::new(LocalSessionManager::default()),
        config,
    );
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
        let service = service.clone();
        let handler = hyper::service::service_fn(move |request: Request<Incoming>| {
            let service = service.clone();
            async move {
                Ok::<_, Infallible>(if request.uri().path() == ENDPOINT {
                    service.handle(request).await
                } else {
                    not_found()
                })
            }
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

fn not_found() -> Response<http_body_util::combinators::BoxBody<Bytes, Infallible>> {
    let mut response = Response::new(
        Full::new(Bytes::from(format!(
            "not found: the MCP endpoint is {ENDPOINT}\n"
        )))
        .boxed(),
    );
    *response.status_mut() = StatusCode::NOT_FOUND;
    response
}
