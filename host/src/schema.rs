//! Tool schemas as models see them.
//!
//! A Lua table cannot say whether `{}` is an empty array or an empty object; the json
//! module encodes it as an object. In a JSON Schema some keywords must be arrays
//! (`required = {}` is common in clm plugins), so schemas coming from Lua are repaired
//! here, keyword by keyword, before anyone sees them.

use serde_json::{Map, Value, json};

use crate::runtime::ToolInfo;

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

/// Longest tool name: names are `[A-Za-z0-9_-]{1,64}`, valid function names for every
/// model provider's tool schema.
pub const MAX_TOOL_NAME: usize = 64;

/// Whether `name` may name a tool.
pub fn is_valid_tool_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= MAX_TOOL_NAME
        && name
            .bytes()
            .all(|byte| byte.is_ascii_alphanumeric() || byte == b'_' || byte == b'-')
}

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

/// A tool as an OpenAI-style function definition.
pub fn openai_function(tool: &ToolInfo) -> Value {
    json!({
        "type": "function",
        "function": {
            "name": tool.name,
            "description": tool.description,
            "parameters": tool.params_schema.clone().unwrap_or_else(empty_parameters),
        }
    })
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

    #[test]
    fn non_empty_values_are_left_alone() {
        let schema = json!({ "type": "object", "required": ["a"], "properties": { "a": { "type": "string" } } });
        assert_eq!(repair(schema.clone()), schema);
    }
}
