//! `toolcell list`: the loaded tools, as a table for people or as JSON for models.

use std::process::ExitCode;

use clap::{Args, ValueEnum};

use super::{PluginArgs, usage_error};
use crate::ToolInfo;
use crate::schema::{self, Format};

#[derive(Args)]
pub(super) struct ListArgs {
    #[command(flatten)]
    plugins: PluginArgs,
    /// How to print the tools: a table, or the definitions (of the tools that are not
    /// hidden) as a provider's API takes them.
    #[arg(long, value_enum, default_value_t = ListFormat::Table)]
    format: ListFormat,
    /// The same as --format openai.
    #[arg(long, conflicts_with = "format")]
    json: bool,
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

pub(super) fn run(runtime: &tokio::runtime::Runtime, args: ListArgs) -> ExitCode {
    let tools = match args.plugins.load(runtime) {
        Ok(tools) => tools,
        Err(message) => return usage_error(&message),
    };
    // Tools the permission policy denies are not listed, in any format.
    let listed: Vec<ToolInfo> = tools.listed_tools().cloned().collect();
    let format = match (args.json, args.format) {
        (true, _) | (false, ListFormat::Openai) => Format::OpenAi,
        (false, ListFormat::Anthropic) => Format::Anthropic,
        (false, ListFormat::Mcp) => Format::Mcp,
        (false, ListFormat::Table) => {
            print!("{}", table(&listed));
            return ExitCode::SUCCESS;
        }
    };
    match serde_json::to_string_pretty(&schema::definitions(&listed, format)) {
        Ok(text) => println!("{text}"),
        Err(error) => return usage_error(&format!("cannot encode the tool list: {error}")),
    }
    ExitCode::SUCCESS
}

/// The human table: name, plugin, flags, first line of the description.
fn table(tools: &[ToolInfo]) -> String {
    let header = ["NAME", "PLUGIN", "FLAGS", "DESCRIPTION"].map(str::to_string);
    let rows: Vec<[String; 4]> = tools
        .iter()
        .map(|tool| {
            [
                tool.name.clone(),
                tool.plugin.clone(),
                flags(tool),
                tool.description
                    .lines()
                    .next()
                    .unwrap_or_default()
                    .to_string(),
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
    if tools.is_empty() {
        out.push_str("(no tools)\n");
    }
    out
}

fn flags(tool: &ToolInfo) -> String {
    let mut flags = Vec::new();
    if tool.hidden {
        flags.push("hidden".to_string());
    }
    if tool.no_prompt {
        flags.push("no-prompt".to_string());
    }
    if let Some(timeout) = tool.timeout {
        flags.push(format!("timeout={}ms", timeout.as_millis()));
    }
    if flags.is_empty() {
        "-".to_string()
    } else {
        flags.join(",")
    }
}
