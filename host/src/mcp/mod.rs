//! `toolcell serve`: every loaded plugin's tools offered to any agent that speaks the
//! Model Context Protocol, through the official Rust SDK (`rmcp`).
//!
//! - `server`: the protocol handler: `tools/list`, `tools/call` (arguments validated by
//!   the runtime, cancellation, progress), logging and
//!   `notifications/tools/list_changed`;
//! - `logging`: what plugins log, to the clients whose calls they serve;
//! - `jsonrpc`: the checks every incoming message passes before rmcp sees it;
//! - `stdio` and `lines`: the stdio transport, with the real stdout kept for the
//!   protocol alone;
//! - `http`: the streamable HTTP transport, with the `/healthz` and `/readyz` probes;
//!   `direct`: its plain tool calls, answered without rmcp's session routing;
//! - `lifecycle`: readiness (loading, reloading, draining) and the calls in flight that
//!   a drain on SIGTERM waits for;
//! - `metrics`: `--metrics`, the runtime's statistics for Prometheus;
//! - `connections`: what both HTTP listeners admit: caps on open connections, idle
//!   and slow clients closed, accept failures backed off;
//! - `approval`: who answers the permission policy's `ask` in a session (elicitation,
//!   else `--ask-fallback`), and the questions plugins ask;
//! - `questions`: who answers the questions plugins ask (elicitation);
//! - `input`: input-required results (protocol 2026-07-28): questions and approvals
//!   answered by the client's next request, the calls waiting for it;
//! - `content`: a call's outcome as MCP content.
//!
//! Both transports share one [`ServerState`]: the runtime behind a lock (held only to
//! start a call, to list tools or to swap a reloaded plugin in), the feed of tool-list
//! changes from hot reload (`crate::runtime::reload`), the router of plugin logs, and the
//! server's shutdown signal.

mod approval;
mod connections;
mod content;
mod direct;
mod http;
mod input;
mod jsonrpc;
mod lifecycle;
mod lines;
mod logging;
mod metrics;
mod questions;
mod server;
mod stdio;

use std::sync::{Arc, PoisonError, RwLock, RwLockReadGuard};
use std::time::Duration;

use tokio::sync::broadcast;
use tokio_util::sync::CancellationToken;

pub use approval::AskFallback;
pub use connections::{
    ConnectionLimits, DEFAULT_MAX_CONNECTIONS, DEFAULT_MAX_CONNECTIONS_PER_PEER, KEEP_ALIVE_IDLE,
    REQUEST_HEAD_TIMEOUT, WRITE_STALL_TIMEOUT,
};
pub use http::{
    DEFAULT_MAX_SESSIONS, ENDPOINT, HEALTH_ENDPOINT, HttpOptions, HttpServer, READY_ENDPOINT,
    SESSION_IDLE,
};
pub use input::{DEFAULT_MAX_WAITING_CALLS, DEFAULT_WAITING_CALL_TTL};
pub use jsonrpc::{MAX_DEPTH, MAX_MESSAGE_BYTES};
pub use lifecycle::Lifecycle;
pub use logging::LogRouter;
pub use metrics::{METRICS_ENDPOINT, serve_metrics};
pub use stdio::serve_stdio;

use crate::{Runtime, Scope};

/// The name of the built-in tool of `--bench-floor-tool`: it answers at once without
/// entering a sandbox, so that a benchmark can measure the protocol's own round trip.
pub const FLOOR_TOOL: &str = "toolcell-floor";

/// What every MCP session of one server shares.
#[derive(Clone)]
pub struct ServerState {
    runtime: Arc<RwLock<Runtime>>,
    logs: Arc<LogRouter>,
    changes: broadcast::Sender<()>,
    shutdown: CancellationToken,
    lifecycle: Lifecycle,
    options: ServeOptions,
    /// The calls waiting for their client's input (protocol 2026-07-28).
    waiting: Arc<input::Waiting>,
    /// The scope every session starts with (`serve --tools`).
    scope: Scope,
}

/// How the server behaves beyond what the runtime decides.
#[derive(Debug, Clone, Copy)]
pub struct ServeOptions {
    /// Plugins are reloaded when their files change, so the tool list may change:
    /// advertise `tools.listChanged` and send the notifications.
    pub watch: bool,
    /// Offer [`FLOOR_TOOL`] (benchmarks only).
    pub floor_tool: bool,
    /// What `ask` does when the client cannot be asked (it does not elicit).
    pub ask_fallback: AskFallback,
    /// How many calls may wait for their client's input at once (protocol
    /// 2026-07-28); a call that would wait past that has its question unanswered.
    pub max_waiting_calls: u32,
    /// How long a call waits for its client's input before it is cancelled.
    pub waiting_call_ttl: Duration,
}

impl Default for ServeOptions {
    fn default() -> Self {
        ServeOptions {
            watch: false,
            floor_tool: false,
            ask_fallback: AskFallback::default(),
            max_waiting_calls: DEFAULT_MAX_WAITING_CALLS,
            waiting_call_ttl: DEFAULT_WAITING_CALL_TTL,
        }
    }
}

impl ServerState {
    /// The state of a server over `runtime`, which was built with `logs` as its log
    /// listener, and whose readiness and calls in flight `lifecycle` tracks.
    pub fn new(
        runtime: Arc<RwLock<Runtime>>,
        logs: Arc<LogRouter>,
        options: ServeOptions,
        lifecycle: Lifecycle,
    ) -> ServerState {
        let (changes, _) = broadcast::channel(16);
        let shutdown = CancellationToken::new();
        let waiting = Arc::new(input::Waiting::new(
            options.max_waiting_calls,
            options.waiting_call_ttl,
            shutdown.clone(),
        ));
        ServerState {
            runtime,
            logs,
            changes,
            shutdown,
            lifecycle,
            options,
            waiting,
            scope: Scope::all(),
        }
    }

    /// Every session sees `scope` (`serve --tools`).
    pub fn with_scope(mut self, scope: Scope) -> ServerState {
        self.scope = scope;
        self
    }

    /// Tells every session that the tool list changed.
    pub fn tools_changed(&self) {
        // No receiver means no session listens; nothing to tell.
        let _ = self.changes.send(());
    }

    /// Stops the server: calls in flight are cancelled in their sandboxes.
    pub fn shut_down(&self) {
        self.shutdown.cancel();
    }

    fn runtime(&self) -> RwLockReadGuard<'_, Runtime> {
        self.runtime.read().unwrap_or_else(PoisonError::into_inner)
    }
}
