//! `toolcell list`: the table, and each provider's tool definitions.

use serde_json::json;

use crate::support::*;

#[test]
fn list_prints_a_table_of_name_plugin_flags_and_description() {
    let plugins = plugin_dir(&[(
        "tablefmt.lua",
        r#"
local function noop(_, ctx) ctx:complete("") end
clm.tool_register("plain_tool", { description = "Does plain things", invoke = noop })
clm.tool_register("quiet_tool", { description = "Needs no prompt", no_prompt = true, invoke = noop })
clm.tool_register("secret_tool", { description = "Only for other plugins", hidden = true, invoke = noop })
"#,
    )]);
    let output = run(toolcell().arg("list").arg("--plugins").arg(plugins.path()));
    assert_eq!(output.code, Some(0), "{output}");
    let lines: Vec<&str> = output.stdout.lines().collect();
    let header = lines.first().copied().unwrap_or_default().to_uppercase();
    let positions: Vec<Option<usize>> = ["NAME", "PLUGIN", "FLAGS", "DESCRIPTION"]
        .iter()
        .map(|column| header.find(column))
        .collect();
    assert!(
        positions.iter().all(Option::is_some) && positions.windows(2).all(|pair| pair[0] < pair[1]),
        "the header must show name, plugin, flags, description in order{output}"
    );

    let row = |tool: &str, description: &str| -> (String, String) {
        let line = lines
            .iter()
            .find(|line| line.split_whitespace().next() == Some(tool))
            .unwrap_or_else(|| panic!("no row for {tool}{output}"));
        let rest = line
            .trim_end()
            .strip_suffix(description)
            .unwrap_or_else(|| panic!("the row of {tool} must end with its description{output}"));
        let cells: Vec<&str> = rest.split_whitespace().collect();
        assert!(cells.len() >= 2, "row of {tool}: {line}");
        (cells[1].to_string(), cells[2..].join(" "))
    };
    for (tool, description, flag) in [
        ("plain_tool", "Does plain things", None),
        ("quiet_tool", "Needs no prompt", Some("prompt")),
        ("secret_tool", "Only for other plugins", Some("hidden")),
    ] {
        let (plugin, flags) = row(tool, description);
        assert!(
            plugin == "tablefmt" || plugin == "tablefmt.lua",
            "the plugin column of {tool} must name tablefmt, not {plugin:?}{output}"
        );
        match flag {
            Some(flag) => assert!(
                flags.contains(flag),
                "the flags of {tool} must show {flag}: {flags:?}{output}"
            ),
            None => assert!(
                !flags.contains("hidden") && !flags.contains("prompt"),
                "{tool} has no flags: {flags:?}{output}"
            ),
        }
    }
}

#[test]
fn list_json_prints_openai_function_definitions_of_visible_tools() {
    let plugins = plugin_dir(&[(
        "schemas.lua",
        r#"
local function noop(_, ctx) ctx:complete("") end
clm.tool_register("search", {
  description = "Search the notes",
  params_schema = {
    type = "object",
    properties = {
      query = { type = "string", description = "what to look for" },
      limit = { type = "integer" },
    },
    required = { "query" },
  },
  invoke = noop,
})
clm.tool_register("bare", { description = "No parameters at all", invoke = noop })
clm.tool_register("internal", { description = "A helper for other plugins", hidden = true, invoke = noop })
"#,
    )]);
    let (output, functions) = list_json(
        toolcell()
            .args(["list", "--json", "--plugins"])
            .arg(plugins.path()),
    );
    assert_eq!(
        functions,
        vec![
            json!({
                "type": "function",
                "function": {
                    "name": "search",
                    "description": "Search the notes",
                    "parameters": {
                        "type": "object",
                        "properties": {
                            "query": { "type": "string", "description": "what to look for" },
                            "limit": { "type": "integer" },
                        },
                        "required": ["query"],
                    },
                },
            }),
            json!({
                "type": "function",
                "function": {
                    "name": "bare",
                    "description": "No parameters at all",
                    "parameters": { "type": "object", "properties": {} },
                },
            }),
        ],
        "hidden tools are left out; a tool without a schema takes any object{output}"
    );
}

#[test]
fn list_formats_print_each_providers_tool_definitions() {
    let plugins = plugin_dir(&[(
        "formats.lua",
        r#"
local function noop(_, ctx) ctx:complete("") end
clm.tool_register("search", {
  description = "Search the notes",
  params_schema = { type = "object", properties = { query = { type = "string" } }, required = { "query" } },
  invoke = noop,
})
clm.tool_register("bare", { invoke = noop })
clm.tool_register("internal", { description = "hidden", hidden = true, invoke = noop })
"#,
    )]);
    let search_schema = json!({
        "type": "object",
        "properties": { "query": { "type": "string" } },
        "required": ["query"],
    });
    let empty = json!({ "type": "object", "properties": {} });
    let list = |format: &str| {
        list_json(
            toolcell()
                .args(["list", "--format", format, "--plugins"])
                .arg(plugins.path()),
        )
        .1
    };
    assert_eq!(
        list("anthropic"),
        vec![
            json!({ "name": "search", "description": "Search the notes", "input_schema": search_schema }),
            json!({ "name": "bare", "input_schema": empty }),
        ]
    );
    // A .lua without a manifest may write files and reach any host (clm's defaults).
    let annotations =
        json!({ "readOnlyHint": false, "destructiveHint": true, "openWorldHint": true });
    assert_eq!(
        list("mcp"),
        vec![
            json!({ "name": "search", "description": "Search the notes", "inputSchema": search_schema, "annotations": annotations }),
            json!({ "name": "bare", "description": "bare", "inputSchema": empty, "annotations": annotations }),
        ]
    );
    let (_, json_output) = list_json(
        toolcell()
            .args(["list", "--json", "--plugins"])
            .arg(plugins.path()),
    );
    assert_eq!(list("openai"), json_output, "--json is --format openai");
    assert_eq!(function_names(&json_output), ["search", "bare"]);

    let table = run(toolcell()
        .args(["list", "--format", "table", "--plugins"])
        .arg(plugins.path()));
    let default = run(toolcell().args(["list", "--plugins"]).arg(plugins.path()));
    assert_eq!(
        table.stdout, default.stdout,
        "the table is the default{table}"
    );
    let bad = run(toolcell()
        .args(["list", "--format", "yaml", "--plugins"])
        .arg(plugins.path()));
    assert_eq!(bad.code, Some(2), "an unknown format is a usage error{bad}");
}

#[test]
fn list_without_plugins_uses_the_config_dir_under_home() {
    let home = temp_dir();
    write(
        &home.path().join(".config/toolcell/plugins/homely.lua"),
        tool_plugin("homely", "home"),
    );
    let output = run(toolcell().env("HOME", home.path()).arg("list"));
    assert_eq!(output.code, Some(0), "{output}");
    assert!(
        output
            .stdout
            .lines()
            .any(|line| line.split_whitespace().next() == Some("homely")),
        "the table must list the tool found under HOME{output}"
    );
}
