//! `toolcell check`: load plugins exactly as `call` would and report every problem.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::Args;

use super::{PluginArgs, usage_error};
use crate::Severity;
use crate::base::wording::terminal_safe;

#[derive(Args)]
pub(super) struct CheckArgs {
    #[command(flatten)]
    plugins: PluginArgs,
    /// Plugin directories to check (besides any --plugins).
    #[arg(value_name = "DIR")]
    dirs: Vec<PathBuf>,
}

/// Prints one line per diagnostic (`error[code] message`) and a summary; exits 1 when
/// there is an error, 0 otherwise (warnings included).
pub(super) fn run(tokio_rt: &tokio::runtime::Runtime, args: CheckArgs) -> ExitCode {
    let tools = match args.plugins.load_with(tokio_rt, &args.dirs) {
        Ok(tools) => tools,
        Err(message) => return usage_error(&message),
    };
    let count = |severity| {
        tools
            .diagnostics()
            .iter()
            .filter(|diagnostic| diagnostic.severity == severity)
            .count()
    };
    for diagnostic in tools.diagnostics() {
        println!(
            "{}[{}] {}",
            diagnostic.severity.as_str(),
            diagnostic.kind.code(),
            terminal_safe(&diagnostic.message)
        );
    }
    let (errors, warnings) = (count(Severity::Error), count(Severity::Warning));
    println!(
        "{} plugin{} loaded, {} tool{}; {errors} error{}, {warnings} warning{}",
        tools.plugins().len(),
        plural(tools.plugins().len()),
        tools.tools().len(),
        plural(tools.tools().len()),
        plural(errors),
        plural(warnings),
    );
    if tools.has_errors() {
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    }
}

fn plural(count: usize) -> &'static str {
    if count == 1 { "" } else { "s" }
}
