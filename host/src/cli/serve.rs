//! `toolcell serve`: an MCP server over stdio (default) or streamable HTTP.

use std::net::SocketAddr;
use std::process::ExitCode;
use std::sync::{Arc, RwLock};

use clap::Args;

use super::{PluginArgs, usage_error};
use crate::mcp::{self, ServeOptions, Shared};
use crate::reload;

#[derive(Args)]
pub(super) struct ServeArgs {
    #[command(flatten)]
    plugins: PluginArgs,
    /// Serve streamable HTTP at IP:PORT (endpoint /mcp; port 0 picks a free port)
    /// instead of stdio. Loopback addresses only, unless --allow-remote.
    #[arg(long, value_name = "IP:PORT")]
    http: Option<SocketAddr>,
    /// Allow --http on an address that is not loopback. There is no authentication:
    /// whoever can reach the address can run every tool.
    #[arg(long, requires = "http")]
    allow_remote: bool,
    /// Reload a plugin when its file is added, changed or removed, and tell clients
    /// (notifications/tools/list_changed).
    #[arg(long)]
    watch: bool,
    /// Benchmarks only: also serve the tool "toolcell-floor", which answers without
    /// entering a sandbox.
    #[arg(long, hide = true)]
    bench_floor_tool: bool,
}

/// Serves until stdin ends (stdio) or the process is interrupted (HTTP). Exit code 0,
/// or 2 when the server could not start.
pub(super) fn run(runtime: &tokio::runtime::Runtime, args: ServeArgs) -> ExitCode {
    if let Some(addr) = args.http
        && !addr.ip().is_loopback()
        && !args.allow_remote
    {
        return usage_error(&format!(
            "--http {addr} is not a loopback address; anyone who can reach it could run the tools (pass --allow-remote to serve there anyway)"
        ));
    }
    let tools = match args.plugins.load(runtime) {
        Ok(tools) => Arc::new(RwLock::new(tools)),
        Err(message) => return usage_error(&message),
    };
    let shared = Shared::new(
        tools.clone(),
        ServeOptions {
            watch: args.watch,
            floor_tool: args.bench_floor_tool,
        },
    );
    let result = runtime.block_on(async {
        let _watcher = if args.watch {
            let notify = shared.clone();
            Some(reload::watch(tools, move || notify.tools_changed())?)
        } else {
            None
        };
        match args.http {
            Some(addr) => serve_http(shared, addr, args.allow_remote).await,
            None => mcp::serve_stdio(shared).await,
        }
    });
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(message) => usage_error(&message),
    }
}

async fn serve_http(shared: Shared, addr: SocketAddr, remote: bool) -> Result<(), String> {
    let listener = tokio::net::TcpListener::bind(addr)
        .await
        .map_err(|error| format!("cannot listen on {addr}: {error}"))?;
    let bound = listener
        .local_addr()
        .map_err(|error| format!("cannot listen on {addr}: {error}"))?;
    if remote && !bound.ip().is_loopback() {
        tracing::warn!(
            "serving MCP on {bound}, which is not loopback: anyone who can reach it can run every tool"
        );
    }
    eprintln!("toolcell: serving MCP at http://{bound}{}", mcp::ENDPOINT);
    let stop = shared.clone();
    tokio::spawn(async move {
        interrupted().await;
        stop.shut_down();
    });
    mcp::serve_http(shared, listener, remote).await;
    Ok(())
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
