//! How messages name things: paths and JSON values, worded the same everywhere.

use std::path::Path;

use serde_json::Value;

/// The last component of `path`, for messages whose context already names its directory.
pub(crate) fn file_name(path: &Path) -> String {
    path.file_name()
        .map(|name| name.to_string_lossy().into_owned())
        .unwrap_or_default()
}

/// What kind of JSON value `value` is, with its article: "a string", "an object", "null".
pub(crate) fn json_kind(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}
