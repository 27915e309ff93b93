//! The MCP protocol handler: one [`ToolServer`] per session (stdio has one; streamable
//! HTTP one per session or per request), all over the same [`ServerState`] runtime.
//!
//! - Each MCP session is a [`Session`]: it sees the tools in the scope `serve --tools`
//!   gave, under the names models see (aliases, plain names, wire names of paths), and
//!   its untrusted output gets an envelope nonce of its own.
//! - `initialize`: once per session; a second one is refused.
//! - `tools/list`: every tool in scope that is not hidden and that the permission
//!   policy does not deny, with its description, its parameters schema as the input
//!   schema, its annotations, and its output schema when it gives structured results
//!   (`crate::tool::schema::mcp_tool`).
//! - `tools/call`: the runtime validates the arguments and runs the tool in its sandbox.
//!   A completed tool gives its output as text; one with an output schema (and not
//!   enveloped) also gives the value as `structuredContent`. A tool that failed gives
//!   `[tool failed: MESSAGE]`, the text `toolcell call` prints and clm-tool(5) says the
//!   model sees, with `isError: true`. Arguments that fail the tool's schema give
//!   `invalid arguments for 'TOOL': PROBLEMS` with `isError: true` (the tool never ran;
//!   the model can correct itself). An unknown tool, one outside the session's scope,
//!   or a hidden one (hidden tools are for plugin code, not the model), is a protocol
//!   error (invalid params) suggesting the closest names in scope.
//!   Each session has its own approvals (`approval`): a call the policy says to `ask`
//!   about asks the client's user through elicitation, and "allow for the session"
//!   lasts as long as the session.
//! - While the server drains (SIGTERM), a new `tools/call` is refused; calls in flight
//!   go on until they end or the grace period does.
//! - `notifications/cancelled` (or the end of the connection) cancels the call's whole
//!   family in the sandbox: its coroutines stop and its HTTP requests and timers are
//!   aborted.
//! - A request with a progress token gets `notifications/progress` while the call
//!   runs: the plugin's own reports (`ctx:progress`; at most one every 100 ms, the
//!   latest wins), and until the first of them a heartbeat, the seconds elapsed: the
//!   first [`FIRST_PROGRESS`] after the start, then every [`PROGRESS_INTERVAL`].
//! - `logging/setLevel` (or a log level in a request's `_meta`): what the call's plugin
//!   logs arrives as `notifications/message` (`logging.rs`).
//! - With `--watch`, `notifications/tools/list_changed` after a reload changed the tools:
//!   to sessions that began with `initialize`, and on `subscriptions/listen` streams.
//! - Anything else (prompts, resources, completions, unknown methods) is "method not
//!   found", with what this server offers instead.

// rmcp marks logging deprecated for protocol 2026-07-28 (SEP-2577); the protocol
// versions this server speaks have it.
#![allow(deprecated)]

use std::collections::{HashMap, HashSet};
use std::ops::Deref;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, OnceLock, PoisonError, Weak};
use std::time::Duration;

use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, CompleteRequestParams, CompleteResult,
    ContentBlock, CustomRequest, CustomResult, ErrorCode, GetPromptRequestParams,
    GetPromptResponse, Implementation, InitializeRequestParams, InitializeResult, InputResponses,
    JsonObject, ListPromptsResult, ListResourceTemplatesResult, ListResourcesResult,
    ListToolsResult, PaginatedRequestParams, ProgressNotificationParam, ProgressToken,
    ProtocolVersion, ReadResourceRequestParams, ReadResourceResponse, RequestId,
    ServerCapabilities, ServerConfig, SubscriptionFilter, Tool,
};
use rmcp::model::{LoggingLevel, SetLevelRequestParams};
use rmcp::service::{NotificationContext, Peer, RequestContext, SubscriptionContext};
use rmcp::{ErrorData, RoleServer, ServerHandler};
use tokio::sync::broadcast::error::RecvError;
use tokio::sync::mpsc;
use tokio::time::Instant;
use tokio_util::sync::{CancellationToken, DropGuard};

use super::input::{self, Parked};
use super::logging::{CallLog, Rate};
use super::{FLOOR_TOOL, ServerState, approval, direct};
use crate::policy::Approvals;
use crate::{CallOptions, InvokeError, ListedTool, Progress, SEARCH_TOOLS, Session, tool::schema};

/// How soon after its start a call with a progress token first reports progress (a
/// call that ends sooner reports none).
pub const FIRST_PROGRESS: Duration = Duration::from_millis(50);

/// How often a call with a progress token reports that it is still running.
pub const PROGRESS_INTERVAL: Duration = Duration::from_millis(500);

/// What a client can ask of this server, for "method not found".
const OFFERED: &str =
    "this server offers tools only: initialize, ping, tools/list, tools/call, logging/setLevel";

/// The handler of one MCP session, as rmcp serves it; clones share the session.
/// Streamable HTTP also answers a session's plain tool calls itself (`direct`), through
/// the same state.
#[derive(Clone)]
pub struct ToolServer(Arc<SessionState>);

impl Deref for ToolServer {
    type Target = SessionState;

    fn deref(&self) -> &SessionState {
        &self.0
    }
}

/// What one MCP session keeps between its requests.
pub struct SessionState {
    shared: ServerState,
    /// What this session's model sees.
    view: Session,
    /// Cancelled when the session ends (its state is dropped): stops its
    /// list-changed forwarder.
    session: CancellationToken,
    _session_guard: DropGuard,
    /// Whether this session's list-changed forwarder runs (one per session, however
    /// often the client says `initialized`).
    forwarding: AtomicBool,
    /// Whether `initialize` was answered: a second one is refused.
    initialized: AtomicBool,
    /// The level `logging/setLevel` asked for; none: no logs unless a request asks.
    log_level: Mutex<Option<LoggingLevel>>,
    /// How many log lines the session may still be sent.
    log_rate: Arc<Rate>,
    /// The session's approvals, made at its first call (when the client's
    /// capabilities are known).
    approvals: OnceLock<Arc<Approvals>>,
    /// The client, if its calls may be answered without rmcp's session routing
    /// (`direct`): it cannot be asked for approvals, so a call sends it nothing that
    /// must ride the call's own stream.
    direct: OnceLock<Peer<RoleServer>>,
    /// The calls `direct` is answering, by request id, to cancel on
    /// `notifications/cancelled`.
    direct_calls: Mutex<HashMap<RequestId, CancellationToken>>,
}

impl ToolServer {
    /// A handler for a new session.
    pub fn new(shared: ServerState) -> ToolServer {
        let session = CancellationToken::new();
        ToolServer(Arc::new(SessionState {
            view: Session::new().with_scope(shared.scope.clone()),
            shared,
            _session_guard: session.clone().drop_guard(),
            session,
            forwarding: AtomicBool::new(false),
            initialized: AtomicBool::new(false),
            log_level: Mutex::new(None),
            log_rate: Arc::new(Rate::default()),
            approvals: OnceLock::new(),
            direct: OnceLock::new(),
            direct_calls: Mutex::new(HashMap::new()),
        }))
    }

    /// The session's state, for `direct` to find again (it ends with the session).
    pub fn downgrade(&self) -> Weak<SessionState> {
        Arc::downgrade(&self.0)
    }

    /// The handler of the session whose state `state` is.
    pub fn of(state: Arc<SessionState>) -> ToolServer {
        ToolServer(state)
    }
}

impl SessionState {
    /// The client, if this session's calls may be answered directly (`direct`).
    pub(super) fn direct_peer(&self) -> Option<&Peer<RoleServer>> {
        self.direct.get()
    }

    /// Counts the call `id` as answered directly until it ends; `cancel` cancels it.
    pub(super) fn track_direct(&self, id: RequestId, cancel: CancellationToken) {
        self.direct_calls
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .insert(id, cancel);
    }

    /// The call `id` answered directly has ended.
    pub(super) fn untrack_direct(&self, id: &RequestId) {
        self.direct_calls
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .remove(id);
    }

    /// Cancels the call `id` if it is being answered directly.
    pub(super) fn cancel_direct(&self, id: &RequestId) {
        let calls = self
            .direct_calls
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        if let Some(cancel) = calls.get(id) {
            cancel.cancel();
        }
    }

    async fn run(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        if self.shared.options.floor_tool && request.name == FLOOR_TOOL {
            return Ok(CallToolResult::success(vec![ContentBlock::text("pong")]).into());
        }
        if self.shared.lifecycle.is_draining() {
            return Err(ErrorData::internal_error(
                "the server is shutting down; the call was not started",
                None,
            ));
        }
        // As rmcp parsed them: the runtime checks the value and gives the plugin its
        // text, without parsing them again.
        let args = request.arguments.unwrap_or_default();
        // The session's own tool: the name is kept for it whenever tools may be
        // deferred, so no plugin's tool answers to it then.
        if request.name == SEARCH_TOOLS && self.shared.runtime().offers_tool_search() {
            return self.search(args, &context).await.map(Into::into);
        }
        let responses = request.input_responses.unwrap_or_default();
        if !asks_by_result(&context) {
            let approvals = self.approvals.get_or_init(|| {
                Arc::new(
                    approval::for_session(&context.peer, self.shared.options.ask_fallback)
                        .with_questions(super::questions::for_session(&context.peer)),
                )
            });
            let running = match self.start(&request.name, args, approvals.clone(), None, &context) {
                Ok(running) => running,
                Err(answer) => return *answer,
            };
            return self.drive(running, &responses, None, context).await;
        }
        // Protocol 2026-07-28: questions and approvals go back as input-required
        // results, and the call waits for the request that answers them.
        if let Some(state) = &request.request_state {
            let binding = input::Binding::new(&request.name, &args);
            return self.resume(state, binding, &responses, context).await;
        }
        let can_elicit = context
            .meta
            .client_capabilities()
            .is_some_and(|capabilities| capabilities.elicitation.is_some());
        // Only a call that can ask may wait, so only its arguments are digested.
        let (approvals, asks, binding) = if can_elicit {
            let (approvals, asks) = input::Asking::approvals();
            let binding = input::Binding::new(&request.name, &args);
            (approvals, Some(asks), binding)
        } else {
            let approvals = approval::without_asking(self.shared.options.ask_fallback)
                .with_questions(super::questions::nobody());
            (approvals, None, input::Binding::none())
        };
        let mut running = match self.start(&request.name, args, Arc::new(approvals), asks, &context)
        {
            Ok(running) => running,
            Err(answer) => return *answer,
        };
        running.binding = binding;
        self.drive(running, &responses, None, context).await
    }

    /// Starts the call of `tool`: what `drive` runs, or the answer when it did not
    /// start.
    fn start(
        &self,
        tool: &str,
        args: JsonObject,
        approvals: Arc<Approvals>,
        asks: Option<mpsc::UnboundedReceiver<input::Asked>>,
        context: &RequestContext<RoleServer>,
    ) -> Result<Parked, Box<Result<CallToolResponse, ErrorData>>> {
        let (log, started) = {
            let runtime = self.shared.runtime();
            let id = runtime.reserve_call_id();
            // Listening starts before the call does: its first step may run at once.
            let log = self.log_level(context).map(|level| {
                self.shared
                    .logs
                    .listen(id.get(), tool, level, self.log_rate.clone())
            });
            let options = CallOptions {
                id: Some(id),
                refuse_hidden: true,
                approvals: Some(approvals),
            };
            let started = self.view.call_with(&runtime, tool, args, options);
            (log, started)
        };
        let call = match started {
            Ok(call) => call,
            Err(error @ (InvokeError::UnknownTool { .. } | InvokeError::Unavailable { .. })) => {
                return Err(Box::new(Err(ErrorData::invalid_params(
                    error.to_string(),
                    None,
                ))));
            }
            Err(error @ InvokeError::InvalidArguments { .. }) => {
                return Err(Box::new(Ok(CallToolResult::error(vec![
                    ContentBlock::text(error.to_string()),
                ])
                .into())));
            }
        };
        let mut log = log;
        // What the plugin logs is its words, as its output is.
        if let Some(log) = &mut log {
            log.envelop(call.envelope());
        }
        Ok(Parked {
            call,
            asks,
            open: Vec::new(),
            log,
            binding: input::Binding::none(),
        })
    }

    /// A request that answers a waiting call (`requestState`): the responses to what
    /// it asked go to it, and it runs on.
    async fn resume(
        &self,
        state: &str,
        binding: input::Binding,
        responses: &InputResponses,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let waiting = &self.shared.waiting;
        let (ticket, mut parked) = waiting
            .take(state, &binding)
            .map_err(|error| ErrorData::invalid_params(error.to_string(), None))?;
        // Every response is read before any is given: a bad one leaves the call as
        // it was, for the client to answer again.
        let mut answers = HashMap::new();
        for asked in &parked.open {
            if let Some(value) = responses.get(&asked.key) {
                match input::Response::read(&asked.key, value) {
                    Ok(response) => {
                        answers.insert(asked.key.clone(), response);
                    }
                    Err(problem) => {
                        waiting.restore(ticket, parked);
                        return Err(ErrorData::invalid_params(problem, None));
                    }
                }
            }
        }
        for asked in std::mem::take(&mut parked.open) {
            match answers.remove(&asked.key) {
                Some(response) => asked.answer(response),
                // Asked again, in the next round.
                None => parked.open.push(asked),
            }
        }
        self.drive(parked, responses, Some(ticket), context).await
    }

    /// Runs the call until its result, or until it asks what `responses` does not
    /// answer and waits for the client's input (protocol 2026-07-28).
    async fn drive(
        &self,
        running: Parked,
        responses: &InputResponses,
        mut ticket: Option<input::Ticket>,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let Parked {
            mut call,
            mut asks,
            mut open,
            mut log,
            binding,
        } = running;
        // A response answers one question of this request at most.
        let mut used = HashSet::new();
        let progress = context.meta.get_progress_token();
        let mut updates = call.progress();
        // The plugin's own reports replace the heartbeat from the first one on; the
        // updates end with the call.
        let (mut reported, mut updates_open) = (false, progress.is_some());
        let start = Instant::now();
        let mut ticks = tokio::time::interval_at(start + FIRST_PROGRESS, PROGRESS_INTERVAL);
        let outcome = loop {
            if !open.is_empty() {
                let parked = Parked {
                    call,
                    asks,
                    open,
                    log,
                    binding: binding.clone(),
                };
                match self.shared.waiting.park(ticket.take(), parked) {
                    Ok(result) => return Ok(result.into()),
                    Err(back) => {
                        Parked {
                            call,
                            asks,
                            open,
                            log,
                            ..
                        } = *back;
                        let reason = self.shared.waiting.full_reason();
                        for asked in open.drain(..) {
                            asked.unanswered(&reason);
                        }
                    }
                }
            }
            tokio::select! {
                biased;
                Some(line) = next_line(&mut log) => {
                    if let Err(error) = context.peer.notify_logging_message(line).await {
                        tracing::debug!("cannot send a log notification: {error}");
                    }
                }
                outcome = &mut call => break outcome,
                () = context.ct.cancelled() => {
                    call.cancel("the client cancelled the request");
                    return Err(ErrorData::internal_error("the request was cancelled", None));
                }
                () = self.shared.shutdown.cancelled() => {
                    call.cancel("the server is shutting down");
                    return Err(ErrorData::internal_error("the server is shutting down", None));
                }
                Some(asked) = next_ask(&mut asks) => {
                    let mut next = Some(asked);
                    while let Some(asked) = next {
                        match responses.get(&asked.key).filter(|_| used.insert(asked.key.clone())) {
                            Some(value) => match input::Response::read(&asked.key, value) {
                                Ok(response) => asked.answer(response),
                                Err(problem) => {
                                    call.cancel("the MCP client's response was refused");
                                    return Err(ErrorData::invalid_params(problem, None));
                                }
                            },
                            None => open.push(asked),
                        }
                        // What other coroutines of the call asked meanwhile goes in
                        // the same round.
                        next = asks.as_mut().and_then(|asks| asks.try_recv().ok());
                    }
                }
                update = updates.next(), if updates_open => match (update, &progress) {
                    (Some(update), Some(token)) => {
                        reported = true;
                        report_plugin_progress(&context, token, update).await;
                    }
                    _ => updates_open = false,
                },
                _ = ticks.tick(), if progress.is_some() && !reported => {
                    if let Some(token) = &progress {
                        report_progress(&context, token, start.elapsed()).await;
                    }
                }
            }
        };
        // The plugin's last report, if the call ended before it went out, and what the
        // call logged go out before its result.
        if let (Some(token), Some(update)) = (&progress, updates.unread()) {
            report_plugin_progress(&context, token, update).await;
        }
        for line in log.as_mut().map(CallLog::rest).unwrap_or_default() {
            if let Err(error) = context.peer.notify_logging_message(line).await {
                tracing::debug!("cannot send a log notification: {error}");
            }
        }
        // A structured result cut to the output limits is no longer JSON: text only.
        if let Some(value) = call.structured() {
            return Ok(CallToolResult::structured(value).into());
        }
        Ok(super::content::result(&outcome).into())
    }

    /// A call of `search_tools`: when it found tools the session did not list, the
    /// client is told its list changed.
    async fn search(
        &self,
        args: JsonObject,
        context: &RequestContext<RoleServer>,
    ) -> Result<CallToolResult, ErrorData> {
        let before = self.view.found_tools().len();
        let started = self.view.call_with(
            &self.shared.runtime(),
            SEARCH_TOOLS,
            args,
            CallOptions {
                refuse_hidden: true,
                ..CallOptions::default()
            },
        );
        let outcome = match started {
            Ok(call) => call.await,
            Err(error @ (InvokeError::UnknownTool { .. } | InvokeError::Unavailable { .. })) => {
                return Err(ErrorData::invalid_params(error.to_string(), None));
            }
            Err(error @ InvokeError::InvalidArguments { .. }) => {
                return Ok(CallToolResult::error(vec![ContentBlock::text(
                    error.to_string(),
                )]));
            }
        };
        if self.view.found_tools().len() > before
            && let Err(error) = context.peer.notify_tool_list_changed().await
        {
            tracing::debug!("cannot send a list-changed notification: {error}");
        }
        let text = ContentBlock::text(outcome.model_text());
        Ok(if outcome.is_completed() {
            CallToolResult::success(vec![text])
        } else {
            CallToolResult::error(vec![text])
        })
    }

    /// The level the client wants the request's logs at: the request's own (protocol
    /// 2026-07-28), else the session's; none: no logs.
    fn log_level(&self, context: &RequestContext<RoleServer>) -> Option<LoggingLevel> {
        context.meta.log_level().or(*self
            .log_level
            .lock()
            .unwrap_or_else(PoisonError::into_inner))
    }
}

/// What the call asks next, if it may ask by input-required results (else never).
async fn next_ask(
    asks: &mut Option<mpsc::UnboundedReceiver<input::Asked>>,
) -> Option<input::Asked> {
    match asks {
        Some(asks) => asks.recv().await,
        None => std::future::pending().await,
    }
}

/// Whether the request asks its client by input-required results (protocol
/// 2026-07-28 or later) rather than by server-to-client requests.
fn asks_by_result(context: &RequestContext<RoleServer>) -> bool {
    context
        .protocol_version()
        .is_some_and(|version| version.as_str() >= ProtocolVersion::V_2026_07_28.as_str())
}

/// The next line of a call's log, if it is listened to (else never).
async fn next_line(
    log: &mut Option<CallLog>,
) -> Option<rmcp::model::LoggingMessageNotificationParam> {
    match log {
        Some(log) => log.next().await,
        None => std::future::pending().await,
    }
}

/// Forwards a progress report of the plugin to the client.
async fn report_plugin_progress(
    context: &RequestContext<RoleServer>,
    token: &ProgressToken,
    update: Progress,
) {
    let mut param = ProgressNotificationParam::new(token.clone(), update.done);
    if let Some(total) = update.total {
        param = param.with_total(total);
    }
    if let Some(message) = update.message {
        param = param.with_message(message);
    }
    if let Err(error) = context.peer.notify_progress(param).await {
        tracing::debug!("cannot send a progress notification: {error}");
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
fn mcp_tool(tool: &ListedTool) -> Result<Tool, ErrorData> {
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

/// Whether `schema` declares an `x-mcp-header` on a property reached through
/// `properties` alone, where SEP-2243 allows one.
fn declares_header(schema: &JsonObject) -> bool {
    let Some(serde_json::Value::Object(properties)) = schema.get("properties") else {
        return false;
    };
    properties.values().any(|property| {
        property.as_object().is_some_and(|property| {
            property.contains_key("x-mcp-header") || declares_header(property)
        })
    })
}

/// "Method not found" for `method`, saying what the server offers.
fn not_offered(method: &str) -> ErrorData {
    ErrorData::new(
        ErrorCode::METHOD_NOT_FOUND,
        format!("method not found: '{method}' ({OFFERED})"),
        None,
    )
}

impl ServerHandler for ToolServer {
    fn get_info(&self) -> ServerConfig {
        let mut capabilities = ServerCapabilities::builder()
            .enable_tools()
            .enable_logging();
        if self.shared.options.watch || self.shared.runtime().offers_tool_search() {
            capabilities = capabilities.enable_tool_list_changed();
        }
        let mut info = ServerConfig::new(capabilities.build());
        info.server_info = Implementation::new("toolcell", env!("CARGO_PKG_VERSION"));
        info
    }

    async fn initialize(
        &self,
        request: InitializeRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<InitializeResult, ErrorData> {
        if self.initialized.swap(true, Ordering::Relaxed) {
            return Err(ErrorData::invalid_request(
                "the session is already initialized: initialize comes once, at its start",
                None,
            ));
        }
        context.peer.set_peer_info(request.clone());
        if direct::enrol(&context, self) && !approval::can_ask(&context.peer) {
            let _ = self.direct.set(context.peer.clone());
        }
        self.negotiate_initialize(&request)
    }

    async fn set_level(
        &self,
        request: SetLevelRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        *self
            .log_level
            .lock()
            .unwrap_or_else(PoisonError::into_inner) = Some(request.level);
        Ok(())
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        let visible = self.view.tools(&self.shared.runtime());
        let mut tools = visible
            .iter()
            .map(mcp_tool)
            .collect::<Result<Vec<_>, _>>()?;
        if self.shared.options.floor_tool {
            tools.push(floor_tool());
        }
        Ok(ListToolsResult::with_all_items(tools))
    }

    fn get_tool(&self, name: &str) -> Option<Tool> {
        // rmcp asks for the schema to check a request's `Mcp-Param-*` headers against
        // its arguments (SEP-2243); a tool whose schema declares no header needs no
        // copy of it.
        let runtime = self.shared.runtime();
        let schema = runtime.tool(name)?.params_schema.as_ref()?.as_object()?;
        declares_header(schema).then(|| Tool::new_with_raw(name.to_string(), None, schema.clone()))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        self.run(request, context).await
    }

    async fn complete(
        &self,
        _request: CompleteRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<CompleteResult, ErrorData> {
        Err(not_offered("completion/complete"))
    }

    async fn get_prompt(
        &self,
        _request: GetPromptRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<GetPromptResponse, ErrorData> {
        Err(not_offered("prompts/get"))
    }

    async fn list_prompts(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListPromptsResult, ErrorData> {
        Err(not_offered("prompts/list"))
    }

    async fn list_resources(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListResourcesResult, ErrorData> {
        Err(not_offered("resources/list"))
    }

    async fn list_resource_templates(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListResourceTemplatesResult, ErrorData> {
        Err(not_offered("resources/templates/list"))
    }

    async fn read_resource(
        &self,
        _request: ReadResourceRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<ReadResourceResponse, ErrorData> {
        Err(not_offered("resources/read"))
    }

    async fn on_custom_request(
        &self,
        request: CustomRequest,
        _context: RequestContext<RoleServer>,
    ) -> Result<CustomResult, ErrorData> {
        Err(not_offered(&request.method))
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
