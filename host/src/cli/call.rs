//! `toolcell call`: invoke one tool and print its result.

use std::io::IsTerminal;
use std::process::ExitCode;
use std::sync::Arc;

use clap::Args;

use super::{PluginArgs, prompt, usage_error};
use crate::CallOptions;
use crate::policy::{Answer, Approvals};

#[derive(Args)]
pub(super) struct CallArgs {
    #[command(flatten)]
    plugins: PluginArgs,
    /// The tool to invoke.
    tool: String,
    /// The arguments, a JSON object.
    #[arg(default_value = "{}")]
    args: String,
    /// Answer every permission question (a tool the policy says to `ask` about) with
    /// "allow", instead of asking on the terminal
    #[arg(long, short = 'y')]
    yes: bool,
    /// Also reach a tool registered with `hidden = true` (for testing: hidden tools
    /// are for plugin code, and a model, through MCP, cannot call them).
    #[arg(long)]
    include_hidden: bool,
}

/// Prints the result and exits 0, or prints "[tool failed: MESSAGE]" and exits 1 (a
/// call the permission policy denies included). A tool the policy says to `ask` about
/// is asked about on the terminal (stderr, and an answer from stdin); without one it
/// is denied, unless `--yes`.
pub(super) fn run(runtime: &tokio::runtime::Runtime, args: CallArgs) -> ExitCode {
    let tools = match args.plugins.load(runtime) {
        Ok(tools) => tools,
        Err(message) => return usage_error(&message),
    };
    let approvals = if args.yes {
        Approvals::new(Some(Arc::new(|_| async { Answer::AllowOnce })))
    } else if std::io::stdin().is_terminal() && std::io::stderr().is_terminal() {
        Approvals::new(Some(Arc::new(prompt::on_terminal)))
    } else {
        Approvals::refusing(
            "it needs approval and there is no terminal to ask on (pass --yes to allow it)",
        )
    };
    let options = CallOptions {
        refuse_hidden: !args.include_hidden,
        approvals: Some(Arc::new(approvals)),
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
