//! `toolcell call`: invoke one tool and print its result.

use std::process::ExitCode;

use clap::Args;

use super::{PluginArgs, usage_error};

#[derive(Args)]
pub(super) struct CallArgs {
    #[command(flatten)]
    plugins: PluginArgs,
    /// The tool to invoke.
    tool: String,
    /// The arguments, a JSON object.
    #[arg(default_value = "{}")]
    args: String,
}

/// Prints the result and exits 0, or prints "[tool failed: MESSAGE]" and exits 1.
pub(super) fn run(runtime: &tokio::runtime::Runtime, args: CallArgs) -> ExitCode {
    let tools = match args.plugins.load(runtime) {
        Ok(tools) => tools,
        Err(message) => return usage_error(&message),
    };
    let call = match tools.call(&args.tool, &args.args) {
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
