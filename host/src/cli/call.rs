//! `toolcell call`: invoke one tool and print its result.

use std::process::ExitCode;

use clap::Args;

use super::{OutputArgs, PluginArgs, ScopeArgs, usage_error};
use crate::{CallOptions, Progress};

#[derive(Args)]
pub(super) struct CallArgs {
    #[command(flatten)]
    plugins: PluginArgs,
    #[command(flatten)]
    scope: ScopeArgs,
    #[command(flatten)]
    output: OutputArgs,
    /// The tool to invoke: its name, an alias, its path PLUGIN-ID/TOOL, or the wire
    /// name `list` shows.
    tool: String,
    /// The arguments, a JSON object.
    #[arg(default_value = "{}")]
    args: String,
    /// Also reach a tool registered with `hidden = true` (for testing: hidden tools
    /// are for plugin code, and a model, through MCP, cannot call them).
    #[arg(long)]
    include_hidden: bool,
}

/// Prints the result and exits 0, or prints "[tool failed: MESSAGE]" and exits 1. The
/// progress the plugin reports goes to stderr as it comes (at most every 100 ms).
pub(super) fn run(runtime: &tokio::runtime::Runtime, args: CallArgs) -> ExitCode {
    let builder = match args.plugins.builder(&[]) {
        Ok(builder) => args.output.apply(builder),
        Err(message) => return usage_error(&message),
    };
    let tools = match runtime.block_on(builder.build()) {
        Ok(tools) => tools,
        Err(error) => return usage_error(&error.to_string()),
    };
    // Without --tools: every tool, hidden ones with --include-hidden; with it, the
    // tools in scope as a model sees them (never a hidden one).
    let started = if args.scope.tools.is_empty() {
        let options = CallOptions {
            refuse_hidden: !args.include_hidden,
            ..CallOptions::default()
        };
        tools.call_with(&args.tool, &args.args, options)
    } else {
        match args.scope.session(&tools) {
            Ok(session) => session.call(&tools, &args.tool, &args.args),
            Err(message) => return usage_error(&message),
        }
    };
    let mut call = match started {
        Ok(call) => call,
        Err(error) => return usage_error(&error.to_string()),
    };
    let mut updates = call.progress();
    let mut updates_open = true;
    let outcome = runtime.block_on(async {
        loop {
            tokio::select! {
                outcome = &mut call => break outcome,
                update = updates.next(), if updates_open => match update {
                    Some(progress) => eprintln!("{}", progress_line(&progress)),
                    None => updates_open = false,
                },
            }
        }
    });
    if let Some(progress) = updates.unread() {
        eprintln!("{}", progress_line(&progress));
    }
    println!("{}", outcome.to_model_text());
    if outcome.is_completed() {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}

/// `progress: DONE[/TOTAL][: MESSAGE]`.
fn progress_line(progress: &Progress) -> String {
    let mut line = format!("progress: {}", progress.done);
    if let Some(total) = progress.total {
        line.push_str(&format!("/{total}"));
    }
    if let Some(message) = &progress.message {
        line.push_str(&format!(": {message}"));
    }
    line
}
