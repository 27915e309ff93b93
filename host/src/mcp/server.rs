//! The MCP protocol handler: one [`ToolServer`] per session (stdio has one; streamable
//! HTTP one per session or per request), all over the same [`Shared`] runtime.
//!
//! - `tools/list`: every tool that is not hidden and that the permission policy does
//!   not deny, with its description and its parameters schema as the input schema
//!   (`crate::schema::mcp_tool`).
//! - `tools/call`: the runtime validates the arguments and runs the tool in its sandbox.
//!   A completed tool gives its output as text. A tool that failed gives
//!   `[tool failed: MESSAGE]`, the text `toolcell call` prints and clm-tool(5) says the
//!   model sees, with `isError: true`. Arguments that fail the tool's schema give
//!   `invalid arguments for 'TOOL': PROBLEMS` with `isError: true` (the tool never ran;
//!   the model can correct itself). An unknown tool is a protocol error (invalid params).
//!   Each session has its own approvals (`approval`): a call the policy says to `ask`
//!   about asks the client's user through elicitation, and "allow for the session"
//!   lasts as long as the session.
//! - While the server drains (SIGTERM), a new `tools/call` is refused; calls in flight
//!   go on until they end or the grace period does.
//! - `notifications/cancelled` (or the end of the connection) cancels the call's whole
//!   family in the sandbox: its coroutines stop and its HTTP requests and timers are
//!   aborted.
//! - A request with a progress token gets `notifications/progress` every
//!   [`PROGRESS_INTERVAL`] while the call runs: the seconds elapsed (plugins report no
//!   progress of their own).
//! - With `--watch`, `notifications/tools/list_changed` after a reload changed the tools:
//!   to sessions that began with `initialize`, and on `subscriptions/listen` streams.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, Implementation,
    ListToolsResult, PaginatedRequestParams, ProgressNotificationParam, ProgressToken,
    ServerCapabilities, ServerConfig, SubscriptionFilter, Tool,
};
use rmcp::service::{NotificationContext, RequestContext, SubscriptionContext};
use rmcp::{ErrorData, RoleServer, ServerHandler};
use tokio::sync::broadcast::error::RecvError;
use tokio::time::Instant;
use tokio_util::sync::{CancellationToken, DropGuard};

use super::{FLOOR_TOOL, Shared, approval};
use crate::policy::Approvals;
use crate::{InvokeError, ToolInfo, schema};

/// How often a call with a progress token reports that it is still running.
pub const PROGRESS_INTERVAL: Duration = Duration::from_millis(500);

/// The handler of one MCP session.
pub struct ToolServer {
    shared: Shared,
    /// Cancelled when this handler is dropped (the session ended): stops its
    /// list-changed forwarder.
    session: CancellationToken,
    _session_guard: DropGuard,
    /// Whether this session's list-changed forwarder runs (one per session, however
    /// often the client says `initialized`).
    forwarding: AtomicBool,
    /// The session's approvals, made at its first call (when the client's
    /// capabilities are known).
    approvals: OnceLock<Arc<Approvals>>,
}

impl ToolServer {
    /// A handler for a new session.
    pub fn new(shared: Shared) -> ToolServer {
        let session = CancellationToken::new();
        ToolServer {
            shared,
            _session_guard: session.clone().drop_guard(),
            session,
            forwarding: AtomicBool::new(false),
            approvals: OnceLock::new(),
        }
    }

    async fn run(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResult, ErrorData> {
        if self.shared.options.floor_tool && request.name == FLOOR_TOOL {
            return Ok(CallToolResult::success(vec![ContentBlock::text("pong")]));
        }
        if self.shared.lifecycle.is_draining() {
            return Err(ErrorData::internal_error(
                "the server is shutting down; the call was not started",
                None,
            ));
        }
        let args = serde_json::to_string(&request.arguments.unwrap_or_default())
            .map_err(|error| ErrorData::invalid_params(error.to_string(), None))?;
        let approvals = self.approvals.get_or_init(|| {
            Arc::new(approval::for_session(
                &context.peer,
                self.shared.options.ask_fallback,
            ))
        });
        let started = self
            .shared
            .runtime()
            .call_with(approvals, &request.name, &args);
        let mut call = match started {
            Ok(call) => call,
            Err(error @ (InvokeError::UnknownTool { .. } | InvokeError::Unavailable { .. })) => {
                return Err(ErrorData::invalid_params(error.to_string(), None));
            }
            Err(error @ InvokeError::InvalidArguments { .. }) => {
                return Ok(CallToolResult::error(vec![ContentBlock::text(
                    error.to_string(),
                )]));
            }
        };
        let progress = context.meta.get_progress_token();
        let start = Instant::now();
        let mut ticks = tokio::time::interval_at(start + PROGRESS_INTERVAL, PROGRESS_INTERVAL);
        let outcome = loop {
            tokio::select! {
                outcome = &mut call => break outcome,
                () = context.ct.cancelled() => {
                    call.cancel("the client cancelled the request");
                    return Err(ErrorData::internal_error("the request was cancelled", None));
                }
                () = self.shared.shutdown.cancelled() => {
                    call.cancel("the server is shutting down");
                    return Err(ErrorData::internal_error("the server is shutting down", None));
                }
                _ = ticks.tick(), if progress.is_some() => {
                    if let Some(token) = &progress {
                        report_progress(&context, token, start.elapsed()).await;
                    }
                }
            }
        };
        let text = ContentBlock::text(outcome.model_text());
        Ok(if outcome.is_completed() {
            CallToolResult::success(vec![text])
        } else {
            CallToolResult::error(vec![text])
        })
    }
}

async fn report_progress(
    context: &RequestContext<RoleServer>,
    token: &ProgressToken,
    elapsed: Duration,
) {
    let seconds = elapsed.as_secs_f64();
    let param = ProgressNotificationParam::new(token.clone(), seconds)
        .with_message(format!("still running after {seconds:.1} s"));
    if let Err(error) = context.peer.notify_progress(param).await {
        tracing::debug!("cannot send a progress notification: {error}");
    }
}

/// A tool as `tools/list` gives it (the same JSON as `toolcell list --format mcp`).
fn mcp_tool(tool: &ToolInfo) -> Result<Tool, ErrorData> {
    serde_json::from_value(schema::mcp_tool(tool)).map_err(|error| {
        ErrorData::internal_error(
            format!("tool '{}' cannot be described: {error}", tool.name),
            None,
        )
    })
}

fn floor_tool() -> Tool {
    Tool::new_with_raw(
        FLOOR_TOOL,
        Some("Benchmark floor: answers \"pong\" without entering a sandbox".into()),
        serde_json::Map::from_iter([
            ("type".to_string(), serde_json::json!("object")),
            ("properties".to_string(), serde_json::json!({})),
        ]),
    )
}

impl ServerHandler for ToolServer {
    fn get_info(&self) -> ServerConfig {
        let mut capabilities = ServerCapabilities::builder().enable_tools();
        if self.shared.options.watch {
            capabilities = capabilities.enable_tool_list_changed();
        }
        let mut info = ServerConfig::new(capabilities.build());
        info.server_info = Implementation::new("toolcell", env!("CARGO_PKG_VERSION"));
        info
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        let visible: Vec<ToolInfo> = self
            .shared
            .runtime()
            .listed_tools()
            .filter(|tool| !tool.hidden)
            .cloned()
            .collect();
        let mut tools = visible
            .iter()
            .map(mcp_tool)
            .collect::<Result<Vec<_>, _>>()?;
        if self.shared.options.floor_tool {
            tools.push(floor_tool());
        }
        Ok(ListToolsResult::with_all_items(tools))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        self.run(request, context).await.map(CallToolResponse::from)
    }

    async fn on_initialized(&self, context: NotificationContext<RoleServer>) {
        if !self.shared.options.watch || self.forwarding.swap(true, Ordering::Relaxed) {
            return;
        }
        // A session that began with `initialize` gets list changes as plain
        // notifications, for as long as the session lasts.
        let mut changes = self.shared.changes.subscribe();
        let (session, shutdown) = (self.session.clone(), self.shared.shutdown.clone());
        let peer = context.peer;
        tokio::spawn(async move {
            loop {
                tokio::select! {
                    () = session.cancelled() => break,
                    () = shutdown.cancelled() => break,
                    change = changes.recv() => match change {
                        Ok(()) | Err(RecvError::Lagged(_)) => {
                            if peer.notify_tool_list_changed().await.is_err() {
                                break;
                            }
                        }
                        Err(RecvError::Closed) => break,
                    },
                }
            }
        });
    }

    fn accepted_subscription_filter(
        &self,
        _requested: &SubscriptionFilter,
    ) -> Option<SubscriptionFilter> {
        // The SDK narrows this to what was requested and what `get_info` advertises:
        // without --watch the acknowledged filter is empty and nothing is ever sent.
        Some(SubscriptionFilter::builder().tools_list_changed().build())
    }

    async fn listen(&self, context: SubscriptionContext) -> Result<(), ErrorData> {
        let mut changes = self.shared.changes.subscribe();
        loop {
            tokio::select! {
                () = context.cancelled() => return Ok(()),
                () = self.shared.shutdown.cancelled() => return Ok(()),
                change = changes.recv() => match change {
                    Ok(()) | Err(RecvError::Lagged(_)) => {
                        if context.accepted().tools_list_changed == Some(true) {
                            context
                                .sink()
                                .notify_tool_list_changed()
                                .await
                                .map_err(|error| ErrorData::internal_error(error.to_string(), None))?;
                        }
                    }
                    Err(RecvError::Closed) => return Ok(()),
                },
            }
        }
    }
}
