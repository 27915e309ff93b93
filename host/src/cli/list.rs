//! `toolcell list`: the loaded tools, as a table for people or as JSON for models.

use std::process::ExitCode;

use clap::{Args, ValueEnum};

use super::{PluginArgs, ScopeArgs, usage_error};
use crate::base::wording::terminal_safe;
use crate::tool::schema::{self, Format};
use crate::tool::strict_schema as strict;
use crate::{ListedTool, ToolInfo};

#[derive(Args)]
pub(super) struct ListArgs {
    #[command(flatten)]
    plugins: PluginArgs,
    #[command(flatten)]
    scope: ScopeArgs,
    /// How to print the tools: a table, or the definitions (of the tools that are not
    /// hidden) as a provider's API takes them.
    #[arg(long, value_enum, default_value_t = ListFormat::Table)]
    format: ListFormat,
    /// The same as --format openai.
    #[arg(long, conflicts_with = "format")]
    json: bool,
    /// With --format openai: OpenAI's strict mode (every property required, optional
    /// ones nullable, no other properties); a tool whose schema strict mode cannot
    /// express is left out with an error on stderr, and the exit code is 1.
    #[arg(long)]
    strict: bool,
}

/// What `--format` accepts.
#[derive(Clone, Copy, PartialEq, Eq, ValueEnum)]
enum ListFormat {
    /// A table for people (every tool, hidden ones included).
    Table,
    /// OpenAI function definitions: [{"type":"function","function":{name, description, parameters}}].
    Openai,
    /// Anthropic tool definitions: [{name, description, input_schema}].
    Anthropic,
    /// MCP tools as tools/list gives them: [{name, description, inputSchema}].
    Mcp,
}

pub(super) fn run(tokio_rt: &tokio::runtime::Runtime, args: ListArgs) -> ExitCode {
    let tools = match args.plugins.load(tokio_rt) {
        Ok(tools) => tools,
        Err(message) => return usage_error(&message),
    };
    let session = match args.scope.session(&tools) {
        Ok(session) => session,
        Err(message) => return usage_error(&message),
    };
    let listed = session.tools(&tools);
    let format = match (args.json, args.format) {
        (true, _) | (false, ListFormat::Openai) => Format::OpenAi,
        (false, ListFormat::Anthropic) => Format::Anthropic,
        (false, ListFormat::Mcp) => Format::Mcp,
        (false, ListFormat::Table) => {
            if args.strict {
                return usage_error("--strict needs --format openai");
            }
            // Without --tools the table also shows hidden tools, which no model sees.
            let hidden = args.scope.tools.is_empty().then(|| tools.hidden_tools());
            print!("{}", table(&listed, hidden.as_deref().unwrap_or_default()));
            return ExitCode::SUCCESS;
        }
    };
    let mut code = ExitCode::SUCCESS;
    let definitions = if args.strict {
        if format != Format::OpenAi {
            return usage_error("--strict needs --format openai");
        }
        let mut functions = Vec::new();
        for tool in &listed {
            match strict::openai_function(tool) {
                Ok(function) => functions.push(function),
                Err(refusal) => {
                    eprintln!("error: {}", terminal_safe(&refusal.to_string()));
                    code = ExitCode::FAILURE;
                }
            }
        }
        serde_json::Value::Array(functions)
    } else {
        schema::definitions(&listed, format)
    };
    match serde_json::to_string_pretty(&definitions) {
        Ok(text) => println!("{text}"),
        Err(error) => return usage_error(&format!("cannot encode the tool list: {error}")),
    }
    code
}

/// The human table: the name shown, plugin, flags, first line of the description; the
/// listed tools, then the hidden ones.
fn table(listed: &[ListedTool], hidden: &[ListedTool]) -> String {
    let header = ["NAME", "PLUGIN", "FLAGS", "DESCRIPTION"].map(str::to_string);
    let rows: Vec<[String; 4]> = listed
        .iter()
        .chain(hidden)
        .map(|tool| {
            [
                tool.name.clone(),
                tool.tool.plugin.clone(),
                flags(tool),
                terminal_safe(tool.description.lines().next().unwrap_or_default()).into_owned(),
            ]
        })
        .collect();
    let widths: Vec<usize> = (0..3)
        .map(|column| {
            std::iter::once(&header)
                .chain(&rows)
                .map(|row| row[column].chars().count())
                .max()
                .unwrap_or(0)
        })
        .collect();
    let mut out = String::new();
    for row in std::iter::once(&header).chain(&rows) {
        for (column, width) in widths.iter().enumerate() {
            out.push_str(&format!("{:<width$}  ", row[column]));
        }
        out.push_str(&row[3]);
        out.push('\n');
    }
    if rows.is_empty() {
        out.push_str("(no tools)\n");
    }
    out
}

/// The tool's flags; `path=PLUGIN-ID/TOOL` when it is shown under another name than
/// its own.
fn flags(listed: &ListedTool) -> String {
    let tool: &ToolInfo = &listed.tool;
    let mut flags = Vec::new();
    if listed.name != tool.name {
        flags.push(format!("path={}", tool.path));
    }
    if tool.hidden {
        flags.push("hidden".to_string());
    }
    if tool.no_prompt {
        flags.push("no-prompt".to_string());
    }
    if let Some(timeout) = tool.timeout {
        flags.push(format!("timeout={}ms", timeout.as_millis()));
    }
    if tool.output_schema.is_some() {
        flags.push("structured".to_string());
    }
    if flags.is_empty() {
        "-".to_string()
    } else {
        flags.join(",")
    }
}
