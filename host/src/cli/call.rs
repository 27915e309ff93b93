//! `toolcell call`: invoke one tool and print its result.

use std::io::IsTerminal;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;

use clap::Args;

use super::{OutputArgs, PluginArgs, ScopeArgs, output_for_stdout, prompt, usage_error};
use crate::base::atomic_file::{Readers, write_atomically};
use crate::base::wording::terminal_safe;
use crate::output::content::{ContentPart, ResourceContents};
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
    /// Where the images, audio and binary resources of a result of parts are written
    /// (default: a new directory under the system's temporary directory); each is
    /// named on the line that stands for it.
    #[arg(long, value_name = "DIR")]
    parts_dir: Option<PathBuf>,
}

/// Prints the result and exits 0, or prints "[tool failed: MESSAGE]" and exits 1 (a
/// call the permission policy denies included). A tool the policy says to `ask` about
/// is asked about on the terminal (stderr, and an answer from stdin); without one it
/// is denied, unless `--yes`. A plugin's questions (`ctx:ask`) are asked on the
/// terminal too; without one they go unanswered. The progress the plugin reports goes
/// to stderr as it comes (at most every 100 ms). A result of parts prints its text
/// parts, and writes each binary part to a file it names.
pub(super) fn run(tokio_rt: &tokio::runtime::Runtime, args: CallArgs) -> ExitCode {
    let builder = match args.plugins.builder(&[]) {
        Ok(builder) => args.output.apply(builder),
        Err(message) => return usage_error(&message),
    };
    let tools = match tokio_rt.block_on(builder.build()) {
        Ok(tools) => tools,
        Err(error) => return usage_error(&error.to_string()),
    };
    let terminal = std::io::stdin().is_terminal() && std::io::stderr().is_terminal();
    let approvals = if args.yes {
        Approvals::new(Some(Arc::new(|_| async { Answer::AllowOnce })))
    } else if terminal {
        Approvals::new(Some(Arc::new(prompt::on_terminal)))
    } else {
        Approvals::refusing(
            "it needs approval and there is no terminal to ask on (pass --yes to allow it)",
        )
    };
    let approvals = Some(Arc::new(if terminal {
        approvals.with_questions(Arc::new(prompt::question_on_terminal))
    } else {
        approvals
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
    match outcome.content() {
        Some(parts) => match print_parts(parts, args.parts_dir.as_deref()) {
            Ok(()) => {}
            Err(message) => {
                eprintln!("toolcell: {message}");
                return ExitCode::FAILURE;
            }
        },
        None => println!("{}", output_for_stdout(&outcome.to_model_text())),
    }
    if outcome.is_completed() {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}

/// Prints a result's parts in order: text as it is, every other part as one line
/// saying what it is, and where its bytes were written when it has any.
fn print_parts(parts: &[ContentPart], dir: Option<&Path>) -> Result<(), String> {
    let mut dir = dir.map(Path::to_path_buf);
    for (index, part) in parts.iter().enumerate() {
        let text = part.text_view();
        let line = output_for_stdout(&text);
        let Some((bytes, mime_type)) = binary(part) else {
            println!("{line}");
            continue;
        };
        let dir = match &dir {
            Some(dir) => dir.clone(),
            None => {
                let made = tempfile::Builder::new()
                    .prefix("toolcell-call-")
                    .tempdir()
                    .map_err(|error| format!("cannot make a directory for the parts: {error}"))?
                    .keep();
                dir = Some(made.clone());
                made
            }
        };
        let path = dir.join(format!(
            "part-{}{}",
            index + 1,
            extension(mime_type.unwrap_or_default())
        ));
        write_atomically(&path, bytes, Readers::Owner).map_err(|error| error.to_string())?;
        println!("{line} -> {}", path.display());
    }
    Ok(())
}

/// A part's bytes and MIME type, when it carries bytes.
fn binary(part: &ContentPart) -> Option<(&[u8], Option<&str>)> {
    match part {
        ContentPart::Image { data, mime_type } | ContentPart::Audio { data, mime_type } => {
            Some((data, Some(mime_type)))
        }
        ContentPart::Resource {
            contents: ResourceContents::Blob(data),
            mime_type,
            ..
        } => Some((data, mime_type.as_deref())),
        _ => None,
    }
}

/// The file extension of a MIME type (`.png` for `image/png`); none for one it does
/// not know or one that is no safe file name.
fn extension(mime_type: &str) -> String {
    let subtype = mime_type
        .split(['/', ';'])
        .nth(1)
        .unwrap_or_default()
        .trim();
    let subtype = subtype.strip_prefix("x-").unwrap_or(subtype);
    let known = match subtype {
        "jpeg" => "jpg",
        "svg+xml" => "svg",
        "mpeg" => "mp3",
        other => other,
    };
    if !known.is_empty() && known.len() <= 8 && known.bytes().all(|b| b.is_ascii_alphanumeric()) {
        format!(".{known}")
    } else {
        String::new()
    }
}

/// `progress: DONE[/TOTAL][: MESSAGE]`, the plugin's message safe for a terminal.
fn progress_line(progress: &Progress) -> String {
    let mut line = format!("progress: {}", progress.done);
    if let Some(total) = progress.total {
        line.push_str(&format!("/{total}"));
    }
    if let Some(message) = &progress.message {
        line.push_str(&format!(": {}", terminal_safe(message)));
    }
    line
}
