//! `toolcell serve`: an MCP server over stdio (default) or streamable HTTP.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::{Arc, RwLock};
use std::time::Duration;

use clap::Args;

use super::{OutputArgs, PluginArgs, ScopeArgs, usage_error, warn_unmatched};
use crate::mcp::{
    self, AskFallback, ConnectionLimits, HttpOptions, HttpServer, Lifecycle, LogRouter,
    ServeOptions, ServerState,
};
use crate::{Runtime, RuntimeBuilder, Scope, Session, runtime::reload};

/// How long calls in flight get to finish after SIGTERM, by default: under the 30 s
/// Kubernetes gives a pod by default, with room for the rest of the exit.
const DEFAULT_SHUTDOWN_GRACE_SECS: u64 = 20;

/// The environment variable that may hold the bearer token of `--http`.
const TOKEN_VARIABLE: &str = "TOOLCELL_TOKEN";

/// The shortest bearer token accepted.
const MIN_TOKEN_CHARS: usize = 16;

#[derive(Args)]
pub(super) struct ServeArgs {
    #[command(flatten)]
    plugins: PluginArgs,
    #[command(flatten)]
    scope: ScopeArgs,
    #[command(flatten)]
    output: OutputArgs,
    /// Serve streamable HTTP at IP:PORT (endpoint /mcp; port 0 picks a free port)
    /// instead of stdio. Loopback addresses only, unless --allow-remote.
    #[arg(long, value_name = "IP:PORT")]
    http: Option<SocketAddr>,
    /// Allow --http on an address that is not loopback. Needs a bearer token
    /// (--token-file or TOOLCELL_TOKEN): whoever has it can run every tool.
    #[arg(long, requires = "http")]
    allow_remote: bool,
    /// With --http: every request to /mcp must carry `Authorization: Bearer TOKEN`,
    /// TOKEN being this file's content (surrounding whitespace removed; at least 16
    /// characters). The environment variable TOOLCELL_TOKEN can hold it instead.
    #[arg(long, value_name = "FILE", requires = "http")]
    token_file: Option<PathBuf>,
    /// With --http: how many sessions may be open at once; another `initialize` is
    /// refused (HTTP 503) until one ends.
    #[arg(long, value_name = "N", requires = "http", default_value_t = mcp::DEFAULT_MAX_SESSIONS, value_parser = clap::value_parser!(u32).range(1..))]
    max_sessions: u32,
    /// List only the tools that are not deferred, and `search_tools`, which finds the
    /// others and adds them to the session's list (`[tools] deferred`; a plugin's
    /// `[plugins.ID] defer` decides for its own tools).
    #[arg(long)]
    deferred: bool,
    /// How many connections each listener (--http, --metrics) keeps open at once;
    /// another is answered 503 and closed.
    #[arg(long, value_name = "N", default_value_t = mcp::DEFAULT_MAX_CONNECTIONS, value_parser = clap::value_parser!(u32).range(1..))]
    max_connections: u32,
    /// How many connections one peer address may keep open at once on each listener;
    /// another is answered 503 and closed.
    #[arg(long, value_name = "N", default_value_t = mcp::DEFAULT_MAX_CONNECTIONS_PER_PEER, value_parser = clap::value_parser!(u32).range(1..))]
    max_connections_per_peer: u32,
    /// Reload a plugin when its file is added, changed or removed, and tell clients
    /// (notifications/tools/list_changed).
    #[arg(long)]
    watch: bool,
    /// With --http: on SIGINT or SIGTERM, how long requests in flight (tool calls) get
    /// to finish before they are cancelled and the server exits.
    #[arg(long, value_name = "SECS", default_value_t = DEFAULT_SHUTDOWN_GRACE_SECS, requires = "http")]
    shutdown_grace: u64,
    /// What a call the permission policy says to `ask` about does when the client
    /// cannot ask its user (it does not support elicitation): allow or deny
    #[arg(long, value_enum, value_name = "ALLOW|DENY", default_value_t = AskFallback::Deny)]
    ask_fallback: AskFallback,
    /// How many calls may wait at once for their MCP client's answer to a question or
    /// an approval (protocol 2026-07-28, input-required results); past that, the
    /// question is unanswered and the approval denied, with the reason.
    #[arg(long, value_name = "N", default_value_t = mcp::DEFAULT_MAX_WAITING_CALLS)]
    max_waiting_calls: u32,
    /// How long a call waits for its MCP client's answer (protocol 2026-07-28) before
    /// it is cancelled.
    #[arg(long, value_name = "SECS", default_value_t = mcp::DEFAULT_WAITING_CALL_TTL.as_secs(), value_parser = clap::value_parser!(u64).range(1..))]
    waiting_call_ttl: u64,
    /// Also serve the runtime's metrics in Prometheus' text format at
    /// http://IP:PORT/metrics. Loopback addresses only, unless --allow-remote-metrics
    #[arg(long, value_name = "IP:PORT")]
    metrics: Option<SocketAddr>,
    /// Allow --metrics on an address that is not loopback: whoever reaches it reads
    /// which tools exist and how their calls went (it runs nothing)
    #[arg(long, requires = "metrics")]
    allow_remote_metrics: bool,
    /// Benchmarks only: also serve the tool "toolcell-floor", which answers without
    /// entering a sandbox.
    #[arg(long, hide = true)]
    bench_floor_tool: bool,
}

/// Serves until stdin ends (stdio) or the process is interrupted (HTTP). Exit code 0,
/// or 2 when the server could not start.
pub(super) fn run(tokio_rt: &tokio::runtime::Runtime, args: ServeArgs) -> ExitCode {
    if let Some(addr) = args.http
        && !addr.ip().is_loopback()
        && !args.allow_remote
    {
        return usage_error(&format!(
            "--http {addr} is not a loopback address; anyone who can reach it could run the tools (pass --allow-remote to serve there anyway)"
        ));
    }
    if let Some(addr) = args.metrics
        && !addr.ip().is_loopback()
        && !args.allow_remote_metrics
    {
        return usage_error(&format!(
            "--metrics {addr} is not a loopback address; anyone who can reach it could read which tools run and how (pass --allow-remote-metrics to serve there anyway)"
        ));
    }
    let token = match args.http.map(|_| bearer_token(args.token_file.as_deref())) {
        Some(Ok(token)) => token,
        Some(Err(message)) => return usage_error(&message),
        None => None,
    };
    if args.allow_remote && token.is_none() {
        return usage_error(&format!(
            "--allow-remote needs a bearer token: give it with --token-file FILE or in {TOKEN_VARIABLE}"
        ));
    }
    // Plugins log to the router, which forwards to the MCP clients that ask.
    let logs = Arc::new(LogRouter::default());
    let mut builder = match args.plugins.builder(&[]) {
        Ok(builder) => {
            let builder = args.output.apply(builder).log_listener(logs.clone());
            if args.deferred {
                builder.deferred(true)
            } else {
                builder
            }
        }
        Err(message) => return usage_error(&message),
    };
    // Whoever could read it could call every tool; whoever could replace it, lock
    // every client out.
    if let Some(file) = &args.token_file {
        builder = builder.host_file("the bearer token file", file);
    }
    let scope = match args.scope.scope() {
        Ok(scope) => scope,
        Err(message) => return usage_error(&message),
    };
    let options = ServeOptions {
        watch: args.watch,
        floor_tool: args.bench_floor_tool,
        ask_fallback: args.ask_fallback,
        max_waiting_calls: args.max_waiting_calls,
        waiting_call_ttl: Duration::from_secs(args.waiting_call_ttl),
    };
    let connections = ConnectionLimits {
        max: args.max_connections,
        per_peer: args.max_connections_per_peer,
    };
    let result = tokio_rt.block_on(async {
        let metrics = match args.metrics {
            Some(addr) => Some(Metrics::bind(addr, connections).await?),
            None => None,
        };
        let serving = Serving {
            logs,
            options,
            scope,
            metrics,
        };
        match args.http {
            Some(addr) => {
                let grace = Duration::from_secs(args.shutdown_grace);
                let http = HttpOptions {
                    any_host: args.allow_remote,
                    max_sessions: args.max_sessions,
                    token,
                    connections,
                };
                serve_http(builder, serving, addr, http, grace).await
            }
            None => {
                let tools = builder.build().await.map_err(|error| error.to_string())?;
                let (tools, shared) = serving.share(tools, Lifecycle::new());
                let _watcher = watch(args.watch, &tools, &shared, None)?;
                mcp::serve_stdio(shared).await
            }
        }
    });
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(message) => usage_error(&message),
    }
}

/// The bearer token of `--token-file`, else of the environment, if either gives one.
fn bearer_token(file: Option<&Path>) -> Result<Option<Arc<str>>, String> {
    let (token, source) = match file {
        Some(file) => {
            let text = std::fs::read_to_string(file).map_err(|error| {
                format!("--token-file {}: cannot read it: {error}", file.display())
            })?;
            (text, format!("--token-file {}", file.display()))
        }
        None => match std::env::var(TOKEN_VARIABLE) {
            Ok(text) if !text.is_empty() => (text, TOKEN_VARIABLE.to_string()),
            _ => return Ok(None),
        },
    };
    let token = token.trim();
    if token.chars().count() < MIN_TOKEN_CHARS || token.chars().any(char::is_whitespace) {
        return Err(format!(
            "{source}: a bearer token is at least {MIN_TOKEN_CHARS} characters, without whitespace"
        ));
    }
    Ok(Some(Arc::from(token)))
}

/// Starts hot reload when asked; `lifecycle` is told when a reload is being applied.
fn watch(
    enabled: bool,
    tools: &Arc<RwLock<Runtime>>,
    shared: &ServerState,
    lifecycle: Option<Lifecycle>,
) -> Result<Option<reload::Watcher>, String> {
    if !enabled {
        return Ok(None);
    }
    let notify = shared.clone();
    reload::watch(
        tools.clone(),
        move || notify.tools_changed(),
        move |started| {
            if let Some(lifecycle) = &lifecycle {
                lifecycle.reloading(started);
            }
        },
    )
    .map(Some)
    .map_err(|error| error.to_string())
}

/// Listens at once (the probes answer while the plugins load), serves MCP once they
/// are loaded, and on SIGINT or SIGTERM drains: the listening socket closes, new
/// tool calls are refused, requests in flight get `grace` to finish, then what is left
/// is cancelled and the server exits.
async fn serve_http(
    builder: RuntimeBuilder,
    loaded: Serving,
    addr: SocketAddr,
    http: HttpOptions,
    grace: Duration,
) -> Result<(), String> {
    let options = loaded.options;
    let listener = std::net::TcpListener::bind(addr)
        .map_err(|error| format!("cannot listen on {addr}: {error}"))?;
    let bound = listener
        .local_addr()
        .map_err(|error| format!("cannot listen on {addr}: {error}"))?;
    if !bound.ip().is_loopback() {
        tracing::warn!(
            "serving MCP on {bound}, which is not loopback: whoever can reach it and has the bearer token can run every tool"
        );
    }
    let lifecycle = Lifecycle::new();
    let server = HttpServer::new(lifecycle.clone(), http);
    let serving = server
        .clone()
        .spawn(listener)
        .map_err(|error| format!("cannot serve on {addr}: {error}"))?;
    eprintln!(
        "toolcell: listening on http://{bound} ({} and {} answer; loading plugins)",
        mcp::HEALTH_ENDPOINT,
        mcp::READY_ENDPOINT
    );
    let mut signal = std::pin::pin!(interrupted());
    let tools = tokio::select! {
        built = builder.build() => built.map_err(|error| error.to_string())?,
        // Nothing is in flight before the plugins are loaded.
        () = &mut signal => return Ok(()),
    };
    let (tools, shared) = loaded.share(tools, lifecycle.clone());
    let _watcher = watch(options.watch, &tools, &shared, Some(lifecycle.clone()))?;
    server.open(shared.clone());
    eprintln!("toolcell: serving MCP at http://{bound}{}", mcp::ENDPOINT);
    signal.await;
    lifecycle.drain();
    server.stop_accepting();
    let in_flight = lifecycle.in_flight();
    if in_flight > 0 {
        tracing::info!(
            "shutting down: waiting up to {grace:?} for {in_flight} request(s) in flight"
        );
    }
    if tokio::time::timeout(grace, lifecycle.idle()).await.is_err() {
        tracing::warn!(
            "{} request(s) still in flight after the shutdown grace period of {} s; cancelling them",
            lifecycle.in_flight(),
            grace.as_secs()
        );
    }
    shared.shut_down();
    server.close();
    serving.await;
    Ok(())
}

/// What either transport serves once the plugins are loaded.
struct Serving {
    logs: Arc<LogRouter>,
    options: ServeOptions,
    scope: Scope,
    metrics: Option<Metrics>,
}

impl Serving {
    /// Warns about scope globs that match no tool, starts the metrics endpoint, and
    /// shares `tools` with the MCP sessions.
    fn share(self, tools: Runtime, lifecycle: Lifecycle) -> (Arc<RwLock<Runtime>>, ServerState) {
        warn_unmatched(&Session::new().with_scope(self.scope.clone()), &tools);
        let tools = Arc::new(RwLock::new(tools));
        if let Some(metrics) = self.metrics {
            metrics.serve(&tools);
        }
        let shared = ServerState::new(tools.clone(), self.logs, self.options, lifecycle)
            .with_scope(self.scope);
        (tools, shared)
    }
}

/// The metrics endpoint of `--metrics`: its socket is bound before the plugins load
/// (a busy port is a usage error at once), and it serves once they are loaded.
struct Metrics {
    listener: tokio::net::TcpListener,
    bound: SocketAddr,
    connections: ConnectionLimits,
}

impl Metrics {
    async fn bind(addr: SocketAddr, connections: ConnectionLimits) -> Result<Metrics, String> {
        let cannot = |error: std::io::Error| format!("--metrics: cannot listen on {addr}: {error}");
        let listener = tokio::net::TcpListener::bind(addr).await.map_err(cannot)?;
        let bound = listener.local_addr().map_err(cannot)?;
        Ok(Metrics {
            listener,
            bound,
            connections,
        })
    }

    /// Serves the metrics of `tools` until the server exits.
    fn serve(self, tools: &Arc<RwLock<Runtime>>) {
        tokio::spawn(mcp::serve_metrics(
            self.listener,
            tools.clone(),
            self.connections,
        ));
        eprintln!(
            "toolcell: serving metrics at http://{}{}",
            self.bound,
            mcp::METRICS_ENDPOINT
        );
    }
}

/// Resolves on SIGINT or SIGTERM.
async fn interrupted() {
    use tokio::signal::unix::{SignalKind, signal};
    match signal(SignalKind::terminate()) {
        Ok(mut terminate) => {
            tokio::select! {
                _ = tokio::signal::ctrl_c() => {}
                _ = terminate.recv() => {}
            }
        }
        Err(_) => {
            let _ = tokio::signal::ctrl_c().await;
        }
    }
}
