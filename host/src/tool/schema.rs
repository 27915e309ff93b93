//! Tool schemas as models see them.
//!
//! A Lua table cannot say whether `{}` is an empty array or an empty object; the json
//! module encodes it as an object. In a JSON Schema some keywords must be arrays
//! (`required = {}` is common in clm plugins), so schemas coming from Lua are repaired
//! here, keyword by keyword, before anyone sees them.

use serde_json::{Map, Value, json};

use crate::tool::info::{ListedTool, ToolInfo};

/// Keywords whose value is an array (JSON Schema 2020-12 and draft-07).
const ARRAY_KEYWORDS: [&str; 8] = [
    "required",
    "enum",
    "allOf",
    "anyOf",
    "oneOf",
    "prefixItems",
    "examples",
    "type",
];

/// Keywords whose value maps names to schemas: their keys are names, not keywords.
const NAME_MAPS: [&str; 6] = [
    "properties",
    "patternProperties",
    "$defs",
    "definitions",
    "dependentSchemas",
    "dependentRequired",
];

pub use toolcell_limits::{MAX_TOOL_NAME, is_valid_tool_name};

/// Turns empty objects into empty arrays where the schema keyword requires an array.
pub fn repair(schema: Value) -> Value {
    repair_schema(schema)
}

fn repair_schema(value: Value) -> Value {
    match value {
        Value::Object(map) => Value::Object(
            map.into_iter()
                .map(|(key, value)| {
                    let value = if ARRAY_KEYWORDS.contains(&key.as_str()) && is_empty_object(&value)
                    {
                        Value::Array(Vec::new())
                    } else if NAME_MAPS.contains(&key.as_str()) {
                        repair_name_map(value)
                    } else {
                        repair_schema(value)
                    };
                    (key, value)
                })
                .collect(),
        ),
        Value::Array(items) => Value::Array(items.into_iter().map(repair_schema).collect()),
        other => other,
    }
}

fn repair_name_map(value: Value) -> Value {
    match value {
        Value::Object(map) => Value::Object(
            map.into_iter()
                .map(|(name, schema)| (name, repair_schema(schema)))
                .collect(),
        ),
        other => other,
    }
}

fn is_empty_object(value: &Value) -> bool {
    value.as_object().is_some_and(Map::is_empty)
}

/// The parameters schema a model gets for a tool without one: an object of anything.
pub fn empty_parameters() -> Value {
    json!({ "type": "object", "properties": {} })
}

/// The tool's parameters schema as models get it: its `params_schema`, or
/// [`empty_parameters`] when it has none.
pub fn parameters(tool: &ToolInfo) -> Value {
    tool.params_schema.clone().unwrap_or_else(empty_parameters)
}

/// The tool-definition formats of the model providers (`toolcell list --format`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// OpenAI function calling: `{"type":"function","function":{name, description, parameters}}`.
    OpenAi,
    /// Anthropic tool use: `{name, description, input_schema}`.
    Anthropic,
    /// Model Context Protocol `tools/list` entries: `{name, description, inputSchema}`.
    Mcp,
}

/// The definitions of `tools` (what a [`Session`](crate::Session) lists), in order, as
/// a JSON array in `format`: what a provider's API takes as its list of tools.
pub fn definitions(tools: &[ListedTool], format: Format) -> Value {
    let convert = match format {
        Format::OpenAi => openai_function,
        Format::Anthropic => anthropic_tool,
        Format::Mcp => mcp_tool,
    };
    Value::Array(tools.iter().map(convert).collect())
}

/// A tool as an OpenAI-style function definition (`description` always present, empty
/// when there is none).
pub fn openai_function(tool: &ListedTool) -> Value {
    json!({
        "type": "function",
        "function": {
            "name": tool.name,
            "description": tool.description,
            "parameters": parameters(&tool.tool),
        }
    })
}

/// A tool as an Anthropic tool definition (no `description` when there is none).
pub fn anthropic_tool(tool: &ListedTool) -> Value {
    with_description(
        json!({ "name": tool.name, "input_schema": parameters(&tool.tool) }),
        tool,
    )
}

/// A tool as an MCP `Tool`, with its `annotations` (see [`mcp_annotations`]), its
/// `title` when it has one, and its `outputSchema` when it gives structured results that
/// are not enveloped (an enveloped result is text only). One the plugin gave no
/// description is described by its name: the MCP specification makes the description
/// optional, but clients reject a tool without one (the official conformance suite
/// among them, which an empty description does not satisfy either).
pub fn mcp_tool(tool: &ListedTool) -> Value {
    let description = match tool.description.as_str() {
        "" => tool.name.as_str(),
        given => given,
    };
    let mut definition = json!({
        "name": tool.name,
        "description": description,
        "inputSchema": parameters(&tool.tool),
        "annotations": mcp_annotations(tool),
    });
    if let Some(object) = definition.as_object_mut() {
        if let Some(title) = &tool.tool.title {
            object.insert("title".to_string(), json!(title));
        }
        if let Some(schema) = &tool.tool.output_schema
            && !tool.enveloped
        {
            object.insert("outputSchema".to_string(), schema.clone());
        }
    }
    definition
}

/// What MCP's tool annotations say about `tool`: `readOnlyHint` when it changes nothing
/// (its plugin is granted no file writes and no HTTP), `destructiveHint` when it may,
/// `openWorldHint` when its plugin may make HTTP requests, and the plugin's `title` when
/// it gave one.
pub fn mcp_annotations(tool: &ListedTool) -> Value {
    let mut annotations = json!({
        "readOnlyHint": tool.read_only,
        "destructiveHint": !tool.read_only,
        "openWorldHint": tool.open_world,
    });
    if let (Some(title), Some(object)) = (&tool.tool.title, annotations.as_object_mut()) {
        object.insert("title".to_string(), json!(title));
    }
    annotations
}

fn with_description(mut definition: Value, tool: &ListedTool) -> Value {
    if !tool.description.is_empty()
        && let Some(object) = definition.as_object_mut()
    {
        object.insert("description".to_string(), json!(tool.description));
    }
    definition
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn empty_required_becomes_an_array_but_a_property_named_required_stays_a_schema() {
        let schema = json!({
            "type": "object",
            "required": {},
            "properties": { "required": {}, "tags": { "type": "array", "enum": {} } }
        });
        assert_eq!(
            repair(schema),
            json!({
                "type": "object",
                "required": [],
                "properties": { "required": {}, "tags": { "type": "array", "enum": [] } }
            })
        );
    }

    fn tool(name: &str, description: &str, schema: Option<Value>) -> ListedTool {
        ListedTool {
            name: name.to_string(),
            description: description.to_string(),
            tool: ToolInfo {
                name: "registered".to_string(),
                path: "p/registered".to_string(),
                description: "the plugin's".to_string(),
                params_schema: schema,
                timeout: None,
                no_prompt: false,
                hidden: false,
                title: None,
                output_schema: None,
                plugin: "p".to_string(),
            },
            read_only: true,
            open_world: false,
            enveloped: false,
        }
    }

    #[test]
    fn each_format_carries_name_description_and_schema_under_its_own_keys() {
        let schema = json!({ "type": "object", "properties": { "q": { "type": "string" } } });
        let tools = [
            tool("search", "Find things", Some(schema.clone())),
            tool("bare", "", None),
        ];
        assert_eq!(
            definitions(&tools, Format::OpenAi),
            json!([
                { "type": "function", "function": { "name": "search", "description": "Find things", "parameters": schema } },
                { "type": "function", "function": { "name": "bare", "description": "", "parameters": empty_parameters() } },
            ])
        );
        assert_eq!(
            definitions(&tools, Format::Anthropic),
            json!([
                { "name": "search", "description": "Find things", "input_schema": schema },
                { "name": "bare", "input_schema": empty_parameters() },
            ])
        );
        let annotations =
            json!({ "readOnlyHint": true, "destructiveHint": false, "openWorldHint": false });
        assert_eq!(
            definitions(&tools, Format::Mcp),
            json!([
                { "name": "search", "description": "Find things", "inputSchema": schema, "annotations": annotations },
                { "name": "bare", "description": "bare", "inputSchema": empty_parameters(), "annotations": annotations },
            ])
        );
    }

    #[test]
    fn non_empty_values_are_left_alone() {
        let schema = json!({ "type": "object", "required": ["a"], "properties": { "a": { "type": "string" } } });
        assert_eq!(repair(schema.clone()), schema);
    }
}
