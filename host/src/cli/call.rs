//! `toolcell call`: invoke one tool and print its result.

use std::process::ExitCode;

use clap::Args;

use super::{OutputArgs, PluginArgs, ScopeArgs, usage_error};
use crate::Progress;

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
    // Without --tools the call is made as before: every tool, hidden ones included.
    let started = if args.scope.tools.is_empty() {
        tools.call(&args.tool, &args.args)
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
