//! `toolcell call`: invoke one tool and print its result.

use std::io::IsTerminal;
use std::process::ExitCode;
use std::sync::Arc;

use clap::Args;

use super::{OutputArgs, PluginArgs, ScopeArgs, prompt, usage_error};
use crate::policy::{Answer, Approvals};
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
/// is denied, unless `--yes`. The progress the plugin reports goes to stderr as it
/// comes (at most every 100 ms).
pub(super) fn run(tokio_rt: &tokio::runtime::Runtime, args: CallArgs) -> ExitCode {
    let builder = match args.plugins.builder(&[]) {
        Ok(builder) => args.output.apply(builder),
        Err(message) => return usage_error(&message),
    };
    let tools = match tokio_rt.block_on(builder.build()) {
        Ok(tools) => tools,
        Err(error) => return usage_error(&error.to_string()),
    };
    let approvals = Some(Arc::new(if args.yes {
        Approvals::new(Some(Arc::new(|_| async { Answer::AllowOnce })))
    } else if std::io::stdin().is_terminal() && std::io::stderr().is_terminal() {
        Approvals::new(Some(Arc::new(prompt::on_terminal)))
    } else {
        Approvals::refusing(
            "it needs approval and there is no terminal to ask on (pass --yes to allow it)",
        )
    }));
    // Without --tools: every tool, hidden ones with --include-hidden; with it, the
    // tools in scope as a model sees them (never a hidden one).
    let started = if args.scope.tools.is_empty() {
        let options = CallOptions {
            refuse_hidden: !args.include_hidden,
            approvals,
            ..CallOptions::default()
        };
        tools.call_with(&args.tool, args.args.as_str(), options)
    } else {
        let options = CallOptions {
            approvals,
            ..CallOptions::default()
        };
        match args.scope.session(&tools) {
            Ok(session) => session.call_with(&tools, &args.tool, args.args.as_str(), options),
            Err(message) => return usage_error(&message),
        }
    };
    let mut call = match started {
        Ok(call) => call,
        Err(error) => return usage_error(&error.to_string()),
    };
    let mut updates = call.progress();
    let mut updates_open = true;
    let outcome = tokio_rt.block_on(async {
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
