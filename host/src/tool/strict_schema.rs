//! OpenAI's strict mode (`list --format openai --strict`): function definitions whose
//! arguments the model is held to exactly.
//!
//! Strict mode takes a subset of JSON Schema and two rules: every object lists all its
//! properties in `required` and has `additionalProperties: false`. A tool's parameters
//! schema is rewritten to that shape: a property that was optional becomes required
//! but nullable (`"type": ["integer", "null"]`, or `anyOf` with `{"type": "null"}`), and
//! a model that has nothing to say for it sends `null`. The runtime takes such a `null`
//! as the property left out ([`drop_optional_nulls`]), so the plugin sees what it
//! always saw.
//!
//! What strict mode cannot express is refused, naming the keyword and where it is: an
//! object open to other properties (`additionalProperties` other than `false`, or an
//! object schema without `properties` below the root), `allOf`, `oneOf`, `not`,
//! `if`/`then`/`else`, `patternProperties`, tuple `items`, length and count bounds
//! other than `minItems`/`maxItems`, and a `format` outside OpenAI's list. Annotations
//! that constrain nothing (`$schema`, `$id`, `$comment`, `default`, `examples`,
//! `deprecated`, `readOnly`, `writeOnly`) are dropped.

use serde_json::{Map, Value, json};

use crate::tool::info::ListedTool;
use crate::tool::schema::parameters;

/// Keywords kept as they are (their values hold no subschema).
const KEPT: [&str; 16] = [
    "type",
    "required",
    "enum",
    "const",
    "description",
    "title",
    "$ref",
    "pattern",
    "format",
    "multipleOf",
    "maximum",
    "exclusiveMaximum",
    "minimum",
    "exclusiveMinimum",
    "minItems",
    "maxItems",
];

/// Keywords that constrain nothing, dropped.
const DROPPED: [&str; 8] = [
    "$schema",
    "$id",
    "$comment",
    "default",
    "examples",
    "deprecated",
    "readOnly",
    "writeOnly",
];

/// The values of `format` strict mode knows.
const FORMATS: [&str; 9] = [
    "date-time",
    "time",
    "date",
    "duration",
    "email",
    "hostname",
    "ipv4",
    "ipv6",
    "uuid",
];

/// A tool whose parameters strict mode cannot express.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("tool '{tool}' cannot be listed in strict mode: {reason} (at `{pointer}` in its schema)")]
pub struct StrictRefusal {
    /// The name the tool is listed under.
    pub tool: String,
    /// The JSON pointer of the offending part of its parameters schema (empty: the
    /// root).
    pub pointer: String,
    /// What strict mode cannot express there.
    pub reason: String,
}

/// The tool as an OpenAI function definition in strict mode.
pub fn openai_function(tool: &ListedTool) -> Result<Value, StrictRefusal> {
    let parameters =
        strict_parameters(&parameters(&tool.tool)).map_err(|(pointer, reason)| StrictRefusal {
            tool: tool.name.clone(),
            pointer,
            reason,
        })?;
    Ok(json!({
        "type": "function",
        "function": {
            "name": tool.name,
            "description": tool.description,
            "parameters": parameters,
            "strict": true,
        }
    }))
}

/// `schema` (a parameters schema) in strict mode's shape, or where and why it cannot be.
pub fn strict_parameters(schema: &Value) -> Result<Value, (String, String)> {
    if !types_of(schema).contains(&"object") || schema.get("anyOf").is_some() {
        return Err((
            String::new(),
            "the parameters must be one object schema (\"type\": \"object\")".to_string(),
        ));
    }
    convert(schema, "", true)
}

fn convert(schema: &Value, pointer: &str, root: bool) -> Result<Value, (String, String)> {
    let refuse = |at: &str, reason: String| Err((at.to_string(), reason));
    let Some(object) = schema.as_object() else {
        return refuse(
            pointer,
            "a schema that is true or false (strict mode needs a typed schema)".to_string(),
        );
    };
    let mut out = Map::new();
    for (key, value) in object {
        let at = format!("{pointer}/{}", escape(key));
        match key.as_str() {
            "properties" | "$defs" | "definitions" => {
                let Some(members) = value.as_object() else {
                    return refuse(&at, format!("`{key}` is not an object"));
                };
                let mut converted = Map::new();
                for (name, member) in members {
                    let member_at = format!("{at}/{}", escape(name));
                    converted.insert(name.clone(), convert(member, &member_at, false)?);
                }
                out.insert(key.clone(), Value::Object(converted));
            }
            "items" => {
                if value.is_array() {
                    return refuse(&at, "tuple `items` (a list of schemas)".to_string());
                }
                out.insert(key.clone(), convert(value, &at, false)?);
            }
            "anyOf" => {
                let Some(branches) = value.as_array() else {
                    return refuse(&at, "`anyOf` is not an array".to_string());
                };
                let converted = branches
                    .iter()
                    .enumerate()
                    .map(|(index, branch)| convert(branch, &format!("{at}/{index}"), false))
                    .collect::<Result<Vec<_>, _>>()?;
                out.insert(key.clone(), Value::Array(converted));
            }
            "additionalProperties" => {
                if value != &Value::Bool(false) {
                    return refuse(
                        &at,
                        "an object open to other properties (strict mode allows only \
                         `additionalProperties: false`)"
                            .to_string(),
                    );
                }
            }
            "format" => {
                if !value
                    .as_str()
                    .is_some_and(|format| FORMATS.contains(&format))
                {
                    return refuse(
                        &at,
                        format!(
                            "`format` {value} (strict mode knows {})",
                            FORMATS.join(", ")
                        ),
                    );
                }
                out.insert(key.clone(), value.clone());
            }
            _ if KEPT.contains(&key.as_str()) => {
                out.insert(key.clone(), value.clone());
            }
            _ if DROPPED.contains(&key.as_str()) => {}
            _ => return refuse(&at, format!("the keyword `{key}`")),
        }
    }
    if types_of(schema).contains(&"object") || object.contains_key("properties") {
        close_object(&mut out, pointer, root)?;
    }
    Ok(Value::Object(out))
}

/// Makes the object schema `out` strict: every property required (the ones that were
/// not, nullable), no other properties.
fn close_object(
    out: &mut Map<String, Value>,
    pointer: &str,
    root: bool,
) -> Result<(), (String, String)> {
    if !out.contains_key("properties") {
        if !root {
            return Err((
                pointer.to_string(),
                "an object without `properties` (open to any property)".to_string(),
            ));
        }
        // The root of a tool that declares no arguments: it takes none.
        out.insert("properties".to_string(), json!({}));
    }
    let required: Vec<String> = match out.get("required") {
        Some(Value::Array(names)) => names
            .iter()
            .filter_map(Value::as_str)
            .map(str::to_string)
            .collect(),
        _ => Vec::new(),
    };
    let mut all = Vec::new();
    if let Some(Value::Object(properties)) = out.get_mut("properties") {
        for (name, schema) in properties.iter_mut() {
            if !required.contains(name) {
                *schema = nullable(std::mem::take(schema));
            }
            all.push(Value::String(name.clone()));
        }
    }
    out.insert("required".to_string(), Value::Array(all));
    out.insert("additionalProperties".to_string(), Value::Bool(false));
    Ok(())
}

/// `schema` that also accepts `null`.
fn nullable(mut schema: Value) -> Value {
    if accepts_null(&schema) {
        return schema;
    }
    let Some(object) = schema.as_object_mut() else {
        return schema;
    };
    let plain_type = object.contains_key("type")
        && !object.contains_key("const")
        && !object.contains_key("$ref")
        && !object.contains_key("anyOf");
    if plain_type {
        match object.get_mut("type") {
            Some(Value::String(single)) => {
                let single = std::mem::take(single);
                object.insert("type".to_string(), json!([single, "null"]));
            }
            Some(Value::Array(types)) => types.push(json!("null")),
            _ => {}
        }
        if let Some(Value::Array(values)) = object.get_mut("enum") {
            values.push(Value::Null);
        }
        return schema;
    }
    if !object.contains_key("type")
        && let Some(Value::Array(branches)) = object.get_mut("anyOf")
    {
        branches.push(json!({ "type": "null" }));
        return schema;
    }
    json!({ "anyOf": [schema, { "type": "null" }] })
}

fn accepts_null(schema: &Value) -> bool {
    types_of(schema).contains(&"null")
        || schema
            .get("anyOf")
            .and_then(Value::as_array)
            .is_some_and(|branches| branches.iter().any(accepts_null))
}

fn types_of(schema: &Value) -> Vec<&str> {
    match schema.get("type") {
        Some(Value::String(single)) => vec![single.as_str()],
        Some(Value::Array(types)) => types.iter().filter_map(Value::as_str).collect(),
        _ => Vec::new(),
    }
}

/// A JSON pointer's escaping of one reference token.
fn escape(token: &str) -> String {
    token.replace('~', "~0").replace('/', "~1")
}

/// Drops from `args` each `null` a model sent in strict mode for a property its
/// `schema` left optional and that does not take `null`, following nested
/// `properties` and `items`. Returns whether anything was dropped.
pub fn drop_optional_nulls(args: &mut Value, schema: &Value) -> bool {
    let mut dropped = false;
    match args {
        Value::Object(members) => {
            let Some(properties) = schema.get("properties").and_then(Value::as_object) else {
                return false;
            };
            let required: Vec<&str> = schema
                .get("required")
                .and_then(Value::as_array)
                .map(|names| names.iter().filter_map(Value::as_str).collect())
                .unwrap_or_default();
            members.retain(|name, value| {
                let optional_null = value.is_null()
                    && !required.contains(&name.as_str())
                    && properties
                        .get(name)
                        .is_some_and(|property| !accepts_null(property));
                dropped |= optional_null;
                !optional_null
            });
            for (name, value) in members.iter_mut() {
                if let Some(property) = properties.get(name) {
                    dropped |= drop_optional_nulls(value, property);
                }
            }
        }
        Value::Array(items) => {
            if let Some(item) = schema.get("items").filter(|item| item.is_object()) {
                for value in items {
                    dropped |= drop_optional_nulls(value, item);
                }
            }
        }
        _ => {}
    }
    dropped
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn optional_properties_become_required_and_nullable_at_every_level() {
        let schema = json!({
            "type": "object",
            "properties": {
                "query": { "type": "string", "description": "what" },
                "limit": { "type": "integer", "minimum": 1, "default": 10 },
                "mode": { "type": "string", "enum": ["fast", "slow"] },
                "filter": {
                    "type": "object",
                    "properties": { "tag": { "type": "string" }, "since": { "type": "string", "format": "date" } },
                    "required": ["tag"]
                },
                "either": { "anyOf": [{ "type": "string" }, { "type": "integer" }] },
                "fixed": { "const": "x" }
            },
            "required": ["query"]
        });
        let strict = strict_parameters(&schema).expect("expressible");
        assert_eq!(
            strict,
            json!({
                "type": "object",
                "properties": {
                    "either": { "anyOf": [{ "type": "string" }, { "type": "integer" }, { "type": "null" }] },
                    "filter": {
                        "type": ["object", "null"],
                        "properties": {
                            "since": { "type": ["string", "null"], "format": "date" },
                            "tag": { "type": "string" }
                        },
                        "required": ["since", "tag"],
                        "additionalProperties": false
                    },
                    "fixed": { "anyOf": [{ "const": "x" }, { "type": "null" }] },
                    "limit": { "type": ["integer", "null"], "minimum": 1 },
                    "mode": { "type": ["string", "null"], "enum": ["fast", "slow", null] },
                    "query": { "type": "string", "description": "what" }
                },
                "required": ["either", "filter", "fixed", "limit", "mode", "query"],
                "additionalProperties": false
            })
        );
    }

    #[test]
    fn what_strict_mode_cannot_express_is_refused_with_its_pointer() {
        let cases = [
            (
                json!({ "type": "object", "properties": { "a": { "type": "string", "minLength": 2 } } }),
                "/properties/a/minLength",
                "minLength",
            ),
            (
                json!({ "type": "object", "properties": {}, "additionalProperties": true }),
                "/additionalProperties",
                "open to other",
            ),
            (
                json!({ "type": "object", "properties": { "m": { "type": "object" } } }),
                "/properties/m",
                "without `properties`",
            ),
            (
                json!({ "type": "object", "properties": { "o": { "oneOf": [] } } }),
                "/properties/o/oneOf",
                "oneOf",
            ),
            (
                json!({ "type": "object", "properties": { "t": { "type": "array", "items": [{}] } } }),
                "/properties/t/items",
                "tuple",
            ),
            (
                json!({ "type": "object", "properties": { "u": { "type": "string", "format": "uri" } } }),
                "/properties/u/format",
                "uri",
            ),
            (
                json!({ "type": "object", "properties": { "a/b": { "allOf": [] } } }),
                "/properties/a~1b/allOf",
                "allOf",
            ),
            (json!({ "type": "string" }), "", "one object schema"),
        ];
        for (schema, pointer, reason) in cases {
            let (at, why) = strict_parameters(&schema).expect_err("refused");
            assert_eq!(at, pointer, "{schema}");
            assert!(why.contains(reason), "{schema}: {why}");
        }
    }

    #[test]
    fn a_tool_without_arguments_takes_an_empty_object() {
        let strict = strict_parameters(&json!({ "type": "object" })).expect("expressible");
        assert_eq!(
            strict,
            json!({ "type": "object", "properties": {}, "required": [], "additionalProperties": false })
        );
    }

    #[test]
    fn nulls_for_optional_properties_are_dropped_and_others_kept() {
        let schema = json!({
            "type": "object",
            "properties": {
                "a": { "type": "string" },
                "b": { "type": ["string", "null"] },
                "c": { "type": "string" },
                "list": { "type": "array", "items": { "type": "object", "properties": { "x": { "type": "integer" } } } }
            },
            "required": ["c"]
        });
        let mut args =
            json!({ "a": null, "b": null, "c": null, "list": [{ "x": null }, { "x": 1 }] });
        assert!(drop_optional_nulls(&mut args, &schema));
        assert_eq!(
            args,
            json!({ "b": null, "c": null, "list": [{}, { "x": 1 }] })
        );
        assert!(!drop_optional_nulls(&mut args, &schema));
    }
}
