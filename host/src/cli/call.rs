//! `toolcell call`: invoke one tool and print its result.

use std::process::ExitCode;

use clap::Args;

use super::{PluginArgs, usage_error};
use crate::CallOptions;

#[derive(Args)]
pub(super) struct CallArgs {
    #[command(flatten)]
    plugins: PluginArgs,
    /// The tool to invoke.
    tool: String,
    /// The arguments, a JSON object.
    #[arg(default_value = "{}")]
    args: String,
    /// Also reach a tool registered with `hidden = true` (for testing: hidden tools
    /// are for plugin code, and a model, through MCP, cannot call them).
    #[arg(long)]
    include_hidden: bool,
}

/// Prints the result and exits 0, or prints "[tool failed: MESSAGE]" and exits 1.
pub(super) fn run(runtime: &tokio::runtime::Runtime, args: CallArgs) -> ExitCode {
    let tools = match args.plugins.load(runtime) {
        Ok(tools) => tools,
        Err(message) => return usage_error(&message),
    };
    let options = CallOptions {
        refuse_hidden: !args.include_hidden,
        ..CallOptions::default()
    };
    let call = match tools.call_with(&args.tool, &args.args, options) {
        Ok(call) => call,
        Err(error) => return usage_error(&error.to_string()),
    };
    let outcome = runtime.block_on(call);
    println!("{}", outcome.to_model_text());
    if outcome.is_completed() {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}
