//! `toolcell list`: the loaded tools, as a table for people or as JSON for models.

use std::process::ExitCode;

use clap::Args;

use super::{PluginArgs, usage_error};
use crate::{ToolInfo, schema};

#[derive(Args)]
pub(super) struct ListArgs {
    #[command(flatten)]
    plugins: PluginArgs,
    /// Print OpenAI-style function definitions of the tools the model may see.
    #[arg(long)]
    json: bool,
}

pub(super) fn run(runtime: &tokio::runtime::Runtime, args: ListArgs) -> ExitCode {
    let tools = match args.plugins.load(runtime) {
        Ok(tools) => tools,
        Err(message) => return usage_error(&message),
    };
    if args.json {
        let functions: Vec<serde_json::Value> = tools
            .tools()
            .iter()
            .filter(|tool| !tool.hidden)
            .map(schema::openai_function)
            .collect();
        match serde_json::to_string_pretty(&functions) {
            Ok(text) => println!("{text}"),
            Err(error) => return usage_error(&format!("cannot encode the tool list: {error}")),
        }
    } else {
        print!("{}", table(tools.tools()));
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
